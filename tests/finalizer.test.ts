// A context nobody frees is freed by the FinalizationRegistry once it is
// garbage: forced collection (Node and Deno: V8's gc() exposed at run time
// through node:v8 / node:vm, no flag needed; Bun: Bun.gc(true)).
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import process from "node:process";
import { allocCtxTensors, Backend, Context, cpuBufferType, Gallocr, handleStats, memoryStats, Sched, tensorGet, tensorSet, Threadpool, Type } from "../mod.ts";

/** A full, synchronous garbage collection on this runtime. */
function forcedGc(): () => void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (g.Bun) return () => g.Bun!.gc(true);
  if (typeof g.gc === "function") return g.gc;
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * Collects until `done()` or 10 s have passed. Bun's collector scans the stack
 * and registers conservatively: in a long shared process (the whole suite) a
 * stale word can keep the last object alive for a few collections, so this
 * waits on timers (the stack unwound) and churns the young heap in between.
 */
async function collectUntil(gc: () => void, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done() && Date.now() < deadline) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (let i = 0; i < 64; i++) new Array(64).fill(i); // overwrites stale stack slots
  }
}

/**
 * Collects until nothing more is finalized (contexts, or with `finalized` another
 * count), so that what other tests left to the collector (test files share one
 * process on Bun) is not counted as this test's.
 */
async function settle(gc: () => void, finalized = () => memoryStats().finalized): Promise<void> {
  let last = -1;
  for (let i = 0; i < 20 && finalized() !== last; i++) {
    last = finalized();
    gc();
    await tick();
  }
}

test("forgotten contexts are freed by the garbage collector", async () => {
  const gc = forcedGc();
  await settle(gc);
  const before = memoryStats();
  const N = 8, SIZE = 8 << 20;
  (() => {
    for (let i = 0; i < N; i++) {
      const ctx = new Context({ memSize: SIZE });
      ctx.newTensor1d(Type.F32, 1024).set(new Float32Array(1024).fill(i));
    }
  })();
  assert.equal(memoryStats().contexts, before.contexts + N);
  assert.equal(memoryStats().poolBytes, before.poolBytes + N * SIZE);
  await collectUntil(gc, () => memoryStats().finalized >= before.finalized + N);
  const after = memoryStats();
  assert.equal(after.finalized - before.finalized, N, "every forgotten context was finalized");
  assert.equal(after.contexts, before.contexts, "their native contexts are freed");
  assert.equal(after.poolBytes, before.poolBytes, "and their pools released");
});

test("an explicitly freed context is never freed again by the finalizer", async () => {
  const gc = forcedGc();
  await settle(gc);
  const before = memoryStats();
  (() => {
    const ctx = new Context({ memSize: 1 << 20 });
    ctx.free();
  })();
  for (let i = 0; i < 5; i++) {
    gc();
    await tick();
  }
  assert.equal(memoryStats().finalized, before.finalized);
  assert.equal(memoryStats().contexts, before.contexts);
});

test("a tensor keeps its context alive", async () => {
  const gc = forcedGc();
  await settle(gc);
  const before = memoryStats();
  const t = (() => new Context({ memSize: 1 << 20 }).newTensor1d(Type.F32, 2).set(new Float32Array([3, 4])))();
  for (let i = 0; i < 5; i++) {
    gc();
    await tick();
  }
  assert.equal(memoryStats().finalized, before.finalized, "not collected while the tensor is reachable");
  assert.deepEqual(t.toArray(), [3, 4]);
  t.context.free();
});

test("a view outlives a collected context with its data intact", async () => {
  const gc = forcedGc();
  await settle(gc);
  const before = memoryStats();
  const view = (() => new Context({ memSize: 1 << 20 }).newTensor1d(Type.F32, 3).set(new Float32Array([1, 2, 3])).view(Float32Array))();
  await collectUntil(gc, () => memoryStats().finalized > before.finalized);
  assert.equal(memoryStats().finalized, before.finalized + 1, "the context was collected and freed");
  assert.deepEqual(Array.from(view), [1, 2, 3], "the pool is JS memory: the view still holds it");
});

/** {@linkcode settle} for the handles of backends, buffers, allocators, …. */
const settleHandles = (gc: () => void) => settle(gc, () => handleStats().finalized);

test("forgotten backends, buffers, allocators, schedulers and threadpools are freed by the garbage collector", async () => {
  const gc = forcedGc();
  await settleHandles(gc);
  const before = handleStats();
  const N = 4;
  (() => {
    for (let i = 0; i < N; i++) {
      const backend = Backend.cpu({ nThreads: 1 });
      backend.setThreadpool(new Threadpool({ nThreads: 1 }));
      cpuBufferType().allocBuffer(1 << 16).clear(i);
      const ctx = new Context({ memSize: 1 << 20, noAlloc: true });
      const a = ctx.newTensor1d(Type.F32, 8);
      const graph = ctx.newGraph().buildForwardExpand(ctx.sqr(a));
      new Gallocr(cpuBufferType()).reserve(graph);
      // An eval callback is rooted by the runtime until closed: it must not keep its scheduler.
      new Sched({ backends: [backend] }).setEvalCallback(() => true).reserve(graph);
    }
  })();
  const made = handleStats().live;
  for (const kind of ["backend", "threadpool", "gallocr", "sched"] as const) assert.equal(made[kind], before.live[kind] + N, kind);
  assert.equal(made.buffer, before.live.buffer + N, "buffer");
  await collectUntil(gc, () => handleStats().finalized >= before.finalized + 5 * N);
  const after = handleStats();
  assert.deepEqual(after.live, before.live, "every forgotten handle is released");
  assert.equal(after.finalized - before.finalized, 5 * N, "by the finalizer: 4 backends, threadpools, buffers, allocators and schedulers");
});

test("a collected buffer gives its memory back to the system", async () => {
  const gc = forcedGc();
  await settleHandles(gc);
  const rss = () => process.memoryUsage.rss();
  const MiB = 1 << 20, N = 16, SIZE = 64 * MiB; // above glibc's largest mmap threshold: each is its own mapping
  const start = rss();
  (() => {
    for (let i = 0; i < N; i++) cpuBufferType().allocBuffer(SIZE).clear(1); // clear touches every page
  })();
  const peak = rss();
  assert.ok(peak - start > (N * SIZE) / 2, `the buffers are resident: +${((peak - start) / MiB).toFixed(0)} MiB`);
  await collectUntil(gc, () => rss() - start < 4 * SIZE);
  const end = rss();
  assert.ok(end - start < 4 * SIZE, `collected buffers are unmapped: +${((end - start) / MiB).toFixed(0)} MiB resident after collection (peak +${((peak - start) / MiB).toFixed(0)} MiB)`);
});

test("a context keeps the buffer and the allocator that hold its tensors' data", async () => {
  const gc = forcedGc();
  await settleHandles(gc);
  const before = handleStats();
  using backend = Backend.cpu({ nThreads: 1 });
  using weights = new Context({ memSize: 1 << 20, noAlloc: true });
  const a = weights.newTensor1d(Type.F32, 4);
  (() => allocCtxTensors(weights, backend))(); // the buffer is dropped at once
  tensorSet(a, new Float32Array([1, 2, 3, 4]));
  using compute = new Context({ memSize: 1 << 20, noAlloc: true });
  const out = compute.sqr(a);
  const graph = compute.newGraph().buildForwardExpand(out);
  (() => new Gallocr(backend.defaultBufferType).allocGraph(graph))(); // so is the allocator
  await collectUntil(gc, () => handleStats().finalized > before.finalized);
  assert.equal(handleStats().finalized, before.finalized, "neither was collected while the contexts live");
  backend.graphCompute(graph);
  assert.deepEqual(Array.from(tensorGet(out) as Float32Array), [1, 4, 9, 16]);
  compute.free();
  weights.free();
  await collectUntil(gc, () => handleStats().finalized >= before.finalized + 2);
  assert.equal(handleStats().finalized - before.finalized, 2, "once the contexts are freed, the buffer and the allocator are collected");
});
