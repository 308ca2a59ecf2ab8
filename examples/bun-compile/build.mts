// Bun-only (the .mts extension keeps it out of the Deno/tsc checks of the Deno+Node sources).
// Compiles app.mts into one executable with the native libraries embedded:
//
//   bun examples/bun-compile/build.mts [<library dir>] [--outfile <file>]
//
// <library dir> defaults to where the loader finds the libraries (the
// installed platform package's lib/, or the checkout's zig-out/lib).
// writeLibrariesModule (the package's `wsp-ggml/compile` subpath) writes
// libs.gen.mts: every library file imported with `with { type: "file" }`,
// which makes `bun build --compile` embed it; app.mts extracts them at start
// with extractLibraries and points the loader at them (dlopen, and ggml's own
// loading of the CPU variants, need real files, not paths inside the executable).
//
// In a project that installed wsp-ggml, the same two steps are:
//   import { writeLibrariesModule } from "wsp-ggml/compile";
//   import { locateLibrary } from "wsp-ggml";
//   writeLibrariesModule({ dir: locateLibrary().dir, out: "libs.gen.ts" });
//   // then: bun build --compile app.ts --outfile app
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { locateLibrary } from "../../mod.ts";
import { writeLibrariesModule } from "../../src/ffi/compile.ts";

const here = dirname(new URL(import.meta.url).pathname);
const args = process.argv.slice(2);
const outIdx = args.indexOf("--outfile");
const outfile = resolve(outIdx >= 0 ? args[outIdx + 1] : join(here, "out", "app"));
const dirArg = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--outfile");
const dir = resolve(dirArg ?? locateLibrary().dir);
const files = writeLibrariesModule({ dir, out: join(here, "libs.gen.mts") });
const r = Bun.spawnSync([process.execPath, "build", "--compile", join(here, "app.mts"), "--outfile", outfile], { stdout: "inherit", stderr: "inherit" });
if (r.exitCode !== 0) process.exit(r.exitCode ?? 1);
console.log(`compiled ${outfile} with ${files.length} libraries from ${dir}`);
