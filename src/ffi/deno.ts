/**
 * The Deno adapter: `Deno.dlopen`, `Deno.UnsafePointerView`,
 * `Deno.UnsafeCallback`.
 *
 * Functions are bound to their number-ABI wrappers where they have one
 * (`num_abi.ts`): pointers and 64-bit integers cross as doubles, plain
 * numbers, on Deno's fast path. Elsewhere pointers are declared as `usize`
 * and converted to and from bigints (Deno's fast path takes 64-bit values
 * only as bigints), so that the API sees numbers on every runtime.
 *
 * @module
 */
import { DENO_TYPES } from "./native_types.ts";
import { convertArgs, isInt64, isPointer, missing, missingReason, toInt64, toPointer } from "./common.ts";
import { acceptBigInts, isWide, numDef } from "./num_abi.ts";
import type {
  CallbackOptions,
  FfiAdapter,
  FfiSignature,
  FfiType,
  FunctionTable,
  NativeCallback,
  NativeLibrary,
  Pointer,
} from "./types.ts";

/** The Deno native type of a runtime-neutral FFI type. */
export function denoType(type: FfiType): Deno.NativeResultType {
  return DENO_TYPES[type];
}

/** The `Deno.dlopen` definition of one table entry. */
export function denoSymbol(
  name: string,
  def: FunctionTable[string],
  nonblocking = false,
): Deno.ForeignFunction {
  const bound = numDef(name, def);
  const out: Deno.ForeignFunction = {
    name: bound.symbol,
    parameters: bound.args.map(denoType) as Deno.NativeType[],
    result: denoType(bound.result),
    optional: true,
  };
  if (nonblocking) out.nonblocking = true;
  return out;
}

const ASYNC = "$nonblocking";

function pointerObject(ptr: Pointer): Deno.PointerObject {
  const p = Deno.UnsafePointer.create(BigInt(ptr));
  if (p === null) throw new TypeError("NULL pointer dereference");
  return p;
}

// Small integers (shapes, counts, sizes) are the common 64-bit arguments: their bigints are made once.
const SMALL = Array.from({ length: 1 << 14 }, (_, i) => BigInt(i));
const big = (v: unknown) => (typeof v !== "number" ? v : v >= 0 && v < SMALL.length && v === (v | 0) ? SMALL[v] : BigInt(v));


/**
 * A call of `f` in the API's conventions that keeps Deno's fast path.
 * Deno's fast path takes 64-bit integer (and `usize` pointer) arguments as
 * bigints only: a number falls back to the slow path, about 10× slower
 * (~145 ns instead of ~15 ns per call on this project's machine), so these
 * (`wide`) arguments are converted; `norm` turns bigint results into
 * numbers where they fit.
 */
function fastCall(f: (...a: unknown[]) => unknown, wide: boolean[], norm?: (v: number | bigint) => unknown): (...a: unknown[]) => unknown {
  return convertArgs(f, wide, big, norm);
}

/** Non-blocking calls running on another thread. */
let inFlight = 0;
let exitGuard = false;

/**
 * An uncaught exception or unhandled rejection ends Deno by tearing down the
 * isolate, which frees the ArrayBuffers that a non-blocking call still reads
 * and writes on its thread (a context's pool: SIGSEGV in ggml's compute
 * thread). While such a call runs, the error is printed and the process
 * ends at once instead (`Deno.exit(1)`, as `process.exit` does, which leaves
 * the memory in place); the exit code is Deno's for an uncaught error.
 */
function guardExit(): void {
  if (exitGuard) return;
  exitGuard = true;
  const end = (what: string, err: unknown) => {
    if (inFlight === 0) return;
    console.error(`error: ${what} ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    Deno.exit(1);
  };
  globalThis.addEventListener("error", (e) => end("Uncaught", (e as ErrorEvent).error));
  globalThis.addEventListener("unhandledrejection", (e) => end("Uncaught (in promise)", (e as PromiseRejectionEvent).reason));
}

function open<T extends FunctionTable>(path: string, table: T): NativeLibrary<T> {
  const defs: Record<string, Deno.ForeignFunction> = {};
  for (const [name, def] of Object.entries(table)) {
    if (def.defined === false) continue;
    defs[name] = denoSymbol(name, def);
    if (def.nonblocking) defs[name + ASYNC] = denoSymbol(name, def, true);
  }
  const lib = Deno.dlopen(path, defs);
  const raw = lib.symbols as Record<string, ((...a: unknown[]) => unknown) | null>;
  const symbols: Record<string, unknown> = {};
  const handles: Record<string, unknown> = {};
  const async: Record<string, unknown> = {};
  const bound = new Set<string>();
  for (const [name, def] of Object.entries(table)) {
    const f = raw[name] ?? null;
    if (f === null) {
      symbols[name] = handles[name] = missing(name, missingReason(def, path));
      continue;
    }
    bound.add(name);
    // Deno returns every i64 (and sometimes a usize) as a bigint: normalise
    // to the API's conventions (see types.ts); handles keep pointers as Deno returns them.
    // A number-ABI wrapper already speaks them: numbers in, numbers out.
    const norm = def.num ? undefined : isPointer(def.result) ? toPointer : isInt64(def.result) ? toInt64 : undefined;
    if (def.num) {
      symbols[name] = acceptBigInts(f, def.args);
      handles[name] = f; // numbers only: no bigint check in the way of the fast call
    } else {
      const wide = def.args.map(isWide);
      symbols[name] = fastCall(f, wide, norm);
      handles[name] = isPointer(def.result) ? fastCall(f, wide) : symbols[name]; // the result as Deno returned it
    }
    const g = raw[name + ASYNC];
    if (g) {
      async[name] = async (...a: unknown[]) => {
        guardExit();
        inFlight++;
        try {
          const r = await (g(...a) as Promise<number | bigint>);
          return norm ? norm(r) : r;
        } finally {
          inFlight--;
        }
      };
    }
  }
  return {
    symbols: symbols as NativeLibrary<T>["symbols"],
    handles: handles as NativeLibrary<T>["handles"],
    async: async as NativeLibrary<T>["async"],
    has: (name) => bound.has(name),
    close: () => lib.close(),
  };
}

function callback(
  signature: FfiSignature,
  fn: (...args: never[]) => unknown,
  options: CallbackOptions = {},
): NativeCallback {
  const def = {
    parameters: signature.args.map(denoType) as Deno.NativeType[],
    result: denoType(signature.result),
  } as const;
  const pointerArgs = signature.args.map(isPointer);
  const wrapped = (...args: unknown[]) => {
    for (let i = 0; i < args.length; i++) {
      if (pointerArgs[i]) args[i] = toPointer(args[i] as number | bigint);
    }
    return (fn as (...a: unknown[]) => unknown)(...args);
  };
  const cb = options.threadSafe
    ? Deno.UnsafeCallback.threadSafe(def, wrapped as never)
    : new Deno.UnsafeCallback(def, wrapped as never);
  return {
    pointer: toPointer(Deno.UnsafePointer.value(cb.pointer)),
    close: () => cb.close(),
  };
}

/** The adapter for Deno. */
export const adapter: FfiAdapter = {
  runtime: "deno",
  hasNonblocking: true,
  mayRun(command: string): boolean {
    const state = Deno.permissions.querySync({ name: "run", command }).state;
    return state === "granted";
  },
  deniedFlags(names) {
    return names.filter((name) => {
      try {
        return Deno.permissions.querySync({ name } as Deno.PermissionDescriptor).state !== "granted";
      } catch {
        return false; // not a permission this Deno knows
      }
    }).map((name) => `--allow-${name}`);
  },
  open,
  view: (ptr, byteLength) => Deno.UnsafePointerView.getArrayBuffer(pointerObject(ptr), byteLength),
  addressOf: (buffer) => {
    const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : buffer;
    return toPointer(Deno.UnsafePointer.value(Deno.UnsafePointer.of(bytes as Uint8Array<ArrayBuffer>)));
  },
  readCString: (ptr) => (ptr === 0 ? null : Deno.UnsafePointerView.getCString(pointerObject(ptr))),
  symbolAddress: (path, name) => {
    // A static of type "pointer" is the symbol's own address.
    const lib = Deno.dlopen(path, { [name]: { type: "pointer", optional: true } } as const);
    const p = (lib.symbols as Record<string, Deno.PointerValue | null>)[name] ?? null;
    return p === null ? 0 : toPointer(Deno.UnsafePointer.value(p));
  },
  readPointer: (ptr, offset = 0) => toPointer(new Deno.UnsafePointerView(pointerObject(ptr)).getBigUint64(offset)),
  callPointer: (ptr, signature, args) => {
    const def = { parameters: signature.args.map(denoType) as Deno.NativeType[], result: denoType(signature.result) };
    const fn = new Deno.UnsafeFnPointer(pointerObject(ptr) as Deno.PointerObject<typeof def>, def);
    // Pointers cross as usize (denoType), like the bound functions' arguments.
    const a = args.map((v, i) => isPointer(signature.args[i]) ? BigInt(v as number) : v);
    const res = (fn.call as (...x: unknown[]) => unknown)(...a);
    return isPointer(signature.result) ? toPointer(res as number | bigint) : res;
  },
  callback,
};
