/**
 * Opens the wsp_ggml libraries with the generated table: the base library and
 * one CPU variant (and Metal where present), merged into one symbol object.
 *
 * Finding the libraries and choosing the CPU variant is the loader's job
 * (`src/runtime/loader.ts`).
 *
 * @module
 */
import { functions } from "./bindings.gen.ts";
import { fastProperties } from "./common.ts";
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

/**
 * The libraries opened together: the raw FFI layer, left out of the API
 * reference (its symbols are the generated table's).
 *
 * @ignore
 */
export interface WspGgml {
  /** One callable per table entry; see `NativeLibrary.symbols`. */
  readonly symbols: NativeLibrary<WspGgmlTable>["symbols"];
  /** The same calls with pointers as handles; see `NativeLibrary.handles`. */
  readonly handles: NativeLibrary<WspGgmlTable>["handles"];
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
      get handles() {
        return this.symbols;
      },
      async: {},
      has: () => false,
      close: () => {},
    });
  }
  // Every API call loads its function from these tables: they must not stay hash tables (fastProperties).
  const symbols = fastProperties(Object.assign({}, ...libs.map((l) => l.symbols)));
  const handles = fastProperties(Object.assign({}, ...libs.map((l) => l.handles)));
  const async = fastProperties(Object.assign({}, ...libs.map((l) => l.async)));
  return {
    symbols,
    handles,
    async,
    has: (name) => libs.some((l) => l.has(name)),
    close: () => libs.reverse().forEach((l) => l.close()),
  };
}
