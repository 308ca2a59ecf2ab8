/**
 * What the examples' command-line programs share.
 *
 * @module
 */
import process from "node:process";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRng } from "../../src/llm/sampler.ts";

/** Whether the module of `meta` is the program (Deno and Bun say so; on Node, compare the script path). */
export function isProgram(meta: ImportMeta): boolean {
  const m = (meta as { main?: boolean }).main;
  if (m !== undefined) return m;
  return process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(meta.url);
}

/**
 * A seeded pseudo-random generator (mulberry32): numbers in [0, 1) from a
 * 32-bit state in integer steps only, so a seed gives the same numbers on
 * every runtime. The LLM sampler's generator (`createRng` of `wsp-ggml/llm`).
 */
export function mulberry32(seed: number): () => number {
  return createRng(seed);
}
