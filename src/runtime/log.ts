/**
 * ggml's log ({@linkcode logSet}, `wsp_ggml_log_set`) and the message printed
 * when ggml aborts ({@linkcode abortTrace}, `wsp_ggml_set_abort_callback`).
 *
 * Default, without {@linkcode logSet}: WARN and ERROR messages (and their
 * continuations) go to stderr, DEBUG and INFO are dropped. This is done in C
 * (`native/log.c`), costs no JS call, and works from every thread.
 *
 * Threads: ggml may log from threads that are not the JS thread (the CPU
 * backend's workers, the threads of non-blocking calls). None of the three
 * runtimes can take such a call safely (Deno and koffi block the native
 * thread until the JS thread runs the callback, which deadlocks when the JS
 * thread waits for that thread inside a compute; Bun's threadsafe callback
 * does not wait, so the message text is freed before JS reads it). So the
 * callback ggml sees is C: on the JS thread it calls the JS callback at once;
 * from another thread it copies the message into a queue (at most 4096
 * messages; more are counted and reported as one WARN) that is delivered on
 * the JS thread before the next message logged there, when a non-blocking
 * compute finishes, and on {@linkcode logFlush}.
 *
 * @module
 */
import { callbacks, LogLevel } from "../ffi/bindings.gen.ts";
import { ArgumentError, LibraryNotFoundError } from "../core/errors.ts";
import { BUILD_COMMAND, ffi, keepAlive, library } from "./loader.ts";
import type { NativeCallback } from "../ffi/types.ts";

export { LogLevel };

/**
 * Receives one ggml log message: its level (never `CONT`: a continuation is
 * reported with the level of the message it continues) and its text, as
 * ggml wrote it (usually ending with a newline; a continuation carries only
 * the continued part).
 */
export type LogCallback = (level: LogLevel, text: string) => void;

/** Options of {@linkcode logSet}. */
export interface LogOptions {
  /**
   * The lowest level delivered (`NONE`, plain output, counts as `INFO`);
   * messages below it are dropped in C, before any JS call. Default `DEBUG`
   * (everything).
   */
  readonly minLevel?: LogLevel;
}

const natives = {
  wsp_js_log_install: { args: ["function", "i32"], result: "void" },
  wsp_js_log_pending: { args: [], result: "i32" },
  wsp_js_log_pop: { args: [], result: "pointer" },
  wsp_js_log_level_offset: { args: [], result: "i32" },
  wsp_js_log_text_offset: { args: [], result: "i32" },
  wsp_js_log_free: { args: ["pointer"], result: "void" },
  wsp_js_log_dropped: { args: [], result: "i32" },
  wsp_js_log_test: { args: ["i32", "pointer", "pointer", "i32"], result: "i32", nonblocking: true },
  wsp_js_abort_info: { args: [], result: "pointer" },
  wsp_js_abort_info_size: { args: [], result: "i32" },
} as const;

type Natives = ReturnType<typeof openNatives>;

function openNatives() {
  const base = library().location.base;
  const lib = ffi.open(base, natives);
  const s = lib.symbols;
  if (!lib.has("wsp_js_log_install")) {
    throw new LibraryNotFoundError(`${base} predates wsp-ggml's log routing (no wsp_js_log_install): rebuild it with ${BUILD_COMMAND}`, [base]);
  }
  return { s, async: lib.async, levelOffset: s.wsp_js_log_level_offset(), textOffset: s.wsp_js_log_text_offset() };
}

let opened: Natives | undefined;
/** @ignore @internal The C side of logging and aborts (`native/log.c`), opened on first use. */
export function logNatives(): Natives {
  return (opened ??= openNatives());
}

let current: { callback: LogCallback; native: NativeCallback } | undefined;

/** How many log callbacks are running (a logSet from inside one must not close the native callback under it). */
let delivering = 0;
/** A logSet called from inside a log callback: applied once the JS stack has unwound (a microtask). */
let pending: { callback: LogCallback | null; minLevel: LogLevel } | undefined;

function deliver(callback: LogCallback, level: number, text: string): void {
  delivering++;
  try {
    callback(level as LogLevel, text);
  } catch (e) {
    // It cannot cross C: rethrown as an uncaught error once the native call returns.
    queueMicrotask(() => {
      throw e;
    });
  } finally {
    delivering--;
  }
}


function drain(callback: LogCallback): void {
  const { s, levelOffset, textOffset } = logNatives();
  if (s.wsp_js_log_pending() === 0) return;
  for (let m = s.wsp_js_log_pop(); m !== 0; m = s.wsp_js_log_pop()) {
    const level = new Int32Array(ffi.view(m + levelOffset, 4))[0];
    const text = ffi.readCString(m + textOffset) ?? "";
    s.wsp_js_log_free(m);
    deliver(callback, level, text);
  }
  const dropped = s.wsp_js_log_dropped();
  if (dropped > 0) {
    deliver(callback, LogLevel.WARN, `wsp-ggml: ${dropped} log messages from native threads were dropped (more than 4096 were waiting)\n`);
  }
}

const LEVELS: ReadonlySet<number> = new Set([LogLevel.NONE, LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN, LogLevel.ERROR]);

/**
 * Routes ggml's log to `callback` (`wsp_ggml_log_set`), or restores the
 * default with `null`: WARN and ERROR messages to stderr, the rest dropped.
 * Call it on the JS thread that uses the library: `callback` always runs
 * there (messages from native threads are queued; see {@linkcode logFlush}).
 * Called from inside a log callback, the change takes effect once the
 * native call that logged returns (a microtask); until then messages go to
 * the running callback.
 * An exception thrown by `callback` cannot cross C: it is rethrown from a
 * microtask, as an uncaught error.
 *
 * @param callback receives each message at `minLevel` or above; null restores the default
 * @param options the lowest level delivered
 * @throws {ArgumentError} for a callback that is not a function or null, or an unknown level
 */
export function logSet(callback: LogCallback | null, options: LogOptions = {}): void {
  if (callback !== null && typeof callback !== "function") throw new ArgumentError("logSet: expected a function or null");
  const minLevel = options.minLevel ?? LogLevel.DEBUG;
  if (!LEVELS.has(minLevel)) throw new ArgumentError(`logSet: minLevel must be a LogLevel other than CONT (0 … 4), got ${String(minLevel)}`);
  if (delivering > 0) {
    // From inside a log callback, whose native callback is on the stack: closing it there frees the code it
    // returns into (Deno), and a callback created there fails on its first call (koffi). The change waits until
    // the native call that logged has returned (a microtask); messages until then go to the running callback.
    const first = pending === undefined;
    pending = { callback, minLevel };
    if (first) {
      queueMicrotask(() => {
        const p = pending;
        pending = undefined;
        if (p) logSet(p.callback, { minLevel: p.minLevel });
      });
    }
    return;
  }
  pending = undefined; // a direct call supersedes one deferred from a callback
  const { s } = logNatives();
  const previous = current;
  if (previous) drain(previous.callback);
  if (callback === null) {
    s.wsp_js_log_install(0, LogLevel.DEBUG);
    current = undefined;
  } else {
    const cb = callback;
    const native = ffi.callback(callbacks.wsp_ggml_log_callback, ((level: number, text: number) => {
      if (s.wsp_js_log_pending() !== 0) drain(cb);
      deliver(cb, level, ffi.readCString(text) ?? "");
    }) as never);
    s.wsp_js_log_install(native.pointer, minLevel === LogLevel.NONE ? LogLevel.INFO : minLevel);
    current = { callback: cb, native };
  }
  // Only the JS thread calls the JS callback, and it is here, outside any callback: closing is safe.
  previous?.native.close();
}

/**
 * Delivers the messages that native threads logged since the last delivery
 * (they are otherwise delivered before the next message logged on the JS
 * thread, and when a non-blocking compute finishes). Cheap when there are
 * none (one native call); does nothing without a {@linkcode logSet} callback.
 */
export function logFlush(): void {
  if (current) drain(current.callback);
}

function testArgs(text: string, cont: string | null): [Uint8Array, Uint8Array | null] {
  const encoder = new TextEncoder();
  return [encoder.encode(text + "\0"), cont === null ? null : encoder.encode(cont + "\0")];
}

/**
 * @ignore @internal Test hook: logs `text` at `level` through ggml's logger, then
 * `cont` (unless null) as a `CONT` continuation (`native/log.c`), from one
 * new native thread (waiting for it to end) when `threaded`, else from this
 * thread.
 */
export function logTest(level: LogLevel, text: string, cont: string | null, threaded: boolean): void {
  const [t, c] = testArgs(text, cont);
  const status = logNatives().s.wsp_js_log_test(level, ffi.addressOf(t), c ? ffi.addressOf(c) : 0, threaded ? 1 : 0);
  keepAlive([t, c]);
  if (status !== 0) throw new Error("could not start a native thread");
}

/**
 * @ignore @internal Test hook: {@linkcode logTest} as a non-blocking call, so on the
 * thread the runtime runs those on (Deno `nonblocking`, koffi `.async`, the
 * worker of Bun).
 */
export async function logTestNonblocking(level: LogLevel, text: string, cont: string | null): Promise<void> {
  const [t, c] = testArgs(text, cont);
  const call = logNatives().async.wsp_js_log_test;
  if (!call) throw new Error("no non-blocking call on this runtime");
  await call(level, ffi.addressOf(t), c ? ffi.addressOf(c) : 0, 0);
  keepAlive([t, c]);
}

// ---------------------------------------------------------------------------------------------
// Abort

type Fns = Record<string, (...a: unknown[]) => unknown>;
let traced: { symbols: Fns; async: Fns; originals: [Fns, Fns] } | undefined;
const HERE = new URL(import.meta.url).pathname;

function recorder(): (name: string) => void {
  const { s } = logNatives();
  const bytes = new Uint8Array(ffi.view(s.wsp_js_abort_info(), s.wsp_js_abort_info_size()));
  const room = bytes.subarray(0, bytes.length - 1);
  const encoder = new TextEncoder();
  return (name) => {
    const frames = (new Error().stack ?? "").split("\n").filter((l) => l.trim() !== "" && l !== "Error" && !l.includes(HERE));
    const { written } = encoder.encodeInto(`${name}\n${frames.map((l) => "    " + l.trim()).join("\n")}`, room);
    bytes[written] = 0;
  };
}

/**
 * Whether ggml's abort message carries the JS stack of the last native call.
 *
 * When a ggml assert that the API does not check first fails, ggml aborts
 * the process. wsp-ggml's abort callback (C, `wsp_ggml_set_abort_callback`,
 * installed when the library loads) then prints to stderr: ggml's message
 * (`file:line: condition`), then `wsp-ggml: the last native call from JS
 * was <name>` followed by the JS stack of that call when tracing is on (a
 * hint to turn it on otherwise), then ggml's native backtrace; the process
 * ends with SIGABRT.
 *
 * With tracing off (the default) nothing is recorded and calls cost nothing
 * extra. With it on, every call of the loaded library's functions first
 * writes its name and `new Error().stack` into a native buffer (a few
 * microseconds a call): a debugging aid.
 *
 * @param enabled true to record each call, false to stop (and clear the record)
 * @throws {ArgumentError} for a value that is not a boolean
 */
export function abortTrace(enabled: boolean): void {
  if (typeof enabled !== "boolean") throw new ArgumentError("abortTrace: expected a boolean");
  const lib = library();
  const symbols = lib.symbols as unknown as Fns;
  const async = lib.async as unknown as Fns;
  if (enabled && !traced) {
    const record = recorder();
    const originals: [Fns, Fns] = [{ ...symbols }, { ...async }];
    for (const [table, saved] of [[symbols, originals[0]], [async, originals[1]]] as const) {
      for (const [name, f] of Object.entries(saved)) {
        table[name] = (...a: unknown[]) => {
          record(name);
          return f(...a);
        };
      }
    }
    traced = { symbols, async, originals };
  } else if (!enabled && traced) {
    Object.assign(traced.symbols, traced.originals[0]);
    Object.assign(traced.async, traced.originals[1]);
    traced = undefined;
    const { s } = logNatives();
    new Uint8Array(ffi.view(s.wsp_js_abort_info(), 1))[0] = 0;
  }
}
