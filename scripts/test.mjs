#!/usr/bin/env node
// The whole test suite: `npm test`.
//
//   1. set-up (scripts/setup.mjs): vendor tree verified, pinned zig, host libraries built
//   2. the C smoke test on the host (`zig build test`)
//   3. generated files are fresh (`codegen --check`, needs libclang)
//   4. every release target cross-compiled (`zig build dist smoke-dist`) and checked:
//      formats, libc floors, Windows exports, smoke runs under qemu-user and wine
//   5. the TypeScript suite on Deno, Bun and Node — the same files on each
//   6. the numerics once more on every other CPU variant this machine can run (on Node): the
//      tests whose results depend on how the kernels round — Whisper's transcripts (word error
//      rate; equality with whisper.cpp's C driver on the fastest of these variants), the LLM's
//      logits and greedy steps, the ops against numpy, what training reaches — so that a pass does
//      not depend on which CPU the CI machine has (step 5 runs on the best variant)
//
//   node scripts/test.mjs [--quick] [--runtime deno|bun|node] [FILE…]
//     --quick   skip step 4 (the slow cross-compilation)
//     FILE…     run only these test files (steps 1 and 5)
//     --variants-only   steps 1 and 6 alone
//   WSP_GGML_TEST_VARIANTS=none | a,b,…   step 6 on no variant, or on these (default: every
//                                         runnable one but step 5's)
//   WSP_GGML_CPU_VARIANT=haswell           step 5 on that variant (as a machine without AVX-512 would)
//
// Ends with one line `tests: N passed, N failed` and a non-zero exit on any failure.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setup, root, bin } from "./setup.mjs";
import { ensureZig } from "./zig.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick") || process.env.WSP_GGML_TEST_QUICK === "1";
const variantsOnly = args.includes("--variants-only");
const runtimeArg = args.includes("--runtime") ? args[args.indexOf("--runtime") + 1] : null;
const fileArgs = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--runtime");
const runtimes = runtimeArg ? [runtimeArg] : ["deno", "bun", "node"];

/** One row per step: name, passed, failed, skipped, note. */
const results = [];

function strip(s) {
  // deno-lint-ignore no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, "");
}

/** Runs a command, its output streamed (or, with `opts.buffered: title`, printed whole under that title when it ends, for runs side by side). */
function run(cmd, cmdArgs, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, cmdArgs, { cwd: root, env: { ...process.env, NO_COLOR: "1", ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const echo = (stream) => (d) => { out += d; if (!opts.buffered) stream.write(d); };
    child.stdout.on("data", echo(process.stdout));
    child.stderr.on("data", echo(process.stderr));
    child.on("close", (code, signal) => {
      if (opts.buffered) process.stdout.write(`\n--- ${opts.buffered} ---\n${out}`);
      resolve({ code: signal ? 128 : code, out: strip(out) });
    });
  });
}

const started = Date.now();
/** A step's heading, with the time since the suite started (where CI's time goes, in its log). */
function heading(s) {
  console.log(`\n=== ${s} === (${((Date.now() - started) / 60000).toFixed(1)} min in)`);
}

/** Test files of the TypeScript suite (tests/native/ is Node-only and runs in step 4). */
function testFiles() {
  if (fileArgs.length) return fileArgs;
  const out = [];
  const walk = (dir) => {
    if (!fs.existsSync(path.join(root, dir))) return;
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) {
        if (rel !== "tests/native" && e.name !== "fixtures") walk(rel);
      } else if (e.name.endsWith(".test.ts")) out.push(rel);
    }
  };
  for (const d of ["codegen", "src", "tests"]) walk(d);
  return out.sort();
}

/** The .ts files directly in `dir` and below. */
function listTs(dir) {
  const abs = path.join(root, dir);
  if (!fs.existsSync(abs)) return [];
  return fs.readdirSync(abs, { recursive: true })
    .map((f) => `${dir}/${String(f).split(path.sep).join("/")}`)
    .filter((f) => f.endsWith(".ts") && !f.includes("/node_modules/"))
    .sort();
}

/**
 * The failing tests of a runner's output, each with the lines that say why, so
 * that the end of a long CI log (often all that is kept) names them.
 */
function failures(runtime, out) {
  const lines = out.split("\n");
  const found = [];
  lines.forEach((line, i) => {
    if (runtime === "bun" && line.startsWith("(fail) ")) {
      // bun prints the error above the (fail) line, after the previous test's line.
      let j = i - 1;
      while (j > 0 && i - j < 40 && !/^\((pass|fail|skip|todo)\) /.test(lines[j - 1])) j--;
      found.push({ name: line.slice(7), why: lines.slice(j, i) });
    } else if (runtime !== "bun" && runtime !== "deno" && /^\s*not ok \d+ - /.test(line)) {
      const why = [];
      for (let j = i + 1; j < lines.length && j - i < 40 && !/^\s*(not )?ok \d+ - /.test(lines[j]); j++) why.push(lines[j]);
      found.push({ name: line.replace(/^\s*not ok \d+ - /, ""), why });
    } else if (runtime === "deno" && /^(.+) => (\S+):\d+:\d+$/.test(line) && lines.slice(0, i).some((l) => /^FAILURES\s*$/.test(l))) {
      // The FAILURES list names them; the ERRORS section above says why.
      const k = lines.indexOf(line);
      const why = [];
      for (let j = k + 1; k < i && j < lines.length && j - k < 40 && !/ => \S+:\d+:\d+$/.test(lines[j]) && !/^FAILURES\s*$/.test(lines[j]); j++) why.push(lines[j]);
      found.push({ name: line, why });
    }
  });
  // bun repeats its failures in a recap at the end.
  return found.filter((f, i) => found.findIndex((g) => g.name === f.name) === i);
}

/** Counts from each runner's closing lines. */
function counts(runtime, out) {
  if (runtime === "node") {
    const n = (k) => Number(new RegExp(`^# ${k} (\\d+)`, "m").exec(out)?.[1] ?? 0);
    return { passed: n("pass"), failed: n("fail") + n("cancelled"), skipped: n("skipped") + n("todo") };
  }
  if (runtime === "bun") {
    const n = (k) => Number(new RegExp(`^\\s*(\\d+) ${k}$`, "m").exec(out)?.[1] ?? 0);
    return { passed: n("pass"), failed: n("fail"), skipped: n("skip") + n("todo") };
  }
  // deno: "ok | 3 passed (40 steps) | 0 failed | 1 ignored": tests and their steps (a suite with steps counts once more).
  const m = /(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?(?: \| (\d+) ignored)?/.exec(out);
  if (!m) return { passed: 0, failed: 0, skipped: 0 };
  return { passed: Number(m[1]) + Number(m[2] ?? 0), failed: Number(m[3]) + Number(m[4] ?? 0), skipped: Number(m[5] ?? 0) };
}

async function tsSuite(files) {
  const gcEnv = {};
  for (const runtime of runtimes) {
    heading(`TypeScript suite on ${runtime} (${files.length} files)`);
    let r;
    if (runtime === "deno") r = await run(bin("deno"), ["test", "-A", "--no-check", "--v8-flags=--expose-gc", ...files], { env: gcEnv });
    else if (runtime === "bun") r = await run(bin("bun"), ["test", "--timeout", "600000", ...files.map((f) => `./${f}`)], { env: gcEnv });
    else r = await run(process.execPath, ["--import", "tsx", "--expose-gc", "--test", "--test-reporter=tap", ...files], { env: gcEnv });
    const c = counts(runtime, r.out);
    // A runner that exits non-zero with no counted failure (a crash, a load error) still fails.
    if (r.code !== 0 && c.failed === 0) c.failed = 1;
    if (r.code === 0 && c.passed === 0 && files.length) c.failed = 1;
    results.push({ step: `ts suite · ${runtime}`, ...c, note: r.code === 0 ? "" : `exit ${r.code}`, failures: failures(runtime, r.out) });
  }
}

/**
 * Step 6's tests whose results depend on the CPU variant: files with a name pattern (null: all).
 * Left to step 5 alone: the LLM's f32 logits against float64 (nMSE ≤ 1e-6, measured at most
 * 4e-12 on every x86 variant: five orders of margin; the slowest test on x64).
 * COMPUTE runs one variant at a time (its tests take 2 threads). SPEECH is Whisper on one thread:
 * two variants transcribe at once, one per core, the slowest variants first. The comparison with
 * whisper.cpp's C driver (the same text, clip for clip: what the binding owes on any variant) runs
 * in step 5 on all three runtimes and here on the fastest of the other variants; on the others
 * the core it took goes to a second variant's transcription, which halves this step's time.
 */
const COMPUTE_TESTS = [
  [["tests/llm.test.ts", "tests/backend_ops.test.ts"], "arg-max token|greedy continuations|KV cache|direct vs the scheduler"],
  [["tests/ops.test.ts", "tests/opt.test.ts", "tests/demo.test.ts"], null],
];
const SPEECH_TESTS = [["tests/whisper/transcribe.test.ts"], "word error rate|whisper\\.cpp called from C|tokenTimestamps|initial prompt"];

/** The CPU variants this machine can run, best first (the loader's scores). */
async function runnableVariants() {
  const code = "import { cpuVariantScores, ffi, localBuildDir } from './src/runtime/loader.ts';" +
    "console.log(JSON.stringify(cpuVariantScores(ffi, localBuildDir()).filter((v) => v.score > 0).map((v) => v.name)));";
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`cannot list the CPU variants: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

async function variantSuite() {
  const asked = process.env.WSP_GGML_TEST_VARIANTS;
  if (asked === "none") {
    results.push({ step: "numerics · variants", passed: 0, failed: 0, skipped: 1, note: "WSP_GGML_TEST_VARIANTS=none" });
    return;
  }
  const runnable = await runnableVariants();
  // Step 5 ran on the best one, or on the one WSP_GGML_CPU_VARIANT named.
  const done = process.env.WSP_GGML_CPU_VARIANT || runnable[0];
  const variants = asked ? asked.split(",").filter(Boolean) : runnable.filter((v) => v !== done);
  console.log(`runnable CPU variants, best first: ${runnable.join(", ")}; step 5 ran on ${done}`);
  const t0 = Date.now();
  const rows = new Map(variants.map((v) => [v, { passed: 0, failed: 0, skipped: 0, failures: [], ms: 0 }]));
  const add = (v, r, ms) => {
    const row = rows.get(v), c = counts("node", r.out);
    if (r.code !== 0 && c.failed === 0) c.failed = 1;
    row.passed += c.passed, row.failed += c.failed, row.skipped += c.skipped, row.ms += ms;
    row.failures.push(...failures("node", r.out));
  };
  const nodeTest = (v, [files, pattern], env = {}, opts = {}) =>
    run(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", ...(pattern ? [`--test-name-pattern=${pattern}`] : []), ...files], { env: { WSP_GGML_CPU_VARIANT: v, ...env }, ...opts });
  for (const v of variants) {
    heading(`numerics on the CPU variant ${v}: LLM, ops, training (Node)`);
    for (const group of COMPUTE_TESTS) {
      const t = Date.now();
      add(v, await nodeTest(v, group), Date.now() - t);
    }
  }
  if (variants.length === 0) return;
  const withC = variants[0];
  // Slowest first (the list is best first), so that the last job to start is a short one.
  const queue = [...variants].reverse();
  heading(`numerics: Whisper's transcripts on ${queue.join(", ")}, two variants at a time (Node; whisper.cpp's C driver beside ${withC})`);
  const worker = async () => {
    for (let v = queue.shift(); v !== undefined; v = queue.shift()) {
      const t = Date.now();
      const r = await nodeTest(v, SPEECH_TESTS, { WSP_GGML_TEST_WHISPER_C: v === withC ? "1" : "0" }, { buffered: `Whisper on ${v}` });
      add(v, r, Date.now() - t);
    }
  };
  await Promise.all([worker(), worker()]);
  for (const [v, row] of rows) {
    results.push({ step: `numerics · ${v}`, passed: row.passed, failed: row.failed, skipped: row.skipped, note: `${(row.ms / 1000).toFixed(0)} s`, failures: row.failures });
  }
  console.log(`numerics on ${variants.length} more variant(s): ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

async function main() {
  heading("set-up");
  await setup({ log: console.log });
  const zig = ensureZig();

  if (!fileArgs.length && !variantsOnly) {
    heading("C smoke test (zig build test)");
    // zig's run step keeps the program's output to itself on success: run the installed binary again to show and count it.
    const built = await run(zig, ["build", "test"]);
    const libDir = path.join(root, "zig-out", "lib");
    const smoke = built.code === 0 ? await run(path.join(libDir, process.platform === "win32" ? "wsp-ggml-smoke.exe" : "wsp-ggml-smoke"), [libDir]) : built;
    const m = /smoke: (\d+) passed, (\d+) failed/.exec(smoke.out);
    const smokeFailed = smoke.code === 0 ? Number(m?.[2] ?? 0) : Math.max(1, Number(m?.[2] ?? 1));
    results.push({ step: "C smoke · host", passed: Number(m?.[1] ?? 0), failed: m ? smokeFailed : 1, skipped: 0, note: "" });

    heading("type check (deno check; tsc for the Node/Bun view)");
    const tsFiles = ["mod.ts", "codegen/main.ts", ...listTs("examples"), ...testFiles(), ...listTs("tests/native")];
    const dcheck = await run(bin("deno"), ["check", "--quiet", ...new Set(tsFiles)]);
    const tsc = await run(bin("tsc"), ["-p", ".", "--noEmit"]);
    results.push({ step: "type check", passed: (dcheck.code === 0) + (tsc.code === 0), failed: (dcheck.code !== 0) + (tsc.code !== 0), skipped: 0, note: "" });

    heading("generated files are fresh (codegen --check)");
    const check = await run(bin("deno"), ["run", "-A", "codegen/main.ts", "--check"]);
    results.push({ step: "codegen --check", passed: check.code === 0 ? 1 : 0, failed: check.code === 0 ? 0 : 1, skipped: 0, note: "" });

    if (quick) {
      results.push({ step: "dist + cross smoke", passed: 0, failed: 0, skipped: 1, note: "--quick" });
    } else {
      heading("cross-compile every target (zig build dist smoke-dist metal-embed)");
      // zig's install never removes files: a variant left from an older build would be loaded.
      for (const d of ["dist", "smoke", "metal-embed"]) fs.rmSync(path.join(root, "zig-out", d), { recursive: true, force: true });
      const t0 = Date.now();
      const dist = await run(zig, ["build", "dist", "smoke-dist", "metal-embed"]);
      console.log(`dist built in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      if (dist.code !== 0) {
        results.push({ step: "zig build dist", passed: 0, failed: 1, skipped: 0, note: `exit ${dist.code}` });
      } else {
        heading("dist artifacts and cross-target smoke (Node)");
        const r = await run(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", "tests/native/dist.test.ts", "tests/native/metal_embed.test.ts"]);
        const c = counts("node", r.out);
        if (r.code !== 0 && c.failed === 0) c.failed = 1;
        results.push({ step: "dist + cross smoke", ...c, note: "", failures: failures("node", r.out) });
      }
    }
  }

  if (!variantsOnly) await tsSuite(testFiles());
  if (!fileArgs.length && (!runtimeArg || runtimeArg === "node")) await variantSuite();

  const withFailures = results.filter((r) => r.failures?.length);
  if (withFailures.length) {
    heading("failures");
    for (const r of withFailures) {
      for (const f of r.failures) {
        console.log(`\n--- ${r.step}: ${f.name}`);
        for (const l of f.why.slice(-30)) console.log(`    ${l}`);
      }
    }
  }

  heading("summary");
  let passed = 0, failed = 0, skipped = 0;
  for (const r of results) {
    console.log(`${r.step.padEnd(24)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(3)} failed ${String(r.skipped).padStart(3)} skipped ${r.note}`);
    passed += r.passed;
    failed += r.failed;
    skipped += r.skipped;
  }
  console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(`test: ${e.stack ?? e}`);
  process.exit(1);
});
