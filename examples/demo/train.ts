/**
 * Training the demo model with ggml-opt (AdamW, cross-entropy) on the CPU
 * backend through the scheduler.
 *
 * @module
 */
import { allocCtxTensors, Backend, Context, Sched, type Tensor, Type } from "../../mod.ts";
import { callbacks, layouts, OptLossType, OptOptimizerType } from "../../src/bindings.gen.ts";
import { ffi, keepAlive } from "../../src/loader.ts";
import { runtime } from "../../src/runtime.ts";
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
  const s = runtime().lib.symbols;
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
  const ctxCompute = new Context({ memSize: metaSize(2048) + 3 * Number(s.wsp_ggml_graph_overhead_custom(2048, true)), noAlloc: true });
  const logits = forward(ctxCompute, weights, o.hp, input).setOutput();

  const nTrain = Math.floor(o.data.n / o.batch) * o.batch;
  const dataset = s.wsp_ggml_opt_dataset_init(Type.F32, Type.F32, o.hp.inputs, o.hp.classes, nTrain, 1);
  const dataOff = layouts.wsp_ggml_tensor.fields.data.offset;
  const fill = (t: number, src: Float32Array) => new Float32Array(ffi.view(ffi.readPointer(t, dataOff), src.byteLength)).set(src);
  fill(s.wsp_ggml_opt_dataset_data(dataset), o.data.x.subarray(0, nTrain * o.hp.inputs));
  fill(s.wsp_ggml_opt_dataset_labels(dataset), o.data.onehot.subarray(0, nTrain * o.hp.classes));

  const P = layouts.wsp_ggml_opt_params.fields;
  const params = new Uint8Array(layouts.wsp_ggml_opt_params.size);
  s.wsp_ggml_opt_default_params(sched.pointer, OptLossType.CROSS_ENTROPY, ffi.addressOf(params));
  const pv = new DataView(params.buffer);
  const optPars = new Float32Array(7);
  s.wsp_ggml_opt_get_default_optimizer_params(0, ffi.addressOf(optPars));
  optPars[0] = o.lr;
  pv.setBigUint64(P.ctx_compute.offset, BigInt(ctxCompute.pointer), true);
  pv.setBigUint64(P.inputs.offset, BigInt(input.pointer), true);
  pv.setBigUint64(P.outputs.offset, BigInt(logits.pointer), true);
  pv.setInt32(P.optimizer.offset, OptOptimizerType.ADAMW, true);
  pv.setBigUint64(P.get_opt_pars.offset, BigInt(ffi.symbolAddress(runtime().lib.location.base, "wsp_ggml_opt_get_constant_optimizer_params")), true);
  pv.setBigUint64(P.get_opt_pars_ud.offset, BigInt(ffi.addressOf(optPars)), true);
  const opt = s.wsp_ggml_opt_init(ffi.addressOf(params));

  const history: { loss: number; accuracy: number }[] = [];
  const f64 = new Float64Array(2), i64 = new BigInt64Array(1);
  let epoch = 0, start = 0;
  const cb = ffi.callback(callbacks.wsp_ggml_opt_epoch_callback, ((_train: boolean, _o: number, _d: number, result: number, ibatch: number | bigint, nbatch: number | bigint) => {
    if (!o.onProgress) return;
    s.wsp_ggml_opt_result_loss(result, ffi.addressOf(f64), 0);
    const loss = f64[0];
    s.wsp_ggml_opt_result_accuracy(result, ffi.addressOf(f64), 0);
    s.wsp_ggml_opt_result_ndata(result, ffi.addressOf(i64));
    o.onProgress({
      epoch, epochs: o.epochs, batch: Number(ibatch), batches: Number(nbatch), loss, accuracy: f64[0], samples: Number(i64[0]),
      ms: performance.now() - start,
    });
  }) as never);
  try {
    for (epoch = 1; epoch <= o.epochs; epoch++) {
      const result = s.wsp_ggml_opt_result_init();
      start = performance.now();
      s.wsp_ggml_opt_epoch(opt, dataset, result, 0, nTrain, cb.pointer, 0);
      s.wsp_ggml_opt_result_loss(result, ffi.addressOf(f64), 0);
      const loss = f64[0];
      s.wsp_ggml_opt_result_accuracy(result, ffi.addressOf(f64), 0);
      history.push({ loss, accuracy: f64[0] });
      s.wsp_ggml_opt_result_free(result);
    }
  } finally {
    cb.close();
    s.wsp_ggml_opt_free(opt);
    s.wsp_ggml_opt_dataset_free(dataset);
    keepAlive([params, optPars, f64, i64]);
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
