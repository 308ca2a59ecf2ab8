/**
 * Finds and opens the native library, once per process.
 *
 * Search order (the first place that is set decides; an explicit place that
 * does not hold the library is an error, never a silent fall-back to another
 * build):
 * 1. the `path` option of {@linkcode loadLibrary};
 * 2. the `WSP_GGML_LIBRARY_PATH` environment variable;
 * 3. the local build, `zig-out/lib` of this repository (`npm run build`);
 * 4. the installed platform package `@wsp-ggml/<platform>-<arch>[-musl]`
 *    (e.g. `@wsp-ggml/linux-x64`, `@wsp-ggml/linux-arm64-musl`), resolved by
 *    name from this module. On Linux the C library of the running process
 *    decides between the glibc and the musl package ({@linkcode detectLibc}),
 *    not which of them happens to be installed: Deno's npm installer ignores
 *    the `libc` (and, for resolution, `os`/`cpu`) fields of optional
 *    dependencies (denoland/deno#36597, #35038) and installs both. Its Vulkan
 *    backend library comes from the optional package beside it,
 *    `@wsp-ggml/<platform>-<arch>[-musl]-vulkan`, when that is installed.
 *
 * With the `probe` option (or `WSP_GGML_PROBE=1`) the chosen library is first
 * loaded and run in a child process, so that a binary that crashes on this
 * machine is reported as an error instead of taking the process down; the
 * verdict is cached per library file (see {@linkcode probeLibrary}). Unless the
 * probe is turned off (`WSP_GGML_PROBE=0`, `probe: false`), the Vulkan library's
 * devices are counted in a child first, and with none it is not loaded here
 * (see {@linkcode probeVulkan}).
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
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { adapterSync, cString, type FfiAdapter } from "../ffi/mod.ts";
import { openWspGgml, type WspGgml } from "../ffi/open.ts";
import { ArgumentError, CpuVariantError, LibraryNotFoundError, PermissionError } from "../core/errors.ts";
import { callbacks, LogLevel } from "../ffi/bindings.gen.ts";

/** The environment variable that names the library's directory (or the base library file). */
export const LIBRARY_PATH_ENV = "WSP_GGML_LIBRARY_PATH";

/** The environment variable that turns the child-process probe on (`1`) or off (`0`). */
export const PROBE_ENV = "WSP_GGML_PROBE";

/**
 * The environment variable that names the CPU variant to open (`haswell`, `x64`, …) instead
 * of the best-scoring one, as {@linkcode LoadOptions.cpuVariant} does (the option wins).
 */
export const CPU_VARIANT_ENV = "WSP_GGML_CPU_VARIANT";

/** The environment variable that names the directory of the probe verdict cache. */
export const CACHE_DIR_ENV = "WSP_GGML_CACHE_DIR";

/** The command that builds the library from this repository. */
export const BUILD_COMMAND = "npm run build";

/** The FFI adapter of the running runtime. */
export const ffi: FfiAdapter = adapterSync();

/** Options of {@linkcode loadLibrary}. */
export interface LoadOptions {
  /** A directory holding the libraries, or the path of the base library. Wins over every other place. */
  readonly path?: string;
  /**
   * The CPU variant to open (`"haswell"`, `"x64"`, …) instead of the best-scoring one (default:
   * `WSP_GGML_CPU_VARIANT`, else the best): for numbers that repeat across machines, since
   * the variants' kernels round differently. A variant this CPU cannot run, or one the place
   * does not hold, is a {@linkcode CpuVariantError} before anything is loaded.
   */
  readonly cpuVariant?: string;
  /**
   * Load and run the library in a child process before loading it here
   * (default: `WSP_GGML_PROBE=1`, else off). A library that crashes the
   * child is reported with {@linkcode LibraryNotFoundError}; the verdict is cached.
   * Unless this is false (or `WSP_GGML_PROBE=0`), the Vulkan library's devices are also
   * counted in a child first ({@linkcode probeVulkan}): with none, it is not loaded here.
   */
  readonly probe?: boolean;
  /**
   * Register the Vulkan backend library (`libggml-vulkan.so`, `ggml-vulkan.dll`) when the
   * place holds one and the machine has a Vulkan loader and device (default: true, or
   * `WSP_GGML_VULKAN=0` for false). Without either, only the CPU is registered.
   */
  readonly vulkan?: boolean;
}

/** The environment variable that turns the Vulkan backend off (`0`). */
export const VULKAN_ENV = "WSP_GGML_VULKAN";

/** What became of the Vulkan backend library when the library was loaded ({@linkcode Library.vulkan}). */
export type VulkanStatus = Library["vulkan"];

/** The default places of the search, replaceable for tests. */
export interface SearchPlaces {
  /** The local build's directory (default: {@linkcode localBuildDir}). */
  readonly localDir?: string;
  /** The file or URL the platform package is resolved from (default: this module). */
  readonly resolveFrom?: string;
  /** The C library to choose the Linux package for (default: {@linkcode detectLibc}). */
  readonly libc?: Libc;
}

/** The C library of a Linux process. */
export type Libc = "glibc" | "musl";

let detectedLibc: Libc | undefined;

/**
 * The C library the running process is linked with (Linux; `undefined`
 * elsewhere). The process's own mappings decide (`/proc/self/maps` names
 * `ld-musl-*` or `libc.so.6`): a musl loader merely installed on a glibc
 * system (Debian's `musl` package) does not count, and a glibc runtime run on
 * Alpine through gcompat maps musl's loader, which is what the library will
 * be linked against. Falls back to Node's report (`glibcVersionRuntime`),
 * then to `ldd`'s text, then to glibc.
 */
export function detectLibc(): Libc | undefined {
  if (process.platform !== "linux") return undefined;
  return detectedLibc ??= (() => {
    try {
      const maps = readFileSync("/proc/self/maps", "utf8");
      if (/\bld-musl-|\blibc\.musl-/.test(maps)) return "musl";
      if (/\blibc\.so\.6\b|\bld-linux/.test(maps)) return "glibc";
    } catch { /* no procfs, or no read permission */ }
    try {
      const report = (process as { report?: { getReport?: () => { header?: { glibcVersionRuntime?: string } } } }).report;
      const header = report?.getReport?.()?.header;
      if (header && "glibcVersionRuntime" in header) return header.glibcVersionRuntime ? "glibc" : "musl";
    } catch { /* not supported by this runtime */ }
    try {
      if (readFileSync("/usr/bin/ldd", "utf8").includes("musl")) return "musl";
    } catch { /* no ldd */ }
    return "glibc";
  })();
}

/** Where the library was found. */
export interface LibraryLocation {
  /** Which place of the search order supplied it. */
  readonly source: "option" | "env" | "local" | "package";
  /** The base library. */
  readonly base: string;
  /** The directory searched for CPU variants. */
  readonly dir: string;
  /**
   * For a platform package: the optional GPU package beside it (`@wsp-ggml/<platform>-vulkan`,
   * resolved the same way) and its library directory, or null when it is not installed. The
   * Vulkan library is looked for in `dir` first, then there.
   */
  readonly vulkanPackage?: { readonly name: string; readonly dir: string | null };
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
  /** The Vulkan backend library (`libggml-vulkan.so`, `ggml-vulkan.dll`): registered, or why not. */
  readonly vulkan: {
    /** The Vulkan library of the place, or null when it has none. */
    readonly path: string | null;
    /** Its registry entry (`wsp_ggml_backend_reg_t`) when it was registered, else 0. */
    readonly reg: number;
    /** Why it was not registered (no library, no Vulkan loader, no device, turned off), or null. */
    readonly skipped: string | null;
    /**
     * Each device's largest single allocation (ggml-vulkan's `max_memory_allocation_size`), by
     * device index in the registry entry, as the probe child measured it ({@linkcode probeVulkan});
     * absent when the probe did not run or did not say.
     *
     * @ignore @internal
     */
    readonly maxAllocation?: readonly number[];
  };
}

/** The file name of the base library on this platform. */
export function baseLibraryName(platform: string = process.platform): string {
  return platform === "win32" ? "wsp-ggml.dll" : platform === "darwin" ? "libwsp-ggml.dylib" : "libwsp-ggml.so";
}

/**
 * The name of the platform package (`@wsp-ggml/linux-x64`,
 * `@wsp-ggml/linux-x64-musl`, `@wsp-ggml/darwin-arm64`, …). On Linux, `libc`
 * defaults to this process's C library when `platform` is this platform,
 * else to glibc.
 */
export function platformPackage(
  platform: string = process.platform,
  arch: string = process.arch,
  libc: Libc | undefined = platform !== "linux" ? undefined : platform === process.platform ? detectLibc() : "glibc",
): string {
  return `@wsp-ggml/${platform}-${arch}${platform === "linux" && libc === "musl" ? "-musl" : ""}`;
}

/** The name of the optional Vulkan package beside a platform package (`@wsp-ggml/linux-x64-vulkan`, …). */
export function vulkanPackage(platformPkg: string = platformPackage()): string {
  return `${platformPkg}-vulkan`;
}

/** The local build's library directory: `zig-out/lib` of this repository. */
export function localBuildDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..", "..", "zig-out", "lib");
}

/** Whether this module runs from a source checkout (not from an installed package). */
function inCheckout(): boolean {
  return existsSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "build.zig"));
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

/** The directory of an installed package, or undefined. */
function resolvePackage(from: string, name: string): string | undefined {
  try {
    return dirname(createRequire(from).resolve(`${name}/package.json`));
  } catch {
    return undefined;
  }
}

/** The directory of the installed platform package, or why there is none. */
function packageDir(from: string, name: string, libc: Libc | undefined): string | { missing: string } {
  const root = resolvePackage(from, name);
  if (root === undefined) {
    // Say so when the other libc's package is what is installed (an npm
    // install copied from another system, or a forced --libc).
    if (libc !== undefined) {
      const other: Libc = libc === "musl" ? "glibc" : "musl";
      const otherName = platformPackage(process.platform, process.arch, other);
      if (resolvePackage(from, otherName) !== undefined) {
        return { missing: `not installed (${otherName} is, but it is built for ${other} and this process runs on ${libc})` };
      }
    }
    return { missing: "not installed" };
  }
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
  const libc = process.platform === "linux" ? places.libc ?? detectLibc() : undefined;
  const pkgName = platformPackage(process.platform, process.arch, libc);
  const fail = (): never => {
    throw new LibraryNotFoundError(
      `wsp-ggml: the native library was not found. Looked in:\n${searched.map((s, i) => `  ${i + 1}. ${s}`).join("\n")}\n` +
        `Install ${pkgName} (\`npm install ${pkgName}\`), set ${LIBRARY_PATH_ENV} to a directory holding the libraries, ` +
        `or build them with \`${BUILD_COMMAND}\` in a checkout.`,
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
  if (places.localDir !== undefined || inCheckout()) {
    const local = places.localDir ?? localBuildDir();
    const atLocal = inspect(local);
    if (typeof atLocal !== "string") return { source: "local", ...atLocal };
    searched.push(`local build: ${local} ${atLocal}`);
  } else {
    searched.push("local build: not a source checkout");
  }
  const from = places.resolveFrom ?? import.meta.url;
  const pkg = packageDir(from, pkgName, libc);
  if (typeof pkg !== "string") {
    searched.push(`platform package ${pkgName}: ${pkg.missing}`);
    return fail();
  }
  const atPkg = inspect(pkg);
  if (typeof atPkg !== "string") {
    const gpu = vulkanPackage(pkgName);
    const gpuRoot = resolvePackage(from, gpu);
    const gpuDir = gpuRoot === undefined ? null : existsSync(join(gpuRoot, "lib")) ? join(gpuRoot, "lib") : gpuRoot;
    return { source: "package", ...atPkg, vulkanPackage: { name: gpu, dir: gpuDir } };
  }
  searched.push(`platform package ${pkgName}: ${pkg} ${atPkg}`);
  return fail();
}

/** A CPU variant library and its `wsp_ggml_backend_score()` on this CPU (0: it cannot run here). */
export interface CpuVariantScore {
  /** The variant's name, from its file name (`haswell` of `libggml-cpu-haswell.so`). */
  readonly name: string;
  /** The library file. */
  readonly path: string;
  /** ggml's score: 0 when this CPU lacks a feature the variant was compiled for, else higher for more features. */
  readonly score: number;
}

/**
 * Every CPU variant in `dir` with its score on this CPU, best first (each is opened and
 * its `wsp_ggml_backend_score()` called: that function is compiled for the baseline CPU,
 * so it runs where the variant's kernels cannot).
 *
 * @param adapter the FFI adapter (default: the running runtime's)
 * @param dir a folder holding the base library and the `ggml-cpu-<variant>` libraries
 */
export function cpuVariantScores(adapter: FfiAdapter, dir: string): CpuVariantScore[] {
  // The base library first, by the path the loader opens it with: a variant's dependency on
  // libwsp-ggml then resolves to it (by soname) instead of to whatever the variant's run path
  // finds first, e.g. a second copy in zig's build cache, with its own backend registry,
  // logger and abort callback. (Left open: the library pins itself, native/pin.c.)
  const base = join(dir, baseLibraryName());
  if (existsSync(base)) openNamed(base, () => adapter.open(base, { wsp_ggml_time_init: { args: [], result: "void" } }));
  const out: CpuVariantScore[] = [];
  for (const [name, path] of cpuVariants(dir)) {
    const lib = openNamed(path, () => adapter.open(path, { wsp_ggml_backend_score: { args: [], result: "i32" } }));
    const score = lib.has("wsp_ggml_backend_score") ? lib.symbols.wsp_ggml_backend_score() : 0;
    lib.close();
    out.push({ name, path, score });
  }
  return out.sort((a, b) => b.score - a.score);
}

/**
 * The CPU variant in `dir` that scores highest on this machine. Throws when none can run.
 */
export function bestCpuVariant(adapter: FfiAdapter, dir: string): string {
  const best = cpuVariantScores(adapter, dir)[0];
  if (!best || best.score <= 0) throw new LibraryNotFoundError(`no CPU backend variant in ${dir} can run on this CPU`, [dir]);
  return best.path;
}

/**
 * The library of the CPU variant `name` in `dir`, after checking that this CPU can run it.
 *
 * @throws {CpuVariantError} when `dir` has no such variant, or its score here is 0
 */
function namedCpuVariant(dir: string, name: string, from: string): string {
  const scores = cpuVariantScores(ffi, dir);
  const available = scores.map((v) => v.name).sort();
  const runnable = scores.filter((v) => v.score > 0).map((v) => v.name);
  const hit = scores.find((v) => v.name === name);
  const choose = `; name one this CPU can run (${runnable.join(", ") || "none"}), or leave ${CPU_VARIANT_ENV} unset for the best one`;
  if (!hit) throw new CpuVariantError(`${from} names the CPU variant "${name}", which ${dir} does not hold (it has: ${available.join(", ")})${choose}`, name, available, runnable);
  if (hit.score <= 0) {
    throw new CpuVariantError(`${from} names the CPU variant "${name}", which this CPU cannot run (it lacks an instruction set the variant was built for)${choose}`, name, available, runnable);
  }
  return hit.path;
}

/**
 * Runs `fn` with ggml's log routed to JS (synchronously, on this thread) and
 * returns what it logged, then restores wsp-ggml's log routing (src/runtime/log.ts).
 */
function capturingLogs<R>(lib: WspGgml, base: string, fn: () => R): { result: R; logs: { level: number; text: string }[] } {
  const logs: { level: number; text: string }[] = [];
  const cb = ffi.callback(callbacks.wsp_ggml_log_callback, ((level: number, text: number) => {
    logs.push({ level, text: ffi.readCString(text) ?? "" });
  }) as never);
  try {
    lib.symbols.wsp_ggml_log_set(cb.pointer, 0);
    return { result: fn(), logs };
  } finally {
    // Back to wsp-ggml's routing (native/log.c; ggml's own default when the library predates it).
    lib.symbols.wsp_ggml_log_set(ffi.symbolAddress(base, "wsp_js_log_dispatch"), 0);
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
 * @throws {ArgumentError} when it is already loaded from elsewhere or with another CPU variant
 * @throws {CpuVariantError} when the variant named (option or `WSP_GGML_CPU_VARIANT`) is not there or cannot run on this CPU
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
  let location: LibraryLocation;
  try {
    location = locateLibrary(options);
    // Before any dlopen, probing or not: a truncated file is SIGBUS, not an error.
    checkLibraryFile(location, location.base);
    for (const path of cpuVariants(location.dir).values()) checkLibraryFile(location, path);
  } catch (e) {
    throw permissionError(e) ?? e; // Deno without --allow-env / --allow-read
  }
  const fromEnv = options.cpuVariant === undefined && !!process.env[CPU_VARIANT_ENV];
  if (fromEnv) options = { ...options, cpuVariant: process.env[CPU_VARIANT_ENV] };
  // Checked here, before the probe child or a dlopen of its kernels: an unrunnable variant is SIGILL.
  const namedPath = options.cpuVariant === undefined
    ? undefined
    : opening(location, () => namedCpuVariant(location.dir, options.cpuVariant!, fromEnv ? CPU_VARIANT_ENV : "the cpuVariant option"));
  const probe = options.probe ?? process.env[PROBE_ENV] === "1";
  if (probe && options.cpuVariant === undefined) {
    // The child chose the variant the same way; opening the others here to
    // score them again is what the probe is meant to spare.
    const verdict = probeLibrary(location);
    if (verdict.variant !== undefined) options = { ...options, cpuVariant: verdict.variant };
  } else if (probe) {
    probeLibrary(location, options.cpuVariant);
  }
  let cpuPath: string;
  if (options.cpuVariant !== undefined) {
    // Else the probe child chose it, scoring them all as bestCpuVariant does.
    const path = namedPath ?? cpuVariants(location.dir).get(options.cpuVariant);
    if (!path) throw new ArgumentError(`no CPU variant ${options.cpuVariant} in ${location.dir}`);
    cpuPath = path;
  } else {
    cpuPath = opening(location, () => bestCpuVariant(ffi, location.dir));
  }
  const lib = opening(location, () => openWspGgml(ffi, { base: location.base, cpu: cpuPath }), location.base);
  const named = opening(location, () => ffi.open(cpuPath, { wsp_ggml_cpu_variant_name: { args: [], result: "pointer" } }), cpuPath);
  const cpuVariant = named.has("wsp_ggml_cpu_variant_name")
    ? ffi.readCString(named.symbols.wsp_ggml_cpu_variant_name()) ?? ""
    : CPU_VARIANT.exec(cpuPath.split(/[\\/]/).pop() ?? "")?.[1] ?? "";
  const pathC = cString(cpuPath);
  const { result: cpuReg, logs } = capturingLogs(lib, location.base, () => lib.symbols.wsp_ggml_backend_load(ffi.addressOf(pathC)));
  keepAlive(pathC);
  if (cpuReg === 0) {
    throw new LibraryNotFoundError(`ggml's backend registry could not load ${cpuPath}: ${logs.map((l) => l.text.trim()).join("; ")}`, [cpuPath]);
  }
  // ggml reports a successful load at INFO level on stderr; keep only what deserves attention.
  for (const l of logs) if (l.level === LogLevel.WARN || l.level === LogLevel.ERROR) console.warn(l.text.trimEnd());
  // The Vulkan probe is on by default (it spares ~55 MiB of Mesa drivers where no device
  // results); only an explicit probe: false / WSP_GGML_PROBE=0 turns it off.
  const vulkanProbe = options.probe ?? process.env[PROBE_ENV] !== "0";
  const variantKey = CPU_VARIANT.exec(cpuPath.split(/[\\/]/).pop() ?? "")?.[1];
  const vulkan = loadVulkan(lib, location, options.vulkan ?? process.env[VULKAN_ENV] !== "0", vulkanProbe ? { explicit: probe, cpuVariant: variantKey } : undefined);
  loaded = { ...lib, ffi, location, cpuPath, cpuVariant, cpuReg, vulkan };
  return loaded;
}

/** The file name of the Vulkan backend library on this platform. */
export function vulkanLibraryName(platform: string = process.platform): string {
  return platform === "win32" ? "ggml-vulkan.dll" : "libggml-vulkan.so";
}

/**
 * Registers the Vulkan backend library of `location` (beside its base library, or, for a
 * platform package, in the optional `@wsp-ggml/<platform>-vulkan` package installed beside it)
 * when there is one and it works here. A
 * machine without a Vulkan loader fails its dlopen (it needs libvulkan.so.1 / vulkan-1.dll), a
 * machine without a device (ggml-vulkan skips CPU-type devices such as lavapipe unless
 * WSP_GGML_VK_VISIBLE_DEVICES names them) registers none and is unregistered again: either way
 * only the CPU remains, ggml's messages are kept from stderr, and the reason is kept in
 * {@linkcode Library.vulkan} and printed at DEBUG level (when WSP_GGML_DEBUG is set).
 *
 * With `probe`, the device count comes from a child process first ({@linkcode probeVulkan}):
 * creating a Vulkan instance maps the machine's drivers (Mesa's lavapipe alone is ~55 MiB of
 * RSS), which stay mapped after an unregister, so a library that would give no device is not
 * loaded here at all.
 */
function loadVulkan(lib: WspGgml, location: LibraryLocation, enabled: boolean, probe?: { explicit: boolean; cpuVariant?: string }): VulkanStatus {
  // Beside the base library, else (platform package) in the optional -vulkan package beside it.
  // From there its need for libwsp-ggml.so is met by the loaded base library: by soname (glibc),
  // by module name (Windows), or on musl by the short name the base got when the CPU variant,
  // loaded first, found it through its $ORIGIN run path (musl matches no sonames).
  const gpu = location.vulkanPackage;
  const beside = join(location.dir, vulkanLibraryName());
  const path = existsSync(beside) || !gpu?.dir ? beside : join(gpu.dir, vulkanLibraryName());
  if (!existsSync(path)) {
    return vulkanSkipped(null, !gpu ? `no ${vulkanLibraryName()} in ${location.dir}` : gpu.dir === null
      ? `the optional GPU package ${gpu.name} is not installed (CPU only)`
      : `no ${vulkanLibraryName()} in ${gpu.dir} (${gpu.name})`);
  }
  if (!enabled) return vulkanSkipped(path, `turned off (${VULKAN_ENV}=0 or vulkan: false)`);
  if (libraryFileProblem(path) !== null) return vulkanSkipped(path, `${path} ${libraryFileProblem(path)}`);
  let maxAllocation: readonly number[] | undefined;
  if (probe) {
    const verdict = probeVulkan(location, path, probe);
    if (verdict !== undefined && verdict.devices === 0) {
      const how = verdict.cached ? "probed in a child process, cached" : "probed in a child process";
      return vulkanSkipped(path, verdict.skipped === null || verdict.skipped.startsWith(NO_VULKAN_DEVICE)
        ? `${NO_VULKAN_DEVICE} (${how}; ${CPU_TYPE_NOTE})`
        : `${verdict.skipped} (${how})`);
    }
    maxAllocation = verdict?.maxAllocation;
  }
  const status = registerVulkan(lib, location.base, path);
  // Same library, same environment: the same devices in the same order as in the child.
  if (status.reg !== 0 && maxAllocation?.length === Number(lib.symbols.wsp_ggml_backend_reg_dev_count(status.reg))) return { ...status, maxAllocation };
  return status;
}

/**
 * What the probe child sets in its own environment so that a Vulkan device's buffer type reports
 * the device's `max_memory_allocation_size`: the buffer type's maximum is the suballocation
 * block size (1 GiB by default, WSP_GGML_VK_SUBALLOCATION_BLOCK_SIZE) capped by that limit, so an
 * unbounded block size leaves the limit. ggml reads it with `std::stoul`: 32 bits on Windows,
 * where a limit above 4 GiB is then under-reported (the safe side for the checks that use it).
 */
export const PROBE_BLOCK_SIZE_ENV: Readonly<Record<string, string>> = {
  WSP_GGML_VK_SUBALLOCATION_BLOCK_SIZE: process.platform === "win32" ? "4294967295" : "18446744073709551615",
};

const NO_VULKAN_DEVICE = "no Vulkan device";
const CPU_TYPE_NOTE = "a CPU-type device such as lavapipe counts only when WSP_GGML_VK_VISIBLE_DEVICES names it";

/** Records and, with WSP_GGML_DEBUG, prints why the Vulkan library was not registered. */
function vulkanSkipped(path: string | null, why: string): VulkanStatus {
  if (process.env.WSP_GGML_DEBUG) console.debug(`wsp-ggml: DEBUG: Vulkan backend skipped: ${why}`);
  return { path, reg: 0, skipped: why };
}

/**
 * Loads the Vulkan library at `path` into this process and registers it; unregisters it
 * again when it gives no device. For the loader and its probe child only.
 *
 * @internal
 * @ignore
 */
export function registerVulkan(lib: WspGgml, base: string, path: string): VulkanStatus {
  const pathC = cString(path);
  const { result: reg, logs } = capturingLogs(lib, base, () => lib.symbols.wsp_ggml_backend_load(ffi.addressOf(pathC)));
  keepAlive(pathC);
  if (reg === 0) {
    const said = logs.map((l) => l.text.trim()).filter(Boolean).join("; ");
    return vulkanSkipped(path, `it could not be loaded (no Vulkan loader, ${process.platform === "win32" ? "vulkan-1.dll" : "libvulkan.so.1"}, or no Vulkan driver)${said ? `: ${said}` : ""}`);
  }
  if (Number(lib.symbols.wsp_ggml_backend_reg_dev_count(reg)) === 0) {
    capturingLogs(lib, base, () => lib.symbols.wsp_ggml_backend_unload(reg)); // its INFO line is no news
    return vulkanSkipped(path, `${NO_VULKAN_DEVICE} (${CPU_TYPE_NOTE})`);
  }
  return { path, reg, skipped: null };
}

/** The outcome of {@linkcode probeVulkan}. */
export interface VulkanProbeVerdict {
  /** How many devices ggml-vulkan registered in the child (0 when it could not be loaded or the child failed). */
  readonly devices: number;
  /** Why there are none, as the child (or its failure) told it; null when there are some or the child said nothing. */
  readonly skipped: string | null;
  /** Whether the verdict came from the cache. */
  readonly cached: boolean;
  /** Each device's `max_memory_allocation_size` (see {@linkcode PROBE_BLOCK_SIZE_ENV}), when the child reported it. */
  readonly maxAllocation?: readonly number[];
}

// Environment variables that change which Vulkan driver and devices a process sees: ggml-vulkan's
// own (WSP_GGML_VK_VISIBLE_DEVICES; upstream's GGML_VK_* for a library built without the prefix),
// the Vulkan loader's (VK_ICD_FILENAMES, VK_DRIVER_FILES, VK_LOADER_*, …), Mesa's, and the search paths.
const VULKAN_ENV_NAMES = /^(?:WSP_)?GGML_VK_|^VK_|^MESA_|^LD_LIBRARY_PATH$|^XDG_(?:DATA|CONFIG)_(?:DIRS|HOME)$/;

/**
 * What a Vulkan device count depends on besides the library and the environment, cheaply: on
 * Linux, the GPU device nodes (`/dev/dri/*`, NVIDIA's and WSL's nodes in `/dev`; Deno reads them
 * only with --allow-all), the Vulkan driver manifests (names, sizes, modification times) in the
 * loader's standard ICD folders, and the dynamic linker's cache (which ldconfig rewrites when a
 * driver or loader is installed).
 * Elsewhere nothing: the key is the library and the environment alone.
 */
function vulkanMachineSignature(env: Readonly<Record<string, string | undefined>>): unknown[] {
  if (process.platform !== "linux") return [];
  const out: unknown[] = [];
  const list = (dir: string, keep: (name: string) => boolean = () => true) => {
    try {
      const names = readdirSync(dir).filter(keep).sort();
      out.push([dir, names.map((n) => {
        try {
          const st = statSync(join(dir, n));
          return [n, st.size, st.mtimeMs, st.rdev];
        } catch {
          return [n];
        }
      })]);
    } catch (e) {
      // Deno asks --allow-all for /dev: without it the key keeps the manifests and ld.so.cache only.
      out.push([dir, permissionError(e) ? "not allowed" : null]);
    }
  };
  list("/dev/dri");
  list("/dev", (n) => /^(?:nvidia|dxg|kfd)/.test(n));
  const home = env.HOME ?? ""; // what the Vulkan loader reads (homedir() needs Deno's --allow-sys)
  const config = [env.XDG_CONFIG_HOME || join(home, ".config"), ...(env.XDG_CONFIG_DIRS || "/etc/xdg").split(":"), "/etc"];
  const data = [env.XDG_DATA_HOME || join(home, ".local", "share"), ...(env.XDG_DATA_DIRS || "/usr/local/share:/usr/share").split(":")];
  for (const dir of new Set([...config, ...data].filter(Boolean))) list(join(dir, "vulkan", "icd.d"));
  try {
    out.push(["ld.so.cache", statSync("/etc/ld.so.cache").mtimeMs]);
  } catch { /* absent (musl), or not allowed */ }
  return out;
}

const VULKAN_PROBE_TIMEOUT_MS = 60_000;
const PROBE_CRASHED = "the Vulkan probe process";

/**
 * Counts the devices the Vulkan library at `path` gives, in a child process of the same
 * runtime (`probe_child` with the Vulkan library as third argument), so that a machine
 * without a GPU does not map its Vulkan drivers into this process for nothing; a driver that
 * crashes or hangs kills only the child (Vulkan is then skipped, with the child's output as
 * the reason). The child also reports each device's largest allocation (`maxAllocation`, see
 * {@linkcode PROBE_BLOCK_SIZE_ENV}), which the Vulkan checks of the API bound temporaries with.
 *
 * Verdicts are cached on disk in {@linkcode probeCacheDir} (`vulkan-probe-<key>.json`), keyed by
 * the Vulkan and base libraries' paths, sizes and modification times, the environment variables
 * that change the device list, and on Linux the GPU device nodes, the Vulkan driver manifests
 * and the dynamic linker's cache ({@linkcode vulkanMachineSignature}); a timed-out child is not
 * cached. Returns undefined when no child can be run (a compiled executable, Deno without
 * `--allow-run` unless the probe was asked for explicitly, which is a {@linkcode PermissionError}
 * then; a key that cannot be computed): the caller then loads the library in-process as before.
 */
export function probeVulkan(location: LibraryLocation, path: string, options: { explicit?: boolean; cpuVariant?: string } = {}): VulkanProbeVerdict | undefined {
  const debug = (why: string) => {
    if (process.env.WSP_GGML_DEBUG) console.debug(`wsp-ggml: DEBUG: Vulkan probe not run (${why}); loading ${path} in this process`);
  };
  const here = fileURLToPath(import.meta.url);
  const script = join(dirname(here), "..", "ffi", `probe_child${here.endsWith(".ts") ? ".ts" : ".js"}`);
  let cacheFile: string;
  try {
    const env = process.env;
    const vars = Object.keys(env).filter((k) => VULKAN_ENV_NAMES.test(k)).sort().map((k) => [k, env[k]]);
    const identity = [path, location.base].map((f) => {
      const st = statSync(f);
      return [f, st.size, st.mtimeMs];
    });
    const key = createHash("sha256")
      .update(JSON.stringify(["vulkan-probe-2", identity, vars, vulkanMachineSignature(env), process.platform, process.arch]))
      .digest("hex").slice(0, 32);
    cacheFile = join(probeCacheDir(), `vulkan-probe-${key}.json`);
  } catch (e) {
    // Deno with a narrower --allow-env / --allow-read / --allow-sys than this needs: no key, no probe.
    if (options.explicit && permissionError(e)) throw permissionError(e);
    debug(`its cache key could not be computed: ${(e as Error)?.message ?? e}`);
    return undefined;
  }
  try {
    const v = JSON.parse(readFileSync(cacheFile, "utf8")) as VulkanProbeVerdict;
    if (typeof v.devices === "number") {
      // A remembered crash still costs the GPU: say so on every start, not only the first.
      if (v.skipped?.startsWith(PROBE_CRASHED)) console.warn(`wsp-ggml: ${path} was not loaded: ${v.skipped} (cached)`);
      return { devices: v.devices, skipped: v.skipped ?? null, cached: true, ...(maxAllocations(v.maxAllocation) ? { maxAllocation: v.maxAllocation } : {}) };
    }
  } catch { /* not cached yet */ }
  if (!existsSync(script)) {
    debug(`no probe script at ${script}, e.g. in a compiled executable`);
    return undefined;
  }
  const [cmd, args] = childCommand(script, [location.base, options.cpuVariant ?? "", path]);
  if (!ffi.mayRun(cmd)) {
    if (options.explicit) {
      throw new PermissionError(
        `wsp-ggml: the probe of ${path} runs it in a child process (${cmd}), which the runtime did not allow. Run it with --allow-run (or turn the probe off: ${PROBE_ENV}=0, or probe: false).`,
        "--allow-run",
      );
    }
    debug("the runtime does not allow running a child process (Deno without --allow-run)");
    return undefined;
  }
  const env: Record<string, string | undefined> = { ...process.env, [PROBE_ENV]: "0", ...PROBE_BLOCK_SIZE_ENV };
  delete env.NODE_TEST_CONTEXT;
  const r = spawnSync(cmd, args, { encoding: "utf8", env: env as Record<string, string>, timeout: VULKAN_PROBE_TIMEOUT_MS, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status === undefined && r.signal === undefined && !r.error) {
    debug("the child process did not start");
    return undefined;
  }
  const timedOut = (r.error as { code?: string } | undefined)?.code === "ETIMEDOUT";
  if (r.error && !timedOut) {
    debug(r.error.message);
    return undefined;
  }
  let answer: { ok?: boolean; vulkan?: { devices?: number; skipped?: string | null; maxAllocation?: unknown } } = {};
  try {
    answer = JSON.parse((r.stdout ?? "").trim().split("\n").pop() ?? "");
  } catch { /* the child died before answering */ }
  const answered = r.status === 0 && answer.ok === true && typeof answer.vulkan?.devices === "number";
  // A native crash: a signal, or on Windows an NTSTATUS exit code (0xC0000005, …).
  const crashed = r.signal !== null || (r.status ?? 0) >= 0xc0000000;
  const err = (r.stderr ?? "").trim().split("\n").slice(-4).join("; ");
  if (!answered && !crashed && !timedOut) {
    // The child failed in JS (not in a driver): no verdict on Vulkan; load it here as before.
    console.warn(`wsp-ggml: the Vulkan probe process exited with code ${r.status}${err ? `: ${err}` : ""}; loading ${path} in this process (${PROBE_ENV}=0 skips the probe)`);
    return undefined;
  }
  // A fault recurs: cached. A timeout or a kill (a busy machine, the OOM killer; Bun reports its
  // timeout as SIGTERM alone) may not: probed again next time.
  const fault = !timedOut && (r.signal === null || /^SIG(?:SEGV|BUS|ILL|ABRT|FPE|TRAP|SYS)$/.test(r.signal));
  let verdict: VulkanProbeVerdict;
  if (answered) {
    const max = answer.vulkan!.maxAllocation;
    verdict = {
      devices: answer.vulkan!.devices!,
      skipped: answer.vulkan!.devices! > 0 ? null : answer.vulkan!.skipped ?? null,
      cached: false,
      ...(maxAllocations(max) && max.length === answer.vulkan!.devices ? { maxAllocation: max } : {}),
    };
  } else {
    // What would have taken this process down: skip Vulkan, say why, keep the CPU.
    const how = timedOut ? `timed out after ${VULKAN_PROBE_TIMEOUT_MS / 1000} s` : r.signal ? `was killed by ${r.signal}` : `exited with code ${r.status}`;
    verdict = { devices: 0, skipped: `${PROBE_CRASHED} ${how}${err ? `: ${err}` : ""}${fault ? `; delete ${cacheFile} to probe again` : ""}`, cached: false };
    console.warn(`wsp-ggml: ${path} was not loaded: ${verdict.skipped}`);
  }
  if (fault) {
    try {
      // Written whole, then renamed: processes starting together never read half a verdict.
      mkdirSync(dirname(cacheFile), { recursive: true });
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify({ devices: verdict.devices, skipped: verdict.skipped, maxAllocation: verdict.maxAllocation }));
      renameSync(tmp, cacheFile);
    } catch { /* an unwritable cache only costs a probe next time */ }
  }
  return verdict;
}

/** Whether `v` is a list of allocation limits (positive byte counts), as the probe child reports them. */
const maxAllocations = (v: unknown): v is number[] => Array.isArray(v) && v.every((n) => typeof n === "number" && n > 0);

/**
 * Why `path` cannot be a shared library for dlopen, or null when its header
 * looks sound. The dynamic loader maps an ELF file's segments as the program
 * headers describe them; a truncated file (a copy or download cut short)
 * maps pages past its end, and the first access to them is SIGBUS — before
 * any error can be reported. So the header and the extents it declares
 * (program headers, segments, section headers) are checked against the
 * file's size first. Mach-O and PE files get the magic check only (their
 * loaders check sizes themselves).
 */
export function libraryFileProblem(path: string): string | null {
  let fd: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) return "is not a regular file";
    fd = openSync(path, "r");
  } catch (e) {
    const denied = permissionError(e, path);
    if (denied) throw denied;
    return `cannot be read (${(e as NodeJS.ErrnoException)?.code ?? (e as Error)?.message})`;
  }
  try {
    const size = fstatSync(fd).size;
    const head = new Uint8Array(64);
    const got = readSync(fd, head, 0, 64, 0);
    const v = new DataView(head.buffer);
    const magic = v.getUint32(0, false);
    if (got >= 4 && (magic === 0xcffaedfe || magic === 0xcefaedfe || magic === 0xcafebabe)) return null; // Mach-O (thin, fat)
    if (got >= 2 && head[0] === 0x4d && head[1] === 0x5a) return null; // PE ("MZ")
    if (got < 4 || magic !== 0x7f454c46) return `is not a shared library (no ELF, Mach-O or PE header; ${size} bytes)`;
    if (got < 64 || head[4] !== 2) return got < 64 ? `is truncated (${size} bytes: shorter than an ELF header)` : "is a 32-bit ELF file";
    const le = head[5] === 1;
    const u16 = (o: number) => v.getUint16(o, le);
    const u64 = (dv: DataView, o: number) => Number(dv.getBigUint64(o, le));
    const phoff = u64(v, 32), shoff = u64(v, 40), phentsize = u16(54), phnum = u16(56), shentsize = u16(58), shnum = u16(60);
    if (phnum === 0 || phentsize < 56) return "is an ELF file without program headers (not a shared library)";
    const phEnd = phoff + phnum * phentsize;
    if (phEnd > size) return `is truncated (${size} bytes; its program headers end at byte ${phEnd})`;
    if (shnum > 0 && shoff + shnum * shentsize > size) return `is truncated (${size} bytes; its section headers end at byte ${shoff + shnum * shentsize})`;
    const ph = new Uint8Array(phnum * phentsize);
    readSync(fd, ph, 0, ph.length, phoff);
    const pv = new DataView(ph.buffer);
    for (let i = 0; i < phnum; i++) {
      const at = i * phentsize;
      const type = pv.getUint32(at, le);
      if (type !== 1) continue; // PT_LOAD
      const end = u64(pv, at + 8) + u64(pv, at + 32); // p_offset + p_filesz
      if (end > size) return `is truncated (${size} bytes; a loadable segment ends at byte ${end})`;
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Throws {@linkcode LibraryNotFoundError} for a file dlopen cannot safely map ({@linkcode libraryFileProblem}). */
function checkLibraryFile(location: LibraryLocation, path: string): void {
  const problem = libraryFileProblem(path);
  if (problem !== null) {
    throw new LibraryNotFoundError(`wsp-ggml: ${path} ${problem}; it was not opened (a truncated library would crash the process when mapped). Reinstall or rebuild the libraries in ${location.dir}.`, [
      `${location.source}: ${path} ${problem}`,
    ]);
  }
}

/** The Deno permissions loading and using the library needs (files it writes need `write` too). */
const LOAD_PERMISSIONS = ["ffi", "read", "env"] as const;

/**
 * The {@linkcode PermissionError} for an error of the runtime that refused a
 * permission (Deno without `--allow-ffi`: `NotCapable`, "Requires ffi access
 * to …, run again with the --allow-ffi flag"), or undefined for any other error.
 */
export function permissionError(e: unknown, file?: string): PermissionError | undefined {
  if (e instanceof PermissionError) return e;
  const name = (e as Error | undefined)?.name ?? "";
  const message = String((e as Error | undefined)?.message ?? e);
  const kind = /Requires (\w+) access/.exec(message)?.[1];
  if (name !== "NotCapable" && name !== "PermissionDenied" && kind === undefined) return undefined;
  const flag = /--allow-[\w-]+/.exec(message)?.[0] ?? `--allow-${kind ?? "ffi"}`;
  const what = kind === "ffi" || flag === "--allow-ffi" ? "load the native library" : `get ${kind ?? "the"} access it needs`;
  // Every flag the library needs that is missing, not only the one this call hit.
  const missing = [...new Set([flag, ...ffi.deniedFlags(LOAD_PERMISSIONS)])];
  return new PermissionError(
    `wsp-ggml: the runtime did not allow wsp-ggml to ${what}${file ? ` (${file})` : ""}: ${message.replace(/\.$/, "")}. ` +
      `Run it with ${missing.join(" ")} (wsp-ggml needs --allow-ffi, --allow-read and --allow-env; or -A).`,
    flag,
  );
}

/**
 * The message of a failed dlopen of `file`; rethrows what is already ours (a
 * {@linkcode LibraryNotFoundError}) and a refused permission as a {@linkcode PermissionError}.
 */
function dlopenMessage(e: unknown, file: string | undefined): string {
  if (e instanceof LibraryNotFoundError) throw e;
  const denied = permissionError(e, file);
  if (denied) throw denied;
  return String((e as Error | undefined)?.message ?? e);
}

/**
 * Runs `open` of one library file; an error of the runtime's dlopen (a file
 * that is not a library, or not this library: "file too short", "invalid ELF
 * header", "no loadable segments") becomes a {@linkcode LibraryNotFoundError}
 * that names the file (koffi's and bun:ffi's messages do not), and a refused
 * permission a {@linkcode PermissionError}.
 */
function openNamed<T>(file: string, open: () => T): T {
  try {
    return open();
  } catch (e) {
    if (e instanceof CpuVariantError) throw e;
    const message = dlopenMessage(e, file);
    throw new LibraryNotFoundError(`wsp-ggml: ${file} could not be opened: ${message.includes(file) ? message : `${message} (${file})`}`, [`${file}: ${message}`]);
  }
}

/**
 * Runs `open`; a failure of the runtime's dlopen (a file that is not a
 * library, or not this library: "file too short", "invalid ELF header", a
 * missing symbol) becomes a {@linkcode LibraryNotFoundError} naming the place
 * and the file, a refused permission (Deno without `--allow-ffi`) a
 * {@linkcode PermissionError}.
 */
function opening<T>(location: LibraryLocation, open: () => T, file?: string): T {
  try {
    return open();
  } catch (e) {
    if (e instanceof CpuVariantError) throw e;
    const message = dlopenMessage(e, file);
    const where = location.source === "env" ? `${LIBRARY_PATH_ENV} (${location.dir})` : location.source === "option" ? `the path option (${location.dir})` : location.dir;
    const named = file === undefined || message.includes(file) ? message : `${file}: ${message}`;
    throw new LibraryNotFoundError(
      `wsp-ggml: the libraries in ${where} could not be opened: ${named}. Point it at a directory holding ${baseLibraryName()} and the ggml-cpu-<variant> libraries of this platform.`,
      [`${location.source}: ${file ?? location.base} could not be opened`],
    );
  }
}

/** The loaded library, loading it with the default search when needed. */
export function library(): Library {
  return loaded ?? loadLibrary();
}

/** The outcome of {@linkcode probeLibrary}. */
export interface ProbeVerdict {
  /** Whether the child loaded the library and computed a graph with it. */
  readonly ok: boolean;
  /** The CPU variant the child chose (its file-name key, e.g. `"haswell"`). */
  readonly variant?: string;
  /** Why it failed (exit code or signal, and the child's error output). */
  readonly detail?: string;
  /** Whether the verdict came from the cache. */
  readonly cached: boolean;
}

const probeVerdicts = new Map<string, ProbeVerdict>();

/** The directory of the probe verdict cache. */
export function probeCacheDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (env[CACHE_DIR_ENV]) return env[CACHE_DIR_ENV]!;
  if (process.platform === "win32" && env.LOCALAPPDATA) return join(env.LOCALAPPDATA, "wsp-ggml");
  if (process.platform === "darwin") return join(homedir(), "Library", "Caches", "wsp-ggml");
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "wsp-ggml");
}

/** The runtime executable and arguments that run `script` like this process runs its own code. */
function childCommand(script: string, args: string[]): [string, string[]] {
  if (ffi.runtime === "deno") return [process.execPath, ["run", "--allow-ffi", "--allow-read", "--allow-env", "--no-prompt", script, ...args]];
  if (ffi.runtime === "bun") return [process.execPath, [script, ...args]];
  // Keep loaders such as `--import tsx`; drop what would make the child a test runner or
  // debugger, and `node -e CODE`'s code (with its --input-type, which a script file refuses).
  const keep: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (/^(?:-[ep]|--eval|--print)$/.test(a)) i++;
    else if (!/^--(?:test|inspect|watch|eval|print|input-type)/.test(a)) keep.push(a);
  }
  return [process.execPath, [...keep, script, ...args]];
}

/**
 * Loads the library found at `location` in a child process of the same
 * runtime, lets it choose the CPU variant (or use `cpuVariant`) and compute a
 * small graph, and reports whether that worked. An illegal instruction, a
 * missing symbol or an incompatible C library kills only the child.
 *
 * Verdicts are kept per process and on disk in {@linkcode probeCacheDir}
 * (`WSP_GGML_CACHE_DIR`), keyed by the library files' paths, sizes and
 * modification times and by the runtime and its version, so a probe runs once
 * per installed binary. Throws {@linkcode LibraryNotFoundError} naming the
 * library (and, for a platform package, the package) when the probe fails.
 * When the probe cannot run (a compiled executable, no permission to spawn),
 * a warning is printed and the library is trusted.
 */
export function probeLibrary(location: LibraryLocation, cpuVariant?: string): ProbeVerdict {
  const here = fileURLToPath(import.meta.url);
  const script = join(dirname(here), "..", "ffi", `probe_child${here.endsWith(".ts") ? ".ts" : ".js"}`);
  const files = [location.base, ...cpuVariants(location.dir).values()];
  const identity = files.map((f) => {
    const st = statSync(f);
    return [f, st.size, st.mtimeMs];
  });
  const key = createHash("sha256")
    .update(JSON.stringify([identity, cpuVariant ?? null, ffi.runtime, process.version, process.arch]))
    .digest("hex").slice(0, 32);
  const remembered = probeVerdicts.get(key);
  if (remembered) return check(remembered);
  const cacheFile = join(probeCacheDir(), `probe-${key}.json`);
  try {
    const v = JSON.parse(readFileSync(cacheFile, "utf8")) as ProbeVerdict;
    probeVerdicts.set(key, { ...v, cached: true });
    return check({ ...v, cached: true });
  } catch { /* not cached yet */ }
  if (!existsSync(script)) {
    console.warn(`wsp-ggml: cannot probe ${location.base} (no probe script at ${script}, e.g. in a compiled executable); loading it directly`);
    return { ok: true, cached: false };
  }
  const [cmd, args] = childCommand(script, [location.base, cpuVariant ?? ""]);
  // Deno without --allow-run answers spawnSync with an empty object (no status, no error):
  // that is no verdict on the library, and must not be cached as one.
  if (!ffi.mayRun(cmd)) {
    throw new PermissionError(
      `wsp-ggml: the probe of ${location.base} runs it in a child process (${cmd}), which the runtime did not allow. Run it with --allow-run (or turn the probe off: ${PROBE_ENV}=0, or probe: false).`,
      "--allow-run",
    );
  }
  const env: Record<string, string | undefined> = { ...process.env, [PROBE_ENV]: "0", NODE_TEST_CONTEXT: undefined };
  delete env.NODE_TEST_CONTEXT;
  const r = spawnSync(cmd, args, { encoding: "utf8", env: env as Record<string, string>, timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status === undefined && r.signal === undefined && !r.error) {
    console.warn(`wsp-ggml: cannot probe ${location.base} (the child process did not start); loading it directly`);
    return { ok: true, cached: false };
  }
  if (r.error && (r.error as { code?: string }).code !== "ETIMEDOUT") {
    console.warn(`wsp-ggml: cannot probe ${location.base} (${r.error.message}); loading it directly`);
    return { ok: true, cached: false };
  }
  let verdict: ProbeVerdict;
  const line = (r.stdout ?? "").trim().split("\n").pop() ?? "";
  let answer: { ok?: boolean; variant?: string } = {};
  try {
    answer = JSON.parse(line);
  } catch { /* the child died before answering */ }
  if (r.status === 0 && answer.ok === true) {
    verdict = { ok: true, variant: answer.variant, cached: false };
  } else {
    const how = r.error ? "timed out" : r.signal ? `was killed by ${r.signal}` : `exited with code ${r.status}`;
    const err = (r.stderr ?? "").trim().split("\n").slice(-8).join("\n");
    verdict = { ok: false, detail: `the probe process ${how}${err ? `:\n${err}` : ""}`, cached: false };
  }
  probeVerdicts.set(key, verdict);
  try {
    mkdirSync(dirname(cacheFile), { recursive: true });
    writeFileSync(cacheFile, JSON.stringify(verdict));
  } catch { /* an unwritable cache only costs a probe next time */ }
  return check(verdict);

  function check(v: ProbeVerdict): ProbeVerdict {
    if (v.ok) return v;
    const advice = location.source === "package"
      ? `Reinstall ${platformPackage()} for this machine, or pass cpuVariant to choose another CPU variant.`
      : "Rebuild it for this machine, or pass cpuVariant to choose another CPU variant.";
    throw new LibraryNotFoundError(
      `wsp-ggml: ${location.base} cannot be used on this machine: ${v.detail}${v.cached ? ` (cached verdict; delete ${cacheFile} to probe again)` : ""}\n${advice}`,
      [`${location.source}: ${location.base} failed its probe`],
    );
  }
}
