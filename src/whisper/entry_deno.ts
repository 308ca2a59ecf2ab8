/**
 * The `wsp-ggml/whisper` entry for Deno (Deno.dlopen): the `"deno"` condition of
 * package.json's `exports`. Like the main entry, it installs the runtime's
 * FFI adapter first, so importing only `wsp-ggml/whisper` works.
 *
 * @module
 */
import "../ffi/provide_deno.ts";
export * from "./mod.ts";
