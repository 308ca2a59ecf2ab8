/**
 * The worker thread behind Bun's non-blocking calls (bun:ffi has none,
 * oven-sh/bun#5490). It opens the same libraries as the main thread — in one
 * process `dlopen` of a path returns the same handle — and makes the call
 * there, so the main thread's event loop keeps running. Pointers cross as
 * numbers and mean the same memory on both threads.
 *
 * The worker is started from {@linkcode WORKER_SOURCE} through a blob URL,
 * not from a file: a module file would have to be found beside the caller,
 * which differs between the sources (`.ts`), the npm package (`.js`) and a
 * `bun build --compile` executable (no file at all).
 *
 * Messages in: {@linkcode WorkerCall}; out: `{ id, value }` or `{ id, error }`.
 *
 * @module
 */

/** One call to make. */
export interface WorkerCall {
  /** Matches the answer to the call. */
  readonly id: number;
  /** The library that exports the symbol. */
  readonly path: string;
  /** The exported name. */
  readonly symbol: string;
  /** Its bun:ffi signature (FFIType codes). */
  readonly sig: { readonly args: readonly number[]; readonly returns: number };
  /** The arguments (pointers as numbers). */
  readonly args: unknown[];
}

/** The worker's module source (plain JavaScript: it is not transpiled). */
export const WORKER_SOURCE = `
import { dlopen } from "bun:ffi";
const bound = new Map();
self.onmessage = (e) => {
  const { id, path, symbol, sig, args } = e.data;
  try {
    const key = path + "\\0" + symbol;
    let f = bound.get(key);
    if (!f) {
      f = dlopen(path, { [symbol]: { args: sig.args, returns: sig.returns } }).symbols[symbol];
      bound.set(key, f);
    }
    let value = f(...args);
    if (value === null) value = 0;
    self.postMessage({ id, value });
  } catch (error) {
    self.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
};
`;
