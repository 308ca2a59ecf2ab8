/**
 * Training throughput of the demo model (examples/demo/: an MLP on spirals,
 * ggml-opt AdamW with cross-entropy on the CPU backend through the
 * scheduler), set up as `examples/demo/train.ts` does, without the progress
 * callback (the C driver has none either). One sample per epoch, in ns per
 * optimizer step, in turn with the C driver's training (bench/work.c) in the
 * same process.
 *
 * @module
 */
import { allocCtxTensors, Backend, Context, graphOverheadCustom, OptContext, OptDataset, OptLossType, OptResult, Sched, Threadpool, Type } from "../mod.ts";
import { spirals } from "../examples/demo/data.ts";
import { createWeights, forward, type Hyper, initWeights, metaSize } from "../examples/demo/model.ts";
import { measureInTurn, nowNs, type Params, type Sample, type Turn } from "./cases.ts";
import { ffi } from "../src/runtime/loader.ts";
import { benchWork } from "./work.ts";

/** `epochs` epochs of the demo's training (defaults: the demo's model, batch 32, lr 0.005, 2 threads). */
export function train(p: Params): Sample[] {
  const num = (k: string, d: number) => (p[k] === undefined ? d : Number(p[k]));
  const hp: Hyper = { inputs: 2, hidden: num("hidden", 64), layers: num("layers", 2), classes: 3 };
  const epochs = num("epochs", 4), batch = num("batch", 32), threads = num("threads", 2);
  // pool=1: a persistent threadpool, whose threads live between computes (else each compute starts and joins its own).
  const pool = num("pool", 0) ? new Threadpool({ nThreads: threads }) : undefined;
  const data = spirals({ classes: hp.classes, seed: 1 }).train;
  const backend = Backend.cpu({ nThreads: threads, threadpool: pool });
  const sched = new Sched({ backends: [backend] });
  const ctxStatic = new Context({ memSize: metaSize(16), noAlloc: true });
  const weights = createWeights(ctxStatic, hp);
  const input = ctxStatic.newTensor2d(Type.F32, hp.inputs, batch).setName("input").setInput();
  const buf = allocCtxTensors(ctxStatic, backend)!;
  initWeights(weights, 1);
  for (const t of weights.values()) t.setParam();
  const ctxCompute = new Context({ memSize: metaSize(2048) + 3 * graphOverheadCustom(2048, true), noAlloc: true });
  const logits = forward(ctxCompute, weights, hp, input).setOutput();
  const nTrain = Math.floor(data.n / batch) * batch;
  const dataset = new OptDataset({ neDatapoint: hp.inputs, neLabel: hp.classes, ndata: nTrain })
    .setData(data.x.subarray(0, nTrain * hp.inputs))
    .setLabels(data.onehot.subarray(0, nTrain * hp.classes));
  const opt = new OptContext({ sched, ctxCompute, inputs: input, outputs: logits, loss: OptLossType.CROSS_ENTROPY, optimizer: { type: "adamw", alpha: 0.005 } });
  const steps = nTrain / batch;
  let loss = 0, cLoss = 0;
  const label = `one optimizer step, ${threads} thread${threads === 1 ? "" : "s"}${pool ? ", threadpool" : ""}`;
  const ts: Turn = {
    label,
    once: () => {
      const result = new OptResult();
      const t0 = nowNs();
      opt.epoch(dataset, { resultTrain: result });
      const dt = nowNs() - t0;
      loss = result.loss.value;
      result.free();
      return dt;
    },
  };
  // The C driver's training (bench/work.c) in this process, on the same backend (threads,
  // threadpool, abort callback), sampled in turn with the binding's epochs.
  const w = benchWork();
  const trainer = w.wsp_bench_train_new(backend.pointer, hp.hidden, hp.layers, batch);
  if (trainer === 0) throw new Error("wsp_bench_train_new failed");
  if (w.wsp_bench_train_steps(trainer) !== steps) throw new Error("the C trainer's epoch is not the binding's");
  const cLossOut = new Float64Array(1);
  const inC: Turn = {
    label: `${label} C in this process (bench/work.c)`,
    once: () => {
      const dt = w.wsp_bench_train_epoch(trainer, ffi.addressOf(cLossOut));
      cLoss = cLossOut[0];
      return dt;
    },
  };
  // One warm-up epoch per side; an epoch is always `steps` steps: no shrinking.
  const [r, c] = measureInTurn("train", [ts, inC], steps, epochs, Infinity);
  w.wsp_bench_train_free(trainer);
  opt.free();
  dataset.free();
  ctxCompute.free();
  sched.free();
  buf.free();
  ctxStatic.free();
  backend.free();
  pool?.free();
  return [{ ...r, extra: loss }, { ...c, extra: cLoss }];
}
