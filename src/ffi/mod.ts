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

/**
 * Sets the adapter before anything asks for one. The package's per-runtime
 * entry points (`entry_deno.ts`, `entry_bun.ts`, `entry_node.ts`, chosen by
 * the `exports` conditions of package.json) call it through
 * `provide_<runtime>.ts`, so a published build imports its runtime's adapter
 * statically and never the others'.
 */
export function provideAdapter(adapter: FfiAdapter): void {
  if (adapter.runtime !== detectRuntime()) {
    throw new Error(`wsp-ggml: the ${adapter.runtime} entry point was loaded on ${detectRuntime()}; import the package by its name so that the runtime's \`exports\` condition applies`);
  }
  cached ??= Promise.resolve(adapter);
}

/** The adapter for the running runtime (loaded once). */
export function loadAdapter(): Promise<FfiAdapter> {
  // A computed specifier keeps each runtime from loading (and type-checking)
  // the other runtimes' adapters.
  const file = `./${detectRuntime()}.ts`;
  return cached ??= import(file).then((m: { adapter: FfiAdapter }) => m.adapter);
}
