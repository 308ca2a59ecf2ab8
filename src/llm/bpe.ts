/**
 * Byte-level BPE (GPT-2 style, `tokenizer.ggml.model == "gpt2"`) as
 * llama.cpp b6673 runs it on one word of a pre-tokenized text:
 *
 * 1. The word's UTF-8 bytes become printable characters (GPT-2's
 *    byte-to-unicode table: `Ġ` for a space, `Ċ` for a newline, …), the
 *    alphabet the vocabulary and the merges are written in.
 * 2. With `ignore_merges` (Llama 3), a word that is itself a token is that
 *    token.
 * 3. Otherwise every character is a symbol, and the adjacent pair whose merge
 *    has the lowest rank (its index in `tokenizer.ggml.merges`; ties: the
 *    leftmost) is merged until no pair has a merge.
 * 4. Each symbol is its token; a symbol that is not one falls back to its
 *    single-byte pieces, as upstream does.
 *
 * Decoding maps the characters of a normal token back to bytes.
 *
 * @module
 */
import { ModelError } from "../core/errors.ts";

/** GPT-2's table: printable Latin-1 bytes stand for themselves, the others for U+0100 onwards. */
const BYTE_CHARS: readonly string[] = (() => {
  const chars: string[] = new Array(256);
  let next = 0x100;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars[b] = String.fromCharCode(printable ? b : next++);
  }
  return chars;
})();
/** The inverse of {@linkcode BYTE_CHARS}, by char code (-1: not a byte character). */
const CHAR_BYTES = (() => {
  const t = new Int16Array(0x144).fill(-1);
  BYTE_CHARS.forEach((ch, b) => (t[ch.charCodeAt(0)] = b));
  return t;
})();

const utf8 = new TextEncoder();

/** `text` (well-formed UTF-16) as the byte characters of its UTF-8 bytes. */
export function byteEncode(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) out += BYTE_CHARS[c];
    else for (const b of utf8.encode(text[i] + (c >= 0xd800 && c < 0xdc00 ? text[++i] : ""))) out += BYTE_CHARS[b];
  }
  return out;
}

/**
 * The bytes a normal token's text stands for. A character outside the byte
 * table becomes `[UNK_BYTE_0x…<token text>]`, llama.cpp's marker (its hex is
 * the character's UTF-8).
 */
export function byteDecode(piece: string): Uint8Array {
  const out: number[] = [];
  for (const ch of piece) {
    const c = ch.codePointAt(0)!;
    const b = c < CHAR_BYTES.length ? CHAR_BYTES[c] : -1;
    if (b >= 0) out.push(b);
    else {
      const hex = [...utf8.encode(ch)].map((x) => x.toString(16).padStart(2, "0")).join("");
      out.push(...utf8.encode(`[UNK_BYTE_0x${hex}${piece}]`));
    }
  }
  return Uint8Array.from(out);
}

/** A binary heap under a "comes out first" order; small and allocation-light. */
class Heap<T> {
  readonly #h: T[] = [];
  constructor(readonly first: (a: T, b: T) => boolean) {}
  get size(): number {
    return this.#h.length;
  }
  push(x: T): void {
    const h = this.#h;
    let i = h.push(x) - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.first(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }
  pop(): T {
    const h = this.#h;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && this.first(h[l], h[m])) m = l;
        if (r < h.length && this.first(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

/** A queued merge of the symbols `left` and `right` (`size`: their length then, to spot stale pairs). */
interface Pair {
  readonly left: number;
  readonly right: number;
  readonly priority: number;
  readonly size: number;
}
const pairFirst = (a: Pair, b: Pair) => a.priority > b.priority || (a.priority === b.priority && a.left < b.left);

/**
 * The merge loop SPM and BPE share (llama.cpp's two sessions differ only in
 * how a pair is ranked): symbols start at `starts` (increasing offsets into
 * `text`, the first 0); repeatedly merge the adjacent pair of highest
 * `priority` (ties: the leftmost) until no pair has one. Returns the text of
 * the final symbols, in order.
 *
 * @param priority the priority of merging the symbol texts `left` and `right`, or undefined for "never"
 */
export function mergeSymbols(text: string, starts: readonly number[], priority: (left: string, right: string) => number | undefined): string[] {
  const n = starts.length;
  if (n === 0) return [];
  // Symbols as [start, end) ranges of text in a doubly linked list; a merge extends the left one.
  const end = Int32Array.from({ length: n }, (_, k) => (k + 1 < n ? starts[k + 1] : text.length));
  const prev = Int32Array.from({ length: n }, (_, k) => k - 1);
  const next = Int32Array.from({ length: n }, (_, k) => (k + 1 < n ? k + 1 : -1));
  const len = (k: number) => end[k] - starts[k]; // 0 once merged into its left neighbour
  const queue = new Heap<Pair>(pairFirst);
  const tryPair = (left: number, right: number) => {
    if (left < 0 || right < 0) return;
    const p = priority(text.slice(starts[left], end[left]), text.slice(starts[right], end[right]));
    if (p !== undefined) queue.push({ left, right, priority: p, size: end[right] - starts[left] });
  };
  for (let k = 1; k < n; k++) tryPair(k - 1, k);
  while (queue.size > 0) {
    const p = queue.pop();
    const l = p.left, r = p.right;
    // Stale: a side was merged away, or grew, since this pair was queued.
    if (len(l) === 0 || len(r) === 0 || len(l) + len(r) !== p.size) continue;
    end[l] = end[r];
    end[r] = starts[r];
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    tryPair(prev[l], l);
    tryPair(l, next[l]);
  }
  const out: string[] = [];
  for (let k = 0; k !== -1; k = next[k]) out.push(text.slice(starts[k], end[k]));
  return out;
}

/** Words kept in the cache before it is dropped (repeated words are most of a text). */
const CACHE_LIMIT = 1 << 16;

/** Byte-level BPE over a vocabulary and its ranked merges. */
export class BytePairEncoder {
  readonly #ids: ReadonlyMap<string, number>;
  /** Rank of each merge, keyed by its own text `"left right"` (byte characters never include a space). */
  readonly #ranks = new Map<string, number>();
  readonly #ignoreMerges: boolean;
  readonly #cache = new Map<string, readonly number[]>();

  /**
   * Checks the merges against the vocabulary: each must be `left right`
   * with both sides and their concatenation tokens.
   *
   * @param ids token id of each piece
   * @param merges `tokenizer.ggml.merges`: rank = index; a repeated merge keeps its first rank
   * @param ignoreMerges take a word whole when it is a token (Llama 3)
   * @throws {ModelError} (`VOCAB`) for a malformed merge or one that names a missing token
   */
  constructor(ids: ReadonlyMap<string, number>, merges: readonly string[], ignoreMerges = false) {
    this.#ids = ids;
    this.#ignoreMerges = ignoreMerges;
    for (let i = 0; i < merges.length; i++) {
      const m = merges[i];
      // Split at the first space after the first character, as llama.cpp does.
      const at = typeof m === "string" ? m.indexOf(" ", 1) : -1;
      if (at < 0) throw new ModelError("VOCAB", `tokenizer: merge ${i} (${JSON.stringify(m)}) is not "left right"`);
      for (const part of [m.slice(0, at), m.slice(at + 1), m.slice(0, at) + m.slice(at + 1)]) {
        if (!ids.has(part)) throw new ModelError("VOCAB", `tokenizer: merge ${i} (${JSON.stringify(m)}) names ${JSON.stringify(part)}, which is not a token`);
      }
      if (!this.#ranks.has(m)) this.#ranks.set(m, i);
    }
  }

  /** Number of distinct merges. */
  get merges(): number {
    return this.#ranks.size;
  }

  /** Appends the ids of one pre-tokenized word (plain text) to `out`. */
  encode(word: string, out: number[]): void {
    const w = byteEncode(word);
    let ids = this.#cache.get(w);
    if (ids === undefined) {
      ids = this.#merge(w);
      if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
      this.#cache.set(w, ids);
    }
    for (const id of ids) out.push(id);
  }

  #merge(w: string): number[] {
    const whole = this.#ids.get(w);
    if (whole !== undefined && (this.#ignoreMerges || w.length === 1)) return [whole];
    // One symbol per char (byte characters are all in the BMP); the lowest rank merges first.
    const starts = Array.from({ length: w.length }, (_, k) => k);
    const symbols = mergeSymbols(w, starts, (l, r) => {
      const rank = this.#ranks.get(`${l} ${r}`);
      return rank === undefined ? undefined : -rank;
    });
    const ids: number[] = [];
    // A symbol that is not a token (a byte character missing from the vocabulary): upstream looks
    // up each of its UTF-8 bytes as a one-byte piece, which only an ASCII byte can be.
    for (const s of symbols) {
      const id = this.#ids.get(s);
      if (id !== undefined) ids.push(id);
      else for (const b of utf8.encode(s)) if (b < 0x80 && this.#ids.has(String.fromCharCode(b))) ids.push(this.#ids.get(String.fromCharCode(b))!);
    }
    return ids;
  }
}
