/**
 * The handwritten preconditions of every op: each throws the typed error that
 * stands in for the `WSP_GGML_ASSERT` the op would hit in C (docs/asserts.md
 * lists them). {@linkcode opChecks} implements the generated
 * {@linkcode OpChecks} interface, so the compiler proves every generated op
 * has its check.
 *
 * @module
 */
import { checkSetExtent, checkViewExtent } from "./extents.ts";
import { GluOp, layouts, MAX_DIMS, Op, ROPE_TYPE_MROPE, ROPE_TYPE_VISION, ScaleMode, TensorFlag, Type, UnaryOp } from "../ffi/bindings.gen.ts";
import { ArgumentError, BoundsError, GgmlTypeError, ShapeError, UnsupportedOpError } from "./errors.ts";
import type { OpChecks } from "./ops.gen.ts";
import { runtime, type TypeTraits } from "../runtime/runtime.ts";
import { fastProperties } from "../ffi/common.ts";
import { i64At, type Tensor } from "./tensor.ts";
import { extraBuftOf } from "./extra_registry.ts";

// ---- predicates, as ggml.c defines them ----

// The hot predicates compare ne[] as the pool's 32-bit words, in place: no shape arrays, and no
// int64 → double conversion or `%` (a slow fmod on doubles) unless two sizes differ and the
// smaller is not 1. ne[i] is the int64 at words 2·i (low) and 2·i + 1 (high) from _neIndex().
// They read `context._w` without the liveness check of `_pool32()`: every op checks its operands'
// contexts (`_live`, `_operand`, `_use`) before its preconditions.
const emptyAt = (v: Int32Array, i: number) =>
  (v[i] === 0 && v[i + 1] === 0) || (v[i + 2] === 0 && v[i + 3] === 0) || (v[i + 4] === 0 && v[i + 5] === 0) || (v[i + 6] === 0 && v[i + 7] === 0);
/**
 * Whether ne[k] of the first tensor divides ne[k] of the second (k = word offset 0, 2, 4, 6).
 * A zero divisor divides nothing: C's `%` by 0 would trap (SIGFPE), so it never gets there.
 */
const dividesAt = (a: Int32Array, i: number, b: Int32Array, j: number, k: number) => {
  const lo0 = a[i + k], hi0 = a[i + k + 1], lo1 = b[j + k], hi1 = b[j + k + 1];
  if (lo0 === 0 && hi0 === 0) return false;
  return (lo0 === lo1 && hi0 === hi1) || (lo0 === 1 && hi0 === 0) || i64At(b, (j + k) << 2) % i64At(a, (i + k) << 2) === 0;
};
const sameShape = (x: Tensor, y: Tensor) => {
  const a = x.context._w, i = x._neIndex(), b = y.context._w, j = y._neIndex();
  for (let k = 0; k < 8; k++) if (a[i + k] !== b[j + k]) return false;
  return true;
};
/** `wsp_ggml_can_repeat(t0, t1)`: t0 can be broadcast to t1. */
const canRepeat = (t0: Tensor, t1: Tensor) => {
  const a = t0.context._w, i = t0._neIndex(), b = t1.context._w, j = t1._neIndex();
  if (emptyAt(a, i)) return emptyAt(b, j);
  return dividesAt(a, i, b, j, 0) && dividesAt(a, i, b, j, 2) && dividesAt(a, i, b, j, 4) && dividesAt(a, i, b, j, 6);
};
const canMulMat = (t0: Tensor, t1: Tensor) => {
  const a = t0.context._w, i = t0._neIndex(), b = t1.context._w, j = t1._neIndex();
  return a[i] === b[j] && a[i + 1] === b[j + 1] && dividesAt(a, i, b, j, 4) && dividesAt(a, i, b, j, 6);
};
const isEmpty = (t: Tensor) => t._ne(0) === 0 || t._ne(1) === 0 || t._ne(2) === 0 || t._ne(3) === 0;
const canRepeatRows = (t0: Tensor, t1: Tensor) => t0.ne(0) === t1.ne(0) && canRepeat(t0, t1);
const canOutProd = (t0: Tensor, t1: Tensor) => t0.ne(1) === t1.ne(1) && t1.ne(2) % t0.ne(2) === 0 && t1.ne(3) % t0.ne(3) === 0;
const isScalar = (t: Tensor) => t.nelements === 1 && t.shape.every((n) => n === 1);
const isVector = (t: Tensor) => t.ne(1) === 1 && t.ne(2) === 1 && t.ne(3) === 1;
const isMatrix = (t: Tensor) => t.ne(2) === 1 && t.ne(3) === 1;
const is3d = (t: Tensor) => t.ne(3) === 1;
const isPadded1d = (t: Tensor) => {
  const ne = t.shape, nb = t.strides;
  return nb[0] === t.traits.typeSize && nb[2] === nb[1] * ne[1] && nb[3] === nb[2] * ne[2];
};
const rowsContiguous = (t: Tensor) => t.ne(0) === t.traits.blckSize || t.nb(0) === t.traits.typeSize;

// ---- failures ----

/** runtime().traits, fetched once by the hot checks. */
let TRAITS: readonly (TypeTraits | undefined)[] | undefined;

function need(cond: boolean, op: string, message: string | (() => string), kind: "shape" | "type" | "bounds" | "arg" = "shape"): void {
  if (cond) return;
  // Messages are built only on failure: describing tensors costs more than the check.
  const text = `${op}: ${typeof message === "function" ? message() : message}`;
  throw kind === "type" ? new GgmlTypeError(text) : kind === "bounds" ? new BoundsError(text) : kind === "arg" ? new ArgumentError(text) : new ShapeError(text);
}

const d = (t: Tensor) => t.describe();
const typeName = (type: number) => runtime().types.get(type)?.name ?? String(type);

// On the hot paths the failure closure is made only on failure (`cond || need(...)`): one less allocation per op.
function contiguous(op: string, t: Tensor, what = "the operand"): void {
  if (!t._contiguousN(0)) need(false, op, () => `${what} ${d(t)} must be contiguous (use ctx.cont())`);
}
function contiguous1(op: string, t: Tensor, what = "the operand"): void {
  if (!t._contiguousN(1)) need(false, op, () => `${what} ${d(t)} must be contiguous above its rows (use ctx.cont())`);
}
function typeIn(op: string, t: Tensor, types: readonly number[], what = "the operand"): void {
  need(types.includes(t.type), op, () => `${what} ${d(t)} must be ${types.map(typeName).join(" or ")}`, "type");
}
function same(op: string, a: Tensor, b: Tensor): void {
  need(sameShape(a, b), op, () => `${d(a)} and ${d(b)} must have the same shape`);
}
function positive(op: string, name: string, v: number): void {
  need(v > 0, op, () => `${name} must be positive, got ${v}`, "arg");
}
function nonNegative(op: string, name: string, v: number): void {
  need(v >= 0, op, () => `${name} must not be negative, got ${v}`, "arg");
}

/** The checks of `wsp_ggml_new_tensor_impl` for a tensor of `type` and `shape`. */
/**
 * {@linkcode checkNewTensor} for `newTensor1d` … `newTensor4d` without a
 * shape array: the common case (a known type, small dimensions) is decided
 * here, anything else gets the full check and its message.
 */
function checkNewTensorNd(op: string, type: number, ne0: number, ne1 = 1, ne2 = 1, ne3 = 1, dims = 1): void {
  const traits = (TRAITS ??= runtime().traits)[type];
  if (traits !== undefined && ne0 >= 0 && ne1 >= 0 && ne2 >= 0 && ne3 >= 0 && Number.isSafeInteger(ne0) && Number.isSafeInteger(ne1) &&
    Number.isSafeInteger(ne2) && Number.isSafeInteger(ne3) && ne0 % traits.blckSize === 0 &&
    Number.isSafeInteger((ne0 / traits.blckSize) * traits.typeSize * ne1 * ne2 * ne3)) return;
  checkNewTensor(op, type, [ne0, ne1, ne2, ne3].slice(0, dims));
}

export function checkNewTensor(op: string, type: number, shape: readonly number[]): void {
  const traits = runtime().types.get(type);
  need(traits !== undefined, op, () => `type ${type} is not a tensor type this library can create`, "type");
  need(shape.length >= 1 && shape.length <= MAX_DIMS, op, () => `a tensor has 1 to ${MAX_DIMS} dimensions, got ${shape.length}`, "arg");
  shape.forEach((n, i) => {
    need(Number.isSafeInteger(n) && n >= 0, op, () => `ne${i} must be a non-negative integer, got ${n}`, "arg");
  });
  need(shape[0] % traits!.blckSize === 0, op, () => `ne0 = ${shape[0]} must be a multiple of the ${traits!.name} block size ${traits!.blckSize}`);
  const bytes = (shape[0] / traits!.blckSize) * traits!.typeSize * shape.slice(1).reduce((a, b) => a * b, 1);
  need(Number.isSafeInteger(bytes), op, () => `the tensor would need ${bytes} bytes`, "bounds");
}

/** The bound of `wsp_ggml_view_impl`: the view stays inside the viewed tensor's data. */
function checkView(op: string, a: Tensor, ne: readonly number[], offset: number): void {
  checkNewTensor(op, a.type, ne);
  const { blckSize, typeSize } = a.traits;
  const bytes = (ne[0] / blckSize) * typeSize * ne.slice(1).reduce((x, y) => x * y, 1);
  const base = a.viewSrc ?? a;
  const offs = offset + (a.viewSrc ? viewOffset(a) : 0);
  need(bytes === 0 || bytes + offs <= base.nbytes, op, () => `a view of ${bytes} bytes at offset ${offs} exceeds the ${base.nbytes} bytes of ${d(base)}`, "bounds");
}

function viewOffset(t: Tensor): number {
  // view_offs, read through the layout by the tensor's own context.
  const v = t.context._pool("view");
  const at = t._off + layouts.wsp_ggml_tensor.fields.view_offs.offset;
  return v.getUint32(at, true) + v.getUint32(at + 4, true) * 2 ** 32;
}

/** `wsp_ggml_calc_conv_output_size`. */
const convOut = (ins: number, ks: number, s: number, p: number, dl: number) => Math.trunc((ins + 2 * p - dl * (ks - 1) - 1) / s) + 1;

function checkIm2col(op: string, a: Tensor, b: Tensor, s0: number, s1: number, p0: number, p1: number, d0: number, d1: number, is2D: boolean, dstType: number): void {
  need(s0 !== 0 && (!is2D || s1 !== 0), op, "the strides must not be 0", "arg");
  if (is2D) need(a.ne(2) === b.ne(2), op, () => `kernel ${d(a)} and input ${d(b)} must have the same channel count (ne2)`);
  else {
    need(b.ne(1) === a.ne(1), op, () => `kernel ${d(a)} and input ${d(b)} must have the same channel count (ne1)`);
    need(b.ne(3) === 1, op, () => `the 1-D input ${d(b)} must have ne3 = 1`);
  }
  const oh = is2D ? convOut(b.ne(1), a.ne(1), s1, p1, d1) : 0;
  const ow = convOut(b.ne(0), a.ne(0), s0, p0, d0);
  need((!is2D || oh > 0) && ow > 0, op, () => `the input ${d(b)} is too small for the kernel ${d(a)}`);
  checkNewTensor(op, dstType, [is2D ? a.ne(2) * a.ne(1) * a.ne(0) : a.ne(1) * a.ne(0), ow, is2D ? oh : b.ne(2), is2D ? b.ne(3) : 1]);
}

function checkMulMat(op: string, a: Tensor, b: Tensor): void {
  if (!canMulMat(a, b)) need(false, op, () => `cannot multiply ${d(a)} by ${d(b)}: ne0 must match and b's ne2, ne3 must be multiples of a's`);
  if (a._transposed()) need(false, op, () => `the first operand ${d(a)} must not be transposed (use ctx.cont())`);
}

function checkRope(op: string, a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number, sections?: readonly number[]): void {
  need((mode & 1) === 0, op, "mode & 1 is no longer supported", "arg");
  // The kernels' asserts (ggml-cpu ops.cpp rope_f32 / rope_f16): the rotated dimensions are pairs within a row.
  if ((nDims & 1) !== 0 || nDims > a._ne(0)) need(false, op, () => `nDims = ${nDims} must be even and at most ne0 = ${a.ne(0)} of ${d(a)}`, "arg");
  if (mode === ROPE_TYPE_VISION) need(nDims === Math.trunc(a.ne(0) / 2), op, () => `vision rope needs nDims = ne0 / 2 = ${Math.trunc(a.ne(0) / 2)}`, "arg");
  if ((mode & ROPE_TYPE_MROPE) && sections) need(sections[0] > 0 || sections[1] > 0 || sections[2] > 0, op, "M-RoPE needs a positive section among the first three", "arg");
  // ops.cpp wsp_ggml_mrope_cache_init: the sections cover at most a row (sect_dims <= ne0)
  if ((mode & ROPE_TYPE_MROPE) && sections) {
    const sum = sections[0] + sections[1] + sections[2] + sections[3];
    need(sum <= a.ne(0), op, () => `the M-RoPE sections add up to ${sum}, more than ne0 = ${a.ne(0)} of ${d(a)}`, "arg");
  }
  need(isVector(b), op, () => `positions ${d(b)} must be a vector`);
  typeIn(op, b, [Type.I32], "positions");
  if (mode & ROPE_TYPE_MROPE) need(a.ne(2) * 4 === b.ne(0), op, () => `M-RoPE expects 4 positions per token: ${d(b)} for ${d(a)}`);
  else need(a.ne(2) === b.ne(0), op, () => `one position per token: ${d(b)} for ${d(a)} (ne2 = ${a.ne(2)})`);
  if (c) {
    typeIn(op, c, [Type.F32], "frequency factors");
    need(c.ne(0) >= nDims / 2, op, () => `frequency factors ${d(c)} need at least nDims / 2 = ${nDims / 2} entries`);
  }
}

function checkConcat(op: string, a: Tensor, b: Tensor, dim: number): void {
  need(dim >= 0 && dim < MAX_DIMS, op, () => `dim must be in 0..${MAX_DIMS - 1}, got ${dim}`, "arg");
  need(a.type === b.type, op, () => `${d(a)} and ${d(b)} must have the same type`, "type");
  for (let i = 0; i < MAX_DIMS; i++) if (i !== dim) need(a.ne(i) === b.ne(i), op, () => `${d(a)} and ${d(b)} differ in dimension ${i}`);
}

/** `wsp_ggml_calc_pool_output_size`: `(ins + 2 * p - ks) / s + 1` in float, truncated to int64. */
const poolOut = (ins: number, ks: number, s: number, p: number) => Math.trunc(Math.fround(Math.fround(ins + 2 * p - ks) / s) + 1);

/**
 * An op's result shape from its size formula: every dimension positive (a
 * zero or negative one, or one whose bytes overflow, would make ggml size
 * the tensor with a wrapped count) and the tensor creatable.
 */
function checkOutSize(op: string, ne: readonly number[], a: Tensor, b?: Tensor): void {
  if (ne[0] > 0 && ne[1] > 0 && ne[2] > 0 && ne[3] > 0) return checkNewTensor(op, Type.F32, ne);
  need(false, op, () => `the result would have the shape [${ne.join(", ")}] from ${d(a)}${b ? ` and ${d(b)}` : ""}: every dimension must be positive (the input is too small for the kernel, or a stride or padding is wrong)`);
}

function checkPool(op: string, k: number[], s: number[]): void {
  k.forEach((v, i) => positive(op, `k${i}`, v));
  s.forEach((v, i) => positive(op, `s${i}`, v));
}

function checkLinearAttn(op: string, s: number, h: number, nTokens: number, nSeqs: number, state: Tensor, others: [string, Tensor][]): void {
  for (const [name, t] of [...others, ["state", state] as [string, Tensor]]) contiguous(op, t, name);
  for (const [name, t] of others) need(t.ne(0) === s && t.ne(1) === h && t.ne(2) === nTokens, op, () => `${name} ${d(t)} must be [${s}, ${h}, ${nTokens}]`);
  need(state.nelements === s * s * h * nSeqs, op, () => `state ${d(state)} must hold S*S*H*n_seqs = ${s * s * h * nSeqs} elements`);
}

const none = (): void => {};
const elementwise = (op: string) => (a: Tensor, b: Tensor) => {
  if (!canRepeat(b, a)) need(false, op, () => `${d(b)} cannot be broadcast to ${d(a)} (each dimension of a must be a multiple of b's)`);
};
const unary = (op: string) => (a: Tensor) => contiguous1(op, a);
const glu = (op: string) => (a: Tensor) => contiguous1(op, a);
const gluSplit = (op: string) => (a: Tensor, b: Tensor) => {
  contiguous1(op, a, "a");
  contiguous1(op, b, "b");
  same(op, a, b);
  need(a.type === b.type, op, () => `${d(a)} and ${d(b)} must have the same type`, "type");
};
const softMax = (op: string) => (a: Tensor) => contiguous(op, a);
const reshape = (op: string) => (a: Tensor, ...ne: number[]) => {
  contiguous(op, a);
  const n = ne.reduce((x, y) => x * y, 1);
  need(a.nelements === n, op, () => `${d(a)} has ${a.nelements} elements, the new shape [${ne.join(", ")}] has ${n}`);
  checkNewTensor(op, a.type, ne);
};
const cont = (op: string) => (a: Tensor, ...ne: number[]) => {
  const n = ne.reduce((x, y) => x * y, 1);
  need(a.nelements === n, op, () => `${d(a)} has ${a.nelements} elements, the new shape [${ne.join(", ")}] has ${n}`);
  checkNewTensor(op, a.type, ne);
};
const add1 = (op: string) => (a: Tensor, b: Tensor) => {
  need(isScalar(b), op, () => `${d(b)} must be a scalar`);
  need(isPadded1d(a), op, () => `${d(a)} must be padded 1-D (dense above its rows)`);
};
const acc = (op: string) => (a: Tensor, b: Tensor, nb1: number, nb2: number, nb3: number, offset: number) => {
  need(b.nelements <= a.nelements, op, () => `${d(b)} has more elements than ${d(a)}`);
  contiguous(op, a, "a");
  typeIn(op, a, [Type.F32], "a");
  typeIn(op, b, [Type.F32], "b");
  checkSetExtent(op, a, b, [nb1, nb2, nb3], offset);
};
const set = (op: string) => (a: Tensor, b: Tensor, ...rest: number[]) => {
  need(a.nelements >= b.nelements, op, () => `${d(b)} has more elements than ${d(a)}`);
  const offset = rest[rest.length - 1];
  need(offset < 2 ** 30, op, () => `offset ${offset} must be below 2^30`, "bounds");
  // set: nb1, nb2, nb3, offset; set2d: nb1, offset; set1d: offset (ggml takes the rest from a)
  checkSetExtent(op, a, b, [rest.length > 1 ? rest[0] : a.nb(1), rest.length > 2 ? rest[1] : a.nb(2), rest.length > 2 ? rest[2] : a.nb(3)], offset);
};
const norm = (op: string) => (_a: Tensor, eps: number) => need(eps >= 0, op, () => `eps must not be negative, got ${eps}`, "arg");
const groupNorm = (op: string) => (a: Tensor, nGroups: number, eps: number) => {
  positive(op, "nGroups", nGroups);
  norm(op)(a, eps);
};
const scale = (op: string) => (a: Tensor) => need(isPadded1d(a), op, () => `${d(a)} must be padded 1-D (dense above its rows)`);
const rope = (op: string) => (a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number) => checkRope(op, a, b, c, nDims, mode);
const ropeMulti = (op: string) => (a: Tensor, b: Tensor, c: Tensor | null, nDims: number, sections: readonly number[], mode: number) =>
  checkRope(op, a, b, c, nDims, mode, sections);
const ropeNoC = (op: string) => (a: Tensor, b: Tensor, nDims: number, mode: number) => checkRope(op, a, b, null, nDims, mode);
const diagMask = (op: string) => (_a: Tensor, nPast: number) => nonNegative(op, "nPast", nPast);
const view = (op: string) => (a: Tensor, ...args: number[]) => {
  const n = (args.length + 1) / 2; // ne0..ne{n-1}, nb1..nb{n-1}, offset
  const ne = args.slice(0, n);
  checkView(op, a, ne, args[args.length - 1]);
  checkViewExtent(op, a, ne, args.slice(n, 2 * n - 1), args[args.length - 1], a.viewSrc ? viewOffset(a) : 0);
};

/**
 * The ops whose backward pass ggml implements (`wsp_ggml_compute_backward`; WIN_PART and WIN_UNPART
 * share the UNARY case there, whose `wsp_ggml_get_unary_op` asserts). {@linkcode checkBackward}
 * has the per-source and per-sub-op conditions.
 */
export const BACKWARD_OPS: ReadonlySet<number> = new Set([
  Op.DUP, Op.ADD, Op.ADD1, Op.ACC, Op.SUB, Op.MUL, Op.DIV, Op.SQR, Op.SQRT, Op.LOG, Op.SIN, Op.COS, Op.SUM,
  Op.SUM_ROWS, Op.MEAN, Op.REPEAT, Op.REPEAT_BACK, Op.RMS_NORM, Op.MUL_MAT, Op.SCALE, Op.SET, Op.CPY, Op.CONT,
  Op.RESHAPE, Op.VIEW, Op.PERMUTE, Op.TRANSPOSE, Op.GET_ROWS, Op.DIAG_MASK_INF, Op.DIAG_MASK_ZERO, Op.SOFT_MAX,
  Op.ROPE, Op.IM2COL, Op.POOL_2D, Op.UNARY, Op.CROSS_ENTROPY_LOSS, Op.GLU, Op.NONE,
]);

/** The preconditions of every generated op. */
// Every op calls through this table: fastProperties keeps its 202 properties out of V8's dictionary mode.
export const opChecks: OpChecks = fastProperties({
  newTensor1d: (type, ne0) => checkNewTensorNd("newTensor1d", type, ne0, 1, 1, 1, 1),
  newTensor2d: (type, ne0, ne1) => checkNewTensorNd("newTensor2d", type, ne0, ne1, 1, 1, 2),
  newTensor3d: (type, ne0, ne1, ne2) => checkNewTensorNd("newTensor3d", type, ne0, ne1, ne2, 1, 3),
  newTensor4d: (type, ne0, ne1, ne2, ne3) => checkNewTensorNd("newTensor4d", type, ne0, ne1, ne2, ne3, 4),
  dupTensor: none,
  viewTensor: none,
  dup: none,
  dupInplace: none,
  add: elementwise("add"),
  addInplace: elementwise("addInplace"),
  addCast: (a, b, type) => {
    need(canRepeatRows(b, a), "addCast", () => `${d(b)} cannot be broadcast to the rows of ${d(a)}`);
    need(a.traits.quantized || a.type === Type.F16 || a.type === Type.BF16, "addCast", () => `${d(a)} must be quantized, f16 or bf16`, "type");
    checkNewTensor("addCast", type, a.shape);
  },
  addId: (a, b, ids) => {
    need(a.ne(0) === b.ne(0), "addId", () => `${d(a)} and ${d(b)} must have the same ne0`);
    need(a.ne(1) === ids.ne(0), "addId", () => `ids ${d(ids)} must have ne0 = a's ne1 = ${a.ne(1)}`);
    need(a.ne(2) === ids.ne(1), "addId", () => `ids ${d(ids)} must have ne1 = a's ne2 = ${a.ne(2)}`);
    typeIn("addId", ids, [Type.I32], "ids");
  },
  add1: add1("add1"),
  add1Inplace: add1("add1Inplace"),
  acc: acc("acc"),
  accInplace: acc("accInplace"),
  sub: elementwise("sub"),
  subInplace: elementwise("subInplace"),
  mul: elementwise("mul"),
  mulInplace: elementwise("mulInplace"),
  div: elementwise("div"),
  divInplace: elementwise("divInplace"),
  sqr: none,
  sqrInplace: none,
  sqrt: none,
  sqrtInplace: none,
  log: none,
  logInplace: none,
  sin: none,
  sinInplace: none,
  cos: none,
  cosInplace: none,
  sum: none,
  sumRows: none,
  mean: none,
  argmax: (a) => {
    need(isMatrix(a), "argmax", () => `${d(a)} must be a matrix`);
    need(a.ne(0) <= 2 ** 31 - 1, "argmax", () => `${d(a)} has too many columns`);
  },
  countEqual: (a, b) => same("countEqual", a, b),
  repeat: (a, b) => need(canRepeat(a, b), "repeat", () => `${d(a)} cannot be repeated to the shape of ${d(b)}`),
  repeat4d: (a, ne0, ne1, ne2, ne3) => {
    const ne = [ne0, ne1, ne2, ne3];
    need(isEmpty(a) || ne.every((n, i) => n % a.ne(i) === 0), "repeat4d", () => `${d(a)} cannot be repeated to [${ne.join(", ")}]`);
    checkNewTensor("repeat4d", a.type, ne);
  },
  repeatBack: (a, b) => need(canRepeat(b, a), "repeatBack", () => `${d(b)} cannot be repeated to the shape of ${d(a)}`),
  concat: (a, b, dim) => checkConcat("concat", a, b, dim),
  abs: unary("abs"),
  absInplace: unary("absInplace"),
  sgn: unary("sgn"),
  sgnInplace: unary("sgnInplace"),
  neg: unary("neg"),
  negInplace: unary("negInplace"),
  step: unary("step"),
  stepInplace: unary("stepInplace"),
  tanh: unary("tanh"),
  tanhInplace: unary("tanhInplace"),
  elu: unary("elu"),
  eluInplace: unary("eluInplace"),
  relu: unary("relu"),
  leakyRelu: none,
  reluInplace: unary("reluInplace"),
  sigmoid: unary("sigmoid"),
  sigmoidInplace: unary("sigmoidInplace"),
  gelu: unary("gelu"),
  geluInplace: unary("geluInplace"),
  geluErf: unary("geluErf"),
  geluErfInplace: unary("geluErfInplace"),
  geluQuick: unary("geluQuick"),
  geluQuickInplace: unary("geluQuickInplace"),
  silu: unary("silu"),
  siluInplace: unary("siluInplace"),
  siluBack: (a, b) => same("siluBack", a, b),
  hardswish: unary("hardswish"),
  hardsigmoid: unary("hardsigmoid"),
  exp: unary("exp"),
  expInplace: unary("expInplace"),
  glu: (a) => contiguous1("glu", a),
  reglu: glu("reglu"),
  regluSwapped: glu("regluSwapped"),
  geglu: glu("geglu"),
  gegluSwapped: glu("gegluSwapped"),
  swiglu: glu("swiglu"),
  swigluSwapped: glu("swigluSwapped"),
  gegluErf: glu("gegluErf"),
  gegluErfSwapped: glu("gegluErfSwapped"),
  gegluQuick: glu("gegluQuick"),
  gegluQuickSwapped: glu("gegluQuickSwapped"),
  gluSplit: (a, b) => gluSplit("gluSplit")(a, b),
  regluSplit: gluSplit("regluSplit"),
  gegluSplit: gluSplit("gegluSplit"),
  swigluSplit: gluSplit("swigluSplit"),
  gegluErfSplit: gluSplit("gegluErfSplit"),
  gegluQuickSplit: gluSplit("gegluQuickSplit"),
  swigluOai: (a, b) => gluSplit("swigluOai")(a, b),
  norm: norm("norm"),
  normInplace: norm("normInplace"),
  rmsNorm: norm("rmsNorm"),
  rmsNormInplace: norm("rmsNormInplace"),
  groupNorm: groupNorm("groupNorm"),
  groupNormInplace: groupNorm("groupNormInplace"),
  l2Norm: norm("l2Norm"),
  l2NormInplace: norm("l2NormInplace"),
  rmsNormBack: (a, b) => same("rmsNormBack", a, b),
  mulMat: (a, b) => checkMulMat("mulMat", a, b),
  mulMatId: (as, b, ids) => {
    const op = "mulMatId";
    need(!as.isTransposed, op, () => `${d(as)} must not be transposed`);
    typeIn(op, ids, [Type.I32], "ids");
    need(as.ne(3) === 1, op, () => `the experts ${d(as)} must be 3-D`);
    need(b.ne(3) === 1, op, () => `${d(b)} must be 3-D`);
    need(ids.ne(2) === 1 && ids.ne(3) === 1, op, () => `ids ${d(ids)} must be 2-D`);
    need(ids.ne(1) === b.ne(2), op, () => `ids ${d(ids)} needs one expert list per row of ${d(b)}`);
    need(as.ne(0) === b.ne(0), op, () => `${d(as)} and ${d(b)} must have the same ne0`);
    need(ids.ne(0) % b.ne(1) === 0, op, () => `ids ${d(ids)}: ne0 must be a multiple of b's ne1 = ${b.ne(1)}`);
  },
  outProd: (a, b) => {
    need(canOutProd(a, b), "outProd", () => `cannot form the outer product of ${d(a)} and ${d(b)}`);
    need(!a.isTransposed, "outProd", () => `${d(a)} must not be transposed`);
  },
  scale: scale("scale"),
  scaleInplace: scale("scaleInplace"),
  scaleBias: scale("scaleBias"),
  scaleBiasInplace: scale("scaleBiasInplace"),
  set: set("set"),
  setInplace: set("setInplace"),
  set1d: set("set1d"),
  set1dInplace: set("set1dInplace"),
  set2d: set("set2d"),
  set2dInplace: set("set2dInplace"),
  cpy: (a, b) => need(a.nelements === b.nelements, "cpy", () => `${d(a)} and ${d(b)} must have the same number of elements`),
  cast: (a, type) => checkNewTensor("cast", type, a.shape),
  cont: none,
  cont1d: cont("cont1d"),
  cont2d: cont("cont2d"),
  cont3d: cont("cont3d"),
  cont4d: cont("cont4d"),
  reshape: (a, b) => {
    contiguous("reshape", a);
    need(a.nelements === b.nelements, "reshape", () => `${d(a)} and ${d(b)} must have the same number of elements`);
  },
  reshape1d: reshape("reshape1d"),
  reshape2d: reshape("reshape2d"),
  reshape3d: reshape("reshape3d"),
  reshape4d: reshape("reshape4d"),
  view1d: view("view1d"),
  view2d: view("view2d"),
  view3d: view("view3d"),
  view4d: view("view4d"),
  permute: (_a, ...axes) => {
    for (const x of axes) need(x >= 0 && x < MAX_DIMS, "permute", () => `axes must be in 0..${MAX_DIMS - 1}, got ${axes.join(", ")}`, "arg");
    need(new Set(axes).size === MAX_DIMS, "permute", () => `axes must be distinct, got ${axes.join(", ")}`, "arg");
  },
  transpose: none,
  getRows: (a, b) => {
    const op = "getRows";
    need(a.ne(2) === b.ne(1), op, () => `rows ${d(b)} must have ne1 = a's ne2 = ${a.ne(2)}`);
    need(a.ne(3) === b.ne(2), op, () => `rows ${d(b)} must have ne2 = a's ne3 = ${a.ne(3)}`);
    need(b.ne(3) === 1, op, () => `rows ${d(b)} must have ne3 = 1`);
    typeIn(op, b, [Type.I32], "rows");
  },
  getRowsBack: (a, b, c) => {
    const op = "getRowsBack";
    need(isMatrix(a) && isVector(b), op, () => `${d(a)} must be a matrix and ${d(b)} a vector`);
    typeIn(op, b, [Type.I32], "rows");
    need(isMatrix(c) && a.ne(0) === c.ne(0), op, () => `${d(c)} must be a matrix with ne0 = ${a.ne(0)}`);
  },
  setRows: (a, b, c) => {
    const op = "setRows";
    need(a.ne(0) === b.ne(0), op, () => `${d(a)} and ${d(b)} must have the same ne0`);
    need(a.ne(2) === b.ne(2) && a.ne(3) === b.ne(3), op, () => `${d(a)} and ${d(b)} must have the same ne2 and ne3`);
    need(b.ne(1) === c.ne(0), op, () => `indices ${d(c)} must have ne0 = b's ne1 = ${b.ne(1)}`);
    need(b.ne(2) % c.ne(1) === 0 && b.ne(3) % c.ne(2) === 0, op, () => `indices ${d(c)} cannot be broadcast over ${d(b)}`);
    need(c.ne(3) === 1, op, () => `indices ${d(c)} must have ne3 = 1`);
    typeIn(op, b, [Type.F32], "b");
    typeIn(op, c, [Type.I64, Type.I32], "indices");
    need(rowsContiguous(a) && rowsContiguous(b), op, "a and b must have contiguous rows");
  },
  diag: (a) => need(a.ne(1) === 1, "diag", () => `${d(a)} must be a row (ne1 = 1)`),
  diagMaskInf: diagMask("diagMaskInf"),
  diagMaskInfInplace: diagMask("diagMaskInfInplace"),
  diagMaskZero: diagMask("diagMaskZero"),
  diagMaskZeroInplace: diagMask("diagMaskZeroInplace"),
  softMax: softMax("softMax"),
  softMaxInplace: softMax("softMaxInplace"),
  softMaxExt: (a, mask, _scale, maxBias) => {
    const op = "softMaxExt";
    contiguous(op, a);
    if (mask) {
      typeIn(op, mask, [Type.F16, Type.F32], "mask");
      contiguous(op, mask, "mask");
      need(mask.ne(0) === a.ne(0), op, () => `mask ${d(mask)} must have ne0 = ${a.ne(0)}`);
      need(mask.ne(1) >= a.ne(1), op, () => `mask ${d(mask)} must have at least ${a.ne(1)} rows`);
      need(a.ne(2) % mask.ne(2) === 0 && a.ne(3) % mask.ne(3) === 0, op, () => `mask ${d(mask)} cannot be broadcast over ${d(a)}`);
    }
    need(!(maxBias > 0) || mask !== null, op, "maxBias > 0 needs a mask", "arg");
  },
  softMaxExtBack: (a, b) => same("softMaxExtBack", a, b),
  softMaxExtBackInplace: (a, b) => same("softMaxExtBackInplace", a, b),
  rope: (a, b, nDims, mode) => ropeNoC("rope")(a, b, nDims, mode),
  ropeInplace: (a, b, nDims, mode) => ropeNoC("ropeInplace")(a, b, nDims, mode),
  ropeExt: rope("ropeExt"),
  ropeMulti: ropeMulti("ropeMulti"),
  ropeExtInplace: rope("ropeExtInplace"),
  ropeMultiInplace: ropeMulti("ropeMultiInplace"),
  ropeCustom: ropeNoC("ropeCustom"),
  ropeCustomInplace: ropeNoC("ropeCustomInplace"),
  ropeExtBack: rope("ropeExtBack"),
  ropeMultiBack: ropeMulti("ropeMultiBack"),
  clamp: none,
  im2col: (a, b, s0, s1, p0, p1, d0, d1, is2D, dstType) => checkIm2col("im2col", a, b, s0, s1, p0, p1, d0, d1, is2D, dstType),
  im2colBack: (_a, _b, ne) => checkNewTensor("im2colBack", Type.F32, ne),
  conv1d: (a, b, s0, p0, d0) => checkIm2col("conv1d", a, b, s0, 0, p0, 0, d0, 0, false, Type.F16),
  conv1dPh: (a, b, s, dl) => checkIm2col("conv1dPh", a, b, s, 0, Math.trunc(a.ne(0) / 2), 0, dl, 0, false, Type.F16),
  conv1dDw: (a, b, s0, p0, d0) => checkConv1dDw("conv1dDw", a, b, s0, p0, d0),
  conv1dDwPh: (a, b, s0, d0) => checkConv1dDw("conv1dDwPh", a, b, s0, Math.trunc(a.ne(0) / 2), d0),
  convTranspose1d: (a, b, s0, p0, d0) => {
    const op = "convTranspose1d";
    // ne0 = (b.ne0 - 1) * s0 + a.ne0: a stride below 1 makes it small or negative (the pool's bound then wraps)
    positive(op, "s0", s0);
    need(isMatrix(b), op, () => `input ${d(b)} must be a matrix`);
    need(a.ne(2) === b.ne(1), op, () => `kernel ${d(a)} and input ${d(b)} must have the same channel count`);
    need(a.ne(3) === 1, op, () => `kernel ${d(a)} must have ne3 = 1`);
    need(p0 === 0, op, "only p0 = 0 is supported", "arg");
    need(d0 === 1, op, "only d0 = 1 is supported", "arg");
    checkOutSize(op, [(b.ne(0) - 1) * s0 + a.ne(0), a.ne(1), b.ne(2), 1], a, b);
  },
  conv2d: (a, b, s0, s1, p0, p1, d0, d1) => checkIm2col("conv2d", a, b, s0, s1, p0, p1, d0, d1, true, a.type),
  im2col3d: (a, b, ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, dstType) => {
    const op = "im2col3d";
    positive(op, "IC", ic);
    need(s0 !== 0 && s1 !== 0 && s2 !== 0, op, "the strides must not be 0", "arg");
    const od = convOut(b.ne(2), a.ne(2), s2, p2, d2), oh = convOut(b.ne(1), a.ne(1), s1, p1, d1), ow = convOut(b.ne(0), a.ne(0), s0, p0, d0);
    need(od > 0 && oh > 0 && ow > 0, op, () => `the input ${d(b)} is too small for the kernel ${d(a)}`);
    checkNewTensor(op, dstType, [a.ne(0) * a.ne(1) * a.ne(2) * ic, ow, oh, od * Math.trunc(b.ne(3) / ic)]);
  },
  conv3d: (a, b, ic, s0, s1, s2, p0, p1, p2, d0, d1, d2) => opChecks.im2col3d(a, b, ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, a.type),
  conv2dSkP0: (a, b) => checkIm2col("conv2dSkP0", a, b, a.ne(0), a.ne(1), 0, 0, 1, 1, true, a.type),
  conv2dS1Ph: (a, b) => checkIm2col("conv2dS1Ph", a, b, 1, 1, Math.trunc(a.ne(0) / 2), Math.trunc(a.ne(1) / 2), 1, 1, true, a.type),
  conv2dDw: (a, b, s0, s1, p0, p1, d0, d1) => {
    contiguous("conv2dDw", a, "kernel");
    contiguous("conv2dDw", b, "input");
    need(s0 !== 0 && s1 !== 0, "conv2dDw", "the strides must not be 0", "arg");
    need(convOut(b.ne(1), a.ne(1), s1, p1, d1) > 0 && convOut(b.ne(0), a.ne(0), s0, p0, d0) > 0, "conv2dDw", () => `the input ${d(b)} is too small for the kernel ${d(a)}`);
  },
  conv2dDwDirect: (a, b, s0, s1, p0, p1, d0, d1) => {
    need(a.ne(2) === 1, "conv2dDwDirect", () => `kernel ${d(a)} must have ne2 = 1`);
    need(a.ne(3) === b.ne(2), "conv2dDwDirect", () => `kernel ${d(a)} needs one filter per channel of ${d(b)}`);
    need(s0 > 0 && s1 > 0, "conv2dDwDirect", "the strides must be positive", "arg");
    checkOutSize("conv2dDwDirect", [convOut(b.ne(0), a.ne(0), s0, p0, d0), convOut(b.ne(1), a.ne(1), s1, p1, d1), b.ne(2), b.ne(3)], a, b);
  },
  convTranspose2dP0: (a, b, stride) => {
    need(a.ne(3) === b.ne(2), "convTranspose2dP0", () => `kernel ${d(a)} and input ${d(b)} must have the same channel count`);
    positive("convTranspose2dP0", "stride", stride);
    checkOutSize("convTranspose2dP0", [(b.ne(0) - 1) * stride + a.ne(0), (b.ne(1) - 1) * stride + a.ne(1), a.ne(2), b.ne(3)], a, b);
  },
  conv2dDirect: (a, b, s0, s1, p0, p1, d0, d1) => {
    need(a.ne(2) === b.ne(2), "conv2dDirect", () => `kernel ${d(a)} and input ${d(b)} must have the same channel count`);
    need(s0 > 0 && s1 > 0, "conv2dDirect", "the strides must be positive", "arg");
    checkOutSize("conv2dDirect", [convOut(b.ne(0), a.ne(0), s0, p0, d0), convOut(b.ne(1), a.ne(1), s1, p1, d1), a.ne(3), b.ne(3)], a, b);
  },
  conv3dDirect: (a, b, s0, s1, s2, p0, p1, p2, d0, d1, d2, c, n, oc) => {
    need(a.ne(3) === c * oc, "conv3dDirect", () => `kernel ${d(a)} must have ne3 = nChannels * nChannelsOut = ${c * oc}`);
    need(b.ne(3) === c * n, "conv3dDirect", () => `input ${d(b)} must have ne3 = nChannels * nBatch = ${c * n}`);
    need(s0 > 0 && s1 > 0 && s2 > 0, "conv3dDirect", "the strides must be positive", "arg");
    checkOutSize("conv3dDirect", [convOut(b.ne(0), a.ne(0), s0, p0, d0), convOut(b.ne(1), a.ne(1), s1, p1, d1), convOut(b.ne(2), a.ne(2), s2, p2, d2), oc * n], a, b);
  },
  pool1d: (a, _op, k0, s0, p0) => {
    checkPool("pool1d", [k0], [s0]);
    checkOutSize("pool1d", [poolOut(a.ne(0), k0, s0, p0), a.ne(1), a.ne(2), a.ne(3)], a);
  },
  pool2d: (a, _op, k0, k1, s0, s1, p0, p1) => {
    checkPool("pool2d", [k0, k1], [s0, s1]);
    checkOutSize("pool2d", [poolOut(a.ne(0), k0, s0, p0), poolOut(a.ne(1), k1, s1, p1), a.ne(2), a.ne(3)], a);
  },
  pool2dBack: (a, af, _op, k0, k1, s0, s1) => {
    checkPool("pool2dBack", [k0, k1], [s0, s1]);
    // ops.cpp pool_2d_back reads one plane of a (contiguous) for each plane of af
    contiguous("pool2dBack", a, "the gradient");
    need(a.ne(2) * a.ne(3) >= af.ne(2) * af.ne(3), "pool2dBack", () => `the gradient ${d(a)} needs a plane for each plane of ${d(af)}`);
  },
  upscale: (a, scaleFactor) => {
    need(scaleFactor > 1, "upscale", () => `scaleFactor must be above 1, got ${scaleFactor}`, "arg");
    checkNewTensor("upscale", a.type, [a.ne(0) * scaleFactor, a.ne(1) * scaleFactor, a.ne(2), a.ne(3)]);
  },
  upscaleExt: (a, ne0, ne1, ne2, ne3) => checkNewTensor("upscaleExt", a.type, [ne0, ne1, ne2, ne3]),
  interpolate: (a, ne0, ne1, ne2, ne3, mode) => {
    need((mode & 0xff) < ScaleMode.COUNT, "interpolate", () => `mode ${mode} is not a ScaleMode (with flags)`, "arg");
    checkNewTensor("interpolate", a.type, [ne0, ne1, ne2, ne3]);
  },
  pad: (a, p0, p1, p2, p3) => checkNewTensor("pad", a.type, [a.ne(0) + p0, a.ne(1) + p1, a.ne(2) + p2, a.ne(3) + p3]),
  padExt: (a, lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3) =>
    checkNewTensor("padExt", a.type, [a.ne(0) + lp0 + rp0, a.ne(1) + lp1 + rp1, a.ne(2) + lp2 + rp2, a.ne(3) + lp3 + rp3]),
  padReflect1d: (a, p0, p1) => {
    const op = "padReflect1d";
    nonNegative(op, "p0", p0);
    nonNegative(op, "p1", p1);
    need(p0 < a.ne(0) && p1 < a.ne(0), op, () => `padding must be shorter than ne0 = ${a.ne(0)}`, "bounds");
    contiguous(op, a);
    typeIn(op, a, [Type.F32]);
  },
  roll: (a, ...shifts) => {
    need(a.nb(0) === a.traits.typeSize, "roll", () => `${d(a)} must have dense rows`);
    shifts.forEach((s, i) => need(Math.abs(s) < a.ne(i), "roll", () => `|shift${i}| = ${Math.abs(s)} must be below ne${i} = ${a.ne(i)}`, "bounds"));
  },
  timestepEmbedding: (t, dim) => checkNewTensor("timestepEmbedding", Type.F32, [dim, t.ne(0)]),
  argsort: (a) => need(a.ne(0) <= 2 ** 31 - 1, "argsort", () => `${d(a)} has too many columns`),
  arange: (start, stop, step) => {
    need(stop > start, "arange", () => `stop (${stop}) must be above start (${start})`, "arg");
    need(step > 0, "arange", () => `step must be positive, got ${step}`, "arg");
    checkNewTensor("arange", Type.F32, [Math.ceil((stop - start) / step)]);
  },
  topK: (a, k) => {
    need(a.ne(0) >= k, "topK", () => `k = ${k} exceeds ne0 = ${a.ne(0)}`, "bounds");
    positive("topK", "k", k);
  },
  flashAttnExt: (q, k, v, mask, _scale, maxBias) => {
    const op = "flashAttnExt";
    need(canMulMat(k, q), op, () => `keys ${d(k)} and queries ${d(q)} must have the same ne0 and broadcastable heads`);
    need(q.ne(3) === k.ne(3) && q.ne(3) === v.ne(3), op, `q, k and v must have the same ne3`);
    if (mask) {
      contiguous(op, mask, "mask");
      const rows = Math.ceil(q.ne(1) / 64) * 64;
      need(mask.ne(1) >= rows, op, () => `mask ${d(mask)} needs at least ${rows} rows (the queries padded to WSP_GGML_KQ_MASK_PAD)`);
      need(q.ne(2) % mask.ne(2) === 0 && q.ne(3) % mask.ne(3) === 0, op, () => `mask ${d(mask)} cannot be broadcast over ${d(q)}`);
    }
    need(!(maxBias > 0) || mask !== null, op, "maxBias > 0 needs a mask", "arg");
  },
  flashAttnBack: () => {
    throw new UnsupportedOpError("flashAttnBack: ggml aborts in wsp_ggml_flash_attn_back (\"TODO: adapt to wsp_ggml_flash_attn_ext() changes\")");
  },
  ssmConv: (sx, c) => {
    const op = "ssmConv";
    need(is3d(sx), op, () => `${d(sx)} must be 3-D`);
    need(isMatrix(c), op, () => `${d(c)} must be a matrix`);
    const nT = sx.ne(0) - c.ne(0) + 1;
    need(nT >= 0 && sx.ne(1) === c.ne(1), op, () => `${d(sx)} does not match the kernel ${d(c)}`);
  },
  ssmScan: (s, x, dt, A, B, C, ids) => {
    const op = "ssmScan";
    contiguous(op, s, "s");
    contiguous(op, dt, "dt");
    contiguous(op, A, "A");
    for (const [n, t] of [["x", x], ["B", B], ["C", C]] as const) {
      need(t.nb(0) === t.traits.typeSize && t.nb(1) === t.ne(0) * t.nb(0), op, () => `${n} ${d(t)} must have dense rows`);
    }
    same(op, B, C);
    typeIn(op, ids, [Type.I32], "ids");
    const dState = s.ne(0), headDim = x.ne(0), nHead = x.ne(1), nSeqTokens = x.ne(2), nSeqs = x.ne(3);
    need(dt.ne(0) === nHead && dt.ne(1) === nSeqTokens && dt.ne(2) === nSeqs && is3d(dt), op, () => `dt ${d(dt)} must be [${nHead}, ${nSeqTokens}, ${nSeqs}]`);
    need(s.ne(1) === headDim && s.ne(2) === nHead, op, () => `s ${d(s)} does not match x ${d(x)}`);
    need(B.ne(0) === dState && B.ne(2) === nSeqTokens && B.ne(3) === nSeqs, op, () => `B ${d(B)} does not match`);
    need(ids.ne(0) === nSeqs && isVector(ids), op, () => `ids ${d(ids)} must be a vector of ${nSeqs}`);
    need(A.ne(1) === nHead && isMatrix(A) && (A.ne(0) === dState || A.ne(0) === 1), op, () => `A ${d(A)} does not match`);
  },
  winPart: (a, w) => {
    need(a.ne(3) === 1, "winPart", () => `${d(a)} must have ne3 = 1`);
    typeIn("winPart", a, [Type.F32]);
    positive("winPart", "w", w);
    // ggml counts the windows in C ints (npx * npy): a count past 2^31 - 1 wraps to a negative ne3
    const np = Math.ceil(a.ne(1) / w) * Math.ceil(a.ne(2) / w);
    need(np <= 2 ** 31 - 1, "winPart", () => `${d(a)} would make ${np} windows of ${w} x ${w}, more than ggml counts in an int`, "bounds");
    checkNewTensor("winPart", Type.F32, [a.ne(0), w, w, np]);
  },
  winUnpart: (a, w0, h0, w) => {
    typeIn("winUnpart", a, [Type.F32]);
    positive("winUnpart", "w", w);
    // result [ne0, w0, h0]; ops.cpp win_unpart_f32 reads window (y / w) * ceil(w0 / w) + x / w of a, each w × w
    positive("winUnpart", "w0", w0);
    positive("winUnpart", "h0", h0);
    contiguous("winUnpart", a);
    const windows = Math.ceil(w0 / w) * Math.ceil(h0 / w);
    need(a.ne(1) >= w && a.ne(2) >= w && a.ne(3) >= windows, "winUnpart", () => `${d(a)} must hold ${windows} windows of ${w} x ${w} for a ${w0} x ${h0} result`);
  },
  unary: (a) => contiguous1("unary", a),
  unaryInplace: (a) => contiguous1("unaryInplace", a),
  getRelPos: (a, qh, kh) => {
    need(qh === kh, "getRelPos", () => `qh (${qh}) must equal kh (${kh})`, "arg");
    need(2 * Math.max(qh, kh) - 1 === a.ne(1), "getRelPos", () => `${d(a)} must have ne1 = 2*max(qh, kh) - 1`);
  },
  addRelPos: (a, pw, ph) => addRelPos("addRelPos", a, pw, ph),
  addRelPosInplace: (a, pw, ph) => addRelPos("addRelPosInplace", a, pw, ph),
  rwkvWkv6: (k, v, r, tf, td, state) => {
    const S = k.ne(0), H = k.ne(1), n = k.ne(2), seqs = state.ne(1);
    contiguous("rwkvWkv6", k, "k");
    contiguous("rwkvWkv6", tf, "tf");
    checkLinearAttn("rwkvWkv6", S, H, n, seqs, state, [["v", v], ["r", r], ["td", td]]);
  },
  gatedLinearAttn: (k, v, q, g, state) => {
    const S = k.ne(0), H = k.ne(1), n = k.ne(2), seqs = state.ne(1);
    contiguous("gatedLinearAttn", k, "k");
    checkLinearAttn("gatedLinearAttn", S, H, n, seqs, state, [["v", v], ["q", q], ["g", g]]);
  },
  rwkvWkv7: (r, w, k, v, a, b, state) => {
    const S = r.ne(0), H = r.ne(1), n = r.ne(2), seqs = state.ne(1);
    contiguous("rwkvWkv7", r, "r");
    checkLinearAttn("rwkvWkv7", S, H, n, seqs, state, [["w", w], ["k", k], ["v", v], ["a", a], ["b", b]]);
  },
  crossEntropyLoss: (a, b) => same("crossEntropyLoss", a, b),
  crossEntropyLossBack: (a, b, c) => {
    need(isScalar(a), "crossEntropyLossBack", () => `${d(a)} must be a scalar`);
    same("crossEntropyLossBack", b, c);
  },
  optStepAdamw: (a, grad, m, v, params) => {
    const op = "optStepAdamw";
    need((a.flags & TensorFlag.PARAM) !== 0, op, () => `${d(a)} must be a parameter (setParam())`, "arg");
    same(op, a, grad);
    same(op, a, m);
    same(op, a, v);
    typeIn(op, params, [Type.F32], "params");
    need(params.nelements === 7, op, () => `params ${d(params)} must hold 7 values`);
  },
  optStepSgd: (a, grad, params) => {
    const op = "optStepSgd";
    need((a.flags & TensorFlag.PARAM) !== 0, op, () => `${d(a)} must be a parameter (setParam())`, "arg");
    same(op, a, grad);
    typeIn(op, params, [Type.F32], "params");
    need(params.nelements === 2, op, () => `params ${d(params)} must hold 2 values`);
  },
});

/** `wsp_ggml_conv_1d_dw`: reshape of the input, 1-D im2col, mul_mat with the kernel. */
function checkConv1dDw(op: string, a: Tensor, b: Tensor, s0: number, p0: number, d0: number): void {
  contiguous(op, b, "input");
  need(a.ne(1) === 1 && b.ne(2) === 1, op, () => `kernel ${d(a)} must have ne1 = 1 and input ${d(b)} ne2 = 1`);
  need(s0 !== 0, op, "the stride must not be 0", "arg");
  need(convOut(b.ne(0), a.ne(0), s0, p0, d0) > 0, op, () => `the input ${d(b)} is too small for the kernel ${d(a)}`);
  need(a.ne(2) % b.ne(1) === 0, op, () => `kernel ${d(a)}: ne2 must be a multiple of the input's channels ${b.ne(1)}`);
}

function addRelPos(op: string, a: Tensor, pw: Tensor, ph: Tensor): void {
  same(op, pw, ph);
  contiguous(op, a, "a");
  contiguous(op, pw, "pw");
  contiguous(op, ph, "ph");
  typeIn(op, ph, [Type.F32], "ph");
  typeIn(op, pw, [Type.F32], "pw");
  need(pw.ne(3) === a.ne(2) && pw.ne(0) * pw.ne(0) === a.ne(0) && pw.ne(1) * pw.ne(2) === a.ne(1), op, () => `pw ${d(pw)} does not match ${d(a)}`);
}

// ---- CPU kernel preconditions (checked at compute, against the CPU backend) ----

/** ops.h `WSP_GGML_IM2COL_WORK_SIZE`: the work buffer graph_plan gives conv_2d / conv_3d. */
const IM2COL_WORK_SIZE = 16 * 1024 * 1024;
/** @ignore @internal Whether `t`'s elements are dense in a row (`nb[0] == type_size`), as most kernels assert. */
export const dense0 = (t: Tensor) => t._nb(0) === t.traits.typeSize;
const strided = (what: string, t: Tensor) => `${what} ${t.describe()} has strided elements (nb0 = ${t._nb(0)}, not ${t.traits.typeSize}; use ctx.cont())`;
const noncontiguous = (what: string, t: Tensor) => `${what} ${t.describe()} is not contiguous (use ctx.cont())`;
/** Dense rows, row r (of all ne1·ne2·ne3) at r·nb1: the kernels that walk rows by nb1 alone (ops.cpp gelu, silu). */
const rowsByNb1 = (t: Tensor) => {
  if (!dense0(t)) return false;
  let want = t._nb(1);
  for (let d = 2; d < 4; d++) {
    want *= t._ne(d - 1);
    if (t._ne(d) !== 1 && t._nb(d) !== want) return false;
  }
  return true;
};
const monotone = (t: Tensor) => t._nb(0) <= t._nb(1) && t._nb(1) <= t._nb(2) && t._nb(2) <= t._nb(3);
/** The unary ops computed by unary-ops.cpp (`nb00 == sizeof(src0_t)`, `nb0 == sizeof(dst_t)`). */
const UNARY_DENSE: ReadonlySet<number> = new Set([
  UnaryOp.ABS, UnaryOp.SGN, UnaryOp.NEG, UnaryOp.STEP, UnaryOp.TANH, UnaryOp.ELU, UnaryOp.RELU, UnaryOp.SIGMOID,
  UnaryOp.HARDSIGMOID, UnaryOp.EXP, UnaryOp.HARDSWISH,
]);

/**
 * @ignore @internal Why the CPU kernel of `node` would abort (`WSP_GGML_ASSERT` /
 * `WSP_GGML_ABORT` in ggml-cpu ops.cpp, ggml-cpu.c, binary-ops.cpp,
 * unary-ops.cpp) on its operands' layout, types or parameters that the op's
 * constructor accepts; null when it computes. These are limits of the CPU
 * kernels (another backend may compute such a node), so they are checked
 * where a graph is computed on the CPU, once per graph
 * (`cpuHandlesTypes`), not where the op is built. The list with the asserts
 * is in docs/asserts.md.
 */
export function cpuKernelRefusal(node: Tensor): string | null {
  const op = node.op;
  if (op === Op.NONE || op === Op.VIEW || op === Op.RESHAPE || op === Op.PERMUTE || op === Op.TRANSPOSE) return null;
  const src = node.src, s0 = src[0], s1 = src[1];
  switch (op) {
    case Op.ADD: case Op.SUB: case Op.MUL: case Op.DIV: {
      if (s0.traits.quantized) {
        // ops.cpp add_q_f32
        if (!sameShape(s0, s1)) return `a quantized ${s0.describe()} is added only to a tensor of its shape, not broadcast from ${s1.describe()}`;
        if (s1.type !== Type.F32) return `b ${s1.describe()} must be f32 when a is quantized`; // add_q_f32: nb10 == sizeof(float), src1 F32
        if (!dense0(s0)) return strided("a", s0);
        if (!dense0(s1)) return strided("b", s1);
        if (!monotone(node)) return `the result ${node.describe()} must not be permuted`;
        return null;
      }
      // binary-ops.cpp apply_binary_op
      if (!dense0(s0)) return strided("a", s0);
      if (!dense0(node)) return strided("the result", node);
      if (!dense0(s1) && !sameShape(s0, s1)) return `${strided("b", s1)}: a b with strided elements is not broadcast`;
      return null;
    }
    case Op.REPEAT:
      // ops.cpp repeat: f32 / i32 (repeat_f32), f16 / bf16 / i16 (repeat_f16); any other type (i64) aborts
      if (s0.type !== Type.F32 && s0.type !== Type.I32 && s0.type !== Type.F16 && s0.type !== Type.BF16 && s0.type !== Type.I16) {
        return `repeat is computed for f32, i32, f16, bf16 and i16 only, not ${s0.describe()}`;
      }
      if (!dense0(s0)) return strided("the operand", s0);
      if (!dense0(node)) return strided("the result", node);
      return null;
    case Op.ADD1: case Op.CLAMP: case Op.REPEAT_BACK: case Op.OPT_STEP_ADAMW: case Op.OPT_STEP_SGD:
      // ops.cpp add1: an f16 / bf16 a takes a b of its type or f32, a quantized a an f32 b (add1_q_f32: src1 F32)
      if (op === Op.ADD1 && s0.type !== Type.F32 && s1.type !== Type.F32 && (s0.traits.quantized || s1.type !== s0.type)) {
        return `add1 of ${s0.describe()} takes an f32 b${s0.traits.quantized ? "" : " or one of a's type"}, not ${s1.describe()}`;
      }
      // ops.cpp add1_*, clamp_*, repeat_*, repeat_back_f32, opt_step_*: nb00 and nb0 are the type size
      if (!dense0(s0)) return strided("the operand", s0);
      if (!dense0(node)) return strided("the result", node);
      return null;
    case Op.ACC:
      if (!dense0(s1)) return strided("b", s1); // ops.cpp acc_f32: nb10 == sizeof(float)
      return null;
    case Op.SET:
      // ops.cpp set_f32 / set_i32 (other types abort); a contiguous a, b with dense elements
      if (s0.type !== Type.F32 && s0.type !== Type.I32) return `set is computed for f32 and i32 only, not ${s0.describe()}`;
      if (!s0._contiguousN(0)) return noncontiguous("a", s0);
      if (!dense0(s1)) return strided("b", s1);
      return null;
    case Op.SUM_ROWS: case Op.NORM: case Op.RMS_NORM: case Op.GROUP_NORM: case Op.L2_NORM: case Op.PAD: case Op.TIMESTEP_EMBEDDING:
    // ops.cpp sum_f32 / sum_f16 / mean_f32 / get_rows_* / argmax_f32: only assert() nb00 (compiled out), then read ne00
    // dense elements per row: wrong values, reads past the source (api fuzz: sum, getRows, argmax of a transposed tensor)
    case Op.SUM: case Op.MEAN: case Op.GET_ROWS: case Op.ARGMAX:
    case Op.GET_ROWS_BACK: case Op.SSM_CONV: case Op.SSM_SCAN: case Op.DIAG: case Op.CROSS_ENTROPY_LOSS: case Op.RMS_NORM_BACK:
      // get_rows_back's third source gives only the result's shape
      for (let i = 0, n = op === Op.GET_ROWS_BACK ? 1 : src.length; i < n; i++) {
        if (src[i].type === Type.I32 && op !== Op.SSM_SCAN) continue;
        if (!dense0(src[i])) return strided(i === 0 ? "the operand" : `operand ${i}`, src[i]);
      }
      if (op === Op.DIAG && !dense0(node)) return strided("the result", node);
      if (op === Op.SSM_CONV && s0._nb(1) !== s0.ne(0) * 4) return `the input ${s0.describe()} must have dense rows (use ctx.cont())`;
      // ops.cpp ssm_scan_f32: nh % ng == 0 (x's heads over B's groups; ng = 0 would divide by zero)
      if (op === Op.SSM_SCAN && !(src[4].ne(1) > 0 && s1.ne(1) % src[4].ne(1) === 0)) return `x ${s1.describe()}: its heads (ne1) must be a multiple of B's groups ${src[4].describe()}`;
      if (op === Op.CROSS_ENTROPY_LOSS && s1.type !== Type.F32) return `labels ${s1.describe()} must be f32`;
      return null;
    case Op.UNARY:
      if (UNARY_DENSE.has(node.subOp!) && !(dense0(s0) && dense0(node))) return strided("the operand", s0);
      // unary-ops.cpp apply_unary_op: is_contiguous_1(src0) && is_contiguous_1(dst) (a view3d with its own nb2: api fuzz)
      if (!(dense0(s0) && dense0(node) && s0._contiguousN(1) && node._contiguousN(1))) return noncontiguous("the operand", s0);
      // ops.cpp gelu* / silu: the same as assert() only (compiled out), then row r at r·nb1: a permute with ne1 = 1 passes
      // is_contiguous_1 but its rows are not nb1 apart (wrong values, reads past the source; api fuzz)
      if (!UNARY_DENSE.has(node.subOp!) && !(rowsByNb1(s0) && rowsByNb1(node))) return noncontiguous("the operand", s0);
      return null;
    case Op.SQR: case Op.SQRT: case Op.SIN: case Op.COS: case Op.LOG:
      if (!(dense0(s0) && dense0(node))) return strided("the operand", s0);
      // unary-ops.cpp apply_unary_op: is_contiguous_1(src0) && is_contiguous_1(dst) (a view3d with its own nb2: api fuzz)
      if (!(s0._contiguousN(1) && node._contiguousN(1))) return noncontiguous("the operand", s0);
      return null;
    case Op.MUL_MAT: case Op.MUL_MAT_ID:
      // ggml-cpu.c mul_mat / mul_mat_id: "we don't support permuted src0 or src1"
      if (!dense0(s0)) return strided("a", s0);
      if (!dense0(s1)) return strided("b", s1);
      // ggml-cpu.c mul_mat_id: a b not of the experts' vec_dot_type is converted from f32 (src1 F32);
      // supports_op checks this for MUL_MAT only. Conservative: f32, or f16 / bf16 b with experts of that type.
      if (op === Op.MUL_MAT_ID && s1.type !== Type.F32 && !(s1.type === s0.type && (s0.type === Type.F16 || s0.type === Type.BF16))) {
        return `b ${s1.describe()} must be f32 (or of the experts' type when they are f16 / bf16), experts ${s0.describe()}`;
      }
      if (extraBuftOf(s0._ptr) !== 0) {
        // repack.cpp forward_mul_mat(_id): src1 F32, src0 2-D (3-D experts); it quantizes b four rows at a time
        // assuming they are packed, and loops over ne11 only: a strided or batched b gives wrong numbers silently
        // (mul_mat_id converts b row by row through its strides).
        if (s0.viewSrc !== null) return `a ${s0.describe()} is a view into a repacked (extra) buffer, whose rows are interleaved: multiply the whole tensor`;
        if (s1.type !== Type.F32) return `b ${s1.describe()} must be f32 when a ${s0.describe()} is in a repacked (extra) buffer`;
        if (s0.nDims !== (op === Op.MUL_MAT ? 2 : 3)) return `a repacked ${s0.describe()} is multiplied only as a ${op === Op.MUL_MAT ? "2-D matrix" : "3-D stack of experts"}`;
        if (op === Op.MUL_MAT && !s1.isContiguous) return `b ${s1.describe()} must be contiguous when a ${s0.describe()} is in a repacked (extra) buffer`;
        if (op === Op.MUL_MAT && (s1.ne(2) !== 1 || s1.ne(3) !== 1)) return `b ${s1.describe()} must be 2-D when a ${s0.describe()} is in a repacked (extra) buffer`;
      }
      return null;
    case Op.COUNT_EQUAL:
      if (s1.type !== Type.I32) return `b ${s1.describe()} must be i32 like a`; // ops.cpp count_equal_i32: src1 I32
      return null;
    case Op.OUT_PROD:
      // ops.cpp out_prod: f32 or quantized a (f16 aborts), nb00 == type size, quantized a not broadcast
      if (s0.type === Type.F16) return `outProd is not computed for an f16 a (${s0.describe()})`;
      if (!dense0(s0)) return strided("a", s0);
      if (s0.traits.quantized && (s0.ne(2) !== s1.ne(2) || s0.ne(3) !== s1.ne(3))) return `a quantized ${s0.describe()} is not broadcast over ${s1.describe()}`;
      return null;
    case Op.SCALE:
      if (!s0._contiguousN(0) || !node._contiguousN(0)) return noncontiguous("the operand", s0); // ops.cpp scale_f32
      return null;
    case Op.DIAG_MASK_INF: case Op.DIAG_MASK_ZERO:
      if (!s0._contiguousN(0) || !node._contiguousN(0)) return noncontiguous("the operand", s0); // ops.cpp diag_mask_f32
      return null;
    case Op.SOFT_MAX_BACK:
      if (!s0._contiguousN(0)) return noncontiguous("the gradient", s0);
      if (!s1._contiguousN(0)) return noncontiguous("the softmax output", s1);
      return null;
    case Op.CROSS_ENTROPY_LOSS_BACK:
      for (const t of src) if (!t._contiguousN(0)) return noncontiguous("the operand", t);
      return null;
    case Op.ROPE: case Op.ROPE_BACK:
      if (!dense0(s0) || !dense0(node)) return strided("the operand", s0); // ops.cpp rope_f32 nb00, rope_f16 nb0
      return null;
    case Op.CONV_TRANSPOSE_1D:
      if (s1.type !== Type.F32) return `the input ${s1.describe()} must be f32`; // ops.cpp conv_transpose_1d_*: src1 F32
      if (!dense0(s0)) return strided("the kernel", s0);
      if (!dense0(s1)) return strided("the input", s1);
      return null;
    case Op.IM2COL: case Op.IM2COL_3D:
      // ops.cpp im2col_f16 / im2col_f32 / im2col_3d_*: the input is f32; an f16 result needs an f16 kernel
      if (s1.type !== Type.F32) return `the input ${s1.describe()} must be f32`;
      if (!dense0(s1)) return strided("the input", s1);
      if (node.type === Type.F16 && s0.type !== Type.F16) return `an f16 result needs an f16 kernel, got ${s0.describe()} (conv1d, conv2d with an f32 kernel: cast the kernel to f16)`;
      if (op === Op.IM2COL && node.type === Type.F16 && !dense0(s0)) return strided("the kernel", s0);
      return null;
    case Op.IM2COL_BACK:
      if (s0.type !== Type.F32 || s1.type !== Type.F32) return `im2colBack is computed for f32 operands only, got ${s0.describe()}, ${s1.describe()}`;
      return null;
    case Op.CONV_2D: case Op.CONV_3D: {
      if (s0.type !== Type.F32 && s0.type !== Type.F16) return `the kernel ${s0.describe()} must be f32 or f16`;
      if (!s0._contiguousN(0)) return noncontiguous("the kernel", s0);
      // ops.cpp conv_2d_impl / conv_3d_impl: one patch (the kernel's elements and a row of outputs) must fit the
      // work buffer, which graph_plan sizes WSP_GGML_IM2COL_WORK_SIZE (16 MiB) for these ops; else the patch count
      // is 0 and the kernel divides by it (SIGFPE). Conservative: another node may have made the buffer larger.
      const [kn, oc] = op === Op.CONV_2D ? [s0.ne(0) * s0.ne(1) * s0.ne(2), s0.ne(3)] : [s0.ne(0) * s0.ne(1) * s0.ne(2) * node.opParam(9), node.opParam(11)];
      if (kn * s0.traits.typeSize + oc * 4 > IM2COL_WORK_SIZE) return `the kernel ${s0.describe()} is too large: one patch needs ${kn * s0.traits.typeSize + oc * 4} bytes of the CPU's ${IM2COL_WORK_SIZE}-byte work buffer`;
      return null;
    }
    case Op.CONV_TRANSPOSE_2D:
      if (s0.type !== Type.F16) return `the kernel ${s0.describe()} must be f16 (cast it)`;
      if (s1.type !== Type.F32) return `the input ${s1.describe()} must be f32`;
      if (!dense0(s0)) return strided("the kernel", s0);
      if (!dense0(s1)) return strided("the input", s1);
      return null;
    case Op.CONV_2D_DW: {
      // ops.cpp conv_2d_dw: a contiguous input (WHCN) or channels-most-contiguous (CWHN) with a matching kernel
      const cwhn = s1._nb(0) > s1._nb(2) && s1._nb(1) > s1._nb(0) && s1._nb(2) === s1.traits.typeSize;
      if (!s1._contiguousN(0) && !cwhn) return noncontiguous("the input", s1);
      if (!s1._contiguousN(0) && !(s0._nb(0) >= s0._nb(2) && s0._nb(1) >= s0._nb(0))) return `a channels-first input needs a channels-first kernel, got ${s0.describe()}`;
      return null;
    }
    case Op.POOL_1D: {
      // ops.cpp pool_1d: only k0 == s0 and p0 == 0
      const k0 = node.opParam(1), s = node.opParam(2), p0 = node.opParam(3);
      if (p0 !== 0) return `pool1d is computed without padding only (p0 = ${p0})`;
      if (k0 !== s) return `pool1d is computed with the stride equal to the kernel only (k0 = ${k0}, s0 = ${s})`;
      return null;
    }
    case Op.FLASH_ATTN_EXT:
      // ops.cpp flash_attn_ext_f16: nbq0, nbk0, nbv0 are the type sizes
      if (!dense0(s0)) return strided("the queries", s0);
      if (!dense0(s1)) return strided("the keys", s1);
      if (!dense0(src[2])) return strided("the values", src[2]);
      // ops.cpp flash_attn_ext_f16: K needs a vec_dot ("unsupported K-type": an integer K segfaults first), V a to_float
      for (const [what, t] of [["the keys", s1], ["the values", src[2]]] as const) {
        if (!(t.type === Type.F32 || t.type === Type.F16 || t.type === Type.BF16 || t.traits.quantized)) return `${what} ${t.describe()} must be f32, f16, bf16 or quantized`;
      }
      return null;
    case Op.ADD_ID:
      // ops.cpp add_id_f32: a, b and the result f32 with dense elements
      if (s1.type !== Type.F32) return `b ${s1.describe()} must be f32`;
      if (!dense0(s0) || !dense0(s1) || !dense0(node)) return strided("the operand", dense0(s0) ? s1 : s0);
      return null;
    case Op.CPY: case Op.DUP: case Op.CONT: {
      // ops.cpp dup: same type (bytes), f16 / bf16 / f32 among themselves, f32 ↔ i32, float → quantized, quantized → f32
      const from = s0, to = node;
      if (from.type === to.type) return null;
      const flt = (t: number) => t === Type.F32 || t === Type.F16 || t === Type.BF16;
      if (!from.traits.quantized && !to.traits.quantized) {
        if ((flt(from.type) && flt(to.type)) || (from.type === Type.F32 && to.type === Type.I32) || (from.type === Type.I32 && to.type === Type.F32)) return null;
        return `${from.describe()} is not converted to ${typeName(to.type)} by the CPU backend`;
      }
      if (!from.traits.quantized && !flt(from.type)) return `${from.describe()} is not converted to ${typeName(to.type)} by the CPU backend`;
      if (from.traits.quantized) {
        // ops.cpp dup_from_q: only to f32, into a destination with dense elements
        if (to.type !== Type.F32) return `a quantized ${from.describe()} is copied only to f32`;
        if (op !== Op.CPY || !s1) return `a quantized ${from.describe()} is converted only by cpy / cast`;
        if (!dense0(s1)) return strided("the destination", s1);
        if (s1.ne(0) % from.traits.blckSize !== 0 && !to._contiguousN(0)) return `the destination ${s1.describe()} must hold whole blocks per row or be contiguous`;
        return null;
      }
      // ops.cpp dup_to_q: a contiguous destination, dense source elements
      if (!to._contiguousN(0)) return noncontiguous("the quantized destination", to);
      if (!dense0(from)) return strided("the source", from);
      return null;
    }
    default:
      return null;
  }
}

// ---- the backward pass (wsp_ggml_build_backward_expand / wsp_ggml_compute_backward) ----

const SRC_OFFSET = layouts.wsp_ggml_tensor.fields.src.offset;
/** @ignore @internal `src[i]` by position (the `src` getter leaves the NULLs out, which would shift later slots). */
export function srcAt(t: Tensor, i: number): Tensor | null {
  const p = i64At(t.context._w, t._off + SRC_OFFSET + 8 * i);
  return p === 0 ? null : t.context._resolve(p);
}
const opName = (op: number) => Object.entries(Op).find(([, v]) => v === op)?.[0] ?? String(op);
/** The ops whose gradient with respect to src[0] is src[0]'s gradient as ggml builds it for each. */
const GRAD_SRC0: ReadonlySet<number> = new Set([
  Op.DUP, Op.SQR, Op.SQRT, Op.LOG, Op.SIN, Op.COS, Op.SUM, Op.SUM_ROWS, Op.MEAN, Op.REPEAT, Op.REPEAT_BACK, Op.RMS_NORM,
  Op.SCALE, Op.CPY, Op.RESHAPE, Op.PERMUTE, Op.TRANSPOSE, Op.DIAG_MASK_INF, Op.DIAG_MASK_ZERO, Op.POOL_2D,
]);
const UNARY_GRAD: ReadonlySet<number> = new Set([UnaryOp.ABS, UnaryOp.NEG, UnaryOp.RELU, UnaryOp.SILU, UnaryOp.EXP]);

/**
 * @ignore @internal Walks the backward pass as `wsp_ggml_build_backward_expand` will
 * (which nodes need a gradient, then the nodes in reverse order, each only
 * when it got a gradient) and throws where `wsp_ggml_compute_backward`
 * would abort or crash: an op or unary / GLU op without a backward pass, a
 * source whose gradient the op cannot give (a softmax mask, rope frequency
 * factors, cross-entropy labels, a broadcast `b` of sub / div, the other
 * operand of a non-split swiglu), a gradient ggml builds with asserting ops
 * (mul_mat with a transposed `b` or a broadcast over ne3, get_rows of
 * non-matrix rows, a view of a non-f32 tensor, cont of a strided gradient),
 * and a source that needs a gradient no op gives it (ggml compares the
 * shape of a NULL gradient: a segfault).
 *
 * @throws {UnsupportedOpError} naming the node and its op
 */
export function checkBackward(nodes: readonly Tensor[]): void {
  const needs = new Set<Tensor>();
  for (const n of nodes) {
    if (n.type === Type.I32) continue;
    let need = (n.flags & (TensorFlag.PARAM | TensorFlag.LOSS)) !== 0;
    const op = n.op;
    const ignore0 = op === Op.IM2COL || op === Op.IM2COL_BACK || (op === Op.UNARY && (n.subOp === UnaryOp.SGN || n.subOp === UnaryOp.STEP));
    const ignore1 = op === Op.CPY || op === Op.GET_ROWS || op === Op.GET_ROWS_BACK || op === Op.ROPE;
    for (let j = 0; !need && j < 10; j++) {
      if ((j === 0 && ignore0) || (j === 1 && ignore1)) continue;
      const s = srcAt(n, j);
      if (s && needs.has(s)) need = true;
    }
    if (need) needs.add(n);
  }
  const hasGrad = new Set<Tensor>(), stridedGrad = new Set<Tensor>();
  for (const n of nodes) if (n.flags & TensorFlag.LOSS && needs.has(n)) hasGrad.add(n);
  for (let i = nodes.length - 1; i >= 0; i--) {
    const n = nodes[i];
    if (!hasGrad.has(n)) continue;
    const op = n.op, s0 = srcAt(n, 0), s1 = srcAt(n, 1), s2 = srcAt(n, 2);
    const n0 = s0 !== null && needs.has(s0), n1 = s1 !== null && needs.has(s1), n2 = s2 !== null && needs.has(s2);
    const fail = (why: string): never => {
      const sub = op === Op.UNARY ? `, unary ${Object.entries(UnaryOp).find(([, v]) => v === n.subOp)?.[0]}` : op === Op.GLU ? `, glu ${Object.entries(GluOp).find(([, v]) => v === n.subOp)?.[0]}` : "";
      throw new UnsupportedOpError(`buildBackwardExpand: ${n.describe()} (op ${opName(op)}${sub}): ${why}`);
    };
    let g0 = false, g1 = false;
    if (GRAD_SRC0.has(op)) g0 = true;
    else {
      switch (op) {
        case Op.NONE: break;
        case Op.ADD: case Op.ADD1: case Op.ACC: case Op.MUL: case Op.SET: g0 = g1 = true; break;
        case Op.SUB: case Op.DIV:
          if (n1 && !sameShape(s0!, s1!)) fail(`the gradient of a broadcast b ${s1!.describe()} is not implemented (b must have a's shape ${s0!.describe()})`);
          g0 = g1 = true;
          break;
        case Op.MUL_MAT:
          if (n0 && s1!._transposed()) fail(`the gradient of a needs b ${s1!.describe()} not transposed (use ctx.cont())`);
          if (n0 && (s0!.ne(2) !== s1!.ne(2) || s0!.ne(3) !== s1!.ne(3)) && s1!.ne(3) !== 1) fail(`the gradient of a broadcast a ${s0!.describe()} needs b ${s1!.describe()} with ne3 = 1`);
          g0 = g1 = true;
          break;
        case Op.CONT:
          if (n0 && stridedGrad.has(n)) fail("ggml needs the gradient of cont to be contiguous; it comes strided from a transpose or permute here");
          g0 = true;
          break;
        case Op.VIEW:
          if (n0 && (s0!.type !== Type.F32 || !isPadded1d(s0!))) fail(`the gradient of a view is accumulated with acc, which needs the viewed ${s0!.describe()} f32 and dense above its rows`);
          if (n0 && stridedGrad.has(s0!)) fail(`the gradient of a view is accumulated with acc into the gradient of ${s0!.describe()}, which comes strided from a transpose or permute (acc needs it contiguous)`);
          g0 = true;
          break;
        case Op.GET_ROWS:
          if (n0 && !(isMatrix(s0!) && isVector(s1!))) fail(`the gradient (get_rows_back) needs a matrix ${s0!.describe()} and a vector of rows ${s1!.describe()}`);
          g0 = true;
          break;
        case Op.SOFT_MAX:
          if (n1) fail(`the gradient of the mask ${s1!.describe()} is not implemented`);
          g0 = true;
          break;
        case Op.ROPE:
          if (n2) fail(`the gradient of the frequency factors ${s2!.describe()} is not implemented`);
          g0 = true;
          break;
        case Op.IM2COL: g1 = true; break;
        case Op.CROSS_ENTROPY_LOSS:
          if (n1) fail(`the gradient of the labels ${s1!.describe()} is not implemented`);
          g0 = true;
          break;
        case Op.UNARY:
          if (n.subOp === UnaryOp.SGN || n.subOp === UnaryOp.STEP) break;
          if (!UNARY_GRAD.has(n.subOp!)) fail("ggml has no backward pass for this unary op (it has one for abs, sgn, neg, step, relu, silu, exp)");
          g0 = true;
          break;
        case Op.GLU:
          if (n.subOp !== GluOp.SWIGLU) fail("ggml has no backward pass for this GLU op (it has one for split swiglu only)");
          if (n0 && s1 === null) fail("ggml's backward pass of swiglu needs the split form (ctx.swigluSplit)");
          g0 = g1 = true;
          break;
        default:
          fail("ggml has no backward pass for this op");
      }
    }
    const give = (s: Tensor | null, needed: boolean, given: boolean, k: number) => {
      if (!needed) return;
      if (given) {
        if ((op === Op.TRANSPOSE || op === Op.PERMUTE) && !hasGrad.has(s!) && !n._contiguousN(0)) stridedGrad.add(s!);
        else stridedGrad.delete(s!);
        hasGrad.add(s!);
      } else if (!hasGrad.has(s!)) fail(`src[${k}] ${s!.describe()} needs a gradient (it depends on a parameter) that ggml does not compute through this op`);
    };
    give(s0, n0, g0, 0);
    give(s1, n1, g1, 1);
    give(s2, n2, false, 2);
  }
}
