/**
 * Text generation with Gemma 3 270M (Q4_K_M): fetches the model on first
 * use, streams the continuation of a prompt to stdout, and reports prompt
 * and generation speed on stderr.
 *
 *   deno run -A examples/llm/main.ts [options]
 *   bun examples/llm/main.ts [options]
 *   node --import tsx examples/llm/main.ts [options]
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { readGguf, systemInfo } from "../../mod.ts";
import { ensureModel, progressReporter } from "./fetch.ts";
import { generate, type GenerateStats } from "./generate.ts";
import { GemmaModel } from "./model.ts";
import { SAMPLER_DEFAULTS } from "./sampler.ts";
import { Tokenizer } from "./tokenizer.ts";
import { isProgram } from "../shared/program.ts";

/** The CLI's options. */
export interface CliOptions {
  readonly prompt: string;
  readonly n: number;
  readonly temp: number;
  readonly topK: number;
  readonly topP: number;
  readonly repeatPenalty: number;
  readonly seed: number;
  readonly threads: number;
  readonly ctx: number;
  readonly model: string | undefined;
  readonly json: boolean;
  readonly help: boolean;
}

/** The prompt used when none is given. */
export const DEFAULT_PROMPT = "The history of the printing press began";

const HELP = `usage: main.ts [options]

Continues a prompt with Gemma 3 270M (Q4_K_M, fetched on first use with pip into .cache/models/,
or $WSP_GGML_MODEL_CACHE). Text goes to stdout as it is generated, timings to stderr.

  --prompt TEXT        the prompt (default ${JSON.stringify(DEFAULT_PROMPT)})
  --n N                most tokens to generate (default 128)
  --temp X             temperature, 0 = greedy (default ${SAMPLER_DEFAULTS.temperature})
  --top-k N            keep the k most likely tokens, 0 = all (default ${SAMPLER_DEFAULTS.topK})
  --top-p X            nucleus sampling threshold (default ${SAMPLER_DEFAULTS.topP})
  --repeat-penalty X   penalty of the last ${SAMPLER_DEFAULTS.repeatWindow} tokens, 1 = off (default ${SAMPLER_DEFAULTS.repeatPenalty})
  --seed N             sampling seed (default 42)
  --threads N          CPU threads (default 2)
  --ctx N              KV cache positions (default 2048)
  --model FILE         a Gemma 3 GGUF instead of the fetched one
  --json               print token ids and timings as one JSON line instead of the text
  -h, --help           this text`;

/** Parses the CLI's arguments. */
export function parseOptions(argv: string[]): CliOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      prompt: { type: "string" }, n: { type: "string" }, temp: { type: "string" }, "top-k": { type: "string" }, "top-p": { type: "string" },
      "repeat-penalty": { type: "string" }, seed: { type: "string" }, threads: { type: "string" }, ctx: { type: "string" },
      model: { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
  });
  const num = (k: keyof typeof values, dflt: number, ok: (v: number) => boolean, what: string) => {
    const raw = values[k];
    const v = raw === undefined ? dflt : Number(raw);
    if (!ok(v)) throw new Error(`--${k} must be ${what}, got ${raw}`);
    return v;
  };
  const int = (min: number) => (v: number) => Number.isInteger(v) && v >= min;
  return {
    prompt: values.prompt ?? DEFAULT_PROMPT,
    n: num("n", 128, int(1), "an integer ≥ 1"),
    temp: num("temp", SAMPLER_DEFAULTS.temperature, (v) => v >= 0, "a number ≥ 0"),
    topK: num("top-k", SAMPLER_DEFAULTS.topK, int(0), "an integer ≥ 0"),
    topP: num("top-p", SAMPLER_DEFAULTS.topP, (v) => v > 0 && v <= 1, "in (0, 1]"),
    repeatPenalty: num("repeat-penalty", SAMPLER_DEFAULTS.repeatPenalty, (v) => v > 0, "a positive number"),
    seed: num("seed", 42, int(0), "an integer ≥ 0"),
    threads: num("threads", 2, int(1), "an integer ≥ 1"),
    ctx: num("ctx", 2048, int(16), "an integer ≥ 16"),
    model: values.model,
    json: values.json ?? false,
    help: values.help ?? false,
  };
}

/** Peak resident memory in bytes, where the runtime tells (else the current one). */
export function peakRss(): number {
  try {
    const kb = process.resourceUsage?.().maxRSS;
    if (kb) return kb * 1024;
  } catch { /* not every runtime has it */ }
  return process.memoryUsage().rss;
}

/** Runs the CLI; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  let o: CliOptions;
  try {
    o = parseOptions(argv);
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (o.help) {
    console.log(HELP);
    return 0;
  }
  const err = (s: string) => process.stderr.write(s + "\n");
  const t0 = performance.now();
  const path = o.model ?? await ensureModel({ onProgress: progressReporter() });
  const file = readGguf(path);
  const tokenizer = Tokenizer.fromGguf(file);
  using model = GemmaModel.fromGguf(file, { threads: o.threads, nCtx: o.ctx });
  const info = systemInfo();
  const hp = model.hparams;
  err(`wsp-ggml ${info.version} on ${info.runtime.name} ${info.runtime.version}, CPU variant ${info.cpuVariant.name}, ${o.threads} thread(s)`);
  err(`model: ${path} (${hp.nLayer} layers, ${hp.nEmbd} wide, ${hp.nVocab} tokens), loaded in ${((performance.now() - t0) / 1000).toFixed(2)} s`);

  const gen = generate(model, tokenizer, o.prompt, {
    maxTokens: o.n, temperature: o.temp, topK: o.topK, topP: o.topP, repeatPenalty: o.repeatPenalty, seed: o.seed,
  });
  const ids: number[] = [];
  let text = "";
  if (!o.json) process.stdout.write(o.prompt);
  for await (const piece of gen) {
    if (piece.id >= 0) ids.push(piece.id);
    text += piece.text;
    if (!o.json && piece.text) process.stdout.write(piece.text);
  }
  if (!o.json) process.stdout.write("\n");
  const s: GenerateStats = gen.stats;
  const rss = peakRss();
  const f = model.stats;
  err(`prompt: ${s.promptTokens} tokens in ${(s.promptMs / 1000).toFixed(2)} s (${s.promptTps.toFixed(1)} tokens/s)`);
  err(`generation: ${s.generatedTokens} tokens in ${(s.generateMs / 1000).toFixed(2)} s (${s.generateTps.toFixed(1)} tokens/s), stop: ${s.stop}`);
  err(`graphs built ${f.graphsBuilt} (${f.buildMs.toFixed(1)} ms), allocations ${f.allocs} (${f.allocMs.toFixed(1)} ms), inputs ${f.inputMs.toFixed(1)} ms, compute ${f.computeMs.toFixed(0)} ms, logits read ${f.outputMs.toFixed(1)} ms; peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
  if (o.json) {
    console.log(JSON.stringify({
      prompt: o.prompt, promptIds: gen.promptIds, ids, text, stop: s.stop,
      promptTokens: s.promptTokens, promptMs: s.promptMs, promptTps: s.promptTps,
      generatedTokens: s.generatedTokens, generateMs: s.generateMs, generateTps: s.generateTps,
      threads: o.threads, runtime: info.runtime, peakRssBytes: rss, forward: f,
    }));
  }
  return 0;
}

if (isProgram(import.meta)) {
  process.exitCode = await main(process.argv.slice(2));
}
