/**
 * The binding's side of the speech-to-text benchmark (bench/whisper_run.mjs): loads the
 * whisper.cpp model once through `WhisperModel.load`, then transcribes each WAV `reps` times
 * with greedy decoding, language "en" and the given thread count, and prints one JSON line with
 * per-run times: `elapsedMs` (`Transcript.elapsedMs`: whisper.cpp's run alone, the native job
 * from start to finish) and `wallMs` (the whole `transcribe()` promise: option checks, the
 * parameter struct, the job, the 25 ms poll, reading the segments and tokens back).
 *
 *   deno run -A bench/whisper.ts | bun bench/whisper.ts | node --import tsx bench/whisper.ts
 *     --model FILE [--threads 1] [--reps 2] [--flash-attn 0|1] WAV...
 *
 * The samples come from `decodeWav16kMono` (16-bit PCM / 32768, as the C driver reads them),
 * outside the timed part.
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { systemInfo } from "../mod.ts";
import { decodeWav16kMono } from "../src/whisper/wav.ts";
import { WhisperModel, whisperSystemInfo } from "../src/whisper/whisper.ts";

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: { model: { type: "string" }, threads: { type: "string" }, reps: { type: "string" }, "flash-attn": { type: "string" } },
});
if (!values.model || positionals.length === 0) {
  console.error("usage: whisper.ts --model FILE [--threads N] [--reps N] [--flash-attn 0|1] WAV...");
  process.exit(2);
}
const threads = Number(values.threads ?? 1), reps = Number(values.reps ?? 2);
const flashAttn = (values["flash-attn"] ?? "0") !== "0";

const tLoad = performance.now();
using model = await WhisperModel.load(values.model, { useGpu: false, flashAttn });
const loadMs = performance.now() - tLoad;

const clips = [];
for (const file of positionals) {
  const pcm = decodeWav16kMono(file);
  const elapsedMs: number[] = [], wallMs: number[] = [];
  let text = "";
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    const t = await model.transcribe(pcm, { language: "en", threads, strategy: "greedy" });
    wallMs.push(performance.now() - t0);
    elapsedMs.push(t.elapsedMs);
    text = t.text;
  }
  clips.push({ file, seconds: pcm.length / 16000, elapsedMs, wallMs, text });
}
const info = systemInfo();
console.log(JSON.stringify({
  runtime: `${info.runtime.name} ${info.runtime.version}`,
  variant: info.cpuVariant.name,
  threads,
  flashAttn,
  loadMs,
  systemInfo: whisperSystemInfo(),
  clips,
}));
