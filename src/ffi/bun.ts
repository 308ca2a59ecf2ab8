/**
 * The Bun adapter: `bun:ffi` (`dlopen`, `toArrayBuffer`, `JSCallback`).
 *
 * bun:ffi cannot pass structs by value (oven-sh/bun#6139); the generated
 * tables point every such function at its pointer-based C shim, so nothing
 * here needs them. Functions are bound to their number-ABI wrappers where
 * they have one (`num_abi.ts`): a `double` argument is several times
 * cheaper for bun:ffi than a `ptr` or an `i64`. Bun has no non-blocking call (oven-sh/bun#5490): the
 * `async` variants run the call on a worker thread (`bun_worker.ts`) that
 * opens the same library.
 *
 * @module
 */
import { CFunction, CString, dlopen, FFIType, JSCallback, ptr as addressOfBuffer, read, toArrayBuffer } from "bun:ffi";
import type { FFIFunction, Pointer as BunPointer } from "bun:ffi";
import { BUN_TYPES } from "./native_types.ts";
import { isPointer, missing, missingReason, toPointer } from "./common.ts";
import { acceptBigInts, numDef } from "./num_abi.ts";
import type { FfiAdapter, FfiType, FunctionDef, FunctionTable, NativeLibrary } from "./types.ts";
import { WORKER_SOURCE, type WorkerCall } from "./bun_worker.ts";
import { WorkerError } from "../core/errors.ts";


/** The bun:ffi type of a runtime-neutral FFI type. */
export function bunType(type: FfiType): FFIType {
  return FFIType[BUN_TYPES[type]];
}

/** The bun:ffi definition of one table entry. */
export function bunSymbol(def: FunctionDef): FFIFunction & { args: FFIType[]; returns: FFIType } {
  return { args: def.args.map(bunType), returns: bunType(def.result) };
}

interface BoundLibrary {
  readonly symbols: Record<string, (...a: unknown[]) => unknown>;
  close(): void;
}

function bind(path: string, defs: Record<string, FFIFunction>): BoundLibrary {
  return dlopen(path, defs) as unknown as BoundLibrary;
}

interface CallWorker {
  call(path: string, symbol: string, def: FunctionDef, args: unknown[]): Promise<unknown>;
  /** Ends the thread; pending calls reject. */
  end(): void;
}

let callWorker: CallWorker | undefined;

/** For tests: the source the next worker starts from (a broken one shows how failures reach callers). */
export const workerSource = { text: WORKER_SOURCE };

/** For tests: ends the current worker, so that the next call starts one from {@linkcode workerSource}. */
export function endWorker(): void {
  callWorker?.end();
}

/**
 * The worker that makes non-blocking calls, started on first use. It is
 * referenced only while calls are pending, so it never keeps the process
 * alive on its own; calls are made one at a time, in order. When it fails to
 * start or dies, every pending call rejects with a {@linkcode WorkerError}
 * and the next call starts a new one.
 */
function worker(): CallWorker {
  if (callWorker) return callWorker;
  const url = URL.createObjectURL(new Blob([workerSource.text], { type: "text/javascript" }));
  // Bun's Worker has ref()/unref() (as Node's does); the DOM typing lacks them.
  const w = new Worker(url) as Worker & { ref(): void; unref(): void };
  w.unref();
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let next = 0;
  const fail = (why: string) => {
    if (me === callWorker) callWorker = undefined;
    URL.revokeObjectURL(url);
    const calls = [...pending.values()];
    pending.clear();
    w.terminate();
    for (const p of calls) p.reject(new WorkerError(`the thread that makes non-blocking calls ${why}`));
  };
  w.onmessage = (e: MessageEvent<{ id: number; value?: unknown; error?: string }>) => {
    const p = pending.get(e.data.id);
    if (!p) return;
    pending.delete(e.data.id);
    if (pending.size === 0) w.unref();
    if (e.data.error !== undefined) p.reject(new WorkerError(`the non-blocking call failed: ${e.data.error}`));
    else p.resolve(e.data.value);
  };
  w.addEventListener("error", (e: Event) => fail(`failed: ${(e as ErrorEvent).message || "an error without a message"}`));
  w.addEventListener("close", () => fail("ended"));
  const me: CallWorker = {
    end: () => fail("was ended"),
    call: (path, symbol, def, args) =>
      new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        if (pending.size === 1) w.ref();
        const message: WorkerCall = { id, path, symbol, sig: { args: def.args.map(bunType), returns: bunType(def.result) }, args };
        w.postMessage(message);
      }),
  };
  callWorker = me;
  return me;
}

function open<T extends FunctionTable>(path: string, table: T): NativeLibrary<T> {
  const defs: Record<string, FFIFunction> = {};
  for (const [name, def] of Object.entries(table)) {
    if (def.defined === false) continue;
    const b = numDef(name, def);
    defs[b.symbol] = bunSymbol(b);
  }
  let libs: BoundLibrary[];
  try {
    libs = [bind(path, defs)];
  } catch (e) {
    // A file that cannot be opened at all ("Failed to open library …: file
    // too short") is an error of its own, not a table of missing symbols.
    if (/^Failed to open library/.test((e as Error | undefined)?.message ?? "")) throw e;
    // dlopen fails as a whole when one symbol is missing: bind one by one to
    // find which, so that the others still load.
    libs = [];
    for (const [sym, def] of Object.entries(defs)) {
      try {
        libs.push(bind(path, { [sym]: def }));
      } catch {
        // reported as missing below
      }
    }
  }
  const raw: Record<string, (...a: unknown[]) => unknown> = {};
  for (const lib of libs) Object.assign(raw, lib.symbols);
  const symbols: Record<string, unknown> = {};
  const handles: Record<string, unknown> = {};
  const async: Record<string, unknown> = {};
  const bound = new Set<string>();
  for (const [name, def] of Object.entries(table)) {
    const b = numDef(name, def);
    const f = def.defined === false ? undefined : raw[b.symbol];
    if (!f) {
      symbols[name] = handles[name] = missing(name, missingReason(def, path));
      continue;
    }
    bound.add(name);
    // A number-ABI wrapper (num_abi.ts) returns NULL as 0. Bun returns null for a NULL `ptr`; the API's NULL is 0.
    symbols[name] = def.num ? acceptBigInts(f, def.args) : isPointer(def.result) ? (...a: unknown[]) => (f(...a) as number | null) ?? 0 : f;
    handles[name] = def.num ? f : symbols[name]; // numbers only: no bigint check in the way of the call
    if (def.nonblocking) {
      const plain: FunctionDef = { args: b.args, result: b.result };
      const call = (...a: unknown[]) => worker().call(path, b.symbol, plain, a);
      async[name] = def.num ? acceptBigInts(call, def.args) : call;
    }
  }
  return {
    symbols: symbols as NativeLibrary<T>["symbols"],
    handles: handles as NativeLibrary<T>["handles"],
    async: async as NativeLibrary<T>["async"],
    has: (name) => bound.has(name),
    close: () => libs.forEach((l) => l.close()),
  };
}

/** The adapter for Bun. */
export const adapter: FfiAdapter = {
  runtime: "bun",
  hasNonblocking: true,
  deniedFlags: () => [],
  mayRun(): boolean {
    return true;
  },
  open,
  view: (ptr, byteLength) => {
    if (ptr === 0) throw new TypeError("NULL pointer dereference");
    return toArrayBuffer(ptr as BunPointer, 0, byteLength);
  },
  addressOf: (buffer) =>
    toPointer(addressOfBuffer(
      buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength),
    )),
  readCString: (ptr) => (ptr === 0 ? null : new CString(ptr as BunPointer).toString()),
  symbolAddress: (path, name) => {
    try {
      const lib = dlopen(path, { [name]: { args: [], returns: FFIType.void } }) as unknown as {
        symbols: Record<string, { ptr?: number | null }>;
      };
      // The library stays open: the address must outlive this call.
      return toPointer(lib.symbols[name].ptr ?? 0);
    } catch {
      return 0;
    }
  },
  readPointer: (ptr, offset = 0) => toPointer(read.ptr(ptr as BunPointer, offset)),
  callPointer: (ptr, signature, args) => {
    if (ptr === 0) throw new TypeError("NULL function pointer");
    const fn = CFunction({ ptr: ptr as BunPointer, args: signature.args.map(bunType), returns: bunType(signature.result) }) as unknown as (...a: unknown[]) => unknown;
    const res = fn(...args);
    return isPointer(signature.result) ? toPointer(res as number | null) : res;
  },
  callback: (signature, fn, options = {}) => {
    const pointerArgs = signature.args.map(isPointer);
    const cb = new JSCallback(
      (...args: unknown[]) => {
        for (let i = 0; i < args.length; i++) if (pointerArgs[i]) args[i] = toPointer(args[i] as number | null);
        return (fn as (...a: unknown[]) => unknown)(...args);
      },
      { args: signature.args.map(bunType), returns: bunType(signature.result), threadsafe: options.threadSafe ?? false },
    );
    if (cb.ptr === null) throw new Error("bun:ffi could not create the callback");
    return { pointer: toPointer(cb.ptr), close: () => cb.close() };
  },
};
