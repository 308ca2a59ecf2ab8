// The op comparison harness of tests/backend_ops.test.ts, after ggml's test-backend-ops, over the
// public API: each case builds one small graph twice — once for a reference side, once for the side
// under test — fills its inputs with the same seeded random data on both, computes each side and
// compares the outputs by normalized mean squared error (nMSE = Σ(ref − got)² / Σ ref², NaN anywhere
// or an infinity that differs fails), exactly where the tolerance is 0. A case whose graph has a
// node the side under test (or the reference) does not support is skipped, not failed.
//
// A side is a backend computed directly (`Backend.graphCompute`, every tensor in that backend's
// buffer, as test-backend-ops does) or through a scheduler over backends (`Sched`, which allocates
// the intermediate tensors itself and may reuse their memory).
import { createRng } from "../src/llm/sampler.ts";
import {
  allocCtxTensors,
  Backend,
  type Buffer,
  Context,
  dequantize,
  type Graph,
  Op,
  OpPool,
  quantize,
  ROPE_TYPE_NEOX,
  Sched,
  SortOrder,
  type Tensor,
  tensorGet,
  tensorGetBytes,
  tensorSet,
  Type,
} from "../src/mod.ts";

/** nMSE limits of ggml's test-backend-ops. */
export const TOL = { default: 1e-7, matmul: 5e-4, exact: 0 } as const;

/** Fills an input of `n` elements (in its f32 / i32 / i64 form) from `rand` (uniform in [0, 1)). */
export type Init = (n: number, rand: () => number, shape: readonly number[]) => Float32Array | Int32Array | BigInt64Array;

/** What a case's build function is given. */
export interface Builder {
  /** The context for the ops (no data: the side allocates it). */
  readonly ctx: Context;
  /** A new input, in its own context, set from `init` (default: uniform in [-1, 1]) on both sides alike. */
  input(type: Type, shape: readonly number[], init?: Init): Tensor;
}

/** One comparison. */
export interface OpCase {
  /** Unique, descriptive. */
  readonly name: string;
  /** The ggml op it tests (what "ops compared" counts). */
  readonly op: string;
  /** nMSE limit; 0: exactly equal. */
  readonly tol: number;
  /** Builds the graph's output from inputs made with `b.input`. */
  build(b: Builder): Tensor;
}

export const uniform = (lo: number, hi: number): Init => (n, r) => Float32Array.from({ length: n }, () => lo + (hi - lo) * r());
export const ints = (lo: number, hi: number): Init => (n, r) => Int32Array.from({ length: n }, () => lo + Math.floor(r() * (hi - lo + 1)));
/** Row indices in 0..rows-1, distinct within each `per` consecutive entries (set_rows, mul_mat_id). */
export const distinctRows = (rows: number, per: number, i64 = false): Init => (n, r) => {
  const out = new Int32Array(n);
  for (let i0 = 0; i0 < n; i0 += per) {
    const pool = Array.from({ length: rows }, (_, i) => i);
    for (let j = 0; j < per && i0 + j < n; j++) out[i0 + j] = pool.splice(Math.floor(r() * pool.length), 1)[0];
  }
  return i64 ? BigInt64Array.from(out, (v) => BigInt(v)) : out;
};
/** Floats distinct within each row (no ties for argmax / argsort): a shuffled ramp in [-1, 1]. */
export const distinctFloats: Init = (n, r, shape) => {
  const ne0 = shape[0], out = new Float32Array(n);
  for (let i0 = 0; i0 < n; i0 += ne0) {
    const row = Array.from({ length: ne0 }, (_, i) => -1 + (2 * (i + 0.5)) / ne0);
    for (let i = ne0 - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [row[i], row[j]] = [row[j], row[i]];
    }
    out.set(row, i0);
  }
  return out;
};

/** mulberry32 (the sampler's): the inputs' random numbers, from a seed. */
export const rng = (seed: number): () => number => createRng(seed);

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const QUANTIZED = new Set<number>([Type.Q4_0, Type.Q4_1, Type.Q5_0, Type.Q5_1, Type.Q8_0, Type.Q2_K, Type.Q3_K, Type.Q4_K, Type.Q5_K, Type.Q6_K]);
const TYPE_NAME: Record<number, string> = { [Type.F32]: "f32", [Type.F16]: "f16", [Type.BF16]: "bf16", [Type.Q4_0]: "q4_0", [Type.Q8_0]: "q8_0", [Type.Q4_K]: "q4_K", [Type.I32]: "i32", [Type.I64]: "i64" };
const tn = (t: Type) => TYPE_NAME[t] ?? String(t);
const sh = (s: readonly number[]) => `[${s.join(",")}]`;

// ---- the cases ----

function unary(): OpCase[] {
  const pos = uniform(0.1, 2);
  const list: [string, (c: Context, a: Tensor) => Tensor, Init?][] = [
    ["abs", (c, a) => c.abs(a)], ["sgn", (c, a) => c.sgn(a)], ["neg", (c, a) => c.neg(a)], ["step", (c, a) => c.step(a)],
    ["tanh", (c, a) => c.tanh(a)], ["elu", (c, a) => c.elu(a)], ["relu", (c, a) => c.relu(a)], ["sigmoid", (c, a) => c.sigmoid(a)],
    ["gelu", (c, a) => c.gelu(a)], ["gelu_erf", (c, a) => c.geluErf(a)], ["gelu_quick", (c, a) => c.geluQuick(a)], ["silu", (c, a) => c.silu(a)],
    ["hardswish", (c, a) => c.hardswish(a)], ["hardsigmoid", (c, a) => c.hardsigmoid(a)], ["exp", (c, a) => c.exp(a)],
    ["sqr", (c, a) => c.sqr(a)], ["sqrt", (c, a) => c.sqrt(a), pos], ["log", (c, a) => c.log(a), pos], ["sin", (c, a) => c.sin(a)],
    ["cos", (c, a) => c.cos(a)], ["leaky_relu", (c, a) => c.leakyRelu(a, 0.1, false)],
  ];
  const out: OpCase[] = [];
  for (const [op, f, init] of list) {
    for (const type of [Type.F32, Type.F16]) {
      if (type === Type.F16 && !["abs", "neg", "relu", "gelu", "silu", "tanh", "exp", "sqr"].includes(op)) continue;
      const shape = [37, 5, 3];
      out.push({ name: `${op} ${tn(type)} ${sh(shape)}`, op: op.toUpperCase(), tol: TOL.default, build: (b) => f(b.ctx, b.input(type, shape, init)) });
    }
  }
  return out;
}

function binary(): OpCase[] {
  const ops: [string, (c: Context, a: Tensor, b: Tensor) => Tensor, Init?][] = [
    ["add", (c, a, b) => c.add(a, b)], ["sub", (c, a, b) => c.sub(a, b)], ["mul", (c, a, b) => c.mul(a, b)],
    ["div", (c, a, b) => c.div(a, b), uniform(0.5, 2)],
  ];
  const shapes: [number[], number[]][] = [
    [[32, 6, 3, 2], [32, 6, 3, 2]], // same shape
    [[32, 6, 3, 2], [32, 1, 3, 1]], // broadcast over rows and ne3
    [[32, 6, 3, 2], [32, 6, 1, 1]], // broadcast over ne2, ne3
    [[16, 5, 4], [1, 5, 1]], // a scalar per row
  ];
  const out: OpCase[] = [];
  for (const [op, f, initB] of ops) {
    for (const [sa, sb] of shapes) {
      out.push({ name: `${op} f32 ${sh(sa)} ${sh(sb)}`, op: op.toUpperCase(), tol: TOL.default, build: (b) => f(b.ctx, b.input(Type.F32, sa), b.input(Type.F32, sb, initB)) });
    }
  }
  out.push({ name: `add f16+f32 ${sh([32, 4])}`, op: "ADD", tol: TOL.default, build: (b) => b.ctx.add(b.input(Type.F16, [32, 4]), b.input(Type.F32, [32, 4])) });
  out.push({ name: "repeat [8,3] to [16,6,2]", op: "REPEAT", tol: TOL.default, build: (b) => b.ctx.repeat(b.input(Type.F32, [8, 3]), b.input(Type.F32, [16, 6, 2])) });
  out.push({ name: "add1 [16,4]", op: "ADD1", tol: TOL.default, build: (b) => b.ctx.add1(b.input(Type.F32, [16, 4]), b.input(Type.F32, [1])) });
  out.push({ name: "acc [16,8] <- [8,3]", op: "ACC", tol: TOL.default, build: (b) => { const a = b.input(Type.F32, [16, 8]); return b.ctx.acc(a, b.input(Type.F32, [8, 3]), a.nb(1), a.nb(2), a.nb(3), 2 * 4); } });
  return out;
}

function glu(): OpCase[] {
  return [
    { name: "swiglu [64,5]", op: "GLU", tol: TOL.default, build: (b) => b.ctx.swiglu(b.input(Type.F32, [64, 5])) },
    { name: "geglu [64,5]", op: "GLU", tol: TOL.default, build: (b) => b.ctx.geglu(b.input(Type.F32, [64, 5])) },
    { name: "reglu [64,5]", op: "GLU", tol: TOL.default, build: (b) => b.ctx.reglu(b.input(Type.F32, [64, 5])) },
    { name: "swiglu split [32,5]", op: "GLU", tol: TOL.default, build: (b) => b.ctx.swigluSplit(b.input(Type.F32, [32, 5]), b.input(Type.F32, [32, 5])) },
    { name: "geglu split [32,5]", op: "GLU", tol: TOL.default, build: (b) => b.ctx.gegluSplit(b.input(Type.F32, [32, 5]), b.input(Type.F32, [32, 5])) },
  ];
}

/** The matmul types: f32, f16, q4_0, q8_0 and one K-quant. */
export const MATMUL_TYPES = [Type.F32, Type.F16, Type.Q4_0, Type.Q8_0, Type.Q4_K] as const;

function matmul(): OpCase[] {
  const out: OpCase[] = [];
  // [k, m, ne2, ne3] x [k, n, ne2', ne3']: a vector, a few columns, a batch broadcast over ne2 and ne3.
  const shapes: [number[], number[]][] = [
    [[256, 16], [256, 1]],
    [[256, 16], [256, 9]],
    [[256, 33], [256, 17]],
    [[256, 12, 2, 1], [256, 5, 4, 3]],
    [[256, 12, 2, 1], [256, 5, 4, 1]], // a batch broadcast over ne2 only
  ];
  for (const type of MATMUL_TYPES) {
    for (const [sa, sb] of shapes) {
      out.push({ name: `mul_mat ${tn(type)} ${sh(sa)} x f32 ${sh(sb)}`, op: "MUL_MAT", tol: TOL.matmul, build: (b) => b.ctx.mulMat(b.input(type, sa), b.input(Type.F32, sb)) });
    }
  }
  out.push({ name: "mul_mat f16 [64,8] x f16 [64,4]", op: "MUL_MAT", tol: TOL.matmul, build: (b) => b.ctx.mulMat(b.input(Type.F16, [64, 8]), b.input(Type.F16, [64, 4])) });
  out.push({ name: "mul_mat f32 transposed b [64,8] x [7,64]^T", op: "MUL_MAT", tol: TOL.matmul, build: (b) => b.ctx.mulMat(b.input(Type.F32, [64, 8]), b.ctx.transpose(b.input(Type.F32, [7, 64]))) });
  for (const type of [Type.F32, Type.F16, Type.Q4_0, Type.Q8_0]) {
    for (const [nUsed, nTok] of [[2, 1], [2, 6], [4, 3]]) {
      const nExp = 4;
      out.push({
        name: `mul_mat_id ${tn(type)} ${nExp} experts [256,16] x f32 [256,${nUsed},${nTok}]`, op: "MUL_MAT_ID", tol: TOL.matmul,
        build: (b) => b.ctx.mulMatId(b.input(type, [256, 16, nExp]), b.input(Type.F32, [256, nUsed, nTok]), b.input(Type.I32, [nUsed, nTok], distinctRows(nExp, nUsed))),
      });
    }
  }
  out.push({ name: "out_prod f32 [16,8] x [12,8]", op: "OUT_PROD", tol: TOL.matmul, build: (b) => b.ctx.outProd(b.input(Type.F32, [16, 8]), b.input(Type.F32, [12, 8])) });
  out.push({ name: "out_prod f32 [16,8,2] x [12,8,4]", op: "OUT_PROD", tol: TOL.matmul, build: (b) => b.ctx.outProd(b.input(Type.F32, [16, 8, 2]), b.input(Type.F32, [12, 8, 4])) });
  out.push({ name: "out_prod q8_0 [32,8] x [12,8]", op: "OUT_PROD", tol: TOL.matmul, build: (b) => b.ctx.outProd(b.input(Type.Q8_0, [32, 8]), b.input(Type.F32, [12, 8])) });
  return out;
}

function rows(): OpCase[] {
  const out: OpCase[] = [];
  for (const type of [Type.F32, Type.F16, Type.Q4_0, Type.Q8_0]) {
    out.push({ name: `get_rows ${tn(type)} [64,10] by 6`, op: "GET_ROWS", tol: TOL.default, build: (b) => b.ctx.getRows(b.input(type, [64, 10]), b.input(Type.I32, [6], ints(0, 9))) });
  }
  out.push({ name: "get_rows f32 [32,10,3] by [4,3]", op: "GET_ROWS", tol: TOL.default, build: (b) => b.ctx.getRows(b.input(Type.F32, [32, 10, 3]), b.input(Type.I32, [4, 3], ints(0, 9))) });
  for (const dst of [Type.F32, Type.F16, Type.Q8_0]) {
    for (const it of [Type.I64, Type.I32]) {
      out.push({
        name: `set_rows ${tn(dst)} [64,10] <- 4 rows (${tn(it)} ids)`, op: "SET_ROWS", tol: TOL.default,
        build: (b) => b.ctx.setRows(b.input(dst, [64, 10]), b.input(Type.F32, [64, 4]), b.input(it, [4], distinctRows(10, 4, it === Type.I64))),
      });
    }
  }
  return out;
}

function copies(): OpCase[] {
  const out: OpCase[] = [];
  const pairs: [Type, Type][] = [[Type.F32, Type.F32], [Type.F32, Type.F16], [Type.F16, Type.F32], [Type.F16, Type.F16], [Type.F32, Type.Q8_0], [Type.F32, Type.Q4_0]];
  for (const [from, to] of pairs) {
    out.push({ name: `cpy ${tn(from)} -> ${tn(to)} [64,6,2]`, op: "CPY", tol: TOL.default, build: (b) => b.ctx.cpy(b.input(from, [64, 6, 2]), b.input(to, [64, 6, 2])) });
  }
  out.push({ name: "cpy f32 permuted -> f32", op: "CPY", tol: TOL.default, build: (b) => b.ctx.cpy(b.ctx.permute(b.input(Type.F32, [8, 6, 4]), 1, 2, 0, 3), b.input(Type.F32, [4, 8, 6])) });
  out.push({ name: "cont f32 transpose [24,9]", op: "CONT", tol: TOL.default, build: (b) => b.ctx.cont(b.ctx.transpose(b.input(Type.F32, [24, 9]))) });
  out.push({ name: "cont f16 permute [8,6,4,2]", op: "CONT", tol: TOL.default, build: (b) => b.ctx.cont(b.ctx.permute(b.input(Type.F16, [8, 6, 4, 2]), 0, 2, 1, 3)) });
  out.push({ name: "dup f32 [16,3]", op: "DUP", tol: TOL.default, build: (b) => b.ctx.dup(b.input(Type.F32, [16, 3])) });
  return out;
}

function norms(): OpCase[] {
  return [
    { name: "rms_norm [64,5,3] eps 1e-6", op: "RMS_NORM", tol: TOL.default, build: (b) => b.ctx.rmsNorm(b.input(Type.F32, [64, 5, 3]), 1e-6) },
    { name: "rms_norm [200,4] eps 1e-5", op: "RMS_NORM", tol: TOL.default, build: (b) => b.ctx.rmsNorm(b.input(Type.F32, [200, 4]), 1e-5) },
    { name: "rms_norm * w (fused pattern) [64,5]", op: "RMS_NORM", tol: TOL.default, build: (b) => b.ctx.mul(b.ctx.rmsNorm(b.input(Type.F32, [64, 5]), 1e-6), b.input(Type.F32, [64])) },
    { name: "norm [64,5,3] eps 1e-5", op: "NORM", tol: TOL.default, build: (b) => b.ctx.norm(b.input(Type.F32, [64, 5, 3]), 1e-5) },
    { name: "group_norm [8,8,16] 4 groups", op: "GROUP_NORM", tol: TOL.default, build: (b) => b.ctx.groupNorm(b.input(Type.F32, [8, 8, 16]), 4, 1e-6) },
    { name: "l2_norm [64,5]", op: "L2_NORM", tol: TOL.default, build: (b) => b.ctx.l2Norm(b.input(Type.F32, [64, 5]), 1e-12) },
  ];
}

function attention(): OpCase[] {
  const out: OpCase[] = [];
  const maskInit = uniform(-1, 0);
  for (const [withMask, scale, maxBias] of [[false, 1, 0], [true, 0.5, 0], [true, 0.125, 8]] as const) {
    for (const mt of withMask ? [Type.F32, Type.F16] : [Type.F32]) {
      out.push({
        name: `soft_max [32,6,4] ${withMask ? `mask ${tn(mt)}` : "no mask"} scale ${scale} max_bias ${maxBias}`, op: "SOFT_MAX", tol: TOL.default,
        build: (b) => b.ctx.softMaxExt(b.input(Type.F32, [32, 6, 4]), withMask ? b.input(mt, [32, 6], maskInit) : null, scale, maxBias),
      });
    }
  }
  out.push({ name: "soft_max [1000,3]", op: "SOFT_MAX", tol: TOL.default, build: (b) => b.ctx.softMax(b.input(Type.F32, [1000, 3], uniform(-5, 5))) });
  out.push({ name: "diag_mask_inf [8,8,2] past 2", op: "DIAG_MASK_INF", tol: TOL.default, build: (b) => b.ctx.diagMaskInf(b.input(Type.F32, [8, 8, 2]), 2) });
  for (const [mode, label] of [[0, "normal"], [ROPE_TYPE_NEOX, "neox"]] as const) {
    for (const type of [Type.F32, Type.F16]) {
      for (const nDims of [64, 32]) {
        out.push({
          name: `rope ${label} ${tn(type)} [64,4,5] n_dims ${nDims}`, op: "ROPE", tol: TOL.default,
          build: (b) => b.ctx.ropeExt(b.input(type, [64, 4, 5]), b.input(Type.I32, [5], ints(0, 500)), null, nDims, mode, 4096, 10000, 1, 0, 1, 32, 1),
        });
      }
    }
  }
  out.push({
    name: "rope neox f32 with freq factors [64,4,5]", op: "ROPE", tol: TOL.default,
    build: (b) => b.ctx.ropeExt(b.input(Type.F32, [64, 4, 5]), b.input(Type.I32, [5], ints(0, 500)), b.input(Type.F32, [32], uniform(1, 4)), 64, ROPE_TYPE_NEOX, 4096, 10000, 1, 0, 1, 32, 1),
  });
  // flash attention: q [d, nQ, heads, 1] f32; k, v [d, nKv, kvHeads, 1] f16; mask [nKv, nQ padded to 64] f16.
  for (const [d, nQ, nKv, heads, kvHeads, masked, maxBias, softcap] of [
    [64, 1, 32, 4, 2, true, 0, 0], [64, 7, 64, 4, 4, true, 0, 0], [128, 3, 32, 2, 1, false, 0, 0], [64, 4, 32, 4, 2, true, 8, 0], [64, 4, 32, 2, 2, true, 0, 30],
  ] as const) {
    out.push({
      name: `flash_attn_ext d ${d} q ${nQ} kv ${nKv} heads ${heads}/${kvHeads}${masked ? " mask" : ""}${maxBias ? " alibi" : ""}${softcap ? " softcap" : ""}`,
      op: "FLASH_ATTN_EXT", tol: TOL.matmul,
      build: (b) => {
        const q = b.input(Type.F32, [d, nQ, heads, 1]), k = b.input(Type.F16, [d, nKv, kvHeads, 1]), v = b.input(Type.F16, [d, nKv, kvHeads, 1]);
        const mask = masked ? b.input(Type.F16, [nKv, Math.ceil(nQ / 64) * 64, 1, 1], uniform(-1, 0)) : null;
        return b.ctx.flashAttnExt(q, k, v, mask, 1 / Math.sqrt(d), maxBias, softcap);
      },
    });
  }
  return out;
}

function reductions(): OpCase[] {
  return [
    { name: "argmax [32,10]", op: "ARGMAX", tol: TOL.exact, build: (b) => b.ctx.argmax(b.input(Type.F32, [32, 10], distinctFloats)) },
    { name: "argmax [1000,3]", op: "ARGMAX", tol: TOL.exact, build: (b) => b.ctx.argmax(b.input(Type.F32, [1000, 3], distinctFloats)) },
    { name: "count_equal i32 [64,4]", op: "COUNT_EQUAL", tol: TOL.exact, build: (b) => b.ctx.countEqual(b.input(Type.I32, [64, 4], ints(0, 3)), b.input(Type.I32, [64, 4], ints(0, 3))) },
    { name: "sum_rows [32,7,3]", op: "SUM_ROWS", tol: TOL.default, build: (b) => b.ctx.sumRows(b.input(Type.F32, [32, 7, 3])) },
    { name: "sum [32,7,3]", op: "SUM", tol: TOL.default, build: (b) => b.ctx.sum(b.input(Type.F32, [32, 7, 3])) },
    { name: "mean [32,7,3]", op: "MEAN", tol: TOL.default, build: (b) => b.ctx.mean(b.input(Type.F32, [32, 7, 3])) },
    { name: "argsort asc [16,5]", op: "ARGSORT", tol: TOL.exact, build: (b) => b.ctx.argsort(b.input(Type.F32, [16, 5], distinctFloats), SortOrder.ASC) },
    { name: "argsort desc [33,4]", op: "ARGSORT", tol: TOL.exact, build: (b) => b.ctx.argsort(b.input(Type.F32, [33, 4], distinctFloats), SortOrder.DESC) },
  ];
}

function shapes(): OpCase[] {
  const out: OpCase[] = [];
  for (const dim of [0, 1, 2, 3]) {
    const sa = [8, 5, 3, 2], sb = sa.slice();
    sb[dim] = 4;
    out.push({ name: `concat dim ${dim} ${sh(sa)} ${sh(sb)}`, op: "CONCAT", tol: TOL.default, build: (b) => b.ctx.concat(b.input(Type.F32, sa), b.input(Type.F32, sb), dim) });
  }
  out.push({ name: "scale [32,7] by 0.7", op: "SCALE", tol: TOL.default, build: (b) => b.ctx.scale(b.input(Type.F32, [32, 7]), 0.7) });
  out.push({ name: "scale_bias [32,7]", op: "SCALE", tol: TOL.default, build: (b) => b.ctx.scaleBias(b.input(Type.F32, [32, 7]), 0.7, -0.25) });
  out.push({ name: "clamp [32,7] to [-0.5,0.5]", op: "CLAMP", tol: TOL.default, build: (b) => b.ctx.clamp(b.input(Type.F32, [32, 7]), -0.5, 0.5) });
  out.push({ name: "pad [10,5,3] by 1,2,1,0", op: "PAD", tol: TOL.default, build: (b) => b.ctx.pad(b.input(Type.F32, [10, 5, 3]), 1, 2, 1, 0) });
  out.push({ name: "pad_reflect_1d [10,5] by 2,3", op: "PAD_REFLECT_1D", tol: TOL.default, build: (b) => b.ctx.padReflect1d(b.input(Type.F32, [10, 5]), 2, 3) });
  out.push({ name: "roll [10,5,3] by 3,-1,1,0", op: "ROLL", tol: TOL.default, build: (b) => b.ctx.roll(b.input(Type.F32, [10, 5, 3]), 3, -1, 1, 0) });
  out.push({ name: "upscale x2 nearest [6,5,3]", op: "UPSCALE", tol: TOL.default, build: (b) => b.ctx.upscale(b.input(Type.F32, [6, 5, 3]), 2, 0) });
  out.push({ name: "arange 0..20 step 0.5", op: "ARANGE", tol: TOL.default, build: (b) => b.ctx.arange(0, 20, 0.5) });
  out.push({ name: "timestep_embedding 6 x 32", op: "TIMESTEP_EMBEDDING", tol: TOL.default, build: (b) => b.ctx.timestepEmbedding(b.input(Type.F32, [6], uniform(0, 100)), 32, 10000) });
  return out;
}

function convs(): OpCase[] {
  const out: OpCase[] = [];
  // im2col: kernel [KW, KH, IC, OC], input [W, H, IC, N].
  for (const dst of [Type.F32, Type.F16]) {
    out.push({
      name: `im2col 2d -> ${tn(dst)} input [10,9,3,2] kernel 3x3`, op: "IM2COL", tol: TOL.default,
      build: (b) => b.ctx.im2col(b.input(dst, [3, 3, 3, 4]), b.input(Type.F32, [10, 9, 3, 2]), 1, 1, 1, 1, 1, 1, true, dst),
    });
  }
  out.push({ name: "im2col 1d input [20,3] kernel 5 stride 2", op: "IM2COL", tol: TOL.default, build: (b) => b.ctx.im2col(b.input(Type.F32, [5, 3, 4]), b.input(Type.F32, [20, 3]), 2, 0, 1, 0, 1, 0, false, Type.F32) });
  for (const kt of [Type.F32, Type.F16]) {
    out.push({ name: `conv_2d (im2col) kernel ${tn(kt)} [3,3,3,4] input [10,9,3,2]`, op: "CONV_2D", tol: TOL.matmul, build: (b) => b.ctx.conv2d(b.input(kt, [3, 3, 3, 4]), b.input(Type.F32, [10, 9, 3, 2]), 1, 1, 1, 1, 1, 1) });
  }
  out.push({ name: "conv_2d stride 2 dilation 2 [3,3,4,5] x [12,11,4,1]", op: "CONV_2D", tol: TOL.matmul, build: (b) => b.ctx.conv2d(b.input(Type.F16, [3, 3, 4, 5]), b.input(Type.F32, [12, 11, 4, 1]), 2, 2, 1, 1, 2, 2) });
  out.push({ name: "conv_2d direct [3,3,3,4] x [10,9,3,2]", op: "CONV_2D", tol: TOL.matmul, build: (b) => b.ctx.conv2dDirect(b.input(Type.F32, [3, 3, 3, 4]), b.input(Type.F32, [10, 9, 3, 2]), 1, 1, 1, 1, 1, 1) });
  out.push({ name: "conv_2d_dw [3,3,1,4] x [10,9,4,1]", op: "CONV_2D_DW", tol: TOL.matmul, build: (b) => b.ctx.conv2dDwDirect(b.input(Type.F32, [3, 3, 1, 4]), b.input(Type.F32, [10, 9, 4, 1]), 1, 1, 1, 1, 1, 1) });
  out.push({ name: "conv_1d (im2col) [5,3,4] x [20,3]", op: "CONV_1D", tol: TOL.matmul, build: (b) => b.ctx.conv1d(b.input(Type.F16, [5, 3, 4]), b.input(Type.F32, [20, 3]), 1, 2, 1) });
  out.push({ name: "conv_transpose_1d [3,4,2] x [12,2]", op: "CONV_TRANSPOSE_1D", tol: TOL.matmul, build: (b) => b.ctx.convTranspose1d(b.input(Type.F32, [3, 4, 2]), b.input(Type.F32, [12, 2]), 1, 0, 1) });
  out.push({ name: "conv_transpose_2d [3,3,4,2] x [6,5,2]", op: "CONV_TRANSPOSE_2D", tol: TOL.matmul, build: (b) => b.ctx.convTranspose2dP0(b.input(Type.F16, [3, 3, 4, 2]), b.input(Type.F32, [6, 5, 2]), 2) });
  for (const [op, label] of [[OpPool.AVG, "avg"], [OpPool.MAX, "max"]] as const) {
    out.push({ name: `pool_2d ${label} 2x2 stride 2 [10,8,3]`, op: "POOL_2D", tol: TOL.default, build: (b) => b.ctx.pool2d(b.input(Type.F32, [10, 8, 3]), op, 2, 2, 2, 2, 0, 0) });
    out.push({ name: `pool_2d ${label} 3x3 stride 1 pad 1 [9,7,2]`, op: "POOL_2D", tol: TOL.default, build: (b) => b.ctx.pool2d(b.input(Type.F32, [9, 7, 2]), op, 3, 3, 1, 1, 1, 1) });
    out.push({ name: `pool_1d ${label} 2 stride 2 [16,3]`, op: "POOL_1D", tol: TOL.default, build: (b) => b.ctx.pool1d(b.input(Type.F32, [16, 3]), op, 2, 2, 0) });
  }
  return out;
}

/**
 * The last cases: on lavapipe, a heap corruption often followed this one within a few cases (the
 * KNOWN_CRASH of tests/backend_ops.test.ts), so it runs after every other case has been compared.
 */
function last(): OpCase[] {
  return [
    { name: "count_equal of argmaxes [10,40]", op: "COUNT_EQUAL", tol: TOL.exact, build: (b) => b.ctx.countEqual(b.ctx.argmax(b.input(Type.F32, [10, 40], distinctFloats)), b.input(Type.I32, [40], ints(0, 9))) },
  ];
}

/** Every case of the table. */
export function allCases(): OpCase[] {
  return [...unary(), ...binary(), ...glu(), ...matmul(), ...rows(), ...copies(), ...norms(), ...attention(), ...reductions(), ...shapes(), ...convs(), ...last()];
}

// ---- the harness ----

/** How one side computes a case's graph. */
export interface Side {
  /** For messages ("CPU, 1 thread", "Vulkan0"). */
  readonly label: string;
  /** Where the inputs (and, for a direct side, every tensor) live. */
  readonly backend: Backend;
  /** Whether the side can compute `node` (every node of the graph is asked). */
  supports(node: Tensor): boolean;
  /** Computes `graph` whose inputs are set; `ctx` holds its op tensors, not yet allocated. */
  compute(graph: Graph, ctx: Context): { free(): void };
}

/** A side that computes on `backend` directly: every tensor in its default buffer, `graphCompute`. */
export function directSide(label: string, backend: Backend): Side {
  return {
    label,
    backend,
    supports: (n) => backend.supportsOp(n),
    compute(graph, ctx) {
      const buf = allocCtxTensors(ctx, backend);
      backend.graphCompute(graph);
      return { free: () => buf?.free() };
    },
  };
}

/** A side that computes through a scheduler over `backends` (the last a CPU one): the scheduler allocates the ops' tensors. */
export function schedSide(label: string, backends: Backend[]): Side {
  const sched = new Sched({ backends });
  return {
    label,
    backend: backends[0],
    supports: (n) => backends.some((b) => b.supportsOp(n)),
    compute(graph) {
      sched.reset();
      sched.graphCompute(graph);
      return { free: () => sched.reset() };
    },
  };
}

/** The outcome of one case. */
export interface CaseResult {
  readonly name: string;
  readonly op: string;
  readonly status: "pass" | "fail" | "skip";
  /** nMSE (or the count of differing elements for an exact case); NaN when skipped. */
  readonly err: number;
  readonly tol: number;
  /** Why it failed or was skipped. */
  readonly reason?: string;
}

/** One side's output: its values as numbers, or why it could not run. */
type SideOut = { values: Float64Array } | { skip: string };

function runSide(side: Side, c: OpCase, seed: number, perturb?: (v: Float64Array) => void): SideOut {
  const inCtx = new Context({ memSize: 1 << 20, noAlloc: true });
  const ctx = new Context({ memSize: 4 << 20, noAlloc: true });
  let buf: Buffer | null = null;
  let held: { free(): void } | undefined;
  try {
    const inputs: { t: Tensor; init?: Init }[] = [];
    const out = c.build({
      ctx,
      input: (type, shape, init) => {
        const t = inCtx.newTensor(type, [...shape]);
        inputs.push({ t, init });
        return t;
      },
    }).setOutput();
    const graph = ctx.newGraph().buildForwardExpand(out);
    for (const n of graph.nodes()) {
      if (!side.supports(n)) return { skip: `${side.label} does not support ${opLabel(n)} (${n.describe()})` };
    }
    buf = allocCtxTensors(inCtx, side.backend);
    const rand = rng(seed);
    for (const { t, init } of inputs) {
      const shape = t.shape.slice(0, Math.max(1, t.nDims));
      const data = (init ?? uniform(-1, 1))(t.nelements, rand, shape);
      if (QUANTIZED.has(t.type)) tensorSet(t, quantize(t.type, data as Float32Array, { nPerRow: t.ne(0) }));
      else tensorSet(t, data);
    }
    held = side.compute(graph, ctx);
    const values = read(out);
    perturb?.(values);
    return { values };
  } finally {
    held?.free();
    buf?.free();
    ctx.free();
    inCtx.free();
  }
}

const OP_NAMES = new Map<number, string>(Object.entries(Op).map(([k, v]) => [v as number, k]));
function opLabel(n: Tensor): string {
  return OP_NAMES.get(n.op) ?? `op ${n.op}`;
}

/** A tensor's values as numbers (quantized ones dequantized, i64 as numbers). */
function read(t: Tensor): Float64Array {
  if (QUANTIZED.has(t.type)) return Float64Array.from(dequantize(t.type, tensorGetBytes(t), t.ne(0)));
  const v = tensorGet(t);
  return v instanceof BigInt64Array ? Float64Array.from(v, (x) => Number(x)) : Float64Array.from(v as ArrayLike<number>);
}

/** nMSE of `got` against `ref` (test-backend-ops' `nmse`), Infinity for a NaN or a differing infinity. */
export function nmse(ref: Float64Array, got: Float64Array): number {
  if (ref.length !== got.length) return Infinity;
  let num = 0, den = 0;
  for (let i = 0; i < ref.length; i++) {
    const r = ref[i], g = got[i];
    if (Number.isNaN(r) || Number.isNaN(g)) return Infinity;
    if (!Number.isFinite(r) || !Number.isFinite(g)) {
      if (r !== g) return Infinity;
      continue;
    }
    num += (r - g) ** 2;
    den += r * r;
  }
  return den === 0 ? num : num / den;
}

/** Elements that differ (for the exact cases). */
export function mismatches(ref: Float64Array, got: Float64Array): number {
  if (ref.length !== got.length) return Math.max(ref.length, got.length);
  let n = 0;
  for (let i = 0; i < ref.length; i++) if (!Object.is(ref[i], got[i])) n++;
  return n;
}

/** Options of {@linkcode compareCases}. */
export interface CompareOptions {
  /** Changes the tested side's output before the comparison (to show that the harness fails). */
  readonly perturb?: (values: Float64Array) => void;
  /** Called with each case's result as it comes (progress). */
  readonly onResult?: (r: CaseResult) => void;
}

/** Runs every case on `reference` and `tested` and compares them. */
export function compareCases(cases: readonly OpCase[], reference: Side, tested: Side, options: CompareOptions = {}): CaseResult[] {
  const results: CaseResult[] = [];
  const push = (r: CaseResult) => {
    results.push(r);
    options.onResult?.(r);
  };
  for (const c of cases) {
    const seed = hash(c.name);
    const base = { name: c.name, op: c.op, tol: c.tol };
    const t = runSide(tested, c, seed, options.perturb);
    if ("skip" in t) {
      push({ ...base, status: "skip", err: NaN, reason: t.skip });
      continue;
    }
    const r = runSide(reference, c, seed);
    if ("skip" in r) {
      push({ ...base, status: "skip", err: NaN, reason: `reference: ${r.skip}` });
      continue;
    }
    const err = c.tol === 0 ? mismatches(r.values, t.values) : nmse(r.values, t.values);
    const ok = c.tol === 0 ? err === 0 : err <= c.tol;
    push({ ...base, status: ok ? "pass" : "fail", err, reason: ok ? undefined : c.tol === 0 ? `${err} of ${r.values.length} elements differ` : `nMSE ${err.toExponential(3)} > ${c.tol}` });
  }
  return results;
}

/** A one-paragraph summary: cases passed / failed / skipped, ops compared, the largest nMSE per tolerance class. */
export function summarize(label: string, results: readonly CaseResult[]): string {
  const by = (s: CaseResult["status"]) => results.filter((r) => r.status === s);
  const pass = by("pass"), fail = by("fail"), skip = by("skip");
  const ops = new Set([...pass, ...fail].map((r) => r.op));
  const worst = (tol: number) => Math.max(0, ...pass.filter((r) => r.tol === tol).map((r) => r.err));
  const lines = [
    `backend_ops ${label}: ${results.length} cases, ${pass.length} passed, ${fail.length} failed, ${skip.length} skipped; ${ops.size} ops compared ` +
    `(largest nMSE ${worst(TOL.default).toExponential(2)} of limit ${TOL.default}, ${worst(TOL.matmul).toExponential(2)} of ${TOL.matmul})`,
  ];
  for (const r of fail) lines.push(`  FAIL ${r.name}: ${r.reason}`);
  for (const r of skip) lines.push(`  skip ${r.name}: ${r.reason}`);
  return lines.join("\n");
}
