/**
 * The worker thread behind Bun's non-blocking calls (bun:ffi has none,
 * oven-sh/bun#5490). It opens the same libraries as the main thread — in one
 * process `dlopen` of a path returns the same handle — and makes the call
 * there, so the main thread's event loop keeps running. Pointers cross as
 * numbers and mean the same memory on both threads.
 *
 * Messages in: `{ id, path, symbol, def, args }`; out: `{ id, value }` or
 * `{ id, error }`.
 *
 * @module
 */
import { dlopen } from "bun:ffi";
import type { FFIFunction } from "bun:ffi";
import { bunSymbol } from "./bun.ts";
import type { FunctionDef } from "./types.ts";

/** One call to make. */
export interface WorkerCall {
  /** Matches the answer to the call. */
  readonly id: number;
  /** The library that exports the symbol. */
  readonly path: string;
  /** The exported name. */
  readonly symbol: string;
  /** Its signature. */
  readonly def: FunctionDef;
  /** The arguments (pointers as numbers). */
  readonly args: unknown[];
}

declare const self: { onmessage: ((e: MessageEvent<WorkerCall>) => void) | null; postMessage(m: unknown): void };

const bound = new Map<string, (...a: unknown[]) => unknown>();

self.onmessage = (e: MessageEvent<WorkerCall>) => {
  const { id, path, symbol, def, args } = e.data;
  try {
    const key = `${path}\0${symbol}`;
    let f = bound.get(key);
    if (!f) {
      const lib = dlopen(path, { [symbol]: bunSymbol(def) as FFIFunction }) as unknown as { symbols: Record<string, (...a: unknown[]) => unknown> };
      f = lib.symbols[symbol];
      bound.set(key, f);
    }
    let value = f(...args);
    if (value === null) value = 0;
    self.postMessage({ id, value });
  } catch (error) {
    self.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
};
