/**
 * Training the demo model with ggml-opt (AdamW, cross-entropy) through the
 * scheduler, on the best device (a GPU when ggml has one, else the CPU) with
 * the CPU backend as the fallback for the ops the device does not support.
 *
 * @module
 */
import {
  allocCtxTensors,
  Backend,
  type DeviceChoice,
  Context,
  graphOverheadCustom,
  OptContext,
  OptDataset,
  OptLossType,
  OptResult,
  Sched,
  type Tensor,
  Type,
} from "../../mod.ts";
import type { Split } from "./data.ts";
import { createWeights, forward, type Hyper, initWeights, metaSize } from "./model.ts";

/** What the progress callback is told after each batch. */
export interface Progress {
  /** Epoch, from 1. */
  readonly epoch: number;
  readonly epochs: number;
  /** Batches done in this epoch, from 1. */
  readonly batch: number;
  readonly batches: number;
  /** Mean training loss of this epoch so far. */
  readonly loss: number;
  /** Training accuracy of this epoch so far (0 … 1). */
  readonly accuracy: number;
  /** Points seen in this epoch so far. */
  readonly samples: number;
  /** Milliseconds since this epoch started. */
  readonly ms: number;
}

/** Options of {@linkcode train}. */
export interface TrainOptions {
  readonly hp: Hyper;
  readonly data: Split;
  readonly epochs: number;
  /** Points per batch (one optimizer step each). */
  readonly batch: number;
  /** AdamW learning rate. */
  readonly lr: number;
  /** CPU threads (of the CPU backend, the device or the fallback). */
  readonly threads: number;
  readonly seed: number;
  /**
   * Where to train: `"auto"` (default: a GPU if there is one, else the CPU;
   * `WSP_GGML_DEVICE` overrides), `"cpu"`, `"gpu"` or a device's name.
   */
  readonly device?: DeviceChoice;
  /** The loss: cross-entropy over the softmax (default), or the mean squared error against the one-hot labels. */
  readonly loss?: "cross-entropy" | "mse";
  readonly onProgress?: (p: Progress) => void;
}

/** A trained model: its weights live in a buffer of the device it was trained on until `free()`. */
export interface Trained {
  readonly weights: Map<string, Tensor>;
  /** The device it was trained on (`CPU`, `Vulkan0`, …). */
  readonly device: string;
  /** Why it was not the device asked for, or null: always null now (OptContext runs the loss ops a device lacks on the CPU). */
  readonly fallback: string | null;
  /** Loss and accuracy of each epoch (training data, as seen during the epoch). */
  readonly history: { loss: number; accuracy: number }[];
  free(): void;
}

/** Trains a fresh model of `hp` on `data` (weights initialised from `seed`). */
export function train(o: TrainOptions): Trained {
  const lossType = o.loss === "mse" ? OptLossType.MEAN_SQUARED_ERROR : OptLossType.CROSS_ENTROPY;
  // OptContext runs the loss ops the device lacks (ggml-vulkan has no cross-entropy kernel) on the CPU backend.
  const backend = Backend.best({ device: o.device, nThreads: o.threads });
  const fallback: string | null = null;
  // The scheduler runs each op on the first backend that supports it; the CPU backend, last, takes the rest.
  const cpu = backend.isCpu ? backend : Backend.cpu({ nThreads: o.threads });
  const sched = new Sched({ backends: cpu === backend ? [backend] : [backend, cpu] });
  // Weights and the input batch: allocated once, in a buffer of the device.
  const ctxStatic = new Context({ memSize: metaSize(16), noAlloc: true });
  const weights = createWeights(ctxStatic, o.hp);
  const input = ctxStatic.newTensor2d(Type.F32, o.hp.inputs, o.batch).setName("input").setInput();
  const buf = allocCtxTensors(ctxStatic, backend)!;
  initWeights(weights, o.seed);
  for (const t of weights.values()) t.setParam();
  // The rest of the graphs (forward, backward, optimizer step): allocated by the scheduler.
  const ctxCompute = new Context({ memSize: metaSize(2048) + 3 * graphOverheadCustom(2048, true), noAlloc: true });
  const logits = forward(ctxCompute, weights, o.hp, input).setOutput();

  const nTrain = Math.floor(o.data.n / o.batch) * o.batch;
  using dataset = new OptDataset({ neDatapoint: o.hp.inputs, neLabel: o.hp.classes, ndata: nTrain })
    .setData(o.data.x.subarray(0, nTrain * o.hp.inputs))
    .setLabels(o.data.onehot.subarray(0, nTrain * o.hp.classes));
  using opt = new OptContext({
    sched, ctxCompute, inputs: input, outputs: logits,
    loss: lossType,
    optimizer: { type: "adamw", alpha: o.lr },
  });

  const history: { loss: number; accuracy: number }[] = [];
  for (let epoch = 1; epoch <= o.epochs; epoch++) {
    using result = new OptResult();
    const start = performance.now();
    opt.epoch(dataset, {
      resultTrain: result,
      onProgress: o.onProgress && (({ batch, batches, result: r }) =>
        o.onProgress!({
          epoch, epochs: o.epochs, batch, batches, loss: r.loss.value, accuracy: r.accuracy.value, samples: r.ndata,
          ms: performance.now() - start,
        })),
    });
    history.push({ loss: result.loss.value, accuracy: result.accuracy.value });
  }
  return {
    weights,
    device: backend.device.name,
    fallback,
    history,
    free() {
      ctxCompute.free();
      sched.free();
      buf.free();
      ctxStatic.free();
      backend.free();
      if (cpu !== backend) cpu.free();
    },
  };
}
