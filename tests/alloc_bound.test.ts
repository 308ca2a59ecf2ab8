/**
 * ggml-alloc's free list (MAX_FREE_BLOCKS = 256 ranges) against graphs that fragment it: the
 * raw call aborts the process (a child shows it), Gallocr and Sched refuse the graph with a
 * GraphFullError first; graphs under the bound are placed and compute the hand-derived sums.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Backend, Context, Gallocr, GraphFullError, Sched, tensorGet, tensorSet, Type } from "../mod.ts";
import { maxLiveAllocations, MAX_LIVE_ALLOCATIONS } from "../src/backend/alloc_bound.ts";
import { fragmentingGraph } from "./alloc_bound_graph.ts";
import { runTsResult } from "./run.ts";

test("the raw placement of a graph that fragments the free list aborts the process (what the check prevents)", () => {
  const r = runTsResult("tests/programs/free_blocks.ts", {}, ["600"]);
  assert.ok(r.signal === "SIGABRT" || r.status === 134, `status ${r.status} signal ${r.signal}\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stderr, /out of free blocks/);
});

test("Gallocr and Sched refuse it with GraphFullError; the process and the allocator stay usable", () => {
  const { ctx, graph } = fragmentingGraph(600);
  assert.ok(maxLiveAllocations(graph.nodes(), graph._leafs()) > MAX_LIVE_ALLOCATIONS);
  using cpu = Backend.cpu();
  using ga = new Gallocr(cpu.defaultBufferType);
  assert.throws(() => ga.allocGraph(graph), (e: unknown) => e instanceof GraphFullError && /ggml-alloc tracks at most 256 free ranges/.test(e.message));
  assert.throws(() => ga.reserve(graph), GraphFullError);
  using s = new Sched({ backends: [cpu] });
  assert.throws(() => s.allocGraph(graph), GraphFullError);
  assert.throws(() => s.graphCompute(graph), GraphFullError);
  ctx.free();
  // The same allocator places and computes a graph under the bound.
  const small = fragmentingGraph(200);
  ga.allocGraph(small.graph);
  tensorSet(small.x, new Float32Array([1, 2, 3, 4]));
  cpu.graphCompute(small.graph);
  assert.deepEqual(Array.from(tensorGet(small.y) as Float32Array), [1, 2, 3, 4].map((v) => v * small.factor));
  small.ctx.free();
});

test("the bound is a replay, not a count: a chain of 2000 ops and wide graphs under the bound are placed", () => {
  {
    using cpu = Backend.cpu();
    const ctx = new Context({ memSize: 16 << 20, noAlloc: true });
    const x = ctx.newTensor1d(Type.F32, 4);
    x.setInput();
    let y = x;
    for (let i = 0; i < 2000; i++) y = ctx.scale(y, i % 2 ? 0.5 : 2);
    y.setOutput();
    const graph = ctx.newGraphCustom(4096, false).buildForwardExpand(y);
    assert.ok(maxLiveAllocations(graph.nodes(), graph._leafs()) <= 3);
    using ga = new Gallocr(cpu.defaultBufferType);
    ga.allocGraph(graph);
    tensorSet(x, new Float32Array([1, 2, 3, 4]));
    cpu.graphCompute(graph);
    assert.deepEqual(Array.from(tensorGet(y) as Float32Array), [1, 2, 3, 4]);
    ctx.free();
  }
  for (const n of [200, 240]) {
    const { ctx, graph, x, y, factor } = fragmentingGraph(n);
    const live = maxLiveAllocations(graph.nodes(), graph._leafs());
    assert.ok(live <= MAX_LIVE_ALLOCATIONS && live >= n, `n ${n}: ${live} alive at most`);
    using cpu = Backend.cpu();
    using s = new Sched({ backends: [cpu] });
    s.allocGraph(graph);
    tensorSet(x, new Float32Array([1, 2, 3, 4]));
    s.graphCompute(graph);
    assert.deepEqual(Array.from(tensorGet(y) as Float32Array), [1, 2, 3, 4].map((v) => v * factor));
    ctx.free();
  }
});
