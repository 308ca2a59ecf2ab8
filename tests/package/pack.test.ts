// The published packages, proven from their tarballs: every package is built
// and packed with `npm pack` (scripts/pack.mjs), the tarballs are installed
// into a fresh temporary project with `npm install --offline` (our packages
// from the tarballs, koffi from npm's cache), and the same program
// (tests/package/program.mjs) computes a graph there under Node, Bun and Deno.
//
// The test drives all three runtimes itself, so it runs on Node only; on Bun
// and Deno (which `npm test` also runs it on) it is skipped.
//
// Needs: `npm ci` (npm, koffi in npm's cache, bun and deno in node_modules/.bin)
// and the native builds (`node scripts/zig.mjs build dist`, or at least the host build).
import assert from "node:assert/strict";
import { execFileSync, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { root } from "../run.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const onNode = g.Deno === undefined && g.Bun === undefined;
const win = process.platform === "win32";
const npm = win ? "npm.cmd" : "npm";
const bin = (name: string) => join(root, "node_modules", ".bin", win ? `${name}.cmd` : name);

interface PackReport {
  packages: { name: string; filename: string; tarball: string; size: number; files: { path: string; size: number }[] }[];
  missing: { name: string; why: string }[];
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
}

// mul_mat of a (3×2) and b (3×2): c[i][j] = Σₖ a[j][k]·b[i][k]; y = softmax(c/2) by rows.
const C = [4, 10, 2, 5];
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

  const run = (cmd: string, args: readonly string[], env: Record<string, string> = {}): SpawnSyncReturns<string> => {
    const clean = { ...process.env };
    // Nothing of this checkout may leak in: the installed packages must find their own library.
    delete clean.WSP_GGML_LIBRARY_PATH;
    delete clean.WSP_GGML_PROBE;
    delete clean.NODE_OPTIONS;
    delete clean.NODE_TEST_CONTEXT;
    return spawnSync(cmd, args, {
      cwd: project,
      encoding: "utf8",
      timeout: 120_000,
      shell: win && cmd.endsWith(".cmd"),
      env: { ...clean, NO_COLOR: "1", WSP_GGML_CACHE_DIR: cache, ...env },
    });
  };

  const program = (runtime: keyof typeof runtimes, env: Record<string, string> = {}): Result => {
    const [cmd, args] = runtimes[runtime]("program.mjs");
    const r = run(cmd, args, env);
    assert.equal(r.status, 0, `${runtime} exited with ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Result;
  };

  const check = (runtime: string, r: Result) => {
    assert.equal(r.runtime, runtime);
    assert.deepEqual(r.shape, [2, 2, 1, 1]);
    assert.deepEqual(r.c, C);
    assert.deepEqual(r.asyncC, C, "graphComputeAsync");
    assert.equal(r.aborted, "AbortError", "a long graphComputeAsync whose signal aborted");
    r.y.forEach((v, i) => assert.ok(Math.abs(v - Y[i]) < 1e-5, `y[${i}] = ${v}, want ${Y[i]}`));
    assert.equal(r.source, "package");
    assert.ok(r.base.startsWith(join(project, "node_modules", "@wsp-ggml", host())), r.base);
    assert.equal(r.version, JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
    assert.equal(r.ggmlCommit, "85871a9");
  };

  before(async () => {
    // A computed specifier: scripts/pack.mjs is plain JavaScript without declarations.
    const script = "../../scripts/pack.mjs";
    const { buildPackages } = (await import(script)) as { buildPackages(o: { pack: boolean; allowMissing: boolean }): PackReport };
    report = buildPackages({ pack: true, allowMissing: true });
    for (const m of report.missing) console.log(`# not packed: ${m.name}: ${m.why}`);
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
    writeFileSync(join(project, "program_types.ts"), PROGRAM_TYPES);
    const install = (mode: string) => run(npm, ["install", mode, "--no-audit", "--no-fund", "--loglevel=error"]);
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
        assert.doesNotMatch(f.path, /(^|\/)(tests?|vendor|cpp|\.zig-cache|zig-out|node_modules|codegen)\/|\.test\.|\.(c|cc|cpp|h|zig|tgz|map)$/, `${p.name}: ${f.path}`);
      }
    }
    const main = report.packages.find((p) => p.name === "wsp-ggml")!;
    assert.ok(main.files.some((f) => f.path === "dist/src/ffi/entry_deno.js"));
    assert.ok(main.files.some((f) => f.path === "dist/src/mod.d.ts"));
    const installed = readdirSync(join(project, "node_modules", "@wsp-ggml"));
    assert.deepEqual(installed, [host()]);
    console.log(`# installed with npm install ${installMode}`);
  });

  for (const runtime of ["node", "bun", "deno"] as const) {
    test(`${runtime}: the program computes its graph with the installed platform package`, () => {
      const r = program(runtime);
      check(runtime, r);
      console.log(`# ${runtime}: c = ${r.c}, y = ${r.y.map((v) => v.toFixed(4))}, variant ${r.variant}`);
    });
  }

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

function readdirOne(dir: string): string {
  const files = readdirSync(dir);
  assert.equal(files.length, 1, `one verdict expected in ${dir}: ${files}`);
  return files[0];
}
