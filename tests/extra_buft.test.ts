// The CPU's extra buffer types (CPU_REPACK): listed, asked which weights they take, a q4_K
// matmul through a repacked weight equal to the plain buffer's, and the misuse the binding
// refuses (a repacked tensor read back, written in part, or multiplied by a strided b).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  allocCtxTensors, ArgumentError, Backend, BackendDevType, Context, cpuBufferType, deviceByType, extraBufferTypeFor, extraBufferTypes,
  type BufferType, quantize, Sched, type Tensor, tensorCopy, tensorGet, tensorGetBytes, tensorMemset, tensorSet, Type, UnsupportedOpError,
} from "../src/mod.ts";

const cpuDev = deviceByType(BackendDevType.CPU)!;
const extra = extraBufferTypes();
const repack = extra.find((b) => b.name === "CPU_REPACK");
// CPU_REPACK is compiled in on x86-64 and AArch64; it takes q4_K with AVX2 only (rows a multiple of 8).
const q4k = repack && extraBufferTypeFor(cpuDev, extra, Type.Q4_K, [512, 64]) === repack;

test("the CPU lists its extra buffer types; the list is stable and not the default buffer type", () => {
  assert.ok(Array.isArray(extra));
  assert.deepEqual(extraBufferTypes().map((b) => b.pointer), extra.map((b) => b.pointer));
  assert.deepEqual(extraBufferTypes(cpuDev).map((b) => b.pointer), extra.map((b) => b.pointer));
  for (const b of extra) {
    assert.notEqual(b.pointer, cpuBufferType().pointer);
    assert.equal(b.isHost, false); // its data is not the tensor's bytes
    assert.ok(cpuDev.supportsBufferType(b));
  }
  if (process.arch === "x64" || process.arch === "arm64") assert.ok(repack, `CPU_REPACK among ${extra.map((b) => b.name)}`);
});

test("extraBufferTypeFor: the buffer type's own gate (types, shapes)", { skip: !repack }, () => {
  assert.equal(extraBufferTypeFor(cpuDev, extra, Type.F32, [512, 64]), undefined);
  assert.equal(extraBufferTypeFor(cpuDev, extra, Type.Q8_0, [512, 64]), undefined);
  assert.equal(extraBufferTypeFor(cpuDev, extra, Type.Q6_K, [512, 64]), undefined);
  assert.equal(extraBufferTypeFor(cpuDev, extra, Type.Q4_K, [512, 60]), undefined, "rows not a multiple of 8");
  assert.equal(extraBufferTypeFor(cpuDev, [], Type.Q4_K, [512, 64]), undefined);
  assert.throws(() => extraBufferTypeFor(cpuDev, extra, Type.Q4_K, []), ArgumentError);
});

/** y = w·x with the q4_K weight in a buffer of `buft` (N columns of x), through a Sched. */
function matmul(buft: BufferType, wq: Uint8Array, K: number, M: number, x: Float32Array, N: number): Float32Array {
  using cpu = Backend.cpu({ nThreads: 2 });
  const wc = new Context({ memSize: 1 << 16, noAlloc: true });
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  const w = wc.newTensor(Type.Q4_K, [K, M]);
  const wb = allocCtxTensors(wc, buft)!;
  try {
    tensorSet(w, wq);
    const xt = g.newTensor(Type.F32, [K, N]).setInput();
    const y = g.mulMat(w, xt).setOutput();
    const gf = g.newGraph().buildForwardExpand(y);
    using sched = new Sched({ backends: [cpu], graphSize: 16 });
    sched.allocGraph(gf);
    tensorSet(xt, x);
    sched.graphCompute(gf);
    return tensorGet(y) as Float32Array;
  } finally {
    wb.free();
    g.free();
    wc.free();
  }
}

function rng(seed: number): () => number {
  return () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
}

// Both paths quantize x to q8_K and take the same integer dot products; only the order of the
// float sums of block scales differs (measured nMSE ~1e-13).
const MATMUL_NMSE = 1e-10;

test(`a q4_K matmul with the weight repacked equals the plain buffer's (nMSE ≤ ${MATMUL_NMSE}), gemv and gemm`, { skip: !q4k }, () => {
  const K = 512, M = 64, r = rng(3);
  const wq = quantize(Type.Q4_K, Float32Array.from({ length: K * M }, r), { nPerRow: K });
  for (const N of [1, 3, 4, 13, 64]) {
    const x = Float32Array.from({ length: K * N }, r);
    const a = matmul(cpuBufferType(), wq, K, M, x, N), b = matmul(repack!, wq, K, M, x, N);
    let num = 0, den = 0;
    for (let i = 0; i < a.length; i++) num += (a[i] - b[i]) ** 2, den += a[i] ** 2;
    assert.ok(num / den <= MATMUL_NMSE, `N = ${N}: nMSE ${(num / den).toExponential(2)}`);
  }
});

test("a repacked tensor is written whole only, never read back; a tensor the type does not take is refused", { skip: !q4k }, () => {
  const ctx = new Context({ memSize: 1 << 16, noAlloc: true });
  const w = ctx.newTensor(Type.Q4_K, [512, 64]), other = ctx.newTensor(Type.Q8_0, [512, 64]);
  const buf = allocCtxTensors(ctx, repack!)!;
  const plainCtx = new Context({ memSize: 1 << 16, noAlloc: true });
  const p = plainCtx.newTensor(Type.Q4_K, [512, 64]);
  const plainBuf = allocCtxTensors(plainCtx, cpuBufferType())!;
  try {
    const bytes = new Uint8Array(w.nbytes);
    assert.throws(() => tensorSet(w, bytes.subarray(0, 144)), /whole/);
    assert.throws(() => tensorSet(w, bytes.subarray(144), 144), /whole/);
    assert.throws(() => tensorSet(other, new Uint8Array(other.nbytes)), /does not take/);
    tensorSet(w, bytes);
    assert.throws(() => tensorGet(w), /cannot be read back/);
    assert.throws(() => tensorGetBytes(w, 0, 16), /cannot be read back/);
    assert.throws(() => tensorMemset(w, 0), /cannot be read back/);
    assert.throws(() => tensorCopy(w, p), /cannot be read back/);
    tensorCopy(p, w); // a whole write
  } finally {
    buf.free();
    ctx.free();
    plainBuf.free();
    plainCtx.free();
  }
});

test("a repacked weight times a strided or f16 b, or a view of it, is refused before compute (repack's kernel would read it wrongly)", { skip: !q4k }, () => {
  using cpu = Backend.cpu({ nThreads: 1 });
  const wc = new Context({ memSize: 1 << 16, noAlloc: true });
  const w = wc.newTensor(Type.Q4_K, [256, 8]);
  const wb = allocCtxTensors(wc, repack!)!;
  try {
    tensorSet(w, new Uint8Array(w.nbytes));
    // [a, b] pairs: a strided b, an f16 b, a batched b, and a view of the repacked weight (rows interleaved).
    const cases: ((g: Context) => [Tensor, Tensor])[] = [
      (g) => [w, g.view2d(g.newTensor(Type.F32, [512, 4]), 256, 4, 512 * 4, 0)],
      (g) => [w, g.newTensor(Type.F16, [256, 4])],
      (g) => [w, g.newTensor(Type.F32, [256, 4, 2])],
      (g) => [g.view2d(w, 256, 4, w.nb(1), 0), g.newTensor(Type.F32, [256, 4])],
    ];
    for (const make of cases) {
      const g = new Context({ memSize: 1 << 20, noAlloc: true });
      try {
        const [a, b] = make(g);
        const gf = g.newGraph().buildForwardExpand(g.mulMat(a, b));
        const gb = allocCtxTensors(g, cpu);
        try {
          assert.throws(() => cpu.graphCompute(gf), UnsupportedOpError);
          using sched = new Sched({ backends: [cpu], graphSize: 16 });
          assert.throws(() => sched.allocGraph(gf), UnsupportedOpError);
        } finally {
          gb?.free();
        }
      } finally {
        g.free();
      }
    }
  } finally {
    wb.free();
    wc.free();
  }
});
