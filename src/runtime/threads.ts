/**
 * The package's one thread policy: how many CPU threads a computation takes
 * when the caller does not say ({@linkcode defaultThreads}), and a warning
 * when the caller asks for more than the machine has ({@linkcode checkThreads}).
 *
 * Why it matters: ggml's CPU threads meet at a spinning barrier after every op,
 * so a thread that shares its core with another busy process stalls all the
 * others at each of a graph's hundreds of ops. More threads than free cores is
 * then not a slowdown but a collapse (Gemma 3 270M on 2 cores, one of them
 * busy: 0.5 tokens/s with 2 threads against 27 with 1). So the default is the
 * physical cores this process may use minus the cores that other processes
 * keep busy, measured from the machine's CPU-time counters (./machine.ts),
 * and never less than 1.
 *
 * @module
 */
import { availableParallelism } from "node:os";
import process from "node:process";
import { ArgumentError } from "../core/errors.ts";
import { cpuTimes, type CpuTimes, physicalCores } from "./machine.ts";

/** The environment variable that fixes the default thread count (a positive integer). */
export const THREADS_ENV = "WSP_GGML_THREADS";

/** What {@linkcode cpuLoad} measured. */
export interface CpuLoad {
  /** Logical CPUs this process may run on (`os.availableParallelism()`). */
  readonly available: number;
  /** Physical cores among them (SMT siblings counted once), or `available` where unknown. */
  readonly cores: number;
  /** Cores' worth of CPU time other processes used over the window (this process's own excluded). */
  readonly busy: number;
  /** The window the figure is over, in milliseconds (0 where the machine's counters cannot be read). */
  readonly windowMs: number;
}

/** Windows shorter than this reuse the last figure; longer than {@linkcode STALE_S}, a fresh one is taken. */
const MIN_WINDOW_S = 0.2;
const STALE_S = 2;
/** How long a fresh measurement waits between its two readings. */
const SAMPLE_MS = 50;

let last: CpuTimes | undefined;
let lastLoad: CpuLoad | undefined;

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function loadOver(a: CpuTimes, b: CpuTimes, available: number, cores: number): CpuLoad {
  const wall = b.t - a.t, all = b.all - a.all;
  if (!a.ok || !b.ok || wall <= 0 || all <= 0) return { available, cores, busy: 0, windowMs: 0 };
  // The machine's busy share times its cores (all / wall: the online CPUs), less this process's own use.
  const busy = Math.max(0, ((b.busy - a.busy) / all) * (all / wall) - (b.self - a.self) / wall);
  return { available, cores, busy, windowMs: wall * 1000 };
}

/**
 * The CPUs this process may use and how busy other processes keep them: over
 * the time since the previous call when that was 0.2 to 2 s ago, else over a
 * fresh 50 ms window (the call then waits 50 ms; with `fresh: false`, only
 * the first call of the process does, and later ones take whatever time has
 * passed as the window, so that a hot path never waits).
 */
export function cpuLoad(options: { fresh?: boolean } = {}): CpuLoad {
  const available = Math.max(1, availableParallelism());
  const physical = physicalCores();
  const cores = physical > 0 ? Math.min(physical, available) : available;
  const now = cpuTimes();
  if (last !== undefined && lastLoad !== undefined) {
    const age = now.t - last.t;
    if (age < MIN_WINDOW_S) return lastLoad;
    if (age <= STALE_S || options.fresh === false) {
      lastLoad = loadOver(last, now, available, cores);
      last = now;
      return lastLoad;
    }
  }
  sleepMs(SAMPLE_MS);
  const next = cpuTimes();
  lastLoad = loadOver(now, next, available, cores);
  last = next;
  return lastLoad;
}

/**
 * The thread count a computation takes when none is given: `WSP_GGML_THREADS`
 * when set, else the physical cores this process may use minus the cores other
 * processes keep busy (rounded), at least 1, at most `cap`.
 *
 * @param options.cap the most threads the caller can use (default: no cap)
 * @param options.fresh false where the caller must not wait for a fresh measurement (a compute call); see {@linkcode cpuLoad}
 * @throws {ArgumentError} when `WSP_GGML_THREADS` is set to something other than an integer in 1..512
 */
export function defaultThreads(options: { cap?: number; fresh?: boolean } = {}): number {
  const env = process.env[THREADS_ENV];
  if (env !== undefined && env !== "") {
    const n = Number(env);
    if (!Number.isInteger(n) || n < 1 || n > 512) throw new ArgumentError(`${THREADS_ENV} must be an integer in 1..512, got ${JSON.stringify(env)}`);
    return n;
  }
  const load = cpuLoad({ fresh: options.fresh });
  const free = Math.max(1, load.cores - Math.round(load.busy));
  return Math.max(1, Math.min(free, options.cap ?? free));
}

const warned = new Set<string>();

/**
 * Warns once per `where` on stderr when `threads` exceeds the CPUs this process
 * may use: ggml's threads then wait for each other at every op.
 */
export function checkThreads(where: string, threads: number): void {
  const available = availableParallelism();
  if (threads <= available || warned.has(where)) return;
  warned.add(where);
  console.warn(
    `wsp-ggml: ${where}: ${threads} threads on ${available} available CPU${available === 1 ? "" : "s"}: ggml's threads wait for each other at every op, ` +
      `so more threads than free cores runs many times slower, not a little; leave the thread count unset for the default (${THREADS_ENV} fixes it)`,
  );
}
