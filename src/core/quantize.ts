/**
 * Quantization: {@linkcode quantize} (`wsp_ggml_wsp_quantize_chunk`) and
 * {@linkcode dequantize} (the CPU backend's `get_rows`, which runs each
 * type's `to_float`), for every block type the library quantizes.
 *
 * @module
 */
import { Type } from "../ffi/bindings.gen.ts";
import { ArgumentError, GgmlTypeError, ShapeError } from "./errors.ts";
import { Context } from "./context.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import { member } from "./args.ts";

/** Types `wsp_ggml_wsp_quantize_chunk` handles (its switch, vendor/ggml/ggml.c). */
const QUANTIZABLE = new Set<number>([
  Type.Q4_0, Type.Q4_1, Type.Q5_0, Type.Q5_1, Type.Q8_0, Type.MXFP4, Type.Q2_K, Type.Q3_K, Type.Q4_K, Type.Q5_K, Type.Q6_K,
  Type.TQ1_0, Type.TQ2_0, Type.IQ2_XXS, Type.IQ2_XS, Type.IQ3_XXS, Type.IQ3_S, Type.IQ2_S, Type.IQ1_S, Type.IQ1_M,
  Type.IQ4_NL, Type.IQ4_XS, Type.F16, Type.BF16, Type.F32,
]);

/**
 * The i-quants whose quantizer searches a codebook (ggml-quants.c,
 * `quantize_row_iq1_s_impl` … `quantize_row_iq3_s_impl`) and aborts when the
 * search finds nothing (`WSP_GGML_ASSERT(besti1 >= 0 …)`, `grid_index >= 0`,
 * `scale >= 0`, `WSP_GGML_ABORT("fatal error")`): NaN or ±Inf in the input
 * or the importance weights, weights that are zero or negative over a whole
 * block, and values whose squares overflow f32 in the error sums make every
 * candidate compare false (measured: iq1_s aborts on a NaN / Inf / 3e38
 * input, a NaN / Inf weight, an all-zero block of weights, all-negative
 * weights; one zero or negative weight among positive ones passes).
 */
const SEARCHED = new Set<number>([Type.IQ1_S, Type.IQ1_M, Type.IQ2_XXS, Type.IQ2_XS, Type.IQ2_S, Type.IQ3_XXS, Type.IQ3_S]);

/**
 * The inputs the codebook search needs: finite values small enough that
 * `weight · x²` sums stay finite in f32 (`max|x|³ · max(w) · nPerRow` below
 * 1e36, the weights being x² without an imatrix), and importance weights that are finite and positive.
 *
 * @throws {ArgumentError} naming the first offending value
 */
function checkSearchInputs(name: string, src: Float32Array, imatrix: Float32Array | undefined, nPerRow: number): void {
  let maxAbs = 0;
  for (let i = 0; i < src.length; i++) {
    const x = src[i];
    if (x !== x || x === Infinity || x === -Infinity) throw new ArgumentError(`quantize: ${name} needs finite input; src[${i}] is ${x} (ggml's codebook search aborts)`);
    const a = x < 0 ? -x : x;
    if (a > maxAbs) maxAbs = a;
  }
  // Without an imatrix the weights are x² (or √(σ² + x²)·|x|): the sums grow as |x|⁴.
  let maxW = maxAbs;
  if (imatrix) {
    maxW = 0;
    for (let i = 0; i < imatrix.length; i++) {
      const w = imatrix[i];
      if (!(w > 0) || w === Infinity) throw new ArgumentError(`quantize: ${name} needs positive, finite importance weights; imatrix[${i}] is ${w} (ggml's codebook search aborts on NaN / Inf, and on blocks without a positive weight)`);
      if (w > maxW) maxW = w;
    }
  }
  if (maxAbs ** 3 * maxW * nPerRow > 1e36) {
    throw new ArgumentError(`quantize: ${name}: values up to ${maxAbs}${imatrix ? ` with weights up to ${maxW}` : ""} overflow f32 in ggml's error sums (its codebook search then aborts); scale the row down`);
  }
}

/**
 * ggml's name of `type` (`wsp_ggml_type_name`): `"f32"`, `"q4_K"`, `"iq2_xxs"`, …
 * (`Type` is a plain object of numbers, so `Type[t]` does not name a value).
 *
 * @throws {ArgumentError} when `type` is not a member of {@linkcode Type}
 */
export function typeName(type: Type): string {
  member("typeName: type", type, Type, "Type");
  return runtime().types.get(type)!.name;
}

/** Whether {@linkcode quantize} can produce `type`. */
export function canQuantize(type: Type): boolean {
  return QUANTIZABLE.has(type);
}

/** Whether `type` can only be quantized with an importance matrix (`wsp_ggml_wsp_quantize_requires_imatrix`). */
export function requiresImatrix(type: Type): boolean {
  member("requiresImatrix: type", type, Type, "Type");
  return runtime().lib.symbols.wsp_ggml_wsp_quantize_requires_imatrix(type);
}

/** Bytes of one row of `n` elements of `type` (`wsp_ggml_row_size`). */
export function rowSize(type: Type, n: number): number {
  const t = runtime().types.get(type);
  if (!t) throw new GgmlTypeError(`rowSize: ${type} is not a tensor type of this library`);
  if (!Number.isSafeInteger(n) || n < 0 || n % t.blckSize !== 0) throw new ShapeError(`rowSize: ${n} is not a multiple of the ${t.name} block size ${t.blckSize}`);
  return (n / t.blckSize) * t.typeSize;
}

/** Options of {@linkcode quantize}. */
export interface QuantizeOptions {
  /** Elements per row (a multiple of the type's block size). Default: all of `src` in one row. */
  readonly nPerRow?: number;
  /** Importance of each column (`nPerRow` weights), required by the IQ1/IQ2 types, used by K/IQ types. */
  readonly imatrix?: Float32Array;
}

function rows(op: string, type: Type, n: number, nPerRow: number) {
  const t = runtime().types.get(type);
  if (!t) throw new GgmlTypeError(`${op}: ${type} is not a tensor type of this library`);
  if (!Number.isSafeInteger(nPerRow) || nPerRow <= 0) throw new ArgumentError(`${op}: nPerRow must be a positive integer, got ${nPerRow}`);
  if (nPerRow % t.blckSize !== 0) throw new ShapeError(`${op}: nPerRow ${nPerRow} is not a multiple of the ${t.name} block size ${t.blckSize}`);
  if (n % nPerRow !== 0) throw new ShapeError(`${op}: ${n} elements are not a whole number of rows of ${nPerRow}`);
  return { nrows: n / nPerRow, rowBytes: (nPerRow / t.blckSize) * t.typeSize, traits: t };
}

/**
 * Quantizes `src` (rows of `nPerRow` values) to `type`: the raw blocks, as
 * a {@linkcode Tensor} of that type stores them.
 *
 * @throws {GgmlTypeError} for a type ggml does not quantize to, or one that requires an imatrix when none is given
 * @throws {ShapeError} when the rows do not split into whole blocks
 */
export function quantize(type: Type, src: Float32Array, options: QuantizeOptions = {}): Uint8Array {
  member("quantize: type", type, Type, "Type");
  if (!(src instanceof Float32Array)) throw new GgmlTypeError("quantize: src must be a Float32Array");
  if (!QUANTIZABLE.has(type)) throw new GgmlTypeError(`quantize: ggml does not quantize to ${runtime().types.get(type)?.name ?? type}`);
  const nPerRow = options.nPerRow ?? src.length;
  const { nrows, rowBytes, traits } = rows("quantize", type, src.length, nPerRow);
  const imatrix = options.imatrix;
  if (imatrix !== undefined && (!(imatrix instanceof Float32Array) || imatrix.length !== nPerRow)) {
    throw new ArgumentError(`quantize: imatrix must be a Float32Array of nPerRow = ${nPerRow} weights`);
  }
  const s = runtime().lib.symbols;
  // wsp_ggml_wsp_quantize_chunk: WSP_GGML_ASSERT(imatrix != NULL) for these types.
  if (imatrix === undefined && s.wsp_ggml_wsp_quantize_requires_imatrix(type)) {
    throw new GgmlTypeError(`quantize: ${traits.name} requires an importance matrix (options.imatrix)`);
  }
  if (SEARCHED.has(type)) checkSearchInputs(traits.name, src, imatrix, nPerRow);
  const out = new Uint8Array(nrows * rowBytes);
  if (out.length === 0) return out;
  const written = Number(s.wsp_ggml_wsp_quantize_chunk(type, ffi.addressOf(src), ffi.addressOf(out), 0, nrows, nPerRow, imatrix ? ffi.addressOf(imatrix) : 0));
  keepAlive([src, out, imatrix]);
  if (written !== out.length) throw new GgmlTypeError(`quantize: ggml wrote ${written} bytes, expected ${out.length}`);
  return out;
}

/**
 * Dequantizes raw blocks of `type` (rows of `nPerRow` values) to f32, with
 * the CPU backend's own conversion.
 *
 * @throws {ShapeError} when `data` is not a whole number of rows
 */
export function dequantize(type: Type, data: Uint8Array, nPerRow: number): Float32Array {
  member("dequantize: type", type, Type, "Type");
  if (!(data instanceof Uint8Array)) throw new GgmlTypeError("dequantize: data must be a Uint8Array of raw blocks");
  if (!QUANTIZABLE.has(type)) throw new GgmlTypeError(`dequantize: ${runtime().types.get(type)?.name ?? type} is not a type quantize() produces`);
  const { rowBytes, traits } = rows("dequantize", type, nPerRow, nPerRow);
  if (data.length % rowBytes !== 0) throw new ShapeError(`dequantize: ${data.length} bytes are not a whole number of ${traits.name} rows of ${rowBytes} bytes`);
  const nrows = data.length / rowBytes;
  if (nrows === 0) return new Float32Array(0);
  const memSize = data.length + nrows * 4 * (nPerRow + 1) + (1 << 16) + Number(runtime().lib.symbols.wsp_ggml_graph_overhead_custom(4, false));
  using ctx = new Context({ memSize });
  const raw = traits.quantized ? data : data.slice(); // plain types are set from their own (aligned) arrays
  const values = traits.quantized ? raw : type === Type.F32 ? new Float32Array(raw.buffer) : new Uint16Array(raw.buffer);
  const q = ctx.newTensor(type, [nPerRow, nrows]).set(values);
  const idx = ctx.newTensor(Type.I32, [nrows]).set(Int32Array.from({ length: nrows }, (_, i) => i));
  const out = ctx.getRows(q, idx);
  ctx.newGraphCustom(4).buildForwardExpand(out).compute({ nThreads: 1 });
  return out.get(Float32Array);
}
