/**
 * The structural check of a GGUF file, in TypeScript, before ggml reads it.
 *
 * ggml's reader (`wsp_gguf_init_from_file`, vendor/ggml/gguf.cpp) returns
 * NULL for most bad files, but a hostile one can still end the process or
 * exhaust it:
 * - an empty key reaches `WSP_GGML_ASSERT(!key.empty())` in the KV
 *   constructor → abort;
 * - `general.alignment` of another type than u32 reaches the type assert of
 *   `wsp_gguf_get_val_u32` → abort;
 * - a scalar string value with a huge length throws `std::length_error` /
 *   `bad_alloc` outside any `try` → `std::terminate`; a merely large one is
 *   allocated and zero-filled (gigabytes for a 100-byte file);
 * - array counts are allocated before they are read (bounded only by RAM);
 * - a tensor dimension `ne[1..3] = 0` is a divisor in the element-count
 *   overflow check → SIGFPE on x86-64;
 * - duplicate keys and tensor names are found by quadratic scans: a file
 *   with millions of entries keeps the process busy for hours.
 *
 * {@linkcode scanGguf} walks the same structure with every count and length
 * checked against the bytes left in the file (so nothing is allocated beyond
 * a small multiple of the file's size), the reader's limits, and each of the
 * conditions above, and throws a {@linkcode GgufError} naming the offset.
 * A file it accepts is one ggml reads without asserting.
 *
 * @module
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { GgufType, MAX_DIMS, MAX_NAME, Type } from "../ffi/bindings.gen.ts";
import { GgufError } from "../core/errors.ts";
import { runtime } from "../runtime/runtime.ts";

/** Bounds the reader enforces beyond the format's own (denial-of-service guards). */
export interface GgufLimits {
  /** Most KV pairs accepted (ggml checks duplicates quadratically). Default 65536. */
  readonly maxKv?: number;
  /** Most tensors accepted (same reason). Default 65536. */
  readonly maxTensors?: number;
  /** Longest string accepted, in bytes. Default 256 MiB (and never more than the file holds). */
  readonly maxStringBytes?: number;
  /** Most elements of one array. Default 2^28 (and never more than the file holds). */
  readonly maxArrayLength?: number;
}

/** The default {@linkcode GgufLimits}. */
export const DEFAULT_GGUF_LIMITS: Required<GgufLimits> = {
  maxKv: 1 << 16,
  maxTensors: 1 << 16,
  maxStringBytes: 256 << 20,
  maxArrayLength: 1 << 28,
};

/** Bytes per element of the fixed-size GGUF value types (0 for string and array). */
export const GGUF_TYPE_SIZE: Readonly<Record<number, number>> = {
  [GgufType.UINT8]: 1,
  [GgufType.INT8]: 1,
  [GgufType.UINT16]: 2,
  [GgufType.INT16]: 2,
  [GgufType.UINT32]: 4,
  [GgufType.INT32]: 4,
  [GgufType.FLOAT32]: 4,
  [GgufType.BOOL]: 1,
  [GgufType.STRING]: 0,
  [GgufType.ARRAY]: 0,
  [GgufType.UINT64]: 8,
  [GgufType.INT64]: 8,
  [GgufType.FLOAT64]: 8,
};

/** What the scan learnt about one KV pair. */
export interface ScannedKv {
  readonly key: string;
  /** The value type; for an array, the element type. */
  readonly type: GgufType;
  readonly isArray: boolean;
  /** Elements (1 for a scalar). */
  readonly n: number;
  /** Byte length of each string (string values only): ggml hands them out as C strings. */
  readonly stringLengths?: Float64Array;
  /** Value of a u32 `general.alignment`. */
  readonly u32?: number;
}

/** A tensor as the file describes it. */
export interface ScannedTensor {
  readonly name: string;
  readonly type: Type;
  /** Elements per dimension as stored (1 to 4 entries, innermost first). */
  readonly shape: readonly number[];
  /** Offset of the data from the start of the data section. */
  readonly offset: number;
  /** Bytes of data (`wsp_ggml_nbytes`). */
  readonly nbytes: number;
}

/** The result of {@linkcode scanGguf}. */
export interface Scan {
  readonly version: number;
  readonly alignment: number;
  readonly kv: readonly ScannedKv[];
  readonly tensors: readonly ScannedTensor[];
  /** Absolute file offset of the data section. */
  readonly dataOffset: number;
  /** Bytes of the data section, padding included. */
  readonly dataSize: number;
  /** Bytes of the file. */
  readonly fileSize: number;
}

const CHUNK = 1 << 20;
// ignoreBOM: a leading U+FEFF is part of the value (Gemma has six tokens that start with one).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Reads a file forwards through a window, so that a large file is never read whole. */
class Cursor {
  pos = 0;
  #buf = new Uint8Array(0);
  #view = new DataView(this.#buf.buffer);
  #start = 0;
  constructor(readonly fd: number, readonly size: number) {}

  get left(): number {
    return this.size - this.pos;
  }

  /**
   * Makes `n` bytes at `pos` available in the window; returns their offset in it.
   * It may replace the window, so callers read `#view` / `#buf` only after it returns.
   */
  #need(n: number, what: string): number {
    if (n > this.left) throw new GgufError("TRUNCATED", `${what}: needs ${n} bytes, the file has ${this.left} left`, this.pos);
    const end = this.#start + this.#buf.length;
    if (this.pos < this.#start || this.pos + n > end) {
      const len = Math.min(Math.max(n, CHUNK), this.left);
      const buf = new Uint8Array(len);
      let got = 0;
      while (got < len) {
        const r = readSync(this.fd, buf, got, len - got, this.pos + got);
        if (r === 0) throw new GgufError("TRUNCATED", `${what}: the file ended while reading`, this.pos + got);
        got += r;
      }
      this.#buf = buf;
      this.#view = new DataView(buf.buffer);
      this.#start = this.pos;
    }
    return this.pos - this.#start;
  }

  u32(what: string): number {
    const at = this.#need(4, what);
    const v = this.#view.getUint32(at, true);
    this.pos += 4;
    return v;
  }

  i32(what: string): number {
    const at = this.#need(4, what);
    const v = this.#view.getInt32(at, true);
    this.pos += 4;
    return v;
  }

  /** A u64 / i64 as a bigint. */
  u64(what: string): bigint {
    const at = this.#need(8, what);
    const v = this.#view.getBigUint64(at, true);
    this.pos += 8;
    return v;
  }

  i64(what: string): bigint {
    const at = this.#need(8, what);
    const v = this.#view.getBigInt64(at, true);
    this.pos += 8;
    return v;
  }

  bytes(n: number, what: string): Uint8Array {
    const at = this.#need(n, what);
    this.pos += n;
    return this.#buf.subarray(at, at + n);
  }

  skip(n: number, what: string): void {
    if (n > this.left) throw new GgufError("TRUNCATED", `${what}: needs ${n} bytes, the file has ${this.left} left`, this.pos);
    this.pos += n;
  }
}

/** A length or count read as u64, bounded by `max` and by what the rest of the file can hold. */
function length(c: Cursor, what: string, max: number, bytesEach: number): number {
  const at = c.pos;
  const n = c.u64(what);
  if (n > BigInt(max)) throw new GgufError("INVALID", `${what} is ${n}, more than the limit ${max}`, at);
  const v = Number(n);
  if (bytesEach > 0 && v > c.left / bytesEach) {
    throw new GgufError("TRUNCATED", `${what} is ${v}, but the ${c.left} bytes left hold at most ${Math.floor(c.left / bytesEach)}`, at);
  }
  return v;
}

/** A GGUF string (u64 length + bytes) whose bytes are needed (keys, names). */
function text(c: Cursor, what: string, limits: Required<GgufLimits>): Uint8Array {
  const n = length(c, `${what}: length`, limits.maxStringBytes, 1);
  return c.bytes(n, what);
}

const TYPE_NAMES = new Map(Object.entries(GgufType).map(([k, v]) => [v as number, k]));

function valueType(c: Cursor, what: string): GgufType {
  const at = c.pos;
  const t = c.i32(what);
  if (!TYPE_NAMES.has(t) || t === GgufType.COUNT) throw new GgufError("INVALID", `${what}: ${t} is not a GGUF value type`, at);
  return t as GgufType;
}

/** Checks the structure of the GGUF file at `path` (see the module comment). */
export function scanGguf(path: string, limits: GgufLimits = {}): Scan {
  const lim = { ...DEFAULT_GGUF_LIMITS, ...limits };
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    throw new GgufError("IO", `cannot open ${path}: ${(e as Error).message}`);
  }
  try {
    const size = fstatSync(fd).size;
    if (!Number.isSafeInteger(size)) throw new GgufError("IO", `${path}: size ${size} is not usable`);
    return scan(new Cursor(fd, size), lim);
  } finally {
    closeSync(fd);
  }
}

function scan(c: Cursor, lim: Required<GgufLimits>): Scan {
  const magic = c.bytes(4, "magic");
  if (decoder.decode(magic) !== "GGUF") throw new GgufError("FORMAT", `not a GGUF file (magic ${JSON.stringify(decoder.decode(magic))})`, 0);
  const version = c.u32("version");
  if (version === 0 || (version & 0xffff) === 0) {
    throw new GgufError("FORMAT", `version ${version}: not a version, or a file of the other byte order (only little-endian files are read)`, 4);
  }
  if (version === 1) throw new GgufError("FORMAT", "GGUF version 1 is no longer supported", 4);
  if (version > 3) throw new GgufError("FORMAT", `GGUF version ${version}: this library reads versions 2 and 3`, 4);

  let at = c.pos;
  const nTensors = c.i64("tensor count");
  if (nTensors < 0n || nTensors > BigInt(lim.maxTensors)) {
    throw new GgufError("INVALID", `tensor count ${nTensors} is not in 0..${lim.maxTensors}`, at);
  }
  at = c.pos;
  const nKv = c.i64("KV count");
  if (nKv < 0n || nKv > BigInt(lim.maxKv)) throw new GgufError("INVALID", `KV count ${nKv} is not in 0..${lim.maxKv}`, at);
  // Every KV takes at least 13 bytes (key length, a 1-byte key, type), every tensor info 24.
  if (Number(nKv) * 13 + Number(nTensors) * 24 > c.left) {
    throw new GgufError("TRUNCATED", `${nKv} KV pairs and ${nTensors} tensor infos cannot fit in the ${c.left} bytes left`, at);
  }

  const kv: ScannedKv[] = [];
  const keys = new Set<string>();
  for (let i = 0; i < Number(nKv); i++) {
    at = c.pos;
    const raw = text(c, `key ${i}`, lim);
    const key = decoder.decode(raw);
    if (raw.length === 0) throw new GgufError("INVALID", `key ${i} is empty`, at);
    if (raw.includes(0)) throw new GgufError("INVALID", `key ${i} ${JSON.stringify(key)} contains NUL`, at);
    if (keys.has(key)) throw new GgufError("DUPLICATE", `duplicate key ${JSON.stringify(key)}`, at);
    keys.add(key);
    let type = valueType(c, `key ${JSON.stringify(key)}: type`);
    const isArray = type === GgufType.ARRAY;
    let n = 1;
    if (isArray) {
      type = valueType(c, `key ${JSON.stringify(key)}: array element type`);
      if (type === GgufType.ARRAY) throw new GgufError("INVALID", `key ${JSON.stringify(key)}: arrays of arrays are not supported by ggml`, c.pos - 4);
      n = length(c, `key ${JSON.stringify(key)}: array length`, lim.maxArrayLength, GGUF_TYPE_SIZE[type] || 8);
    }
    const what = `value of ${JSON.stringify(key)}`;
    if (type === GgufType.STRING) {
      const stringLengths = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        const len = length(c, `${what}${isArray ? `[${j}]` : ""}: length`, lim.maxStringBytes, 1);
        c.skip(len, what);
        stringLengths[j] = len;
      }
      kv.push({ key, type, isArray, n, stringLengths });
    } else {
      let u32: number | undefined;
      if (type === GgufType.UINT32 && !isArray) u32 = c.u32(what);
      else c.skip(n * GGUF_TYPE_SIZE[type], what);
      kv.push({ key, type, isArray, n, u32 });
    }
  }

  let alignment = 32;
  const align = kv.find((e) => e.key === "general.alignment");
  if (align) {
    // ggml reads it with wsp_gguf_get_val_u32, which asserts on the type.
    if (align.type !== GgufType.UINT32 || align.isArray) {
      throw new GgufError("INVALID", `general.alignment must be a u32, it is ${align.isArray ? "an array of " : ""}${TYPE_NAMES.get(align.type)}`);
    }
    alignment = align.u32!;
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) {
      throw new GgufError("INVALID", `general.alignment ${alignment} is not a power of 2`);
    }
  }

  const types = runtime().types;
  const tensors: ScannedTensor[] = [];
  const names = new Set<string>();
  let expected = 0n;
  for (let i = 0; i < Number(nTensors); i++) {
    at = c.pos;
    const raw = text(c, `tensor ${i}: name`, lim);
    const name = decoder.decode(raw);
    if (raw.length >= MAX_NAME) throw new GgufError("INVALID", `tensor ${i}: the name is ${raw.length} bytes, at most ${MAX_NAME - 1} fit`, at);
    if (raw.includes(0)) throw new GgufError("INVALID", `tensor ${i}: the name ${JSON.stringify(name)} contains NUL`, at);
    if (names.has(name)) throw new GgufError("DUPLICATE", `duplicate tensor name ${JSON.stringify(name)}`, at);
    names.add(name);
    const t = `tensor ${JSON.stringify(name)}`;
    at = c.pos;
    const nDims = c.u32(`${t}: dimension count`);
    if (nDims > MAX_DIMS) throw new GgufError("INVALID", `${t}: ${nDims} dimensions, at most ${MAX_DIMS}`, at);
    const ne: bigint[] = [];
    for (let j = 0; j < nDims; j++) {
      at = c.pos;
      const v = c.i64(`${t}: ne${j}`);
      if (v < 0n) throw new GgufError("INVALID", `${t}: ne${j} = ${v} is negative`, at);
      // ggml divides INT64_MAX by ne[1..3] (SIGFPE on x86-64 for 0).
      if (v === 0n && j > 0) throw new GgufError("INVALID", `${t}: ne${j} = 0 (ggml's reader divides by it)`, at);
      ne.push(v);
    }
    const elements = ne.reduce((a, b) => a * b, 1n);
    if (elements >= 2n ** 63n - 1n) throw new GgufError("INVALID", `${t}: ${elements} elements overflow int64`, at);
    at = c.pos;
    const type = c.i32(`${t}: type`);
    const traits = types.get(type);
    if (traits === undefined || type < 0 || type >= Type.COUNT) {
      throw new GgufError("INVALID", `${t}: ${type} is not a tensor type of this library`, at);
    }
    const ne0 = ne[0] ?? 1n;
    if (ne0 % BigInt(traits.blckSize) !== 0n) {
      throw new GgufError("INVALID", `${t}: ne0 = ${ne0} is not a multiple of the ${traits.name} block size ${traits.blckSize}`, at);
    }
    const nbytes = (elements / BigInt(traits.blckSize)) * BigInt(traits.typeSize);
    if (nbytes > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError("INVALID", `${t}: ${nbytes} bytes of data is too large`, at);
    at = c.pos;
    const offset = c.u64(`${t}: offset`);
    if (offset !== expected) {
      throw new GgufError("INVALID", `${t}: data offset ${offset}, expected ${expected} (tensors are stored in order, each padded to ${alignment})`, at);
    }
    const padded = ((nbytes + BigInt(alignment) - 1n) / BigInt(alignment)) * BigInt(alignment);
    expected += padded;
    if (expected > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError("INVALID", `${t}: the data section overflows`, at);
    tensors.push({ name, type: type as Type, shape: ne.map(Number), offset: Number(offset), nbytes: Number(nbytes) });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  return { version, alignment, kv, tensors, dataOffset, dataSize: Number(expected), fileSize: c.size };
}
