// The API fuzz's compute-time part (api_fuzz_child.ts runs it as one kind of step): self-contained
// scenarios whose defects only show when a graph is computed or a callback runs.
//
// - operands of other types: f16, bf16, i32 and quantized tensors (q8_0, q4_0, q4_1, q5_0, q5_1,
//   q2_K … q6_K, iq4_nl, iq4_xs) set from quantize(), in getRows / mulMat / cast / add / unary ops;
// - strided operands: transpose, permute, view2d / view3d with their own strides (and strides past
//   the source: a BoundsError), as operands of ops that are then computed;
// - index tensors of getRows, setRows, addId, mulMatId, getRowsBack holding in-range or
//   out-of-range data (and data changed after a good compute);
// - set1d / set2d / acc at offsets inside and past the destination;
// - callbacks (the scheduler's eval callback, ggml-opt's epoch callback, the log callback delivered
//   inside an eval callback) that try to free the scheduler, the backend, a buffer, an allocator,
//   a context while the compute runs (BusyError), and async computes with an abort signal and frees
//   while they run;
// - quantize with NaN / infinite inputs and importance matrices.
//
// Each scenario computes through one of graph.compute, Backend.graphCompute, Sched.graphCompute,
// Backend / Sched graphComputeAsync. A defect the fuzz knows of must throw its typed error; an
// outcome the fuzz does not predict (a kernel refusing a strided operand, an op a type lacks) may
// be a typed refusal or a success, and a success is checked against a float64 evaluation in JS.
import {
  allocCtxTensors,
  ArgumentError,
  Backend,
  BoundsError,
  BusyError,
  canQuantize,
  ComputeError,
  Context,
  ContextOutOfMemoryError,
  dequantize,
  Gallocr,
  type GgmlError,
  GgmlTypeError,
  type Graph,
  LogLevel,
  logSet,
  NotAllocatedError,
  OptContext,
  OptDataset,
  OptLossType,
  OptResult,
  quantize,
  requiresImatrix,
  Sched,
  ShapeError,
  type Tensor,
  tensorSet,
  Type,
  UnsupportedOpError,
  UseAfterFreeError,
} from "../../mod.ts";
import { logTest } from "../../src/runtime/log.ts";
import process from "node:process";
import type { Rng } from "./lib.ts";

type ErrorClass = abstract new (...a: never[]) => GgmlError;

/** What the fuzz child lends this part: its PRNG and its outcome bookkeeping. */
export interface Harness {
  rng: Rng;
  trace: boolean;
  valid<T>(call: string, f: () => T): T | undefined;
  guarded<T>(call: string, allowed: ErrorClass[], f: () => T): T | undefined;
  invalid(call: string, want: ErrorClass, f: () => unknown): void;
  count(k: string): void;
  fail(call: string, error: string): void;
}

/** Typed refusals of an operand the kernels may not take (layout, type): the outcomes not predicted here. */
const REFUSALS: ErrorClass[] = [ShapeError, GgmlTypeError, UnsupportedOpError];

/** Types a tensor operand may have, with the tolerance class of their values. */
const QTYPES = [Type.Q8_0, Type.Q4_0, Type.Q4_1, Type.Q5_0, Type.Q5_1, Type.Q2_K, Type.Q3_K, Type.Q4_K, Type.Q5_K, Type.Q6_K, Type.IQ4_NL, Type.IQ4_XS]
  .filter((t) => canQuantize(t) && !requiresImatrix(t));
const PLAIN = [Type.F16, Type.BF16];
/** Every type quantize() takes (IQ types with an importance matrix). */
const ALL_Q = Object.values(Type).filter((t): t is Type => typeof t === "number" && canQuantize(t));

const MiB = 1 << 20;
const n = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const full = (s: readonly number[]) => [...s, 1, 1, 1].slice(0, 4);
/** Values on a 1/64 grid in [-2, 2]: exact in f16 and bf16. */
const grid = (rng: Rng, len: number) => Float32Array.from({ length: len }, () => Math.round((rng.next() * 4 - 2) * 64) / 64);

/** Elements of `shape` read from `data` (a contiguous f32 source's values) through byte strides `nb` from byte offset `off`. */
function gather(data: ArrayLike<number>, shape: readonly number[], nb: readonly number[], off: number): Float64Array {
  const [a, b, c, d] = full(shape);
  const out = new Float64Array(a * b * c * d);
  let k = 0;
  for (let i3 = 0; i3 < d; i3++) for (let i2 = 0; i2 < c; i2++) for (let i1 = 0; i1 < b; i1++) for (let i0 = 0; i0 < a; i0++) {
    out[k++] = data[(off + i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]) / 4];
  }
  return out;
}

export function computeFuzz(h: Harness) {
  const { rng } = h;
  /** Milliseconds per scenario kind (WSP_GGML_FUZZ_PROFILE=1). */
  const profile = process.env.WSP_GGML_FUZZ_PROFILE === "1" ? new Map<string, number>() : undefined;
  /** WSP_GGML_FUZZ_COMPUTE_ONLY=<0-99>: every scenario is the one that draw picks (to study one kind). */
  const only = process.env.WSP_GGML_FUZZ_COMPUTE_ONLY ? Number(process.env.WSP_GGML_FUZZ_COMPUTE_ONLY) : undefined;
  let be: Backend | undefined;
  let sched: Sched | undefined;
  const backend = () => (be && !be.freed ? be : (be = Backend.cpu({ nThreads: 1 })));
  const scheduler = (): Sched => {
    const b = backend();
    if (sched && sched.backends[0] === b) return sched;
    sched?.free();
    return (sched = new Sched({ backends: [b], graphSize: 256 }));
  };

  /** Compares `got` with `want` within `tol[i]`; counts `checked:<call>` or records a failure. */
  function check(call: string, got: ArrayLike<number> | undefined, want: ArrayLike<number>, tol: ArrayLike<number> | number): void {
    if (!got) return h.fail(call, "no result to read");
    if (got.length !== want.length) return h.fail(call, `result has ${got.length} elements, want ${want.length}`);
    for (let i = 0; i < want.length; i++) {
      const t = typeof tol === "number" ? tol : tol[i];
      if (!(Math.abs(got[i] - want[i]) <= t)) return h.fail(call, `element ${i} = ${got[i]}, want ${want[i]} ± ${t}`);
    }
    h.count(`checked:${call}`);
  }
  const read = (call: string, t: Tensor) => h.valid(`${call}: read`, () => Float64Array.from(t.get(Float32Array)));

  type How = "graph.compute" | "backend.graphCompute" | "sched" | "backend.async" | "sched.async";
  // The async ways cost a thread hop (~1-7 ms on Node): one compute in ten.
  const pickHow = (): How => rng.chance(0.1) ? rng.pick(["backend.async", "sched.async"] as const) : rng.pick(["graph.compute", "backend.graphCompute", "sched"] as const);
  /** Runs `graph` by `how`; a promise for the async ways. */
  function run(how: How, graph: Graph): unknown {
    switch (how) {
      case "graph.compute": return graph.compute({ nThreads: rng.range(1, 2) });
      case "backend.graphCompute": return backend().graphCompute(graph);
      case "sched": return scheduler().reset().graphCompute(graph);
      case "backend.async": return backend().graphComputeAsync(graph);
      case "sched.async": return scheduler().reset().graphComputeAsync(graph);
    }
  }
  /** A compute that must succeed (true) or throw exactly `want` (a known defect), or, with `allowed`, may refuse with one of those. */
  async function computeAs(call: string, graph: Graph, opts: { want?: ErrorClass; allowed?: ErrorClass[] } = {}): Promise<boolean> {
    const how = pickHow();
    const name = `${call} [${how}]`;
    if (h.trace) console.log(`  compute ${name}`);
    const f = async () => await run(how, graph);
    if (opts.want) {
      await invalidAsync(name, opts.want, f);
      return false;
    }
    return opts.allowed ? (await guardedAsync(name, opts.allowed, f)) !== undefined : (await validAsync(name, f)) !== undefined;
  }
  async function validAsync<T>(call: string, f: () => Promise<T>): Promise<T | undefined> {
    try {
      const r = await f();
      h.count(`ok:${call}`);
      return r ?? (true as T);
    } catch (e) {
      h.fail(call, `a valid call threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
      return undefined;
    }
  }
  async function guardedAsync<T>(call: string, allowed: ErrorClass[], f: () => Promise<T>): Promise<T | undefined> {
    try {
      const r = await f();
      h.count(`ok:${call}`);
      return r ?? (true as T);
    } catch (e) {
      if (allowed.some((c) => e instanceof c) && (e as Error).message) h.count(`err:${call}:${(e as GgmlError).code}`);
      else h.fail(call, `threw ${(e as Error)?.name}: ${(e as Error)?.message} (allowed: success, ${allowed.map((c) => c.name).join(", ")})`);
      return undefined;
    }
  }
  async function invalidAsync(call: string, want: ErrorClass, f: () => Promise<unknown>): Promise<void> {
    try {
      await f();
      h.fail(call, `did not throw (want ${want.name})`);
    } catch (e) {
      if (e instanceof want && (e as Error).message) h.count(`err:${call}:${(e as GgmlError).code}`);
      else h.fail(call, `threw ${(e as Error)?.name}: ${(e as Error)?.message} (want ${want.name})`);
    }
  }

  // ---- operands of other types -------------------------------------------------------------------
  async function typedOperand(ctx: Context): Promise<void> {
    const type = rng.chance(0.3) ? rng.pick(PLAIN) : rng.chance(0.1) ? Type.I32 : rng.pick(QTYPES);
    const traits = typeTraits(type);
    const k = traits.blck === 1 ? rng.range(1, 9) : traits.blck * rng.range(1, 2), m = rng.range(1, 3);
    const vals = type === Type.I32 ? Float32Array.from({ length: k * m }, () => rng.range(-50, 50)) : grid(rng, k * m);
    const a = h.valid(`newTensor(${traits.name})`, () => ctx.newTensor2d(type, k, m));
    if (!a) return;
    let deq: Float64Array; // the operand's values as ggml holds them
    if (type === Type.I32) h.valid("set(i32)", () => a.set(Int32Array.from(vals))), deq = Float64Array.from(vals);
    else if (traits.blck === 1) h.valid(`set(${traits.name})`, () => a.set(vals)), deq = Float64Array.from(vals);
    else {
      const q = h.valid(`quantize(${traits.name})`, () => quantize(type, vals, { nPerRow: k }));
      if (!q) return;
      h.valid(`set(${traits.name} blocks)`, () => a.set(q));
      deq = Float64Array.from(dequantize(type, q, k));
    }
    const kind = rng.int(5);
    if (kind === 0) { // getRows: in range, or out of range (a BoundsError at compute)
      const nIds = rng.range(1, 3), bad = rng.chance(0.35);
      const ids = Int32Array.from({ length: nIds }, () => rng.int(m));
      if (bad) ids[rng.int(nIds)] = rng.pick([m, m + rng.range(1, 5), -1, -rng.range(2, 1 << 20), 1 << 30]);
      const idT = ctx.newTensor1d(Type.I32, nIds).set(ids);
      const r = h.guarded(`getRows(${traits.name})`, REFUSALS, () => ctx.getRows(a, idT));
      if (!r) return;
      const g = ctx.newGraphCustom(16).buildForwardExpand(r);
      if (bad) return void await computeAs(`getRows(${traits.name}, index out of range)`, g, { want: BoundsError });
      if (!(await computeAs(`getRows(${traits.name})`, g, { allowed: REFUSALS }))) return;
      const want = new Float64Array(k * nIds);
      ids.forEach((row, j) => want.set(deq.subarray(row * k, row * k + k), j * k));
      check(`getRows(${traits.name})`, type === Type.I32 ? Float64Array.from(r.get(Int32Array)) : read("getRows", r), want, 0);
    } else if (kind === 1 && type !== Type.I32) { // mulMat(a, b f32)
      const nn = rng.range(1, 3), bv = grid(rng, k * nn);
      const b = ctx.newTensor2d(Type.F32, k, nn).set(bv);
      const r = h.guarded(`mulMat(${traits.name}, f32)`, REFUSALS, () => ctx.mulMat(a, b));
      if (!r || !(await computeAs(`mulMat(${traits.name}, f32)`, ctx.newGraphCustom(16).buildForwardExpand(r), { allowed: REFUSALS }))) return;
      const want = new Float64Array(m * nn), tol = new Float64Array(m * nn);
      // b is converted to the type's dot-product partner (f16, bf16, q8_0, q8_1, q8_K): its error bounds the product's.
      const bErr = traits.blck === 1 ? (type === Type.BF16 ? 2 ** -8 : 2 ** -11) : 1 / 100;
      for (let j = 0; j < nn; j++) for (let i = 0; i < m; i++) {
        let s = 0, mag = 0, bMax = 0;
        for (let l = 0; l < k; l++) s += deq[l + k * i] * bv[l + k * j], mag += Math.abs(deq[l + k * i] * bv[l + k * j]), bMax = Math.max(bMax, Math.abs(bv[l + k * j]));
        let aAbs = 0;
        for (let l = 0; l < k; l++) aAbs += Math.abs(deq[l + k * i]);
        want[i + m * j] = s;
        tol[i + m * j] = 1e-4 * mag + bErr * aAbs * bMax + 1e-6;
      }
      check(`mulMat(${traits.name}, f32)`, read("mulMat", r), want, tol);
    } else if (kind === 2) { // cast to f32 (a cpy that dequantizes)
      const r = h.guarded(`cast(${traits.name} → f32)`, REFUSALS, () => ctx.cast(a, Type.F32));
      if (!r || !(await computeAs(`cast(${traits.name} → f32)`, ctx.newGraphCustom(16).buildForwardExpand(r), { allowed: REFUSALS }))) return;
      check(`cast(${traits.name} → f32)`, read("cast", r), deq, type === Type.I32 ? 0 : 1e-6);
    } else { // add(a, b f32) or a unary op over a: the result has a's type (quantized results are requantized)
      const op = rng.pick(["add", "scale", "relu", "neg", "sqr"] as const);
      const bv = grid(rng, k * m);
      const r = h.guarded(`${op}(${traits.name})`, REFUSALS, () =>
        op === "add" ? ctx.add(a, ctx.newTensor2d(Type.F32, k, m).set(bv)) : op === "scale" ? ctx.scale(a, 0.5) : ctx[op](a));
      if (!r || !(await computeAs(`${op}(${traits.name})`, ctx.newGraphCustom(16).buildForwardExpand(r), { allowed: REFUSALS }))) return;
      const f = (x: number, i: number) => op === "add" ? x + bv[i] : op === "scale" ? x * 0.5 : op === "relu" ? Math.max(0, x) : op === "neg" ? -x : x * x;
      const want = deq.map(f);
      if (r.type === Type.F32 || r.type === Type.F16 || r.type === Type.BF16) {
        const rel = r.type === Type.BF16 ? 2 ** -7 : r.type === Type.F16 ? 2 ** -10 : 1e-6;
        check(`${op}(${traits.name})`, read(op, r), want, want.map((w) => rel * Math.abs(w) + 1e-6));
      } else if (r.type === Type.I32) {
        check(`${op}(i32)`, Float64Array.from(r.get(Int32Array)), want, 0);
      } else { // requantized: within the quantization step of the result's block
        const got = Float64Array.from(dequantize(r.type, r.get() as Uint8Array, k));
        const bound = Math.max(...want.map(Math.abs));
        check(`${op}(${traits.name})`, got, want, bound * 0.5 + 1e-6);
      }
    }
  }
  const traitsCache = new Map<Type, { name: string; blck: number }>();
  function typeTraits(type: Type): { name: string; blck: number } {
    let t = traitsCache.get(type);
    if (!t) {
      using c = new Context({ memSize: 4096, noAlloc: true });
      const x = c.newTensor1d(type, type === Type.F16 || type === Type.BF16 || type === Type.I32 ? 1 : 256);
      traitsCache.set(type, t = { name: x.traits.name, blck: x.traits.blckSize });
    }
    return t;
  }

  // ---- strided operands --------------------------------------------------------------------------
  async function strided(ctx: Context): Promise<void> {
    const shape = [rng.range(1, 6), rng.range(1, 5), rng.range(1, 3)];
    const data = grid(rng, n(shape));
    const f16 = rng.chance(0.15); // an f16 source (its grid values are exact in f16)
    const es = f16 ? 2 : 4; // element size
    const leaf = ctx.newTensor(f16 ? Type.F16 : Type.F32, shape).set(data);
    const bytes = es * data.length;
    // The view: its tensor, and where its elements are (byte offset, for the reference).
    let v: Tensor | undefined, off = 0;
    const kind = rng.int(4);
    if (kind === 0) v = h.valid("transpose", () => ctx.transpose(leaf));
    else if (kind === 1) {
      const perm = rng.pick([[0, 1, 2, 3], [1, 0, 2, 3], [2, 0, 1, 3], [1, 2, 0, 3], [0, 2, 1, 3], [2, 1, 0, 3]]);
      v = h.valid(`permute(${perm})`, () => ctx.permute(leaf, perm[0], perm[1], perm[2], perm[3]));
    } else {
      // view2d / view3d with strides of their own: rows further apart than the source's, or overlapping.
      const ne0 = rng.range(1, 4), ne1 = rng.range(1, 4), ne2 = kind === 3 ? rng.range(1, 3) : 1;
      const nb1 = es * rng.range(1, 8), nb2 = es * rng.range(1, 12);
      off = es * rng.int(6);
      const end = off + es * (ne0 - 1) + nb1 * (ne1 - 1) + nb2 * (ne2 - 1) + es;
      const call = kind === 2 ? `view2d(nb1 ${nb1})` : `view3d(nb1 ${nb1}, nb2 ${nb2})`;
      const make = () => kind === 2 ? ctx.view2d(leaf, ne0, ne1, nb1, off) : ctx.view3d(leaf, ne0, ne1, ne2, nb1, nb2, off);
      if (end > bytes) return h.invalid(`${call}(strides past the source)`, BoundsError, make);
      v = h.guarded(call, [BoundsError], make);
    }
    if (!v) return;
    const vShape = v.shape, vNb = v.strides;
    if (h.trace) console.log(`  view ${v.describe()} nb ${vNb} offset ${off} of ${leaf.describe()}`);
    const vRef = gather(data, vShape, vNb.map((b) => b * 4 / es), off * 4 / es);
    const [x0, x1, x2, x3] = vShape;
    const op = rng.pick(["cont", "relu", "neg", "sqr", "scale", "abs", "silu", "gelu", "sum", "mean", "sumRows", "softMax", "argmax", "add", "mul", "addTo",
      "mulMat", "mulMatB", "cpy", "cpyF16", "cpyInto", "getRows"] as const);
    const other = () => ctx.newTensor(Type.F32, vShape).set(grid(rng, vRef.length));
    let r: Tensor | undefined, want: Float64Array | undefined, mag: Float64Array | undefined, rel = 1e-5;
    const call = `${op}(${kind === 0 ? "transpose" : kind === 1 ? "permute" : kind === 2 ? "view2d" : "view3d"})`;
    const mk = (f: () => Tensor) => (r = h.guarded(call, REFUSALS, f));
    if (f16) rel = 2 ** -9; // results of an f16 operand are f16 (or computed through f16)
    switch (op) {
      case "cont": case "relu": case "neg": case "sqr": case "scale": case "abs": case "silu": case "gelu": {
        const f = op === "cont" ? (x: number) => x : op === "relu" ? (x: number) => Math.max(0, x) : op === "neg" ? (x: number) => -x : op === "sqr" ? (x: number) => x * x
          : op === "abs" ? Math.abs : op === "silu" ? (x: number) => x / (1 + Math.exp(-x)) : op === "gelu" ? (x: number) => 0.5 * x * (1 + Math.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))) : (x: number) => x * 3;
        mk(() => op === "cont" ? ctx.cont(v!) : op === "scale" ? ctx.scale(v!, 3) : ctx[op](v!));
        want = vRef.map(f), mag = vRef.map((x) => Math.max(Math.abs(f(x)), Math.abs(x)));
        if (op === "gelu") rel = Math.max(rel, 2e-3); // the CPU's gelu goes through an f16 table
        break;
      }
      case "mean": {
        mk(() => ctx.mean(v!));
        want = new Float64Array(vRef.length / x0), mag = new Float64Array(want.length);
        vRef.forEach((q, i) => (want![Math.floor(i / x0)] += q / x0, mag![Math.floor(i / x0)] += Math.abs(q) / x0));
        break;
      }
      case "softMax": {
        mk(() => ctx.softMax(v!));
        want = new Float64Array(vRef.length);
        for (let r0 = 0; r0 < vRef.length; r0 += x0) {
          const row = vRef.subarray(r0, r0 + x0), mx = Math.max(...row);
          const e = row.map((q) => Math.exp(q - mx)), z = e.reduce((p, q) => p + q, 0);
          e.forEach((q, i) => (want![r0 + i] = q / z));
        }
        mag = want.map(() => 1);
        break;
      }
      case "argmax": { // i32 [rows]: the first maximum of each row
        if (x2 !== 1 || x3 !== 1) return void h.count("skip:argmax(3-D view)");
        mk(() => ctx.argmax(v!));
        want = new Float64Array(x1);
        for (let j = 0; j < x1; j++) {
          let best = 0;
          for (let i = 1; i < x0; i++) if (vRef[j * x0 + i] > vRef[j * x0 + best]) best = i;
          want[j] = best;
        }
        mag = want.map(() => 0), rel = 0;
        break;
      }
      case "cpyInto": { // a contiguous f32 tensor copied into the strided view (the view is the destination)
        const src = ctx.newTensor(Type.F32, vShape).set(grid(rng, vRef.length));
        mk(() => ctx.cpy(src, v!));
        want = Float64Array.from(src.get(Float32Array)), mag = want.map(Math.abs), rel = f16 ? 2 ** -9 : 1e-6;
        // Overlapping destination elements (strides smaller than the rows) keep the last write: not checked.
        if (new Set(Array.from({ length: vRef.length }, (_, i) => { let k = i, o = 0; for (let d = 0; d < 4; d++) { o += (k % vShape[d]) * vNb[d]; k = Math.floor(k / vShape[d]); } return o; })).size !== vRef.length) {
          mag = want.map(() => Infinity);
        }
        break;
      }
      case "sum": mk(() => ctx.sum(v!)), want = Float64Array.of(vRef.reduce((p, q) => p + q, 0)), mag = Float64Array.of(vRef.reduce((p, q) => p + Math.abs(q), 0)); break;
      case "sumRows": {
        mk(() => ctx.sumRows(v!));
        want = new Float64Array(vRef.length / x0), mag = new Float64Array(want.length);
        vRef.forEach((q, i) => (want![Math.floor(i / x0)] += q, mag![Math.floor(i / x0)] += Math.abs(q)));
        break;
      }
      case "add": case "mul": case "addTo": {
        const o = other(), od = Float64Array.from(o.get(Float32Array));
        mk(() => op === "add" ? ctx.add(v!, o) : op === "mul" ? ctx.mul(v!, o) : ctx.add(o, v!));
        want = vRef.map((q, i) => op === "mul" ? q * od[i] : q + od[i]), mag = vRef.map((q, i) => op === "mul" ? Math.abs(q * od[i]) : Math.abs(q) + Math.abs(od[i]));
        break;
      }
      case "mulMat": case "mulMatB": { // the view as a, or as b, of a product with a contiguous f32 matrix
        if (x2 !== 1 || x3 !== 1) return void h.count("skip:mulMat(3-D view)");
        const nn = rng.range(1, 3), ov = grid(rng, x0 * nn);
        const o = ctx.newTensor2d(Type.F32, x0, nn).set(ov);
        const [A, B, am, bn] = op === "mulMat" ? [vRef, Float64Array.from(ov), x1, nn] : [Float64Array.from(ov), vRef, nn, x1];
        mk(() => op === "mulMat" ? ctx.mulMat(v!, o) : ctx.mulMat(o, v!));
        want = new Float64Array(am * bn), mag = new Float64Array(am * bn);
        for (let j = 0; j < bn; j++) for (let i = 0; i < am; i++) for (let l = 0; l < x0; l++) want[i + am * j] += A[l + x0 * i] * B[l + x0 * j], mag[i + am * j] += Math.abs(A[l + x0 * i] * B[l + x0 * j]);
        break;
      }
      case "cpy": case "cpyF16": {
        const dst = ctx.newTensor(op === "cpy" ? Type.F32 : Type.F16, vShape);
        mk(() => ctx.cpy(v!, dst));
        want = vRef, mag = vRef.map(Math.abs), rel = op === "cpy" ? 1e-6 : 2 ** -10;
        break;
      }
      case "getRows": { // rows of the view, by index
        if (x2 !== 1 || x3 !== 1) return void h.count("skip:getRows(3-D view)");
        const ids = Int32Array.from({ length: rng.range(1, 3) }, () => rng.int(x1));
        mk(() => ctx.getRows(v!, ctx.newTensor1d(Type.I32, ids.length).set(ids)));
        want = new Float64Array(ids.length * x0);
        ids.forEach((row, j) => want!.set(vRef.subarray(row * x0, row * x0 + x0), j * x0));
        mag = want.map(Math.abs);
        break;
      }
    }
    if (!r || !want || !mag) return;
    const res = r;
    if (!(await computeAs(call, ctx.newGraphCustom(16).buildForwardExpand(res), { allowed: REFUSALS }))) return;
    const got = h.valid(`${call}: read`, () => Float64Array.from(res.type === Type.I32 ? res.get(Int32Array) : res.get(Float32Array)));
    check(call, got, want, mag.map((q) => rel * q * 4 + 1e-6));
  }

  // ---- index data --------------------------------------------------------------------------------
  async function indexOps(ctx: Context): Promise<void> {
    const which = rng.pick(["setRows", "addId", "mulMatId", "getRowsBack", "changed"] as const);
    const bad = rng.chance(0.4);
    const badValue = (bound: number) => rng.pick([bound, bound + rng.range(1, 9), -1, -rng.range(2, 1 << 16), 1 << 30, 2 ** 31 - 1]);
    if (which === "setRows") {
      const n0 = rng.range(1, 5), rows = rng.range(2, 6), k = rng.range(1, rows);
      const dv = grid(rng, n0 * rows), sv = grid(rng, n0 * k);
      const perm = Array.from({ length: rows }, (_, i) => i).sort(() => rng.next() - 0.5).slice(0, k); // distinct rows
      if (bad) perm[rng.int(k)] = badValue(rows);
      const i64 = rng.chance(0.5);
      const idx = i64 ? ctx.newTensor1d(Type.I64, k).set(BigInt64Array.from(perm.map(BigInt))) : ctx.newTensor1d(Type.I32, k).set(Int32Array.from(perm));
      const dst = ctx.newTensor2d(Type.F32, n0, rows).set(dv);
      const r = h.valid("setRows", () => ctx.setRows(dst, ctx.newTensor2d(Type.F32, n0, k).set(sv), idx));
      if (!r) return;
      const g = ctx.newGraphCustom(16).buildForwardExpand(r);
      if (bad) return void await computeAs(`setRows(${i64 ? "i64" : "i32"} index out of range)`, g, { want: BoundsError });
      if (!(await computeAs(`setRows(${i64 ? "i64" : "i32"})`, g))) return;
      const want = Float64Array.from(dv);
      perm.forEach((row, j) => want.set(sv.subarray(j * n0, j * n0 + n0), row * n0));
      check("setRows", read("setRows", r), want, 0);
    } else if (which === "addId") {
      const n0 = rng.range(1, 4), nu = rng.range(1, 3), nt = rng.range(1, 3), nexp = rng.range(1, 4);
      const av = grid(rng, n0 * nu * nt), bv = grid(rng, n0 * nexp);
      const ids = Int32Array.from({ length: nu * nt }, () => rng.int(nexp));
      if (bad) ids[rng.int(ids.length)] = badValue(nexp);
      const r = h.valid("addId", () => ctx.addId(ctx.newTensor3d(Type.F32, n0, nu, nt).set(av), ctx.newTensor2d(Type.F32, n0, nexp).set(bv), ctx.newTensor2d(Type.I32, nu, nt).set(ids)));
      if (!r) return;
      const g = ctx.newGraphCustom(16).buildForwardExpand(r);
      if (bad) return void await computeAs("addId(expert out of range)", g, { want: BoundsError });
      if (!(await computeAs("addId", g))) return;
      const want = av.map((x, i) => x + bv[(i % n0) + n0 * ids[Math.floor(i / n0)]]);
      check("addId", read("addId", r), Float64Array.from(want), 1e-6);
    } else if (which === "mulMatId") {
      const k = rng.range(1, 5), m = rng.range(1, 3), nexp = rng.range(1, 4), nu = rng.range(1, Math.min(2, nexp)), nt = rng.range(1, 2);
      const asv = grid(rng, k * m * nexp), bv = grid(rng, k * nu * nt);
      // ids: the experts of each token (distinct per token, as a router's top-k gives them)
      const ids = new Int32Array(nu * nt);
      for (let t = 0; t < nt; t++) {
        const e = Array.from({ length: nexp }, (_, i) => i).sort(() => rng.next() - 0.5);
        for (let u = 0; u < nu; u++) ids[u + nu * t] = e[u];
      }
      if (bad) ids[rng.int(ids.length)] = badValue(nexp);
      const r = h.valid("mulMatId", () => ctx.mulMatId(ctx.newTensor3d(Type.F32, k, m, nexp).set(asv), ctx.newTensor3d(Type.F32, k, nu, nt).set(bv), ctx.newTensor2d(Type.I32, nu, nt).set(ids)));
      if (!r) return;
      const g = ctx.newGraphCustom(16).buildForwardExpand(r);
      if (bad) return void await computeAs("mulMatId(expert out of range)", g, { want: BoundsError });
      if (!(await computeAs("mulMatId", g))) return;
      const want = new Float64Array(m * nu * nt), tol = new Float64Array(m * nu * nt);
      for (let t = 0; t < nt; t++) for (let u = 0; u < nu; u++) for (let i = 0; i < m; i++) {
        const e = ids[u + nu * t];
        for (let l = 0; l < k; l++) {
          const p = asv[l + k * (i + m * e)] * bv[l + k * (u + nu * t)];
          want[i + m * (u + nu * t)] += p, tol[i + m * (u + nu * t)] += 1e-5 * Math.abs(p);
        }
      }
      check("mulMatId", read("mulMatId", r), want, tol.map((x) => x + 1e-6));
    } else if (which === "getRowsBack") {
      const n0 = rng.range(1, 4), k = rng.range(1, 4), rows = rng.range(1, 5);
      const av = grid(rng, n0 * k);
      const ids = Int32Array.from({ length: k }, () => rng.int(rows));
      if (bad) ids[rng.int(k)] = badValue(rows);
      const r = h.valid("getRowsBack", () => ctx.getRowsBack(ctx.newTensor2d(Type.F32, n0, k).set(av), ctx.newTensor1d(Type.I32, k).set(ids), ctx.newTensor2d(Type.F32, n0, rows)));
      if (!r) return;
      const g = ctx.newGraphCustom(16).buildForwardExpand(r);
      if (bad) return void await computeAs("getRowsBack(row out of range)", g, { want: BoundsError });
      if (!(await computeAs("getRowsBack", g))) return;
      const want = new Float64Array(n0 * rows);
      ids.forEach((row, j) => { for (let i = 0; i < n0; i++) want[row * n0 + i] += av[j * n0 + i]; });
      check("getRowsBack", read("getRowsBack", r), want, 1e-5);
    } else { // index data changed after a good compute: the next compute must see it
      const rows = rng.range(1, 4);
      const tab = ctx.newTensor2d(Type.F32, 3, rows).set(grid(rng, 3 * rows));
      const ids = ctx.newTensor1d(Type.I32, 2).set(Int32Array.of(0, rows - 1));
      const g = ctx.newGraphCustom(16).buildForwardExpand(ctx.getRows(tab, ids));
      if (!(await computeAs("getRows(before the index changes)", g))) return;
      ids.set(Int32Array.of(0, badValue(rows)));
      await computeAs("getRows(index changed to out of range after a compute)", g, { want: BoundsError });
    }
  }

  // ---- set1d / set2d / acc -----------------------------------------------------------------------
  async function setAcc(ctx: Context): Promise<void> {
    const a0 = rng.range(1, 6), a1 = rng.range(1, 4), total = a0 * a1;
    const av = grid(rng, total);
    const which = rng.pick(["set1d", "set2d", "acc"] as const);
    const b0 = rng.range(1, a0 + 1), b1 = which === "set1d" ? 1 : rng.range(1, a1 + 1);
    const bv = grid(rng, b0 * b1);
    const nb1 = 4 * rng.range(Math.max(1, b0 - 1), a0 + 2);
    const off = 4 * rng.int(total + 2);
    const a = ctx.newTensor2d(Type.F32, a0, a1).set(av);
    const b = which === "set1d" ? ctx.newTensor1d(Type.F32, b0).set(bv) : ctx.newTensor2d(Type.F32, b0, b1).set(bv);
    const end = off + (which === "set1d" ? 4 * b0 : nb1 * (b1 - 1) + 4 * b0);
    const make = () => which === "set1d" ? ctx.set1d(a, b, off) : which === "set2d" ? ctx.set2d(a, b, nb1, off) : ctx.acc(a, b, nb1, nb1 * b1, nb1 * b1, off);
    if (b0 * b1 > total) return h.invalid(`${which}(b larger than a)`, ShapeError, make);
    const call = `${which}(${end > 4 * total ? "past the destination" : "inside"})`;
    if (end > 4 * total) return h.invalid(call, BoundsError, make);
    const r = h.valid(call, make);
    if (!r) return;
    if (!(await computeAs(call, ctx.newGraphCustom(16).buildForwardExpand(r)))) return;
    const want = Float64Array.from(av);
    const pitch = which === "set1d" ? b0 : nb1 / 4;
    // Rows may overlap when nb1 < b0·4: later rows win (set) or add up (acc), as the kernel runs them in order.
    for (let j = 0; j < b1; j++) for (let i = 0; i < b0; i++) {
      const p = off / 4 + j * pitch + i;
      want[p] = which === "acc" ? want[p] + bv[i + b0 * j] : bv[i + b0 * j];
    }
    if (which !== "set1d" && pitch < b0 && b1 > 1) return void h.count(`unchecked:${call}(overlapping rows)`);
    check(call, read(call, r), want, want.map((w) => 1e-6 * Math.abs(w) + 1e-6));
  }

  // ---- callbacks that free things during the compute; async computes -----------------------------
  async function callbacks(): Promise<void> {
    const what = rng.pick(["sched", "backend", "context", "buffer", "gallocr", "setEvalCallback", "log", "epoch", "async", "abort"] as const);
    if (what === "epoch") return epochCallback();
    if (what === "async" || what === "abort") return asyncCompute(what === "abort");
    // A scheduler of its own (its eval callback stays with it), over a backend of its own.
    const b = Backend.cpu({ nThreads: 1 });
    const s = new Sched({ backends: [b], graphSize: 64 });
    const pool = new Context({ memSize: 64 << 10 });
    const w = new Context({ memSize: 16 << 10, noAlloc: true });
    const x = w.newTensor1d(Type.F32, 8);
    const buf = allocCtxTensors(w, b)!;
    const xv = grid(rng, 8);
    tensorSet(x, xv);
    // A Gallocr placed a tensor the compute reads (x2, a leaf of the graph it allocated).
    const ga = new Gallocr(b.defaultBufferType);
    const w2 = new Context({ memSize: 16 << 10, noAlloc: true });
    const x2 = w2.newTensor1d(Type.F32, 8);
    ga.allocGraph(w2.newGraphCustom(8).buildForwardExpand(w2.scale(x2, 1)));
    const x2v = grid(rng, 8);
    tensorSet(x2, x2v);
    const y = pool.add(pool.relu(pool.scale(x, 2)), x2);
    const yRef = Float64Array.from(xv, (q, i) => Math.max(0, 2 * q) + x2v[i]);
    const g = pool.newGraphCustom(16).buildForwardExpand(y);
    const swallow = rng.chance(0.5); // the callback catches the refusal (the compute then ends normally) or lets it out
    let refused = 0, other = "";
    const attempt = () => {
      if (what === "sched") s.free();
      else if (what === "backend") b.free();
      else if (what === "context") (rng.chance(0.5) ? pool : w).free();
      else if (what === "buffer") buf.free();
      else if (what === "gallocr") ga.free();
      else if (what === "setEvalCallback") s.setEvalCallback(null);
      else {
        // The log callback, delivered inside the eval callback (a message logged on the JS thread), tries to free the
        // scheduler, its backend or the buffer. It catches what it gets: an error thrown out of a log callback is
        // rethrown as an uncaught error (by design: it cannot cross C), which would end this process.
        let logged = false;
        logSet((_l, _t) => {
          logged = true;
          try {
            rng.pick([() => s.free(), () => b.free(), () => buf.free()])();
          } catch (e) {
            if (e instanceof BusyError) refused++;
            else other ||= `${(e as Error)?.name}: ${(e as Error)?.message}`;
          }
        }, { minLevel: LogLevel.DEBUG });
        try {
          logTest(LogLevel.INFO, "fuzz: free from the log callback\n", null, false);
        } finally {
          logSet(null);
        }
        if (!logged) other ||= "the log callback was not called";
      }
    };
    s.setEvalCallback((_node, ask) => {
      if (ask) return true;
      if (!swallow) return attempt(), true;
      try {
        attempt();
      } catch (e) {
        if (e instanceof BusyError) refused++;
        else other ||= `${(e as Error)?.name}: ${(e as Error)?.message}`;
      }
      return true;
    });
    const call = what === "setEvalCallback" ? "eval callback: setEvalCallback(null) from inside" : what === "log" ? "eval callback: a log callback frees the scheduler, backend or buffer" : `eval callback: free the ${what}`;
    const ok = (() => {
      if (swallow) return h.valid(call, () => s.graphCompute(g)) !== undefined;
      // The callback's error stops the compute and is thrown by graphCompute (the log callback's refusals are counted by it).
      if (what === "log") return h.valid(call, () => s.graphCompute(g)) !== undefined;
      h.invalid(call, BusyError, () => s.graphCompute(g));
      return false;
    })();
    if (other) h.fail(call, `the free threw ${other} (want BusyError)`);
    if ((swallow || what === "log") && refused === 0 && ok) h.fail(call, "no free was refused with BusyError");
    if (ok) check(call, read(call, y), yRef, 1e-6);
    // Everything works afterwards, and frees.
    const after = h.valid(`${call}: compute after`, () => s.setEvalCallback(null).graphCompute(g));
    if (after) check(`${call}: compute after`, read(call, y), yRef, 1e-6);
    h.valid(`${call}: free all`, () => {
      s.free(), ga.free(), w2.free(), pool.free(), buf.free(), w.free(), b.free();
    });
  }

  async function epochCallback(): Promise<void> {
    const what = rng.pick(["optimizer", "dataset", "result", "sched", "backend", "model context"] as const);
    const b = Backend.cpu({ nThreads: 1 });
    const s = new Sched({ backends: [b] });
    const st = new Context({ memSize: 16 << 10, noAlloc: true });
    const a = st.newTensor1d(Type.F32, 1).setParam();
    const inputs = st.newTensor2d(Type.F32, 1, 2).setInput();
    const buf = allocCtxTensors(st, b)!;
    tensorSet(a, Float32Array.of(0.5));
    const cc = new Context({ memSize: 2 * MiB, noAlloc: true });
    const outputs = cc.mul(inputs, a).setOutput();
    const opt = new OptContext({ sched: s, ctxCompute: cc, inputs, outputs, loss: OptLossType.MEAN_SQUARED_ERROR });
    const data = new OptDataset({ neDatapoint: 1, neLabel: 1, ndata: 4 }).setData(new Float32Array(4).fill(1)).setLabels(new Float32Array(4).fill(2));
    const result = new OptResult();
    const call = `epoch callback: free the ${what}`;
    h.invalid(call, BusyError, () => opt.epoch(data, {
      resultTrain: result,
      onProgress: () => {
        if (what === "optimizer") opt.free();
        else if (what === "dataset") data.free();
        else if (what === "result") result.free();
        else if (what === "sched") s.free();
        else if (what === "backend") b.free();
        else st.free();
      },
    }));
    const again = h.valid(`${call}: epoch after`, () => opt.epoch(data));
    if (again && !Number.isFinite(again.train.loss.value)) h.fail(`${call}: epoch after`, `loss ${again.train.loss.value}`);
    h.valid(`${call}: free all`, () => {
      opt.free(), data.free(), result.free(), s.free(), cc.free(), buf.free(), st.free(), b.free();
    });
  }

  /** An async compute (backend or scheduler), maybe aborted, with frees tried while it runs. */
  async function asyncCompute(abort: boolean): Promise<void> {
    const ctx = new Context({ memSize: 64 << 10 });
    const x = ctx.newTensor2d(Type.F32, 16, 16).set(grid(rng, 256));
    let y = ctx.mulMat(x, x);
    for (let i = 0; i < rng.range(0, 6); i++) y = ctx.mulMat(x, y);
    const g = ctx.newGraphCustom(32).buildForwardExpand(y);
    const viaSched = rng.chance(0.5);
    const ac = new AbortController();
    if (abort && rng.chance(0.3)) ac.abort(new Error("fuzz: aborted before"));
    const call = `${viaSched ? "sched" : "backend"}.graphComputeAsync${abort ? "(abort)" : ""}`;
    let p: Promise<void>;
    try {
      p = viaSched ? scheduler().reset().graphComputeAsync(g, { signal: ac.signal }) : backend().graphComputeAsync(g, { signal: ac.signal });
    } catch (e) {
      if (ac.signal.aborted && e === ac.signal.reason) return void (h.count(`aborted:${call}`), ctx.free());
      if (e instanceof UnsupportedOpError) return void (h.count(`err:${call}:${e.code}`), ctx.free()); // a runtime without non-blocking calls
      h.fail(call, `threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
      return void ctx.free();
    }
    // While it runs: frees are refused, so is a second compute on the same backend.
    const victim = rng.pick(["context", "backend", "sched", "compute again"] as const);
    if (victim === "context") h.invalid(`${call}: free the context meanwhile`, BusyError, () => ctx.free());
    else if (victim === "backend") h.invalid(`${call}: free the backend meanwhile`, BusyError, () => backend().free());
    else if (victim === "sched" && viaSched) h.invalid(`${call}: free the scheduler meanwhile`, BusyError, () => (scheduler().free(), sched = undefined));
    else if (victim === "compute again") h.invalid(`${call}: compute the graph again meanwhile`, BusyError, () => g.compute({ nThreads: 1 }));
    if (abort) ac.abort(new Error("fuzz: aborted"));
    try {
      await p;
      h.count(`ok:${call}`);
    } catch (e) {
      if (abort && e === ac.signal.reason) h.count(`aborted:${call}`);
      else if (e instanceof ComputeError || e instanceof UnsupportedOpError) h.count(`err:${call}:${e.code}`);
      else h.fail(call, `rejected with ${(e as Error)?.name}: ${(e as Error)?.message}`);
    }
    h.valid(`${call}: free after`, () => ctx.free());
  }

  // ---- quantize with NaN / infinite inputs --------------------------------------------------------
  function quantizeNaN(): void {
    const type = rng.pick(ALL_Q);
    const tr = typeTraits(type);
    const nPerRow = tr.blck === 1 ? 32 : tr.blck;
    const rows = rng.range(1, 2);
    const src = grid(rng, nPerRow * rows);
    const bad = rng.pick([NaN, Infinity, -Infinity, 3e38]);
    src[rng.int(src.length)] = bad;
    const imatrix = requiresImatrix(type) || rng.chance(0.3) ? Float32Array.from({ length: nPerRow }, () => 0.5 + rng.next()) : undefined;
    if (imatrix && rng.chance(0.3)) imatrix[rng.int(nPerRow)] = rng.pick([NaN, 0, -1, Infinity]);
    // ggml quantizes NaN to a garbage block for most types (no abort); the searched types refuse it.
    h.guarded(`quantize(${tr.name}, ${bad}${imatrix ? ", imatrix" : ""})`, [ArgumentError, GgmlTypeError], () => quantize(type, src, { nPerRow, imatrix }));
  }

  return {
    /** One scenario (a promise: some compute asynchronously). */
    async step(): Promise<void> {
      let k = rng.int(100);
      if (only !== undefined) k = only;
      if (profile) {
        const t0 = performance.now();
        await scenario(k);
        const name = k < 12 ? "callbacks" : k < 20 ? "quantizeNaN" : k < 42 ? "typedOperand" : k < 66 ? "strided" : k < 86 ? "indexOps" : "setAcc";
        profile.set(name, (profile.get(name) ?? 0) + performance.now() - t0);
        return;
      }
      return scenario(k);
    },
    profile,
    dispose(): void {
      sched?.free();
      sched = undefined;
      be?.free();
    },
  };
  async function scenario(k: number): Promise<void> {
      if (k < 12) return callbacks();
      if (k < 20) return quantizeNaN();
      // Small pools: 1 MiB ones churned by the thousand grow the resident set through the allocator's fragmentation.
      const ctx = new Context({ memSize: 128 << 10 });
      try {
        if (k < 42) await typedOperand(ctx);
        else if (k < 66) await strided(ctx);
        else if (k < 86) await indexOps(ctx);
        else await setAcc(ctx);
      } catch (e) {
        if (e instanceof ContextOutOfMemoryError || e instanceof UseAfterFreeError || e instanceof NotAllocatedError) h.fail("compute fuzz", `${e.name}: ${e.message}`);
        else throw e;
      } finally {
        ctx.free();
      }
  }
}
