/**
 * What the Metal backend (ggml-metal) accepts in `supports_op` but aborts on
 * when it encodes the node, checked before a graph reaches it
 * (docs/asserts.map.d/metal.json maps each of its asserts). Metal's
 * `wsp_ggml_metal_device_supports_op` answers by op and mostly by the type
 * of the first source or the result; the encoders (`wsp_ggml_metal_op_*`)
 * and the pipeline getters they call (`wsp_ggml_metal_library_get_pipeline_*`)
 * then assert on the other operands' types, on layouts and on a few sizes.
 *
 * Metal builds only with `-Dmacos-sdk` and runs only on a Mac: the predicate
 * reads nothing but the node (its op, op parameters, types, shapes and
 * strides), so it is tested on CPU tensors.
 *
 * @module
 */
import { BackendDevType, Op, Type } from "../ffi/bindings.gen.ts";
import { GgmlError, UnsupportedOpError, UseAfterFreeError } from "../core/errors.ts";
import { ffi } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import type { Tensor } from "../core/tensor.ts";
import { dense0, srcAt } from "../core/checks.ts";
import { bufferTypeName } from "../core/buffer_caps.ts";
import type { Graph } from "../core/graph.ts";
import type { Backend, Device } from "./backend.ts";

/**
 * `maxTotalThreadsPerThreadgroup` of a Metal pipeline: 1024 on every GPU a
 * Mac has (Apple silicon, AMD, Intel). The encoders read the pipeline's own
 * figure, which the driver may set lower for a kernel that needs many
 * registers; the kernels checked against it here (im2col, the expert map)
 * are small, so 1024 is taken as theirs.
 */
const MAX_THREADS = 1024;
/**
 * `maxThreadgroupMemoryLength` of the GPUs that take Metal's matrix-matrix
 * expert path (`has_simdgroup_mm`, MTLGPUFamilyApple7 and later): 32 KiB.
 */
const MAX_THREADGROUP_MEMORY = 32 * 1024;

/**
 * The weight types `wsp_ggml_metal_library_get_pipeline_mul_mv` and
 * `_mul_mv_id` have a matrix-vector kernel for (any other aborts "not
 * implemented"; the matrix-matrix kernels are a subset, a missing one a nil
 * pipeline), with `nsg * nr0` (simdgroups times rows per simdgroup: the
 * fewest elements per row the quantized expert kernels assert, ggml-metal-impl.h's
 * N_SG_* and N_R0_*); 0 for the float types, which that assert skips.
 */
const MUL_MV: ReadonlyMap<number, number> = new Map([
  [Type.F32, 0], [Type.F16, 0], [Type.BF16, 0],
  [Type.Q4_0, 8], [Type.Q4_1, 8], [Type.Q5_0, 8], [Type.Q5_1, 8], [Type.Q8_0, 8], [Type.MXFP4, 4],
  [Type.Q2_K, 8], [Type.Q3_K, 4], [Type.Q4_K, 4], [Type.Q5_K, 4], [Type.Q6_K, 4],
  [Type.IQ2_XXS, 8], [Type.IQ2_XS, 8], [Type.IQ3_XXS, 8], [Type.IQ3_S, 8], [Type.IQ2_S, 8], [Type.IQ1_S, 8], [Type.IQ1_M, 8],
  [Type.IQ4_NL, 4], [Type.IQ4_XS, 4],
]);

/** The experts-used counts ggml-metal.metal instantiates `kernel_mul_mm_id_map0` for. */
const MAP0_NE20: ReadonlySet<number> = new Set([1, 2, 4, 6, 8, 10, 16]);

/** `wsp_ggml_is_contiguous_rows`: one block per row, or dense elements. */
const contiguousRows = (t: Tensor) => t._ne(0) === t.traits.blckSize || dense0(t);
const nelements = (t: Tensor) => t._ne(0) * t._ne(1) * t._ne(2) * t._ne(3);

const notF32 = (what: string, t: Tensor) => `${what} ${t.describe()} must be f32 (the Metal kernel reads no other type)`;
const notContiguous = (what: string, t: Tensor) => `${what} ${t.describe()} must be contiguous on Metal (use ctx.cont())`;

/**
 * Why ggml-metal would abort (or, for a missing kernel, crash) on `node`
 * although its `supports_op` accepts it, or null. Each condition is an
 * assert of the encoder or pipeline getter named beside it; conditions that
 * depend on the GPU use the figures of the smallest Mac GPU that takes the
 * path (see `MAX_THREADS`, `MAX_THREADGROUP_MEMORY`).
 */
export function metalRefusal(node: Tensor): string | null {
  const op = node.op;
  if (op === Op.NONE || op === Op.VIEW || op === Op.RESHAPE || op === Op.PERMUTE || op === Op.TRANSPOSE) return null;
  // wsp_ggml_metal_op_encode_impl skips an empty node before anything else
  for (let i = 0; i < 4; i++) if (node._ne(i) === 0) return null;
  const s0 = srcAt(node, 0)!;
  switch (op) {
    case Op.ADD: case Op.SUB: case Op.MUL: case Op.DIV: {
      // wsp_ggml_metal_op_bin
      const s1 = srcAt(node, 1)!;
      if (s1.type !== Type.F32) return notF32("b", s1);
      if (!contiguousRows(s0)) return `a ${s0.describe()} must have dense rows on Metal (nb0 = the type's size)`;
      if (!contiguousRows(s1)) return `b ${s1.describe()} must have dense rows on Metal (nb0 = the type's size)`;
      // the row-broadcast kernel, taken for a contiguous one-row b when ne00 and ne10 are multiples of 4, asserts a contiguous a
      if (nelements(s1) === s1._ne(0) && s1._contiguousN(0) && s0._ne(0) % 4 === 0 && s1._ne(0) % 4 === 0 && !s0._contiguousN(0)) {
        return `a ${s0.describe()} must be contiguous on Metal when b ${s1.describe()} is one row (use ctx.cont())`;
      }
      return null;
    }
    case Op.ADD_ID: {
      // wsp_ggml_metal_op_add_id
      const s1 = srcAt(node, 1)!;
      if (s1.type !== Type.F32) return notF32("b", s1);
      if (!contiguousRows(s0)) return `a ${s0.describe()} must have dense rows on Metal (nb0 = the type's size)`;
      return null;
    }
    case Op.ACC: {
      // wsp_ggml_metal_op_acc
      const s1 = srcAt(node, 1)!;
      return s1._contiguousN(0) ? null : notContiguous("b", s1);
    }
    case Op.SCALE: case Op.CLAMP: case Op.LEAKY_RELU: case Op.SQR: case Op.SQRT: case Op.SIN: case Op.COS: case Op.LOG: case Op.UNARY:
      // wsp_ggml_metal_library_get_pipeline_unary (supports_op already asks it of all but scale, clamp and leaky_relu)
      return s0._contiguousN(0) ? null : notContiguous("the operand", s0);
    case Op.SUM_ROWS: case Op.MEAN:
      // wsp_ggml_metal_library_get_pipeline_sum_rows (supports_op's is_contiguous_rows also lets a column with any nb0 through)
      return dense0(s0) ? null : `the operand ${s0.describe()} must have dense elements on Metal (nb0 = the type's size; use ctx.cont())`;
    case Op.ARGMAX:
      // wsp_ggml_metal_library_get_pipeline_argmax
      if (s0.type !== Type.F32) return notF32("the operand", s0);
      if (!s0._contiguousN(1) || !dense0(s0)) return `the operand ${s0.describe()} must have dense elements and rows on Metal (use ctx.cont())`;
      return null;
    case Op.GROUP_NORM: case Op.POOL_2D:
      // wsp_ggml_metal_library_get_pipeline_group_norm, _pool_2d
      return s0._contiguousN(0) ? null : notContiguous("the operand", s0);
    case Op.SSM_CONV: {
      // wsp_ggml_metal_library_get_pipeline_ssm_conv
      const s1 = srcAt(node, 1)!;
      if (s0.type !== Type.F32) return notF32("sx", s0);
      if (s1.type !== Type.F32) return notF32("c", s1);
      if (!s0._contiguousN(0)) return notContiguous("sx", s0);
      if (!s1._contiguousN(0)) return notContiguous("c", s1);
      return null;
    }
    case Op.SSM_SCAN: {
      // wsp_ggml_metal_op_ssm_scan: the per-state decay kernel (A->ne[0] != 1, Mamba-1) is written for d_inner = s->ne[1] = 1
      const a = srcAt(node, 3)!;
      if (a._ne(0) !== 1 && s0._ne(1) !== 1) return `A ${a.describe()} with a decay per state needs a head dimension of 1 on Metal, not s ${s0.describe()}`;
      return null;
    }
    case Op.RWKV_WKV6: case Op.RWKV_WKV7: {
      // wsp_ggml_metal_library_get_pipeline_rwkv: the state is src[5] (wkv6) or src[6] (wkv7); head size C / H is 64
      const state = srcAt(node, op === Op.RWKV_WKV6 ? 5 : 6)!;
      if (state.type !== Type.F32) return notF32("the state", state);
      const C = node._ne(0), H = s0._ne(1);
      if (Math.trunc(C / H) !== 64) return `the Metal RWKV kernels take a head size of 64, not ${C} / ${H} heads`;
      return null;
    }
    case Op.CONV_TRANSPOSE_1D: {
      // wsp_ggml_metal_library_get_pipeline_conv_transpose_1d
      const s1 = srcAt(node, 1)!;
      if (!s0._contiguousN(0)) return notContiguous("the kernel", s0);
      if (!s1._contiguousN(0)) return notContiguous("the input", s1);
      if (s0.type !== Type.F16 && s0.type !== Type.F32) return `the kernel ${s0.describe()} must be f16 or f32 on Metal`;
      if (s1.type !== Type.F32) return notF32("the input", s1);
      return null;
    }
    case Op.MUL_MAT:
      // wsp_ggml_metal_library_get_pipeline_mul_mv (the matrix-matrix path has no kernel for these either)
      return MUL_MV.has(s0.type) ? null : `the Metal backend has no matrix kernel for a ${s0.describe()}`;
    case Op.MUL_MAT_ID: {
      // wsp_ggml_metal_op_mul_mat_id
      const s1 = srcAt(node, 1)!, ids = srcAt(node, 2)!;
      if (s1._transposed()) return `b ${s1.describe()} must not be transposed on Metal (use ctx.cont())`;
      const minNe0 = MUL_MV.get(s0.type);
      if (minNe0 === undefined) return `the Metal backend has no expert kernel for ${s0.describe()}`; // wsp_ggml_metal_library_get_pipeline_mul_mv_id
      const ne00 = s0._ne(0), ne02 = s0._ne(2), ne20 = ids._ne(0);
      // the matrix-matrix path (ne00 >= 64, 32 tokens or more; taken on GPUs with simdgroup matrices, Apple7 and later)
      // maps tokens to experts in one threadgroup: a thread per expert, ne02 * ne20 16-bit entries of threadgroup memory
      if (ne00 >= 64 && ids._ne(1) >= 32) {
        if (ne02 > MAX_THREADS) return `Metal maps tokens to at most ${MAX_THREADS} experts in one threadgroup, not ${ne02} (${s0.describe()})`;
        if (ne02 * ne20 * 2 > MAX_THREADGROUP_MEMORY) return `Metal's expert map of ${ne02} experts × ${ne20} used takes ${ne02 * ne20 * 2} bytes, more than the ${MAX_THREADGROUP_MEMORY} bytes of threadgroup memory`;
        // wsp_ggml_metal_library_get_pipeline_mul_mm_id_map0: a kernel per experts-used count; another is a nil pipeline (a crash)
        if (!MAP0_NE20.has(ne20)) return `Metal has no expert-map kernel for ${ne20} experts used per token (only ${[...MAP0_NE20].join(", ")}) when there are 32 tokens or more`;
      }
      // the matrix-vector path: a quantized row of fewer elements than its simdgroups × rows (only a permuted view has one)
      if (s0.traits.quantized && ne00 < minNe0) return `quantized experts ${s0.describe()} need rows of at least ${minNe0} elements on Metal`;
      return null;
    }
    case Op.CPY: case Op.CONT: case Op.DUP:
      // wsp_ggml_metal_op_cpy: a quantized source's rows hold whole blocks (only a permuted or transposed view has not)
      if (s0.traits.quantized && s0._ne(0) % s0.traits.blckSize !== 0) return `the quantized source ${s0.describe()} must have rows of whole ${s0.traits.blckSize}-element blocks on Metal (ne0 = ${s0._ne(0)})`;
      return null;
    case Op.FLASH_ATTN_EXT: {
      // wsp_ggml_metal_op_flash_attn_ext
      const k = srcAt(node, 1)!, v = srcAt(node, 2)!, mask = srcAt(node, 3);
      if (k._ne(1) % 32 !== 0) return `the keys ${k.describe()} must number a multiple of 32 (ne1) on Metal`;
      if (s0.type !== Type.F32) return notF32("the queries", s0);
      if (k._ne(1) !== v._ne(1)) return `the values ${v.describe()} must have as many rows as the keys ${k.describe()} on Metal`;
      if (k._ne(2) !== v._ne(2)) return `the values ${v.describe()} must have as many heads as the keys ${k.describe()} on Metal`;
      if (mask !== null && mask.type !== Type.F16) return `the mask ${mask.describe()} must be f16 on Metal`;
      if (s0._ne(1) >= 65536) return `Metal's flash attention takes fewer than 65536 queries, not ${s0.describe()}`;
      // the vector kernel (fewer than 20 queries, a head size that is a multiple of 32) indexes result rows in 32 bits
      if (s0._ne(1) < 20 && s0._ne(0) % 32 === 0 && node._ne(1) * node._ne(2) * node._ne(3) > 2 ** 31) return `Metal's flash attention takes at most 2^31 result rows, not ${node.describe()}`;
      return null;
    }
    case Op.IM2COL: {
      // wsp_ggml_metal_op_im2col: a thread per kernel tap (KH * KW) in one threadgroup
      const taps = (node.opParam(6) === 1 ? s0._ne(1) : 1) * s0._ne(0);
      if (taps > MAX_THREADS) return `Metal's im2col takes a kernel of at most ${MAX_THREADS} taps, not ${taps} (${s0.describe()})`;
      return null;
    }
  }
  return null;
}

/** Whether `device` is ggml-metal's (it belongs to the registry entry "Metal"). */
export function isMetalDevice(device: Device): boolean {
  return device.type !== BackendDevType.CPU && device.reg.name === "Metal";
}

/**
 * For `supportsOp`: false when `device` is a Metal device that would abort on
 * `node` ({@linkcode metalRefusal}); true for any other device.
 */
export function metalRuns(device: Device, node: Tensor): boolean {
  if (!isMetalDevice(device)) return true;
  try {
    return metalRefusal(node) === null;
  } catch (e) {
    if (e instanceof UseAfterFreeError) return true; // a source the scheduler replaced by its own copy
    throw e;
  }
}

/**
 * Before `backend` computes `graph` (`Backend.graphCompute` / `graphComputeAsync`),
 * when it is a Metal backend: every node passes {@linkcode metalRefusal}.
 *
 * @throws {UnsupportedOpError} for a node ggml-metal would abort on
 */
export function checkMetalGraph(what: string, backend: Backend, graph: Graph): void {
  if (!isMetalDevice(backend.device)) return;
  for (const n of graph.nodes()) {
    let why: string | null;
    try {
      why = metalRefusal(n);
    } catch (e) {
      if (e instanceof UseAfterFreeError) continue; // a source in no live context: the preflight before this one refused it
      throw e;
    }
    if (why !== null) throw new UnsupportedOpError(`${what}: ${backend.name} cannot compute ${n.describe()}: ${why}`);
  }
}

/** ggml-metal's buffer type for device memory the host cannot map. */
export const METAL_PRIVATE = "Metal_Private";

/**
 * Why ggml-metal cannot move data in or out of the buffers of a Metal device
 * whose default buffer type is {@linkcode METAL_PRIVATE} (a GPU without
 * unified memory, or `WSP_GGML_METAL_SHARED_BUFFERS_DISABLE` set), or null
 * when it can. Such a buffer's `set_tensor` / `get_tensor` wrap the
 * caller's memory with `newBufferWithBytesNoCopy`, which Metal refuses for
 * memory that is not page-aligned, and a discrete GPU for host memory at
 * all (llama.cpp issue 26949), and then assert the result: every upload of
 * weights or inputs, the scheduler's own copies included, would abort. Its
 * buffers from host memory (`Metal_Mapped`) are made private there too.
 */
export function metalPrivateRefusal(device: string, defaultBufferType: string): string | null {
  if (defaultBufferType !== METAL_PRIVATE) return null;
  return `the Metal device ${device} keeps its buffers in memory the host cannot map (${METAL_PRIVATE}: a GPU without unified memory, or WSP_GGML_METAL_SHARED_BUFFERS_DISABLE set), and ggml-metal aborts on every copy into or out of such a buffer; compute on the CPU (or unset WSP_GGML_METAL_SHARED_BUFFERS_DISABLE)`;
}

const sym = () => runtime().lib.symbols;

/**
 * Before a backend is made on `device` (`Device.init`, `Backend.initByName`, …):
 * a Metal device with private buffers ({@linkcode metalPrivateRefusal}) is refused.
 *
 * @throws {GgmlError} (`UNSUPPORTED`) for such a device
 */
export function checkMetalDevice(what: string, device: Device): void {
  const why = metalDeviceRefusal(device);
  if (why !== null) throw new GgmlError("UNSUPPORTED", `${what}: ${why}`);
}

/** {@linkcode metalPrivateRefusal} of `device` when it is a Metal device; null for any other. */
export function metalDeviceRefusal(device: Device): string | null {
  return isMetalDevice(device) ? metalPrivateRefusal(device.name, device.bufferType.name) : null;
}

/**
 * Before a buffer of the buffer type `buft` (a native pointer) is allocated
 * (`BufferType.allocBuffer`, `allocCtxTensors`, `Gallocr`): a Metal buffer
 * type of a device with private buffers ({@linkcode metalPrivateRefusal}) is
 * refused. Only ggml-metal names its buffer types `Metal…`.
 *
 * @throws {GgmlError} (`UNSUPPORTED`) for such a buffer type
 */
export function checkMetalBufferType(what: string, buft: number): void {
  const name = bufferTypeName(buft);
  if (!name.startsWith("Metal")) return;
  const dev = sym().wsp_ggml_backend_buft_get_device(buft);
  const devName = dev === 0 ? "" : ffi.readCString(sym().wsp_ggml_backend_dev_name(dev)) ?? "";
  const why = metalPrivateRefusal(devName, name === METAL_PRIVATE || dev === 0 ? name : bufferTypeName(sym().wsp_ggml_backend_dev_buffer_type(dev)));
  if (why !== null) throw new GgmlError("UNSUPPORTED", `${what}: ${why}`);
}

/**
 * For a node the scheduler placed on a Metal backend, or null when it may
 * run there: a MUL_MAT_ID whose experts are in a host buffer of weights
 * (`expertsInHostWeights`) makes the scheduler copy only the experts the ids
 * select, and it reads the ids into its own `std::vector` with the Metal
 * backend's `get_tensor_async`, which wraps that vector's memory (not
 * page-aligned) with `newBufferWithBytesNoCopy` and asserts the result, on
 * every Metal device. Refused whether or not the node opens its split (the
 * scheduler copies experts only for a split's first node): the split is
 * ggml's to draw, and keeping the experts on the device avoids the copy.
 */
export function metalExpertCopyRefusal(node: Tensor, expertsInHostWeights: boolean): string | null {
  if (node.op !== Op.MUL_MAT_ID || !expertsInHostWeights) return null;
  return `the experts ${srcAt(node, 0)!.describe()} are in a host weights buffer, and ggml's scheduler reads the expert ids for its copy through Metal into memory Metal cannot map; allocate the experts in the Metal device's buffer, or run the node on the CPU`;
}
