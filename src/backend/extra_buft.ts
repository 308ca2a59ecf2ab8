/**
 * A device's extra buffer types (`wsp_ggml_backend_dev_get_extra_bufts`,
 * reached through `wsp_ggml_backend_reg_get_proc_address`): on the CPU,
 * `CPU_REPACK`, whose buffers store some quantized weights (q4_0, q4_K,
 * iq4_nl, q2_K, depending on the processor) re-laid-out in interleaved
 * blocks at load, for matrix-multiplication kernels that read them faster.
 *
 * Such a buffer is not an ordinary one: a tensor in it can only be written
 * whole ({@linkcode tensorSet} of all its bytes, which repacks them), never
 * read back, and only the ops its buffer type supports (a 2-D matmul with
 * f32 activations) can use it. {@linkcode extraBufferTypeFor} tells which
 * weights a buffer type takes; {@linkcode GgufFile.loadTensorsToBackend}'s
 * `bufferTypes` option loads them there.
 *
 * @module
 */
import { INTERNAL } from "../core/brand.ts";
import { ArgumentError } from "../core/errors.ts";
import { cString } from "../ffi/mod.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import { Context, tensorOverhead } from "../core/context.ts";
import { type Device, deviceByType } from "./backend.ts";
import { BackendDevType, layouts, Type } from "../ffi/bindings.gen.ts";
import { BufferType } from "./buffer.ts";
import { extraBufts } from "../core/extra_registry.ts";

const sym = () => runtime().lib.symbols;

/** Extra buffer types by device pointer (the list is fixed for a process). */
const cache = new Map<number, BufferType[]>();

/**
 * The extra buffer types of `device` (the CPU's by default): `CPU_REPACK`
 * on a CPU whose build has repacked kernels for it, else none. Empty for a
 * device whose backend has no such entry point.
 */
export function extraBufferTypes(device?: Device): BufferType[] {
  const dev = device ?? deviceByType(BackendDevType.CPU);
  if (!dev) return [];
  const hit = cache.get(dev.pointer);
  if (hit) return [...hit];
  const name = cString("wsp_ggml_backend_dev_get_extra_bufts");
  const fn = sym().wsp_ggml_backend_reg_get_proc_address(dev.reg.pointer, ffi.addressOf(name));
  keepAlive(name);
  const out: BufferType[] = [];
  if (fn !== 0) {
    // A NULL-terminated array owned by the backend library.
    const list = ffi.callPointer(fn, { args: ["pointer"], result: "pointer" }, [dev.pointer]) as number;
    for (let i = 0; list !== 0 && i < 64; i++) {
      const p = ffi.readPointer(list, i * 8);
      if (p === 0) break;
      out.push(new BufferType(p, INTERNAL));
      extraBufts.add(p);
    }
  }
  cache.set(dev.pointer, out);
  return [...out];
}

/**
 * The first of `types` (extra buffer types of `device`) that takes a weight
 * of `type` and `shape` as the first operand of a matmul with f32
 * activations, or undefined. It asks the device, as the scheduler would:
 * the weight is placed in an empty buffer of each type and
 * `wsp_ggml_backend_dev_supports_op` is asked about `mulMat(weight, x)`, so
 * the answer is the buffer type's own gate (on the CPU, repack's: the
 * quantization type, the processor's features, rows a multiple of 8, 2-D).
 */
export function extraBufferTypeFor(device: Device, types: readonly BufferType[], type: Type, shape: readonly number[]): BufferType | undefined {
  if (!Array.isArray(shape) || shape.length === 0 || shape.length > 4) throw new ArgumentError("extraBufferTypeFor: shape must have 1 to 4 dimensions");
  if (types.length === 0) return undefined;
  const ctx = new Context({ memSize: 4 * 1024 + 3 * tensorOverhead(), noAlloc: true });
  try {
    const w = ctx.newTensor(type, [...shape]);
    const x = ctx.newTensor(Type.F32, [shape[0], 1, ...shape.slice(2)]);
    const op = ctx.mulMat(w, x);
    const field = layouts.wsp_ggml_tensor.fields.buffer.offset;
    const slot = new BigUint64Array(ffi.view(w._ptr + field, 8));
    for (const t of types) {
      const empty = sym().wsp_ggml_backend_buft_alloc_buffer(t.pointer, 0);
      if (empty === 0) continue;
      try {
        slot[0] = BigInt(empty);
        if (sym().wsp_ggml_backend_dev_supports_op(device.pointer, op._ptr)) return t;
      } finally {
        slot[0] = 0n;
        sym().wsp_ggml_backend_buffer_free(empty);
      }
    }
    return undefined;
  } finally {
    ctx.free();
  }
}
