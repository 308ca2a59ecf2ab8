/**
 * The graph-construction case of bench/cases.ts (the API loop alone: a 334-layer MLP, 1002
 * nodes, built from nothing per iteration) run for a fixed time, for a CPU profiler:
 *
 *   node --cpu-prof --cpu-prof-dir=DIR --import tsx bench/graph_profile.ts [seconds=4]
 *   deno run -A --v8-flags=--prof bench/graph_profile.ts
 *
 * then `node bench/graph_profile_report.mjs DIR` sums the profile's self time by function.
 *
 * @module
 */
import process from "node:process";
import { Context, graphOverheadCustom, type Tensor, tensorOverhead, Type } from "../mod.ts";

const seconds = Number(process.argv[2] ?? 4);
const layers = 334, hidden = 64, batch = 32, GRAPH_SIZE = 2048;
const memSize = (5 * layers + 8) * tensorOverhead() + graphOverheadCustom(GRAPH_SIZE, false);
let graphs = 0, nodes = 0;
const t0 = performance.now();
while (performance.now() - t0 < seconds * 1000) {
  const ctx = new Context({ memSize, noAlloc: true });
  let h: Tensor = ctx.newTensor2d(Type.F32, hidden, batch);
  for (let l = 0; l < layers; l++) {
    const w = ctx.newTensor2d(Type.F32, hidden, hidden);
    const bias = ctx.newTensor1d(Type.F32, hidden);
    h = ctx.relu(ctx.add(ctx.mulMat(w, h), bias));
  }
  nodes = ctx.newGraphCustom(GRAPH_SIZE).buildForwardExpand(h).nNodes;
  ctx.free();
  graphs++;
}
const us = ((performance.now() - t0) * 1000) / graphs;
console.log(JSON.stringify({ graphs, nodes, usPerGraph: Math.round(us * 10) / 10 }));
