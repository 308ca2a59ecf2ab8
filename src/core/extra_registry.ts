/**
 * @ignore @internal The extra buffer types handed out by `extraBufferTypes`
 * (src/backend/extra_buft.ts), by native pointer. A tensor in a buffer of one
 * (CPU_REPACK) holds re-laid-out data: it is written whole, never read back,
 * and only its buffer type's matmul computes with it. Kept apart from
 * extra_buft.ts so that the op checks can ask without an import cycle.
 *
 * @module
 */
import { layouts } from "../ffi/bindings.gen.ts";
import { ffi } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";

/** @ignore @internal */
export const extraBufts = new Set<number>();

const BUFFER = layouts.wsp_ggml_tensor.fields.buffer.offset;

/** @ignore @internal The extra buffer type (a pointer) holding the tensor at `t` (its view source's), or 0. */
export function extraBuftOf(t: number): number {
  if (extraBufts.size === 0) return 0;
  const src = ffi.readPointer(t, layouts.wsp_ggml_tensor.fields.view_src.offset);
  const buf = ffi.readPointer(src !== 0 ? src : t, BUFFER);
  if (buf === 0) return 0;
  const buft = runtime().lib.symbols.wsp_ggml_backend_buffer_get_type(buf);
  return extraBufts.has(buft) ? buft : 0;
}
