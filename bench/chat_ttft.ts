/**
 * Time to first token of a chat turn with the KV cache reused (ChatSession: only the tokens
 * after the cached prefix are evaluated) against a cold start of the same conversation (an
 * empty cache: every token evaluated). Each rep: a fresh conversation of `turns` greedy turns
 * (replies of at most `reply` tokens), then one more turn timed warm (`ChatSession.send`, its
 * `ttftMs`: template + tokenize + prompt + first sampling step), and the same rendered
 * conversation timed cold (template + tokenize + `generate` from an empty cache to its first
 * token). One warm-up rep first; medians of `reps`.
 *
 *   node --import tsx bench/chat_ttft.ts | bun bench/chat_ttft.ts | deno run -A bench/chat_ttft.ts
 *     [--model FILE] [--threads 2] [--reps 5] [--turns 3] [--reply 48]
 *
 * Without --model: the catalog's chat model (SmolLM2 135M Instruct, fetched on first use).
 * Prints one JSON line; `ratio` is cold / warm.
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { readGguf, systemInfo } from "../mod.ts";
import { ChatSession, chatPrompt } from "../src/llm/chat.ts";
import { DEFAULT_CHAT_MODEL, ensureModel } from "../src/llm/fetch.ts";
import { generate } from "../src/llm/generate.ts";
import { LlmModel } from "../src/llm/model.ts";
import { Tokenizer } from "../src/llm/tokenizer.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { model: { type: "string" }, threads: { type: "string" }, reps: { type: "string" }, turns: { type: "string" }, reply: { type: "string" } },
});
const threads = Number(values.threads ?? 2), reps = Number(values.reps ?? 5), turns = Number(values.turns ?? 3), replyTokens = Number(values.reply ?? 48);
const QUESTIONS = [
  "What is the capital of France?",
  "Tell me one thing to see there.",
  "How would I get there from the airport?",
  "What should I eat nearby?",
  "Thanks! One more tip?",
  "Summarize our conversation in one line.",
];
if (turns + 1 > QUESTIONS.length) throw new RangeError(`--turns: at most ${QUESTIONS.length - 1}`);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

const path = values.model ?? await ensureModel({ model: DEFAULT_CHAT_MODEL });
const file = readGguf(path);
const tokenizer = Tokenizer.fromGguf(file);
using model = LlmModel.fromGguf(file, { threads, nCtx: 2048 });
const chat = new ChatSession(model, tokenizer, { temperature: 0, maxTokens: replyTokens });

const warm: number[] = [], cold: number[] = [];
let last = { conversationTokens: 0, promptTokens: 0, reusedTokens: 0 };
for (let rep = 0; rep <= reps; rep++) {
  chat.reset();
  for (const q of QUESTIONS.slice(0, turns)) for await (const _ of chat.send(q));
  // Warm: the session evaluates what the cache does not hold.
  const turn = chat.send(QUESTIONS[turns], { maxTokens: 1 });
  for await (const _ of turn);
  // Cold: the same conversation (history before this turn, and its question), from an empty cache.
  const messages = chat.messages.slice(0, -1);
  const t0 = performance.now();
  const { ids } = chatPrompt(tokenizer, chat.template, messages);
  const templateMs = performance.now() - t0;
  if (ids.join() !== turn.promptIds.join()) throw new Error("the cold prompt differs from the warm one");
  const gen = generate(model, tokenizer, ids, { temperature: 0, maxTokens: 1 });
  for await (const _ of gen);
  if (rep === 0) continue; // warm-up
  warm.push(turn.stats.ttftMs);
  cold.push(templateMs + gen.stats.firstTokenMs);
  last = { conversationTokens: turn.stats.conversationTokens, promptTokens: turn.stats.promptTokens, reusedTokens: turn.stats.reusedTokens };
}

const info = systemInfo();
const w = median(warm), c = median(cold);
console.log(JSON.stringify({
  bench: "chat_ttft",
  runtime: `${info.runtime.name} ${info.runtime.version}`,
  cpuVariant: info.cpuVariant.name,
  threads,
  model: path.split(/[\\/]/).pop(),
  turnsBefore: turns,
  ...last,
  warmTtftMs: round(w),
  coldTtftMs: round(c),
  ratio: Math.round((c / w) * 100) / 100,
  warmSamplesMs: warm.map(round),
  coldSamplesMs: cold.map(round),
}));
