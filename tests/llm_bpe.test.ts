// The tokenizers of src/llm/tokenizer.ts (byte-level BPE: bpe.ts, pretokenize.ts; and SPM) against
// llama.cpp itself: every string of tests/fixtures/llm/tokenizer_corpus.json must encode to
// exactly the ids llama.cpp b6673 gave (parse_special false and true) and decode to its text, for
// SmolLM2 (pre "smollm"), Qwen2.5-Coder ("qwen2"), Gemma 3 (SPM), and Qwen's vocabulary under
// the other pre-tokenizers (tokenizer_<model>@<pre>.json: llama.cpp ran vocabulary-only copies of
// the file with tokenizer.ggml.pre changed; here the same vocabulary is read with the pre
// overridden). Fixtures: tests/fixtures/llm/tokenizer_fixture.mjs. A missing model file skips its
// checks with the reason; the unit tests at the end need none.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type GgufFile, ModelError, readGguf } from "../mod.ts";
import { SUPPORTED_PRES, Tokenizer, TokenType, UnsupportedPreTokenizerError } from "../src/llm/tokenizer.ts";
import type { ModelId } from "../src/llm/fetch.ts";
import { llmModel } from "./llm_model.ts";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, "fixtures", "llm");

type Row = [number[], number[] | null, string | null, string | null];
interface Fixture {
  model: { id: ModelId; file: string; bytes: number };
  pre?: string;
  tokenizer: { bos: number; eos: number; addBos: boolean; addEos: boolean; eog: number[]; attrs: Record<string, string>; vocabSize: number };
  strings: Row[];
}
const corpus: [string, string][] = JSON.parse(readFileSync(join(fixtures, "tokenizer_corpus.json"), "utf8"));
const files = readdirSync(fixtures).filter((f) => /^tokenizer_.+\.json$/.test(f) && f !== "tokenizer_corpus.json").sort();

// llama_token_attr of each TokenType.
const ATTR: Record<number, number> = {
  [TokenType.UNDEFINED]: 0, [TokenType.UNKNOWN]: 1, [TokenType.UNUSED]: 2, [TokenType.NORMAL]: 4,
  [TokenType.CONTROL]: 8, [TokenType.USER_DEFINED]: 16, [TokenType.BYTE]: 32,
};

const ggufs = new Map<string, GgufFile>();
async function file(id: ModelId, bytes: number): Promise<GgufFile | string> {
  const m = await llmModel(id);
  if (m.skip) return m.skip;
  if (statSync(m.path).size !== bytes) return `the cached file of ${id} is not the fixture's (size differs)`;
  let f = ggufs.get(m.path);
  if (!f) ggufs.set(m.path, (f = readGguf(m.path)));
  return f;
}

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const show = (s: string) => JSON.stringify(s.length > 80 ? s.slice(0, 80) + "…" : s);

/** Every difference from llama.cpp's ids and texts, one line each. */
function mismatches(tok: Tokenizer, fx: Fixture): string[] {
  const bad: string[] = [];
  corpus.forEach(([name, text], i) => {
    const [ids, idsSpecial, decoded, decodedSpecial] = fx.strings[i];
    const wantSpecial = idsSpecial ?? ids;
    const cases: [string, number[], number[]][] = [
      ["plain", tok.encode(text, { addBos: false, addEos: false }), ids],
      ["parseSpecial", tok.encode(text, { addBos: false, addEos: false, parseSpecial: true }), wantSpecial],
      // llama_tokenize(add_special = true): the file's BOS / EOS around the same ids.
      ["addSpecial", tok.encode(text), [...(fx.tokenizer.addBos ? [fx.tokenizer.bos] : []), ...ids, ...(fx.tokenizer.addEos ? [fx.tokenizer.eos] : [])]],
    ];
    for (const [mode, got, want] of cases) {
      if (!same(got, want)) bad.push(`${name} ${show(text)} (${mode}): got ${JSON.stringify(got)}, llama.cpp ${JSON.stringify(want)}`);
    }
    const texts: [string, string, string][] = [
      ["decode", tok.decode(ids), decoded ?? text],
      ["decode special", tok.decode(wantSpecial, { special: true }), decodedSpecial ?? text],
    ];
    for (const [mode, got, want] of texts) if (got !== want) bad.push(`${name} (${mode}): got ${show(got)}, llama.cpp ${show(want)}`);
  });
  return bad;
}

function ranges(s: string): number[] {
  if (s === "") return [];
  return s.split(",").flatMap((r) => {
    const [a, b = a] = r.split("-").map(Number);
    return Array.from({ length: b - a + 1 }, (_, k) => a + k);
  });
}

const loaded = new Map<string, Tokenizer>();
for (const name of files) {
  const fx: Fixture = JSON.parse(readFileSync(join(fixtures, name), "utf8"));
  const label = name.slice("tokenizer_".length, -".json".length);
  const f = await file(fx.model.id, fx.model.bytes);
  const skip = typeof f === "string" ? f : false;
  if (skip) console.warn(`skipping the llama.cpp checks of ${label}: ${skip}`);
  const tokenizer = () => {
    let t = loaded.get(label);
    if (!t) loaded.set(label, (t = Tokenizer.fromGguf(f as GgufFile, fx.pre === undefined ? {} : { pre: fx.pre })));
    return t;
  };

  test(`${label}: the special ids, defaults, token types and end-of-generation set are llama.cpp's`, { skip }, () => {
    const tok = tokenizer();
    const t = fx.tokenizer;
    assert.equal(fx.strings.length, corpus.length, "the fixture is not of this corpus: rerun tokenizer_fixture.mjs");
    assert.equal(tok.vocabSize, t.vocabSize);
    assert.deepEqual([tok.bos, tok.eos, tok.addBos, tok.addEos], [t.bos, t.eos, t.addBos, t.addEos]);
    assert.equal(tok.model, fx.model.id === "gemma3-270m" ? "spm" : "bpe");
    if (fx.pre !== undefined) assert.equal(tok.pre, fx.pre === "" ? "default" : fx.pre);
    const eog = [];
    for (let id = 0; id < tok.vocabSize; id++) if (tok.isEog(id)) eog.push(id);
    assert.deepEqual(eog, t.eog);
    const want = new Map<number, number>();
    for (const [attr, ids] of Object.entries(t.attrs)) for (const id of ranges(ids)) want.set(id, Number(attr));
    const bad: string[] = [];
    for (let id = 0; id < tok.vocabSize; id++) {
      const got = ATTR[tok.tokenType(id)], w = want.get(id) ?? 4;
      if (got !== w) bad.push(`${id} ${JSON.stringify(tok.tokenText(id))}: attr ${got}, llama.cpp ${w}`);
    }
    assert.deepEqual(bad, [], bad.join("\n"));
  });

  test(`${label}: all ${corpus.length} corpus strings encode and decode as llama.cpp does`, { skip }, () => {
    const bad = mismatches(tokenizer(), fx);
    assert.deepEqual(bad, [], `${bad.length} mismatches:\n${bad.join("\n")}`);
  });
}

const qwen = "qwen2.5-coder-0.5b-instruct";
const qwenFixture: Fixture = JSON.parse(readFileSync(join(fixtures, `tokenizer_${qwen}.json`), "utf8"));
const qwenFile = await file(qwen, qwenFixture.model.bytes);
const qwenSkip = typeof qwenFile === "string" ? qwenFile : false;

test("the check can fail: another pre-tokenizer, or merges in another order, disagree with llama.cpp", { skip: qwenSkip }, () => {
  const f = qwenFile as GgufFile;
  assert.ok(mismatches(Tokenizer.fromGguf(f, { pre: "gpt-2" }), qwenFixture).length > 20);
  assert.ok(mismatches(Tokenizer.fromGguf(f, { pre: "llama-bpe" }), qwenFixture).length > 20);
  const merges = [...(f.get("tokenizer.ggml.merges") as string[])].reverse();
  const tokens = f.get("tokenizer.ggml.tokens") as string[];
  const types = f.get("tokenizer.ggml.token_type") as Int32Array;
  const base = { model: "bpe", tokens, types, pre: "qwen2", bos: 151643, eos: 151645, addBos: false } as const;
  assert.ok(mismatches(new Tokenizer({ ...base, merges }), qwenFixture).length > 20, "reversed merge ranks went unnoticed");
  assert.deepEqual(mismatches(new Tokenizer({ ...base, merges: merges.reverse() }), qwenFixture), []);
});

test("speed: the 152k vocabulary loads in well under a second, 10 KB of text encodes in milliseconds", { skip: qwenSkip }, () => {
  const f = qwenFile as GgufFile;
  Tokenizer.fromGguf(f); // warm the JIT
  let t0 = performance.now();
  const tok = Tokenizer.fromGguf(f);
  const loadMs = performance.now() - t0;
  const unit = corpus.map(([, s]) => s).join(" ");
  const text = unit.repeat(Math.ceil(10_240 / unit.length)).slice(0, 10_240);
  tok.encode(text); // warm
  const fresh = Tokenizer.fromGguf(f); // an empty word cache
  t0 = performance.now();
  const ids = fresh.encode(text);
  const coldMs = performance.now() - t0;
  t0 = performance.now();
  for (let i = 0; i < 10; i++) tok.encode(text);
  const warmMs = (performance.now() - t0) / 10;
  console.log(`# Qwen tokenizer: load ${loadMs.toFixed(0)} ms (vocabulary of ${tok.vocabSize}); encode 10 KB: ${coldMs.toFixed(1)} ms cold, ${warmMs.toFixed(1)} ms with the word cache (${ids.length} tokens)`);
  assert.ok(loadMs < 2000, `loading took ${loadMs.toFixed(0)} ms`);
  assert.ok(coldMs < 500 && warmMs < 200, `encoding 10 KB took ${coldMs.toFixed(0)} / ${warmMs.toFixed(0)} ms`);
  // One 100 KB word (no space or punctuation to cut it): the merge queue is not quadratic.
  t0 = performance.now();
  const long = "我们今天去公园散步天气非常好阳光明媚".repeat(6000);
  assert.equal(tok.decode(tok.encode(long)), long);
  assert.ok(performance.now() - t0 < 10_000);
});

// A byte-level vocabulary small enough to write out: the 256 byte characters, then merges.
const BYTES = (() => {
  const chars: string[] = [];
  let next = 0x100;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars.push(String.fromCharCode(printable ? b : next++));
  }
  return chars;
})();
const tiny = (more: Partial<ConstructorParameters<typeof Tokenizer>[0]> = {}) =>
  new Tokenizer({
    model: "bpe",
    tokens: [...BYTES, "Ġh", "Ġhi", "<|end|>"],
    merges: ["Ġ h", "Ġh i"],
    types: [...BYTES.map(() => TokenType.NORMAL), TokenType.NORMAL, TokenType.NORMAL, TokenType.CONTROL],
    pre: "gpt-2",
    bos: 258,
    eos: 258,
    ...more,
  });

test("a tiny byte-level vocabulary: merges by rank, bytes for the rest, streaming decode holds split characters", () => {
  const tok = tiny();
  assert.deepEqual([tok.model, tok.pre, tok.addBos, tok.addEos], ["bpe", "gpt-2", false, false]);
  assert.deepEqual(tok.encode(" hi h"), [257, 256]);
  assert.deepEqual(tok.encode("é"), [0xc3, 0xa9].map((b) => BYTES.indexOf(String.fromCharCode(b))));
  assert.deepEqual(tok.encode("x<|end|>", { parseSpecial: true }), [BYTES.indexOf("x"), 258]);
  assert.ok(tok.isEog(258) && tok.isControl(258));
  assert.equal(tok.decode(tok.encode(" hi 🦙 ok")), " hi 🦙 ok");
  // 🦙 is four byte tokens: nothing comes out until the last, and a cut one is U+FFFD on flush.
  const ids = tok.encode("🦙");
  const d = tok.decoder();
  assert.deepEqual(ids.map((id) => d.push(id)), ["", "", "", "🦙"]);
  assert.equal(d.push(ids[0]) + d.flush(), "\uFFFD");
  // gpt-2 cleans spaces on decode (not in the streaming pieces), as llama.cpp does.
  assert.equal(tok.decode(tok.encode("a , b 's")), "a, b's");
  assert.equal(tok.decoder().push(tok.encode(" ,")[0]), " ");
});

test("an unknown or unimplemented pre-tokenizer is a typed error naming it and the supported ones", () => {
  for (const pre of ["no-such-pre", "kimi-k2"]) {
    assert.throws(() => tiny({ pre }), (e: unknown) => {
      assert.ok(e instanceof UnsupportedPreTokenizerError);
      assert.equal(e.pre, pre);
      assert.equal(e.code, "UNSUPPORTED");
      assert.ok(e.message.includes(JSON.stringify(pre)) && e.message.includes("qwen2") && e.message.includes("llama-bpe"));
      return true;
    });
  }
  for (const pre of ["default", "llama3", "llama-bpe", "qwen2", "deepseek-r1-qwen", "smollm", "gpt-2", ""]) {
    assert.ok(pre === "" || SUPPORTED_PRES.includes(pre));
    assert.doesNotThrow(() => tiny({ pre }));
  }
});

test("merges that name a missing token, or are not 'left right', are a clear error", () => {
  assert.throws(() => tiny({ merges: ["Ġ h", "Ġh q"] }), (e: unknown) => e instanceof ModelError && e.reason === "VOCAB" && /merge 1 .*"Ġhq", which is not a token/.test(e.message));
  assert.throws(() => tiny({ merges: ["Ġ x"] }), /"Ġx", which is not a token/);
  assert.throws(() => tiny({ merges: ["nospace"] }), /merge 0 \("nospace"\) is not "left right"/);
  assert.throws(() => tiny({ merges: undefined }), /needs its merges/);
});

test("decoding a token id out of range is a RangeError", () => {
  const tok = tiny();
  for (const id of [259, -1, 1.5, NaN]) {
    assert.throws(() => tok.decode([id]), RangeError);
    assert.throws(() => tok.decoder().push(id), RangeError);
  }
  assert.throws(() => tok.tokenText(259), RangeError);
});
