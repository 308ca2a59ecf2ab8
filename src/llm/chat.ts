/**
 * Chat: a conversation with an instruct model through its chat template
 * ({@linkcode ChatTemplate}), that keeps the model's KV cache across turns.
 *
 * Each turn renders the whole conversation (the new user message and the
 * opening of the assistant's reply included), tokenizes it with special
 * tokens parsed (`<|im_start|>` and the like become their tokens; so does
 * such text inside a message), and hands it to {@linkcode generate} with the
 * token ids the cache holds (`cachedIds`): the cache keeps their longest
 * common prefix and only the rest is evaluated. The template renders an
 * earlier reply as text, which may tokenize differently from the tokens the
 * model generated; the common prefix then ends where they differ, and the
 * turn re-evaluates from there — correct either way, only less reused.
 *
 * ```ts
 * const chat = new ChatSession(model, tokenizer, { system: "You are terse.", temperature: 0 });
 * for await (const piece of chat.send("Hi!")) process.stdout.write(piece.text);
 * ```
 *
 * @module
 */
import { ChatTemplate, type ChatMessage, type RenderOptions } from "./chat_template.ts";
import { generate, type GenerateStats, type Piece, type TokenizerLike } from "./generate.ts";
import type { LlmModel } from "./model.ts";
import type { SamplerOptions } from "./sampler.ts";

/** What a chat needs of a tokenizer (the `Tokenizer` class provides it). */
export interface ChatTokenizer extends TokenizerLike {
  /** Whether the model's prompts start with BOS (`tokenizer.ggml.add_bos_token`). */
  readonly addBos: boolean;
  /** Whether they end with EOS (`tokenizer.ggml.add_eos_token`). */
  readonly addEos: boolean;
  /** Token ids of `text`; `parseSpecial` turns the text of control tokens into those tokens. */
  encode(text: string, opts?: { addBos?: boolean; addEos?: boolean; parseSpecial?: boolean }): number[];
}

/** A message of a {@linkcode ChatSession}'s conversation. */
export interface ChatSessionMessage extends ChatMessage {
  /** `"system"`, `"user"` or `"assistant"`. */
  readonly role: "system" | "user" | "assistant";
}

/** Options of a turn ({@linkcode ChatSession.send}); they override the session's. */
export interface SendOptions extends SamplerOptions {
  /** Most tokens of the reply (default: the session's, 512). */
  readonly maxTokens?: number;
  /** PRNG seed (default: the session's, 42). */
  readonly seed?: number;
  /** Stops the reply between tokens: the turn's iterator throws the signal's reason, and the partial reply stays in the history. */
  readonly signal?: AbortSignal;
}

/** Options of {@linkcode ChatSession}. */
export interface ChatOptions extends Omit<SendOptions, "signal"> {
  /** The system message that opens the conversation (default none: the template's default, where it has one). */
  readonly system?: string;
  /**
   * The chat template: a {@linkcode ChatTemplate}, or Jinja source (`bos_token` and `eos_token`
   * from the model's file). Default: the model file's `tokenizer.chat_template`.
   */
  readonly template?: ChatTemplate | string;
}

/** Timings and token counts of one turn (a {@linkcode GenerateStats} with the template's part). */
export interface ChatTurnStats extends GenerateStats {
  /** Tokens of the rendered conversation: {@linkcode GenerateStats.promptTokens} evaluated + {@linkcode GenerateStats.reusedTokens} kept from the cache. */
  readonly conversationTokens: number;
  /** Milliseconds to render the template and tokenize it. */
  readonly templateMs: number;
  /** Time to first token, in milliseconds: the template, the prompt's forward passes and the first sampling step. */
  readonly ttftMs: number;
}

/** One turn of a chat: iterate it for the reply's pieces (the stopping token is not among them). */
export interface ChatTurn extends AsyncIterableIterator<Piece> {
  /** Its timings, filled in as it runs. */
  readonly stats: ChatTurnStats;
  /** The rendered conversation the reply continues. */
  readonly prompt: string;
  /** Its token ids. */
  readonly promptIds: readonly number[];
}

/**
 * Text and token ids of a conversation rendered with `template` (by default
 * for the model to reply: `add_generation_prompt`), as llama.cpp b6673's chat
 * (`common_chat_templates_apply`, then `llama_tokenize` with special tokens
 * added and parsed) makes them: where the model adds BOS itself and the
 * rendered text starts with the BOS text, that text is dropped and BOS added
 * once (likewise EOS at the end), so a template that writes `bos_token` and
 * one that does not both give one BOS.
 *
 * @throws {ChatTemplateError} when the template fails
 */
export function chatPrompt(
  tokenizer: ChatTokenizer,
  template: ChatTemplate,
  messages: readonly ChatMessage[],
  options: RenderOptions = {},
): { text: string; ids: number[] } {
  let text = template.render(messages, { ...options, addGenerationPrompt: options.addGenerationPrompt ?? true });
  const { bosToken, eosToken } = template.specialTokens;
  if (tokenizer.addBos && bosToken && text.startsWith(bosToken)) text = text.slice(bosToken.length);
  if (tokenizer.addEos && eosToken && text.endsWith(eosToken)) text = text.slice(0, -eosToken.length);
  return { text, ids: tokenizer.encode(text, { parseSpecial: true }) };
}

/**
 * A conversation with a model: the history of messages, and the token ids
 * the model's KV cache holds, so that each turn evaluates only what is new.
 * It assumes it is the only user of the model's cache (another `generate`
 * on the same model needs a {@linkcode reset} after it).
 *
 * Stopping a reply (the turn's `signal`, or leaving its loop early) keeps
 * the partial reply in the history as the assistant's message (what was
 * shown, possibly empty) and its tokens in the cache, so the next turn goes
 * on from there. Any other failure drops the turn's user message and
 * forgets the cache.
 */
export class ChatSession {
  /** The model. */
  readonly model: LlmModel;
  /** Its tokenizer. */
  readonly tokenizer: ChatTokenizer;
  /** The chat template. */
  readonly template: ChatTemplate;
  /** The system message, if any. */
  readonly system: string | undefined;
  readonly #options: ChatOptions;
  #messages: ChatSessionMessage[] = [];
  /** Token ids in the model's cache, as this session left it. */
  #cached: number[] = [];
  /** Bumped whenever the history changes: a turn made before a change is stale. */
  #version = 0;
  #busy = false;
  #last: ChatTurnStats | undefined;

  /**
   * A new conversation. Its first turn evaluates the whole prompt (whatever the model's cache held is overwritten).
   *
   * @throws {ChatTemplateMissingError} without `template` when the model's file has none
   * @throws {ChatTemplateError} when the template does not parse
   */
  constructor(model: LlmModel, tokenizer: ChatTokenizer, options: ChatOptions = {}) {
    this.model = model;
    this.tokenizer = tokenizer;
    this.#options = options;
    this.template = options.template instanceof ChatTemplate ? options.template : ChatTemplate.fromGguf(model.file, options.template);
    this.system = options.system;
    this.#clear();
  }

  /** The conversation so far (the system message first, if any), a copy. */
  get messages(): ChatSessionMessage[] {
    return this.#messages.map((m) => ({ ...m }));
  }

  /** The same as {@linkcode messages}: the conversation so far. */
  get history(): ChatSessionMessage[] {
    return this.messages;
  }

  /** The token ids the model's KV cache holds for this conversation (what the next turn can reuse). */
  get cachedTokens(): readonly number[] {
    return this.#cached;
  }

  /** The last turn's stats (undefined before the first turn). */
  get lastStats(): ChatTurnStats | undefined {
    return this.#last;
  }

  /** Whether a turn is running. */
  get busy(): boolean {
    return this.#busy;
  }

  /**
   * Starts over: only the system message stays, and the model's cache is
   * forgotten.
   *
   * @throws {Error} while a turn runs
   */
  reset(): void {
    if (this.#busy) throw new Error("ChatSession.reset: a reply is in progress");
    this.#clear();
    if (!this.model.freed) this.model.reset();
  }

  #clear(): void {
    this.#messages = this.system === undefined ? [] : [{ role: "system", content: this.system }];
    this.#cached = [];
    this.#version++;
  }

  /**
   * Adds `text` as the user's message and streams the model's reply. The
   * conversation is rendered and tokenized now (template errors throw here);
   * the user message joins the history, and the reply is generated, when the
   * turn is first iterated. The reply joins the history when it ends, stops
   * on an end-of-generation token (not yielded), reaches `maxTokens` or the
   * context's end, or is stopped (see the class).
   *
   * @throws {ChatTemplateError} when the template fails
   * @throws {RangeError} when the conversation does not fit the model's context
   * @throws {Error} while another turn runs; the turn's iterator throws when the conversation changed since `send`
   */
  send(text: string, options: SendOptions = {}): ChatTurn {
    if (this.#busy) throw new Error("ChatSession.send: a reply is in progress");
    const user: ChatSessionMessage = { role: "user", content: String(text) };
    const t0 = performance.now();
    const { text: prompt, ids } = chatPrompt(this.tokenizer, this.template, [...this.#messages, user]);
    const templateMs = performance.now() - t0;
    if (ids.length >= this.model.nCtx) {
      throw new RangeError(`ChatSession.send: the conversation is ${ids.length} tokens, the model's context holds ${this.model.nCtx}: reset() it, or load the model with a larger nCtx`);
    }
    const o = { ...this.#options, ...options };
    const gen = generate(this.model, this.tokenizer, ids, {
      temperature: o.temperature, topK: o.topK, topP: o.topP, repeatPenalty: o.repeatPenalty, repeatWindow: o.repeatWindow,
      maxTokens: o.maxTokens ?? 512, seed: o.seed, signal: options.signal, cachedIds: this.#cached,
    });
    const stats = Object.defineProperties(gen.stats, {
      conversationTokens: { value: ids.length, enumerable: true },
      templateMs: { value: templateMs, enumerable: true },
      ttftMs: { get: () => templateMs + gen.stats.firstTokenMs, enumerable: true },
    }) as ChatTurnStats;
    const version = this.#version;
    const run = async function* (this: ChatSession): AsyncGenerator<Piece> {
      if (this.#busy || this.#version !== version) throw new Error("ChatSession: the conversation changed since send() made this turn");
      this.#busy = true;
      this.#messages.push(user);
      this.#version++;
      const out: number[] = [];
      let reply = "";
      let failed = false;
      try {
        for await (const piece of gen) {
          if (piece.id >= 0) out.push(piece.id);
          reply += piece.text;
          yield piece;
        }
      } catch (e) {
        failed = !options.signal?.aborted;
        throw e;
      } finally {
        if (failed) {
          this.#messages.pop();
          this.#cached = [];
        } else {
          this.#messages.push({ role: "assistant", content: reply });
          // The cache holds the prompt and the tokens fed back: every yielded one but, at the end, the last.
          this.#cached = [...ids, ...out].slice(0, this.model.nPast);
        }
        this.#last = stats;
        this.#version++;
        this.#busy = false;
      }
    }.call(this);
    return Object.assign(run, { stats, prompt, promptIds: ids }) as ChatTurn;
  }
}
