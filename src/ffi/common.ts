/**
 * Helpers shared by the runtime adapters; nothing here knows the runtime.
 *
 * @module
 */
import {
  type FfiType,
  type FunctionDef,
  type Handle,
  type Pointer,
  SymbolNotDefinedError,
} from "./types.ts";

/** Normalises a native address (number, bigint or null) to a {@linkcode Pointer}. */
export function toPointer(value: number | bigint | null | undefined): Pointer {
  if (value === null || value === undefined) return 0;
  if (typeof value === "number") return value;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) {
    throw new RangeError(`native address 0x${value.toString(16)} does not fit in 53 bits`);
  }
  return n;
}

/** The address of a {@linkcode Handle} (a bigint on Deno, a number elsewhere) as a {@linkcode Pointer}. */
export function addressOf(handle: Handle): Pointer {
  return typeof handle === "number" ? handle : toPointer(handle);
}

/** Normalises a 64-bit integer result: a number when safe, else a bigint. */
export function toInt64(value: number | bigint): number | bigint {
  if (typeof value === "number") return value;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

/**
 * A copy of `entries` that V8 keeps in fast-properties mode. An object of a
 * hundred or more properties is a hash table on V8 (Deno keeps so the
 * 202-property `opChecks` literal, and both V8 runtimes the 609-function
 * symbol tables): each `table.name` load is then a lookup, and the JIT
 * cannot inline the function it finds. A class's prototype object stays
 * fast however many properties it gets, so the copy is one. Other engines
 * do not care.
 */
export function fastProperties<T extends object>(entries: T): T {
  return Object.assign((class {}).prototype as T, entries);
}

/**
 * `f` with `convert` applied to the arguments at the positions marked in
 * `which`, and `norm` to the result. Returns `f` itself when there is
 * nothing to do. One closure per arity keeps the call monomorphic (a rest
 * parameter costs ~15 ns); more than 6 arguments take the rest path.
 */
export function convertArgs(
  f: (...a: unknown[]) => unknown,
  which: readonly boolean[],
  convert: (v: unknown) => unknown,
  norm?: (v: never) => unknown,
): (...a: unknown[]) => unknown {
  if (!norm && !which.includes(true)) return f;
  const n = (norm ?? ((v: unknown) => v)) as (v: unknown) => unknown, c = convert;
  const [w0, w1, w2, w3, w4, w5] = which;
  switch (which.length) {
    case 0:
      return () => n(f());
    case 1:
      return (a) => n(f(w0 ? c(a) : a));
    case 2:
      return (a, b) => n(f(w0 ? c(a) : a, w1 ? c(b) : b));
    case 3:
      return (a, b, d) => n(f(w0 ? c(a) : a, w1 ? c(b) : b, w2 ? c(d) : d));
    case 4:
      return (a, b, d, e) => n(f(w0 ? c(a) : a, w1 ? c(b) : b, w2 ? c(d) : d, w3 ? c(e) : e));
    case 5:
      return (a, b, d, e, g) => n(f(w0 ? c(a) : a, w1 ? c(b) : b, w2 ? c(d) : d, w3 ? c(e) : e, w4 ? c(g) : g));
    case 6:
      return (a, b, d, e, g, h) => n(f(w0 ? c(a) : a, w1 ? c(b) : b, w2 ? c(d) : d, w3 ? c(e) : e, w4 ? c(g) : g, w5 ? c(h) : h));
    default:
      return (...a) => n(f(...a.map((v, i) => (which[i] ? c(v) : v))));
  }
}

/** Whether values of `type` are pointers. */
export function isPointer(type: FfiType): boolean {
  return type === "pointer" || type === "function";
}

/** Whether values of `type` are 64-bit integers. */
export function isInt64(type: FfiType): boolean {
  return type === "i64" || type === "u64" || type === "isize" || type === "usize";
}

/** The exported name a table entry binds. */
export function symbolOf(name: string, def: FunctionDef): string {
  return def.symbol ?? name;
}

/** A stand-in for a function the library does not export: calling it throws. */
export function missing(name: string, detail: string): () => never {
  return () => {
    throw new SymbolNotDefinedError(name, detail);
  };
}

/** Why a table entry has no native symbol. */
export function missingReason(def: FunctionDef, path: string): string {
  return def.defined === false
    ? "declared by the headers but defined by no source of the library"
    : `not exported by ${path}`;
}

const encoder = new TextEncoder();

/** Encodes `s` as a NUL-terminated UTF-8 C string. */
export function cString(s: string): Uint8Array<ArrayBuffer> {
  if (s.includes("\0")) throw new TypeError("a C string cannot contain NUL");
  const out = new Uint8Array(s.length * 3 + 1);
  const { written } = encoder.encodeInto(s, out);
  return out.slice(0, written + 1);
}
