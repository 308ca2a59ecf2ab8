/**
 * `wsp-ggml quantize IN OUT TYPE`: a GGUF model re-quantized as llama.cpp's
 * quantize tool does it — the 2-D weight matrices to TYPE (dequantized first
 * when they are quantized already), 1-D tensors and norms copied unchanged,
 * a matrix whose rows do not split into TYPE's blocks stored in a compatible
 * type instead (said on stderr), every metadata key copied and
 * `general.file_type` set to TYPE's llama.cpp file type. Each tensor is
 * converted in row chunks and written as it goes, so memory stays bounded.
 * Quantization and the metadata block are ggml's own ({@linkcode quantize},
 * {@linkcode GgufWriter}).
 *
 * @module
 */
import { closeSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { resolve } from "node:path";
import process from "node:process";
import { Context, dequantize, GgufType, GgufWriter, quantize, readGguf, rowSize, tensorOverhead, Type } from "../mod.ts";
import type { GgufTensorInfo } from "../mod.ts";
import { runtime } from "../runtime/runtime.ts";
import { type Command, EXIT_CODES_HELP, EXIT_OK, parse, toJson, typeByName, typeName, UsageError, warn } from "./common.ts";

/** The target types and their llama.cpp file type (`LLAMA_FTYPE_MOSTLY_*`, the value of `general.file_type`). */
export const FILE_TYPES: ReadonlyMap<number, number> = new Map<number, number>([
  [Type.F32, 0],
  [Type.F16, 1],
  [Type.Q4_0, 2],
  [Type.Q4_1, 3],
  [Type.Q8_0, 7],
  [Type.Q5_0, 8],
  [Type.Q5_1, 9],
  [Type.Q2_K, 10],
  [Type.Q3_K, 11], // Q3_K_S
  [Type.Q4_K, 14], // Q4_K_S
  [Type.Q5_K, 16], // Q5_K_S
  [Type.Q6_K, 18],
  [Type.IQ4_NL, 25],
  [Type.IQ4_XS, 30],
  [Type.BF16, 32],
]);

const HELP = `usage: wsp-ggml quantize IN OUT TYPE [--json] [--quiet]

Re-quantizes the GGUF model IN into OUT, as llama.cpp's quantize tool does:
  - every 2-D (or higher) tensor named *weight, except norms and position or token-type
    embeddings, is converted to TYPE; a tensor that is quantized already is dequantized first;
  - 1-D tensors and norms are copied unchanged (f32 in real models);
  - a matrix whose row length is not a multiple of TYPE's block size falls back to a compatible
    type (q4_K → q5_0, q5_K → q5_1, q6_K → q8_0, q2_K/q3_K/iq4_xs → iq4_nl, then f16), and says so
    on stderr;
  - every metadata key is copied; general.file_type is set to TYPE's llama.cpp file type and
    general.quantization_version to 2.
No k-quant mixtures (llama.cpp's _S/_M recipes that give some tensors more bits): every converted
tensor is TYPE. Types that need an importance matrix (iq1/iq2/iq3) are not offered.

TYPE: ${[...FILE_TYPES.keys()].map(typeName).join(", ")}

  --json      print a JSON summary on stdout: each tensor's name, shape, input and output type
              and fallback reason, bytes in and out, milliseconds
  --quiet     no per-tensor lines on stderr (fallbacks are summed up, one line per kind)
  -h, --help  this text

${EXIT_CODES_HELP}`;

/** Substrings of tensor names that llama.cpp never quantizes even when 2-D. */
const NEVER = ["_norm.weight", "pos_embd", "token_types", "ssm_conv1d", "rel_pos", "time_mix_first", "time_mix_w0", "time_mix_k_k", "time_mix_k_a", "time_mix_r_k"];

/** ggml's number of dimensions: up to the last dimension larger than 1 (at least 1). */
function nDims(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) if (shape[i] > 1) n = i + 1;
  return n;
}

/** Whether llama.cpp's quantize converts tensor `name` of `shape`. */
export function converts(name: string, shape: readonly number[]): boolean {
  return name.endsWith("weight") && nDims(shape) >= 2 && !NEVER.some((s) => name.includes(s));
}

const blockSize = (type: number) => runtime().types.get(type)!.blckSize;

/** The type a matrix with rows of `ne0` gets for `target`: `target`, or llama.cpp's fallback (with the reason). */
export function fallbackType(target: number, ne0: number): { type: number; reason?: string } {
  if (ne0 % blockSize(target) === 0) return { type: target };
  let t: number;
  switch (target) {
    case Type.Q4_K:
      t = Type.Q5_0;
      break;
    case Type.Q5_K:
      t = Type.Q5_1;
      break;
    case Type.Q6_K:
      t = Type.Q8_0;
      break;
    case Type.Q2_K:
    case Type.Q3_K:
    case Type.IQ4_XS:
      t = Type.IQ4_NL;
      break;
    default:
      t = Type.F16;
  }
  if (ne0 % blockSize(t) !== 0) t = Type.F16;
  return { type: t, reason: `row length ${ne0} is not a multiple of ${typeName(target)}'s block size ${blockSize(target)}` };
}

/** One tensor of the plan. */
export interface QuantizePlanEntry {
  /** The tensor's name. */
  readonly name: string;
  /** Its shape, innermost first. */
  readonly shape: readonly number[];
  /** Its type in the input. */
  readonly from: string;
  /** Its type in the output. */
  readonly to: string;
  /** Why `to` is not the requested type, for a converted tensor that fell back. */
  readonly fallback?: string;
  /** Bytes in the input and in the output. */
  readonly bytesIn: number;
  /** Bytes in the output. */
  readonly bytesOut: number;
}

const ALIGN = 32; // ggml's writer aligns tensor data to 32 bytes (see GgufWriter).
const CHUNK_ELEMENTS = 1 << 22; // converted per call: 16 MiB of f32

function readAt(fd: number, position: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let o = 0; o < length;) {
    const n = readSync(fd, out, o, length - o, position + o);
    if (n === 0) throw new Error(`unexpected end of file at byte ${position + o}`);
    o += n;
  }
  return out;
}

function writeAll(fd: number, data: Uint8Array): void {
  for (let o = 0; o < data.length;) o += writeSync(fd, data, o, data.length - o);
}

/** Rows of `t` (bytes `raw`, `rows` of `ne0`) as f32. */
function toF32(t: GgufTensorInfo, raw: Uint8Array, ne0: number): Float32Array {
  if (t.type === Type.F32) return new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
  return dequantize(t.type, raw, ne0);
}

/** Options of {@linkcode quantizeGguf}. */
export interface QuantizeGgufOptions {
  /** Called for each tensor as it is written. */
  readonly onTensor?: (entry: QuantizePlanEntry, index: number, count: number) => void;
}

/**
 * Re-quantizes the GGUF file `input` into `output` (see the module's doc);
 * returns the plan that was carried out. The output is written to a
 * temporary file beside it and renamed at the end.
 */
export function quantizeGguf(input: string, output: string, target: number, options: QuantizeGgufOptions = {}): QuantizePlanEntry[] {
  const fileType = FILE_TYPES.get(target);
  if (fileType === undefined) throw new UsageError(`cannot quantize to ${typeName(target)}`);
  const f = readGguf(input);
  const plan: (QuantizePlanEntry & { info: GgufTensorInfo; type: Type })[] = f.tensors.map((info) => {
    let type: Type = info.type, fallback: string | undefined;
    if (converts(info.name, info.shape)) {
      const fb = fallbackType(target, info.shape[0]);
      type = fb.type as Type;
      fallback = fb.reason && `${fb.reason}: ${typeName(fb.type)}`;
    }
    const rows = info.shape.slice(1).reduce((a, b) => a * b, 1);
    return { name: info.name, shape: info.shape, from: typeName(info.type), to: typeName(type), ...(fallback ? { fallback } : {}), bytesIn: info.nbytes, bytesOut: rowSize(type, info.shape[0]) * rows, info, type };
  });
  using ctx = new Context({ memSize: tensorOverhead() * (plan.length + 1), noAlloc: true });
  using w = new GgufWriter();
  w.setAll(f.entries.filter((e) => !(e.key === "general.alignment" && e.value !== ALIGN)));
  w.set("general.file_type", GgufType.UINT32, fileType, { replace: true });
  w.set("general.quantization_version", GgufType.UINT32, 2, { replace: true });
  for (const p of plan) w.addTensor(ctx.newTensor(p.type as Type, p.shape).setName(p.name));
  const meta = w.metaData();

  const tmp = `${output}.tmp-${process.pid}`;
  const fdIn = openSync(input, "r");
  let fdOut: number | undefined;
  try {
    fdOut = openSync(tmp, "w");
    writeAll(fdOut, meta);
    const pad = new Uint8Array(ALIGN);
    plan.forEach((p, i) => {
      const ne0 = p.shape[0], rows = p.shape.slice(1).reduce((a, b) => a * b, 1);
      if (p.type === p.info.type) {
        // Copied as it is, in chunks.
        for (let o = 0; o < p.bytesIn; o += 1 << 24) writeAll(fdOut!, readAt(fdIn, p.info.fileOffset + o, Math.min(1 << 24, p.bytesIn - o)));
      } else {
        const inRow = p.info.nbytes / rows;
        const step = Math.max(1, Math.floor(CHUNK_ELEMENTS / ne0));
        for (let r = 0; r < rows; r += step) {
          const n = Math.min(step, rows - r);
          const raw = readAt(fdIn, p.info.fileOffset + r * inRow, n * inRow);
          writeAll(fdOut!, quantize(p.type, toF32(p.info, raw, ne0), { nPerRow: ne0 }));
        }
      }
      const rem = p.bytesOut % ALIGN;
      if (rem) writeAll(fdOut!, pad.subarray(0, ALIGN - rem));
      options.onTensor?.(strip(p), i, plan.length);
    });
    closeSync(fdOut);
    fdOut = undefined;
    // The data section must start where ggml's reader expects it, with each tensor where the header says.
    const back = readGguf(tmp);
    let offset = 0;
    const placed = back.tensors.every((t, k) => {
      const ok = t.name === plan[k].name && t.nbytes === plan[k].bytesOut && t.offset === offset;
      offset += Math.ceil(t.nbytes / ALIGN) * ALIGN;
      return ok;
    });
    if (back.dataOffset !== meta.length || back.tensors.length !== plan.length || !placed || back.fileSize !== meta.length + offset) {
      throw new Error(`${output}: the file written does not read back as planned`);
    }
    renameSync(tmp, output);
  } catch (e) {
    if (fdOut !== undefined) closeSync(fdOut);
    rmSync(tmp, { force: true });
    throw e;
  } finally {
    closeSync(fdIn);
  }
  return plan.map(strip);
}

function strip(p: QuantizePlanEntry & { info?: unknown; type?: unknown }): QuantizePlanEntry {
  const { info: _i, type: _t, ...rest } = p;
  return rest;
}

/** The `quantize` subcommand. */
export const quantizeCommand: Command = {
  name: "quantize",
  summary: "re-quantize a GGUF model (IN OUT TYPE), as llama.cpp's quantize does",
  help: HELP,
  run(argv) {
    const { values, positionals } = parse(argv, { json: { type: "boolean" }, quiet: { type: "boolean", short: "q" } }, { min: 3, max: 3, names: "IN OUT TYPE" });
    if (values.help) {
      console.log(HELP);
      return Promise.resolve(EXIT_OK);
    }
    const [input, output, typeArg] = positionals;
    const target = typeByName(typeArg);
    if (target === undefined || !FILE_TYPES.has(target)) {
      throw new UsageError(`unknown or unsupported TYPE ${JSON.stringify(typeArg)}; one of ${[...FILE_TYPES.keys()].map(typeName).join(", ")}`);
    }
    if (resolve(input) === resolve(output)) throw new UsageError("OUT must differ from IN");
    const t0 = performance.now();
    const quiet = values.quiet ?? false;
    const plan = quantizeGguf(input, output, target, {
      onTensor(p, i, n) {
        if (p.fallback && !quiet) warn(`${p.name}: ${p.fallback}`);
        if (!quiet) warn(`[${String(i + 1).padStart(String(n).length)}/${n}] ${p.name.padEnd(32)} ${`[${p.shape.join(", ")}]`.padEnd(20)} ${p.from.padEnd(6)} → ${p.to}`);
      },
    });
    const ms = performance.now() - t0;
    const bytesIn = plan.reduce((a, p) => a + p.bytesIn, 0), bytesOut = plan.reduce((a, p) => a + p.bytesOut, 0);
    const converted = plan.filter((p) => converts(p.name, p.shape)).length;
    if (quiet) {
      // One line per kind of fallback, with how many tensors it concerned.
      const kinds = new Map<string, number>();
      for (const p of plan) if (p.fallback) kinds.set(p.fallback, (kinds.get(p.fallback) ?? 0) + 1);
      for (const [why, count] of kinds) warn(`${count} tensor(s): ${why}`);
    }
    warn(`${output}: ${typeName(target)}, ${converted} of ${plan.length} tensors converted${plan.some((p) => p.fallback) ? ` (${plan.filter((p) => p.fallback).length} fell back)` : ""}; tensor data ${(bytesIn / 2 ** 20).toFixed(1)} → ${(bytesOut / 2 ** 20).toFixed(1)} MiB in ${(ms / 1000).toFixed(2)} s`);
    if (values.json) {
      process.stdout.write(toJson({ input, output, type: typeName(target), fileType: FILE_TYPES.get(target), bytesIn, bytesOut, ms, tensors: plan }, 1) + "\n");
    }
    return Promise.resolve(EXIT_OK);
  },
};
