#!/usr/bin/env node
// The LLM peer: llama.cpp (node-llama-cpp 3.14.0's prebuilt CPU binary, llama.cpp b6673) on the
// GGUF (default Gemma 3 270M Q4_K_M; --model FILE), timed like llama-bench: pp128 and pp512 (a prompt of 128 / 512 tokens
// evaluated in one batch from an empty context, tokens/s) and tg128 (128 tokens generated one at
// a time from a one-token context, greedy, tokens/s), 2 threads, CPU only.
//
//   node bench/llm_peer.mjs [--model PATH] [--threads 2] [--reps 5] [--only pp128,pp512,tg128] [--id-range 200000]
//
// Prints one JSON line: {pp128, pp512, tg128, peakRssMiB, ...}: medians of `reps` samples after one
// warm-up each; peakRssMiB is the process's peak resident set (the model's mapped pages included).
// node-llama-cpp is installed (npm, install scripts off) into the git-ignored .cache/node-llama-cpp
// by tests/fixtures/llm/llama_cpp_fixture.mjs's command; this script installs it the same way
// when it is missing, and loads only the prebuilt binary (build "never", no download, gpu off).
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadLlamaCpp, VERSION } from "../tests/fixtures/llm/node_llama_cpp.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const modelPath = resolve(opt("--model", join(process.env.WSP_GGML_MODEL_CACHE || join(root, ".cache", "models", "gemma3-270m"), "gemma-3-270m-q4_k_m.gguf")));
const threads = Number(opt("--threads", "2"));
const reps = Number(opt("--reps", "5"));
const only = opt("--only", "pp128,pp512,tg128").split(",");

const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** How many ids above 1000 the prompts draw from (bench/llm_run.mjs gives one that fits the vocabulary). */
const ID_RANGE = Number(opt("--id-range", "200000"));

/** Deterministic ordinary token ids (32-bit LCG), away from the special ids at both ends of Gemma's vocabulary. */
function tokens(n, seed) {
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return 1000 + (x % ID_RANGE);
  });
}

async function main() {
  if (!existsSync(modelPath)) throw new Error(`no model at ${modelPath}`);
  const { llama, model } = await loadLlamaCpp(modelPath, { threads });
  const context = await model.createContext({ contextSize: 1024, batchSize: 512, threads, sequences: 1 });
  const sequence = context.getSequence();

  const pp = async (n) => {
    const samples = [];
    for (let r = 0; r <= reps; r++) {
      await sequence.clearHistory();
      const toks = tokens(n, r + 1);
      const t0 = process.hrtime.bigint();
      await sequence.evaluateWithoutGeneratingNewTokens(toks);
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      if (r > 0) samples.push(n / s); // r = 0 is the warm-up
    }
    return samples;
  };
  const tg = async (n) => {
    const samples = [];
    for (let r = 0; r <= reps; r++) {
      await sequence.clearHistory();
      // From an empty context: the first step decodes BOS, each later one the token sampled
      // before it (greedy), so n steps are n single-token decodes, as llama-bench's tg.
      const it = sequence.evaluate([model.tokens.bos], { temperature: 0, yieldEogToken: true });
      let count = 0;
      const t0 = process.hrtime.bigint();
      while (count < n && !(await it.next()).done) count++;
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      await it.return();
      if (r > 0) samples.push(count / s); // r = 0 is the warm-up
    }
    return samples;
  };

  const s128 = only.includes("pp128") ? await pp(128) : [];
  const s512 = only.includes("pp512") ? await pp(512) : [];
  const sTg = only.includes("tg128") ? await tg(128) : [];
  const out = {
    peer: `node-llama-cpp ${VERSION} (llama.cpp ${llama.llamaCppRelease?.release ?? "?"}, prebuilt CPU binary)`,
    threads,
    reps,
    pp128: round(median(s128)),
    pp512: round(median(s512)),
    tg128: round(median(sTg)),
    peakRssMiB: round(process.resourceUsage().maxRSS / 1024),
    samples: { pp128: s128.map(round), pp512: s512.map(round), tg128: sTg.map(round) },
    systemInfo: llama.systemInfo,
  };
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  console.log(JSON.stringify(out));
}

function round(x) {
  return Math.round(x * 10) / 10;
}

await main();
