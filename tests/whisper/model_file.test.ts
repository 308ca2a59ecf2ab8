// The whisper.cpp model file check (src/whisper/model_file.ts) against hostile files: each is a
// WhisperError with its reason, byte offset and a message naming the problem, from
// scanWhisperModel and from WhisperModel.load alike (load checks first, so whisper.cpp's trusting
// loader never sees them). Two sources: small files built here (Whisper base's hyperparameters,
// zero filters, a one-token vocabulary, then whatever tensor records the case needs: the check
// fails before it would need the rest), and copies of the converted model (tests/whisper/model.ts)
// patched or cut at offsets the scan reported, the tensor table cross-checked with Python.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { WhisperError } from "../../src/core/errors.ts";
import { scanWhisperModel, WHISPER_MAGIC, type WhisperModelInfo } from "../../src/whisper/model_file.ts";
import { WhisperModel } from "../../src/whisper/whisper.ts";
import { whisperModel } from "./model.ts";
import { root } from "../run.ts";

const tmp = mkdtempSync(join(tmpdir(), "wsp-whisper-file-"));
const cleanUp = () => rmSync(tmp, { recursive: true, force: true });
after(cleanUp);
process.on("exit", cleanUp);

// ---- a builder of whisper.cpp's format ------------------------------------------------------
/** Whisper base, q8_0 with quantization version 2: n_vocab … n_mels, ftype. */
const BASE = [51865, 1500, 512, 8, 6, 448, 512, 8, 6, 80, 2007];
const F32 = 0, F16 = 1, Q8_0 = 8;

const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const ascii = (s: string) => new TextEncoder().encode(s);
function cat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
}
const header = (hp: readonly number[] = BASE, magic = WHISPER_MAGIC) => cat(new Uint8Array(Uint32Array.of(magic).buffer), i32(...hp));
const filters = (nMel = 80, nFft = 201) => cat(i32(nMel, nFft), new Uint8Array(4 * Math.max(0, nMel * nFft)));
/** The vocabulary: a count, then each token's u32 length and bytes. */
const vocab = (tokens: readonly Uint8Array[], count = tokens.length) => cat(i32(count), ...tokens.flatMap((t) => [i32(t.length), t]));
/** One tensor record; `data` defaults to the bytes the shape and type need. */
function tensor(name: string, shape: readonly number[], type: number, data?: number, nDims = shape.length, nameLen = ascii(name).length): Uint8Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = data ?? (type === F32 ? 4 * n : type === F16 ? 2 * n : (n / 32) * 34);
  return cat(i32(nDims, nameLen, type, ...shape), ascii(name), new Uint8Array(bytes));
}
/** A model start: header, filters, a one-token vocabulary (" ", which whisper.cpp needs). */
const start = (hp: readonly number[] = BASE) => cat(header(hp), filters(hp[9]), vocab([ascii(" ")]));
const HP_END = 48, FILTERS_END = 48 + 8 + 4 * 80 * 201, VOCAB_END = FILTERS_END + 4 + 4 + 1;
const withHp = (i: number, v: number) => BASE.map((x, j) => (j === i ? v : x));

let n = 0;
function file(bytes: Uint8Array): string {
  const p = join(tmp, `case${n++}.bin`);
  writeFileSync(p, bytes);
  return p;
}

interface Want { reason: string; offset: number | undefined; message: RegExp }
/** The scan's error; then WhisperModel.load must reject with the same one. */
async function rejects(path: string, want: Want, label: string): Promise<void> {
  let scanErr: WhisperError | undefined;
  try {
    scanWhisperModel(path);
  } catch (e) {
    if (!(e instanceof WhisperError)) throw new Error(`${label}: scanWhisperModel threw ${String(e)}, not a WhisperError`);
    scanErr = e;
  }
  assert.ok(scanErr, `${label}: scanWhisperModel accepted the file`);
  assert.equal(scanErr.reason, want.reason, `${label}: ${scanErr.message}`);
  assert.equal(scanErr.offset, want.offset, `${label}: ${scanErr.message}`);
  assert.match(scanErr.message, want.message, label);
  assert.ok(scanErr.message.includes(path), `${label}: the message names the file`);
  await assert.rejects(WhisperModel.load(path), (e: unknown) => {
    assert.ok(e instanceof WhisperError, `${label}: load threw ${String(e)}`);
    assert.deepEqual([e.reason, e.offset, e.message], [scanErr.reason, scanErr.offset, scanErr.message], label);
    return true;
  });
  if (path.startsWith(tmp)) rmSync(path, { recursive: true, force: true });
}

// ---- built here -----------------------------------------------------------------------------
test("a missing file, a folder, an empty file, a wrong or GGUF magic: IO, TRUNCATED or FORMAT", async () => {
  await rejects(join(tmp, "no-such.bin"), { reason: "IO", offset: undefined, message: /no such file/ }, "missing");
  const dir = join(tmp, "a-folder.bin");
  mkdirSync(dir);
  await rejects(dir, { reason: "IO", offset: undefined, message: /folder|not a regular file/ }, "folder");
  await rejects(file(new Uint8Array(0)), { reason: "TRUNCATED", offset: 0, message: /ends inside the magic/ }, "empty");
  await rejects(file(ascii("gg")), { reason: "TRUNCATED", offset: 0, message: /ends inside the magic/ }, "2 bytes");
  await rejects(file(cat(ascii("RIFF"), start().subarray(4))), { reason: "FORMAT", offset: 0, message: /not a whisper\.cpp model file \(magic 0x46464952\)/ }, "RIFF");
  await rejects(file(cat(ascii("GGUF"), i32(3, 0, 0, 0, 0))), { reason: "FORMAT", offset: 0, message: /GGUF file/ }, "GGUF");
  await rejects(file(header().subarray(0, 4)), { reason: "TRUNCATED", offset: 4, message: /ends inside the hyperparameters/ }, "magic only");
  await rejects(file(header().subarray(0, 30)), { reason: "TRUNCATED", offset: 4, message: /ends inside the hyperparameters \(44 bytes needed, 26 left\)/ }, "cut in the header");
});

test("every hyperparameter out of range is INVALID at its own offset", async () => {
  const cases: [number, number, RegExp][] = [
    [0, 51863, /n_vocab 51863 is not a Whisper vocabulary/], [0, 0, /n_vocab 0/], [0, -1, /n_vocab -1/], [0, 0x7fffffff, /n_vocab 2147483647/],
    [1, 1499, /n_audio_ctx 1499/], [1, 3000, /n_audio_ctx 3000/], [1, -1500, /n_audio_ctx -1500/],
    [3, 0, /n_audio_head 0 does not divide/], [3, 7, /n_audio_head 7 does not divide n_audio_state 512/], [3, 128, /n_audio_head 128/], [3, -8, /n_audio_head -8/],
    [4, 0, /n_audio_layer 0 is outside 1 … 64/], [4, 65, /n_audio_layer 65/], [4, -6, /n_audio_layer -6/], [4, 0x7fffffff, /n_audio_layer 2147483647/],
    [5, 449, /n_text_ctx 449/], [5, 0, /n_text_ctx 0/],
    [6, 768, /n_audio_state 512 ≠ n_text_state 768/], [6, -512, /n_audio_state 512 ≠ n_text_state -512/],
    [7, 0, /n_text_head 0/], [7, 6, /n_text_head 6 does not divide n_text_state 512/],
    [8, 0, /n_text_layer 0/], [8, 100, /n_text_layer 100/],
    [9, 81, /n_mels 81: Whisper uses 80 or 128/], [9, 0, /n_mels 0/], [9, -80, /n_mels -80/],
    [10, 4, /ftype 4 is not a type/], [10, 5, /ftype 5/], [10, 15, /ftype 15/], [10, 999, /ftype 999/], [10, 2015, /ftype 15/],
    // C's % keeps a negative ftype negative (whisper.cpp refuses it); the check once took -993 for 7.
    [10, -1, /ftype -1/], [10, -993, /ftype -993/], [10, -2147483648, /ftype -648/],
  ];
  for (const [i, v, message] of cases) await rejects(file(start(withHp(i, v))), { reason: "INVALID", offset: 4 + 4 * i, message }, `hparam ${i} = ${v}`);
  // The states equal but out of range: the audio one is named.
  for (const s of [32, 8192, 0]) {
    const hp = BASE.map((x, j) => (j === 2 || j === 6 ? s : x));
    await rejects(file(start(hp)), { reason: "INVALID", offset: 12, message: new RegExp(`n_audio_state ${s} is outside 64 … 4096`) }, `states ${s}`);
  }
});

test("mel filters: wrong dimensions are INVALID; a file cut inside them TRUNCATED", async () => {
  for (const [m, f] of [[80, 200], [81, 201], [128, 201], [0, 201], [-80, 201], [80, -201]]) {
    await rejects(file(cat(header(), filters(m, f))), { reason: "INVALID", offset: HP_END, message: new RegExp(`mel filters ${m} × ${f}, expected 80 × 201`) }, `filters ${m}×${f}`);
  }
  await rejects(file(start().subarray(0, HP_END + 5)), { reason: "TRUNCATED", offset: HP_END, message: /ends inside the mel filter header/ }, "cut in the filter header");
  await rejects(file(start().subarray(0, 20_000)), { reason: "TRUNCATED", offset: HP_END + 8, message: /ends inside the mel filters \(64320 bytes, 19944 left\)/ }, "cut in the filters");
  await rejects(file(start().subarray(0, FILTERS_END)), { reason: "TRUNCATED", offset: FILTERS_END, message: /ends inside the vocabulary count/ }, "cut after the filters");
});

test("vocabulary: a count of 0, negative or above n_vocab, a token over 1024 bytes are INVALID; a cut TRUNCATED", async () => {
  const pre = cat(header(), filters());
  for (const c of [0, -1, 51866, 0x7fffffff]) {
    await rejects(file(cat(pre, vocab([ascii("a")], c))), { reason: "INVALID", offset: FILTERS_END, message: new RegExp(`${c} vocabulary entries for n_vocab 51865`) }, `count ${c}`);
  }
  // The largest count an English-only model takes is its own n_vocab.
  await rejects(file(cat(header(withHp(0, 51864)), filters(), vocab([], 51865))), { reason: "INVALID", offset: FILTERS_END, message: /51865 vocabulary entries for n_vocab 51864/ }, "count > n_vocab (en)");
  const long = cat(pre, i32(2), i32(1025), new Uint8Array(1025));
  await rejects(file(long), { reason: "INVALID", offset: FILTERS_END + 4, message: /token 0 is 1025 bytes long \(at most 1024\)/ }, "token 1025 B");
  const huge = cat(pre, i32(2), i32(1), ascii("a"), i32(-1));
  await rejects(file(huge), { reason: "INVALID", offset: FILTERS_END + 9, message: /token 1 is 4294967295 bytes long/ }, "token 2^32-1 B");
  // 1024 bytes is allowed: the next problem found is the missing second token.
  const ok1024 = cat(pre, i32(2), i32(1024), new Uint8Array(1024));
  await rejects(file(ok1024), { reason: "TRUNCATED", offset: FILTERS_END + 4 + 4 + 1024, message: /ends inside the length of token 1 \(4 bytes needed, 0 left\)/ }, "token 1024 B");
  await rejects(file(cat(pre, i32(3), i32(5), ascii("ab"))), { reason: "TRUNCATED", offset: FILTERS_END + 8, message: /ends inside token 0/ }, "cut in a token");
  // No token " ": whisper.cpp's transcription looks it up with map::at (std::terminate without it).
  for (const toks of [["a"], ["  ", "b"], ["\t"]]) {
    await rejects(file(cat(pre, vocab(toks.map(ascii)))), { reason: "INVALID", offset: FILTERS_END, message: /the vocabulary has no token " "/ }, `no space in ${JSON.stringify(toks)}`);
  }
  await rejects(file(cat(pre, i32(3), i32(1), ascii("a"), i32(1).subarray(0, 2))), { reason: "TRUNCATED", offset: FILTERS_END + 9, message: /ends inside the length of token 1 \(4 bytes needed, 2 left\)/ }, "cut in a length");
});

test("tensor records: 0, 4, 5 or -1 dimensions, a bad name length, an unknown or repeated name, a wrong shape or type are INVALID", async () => {
  const s = start(), at = VOCAB_END;
  const bias = "encoder.ln_post.bias";
  for (const d of [0, 4, 5, -1, 0x7fffffff]) {
    // whisper.cpp reads n_dims sizes into int32_t ne[4]: five would write past it.
    const rec = cat(i32(d, bias.length, F32, 512, 1, 1, 1, 1), ascii(bias));
    await rejects(file(cat(s, rec)), { reason: "INVALID", offset: at, message: new RegExp(`a tensor with ${d} dimensions \\(whisper\\.cpp's are 1 … 3\\)`) }, `${d} dims`);
  }
  for (const l of [0, -1, 257, 0x7fffffff]) {
    await rejects(file(cat(s, tensor(bias, [512], F32, undefined, 1, l))), { reason: "INVALID", offset: at, message: new RegExp(`a tensor name of ${l} bytes`) }, `name length ${l}`);
  }
  const unknown: [string, number[], number][] = [
    ["encoder.blocks.6.mlp_ln.weight", [512], F32], // a 7th layer of a 6-layer encoder
    ["decoder.blocks.0.cross_attn.key.bias", [512], F32], // whisper.cpp has no key bias
    ["encoder.ln_post.bias\0", [512], F32],
    ["Encoder.ln_post.bias", [512], F32],
  ];
  for (const [name, shape, type] of unknown) {
    await rejects(file(cat(s, tensor(name, shape, type))), { reason: "INVALID", offset: at, message: /unknown tensor .* for a 6\/6-layer model/ }, `unknown ${JSON.stringify(name)}`);
  }
  const one = tensor(bias, [512], F32);
  await rejects(file(cat(s, one, one)), { reason: "INVALID", offset: at + one.length, message: /tensor "encoder\.ln_post\.bias" appears twice/ }, "duplicate");
  const shapes: [string, number[], number, string][] = [
    [bias, [511], F32, "511"], [bias, [512, 2], F32, "512,2"], [bias, [1, 512], F32, "1,512"], [bias, [-512], F32, "-512"],
    ["encoder.conv1.weight", [3, 80, 256], F16, "3,80,256"], ["decoder.token_embedding.weight", [512, 51864], Q8_0, "512,51864"],
  ];
  for (const [name, shape, type, shown] of shapes) {
    await rejects(file(cat(s, tensor(name, shape, type, 0))), { reason: "INVALID", offset: at, message: new RegExp(`has shape \\[${shown}\\], expected`) }, `shape ${name} [${shown}]`);
  }
  const types: [string, number[], number, number][] = [
    [bias, [512], F16, F32], [bias, [512], 99, F32], [bias, [512], -1, F32],
    ["encoder.conv1.weight", [3, 80, 512], F32, F16], // conv kernels are f16 unless the model is f32
    ["encoder.blocks.0.attn.query.weight", [512, 512], F16, Q8_0],
  ];
  for (const [name, shape, type, want] of types) {
    const rec = cat(i32(shape.length, name.length, type, ...shape), ascii(name));
    await rejects(file(cat(s, rec)), { reason: "INVALID", offset: at, message: new RegExp(`has type ${type}, expected ${want} for ftype 7`) }, `type ${type} for ${name}`);
  }
});

test("a file cut inside a tensor header, name or data, or missing tensors at its end, is TRUNCATED", async () => {
  const s = start(), at = VOCAB_END;
  const bias = "encoder.ln_post.bias";
  const one = tensor(bias, [512], F32);
  await rejects(file(cat(s, one.subarray(0, 7))), { reason: "TRUNCATED", offset: at, message: /ends inside a tensor header \(12 bytes needed, 7 left\)/ }, "cut in a header");
  const two = cat(i32(2, 28, F32, 512, 1500), ascii("encoder.positional_embedding"));
  await rejects(file(cat(s, two.subarray(0, 14))), { reason: "TRUNCATED", offset: at + 12, message: /ends inside a tensor shape/ }, "cut in the shape");
  await rejects(file(cat(s, one.subarray(0, 20))), { reason: "TRUNCATED", offset: at + 16, message: /ends inside a tensor name/ }, "cut in the name");
  const dataAt = at + 16 + bias.length;
  await rejects(file(cat(s, one.subarray(0, one.length - 1))), { reason: "TRUNCATED", offset: dataAt, message: /ends inside the data of "encoder\.ln_post\.bias" \(2048 bytes, 2047 left\)/ }, "cut in the data");
  await rejects(file(cat(s, two)), { reason: "TRUNCATED", offset: at + 20 + 28, message: /ends inside the data of "encoder\.positional_embedding" \(3072000 bytes, 0 left\)/ }, "no data");
  const whole = cat(s, one);
  await rejects(file(whole), { reason: "TRUNCATED", offset: whole.length, message: /244 of 245 tensors missing \(first: encoder\.positional_embedding\)/ }, "244 missing");
  await rejects(file(s), { reason: "TRUNCATED", offset: s.length, message: /245 of 245 tensors missing/ }, "no tensors");
  // A trailing partial record after a complete one.
  await rejects(file(cat(whole, i32(1, 4))), { reason: "TRUNCATED", offset: whole.length, message: /ends inside a tensor header/ }, "8 bytes after");
  // Sizes stored with trailing 1s are whisper.cpp's [512, 1, 1]: accepted, then the rest is missing.
  const padded = cat(s, tensor(bias, [512, 1, 1], F32));
  await rejects(file(padded), { reason: "TRUNCATED", offset: padded.length, message: /244 of 245 tensors missing/ }, "[512, 1, 1]");
});

// ---- the converted model --------------------------------------------------------------------
const model = await whisperModel();
if (model.skip) console.warn(`skipping the model file checks on the converted model: ${model.skip}`);
const hasNumpy = spawnSync("python3", ["-c", "import numpy"], { encoding: "utf8" }).status === 0;

let scanned: WhisperModelInfo | undefined;
const info = () => (scanned ??= scanWhisperModel(model.path));

/** The model's first `length` bytes with `patches` applied, as a new file. */
function prefix(length: number, patches: [number, Uint8Array][] = []): string {
  const buf = new Uint8Array(length);
  const fd = openSync(model.path, "r");
  try {
    for (let done = 0, k; done < length; done += k) {
      k = readSync(fd, buf, done, length - done, done);
      if (k <= 0) throw new Error(`the model is shorter than ${length} bytes`);
    }
  } finally {
    closeSync(fd);
  }
  for (const [at, b] of patches) buf.set(b, at);
  return file(buf);
}
const esc = (s: string) => s.replace(/[.[\]()]/g, "\\$&");
/** What the scan must say of the model cut at `length` inside its vocabulary (walked here). */
function vocabCut(length: number): Want {
  const b = new Uint8Array(length);
  const fd = openSync(model.path, "r");
  readSync(fd, b, 0, length, 0);
  closeSync(fd);
  const v = new DataView(b.buffer);
  let off = FILTERS_END + 4;
  for (let i = 0; ; i++) {
    if (off + 4 > length) return { reason: "TRUNCATED", offset: off, message: new RegExp(`ends inside the length of token ${i} `) };
    const len = v.getUint32(off, true);
    if (off + 4 + len > length) return { reason: "TRUNCATED", offset: off + 4, message: new RegExp(`ends inside token ${i} `) };
    off += 4 + len;
  }
}
/** Where tensor `i`'s record starts (its data offset less the name, sizes and the 3 header i32s). */
const recordAt = (i: number) => {
  const t = info().tensors[i];
  return t.offset - ascii(t.name).length - 4 * t.shape.length - 12;
};

test("the converted model: info as the file says, the tensor table as an independent Python reader finds it", { skip: model.skip }, () => {
  const m = info();
  assert.deepEqual(m.hparams, {
    nVocab: 51865, nAudioCtx: 1500, nAudioState: 512, nAudioHead: 8, nAudioLayer: 6,
    nTextCtx: 448, nTextState: 512, nTextHead: 8, nTextLayer: 6, nMels: 80,
  });
  assert.equal(m.ftype, 7);
  assert.equal(m.tensors.length, 245);
  assert.equal(m.multilingual, true);
  assert.equal(m.size, "base");
  assert.equal(m.nVocabStored, 50257);
  const last = m.tensors[m.tensors.length - 1];
  assert.equal(last.offset + last.nbytes, m.fileSize, "the last tensor ends the file");
  assert.equal(new Set(m.tensors.map((t) => t.name)).size, 245);
  if (!hasNumpy) return void console.warn("skipping the Python cross-check: python3 with numpy is not available");
  // read_ggml.py's own reader and sizes; the walk here only records where each record lies.
  const script = [
    "import json, sys",
    "sys.path.insert(0, sys.argv[1])",
    "from read_ggml import Buf, nbytes",
    "b = Buf(open(sys.argv[2], 'rb').read())",
    "b.i32(12); m, f = b.i32(2); b.take(4 * m * f)",
    "for _ in range(b.i32()): b.take(b.i32())",
    "out = []",
    "while b.o < len(b.d):",
    "    nd, nl, ty = b.i32(3); ne = list(b.i32(nd)) if nd > 1 else [b.i32()]; name = b.take(nl).decode(); n = 1",
    "    for x in ne: n *= x",
    "    out.append([name, ne, ty, b.o, nbytes(ty, n)]); b.take(nbytes(ty, n))",
    "print(json.dumps(out))",
  ].join("\n");
  const r = spawnSync("python3", ["-c", script, join(root, "tests", "fixtures", "whisper"), model.path], { encoding: "utf8", maxBuffer: 16 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const py = JSON.parse(r.stdout) as [string, number[], number, number, number][];
  assert.deepEqual(m.tensors.map((t) => [t.name, t.shape, t.type, t.offset, t.nbytes]), py);
});

test("the converted model loads; its info is the scan's", { skip: model.skip }, async () => {
  using loaded = await WhisperModel.load(model.path);
  assert.deepEqual(loaded.info, info());
  assert.equal(loaded.multilingual, true);
});

test("copies of the converted model cut short: TRUNCATED where the file ends, by the scan and by WhisperModel.load", { skip: model.skip }, async () => {
  const m = info();
  const k = 3; // a small tensor early in the file
  const t = m.tensors[k];
  const cuts: [number, Want, string][] = [
    [30, { reason: "TRUNCATED", offset: 4, message: /ends inside the hyperparameters/ }, "header"],
    [10_000, { reason: "TRUNCATED", offset: 56, message: /ends inside the mel filters/ }, "filters"],
    [200_000, vocabCut(200_000), "the vocabulary"],
    [recordAt(k) + 5, { reason: "TRUNCATED", offset: recordAt(k), message: /ends inside a tensor header/ }, "a tensor header"],
    [t.offset - 3, { reason: "TRUNCATED", offset: t.offset - ascii(t.name).length, message: /ends inside a tensor name/ }, "a tensor name"],
    [t.offset + Math.floor(t.nbytes / 2), { reason: "TRUNCATED", offset: t.offset, message: new RegExp(`ends inside the data of ${esc(JSON.stringify(t.name))}`) }, "tensor data"],
  ];
  for (const [length, want, label] of cuts) await rejects(prefix(length), want, `cut in ${label}`);
  // The whole file less its last tensor: that tensor is missing.
  const last = m.tensors[m.tensors.length - 1];
  const p = join(tmp, "less-last.bin");
  copyFileSync(model.path, p);
  truncateSync(p, recordAt(m.tensors.length - 1));
  await rejects(p, { reason: "TRUNCATED", offset: recordAt(m.tensors.length - 1), message: new RegExp(`1 of 245 tensors missing \\(first: ${esc(last.name)}\\)`) }, "missing last tensor");
});

test("copies of the converted model patched: 5 or 4 or 0 dimensions, an unknown or repeated name, a wrong shape or type, bad hyperparameters", { skip: model.skip }, async () => {
  const m = info();
  const idx = (name: string) => m.tensors.findIndex((t) => t.name === name);
  const k = idx("encoder.blocks.0.attn.value.bias");
  const q = idx("encoder.blocks.0.attn.query.bias");
  assert.ok(q > 0 && k > q, "the query bias comes first");
  const at = recordAt(k), end = m.tensors[k].offset + 64; // the scan stops at the patched record
  const cases: [[number, Uint8Array][], Want, string][] = [
    [[[at, i32(5)]], { reason: "INVALID", offset: at, message: /a tensor with 5 dimensions/ }, "5 dims"],
    [[[at, i32(4)]], { reason: "INVALID", offset: at, message: /a tensor with 4 dimensions/ }, "4 dims"],
    [[[at, i32(0)]], { reason: "INVALID", offset: at, message: /a tensor with 0 dimensions/ }, "0 dims"],
    [[[at + 12 + 4, ascii("X")]], { reason: "INVALID", offset: at, message: /unknown tensor "Xncoder\.blocks\.0\.attn\.value\.bias"/ }, "unknown name"],
    // The value bias renamed to the query bias (same length, shape and type), after the query's own record.
    [[[at + 16, ascii("encoder.blocks.0.attn.query.bias")]], { reason: "INVALID", offset: at, message: /"encoder\.blocks\.0\.attn\.query\.bias" appears twice/ }, "duplicate"],
    [[[at + 12, i32(256)]], { reason: "INVALID", offset: at, message: /has shape \[256\], expected \[512\]/ }, "shape"],
    [[[at + 8, i32(F16)]], { reason: "INVALID", offset: at, message: /has type 1, expected 0/ }, "type"],
    [[[at + 8, i32(Q8_0)]], { reason: "INVALID", offset: at, message: /has type 8, expected 0/ }, "type q8_0"],
    [[[4 + 4 * 4, i32(65)]], { reason: "INVALID", offset: 20, message: /n_audio_layer 65 is outside/ }, "65 layers"],
    // 4096-wide states are in range: the first record's shape is then wrong.
    [[[4 + 4 * 2, i32(4096)], [4 + 4 * 6, i32(4096)]], { reason: "INVALID", offset: recordAt(0), message: /"encoder\.positional_embedding" has shape \[512,1500\], expected \[4096,1500\]/ }, "states 4096"],
    [[[44, i32(-993)]], { reason: "INVALID", offset: 44, message: /ftype -993 is not a type/ }, "ftype -993"],
  ];
  for (const [patches, want, label] of cases) {
    await rejects(prefix(end, patches), want, `patched: ${label}`);
  }
});
