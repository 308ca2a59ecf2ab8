#!/usr/bin/env node
// llamafile's sgemm, before and after (`node bench/llamafile.mjs [--rounds 3]`): builds the host's
// best CPU variant twice (zig build -Dllamafile=true / false, into .cache/bench-llamafile/), then
// runs bench/llamafile_matmul.ts against each, sides interleaved, and prints the ratios (CPU
// time, one thread: robust to load from other processes). Writes bench/llamafile_results.json.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureZig } from "../scripts/zig.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const rounds = Number(argv[argv.indexOf("--rounds") + 1] || 3) || 3;
const run = (cmd, args, env = {}) => {
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
};
const worker = (lib) => JSON.parse(run(process.execPath, ["--import", "tsx", "bench/llamafile_matmul.ts"], { WSP_GGML_LIBRARY_PATH: lib }).trim().split("\n").pop());

// The variant the host would load, from the regular build.
const variant = worker(path.join(root, "zig-out", "lib")).variant;
const sides = {};
for (const on of [false, true]) {
  const prefix = path.join(root, ".cache", "bench-llamafile", on ? "on" : "off");
  run(ensureZig(), ["build", `-Dllamafile=${on}`, `-Dvariants=${variant}`, "-Dvulkan=off", "--prefix", prefix]);
  sides[on ? "on" : "off"] = path.join(prefix, "lib");
}
const samples = { off: [], on: [] };
for (let r = 0; r < rounds; r++) for (const side of ["off", "on"]) samples[side].push(worker(sides[side]).gflops);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cases = Object.keys(samples.on[0]);
const rows = cases.map((c) => {
  const off = median(samples.off.map((s) => s[c])), on = median(samples.on.map((s) => s[c]));
  return { case: c, off, on, ratio: +(on / off).toFixed(2) };
});
console.log(`llamafile sgemm, ${variant}, 1 thread, batch 128, GFLOP/s of CPU time (median of ${rounds} interleaved rounds; load ${fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0]})`);
console.log("| case | without | with | with / without |\n|---|---|---|---|");
for (const r of rows) console.log(`| ${r.case} | ${r.off} | ${r.on} | **${r.ratio}** |`);
fs.writeFileSync(path.join(root, "bench", "llamafile_results.json"), JSON.stringify({ date: new Date().toISOString(), variant, rounds, rows }, null, 2) + "\n");
