/**
 * Backend buffers and allocation (`ggml-backend.h`, `ggml-alloc.h`): buffer
 * types, buffers, `allocCtxTensors` for a `noAlloc` context's tensors,
 * {@linkcode Gallocr} for a graph's intermediate tensors, and reading and
 * writing tensors through their backend (`wsp_ggml_backend_tensor_set` /
 * `_get` / `_memset` / `_copy`), whose asserts are checked here first.
 *
 * @module
 */
import { INTERNAL, internal } from "../core/brand.ts";
import { BackendBufferUsage, layouts, Type } from "../ffi/bindings.gen.ts";
import { int, member, size } from "../core/args.ts";
import { ArgumentError, BoundsError, BusyError, GgmlError, GgmlTypeError, NotAllocatedError, ShapeError, UseAfterFreeError } from "../core/errors.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import { Context } from "../core/context.ts";
import { Graph } from "../core/graph.ts";
import { type ArrayType, as, storageArray, Tensor, type TensorData } from "../core/tensor.ts";
import type { Backend } from "./backend.ts";
import { checkAllocBound } from "./alloc_bound.ts";
import { bufferOf, graphTensors, tensorPtr } from "./backend.ts";
import { adopt, dispose, type Handle } from "../core/owned.ts";
import { extraBuftOf } from "../core/extra_registry.ts";
import { bufferTypeName, hasMemset } from "../core/buffer_caps.ts";
import { checkMetalBufferType } from "./metal_checks.ts";

const sym = () => runtime().lib.symbols;

/** A kind of backend memory (`wsp_ggml_backend_buffer_type_t`); owned by its backend library, never freed. */
export class BufferType {
  /** The native `wsp_ggml_backend_buffer_type_t`. */
  readonly pointer: number;

  /** @ignore @internal Buffer types come from a device, a backend or `cpuBufferType()`. */
  constructor(pointer: number, token?: symbol) {
    internal("BufferType", token, "cpuBufferType(), backend.defaultBufferType or device.bufferType");
    this.pointer = pointer;
  }

  /** Name (`wsp_ggml_backend_buft_name`). */
  get name(): string {
    return bufferTypeName(this.pointer);
  }

  /** Alignment of tensor data in its buffers, in bytes. */
  get alignment(): number {
    return Number(sym().wsp_ggml_backend_buft_get_alignment(this.pointer));
  }

  /** Largest buffer it allocates, in bytes. */
  get maxSize(): number {
    return Number(sym().wsp_ggml_backend_buft_get_max_size(this.pointer));
  }

  /** Whether its memory is host memory that the CPU can read. */
  get isHost(): boolean {
    return sym().wsp_ggml_backend_buft_is_host(this.pointer);
  }

  /** Bytes `tensor` takes in a buffer of this type (`wsp_ggml_backend_buft_get_alloc_size`). */
  allocSize(tensor: Tensor): number {
    return Number(sym().wsp_ggml_backend_buft_get_alloc_size(this.pointer, tensorPtr("allocSize", tensor)));
  }

  /**
   * A buffer of `bytes` bytes (`wsp_ggml_backend_buft_alloc_buffer`).
   *
   * @throws {BoundsError} above {@linkcode maxSize}
   * @throws {GgmlError} (`OUT_OF_MEMORY`) when the allocation fails
   * @throws {GgmlError} (`UNSUPPORTED`) for a Metal buffer type whose memory the host cannot map (ggml-metal aborts on every copy into it)
   */
  allocBuffer(bytes: number): Buffer {
    size("allocBuffer: size", bytes);
    if (bytes > this.maxSize) throw new BoundsError(`allocBuffer: ${bytes} bytes exceed the ${this.name} buffer type's maximum of ${this.maxSize}`);
    checkMetalBufferType("allocBuffer", this.pointer);
    const p = sym().wsp_ggml_backend_buft_alloc_buffer(this.pointer, bytes);
    if (p === 0) throw new GgmlError("OUT_OF_MEMORY", `allocBuffer: ${this.name} could not allocate ${bytes} bytes`);
    return new Buffer(p, INTERNAL);
  }
}

/** The CPU's buffer type (`wsp_ggml_backend_cpu_buffer_type`). */
export function cpuBufferType(): BufferType {
  return new BufferType(sym().wsp_ggml_backend_cpu_buffer_type(), INTERNAL);
}

/** The buffers this API made, by native pointer (weakly: a buffer nothing refers to is collected). */
const live = new Map<number, WeakRef<Buffer>>();

function releaseBuffer(ptr: number): void {
  live.delete(ptr);
  sym().wsp_ggml_backend_buffer_free(ptr);
}

/**
 * A block of backend memory (`wsp_ggml_backend_buffer_t`) holding tensors.
 * Free it with `free()` (or `using`) once no tensor in it is used: the
 * tensors then have no data, and reading them throws.
 */
export class Buffer {
  readonly #h: Handle;
  readonly #contexts = new Set<Context>();

  /** @ignore @internal */
  constructor(ptr: number, token?: symbol) {
    internal("Buffer", token, "bufferType.allocBuffer() or allocCtxTensors()");
    this.#h = adopt(this, "buffer", ptr, releaseBuffer);
    live.set(ptr, new WeakRef(this));
  }

  /** @ignore @internal The buffer object of a native buffer created by this API, if any. */
  static _of(ptr: number): Buffer | undefined {
    return live.get(ptr)?.deref();
  }

  /** @ignore @internal */
  _live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the buffer was freed`);
    return this.#h.ptr;
  }

  /** The native `wsp_ggml_backend_buffer_t`. */
  get pointer(): number {
    return this._live("buffer");
  }

  /** Whether {@linkcode free} was called. */
  get freed(): boolean {
    return this.#h.ptr === 0;
  }

  /** Name (`wsp_ggml_backend_buffer_name`). */
  get name(): string {
    return ffi.readCString(sym().wsp_ggml_backend_buffer_name(this.pointer)) ?? "";
  }

  /** Size in bytes. */
  get size(): number {
    return Number(sym().wsp_ggml_backend_buffer_get_size(this.pointer));
  }

  /** The address of its memory (meaningful to the CPU only when {@linkcode isHost}). */
  get base(): number {
    return sym().wsp_ggml_backend_buffer_get_base(this.pointer);
  }

  /** Alignment of tensor data, in bytes. */
  get alignment(): number {
    return Number(sym().wsp_ggml_backend_buffer_get_alignment(this.pointer));
  }

  /** Whether its memory is host memory. */
  get isHost(): boolean {
    return sym().wsp_ggml_backend_buffer_is_host(this.pointer);
  }

  /** Its buffer type. */
  get type(): BufferType {
    return new BufferType(sym().wsp_ggml_backend_buffer_get_type(this.pointer), INTERNAL);
  }

  /** What it holds: a {@linkcode BackendBufferUsage} (ANY, WEIGHTS, COMPUTE); the scheduler prefers the backend of WEIGHTS buffers. */
  get usage(): BackendBufferUsage {
    return sym().wsp_ggml_backend_buffer_get_usage(this.pointer) as BackendBufferUsage;
  }

  set usage(value: BackendBufferUsage) {
    member("Buffer.usage", value, BackendBufferUsage, "BackendBufferUsage");
    sym().wsp_ggml_backend_buffer_set_usage(this.pointer, value);
  }

  /** Sets {@linkcode usage}; returns this buffer. */
  setUsage(value: BackendBufferUsage): this {
    this.usage = value;
    return this;
  }

  /** Sets every byte to `value` (`wsp_ggml_backend_buffer_clear`). */
  clear(value = 0): this {
    int("clear: value", value);
    if (value < 0 || value > 255) throw new ArgumentError(`clear: value must be a byte (0..255), got ${value}`);
    sym().wsp_ggml_backend_buffer_clear(this.pointer, value);
    return this;
  }

  /** Resets the buffer's allocator state where the backend keeps one (`wsp_ggml_backend_buffer_reset`). */
  reset(): this {
    sym().wsp_ggml_backend_buffer_reset(this.pointer);
    return this;
  }

  /**
   * @ignore @internal Records that `ctx`'s tensors live here: their data pointers are
   * cleared when the buffer is freed, and `ctx` keeps the buffer from the
   * garbage collector.
   */
  _hold(ctx: Context): void {
    this.#contexts.add(ctx);
    ctx._keep(this);
  }

  /**
   * Frees the buffer (`wsp_ggml_backend_buffer_free`). The tensors that
   * `allocCtxTensors` placed in it are marked unallocated (data and buffer
   * NULL), so that using them throws {@linkcode NotAllocatedError} instead of
   * touching freed memory.
   */
  free(): void {
    const ptr = this.#h.ptr;
    if (ptr === 0) return;
    for (const ctx of this.#contexts) if (ctx._busy) throw new BusyError("free: tensors in this buffer are being computed asynchronously (await graphComputeAsync first)");
    const F = tensorFields();
    for (const ctx of this.#contexts) {
      if (ctx.freed) continue;
      for (let t = sym().wsp_ggml_get_first_tensor(ctx._ptr); t !== 0; t = sym().wsp_ggml_get_next_tensor(ctx._ptr, t)) {
        const v = new DataView(ffi.view(t, F.size));
        if (Number(v.getBigUint64(F.buffer, true)) === ptr) {
          v.setBigUint64(F.buffer, 0n, true);
          v.setBigUint64(F.data, 0n, true);
        }
      }
    }
    this.#contexts.clear();
    dispose(this.#h);
  }

  /** Frees the buffer (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

function tensorFields(): { size: number; buffer: number; data: number } {
  const L = runtime().tensorSize;
  return { size: L, buffer: fieldOffset("buffer"), data: fieldOffset("data") };
}

const fieldOffset = (f: "buffer" | "data" | "view_src") => layouts.wsp_ggml_tensor.fields[f].offset;

/**
 * Allocates every tensor of a `noAlloc` context that has no data yet in one
 * new buffer of `target` (a backend's default buffer type, or a buffer
 * type) (`wsp_ggml_backend_alloc_ctx_tensors_from_buft`). Returns the
 * buffer, or null when every tensor already had data.
 *
 * @throws {ArgumentError} when the context is not `noAlloc` (ggml asserts)
 * @throws {GgmlError} (`UNSUPPORTED`) for a Metal buffer type whose memory the host cannot map
 */
export function allocCtxTensors(ctx: Context, target: Backend | BufferType): Buffer | null {
  if (!(ctx instanceof Context)) throw new ArgumentError("allocCtxTensors: expected a Context");
  ctx._pool("allocCtxTensors");
  if (!ctx.noAlloc) throw new ArgumentError("allocCtxTensors: the context must be created with noAlloc (its tensors already live in its pool)");
  const buft = target instanceof BufferType ? target : target.defaultBufferType;
  const max = buft.maxSize;
  const s = sym();
  for (let t = s.wsp_ggml_get_first_tensor(ctx._ptr); t !== 0; t = s.wsp_ggml_get_next_tensor(ctx._ptr, t)) {
    const need = Number(s.wsp_ggml_backend_buft_get_alloc_size(buft.pointer, t));
    if (need > max) throw new BoundsError(`allocCtxTensors: a tensor of ${need} bytes exceeds the ${buft.name} buffer type's maximum of ${max}`);
  }
  // Every view in no buffer gets its source's buffer (wsp_ggml_backend_view_init asserts the source is in one) when
  // anything is allocated: a source that is not allocated here must be in a backend buffer already.
  const read = (t: number, f: "buffer" | "data" | "view_src") => ffi.readPointer(t, fieldOffset(f));
  const tensors: number[] = [];
  for (let t = s.wsp_ggml_get_first_tensor(ctx._ptr); t !== 0; t = s.wsp_ggml_get_next_tensor(ctx._ptr, t)) tensors.push(t);
  if (tensors.some((t) => read(t, "data") === 0 && read(t, "view_src") === 0)) {
    const views = tensors.filter((t) => read(t, "view_src") !== 0 && read(t, "buffer") === 0).map((t) => ctx._wrap(t));
    const sources = views.map((v) => v.viewSrc!); // UseAfterFreeError when a source's context was freed
    views.forEach((view, i) => {
      const src = sources[i];
      if (bufferOf(src) !== 0 || (ctx._contains(src._ptr) && src._data === 0)) return;
      throw new NotAllocatedError(`allocCtxTensors: ${view.describe()} views ${src.describe()}, which is in no backend buffer (a context's pool, or not allocated); allocate that tensor's context with allocCtxTensors first`);
    });
  }
  checkMetalBufferType("allocCtxTensors", buft.pointer);
  const p = s.wsp_ggml_backend_alloc_ctx_tensors_from_buft(ctx._ptr, buft.pointer);
  if (p === 0) {
    // Nothing to allocate (ggml then leaves the views alone): the views of tensors already in a buffer
    // (a cpy or set_rows whose destination was allocated elsewhere) take their source's buffer and data.
    for (const t of tensors) {
      const src = read(t, "view_src");
      if (read(t, "data") === 0 && src !== 0 && read(src, "buffer") !== 0 && read(src, "data") !== 0) s.wsp_ggml_backend_view_init(t);
    }
    const anyNeeds = (() => {
      for (let t = s.wsp_ggml_get_first_tensor(ctx._ptr); t !== 0; t = s.wsp_ggml_get_next_tensor(ctx._ptr, t)) if (ffi.readPointer(t, fieldOffset("data")) === 0) return true;
      return false;
    })();
    if (anyNeeds) throw new GgmlError("OUT_OF_MEMORY", `allocCtxTensors: ${buft.name} could not allocate the context's tensors`);
    return null;
  }
  const b = new Buffer(p, INTERNAL);
  b._hold(ctx);
  return b;
}

/**
 * @ignore @internal The tensors an allocator (a {@linkcode Gallocr}, a scheduler)
 * gave a place in buffers it owns. Those places are valid until it allocates
 * again (which reuses or reallocates the buffers) or is freed; {@linkcode clear}
 * then marks the tensors unallocated (data and buffer NULL), so that using them
 * throws {@linkcode NotAllocatedError} instead of touching freed memory.
 */
export class Placements {
  readonly #placed = new Set<Tensor>();
  readonly #owner: object;

  /** @param owner the allocator: the contexts of the tensors it places keep it from the garbage collector */
  constructor(owner: object) {
    this.#owner = owner;
  }

  /** Runs `alloc` (which places `graph`'s tensors) and records the tensors that got a place. */
  record<T>(graph: Graph, alloc: () => T): T {
    const unplaced = graphTensors(graph).filter((t) => t._data === 0);
    try {
      return alloc();
    } finally {
      for (const t of unplaced) {
        if (t._data === 0) continue;
        this.#placed.add(t);
        t.context._keep(this.#owner);
      }
    }
  }

  /**
   * Throws {@linkcode BusyError} while an asynchronous compute uses a
   * recorded tensor (its context is held): freeing or reusing the buffers
   * would pull the memory from under the compute's threads.
   */
  idle(what: string): void {
    let last: Context | undefined;
    for (const t of this.#placed) {
      const c = t.context;
      if (c === last) continue;
      last = c;
      if (!c.freed && c._busy) throw new BusyError(`${what}: tensors this allocator placed are being computed asynchronously (await graphComputeAsync first)`);
    }
  }

  /** Marks every recorded tensor unallocated and forgets them. */
  clear(): void {
    for (const t of this.#placed) {
      if (t.context.freed) continue;
      const v = t.context._pool("allocator");
      v.setBigUint64(t._off + fieldOffset("buffer"), 0n, true);
      v.setBigUint64(t._off + fieldOffset("data"), 0n, true);
    }
    this.#placed.clear();
  }
}

/**
 * A graph allocator (`wsp_ggml_gallocr_t`): places a graph's tensors that
 * have no data in buffers it owns, reusing memory between tensors whose
 * lifetimes do not overlap. {@linkcode reserve} sizes the buffers for the
 * largest graph to come; {@linkcode allocGraph} places a graph.
 */
export class Gallocr {
  readonly #h: Handle;
  /** The buffer types, one per buffer id. */
  readonly bufferTypes: readonly BufferType[];

  /**
   * A graph allocator (`wsp_ggml_gallocr_new`, `_new_n`).
   *
   * @param types the buffer type (or several: one per buffer id)
   */
  constructor(types: BufferType | readonly BufferType[]) {
    const list = Array.isArray(types) ? types as readonly BufferType[] : [types as BufferType];
    if (list.length === 0 || !list.every((t) => t instanceof BufferType)) throw new ArgumentError("Gallocr: expected one or more BufferTypes");
    for (const t of list) checkMetalBufferType("Gallocr", t.pointer);
    const ptrs = new BigUint64Array(list.map((t) => BigInt(t.pointer)));
    const p = list.length === 1
      ? sym().wsp_ggml_gallocr_new(list[0].pointer)
      : sym().wsp_ggml_gallocr_new_n(ffi.addressOf(ptrs), list.length);
    keepAlive(ptrs);
    if (p === 0) throw new GgmlError("OUT_OF_MEMORY", "wsp_ggml_gallocr_new failed");
    this.#h = adopt(this, "gallocr", p, (q) => sym().wsp_ggml_gallocr_free(q));
    this.bufferTypes = list;
  }

  #live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the Gallocr was freed`);
    return this.#h.ptr;
  }

  #check(what: string, graph: Graph): void {
    if (!(graph instanceof Graph)) throw new ArgumentError(`${what}: expected a Graph`);
    for (const c of graph.context._reachable()) c._pool(`${what}: a context the graph uses`);
    for (const t of graphTensors(graph)) {
      // ggml-alloc.c asserts on a view whose source is neither allocated nor in the graph
      const v = t.viewSrc;
      if (v && v._data === 0 && !graph.nodes().includes(v) && !t.src.includes(v)) {
        throw new NotAllocatedError(`${what}: ${t.describe()} views ${v.describe()}, which is not allocated`);
      }
    }
    checkAllocBound(what, graph);
  }

  /**
   * Sizes the buffers for `graph` (`wsp_ggml_gallocr_reserve`), so that
   * allocating it (or a smaller graph of the same shape) later does not
   * reallocate.
   *
   * @throws {GgmlError} (`OUT_OF_MEMORY`) when a buffer cannot be allocated
   */
  reserve(graph: Graph): this {
    this.#check("reserve", graph);
    this.#placements.idle("reserve");
    this.#placements.clear(); // reserving may reallocate the buffers
    if (!sym().wsp_ggml_gallocr_reserve(this.#live("reserve"), graph.pointer)) {
      throw new GgmlError("OUT_OF_MEMORY", "reserve: the Gallocr could not allocate its buffers");
    }
    return this;
  }

  /**
   * Gives every tensor of `graph` that has no data a place in the buffers
   * (`wsp_ggml_gallocr_alloc_graph`), reserving them first if needed. The
   * places stay valid until the next `allocGraph` or `free`.
   *
   * @throws {GgmlError} (`OUT_OF_MEMORY`) when a buffer cannot be allocated
   */
  allocGraph(graph: Graph): this {
    this.#check("allocGraph", graph);
    const p = this.#live("allocGraph");
    this.#placements.idle("allocGraph");
    this.#placements.clear(); // the previous graph's places are reused now
    if (!this.#placements.record(graph, () => sym().wsp_ggml_gallocr_alloc_graph(p, graph.pointer))) {
      throw new GgmlError("OUT_OF_MEMORY", "allocGraph: the Gallocr could not allocate the graph");
    }
    return this;
  }

  readonly #placements = new Placements(this);

  /** Bytes of buffer `id` (`wsp_ggml_gallocr_get_buffer_size`). */
  bufferSize(id = 0): number {
    int("bufferSize: id", id);
    if (id < 0 || id >= this.bufferTypes.length) throw new BoundsError(`bufferSize: buffer id ${id} out of 0..${this.bufferTypes.length - 1}`);
    return Number(sym().wsp_ggml_gallocr_get_buffer_size(this.#live("bufferSize"), id));
  }

  /** Frees the allocator and its buffers; the tensors it placed are marked unallocated (using them throws {@linkcode NotAllocatedError}). */
  free(): void {
    if (this.#h.ptr === 0) return;
    this.#placements.idle("free");
    this.#placements.clear();
    dispose(this.#h);
  }

  /** Frees the allocator (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

/** The bytes of a typed array. */
function bytesOf(v: ArrayBufferView): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** The asserts of `wsp_ggml_backend_tensor_set` / `_get` / `_memset`, in TS. */
function checkAccess(what: string, t: Tensor, offset: number, length: number): void {
  tensorPtr(what, t);
  size(`${what}: offset`, offset);
  size(`${what}: size`, length);
  if (bufferOf(t) === 0) {
    throw new NotAllocatedError(`${what}: ${t.describe()} is in no backend buffer (tensor buffer not set: allocate its context with allocCtxTensors, or its graph with a Gallocr or a Sched)`);
  }
  if (t._data === 0) throw new NotAllocatedError(`${what}: ${t.describe()} is not allocated`);
  const buf = Buffer._of(bufferOf(t));
  if (buf?.freed) throw new UseAfterFreeError(`${what}: the buffer of ${t.describe()} was freed`);
  if (offset + length > t.nbytes) {
    throw new BoundsError(`${what}: bytes ${offset}..${offset + length} of ${t.describe()}, which has ${t.nbytes} (tensor write out of bounds)`);
  }
  checkExtra(what, t, offset, length);
}

/**
 * A tensor in an extra buffer type (CPU_REPACK) is repacked as it is
 * written: its buffer asserts a write of the whole tensor, dereferences the
 * tensor's repack traits (NULL for a tensor the type does not take, or a
 * view), and has no read at all (a NULL function pointer).
 */
function checkExtra(what: string, t: Tensor, offset: number, length: number): void {
  const buft = extraBuftOf(t._ptr);
  if (buft === 0) return;
  const name = bufferTypeName(buft);
  if (what !== "tensorSet") throw new ArgumentError(`${what}: ${t.describe()} is in a ${name} buffer, whose data is re-laid-out and cannot be read back or set in part`);
  if (t.viewSrc !== null) throw new ArgumentError(`${what}: ${t.describe()} is a view into a ${name} buffer; write the whole tensor it views`);
  if (offset !== 0 || length !== t.nbytes) throw new ArgumentError(`${what}: a ${name} buffer takes a tensor whole (${t.nbytes} bytes at offset 0), not bytes ${offset}..${offset + length} of ${t.describe()}`);
  if (ffi.readPointer(t._ptr, layouts.wsp_ggml_tensor.fields.extra.offset) === 0) {
    throw new ArgumentError(`${what}: the ${name} buffer type does not take ${t.describe()} (see extraBufferTypeFor); allocate it in a plain buffer`);
  }
}

/**
 * Writes `data` into the tensor through its backend
 * (`wsp_ggml_backend_tensor_set`), at byte `offset`. `data` is the tensor
 * type's typed array (a `Float32Array` for f32, `Int32Array` for i32, …)
 * or raw bytes (`Uint8Array`); an f16 / bf16 tensor also takes a
 * `Float32Array`, converted.
 *
 * @throws {NotAllocatedError} when the tensor has no buffer or no data
 * @throws {BoundsError} when the bytes would pass the end of the tensor
 * @throws {GgmlTypeError} for an array of another element type
 */
export function tensorSet(tensor: Tensor, data: TensorData | Uint8Array, offset = 0): void {
  if (!ArrayBuffer.isView(data)) throw new GgmlTypeError(`tensorSet: expected a typed array, got ${data === null ? "null" : typeof data}`);
  let bytes = bytesOf(data);
  const type = tensor instanceof Tensor ? tensor.type : -1;
  if ((type === Type.F16 || type === Type.BF16) && data instanceof Float32Array) {
    const out = new Uint16Array(data.length);
    const s = sym();
    if (type === Type.F16) s.wsp_ggml_fp32_to_fp16_row(ffi.addressOf(data), ffi.addressOf(out), data.length);
    else s.wsp_ggml_fp32_to_bf16_row(ffi.addressOf(data), ffi.addressOf(out), data.length);
    bytes = bytesOf(out);
  } else if (!(data instanceof Uint8Array)) {
    checkArrayType("tensorSet", tensor, data);
  }
  checkAccess("tensorSet", tensor, offset, bytes.byteLength);
  if (bytes.byteLength === 0) return;
  sym().wsp_ggml_backend_tensor_set(tensor._ptr, ffi.addressOf(bytes), offset, bytes.byteLength);
  keepAlive(bytes);
}

function checkArrayType(what: string, t: Tensor, data: ArrayBufferView): void {
  const want = storageArray(t.type);
  if (!want || !(data instanceof (want as unknown as typeof Float32Array))) {
    throw new GgmlTypeError(`${what}: ${t.describe()} takes a ${want?.name ?? "Uint8Array"} (or raw bytes in a Uint8Array), got ${data.constructor.name}`);
  }
}

/**
 * Reads the tensor's data through its backend (`wsp_ggml_backend_tensor_get`):
 * a `Float32Array` for f32 (and f16 / bf16, converted), the matching typed
 * array for the other plain types, raw bytes for quantized types.
 *
 * With an array class (`tensorGet(t, Float32Array)`) the result is typed as
 * that class, checked against the tensor's type as `Tensor.get` does.
 *
 * @throws {NotAllocatedError} when the tensor has no buffer or no data
 * @throws {GgmlTypeError} when `type` is given and is not what the tensor reads as
 */
export function tensorGet(tensor: Tensor): TensorData;
/** The tensor's data as an `A` (`tensorGet(t, Float32Array)`), checked against the tensor's type. */
export function tensorGet<A extends TensorData>(tensor: Tensor, type: ArrayType<A>): A;
export function tensorGet<A extends TensorData>(tensor: Tensor, type?: ArrayType<A>): TensorData {
  return as("tensorGet", tensor, readTensor(tensor), type);
}

function readTensor(tensor: Tensor): TensorData {
  checkAccess("tensorGet", tensor, 0, tensor instanceof Tensor ? tensor.nbytes : 0);
  if (!tensor.isContiguous) throw new ShapeError(`tensorGet: ${tensor.describe()} is not contiguous`);
  const raw = tensorGetBytes(tensor);
  const type = tensor.type;
  if (type === Type.F16 || type === Type.BF16) {
    const n = raw.length / 2;
    const out = new Float32Array(n);
    const s = sym();
    if (type === Type.F16) s.wsp_ggml_fp16_to_fp32_row(ffi.addressOf(raw), ffi.addressOf(out), n);
    else s.wsp_ggml_bf16_to_fp32_row(ffi.addressOf(raw), ffi.addressOf(out), n);
    keepAlive(raw);
    return out;
  }
  const ctor = storageArray(type);
  return ctor ? new ctor(raw.buffer as ArrayBuffer, 0, raw.length / ctor.BYTES_PER_ELEMENT) : raw;
}

/**
 * Reads `out.byteLength` raw bytes from byte `offset` of the tensor into
 * `out` (`wsp_ggml_backend_tensor_get`), with the checks of
 * {@linkcode tensorGetBytes}: for a loop that reads the same tensor each
 * step (a decoder's logits) without a new array each time.
 *
 * @throws {BoundsError} when the range runs past the tensor
 */
export function tensorGetInto(tensor: Tensor, out: ArrayBufferView, offset = 0): void {
  if (!ArrayBuffer.isView(out)) throw new ArgumentError("tensorGetInto: out must be a typed array or DataView");
  const bytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  checkAccess("tensorGet", tensor, offset, bytes.length);
  if (bytes.length > 0) sym().wsp_ggml_backend_tensor_get(tensor._ptr, ffi.addressOf(bytes), offset, bytes.length);
}

/** Reads `length` raw bytes from byte `offset` of the tensor through its backend (`wsp_ggml_backend_tensor_get`). */
export function tensorGetBytes(tensor: Tensor, offset = 0, length?: number): Uint8Array {
  const n = length ?? (tensor instanceof Tensor ? tensor.nbytes - offset : 0);
  checkAccess("tensorGet", tensor, offset, n);
  const out = new Uint8Array(n);
  if (n > 0) sym().wsp_ggml_backend_tensor_get(tensor._ptr, ffi.addressOf(out), offset, n);
  return out;
}

/**
 * Sets `length` bytes from byte `offset` to `value` through the backend
 * (`wsp_ggml_backend_tensor_memset`). A buffer without a memset (an RPC
 * server's, where ggml asserts) is written the bytes instead.
 */
export function tensorMemset(tensor: Tensor, value: number, offset = 0, length?: number): void {
  int("tensorMemset: value", value);
  if (value < 0 || value > 255) throw new ArgumentError(`tensorMemset: value must be a byte (0..255), got ${value}`);
  const n = length ?? (tensor instanceof Tensor ? tensor.nbytes - offset : 0);
  checkAccess("tensorMemset", tensor, offset, n);
  if (n === 0) return;
  if (!hasMemset(bufferOf(tensor))) {
    const bytes = new Uint8Array(n).fill(value);
    sym().wsp_ggml_backend_tensor_set(tensor._ptr, ffi.addressOf(bytes), offset, n);
    keepAlive(bytes);
    return;
  }
  sym().wsp_ggml_backend_tensor_memset(tensor._ptr, value, offset, n);
}

/**
 * Copies `src` into `dst`, across backends if needed
 * (`wsp_ggml_backend_tensor_copy`). Both must be allocated and have the same
 * type, shape and strides.
 *
 * @throws {ShapeError} when the layouts differ (ggml asserts)
 */
export function tensorCopy(src: Tensor, dst: Tensor): void {
  tensorPtr("tensorCopy: src", src);
  tensorPtr("tensorCopy: dst", dst);
  const same = src.type === dst.type && src.shape.every((n, i) => n === dst.shape[i]) && src.strides.every((n, i) => n === dst.strides[i]);
  if (!same) throw new ShapeError(`tensorCopy: ${src.describe()} and ${dst.describe()} differ in type, shape or strides (cannot copy tensors with different layouts)`);
  for (const [name, t] of [["src", src], ["dst", dst]] as const) {
    if (bufferOf(t) === 0) throw new NotAllocatedError(`tensorCopy: ${name} ${t.describe()} is in no backend buffer (tensor buffer not set)`);
    if (t._data === 0) throw new NotAllocatedError(`tensorCopy: ${name} ${t.describe()} is not allocated`);
    if (Buffer._of(bufferOf(t))?.freed) throw new UseAfterFreeError(`tensorCopy: the buffer of ${name} was freed`);
  }
  // Out of an extra buffer type: refused (no read); into one: a whole write, as tensorSet.
  checkExtra("tensorCopy", src, 0, src.nbytes);
  checkExtra("tensorSet", dst, 0, dst.nbytes);
  sym().wsp_ggml_backend_tensor_copy(src._ptr, dst._ptr);
}
