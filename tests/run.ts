// Runs a TypeScript file in a child process of the current runtime (for tests
// that need a fresh process: the library loads once per process).
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const root: string = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Runs `file` (TypeScript) with `argv` on the current runtime; returns its stdout; throws on a non-zero exit. */
export function runTs(file: string, env: Record<string, string> = {}, argv: readonly string[] = []): string {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  const args = [...(g.Bun !== undefined ? [file] : g.Deno !== undefined ? ["run", "-A", file] : ["--import", "tsx", file]), ...argv];
  return execFileSync(process.execPath, args, { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}
