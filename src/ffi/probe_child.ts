/**
 * The child process of the loader's probe (`probeLibrary` in `../loader.ts`):
 * loads the library named on the command line exactly as the parent would,
 * computes a small graph with the chosen CPU variant, and prints one JSON
 * line `{"ok":true,"variant":"…"}`. A binary that cannot run here kills this
 * process, not the parent.
 *
 *     <runtime> probe_child.js <base library> [<cpu variant>]
 *
 * @module
 */
import process from "node:process";
import { loadLibrary } from "../runtime/loader.ts";
import { Context } from "../core/context.ts";
import { Type } from "./bindings.gen.ts";

const [base, variant] = process.argv.slice(2);
const lib = loadLibrary({ path: base, probe: false, ...(variant ? { cpuVariant: variant } : {}) });
const ctx = new Context({ memSize: 1 << 20 });
try {
  const a = ctx.newTensor1d(Type.F32, 8).set(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]));
  const b = ctx.newTensor1d(Type.F32, 8).set(new Float32Array(8).fill(0.5));
  const c = ctx.mul(ctx.add(a, b), b);
  ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 1 });
  const got = Array.from(c.get(Float32Array));
  const want = [1, 2, 3, 4, 5, 6, 7, 8].map((x) => (x + 0.5) * 0.5);
  if (got.some((v, i) => v !== want[i])) throw new Error(`wrong result ${got} (want ${want})`);
} finally {
  ctx.free();
}
const file = lib.cpuPath.split(/[\\/]/).pop() ?? "";
const key = /^(?:lib)?ggml-cpu-(.+)\.(?:so|dylib|dll)$/.exec(file)?.[1];
console.log(JSON.stringify({ ok: true, variant: key, name: lib.cpuVariant }));
