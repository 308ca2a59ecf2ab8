/**
 * {@linkcode Sched}: ggml's backend scheduler (`wsp_ggml_backend_sched_t`).
 * It assigns each node of a graph to a backend, splits the graph where the
 * backend changes, copies inputs between backends, and allocates the
 * intermediate tensors in one compute buffer per backend.
 *
 * @module
 */
import { checkAllocBound } from "./alloc_bound.ts";
import { INTERNAL } from "../core/brand.ts";
import { BackendBufferUsage, BackendDevType, callbacks, DEFAULT_GRAPH_SIZE, layouts, Op, TensorFlag } from "../ffi/bindings.gen.ts";
import { bool, size } from "../core/args.ts";
import { ArgumentError, BoundsError, BusyError, GgmlError, NotAllocatedError, UnsupportedOpError, UseAfterFreeError } from "../core/errors.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { totalMemory } from "../runtime/machine.ts";
import { runtime } from "../runtime/runtime.ts";
import { checkData, Graph } from "../core/graph.ts";
import { cpuKernelRefusal } from "../core/checks.ts";
import type { Tensor } from "../core/tensor.ts";
import { type AsyncComputeOptions, Backend, bufferOf, checkStatus, graphTensors, runAbortable, sourcesOf, supports, type takeAbortFlag, tensorPtr } from "./backend.ts";
import { BufferType, Placements } from "./buffer.ts";
import { adopt, dispose, type Handle } from "../core/owned.ts";
import { isMetalDevice, metalExpertCopyRefusal } from "./metal_checks.ts";
import { emptySplitState, overflowText, predictSplits, SCHED_MAX_SPLIT_INPUTS, type SplitModel, type SplitOverflow, type SplitPrediction, type SplitState } from "./sched_split.ts";

const sym = () => runtime().lib.symbols;

/** `wsp_ggml_is_view_op` (ggml-backend.cpp). */
const VIEW_OPS: ReadonlySet<number> = new Set([Op.VIEW, Op.RESHAPE, Op.PERMUTE, Op.TRANSPOSE]);
const FLAGS = layouts.wsp_ggml_tensor.fields.flags.offset;

/**
 * For a node placed on a Metal backend: the scheduler's expert copy (a MUL_MAT_ID whose experts
 * are in a host weights buffer) reads the ids through memory Metal cannot map
 * ({@linkcode metalExpertCopyRefusal}).
 */
function metalExpertCopy(s: ReturnType<typeof sym>, node: Tensor, backend: Backend | undefined): string | null {
  if (backend === undefined || node.op !== Op.MUL_MAT_ID || !isMetalDevice(backend.device)) return null;
  const buf = bufferOf(sourcesOf(node)[0]);
  const hostWeights = buf !== 0 && s.wsp_ggml_backend_buffer_is_host(buf) && s.wsp_ggml_backend_buffer_get_usage(buf) === BackendBufferUsage.WEIGHTS;
  return metalExpertCopyRefusal(node, hostWeights);
}

/**
 * For a node placed on a non-CPU backend: a source in a context's own memory
 * (data, no backend buffer) that ggml placed on a non-CPU backend too, so
 * that it copies nothing and the device reads a host pointer as its own
 * buffer (ggml-vulkan: a crash). Placed on a CPU backend, ggml copies it.
 */
function poolSource(s: ReturnType<typeof sym>, p: number, node: Tensor, cpus: readonly number[], backend: Backend | undefined): string | null {
  for (const src of sourcesOf(node)) {
    if (bufferOf(src) !== 0 || src._data === 0) continue;
    if (cpus.includes(s.wsp_ggml_backend_sched_get_tensor_backend(p, src._ptr))) continue;
    return `its source ${src.describe()} is in a context's own memory, which ${backend?.name ?? "that backend"} cannot read (allocate it in a backend buffer: a noAlloc context and allocCtxTensors)`;
  }
  return null;
}

/**
 * The leafs of `graph` that ggml's backend assignment leaves without a
 * backend: in no backend buffer, not flagged INPUT, and read by view ops
 * only (pass 4 of `wsp_ggml_backend_sched_split_graph` assigns a source the
 * backend of its consumer before it falls back for a view op). ggml-alloc
 * then aborts (`WSP_GGML_ASSERT(buffer_id >= 0)`).
 */
function orphanLeafs(graph: Graph): Tensor[] {
  const nodes = graph.nodes();
  const inGraph = new Set(nodes.map((n) => n._ptr));
  const readByOp = new Set<number>();
  const candidates = new Map<number, Tensor>();
  for (const n of nodes) {
    for (const s of sourcesOf(n)) {
      if (inGraph.has(s._ptr)) continue;
      if (!VIEW_OPS.has(n.op)) readByOp.add(s._ptr);
      if (s.viewSrc === null && bufferOf(s) === 0 && !(s.flags & TensorFlag.INPUT)) candidates.set(s._ptr, s);
    }
  }
  return [...candidates.values()].filter((t) => !readByOp.has(t._ptr));
}

/**
 * Flags `leafs` INPUT (so the scheduler assigns them to its last backend,
 * the CPU one, whose memory holds them) until the returned function undoes it.
 */
function asInputs(leafs: readonly Tensor[]): () => void {
  const views = leafs.map((t) => ({ view: t.context._pool("sched"), at: t._off + FLAGS }));
  for (const { view, at } of views) view.setInt32(at, view.getInt32(at, true) | TensorFlag.INPUT, true);
  return () => {
    for (const { view, at } of views) if (view.byteLength > 0) view.setInt32(at, view.getInt32(at, true) & ~TensorFlag.INPUT, true);
  };
}

const SRC = layouts.wsp_ggml_tensor.fields.src;

/** A source slot of a node that the scheduler's split pointed at its own copy of the source (`node->src[j] = copy`). */
interface SplitSlot {
  readonly view: DataView;
  readonly at: number;
  readonly orig: bigint;
  readonly split: bigint;
}

/** Every source slot of `graph`'s nodes: where it is and what it holds. */
function srcSlots(graph: Graph): { view: DataView; at: number; value: bigint }[] {
  const out: { view: DataView; at: number; value: bigint }[] = [];
  for (const n of graph.nodes()) {
    const view = n.context._pool("sched");
    for (let j = 0; j < SRC.length; j++) {
      const at = n._off + SRC.offset + 8 * j;
      out.push({ view, at, value: view.getBigUint64(at, true) });
    }
  }
  return out;
}

/**
 * Runs `split` (a native call that splits `graph`: reserve, split, alloc) and puts the sources
 * back as they were built; returns the slots the split rewrote, to be swapped in for a compute.
 * A scheduler over several backends points a node's sources at its copies on the node's
 * backend, in a context of ggml's own: left in place, they would make the graph unreadable from
 * JS (and point into freed memory once the scheduler is freed or allocates another graph).
 */
function withSplit<T>(graph: Graph, split: () => T): { result: T; slots: SplitSlot[] } {
  const before = srcSlots(graph);
  const result = split();
  const slots: SplitSlot[] = [];
  for (const b of before) {
    const now = b.view.getBigUint64(b.at, true);
    if (now !== b.value) slots.push({ view: b.view, at: b.at, orig: b.value, split: now });
  }
  putSlots(slots, "orig");
  return { result, slots };
}

/** Writes the original or the split's sources into `slots`. */
function putSlots(slots: readonly SplitSlot[], which: "orig" | "split"): void {
  for (const s of slots) if (s.view.byteLength > 0) s.view.setBigUint64(s.at, s[which], true);
}

/** `WSP_GGML_SCHED_MAX_BACKENDS` (ggml-backend.cpp). */
export const SCHED_MAX_BACKENDS = 16;
/** `WSP_GGML_SCHED_MAX_COPIES` (ggml-backend.cpp): the copies of the inputs a `parallel` scheduler keeps. */
export const SCHED_MAX_COPIES = 4;

/**
 * The bytes `wsp_ggml_backend_sched_new` allocates for `graphSize` (it
 * aborts when a `malloc` fails, `wsp_ggml_malloc`): per node, room for 30
 * copied inputs × 2 in its own context (`tensorSize` each), four id arrays
 * of `graphSize × 61` ints, the hash set with a copy slot per backend and
 * copy, and the graph.
 */
function schedBytes(graphSize: number, nBackends: number, nCopies: number): number {
  const rt = runtime();
  const nodes = graphSize * (1 + 2 * SCHED_MAX_SPLIT_INPUTS);
  const hash = 2 * graphSize + 1;
  return graphSize * 2 * SCHED_MAX_SPLIT_INPUTS * rt.tensorSize + 4 * 4 * nodes + hash * (4 + 8 * nBackends * nCopies + 8) +
    Number(rt.lib.symbols.wsp_ggml_graph_overhead_custom(Math.min(graphSize, 2 ** 31 - 1), false));
}

/** The message of the error thrown where ggml's split would assert on its input limit. */
function splitOverflowMessage(what: string, o: SplitOverflow, backends: readonly Backend[]): string {
  const node = `${ffi.readCString(sym().wsp_ggml_op_desc(o.node._ptr))} ${o.node.describe()} (node ${o.index})`;
  const todo = o.kind === "graph"
    ? "use a scheduler without parallel, or fewer setInput() tensors"
    : "assign fewer of the split's sources to other backends, or place the node on the backend of its inputs (setTensorBackend)";
  return `${what}: ${node} ${overflowText(o, backends[o.backend]?.name ?? "?")}: ${todo}`;
}

/** Options of {@linkcode Sched}. */
export interface SchedOptions {
  /** The backends, by priority (first = preferred); the last must be a CPU backend. */
  readonly backends: readonly Backend[];
  /** One buffer type per backend (null: the backend's default); default all default. */
  readonly bufferTypes?: readonly (BufferType | null)[];
  /** The most nodes + leafs a graph may have; default 2048. */
  readonly graphSize?: number;
  /** Keep {@linkcode SCHED_MAX_COPIES} copies of the split inputs, so that consecutive computes can overlap (pipeline parallelism); default false. */
  readonly parallel?: boolean;
  /** Let a backend that wants to (`offloadOp`) run ops whose weights are in host memory; default true. */
  readonly opOffload?: boolean;
}

/**
 * Called for each node when set with {@linkcode Sched.setEvalCallback}:
 * first with `ask = true` ("do you want to see this node?"), then, for the
 * nodes answered true, with `ask = false` once the node is computed (its
 * data can be read with `tensorGet`). Returning false in the second call
 * stops the compute (which then reports success, as in ggml).
 */
export type SchedEvalCallback = (node: Tensor, ask: boolean) => boolean;

/** The scheduler over several backends. Free it with `free()` (or `using`). */
export class Sched {
  readonly #h: Handle;
  /** The backends, as given. */
  readonly backends: readonly Backend[];
  /** The most nodes + leafs a graph may have. */
  readonly graphSize: number;
  /** The eval callback, in a box the handle's release shares (it must not refer to the scheduler). */
  readonly #eval: { cb?: { close(): void; pointer: number } } = {};
  #evalError: unknown;
  /** The graph of the last call (the eval callback names its tensors); one only: a map of every graph ever given kept them all alive. */
  #lastGraph: Graph | undefined;
  /** The graphs whose every node a backend supports, with their node and leaf counts when checked. */
  #supported = new WeakMap<Graph, string>();
  /** Each computed graph's tensors (nodes and their sources), with the node count they were listed at. */
  #tensorLists = new WeakMap<Graph, { nodes: number; tensors: Tensor[] }>();
  #busy = false;
  /** Bumped whenever the native scheduler's assignment or allocation changes (see {@linkcode _generation}). */
  #generation = 0;
  /** ggml-opt allocated a graph of its own on the native scheduler since our last reset or allocation. */
  #foreign = false;
  /** A synchronous compute is running (its eval callback, or an OptContext epoch's callback, runs JS meanwhile). */
  #computing = false;

  /**
   * A scheduler over `options.backends` (`wsp_ggml_backend_sched_new`).
   *
   * @param options the backends, buffer types and sizes
   * @throws {ArgumentError} for no backends, more than 16, a last backend that is not a CPU one, or a buffer type a backend cannot use
   */
  constructor(options: SchedOptions) {
    const backends = options.backends;
    if (!Array.isArray(backends) || backends.length === 0) throw new ArgumentError("Sched: at least one backend is needed");
    if (backends.length > SCHED_MAX_BACKENDS) throw new ArgumentError(`Sched: at most ${SCHED_MAX_BACKENDS} backends, got ${backends.length}`);
    if (!backends.every((b) => b instanceof Backend)) throw new ArgumentError("Sched: backends must be Backend objects");
    if (new Set(backends).size !== backends.length) throw new ArgumentError("Sched: a backend is given twice");
    for (const b of backends) b._live("Sched");
    const last = backends[backends.length - 1];
    if (last.device.type !== BackendDevType.CPU) throw new ArgumentError(`Sched: the last backend must be a CPU backend (the fallback of every op), got ${last.name}`);
    const bufts = options.bufferTypes ?? backends.map(() => null);
    if (bufts.length !== backends.length) throw new ArgumentError(`Sched: ${bufts.length} buffer types for ${backends.length} backends`);
    bufts.forEach((t, i) => {
      if (t !== null && !(t instanceof BufferType)) throw new ArgumentError(`Sched: bufferTypes[${i}] must be a BufferType or null`);
      if (t && !backends[i].supportsBufferType(t)) throw new ArgumentError(`Sched: ${backends[i].name} cannot use buffers of type ${t.name}`);
    });
    const graphSize = size("Sched: graphSize", options.graphSize ?? DEFAULT_GRAPH_SIZE);
    if (graphSize < 1) throw new ArgumentError("Sched: graphSize must be at least 1");
    const parallel = bool("Sched: parallel", options.parallel ?? false);
    // A cgraph's size is an int; the scheduler's tables grow by about 23 KB per node of graphSize.
    if (graphSize > 2 ** 31 - 1) throw new BoundsError(`Sched: graphSize ${graphSize} exceeds 2^31 - 1 (a graph's size is an int in ggml)`);
    const need = schedBytes(graphSize, backends.length, parallel ? SCHED_MAX_COPIES : 1);
    if (need > totalMemory()) {
      throw new BoundsError(`Sched: graphSize ${graphSize} needs about ${need} bytes of scheduler tables, more than this machine's ${totalMemory()} bytes of memory (ggml aborts when the allocation fails)`);
    }
    const opOffload = bool("Sched: opOffload", options.opOffload ?? true);
    const bp = new BigUint64Array(backends.map((b) => BigInt(b.pointer)));
    const tp = new BigUint64Array(bufts.map((t) => BigInt(t?.pointer ?? 0)));
    const withTypes = bufts.some((t) => t !== null);
    const p = sym().wsp_ggml_backend_sched_new(ffi.addressOf(bp), withTypes ? ffi.addressOf(tp) : 0, backends.length, graphSize, parallel, opOffload);
    keepAlive([bp, tp]);
    if (p === 0) throw new GgmlError("OUT_OF_MEMORY", "wsp_ggml_backend_sched_new failed");
    const box = this.#eval;
    this.#h = adopt(this, "sched", p, (q) => {
      sym().wsp_ggml_backend_sched_free(q);
      box.cb?.close();
      box.cb = undefined;
    });
    this.backends = [...backends];
    this.graphSize = graphSize;
    this.#parallel = parallel;
    this.#opOffload = opOffload;
  }

  readonly #parallel: boolean;
  readonly #opOffload: boolean;
  /** What the native scheduler remembers between splits (assignments, copies): see {@linkcode predictSplits}. */
  #mirror: { readonly state: SplitState } = { state: emptySplitState() };
  #model: SplitModel | undefined;

  #splitModel(): SplitModel {
    const p = this.#h.ptr;
    return this.#model ??= {
      backends: this.backends.map((b) => b.pointer),
      bufts: this.backends.map((b) => sym().wsp_ggml_backend_sched_get_buffer_type(p, b.pointer)),
      opOffload: this.#opOffload,
      nCopies: this.#parallel ? SCHED_MAX_COPIES : 1,
    };
  }

  /**
   * Predicts the split the next native call makes of `graph` (from `state`, the native
   * scheduler's memory then) and throws {@linkcode BoundsError} where ggml would assert on
   * its input limit; returns what holds the state after that split (built when read).
   */
  #predict(what: string, graph: Graph, state: SplitState): { readonly state: SplitState } {
    // One backend copies nothing, unless it keeps copies of the graph's inputs (parallel).
    if (this.backends.length === 1 && !this.#parallel) return { state };
    const plan = predictSplits(graph, this.#splitModel(), state);
    if (plan.overflow !== null) throw new BoundsError(splitOverflowMessage(what, plan.overflow, this.backends));
    return plan;
  }

  /** @ignore @internal The scheduler as {@linkcode predictSplits} describes it (ggml-opt's graphs are checked with it: src/train/opt.ts). */
  _splitModel(): SplitModel {
    this.#live("_splitModel");
    return this.#splitModel();
  }

  /**
   * @ignore @internal What the next split of `graph` would do, as {@linkcode predictSplits}
   * tells it (tests compare it with ggml's own); changes nothing.
   */
  _predictSplit(graph: Graph): SplitPrediction {
    this.#live("_predictSplit");
    const restore = asInputs(orphanLeafs(graph)); // as the native calls see the graph
    try {
      return predictSplits(graph, this.#splitModel(), this.#mirror.state);
    } finally {
      restore();
    }
  }

  /** `wsp_ggml_backend_sched_reset`, and the mirror of the native scheduler's memory with it. */
  #nativeReset(p: number): void {
    sym().wsp_ggml_backend_sched_reset(p);
    this.#mirror = { state: emptySplitState() };
  }

  #live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the scheduler was freed`);
    for (const b of this.backends) b._live(`${what}: a backend of the scheduler`);
    if (this.#busy) throw new BusyError(`${what}: the scheduler is computing (await graphComputeAsync first)`);
    return this.#h.ptr;
  }

  /**
   * Throws {@linkcode BusyError} while a synchronous compute of this
   * scheduler runs: the call comes from a callback it runs (eval callback,
   * an optimizer epoch's progress callback), and would free or reset what
   * the compute is using.
   */
  #notComputing(what: string): void {
    if (this.#computing) throw new BusyError(`${what}: the scheduler is computing (this is a call from inside its eval callback or an epoch callback; do it after the compute returns)`);
  }

  /**
   * @ignore @internal Marks the scheduler, its backends, `graph` (if any) and the
   * contexts it uses as in use by a synchronous compute whose callbacks run
   * JS; returns the function that ends it.
   */
  _enter(what: string, graph?: Graph): () => void {
    this.#live(what);
    this.#notComputing(what);
    const release = graph?._acquire(what);
    const marked: Backend[] = [];
    try {
      for (const b of this.backends) marked.push(b._setBusy(true, what));
    } catch (e) {
      for (const b of marked) b._setBusy(false, what);
      release?.();
      throw e;
    }
    this.#computing = true;
    return () => {
      this.#computing = false;
      for (const b of marked) b._setBusy(false, what);
      release?.();
    };
  }

  /** The native `wsp_ggml_backend_sched_t`. */
  get pointer(): number {
    return this.#live("sched");
  }

  /**
   * @ignore @internal Changes with every reset, split, reserve or allocation of the native
   * scheduler, ours or ggml-opt's: an OptContext compares it to tell whether the graph it
   * allocated is still the scheduler's.
   */
  get _generation(): number {
    return this.#generation;
  }

  /**
   * @ignore @internal ggml-opt allocated and computed a graph of its own on the native scheduler
   * (`wsp_ggml_opt_epoch`), which stays allocated so that its next epoch computes the same splits
   * (resetting it would make ggml split ggml-opt's graph copy again, whose sources the first
   * split already pointed at the scheduler's input copies). Forgets our own allocation; the next
   * one resets first. Returns the new generation.
   */
  _foreign(): number {
    this.#allocated = undefined;
    this.#splitSlots = [];
    this.#placements.clear(); // ggml-opt's allocation reused the compute buffers
    this.#foreign = true;
    this.#mirror = { state: emptySplitState() }; // the next split resets first
    return ++this.#generation;
  }

  #backend(what: string, b: Backend): number {
    if (!(b instanceof Backend) || !this.backends.includes(b)) throw new ArgumentError(`${what}: the backend is not one of the scheduler's`);
    return b._live(what);
  }

  #graph(what: string, graph: Graph): number {
    if (!(graph instanceof Graph)) throw new ArgumentError(`${what}: expected a Graph`);
    graph._idle(what);
    for (const c of graph.context._reachable()) c._pool(`${what}: a context the graph uses`);
    const n = graph.nNodes + graph.nLeafs;
    if (n > this.graphSize) throw new BoundsError(`${what}: the graph has ${graph.nNodes} nodes and ${graph.nLeafs} leafs, more than the scheduler's graphSize ${this.graphSize}`);
    // Every node must have a backend that supports it (ggml asserts "all nodes should be assigned").
    // Checked once per graph and node count (a graph only grows; a node's op and types never change),
    // so that computing the same graph again (a decode loop) skips the per-node walk.
    const counted = `${graph.nNodes} ${graph.nLeafs}`;
    if (this.#supported.get(graph) !== counted) {
      const s = sym();
      const types = this.backends.map((b) => b.device.type);
      const runs = (b: Backend, i: number, t: Tensor) => supports(types[i], s.wsp_ggml_backend_supports_op(b.pointer, t._ptr), t);
      for (const node of graph.nodes()) {
        if (!this.backends.some((b, i) => runs(b, i, node))) {
          throw new UnsupportedOpError(`${what}: no backend of the scheduler supports ${ffi.readCString(s.wsp_ggml_op_desc(node._ptr))} on ${node.describe()}`);
        }
      }
      // A tensor already in a buffer (a context allocated on a backend; ggml-opt's loss on the first backend; a
      // weight on another device) stays there: a backend that can use that buffer must run its op, even a leaf's
      // NONE (ggml aborts: "pre-allocated tensor in a buffer that cannot run the operation").
      for (const t of [...graph.nodes(), ...graph._leafs()]) {
        const buf = bufferOf(t);
        if (buf === 0) continue;
        const buft = s.wsp_ggml_backend_buffer_get_type(buf);
        if (!this.backends.some((b, i) => s.wsp_ggml_backend_supports_buft(b.pointer, buft) && runs(b, i, t))) {
          throw new UnsupportedOpError(
            `${what}: ${t.op === Op.NONE ? "the tensor" : ffi.readCString(s.wsp_ggml_op_desc(t._ptr))} ${t.describe()} is in a ${ffi.readCString(s.wsp_ggml_backend_buft_name(buft))} buffer, and no backend of the scheduler that uses such buffers ${t.op === Op.NONE ? "takes it" : "runs it"} (allocate it where one does, or add that buffer's backend to the scheduler)`,
          );
        }
      }
      checkAllocBound(what, graph);
      this.#supported.set(graph, counted);
    }
    this.#lastGraph = graph;
    return graph.pointer;
  }

  /** Number of backends. */
  get nBackends(): number {
    return sym().wsp_ggml_backend_sched_get_n_backends(this.pointer);
  }

  /** Splits of the last graph split or allocated (`wsp_ggml_backend_sched_get_n_splits`). */
  get nSplits(): number {
    return sym().wsp_ggml_backend_sched_get_n_splits(this.pointer);
  }

  /** Copies of the inputs kept: 4 when `parallel`, else 1 (`wsp_ggml_backend_sched_get_n_copies`). */
  get nCopies(): number {
    return sym().wsp_ggml_backend_sched_get_n_copies(this.pointer);
  }

  /** The buffer type the scheduler allocates `backend`'s tensors in (`wsp_ggml_backend_sched_get_buffer_type`). */
  getBufferType(backend: Backend): BufferType {
    return new BufferType(sym().wsp_ggml_backend_sched_get_buffer_type(this.pointer, this.#backend("getBufferType", backend)), INTERNAL);
  }

  /** Bytes of `backend`'s compute buffer (`wsp_ggml_backend_sched_get_buffer_size`). */
  getBufferSize(backend: Backend): number {
    return Number(sym().wsp_ggml_backend_sched_get_buffer_size(this.pointer, this.#backend("getBufferSize", backend)));
  }

  /**
   * Sizes the compute buffers for `graph`, the largest graph to come
   * (`wsp_ggml_backend_sched_reserve`; since 0.5.1 it resets the scheduler
   * first and after, so a following `allocGraph` starts clean).
   *
   * @throws {GgmlError} (`OUT_OF_MEMORY`) when a buffer cannot be allocated
   * @throws {BoundsError} when a split would copy in more than 30 tensors from other backends (ggml's `WSP_GGML_SCHED_MAX_SPLIT_INPUTS`: it aborts)
   */
  reserve(graph: Graph): this {
    const p = this.#live("reserve");
    this.#notComputing("reserve");
    const g = this.#graph("reserve", graph);
    this.#placements.clear(); // reserving may reallocate the compute buffers
    this.#generation++;
    this.#foreign = false; // ggml's reserve resets first
    const restore = asInputs(orphanLeafs(graph));
    let ok;
    try {
      // ggml's reserve resets before its split (users' assignments go too) and after it.
      this.#predict("reserve", graph, emptySplitState());
      ok = withSplit(graph, () => sym().wsp_ggml_backend_sched_reserve(p, g)).result;
    } finally {
      restore();
    }
    this.#mirror = { state: emptySplitState() };
    this.#allocated = undefined;
    if (!ok) throw new GgmlError("OUT_OF_MEMORY", "reserve: the scheduler could not allocate its compute buffers");
    return this;
  }

  /**
   * Assigns the nodes to backends and splits the graph, without allocating
   * (`wsp_ggml_backend_sched_split_graph`); then {@linkcode nSplits} and
   * {@linkcode getTensorBackend} tell the outcome.
   *
   * @throws {BoundsError} when a split would copy in more than 30 tensors from other backends (ggml's `WSP_GGML_SCHED_MAX_SPLIT_INPUTS`: it aborts)
   */
  splitGraph(graph: Graph): this {
    const p = this.#live("splitGraph");
    this.#notComputing("splitGraph");
    const g = this.#graph("splitGraph", graph);
    if (this.#foreign) this.reset();
    this.#generation++;
    const restore = asInputs(orphanLeafs(graph));
    try {
      const next = this.#predict("splitGraph", graph, this.#mirror.state);
      withSplit(graph, () => sym().wsp_ggml_backend_sched_split_graph(p, g));
      this.#mirror = next;
    } finally {
      restore();
    }
    return this;
  }

  /**
   * Splits and allocates `graph` (`wsp_ggml_backend_sched_alloc_graph`); its
   * inputs can then be set (`tensorSet`) before {@linkcode graphCompute}.
   * A graph stays allocated until {@linkcode reset}: allocating again
   * resets first (ggml asserts otherwise).
   *
   * @throws {GgmlError} (`OUT_OF_MEMORY`) when a buffer cannot be allocated
   * @throws {BoundsError} when a split would copy in more than 30 tensors from other backends (ggml's `WSP_GGML_SCHED_MAX_SPLIT_INPUTS`: it aborts)
   */
  allocGraph(graph: Graph): this {
    const p = this.#live("allocGraph");
    this.#notComputing("allocGraph");
    this.#alloc("allocGraph", p, graph, this.#graph("allocGraph", graph));
    return this;
  }
  /** The graph the scheduler's splits and allocation are for (it computes that one, whatever graph it is given). */
  #allocated: Graph | undefined;
  /** The allocated graph's sources that the split points at the scheduler's copies: in place during its computes only. */
  #splitSlots: SplitSlot[] = [];

  #alloc(what: string, p: number, graph: Graph, g: number): void {
    // ggml asserts that an allocated scheduler is reset before it allocates again (ours, or ggml-opt's: #foreign).
    if (this.#allocated || this.#foreign) this.#nativeReset(p);
    this.#foreign = false;
    this.#generation++;
    this.#allocated = undefined;
    this.#splitSlots = [];
    this.#placements.clear();
    // A view with data whose source has none points into a freed buffer (the allocator would use it as it is).
    for (const t of graphTensors(graph)) if (t._data !== 0) checkData(what, t);
    const restore = asInputs(orphanLeafs(graph));
    try {
      // Checked after asInputs, on the tensors as the native split will read them.
      const next = this.#predict(what, graph, this.#mirror.state);
      const { result, slots } = withSplit(graph, () => this.#placements.record(graph, () => sym().wsp_ggml_backend_sched_alloc_graph(p, g)));
      this.#mirror = next;
      this.#splitSlots = slots;
      if (!result) throw new GgmlError("OUT_OF_MEMORY", `${what}: the scheduler could not allocate the graph`);
    } finally {
      restore();
    }
    this.#checkPlacement(what, p, graph);
    this.#allocated = graph;
  }

  /**
   * #graph accepts a node that some backend supports; ggml may still place it
   * on one that does not (a node flagged INPUT goes to the last backend
   * unasked), or on a CPU backend (its sources' buffers, the CPU as the last
   * resort) whose kernel refuses its layout or parameters (cpuKernelRefusal).
   * With CPU backends only, #graph already checked it.
   */
  #checkPlacement(what: string, p: number, graph: Graph): void {
    const cpus = this.backends.filter((b) => b.device.type === BackendDevType.CPU).map((b) => b.pointer);
    if (cpus.length === this.backends.length) return;
    const s = sym();
    for (const node of graph.nodes()) {
      const placed = s.wsp_ggml_backend_sched_get_tensor_backend(p, node._ptr);
      let why: string | null;
      try {
        // ggml places a node flagged INPUT on the last backend without asking it (pass 1).
        const backend = this.backends.find((b) => b.pointer === placed);
        if (backend !== undefined && !backend.supportsOp(node)) why = `${backend.name} does not support it`;
        else why = cpus.includes(placed) ? cpuKernelRefusal(node) : poolSource(s, p, node, cpus, backend) ?? metalExpertCopy(s, node, backend);
      } catch (e) {
        // A source that the split replaced by the scheduler's copy from another backend (a tensor
        // of ggml's own context, which no JS context knows): that node is not checked here.
        if (e instanceof UseAfterFreeError) continue;
        throw e;
      }
      if (why === null) continue;
      this.#nativeReset(p);
      this.#placements.clear();
      throw new UnsupportedOpError(`${what}: ${ffi.readCString(s.wsp_ggml_op_desc(node._ptr))} on ${node.describe()} was placed on a backend that cannot run it: ${why} (place it on another backend with setTensorBackend)`);
    }
  }

  /**
   * The allocated graph's tensors all still have data: a backend buffer freed
   * since the allocation took it from its tensors (ggml would compute on NULL).
   */
  #stillAllocated(what: string, graph: Graph): void {
    // The tensor list of a graph, kept while its node count holds (the same graph computed again).
    let known = this.#tensorLists.get(graph);
    if (known?.nodes !== graph.nNodes) this.#tensorLists.set(graph, known = { nodes: graph.nNodes, tensors: graphTensors(graph) });
    for (const t of known.tensors) {
      if (t._data !== 0) {
        checkData(what, t);
        continue;
      }
      // The next compute allocates again, from a reset scheduler (ggml asserts !is_alloc).
      this.#nativeReset(this.#h.ptr);
      this.#allocated = undefined;
      this.#splitSlots = [];
      this.#placements.clear();
      throw new NotAllocatedError(`${what}: ${t.describe()} has had no data since the scheduler allocated the graph (its buffer was freed)`);
    }
  }

  /** The tensors the scheduler placed in its compute buffers (valid until it allocates again, reserves or is freed). */
  readonly #placements = new Placements(this);

  /**
   * Computes `graph`, allocating it first unless {@linkcode allocGraph} did
   * (`wsp_ggml_backend_sched_graph_compute`). After a compute the graph
   * stays allocated; computing another graph resets and allocates for it
   * first (ggml would compute the allocated graph's splits again, tensors of
   * freed contexts included). An exception thrown by the eval callback stops the compute and is
   * rethrown here.
   *
   * @throws {ComputeError} when ggml reports a failure
   * @throws {BoundsError} when a split would copy in more than 30 tensors from other backends (ggml's `WSP_GGML_SCHED_MAX_SPLIT_INPUTS`: it aborts)
   */
  graphCompute(graph: Graph): this {
    const p = this.#live("graphCompute");
    this.#notComputing("graphCompute");
    const g = this.#graph("graphCompute", graph);
    // An allocated scheduler computes its allocated splits, whatever graph it is given: allocate this one first.
    if (this.#allocated !== graph) this.#alloc("graphCompute", p, graph, g);
    else this.#stillAllocated("graphCompute", graph);
    graph._checkIndices("graphCompute");
    this.#evalError = undefined;
    // The eval callback runs JS during the compute: what the compute uses refuses free() meanwhile.
    const leave = this.#eval.cb ? this._enter("graphCompute", graph) : undefined;
    let status;
    const slots = this.#splitSlots;
    putSlots(slots, "split");
    try {
      status = sym().wsp_ggml_backend_sched_graph_compute(p, g);
    } finally {
      putSlots(slots, "orig");
      leave?.();
    }
    if (this.#evalError !== undefined) {
      const e = this.#evalError;
      this.#evalError = undefined;
      throw e;
    }
    checkStatus("graphCompute", status);
    return this;
  }

  /**
   * Computes `graph` off the JS thread (Deno `nonblocking`, koffi `.async`,
   * a worker on Bun); an aborted `signal` stops it between nodes through
   * the CPU backends' abort callback (the splits of a backend ggml cannot
   * interrupt, a GPU one, run to their end), and the promise rejects with
   * the signal's reason. The eval callback cannot run off the
   * JS thread: a scheduler with one set rejects.
   */
  async graphComputeAsync(graph: Graph, options: AsyncComputeOptions = {}): Promise<void> {
    const p = this.#live("graphComputeAsync");
    this.#notComputing("graphComputeAsync");
    if (this.#eval.cb) throw new ArgumentError("graphComputeAsync: an eval callback is set; it runs on the JS thread only (use graphCompute, or setEvalCallback(null))");
    const g = this.#graph("graphComputeAsync", graph);
    const compute = runtime().lib.async.wsp_ggml_backend_sched_graph_compute;
    if (!compute) throw new UnsupportedOpError("graphComputeAsync: this runtime has no non-blocking call");
    const cpus = this.backends.filter((b) => b._flag);
    if (this.#allocated !== graph) this.#alloc("graphComputeAsync", p, graph, g);
    else this.#stillAllocated("graphComputeAsync", graph);
    graph._checkIndices("graphComputeAsync");
    const release = graph._acquire("graphComputeAsync");
    const marked: Backend[] = [];
    try {
      for (const b of this.backends) marked.push(b._setBusy(true, "graphComputeAsync"));
    } catch (e) {
      for (const b of marked) b._setBusy(false, "graphComputeAsync");
      release();
      throw e;
    }
    this.#busy = true;
    // One signal, every backend's flag.
    const flag = { set: (v: boolean) => cpus.forEach((b) => b._flag!.set(v)) } as ReturnType<typeof takeAbortFlag>;
    const slots = this.#splitSlots;
    putSlots(slots, "split");
    try {
      await runAbortable("graphComputeAsync", flag, options.signal, () => compute(p, g) as Promise<number>);
      // The splits of a backend ggml cannot interrupt (a GPU) ran to their end: the abort takes effect when the compute returns.
      if (cpus.length !== this.backends.length) options.signal?.throwIfAborted();
    } finally {
      putSlots(slots, "orig");
      flag.set(false);
      this.#busy = false;
      release();
      for (const b of this.backends) b._setBusy(false, "graphComputeAsync");
      keepAlive(graph);
    }
  }

  /** Waits for the backends' queued work (`wsp_ggml_backend_sched_synchronize`). */
  synchronize(): void {
    sym().wsp_ggml_backend_sched_synchronize(this.pointer);
  }

  /**
   * Forgets the assignments and allocations (`wsp_ggml_backend_sched_reset`):
   * needed before allocating or computing a different graph.
   */
  reset(): this {
    this.#notComputing("reset");
    this.#nativeReset(this.pointer);
    this.#allocated = undefined;
    this.#splitSlots = [];
    this.#foreign = false;
    this.#generation++;
    return this;
  }

  /** Pins `node` to `backend` for the next split (`wsp_ggml_backend_sched_set_tensor_backend`). */
  setTensorBackend(node: Tensor, backend: Backend): this {
    const p = this.pointer, s = sym();
    const t = tensorPtr("setTensorBackend", node), b = this.#backend("setTensorBackend", backend);
    // ggml keeps a user's assignment as it is: the backend gets the node even if it cannot run it.
    if (!backend.supportsOp(node)) {
      throw new UnsupportedOpError(`setTensorBackend: ${backend.name} does not run ${ffi.readCString(s.wsp_ggml_op_desc(t))} on ${node.describe()}`);
    }
    const buf = bufferOf(node);
    if (buf !== 0 && !s.wsp_ggml_backend_supports_buft(b, s.wsp_ggml_backend_buffer_get_type(buf))) {
      throw new UnsupportedOpError(`setTensorBackend: ${node.describe()} is in a ${ffi.readCString(s.wsp_ggml_backend_buffer_name(buf))} buffer, which ${backend.name} cannot use`);
    }
    s.wsp_ggml_backend_sched_set_tensor_backend(p, t, b);
    this.#mirror.state.ids.set(t, this.backends.indexOf(backend));
    return this;
  }

  /** The backend `node` was assigned to, or null (`wsp_ggml_backend_sched_get_tensor_backend`). */
  getTensorBackend(node: Tensor): Backend | null {
    const b = sym().wsp_ggml_backend_sched_get_tensor_backend(this.pointer, tensorPtr("getTensorBackend", node));
    return this.backends.find((x) => x.pointer === b) ?? null;
  }

  /**
   * Calls `callback` for the graph's nodes during {@linkcode graphCompute}
   * (`wsp_ggml_backend_sched_set_eval_callback`); null removes it.
   */
  setEvalCallback(callback: SchedEvalCallback | null): this {
    const p = this.pointer;
    this.#notComputing("setEvalCallback"); // it would close the callback that is running
    if (callback !== null && typeof callback !== "function") throw new ArgumentError("setEvalCallback: expected a function or null");
    const old = this.#eval.cb;
    if (callback === null) {
      sym().wsp_ggml_backend_sched_set_eval_callback(p, 0, 0);
      this.#eval.cb = undefined;
    } else {
      // The runtime keeps the callback alive until it is closed: it refers to the scheduler weakly, so that
      // a scheduler nothing else refers to is still collected (its release closes the callback).
      const self = new WeakRef(this);
      const cb = ffi.callback(callbacks.wsp_ggml_backend_sched_eval_callback, ((t: number, ask: boolean) => {
        const me = self.deref();
        if (me === undefined || me.#evalError !== undefined) return false;
        try {
          const node = me.#resolve(t);
          if (node === null) return !ask;
          return callback(node, Boolean(ask)) === true;
        } catch (e) {
          me.#evalError = e;
          return false;
        }
      }) as never);
      this.#eval.cb = cb;
      sym().wsp_ggml_backend_sched_set_eval_callback(p, cb.pointer, 0);
    }
    old?.close();
    return this;
  }

  /** The tensor object of a node the eval callback is called for; null for the scheduler's own tensors (copies of split inputs), which belong to no JS context. */
  #resolve(t: number): Tensor | null {
    const g = this.#lastGraph;
    if (g !== undefined) for (const c of g.context._reachable()) if (c._contains(t)) return c._wrap(t);
    return null;
  }

  /** Frees the scheduler and its compute buffers (not the backends). */
  free(): void {
    if (this.#h.ptr === 0) return;
    if (this.#busy) throw new BusyError("free: the scheduler is computing (await graphComputeAsync first)");
    this.#notComputing("free");
    this.#placements.clear();
    dispose(this.#h);
    this.#lastGraph = undefined;
  }

  /** Frees the scheduler (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}
