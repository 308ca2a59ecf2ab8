/**
 * The errors of the API. ggml answers a wrong call with `WSP_GGML_ASSERT` →
 * `abort()`, which ends the whole process; every precondition that a call
 * from TypeScript can reach is checked first and thrown as one of these
 * (docs/asserts.md maps each guarded C assert to its check and its test).
 *
 * Every error is a {@linkcode GgmlError}; `instanceof` or `code` tell them
 * apart.
 *
 * @module
 */
import { ERROR_CLASS, isErrorInstance } from "./error_class.ts";

/** What kind of precondition failed. */
export type GgmlErrorCode =
  | "SHAPE"
  | "TYPE"
  | "BOUNDS"
  | "ARGUMENT"
  | "USE_AFTER_FREE"
  | "OUT_OF_MEMORY"
  | "GRAPH_FULL"
  | "NOT_ALLOCATED"
  | "UNSUPPORTED"
  | "COMPUTE"
  | "LIBRARY_NOT_FOUND"
  | "CPU_VARIANT"
  | "PERMISSION"
  | "GGUF"
  | "WORKER"
  | "RPC"
  | "WHISPER"
  | "AUDIO"
  | "MODEL";

/** The base class of every error the API throws on purpose. */
export class GgmlError extends Error {
  /** @ignore */
  static readonly [ERROR_CLASS] = true;
  /** `instanceof` that also holds for an error of another loaded copy of the package (a CommonJS copy beside the ES modules). */
  static override [Symbol.hasInstance](x: unknown): boolean {
    return isErrorInstance(this, x);
  }
  /** The kind of error, stable across versions. */
  readonly code: GgmlErrorCode;
  /**
   * Made by the library when it throws.
   *
   * @param code the kind of error
   * @param message what was wrong, naming the call
   */
  constructor(code: GgmlErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Tensor shapes that the operation cannot combine (`can_mul_mat`, `can_repeat`, same shape, contiguity, …). */
export class ShapeError extends GgmlError {
  /** Made by the library when it throws; `message` says what was wrong. */
  constructor(message: string) {
    super("SHAPE", message);
  }
}

/** A tensor type (or typed array) that the operation does not accept. */
export class GgmlTypeError extends GgmlError {
  /** Made by the library when it throws; `message` says what was wrong. */
  constructor(message: string) {
    super("TYPE", message);
  }
}

/** An index, offset or size outside its valid range. */
export class BoundsError extends GgmlError {
  /** Made by the library when it throws; `message` says what was wrong. */
  constructor(message: string) {
    super("BOUNDS", message);
  }
}

/** A value of the wrong kind: not an integer, not a member of its enum, not a tensor, … */
export class ArgumentError extends GgmlError {
  /** Made by the library when it throws; `message` says what was wrong. */
  constructor(message: string) {
    super("ARGUMENT", message);
  }
}

/**
 * An object in use by an asynchronous compute (a graph being computed, its
 * contexts, a computing backend or scheduler) was used, changed or freed
 * before the compute settled. An {@linkcode ArgumentError} (code `ARGUMENT`).
 */
export class BusyError extends ArgumentError {
  /** Made by the library when it throws; `message` says what was in use. */
  constructor(message: string) {
    super(message);
  }
}

/** A context, or a tensor or graph of one, used after the context was freed. */
export class UseAfterFreeError extends GgmlError {
  /** Made by the library when it throws; `message` says what was used. */
  constructor(message: string) {
    super("USE_AFTER_FREE", message);
  }
}

/** The context's memory pool cannot hold the new object. */
export class ContextOutOfMemoryError extends GgmlError {
  /** Bytes the new object needs, its header included. */
  readonly needed: number;
  /** Bytes still free in the pool. */
  readonly available: number;
  /**
   * Made by the library when it throws.
   *
   * @param what the object being created
   * @param needed bytes it needs
   * @param available bytes still free
   */
  constructor(what: string, needed: number, available: number) {
    super("OUT_OF_MEMORY", `${what}: the context's memory pool is exhausted (needs ${needed} bytes, ${available} free); create the context with a larger memSize`);
    this.needed = needed;
    this.available = available;
  }
}

/** The graph has no room for the nodes or leafs that would be added. */
export class GraphFullError extends GgmlError {
  /** Made by the library when it throws; `message` says what did not fit. */
  constructor(message: string) {
    super("GRAPH_FULL", message);
  }
}

/** The tensor has no data (it was created in a `noAlloc` context). */
export class NotAllocatedError extends GgmlError {
  /** Made by the library when it throws; `message` says which tensor. */
  constructor(message: string) {
    super("NOT_ALLOCATED", message);
  }
}

/** The CPU backend does not implement the operation for these types. */
export class UnsupportedOpError extends GgmlError {
  /** Made by the library when it throws; `message` says which node. */
  constructor(message: string) {
    super("UNSUPPORTED", message);
  }
}

/** The native computation reported a failure status. */
export class ComputeError extends GgmlError {
  /** The `Status` value returned by C. */
  readonly status: number;
  /**
   * Made by the library when it throws.
   *
   * @param message what failed
   * @param status the status returned
   */
  constructor(message: string, status: number) {
    super("COMPUTE", message);
    this.status = status;
  }
}

/**
 * ggml's RPC backend lost its server or got an answer it cannot use: the
 * server died, refused the connection, timed out, spoke another protocol
 * version, or sent malformed data. The connection is shut down (every later
 * command on it fails at once); the process and the other backends carry on.
 */
export class RpcError extends GgmlError {
  /** The server's `host:port`, when known. */
  readonly endpoint: string | undefined;
  /**
   * Made by the library when it throws.
   *
   * @param message what failed, with ggml-rpc's reason
   * @param endpoint the server's `host:port`
   * @param options the error that the RPC failure surfaced as, if any (`cause`)
   */
  constructor(message: string, endpoint?: string, options?: { cause?: unknown }) {
    super("RPC", message);
    this.endpoint = endpoint;
    if (options && "cause" in options) (this as { cause?: unknown }).cause = options.cause;
  }
}

/**
 * A non-blocking native call could not be made: the thread that makes it on
 * Bun failed to start or died. Every call pending on it rejects with this;
 * the next call starts a new thread.
 */
export class WorkerError extends GgmlError {
  /** Made by the library when it throws; `message` says what happened to the thread. */
  constructor(message: string) {
    super("WORKER", message);
  }
}

/** The native library was found nowhere; the message lists every place looked. */
export class LibraryNotFoundError extends GgmlError {
  /** Every place looked, in order, with why each did not do. */
  readonly searched: readonly string[];
  /**
   * Made by the library when it throws.
   *
   * @param message the summary
   * @param searched the places looked and their outcome
   */
  constructor(message: string, searched: readonly string[]) {
    super("LIBRARY_NOT_FOUND", message);
    this.searched = searched;
  }
}

/**
 * A CPU variant was named (`loadLibrary({ cpuVariant })` or `WSP_GGML_CPU_VARIANT`) that
 * the library's place does not hold, or that this CPU cannot run: its
 * `wsp_ggml_backend_score()` is 0, so its kernels would use instructions the CPU lacks
 * (SIGILL). Nothing was loaded; name one of {@linkcode CpuVariantError.runnable}.
 */
export class CpuVariantError extends GgmlError {
  /** The variant that was asked for. */
  readonly variant: string;
  /** Every variant the place holds. */
  readonly available: readonly string[];
  /** The variants of {@linkcode CpuVariantError.available} this CPU can run, best first. */
  readonly runnable: readonly string[];
  /**
   * Made by the library when it throws.
   *
   * @param message what was asked for and why it cannot be loaded
   * @param variant the name asked for
   * @param available the variants the place holds
   * @param runnable the ones this CPU can run, best first
   */
  constructor(message: string, variant: string, available: readonly string[], runnable: readonly string[]) {
    super("CPU_VARIANT", message);
    this.variant = variant;
    this.available = available;
    this.runnable = runnable;
  }
}

/**
 * The runtime refused an operation the library needs: on Deno, loading the
 * native library without `--allow-ffi` (or reading it without `--allow-read`).
 * The message names the flag to add.
 */
export class PermissionError extends GgmlError {
  /** The command-line flag that grants the permission, e.g. `--allow-ffi`. */
  readonly flag: string;
  /**
   * Made by the library when it throws.
   *
   * @param message what was refused and how to allow it
   * @param flag the flag that grants the permission
   */
  constructor(message: string, flag: string) {
    super("PERMISSION", message);
    this.flag = flag;
  }
}

/** Why a GGUF file was refused or a GGUF operation failed ({@linkcode GgufError.reason}). */
export type GgufErrorReason =
  /** The file could not be opened, read or written. */
  | "IO"
  /** The file ends before a structure it declares (header, KV, tensor info or data). */
  | "TRUNCATED"
  /** Not a GGUF file (magic), or a version this library does not read. */
  | "FORMAT"
  /** A count, length, type, dimension, offset or alignment that is invalid or out of the reader's limits. */
  | "INVALID"
  /** A key or tensor name that appears twice. */
  | "DUPLICATE"
  /** A key or tensor that does not exist. */
  | "NOT_FOUND"
  /** A KV read or written with another type than it has. */
  | "TYPE"
  /** The file changed between the TypeScript check and ggml's read. */
  | "CHANGED";

/** A GGUF file that cannot be read, or a misuse of the GGUF reader / writer. */
export class GgufError extends GgmlError {
  /** What went wrong. */
  readonly reason: GgufErrorReason;
  /** Byte offset in the file where the problem was found, when it is about a file. */
  readonly offset: number | undefined;
  /**
   * Made by the library when it throws.
   *
   * @param reason what went wrong
   * @param message the details
   * @param offset where in the file, if known
   */
  constructor(reason: GgufErrorReason, message: string, offset?: number) {
    super("GGUF", offset === undefined ? message : `${message} (at byte ${offset})`);
    this.reason = reason;
    this.offset = offset;
  }
}

/** Why a Whisper model or transcription failed ({@linkcode WhisperError.reason}). */
export type WhisperErrorReason =
  /** The model file could not be opened or read. */
  | "IO"
  /** The model file ends before a structure it declares. */
  | "TRUNCATED"
  /** Not a whisper.cpp model file (magic), or one this library does not read. */
  | "FORMAT"
  /** A hyperparameter, count, name, shape or type in the model file that whisper.cpp could not use. */
  | "INVALID"
  /** A file or variable the conversion needs is not there. */
  | "NOT_FOUND"
  /** whisper.cpp refused the model or failed the transcription (its log says more). */
  | "FAILED";

/** A Whisper model file that cannot be used or converted, or a transcription whisper.cpp failed. */
export class WhisperError extends GgmlError {
  /** What went wrong. */
  readonly reason: WhisperErrorReason;
  /** Byte offset in the model file where the problem was found, when it is about the file. */
  readonly offset: number | undefined;
  /**
   * Made by the library when it throws.
   *
   * @param reason what went wrong
   * @param message the details
   * @param offset where in the file, if known
   */
  constructor(reason: WhisperErrorReason, message: string, offset?: number) {
    super("WHISPER", offset === undefined ? message : `${message} (at byte ${offset})`);
    this.reason = reason;
    this.offset = offset;
  }
}

/** Audio this library cannot read: not a WAV file, a codec it does not decode, a header that contradicts itself, samples that are not finite. */
export class AudioError extends GgmlError {
  /** Made by the library when it throws; `message` says what was wrong and what is read. */
  constructor(message: string) {
    super("AUDIO", message);
  }
}

/** Why a language model's GGUF file cannot be run ({@linkcode ModelError.reason}). */
export type ModelErrorReason =
  /** `general.architecture` names an architecture the runner does not implement. */
  | "ARCHITECTURE"
  /** A hyper-parameter key is missing, or has a value the runner cannot use. */
  | "KEY"
  /** A tensor the architecture needs is not in the file. */
  | "TENSOR"
  /** A tensor's shape is not what the hyper-parameters say. */
  | "SHAPE"
  /** A tensor's element type is not one the runner computes with there. */
  | "TYPE"
  /** The vocabulary does not match the model (its size, or a token id the file names). */
  | "VOCAB";

/** A language model's GGUF file that the runner cannot use: it names the key or tensor and what was expected. */
export class ModelError extends GgmlError {
  /** What was wrong. */
  readonly reason: ModelErrorReason;
  /**
   * Made by the library when it throws.
   *
   * @param reason what was wrong
   * @param message the details, naming the file and the key or tensor
   */
  constructor(reason: ModelErrorReason, message: string) {
    super("MODEL", message);
    this.reason = reason;
  }
}
