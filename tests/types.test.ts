// Types that match behaviour: Tensor.set with plain arrays (converted to the
// element type, checked against hand-derived bits), typeName() (ggml's names),
// and argument messages that name the call they come from.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ArgumentError, Backend, BoundsError, Context, GgmlTypeError, Threadpool, Type, typeName } from "../mod.ts";

const ctx = new Context({ memSize: 1 << 20 });

describe("Tensor.set with a plain array", () => {
  test("f32 and f64 take the numbers as they are", () => {
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.F32, 3).set([1.5, -2, 3]).get(Float32Array)), [1.5, -2, 3]);
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.F64, 2).set([0.1, -1e300]).get(Float64Array)), [0.1, -1e300]);
    // Any array-like, not only arrays.
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.F32, 2).set({ length: 2, 0: 4, 1: 5 }).get(Float32Array)), [4, 5]);
  });

  test("f16: IEEE half bits, round to nearest", () => {
    // 1 = 0x3C00, 0.5 = 0x3800, -2 = 0xC000, 65504 (largest half) = 0x7BFF;
    // 1/3 = 0.25 · (1 + 341.33/1024) → mantissa 341 = 0x155 → 0x3555.
    const t = ctx.newTensor1d(Type.F16, 5).set([1, 0.5, -2, 65504, 1 / 3]);
    assert.deepEqual(Array.from(t.view(Uint16Array)), [0x3c00, 0x3800, 0xc000, 0x7bff, 0x3555]);
  });

  test("bf16: the top 16 bits of the f32, ties to even", () => {
    // 1 = 0x3F800000 → 0x3F80; -2 → 0xC000; 3.140625 = 0x40490000 → 0x4049;
    // 1 + 2^-8 = 0x3F808000: a tie, the even 0x3F80; 1 + 3·2^-8 = 0x3F818000: a tie, the even 0x3F82.
    const t = ctx.newTensor1d(Type.BF16, 5).set([1, -2, 3.140625, 1 + 2 ** -8, 1 + 3 * 2 ** -8]);
    assert.deepEqual(Array.from(t.view(Uint16Array)), [0x3f80, 0xc000, 0x4049, 0x3f80, 0x3f82]);
  });

  test("integer types take integers in their range", () => {
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.I8, 3).set([-128, 127, 0]).get(Int8Array)), [-128, 127, 0]);
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.I16, 2).set([-32768, 32767]).get(Int16Array)), [-32768, 32767]);
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.I32, 2).set([-(2 ** 31), 2 ** 31 - 1]).get(Int32Array)), [-(2 ** 31), 2 ** 31 - 1]);
    assert.deepEqual(Array.from(ctx.newTensor1d(Type.I64, 2).set([2 ** 53 - 1, -5]).get(BigInt64Array)), [9007199254740991n, -5n]);
  });

  test("an element the type cannot hold is an ArgumentError naming it, not a silent wrap", () => {
    assert.throws(() => ctx.newTensor1d(Type.I8, 2).set([1, 128]), (e: Error) => e instanceof ArgumentError && /set: values\[1\] must be an integer in -128\.\.127/.test(e.message));
    assert.throws(() => ctx.newTensor1d(Type.I32, 1).set([1.5]), ArgumentError);
    assert.throws(() => ctx.newTensor1d(Type.I64, 1).set([2 ** 53]), ArgumentError);
    assert.throws(() => ctx.newTensor1d(Type.F32, 2).set([1, "2" as unknown as number]), /values\[1\] must be a number, got string/);
  });

  test("a wrong length is a BoundsError; a quantized type says to quantize", () => {
    assert.throws(() => ctx.newTensor1d(Type.F32, 3).set([1, 2]), BoundsError);
    assert.throws(() => ctx.newTensor1d(Type.Q4_0, 32).set(new Array(32).fill(0)), (e: Error) => e instanceof GgmlTypeError && /quantize\(\)/.test(e.message));
  });
});

describe("typeName", () => {
  test("ggml's own names", () => {
    assert.equal(typeName(Type.F32), "f32");
    assert.equal(typeName(Type.BF16), "bf16");
    assert.equal(typeName(Type.Q8_0), "q8_0");
    assert.equal(typeName(Type.Q4_K), "q4_K");
    assert.equal(typeName(Type.IQ2_XXS), "iq2_xxs");
  });

  test("every Type member has one, its key but for case", () => {
    for (const [key, value] of Object.entries(Type)) {
      if (key !== "COUNT") assert.equal(typeName(value).toUpperCase(), key, key);
    }
  });

  test("a value that is not a Type is an ArgumentError", () => {
    assert.throws(() => typeName(999 as Type), (e: Error) => e instanceof ArgumentError && /^typeName: type must be a Type/.test(e.message));
  });
});

describe("argument messages name the call", () => {
  const a = ctx.newTensor1d(Type.F32, 4);
  const cases: [string, () => unknown, RegExp][] = [
    ["generated op, int64 parameter", () => ctx.newTensor1d(Type.F32, 1.5), /^newTensor1d: ne0 must be a safe integer, got 1\.5$/],
    ["generated op, second parameter", () => ctx.reshape2d(a, 2, 2.5), /^reshape2d: ne1 must be a safe integer/],
    ["generated op, enum parameter", () => ctx.newTensor1d(999 as Type, 1), /^newTensor1d: type must be a Type/],
    ["generated op, size_t parameter", () => ctx.view1d(a, 2, -1), /^view1d: offset must be a non-negative safe integer/],
    ["Graph.compute nThreads range", () => ctx.newGraph().buildForwardExpand(ctx.relu(a)).compute({ nThreads: 0 }), /^compute: nThreads must be in 1\.\.512, got 0$/],
    ["Graph.compute nThreads integer", () => ctx.newGraph().compute({ nThreads: 1.5 }), /^compute: nThreads must be a 32-bit integer/],
    ["Backend.setNThreads", () => Backend.cpu().setNThreads(513), /^setNThreads: nThreads must be in 1\.\.512/],
    ["Threadpool", () => new Threadpool({ nThreads: 0 }), /^Threadpool: nThreads must be in 1\.\.512/],
    ["Context memSize", () => new Context({ memSize: -1 }), /^Context: memSize must be/],
  ];
  for (const [name, fn, message] of cases) {
    test(name, () => assert.throws(fn, (e: Error) => e instanceof ArgumentError && message.test(e.message)));
  }
});
