// quantize / dequantize: q8_0 against a reference computed here from the format (blocks of 32:
// d = max|x| / 127 stored as f16, q = round(x / d)), round-trip error bounds for every type
// ggml quantizes to, and the misuse that would reach an assert in wsp_ggml_wsp_quantize_chunk.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ArgumentError, canQuantize, dequantize, GgmlTypeError, quantize, requiresImatrix, rowSize, ShapeError, Type } from "../mod.ts";

/** Normal(0, 1) samples from a seeded generator (Park–Miller + Box–Muller). */
function gaussian(n: number, seed = 1): Float32Array {
  let s = seed;
  const r = () => (s = (s * 16807) % 2147483647) / 2147483647;
  return Float32Array.from({ length: n }, () => Math.sqrt(-2 * Math.log(r() || 1e-12)) * Math.cos(2 * Math.PI * r()));
}

/** IEEE half-precision bits to a number. */
function halfToNumber(h: number): number {
  const e = (h >> 10) & 0x1f, m = h & 0x3ff, sign = h & 0x8000 ? -1 : 1;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

const relRms = (x: Float32Array, y: Float32Array) => {
  let e = 0, s = 0;
  for (let i = 0; i < x.length; i++) e += (x[i] - y[i]) ** 2, s += x[i] ** 2;
  return Math.sqrt(e / s);
};

test("q8_0 matches the format's definition block by block", () => {
  const x = gaussian(32 * 64, 7);
  x[5] = 0; // a zero, and a block of zeros (d = 0)
  x.fill(0, 32 * 3, 32 * 4);
  const q = quantize(Type.Q8_0, x, { nPerRow: 32 * 8 });
  assert.equal(q.length, 64 * 34);
  assert.equal(rowSize(Type.Q8_0, 256), 8 * 34);
  const view = new DataView(q.buffer, q.byteOffset);
  let off = 0;
  for (let b = 0; b < 64; b++) {
    const block = x.subarray(32 * b, 32 * b + 32);
    const amax = block.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const d = amax / 127;
    const stored = halfToNumber(view.getUint16(34 * b, true));
    assert.ok(Math.abs(stored - d) <= d * 2 ** -11, `block ${b}: d ${stored} vs ${d}`);
    for (let i = 0; i < 32; i++) {
      const want = d === 0 ? 0 : Math.round(block[i] / d);
      const got = view.getInt8(34 * b + 2 + i);
      assert.ok(Math.abs(got - want) <= 1, `block ${b}[${i}]: ${got} vs ${want}`);
      if (got !== want) off++;
    }
  }
  assert.ok(off <= 4, `${off} values differ by one from the reference (ties of x/d)`);
  const y = dequantize(Type.Q8_0, q, 256);
  for (let i = 0; i < x.length; i++) {
    const b = Math.floor(i / 32);
    const d = halfToNumber(view.getUint16(34 * b, true));
    assert.equal(y[i], Math.fround(d * view.getInt8(34 * b + 2 + (i % 32))), `element ${i}`);
  }
});

/** Relative RMS error bounds of the round trip on normal data (about 1.5× ggml's measured error). */
const BOUNDS: [keyof typeof Type, number][] = [
  ["F32", 0], ["F16", 5e-4], ["BF16", 3e-3], ["Q8_0", 0.009], ["Q6_K", 0.03], ["Q5_1", 0.06], ["Q5_K", 0.06], ["Q5_0", 0.07],
  ["Q4_K", 0.11], ["Q4_1", 0.12], ["IQ4_NL", 0.12], ["IQ4_XS", 0.12], ["Q4_0", 0.13], ["MXFP4", 0.17], ["Q3_K", 0.23],
  ["IQ3_S", 0.25], ["IQ3_XXS", 0.33], ["Q2_K", 0.45], ["IQ1_M", 0.85],
];
/** Types whose first use builds ggml's search grids (`iq2xs_init_impl`: seconds of CPU each). */
const SLOW: [keyof typeof Type, number][] = [["IQ2_S", 0.4], ["IQ2_XS", 0.45], ["IQ2_XXS", 0.5], ["IQ1_S", 0.7]];
const seen = new Set<number>();

function roundTrip(bounds: [keyof typeof Type, number][]): void {
  const x = gaussian(256 * 16, 3);
  const imatrix = new Float32Array(256).fill(1);
  for (const [name, bound] of bounds) {
    const type = Type[name];
    seen.add(type);
    const q = quantize(type, x, { nPerRow: 256, imatrix: requiresImatrix(type) ? imatrix : undefined });
    assert.equal(q.length, 16 * rowSize(type, 256), name);
    const err = relRms(x, dequantize(type, q, 256));
    assert.ok(err <= bound, `${name}: relative RMS error ${err} > ${bound}`);
  }
}

test("round trip error within bounds: IQ types with search grids (slow first use)", { timeout: 120_000 }, () => {
  roundTrip(SLOW);
});

test("round trip error within bounds for every other type ggml quantizes to", () => {
  roundTrip(BOUNDS);
  const x = gaussian(256 * 16, 3);
  // The ternary types represent {-1, 0, 1} × scale exactly (up to the f16 scale).
  const ternary = Float32Array.from(x, (v) => Math.sign(Math.round(v)) * 0.75);
  for (const name of ["TQ1_0", "TQ2_0"] as const) {
    seen.add(Type[name]);
    const err = relRms(ternary, dequantize(Type[name], quantize(Type[name], ternary, { nPerRow: 256 }), 256));
    assert.ok(err <= 1e-3, `${name}: ${err}`);
  }
  const all = Object.values(Type).filter((t) => t !== Type.COUNT && canQuantize(t));
  assert.deepEqual(all.filter((t) => !seen.has(t)), [], "a quantizable type without a bound");
});

test("an importance matrix makes the weighted elements more precise", () => {
  const x = gaussian(256 * 4, 11);
  const im = Float32Array.from({ length: 256 }, (_, i) => (i % 2 === 0 ? 100 : 0.01));
  const plain = quantize(Type.Q4_K, x, { nPerRow: 256 });
  const weighted = quantize(Type.Q4_K, x, { nPerRow: 256, imatrix: im });
  assert.notDeepEqual(plain, weighted);
  const even = (a: Float32Array) => a.filter((_, i) => i % 2 === 0);
  const errPlain = relRms(even(x), even(dequantize(Type.Q4_K, plain, 256)));
  const errWeighted = relRms(even(x), even(dequantize(Type.Q4_K, weighted, 256)));
  assert.ok(errWeighted < errPlain, `the heavily weighted elements are more precise: ${errWeighted} vs ${errPlain}`);
});

test("misuse: typed errors before ggml's asserts", () => {
  const x = new Float32Array(256);
  const cases: [string, () => unknown, new (...a: never[]) => Error][] = [
    ["requires an imatrix", () => quantize(Type.IQ2_XXS, x, { nPerRow: 256 }), GgmlTypeError],
    ["requires an imatrix (IQ1_S)", () => quantize(Type.IQ1_S, x), GgmlTypeError],
    ["imatrix of the wrong length", () => quantize(Type.IQ2_XS, x, { nPerRow: 256, imatrix: new Float32Array(3) }), ArgumentError],
    ["row not a multiple of the block", () => quantize(Type.Q8_0, new Float32Array(48)), ShapeError],
    ["K type row of 32", () => quantize(Type.Q4_K, new Float32Array(64), { nPerRow: 32 }), ShapeError],
    ["rows do not divide the data", () => quantize(Type.Q8_0, new Float32Array(96), { nPerRow: 64 }), ShapeError],
    ["nPerRow 0", () => quantize(Type.Q8_0, x, { nPerRow: 0 }), ArgumentError],
    ["not a Float32Array", () => quantize(Type.Q8_0, new Float64Array(32) as never), GgmlTypeError],
    ["a type ggml does not quantize to", () => quantize(Type.Q8_1, x), GgmlTypeError],
    ["an integer type", () => quantize(Type.I32, x), GgmlTypeError],
    ["not a type", () => quantize(77 as Type, x), ArgumentError],
    ["dequantize a partial row", () => dequantize(Type.Q8_0, new Uint8Array(35), 32), ShapeError],
    ["dequantize from a Float32Array", () => dequantize(Type.Q8_0, new Float32Array(34) as never, 32), GgmlTypeError],
    ["rowSize of a partial block", () => rowSize(Type.Q4_0, 33), ShapeError],
  ];
  for (const [name, call, cls] of cases) assert.throws(call, cls, name);
  assert.deepEqual(quantize(Type.Q8_0, new Float32Array(0), { nPerRow: 32 }), new Uint8Array(0));
  assert.deepEqual(dequantize(Type.F16, quantize(Type.F16, new Float32Array([1, -2])), 2), new Float32Array([1, -2]));
});
