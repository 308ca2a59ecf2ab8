/**
 * Opens the wsp_ggml libraries with the generated table: the base library and
 * one CPU variant (and Metal where present), merged into one symbol object.
 *
 * The choice of CPU variant lives here, small, until the loader takes it over:
 * the variant whose exported `wsp_ggml_backend_score()` is highest (0 means it
 * cannot run on this CPU).
 *
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { functions } from "../bindings.gen.ts";
import type { FfiAdapter, FunctionTable, NativeLibrary, TableEntry } from "./types.ts";

/** The generated function table. */
export type WspGgmlTable = typeof functions;

/** Paths of the libraries to open. */
export interface LibraryPaths {
  /** The base library (libwsp-ggml). */
  readonly base: string;
  /** A CPU backend variant (libggml-cpu-<variant>). */
  readonly cpu: string;
  /** The Metal backend, on macOS. */
  readonly metal?: string;
}

/** The libraries opened together. */
export interface WspGgml {
  /** One callable per table entry; see `NativeLibrary.symbols`. */
  readonly symbols: NativeLibrary<WspGgmlTable>["symbols"];
  /** Non-blocking variants where the runtime has them. */
  readonly async: NativeLibrary<WspGgmlTable>["async"];
  /** Whether `name` is bound to a native symbol. */
  has(name: keyof WspGgmlTable): boolean;
  /** Unloads every library. */
  close(): void;
}

function subset(library: TableEntry["library"]): FunctionTable {
  return Object.fromEntries(Object.entries(functions as Record<string, TableEntry>).filter(([, d]) => d.library === library));
}

/** Opens the base, CPU (and Metal) libraries and binds every function of the table. */
export function openWspGgml(ffi: FfiAdapter, paths: LibraryPaths): WspGgml {
  // The base library first: the CPU variant links against it.
  const libs = [ffi.open(paths.base, subset("base")), ffi.open(paths.cpu, subset("cpu"))];
  const metal = subset("metal");
  if (paths.metal) libs.push(ffi.open(paths.metal, metal));
  else {
    libs.push({
      symbols: Object.fromEntries(Object.keys(metal).map((n) => [n, () => {
        throw new Error(`${n}: the Metal backend is not loaded`);
      }])),
      async: {},
      has: () => false,
      close: () => {},
    });
  }
  const symbols = Object.assign({}, ...libs.map((l) => l.symbols));
  const async = Object.assign({}, ...libs.map((l) => l.async));
  return {
    symbols,
    async,
    has: (name) => libs.some((l) => l.has(name)),
    close: () => libs.reverse().forEach((l) => l.close()),
  };
}

/** Where the local build puts the libraries: `$WSP_GGML_LIB_DIR`, else `zig-out/lib`. */
export function libDir(): string {
  return process.env.WSP_GGML_LIB_DIR ?? join(fileURLToPath(import.meta.url), "..", "..", "..", "zig-out", "lib");
}

/** The file name of the base library on this platform. */
export function baseLibraryName(): string {
  return process.platform === "win32" ? "wsp-ggml.dll" : process.platform === "darwin" ? "libwsp-ggml.dylib" : "libwsp-ggml.so";
}

const CPU_VARIANT = /^(lib)?ggml-cpu-.+\.(so|dylib|dll)$/;

/**
 * The CPU variant in `dir` that scores highest on this machine (each is
 * opened and its `wsp_ggml_backend_score()` called). Throws when none can run.
 */
export function bestCpuVariant(ffi: FfiAdapter, dir: string): string {
  if (!existsSync(dir)) throw new Error(`no CPU backend variants: ${dir} does not exist`);
  let best: { path: string; score: number } | undefined;
  for (const file of readdirSync(dir).filter((f) => CPU_VARIANT.test(f)).sort()) {
    const path = join(dir, file);
    const lib = ffi.open(path, { wsp_ggml_backend_score: { args: [], result: "i32" } });
    const score = lib.has("wsp_ggml_backend_score") ? lib.symbols.wsp_ggml_backend_score() : 0;
    lib.close();
    if (score > 0 && (!best || score > best.score)) best = { path, score };
  }
  if (!best) throw new Error(`no CPU backend variant in ${dir} can run on this CPU`);
  return best.path;
}
