// The GPU program of tests/package/pack.test.ts, run under Node, Bun and Deno in the project
// that installed wsp-ggml, its platform package and its -vulkan package from their tarballs:
// it loads the library, says what became of the Vulkan backend (`loadLibrary().vulkan`) and
// which devices there are, computes a mul_mat on the CPU backend and, when a Vulkan device is
// registered, the same on it, and prints one JSON line for the test to check. The inputs are
// small integers, so every product and sum is exact in f32 (and f16): the results must be equal.
import { allocCtxTensors, Backend, BackendDevType, Context, devices, Gallocr, loadLibrary, tensorGet, tensorSet, Type } from "wsp-ggml";

const K = 64, M = 16, N = 4;
const ints = (n, seed) => Float32Array.from({ length: n }, (_, i) => ((i * 7 + seed) % 5) - 2);

/** c = mul_mat(a, b) on `backend`: a is K×M, b is K×N, c is M×N. */
function matmul(backend) {
  const w = new Context({ memSize: 1 << 20, noAlloc: true });
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  try {
    const a = w.newTensor2d(Type.F32, K, M), b = w.newTensor2d(Type.F32, K, N);
    const buf = allocCtxTensors(w, backend);
    tensorSet(a, ints(K * M, 1));
    tensorSet(b, ints(K * N, 3));
    const c = g.mulMat(a, b);
    const gf = g.newGraph().buildForwardExpand(c);
    const ga = new Gallocr(backend.defaultBufferType);
    ga.allocGraph(gf);
    backend.graphCompute(gf);
    const out = Array.from(tensorGet(c));
    ga.free();
    buf.free();
    return out;
  } finally {
    g.free();
    w.free();
  }
}

const lib = loadLibrary();
const all = devices();
const cpu = Backend.cpu({ nThreads: 2 });
const result = { vulkan: lib.vulkan, devices: all.map((d) => `${d.reg.name}:${d.name}`), cpu: matmul(cpu), gpu: null, gpuDevice: null };
cpu.free();
const dev = all.find((d) => d.reg.name === "Vulkan" && d.type !== BackendDevType.CPU);
if (dev) {
  const vk = dev.init();
  try {
    result.gpu = matmul(vk);
    result.gpuDevice = dev.description;
  } finally {
    vk.free();
  }
}
console.log(JSON.stringify(result));
