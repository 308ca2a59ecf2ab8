/**
 * The `wsp-ggml/whisper` entry for Bun (bun:ffi): the `"bun"` condition of
 * package.json's `exports`. Like the main entry, it installs the runtime's
 * FFI adapter first, so importing only `wsp-ggml/whisper` works.
 *
 * @module
 */
import "../ffi/provide_bun.ts";
export * from "./mod.ts";
