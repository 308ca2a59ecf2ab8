// The word error rate and its normalizer, on cases worked out by hand.
import { test } from "node:test";
import assert from "node:assert/strict";
import { normalizeTranscript, numberToWords, wordErrorRate, yearToWords } from "./wer.ts";
import { speechClips } from "../../scripts/speech.mjs";

test("numbers in words: cardinals without 'and', years as said", () => {
  const cases: [number, string][] = [
    [0, "zero"], [7, "seven"], [13, "thirteen"], [20, "twenty"], [42, "forty two"], [100, "one hundred"],
    [240, "two hundred forty"], [1001, "one thousand one"], [12345, "twelve thousand three hundred forty five"],
    [2_000_000_019, "two billion nineteen"],
  ];
  for (const [n, w] of cases) assert.equal(numberToWords(n), w);
  assert.equal(yearToWords(1969), "nineteen sixty nine");
  assert.equal(yearToWords(1905), "nineteen oh five");
  assert.equal(yearToWords(1900), "nineteen hundred");
  assert.equal(yearToWords(2009), "two thousand nine");
  assert.equal(yearToWords(2024), "twenty twenty four");
  assert.throws(() => numberToWords(-1), RangeError);
  assert.throws(() => numberToWords(1.5), RangeError);
});

test("normalizer: case, punctuation, hyphens, apostrophes, white space", () => {
  assert.equal(normalizeTranscript("  Hello,   World! It's  A well-known  fact… "), "hello world its a well known fact");
  assert.equal(normalizeTranscript("Marie Curie — Warsaw/Paris."), "marie curie warsaw paris");
  assert.equal(normalizeTranscript(""), "");
});

test("normalizer: years, amounts, decimals, ordinals, percentages, thousands separators", () => {
  const cases: [string, string][] = [
    ["In 1969.", "in nineteen sixty nine"],
    ["in nineteen sixty-nine", "in nineteen sixty nine"],
    ["It costs $3.50.", "it costs three dollars and fifty cents"],
    ["$12, $1 and $0.05", "twelve dollars one dollar and five cents"],
    ["£2.5 or €1,250", "two pounds and fifty pence or one thousand two hundred fifty euros"],
    ["2.5 kilograms", "two point five kilograms"],
    ["3.14", "three point one four"],
    ["the 3rd, 21st and 100th", "the third twenty first and one hundredth"],
    ["the 12th and 40th", "the twelfth and fortieth"],
    ["72% and 2.5 %", "seventy two percent and two point five percent"],
    ["1,250 people in 2000", "one thousand two hundred fifty people in two thousand"],
    ["240 pages", "two hundred forty pages"],
  ];
  for (const [text, want] of cases) assert.equal(normalizeTranscript(text), want, text);
});

test("WER: identical texts, a substitution, a deletion, an insertion", () => {
  const ref = "the quick brown fox jumps over the lazy dog"; // 9 words
  assert.deepEqual(wordErrorRate(ref, ref), { wer: 0, substitutions: 0, deletions: 0, insertions: 0, hits: 9, referenceWords: 9 });
  // "quick" → "quack": 1 substitution / 9.
  assert.deepEqual(wordErrorRate(ref, "the quack brown fox jumps over the lazy dog"), { wer: 1 / 9, substitutions: 1, deletions: 0, insertions: 0, hits: 8, referenceWords: 9 });
  // "brown" dropped: 1 deletion / 9.
  assert.deepEqual(wordErrorRate(ref, "the quick fox jumps over the lazy dog"), { wer: 1 / 9, substitutions: 0, deletions: 1, insertions: 0, hits: 8, referenceWords: 9 });
  // "very" added: 1 insertion / 9.
  assert.deepEqual(wordErrorRate(ref, "the quick brown fox jumps over the very lazy dog"), { wer: 1 / 9, substitutions: 0, deletions: 0, insertions: 1, hits: 9, referenceWords: 9 });
  // All three: "the quick fox jumped over the very lazy dog": brown deleted, jumps→jumped, very inserted.
  const r = wordErrorRate(ref, "the quick fox jumped over the very lazy dog");
  assert.deepEqual([r.substitutions, r.deletions, r.insertions, r.hits], [1, 1, 1, 7]);
  assert.equal(r.wer, 3 / 9);
});

test("WER: the hypothesis longer than the reference can exceed 1; empty texts", () => {
  assert.equal(wordErrorRate("yes", "no no no").wer, 3); // 1 substitution + 2 insertions
  assert.equal(wordErrorRate("a b c", "").wer, 1); // 3 deletions
  assert.equal(wordErrorRate("", "").wer, 0);
  assert.equal(wordErrorRate("", "words").wer, Infinity);
  assert.equal(wordErrorRate("...", "!").wer, 0); // nothing left after normalization
});

test("WER: numbers normalized on both sides; normalize: false compares raw tokens", () => {
  assert.equal(wordErrorRate("Neil Armstrong walked on the Moon in 1969.", "neil armstrong walked on the moon in nineteen sixty-nine").wer, 0);
  assert.equal(wordErrorRate("The ticket costs $3.50.", "The ticket costs three dollars and fifty cents").wer, 0);
  assert.equal(wordErrorRate("About 72% of it", "about seventy two per cent of it").wer, 2 / 6); // percent → per cent: 1 sub + 1 ins
  assert.equal(wordErrorRate("The 3rd edition", "the third edition").wer, 0);
  const raw = wordErrorRate("In 1969.", "in 1969", { normalize: false });
  assert.deepEqual([raw.substitutions, raw.referenceWords], [2, 2]);
});

test("every speech clip's spoken text and its written reference normalize to the same words", () => {
  for (const c of speechClips()) assert.equal(normalizeTranscript(c.text), normalizeTranscript(c.reference), c.id);
});
