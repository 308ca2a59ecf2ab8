// API fuzzing: a seeded random sequence of valid and defective API calls (api_fuzz_child.ts) in a
// child process, so that a crash fails this test with the seed and the last progress instead of
// ending the runner. Every defective call must throw its typed GgmlError, every valid one succeed
// (or run out of pool memory, consistently), every computed value match a float64 evaluation in
// JS, and the regression cases (crashes found by this fuzz) pass. tests/misuse.test.ts has the
// hand-made cases; this is the randomised breadth: sequences over contexts (tiny, exhausted, freed),
// tensors, views, graphs of small sizes, backends, backend buffers and schedulers; and, in a share of
// the steps, compute-time defects (api_fuzz_compute.ts): f16 / bf16 / i32 / quantized operands,
// strided views as computed operands, index data out of range, set/acc offsets, callbacks that free
// what the compute uses, async computes with abort, quantize with NaN.
//
//   WSP_GGML_FUZZ_STEPS=100000 WSP_GGML_FUZZ_SEED=7 node scripts/test.mjs --quick tests/reliability/api_fuzz.test.ts
//   replay, printing every call:  WSP_GGML_FUZZ_SEED=7 WSP_GGML_FUZZ_TRACE=1 <runtime> tests/reliability/api_fuzz_child.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { describeChild, envInt, mib, root, runFuzzChild, runtimeName } from "./lib.ts";

interface Report {
  seed: number;
  steps: number;
  /** Steps that ran a compute scenario (api_fuzz_compute.ts). */
  computeSteps: number;
  calls: number;
  ms: number;
  totals: Record<"ok" | "oom" | "typedError" | "checked" | "unchecked" | "failures", number>;
  outcomes: Record<string, number>;
  failures: { step: number; call: string; error: string }[];
  rss: { start: number; warm: number; end: number };
}

/** Growth of resident memory allowed between the first tenth of the run and its end. */
const RSS_BOUND = 48 << 20;
/**
 * And per compute scenario (api_fuzz_compute.ts): measured on Node, 100,000 steps with 3,000 scenarios grew by
 * 75-85 MiB against 35 MiB without them. Part is the allocator settling per kind of scenario (each kind alone
 * levels off), part is ggml-opt's: `wsp_ggml_opt_free` does not free `ctx_copy` (~110 KB per OptContext that
 * ran an epoch; the epoch-callback scenario makes one).
 */
const RSS_PER_COMPUTE_STEP = 16 << 10;

test("API fuzz: defective calls throw typed errors, valid results match float64, the process survives", () => {
  const steps = envInt("WSP_GGML_FUZZ_STEPS", 4000);
  const seed = envInt("WSP_GGML_FUZZ_SEED", 1);
  const { rep, child: r } = runFuzzChild<Report>(join(root, "tests", "reliability", "api_fuzz_child.ts"), {
    env: { WSP_GGML_FUZZ_STEPS: String(steps), WSP_GGML_FUZZ_SEED: String(seed), WSP_GGML_FUZZ_TRACE: "", WSP_GGML_FUZZ_PROFILE: "" },
    timeoutMs: Math.max(120_000, steps * 5),
    seed,
    replay: `WSP_GGML_FUZZ_SEED=${seed} WSP_GGML_FUZZ_TRACE=1`,
  });
  console.log(`api fuzz on ${runtimeName}: seed ${rep.seed}, ${rep.steps} steps, ${rep.calls} calls in ${rep.ms} ms; ${JSON.stringify(rep.totals)}; ` +
    `RSS start ${mib(rep.rss.start)} MiB, after the first tenth ${mib(rep.rss.warm)} MiB, end ${mib(rep.rss.end)} MiB`);
  assert.equal(r.status, 0, describeChild(r));
  assert.doesNotMatch(r.stderr, /WSP_GGML_ASSERT|GGML_ABORT|abort/i, "no ggml assert message");
  assert.deepEqual(rep.failures, [], `calls with the wrong outcome (replay: WSP_GGML_FUZZ_SEED=${seed} WSP_GGML_FUZZ_TRACE=1)`);
  assert.equal(rep.steps, steps);
  // The sequence reaches every kind of outcome: valid results checked on each compute path, each defect class.
  for (const k of ["checked:graph.compute", "checked:backend.graphCompute", "checked:sched", "oom:newTensor", "oom:newGraphCustom"]) {
    assert.ok((rep.outcomes[k] ?? 0) > 0, `no call ended in ${k}`);
  }
  for (const code of ["SHAPE", "BOUNDS", "ARGUMENT", "TYPE", "USE_AFTER_FREE", "GRAPH_FULL", "NOT_ALLOCATED"]) {
    assert.ok(Object.keys(rep.outcomes).some((k) => k.startsWith("err:") && k.endsWith(`:${code}`)), `no defective call threw ${code}`);
  }
  // The compute-time part (api_fuzz_compute.ts) reaches its defect classes and checks values of each kind.
  const has = (re: RegExp) => Object.keys(rep.outcomes).some((k) => re.test(k));
  for (const re of [/^err:.*index .*out of range.*:BOUNDS$/, /^err:view[23]d.*strides past the source.*:BOUNDS$/, /^err:(set1d|set2d|acc)\(past the destination\):BOUNDS$/,
    /^(err:eval callback: .*:ARGUMENT|checked:eval callback: [^:]+)$/, /^checked:(getRows|mulMat|cast)\((f16|bf16|q|iq)/, /^checked:.*\((transpose|permute|view2d|view3d)\)$/,
    /^checked:(setRows|addId|mulMatId|getRowsBack)$/, /^(ok:.*\[(backend|sched)\.async\]|(ok|aborted):(backend|sched)\.graphComputeAsync.*)$/]) {
    assert.ok(has(re), `no outcome matches ${re}`);
  }
  assert.equal(Object.keys(rep.outcomes).filter((k) => k.startsWith("regression:")).length, 9, "the regression cases ran");
  const bound = RSS_BOUND + rep.computeSteps * RSS_PER_COMPUTE_STEP;
  assert.ok(rep.rss.end - rep.rss.warm < bound, `RSS grew by ${mib(rep.rss.end - rep.rss.warm)} MiB after warm-up (bound ${mib(bound)} MiB)`);
});
