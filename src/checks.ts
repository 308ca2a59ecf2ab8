/**
 * The handwritten preconditions of every op: each throws the typed error that
 * stands in for the `WSP_GGML_ASSERT` the op would hit in C (docs/asserts.md
 * lists them). {@linkcode opChecks} implements the generated
 * {@linkcode OpChecks} interface, so the compiler proves every generated op
 * has its check.
 *
 * @module
 */
import { layouts, MAX_DIMS, Op, ROPE_TYPE_MROPE, ScaleMode, TensorFlag, Type } from "./bindings.gen.ts";
import { ArgumentError, BoundsError, GgmlTypeError, ShapeError, UnsupportedOpError } from "./errors.ts";
import type { OpChecks } from "./ops.gen.ts";
import { runtime, type TypeTraits } from "./runtime.ts";
import { fastProperties } from "./ffi/common.ts";
import { i64At, type Tensor } from "./tensor.ts";

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

function checkRope(op: string, a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number): void {
  need((mode & 1) === 0, op, "mode & 1 is no longer supported", "arg");
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
const acc = (op: string) => (a: Tensor, b: Tensor, _nb1: number, _nb2: number, _nb3: number, _offset: number) => {
  need(b.nelements <= a.nelements, op, () => `${d(b)} has more elements than ${d(a)}`);
  contiguous(op, a, "a");
  typeIn(op, a, [Type.F32], "a");
  typeIn(op, b, [Type.F32], "b");
};
const set = (op: string) => (a: Tensor, b: Tensor, ...rest: number[]) => {
  need(a.nelements >= b.nelements, op, () => `${d(b)} has more elements than ${d(a)}`);
  const offset = rest[rest.length - 1];
  need(offset < 2 ** 30, op, () => `offset ${offset} must be below 2^30`, "bounds");
};
const norm = (op: string) => (_a: Tensor, eps: number) => need(eps >= 0, op, () => `eps must not be negative, got ${eps}`, "arg");
const groupNorm = (op: string) => (a: Tensor, nGroups: number, eps: number) => {
  positive(op, "nGroups", nGroups);
  norm(op)(a, eps);
};
const scale = (op: string) => (a: Tensor) => need(isPadded1d(a), op, () => `${d(a)} must be padded 1-D (dense above its rows)`);
const rope = (op: string) => (a: Tensor, b: Tensor, c: Tensor | null, nDims: number, mode: number) => checkRope(op, a, b, c, nDims, mode);
const ropeMulti = (op: string) => (a: Tensor, b: Tensor, c: Tensor | null, nDims: number, _sections: readonly number[], mode: number) =>
  checkRope(op, a, b, c, nDims, mode);
const ropeNoC = (op: string) => (a: Tensor, b: Tensor, nDims: number, mode: number) => checkRope(op, a, b, null, nDims, mode);
const diagMask = (op: string) => (_a: Tensor, nPast: number) => nonNegative(op, "nPast", nPast);
const view = (op: string) => (a: Tensor, ...args: number[]) => {
  const n = (args.length + 1) / 2; // ne0..ne{n-1}, nb1..nb{n-1}, offset
  const ne = args.slice(0, n);
  checkView(op, a, ne, args[args.length - 1]);
};

/** The ops whose backward pass ggml implements (`wsp_ggml_compute_backward`). */
export const BACKWARD_OPS: ReadonlySet<number> = new Set([
  Op.DUP, Op.ADD, Op.ADD1, Op.ACC, Op.SUB, Op.MUL, Op.DIV, Op.SQR, Op.SQRT, Op.LOG, Op.SIN, Op.COS, Op.SUM,
  Op.SUM_ROWS, Op.MEAN, Op.REPEAT, Op.REPEAT_BACK, Op.RMS_NORM, Op.MUL_MAT, Op.SCALE, Op.SET, Op.CPY, Op.CONT,
  Op.RESHAPE, Op.VIEW, Op.PERMUTE, Op.TRANSPOSE, Op.GET_ROWS, Op.DIAG_MASK_INF, Op.DIAG_MASK_ZERO, Op.SOFT_MAX,
  Op.ROPE, Op.IM2COL, Op.POOL_2D, Op.WIN_PART, Op.WIN_UNPART, Op.UNARY, Op.CROSS_ENTROPY_LOSS, Op.GLU, Op.NONE,
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
  convTranspose1d: (a, b, _s0, p0, d0) => {
    const op = "convTranspose1d";
    need(isMatrix(b), op, () => `input ${d(b)} must be a matrix`);
    need(a.ne(2) === b.ne(1), op, () => `kernel ${d(a)} and input ${d(b)} must have the same channel count`);
    need(a.ne(3) === 1, op, () => `kernel ${d(a)} must have ne3 = 1`);
    need(p0 === 0, op, "only p0 = 0 is supported", "arg");
    need(d0 === 1, op, "only d0 = 1 is supported", "arg");
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
  conv2dDwDirect: (a, b, s0, s1) => {
    need(a.ne(2) === 1, "conv2dDwDirect", () => `kernel ${d(a)} must have ne2 = 1`);
    need(a.ne(3) === b.ne(2), "conv2dDwDirect", () => `kernel ${d(a)} needs one filter per channel of ${d(b)}`);
    need(s0 !== 0 && s1 !== 0, "conv2dDwDirect", "the strides must not be 0", "arg");
  },
  convTranspose2dP0: (a, b, stride) => {
    need(a.ne(3) === b.ne(2), "convTranspose2dP0", () => `kernel ${d(a)} and input ${d(b)} must have the same channel count`);
    positive("convTranspose2dP0", "stride", stride);
  },
  conv2dDirect: (a, b, s0, s1) => {
    need(a.ne(2) === b.ne(2), "conv2dDirect", () => `kernel ${d(a)} and input ${d(b)} must have the same channel count`);
    need(s0 !== 0 && s1 !== 0, "conv2dDirect", "the strides must not be 0", "arg");
  },
  conv3dDirect: (a, b, s0, s1, s2, _p0, _p1, _p2, _d0, _d1, _d2, c, n, oc) => {
    need(a.ne(3) === c * oc, "conv3dDirect", () => `kernel ${d(a)} must have ne3 = nChannels * nChannelsOut = ${c * oc}`);
    need(b.ne(3) === c * n, "conv3dDirect", () => `input ${d(b)} must have ne3 = nChannels * nBatch = ${c * n}`);
    need(s0 !== 0 && s1 !== 0 && s2 !== 0, "conv3dDirect", "the strides must not be 0", "arg");
  },
  pool1d: (_a, _op, k0, s0) => checkPool("pool1d", [k0], [s0]),
  pool2d: (_a, _op, k0, k1, s0, s1) => checkPool("pool2d", [k0, k1], [s0, s1]),
  pool2dBack: (_a, _af, _op, k0, k1, s0, s1) => checkPool("pool2dBack", [k0, k1], [s0, s1]),
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
  },
  winUnpart: (a, _w0, _h0, w) => {
    typeIn("winUnpart", a, [Type.F32]);
    positive("winUnpart", "w", w);
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
