/**
 * Speech to text with whisper.cpp: {@linkcode WhisperModel.load} reads a
 * model file (checked first by {@linkcode scanWhisperModel}), and
 * {@linkcode WhisperModel.transcribe} turns 16 kHz mono samples into
 * segments with their tokens, off the JS thread on every runtime.
 *
 * Callbacks: whisper.cpp calls its segment, progress and abort callbacks on
 * its own threads, which none of the three runtimes can run JS on safely.
 * The run goes through a native job (`native/whisper/job.c`) that copies
 * finished segments and the progress into its own memory and reads an
 * abort flag; while the run is pending, the JS thread polls the job (only
 * when there is a callback to call) and
 * calls `onSegment` / `onProgress` there.
 *
 * @example
 * ```ts
 * import { WhisperModel, decodeWav16kMono } from "wsp-ggml";
 * using model = await WhisperModel.load("ggml-base.bin");
 * const { text, language } = await model.transcribe(decodeWav16kMono("speech.wav"), { language: "auto" });
 * ```
 *
 * @module
 */
import { ArgumentError, AudioError, BusyError, UseAfterFreeError, WhisperError } from "../core/errors.ts";
import { cString } from "../ffi/common.ts";
import { WhisperSamplingStrategy, whisperLayouts } from "../ffi/whisper.gen.ts";
import { ffi, keepAlive, library } from "../runtime/loader.ts";
import { checkThreads, defaultThreads } from "../runtime/threads.ts";

import { logFlush } from "../runtime/log.ts";
import { whisperAsync, whisperSymbols } from "../runtime/whisper.ts";
import { scanWhisperModel, type WhisperModelInfo } from "./model_file.ts";
import { BackendDevType } from "../ffi/bindings.gen.ts";
import { devices } from "../backend/backend.ts";
import { metalDeviceRefusal } from "../backend/metal_checks.ts";

/** The most threads the default gives a transcription (whisper.cpp's own default: min(4, CPUs)). */
const WHISPER_MAX_DEFAULT_THREADS = 4;

/** Whisper's sample rate: {@linkcode WhisperModel.transcribe} takes 16 kHz mono. */
export const WHISPER_RATE = 16000;

/** Options of {@linkcode WhisperModel.load}. */
export interface WhisperModelOptions {
  /**
   * Use a GPU device when one is registered (Vulkan, Metal); default true. Without one the CPU
   * computes, and also on a Metal device whose buffers the host cannot map (ggml-metal aborts on
   * every copy into them: see `Device.init`).
   */
  readonly useGpu?: boolean;
  /** Flash attention; default false (whisper.rn's default; whisper.cpp's C default is true). */
  readonly flashAttn?: boolean;
  /** Which GPU, counted among the GPU devices; default 0. */
  readonly gpuDevice?: number;
}

/**
 * Whether whisper.cpp's GPU choice (the `index`-th device of type GPU, as whisper_backend_init_gpu
 * counts them; none: the CPU) is one ggml can copy to: false for a Metal device with private buffers.
 */
function gpuUsable(index: number): boolean {
  const dev = devices().filter((d) => d.type === BackendDevType.GPU)[index];
  return dev === undefined || metalDeviceRefusal(dev) === null;
}

/** Options of {@linkcode WhisperModel.transcribe}. */
export interface TranscribeOptions {
  /** Spoken language (`"en"`, `"de"`, … as whisper.cpp names them) or `"auto"` to detect it; default `"en"`. */
  readonly language?: string;
  /** Translate into English; default false (multilingual models only). */
  readonly translate?: boolean;
  /** Text that precedes the audio (names, spelling, style); at most 2048 characters. */
  readonly initialPrompt?: string;
  /** `"greedy"` (default) or `"beam"`. */
  readonly strategy?: "greedy" | "beam";
  /** Beams of beam search, 1 … 8; default 5. */
  readonly beamSize?: number;
  /** Candidates sampled at a temperature above 0 (greedy), 1 … 8; default 5. */
  readonly bestOf?: number;
  /** Initial sampling temperature, ≥ 0; default 0 (the most likely token). */
  readonly temperature?: number;
  /**
   * Temperature step of the fallback: a segment whose compression or
   * log-probability looks wrong is decoded again at a higher temperature;
   * 0 disables it. Default 0.2.
   */
  readonly temperatureInc?: number;
  /**
   * Compute threads, 1 … 512. Default: the package's thread policy
   * (`defaultThreads`: the physical cores other processes leave free), at most
   * 4 as whisper.cpp's own default; more threads than free cores is many
   * times slower, not a little.
   */
  readonly threads?: number;
  /** Per-token times (`tokens[].t0`, `t1`); default false (they are then -1). */
  readonly tokenTimestamps?: boolean;
  /** Longest segment in characters (0: no limit, the default); splits at word boundaries. */
  readonly maxSegmentLength?: number;
  /** Do not feed the previous window's text to the next one; default true. */
  readonly noContext?: boolean;
  /** Stops the transcription; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Called on the JS thread with each segment as whisper.cpp finishes it. */
  readonly onSegment?: (segment: SegmentText) => void;
  /** Called on the JS thread when the progress (0 … 100) changes. */
  readonly onProgress?: (percent: number) => void;
}

/** A segment's text and times, as {@linkcode TranscribeOptions.onSegment} receives it. */
export interface SegmentText {
  /** Index of the segment in the transcription. */
  readonly index: number;
  /** Start, in milliseconds from the start of the audio. */
  readonly t0: number;
  /** End, in milliseconds. */
  readonly t1: number;
  /** Its text (whisper.cpp's, usually with a leading space). */
  readonly text: string;
}

/** One token of a segment. */
export interface Token {
  /** Token id in the model's vocabulary. */
  readonly id: number;
  /** Its text (a token may hold part of a UTF-8 character: then it shows U+FFFD). */
  readonly text: string;
  /** Its probability. */
  readonly p: number;
  /** Start in milliseconds, with `tokenTimestamps`; else -1. */
  readonly t0: number;
  /** End in milliseconds, with `tokenTimestamps`; else -1. */
  readonly t1: number;
}

/** One segment of a transcription. */
export interface Segment extends SegmentText {
  /** Its tokens, special ones (timestamps, end of text) included. */
  readonly tokens: readonly Token[];
}

/** What {@linkcode WhisperModel.transcribe} returns. */
export interface Transcript {
  /** Every segment's text, joined. */
  readonly text: string;
  /** The segments, in order. */
  readonly segments: readonly Segment[];
  /** The language, given or detected. */
  readonly language: string;
  /** Wall time of whisper.cpp's run in milliseconds (the poll and result reading excluded). */
  readonly elapsedMs: number;
}

const POLL_MS = 25;
const MAX_DECODERS = 8; // whisper.cpp's WHISPER_MAX_DECODERS
const MAX_PROMPT = 2048;
const decoder = new TextDecoder("utf-8", { fatal: false });

let logRouted = false;
/** whisper.cpp logs through its own hook: send it where ggml's log goes (by default, warnings and errors to stderr). */
function routeLog(): void {
  if (logRouted) return;
  const dispatch = ffi.symbolAddress(library().location.base, "wsp_js_log_dispatch");
  if (dispatch !== 0) whisperSymbols().whisper_log_set(dispatch, 0);
  logRouted = true;
}

function cstr(ptr: number): string {
  if (ptr === 0) return "";
  return ffi.readCString(ptr) ?? "";
}

/** Bytes of a NUL-terminated native string, decoded leniently (a segment or token may end inside a character). */
function text(ptr: number): string {
  if (ptr === 0) return "";
  let n = 0;
  const max = 1 << 20;
  // Bounded scan in 4 KiB windows; whisper's strings are short.
  for (;;) {
    const chunk = new Uint8Array(ffi.view(ptr + n, 4096));
    const z = chunk.indexOf(0);
    if (z >= 0) {
      n += z;
      break;
    }
    n += 4096;
    if (n > max) break;
  }
  return decoder.decode(new Uint8Array(ffi.view(ptr, n)).slice());
}

function int(name: string, v: unknown, lo: number, hi: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) {
    throw new ArgumentError(`transcribe: ${name} must be an integer in ${lo} … ${hi}, got ${String(v)}`);
  }
  return v;
}

function num(name: string, v: unknown, lo: number, hi: number): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < lo || v > hi) {
    throw new ArgumentError(`transcribe: ${name} must be a number in ${lo} … ${hi}, got ${String(v)}`);
  }
  return v;
}

/**
 * whisper.cpp's own system line (`whisper_print_system_info`): the CPU
 * features of the loaded backend and whisper.cpp's build options. Opens the
 * whisper library.
 *
 * @throws {LibraryNotFoundError} when the whisper library is missing
 */
export function whisperSystemInfo(): string {
  return cstr(Number(whisperSymbols().whisper_print_system_info()));
}

/** A loaded Whisper model (`whisper_context`). Free it with `free()` or `using`. */
export class WhisperModel {
  /** What the file check read: hyperparameters, tensors, size. */
  readonly info: WhisperModelInfo;
  #ctx: number;
  #running = 0;
  readonly #path: string;

  private constructor(ctx: number, info: WhisperModelInfo) {
    this.#ctx = ctx;
    this.info = info;
    this.#path = info.path;
    registry.register(this, ctx, this);
  }

  /**
   * Loads a whisper.cpp model file, off the JS thread. The file is checked
   * from end to end first (a corrupt or foreign file is a
   * {@linkcode WhisperError}, never a crash).
   *
   * @throws {WhisperError} IO, TRUNCATED, FORMAT or INVALID for the file; FAILED when whisper.cpp refuses it
   * @throws {ArgumentError} for an option of the wrong kind
   * @throws {LibraryNotFoundError} when the whisper library is missing
   */
  static async load(path: string, options: WhisperModelOptions = {}): Promise<WhisperModel> {
    if (typeof path !== "string" || path.length === 0 || path.includes("\0")) throw new ArgumentError("WhisperModel.load: path must be a non-empty string without NUL");
    const { useGpu = true, flashAttn = false, gpuDevice = 0 } = options;
    if (typeof useGpu !== "boolean") throw new ArgumentError("WhisperModel.load: useGpu must be a boolean");
    if (typeof flashAttn !== "boolean") throw new ArgumentError("WhisperModel.load: flashAttn must be a boolean");
    if (!Number.isInteger(gpuDevice) || gpuDevice < 0 || gpuDevice > 255) throw new ArgumentError(`WhisperModel.load: gpuDevice must be an integer in 0 … 255, got ${String(gpuDevice)}`);
    const info = scanWhisperModel(path);
    const w = whisperSymbols();
    routeLog();
    const L = whisperLayouts.whisper_context_params;
    const params = new Uint8Array(L.size);
    w.whisper_context_default_params(ffi.addressOf(params));
    const v = new DataView(params.buffer);
    v.setUint8(L.fields.use_gpu.offset, useGpu && gpuUsable(gpuDevice) ? 1 : 0);
    v.setUint8(L.fields.flash_attn.offset, flashAttn ? 1 : 0);
    v.setInt32(L.fields.gpu_device.offset, gpuDevice, true);
    const fname = cString(path);
    const init = whisperAsync().whisper_init_from_file_with_params;
    let ctx: number;
    try {
      ctx = Number(init ? await init(ffi.addressOf(fname), ffi.addressOf(params)) : w.whisper_init_from_file_with_params(ffi.addressOf(fname), ffi.addressOf(params)));
    } finally {
      keepAlive([fname, params]);
      logFlush();
    }
    if (ctx === 0) throw new WhisperError("FAILED", `${path}: whisper.cpp could not load the model (its log says why)`);
    return new WhisperModel(ctx, info);
  }

  /** Whether the model knows other languages than English. */
  get multilingual(): boolean {
    return this.info.multilingual;
  }

  /** Transcriptions running now. */
  get running(): number {
    return this.#running;
  }

  #live(what: string): number {
    if (this.#ctx === 0) throw new UseAfterFreeError(`${what}: the Whisper model ${this.#path} was freed`);
    return this.#ctx;
  }

  /**
   * Transcribes 16 kHz mono samples (see {@linkcode decodeWav16kMono}) off
   * the JS thread. Several transcriptions of one model may run at once,
   * each with its own state.
   *
   * @throws {AudioError} for samples that are not a Float32Array, or hold NaN or infinity
   * @throws {ArgumentError} for an option out of range, or a language the model does not know
   * @throws {WhisperError} FAILED when whisper.cpp reports a failure
   * @throws {UseAfterFreeError} after `free()`
   */
  async transcribe(pcm: Float32Array, options: TranscribeOptions = {}): Promise<Transcript> {
    const ctx = this.#live("transcribe");
    if (!(pcm instanceof Float32Array)) throw new AudioError("transcribe: samples must be a Float32Array of 16 kHz mono audio (decodeWav16kMono reads a WAV file)");
    for (let i = 0; i < pcm.length; i++) {
      if (!Number.isFinite(pcm[i])) throw new AudioError(`transcribe: sample ${i} is ${pcm[i]} (samples must be finite, nominally in -1 … 1)`);
    }
    if (pcm.length > 2 ** 31 - 1) throw new AudioError(`transcribe: ${pcm.length} samples is more than whisper.cpp counts (2^31 - 1)`);
    const w = whisperSymbols();
    const o = options;
    const strategy = o.strategy ?? "greedy";
    if (strategy !== "greedy" && strategy !== "beam") throw new ArgumentError(`transcribe: strategy must be "greedy" or "beam", got ${String(strategy)}`);
    const language = o.language ?? "en";
    if (typeof language !== "string") throw new ArgumentError("transcribe: language must be a string");
    const langBytes = cString(language);
    if (language !== "auto" && w.whisper_lang_id(ffi.addressOf(langBytes)) < 0) {
      throw new ArgumentError(`transcribe: unknown language ${JSON.stringify(language)} (whisper.cpp's codes: "en", "de", "zh", …, or "auto")`);
    }
    if (!this.multilingual && language !== "en" && language !== "auto") {
      throw new ArgumentError(`transcribe: this model is English-only; language ${JSON.stringify(language)} needs a multilingual model`);
    }
    const translate = o.translate ?? false;
    if (typeof translate !== "boolean") throw new ArgumentError("transcribe: translate must be a boolean");
    if (translate && !this.multilingual) throw new ArgumentError("transcribe: translate needs a multilingual model");
    if (o.initialPrompt !== undefined && typeof o.initialPrompt !== "string") throw new ArgumentError("transcribe: initialPrompt must be a string");
    // whisper.cpp keeps 224 prompt tokens; its tokenizer's regex grows ~cubically with a word's length and cannot be aborted.
    if (o.initialPrompt !== undefined && o.initialPrompt.length > MAX_PROMPT) {
      throw new ArgumentError(`transcribe: initialPrompt is ${o.initialPrompt.length} characters; at most ${MAX_PROMPT} (whisper.cpp keeps only its last 224 tokens)`);
    }
    const beamSize = int("beamSize", o.beamSize ?? 5, 1, MAX_DECODERS);
    const bestOf = int("bestOf", o.bestOf ?? 5, 1, MAX_DECODERS);
    const temperature = num("temperature", o.temperature ?? 0, 0, 10);
    const temperatureInc = num("temperatureInc", o.temperatureInc ?? 0.2, 0, 10);
    const threads = int("threads", o.threads ?? defaultThreads({ cap: WHISPER_MAX_DEFAULT_THREADS }), 1, 512);
    checkThreads("transcribe", threads);
    const maxLen = int("maxSegmentLength", o.maxSegmentLength ?? 0, 0, 1 << 20);
    const tokenTimestamps = o.tokenTimestamps ?? false;
    const noContext = o.noContext ?? true;
    if (typeof tokenTimestamps !== "boolean") throw new ArgumentError("transcribe: tokenTimestamps must be a boolean");
    if (typeof noContext !== "boolean") throw new ArgumentError("transcribe: noContext must be a boolean");
    for (const k of ["onSegment", "onProgress"] as const) {
      if (o[k] !== undefined && typeof o[k] !== "function") throw new ArgumentError(`transcribe: ${k} must be a function`);
    }
    o.signal?.throwIfAborted();

    const L = whisperLayouts.whisper_full_params;
    const F = L.fields;
    const params = new Uint8Array(L.size);
    w.whisper_full_default_params(strategy === "beam" ? WhisperSamplingStrategy.BEAM_SEARCH : WhisperSamplingStrategy.GREEDY, ffi.addressOf(params));
    const v = new DataView(params.buffer);
    const bool = (f: keyof typeof F, b: boolean) => v.setUint8(F[f].offset, b ? 1 : 0);
    v.setInt32(F.n_threads.offset, threads, true);
    bool("translate", translate);
    bool("no_context", noContext);
    bool("print_special", false);
    bool("print_progress", false);
    bool("print_realtime", false);
    bool("print_timestamps", false);
    bool("token_timestamps", tokenTimestamps);
    v.setInt32(F.max_len.offset, maxLen, true);
    bool("split_on_word", maxLen > 0);
    v.setFloat32(F.temperature.offset, temperature, true);
    v.setFloat32(F.temperature_inc.offset, temperatureInc, true);
    const greedy = whisperLayouts.whisper_full_params_greedy.fields;
    const beam = whisperLayouts.whisper_full_params_beam_search.fields;
    v.setInt32(F.greedy.offset + greedy.best_of.offset, bestOf, true);
    v.setInt32(F.beam_search.offset + beam.beam_size.offset, beamSize, true);
    // The job copies both strings (strdup): they need to live only until wsp_whisper_job_new returns.
    const prompt = o.initialPrompt ? cString(o.initialPrompt) : undefined;
    v.setBigUint64(F.language.offset, BigInt(ffi.addressOf(langBytes)), true);
    bool("detect_language", false); // "auto" as the language detects it and still transcribes
    v.setBigUint64(F.initial_prompt.offset, BigInt(prompt ? ffi.addressOf(prompt) : 0), true);

    const job = Number(w.wsp_whisper_job_new(ctx, ffi.addressOf(params), pcm.length ? ffi.addressOf(pcm) : 0, pcm.length));
    keepAlive([params, langBytes, prompt, pcm]);
    if (job === 0) throw new WhisperError("FAILED", "transcribe: whisper.cpp could not allocate a state for this run (out of memory?)");
    this.#running++;
    let delivered = 0;
    let progress = -1;
    const t0 = new BigInt64Array(1), t1 = new BigInt64Array(1);
    let buf = new Uint8Array(1024);
    const poll = () => {
      const p = w.wsp_whisper_job_progress(job);
      if (p !== progress) {
        progress = p;
        o.onProgress?.(p);
      }
      if (!o.onSegment) return;
      for (const n = w.wsp_whisper_job_n_segments(job); delivered < n; delivered++) {
        let len = w.wsp_whisper_job_segment(job, delivered, ffi.addressOf(t0), ffi.addressOf(t1), ffi.addressOf(buf), buf.length);
        if (len >= buf.length) {
          buf = new Uint8Array(len + 1);
          len = w.wsp_whisper_job_segment(job, delivered, ffi.addressOf(t0), ffi.addressOf(t1), ffi.addressOf(buf), buf.length);
        }
        if (len < 0) break;
        o.onSegment({ index: delivered, t0: Number(t0[0]) * 10, t1: Number(t1[0]) * 10, text: decoder.decode(buf.subarray(0, len)) });
      }
    };
    const onAbort = () => w.wsp_whisper_job_abort(job);
    o.signal?.addEventListener("abort", onAbort, { once: true });
    // Without a callback there is nothing to deliver: the JS thread sleeps until the run settles.
    const timer = o.onSegment || o.onProgress
      ? setInterval(() => {
        try {
          poll();
        } catch (e) {
          // A callback's exception cannot stop whisper.cpp's threads: abort the run and reject with it.
          failure ??= e;
          w.wsp_whisper_job_abort(job);
        }
      }, POLL_MS)
      : undefined;
    let failure: unknown;
    const start = performance.now();
    let status: number;
    let elapsedMs = 0;
    try {
      const run = whisperAsync().wsp_whisper_job_run;
      status = run ? await run(job) : w.wsp_whisper_job_run(job);
      elapsedMs = performance.now() - start;
      clearInterval(timer);
      logFlush();
      if (failure === undefined) {
        try {
          poll();
        } catch (e) {
          failure = e;
        }
      }
      if (failure !== undefined) throw failure;
      if (o.signal?.aborted) throw o.signal.reason;
      if (status !== 0) throw new WhisperError("FAILED", `transcribe: whisper.cpp failed with status ${status} (its log says why)`);
      return { ...readResult(ctx, job), elapsedMs };
    } finally {
      clearInterval(timer);
      o.signal?.removeEventListener("abort", onAbort);
      w.wsp_whisper_job_free(job);
      this.#running--;
    }
  }

  /**
   * Frees the model (`whisper_free`); further use throws.
   *
   * @throws {BusyError} while a transcription runs (await it, or abort it through its signal, first)
   */
  free(): void {
    if (this.#ctx === 0) return;
    if (this.#running > 0) throw new BusyError(`free: ${this.#running} transcription(s) of ${this.#path} are running (await them, or abort them through their signal, first)`);
    registry.unregister(this);
    const ctx = this.#ctx;
    this.#ctx = 0;
    whisperSymbols().whisper_free(ctx);
  }

  /** Frees the model (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

// A forgotten model is freed by the collector: it cannot be running then (a run holds `this`).
const registry = new FinalizationRegistry<number>((ctx) => whisperSymbols().whisper_free(ctx));

/** The segments, tokens and language of a finished job. */
function readResult(ctx: number, job: number): Omit<Transcript, "elapsedMs"> {
  const w = whisperSymbols();
  const state = Number(w.wsp_whisper_job_state(job));
  const TD = whisperLayouts.whisper_token_data;
  const td = new Uint8Array(TD.size);
  const tv = new DataView(td.buffer);
  const segments: Segment[] = [];
  const n = w.whisper_full_n_segments_from_state(state);
  for (let i = 0; i < n; i++) {
    const tokens: Token[] = [];
    const nt = w.whisper_full_n_tokens_from_state(state, i);
    for (let j = 0; j < nt; j++) {
      w.whisper_full_get_token_data_from_state(state, i, j, ffi.addressOf(td));
      const tt0 = Number(tv.getBigInt64(TD.fields.t0.offset, true));
      const tt1 = Number(tv.getBigInt64(TD.fields.t1.offset, true));
      tokens.push({
        id: tv.getInt32(TD.fields.id.offset, true),
        text: text(Number(w.whisper_full_get_token_text_from_state(ctx, state, i, j))),
        p: tv.getFloat32(TD.fields.p.offset, true),
        t0: tt0 < 0 ? -1 : tt0 * 10,
        t1: tt1 < 0 ? -1 : tt1 * 10,
      });
    }
    segments.push({
      index: i,
      t0: Number(w.whisper_full_get_segment_t0_from_state(state, i)) * 10,
      t1: Number(w.whisper_full_get_segment_t1_from_state(state, i)) * 10,
      text: text(Number(w.whisper_full_get_segment_text_from_state(state, i))),
      tokens,
    });
  }
  keepAlive(td);
  const lang = w.whisper_full_lang_id_from_state(state);
  return { text: segments.map((s) => s.text).join(""), segments, language: lang >= 0 ? cstr(Number(w.whisper_lang_str(lang))) : "" };
}
