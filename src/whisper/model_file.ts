/**
 * The check of a whisper.cpp model file that runs before whisper.cpp reads
 * it. whisper.cpp's loader trusts the file: a large hyperparameter sizes
 * allocations and ggml contexts, a tensor with more than 4 dimensions
 * overruns a stack array, an unknown tensor type reaches ggml's type table,
 * a file with no tensors loads as an empty model. This reader walks the
 * whole layout (header, mel filters, vocabulary, every tensor record) with
 * positional reads, and accepts only what whisper.cpp's loader and graphs
 * can use: Whisper's own shapes, the types its loader creates, data that is
 * all there.
 *
 * Layout (little-endian): u32 magic `ggml`; 11 × i32 hyperparameters; mel
 * filters (i32 n_mel, i32 n_fft, f32 × n_mel·n_fft); vocabulary (i32 count,
 * then u32 length + bytes per token); tensors until the end (i32 n_dims,
 * i32 name length, i32 type, i32 × n_dims sizes, name, data).
 *
 * @module
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { WhisperError } from "../core/errors.ts";

/** The file's magic, `ggml` as a little-endian u32. */
export const WHISPER_MAGIC = 0x67676d6c;

/** whisper.cpp's hyper-parameters, in file order (the file type follows them). */
export interface WhisperHparams {
  /** Rows of the token embedding (51865 for the multilingual models; the special tokens included). */
  readonly nVocab: number;
  /** Encoder positions (1500: 30 s of audio after the stride-2 convolution). */
  readonly nAudioCtx: number;
  /** Encoder width. */
  readonly nAudioState: number;
  /** Encoder attention heads. */
  readonly nAudioHead: number;
  /** Encoder blocks. */
  readonly nAudioLayer: number;
  /** Decoder positions (448). */
  readonly nTextCtx: number;
  /** Decoder width (equal to the encoder's). */
  readonly nTextState: number;
  /** Decoder attention heads. */
  readonly nTextHead: number;
  /** Decoder blocks. */
  readonly nTextLayer: number;
  /** Mel bands of the input (80; 128 for large-v3). */
  readonly nMels: number;
}

/** One tensor record of the file. */
export interface WhisperTensorInfo {
  /** Its name (`encoder.blocks.0.attn.query.weight`, …). */
  readonly name: string;
  /** Sizes, innermost first (ggml's ne). */
  readonly shape: readonly number[];
  /** ggml type id. */
  readonly type: number;
  /** Byte offset of the data in the file. */
  readonly offset: number;
  /** Bytes of data. */
  readonly nbytes: number;
}

/** What the check read: enough to describe the model without loading it. */
export interface WhisperModelInfo {
  /** The file checked. */
  readonly path: string;
  /** Its size in bytes. */
  readonly fileSize: number;
  /** Its hyper-parameters. */
  readonly hparams: WhisperHparams;
  /** ggml's file type (0 f32, 1 f16, 2 q4_0, 3 q4_1, 7 q8_0, 8 q5_0, 9 q5_1, …), without the quantization version. */
  readonly ftype: number;
  /** Tokens stored in the file (whisper.cpp adds the rest up to nVocab). */
  readonly nVocabStored: number;
  /** Whether the model is multilingual (nVocab ≥ 51865). */
  readonly multilingual: boolean;
  /** `tiny`, `base`, `small`, `medium`, `large` by encoder depth, else `unknown`. */
  readonly size: string;
  /** Every tensor record, in file order. */
  readonly tensors: readonly WhisperTensorInfo[];
}

// ggml type ids and their (block elements, block bytes): the types whisper.cpp creates weights in.
const F32 = 0, F16 = 1;
const TYPE_BLOCKS: Readonly<Record<number, readonly [number, number]>> = {
  0: [1, 4], 1: [1, 2], 2: [32, 18], 3: [32, 20], 6: [32, 22], 7: [32, 24], 8: [32, 34], 9: [32, 36],
  10: [256, 84], 11: [256, 110], 12: [256, 144], 13: [256, 176], 14: [256, 210],
};
// ggml_ftype → weight type, as wsp_ggml_ftype_to_wsp_ggml_type maps those whisper.cpp writes.
const FTYPE_WTYPE: Readonly<Record<number, number>> = { 0: 0, 1: 1, 2: 2, 3: 3, 7: 8, 8: 6, 9: 7, 10: 10, 11: 11, 12: 12, 13: 13, 14: 14 };
/** ggml keeps the quantization version in ftype's thousands. */
const QNT_VERSION_FACTOR = 1000;
/** Whisper's vocabularies: English-only, multilingual, large-v3. */
const VOCAB_SIZES = new Set([51864, 51865, 51866]);
/** Bytes read at once while walking the vocabulary. */
const VOCAB_WINDOW = 1 << 16;
const SIZES: Readonly<Record<number, string>> = { 4: "tiny", 6: "base", 12: "small", 24: "medium", 32: "large" };

/** Reads `length` bytes at `offset`, or throws TRUNCATED. */
class Reader {
  readonly #fd: number;
  readonly size: number;
  readonly #path: string;
  constructor(fd: number, size: number, path: string) {
    this.#fd = fd;
    this.size = size;
    this.#path = path;
  }
  bytes(offset: number, length: number, what: string): Uint8Array {
    if (offset + length > this.size) {
      throw new WhisperError("TRUNCATED", `${this.#path}: the file ends inside ${what} (${length} bytes needed, ${Math.max(0, this.size - offset)} left)`, offset);
    }
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.#fd, out, done, length - done, offset + done);
      if (n <= 0) throw new WhisperError("IO", `${this.#path}: read failed inside ${what}`, offset + done);
      done += n;
    }
    return out;
  }
  i32s(offset: number, count: number, what: string): Int32Array {
    const b = this.bytes(offset, 4 * count, what);
    const v = new DataView(b.buffer);
    return Int32Array.from({ length: count }, (_, i) => v.getInt32(4 * i, true));
  }
}

/** The tensors whisper.cpp's loader creates for these hyperparameters: name → [shape, type]. */
function expectedTensors(h: WhisperHparams, wtype: number): Map<string, [number[], number]> {
  const vtype = wtype === F32 ? F32 : F16; // conv weights
  const m = new Map<string, [number[], number]>();
  const a = h.nAudioState, t = h.nTextState;
  m.set("encoder.positional_embedding", [[a, h.nAudioCtx], F32]);
  m.set("encoder.conv1.weight", [[3, h.nMels, a], vtype]);
  m.set("encoder.conv1.bias", [[1, a], F32]);
  m.set("encoder.conv2.weight", [[3, a, a], vtype]);
  m.set("encoder.conv2.bias", [[1, a], F32]);
  m.set("encoder.ln_post.weight", [[a], F32]);
  m.set("encoder.ln_post.bias", [[a], F32]);
  const block = (prefix: string, n: number, cross: boolean) => {
    m.set(`${prefix}.mlp_ln.weight`, [[n], F32]);
    m.set(`${prefix}.mlp_ln.bias`, [[n], F32]);
    m.set(`${prefix}.mlp.0.weight`, [[n, 4 * n], wtype]);
    m.set(`${prefix}.mlp.0.bias`, [[4 * n], F32]);
    m.set(`${prefix}.mlp.2.weight`, [[4 * n, n], wtype]);
    m.set(`${prefix}.mlp.2.bias`, [[n], F32]);
    for (const attn of cross ? ["attn", "cross_attn"] : ["attn"]) {
      m.set(`${prefix}.${attn}_ln.weight`, [[n], F32]);
      m.set(`${prefix}.${attn}_ln.bias`, [[n], F32]);
      m.set(`${prefix}.${attn}.query.weight`, [[n, n], wtype]);
      m.set(`${prefix}.${attn}.query.bias`, [[n], F32]);
      m.set(`${prefix}.${attn}.key.weight`, [[n, n], wtype]);
      m.set(`${prefix}.${attn}.value.weight`, [[n, n], wtype]);
      m.set(`${prefix}.${attn}.value.bias`, [[n], F32]);
      m.set(`${prefix}.${attn}.out.weight`, [[n, n], wtype]);
      m.set(`${prefix}.${attn}.out.bias`, [[n], F32]);
    }
  };
  for (let i = 0; i < h.nAudioLayer; i++) block(`encoder.blocks.${i}`, a, false);
  m.set("decoder.positional_embedding", [[t, h.nTextCtx], F32]);
  m.set("decoder.token_embedding.weight", [[t, h.nVocab], wtype]);
  m.set("decoder.ln.weight", [[t], F32]);
  m.set("decoder.ln.bias", [[t], F32]);
  for (let i = 0; i < h.nTextLayer; i++) block(`decoder.blocks.${i}`, t, true);
  return m;
}

/** Byte offset of each hyperparameter (file order), for the errors. */
const HP_AT = { nVocab: 4, nAudioCtx: 8, nAudioState: 12, nAudioHead: 16, nAudioLayer: 20, nTextCtx: 24, nTextState: 28, nTextHead: 32, nTextLayer: 36, nMels: 40, ftype: 44 } as const;

function checkHparams(path: string, h: WhisperHparams, ftype: number): void {
  const bad = (what: string, at: number) => new WhisperError("INVALID", `${path}: ${what}`, at);
  if (!VOCAB_SIZES.has(h.nVocab)) throw bad(`n_vocab ${h.nVocab} is not a Whisper vocabulary (51864, 51865 or 51866)`, HP_AT.nVocab);
  if (h.nAudioCtx !== 1500) throw bad(`n_audio_ctx ${h.nAudioCtx}: Whisper's encoder takes 1500 positions (30 s of audio)`, HP_AT.nAudioCtx);
  if (h.nTextCtx !== 448) throw bad(`n_text_ctx ${h.nTextCtx}: Whisper's decoder takes 448 positions`, HP_AT.nTextCtx);
  if (h.nMels !== 80 && h.nMels !== 128) throw bad(`n_mels ${h.nMels}: Whisper uses 80 or 128 mel bands`, HP_AT.nMels);
  if (h.nAudioState !== h.nTextState) throw bad(`n_audio_state ${h.nAudioState} ≠ n_text_state ${h.nTextState} (whisper.cpp asserts they are equal)`, HP_AT.nTextState);
  for (const [name, state, head, layer] of [["audio", h.nAudioState, h.nAudioHead, h.nAudioLayer], ["text", h.nTextState, h.nTextHead, h.nTextLayer]] as const) {
    const at = name === "audio" ? HP_AT.nAudioState : HP_AT.nTextState;
    if (!(state >= 64 && state <= 4096)) throw bad(`n_${name}_state ${state} is outside 64 … 4096`, at);
    if (!(head >= 1 && head <= 64) || state % head !== 0) throw bad(`n_${name}_head ${head} does not divide n_${name}_state ${state} (1 … 64 heads)`, at + 4);
    if (!(layer >= 1 && layer <= 64)) throw bad(`n_${name}_layer ${layer} is outside 1 … 64`, at + 8);
  }
  // A negative ftype stays negative under C's % (whisper.cpp then refuses it).
  if (!(ftype in FTYPE_WTYPE)) throw bad(`ftype ${ftype} is not a type whisper.cpp reads`, HP_AT.ftype);
}

/**
 * Checks a whisper.cpp model file from end to end and describes it.
 *
 * @throws {WhisperError} IO (cannot open or read), TRUNCATED, FORMAT (magic), INVALID (a value whisper.cpp cannot use), each with the byte offset
 */
export function scanWhisperModel(path: string): WhisperModelInfo {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new WhisperError("IO", `${path}: ${code === "ENOENT" ? "no such file (convert one with `wsp-ggml convert-whisper`)" : code === "EISDIR" ? "is a folder, not a model file" : (e as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new WhisperError("IO", `${path}: not a regular file`);
    const r = new Reader(fd, st.size, path);
    const magic = new DataView(r.bytes(0, 4, "the magic").buffer).getUint32(0, true);
    if (magic !== WHISPER_MAGIC) {
      const gguf = magic === 0x46554747;
      throw new WhisperError("FORMAT", `${path}: not a whisper.cpp model file (magic 0x${magic.toString(16).padStart(8, "0")}${gguf ? ": a GGUF file; whisper.cpp reads its own ggml format" : ""})`, 0);
    }
    const hp = r.i32s(4, 11, "the hyperparameters");
    const h: WhisperHparams = {
      nVocab: hp[0], nAudioCtx: hp[1], nAudioState: hp[2], nAudioHead: hp[3], nAudioLayer: hp[4],
      nTextCtx: hp[5], nTextState: hp[6], nTextHead: hp[7], nTextLayer: hp[8], nMels: hp[9],
    };
    const ftype = hp[10] % QNT_VERSION_FACTOR; // C's %, as whisper.cpp computes it
    checkHparams(path, h, ftype);
    const wtype = FTYPE_WTYPE[ftype];
    let off = 48;
    const [nMel, nFft] = r.i32s(off, 2, "the mel filter header");
    if (nMel !== h.nMels || nFft !== 201) {
      throw new WhisperError("INVALID", `${path}: mel filters ${nMel} × ${nFft}, expected ${h.nMels} × 201 (n_fft 400)`, off);
    }
    off += 8;
    if (off + 4 * nMel * nFft > r.size) throw new WhisperError("TRUNCATED", `${path}: the file ends inside the mel filters (${4 * nMel * nFft} bytes, ${r.size - off} left)`, off);
    off += 4 * nMel * nFft;
    const vocabAt = off;
    let space = false;
    const [nStored] = r.i32s(off, 1, "the vocabulary count");
    if (!(nStored >= 1 && nStored <= h.nVocab)) throw new WhisperError("INVALID", `${path}: ${nStored} vocabulary entries for n_vocab ${h.nVocab}`, off);
    off += 4;
    // Token lengths, read through a 64 KiB window (51k small records; one read each took ~80 ms).
    let win: Uint8Array = new Uint8Array(0), winAt = 0;
    for (let i = 0; i < nStored; i++) {
      if (off + 4 > winAt + win.length) {
        winAt = off;
        win = r.bytes(off, Math.max(4, Math.min(VOCAB_WINDOW, r.size - off)), `the length of token ${i}`);
      }
      const p = off - winAt;
      const len = (win[p] | (win[p + 1] << 8) | (win[p + 2] << 16) | (win[p + 3] << 24)) >>> 0;
      if (len > 1024) throw new WhisperError("INVALID", `${path}: token ${i} is ${len} bytes long (at most 1024)`, off);
      if (len === 1 && !space && off + 5 <= r.size) space = (p + 4 < win.length ? win[p + 4] : r.bytes(off + 4, 1, `token ${i}`)[0]) === 0x20;
      off += 4 + len;
      if (off > r.size) throw new WhisperError("TRUNCATED", `${path}: the file ends inside token ${i}`, off - len);
    }
    // whisper.cpp looks the token " " up with map::at on every window (suppress_blank): without it, std::terminate.
    if (!space) throw new WhisperError("INVALID", `${path}: the vocabulary has no token " " (whisper.cpp needs it to suppress blank output)`, vocabAt);
    const want = expectedTensors(h, wtype);
    const tensors: WhisperTensorInfo[] = [];
    const seen = new Set<string>();
    while (off < r.size) {
      const at = off;
      const [nDims, nameLen, type] = r.i32s(off, 3, "a tensor header");
      if (!(nDims >= 1 && nDims <= 3)) throw new WhisperError("INVALID", `${path}: a tensor with ${nDims} dimensions (whisper.cpp's are 1 … 3)`, at);
      if (!(nameLen >= 1 && nameLen <= 256)) throw new WhisperError("INVALID", `${path}: a tensor name of ${nameLen} bytes (1 … 256)`, at);
      const shape = Array.from(r.i32s(off + 12, nDims, "a tensor shape"));
      off += 12 + 4 * nDims;
      const name = new TextDecoder("utf-8", { fatal: false }).decode(r.bytes(off, nameLen, "a tensor name"));
      off += nameLen;
      const spec = want.get(name);
      if (!spec) throw new WhisperError("INVALID", `${path}: unknown tensor ${JSON.stringify(name)} for a ${h.nAudioLayer}/${h.nTextLayer}-layer model`, at);
      if (seen.has(name)) throw new WhisperError("INVALID", `${path}: tensor ${JSON.stringify(name)} appears twice`, at);
      seen.add(name);
      const [wantShape, wantType] = spec;
      const padded = [...shape, 1, 1, 1].slice(0, 3), wantPadded = [...wantShape, 1, 1, 1].slice(0, 3);
      if (padded.some((n, i) => n !== wantPadded[i])) {
        throw new WhisperError("INVALID", `${path}: tensor ${JSON.stringify(name)} has shape [${shape}], expected [${wantShape}]`, at);
      }
      if (type !== wantType) throw new WhisperError("INVALID", `${path}: tensor ${JSON.stringify(name)} has type ${type}, expected ${wantType} for ftype ${ftype}`, at);
      const [blck, bytes] = TYPE_BLOCKS[type];
      const n = padded[0] * padded[1] * padded[2];
      if (padded[0] % blck !== 0) throw new WhisperError("INVALID", `${path}: tensor ${JSON.stringify(name)}: ${padded[0]} columns is not a multiple of the type's block ${blck}`, at);
      const nbytes = (n / blck) * bytes;
      if (off + nbytes > r.size) throw new WhisperError("TRUNCATED", `${path}: the file ends inside the data of ${JSON.stringify(name)} (${nbytes} bytes, ${r.size - off} left)`, off);
      tensors.push({ name, shape, type, offset: off, nbytes });
      off += nbytes;
    }
    if (seen.size !== want.size) {
      const missing = [...want.keys()].filter((k) => !seen.has(k));
      throw new WhisperError("TRUNCATED", `${path}: ${missing.length} of ${want.size} tensors missing (first: ${missing[0]})`, r.size);
    }
    return {
      path, fileSize: r.size, hparams: h, ftype, nVocabStored: nStored, multilingual: h.nVocab >= 51865,
      size: SIZES[h.nAudioLayer] ?? "unknown", tensors,
    };
  } finally {
    closeSync(fd);
  }
}
