/**
 * A decoder-only transformer's hyper-parameters, read from a GGUF file's
 * `<arch>.*` keys as llama.cpp b6673 reads them (src/llama-model.cpp's
 * `load_hparams`, with its defaults where a key is optional), for the
 * architectures the runner implements: {@linkcode ARCHITECTURES}.
 *
 * What differs between the architectures is in {@linkcode ArchTraits} (one
 * table, {@linkcode ARCH_TRAITS}); the rest comes from the file. Gemma 3 has
 * two values without a key in the files llama.cpp's converter writes, so
 * they take llama.cpp's defaults for `gemma3`: the RoPE base of the
 * sliding-window layers (10000) and the layer pattern (every 6th layer
 * global); a file that carries `gemma3.rope.freq_base_swa` or
 * `gemma3.attention.sliding_window_pattern` overrides them.
 *
 * @module
 */
import { type GgufFile, GgufType, ModelError, ROPE_TYPE_NEOX } from "../mod.ts";

/** ggml's RoPE mode 0: rotate adjacent pairs of a head (llama.cpp's `LLAMA_ROPE_TYPE_NORM`; ggml.h names only the other modes). */
export const ROPE_TYPE_NORMAL = 0;

/** The architectures (`general.architecture`) the runner implements. */
export const ARCHITECTURES = ["llama", "qwen2", "qwen3", "gemma3"] as const;
/** One of {@linkcode ARCHITECTURES}. */
export type Architecture = typeof ARCHITECTURES[number];

/** What one architecture's graph does beyond the common llama-style block (llama.cpp's `llm_build_*`). */
export interface ArchTraits {
  /** RoPE mode: adjacent pairs (llama) or halves (NeoX: qwen2, qwen3, gemma3). */
  readonly ropeType: typeof ROPE_TYPE_NORMAL | typeof ROPE_TYPE_NEOX;
  /** Embeddings scaled by sqrt(n_embd) (Gemma). */
  readonly embedScale: boolean;
  /** Per-head RMS norm of q and k before RoPE (`attn_q_norm`, `attn_k_norm`). */
  readonly qkNorm: boolean;
  /** q, k, v biases: required (qwen2), optional (llama), or none. */
  readonly qkvBias: "required" | "optional" | "none";
  /** Attention-output bias `attn_output.bias` may be present (llama). */
  readonly outBias: boolean;
  /** RMS norms after attention and after the feed-forward network (`post_attention_norm`, `post_ffw_norm`; Gemma). */
  readonly postNorms: boolean;
  /** The gated feed-forward activation: SwiGLU or GELU-tanh (GeGLU). */
  readonly act: "silu" | "gelu";
  /** Sliding-window attention on some layers (Gemma 3). */
  readonly swa: boolean;
  /** The output projection may be its own tensor (`output.weight`); else (or when absent) it is the token embedding. */
  readonly separateOutput: boolean;
  /** Frequency factors `rope_freqs.weight` may be present (Llama 3). */
  readonly ropeFreqs: boolean;
}

/** Each architecture's traits, read from its `llm_build_*` in llama.cpp's src/llama-model.cpp. */
export const ARCH_TRAITS: Readonly<Record<Architecture, ArchTraits>> = {
  llama: { ropeType: ROPE_TYPE_NORMAL, embedScale: false, qkNorm: false, qkvBias: "optional", outBias: true, postNorms: false, act: "silu", swa: false, separateOutput: true, ropeFreqs: true },
  qwen2: { ropeType: ROPE_TYPE_NEOX, embedScale: false, qkNorm: false, qkvBias: "required", outBias: false, postNorms: false, act: "silu", swa: false, separateOutput: true, ropeFreqs: false },
  qwen3: { ropeType: ROPE_TYPE_NEOX, embedScale: false, qkNorm: true, qkvBias: "none", outBias: false, postNorms: false, act: "silu", swa: false, separateOutput: true, ropeFreqs: false },
  gemma3: { ropeType: ROPE_TYPE_NEOX, embedScale: true, qkNorm: true, qkvBias: "none", outBias: false, postNorms: true, act: "gelu", swa: true, separateOutput: false, ropeFreqs: false },
};

/** llama.cpp's RoPE base for gemma3's sliding-window (local) layers when the file has no key. */
export const DEFAULT_ROPE_BASE_SWA = 10_000;
/** llama.cpp's gemma3 layer pattern when the file has no key: 5 sliding-window layers, then 1 global. */
export const DEFAULT_SWA_PATTERN = 6;

/** RoPE's scaling (`rope.scaling.type`): llama.cpp's default is linear, whose factor defaults to 1. */
export type RopeScaling = "none" | "linear" | "yarn";

/** Every hyper-parameter the graph needs. */
export interface Hparams {
  /** The architecture (`general.architecture`). */
  readonly arch: Architecture;
  /** Its traits ({@linkcode ARCH_TRAITS}). */
  readonly traits: ArchTraits;
  /** Trained context length (`context_length`). */
  readonly nCtxTrain: number;
  /** Width of the residual stream (`embedding_length`). */
  readonly nEmbd: number;
  /** Transformer blocks (`block_count`). */
  readonly nLayer: number;
  /** Hidden width of the feed-forward network (`feed_forward_length`). */
  readonly nFf: number;
  /** Query heads (`attention.head_count`). */
  readonly nHead: number;
  /** Key/value heads (`attention.head_count_kv`, default nHead): grouped-query attention when below nHead. */
  readonly nHeadKv: number;
  /** Dimension of a key head (`attention.key_length`, default nEmbd / nHead). */
  readonly headDimK: number;
  /** Dimension of a value head (`attention.value_length`, default nEmbd / nHead). */
  readonly headDimV: number;
  /** RMS norm epsilon (`attention.layer_norm_rms_epsilon`). */
  readonly rmsEps: number;
  /** Dimensions of a head that RoPE rotates (`rope.dimension_count`, default headDimK). */
  readonly nRot: number;
  /** RoPE base of the global layers (`rope.freq_base`, default 10000). */
  readonly ropeBase: number;
  /** RoPE base of the sliding-window layers (Gemma 3: `rope.freq_base_swa` if present, else {@linkcode DEFAULT_ROPE_BASE_SWA}). */
  readonly ropeBaseSwa: number;
  /** RoPE scaling type (`rope.scaling.type`, default linear). */
  readonly ropeScaling: RopeScaling;
  /** RoPE's position scale: 1 / `rope.scaling.factor` (1 without one, or with scaling "none"). */
  readonly ropeFreqScale: number;
  /** The context length RoPE's YaRN correction is computed for (`rope.scaling.original_context_length`, default nCtxTrain). */
  readonly nCtxOrig: number;
  /** YaRN's extrapolation mix (`rope.scaling.yarn_ext_factor`; default 1 with yarn scaling, else 0). */
  readonly yarnExtFactor: number;
  /** YaRN's attention factor (`rope.scaling.yarn_attn_factor`, default 1) times `rope.scaling.attn_factor` (default 1). */
  readonly yarnAttnFactor: number;
  /** YaRN's β fast (default 32) and β slow (default 1). */
  readonly yarnBetaFast: number;
  /** See {@linkcode yarnBetaFast}. */
  readonly yarnBetaSlow: number;
  /** Positions a sliding-window layer sees, its own included (Gemma 3's `attention.sliding_window`; 0 without sliding windows). */
  readonly slidingWindow: number;
  /** Layer `il` slides iff `(il + 1) % swaPattern !== 0` (Gemma 3; 0 without sliding windows). */
  readonly swaPattern: number;
  /** Vocabulary size (rows of `token_embd.weight`). */
  readonly nVocab: number;
  /** Scale of the attention scores: 1/sqrt(headDimK) (Gemma 3: query_pre_attn_scalar^-1/2, the same for every size but 27B). */
  readonly attnScale: number;
  /** Whether each Gemma default was read from the file (false: a documented default was used). */
  readonly fromFile: { readonly ropeBaseSwa: boolean; readonly swaPattern: boolean };
}

function bad(file: GgufFile, key: string, what: string): never {
  throw new ModelError("KEY", `${file.path}: ${key} ${what}`);
}

function num(file: GgufFile, key: string): number {
  const e = file.entry(key);
  if (!e) bad(file, key, "is missing");
  if (typeof e.value === "number") return e.value;
  if (typeof e.value === "bigint") return Number(e.value);
  // llama.cpp also takes a per-layer array here (models whose layers differ); the runner does not.
  if (e.value !== null && typeof e.value === "object" && "length" in e.value) bad(file, key, "is an array (a value per layer): the runner needs one value for every layer");
  return bad(file, key, "is not a number");
}

function optional(file: GgufFile, key: string): number | undefined {
  return file.has(key) ? num(file, key) : undefined;
}

function positiveInt(file: GgufFile, key: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) bad(file, key, `is ${v}, expected a positive integer`);
  return v;
}

/** Whether `name` is an architecture the runner implements. */
export function isArchitecture(name: string): name is Architecture {
  return (ARCHITECTURES as readonly string[]).includes(name);
}

/**
 * Reads the hyper-parameters of a GGUF of one of {@linkcode ARCHITECTURES}.
 *
 * @throws {ModelError} `ARCHITECTURE` for another architecture; `KEY` for a missing or unusable key; `TENSOR` without a 2-D token embedding; `VOCAB` when the tokenizer's vocabulary and the embedding disagree in size
 */
export function readHparams(file: GgufFile): Hparams {
  const arch = file.require("general.architecture", GgufType.STRING) as string;
  if (!isArchitecture(arch)) {
    throw new ModelError("ARCHITECTURE", `${file.path}: architecture ${JSON.stringify(arch)} is not one the runner implements (${ARCHITECTURES.join(", ")})`);
  }
  const traits = ARCH_TRAITS[arch];
  const key = (name: string) => `${arch}.${name}`;
  const k = (name: string) => positiveInt(file, key(name), num(file, key(name)));
  const kOpt = (name: string, dflt: number) => {
    const v = optional(file, key(name));
    return v === undefined ? dflt : positiveInt(file, key(name), v);
  };
  const embd = file.tensor("token_embd.weight");
  if (!embd || embd.shape.length !== 2) throw new ModelError("TENSOR", `${file.path}: no 2-D token_embd.weight`);
  const nVocab = embd.shape[1];
  const tokens = file.entry("tokenizer.ggml.tokens");
  if (tokens && Array.isArray(tokens.value) && tokens.value.length !== nVocab) {
    throw new ModelError("VOCAB", `${file.path}: the vocabulary has ${tokens.value.length} tokens but token_embd.weight has ${nVocab} rows`);
  }
  const nEmbd = k("embedding_length"), nHead = k("attention.head_count");
  const headDimK = kOpt("attention.key_length", Math.floor(nEmbd / nHead));
  const headDimV = kOpt("attention.value_length", Math.floor(nEmbd / nHead));
  const nRot = kOpt("rope.dimension_count", headDimK);
  // As llama.cpp: llama's rope must rotate the whole head; no architecture here rotates more than a head.
  if (nRot > headDimK || (arch === "llama" && nRot !== headDimK)) bad(file, key("rope.dimension_count"), `is ${nRot}, expected ${arch === "llama" ? "" : "at most "}the head dimension ${headDimK}`);
  const nCtxTrain = k("context_length");

  const scalingName = file.has(key("rope.scaling.type")) ? file.getString(key("rope.scaling.type")) : "linear";
  if (scalingName !== "none" && scalingName !== "linear" && scalingName !== "yarn") {
    bad(file, key("rope.scaling.type"), `is ${JSON.stringify(scalingName)}; the runner implements none, linear and yarn`);
  }
  const factor = optional(file, key("rope.scaling.factor")) ?? optional(file, key("rope.scale_linear")) ?? 0;
  const ropeFreqScale = scalingName === "none" || factor === 0 ? 1 : 1 / factor;
  const yarnExt = optional(file, key("rope.scaling.yarn_ext_factor"));
  const yarnAttn = (optional(file, key("rope.scaling.yarn_attn_factor")) ?? 1) * (optional(file, key("rope.scaling.attn_factor")) ?? 1);

  const ropeBaseSwa = traits.swa ? optional(file, key("rope.freq_base_swa")) : undefined;
  const swaPattern = traits.swa ? optional(file, key("attention.sliding_window_pattern")) : undefined;
  const ropeBase = optional(file, key("rope.freq_base")) ?? 10_000;
  return {
    arch,
    traits,
    nCtxTrain,
    nEmbd,
    nLayer: k("block_count"),
    nFf: k("feed_forward_length"),
    nHead,
    nHeadKv: kOpt("attention.head_count_kv", nHead),
    headDimK,
    headDimV,
    rmsEps: num(file, key("attention.layer_norm_rms_epsilon")),
    nRot,
    ropeBase,
    ropeBaseSwa: traits.swa ? ropeBaseSwa ?? DEFAULT_ROPE_BASE_SWA : ropeBase,
    ropeScaling: scalingName,
    ropeFreqScale,
    nCtxOrig: kOpt("rope.scaling.original_context_length", nCtxTrain),
    yarnExtFactor: yarnExt !== undefined && yarnExt >= 0 ? yarnExt : scalingName === "yarn" ? 1 : 0,
    yarnAttnFactor: yarnAttn,
    yarnBetaFast: optional(file, key("rope.scaling.yarn_beta_fast")) ?? 32,
    yarnBetaSlow: optional(file, key("rope.scaling.yarn_beta_slow")) ?? 1,
    slidingWindow: traits.swa ? k("attention.sliding_window") : 0,
    swaPattern: traits.swa ? positiveInt(file, key("attention.sliding_window_pattern"), swaPattern ?? DEFAULT_SWA_PATTERN) : 0,
    nVocab,
    attnScale: 1 / Math.sqrt(headDimK),
    fromFile: { ropeBaseSwa: ropeBaseSwa !== undefined, swaPattern: swaPattern !== undefined },
  };
}

/** Whether layer `il` uses sliding-window attention (else it attends to every earlier position). */
export function isSlidingLayer(hp: Hparams, il: number): boolean {
  return hp.swaPattern > 0 && (il + 1) % hp.swaPattern !== 0;
}
