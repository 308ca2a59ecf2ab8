/**
 * The `wsp-ggml/whisper` entry for Node.js (koffi): the `"node"` condition of
 * package.json's `exports`. Like the main entry, it installs the runtime's
 * FFI adapter first, so importing only `wsp-ggml/whisper` works.
 *
 * @module
 */
import "../ffi/provide_node.ts";
export * from "./mod.ts";
