/**
 * libwsp-bench-work (bench/work.c, built by `zig build bench` into
 * zig-out/bench/): the C reference's timed work, loaded into the TS process
 * so that the C figure and the binding's figure come from one process
 * (sampled in turn), not from two processes whose speed differs by chance.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ffi } from "../src/runtime/loader.ts";
import type { FunctionTable, NativeLibrary } from "../src/ffi/types.ts";

const TABLE = {
  wsp_bench_graph_mem: { args: ["i32"], result: "usize" },
  wsp_bench_graphs: { args: ["i32", "i32", "i32", "i64", "pointer", "pointer"], result: "f64" },
  wsp_bench_compute: { args: ["pointer", "pointer"], result: "f64" },
  wsp_bench_train_new: { args: ["pointer", "i32", "i32", "i32"], result: "pointer" },
  wsp_bench_train_steps: { args: ["pointer"], result: "i32" },
  wsp_bench_train_epoch: { args: ["pointer", "pointer"], result: "f64" },
  wsp_bench_train_free: { args: ["pointer"], result: "void" },
  wsp_bench_alloc: { args: ["usize"], result: "pointer" },
  wsp_bench_free: { args: ["pointer"], result: "void" },
} as const satisfies FunctionTable;

/** The functions of bench/work.h. */
export type BenchWork = NativeLibrary<typeof TABLE>["symbols"];

let work: BenchWork | undefined;

/** Opens libwsp-bench-work (once); throws, naming the build command, when it is not built. */
export function benchWork(): BenchWork {
  if (work) return work;
  const file = process.platform === "win32" ? "wsp-bench-work.dll" : process.platform === "darwin" ? "libwsp-bench-work.dylib" : "libwsp-bench-work.so";
  const path = join(dirname(fileURLToPath(import.meta.url)), "..", "zig-out", "bench", file);
  if (!existsSync(path)) throw new Error(`${path} is missing: build it with \`node scripts/zig.mjs build bench\``);
  work = ffi.open(path, TABLE).symbols;
  return work;
}

/** The functions of the Node-API probe (bench/napi_probe.c): the graph loop's five, and one that does nothing. */
export interface NapiProbe {
  wsp_ggml_new_tensor_1d(ctx: number, type: number, ne0: number): number;
  wsp_ggml_new_tensor_2d(ctx: number, type: number, ne0: number, ne1: number): number;
  wsp_ggml_mul_mat(ctx: number, a: number, b: number): number;
  wsp_ggml_add(ctx: number, a: number, b: number): number;
  wsp_ggml_relu(ctx: number, a: number): number;
  empty(): void;
}

/**
 * Loads the Node-API probe on Node.js, where `zig build bench` built it
 * (Linux, macOS); `null` on Deno and Bun, or when it is not built.
 */
export function napiProbe(): NapiProbe | null {
  if (ffi.runtime !== "node") return null;
  const file = process.platform === "darwin" ? "libwsp-napi-probe.dylib" : "libwsp-napi-probe.so";
  const path = join(dirname(fileURLToPath(import.meta.url)), "..", "zig-out", "bench", file);
  if (!existsSync(path)) return null;
  const module = { exports: {} as NapiProbe };
  (process as unknown as { dlopen(m: { exports: unknown }, path: string): void }).dlopen(module, path);
  return module.exports;
}
