// Bun-only (the .mts extension keeps it out of the Deno/tsc checks of the Deno+Node sources).
// The app of the `bun build --compile` example (build it with build.mts). It
// imports wsp-ggml's Bun entry — what the "bun" condition of the npm
// package's exports selects — and loads the libraries embedded in it.
// In a project that installed wsp-ggml: `from "wsp-ggml"` and `from "wsp-ggml/compile"`.
import { allocCtxTensors, Backend, Context, Gallocr, GgufType, GgufWriter, loadLibrary, readGguf, systemInfo, tensorGet, tensorSet, Type } from "../../src/ffi/entry_bun.ts";
import { extractLibraries } from "../../src/ffi/compile.ts";
import { libraries } from "./libs.gen.mts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

loadLibrary({ path: extractLibraries(libraries) });
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

// A GGUF file written and read back: its KV and its tensor's data.
const tmp = mkdtempSync(join(tmpdir(), "wsp-ggml-app-"));
let gguf: { name: string; w: number[] };
try {
  const writer = new GgufWriter();
  writer.set("general.name", GgufType.STRING, "bun-compile").addTensor(a.setName("w")).write(join(tmp, "m.gguf"));
  writer.free();
  const file = readGguf(join(tmp, "m.gguf"));
  const { context, tensors } = file.loadTensors();
  gguf = { name: file.getString("general.name"), w: Array.from(tensors.require("w").get(Float32Array)) };
  context.free();
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const info = systemInfo();
console.log(JSON.stringify({ c: Array.from(c.get(Float32Array)), asyncC, aborted, gguf, variant: info.cpuVariant.name, library: info.library.dir }));
ctx.free();
