/**
 * Runtime FFI adapters. This folder is the only code that knows whether it
 * runs on Deno, Bun or Node.js; everything else uses {@linkcode FfiAdapter}.
 *
 * @example
 * ```ts
 * import { loadAdapter } from "./mod.ts";
 * const ffi = await loadAdapter();
 * const libc = ffi.open("libc.so.6", { strlen: { args: ["pointer"], result: "usize" } });
 * ```
 *
 * @module
 */
import type { FfiAdapter } from "./types.ts";

export * from "./types.ts";
export { cString } from "./common.ts";
export * from "./struct.ts";

/** The runtime this process runs on. */
export function detectRuntime(): FfiAdapter["runtime"] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined) return "deno";
  return "node";
}

let cached: Promise<FfiAdapter> | undefined;

/** The adapter for the running runtime (loaded once). */
export function loadAdapter(): Promise<FfiAdapter> {
  // A computed specifier keeps each runtime from loading (and type-checking)
  // the other runtimes' adapters.
  const file = `./${detectRuntime()}.ts`;
  return cached ??= import(file).then((m: { adapter: FfiAdapter }) => m.adapter);
}
