/**
 * What the examples' command-line programs share.
 *
 * @module
 */
import process from "node:process";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Whether the module of `meta` is the program (Deno and Bun say so; on Node, compare the script path). */
export function isProgram(meta: ImportMeta): boolean {
  const m = (meta as { main?: boolean }).main;
  if (m !== undefined) return m;
  return process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(meta.url);
}

/**
 * A seeded pseudo-random generator (mulberry32): numbers in [0, 1) from a
 * 32-bit state in integer steps only, so a seed gives the same numbers on
 * every runtime.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
