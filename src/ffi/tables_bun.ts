/**
 * The generated `bun:ffi` tables, checked by TypeScript against bun:ffi's own
 * types (`tsc` with `@types/bun`).
 *
 * @module
 */
import type { FFIFunction, FFITypeOrString } from "bun:ffi";
import { bunSymbols } from "./bindings.gen.ts";

/**
 * bun:ffi's type names. Bun accepts `"i64_fast"` / `"u64_fast"` (a number
 * when it fits, else a bigint) by name at run time, but `@types/bun` 1.4.4
 * lists them only as `FFIType` members, not as strings.
 */
type BunTypeName = FFITypeOrString | "i64_fast" | "u64_fast";

/** One bun:ffi function definition, with {@linkcode BunTypeName}s. */
type BunFunction = Omit<FFIFunction, "args" | "returns"> & {
  readonly args?: readonly BunTypeName[];
  readonly returns?: BunTypeName;
};

/** {@linkcode bunSymbols}, checked to be valid bun:ffi `dlopen` tables. */
export const bunTables = bunSymbols satisfies {
  readonly [L in keyof typeof bunSymbols]: Readonly<Record<string, BunFunction>>;
};
