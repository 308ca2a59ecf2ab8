// GGUF fuzzing: a seeded, reproducible run of structured mutations of valid GGUF files (see
// gguf_fuzz_child.ts) in a child process, so that a crash fails this test with the seed and the
// case instead of ending the runner. Every case must end in a value or a typed error, within the
// time limit, and resident memory must stay bounded over the run. tests/gguf_hostile.test.ts has
// the hand-made cases; this is the randomised breadth.
//
//   WSP_GGML_FUZZ_CASES=200000 WSP_GGML_FUZZ_SEED=7 node scripts/test.mjs --quick tests/reliability/gguf_fuzz.test.ts
//   replay one case:  WSP_GGML_FUZZ_CASE=123 WSP_GGML_FUZZ_DUMP=case.gguf <runtime> tests/reliability/gguf_fuzz_child.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { describeChild, envInt, mib, root, runFuzzChild, runtimeName } from "./lib.ts";

interface Report {
  seed: number;
  cases: number;
  ms: number;
  outcomes: Record<string, number>;
  failures: { case: number; label: string; seed: string; error: string }[];
  nFailures: number;
  rss: { start: number; warm: number; end: number };
}

/** Growth of resident memory allowed between the first tenth of the run and its end. */
const RSS_BOUND = 48 << 20;

test("GGUF fuzz: every mutated file reads to a value or a typed error; no crash, hang or leak", () => {
  const cases = envInt("WSP_GGML_FUZZ_CASES", 3000);
  const seed = envInt("WSP_GGML_FUZZ_SEED", 1);
  const { rep, child: r } = runFuzzChild<Report>(join(root, "tests", "reliability", "gguf_fuzz_child.ts"), {
    env: { WSP_GGML_FUZZ_CASES: String(cases), WSP_GGML_FUZZ_SEED: String(seed), WSP_GGML_FUZZ_CASE: "" },
    timeoutMs: Math.max(120_000, cases * 5),
    seed,
    replay: `WSP_GGML_FUZZ_SEED=${seed}`,
  });
  console.log(`gguf fuzz on ${runtimeName}: seed ${rep.seed}, ${rep.cases} cases in ${rep.ms} ms; outcomes ${JSON.stringify(rep.outcomes)}; ` +
    `RSS start ${mib(rep.rss.start)} MiB, after the first tenth ${mib(rep.rss.warm)} MiB, end ${mib(rep.rss.end)} MiB`);
  assert.equal(r.status, 0, describeChild(r));
  assert.equal(rep.cases, cases);
  assert.deepEqual(rep.failures, [], `cases that ended in an untyped error or a wrong result (replay: WSP_GGML_FUZZ_SEED=${seed} WSP_GGML_FUZZ_CASE=<case>)`);
  const total = Object.values(rep.outcomes).reduce((a, b) => a + b, 0);
  assert.equal(total, cases);
  // The mutations reach every outcome class: the fuzz is not stuck on one error.
  for (const cls of ["read:INVALID", "read:TRUNCATED", "read:DUPLICATE", "read:FORMAT", "valid,loaded"]) {
    assert.ok((rep.outcomes[cls] ?? 0) > 0, `no case ended in ${cls}`);
  }
  assert.ok(rep.rss.end - rep.rss.warm < RSS_BOUND, `RSS grew by ${mib(rep.rss.end - rep.rss.warm)} MiB after warm-up (bound ${mib(RSS_BOUND)} MiB)`);
});
