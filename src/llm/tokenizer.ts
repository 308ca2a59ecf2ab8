/**
 * The tokenizer of a GGUF file's `tokenizer.ggml.*` metadata, reimplemented
 * from the behaviour of llama.cpp's `llama-vocab.cpp` (release b6673) and
 * checked token for token against it (`tests/llm_tokenizer.test.ts`,
 * `tests/llm_bpe.test.ts`; the fixtures come from llama.cpp itself). Two
 * models:
 *
 * - **SPM** (`tokenizer.ggml.model == "llama"`: Gemma 3, Llama 2, …):
 *   SentencePiece-style merges by score, `▁` for spaces, `<0xNN>` byte
 *   fallback.
 * - **BPE** (`"gpt2"`: Qwen 2.5, SmolLM2, Llama 3, …): byte-level BPE by
 *   merge rank (`./bpe.ts`) over the words of a pre-tokenizer chosen by
 *   `tokenizer.ggml.pre` (`./pretokenize.ts`).
 *
 * Encoding, as llama.cpp does it:
 *
 * 1. **Special-token split.** The text is cut around every occurrence of a
 *    user-defined token (type 4: for Gemma `\n`, runs of spaces, HTML tags;
 *    for Qwen `<tool_call>`), longest first; with `parseSpecial` also around
 *    control and unknown tokens (types 3 and 2: `<start_of_turn>`,
 *    `<|im_start|>`, …). User-defined tokens are split out even without
 *    `parseSpecial`: that is llama.cpp's (and Hugging Face's) rule.
 * 2. **The model on each remaining piece of text.** SPM: a space prefix when
 *    the file asks for one (`add_space_prefix`), spaces to `▁`, merge the
 *    adjacent pair of highest score until none is a piece, bytes for what is
 *    left. BPE: pre-tokenize into words, then merge each word by rank.
 * 3. BOS first and EOS last when asked (`addBos` / `addEos`, defaults: the
 *    file's `add_bos_token` / `add_eos_token`, else llama.cpp's default for
 *    the model and pre-tokenizer).
 *
 * Token types are llama.cpp's *effective* ones: it makes the end-of-turn,
 * end-of-generation and fill-in-the-middle tokens it recognises by their
 * text control tokens (so they split only with `parseSpecial`), and a few
 * gpt-oss tokens user-defined.
 *
 * @module
 */
import { type GgufFile, GgufType, readGguf } from "../mod.ts";
import { BytePairEncoder, byteDecode, mergeSymbols } from "./bpe.ts";
import { type PreTokenizer, preTokenizer, SUPPORTED_PRES, UnsupportedPreTokenizerError } from "./pretokenize.ts";

export { SUPPORTED_PRES, UnsupportedPreTokenizerError };

/** Token types of `tokenizer.ggml.token_type` (llama.cpp's `llama_token_type`). */
export const TokenType = {
  UNDEFINED: 0,
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/** Fill-in-the-middle token ids (`tokenizer.ggml.fim_*_token_id`). */
export interface FimTokens {
  /** Prefix. */
  readonly pre?: number;
  /** Suffix. */
  readonly suf?: number;
  /** Middle. */
  readonly mid?: number;
  /** Padding (ends generation). */
  readonly pad?: number;
  /** Repository name (ends generation). */
  readonly rep?: number;
  /** File separator (ends generation). */
  readonly sep?: number;
}

/** The vocabulary and settings a {@linkcode Tokenizer} is made from. */
export interface TokenizerVocab {
  /** `spm` (SentencePiece, `tokenizer.ggml.model == "llama"`, the default) or `bpe` (byte-level, `"gpt2"`). */
  readonly model?: "spm" | "bpe";
  /** Piece of each token id (`tokenizer.ggml.tokens`). */
  readonly tokens: readonly string[];
  /** Merge score of each token (`tokenizer.ggml.scores`, SPM); all 0 when absent. */
  readonly scores?: ArrayLike<number>;
  /** Ranked merges `"left right"` (`tokenizer.ggml.merges`); required for BPE. */
  readonly merges?: readonly string[];
  /** Pre-tokenizer name (`tokenizer.ggml.pre`, BPE; default `"default"`). */
  readonly pre?: string;
  /** {@linkcode TokenType} of each token (`tokenizer.ggml.token_type`); all NORMAL when absent. */
  readonly types?: ArrayLike<number>;
  /** Beginning-of-sequence id. */
  readonly bos: number;
  /** End-of-sequence id. */
  readonly eos: number;
  /** Unknown token, used when a byte has no `<0xNN>` piece (SPM). */
  readonly unk?: number;
  /** Prepend BOS by default (`add_bos_token`; default: true for SPM, the pre-tokenizer's default for BPE). */
  readonly addBos?: boolean;
  /** Append EOS by default (`add_eos_token`; default false). */
  readonly addEos?: boolean;
  /**
   * SPM: prepend a space to text that starts the input or follows a special token; both: strip
   * one leading space when decoding (`add_space_prefix`; default true for SPM, false for BPE).
   */
  readonly addSpacePrefix?: boolean;
  /** End-of-turn id (`eot_token_id`); when absent, found by its text (`<|im_end|>`, `<|eot_id|>`, …). */
  readonly eot?: number;
  /** End-of-message id (`eom_token_id`); when absent, `<|eom_id|>` if there is one. */
  readonly eom?: number;
  /** Fill-in-the-middle ids; each absent one is found by its text (`<|fim_prefix|>`, `<PRE>`, …). */
  readonly fim?: FimTokens;
  /** `general.name`: llama.cpp strips spaces after special tokens for Phi-3 models. */
  readonly name?: string;
  /** `general.architecture`: llama.cpp strips spaces before `<mask>` for some. */
  readonly architecture?: string;
  /** Further end-of-generation ids. */
  readonly eog?: readonly number[];
}

/** Options of {@linkcode Tokenizer.fromGguf} and {@linkcode Tokenizer.load}. */
export interface TokenizerOptions {
  /** Use this pre-tokenizer instead of the file's `tokenizer.ggml.pre` (BPE). */
  readonly pre?: string;
}

/** Options of {@linkcode Tokenizer.encode}. */
export interface EncodeOptions {
  /** Prepend BOS (default: {@linkcode Tokenizer.addBos}). */
  readonly addBos?: boolean;
  /** Append EOS (default: {@linkcode Tokenizer.addEos}). */
  readonly addEos?: boolean;
  /**
   * Turn the text of control tokens (`<start_of_turn>`, `<|im_start|>`, …) into
   * those tokens (default false: they are tokenized as plain text, so user
   * text cannot inject them). llama.cpp's `parse_special`. User-defined
   * tokens are always recognised.
   */
  readonly parseSpecial?: boolean;
}

/** Options of {@linkcode Tokenizer.decode} and {@linkcode Tokenizer.decoder}. */
export interface DecodeOptions {
  /** Render control and unknown tokens as their text (default false: they render as nothing). llama.cpp's `unparse_special`. */
  readonly special?: boolean;
}

// Texts llama.cpp treats as end of generation whatever their id (llama-vocab.cpp's list).
const EOG_TEXTS = new Set([
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
  "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
]);
// Texts by which llama.cpp finds the special ids a file does not name (the first found wins).
const FOUND_BY_TEXT = {
  eot: ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"],
  eom: ["<|eom_id|>"],
  pre: ["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>"],
  suf: ["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>"],
  mid: ["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>"],
  pad: ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"],
  rep: ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"],
  sep: ["<|file_sep|>"],
} as const;
// gpt-oss's channel tokens, which llama.cpp always renders (user-defined).
const ALWAYS_RENDERED = ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

const SPACE_ESCAPE = "\u2581";
const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);
/** C's isspace: what llama.cpp strips beside special tokens marked lstrip / rstrip. */
const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/** A fragment of the input after the special-token split: raw text, or a token id. */
type Fragment = string | number;

/**
 * llama.cpp's `clean_spaces` on detokenized text: drop the space before
 * `? ! . ,`, the spaces around a lone `'`, and the space before `'s 'm 're
 * 've`. Three in-place passes over UTF-16 units, as upstream's over bytes
 * (only ASCII is tested, so the two agree), including its quirk that the
 * second pass leaves a NUL where it dropped a space, which the next
 * character then sees as its predecessor.
 */
function cleanSpaces(text: string): string {
  const u = new Uint16Array(text.length);
  for (let i = 0; i < u.length; i++) u[i] = text.charCodeAt(i);
  const SP = 0x20, APOS = 0x27;
  let n = u.length;
  const pass = (step: (i: number, drop: () => void) => number) => {
    let w = n > 0 ? 1 : 0;
    for (let i = 1; i < n; i++) {
      const x = u[i];
      i = step(i, () => w--);
      u[w++] = x;
    }
    n = w;
  };
  pass((i, drop) => {
    const x = u[i];
    if (u[i - 1] === SP && (x === 0x3f || x === 0x21 || x === 0x2e || x === 0x2c)) drop();
    return i;
  });
  pass((i, drop) => {
    if (u[i] === APOS && i + 1 < n && u[i - 1] === SP && u[i + 1] === SP) {
      drop();
      u[++i] = 0;
    }
    return i;
  });
  pass((i, drop) => {
    if (u[i - 1] !== SP || u[i] !== APOS || i + 1 >= n) return i;
    const a = u[i + 1];
    if (a === 0x73 || a === 0x6d) drop(); // 's 'm
    else if (a !== 0x74 && a !== 0x64 && i + 2 < n && (a === 0x72 || a === 0x76) && u[i + 2] === 0x65) drop(); // 're 've
    return i;
  });
  let s = "";
  for (let i = 0; i < n; i += 8192) s += String.fromCharCode(...u.subarray(i, Math.min(n, i + 8192)));
  return s;
}

/**
 * A GGUF file's tokenizer: `encode` and `decode` that give the ids and text
 * llama.cpp gives for the same file, for SentencePiece (`spm`) and
 * byte-level BPE (`bpe`) vocabularies.
 */
export class Tokenizer {
  /** `spm` (SentencePiece-style, `tokenizer.ggml.model == "llama"`) or `bpe` (byte-level, `"gpt2"`). */
  readonly model: "spm" | "bpe";
  /** The pre-tokenizer (`tokenizer.ggml.pre`, `"default"` when absent); only BPE uses it. */
  readonly pre: string;
  /** Beginning-of-sequence id. */
  readonly bos: number;
  /** End-of-sequence id. */
  readonly eos: number;
  /** Number of tokens in the vocabulary. */
  readonly vocabSize: number;
  /** Whether {@linkcode encode} prepends BOS by default. */
  readonly addBos: boolean;
  /** Whether {@linkcode encode} appends EOS by default. */
  readonly addEos: boolean;
  /** SPM: raw text after the start or a special token gets a leading space; both: decoding strips one. */
  readonly addSpacePrefix: boolean;
  readonly #tokens: readonly string[];
  readonly #scores: ArrayLike<number>;
  /** Effective token types (llama.cpp's attributes, after its overrides). */
  readonly #types: Uint8Array;
  /** Special tokens that swallow the white space before (1) / after (2) them. */
  readonly #strip = new Map<number, number>();
  readonly #unk: number | undefined;
  readonly #ids = new Map<string, number>();
  /** Control / user-defined / unknown ids, longest piece (in UTF-8 bytes) first: the split order. */
  readonly #specials: number[] = [];
  readonly #eog = new Set<number>();
  readonly #pieces: (Uint8Array | undefined)[];
  readonly #byteIds = new Int32Array(256).fill(-1);
  readonly #pre: PreTokenizer | undefined;
  readonly #bpe: BytePairEncoder | undefined;

  /**
   * A tokenizer from a vocabulary; most callers want {@linkcode Tokenizer.fromGguf}.
   *
   * @throws {UnsupportedPreTokenizerError} for a BPE `pre` that is not implemented
   * @throws {ModelError} (`VOCAB`) for a BPE merge that names a missing token
   * @throws {Error} for a malformed vocabulary
   */
  constructor(vocab: TokenizerVocab) {
    const n = vocab.tokens.length;
    if (n === 0) throw new Error("tokenizer: empty vocabulary");
    for (const [name, id] of [["bos", vocab.bos], ["eos", vocab.eos]] as const) {
      if (!Number.isInteger(id) || id < 0 || id >= n) throw new Error(`tokenizer: ${name} id ${id} is not in the vocabulary (${n} tokens)`);
    }
    if (vocab.scores && vocab.scores.length !== n) throw new Error(`tokenizer: ${vocab.scores.length} scores for ${n} tokens`);
    if (vocab.types && vocab.types.length !== n) throw new Error(`tokenizer: ${vocab.types.length} token types for ${n} tokens`);
    this.model = vocab.model ?? "spm";
    if (this.model !== "spm" && this.model !== "bpe") throw new Error(`tokenizer: model ${JSON.stringify(this.model)} is neither "spm" nor "bpe"`);
    const spm = this.model === "spm";
    this.#pre = spm ? undefined : preTokenizer(vocab.pre ?? "");
    this.pre = this.#pre?.name ?? (vocab.pre || "default");
    this.vocabSize = n;
    this.bos = vocab.bos;
    this.eos = vocab.eos;
    this.#unk = vocab.unk !== undefined && vocab.unk >= 0 && vocab.unk < n ? vocab.unk : undefined;
    this.addBos = vocab.addBos ?? (spm || this.#pre!.addBos);
    this.addEos = vocab.addEos ?? false;
    this.addSpacePrefix = vocab.addSpacePrefix ?? spm;
    this.#scores = vocab.scores ?? new Float32Array(n);
    // Types outside llama_token_type are "undefined" to llama.cpp (rendered as nothing).
    this.#types = new Uint8Array(n).fill(TokenType.NORMAL);
    if (vocab.types) for (let i = 0; i < n; i++) this.#types[i] = vocab.types[i] >= 0 && vocab.types[i] <= 6 ? vocab.types[i] : TokenType.UNDEFINED;
    // llama.cpp renames empty pieces so that every piece is a distinct, non-empty key.
    this.#tokens = vocab.tokens.map((t, i) => (t === "" ? `[EMPTY_${i}]` : t));
    this.#pieces = new Array(n);
    // A later duplicate piece wins, as in llama.cpp's token_to_id map.
    for (let i = 0; i < n; i++) this.#ids.set(this.#tokens[i], i);
    if (spm) {
      for (let b = 0; b < 256; b++) {
        const id = this.#ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`) ?? this.#ids.get(String.fromCharCode(b));
        if (id !== undefined) this.#byteIds[b] = id;
      }
    }
    this.#markSpecial(vocab);
    const byteLength = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const t = this.#types[i];
      if (t === TokenType.CONTROL || t === TokenType.USER_DEFINED || t === TokenType.UNKNOWN) {
        this.#specials.push(i);
        byteLength.set(i, utf8.encode(this.#tokens[i]).length);
      }
    }
    // Ties in length keep id order (llama.cpp's std::sort leaves them unspecified; they matter only
    // for two same-length special pieces that overlap in a text).
    this.#specials.sort((a, b) => byteLength.get(b)! - byteLength.get(a)! || a - b);
    this.#markStrip(vocab);
    if (!spm) {
      if (!vocab.merges) throw new Error("tokenizer: a BPE vocabulary needs its merges (tokenizer.ggml.merges)");
      this.#bpe = new BytePairEncoder(this.#ids, vocab.merges, this.#pre!.ignoreMerges);
    }
  }

  /** llama.cpp's type overrides and end-of-generation set, in its order (llama_vocab::impl::load). */
  #markSpecial(vocab: TokenizerVocab): void {
    const n = this.vocabSize, types = this.#types, tokens = this.#tokens;
    const valid = (id: number | undefined) => (id !== undefined && Number.isInteger(id) && id >= 0 && id < n ? id : undefined);
    const found: Record<keyof typeof FOUND_BY_TEXT, number | undefined> = {
      eot: valid(vocab.eot), eom: valid(vocab.eom),
      pre: valid(vocab.fim?.pre), suf: valid(vocab.fim?.suf), mid: valid(vocab.fim?.mid),
      pad: valid(vocab.fim?.pad), rep: valid(vocab.fim?.rep), sep: valid(vocab.fim?.sep),
    };
    const control = (id: number) => {
      if (types[id] !== TokenType.CONTROL) types[id] = TokenType.CONTROL;
    };
    // Lowest id first where upstream walks a hash map: only a vocabulary with two candidates for
    // one role (say both <|fim_repo|> and <reponame>) could tell the two orders apart.
    const each = (f: (id: number, text: string) => void) => {
      for (let id = 0; id < n; id++) if (this.#ids.get(tokens[id]) === id) f(id, tokens[id]);
    };
    each((id, text) => {
      for (const role of Object.keys(FOUND_BY_TEXT) as (keyof typeof FOUND_BY_TEXT)[]) {
        if (found[role] === undefined && (FOUND_BY_TEXT[role] as readonly string[]).includes(text)) {
          found[role] = id;
          control(id);
        }
      }
    });
    for (const id of [found.pad, found.rep, found.sep]) if (id !== undefined) this.#eog.add(id);
    each((id, text) => {
      if (EOG_TEXTS.has(text)) {
        this.#eog.add(id);
        control(id);
      }
    });
    for (const text of ALWAYS_RENDERED) {
      const id = this.#ids.get(text);
      if (id !== undefined) types[id] = TokenType.USER_DEFINED;
    }
    for (const id of [this.eos, found.eot, found.eom]) if (id !== undefined) this.#eog.add(id);
    // o200k_harmony: with <|return|> and <|call|>, <|end|> is not the end.
    const eogText = new Map([...this.#eog].map((id) => [tokens[id], id]));
    const end = eogText.get("<|end|>");
    if (eogText.has("<|return|>") && eogText.has("<|call|>") && end !== undefined) {
      this.#eog.delete(end);
      types[end] = TokenType.USER_DEFINED;
    }
    for (const id of vocab.eog ?? []) if (valid(id) !== undefined) this.#eog.add(id);
  }

  /** llama.cpp's per-model strip flags: `<mask>` of Jina v2 / some BERTs, every special of Phi-3. */
  #markStrip(vocab: TokenizerVocab): void {
    const LSTRIP = 1, RSTRIP = 2;
    const arch = vocab.architecture ?? "", name = (vocab.name ?? "").toLowerCase();
    if (/jina-v2-(de|es|code)/.test(this.pre) || /nomic-bert-moe|jina-bert-v3/.test(arch)) {
      const mask = this.#ids.get("<mask>");
      if (mask !== undefined) this.#strip.set(mask, LSTRIP);
    } else if (name.includes("phi-3") || name.includes("phi3")) {
      for (const id of this.#specials) this.#strip.set(id, RSTRIP);
      const eos = this.#ids.get("</s>");
      if (eos !== undefined) this.#strip.set(eos, RSTRIP);
      for (const t of ["<unk>", "<s>", "<|endoftext|>"]) {
        const id = this.#ids.get(t);
        if (id !== undefined) this.#strip.delete(id);
      }
    }
  }

  /**
   * {@linkcode Tokenizer.fromGguf} of the GGUF file at `path` (its metadata only is read).
   *
   * @throws {Error} as {@linkcode Tokenizer.fromGguf}, or a `GgufError` for an unreadable file
   */
  static load(path: string, opts: TokenizerOptions = {}): Tokenizer {
    return Tokenizer.fromGguf(readGguf(path), opts);
  }

  /**
   * The tokenizer of a GGUF file: `tokenizer.ggml.model` must be `llama`
   * (SentencePiece) or `gpt2` (byte-level BPE, with `.merges` and `.pre`);
   * reads `.tokens`, `.scores`, `.token_type`, the special ids (`.bos_token_id`,
   * `.eos_token_id`, `.eot_token_id`, `.eom_token_id`, `.unknown_token_id`,
   * `.fim_*_token_id`), `.add_bos_token`, `.add_eos_token`,
   * `.add_space_prefix`, with llama.cpp's defaults when a key is absent (SPM:
   * BOS 1, EOS 2, UNK 0, add BOS, add a space prefix; BPE: BOS = EOS = 11,
   * BOS as the pre-tokenizer says) or names an id out of range.
   *
   * @throws {UnsupportedPreTokenizerError} for a `tokenizer.ggml.pre` that is not implemented
   * @throws {Error} for another tokenizer model or a malformed vocabulary
   */
  static fromGguf(file: GgufFile, opts: TokenizerOptions = {}): Tokenizer {
    const model = file.get("tokenizer.ggml.model");
    if (model !== "llama" && model !== "gpt2") {
      throw new Error(`tokenizer: tokenizer.ggml.model is ${JSON.stringify(model)}; only "llama" (SentencePiece) and "gpt2" (byte-level BPE) are supported`);
    }
    const spm = model === "llama";
    const tokens = file.require("tokenizer.ggml.tokens", GgufType.ARRAY, GgufType.STRING) as string[];
    const n = tokens.length;
    const array = (key: string): ArrayLike<number> | undefined => {
      const v = file.get(key);
      if (v === undefined) return undefined;
      if (!ArrayBuffer.isView(v) || v instanceof BigInt64Array || v instanceof BigUint64Array) throw new Error(`tokenizer: ${key} is not a numeric array`);
      return v as ArrayLike<number>;
    };
    const str = (key: string): string | undefined => {
      const v = file.get(key);
      return typeof v === "string" ? v : undefined;
    };
    const bool = (key: string): boolean | undefined => {
      const v = file.get(key);
      return typeof v === "boolean" ? v : undefined;
    };
    // An id the file names out of range keeps the default, as llama.cpp ("bad special token").
    const id = (key: string): number | undefined => {
      const v = file.get(key);
      const x = typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : undefined;
      return x !== undefined && Number.isInteger(x) && x >= 0 && x < n ? x : undefined;
    };
    const k = (name: string) => `tokenizer.ggml.${name}`;
    const pre = opts.pre ?? str(k("pre")) ?? "";
    const preTok = spm ? undefined : preTokenizer(pre);
    const bos = id(k("bos_token_id")) ?? (spm ? 1 : preTok!.noBos ? undefined : 11);
    if (bos === undefined) throw new Error(`tokenizer: pre-tokenizer ${JSON.stringify(pre)} has no default BOS and the file names none (tokenizer.ggml.bos_token_id)`);
    return new Tokenizer({
      model: spm ? "spm" : "bpe",
      tokens,
      scores: array(k("scores")),
      merges: spm ? undefined : (file.require(k("merges"), GgufType.ARRAY, GgufType.STRING) as string[]),
      pre,
      types: array(k("token_type")),
      bos,
      eos: id(k("eos_token_id")) ?? (spm ? 2 : 11),
      unk: id(k("unknown_token_id")) ?? (spm ? 0 : undefined),
      addBos: bool(k("add_bos_token")),
      addEos: bool(k("add_eos_token")),
      addSpacePrefix: bool(k("add_space_prefix")),
      eot: id(k("eot_token_id")),
      eom: id(k("eom_token_id")),
      // The deprecated prefix / suffix / middle keys win over the fim_* ones, as upstream reads them last.
      fim: {
        pre: id(k("prefix_token_id")) ?? id(k("fim_pre_token_id")),
        suf: id(k("suffix_token_id")) ?? id(k("fim_suf_token_id")),
        mid: id(k("middle_token_id")) ?? id(k("fim_mid_token_id")),
        pad: id(k("fim_pad_token_id")),
        rep: id(k("fim_rep_token_id")),
        sep: id(k("fim_sep_token_id")),
      },
      name: str("general.name"),
      architecture: str("general.architecture"),
    });
  }

  /** The piece (vocabulary text) of `id`. */
  tokenText(id: number): string {
    this.#check(id);
    return this.#tokens[id];
  }

  /** The id whose piece is exactly `text`, if any. */
  tokenId(text: string): number | undefined {
    return this.#ids.get(text);
  }

  /** The {@linkcode TokenType} of `id` as llama.cpp uses it (after its overrides of the file's types). */
  tokenType(id: number): number {
    this.#check(id);
    return this.#types[id];
  }

  /** Whether `id` is a control token (`<bos>`, `<|im_start|>`, `<end_of_turn>`, …): rendered as nothing by default. */
  isControl(id: number): boolean {
    return this.tokenType(id) === TokenType.CONTROL;
  }

  /**
   * Whether `id` ends generation for llama.cpp: EOS, end of turn / message,
   * the fill-in-the-middle pad / repository / file-separator tokens, and every
   * token whose text is one of llama.cpp's list (`<|im_end|>`,
   * `<|endoftext|>`, `<|eot_id|>`, `<end_of_turn>`, …).
   */
  isEog(id: number): boolean {
    return this.#eog.has(id);
  }

  /**
   * The token ids of `text` (see the module doc for the algorithm).
   * Text that is not well-formed UTF-16 has its lone surrogates replaced by
   * U+FFFD first, as the UTF-8 conversion of every runtime does.
   */
  encode(text: string, opts: EncodeOptions = {}): number[] {
    if (typeof text !== "string") throw new TypeError("tokenizer.encode: text must be a string");
    // (ignoreBOM: a leading U+FEFF is text here, not a byte-order mark to drop.)
    if (/\p{Surrogate}/u.test(text)) text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(utf8.encode(text));
    const out: number[] = [];
    if (opts.addBos ?? this.addBos) out.push(this.bos);
    let prevSpecial = true; // the start counts as "after a special token" for the space prefix
    for (const f of this.#split(text, opts.parseSpecial ?? false)) {
      if (typeof f === "number") {
        out.push(f);
        prevSpecial = true;
      } else if (this.#bpe) {
        for (const word of this.#pre!.split(f)) this.#bpe.encode(word, out);
      } else {
        this.#spm((this.addSpacePrefix && prevSpecial ? " " : "") + f, out);
        prevSpecial = false;
      }
    }
    if (opts.addEos ?? this.addEos) out.push(this.eos);
    return out;
  }

  /**
   * Cuts `text` around special pieces, longest first, each at every
   * left-to-right occurrence; a piece marked lstrip / rstrip also takes the
   * white space before / after it.
   */
  #split(text: string, parseSpecial: boolean): Fragment[] {
    let frags: Fragment[] = text === "" ? [] : [text];
    for (const id of this.#specials) {
      const t = this.#types[id];
      if (!parseSpecial && t !== TokenType.USER_DEFINED) continue;
      const piece = this.#tokens[id];
      if (!text.includes(piece)) continue; // cheap pre-check: most specials are absent
      const strip = this.#strip.get(id) ?? 0;
      const next: Fragment[] = [];
      for (const f of frags) {
        if (typeof f === "number") {
          next.push(f);
          continue;
        }
        let from = 0;
        for (let at = f.indexOf(piece); at >= 0; at = f.indexOf(piece, from)) {
          let left = at;
          if (strip & 1) while (left > from && isSpace(f.charCodeAt(left - 1))) left--;
          if (left > from) next.push(f.slice(from, left));
          next.push(id);
          from = at + piece.length;
          if (strip & 2) while (from < f.length && isSpace(f.charCodeAt(from))) from++;
        }
        if (from < f.length) next.push(from === 0 ? f : f.slice(from));
      }
      frags = next;
    }
    return frags;
  }

  /** SentencePiece merges of one piece of raw text, appended to `out`. */
  #spm(raw: string, out: number[]): void {
    const text = raw.replaceAll(" ", SPACE_ESCAPE);
    // One symbol per code point; a pair merges when its concatenation is a piece, highest score first.
    const starts: number[] = [];
    for (let i = 0; i < text.length; i += text.codePointAt(i)! > 0xffff ? 2 : 1) starts.push(i);
    const symbols = mergeSymbols(text, starts, (l, r) => {
      const id = this.#ids.get(l + r);
      return id === undefined ? undefined : this.#scores[id];
    });
    // Every merged symbol is a piece (only pieces are merged); a leftover single character
    // that is not one falls back to its UTF-8 bytes (llama.cpp's resegment reduces to this).
    const byteId = (byte: number) => {
      const bid = this.#byteIds[byte] >= 0 ? this.#byteIds[byte] : this.#unk;
      if (bid === undefined) throw new Error(`tokenizer: no token for byte 0x${byte.toString(16)} and no unknown token`);
      return bid;
    };
    for (const s of symbols) {
      const id = this.#ids.get(s);
      if (id !== undefined) out.push(id);
      else for (const byte of utf8.encode(s)) out.push(byteId(byte));
    }
  }

  /**
   * The UTF-8 bytes `id` renders as (llama.cpp's `token_to_piece`): control
   * and unknown tokens as nothing unless `special`, user-defined pieces
   * verbatim, normal pieces decoded (SPM: `▁` as space; BPE: byte
   * characters to bytes), SPM byte tokens as their byte, the rest as nothing.
   */
  pieceBytes(id: number, special = false): Uint8Array {
    this.#check(id);
    const t = this.#types[id];
    if (t === TokenType.CONTROL || t === TokenType.UNKNOWN) return special ? utf8.encode(this.#tokens[id]) : EMPTY;
    let p = this.#pieces[id];
    if (p === undefined) {
      const text = this.#tokens[id];
      if (t === TokenType.USER_DEFINED) p = utf8.encode(text);
      else if (t === TokenType.NORMAL) p = this.#bpe ? byteDecode(text) : utf8.encode(text.replaceAll(SPACE_ESCAPE, " "));
      else if (t === TokenType.BYTE && !this.#bpe) p = Uint8Array.of(parseInt(text.slice(3, 5), 16));
      else p = EMPTY;
      this.#pieces[id] = p;
    }
    return p;
  }

  /**
   * The text of `ids`, as llama.cpp's `llama_detokenize` (no special-token
   * removal). Bytes that are not valid UTF-8 (a cut byte sequence) become
   * U+FFFD. For the BPE pre-tokenizers that ask for it (`gpt-2`,
   * `llama-bpe`, `default`, … but not `qwen2` or `smollm`), spaces are then
   * cleaned up as upstream does (` .` → `.`, ` 's` → `'s`, …), which the
   * streaming {@linkcode decoder} does not do, as llama.cpp's per-token
   * pieces do not.
   */
  decode(ids: readonly number[], opts: DecodeOptions = {}): string {
    const d = this.decoder(opts);
    let s = "";
    for (const id of ids) s += d.push(id);
    s += d.flush();
    return this.#pre?.cleanSpaces ? cleanSpaces(s) : s;
  }

  /**
   * Streaming decode: `push(id)` returns the text completed by that token,
   * holding back the bytes of a character that continues in a later token
   * (emoji and CJK characters often arrive as several tokens); `flush()`
   * returns what is held (U+FFFD for an incomplete character) and resets.
   * `decode(ids) === ids.map(push).join("") + flush()`, except for the
   * space clean-up of some BPE vocabularies (see {@linkcode decode}).
   */
  decoder(opts: DecodeOptions = {}): { push(id: number): string; flush(): string } {
    const special = opts.special ?? false;
    let td = new TextDecoder("utf-8", { ignoreBOM: true });
    let first = true;
    return {
      push: (id: number): string => {
        let bytes = this.pieceBytes(id, special);
        // With a space prefix, llama.cpp strips one leading space from the first piece.
        if (first && this.addSpacePrefix && bytes[0] === 0x20) bytes = bytes.subarray(1);
        first = false;
        return td.decode(bytes, { stream: true });
      },
      flush: (): string => {
        const s = td.decode();
        td = new TextDecoder("utf-8", { ignoreBOM: true });
        first = true;
        return s;
      },
    };
  }

  #check(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) throw new RangeError(`tokenizer: token id ${id} is not in 0..${this.vocabSize - 1}`);
  }
}
