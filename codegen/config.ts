/**
 * What the generator reads and the decisions it cannot take from the headers:
 * the skip list, the functions known to be declared but not defined, and the
 * functions that get a non-blocking variant.
 *
 * @module
 */
import type { LibraryName } from "../src/ffi/types.ts";

/** The public headers, in include order, and the library that defines what each declares. */
export const HEADERS: readonly { readonly file: string; readonly library: LibraryName }[] = [
  { file: "ggml.h", library: "base" },
  { file: "ggml-alloc.h", library: "base" },
  { file: "ggml-backend.h", library: "base" },
  { file: "ggml-cpu.h", library: "cpu" },
  { file: "ggml-opt.h", library: "base" },
  { file: "gguf.h", library: "base" },
  { file: "ggml-rpc.h", library: "base" },
  { file: "ggml-metal.h", library: "metal" },
];

/**
 * whisper.cpp's header and the job shim's (native/whisper/job.h), parsed in a translation unit of
 * their own (ggml's headers are included, not bound again) into src/ffi/whisper.gen.ts and
 * native/shim/whisper.gen.c. `dir` is relative to the repository root.
 */
export const WHISPER_HEADERS: readonly { readonly file: string; readonly library: LibraryName; readonly dir: string }[] = [
  { file: "whisper.h", library: "whisper", dir: "vendor/whisper" },
  { file: "job.h", library: "whisper", dir: "native/whisper" },
];

/** Functions of {@linkcode WHISPER_HEADERS} left out of the table on purpose (as {@linkcode SKIP}). */
export const WHISPER_SKIP: Readonly<Record<string, string>> = {};

/** The macros that mark an exported declaration. */
export const API_MACROS: readonly string[] = ["WSP_GGML_API", "WSP_GGML_BACKEND_API", "WHISPER_API"];

/** The targets of `zig build dist`, as libclang triples, and the zig libc header dirs of each. */
export const TARGETS: readonly { readonly triple: string; readonly libc: readonly string[] }[] = [
  { triple: "x86_64-linux-gnu", libc: ["x86-linux-gnu", "generic-glibc", "x86-linux-any", "any-linux-any"] },
  { triple: "aarch64-linux-gnu", libc: ["aarch64-linux-gnu", "generic-glibc", "aarch64-linux-any", "any-linux-any"] },
  { triple: "x86_64-apple-macos11", libc: ["any-macos-any"] },
  { triple: "aarch64-apple-macos11", libc: ["any-macos-any"] },
  { triple: "x86_64-w64-windows-gnu", libc: ["any-windows-any"] },
];

/**
 * Functions left out of the table on purpose. Every one needs a reason; a
 * function the generator cannot bind that is not listed here is an error, and
 * so is an entry that no header declares any more.
 */
export const SKIP: Readonly<Record<string, string>> = {
  wsp_ggml_abort: "variadic formatting helper (printf-style message, then abort())",
  wsp_ggml_format_name: "variadic formatting helper (printf-style name); use wsp_ggml_set_name",
  wsp_ggml_backend_rpc_start_server: "serves forever on the calling thread and cannot be stopped; native/rpc_guard.cpp's wsp_rpc_server_start serves on a thread of its own (RpcServer)",
};

/**
 * Functions the headers declare but no vendored source defines. The table
 * marks them `defined: false`: they never break loading and calling one
 * throws `SymbolNotDefinedError`. The generator checks this list against the
 * built libraries' exports when they exist (and tests/raw_symbols.test.ts
 * always does).
 */
export const NOT_DEFINED: Readonly<Record<string, string>> = {
  wsp_ggml_threadpool_get_n_threads: "declared in ggml-cpu.h, defined by no vendored source",
};

/** Functions that get a non-blocking variant (they may run for long). */
export const NONBLOCKING: ReadonlySet<string> = new Set([
  "wsp_ggml_graph_compute",
  "wsp_ggml_graph_compute_with_ctx",
  "wsp_ggml_backend_graph_compute",
  "wsp_ggml_backend_sched_graph_compute",
  "wsp_ggml_backend_load_all",
  "wsp_ggml_backend_load_all_from_path",
  "wsp_gguf_init_from_file",
  "wsp_gguf_write_to_file",
  "wsp_ggml_opt_fit",
  // whisper: reading a model file, and whole transcriptions.
  "whisper_init_from_file_with_params",
  "whisper_init_from_file_with_params_no_state",
  "whisper_full",
  "whisper_full_with_state",
  "whisper_full_parallel",
  "wsp_whisper_job_run",
]);

/** Prefix of the exported names of the pointer-based C wrappers. */
export const SHIM_PREFIX = "wsp_shim_";

/** Prefix of the exported names of the number-ABI wrappers (src/ffi/num_abi.ts). */
export const NUM_PREFIX = "wsp_num_";

/**
 * Functions whose 64-bit integers may not fit in a double's 53 bits: they get
 * no number-ABI wrapper (src/ffi/num_abi.ts) and keep the exact bigint path.
 * Every entry needs a reason; an entry that names no function is an error.
 */
export const WIDE_VALUES: Readonly<Record<string, string>> = {
  wsp_ggml_cycles: "a cycle counter: it passes 2^53 after weeks of uptime",
  wsp_ggml_backend_buft_get_max_size: "SIZE_MAX means no limit",
  wsp_ggml_backend_buffer_get_max_size: "SIZE_MAX means no limit",
  wsp_ggml_backend_get_max_size: "SIZE_MAX means no limit",
  wsp_gguf_get_val_u64: "a 64-bit value read from a file",
  wsp_gguf_get_val_i64: "a 64-bit value read from a file",
  wsp_gguf_set_val_u64: "a 64-bit value to write to a file",
  wsp_gguf_set_val_i64: "a 64-bit value to write to a file",
};
