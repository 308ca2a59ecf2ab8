/**
 * Runtime FFI adapters. This folder is the only code that knows whether it
 * runs on Deno, Bun or Node.js; everything else uses {@linkcode FfiAdapter}.
 *
 * @example
 * ```ts
 * import { adapterSync } from "./mod.ts";
 * const ffi = adapterSync();
 * const libc = ffi.open("libc.so.6", { strlen: { args: ["pointer"], result: "usize" } });
 * ```
 *
 * @module
 */
import { createRequire } from "node:module";
import type { FfiAdapter } from "./types.ts";
import { PermissionError } from "../core/errors.ts";

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

let provided: FfiAdapter | undefined;

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
  provided ??= adapter;
}

/**
 * The adapter for the running runtime, synchronously: the one an entry point
 * provided, else its module loaded with `require`. Synchronous so that no
 * module of the package needs a top-level await, which CommonJS callers
 * (`require(esm)`, `tsx` in a CommonJS project, bundlers) cannot load.
 */
export function adapterSync(): FfiAdapter {
  if (provided) return provided;
  // A computed specifier keeps each runtime from loading (and bundlers from
  // following) the other runtimes' adapters; the extension is this module's own
  // (.ts from source, .js once built).
  const ext = import.meta.url.slice(import.meta.url.lastIndexOf("."));
  const file = `./${detectRuntime()}${ext}`;
  let m: { adapter: FfiAdapter };
  try {
    m = createRequire(import.meta.url)(file) as typeof m;
  } catch (e) {
    // Deno: `require` reads the file, which --allow-read must cover (the package's entry points import it statically instead).
    if ((e as Error)?.name === "NotCapable") {
      throw new PermissionError(`wsp-ggml: loading its Deno adapter (${new URL(file, import.meta.url).pathname}) needs --allow-read: run with --allow-ffi --allow-read --allow-env (or -A), or import the package's Deno entry point (src/ffi/entry_deno.ts, the npm or JSR package) instead`, "--allow-read");
    }
    throw e;
  }
  return provided ??= m.adapter;
}

/** The adapter for the running runtime (loaded once); {@linkcode adapterSync} as a promise. */
export function loadAdapter(): Promise<FfiAdapter> {
  try {
    return Promise.resolve(adapterSync());
  } catch (e) {
    return Promise.reject(e);
  }
}
