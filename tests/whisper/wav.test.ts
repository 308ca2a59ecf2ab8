// WAV decoding and resampling to 16 kHz against independent references:
// tests/fixtures/whisper/wav_ref.py writes WAV files with Python's `wave` module (and struct for
// the formats it cannot write) together with the samples numpy says they hold (compared exactly),
// and resamples with scipy's resample_poly (compared by SNR). Hostile files are built here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ArgumentError, AudioError } from "../../src/core/errors.ts";
import { decodeWav16kMono, downmix, readWav, readWavFile } from "../../src/whisper/wav.ts";
import { resampleTo16k } from "../../src/whisper/resample.ts";
import { speechClips, speechFiles, speechMissing } from "../../scripts/speech.mjs";

const REF = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "whisper", "wav_ref.py");
const tmp = mkdtempSync(join(tmpdir(), "wsp-wav-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

const pyCheck = (mod: string) => spawnSync("python3", ["-c", `import ${mod}`], { encoding: "utf8" }).status === 0;
const numpy = pyCheck("numpy") ? false : "python3 with numpy is not available (pip install -r tests/fixtures/requirements.txt)";
const scipy = numpy || (pyCheck("scipy") ? false : "scipy is not installed (pip install scipy)");
if (numpy || scipy) console.warn(`skipping some WAV checks: ${numpy || scipy}`);

function py(...args: string[]): string {
  const r = spawnSync("python3", [REF, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`wav_ref.py ${args[0]} failed: ${r.stderr}`);
  return r.stdout;
}

interface Manifest { name: string; sampleRate: number; channels: number; frames: number; encoding: string; bits: number; truncated: boolean }

test("decodes every file Python wrote to exactly numpy's samples (PCM 8/16/24/32, float 32/64, extensible, odd chunks, streaming, truncated, RF64)", { skip: numpy }, () => {
  const dir = join(tmp, "wavs");
  py("wavs", dir);
  const manifest: Manifest[] = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  assert.ok(manifest.length >= 17);
  for (const m of manifest) {
    const a = readWavFile(join(dir, `${m.name}.wav`));
    assert.deepEqual(
      { sampleRate: a.sampleRate, channels: a.channels, frames: a.frames, encoding: a.encoding, bits: a.bitsPerSample, truncated: a.truncated },
      { sampleRate: m.sampleRate, channels: m.channels, frames: m.frames, encoding: m.encoding, bits: m.bits, truncated: m.truncated },
      m.name,
    );
    const want = new Uint8Array(readFileSync(join(dir, `${m.name}.f32`)));
    const got = new Uint8Array(m.channels * m.frames * 4);
    a.samples.forEach((ch, c) => got.set(new Uint8Array(ch.buffer, ch.byteOffset, ch.byteLength), c * m.frames * 4));
    assert.ok(got.every((b, i) => b === want[i]) && got.length === want.length, `${m.name}: samples differ from numpy's`);
  }
  // Mono 16 kHz passes through unchanged; several channels are averaged first.
  const mono = readWavFile(join(dir, "pcm16_1ch_16000.wav"));
  assert.deepEqual(decodeWav16kMono(join(dir, "pcm16_1ch_16000.wav")), mono.samples[0]);
  const six = readWav(readFileSync(join(dir, "pcm16_6ch_11025.wav")));
  const mixed = downmix(six.samples);
  assert.equal(mixed[5], Math.fround(six.samples.reduce((s, ch) => s + ch[5], 0) / 6));
  assert.deepEqual(decodeWav16kMono(readFileSync(join(dir, "pcm16_6ch_11025.wav"))), resampleTo16k(mixed, 11025));
});

// ---- hostile files, built here ------------------------------------------------------------

function u16(n: number): number[] {
  return [n & 0xff, (n >> 8) & 0xff];
}
function u32(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}
function ascii(s: string): number[] {
  return [...s].map((c) => c.charCodeAt(0));
}
function chunk(id: string, body: number[]): number[] {
  return [...ascii(id), ...u32(body.length), ...body, ...(body.length % 2 ? [0] : [])];
}
function fmt(tag: number, channels: number, rate: number, bits: number, align = channels * (bits >> 3)): number[] {
  return [...u16(tag), ...u16(channels), ...u32(rate), ...u32(rate * align), ...u16(align), ...u16(bits)];
}
function extensible(subTag: number, channels: number, bits: number, guidTail = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71]): number[] {
  return [...fmt(0xfffe, channels, 16000, bits), ...u16(22), ...u16(bits), ...u32(3), ...u16(subTag), ...guidTail];
}
function wav(chunks: number[][], form = "WAVE", magic = "RIFF"): Uint8Array {
  const body = [...ascii(form), ...chunks.flat()];
  return new Uint8Array([...ascii(magic), ...u32(body.length), ...body]);
}
const data = chunk("data", [0, 0, 1, 0]);

const hostile: [string, Uint8Array, RegExp][] = [
  ["empty", new Uint8Array(0), /fewer than a RIFF header/],
  ["not RIFF", new Uint8Array([...ascii("RIFX"), ...u32(4), ...ascii("WAVE")]), /not a RIFF file.*RIFX/],
  ["not WAVE", wav([], "AVI "), /not a WAVE file.*AVI/],
  ["no fmt", wav([data]), /no fmt chunk/],
  ["no data", wav([chunk("fmt ", fmt(1, 1, 16000, 16)), chunk("LIST", [1, 2, 3])]), /no data chunk/],
  ["A-law", wav([chunk("fmt ", fmt(6, 1, 8000, 8)), data]), /A-law \(format tag 0x0006\)/],
  ["mu-law", wav([chunk("fmt ", fmt(7, 1, 8000, 8)), data]), /mu-law \(format tag 0x0007\)/],
  ["MS ADPCM", wav([chunk("fmt ", [...fmt(2, 1, 8000, 4), 0, 0]), data]), /Microsoft ADPCM \(format tag 0x0002\)/],
  ["unknown tag", wav([chunk("fmt ", fmt(0x1234, 1, 8000, 16)), data]), /format tag 0x1234/],
  ["extensible IMA ADPCM", wav([chunk("fmt ", extensible(0x11, 1, 16)), data]), /IMA ADPCM/],
  ["extensible foreign GUID", wav([chunk("fmt ", extensible(1, 1, 16, Array(14).fill(7))), data]), /GUID/],
  ["extensible short fmt", wav([chunk("fmt ", [...fmt(0xfffe, 1, 16000, 16), 0, 0]), data]), /40 bytes/],
  ["12-bit PCM", wav([chunk("fmt ", fmt(1, 1, 16000, 12, 2)), data]), /12-bit PCM/],
  ["16-bit float", wav([chunk("fmt ", fmt(3, 1, 16000, 16)), data]), /16-bit IEEE float/],
  ["0 channels", wav([chunk("fmt ", fmt(1, 0, 16000, 16, 2)), data]), /0 channels/],
  ["0 Hz", wav([chunk("fmt ", fmt(1, 1, 0, 16)), data]), /sample rate of 0/],
  ["0 bits", wav([chunk("fmt ", fmt(1, 1, 16000, 0, 2)), data]), /0 bits/],
  ["block align", wav([chunk("fmt ", fmt(1, 2, 16000, 16, 2)), data]), /block align mismatch: 2 bytes.*2 channel\(s\) of 16 bits take 4/],
  ["short fmt", wav([chunk("fmt ", fmt(1, 1, 16000, 16).slice(0, 14)), data]), /fewer than the 16/],
  ["file ends in fmt", wav([[...ascii("fmt "), ...u32(16), 1, 0, 1, 0]]), /ends inside the fmt chunk/],
  ["NaN float", wav([chunk("fmt ", fmt(3, 1, 16000, 32)), chunk("data", [0, 0, 0, 0, 0, 0, 0xc0, 0x7f])]), /sample 1 of channel 0 is NaN.*at byte 48/],
  ["infinite double", wav([chunk("fmt ", fmt(3, 2, 16000, 64)), chunk("data", [...Array(8).fill(0), 0, 0, 0, 0, 0, 0, 0xf0, 0xff])]), /sample 0 of channel 1 is -Infinity/],
  ["RF64 without ds64", wav([chunk("fmt ", fmt(1, 1, 16000, 16)), [...ascii("data"), ...u32(0xffffffff), 0, 0]], "WAVE", "RF64"), /no ds64/],
];

for (const [name, bytes, message] of hostile) {
  test(`refuses a hostile WAV with an AudioError naming the problem: ${name}`, () => {
    assert.throws(() => readWav(bytes), (e: unknown) => {
      assert.ok(e instanceof AudioError, String(e));
      assert.equal(e.code, "AUDIO");
      assert.match(e.message, message);
      return true;
    });
  });
}

test("decodeWav16kMono refuses a rate below 1 kHz (an 8 KB file at 1 Hz would be 64M samples at 16 kHz) with an AudioError, fast", () => {
  const t0 = performance.now();
  for (const rate of [1, 3, 999]) {
    const bytes = wav([chunk("fmt ", fmt(1, 1, rate, 16)), chunk("data", Array(8000).fill(0))]);
    assert.throws(() => decodeWav16kMono(bytes), (e: unknown) => e instanceof AudioError && /below the 1000 Hz/.test(e.message), `${rate} Hz`);
  }
  assert.equal(decodeWav16kMono(wav([chunk("fmt ", fmt(1, 1, 1000, 16)), chunk("data", Array(200).fill(0))])).length, 1600, "1 kHz is read");
  assert.ok(performance.now() - t0 < 2000, "refused before resampling");
  assert.throws(() => resampleTo16k(new Float32Array(4), 999), ArgumentError);
});

test("a missing file is an AudioError with the fs error as cause", () => {
  assert.throws(() => readWavFile(join(tmp, "nope.wav")), (e: unknown) => e instanceof AudioError && /cannot read .*nope\.wav/.test(e.message) && e.cause !== undefined);
  assert.throws(() => decodeWav16kMono(join(tmp, "nope.wav")), AudioError);
});

test("a WAV file in a Uint8Array view at an offset of a larger buffer decodes", () => {
  const file = wav([chunk("fmt ", fmt(1, 1, 16000, 16)), chunk("data", [...u16(0x8000), ...u16(0x4000)])]);
  const big = new Uint8Array(file.length + 7);
  big.set(file, 3);
  const a = readWav(big.subarray(3, 3 + file.length));
  assert.deepEqual(Array.from(a.samples[0]), [-1, 0.5]);
  writeFileSync(join(tmp, "tiny.wav"), file);
  assert.deepEqual(Array.from(decodeWav16kMono(join(tmp, "tiny.wav"))), [-1, 0.5]);
});

// ---- resampling ---------------------------------------------------------------------------

/** Σ sin(2π f t + φ) sampled at `rate`, n samples. */
function tones(freqs: readonly number[], rate: number, n: number, amp = 0.3): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    freqs.forEach((f, k) => (s += amp * Math.sin((2 * Math.PI * f * i) / rate + k)));
    out[i] = s;
  }
  return out;
}

/** 10·log10(Σ want² / Σ (got − want)²) over samples [from, to). */
function snrDb(got: Float32Array, want: Float32Array, from: number, to: number): number {
  let s = 0, d = 0;
  for (let i = from; i < to; i++) [s, d] = [s + want[i] ** 2, d + (got[i] - want[i]) ** 2];
  return 10 * Math.log10(s / d);
}

function rmsDb(x: Float32Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i] ** 2;
  return 10 * Math.log10(s / (to - from));
}

test("16 kHz passes through exactly; lengths are ⌈n·16000/rate⌉; bad rates are ArgumentErrors", () => {
  const x = tones([440], 16000, 1000);
  const y = resampleTo16k(x, 16000);
  assert.deepEqual(y, x);
  assert.notEqual(y, x);
  assert.equal(resampleTo16k(new Float32Array(1001), 44100).length, Math.ceil((1001 * 160) / 441));
  assert.equal(resampleTo16k(new Float32Array(5), 8000).length, 10);
  assert.equal(resampleTo16k(new Float32Array(0), 48000).length, 0);
  for (const r of [0, -8000, 44100.5, NaN, 2_000_000]) assert.throws(() => resampleTo16k(x, r), ArgumentError);
});

// Passband: tones below 0.9 × the lower Nyquist come out as the same tones sampled at 16 kHz.
// 44101 Hz shares no large factor with 16000 and takes the interpolated-phase path.
for (const [rate, freqs] of [[44100, [100, 1000, 3333, 6500, 7100]], [48000, [250, 5000, 7000]], [22050, [300, 7100]], [44101, [440, 6800]], [8000, [200, 1000, 3500]], [11025, [123, 4900]]] as const) {
  test(`${rate} Hz → 16 kHz: tones ${freqs.join(", ")} Hz match the analytic signal (SNR > 100 dB away from the ends)`, () => {
    const seconds = 0.5;
    const y = resampleTo16k(tones(freqs, rate, Math.round(rate * seconds)), rate);
    const want = tones(freqs, 16000, y.length);
    const snr = snrDb(y, want, 200, y.length - 200);
    assert.ok(snr > 100, `SNR ${snr.toFixed(1)} dB`);
  });
}

test("44.1 kHz → 16 kHz: tones at 8.5, 9, 12 and 20 kHz (which would alias) are gone, 7.9 kHz is attenuated", () => {
  const rate = 44100;
  const n = rate / 2;
  for (const f of [8500, 9000, 12000, 20000]) {
    const y = resampleTo16k(tones([f], rate, n, 1), rate);
    const level = rmsDb(y, 200, y.length - 200) + 3; // re a full-scale sine's −3 dB
    assert.ok(level < -95, `${f} Hz: ${level.toFixed(1)} dB`);
  }
  const y = resampleTo16k(tones([7900], rate, n, 1), rate);
  const level = rmsDb(y, 200, y.length - 200) + 3;
  assert.ok(level < -20, `7.9 kHz: ${level.toFixed(1)} dB`);
  console.log(`7.9 kHz through 44.1 → 16 kHz: ${level.toFixed(1)} dB`);
});

/** A seeded tone + white noise signal (xorshift, uniform ±0.25). */
function toneNoise(rate: number, n: number): Float32Array {
  const x = tones([440, 2500, 6000], rate, n, 0.2);
  let s = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >>> 17, s ^= s << 5;
    x[i] += ((s >>> 0) / 2 ** 32 - 0.5) * 0.5;
  }
  return x;
}

for (const rate of [44100, 48000, 22050, 8000]) {
  test(`${rate} Hz → 16 kHz: tone + white noise matches scipy's resample_poly (SNR > 100 dB below 0.875 × the lower Nyquist)`, { skip: scipy }, () => {
    const x = toneNoise(rate, rate);
    const y = resampleTo16k(x, rate);
    const inFile = join(tmp, `in_${rate}.f32`), outFile = join(tmp, `out_${rate}.f32`);
    writeFileSync(inFile, new Uint8Array(x.buffer));
    writeFileSync(outFile, new Uint8Array(y.buffer));
    const r = JSON.parse(py("compare", inFile, outFile, String(rate)));
    console.log(`${rate} Hz vs scipy: ${r.inband_snr_db.toFixed(1)} dB in band, ${r.snr_db.toFixed(1)} dB overall`);
    assert.ok(r.inband_snr_db > 100, JSON.stringify(r));
  });
}

// ---- the speech clips the Whisper tests use ------------------------------------------------

const speechMissingReason = speechMissing();
if (speechMissingReason) console.warn(`skipping the speech clip check: ${speechMissingReason}`);

test("speech clips (scripts/speech.mjs): 16 kHz mono, one per sentence, a ~20 s paragraph and one longer than Whisper's 30 s window", { skip: speechMissingReason || false }, () => {
  const files = speechFiles();
  assert.equal(files.length, speechClips().length);
  assert.ok(files.length >= 8);
  for (const f of files) {
    const a = readWavFile(f.path);
    assert.deepEqual([a.sampleRate, a.channels, a.encoding, a.bitsPerSample, a.truncated], [16000, 1, "pcm", 16, false], f.id);
    assert.equal(a.frames / 16000, f.seconds, f.id);
    assert.ok(f.seconds > 1.5 && rmsDb(a.samples[0], 0, a.frames) > -40, `${f.id}: ${f.seconds} s of near silence`);
    assert.deepEqual(decodeWav16kMono(f.path), a.samples[0]);
  }
  const seconds = Object.fromEntries(files.map((f) => [f.id, f.seconds]));
  assert.ok(seconds.paragraph > 15 && seconds.paragraph < 25, `paragraph: ${seconds.paragraph} s`);
  assert.ok(seconds.long > 30, `long: ${seconds.long} s`);
});
