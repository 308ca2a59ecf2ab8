/**
 * Reading CTranslate2's `model.bin`: the header and the table of variables,
 * without loading their data (each variable's bytes are read on demand from
 * its offset, so a converter holds one tensor at a time).
 *
 * The layout (little-endian): u32 binary version (6), the spec name as a
 * u16 length (the NUL counted) and its bytes, u32 spec revision, u32
 * variable count; per variable: u16-length NUL-terminated name, u8 rank,
 * rank × u32 dimensions (outermost first, as PyTorch), u8 dtype, u32 byte
 * count, the data; then u32 alias count and pairs of u16-length names
 * (alias, target).
 *
 * @module
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";
import { WhisperError, type WhisperErrorReason } from "../core/errors.ts";

/** The binary versions of `model.bin` this reader understands. */
export const CT2_VERSIONS: readonly number[] = [5, 6];

/** CTranslate2's element types, by their number in the file. */
export const Ct2Dtype = { F32: 0, I8: 1, I16: 2, I32: 3, F16: 4 } as const;
/** One of {@linkcode Ct2Dtype}'s values. */
export type Ct2Dtype = (typeof Ct2Dtype)[keyof typeof Ct2Dtype];
/** Bytes per element of each {@linkcode Ct2Dtype}. */
export const CT2_DTYPE_SIZE: Readonly<Record<number, number>> = { 0: 4, 1: 1, 2: 2, 3: 4, 4: 2 };
/** Names of the {@linkcode Ct2Dtype}s. */
export const CT2_DTYPE_NAME: Readonly<Record<number, string>> = { 0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16" };

/**
 * A CTranslate2 model file (or its folder) that is missing, cut short or
 * not of a kind this reader knows: a {@linkcode WhisperError} with `reason`
 * `IO` (missing or unreadable), `TRUNCATED`, `FORMAT` (version, spec),
 * `INVALID` (a count, type or size that cannot be), `NOT_FOUND` (a variable).
 */
export class Ct2FormatError extends WhisperError {
  /**
   * Made by the reader when it throws.
   *
   * @param reason what went wrong
   * @param path the file concerned
   * @param message what was wrong and what to do about it
   */
  constructor(reason: WhisperErrorReason, readonly path: string, message: string) {
    super(reason, `${path}: ${message}`);
  }
}

/** One variable of a CTranslate2 model. */
export interface Ct2Variable {
  /** Its name, e.g. `encoder/layer_0/self_attention/linear_0/weight`. */
  readonly name: string;
  /** Dimensions, outermost first (a scalar has none). */
  readonly shape: readonly number[];
  /** Its element type. */
  readonly dtype: Ct2Dtype;
  /** Offset of its data in the file. */
  readonly offset: number;
  /** Bytes of data. */
  readonly nbytes: number;
}

/** The table of a CTranslate2 `model.bin`. */
export interface Ct2Model {
  /** The file's path. */
  readonly path: string;
  /** Binary version (6 for current CTranslate2). */
  readonly version: number;
  /** The spec's name, e.g. `WhisperSpec`. */
  readonly spec: string;
  /** The spec's revision. */
  readonly revision: number;
  /** Every variable, by name, in file order. */
  readonly variables: ReadonlyMap<string, Ct2Variable>;
  /** Aliases: a name → the variable it stands for (e.g. a tied output projection). */
  readonly aliases: ReadonlyMap<string, string>;
  /** Size of the file in bytes. */
  readonly fileSize: number;
}

/** Reads the file at increasing offsets through a small window. */
class Cursor {
  pos = 0;
  #buf = new Uint8Array(1 << 16);
  #start = 0;
  #end = 0;
  constructor(readonly fd: number, readonly size: number, readonly path: string) {}
  bytes(n: number, what: string): Uint8Array {
    if (this.pos + n > this.size) throw new Ct2FormatError("TRUNCATED", this.path, `the file ends at byte ${this.size} inside ${what} (at byte ${this.pos}); it is cut short — fetch or assemble model.bin again`);
    if (this.pos < this.#start || this.pos + n > this.#end) {
      if (n > this.#buf.length) this.#buf = new Uint8Array(n);
      const got = readSync(this.fd, this.#buf, 0, Math.min(this.#buf.length, this.size - this.pos), this.pos);
      this.#start = this.pos;
      this.#end = this.pos + got;
    }
    const o = this.pos - this.#start;
    this.pos += n;
    return this.#buf.subarray(o, o + n);
  }
  u8(what: string): number {
    return this.bytes(1, what)[0];
  }
  u16(what: string): number {
    const b = this.bytes(2, what);
    return b[0] | (b[1] << 8);
  }
  u32(what: string): number {
    const b = this.bytes(4, what);
    return (b[0] | (b[1] << 8) | (b[2] << 16)) + b[3] * 0x1000000;
  }
  str(what: string): string {
    const n = this.u16(`the length of ${what}`);
    const b = this.bytes(n, what);
    if (n === 0 || b[n - 1] !== 0) throw new Ct2FormatError("INVALID", this.path, `${what} at byte ${this.pos - n} is not NUL-terminated; not a CTranslate2 model.bin`);
    return new TextDecoder("utf-8", { fatal: false }).decode(b.subarray(0, n - 1));
  }
}

/** At most this many variables (a sanity bound against garbage counts). */
const MAX_VARIABLES = 1 << 20;

/**
 * Reads the header and variable table of the CTranslate2 model at `path`
 * (a `model.bin`), skipping over the data.
 *
 * @throws {Ct2FormatError} when the file is missing (`IO`), cut short (`TRUNCATED`), of another version (`FORMAT`) or malformed (`INVALID`)
 */
export function readCt2(path: string): Ct2Model {
  if (!existsSync(path)) throw new Ct2FormatError("IO", path, "no such file; pass the folder of a CTranslate2 model (model.bin, config.json, tokenizer.json), or use --fetch");
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    throw new Ct2FormatError("IO", path, `cannot open: ${(e as Error).message}`);
  }
  try {
    const size = fstatSync(fd).size;
    const c = new Cursor(fd, size, path);
    const version = c.u32("the binary version");
    if (!CT2_VERSIONS.includes(version)) {
      throw new Ct2FormatError("FORMAT", path, `binary version ${version} (bytes ${[...new Uint8Array(new Uint32Array([version]).buffer)].map((b) => b.toString(16).padStart(2, "0")).join(" ")}); this reader knows CTranslate2 versions ${CT2_VERSIONS.join(", ")} — is this a CTranslate2 model.bin? Convert it again with a current CTranslate2`);
    }
    const spec = c.str("the spec name");
    const revision = c.u32("the spec revision");
    const count = c.u32("the variable count");
    if (count > MAX_VARIABLES) throw new Ct2FormatError("INVALID", path, `${count} variables is not plausible; the file is corrupt`);
    const variables = new Map<string, Ct2Variable>();
    for (let i = 0; i < count; i++) {
      const name = c.str(`the name of variable ${i}`);
      const rank = c.u8(`the rank of ${name}`);
      const shape: number[] = [];
      for (let d = 0; d < rank; d++) shape.push(c.u32(`dimension ${d} of ${name}`));
      const dtype = c.u8(`the type of ${name}`) as Ct2Dtype;
      const nbytes = c.u32(`the size of ${name}`);
      const esize = CT2_DTYPE_SIZE[dtype];
      if (esize === undefined) throw new Ct2FormatError("INVALID", path, `${name}: unknown dtype ${dtype}`);
      const n = shape.reduce((a, b) => a * b, 1);
      if (n * esize !== nbytes) throw new Ct2FormatError("INVALID", path, `${name}: ${nbytes} bytes for shape [${shape.join(", ")}] of ${CT2_DTYPE_NAME[dtype]}`);
      if (variables.has(name)) throw new Ct2FormatError("INVALID", path, `variable ${name} appears twice`);
      const offset = c.pos;
      if (offset + nbytes > size) throw new Ct2FormatError("TRUNCATED", path, `the file ends at byte ${size} inside the data of ${name} (${nbytes} bytes from byte ${offset}); it is cut short — fetch or assemble model.bin again`);
      c.pos += nbytes;
      variables.set(name, { name, shape, dtype, offset, nbytes });
    }
    const aliases = new Map<string, string>();
    if (version >= 5 && c.pos < size) {
      const na = c.u32("the alias count");
      if (na > MAX_VARIABLES) throw new Ct2FormatError("INVALID", path, `${na} aliases is not plausible; the file is corrupt`);
      for (let i = 0; i < na; i++) {
        const alias = c.str(`alias ${i}`);
        const target = c.str(`the target of alias ${alias}`);
        aliases.set(alias, target);
      }
    } else if (version >= 5) {
      throw new Ct2FormatError("TRUNCATED", path, `the file ends at byte ${size} before the alias table; it is cut short — fetch or assemble model.bin again`);
    }
    if (c.pos !== size) throw new Ct2FormatError("INVALID", path, `${size - c.pos} bytes after the alias table; the file is corrupt or not a CTranslate2 model.bin`);
    return { path, version, spec, revision, variables, aliases, fileSize: size };
  } finally {
    closeSync(fd);
  }
}

/**
 * A variable of `model` by name, following aliases.
 *
 * @throws {Ct2FormatError} (`NOT_FOUND`) when there is no such variable
 */
export function ct2Variable(model: Ct2Model, name: string): Ct2Variable {
  const v = model.variables.get(model.aliases.get(name) ?? name);
  if (!v) throw new Ct2FormatError("NOT_FOUND", model.path, `no variable ${name} (the spec is ${model.spec}); is this a Whisper model?`);
  return v;
}

/** A variable's values: f32 and f16 as raw little-endian bits (`Float32Array` / `Uint16Array`), the integer types as their typed arrays. */
export type Ct2Data = Float32Array | Uint16Array | Int8Array | Int16Array | Int32Array;

/**
 * Reads the bytes of `v` (or `count` elements from element `start`) from
 * the open file `fd` as a fresh, aligned typed array of its dtype (f16 as
 * `Uint16Array` bits).
 */
export function readCt2Data(fd: number, v: Ct2Variable, start = 0, count?: number): Ct2Data {
  const esize = CT2_DTYPE_SIZE[v.dtype];
  const n = count ?? v.nbytes / esize - start;
  const buf = new ArrayBuffer(n * esize);
  const u8 = new Uint8Array(buf);
  for (let o = 0; o < u8.length;) {
    const got = readSync(fd, u8, o, u8.length - o, v.offset + start * esize + o);
    if (got === 0) throw new Ct2FormatError("TRUNCATED", String(fd), `unexpected end of file in ${v.name}`);
    o += got;
  }
  switch (v.dtype) {
    case Ct2Dtype.F32:
      return new Float32Array(buf);
    case Ct2Dtype.F16:
      return new Uint16Array(buf);
    case Ct2Dtype.I8:
      return new Int8Array(buf);
    case Ct2Dtype.I16:
      return new Int16Array(buf);
    default:
      return new Int32Array(buf);
  }
}

/** f16 bits → f32 for all 65536 values (built on first use). */
let F16_TABLE: Float32Array | undefined;

/** Converts IEEE half-precision bits to f32 (exact: every f16 is an f32). */
export function f16ToF32(bits: Uint16Array): Float32Array {
  if (!F16_TABLE) {
    F16_TABLE = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
      F16_TABLE[h] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
    }
  }
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = F16_TABLE[bits[i]];
  return out;
}

/** A variable's values as numbers (f16 and f32 as f32, integers as they are): for scalars and small tensors. */
export function ct2Values(fd: number, v: Ct2Variable): Float32Array | Int8Array | Int16Array | Int32Array {
  const d = readCt2Data(fd, v);
  return d instanceof Uint16Array ? f16ToF32(d) : d;
}
