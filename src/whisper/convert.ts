/**
 * Converting OpenAI Whisper from CTranslate2's format (a folder with
 * `model.bin`, `tokenizer.json`, optionally `vocabulary.txt` and
 * `config.json`) to whisper.cpp's model file (the legacy `ggml` format that
 * `whisper_model_load` reads):
 *
 * - u32 magic `0x67676d6c`; eleven i32 hyper-parameters: `n_vocab`,
 *   `n_audio_ctx`, `n_audio_state`, `n_audio_head`, `n_audio_layer`,
 *   `n_text_ctx`, `n_text_state`, `n_text_head`, `n_text_layer`, `n_mels`,
 *   `ftype` (1 for f16; a quantized file adds 1000 × ggml's quantization
 *   version 2, as whisper.cpp's quantize tool writes it);
 * - the mel filterbank: i32 `n_mel`, i32 `n_fft` (bins), then f32 values
 *   ({@linkcode melFilters});
 * - the vocabulary: i32 count, then per token an i32 length and its raw
 *   bytes ({@linkcode readWhisperVocab}: the regular tokens; whisper.cpp
 *   names the special ones up to `n_vocab` itself);
 * - per tensor: i32 rank, i32 name length, i32 ggml type, rank × i32
 *   dimensions (innermost first), the name, the data (no padding).
 *
 * The tensors are PyTorch Whisper's (`encoder.blocks.0.attn.query.weight`, …).
 * CTranslate2 fuses the self-attention's Q, K, V (`linear_0`, rows in that
 * order) and the cross-attention's K, V (`linear_1`); they are split by rows.
 * Whisper's key projection has no bias (CTranslate2 stores zeros; a key
 * bias would not change the softmax anyway, it adds the same amount to each
 * score of a query), so the K slice of the bias is dropped. The tied output
 * projection is the token embedding. Types follow whisper.cpp's loader and
 * quantizer: the 2-D weight matrices (token embedding included) in the
 * file's type (f16, q8_0, q5_0), the convolution kernels in f16, the
 * positional embeddings, biases and norms in f32 (conv biases as [1, n]).
 *
 * The output is written tensor by tensor (a quantized matrix in row chunks)
 * to a temporary file beside `outPath`, then renamed.
 *
 * @module
 */
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { quantize, rowSize, Type } from "../mod.ts";
import { type Ct2Model, Ct2Dtype, Ct2FormatError, ct2Values, ct2Variable, type Ct2Variable, f16ToF32, readCt2, readCt2Data } from "./ct2.ts";
import { melFilters } from "./mel.ts";
import { readWhisperVocab } from "./vocab.ts";
import type { WhisperHparams } from "./model_file.ts";

/** whisper.cpp's file magic (`GGML_FILE_MAGIC`, "ggml" as a little-endian u32). */
export const WHISPER_GGML_MAGIC = 0x67676d6c;
/** Bumped when the converter's output changes (cached conversions are then made again). */
export const WHISPER_CONVERT_REVISION = 1;
/** ggml's quantization version, times 1000 in a quantized file's `ftype`. */
export const GGML_QNT_VERSION = 2;

/** The tensor types a converted file can have for its weight matrices. */
export type WhisperFileType = "f16" | "q8_0" | "q5_0";

/** Per file type: ggml's type of the matrices and the `ftype` hyper-parameter written. */
export const WHISPER_FILE_TYPES: Readonly<Record<WhisperFileType, { readonly type: Type; readonly ftype: number }>> = {
  f16: { type: Type.F16, ftype: 1 },
  q8_0: { type: Type.Q8_0, ftype: GGML_QNT_VERSION * 1000 + 7 },
  q5_0: { type: Type.Q5_0, ftype: GGML_QNT_VERSION * 1000 + 8 },
};


/** A tensor of the output: where its values come from and how it is stored. */
export interface WhisperTensorPlan {
  /** whisper.cpp's name. */
  readonly name: string;
  /** ggml dimensions, innermost first. */
  readonly ne: readonly number[];
  /** ggml type in the file. */
  readonly type: Type;
  /** The CTranslate2 variable (aliases followed). */
  readonly source: string;
  /** First element of the source taken (a slice of a fused Q/K/V matrix or bias), and how many. */
  readonly start: number;
  /** Elements taken. */
  readonly count: number;
}

/** The conversion done by {@linkcode convertWhisper}. */
export interface ConvertResult {
  /** The hyper-parameters written. */
  readonly hparams: WhisperHparams;
  /** The `ftype` written. */
  readonly ftype: number;
  /** Tokens written in the vocabulary section. */
  readonly nTokens: number;
  /** Every tensor, in file order. */
  readonly tensors: readonly WhisperTensorPlan[];
  /** Bytes of the output file. */
  readonly bytes: number;
  /** Milliseconds taken. */
  readonly ms: number;
}

/** Options of {@linkcode convertWhisper}. */
export interface ConvertOptions {
  /** The weight matrices' type (default `"f16"`). */
  readonly type?: WhisperFileType;
  /** Called after each tensor is written. */
  readonly onTensor?: (t: WhisperTensorPlan, index: number, count: number) => void;
}

function scalar(model: Ct2Model, fd: number, name: string): number | undefined {
  const v = model.variables.get(name);
  return v && v.shape.length === 0 ? ct2Values(fd, v)[0] : undefined;
}

function countLayers(model: Ct2Model, side: string): number {
  let n = 0;
  while (model.variables.has(`${side}/layer_${n}/ffn/linear_0/weight`)) n++;
  return n;
}

/**
 * whisper.cpp's hyper-parameters of a CTranslate2 Whisper model: the sizes
 * from the shapes of its variables, the head counts from its `num_heads`.
 *
 * @throws {Ct2FormatError} when the model is not a Whisper model or uses something whisper.cpp cannot express
 */
export function whisperHparams(model: Ct2Model, fd: number): WhisperHparams {
  if (!model.spec.startsWith("Whisper")) throw new Ct2FormatError("FORMAT", model.path, `the spec is ${model.spec}, not WhisperSpec; this converter reads CTranslate2 Whisper models only`);
  const emb = ct2Variable(model, "decoder/embeddings/weight");
  const dpe = ct2Variable(model, "decoder/position_encodings/encodings");
  const epe = ct2Variable(model, "encoder/position_encodings/encodings");
  const conv1 = ct2Variable(model, "encoder/conv1/weight");
  const nAudioHead = scalar(model, fd, "encoder/num_heads"), nTextHead = scalar(model, fd, "decoder/num_heads");
  if (nAudioHead === undefined || nTextHead === undefined) throw new Ct2FormatError("NOT_FOUND", model.path, "no encoder/num_heads or decoder/num_heads scalar; is this a Whisper model from a current CTranslate2?");
  for (const flag of ["decoder/scale_embeddings", "decoder/alibi"]) {
    if (scalar(model, fd, flag)) throw new Ct2FormatError("INVALID", model.path, `${flag} is set; whisper.cpp's Whisper has no such option`);
  }
  const proj = model.variables.get(model.aliases.get("decoder/projection/weight") ?? "decoder/projection/weight");
  if (proj && proj.name !== emb.name) throw new Ct2FormatError("INVALID", model.path, "the output projection is not tied to the token embedding; whisper.cpp's Whisper has no separate output matrix");
  if (dpe.shape[1] !== epe.shape[1]) throw new Ct2FormatError("INVALID", model.path, `the decoder's width ${dpe.shape[1]} differs from the encoder's ${epe.shape[1]}; whisper.cpp requires them equal`);
  return {
    nVocab: emb.shape[0],
    nAudioCtx: epe.shape[0],
    nAudioState: epe.shape[1],
    nAudioHead,
    nAudioLayer: countLayers(model, "encoder"),
    nTextCtx: dpe.shape[0],
    nTextState: dpe.shape[1],
    nTextHead,
    nTextLayer: countLayers(model, "decoder"),
    nMels: conv1.shape[1],
  };
}

/**
 * The tensors of whisper.cpp's Whisper, each with its CTranslate2 source,
 * in the order whisper.cpp creates them, for matrices of type `wtype`.
 *
 * @throws {Ct2FormatError} when a variable is missing or has an unexpected shape
 */
export function planWhisperTensors(model: Ct2Model, hp: WhisperHparams, wtype: Type): WhisperTensorPlan[] {
  const out: WhisperTensorPlan[] = [];
  const d = hp.nAudioState;
  const vtype = wtype === Type.F32 ? Type.F32 : Type.F16; // whisper.cpp's conv type
  const add = (name: string, ne: number[], type: Type, source: string, slice?: [number, number]) => {
    const v = ct2Variable(model, source);
    const total = v.shape.reduce((a, b) => a * b, 1), count = ne.reduce((a, b) => a * b, 1);
    const start = slice ? slice[0] * count : 0;
    if (slice ? total !== slice[1] * count : total !== count) {
      throw new Ct2FormatError("INVALID", model.path, `${source} has shape [${v.shape.join(", ")}], which does not give ${name} [${[...ne].reverse().join(", ")}]${slice ? ` as part ${slice[0] + 1} of ${slice[1]}` : ""}`);
    }
    if (v.dtype !== Ct2Dtype.F16 && v.dtype !== Ct2Dtype.F32) {
      throw new Ct2FormatError("INVALID", model.path, `${source} is ${v.dtype === Ct2Dtype.I8 ? "int8 (a quantized CTranslate2 model)" : `of dtype ${v.dtype}`}; convert the model with CTranslate2's --quantization float16 or float32`);
    }
    out.push({ name, ne, type, source: v.name, start, count });
  };
  const norm = (name: string, src: string, n: number) => {
    add(`${name}.weight`, [n], Type.F32, `${src}/gamma`);
    add(`${name}.bias`, [n], Type.F32, `${src}/beta`);
  };
  const linear = (name: string, src: string, nIn: number, nOut: number) => {
    add(`${name}.weight`, [nIn, nOut], wtype, `${src}/weight`);
    add(`${name}.bias`, [nOut], Type.F32, `${src}/bias`);
  };
  // Splits a fused projection (rows q|k|v or k|v) into whisper.cpp's query/key/value; the key has no bias.
  const fused = (name: string, src: string, parts: ("query" | "key" | "value")[], n: number) => {
    parts.forEach((p, i) => {
      add(`${name}.${p}.weight`, [n, n], wtype, `${src}/weight`, [i, parts.length]);
      if (p !== "key") add(`${name}.${p}.bias`, [n], Type.F32, `${src}/bias`, [i, parts.length]);
    });
  };

  add("encoder.positional_embedding", [d, hp.nAudioCtx], Type.F32, "encoder/position_encodings/encodings");
  add("encoder.conv1.weight", [3, hp.nMels, d], vtype, "encoder/conv1/weight");
  add("encoder.conv1.bias", [1, d], Type.F32, "encoder/conv1/bias");
  add("encoder.conv2.weight", [3, d, d], vtype, "encoder/conv2/weight");
  add("encoder.conv2.bias", [1, d], Type.F32, "encoder/conv2/bias");
  norm("encoder.ln_post", "encoder/layer_norm", d);
  for (let i = 0; i < hp.nAudioLayer; i++) {
    const e = `encoder.blocks.${i}`, s = `encoder/layer_${i}`;
    norm(`${e}.mlp_ln`, `${s}/ffn/layer_norm`, d);
    linear(`${e}.mlp.0`, `${s}/ffn/linear_0`, d, 4 * d);
    linear(`${e}.mlp.2`, `${s}/ffn/linear_1`, 4 * d, d);
    norm(`${e}.attn_ln`, `${s}/self_attention/layer_norm`, d);
    fused(`${e}.attn`, `${s}/self_attention/linear_0`, ["query", "key", "value"], d);
    linear(`${e}.attn.out`, `${s}/self_attention/linear_1`, d, d);
  }
  const t = hp.nTextState;
  add("decoder.positional_embedding", [t, hp.nTextCtx], Type.F32, "decoder/position_encodings/encodings");
  add("decoder.token_embedding.weight", [t, hp.nVocab], wtype, "decoder/embeddings/weight");
  norm("decoder.ln", "decoder/layer_norm", t);
  for (let i = 0; i < hp.nTextLayer; i++) {
    const e = `decoder.blocks.${i}`, s = `decoder/layer_${i}`;
    norm(`${e}.mlp_ln`, `${s}/ffn/layer_norm`, t);
    linear(`${e}.mlp.0`, `${s}/ffn/linear_0`, t, 4 * t);
    linear(`${e}.mlp.2`, `${s}/ffn/linear_1`, 4 * t, t);
    norm(`${e}.attn_ln`, `${s}/self_attention/layer_norm`, t);
    fused(`${e}.attn`, `${s}/self_attention/linear_0`, ["query", "key", "value"], t);
    linear(`${e}.attn.out`, `${s}/self_attention/linear_1`, t, t);
    norm(`${e}.cross_attn_ln`, `${s}/attention/layer_norm`, t);
    linear(`${e}.cross_attn.query`, `${s}/attention/linear_0`, t, t);
    fused(`${e}.cross_attn`, `${s}/attention/linear_1`, ["key", "value"], t);
    linear(`${e}.cross_attn.out`, `${s}/attention/linear_2`, t, t);
  }
  return out;
}

/** Little-endian i32s. */
function i32s(values: readonly number[]): Uint8Array {
  const b = new Uint8Array(values.length * 4);
  const v = new DataView(b.buffer);
  values.forEach((x, i) => v.setInt32(i * 4, x, true));
  return b;
}

function writeAll(fd: number, data: Uint8Array): void {
  for (let o = 0; o < data.length;) o += writeSync(fd, data, o, data.length - o);
}

function asBytes(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

const CHUNK_ELEMENTS = 1 << 21; // read and converted at a time: 4 MiB of f16, 8 MiB of f32

/** Writes one tensor's data: copied when the source already has the output type, else converted in row chunks. */
function writeTensor(fdIn: number, fdOut: number, v: Ct2Variable, t: WhisperTensorPlan): number {
  const ne0 = t.ne[0];
  const rows = t.count / ne0;
  const step = Math.max(1, Math.floor(CHUNK_ELEMENTS / ne0));
  let written = 0;
  for (let r = 0; r < rows; r += step) {
    const n = Math.min(step, rows - r);
    const raw = readCt2Data(fdIn, v, t.start + r * ne0, n * ne0);
    let bytes: Uint8Array;
    if ((t.type === Type.F16 && v.dtype === Ct2Dtype.F16) || (t.type === Type.F32 && v.dtype === Ct2Dtype.F32)) bytes = asBytes(raw);
    else {
      const f32 = raw instanceof Uint16Array ? f16ToF32(raw) : (raw as Float32Array);
      bytes = t.type === Type.F32 ? asBytes(f32) : quantize(t.type, f32, { nPerRow: ne0 });
    }
    writeAll(fdOut, bytes);
    written += bytes.length;
  }
  return written;
}

/** The files of a CTranslate2 Whisper folder, each checked to exist. */
function ct2Files(ct2Dir: string): { model: string; tokenizer: string; vocabulary: string } {
  if (!existsSync(ct2Dir) || !statSync(ct2Dir).isDirectory()) {
    throw new Ct2FormatError("IO", ct2Dir, "not a folder; pass the folder of a CTranslate2 Whisper model (model.bin, tokenizer.json), or use --fetch to get OpenAI Whisper base");
  }
  const files = { model: join(ct2Dir, "model.bin"), tokenizer: join(ct2Dir, "tokenizer.json"), vocabulary: join(ct2Dir, "vocabulary.txt") };
  for (const f of [files.model, files.tokenizer]) {
    if (!existsSync(f)) throw new Ct2FormatError("IO", f, "missing; a CTranslate2 Whisper folder holds model.bin and tokenizer.json (and vocabulary.txt, config.json)");
  }
  return files;
}

/**
 * Converts the CTranslate2 Whisper model in the folder `ct2Dir` into
 * whisper.cpp's model file `outPath` (see the module's doc), with the
 * weight matrices in `options.type` (f16 by default; q8_0 and q5_0 through
 * ggml's own quantizer).
 *
 * @throws {Ct2FormatError} when a file is missing, cut short, of another format, or not a Whisper model whisper.cpp can load
 */
export function convertWhisper(ct2Dir: string, outPath: string, options: ConvertOptions = {}): ConvertResult {
  const t0 = performance.now();
  const ftypeName = options.type ?? "f16";
  const ft = WHISPER_FILE_TYPES[ftypeName];
  if (!ft) throw new Ct2FormatError("INVALID", outPath, `unknown type ${JSON.stringify(ftypeName)}; one of ${Object.keys(WHISPER_FILE_TYPES).join(", ")}`);
  const files = ct2Files(ct2Dir);
  const model = readCt2(files.model);
  const fdIn = openSync(files.model, "r");
  const tmp = `${outPath}.tmp-${process.pid}`;
  let fdOut: number | undefined;
  try {
    const hp = whisperHparams(model, fdIn);
    const plan = planWhisperTensors(model, hp, ft.type);
    for (const t of plan) {
      if (t.type !== Type.F32 && t.ne[0] % 32 !== 0 && t.type !== Type.F16) throw new Ct2FormatError("INVALID", model.path, `${t.name}: rows of ${t.ne[0]} do not split into blocks of 32; use --type f16`);
    }
    const vocab = readWhisperVocab(files.tokenizer, files.vocabulary);
    if (vocab.total !== hp.nVocab && existsSync(files.vocabulary)) {
      throw new Ct2FormatError("INVALID", files.vocabulary, `${vocab.total} tokens, but the embedding has ${hp.nVocab} rows; the tokenizer and model.bin are not of one model`);
    }
    const nFft = 400, nBins = nFft / 2 + 1;
    const filters = melFilters({ nMels: hp.nMels, nFft });

    fdOut = openSync(tmp, "w");
    let bytes = 0;
    const put = (b: Uint8Array) => {
      writeAll(fdOut!, b);
      bytes += b.length;
    };
    put(i32s([WHISPER_GGML_MAGIC | 0]));
    put(i32s([hp.nVocab, hp.nAudioCtx, hp.nAudioState, hp.nAudioHead, hp.nAudioLayer, hp.nTextCtx, hp.nTextState, hp.nTextHead, hp.nTextLayer, hp.nMels, ft.ftype]));
    put(i32s([hp.nMels, nBins]));
    put(asBytes(filters));
    // The vocabulary in one buffer: lengths and bytes.
    const vocabBytes = new Uint8Array(4 + vocab.tokens.reduce((a, t) => a + 4 + t.length, 0));
    const vv = new DataView(vocabBytes.buffer);
    vv.setInt32(0, vocab.tokens.length, true);
    let o = 4;
    for (const tok of vocab.tokens) {
      vv.setInt32(o, tok.length, true);
      vocabBytes.set(tok, o + 4);
      o += 4 + tok.length;
    }
    put(vocabBytes);
    const enc = new TextEncoder();
    plan.forEach((t, i) => {
      const name = enc.encode(t.name);
      put(i32s([t.ne.length, name.length, t.type, ...t.ne]));
      put(name);
      const expected = rowSize(t.type, t.ne[0]) * (t.count / t.ne[0]);
      const n = writeTensor(fdIn, fdOut!, model.variables.get(t.source)!, t);
      if (n !== expected) throw new Error(`${t.name}: wrote ${n} bytes, expected ${expected}`);
      bytes += n;
      options.onTensor?.(t, i, plan.length);
    });
    closeSync(fdOut);
    fdOut = undefined;
    if (statSync(tmp).size !== bytes) throw new Error(`${tmp}: the file has ${statSync(tmp).size} bytes, ${bytes} were written`);
    renameSync(tmp, outPath);
    return { hparams: hp, ftype: ft.ftype, nTokens: vocab.tokens.length, tensors: plan, bytes, ms: performance.now() - t0 };
  } catch (e) {
    if (fdOut !== undefined) closeSync(fdOut);
    rmSync(tmp, { force: true });
    throw e;
  } finally {
    closeSync(fdIn);
  }
}
