// The API fuzz run, in its own process (api_fuzz.test.ts starts it, so that a crash is a failed
// test naming the seed and the step, not a dead runner). A seeded random sequence of API calls over
// a changing population of contexts (large, tiny, noAlloc; some exhausted, some freed), f32 leaf
// tensors with JS-side values, op results built from them (add / sub / mul with broadcasting,
// scale, relu, neg, sqr, sum, mulMat, cont(transpose), view1d, reshape2d), graphs of small custom
// sizes, CPU backends, backend buffers (allocCtxTensors) and schedulers. Each step is a valid call
// or a call with exactly one defect (wrong shape, freed handle, view out of range, wrong array,
// graph too small, unallocated tensor, …). A valid call must succeed — or, when it creates
// something in a pool, throw ContextOutOfMemoryError consistent with the pool's free bytes — and a
// computed result must match a float64 evaluation of the same expression in JS (tolerance below);
// a defective call must throw the GgmlError subclass its defect calls for. Anything else is a
// failure; a crash ends the process, which the parent reports with the seed and the last step.
// A share of the steps (COMPUTE_SHARE) runs a compute-time scenario of api_fuzz_compute.ts instead:
// non-f32 operands, strided views computed, index data in and out of range, set/acc offsets,
// callbacks that free what the compute uses, async computes with abort, quantize with NaN; it draws
// from its own PRNG, so the rest of a seed's sequence does not depend on it.
//
// Environment: WSP_GGML_FUZZ_SEED (default 1), WSP_GGML_FUZZ_STEPS (default 3000),
// WSP_GGML_FUZZ_TRACE=1 (print every step, to replay a crash and see the last call),
// WSP_GGML_FUZZ_COMPUTE_SHARE (percent of steps that are compute scenarios, default 2; 100: only those),
// WSP_GGML_FUZZ_COMPUTE_ONLY=<0-99> (every compute scenario of one kind), WSP_GGML_FUZZ_PROFILE=1
// (milliseconds per compute scenario kind).
// Prints `fuzz-progress {...}` at each tenth and `fuzz-report {...}` at the end.
import process from "node:process";
import {
  allocCtxTensors,
  ArgumentError,
  Backend,
  BoundsError,
  type Buffer,
  Context,
  ContextOutOfMemoryError,
  Gallocr,
  GgmlError,
  GgmlTypeError,
  type Graph,
  GraphFullError,
  NotAllocatedError,
  Sched,
  ShapeError,
  type Tensor,
  tensorGet,
  tensorSet,
  Type,
  UnsupportedOpError,
  UseAfterFreeError,
} from "../../mod.ts";
import { envInt, forcedGc, mib, Rng, rss } from "./lib.ts";
import { computeFuzz } from "./api_fuzz_compute.ts";

const seed = envInt("WSP_GGML_FUZZ_SEED", 1);
const steps = envInt("WSP_GGML_FUZZ_STEPS", 3000);
const trace = process.env.WSP_GGML_FUZZ_TRACE === "1";
const rng = new Rng(seed);

/**
 * Tolerance of a computed element against the float64 reference: f32 rounding of each operation
 * along the expression, bounded by `REL × (the magnitude of the terms that made it)`. The
 * magnitude bound `mag` is carried through the expression alongside the reference (Σ|terms| for
 * sums and products), so cancellation does not make the bound vanish.
 */
const REL = 1e-5;

// ---- the population ----------------------------------------------------------------------------
/** A context of the fuzz; `deps` mirrors the contexts its tensors and graphs refer to (a graph computes only while all of them, transitively, live). */
interface Ctx { ctx: Context; noAlloc: boolean; tiny: boolean; buffer?: Buffer; deps: Set<Ctx>; views: Val[]; plain: number }
/** A tensor of the fuzz: its reference value (logical order) and magnitude bound, both lazy. */
interface Val {
  t: Tensor;
  shape: number[];
  ref: () => Float64Array;
  mag: () => Float64Array;
  /** The contexts whose memory this value (or any of its sources) lives in. */
  ctxs: Set<Ctx>;
  /** The distinct values of its expression (itself included): the graph's nodes and leafs. */
  parts: Set<Val>;
  leaf: boolean;
  /** The context its tensor was created in. */
  home: Ctx;
  /** Whether the tensor has data: in its pool, in a backend buffer (allocCtxTensors), or shared with the tensor it views. */
  hasData: boolean;
  /** For view ops: the value whose data it shares. */
  viewOf?: Val;
  /** Contiguous in memory (view1d / reshape need it). */
  contiguous: boolean;
}

const contexts: Ctx[] = [];
const vals: Val[] = [];
const leafData = new Map<Val, Float64Array>();
const backends: Backend[] = [];
const scheds: { sched: Sched; backend: Backend }[] = [];
const dead = { ctx: [] as Ctx[], vals: [] as Val[], backends: [] as Backend[], scheds: [] as Sched[], graphs: [] as Graph[] };

/** The contexts `c` refers to, transitively (itself included). */
function closure(c: Ctx): Set<Ctx> {
  const seen = new Set([c]);
  for (const x of seen) x.deps.forEach((d) => seen.add(d));
  return seen;
}
/**
 * Whether a context `v`'s tensors live in refers to a freed one. Then resolving a source pointer may
 * be refused (UseAfterFreeError): the freed pool's memory may belong to a newer context by now, and
 * the API does not tell a pointer into the newer pool from a dangling one in the old range.
 */
const poisoned = (v: Val) => [...v.parts].some((p) => [...closure(p.home)].some((c) => c.ctx.freed));
const isDead = (v: Val) => [...v.ctxs].some((c) => c.ctx.freed) || [...v.ctxs].some((c) => c.buffer?.freed === true);
const live = () => vals.filter((v) => !isDead(v));
/** Every tensor of the expression has data: the CPU can compute it as it is. */
const allocated = (v: Val) => [...v.parts].every((p) => p.hasData);
/** Every leaf has data (a scheduler allocates the rest): the result can be checked. */
const leafsSet = (v: Val) => [...v.parts].every((p) => !p.leaf || p.hasData);
const n = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

// ---- outcomes ----------------------------------------------------------------------------------
type ErrorClass = abstract new (...a: never[]) => GgmlError;
const outcomes = new Map<string, number>();
const failures: { step: number; call: string; error: string }[] = [];
let step = 0;
let calls = 0;
const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
const fail = (call: string, error: string) => {
  failures.push({ step, call, error });
  count(`FAILURE:${call}`);
};

/** A call that must succeed (or run out of pool memory when `mayOom`, consistently). */
function valid<T>(call: string, f: () => T, mayOom = false): T | undefined {
  calls++;
  if (trace) console.log(`step ${step} valid ${call}`);
  try {
    const r = f();
    count(`ok:${call}`);
    return r;
  } catch (e) {
    if (mayOom && e instanceof ContextOutOfMemoryError && e.needed > e.available) {
      count(`oom:${call}`);
      return undefined;
    }
    fail(call, `a valid call threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
    return undefined;
  }
}

/** A call that may succeed or throw one of `allowed` (outcomes the fuzz does not predict). */
function guarded<T>(call: string, allowed: ErrorClass[], f: () => T): T | undefined {
  calls++;
  if (trace) console.log(`step ${step} guarded ${call}`);
  try {
    const r = f();
    count(`ok:${call}`);
    return r;
  } catch (e) {
    if (allowed.some((c) => e instanceof c) && (e as Error).message) count(`err:${call}:${(e as GgmlError).code}`);
    else fail(call, `threw ${(e as Error)?.name}: ${(e as Error)?.message} (allowed: success, ${allowed.map((c) => c.name).join(", ")})`);
    return undefined;
  }
}

/** A call with one defect: it must throw `want` (a GgmlError subclass) with a message. */
function invalid(call: string, want: ErrorClass, f: () => unknown): void {
  calls++;
  if (trace) console.log(`step ${step} invalid ${call} (want ${want.name})`);
  try {
    f();
    fail(call, `did not throw (want ${want.name})`);
  } catch (e) {
    if (e instanceof want && (e as Error).message) count(`err:${call}:${(e as GgmlError).code}`);
    else fail(call, `threw ${(e as Error)?.name}: ${(e as Error)?.message} (want ${want.name})`);
  }
}

// ---- building values ---------------------------------------------------------------------------
function pickCtx(pred: (c: Ctx) => boolean = () => true): Ctx | undefined {
  const cs = contexts.filter((c) => !c.ctx.freed && pred(c));
  return cs.length ? rng.pick(cs) : undefined;
}

function newContext(): void {
  const tiny = rng.chance(0.3);
  const noAlloc = !tiny && rng.chance(0.25);
  const memSize = tiny ? rng.pick([256, 600, 1024, 2048, 4096]) : rng.pick([64 << 10, 256 << 10, 1 << 20]);
  const ctx = valid("newContext", () => new Context({ memSize, noAlloc }));
  if (ctx) contexts.push({ ctx, noAlloc, tiny, deps: new Set(), views: [], plain: 0 });
}

const SHAPES = [[1], [3], [4], [7], [2, 3], [3, 2], [4, 4], [5, 3], [3, 1], [1, 3], [2, 3, 2], [4, 2, 1, 2]];

function newLeaf(): void {
  const c = pickCtx();
  if (!c) return newContext();
  const shape = rng.chance(0.7) ? rng.pick(SHAPES) : [rng.range(1, 9), rng.range(1, 5)];
  const t = valid("newTensor", () => c.ctx.newTensor(Type.F32, shape), true);
  if (!t) return;
  const v: Val = { t, shape: [...shape], ref: () => leafData.get(v)!.slice(), mag: () => leafData.get(v)!.map(Math.abs), ctxs: new Set([c]), parts: new Set(), leaf: true, home: c, hasData: !c.noAlloc, contiguous: true };
  v.parts.add(v);
  c.plain++;
  const data = Float32Array.from({ length: n(shape) }, () => Math.round((rng.next() * 4 - 2) * 64) / 64);
  leafData.set(v, Float64Array.from(data));
  vals.push(v);
  if (!c.noAlloc) valid("set", () => t.set(data));
}

/** Allocates a noAlloc context's tensors in a CPU backend buffer and sets the leafs' data. */
function allocBuffer(): void {
  const c = pickCtx((c) => c.noAlloc && !c.buffer);
  const be = pickBackend();
  if (!c || !be) return;
  // A view of a tensor in no backend buffer (a pool's, or another context's unallocated one) cannot be placed.
  // With views in the context the outcome depends on where each viewed tensor is (a pool's, another
  // context's, freed): a buffer, or a typed refusal; which one is not mirrored here.
  if (trace) for (const v of c.views) console.log(`  view ${v.t.describe()} of ${v.viewOf!.t.context.freed ? "a freed context's tensor" : v.viewOf!.t.describe()} (${v.viewOf!.home.noAlloc ? "noAlloc" : "pool"}, ${v.viewOf!.hasData ? "data" : "no data"}, same context ${v.viewOf!.home === c})`);
  const buf = c.views.length === 0
    ? valid("allocCtxTensors", () => allocCtxTensors(c.ctx, be))
    : guarded("allocCtxTensors(with views)", [NotAllocatedError, UseAfterFreeError, ContextOutOfMemoryError, GgmlError], () => allocCtxTensors(c.ctx, be));
  if (!buf) return;
  c.buffer = buf;
  // Every tensor of the context without data gets a place (views share their source's, when it has data).
  for (const v of vals) {
    if (v.home !== c || v.hasData || v.viewOf) continue;
    v.hasData = true;
    if (v.leaf) valid("tensorSet", () => tensorSet(v.t, Float32Array.from(leafData.get(v)!)));
  }
  for (const v of c.views) if (!v.hasData) v.hasData = v.viewOf!.hasData; // in creation order: a view's source comes first
}

function pickBackend(): Backend | undefined {
  const bs = backends.filter((b) => !b.freed);
  if (bs.length) return rng.pick(bs);
  const b = valid("Backend.cpu", () => Backend.cpu({ nThreads: rng.range(1, 2) }));
  if (b) backends.push(b);
  return b;
}

/** Index of element `i` (logical, ne0 fastest) of `shape` broadcast from `from` (ggml's repeat rule). */
function bcastIndex(i: number, shape: number[], from: number[]): number {
  let j = 0, mul = 1;
  const s = [...shape, 1, 1, 1].slice(0, 4), f = [...from, 1, 1, 1].slice(0, 4);
  for (let d = 0; d < 4; d++) {
    const k = i % s[d];
    i = Math.floor(i / s[d]);
    j += (k % f[d]) * mul;
    mul *= f[d];
  }
  return j;
}

function derive(home: Ctx, t: Tensor, shape: number[], srcs: Val[], ref: () => Float64Array, mag: () => Float64Array, view = false, contiguous = true): Val {
  const v: Val = { t, shape, ref, mag, ctxs: new Set([home]), parts: new Set(), leaf: false, home, hasData: view ? srcs[0].hasData : !home.noAlloc, contiguous };
  if (view) v.viewOf = srcs[0], home.views.push(v);
  else home.plain++;
  for (const s of srcs) {
    s.ctxs.forEach((c) => v.ctxs.add(c));
    s.ctxs.forEach((c) => home.deps.add(c));
    s.parts.forEach((p) => v.parts.add(p));
  }
  v.parts.add(v);
  return v;
}

const full = (shape: number[]) => [...shape, 1, 1, 1].slice(0, 4);
const canRepeat = (small: number[], big: number[]) => full(big).every((x, i) => x % full(small)[i] === 0);

/** An op over live values: valid when the shapes fit, otherwise a ShapeError is due. */
function op(): void {
  const pool = live();
  if (pool.length === 0) return newLeaf();
  const a = rng.pick(pool);
  if (poisoned(a)) return;
  const c = rng.chance(0.8) ? pickCtx((x) => x.noAlloc === [...a.ctxs].some((y) => y.noAlloc)) ?? pickCtx() : pickCtx();
  if (!c) return newContext();
  const ctx = c.ctx;
  const kind = rng.int(10);
  const add = (v: Val | undefined) => v && vals.push(v);
  if (kind <= 2) { // add / sub / mul, broadcasting b over a
    const name = (["add", "sub", "mul"] as const)[kind];
    const b = rng.pick(pool);
    if (poisoned(b)) return;
    const f = name === "add" ? (x: number, y: number) => x + y : name === "sub" ? (x: number, y: number) => x - y : (x: number, y: number) => x * y;
    if (!canRepeat(b.shape, a.shape)) return invalid(`${name}(shape mismatch)`, ShapeError, () => ctx[name](a.t, b.t));
    const shape = full(a.shape).slice(0, Math.max(a.shape.length, 1));
    const t = valid(name, () => ctx[name](a.t, b.t), true);
    if (!t) return;
    add(derive(c, t, a.shape, [a, b], () => {
      const x = a.ref(), y = b.ref();
      return x.map((xv, i) => f(xv, y[bcastIndex(i, shape, b.shape)]));
    }, () => {
      const x = a.mag(), y = b.mag();
      return x.map((xv, i) => name === "mul" ? xv * y[bcastIndex(i, shape, b.shape)] : xv + y[bcastIndex(i, shape, b.shape)]);
    }));
  } else if (kind === 3) { // scale
    const s = rng.pick([0.5, -2, 3, 0.125]);
    const t = valid("scale", () => ctx.scale(a.t, s), true);
    if (t) add(derive(c, t, a.shape, [a], () => a.ref().map((x) => x * s), () => a.mag().map((x) => x * Math.abs(s))));
  } else if (kind === 4) { // unary
    const name = rng.pick(["relu", "neg", "sqr"] as const);
    const f = name === "relu" ? (x: number) => Math.max(0, x) : name === "neg" ? (x: number) => -x : (x: number) => x * x;
    const t = valid(name, () => ctx[name](a.t), true);
    if (t) add(derive(c, t, a.shape, [a], () => a.ref().map(f), () => a.mag().map((x) => name === "sqr" ? x * x : x)));
  } else if (kind === 5) { // sum
    const t = valid("sum", () => ctx.sum(a.t), true);
    if (t) add(derive(c, t, [1], [a], () => Float64Array.of(a.ref().reduce((p, q) => p + q, 0)), () => Float64Array.of(a.mag().reduce((p, q) => p + q, 0))));
  } else if (kind === 6) { // mulMat: a [k, m], b [k, n] → [m, n]
    const b = rng.pick(pool);
    if (poisoned(b)) return;
    const [k, m] = full(a.shape), [k2, nn] = full(b.shape);
    const flat = (s: number[]) => full(s)[2] === 1 && full(s)[3] === 1;
    if (!flat(a.shape) || !flat(b.shape)) return;
    if (k !== k2) return invalid("mulMat(ne0 mismatch)", ShapeError, () => ctx.mulMat(a.t, b.t));
    const t = valid("mulMat", () => ctx.mulMat(a.t, b.t), true);
    const mm = (x: Float64Array, y: Float64Array) => {
      const out = new Float64Array(m * nn);
      for (let j = 0; j < nn; j++) for (let i = 0; i < m; i++) {
        let s = 0;
        for (let l = 0; l < k; l++) s += x[l + k * i] * y[l + k * j];
        out[i + m * j] = s;
      }
      return out;
    };
    if (t) add(derive(c, t, [m, nn], [a, b], () => mm(a.ref(), b.ref()), () => mm(a.mag(), b.mag())));
  } else if (kind === 7) { // cont(transpose(a)) of a matrix
    const [x, y, z, w] = full(a.shape);
    if (z !== 1 || w !== 1) return;
    const tr = valid("transpose", () => ctx.transpose(a.t), true);
    if (!tr) return;
    const tp = (r: Float64Array) => {
      const out = new Float64Array(x * y);
      for (let i = 0; i < x; i++) for (let j = 0; j < y; j++) out[j + y * i] = r[i + x * j];
      return out;
    };
    // The transposed view itself is not contiguous: only cont (and reshape, wrongly) take it.
    const tv = derive(c, tr, [y, x], [a], () => tp(a.ref()), () => tp(a.mag()), true, false);
    if (x > 1 && y > 1 && rng.chance(0.2)) return invalid("reshape2d(non-contiguous)", ShapeError, () => ctx.reshape2d(tr, x * y, 1));
    const t = valid("cont", () => ctx.cont(tr), true);
    if (t) add(derive(c, t, [y, x], [tv], () => tv.ref(), () => tv.mag()));
  } else if (kind === 8) { // view1d, inside or outside the data
    const total = n(a.shape);
    if (!a.contiguous) return invalid("view1d(bytes of a non-contiguous tensor: reshape)", ShapeError, () => ctx.reshape1d(a.t, total));
    if (!a.viewOf && rng.chance(0.3)) { // (a view's views are bounded by the tensor it views, ggml's rule)
      const len = rng.range(1, total), off = rng.range(total - len + 1, total + 4);
      return invalid("view1d(out of range)", BoundsError, () => ctx.view1d(a.t, len, off * 4));
    }
    const len = rng.range(1, total), off = rng.int(total - len + 1);
    const t = valid("view1d", () => ctx.view1d(a.t, len, off * 4), true);
    if (t) add(derive(c, t, [len], [a], () => a.ref().slice(off, off + len), () => a.mag().slice(off, off + len), true));
  } else { // reshape2d, with the right or a wrong element count
    const total = n(a.shape);
    if (!a.contiguous) return invalid("reshape2d(non-contiguous)", ShapeError, () => ctx.reshape2d(a.t, total, 1));
    const divs = Array.from({ length: total }, (_, i) => i + 1).filter((d) => total % d === 0);
    if (rng.chance(0.25)) return invalid("reshape2d(element count)", ShapeError, () => ctx.reshape2d(a.t, total + 1, 1));
    const d0 = rng.pick(divs);
    const t = valid("reshape2d", () => ctx.reshape2d(a.t, d0, total / d0), true);
    if (t) add(derive(c, t, [d0, total / d0], [a], () => a.ref(), () => a.mag(), true));
  }
}

// ---- computing and checking --------------------------------------------------------------------
function check(call: string, v: Val): void {
  let got: ArrayLike<number>;
  try {
    // Data in a pool reads with get(); data in a backend buffer (a noAlloc context's) through the backend.
    const dataHome = (x: Val): Ctx => x.viewOf ? dataHome(x.viewOf) : x.home;
    got = dataHome(v).noAlloc ? tensorGet(v.t) as Float32Array : v.t.get(Float32Array);
  } catch (e) {
    return fail(call, `reading the result threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
  }
  const want = v.ref(), mag = v.mag();
  if (got.length !== want.length) return fail(call, `result has ${got.length} elements, want ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const tol = REL * Math.max(mag[i], 1e-30) * (1 + v.parts.size);
    if (!(Math.abs(got[i] - want[i]) <= tol)) return fail(call, `element ${i} = ${got[i]}, want ${want[i]} ± ${tol} (${v.t.describe()})`);
  }
  count(`checked:${call}`);
}

/** How many nodes and leafs `v`'s graph has: op results are nodes, tensors made by newTensor leafs. */
function partsOf(v: Val): { nodes: number; leafs: number } {
  let nodes = 0, leafs = 0;
  for (const p of v.parts) p.leaf ? leafs++ : nodes++;
  return { nodes, leafs };
}

function compute(): void {
  const pool = live().filter((v) => !v.leaf);
  if (pool.length === 0) return op();
  const v = rng.pick(pool);
  // The graph lives in a context of the expression (or any live one), sized at random: too small is a GraphFullError.
  const gc = rng.chance(0.7) ? rng.pick([...v.ctxs]) : pickCtx() ?? rng.pick([...v.ctxs]);
  const { nodes, leafs } = partsOf(v);
  const size = rng.chance(0.3) ? rng.range(1, Math.max(nodes, leafs)) : rng.range(Math.max(nodes, leafs), Math.max(nodes, leafs) + 8);
  const graph = valid("newGraphCustom", () => gc.ctx.newGraphCustom(size), true);
  if (!graph) return;
  if (poisoned(v)) {
    if (guarded("buildForwardExpand(refers to a freed context)", [GraphFullError, UseAfterFreeError], () => graph.buildForwardExpand(v.t))) {
      v.ctxs.forEach((c) => gc.deps.add(c));
    }
    return;
  }
  if (nodes > size || leafs > size) return invalid("buildForwardExpand(graph too small)", GraphFullError, () => graph.buildForwardExpand(v.t));
  if (valid("buildForwardExpand", () => graph.buildForwardExpand(v.t)) === undefined) return;
  v.ctxs.forEach((c) => gc.deps.add(c));
  if ([...closure(gc)].some((c) => c.ctx.freed)) {
    // The graph's context refers to a freed one (through an earlier tensor or graph): every compute refuses.
    return invalid("compute(the graph's context refers to a freed context)", UseAfterFreeError, () => graph.compute({ nThreads: 1 }));
  }
  if (rng.chance(0.05)) dead.graphs.push(graph);
  if (trace) for (const p of v.parts) console.log(`  ${p.t.describe()} op ${p.t.op} ${p.leaf ? "leaf" : "node"} ${p.home.noAlloc ? "noAlloc" : "pool"} ${p.hasData ? "data" : "no data"} buffer ${p.home.buffer ? "yes" : "no"}`);
  const needsSched = !allocated(v);
  const how = needsSched ? (rng.chance(0.85) ? "sched" : rng.pick(["graph.compute", "backend.graphCompute"])) : rng.pick(["graph.compute", "backend.graphCompute", "sched"]);
  if (how === "sched") {
    const s = pickSched();
    if (!s) return;
    if (nodes + leafs > s.sched.graphSize) return invalid("sched.graphCompute(graph larger than graphSize)", BoundsError, () => s.sched.graphCompute(graph));
    const checkable = leafsSet(v);
    const ok = valid(checkable ? "sched.graphCompute" : "sched.graphCompute(unset leafs)", () => s.sched.reset().graphCompute(graph)) !== undefined;
    // Leafs without data were given garbage by the scheduler: nothing to check then.
    if (ok) checkable ? check("sched", v) : count("unchecked:sched");
    // What the scheduler allocated lives in its buffers: those tensors leave the population, and so do the graphs
    // computed before that share one (recomputing them now has data, or none once the scheduler is freed or
    // collected: which, the fuzz does not follow; a 200,000-step run once expected NotAllocatedError there).
    const placed = new Set([...v.parts].filter((p) => !p.hasData));
    retire((p) => placed.has(p));
    for (let i = computed.length - 1; i >= 0; i--) if ([...computed[i].v.parts].some((p) => placed.has(p))) computed.splice(i, 1);
    return;
  }
  if (needsSched) {
    const be = pickBackend();
    if (!be) return;
    return invalid(`${how}(unallocated nodes)`, NotAllocatedError, () => how === "graph.compute" ? graph.compute({ nThreads: 1 }) : be.graphCompute(graph));
  }
  if (how === "graph.compute") {
    if (valid("graph.compute", () => graph.compute({ nThreads: rng.range(1, 2) })) !== undefined) check("graph.compute", v), remember(graph, v, gc);
  } else {
    const be = pickBackend();
    if (be && valid("backend.graphCompute", () => be.graphCompute(graph)) !== undefined) check("backend.graphCompute", v), remember(graph, v, gc);
  }
}

/** Graphs computed on the CPU (not by a scheduler), to compute again later, when their tensors may have changed hands. */
const computed: { graph: Graph; v: Val; gc: Ctx }[] = [];
function remember(graph: Graph, v: Val, gc: Ctx): void {
  computed.push({ graph, v, gc });
  if (computed.length > 30) computed.shift();
}

/** Whether `p`'s data was in a backend buffer that has been freed since (directly, or through the tensor it views). */
const lost = (p: Val): boolean => (p.home.noAlloc && p.home.buffer?.freed === true) || (p.viewOf !== undefined && lost(p.viewOf));

/** Computes a graph again: its results again, or the error its tensors' fate since calls for. */
function recompute(): void {
  if (computed.length === 0) return compute();
  const { graph, v, gc } = rng.pick(computed);
  const be = pickBackend();
  if (!be) return;
  const run = (): unknown => rng.chance(0.5) ? graph.compute({ nThreads: 1 }) : be.graphCompute(graph);
  if ([...closure(gc)].some((c) => c.ctx.freed)) return invalid("compute again(a context was freed)", UseAfterFreeError, run);
  if ([...v.parts].some(lost)) return invalid("compute again(a buffer was freed)", NotAllocatedError, run);
  if (valid("compute again", run) !== undefined) check("compute again", v);
}

/** Removes the values `gone` selects, and every value built on one of them, from the population. */
function retire(gone: (v: Val) => boolean): void {
  const out = new Set(vals.filter(gone));
  for (let i = vals.length - 1; i >= 0; i--) if ([...vals[i].parts].some((p) => out.has(p))) vals.splice(i, 1);
}

function pickSched(): { sched: Sched; backend: Backend } | undefined {
  const ss = scheds.filter((s) => !s.backend.freed);
  if (ss.length && rng.chance(0.8)) return rng.pick(ss);
  const be = pickBackend();
  if (!be) return undefined;
  const graphSize = rng.pick([4, 8, 16, 64, 2048]);
  if (scheds.length >= 4) { // keep a few
    const old = scheds.shift()!;
    valid("sched.free", () => old.sched.free());
    dead.scheds.push(old.sched);
  }
  const sched = valid("new Sched", () => new Sched({ backends: [be], graphSize }));
  if (!sched) return undefined;
  const s = { sched, backend: be };
  scheds.push(s);
  return s;
}

// ---- defects on data, handles and arguments ----------------------------------------------------
function misuse(): void {
  const k = rng.int(14);
  const pool = live();
  const a = pool.length ? rng.pick(pool) : undefined;
  const c = pickCtx();
  switch (k) {
    case 0: {
      if (!a?.leaf || a.home.noAlloc) return;
      const len = n(a.shape) + rng.pick([-1, 1, 5]);
      if (len < 0) return;
      return invalid("set(wrong length)", BoundsError, () => a.t.set(new Float32Array(len)));
    }
    case 1:
      if (!a?.leaf || a.home.noAlloc) return;
      return invalid("set(wrong array type)", GgmlTypeError, () => a.t.set(new Int32Array(n(a.shape))));
    case 2: {
      const d = dead.vals.length ? rng.pick(dead.vals) : undefined;
      if (!d || !c) return;
      if (!d.t.context.freed) {
        // Its own context lives, a source's does not: building a graph from it must notice.
        const g = valid("newGraphCustom", () => c.ctx.newGraphCustom(64), true);
        return g && invalid("buildForwardExpand(a source's context was freed)", UseAfterFreeError, () => g.buildForwardExpand(d.t));
      }
      return invalid("op on a freed tensor", UseAfterFreeError, () => c.ctx.add(d.t, d.t));
    }
    case 3: {
      const own = dead.vals.filter((v) => v.home.ctx.freed);
      const d = own.length ? rng.pick(own) : undefined;
      if (!d) return;
      return invalid(rng.chance(0.5) ? "read a freed tensor" : "shape of a freed tensor", UseAfterFreeError, () => rng.chance(0.5) ? d.t.get() : d.t.shape);
    }
    case 4: {
      const dc = dead.ctx.length ? rng.pick(dead.ctx) : undefined;
      if (!dc) return;
      return invalid("newTensor in a freed context", UseAfterFreeError, () => dc.ctx.newTensor1d(Type.F32, 4));
    }
    case 5: {
      const g = dead.graphs.find((g) => g.context.freed);
      if (!g) return;
      return invalid("compute a freed context's graph", UseAfterFreeError, () => g.compute({ nThreads: 1 }));
    }
    case 6:
      if (!c) return;
      return rng.chance(0.5)
        ? invalid("newTensor(negative ne)", ArgumentError, () => c.ctx.newTensor(Type.F32, [4, -rng.range(1, 3)]))
        : invalid("newTensor(5 dims)", ArgumentError, () => c.ctx.newTensor(Type.F32, [1, 1, 1, 1, 1]));
    case 7:
      if (!c) return;
      return invalid("newTensor(q4_0 ne0 not a block multiple)", ShapeError, () => c.ctx.newTensor1d(Type.Q4_0, rng.range(1, 31)));
    case 8:
      if (!c) return;
      return invalid("newGraphCustom(0)", ArgumentError, () => c.ctx.newGraphCustom(0));
    case 9: {
      const b = dead.backends.length ? rng.pick(dead.backends) : undefined;
      if (!b) return;
      return invalid(rng.chance(0.5) ? "freed backend: name" : "freed backend: Sched", UseAfterFreeError, () => rng.chance(0.5) ? b.name : new Sched({ backends: [b] }));
    }
    case 10: {
      const s = dead.scheds.length ? rng.pick(dead.scheds) : undefined;
      if (!s) return;
      return invalid("freed sched: reset", UseAfterFreeError, () => s.reset());
    }
    case 11: {
      const v = pool.find((x) => x.leaf && x.home.noAlloc && x.hasData);
      if (!v) return;
      return invalid("tensorSet(past the end)", BoundsError, () => tensorSet(v.t, new Float32Array(2), (n(v.shape) - 1) * 4));
    }
    case 12: {
      const freedBuf = vals.find((x) => x.leaf && x.home.buffer?.freed && !x.home.ctx.freed);
      if (!freedBuf) return;
      return invalid("tensorSet after its buffer was freed", NotAllocatedError, () => tensorSet(freedBuf.t, new Float32Array(n(freedBuf.shape))));
    }
    default: {
      const lazy = pool.find((x) => x.leaf && !x.hasData);
      if (!lazy) return;
      return invalid("set on an unallocated tensor", NotAllocatedError, () => lazy.t.set(new Float32Array(n(lazy.shape))));
    }
  }
}

/** Frees something: a context (its values die with it), a buffer, a backend, a scheduler; or frees twice. */
function free(): void {
  const k = rng.int(6);
  if (k <= 1) {
    const c = pickCtx();
    if (!c) return;
    valid("context.free", () => c.ctx.free());
    dead.ctx.push(c);
    for (const v of vals.filter((v) => v.ctxs.has(c))) dead.vals.push(v), vals.splice(vals.indexOf(v), 1);
    // Views elsewhere of its memory: gone with it (their data pointed into the freed pool).
    contexts.splice(contexts.indexOf(c), 1);
    if (rng.chance(0.3)) valid("context.free (again)", () => c.ctx.free());
  } else if (k === 2) {
    const c = pickCtx((c) => c.buffer !== undefined && !c.buffer.freed);
    if (!c) return;
    valid("buffer.free", () => c.buffer!.free());
    // Its tensors have no data now; the leafs stay (unallocated: a defect to try), what was built on them goes
    // (a view in another context would still point into the freed buffer).
    for (const v of vals) if (v.home === c) v.hasData = false;
    retire((v) => !v.leaf && [...v.parts].some((p) => p.home === c));
  } else if (k === 3) {
    const s = scheds.length ? rng.pick(scheds) : undefined;
    if (!s) return;
    valid("sched.free", () => s.sched.free());
    dead.scheds.push(s.sched);
    scheds.splice(scheds.indexOf(s), 1);
  } else if (k === 4) {
    const b = backends.find((b) => !b.freed);
    if (!b) return;
    // Its schedulers go first (a scheduler uses its backends until freed).
    for (const s of scheds.filter((s) => s.backend === b)) {
      valid("sched.free", () => s.sched.free());
      dead.scheds.push(s.sched);
      scheds.splice(scheds.indexOf(s), 1);
    }
    valid("backend.free", () => b.free());
    backends.splice(backends.indexOf(b), 1);
    dead.backends.push(b);
  } else {
    // Keep the population bounded: drop the oldest values and contexts beyond a few.
    while (vals.length > 60) vals.shift();
    while (contexts.length > 8) {
      const c = contexts.shift()!;
      valid("context.free", () => c.ctx.free());
      c.buffer?.free();
      for (const v of vals.filter((v) => v.ctxs.has(c))) vals.splice(vals.indexOf(v), 1);
    }
  }
  if (dead.vals.length > 50) dead.vals.splice(0, dead.vals.length - 50);
  if (dead.ctx.length > 20) dead.ctx.splice(0, dead.ctx.length - 20);
  if (dead.scheds.length > 20) dead.scheds.splice(0, dead.scheds.length - 20);
  if (dead.backends.length > 20) dead.backends.splice(0, dead.backends.length - 20);
  if (dead.graphs.length > 20) dead.graphs.splice(0, dead.graphs.length - 20);
}

// ---- regressions: crashes this fuzz found, each once, before the random steps ----------------------
function regressions(): void {
  const t = (name: string, f: () => void) => {
    calls++;
    try {
      f();
      count(`regression:${name}`);
    } catch (e) {
      fail(`regression:${name}`, String((e as Error)?.stack ?? e).split("\n").slice(0, 3).join(" | "));
    }
  };
  /** Each call must throw NotAllocatedError. */
  const notAllocated = (...fs: (() => unknown)[]) => {
    fs.forEach((f, i) => {
      try {
        f();
      } catch (e) {
        if (e instanceof NotAllocatedError) return;
        throw e;
      }
      throw new Error(`call ${i}: no NotAllocatedError`);
    });
  };
  /** `f` computes and returns [got, want]: it must match, or be refused with a typed ShapeError / UnsupportedOpError. */
  const refusedOrRight = (what: string, f: () => [ArrayLike<number>, ArrayLike<number>]) => {
    let r: [ArrayLike<number>, ArrayLike<number>];
    try {
      r = f();
    } catch (e) {
      if (e instanceof ShapeError || e instanceof UnsupportedOpError) return;
      throw e;
    }
    const [got, want] = r;
    if (got.length !== want.length || Array.from(want).some((w, i) => !(Math.abs(got[i] - w) <= 1e-3 * (1 + Math.abs(w))))) {
      throw new Error(`${what}: got ${Array.from(got)}, want ${Array.from(want)}`);
    }
  };
  // unary-ops.cpp apply_unary_op: WSP_GGML_ASSERT(is_contiguous_1(src0) && …): sqr of a view3d whose planes are not ne1·nb1 apart.
  t("sqr of a view3d with its own plane stride is refused or right (an abort)", () => {
    using ctx = new Context({ memSize: 1 << 20 });
    const a = ctx.newTensor2d(Type.F32, 4, 3).set(Float32Array.from({ length: 12 }, (_, i) => i));
    refusedOrRight("sqr(view3d)", () => {
      const y = ctx.sqr(ctx.view3d(a, 2, 2, 2, 8, 24, 0)); // elements 0,1, 2,3 | 6,7, 8,9
      ctx.newGraphCustom(8).buildForwardExpand(y).compute({ nThreads: 1 });
      return [y.get(Float32Array), [0, 1, 2, 3, 6, 7, 8, 9].map((x) => x * x)];
    });
  });
  // Kernels that only assert() their layout (compiled out) computed wrong values, reading past the source: sum, argmax
  // and get_rows of a transposed tensor (nb0 ≠ 4), gelu and silu of a permute whose rows are not nb1 apart.
  t("sum, argmax, getRows, gelu, silu of strided operands are refused or right (wrong values)", () => {
    using ctx = new Context({ memSize: 1 << 20 });
    const v = [0.5, -1, 2, 1.5, -0.25, 3, 1, -2, 0.75, 2.5, -1.5, 0.125];
    const a = ctx.newTensor2d(Type.F32, 4, 3).set(Float32Array.from(v));
    const run = (y: Tensor) => (ctx.newGraphCustom(8).buildForwardExpand(y).compute({ nThreads: 1 }), y);
    const tr = () => ctx.transpose(a); // [3, 4], nb0 = 16
    refusedOrRight("sum(transpose)", () => [run(ctx.sum(tr())).get(Float32Array), [v.reduce((p, q) => p + q, 0)]]);
    refusedOrRight("argmax(transpose)", () => [run(ctx.argmax(tr())).get(Int32Array), [0, 1, 2, 3].map((i) => [v[i], v[4 + i], v[8 + i]].indexOf(Math.max(v[i], v[4 + i], v[8 + i])))]);
    refusedOrRight("getRows(transpose)", () => [run(ctx.getRows(tr(), ctx.newTensor1d(Type.I32, 1).set(Int32Array.of(1)))).get(Float32Array), [v[1], v[5], v[9]]]);
    const p = () => ctx.permute(a, 0, 2, 1, 3); // [4, 1, 3], nb [4, 48, 16, 48]
    refusedOrRight("silu(permute)", () => [run(ctx.silu(p())).get(Float32Array), v.map((x) => x / (1 + Math.exp(-x)))]);
    refusedOrRight("gelu(permute)", () => [run(ctx.gelu(p())).get(Float32Array), v.map((x) => 0.5 * x * (1 + Math.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))))]);
  });
  // ggml-alloc.c: WSP_GGML_ASSERT(buffer_id >= 0): a pool leaf read only by a view op gets no backend from the scheduler.
  t("sched computes a graph of view ops over a pool leaf", () => {
    using ctx = new Context({ memSize: 1 << 20 });
    using be = Backend.cpu({ nThreads: 1 });
    using s = new Sched({ backends: [be] });
    const a = ctx.newTensor2d(Type.F32, 4, 4).set(Float32Array.from({ length: 16 }, (_, i) => i));
    const tr = ctx.transpose(a);
    const g = ctx.newGraphCustom(8).buildForwardExpand(tr);
    s.graphCompute(g);
    s.reserve(g).allocGraph(g).splitGraph(g);
    const y = ctx.cont(ctx.view1d(ctx.reshape2d(a, 8, 2), 8, 16));
    s.graphCompute(ctx.newGraphCustom(8).buildForwardExpand(y));
    if (y.toArray().some((v, i) => v !== i + 4)) throw new Error(`cont(view) = ${y.toArray()}`);
  });
  // ggml-backend.cpp: WSP_GGML_ASSERT(tensor->view_src->buffer != NULL) in allocCtxTensors: a view of a pool tensor.
  t("allocCtxTensors refuses a view of a pool tensor", () => {
    using pool = new Context({ memSize: 1 << 20 });
    using lazy = new Context({ memSize: 1 << 20, noAlloc: true });
    using be = Backend.cpu({ nThreads: 1 });
    const a = pool.newTensor1d(Type.F32, 4).set(new Float32Array(4));
    lazy.newTensor1d(Type.F32, 4);
    lazy.view1d(a, 2, 0);
    notAllocated(() => allocCtxTensors(lazy, be)?.free());
  });
  // ggml computes an allocated scheduler's splits whatever graph it is given: the first graph's freed tensors.
  t("sched computes the graph it is given, not the one allocated before", () => {
    using be = Backend.cpu({ nThreads: 1 });
    using s = new Sched({ backends: [be] });
    const c1 = new Context({ memSize: 1 << 20 });
    const a = c1.newTensor1d(Type.F32, 3).set(Float32Array.of(1, 2, 3));
    s.graphCompute(c1.newGraph().buildForwardExpand(c1.scale(a, 2)));
    c1.free();
    using c2 = new Context({ memSize: 1 << 20 });
    const b = c2.newTensor1d(Type.F32, 3).set(Float32Array.of(4, 5, 6));
    const y = c2.scale(b, 3);
    s.graphCompute(c2.newGraph().buildForwardExpand(y));
    if (y.toArray().join() !== "12,15,18") throw new Error(`scale = ${y.toArray()}`);
  });
  // A segfault: tensors a scheduler placed kept their places after it freed its buffers (view_init then read the freed buffer).
  t("tensors a scheduler placed are unallocated once it frees its buffers", () => {
    using be = Backend.cpu({ nThreads: 1 });
    using w = new Context({ memSize: 1 << 20, noAlloc: true });
    using pool = new Context({ memSize: 1 << 20 });
    const a = pool.newTensor1d(Type.F32, 6).set(Float32Array.of(1, 2, 3, 4, 5, 6));
    const y = w.scale(a, 2);
    const s = new Sched({ backends: [be] });
    s.graphCompute(w.newGraph().buildForwardExpand(y));
    if ((tensorGet(y) as Float32Array).join() !== "2,4,6,8,10,12") throw new Error(`scale = ${tensorGet(y)}`);
    s.free();
    using v = new Context({ memSize: 1 << 20, noAlloc: true });
    v.reshape2d(y, 3, 2);
    v.newTensor1d(Type.F32, 2);
    notAllocated(() => tensorGet(y), () => allocCtxTensors(v, be));
  });
  // Segfaults: a graph computed once, then a backend buffer of its leafs freed, computed again (graph.compute
  // checked the data only on its first compute; the scheduler computed its old allocation), and a view of a
  // freed buffer's tensor (its own data pointer dangles).
  t("computing again after a leaf's buffer was freed is a NotAllocatedError", () => {
    using be = Backend.cpu({ nThreads: 1 });
    using s = new Sched({ backends: [be] });
    using lazy = new Context({ memSize: 1 << 16, noAlloc: true });
    using pool = new Context({ memSize: 1 << 20 });
    const a = lazy.newTensor1d(Type.F32, 1024);
    const buf = allocCtxTensors(lazy, be)!;
    tensorSet(a, new Float32Array(1024).fill(1));
    const v = pool.view1d(a, 512, 0);
    const g = pool.newGraph().buildForwardExpand(pool.scale(a, 2));
    const gv = pool.newGraph().buildForwardExpand(pool.scale(v, 3));
    g.compute({ nThreads: 1 });
    s.graphCompute(g);
    be.graphCompute(gv);
    buf.free();
    notAllocated(() => g.compute({ nThreads: 1 }), () => s.graphCompute(g), () => be.graphCompute(g), () => gv.compute({ nThreads: 1 }), () => s.graphCompute(gv));
  });
  // After that error the native scheduler was still allocated: the next allocation met ggml's
  // WSP_GGML_ASSERT(!sched->is_alloc) (an abort), since the scheduler reset only when it knew a graph allocated.
  t("a scheduler computes again once the freed buffer is allocated anew", () => {
    using be = Backend.cpu({ nThreads: 1 });
    using s = new Sched({ backends: [be] });
    using lazy = new Context({ memSize: 1 << 16, noAlloc: true });
    using w = new Context({ memSize: 1 << 20, noAlloc: true });
    const a = lazy.newTensor1d(Type.F32, 64);
    const y = w.scale(a, 2);
    const g = w.newGraph().buildForwardExpand(y);
    const buf = allocCtxTensors(lazy, be)!;
    tensorSet(a, new Float32Array(64).fill(1));
    s.graphCompute(g);
    buf.free();
    notAllocated(() => s.graphCompute(g));
    using again = allocCtxTensors(lazy, be)!;
    tensorSet(a, new Float32Array(64).fill(3));
    s.graphCompute(g);
    const got = tensorGet(y) as Float32Array;
    if (got.some((x) => x !== 6)) throw new Error(`scale after the new allocation = ${got[0]}, want 6`);
  });
  // The same for a Gallocr: its tensors pointed into its freed buffers (graph.compute then wrote to freed memory).
  t("tensors a Gallocr placed are unallocated once it frees its buffers or allocates another graph", () => {
    using be = Backend.cpu({ nThreads: 1 });
    using pool = new Context({ memSize: 1 << 20 });
    using w = new Context({ memSize: 1 << 20, noAlloc: true });
    const a = pool.newTensor1d(Type.F32, 4).set(Float32Array.of(1, 2, 3, 4));
    const y = w.scale(a, 2);
    const g = w.newGraph().buildForwardExpand(y);
    const ga = new Gallocr(be.defaultBufferType);
    ga.allocGraph(g);
    be.graphCompute(g);
    if ((tensorGet(y) as Float32Array).join() !== "2,4,6,8") throw new Error(`scale = ${tensorGet(y)}`);
    const y2 = w.scale(a, 3);
    ga.allocGraph(w.newGraph().buildForwardExpand(y2));
    notAllocated(() => be.graphCompute(g), () => { ga.free(); return be.graphCompute(g); }, () => tensorGet(y2));
  });
}

// ---- the run -----------------------------------------------------------------------------------
/** The share of steps (in percent) that run a compute-time scenario (api_fuzz_compute.ts); WSP_GGML_FUZZ_COMPUTE_SHARE=100 runs only those. */
const COMPUTE_SHARE = envInt("WSP_GGML_FUZZ_COMPUTE_SHARE", 2);
// Its own PRNG: the rest of the sequence is the same as without it (a seed replays the same calls).
const crng = new Rng((seed ^ 0x5bd1e995) >>> 0);
const cf = computeFuzz({ rng: crng, trace, valid, guarded, invalid, count, fail });
let computeSteps = 0;
const gc = forcedGc();
regressions();
const t0 = Date.now();
const rssStart = rss();
let rssWarm = 0;
for (step = 0; step < steps; step++) {
  const r = rng.int(100);
  try {
    if (crng.int(100) < COMPUTE_SHARE) computeSteps++, await cf.step();
    else if (r < 6) newContext();
    else if (r < 22) newLeaf();
    else if (r < 26) allocBuffer();
    else if (r < 56) op();
    else if (r < 70) compute();
    else if (r < 76) recompute();
    else if (r < 90) misuse();
    else free();
  } catch (e) {
    fail("harness", String((e as Error)?.stack ?? e).split("\n").slice(0, 4).join(" | "));
  }
  if ((step + 1) % Math.max(1, Math.floor(steps / 10)) === 0) {
    gc();
    const now = rss();
    if (!rssWarm) rssWarm = now;
    console.log(`fuzz-progress ${JSON.stringify({ done: step + 1, calls, rssMiB: mib(now) })}`);
  }
}
for (const s of scheds) s.sched.free();
for (const c of contexts) c.ctx.free(), c.buffer?.free();
for (const b of backends) b.free();
cf.dispose();
if (cf.profile) console.log(`fuzz-profile ${JSON.stringify(Object.fromEntries(cf.profile))}`);
gc();
const sorted = Object.fromEntries([...outcomes].sort((a, b) => a[0].localeCompare(b[0])));
const sum = (p: string) => [...outcomes].filter(([k]) => k.startsWith(p)).reduce((s, [, v]) => s + v, 0);
console.log(`fuzz-report ${JSON.stringify({
  seed, steps, computeSteps, calls, ms: Date.now() - t0,
  totals: { ok: sum("ok:"), oom: sum("oom:"), typedError: sum("err:"), checked: sum("checked:"), unchecked: sum("unchecked:"), failures: failures.length },
  outcomes: sorted, failures: failures.slice(0, 20), rss: { start: rssStart, warm: rssWarm || rssStart, end: rss() },
})}`);
