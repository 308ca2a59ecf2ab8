/**
 * {@linkcode Context}: a ggml context (`wsp_ggml_init`) and the pool its
 * tensors and graphs live in.
 *
 * The pool is JS memory (an `ArrayBuffer` handed to ggml as `mem_buffer`), so
 * tensor properties are read through the generated layout without a native
 * call, the garbage collector knows how much memory a context holds, and
 * {@linkcode Tensor.view} arrays are detached, not left dangling, when the
 * context is freed.
 *
 * @module
 */
import { INTERNAL } from "./brand.ts";
import { DEFAULT_GRAPH_SIZE, layouts, MAX_DIMS, MEM_ALIGN, Type } from "../ffi/bindings.gen.ts";
// The ops' parameter types (the generated interface at the end).
import type { GluOp, OpPool, ScaleMode, SortOrder, UnaryOp } from "../ffi/bindings.gen.ts";
import { bool, member, size as sizeArg } from "./args.ts";
import { ArgumentError, BusyError, ContextOutOfMemoryError, GgmlError, ShapeError, UseAfterFreeError } from "./errors.ts";
import { Graph } from "./graph.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { checkNewTensor } from "./checks.ts";
import { type Operand, Ops } from "./ops.gen.ts";
import { allocPool, initContext, retirePool, runtime } from "../runtime/runtime.ts";
import { addressOf } from "../ffi/common.ts";
import type { Handle } from "../ffi/types.ts";
import type { WspGgml } from "../ffi/open.ts";
import { i64At, nbytesAt, Tensor } from "./tensor.ts";

/** Options of {@linkcode Context}. */
export interface ContextOptions {
  /**
   * Bytes of the pool that holds the tensors (structs and, unless `noAlloc`,
   * data) and graphs. The pool is a JS `ArrayBuffer`, so it is bounded by the
   * runtime's largest one (4 GiB on Bun); larger weights belong in a `noAlloc`
   * context whose tensors live in backend buffers.
   */
  readonly memSize: number;
  /** Create tensors without data (their memory is allocated elsewhere, e.g. by a backend). */
  readonly noAlloc?: boolean;
}

interface State {
  ptr: number;
  buffer: ArrayBuffer | null;
  readonly memSize: number;
  /** Whether the pool holds object headers only (its memory can serve the next context). */
  readonly noAlloc: boolean;
  /** Whether a JS view of the pool left the library (`Tensor.view()` and the like): then it is detached when freed, never reused. */
  exposed: boolean;
}

const stats = { contexts: 0, poolBytes: 0, finalized: 0 };

/** Counts of native memory held by contexts, for diagnostics and tests. */
export interface MemoryStats {
  /** Contexts whose native side is not freed yet. */
  readonly contexts: number;
  /** Bytes of their pools. */
  readonly poolBytes: number;
  /** Contexts freed by the garbage collector because nothing freed them. */
  readonly finalized: number;
}

/** How many contexts are alive and how many the finalizer freed. */
export function memoryStats(): MemoryStats {
  return { ...stats };
}

/** Detaches `buffer`: every typed array over it becomes empty. */
/**
 * Bytes a tensor's header takes in a context's pool (`wsp_ggml_tensor_overhead`):
 * size a `noAlloc` context as `n × tensorOverhead()` plus its graphs.
 */
export function tensorOverhead(): number {
  return Number(runtime().lib.symbols.wsp_ggml_tensor_overhead());
}

/**
 * Bytes a graph of `size` nodes takes in a context's pool, with gradient
 * slots when `grads` (`wsp_ggml_graph_overhead_custom`).
 */
export function graphOverheadCustom(size: number, grads = false): number {
  sizeArg("graphOverheadCustom: size", size);
  bool("graphOverheadCustom: grads", grads);
  return Number(runtime().lib.symbols.wsp_ggml_graph_overhead_custom(size, grads));
}

/** Bytes a default graph (`DEFAULT_GRAPH_SIZE` nodes, no gradients) takes (`wsp_ggml_graph_overhead`). */
export function graphOverhead(): number {
  return Number(runtime().lib.symbols.wsp_ggml_graph_overhead());
}

/**
 * The most objects one op may create. Every op of ggml.c creates one
 * tensor, a few composite ones (conv, top-k, …) a handful; the measured
 * maximum is tested against this bound (`tests/ops.test.ts`).
 */
export const MAX_OP_OBJECTS = 64;

/** @ignore @internal The largest number of objects a measured op created (for the bound's test). */
export const opStats = { maxObjects: 0 };

// struct wsp_ggml_object (ggml.c, not a public header): offs, size, next, type. Its size
// (tensorOverhead() minus the tensor struct) is checked by tests/api.test.ts.
const OBJ_OFFS = 0, OBJ_SIZE = 8, OBJ_NEXT = 16, OBJ_TYPE = 24;
const OBJECT_TYPE_TENSOR = 0;
let scratchWords: Int32Array | undefined;
const T = layouts.wsp_ggml_tensor.fields;

/**
 * Runs `call` in the scratch context (`no_alloc`) and measures what it
 * created by walking ggml's object list in the pool (the scratch pool is JS
 * memory), then resets the scratch. `withData` adds the data, padded as
 * ggml pads it, of each tensor that is not a view.
 */
function measureInScratch(op: string, call: (ctx: number) => Handle, withData: boolean): { bytes: number; objects: number } {
  const rt = runtime();
  const { ptr, view, base } = rt.scratch;
  const v = scratchWords ??= new Int32Array(view.buffer, view.byteOffset, view.byteLength >> 2);
  // The scratch was reset: the first object, if any, will be written at offset 0.
  v[OBJ_OFFS >> 2] = v[(OBJ_OFFS >> 2) + 1] = 0;
  try {
    if (addressOf(call(ptr)) === 0) throw new GgmlError("ARGUMENT", `${op} returned NULL`);
    let bytes = 0, objects = 0;
    if (i64At(v, OBJ_OFFS) === 0) return { bytes, objects };
    for (let o = 0;;) {
      objects++;
      const offs = i64At(v, o + OBJ_OFFS);
      bytes = offs + i64At(v, o + OBJ_SIZE);
      if (v[(o + OBJ_TYPE) >> 2] === OBJECT_TYPE_TENSOR) {
        // A negative ne (from an op's size formula) makes ggml's data size a wrapped size_t: the
        // object's bound would wrap past the pool's end check and the next tensor overwrite this
        // pool's earlier ones. The scratch is no_alloc (headers only), so it is safe to see here.
        const ne = (offs + T.ne.offset) >> 2;
        if ((v[ne + 1] | v[ne + 3] | v[ne + 5] | v[ne + 7]) < 0) {
          throw new ShapeError(`${op}: the result would have a negative dimension [${[0, 8, 16, 24].map((k) => i64At(v, offs + T.ne.offset + k)).join(", ")}]`);
        }
        // Sizes in doubles (no wrap); an unsafe figure is over any pool.
        if (withData && i64At(v, offs + T.view_src.offset) === 0) {
          const n = nbytesAt(v, offs);
          bytes += Number.isSafeInteger(n) ? pad(n, MEM_ALIGN) : Infinity;
        }
      }
      const next = i64At(v, o + OBJ_NEXT);
      if (next === 0) break;
      o = next - base;
    }
    // Objects are laid out back to back: the last one's end is the bytes used (wsp_ggml_used_mem).
    return { bytes, objects };
  } finally {
    rt.lib.symbols.wsp_ggml_reset(ptr);
  }
}


/**
 * Frees the native context. An explicit free also detaches the pool, so that
 * every `view()` of it becomes unusable (a `noAlloc` pool, headers only, is
 * kept for the next context of its size); after a collection nothing but
 * such views can still refer to the pool, which is JS memory that ggml does
 * not free: they keep it (and its data) until they go too.
 */
function release(state: State, detachViews: boolean): void {
  if (state.ptr === 0) return;
  runtime().lib.symbols.wsp_ggml_free(state.ptr);
  state.ptr = 0;
  stats.contexts--;
  stats.poolBytes -= state.memSize;
  if (state.buffer && detachViews) retirePool(state.buffer, state.noAlloc && !state.exposed);
  state.buffer = null;
}

const finalizer = new FinalizationRegistry<State>((state) => {
  if (state.ptr !== 0) stats.finalized++;
  release(state, false);
});

/** Reverses `list[start..]` in place. */
function reverseFrom(list: unknown[], start: number): void {
  for (let i = start, j = list.length - 1; i < j; i++, j--) [list[i], list[j]] = [list[j], list[i]];
}

const pad = (n: number, align: number) => Math.ceil(n / align) * align;

/**
 * A ggml context: the owner of its tensors and graphs. Free it with
 * {@linkcode free} or `using`; a context nothing refers to any more is freed
 * by the garbage collector.
 *
 * ```ts
 * using ctx = new Context({ memSize: 16 << 20 });
 * const a = ctx.newTensor1d(Type.F32, 3).set(new Float32Array([1, 2, 3]));
 * ```
 *
 * Ops are methods named after ggml's functions (`wsp_ggml_mul_mat` →
 * `ctx.mulMat(a, b)`); their result is created in this context.
 */
export class Context extends Ops {
  readonly #state: State;
  #view: DataView;
  /**
   * @ignore @internal The pool as little-endian 32-bit words, unchecked (empty once
   * freed): for the ops' checks, which run after `_live`/`_operand` found
   * every operand's context alive. Anything else goes through {@linkcode _words}.
   */
  _w: Int32Array;
  readonly #base: number;
  readonly #noAlloc: boolean;
  readonly #h: Handle;
  /** Free bytes that hold the objects of any op (MAX_OP_OBJECTS tensor headers). */
  readonly #room: number;
  readonly #handles: WspGgml["handles"];
  /** `sizeof(struct wsp_ggml_object)`. */
  readonly #objectSize: number;
  /**
   * One Tensor object per native tensor, in pool order: the sorted
   * `#tensors`, then the newer ones chained from `#last` by `_prev`. ggml
   * appends objects to the pool, so a new tensor comes last and is only
   * chained (on V8 an array `push` of a new object measured ~17 ns, a fifth
   * of an op's JS time; a field store is ~1). The chain joins the array
   * when a tensor is looked up ({@linkcode #index}); a tensor first seen
   * later (made natively) is then found or inserted by binary search.
   */
  #tensors: Tensor[] = [];
  #last: Tensor | undefined;
  readonly #deps = new Set<Context>();
  /** The context last added to #deps. */
  #lastDep: Context | undefined;
  /** What holds this context's tensors' data outside its pool (buffers, allocators): kept from the garbage collector while the context lives. */
  #kept: Set<object> | undefined;
  #holds = 0;
  #lastObject = -1;
  /**
   * Ops that can run directly without measuring the pool again: each takes
   * at most #room bytes, so after finding `free` bytes, floor(free / #room)
   * ops fit. Anything else that may allocate in the pool (`_make`, graphs,
   * the raw pointer handed out) sets it to 0.
   */
  #spare = 0;

  /**
   * Creates a context (`wsp_ggml_init`), loading the library on first use.
   *
   * @throws {ArgumentError} for a memSize that is not a non-negative integer or cannot be allocated
   */
  constructor(options: ContextOptions) {
    super();
    if (options === null || typeof options !== "object") throw new ArgumentError("Context needs options: { memSize }");
    const requested = sizeArg("Context: memSize", options.memSize);
    const noAlloc = bool("Context: noAlloc", options.noAlloc ?? false);
    const rt = runtime();
    const memSize = pad(Math.max(requested, MEM_ALIGN), MEM_ALIGN);
    let pool;
    try {
      pool = allocPool(memSize, noAlloc);
    } catch (e) {
      throw new ArgumentError(`memSize ${memSize} cannot be allocated: ${(e as Error).message}`);
    }
    // A recycled pool still holds its last context's objects: usedMem reads a zero first header as "no object yet".
    if (pool.recycled) new Uint8Array(pool.buffer, pool.offset, rt.objectSize).fill(0);
    const h = initContext(rt.lib, pool.base, memSize, noAlloc, true);
    const ptr = addressOf(h);
    if (ptr === 0) throw new GgmlError("OUT_OF_MEMORY", "wsp_ggml_init failed");
    this.#h = h;
    this.#room = MAX_OP_OBJECTS * (rt.objectSize + rt.tensorSize);
    this.#handles = rt.lib.handles;
    this.#objectSize = rt.objectSize;
    this.#state = { ptr, buffer: pool.buffer, memSize, noAlloc, exposed: false };
    this.#view = pool.view;
    // Tensor fields are read as 32-bit words: typed-array reads are several times faster than DataView's on Bun.
    this._w = new Int32Array(pool.buffer, pool.view.byteOffset, memSize >> 2);
    this.#base = pool.base;
    this.#noAlloc = noAlloc;
    stats.contexts++;
    stats.poolBytes += memSize;
    finalizer.register(this, this.#state, this);
  }

  /** @ignore @internal The native `struct wsp_ggml_context *` (throws once freed). */
  get _ptr(): number {
    this._pool("context");
    this.#spare = 0; // the caller may allocate in the pool natively
    return this.#state.ptr;
  }

  /** The native address of the context (for raw bindings; valid until freed). */
  get pointer(): number {
    return this._ptr;
  }

  /** Whether {@linkcode free} has run. */
  get freed(): boolean {
    return this.#state.ptr === 0;
  }

  /** Bytes of the pool (`wsp_ggml_get_mem_size`). */
  get memSize(): number {
    this._pool("memSize");
    return this.#state.memSize;
  }

  /** Bytes of the pool in use (`wsp_ggml_used_mem`). */
  get usedMem(): number {
    // wsp_ggml_used_mem, read from the pool (JS memory) instead of a call: objects are only
    // appended (this API never resets a context), so the walk resumes at the last one seen.
    const v = this._words("usedMem");
    let o = this.#lastObject;
    if (o < 0) {
      if (i64At(v, OBJ_OFFS) === 0) return 0; // a fresh pool is zeroed: no object yet
      o = 0;
    }
    for (let next = i64At(v, o + OBJ_NEXT); next !== 0; next = i64At(v, o + OBJ_NEXT)) o = next - this.#base;
    this.#lastObject = o;
    return i64At(v, o + OBJ_OFFS) + i64At(v, o + OBJ_SIZE);
  }

  /** Whether tensors are created without data. */
  get noAlloc(): boolean {
    this._pool("noAlloc");
    return this.#noAlloc;
  }

  /**
   * Frees the context and everything in it (`wsp_ggml_free`). Idempotent: a
   * second call does nothing. Afterwards every use of the context, its
   * tensors and graphs throws {@linkcode UseAfterFreeError}, and every
   * `view()` of its memory is detached.
   */
  free(): void {
    if (this.#state.ptr === 0) return;
    if (this.#holds > 0) throw new BusyError("free: a graph using this context is being computed asynchronously (await graphComputeAsync first)");
    finalizer.unregister(this);
    this.#tensors = [];
    this.#last = undefined;
    this.#deps.clear();
    this.#lastDep = undefined;
    this.#kept = undefined;
    release(this.#state, true);
    this.#view = new DataView(new ArrayBuffer(0));
    this._w = new Int32Array(0);
  }

  /** Frees the context (`using ctx = new Context(…)`). */
  [Symbol.dispose](): void {
    this.free();
  }

  /** @ignore @internal Counts asynchronous computes that use this context (`free` is refused while any runs). */
  _hold(delta: 1 | -1): void {
    this.#holds += delta;
  }

  /** @ignore @internal Whether an asynchronous compute uses this context. */
  get _busy(): boolean {
    return this.#holds > 0;
  }

  /** @ignore @internal The pool's bytes, or {@linkcode UseAfterFreeError} once freed. */
  _pool(what: string): DataView {
    if (this.#state.ptr === 0) throw new UseAfterFreeError(`${what}: its context was freed`);
    return this.#view;
  }

  /** @ignore @internal The pool as little-endian 32-bit words, or {@linkcode UseAfterFreeError} once freed. */
  _words(what: string): Int32Array {
    if (this.#state.ptr === 0) throw new UseAfterFreeError(`${what}: its context was freed`);
    return this._w;
  }

  /** @ignore @internal The native address of the pool's first byte. */
  get _base(): number {
    return this.#base;
  }

  /**
   * @ignore @internal An upper bound of the tensors in this context: every tensor
   * object takes at least {@linkcode tensorOverhead} bytes of the pool.
   */
  get _maxTensors(): number {
    return this.#state.ptr === 0 ? 0 : Math.floor(this.usedMem / (runtime().objectSize + runtime().tensorSize));
  }

  /** @ignore @internal Whether `ptr` points into this context's pool. */
  _contains(ptr: number, length = 0): boolean {
    return this.#state.ptr !== 0 && ptr >= this.#base && ptr + length <= this.#base + this.#state.memSize;
  }

  /** @ignore @internal The tensor object for a tensor of this pool (one object per tensor). */
  _wrap(ptr: number): Tensor {
    const off = ptr - this.#base, last = this.#last;
    if (last === undefined || last._off < off) {
      const t = new Tensor(this, off, last, INTERNAL);
      this.#last = t;
      // The newest tensor's object header is where usedMem's walk can resume (ggml puts it right before the struct).
      if (off - this.#objectSize > this.#lastObject) this.#lastObject = off - this.#objectSize;
      return t;
    }
    return this.#wrapEarlier(off);
  }

  /** {@linkcode _wrap} for a tensor not after the last one known (found or inserted by binary search); kept apart so that `_wrap` stays small enough to inline. */
  #wrapEarlier(off: number): Tensor {
    const list = this.#index(), n = list.length;
    let lo = 0, hi = n; // the first index whose offset is >= off
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list[mid]._off < off) lo = mid + 1;
      else hi = mid;
    }
    if (lo < n && list[lo]._off === off) return list[lo];
    const t = new Tensor(this, off, undefined, INTERNAL);
    list.splice(lo, 0, t);
    return t;
  }

  /** #tensors with the chained tensors appended: every Tensor of this context, in pool order. */
  #index(): Tensor[] {
    const list = this.#tensors, known = list.length > 0 ? list[list.length - 1] : undefined;
    if (this.#last === known) return list;
    const start = list.length;
    for (let t = this.#last; t !== known; t = t!._prev) list.push(t!);
    reverseFrom(list, start); // the chain runs newest first
    return list;
  }

  /** @ignore @internal This context and the contexts its tensors refer to, transitively. */
  _reachable(): Set<Context> {
    const seen = new Set<Context>([this]);
    for (const c of seen) for (const d of c.#deps) seen.add(d);
    return seen;
  }

  /** @ignore @internal Records that this context's tensors refer to `other`'s. */
  _depend(other: Context): void {
    // Ops over another context's tensors record the same one again and again: one comparison instead of a Set insert.
    if (other === this || other === this.#lastDep) return;
    this.#deps.add(other);
    this.#lastDep = other;
  }

  /** @ignore @internal Keeps `holder` (a buffer or allocator holding this context's tensors' data) alive while this context is. */
  _keep(holder: object): void {
    (this.#kept ??= new Set()).add(holder);
  }

  /** @ignore @internal The tensor object for a tensor of this context or one it refers to. */
  _resolve(ptr: number): Tensor {
    if (this._contains(ptr)) return this._wrap(ptr); // the common case, without building the reachable set
    // A pointer into a freed context's pool is a use after free even when a newer context's pool took that memory.
    const reachable = this._reachable();
    for (const c of reachable) if (c.#state.ptr === 0 && ptr >= c.#base && ptr < c.#base + c.#state.memSize) c._pool("tensor");
    for (const c of reachable) if (c._contains(ptr)) return c._wrap(ptr);
    for (const c of reachable) c._pool("tensor");
    throw new UseAfterFreeError(`tensor 0x${ptr.toString(16)} belongs to no live context`);
  }

  /** @ignore @internal The JS memory holding `[data, data + length)`. */
  _locate(data: number, length: number, what: string): { buffer: ArrayBuffer; offset: number } {
    for (const c of this._reachable()) {
      if (c.#state.ptr === 0) throw new UseAfterFreeError(`${what}: the tensor's data belongs to a freed context`);
      if (c._contains(data, length)) {
        c.#state.exposed = true;
        return { buffer: c.#state.buffer!, offset: c.#view.byteOffset + (data - c.#base) };
      }
    }
    throw new GgmlError("NOT_ALLOCATED", `${what}: the data at 0x${data.toString(16)} is not in a context's pool`);
  }

  /** @ignore @internal The native context as a handle (`NativeLibrary.handles`). */
  protected override get _h(): Handle {
    return this.#h;
  }

  /** @ignore @internal Checks that the context is alive; returns the native calls taking handles. */
  protected override _live(op: string): WspGgml["handles"] {
    if (this.#state.ptr === 0) this._pool(op);
    return this.#handles;
  }

  /** @ignore @internal Checks that an operand is a live tensor (or null where allowed). */
  protected override _operand(op: string, name: string, t: Tensor | null, nullable = false): void {
    if (t instanceof Tensor) {
      if (t.context.#state.ptr === 0) t.context._pool(`${op}: ${name}`);
      return;
    }
    if (t === null && nullable) return;
    throw new ArgumentError(`${op}: ${name} must be a Tensor, got ${t === null ? "null" : typeof t}`);
  }

  /**
   * @ignore @internal Whether an op can run directly: in a `noAlloc` context every
   * object an op creates is a tensor header, and no op creates more than
   * {@linkcode MAX_OP_OBJECTS} (see {@linkcode _make}).
   */
  protected override _roomy(): boolean {
    if (this.#spare > 0) {
      this.#spare--;
      return true;
    }
    if (!this.#noAlloc) return false;
    const fit = Math.floor((this.#state.memSize - this.usedMem) / this.#room);
    if (fit === 0) return false;
    this.#spare = fit - 1;
    return true;
  }

  /** @ignore @internal Wraps the result of an op that ran directly; records the contexts of its operands. */
  protected override _adopt(op: string, h: Handle, a?: Tensor | null, b?: Tensor | null, c?: Tensor | null, d?: Tensor | null, e?: Tensor | null, f?: Tensor | null, g?: Tensor | null, i?: Tensor | null): Tensor {
    const ptr = addressOf(h);
    if (ptr === 0) throw new GgmlError("ARGUMENT", `${op} returned NULL`);
    if (a && a.context !== this) this._depend(a.context);
    if (b && b.context !== this) this._depend(b.context);
    if (c) this.#dependAll([c, d, e, f, g, i]);
    return this._wrap(ptr);
  }

  /** Records the contexts of an op's third and later operands (rare: kept out of `_adopt`). */
  #dependAll(operands: readonly (Tensor | null | undefined)[]): void {
    for (const t of operands) if (t && t.context !== this) this._depend(t.context);
  }

  /** @ignore @internal Checks the context and the operands of an op; returns the native symbols. */
  protected override _use(op: string, ...operands: Operand[]): ReturnType<typeof runtime>["lib"]["symbols"] {
    this._pool(op);
    for (const [name, t, nullable] of operands) {
      if (t === null && nullable) continue;
      if (!(t instanceof Tensor)) throw new ArgumentError(`${op}: ${name} must be a Tensor, got ${t === null ? "null" : typeof t}`);
      if (t.context.freed) t.context._pool(`${op}: ${name}`); // the message only when it throws
    }
    return runtime().lib.symbols;
  }

  /**
   * @ignore @internal Runs an op that creates objects in the pool, never letting
   * ggml abort on a full pool. In a `noAlloc` context every object an op
   * creates is a tensor header of {@linkcode tensorOverhead} bytes, and no op
   * creates more than {@linkcode MAX_OP_OBJECTS}: with that much room the op
   * runs directly. Otherwise it runs first in the scratch context, whose
   * objects are measured in JS (headers, and the data a tensor that is not a
   * view would take), and then here if it fits.
   */
  protected override _make(op: string, call: (ctx: number) => Handle, ...operands: (Tensor | null)[]): Tensor {
    this.#spare = 0;
    const free = this.#state.memSize - this.usedMem;
    if (!this.#noAlloc || free < this.#room) {
      const { bytes, objects } = measureInScratch(op, call, !this.#noAlloc);
      if (objects > opStats.maxObjects) opStats.maxObjects = objects;
      if (bytes > free) throw new ContextOutOfMemoryError(op, bytes, free);
    }
    const h = call(this.#state.ptr), ptr = addressOf(h);
    if (ptr === 0) throw new GgmlError("ARGUMENT", `${op} returned NULL`);
    for (const t of operands) if (t) this._depend(t.context);
    return this._wrap(ptr);
  }

  /**
   * A new tensor of `type` with up to 4 dimensions (`wsp_ggml_new_tensor`).
   *
   * @param type the element type
   * @param shape elements per dimension, innermost first
   */
  newTensor(type: Type, shape: readonly number[]): Tensor {
    this._use("newTensor");
    member("newTensor: type", type, Type, "Type");
    if (!Array.isArray(shape) || shape.length < 1 || shape.length > MAX_DIMS) {
      throw new ArgumentError(`newTensor: shape must have 1 to ${MAX_DIMS} dimensions`);
    }
    checkNewTensor("newTensor", type, shape);
    const ne = BigInt64Array.from(shape, (n) => BigInt(n));
    const s = runtime().lib.symbols;
    const t = this._make("newTensor", (c) => s.wsp_ggml_new_tensor(c, type, shape.length, ffi.addressOf(ne)));
    keepAlive(ne);
    return t;
  }

  /** The tensors of this context, in creation order (`wsp_ggml_get_first_tensor` / `_next_tensor`). */
  *tensors(): IterableIterator<Tensor> {
    const s = runtime().lib.symbols;
    for (let t = s.wsp_ggml_get_first_tensor(this._ptr); t !== 0; t = s.wsp_ggml_get_next_tensor(this._ptr, t)) {
      yield this._wrap(t);
    }
  }

  /** The tensor named `name`, or null (`wsp_ggml_get_tensor`). */
  getTensor(name: string): Tensor | null {
    if (typeof name !== "string") throw new ArgumentError("getTensor: name must be a string");
    for (const t of this.tensors()) if (t.name === name) return t;
    return null;
  }

  /** A graph of up to 2048 nodes (`wsp_ggml_new_graph`). */
  newGraph(): Graph {
    return this.newGraphCustom(DEFAULT_GRAPH_SIZE, false);
  }

  /**
   * A graph of up to `size` nodes and `size` leafs, with gradient slots when
   * `grads` (`wsp_ggml_new_graph_custom`).
   */
  newGraphCustom(size: number, grads = false): Graph {
    this._use("newGraphCustom");
    sizeArg("newGraphCustom: size", size);
    bool("newGraphCustom: grads", grads);
    if (size < 1 || size > 2 ** 30) throw new ArgumentError(`newGraphCustom: size must be in 1..2^30, got ${size}`);
    const s = runtime().lib.symbols;
    const needed = Number(s.wsp_ggml_graph_overhead_custom(size, grads));
    const used = this.usedMem;
    if (used + needed > this.#state.memSize) throw new ContextOutOfMemoryError("newGraphCustom", needed, this.#state.memSize - used);
    this.#spare = 0;
    return new Graph(this, s.wsp_ggml_new_graph_custom(this.#state.ptr, size, grads), size, grads, INTERNAL);
  }
}

// The ops, declared on Context so that the API reference lists them on its page.
// ---- generated by codegen/emit_ops.ts (`npm run codegen`); do not edit until the end marker ----
/**
 * The tensor ops of ggml.h, one method per function (`wsp_ggml_mul_mat` →
 * `mulMat`), each with ggml's comment and C declaration. An op checks its
 * arguments and creates its result in this context; nothing is computed until
 * a graph holding the result is.
 */
export interface Context {
  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_new_tensor_1d(struct wsp_ggml_context *ctx, enum wsp_ggml_type type, int64_t ne0)`
   */
  newTensor1d(type: Type, ne0: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_new_tensor_2d(struct wsp_ggml_context *ctx, enum wsp_ggml_type type, int64_t ne0, int64_t ne1)`
   */
  newTensor2d(type: Type, ne0: number, ne1: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_new_tensor_3d(struct wsp_ggml_context *ctx, enum wsp_ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2)`
   */
  newTensor3d(type: Type, ne0: number, ne1: number, ne2: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_new_tensor_4d(struct wsp_ggml_context *ctx, enum wsp_ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)`
   */
  newTensor4d(type: Type, ne0: number, ne1: number, ne2: number, ne3: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_dup_tensor(struct wsp_ggml_context *ctx, const struct wsp_ggml_tensor *src)`
   */
  dupTensor(src: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_view_tensor(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *src)`
   */
  viewTensor(src: Tensor): Tensor;

  /**
   * operations on tensors with backpropagation
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_dup(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  dup(a: Tensor): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_dup_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  dupInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_add(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  add(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_add_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  addInplace(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_add_cast(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, enum wsp_ggml_type type)`
   */
  addCast(a: Tensor, b: Tensor, type: Type): Tensor;

  /**
   * dst[i0, i1, i2] = a[i0, i1, i2] + b[i0, ids[i1, i2]]
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_add_id(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *ids)`
   */
  addId(a: Tensor, b: Tensor, ids: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_add1(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  add1(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_add1_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  add1Inplace(a: Tensor, b: Tensor): Tensor;

  /**
   * ```text
   * dst = a
   * view(dst, nb1, nb2, nb3, offset) += b
   * return dst
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_acc(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset)`
   */
  acc(a: Tensor, b: Tensor, nb1: number, nb2: number, nb3: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_acc_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset)`
   */
  accInplace(a: Tensor, b: Tensor, nb1: number, nb2: number, nb3: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sub(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  sub(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sub_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  subInplace(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_mul(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  mul(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_mul_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  mulInplace(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_div(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  div(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_div_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  divInplace(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sqr(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sqr(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sqr_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sqrInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sqrt(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sqrt(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sqrt_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sqrtInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_log(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  log(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_log_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  logInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sin(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sin(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sin_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sinInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_cos(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  cos(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_cos_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  cosInplace(a: Tensor): Tensor;

  /**
   * return scalar
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_sum(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sum(a: Tensor): Tensor;

  /**
   * sums along rows, with input shape [a,b,c,d] return shape [1,b,c,d]
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_sum_rows(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sumRows(a: Tensor): Tensor;

  /**
   * mean along rows
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_mean(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  mean(a: Tensor): Tensor;

  /**
   * argmax along rows
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_argmax(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  argmax(a: Tensor): Tensor;

  /**
   * count number of equal elements in a and b
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_count_equal(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  countEqual(a: Tensor, b: Tensor): Tensor;

  /**
   * ```text
   * if a is the same shape as b, and a is not parameter, return a
   * otherwise, return a new tensor: repeat(a) to fit in b
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_repeat(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  repeat(a: Tensor, b: Tensor): Tensor;

  /**
   * repeat a to the specified shape
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_repeat_4d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)`
   */
  repeat4d(a: Tensor, ne0: number, ne1: number, ne2: number, ne3: number): Tensor;

  /**
   * sums repetitions in a into shape of b
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_repeat_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  repeatBack(a: Tensor, b: Tensor): Tensor;

  /**
   * ```text
   * concat a and b along dim
   * used in stable-diffusion
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_concat(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int dim)`
   */
  concat(a: Tensor, b: Tensor, dim: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_abs(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  abs(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_abs_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  absInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sgn(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sgn(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sgn_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sgnInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_neg(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  neg(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_neg_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  negInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_step(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  step(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_step_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  stepInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_tanh(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  tanh(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_tanh_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  tanhInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_elu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  elu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_elu_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  eluInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_relu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  relu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_leaky_relu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float negative_slope, _Bool inplace)`
   */
  leakyRelu(a: Tensor, negativeSlope: number, inplace: boolean): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_relu_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  reluInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sigmoid(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sigmoid(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_sigmoid_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  sigmoidInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_gelu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  gelu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_gelu_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  geluInplace(a: Tensor): Tensor;

  /**
   * ```text
   * GELU using erf (error function) when possible
   * some backends may fallback to approximation based on Abramowitz and Stegun formula
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_gelu_erf(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  geluErf(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_gelu_erf_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  geluErfInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_gelu_quick(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  geluQuick(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_gelu_quick_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  geluQuickInplace(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_silu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  silu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_silu_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  siluInplace(a: Tensor): Tensor;

  /**
   * ```text
   * a - x
   * b - dy
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_silu_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  siluBack(a: Tensor, b: Tensor): Tensor;

  /**
   * hardswish(x) = x * relu6(x + 3) / 6
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_hardswish(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  hardswish(a: Tensor): Tensor;

  /**
   * hardsigmoid(x) = relu6(x + 3) / 6
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_hardsigmoid(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  hardsigmoid(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_exp(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  exp(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_exp_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  expInplace(a: Tensor): Tensor;

  /**
   * ```text
   * gated linear unit ops
   * A: n columns, r rows,
   * result is n / 2 columns, r rows,
   * expects gate in second half of row, unless swapped is true
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_glu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_glu_op op, _Bool swapped)`
   */
  glu(a: Tensor, op: GluOp, swapped: boolean): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_reglu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  reglu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_reglu_swapped(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  regluSwapped(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  geglu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_swapped(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  gegluSwapped(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_swiglu(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  swiglu(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_swiglu_swapped(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  swigluSwapped(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_erf(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  gegluErf(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_erf_swapped(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  gegluErfSwapped(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_quick(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  gegluQuick(a: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_quick_swapped(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  gegluQuickSwapped(a: Tensor): Tensor;

  /**
   * ```text
   * A: n columns, r rows,
   * B: n columns, r rows,
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_glu_split(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, enum wsp_ggml_glu_op op)`
   */
  gluSplit(a: Tensor, b: Tensor, op: GluOp): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_reglu_split(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  regluSplit(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_split(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  gegluSplit(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_swiglu_split(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  swigluSplit(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_erf_split(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  gegluErfSplit(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_geglu_quick_split(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  gegluQuickSplit(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_swiglu_oai(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, float alpha, float limit)`
   */
  swigluOai(a: Tensor, b: Tensor, alpha: number, limit: number): Tensor;

  /**
   * normalize along rows
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_norm(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float eps)`
   */
  norm(a: Tensor, eps: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_norm_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float eps)`
   */
  normInplace(a: Tensor, eps: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rms_norm(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float eps)`
   */
  rmsNorm(a: Tensor, eps: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rms_norm_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float eps)`
   */
  rmsNormInplace(a: Tensor, eps: number): Tensor;

  /**
   * ```text
   * group normalize along ne0*ne1*n_groups
   * used in stable-diffusion
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_group_norm(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int n_groups, float eps)`
   */
  groupNorm(a: Tensor, nGroups: number, eps: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_group_norm_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int n_groups, float eps)`
   */
  groupNormInplace(a: Tensor, nGroups: number, eps: number): Tensor;

  /**
   * ```text
   * l2 normalize along rows
   * used in rwkv v7
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_l2_norm(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float eps)`
   */
  l2Norm(a: Tensor, eps: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_l2_norm_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float eps)`
   */
  l2NormInplace(a: Tensor, eps: number): Tensor;

  /**
   * ```text
   * a - x
   * b - dy
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_rms_norm_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, float eps)`
   */
  rmsNormBack(a: Tensor, b: Tensor, eps: number): Tensor;

  /**
   * ```text
   * A: k columns, n rows => [ne03, ne02, n, k]
   * B: k columns, m rows  (i.e. we transpose it internally) => [ne03 * x, ne02 * y, m, k]
   * result is n columns, m rows => [ne03 * x, ne02 * y, m, n]
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_mul_mat(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  mulMat(a: Tensor, b: Tensor): Tensor;

  /**
   * indirect matrix multiplication
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_mul_mat_id(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *as, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *ids)`
   */
  mulMatId(as: Tensor, b: Tensor, ids: Tensor): Tensor;

  /**
   * ```text
   * A: m columns, n rows,
   * B: p columns, n rows,
   * result is m columns, p rows
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_out_prod(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  outProd(a: Tensor, b: Tensor): Tensor;

  /**
   * operations on tensors without backpropagation
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_scale(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float s)`
   */
  scale(a: Tensor, s: number): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_scale_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float s)`
   */
  scaleInplace(a: Tensor, s: number): Tensor;

  /**
   * x = s * a + b
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_scale_bias(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float s, float b)`
   */
  scaleBias(a: Tensor, s: number, b: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_scale_bias_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float s, float b)`
   */
  scaleBiasInplace(a: Tensor, s: number, b: number): Tensor;

  /**
   * b -> view(a,offset,nb1,nb2,3), return modified a
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_set(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset)`
   */
  set(a: Tensor, b: Tensor, nb1: number, nb2: number, nb3: number, offset: number): Tensor;

  /**
   * b -> view(a,offset,nb1,nb2,3), return view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_set_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset)`
   */
  setInplace(a: Tensor, b: Tensor, nb1: number, nb2: number, nb3: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_set_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t offset)`
   */
  set1d(a: Tensor, b: Tensor, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_set_1d_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t offset)`
   */
  set1dInplace(a: Tensor, b: Tensor, offset: number): Tensor;

  /**
   * b -> view(a,offset,nb1,nb2,3), return modified a
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_set_2d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t nb1, size_t offset)`
   */
  set2d(a: Tensor, b: Tensor, nb1: number, offset: number): Tensor;

  /**
   * b -> view(a,offset,nb1,nb2,3), return view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_set_2d_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, size_t nb1, size_t offset)`
   */
  set2dInplace(a: Tensor, b: Tensor, nb1: number, offset: number): Tensor;

  /**
   * a -> b, return view(b)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_cpy(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  cpy(a: Tensor, b: Tensor): Tensor;

  /**
   * note: casting from f32 to i32 will discard the fractional part
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_cast(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_type type)`
   */
  cast(a: Tensor, type: Type): Tensor;

  /**
   * make contiguous
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_cont(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  cont(a: Tensor): Tensor;

  /**
   * make contiguous, with new shape
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_cont_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0)`
   */
  cont1d(a: Tensor, ne0: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_cont_2d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1)`
   */
  cont2d(a: Tensor, ne0: number, ne1: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_cont_3d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2)`
   */
  cont3d(a: Tensor, ne0: number, ne1: number, ne2: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_cont_4d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)`
   */
  cont4d(a: Tensor, ne0: number, ne1: number, ne2: number, ne3: number): Tensor;

  /**
   * ```text
   * return view(a), b specifies the new shape
   * TODO: when we start computing gradient, make a copy instead of view
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_reshape(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  reshape(a: Tensor, b: Tensor): Tensor;

  /**
   * ```text
   * return view(a)
   * TODO: when we start computing gradient, make a copy instead of view
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_reshape_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0)`
   */
  reshape1d(a: Tensor, ne0: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_reshape_2d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1)`
   */
  reshape2d(a: Tensor, ne0: number, ne1: number): Tensor;

  /**
   * ```text
   * return view(a)
   * TODO: when we start computing gradient, make a copy instead of view
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_reshape_3d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2)`
   */
  reshape3d(a: Tensor, ne0: number, ne1: number, ne2: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_reshape_4d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)`
   */
  reshape4d(a: Tensor, ne0: number, ne1: number, ne2: number, ne3: number): Tensor;

  /**
   * offset in bytes
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_view_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, size_t offset)`
   */
  view1d(a: Tensor, ne0: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_view_2d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset)`
   */
  view2d(a: Tensor, ne0: number, ne1: number, nb1: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_view_3d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset)`
   */
  view3d(a: Tensor, ne0: number, ne1: number, ne2: number, nb1: number, nb2: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_view_4d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset)`
   */
  view4d(a: Tensor, ne0: number, ne1: number, ne2: number, ne3: number, nb1: number, nb2: number, nb3: number, offset: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_permute(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int axis0, int axis1, int axis2, int axis3)`
   */
  permute(a: Tensor, axis0: number, axis1: number, axis2: number, axis3: number): Tensor;

  /**
   * alias for wsp_ggml_permute(ctx, a, 1, 0, 2, 3)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_transpose(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  transpose(a: Tensor): Tensor;

  /**
   * ```text
   * supports 4D a:
   * a     [n_embd, ne1, ne2, ne3]
   * b I32 [n_rows, ne2, ne3, 1]
   *
   * return [n_embd, n_rows, ne2, ne3]
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_get_rows(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  getRows(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_get_rows_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c)`
   */
  getRowsBack(a: Tensor, b: Tensor, c: Tensor): Tensor;

  /**
   * ```text
   * a TD  [n_embd, ne1,    ne2,    ne3]
   * b TS  [n_embd, n_rows, ne02,   ne03] | ne02 == ne2, ne03 == ne3
   * c I64 [n_rows, ne11,   ne12,   1]    | c[i] in [0, ne1)
   *
   * undefined behavior if destination rows overlap
   *
   * broadcast:
   *   ne2 % ne11 == 0
   *   ne3 % ne12 == 0
   *
   * return view(a)
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_set_rows(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c)`
   */
  setRows(a: Tensor, b: Tensor, c: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_diag(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  diag(a: Tensor): Tensor;

  /**
   * set elements above the diagonal to -INF
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_diag_mask_inf(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int n_past)`
   */
  diagMaskInf(a: Tensor, nPast: number): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_diag_mask_inf_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int n_past)`
   */
  diagMaskInfInplace(a: Tensor, nPast: number): Tensor;

  /**
   * set elements above the diagonal to 0
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_diag_mask_zero(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int n_past)`
   */
  diagMaskZero(a: Tensor, nPast: number): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_diag_mask_zero_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int n_past)`
   */
  diagMaskZeroInplace(a: Tensor, nPast: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_soft_max(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  softMax(a: Tensor): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_soft_max_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a)`
   */
  softMaxInplace(a: Tensor): Tensor;

  /**
   * ```text
   * a    [ne0, ne01, ne02, ne03]
   * mask [ne0, ne11, ne12, ne13] | ne11 >= ne01, F16 or F32, optional
   *
   * broadcast:
   *   ne02 % ne12 == 0
   *   ne03 % ne13 == 0
   *
   * fused soft_max(a*scale + mask*(ALiBi slope))
   * max_bias = 0.0f for no ALiBi
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_soft_max_ext(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *mask, float scale, float max_bias)`
   */
  softMaxExt(a: Tensor, mask: Tensor | null, scale: number, maxBias: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_soft_max_ext_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, float scale, float max_bias)`
   */
  softMaxExtBack(a: Tensor, b: Tensor, scale: number, maxBias: number): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_soft_max_ext_back_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, float scale, float max_bias)`
   */
  softMaxExtBackInplace(a: Tensor, b: Tensor, scale: number, maxBias: number): Tensor;

  /**
   * ```text
   * rotary position embedding
   * if (mode & 1) - skip n_past elements (NOT SUPPORTED)
   * if (mode & WSP_GGML_ROPE_TYPE_NEOX) - GPT-NeoX style
   *
   * b is an int32 vector with size a->ne[2], it contains the positions
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int n_dims, int mode)`
   */
  rope(a: Tensor, b: Tensor, nDims: number, mode: number): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int n_dims, int mode)`
   */
  ropeInplace(a: Tensor, b: Tensor, nDims: number, mode: number): Tensor;

  /**
   * ```text
   * custom RoPE
   * c is freq factors (e.g. phi3-128k), (optional)
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_ext(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c, int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   */
  ropeExt(a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_multi(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c, int n_dims, int[4] sections, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   */
  ropeMulti(a: Tensor, b: Tensor, c: Tensor | null, nDims: number, sections: readonly [number, number, number, number], mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * in-place, returns view(a)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_ext_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c, int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   */
  ropeExtInplace(a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_multi_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c, int n_dims, int[4] sections, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   */
  ropeMultiInplace(a: Tensor, b: Tensor, c: Tensor | null, nDims: number, sections: readonly [number, number, number, number], mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_custom(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   *
   * @deprecated WSP_GGML_DEPRECATED in ggml.h
   */
  ropeCustom(a: Tensor, b: Tensor, nDims: number, mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_custom_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   *
   * @deprecated WSP_GGML_DEPRECATED in ggml.h
   */
  ropeCustomInplace(a: Tensor, b: Tensor, nDims: number, mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * ```text
   * rotary position embedding backward, i.e compute dx from dy
   * a - dy
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_ext_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c, int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   */
  ropeExtBack(a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rope_multi_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c, int n_dims, int[4] sections, int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast, float beta_slow)`
   */
  ropeMultiBack(a: Tensor, b: Tensor, c: Tensor | null, nDims: number, sections: readonly [number, number, number, number], mode: number, nCtxOrig: number, freqBase: number, freqScale: number, extFactor: number, attnFactor: number, betaFast: number, betaSlow: number): Tensor;

  /**
   * ```text
   * clamp
   * in-place, returns view(a)
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_clamp(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, float min, float max)`
   */
  clamp(a: Tensor, min: number, max: number): Tensor;

  /**
   * ```text
   * im2col
   * converts data into a format that effectively results in a convolution when combined with matrix multiplication
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_im2col(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int s1, int p0, int p1, int d0, int d1, _Bool is_2D, enum wsp_ggml_type dst_type)`
   */
  im2col(a: Tensor, b: Tensor, s0: number, s1: number, p0: number, p1: number, d0: number, d1: number, is2D: boolean, dstType: Type): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_im2col_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int64_t *ne, int s0, int s1, int p0, int p1, int d0, int d1, _Bool is_2D)`
   */
  im2colBack(a: Tensor, b: Tensor, ne: readonly [number, number, number, number], s0: number, s1: number, p0: number, p1: number, d0: number, d1: number, is2D: boolean): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int p0, int d0)`
   */
  conv1d(a: Tensor, b: Tensor, s0: number, p0: number, d0: number): Tensor;

  /**
   * ```text
   * conv_1d with padding = half
   * alias for wsp_ggml_conv_1d(a, b, s, a->ne[0]/2, d)
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_1d_ph(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s, int d)`
   */
  conv1dPh(a: Tensor, b: Tensor, s: number, d: number): Tensor;

  /**
   * ```text
   * depthwise
   * TODO: this is very likely wrong for some cases! - needs more testing
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_1d_dw(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int p0, int d0)`
   */
  conv1dDw(a: Tensor, b: Tensor, s0: number, p0: number, d0: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_1d_dw_ph(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int d0)`
   */
  conv1dDwPh(a: Tensor, b: Tensor, s0: number, d0: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_transpose_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int p0, int d0)`
   */
  convTranspose1d(a: Tensor, b: Tensor, s0: number, p0: number, d0: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_2d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int s1, int p0, int p1, int d0, int d1)`
   */
  conv2d(a: Tensor, b: Tensor, s0: number, s1: number, p0: number, p1: number, d0: number, d1: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_im2col_3d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int64_t IC, int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2, enum wsp_ggml_type dst_type)`
   */
  im2col3d(a: Tensor, b: Tensor, IC: number, s0: number, s1: number, s2: number, p0: number, p1: number, p2: number, d0: number, d1: number, d2: number, dstType: Type): Tensor;

  /**
   * ```text
   * a: [OC*IC, KD, KH, KW]
   * b: [N*IC, ID, IH, IW]
   * result: [N*OC, OD, OH, OW]
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_3d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int64_t IC, int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2)`
   */
  conv3d(a: Tensor, b: Tensor, IC: number, s0: number, s1: number, s2: number, p0: number, p1: number, p2: number, d0: number, d1: number, d2: number): Tensor;

  /**
   * ```text
   * kernel size is a->ne[0] x a->ne[1]
   * stride is equal to kernel size
   * padding is zero
   * example:
   * a:     16   16    3  768
   * b:   1024 1024    3    1
   * res:   64   64  768    1
   * used in sam
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_2d_sk_p0(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  conv2dSkP0(a: Tensor, b: Tensor): Tensor;

  /**
   * ```text
   * kernel size is a->ne[0] x a->ne[1]
   * stride is 1
   * padding is half
   * example:
   * a:      3    3    256  256
   * b:     64   64    256    1
   * res:   64   64    256    1
   * used in sam
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_2d_s1_ph(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  conv2dS1Ph(a: Tensor, b: Tensor): Tensor;

  /**
   * depthwise (via im2col and mul_mat)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_2d_dw(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int s1, int p0, int p1, int d0, int d1)`
   */
  conv2dDw(a: Tensor, b: Tensor, s0: number, s1: number, p0: number, p1: number, d0: number, d1: number): Tensor;

  /**
   * ```text
   * Depthwise 2D convolution
   * may be faster than wsp_ggml_conv_2d_dw, but not available in all backends
   * a:   KW    KH    1    C    convolution kernel
   * b:   W     H     C    N    input data
   * res: W_out H_out C    N
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_2d_dw_direct(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int stride0, int stride1, int pad0, int pad1, int dilation0, int dilation1)`
   */
  conv2dDwDirect(a: Tensor, b: Tensor, stride0: number, stride1: number, pad0: number, pad1: number, dilation0: number, dilation1: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_transpose_2d_p0(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int stride)`
   */
  convTranspose2dP0(a: Tensor, b: Tensor, stride: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_2d_direct(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int s1, int p0, int p1, int d0, int d1)`
   */
  conv2dDirect(a: Tensor, b: Tensor, s0: number, s1: number, p0: number, p1: number, d0: number, d1: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_conv_3d_direct(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2, int n_channels, int n_batch, int n_channels_out)`
   */
  conv3dDirect(a: Tensor, b: Tensor, s0: number, s1: number, s2: number, p0: number, p1: number, p2: number, d0: number, d1: number, d2: number, nChannels: number, nBatch: number, nChannelsOut: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_pool_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_op_pool op, int k0, int s0, int p0)`
   */
  pool1d(a: Tensor, op: OpPool, k0: number, s0: number, p0: number): Tensor;

  /**
   * ```text
   * the result will have 2*p0 padding for the first dimension
   * and 2*p1 padding for the second dimension
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_pool_2d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_op_pool op, int k0, int k1, int s0, int s1, float p0, float p1)`
   */
  pool2d(a: Tensor, op: OpPool, k0: number, k1: number, s0: number, s1: number, p0: number, p1: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_pool_2d_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *af, enum wsp_ggml_op_pool op, int k0, int k1, int s0, int s1, float p0, float p1)`
   */
  pool2dBack(a: Tensor, af: Tensor, op: OpPool, k0: number, k1: number, s0: number, s1: number, p0: number, p1: number): Tensor;

  /**
   * ```text
   * interpolate
   * multiplies ne0 and ne1 by scale factor
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_upscale(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int scale_factor, enum wsp_ggml_scale_mode mode)`
   */
  upscale(a: Tensor, scaleFactor: number, mode: ScaleMode): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_upscale_ext(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int ne0, int ne1, int ne2, int ne3, enum wsp_ggml_scale_mode mode)`
   *
   * @deprecated WSP_GGML_DEPRECATED in ggml.h
   */
  upscaleExt(a: Tensor, ne0: number, ne1: number, ne2: number, ne3: number, mode: ScaleMode): Tensor;

  /**
   * ```text
   * Up- or downsamples the input to the specified size.
   * 2D scale modes (eg. bilinear) are applied to the first two dimensions.
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_interpolate(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint32_t mode)`
   */
  interpolate(a: Tensor, ne0: number, ne1: number, ne2: number, ne3: number, mode: number): Tensor;

  /**
   * pad each dimension with zeros: [x, ..., x] -> [x, ..., x, 0, ..., 0]
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_pad(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int p0, int p1, int p2, int p3)`
   */
  pad(a: Tensor, p0: number, p1: number, p2: number, p3: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_pad_ext(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int lp0, int rp0, int lp1, int rp1, int lp2, int rp2, int lp3, int rp3)`
   */
  padExt(a: Tensor, lp0: number, rp0: number, lp1: number, rp1: number, lp2: number, rp2: number, lp3: number, rp3: number): Tensor;

  /**
   * pad each dimension with reflection: [a, b, c, d] -> [b, a, b, c, d, c]
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_pad_reflect_1d(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int p0, int p1)`
   */
  padReflect1d(a: Tensor, p0: number, p1: number): Tensor;

  /**
   * ```text
   * Move tensor elements by an offset given for each dimension. Elements that
   * are shifted beyond the last position are wrapped around to the beginning.
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_roll(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int shift0, int shift1, int shift2, int shift3)`
   */
  roll(a: Tensor, shift0: number, shift1: number, shift2: number, shift3: number): Tensor;

  /**
   * ```text
   * Ref: https://github.com/CompVis/stable-diffusion/blob/main/ldm/modules/diffusionmodules/util.py#L151
   * timesteps: [N,]
   * return: [N, dim]
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_timestep_embedding(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *timesteps, int dim, int max_period)`
   */
  timestepEmbedding(timesteps: Tensor, dim: number, maxPeriod: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_argsort(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_sort_order order)`
   */
  argsort(a: Tensor, order: SortOrder): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_arange(struct wsp_ggml_context *ctx, float start, float stop, float step)`
   */
  arange(start: number, stop: number, step: number): Tensor;

  /**
   * top k elements per row
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_top_k(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int k)`
   */
  topK(a: Tensor, k: number): Tensor;

  /**
   * ```text
   * q:    [n_embd_k, n_batch,     n_head,    ne3 ]
   * k:    [n_embd_k, n_kv,        n_head_kv, ne3 ]
   * v:    [n_embd_v, n_kv,        n_head_kv, ne3 ] !! not transposed !!
   * mask: [n_kv,     n_batch_pad, ne32,      ne33] !! n_batch_pad = WSP_GGML_PAD(n_batch, WSP_GGML_KQ_MASK_PAD) !!
   * res:  [n_embd_v, n_head,      n_batch,   ne3 ] !! permuted !!
   *
   * broadcast:
   *   n_head % n_head_kv == 0
   *   n_head % ne32      == 0
   *   ne3    % ne33      == 0
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_flash_attn_ext(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *q, struct wsp_ggml_tensor *k, struct wsp_ggml_tensor *v, struct wsp_ggml_tensor *mask, float scale, float max_bias, float logit_softcap)`
   */
  flashAttnExt(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | null, scale: number, maxBias: number, logitSoftcap: number): Tensor;

  /**
   * TODO: needs to be adapted to wsp_ggml_flash_attn_ext
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_flash_attn_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *q, struct wsp_ggml_tensor *k, struct wsp_ggml_tensor *v, struct wsp_ggml_tensor *d, _Bool masked)`
   */
  flashAttnBack(q: Tensor, k: Tensor, v: Tensor, d: Tensor, masked: boolean): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_ssm_conv(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *sx, struct wsp_ggml_tensor *c)`
   */
  ssmConv(sx: Tensor, c: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_ssm_scan(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *s, struct wsp_ggml_tensor *x, struct wsp_ggml_tensor *dt, struct wsp_ggml_tensor *A, struct wsp_ggml_tensor *B, struct wsp_ggml_tensor *C, struct wsp_ggml_tensor *ids)`
   */
  ssmScan(s: Tensor, x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, ids: Tensor): Tensor;

  /**
   * ```text
   * partition into non-overlapping windows with padding if needed
   * example:
   * a:   768   64   64    1
   * w:    14
   * res: 768   14   14    25
   * used in sam
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_win_part(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int w)`
   */
  winPart(a: Tensor, w: number): Tensor;

  /**
   * ```text
   * reverse of wsp_ggml_win_part
   * used in sam
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_win_unpart(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int w0, int h0, int w)`
   */
  winUnpart(a: Tensor, w0: number, h0: number, w: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_unary(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_unary_op op)`
   */
  unary(a: Tensor, op: UnaryOp): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_unary_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, enum wsp_ggml_unary_op op)`
   */
  unaryInplace(a: Tensor, op: UnaryOp): Tensor;

  /**
   * used in sam
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_get_rel_pos(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, int qh, int kh)`
   */
  getRelPos(a: Tensor, qh: number, kh: number): Tensor;

  /**
   * used in sam
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_add_rel_pos(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *pw, struct wsp_ggml_tensor *ph)`
   */
  addRelPos(a: Tensor, pw: Tensor, ph: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_add_rel_pos_inplace(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *pw, struct wsp_ggml_tensor *ph)`
   */
  addRelPosInplace(a: Tensor, pw: Tensor, ph: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rwkv_wkv6(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *k, struct wsp_ggml_tensor *v, struct wsp_ggml_tensor *r, struct wsp_ggml_tensor *tf, struct wsp_ggml_tensor *td, struct wsp_ggml_tensor *state)`
   */
  rwkvWkv6(k: Tensor, v: Tensor, r: Tensor, tf: Tensor, td: Tensor, state: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_gated_linear_attn(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *k, struct wsp_ggml_tensor *v, struct wsp_ggml_tensor *q, struct wsp_ggml_tensor *g, struct wsp_ggml_tensor *state, float scale)`
   */
  gatedLinearAttn(k: Tensor, v: Tensor, q: Tensor, g: Tensor, state: Tensor, scale: number): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_rwkv_wkv7(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *r, struct wsp_ggml_tensor *w, struct wsp_ggml_tensor *k, struct wsp_ggml_tensor *v, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *state)`
   */
  rwkvWkv7(r: Tensor, w: Tensor, k: Tensor, v: Tensor, a: Tensor, b: Tensor, state: Tensor): Tensor;

  /**
   * loss function
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_cross_entropy_loss(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b)`
   */
  crossEntropyLoss(a: Tensor, b: Tensor): Tensor;

  /**
   * C: `struct wsp_ggml_tensor *wsp_ggml_cross_entropy_loss_back(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *b, struct wsp_ggml_tensor *c)`
   */
  crossEntropyLossBack(a: Tensor, b: Tensor, c: Tensor): Tensor;

  /**
   * ```text
   * AdamW optimizer step
   * Paper: https://arxiv.org/pdf/1711.05101v3.pdf
   * PyTorch: https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html
   * ```
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_opt_step_adamw(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *grad, struct wsp_ggml_tensor *m, struct wsp_ggml_tensor *v, struct wsp_ggml_tensor *adamw_params)`
   */
  optStepAdamw(a: Tensor, grad: Tensor, m: Tensor, v: Tensor, adamwParams: Tensor): Tensor;

  /**
   * stochastic gradient descent step (with weight decay)
   *
   * C: `struct wsp_ggml_tensor *wsp_ggml_opt_step_sgd(struct wsp_ggml_context *ctx, struct wsp_ggml_tensor *a, struct wsp_ggml_tensor *grad, struct wsp_ggml_tensor *sgd_params)`
   */
  optStepSgd(a: Tensor, grad: Tensor, sgdParams: Tensor): Tensor;
}
// ---- end of generated ops ----
