/**
 * The TS side of the benchmarks: each case does the same work as its
 * counterpart in `bench/driver.c` (same shapes, same data, same calls into
 * libwsp-ggml), through the raw bindings (`loadLibrary().symbols`, the path
 * every API call ends in) and through the public API. Timing: one warm-up
 * sample, then `reps` samples of `n` iterations each, as in C; the runner
 * takes the median.
 *
 * @module
 */
import process from "node:process";
import { Context, graphOverheadCustom, loadLibrary, quantize, type Tensor, tensorOverhead, Type } from "../mod.ts";
import { allocPool, initContext, runtime } from "../src/runtime/runtime.ts";
import { ffi } from "../src/runtime/loader.ts";
import { benchWork, napiProbe } from "./work.ts";

/** One measured figure, in the JSON shape the C driver prints. */
export interface Sample {
  /** The benchmark (the C driver's name for the same work). */
  readonly bench: string;
  /** What exactly was timed. */
  readonly label: string;
  /** "deno", "bun" or "node". */
  readonly side: string;
  /** The CPU variant the library loaded. */
  readonly variant: string;
  /** Iterations per sample. */
  readonly n: number;
  readonly reps: number;
  /** Median of the samples, in ns per iteration. */
  readonly median_ns: number;
  readonly min_ns: number;
  /** A benchmark-specific fact (node count, a checksum, the final loss). */
  readonly extra: number;
  readonly samples_ns: number[];
}

/** Parameters of a case (`key=value` on the command line). */
export type Params = Record<string, string>;

const side = (globalThis as { Bun?: unknown }).Bun ? "bun" : (globalThis as { Deno?: unknown }).Deno ? "deno" : "node";

/** Nanoseconds from a monotonic clock (process.hrtime.bigint, on every runtime). */
export function nowNs(): number {
  return Number(process.hrtime.bigint());
}

/** The median of `xs`. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Runs `once(n)` (which times `n` iterations itself and returns the elapsed
 * ns) for one warm-up and `reps` samples; returns the figure. When the
 * warm-up takes longer than `budgetNs`, the samples use fewer iterations
 * (the figure is per iteration, so only its noise changes).
 */
export function measure(bench: string, label: string, n: number, reps: number, once: (n: number) => number, extra = 0, budgetNs = 25e6, warmNs = 0): Sample {
  const warm = once(n);
  if (warm > budgetNs && n > 1) n = Math.max(1, Math.round((n * budgetNs) / warm));
  // A time-based warm-up where one call is not enough for the JIT to settle (graph: ~300 graphs on Bun).
  for (const w0 = nowNs(); nowNs() - w0 < warmNs;) once(n);
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) samples.push(once(n) / n);
  return { bench, label, side, variant: loadLibrary().cpuVariant, n, reps, median_ns: median(samples), min_ns: Math.min(...samples), extra, samples_ns: samples };
}

/** One side of {@linkcode measureInTurn}: a label and its timed work (as in {@linkcode measure}). */
export interface Turn {
  readonly label: string;
  readonly once: (n: number) => number;
}

/**
 * {@linkcode measure} for several ways of doing the same work in one
 * process, sampled in turn (the first side moving each round), so that
 * the machine's moods land on every side alike and their ratio is a
 * within-process comparison. `n` shrinks to fit the slowest side's warm-up
 * into `budgetNs`; every side then runs the same `n`.
 */
export function measureInTurn(bench: string, turns: readonly Turn[], n: number, reps: number, budgetNs = 25e6, warmNs = 0): Sample[] {
  const warm = Math.max(...turns.map((t) => t.once(n)));
  if (warm > budgetNs && n > 1) n = Math.max(1, Math.round((n * budgetNs) / warm));
  for (const w0 = nowNs(); nowNs() - w0 < warmNs;) for (const t of turns) t.once(n);
  const samples = turns.map(() => [] as number[]);
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < turns.length; k++) {
      const i = (r + k) % turns.length;
      samples[i].push(turns[i].once(n) / n);
    }
  }
  const variant = loadLibrary().cpuVariant;
  return turns.map((t, i) => ({ bench, label: t.label, side, variant, n, reps, median_ns: median(samples[i]), min_ns: Math.min(...samples[i]), extra: 0, samples_ns: samples[i] }));
}

function int(p: Params, key: string, def: number): number {
  return p[key] === undefined ? def : Number(p[key]);
}

/** The 32-bit LCG of bench/driver.c: values in [-1, 1). */
export function lcgFill(out: Float32Array, seed: { s: number }): Float32Array {
  let s = seed.s >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s >>> 8) & 0xffff) / 32768 - 1;
  }
  seed.s = s;
  return out;
}

let sink = 0;
/** The accumulated results of every loop, so that no loop can be optimised away. */
export function sinkValue(): number {
  return sink;
}

// ---- per-call ---------------------------------------------------------------------------------

/** `wsp_ggml_nelements` / `wsp_ggml_nbytes`: the raw symbol, and the API getter (computed from the struct layout). */
export function call(which: "nelements" | "nbytes", p: Params): Sample[] {
  const n = int(p, "n", 1_000_000), reps = int(p, "reps", 15);
  using ctx = new Context({ memSize: 16 * tensorOverhead() + 2 * 64 * 32 * 4 + 1024 });
  // Two tensors, used alternately, so that no JIT can hoist the loop-invariant query out of the loop (C does the same).
  const ts = [ctx.newTensor2d(Type.F32, 64, 32), ctx.newTensor2d(Type.F32, 64, 32)];
  const s = loadLibrary().symbols;
  const ptrs = ts.map((t) => t.pointer);
  // Each process runs one case, so `f` and `key` are fixed and the loops stay monomorphic.
  const f = which === "nelements" ? s.wsp_ggml_nelements : s.wsp_ggml_nbytes;
  const raw = measure(which, `raw wsp_ggml_${which}`, n, reps, (n) => {
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) acc += f(ptrs[i & 1]) as number;
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  // Where handles are bigints (Deno): the same call given the tensors' handles, so no number becomes a BigInt per call.
  const lib = loadLibrary();
  const handles: Sample[] = [];
  if (typeof ts[0]._h === "bigint") {
    const fh = which === "nelements" ? lib.handles.wsp_ggml_nelements : lib.handles.wsp_ggml_nbytes;
    const hs = ts.map((t) => t._h);
    handles.push(measure(which, `handles wsp_ggml_${which} (bigint pointers)`, n, reps, (n) => {
      let acc = 0;
      const t0 = nowNs();
      for (let i = 0; i < n; i++) acc += Number(fh(hs[i & 1]));
      const dt = nowNs() - t0;
      sink += acc;
      return dt;
    }));
  }
  const key = which;
  const api = measure(which, `API Tensor.${which}`, n, reps, (n) => {
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) acc += ts[i & 1][key];
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  return [raw, ...handles, api];
}

const ADD_BATCH = 1000;

/**
 * A node-only op: `wsp_ggml_add` in a no_alloc context, the context reset
 * every 1000 nodes (raw; as in C), and `ctx.add` through the API (a fresh
 * no_alloc Context per 1000 nodes, since the API has no reset).
 */
export function add(p: Params): Sample[] {
  const n = int(p, "n", 100_000), reps = int(p, "reps", 15);
  const s = loadLibrary().symbols;
  using src = new Context({ memSize: 4 * tensorOverhead(), noAlloc: true });
  const a = src.newTensor2d(Type.F32, 64, 32), b = src.newTensor2d(Type.F32, 64, 32);
  const ops = initContext(loadLibrary(), 0, (ADD_BATCH + 8) * tensorOverhead(), true);
  const pa = a.pointer, pb = b.pointer;
  const raw = measure("add", "raw wsp_ggml_add (no_alloc)", n, reps, (n) => {
    const f = s.wsp_ggml_add, reset = s.wsp_ggml_reset;
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) {
      if (i % ADD_BATCH === 0) reset(ops);
      acc += f(ops, pa, pb);
    }
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  // On Node, the same loop through the Node-API probe (bench/napi_probe.c), and the probe's empty function: Node-API's floor.
  const probe = napiProbe(), viaNapi: Sample[] = [];
  if (probe !== null) {
    const opsN = ops as number;
    viaNapi.push(measure("add", "napi probe (bench/napi_probe.c): wsp_ggml_add through node_api.h, not koffi", n, reps, (n) => {
      const f = probe.wsp_ggml_add, reset = s.wsp_ggml_reset;
      let acc = 0;
      const t0 = nowNs();
      for (let i = 0; i < n; i++) {
        if (i % ADD_BATCH === 0) reset(opsN);
        acc += f(opsN, pa, pb);
      }
      const dt = nowNs() - t0;
      sink += acc;
      return dt;
    }));
    viaNapi.push(measure("add", "napi probe: a node_api.h function that does nothing", n, reps, (n) => {
      const f = probe.empty;
      const t0 = nowNs();
      for (let i = 0; i < n; i++) f();
      return nowNs() - t0;
    }));
  }
  s.wsp_ggml_free(ops);
  const memSize = (ADD_BATCH + 8) * tensorOverhead();
  const api = measure("add", "API ctx.add (no_alloc Context)", n, reps, (n) => {
    let ctx = new Context({ memSize, noAlloc: true });
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) {
      if (i % ADD_BATCH === 0 && i > 0) {
        ctx.free();
        ctx = new Context({ memSize, noAlloc: true });
      }
      acc += ctx.add(a, b)._off;
    }
    const dt = nowNs() - t0;
    ctx.free();
    sink += acc;
    return dt;
  });
  return [raw, ...viaNapi, api];
}

/**
 * Shape queries: the four FFI calls `wsp_ggml_nelements` + `_nrows` +
 * `_nbytes` + `_n_dims` against the API getters that answer the same from
 * the generated struct layout (DataView reads), and `Tensor.shape` (the
 * four `ne`) against C's struct reads.
 */
export function shape(p: Params): Sample[] {
  const n = int(p, "n", 1_000_000), reps = int(p, "reps", 15);
  using ctx = new Context({ memSize: 4 * tensorOverhead(), noAlloc: true });
  const ts = [ctx.newTensor3d(Type.F32, 64, 32, 3), ctx.newTensor3d(Type.F32, 64, 32, 3)];
  const s = loadLibrary().symbols;
  const ptrs = ts.map((t) => t.pointer);
  const calls = measure("shape", "raw 4 calls (nelements+nrows+nbytes+n_dims)", n, reps, (n) => {
    const ne = s.wsp_ggml_nelements, nr = s.wsp_ggml_nrows, nb = s.wsp_ggml_nbytes, nd = s.wsp_ggml_n_dims;
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) {
      const ptr = ptrs[i & 1];
      acc += (ne(ptr) as number) + (nr(ptr) as number) + (nb(ptr) as number) + nd(ptr);
    }
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  const getters = measure("shape", "API getters (nelements+nrows+nbytes+nDims)", n, reps, (n) => {
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) {
      const t = ts[i & 1];
      acc += t.nelements + t.nrows + t.nbytes + t.nDims;
    }
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  const ne = measure("shape-ne", "API Tensor.shape (4 ne from the DataView)", n, reps, (n) => {
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) {
      const sh = ts[i & 1].shape;
      acc += sh[0] + sh[1] + sh[2] + sh[3];
    }
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  return [calls, getters, ne];
}

// ---- graph construction -----------------------------------------------------------------------

/** Node (and leaf) slots of the graph case's graphs. */
export const GRAPH_SIZE = 2048;

/** The pool a graph case context needs: the MLP's tensors and a GRAPH_SIZE graph. */
export function graphMemSize(layers: number): number {
  return (5 * layers + 8) * tensorOverhead() + graphOverheadCustom(GRAPH_SIZE, false);
}

/**
 * The graph case's API side, once: a `layers`-layer MLP (`relu(add(mulMat(W, h), b))`) built from
 * nothing in a fresh no_alloc context of `memSize` bytes (graphMemSize), expanded into a graph,
 * freed; returns the graph's node count. bench/graph_profile.ts runs it under a profiler.
 */
export function apiGraph(memSize: number, layers: number, hidden: number, batch: number): number {
  const ctx = new Context({ memSize, noAlloc: true });
  let h: Tensor = ctx.newTensor2d(Type.F32, hidden, batch);
  for (let l = 0; l < layers; l++) {
    const w = ctx.newTensor2d(Type.F32, hidden, hidden);
    const bias = ctx.newTensor1d(Type.F32, hidden);
    h = ctx.relu(ctx.add(ctx.mulMat(w, h), bias));
  }
  const nodes = ctx.newGraphCustom(GRAPH_SIZE).buildForwardExpand(h).nNodes;
  ctx.free();
  return nodes;
}

/**
 * A `layers`-layer MLP graph (`relu(add(mulMat(W, h), b))` per layer, 3
 * nodes each) built from scratch per iteration: a no_alloc context, the
 * weights, the ops, a 2048-node graph, `buildForwardExpand`, free. Through
 * the API, and through the raw symbols.
 */
export function graph(p: Params): Sample[] {
  const layers = int(p, "layers", 334), hidden = int(p, "hidden", 64), batch = int(p, "batch", 32);
  const n = int(p, "n", 20), reps = int(p, "reps", 15), warmNs = int(p, "warm_ms", 500) * 1e6;
  const memSize = graphMemSize(layers);
  const nodes = { api: 0, raw: 0, c: 0, napi: 0 };
  const api: Turn = {
    label: "API (Context, newTensor, mulMat/add/relu, buildForwardExpand)",
    once: (n) => {
      const t0 = nowNs();
      for (let i = 0; i < n; i++) nodes.api = apiGraph(memSize, layers, hidden, batch);
      return nowNs() - t0;
    },
  };
  const lib = loadLibrary();
  const s = lib.symbols;
  // One pool for every graph, as the C driver reuses one buffer (and the API recycles freed pools).
  const pool = allocPool(memSize);
  const raw: Turn = {
    label: "raw symbols",
    once: (n) => {
      const t0 = nowNs();
      for (let i = 0; i < n; i++) {
        const ctx = initContext(lib, pool.base, memSize, true);
        let h = s.wsp_ggml_new_tensor_2d(ctx, Type.F32, hidden, batch);
        for (let l = 0; l < layers; l++) {
          const w = s.wsp_ggml_new_tensor_2d(ctx, Type.F32, hidden, hidden);
          const bias = s.wsp_ggml_new_tensor_1d(ctx, Type.F32, hidden);
          h = s.wsp_ggml_relu(ctx, s.wsp_ggml_add(ctx, s.wsp_ggml_mul_mat(ctx, w, h), bias));
        }
        const gf = s.wsp_ggml_new_graph_custom(ctx, GRAPH_SIZE, false);
        s.wsp_ggml_build_forward_expand(gf, h);
        nodes.raw = s.wsp_ggml_graph_n_nodes(gf);
        s.wsp_ggml_free(ctx);
      }
      return nowNs() - t0;
    },
  };
  // On Node, the raw loop again through a Node-API module of our own (bench/napi_probe.c) instead of koffi.
  // Written out twice on purpose: one loop over either table would make its call sites see two
  // targets each, and time neither path as it runs alone.
  const probe = napiProbe();
  const napi: Turn[] = probe === null ? [] : [{
    label: "napi probe (bench/napi_probe.c): the 5 hot functions through node_api.h, not koffi",
    once: (n) => {
      const t0 = nowNs();
      for (let i = 0; i < n; i++) {
        const ctx = initContext(lib, pool.base, memSize, true) as number;
        let h = probe.wsp_ggml_new_tensor_2d(ctx, Type.F32, hidden, batch);
        for (let l = 0; l < layers; l++) {
          const w = probe.wsp_ggml_new_tensor_2d(ctx, Type.F32, hidden, hidden);
          const bias = probe.wsp_ggml_new_tensor_1d(ctx, Type.F32, hidden);
          h = probe.wsp_ggml_relu(ctx, probe.wsp_ggml_add(ctx, probe.wsp_ggml_mul_mat(ctx, w, h), bias));
        }
        const gf = s.wsp_ggml_new_graph_custom(ctx, GRAPH_SIZE, false);
        s.wsp_ggml_build_forward_expand(gf, h);
        nodes.napi = s.wsp_ggml_graph_n_nodes(gf);
        s.wsp_ggml_free(ctx);
      }
      return nowNs() - t0;
    },
  }];
  // C's own loop (bench/work.c, the driver's code) in this process, over its own malloc'd buffer.
  const w = benchWork();
  const cBuf = w.wsp_bench_alloc(w.wsp_bench_graph_mem(layers));
  const cNodes = new Int32Array(1);
  const c: Turn = {
    label: "C in this process (bench/work.c)",
    once: (n) => {
      const dt = w.wsp_bench_graphs(layers, hidden, batch, n, cBuf, ffi.addressOf(cNodes)) * n;
      nodes.c = cNodes[0];
      return dt;
    },
  };
  const [a, r, cc, np] = measureInTurn("graph", [api, raw, c, ...napi], n, reps, 100e6, warmNs);
  w.wsp_bench_free(cBuf);
  sink += pool.buffer.byteLength; // the pool stays reachable until every context over it is gone
  return [{ ...a, extra: nodes.api }, { ...r, extra: nodes.raw }, { ...cc, extra: nodes.c }, ...(np ? [{ ...np, extra: nodes.napi }] : [])];
}

// ---- compute ----------------------------------------------------------------------------------

const TYPES: Record<string, Type> = { f32: Type.F32, f16: Type.F16, q8_0: Type.Q8_0, q4_0: Type.Q4_0 };

/**
 * `mulMat(a, b)` with `a` [size, size] of `type` (the weights, from the
 * LCG, converted or quantized) and `b` [size, size] f32: one
 * `Graph.compute({ nThreads })` per sample (2·size³ flops).
 */
export function matmul(p: Params): Sample[] {
  const tname = p.type ?? "f32", type = TYPES[tname];
  if (type === undefined) throw new Error(`matmul: unknown type ${tname}`);
  const size = int(p, "size", 512), threads = int(p, "threads", 2), reps = int(p, "reps", 5);
  const elems = size * size;
  using ctx = new Context({ memSize: 4 * elems * 4 + 16 * tensorOverhead() + graphOverheadCustom(2048, false) + (1 << 20) });
  const a = ctx.newTensor2d(type, size, size), b = ctx.newTensor2d(Type.F32, size, size);
  const seed = { s: 42 };
  const af = lcgFill(new Float32Array(elems), seed);
  b.set(lcgFill(new Float32Array(elems), seed));
  if (type === Type.F32 || type === Type.F16) a.set(af);
  else a.set(quantize(type, af, { nPerRow: size }));
  const c = ctx.mulMat(a, b);
  const gf = ctx.newGraph().buildForwardExpand(c);
  const out = c.view(Float32Array);
  let check = 0;
  // Warmed up for warm_ms of the same compute, as bench/driver.c and the peer are: on this VM a young
  // process's compute threads often share one vCPU, and 500 ms was measured to be too short for that to pass.
  const binding: Turn = {
    label: `matmul ${tname} ${size}`,
    once: () => {
      const t0 = nowNs();
      gf.compute({ nThreads: threads });
      return nowNs() - t0;
    },
  };
  // The same compute of the same graph on the same backend, timed by C (bench/work.c) in turn with
  // the binding's: the C driver's process is another process, whose speed differs by chance.
  const w = benchWork();
  const rt = runtime();
  const inC: Turn = {
    label: `matmul ${tname} ${size} C in this process (bench/work.c)`,
    once: () => {
      const backend = rt.cpuBackend();
      rt.lib.symbols.wsp_ggml_backend_cpu_set_n_threads(backend, threads);
      const dt = w.wsp_bench_compute(backend, gf.pointer);
      if (dt < 0) throw new Error("wsp_bench_compute: compute failed");
      return dt;
    },
  };
  const [r, rc] = measureInTurn("matmul", [binding, inC], 1, reps, 25e6, int(p, "warm_ms", 2000) * 1e6);
  for (let i = 0; i < 16; i++) check += out[i];
  return [{ ...r, extra: check }, { ...rc, extra: check }];
}

// ---- data movement ----------------------------------------------------------------------------

/**
 * 64 MiB in and out of an f32 tensor: `set` (copy from a JS array),
 * `get` (a fresh copy), and `view` (the zero-copy typed array over the data).
 */
export function data(p: Params): Sample[] {
  const bytes = int(p, "bytes", 64 << 20), reps = int(p, "reps", 9);
  const elems = bytes / 4;
  using ctx = new Context({ memSize: bytes + 4 * tensorOverhead() + 4096 });
  const t = ctx.newTensor1d(Type.F32, elems);
  const src = new Float32Array(elems).fill(1);
  t.set(src); // touch the pages once, as C's memset does
  const set = measure("data-set", "Tensor.set 64 MiB", 1, reps, () => {
    src[0] = Math.random();
    const t0 = nowNs();
    t.set(src);
    return nowNs() - t0;
  });
  const get = measure("data-get", "Tensor.get 64 MiB (new array)", 1, reps, () => {
    const t0 = nowNs();
    const v = t.get(Float32Array);
    const dt = nowNs() - t0;
    sink += v[v.length - 1];
    return dt;
  });
  const n = 100_000;
  const view = measure("data-view", "Tensor.view (zero-copy)", n, reps, (n) => {
    let acc = 0;
    const t0 = nowNs();
    for (let i = 0; i < n; i++) acc += t.view(Float32Array).length;
    const dt = nowNs() - t0;
    sink += acc;
    return dt;
  });
  return [set, get, view];
}
