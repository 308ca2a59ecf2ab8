/**
 * Training the demo model with ggml-opt (AdamW, cross-entropy) on the CPU
 * backend through the scheduler.
 *
 * @module
 */
import { allocCtxTensors, Backend, Context, graphOverheadCustom, OptContext, OptDataset, OptLossType, OptResult, Sched, type Tensor, Type } from "../../mod.ts";
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
  readonly threads: number;
  readonly seed: number;
  readonly onProgress?: (p: Progress) => void;
}

/** A trained model: its weights live in a CPU backend buffer until `free()`. */
export interface Trained {
  readonly weights: Map<string, Tensor>;
  /** Loss and accuracy of each epoch (training data, as seen during the epoch). */
  readonly history: { loss: number; accuracy: number }[];
  free(): void;
}

/** Trains a fresh model of `hp` on `data` (weights initialised from `seed`). */
export function train(o: TrainOptions): Trained {
  const backend = Backend.cpu({ nThreads: o.threads });
  const sched = new Sched({ backends: [backend] });
  // Weights and the input batch: allocated once, in a CPU backend buffer.
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
    loss: OptLossType.CROSS_ENTROPY,
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
    history,
    free() {
      ctxCompute.free();
      sched.free();
      buf.free();
      ctxStatic.free();
      backend.free();
    },
  };
}
