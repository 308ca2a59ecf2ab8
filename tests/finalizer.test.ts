// A context nobody frees is freed by the FinalizationRegistry once it is
// garbage: forced collection (Node and Deno: V8's gc() exposed at run time
// through node:v8 / node:vm, no flag needed; Bun: Bun.gc(true)).
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { Context, memoryStats, Type } from "../mod.ts";

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
 * Collects until nothing more is finalized, so that contexts other tests left to
 * the collector (test files share one process on Bun) are not counted as this test's.
 */
async function settle(gc: () => void): Promise<void> {
  let last = -1;
  for (let i = 0; i < 20 && memoryStats().finalized !== last; i++) {
    last = memoryStats().finalized;
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
  for (let i = 0; i < 20 && memoryStats().finalized < before.finalized + N; i++) {
    gc();
    await tick();
  }
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
  for (let i = 0; i < 20 && memoryStats().finalized === before.finalized; i++) {
    gc();
    await tick();
  }
  assert.equal(memoryStats().finalized, before.finalized + 1, "the context was collected and freed");
  assert.deepEqual(Array.from(view), [1, 2, 3], "the pool is JS memory: the view still holds it");
});
