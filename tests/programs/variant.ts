// Child process of tests/api.test.ts and tests/cpu_variant.test.ts: loads the library with the
// CPU variant named by WSP_TEST_VARIANT (or, without it, by WSP_GGML_CPU_VARIANT / the best one)
// and from WSP_TEST_PATH when set, then computes x² and a matmul. On a refused variant it prints
// the error's name, code, message and lists instead, and exits 3.
import process from "node:process";
import { Context, CpuVariantError, loadLibrary, Type } from "../../mod.ts";

let lib;
try {
  lib = loadLibrary({ cpuVariant: process.env.WSP_TEST_VARIANT || undefined, path: process.env.WSP_TEST_PATH || undefined });
} catch (e) {
  const v = e instanceof CpuVariantError ? { variant: e.variant, available: e.available, runnable: e.runnable } : {};
  console.log(JSON.stringify({ error: (e as Error).name, code: (e as { code?: string }).code, message: (e as Error).message, ...v }));
  process.exit(3);
}
using ctx = new Context({ memSize: 1 << 20 });
const a = ctx.newTensor1d(Type.F32, 3).set(new Float32Array([1, 2, 3]));
const y = ctx.sqr(a);
// README's example: mul_mat contracts the first dimension, c[i][j] = Σₖ p[j][k]·q[i][k].
const p = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
const q = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
const c = ctx.mulMat(p, q);
const g = ctx.newGraph();
g.buildForwardExpand(y);
g.buildForwardExpand(c);
g.compute({ nThreads: 1 });
console.log(JSON.stringify({ variant: lib.cpuVariant, source: lib.location.source, y: y.toArray(), c: c.toArray() }));
