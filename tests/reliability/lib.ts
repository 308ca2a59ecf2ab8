// Shared helpers of the reliability tests: a seeded PRNG, child processes with a time limit,
// resident memory and forced garbage collection on each runtime.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import process from "node:process";
import v8 from "node:v8";
import vm from "node:vm";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The repository root. */
export const root: string = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Which runtime runs this file. */
export const runtimeName: "deno" | "bun" | "node" = (() => {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  return g.Bun !== undefined ? "bun" : g.Deno !== undefined ? "deno" : "node";
})();

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence on every runtime. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** tsx's loader by absolute URL: `--import tsx` resolves from the working directory, which a child may change. */
const TSX = pathToFileURL(join(root, "node_modules", "tsx", "dist", "loader.mjs")).href;

/** Runs `args` on this runtime's executable (TypeScript files need `run -A` on Deno, tsx on Node). */
export function tsArgs(file: string, argv: readonly string[] = [], v8Flags: readonly string[] = []): string[] {
  const v8 = ["--expose-gc", ...v8Flags];
  return [...(runtimeName === "bun" ? [file] : runtimeName === "deno" ? ["run", "-A", `--v8-flags=${v8.join(",")}`, file] : ["--import", TSX, ...v8, file]), ...argv];
}

/** The outcome of a child process. */
export interface ChildResult {
  readonly status: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs a TypeScript file in a child process of this runtime, killed after `timeoutMs` (`v8Flags`: for Node and Deno). */
export function runChild(
  file: string,
  options: { env?: Record<string, string>; argv?: readonly string[]; timeoutMs?: number; cwd?: string; v8Flags?: readonly string[] } = {},
): ChildResult {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, tsArgs(file, options.argv, options.v8Flags), {
    cwd: options.cwd ?? root,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: options.timeoutMs ?? 60_000,
    killSignal: "SIGKILL",
    maxBuffer: 64 << 20,
  });
  const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT";
  return { status: r.status, signal: r.signal, timedOut, stdout: r.stdout ?? "", stderr: r.stderr ?? "", ms: Date.now() - t0 };
}

/** One line of the child's stdout that starts with `tag` (JSON after it). */
export function report<T>(out: string, tag: string): T | undefined {
  const line = out.split("\n").reverse().find((l) => l.startsWith(`${tag} `));
  return line === undefined ? undefined : JSON.parse(line.slice(tag.length + 1)) as T;
}

/**
 * Runs a fuzz child (`file`) and returns its `fuzz-report` line's JSON; when the child died before
 * printing one, fails with the seed, the last `fuzz-progress` line, how to replay (`replay`) and
 * the child's output. The shared part of the fuzz tests (api_fuzz, gguf_fuzz).
 */
export function runFuzzChild<T>(file: string, options: { env: Record<string, string>; timeoutMs: number; seed: number; replay: string }): { rep: T; child: ChildResult } {
  const child = runChild(file, { env: options.env, timeoutMs: options.timeoutMs });
  const rep = report<T>(child.stdout, "fuzz-report");
  if (!rep) {
    const last = child.stdout.split("\n").filter((l) => l.startsWith("fuzz-progress")).pop();
    throw new Error(`the fuzz child died (seed ${options.seed}; last progress: ${last ?? "none"}; replay with ${options.replay})\n${describeChild(child)}`);
  }
  return { rep, child };
}

/** A one-line summary of a child for assertion messages. */
export function describeChild(r: ChildResult): string {
  const tail = (s: string) => s.split("\n").slice(-25).join("\n");
  return `status ${r.status}, signal ${r.signal}, timed out ${r.timedOut}, ${r.ms} ms\n--- stdout (tail)\n${tail(r.stdout)}\n--- stderr (tail)\n${tail(r.stderr)}`;
}

/** Resident set size in bytes (Deno.memoryUsage / process.memoryUsage). */
export function rss(): number {
  const d = (globalThis as { Deno?: { memoryUsage(): { rss: number } } }).Deno;
  return d ? d.memoryUsage().rss : process.memoryUsage().rss;
}

/** A full, synchronous garbage collection (Bun.gc(true); V8's gc(), exposed at run time when no flag did). */
export function forcedGc(): () => void {
  const g = globalThis as { gc?: () => void; Bun?: { gc(force: boolean): void } };
  if (g.Bun) return () => g.Bun!.gc(true);
  if (typeof g.gc === "function") return g.gc;
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
}

/** An integer from the environment, or `fallback`. */
export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`${name}=${v} is not an integer`);
  return n;
}

/** MiB, one decimal. */
export const mib = (n: number): string => (n / 1048576).toFixed(1);
