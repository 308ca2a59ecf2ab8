/**
 * The runtime-neutral FFI vocabulary shared by the generated bindings and the
 * three runtime adapters (Deno, Bun, Node via koffi).
 *
 * Value conventions, identical on every runtime:
 * - `pointer` and `function` values are a {@linkcode Pointer}: the address as
 *   a plain number, `0` for NULL. User-space addresses on every supported
 *   target (x86-64 and AArch64 Linux, macOS, Windows) fit in 53 bits; an
 *   address that does not is never rounded: it is reported as an error
 *   (on Node, koffi returns it as an exact bigint).
 * - 64-bit integers (`i64`, `u64`, `isize`, `usize`) are accepted as
 *   `number | bigint` and returned as a number when it is a safe integer,
 *   else as a bigint.
 * - `bool` is a boolean; the other numeric types are numbers.
 *
 * @module
 */
import { ERROR_CLASS, isErrorInstance } from "../core/error_class.ts";

/** A native address as a number; `0` is NULL. */
export type Pointer = number;

/** The NULL pointer. */
export const NULL: Pointer = 0;

/**
 * A native address in the form the runtime's FFI passes fastest: a number,
 * except from the few Deno functions without a number-ABI wrapper (see
 * `num_abi.ts`), which return a bigint (Deno's fast calls take 64-bit
 * values only as bigints). Every call accepts either form;
 * {@linkcode NativeLibrary.handles} returns pointers in this form, so a
 * handle taken from one call and given to the next is never converted.
 */
export type Handle = number | bigint;

/** A value type that can cross the FFI boundary. */
export type FfiType =
  | "void"
  | "bool"
  | "i8"
  | "u8"
  | "i16"
  | "u16"
  | "i32"
  | "u32"
  | "i64"
  | "u64"
  | "isize"
  | "usize"
  | "f32"
  | "f64"
  | "pointer"
  | "function";

/** Which native library exports a function (`whisper`: libwsp-whisper, opened on first use). */
export type LibraryName = "base" | "cpu" | "metal" | "whisper";

/** The signature of a native function or callback. */
export interface FfiSignature {
  /** Parameter types, in order. */
  readonly args: readonly FfiType[];
  /** Result type. */
  readonly result: FfiType;
}

/** A native function as the adapters load it. */
export interface FunctionDef extends FfiSignature {
  /** Exported symbol to bind, when it differs from the table key (C shims). */
  readonly symbol?: string;
  /**
   * The exported number-ABI wrapper (`wsp_num_*`, see `num_abi.ts`): the
   * same call with every pointer and 64-bit integer as a double. Deno and
   * Bun bind it instead of `symbol` when present.
   */
  readonly num?: string;
  /** `false` when the headers declare the function but no source defines it. */
  readonly defined?: boolean;
  /** Offer a non-blocking variant where the runtime has one. */
  readonly nonblocking?: boolean;
}

/** A table of native functions keyed by the name callers use. */
export type FunctionTable = { readonly [name: string]: FunctionDef };

/** The JS type of an argument of FFI type `T`. */
export type JsArg<T extends FfiType> = T extends "pointer" | "function" ? Pointer
  : T extends "i64" | "u64" | "isize" | "usize" ? number | bigint
  : T extends "bool" ? boolean
  : T extends "void" ? never
  : number;

/** The JS type of a result of FFI type `T`. */
export type JsResult<T extends FfiType> = T extends "pointer" | "function" ? Pointer
  : T extends "i64" | "u64" | "isize" | "usize" ? number | bigint
  : T extends "bool" ? boolean
  : T extends "void" ? void
  : number;

/**
 * The JS type of an argument of FFI type `T` in {@linkcode NativeLibrary.handles}:
 * 64-bit integers are numbers only (safe integers), as the number ABI takes them.
 */
export type HandleArg<T extends FfiType> = T extends "pointer" | "function" ? Handle
  : T extends "i64" | "u64" | "isize" | "usize" ? number
  : JsArg<T>;

/** The JS type of a result of FFI type `T` in {@linkcode NativeLibrary.handles}. */
export type HandleResult<T extends FfiType> = T extends "pointer" | "function" ? Handle : JsResult<T>;

/** The function type of `D` in {@linkcode NativeLibrary.handles}. */
export type HandleFunction<D extends FfiSignature> = (...args: HandleArgs<D["args"]>) => HandleResult<D["result"]>;

/** The argument list of a parameter type list in {@linkcode NativeLibrary.handles}. */
export type HandleArgs<A extends readonly FfiType[]> = { -readonly [I in keyof A]: HandleArg<A[I]> };

/** The JS argument list of a parameter type list. */
export type JsArgs<A extends readonly FfiType[]> = { -readonly [I in keyof A]: JsArg<A[I]> };

/** The JS function type of a native function described by `D`. */
export type JsFunction<D extends FfiSignature> = (...args: JsArgs<D["args"]>) => JsResult<D["result"]>;

/** The JS function type of the non-blocking variant of `D`. */
export type JsAsyncFunction<D extends FfiSignature> = (...args: JsArgs<D["args"]>) => Promise<JsResult<D["result"]>>;

/** A loaded native library: one callable per table entry. */
export interface NativeLibrary<T extends FunctionTable> {
  /** Synchronous calls, one per table entry. Undefined entries throw {@linkcode SymbolNotDefinedError}. */
  readonly symbols: { readonly [K in keyof T]: JsFunction<T[K]> };
  /**
   * The same calls with pointers as {@linkcode Handle}s: arguments may be
   * handles, pointer results are handles (numbers, and on Deno a bigint
   * from a function without a number-ABI wrapper). 64-bit integer arguments
   * must be numbers: where a number-ABI wrapper exists this is the bound
   * wrapper itself, without `symbols`' check for bigints (identical to
   * `symbols` on Node). For hot paths that pass one call's result to the
   * next.
   */
  readonly handles: { readonly [K in keyof T]: HandleFunction<T[K]> };
  /**
   * Non-blocking calls for entries marked `nonblocking`: Deno `nonblocking`,
   * koffi `.async`, and on Bun (which has no non-blocking FFI,
   * oven-sh/bun#5490) a call made by a worker thread that opened the same
   * library (same process, same native pointers).
   */
  readonly async: { readonly [K in keyof T]?: JsAsyncFunction<T[K]> };
  /** Whether `name` is bound to a native symbol (false for missing ones). */
  has(name: keyof T & string): boolean;
  /** Unloads the library; every call afterwards is undefined behaviour. */
  close(): void;
}

/** A JS function made callable from C. */
export interface NativeCallback {
  /** The C function pointer. */
  readonly pointer: Pointer;
  /** Releases the trampoline; the pointer must not be called afterwards. */
  close(): void;
}

/** Options of {@linkcode FfiAdapter.callback}. */
export interface CallbackOptions {
  /**
   * The callback may be called from a native thread other than the JS one.
   * The call is then queued to the JS thread (and returns a zero result to C
   * on Deno and Bun without waiting), so it must not be relied on for a
   * result. Thread-safe callbacks keep the process alive until closed.
   */
  readonly threadSafe?: boolean;
}

/** Thrown when calling a function the library does not export. */
export class SymbolNotDefinedError extends Error {
  /** @ignore */
  static readonly [ERROR_CLASS] = true;
  /** `instanceof` that also holds for an error of another loaded copy of the package. */
  static override [Symbol.hasInstance](x: unknown): boolean {
    return isErrorInstance(this, x);
  }
  /** The missing symbol. */
  readonly symbol: string;
  /**
   * @param symbol the missing symbol
   * @param detail why it is missing
   */
  constructor(symbol: string, detail: string) {
    super(`${symbol}: ${detail}`);
    this.name = "SymbolNotDefinedError";
    this.symbol = symbol;
  }
}

/**
 * The per-runtime FFI operations; obtain one with `adapterSync()`. Left out
 * of the API reference: the raw FFI layer.
 *
 * @ignore
 */
export interface FfiAdapter {
  /** Which runtime this adapter drives. */
  readonly runtime: "deno" | "bun" | "node";
  /** Whether non-blocking calls exist on this runtime. */
  readonly hasNonblocking: boolean;
  /**
   * Whether the runtime lets this process start `command` as a child
   * process: false where a permission model refuses it or would prompt
   * (Deno without `--allow-run`); true where there is none (Bun, Node).
   */
  mayRun(command: string): boolean;
  /**
   * Of the permissions named (`"ffi"`, `"read"`, `"env"`, …), the ones the runtime has not
   * granted, as the flags that grant them (`--allow-read`): all of them at once, for an error
   * that names every missing flag rather than the first one hit. Empty where there is no
   * permission model (Bun, Node).
   */
  deniedFlags(names: readonly string[]): string[];
  /** Opens the library at `path` and binds the functions of `table`. */
  open<T extends FunctionTable>(path: string, table: T): NativeLibrary<T>;
  /**
   * An ArrayBuffer over `byteLength` bytes of native memory at `ptr`. It does
   * not own the memory: it must not be used after the memory is freed.
   */
  view(ptr: Pointer, byteLength: number): ArrayBuffer;
  /** The address of the bytes of a JS buffer (keep the buffer alive while C uses it). */
  addressOf(buffer: ArrayBufferView | ArrayBuffer): Pointer;
  /** Reads a NUL-terminated UTF-8 string at `ptr` (`null` for NULL). */
  readCString(ptr: Pointer): string | null;
  /**
   * The address of the exported symbol `name` of the library at `path` (a C
   * function to pass as a function pointer); 0 when it is not exported.
   */
  symbolAddress(path: string, name: string): Pointer;
  /** Reads a pointer-sized value at `ptr + offset`. */
  readPointer(ptr: Pointer, offset?: number): Pointer;
  /**
   * Calls the C function at `ptr` (a function pointer a library handed out,
   * e.g. through `wsp_ggml_backend_reg_get_proc_address`) with `args`:
   * pointers as numbers in and out, like the bound functions.
   */
  callPointer(ptr: Pointer, signature: FfiSignature, args: readonly unknown[]): unknown;
  /** Makes `fn` callable from C with the given signature. */
  callback(
    signature: FfiSignature,
    fn: (...args: never[]) => unknown,
    options?: CallbackOptions,
  ): NativeCallback;
}

/** An entry of the generated function table (`src/ffi/bindings.gen.ts`). */
export interface TableEntry extends FunctionDef {
  /** The library that exports the symbol. */
  readonly library: LibraryName;
  /** The header that declares the function. */
  readonly header: string;
  /** The C prototype as declared (before any shim rewrite). */
  readonly c: string;
}
