/**
 * Gemma 3 hyper-parameters, read from a GGUF file's `gemma3.*` keys.
 *
 * Two values have no key in the files llama.cpp's converter writes, so they
 * take the defaults llama.cpp itself uses for the `gemma3` architecture
 * (src/llama-model.cpp): the RoPE base of the sliding-window layers
 * (10000) and the layer pattern (every 6th layer global). A file that does
 * carry `gemma3.rope.freq_base_swa` or `gemma3.attention.sliding_window_pattern`
 * overrides them.
 *
 * @module
 */
import { type GgufFile, GgufType } from "../mod.ts";

/** The architecture this runner implements (`general.architecture`). */
export const ARCH = "gemma3";

/** llama.cpp's RoPE base for gemma3's sliding-window (local) layers when the file has no key. */
export const DEFAULT_ROPE_BASE_SWA = 10_000;
/** llama.cpp's gemma3 layer pattern when the file has no key: 5 sliding-window layers, then 1 global. */
export const DEFAULT_SWA_PATTERN = 6;

/** Every hyper-parameter the Gemma 3 graph needs. */
export interface Hparams {
  /** Trained context length (`context_length`); also RoPE's `n_ctx_orig`. */
  readonly nCtxTrain: number;
  /** Width of the residual stream (`embedding_length`). */
  readonly nEmbd: number;
  /** Transformer blocks (`block_count`). */
  readonly nLayer: number;
  /** Hidden width of the feed-forward network (`feed_forward_length`). */
  readonly nFf: number;
  /** Query heads (`attention.head_count`). */
  readonly nHead: number;
  /** Key/value heads (`attention.head_count_kv`): grouped-query attention when below nHead. */
  readonly nHeadKv: number;
  /** Dimension of a key head (`attention.key_length`). */
  readonly headDimK: number;
  /** Dimension of a value head (`attention.value_length`). */
  readonly headDimV: number;
  /** RMS norm epsilon (`attention.layer_norm_rms_epsilon`). */
  readonly rmsEps: number;
  /** RoPE base of the global layers (`rope.freq_base`). */
  readonly ropeBase: number;
  /** RoPE base of the sliding-window layers (`rope.freq_base_swa` if present, else {@linkcode DEFAULT_ROPE_BASE_SWA}). */
  readonly ropeBaseSwa: number;
  /** Positions a sliding-window layer sees, its own included (`attention.sliding_window`). */
  readonly slidingWindow: number;
  /** Layer `il` is global iff `(il + 1) % swaPattern === 0` (`attention.sliding_window_pattern` if present, else {@linkcode DEFAULT_SWA_PATTERN}). */
  readonly swaPattern: number;
  /** Vocabulary size (rows of `token_embd.weight`, which is also the tied output projection). */
  readonly nVocab: number;
  /**
   * Scale of the attention scores. Gemma 3 scales by query_pre_attn_scalar^-1/2,
   * which is head_dim for every size but 27B (llama.cpp: 1/sqrt(n_embd_head_k)
   * unless 27B); the 270M model has head_dim 256, so 1/16.
   */
  readonly attnScale: number;
  /** Whether each key was in the file (false: a documented default was used). */
  readonly fromFile: { readonly ropeBaseSwa: boolean; readonly swaPattern: boolean };
}

function num(file: GgufFile, key: string): number {
  const e = file.entry(key);
  if (!e) throw new Error(`${file.path}: no key ${key} (not a ${ARCH} GGUF?)`);
  if (typeof e.value === "number") return e.value;
  if (typeof e.value === "bigint") return Number(e.value);
  throw new Error(`${file.path}: ${key} is not a number`);
}

function optional(file: GgufFile, key: string): number | undefined {
  return file.has(key) ? num(file, key) : undefined;
}

/**
 * Reads the hyper-parameters of a Gemma 3 GGUF.
 *
 * @throws {Error} when the file is not a gemma3 model or lacks a required key
 */
export function readHparams(file: GgufFile): Hparams {
  const arch = file.require("general.architecture", GgufType.STRING);
  if (arch !== ARCH) throw new Error(`${file.path}: architecture ${JSON.stringify(arch)}, this runner implements ${ARCH}`);
  const k = (name: string) => num(file, `${ARCH}.${name}`);
  const embd = file.tensor("token_embd.weight");
  if (!embd || embd.shape.length !== 2) throw new Error(`${file.path}: no 2-D token_embd.weight`);
  const ropeBaseSwa = optional(file, `${ARCH}.rope.freq_base_swa`);
  const swaPattern = optional(file, `${ARCH}.attention.sliding_window_pattern`);
  const headDimK = k("attention.key_length");
  return {
    nCtxTrain: k("context_length"),
    nEmbd: k("embedding_length"),
    nLayer: k("block_count"),
    nFf: k("feed_forward_length"),
    nHead: k("attention.head_count"),
    nHeadKv: k("attention.head_count_kv"),
    headDimK,
    headDimV: k("attention.value_length"),
    rmsEps: k("attention.layer_norm_rms_epsilon"),
    ropeBase: k("rope.freq_base"),
    ropeBaseSwa: ropeBaseSwa ?? DEFAULT_ROPE_BASE_SWA,
    slidingWindow: k("attention.sliding_window"),
    swaPattern: swaPattern ?? DEFAULT_SWA_PATTERN,
    nVocab: embd.shape[1],
    attnScale: 1 / Math.sqrt(headDimK),
    fromFile: { ropeBaseSwa: ropeBaseSwa !== undefined, swaPattern: swaPattern !== undefined },
  };
}

/** Whether layer `il` uses sliding-window attention (else it attends to every earlier position). */
export function isSlidingLayer(hp: Hparams, il: number): boolean {
  return (il + 1) % hp.swaPattern !== 0;
}
