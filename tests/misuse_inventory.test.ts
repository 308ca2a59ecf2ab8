// The checks of the abort-site inventory (docs/asserts.map.json) that no case of
// tests/misuse.test.ts reaches: the wrong calls of `inventoryCases` (tests/misuse_cases.ts)
// each throw their typed error with its message, all in one process; the guards that
// are not an error (a scheduler allocating twice, a non-CPU backend made without the
// CPU abort callback) are exercised; the process is then alive and computes correctly.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { inventoryCases, misuseFailures } from "./misuse_cases.ts";
import { allocCtxTensors, Backend, Context, rpcBackend, RpcServer, Sched, tensorGet, tensorSet, Type } from "../mod.ts";

const MiB = 1 << 20;

describe("misuse: the inventory's checks", () => {
  test("each wrong call throws its typed error with its message", () => {
    const { cases, free } = inventoryCases();
    try {
      assert.equal(new Set(cases.map(([name]) => name)).size, cases.length, "distinct names");
      assert.ok(cases.every((c) => c[3] !== undefined), "every case names its message");
      assert.deepEqual(misuseFailures(cases), []);
    } finally {
      free();
    }
  });

  test("Sched: allocGraph twice without a reset computes the second graph", () => {
    // ggml-backend.cpp wsp_ggml_backend_sched_alloc_graph asserts !is_alloc: Sched resets first.
    const w = new Context({ memSize: MiB, noAlloc: true });
    const g = new Context({ memSize: MiB, noAlloc: true });
    using cpu = Backend.cpu({ nThreads: 1 });
    const a = w.newTensor1d(Type.F32, 4), b = w.newTensor1d(Type.F32, 4);
    using buf = allocCtxTensors(w, cpu)!;
    assert.ok(buf);
    tensorSet(a, new Float32Array([1, 2, 3, 4]));
    tensorSet(b, new Float32Array([10, 20, 30, 40]));
    const sum = g.add(a, b), prod = g.mul(a, b);
    const g1 = g.newGraph().buildForwardExpand(sum), g2 = g.newGraph().buildForwardExpand(prod);
    const s = new Sched({ backends: [cpu] });
    try {
      s.allocGraph(g1);
      s.allocGraph(g1);
      s.allocGraph(g2);
      s.graphCompute(g2);
      assert.deepEqual([...tensorGet(prod) as Float32Array], [10, 40, 90, 160]);
      s.allocGraph(g1);
      s.graphCompute(g1);
      assert.deepEqual([...tensorGet(sum) as Float32Array], [11, 22, 33, 44]);
    } finally {
      s.free();
      g.free();
    }
    w.free();
  });

  test("a non-CPU backend is made without the CPU abort callback (ggml asserts is_cpu)", () => {
    using server = RpcServer.start({ port: 0, nThreads: 1 });
    const remote = rpcBackend(server.endpoint);
    try {
      assert.equal(remote.isCpu, false);
      const w = new Context({ memSize: MiB, noAlloc: true });
      const t = w.newTensor1d(Type.F32, 3);
      const buf = allocCtxTensors(w, remote)!;
      tensorSet(t, new Float32Array([1, 2, 3]));
      assert.deepEqual([...tensorGet(t) as Float32Array], [1, 2, 3]);
      buf.free();
      w.free();
    } finally {
      remote.free();
    }
  });

  test("the process is alive and computes correctly afterwards", () => {
    const ctx = new Context({ memSize: MiB });
    const a = ctx.newTensor1d(Type.F32, 3).set(new Float32Array([1, 2, 3]));
    const c = ctx.sub(ctx.reshape3d(ctx.cpy(a, ctx.newTensor1d(Type.F32, 3)), 3, 1, 1), ctx.newTensor1d(Type.F32, 1).set(new Float32Array([1])));
    ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 1 });
    assert.deepEqual(c.toArray(), [0, 1, 2]);
    ctx.free();
  });
});
