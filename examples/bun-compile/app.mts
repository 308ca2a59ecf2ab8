// Bun-only (the .mts extension keeps it out of the Deno/tsc checks of the Deno+Node sources).
// The app of the `bun build --compile` example (build it with build.mts). It
// imports wsp-ggml's Bun entry — what the "bun" condition of the npm
// package's exports selects — and loads the libraries embedded in it.
import { Context, loadLibrary, systemInfo, Type } from "../../src/ffi/entry_bun.ts";
import { extractLibraries } from "./embedded.mts";
import { libraries } from "./libs.gen.mts";

loadLibrary({ path: await extractLibraries(libraries) });
const ctx = new Context({ memSize: 16 << 20 });
const a = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
const b = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
const c = ctx.mulMat(a, b);
ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 2 });
const info = systemInfo();
console.log(JSON.stringify({ c: Array.from(c.get(Float32Array)), variant: info.cpuVariant.name, library: info.library.dir }));
ctx.free();
