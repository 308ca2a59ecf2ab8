// The program of tests/package/pack.test.ts, run unchanged under Node, Bun and
// Deno in a project that installed wsp-ggml from its tarballs (and compiled by
// `bun build --compile` there): it computes a small graph synchronously, then
// asynchronously with an abort, reads a GGUF file written by Python's gguf
// (model.gguf beside it, or the path in argv[2]) onto the CPU backend, and
// prints one JSON line for the test to check.
import { allocCtxTensors, Backend, Context, Gallocr, readGguf, systemInfo, tensorGet, tensorSet, Type } from "wsp-ggml";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The GGUF file's architecture, counts, and its f32 tensor read into a CPU backend buffer. */
function gguf(path) {
  const file = readGguf(path);
  const cpu = Backend.cpu();
  const { context, tensors, buffer } = file.loadTensorsToBackend(cpu, { names: ["w.f32"] });
  try {
    return { arch: file.getString("general.architecture"), kvs: file.entries.length, tensors: file.tensors.map((t) => t.name), f32: Array.from(tensorGet(tensors.get("w.f32"))) };
  } finally {
    buffer?.free();
    context.free();
    cpu.free();
  }
}

/** The graph off the JS thread (Bun: a worker), then a long one stopped by an AbortSignal. */
async function asyncCompute() {
  const cpu = Backend.cpu({ nThreads: 2 });
  const w = new Context({ memSize: 1 << 20, noAlloc: true });
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  try {
    const a = w.newTensor2d(Type.F32, 3, 2), b = w.newTensor2d(Type.F32, 3, 2), x = w.newTensor2d(Type.F32, 256, 256);
    const buf = allocCtxTensors(w, cpu);
    tensorSet(a, new Float32Array([1, 2, 3, 4, 5, 6]));
    tensorSet(b, new Float32Array([1, 0, 1, 0, 1, 0]));
    tensorSet(x, new Float32Array(256 * 256).fill(0.001));
    const c = g.mulMat(a, b);
    const small = g.newGraph().buildForwardExpand(c);
    let y = x;
    for (let i = 0; i < 200; i++) y = g.mulMat(x, y);
    const long = g.newGraphCustom(512).buildForwardExpand(y);
    const ga = new Gallocr(cpu.defaultBufferType);
    ga.allocGraph(small);
    await cpu.graphComputeAsync(small);
    const asyncC = Array.from(tensorGet(c));
    ga.allocGraph(long);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 5);
    let aborted = "not aborted";
    await cpu.graphComputeAsync(long, { signal: ac.signal }).catch((e) => { aborted = e.name; });
    ga.free();
    buf.free();
    return { asyncC, aborted };
  } finally {
    g.free();
    w.free();
    cpu.free();
  }
}

const ctx = new Context({ memSize: 16 << 20 });
try {
  const a = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
  const b = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
  const c = ctx.mulMat(a, b);
  const y = ctx.softMax(ctx.scale(c, 0.5));
  ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 2 });
  const info = systemInfo();
  console.log(JSON.stringify({
    runtime: info.runtime.name,
    shape: c.shape,
    c: Array.from(c.get(Float32Array)),
    y: Array.from(y.get(Float32Array)),
    source: info.library.source,
    base: info.library.base,
    variant: info.cpuVariant.name,
    version: info.version,
    ggmlCommit: info.ggmlCommit,
    ...await asyncCompute(),
    gguf: gguf(process.argv[2] ?? fileURLToPath(new URL("./model.gguf", import.meta.url))),
  }));
} finally {
  ctx.free();
}
