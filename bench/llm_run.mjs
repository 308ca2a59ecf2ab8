#!/usr/bin/env node
// The real-model benchmark (`npm run bench:llm`): a model of the catalog (default Gemma 3 270M
// Q4_K_M; `--model-id smollm2-135m-instruct`, `qwen2.5-coder-0.5b-instruct`) through the binding
// (bench/llm.ts on Deno, Bun and Node) against llama.cpp on the same file, the same thread count:
// pp128, pp512, tg128 (tokens/s), the binding's public generate() path (gen128) and peak resident
// memory.
//
// The reference is llama.cpp's own llama-bench (b6673, the second pin), built by zig against
// libwsp-ggml's base library and CPU variants (`zig build llama-bench`, zig-out/bin/wsp-llama-bench):
// `-p 128,512 -n 128 -t T -r R -fa 0 -o json`, f16 KV cache, so the comparison is llama.cpp's
// code over the same ggml. node-llama-cpp 3.14.0's prebuilt binary (bench/llm_peer.mjs: llama.cpp
// b6673 with its own ggml build) is a second peer row.
//
// Rounds: in each, every thread count (default 1 and 2) runs one process per side, the order of
// the sides rotated from round to round, so background load hits every side alike; the 1-minute
// load is printed (and recorded) at each round's start. Each figure is the median of its
// processes' medians [range]; each ratio is side / llama-bench (≥ 1: faster).
//
//   node bench/llm_run.mjs [--rounds 3] [--reps 5] [--threads 1,2] [--sides llama-bench,node-llama-cpp,deno,bun,node]
//                          [--cmake] [--no-build] [--no-write] [--model-id ID]
//
// --cmake adds the side llama-bench-cmake: the same llama-bench built by CMake and the system
// compiler with GGML_NATIVE=ON, no OpenMP, over llama.cpp's own ggml (bench/llama_cmake.mjs).
//
// Writes the model's "Real model" section of bench/RESULTS.md (between its markers; bench/run.mjs
// keeps the sections when it rewrites the file) and bench/llm_results.json (Gemma) or
// bench/llm_results_<ID>.json.
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeResultsSection } from "./results_md.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(opt("--rounds", opt("--runs", "3"))), REPS = opt("--reps", "5");
const THREADS = opt("--threads", "1,2").split(",").map(Number);
const bin = (name) => join(root, "node_modules", ".bin", name);
const started = Date.now();
const FIGS = ["pp128", "pp512", "tg128", "gen128"];
const REF = "llama-bench", CMAKE = "llama-bench-cmake";
const llamaBench = join(root, "zig-out", "bin", process.platform === "win32" ? "wsp-llama-bench.exe" : "wsp-llama-bench");
const gnuTime = "/usr/bin/time";

const MODEL_ID = opt("--model-id", "gemma3-270m");
const GEMMA = MODEL_ID === "gemma3-270m";
/** The markers of the section this script owns in bench/RESULTS.md, one per model. */
const BEGIN = GEMMA ? "<!-- llm:begin (bench/llm_run.mjs) -->" : `<!-- llm:${MODEL_ID}:begin (bench/llm_run.mjs --model-id ${MODEL_ID}) -->`;
const END = GEMMA ? "<!-- llm:end -->" : `<!-- llm:${MODEL_ID}:end -->`;

const log = (m) => process.stderr.write(`[bench:llm ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${m}\n`);

const sides = {
  [REF]: null,
  [CMAKE]: null,
  "node-llama-cpp": [process.execPath, ["bench/llm_peer.mjs"]],
  deno: [bin("deno"), ["run", "-A", "bench/llm.ts"]],
  bun: [bin("bun"), ["bench/llm.ts"]],
  node: [process.execPath, ["--import", "tsx", "bench/llm.ts"]],
};
const names = opt("--sides", [REF, ...(argv.includes("--cmake") ? [CMAKE] : []), "node-llama-cpp", "deno", "bun", "node"].join(",")).split(",");
for (const n of names) if (!(n in sides)) throw new Error(`unknown side ${n} (known: ${Object.keys(sides)})`);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round1 = (x) => Math.round(x * 10) / 10;

/** llama-bench's JSON: one entry per test; tokens/s per sample in samples_ts. */
function runLlamaBench(exe, model, threads) {
  const args = ["-m", model, "-p", "128,512", "-n", "128", "-t", String(threads), "-r", REPS, "-fa", "0", "-ctk", "f16", "-ctv", "f16", "-o", "json"];
  // GNU time gives the peak RSS of the child (the mapped model included), as the other sides report theirs.
  const timed = existsSync(gnuTime);
  const [cmd, a] = timed ? [gnuTime, ["-f", "wsp-maxrss-kb=%M", exe, ...args]] : [exe, args];
  const r = spawnSync(cmd, a, { cwd: root, encoding: "utf8", timeout: 900_000, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`llama-bench failed (${r.status ?? r.signal}): ${(r.stderr ?? "").trim().split("\n").slice(-5).join(" / ")}`);
  const tests = JSON.parse(r.stdout);
  const pick = (p, g) => tests.find((t) => t.n_prompt === p && t.n_gen === g && t.n_depth === 0);
  const fig = (t) => round1(median(t.samples_ts));
  const rss = /wsp-maxrss-kb=(\d+)/.exec(r.stderr ?? "");
  const t0 = tests[0];
  return {
    peer: exe === llamaBench ? `llama.cpp's llama-bench b${t0.build_number} (${t0.build_commit}) built by zig with libwsp-ggml's flags`
      : `llama.cpp's llama-bench b${t0.build_number} (${t0.build_commit}), CMake + system compiler, GGML_NATIVE=ON, no OpenMP, its own ggml`,
    threads, reps: Number(REPS), type_k: t0.type_k, type_v: t0.type_v, flash_attn: t0.flash_attn, n_batch: t0.n_batch, n_ubatch: t0.n_ubatch,
    pp128: fig(pick(128, 0)), pp512: fig(pick(512, 0)), tg128: fig(pick(0, 128)),
    peakRssMiB: rss ? round1(Number(rss[1]) / 1024) : NaN,
    samples: { pp128: pick(128, 0).samples_ts.map(round1), pp512: pick(512, 0).samples_ts.map(round1), tg128: pick(0, 128).samples_ts.map(round1) },
  };
}

function runSide(name, model, threads) {
  if (name === REF) return runLlamaBench(llamaBench, model, threads);
  if (name === CMAKE) return runLlamaBench(cmakeBench, model, threads);
  const [cmd, args] = sides[name];
  const r = spawnSync(cmd, [...args, "--model", model, "--id-range", String(ID_RANGE), "--threads", String(threads), "--reps", REPS], { cwd: root, encoding: "utf8", timeout: 900_000 });
  const line = (r.stdout ?? "").trim().split("\n").filter((l) => l.startsWith("{")).pop();
  if (r.status !== 0 || !line) throw new Error(`${name} failed (${r.status ?? r.signal}): ${(r.stderr ?? "").trim().split("\n").slice(-5).join(" / ")}`);
  return JSON.parse(line);
}

if (names.includes(REF) && !argv.includes("--no-build")) {
  log("building llama-bench (node scripts/zig.mjs build llama-bench)");
  const b = spawnSync(process.execPath, ["scripts/zig.mjs", "build", "llama-bench"], { cwd: root, stdio: "inherit" });
  if (b.status !== 0) throw new Error("zig build llama-bench failed (run `node scripts/vendor.mjs` first if vendor/llama/ is missing)");
}
if (names.includes(REF) && !existsSync(llamaBench)) throw new Error(`${llamaBench} is missing: run \`node scripts/zig.mjs build llama-bench\``);

let cmakeBench;
if (names.includes(CMAKE)) {
  log("building (once) llama-bench with CMake (node bench/llama_cmake.mjs)");
  const c = spawnSync(process.execPath, ["bench/llama_cmake.mjs"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (c.status !== 0) throw new Error("bench/llama_cmake.mjs failed: run without --cmake");
  cmakeBench = c.stdout.trim().split("\n").pop();
}

// The model is fetched once here, not raced by the first processes.
log("fetching the model if needed");
const fetchScript = `import('./src/llm/fetch.ts').then(async (f) => { const p = await f.ensureModel({ model: ${JSON.stringify(MODEL_ID)} });
  const g = await import('./mod.ts'); const file = g.readGguf(p); console.log(JSON.stringify({ path: p, about: f.modelSpec(${JSON.stringify(MODEL_ID)}).about, nVocab: file.tensor('token_embd.weight').shape[1] })); })`;
const modelOut = spawnSync(process.execPath, ["--import", "tsx", "-e", fetchScript], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
if (modelOut.status !== 0) throw new Error("the model fetch failed");
const fetched = JSON.parse(modelOut.stdout.trim().split("\n").pop());
const model = fetched.path;
// The prompts' ids: 1000 + [0, ID_RANGE), inside the vocabulary (Gemma's 262k: the 200k range of the earlier runs).
const ID_RANGE = Math.min(200000, fetched.nVocab - 1000);

const load0 = loadavg();
const roundLoads = [];
/** processes[threads][side] = the JSON of each round's process. */
const processes = Object.fromEntries(THREADS.map((t) => [t, Object.fromEntries(names.map((n) => [n, []]))]));
for (let r = 0; r < ROUNDS; r++) {
  const load = loadavg()[0];
  roundLoads.push(Math.round(load * 100) / 100);
  const order = names.map((_, i) => names[(i + r) % names.length]);
  log(`round ${r + 1}/${ROUNDS}: 1-minute load ${load.toFixed(2)}; order ${order.join(", ")}`);
  for (const t of THREADS) {
    for (const name of order) {
      log(`round ${r + 1}/${ROUNDS}, ${t} thread(s): ${name}`);
      processes[t][name].push(runSide(name, model, t));
    }
  }
}
const load1 = loadavg();
const seconds = (Date.now() - started) / 1000;

const summarize = (rs) => {
  const figs = FIGS.filter((f) => rs.every((x) => typeof x[f] === "number" && !Number.isNaN(x[f])));
  return {
    ...Object.fromEntries([...figs, "peakRssMiB"].map((f) => [f, median(rs.map((x) => x[f]))])),
    range: Object.fromEntries(figs.map((f) => [f, [Math.min(...rs.map((x) => x[f])), Math.max(...rs.map((x) => x[f]))]])),
    perToken: rs.at(-1).perToken,
    gen128Info: rs.at(-1).gen128Info,
    about: rs[0].peer ?? `wsp-ggml, ${rs[0].runtime} (${rs[0].variant})`,
  };
};
const summary = Object.fromEntries(THREADS.map((t) => [t, Object.fromEntries(names.map((n) => [n, summarize(processes[t][n])]))]));

const lines = [
  BEGIN,
  `## Real model: ${fetched.about} against llama.cpp's llama-bench`,
  "",
  `Generated by \`node bench/llm_run.mjs\` (\`npm run bench:llm\`) on ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC in ${seconds.toFixed(0)} s. ` +
    `Load average (1, 5, 15 min) ${load0.map((x) => x.toFixed(2)).join(" / ")} at the start, ${load1.map((x) => x.toFixed(2)).join(" / ")} at the end; 1-minute load at each round's start: ${roundLoads.join(", ")}. ` +
    `${ROUNDS} rounds; in each, for ${THREADS.join(" and ")} thread(s), one process per side, the sides' order rotated from round to round; each process: ${REPS} samples after a warm-up.`,
  "",
  `Reference: **llama.cpp's llama-bench b6673 built by zig with libwsp-ggml's flags** (\`zig build llama-bench\`: llama.cpp's code compiled into the program, ggml = the same libwsp-ggml and CPU variant the binding loads), ` +
    `\`-p 128,512 -n 128 -t T -r ${REPS} -fa 0\`, f16 KV cache, n_batch 2048 / n_ubatch 512; its figure is the median of its samples (\`samples_ts\`). ` +
    (names.includes(CMAKE) ? "llama-bench-cmake: the same llama-bench built by CMake with the system compiler, `GGML_NATIVE=ON`, no OpenMP, over llama.cpp b6673's own ggml (`bench/llama_cmake.mjs`). " : "") +
    `Second peer: node-llama-cpp 3.14.0's prebuilt CPU binary (llama.cpp b6673 with its own ggml build, \`bench/llm_peer.mjs\`). ` +
    "pp = a prompt of N tokens from an empty cache in one batch; tg128 = 128 one-token decodes from an empty cache (llama-bench: random ids; the binding and node-llama-cpp: greedy from BOS); " +
    "gen128 = the binding's public `generate()` with greedy sampling from BOS, 128 tokens, wall time of the whole async iteration. tokens/s, median of the processes' medians [range]; ratio = side / llama-bench (≥ 1: faster).",
];
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
for (const t of THREADS) {
  const ref = summary[t][REF];
  lines.push("", `### ${t} thread${t > 1 ? "s" : ""}`, "");
  lines.push("| side | pp128 tok/s | pp512 tok/s | tg128 tok/s | gen128 tok/s | peak RSS MiB | pp128 / ref | pp512 / ref | tg128 / ref | gen128 / ref tg128 |");
  lines.push("|---|---|---|---|---|---|---|---|---|---|");
  for (const name of names) {
    const s = summary[t][name];
    const cell = (f) => (s[f] === undefined ? "—" : `${fmt(s[f])} [${fmt(s.range[f][0])}–${fmt(s.range[f][1])}]`);
    const ratio = (f, rf = f) => (name === REF || s[f] === undefined || !ref?.[rf] ? "—" : `**${(s[f] / ref[rf]).toFixed(2)}**`);
    const label = name === REF ? "llama-bench (reference)" : name === CMAKE ? "llama-bench, CMake + system compiler, -march=native" : name === "node-llama-cpp" ? "node-llama-cpp 3.14.0" : s.about;
    lines.push(`| ${label} | ${cell("pp128")} | ${cell("pp512")} | ${cell("tg128")} | ${cell("gen128")} | ${Number.isNaN(s.peakRssMiB) ? "—" : s.peakRssMiB.toFixed(0)} | ${ratio("pp128")} | ${ratio("pp512")} | ${ratio("tg128")} | ${ratio("gen128", "tg128")} |`);
  }
}
const bindings = names.filter((n) => ["deno", "bun", "node"].includes(n));
if (bindings.length) {
  lines.push("", "Where the binding's time goes, per token, last process of each runtime (ms: total, compute in ggml, graph builds, scheduler allocations, inputs, logits read, arg-max):", "");
  lines.push("| threads | runtime | case | total | compute | build | alloc | inputs | logits | arg-max |", "|---|---|---|---|---|---|---|---|---|---|");
  for (const t of THREADS) {
    for (const name of bindings) {
      for (const f of FIGS) {
        const p = summary[t][name].perToken?.[f];
        if (p) lines.push(`| ${t} | ${name} | ${f} | ${p.totalMs} | ${p.computeMs} | ${p.buildMs} | ${p.allocMs} | ${p.inputMs} | ${p.outputMs} | ${p.argmaxMs} |`);
      }
    }
  }
}
lines.push("", END);
const section = lines.join("\n");

if (!argv.includes("--no-write")) {
  writeResultsSection(root, BEGIN, END, section);
  writeFileSync(join(root, "bench", GEMMA ? "llm_results.json" : `llm_results_${MODEL_ID}.json`), JSON.stringify({ model: MODEL_ID, seconds, load0, load1, roundLoads, rounds: ROUNDS, reps: Number(REPS), threads: THREADS, summary, processes }, null, 1) + "\n");
  log("wrote the Real model section of bench/RESULTS.md and bench/llm_results.json");
}
console.log(section);
