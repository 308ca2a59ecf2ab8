/**
 * libwsp-whisper, opened on first use: a program that never asks for a whisper
 * symbol never maps it (nor reads its table). It lies beside the base library
 * (zig-out/lib, a platform package's lib/, the folder of `WSP_GGML_LIBRARY_PATH`)
 * and links against it, so ggml is loaded first: one backend registry, with the
 * CPU variant (and Vulkan) the loader registered.
 *
 * @example
 * ```ts
 * import { whisperSymbols } from "./whisper.ts";
 * const w = whisperSymbols();
 * console.log(w.whisper_lang_id(ffi.addressOf(cString("en")))); // 0
 * ```
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { openWhisper, type WspWhisper } from "../ffi/open_whisper.ts";
import { ArgumentError, LibraryNotFoundError } from "../core/errors.ts";
import { ffi, library, libraryFileProblem, permissionError } from "./loader.ts";

/** The file name of the whisper library on this platform. */
export function whisperLibraryName(platform: string = process.platform): string {
  return platform === "win32" ? "wsp-whisper.dll" : platform === "darwin" ? "libwsp-whisper.dylib" : "libwsp-whisper.so";
}

/** Options of {@linkcode loadWhisper}. */
export interface WhisperLoadOptions {
  /** The whisper library file, or a folder holding it (default: the base library's folder). */
  readonly path?: string;
}

let loaded: WspWhisper | undefined;

/**
 * Opens libwsp-whisper (once; later calls return the same library), after the
 * base library and its CPU backend ({@linkcode library}).
 *
 * @throws {LibraryNotFoundError} naming the file when it is missing, truncated or cannot be opened
 * @throws {ArgumentError} for a `path` other than the one opened already
 */
export function loadWhisper(options: WhisperLoadOptions = {}): WspWhisper {
  if (loaded && options.path === undefined) return loaded;
  const base = library();
  let path = options.path ?? join(base.location.dir, whisperLibraryName());
  try {
    if (options.path !== undefined && existsSync(path) && !/\.(so|dylib|dll)$/.test(path)) path = join(path, whisperLibraryName());
    if (!existsSync(path)) {
      throw new LibraryNotFoundError(
        `wsp-ggml: the whisper library ${path} does not exist; build it with \`npm run build\` (zig build) or install a platform package that has it`,
        [`${path}: missing`],
      );
    }
    // A truncated file would crash the process when mapped: refuse it as the loader does.
    const problem = libraryFileProblem(path);
    if (problem !== null) throw new LibraryNotFoundError(`wsp-ggml: ${path} ${problem}; it was not opened`, [`${path}: ${problem}`]);
  } catch (e) {
    throw permissionError(e) ?? e;
  }
  if (loaded) {
    if (resolve(path) !== resolve(loaded.path)) {
      throw new ArgumentError(`loadWhisper: the whisper library is open already, from ${loaded.path}; a process opens one (call loadWhisper before the first whisper call to choose it)`);
    }
    return loaded;
  }
  try {
    loaded = openWhisper(ffi, path);
  } catch (e) {
    const denied = permissionError(e, path);
    if (denied) throw denied;
    const message = String((e as Error | undefined)?.message ?? e);
    throw new LibraryNotFoundError(`wsp-ggml: ${path} could not be opened: ${message}`, [`${path}: ${message}`]);
  }
  return loaded;
}

/** The opened whisper library, opening it on first use. */
export function whisperLibrary(): WspWhisper {
  return loaded ?? loadWhisper();
}

/**
 * whisper.h's and job.h's functions, keyed by C name (`whisper_full`,
 * `whisper_init_from_file_with_params`, `wsp_whisper_job_new`, …), as
 * `library().symbols` has ggml's: pointers are numbers, records by value are
 * passed by pointer to a C shim (and a record result is written through a
 * trailing pointer). Opens the library on first use.
 */
export function whisperSymbols(): WspWhisper["symbols"] {
  return whisperLibrary().symbols;
}

/** The same calls with pointers as handles (see `NativeLibrary.handles`). */
export function whisperHandles(): WspWhisper["handles"] {
  return whisperLibrary().handles;
}

/**
 * Non-blocking variants of the long calls: `whisper_init_from_file_with_params`,
 * `whisper_init_from_file_with_params_no_state`, `whisper_full`,
 * `whisper_full_with_state`, `whisper_full_parallel`, `wsp_whisper_job_run`.
 */
export function whisperAsync(): WspWhisper["async"] {
  return whisperLibrary().async;
}
