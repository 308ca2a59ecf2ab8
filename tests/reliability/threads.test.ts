// Async computes from several callers at once: independent graphs give the
// results a plain JS loop gives; a graph (or its contexts, or its buffer) in
// use by one async compute is refused to every other caller with BusyError.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { allocCtxTensors, Backend, BusyError, Context, Sched, tensorGet, tensorSet, Type } from "../../mod.ts";
import { Rng } from "./lib.ts";

const N = 64; // elements per vector
const TOL = 1e-5; // relative: f32 rounding of one multiply-add

/** y = (a * b + a) summed with a JS reference, per seed. */
function job(seed: number) {
  const rng = new Rng(seed);
  const av = Float32Array.from({ length: N }, () => rng.next() * 2 - 1);
  const bv = Float32Array.from({ length: N }, () => rng.next() * 2 - 1);
  const ctx = new Context({ memSize: 1 << 20 });
  const a = ctx.newTensor1d(Type.F32, N).set(av), b = ctx.newTensor1d(Type.F32, N).set(bv);
  const y = ctx.add(ctx.mul(a, b), a), s = ctx.sum(y);
  const graph = ctx.newGraph().buildForwardExpand(s);
  const want = Array.from(av, (x, i) => Math.fround(Math.fround(x * bv[i]) + x));
  const check = () => {
    const got = y.toArray();
    for (let i = 0; i < N; i++) assert.ok(Math.abs(got[i] - want[i]) <= TOL * Math.max(1, Math.abs(want[i])), `seed ${seed} y[${i}] = ${got[i]}, want ${want[i]}`);
    const ws = want.reduce((p, q) => p + q, 0);
    assert.ok(Math.abs(s.toArray()[0] - ws) <= 1e-4 * Math.max(1, Math.abs(ws)), `seed ${seed} sum ${s.toArray()[0]}, want ${ws}`);
  };
  return { ctx, graph, y, check };
}

/** A graph heavy enough that a second call surely comes while it runs (a chain of 256² matmuls). */
function heavy() {
  const ctx = new Context({ memSize: 32 << 20 });
  const n = 256;
  const a = ctx.newTensor2d(Type.F32, n, n).set(new Float32Array(n * n).fill(1 / n));
  let y = a;
  for (let i = 0; i < 12; i++) y = ctx.mulMat(y, a);
  return { ctx, graph: ctx.newGraph().buildForwardExpand(y), y, want: 1 / n };
}

describe("threads", () => {
  test("8 async computes at once on independent graphs, 4 backends, 3 rounds", async () => {
    const backends = Array.from({ length: 4 }, () => Backend.cpu({ nThreads: 1 }));
    for (let round = 0; round < 3; round++) {
      const jobs = Array.from({ length: 8 }, (_, i) => job(1000 * round + i));
      // Two jobs per backend: the second waits for the first on the same backend.
      await Promise.all(backends.map(async (be, k) => {
        await be.graphComputeAsync(jobs[2 * k].graph);
        await be.graphComputeAsync(jobs[2 * k + 1].graph);
      }));
      for (const j of jobs) j.check(), j.ctx.free();
    }
    for (const b of backends) b.free();
  });

  test("schedulers and backends computing at once", async () => {
    const cpus = Array.from({ length: 3 }, () => Backend.cpu({ nThreads: 1 }));
    const scheds = cpus.slice(0, 2).map((c) => new Sched({ backends: [c] }));
    const jobs = [job(7), job(8), job(9)];
    await Promise.all([scheds[0].graphComputeAsync(jobs[0].graph), scheds[1].graphComputeAsync(jobs[1].graph), cpus[2].graphComputeAsync(jobs[2].graph)]);
    for (const j of jobs) j.check(), j.ctx.free();
    for (const s of scheds) s.free();
    for (const c of cpus) c.free();
  });

  test("the same graph from a second caller is refused, the first result stays right", async () => {
    using b1 = Backend.cpu({ nThreads: 1 }), b2 = Backend.cpu({ nThreads: 1 });
    using s = new Sched({ backends: [b2] });
    const h = heavy();
    const first = b1.graphComputeAsync(h.graph);
    await assert.rejects(b2.graphComputeAsync(h.graph), BusyError);
    await assert.rejects(s.graphComputeAsync(h.graph), BusyError);
    assert.throws(() => s.graphCompute(h.graph), BusyError);
    assert.throws(() => b2.graphCompute(h.graph), BusyError);
    assert.throws(() => h.graph.compute(), BusyError);
    assert.throws(() => h.graph.buildForwardExpand(h.ctx.scale(h.y, 2)), BusyError);
    assert.throws(() => h.ctx.free(), BusyError);
    assert.equal(h.ctx.freed, false);
    await first;
    for (const v of h.y.toArray().slice(0, 8)) assert.ok(Math.abs(v - h.want) <= 1e-6, `${v} vs ${h.want}`);
    // Usable again once it settled, by anyone.
    await b2.graphComputeAsync(h.graph);
    h.graph.compute({ nThreads: 1 });
    h.ctx.free();
  });

  test("a scheduler's compute holds the graph too; a rejected start leaves nothing busy", async () => {
    using cpu = Backend.cpu({ nThreads: 1 }), other = Backend.cpu({ nThreads: 1 });
    using s = new Sched({ backends: [cpu] });
    const h = heavy();
    const running = s.graphComputeAsync(h.graph);
    await assert.rejects(other.graphComputeAsync(h.graph), BusyError);
    await assert.rejects(cpu.graphComputeAsync(job(1).graph), BusyError, "the scheduler's backend is busy");
    assert.throws(() => s.free(), BusyError);
    await running;
    const j = job(2);
    await cpu.graphComputeAsync(j.graph);
    j.check();
    h.ctx.free();
    j.ctx.free();
  });

  test("freeing the contexts or the buffer of a computing graph is refused, then works", async () => {
    using cpu = Backend.cpu({ nThreads: 1 });
    const n = 256;
    const w = new Context({ memSize: 1 << 20, noAlloc: true });
    const x = w.newTensor2d(Type.F32, n, n);
    const buf = allocCtxTensors(w, cpu)!;
    tensorSet(x, new Float32Array(n * n).fill(1 / n));
    const g = new Context({ memSize: 1 << 20, noAlloc: true });
    let y = x;
    for (let i = 0; i < 12; i++) y = g.mulMat(y, x);
    const gf = g.newGraph().buildForwardExpand(y);
    const ybuf = allocCtxTensors(g, cpu)!;
    const p = cpu.graphComputeAsync(gf);
    assert.throws(() => w.free(), BusyError, "a context the graph depends on");
    assert.throws(() => g.free(), BusyError);
    assert.throws(() => buf.free(), BusyError);
    assert.throws(() => ybuf.free(), BusyError);
    assert.throws(() => cpu.free(), BusyError);
    await p;
    for (const v of (tensorGet(y) as Float32Array).slice(0, 8)) assert.ok(Math.abs(v - 1 / n) <= 1e-6);
    ybuf.free(), buf.free(), g.free(), w.free();
  });
});
