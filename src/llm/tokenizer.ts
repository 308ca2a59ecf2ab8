/**
 * Gemma's tokenizer, built from a GGUF file's `tokenizer.ggml.*` metadata:
 * llama.cpp's SPM (SentencePiece-style) path, reimplemented from the
 * behaviour of its `llama-vocab.cpp` (release b6673) and checked token for
 * token against it (`tests/llm_tokenizer.test.ts`, fixture written by
 * `tests/fixtures/llm/llama_cpp_fixture.mjs`).
 *
 * Encoding, as llama.cpp does it:
 *
 * 1. **Special-token split.** The text is cut around every occurrence of a
 *    user-defined token (type 4: for Gemma `\n`, runs of newlines, spaces and
 *    tabs, HTML tags, …), longest token first; with `parseSpecial` also around
 *    control and unknown tokens (types 3 and 2: `<start_of_turn>`, `<bos>`, …).
 *    User-defined tokens are split out even without `parseSpecial`: that is
 *    llama.cpp's (and Hugging Face's) rule, and why `"a  b"` holds the token
 *    of two spaces.
 * 2. **SPM on each remaining piece of text.** A space prefix when the file
 *    asks for one (`add_space_prefix`; Gemma's says no), spaces to `▁`
 *    (U+2581), one symbol per Unicode character, then repeatedly merge the
 *    adjacent pair whose concatenation is a vocabulary piece of highest score
 *    (ties: leftmost first), with a priority queue. A symbol that is not a
 *    piece at the end becomes its UTF-8 bytes as `<0xNN>` tokens.
 * 3. BOS first when asked (`addBos`, default: the file's `add_bos_token`).
 *
 * @module
 */
import { type GgufFile, GgufType, readGguf } from "../mod.ts";

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

/** The vocabulary and settings a {@linkcode Tokenizer} is made from. */
export interface TokenizerVocab {
  /** Piece of each token id (`tokenizer.ggml.tokens`). */
  readonly tokens: readonly string[];
  /** Merge score of each token (`tokenizer.ggml.scores`); all 0 when absent. */
  readonly scores?: ArrayLike<number>;
  /** {@linkcode TokenType} of each token (`tokenizer.ggml.token_type`); all NORMAL when absent. */
  readonly types?: ArrayLike<number>;
  /** Beginning-of-sequence id. */
  readonly bos: number;
  /** End-of-sequence id. */
  readonly eos: number;
  /** Unknown token, used when a byte has no `<0xNN>` piece. */
  readonly unk?: number;
  /** Prepend BOS by default (`add_bos_token`). */
  readonly addBos?: boolean;
  /** Prepend a space to text that starts the input or follows a special token (`add_space_prefix`). */
  readonly addSpacePrefix?: boolean;
  /** Further end-of-generation ids (`eot_token_id`, `eom_token_id`). */
  readonly eog?: readonly number[];
}

/** Options of {@linkcode Tokenizer.encode}. */
export interface EncodeOptions {
  /** Prepend BOS (default: the file's `add_bos_token`, true for Gemma). */
  readonly addBos?: boolean;
  /**
   * Turn the text of control tokens (`<start_of_turn>`, `<bos>`, …) into
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

const SPACE_ESCAPE = "\u2581";
const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** A pair of adjacent symbols whose concatenation is a piece, queued by score. */
interface Bigram {
  readonly left: number;
  readonly right: number;
  readonly score: number;
  /** Length of the concatenation when queued: a later merge of either side makes it stale. */
  readonly size: number;
}

/** `a` comes out of the queue before `b`: higher score, then the leftmost. */
function before(a: Bigram, b: Bigram): boolean {
  return a.score > b.score || (a.score === b.score && a.left < b.left);
}

/** A binary max-heap of bigrams ({@linkcode before} order). */
class BigramQueue {
  readonly #h: Bigram[] = [];
  get size(): number {
    return this.#h.length;
  }
  push(b: Bigram): void {
    const h = this.#h;
    let i = h.push(b) - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }
  pop(): Bigram {
    const h = this.#h;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

/** A fragment of the input after the special-token split: raw text, or a token id. */
type Fragment = string | number;

/**
 * Gemma's (SentencePiece-style) tokenizer: `encode` and `decode` that give
 * the ids and text llama.cpp gives for the same GGUF file.
 */
export class Tokenizer {
  /** Beginning-of-sequence id. */
  readonly bos: number;
  /** End-of-sequence id. */
  readonly eos: number;
  /** Number of tokens in the vocabulary. */
  readonly vocabSize: number;
  /** Whether {@linkcode encode} prepends BOS by default. */
  readonly addBos: boolean;
  /** Whether raw text after the start or a special token gets a leading space. */
  readonly addSpacePrefix: boolean;
  readonly #tokens: readonly string[];
  readonly #scores: ArrayLike<number>;
  readonly #types: Uint8Array;
  readonly #unk: number | undefined;
  readonly #ids = new Map<string, number>();
  /** Control / user-defined / unknown ids, longest piece (in UTF-8 bytes) first: the split order. */
  readonly #specials: number[] = [];
  readonly #eog = new Set<number>();
  readonly #pieces: (Uint8Array | undefined)[];
  readonly #byteIds = new Int32Array(256).fill(-1);

  /** A tokenizer from a vocabulary; most callers want {@linkcode Tokenizer.fromGguf}. */
  constructor(vocab: TokenizerVocab) {
    const n = vocab.tokens.length;
    if (n === 0) throw new Error("tokenizer: empty vocabulary");
    for (const [name, id] of [["bos", vocab.bos], ["eos", vocab.eos]] as const) {
      if (!Number.isInteger(id) || id < 0 || id >= n) throw new Error(`tokenizer: ${name} id ${id} is not in the vocabulary (${n} tokens)`);
    }
    if (vocab.scores && vocab.scores.length !== n) throw new Error(`tokenizer: ${vocab.scores.length} scores for ${n} tokens`);
    if (vocab.types && vocab.types.length !== n) throw new Error(`tokenizer: ${vocab.types.length} token types for ${n} tokens`);
    this.vocabSize = n;
    this.bos = vocab.bos;
    this.eos = vocab.eos;
    this.#unk = vocab.unk !== undefined && vocab.unk >= 0 && vocab.unk < n ? vocab.unk : undefined;
    this.addBos = vocab.addBos ?? true;
    this.addSpacePrefix = vocab.addSpacePrefix ?? true;
    this.#scores = vocab.scores ?? new Float32Array(n);
    this.#types = new Uint8Array(n).fill(TokenType.NORMAL);
    if (vocab.types) for (let i = 0; i < n; i++) this.#types[i] = vocab.types[i];
    // llama.cpp renames empty pieces so that every piece is a distinct, non-empty key.
    this.#tokens = vocab.tokens.map((t, i) => (t === "" ? `[EMPTY_${i}]` : t));
    this.#pieces = new Array(n);
    // A later duplicate piece wins, as in llama.cpp's token_to_id map.
    for (let i = 0; i < n; i++) this.#ids.set(this.#tokens[i], i);
    for (let b = 0; b < 256; b++) {
      const id = this.#ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`) ?? this.#ids.get(String.fromCharCode(b));
      if (id !== undefined) this.#byteIds[b] = id;
    }
    const byteLength = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const t = this.#types[i];
      if (t === TokenType.CONTROL || t === TokenType.USER_DEFINED || t === TokenType.UNKNOWN) {
        this.#specials.push(i);
        byteLength.set(i, utf8.encode(this.#tokens[i]).length);
      }
      if (EOG_TEXTS.has(this.#tokens[i])) this.#eog.add(i);
    }
    // Ties in length keep id order (llama.cpp's std::sort leaves them unspecified; no two
    // same-length special pieces of Gemma can overlap in a text, so the order cannot matter).
    this.#specials.sort((a, b) => byteLength.get(b)! - byteLength.get(a)! || a - b);
    this.#eog.add(this.eos);
    for (const id of vocab.eog ?? []) if (id >= 0 && id < n) this.#eog.add(id);
  }

  /**
   * {@linkcode Tokenizer.fromGguf} of the GGUF file at `path` (its metadata only is read).
   *
   * @throws {Error} as {@linkcode Tokenizer.fromGguf}, or a `GgufError` for an unreadable file
   */
  static load(path: string): Tokenizer {
    return Tokenizer.fromGguf(readGguf(path));
  }

  /**
   * The tokenizer of a GGUF file: `tokenizer.ggml.model` must be `llama`
   * (SentencePiece); reads `.tokens`, `.scores`, `.token_type`,
   * `.bos_token_id`, `.eos_token_id`, `.unknown_token_id`, `.add_bos_token`,
   * `.add_space_prefix` (llama.cpp's defaults for SPM when a key is absent:
   * BOS 1, EOS 2, UNK 0, add BOS, add a space prefix).
   *
   * @throws {Error} for another tokenizer model or a malformed vocabulary
   */
  static fromGguf(file: GgufFile): Tokenizer {
    const model = file.get("tokenizer.ggml.model");
    if (model !== "llama") throw new Error(`tokenizer: tokenizer.ggml.model is ${JSON.stringify(model)}; only "llama" (SentencePiece) is supported`);
    const tokens = file.require("tokenizer.ggml.tokens", GgufType.ARRAY, GgufType.STRING) as string[];
    const array = (key: string): ArrayLike<number> | undefined => {
      const v = file.get(key);
      if (v === undefined) return undefined;
      if (!ArrayBuffer.isView(v) || v instanceof BigInt64Array || v instanceof BigUint64Array) throw new Error(`tokenizer: ${key} is not a numeric array`);
      return v as ArrayLike<number>;
    };
    const int = (key: string, dflt: number): number => {
      const v = file.get(key);
      return typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : dflt;
    };
    const bool = (key: string, dflt: boolean): boolean => {
      const v = file.get(key);
      return typeof v === "boolean" ? v : dflt;
    };
    const eog = ["tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"].map((k) => int(k, -1)).filter((id) => id >= 0);
    return new Tokenizer({
      tokens,
      scores: array("tokenizer.ggml.scores"),
      types: array("tokenizer.ggml.token_type"),
      bos: int("tokenizer.ggml.bos_token_id", 1),
      eos: int("tokenizer.ggml.eos_token_id", 2),
      unk: int("tokenizer.ggml.unknown_token_id", 0),
      addBos: bool("tokenizer.ggml.add_bos_token", true),
      addSpacePrefix: bool("tokenizer.ggml.add_space_prefix", true),
      eog,
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

  /** The {@linkcode TokenType} of `id`. */
  tokenType(id: number): number {
    this.#check(id);
    return this.#types[id];
  }

  /** Whether `id` is a control token (`<bos>`, `<eos>`, `<start_of_turn>`, …): rendered as nothing by default. */
  isControl(id: number): boolean {
    return this.tokenType(id) === TokenType.CONTROL;
  }

  /** Whether `id` ends generation for llama.cpp: EOS, `<end_of_turn>` and the like. */
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
    if (/\p{Surrogate}/u.test(text)) text = new TextDecoder().decode(utf8.encode(text));
    const out: number[] = [];
    if (opts.addBos ?? this.addBos) out.push(this.bos);
    let prevSpecial = true; // the start counts as "after a special token" for the space prefix
    for (const f of this.#split(text, opts.parseSpecial ?? false)) {
      if (typeof f === "number") {
        out.push(f);
        prevSpecial = true;
      } else {
        this.#spm((this.addSpacePrefix && prevSpecial ? " " : "") + f, out);
        prevSpecial = false;
      }
    }
    return out;
  }

  /** Cuts `text` around special pieces, longest first, each at every left-to-right occurrence. */
  #split(text: string, parseSpecial: boolean): Fragment[] {
    let frags: Fragment[] = text === "" ? [] : [text];
    for (const id of this.#specials) {
      const t = this.#types[id];
      if (!parseSpecial && t !== TokenType.USER_DEFINED) continue;
      const piece = this.#tokens[id];
      if (!text.includes(piece)) continue; // cheap pre-check: most specials are absent
      const next: Fragment[] = [];
      for (const f of frags) {
        if (typeof f === "number") {
          next.push(f);
          continue;
        }
        let from = 0;
        for (let at = f.indexOf(piece); at >= 0; at = f.indexOf(piece, from)) {
          if (at > from) next.push(f.slice(from, at));
          next.push(id);
          from = at + piece.length;
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
    // Symbols: one per code point, as [start, end) ranges of `text` in a doubly linked list.
    const start: number[] = [];
    for (let i = 0; i < text.length; i += text.codePointAt(i)! > 0xffff ? 2 : 1) start.push(i);
    const n = start.length;
    if (n === 0) return;
    const end = Int32Array.from({ length: n }, (_, k) => (k + 1 < n ? start[k + 1] : text.length));
    const prev = Int32Array.from({ length: n }, (_, k) => k - 1);
    const next = Int32Array.from({ length: n }, (_, k) => (k + 1 < n ? k + 1 : -1));
    const len = (k: number) => end[k] - start[k]; // 0 once merged into its left neighbour
    const queue = new BigramQueue();
    const tryAdd = (left: number, right: number) => {
      if (left < 0 || right < 0) return;
      const id = this.#ids.get(text.slice(start[left], end[right]));
      if (id === undefined) return;
      queue.push({ left, right, score: this.#scores[id], size: end[right] - start[left] });
    };
    for (let k = 1; k < n; k++) tryAdd(k - 1, k);
    while (queue.size > 0) {
      const b = queue.pop();
      const l = b.left, r = b.right;
      // Stale: a side was merged away, or grew, since this pair was queued.
      if (len(l) === 0 || len(r) === 0 || len(l) + len(r) !== b.size) continue;
      end[l] = end[r];
      end[r] = start[r]; // len(r) = 0
      next[l] = next[r];
      if (next[r] >= 0) prev[next[r]] = l;
      tryAdd(prev[l], l);
      tryAdd(l, next[l]);
    }
    // Every merged symbol is a piece (only pieces are merged); a leftover single character
    // that is not one falls back to its UTF-8 bytes (llama.cpp's resegment reduces to this).
    for (let k = 0; k !== -1; k = next[k]) {
      const s = text.slice(start[k], end[k]);
      const id = this.#ids.get(s);
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      for (const byte of utf8.encode(s)) {
        const bid = this.#byteIds[byte];
        if (bid >= 0) out.push(bid);
        else if (this.#unk !== undefined) out.push(this.#unk);
        else throw new Error(`tokenizer: no token for byte 0x${byte.toString(16)} and no unknown token`);
      }
    }
  }

  /**
   * The UTF-8 bytes `id` renders as: normal pieces with `▁` as space,
   * byte tokens as their byte, user-defined pieces verbatim, control and
   * unknown tokens as nothing unless `special`, unused/undefined as nothing.
   */
  pieceBytes(id: number, special = false): Uint8Array {
    this.#check(id);
    const t = this.#types[id];
    if (t === TokenType.CONTROL || t === TokenType.UNKNOWN) return special ? utf8.encode(this.#tokens[id]) : EMPTY;
    let p = this.#pieces[id];
    if (p === undefined) {
      const text = this.#tokens[id];
      if (t === TokenType.USER_DEFINED) p = utf8.encode(text);
      else if (t === TokenType.NORMAL) p = utf8.encode(text.replaceAll(SPACE_ESCAPE, " "));
      else if (t === TokenType.BYTE) p = Uint8Array.of(parseInt(text.slice(3, 5), 16));
      else p = EMPTY;
      this.#pieces[id] = p;
    }
    return p;
  }

  /**
   * The text of `ids`, as llama.cpp's `llama_detokenize` (no special-token
   * removal, no space clean-up: Gemma's file asks for none). Bytes that are
   * not valid UTF-8 (a cut byte sequence) become U+FFFD.
   */
  decode(ids: readonly number[], opts: DecodeOptions = {}): string {
    const d = this.decoder(opts);
    let s = "";
    for (const id of ids) s += d.push(id);
    return s + d.flush();
  }

  /**
   * Streaming decode: `push(id)` returns the text completed by that token,
   * holding back the bytes of a character that continues in a later token
   * (emoji and CJK characters often arrive as several `<0xNN>` tokens);
   * `flush()` returns what is held (U+FFFD for an incomplete character) and
   * resets. `decode(ids) === ids.map(push).join("") + flush()`.
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
