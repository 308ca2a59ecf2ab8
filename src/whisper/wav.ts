/**
 * Reading WAV files for Whisper: {@linkcode readWav} decodes RIFF/WAVE (and
 * RF64/BW64) audio to float samples, {@linkcode decodeWav16kMono} gives the
 * 16 kHz mono signal Whisper takes.
 *
 * Accepted: PCM integers of 8 (unsigned), 16, 24 and 32 bits, IEEE floats of
 * 32 and 64 bits, plain or as `WAVE_FORMAT_EXTENSIBLE`, any channel count and
 * any rate. Integers are scaled to [−1, 1) by dividing by 2^(bits−1): 128
 * (after removing the 8-bit offset of 128), 32768, 8388608, 2147483648; an
 * extensible file's container size decides the divisor (its valid bits are
 * the high ones). Floats are kept as they are (64-bit ones rounded to 32).
 *
 * Chunks other than `fmt ` and `data` (LIST, fact, cue, …) are skipped, each
 * followed by its pad byte when its size is odd. A data chunk whose size is
 * 0xFFFFFFFF, or 0 when the RIFF size says nothing follows it (what a
 * streaming writer leaves), runs to the end of the file. A data chunk that
 * claims more bytes than the file holds (a recording cut short) is read as
 * far as it goes, whole frames only, and the result says `truncated`.
 *
 * Anything else is an {@linkcode AudioError} whose message names the problem
 * (the codec's format tag, the field and its byte offset): not RIFF, not
 * WAVE, no `fmt ` or `data` chunk, an unsupported codec or bit depth, zero
 * channels, rate or bits, a block align that does not match, a float sample
 * that is NaN or infinite.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { AudioError } from "../core/errors.ts";
import { MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, resampleTo16k, WHISPER_SAMPLE_RATE } from "./resample.ts";

/** The error for a file that is not audio this reader takes; `at` is the byte offset of the offending field. */
function bad(message: string, at?: number): AudioError {
  return new AudioError(at === undefined ? message : `${message} (at byte ${at})`);
}

/** Decoded audio at its own rate. */
export interface WavAudio {
  /** Frames per second, in Hz. */
  readonly sampleRate: number;
  /** Channel count. */
  readonly channels: number;
  /** One array per channel (planar), each `frames` long, in [−1, 1) for integer sources. */
  readonly samples: Float32Array[];
  /** Samples per channel. */
  readonly frames: number;
  /** The encoding: `"pcm"` (integers) or `"float"` (IEEE). */
  readonly encoding: "pcm" | "float";
  /** Bits per sample of the container (8, 16, 24, 32 or 64). */
  readonly bitsPerSample: number;
  /** True when the data chunk claims more bytes than the file holds (what there was is returned). */
  readonly truncated: boolean;
}

const FORMAT_NAMES: Record<number, string> = {
  0x0002: "Microsoft ADPCM",
  0x0006: "A-law",
  0x0007: "mu-law",
  0x0011: "IMA ADPCM",
  0x0031: "GSM 6.10",
  0x0050: "MPEG",
  0x0055: "MPEG layer 3",
  0x00ff: "AAC",
  0x1610: "HE-AAC",
  0xf1ac: "FLAC",
};

/** The KSDATAFORMAT_SUBTYPE GUID after its leading 16-bit format tag (bytes 2…15). */
const SUBTYPE_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

function fourcc(b: Uint8Array, at: number): string {
  return String.fromCharCode(b[at], b[at + 1], b[at + 2], b[at + 3]);
}

function tagName(tag: number): string {
  const hex = `0x${tag.toString(16).padStart(4, "0")}`;
  return FORMAT_NAMES[tag] ? `${FORMAT_NAMES[tag]} (format tag ${hex})` : `format tag ${hex}`;
}

/** The `fmt ` chunk, validated. */
interface Fmt {
  encoding: "pcm" | "float";
  channels: number;
  sampleRate: number;
  bits: number;
  blockAlign: number;
}

function parseFmt(v: DataView, at: number, size: number): Fmt {
  if (size < 16) throw bad(`the fmt chunk has ${size} bytes, fewer than the 16 of a PCM format`, at);
  let tag = v.getUint16(at + 8, true);
  const channels = v.getUint16(at + 10, true);
  const sampleRate = v.getUint32(at + 12, true);
  const blockAlign = v.getUint16(at + 20, true);
  const bits = v.getUint16(at + 22, true);
  if (tag === 0xfffe) {
    if (size < 40) throw bad(`WAVE_FORMAT_EXTENSIBLE needs a fmt chunk of 40 bytes, this one has ${size}`, at);
    const valid = v.getUint16(at + 26, true);
    if (valid > bits) throw bad(`WAVE_FORMAT_EXTENSIBLE has ${valid} valid bits in a ${bits}-bit container`, at + 26);
    tag = v.getUint16(at + 32, true);
    for (let i = 0; i < SUBTYPE_TAIL.length; i++) {
      if (v.getUint8(at + 34 + i) !== SUBTYPE_TAIL[i]) {
        throw bad("WAVE_FORMAT_EXTENSIBLE with a sub-format GUID that is not a KSDATAFORMAT_SUBTYPE", at + 32);
      }
    }
  }
  if (tag !== 1 && tag !== 3) throw bad(`unsupported codec: ${tagName(tag)}; only PCM (1) and IEEE float (3) are decoded`, at + 8);
  if (channels === 0) throw bad("the fmt chunk declares 0 channels", at + 10);
  if (sampleRate === 0) throw bad("the fmt chunk declares a sample rate of 0", at + 12);
  if (bits === 0) throw bad("the fmt chunk declares 0 bits per sample", at + 22);
  const encoding = tag === 1 ? "pcm" : "float";
  const ok = encoding === "pcm" ? [8, 16, 24, 32] : [32, 64];
  if (!ok.includes(bits)) throw bad(`${bits}-bit ${encoding === "pcm" ? "PCM" : "IEEE float"} is not decoded (${ok.join(", ")} are)`, at + 22);
  if (blockAlign !== channels * (bits / 8)) {
    throw bad(`block align mismatch: ${blockAlign} bytes per frame, but ${channels} channel(s) of ${bits} bits take ${channels * (bits / 8)}`, at + 20);
  }
  return { encoding, channels, sampleRate, bits, blockAlign };
}

/**
 * Decodes a WAV file held in memory.
 *
 * @param bytes the whole file
 * @returns the samples per channel at the file's own rate
 * @throws {AudioError} when the bytes are not a WAV file this reader decodes, the message saying why and where
 */
export function readWav(bytes: Uint8Array): WavAudio {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = bytes.length;
  if (len < 12) throw bad(`not a WAV file: ${len} bytes, fewer than a RIFF header`);
  const magic = fourcc(bytes, 0);
  const rf64 = magic === "RF64" || magic === "BW64";
  if (magic !== "RIFF" && !rf64) throw bad(`not a RIFF file: it starts with ${JSON.stringify(magic)}`, 0);
  if (fourcc(bytes, 8) !== "WAVE") throw bad(`not a WAVE file: the RIFF form type is ${JSON.stringify(fourcc(bytes, 8))}`, 8);
  const riffEnd = v.getUint32(4, true) + 8;
  let fmt: Fmt | undefined;
  let dataStart = -1;
  let dataLen = 0;
  let truncated = false;
  let ds64Data: number | undefined;
  let pos = 12;
  while (pos + 8 <= len) {
    const id = fourcc(bytes, pos);
    let size = v.getUint32(pos + 4, true);
    const body = pos + 8;
    if (id === "ds64" && rf64) {
      if (size < 24 || body + 24 > len) throw bad(`the ds64 chunk is short (${size} bytes)`, pos);
      // 64-bit sizes: exact as numbers up to 2^53, far beyond any file this reads.
      ds64Data = v.getUint32(body + 8, true) + v.getUint32(body + 12, true) * 2 ** 32;
    } else if (id === "fmt ") {
      if (body + Math.min(size, 40) > len) throw bad("the file ends inside the fmt chunk", pos);
      fmt = parseFmt(v, pos, size);
    } else if (id === "data") {
      dataStart = body;
      const rest = len - body;
      if (rf64 && size === 0xffffffff) {
        if (ds64Data === undefined) throw bad("an RF64 data chunk of size 0xFFFFFFFF with no ds64 chunk before it", pos);
        size = ds64Data;
      }
      const streaming = size === 0xffffffff || (size === 0 && riffEnd <= body);
      if (streaming) dataLen = rest;
      else if (size > rest) [dataLen, truncated] = [rest, true];
      else dataLen = size;
      if (streaming || truncated) break;
    }
    pos = body + size + (size & 1);
  }
  if (!fmt) throw bad("no fmt chunk");
  if (dataStart < 0) throw bad("no data chunk");
  return decode(v, fmt, dataStart, dataLen, truncated);
}

function decode(v: DataView, fmt: Fmt, start: number, byteLen: number, truncated: boolean): WavAudio {
  const { channels, bits, blockAlign, encoding } = fmt;
  const frames = Math.floor(byteLen / blockAlign);
  const samples = Array.from({ length: channels }, () => new Float32Array(frames));
  const width = bits / 8;
  for (let c = 0; c < channels; c++) {
    const out = samples[c];
    let at = start + c * width;
    for (let f = 0; f < frames; f++, at += blockAlign) {
      let x: number;
      if (encoding === "float") {
        x = bits === 32 ? v.getFloat32(at, true) : v.getFloat64(at, true);
        // A NaN or infinity would spread through every later frame of the spectrogram.
        if (!Number.isFinite(x)) throw bad(`sample ${f} of channel ${c} is ${x}, not a finite number`, at);
      } else if (bits === 16) x = v.getInt16(at, true) / 32768;
      else if (bits === 8) x = (v.getUint8(at) - 128) / 128;
      else if (bits === 24) x = ((v.getUint8(at + 2) << 24) >> 8 | v.getUint16(at, true)) / 8388608;
      else x = v.getInt32(at, true) / 2147483648;
      out[f] = x;
    }
  }
  return { sampleRate: fmt.sampleRate, channels, samples, frames, encoding, bitsPerSample: bits, truncated };
}

/**
 * Reads and decodes a WAV file.
 *
 * @param path the file
 * @returns the samples per channel at the file's own rate
 * @throws {AudioError} when the file cannot be read (the fs error as `cause`), or as {@linkcode readWav}
 */
export function readWavFile(path: string): WavAudio {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    const err = bad(`cannot read ${path}: ${(e as Error).message}`);
    (err as { cause?: unknown }).cause = e;
    throw err;
  }
  return readWav(bytes);
}

/**
 * Averages the channels into one (each sample the mean of the frame).
 *
 * @param samples one array per channel, all the same length
 * @returns the mono signal (the array itself when there is one channel)
 */
export function downmix(samples: readonly Float32Array[]): Float32Array {
  if (samples.length === 1) return samples[0];
  const n = samples[0]?.length ?? 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (const ch of samples) s += ch[i];
    out[i] = s / samples.length;
  }
  return out;
}

/**
 * The audio of a WAV file as Whisper takes it: channels averaged to mono,
 * then resampled to 16 kHz ({@linkcode resampleTo16k}; a 16 kHz file's
 * samples come through unchanged).
 *
 * @param input the file's bytes, or its path
 * @returns mono samples at 16 kHz
 * @throws {AudioError} as {@linkcode readWav} / {@linkcode readWavFile}, for a rate outside 1 kHz … 1 MHz, and for audio longer than 2^31 - 1 samples at 16 kHz (37 hours)
 */
export function decodeWav16kMono(input: Uint8Array | string): Float32Array {
  const audio = typeof input === "string" ? readWavFile(input) : readWav(input);
  if (audio.sampleRate > MAX_SAMPLE_RATE) {
    throw bad(`a sample rate of ${audio.sampleRate} Hz is above the ${MAX_SAMPLE_RATE} Hz the resampler takes`);
  }
  if (audio.sampleRate < MIN_SAMPLE_RATE) {
    throw bad(`a sample rate of ${audio.sampleRate} Hz is below the ${MIN_SAMPLE_RATE} Hz the resampler takes (no speech fits under 500 Hz)`);
  }
  const frames = audio.samples[0]?.length ?? 0;
  if (Math.ceil((frames * WHISPER_SAMPLE_RATE) / audio.sampleRate) > 2 ** 31 - 1) {
    throw bad(`${frames} frames at ${audio.sampleRate} Hz are more than 2^31 - 1 samples at 16 kHz (whisper.cpp's limit)`);
  }
  return resampleTo16k(downmix(audio.samples), audio.sampleRate);
}
