#!/usr/bin/env node
// The contention benchmark (`npm run bench:contention`): Gemma 3 270M generating greedily through
// `generate()` (bench/contention.ts) on Deno, Bun and Node, on a quiet machine and beside one
// busy process (a Node child spinning on one core, started before the model is made and stopped
// after), each with the thread count left to the package's policy ("default") and with the
// pre-policy default, one thread per CPU ("all CPUs": what GemmaModel and the CLI took before on
// this machine). Processes run in rounds with the sides interleaved; figures are medians of the
// rounds [range], and each ratio is busy / quiet of the same side.
//
//   node bench/contention.mjs [--runs 3] [--tokens 48] [--no-write]
//
// Writes the "Contention" section of bench/RESULTS.md and bench/contention_results.json.
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generatedBy, writeResultsSection } from "./results_md.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt("--runs", "3")), TOKENS = opt("--tokens", "48");
const CPUS = availableParallelism();
const bin = (name) => join(root, "node_modules", ".bin", name);
const started = Date.now();
const BEGIN = "<!-- contention:begin (bench/contention.mjs) -->", END = "<!-- contention:end -->";
const log = (m) => process.stderr.write(`[bench:contention ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${m}\n`);

const runtimes = {
  deno: [bin("deno"), ["run", "-A", "bench/contention.ts"]],
  bun: [bin("bun"), ["bench/contention.ts"]],
  node: [process.execPath, ["--import", "tsx", "bench/contention.ts"]],
};
const threadModes = { default: [], "default, poll 0": ["--poll", "0"], "all CPUs": ["--threads", String(CPUS)] };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function side(runtime, mode, busy) {
  const spinner = busy ? spawn(process.execPath, ["-e", "for (;;);"], { stdio: "ignore" }) : undefined;
  try {
    if (spinner) await sleep(500);
    const [cmd, args] = runtimes[runtime];
    const load = loadavg()[0];
    const r = spawnSync(cmd, [...args, "--tokens", TOKENS, ...threadModes[mode]], { cwd: root, encoding: "utf8", timeout: 300_000 });
    const line = (r.stdout ?? "").trim().split("\n").filter((l) => l.startsWith("{")).pop();
    if (r.status !== 0 || !line) throw new Error(`${runtime} ${mode} failed (${r.status ?? r.signal}): ${(r.stderr ?? "").trim().split("\n").slice(-5).join(" / ")}`);
    return { ...JSON.parse(line), load };
  } finally {
    spinner?.kill();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const load0 = loadavg();
const runs = {};
for (let run = 1; run <= RUNS; run++) {
  for (const runtime of Object.keys(runtimes)) {
    for (const mode of Object.keys(threadModes)) {
      for (const busy of [false, true]) {
        const key = `${runtime}|${mode}|${busy ? "busy" : "quiet"}`;
        const r = await side(runtime, mode, busy);
        log(`run ${run}/${RUNS}: ${key}: ${r.tps} tok/s, ${r.threads} thread(s), load ${r.load.toFixed(2)}`);
        (runs[key] ??= []).push(r);
      }
    }
  }
}
const seconds = (Date.now() - started) / 1000;
const fig = (key) => {
  const rs = runs[key];
  return { tps: median(rs.map((r) => r.tps)), min: Math.min(...rs.map((r) => r.tps)), max: Math.max(...rs.map((r) => r.tps)), threads: [...new Set(rs.map((r) => r.threads))], loads: rs.map((r) => r.load) };
};
const lines = [
  BEGIN,
  "## Contention: generation beside a busy process",
  "",
  generatedBy("bench/contention.mjs", "bench:contention", seconds, load0, loadavg()) +
    `${RUNS} rounds, sides interleaved; each process decodes up to ${TOKENS} tokens greedily through \`generate()\` (at most 20 s), Gemma 3 270M Q4_K_M, ${CPUS} CPUs. ` +
    "Busy: a Node process spinning on one core, started 0.5 s before the model is made. Threads: the package's default (its policy, measured when the model is made), the same with the threadpool's idle threads sleeping at once (`poll: 0`, against ggml's 50), or one per CPU (the default before the policy). Tokens/s, median [range]; the 1-minute load at each process's start is in bench/contention_results.json.",
  "",
  "| runtime | threads | quiet tok/s | busy tok/s | threads taken (quiet / busy) | busy / quiet |",
  "|---|---|---|---|---|---|",
];
const summary = {};
for (const runtime of Object.keys(runtimes)) {
  for (const mode of Object.keys(threadModes)) {
    const q = fig(`${runtime}|${mode}|quiet`), b = fig(`${runtime}|${mode}|busy`);
    summary[`${runtime}|${mode}`] = { quiet: q, busy: b, ratio: b.tps / q.tps };
    lines.push(`| ${runtime} | ${mode} | ${q.tps.toFixed(1)} [${q.min.toFixed(1)}–${q.max.toFixed(1)}] | ${b.tps.toFixed(1)} [${b.min.toFixed(1)}–${b.max.toFixed(1)}] | ${q.threads.join(",")} / ${b.threads.join(",")} | **${(b.tps / q.tps).toFixed(2)}** |`);
  }
}
lines.push("", END);
const section = lines.join("\n");
if (!argv.includes("--no-write")) {
  writeResultsSection(root, BEGIN, END, section);
  writeFileSync(join(root, "bench", "contention_results.json"), JSON.stringify({ seconds, runs: RUNS, tokens: Number(TOKENS), cpus: CPUS, summary, processes: runs }, null, 1) + "\n");
  log("wrote the Contention section of bench/RESULTS.md and bench/contention_results.json");
}
console.log(section);
