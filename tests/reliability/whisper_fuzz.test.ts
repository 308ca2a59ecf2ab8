// Whisper input fuzzing: a seeded, reproducible run of mutated model files (through
// scanWhisperModel, and WhisperModel.load where the scan accepts one) and mutated WAV files
// (through decodeWav16kMono) in a child process (whisper_fuzz_child.ts), so that a crash or a hang
// fails this test with the seed and the case instead of ending the runner. Every case must end in
// one of the allowed outcomes. tests/whisper/model_file.test.ts and wav.test.ts have the hand-made
// cases; this is the randomised breadth. Needs the converted Whisper base (tests/whisper/model.ts).
//
//   WSP_GGML_FUZZ_CASES=20000 WSP_GGML_FUZZ_SEED=7 node scripts/test.mjs --quick tests/reliability/whisper_fuzz.test.ts
//   replay one case:  WSP_GGML_FUZZ_CASE=123 WSP_GGML_FUZZ_DUMP=case.bin WSP_GGML_FUZZ_MODEL=MODEL.bin <runtime> tests/reliability/whisper_fuzz_child.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { whisperModel } from "../whisper/model.ts";
import { describeChild, envInt, mib, root, runFuzzChild, runtimeName } from "./lib.ts";

interface Report {
  seed: number;
  cases: number;
  wavCases: number;
  loads: number;
  modelMs: number;
  wavMs: number;
  slowest: { ms: number; label: string };
  outcomes: Record<string, number>;
  wavOutcomes: Record<string, number>;
  failures: { case: string; label: string; error: string }[];
  nFailures: number;
  rss: { start: number; end: number };
}

const MODEL_OUTCOMES = ["scan:INVALID", "scan:TRUNCATED", "scan:FORMAT", "scan:ok, load:ok", "scan:ok, load:FAILED", "scan:ok (load skipped)"];
const WAV_OUTCOMES = ["ok", "ok (non-finite samples)", "AudioError"];

const model = await whisperModel();
if (model.skip) console.warn(`skipping the Whisper fuzz: ${model.skip}`);

test("Whisper fuzz: every mutated model file and WAV file ends in a typed outcome; no crash or hang", { skip: model.skip }, () => {
  const cases = envInt("WSP_GGML_FUZZ_CASES", 2000);
  const wavs = envInt("WSP_GGML_FUZZ_WAVS", 2000);
  const loads = envInt("WSP_GGML_FUZZ_LOADS", 16);
  const seed = envInt("WSP_GGML_FUZZ_SEED", 1);
  const { rep, child } = runFuzzChild<Report>(join(root, "tests", "reliability", "whisper_fuzz_child.ts"), {
    env: { WSP_GGML_FUZZ_CASES: String(cases), WSP_GGML_FUZZ_WAVS: String(wavs), WSP_GGML_FUZZ_LOADS: String(loads), WSP_GGML_FUZZ_SEED: String(seed), WSP_GGML_FUZZ_CASE: "", WSP_GGML_FUZZ_MODEL: model.path },
    timeoutMs: Math.max(180_000, (cases + wavs) * 40 + loads * 5000),
    seed,
    replay: `WSP_GGML_FUZZ_SEED=${seed}`,
  });
  console.log(`whisper fuzz on ${runtimeName}: seed ${rep.seed}; ${rep.cases} model files in ${rep.modelMs} ms (${rep.loads} loaded) ${JSON.stringify(rep.outcomes)}; ` +
    `${rep.wavCases} WAV files in ${rep.wavMs} ms ${JSON.stringify(rep.wavOutcomes)}; slowest case ${rep.slowest.ms} ms (${rep.slowest.label}); ` +
    `RSS ${mib(rep.rss.start)} → ${mib(rep.rss.end)} MiB`);
  assert.equal(child.status, 0, describeChild(child));
  assert.deepEqual(rep.failures, [], `cases that ended in an untyped error or a wrong reason (replay: WSP_GGML_FUZZ_SEED=${seed} WSP_GGML_FUZZ_CASE=<case>)`);
  assert.equal(rep.cases, cases);
  assert.equal(rep.wavCases, wavs);
  for (const [outcomes, allowed, n] of [[rep.outcomes, MODEL_OUTCOMES, cases], [rep.wavOutcomes, WAV_OUTCOMES, wavs]] as const) {
    for (const k of Object.keys(outcomes)) assert.ok(allowed.includes(k), `outcome ${k} is not one of ${allowed.join(", ")}`);
    assert.equal(Object.values(outcomes).reduce((a, b) => a + b, 0), n);
  }
  // The mutations reach every class: the fuzz is not stuck on one error.
  for (const cls of ["scan:INVALID", "scan:TRUNCATED", "scan:FORMAT"]) assert.ok((rep.outcomes[cls] ?? 0) > 0, `no model case ended in ${cls}`);
  if (loads > 0) assert.ok((rep.outcomes["scan:ok, load:ok"] ?? 0) > 0, "no mutated model was accepted and loaded");
  for (const cls of ["ok", "AudioError"]) assert.ok((rep.wavOutcomes[cls] ?? 0) > 0, `no WAV case ended in ${cls}`);
});
