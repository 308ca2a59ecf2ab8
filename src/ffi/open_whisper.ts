/**
 * Opens libwsp-whisper (whisper.cpp and the job shim of native/whisper/) with its generated
 * table. Kept apart from `open.ts` so that only a whisper user reads the whisper table; finding
 * the file is the loader's job (`src/runtime/whisper.ts`).
 *
 * @module
 */
import { whisperFunctions } from "./whisper.gen.ts";
import { fastProperties } from "./common.ts";
import type { FfiAdapter, NativeLibrary } from "./types.ts";

/** The generated whisper function table. */
export type WhisperTable = typeof whisperFunctions;

/**
 * The opened whisper library: the raw FFI layer (its symbols are the generated table's).
 *
 * @ignore
 */
export interface WspWhisper {
  /** One callable per table entry; see `NativeLibrary.symbols`. */
  readonly symbols: NativeLibrary<WhisperTable>["symbols"];
  /** The same calls with pointers as handles; see `NativeLibrary.handles`. */
  readonly handles: NativeLibrary<WhisperTable>["handles"];
  /**
   * Non-blocking variants of the long calls (model loading, `whisper_full*`,
   * `wsp_whisper_job_run`): Deno `nonblocking`, koffi `.async`, Bun's call worker.
   */
  readonly async: NativeLibrary<WhisperTable>["async"];
  /** Whether `name` is bound to a native symbol. */
  has(name: keyof WhisperTable): boolean;
  /** The library file opened. */
  readonly path: string;
  /** Unloads the library. */
  close(): void;
}

/** Opens the whisper library at `path` (libwsp-ggml must be open already: it links against it). */
export function openWhisper(ffi: FfiAdapter, path: string): WspWhisper {
  const lib = ffi.open(path, whisperFunctions);
  return {
    // Looked up on every call, like the ggml tables: keep them out of V8's dictionary mode.
    symbols: fastProperties(Object.assign({}, lib.symbols)),
    handles: fastProperties(Object.assign({}, lib.handles)),
    async: fastProperties(Object.assign({}, lib.async)),
    has: (name) => lib.has(name),
    path,
    close: () => lib.close(),
  };
}
