/**
 * Chat templates: a GGUF file's `tokenizer.chat_template` (a Jinja template,
 * as Hugging Face's tokenizers carry it) rendered with `@huggingface/jinja`,
 * the JavaScript Jinja that transformers.js uses — the way transformers'
 * `apply_chat_template` renders it in Python: `trim_blocks` and
 * `lstrip_blocks`, the conversation as `messages` (`role`, `content`),
 * `add_generation_prompt`, the special tokens' text as `bos_token` and
 * `eos_token`, `tools` and `documents` as `None` unless given,
 * `raise_exception(message)` (→ {@linkcode ChatTemplateRaiseError}) and
 * `strftime_now(format)`.
 *
 * ```ts
 * const template = ChatTemplate.fromGguf(readGguf(path));
 * const prompt = template.render([{ role: "user", content: "Hi!" }], { addGenerationPrompt: true });
 * ```
 *
 * @module
 */
import { Environment, Interpreter, Template } from "@huggingface/jinja";
import type { GgufFile } from "../mod.ts";

/** The GGUF key of the default chat template. */
export const CHAT_TEMPLATE_KEY = "tokenizer.chat_template";

/** One message of a conversation, as chat templates read it. */
export interface ChatMessage {
  /** Who says it: `"system"`, `"user"`, `"assistant"` (templates may know others, such as `"tool"`). */
  readonly role: string;
  /** What is said. */
  readonly content: string;
  /** Further fields some templates read (`tool_calls`, `name`, …). */
  readonly [field: string]: unknown;
}

/** A chat template that cannot be parsed or rendered: the message is the template engine's (or the template's own, {@linkcode ChatTemplateRaiseError}). */
export class ChatTemplateError extends Error {
  /** `"ChatTemplateError"` (or the subclass's name). */
  override name = "ChatTemplateError";
}

/** A model file without a chat template ({@linkcode CHAT_TEMPLATE_KEY}) when none was given. */
export class ChatTemplateMissingError extends ChatTemplateError {
  /** `"ChatTemplateMissingError"`. */
  override name = "ChatTemplateMissingError";
}

/** The template called `raise_exception(message)` (it refuses the conversation, e.g. roles out of order). */
export class ChatTemplateRaiseError extends ChatTemplateError {
  /** `"ChatTemplateRaiseError"`. */
  override name = "ChatTemplateRaiseError";
  /** The message the template gave. */
  readonly templateMessage: string;
  /**
   * Made by {@linkcode ChatTemplate.render} when the template raises.
   *
   * @param templateMessage the template's message
   */
  constructor(templateMessage: string) {
    super(`chat template: raise_exception: ${templateMessage}`);
    this.templateMessage = templateMessage;
  }
}

/** Options of {@linkcode ChatTemplate.render}. */
export interface RenderOptions {
  /** End with the opening of an assistant turn, for the model to write the reply (default false). */
  readonly addGenerationPrompt?: boolean;
  /** Tool definitions (JSON schemas) for templates that describe tools (default `None`). */
  readonly tools?: readonly unknown[];
  /** Documents for templates that take them (default `None`). */
  readonly documents?: readonly unknown[];
  /** Further variables, as `apply_chat_template`'s extra keyword arguments; they override the ones above. */
  readonly variables?: Readonly<Record<string, unknown>>;
}

/** The special tokens' text a template reads as `bos_token` and `eos_token`. */
export interface SpecialTokens {
  /** Text of the beginning-of-sequence token (`bos_token`). */
  readonly bosToken?: string;
  /** Text of the end-of-sequence token (`eos_token`). */
  readonly eosToken?: string;
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/** Python's `datetime.now().strftime(format)` in the C locale, for the common directives. */
export function strftime(date: Date, format: string): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  const dayOfYear = Math.floor((Date.UTC(date.getFullYear(), date.getMonth(), date.getDate()) - Date.UTC(date.getFullYear(), 0, 1)) / 86_400_000) + 1;
  return format.replace(/%([YymdbBaAHIMSpj%])/g, (_, d: string) => {
    switch (d) {
      case "Y": return String(date.getFullYear());
      case "y": return pad(date.getFullYear() % 100);
      case "m": return pad(date.getMonth() + 1);
      case "d": return pad(date.getDate());
      case "b": return MONTHS[date.getMonth()].slice(0, 3);
      case "B": return MONTHS[date.getMonth()];
      case "a": return DAYS[date.getDay()].slice(0, 3);
      case "A": return DAYS[date.getDay()];
      case "H": return pad(date.getHours());
      case "I": return pad(((date.getHours() + 11) % 12) + 1);
      case "M": return pad(date.getMinutes());
      case "S": return pad(date.getSeconds());
      case "p": return date.getHours() < 12 ? "AM" : "PM";
      case "j": return pad(dayOfYear, 3);
      default: return "%";
    }
  });
}

/** Python's `range(stop)`, `range(start, stop[, step])`. */
function range(a: number, b?: number, step = 1): number[] {
  const [start, stop] = b === undefined ? [0, a] : [a, b];
  if (step === 0) throw new ChatTemplateError("chat template: range() step must not be zero");
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

/** Raised inside the interpreter by `raise_exception`, to be told from the engine's own errors. */
class Raised extends Error {}

/** A parsed chat template. */
export class ChatTemplate {
  /** The template's Jinja source. */
  readonly source: string;
  /** The special tokens' text it is rendered with. */
  readonly specialTokens: SpecialTokens;
  readonly #template: Template;

  /**
   * Parses `source`.
   *
   * @param source the Jinja template
   * @param specialTokens the text of the special tokens (`bos_token`, `eos_token`)
   * @throws {ChatTemplateError} when it does not parse (the engine's message)
   */
  constructor(source: string, specialTokens: SpecialTokens = {}) {
    if (typeof source !== "string") throw new TypeError(`ChatTemplate: the template must be a string, got ${typeof source}`);
    this.source = source;
    this.specialTokens = { ...specialTokens };
    try {
      this.#template = new Template(source);
    } catch (e) {
      throw new ChatTemplateError(`chat template does not parse: ${(e as Error).message ?? e}`, { cause: e });
    }
  }

  /**
   * The template of a GGUF file (`tokenizer.chat_template`), or `override`
   * when given; `bos_token` and `eos_token` are the text of the file's
   * `tokenizer.ggml.bos_token_id` and `eos_token_id` tokens.
   *
   * @throws {ChatTemplateMissingError} when the file has none and no override is given
   * @throws {ChatTemplateError} when the template does not parse
   */
  static fromGguf(file: GgufFile, override?: string): ChatTemplate {
    const source = override ?? file.get(CHAT_TEMPLATE_KEY);
    if (typeof source !== "string") {
      throw new ChatTemplateMissingError(
        `this model file has no chat template (${CHAT_TEMPLATE_KEY}): pass a template (the ChatSession's template option, the CLI's --template FILE)`,
      );
    }
    return new ChatTemplate(source, ggufSpecialTokens(file));
  }

  /**
   * Renders `messages` as the model's prompt text.
   *
   * @throws {ChatTemplateRaiseError} when the template calls `raise_exception`
   * @throws {ChatTemplateError} when rendering fails (the engine's message)
   */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    const env = new Environment();
    const globals: Record<string, unknown> = {
      true: true, false: false, none: null, True: true, False: false, None: null,
      range,
      strftime_now: (format: string) => strftime(new Date(), format),
      raise_exception: (message: unknown) => {
        throw new Raised(String(message));
      },
      messages: messages.map((m) => ({ ...m })),
      add_generation_prompt: options.addGenerationPrompt ?? false,
      tools: options.tools ?? null,
      documents: options.documents ?? null,
      bos_token: this.specialTokens.bosToken ?? "",
      eos_token: this.specialTokens.eosToken ?? "",
      ...options.variables,
    };
    for (const [k, v] of Object.entries(globals)) env.set(k, v);
    try {
      const out = new Interpreter(env).run(this.#template.parsed).value;
      if (typeof out !== "string") throw new ChatTemplateError(`chat template rendered ${typeof out}, not text`);
      return out;
    } catch (e) {
      if (e instanceof Raised) throw new ChatTemplateRaiseError(e.message);
      if (e instanceof ChatTemplateError) throw e;
      throw new ChatTemplateError(`chat template failed to render: ${(e as Error).message ?? e}`, { cause: e });
    }
  }
}

/** The text of a GGUF file's BOS and EOS tokens (`tokenizer.ggml.tokens` at `bos_token_id` / `eos_token_id`), where it has them. */
export function ggufSpecialTokens(file: GgufFile): SpecialTokens {
  const tokens = file.get("tokenizer.ggml.tokens");
  const text = (key: string): string | undefined => {
    const id = file.get(key);
    if (!Array.isArray(tokens) || (typeof id !== "number" && typeof id !== "bigint")) return undefined;
    const t = tokens[Number(id)];
    return typeof t === "string" ? t : undefined;
  };
  return { bosToken: text("tokenizer.ggml.bos_token_id"), eosToken: text("tokenizer.ggml.eos_token_id") };
}
