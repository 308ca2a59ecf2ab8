// Wrong calls that would reach a WSP_GGML_ASSERT / abort() in C: each throws
// its typed error, all in one process, which is alive and computes correctly
// afterwards. docs/asserts.md maps each C assert to the check and the case
// here that exercises it (by the case's name).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type MisuseCase, misuseFailures } from "./misuse_cases.ts";
import {
  ArgumentError,
  Backend,
  BoundsError,
  Context,
  ContextOutOfMemoryError,
  GgmlError,
  GgmlTypeError,
  GraphFullError,
  NotAllocatedError,
  OpPool,
  ScaleMode,
  Sched,
  ShapeError,
  Type,
  UnsupportedOpError,
  UseAfterFreeError,
} from "../mod.ts";

const MiB = 1 << 20;
const ctx = new Context({ memSize: 16 * MiB });
const f32 = (...ne: number[]) => ctx.newTensor(Type.F32, ne);
const i32 = (...ne: number[]) => ctx.newTensor(Type.I32, ne);
const m23 = f32(2, 3), m32 = f32(3, 2), v3 = f32(3), v4 = f32(4);
const freed = new Context({ memSize: MiB });
const dead = freed.newTensor1d(Type.F32, 4);
const deadGraph = freed.newGraph();
freed.free();
const tiny = new Context({ memSize: 1024 });
const lazy = new Context({ memSize: MiB, noAlloc: true });
const unallocated = lazy.newTensor1d(Type.F32, 4);
/** Builds a graph of `t` and computes it: for the CPU kernels' preconditions, checked at compute. */
const compute = (t: ReturnType<typeof f32>) => ctx.newGraph().buildForwardExpand(t).compute({ nThreads: 1 });
/** A backward pass through `build(p)` for a parameter `p` of `shape` (the loss is the sum). */
const backward = (build: (p: ReturnType<typeof f32>) => ReturnType<typeof f32>, ...shape: number[]) => {
  const p = f32(...shape).setParam();
  return ctx.newGraphCustom(64, true).buildForwardExpand(ctx.sum(build(p)).setLoss()).buildBackwardExpand();
};
const T = (t: ReturnType<typeof f32>) => ctx.transpose(t);

/** [name, the wrong call, the error it must throw]. */
const cases: MisuseCase[] = [
  // contexts and memory
  ["context: negative memSize", () => new Context({ memSize: -1 }), ArgumentError],
  ["context: fractional memSize", () => new Context({ memSize: 1.5 }), ArgumentError],
  ["context: pool exhausted by a tensor", () => tiny.newTensor1d(Type.F32, 1024), ContextOutOfMemoryError],
  ["context: pool exhausted by a graph", () => tiny.newGraph(), ContextOutOfMemoryError],
  ["context: pool exhausted by an op", () => {
    const c = new Context({ memSize: 4096 });
    const a = c.newTensor1d(Type.F32, 500); // 2000 bytes + headers fit once, not twice
    return c.add(a, a);
  }, ContextOutOfMemoryError],
  // new tensors
  ["newTensor: removed type", () => ctx.newTensor1d(4 as Type, 4), ArgumentError],
  ["newTensor: type out of range", () => ctx.newTensor1d(Type.COUNT, 4), ArgumentError],
  ["newTensor: removed type, shape form", () => ctx.newTensor(5 as Type, [4]), ArgumentError],
  ["newTensor: 5 dimensions", () => ctx.newTensor(Type.F32, [1, 1, 1, 1, 1]), ArgumentError],
  ["newTensor: no dimensions", () => ctx.newTensor(Type.F32, []), ArgumentError],
  ["newTensor: negative ne", () => ctx.newTensor2d(Type.F32, 4, -1), GgmlError],
  ["newTensor: ne0 not a multiple of the block size", () => ctx.newTensor1d(Type.Q4_0, 31), ShapeError],
  ["newTensor: non-integer ne", () => ctx.newTensor1d(Type.F32, 2.5), ArgumentError],
  // tensor data
  ["set: wrong array type", () => v3.set(new Int32Array(3)), GgmlTypeError],
  ["set: too short", () => v3.set(new Float32Array(2)), BoundsError],
  ["set: too long", () => v3.set(new Float32Array(4)), BoundsError],
  ["set: f16 from Int16Array", () => ctx.newTensor1d(Type.F16, 2).set(new Int16Array(2)), GgmlTypeError],
  ["set: quantized from Float32Array", () => ctx.newTensor1d(Type.Q8_0, 32).set(new Float32Array(32)), GgmlTypeError],
  ["set: not a typed array", () => v3.set("123" as unknown as Float32Array), GgmlTypeError],
  ["set: tensor not allocated", () => unallocated.set(new Float32Array(4)), NotAllocatedError],
  ["get: tensor not allocated", () => unallocated.get(), NotAllocatedError],
  ["get: asked for the wrong array type", () => v3.get(Int32Array), GgmlTypeError],
  ["view: not contiguous", () => ctx.transpose(m23).view(), ShapeError],
  ["ne(): dimension out of range", () => v3.ne(4), BoundsError],
  // use after free
  ["use after free: tensor read", () => dead.shape, UseAfterFreeError],
  ["use after free: tensor as operand", () => ctx.add(v4, dead), UseAfterFreeError],
  ["use after free: op on a freed context", () => freed.relu(v4), UseAfterFreeError],
  ["use after free: graph compute", () => deadGraph.compute(), UseAfterFreeError],
  // element-wise and broadcast
  ["add: cannot broadcast", () => ctx.add(v3, v4), ShapeError],
  ["mul: cannot broadcast", () => ctx.mul(m23, m32), ShapeError],
  ["add1: b not a scalar", () => ctx.add1(v3, v3), ShapeError],
  ["acc: f16 operand", () => ctx.acc(ctx.newTensor1d(Type.F16, 4), v3, 0, 0, 0, 0), GgmlTypeError],
  ["operand: not a tensor", () => ctx.add(v3, {} as never), ArgumentError],
  ["operand: null where a tensor is required", () => ctx.relu(null as never), ArgumentError],
  // matmul
  ["mulMat: ne0 differs", () => ctx.mulMat(m23, m32), ShapeError],
  ["mulMat: transposed first operand", () => ctx.mulMat(ctx.transpose(m23), m32), ShapeError],
  ["outProd: ne1 differs", () => ctx.outProd(m23, f32(2, 4)), ShapeError],
  // reshape, views, permute
  ["reshape2d: element count", () => ctx.reshape2d(m23, 4, 2), ShapeError],
  ["reshape: not contiguous", () => ctx.reshape1d(ctx.transpose(m23), 6), ShapeError],
  ["view1d: past the end", () => ctx.view1d(v4, 4, 4), BoundsError],
  ["view2d: rows past the end", () => ctx.view2d(m23, 2, 4, 8, 0), BoundsError],
  ["view2d: strides past the source", () => ctx.view2d(f32(4), 2, 2, 1 << 30, 0), BoundsError],
  ["view3d: strides past the source", () => ctx.view3d(f32(4, 4), 2, 2, 2, 16, 64, 0), BoundsError],
  ["view4d: strides of a view past the source", () => ctx.view4d(ctx.view1d(f32(8), 4, 8), 2, 1, 1, 2, 8, 8, 24, 0), BoundsError],
  ["permute: repeated axis", () => ctx.permute(m23, 0, 0, 1, 2), ArgumentError],
  ["permute: axis out of range", () => ctx.permute(m23, 0, 1, 2, 4), ArgumentError],
  ["cont2d: element count", () => ctx.cont2d(m23, 5, 1), ShapeError],
  ["cpy: element count", () => ctx.cpy(v3, v4), ShapeError],
  // concat, repeat, rows
  ["concat: dim out of range", () => ctx.concat(v3, v3, 4), ArgumentError],
  ["concat: other dims differ", () => ctx.concat(m23, m32, 0), ShapeError],
  ["concat: types differ", () => ctx.concat(v3, i32(3), 0), GgmlTypeError],
  ["repeat: not a multiple", () => ctx.repeat(v3, v4), ShapeError],
  ["getRows: f32 indices", () => ctx.getRows(m23, v3), GgmlTypeError],
  ["getRows: index shape", () => ctx.getRows(m23, i32(2, 2)), ShapeError],
  // softmax, norms, rope
  ["softMaxExt: mask width", () => ctx.softMaxExt(m23, v3, 1, 0), ShapeError],
  ["softMaxExt: maxBias without a mask", () => ctx.softMaxExt(m23, null, 1, 1), ArgumentError],
  ["softMax: not contiguous", () => ctx.softMax(ctx.transpose(m23)), ShapeError],
  ["rope: f32 positions", () => ctx.ropeExt(f32(4, 2, 3), v3, null, 4, 0, 0, 1e4, 1, 0, 1, 0, 0), GgmlTypeError],
  ["rope: one position per token", () => ctx.ropeExt(f32(4, 2, 3), i32(2), null, 4, 0, 0, 1e4, 1, 0, 1, 0, 0), ShapeError],
  ["rope: mode & 1", () => ctx.ropeExt(f32(4, 2, 3), i32(3), null, 4, 1, 0, 1e4, 1, 0, 1, 0, 0), ArgumentError],
  ["ropeMulti: sections wider than the row", () => ctx.ropeMulti(f32(8, 2, 3), i32(12), null, 8, [100, 0, 0, 0], 8, 0, 1e4, 1, 0, 1, 0, 0), ArgumentError],
  ["ropeMulti: sections not 4 integers", () => ctx.ropeMulti(f32(4, 2, 3), i32(12), null, 4, [1, 2, 3] as never, 8, 0, 1e4, 1, 0, 1, 0, 0), ArgumentError],
  ["groupNorm: zero groups", () => ctx.groupNorm(f32(4, 4, 4), 0, 1e-5), ArgumentError],
  ["norm: negative eps", () => ctx.norm(m23, -1), ArgumentError],
  // conv, pool, misc
  ["im2col: input smaller than the kernel", () => ctx.im2col(f32(5, 5, 1), f32(3, 3, 1), 1, 1, 0, 0, 1, 1, true, Type.F32), ShapeError],
  ["im2col: zero stride", () => ctx.im2col(f32(3, 3, 1), f32(5, 5, 1), 0, 1, 0, 0, 1, 1, true, Type.F32), ArgumentError],
  ["conv2d: channel mismatch", () => ctx.conv2d(f32(3, 3, 2, 4), f32(8, 8, 3), 1, 1, 0, 0, 1, 1), ShapeError],
  ["pool2d: zero kernel", () => ctx.pool2d(m23, OpPool.MAX, 0, 1, 1, 1, 0, 0), ArgumentError],
  ["pool1d: bad pool op", () => ctx.pool1d(m23, 7 as OpPool, 1, 1, 0), ArgumentError],
  ["upscale: factor 1", () => ctx.upscale(m23, 1, ScaleMode.NEAREST), ArgumentError],
  ["interpolate: bad mode", () => ctx.interpolate(m23, 4, 6, 1, 1, 9), ArgumentError],
  ["padReflect1d: padding too long", () => ctx.padReflect1d(m23, 2, 0), BoundsError],
  ["roll: shift too large", () => ctx.roll(m23, 2, 0, 0, 0), BoundsError],
  ["arange: stop below start", () => ctx.arange(3, 1, 1), ArgumentError],
  ["arange: zero step", () => ctx.arange(0, 1, 0), ArgumentError],
  ["topK: k too large", () => ctx.topK(v3, 4), BoundsError],
  ["argmax: 3-D", () => ctx.argmax(f32(2, 2, 2)), ShapeError],
  ["flashAttnBack: aborts in ggml", () => ctx.flashAttnBack(m23, m23, m23, m23, false), UnsupportedOpError],
  ["int argument: not an integer", () => ctx.concat(v3, v3, 0.5), ArgumentError],
  ["int argument: out of 32-bit range", () => ctx.diagMaskInf(m23, 2 ** 40), ArgumentError],
  ["enum argument: not a member", () => ctx.cast(v3, 99 as Type), ArgumentError],
  // more op families (one wrong call each)
  ["addCast: f32 operand", () => ctx.addCast(m23, m23, Type.F32), GgmlTypeError],
  ["addId: ids type", () => ctx.addId(f32(4, 2, 3), f32(4, 2), f32(2, 3)), GgmlTypeError],
  ["countEqual: shapes differ", () => ctx.countEqual(i32(3), i32(4)), ShapeError],
  ["unary: rows not contiguous above", () => ctx.relu(ctx.permute(f32(2, 3, 4), 0, 2, 1, 3)), ShapeError],
  ["gluSplit: shapes differ", () => ctx.swigluSplit(m23, m32), ShapeError],
  ["mulMatId: f32 ids", () => ctx.mulMatId(f32(4, 3, 2), f32(4, 1, 2), f32(1, 2)), GgmlTypeError],
  ["scale: not padded 1-D", () => ctx.scale(ctx.permute(f32(2, 3, 4), 0, 2, 1, 3), 2), ShapeError],
  ["set: b larger than a", () => ctx.set(v3, v4, 12, 12, 12, 0), ShapeError],
  ["set1d: offset past the end", () => ctx.set1dInplace(v4, f32(2), 160), BoundsError],
  ["set2d: rows past the end", () => ctx.set2d(f32(4, 2), f32(2, 2), 64, 0), BoundsError],
  ["set: strides past the end", () => ctx.set(f32(4, 4), f32(2, 2, 2), 16, 64, 64, 0), BoundsError],
  ["acc: offset past the end", () => ctx.acc(v4, f32(2), 16, 16, 16, 160), BoundsError],
  ["getRowsBack: rows not a vector", () => ctx.getRowsBack(m23, i32(2, 2), m23), ShapeError],
  ["setRows: f32 indices", () => ctx.setRows(f32(4, 5), f32(4, 2), f32(2)), GgmlTypeError],
  ["diag: not a row", () => ctx.diag(m23), ShapeError],
  ["im2col3d: input too small", () => ctx.im2col3d(f32(3, 3, 3, 2), f32(2, 2, 2, 2), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, Type.F32), ShapeError],
  ["convTranspose1d: padding", () => ctx.convTranspose1d(f32(3, 2, 2), f32(5, 2), 1, 1, 1), ArgumentError],
  ["conv2dDirect: channel mismatch", () => ctx.conv2dDirect(f32(3, 3, 2, 4), f32(8, 8, 3), 1, 1, 0, 0, 1, 1), ShapeError],
  ["flashAttnExt: head size differs", () => ctx.flashAttnExt(f32(8, 4, 2), f32(16, 4, 2), f32(16, 4, 2), null, 1, 0, 0), ShapeError],
  ["ssmConv: kernel not a matrix", () => ctx.ssmConv(f32(6, 4, 1), f32(3, 4, 2)), ShapeError],
  ["winPart: i32 input", () => ctx.winPart(i32(4, 4, 2), 2), GgmlTypeError],
  ["getRelPos: qh differs from kh", () => ctx.getRelPos(f32(4, 7), 4, 3), ArgumentError],
  ["addRelPos: pw and ph differ", () => ctx.addRelPos(f32(4, 4, 2), f32(2, 2, 2, 2), f32(2, 2, 2, 1)), ShapeError],
  ["rwkvWkv6: state size", () => ctx.rwkvWkv6(f32(4, 2, 3), f32(4, 2, 3), f32(4, 2, 3), f32(4, 2), f32(4, 2, 3), f32(5, 1)), ShapeError],
  ["crossEntropyLoss: shapes differ", () => ctx.crossEntropyLoss(m23, m32), ShapeError],
  ["optStepAdamw: not a parameter", () => ctx.optStepAdamw(v3, v3, v3, v3, f32(7)), ArgumentError],
  ["repeat4d: not a multiple", () => ctx.repeat4d(v3, 4, 1, 1, 1), ShapeError],
  ["cast: to a block type with a partial block", () => ctx.cast(v3, Type.Q8_0), ShapeError],
  // CPU kernel preconditions the constructors do not check (at compute, against the CPU backend)
  ["sumRows: transposed input at compute", () => compute(ctx.sumRows(T(m23))), UnsupportedOpError],
  ["repeat: transposed input at compute", () => compute(ctx.repeat(T(m23), f32(6, 4))), UnsupportedOpError],
  ["repeat: i64 at compute", () => compute(ctx.repeat(ctx.newTensor(Type.I64, [2]), f32(4))), UnsupportedOpError],
  ["repeatBack: transposed input at compute", () => compute(ctx.repeatBack(T(f32(6, 4)), m23)), UnsupportedOpError],
  ["clamp: transposed input at compute", () => compute(ctx.clamp(T(m23), 0, 1)), UnsupportedOpError],
  ["pad: transposed input at compute", () => compute(ctx.pad(T(m23), 1, 1, 0, 0)), UnsupportedOpError],
  ["norm: transposed input at compute", () => compute(ctx.norm(T(m23), 1e-5)), UnsupportedOpError],
  ["rmsNorm: transposed input at compute", () => compute(ctx.rmsNorm(T(m23), 1e-5)), UnsupportedOpError],
  ["groupNorm: permuted input at compute", () => compute(ctx.groupNorm(ctx.permute(f32(4, 3, 2), 1, 2, 0, 3), 1, 1e-5)), UnsupportedOpError],
  ["l2Norm: transposed input at compute", () => compute(ctx.l2Norm(T(m23), 1e-5)), UnsupportedOpError],
  ["rope: permuted input at compute", () => compute(ctx.ropeExt(ctx.permute(f32(4, 2, 3), 1, 0, 2, 3), i32(3), null, 2, 0, 0, 1e4, 1, 0, 1, 0, 0)), UnsupportedOpError],
  ["rope: odd nDims", () => ctx.ropeExt(f32(4, 2, 3), i32(3), null, 3, 0, 0, 1e4, 1, 0, 1, 0, 0), ArgumentError],
  ["rope: nDims above ne0", () => ctx.ropeExt(f32(4, 2, 3), i32(3), null, 8, 0, 0, 1e4, 1, 0, 1, 0, 0), ArgumentError],
  ["crossEntropyLoss: transposed operands at compute", () => compute(ctx.crossEntropyLoss(T(m23), T(m23))), UnsupportedOpError],
  ["flashAttnExt: transposed keys at compute", () => compute(ctx.flashAttnExt(f32(8, 4, 2), ctx.permute(f32(4, 8, 2), 1, 0, 2, 3), f32(8, 4, 2), null, 1, 0, 0)), UnsupportedOpError],
  ["sched: a node the CPU kernel refuses", () => {
    const be = Backend.cpu({ nThreads: 1 });
    const sched = new Sched({ backends: [be] });
    try {
      sched.graphCompute(ctx.newGraph().buildForwardExpand(ctx.mulMat(ctx.permute(f32(4, 3, 2), 2, 0, 1, 3), f32(3, 5, 4))));
    } finally {
      sched.free();
      be.free();
    }
  }, UnsupportedOpError],
  ["mulMat: permuted a at compute", () => compute(ctx.mulMat(ctx.permute(f32(4, 3, 2), 2, 0, 1, 3), f32(3, 5, 4))), UnsupportedOpError],
  ["mulMat: transposed b at compute", () => compute(ctx.mulMat(f32(4, 3), T(f32(2, 4)))), UnsupportedOpError],
  ["conv1d: f32 kernel at compute", () => compute(ctx.conv1d(f32(3, 2, 4), f32(10, 2), 1, 0, 1)), UnsupportedOpError],
  ["im2col: f16 input at compute", () => compute(ctx.im2col(f32(3, 3, 1), ctx.newTensor3d(Type.F16, 5, 5, 1), 1, 1, 0, 0, 1, 1, true, Type.F32)), UnsupportedOpError],
  ["convTranspose2dP0: f32 kernel at compute", () => compute(ctx.convTranspose2dP0(f32(3, 3, 2, 2), f32(5, 5, 2), 1)), UnsupportedOpError],
  ["convTranspose1d: transposed input at compute", () => compute(ctx.convTranspose1d(f32(3, 2, 2), T(f32(2, 5)), 1, 0, 1)), UnsupportedOpError],
  ["pool1d: stride differs from the kernel at compute", () => compute(ctx.pool1d(f32(8, 2), OpPool.MAX, 2, 1, 0)), UnsupportedOpError],
  ["pool1d: padding at compute", () => compute(ctx.pool1d(f32(8, 2), OpPool.MAX, 2, 2, 1)), UnsupportedOpError],
  ["add: quantized a broadcast at compute", () => compute(ctx.add(ctx.newTensor2d(Type.Q8_0, 32, 2), f32(32, 1))), UnsupportedOpError],
  ["add: transposed a at compute", () => compute(ctx.add(T(m23), m32)), UnsupportedOpError],
  ["add: strided b broadcast at compute", () => compute(ctx.add(f32(4, 4), T(f32(4, 1)))), UnsupportedOpError],
  ["relu: strided single column at compute", () => compute(ctx.relu(T(f32(4, 1)))), UnsupportedOpError],
  ["scale: padded rows at compute", () => compute(ctx.scale(ctx.view2d(f32(4, 3), 2, 3, 16, 0), 2)), UnsupportedOpError],
  ["diagMaskInf: transposed input at compute", () => compute(ctx.diagMaskInf(T(f32(4, 4)), 0)), UnsupportedOpError],
  ["set: transposed a at compute", () => compute(ctx.set(T(f32(4, 4)), f32(2), 16, 64, 64, 0)), UnsupportedOpError],
  ["set: f16 at compute", () => compute(ctx.set(ctx.newTensor2d(Type.F16, 4, 4), ctx.newTensor1d(Type.F16, 4), 8, 32, 32, 0)), UnsupportedOpError],
  ["softMaxExtBack: transposed gradient at compute", () => compute(ctx.softMaxExtBack(T(f32(4, 4)), f32(4, 4), 1, 0)), UnsupportedOpError],
  ["ssmConv: transposed input at compute", () => compute(ctx.ssmConv(T(f32(4, 6)), f32(3, 4))), UnsupportedOpError],
  ["cpy: i32 to f16 at compute", () => compute(ctx.cpy(i32(4), ctx.newTensor1d(Type.F16, 4))), UnsupportedOpError],
  ["diag: strided row at compute", () => compute(ctx.diag(T(ctx.view2d(f32(4, 4), 1, 4, 16, 0)))), UnsupportedOpError],
  ["convTranspose1d: f16 input at compute", () => compute(ctx.convTranspose1d(f32(3, 2, 2), ctx.newTensor2d(Type.F16, 5, 2), 1, 0, 1)), UnsupportedOpError],
  ["addId: f16 b at compute", () => compute(ctx.addId(f32(4, 2, 3), ctx.newTensor2d(Type.F16, 4, 2), i32(2, 3))), UnsupportedOpError],
  ["mulMatId: f16 b at compute", () => compute(ctx.mulMatId(f32(4, 3, 2), ctx.newTensor(Type.F16, [4, 1, 2]), i32(1, 2))), UnsupportedOpError],
  ["add: quantized a with an f16 b at compute", () => compute(ctx.add(ctx.newTensor2d(Type.Q8_0, 32, 2), ctx.newTensor2d(Type.F16, 32, 2))), UnsupportedOpError],
  ["add1: quantized a with an f16 b at compute", () => compute(ctx.add1(ctx.newTensor2d(Type.Q8_0, 32, 2), ctx.newTensor1d(Type.F16, 1))), UnsupportedOpError],
  ["add1: f16 a with a bf16 b at compute", () => compute(ctx.add1(ctx.newTensor1d(Type.F16, 4), ctx.newTensor1d(Type.BF16, 1))), UnsupportedOpError],
  ["countEqual: f32 b at compute", () => compute(ctx.countEqual(i32(4), f32(4))), UnsupportedOpError],
  ["flashAttnExt: i32 values at compute", () => compute(ctx.flashAttnExt(f32(8, 2, 1, 1), ctx.newTensor(Type.F16, [8, 4, 1, 1]), i32(8, 4, 1, 1), null, 1, 0, 0)), UnsupportedOpError],
  ["flashAttnExt: i32 keys at compute", () => compute(ctx.flashAttnExt(f32(8, 2, 1, 1), i32(8, 4, 1, 1), ctx.newTensor(Type.F16, [8, 4, 1, 1]), null, 1, 0, 0)), UnsupportedOpError],
  ["conv2dDirect: kernel patch larger than the work buffer at compute", () => {
    const big = new Context({ memSize: 40 * MiB });
    try {
      const k = big.newTensor(Type.F32, [1, 1, 4300000, 1]);
      big.newGraph().buildForwardExpand(big.conv2dDirect(k, big.newTensor(Type.F32, [1, 1, 4300000]), 1, 1, 0, 0, 1, 1)).compute({ nThreads: 1 });
    } finally {
      big.free();
    }
  }, UnsupportedOpError],
  ["mulMatId: permuted b at compute", () => compute(ctx.mulMatId(f32(4, 3, 2), ctx.permute(f32(2, 4, 2), 1, 0, 2, 3), i32(2, 2))), UnsupportedOpError],
  ["rmsNormBack: transposed input at compute", () => compute(ctx.rmsNormBack(T(f32(3, 4)), T(f32(3, 4)), 1e-5)), UnsupportedOpError],
  ["getRowsBack: transposed a at compute", () => compute(ctx.getRowsBack(T(f32(2, 3)), i32(2), f32(3, 5))), UnsupportedOpError],
  ["timestepEmbedding: strided timesteps at compute", () => compute(ctx.timestepEmbedding(T(f32(2, 4)), 8, 10000)), UnsupportedOpError],
  ["crossEntropyLossBack: transposed operands at compute", () => compute(ctx.crossEntropyLossBack(f32(1), T(f32(3, 4)), T(f32(3, 4)))), UnsupportedOpError],
  ["conv2dDirect: transposed kernel at compute", () => compute(ctx.conv2dDirect(T(f32(3, 3, 2, 4)), f32(8, 8, 2), 1, 1, 0, 0, 1, 1)), UnsupportedOpError],
  ["conv2dDwDirect: transposed input at compute", () => compute(ctx.conv2dDwDirect(f32(3, 3, 1, 2), T(f32(8, 8, 2, 1)), 1, 1, 0, 0, 1, 1)), UnsupportedOpError],
  ["im2col3d: f16 input at compute", () => compute(ctx.im2col3d(f32(2, 2, 2, 2), ctx.newTensor(Type.F16, [4, 4, 4, 2]), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, Type.F32)), UnsupportedOpError],
  ["addId: permuted a at compute", () => compute(ctx.addId(ctx.permute(f32(2, 4, 3), 1, 0, 2, 3), f32(4, 2), i32(2, 3))), UnsupportedOpError],
  ["outProd: permuted a at compute", () => compute(ctx.outProd(ctx.permute(f32(2, 3, 4), 2, 0, 1, 3), f32(5, 4, 2))), UnsupportedOpError],
  ["acc: transposed b at compute", () => compute(ctx.acc(f32(4, 4), T(f32(2, 2)), 16, 64, 64, 0)), UnsupportedOpError],
  ["cpy: quantized into a strided f32 destination at compute", () => compute(ctx.cpy(ctx.newTensor(Type.Q8_0, [32, 2]), T(f32(2, 32)))), UnsupportedOpError],
  ["im2col3d: f32 kernel with an f16 result at compute", () => compute(ctx.im2col3d(f32(2, 2, 2, 2), f32(4, 4, 4, 2), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, Type.F16)), UnsupportedOpError],
  ["getRowsBack: transposed f16 a at compute", () => compute(ctx.getRowsBack(T(ctx.newTensor(Type.F16, [2, 3])), i32(2), f32(3, 5))), UnsupportedOpError],
  ["conv3dDirect: transposed kernel at compute", () => compute(ctx.conv3dDirect(T(f32(2, 2, 2, 2)), f32(4, 4, 4, 2), 1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 1, 1)), UnsupportedOpError],
  ["addId: transposed b at compute", () => compute(ctx.addId(f32(4, 2, 3), T(f32(2, 4)), i32(2, 3))), UnsupportedOpError],
  ["mulMatId: permuted experts at compute", () => compute(ctx.mulMatId(ctx.permute(f32(3, 4, 2), 2, 0, 1, 3), f32(4, 1, 2), i32(1, 2))), UnsupportedOpError],
  ["ssmScan: heads not a multiple of the groups at compute", () => compute(ctx.ssmScan(f32(4, 2, 3, 1), f32(2, 3, 2, 1), f32(3, 2, 1), f32(4, 3), f32(4, 2, 2, 1), f32(4, 2, 2, 1), i32(1))), UnsupportedOpError],
  // result shapes from size formulas (a negative dimension wraps the pool's bound)
  ["convTranspose1d: negative stride", () => ctx.convTranspose1d(f32(3, 2, 2), f32(5, 2), -10, 0, 1), ArgumentError],
  ["pool2d: kernel larger than the input", () => ctx.pool2d(f32(3, 3), OpPool.MAX, 5, 5, 1, 1, 0, 0), ShapeError],
  ["pool1d: kernel larger than the input", () => ctx.pool1d(f32(3, 2), OpPool.MAX, 5, 1, 0), ShapeError],
  ["conv2dDirect: kernel larger than the input", () => ctx.conv2dDirect(f32(5, 5, 2, 1), f32(3, 3, 2), 1, 1, 0, 0, 1, 1), ShapeError],
  ["winPart: window count past 2^31", () => lazy.winPart(lazy.newTensor3d(Type.F32, 1, 70000, 70000), 1), BoundsError],
  ["winUnpart: negative width", () => ctx.winUnpart(f32(4, 2, 2, 1), -5, 4, 2), ArgumentError],
  ["winUnpart: fewer windows than the result needs", () => ctx.winUnpart(f32(1, 1, 1, 1), 1000, 1000, 1), ShapeError],
  ["pool2dBack: fewer gradient planes than the input", () => ctx.pool2dBack(f32(2, 2, 1), f32(4, 4, 8), OpPool.MAX, 2, 2, 2, 2, 0, 0), ShapeError],
  // the backward pass (wsp_ggml_compute_backward)
  ["backward: tanh", () => backward((p) => ctx.tanh(p), 4, 4), UnsupportedOpError],
  ["backward: geglu", () => backward((p) => ctx.geglu(p), 4, 4), UnsupportedOpError],
  ["backward: fused swiglu", () => backward((p) => ctx.swiglu(p), 4, 4), UnsupportedOpError],
  ["backward: winPart", () => backward((p) => ctx.winPart(p, 2), 4, 4, 4), UnsupportedOpError],
  ["backward: sub with a broadcast parameter b", () => backward((p) => ctx.sub(f32(4, 4), p), 4, 1), UnsupportedOpError],
  ["backward: div with a broadcast parameter b", () => backward((p) => ctx.div(f32(4, 4), p), 4, 1), UnsupportedOpError],
  ["backward: crossEntropyLoss labels as a parameter", () => backward((p) => ctx.crossEntropyLoss(f32(4, 4), p), 4, 4), UnsupportedOpError],
  ["backward: softMax mask as a parameter", () => backward((p) => ctx.softMaxExt(f32(4, 4), p, 1, 0), 4, 4), UnsupportedOpError],
  ["backward: rope frequency factors as a parameter", () => backward((p) => ctx.ropeExt(f32(4, 2, 3), i32(3), p, 4, 0, 0, 1e4, 1, 0, 1, 0, 0), 2), UnsupportedOpError],
  ["backward: mulMat with a transposed b", () => backward((p) => ctx.mulMat(p, T(f32(3, 4))), 4, 3), UnsupportedOpError],
  ["backward: mulMat broadcasting a over ne3", () => backward((p) => ctx.mulMat(p, f32(4, 2, 1, 3)), 4, 3), UnsupportedOpError],
  ["backward: getRows of a 3-D tensor", () => backward((p) => ctx.getRows(p, i32(2, 2)), 4, 3, 2), UnsupportedOpError],
  ["backward: view of an f16 parameter", () => {
    const p = ctx.newTensor2d(Type.F16, 4, 4).setParam();
    const loss = ctx.sum(ctx.cast(ctx.view1d(p, 4, 0), Type.F32)).setLoss();
    return ctx.newGraphCustom(64, true).buildForwardExpand(loss).buildBackwardExpand();
  }, UnsupportedOpError],
  ["backward: cont of a transposed gradient", () => backward((p) => ctx.cont(T(ctx.cont(p))), 4, 3), UnsupportedOpError],
  ["backward: view accumulated into a strided gradient", () => backward((p) => {
    const c = ctx.cont(p);
    return ctx.add(ctx.sum(ctx.view1d(c, 4, 0)), ctx.sum(ctx.cont(T(c))));
  }, 4, 3), UnsupportedOpError],
  ["backward: cpy into a tensor that needs a gradient", () => backward((p) => ctx.cpy(ctx.scale(p, 2), p), 4, 4), UnsupportedOpError],
  // graphs
  ["graph: full", () => {
    const g = ctx.newGraphCustom(2);
    return g.buildForwardExpand(ctx.relu(ctx.relu(ctx.relu(v3))));
  }, GraphFullError],
  ["graph: node index out of range", () => ctx.newGraph().buildForwardExpand(ctx.relu(v3)).node(1), BoundsError],
  ["graph: nThreads 0", () => ctx.newGraph().buildForwardExpand(ctx.relu(v3)).compute({ nThreads: 0 }), ArgumentError],
  ["graph: compute tensors without data", () => lazy.newGraph().buildForwardExpand(lazy.relu(unallocated)).compute(), NotAllocatedError],
  ["graph: backward without gradient slots", () => ctx.newGraph().buildForwardExpand(ctx.sum(v3)).buildBackwardExpand(), ArgumentError],
  ["graph: backward without a loss", () => {
    const p = f32(3).setParam();
    return ctx.newGraphCustom(16, true).buildForwardExpand(ctx.sum(p)).buildBackwardExpand();
  }, ArgumentError],
  ["graph: compute an op the CPU backend lacks for the type", () => {
    const q = ctx.newTensor2d(Type.Q4_0, 32, 2);
    return ctx.newGraph().buildForwardExpand(ctx.sin(q)).compute();
  }, UnsupportedOpError],
  ["setLoss: not a scalar", () => v3.setLoss(), ShapeError],
  ["setParam: not a leaf", () => ctx.relu(v3).setParam(), ArgumentError],
];

describe("misuse", () => {
  test(`${cases.length} distinct wrong calls each throw their typed error`, () => {
    assert.ok(cases.length >= 40, `${cases.length} cases`);
    assert.equal(new Set(cases.map(([name]) => name)).size, cases.length, "distinct names");
    assert.deepEqual(misuseFailures(cases), []);
  });

  test("the legal forms of the refused calls compute correctly", () => {
    const x = ctx.newTensor2d(Type.F32, 2, 3).set(new Float32Array([1, 2, 3, 4, 5, 6]));
    const run = (t: ReturnType<typeof f32>) => (compute(t), t.toArray());
    // sumRows of the transpose, made contiguous: column sums of x
    assert.deepEqual(run(ctx.sumRows(ctx.cont(T(x)))), [9, 12]);
    // mulMat with b made contiguous: x·xᵀ rows
    assert.deepEqual(run(ctx.mulMat(x, ctx.cont(T(ctx.cont(T(x)))))), [5, 11, 17, 11, 25, 39, 17, 39, 61]);
    // pool1d with the stride equal to the kernel
    assert.deepEqual(run(ctx.pool1d(ctx.reshape1d(x, 6), OpPool.MAX, 2, 2, 0)), [2, 4, 6]);
    // a broadcast add of a dense b
    assert.deepEqual(run(ctx.add(x, ctx.newTensor1d(Type.F32, 2).set(new Float32Array([10, 20])))), [11, 22, 13, 24, 15, 26]);
    // convTranspose2dP0 with an f16 kernel
    const k = ctx.cast(ctx.newTensor4d(Type.F32, 1, 1, 1, 1).set(new Float32Array([2])), Type.F16);
    assert.deepEqual(run(ctx.convTranspose2dP0(k, ctx.reshape3d(x, 2, 3, 1), 1)), [2, 4, 6, 8, 10, 12]);
    // rope with an even nDims ≤ ne0 (position 0 is the identity)
    const r = ctx.ropeExt(ctx.newTensor3d(Type.F32, 4, 1, 1).set(new Float32Array([1, 2, 3, 4])), ctx.newTensor1d(Type.I32, 1).set(new Int32Array([0])), null, 2, 0, 0, 1e4, 1, 0, 1, 0, 0);
    assert.deepEqual(run(r), [1, 2, 3, 4]);
    // backward through split swiglu and a same-shape sub: d(sum(a - p))/dp = -1
    const p = ctx.newTensor2d(Type.F32, 2, 2).set(new Float32Array([1, 2, 3, 4])).setParam();
    const loss = ctx.sum(ctx.add(ctx.sub(ctx.newTensor2d(Type.F32, 2, 2).set(new Float32Array(4)), p), ctx.swigluSplit(p, p))).setLoss();
    const g = ctx.newGraphCustom(64, true).buildForwardExpand(loss).buildBackwardExpand();
    g.reset().compute({ nThreads: 1 });
    // swigluSplit(p, p) = silu(p)·p: d/dv = silu'(v)·v + silu(v), silu'(v) = σ(v)(1 + v(1 − σ(v)))
    const expected = [1, 2, 3, 4].map((v) => {
      const sg = 1 / (1 + Math.exp(-v));
      return -1 + sg * (1 + v * (1 - sg)) * v + v * sg;
    });
    const got = g.grad(p)!.toArray();
    got.forEach((v, i) => assert.ok(Math.abs(v - expected[i]) < 1e-3, `grad ${i}: ${v} vs ${expected[i]}`));
  });

  test("the process is alive and computes correctly afterwards", () => {
    const a = ctx.newTensor2d(Type.F32, 2, 2).set(new Float32Array([1, 2, 3, 4]));
    const b = ctx.newTensor2d(Type.F32, 2, 2).set(new Float32Array([1, 1, 0, 1]));
    const c = ctx.add(ctx.mulMat(a, b), a);
    ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 2 });
    // mulMat(a, b)[i][j] = a_row_j · b_row_i: b0=[1,1] → [3, 7], b1=[0,1] → [2, 4]; plus a
    assert.deepEqual(c.toArray(), [4, 9, 5, 8]);
    ctx.free();
    tiny.free();
    lazy.free();
  });
});
