// Runs a TypeScript file in a child process of the current runtime (for tests
// that need a fresh process: the library loads once per process).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const root: string = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The arguments that run the TypeScript `file` with `argv` on this runtime (its executable is `process.execPath`). */
export function runtimeArgs(file: string, argv: readonly string[]): string[] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  return [...(g.Bun !== undefined ? [file] : g.Deno !== undefined ? ["run", "-A", file] : ["--import", "tsx", file]), ...argv];
}

/** Runs `file` (TypeScript) with `argv` on the current runtime; returns its stdout; throws on a non-zero exit. */
export function runTs(file: string, env: Record<string, string> = {}, argv: readonly string[] = []): string {
  const args = runtimeArgs(file, argv);
  return execFileSync(process.execPath, args, { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

/** What {@linkcode runTsResult} saw: the child's output and how it ended. */
export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
  /** The exit code, null when a signal ended it. */
  readonly status: number | null;
  /** The signal that ended it, if any. */
  readonly signal: string | null;
}

/** Runs `file` like {@linkcode runTs}, but returns stderr and the exit status instead of throwing. */
export function runTsResult(file: string, env: Record<string, string> = {}, argv: readonly string[] = []): RunResult {
  const args = runtimeArgs(file, argv);
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
  return { stdout: r.stdout ?? "", stderr: r.stderr ?? "", status: r.status, signal: r.signal };
}

/**
 * Builds the zig `steps` when one of `outputs` is missing or older than one of `sources`
 * (repository-relative; build.zig is always one). Returns why they are unusable, or "" when
 * they are there and fresh.
 */
export function zigBuilt(steps: readonly string[], outputs: readonly string[], sources: readonly string[]): string {
  const newest = Math.max(...["build.zig", ...sources].map((f) => join(root, f)).filter(existsSync).map((f) => statSync(f).mtimeMs));
  if (outputs.every((f) => existsSync(f) && statSync(f).mtimeMs >= newest)) return "";
  const exe = process.platform === "win32" ? ".exe" : "";
  const zig = [join(root, ".tools", "ziglang-0.15.2", "ziglang", `zig${exe}`), "zig"].find((z) => spawnSync(z, ["version"], { encoding: "utf8" }).stdout?.trim() === "0.15.2");
  if (!zig) return `${steps.join(" and ")} not built and the pinned zig is not installed (node scripts/zig.mjs build ${steps.join(" ")})`;
  const t0 = performance.now();
  const r = spawnSync(zig, ["build", ...steps], { cwd: root, encoding: "utf8", timeout: 600_000 });
  if (r.status !== 0) return `zig build ${steps.join(" ")} failed (${r.status ?? r.signal}): ${(r.stderr ?? "").slice(-500)}`;
  console.log(`# built ${steps.join(", ")} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return "";
}
