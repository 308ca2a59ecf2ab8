/**
 * The number ABI: C wrappers (`native/shim/num_*.gen.c`, exported as
 * `wsp_num_*`) that take and return every pointer and 64-bit integer of a
 * function as a `double`. A double crosses Deno's and Bun's FFI as a plain
 * JS number with no conversion: no BigInt is made, checked or unboxed, and
 * no pointer object is built. Measured on this project's machine, a call
 * with three pointer arguments and a pointer result costs ~7 ns through the
 * wrapper on Bun instead of ~30 ns with `ptr`, and ~14 ns on Deno instead of
 * ~23 ns with bigint `usize` (plus ~20 ns to turn the result into a number).
 *
 * A double holds every integer up to 2^53 exactly. User-space addresses on
 * every supported target are below 2^48, and sizes, counts and offsets of
 * memory are too; the functions whose 64-bit values may not be (hashes,
 * cycle counters, `SIZE_MAX` sentinels, 64-bit values read from files) get
 * no wrapper (`codegen/config.ts`, `WIDE_VALUES`) and keep the bigint path.
 *
 * Runtime-neutral: the generator and the adapters share it.
 *
 * @module
 */
import { convertArgs, isInt64, isPointer } from "./common.ts";
import type { FfiSignature, FfiType, FunctionDef } from "./types.ts";

/** Whether values of `type` cross the number ABI as a double (pointers and 64-bit integers). */
export function isWide(type: FfiType): boolean {
  return isPointer(type) || isInt64(type);
}

/** The signature of a function's number-ABI wrapper: every pointer and 64-bit integer as `f64`. */
export function numSignature(sig: FfiSignature): FfiSignature {
  return { args: sig.args.map((t) => (isWide(t) ? "f64" : t)), result: isWide(sig.result) ? "f64" : sig.result };
}

/** Whether a signature has anything the number ABI would carry as a double. */
export function hasWide(sig: FfiSignature): boolean {
  return isWide(sig.result) || sig.args.some(isWide);
}

/**
 * The definition a runtime that takes the number ABI binds for a table
 * entry: its `wsp_num_*` wrapper with the wrapper's signature, or the entry
 * itself when it has no wrapper.
 */
export function numDef(name: string, def: FunctionDef): FunctionDef & { symbol: string } {
  if (def.num === undefined) return { ...def, symbol: def.symbol ?? name };
  const { nonblocking, defined } = def;
  return {
    symbol: def.num,
    ...numSignature(def),
    ...(defined === undefined ? {} : { defined }),
    ...(nonblocking === undefined ? {} : { nonblocking }),
  };
}

/** A 64-bit integer argument given as a bigint, as the number the wrapper takes (exact or a RangeError). */
function int53(v: unknown): unknown {
  if (typeof v !== "bigint") return v;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${v} does not fit in 53 bits: this function takes it as a number`);
  return n;
}

/**
 * `f` (a bound number-ABI wrapper) accepting bigints for its 64-bit integer
 * arguments, as every binding does (the API's convention: `number | bigint`).
 * Functions with no 64-bit integer argument are returned as they are.
 */
export function acceptBigInts(f: (...a: unknown[]) => unknown, args: readonly FfiType[]): (...a: unknown[]) => unknown {
  return convertArgs(f, args.map(isInt64), int53);
}
