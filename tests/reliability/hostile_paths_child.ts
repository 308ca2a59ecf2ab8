// The child of hostile_paths.test.ts: loads the library the way an application does (the default
// search, or WSP_GGML_LIBRARY_PATH), computes a small graph, and prints one line
// `hostile-report {...}`: where the library came from, the computed values, and (Linux) every
// mapped file whose name looks like a ggml library, from /proc/self/maps. A load that fails prints
// the error's class and code instead (`loaded: false`).
import { readFileSync } from "node:fs";
import process from "node:process";
import { Context, GgmlError, loadLibrary, Type } from "../../mod.ts";

const report = (r: Record<string, unknown>) => console.log(`hostile-report ${JSON.stringify(r)}`);
let lib;
try {
  lib = loadLibrary();
} catch (e) {
  report({ loaded: false, error: (e as Error)?.name, code: e instanceof GgmlError ? e.code : null, typed: e instanceof GgmlError, message: String((e as Error)?.message).slice(0, 400) });
  process.exit(0);
}
using ctx = new Context({ memSize: 1 << 20 });
const a = ctx.newTensor1d(Type.F32, 4).set(Float32Array.of(1, 2, 3, 4));
const y = ctx.scale(ctx.add(a, a), 0.5);
ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 1 });
let maps: string[] = [];
try {
  maps = [...new Set(readFileSync("/proc/self/maps", "utf8").split("\n").map((l) => l.split(/\s+/).slice(5).join(" ")).filter((f) => /ggml/.test(f)))];
} catch { /* no procfs */ }
report({ loaded: true, source: lib.location.source, base: lib.location.base, cpuPath: lib.cpuPath, values: y.toArray(), maps, cwd: process.cwd() });
