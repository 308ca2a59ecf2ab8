/**
 * The binding generator: reads the wsp_ggml public headers through libclang
 * for every target of `zig build dist`, proves the results agree, and writes
 * src/ffi/bindings.gen.ts and the C shim.
 *
 *   deno task codegen                    write the generated files
 *   deno task codegen:check              fail if a committed file differs, is missing or untracked
 *   deno run -A codegen/main.ts --diff DIR   print the API diff from the headers in DIR
 *
 * (`bun codegen/main.ts …` and `node --import tsx codegen/main.ts …` do the same.)
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Clang } from "./clang/mod.ts";
import { ROOT, zigLibDir } from "./clang/find.ts";
import { NOT_DEFINED, TARGETS, WHISPER_HEADERS, WHISPER_SKIP } from "./config.ts";
import { apiDiff, formatDiff } from "./diff.ts";
import { elfExports } from "./elf.ts";
import { emitNumShims, emitShims, emitWhisperShims } from "./emit_c.ts";
import { emitBindings, emitWhisperBindings, GENERATED_WHISPER } from "./emit_ts.ts";
import { emitOps, spliceContext } from "./emit_ops.ts";
import { emitCpuTypes, readCpuTypes } from "./emit_cpu_types.ts";
import type { ApiIR } from "./ir.ts";
import type { LibraryName } from "../src/ffi/types.ts";
import { parseApi } from "./parse.ts";
import { rows } from "./table.ts";

/** The generated files, relative to the repository root. */
export const OUTPUTS = [
  "src/ffi/bindings.gen.ts",
  "native/shim/base.gen.c",
  "native/shim/cpu.gen.c",
  "native/shim/num_base.gen.c",
  "native/shim/num_cpu.gen.c",
  "src/core/ops.gen.ts",
  "src/backend/cpu_types.gen.ts",
  "src/core/context.ts",
  "src/ffi/whisper.gen.ts",
  "native/shim/whisper.gen.c",
] as const;

/** Parses the headers in `headersDir` for every target. */
export function parseAll(clang: Clang, headersDir: string): ApiIR[] {
  const lib = zigLibDir();
  return TARGETS.map((t) =>
    parseApi(clang, {
      headersDir,
      triple: t.triple,
      systemIncludes: [join(lib, "include"), ...t.libc.map((d) => join(lib, "libc", "include", d))],
    })
  );
}

/**
 * Parses whisper.h and native/whisper/job.h for every target (ggml's headers from `ggmlDir`
 * are included, not bound).
 */
export function parseWhisper(clang: Clang, ggmlDir = join(ROOT, "vendor", "ggml")): ApiIR[] {
  const lib = zigLibDir();
  const set = {
    headers: WHISPER_HEADERS.map((h) => ({ ...h, dir: join(ROOT, h.dir) })),
    skip: WHISPER_SKIP,
    macroPrefix: "WHISPER_",
    defines: ["WHISPER_SHARED", "WHISPER_BUILD"],
    umbrella: "wsp_whisper_codegen_umbrella.c",
  };
  return TARGETS.map((t) =>
    parseApi(clang, {
      headersDir: ggmlDir,
      triple: t.triple,
      systemIncludes: [join(lib, "include"), ...t.libc.map((d) => join(lib, "libc", "include", d))],
      set,
    })
  );
}

/**
 * Checks that every target yields the same IR. Enum underlying types may
 * differ (SysV: `unsigned int` for an enum without negative members, Windows:
 * `int`; same size and passing): they are merged into one description.
 */
export function mergeTargets(irs: readonly ApiIR[]): { ir: ApiIR; enumUnderlying: Map<string, string> } {
  const [first] = irs;
  const strip = (ir: ApiIR) => JSON.stringify({ ...ir, target: "", enums: ir.enums.map((e) => ({ ...e, underlying: "" })) });
  const ref = strip(first);
  for (const ir of irs.slice(1)) {
    if (strip(ir) !== ref) {
      const a = JSON.parse(ref), b = JSON.parse(strip(ir));
      throw new Error(`the headers differ between ${first.target} and ${ir.target}: ${firstDifference(a, b)}`);
    }
  }
  const enumUnderlying = new Map<string, string>();
  for (const e of first.enums) {
    const by = new Map<string, string[]>();
    for (const ir of irs) {
      const u = ir.enums.find((x) => x.name === e.name)!.underlying;
      by.set(u, [...(by.get(u) ?? []), ir.target]);
    }
    enumUnderlying.set(e.name, by.size === 1 ? e.underlying : [...by].map(([u, ts]) => `\`${u}\` on ${ts.join(", ")}`).join("; "));
  }
  return { ir: first, enumUnderlying };
}

function firstDifference(a: unknown, b: unknown, path = "$"): string {
  if (JSON.stringify(a) === JSON.stringify(b)) return "";
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  }
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const k of keys) {
    const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    if (d) return d;
  }
  return path;
}

/** Generates every output in memory (the whisper files from `whisperIrs`, `parseWhisper`'s). */
export function generate(irs: readonly ApiIR[], whisperIrs: readonly ApiIR[], cpuDir = join(ROOT, "vendor", "ggml", "ggml-cpu")): Map<string, string> {
  const { ir, enumUnderlying } = mergeTargets(irs);
  const table = rows(ir.functions);
  const shims = emitShims(ir, table);
  const num = emitNumShims(table);
  return new Map<string, string>([
    ["src/ffi/bindings.gen.ts", emitBindings(ir, table, enumUnderlying, irs.map((i) => i.target))],
    ["native/shim/base.gen.c", shims.base],
    ["native/shim/cpu.gen.c", shims.cpu],
    ["native/shim/num_base.gen.c", num.base],
    ["native/shim/num_cpu.gen.c", num.cpu],
    ["src/core/ops.gen.ts", emitOps(ir)],
    ["src/backend/cpu_types.gen.ts", emitCpuTypes(readCpuTypes(cpuDir))],
    // Handwritten but for the ops' declarations, which are spliced in (emit_ops.ts says why).
    ["src/core/context.ts", spliceContext(readFileSync(join(ROOT, "src", "core", "context.ts"), "utf8"), ir)],
    ...whisperOutputs(whisperIrs),
  ]);
}

function whisperOutputs(irs: readonly ApiIR[]): [string, string][] {
  const { ir, enumUnderlying } = mergeTargets(irs);
  const table = rows(ir.functions, {});
  return [
    ["src/ffi/whisper.gen.ts", emitWhisperBindings(ir, table, enumUnderlying, irs.map((i) => i.target))],
    ["native/shim/whisper.gen.c", emitWhisperShims(ir, table, GENERATED_WHISPER)],
  ];
}

/** The coverage line. */
export function coverage(ir: ApiIR): string {
  return `${ir.functions.length} functions, ${ir.records.length} structs, ${ir.enums.length} enums, ${ir.skipped.length} skipped`;
}

/**
 * Checks the table against the built libraries in zig-out/lib when they
 * exist (ELF only); returns a one-line report, throws on a mismatch.
 */
export function checkExports(ir: ApiIR, strict = true, whisperIr?: ApiIR): string {
  const dir = join(ROOT, "zig-out", "lib");
  const base = join(dir, "libwsp-ggml.so");
  if (!existsSync(base)) return "exports: not checked (no zig-out/lib/libwsp-ggml.so)";
  const cpuLib = existsSync(dir) ? readdirSync(dir).filter((f) => /^libggml-cpu-.*\.so$/.test(f)).sort()[0] : undefined;
  // The whisper table is checked apart (below): its functions are not in `ir`.
  const exported: { [L in LibraryName]?: Set<string> } = { base: elfExports(base), cpu: cpuLib ? elfExports(join(dir, cpuLib)) : undefined };
  const problems: string[] = [];
  for (const fn of ir.functions) {
    if (fn.library === "metal") continue;
    const lib = exported[fn.library];
    if (!lib) continue;
    const has = lib.has(fn.name);
    if (fn.name in NOT_DEFINED && has) problems.push(`${fn.name} is exported: remove it from NOT_DEFINED`);
    if (!(fn.name in NOT_DEFINED) && !has) problems.push(`${fn.name} is declared but not exported by the ${fn.library} library: add it to NOT_DEFINED with a reason`);
  }
  // The wrappers are generated here: a build from before this run lacks new ones, which only --check refuses.
  const unbuilt = rows(ir.functions).filter((r) => r.num && r.library !== "metal" && exported[r.library] && !exported[r.library]!.has(r.num));
  if (strict) for (const r of unbuilt) problems.push(`${r.num} is not exported by the ${r.library} library: rebuild (zig build) after codegen`);
  const whisperLib = join(dir, "libwsp-whisper.so");
  if (whisperIr && existsSync(whisperLib)) {
    const ex = elfExports(whisperLib);
    for (const fn of whisperIr.functions) if (!ex.has(fn.name)) problems.push(`${fn.name} is declared but not exported by libwsp-whisper.so`);
    const missing = rows(whisperIr.functions, {}).filter((r) => (r.num && !ex.has(r.num)) || (r.symbol && !ex.has(r.symbol)));
    if (strict) for (const r of missing) problems.push(`${r.num ?? r.symbol} is not exported by libwsp-whisper.so: rebuild (zig build) after codegen`);
  }
  if (problems.length) throw new Error(`codegen/config.ts is out of date:\n  ${problems.join("\n  ")}`);
  if (unbuilt.length) return `exports: ${unbuilt.length} number-ABI wrappers are not in the build yet (zig build)`;
  return `exports: checked against libwsp-ggml.so${cpuLib ? ` and ${cpuLib}` : ""}${whisperIr && existsSync(whisperLib) ? " and libwsp-whisper.so" : ""}`;
}

function untracked(paths: readonly string[]): string[] {
  try {
    const tracked = execFileSync("git", ["ls-files", "--", ...paths], { cwd: ROOT, encoding: "utf8" }).split("\n");
    return paths.filter((p) => !tracked.includes(p));
  } catch {
    return [];
  }
}

async function main(args: string[]): Promise<number> {
  const t0 = performance.now();
  const headersAt = args.indexOf("--headers");
  const headersDir = headersAt >= 0 ? args[headersAt + 1] : join(ROOT, "vendor", "ggml");
  if (!existsSync(join(headersDir, "ggml.h"))) {
    console.error(`codegen: no ggml.h in ${headersDir}; run \`node scripts/vendor.mjs\` first`);
    return 1;
  }
  const clang = await Clang.open();
  const irs = parseAll(clang, headersDir);
  const diffAt = args.indexOf("--diff");
  if (diffAt >= 0) {
    const other = args[diffAt + 1];
    if (!other) throw new Error("--diff needs a headers folder");
    const [theirs] = parseAll(clang, other);
    console.log(formatDiff(apiDiff(irs[0], theirs), headersDir, other));
    return 0;
  }
  const whisperIrs = parseWhisper(clang, headersDir);
  const files = generate(irs, whisperIrs);
  console.log(`codegen: ${coverage(irs[0])}`);
  console.log(`codegen: whisper: ${coverage(whisperIrs[0])}`);
  console.log(`codegen: ${irs.length} targets agree (${irs.map((i) => i.target).join(", ")})`);
  // The built libraries come from vendor/ggml: other headers are not checked against them.
  console.log(`codegen: ${headersAt >= 0 ? "exports: not checked (--headers)" : checkExports(irs[0], args.includes("--check"), whisperIrs[0])}`);
  if (args.includes("--check")) {
    const stale: string[] = [];
    for (const [path, text] of files) {
      const full = join(ROOT, path);
      if (!existsSync(full)) stale.push(`${path} (missing)`);
      else if (readFileSync(full, "utf8") !== text) stale.push(`${path} (differs)`);
    }
    for (const p of untracked([...files.keys()])) if (!stale.some((s) => s.startsWith(p))) stale.push(`${p} (not committed)`);
    if (stale.length) {
      console.error(`codegen --check: out of date, run \`deno task codegen\` and commit:\n  ${stale.join("\n  ")}`);
      return 1;
    }
    console.log(`codegen --check: ${files.size} files up to date (${Math.round(performance.now() - t0)} ms)`);
    return 0;
  }
  for (const [path, text] of files) {
    const full = join(ROOT, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
  console.log(`codegen: wrote ${[...files.keys()].join(", ")} (${Math.round(performance.now() - t0)} ms)`);
  return 0;
}

if (import.meta.main ?? (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, "/")))) {
  process.exitCode = await main(process.argv.slice(2));
}
