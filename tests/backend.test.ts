// Backends, devices, buffers, Gallocr, the scheduler and async compute on the
// CPU backend. Expected numbers are hand-derived: (a + b) * b elementwise.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  allocCtxTensors, Backend, BackendDevType, backendRegs, BackendEvent, BackendBufferUsage, BoundsError, Context, deviceByName,
  devices, Gallocr, NotAllocatedError, Sched, tensorCopy, tensorGet, tensorMemset, tensorSet, Threadpool, Type, UnsupportedOpError,
  UseAfterFreeError,
} from "../src/mod.ts";

const A = [1, 2, 3, 4], B = [10, 20, 30, 40];
const WANT = A.map((x, i) => (x + B[i]) * B[i]); // [110, 440, 990, 1760]

function weights(backend: Backend) {
  const w = new Context({ memSize: 1 << 20, noAlloc: true });
  const a = w.newTensor1d(Type.F32, 4).setName("a"), b = w.newTensor1d(Type.F32, 4).setName("b");
  const buf = allocCtxTensors(w, backend)!;
  buf.usage = BackendBufferUsage.WEIGHTS;
  tensorSet(a, new Float32Array(A));
  tensorSet(b, new Float32Array(B));
  return { w, a, b, buf };
}

describe("backends and devices", () => {
  test("the registry lists the CPU backend and its device", () => {
    assert.ok(backendRegs().some((r) => r.name === "CPU"));
    const cpu = deviceByName("CPU")!;
    assert.ok(devices().some((d) => d.pointer === cpu.pointer));
    const p = cpu.props();
    assert.equal(p.type, BackendDevType.CPU);
    assert.equal(p.name, "CPU");
    assert.ok(p.memory.total > 0 && p.memory.free <= p.memory.total);
    assert.equal(p.caps.events, false);
    assert.throws(() => new BackendEvent(cpu), UnsupportedOpError);
    assert.ok(cpu.bufferType.isHost);
  });

  test("initByName / initByType / initBest give CPU backends", () => {
    for (const b of [Backend.initByName("CPU"), Backend.initByType(BackendDevType.CPU), Backend.initBest()]) {
      assert.ok(b.isCpu);
      b.free();
      assert.throws(() => b.name, UseAfterFreeError);
    }
    assert.throws(() => Backend.initByName("no-such-device"), /no device/);
  });

  test("buffers, allocCtxTensors, tensor set/get/memset/copy with checks", () => {
    using cpu = Backend.cpu({ nThreads: 2 });
    const { w, a, b, buf } = weights(cpu);
    assert.equal(buf.usage, BackendBufferUsage.WEIGHTS);
    assert.ok(buf.size >= 32 && buf.isHost);
    assert.deepEqual([...tensorGet(a) as Float32Array], A);
    assert.throws(() => tensorSet(a, new Float32Array(5)), BoundsError);
    const lazy = new Context({ memSize: 1 << 16, noAlloc: true }).newTensor1d(Type.F32, 4);
    assert.throws(() => tensorGet(lazy), NotAllocatedError);
    tensorMemset(a, 0, 4, 4);
    assert.deepEqual([...tensorGet(a) as Float32Array], [1, 0, 3, 4]);
    tensorCopy(b, a);
    assert.deepEqual([...tensorGet(a) as Float32Array], B);
    buf.clear(0);
    assert.deepEqual([...tensorGet(b) as Float32Array], [0, 0, 0, 0]);
    buf.free();
    assert.throws(() => tensorGet(a), NotAllocatedError);
    w.free();
  });

  test("Gallocr reserve + allocGraph, graphCompute with a threadpool", () => {
    using cpu = Backend.cpu({ nThreads: 2 });
    using pool = new Threadpool({ nThreads: 2 });
    cpu.setThreadpool(pool);
    const { a, b } = weights(cpu);
    const g = new Context({ memSize: 1 << 20, noAlloc: true });
    const c = g.mul(g.add(a, b), b);
    const gf = g.newGraph().buildForwardExpand(c);
    assert.throws(() => cpu.graphCompute(gf), NotAllocatedError);
    using ga = new Gallocr(cpu.defaultBufferType);
    ga.reserve(gf).allocGraph(gf);
    assert.ok(ga.bufferSize() >= 16);
    for (let i = 0; i < 3; i++) assert.deepEqual([...tensorGet(cpu.graphCompute(gf) && c) as Float32Array], WANT);
  });
});

describe("scheduler", () => {
  test("reserve then alloc, compute, nCopies > 1 repeated", () => {
    using cpu = Backend.cpu();
    const { a, b } = weights(cpu);
    for (const parallel of [false, true]) {
      using s = new Sched({ backends: [cpu], parallel });
      assert.equal(s.nCopies, parallel ? 4 : 1);
      const g = new Context({ memSize: 1 << 20, noAlloc: true });
      const c = g.mul(g.add(a, b), b);
      const gf = g.newGraph().buildForwardExpand(c);
      s.reserve(gf);
      assert.ok(s.getBufferSize(cpu) > 0);
      assert.ok(s.getBufferType(cpu).isHost);
      for (let i = 0; i < 6; i++) {
        s.allocGraph(gf).graphCompute(gf);
        assert.deepEqual([...tensorGet(c) as Float32Array], WANT);
        s.reset();
      }
    }
  });

  test("a graph split across two CPU backends; unassigned nodes fall back", () => {
    using cpu1 = Backend.cpu(), cpu2 = Backend.cpu();
    const { a, b } = weights(cpu2);
    using s = new Sched({ backends: [cpu1, cpu2] });
    const g = new Context({ memSize: 1 << 20, noAlloc: true });
    const sum = g.add(a, b), c = g.mul(sum, b);
    const gf = g.newGraph().buildForwardExpand(c);
    s.setTensorBackend(sum, cpu1);
    s.splitGraph(gf);
    assert.equal(s.getTensorBackend(sum), cpu1);
    assert.ok(s.getTensorBackend(c) !== null, "the unpinned node got a backend");
    assert.ok(s.nSplits >= 1);
    s.reset();
    s.setTensorBackend(sum, cpu1);
    s.graphCompute(gf);
    assert.deepEqual([...tensorGet(c) as Float32Array], WANT);
    const seen: string[] = [];
    s.reset();
    s.setEvalCallback((node, ask) => (ask ? true : (seen.push(node.describe()), false)));
    s.graphCompute(gf);
    assert.equal(seen.length, 1, "returning false stopped after the first node");
    s.setEvalCallback(null);
  });
});

describe("async compute", () => {
  test("a timer fires during a long compute, and an abort stops it", async () => {
    using cpu = Backend.cpu({ nThreads: 2 });
    const n = 1024;
    const w = new Context({ memSize: 1 << 20, noAlloc: true });
    const x = w.newTensor2d(Type.F32, n, n);
    using buf = allocCtxTensors(w, cpu)!;
    tensorSet(x, new Float32Array(n * n).fill(0.001));
    const g = new Context({ memSize: 8 << 20, noAlloc: true });
    let y = x;
    for (let i = 0; i < 40; i++) y = g.mulMat(x, y);
    const gf = g.newGraphCustom(256).buildForwardExpand(y);
    using ga = new Gallocr(cpu.defaultBufferType);
    ga.allocGraph(gf);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    await cpu.graphComputeAsync(gf);
    const full = performance.now() - t0;
    clearInterval(timer);
    assert.ok(ticks >= 2, `the timer fired ${ticks} times during a ${full.toFixed(0)} ms compute`);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), Math.max(1, full / 10));
    const t1 = performance.now();
    await assert.rejects(cpu.graphComputeAsync(gf, { signal: ac.signal }), { name: "AbortError" });
    assert.ok(performance.now() - t1 < full * 0.8, "the abort stopped the compute early");
    await cpu.graphComputeAsync(gf); // usable again after an abort
    assert.ok(buf.size > 0);
  });
});
