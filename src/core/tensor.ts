/**
 * {@linkcode Tensor}: a `struct wsp_ggml_tensor` that lives in a
 * {@linkcode Context}'s pool. Its properties are read from the struct through
 * the generated layout, with no native call.
 *
 * @module
 */
import { INTERNAL, internal } from "./brand.ts";
import { layouts, MAX_DIMS, MAX_NAME, Op, TensorFlag, Type, UnaryOp, GluOp } from "../ffi/bindings.gen.ts";
import { ArgumentError, BoundsError, GgmlTypeError, NotAllocatedError, ShapeError } from "./errors.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import type { Context } from "./context.ts";
import type { Handle } from "../ffi/types.ts";
import { runtime, type TypeTraits } from "../runtime/runtime.ts";

const F = layouts.wsp_ggml_tensor.fields;
const NE = F.ne.offset, NB = F.nb.offset;
// The same offsets in 32-bit words (the struct is 8-byte aligned in the pool).
const NE_W = NE >> 2, NB_W = NB >> 2, TYPE_W = F.type.offset >> 2;

/**
 * `wsp_ggml_is_contiguous_n` of a tensor's ne/nb: whether the dimensions
 * above `n` are dense. Each caller passes the sizes as it read them (32-bit
 * integers or doubles), and the JIT inlines a copy per call site.
 */
function contiguousAbove(n: number, traits: TypeTraits, ne0: number, nb0: number, ne1: number, nb1: number, ne2: number, nb2: number, ne3: number, nb3: number): boolean {
  let next = traits.typeSize;
  if (ne0 !== traits.blckSize && nb0 !== next) return false;
  next *= ne0 / traits.blckSize;
  if (ne1 !== 1) {
    if (n < 1) {
      if (nb1 !== next) return false;
      next *= ne1;
    } else next = ne1 * nb1;
  }
  if (ne2 !== 1) {
    if (n < 2) {
      if (nb2 !== next) return false;
      next *= ne2;
    } else next = ne2 * nb2;
  }
  return ne3 === 1 || n >= 3 || nb3 === next;
}

/** runtime().traits, fetched once by the hot checks. */
let TRAITS: readonly (TypeTraits | undefined)[] | undefined;

// ignoreBOM: a leading U+FEFF is part of the value (Gemma has six tokens that start with one).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const encoder = new TextEncoder();

/** @ignore @internal Reads the little-endian 64-bit integer at byte `at` of 32-bit `words` as a number (exact below 2^53). */
export function i64At(words: Int32Array, at: number): number {
  const i = at >> 2;
  return (words[i] >>> 0) + words[i + 1] * 4294967296;
}

/**
 * @ignore @internal `wsp_ggml_nbytes` of the tensor struct at byte `at` of the 32-bit
 * `words` of a pool, without allocating.
 */
export function nbytesAt(words: Int32Array, at: number): number {
  const traits = (TRAITS ??= runtime().traits)[words[(at >> 2) + TYPE_W]];
  if (!traits) return 0;
  const v = words, e = (at >> 2) + NE_W, b = (at >> 2) + NB_W;
  if (sizesFit32(v, e, b)) {
    return bytesSpanned(traits, v[e], v[b], v[e + 2], v[b + 2], v[e + 4], v[b + 4], v[e + 6], v[b + 6]);
  }
  return bytesSpanned(traits, i64At(v, at + NE), i64At(v, at + NB), i64At(v, at + NE + 8), i64At(v, at + NB + 8),
    i64At(v, at + NE + 16), i64At(v, at + NB + 16), i64At(v, at + NE + 24), i64At(v, at + NB + 24));
}

/**
 * Whether the four ne (from word `e`) and nb (from word `b`) of a tensor are all
 * below 2^31: every high word 0 and no low word negative, so that they can be
 * read as 32-bit integers (about twice as fast as i64At's doubles in a loop on Deno and Bun).
 */
function sizesFit32(v: Int32Array, e: number, b: number): boolean {
  return (v[e + 1] | v[e + 3] | v[e + 5] | v[e + 7] | v[b + 1] | v[b + 3] | v[b + 5] | v[b + 7]) === 0 &&
    (v[e] | v[e + 2] | v[e + 4] | v[e + 6] | v[b] | v[b + 2] | v[b + 4] | v[b + 6]) >= 0;
}

/** `wsp_ggml_nbytes` from the four ne and nb: 0 when a dimension is empty. */
function bytesSpanned(traits: TypeTraits, ne0: number, nb0: number, ne1: number, nb1: number, ne2: number, nb2: number, ne3: number, nb3: number): number {
  if (ne0 <= 0 || ne1 <= 0 || ne2 <= 0 || ne3 <= 0) return 0;
  const first = traits.blckSize === 1 ? traits.typeSize + (ne0 - 1) * nb0 : Math.floor((ne0 * nb0) / traits.blckSize); // size_t division, as in C
  return first + (ne1 - 1) * nb1 + (ne2 - 1) * nb2 + (ne3 - 1) * nb3;
}

/** The typed array that holds a tensor's elements in JS. */
export type TensorData =
  | Float32Array
  | Float64Array
  | Uint16Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array;

/** A typed array class, to ask `get()` / `view()` for a specific array type. */
export interface ArrayType<A extends TensorData> {
  /** Constructs the array (as typed arrays do). */
  new (buffer: ArrayBuffer, byteOffset: number, length: number): A;
  /** The class name, for messages. */
  readonly name: string;
}

/** `value` as an `A`, or a {@linkcode GgmlTypeError} naming what it is (for `get`-style overloads). */
export function as<A extends TensorData>(op: string, t: Tensor, value: TensorData, type: ArrayType<A> | undefined): A {
  if (type !== undefined && !(value instanceof type)) {
    throw new GgmlTypeError(`${op}: ${t.describe()} reads as a ${value.constructor.name}, not a ${type.name}`);
  }
  return value as A;
}

/** A typed-array constructor over existing memory. */
export type ArrayCtor = { new (buffer: ArrayBuffer, byteOffset: number, length: number): TensorData; readonly BYTES_PER_ELEMENT: number; readonly name: string };

/** The typed array whose elements are a tensor type's elements (raw storage), by type; none for quantized types. */
export function storageArray(type: number): ArrayCtor | undefined {
  return STORAGE[type];
}

const STORAGE: Partial<Record<number, ArrayCtor>> = {
  [Type.F32]: Float32Array,
  [Type.F64]: Float64Array,
  [Type.F16]: Uint16Array,
  [Type.BF16]: Uint16Array,
  [Type.I8]: Int8Array,
  [Type.I16]: Int16Array,
  [Type.I32]: Int32Array,
  [Type.I64]: BigInt64Array,
};

/** The integer types' ranges, for plain arrays given to `set`. */
const INT_RANGE: Partial<Record<number, readonly [number, number]>> = {
  [Type.I8]: [-(2 ** 7), 2 ** 7 - 1],
  [Type.I16]: [-(2 ** 15), 2 ** 15 - 1],
  [Type.I32]: [-(2 ** 31), 2 ** 31 - 1],
  [Type.I64]: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/**
 * A plain array for {@linkcode Tensor.set} as the typed array its type takes:
 * Float32Array for f16 and bf16 (set converts it as it would the caller's),
 * the storage array otherwise. Each element is checked, since a typed array
 * would silently turn a string into a number or wrap an integer.
 */
function fromPlain(t: Tensor, values: ArrayLike<number>): TensorData {
  const type = t.type;
  if (values.length !== t.nelements) {
    throw new BoundsError(`set: ${t.describe()} holds ${t.nelements} elements, got ${values.length} (tensor write out of bounds)`);
  }
  const ctor = type === Type.F16 || type === Type.BF16 ? Float32Array : STORAGE[type];
  if (!ctor) throw new GgmlTypeError(`set: ${t.describe()} is quantized and takes its raw blocks as a Uint8Array; quantize() makes them from floats`);
  const range = INT_RANGE[type];
  const out = new ctor(new ArrayBuffer(values.length * ctor.BYTES_PER_ELEMENT), 0, values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== "number") throw new ArgumentError(`set: values[${i}] must be a number, got ${typeof v}`);
    if (range && (!Number.isInteger(v) || v < range[0] || v > range[1])) {
      throw new ArgumentError(`set: values[${i}] must be an integer in ${range[0]}..${range[1]} for ${t.describe()}, got ${v}`);
    }
    out[i] = (type === Type.I64 ? BigInt(v) : v) as never;
  }
  return out;
}

/** Where a tensor's data lives in JS memory. */
export interface DataLocation {
  /** The pool's buffer (detached once its context is freed). */
  readonly buffer: ArrayBuffer;
  /** Byte offset of the data in `buffer`. */
  readonly offset: number;
}

/**
 * A tensor of a {@linkcode Context}. Create tensors with the context
 * (`ctx.newTensor2d(Type.F32, 4, 3)`) or with ops (`ctx.mulMat(a, b)`); the
 * tensor keeps its context alive, and every use after the context is freed
 * throws {@linkcode UseAfterFreeError}.
 */
export class Tensor {
  /** The context that owns this tensor. */
  readonly context: Context;
  /** @ignore @internal The struct's byte offset in the context's pool. */
  readonly _off: number;
  /**
   * @ignore @internal The context's Tensor made before this one (`Context._wrap`'s
   * chain; it keeps those small objects reachable, as the context does).
   */
  readonly _prev: Tensor | undefined;

  // The address is not stored: on V8 (Deno, Node) a field holding an address (above 2^31)
  // keeps a boxed number, one more allocation per tensor, while base + offset computed where
  // it is passed to a call stays an unboxed double.

  /** @ignore @internal Tensors come from a {@linkcode Context}; this is not a public constructor. */
  constructor(context: Context, offset: number, prev: Tensor | undefined, token?: symbol) {
    if (token !== INTERNAL) internal("Tensor", token, "ctx.newTensor() or an op");
    this.context = context;
    this._off = offset;
    this._prev = prev;
  }

  /** @ignore @internal The native address of the struct. */
  get _ptr(): number {
    return this.context._base + this._off;
  }

  /** @ignore @internal The address as the runtime's FFI passes it fastest (`NativeLibrary.handles`): a number on every runtime. */
  get _h(): Handle {
    return this._ptr;
  }

  #view(): DataView {
    return this.context._pool("tensor");
  }

  #words(): Int32Array {
    return this.context._words("tensor");
  }

  /** The native address of the `struct wsp_ggml_tensor` (for raw bindings; valid while the context lives). */
  get pointer(): number {
    this.#view();
    return this._ptr;
  }

  /** The element type (`Type`). */
  get type(): Type {
    return this.#words()[(this._off + F.type.offset) >> 2] as Type;
  }

  /** The traits of {@linkcode type}. */
  get traits(): TypeTraits {
    return runtime().traits[this.type]!;
  }

  /** Elements per dimension, innermost first (ggml's `ne`; always 4 entries). */
  get shape(): [number, number, number, number] {
    const v = this.#words(), o = this._off + NE;
    return [i64At(v, o), i64At(v, o + 8), i64At(v, o + 16), i64At(v, o + 24)];
  }

  /** Stride in bytes per dimension (ggml's `nb`; always 4 entries). */
  get strides(): [number, number, number, number] {
    const v = this.#words(), o = this._off + NB;
    return [i64At(v, o), i64At(v, o + 8), i64At(v, o + 16), i64At(v, o + 24)];
  }

  /** @ignore @internal `ne[i]` for a known-good `i` (0 … 3): the checks' allocation-free read. */
  _ne(i: number): number {
    return i64At(this.#words(), this._off + NE + 8 * i);
  }

  /** @ignore @internal The word index of ne[0] in `context._w` (ne[i] is the int64 at 2·i, 2·i + 1 words on). */
  _neIndex(): number {
    return (this._off >> 2) + NE_W;
  }

  /** @ignore @internal `nb[i]` for a known-good `i` (0 … 3). */
  _nb(i: number): number {
    return i64At(this.#words(), this._off + NB + 8 * i);
  }

  /** Elements in dimension `i` (`ne[i]`). */
  ne(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= MAX_DIMS) throw new BoundsError(`dimension ${i} is not in 0..${MAX_DIMS - 1}`);
    return i64At(this.#words(), this._off + NE + 8 * i);
  }

  /** Stride in bytes of dimension `i` (`nb[i]`). */
  nb(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= MAX_DIMS) throw new BoundsError(`dimension ${i} is not in 0..${MAX_DIMS - 1}`);
    return i64At(this.#words(), this._off + NB + 8 * i);
  }

  /** Number of dimensions, trailing 1s left out (at least 1; `wsp_ggml_n_dims`). */
  get nDims(): number {
    const w = this.#words(), o = this._off + NE;
    for (let i = MAX_DIMS - 1; i >= 1; i--) if (i64At(w, o + 8 * i) > 1) return i + 1;
    return 1;
  }

  /** Total number of elements. */
  get nelements(): number {
    const w = this.#words(), e = (this._off >> 2) + NE_W;
    if ((w[e + 1] | w[e + 3] | w[e + 5] | w[e + 7]) === 0 && (w[e] | w[e + 2] | w[e + 4] | w[e + 6]) >= 0) return w[e] * w[e + 2] * w[e + 4] * w[e + 6];
    const o = this._off + NE;
    return i64At(w, o) * i64At(w, o + 8) * i64At(w, o + 16) * i64At(w, o + 24);
  }

  /** Number of rows (`ne[1] * ne[2] * ne[3]`). */
  get nrows(): number {
    const w = this.#words(), e = (this._off >> 2) + NE_W;
    if ((w[e + 3] | w[e + 5] | w[e + 7]) === 0 && (w[e + 2] | w[e + 4] | w[e + 6]) >= 0) return w[e + 2] * w[e + 4] * w[e + 6];
    const o = this._off + NE;
    return i64At(w, o + 8) * i64At(w, o + 16) * i64At(w, o + 24);
  }

  /** Bytes spanned by the data (`wsp_ggml_nbytes`). */
  get nbytes(): number {
    return nbytesAt(this.#words(), this._off);
  }

  /** The operation that produces this tensor (`Op.NONE` for a leaf). */
  get op(): Op {
    return this.#words()[(this._off + F.op.offset) >> 2] as Op;
  }

  /** The unary op when {@linkcode op} is `Op.UNARY`, the GLU op when it is `Op.GLU`, else undefined. */
  get subOp(): UnaryOp | GluOp | undefined {
    const op = this.op;
    if (op !== Op.UNARY && op !== Op.GLU) return undefined;
    return this.#words()[(this._off + F.op_params.offset) >> 2] as UnaryOp;
  }

  /** Integer op parameter `i` (`op_params[i]`). */
  opParam(i: number): number {
    const n = F.op_params.length;
    if (!Number.isInteger(i) || i < 0 || i >= n) throw new BoundsError(`op parameter ${i} is not in 0..${n - 1}`);
    return this.#words()[(this._off + F.op_params.offset + 4 * i) >> 2];
  }

  /** Tensor flags (`TensorFlag` bits). */
  get flags(): number {
    return this.#words()[(this._off + F.flags.offset) >> 2];
  }

  /** The source tensors of the op, in order (`src[]` without the NULLs at the end). */
  get src(): Tensor[] {
    const v = this.#words(), out: Tensor[] = [];
    for (let i = 0; i < F.src.length; i++) {
      const p = i64At(v, this._off + F.src.offset + 8 * i);
      if (p !== 0) out.push(this.context._resolve(p));
    }
    return out;
  }

  /** The tensor this one is a view of, if any. */
  get viewSrc(): Tensor | null {
    const p = i64At(this.#words(), this._off + F.view_src.offset);
    return p === 0 ? null : this.context._resolve(p);
  }

  /** @ignore @internal The native data address (0 when not allocated). */
  get _data(): number {
    return i64At(this.#words(), this._off + F.data.offset);
  }

  /** Whether the tensor has data (false in a `noAlloc` context). */
  get isAllocated(): boolean {
    return this._data !== 0;
  }

  /** The tensor's name (at most 63 bytes of UTF-8). */
  get name(): string {
    const v = this.#view();
    const bytes = new Uint8Array(v.buffer, v.byteOffset + this._off + F.name.offset, MAX_NAME);
    const end = bytes.indexOf(0);
    return decoder.decode(bytes.subarray(0, end < 0 ? MAX_NAME : end));
  }

  set name(value: string) {
    this.setName(value);
  }

  /** Sets the name (`wsp_ggml_set_name`; longer names are cut at 63 bytes, as in C). Returns this tensor. */
  setName(value: string): this {
    if (typeof value !== "string") throw new ArgumentError(`a tensor name must be a string, got ${typeof value}`);
    if (value.includes("\0")) throw new ArgumentError("a tensor name cannot contain NUL");
    const v = this.#view();
    const bytes = new Uint8Array(v.buffer, v.byteOffset + this._off + F.name.offset, MAX_NAME);
    const encoded = encoder.encode(value);
    let n = Math.min(encoded.length, MAX_NAME - 1);
    while (n > 0 && n < encoded.length && (encoded[n] & 0xc0) === 0x80) n--; // never cut inside a character
    bytes.fill(0);
    bytes.set(encoded.subarray(0, n));
    return this;
  }

  /** Whether the elements are stored densely in order (`wsp_ggml_is_contiguous`). */
  get isContiguous(): boolean {
    return this.isContiguousN(0);
  }

  /**
   * Whether dimensions above `n` are contiguous (`wsp_ggml_is_contiguous_0/1/2`:
   * `n = 1` lets rows be strided, as unary ops accept).
   */
  isContiguousN(n: number): boolean {
    this.#words();
    return this._contiguousN(n);
  }

  /**
   * @ignore @internal {@linkcode isContiguousN} without the liveness check, for the
   * ops' checks (their operands were found live). Unary ops check this on
   * every call, so it reads the words in place: as 32-bit integers when
   * every ne and nb is below 2^31 (about twice as fast as doubles, in a
   * loop on Deno and Bun), else as doubles (i64At).
   */
  _contiguousN(n: number): boolean {
    const v = this.context._w, e = (this._off >> 2) + NE_W, b = (this._off >> 2) + NB_W;
    const traits = (TRAITS ??= runtime().traits)[v[(this._off >> 2) + TYPE_W]]!;
    if (sizesFit32(v, e, b)) {
      return contiguousAbove(n, traits, v[e], v[b], v[e + 2], v[b + 2], v[e + 4], v[b + 4], v[e + 6], v[b + 6]);
    }
    const at = this._off;
    return contiguousAbove(n, traits, i64At(v, at + NE), i64At(v, at + NB), i64At(v, at + NE + 8), i64At(v, at + NB + 8),
      i64At(v, at + NE + 16), i64At(v, at + NB + 16), i64At(v, at + NE + 24), i64At(v, at + NB + 24));
  }


  /** Whether dimensions 0 and 1 are swapped in memory (`wsp_ggml_is_transposed`). */
  get isTransposed(): boolean {
    this.#words();
    return this._transposed();
  }

  /** @ignore @internal {@linkcode isTransposed} without the liveness check, for the ops' checks. */
  _transposed(): boolean {
    const v = this.context._w, b = (this._off >> 2) + NB_W;
    if ((v[b + 1] | v[b + 3]) === 0 && (v[b] | v[b + 2]) >= 0) return v[b] > v[b + 2];
    return i64At(v, this._off + NB) > i64At(v, this._off + NB + 8);
  }

  /** Marks the tensor as a trainable parameter (`wsp_ggml_set_param`; only a leaf can be one). */
  setParam(): this {
    if (this.op !== Op.NONE) throw new ArgumentError(`setParam: only a leaf tensor (op NONE) can be a parameter; ${this.describe()} is produced by an op`);
    this.#setFlag(TensorFlag.PARAM);
    return this;
  }

  /** Marks the tensor as the loss to minimise (`wsp_ggml_set_loss`; a scalar f32). */
  setLoss(): this {
    if (this.type !== Type.F32) throw new GgmlTypeError(`setLoss: the loss must be f32, ${this.describe()} is not`);
    if (this.nelements !== 1) throw new ShapeError(`setLoss: the loss must be a scalar, ${this.describe()} is not`);
    this.#setFlag(TensorFlag.LOSS);
    return this;
  }

  /** Marks the tensor as a graph input (`wsp_ggml_set_input`). */
  setInput(): this {
    this.#setFlag(TensorFlag.INPUT);
    return this;
  }

  /** Marks the tensor as a graph output (`wsp_ggml_set_output`). */
  setOutput(): this {
    this.#setFlag(TensorFlag.OUTPUT);
    return this;
  }

  #setFlag(flag: number): void {
    const v = this.#view();
    v.setInt32(this._off + F.flags.offset, v.getInt32(this._off + F.flags.offset, true) | flag, true);
  }

  /** A short description for messages: `'name' f32 [4, 3, 1, 1]`. */
  describe(): string {
    const name = this.name;
    return `${name ? `'${name}' ` : "tensor "}${this.traits?.name ?? this.type} [${this.shape.join(", ")}]`;
  }

  /** @ignore @internal Where the data lives, or a {@linkcode NotAllocatedError}. */
  _location(what: string): DataLocation {
    const data = this._data;
    if (data === 0) {
      throw new NotAllocatedError(`${what}: ${this.describe()} has no data (tensor not allocated: its context was created with noAlloc)`);
    }
    return this.context._locate(data, this.nbytes, what);
  }

  /**
   * A zero-copy view of the data: `Float32Array` for f32, `Uint16Array` (raw
   * bits) for f16 and bf16, `Int32Array` for i32, …, `Uint8Array` (raw
   * blocks) for quantized types. Writes go straight to the tensor. The view
   * is detached (length 0, every access `undefined` or a TypeError) the
   * moment the context that owns the memory is freed (`free()`, `using`): it
   * never dangles. A context collected by the garbage collector leaves its
   * views intact: the pool is JS memory, which they keep.
   *
   * Pass the array class (`t.view(Float32Array)`) to have the result typed
   * as that class; it is checked against the tensor's type.
   *
   * @throws {ShapeError} when the tensor is not contiguous (use `get()`, or `ctx.cont()`)
   * @throws {GgmlTypeError} when `type` is given and is not the tensor's array type
   */
  view(): TensorData;
  /** The view as an `A` (`t.view(Float32Array)`), checked against the tensor's type. */
  view<A extends TensorData>(type: ArrayType<A>): A;
  view<A extends TensorData>(type?: ArrayType<A>): TensorData {
    return as("view", this, this.#viewAny(), type);
  }

  #viewAny(): TensorData {
    if (!this.isContiguous) throw new ShapeError(`view: ${this.describe()} is not contiguous; use get() or ctx.cont()`);
    const { buffer, offset } = this._location("view");
    const ctor = STORAGE[this.type];
    if (!ctor) return new Uint8Array(buffer, offset, this.nbytes);
    if (offset % ctor.BYTES_PER_ELEMENT !== 0) {
      throw new ShapeError(`view: the data of ${this.describe()} is not aligned for a ${ctor.name}`);
    }
    return new ctor(buffer, offset, this.nelements);
  }

  /**
   * Copies `values` into the tensor. Accepted: `Float32Array` for f32;
   * `Float32Array` (converted, round to nearest even) or `Uint16Array` (raw
   * bits) for f16 and bf16; `Int32Array` for i32 (and the other integer
   * types' own arrays); `Uint8Array` of exactly {@linkcode nbytes} bytes for
   * quantized types (raw blocks). The length must be the element count.
   *
   * A plain array of numbers (any other array-like) is converted to the
   * tensor's element type first: f32, f64, f16 and bf16 take any numbers,
   * integer types integers in their range. Quantized types take none (use
   * {@linkcode quantize}, then `set` the blocks).
   *
   * @throws {GgmlTypeError} for an array type the tensor type does not take
   * @throws {ArgumentError} for an element of a plain array that the type cannot hold
   * @throws {BoundsError} when the length differs
   * @throws {NotAllocatedError} when the tensor has no data
   */
  set(values: ArrayLike<number> | TensorData): this {
    if (!ArrayBuffer.isView(values) && values !== null && typeof values === "object" && typeof values.length === "number") {
      values = fromPlain(this, values);
    }
    const type = this.type;
    const storage = STORAGE[type];
    const convert = (type === Type.F16 || type === Type.BF16) && values instanceof Float32Array;
    if (!ArrayBuffer.isView(values)) {
      throw new GgmlTypeError(`set: expected a typed array for ${this.describe()}, got ${values === null ? "null" : typeof values}`);
    }
    const want = storage ?? Uint8Array;
    if (!convert && !(values instanceof want)) {
      const accepted = convert || type === Type.F16 || type === Type.BF16 ? "Float32Array or Uint16Array" : want.name;
      throw new GgmlTypeError(`set: ${this.describe()} takes a ${accepted}, got ${values.constructor.name}`);
    }
    const count = storage || convert ? this.nelements : this.nbytes;
    if (values.length !== count) {
      throw new BoundsError(`set: ${this.describe()} holds ${count} ${storage || convert ? "elements" : "bytes"}, got ${values.length} (tensor write out of bounds)`);
    }
    if (!this.isContiguous) throw new ShapeError(`set: ${this.describe()} is not contiguous; set the tensor it views`);
    const { buffer, offset } = this._location("set");
    if (convert) {
      const s = runtime().lib.symbols;
      const dst = this._data;
      const src = values as Float32Array;
      if (type === Type.F16) s.wsp_ggml_fp32_to_fp16_row(ffi.addressOf(src), dst, count);
      else s.wsp_ggml_fp32_to_bf16_row(ffi.addressOf(src), dst, count);
      keepAlive(src);
    } else {
      const v = values as TensorData;
      new Uint8Array(buffer, offset, v.byteLength).set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
    }
    return this;
  }

  /** A copy of the raw bytes of the elements, in logical order (strided tensors are gathered). */
  bytes(): Uint8Array {
    const { buffer, offset } = this._location("get");
    const size = this.nbytes;
    if (this.isContiguous) return new Uint8Array(buffer, offset, size).slice();
    const { blckSize, typeSize } = this.traits;
    if (blckSize !== 1) throw new ShapeError(`get: ${this.describe()} is quantized and not contiguous`);
    const ne = this.shape, nb = this.strides;
    const out = new Uint8Array(this.nelements * typeSize);
    const src = new Uint8Array(buffer, offset, size);
    let at = 0;
    for (let i3 = 0; i3 < ne[3]; i3++) {
      for (let i2 = 0; i2 < ne[2]; i2++) {
        for (let i1 = 0; i1 < ne[1]; i1++) {
          const row = i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
          if (nb[0] === typeSize) {
            out.set(src.subarray(row, row + ne[0] * typeSize), at);
            at += ne[0] * typeSize;
          } else {
            for (let i0 = 0; i0 < ne[0]; i0++, at += typeSize) {
              const e = row + i0 * nb[0];
              out.set(src.subarray(e, e + typeSize), at);
            }
          }
        }
      }
    }
    return out;
  }

  /**
   * A copy of the elements in logical order: `Float32Array` for f32, f16 and
   * bf16 (converted), `Int32Array` for i32, the matching typed array for the
   * other plain types, and the raw bytes (`Uint8Array`) for quantized types.
   * Works for non-contiguous tensors (views, permutations) too. Pass the
   * array class (`t.get(Float32Array)`) to have the result typed as that
   * class; it is checked against the tensor's type.
   *
   * @throws {GgmlTypeError} when `type` is given and is not what the tensor reads as
   */
  get(): TensorData;
  /** The copy as an `A` (`t.get(Float32Array)`), checked against the tensor's type. */
  get<A extends TensorData>(type: ArrayType<A>): A;
  get<A extends TensorData>(type?: ArrayType<A>): TensorData {
    return as("get", this, this.#getAny(), type);
  }

  #getAny(): TensorData {
    const type = this.type;
    const raw = this.bytes();
    if (type === Type.F16 || type === Type.BF16) {
      const n = raw.length / 2;
      const out = new Float32Array(n);
      const s = runtime().lib.symbols;
      if (type === Type.F16) s.wsp_ggml_fp16_to_fp32_row(ffi.addressOf(raw), ffi.addressOf(out), n);
      else s.wsp_ggml_bf16_to_fp32_row(ffi.addressOf(raw), ffi.addressOf(out), n);
      keepAlive([raw, out]);
      return out;
    }
    const ctor = STORAGE[type];
    return ctor ? new ctor(raw.buffer as ArrayBuffer, 0, raw.length / ctor.BYTES_PER_ELEMENT) : raw;
  }

  /** The elements as numbers (a plain array; for f16/bf16 the converted values). */
  toArray(): number[] {
    return Array.from(this.get() as ArrayLike<number | bigint>, Number);
  }

  /** Sets every byte of the data to 0 (`wsp_ggml_set_zero`). */
  setZero(): this {
    const { buffer, offset } = this._location("setZero");
    new Uint8Array(buffer, offset, this.nbytes).fill(0);
    return this;
  }
}
