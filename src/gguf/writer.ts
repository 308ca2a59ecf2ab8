/**
 * Writing GGUF files through ggml's writer (`wsp_gguf_init_empty`,
 * `wsp_gguf_set_*`, `wsp_gguf_add_tensor`, `wsp_gguf_write_to_file`,
 * `wsp_gguf_get_meta_size` / `_data`), with every assert and abort of those
 * functions checked in TypeScript first.
 *
 * @module
 */
import { GgufType, layouts } from "../ffi/bindings.gen.ts";
import { ArgumentError, GgufError, NotAllocatedError, ShapeError, UseAfterFreeError } from "../core/errors.ts";
import { cString } from "../ffi/common.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import { Tensor } from "../core/tensor.ts";
import { bufferOf } from "../backend/backend.ts";
import { checkData } from "../core/graph.ts";
import { GGUF_ARRAYS, type GgufEntry, type GgufFile, type GgufValue } from "./reader.ts";

const INT_RANGE: Partial<Record<number, [number, number]>> = {
  [GgufType.UINT8]: [0, 255],
  [GgufType.INT8]: [-128, 127],
  [GgufType.UINT16]: [0, 65535],
  [GgufType.INT16]: [-32768, 32767],
  [GgufType.UINT32]: [0, 2 ** 32 - 1],
  [GgufType.INT32]: [-(2 ** 31), 2 ** 31 - 1],
};
const BIG_RANGE: Partial<Record<number, [bigint, bigint]>> = {
  [GgufType.UINT64]: [0n, 2n ** 64n - 1n],
  [GgufType.INT64]: [-(2n ** 63n), 2n ** 63n - 1n],
};
type Storage = { new (n: number): ArrayLike<number | bigint> & { [i: number]: number | bigint; buffer: ArrayBufferLike } };
/** Element storage for set_arr_data: the reader's typed arrays, and bools as bytes. */
const STORAGE: Partial<Record<number, Storage>> = { ...GGUF_ARRAYS, [GgufType.BOOL]: Uint8Array } as Partial<Record<number, Storage>>;
const NAMES = new Map(Object.entries(GgufType).map(([k, v]) => [v as number, k.toLowerCase()]));
const ALIGNMENT_KEY = "general.alignment";
/** The address given to zero-element tensors (see addTensor); module-lived, never read. */
const EMPTY = new Uint8Array(8);

/** A scalar checked for `type`, as the value C takes. */
function checkScalar(what: string, type: number, v: unknown): number | bigint | boolean | string {
  const bad = (want: string) => new GgufError("TYPE", `${what}: a ${NAMES.get(type)} value must be ${want}, got ${typeof v === "bigint" ? `${v}n` : JSON.stringify(v) ?? String(v)}`);
  const int = INT_RANGE[type];
  if (int) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < int[0] || v > int[1]) throw bad(`an integer in ${int[0]}..${int[1]}`);
    return v;
  }
  const big = BIG_RANGE[type];
  if (big) {
    const b = typeof v === "bigint" ? v : typeof v === "number" && Number.isSafeInteger(v) ? BigInt(v) : undefined;
    if (b === undefined || b < big[0] || b > big[1]) throw bad(`a bigint (or safe integer) in ${big[0]}..${big[1]}`);
    return b;
  }
  if (type === GgufType.FLOAT32 || type === GgufType.FLOAT64) {
    if (typeof v !== "number") throw bad("a number");
    return v;
  }
  if (type === GgufType.BOOL) {
    if (typeof v !== "boolean") throw bad("a boolean");
    return v;
  }
  if (type === GgufType.STRING) {
    if (typeof v !== "string") throw bad("a string");
    if (v.includes("\0")) throw new GgufError("INVALID", `${what}: ggml's setters take C strings, which cannot contain NUL`);
    return v;
  }
  throw new GgufError("TYPE", `${what}: ${String(type)} is not a scalar GGUF type (use setArray for arrays)`);
}

interface State {
  ptr: number;
}
const finalizer = new FinalizationRegistry<State>((s) => {
  if (s.ptr !== 0) runtime().lib.symbols.wsp_gguf_free(s.ptr);
  s.ptr = 0;
});

/**
 * A GGUF file being built: KVs and tensors, then {@linkcode write}. Free it
 * with {@linkcode free} or `using` (the garbage collector frees a forgotten
 * one).
 *
 * ```ts
 * using w = new GgufWriter();
 * w.set("general.name", GgufType.STRING, "tiny");
 * w.setArray("tokens", GgufType.STRING, ["a", "b"]);
 * w.addTensor(weight);
 * w.write("tiny.gguf");
 * ```
 */
export class GgufWriter {
  readonly #state: State;
  readonly #keys = new Set<string>();
  readonly #tensors = new Map<string, Tensor>();

  /** An empty file (`wsp_gguf_init_empty`); ggml aligns its data to 32 bytes. */
  constructor() {
    const ptr = runtime().lib.symbols.wsp_gguf_init_empty();
    if (ptr === 0) throw new GgufError("IO", "wsp_gguf_init_empty failed");
    this.#state = { ptr };
    finalizer.register(this, this.#state, this);
  }

  get #ptr(): number {
    if (this.#state.ptr === 0) throw new UseAfterFreeError("GgufWriter: used after free()");
    return this.#state.ptr;
  }

  /** Frees the native context (idempotent). */
  free(): void {
    if (this.#state.ptr === 0) return;
    finalizer.unregister(this);
    runtime().lib.symbols.wsp_gguf_free(this.#state.ptr);
    this.#state.ptr = 0;
    this.#tensors.clear();
  }

  /** Frees the native context (`using w = new GgufWriter()`). */
  [Symbol.dispose](): void {
    this.free();
  }

  /** The keys set so far, in order. */
  keys(): string[] {
    return [...this.#keys];
  }

  #key(key: string, replace: boolean): Uint8Array {
    this.#ptr;
    if (typeof key !== "string" || key.length === 0) throw new GgufError("INVALID", `a key must be a non-empty string, got ${JSON.stringify(key)}`);
    if (key.includes("\0")) throw new GgufError("INVALID", `key ${JSON.stringify(key)} contains NUL`);
    if (!replace && this.#keys.has(key)) throw new GgufError("DUPLICATE", `key ${JSON.stringify(key)} is already set (pass { replace: true }, or remove() it first)`);
    return cString(key);
  }

  #added(key: string): void {
    this.#keys.delete(key); // ggml removes the old entry and appends the new one
    this.#keys.add(key);
  }

  /**
   * Sets a scalar KV (`wsp_gguf_set_val_*`). u64 and i64 take a bigint (or a
   * safe integer); the other integer types an integer in their range.
   *
   * @throws {GgufError} `DUPLICATE` when the key exists (unless `replace`), `TYPE` for a value of another type, `INVALID` for a bad key or string
   */
  set(key: string, type: GgufType, value: number | bigint | boolean | string, options: { replace?: boolean } = {}): this {
    const k = this.#key(key, options.replace ?? false);
    const v = checkScalar(`set(${JSON.stringify(key)})`, type, value);
    if (key === ALIGNMENT_KEY) {
      // ggml asserts a u32 power of 2, and even then does not update the
      // context's alignment: the file would claim one alignment and use 32.
      if (type !== GgufType.UINT32) throw new GgufError("TYPE", `${ALIGNMENT_KEY} must be a u32 (ggml aborts otherwise)`);
      if (v !== 32) throw new GgufError("INVALID", `${ALIGNMENT_KEY} ${v}: ggml's writer always aligns to 32, a file claiming ${v} would be corrupt`);
    }
    const s = runtime().lib.symbols, p = this.#ptr, kp = ffi.addressOf(k);
    switch (type) {
      case GgufType.UINT8: s.wsp_gguf_set_val_u8(p, kp, v as number); break;
      case GgufType.INT8: s.wsp_gguf_set_val_i8(p, kp, v as number); break;
      case GgufType.UINT16: s.wsp_gguf_set_val_u16(p, kp, v as number); break;
      case GgufType.INT16: s.wsp_gguf_set_val_i16(p, kp, v as number); break;
      case GgufType.UINT32: s.wsp_gguf_set_val_u32(p, kp, v as number); break;
      case GgufType.INT32: s.wsp_gguf_set_val_i32(p, kp, v as number); break;
      case GgufType.FLOAT32: s.wsp_gguf_set_val_f32(p, kp, v as number); break;
      case GgufType.UINT64: s.wsp_gguf_set_val_u64(p, kp, v as bigint); break;
      case GgufType.INT64: s.wsp_gguf_set_val_i64(p, kp, v as bigint); break;
      case GgufType.FLOAT64: s.wsp_gguf_set_val_f64(p, kp, v as number); break;
      case GgufType.BOOL: s.wsp_gguf_set_val_bool(p, kp, v as boolean); break;
      case GgufType.STRING: {
        const sv = cString(v as string);
        s.wsp_gguf_set_val_str(p, kp, ffi.addressOf(sv));
        keepAlive(sv);
        break;
      }
    }
    keepAlive(k);
    this.#added(key);
    return this;
  }

  /**
   * Sets an array KV of `elementType` (`wsp_gguf_set_arr_data` /
   * `_arr_str`): numbers (or the matching typed array) for numeric types,
   * bigints for u64 / i64, booleans, strings. Arrays of arrays are not
   * supported by ggml.
   *
   * @throws {GgufError} as {@linkcode set}, per element
   */
  setArray(key: string, elementType: GgufType, values: ArrayLike<unknown>, options: { replace?: boolean } = {}): this {
    const k = this.#key(key, options.replace ?? false);
    if (key === ALIGNMENT_KEY) throw new GgufError("TYPE", `${ALIGNMENT_KEY} must be a u32 scalar (ggml aborts otherwise)`);
    if (values === null || typeof values !== "object" || typeof values.length !== "number") throw new GgufError("TYPE", `setArray(${JSON.stringify(key)}): values must be an array`);
    const s = runtime().lib.symbols, p = this.#ptr, n = values.length;
    const what = (i: number) => `setArray(${JSON.stringify(key)})[${i}]`;
    if (elementType === GgufType.STRING) {
      const strings = Array.from(values, (v, i) => cString(checkScalar(what(i), GgufType.STRING, v) as string));
      const ptrs = new BigUint64Array(Math.max(n, 1));
      strings.forEach((b, i) => (ptrs[i] = BigInt(ffi.addressOf(b))));
      s.wsp_gguf_set_arr_str(p, ffi.addressOf(k), ffi.addressOf(ptrs), n);
      keepAlive([strings, ptrs]);
    } else {
      const Store = STORAGE[elementType];
      // set_arr_data with ARRAY or an unknown type divides by its size 0 in C.
      if (!Store) throw new GgufError("TYPE", `setArray(${JSON.stringify(key)}): ${String(elementType)} is not an array element type ggml can store`);
      const data = new Store(Math.max(n, 1));
      for (let i = 0; i < n; i++) {
        const v = checkScalar(what(i), elementType, values[i]);
        data[i] = typeof v === "boolean" ? (v ? 1 : 0) : (v as number | bigint);
      }
      s.wsp_gguf_set_arr_data(p, ffi.addressOf(k), elementType, ffi.addressOf(data as unknown as Uint8Array), n);
      keepAlive(data);
    }
    keepAlive(k);
    this.#added(key);
    return this;
  }

  /** Sets every KV of `entries` (e.g. `readGguf(path).entries`), replacing existing keys. */
  setAll(entries: readonly GgufEntry[] | GgufFile): this {
    const list = Array.isArray(entries) ? entries : (entries as GgufFile).entries;
    for (const e of list) {
      if (e.key === ALIGNMENT_KEY && e.value === 32) continue;
      if (e.type === GgufType.ARRAY) this.setArray(e.key, e.arrayType!, e.value as ArrayLike<unknown>, { replace: true });
      else this.set(e.key, e.type, e.value as Exclude<GgufValue, ArrayLike<unknown>>, { replace: true });
    }
    return this;
  }

  /** Removes `key` (`wsp_gguf_remove_key`); returns whether it existed. */
  remove(key: string): boolean {
    const k = this.#key(key, true);
    const id = Number(runtime().lib.symbols.wsp_gguf_remove_key(this.#ptr, ffi.addressOf(k)));
    keepAlive(k);
    this.#keys.delete(key);
    return id >= 0;
  }

  /**
   * Adds a tensor (`wsp_gguf_add_tensor`): its name, type, shape and (at
   * {@linkcode write}) its data. The struct is copied now, the data read at
   * write, so the tensor's context must stay alive until then.
   *
   * @throws {GgufError} `DUPLICATE` for a name already added (ggml aborts), `INVALID` for an unnamed tensor
   * @throws {ShapeError} for a non-contiguous tensor (ggml asserts at write)
   */
  addTensor(tensor: Tensor): this {
    this.#ptr;
    if (!(tensor instanceof Tensor)) throw new ArgumentError("addTensor: expected a Tensor");
    const name = tensor.name;
    if (name.length === 0) throw new GgufError("INVALID", `addTensor: ${tensor.describe()} has no name (setName first)`);
    if (this.#tensors.has(name)) throw new GgufError("DUPLICATE", `addTensor: a tensor named ${JSON.stringify(name)} was already added`);
    if (!tensor.isContiguous) throw new ShapeError(`addTensor: ${tensor.describe()} is not contiguous (ggml writes contiguous data only); add ctx.cont() of it`);
    const s = runtime().lib.symbols;
    // ggml copies the struct, and at write reads the data through the copy's buffer pointer (or its data
    // pointer when it has none): a buffer freed or replaced since would be used after free. The copy gets
    // no buffer and no data; write() points it at the tensor's data of that moment.
    const L = layouts.wsp_ggml_tensor;
    const pool = tensor.context._pool("addTensor");
    const struct = new Uint8Array(pool.buffer, pool.byteOffset + tensor._off, L.size).slice();
    struct.fill(0, L.fields.buffer.offset, L.fields.buffer.offset + 8);
    struct.fill(0, L.fields.data.offset, L.fields.data.offset + 8);
    s.wsp_gguf_add_tensor(this.#ptr, ffi.addressOf(struct));
    keepAlive(struct);
    // ggml's writer asserts on a NULL data pointer even for 0 bytes, and a context leaves a
    // zero-element tensor's data NULL: give its copy in the writer an address it never reads.
    if (tensor.nbytes === 0) {
      const n = cString(name);
      s.wsp_gguf_set_tensor_data(this.#ptr, ffi.addressOf(n), ffi.addressOf(EMPTY));
      keepAlive(n);
    }
    this.#tensors.set(name, tensor);
    return this;
  }

  /** Bytes of the metadata, padding included (`wsp_gguf_get_meta_size`). */
  get metaSize(): number {
    return Number(runtime().lib.symbols.wsp_gguf_get_meta_size(this.#ptr));
  }

  /** The metadata as written to a file: header, KVs, tensor infos, padding (`wsp_gguf_get_meta_data`). */
  metaData(): Uint8Array {
    const out = new Uint8Array(this.metaSize);
    runtime().lib.symbols.wsp_gguf_get_meta_data(this.#ptr, ffi.addressOf(out));
    return out;
  }

  /**
   * Writes the file (`wsp_gguf_write_to_file`), or only its metadata.
   *
   * @throws {UseAfterFreeError} when the context of an added tensor was freed
   * @throws {NotAllocatedError} when an added tensor has no data (unless `metaOnly`)
   * @throws {GgufError} `IO` when the file cannot be written
   */
  write(path: string, options: { metaOnly?: boolean } = {}): void {
    const p = this.#ptr;
    if (typeof path !== "string" || path.length === 0 || path.includes("\0")) throw new ArgumentError("write: path must be a non-empty string without NUL");
    const metaOnly = options.metaOnly ?? false;
    for (const [name, t] of this.#tensors) {
      if (t.context.freed) throw new UseAfterFreeError(`write: the context of tensor ${JSON.stringify(name)} was freed`);
      if (!metaOnly && !t.isAllocated && t.nbytes > 0) throw new NotAllocatedError(`write: tensor ${JSON.stringify(name)} has no data (write with { metaOnly: true }, or allocate it)`);
      if (!metaOnly && t.nbytes > 0) checkData(`write: tensor ${JSON.stringify(name)}`, t);
    }
    // ggml copied each tensor's struct at addTensor, its data pointer with it, and reads that pointer now: a
    // buffer freed (or a tensor placed elsewhere) since then would be read after free. Point each copy at the
    // tensor's current data; data outside host memory (a GPU buffer) is copied to JS memory first.
    const s = runtime().lib.symbols;
    const keep: unknown[] = [];
    if (!metaOnly) {
      for (const [name, t] of this.#tensors) {
        if (t.nbytes === 0) continue;
        const n = cString(name);
        let data = t._data;
        const buf = bufferOf(t);
        if (buf !== 0 && !s.wsp_ggml_backend_buffer_is_host(buf)) {
          const copy = new Uint8Array(t.nbytes);
          s.wsp_ggml_backend_tensor_get(t._ptr, ffi.addressOf(copy), 0, t.nbytes);
          keep.push(copy);
          data = ffi.addressOf(copy);
        }
        s.wsp_gguf_set_tensor_data(p, ffi.addressOf(n), data);
        keep.push(n);
      }
    }
    const f = cString(path);
    const ok = s.wsp_gguf_write_to_file(p, ffi.addressOf(f), metaOnly);
    keepAlive([f, keep]);
    if (!ok) throw new GgufError("IO", `cannot write ${path}`);
  }
}
