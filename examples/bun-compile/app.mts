// Bun-only (the .mts extension keeps it out of the Deno/tsc checks of the Deno+Node sources).
// The app of the `bun build --compile` example (build it with build.mts). It
// imports wsp-ggml's Bun entry — what the "bun" condition of the npm
// package's exports selects — and loads the libraries embedded in it.
import { allocCtxTensors, Backend, Context, Gallocr, loadLibrary, systemInfo, tensorGet, tensorSet, Type } from "../../src/ffi/entry_bun.ts";
import { extractLibraries } from "./embedded.mts";
import { libraries } from "./libs.gen.mts";

loadLibrary({ path: await extractLibraries(libraries) });
const ctx = new Context({ memSize: 16 << 20 });
const a = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
const b = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
const c = ctx.mulMat(a, b);
ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 2 });

// Off the JS thread (the worker bun:ffi's non-blocking calls need), then stopped by a signal.
const cpu = Backend.cpu({ nThreads: 2 });
const w = new Context({ memSize: 1 << 20, noAlloc: true });
const x = w.newTensor2d(Type.F32, 256, 256), a2 = w.newTensor2d(Type.F32, 3, 2), b2 = w.newTensor2d(Type.F32, 3, 2);
const buf = allocCtxTensors(w, cpu)!;
tensorSet(a2, new Float32Array([1, 2, 3, 4, 5, 6]));
tensorSet(b2, new Float32Array([1, 0, 1, 0, 1, 0]));
tensorSet(x, new Float32Array(256 * 256).fill(0.001));
const g = new Context({ memSize: 1 << 20, noAlloc: true });
const c2 = g.mulMat(a2, b2);
let y = x;
for (let i = 0; i < 200; i++) y = g.mulMat(x, y);
const ga = new Gallocr(cpu.defaultBufferType);
const small = g.newGraph().buildForwardExpand(c2);
ga.allocGraph(small);
await cpu.graphComputeAsync(small);
const asyncC = Array.from(tensorGet(c2) as Float32Array);
const long = g.newGraphCustom(512).buildForwardExpand(y);
ga.allocGraph(long);
const ac = new AbortController();
setTimeout(() => ac.abort(), 5);
let aborted = "not aborted";
await cpu.graphComputeAsync(long, { signal: ac.signal }).catch((e: Error) => { aborted = e.name; });
ga.free();
buf.free();
g.free();
w.free();
cpu.free();

const info = systemInfo();
console.log(JSON.stringify({ c: Array.from(c.get(Float32Array)), asyncC, aborted, variant: info.cpuVariant.name, library: info.library.dir }));
ctx.free();
