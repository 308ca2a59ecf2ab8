/**
 * The LLM runner (src/llm/, any model of the catalog or a file) timed as bench/llm_peer.mjs times llama.cpp, so the
 * two print comparable figures: pp128 and pp512 (a prompt of 128 / 512 tokens from an empty KV
 * cache, tokens/s), tg128 (128 greedy single-token decodes from BOS, tokens/s), medians of
 * `reps` samples after one warm-up each, the same LCG token ids, the same thread count.
 * Beside each figure, where the time went (graph builds, scheduler allocations, inputs,
 * compute, logits read, arg-max), from the model's own counters.
 *
 * gen128: the public path, `generate(model, tokenizer, [BOS], { maxTokens: 128, temperature: 0 })`
 * (greedy sampling, the async iterator, its yield to the event loop between tokens), the wall
 * time of the whole iteration: one prompt decode of BOS and 127 one-token decodes, as tg128.
 * It stops early only on EOS / <end_of_turn> (the JSON says how many tokens and why).
 *
 *   deno run -A bench/llm.ts | bun bench/llm.ts | node --import tsx bench/llm.ts
 *     [--model FILE] [--threads 2] [--reps 5] [--only pp128,pp512,tg128,gen128] [--id-range 200000]
 *
 * Prints one JSON line. bench/llm_run.mjs runs it on every runtime, interleaved with the peer.
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { readGguf, systemInfo } from "../mod.ts";
import { ensureModel } from "../src/llm/fetch.ts";
import { generate, peakRss } from "../src/llm/generate.ts";
import { type ForwardStats, LlmModel } from "../src/llm/model.ts";
import { argmax } from "../src/llm/sampler.ts";
import { Tokenizer } from "../src/llm/tokenizer.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { model: { type: "string" }, threads: { type: "string" }, reps: { type: "string" }, only: { type: "string" }, "id-range": { type: "string" } },
});
const threads = Number(values.threads ?? 2), reps = Number(values.reps ?? 5);
const only = (values.only ?? "pp128,pp512,tg128,gen128").split(",");

/** How many ids above 1000 the prompts draw from (bench/llm_run.mjs gives one that fits the vocabulary). */
const ID_RANGE = Number(values["id-range"] ?? 200000);

/** Deterministic ordinary token ids (32-bit LCG): bench/llm_peer.mjs's `tokens`. */
function tokens(n: number, seed: number): number[] {
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return 1000 + (x % ID_RANGE);
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

const path = values.model ?? await ensureModel();
const file = readGguf(path);
using model = LlmModel.fromGguf(file, { threads, nCtx: 1024 });
if (1000 + ID_RANGE > model.hparams.nVocab) throw new RangeError(`--id-range ${ID_RANGE}: ids up to ${1000 + ID_RANGE} exceed the vocabulary of ${model.hparams.nVocab}`);
const bos = Number(file.get("tokenizer.ggml.bos_token_id") ?? 2);
const fresh = (): ForwardStats => ({ graphsBuilt: 0, buildMs: 0, allocs: 0, allocMs: 0, inputMs: 0, computeMs: 0, outputMs: 0, computes: 0 });

/** Tokens/s of each sample after the warm-up, and the counters of the last sample per token. */
function time(n: number, run: (r: number) => number): { samples: number[]; perToken: Record<string, number> } {
  const samples: number[] = [];
  let perToken: Record<string, number> = {};
  for (let r = 0; r <= reps; r++) {
    model.reset();
    model.stats = fresh();
    const t0 = performance.now();
    const extraMs = run(r);
    const s = (performance.now() - t0) / 1000;
    if (r > 0) samples.push(n / s);
    const st = model.stats;
    perToken = {
      totalMs: (s * 1000) / n, computeMs: st.computeMs / n, buildMs: st.buildMs / n, allocMs: st.allocMs / n,
      inputMs: st.inputMs / n, outputMs: st.outputMs / n, argmaxMs: extraMs / n, graphsBuilt: st.graphsBuilt, allocs: st.allocs,
    };
  }
  return { samples, perToken: Object.fromEntries(Object.entries(perToken).map(([k, v]) => [k, Math.round(v * 1000) / 1000])) };
}

const pp = (n: number) => time(n, (r) => (model.forward(tokens(n, r + 1)), 0));
const tg = (n: number) =>
  time(n, () => {
    let id = bos, argmaxMs = 0;
    const out = new Float32Array(model.hparams.nVocab); // as generate() decodes: one logits array for every step
    for (let i = 0; i < n; i++) {
      const logits = model.forward([id], { out });
      const t = performance.now();
      id = argmax(logits);
      argmaxMs += performance.now() - t;
    }
    return argmaxMs;
  });

/** generate()'s own path, greedy: tokens/s over the wall time of the whole iteration. */
async function gen(n: number): Promise<{ samples: number[]; perToken: Record<string, number>; stop: string; tokens: number }> {
  const tokenizer = Tokenizer.fromGguf(file);
  const samples: number[] = [];
  let stop = "", count = 0, perToken: Record<string, number> = {};
  for (let r = 0; r <= reps; r++) {
    model.stats = fresh();
    const g = generate(model, tokenizer, [bos], { maxTokens: n, temperature: 0 });
    const t0 = performance.now();
    for await (const _piece of g) { /* the pieces are the public path's work; only the time counts */ }
    const s = (performance.now() - t0) / 1000;
    if (r > 0) samples.push(g.stats.generatedTokens / s);
    stop = g.stats.stop;
    count = g.stats.generatedTokens;
    const st = model.stats;
    perToken = { totalMs: (s * 1000) / count, computeMs: st.computeMs / count, buildMs: st.buildMs / count, allocMs: st.allocMs / count, inputMs: st.inputMs / count, outputMs: st.outputMs / count, argmaxMs: 0, graphsBuilt: st.graphsBuilt, allocs: st.allocs };
  }
  return { samples, stop, tokens: count, perToken: Object.fromEntries(Object.entries(perToken).map(([k, v]) => [k, Math.round(v * 1000) / 1000])) };
}

const results: Record<string, { samples: number[]; perToken: Record<string, number> }> = {};
if (only.includes("pp128")) results.pp128 = pp(128);
if (only.includes("pp512")) results.pp512 = pp(512);
if (only.includes("tg128")) results.tg128 = tg(128);
let genInfo: { stop: string; tokens: number } | undefined;
if (only.includes("gen128")) {
  const g = await gen(128);
  results.gen128 = g;
  genInfo = { stop: g.stop, tokens: g.tokens };
}
const info = systemInfo();
console.log(JSON.stringify({
  runtime: `${info.runtime.name} ${info.runtime.version}`,
  variant: info.cpuVariant.name,
  threads,
  reps,
  ...Object.fromEntries(Object.entries(results).map(([k, v]) => [k, round(median(v.samples))])),
  peakRssMiB: round(peakRss() / 2 ** 20),
  gen128Info: genInfo,
  samples: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.samples.map(round)])),
  perToken: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.perToken])),
}));
