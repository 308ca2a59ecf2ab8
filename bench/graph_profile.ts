/**
 * The graph-construction case of bench/cases.ts (its API side alone: a 334-layer MLP, 1002
 * nodes, built from nothing per iteration) run for a fixed time, for a CPU profiler:
 *
 *   node --cpu-prof --cpu-prof-dir=DIR --import tsx bench/graph_profile.ts [seconds=4]
 *
 * then `node bench/graph_profile_report.mjs DIR` sums the profile's self time by function.
 *
 * @module
 */
import process from "node:process";
import { apiGraph, graphMemSize } from "./cases.ts";

const seconds = Number(process.argv[2] ?? 4);
const layers = 334, hidden = 64, batch = 32;
const memSize = graphMemSize(layers);
let graphs = 0, nodes = 0;
const t0 = performance.now();
while (performance.now() - t0 < seconds * 1000) {
  nodes = apiGraph(memSize, layers, hidden, batch);
  graphs++;
}
const us = ((performance.now() - t0) * 1000) / graphs;
console.log(JSON.stringify({ graphs, nodes, usPerGraph: Math.round(us * 10) / 10 }));
