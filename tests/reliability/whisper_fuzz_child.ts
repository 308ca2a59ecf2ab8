// The Whisper input fuzz run, in its own process (whisper_fuzz.test.ts starts it, so that a crash
// or a hang fails the test with the seed and case instead of ending the runner).
//
// Model files: the converted Whisper base (WSP_GGML_FUZZ_MODEL) is read once: its structure (header, mel
// filters, vocabulary, every tensor's header and name) is kept in memory, the tensor data is not.
// Each case applies 1–3 mutations to that structure (byte flips in the first 64 KiB or anywhere in
// it, i32 overwrites at hyperparameter, filter, vocabulary and tensor-header fields, name bytes,
// truncation, bytes appended) and writes it as a sparse file of the mutated length: the structure
// at its offsets, the data as holes. scanWhisperModel reads only the structure, so it sees what it
// would see in a full copy. A case the scan accepts is then written as a real copy (the model with
// the structure patched) and loaded with WhisperModel.load, which must load (then the model is
// freed) or reject with WhisperError FAILED; at most WSP_GGML_FUZZ_LOADS such loads.
//
// WAV files: small files of every layout the reader takes (PCM 8/16/24/32, float 32/64,
// extensible, RF64, extra chunks), mutated the same way at their chunk and fmt fields, each through
// decodeWav16kMono: a Float32Array or an AudioError.
//
// Environment: WSP_GGML_FUZZ_SEED (1), WSP_GGML_FUZZ_CASES (model cases, 2000), WSP_GGML_FUZZ_WAVS
// (2000), WSP_GGML_FUZZ_LOADS (16), WSP_GGML_FUZZ_CASE=N (only model case N), WSP_GGML_FUZZ_DUMP
// (write that case's structure-only file there). Prints `fuzz-progress` lines and `fuzz-report`.
import { closeSync, copyFileSync, ftruncateSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { AudioError, WhisperError } from "../../src/core/errors.ts";
import { scanWhisperModel } from "../../src/whisper/model_file.ts";
import { decodeWav16kMono } from "../../src/whisper/wav.ts";
import { WhisperModel } from "../../src/whisper/whisper.ts";
import { envInt, forcedGc, mib, Rng, rss } from "./lib.ts";

const modelPath = process.env.WSP_GGML_FUZZ_MODEL ?? "";
const seed = envInt("WSP_GGML_FUZZ_SEED", 1);
const cases = envInt("WSP_GGML_FUZZ_CASES", 2000);
const wavCases = envInt("WSP_GGML_FUZZ_WAVS", 2000);
const maxLoads = envInt("WSP_GGML_FUZZ_LOADS", 16);
const only = envInt("WSP_GGML_FUZZ_CASE", -1);
const dump = process.env.WSP_GGML_FUZZ_DUMP;
if (!modelPath) throw new Error("WSP_GGML_FUZZ_MODEL must name a converted Whisper model");
const tmp = mkdtempSync(join(tmpdir(), "wsp-whisper-fuzz-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

// ---- the model's structure ------------------------------------------------------------------
/** A run of structure bytes at a file offset. */
interface Region { at: number; bytes: Uint8Array }
type Kind = "hparam" | "melDim" | "vocabCount" | "tokenLen" | "nDims" | "nameLen" | "ttype" | "ne";
interface Field { at: number; kind: Kind }

function readAt(fd: number, at: number, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let done = 0; done < n;) {
    const k = readSync(fd, b, done, n - done, at + done);
    if (k <= 0) throw new Error(`short read of the model at ${at + done}`);
    done += k;
  }
  return b;
}

const base = (() => {
  const info = scanWhisperModel(modelPath); // the unmutated model must pass
  const fd = openSync(modelPath, "r");
  try {
    const fields: Field[] = [];
    for (let i = 0; i < 11; i++) fields.push({ at: 4 + 4 * i, kind: "hparam" });
    fields.push({ at: 48, kind: "melDim" }, { at: 52, kind: "melDim" });
    const firstRecord = info.tensors[0].offset - new TextEncoder().encode(info.tensors[0].name).length - 4 * info.tensors[0].shape.length - 12;
    const head = readAt(fd, 0, firstRecord);
    const v = new DataView(head.buffer);
    let off = 56 + 4 * v.getInt32(48, true) * v.getInt32(52, true);
    fields.push({ at: off, kind: "vocabCount" });
    const nTok = v.getInt32(off, true);
    off += 4;
    for (let i = 0; i < nTok; i++) fields.push({ at: off, kind: "tokenLen" }), off += 4 + v.getUint32(off, true);
    if (off !== firstRecord) throw new Error(`the vocabulary ends at ${off}, the first tensor starts at ${firstRecord}`);
    const regions: Region[] = [{ at: 0, bytes: head }];
    const names: [number, number][] = [];
    for (const t of info.tensors) {
      const nameLen = new TextEncoder().encode(t.name).length;
      const at = t.offset - nameLen - 4 * t.shape.length - 12;
      regions.push({ at, bytes: readAt(fd, at, t.offset - at) });
      names.push([t.offset - nameLen, nameLen]);
      fields.push({ at, kind: "nDims" }, { at: at + 4, kind: "nameLen" }, { at: at + 8, kind: "ttype" });
      t.shape.forEach((_, j) => fields.push({ at: at + 12 + 4 * j, kind: "ne" }));
    }
    return { size: info.fileSize, regions, fields, names, dataRanges: info.tensors.map((t) => [t.offset, t.nbytes] as const) };
  } finally {
    closeSync(fd);
  }
})();

// ---- mutations ------------------------------------------------------------------------------
const I32 = [0, 1, -1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 32, 63, 64, 65, 80, 128, 201, 256, 257, 448, 512, 1024, 1025, 1500, 4096, 8192,
  51864, 51865, 51866, 65536, 0x7fffffff, -0x80000000, 0x40000000, -2, -512, 2007, 1007, 7, 1, 0, 8, 9, 14, -993];
/** Values near a field's own, for the kinds where almost-right matters. */
const NEAR = [1, -1, 2, -2, 4, -4, 32, -32, 1000, -1000, 2000];

/** A mutable copy of the structure. */
interface Case { regions: Region[]; length: number; tail?: Uint8Array; label: string[] }

function regionOf(c: Case, at: number): [Region, number] | undefined {
  // regions are sorted; a binary search
  let lo = 0, hi = c.regions.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1, r = c.regions[mid];
    if (at < r.at) hi = mid - 1;
    else if (at >= r.at + r.bytes.length) lo = mid + 1;
    else return [r, at - r.at];
  }
  return undefined;
}
function setI32(c: Case, at: number, v: number): void {
  for (let k = 0; k < 4; k++) {
    const hit = regionOf(c, at + k);
    if (hit) hit[0].bytes[hit[1]] = (v >>> (8 * k)) & 0xff;
  }
}
function getI32(c: Case, at: number): number {
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const hit = regionOf(c, at + k);
    v |= (hit ? hit[0].bytes[hit[1]] : 0) << (8 * k);
  }
  return v;
}
/** A byte offset inside the structure, uniformly over its bytes. */
const structBytes = base.regions.reduce((n, r) => n + r.bytes.length, 0);
function structOffset(r: Rng): number {
  let k = r.int(structBytes);
  for (const g of base.regions) {
    if (k < g.bytes.length) return g.at + k;
    k -= g.bytes.length;
  }
  return 0;
}

function mutate(c: Case, r: Rng): void {
  const pickField = (kinds: Kind[]) => {
    const fs = base.fields.filter((f) => kinds.includes(f.kind));
    return fs[r.int(fs.length)];
  };
  const overwrite = (f: Field) => {
    const cur = getI32(c, f.at);
    const v = r.chance(0.4) ? r.pick(I32) : r.chance(0.5) ? cur + r.pick(NEAR) : r.chance(0.5) ? r.int(2 ** 32) | 0 : r.range(-8, 8);
    setI32(c, f.at, v);
    c.label.push(`${f.kind}@${f.at}=${v}`);
  };
  switch (r.int(10)) {
    case 0: { // flips in the first 64 KiB: the header, the filter header, the filters
      const n = r.range(1, 8);
      for (let i = 0; i < n; i++) {
        const at = r.chance(0.3) ? r.int(64) : r.int(65536);
        const hit = regionOf(c, at)!;
        hit[0].bytes[hit[1]] ^= 1 << r.int(8);
      }
      c.label.push(`flip64k×${n}`);
      return;
    }
    case 1: { // flips anywhere in the structure
      const n = r.range(1, 4);
      for (let i = 0; i < n; i++) {
        const hit = regionOf(c, structOffset(r))!;
        hit[0].bytes[hit[1]] ^= 1 << r.int(8);
      }
      c.label.push(`flip×${n}`);
      return;
    }
    case 2: return overwrite(pickField(["hparam"]));
    case 3: return overwrite(pickField(["melDim", "vocabCount"]));
    case 4: return overwrite(pickField(["tokenLen"]));
    case 5: return overwrite(pickField(["nDims", "nameLen"]));
    case 6: return overwrite(pickField(["ttype", "ne"]));
    case 7: { // a byte of a tensor name
      const [nameAt, nameLen] = r.pick(base.names);
      const at = nameAt + r.int(nameLen);
      const hit = regionOf(c, at)!;
      hit[0].bytes[hit[1]] = r.pick([0, 0x2e, 0x30, 0x39, 0x41, 0x7a, 0xff, 0xc3]);
      c.label.push(`name-byte@${at}`);
      return;
    }
    case 8: { // truncation: anywhere, at a field, or inside a tensor's data
      const how = r.int(3);
      const cut = how === 0 ? r.int(base.size) : how === 1 ? Math.max(0, r.pick(base.fields).at + r.range(-2, 5)) : (() => {
        const [o, n] = r.pick(base.dataRanges);
        return o + r.int(n);
      })();
      c.length = Math.min(c.length, cut);
      c.label.push(`truncate@${cut}`);
      return;
    }
    default: { // bytes appended: a partial record, or a record of its own
      const n = r.chance(0.5) ? r.range(1, 11) : r.range(12, 64);
      c.tail = Uint8Array.from({ length: n }, () => (r.chance(0.5) ? 0 : r.int(256)));
      if (n >= 12 && r.chance(0.5)) c.tail.set(new Uint8Array(Int32Array.of(r.range(1, 3), r.range(1, 40), r.pick([0, 1, 8])).buffer));
      c.label.push(`append${n}`);
    }
  }
}

function makeCase(i: number): Case {
  const r = new Rng((seed * 0x9e3779b1 + i * 0x85ebca6b) >>> 0);
  // The structure is 0.6 MB: a copy per case is cheap enough.
  const c: Case = { regions: base.regions.map((g) => ({ at: g.at, bytes: g.bytes.slice() })), length: base.size, label: [] };
  const n = r.chance(0.6) ? 1 : r.range(2, 3);
  for (let j = 0; j < n; j++) mutate(c, r);
  return c;
}

/**
 * Writes the case into an open file: its length, then the structure at its offsets (every region,
 * so the previous case's mutations are undone) and the appended bytes. The data between is what
 * the file holds there: holes in the scan file, the model's own data in the load copy.
 */
function writeCase(c: Case, fd: number): void {
  ftruncateSync(fd, c.length);
  for (const g of c.regions) {
    if (g.at >= c.length) break;
    writeSync(fd, g.bytes, 0, Math.min(g.bytes.length, c.length - g.at), g.at);
  }
  if (c.tail && c.length === base.size) writeSync(fd, c.tail, 0, c.tail.length, c.length);
}

// ---- WAV seeds and mutations ----------------------------------------------------------------
const le = (n: number, bytes: number) => Array.from({ length: bytes }, (_, k) => Math.floor(n / 2 ** (8 * k)) & 0xff);
const ascii = (s: string) => [...s].map((ch) => ch.charCodeAt(0));
function chunk(id: string, body: number[]): number[] {
  return [...ascii(id), ...le(body.length, 4), ...body, ...(body.length % 2 ? [0] : [])];
}
function fmtBody(tag: number, ch: number, rate: number, bits: number, ext = false): number[] {
  const align = ch * (bits / 8);
  const b = [...le(ext ? 0xfffe : tag, 2), ...le(ch, 2), ...le(rate, 4), ...le(rate * align, 4), ...le(align, 2), ...le(bits, 2)];
  return ext ? [...b, ...le(22, 2), ...le(bits, 2), ...le(3, 4), ...le(tag, 2), 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71] : b;
}
function samples(frames: number, ch: number, bits: number, float: boolean, r: Rng): number[] {
  const out: number[] = [];
  for (let i = 0; i < frames * ch; i++) {
    const x = Math.sin(i * 0.05) * 0.5 + (r.next() - 0.5) * 0.1;
    if (float) {
      const b = new Uint8Array(bits / 8);
      const dv = new DataView(b.buffer);
      if (bits === 32) dv.setFloat32(0, x, true);
      else dv.setFloat64(0, x, true);
      out.push(...b);
    } else if (bits === 8) out.push(Math.round(x * 127) + 128);
    else out.push(...le(Math.round(x * (2 ** (bits - 1) - 1)) >>> 0, bits / 8));
  }
  return out;
}
function wavSeed(tag: number, ch: number, rate: number, bits: number, frames: number, opts: { ext?: boolean; list?: boolean; rf64?: boolean } = {}): Uint8Array {
  const r = new Rng(rate + bits + ch);
  const data = samples(frames, ch, bits, tag === 3, r);
  const chunks = [
    ...(opts.rf64 ? [chunk("ds64", [...le(0, 8), ...le(data.length, 8), ...le(frames, 8), 0, 0, 0, 0])] : []),
    chunk("fmt ", fmtBody(tag, ch, rate, bits, opts.ext)),
    ...(opts.list ? [chunk("LIST", ascii("INFOISFT\x05\x00\x00\x00wsp\x00\x00"))] : []),
    opts.rf64 ? [...ascii("data"), ...le(0xffffffff, 4), ...data] : chunk("data", data),
  ].flat();
  const body = [...ascii("WAVE"), ...chunks];
  return new Uint8Array([...ascii(opts.rf64 ? "RF64" : "RIFF"), ...le(opts.rf64 ? 0xffffffff : body.length, 4), ...body]);
}
const wavSeeds: Uint8Array[] = [
  wavSeed(1, 1, 16000, 16, 400),
  wavSeed(1, 2, 8000, 8, 300, { list: true }),
  wavSeed(1, 1, 44100, 24, 500),
  wavSeed(1, 3, 22050, 32, 200),
  wavSeed(3, 1, 48000, 32, 600),
  wavSeed(3, 2, 11025, 64, 150),
  wavSeed(1, 2, 16000, 16, 300, { ext: true }),
  wavSeed(3, 1, 32000, 32, 300, { ext: true, list: true }),
  wavSeed(1, 1, 24000, 16, 300, { rf64: true }),
];
/** Offsets of the u16/u32 fields of a seed (chunk sizes, fmt fields, ds64 sizes). */
function wavFields(b: Uint8Array): [number, 2 | 4][] {
  const v = new DataView(b.buffer);
  const out: [number, 2 | 4][] = [[4, 4]];
  for (let p = 12; p + 8 <= b.length;) {
    const id = String.fromCharCode(...b.subarray(p, p + 4));
    const size = v.getUint32(p + 4, true);
    out.push([p + 4, 4]);
    if (id === "fmt ") out.push([p + 8, 2], [p + 10, 2], [p + 12, 4], [p + 16, 4], [p + 20, 2], [p + 22, 2], ...(size >= 40 ? [[p + 26, 2], [p + 28, 4], [p + 32, 2]] as [number, 2 | 4][] : []));
    if (id === "ds64") out.push([p + 8, 4], [p + 12, 4], [p + 16, 4], [p + 20, 4]);
    if (id === "data") break;
    p += 8 + size + (size & 1);
  }
  return out;
}
const wavFieldSets = wavSeeds.map(wavFields);
const U32 = [0, 1, 2, 3, 4, 7, 8, 16, 24, 32, 64, 100, 8000, 16000, 44100, 1_000_000, 1_000_001, 0xfffe, 0xffff, 0x7fffffff, 0xfffffffe, 0xffffffff];

function mutateWav(i: number): [Uint8Array, string] {
  const r = new Rng((seed * 0x27d4eb2f + i * 0x165667b1) >>> 0);
  const k = r.int(wavSeeds.length);
  let b = wavSeeds[k].slice();
  const labels = [`seed${k}`];
  const n = r.chance(0.6) ? 1 : r.range(2, 3);
  for (let j = 0; j < n; j++) {
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    switch (r.int(6)) {
      case 0: {
        const m = r.range(1, 8);
        for (let q = 0; q < m; q++) b[r.chance(0.7) ? r.int(Math.min(b.length, 80)) : r.int(b.length)] ^= 1 << r.int(8);
        labels.push(`flip×${m}`);
        break;
      }
      case 1:
      case 2: {
        const [at, size] = r.pick(wavFieldSets[k]);
        if (at + size > b.length) break;
        const cur = size === 2 ? v.getUint16(at, true) : v.getUint32(at, true);
        // Rates are drawn from a few values: each new one builds (and caches) a resampling filter.
        const nv = r.chance(0.4) ? r.pick(U32) : r.chance(0.5) ? cur + r.pick([1, -1, 2, -2, 8, -8]) : r.int(2 ** (8 * size));
        if (size === 2) v.setUint16(at, nv & 0xffff, true);
        else v.setUint32(at, nv >>> 0, true);
        labels.push(`u${8 * size}@${at}=${nv}`);
        break;
      }
      case 3: {
        const cut = r.chance(0.5) ? r.int(Math.min(b.length, 80)) : r.int(b.length + 1);
        b = b.slice(0, cut);
        labels.push(`truncate@${cut}`);
        break;
      }
      case 4: {
        const at = r.int(b.length + 1), m = r.range(1, 12);
        const out = new Uint8Array(b.length + m);
        out.set(b.subarray(0, at));
        for (let q = 0; q < m; q++) out[at + q] = r.int(256);
        out.set(b.subarray(at), at + m);
        b = out;
        labels.push(`insert${m}@${at}`);
        break;
      }
      default: { // a float sample set to NaN, infinity or the largest float
        const at = 44 + 4 * r.int(Math.max(1, (b.length - 48) >> 2));
        if (at + 4 <= b.length) v.setFloat32(at, r.pick([NaN, Infinity, -Infinity, 3.4e38, -3.4e38, 1e-45]), true);
        labels.push(`float@${at}`);
      }
    }
  }
  return [b, labels.join(" + ")];
}

// ---- the run --------------------------------------------------------------------------------
const outcomes: Record<string, number> = {};
const wavOutcomes: Record<string, number> = {};
const failures: { case: string; label: string; error: string }[] = [];
const count = (o: Record<string, number>, k: string) => void (o[k] = (o[k] ?? 0) + 1);
const short = (e: unknown) => String((e as Error)?.stack ?? e).split("\n").slice(0, 4).join(" | ");
const gc = forcedGc();
const rssStart = rss();
const t0 = Date.now();
let slowest = { ms: 0, label: "" };
let loads = 0;
const scanPath = join(tmp, "case.bin"), loadPath = join(tmp, "load.bin");
const scanFd = openSync(scanPath, "w+");
let loadFd = -1; // a copy of the model, made at the first load

const first = only >= 0 ? only : 0, last = only >= 0 ? only + 1 : cases;
for (let i = first; i < last; i++) {
  const c = makeCase(i);
  const label = c.label.join(" + ");
  const t = Date.now();
  try {
    writeCase(c, scanFd);
    if (dump && i === only) copyFileSync(scanPath, dump);
    let accepted = false;
    try {
      scanWhisperModel(scanPath);
      accepted = true;
    } catch (e) {
      if (!(e instanceof WhisperError) || !["INVALID", "TRUNCATED", "FORMAT"].includes(e.reason)) throw e;
      count(outcomes, `scan:${e.reason}`);
    }
    if (accepted) {
      if (loads >= maxLoads) count(outcomes, "scan:ok (load skipped)");
      else {
        loads++;
        if (loadFd < 0) {
          copyFileSync(modelPath, loadPath);
          loadFd = openSync(loadPath, "r+");
        }
        writeCase(c, loadFd);
        try {
          const m = await WhisperModel.load(loadPath, { useGpu: false });
          m.free();
          count(outcomes, "scan:ok, load:ok");
        } catch (e) {
          if (!(e instanceof WhisperError) || e.reason !== "FAILED") throw e;
          count(outcomes, "scan:ok, load:FAILED");
        }
      }
    }
  } catch (e) {
    count(outcomes, "FAILURE");
    failures.push({ case: `model ${i}`, label, error: short(e) });
  }
  const ms = Date.now() - t;
  if (ms > slowest.ms) slowest = { ms, label: `model ${i}: ${label}` };
  if (only < 0 && (i + 1) % Math.max(1, Math.floor(cases / 5)) === 0) console.log(`fuzz-progress ${JSON.stringify({ model: i + 1, rssMiB: mib(rss()) })}`);
}
const modelMs = Date.now() - t0;
closeSync(scanFd);
if (loadFd >= 0) closeSync(loadFd);
rmSync(loadPath, { force: true });

const t1 = Date.now();
for (let i = 0; i < (only >= 0 ? 0 : wavCases); i++) {
  const [b, label] = mutateWav(i);
  const t = Date.now();
  try {
    const pcm = decodeWav16kMono(b);
    if (!(pcm instanceof Float32Array)) throw new Error(`decodeWav16kMono returned ${Object.prototype.toString.call(pcm)}`);
    count(wavOutcomes, pcm.every(Number.isFinite) ? "ok" : "ok (non-finite samples)");
  } catch (e) {
    if (!(e instanceof AudioError)) {
      count(wavOutcomes, "FAILURE");
      failures.push({ case: `wav ${i}`, label, error: short(e) });
    } else count(wavOutcomes, "AudioError");
  }
  const ms = Date.now() - t;
  if (ms > slowest.ms) slowest = { ms, label: `wav ${i}: ${label}` };
  if ((i + 1) % Math.max(1, Math.floor(wavCases / 5)) === 0) console.log(`fuzz-progress ${JSON.stringify({ wav: i + 1, rssMiB: mib(rss()) })}`);
}
gc();
console.log(`fuzz-report ${JSON.stringify({
  seed, cases: last - first, wavCases: only >= 0 ? 0 : wavCases, loads, modelMs, wavMs: Date.now() - t1, slowest,
  outcomes, wavOutcomes, failures: failures.slice(0, 20), nFailures: failures.length,
  rss: { start: rssStart, end: rss() },
})}`);
