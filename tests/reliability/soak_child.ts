// The child of soak.test.ts: create / compute / free cycles of contexts, tensors, graphs, backend
// buffers and schedulers, with resident memory sampled after a warm-up and at the end (after a
// forced collection). Every cycle's result is checked against its value computed in JS.
//
//   argv[2] = "explicit": every object is freed by free() / `using`;
//             "finalizer": contexts (with their tensors and graphs) are dropped and left to the
//             FinalizationRegistry; backend buffers, schedulers and backends are freed explicitly
//             (left to the collector as well, Node's heap grew by one 12 MiB step past RSS_BOUND in a
//             CI run; tests/finalizer.test.ts covers their finalizer).
// Environment: WSP_GGML_SOAK_CYCLES (default 100000). Prints `soak-report {...}`.
import process from "node:process";
import { allocCtxTensors, Backend, Context, handleStats, memoryStats, Sched, tensorGet, tensorSet, Type } from "../../mod.ts";
import { envInt, forcedGc, rss } from "./lib.ts";

const mode = process.argv[2] === "finalizer" ? "finalizer" : "explicit";
const cycles = envInt("WSP_GGML_SOAK_CYCLES", 100_000);
const parts = process.env.WSP_GGML_SOAK_PARTS || "ctx,buf,sched"; // which kinds of cycles (to find a leak)
const gc = forcedGc();
const cpu = Backend.cpu({ nThreads: 1 });
const counts = { contexts: 0, graphs: 0, buffers: 0, scheds: 0, backends: 0, wrong: 0 };
const x = new Float32Array(8), z = new Float32Array(8);

/** One cycle: a context with two tensors, an op and a graph, computed; every 10th a backend buffer, every 100th a scheduler and a backend. */
function cycle(i: number): void {
  for (let k = 0; k < 8; k++) x[k] = (i + k) % 17, z[k] = k - 3;
  const ctx = new Context({ memSize: 16 << 10 });
  counts.contexts++;
  const a = ctx.newTensor1d(Type.F32, 8).set(x), b = ctx.newTensor1d(Type.F32, 8).set(z);
  const y = ctx.mul(ctx.add(a, b), b);
  const g = ctx.newGraphCustom(8).buildForwardExpand(y);
  counts.graphs++;
  if (i % 100 === 0 && parts.includes("sched")) {
    const be = Backend.cpu({ nThreads: 1 });
    const s = new Sched({ backends: [be], graphSize: 16 });
    s.graphCompute(g);
    s.free();
    be.free();
    counts.scheds++, counts.backends++;
  } else g.compute({ nThreads: 1 });
  const got = y.view(Float32Array);
  for (let k = 0; k < 8; k++) if (got[k] !== (x[k] + z[k]) * z[k]) counts.wrong++;
  if (i % 10 === 0 && parts.includes("buf")) {
    // 16 KiB per buffer, so that a buffer not released would show (10,000 of them: 160 MiB).
    const lazy = new Context({ memSize: 4 << 10, noAlloc: true });
    const t = lazy.newTensor1d(Type.F32, 8);
    lazy.newTensor1d(Type.F32, 4096);
    const buf = allocCtxTensors(lazy, cpu)!;
    tensorSet(t, x);
    if ((tensorGet(t) as Float32Array)[3] !== x[3]) counts.wrong++;
    buf.free();
    if (mode === "explicit") lazy.free();
    counts.buffers++, counts.contexts++;
  }
  if (mode === "explicit") ctx.free();
}

const warm = Math.max(1, Math.floor(cycles / 10));
const t0 = Date.now();
let rssWarm = 0, warmStats = memoryStats(), warmHandles = handleStats();
const samples: number[] = [];
for (let i = 0; i < cycles; i++) {
  cycle(i);
  if (mode === "finalizer" && i % 1000 === 999) {
    gc();
    await new Promise((r) => setTimeout(r, 0)); // finalizers run between tasks
  }
  if ((i + 1) % warm === 0) {
    gc();
    await new Promise((r) => setTimeout(r, 0));
    gc();
    samples.push(rss());
    if (i + 1 === warm) rssWarm = samples[0], warmStats = memoryStats(), warmHandles = handleStats();
  }
}
for (let k = 0; k < 5; k++) {
  gc();
  await new Promise((r) => setTimeout(r, 0));
}
cpu.free();
const end = memoryStats(), endHandles = handleStats();
console.log(`soak-report ${JSON.stringify({ mode, cycles, ms: Date.now() - t0, counts, rss: { warm: rssWarm, end: rss(), samples }, stats: { warm: warmStats, end }, handles: { warm: warmHandles, end: endHandles } })}`);
