// The Gemma tokenizer of src/llm/tokenizer.ts against llama.cpp itself: every string of
// tests/fixtures/llm/llama_cpp.json (token ids that llama.cpp b6673 produced for the same GGUF,
// written by tests/fixtures/llm/llama_cpp_fixture.mjs) must encode to exactly those ids, and
// decode back to llama.cpp's text. Needs the Gemma 3 270M file in the model cache (skipped with a
// message otherwise: `npm start` or src/llm/fetch.ts gets it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readGguf } from "../mod.ts";
import { Tokenizer, TokenType } from "../src/llm/tokenizer.ts";
import { gemmaModel } from "./llm_model.ts";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");

interface FixtureString {
  name: string;
  text: string;
  ids: number[];
  idsParseSpecial: number[];
  withBos: number[];
  decoded: string;
  roundTrips: boolean;
  decodedParseSpecial: string;
  roundTripsParseSpecial: boolean;
}
interface FixtureGeneration { name: string; text: string; parseSpecial: boolean; prompt: number[] }
interface Fixture {
  model: { file: string; bytes: number; sha256: string };
  tokenizer: { bos: number; eos: number; addBos: boolean };
  strings: FixtureString[];
  generations: FixtureGeneration[];
}
const fixture: Fixture = JSON.parse(readFileSync(join(here, "fixtures", "llm", "llama_cpp.json"), "utf8"));

const model = await gemmaModel();
const modelPath = model.path;
const missing = model.skip || (statSync(modelPath).size !== fixture.model.bytes ? `the cached ${fixture.model.file} is not the fixture's file (size differs)` : "");
if (missing) console.warn(`skipping the llama.cpp tokenizer checks: ${missing}`);

let cached: Tokenizer | undefined;
let vocabCache: { tokens: string[]; scores: Float32Array; types: Int32Array } | undefined;
function tokenizer(): Tokenizer {
  if (!cached) {
    const file = readGguf(modelPath);
    cached = Tokenizer.fromGguf(file);
    vocabCache = {
      tokens: file.get("tokenizer.ggml.tokens") as string[],
      scores: file.get("tokenizer.ggml.scores") as Float32Array,
      types: file.get("tokenizer.ggml.token_type") as Int32Array,
    };
  }
  return cached;
}

/** The strings whose ids differ from llama.cpp's, with both sequences. */
function mismatches(tok: Tokenizer): string[] {
  const bad: string[] = [];
  for (const s of fixture.strings) {
    const cases: [string, number[], number[]][] = [
      ["plain", tok.encode(s.text, { addBos: false }), s.ids],
      ["parseSpecial", tok.encode(s.text, { addBos: false, parseSpecial: true }), s.idsParseSpecial],
      ["bos", tok.encode(s.text), s.withBos],
    ];
    for (const [mode, got, want] of cases) {
      if (got.length !== want.length || got.some((v, i) => v !== want[i])) bad.push(`${s.name} (${mode}): got ${JSON.stringify(got)}, llama.cpp ${JSON.stringify(want)}`);
    }
  }
  return bad;
}

const skip = missing || false;

test("the vocabulary and special ids read from the GGUF are llama.cpp's", { skip }, () => {
  const tok = tokenizer();
  assert.equal(tok.vocabSize, 262144);
  assert.equal(tok.bos, fixture.tokenizer.bos);
  assert.equal(tok.eos, fixture.tokenizer.eos);
  assert.equal(tok.addBos, fixture.tokenizer.addBos);
  assert.equal(tok.addSpacePrefix, false); // Gemma's file: tokenizer.ggml.add_space_prefix = false
  assert.equal(tok.tokenText(105), "<start_of_turn>");
  assert.ok(tok.isControl(105) && tok.isControl(tok.bos) && !tok.isControl(107));
  assert.equal(tok.tokenType(107), TokenType.USER_DEFINED); // "\n"
  assert.ok(tok.isEog(tok.eos) && tok.isEog(tok.tokenId("<end_of_turn>")!) && !tok.isEog(tok.bos));
  assert.throws(() => tok.isControl(262144), RangeError);
  // Six pieces start with U+FEFF (e.g. 237922 is "\uFEFF" alone): a reader whose TextDecoder drops a
  // leading BOM (the default, ignoreBOM: false) turns them into other pieces or empty ones.
  assert.equal(tok.tokenText(237922), "\uFEFF", "readGguf dropped the leading U+FEFF of a string value (a TextDecoder without ignoreBOM: true)");
});

test(`encode gives llama.cpp's ids for all ${fixture.strings.length} fixture strings (plain, parseSpecial, with BOS)`, { skip }, () => {
  const bad = mismatches(tokenizer());
  assert.deepEqual(bad, [], `${bad.length} mismatches:\n${bad.join("\n")}`);
});

test("the generation prompts encode to llama.cpp's prompt ids", { skip }, () => {
  const tok = tokenizer();
  for (const g of fixture.generations) {
    assert.deepEqual(tok.encode(g.text, { parseSpecial: g.parseSpecial }), g.prompt, g.name);
  }
});

test("parseSpecial: control-token text becomes the token only when asked", { skip }, () => {
  const tok = tokenizer();
  const s = fixture.strings.find((x) => x.name === "chat_template")!;
  assert.ok(s.idsParseSpecial.includes(105) && !s.ids.includes(105));
  assert.deepEqual(tok.encode(s.text, { addBos: false, parseSpecial: true }).slice(0, 2), [105, 2364]); // <start_of_turn>, "user"
});

test("decode gives llama.cpp's text, so decode(encode(s)) == s wherever llama.cpp round-trips", { skip }, () => {
  const tok = tokenizer();
  let roundTrips = 0;
  for (const s of fixture.strings) {
    assert.equal(tok.decode(s.ids), s.decoded, s.name);
    assert.equal(tok.decode(s.idsParseSpecial, { special: true }), s.decodedParseSpecial, `${s.name} (special)`);
    if (s.roundTrips) {
      assert.equal(tok.decode(tok.encode(s.text, { addBos: false })), s.text, s.name);
      roundTrips++;
    }
    // BOS renders as nothing unless special tokens are asked for.
    assert.equal(tok.decode(tok.encode(s.text)), s.decoded, `${s.name} (bos)`);
  }
  assert.ok(roundTrips >= fixture.strings.length - 2, `only ${roundTrips} strings round-trip`);
  // U+2581 in the input is a space to SentencePiece: llama.cpp does not round-trip it either.
  assert.ok(!fixture.strings.find((x) => x.name === "lower_one_eighth_block")!.roundTrips);
});

test("the streaming decoder yields only complete characters when one spans byte tokens", { skip }, () => {
  const tok = tokenizer();
  for (const name of ["emoji", "cjk", "rare_bytes", "accents"]) {
    const s = fixture.strings.find((x) => x.name === name)!;
    const d = tok.decoder();
    const parts = s.ids.map((id) => d.push(id));
    const tail = d.flush();
    assert.equal(parts.join("") + tail, s.text, name);
    assert.equal(tail, "", name);
    for (const p of parts) {
      assert.ok(!p.includes("\uFFFD") && !/\p{Surrogate}/u.test(p), `${name}: a piece is not complete UTF-8: ${JSON.stringify(p)}`);
    }
    if (name === "rare_bytes") {
      // The 4-byte characters here are not in the vocabulary: byte tokens, held until complete.
      assert.ok(s.ids.some((id) => tok.tokenType(id) === TokenType.BYTE));
      assert.ok(parts.filter((p) => p === "").length >= 3, "no piece was held back");
    }
  }
  // A character cut short: held by push, U+FFFD on flush, and the decoder starts afresh.
  const ids = tok.encode("𓀀", { addBos: false });
  assert.equal(ids.length, 4);
  const d = tok.decoder();
  assert.equal(d.push(ids[0]) + d.push(ids[1]), "");
  assert.equal(d.flush(), "\uFFFD");
  assert.equal(ids.map((id) => d.push(id)).join("") + d.flush(), "𓀀");
});

test("lone surrogates are encoded as U+FFFD, as the UTF-8 conversion of llama.cpp's input does", { skip }, () => {
  const tok = tokenizer();
  assert.deepEqual(tok.encode("a\uD800b", { addBos: false }), tok.encode("a\uFFFDb", { addBos: false }));
});

test("encode is not quadratic: 200k characters of mixed text in a few seconds", { skip }, () => {
  const tok = tokenizer();
  const unit = fixture.strings.filter((s) => s.roundTrips && s.name !== "empty").map((s) => s.text).join(" ");
  // One long line too (no newline splits it into fragments): the merge queue sees every symbol.
  const text = unit.repeat(Math.ceil(100_000 / unit.length)) + unit.replaceAll("\n", " ").repeat(Math.ceil(100_000 / unit.length));
  const t0 = performance.now();
  const ids = tok.encode(text, { addBos: false });
  const ms = performance.now() - t0;
  assert.equal(tok.decode(ids), text);
  assert.ok(ms < 30_000, `encoding ${text.length} characters took ${ms.toFixed(0)} ms`);
});

test("the fixture check can fail: merging by the wrong priority disagrees with llama.cpp", { skip }, () => {
  tokenizer();
  const v = vocabCache!;
  const common = { tokens: v.tokens, types: v.types, bos: fixture.tokenizer.bos, eos: fixture.tokenizer.eos, unk: 3, addBos: true, addSpacePrefix: false };
  // Lowest score first instead of highest.
  const wrong = new Tokenizer({ ...common, scores: v.scores.map((x) => -x) });
  assert.ok(mismatches(wrong).length > 5, "reversed priorities went unnoticed");
  // No scores at all: every merge ties, and the leftmost pair wins.
  assert.ok(mismatches(new Tokenizer({ ...common })).length > 5, "unscored merges went unnoticed");
  // The space prefix llama.cpp's SPM default would add.
  assert.ok(mismatches(new Tokenizer({ ...common, scores: v.scores, addSpacePrefix: true })).length > 5);
  // And the same vocabulary as given agrees: the differences above come from the change.
  assert.deepEqual(mismatches(new Tokenizer({ ...common, scores: v.scores })), []);
});
