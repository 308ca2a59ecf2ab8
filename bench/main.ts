/**
 * Runs one TS benchmark and prints its figures as JSON lines (the shape the
 * C driver prints), for `bench/run.mjs`:
 *
 *   deno run -A bench/main.ts BENCH [key=value ...]
 *   bun bench/main.ts BENCH [key=value ...]
 *   node --import tsx bench/main.ts BENCH [key=value ...]
 *
 * BENCH: nelements nbytes add shape graph matmul data train (see bench/README.md).
 *
 * @module
 */
import process from "node:process";
import { add, call, data, graph, matmul, type Params, type Sample, shape, sinkValue } from "./cases.ts";
import { train } from "./train.ts";

const CASES: Record<string, (p: Params) => Sample[]> = {
  nelements: (p) => call("nelements", p),
  nbytes: (p) => call("nbytes", p),
  add,
  shape,
  graph,
  matmul,
  data,
  train,
};

const [name, ...rest] = process.argv.slice(2);
const run = CASES[name ?? ""];
if (!run) {
  console.error(`usage: main.ts BENCH [key=value ...]; BENCH is one of ${Object.keys(CASES).join(" ")}`);
  process.exit(2);
}
const params: Params = Object.fromEntries(rest.map((kv) => kv.split("=", 2) as [string, string]));
for (const s of run(params)) console.log(JSON.stringify(s));
if (Number.isNaN(sinkValue())) console.error("(sink)");
