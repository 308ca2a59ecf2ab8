/**
 * The Node.js adapter, through koffi.
 *
 * Pointers are declared as `uintptr_t` so that they cross as numbers, the one
 * representation the API uses on every runtime: koffi returns a 64-bit
 * result as a number when it is a safe integer (and as an exact bigint
 * above 2^53, which no user-space address of a supported target reaches).
 * So the synchronous calls are koffi's functions themselves, unwrapped. A
 * wrapper shared by every pointer-returning function (one closure literal,
 * so one feedback slot for its spread call) made those calls megamorphic:
 * a loop building 1002-node graphs through the API took 370 µs per graph
 * with it and 268 µs without. koffi runs `.async` calls on
 * worker threads, and queues callbacks made from other threads to the JS
 * thread, so every callback here is thread-safe.
 *
 * @module
 */
import { createRequire } from "node:module";
import type Koffi from "koffi";
import { KOFFI_TYPES } from "./native_types.ts";
import { isPointer, missing, missingReason, symbolOf, toPointer } from "./common.ts";
import type { FfiAdapter, FfiType, FunctionTable, NativeLibrary } from "./types.ts";
import { LibraryNotFoundError } from "../core/errors.ts";

let koffiModule: typeof Koffi | undefined;

/**
 * koffi, required on first use rather than imported: the package then imports
 * without it, and the first call that needs it says what to install instead of
 * failing the import with a bare module-resolution error.
 */
function koffi(): typeof Koffi {
  if (koffiModule) return koffiModule;
  try {
    return koffiModule = createRequire(import.meta.url)("koffi") as typeof Koffi;
  } catch (e) {
    const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
    throw new LibraryNotFoundError(
      "wsp-ggml calls C on Node.js through the koffi package, which could not be loaded: install it beside wsp-ggml (`npm install koffi`), or run on Bun or Deno",
      [`koffi: ${why}`],
    );
  }
}


/** The koffi type name of a runtime-neutral FFI type. */
export function koffiType(type: FfiType): string {
  return KOFFI_TYPES[type];
}

type KoffiFn = ((...a: unknown[]) => unknown) & {
  async: (...a: unknown[]) => void;
};

function open<T extends FunctionTable>(path: string, table: T): NativeLibrary<T> {
  const lib = koffi().load(path);
  const symbols: Record<string, unknown> = {};
  const async: Record<string, unknown> = {};
  const bound = new Set<string>();
  for (const [name, def] of Object.entries(table)) {
    let f: KoffiFn | undefined;
    if (def.defined !== false) {
      try {
        f = lib.func(symbolOf(name, def), koffiType(def.result), def.args.map(koffiType)) as KoffiFn;
      } catch {
        f = undefined;
      }
    }
    if (!f) {
      symbols[name] = missing(name, missingReason(def, path));
      continue;
    }
    const fn = f;
    bound.add(name);
    symbols[name] = fn;
    if (def.nonblocking) {
      const pointer = isPointer(def.result);
      async[name] = (...a: unknown[]) =>
        new Promise((resolve, reject) =>
          fn.async(...a, (err: unknown, res: number | bigint) => {
            if (err) reject(err);
            else resolve(pointer ? toPointer(res) : res);
          })
        );
    }
  }
  return {
    symbols: symbols as NativeLibrary<T>["symbols"],
    handles: symbols as unknown as NativeLibrary<T>["handles"],
    async: async as NativeLibrary<T>["async"],
    has: (name) => bound.has(name),
    close: () => lib.unload(),
  };
}

let protoCount = 0;
/** The callback types made so far, by signature (koffi types live as long as the process). */
const protos = new Map<string, ReturnType<typeof Koffi.pointer>>();
/** The function-pointer types of `callPointer`, by signature (same reason). */
const fnProtos = new Map<string, ReturnType<typeof Koffi.proto>>();

/** The adapter for Node.js. */
export const adapter: FfiAdapter = {
  runtime: "node",
  hasNonblocking: true,
  deniedFlags: () => [],
  mayRun(): boolean {
    return true;
  },
  open,
  view: (ptr, byteLength) => {
    if (ptr === 0) throw new TypeError("NULL pointer dereference");
    return koffi().view(BigInt(ptr), byteLength);
  },
  addressOf: (buffer) => toPointer(koffi().address(buffer)),
  readCString: (ptr) => (ptr === 0 ? null : koffi().decode(BigInt(ptr), "char", -1) as string),
  symbolAddress: (path, name) => {
    try {
      return toPointer(koffi().address(koffi().load(path).symbol(name, "void *")) as bigint);
    } catch {
      return 0;
    }
  },
  readPointer: (ptr, offset = 0) => toPointer(koffi().decode(BigInt(ptr), offset, "uintptr_t") as number | bigint),
  callPointer: (ptr, signature, args) => {
    if (ptr === 0) throw new TypeError("NULL function pointer");
    const key = `${koffiType(signature.result)}(${signature.args.map(koffiType).join(",")})`;
    let proto = fnProtos.get(key);
    if (proto === undefined) fnProtos.set(key, proto = koffi().proto(`wsp_ffi_fn${protoCount++}`, koffiType(signature.result), signature.args.map(koffiType)));
    const res = koffi().call(BigInt(ptr), proto, ...args);
    return isPointer(signature.result) ? toPointer(res as number | bigint) : res;
  },
  callback: (signature, fn) => {
    // One koffi type per signature: koffi never frees a type, so a new proto per callback leaked ~4 KB for each
    // logSet / setEvalCallback / epoch (found by the API fuzz's resident-memory bound).
    const key = `${koffiType(signature.result)}(${signature.args.map(koffiType).join(",")})`;
    let proto = protos.get(key);
    if (proto === undefined) protos.set(key, proto = koffi().pointer(koffi().proto(`wsp_ffi_cb${protoCount++}`, koffiType(signature.result), signature.args.map(koffiType))));
    const pointerArgs = signature.args.map(isPointer);
    const handle = koffi().register((...args: unknown[]) => {
      for (let i = 0; i < args.length; i++) if (pointerArgs[i]) args[i] = toPointer(args[i] as number | bigint);
      return (fn as (...a: unknown[]) => unknown)(...args);
    }, proto);
    return { pointer: toPointer(handle), close: () => koffi().unregister(handle) };
  },
};
