/**
 * A decoder-only transformer in ggml through the public API — the
 * architectures of {@linkcode ARCHITECTURES} (llama, qwen2, qwen3, gemma3),
 * one graph builder with their differences in {@linkcode ArchTraits}: the
 * weights in one backend buffer
 * read straight from the GGUF file, a KV cache in another, and the forward
 * graph computed by the scheduler ({@linkcode Sched}) — so the same code
 * would run on any backend the scheduler is given. With a
 * {@linkcode LayerSplit}, groups of layers (their weights and KV cache) live
 * on other backends, such as RPC servers, and the scheduler runs each layer
 * where its weights are.
 *
 * One graph is built per (tokens in the batch, attended positions rounded
 * up to {@linkcode KV_PAD}, logits of every row or of the last) and kept:
 * a decode step reuses the graph of its bucket and only sets its inputs
 * (token ids, positions, KV-cache rows, masks), so consecutive steps skip
 * both the graph build and the scheduler's allocation.
 *
 * @module
 */
import {
  allocCtxTensors,
  Backend,
  BackendBufferUsage,
  bestDevice,
  type Buffer,
  type BufferType,
  Context,
  type DeviceChoice,
  dequantize,
  extraBufferTypeFor,
  extraBufferTypes,
  type GgufFile,
  type GgufTensorInfo,
  type Graph,
  graphOverheadCustom,
  readGguf,
  ROPE_TYPE_NEOX,
  rowSize,
  Sched,
  type Tensor,
  tensorCopy,
  tensorGet,
  tensorGetBytes,
  tensorGetInto,
  tensorOverhead,
  tensorSet,
  Threadpool,
  Type,
} from "../mod.ts";
import { type Hparams, isSlidingLayer, readHparams } from "./hparams.ts";
import { checkThreads, defaultThreads } from "../runtime/threads.ts";
import { ModelError, UseAfterFreeError } from "../core/errors.ts";

/**
 * Attended positions are rounded up to a multiple of this, so that a decode graph serves this
 * many steps. llama.cpp pads its cache to 32 without flash attention (256 with it): a larger pad
 * makes every step attend to more masked positions (256 made pp128 attend to twice its 128).
 */
export const KV_PAD = 32;
/**
 * Room per layer in a forward graph: a layer makes ~40 nodes (~48 with the
 * precise GELU) and ~15 leafs. The scheduler's tables grow with its graph
 * size (~23 KB per slot), so it is sized to the model, not generously.
 */
const GRAPH_SLOTS_PER_LAYER = 64;
/** Rows per dequantization call (bounds the temporary memory for the 262k-row embedding). */
const DEQUANT_ROWS = 8192;
/** Graphs kept (oldest dropped first). */
const MAX_GRAPHS = 8;
/** What #run returns for a batch whose logits are not read. */
const EMPTY: Float32Array = new Float32Array(0);

/** Rows of logits per batch when every row's logits are wanted (each row is nVocab floats). */
const ALL_LOGITS_BATCH = 64;

/** Options of {@linkcode LlmModel.load}. */
export interface ModelOptions {
  /**
   * CPU threads: of the CPU backend, or of the CPU fallback beside a GPU. Default: the
   * package's thread policy (`defaultThreads`: the physical cores other processes leave free).
   */
  readonly threads?: number;
  /**
   * How long the threadpool's idle threads spin before they sleep between graphs, 0 (sleep at
   * once) … 100 (ggml's `poll`). Default 50 (ggml's), or 0 when layers are split over RPC
   * servers (the pool then waits on the network).
   */
  readonly poll?: number;
  /** Dequantize every weight to f32 after loading (the reference-accuracy mode); default false. */
  readonly dequantize?: boolean;
  /** Positions the KV cache holds (default 2048, at most the trained context). */
  readonly nCtx?: number;
  /** Tokens per prompt batch (default 512). */
  readonly ubatch?: number;
  /** Type of the KV cache: F16 (default) or F32 (default in the dequantized mode). */
  readonly kvType?: typeof Type.F16 | typeof Type.F32;
  /**
   * GELU-tanh from tanh and arithmetic instead of ggml's fused GEGLU, whose
   * CPU kernel looks the activation up in an f16 table (~1e-3 relative
   * error). Default: on in the dequantized mode, off otherwise.
   */
  readonly preciseGelu?: boolean;
  /**
   * The device to compute on when no `backend` is given: `"auto"` (default:
   * a GPU when ggml has one, else the CPU; the `WSP_GGML_DEVICE` environment
   * variable overrides it), `"cpu"`, `"gpu"`, a device's name or a Device.
   * The weights and the KV cache go into that device's buffers.
   */
  readonly device?: DeviceChoice;
  /**
   * The backend to compute on (default: one on `device`, freed with the
   * model). Not a CPU one: the scheduler runs each op on it where it can,
   * else on a CPU backend the model makes.
   */
  readonly backend?: Backend;
  /**
   * Layers placed on other backends (see {@linkcode LayerSplit}); default
   * none: every layer on the model's backend.
   */
  readonly split?: LayerSplit;
  /**
   * Weights on a CPU backend that its extra buffer type `CPU_REPACK` takes
   * (q4_K, q4_0, iq4_nl on AVX2 or NEON processors; see
   * {@linkcode extraBufferTypeFor}) are loaded there, repacked for faster
   * prompt matmuls, as llama.cpp does. Default true; false keeps every weight
   * in the plain buffer (and never with `dequantize`).
   */
  readonly repack?: boolean;
}

/**
 * Where transformer layers go when not on the model's own backend (option
 * `split` of {@linkcode LlmModel.load}): `layers[i]` lists the layers whose
 * weights and KV-cache slice live on `backends[i]`, e.g. RPC servers
 * (`Backend.rpc("host:port")`). Layers listed nowhere, the token embedding,
 * the output norm and the (tied) output projection stay on the model's own
 * backend. The scheduler runs each op where its weights are, so a layer
 * computes on its backend and only the activations (n_embd floats per
 * token: 640 for Gemma 3 270M) and the inputs cross between backends.
 *
 * ```ts ignore
 * using a = Backend.rpc("127.0.0.1:50052"), b = Backend.rpc("127.0.0.1:50053");
 * using model = GemmaModel.load(path, { split: { backends: [a, b], layers: evenLayers(18, 3).slice(1) } });
 * ```
 */
export interface LayerSplit {
  /** Backends other than the model's own, each used once; the model does not free them (free them after the model). */
  readonly backends: readonly Backend[];
  /** For each backend, its layers (0-based; a layer in at most one list). */
  readonly layers: readonly (readonly number[])[];
}

/**
 * `nLayer` layers in `parts` contiguous groups as even as they go (the
 * first groups one larger when they do not divide): `evenLayers(18, 3)` is
 * [[0..5], [6..11], [12..17]]. Groups may be empty when parts > nLayer.
 */
export function evenLayers(nLayer: number, parts: number): number[][] {
  if (!Number.isInteger(nLayer) || nLayer < 0) throw new RangeError(`evenLayers: nLayer must be an integer ≥ 0, got ${nLayer}`);
  if (!Number.isInteger(parts) || parts < 1) throw new RangeError(`evenLayers: parts must be an integer ≥ 1, got ${parts}`);
  const out: number[][] = [];
  for (let p = 0, l = 0; p < parts; p++) {
    const n = Math.floor(nLayer / parts) + (p < nLayer % parts ? 1 : 0);
    out.push(Array.from({ length: n }, () => l++));
  }
  return out;
}

/** Options of {@linkcode LlmModel.forward}. */
export interface ForwardOptions {
  /** Return the logits of every position (n × nVocab, row-major); default: only the last row. */
  readonly allLogits?: boolean;
  /**
   * Where to write the logits (nVocab floats, or n × nVocab with
   * `allLogits`); forward returns it. A decode loop that passes the same
   * array each step allocates nothing per token (each new array is 1 MiB
   * for a 262k vocabulary, garbage until the next collection).
   */
  readonly out?: Float32Array;
}

/** Where the time of the forward passes went, in milliseconds (cumulative; see {@linkcode LlmModel.stats}). */
export interface ForwardStats {
  /** Graphs built. */
  graphsBuilt: number;
  /** Building graphs (ops through the API). */
  buildMs: number;
  /** Scheduler allocations (a graph not computed just before). */
  allocs: number;
  /** Time in those allocations. */
  allocMs: number;
  /** Setting inputs. */
  inputMs: number;
  /** `Sched.graphCompute`. */
  computeMs: number;
  /** Reading logits back. */
  outputMs: number;
  /** Graph computes. */
  computes: number;
}

/** What the model allocated on one backend: weights, then the KV cache of its layers. */
interface Group {
  ctx?: Context;
  buf?: Buffer | null;
  /** Weights in other buffer types (CPU_REPACK). */
  others?: { context: Context; buffer: Buffer | null }[];
  kvCtx?: Context;
  kvBuf?: Buffer | null;
}

/** A layer's weights; null where its architecture has no such tensor (or the file leaves an optional one out). */
interface LayerWeights {
  readonly attnNorm: Tensor;
  readonly wq: Tensor;
  readonly wk: Tensor;
  readonly wv: Tensor;
  readonly bq: Tensor | null;
  readonly bk: Tensor | null;
  readonly bv: Tensor | null;
  readonly qNorm: Tensor | null;
  readonly kNorm: Tensor | null;
  readonly wo: Tensor;
  readonly bo: Tensor | null;
  readonly postAttnNorm: Tensor | null;
  readonly ffnNorm: Tensor;
  readonly gate: Tensor;
  readonly up: Tensor;
  readonly down: Tensor;
  readonly postFfwNorm: Tensor | null;
}

/** A built forward graph and its inputs, with the host arrays those are set from. */
interface Step {
  readonly key: string;
  readonly ctx: Context;
  readonly graph: Graph;
  /** Tokens in the batch. */
  readonly n: number;
  /** Cache positions attended (a multiple of KV_PAD, or nCtx). */
  readonly nKv: number;
  /** Rows of logits out: n, or 1. */
  readonly nOut: number;
  readonly tokens: Tensor;
  readonly pos: Tensor;
  readonly kIdx: Tensor;
  readonly vIdx: Tensor;
  readonly maskGlobal: Tensor;
  /** The sliding-window mask, for an architecture with sliding-window layers. */
  readonly maskSwa: Tensor | null;
  readonly logits: Tensor;
  readonly hTokens: Int32Array;
  readonly hPos: Int32Array;
  readonly hKIdx: Int32Array;
  readonly hVIdx: Int32Array;
  readonly hMaskGlobal: Float32Array;
  readonly hMaskSwa: Float32Array | null;
}

/** A model ready to run: weights, KV cache, scheduler. Free it with `free()` (or `using`). */
export class LlmModel {
  /** The GGUF file's metadata. */
  readonly file: GgufFile;
  /** The hyper-parameters. */
  readonly hparams: Hparams;
  /** Positions the KV cache holds. */
  readonly nCtx: number;
  /** CPU threads it computes with (the `threads` option, else the thread policy's default when it was made). */
  readonly threads: number;
  /** Tokens per prompt batch. */
  readonly ubatch: number;
  /** Whether the weights were dequantized to f32. */
  readonly dequantized: boolean;
  /** Whether GELU is computed without ggml's f16 table. */
  readonly preciseGelu: boolean;
  /** The KV cache's element type. */
  readonly kvType: Type;
  /** The backend computing the graphs (a GPU's, or the CPU's). */
  readonly backend: Backend;
  /**
   * The scheduler's backends, by priority: `backend` when it is not a CPU
   * one, the {@linkcode LayerSplit}'s backends, then the CPU one (`backend`,
   * or the fallback the model made).
   */
  readonly backends: readonly Backend[];
  /** The backend holding each layer's weights and KV cache (`backend`, or one of the split's). */
  readonly layerBackends: readonly Backend[];
  /** Where time went (cumulative; reset it freely). */
  stats: ForwardStats = emptyStats();

  /** Per backend holding weights: their context and buffer, then the KV cache's. */
  readonly #groups: Group[] = [];
  readonly #tokEmbd: Tensor;
  readonly #outNorm: Tensor;
  /** The output projection: `output.weight`, or the token embedding when the file ties them. */
  readonly #output: Tensor;
  /** Llama 3's RoPE frequency factors (`rope_freqs.weight`), or null. */
  readonly #ropeFreqs: Tensor | null;
  readonly #layers: LayerWeights[];
  readonly #kCache: Tensor[];
  readonly #vCache: Tensor[];
  readonly #sched: Sched;
  readonly #pool: Threadpool | null;
  readonly #ownBackend: boolean;
  /** The CPU fallback the model made beside a non-CPU backend, or null. */
  readonly #cpu: Backend | null;
  readonly #steps = new Map<string, Step>();
  /** The step the scheduler holds allocated (computing it again needs no allocation). */
  #allocated: Step | undefined;
  #nPast = 0;
  /** Nodes + leafs a forward graph may have. */
  readonly #graphSize: number;

  private constructor(file: GgufFile, options: ModelOptions) {
    this.file = file;
    const hp = this.hparams = readHparams(file);
    const want = expectedTensors(hp, file);
    this.#graphSize = GRAPH_SLOTS_PER_LAYER * hp.nLayer + 512;
    this.nCtx = Math.min(options.nCtx ?? 2048, hp.nCtxTrain);
    this.ubatch = options.ubatch ?? 512;
    if (!Number.isInteger(this.nCtx) || this.nCtx < 1) throw new RangeError(`nCtx must be a positive integer, got ${options.nCtx}`);
    if (!Number.isInteger(this.ubatch) || this.ubatch < 1) throw new RangeError(`ubatch must be a positive integer, got ${options.ubatch}`);
    this.dequantized = options.dequantize ?? false;
    this.preciseGelu = options.preciseGelu ?? this.dequantized;
    this.kvType = options.kvType ?? (this.dequantized ? Type.F32 : Type.F16);
    this.#ownBackend = options.backend === undefined;
    const threads = this.threads = options.threads ?? defaultThreads();
    checkThreads("GemmaModel", threads);
    const split = checkSplit(options.split, hp.nLayer);
    const device = options.backend ? options.backend.device : bestDevice({ device: options.device });
    // A threadpool that lives across computes (without one ggml starts and joins threads on every graph), for the CPU backend the model makes.
    const needCpu = options.backend ? !options.backend.isCpu : true;
    // With layers on RPC servers the pool waits on the network between its graphs: its threads
    // sleep then (poll 0) instead of spinning on cores a server on this machine may need.
    this.#pool = needCpu ? new Threadpool({ nThreads: threads, poll: options.poll ?? (split ? 0 : undefined) }) : null;
    let cpu: Backend | null = null;
    try {
      this.backend = options.backend ?? (device.typeName === "cpu" ? Backend.cpu({ nThreads: threads, threadpool: this.#pool! }) : device.init());
      cpu = this.backend.isCpu ? null : Backend.cpu({ nThreads: threads, threadpool: this.#pool! });
    } catch (e) {
      this.#pool?.free();
      throw e;
    }
    this.#cpu = cpu;
    const local = this.backend;
    const remote = split?.backends ?? [];
    const localCpu = local.isCpu ? local : cpu!;
    // By priority: a GPU, the split's backends, then the CPU last (ggml's fallback for every op).
    this.backends = [...(local.isCpu ? [] : [local]), ...remote, localCpu];
    const home = new Array<Backend>(hp.nLayer).fill(local);
    split?.layers.forEach((ls, i) => ls.forEach((il) => home[il] = remote[i]));
    this.layerBackends = home;
    try {
      for (const b of remote) {
        if (b === local || b === cpu) throw new RangeError(`split: ${b.name} is the model's own backend; leave its layers out of the split`);
      }
      // Per backend, one buffer of weights read straight from the file: a layer's tensors on its backend, the rest on the model's.
      const groups: [Backend, number[]][] = [[local, home.flatMap((b, il) => b === local ? [il] : [])], ...remote.map((b, i) => [b, [...split!.layers[i]]] as [Backend, number[]])];
      const layerOf = (name: string) => /^blk\.(\d+)\./.exec(name)?.[1];
      const tensors = new Map<string, Tensor>();
      const nEmbdK = hp.nHeadKv * hp.headDimK, nEmbdV = hp.nHeadKv * hp.headDimV;
      this.#kCache = [];
      this.#vCache = [];
      for (const [gi, [backend, layers]] of groups.entries()) {
        const mine = new Set(layers.map(String));
        const names = [...want.keys()].filter((n) => {
          const l = layerOf(n);
          return l === undefined ? gi === 0 : mine.has(l);
        });
        const g: Group = {};
        this.#groups.push(g);
        if (names.length > 0) {
          const repack = backend.isCpu && !this.dequantized && (options.repack ?? true);
          const file0 = file.loadTensorsToBackend(backend, { names, bufferTypes: repack ? repackPicker(backend) : undefined });
          let loaded: { context: Context; tensors: Map<string, Tensor>; buffer: Buffer | null } = file0;
          g.ctx = loaded.context;
          g.buf = loaded.buffer;
          g.others = file0.others;
          for (const o of file0.others) o.buffer?.setUsage(BackendBufferUsage.WEIGHTS);
          if (this.dequantized) {
            loaded = toF32(backend, loaded.context, loaded.tensors, loaded.buffer);
            g.ctx = loaded.context;
            g.buf = loaded.buffer;
          }
          // WEIGHTS: the scheduler runs the ops that read a tensor of this buffer on its backend.
          g.buf?.setUsage(BackendBufferUsage.WEIGHTS);
          for (const [n, t] of loaded.tensors) tensors.set(n, t);
        }
        // The KV cache of the group's layers, on its backend: K rows [nEmbdK] per position; V transposed
        // (a row per channel, nCtx long), so that attention multiplies by a plain view of it.
        if (layers.length > 0) {
          const kvCtx = g.kvCtx = new Context({ memSize: (2 * layers.length + 1) * tensorOverhead(), noAlloc: true });
          for (const il of layers) {
            this.#kCache[il] = kvCtx.newTensor(this.kvType, [nEmbdK, this.nCtx]).setName(`cache_k_l${il}`);
            this.#vCache[il] = kvCtx.newTensor(this.kvType, [this.nCtx, nEmbdV]).setName(`cache_v_l${il}`);
          }
          g.kvBuf = allocCtxTensors(kvCtx, backend);
          // Masked positions still enter the products (scaled by 0): they must hold finite numbers.
          g.kvBuf?.clear(0);
        }
      }
      // expectedTensors checked every name, shape and type against the file: what it lists is loaded.
      const w = (name: string): Tensor => tensors.get(name)!;
      const o = (name: string): Tensor | null => want.has(name) ? w(name) : null;
      this.#tokEmbd = w("token_embd.weight");
      this.#outNorm = w("output_norm.weight");
      this.#output = o("output.weight") ?? this.#tokEmbd;
      this.#ropeFreqs = o("rope_freqs.weight");
      this.#layers = Array.from({ length: hp.nLayer }, (_, il) => {
        const b = (n: string) => w(`blk.${il}.${n}.weight`);
        const ob = (n: string) => o(`blk.${il}.${n}`);
        return {
          attnNorm: b("attn_norm"), wq: b("attn_q"), wk: b("attn_k"), wv: b("attn_v"),
          bq: ob("attn_q.bias"), bk: ob("attn_k.bias"), bv: ob("attn_v.bias"),
          qNorm: ob("attn_q_norm.weight"), kNorm: ob("attn_k_norm.weight"),
          wo: b("attn_output"), bo: ob("attn_output.bias"), postAttnNorm: ob("post_attention_norm.weight"), ffnNorm: b("ffn_norm"),
          gate: b("ffn_gate"), up: b("ffn_up"), down: b("ffn_down"), postFfwNorm: ob("post_ffw_norm.weight"),
        };
      });
      // The scheduler places an op by its weights' buffer, else on the first backend that supports it.
      this.#sched = new Sched({ backends: this.backends, graphSize: this.#graphSize });
      // Size the compute buffer once, for the largest graph a prompt batch makes.
      const worst = this.#step(Math.min(this.ubatch, this.nCtx), this.nCtx, false);
      this.#sched.reserve(worst.graph);
    } catch (e) {
      this.#release();
      throw e;
    }
  }

  /**
   * Loads a GGUF file of one of {@linkcode ARCHITECTURES} (the weights into a buffer of the model's
   * backend, and of each {@linkcode LayerSplit} backend for its layers) and
   * sets up the KV cache and the scheduler.
   */
  static load(path: string, options: ModelOptions = {}): LlmModel {
    return new LlmModel(readGguf(path), options);
  }

  /** {@linkcode load} from a file's metadata already read (e.g. for the tokenizer too). */
  static fromGguf(file: GgufFile, options: ModelOptions = {}): LlmModel {
    return new LlmModel(file, options);
  }

  /** Positions in the KV cache (tokens processed since the last {@linkcode reset}). */
  get nPast(): number {
    return this.#nPast;
  }

  /**
   * The scheduler's graph splits for the last graph it allocated: one per
   * change of backend along the graph (1 on one backend; with a
   * {@linkcode LayerSplit}, at least one per group of consecutive layers).
   */
  get splits(): number {
    return this.#sched.nSplits;
  }

  /** Forgets every cached position. */
  reset(): void {
    this.#nPast = 0;
  }

  /** Keeps only the first `n` cached positions (the next tokens are written from position n). */
  truncate(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > this.#nPast) throw new RangeError(`truncate: n must be in 0..${this.#nPast}, got ${n}`);
    this.#nPast = n;
  }

  /**
   * Runs `tokens` at positions nPast… (in batches of {@linkcode ubatch}),
   * appending them to the KV cache. Returns the logits of the last token
   * (nVocab floats), or with `allLogits` those of every token (n × nVocab,
   * row-major).
   *
   * @throws {RangeError} for an empty list, a token outside the vocabulary, or more positions than the cache holds
   * @throws {UseAfterFreeError} after {@linkcode free}
   */
  forward(tokens: ArrayLike<number>, options: ForwardOptions = {}): Float32Array {
    this.#live("forward");
    const n = tokens.length, hp = this.hparams;
    if (n === 0) throw new RangeError("forward: no tokens");
    if (this.#nPast + n > this.nCtx) throw new RangeError(`forward: ${this.#nPast} + ${n} positions exceed the cache's ${this.nCtx}`);
    for (let i = 0; i < n; i++) {
      const t = tokens[i];
      if (!Number.isInteger(t) || t < 0 || t >= hp.nVocab) throw new RangeError(`forward: token ${t} at ${i} is not in 0..${hp.nVocab - 1}`);
    }
    const all = options.allLogits ?? false;
    const rows = all ? n : 1;
    if (options.out !== undefined && !(options.out instanceof Float32Array && options.out.length === rows * hp.nVocab)) {
      throw new RangeError(`forward: out must be a Float32Array of ${rows} × ${hp.nVocab} floats`);
    }
    const batch = all ? Math.min(this.ubatch, ALL_LOGITS_BATCH) : this.ubatch;
    // One batch: its logits read once, into out or a new array.
    if (n <= batch) return this.#run(tokens, 0, n, all, options.out);
    const out = options.out ?? new Float32Array(rows * hp.nVocab);
    for (let i0 = 0; i0 < n; i0 += batch) {
      const m = Math.min(batch, n - i0);
      // Only the rows returned are read: with one row, the earlier batches' logits stay on the backend.
      if (all) this.#run(tokens, i0, m, all, out.subarray(i0 * hp.nVocab, (i0 + m) * hp.nVocab));
      else this.#run(tokens, i0, m, all, i0 + m === n ? out : null);
    }
    return out;
  }

  /**
   * Computes tokens[i0 .. i0 + n) at positions nPast…; returns the logits
   * tensor's data, read into `into` when given, not read when null.
   */
  #run(tokens: ArrayLike<number>, i0: number, n: number, all: boolean, into?: Float32Array | null): Float32Array {
    const hp = this.hparams, st = this.stats, p0 = this.#nPast;
    const nKv = Math.min(this.nCtx, Math.ceil((p0 + n) / KV_PAD) * KV_PAD);
    const step = this.#step(n, nKv, all);
    let t = performance.now();
    if (this.#allocated !== step) {
      this.#sched.allocGraph(step.graph);
      this.#allocated = step;
      st.allocs++;
      const t1 = performance.now();
      st.allocMs += t1 - t;
      t = t1;
    }
    // Inputs: ids, positions, the cache rows to write, and the masks.
    const nEmbdV = hp.nHeadKv * hp.headDimV, nCtx = this.nCtx, win = hp.slidingWindow;
    for (let i = 0; i < n; i++) {
      const p = p0 + i;
      step.hTokens[i] = tokens[i0 + i];
      step.hPos[i] = p;
      step.hKIdx[i] = p;
      // V is stored transposed: channel j of position p is row j·nCtx + p of the cache seen as one column.
      for (let j = 0, o = i * nEmbdV; j < nEmbdV; j++) step.hVIdx[o + j] = j * nCtx + p;
      // Causal: key position kp is visible to p iff kp <= p; sliding window also iff p - kp < win.
      const mg = step.hMaskGlobal, ms = step.hMaskSwa, row = i * nKv;
      for (let kp = 0; kp < nKv; kp++) mg[row + kp] = kp <= p ? 0 : -Infinity;
      if (ms) for (let kp = 0; kp < nKv; kp++) ms[row + kp] = kp <= p && p - kp < win ? 0 : -Infinity;
    }
    tensorSet(step.tokens, step.hTokens);
    tensorSet(step.pos, step.hPos);
    tensorSet(step.kIdx, step.hKIdx);
    tensorSet(step.vIdx, step.hVIdx);
    tensorSet(step.maskGlobal, step.hMaskGlobal);
    if (step.maskSwa) tensorSet(step.maskSwa, step.hMaskSwa!);
    let t1 = performance.now();
    st.inputMs += t1 - t;
    this.#sched.graphCompute(step.graph);
    const t2 = performance.now();
    st.computeMs += t2 - t1;
    st.computes++;
    this.#nPast = p0 + n;
    let logits: Float32Array = EMPTY;
    if (into) tensorGetInto(step.logits, logits = into);
    else if (into === undefined) logits = tensorGet(step.logits) as Float32Array;
    t1 = performance.now();
    st.outputMs += t1 - t2;
    return logits;
  }

  /** The graph for n tokens attending to nKv positions, built on first use. */
  #step(n: number, nKv: number, all: boolean): Step {
    const nOut = all ? n : 1;
    const key = `${n}:${nKv}:${nOut}`;
    const have = this.#steps.get(key);
    if (have) {
      // Most recently used last: the Map's order is the eviction order.
      this.#steps.delete(key);
      this.#steps.set(key, have);
      return have;
    }
    const t0 = performance.now();
    const step = this.#build(n, nKv, nOut, key);
    this.stats.buildMs += performance.now() - t0;
    this.stats.graphsBuilt++;
    this.#steps.set(key, step);
    if (this.#steps.size > MAX_GRAPHS) {
      const [oldKey, old] = this.#steps.entries().next().value!;
      this.#steps.delete(oldKey);
      if (this.#allocated === old) {
        this.#sched.reset();
        this.#allocated = undefined;
      }
      old.ctx.free();
    }
    return step;
  }

  #build(n: number, nKv: number, nOut: number, key: string): Step {
    const hp = this.hparams;
    const size = this.#graphSize;
    const ctx = new Context({ memSize: size * tensorOverhead() + graphOverheadCustom(size), noAlloc: true });
    const gf = ctx.newGraphCustom(size);
    const hd = hp.headDimK, hdV = hp.headDimV, nEmbdK = hp.nHeadKv * hd, nEmbdV = hp.nHeadKv * hdV;
    const input = (type: Type, shape: number[], name: string) => ctx.newTensor(type, shape).setName(name).setInput();
    const tokens = input(Type.I32, [n], "inp_tokens");
    const pos = input(Type.I32, [n], "inp_pos");
    const kIdx = input(Type.I32, [n], "inp_k_idx");
    const vIdx = input(Type.I32, [nEmbdV * n], "inp_v_idx");
    const maskGlobal = input(Type.F32, [nKv, n], "inp_mask");
    const tr = hp.traits;
    const maskSwa = tr.swa ? input(Type.F32, [nKv, n], "inp_mask_swa") : null;
    const norm = (x: Tensor, w: Tensor) => ctx.mul(ctx.rmsNorm(x, hp.rmsEps), w);
    const bias = (x: Tensor, b: Tensor | null) => b ? ctx.add(x, b) : x;
    const rope = (x: Tensor, swa: boolean) =>
      // Gemma 3's sliding-window layers have their own base and no position scaling (llama.cpp: rope_freq_scale_train_swa = 1).
      ctx.ropeExt(x, pos, this.#ropeFreqs, hp.nRot, tr.ropeType, hp.nCtxOrig, swa ? hp.ropeBaseSwa : hp.ropeBase, swa ? 1 : hp.ropeFreqScale,
        hp.yarnExtFactor, hp.yarnAttnFactor, hp.yarnBetaFast, hp.yarnBetaSlow);

    let x = ctx.getRows(this.#tokEmbd, tokens);
    // Gemma scales the embeddings by sqrt(n_embd).
    if (tr.embedScale) x = ctx.scale(x, Math.sqrt(hp.nEmbd));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = this.#layers[il], swa = isSlidingLayer(hp, il);
      let cur = norm(x, L.attnNorm);
      let q = ctx.reshape3d(bias(ctx.mulMat(L.wq, cur), L.bq), hd, hp.nHead, n);
      let k = ctx.reshape3d(bias(ctx.mulMat(L.wk, cur), L.bk), hd, hp.nHeadKv, n);
      const v = bias(ctx.mulMat(L.wv, cur), L.bv);
      // Per-head RMS norm of q and k where the architecture has it (qwen3, gemma3), then RoPE.
      if (L.qNorm) q = norm(q, L.qNorm);
      if (L.kNorm) k = norm(k, L.kNorm);
      q = rope(q, swa);
      k = rope(k, swa);
      // Write this batch's K and V into the cache rows the index inputs name (no view offsets baked in:
      // the graph serves every position of its bucket). Expanded first, so they run before the reads.
      const kc = this.#kCache[il], vc = this.#vCache[il];
      gf.buildForwardExpand(ctx.setRows(kc, ctx.reshape2d(k, nEmbdK, n), kIdx));
      gf.buildForwardExpand(ctx.setRows(ctx.reshape2d(vc, 1, this.nCtx * nEmbdV), ctx.reshape2d(v, 1, nEmbdV * n), vIdx));
      // Attention over cache positions [0, nKv): K as [hd, nKv, nHeadKv], V^T as [nKv, hdV, nHeadKv];
      // mul_mat broadcasts the nHeadKv heads over the nHead query heads (grouped-query attention).
      const kv = ctx.view3d(kc, hd, nKv, hp.nHeadKv, kc.nb(1), rowSize(this.kvType, hd), 0);
      const vv = ctx.view3d(vc, nKv, hdV, hp.nHeadKv, vc.nb(1), vc.nb(1) * hdV, 0);
      let kq = ctx.mulMat(kv, ctx.permute(q, 0, 2, 1, 3)); // [nKv, n, nHead]
      kq = ctx.softMaxExt(kq, swa ? maskSwa! : maskGlobal, hp.attnScale, 0);
      const kqv = ctx.mulMat(vv, kq); // [hdV, n, nHead]
      cur = ctx.cont2d(ctx.permute(kqv, 0, 2, 1, 3), hdV * hp.nHead, n);
      cur = bias(ctx.mulMat(L.wo, cur), L.bo);
      if (L.postAttnNorm) cur = norm(cur, L.postAttnNorm);
      if (il === hp.nLayer - 1 && nOut < n) {
        // Only the last row goes on: the rest of the last layer and the output projection run for it alone.
        cur = ctx.view2d(cur, hp.nEmbd, 1, cur.nb(1), (n - 1) * cur.nb(1));
        x = ctx.view2d(x, hp.nEmbd, 1, x.nb(1), (n - 1) * x.nb(1));
      }
      const sa = ctx.add(cur, x);
      cur = norm(sa, L.ffnNorm);
      const gate = ctx.mulMat(L.gate, cur), up = ctx.mulMat(L.up, cur);
      if (tr.act === "silu") cur = ctx.swigluSplit(gate, up);
      else cur = this.preciseGelu ? ctx.mul(geluTanh(ctx, gate), up) : ctx.gegluSplit(gate, up);
      cur = ctx.mulMat(L.down, cur);
      if (L.postFfwNorm) cur = norm(cur, L.postFfwNorm);
      x = ctx.add(cur, sa);
    }
    const logits = ctx.mulMat(this.#output, norm(x, this.#outNorm)).setName("logits").setOutput();
    gf.buildForwardExpand(logits);
    return {
      key, ctx, graph: gf, n, nKv, nOut, tokens, pos, kIdx, vIdx, maskGlobal, maskSwa, logits,
      hTokens: new Int32Array(n), hPos: new Int32Array(n), hKIdx: new Int32Array(n), hVIdx: new Int32Array(nEmbdV * n),
      hMaskGlobal: new Float32Array(nKv * n), hMaskSwa: maskSwa ? new Float32Array(nKv * n) : null,
    };
  }

  #release(): void {
    for (const s of this.#steps.values()) s.ctx.free();
    this.#steps.clear();
    this.#allocated = undefined;
    this.#sched?.free();
    for (const g of this.#groups) {
      g.kvBuf?.free();
      g.kvCtx?.free();
      g.buf?.free();
      g.ctx?.free();
      for (const o of g.others ?? []) {
        o.buffer?.free();
        o.context.free();
      }
    }
    this.#groups.length = 0;
    if (this.#ownBackend) this.backend?.free();
    this.#cpu?.free();
    this.#pool?.free();
  }

  /** Frees the graphs, the scheduler, the cache, the weights and (when it made them) the backend and threadpool. */
  free(): void {
    this.#freed = true;
    this.#release();
  }

  #freed = false;

  /** Whether {@linkcode free} was called. */
  get freed(): boolean {
    return this.#freed;
  }

  #live(what: string): void {
    if (this.#freed) throw new UseAfterFreeError(`LlmModel.${what}: the model was freed`);
  }

  /** Frees the model (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

/** The split checked: backends used once, layers in range and placed once; undefined when it places nothing. */
function checkSplit(split: LayerSplit | undefined, nLayer: number): LayerSplit | undefined {
  if (split === undefined) return undefined;
  const { backends, layers } = split;
  if (!Array.isArray(backends) || !Array.isArray(layers)) throw new TypeError("split: expected { backends: Backend[], layers: number[][] }");
  if (backends.length !== layers.length) throw new RangeError(`split: ${backends.length} backends but ${layers.length} layer lists`);
  if (new Set(backends).size !== backends.length) throw new RangeError("split: a backend is given twice");
  const seen = new Set<number>();
  backends.forEach((b, i) => {
    if (!(b instanceof Backend)) throw new TypeError(`split.backends[${i}] is not a Backend`);
    b._live("split");
    // Two CPU backends would share one buffer type, and the scheduler could not tell their layers apart.
    if (b.isCpu) throw new RangeError(`split.backends[${i}] is a CPU backend: leave those layers out of the split, on the model's own backend`);
    if (!Array.isArray(layers[i])) throw new TypeError(`split.layers[${i}] is not an array`);
    for (const il of layers[i]) {
      if (!Number.isInteger(il) || il < 0 || il >= nLayer) throw new RangeError(`split.layers[${i}]: layer ${il} is not in 0..${nLayer - 1}`);
      if (seen.has(il)) throw new RangeError(`split: layer ${il} is placed twice`);
      seen.add(il);
    }
  });
  return backends.length === 0 ? undefined : split;
}

function emptyStats(): ForwardStats {
  return { graphsBuilt: 0, buildMs: 0, allocs: 0, allocMs: 0, inputMs: 0, computeMs: 0, outputMs: 0, computes: 0 };
}

/**
 * GELU, tanh approximation, from exact ops: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
 * written as h + h·tanh(…) with h = x/2.
 */
function geluTanh(ctx: Context, x: Tensor): Tensor {
  const x3 = ctx.mul(ctx.mul(x, x), x);
  const inner = ctx.scale(ctx.add(x, ctx.scale(x3, 0.044715)), Math.sqrt(2 / Math.PI));
  const h = ctx.scale(x, 0.5);
  return ctx.add(h, ctx.mul(h, ctx.tanh(inner)));
}

/** The layer matrices: only ever the first operand of a matmul with f32 activations (what CPU_REPACK computes). */
const MATMUL_WEIGHT = /^(blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)|output)\.weight$/;

/**
 * For a CPU backend, the loader's choice of buffer type per tensor: its
 * extra buffer type (CPU_REPACK) for a layer matrix the type takes, else
 * the plain buffer. Not the token embedding: `getRows` reads it too, which
 * a repacked tensor does not support.
 */
function repackPicker(backend: Backend): ((info: GgufTensorInfo) => BufferType | undefined) | undefined {
  const types = extraBufferTypes(backend.device);
  if (types.length === 0) return undefined;
  const memo = new Map<string, BufferType | undefined>();
  return (info) => {
    if (!MATMUL_WEIGHT.test(info.name)) return undefined;
    const key = `${info.type}:${info.shape.join(",")}`;
    if (!memo.has(key)) memo.set(key, extraBufferTypeFor(backend.device, types, info.type, info.shape));
    return memo.get(key);
  };
}

/**
 * The weights as f32 in a new buffer: every quantized tensor dequantized by
 * the library's `dequantize` (the CPU kernels' own conversion), a chunk of
 * rows at a time; the quantized buffer and context are freed.
 */
function toF32(backend: Backend, context: Context, tensors: Map<string, Tensor>, buffer: Buffer | null): { context: Context; tensors: Map<string, Tensor>; buffer: Buffer | null } {
  const ctx32 = new Context({ memSize: (tensors.size + 1) * tensorOverhead(), noAlloc: true });
  try {
    const out = new Map<string, Tensor>();
    for (const [name, t] of tensors) out.set(name, ctx32.newTensor(Type.F32, t.shape.slice(0, Math.max(1, t.nDims))).setName(name));
    const buf = allocCtxTensors(ctx32, backend);
    for (const [name, src] of tensors) {
      const dst = out.get(name)!;
      if (src.type === Type.F32) {
        tensorCopy(src, dst);
        continue;
      }
      const ne0 = src.ne(0), rows = src.nelements / ne0, rowBytes = rowSize(src.type, ne0);
      for (let r = 0; r < rows; r += DEQUANT_ROWS) {
        const m = Math.min(DEQUANT_ROWS, rows - r);
        tensorSet(dst, dequantize(src.type, tensorGetBytes(src, r * rowBytes, m * rowBytes), ne0), r * ne0 * 4);
      }
    }
    buffer?.free();
    context.free();
    return { context: ctx32, tensors: out, buffer: buf };
  } catch (e) {
    ctx32.free();
    throw e;
  }
}

/** Weight-matrix types: those ggml's CPU backend multiplies with f32 activations (a vec_dot type) and reads rows of. */
const MATRIX_TYPES: ReadonlySet<number> = new Set([
  Type.F32, Type.F16, Type.BF16, Type.Q4_0, Type.Q4_1, Type.Q5_0, Type.Q5_1, Type.Q8_0, Type.Q2_K, Type.Q3_K, Type.Q4_K, Type.Q5_K, Type.Q6_K,
  Type.IQ2_XXS, Type.IQ2_XS, Type.IQ3_XXS, Type.IQ1_S, Type.IQ4_NL, Type.IQ3_S, Type.IQ2_S, Type.IQ4_XS, Type.IQ1_M, Type.TQ1_0, Type.TQ2_0, Type.MXFP4,
]);

const typeName = (t: number) => Object.entries(Type).find(([, v]) => v === t)?.[0] ?? String(t);

/**
 * The tensors the architecture reads, each checked against the file before
 * anything is loaded: present (or optional), of the shape the
 * hyper-parameters give (as llama.cpp's `create_tensor` checks), and of a
 * type the graph computes with — norms, biases and RoPE factors f32, the
 * matrices one of {@linkcode MATRIX_TYPES}.
 *
 * @throws {ModelError} `TENSOR` (missing), `SHAPE`, `TYPE`
 */
function expectedTensors(hp: Hparams, file: GgufFile): Map<string, GgufTensorInfo> {
  const tr = hp.traits, want = new Map<string, GgufTensorInfo>();
  const nQ = hp.nHead * hp.headDimK, nK = hp.nHeadKv * hp.headDimK, nV = hp.nHeadKv * hp.headDimV, nO = hp.nHead * hp.headDimV;
  const need = (name: string, shape: readonly number[], required = true) => {
    const t = file.tensor(name);
    if (!t) {
      if (required) throw new ModelError("TENSOR", `${file.path}: no tensor ${name} (the ${hp.arch} architecture needs it)`);
      return;
    }
    const dims = [...t.shape];
    while (dims.length > shape.length && dims[dims.length - 1] === 1) dims.pop();
    if (dims.length !== shape.length || dims.some((d, i) => d !== shape[i])) {
      throw new ModelError("SHAPE", `${file.path}: ${name} is [${t.shape.join(", ")}], expected [${shape.join(", ")}] from the file's hyper-parameters`);
    }
    const vector = shape.length === 1;
    if (vector ? t.type !== Type.F32 : !MATRIX_TYPES.has(t.type)) {
      throw new ModelError("TYPE", `${file.path}: ${name} is ${typeName(t.type)}; ${vector ? "norms, biases and RoPE factors must be F32" : "a weight matrix must be a type ggml's CPU backend multiplies (F32, F16, BF16, Q4_0 … Q8_0, the K- and IQ-quants)"}`);
    }
    want.set(name, t);
  };
  need("token_embd.weight", [hp.nEmbd, hp.nVocab]);
  need("output_norm.weight", [hp.nEmbd]);
  if (tr.separateOutput) need("output.weight", [hp.nEmbd, hp.nVocab], false);
  if (tr.ropeFreqs) need("rope_freqs.weight", [hp.nRot / 2], false);
  for (let il = 0; il < hp.nLayer; il++) {
    const b = (n: string, shape: readonly number[], required = true) => need(`blk.${il}.${n}`, shape, required);
    b("attn_norm.weight", [hp.nEmbd]);
    b("attn_q.weight", [hp.nEmbd, nQ]);
    b("attn_k.weight", [hp.nEmbd, nK]);
    b("attn_v.weight", [hp.nEmbd, nV]);
    b("attn_output.weight", [nO, hp.nEmbd]);
    if (tr.qkvBias !== "none") {
      const req = tr.qkvBias === "required";
      b("attn_q.bias", [nQ], req);
      b("attn_k.bias", [nK], req);
      b("attn_v.bias", [nV], req);
    }
    if (tr.outBias) b("attn_output.bias", [hp.nEmbd], false);
    if (tr.qkNorm) {
      b("attn_q_norm.weight", [hp.headDimK]);
      b("attn_k_norm.weight", [hp.headDimK]);
    }
    if (tr.postNorms) {
      b("post_attention_norm.weight", [hp.nEmbd]);
      b("post_ffw_norm.weight", [hp.nEmbd]);
    }
    b("ffn_norm.weight", [hp.nEmbd]);
    b("ffn_gate.weight", [hp.nEmbd, hp.nFf]);
    b("ffn_up.weight", [hp.nEmbd, hp.nFf]);
    b("ffn_down.weight", [hp.nFf, hp.nEmbd]);
  }
  return want;
}

/** The earlier name of {@linkcode LlmModel}, from when the runner knew Gemma 3 alone. */
export const GemmaModel: typeof LlmModel = LlmModel;
/** The earlier name of {@linkcode LlmModel}. */
export type GemmaModel = LlmModel;
