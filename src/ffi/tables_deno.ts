/**
 * The generated `Deno.dlopen` tables, checked by Deno's compiler against
 * Deno's own FFI types (`deno check`). `Deno.dlopen(path, denoTables.base)`
 * gives fully typed symbols.
 *
 * @module
 */
import { denoSymbols } from "./bindings.gen.ts";

/** {@linkcode denoSymbols}, checked to be valid `Deno.dlopen` interfaces. */
export const denoTables = denoSymbols satisfies {
  readonly [L in keyof typeof denoSymbols]: Deno.ForeignLibraryInterface;
};
