/**
 * Reading GGUF files: {@linkcode readGguf} checks the file's structure in
 * TypeScript ({@linkcode scanGguf}), lets ggml read it
 * (`wsp_gguf_init_from_file`), reads every KV and tensor info through ggml's
 * getters (each dispatched on the type the scan found, so none of their
 * asserts can fire), and cross-checks ggml's view with the scan.
 *
 * @module
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { GgufType, layouts, MEM_ALIGN, Type } from "../ffi/bindings.gen.ts";
import { Context, tensorOverhead } from "../core/context.ts";
import { ArgumentError, GgufError } from "../core/errors.ts";
import { cString } from "../ffi/common.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import type { Tensor } from "../core/tensor.ts";
import type { Backend } from "../backend/backend.ts";
import { allocCtxTensors, type Buffer, BufferType, tensorSet } from "../backend/buffer.ts";
import { GGUF_TYPE_SIZE, type GgufLimits, type ScannedKv, scanGguf } from "./scan.ts";
import { TensorMap } from "./tensor_map.ts";

/** A GGUF array value: a typed array for numbers, plain arrays for bools and strings. */
export type GgufArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array
  | boolean[]
  | string[];

/** A GGUF value: 64-bit integers are bigints (exact), other numbers numbers. */
export type GgufValue = number | bigint | boolean | string | GgufArray;

/** One KV pair of a file. */
export interface GgufEntry {
  /** The key, e.g. `general.architecture`. */
  readonly key: string;
  /** `GgufType.ARRAY` for arrays, else the value's type. */
  readonly type: GgufType;
  /** The element type of an array. */
  readonly arrayType?: GgufType;
  /** The value. */
  readonly value: GgufValue;
}

/** One tensor of a file. */
export interface GgufTensorInfo {
  /** The tensor's name. */
  readonly name: string;
  /** Its element type (`typeName(type)` gives ggml's name of it). */
  readonly type: Type;
  /** Elements per dimension as stored (1 to 4 entries, innermost first). */
  readonly shape: readonly number[];
  /** Offset of the data from the start of the data section (`wsp_gguf_get_tensor_offset`). */
  readonly offset: number;
  /** Absolute offset of the data in the file. */
  readonly fileOffset: number;
  /** Bytes of data (`wsp_gguf_get_tensor_size`). */
  readonly nbytes: number;
}

/** The typed array of a numeric GGUF element type. */
export type GgufArrayCtor = {
  new (buffer: ArrayBuffer): Exclude<GgufArray, boolean[] | string[]>;
  new (length: number): Exclude<GgufArray, boolean[] | string[]>;
};

/** The typed array of each numeric GGUF element type (bool and string have none: they are not typed arrays). */
export const GGUF_ARRAYS: Partial<Record<number, GgufArrayCtor>> = {
  [GgufType.UINT8]: Uint8Array,
  [GgufType.INT8]: Int8Array,
  [GgufType.UINT16]: Uint16Array,
  [GgufType.INT16]: Int16Array,
  [GgufType.UINT32]: Uint32Array,
  [GgufType.INT32]: Int32Array,
  [GgufType.FLOAT32]: Float32Array,
  [GgufType.FLOAT64]: Float64Array,
  [GgufType.UINT64]: BigUint64Array,
  [GgufType.INT64]: BigInt64Array,
};

// ignoreBOM: a leading U+FEFF is part of the value (Gemma has six tokens that start with one).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
type Symbols = ReturnType<typeof runtime>["lib"]["symbols"];

/** A string ggml holds as a C string, read with its known length (embedded NULs kept). */
function str(ptr: number, length: number): string {
  if (length === 0) return "";
  return decoder.decode(new Uint8Array(ffi.view(ptr, length)));
}

function scalar(s: Symbols, g: number, id: number, e: ScannedKv): GgufValue {
  switch (e.type) {
    case GgufType.UINT8: return s.wsp_gguf_get_val_u8(g, id);
    case GgufType.INT8: return s.wsp_gguf_get_val_i8(g, id);
    case GgufType.UINT16: return s.wsp_gguf_get_val_u16(g, id);
    case GgufType.INT16: return s.wsp_gguf_get_val_i16(g, id);
    case GgufType.UINT32: return s.wsp_gguf_get_val_u32(g, id);
    case GgufType.INT32: return s.wsp_gguf_get_val_i32(g, id);
    case GgufType.FLOAT32: return s.wsp_gguf_get_val_f32(g, id);
    case GgufType.BOOL: return s.wsp_gguf_get_val_bool(g, id);
    case GgufType.UINT64: return BigInt(s.wsp_gguf_get_val_u64(g, id));
    case GgufType.INT64: return BigInt(s.wsp_gguf_get_val_i64(g, id));
    case GgufType.FLOAT64: return s.wsp_gguf_get_val_f64(g, id);
    case GgufType.STRING: return str(s.wsp_gguf_get_val_str(g, id), e.stringLengths![0]);
  }
  throw new GgufError("INVALID", `key ${e.key}: type ${e.type}`);
}

function array(s: Symbols, g: number, id: number, e: ScannedKv): GgufArray {
  if (e.type === GgufType.STRING) {
    return Array.from({ length: e.n }, (_, j) => str(s.wsp_gguf_get_arr_str(g, id, j), e.stringLengths![j]));
  }
  const bytes = e.n * GGUF_TYPE_SIZE[e.type];
  const copy = bytes === 0 ? new ArrayBuffer(0) : ffi.view(s.wsp_gguf_get_arr_data(g, id), bytes).slice(0);
  if (e.type === GgufType.BOOL) return Array.from(new Uint8Array(copy), (b) => b !== 0);
  return new GGUF_ARRAYS[e.type]!(copy);
}

/** The metadata of a GGUF file, and access to its tensor data. */
export class GgufFile {
  /** @ignore @internal Use {@linkcode readGguf}. */
  constructor(
    /** The file read. */
    readonly path: string,
    /** Format version (2 or 3). */
    readonly version: number,
    /** Alignment of the data section and of each tensor's data. */
    readonly alignment: number,
    /** Absolute offset of the data section (`wsp_gguf_get_data_offset`). */
    readonly dataOffset: number,
    /** Bytes of the data section, padding included. */
    readonly dataSize: number,
    /** Bytes of the file when it was read. */
    readonly fileSize: number,
    /** The KV pairs, in file order. */
    readonly entries: readonly GgufEntry[],
    /** The tensor infos, in file order. */
    readonly tensors: readonly GgufTensorInfo[],
  ) {
    this.#byKey = new Map(entries.map((e) => [e.key, e]));
    this.#byName = new Map(tensors.map((t) => [t.name, t]));
  }
  readonly #byKey: Map<string, GgufEntry>;
  readonly #byName: Map<string, GgufTensorInfo>;

  /** The keys, in file order. */
  keys(): string[] {
    return this.entries.map((e) => e.key);
  }

  /** Whether the file has `key`. */
  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  /** The entry of `key`, or undefined. */
  entry(key: string): GgufEntry | undefined {
    return this.#byKey.get(key);
  }

  /** The value of `key`, or undefined. */
  get(key: string): GgufValue | undefined {
    return this.#byKey.get(key)?.value;
  }

  /**
   * The value of `key`, which must have `type` (and, for an array,
   * `arrayType`): the checked counterpart of `wsp_gguf_get_val_*`, which
   * assert on the type.
   *
   * @throws {GgufError} `NOT_FOUND` for a missing key, `TYPE` for another type
   */
  require(key: string, type: GgufType, arrayType?: GgufType): GgufValue {
    const e = this.#byKey.get(key);
    if (!e) throw new GgufError("NOT_FOUND", `${this.path}: no key ${JSON.stringify(key)}`);
    if (e.type !== type || (type === GgufType.ARRAY && arrayType !== undefined && e.arrayType !== arrayType)) {
      throw new GgufError("TYPE", `${this.path}: ${JSON.stringify(key)} is ${typeName(e.type, e.arrayType)}, not ${typeName(type, arrayType)}`);
    }
    return e.value;
  }

  /** The string value of `key` ({@linkcode require} with `GgufType.STRING`). */
  getString(key: string): string {
    return this.require(key, GgufType.STRING) as string;
  }

  /** The info of tensor `name`, or undefined. */
  tensor(name: string): GgufTensorInfo | undefined {
    return this.#byName.get(name);
  }

  #info(t: string | GgufTensorInfo): GgufTensorInfo {
    const info = typeof t === "string" ? this.#byName.get(t) : t;
    if (!info || this.#byName.get(info.name) !== info) throw new GgufError("NOT_FOUND", `${this.path}: no tensor ${JSON.stringify(typeof t === "string" ? t : t?.name)}`);
    return info;
  }

  #range(info: GgufTensorInfo): void {
    if (info.fileOffset + info.nbytes > this.fileSize) {
      throw new GgufError("TRUNCATED", `${this.path}: the data of tensor ${JSON.stringify(info.name)} (${info.nbytes} bytes at ${info.fileOffset}) is past the end of the file (${this.fileSize} bytes)`);
    }
  }

  /**
   * Reads the data of a tensor straight into `dest` (no intermediate
   * buffer): any `Uint8Array` of {@linkcode GgufTensorInfo.nbytes} bytes, e.g.
   * a view of a host backend buffer. Without `dest`, into a new array.
   *
   * @throws {GgufError} `NOT_FOUND`, `TRUNCATED`, `IO`
   * @throws {ArgumentError} when `dest` is not a Uint8Array of the right length
   */
  readTensorData(tensor: string | GgufTensorInfo, dest?: Uint8Array): Uint8Array {
    const info = this.#info(tensor);
    if (dest !== undefined && (!(dest instanceof Uint8Array) || dest.length !== info.nbytes)) {
      throw new ArgumentError(`readTensorData: dest must be a Uint8Array of ${info.nbytes} bytes for ${JSON.stringify(info.name)}`);
    }
    this.#range(info);
    const out = dest ?? new Uint8Array(info.nbytes);
    this.#withFile((fd) => this.#read(fd, info, out));
    return out;
  }

  #withFile<R>(fn: (fd: number) => R): R {
    let fd: number;
    try {
      fd = openSync(this.path, "r");
    } catch (e) {
      throw new GgufError("IO", `cannot open ${this.path}: ${(e as Error).message}`);
    }
    try {
      return fn(fd);
    } finally {
      closeSync(fd);
    }
  }

  #read(fd: number, info: GgufTensorInfo, out: Uint8Array): void {
    let got = 0;
    while (got < info.nbytes) {
      const r = readSync(fd, out, got, info.nbytes - got, info.fileOffset + got);
      if (r === 0) throw new GgufError("TRUNCATED", `${this.path}: the file ended inside the data of ${JSON.stringify(info.name)}`, info.fileOffset + got);
      got += r;
    }
  }

  /**
   * Creates the tensors of the file (all, or those named) in a context and
   * reads their data from the file directly into the context's memory.
   *
   * Without `context`, a new one is made just large enough; with a `noAlloc`
   * context (`{ context: new Context({ memSize, noAlloc: true }) }`) only the
   * tensors are created, to be allocated elsewhere (a backend buffer) and
   * filled with {@linkcode readTensorData}. ggml's own loading path
   * (`no_alloc = false`) is not used: it mallocs a context that is not a
   * JS-owned pool, and allocates the declared data size before reading it.
   *
   * @returns the context and the tensors by name ({@linkcode TensorMap}: `require(name)` throws for a missing one)
   * @throws {GgufError} `NOT_FOUND`, `TRUNCATED` (checked before anything is allocated), `IO`
   */
  loadTensors(options: { context?: Context; names?: readonly string[] } = {}): { context: Context; tensors: TensorMap } {
    const infos = (options.names ?? this.tensors.map((t) => t.name)).map((n) => this.#info(n));
    const given = options.context;
    if (given !== undefined && !(given instanceof Context)) throw new ArgumentError("loadTensors: context must be a Context");
    const alloc = !(given?.noAlloc ?? false);
    if (alloc) for (const info of infos) this.#range(info);
    const overhead = tensorOverhead();
    const context = given ?? new Context({
      memSize: infos.reduce((n, t) => n + overhead + Math.ceil(t.nbytes / MEM_ALIGN) * MEM_ALIGN, MEM_ALIGN),
    });
    try {
      const tensors = new TensorMap(this.path);
      for (const info of infos) tensors.set(info.name, context.newTensor(info.type, info.shape.length ? [...info.shape] : [1]).setName(info.name));
      if (alloc) {
        this.#withFile((fd) => {
          for (const info of infos) {
            // A zero-element tensor has no data in a context (ggml leaves it NULL): nothing to read.
            if (info.nbytes === 0) continue;
            const { buffer, offset } = tensors.require(info.name)._location("loadTensors");
            this.#read(fd, info, new Uint8Array(buffer, offset, info.nbytes));
          }
        });
      }
      return { context, tensors };
    } catch (e) {
      if (!given) context.free();
      throw e;
    }
  }

  /**
   * Loads the tensors of the file (all, or those named) into one backend
   * buffer of `target` (a backend's default buffer type, or a buffer type):
   * the tensors are made in a new `noAlloc` context, allocated with
   * {@linkcode allocCtxTensors}, and filled from the file. A host buffer (the
   * CPU's) is read into straight from the file, with no intermediate copy;
   * any other buffer gets one tensor at a time through
   * `wsp_ggml_backend_tensor_set`. Every range is checked before anything is
   * allocated. Free the buffers, then the contexts, when done.
   *
   * With `bufferTypes`, a tensor for which it returns a buffer type goes
   * into a buffer of that type instead (one context and buffer per type, in
   * `others`): e.g. a CPU extra buffer type such as `CPU_REPACK` for the
   * weights {@linkcode extraBufferTypeFor} says it takes.
   *
   * @returns the context (holding the tensors' headers), the tensors by name ({@linkcode TensorMap}), the buffer, and the other buffer types' contexts and buffers
   * @throws {GgufError} `NOT_FOUND`, `TRUNCATED`, `IO`
   */
  loadTensorsToBackend(
    target: Backend | BufferType,
    options: { names?: readonly string[]; bufferTypes?: (info: GgufTensorInfo) => BufferType | undefined } = {},
  ): { context: Context; tensors: TensorMap; buffer: Buffer | null; others: { context: Context; buffer: Buffer | null }[] } {
    const infos = (options.names ?? this.tensors.map((t) => t.name)).map((n) => this.#info(n));
    for (const info of infos) this.#range(info);
    const pick = options.bufferTypes;
    if (pick !== undefined && typeof pick !== "function") throw new ArgumentError("loadTensorsToBackend: bufferTypes must be a function");
    // Tensors by buffer type (0: target's); the pointer keys one context per type.
    const groups = new Map<number, { buft: BufferType | undefined; infos: GgufTensorInfo[] }>([[0, { buft: undefined, infos: [] }]]);
    for (const info of infos) {
      const buft = pick?.(info);
      if (buft !== undefined && !(buft instanceof BufferType)) throw new ArgumentError(`loadTensorsToBackend: bufferTypes gave ${String(buft)} for ${JSON.stringify(info.name)}, not a BufferType`);
      const key = buft?.pointer ?? 0;
      let g = groups.get(key);
      if (!g) groups.set(key, g = { buft, infos: [] });
      g.infos.push(info);
    }
    const overhead = tensorOverhead();
    const made: { context: Context; buffer: Buffer | null }[] = [];
    const tensors = new TensorMap(this.path);
    try {
      for (const g of groups.values()) {
        if (g.buft !== undefined && g.infos.length === 0) continue;
        const context = new Context({ memSize: (g.infos.length + 1) * overhead, noAlloc: true });
        const part: { context: Context; buffer: Buffer | null } = { context, buffer: null };
        made.push(part);
        const loaded = this.loadTensors({ context, names: g.infos.map((i) => i.name) }).tensors;
        part.buffer = allocCtxTensors(context, g.buft ?? target);
        const host = part.buffer?.isHost ?? false;
        this.#withFile((fd) => {
          for (const info of g.infos) {
            const t = loaded.require(info.name);
            tensors.set(info.name, t);
            if (info.nbytes === 0) continue;
            if (host) this.#read(fd, info, new Uint8Array(ffi.view(t._data, info.nbytes)));
            else {
              // Whole tensors: an extra buffer type (CPU_REPACK) repacks on write and takes nothing partial.
              const bytes = new Uint8Array(info.nbytes);
              this.#read(fd, info, bytes);
              tensorSet(t, bytes);
            }
          }
        });
      }
      // The tensors in the order asked for.
      const ordered = new TensorMap(this.path);
      for (const i of infos) ordered.set(i.name, tensors.require(i.name));
      return { context: made[0].context, tensors: ordered, buffer: made[0].buffer, others: made.slice(1) };
    } catch (e) {
      for (const p of made) p.buffer?.free();
      for (const p of made) p.context.free();
      throw e;
    }
  }
}

function typeName(type: GgufType, arrayType?: GgufType): string {
  const name = (t: number) => Object.entries(GgufType).find(([, v]) => v === t)?.[0].toLowerCase() ?? String(t);
  return type === GgufType.ARRAY ? `array${arrayType === undefined ? "" : ` of ${name(arrayType)}`}` : name(type);
}

/**
 * Throws {@linkcode GgufError} `IO` for a path that exists but is not a
 * regular file (a directory opens on POSIX, and the first read throws a
 * plain `EISDIR`; a FIFO would block). A missing file is left to the scan's
 * own open, which reports it.
 */
function notAFile(path: string): void {
  let st;
  try {
    st = statSync(path);
  } catch {
    return;
  }
  if (st.isDirectory()) throw new GgufError("IO", `${path} is a directory, not a GGUF file`);
  if (!st.isFile()) throw new GgufError("IO", `${path} is not a regular file (a device, FIFO or socket), not a GGUF file`);
}

/**
 * Reads the metadata of the GGUF file at `path`: version, alignment, every
 * KV with its type, every tensor info. Tensor data is read on demand
 * ({@linkcode GgufFile.loadTensors}, {@linkcode GgufFile.readTensorData}).
 *
 * Any file gives a {@linkcode GgufFile} or a {@linkcode GgufError}: the
 * structure is checked before ggml sees it (see `scan.ts`), within `limits`.
 *
 * @throws {GgufError} for a file that cannot be read, is not GGUF, is truncated, corrupt or beyond the limits
 */
export function readGguf(path: string, limits: GgufLimits = {}): GgufFile {
  if (typeof path !== "string" || path.length === 0) throw new ArgumentError("readGguf: path must be a non-empty string");
  if (path.includes("\0")) throw new ArgumentError("readGguf: path contains NUL");
  notAFile(path);
  const scan = scanGguf(path, limits);
  const s = runtime().lib.symbols;
  const params = new Uint8Array(layouts.wsp_gguf_init_params.size); // no_alloc = false, ctx = NULL: metadata only
  const fname = cString(path);
  const g = s.wsp_gguf_init_from_file(ffi.addressOf(fname), ffi.addressOf(params));
  keepAlive([fname, params]);
  if (g === 0) throw new GgufError("CHANGED", `${path}: ggml refused a file the check accepted (did it change while being read?)`);
  try {
    const changed = (what: string) => new GgufError("CHANGED", `${path}: ${what} differs between the check and ggml's read (did the file change?)`);
    if (Number(s.wsp_gguf_get_n_kv(g)) !== scan.kv.length || Number(s.wsp_gguf_get_n_tensors(g)) !== scan.tensors.length) throw changed("the KV or tensor count");
    if (s.wsp_gguf_get_version(g) !== scan.version || Number(s.wsp_gguf_get_alignment(g)) !== scan.alignment) throw changed("the version or alignment");
    if (Number(s.wsp_gguf_get_data_offset(g)) !== scan.dataOffset) throw changed("the data offset");
    const entries = scan.kv.map((e, id): GgufEntry => {
      if (ffi.readCString(s.wsp_gguf_get_key(g, id)) !== e.key) throw changed(`key ${id}`);
      const type = s.wsp_gguf_get_kv_type(g, id);
      if (type !== (e.isArray ? GgufType.ARRAY : e.type)) throw changed(`the type of ${JSON.stringify(e.key)}`);
      if (!e.isArray) return { key: e.key, type: e.type, value: scalar(s, g, id, e) };
      if (s.wsp_gguf_get_arr_type(g, id) !== e.type || Number(s.wsp_gguf_get_arr_n(g, id)) !== e.n) throw changed(`the array ${JSON.stringify(e.key)}`);
      return { key: e.key, type: GgufType.ARRAY, arrayType: e.type, value: array(s, g, id, e) };
    });
    const tensors = scan.tensors.map((t, id): GgufTensorInfo => {
      if (
        ffi.readCString(s.wsp_gguf_get_tensor_name(g, id)) !== t.name || s.wsp_gguf_get_tensor_type(g, id) !== t.type ||
        Number(s.wsp_gguf_get_tensor_offset(g, id)) !== t.offset || Number(s.wsp_gguf_get_tensor_size(g, id)) !== t.nbytes
      ) throw changed(`tensor ${id}`);
      return { ...t, fileOffset: scan.dataOffset + t.offset };
    });
    return new GgufFile(path, scan.version, scan.alignment, scan.dataOffset, scan.dataSize, scan.fileSize, entries, tensors);
  } finally {
    s.wsp_gguf_free(g);
  }
}
