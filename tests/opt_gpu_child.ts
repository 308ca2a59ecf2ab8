// The child of tests/opt_gpu.test.ts: ggml-opt training (src/train/opt.ts) over a scheduler with
// the best device first and the CPU behind it, against the same training on the CPU alone. Run in
// a child because the defects it covers killed the process (a ggml abort) or gave NaN. Prints one
// `opt-gpu {json}` line. argv[2]:
//
//   ce        cross-entropy (ggml-vulkan has no CROSS_ENTROPY_LOSS kernel; ggml-opt keeps the loss in
//             a buffer of the first backend, which aborted): 3 epochs, losses, accuracies, weights
//   resched   the mean squared error, 3 epochs, with another graph computed on the scheduler between
//             the epochs (ggml-opt must then allocate its graph again), and on the CPU without it
import process from "node:process";
import {
  allocCtxTensors,
  Backend,
  Context,
  devices,
  graphOverheadCustom,
  OptContext,
  OptDataset,
  OptLossType,
  OptResult,
  Sched,
  type Tensor,
  tensorGet,
  Type,
} from "../mod.ts";
import { spirals } from "../examples/demo/data.ts";
import { createWeights, forward, initWeights, metaSize } from "../examples/demo/model.ts";

const mode = process.argv[2];
const gpus = devices().filter((d) => d.isGpu);
const report = (r: unknown) => console.log(`opt-gpu ${JSON.stringify(r)}`);
const EPOCHS = 3, BATCH = 32;

interface Run {
  losses: number[];
  accuracies: number[];
  weights: Record<string, number[]>;
}

/** Trains the demo's MLP (2 → 16 → 16 → 3) on 256 spiral points, on `device` (and the CPU behind it). */
function run(device: string, loss: OptLossType, between: boolean): Run {
  const data = spirals({ seed: 5 });
  const hp = { inputs: 2, hidden: 16, layers: 2, classes: data.classes };
  const n = 256;
  const dev = devices().find((d) => d.name === device)!;
  using backend = dev.init();
  using cpu = backend.isCpu ? null : Backend.cpu({ nThreads: 2 });
  using sched = new Sched({ backends: cpu ? [backend, cpu] : [backend] });
  using ctxStatic = new Context({ memSize: metaSize(16), noAlloc: true });
  const weights = createWeights(ctxStatic, hp);
  const input = ctxStatic.newTensor2d(Type.F32, hp.inputs, BATCH).setInput();
  using buf = allocCtxTensors(ctxStatic, backend)!;
  initWeights(weights, 5);
  for (const t of weights.values()) t.setParam();
  using ctxCompute = new Context({ memSize: metaSize(2048) + 3 * graphOverheadCustom(2048, true), noAlloc: true });
  const logits = forward(ctxCompute, weights, hp, input).setOutput();
  using dataset = new OptDataset({ neDatapoint: hp.inputs, neLabel: hp.classes, ndata: n })
    .setData(data.train.x.subarray(0, n * hp.inputs))
    .setLabels(data.train.onehot.subarray(0, n * hp.classes));
  using opt = new OptContext({ sched, ctxCompute, inputs: input, outputs: logits, loss, optimizer: { type: "adamw", alpha: 0.01 } });
  // Another graph on the same scheduler: a matmul of a weight, computed between the epochs.
  using other = new Context({ memSize: 1 << 20, noAlloc: true });
  const w0 = [...weights.values()][0] as Tensor;
  const y = other.sum(other.mulMat(w0, w0)).setOutput();
  const g = other.newGraph().buildForwardExpand(y);
  const out: Run = { losses: [], accuracies: [], weights: {} };
  for (let e = 0; e < EPOCHS; e++) {
    if (between && e > 0) {
      sched.graphCompute(g);
      if (!Number.isFinite((tensorGet(y) as Float32Array)[0])) throw new Error("the other graph computed a non-finite value");
    }
    using r = new OptResult();
    opt.epoch(dataset, { resultTrain: r });
    out.losses.push(r.loss.value);
    out.accuracies.push(r.accuracy.value);
  }
  for (const [k, v] of weights) out.weights[k] = Array.from(tensorGet(v) as Float32Array);
  void buf;
  return out;
}

if (gpus.length === 0) report({ devices: [] });
else {
  const loss = mode === "ce" ? OptLossType.CROSS_ENTROPY : OptLossType.MEAN_SQUARED_ERROR;
  const between = mode === "resched";
  const cpu = run("CPU", loss, between), gpu = run(gpus[0].name, loss, between);
  // The same training on the CPU without the other graph: what the epochs must compute either way.
  const plain = between ? run("CPU", loss, false) : undefined;
  report({ devices: gpus.map((d) => d.name), device: gpus[0].name, cpu, gpu, plain });
}
