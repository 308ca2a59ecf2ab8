// Bun's non-blocking calls run on a worker thread (src/ffi/bun_worker.ts). A worker that fails
// to start, or dies, rejects every pending call with a typed WorkerError instead of leaving its
// promise unsettled forever, and the next call starts a fresh worker. Bun only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { allocCtxTensors, Backend, Context, Gallocr, tensorGet, tensorSet, Type, WorkerError } from "../mod.ts";

const onBun = (globalThis as { Bun?: unknown }).Bun !== undefined;

test("a worker that fails rejects the pending calls with WorkerError; the next call works", { skip: onBun ? false : "Bun's worker: runs on Bun" }, async () => {
  const { endWorker, workerSource } = await import("../src/ffi/bun.ts");
  using cpu = Backend.cpu({ nThreads: 1 });
  const w = new Context({ memSize: 1 << 20, noAlloc: true });
  const a = w.newTensor1d(Type.F32, 4);
  using buf = allocCtxTensors(w, cpu)!;
  tensorSet(a, new Float32Array([1, 2, 3, 4]));
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  const y = g.sqr(a);
  const gf = g.newGraph().buildForwardExpand(y);
  using ga = new Gallocr(cpu.defaultBufferType);
  ga.allocGraph(gf);
  const good = workerSource.text;
  try {
    // A module that throws at start (a dead worker, as a missing file or a crash in it would be).
    workerSource.text = `throw new Error("the worker cannot start");`;
    endWorker(); // an earlier test of this process may have started the good one
    await assert.rejects(cpu.graphComputeAsync(gf), (e: unknown) => e instanceof WorkerError && /cannot start/.test(e.message));
    // A worker whose calls never answer and that then exits: the pending call rejects.
    workerSource.text = `self.onmessage = () => setTimeout(() => process.exit(3), 20);`;
    await assert.rejects(cpu.graphComputeAsync(gf), (e: unknown) => e instanceof WorkerError && /ended/.test(e.message));
  } finally {
    workerSource.text = good;
    endWorker();
  }
  // The next call starts a working thread again.
  await cpu.graphComputeAsync(gf);
  assert.deepEqual(Array.from(tensorGet(y) as Float32Array), [1, 4, 9, 16]);
  assert.ok(buf.size > 0);
  g.free();
  w.free();
});
