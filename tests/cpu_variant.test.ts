// Choosing the CPU variant: `loadLibrary({ cpuVariant })` and WSP_GGML_CPU_VARIANT open the variant
// named, each variant this CPU can run loads and computes, and one it cannot run (or one the place
// does not hold) is a CpuVariantError before anything is loaded — never SIGILL. A CPU that can
// run every shipped variant still meets a refusal: zig's score-probes step builds score-only
// "variants" of one feature each (cpu-feats.cpp alone), and the test names one this CPU lacks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { baseLibraryName, CPU_VARIANT_ENV, cpuVariantScores, ffi, localBuildDir } from "../src/runtime/loader.ts";
import { root, runTsResult, zigBuilt } from "./run.ts";

const program = join(root, "tests", "programs", "variant.ts");
const lib = localBuildDir();
const scores = cpuVariantScores(ffi, lib);
const runnable = scores.filter((v) => v.score > 0).map((v) => v.name);
const unrunnable = scores.filter((v) => v.score === 0).map((v) => v.name);

interface Out { variant?: string; y?: number[]; c?: number[]; error?: string; code?: string; message?: string; available?: string[]; runnable?: string[] }
function child(env: Record<string, string>): { out: Out; status: number | null; signal: string | null; stderr: string } {
  // The parent's own choice must not leak into the child.
  const r = runTsResult(program, { [CPU_VARIANT_ENV]: "", WSP_TEST_VARIANT: "", WSP_TEST_PATH: "", ...env });
  const line = r.stdout.trim().split("\n").at(-1) ?? "";
  let out: Out = {};
  try {
    out = JSON.parse(line);
  } catch { /* reported below with stderr */ }
  return { out, status: r.status, signal: r.signal, stderr: r.stderr };
}

test("the scores: every variant of the build is listed, best first, and at least the baseline runs", () => {
  assert.ok(scores.length >= 1);
  for (let i = 1; i < scores.length; i++) assert.ok(scores[i - 1].score >= scores[i].score, "best first");
  assert.ok(runnable.length >= 1, "some variant runs here");
  console.log(`# runnable here: ${runnable.join(", ")}${unrunnable.length ? `; not runnable: ${unrunnable.join(", ")}` : ""}`);
});

test("each variant this CPU can run loads by WSP_GGML_CPU_VARIANT and by the option, and computes", () => {
  for (const name of runnable) {
    for (const env of [{ [CPU_VARIANT_ENV]: name }, { WSP_TEST_VARIANT: name }] as Record<string, string>[]) {
      const r = child(env);
      assert.equal(r.status, 0, `${JSON.stringify(env)}: ${r.signal ?? ""} ${r.stderr.slice(-400)}`);
      assert.deepEqual(r.out, { variant: name, source: "local", y: [1, 4, 9], c: [4, 10, 2, 5] }, JSON.stringify(env));
    }
  }
  // Unset, the best one.
  assert.equal(child({}).out.variant, runnable[0]);
});

test("a variant this CPU cannot run is a CpuVariantError naming the runnable ones, by option and by environment; the process lives", () => {
  const probes = join(root, "zig-out", "score-probes");
  const why = zigBuilt(["score-probes"], [probes], ["native/cpu-variant.c"]);
  assert.equal(why, "", why);
  // A place of its own: the real library and variants, and the probes beside them.
  const place = mkdtempSync(join(tmpdir(), "wsp-variant-"));
  try {
    for (const f of readdirSync(lib)) symlinkSync(join(lib, f), join(place, f));
    for (const f of readdirSync(probes)) symlinkSync(join(probes, f), join(place, f));
    const here = cpuVariantScores(ffi, place);
    const lacking = here.filter((v) => v.score === 0).map((v) => v.name);
    assert.ok(lacking.length > 0, `this CPU has every feature the probes ask for (${here.map((v) => v.name).join(", ")})`);
    console.log(`# refused here: ${lacking.join(", ")}`);
    for (const name of lacking) {
      for (const [env, from] of [[{ [CPU_VARIANT_ENV]: name }, CPU_VARIANT_ENV], [{ WSP_TEST_VARIANT: name }, "the cpuVariant option"]] as const) {
        const r = child({ ...env, WSP_TEST_PATH: place });
        assert.equal(r.status, 3, `${name}: exit ${r.status} ${r.signal ?? ""} ${r.stderr.slice(-400)}`);
        assert.equal(r.out.error, "CpuVariantError");
        assert.equal(r.out.code, "CPU_VARIANT");
        assert.match(r.out.message!, new RegExp(`${from} names the CPU variant "${name}", which this CPU cannot run`));
        assert.deepEqual(r.out.runnable, here.filter((v) => v.score > 0).map((v) => v.name));
        assert.ok(r.out.available!.includes(name));
      }
    }
    // One of the build's own variants this CPU cannot run (an AVX2-only machine and skylakex, say).
    for (const name of unrunnable) {
      const r = child({ [CPU_VARIANT_ENV]: name });
      assert.equal(r.out.error, "CpuVariantError", `${name}: ${r.stderr.slice(-300)}`);
    }
  } finally {
    rmSync(place, { recursive: true, force: true });
  }
});

test("a variant the place does not hold is a CpuVariantError listing what it has", () => {
  const r = child({ [CPU_VARIANT_ENV]: "pentium4" });
  assert.equal(r.status, 3, r.stderr.slice(-400));
  assert.equal(r.out.error, "CpuVariantError");
  assert.match(r.out.message!, /names the CPU variant "pentium4", which .* does not hold \(it has: /);
  assert.deepEqual([...r.out.available!].sort(), scores.map((v) => v.name).sort());
  assert.ok(existsSync(join(lib, baseLibraryName())));
  assert.equal(process.exitCode ?? 0, 0);
});
