#!/usr/bin/env node
// The index scan before a compute (`npm run bench:indices`): what checking the index data that JS
// set costs per index (src/core/indices.ts), on each runtime, beside the compute it guards.
// Writes the "Index scan" section of bench/RESULTS.md (between its markers; the other sections
// are left as they are) and bench/index_scan_results.json.
//
//   node bench/index_scan.mjs [--runs N] [--reps R] [--runtimes node,deno,bun] [--no-write]
//
// Each runtime runs bench/index_scan.ts N times, the runtimes interleaved; the figures are the
// medians over the processes of each process's medians.
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generatedBy, writeResultsSection } from "./results_md.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt("--runs", "3")), REPS = opt("--reps", "15");
const bin = (name) => join(root, "node_modules", ".bin", name);
const BEGIN = "<!-- indices:begin (bench/index_scan.mjs) -->", END = "<!-- indices:end -->";
const sides = {
  node: [process.execPath, ["--import", "tsx", "bench/index_scan.ts", "--reps", REPS]],
  deno: [bin("deno"), ["run", "-A", "bench/index_scan.ts", "--reps", REPS]],
  bun: [bin("bun"), ["bench/index_scan.ts", "--reps", REPS]],
};
const runtimes = opt("--runtimes", "node,deno,bun").split(",").filter((r) => r === "node" || existsSync(sides[r]?.[0] ?? ""));
const started = Date.now(), load0 = loadavg();
const runs = Object.fromEntries(runtimes.map((r) => [r, []]));
for (let i = 0; i < RUNS; i++) {
  for (const r of runtimes) {
    const [cmd, args] = sides[r];
    const p = spawnSync(cmd, args, { cwd: root, encoding: "utf8", timeout: 600_000 });
    if (p.status !== 0) throw new Error(`${r} exited ${p.status ?? p.signal}: ${(p.stderr ?? "").slice(-2000)}`);
    runs[r].push(p.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)));
    process.stderr.write(`[bench:indices] ${r} run ${i + 1}/${RUNS} done\n`);
  }
}
const seconds = (Date.now() - started) / 1000, load1 = loadavg();
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
const sizes = runs[runtimes[0]][0].map((x) => x.n);
const summary = Object.fromEntries(runtimes.map((r) => [r, sizes.map((n, k) => ({
  n,
  scanNsPerIndex: median(runs[r].map((p) => p[k].scan_ns_per_index)),
  computeUs: median(runs[r].map((p) => p[k].compute_ns)) / 1000,
  share: median(runs[r].map((p) => p[k].scan_share)),
}))]));
const lines = [
  BEGIN,
  "## Index scan before a compute",
  "",
  generatedBy("bench/index_scan.mjs", "bench:indices", seconds, load0, load1) +
  `${RUNS} processes per runtime, interleaved; in each, ${REPS} samples after a warm-up. ` +
  "`getRows(table, ids)`, table f32 [4, 1024] (rows of 4 floats: the cheapest gather per index, so the scan's largest share of a compute), ids i32 [N] set from JS: *scan* is the check every compute runs first (`src/core/indices.ts`: the graph's cached plan, one pass over the ids against the bound), " +
  "*compute* the whole `graph.compute` on the CPU backend with 1 thread (scan included), *share* the scan's part of it. Graphs without index ops pay nothing.",
  "",
  "| runtime | N | scan ns per index | compute µs | scan / compute |",
  "|---|---|---|---|---|",
];
for (const r of runtimes) for (const s of summary[r]) lines.push(`| ${r} | ${s.n} | ${s.scanNsPerIndex.toFixed(2)} | ${s.computeUs.toFixed(1)} | ${(100 * s.share).toFixed(0)}% |`);
lines.push("", END);
const section = lines.join("\n");
if (!argv.includes("--no-write")) {
  writeResultsSection(root, BEGIN, END, section);
  writeFileSync(join(root, "bench", "index_scan_results.json"), JSON.stringify({ seconds, load: { start: load0, end: load1 }, runs: RUNS, reps: Number(REPS), summary, processes: runs }, null, 1) + "\n");
}
console.log(section);
