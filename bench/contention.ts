/**
 * One side of the contention benchmark (bench/contention.mjs): Gemma 3 270M generating
 * greedily through the public `generate()` with the thread count left to the package's policy
 * (or `--threads N`), timed from the first generated token to the last.
 *
 *   deno run -A bench/contention.ts | bun bench/contention.ts | node --import tsx bench/contention.ts
 *     [--model FILE] [--threads N] [--poll 0..100] [--tokens 48] [--seconds 20]
 *
 * Stops after `--seconds` of decoding even before `--tokens` (a collapsed side runs at
 * well under a token a second).
 *
 * Prints one JSON line: tokens/s, the threads the model took, the runtime.
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { readGguf, systemInfo } from "../mod.ts";
import { ensureModel } from "../src/llm/fetch.ts";
import { generate } from "../src/llm/generate.ts";
import { GemmaModel } from "../src/llm/model.ts";
import { Tokenizer } from "../src/llm/tokenizer.ts";

const { values } = parseArgs({ args: process.argv.slice(2), options: { model: { type: "string" }, threads: { type: "string" }, poll: { type: "string" }, tokens: { type: "string" }, seconds: { type: "string" } } });
const n = Number(values.tokens ?? 48), limitMs = Number(values.seconds ?? 20) * 1000;
const file = readGguf(values.model ?? await ensureModel());
const tokenizer = Tokenizer.fromGguf(file);
using model = GemmaModel.fromGguf(file, {
  threads: values.threads === undefined ? undefined : Number(values.threads),
  poll: values.poll === undefined ? undefined : Number(values.poll),
  nCtx: 256,
});
// No stop token (an eos no id has, no control tokens), so that every run decodes n + 1 tokens.
const endless = {
  bos: tokenizer.bos, eos: -1, vocabSize: tokenizer.vocabSize,
  encode: (t: string, o?: { addBos?: boolean }) => tokenizer.encode(t, o),
  decoder: () => tokenizer.decoder(),
  isControl: () => false,
};
let first = 0, count = 0;
for await (const piece of generate(model, endless, "The history of the city of Rome", { temperature: 0, maxTokens: n + 1 })) {
  if (piece.id < 0) continue;
  if (count++ === 0) first = performance.now();
  else if (performance.now() - first > limitMs) break;
}
const tps = (count - 1) / ((performance.now() - first) / 1000);
console.log(JSON.stringify({ runtime: systemInfo().runtime.name, threads: model.threads, tokens: count, tps: Math.round(tps * 10) / 10 }));
