// The timed side of bench/rpc.mjs (one process per runtime): what a compute on an RPC server over
// loopback costs against the same compute on the local CPU backend. Run by the runner, which
// starts the server and, for --mode bytes, a counting TCP proxy in front of it.
//
//   <runtime> bench/rpc.ts --endpoint HOST:PORT --mode time  [--rounds R] [--iters M] [--warmup W] [--threads T]
//   <runtime> bench/rpc.ts --endpoint HOST:PORT --mode bytes [--iters M]
//
// Cases (weights uploaded once, resident where their nodes run; one input row per call; a call is
// tensorSet(x) + compute + tensorGet(y), the result read back to JS):
//   - matmul f32 / q8_0: y = W·x, W 512×512, on one backend (the CPU, or the server alone);
//   - mlp: 4 layers relu(W·h + b), 512 wide, f32, through a Sched: all local, layers 0-1 local and
//     2-3 on the server (split), or all on the server.
// time: rounds of M calls per variant, the variants' order rotated each round (interleaved), and
// one JSON line with the median and p10/p90 per call. bytes: after each variant's set-up and after
// its M calls a line `mark <case> <variant> <phase> <calls>`, then a pause, so that the runner's
// proxy counts each phase apart.
import process from "node:process";
import { parseArgs } from "node:util";
import { systemInfo } from "../mod.ts";
import { allocCtxTensors, Backend, type Buffer, Context, type Graph, quantize, rpcBackend, rpcCompute, Sched, type Tensor, tensorGet, tensorSet, Type } from "../src/mod.ts";
import { createRng } from "../src/llm/sampler.ts";

const { values: opts } = parseArgs({
  args: process.argv.slice(2),
  options: {
    endpoint: { type: "string" },
    mode: { type: "string", default: "time" },
    rounds: { type: "string", default: "10" },
    iters: { type: "string", default: "50" },
    warmup: { type: "string", default: "20" },
    threads: { type: "string", default: "1" },
  },
});
if (!opts.endpoint) throw new Error("--endpoint HOST:PORT is required");
const D = 512, LAYERS = 4, SPLIT_AT = 2;
const ROUNDS = Number(opts.rounds), ITERS = Number(opts.iters), WARMUP = Number(opts.warmup), THREADS = Number(opts.threads);

const rand = createRng(512);
// Small weights keep the 4-layer activations finite.
const values = (n: number, scale = 1) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
const W = values(D * D, 0.05), X = values(D);
const MLP = Array.from({ length: LAYERS }, () => ({ w: values(D * D, 0.05), b: values(D, 0.1) }));

interface Variant {
  run(): Float32Array;
  free(): void;
}

const cpu = Backend.cpu({ nThreads: THREADS });
const remote = rpcBackend(opts.endpoint);

/** y = W·x on `backend` alone, every tensor in one buffer there. */
function matmul(backend: Backend, type: Type): Variant {
  const ctx = new Context({ memSize: 1 << 20, noAlloc: true });
  const w = ctx.newTensor2d(type, D, D), x = ctx.newTensor2d(Type.F32, D, 1).setInput();
  const y = ctx.mulMat(w, x).setOutput();
  const gf = ctx.newGraph().buildForwardExpand(y);
  const buf = allocCtxTensors(ctx, backend)!;
  tensorSet(w, type === Type.F32 ? W : quantize(type, W, { nPerRow: D }));
  return {
    run() {
      tensorSet(x, X);
      rpcCompute(backend, gf);
      return tensorGet(y) as Float32Array;
    },
    free: () => buf.free(),
  };
}

/** The 4-layer MLP, layer i's weights and nodes on place[i], through one Sched (the CPU last). */
function mlp(place: readonly Backend[]): Variant {
  const bufs: Buffer[] = [];
  const layers = MLP.map((l, i) => {
    const ctx = new Context({ memSize: 1 << 16, noAlloc: true });
    const w = ctx.newTensor2d(Type.F32, D, D), b = ctx.newTensor1d(Type.F32, D);
    bufs.push(allocCtxTensors(ctx, place[i])!);
    tensorSet(w, l.w);
    tensorSet(b, l.b);
    return { ctx, w, b };
  });
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  const x = g.newTensor2d(Type.F32, D, 1).setInput();
  const nodes: Tensor[][] = [];
  let h = x;
  for (const l of layers) {
    const m = g.mulMat(l.w, h), a = g.add(m, l.b), r = g.relu(a);
    nodes.push([m, a, r]);
    h = r;
  }
  const y = h.setOutput();
  const gf: Graph = g.newGraph().buildForwardExpand(y);
  const sched = new Sched({ backends: [...new Set([...place.filter((b) => b !== cpu), cpu])] });
  nodes.forEach((ns, i) => ns.forEach((n) => sched.setTensorBackend(n, place[i])));
  sched.allocGraph(gf);
  return {
    run() {
      tensorSet(x, X);
      rpcCompute(sched, gf);
      return tensorGet(y) as Float32Array;
    },
    free() {
      sched.free();
      bufs.forEach((b) => b.free());
      layers.length = 0; // the weights' contexts stay reachable until here
    },
  };
}

const cases: [string, Record<string, () => Variant>][] = [
  ["matmul f32", { local: () => matmul(cpu, Type.F32), remote: () => matmul(remote, Type.F32) }],
  ["matmul q8_0", { local: () => matmul(cpu, Type.Q8_0), remote: () => matmul(remote, Type.Q8_0) }],
  ["mlp", {
    local: () => mlp(Array(LAYERS).fill(cpu)),
    split: () => mlp(Array.from({ length: LAYERS }, (_, i) => (i < SPLIT_AT ? cpu : remote))),
    remote: () => mlp(Array(LAYERS).fill(remote)),
  }],
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const info = systemInfo();
const head = { runtime: `${info.runtime.name} ${info.runtime.version}`, variant: info.cpuVariant.name, threads: THREADS, d: D, layers: LAYERS, splitAt: SPLIT_AT };

if (opts.mode === "bytes") {
  for (const [name, variants] of cases) {
    for (const [vname, make] of Object.entries(variants)) {
      if (vname === "local") continue;
      console.log(`mark ${name.replace(" ", "_")} ${vname} start 0`);
      await sleep(300);
      const v = make();
      v.run();
      console.log(`mark ${name.replace(" ", "_")} ${vname} setup 1`);
      await sleep(300);
      for (let i = 0; i < ITERS; i++) v.run();
      console.log(`mark ${name.replace(" ", "_")} ${vname} calls ${ITERS}`);
      await sleep(300);
      v.free();
      console.log(`mark ${name.replace(" ", "_")} ${vname} free 0`);
      await sleep(300);
    }
  }
  console.log(JSON.stringify({ ...head, mode: "bytes", iters: ITERS }));
} else {
  const out: Record<string, Record<string, { median_us: number; p10_us: number; p90_us: number; n: number; check: number }>> = {};
  for (const [name, variants] of cases) {
    const made = Object.fromEntries(Object.entries(variants).map(([k, make]) => [k, make()]));
    const names = Object.keys(made);
    // Every variant computes the same function: their results must agree (the remote side runs the same kernels).
    const ref = made[names[0]].run();
    for (const k of names.slice(1)) {
      const got = made[k].run();
      if (got.some((v, i) => v !== ref[i])) throw new Error(`${name}: ${k} differs from ${names[0]}`);
    }
    for (const k of names) for (let i = 0; i < WARMUP; i++) made[k].run();
    const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
    for (let r = 0; r < ROUNDS; r++) {
      const order = names.map((_, i) => names[(i + r) % names.length]);
      for (const k of order) {
        const v = made[k];
        for (let i = 0; i < ITERS; i++) {
          const t0 = performance.now();
          v.run();
          samples[k].push(performance.now() - t0);
        }
      }
    }
    out[name] = {};
    for (const k of names) {
      const s = samples[k].sort((a, b) => a - b);
      const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] * 1000;
      out[name][k] = { median_us: q(0.5), p10_us: q(0.1), p90_us: q(0.9), n: s.length, check: ref.reduce((a, b) => a + b, 0) };
      made[k].free();
    }
  }
  console.log(JSON.stringify({ ...head, mode: "time", rounds: ROUNDS, iters: ITERS, warmup: WARMUP, results: out }));
}
remote.free();
cpu.free();
