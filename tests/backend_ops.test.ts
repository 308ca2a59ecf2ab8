// The op comparison of ggml's test-backend-ops, over the public API (tests/backend_ops_cases.ts):
// every case of the table — unary, binary with broadcast, GLU, mul_mat in f32/f16/q4_0/q8_0/q4_K
// over several shapes, mul_mat_id, out_prod, get_rows, set_rows, cpy/cont, norms, soft_max with and
// without a mask, rope, flash_attn_ext, argmax, count_equal, sums, argsort, concat, scale, clamp,
// pad, roll, im2col and the convolutions, pooling — computed on a side under test and on the CPU
// backend from the same random inputs; nMSE ≤ 1e-7, ≤ 5e-4 for mul_mat, mul_mat_id, out_prod, the
// convolutions and flash_attn_ext, exact for argmax, count_equal and argsort. Unsupported cases are
// skipped and listed.
//
// - Always: the CPU backend with one thread, every tensor in its buffer, against the scheduler over a
//   CPU backend with three threads (the scheduler allocates the intermediates and reuses their
//   memory; the kernels split their rows among threads).
// - For each GPU device ggml has registered (Vulkan: `WSP_GGML_VK_VISIBLE_DEVICES=0` makes Mesa's
//   lavapipe one): the CPU backend against that device, as test-backend-ops compares them.
// - The harness fails: a perturbed output, and graphs that differ by a little more than the limits.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Backend, type Context, type Tensor, Type } from "../src/mod.ts";
import { compareOps, gpuPlan, runGpuChildRaw, streamedCases, VK_VISIBLE_ENV } from "./gpu_compare_child.ts";
import { describeChild } from "./reliability/lib.ts";
import { allCases, type CaseResult, compareCases, directSide, MATMUL_TYPES, type OpCase, schedSide, summarize, TOL } from "./backend_ops_cases.ts";

const cases = allCases();

/**
 * A known problem, seen on this machine's lavapipe (Mesa's software Vulkan, whose device memory is host
 * memory) with the Vulkan backend of llama.cpp b6673: the whole table in one process often ends in
 * glibc's "malloc(): smallbin double linked list corrupted" / "corrupted double-linked list" (SIGABRT) or
 * a SIGSEGV, somewhere after case 120 (Deno and Bun: twice right after case 169 of 183, the f32 conv_2d;
 * Node: sometimes not at all), every case finished before it equal to the CPU's. With "count_equal of
 * argmaxes [10,40]" left out, 4 runs of 4 did not crash; that case alone, 300 times, does not either; with
 * it moved last, runs still died before it. Cause open.
 */
const KNOWN_CRASH = { signature: /corrupted|malloc\(\)|SIGSEGV|SIGABRT|status 13[49]/, what: "a heap corruption", minCases: 100 };

function check(label: string, results: CaseResult[], minPassed: number): void {
  const text = summarize(label, results);
  console.log(text);
  const failed = results.filter((r) => r.status === "fail");
  assert.equal(failed.length, 0, text);
  const passed = results.filter((r) => r.status === "pass").length;
  assert.ok(passed >= minPassed, `only ${passed} cases compared (want ≥ ${minPassed})\n${text}`);
}

describe("backend ops", () => {
  test("the case table covers what test-backend-ops compares", () => {
    const ops = new Set(cases.map((c) => c.op));
    for (
      const op of ["ADD", "MUL", "MUL_MAT", "MUL_MAT_ID", "GET_ROWS", "SET_ROWS", "CPY", "CONT", "RMS_NORM", "NORM", "SOFT_MAX", "ROPE", "FLASH_ATTN_EXT",
        "ARGMAX", "COUNT_EQUAL", "SUM_ROWS", "CONCAT", "SCALE", "CLAMP", "IM2COL", "CONV_2D", "POOL_2D", "PAD", "ARGSORT", "OUT_PROD", "GLU"]
    ) assert.ok(ops.has(op), op);
    const names = cases.map((c) => c.name);
    assert.equal(new Set(names).size, names.length, "case names are unique (they seed the inputs)");
    for (const t of MATMUL_TYPES) assert.ok(cases.some((c) => c.op === "MUL_MAT" && c.name.startsWith(`mul_mat ${["f32", "f16", "q4_0", "q8_0", "q4_K"][MATMUL_TYPES.indexOf(t)]} `)));
    assert.ok(cases.filter((c) => c.op === "MUL_MAT").length >= 20);
  });

  test("CPU, 1 thread, direct vs the scheduler over a CPU backend with 3 threads", () => {
    using ref = Backend.cpu({ nThreads: 1 });
    using cpu3 = Backend.cpu({ nThreads: 3 });
    const results = compareCases(cases, directSide("CPU, 1 thread", ref), schedSide("Sched(CPU, 3 threads)", [cpu3]));
    check("CPU 1 thread vs Sched(CPU, 3 threads)", results, cases.length - 5);
  });

  const plan = gpuPlan();
  if (plan.where === "here") {
    for (const run of compareOps()) {
      test(`CPU vs ${run.device} (${run.description})`, () => check(`CPU vs ${run.device}`, run.results, Math.floor(cases.length / 2)));
    }
  } else if (plan.where === "child") {
    test(`CPU vs Vulkan, in a child with ${VK_VISIBLE_ENV}=0 (lavapipe)`, () => {
      const r = runGpuChildRaw("ops");
      const runs = streamedCases(r.stdout);
      if (r.status === 0 && runs.size === 0) return void console.log(`skipped: no GPU device even with ${VK_VISIBLE_ENV}=0`);
      assert.ok(runs.size > 0, `no case ran\n${describeChild(r)}`);
      for (const [device, results] of runs) check(`CPU vs ${device} (lavapipe)`, results, r.status === 0 ? Math.floor(cases.length / 2) : KNOWN_CRASH.minCases);
      if (r.status !== 0 || r.signal !== null) {
        // KNOWN ISSUE (tests/backend_ops.test.ts, KNOWN_CRASH): the process dies of a heap corruption after 120-150
        // cases on lavapipe; every case it finished is compared above. Anything else fails.
        assert.match(`${r.stderr}\n${r.signal} status ${r.status}`, KNOWN_CRASH.signature, `the child died otherwise\n${describeChild(r)}`);
        const done = [...runs.values()][0].length;
        console.log(`KNOWN ISSUE: the lavapipe child died (${r.signal ?? `status ${r.status}`}: ${KNOWN_CRASH.what}) after ${done} of ${cases.length} cases, all of which were compared`);
      }
    });
  } else {
    test("CPU vs a GPU device", { skip: plan.reason }, () => {});
  }

  test("the harness fails on a perturbed output, and on graphs just past the limits", () => {
    using ref = Backend.cpu({ nThreads: 1 });
    using other = Backend.cpu({ nThreads: 2 });
    const pick = ["mul_mat q4_0 [256,16] x f32 [256,9]", "rms_norm [64,5,3] eps 1e-6", "argmax [32,10]", "count_equal i32 [64,4]", "soft_max [32,6,4] mask f16 scale 0.5 max_bias 0"];
    const some = cases.filter((c) => pick.includes(c.name));
    assert.equal(some.length, pick.length);
    // 3% larger output: nMSE 9e-4, past both limits; the exact cases see every nonzero element change.
    const perturbed = compareCases(some, directSide("CPU", ref), directSide("CPU, perturbed", other), { perturb: (v) => v.forEach((x, i) => (v[i] = x === 0 ? 1 : x * 1.03)) });
    assert.deepEqual(perturbed.map((r) => r.status), some.map(() => "fail"), summarize("perturbed", perturbed));
    // Graphs that differ: each side builds its own (the tested side first, then the reference).
    const twoSided = (name: string, op: string, tol: number, f: (ctx: Context, x: Tensor, tested: boolean) => Tensor): OpCase => {
      let calls = 0;
      return { name, op, tol, build: (b) => f(b.ctx, b.input(Type.F32, [64, 7]), calls++ % 2 === 0) };
    };
    const mutants = [
      // scale 0.7 vs 0.7003: nMSE (3e-4/0.7)² ≈ 1.8e-7 > 1e-7.
      twoSided("scale 0.7003 vs 0.7", "SCALE", TOL.default, (c, x, t) => c.scale(x, t ? 0.7003 : 0.7)),
      // rms_norm with eps 1e-2 vs 1e-6 on inputs of mean square 1/3.
      twoSided("rms_norm eps 1e-2 vs 1e-6", "RMS_NORM", TOL.default, (c, x, t) => c.rmsNorm(x, t ? 1e-2 : 1e-6)),
    ];
    const mutated = compareCases(mutants, directSide("CPU", ref), directSide("CPU, mutated graph", other));
    assert.deepEqual(mutated.map((r) => r.status), ["fail", "fail"], summarize("mutated", mutated));
    // And just inside the limit: scale 0.7 vs 0.70002 (nMSE ≈ 8e-10) passes.
    const inside = compareCases([twoSided("scale 0.70002 vs 0.7", "SCALE", TOL.default, (c, x, t) => c.scale(x, t ? 0.70002 : 0.7))], directSide("CPU", ref), directSide("CPU", other));
    assert.equal(inside[0].status, "pass", summarize("inside", inside));
  });
});
