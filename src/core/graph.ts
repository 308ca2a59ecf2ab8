/**
 * {@linkcode Graph}: a computation graph (`struct wsp_ggml_cgraph`) in a
 * context's pool, computed on the CPU backend.
 *
 * @module
 */
import { GluOp, MAX_N_THREADS, Op, Status, TensorFlag, Type, UnaryOp } from "../ffi/bindings.gen.ts";
import { int } from "./args.ts";
import { internal } from "./brand.ts";
import { ArgumentError, BoundsError, BusyError, ComputeError, GgmlTypeError, GraphFullError, NotAllocatedError, UnsupportedOpError } from "./errors.ts";
import { ffi } from "../runtime/loader.ts";
import { checkThreads, defaultThreads } from "../runtime/threads.ts";
import { runtime } from "../runtime/runtime.ts";
import { BACKWARD_OPS, checkBackward, cpuKernelRefusal } from "./checks.ts";
import { CPU_TYPES } from "../backend/cpu_types.gen.ts";
import type { Context } from "./context.ts";
import { i64At, Tensor } from "./tensor.ts";
import { hasMemset, TENSOR_BUFFER } from "./buffer_caps.ts";
import { type IndexPlan, planIndexChecks, scanIndices } from "./indices.ts";

const nameOf = (values: Record<string, number>) => new Map(Object.entries(values).map(([k, v]) => [v, k]));
const OP_NAMES = nameOf(Op), UNARY_NAMES = nameOf(UnaryOp), GLU_NAMES = nameOf(GluOp), TYPE_NAMES = nameOf(Type);

/**
 * Whether the CPU kernel of `node` handles its types (the table read from the
 * vendored kernels, `cpu_types.gen.ts`); the kernels abort on any other.
 */
export function cpuHandlesTypes(node: Tensor): boolean {
  const op = OP_NAMES.get(node.op) ?? "";
  const key = node.op === Op.UNARY ? `UNARY.${UNARY_NAMES.get(node.subOp!)}` : node.op === Op.GLU ? `GLU.${GLU_NAMES.get(node.subOp!)}` : op;
  if (cpuKernelRefusal(node) !== null) return false; // the kernels' layout and parameter asserts
  const rules = CPU_TYPES[key];
  if (!rules) return true;
  const [src0, src1] = node.src;
  const types = { src0: src0 && TYPE_NAMES.get(src0.type), src1: src1 && TYPE_NAMES.get(src1.type), dst: TYPE_NAMES.get(node.type) };
  return rules.some((r) => (!r.src0 || r.src0 === types.src0) && (!r.src1 || r.src1 === types.src1) && (!r.dst || r.dst === types.dst));
}

/**
 * @ignore @internal Throws {@linkcode NotAllocatedError} when `t` has no data, or is
 * a view whose source lost its data (its backend buffer or scheduler was
 * freed: the view's own data pointer would dangle).
 */
export function checkData(what: string, t: Tensor): void {
  if (t._data === 0) throw new NotAllocatedError(`${what}: ${t.describe()} has no data (not allocated: a noAlloc context's tensor needs allocCtxTensors, a Gallocr or a Sched; or its buffer was freed)`);
  const src = t.viewSrc;
  if (src !== null && src._data === 0) throw new NotAllocatedError(`${what}: ${t.describe()} views ${src.describe()}, which has no data any more (its buffer was freed)`);
}

// struct wsp_ggml_cgraph (ggml-impl.h, not a public header): int size, n_nodes, n_leafs, then the
// nodes, grads, grad_accs and leafs arrays. The graph lives in its context's pool (JS memory),
// so its counts and arrays are read from there; the first graph checks these offsets against the
// public calls and, should they ever disagree, every graph keeps its JS mirror up to date instead.
/** @ignore @internal Byte offsets in `struct wsp_ggml_cgraph` (also read by src/backend/sched_split.ts for ggml-opt's graphs). */
export const CG_SIZE = 0, CG_N_NODES = 4, CG_N_LEAFS = 8, CG_NODES = 16, CG_LEAFS = 40;
let cgraphLayout: boolean | undefined;

/** Whether the cgraph layout above holds (checked once, on a fresh graph). */
function cgraphLayoutHolds(w: Int32Array, off: number, ptr: number, size: number): boolean {
  if (cgraphLayout !== undefined) return cgraphLayout;
  const s = runtime().lib.symbols;
  const nodes = i64At(w, off + CG_NODES);
  return cgraphLayout = w[(off + CG_SIZE) >> 2] === size && s.wsp_ggml_graph_size(ptr) === size &&
    w[(off + CG_N_NODES) >> 2] === 0 && w[(off + CG_N_LEAFS) >> 2] === 0 &&
    nodes === s.wsp_ggml_graph_nodes(ptr) && i64At(w, off + CG_LEAFS) === nodes + 8 * size;
}

/** @ignore @internal Whether graphs read their counts and arrays from the pool (for tests). */
export function cgraphLayoutKnown(): boolean {
  return cgraphLayout === true;
}

/** Options of {@linkcode Graph.compute}. */
export interface ComputeOptions {
  /** Threads to compute with (1 … 512); default: the package's thread policy (`defaultThreads`). */
  readonly nThreads?: number;
}

/**
 * A computation graph. Build it with {@linkcode buildForwardExpand} from the
 * tensors to compute, then {@linkcode compute} it. It belongs to the context
 * that created it (`ctx.newGraph()`), and is freed with it.
 */
export class Graph {
  /** The context whose pool holds the graph. */
  readonly context: Context;
  /** Maximum number of nodes (and of leafs). */
  readonly size: number;
  /** Whether the graph has gradient slots (`newGraphCustom(size, true)`). */
  readonly grads: boolean;
  readonly #ptr: number;
  /** The graph's offset in its context's pool. */
  readonly #off: number;
  /**
   * The JS mirror of the graph: its nodes and leafs as Tensor objects, and
   * every tensor visited (ggml's visited hash set). It is how sizes are
   * checked before C (ggml aborts on a full graph) and what compute's
   * checks walk. Tensor objects are canonical (one per native tensor), so
   * they key the set.
   */
  readonly #visited = new Set<Tensor>();
  readonly #leafs: Tensor[] = [];
  readonly #nodes: Tensor[] = [];
  /**
   * Whether #nodes/#leafs lag behind the native graph: a buildForwardExpand
   * that cannot overflow the graph goes straight to C, and the mirror is
   * read back from the graph in the pool when next needed (#sync).
   */
  #stale = false;
  /** Whether #visited lags behind #nodes/#leafs (rebuilt only for a checked expand). */
  #visitedStale = false;
  /** Contexts of the tensors expanded since the last #sync: where the new nodes' pointers resolve. */
  readonly #roots = new Set<Context>();
  #checked = false;
  /** The index tensors to scan before each compute (planIndexChecks), computed once per graph shape. */
  #indexPlan: IndexPlan | undefined;
  #busy = false;

  /** @ignore @internal Graphs come from `ctx.newGraph()` / `ctx.newGraphCustom()`. */
  constructor(context: Context, ptr: number, size: number, grads: boolean, token?: symbol) {
    internal("Graph", token, "ctx.newGraph() or ctx.newGraphCustom()");
    this.context = context;
    this.#ptr = ptr;
    this.#off = ptr - context._base;
    this.size = size;
    this.grads = grads;
    cgraphLayoutHolds(context._words("graph"), this.#off, ptr, size);
  }

  /** The graph's `n_nodes` and `n_leafs`, read from the pool. */
  #counts(): [number, number] {
    const w = this.context._words("graph");
    return [w[(this.#off + CG_N_NODES) >> 2], w[(this.#off + CG_N_LEAFS) >> 2]];
  }

  /** Brings the mirror up to date with the native graph (after unchecked expands). */
  #sync(): void {
    if (!this.#stale) return;
    const own = this.context;
    const w = own._words("graph");
    const contexts = new Set<Context>();
    for (const r of this.#roots) for (const c of r._reachable()) if (c !== own) contexts.add(c);
    const resolve = (p: number): Tensor => {
      if (own._contains(p)) return own._wrap(p);
      for (const c of contexts) {
        if (!c._contains(p)) continue;
        own._depend(c);
        return c._wrap(p);
      }
      return own._resolve(p); // a freed context's tensor (UseAfterFreeError) or one of own's dependencies
    };
    const read = (list: Tensor[], array: number, n: number) => {
      const at = i64At(w, this.#off + array) - own._base;
      for (let i = list.length; i < n; i++) list.push(resolve(i64At(w, at + 8 * i)));
    };
    const [nodes, leafs] = this.#counts();
    read(this.#nodes, CG_NODES, nodes);
    read(this.#leafs, CG_LEAFS, leafs);
    this.#roots.clear();
    this.#stale = false;
    this.#visitedStale = true;
  }

  /**
   * Whether expanding from `tensor` cannot overflow the graph: at most every
   * tensor of the contexts it can reach becomes a node or a leaf.
   */
  #cannotOverflow(tensor: Tensor): boolean {
    if (!cgraphLayout) return false;
    let bound = 0;
    for (const c of tensor.context._reachable()) {
      if (c.freed) return false; // the checked path throws the UseAfterFreeError
      bound += c._maxTensors;
    }
    const [nodes, leafs] = this.#counts();
    return nodes + bound <= this.size && leafs + bound <= this.size;
  }

  /** @ignore @internal Throws {@linkcode BusyError} while an asynchronous compute of this graph runs. */
  _idle(what: string): void {
    if (this.#busy) throw new BusyError(`${what}: the graph is being computed asynchronously (await that compute first; a graph computes once at a time)`);
  }

  /**
   * @ignore @internal Marks the graph and every context it uses as in use by an
   * asynchronous compute; returns the function that ends it.
   * @throws {BusyError} when the graph is computing already
   */
  _acquire(what: string): () => void {
    this._idle(what);
    this.#sync(); // records the contexts of nodes expanded unchecked
    const contexts = [...this.context._reachable()];
    this.#busy = true;
    for (const c of contexts) c._hold(1);
    return () => {
      this.#busy = false;
      for (const c of contexts) c._hold(-1);
    };
  }

  /** The native `struct wsp_ggml_cgraph *` (for raw bindings; valid while the context lives). */
  get pointer(): number {
    this.context._pool("graph");
    return this.#ptr;
  }

  /** Number of nodes (`wsp_ggml_graph_n_nodes`). */
  get nNodes(): number {
    if (!cgraphLayout) return runtime().lib.symbols.wsp_ggml_graph_n_nodes(this.pointer);
    return this.#counts()[0];
  }

  /** Number of leafs (constants and inputs). */
  get nLeafs(): number {
    this.context._pool("graph");
    this.#sync();
    return this.#leafs.length;
  }

  /**
   * Node `i` (`wsp_ggml_graph_node`); a negative `i` counts from the end
   * (`node(-1)` is the last node).
   *
   * @throws {BoundsError} outside `-nNodes … nNodes - 1`
   */
  node(i: number): Tensor {
    int("node: i", i);
    this.context._pool("graph");
    this.#sync();
    const n = this.#nodes.length;
    if (i >= n || i < -n) throw new BoundsError(`node(${i}): the graph has ${n} nodes`);
    return this.#nodes[i < 0 ? n + i : i];
  }

  /** The nodes in evaluation order. */
  nodes(): Tensor[] {
    this.context._pool("graph");
    this.#sync();
    return this.#nodes.slice();
  }

  /** @ignore @internal The leafs, in the graph's order. */
  _leafs(): Tensor[] {
    this.context._pool("graph");
    this.#sync();
    return this.#leafs.slice();
  }

  /**
   * Adds `tensor` and every tensor it depends on that is not in the graph yet
   * (`wsp_ggml_build_forward_expand`). Returns this graph.
   *
   * @throws {GraphFullError} when the nodes or leafs would exceed {@linkcode size}
   */
  buildForwardExpand(tensor: Tensor): this {
    this.context._pool("buildForwardExpand");
    this._idle("buildForwardExpand");
    if (!(tensor instanceof Tensor)) throw new ArgumentError("buildForwardExpand: expected a Tensor");
    tensor.context._pool("buildForwardExpand: tensor");
    if (this.#cannotOverflow(tensor)) {
      this.#roots.add(tensor.context);
      runtime().lib.symbols.wsp_ggml_build_forward_expand(this.#ptr, tensor._ptr);
      this.#stale = true;
      this.#checked = false;
      this.#indexPlan = undefined;
      return this;
    }
    this.#sync();
    const visited = this.#visited;
    if (this.#visitedStale) {
      for (const t of this.#nodes) visited.add(t);
      for (const t of this.#leafs) visited.add(t);
      this.#visitedStale = false;
    }
    // Mirror ggml_visit_parents: which tensors are new, which of them leafs.
    const newNodes: Tensor[] = [], newLeafs: Tensor[] = [];
    // Post-order, sources left to right, as ggml_visit_parents; a loop instead of its
    // recursion (deep chains neither overflow the JS stack nor slow JSC down).
    const stack: Tensor[] = [], pending: Tensor[][] = [], next: number[] = [];
    const enter = (t: Tensor) => {
      visited.add(t);
      stack.push(t);
      pending.push(t.src);
      next.push(0);
    };
    if (!visited.has(tensor)) enter(tensor);
    while (stack.length > 0) {
      const top = stack.length - 1, srcs = pending[top], i = next[top];
      if (i < srcs.length) {
        next[top] = i + 1;
        if (!visited.has(srcs[i])) enter(srcs[i]);
        continue;
      }
      const t = stack.pop()!;
      pending.pop();
      next.pop();
      if (t.op === Op.NONE && !(t.flags & TensorFlag.PARAM)) newLeafs.push(t);
      else newNodes.push(t);
    }
    const nodes = this.#nodes.length + newNodes.length, leafs = this.#leafs.length + newLeafs.length;
    if (nodes > this.size || leafs > this.size) {
      for (const t of newNodes) visited.delete(t);
      for (const t of newLeafs) visited.delete(t);
      throw new GraphFullError(
        `buildForwardExpand: the graph holds ${this.size} nodes and ${this.size} leafs; this would make ${nodes} nodes and ${leafs} leafs (create it with ctx.newGraphCustom(size))`,
      );
    }
    const own = this.context;
    for (const t of newNodes) if (t.context !== own) own._depend(t.context);
    for (const t of newLeafs) if (t.context !== own) own._depend(t.context);
    runtime().lib.symbols.wsp_ggml_build_forward_expand(this.#ptr, tensor._ptr);
    for (const t of newNodes) this.#nodes.push(t);
    for (const t of newLeafs) this.#leafs.push(t);
    this.#checked = false;
    this.#indexPlan = undefined;
    return this;
  }

  /**
   * Adds the backward pass: the gradients of the loss (a tensor marked with
   * `setLoss()`) with respect to the parameters (`setParam()`), created in
   * `context` (`wsp_ggml_build_backward_expand`). The graph needs gradient
   * slots (`ctx.newGraphCustom(size, true)`).
   *
   * @param context where the gradient tensors are created (default: the graph's)
   */
  buildBackwardExpand(context: Context = this.context): this {
    this.context._pool("buildBackwardExpand");
    this._idle("buildBackwardExpand");
    context._pool("buildBackwardExpand: context");
    if (!this.grads) throw new ArgumentError("buildBackwardExpand: the graph has no gradient slots; create it with ctx.newGraphCustom(size, true)");
    this.#sync();
    if (this.#nodes.length === 0) throw new ArgumentError("buildBackwardExpand: the graph has no nodes; call buildForwardExpand first");
    const nodes = this.#nodes;
    if (!nodes.some((n) => n.flags & TensorFlag.PARAM)) {
      throw new ArgumentError("buildBackwardExpand: no trainable parameters found (mark them with setParam())");
    }
    if (!nodes.some((n) => n.flags & TensorFlag.LOSS)) throw new ArgumentError("buildBackwardExpand: no loss found (mark it with setLoss())");
    // Which nodes need a gradient, as ggml computes it; each must support a backward pass.
    const needs = new Set<number>();
    for (const n of nodes) {
      if (n.type === Type.I32) continue;
      let need = (n.flags & (TensorFlag.PARAM | TensorFlag.LOSS)) !== 0;
      const src = n.src;
      if (!need) {
        for (const s of src) {
          if (!needs.has(s._ptr)) continue;
          if (s.type !== Type.F32 && s.type !== Type.F16) {
            throw new GgmlTypeError(`buildBackwardExpand: ${s.describe()} needs a gradient but is neither f32 nor f16`);
          }
          need = true;
          break;
        }
      }
      if (!need) continue;
      if (n.viewSrc && ![Op.CPY, Op.VIEW, Op.RESHAPE, Op.PERMUTE, Op.TRANSPOSE].includes(n.op as never)) {
        throw new ArgumentError(`buildBackwardExpand: ${n.describe()} is an in-place op, which has no backward pass`);
      }
      if (n.op !== Op.NONE && !BACKWARD_OPS.has(n.op)) {
        const name = Object.entries(Op).find(([, v]) => v === n.op)?.[0];
        throw new UnsupportedOpError(`buildBackwardExpand: ${n.describe()} (op ${name}) has no backward pass in ggml`);
      }
      needs.add(n._ptr);
    }
    checkBackward(nodes); // the per-op, per-source and sub-op conditions of wsp_ggml_compute_backward
    // Gradients need room: a generous bound of 8 tensors of the node's size per node.
    const rt = runtime();
    let bound = 0;
    for (const n of nodes) if (needs.has(n._ptr)) bound += 8 * (rt.objectSize + rt.tensorSize + (context.noAlloc ? 0 : n.nelements * 4 + 16));
    if (context.usedMem + bound > context.memSize) {
      throw new GraphFullError(`buildBackwardExpand: the context may not hold the gradients (up to ${bound} bytes, ${context.memSize - context.usedMem} free)`);
    }
    const before = context.usedMem;
    rt.lib.symbols.wsp_ggml_build_backward_expand(context._ptr, this.#ptr, 0);
    if (context.usedMem !== before) {
      this.context._depend(context);
      // The gradients' sources are the forward tensors: a later expand from a gradient reaches them.
      for (const c of this.context._reachable()) context._depend(c);
    }
    // The backward pass added nodes: read the mirror back from C.
    this.#nodes.length = 0;
    this.#leafs.length = 0;
    this.#visited.clear();
    this.#roots.add(context);
    this.#stale = true;
    this.#sync();
    this.#checked = false;
    this.#indexPlan = undefined;
    return this;
  }

  /** The gradient of `node` after {@linkcode buildBackwardExpand}, or null (`wsp_ggml_graph_get_grad`). */
  grad(node: Tensor): Tensor | null {
    if (!(node instanceof Tensor)) throw new ArgumentError("grad: expected a Tensor");
    node.context._pool("grad");
    if (!this.grads) return null;
    const p = runtime().lib.symbols.wsp_ggml_graph_get_grad(this.pointer, node._ptr);
    return p === 0 ? null : this.context._resolve(p);
  }

  /** Resets the gradients: 1 for the loss, 0 elsewhere (`wsp_ggml_graph_reset`). */
  reset(): this {
    if (!this.grads) throw new ArgumentError("reset: the graph has no gradient slots");
    this._idle("reset");
    this.#sync();
    const s = runtime().lib.symbols;
    // What wsp_ggml_graph_reset zeroes (wsp_ggml_set_zero: a memset through the tensor's buffer, which an RPC
    // server's does not implement, and ggml asserts): the accumulated gradients but the loss's, AdamW's moments.
    const zeroed = (t: Tensor | null, what: string) => {
      const buf = t === null ? 0 : ffi.readPointer(t._ptr, TENSOR_BUFFER);
      if (buf !== 0 && !hasMemset(buf)) throw new UnsupportedOpError(`reset: ${what} is in an RPC server's buffer, which cannot be zeroed (no memset); allocate it in another backend's buffer`);
    };
    for (const n of this.#nodes) {
      const g = this.grad(n);
      if (g && !g.isAllocated) throw new NotAllocatedError(`reset: the gradient of ${n.describe()} is not allocated`);
      const acc = s.wsp_ggml_graph_get_grad_acc(this.pointer, n._ptr);
      if (acc !== 0 && !(n.flags & TensorFlag.LOSS)) zeroed(this.context._resolve(acc), `the gradient of ${n.describe()}`);
      if (n.op === Op.OPT_STEP_ADAMW) for (const m of [n.src[2], n.src[3]]) zeroed(m, `AdamW's moment ${m.describe()}`);
    }
    s.wsp_ggml_graph_reset(this.pointer);
    return this;
  }

  /**
   * @ignore @internal Checks the index values the graph's index ops will read
   * (`get_rows`, `set_rows`, `add_id`, `mul_mat_id`, `get_rows_back`,
   * `ssm_scan`; see indices.ts): before every compute, on every path.
   *
   * @throws {BoundsError} for an index out of range
   * @throws {UnsupportedOpError} for computed indices that cannot be bounded
   */
  _checkIndices(what: string): void {
    this.#sync();
    const plan = this.#indexPlan ??= planIndexChecks(what, this.#nodes);
    if (plan.length !== 0) scanIndices(what, plan);
  }

  #preflight(): void {
    for (const c of this.context._reachable()) c._pool("compute: a context the graph uses");
    // Every time, not once: a backend buffer or a scheduler freed since the last compute unallocates its tensors.
    for (const t of this.#leafs) checkData("compute", t);
    for (const t of this.#nodes) checkData("compute", t);
    if (this.#checked) return;
    const rt = runtime();
    const backend = rt.cpuBackend();
    for (const t of this.#nodes) {
      if (!cpuHandlesTypes(t) || !rt.lib.symbols.wsp_ggml_backend_supports_op(backend, t._ptr)) {
        const name = ffi.readCString(rt.lib.symbols.wsp_ggml_op_desc(t._ptr));
        const why = cpuKernelRefusal(t);
        throw new UnsupportedOpError(`compute: the CPU backend does not support ${name} on ${t.describe()} (sources: ${t.src.map((s) => s.describe()).join(", ")})${why ? `: ${why}` : ""}`);
      }
    }
    this.#checked = true;
  }

  /**
   * Computes the graph on the CPU backend (`wsp_ggml_backend_graph_compute`).
   * Returns this graph.
   *
   * @throws {NotAllocatedError} when a tensor of the graph has no data
   * @throws {UnsupportedOpError} when the CPU backend cannot compute a node
   * @throws {ComputeError} when ggml reports a failure
   */
  compute(options: ComputeOptions = {}): this {
    const nThreads = int("compute: nThreads", options.nThreads ?? defaultThreads({ fresh: false }));
    if (nThreads < 1 || nThreads > MAX_N_THREADS) throw new ArgumentError(`compute: nThreads must be in 1..${MAX_N_THREADS}, got ${nThreads}`);
    checkThreads("compute", nThreads);
    this.context._pool("compute");
    this._idle("compute");
    this.#sync();
    if (this.#nodes.length === 0) return this;
    this.#preflight();
    this._checkIndices("compute");
    const rt = runtime();
    const s = rt.lib.symbols;
    const backend = rt.cpuBackend();
    s.wsp_ggml_backend_cpu_set_n_threads(backend, nThreads);
    const status = s.wsp_ggml_backend_graph_compute(backend, this.#ptr);
    if (status !== Status.SUCCESS) throw new ComputeError(`compute failed: ${ffi.readCString(s.wsp_ggml_status_to_string(status))}`, status);
    return this;
  }
}
