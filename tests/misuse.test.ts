// Wrong calls that would reach a WSP_GGML_ASSERT / abort() in C: each throws
// its typed error, all in one process, which is alive and computes correctly
// afterwards. docs/asserts.md maps each C assert to the check and the case
// here that exercises it (by the case's name).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type MisuseCase, misuseFailures } from "./misuse_cases.ts";
import {
  ArgumentError,
  BoundsError,
  Context,
  ContextOutOfMemoryError,
  GgmlError,
  GgmlTypeError,
  GraphFullError,
  NotAllocatedError,
  OpPool,
  ScaleMode,
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
  ["set: not a typed array", () => v3.set([1, 2, 3] as unknown as Float32Array), GgmlTypeError],
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
