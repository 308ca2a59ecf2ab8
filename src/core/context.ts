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
  sizeArg("size", size);
  bool("grads", grads);
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

/** @internal The largest number of objects a measured op created (for the bound's test). */
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
   * @internal The pool as little-endian 32-bit words, unchecked (empty once
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
    const requested = sizeArg("memSize", options.memSize);
    const noAlloc = bool("noAlloc", options.noAlloc ?? false);
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

  /** @internal The native `struct wsp_ggml_context *` (throws once freed). */
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

  /** @internal Counts asynchronous computes that use this context (`free` is refused while any runs). */
  _hold(delta: 1 | -1): void {
    this.#holds += delta;
  }

  /** @internal Whether an asynchronous compute uses this context. */
  get _busy(): boolean {
    return this.#holds > 0;
  }

  /** @internal The pool's bytes, or {@linkcode UseAfterFreeError} once freed. */
  _pool(what: string): DataView {
    if (this.#state.ptr === 0) throw new UseAfterFreeError(`${what}: its context was freed`);
    return this.#view;
  }

  /** @internal The pool as little-endian 32-bit words, or {@linkcode UseAfterFreeError} once freed. */
  _words(what: string): Int32Array {
    if (this.#state.ptr === 0) throw new UseAfterFreeError(`${what}: its context was freed`);
    return this._w;
  }

  /** @internal The native address of the pool's first byte. */
  get _base(): number {
    return this.#base;
  }

  /**
   * @internal An upper bound of the tensors in this context: every tensor
   * object takes at least {@linkcode tensorOverhead} bytes of the pool.
   */
  get _maxTensors(): number {
    return this.#state.ptr === 0 ? 0 : Math.floor(this.usedMem / (runtime().objectSize + runtime().tensorSize));
  }

  /** @internal Whether `ptr` points into this context's pool. */
  _contains(ptr: number, length = 0): boolean {
    return this.#state.ptr !== 0 && ptr >= this.#base && ptr + length <= this.#base + this.#state.memSize;
  }

  /** @internal The tensor object for a tensor of this pool (one object per tensor). */
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

  /** @internal This context and the contexts its tensors refer to, transitively. */
  _reachable(): Set<Context> {
    const seen = new Set<Context>([this]);
    for (const c of seen) for (const d of c.#deps) seen.add(d);
    return seen;
  }

  /** @internal Records that this context's tensors refer to `other`'s. */
  _depend(other: Context): void {
    // Ops over another context's tensors record the same one again and again: one comparison instead of a Set insert.
    if (other === this || other === this.#lastDep) return;
    this.#deps.add(other);
    this.#lastDep = other;
  }

  /** @internal Keeps `holder` (a buffer or allocator holding this context's tensors' data) alive while this context is. */
  _keep(holder: object): void {
    (this.#kept ??= new Set()).add(holder);
  }

  /** @internal The tensor object for a tensor of this context or one it refers to. */
  _resolve(ptr: number): Tensor {
    if (this._contains(ptr)) return this._wrap(ptr); // the common case, without building the reachable set
    // A pointer into a freed context's pool is a use after free even when a newer context's pool took that memory.
    const reachable = this._reachable();
    for (const c of reachable) if (c.#state.ptr === 0 && ptr >= c.#base && ptr < c.#base + c.#state.memSize) c._pool("tensor");
    for (const c of reachable) if (c._contains(ptr)) return c._wrap(ptr);
    for (const c of reachable) c._pool("tensor");
    throw new UseAfterFreeError(`tensor 0x${ptr.toString(16)} belongs to no live context`);
  }

  /** @internal The JS memory holding `[data, data + length)`. */
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

  /** @internal The native context as a handle (`NativeLibrary.handles`). */
  protected override get _h(): Handle {
    return this.#h;
  }

  /** @internal Checks that the context is alive; returns the native calls taking handles. */
  protected override _live(op: string): WspGgml["handles"] {
    if (this.#state.ptr === 0) this._pool(op);
    return this.#handles;
  }

  /** @internal Checks that an operand is a live tensor (or null where allowed). */
  protected override _operand(op: string, name: string, t: Tensor | null, nullable = false): void {
    if (t instanceof Tensor) {
      if (t.context.#state.ptr === 0) t.context._pool(`${op}: ${name}`);
      return;
    }
    if (t === null && nullable) return;
    throw new ArgumentError(`${op}: ${name} must be a Tensor, got ${t === null ? "null" : typeof t}`);
  }

  /**
   * @internal Whether an op can run directly: in a `noAlloc` context every
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

  /** @internal Wraps the result of an op that ran directly; records the contexts of its operands. */
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

  /** @internal Checks the context and the operands of an op; returns the native symbols. */
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
   * @internal Runs an op that creates objects in the pool, never letting
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
    member("type", type, Type, "Type");
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
    sizeArg("size", size);
    bool("grads", grads);
    if (size < 1 || size > 2 ** 30) throw new ArgumentError(`newGraphCustom: size must be in 1..2^30, got ${size}`);
    const s = runtime().lib.symbols;
    const needed = Number(s.wsp_ggml_graph_overhead_custom(size, grads));
    const used = this.usedMem;
    if (used + needed > this.#state.memSize) throw new ContextOutOfMemoryError("newGraphCustom", needed, this.#state.memSize - used);
    this.#spare = 0;
    return new Graph(this, s.wsp_ggml_new_graph_custom(this.#state.ptr, size, grads), size, grads, INTERNAL);
  }
}
