/**
 * GGUF files: {@linkcode readGguf} (metadata, KVs, tensor infos, tensor data
 * into a context) and {@linkcode GgufWriter}. Every corrupt, truncated or
 * hostile file gives a {@linkcode GgufError}; see `scan.ts` for what is
 * checked before ggml reads a file, and docs/asserts.md for the guarded asserts.
 *
 * @module
 */
export { DEFAULT_GGUF_LIMITS, type GgufLimits } from "./scan.ts";
export { type GgufArray, type GgufEntry, GgufFile, type GgufTensorInfo, type GgufValue, readGguf } from "./reader.ts";
export { TensorMap } from "./tensor_map.ts";
export { GgufWriter } from "./writer.ts";
