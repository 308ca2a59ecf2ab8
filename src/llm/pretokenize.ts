/**
 * The pre-tokenizers of byte-level BPE vocabularies: how `tokenizer.ggml.pre`
 * cuts text into words before the merges run, as llama.cpp (release b6673)
 * does it, including where its implementation departs from the regex it
 * names:
 *
 * - A regex that uses `\p{L}`, `\p{N}`, `\p{P}`, `\p{S}` or `\p{M}` runs on a
 *   *collapsed* text: every code point above U+007F becomes one marker for
 *   its class (white space, number, letter, punctuation, mark, symbol,
 *   other), and `\p{X}` matches that marker or a fixed ASCII set. Those ASCII
 *   sets are llama.cpp's, not Unicode's: its `\p{S}` leaves out `~`.
 * - A regex without them runs on the code points, with non-ASCII white space
 *   turned into U+000B so that `\s` (ASCII-only there) still matches it.
 * - The GPT-2 and Llama 3 regexes have hand-written scanners upstream, which
 *   this module reproduces step by step rather than running the regex.
 * - Code-point classes follow llama.cpp's Unicode 15.1 tables: characters
 *   that Unicode 16 and 17 added are "unassigned" there, so they are here
 *   too, whatever the runtime's Unicode version.
 * - Several regexes run in turn, each inside the pieces the previous one
 *   cut (matches and the text between them alike).
 *
 * @module
 */
import { GgmlError } from "../core/errors.ts";

// Code-point classes: a category in the low 3 bits, white space as a flag (llama.cpp keeps both).
const UNASSIGNED = 0, NUMBER = 1, LETTER = 2, PUNCT = 3, MARK = 4, SYMBOL = 5, SEPARATOR = 6, CONTROL = 7;
const CATEGORY = 7, SPACE = 8, KNOWN = 16;

// Code points assigned by Unicode 16.0 and 17.0, as [first, last] pairs: llama.cpp's tables predate them.
const NEWER_THAN_15_1 = (
  "88f 897 c5c cdc 1acf-1add 1ae0-1aeb 1b4e-1b4f 1b7f 1c89-1c8a 20c1 2427-2429 2b96 31e4-31e5 a7cb-a7cf a7d2 a7d4 " +
  "a7da-a7dc a7f1 fbc3-fbd2 fd90-fd91 fdc8-fdce 105c0-105f3 10940-10959 10d40-10d65 10d69-10d85 10d8e-10d8f " +
  "10ec2-10ec7 10ed0-10ed8 10efa-10efc 11380-11389 1138b 1138e 11390-113b5 113b7-113c0 113c2 113c5 113c7-113ca " +
  "113cc-113d5 113d7-113d8 113e1-113e2 116d0-116e3 11b60-11b67 11bc0-11be1 11bf0-11bf9 11db0-11ddb 11de0-11de9 " +
  "11f5a 13460-143fa 16100-16139 16d40-16d79 16ea0-16eb8 16ebb-16ed3 16ff2-16ff6 187f8-187ff 18cff 18d09-18d1e " +
  "18d80-18df2 1cc00-1ccfc 1cd00-1ceb3 1ceba-1ced0 1cee0-1cef0 1e5d0-1e5fa 1e5ff 1e6c0-1e6de 1e6e0-1e6f5 " +
  "1e6fe-1e6ff 1f6d8 1f777-1f77a 1f8b2-1f8bb 1f8c0-1f8c1 1f8d0-1f8d8 1fa54-1fa57 1fa89-1fa8a 1fa8e-1fa8f 1fabe " +
  "1fac6 1fac8 1facd 1fadc 1fadf 1fae9-1faea 1faef 1fbcb-1fbef 1fbfa 2b73a-2b73f 2cea2-2cead 323b0-33479"
).split(" ").map((r) => r.split("-").map((h) => parseInt(h, 16)));

const CATEGORY_TESTS: [RegExp, number][] = [
  [/\p{N}/u, NUMBER], [/\p{L}/u, LETTER], [/\p{P}/u, PUNCT], [/\p{M}/u, MARK],
  [/\p{S}/u, SYMBOL], [/\p{Z}/u, SEPARATOR], [/\p{Cn}/u, UNASSIGNED],
];
const WHITE_SPACE = /\p{White_Space}/u;

/** Classes of the code points met so far (0: not yet looked up); filled lazily, shared. */
let classes: Uint8Array | undefined;

function lookUp(cp: number): number {
  if (cp >= 0x80 && NEWER_THAN_15_1.some(([a, b = a]) => cp >= a && cp <= b)) return UNASSIGNED;
  const ch = String.fromCodePoint(cp);
  let c = CONTROL;
  for (const [re, cat] of CATEGORY_TESTS) {
    if (re.test(ch)) {
      c = cat;
      break;
    }
  }
  return c | (WHITE_SPACE.test(ch) ? SPACE : 0);
}

/** The class of code point `cp` (category bits and the white-space flag), as llama.cpp's tables give it. */
function classOf(cp: number): number {
  classes ??= new Uint8Array(0x110000);
  let c = classes[cp];
  if (c === 0) classes[cp] = c = lookUp(cp) | KNOWN;
  return c;
}

// The collapsed text: one UTF-16 unit per code point. ASCII stays; the rest becomes a marker.
const SPACE_MARK = "\u000B";
const MARKS: Record<number, string> = { [NUMBER]: "\u00D1", [LETTER]: "\u00D2", [PUNCT]: "\u00D3", [MARK]: "\u00D4", [SYMBOL]: "\u00D5" };
const OTHER_MARK = "\u00D0";
// What `\p{X}` means inside a class of a collapsed regex: the marker and llama.cpp's ASCII members.
const CLASS_SETS: Record<string, string> = {
  N: "\\u00D10-9",
  L: "\\u00D2A-Za-z",
  P: "\\u00D3!-#%-*,-/:-;?-@\\[-\\]_\\{\\}",
  M: "\\u00D4",
  S: "\\u00D5\\$\\+<->\\^`\\|",
};
// `\s` of a regex that runs on code points: C's isspace, as std::wregex has it.
const ASCII_SPACE = "\\t\\n\\v\\f\\r ";

/**
 * The JS regex of one of llama.cpp's pre-tokenizer regexes, and whether it
 * runs on the collapsed text. Upstream's own spelling goes in, so the table
 * below reads like llama-vocab.cpp's.
 */
function compile(pattern: string): { re: RegExp; collapsed: boolean } {
  const collapsed = /\\p\{[LNPMS]\}/.test(pattern);
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === "\\") {
      const m = /^\\p\{([LNPMS])\}/.exec(pattern.slice(i));
      const next = pattern[i + 1];
      if (m) {
        out += inClass ? CLASS_SETS[m[1]] : `[${CLASS_SETS[m[1]]}]`;
        i += m[0].length - 1;
      } else if (!collapsed && (next === "s" || next === "S")) {
        out += inClass ? ASCII_SPACE : next === "s" ? `[${ASCII_SPACE}]` : `[^${ASCII_SPACE}]`;
        i++;
      } else {
        out += ch + next;
        i++;
      }
      continue;
    }
    if (ch === "[" && !inClass) inClass = true;
    else if (ch === "]" && inClass) inClass = false;
    out += ch;
  }
  // Collapsed text is one unit per code point already; code points need the u flag for astral ones.
  return { re: new RegExp(out, collapsed ? "g" : "gu"), collapsed };
}

/** A text being split: its code points, their classes, and lazily the views the regexes run on. */
class Text {
  readonly cps: number[] = [];
  readonly cls: Uint8Array;
  /** UTF-16 offset of each code point, and of the end. */
  readonly at: Int32Array;
  #collapsed?: string;
  #spaced?: string;
  #cpIndex?: Int32Array;

  constructor(readonly text: string) {
    for (const ch of text) this.cps.push(ch.codePointAt(0)!);
    const n = this.cps.length;
    this.cls = new Uint8Array(n);
    this.at = new Int32Array(n + 1);
    for (let i = 0, u = 0; i < n; i++) {
      this.cls[i] = classOf(this.cps[i]);
      this.at[i] = u;
      u += this.cps[i] > 0xffff ? 2 : 1;
    }
    this.at[n] = text.length;
  }

  /** One unit per code point: ASCII as itself, the rest as its class's marker. */
  get collapsed(): string {
    if (this.#collapsed === undefined) {
      const parts: string[] = new Array(this.cps.length);
      for (let i = 0; i < this.cps.length; i++) {
        const cp = this.cps[i], c = this.cls[i];
        parts[i] = cp < 0x80 ? String.fromCharCode(cp) : c & SPACE ? SPACE_MARK : MARKS[c & CATEGORY] ?? OTHER_MARK;
      }
      this.#collapsed = parts.join("");
    }
    return this.#collapsed;
  }

  /** The text with non-ASCII white space as U+000B (same UTF-16 layout: all of it is in the BMP). */
  get spaced(): string {
    this.#spaced ??= this.text.replace(/[^\x00-\x7F]/g, (ch) => (classOf(ch.charCodeAt(0)) & SPACE ? SPACE_MARK : ch));
    return this.#spaced;
  }

  /** Code-point index of each UTF-16 offset that starts a code point (and of the end). */
  get cpIndex(): Int32Array {
    if (this.#cpIndex === undefined) {
      this.#cpIndex = new Int32Array(this.text.length + 1);
      for (let i = 0; i <= this.cps.length; i++) this.#cpIndex[this.at[i]] = i;
    }
    return this.#cpIndex;
  }
}

/** One split step: the lengths (in code points) of the pieces of each piece it is given. */
type Step = (t: Text, pieces: number[]) => number[];

function regexStep(pattern: string): Step {
  const { re, collapsed } = compile(pattern);
  return (t, pieces) => {
    const out: number[] = [];
    let start = 0;
    for (const len of pieces) {
      // Each piece alone: a lookahead such as (?!\S) sees the piece's end, not the next piece.
      const s = collapsed ? t.collapsed.slice(start, start + len) : t.spaced.slice(t.at[start], t.at[start + len]);
      const cp = (u: number) => (collapsed ? u : t.cpIndex[t.at[start] + u] - start);
      let last = 0;
      re.lastIndex = 0;
      for (let m = re.exec(s); m !== null; m = re.exec(s)) {
        if (m[0].length === 0) {
          re.lastIndex++; // none of the supported regexes matches empty; never loop on one that would
          continue;
        }
        const from = cp(m.index), to = cp(m.index + m[0].length);
        if (from > last) out.push(from - last);
        out.push(to - from);
        last = to;
      }
      if (last < len) out.push(len - last);
      start += len;
    }
    return out;
  };
}

const lower = (cp: number) => (cp >= 0x41 && cp <= 0x5a ? cp + 32 : cp);

/**
 * llama.cpp's scanners for the GPT-2 and Llama 3 regexes. `llama3` selects
 * the second: case-insensitive contractions, a letter run may take one
 * leading non-letter, numbers in threes, punctuation takes trailing line
 * breaks, and white space up to its last line break comes first.
 */
function scannerStep(llama3: boolean): Step {
  return (t, pieces) => {
    const out: number[] = [];
    const { cps, cls } = t;
    let ini = 0;
    for (const len of pieces) {
      const end = ini + len;
      const inside = (p: number) => p >= ini && p < end;
      const cat = (p: number) => (inside(p) ? cls[p] & CATEGORY : -1);
      const isL = (p: number) => cat(p) === LETTER;
      const isN = (p: number) => cat(p) === NUMBER;
      const isWs = (p: number) => inside(p) && (cls[p] & SPACE) !== 0;
      // [^\s\p{L}\p{N}]: anything else, inside the piece.
      const isOther = (p: number) => inside(p) && !isWs(p) && !isL(p) && !isN(p);
      let prev = ini;
      const cut = (p: number) => {
        if (p > prev) out.push(p - prev);
        prev = p;
      };
      let pos = ini;
      while (pos < end) {
        const c = cps[pos];
        if (c === 0x27 && pos + 1 < end) { // 's 't 'm 'd, then 're 've 'll
          const a = llama3 ? lower(cps[pos + 1]) : cps[pos + 1];
          if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) {
            cut(pos += 2);
            continue;
          }
          if (pos + 2 < end) {
            const b = llama3 ? lower(cps[pos + 2]) : cps[pos + 2];
            if (((a === 0x72 || a === 0x76) && b === 0x65) || (a === 0x6c && b === 0x6c)) {
              cut(pos += 3);
              continue;
            }
          }
        }
        const q = c === 0x20 ? pos + 1 : pos;
        if (llama3) {
          if (c !== 0x0d && c !== 0x0a && !isN(pos) && (isL(pos) || isL(pos + 1))) {
            pos++;
            while (isL(pos)) pos++;
            cut(pos);
            continue;
          }
          if (isN(pos)) {
            for (let run = pos; isN(pos);) if (++pos - run >= 3) cut(run = pos);
            cut(pos);
            continue;
          }
          // Upstream tests the class of q but only that pos is inside: a final lone space qualifies.
          if (!isWs(q) && !isL(q) && !isN(q)) {
            pos = q;
            while (isOther(pos)) pos++;
            while (inside(pos) && (cps[pos] === 0x0d || cps[pos] === 0x0a)) pos++;
            cut(pos);
            continue;
          }
        } else {
          if (isL(q) || isN(q)) {
            const same = isL(q) ? isL : isN;
            pos = q;
            while (same(pos)) pos++;
            cut(pos);
            continue;
          }
          if (isOther(q)) {
            pos = q;
            while (isOther(pos)) pos++;
            cut(pos);
            continue;
          }
        }
        let n = 0, afterBreak = 0;
        for (; isWs(pos + n); n++) if (llama3 && (cps[pos + n] === 0x0d || cps[pos + n] === 0x0a)) afterBreak = pos + n + 1;
        if (afterBreak > 0) cut(pos = afterBreak); // \s*[\r\n]+
        else if (n > 1 && pos + n < end) cut(pos += n - 1); // \s+(?!\S): the last space goes with what follows
        else if (n > 0) cut(pos += n); // \s+
        else cut(++pos);
      }
      ini = end;
    }
    return out;
  };
}

const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`;
const CONTRACTIONS = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`;
const LLAMA3 = String.raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const QWEN2 = String.raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const PUNCT_RUN = String.raw`[\p{P}\$\+<=>\^~\|]+`;
const CASED = String.raw`((?=[\p{L}])([^a-z]))`, UNCASED = String.raw`((?=[\p{L}])([^A-Z]))`;
const NO_SPLIT = " ?[^(\\s|.,!?…。，、।۔،)]+";

/** The regex list of each pre-tokenizer type (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_*`). */
const TYPES: Record<string, readonly string[]> = {
  default: [PUNCT_RUN, GPT2, String.raw`\p{N}+`, "[0-9][0-9][0-9]"],
  llama3: [LLAMA3],
  "deepseek-coder": ["[\r\n]", String.raw`\s?\p{L}+`, String.raw`\s?\p{P}+`, "[一-龥ࠀ-一가-퟿]+", String.raw`\p{N}`],
  "deepseek-v3": [
    String.raw`\p{N}{1,3}`,
    "[一-龥぀-ゟ゠-ヿ]+",
    String.raw`[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" +
    String.raw`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  ],
  falcon: [String.raw`[\p{P}\$\+<=>\^~\|` + "`]+", GPT2, "[0-9][0-9][0-9]"],
  starcoder: [String.raw`\p{N}`, GPT2],
  "gpt-2": [GPT2],
  qwen2: [QWEN2],
  poro: [NO_SPLIT],
  viking: [NO_SPLIT, String.raw`\p{N}`],
  tekken: [String.raw`[^\r\n\p{L}\p{N}]?${CASED}*${UNCASED}+|[^\r\n\p{L}\p{N}]?${CASED}+${UNCASED}*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`],
  "gpt-4o": [
    String.raw`[^\r\n\p{L}\p{N}]?${CASED}*${UNCASED}+${CONTRACTIONS}?|[^\r\n\p{L}\p{N}]?${CASED}+${UNCASED}*${CONTRACTIONS}?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  ],
  bailingmoe: [String.raw`'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`],
  "seed-coder": [String.raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`],
};

/** What a `pre` name selects: its type and the flags llama.cpp sets with it. */
interface PreSpec {
  readonly type: keyof typeof TYPES;
  /** `clean_spaces`: detokenize drops the space before `.,!?` and around some apostrophes. */
  readonly clean: boolean;
  /** Take a word whole when it is a token (`ignore_merges`). */
  readonly ignoreMerges?: boolean;
  /** The default of `add_bos_token` (false otherwise). */
  readonly addBos?: boolean;
  /** BOS is "none" unless the file names one. */
  readonly noBos?: boolean;
}

const spec = (type: keyof typeof TYPES, clean: boolean, more: Partial<PreSpec> = {}): PreSpec => ({ type, clean, ...more });
const LLAMA3_SPEC = spec("llama3", true, { ignoreMerges: true, addBos: true });
const names = (list: string, s: PreSpec) => Object.fromEntries(list.split(" ").map((n) => [n, s]));

/** Every `tokenizer.ggml.pre` value llama.cpp b6673 accepts and this module implements. */
const PRES: Record<string, PreSpec> = {
  default: spec("default", true),
  ...names("llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2", LLAMA3_SPEC),
  ...names("dbrx smaug-bpe", spec("llama3", true)),
  ...names("glm4 chatglm-bpe", spec("llama3", true, { noBos: true })),
  "deepseek-coder": spec("deepseek-coder", false),
  ...names("deepseek-v3 hunyuan-dense", spec("deepseek-v3", false)),
  falcon: spec("falcon", true),
  ...names("starcoder refact codeshell exaone minerva-7b", spec("starcoder", true)),
  ...names("command-r smollm", spec("starcoder", false)),
  ...names(
    "gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum jina-v1-en jina-v2-code roberta-bpe mpt olmo jais exaone4",
    spec("gpt-2", true),
  ),
  trillion: spec("gpt-2", false),
  ...names("qwen2 deepseek-r1-qwen hunyuan grok-2", spec("qwen2", false)),
  ...names("stablelm2 megrez", spec("qwen2", true)),
  "poro-chat": spec("poro", false),
  ...names("bloom gpt3-finnish", spec("poro", true)),
  viking: spec("viking", false),
  tekken: spec("tekken", false, { ignoreMerges: true, addBos: true }),
  ...names("gpt-4o llama4", spec("gpt-4o", false)),
  ...names("bailingmoe llada-moe", spec("bailingmoe", false)),
  "seed-coder": spec("seed-coder", false),
};

/** The `pre` values llama.cpp b6673 knows that are not implemented (they would need its extra code paths). */
const KNOWN_UNSUPPORTED = ["deepseek-llm", "chameleon", "superbpe", "kimi-k2"];

/** A `tokenizer.ggml.pre` value this library does not implement (or llama.cpp does not know). */
export class UnsupportedPreTokenizerError extends GgmlError {
  /** The value asked for. */
  readonly pre: string;
  /** The values that are implemented. */
  readonly supported: readonly string[];
  /**
   * Made by the library when it throws.
   *
   * @param pre the `tokenizer.ggml.pre` value asked for
   */
  constructor(pre: string) {
    const known = KNOWN_UNSUPPORTED.includes(pre) ? "is not implemented" : "is not a pre-tokenizer llama.cpp b6673 knows";
    super("UNSUPPORTED", `tokenizer: tokenizer.ggml.pre ${JSON.stringify(pre)} ${known}; supported: ${SUPPORTED_PRES.join(", ")}`);
    this.pre = pre;
    this.supported = SUPPORTED_PRES;
  }
}

/** Every `tokenizer.ggml.pre` value {@linkcode preTokenizer} accepts. */
export const SUPPORTED_PRES: readonly string[] = Object.freeze(Object.keys(PRES));

/** A pre-tokenizer: the word split of one `tokenizer.ggml.pre` value, with the flags llama.cpp ties to it. */
export interface PreTokenizer {
  /** The `pre` value. */
  readonly name: string;
  /** The type it maps to (several names share one): `llama3`, `qwen2`, `gpt-2`, … */
  readonly type: string;
  /** Detokenizing cleans spaces (llama.cpp's `clean_spaces`). */
  readonly cleanSpaces: boolean;
  /** A word that is a token is taken whole (llama.cpp's `ignore_merges`). */
  readonly ignoreMerges: boolean;
  /** Add BOS when the file does not say (llama.cpp's default `add_bos` for this type). */
  readonly addBos: boolean;
  /** llama.cpp's default BOS for this type is "none". */
  readonly noBos: boolean;
  /** The words of `text`, in order; their concatenation is `text`. */
  split(text: string): string[];
}

const compiled = new Map<string, Step>();
function stepOf(pattern: string): Step {
  let s = compiled.get(pattern);
  if (!s) {
    // Upstream picks its scanners by the exact regex string; so does this.
    s = pattern === GPT2 ? scannerStep(false) : pattern === LLAMA3 ? scannerStep(true) : regexStep(pattern);
    compiled.set(pattern, s);
  }
  return s;
}

/**
 * The pre-tokenizer of a `tokenizer.ggml.pre` value (`""` means
 * `default`, as llama.cpp reads a file without the key).
 *
 * @throws {UnsupportedPreTokenizerError} for a value not in {@linkcode SUPPORTED_PRES}
 */
export function preTokenizer(pre: string): PreTokenizer {
  const name = pre === "" ? "default" : pre;
  const s = Object.hasOwn(PRES, name) ? PRES[name] : undefined;
  if (!s) throw new UnsupportedPreTokenizerError(pre);
  const steps = TYPES[s.type].map(stepOf);
  return {
    name,
    type: s.type,
    cleanSpaces: s.clean,
    ignoreMerges: s.ignoreMerges ?? false,
    addBos: s.addBos ?? false,
    noBos: s.noBos ?? false,
    split(text: string): string[] {
      if (text === "") return [];
      const t = new Text(text);
      let pieces = [t.cps.length];
      for (const step of steps) pieces = step(t, pieces);
      const words: string[] = [];
      let i = 0;
      for (const len of pieces) {
        if (len > 0) words.push(text.slice(t.at[i], t.at[i + len]));
        i += len;
      }
      return words;
    },
  };
}
