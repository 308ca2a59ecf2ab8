/**
 * Word error rate for the Whisper tests: the Levenshtein distance between
 * the reference's words and the hypothesis's, over the reference's word
 * count, after both go through {@linkcode normalizeTranscript}.
 *
 * @module
 */

const ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"];
const TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const SCALES: [number, string][] = [[1e12, "trillion"], [1e9, "billion"], [1e6, "million"], [1e3, "thousand"]];
const ORDINAL_WORDS: Record<string, string> = { one: "first", two: "second", three: "third", five: "fifth", eight: "eighth", nine: "ninth", twelve: "twelfth" };

/** 0…999 in words. */
function below1000(n: number): string[] {
  const out: string[] = [];
  if (n >= 100) out.push(ONES[Math.floor(n / 100)], "hundred");
  const r = n % 100;
  if (r >= 20) out.push(TENS[Math.floor(r / 10)], ...(r % 10 ? [ONES[r % 10]] : []));
  else if (r > 0 || out.length === 0) out.push(ONES[r]);
  return out;
}

/**
 * A non-negative integer in American English words, without "and" or
 * hyphens: 240 → "two hundred forty". Past 10^15 the digits are read one by
 * one.
 *
 * @param n a non-negative integer
 * @returns the words, space-separated
 */
export function numberToWords(n: number): string {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`numberToWords: ${n} is not a non-negative integer`);
  if (n >= 1e15) return digitsToWords(String(n));
  const out: string[] = [];
  let rest = n;
  for (const [value, name] of SCALES) {
    if (rest >= value) {
      out.push(...below1000(Math.floor(rest / value)), name);
      rest %= value;
    }
  }
  if (rest > 0 || out.length === 0) out.push(...below1000(rest));
  return out.join(" ");
}

function digitsToWords(digits: string): string {
  return [...digits].map((d) => ONES[Number(d)]).join(" ");
}

/**
 * A four-digit year as it is said: 1969 → "nineteen sixty nine", 1905 →
 * "nineteen oh five", 1900 → "nineteen hundred", 2009 → "two thousand nine",
 * 2024 → "twenty twenty four".
 *
 * @param y a year from 1100 to 2099, not a multiple of 1000
 * @returns the words
 */
export function yearToWords(y: number): string {
  if (y >= 2000 && y < 2010) return numberToWords(y);
  const hi = Math.floor(y / 100);
  const lo = y % 100;
  return `${numberToWords(hi)} ${lo === 0 ? "hundred" : lo < 10 ? `oh ${ONES[lo]}` : numberToWords(lo)}`;
}

/** The ordinal of a cardinal in words: "twenty one" → "twenty first". */
function ordinal(words: string): string {
  const parts = words.split(" ");
  const last = parts.pop()!;
  const ord = ORDINAL_WORDS[last] ?? (last.endsWith("y") ? `${last.slice(0, -1)}ieth` : `${last}th`);
  return [...parts, ord].join(" ");
}

/** Integer part (commas already removed) and optional decimals in words: "2.5" → "two point five". */
function decimalToWords(int: string, frac?: string): string {
  const i = int.length > 15 ? digitsToWords(int) : numberToWords(Number(int));
  return frac ? `${i} point ${digitsToWords(frac)}` : i;
}

const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ["dollar", "dollars", "cent", "cents"],
  "£": ["pound", "pounds", "penny", "pence"],
  "€": ["euro", "euros", "cent", "cents"],
};

/** "$3.50" → "three dollars and fifty cents"; "$12" → "twelve dollars"; "$0.05" → "five cents". */
function currencyToWords(symbol: string, int: string, frac?: string): string {
  const [one, many, subOne, subMany] = CURRENCIES[symbol];
  const units = Number(int);
  const sub = frac ? Number(frac.padEnd(2, "0").slice(0, 2)) : 0;
  const words: string[] = [];
  if (units > 0 || sub === 0) words.push(`${numberToWords(units)} ${units === 1 ? one : many}`);
  if (sub > 0) words.push(`${numberToWords(sub)} ${sub === 1 ? subOne : subMany}`);
  return words.join(" and ");
}

/** A number: currency sign, integer (maybe with thousands separators), decimals, then "%" or an ordinal suffix. */
const NUMBER = /([$£€])?\s?(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.(\d+))?(?:\s?(%)|(st|nd|rd|th)\b)?/gu;

/**
 * Normalizes a transcript so that written forms of the same speech compare
 * equal. In order:
 *
 * 1. lower case (Unicode-aware);
 * 2. every number to words, read as one token together with its currency
 *    sign, thousands separators, decimals and percent sign or ordinal suffix:
 *    - currency (`$`, `£`, `€`) with its units: "$3.50" → "three dollars and
 *      fifty cents", "£1" → "one pound", "$0.05" → "five cents";
 *    - percentages: "72%" / "72 %" → "seventy two percent";
 *    - ordinals: "3rd" → "third", "21st" → "twenty first";
 *    - decimals, digit by digit after the point: "2.5" → "two point five";
 *    - years: a four-digit number from 1100 to 2099 written without a
 *      separator and not a multiple of 1000 ("1969" → "nineteen sixty nine",
 *      {@linkcode yearToWords}), as a speaker says it and Whisper writes such
 *      speech back; "1,250" stays a count;
 *    - other integers as cardinals without "and" ({@linkcode numberToWords});
 * 3. hyphens and slashes become spaces ("sixty-nine" → "sixty nine"); every
 *    other character that is not a letter, a digit or white space is removed,
 *    apostrophes too ("earth's" → "earths");
 * 4. runs of white space collapse to one space, trimmed.
 *
 * British and American spellings are not unified.
 *
 * @param text a transcript
 * @returns the normalized words, separated by single spaces
 */
export function normalizeTranscript(text: string): string {
  let s = text.toLowerCase();
  s = s.replace(NUMBER, (_, sym: string | undefined, int: string, frac: string | undefined, pct: string | undefined, ord: string | undefined) => {
    const digits = int.replace(/,/g, "");
    if (sym) return ` ${currencyToWords(sym, digits, frac)} `;
    if (pct) return ` ${decimalToWords(digits, frac)} percent `;
    if (ord && !frac) return ` ${ordinal(decimalToWords(digits))} `;
    const n = Number(digits);
    const year = !frac && int.length === 4 && n >= 1100 && n < 2100 && n % 1000 !== 0;
    return ` ${year ? yearToWords(n) : decimalToWords(digits, frac)}${ord ? ` ${ord}` : ""} `;
  });
  s = s.replace(/[-‐‑‒–—/]/g, " ");
  s = s.replace(/[^\p{L}\p{N}\s]/gu, "");
  return s.replace(/\s+/g, " ").trim();
}

/** The alignment counts behind a word error rate. */
export interface WerResult {
  /** (substitutions + deletions + insertions) / reference words; 0 for two empty texts, Infinity for words against an empty reference. */
  readonly wer: number;
  readonly substitutions: number;
  readonly deletions: number;
  readonly insertions: number;
  /** Reference words matched exactly. */
  readonly hits: number;
  /** Words in the (normalized) reference. */
  readonly referenceWords: number;
}

/**
 * The word error rate of `hypothesis` against `reference`: the fewest word
 * substitutions, deletions and insertions that turn the reference into the
 * hypothesis (Levenshtein over words), over the reference's word count.
 *
 * @param reference the correct transcript
 * @param hypothesis the transcript under test
 * @param options `normalize: false` compares the texts split at white space, as they are
 * @returns the rate and its counts (one minimal alignment's; the total is the same for any)
 */
export function wordErrorRate(reference: string, hypothesis: string, options: { normalize?: boolean } = {}): WerResult {
  const norm = options.normalize === false ? (t: string) => t.trim() : normalizeTranscript;
  const ref = norm(reference).split(/\s+/).filter(Boolean);
  const hyp = norm(hypothesis).split(/\s+/).filter(Boolean);
  const n = ref.length, m = hyp.length;
  // d[i][j]: edits between ref[0, i) and hyp[0, j); one flat array.
  const w = m + 1;
  const d = new Uint32Array((n + 1) * w);
  for (let i = 0; i <= n; i++) d[i * w] = i;
  for (let j = 0; j <= m; j++) d[j] = j;
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      const sub = d[(i - 1) * w + j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      d[i * w + j] = Math.min(sub, d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1);
    }
  }
  let substitutions = 0, deletions = 0, insertions = 0, hits = 0;
  for (let i = n, j = m; i > 0 || j > 0;) {
    const here = d[i * w + j];
    if (i > 0 && j > 0 && here === d[(i - 1) * w + j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1)) {
      if (ref[i - 1] === hyp[j - 1]) hits++;
      else substitutions++;
      i--, j--;
    } else if (i > 0 && here === d[(i - 1) * w + j] + 1) deletions++, i--;
    else insertions++, j--;
  }
  const errors = substitutions + deletions + insertions;
  const wer = n === 0 ? (errors === 0 ? 0 : Infinity) : errors / n;
  return { wer, substitutions, deletions, insertions, hits, referenceWords: n };
}
