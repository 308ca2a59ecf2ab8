/**
 * A re-implementation, in TypeScript, of the backend assignment and split
 * formation of ggml's scheduler (`wsp_ggml_backend_sched_split_graph`,
 * ggml-backend.cpp), so that {@linkcode Sched} can tell, before the native
 * call, whether a split would read more than
 * `WSP_GGML_SCHED_MAX_SPLIT_INPUTS` tensors copied from other backends:
 * ggml asserts on that (it starts a new split only when a node begins with
 * the split already full), which kills the process.
 *
 * The passes follow the C one for one: 1 (pre-allocated tensors, views,
 * inputs, weights with op offload), 2 (expand the non-CPU backends down and
 * up, then every backend), 3 (unassigned nodes to the backend with the most
 * usable sources; upgrades to a higher-priority backend of the same buffer
 * type), 4 (sources and views from their consumers), 5 (splits and their
 * input copies). The native queries it needs (`supports_op`,
 * `supports_buft`, `offload_op`, a buffer's type, usage and host-ness) are
 * asked lazily and remembered for the run.
 *
 * {@linkcode predictSplits} reads a JS {@linkcode Graph} from its contexts'
 * pools; {@linkcode predictRawSplits} reads a native graph (ggml-opt's, for
 * `OptContext.epoch`) whose tensors no JS context may know, through
 * views of their structs. Both share the passes.
 *
 * @module
 */
import { BackendBufferUsage, layouts, Op, TensorFlag } from "../ffi/bindings.gen.ts";
import type { Context } from "../core/context.ts";
import { CG_LEAFS, CG_N_LEAFS, CG_N_NODES, CG_NODES, CG_SIZE, type Graph } from "../core/graph.ts";
import { i64At, type Tensor } from "../core/tensor.ts";
import { ffi } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";

/** `WSP_GGML_SCHED_MAX_SPLIT_INPUTS` (ggml-backend.cpp): the copied inputs a split (and a parallel scheduler's graph) holds at most. */
export const SCHED_MAX_SPLIT_INPUTS = 30;

const F = layouts.wsp_ggml_tensor.fields;
// The fields' word (4-byte) offsets, read once.
const W_OP = F.op.offset >> 2, W_FLAGS = F.flags.offset >> 2, W_BUFFER = F.buffer.offset >> 2, W_VIEW = F.view_src.offset >> 2;
const W_SRC = F.src.offset >> 2, N_SRC = F.src.length;
const TENSOR_BYTES = layouts.wsp_ggml_tensor.size;
/** `wsp_ggml_is_view_op`. */
const isViewOp = (op: number) => op === Op.VIEW || op === Op.RESHAPE || op === Op.PERMUTE || op === Op.TRANSPOSE;

/** What the prediction needs to know of a scheduler (all fixed when it is made). */
export interface SplitModel {
  /** The backends' native pointers, by priority (the last one is the CPU). */
  readonly backends: readonly number[];
  /** The scheduler's buffer type per backend (`wsp_ggml_backend_sched_get_buffer_type`). */
  readonly bufts: readonly number[];
  /** The scheduler's `op_offload`. */
  readonly opOffload: boolean;
  /** The scheduler's `n_copies` (4 for a parallel one, else 1). */
  readonly nCopies: number;
}

/**
 * The scheduler's memory between splits, as far as the prediction needs it:
 * the backend of each tensor (`hv_tensor_backend_ids`: users' assignments
 * and, until a reset, every assignment of the last split) and which
 * backends hold a copy of it (`hv_tensor_copies`, non-null), both keyed by
 * the tensor's address as ggml's hash set is.
 */
export interface SplitState {
  /** Tensor address → backend index. */
  readonly ids: Map<number, number>;
  /** Tensor address → bit mask of the backends with a copy of it. */
  readonly copies: Map<number, number>;
}

/** An empty {@linkcode SplitState} (a scheduler just reset). */
export function emptySplitState(): SplitState {
  return { ids: new Map(), copies: new Map() };
}

/** One predicted split: its backend, its node range, and the tensors it copies in (`T`: a Tensor, or a raw tensor address). */
export interface PredictedSplit<T = Tensor> {
  /** Index of the split's backend. */
  readonly backend: number;
  /** First node index. */
  readonly start: number;
  /** One past the last node index. */
  end: number;
  /** The tensors copied into this split from other backends, in ggml's order. */
  readonly inputs: T[];
}

/** Where ggml's split would assert on its input limit. */
export interface SplitOverflow<T = Tensor> {
  /** `"split"`: a split's inputs (`n_inputs`); `"graph"`: a parallel scheduler's graph inputs (`n_graph_inputs`). */
  readonly kind: "split" | "graph";
  /** The node whose sources overflow it. */
  readonly node: T;
  /** Index of the node in the graph. */
  readonly index: number;
  /** Index of the split (kind "split"). */
  readonly split: number;
  /** The split's backend index (kind "split"). */
  readonly backend: number;
  /** The inputs the split (or graph) would hold with all of the node's new copies. */
  readonly count: number;
}

/** The outcome of {@linkcode predictSplits} (`T` = Tensor) and {@linkcode predictRawSplits} (`T` = a tensor's address). */
export interface SplitPrediction<T = Tensor> {
  /** The splits, up to and including the one that overflows (if any). */
  readonly splits: PredictedSplit<T>[];
  /** A parallel scheduler's graph inputs (distinct INPUT-flagged sources). */
  readonly graphInputs: number;
  /** The first place ggml would assert, or null. */
  readonly overflow: SplitOverflow<T> | null;
  /** The scheduler's state after the split (to predict a next one without a reset); built when first read. */
  readonly state: SplitState;
  /** The predicted backend index of `tensor` (-1: none). */
  backendOf(tensor: T): number;
}

/**
 * What `o` would make ggml assert, for an error message: the count against the limit, and for a
 * split its index and backend (`backendName`). The caller names the node and says what to do.
 */
export function overflowText(o: SplitOverflow<unknown>, backendName: string): string {
  if (o.kind === "graph") return `would make the parallel scheduler's graph read ${o.count} input tensors, more than WSP_GGML_SCHED_MAX_SPLIT_INPUTS (${SCHED_MAX_SPLIT_INPUTS}; ggml aborts)`;
  return `would bring split ${o.split} (on ${backendName}) to ${o.count} tensors copied from other backends, more than WSP_GGML_SCHED_MAX_SPLIT_INPUTS (${SCHED_MAX_SPLIT_INPUTS}; ggml starts a new split only when one is already full, and aborts)`;
}

/** Reads a pointer (a 64-bit field at word `k`) from a pool's words as a number, without a bigint. */
const ptrAt = (w: Int32Array, k: number) => (w[k] >>> 0) + (w[k + 1] >>> 0) * 2 ** 32;

/**
 * The graph as the prediction reads it: its tensors by dense index (leafs and nodes first met
 * first), each one's fields, and where it is in memory (`ptrs`: the key of the scheduler's hash sets).
 */
interface Gathered<T> {
  readonly list: T[];
  readonly ptrs: number[];
  readonly leafs: number[];
  readonly nodes: number[];
  readonly op: number[];
  readonly flags: number[];
  /** The tensor's own `buffer`. */
  readonly own: number[];
  /** The index of `view_src`, -1 for none. */
  readonly view: number[];
  /** The sources of tensor i: srcList[srcStart[i] … srcStart[i + 1]). */
  readonly srcList: number[];
  readonly srcStart: number[];
  /** The address of an element of `list`. */
  ptrOf(t: T): number;
}

/**
 * Predicts what `wsp_ggml_backend_sched_split_graph` does with `graph` on a
 * scheduler described by `model` whose memory is `state` (not modified).
 * Reads the tensors as they are now: call it right before the native call.
 * Linear in nodes × sources: the tensors get dense indices, their fields and
 * assignments live in typed arrays.
 */
export function predictSplits(graph: Graph, model: SplitModel, state: SplitState = emptySplitState()): SplitPrediction {
  return predictGathered(gatherGraph(graph), model, state);
}

/** The tensors of a JS graph, read from their contexts' pools. */
function gatherGraph(graph: Graph): Gathered<Tensor> {
  // The tensors, leafs first (then every node's sources and view source are indexed when it is
  // read), by context and offset (small integers: fast map keys, unlike 48-bit addresses).
  interface Pool {
    readonly ctx: Tensor["context"];
    readonly base: number;
    readonly words: Int32Array;
    readonly offs: Map<number, number>;
  }
  const pools: Pool[] = [];
  const list: Tensor[] = [], poolOf: Pool[] = [];
  const add = (t: Tensor): number => {
    let q = pools.find((x) => x.ctx === t.context);
    if (q === undefined) pools.push(q = { ctx: t.context, base: t.context._base, words: t.context._words("sched split"), offs: new Map() });
    let i = q.offs.get(t._off);
    if (i === undefined) {
      q.offs.set(t._off, i = list.length);
      list.push(t);
      poolOf.push(q);
    }
    return i;
  };
  const find = (p: number, from: Tensor, mine: Pool): number => {
    // Most sources are in the reader's own context.
    const i = p >= mine.base ? mine.offs.get(p - mine.base) : undefined;
    if (i !== undefined) return i;
    for (const q of pools) {
      const off = p - q.base;
      if (q === mine || off < 0 || off >= 4 * q.words.length) continue;
      const k = q.offs.get(off);
      if (k !== undefined) return k;
    }
    return add(from.context._resolve(p));
  };
  const leafs = graph._leafs().map(add), nodes = graph.nodes().map(add);
  const fields = readFields(() => list.length, (i) => [poolOf[i].words, list[i]._off >> 2], (p, i) => find(p, list[i], poolOf[i]));
  return { list, ptrs: list.map((t) => t._ptr), leafs, nodes, ...fields, ptrOf: (t) => t._ptr };
}

/**
 * The fields the prediction reads of tensors 0, 1, … while `count()` grows: `words(i)` gives
 * tensor i's struct (its words and the word it starts at), `index(p, i)` the index of the tensor
 * at `p` that tensor i refers to (a source or the view source; it joins the list if new).
 */
function readFields(count: () => number, words: (i: number) => Fields, index: (p: number, i: number) => number) {
  const op: number[] = [], flags: number[] = [], own: number[] = [], view: number[] = [];
  /** The sources of tensor i: srcList[srcStart[i] … srcStart[i + 1]). */
  const srcList: number[] = [], srcStart: number[] = [];
  for (let i = 0; i < count(); i++) {
    const [v, o] = words(i);
    op.push(v[o + W_OP]);
    flags.push(v[o + W_FLAGS]);
    own.push(ptrAt(v, o + W_BUFFER));
    const vp = ptrAt(v, o + W_VIEW);
    view.push(vp === 0 ? -1 : index(vp, i));
    srcStart.push(srcList.length);
    for (let j = 0, w = o + W_SRC; j < N_SRC; j++, w += 2) {
      if ((v[w] | v[w + 1]) !== 0) srcList.push(index(ptrAt(v, w), i));
    }
  }
  srcStart.push(srcList.length);
  return { op, flags, own, view, srcList, srcStart };
}

/** A {@linkcode predictRawSplits} outcome. */
export interface RawSplitPrediction extends SplitPrediction<number> {
  /**
   * Whether the graph's tensors still have the buffers and flags the prediction read (what
   * their placement depends on beyond the graph's shape): a cheap re-check of a cached verdict
   * for a graph that does not change otherwise. Read only while the tensors live.
   */
  unchanged(): boolean;
}

/** A tensor's words (fields) and the word where it starts. */
type Fields = readonly [Int32Array, number];

/**
 * The leafs and nodes of the native graph at `cgraph` (`struct wsp_ggml_cgraph`: int size,
 * n_nodes, n_leafs, then the nodes, grads, grad_accs and leafs arrays), or null where that
 * layout does not agree with ggml's public accessors.
 */
export function readCgraph(cgraph: number): { readonly nodes: number[]; readonly leafs: number[] } | null {
  const s = runtime().lib.symbols;
  if (cgraph === 0) return null;
  const h = new Int32Array(ffi.view(cgraph, CG_LEAFS + 8));
  const size = h[CG_SIZE >> 2], nNodes = h[CG_N_NODES >> 2], nLeafs = h[CG_N_LEAFS >> 2], nodesAt = i64At(h, CG_NODES), leafsAt = i64At(h, CG_LEAFS);
  // ggml allocates the leafs array right after the nodes array (both `size` pointers).
  if (size !== s.wsp_ggml_graph_size(cgraph) || nNodes !== s.wsp_ggml_graph_n_nodes(cgraph) || nodesAt !== s.wsp_ggml_graph_nodes(cgraph) || leafsAt !== nodesAt + 8 * size) return null;
  if (nNodes < 0 || nLeafs < 0 || nNodes > size || nLeafs > size) return null;
  const read = (at: number, k: number) => {
    if (k === 0) return [];
    const w = new Int32Array(ffi.view(at, 8 * k));
    return Array.from({ length: k }, (_, i) => i64At(w, 8 * i));
  };
  return { nodes: read(nodesAt, nNodes), leafs: read(leafsAt, nLeafs) };
}

/**
 * Predicts, as {@linkcode predictSplits} does, the split of a native graph (`cgraph`, e.g. one
 * ggml-opt built), whose tensors may belong to no JS context: those of `known` contexts are read
 * from their pools, the others through a view of their struct. Tensors are their addresses.
 * Returns null where the graph's layout is not the one expected ({@linkcode readCgraph}).
 */
export function predictRawSplits(cgraph: number, model: SplitModel, state: SplitState = emptySplitState(), known: readonly Context[] = []): RawSplitPrediction | null {
  const g = readCgraph(cgraph);
  if (g === null) return null;
  const pools = known.map((c) => ({ base: c._base, words: c._words("sched split") }));
  const fieldsOf = (p: number): Fields => {
    for (const q of pools) {
      const off = p - q.base;
      if (off >= 0 && off + TENSOR_BYTES <= 4 * q.words.length) return [q.words, off >> 2];
    }
    return [new Int32Array(ffi.view(p, TENSOR_BYTES)), 0];
  };
  const list: number[] = [], index = new Map<number, number>(), at: Fields[] = [];
  const add = (p: number): number => {
    let i = index.get(p);
    if (i === undefined) {
      index.set(p, i = list.length);
      list.push(p);
    }
    return i;
  };
  const leafs = g.leafs.map(add), nodes = g.nodes.map(add);
  const fields = readFields(() => list.length, (i) => (at[i] = fieldsOf(list[i])), add);
  const { flags, own } = fields;
  const plan = predictGathered({ list, ptrs: list, leafs, nodes, ...fields, ptrOf: (p) => p }, model, state);
  // The fields read through live views (pools, native memory): read again, they tell whether the graph is still the one predicted.
  const unchanged = () => at.every(([v, o], i) => v[o + W_FLAGS] === flags[i] && ptrAt(v, o + W_BUFFER) === own[i]);
  return Object.assign(plan, { unchanged });
}

/** The prediction proper, on a gathered graph. */
function predictGathered<T>(g: Gathered<T>, model: SplitModel, state: SplitState): SplitPrediction<T> {
  const s = runtime().lib.symbols;
  const nb = model.backends.length, cpu = nb - 1;
  const { list, ptrs, leafs, nodes, op, flags, own, view, srcList, srcStart } = g;
  const n = list.length;
  /** `view_src ? view_src->buffer : buffer`. */
  const buf = own.map((b, i) => (view[i] === -1 ? b : own[view[i]]));

  // The scheduler's memory, by index.
  const ids = new Int32Array(n).fill(-1), copies = new Int32Array(n);
  if (state.ids.size > 0) for (let i = 0; i < n; i++) ids[i] = state.ids.get(ptrs[i]) ?? -1;
  if (state.copies.size > 0) for (let i = 0; i < n; i++) copies[i] = state.copies.get(ptrs[i]) ?? 0;
  const id = (i: number) => (i === -1 ? -1 : ids[i]);

  // Native answers, asked once each: 2 bits per backend (asked, answer).
  const opMemo = new Int32Array(n);
  const supportsOp = (b: number, i: number): boolean => {
    let m = opMemo[i];
    if (!(m & (1 << (2 * b)))) opMemo[i] = m |= (1 << (2 * b)) | (s.wsp_ggml_backend_supports_op(model.backends[b], ptrs[i]) ? 2 << (2 * b) : 0);
    return (m & (2 << (2 * b))) !== 0;
  };
  // Buffer types by small index (the scheduler's first); each tensor's buffer's type and usage, asked once per buffer.
  const bufts: number[] = [], buftIndex = new Map<number, number>(), buftMemo: number[] = [];
  const buftId = (buft: number) => {
    let k = buftIndex.get(buft);
    if (k === undefined) {
      buftIndex.set(buft, k = bufts.length);
      bufts.push(buft);
      buftMemo.push(0);
    }
    return k;
  };
  const schedBuft = model.bufts.map(buftId);
  const buffers = new Map<number, { buft: number; weights: boolean }>();
  const buffer = (b: number) => {
    let r = buffers.get(b);
    if (r === undefined) buffers.set(b, r = { buft: buftId(s.wsp_ggml_backend_buffer_get_type(b)), weights: s.wsp_ggml_backend_buffer_get_usage(b) === BackendBufferUsage.WEIGHTS });
    return r;
  };
  /** The buffer type index of `view_src ? view_src->buffer : buffer` (-1: none); whether `buffer` holds weights. */
  const tBuft = new Int32Array(n).fill(-1), weight = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    if (buf[i] !== 0) tBuft[i] = buffer(buf[i]).buft;
    if (own[i] !== 0) weight[i] = buffer(own[i]).weights ? 1 : 0;
  }
  const supportsBuft = (b: number, k: number): boolean => {
    let m = buftMemo[k];
    if (!(m & (1 << (2 * b)))) buftMemo[k] = m |= (1 << (2 * b)) | (s.wsp_ggml_backend_supports_buft(model.backends[b], bufts[k]) ? 2 << (2 * b) : 0);
    return (m & (2 << (2 * b))) !== 0;
  };
  const isHost = (b: number) => Boolean(s.wsp_ggml_backend_buffer_is_host(b));

  // wsp_ggml_backend_sched_backend_from_buffer: the first backend that takes `i`'s buffer and runs `op`.
  const fromBuffer = (i: number, opOf: number): number => {
    const k = tBuft[i];
    if (k === -1) return -1;
    for (let b = 0; b < nb; b++) if (supportsBuft(b, k) && supportsOp(b, opOf)) return b;
    return -1;
  };
  // wsp_ggml_backend_sched_backend_id_from_cur (its abort, a pre-allocated tensor no backend runs, is Sched's check).
  const fromCur = (i: number): number => {
    let b = fromBuffer(i, i);
    if (b !== -1) return b;
    if (view[i] !== -1) {
      b = fromBuffer(view[i], i);
      if (b !== -1) return b;
    }
    if (buf[i] !== 0) return -1;
    if (flags[i] & TensorFlag.INPUT) return cpu;
    for (let x = srcStart[i]; x < srcStart[i + 1]; x++) {
      const j = srcList[x];
      if (op[i] === Op.ROPE || !weight[j]) continue;
      const sb = fromBuffer(j, i);
      if (sb === cpu && isHost(own[j])) {
        if (model.opOffload) for (let o = 0; o < sb; o++) if (supportsOp(o, i) && s.wsp_ggml_backend_offload_op(model.backends[o], ptrs[i])) return o;
      }
      return sb;
    }
    return -1;
  };
  // wsp_ggml_backend_sched_buffer_supported
  const bufferSupported = (i: number, b: number): boolean => {
    let k = tBuft[i];
    if (k === -1) {
      let tb = ids[i];
      if (tb === -1) tb = id(view[i]);
      if (tb !== -1) k = schedBuft[tb];
    }
    return k !== -1 && supportsBuft(b, k);
  };
  const setIfSupported = (i: number, b: number) => {
    if (supportsOp(b, i)) ids[i] = b;
  };

  // Pass 1: pre-allocated tensors, inputs, weights; assignments already there are kept.
  for (const i of leafs) if (ids[i] === -1) ids[i] = fromCur(i);
  for (const i of nodes) if (ids[i] === -1) ids[i] = fromCur(i);

  // Pass 2: spread the assignments to neighbouring unassigned nodes (view ops skipped):
  // first the non-CPU backends (down, up), then any backend (down, up).
  const expand = (down: boolean, skipCpu: boolean) => {
    let cur = -1;
    for (let k = 0; k < nodes.length; k++) {
      const i = nodes[down ? k : nodes.length - 1 - k];
      if (isViewOp(op[i])) continue;
      if (ids[i] !== -1) cur = skipCpu && ids[i] === cpu ? -1 : ids[i];
      else if (cur !== -1) setIfSupported(i, cur);
    }
  };
  expand(true, true);
  expand(false, true);
  expand(true, false);
  expand(false, false);

  // Pass 3: unassigned nodes go where most of their sources are usable; assigned ones move up
  // to a higher-priority backend of the same buffer type that can use every source.
  for (const i of nodes) {
    if (isViewOp(op[i])) continue;
    const cur = ids[i];
    if (cur === -1) {
      let best = -1;
      for (let b = 0; b < nb; b++) {
        if (!supportsOp(b, i)) continue;
        let k = 0;
        for (let x = srcStart[i]; x < srcStart[i + 1]; x++) if ((ids[srcList[x]] !== -1 || id(view[srcList[x]]) !== -1) && bufferSupported(srcList[x], b)) k++;
        if (k > best) {
          best = k;
          ids[i] = b;
        }
      }
    } else {
      for (let b = 0; b < cur; b++) {
        if (model.bufts[b] !== model.bufts[cur] || !supportsOp(b, i)) continue;
        let all = true;
        for (let x = srcStart[i]; x < srcStart[i + 1] && all; x++) all = bufferSupported(srcList[x], b);
        if (all) {
          ids[i] = b;
          break;
        }
      }
    }
  }

  // Pass 4: views take their source's backend, unassigned sources their consumer's; the first backend that runs it last.
  for (const i of nodes) {
    if (view[i] !== -1 && ids[i] === -1) ids[i] = ids[view[i]];
    for (let x = srcStart[i]; x < srcStart[i + 1]; x++) {
      const j = srcList[x];
      if (ids[j] === -1) ids[j] = view[j] !== -1 ? ids[view[j]] : ids[i];
    }
    for (let b = 0; b < nb && ids[i] === -1; b++) setIfSupported(i, b);
  }

  // Pass 5: the splits and the copies they need.
  const splits: PredictedSplit<T>[] = [];
  let overflow: SplitOverflow<T> | null = null;
  let graphInputs = 0;
  let k = 0;
  while (k < nodes.length && isViewOp(op[nodes[k]])) k++;
  let split: PredictedSplit<T> = { backend: k < nodes.length ? ids[nodes[k]] : -1, start: 0, end: nodes.length, inputs: [] };
  splits.push(split);
  let cur = split.backend;
  const hasCopy = (j: number, b: number) => (copies[j] & (1 << b)) !== 0;
  for (; k < nodes.length && overflow === null; k++) {
    const i = nodes[k];
    if (isViewOp(op[i])) continue;
    let fresh = false;
    if (ids[i] === cur && split.inputs.length > 0) {
      for (let x = srcStart[i]; x < srcStart[i + 1]; x++) {
        const j = srcList[x];
        // A weight from a backend this one cannot read: a new split lets the previous weights' copies go.
        if (weight[j] && ids[j] !== cur && !bufferSupported(j, cur)) {
          fresh = true;
          break;
        }
        // ggml checks the limit only when the split is already full (its FIXME).
        if (split.inputs.length === SCHED_MAX_SPLIT_INPUTS && ids[j] !== cur && !hasCopy(j, cur) && !bufferSupported(j, cur)) {
          fresh = true;
          break;
        }
      }
    }
    if (ids[i] !== cur || fresh) {
      split.end = k;
      split = { backend: ids[i], start: k, end: nodes.length, inputs: [] };
      splits.push(split);
      cur = ids[i];
    }
    for (let x = srcStart[i]; x < srcStart[i + 1]; x++) {
      const j = srcList[x], sb = ids[j];
      if (flags[j] & TensorFlag.INPUT && model.nCopies > 1 && !hasCopy(j, sb)) {
        copies[j] |= 1 << sb;
        if (graphInputs++ >= SCHED_MAX_SPLIT_INPUTS && overflow === null) {
          overflow = { kind: "graph", node: list[i], index: k, split: splits.length - 1, backend: cur, count: 0 };
        }
      }
      if (sb !== cur && !bufferSupported(j, cur) && !hasCopy(j, cur)) {
        copies[j] |= 1 << cur;
        split.inputs.push(list[j]);
        if (split.inputs.length > SCHED_MAX_SPLIT_INPUTS && overflow === null) {
          overflow = { kind: "split", node: list[i], index: k, split: splits.length - 1, backend: cur, count: 0 };
        }
      }
    }
    if (overflow !== null) overflow = { ...overflow, count: overflow.kind === "graph" ? graphInputs : split.inputs.length };
  }

  // The state after the split, built when asked (Sched asks only for a split that follows without a reset).
  let next: SplitState | undefined;
  const after = (): SplitState => {
    if (next) return next;
    next = { ids: new Map(state.ids), copies: new Map(state.copies) };
    for (let i = 0; i < n; i++) {
      const p = ptrs[i];
      if (ids[i] !== -1) next.ids.set(p, ids[i]);
      if (copies[i] !== 0) next.copies.set(p, copies[i]);
    }
    return next;
  };
  return {
    splits,
    graphInputs,
    overflow,
    get state() {
      return after();
    },
    backendOf: (t: T) => after().ids.get(g.ptrOf(t)) ?? -1,
  };
}
