/**
 * What the machine has, read natively (`native/machine.c`): CPU-time
 * counters, physical cores, physical memory. Native because Deno lets a
 * script read `/proc` only with `--allow-all`, and `os.totalmem()` /
 * `os.loadavg()` only with `--allow-sys`; through the library they need no
 * permission beyond loading it.
 *
 * @module
 */
import { totalmem } from "node:os";
import { ffi, keepAlive, library } from "./loader.ts";

/** One reading of the CPU-time counters, in seconds. */
export interface CpuTimes {
  /** CPU time every core has spent busy, all processes, since boot. */
  readonly busy: number;
  /** CPU time in all (busy + idle), summed over the cores. */
  readonly all: number;
  /** CPU time this process has used (user + system). */
  readonly self: number;
  /** A monotonic clock. */
  readonly t: number;
  /** Whether the machine-wide figures could be read (else `busy` and `all` are 0). */
  readonly ok: boolean;
}

interface Natives {
  times(out: number): number;
  physicalCores(): number;
  totalMemory(): number;
}

let natives: Natives | undefined;

function open(): Natives {
  if (natives) return natives;
  const lib = ffi.open(library().location.base, {
    wsp_js_cpu_times: { args: ["pointer"], result: "i32" },
    wsp_js_physical_cores: { args: [], result: "i32" },
    wsp_js_total_memory: { args: [], result: "f64" },
  });
  // A library built before these: no counters, every core free, Node's figure for the memory.
  if (!lib.has("wsp_js_cpu_times")) return natives = { times: () => 0, physicalCores: () => 0, totalMemory: () => totalmem() };
  const s = lib.symbols;
  return natives = { times: (out) => s.wsp_js_cpu_times(out), physicalCores: () => s.wsp_js_physical_cores(), totalMemory: () => s.wsp_js_total_memory() };
}

/** Reads the CPU-time counters. */
export function cpuTimes(): CpuTimes {
  const out = new Float64Array(4);
  const ok = open().times(ffi.addressOf(out)) === 1;
  keepAlive(out);
  return { busy: out[0], all: out[1], self: out[2], t: out[3], ok };
}

let cores: number | undefined;

/** Physical cores of the online CPUs (SMT siblings counted once), or 0 where unknown. */
export function physicalCores(): number {
  return cores ??= open().physicalCores();
}

let memory: number | undefined;

/** Bytes of physical memory (Node's `os.totalmem()` where the library cannot tell). */
export function totalMemory(): number {
  return memory ??= open().totalMemory() || totalmem();
}
