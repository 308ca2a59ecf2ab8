/**
 * Training with ggml-opt (`ggml-opt.h`): {@linkcode OptDataset} (data and
 * labels in CPU memory, shuffled and cut into batches by ggml),
 * {@linkcode OptContext} (the forward, backward and optimizer graphs of a
 * model over a {@linkcode Sched}), {@linkcode OptResult} (loss and accuracy
 * with their uncertainties), {@linkcode OptContext.epoch} with a JS progress
 * callback per batch, and {@linkcode fit}, the TypeScript counterpart of
 * `wsp_ggml_opt_fit` that returns the history instead of printing it.
 *
 * The model follows ggml-opt's static-graph convention: the parameters
 * (`setParam()`) and the input batch `[neDatapoint, batch]` live in a context
 * whose tensors are allocated in a backend buffer (`allocCtxTensors`); the
 * rest of the model is built in a `noAlloc` compute context, up to the
 * output tensor `[neLabel, batch]`. ggml-opt adds the loss, the backward
 * pass and the optimizer step to that compute context.
 *
 * Every precondition that would make ggml abort is checked here first and
 * thrown as a typed error (docs/asserts.md lists them).
 *
 * @module
 */
import { callbacks, layouts, OptBuildType, OptLossType, OptOptimizerType, TensorFlag, Type } from "../ffi/bindings.gen.ts";
import { bool, i64, member } from "../core/args.ts";
import { type IndexPlan, nodesOf, planIndexChecks, scanIndices } from "../core/indices.ts";
import { ArgumentError, BoundsError, BusyError, GgmlError, GgmlTypeError, GraphFullError, NotAllocatedError, ShapeError, UnsupportedOpError, UseAfterFreeError } from "../core/errors.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { totalMemory } from "../runtime/machine.ts";
import { runtime } from "../runtime/runtime.ts";
import { Context } from "../core/context.ts";
import { i64At, storageArray, Tensor, type TensorData } from "../core/tensor.ts";
import { bufferOf, supports } from "../backend/backend.ts";
import { Sched } from "../backend/sched.ts";
import { emptySplitState, overflowText, predictRawSplits, type SplitPrediction } from "../backend/sched_split.ts";
import { adopt, dispose, type Handle } from "../core/owned.ts";

export { OptBuildType, OptLossType, OptOptimizerType };

const sym = () => runtime().lib.symbols;
const DATA = layouts.wsp_ggml_tensor.fields.data.offset;
const TENSOR = layouts.wsp_ggml_tensor.fields;
/**
 * Offsets in `struct wsp_ggml_opt_context` (ggml-opt.cpp; no header declares it): its first
 * members are pointers (`backend_sched`, `allocated_graph`, `allocated_graph_copy`, `ctx_static`,
 * `ctx_cpu`, `ctx_compute`). The two we know the value of are checked before the one we write.
 */
const OPT_CTX = { backendSched: 0, allocatedGraph: 8, ctxCompute: 40 } as const;
/** `WSP_GGML_DEFAULT_GRAPH_SIZE`: the size of the graphs ggml-opt builds. */
const OPT_GRAPH_SIZE = 2048;

/**
 * Where `struct wsp_ggml_opt_context` holds its `std::mt19937` (after 9 pointers), and the bytes
 * scanned from there for the `inputs`, `outputs` pair that follows it and the 3 enums: the
 * largest engine of the C++ libraries (624 64-bit words and an index) and room for the enums.
 */
const OPT_RNG_AT = 72, OPT_SCAN_BYTES = 5024 + 16;
/** From `inputs`: `outputs`, `labels`, `loss`, `pred`, `ncorrect`, `gf`, `gb_grad`, `gb_opt` (pointers). */
const OPT_AFTER_INPUTS = 9 * 8;

/** ggml-opt's graphs (0 where its build type has none). */
interface OptGraphs {
  /** The forward graph (evaluation). */
  readonly gf: number;
  /** Forward and backward (training with gradient accumulation). */
  readonly gbGrad: number;
  /** Forward, backward and the optimizer step (training). */
  readonly gbOpt: number;
}


/**
 * Finds ggml-opt's graph pointers in its context struct: its offset after the RNG depends on the
 * C++ library, so the words are scanned for `inputs, outputs` (what ggml-opt's accessors return),
 * confirmed by `labels, loss, pred, ncorrect` after them and graphs that live in `ctxCompute`'s
 * pool as `buildType` says. Reads stop at the first match (inside the struct). Returns why not, as
 * a string, where nothing matches.
 */
function findOptGraphs(opt: number, ctxCompute: Context, buildType: OptBuildType): OptGraphs | string {
  const s = sym();
  const want = [s.wsp_ggml_opt_inputs(opt), s.wsp_ggml_opt_outputs(opt), s.wsp_ggml_opt_labels(opt), s.wsp_ggml_opt_loss(opt), s.wsp_ggml_opt_pred(opt), s.wsp_ggml_opt_ncorrect(opt)];
  const w = new Int32Array(ffi.view(opt + OPT_RNG_AT, OPT_SCAN_BYTES + OPT_AFTER_INPUTS));
  const base = ctxCompute._base, end = base + 4 * ctxCompute._words("OptContext").length;
  const inPool = (g: number) => g >= base && g < end;
  for (let at = 0; at < OPT_SCAN_BYTES; at += 8) {
    if (!want.every((p, j) => i64At(w, at + 8 * j) === p)) continue;
    const g = { gf: i64At(w, at + 48), gbGrad: i64At(w, at + 56), gbOpt: i64At(w, at + 64) };
    const ok = inPool(g.gf) && (buildType === OptBuildType.FORWARD ? g.gbGrad === 0 : inPool(g.gbGrad)) && (buildType === OptBuildType.OPT ? inPool(g.gbOpt) : g.gbOpt === 0);
    return ok ? g : "its graph pointers after inputs … ncorrect are not graphs of the compute context";
  }
  return `inputs, outputs, labels, loss, pred, ncorrect were not found within ${OPT_SCAN_BYTES} bytes after its RNG`;
}

/** The message of the error thrown where ggml's split of ggml-opt's `graph` would assert on its input limit. */
function optSplitMessage(what: string, graph: string, plan: SplitPrediction<number>, sched: Sched): string {
  const o = plan.overflow!, s = sym();
  const name = ffi.readCString(o.node + TENSOR.name.offset) || "(unnamed)";
  const node = `${ffi.readCString(s.wsp_ggml_op_desc(o.node))} '${name}' (node ${o.index} of ggml-opt's ${graph} graph)`;
  const todo = o.kind === "graph"
    ? "use a scheduler without parallel"
    : `keep the parameters in buffers of the scheduler's first backend (${sched.backends[0].name}: ggml-opt keeps its gradients, optimizer moments and loss there), or spread fewer of them over other backends`;
  return `${what}: ${node} ${overflowText(o, sched.backends[o.backend]?.name ?? "?")}: ${todo}`;
}

/**
 * A native handle owned by one JS object: freed by `free()`, `using` or the
 * garbage collector. Not exported; its public members are documented where
 * each subclass overrides or inherits them.
 *
 * @ignore
 */
abstract class Owned {
  readonly #h: Handle;
  readonly #what: string;

  /** @param keep JS memory the native object reads until it is freed (kept by the release, not by this object) */
  constructor(what: string, ptr: number, free: (p: number) => void, keep?: unknown) {
    if (ptr === 0) throw new GgmlError("OUT_OF_MEMORY", `${what}: ggml returned NULL`);
    this.#what = what;
    this.#h = adopt(this, "opt", ptr, keep === undefined ? free : (p) => {
      free(p);
      keepAlive(keep);
    });
  }

  /** @ignore @internal The native handle; throws once freed. */
  _live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the ${this.#what} was freed`);
    return this.#h.ptr;
  }

  /** Whether {@linkcode free} has run. */
  get freed(): boolean {
    return this.#h.ptr === 0;
  }

  /** An epoch that uses this object is running (its progress callback runs JS). */
  #inUse = 0;

  /** @ignore @internal Counts epochs using this object (`free` is refused meanwhile). */
  _hold(delta: 1 | -1): void {
    this.#inUse += delta;
  }

  /**
   * Frees the native object (idempotent).
   *
   * @throws {BusyError} from inside an epoch's progress callback, for an object the epoch uses
   */
  free(): void {
    if (this.#inUse > 0 && this.#h.ptr !== 0) throw new BusyError(`free: the ${this.#what} is used by a running epoch (this is a call from inside its progress callback; free it after epoch() returns)`);
    dispose(this.#h);
  }

  /** Frees the native object (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

// ====== Dataset ======

/** Options of {@linkcode OptDataset}. */
export interface OptDatasetOptions {
  /** Type of the data tensor; default `Type.F32`. A non-block type (f32, f16, bf16, i8 … i64, f64). */
  readonly typeData?: Type;
  /** Type of the labels tensor; default `Type.F32`. */
  readonly typeLabel?: Type;
  /** Elements per datapoint (≥ 1). */
  readonly neDatapoint: number;
  /** Elements per label; 0 for a dataset without labels (losses `MEAN` / `SUM`). */
  readonly neLabel: number;
  /** Number of datapoints (≥ 1). */
  readonly ndata: number;
  /** Datapoints per shard, the unit ggml shuffles and copies; must divide `ndata`; default 1. */
  readonly ndataShard?: number;
}

function plainType(what: string, t: Type): Type {
  member(what, t, Type, "Type");
  const traits = runtime().types.get(t);
  if (!traits || traits.blckSize !== 1 || !storageArray(t)) {
    throw new GgmlTypeError(`OptDataset: ${what} must be a non-block type with a typed array (f32, f16, bf16, i8, i16, i32, i64, f64), got ${traits?.name ?? t}`);
  }
  return t;
}

function positive(what: string, v: number, min = 1): number {
  i64(what, v);
  if (v < min) throw new BoundsError(`${what} must be at least ${min}, got ${v}`);
  return v;
}

/**
 * A dataset for ggml-opt (`wsp_ggml_opt_dataset_t`): `ndata` datapoints of
 * `neDatapoint` elements and as many labels of `neLabel` elements, in CPU
 * memory owned by ggml. Fill it with {@linkcode setData} /
 * {@linkcode setLabels}. Free it with `free()` (or `using`); a dataset
 * nothing refers to any more is freed by the garbage collector.
 */
export class OptDataset extends Owned {
  /** Type of the data tensor. */
  readonly typeData: Type;
  /** Type of the labels tensor. */
  readonly typeLabel: Type;
  /** Elements per datapoint. */
  readonly neDatapoint: number;
  /** Elements per label (0: no labels). */
  readonly neLabel: number;
  /** Number of datapoints. */
  readonly ndata: number;
  /** Datapoints per shard. */
  readonly ndataShard: number;

  /**
   * Creates the dataset (`wsp_ggml_opt_dataset_init`).
   *
   * @throws {ArgumentError} for counts that are not integers, or a type that is not a member of `Type`
   * @throws {BoundsError} for `neDatapoint`, `ndata` or `ndataShard` < 1, `neLabel` < 0, or a shard size that does not divide `ndata`
   * @throws {GgmlTypeError} for a block (quantized) type
   */
  constructor(options: OptDatasetOptions) {
    if (options === null || typeof options !== "object") throw new ArgumentError("OptDataset needs options: { neDatapoint, neLabel, ndata }");
    const typeData = plainType("typeData", options.typeData ?? Type.F32);
    const typeLabel = plainType("typeLabel", options.typeLabel ?? Type.F32);
    const neDatapoint = positive("OptDataset: neDatapoint", options.neDatapoint);
    const neLabel = positive("OptDataset: neLabel", options.neLabel, 0);
    const ndata = positive("OptDataset: ndata", options.ndata);
    const ndataShard = positive("OptDataset: ndataShard", options.ndataShard ?? 1);
    if (ndata % ndataShard !== 0) throw new BoundsError(`OptDataset: ndataShard ${ndataShard} must divide ndata ${ndata} (ggml would drop the partial shard)`);
    const s = sym();
    // ggml allocates the data, the labels and an 8-byte permutation entry per shard, and checks none of it:
    // a failed buffer leaves the tensors without data (every later call reads NULL), a failed permutation
    // is std::bad_alloc (std::terminate). Refuse what cannot fit in this machine's memory first.
    const types = runtime().types;
    const bytes = neDatapoint * ndata * types.get(typeData)!.typeSize + neLabel * ndata * types.get(typeLabel)!.typeSize + 8 * (ndata / ndataShard);
    if (!Number.isSafeInteger(bytes) || bytes > totalMemory()) {
      throw new GgmlError("OUT_OF_MEMORY", `OptDataset: ${bytes} bytes of data, labels and shard index do not fit in this machine's ${totalMemory()} bytes of memory`);
    }
    super("dataset", s.wsp_ggml_opt_dataset_init(typeData, typeLabel, neDatapoint, neLabel, ndata, ndataShard), (p) => sym().wsp_ggml_opt_dataset_free(p));
    const p = this._live("OptDataset");
    const data = s.wsp_ggml_opt_dataset_data(p), labels = neLabel > 0 ? s.wsp_ggml_opt_dataset_labels(p) : 0;
    if (ffi.readPointer(data, DATA) === 0 || (labels !== 0 && ffi.readPointer(labels, DATA) === 0)) {
      this.free();
      throw new GgmlError("OUT_OF_MEMORY", `OptDataset: ggml could not allocate the dataset's ${bytes} bytes`);
    }
    this.typeData = typeData;
    this.typeLabel = typeLabel;
    this.neDatapoint = neDatapoint;
    this.neLabel = neLabel;
    this.ndata = ndata;
    this.ndataShard = ndataShard;
  }

  /** The native `wsp_ggml_opt_dataset_t`. */
  get pointer(): number {
    return this._live("dataset");
  }

  /** Whether the dataset has labels (`neLabel > 0`). */
  get hasLabels(): boolean {
    return this.neLabel > 0;
  }

  #tensor(what: string, labels: boolean): { data: number; bytes: number; type: Type; count: number } {
    const p = this._live(what);
    const s = sym();
    if (labels && !this.hasLabels) throw new ArgumentError(`${what}: the dataset has no labels (neLabel 0)`);
    const t = labels ? s.wsp_ggml_opt_dataset_labels(p) : s.wsp_ggml_opt_dataset_data(p);
    const type = labels ? this.typeLabel : this.typeData;
    return { data: ffi.readPointer(t, DATA), bytes: Number(s.wsp_ggml_nbytes(t)), type, count: (labels ? this.neLabel : this.neDatapoint) * this.ndata };
  }

  /** @ignore @internal The data as bytes of native memory (valid while the dataset lives), and its element count. */
  _raw(what: string): { buffer: ArrayBuffer; offset: number; count: number } {
    const { data, bytes, count } = this.#tensor(what, false);
    return { buffer: ffi.view(data, bytes), offset: 0, count };
  }

  #set(what: string, labels: boolean, values: TensorData): this {
    const { data, bytes, type, count } = this.#tensor(what, labels);
    const ctor = storageArray(type)!;
    if (!(values instanceof ctor)) throw new GgmlTypeError(`${what}: a ${runtime().types.get(type)!.name} dataset takes a ${ctor.name}, got ${values?.constructor?.name ?? typeof values}`);
    if (values.length !== count) throw new BoundsError(`${what}: the dataset holds ${count} elements ([${labels ? this.neLabel : this.neDatapoint}, ${this.ndata}]), got ${values.length}`);
    new Uint8Array(ffi.view(data, bytes)).set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    return this;
  }

  #get(what: string, labels: boolean): TensorData {
    const { data, bytes, type } = this.#tensor(what, labels);
    const ctor = storageArray(type)!;
    const copy = new Uint8Array(ffi.view(data, bytes)).slice();
    return new ctor(copy.buffer, 0, bytes / ctor.BYTES_PER_ELEMENT);
  }

  /**
   * Copies `values` into the data tensor, shape `[neDatapoint, ndata]`
   * (datapoint `i` at `values[i * neDatapoint …]`); the array type is the
   * one of `typeData` (`Float32Array` for f32, `Uint16Array` raw bits for
   * f16 / bf16, `Int32Array` for i32, …).
   *
   * @throws {GgmlTypeError} for another array type
   * @throws {BoundsError} when the length is not `neDatapoint * ndata`
   */
  setData(values: TensorData): this {
    return this.#set("setData", false, values);
  }

  /** Copies `values` into the labels tensor, shape `[neLabel, ndata]` (as {@linkcode setData}). */
  setLabels(values: TensorData): this {
    return this.#set("setLabels", true, values);
  }

  /** A copy of the data tensor's elements (in the current shard order, which {@linkcode getBatch} applies, not this). */
  getData(): TensorData {
    return this.#get("getData", false);
  }

  /** A copy of the labels tensor's elements. */
  getLabels(): TensorData {
    return this.#get("getLabels", true);
  }

  /**
   * Shuffles the shards of the first `idata` datapoints (all when omitted
   * or negative) with the RNG of `opt` (`wsp_ggml_opt_dataset_shuffle`).
   *
   * @throws {BoundsError} when `idata` exceeds `ndata` or is not a multiple of `ndataShard`
   */
  shuffle(opt: OptContext, idata = -1): this {
    const p = this._live("shuffle");
    if (!(opt instanceof OptContext)) throw new ArgumentError("shuffle: expected an OptContext (its RNG shuffles)");
    const o = opt._live("shuffle");
    i64("shuffle: idata", idata);
    if (idata > this.ndata) throw new BoundsError(`shuffle: idata ${idata} exceeds ndata ${this.ndata}`);
    if (idata >= 0 && idata % this.ndataShard !== 0) throw new BoundsError(`shuffle: idata ${idata} must be a multiple of ndataShard ${this.ndataShard}`);
    sym().wsp_ggml_opt_dataset_shuffle(o, p, idata);
    return this;
  }

  /** @ignore @internal Checks a batch of `batch` datapoints and `labelElems` label elements per batch; returns the shards per batch. */
  _checkBatch(what: string, batch: number, ibatch: number, withLabels: boolean, labelElems: number): void {
    if (batch % this.ndataShard !== 0) throw new ShapeError(`${what}: the batch of ${batch} datapoints is not a multiple of ndataShard ${this.ndataShard}`);
    if (withLabels !== this.hasLabels) {
      throw new ArgumentError(withLabels ? `${what}: labels are wanted but the dataset has none (neLabel 0)` : `${what}: the dataset has labels but no labels batch is given`);
    }
    if (withLabels && labelElems !== batch * this.neLabel) throw new ShapeError(`${what}: the labels batch has ${labelElems} elements, expected ${batch} × neLabel ${this.neLabel}`);
    i64(`${what}: ibatch`, ibatch);
    if (ibatch < 0 || (ibatch + 1) * batch > this.ndata) throw new BoundsError(`${what}: batch ${ibatch} of ${batch} datapoints is past the ${this.ndata} datapoints`);
  }

  /**
   * Copies batch `ibatch` (in the shuffled order) into `dataBatch`
   * (`[neDatapoint, batch]`) and `labelsBatch` (`[neLabel, batch]`, null for
   * a dataset without labels), tensors in a backend buffer
   * (`wsp_ggml_opt_dataset_get_batch`).
   *
   * @throws {GgmlTypeError} for a tensor type other than the dataset's
   * @throws {ShapeError} for a non-contiguous tensor, wrong sizes, or a batch that is not a multiple of the shard size
   * @throws {NotAllocatedError} for a tensor that is not in a backend buffer
   * @throws {BoundsError} for a batch past the end
   */
  getBatch(dataBatch: Tensor, labelsBatch: Tensor | null, ibatch: number): this {
    const p = this._live("getBatch");
    const check = (name: string, t: Tensor, type: Type, ne: number) => {
      if (!(t instanceof Tensor)) throw new ArgumentError(`getBatch: ${name} must be a Tensor`);
      t.context._pool(`getBatch: ${name}`);
      if (t.type !== type) throw new GgmlTypeError(`getBatch: ${name} is ${t.describe()}, the dataset's is ${runtime().types.get(type)!.name}`);
      if (!t.isContiguous) throw new ShapeError(`getBatch: ${name} ${t.describe()} is not contiguous`);
      if (t.nelements % ne !== 0) throw new ShapeError(`getBatch: ${name} ${t.describe()} is not a whole number of rows of ${ne}`);
      if (bufferOf(t) === 0) throw new NotAllocatedError(`getBatch: ${name} ${t.describe()} is not in a backend buffer (allocate its context with allocCtxTensors)`);
    };
    check("dataBatch", dataBatch, this.typeData, this.neDatapoint);
    const batch = dataBatch.nelements / this.neDatapoint;
    if (labelsBatch !== null) check("labelsBatch", labelsBatch, this.typeLabel, this.neLabel || 1);
    this._checkBatch("getBatch", batch, ibatch, labelsBatch !== null, labelsBatch?.nelements ?? 0);
    sym().wsp_ggml_opt_dataset_get_batch(p, dataBatch._ptr, labelsBatch?._ptr ?? 0, ibatch);
    return this;
  }

  /**
   * Copies batch `ibatch` into JS arrays (`wsp_ggml_opt_dataset_get_batch_host`):
   * `data` holds `batch × neDatapoint` elements, `labels` (null without
   * labels) `batch × neLabel`.
   */
  getBatchHost(data: TensorData, labels: TensorData | null, ibatch: number): this {
    const p = this._live("getBatchHost");
    const dctor = storageArray(this.typeData)!, lctor = storageArray(this.typeLabel)!;
    if (!(data instanceof dctor)) throw new GgmlTypeError(`getBatchHost: data must be a ${dctor.name}`);
    if (labels !== null && !(labels instanceof lctor)) throw new GgmlTypeError(`getBatchHost: labels must be a ${lctor.name}`);
    if (data.length === 0 || data.length % this.neDatapoint !== 0) throw new ShapeError(`getBatchHost: data has ${data.length} elements, not a whole number of datapoints of ${this.neDatapoint}`);
    const batch = data.length / this.neDatapoint;
    this._checkBatch("getBatchHost", batch, ibatch, labels !== null, labels?.length ?? 0);
    sym().wsp_ggml_opt_dataset_get_batch_host(p, ffi.addressOf(data), data.byteLength, labels ? ffi.addressOf(labels) : 0, ibatch);
    keepAlive([data, labels]);
    return this;
  }
}

// ====== Optimizer parameters ======

/** AdamW's parameters (`wsp_ggml_opt_optimizer_params.adamw`); omitted ones take ggml's defaults. */
export interface AdamWParams {
  /** Selects AdamW. */
  readonly type: "adamw";
  /** Learning rate (> 0); default 0.001. */
  readonly alpha?: number;
  /** First momentum, in [0, 1]; default 0.9. */
  readonly beta1?: number;
  /** Second momentum, in [0, 1]; default 0.999. */
  readonly beta2?: number;
  /** Epsilon for numerical stability (≥ 0); default 1e-8. */
  readonly eps?: number;
  /** Weight decay, in [0, 1]; default 0. */
  readonly wd?: number;
}

/** SGD's parameters (`wsp_ggml_opt_optimizer_params.sgd`). */
export interface SgdParams {
  /** Selects SGD. */
  readonly type: "sgd";
  /** Learning rate (> 0); default 0.001. */
  readonly alpha?: number;
  /** Weight decay, in [0, 1]; default 0. */
  readonly wd?: number;
}

/** The optimizer and its parameters. */
export type OptimizerParams = AdamWParams | SgdParams;

/** ggml's default optimizer parameters (`wsp_ggml_opt_get_default_optimizer_params`). */
export function defaultOptimizerParams(): { adamw: Required<Omit<AdamWParams, "type">>; sgd: Required<Omit<SgdParams, "type">> } {
  const f = new Float32Array(7);
  sym().wsp_ggml_opt_get_default_optimizer_params(0, ffi.addressOf(f));
  keepAlive(f);
  return { adamw: { alpha: f[0], beta1: f[1], beta2: f[2], eps: f[3], wd: f[4] }, sgd: { alpha: f[5], wd: f[6] } };
}

/** Checks `p` as ggml's `wsp_ggml_opt_eval` asserts it, and writes it into the 7 floats of a `wsp_ggml_opt_optimizer_params`. */
function writeOptimizerParams(what: string, p: OptimizerParams, out: Float32Array): OptOptimizerType {
  if (p === null || typeof p !== "object" || (p.type !== "adamw" && p.type !== "sgd")) {
    throw new ArgumentError(`${what}: the optimizer must be { type: "adamw", … } or { type: "sgd", … }`);
  }
  const d = defaultOptimizerParams();
  const range = (name: string, v: number | undefined, def: number, lo: number, hi: number, open = false) => {
    const x = v ?? def;
    if (typeof x !== "number" || !(open ? x > lo : x >= lo) || !(x <= hi)) {
      throw new BoundsError(`${what}: ${p.type} ${name} must be in ${open ? "(" : "["}${lo}, ${hi}], got ${x}`);
    }
    return x;
  };
  const adamw = p.type === "adamw" ? p : {} as Partial<AdamWParams>;
  const sgd = p.type === "sgd" ? p : {} as Partial<SgdParams>;
  const adamAlpha = p.type === "adamw" ? range("alpha", adamw.alpha, d.adamw.alpha, 0, Infinity, true) : d.adamw.alpha;
  out.set([
    adamAlpha,
    p.type === "adamw" ? range("beta1", adamw.beta1, d.adamw.beta1, 0, 1) : d.adamw.beta1,
    p.type === "adamw" ? range("beta2", adamw.beta2, d.adamw.beta2, 0, 1) : d.adamw.beta2,
    p.type === "adamw" ? range("eps", adamw.eps, d.adamw.eps, 0, Infinity) : d.adamw.eps,
    p.type === "adamw" ? range("wd", adamw.wd, d.adamw.wd, 0, 1) : d.adamw.wd,
    p.type === "sgd" ? range("alpha", sgd.alpha, d.sgd.alpha, 0, Infinity, true) : d.sgd.alpha,
    p.type === "sgd" ? range("wd", sgd.wd, d.sgd.wd, 0, 1) : d.sgd.wd,
  ]);
  return p.type === "adamw" ? OptOptimizerType.ADAMW : OptOptimizerType.SGD;
}

// ====== Result ======

/** A value with its uncertainty (one standard error; NaN when it cannot be estimated). */
export interface Estimate {
  /** The value. */
  readonly value: number;
  /** Its uncertainty (NaN for fewer than 2 batches / datapoints). */
  readonly uncertainty: number;
}

/**
 * Accumulated loss, accuracy and predictions over the batches evaluated
 * (`wsp_ggml_opt_result_t`). Free it with `free()` (or `using`).
 */
export class OptResult extends Owned {
  /** @ignore @internal What the first evaluation into this result fixed (ggml asserts the same afterwards). */
  _shape: { perDatapoint: boolean; optPeriod: number; batch: number; pred: boolean } | null = null;

  /** An empty result (`wsp_ggml_opt_result_init`). */
  constructor() {
    super("result", sym().wsp_ggml_opt_result_init(), (p) => sym().wsp_ggml_opt_result_free(p));
  }

  /** The native `wsp_ggml_opt_result_t`. */
  get pointer(): number {
    return this._live("result");
  }

  /** Datapoints evaluated (`wsp_ggml_opt_result_ndata`). */
  get ndata(): number {
    const n = new BigInt64Array(1);
    sym().wsp_ggml_opt_result_ndata(this._live("ndata"), ffi.addressOf(n));
    keepAlive(n);
    return Number(n[0]);
  }

  /** Mean loss per batch (or the summed loss for `SUM`), with its uncertainty (`wsp_ggml_opt_result_loss`). */
  get loss(): Estimate {
    const f = new Float64Array(2);
    sym().wsp_ggml_opt_result_loss(this._live("loss"), ffi.addressOf(f), ffi.addressOf(f.subarray(1)));
    keepAlive(f);
    return { value: f[0], uncertainty: f[1] };
  }

  /** Fraction of correct predictions (cross-entropy only; NaN otherwise), with its uncertainty (`wsp_ggml_opt_result_accuracy`). */
  get accuracy(): Estimate {
    const f = new Float64Array(2);
    sym().wsp_ggml_opt_result_accuracy(this._live("accuracy"), ffi.addressOf(f), ffi.addressOf(f.subarray(1)));
    keepAlive(f);
    return { value: f[0], uncertainty: f[1] };
  }

  /** The predicted class of each datapoint evaluated, in evaluation order (cross-entropy only; empty otherwise) (`wsp_ggml_opt_result_pred`). */
  pred(): Int32Array {
    const p = this._live("pred");
    if (!this._shape?.pred) return new Int32Array(0);
    const out = new Int32Array(this.ndata);
    sym().wsp_ggml_opt_result_pred(p, ffi.addressOf(out));
    return out;
  }

  /** Empties the result (`wsp_ggml_opt_result_reset`). */
  reset(): this {
    sym().wsp_ggml_opt_result_reset(this._live("reset"));
    this._shape = null;
    return this;
  }

  /** A plain snapshot: `{ ndata, loss, accuracy }`. */
  summary(): OptSummary {
    return { ndata: this.ndata, loss: this.loss, accuracy: this.accuracy };
  }
}

/** A snapshot of an {@linkcode OptResult}. */
export interface OptSummary {
  /** Datapoints evaluated. */
  readonly ndata: number;
  /** Loss with uncertainty. */
  readonly loss: Estimate;
  /** Accuracy with uncertainty (NaN unless cross-entropy). */
  readonly accuracy: Estimate;
}

// ====== Context ======

/** Options of {@linkcode OptContext}. */
export interface OptContextOptions {
  /** The scheduler the graphs are computed with; its first backend holds ggml-opt's own tensors. */
  readonly sched: Sched;
  /** A `noAlloc` context holding the model's tensors after the inputs, up to `outputs`; ggml-opt adds its graphs there. */
  readonly ctxCompute: Context;
  /** The input batch `[neDatapoint, batch]`, allocated in a backend buffer. */
  readonly inputs: Tensor;
  /** The output batch `[neLabel, batch]` (f32), in `ctxCompute`. */
  readonly outputs: Tensor;
  /** The loss; default `OptLossType.MEAN`. `CROSS_ENTROPY` and `MEAN_SQUARED_ERROR` need labels. */
  readonly loss?: OptLossType;
  /** The optimizer; default AdamW with ggml's defaults. */
  readonly optimizer?: OptimizerParams;
  /** Which graphs to build: `FORWARD` (evaluation only), `GRAD`, `OPT` (training; default). */
  readonly buildType?: OptBuildType;
  /** Batches whose gradients are accumulated per optimizer step; default 1. */
  readonly optPeriod?: number;
}

/** What the progress callback of {@linkcode OptContext.epoch} is told after each batch. */
export interface OptProgress {
  /** True in the training phase, false in the evaluation phase. */
  readonly train: boolean;
  /** Batches done in this phase, from 1. */
  readonly batch: number;
  /** Batches in this phase. */
  readonly batches: number;
  /** The phase's result so far (valid during the callback only). */
  readonly result: OptResult;
}

/** Options of {@linkcode OptContext.epoch}. */
export interface EpochOptions {
  /** Datapoints used for training (from the front); the rest is evaluated. Default all (-1). */
  readonly idataSplit?: number;
  /** Result the training batches accumulate into; default a fresh one. */
  readonly resultTrain?: OptResult;
  /** Result the evaluation batches accumulate into; default a fresh one. */
  readonly resultEval?: OptResult;
  /** Called after each batch (on the JS thread). An exception stops nothing in ggml: it is rethrown after the epoch. */
  readonly onProgress?: (p: OptProgress) => void;
}

/** Results of one {@linkcode OptContext.epoch}. */
export interface EpochResult {
  /** The training phase's result. */
  readonly train: OptResult;
  /** The evaluation phase's result. */
  readonly eval: OptResult;
}

const LOSS_NAMES = Object.fromEntries(Object.entries(OptLossType).map(([k, v]) => [v, k]));

/**
 * A model being trained (`wsp_ggml_opt_context_t`, static graphs): the
 * forward graph of `outputs`, the loss, and — for `buildType` `OPT` — the
 * backward graph and the optimizer step. Free it with `free()` (or
 * `using`); it does not free the scheduler or the contexts.
 */
export class OptContext extends Owned {
  /** The scheduler. */
  readonly sched: Sched;
  /** The compute context. */
  readonly ctxCompute: Context;
  /** The input batch tensor. */
  readonly inputs: Tensor;
  /** The output batch tensor. */
  readonly outputs: Tensor;
  /** The loss type. */
  readonly lossType: OptLossType;
  /** The build type. */
  readonly buildType: OptBuildType;
  /** Gradient accumulation steps per optimizer step. */
  readonly optPeriod: number;
  /** Datapoints per physical batch (`inputs.ne[1]`). */
  readonly batch: number;
  readonly #pars: Float32Array;
  #optimizer: OptimizerParams;

  /**
   * Builds the graphs (`wsp_ggml_opt_init` with `ctx_compute`, `inputs`,
   * `outputs` set, so that they are allocated statically).
   *
   * @throws {ArgumentError} for wrong handles, no parameter (`setParam()`) in the model, or a tensor already marked as a loss
   * @throws {NotAllocatedError} when `inputs` is not in a backend buffer
   * @throws {ShapeError} / {GgmlTypeError} for outputs ggml's loss cannot take
   * @throws {GraphFullError} when the graphs exceed ggml-opt's 2048 nodes, the scheduler's graph size, or the compute context's memory
   * @throws {UnsupportedOpError} when a node of the backward pass has no backend or no backward, or (to train) the scheduler's first backend is an RPC backend (its buffers cannot be zeroed)
   * @throws {BoundsError} for optimizer parameters ggml asserts on
   */
  constructor(options: OptContextOptions) {
    if (options === null || typeof options !== "object") throw new ArgumentError("OptContext needs options: { sched, ctxCompute, inputs, outputs }");
    const { sched, ctxCompute, inputs, outputs } = options;
    if (!(sched instanceof Sched)) throw new ArgumentError("OptContext: sched must be a Sched");
    const schedPtr = sched.pointer;
    if (!(ctxCompute instanceof Context)) throw new ArgumentError("OptContext: ctxCompute must be a Context");
    ctxCompute._pool("OptContext: ctxCompute");
    if (!ctxCompute.noAlloc) throw new ArgumentError("OptContext: ctxCompute must be a noAlloc context (the scheduler allocates its tensors)");
    for (const [name, t] of [["inputs", inputs], ["outputs", outputs]] as const) {
      if (!(t instanceof Tensor)) throw new ArgumentError(`OptContext: ${name} must be a Tensor`);
      t.context._pool(`OptContext: ${name}`);
    }
    if (inputs.context === ctxCompute) throw new ArgumentError("OptContext: inputs must be in a statically allocated context, not ctxCompute");
    if (bufferOf(inputs) === 0 || !inputs.isAllocated) throw new NotAllocatedError(`OptContext: inputs ${inputs.describe()} must be allocated in a backend buffer (allocCtxTensors) — ggml asserts "the inputs must be allocated statically"`);
    if (!inputs.isContiguous) throw new ShapeError(`OptContext: inputs ${inputs.describe()} must be contiguous`);
    if (outputs.type !== Type.F32) throw new GgmlTypeError(`OptContext: outputs must be f32 (ggml-opt's loss is an f32 scalar), got ${outputs.describe()}`);
    const lossType = member("OptContext: loss", options.loss ?? OptLossType.MEAN, OptLossType, "OptLossType");
    const buildType = member("OptContext: buildType", options.buildType ?? OptBuildType.OPT, OptBuildType, "OptBuildType");
    const optPeriod = options.optPeriod ?? 1;
    i64("OptContext: optPeriod", optPeriod);
    if (optPeriod < 1 || optPeriod > 2 ** 31 - 1) throw new BoundsError(`OptContext: optPeriod must be in 1..2^31-1, got ${optPeriod}`);
    const batch = inputs.shape[1];
    if (outputs.shape[1] !== batch || outputs.shape[2] !== 1 || outputs.shape[3] !== 1) {
      throw new ShapeError(`OptContext: outputs ${outputs.describe()} must be [neLabel, ${batch}] like inputs ${inputs.describe()} (ggml counts datapoints by ne[1])`);
    }
    const pars = new Float32Array(7);
    const optimizer = options.optimizer ?? { type: "adamw" } as OptimizerParams;
    const optType = writeOptimizerParams("OptContext", optimizer, pars);
    preflight(sched, ctxCompute, outputs, lossType, buildType, optType);
    // ggml-opt zeroes its gradients and optimizer moments (wsp_ggml_graph_reset), which it keeps in a buffer of
    // the scheduler's first backend; an RPC buffer has no memset (ggml aborts, in wsp_ggml_opt_init already).
    if (buildType !== OptBuildType.FORWARD && sched.backends.length > 1 && sym().wsp_ggml_backend_is_rpc(sched.backends[0].pointer)) {
      throw new UnsupportedOpError(`OptContext: ggml-opt keeps its gradients and optimizer state in a buffer of the scheduler's first backend, ${sched.backends[0].name}, and zeroes them with a memset RPC buffers do not implement (ggml aborts): put another backend first (e.g. [cpu, rpc, cpu])`);
    }

    const s = sym();
    const P = layouts.wsp_ggml_opt_params.fields;
    const params = new Uint8Array(layouts.wsp_ggml_opt_params.size);
    s.wsp_ggml_opt_default_params(schedPtr, lossType, ffi.addressOf(params));
    const v = new DataView(params.buffer);
    v.setBigUint64(P.ctx_compute.offset, BigInt(ctxCompute._ptr), true);
    v.setBigUint64(P.inputs.offset, BigInt(inputs._ptr), true);
    v.setBigUint64(P.outputs.offset, BigInt(outputs._ptr), true);
    v.setInt32(P.build_type.offset, buildType, true);
    v.setInt32(P.opt_period.offset, optPeriod, true);
    v.setInt32(P.optimizer.offset, optType, true);
    // The constant-params callback returns *(params *) userdata: the 7 floats we own (kept alive by the finalizer's state).
    const constant = ffi.symbolAddress(runtime().lib.location.base, "wsp_ggml_opt_get_constant_optimizer_params");
    if (constant === 0) throw new UnsupportedOpError("OptContext: wsp_ggml_opt_get_constant_optimizer_params is not exported");
    v.setBigUint64(P.get_opt_pars.offset, BigInt(constant), true);
    v.setBigUint64(P.get_opt_pars_ud.offset, BigInt(ffi.addressOf(pars)), true);
    const ptr = s.wsp_ggml_opt_init(ffi.addressOf(params));
    keepAlive(params);
    // A CPU buffer for the loss tensors the first backend cannot compute (#relocate), freed after ggml-opt's context.
    const moved = { buffer: 0 };
    super("optimization context", ptr, (p) => {
      sym().wsp_ggml_opt_free(p);
      if (moved.buffer !== 0) sym().wsp_ggml_backend_buffer_free(moved.buffer);
    }, pars);
    try {
      moved.buffer = this.#relocate(ptr, sched);
    } catch (e) {
      this.free();
      throw e;
    }
    this.#layoutKnown = ffi.readPointer(ptr, OPT_CTX.backendSched) === schedPtr && ffi.readPointer(ptr, OPT_CTX.ctxCompute) === ctxCompute._ptr;
    this.sched = sched;
    this.ctxCompute = ctxCompute;
    this.inputs = inputs;
    this.outputs = outputs;
    this.lossType = lossType;
    this.buildType = buildType;
    this.optPeriod = optPeriod;
    this.batch = batch;
    this.#pars = pars;
    this.#optimizer = optimizer;
  }

  /** Whether `struct wsp_ggml_opt_context` starts as OPT_CTX says (checked once, after init). */
  readonly #layoutKnown: boolean = false;
  /** The scheduler's generation after this context's last epoch; undefined before the first. */
  #schedGeneration: number | undefined;

  /**
   * ggml-opt keeps its loss, labels, predictions and count of correct ones in a buffer of the
   * scheduler's first backend, and the scheduler must run an op whose tensor is in a buffer on
   * that buffer's backend (ggml aborts: "pre-allocated tensor … cannot run the operation"), e.g.
   * CROSS_ENTROPY_LOSS on ggml-vulkan. Those the first backend cannot run move to a buffer of the
   * last (CPU) backend, whose ops the scheduler then runs there; what reads them (the scaled loss,
   * the backward pass) gets them copied. Returns that buffer, or 0.
   */
  #relocate(opt: number, sched: Sched): number {
    const s = sym();
    const first = sched.backends[0], cpu = sched.backends[sched.backends.length - 1];
    if (first === cpu) return 0;
    const roots = [s.wsp_ggml_opt_loss(opt), s.wsp_ggml_opt_pred(opt), s.wsp_ggml_opt_ncorrect(opt)].filter((t) => t !== 0);
    const staticBuf = ffi.readPointer(roots[0], TENSOR.buffer.offset);
    const seen = new Set<number>(), move: number[] = [];
    const walk = (t: number) => {
      if (t === 0 || seen.has(t) || ffi.readPointer(t, TENSOR.buffer.offset) !== staticBuf) return;
      seen.add(t);
      const op = new DataView(ffi.view(t + TENSOR.op.offset, 4)).getInt32(0, true);
      if (op !== 0 && !s.wsp_ggml_backend_supports_op(first.pointer, t)) {
        if (!s.wsp_ggml_backend_supports_op(cpu.pointer, t)) {
          throw new UnsupportedOpError(`OptContext: ggml-opt's ${ffi.readCString(t + TENSOR.name.offset)} (${ffi.readCString(s.wsp_ggml_op_desc(t))}) runs on neither ${first.name} nor ${cpu.name}`);
        }
        move.push(t);
      }
      for (let j = 0; j < TENSOR.src.length; j++) walk(ffi.readPointer(t, TENSOR.src.offset + 8 * j));
    };
    for (const r of roots) walk(r);
    if (move.length === 0) return 0;
    const buft = cpu.defaultBufferType.pointer;
    const align = Number(s.wsp_ggml_backend_buft_get_alignment(buft));
    const up = (n: number) => Math.ceil(n / align) * align;
    const sizes = move.map((t) => up(Number(s.wsp_ggml_backend_buft_get_alloc_size(buft, t))));
    const buffer = s.wsp_ggml_backend_buft_alloc_buffer(buft, sizes.reduce((a, b) => a + b, 0));
    if (buffer === 0) throw new GgmlError("OUT_OF_MEMORY", `OptContext: could not allocate ${cpu.name} memory for ggml-opt's loss tensors`);
    let at = s.wsp_ggml_backend_buffer_get_base(buffer);
    move.forEach((t, i) => {
      // wsp_ggml_backend_tensor_alloc takes a tensor without a buffer: detach it from ggml-opt's (which keeps the unused room).
      const v = new DataView(ffi.view(t, layouts.wsp_ggml_tensor.size));
      v.setBigUint64(TENSOR.buffer.offset, 0n, true);
      v.setBigUint64(TENSOR.data.offset, 0n, true);
      const status = s.wsp_ggml_backend_tensor_alloc(buffer, t, at);
      if (status !== 0) {
        s.wsp_ggml_backend_buffer_free(buffer);
        throw new GgmlError("OUT_OF_MEMORY", `OptContext: could not place ggml-opt's ${ffi.readCString(t + TENSOR.name.offset)} in a ${cpu.name} buffer (status ${status})`);
      }
      at += sizes[i];
    });
    return buffer;
  }

  /** @ignore @internal Live check of the context and everything its graphs refer to. */
  override _live(what: string): number {
    const p = super._live(what);
    this.sched.pointer; // throws once freed
    this.ctxCompute._pool(`${what}: ctxCompute`);
    for (const c of this.outputs.context._reachable()) c._pool(`${what}: a context of the model`);
    this.inputs.context._pool(`${what}: the inputs' context`);
    if (bufferOf(this.inputs) === 0) throw new UseAfterFreeError(`${what}: the inputs' buffer was freed`);
    return p;
  }

  /** ggml-opt's graphs, found at the first check (a string: why they could not be). */
  #graphs: OptGraphs | string | undefined;
  /** Per graph: the split check's verdict (an error message, or null) and how to tell it still holds. */
  readonly #splitVerdicts = new Map<number, { readonly message: string | null; readonly unchanged: () => boolean }>();

  /**
   * ggml-opt allocates its graphs on the scheduler itself (`wsp_ggml_backend_sched_alloc_graph`
   * after a reset), past Sched's own check of the split inputs: predicts the split of each graph
   * an epoch with `idata` of `ndata` datapoints trained may allocate (`gb_opt`, and `gb_grad`
   * with gradient accumulation, to train; `gf` to evaluate) and throws where ggml would assert.
   * The verdicts are kept per graph while its tensors keep their buffers and flags.
   */
  #checkSplits(what: string, opt: number, idata: number, ndata: number): void {
    const sched = this.sched;
    if (sched.backends.length === 1) return; // nothing is copied
    const found = this.#graphs ??= findOptGraphs(opt, this.ctxCompute, this.buildType);
    if (typeof found === "string") {
      throw new UnsupportedOpError(`${what}: ggml-opt's graphs cannot be located in this build's wsp_ggml_opt_context (${found}), so their split over ${sched.backends.length} backends cannot be checked before ggml allocates it (use a scheduler of one backend)`);
    }
    // Training allocates gb_opt for the batches that step, gb_grad for the others (optPeriod > 1).
    const graphs: [string, number][] = [];
    if (idata > 0 && this.optPeriod > 1) graphs.push(["gradient", found.gbGrad]);
    if (idata > 0) graphs.push(["training", found.gbOpt]);
    if (idata < ndata) graphs.push(["evaluation", found.gf]);
    for (const [name, g] of graphs) {
      let v = this.#splitVerdicts.get(g);
      if (v === undefined || !v.unchanged()) this.#splitVerdicts.set(g, v = this.#predictOptSplit(what, name, g));
      if (v.message !== null) throw new BoundsError(v.message);
    }
  }

  /** @ignore @internal ggml-opt's graph pointers (`gf`, `gb_grad`, `gb_opt`), or why they cannot be found (tests compare their predicted splits with ggml's). */
  _optGraphs(): { readonly gf: number; readonly gbGrad: number; readonly gbOpt: number } | string {
    return this.#graphs ??= findOptGraphs(this._live("_optGraphs"), this.ctxCompute, this.buildType);
  }

  /** The split verdict of ggml-opt's graph `g`, predicted from a reset scheduler (ggml-opt resets it before allocating). */
  #predictOptSplit(what: string, name: string, g: number): { readonly message: string | null; readonly unchanged: () => boolean } {
    const sched = this.sched;
    const known = [...new Set([this.ctxCompute, this.inputs.context, ...this.outputs.context._reachable()])];
    const plan = predictRawSplits(g, sched._splitModel(), emptySplitState(), known);
    if (plan === null) throw new UnsupportedOpError(`${what}: ggml-opt's ${name} graph does not have the layout of struct wsp_ggml_cgraph this build expects, so its split cannot be checked`);
    return { message: plan.overflow !== null ? optSplitMessage(what, name, plan, sched) : null, unchanged: plan.unchanged };
  }

  /** The model's index checks (indices.ts), planned at the first epoch. */
  #indexPlan: IndexPlan | undefined;

  /** The native `wsp_ggml_opt_context_t`. */
  get pointer(): number {
    return this._live("optContext");
  }

  /** The optimizer and its parameters, as set. */
  get optimizer(): OptimizerParams {
    return this.#optimizer;
  }

  /** ggml's name of the optimizer (`wsp_ggml_opt_optimizer_name`): "adamw" or "sgd". */
  get optimizerName(): string {
    const s = sym();
    return ffi.readCString(s.wsp_ggml_opt_optimizer_name(s.wsp_ggml_opt_context_optimizer_type(this.pointer))) ?? "";
  }

  /**
   * Changes the optimizer's parameters for the next steps (for a learning
   * rate schedule); the optimizer type stays the one the context was built with.
   *
   * @throws {ArgumentError} for another optimizer type
   * @throws {BoundsError} for values ggml asserts on
   */
  setOptimizerParams(p: OptimizerParams): this {
    this._live("setOptimizerParams");
    if (p?.type !== this.#optimizer.type) throw new ArgumentError(`setOptimizerParams: the context was built for ${this.#optimizer.type}, got ${p?.type}`);
    const next = new Float32Array(7);
    writeOptimizerParams("setOptimizerParams", p, next);
    this.#pars.set(next);
    this.#optimizer = p;
    return this;
  }

  /** Zeroes the gradients, and the optimizer's state (momenta, step count) when `optimizer` (`wsp_ggml_opt_reset`). */
  reset(optimizer: boolean): this {
    const p = this._live("reset");
    bool("reset: optimizer", optimizer);
    if (this.buildType !== OptBuildType.OPT) throw new ArgumentError(`reset: needs buildType OPT (the gradient graphs exist only then), got ${this.buildType}`);
    sym().wsp_ggml_opt_reset(p, optimizer);
    return this;
  }

  #checkDataset(what: string, dataset: OptDataset): void {
    if (!(dataset instanceof OptDataset)) throw new ArgumentError(`${what}: expected an OptDataset`);
    dataset._live(what);
    if (dataset.neDatapoint !== this.inputs.shape[0] || dataset.neDatapoint * this.batch !== this.inputs.nelements) {
      throw new ShapeError(`${what}: the dataset's datapoints have ${dataset.neDatapoint} elements, inputs ${this.inputs.describe()} take ${this.inputs.shape[0]} per datapoint`);
    }
    if (dataset.typeData !== this.inputs.type) throw new GgmlTypeError(`${what}: the dataset's data is ${runtime().types.get(dataset.typeData)!.name}, inputs ${this.inputs.describe()}`);
    const needsLabels = this.lossType === OptLossType.CROSS_ENTROPY || this.lossType === OptLossType.MEAN_SQUARED_ERROR;
    if (needsLabels && !dataset.hasLabels) throw new ArgumentError(`${what}: loss ${LOSS_NAMES[this.lossType]} needs labels; the dataset has none`);
    if (!needsLabels && dataset.hasLabels) throw new ArgumentError(`${what}: loss ${LOSS_NAMES[this.lossType]} takes no labels; create the dataset with neLabel 0`);
    if (needsLabels) {
      if (dataset.typeLabel !== Type.F32) throw new GgmlTypeError(`${what}: the labels must be f32 like the outputs, got ${runtime().types.get(dataset.typeLabel)!.name}`);
      if (dataset.neLabel * this.batch !== this.outputs.nelements) throw new ShapeError(`${what}: the dataset's labels have ${dataset.neLabel} elements, outputs ${this.outputs.describe()} have ${this.outputs.shape[0]} per datapoint`);
    }
    if (dataset.ndata % this.batch !== 0) throw new ShapeError(`${what}: the batch size ${this.batch} (inputs ne[1]) does not divide the dataset's ${dataset.ndata} datapoints`);
    if (this.batch % dataset.ndataShard !== 0) throw new ShapeError(`${what}: the batch size ${this.batch} is not a multiple of the dataset's ndataShard ${dataset.ndataShard}`);
  }

  #checkResult(what: string, r: OptResult): void {
    if (!(r instanceof OptResult)) throw new ArgumentError(`${what}: expected an OptResult`);
    r._live(what);
    const shape = { perDatapoint: this.lossType !== OptLossType.SUM, optPeriod: this.optPeriod, batch: this.batch, pred: this.lossType === OptLossType.CROSS_ENTROPY };
    const had = r._shape;
    if (had && r.ndata > 0 && (had.perDatapoint !== shape.perDatapoint || had.optPeriod !== shape.optPeriod || had.batch !== shape.batch)) {
      throw new ArgumentError(`${what}: the result holds batches of another kind (loss per datapoint ${had.perDatapoint}, optPeriod ${had.optPeriod}, batch ${had.batch}); reset() it or use a new one`);
    }
    r._shape = shape;
  }

  /**
   * One pass over `dataset` (`wsp_ggml_opt_epoch`): the first `idataSplit`
   * datapoints train the model (one optimizer step per `optPeriod`
   * batches), the rest are evaluated. `onProgress` is called after each
   * batch. ggml-opt's graph stays allocated on the scheduler afterwards (the
   * next epoch computes it again; the scheduler's next allocation of another
   * graph resets it first, and this context then allocates its graph anew).
   *
   * @throws {ShapeError} / {GgmlTypeError} / {ArgumentError} for a dataset that does not fit the inputs / outputs / loss
   * @throws {BoundsError} for `idataSplit` outside 0 … ndata or not a multiple of the batch size, or when a split of ggml-opt's graph on a scheduler of several backends would copy in more than 30 tensors from other backends (ggml's `WSP_GGML_SCHED_MAX_SPLIT_INPUTS`: it aborts)
   * @throws {UnsupportedOpError} on a scheduler of several backends, where this build's ggml-opt graphs cannot be located to check their split
   */
  epoch(dataset: OptDataset, options: EpochOptions = {}): EpochResult {
    const p = this._live("epoch");
    this.#checkDataset("epoch", dataset);
    const split = options.idataSplit ?? -1;
    i64("epoch: idataSplit", split);
    const idata = split < 0 ? dataset.ndata : split;
    if (idata > dataset.ndata) throw new BoundsError(`epoch: idataSplit ${split} exceeds the dataset's ${dataset.ndata} datapoints`);
    if (idata % this.batch !== 0) throw new BoundsError(`epoch: idataSplit ${split} is not a multiple of the batch size ${this.batch}`);
    if (idata > 0 && this.buildType !== OptBuildType.OPT) throw new ArgumentError(`epoch: training needs buildType OPT; this context has only the forward graph${this.buildType === OptBuildType.GRAD ? " and gradients" : ""} (use idataSplit 0 to evaluate)`);
    const train = options.resultTrain ?? new OptResult();
    const ev = options.resultEval ?? new OptResult();
    if (train === ev) throw new ArgumentError("epoch: resultTrain and resultEval must be different results");
    this.#checkResult("epoch: resultTrain", train);
    this.#checkResult("epoch: resultEval", ev);
    const on = options.onProgress;
    if (on !== undefined && typeof on !== "function") throw new ArgumentError("epoch: onProgress must be a function");
    // Index ops of the model (get_rows of an embedding, …): the values they will read, the inputs' from the dataset.
    const plan = this.#indexPlan ??= planIndexChecks("epoch", nodesOf(this.outputs));
    if (plan.length !== 0) {
      const inputs = this.inputs;
      scanIndices("epoch", plan.map((s) => (s.idx.viewSrc ?? s.idx) === inputs ? { ...s, data: dataset._raw("epoch") } : s));
    }
    this.#checkSplits("epoch", p, idata, dataset.ndata);
    // ggml-opt computes its allocated graph again as long as it is the one it needs, without telling the
    // scheduler: after another allocation of the scheduler (ours, another OptContext's), it must allocate anew.
    if (this.#schedGeneration !== undefined && this.#schedGeneration !== this.sched._generation) {
      if (!this.#layoutKnown) throw new UnsupportedOpError("epoch: the scheduler allocated another graph since this context's last epoch, and this build's ggml-opt context cannot be told to allocate its graphs again (use a scheduler of its own)");
      new DataView(ffi.view(p + OPT_CTX.allocatedGraph, 8)).setBigUint64(0, 0n, true);
    }
    let error: unknown;
    const cb = on
      ? ffi.callback(callbacks.wsp_ggml_opt_epoch_callback, ((isTrain: boolean, _o: number, _d: number, _r: number, ibatch: number | bigint, nbatch: number | bigint) => {
        if (error !== undefined) return;
        try {
          on({ train: Boolean(isTrain), batch: Number(ibatch), batches: Number(nbatch), result: isTrain ? train : ev });
        } catch (e) {
          error = e;
        }
      }) as never)
      : null;
    // The callback runs JS during the epoch: everything the epoch uses refuses free() until it returns.
    const dp = dataset.pointer, tp = train.pointer, ep = ev.pointer;
    const leave = cb ? this.sched._enter("epoch") : undefined;
    const held: { _hold(d: 1 | -1): void }[] = [];
    if (cb) {
      const contexts = new Set([this.ctxCompute, this.inputs.context, ...this.outputs.context._reachable()]);
      for (const h of [this, dataset, train, ev, ...contexts]) {
        h._hold(1);
        held.push(h);
      }
    }
    try {
      sym().wsp_ggml_opt_epoch(p, dp, tp, ep, idata, cb?.pointer ?? 0, cb?.pointer ?? 0);
    } finally {
      for (const h of held) h._hold(-1);
      leave?.();
      cb?.close();
      // Not reset: ggml-opt's graph stays allocated for the next epoch (a reset would make ggml split its graph copy
      // again, whose sources the first split already pointed at the scheduler's input copies: NaN on a GPU + CPU split).
      this.#schedGeneration = this.sched._foreign();
    }
    if (error !== undefined) throw error;
    return { train, eval: ev };
  }

  /** Evaluates the model on all of `dataset` (an epoch with `idataSplit` 0); returns the result. */
  eval(dataset: OptDataset, options: Omit<EpochOptions, "idataSplit" | "resultTrain"> = {}): OptResult {
    return this.epoch(dataset, { ...options, idataSplit: 0 }).eval;
  }
}

/**
 * Checks what `wsp_ggml_opt_init` would assert on, by building the same
 * loss and backward pass in a scratch context first: a parameter exists,
 * no tensor is marked as a loss, every node has a backward pass and a
 * backend, the graphs fit ggml-opt's 2048 nodes and the scheduler, and
 * `ctxCompute` can hold the graphs and the gradients.
 */
function preflight(sched: Sched, ctxCompute: Context, outputs: Tensor, lossType: OptLossType, buildType: OptBuildType, optType: OptOptimizerType): void {
  const s = sym();
  const rt = runtime();
  const tensorOverhead = Number(s.wsp_ggml_tensor_overhead());
  const graphOverhead = Number(s.wsp_ggml_graph_overhead_custom(OPT_GRAPH_SIZE, true));
  const big = OPT_GRAPH_SIZE * 8;
  // Every tensor the outputs depend on: a bound on the forward nodes, which sizes the scratch for the gradients.
  const reach = new Set<number>();
  const walk = (t: Tensor) => {
    if (reach.has(t._ptr)) return;
    reach.add(t._ptr);
    for (const x of t.src) walk(x);
  };
  walk(outputs);
  if (reach.size > big) throw new GraphFullError(`OptContext: the model has ${reach.size} tensors; ggml-opt's graphs hold ${OPT_GRAPH_SIZE} nodes`);
  const memSize = Number(s.wsp_ggml_graph_overhead_custom(big, true)) + (8 * (reach.size + 16) + 64) * (rt.objectSize + rt.tensorSize + 64);
  using scratch = new Context({ memSize, noAlloc: true });
  const g = scratch.newGraphCustom(big, true);
  g.buildForwardExpand(outputs);
  const forward = g.nodes();
  const params = forward.filter((n) => n.flags & TensorFlag.PARAM);
  if (forward.some((n) => n.flags & TensorFlag.LOSS)) throw new ArgumentError("OptContext: a tensor of the model is marked as a loss (setLoss); ggml-opt adds its own loss and supports no extra loss terms");
  if (buildType !== OptBuildType.FORWARD && params.length === 0) throw new ArgumentError("OptContext: the model has no trainable parameters (mark them with setParam()) — needed for buildType GRAD / OPT");
  // wsp_ggml_compute_forward_opt_step_adamw / _sgd have an f32 kernel only (any other type: WSP_GGML_ABORT); the
  // optimizer's moments are duplicates of the parameter, so an f16 parameter reaches them at the first step.
  if (buildType === OptBuildType.OPT) {
    const bad = params.find((p) => p.type !== Type.F32);
    if (bad) throw new GgmlTypeError(`OptContext: parameter ${bad.describe()} is not f32; ggml's optimizers (AdamW, SGD) update f32 parameters only (keep an f32 master copy and cast it in the model)`);
  }
  // The loss, as wsp_ggml_opt_build makes it (in ggml-opt's own context there; here in the scratch).
  let loss: Tensor;
  const [ne0, ne1] = outputs.shape;
  if (lossType === OptLossType.MEAN || lossType === OptLossType.SUM) {
    loss = scratch.sum(outputs);
    if (lossType === OptLossType.MEAN) loss = scratch.scale(loss, 1);
  } else if (lossType === OptLossType.CROSS_ENTROPY) {
    const labels = scratch.newTensor(Type.F32, [ne0, ne1]);
    loss = scratch.crossEntropyLoss(outputs, labels);
    g.buildForwardExpand(scratch.countEqual(scratch.argmax(outputs), scratch.argmax(labels)));
  } else {
    const labels = scratch.newTensor(Type.F32, [ne0, ne1]);
    loss = scratch.scale(scratch.sum(scratch.sqr(scratch.sub(outputs, labels))), 1);
  }
  loss.setLoss();
  g.buildForwardExpand(loss);
  const check = (what: string, graph: { nNodes: number; nLeafs: number }, limit = OPT_GRAPH_SIZE) => {
    if (graph.nNodes > limit || graph.nLeafs > limit) {
      throw new GraphFullError(`OptContext: the ${what} graph would have ${graph.nNodes} nodes and ${graph.nLeafs} leafs; ggml-opt's graphs hold ${limit}`);
    }
  };
  check("forward", g);
  let needed = graphOverhead;
  if (buildType !== OptBuildType.FORWARD) {
    const before = scratch.usedMem;
    g.buildBackwardExpand(scratch);
    check("backward", g);
    const gradients = scratch.usedMem - before;
    needed += graphOverhead + gradients;
    if (buildType === OptBuildType.OPT) {
      needed += graphOverhead + params.length * tensorOverhead;
      check("optimizer", { nNodes: g.nNodes + params.length, nLeafs: g.nLeafs + 1 });
    }
  }
  const total = g.nNodes + params.length + g.nLeafs + 1;
  if (total > sched.graphSize) throw new GraphFullError(`OptContext: the training graph has about ${total} nodes and leafs, more than the scheduler's graphSize ${sched.graphSize}`);
  const types = sched.backends.map((b) => b.device.type);
  for (const node of g.nodes()) {
    if (!sched.backends.some((b, i) => supports(types[i], s.wsp_ggml_backend_supports_op(b.pointer, node._ptr), node))) {
      throw new UnsupportedOpError(`OptContext: no backend of the scheduler supports ${ffi.readCString(s.wsp_ggml_op_desc(node._ptr))} on ${node.describe()}`);
    }
  }
  // The optimizer step is a view of its parameter, which stays in the parameter's buffer: a backend that uses
  // such buffers must run it (ggml aborts: "pre-allocated tensor … cannot run the operation").
  if (buildType === OptBuildType.OPT) {
    const hyper = scratch.newTensor1d(Type.F32, optType === OptOptimizerType.ADAMW ? 7 : 2);
    for (const p of params) {
      const buf = bufferOf(p);
      if (buf === 0) continue;
      const grad = scratch.newTensor(Type.F32, p.shape);
      const step = optType === OptOptimizerType.ADAMW
        ? scratch.optStepAdamw(p, grad, scratch.newTensor(Type.F32, p.shape), scratch.newTensor(Type.F32, p.shape), hyper)
        : scratch.optStepSgd(p, grad, hyper);
      const buft = s.wsp_ggml_backend_buffer_get_type(buf);
      if (!sched.backends.some((b, i) => s.wsp_ggml_backend_supports_buft(b.pointer, buft) && supports(types[i], s.wsp_ggml_backend_supports_op(b.pointer, step._ptr), step))) {
        throw new UnsupportedOpError(`OptContext: ${ffi.readCString(s.wsp_ggml_op_desc(step._ptr))} of parameter ${p.describe()} would run on the backend of its ${ffi.readCString(s.wsp_ggml_backend_buft_name(buft))} buffer, which does not support it (allocate the parameters on a backend that does)`);
      }
    }
  }
  const free = ctxCompute.memSize - ctxCompute.usedMem;
  if (needed > free) {
    throw new GraphFullError(`OptContext: ctxCompute has ${free} bytes free; ggml-opt needs about ${needed} for its graphs and gradients (create it ${needed - free} bytes larger)`);
  }
}

// ====== fit ======

/** Options of {@linkcode fit}. */
export interface FitOptions {
  /** The scheduler. */
  readonly sched: Sched;
  /** The compute context (see {@linkcode OptContextOptions.ctxCompute}). */
  readonly ctxCompute: Context;
  /** The input batch tensor. */
  readonly inputs: Tensor;
  /** The output batch tensor. */
  readonly outputs: Tensor;
  /** The dataset. */
  readonly dataset: OptDataset;
  /** The loss; default `OptLossType.MEAN`. */
  readonly loss?: OptLossType;
  /** The optimizer, or a function giving it per epoch (from 1) for a schedule; its type must not change. Default AdamW. */
  readonly optimizer?: OptimizerParams | ((epoch: number) => OptimizerParams);
  /** Passes over the dataset (≥ 1). */
  readonly epochs: number;
  /** Datapoints per optimizer step; a multiple of the physical batch (`inputs.ne[1]`) that divides `ndata`; default the physical batch. */
  readonly batchLogical?: number;
  /** Fraction of the dataset held out for validation, in [0, 1); default 0. */
  readonly valSplit?: number;
  /** No per-epoch line on stderr; default true. */
  readonly silent?: boolean;
  /** Called after each batch, as in {@linkcode EpochOptions.onProgress}, with the epoch. */
  readonly onProgress?: (p: OptProgress & { readonly epoch: number }) => void;
  /** Called after each epoch with its summary. */
  readonly onEpoch?: (e: FitEpoch) => void;
}

/** One epoch of {@linkcode fit}. */
export interface FitEpoch {
  /** The epoch, from 1. */
  readonly epoch: number;
  /** Training result. */
  readonly train: OptSummary;
  /** Validation result (ndata 0 without a validation split). */
  readonly val: OptSummary;
}

/**
 * Trains a model on a dataset, as `wsp_ggml_opt_fit` does (shuffle all,
 * then per epoch shuffle the training part and run an epoch), and returns
 * every epoch's training and validation loss and accuracy.
 *
 * @throws {ShapeError} when `batchLogical` is not a multiple of the physical batch or does not divide `ndata`
 * @throws {BoundsError} for `valSplit` outside [0, 1), or `epochs` < 1
 */
export function fit(options: FitOptions): FitEpoch[] {
  const { dataset } = options;
  if (!(dataset instanceof OptDataset)) throw new ArgumentError("fit: dataset must be an OptDataset");
  dataset._live("fit");
  const epochs = positive("fit: epochs", options.epochs);
  if (!(options.inputs instanceof Tensor)) throw new ArgumentError("fit: inputs must be a Tensor");
  const physical = options.inputs.shape[1];
  const logical = options.batchLogical ?? physical;
  i64("fit: batchLogical", logical);
  if (logical < 1 || logical % physical !== 0) throw new ShapeError(`fit: batchLogical ${logical} must be a multiple of the physical batch ${physical} (inputs ne[1])`);
  if (dataset.ndata % logical !== 0) throw new ShapeError(`fit: batchLogical ${logical} does not divide the dataset's ${dataset.ndata} datapoints`);
  const valSplit = options.valSplit ?? 0;
  if (typeof valSplit !== "number" || !(valSplit >= 0 && valSplit < 1)) throw new BoundsError(`fit: valSplit must be in [0, 1), got ${valSplit}`);
  const silent = bool("fit: silent", options.silent ?? true);
  const schedule = typeof options.optimizer === "function" ? options.optimizer : undefined;
  const optPeriod = logical / physical;
  const nbatchesLogical = dataset.ndata / logical;
  // As ggml: the split index in physical batches, from f32 arithmetic.
  const ibatchSplit = Math.trunc(Math.fround(Math.fround(1 - Math.fround(valSplit)) * nbatchesLogical)) * optPeriod;
  const idataSplit = ibatchSplit * physical;
  using opt = new OptContext({
    sched: options.sched,
    ctxCompute: options.ctxCompute,
    inputs: options.inputs,
    outputs: options.outputs,
    loss: options.loss,
    optimizer: schedule ? schedule(1) : options.optimizer as OptimizerParams | undefined,
    optPeriod,
  });
  if (logical < dataset.ndata) dataset.shuffle(opt, -1);
  using train = new OptResult();
  using val = new OptResult();
  const history: FitEpoch[] = [];
  for (let epoch = 1; epoch <= epochs; epoch++) {
    if (schedule && epoch > 1) opt.setOptimizerParams(schedule(epoch));
    if (logical < idataSplit) dataset.shuffle(opt, idataSplit);
    train.reset();
    val.reset();
    const on = options.onProgress;
    opt.epoch(dataset, { idataSplit, resultTrain: train, resultEval: val, onProgress: on ? (p) => on({ ...p, epoch }) : undefined });
    const e: FitEpoch = { epoch, train: train.summary(), val: val.summary() };
    history.push(e);
    if (!silent) {
      const f = (r: OptSummary) => `loss=${r.loss.value.toFixed(5)}±${r.loss.uncertainty.toFixed(5)} acc=${(100 * r.accuracy.value).toFixed(2)}±${(100 * r.accuracy.uncertainty).toFixed(2)}%`;
      console.error(`fit: epoch ${epoch}/${epochs}: train ${f(e.train)}${e.val.ndata ? `, val ${f(e.val)}` : ""}`);
    }
    options.onEpoch?.(e);
  }
  return history;
}
