/**
 * Text generation: the prompt through the model in batches, then one token
 * per step, sampled, streamed as text pieces, until EOS / `<end_of_turn>`,
 * the token budget, or an `AbortSignal`.
 *
 * @module
 */
import process from "node:process";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { GemmaModel } from "./model.ts";
import { createRng, sample, type SamplerOptions } from "./sampler.ts";

/** What generation needs of a tokenizer (the `Tokenizer` class provides it). */
export interface TokenizerLike {
  /** Beginning-of-sequence id. */
  readonly bos: number;
  /** End-of-sequence id (generation stops on it). */
  readonly eos: number;
  /** Tokens in the vocabulary. */
  readonly vocabSize: number;
  /** Token ids of `text`, BOS first when `addBos`. */
  encode(text: string, opts?: { addBos?: boolean }): number[];
  /** Streaming decode, UTF-8 safe when a character spans tokens. */
  decoder(): { push(id: number): string; flush(): string };
  /** Whether `id` is a control token (`<end_of_turn>`, `<eos>`, …). */
  isControl(id: number): boolean;
  /** Whether `id` ends generation (EOS, end of turn, `<|im_end|>`, …); when present, generation also stops on these. */
  isEog?(id: number): boolean;
}

/** Gemma's end-of-turn token (a control token in its vocabulary). */
export const END_OF_TURN_ID = 106;

/** Options of {@linkcode generate}. */
export interface GenerateOptions extends SamplerOptions {
  /** Most tokens to generate (default 128). */
  readonly maxTokens?: number;
  /** PRNG seed (default 42). */
  readonly seed?: number;
  /** Stops generation (the iterator throws the signal's reason). */
  readonly signal?: AbortSignal;
  /** Further token ids that end generation (EOS and `<end_of_turn>` always do). */
  readonly stopIds?: readonly number[];
  /** Keep the KV cache from earlier calls instead of starting at position 0 (default false): the prompt continues it. */
  readonly keepCache?: boolean;
  /**
   * Prefix reuse: the token ids the model's KV cache holds now (from earlier
   * calls). The prompt is then the whole sequence; the cache keeps its
   * longest common prefix with them ({@linkcode commonPrefixLength}, at most
   * the prompt's length − 1, so that at least one token is evaluated and
   * gives logits) and only the rest is evaluated. Overrides `keepCache`.
   */
  readonly cachedIds?: readonly number[];
  /** Add BOS when the prompt is text (default true). */
  readonly addBos?: boolean;
}

/**
 * One generated token and the text it completes (possibly "" while a
 * character spans tokens). A last piece with id -1 carries what the decoder
 * held back at the end (an incomplete character).
 */
export interface Piece {
  /** The token id (-1 for the held-back rest at the end). */
  readonly id: number;
  /** The text it completes. */
  readonly text: string;
}

/** Timings of a generation, filled in as it runs. */
export interface GenerateStats {
  /** Prompt tokens evaluated (the prompt's length, less {@linkcode reusedTokens}). */
  promptTokens: number;
  /** Prompt tokens whose KV-cache rows were kept from an earlier call (`cachedIds`), not evaluated. */
  reusedTokens: number;
  /** Milliseconds from the start to the first sampled token: the prompt's forward passes and one sampling step (time to first token). */
  firstTokenMs: number;
  /** Milliseconds for the prompt (its forward passes). */
  promptMs: number;
  /** Tokens generated (the stopping token included). */
  generatedTokens: number;
  /** Milliseconds of sampling and forward passes for the generated tokens. */
  generateMs: number;
  /** Why it ended: "eos", "length", "abort", or "" while running. */
  stop: "" | "eos" | "length" | "abort";
  /** Prompt tokens per second. */
  readonly promptTps: number;
  /** Generated tokens per second. */
  readonly generateTps: number;
}

function newStats(): GenerateStats {
  return {
    promptTokens: 0, reusedTokens: 0, firstTokenMs: 0, promptMs: 0, generatedTokens: 0, generateMs: 0, stop: "",
    get promptTps() {
      return this.promptMs > 0 ? (1000 * this.promptTokens) / this.promptMs : 0;
    },
    get generateTps() {
      return this.generateMs > 0 ? (1000 * this.generatedTokens) / this.generateMs : 0;
    },
  };
}

/** A running generation: iterate it for the pieces; {@linkcode stats} holds the timings. */
export interface Generation extends AsyncIterableIterator<Piece> {
  /** Its timings, filled in as it runs. */
  readonly stats: GenerateStats;
  /** The prompt's token ids (the whole prompt, reused prefix included). */
  readonly promptIds: readonly number[];
}

/** Length of the longest common prefix of two token sequences. */
export function commonPrefixLength(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Generates from `prompt` (text, or token ids used as they are). The first
 * logits come from the whole prompt (or, with `cachedIds`, from the part of
 * it the KV cache does not hold yet); each generated token is then fed back
 * one at a time. Generation stops on EOS, on `<end_of_turn>`, on
 * `stopIds` and on what the tokenizer's `isEog` names; the stopping token is
 * not yielded and not fed back, so the cache then holds the prompt and the
 * tokens yielded before it. Between tokens it yields to the event loop, so a timer or
 * an I/O callback can abort it.
 */
export function generate(model: GemmaModel, tokenizer: TokenizerLike, prompt: string | readonly number[], options: GenerateOptions = {}): Generation {
  const ids = typeof prompt === "string" ? tokenizer.encode(prompt, { addBos: options.addBos ?? true }) : [...prompt];
  if (ids.length === 0) throw new RangeError("generate: empty prompt");
  const stats = newStats();
  const stop = new Set<number>([tokenizer.eos, ...(options.stopIds ?? [])]);
  // <end_of_turn> ends a turn in Gemma's chat format: stop on it when the vocabulary has it as a control token.
  if (END_OF_TURN_ID < tokenizer.vocabSize && tokenizer.isControl(END_OF_TURN_ID)) stop.add(END_OF_TURN_ID);
  const max = options.maxTokens ?? 128;
  const rng = createRng(options.seed ?? 42);
  const signal = options.signal;

  async function* run(): AsyncGenerator<Piece> {
    const history = [...ids];
    const decoder = tokenizer.decoder();
    try {
      signal?.throwIfAborted();
      let reuse = 0;
      if (options.cachedIds) {
        reuse = Math.min(commonPrefixLength(options.cachedIds, ids), ids.length - 1, model.nPast);
        model.truncate(reuse);
      } else if (!options.keepCache) model.reset();
      const t0 = performance.now();
      let logits = model.forward(reuse > 0 ? ids.slice(reuse) : ids);
      // Every decode step writes its logits here (the sampler reads them before the next step).
      const step = new Float32Array(logits.length);
      stats.promptTokens = ids.length - reuse;
      stats.reusedTokens = reuse;
      stats.promptMs = performance.now() - t0;
      // Generation time counts sampling and forward passes, not the time the consumer holds a piece.
      for (let n = 0; n < max; n++) {
        let t = performance.now();
        const id = sample(logits, history, options, rng);
        history.push(id);
        stats.generatedTokens = n + 1;
        if (n === 0) stats.firstTokenMs = performance.now() - t0;
        if (stop.has(id) || tokenizer.isEog?.(id)) {
          stats.stop = "eos";
          stats.generateMs += performance.now() - t;
          const rest = decoder.flush();
          if (rest) yield { id: -1, text: rest };
          return;
        }
        const text = decoder.push(id);
        stats.generateMs += performance.now() - t;
        yield { id, text };
        await yieldToEventLoop();
        signal?.throwIfAborted();
        if (n + 1 < max) {
          if (model.nPast >= model.nCtx) break;
          t = performance.now();
          logits = model.forward([id], { out: step });
          stats.generateMs += performance.now() - t;
        }
      }
      stats.stop = "length";
      const rest = decoder.flush();
      if (rest) yield { id: -1, text: rest };
    } catch (e) {
      if (signal?.aborted) stats.stop = "abort";
      throw e;
    }
  }

  const it = run();
  return Object.assign(it, { stats, promptIds: ids }) as Generation;
}

/** Peak resident memory of this process in bytes, where the runtime tells (else the current resident size). */
export function peakRss(): number {
  try {
    const kb = process.resourceUsage?.().maxRSS;
    if (kb) return kb * 1024;
  } catch { /* not every runtime has it */ }
  return process.memoryUsage().rss;
}
