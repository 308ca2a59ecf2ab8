/**
 * @ignore @internal What a backend buffer (type) is and can do that ggml
 * asserts on, asked by the core (Graph.reset) and the backend layer
 * (tensorMemset, the GPU checks) alike, kept here so that neither imports the other.
 *
 * @module
 */
import { layouts } from "../ffi/bindings.gen.ts";
import { ffi } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";

/** @ignore @internal Byte offset of `buffer` in `struct wsp_ggml_tensor`. */
export const TENSOR_BUFFER = layouts.wsp_ggml_tensor.fields.buffer.offset;

/**
 * @ignore @internal Whether the backend buffer `buf` implements
 * `memset_tensor`: every buffer a tensor can be in but an RPC server's
 * (ggml-rpc.cpp leaves it NULL and `wsp_ggml_backend_tensor_memset` asserts
 * it; its buffer types are named `RPC[host:port]`).
 */
export function hasMemset(buf: number): boolean {
  return !bufferTypeName(runtime().lib.symbols.wsp_ggml_backend_buffer_get_type(buf)).startsWith("RPC[");
}

/** @ignore @internal The name of the buffer type `buft` (a native pointer; `wsp_ggml_backend_buft_name`). */
export function bufferTypeName(buft: number): string {
  return ffi.readCString(runtime().lib.symbols.wsp_ggml_backend_buft_name(buft)) ?? "";
}
