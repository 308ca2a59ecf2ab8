/**
 * The garbage collector's safety net for native handles other than
 * contexts (which keep their own, see context.ts): backends, buffers,
 * allocators, schedulers, threadpools, events and ggml-opt's objects.
 *
 * Each such handle has one owner, a JS object. `free()` (or `using`)
 * releases it through {@linkcode dispose}; an owner collected without that
 * is released by the FinalizationRegistry. The release function must not
 * refer to its owner (the registry would keep the owner alive): it gets the
 * pointer and whatever the handle's `extra` holds.
 *
 * @module
 */

/** What kind of native object a handle is, as counted by {@linkcode handleStats}. */
export type HandleKind = "backend" | "buffer" | "gallocr" | "sched" | "threadpool" | "event" | "opt";

const KINDS: readonly HandleKind[] = ["backend", "buffer", "gallocr", "sched", "threadpool", "event", "opt"];

/** A native handle and how to release it. */
export interface Handle {
  /** The native pointer; 0 once released. */
  ptr: number;
  /** @ignore @internal */
  readonly kind: HandleKind;
  /** @ignore @internal Frees the native object (called once, with the pointer). */
  readonly release: (ptr: number) => void;
}

const live = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<HandleKind, number>;
let finalized = 0;

const registry = new FinalizationRegistry<Handle>((h) => {
  if (h.ptr === 0) return;
  finalized++;
  release(h);
});

function release(h: Handle): void {
  const p = h.ptr;
  h.ptr = 0;
  live[h.kind]--;
  h.release(p);
}

/**
 * @ignore @internal Makes `owner` the owner of `ptr`: the returned handle is
 * released by {@linkcode dispose}, or when `owner` is collected.
 */
export function adopt(owner: object, kind: HandleKind, ptr: number, release: (ptr: number) => void): Handle {
  const h: Handle = { ptr, kind, release };
  live[kind]++;
  registry.register(owner, h, h);
  return h;
}

/** @ignore @internal Releases `h` now (idempotent); the collector will not release it again. */
export function dispose(h: Handle): void {
  if (h.ptr === 0) return;
  registry.unregister(h);
  release(h);
}

/** Native handles alive, by kind, and how many the garbage collector released. */
export interface HandleStats {
  /** Handles not released yet, by kind. */
  readonly live: Readonly<Record<HandleKind, number>>;
  /** Handles released by the garbage collector because nothing freed them. */
  readonly finalized: number;
}

/** How many backends, buffers, allocators, … are alive and how many the finalizer freed (diagnostics and tests). */
export function handleStats(): HandleStats {
  return { live: { ...live }, finalized };
}
