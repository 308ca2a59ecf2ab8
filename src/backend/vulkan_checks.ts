/**
 * What the Vulkan backend (ggml-vulkan) accepts in `supports_op` but aborts on
 * when it computes, checked before a graph reaches it (docs/asserts.map.d/vulkan.json
 * maps each of its asserts). ggml-vulkan's `supports_op` answers by op and, for
 * some ops, by type; the kernels it then picks (`wsp_ggml_vk_op_get_pipeline`,
 * the matrix multiplication paths) take fewer types and layouts, and a missing
 * pipeline or an unexpected layout is `WSP_GGML_ABORT` / `WSP_GGML_ASSERT`.
 *
 * @module
 */
import { BackendDevType, Op, ScaleMode, Type } from "../ffi/bindings.gen.ts";
import { ArgumentError, BoundsError, NotAllocatedError, UnsupportedOpError, UseAfterFreeError } from "../core/errors.ts";
import { ffi } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import type { Graph } from "../core/graph.ts";
import type { Tensor } from "../core/tensor.ts";
import { dense0, srcAt } from "../core/checks.ts";
import type { Backend, Device } from "./backend.ts";
import { bufferOf, graphTensors } from "./backend.ts";

const sym = () => runtime().lib.symbols;
/** `UINT32_MAX`: ggml-vulkan's push constants hold element counts as 32-bit integers. */
const MAX_ELEMENTS = 0xffffffff;
/** `WSP_GGML_SCALE_FLAG_ALIGN_CORNERS` (ggml.h). */
const ALIGN_CORNERS = 1 << 8;

/** Whether `device` is one of ggml-vulkan's (it belongs to the registry entry "Vulkan"). */
const isVulkanDevice = (device: Device) => device.type !== BackendDevType.CPU && device.reg.name === "Vulkan";

/** Whether `backend` is one of ggml-vulkan's. */
export function isVulkan(backend: Backend): boolean {
  return isVulkanDevice(backend.device);
}

/**
 * For `supportsOp` (Backend's, Device's; the scheduler asks it of every node it placed): false when
 * `device` is a Vulkan device that would abort on `node` ({@linkcode vulkanRefusal}). The offsets
 * count only for operands already in one of the device's buffers (a view at a misaligned offset
 * there); the scheduler copies the others into fresh, aligned tensors.
 */
export function vulkanRuns(device: Device, node: Tensor): boolean {
  if (!isVulkanDevice(device)) return true;
  const s = sym(), dev = device.pointer;
  const alignment = Number(s.wsp_ggml_backend_buft_get_alignment(s.wsp_ggml_backend_dev_buffer_type(dev)));
  const offset = (t: Tensor) => {
    const buf = bufferOf(t);
    if (buf === 0 || t._data === 0 || !s.wsp_ggml_backend_dev_supports_buft(dev, s.wsp_ggml_backend_buffer_get_type(buf))) return 0;
    return t._data - s.wsp_ggml_backend_buffer_get_base(buf);
  };
  // A node whose data is already in a context's memory (no buffer) would be skipped without a word
  // (wsp_ggml_vk_build_graph returns for a node without a buffer): the scheduler leaves it there.
  if (node._data !== 0 && bufferOf(node) === 0 && !NO_OP.has(node.op)) return false;
  try {
    return vulkanRefusal(node, alignment, offset, vulkanMaxAllocation(device)) === null;
  } catch (e) {
    if (e instanceof UseAfterFreeError) return true; // a source the scheduler replaced by its own copy
    throw e;
  }
}

/** The ops that compute nothing (ggml-vulkan returns before them). */
const NO_OP: ReadonlySet<number> = new Set([Op.NONE, Op.VIEW, Op.RESHAPE, Op.PERMUTE, Op.TRANSPOSE]);

/** `wsp_ggml_vk_dim01_contiguous`. */
const dim01 = (t: Tensor) =>
  dense0(t) && t.nb(1) === (t.nb(0) * t.ne(0)) / t.traits.blckSize && (t.ne(3) === 1 || t.nb(3) === t.nb(2) * t.ne(2));

/** `wsp_ggml_is_contiguous_channels`. */
const contiguousChannels = (t: Tensor) => t.nb(0) > t.nb(2) && t.nb(1) > t.nb(0) && t.nb(2) === t.traits.typeSize;

/** `wsp_ggml_vk_op_supports_incontiguous`: the ops whose shaders take strided operands. */
const INCONTIGUOUS: ReadonlySet<number> = new Set([
  Op.CPY, Op.GET_ROWS, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.ADD_ID, Op.CONCAT, Op.UPSCALE, Op.SQR, Op.SQRT, Op.SIN, Op.COS,
  Op.CLAMP, Op.PAD, Op.REPEAT, Op.REPEAT_BACK, Op.ROPE, Op.RMS_NORM, Op.CONV_2D_DW, Op.IM2COL, Op.IM2COL_3D, Op.SET_ROWS,
  Op.SUM, Op.SUM_ROWS, Op.MEAN,
]);

/** The ops that do not go through `wsp_ggml_vk_op_f32` (each has a function of its own). */
const OWN_PATH: ReadonlySet<number> = new Set([Op.MUL_MAT, Op.MUL_MAT_ID, Op.FLASH_ATTN_EXT, Op.RWKV_WKV6, Op.RWKV_WKV7, Op.OPT_STEP_ADAMW]);

/**
 * The ops whose push constants take no misalignment offset (the generic
 * `init_pushconst_tensor_offsets`): every operand must start at a multiple
 * of the device's `minStorageBufferOffsetAlignment`. GET_ROWS takes the
 * offsets in its push constants but asserts they are zero.
 */
const ALIGNED: ReadonlySet<number> = new Set([
  Op.OPT_STEP_SGD, Op.ADD_ID, Op.SILU_BACK, Op.NORM, Op.GROUP_NORM, Op.RMS_NORM_BACK, Op.L2_NORM, Op.UNARY, Op.GLU,
  Op.DIAG_MASK_INF, Op.SOFT_MAX, Op.SOFT_MAX_BACK, Op.ROPE, Op.ROPE_BACK, Op.ARGSORT, Op.ARGMAX, Op.COUNT_EQUAL, Op.IM2COL,
  Op.TIMESTEP_EMBEDDING, Op.CONV_TRANSPOSE_1D, Op.POOL_2D, Op.CONV_2D, Op.CONV_TRANSPOSE_2D, Op.CONV_2D_DW, Op.LEAKY_RELU,
  Op.GET_ROWS,
]);

/** The ops whose only kernel is f32 in, f32 out (`wsp_ggml_vk_op_get_pipeline`). */
const F32_ONLY: ReadonlySet<number> = new Set([
  Op.SCALE, Op.SQR, Op.SQRT, Op.SIN, Op.COS, Op.CLAMP, Op.PAD, Op.ROLL, Op.REPEAT_BACK, Op.NORM, Op.GROUP_NORM, Op.RMS_NORM,
  Op.L2_NORM, Op.DIAG_MASK_INF, Op.SUM, Op.SUM_ROWS, Op.MEAN, Op.TIMESTEP_EMBEDDING, Op.CONV_TRANSPOSE_1D, Op.POOL_2D,
  Op.OPT_STEP_SGD, Op.LEAKY_RELU,
]);

const name = (t: Tensor | null) => (t === null ? "none" : t.traits.name);

/**
 * Why ggml-vulkan would abort on `node` although its `supports_op` accepts
 * it, or null. `alignment` is the device's `minStorageBufferOffsetAlignment`
 * (its buffer type's alignment), `offset(t)` a tensor's byte offset in its buffer,
 * `maxAllocation` the device's largest allocation ({@linkcode vulkanMaxAllocation}),
 * which the temporaries of matrix products and flash attention may not exceed.
 */
export function vulkanRefusal(node: Tensor, alignment: number, offset: (t: Tensor) => number, maxAllocation = Infinity): string | null {
  const op = node.op;
  if (NO_OP.has(op)) return null;
  // vk_op_unary_push_constants_init / vk_op_pad_push_constants_init: ne <= UINT32_MAX (a view with zero strides can have more elements than bytes)
  if (node.nelements > MAX_ELEMENTS) return `${node.describe()} has ${node.nelements} elements, more than the ${MAX_ELEMENTS} the Vulkan kernels count`;
  const s0 = srcAt(node, 0), s1 = srcAt(node, 1), s2 = srcAt(node, 2);
  const t0 = s0?.type, t1 = s1?.type, td = node.type;
  const types = () => `${name(s0)}${s1 ? `, ${name(s1)}` : ""} → ${node.traits.name}`;
  switch (op) {
    case Op.MUL_MAT:
      // mul_mat_q_f16 / mul_mat_vec_q_f16: "y_non_contig || !qy_needs_dequant", wsp_ggml_vk_get_cpy_pipeline "Missing CPY op", the mat-vec kernels' b_type F32 / F16
      if (t1 !== Type.F32 && t1 !== Type.F16) return `b ${s1!.describe()} must be f32 or f16 (the Vulkan matrix kernels convert nothing else)`;
      // mul_mat_vec_p021_f16_f32 / mul_mat_vec_nc_f16_f32: src1 F32
      if (t0 === Type.F16 && t1 === Type.F16 && node.ne(1) === 1 && !s0!.isContiguous) return `a strided f16 ${s0!.describe()} times one column takes an f32 b, not ${s1!.describe()}`;
      return oversized(node, mulMatTemporaries(node, s0!, s1!, alignment), maxAllocation);
    case Op.MUL_MAT_ID:
      // wsp_ggml_vk_get_mul_mat_mat_id_pipeline: src1 F32 for quantized experts; the mat-vec-id kernels: b_type F32
      if (t1 !== Type.F32) return `b ${s1!.describe()} must be f32 (the Vulkan expert kernels take no other)`;
      // mul_mat_id_q_f16 converts a strided b to f16, which only f16 / bf16 experts take (wsp_ggml_vk_get_mul_mat_mat_id_pipeline: src1 F32)
      if (!dim01(s1!) && t0 !== Type.F16 && t0 !== Type.BF16) return `a strided b ${s1!.describe()} needs f16 or bf16 experts, not ${s0!.describe()}`;
      return oversized(node, mulMatIdTemporaries(s0!, s1!, s2!, alignment), maxAllocation);
    case Op.FLASH_ATTN_EXT: {
      const v = s2!, mask = srcAt(node, 3);
      for (const [what, t] of [["the queries", s0!], ["the keys", s1!], ["the values", v]] as const) {
        if (!dense0(t)) return `${what} ${t.describe()} must have dense rows (nb0 = the type's size)`;
      }
      if (v.ne(1) !== s1!.ne(1)) return `the values ${v.describe()} must have as many rows as the keys ${s1!.describe()}`;
      if (mask && mask.ne(1) % 64 !== 0) return `the mask ${mask.describe()} must have a multiple of 64 rows (WSP_GGML_KQ_MASK_PAD)`;
      return oversized(node, flashAttnTemporaries(node, s0!, s1!, v, mask), maxAllocation);
    }
    case Op.RWKV_WKV6:
    case Op.RWKV_WKV7:
      for (let i = 0; i < (op === Op.RWKV_WKV6 ? 6 : 7); i++) {
        const s = srcAt(node, i)!;
        if (s.type !== Type.F32) return `operand ${i} ${s.describe()} must be f32`;
      }
      return null;
    case Op.OPT_STEP_ADAMW:
      for (let i = 0; i < 5; i++) {
        const s = srcAt(node, i)!;
        if (s.type !== Type.F32 || !s.isContiguous) return `operand ${i} ${s.describe()} must be f32 and contiguous`;
      }
      return null;
  }
  // wsp_ggml_vk_op_f32: no quantized operand but for GET_ROWS and copies
  if (op !== Op.GET_ROWS && op !== Op.CPY && op !== Op.CONT && op !== Op.DUP && op !== Op.SET_ROWS) {
    for (const s of [s0, s1]) if (s?.traits.quantized) return `${s.describe()} is quantized`;
  }
  // wsp_ggml_vk_op_f32: "op_supports_incontiguous || dim01_contiguous(src0)", "... || (is_contiguous(src0) && is_contiguous(src1))"
  if (!INCONTIGUOUS.has(op) && !OWN_PATH.has(op) && op !== Op.CONT && op !== Op.DUP) {
    for (const s of [s0, s1]) if (s && !s.isContiguous) return `${s.describe()} is not contiguous`;
  }
  if (ALIGNED.has(op)) {
    for (const t of [s0, s1, s2, node]) {
      if (t && offset(t) % alignment !== 0) return `${t.describe()} starts ${offset(t) % alignment} bytes past a multiple of the device's ${alignment}-byte storage alignment (a view at such an offset)`;
    }
  }
  // wsp_ggml_vk_op_get_pipeline: the kernels there are
  const f32 = t0 === Type.F32 && td === Type.F32;
  let ok = true;
  switch (op) {
    case Op.ACC: case Op.SILU_BACK: case Op.RMS_NORM_BACK: case Op.SOFT_MAX_BACK:
      ok = f32 && t1 === Type.F32;
      break;
    case Op.CONCAT:
      ok = t0 === t1 && t0 === td && (td === Type.F32 || td === Type.F16 || td === Type.I32);
      break;
    case Op.UPSCALE: {
      const mode = node.opParam(0);
      ok = f32 && (mode === ScaleMode.NEAREST || mode === ScaleMode.BILINEAR || mode === (ScaleMode.BILINEAR | ALIGN_CORNERS));
      break;
    }
    case Op.SOFT_MAX:
      ok = f32 && (s1 === null || t1 === Type.F32 || t1 === Type.F16) && (s2 === null || s2.type === Type.F32);
      break;
    case Op.ROPE: case Op.ROPE_BACK:
      ok = (t0 === Type.F32 || t0 === Type.F16) && t0 === td;
      break;
    case Op.ARGSORT: case Op.ARGMAX:
      ok = t0 === Type.F32 && td === Type.I32;
      break;
    case Op.COUNT_EQUAL:
      ok = t0 === Type.I32 && t1 === Type.I32 && td === Type.I64;
      break;
    case Op.IM2COL: case Op.IM2COL_3D:
      ok = t1 === Type.F32 && (td === Type.F32 || td === Type.F16);
      break;
    case Op.CONV_2D_DW:
      ok = (t0 === Type.F32 || t0 === Type.F16) && td === Type.F32 && (s1!.isContiguous || contiguousChannels(s1!));
      break;
    case Op.CONV_TRANSPOSE_1D:
      // wsp_ggml_vk_conv_transpose_1d: nb00, nb10 == sizeof(float)
      ok = f32 && t1 === Type.F32 && dense0(s0!) && dense0(s1!);
      break;
    case Op.CPY: case Op.CONT: case Op.DUP: {
      // wsp_ggml_vk_get_cpy_pipeline copies a type to itself 2 or 4 bytes at a time (i64 and f64 assert)
      const from = s0!.traits;
      ok = !(t0 === td && !from.quantized && from.typeSize !== 2 && from.typeSize !== 4);
      break;
    }
    default:
      ok = !F32_ONLY.has(op) || f32;
  }
  return ok ? null : `the Vulkan backend has no kernel for ${types()}`;
}

/** The device pointers' allocation limits, once known (a device lives as long as the process). */
const maxAllocations = new Map<number, number>();

/**
 * The largest allocation (bytes) of a Vulkan `device`: ggml-vulkan's `max_memory_allocation_size`
 * (Vulkan's maxMemoryAllocationSize, capped by maxBufferSize; WSP_GGML_VK_FORCE_MAX_ALLOCATION_SIZE
 * forces it), which the API does not expose. The loader's probe child measures it
 * (`Library.vulkan.maxAllocation`); without the probe (`probe: false`,
 * WSP_GGML_PROBE=0) it is the device buffer type's maximum, the suballocation block size (1 GiB
 * by default) capped by that limit: a lower bound, so the checks then err on the side of refusing.
 */
export function vulkanMaxAllocation(device: Device): number {
  let max = maxAllocations.get(device.pointer);
  if (max === undefined) {
    const lib = runtime().lib, s = lib.symbols, reg = lib.vulkan.reg;
    const n = reg === 0 ? 0 : Number(s.wsp_ggml_backend_reg_dev_count(reg));
    for (let i = 0; i < n && max === undefined; i++) {
      if (s.wsp_ggml_backend_reg_dev_get(reg, i) === device.pointer) max = lib.vulkan.maxAllocation?.[i];
    }
    max ??= Number(s.wsp_ggml_backend_buft_get_max_size(s.wsp_ggml_backend_dev_buffer_type(device.pointer)));
    maxAllocations.set(device.pointer, max);
  }
  return max;
}

/** A temporary buffer ggml-vulkan may create for a node: what it holds, its largest size in bytes. */
interface Temporary {
  readonly what: string;
  readonly bytes: number;
}

/** The refusal for the first of `temps` over `max` bytes (ggml-vulkan's "Requested preallocation size is too large"), or null. */
function oversized(node: Tensor, temps: readonly Temporary[], max: number): string | null {
  const t = temps.find((x) => x.bytes > max);
  if (!t) return null;
  return `it needs ${t.what} of up to ${t.bytes} bytes, more than the device's largest allocation of ${max} bytes ` +
    `(max_memory_allocation_size); split the matrix (e.g. by rows or batches) or run this node on the CPU`;
}

// What the API cannot see of a device (coopmat2, integer dot products, the shader core count, which
// pipelines exist) is taken at its most expensive, so that the bounds below hold on every device.

/** The largest `wg_denoms[1]` of any matrix pipeline (coopmat2's large tile): b's columns are padded to a multiple of it. */
const MAX_WG_N = 256;
/** The smallest `wg_denoms[0]` / `[1]` of any matrix pipeline: split_k needs m and n at least that. */
const MIN_WG = 32;
/** `mul_mat_vec_max_cols`. */
const MAT_VEC_MAX_COLS = 8;
/** Vulkan's smallest allowed maxStorageBufferRange (2^27): an `a` above it may be split into row blocks (wsp_ggml_vk_mul_mat). */
const MIN_STORAGE_RANGE = 2 ** 27;
/** A shader core count above any device's (NVIDIA's SM count, AMD's compute unit count): flash attention's split_k grows with it. */
const MAX_SHADER_CORES = 512;
/** The quantized types the matrix-matrix kernels take without an f16 copy of `a` (wsp_ggml_vk_get_mul_mat_mat_pipeline). */
const MMQ_TYPES: ReadonlySet<number> = new Set([
  Type.Q4_0, Type.Q4_1, Type.Q5_0, Type.Q5_1, Type.Q8_0, Type.Q2_K, Type.Q3_K, Type.Q4_K, Type.Q5_K, Type.Q6_K, Type.IQ1_S,
  Type.IQ1_M, Type.IQ2_XXS, Type.IQ2_XS, Type.IQ2_S, Type.IQ3_XXS, Type.IQ3_S, Type.IQ4_XS, Type.IQ4_NL, Type.MXFP4,
]);

const roundUp = (n: number, m: number) => Math.ceil(n / m) * m;
/** `wsp_ggml_is_permuted`. */
const permuted = (t: Tensor) => t.nb(0) > t.nb(1) || t.nb(1) > t.nb(2) || t.nb(2) > t.nb(3);
const isFloat = (t: Tensor) => t.type === Type.F32 || t.type === Type.F16 || t.type === Type.BF16;

/**
 * The temporaries of `wsp_ggml_vk_mul_mat` (a × b = node): those of the path it takes
 * (mul_mat_vec_q_f16 for up to 8 columns, mul_mat_q_f16 otherwise; the two f16 × f32 vector
 * kernels need none), and those of mul_mat_q_f16 on row blocks of `a` when `a` may exceed the
 * device's storage buffer range.
 */
function mulMatTemporaries(node: Tensor, a: Tensor, b: Tensor, alignment: number): Temporary[] {
  const out: Temporary[] = [];
  const f16 = a.type === Type.F16;
  const p021 = f16 && permuted(a) && permuted(b) && node.ne(1) === 1 && a.nb(0) <= a.nb(2) && a.nb(2) <= a.nb(1) && a.nb(1) <= a.nb(3) &&
    b.nb(0) <= b.nb(2) && b.nb(2) <= b.nb(1) && b.nb(1) <= b.nb(3) && a.ne(3) === 1 && b.ne(3) === 1;
  const nc = f16 && !a.isContiguous && !b.isTransposed && node.ne(1) === 1 && !permuted(a) && !permuted(b);
  const vec = (node.ne(1) === 1 || (node.ne(1) <= MAT_VEC_MAX_COLS && b.ne(2) * b.ne(3) === 1)) && (isFloat(a) || a.traits.quantized);
  const split = a.nbytes > MIN_STORAGE_RANGE;
  if (p021 || nc) {
    // no temporary
  } else if (vec) {
    // mul_mat_vec_q_f16: a strided a copied as it is (each matrix aligned), a strided b copied as it is
    if (!dim01(a)) out.push({ what: `a copy of the strided a ${a.describe()}`, bytes: roundUp(a.traits.typeSize * a.ne(0) * a.ne(1), alignment) * a.ne(2) * a.ne(3) });
    if (!dim01(b)) out.push({ what: `a copy of the strided b ${b.describe()}`, bytes: b.traits.typeSize * b.ne(0) * b.ne(1) * b.ne(2) * b.ne(3) });
  } else {
    out.push(...matMatTemporaries(a, b, true, MMQ_TYPES.has(a.type) && b.type === Type.F32 && dim01(b)));
  }
  if (split && (p021 || nc || vec)) out.push(...matMatTemporaries(a, b, false, MMQ_TYPES.has(a.type) && b.type === Type.F32 && dim01(b)));
  return out;
}

/**
 * mul_mat_q_f16 / mul_mat_id_q_f16: the f16 copy of `a` (x_sz_upd), the f16 copy of `b` with its
 * columns padded to the tile width (y_sz_upd) and, for mul_mat with `splitK`, the partial products
 * of split_k (at most 8 of them, only where k >= 2048). `quantKernel`: a quantized `a` the
 * kernels take as it is whatever the device (b f32 and dense; else the f16 fallback may be taken).
 */
function matMatTemporaries(a: Tensor, b: Tensor, splitK: boolean, quantKernel: boolean): Temporary[] {
  const out: Temporary[] = [];
  // qx_needs_dequant: a strided a, an f32 a (coopmat2), a bf16 a (its pipeline may be missing), a quantized a without its kernel
  const xCopy = !dim01(a) || a.type === Type.F32 || a.type === Type.BF16 || (a.traits.quantized && !quantKernel);
  const batches = (t: Tensor) => t.ne(2) * t.ne(3);
  if (xCopy) out.push({ what: `an f16 copy of a ${a.describe()}`, bytes: 2 * a.ne(0) * a.ne(1) * batches(a) });
  // qy_needs_dequant: a strided b, an f32 b (coopmat2), any b of a bf16 a; an f16 b of another a is read as it is
  const yCopy = !dim01(b) || b.type === Type.F32 || a.type === Type.BF16;
  if (yCopy) out.push({ what: `an f16 copy of b ${b.describe()} (columns padded to the tile width)`, bytes: 2 * roundUp(b.ne(1), MAX_WG_N) * b.ne(0) * batches(b) });
  const k = b.ne(0), m = a.ne(1), n = b.ne(1);
  if (splitK && k >= 2048 && m >= MIN_WG && n >= MIN_WG) {
    // wsp_ggml_vk_guess_split_k: at most 8, fewer when the last of 256-aligned splits would be empty
    let sk = 8;
    while (sk > 1 && roundUp(Math.ceil(k / sk), 256) * (sk - 1) >= k) sk--;
    if (sk > 1) out.push({ what: `the ${sk} partial products of split_k`, bytes: 4 * n * m * batches(b) * sk });
  }
  return out;
}

/** The temporaries of `wsp_ggml_vk_mul_mat_id` (experts `a`, b, ids): mul_mat_vec_id_q_f16 for one token, mul_mat_id_q_f16 otherwise. */
function mulMatIdTemporaries(a: Tensor, b: Tensor, ids: Tensor, alignment: number): Temporary[] {
  if (ids.ne(1) === 1 && a.type !== Type.BF16) {
    const out: Temporary[] = [];
    if (!dim01(a)) out.push({ what: `a copy of the strided experts ${a.describe()}`, bytes: roundUp(a.traits.typeSize * a.ne(0) * a.ne(1), alignment) * a.ne(2) * a.ne(3) });
    if (!dim01(b)) out.push({ what: `a copy of the strided b ${b.describe()}`, bytes: 4 * b.ne(0) * b.ne(1) * b.ne(2) * b.ne(3) });
    return out;
  }
  // the expert kernels take every quantized type of MMQ_TYPES (wsp_ggml_vk_get_mul_mat_mat_id_pipeline), whatever b
  return matMatTemporaries(a, b, false, MMQ_TYPES.has(a.type));
}

/**
 * The split_k partials of `wsp_ggml_vk_flash_attn` (one query row only): per split, the output rows
 * and two floats per head, with split_k about twice the shader cores over the workgroups (taken at
 * {@linkcode MAX_SHADER_CORES}) and at most one split per key.
 */
function flashAttnTemporaries(node: Tensor, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | null): Temporary[] {
  if (q.ne(1) !== 1) return [];
  const kv = k.ne(1), heads = q.ne(2), ratio = Math.floor(q.ne(2) / k.ne(2));
  // grouped-query attention folds the heads that share a key into one workgroup (when its ratio fits the kernel: assumed)
  const gqa = ratio > 1 && ratio * k.ne(2) === heads && k.ne(2) === v.ne(2) && (mask === null || mask.ne(2) <= 1);
  const groups = Math.max(1, Math.floor(heads / (gqa ? ratio : 1))) * q.ne(3);
  const wanted = Math.floor((MAX_SHADER_CORES * 2) / groups);
  if (wanted <= 1) return [];
  // split_kv = kv / wanted rounded up to the kernel's alignment (>= 1): at most this many splits
  const sk = Math.ceil(kv / Math.max(1, Math.floor(kv / wanted)));
  if (sk <= 1) return [];
  const rows = node.ne(1);
  return [{ what: `the ${sk} partial results of split_k`, bytes: (v.ne(0) * rows * 4 + rows * 8) * sk * node.ne(3) }];
}

/**
 * Before `backend` computes `graph` (`Backend.graphCompute` / `graphComputeAsync`), when it is a
 * Vulkan backend: every tensor of the graph is in one of its buffers (ggml-vulkan reads a
 * tensor's buffer as its own: a tensor in a context's pool is skipped without a word, one in a
 * host buffer aborts or crashes), and every node passes {@linkcode vulkanRefusal}.
 *
 * @throws {NotAllocatedError} for a tensor in no backend buffer
 * @throws {ArgumentError} for a tensor in a buffer the backend cannot use
 * @throws {UnsupportedOpError} for a node ggml-vulkan would abort on
 */
export function checkVulkanGraph(what: string, backend: Backend, graph: Graph): void {
  if (!isVulkan(backend)) return;
  const s = sym(), b = backend.pointer;
  const alignment = Number(s.wsp_ggml_backend_get_alignment(b));
  const bases = new Map<number, number>();
  for (const t of graphTensors(graph)) {
    const buf = bufferOf(t);
    if (buf === 0) throw new NotAllocatedError(`${what}: ${t.describe()} is in a context's memory, not in a buffer of ${backend.name} (allocate it with allocCtxTensors(ctx, backend), a Gallocr of backend.defaultBufferType, or a Sched)`);
    const buft = s.wsp_ggml_backend_buffer_get_type(buf);
    if (!s.wsp_ggml_backend_supports_buft(b, buft)) {
      throw new ArgumentError(`${what}: ${t.describe()} is in a ${ffi.readCString(s.wsp_ggml_backend_buft_name(buft))} buffer, which ${backend.name} cannot compute on (allocate it in backend.defaultBufferType, or use a Sched, which copies inputs between backends)`);
    }
    if (!bases.has(buf)) bases.set(buf, s.wsp_ggml_backend_buffer_get_base(buf));
  }
  const offset = (t: Tensor) => t._data - bases.get(bufferOf(t))!;
  const maxAllocation = vulkanMaxAllocation(backend.device);
  for (const n of graph.nodes()) {
    let why: string | null;
    try {
      why = vulkanRefusal(n, alignment, offset, maxAllocation);
    } catch (e) {
      if (e instanceof UseAfterFreeError) continue; // a source in no live context: the preflight before this one refused it
      throw e;
    }
    if (why !== null) throw (/elements, more than/.test(why) ? new BoundsError(`${what}: ${why}`) : new UnsupportedOpError(`${what}: ${backend.name} cannot compute ${n.describe()}: ${why}`));
  }
}
