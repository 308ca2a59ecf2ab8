// ggml-opt's graphs and the scheduler's split-input limit (WSP_GGML_SCHED_MAX_SPLIT_INPUTS, 30):
// wsp_ggml_opt_epoch allocates ggml-opt's own graphs on the scheduler, past Sched's check, so
// OptContext.epoch predicts their split first (src/backend/sched_split.ts, predictRawSplits) and
// throws where ggml would assert. The setup: a scheduler [CPU, RPC, CPU] (ggml-opt keeps its
// gradients, AdamW moments and loss on the first backend; an RPC buffer has no memset, which
// ggml-opt needs there), n parameters in an RPC buffer, out = Σ x·p_i. Each parameter's AdamW step
// runs on RPC (it writes the parameter) and copies in its gradient and two moments from the CPU:
//   - the prediction of the training (gb_opt, gb_grad) and evaluation (gf) graphs matches the split ggml then makes
//     (WSP_GGML_SCHED_DEBUG=1 log in a child, every tensor's backend of ggml-opt's graph copy);
//   - 10 parameters overflow a split: the raw wsp_ggml_opt_epoch in a child aborts on
//     `n_inputs < WSP_GGML_SCHED_MAX_SPLIT_INPUTS`; through the API it is a BoundsError, and the
//     process goes on; 9 parameters (the near miss) train;
//   - an RPC backend first: ggml-opt would zero its gradients in an RPC buffer (no memset: ggml
//     aborts in wsp_ggml_opt_init), an UnsupportedOpError.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { fileURLToPath } from "node:url";
import {
  allocCtxTensors, Backend, BoundsError, UnsupportedOpError, Context, LogLevel, logSet, OptContext, OptDataset, OptLossType, OptResult, rpcBackend, RpcServer, Sched, type Tensor, tensorGet,
  tensorSet, Type,
} from "../src/mod.ts";
import { layouts } from "../src/ffi/bindings.gen.ts";
import { ffi } from "../src/runtime/loader.ts";
import { runtime } from "../src/runtime/runtime.ts";
import { emptySplitState, predictRawSplits, readCgraph, type SplitModel } from "../src/backend/sched_split.ts";
import { runTsResult } from "./run.ts";

const MODE_ENV = "WSP_GGML_OPT_SPLIT_CHILD";
/** Parameters that overflow a split of the training graph, and the most that do not. */
const OVERFLOW = 10, NEAR = 9;
const NE = 4, BATCH = 2, NDATA = 8;
const NAME = layouts.wsp_ggml_tensor.fields.name.offset;
/** `allocated_graph_copy` in `struct wsp_ggml_opt_context`: the graph ggml-opt last handed to the scheduler. */
const OPT_GRAPH_COPY = 16;

/** The backends: an in-process RPC server's backend between two CPU backends. */
function backends() {
  const server = RpcServer.start({ port: 0, nThreads: 1 });
  const remote = rpcBackend(server.endpoint);
  const cpu0 = Backend.cpu({ nThreads: 1 }), cpu = Backend.cpu({ nThreads: 1 });
  return {
    remote, cpu0, cpu,
    free() {
      cpu.free();
      cpu0.free();
      remote.free();
      server[Symbol.dispose]();
    },
  };
}

/** The model out = Σ x·p_i with `n` parameters and the inputs in an RPC buffer; its OptContext on `sched`; a dataset. */
function model(n: number, sched: Sched, remote: Backend, opts: { optPeriod?: number } = {}) {
  const ctxStatic = new Context({ memSize: 1 << 20, noAlloc: true });
  const ps = Array.from({ length: n }, (_, i) => ctxStatic.newTensor1d(Type.F32, NE).setName(`p${i}`).setParam());
  const inputs = ctxStatic.newTensor2d(Type.F32, NE, BATCH).setName("x").setInput();
  const buf = allocCtxTensors(ctxStatic, remote)!;
  ps.forEach((p, i) => tensorSet(p, new Float32Array(NE).fill(0.01 * i)));
  const ctxCompute = new Context({ memSize: 16 << 20, noAlloc: true });
  let out: Tensor = ctxCompute.mul(inputs, ps[0]);
  for (let i = 1; i < n; i++) out = ctxCompute.add(out, ctxCompute.mul(inputs, ps[i]));
  out.setName("y").setOutput();
  let opt: OptContext;
  try {
    opt = new OptContext({ sched, ctxCompute, inputs, outputs: out, loss: OptLossType.MEAN_SQUARED_ERROR, optimizer: { type: "adamw", alpha: 0.01 }, ...opts });
  } catch (e) {
    // Freed now: a remote buffer left to the garbage collector would be freed after its server.
    ctxCompute.free();
    buf.free();
    ctxStatic.free();
    throw e;
  }
  const x = new Float32Array(NE * NDATA).map((_, i) => (i % 7) / 7), y = x.map((v) => 0.5 * v);
  const data = new OptDataset({ neDatapoint: NE, neLabel: NE, ndata: NDATA }).setData(x).setLabels(y);
  return {
    opt, data, ps,
    free() {
      data.free();
      opt.free();
      ctxCompute.free();
      buf.free();
      ctxStatic.free();
    },
  };
}

/** The split model of a scheduler made with the default opOffload (true). */
function splitModel(s: Sched): SplitModel {
  const sym = runtime().lib.symbols;
  return { backends: s.backends.map((b) => b.pointer), bufts: s.backends.map((b) => sym.wsp_ggml_backend_sched_get_buffer_type(s.pointer, b.pointer)), opOffload: true, nCopies: s.nCopies };
}

/** ggml's splits as its debug log lists them: backend name and input names (ggml-opt's tensors may be unnamed). */
function loggedSplits(log: string): { backend: string; inputs: string[] }[] {
  const out: { backend: string; inputs: string[] }[] = [];
  for (const m of log.matchAll(/## SPLIT #\d+: (.+?) # (\d+) inputs(?:: (.*))?\n/g)) {
    const inputs = [...(m[3] ?? "").matchAll(/\[([^\]]*?) \(/g)].map((x) => x[1]);
    assert.equal(inputs.length, Number(m[2]), `input names of ${m[0]}`);
    out.push({ backend: m[1], inputs });
  }
  return out;
}

/**
 * The child that compares the prediction of ggml-opt's graphs with ggml's split (WSP_GGML_SCHED_DEBUG=1):
 * for several parameter counts and opt periods, an epoch that trains only, then one that evaluates only.
 */
function compareChild(): void {
  const b = backends();
  const sched = new Sched({ backends: [b.cpu0, b.remote, b.cpu] });
  const sym = runtime().lib.symbols;
  const names = sched.backends.map((x) => x.name);
  let log = "";
  logSet((_level, text) => void (log += text), { minLevel: LogLevel.DEBUG });
  const stats = { graphs: 0, nodes: 0, splits: 0, maxInputs: 0, mismatches: [] as string[], predictMs: [] as number[], recheckUs: [] as number[] };
  const bad = (what: string) => stats.mismatches.length < 20 && stats.mismatches.push(what);
  const cases = [{ n: 1, optPeriod: 1 }, { n: 4, optPeriod: 1 }, { n: 4, optPeriod: 2 }, { n: NEAR, optPeriod: 1 }];
  for (const { n, optPeriod } of cases) {
    const m = model(n, sched, b.remote, { optPeriod });
    const graphs = m.opt._optGraphs();
    assert.ok(typeof graphs !== "string", String(graphs));
    // An epoch of 4 batches: with optPeriod 2 the last allocation is gb_opt; with optPeriod 2, one of a
    // single batch then allocates gb_grad; then one that evaluates: gf.
    using one = new OptDataset({ neDatapoint: NE, neLabel: NE, ndata: BATCH }).setData(new Float32Array(NE * BATCH).fill(0.5)).setLabels(new Float32Array(NE * BATCH).fill(0.25));
    const steps: [string, number, OptDataset, number][] = [["training", graphs.gbOpt, m.data, NDATA]];
    if (optPeriod > 1) steps.push(["gradient", graphs.gbGrad, one, BATCH]);
    steps.push(["evaluation", graphs.gf, m.data, 0]);
    for (const [label, g, data, idataSplit] of steps) {
      const t0 = performance.now();
      const plan = predictRawSplits(g, splitModel(sched), emptySplitState(), [m.opt.ctxCompute])!;
      stats.predictMs.push(Math.round((performance.now() - t0) * 1000) / 1000);
      // The cached verdict's re-check (buffers and flags read again).
      const t1 = performance.now();
      for (let k = 0; k < 100; k++) assert.ok(plan.unchanged());
      stats.recheckUs.push(Math.round((performance.now() - t1) * 1000) / 100); // µs per re-check
      assert.equal(plan.overflow, null, `${label} n ${n}`);
      log = "";
      const r = m.opt.epoch(data, { idataSplit });
      r.train.free();
      r.eval.free();
      const at = `n ${n} period ${optPeriod} ${label}`;
      // ggml split the graph's copy (same order of leafs and nodes): compare tensor by tensor.
      const copy = readCgraph(ffi.readPointer(m.opt.pointer, OPT_GRAPH_COPY))!, orig = readCgraph(g)!;
      assert.equal(copy.nodes.length, orig.nodes.length, at);
      for (const [which, a, c] of [["node", orig.nodes, copy.nodes], ["leaf", orig.leafs, copy.leafs]] as const) {
        a.forEach((t, i) => {
          const got = sched.backends.findIndex((x) => x.pointer === sym.wsp_ggml_backend_sched_get_tensor_backend(sched.pointer, c[i]));
          if (got !== plan.backendOf(t)) bad(`${at}: ${which} ${i} '${ffi.readCString(t + NAME)}': ggml ${names[got] ?? "none"}, predicted ${names[plan.backendOf(t)] ?? "none"}`);
        });
      }
      // With optPeriod 2, gb_grad and gb_opt are allocated in turn: the last allocation's splits.
      const logged = loggedSplits(log.slice(Math.max(0, log.lastIndexOf("## SPLIT #0:"))));
      if (sym.wsp_ggml_backend_sched_get_n_splits(sched.pointer) !== plan.splits.length || logged.length !== plan.splits.length) {
        bad(`${at}: splits: ggml ${sym.wsp_ggml_backend_sched_get_n_splits(sched.pointer)} (log ${logged.length}), predicted ${plan.splits.length}`);
      }
      plan.splits.forEach((p, i) => {
        const inputs = p.inputs.map((t) => ffi.readCString(t + NAME) ?? "");
        const l = logged[i];
        if (l && (l.backend !== names[p.backend] || l.inputs.join() !== inputs.join())) bad(`${at}: split ${i}: ggml ${l.backend} [${l.inputs}], predicted ${names[p.backend]} [${inputs}]`);
        stats.maxInputs = Math.max(stats.maxInputs, inputs.length);
      });
      stats.graphs++;
      stats.nodes += orig.nodes.length;
      stats.splits += plan.splits.length;
    }
    m.free();
  }
  logSet(null);
  sched.free();
  b.free();
  console.log(JSON.stringify(stats));
}

/** The child that hands the overflowing training graph to ggml-opt without the check (it aborts). */
function rawChild(): void {
  const b = backends();
  const sched = new Sched({ backends: [b.cpu0, b.remote, b.cpu] });
  const m = model(OVERFLOW, sched, b.remote);
  const train = new OptResult(), ev = new OptResult();
  console.log("calling wsp_ggml_opt_epoch");
  runtime().lib.symbols.wsp_ggml_opt_epoch(m.opt.pointer, m.data.pointer, train.pointer, ev.pointer, NDATA, 0, 0);
  console.log("returned");
}

const mode = process.env[MODE_ENV];
if (mode === "compare") compareChild();
else if (mode === "raw") rawChild();
else {
  const self = fileURLToPath(import.meta.url);

  describe("ggml-opt's graphs and the scheduler's split inputs", () => {
    test("the prediction of ggml-opt's training and evaluation graphs matches ggml's split (CPU, RPC, CPU)", () => {
      const r = runTsResult(self, { [MODE_ENV]: "compare", WSP_GGML_SCHED_DEBUG: "1" });
      assert.equal(r.status, 0, `child exited ${r.status ?? r.signal}:\n${r.stderr.slice(-3000)}`);
      const stats = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}");
      console.log(`# opt split replica: ${JSON.stringify(stats)}`);
      assert.deepEqual(stats.mismatches, []);
      assert.equal(stats.graphs, 9);
      assert.ok(stats.splits > stats.graphs, "the graphs split");
      // The near miss fills a split to (nearly) the limit.
      assert.ok(stats.maxInputs >= 27 && stats.maxInputs <= 30, `max inputs ${stats.maxInputs}`);
    });

    test(`raw: ggml-opt's epoch with ${OVERFLOW} parameters on RPC aborts on n_inputs < WSP_GGML_SCHED_MAX_SPLIT_INPUTS`, () => {
      const r = runTsResult(self, { [MODE_ENV]: "raw" });
      assert.match(r.stdout, /calling wsp_ggml_opt_epoch/, r.stderr.slice(-2000));
      assert.doesNotMatch(r.stdout, /returned/);
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /WSP_GGML_ASSERT\(n_inputs < WSP_GGML_SCHED_MAX_SPLIT_INPUTS\) failed/);
    });

    test(`epoch: ${OVERFLOW} parameters are a BoundsError (the process lives), ${NEAR} train; the verdict is cached`, () => {
      const b = backends();
      const sched = new Sched({ backends: [b.cpu0, b.remote, b.cpu] });
      const over = model(OVERFLOW, sched, b.remote);
      const refused = (e: unknown) =>
        e instanceof BoundsError && /^epoch: OPT_STEP_ADAMW 'adamw step for p\d+' \(node \d+ of ggml-opt's training graph\) would bring split \d+ \(on RPC\[.*\]\) to 31 tensors copied from other backends/.test(e.message) &&
        /keep the parameters in buffers of the scheduler's first backend/.test(e.message);
      const t0 = performance.now();
      assert.throws(() => over.opt.epoch(over.data), refused);
      const first = performance.now() - t0;
      const t1 = performance.now();
      assert.throws(() => over.opt.epoch(over.data), refused);
      const cached = performance.now() - t1;
      // Evaluation only allocates the forward graph, which splits fine.
      const r = over.opt.epoch(over.data, { idataSplit: 0 });
      assert.ok(Number.isFinite(r.eval.loss.value));
      r.train.free();
      r.eval.free();
      over.free();
      console.log(`# check of the training graph: first ${first.toFixed(2)} ms, cached ${cached.toFixed(3)} ms`);

      const near = model(NEAR, sched, b.remote);
      const before = near.ps.map((p) => [...(tensorGet(p) as Float32Array)]);
      const losses: number[] = [];
      for (let e = 0; e < 3; e++) {
        const t2 = performance.now();
        const { train, eval: ev } = near.opt.epoch(near.data, { idataSplit: NDATA / 2 });
        if (e < 2) console.log(`# near-miss epoch ${e}: ${(performance.now() - t2).toFixed(2)} ms`);
        losses.push(train.loss.value);
        assert.ok(Number.isFinite(ev.loss.value));
        train.free();
        ev.free();
      }
      assert.ok(losses.every(Number.isFinite), `${losses}`);
      assert.notDeepEqual(near.ps.map((p) => [...(tensorGet(p) as Float32Array)]), before, "the parameters moved");
      near.free();
      sched.free();
      b.free();
    });

    test("an RPC backend first: UnsupportedOpError before wsp_ggml_opt_init (its buffers cannot be zeroed)", () => {
      const b = backends();
      const sched = new Sched({ backends: [b.remote, b.cpu] });
      assert.throws(() => model(2, sched, b.remote), (e) => e instanceof UnsupportedOpError && /memset RPC buffers do not implement/.test(e.message));
      sched.free();
      b.free();
    });
  });
}
