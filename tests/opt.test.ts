// Training with ggml-opt from TS (src/train/opt.ts): linear regression y = 1.2x + 3.4
// with AdamW and SGD (the idea of ggml's tests/test-opt.cpp), one SGD step
// against the hand-derived gradient, a linearly separable classification,
// progress callback counts, fit() with a validation split, and misuse cases
// that throw typed errors before ggml would abort.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type MisuseCase, misuseFailures } from "./misuse_cases.ts";
import {
  allocCtxTensors,
  ArgumentError,
  Backend,
  BoundsError,
  Context,
  defaultOptimizerParams,
  fit,
  GgmlError,
  GgmlTypeError,
  NotAllocatedError,
  OptBuildType,
  OptContext,
  OptDataset,
  type OptimizerParams,
  OptLossType,
  OptResult,
  Sched,
  ShapeError,
  type Tensor,
  tensorGet,
  tensorSet,
  Type,
  UseAfterFreeError,
} from "../mod.ts";

const backend = Backend.cpu({ nThreads: 2 });
const sched = new Sched({ backends: [backend] });
const META = 1 << 20;

/** x_i evenly spaced in [-1, 1], y_i = 1.2 x_i + 3.4 (exact in f64, then f32). */
function line(n: number): { x: Float32Array; y: Float32Array } {
  const x = new Float32Array(n), y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = -1 + (2 * i) / (n - 1);
    y[i] = 1.2 * x[i] + 3.4;
  }
  return { x, y };
}

/** The model out = a·x + b over a batch: a, b and the input batch in a CPU buffer; the rest in a noAlloc compute context. */
function linearModel(batch: number) {
  const ctxStatic = new Context({ memSize: META, noAlloc: true });
  const a = ctxStatic.newTensor1d(Type.F32, 1).setName("a").setParam();
  const b = ctxStatic.newTensor1d(Type.F32, 1).setName("b").setParam();
  const inputs = ctxStatic.newTensor2d(Type.F32, 1, batch).setName("x").setInput();
  const buf = allocCtxTensors(ctxStatic, backend)!;
  tensorSet(a, new Float32Array([0]));
  tensorSet(b, new Float32Array([0]));
  const ctxCompute = new Context({ memSize: 8 * META, noAlloc: true });
  const outputs = ctxCompute.add(ctxCompute.mul(inputs, a), b).setName("y").setOutput();
  return {
    a, b, inputs, outputs, ctxCompute,
    params: () => [tensorGet(a)[0] as number, tensorGet(b)[0] as number],
    free() {
      ctxCompute.free();
      buf.free();
      ctxStatic.free();
    },
  };
}

function lineDataset(n: number): OptDataset {
  const { x, y } = line(n);
  return new OptDataset({ neDatapoint: 1, neLabel: 1, ndata: n }).setData(x).setLabels(y);
}

function trainLine(optimizer: OptimizerParams, epochs: number) {
  const m = linearModel(10);
  using data = lineDataset(100);
  using opt = new OptContext({ sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR, optimizer });
  let last = NaN;
  for (let e = 0; e < epochs; e++) {
    data.shuffle(opt);
    const r = opt.epoch(data);
    last = r.train.loss.value;
    r.train.free();
    r.eval.free();
  }
  const [a, b] = m.params();
  m.free();
  return { a, b, loss: last };
}

describe("opt: linear regression y = 1.2x + 3.4", () => {
  test("AdamW (alpha 0.05, 200 epochs of 10 batches): loss < 1e-5, |a − 1.2|, |b − 3.4| < 2e-3", () => {
    const r = trainLine({ type: "adamw", alpha: 0.05 }, 200);
    console.log(`loss ${r.loss.toExponential(2)} (limit 1e-5), |a − 1.2| ${Math.abs(r.a - 1.2).toExponential(2)}, |b − 3.4| ${Math.abs(r.b - 3.4).toExponential(2)} (limit 2e-3)`);
    assert.ok(r.loss < 1e-5, `loss ${r.loss}`);
    assert.ok(Math.abs(r.a - 1.2) < 2e-3 && Math.abs(r.b - 3.4) < 2e-3, `a ${r.a}, b ${r.b}`);
  });

  test("SGD (alpha 0.2, 200 epochs of 10 batches): loss < 1e-5, |a − 1.2|, |b − 3.4| < 2e-3", () => {
    const r = trainLine({ type: "sgd", alpha: 0.2 }, 200);
    console.log(`loss ${r.loss.toExponential(2)} (limit 1e-5), |a − 1.2| ${Math.abs(r.a - 1.2).toExponential(2)}, |b − 3.4| ${Math.abs(r.b - 3.4).toExponential(2)} (limit 2e-3)`);
    assert.ok(r.loss < 1e-5, `loss ${r.loss}`);
    assert.ok(Math.abs(r.a - 1.2) < 2e-3 && Math.abs(r.b - 3.4) < 2e-3, `a ${r.a}, b ${r.b}`);
  });

  test("one full-batch SGD step equals the hand-derived gradient step (1e-6)", () => {
    // L = mean((a x + b − y)²); from a = b = 0: dL/da = −2 mean(x y), dL/db = −2 mean(y); SGD: p ← p − α g.
    const n = 20, alpha = 0.1;
    const { x, y } = line(n);
    let xy = 0, my = 0, loss0 = 0;
    for (let i = 0; i < n; i++) {
      xy += x[i] * y[i] / n;
      my += y[i] / n;
      loss0 += y[i] * y[i] / n;
    }
    const m = linearModel(n);
    using data = lineDataset(n);
    using opt = new OptContext({ sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR, optimizer: { type: "sgd", alpha } });
    const { train, eval: ev } = opt.epoch(data);
    const [a, b] = m.params();
    assert.ok(Math.abs(a - 2 * alpha * xy) < 1e-6, `a ${a} vs ${2 * alpha * xy}`);
    assert.ok(Math.abs(b - 2 * alpha * my) < 1e-6, `b ${b} vs ${2 * alpha * my}`);
    // The loss reported is the one of the forward pass before the step.
    assert.ok(Math.abs(train.loss.value - loss0) < 1e-4 * loss0, `loss ${train.loss.value} vs ${loss0}`);
    assert.ok(Number.isNaN(train.loss.uncertainty), "one batch: no uncertainty");
    assert.equal(train.ndata, n);
    assert.equal(ev.ndata, 0);
    assert.ok(Number.isNaN(train.accuracy.value), "no accuracy without cross-entropy");
    train.free();
    ev.free();
    m.free();
  });

  test("defaultOptimizerParams are ggml's constants", () => {
    const d = defaultOptimizerParams();
    assert.deepEqual(d.adamw, { alpha: Math.fround(0.001), beta1: Math.fround(0.9), beta2: Math.fround(0.999), eps: Math.fround(1e-8), wd: 0 });
    assert.deepEqual(d.sgd, { alpha: Math.fround(0.001), wd: 0 });
  });
});

/** 2 classes of 2-D points: class 1 when x0 + x1 > 0, kept at distance ≥ 0.2 from the boundary; seeded. */
function blobs(n: number, seed: number): { x: Float32Array; onehot: Float32Array; labels: Int32Array } {
  let s = seed >>> 0;
  const rnd = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  const x = new Float32Array(2 * n), onehot = new Float32Array(2 * n), labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let p: number, q: number;
    do {
      p = rnd();
      q = rnd();
    } while (Math.abs(p + q) < 0.2);
    x[2 * i] = p;
    x[2 * i + 1] = q;
    labels[i] = p + q > 0 ? 1 : 0;
    onehot[2 * i + labels[i]] = 1;
  }
  return { x, onehot, labels };
}

function classifier(batch: number) {
  const ctxStatic = new Context({ memSize: META, noAlloc: true });
  const w = ctxStatic.newTensor2d(Type.F32, 2, 2).setName("w").setParam();
  const b = ctxStatic.newTensor1d(Type.F32, 2).setName("b").setParam();
  const inputs = ctxStatic.newTensor2d(Type.F32, 2, batch).setInput();
  const buf = allocCtxTensors(ctxStatic, backend)!;
  tensorSet(w, new Float32Array([0.1, -0.2, 0.3, 0.05]));
  tensorSet(b, new Float32Array([0, 0]));
  const ctxCompute = new Context({ memSize: 8 * META, noAlloc: true });
  const outputs = ctxCompute.add(ctxCompute.mulMat(w, inputs), b).setOutput();
  return { w, b, inputs, outputs, ctxCompute, free: () => (ctxCompute.free(), buf.free(), ctxStatic.free()) };
}

describe("opt: classification", () => {
  test("a linear classifier with cross-entropy reaches ≥ 97% held-out accuracy; pred and accuracy agree with an f64 forward pass", () => {
    const n = 400, batch = 20;
    const d = blobs(n, 7);
    const m = classifier(batch);
    using data = new OptDataset({ neDatapoint: 2, neLabel: 2, ndata: n }).setData(d.x).setLabels(d.onehot);
    const history = fit({
      sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, dataset: data,
      loss: OptLossType.CROSS_ENTROPY, optimizer: { type: "adamw", alpha: 0.05 }, epochs: 30, valSplit: 0.25,
    });
    assert.equal(history.length, 30);
    const last = history.at(-1)!;
    assert.equal(last.train.ndata, 300);
    assert.equal(last.val.ndata, 100);
    console.log(`val accuracy ${last.val.accuracy.value} (limit 0.97)`);
    assert.ok(last.val.accuracy.value >= 0.97, `val accuracy ${last.val.accuracy.value}`);
    assert.ok(history[0].train.loss.value > last.train.loss.value, "the loss went down");
    // Independent check: the trained weights, a forward pass in f64 on all points (unshuffled copies).
    const w = tensorGet(m.w) as Float32Array, b = tensorGet(m.b) as Float32Array;
    let ok = 0;
    for (let i = 0; i < n; i++) {
      // mulMat(w [2, 2], x): out_j = Σ_k w[j*2 + k] x_k
      const z0 = w[0] * d.x[2 * i] + w[1] * d.x[2 * i + 1] + b[0];
      const z1 = w[2] * d.x[2 * i] + w[3] * d.x[2 * i + 1] + b[1];
      if ((z1 > z0 ? 1 : 0) === d.labels[i]) ok++;
    }
    assert.ok(ok / n >= 0.97, `f64 forward accuracy ${ok / n}`);
    // eval(): pred per datapoint (in the dataset's current shard order) and accuracy = matches / ndata.
    using opt = new OptContext({ sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.CROSS_ENTROPY, buildType: OptBuildType.FORWARD });
    using fresh = new OptDataset({ neDatapoint: 2, neLabel: 2, ndata: n }).setData(d.x).setLabels(d.onehot);
    using r = opt.eval(fresh);
    const pred = r.pred();
    assert.equal(pred.length, n);
    let match = 0;
    for (let i = 0; i < n; i++) if (pred[i] === d.labels[i]) match++;
    assert.equal(r.accuracy.value, match / n);
    assert.ok(Math.abs(r.accuracy.uncertainty - Math.sqrt((match / n) * (1 - match / n) / (n - 1))) < 1e-12);
    m.free();
  });
});

describe("opt: progress and fit", () => {
  test("the progress callback runs once per batch in each phase, with ndata/batch batches", () => {
    const m = linearModel(10);
    using data = lineDataset(100);
    using opt = new OptContext({ sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR });
    const seen: string[] = [];
    const ndata: number[] = [];
    const { train, eval: ev } = opt.epoch(data, {
      idataSplit: 80,
      onProgress: (p) => {
        seen.push(`${p.train ? "t" : "e"}${p.batch}/${p.batches}`);
        ndata.push(p.result.ndata);
      },
    });
    assert.deepEqual(seen, [...Array.from({ length: 8 }, (_, i) => `t${i + 1}/8`), "e1/2", "e2/2"]);
    assert.deepEqual(ndata, [10, 20, 30, 40, 50, 60, 70, 80, 10, 20]);
    assert.equal(train.ndata, 80);
    assert.equal(ev.ndata, 20);
    train.free();
    ev.free();
    // An exception in the callback is rethrown after the epoch, and the context stays usable.
    assert.throws(() => opt.epoch(data, { onProgress: () => { throw new RangeError("stop"); } }), RangeError);
    const r = opt.epoch(data);
    assert.equal(r.train.ndata, 100);
    m.free();
  });

  test("fit: epochs, validation split, logical batches, a learning-rate schedule", () => {
    const m = linearModel(10);
    using data = lineDataset(100);
    const calls: number[] = [];
    let batches = 0;
    const h = fit({
      sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, dataset: data, loss: OptLossType.MEAN_SQUARED_ERROR,
      optimizer: (epoch) => (calls.push(epoch), { type: "adamw", alpha: 0.1 / epoch }), epochs: 5, batchLogical: 20, valSplit: 0.2,
      onProgress: () => batches++,
    });
    assert.deepEqual(calls, [1, 2, 3, 4, 5]);
    assert.deepEqual(h.map((e) => [e.epoch, e.train.ndata, e.val.ndata]), [1, 2, 3, 4, 5].map((e) => [e, 80, 20]));
    assert.equal(batches, 5 * 10);
    assert.ok(h[4].train.loss.value < h[0].train.loss.value);
    m.free();
  });
});

describe("opt: misuse", () => {
  const m = linearModel(10);
  const data = lineDataset(100);
  const opt = new OptContext({ sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR });
  const base = { sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR };
  const freedData = lineDataset(10);
  freedData.free();
  const freedResult = new OptResult();
  freedResult.free();
  const cases: MisuseCase[] = [
    ["dataset: neDatapoint 0", () => new OptDataset({ neDatapoint: 0, neLabel: 1, ndata: 10 }), BoundsError],
    ["dataset: negative neLabel", () => new OptDataset({ neDatapoint: 1, neLabel: -1, ndata: 10 }), BoundsError],
    ["dataset: ndata 0", () => new OptDataset({ neDatapoint: 1, neLabel: 1, ndata: 0 }), BoundsError],
    ["dataset: shard does not divide ndata", () => new OptDataset({ neDatapoint: 1, neLabel: 1, ndata: 10, ndataShard: 3 }), BoundsError],
    ["dataset: quantized type", () => new OptDataset({ typeData: Type.Q4_0, neDatapoint: 32, neLabel: 0, ndata: 4 }), GgmlTypeError],
    ["dataset: setData wrong length", () => data.setData(new Float32Array(99)), BoundsError],
    ["dataset: setData wrong array type", () => data.setData(new Int32Array(100)), GgmlTypeError],
    ["dataset: labels of a dataset without labels", () => new OptDataset({ neDatapoint: 1, neLabel: 0, ndata: 4 }).setLabels(new Float32Array(4)), ArgumentError],
    ["dataset: use after free", () => freedData.setData(new Float32Array(10)), UseAfterFreeError],
    ["dataset: shuffle idata past ndata", () => data.shuffle(opt, 101), BoundsError],
    ["dataset: getBatch without the labels of a labelled dataset", () => data.getBatch(m.inputs, null, 0), ArgumentError],
    ["dataset: getBatchHost past the end", () => data.getBatchHost(new Float32Array(10), new Float32Array(10), 10), BoundsError],
    ["dataset: getBatch into an unallocated tensor", () => data.getBatch(m.outputs, m.outputs, 0), NotAllocatedError],
    ["optimizer: AdamW alpha 0", () => new OptContext({ ...base, optimizer: { type: "adamw", alpha: 0 } }), BoundsError],
    ["optimizer: AdamW beta1 above 1", () => new OptContext({ ...base, optimizer: { type: "adamw", beta1: 1.5 } }), BoundsError],
    ["optimizer: SGD wd above 1", () => new OptContext({ ...base, optimizer: { type: "sgd", alpha: 0.1, wd: 2 } }), BoundsError],
    ["optimizer: NaN learning rate", () => new OptContext({ ...base, optimizer: { type: "sgd", alpha: NaN } }), BoundsError],
    ["optimizer: unknown type", () => new OptContext({ ...base, optimizer: { type: "lbfgs" } as never }), ArgumentError],
    ["optimizer: schedule changes the type", () => opt.setOptimizerParams({ type: "sgd", alpha: 0.1 }), ArgumentError],
    ["context: inputs not allocated", () => {
      const c = new Context({ memSize: META, noAlloc: true });
      const x = c.newTensor2d(Type.F32, 1, 10);
      return new OptContext({ ...base, inputs: x, outputs: m.ctxCompute.add(x, x) });
    }, NotAllocatedError],
    ["context: ctxCompute not noAlloc", () => new OptContext({ ...base, ctxCompute: new Context({ memSize: META }) }), ArgumentError],
    ["context: no parameters", () => {
      const c = new Context({ memSize: META, noAlloc: true });
      return new OptContext({ ...base, outputs: c.scale(m.inputs, 2) });
    }, ArgumentError],
    ["context: outputs not f32", () => new OptContext({ ...base, outputs: m.ctxCompute.argmax(m.outputs) }), GgmlTypeError],
    ["context: outputs batch differs from inputs", () => new OptContext({ ...base, outputs: m.ctxCompute.sum(m.outputs) }), ShapeError],
    ["context: ctxCompute too small", () => {
      const c = new Context({ memSize: 64 * 1024, noAlloc: true });
      return new OptContext({ ...base, ctxCompute: c, outputs: c.add(c.mul(m.inputs, m.a), m.b) });
    }, GgmlError],
    ["context: optPeriod 0", () => new OptContext({ ...base, optPeriod: 0 }), BoundsError],
    ["context: bad loss type", () => new OptContext({ ...base, loss: 9 as OptLossType }), ArgumentError],
    ["epoch: datapoint size differs from inputs", () => opt.epoch(new OptDataset({ neDatapoint: 2, neLabel: 1, ndata: 10 })), ShapeError],
    ["epoch: batch does not divide ndata", () => opt.epoch(lineDataset(95)), ShapeError],
    ["epoch: dataset without labels for MSE", () => opt.epoch(new OptDataset({ neDatapoint: 1, neLabel: 0, ndata: 10 })), ArgumentError],
    ["epoch: label size differs from outputs", () => opt.epoch(new OptDataset({ neDatapoint: 1, neLabel: 2, ndata: 10 })), ShapeError],
    ["epoch: data type differs from inputs", () => opt.epoch(new OptDataset({ typeData: Type.F16, neDatapoint: 1, neLabel: 1, ndata: 10 })), GgmlTypeError],
    ["epoch: idataSplit past ndata", () => opt.epoch(data, { idataSplit: 110 }), BoundsError],
    ["epoch: idataSplit not a multiple of the batch", () => opt.epoch(data, { idataSplit: 55 }), BoundsError],
    ["epoch: training with buildType FORWARD", () => {
      using o = new OptContext({ ...base, buildType: OptBuildType.FORWARD });
      return o.epoch(data);
    }, ArgumentError],
    ["epoch: freed dataset", () => opt.epoch(freedData), UseAfterFreeError],
    ["epoch: freed result", () => opt.epoch(data, { resultTrain: freedResult }), UseAfterFreeError],
    ["epoch: result reused with another batch size", () => {
      const r = new OptResult();
      opt.epoch(data, { resultTrain: r });
      const m2 = linearModel(20);
      using o = new OptContext({ ...base, ctxCompute: m2.ctxCompute, inputs: m2.inputs, outputs: m2.outputs });
      return o.epoch(data, { resultTrain: r });
    }, ArgumentError],
    ["fit: batchLogical not a multiple of the batch", () => fit({ ...base, dataset: data, epochs: 1, batchLogical: 15 }), ShapeError],
    ["fit: valSplit 1", () => fit({ ...base, dataset: data, epochs: 1, valSplit: 1 }), BoundsError],
    ["fit: epochs 0", () => fit({ ...base, dataset: data, epochs: 0 }), BoundsError],
  ];

  test(`${cases.length} wrong calls each throw their typed error`, () => {
    assert.deepEqual(misuseFailures(cases), []);
  });

  test("a freed context throws; the process is alive and trains correctly afterwards", () => {
    opt.free();
    assert.throws(() => opt.epoch(data), UseAfterFreeError);
    data.free();
    m.free();
    const r = trainLine({ type: "sgd", alpha: 0.2 }, 200);
    assert.ok(Math.abs(r.a - 1.2) < 2e-3 && Math.abs(r.b - 3.4) < 2e-3, `a ${r.a}, b ${r.b}`);
  });

  test("teardown", () => {
    sched.free();
    backend.free();
  });
});

export type { Tensor };
