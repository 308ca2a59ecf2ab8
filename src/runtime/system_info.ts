/**
 * What this process runs: the package's version and provenance, the runtime,
 * the library found and its CPU variant, the CPU features that variant was
 * compiled with, and the backends registered with ggml.
 *
 * @module
 */
import process from "node:process";
import { detectLibc, library, type Libc, type LibraryLocation, platformPackage } from "./loader.ts";
import { GGML_COMMIT, VERSION, WHISPER_RN_VERSION } from "./version.ts";
import type { WspGgmlTable } from "../ffi/open.ts";

/** One backend registered with ggml's backend registry. */
export interface BackendInfo {
  /** The registry entry's name (`"CPU"`, `"Metal"`, …). */
  readonly name: string;
  /** Its devices' `name: description`. */
  readonly devices: readonly string[];
}

/** The result of {@linkcode systemInfo}. */
export interface SystemInfo {
  /** wsp-ggml's version. */
  readonly version: string;
  /** The whisper.rn release the native code comes from. */
  readonly whisperRn: string;
  /** The whisper.cpp/ggml commit of that release. */
  readonly ggmlCommit: string;
  /** ggml's own version string (`wsp_ggml_version()`). */
  readonly ggmlVersion: string;
  /** The runtime: `deno`, `bun` or `node`, and its version. */
  readonly runtime: { readonly name: "deno" | "bun" | "node"; readonly version: string };
  /** `process.platform`, `process.arch`, and on Linux the C library. */
  readonly platform: { readonly os: string; readonly arch: string; readonly libc?: Libc };
  /** The platform package this machine needs (whether or not it was the source). */
  readonly platformPackage: string;
  /** Where the library was found. */
  readonly library: LibraryLocation;
  /** The CPU variant loaded: its name and file. */
  readonly cpuVariant: { readonly name: string; readonly path: string };
  /**
   * The CPU features the loaded variant was compiled with (`wsp_ggml_cpu_has_*`,
   * the functions ggml's CPU backend builds its `get_features` list from), by
   * ggml's feature names (`AVX2`, `F16C`, `DOTPROD`, …); only those present.
   */
  readonly cpuFeatures: readonly string[];
  /** The backends registered with ggml and their devices. */
  readonly backends: readonly BackendInfo[];
}

// ggml's names for the features, as in ggml-cpu.cpp's feature list.
const FEATURES: readonly [keyof WspGgmlTable, string][] = [
  ["wsp_ggml_cpu_has_sse3", "SSE3"],
  ["wsp_ggml_cpu_has_ssse3", "SSSE3"],
  ["wsp_ggml_cpu_has_avx", "AVX"],
  ["wsp_ggml_cpu_has_avx_vnni", "AVX_VNNI"],
  ["wsp_ggml_cpu_has_avx2", "AVX2"],
  ["wsp_ggml_cpu_has_f16c", "F16C"],
  ["wsp_ggml_cpu_has_fma", "FMA"],
  ["wsp_ggml_cpu_has_bmi2", "BMI2"],
  ["wsp_ggml_cpu_has_avx512", "AVX512"],
  ["wsp_ggml_cpu_has_avx512_vbmi", "AVX512_VBMI"],
  ["wsp_ggml_cpu_has_avx512_vnni", "AVX512_VNNI"],
  ["wsp_ggml_cpu_has_avx512_bf16", "AVX512_BF16"],
  ["wsp_ggml_cpu_has_amx_int8", "AMX_INT8"],
  ["wsp_ggml_cpu_has_neon", "NEON"],
  ["wsp_ggml_cpu_has_arm_fma", "ARM_FMA"],
  ["wsp_ggml_cpu_has_fp16_va", "FP16_VA"],
  ["wsp_ggml_cpu_has_dotprod", "DOTPROD"],
  ["wsp_ggml_cpu_has_matmul_int8", "MATMUL_INT8"],
  ["wsp_ggml_cpu_has_sve", "SVE"],
  ["wsp_ggml_cpu_has_sme", "SME"],
  ["wsp_ggml_cpu_has_riscv_v", "RISCV_V"],
  ["wsp_ggml_cpu_has_vsx", "VSX"],
  ["wsp_ggml_cpu_has_vxe", "VXE"],
  ["wsp_ggml_cpu_has_wasm_simd", "WASM_SIMD"],
  ["wsp_ggml_cpu_has_llamafile", "LLAMAFILE"],
];

/**
 * Version, provenance and the loaded library's build (loads the library with
 * the default search when it is not loaded yet).
 *
 * ```ts
 * import { systemInfo } from "wsp-ggml";
 * const info = systemInfo();
 * console.log(info.version, info.ggmlCommit, info.cpuVariant.name, info.cpuFeatures.join(" "));
 * ```
 */
export function systemInfo(): SystemInfo {
  const lib = library();
  const s = lib.symbols as unknown as Record<string, (...a: unknown[]) => number>;
  const str = (p: number): string => lib.ffi.readCString(p) ?? "";
  const cpuFeatures = FEATURES.filter(([fn]) => lib.has(fn) && s[fn]() !== 0).map(([, name]) => name);
  const backends: BackendInfo[] = [];
  const nReg = Number(s.wsp_ggml_backend_reg_count());
  for (let i = 0; i < nReg; i++) {
    const reg = s.wsp_ggml_backend_reg_get(i);
    const devices: string[] = [];
    const nDev = Number(s.wsp_ggml_backend_reg_dev_count(reg));
    for (let j = 0; j < nDev; j++) {
      const dev = s.wsp_ggml_backend_reg_dev_get(reg, j);
      devices.push(`${str(s.wsp_ggml_backend_dev_name(dev))}: ${str(s.wsp_ggml_backend_dev_description(dev))}`);
    }
    backends.push({ name: str(s.wsp_ggml_backend_reg_name(reg)), devices });
  }
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  const runtimeVersion = lib.ffi.runtime === "deno" ? g.Deno!.version.deno : lib.ffi.runtime === "bun" ? g.Bun!.version : process.versions.node;
  const libc = detectLibc();
  return {
    version: VERSION,
    whisperRn: WHISPER_RN_VERSION,
    ggmlCommit: GGML_COMMIT,
    ggmlVersion: str(s.wsp_ggml_version()),
    runtime: { name: lib.ffi.runtime, version: runtimeVersion },
    platform: { os: process.platform, arch: process.arch, ...(libc ? { libc } : {}) },
    platformPackage: platformPackage(),
    library: lib.location,
    cpuVariant: { name: lib.cpuVariant, path: lib.cpuPath },
    cpuFeatures,
    backends,
  };
}
