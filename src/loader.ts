/**
 * Finds and opens the native library, once per process.
 *
 * Search order (the first place that is set decides; an explicit place that
 * does not hold the library is an error, never a silent fall-back to another
 * build):
 * 1. the `path` option of {@linkcode loadLibrary};
 * 2. the `WSP_GGML_LIBRARY_PATH` environment variable;
 * 3. the local build, `zig-out/lib` of this repository (`npm run build`);
 * 4. the installed platform package `@wsp-ggml/<platform>-<arch>`
 *    (e.g. `@wsp-ggml/linux-x64`), resolved by name from this module.
 *
 * A place is a directory holding the base library (`libwsp-ggml.so`,
 * `libwsp-ggml.dylib`, `wsp-ggml.dll`) and the CPU backend variants
 * (`libggml-cpu-<variant>.so`, `ggml-cpu-<variant>.dll`), or the path of the
 * base library itself. Of the variants, the one whose
 * `wsp_ggml_backend_score()` is highest on this CPU is opened (or the one
 * named by the `cpuVariant` option), and registered with ggml's backend
 * registry (`wsp_ggml_backend_load`) so that the backend API sees it.
 *
 * @module
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { cString, type FfiAdapter, loadAdapter } from "./ffi/mod.ts";
import { openWspGgml, type WspGgml } from "./ffi/open.ts";
import { ArgumentError, LibraryNotFoundError } from "./errors.ts";
import { callbacks, LogLevel } from "./bindings.gen.ts";

/** The environment variable that names the library's directory (or the base library file). */
export const LIBRARY_PATH_ENV = "WSP_GGML_LIBRARY_PATH";

/** The command that builds the library from this repository. */
export const BUILD_COMMAND = "npm run build";

/** The FFI adapter of the running runtime. */
export const ffi: FfiAdapter = await loadAdapter();

/** Options of {@linkcode loadLibrary}. */
export interface LoadOptions {
  /** A directory holding the libraries, or the path of the base library. Wins over every other place. */
  readonly path?: string;
  /** The CPU variant to open (`"haswell"`, `"x64"`, …) instead of the best-scoring one. */
  readonly cpuVariant?: string;
}

/** The default places of the search, replaceable for tests. */
export interface SearchPlaces {
  /** The local build's directory (default: {@linkcode localBuildDir}). */
  readonly localDir?: string;
  /** The file or URL the platform package is resolved from (default: this module). */
  readonly resolveFrom?: string;
}

/** Where the library was found. */
export interface LibraryLocation {
  /** Which place of the search order supplied it. */
  readonly source: "option" | "env" | "local" | "package";
  /** The base library. */
  readonly base: string;
  /** The directory searched for CPU variants. */
  readonly dir: string;
}

/** The opened library. */
export interface Library extends WspGgml {
  /** The FFI adapter it was opened with. */
  readonly ffi: FfiAdapter;
  /** Where it was found. */
  readonly location: LibraryLocation;
  /** The CPU variant library opened. */
  readonly cpuPath: string;
  /** The CPU variant's name (`wsp_ggml_cpu_variant_name()`). */
  readonly cpuVariant: string;
  /** The CPU backend's registry entry (`wsp_ggml_backend_reg_t`), as ggml's registry loaded it. */
  readonly cpuReg: number;
}

/** The file name of the base library on this platform. */
export function baseLibraryName(platform: string = process.platform): string {
  return platform === "win32" ? "wsp-ggml.dll" : platform === "darwin" ? "libwsp-ggml.dylib" : "libwsp-ggml.so";
}

/** The name of the platform package for this platform (`@wsp-ggml/linux-x64`). */
export function platformPackage(platform: string = process.platform, arch: string = process.arch): string {
  return `@wsp-ggml/${platform}-${arch}`;
}

/** The local build's library directory: `zig-out/lib` of this repository. */
export function localBuildDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..", "zig-out", "lib");
}

const CPU_VARIANT = /^(?:lib)?ggml-cpu-(.+)\.(?:so|dylib|dll)$/;

/** The CPU variant libraries in `dir`, by variant name. */
export function cpuVariants(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  for (const file of readdirSync(dir).sort()) {
    const m = CPU_VARIANT.exec(file);
    if (m) out.set(m[1], join(dir, file));
  }
  return out;
}

/** A place to look at: the base library and its directory, or why it does not do. */
function inspect(path: string): { base: string; dir: string } | string {
  if (!existsSync(path)) return "does not exist";
  const isDir = statSync(path).isDirectory();
  const dir = isDir ? path : dirname(path);
  const base = isDir ? join(path, baseLibraryName()) : path;
  if (!existsSync(base)) return `has no ${baseLibraryName()}`;
  if (cpuVariants(dir).size === 0) return "has no CPU backend variant (ggml-cpu-<variant>)";
  return { base, dir };
}

/** The directory of the installed platform package, or why there is none. */
function packageDir(from: string): string | { missing: string } {
  const name = platformPackage();
  let manifest: string;
  try {
    manifest = createRequire(from).resolve(`${name}/package.json`);
  } catch {
    return { missing: "not installed" };
  }
  const root = dirname(manifest);
  return existsSync(join(root, "lib")) ? join(root, "lib") : root;
}

/**
 * Finds the library without opening it. Throws {@linkcode LibraryNotFoundError}
 * listing every place looked and the build command when nothing is found.
 *
 * @param options the explicit place, if any
 * @param env the environment (defaults to the process environment)
 * @param places where the local build is and where the platform package is resolved from (for tests)
 */
export function locateLibrary(
  options: LoadOptions = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
  places: SearchPlaces = {},
): LibraryLocation {
  const searched: string[] = [];
  const fail = (): never => {
    throw new LibraryNotFoundError(
      `wsp-ggml: the native library was not found. Looked in:\n${searched.map((s, i) => `  ${i + 1}. ${s}`).join("\n")}\n` +
        `Build it with \`${BUILD_COMMAND}\`, or install ${platformPackage()}.`,
      searched,
    );
  };
  const explicit: [LibraryLocation["source"], string, string | undefined][] = [
    ["option", "the path option", options.path],
    ["env", LIBRARY_PATH_ENV, env[LIBRARY_PATH_ENV] || undefined],
  ];
  for (const [source, label, path] of explicit) {
    if (path === undefined) {
      searched.push(`${label}: not set`);
      continue;
    }
    const found = inspect(path);
    if (typeof found !== "string") return { source, ...found };
    searched.push(`${label}: ${path} ${found}`);
    return fail(); // an explicit place is authoritative
  }
  const local = places.localDir ?? localBuildDir();
  const atLocal = inspect(local);
  if (typeof atLocal !== "string") return { source: "local", ...atLocal };
  searched.push(`local build: ${local} ${atLocal}`);
  const pkg = packageDir(places.resolveFrom ?? import.meta.url);
  if (typeof pkg !== "string") {
    searched.push(`platform package ${platformPackage()}: ${pkg.missing}`);
    return fail();
  }
  const atPkg = inspect(pkg);
  if (typeof atPkg !== "string") return { source: "package", ...atPkg };
  searched.push(`platform package ${platformPackage()}: ${pkg} ${atPkg}`);
  return fail();
}

/**
 * The CPU variant in `dir` that scores highest on this machine (each is
 * opened and its `wsp_ggml_backend_score()` called; 0 means it cannot run
 * here). Throws when none can run.
 */
export function bestCpuVariant(adapter: FfiAdapter, dir: string): string {
  let best: { path: string; score: number } | undefined;
  for (const path of cpuVariants(dir).values()) {
    const lib = adapter.open(path, { wsp_ggml_backend_score: { args: [], result: "i32" } });
    const score = lib.has("wsp_ggml_backend_score") ? lib.symbols.wsp_ggml_backend_score() : 0;
    lib.close();
    if (score > 0 && (!best || score > best.score)) best = { path, score };
  }
  if (!best) throw new LibraryNotFoundError(`no CPU backend variant in ${dir} can run on this CPU`, [dir]);
  return best.path;
}

/**
 * Runs `fn` with ggml's log routed to JS (synchronously, on this thread) and
 * returns what it logged, then restores ggml's default log.
 */
function capturingLogs<R>(lib: WspGgml, fn: () => R): { result: R; logs: { level: number; text: string }[] } {
  const logs: { level: number; text: string }[] = [];
  const cb = ffi.callback(callbacks.wsp_ggml_log_callback, ((level: number, text: number) => {
    logs.push({ level, text: ffi.readCString(text) ?? "" });
  }) as never);
  try {
    lib.symbols.wsp_ggml_log_set(cb.pointer, 0);
    return { result: fn(), logs };
  } finally {
    lib.symbols.wsp_ggml_log_set(0, 0);
    cb.close();
  }
}

// Written, never read: a store the optimiser cannot drop keeps the value reachable up to it.
// deno-lint-ignore no-unused-vars
let sink: unknown;
/** Keeps a buffer whose address C used reachable until after the call. */
export function keepAlive(value: unknown): void {
  sink = value;
  sink = undefined;
}

let loaded: Library | undefined;

/**
 * Opens the library (once per process; later calls return the same one).
 * Called implicitly by the first {@linkcode Context}; call it first to choose
 * the place or the CPU variant.
 *
 * @throws {LibraryNotFoundError} when no place holds the library
 * @throws {ArgumentError} when it is already loaded from elsewhere, or the variant does not exist
 */
export function loadLibrary(options: LoadOptions = {}): Library {
  if (loaded) {
    const want = options.path === undefined ? undefined : locateLibrary(options);
    if (want && want.base !== loaded.location.base) {
      throw new ArgumentError(`wsp-ggml is already loaded from ${loaded.location.base}; it cannot be loaded again from ${want.base}`);
    }
    if (options.cpuVariant !== undefined && options.cpuVariant !== loaded.cpuVariant) {
      throw new ArgumentError(`wsp-ggml is already loaded with the CPU variant ${loaded.cpuVariant}`);
    }
    return loaded;
  }
  const location = locateLibrary(options);
  let cpuPath: string;
  if (options.cpuVariant !== undefined) {
    const variants = cpuVariants(location.dir);
    const path = variants.get(options.cpuVariant);
    if (!path) throw new ArgumentError(`no CPU variant ${options.cpuVariant} in ${location.dir} (have: ${[...variants.keys()].join(", ")})`);
    cpuPath = path;
  } else {
    cpuPath = bestCpuVariant(ffi, location.dir);
  }
  const lib = openWspGgml(ffi, { base: location.base, cpu: cpuPath });
  const named = ffi.open(cpuPath, { wsp_ggml_cpu_variant_name: { args: [], result: "pointer" } });
  const cpuVariant = named.has("wsp_ggml_cpu_variant_name")
    ? ffi.readCString(named.symbols.wsp_ggml_cpu_variant_name()) ?? ""
    : CPU_VARIANT.exec(cpuPath.split(/[\\/]/).pop() ?? "")?.[1] ?? "";
  const pathC = cString(cpuPath);
  const { result: cpuReg, logs } = capturingLogs(lib, () => lib.symbols.wsp_ggml_backend_load(ffi.addressOf(pathC)));
  keepAlive(pathC);
  if (cpuReg === 0) {
    throw new LibraryNotFoundError(`ggml's backend registry could not load ${cpuPath}: ${logs.map((l) => l.text.trim()).join("; ")}`, [cpuPath]);
  }
  // ggml reports a successful load at INFO level on stderr; keep only what deserves attention.
  for (const l of logs) if (l.level === LogLevel.WARN || l.level === LogLevel.ERROR) console.warn(l.text.trimEnd());
  loaded = { ...lib, ffi, location, cpuPath, cpuVariant, cpuReg };
  return loaded;
}

/** The loaded library, loading it with the default search when needed. */
export function library(): Library {
  return loaded ?? loadLibrary();
}
