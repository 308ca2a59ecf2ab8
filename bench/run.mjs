#!/usr/bin/env node
// The benchmark runner (`npm run bench`, `deno task bench`): builds the C driver, sets up the
// ggml-python peer, runs every benchmark on C, Deno, Bun, Node and ggml-python (interleaved, so that
// noise from other load hits every side alike), takes medians, and writes bench/RESULTS.md and
// bench/results.json with every figure as a ratio against its reference measured in the same run.
//
//   node bench/run.mjs [--quick] [--no-build] [--no-peer] [--runs N]
//
// --quick: fewer samples and runs, sizes 512 and 1024 only (about 2 minutes).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const runsArg = argv.indexOf("--runs");
const RUNS = runsArg >= 0 ? Number(argv[runsArg + 1]) : quick ? 1 : 3;
const bin = (name) => join(root, "node_modules", ".bin", name);
const VENV = join(root, ".bench-venv");
const PY = join(VENV, "bin", "python");
const PEER_VERSION = "0.0.45";
const started = Date.now();

/**
 * Waits, at most 3 minutes, for the 1-minute load average to fall below 0.5 (the set-up's builds
 * raise it), so that the figures start on a quiet machine; returns the load it starts at.
 */
function settleLoad() {
  const until = Date.now() + 180_000, tick = new Int32Array(new SharedArrayBuffer(4));
  if (loadavg()[0] > 0.5) log(`waiting for the load average (${loadavg()[0].toFixed(2)}) to fall below 0.5`);
  while (loadavg()[0] > 0.5 && Date.now() < until) Atomics.wait(tick, 0, 0, 5000);
  return loadavg()[0];
}

function log(msg) {
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`);
}

/** A command's stdout (trimmed), or null when it fails. */
function capture(cmd, args, opts = {}) {
  try {
    return execFileSync(cmd, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts }).trim();
  } catch {
    return null;
  }
}

// ---- setup --------------------------------------------------------------------------------------

/** bench/setup: the C driver (zig build bench) and the peer's venv (pip install ggml-python). */
/** The training runs: 1 thread, 2 threads started by each compute (the demo's way), 2 threads of a persistent threadpool. */
const TRAIN_CONFIGS = [{ threads: 1, pool: false }, { threads: 2, pool: false }, { threads: 2, pool: true }];

function setup() {
  if (!argv.includes("--no-build")) {
    log("building the C driver: node scripts/zig.mjs build bench");
    const r = spawnSync(process.execPath, ["scripts/zig.mjs", "build", "bench"], { cwd: root, stdio: "inherit" });
    if (r.status !== 0) throw new Error("zig build bench failed");
  }
  const peer = { ok: false, why: "", version: "" };
  if (argv.includes("--no-peer")) {
    peer.why = "skipped (--no-peer)";
    return peer;
  }
  const probe = () => capture(PY, ["-c", "import ggml.ggml, importlib.metadata as m; print(m.version('ggml-python'))"]);
  let version = existsSync(PY) ? probe() : null;
  if (version !== PEER_VERSION) {
    log(`setting up the peer: python3 -m venv .bench-venv && pip install ggml-python==${PEER_VERSION} (builds ggml with cmake when no wheel fits)`);
    const steps = [
      ["python3", ["-m", "venv", VENV]],
      [join(VENV, "bin", "pip"), ["install", "--quiet", `ggml-python==${PEER_VERSION}`]],
    ];
    for (const [cmd, args] of steps) {
      const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8" });
      if (r.status !== 0) {
        peer.why = `\`${[cmd.replace(root + "/", ""), ...args.map((a) => a.replace(root + "/", ""))].join(" ")}\` failed (exit ${r.status}): ${(r.stderr || r.error?.message || "").trim().split("\n").slice(-6).join(" / ")}`;
        return peer;
      }
    }
    version = probe();
  }
  if (version !== PEER_VERSION) {
    peer.why = `ggml-python ${PEER_VERSION} is installed but does not import: ${capture(PY, ["-c", "import ggml.ggml"]) ?? "import failed"}`;
    return peer;
  }
  return { ok: true, why: "", version };
}

// ---- machine ------------------------------------------------------------------------------------

/** CPU model, cores, SIMD summary, clock, and the estimated f32 peak (formula in RESULTS.md). */
function machine() {
  const lscpu = capture("lscpu", []) ?? "";
  const field = (k) => (lscpu.match(new RegExp(`^${k}:\\s*(.+)$`, "m")) ?? [])[1]?.trim() ?? "?";
  const info = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const flags = new Set((info.match(/^flags\s*:\s*(.+)$/m) ?? [, ""])[1].split(/\s+/));
  const mhz = [...info.matchAll(/^cpu MHz\s*:\s*([\d.]+)/gm)].map((m) => Number(m[1]));
  const meanMhz = mhz.length ? mhz.reduce((a, b) => a + b, 0) / mhz.length : cpus()[0]?.speed ?? 0;
  const cores = Number(field("CPU\\(s\\)")) || cpus().length;
  const vendor = field("Vendor ID"), family = Number(field("CPU family"));
  // f32 lanes × FMA units × 2 flops. AVX-512 doubles the width only where the core has 512-bit FMA
  // units: Intel server cores (2 × 512-bit); AMD Zen 4 (family 25) executes AVX-512 on its two
  // 256-bit units, so it counts as AVX2; Zen 5 (family 26) has 512-bit units.
  let simd, lanes, units = 2;
  const wide512 = flags.has("avx512f") && (vendor === "GenuineIntel" || family >= 26);
  if (wide512) [simd, lanes] = ["AVX-512 FMA (512-bit units)", 16];
  else if (flags.has("fma") && flags.has("avx2")) [simd, lanes] = [flags.has("avx512f") ? "AVX2 FMA width (AVX-512 on 256-bit units)" : "AVX2 FMA", 8];
  else if (flags.has("avx")) [simd, lanes, units] = ["AVX (mul + add, no FMA)", 8, 1];
  else if (flags.has("asimd") || process.arch === "arm64") [simd, lanes] = ["NEON FMA", 4];
  else [simd, lanes, units] = ["SSE (mul + add)", 4, 1];
  const flopsPerCycle = lanes * units * 2;
  const summary = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "asimd"].filter((f) => flags.has(f));
  return {
    model: field("Model name"), vendor, family, cores, mhz: Math.round(meanMhz), flags: summary,
    simd, flopsPerCycle, peakGflops: (cores * meanMhz * 1e6 * flopsPerCycle) / 1e9,
  };
}

function versions(peer) {
  const first = (s) => (s ?? "?").split("\n")[0];
  return {
    node: process.version,
    deno: first(capture(bin("deno"), ["--version"])),
    bun: first(capture(bin("bun"), ["--version"])),
    python: first(capture(existsSync(PY) ? PY : "python3", ["--version"])),
    "ggml-python": peer.ok ? peer.version : `not available: ${peer.why}`,
    zig: first(capture(process.execPath, ["scripts/zig.mjs", "version"])),
    "wsp-ggml commit": `${first(capture("git", ["rev-parse", "--short", "HEAD"]))}${capture("git", ["status", "--porcelain", "src", "native", "build.zig"]) ? " (with uncommitted changes under src/, native/ or build.zig)" : ""}`,
  };
}

// ---- the plan -----------------------------------------------------------------------------------

const SIDES = {
  c: (b, p) => [join(root, "zig-out", "bin", "wsp-bench"), [join(root, "zig-out", "lib"), b, ...p]],
  deno: (b, p) => [bin("deno"), ["run", "-A", "bench/main.ts", b, ...p]],
  bun: (b, p) => [bin("bun"), ["bench/main.ts", b, ...p]],
  node: (b, p) => [process.execPath, ["--import", "tsx", "bench/main.ts", b, ...p]],
  "ggml-python": (b, p) => [PY, ["bench/peer_ggml_python.py", b, ...p]],
};
const TS = ["deno", "bun", "node"];
const PEER = ["ggml-python"];

/** Benchmarks: name, params, which sides run it, how many runs. The driver names `data` `memcpy`. */
function plan(peerOk) {
  const q = quick;
  const peer = peerOk ? PEER : [];
  const jobs = [
    { bench: "nelements", params: [`n=${q ? 200000 : 1000000}`, `reps=${q ? 7 : 15}`], sides: ["c", ...TS], py: [`n=${q ? 50000 : 200000}`, `reps=${q ? 5 : 11}`] },
    { bench: "nbytes", params: [`n=${q ? 200000 : 1000000}`, `reps=${q ? 7 : 15}`], sides: ["c", ...TS], py: [`n=${q ? 50000 : 200000}`, `reps=${q ? 5 : 11}`] },
    { bench: "add", params: [`n=${q ? 20000 : 100000}`, `reps=${q ? 7 : 15}`], sides: ["c", ...TS], py: [`n=${q ? 10000 : 50000}`, `reps=${q ? 5 : 11}`] },
    { bench: "shape", params: [`n=${q ? 200000 : 1000000}`, `reps=${q ? 7 : 15}`], sides: ["c", ...TS], py: [`n=${q ? 50000 : 200000}`, `reps=${q ? 5 : 11}`] },
    { bench: "graph", params: ["layers=334", `n=${q ? 5 : 20}`, `reps=${q ? 5 : 11}`], sides: ["c", ...TS], py: ["layers=334", `n=${q ? 2 : 5}`, `reps=${q ? 3 : 7}`], runs: q ? RUNS : Math.max(RUNS, 7) },
  ];
  for (const j of jobs) j.sides.push(...peer);
  for (const size of q ? [512, 1024] : [512, 1024, 2048]) {
    for (const type of ["f32", "f16", "q8_0", "q4_0"]) {
      // Many runs, so that load that comes and goes lands on every side alike; 9 rounds per
      // process, so that a TS process's in-turn ratio to C (bench/work.c) has pairs to spare.
      const reps = size >= 2048 ? 3 : 9;
      jobs.push({ bench: "matmul", params: [`type=${type}`, `size=${size}`, "threads=2", `reps=${reps}`], sides: ["c", ...TS, ...peer], runs: size >= 2048 ? Math.min(RUNS, 2) : q ? RUNS : size >= 1024 ? Math.max(RUNS, 5) : Math.max(RUNS, 7) });
    }
  }
  jobs.push({ bench: "data", cBench: "memcpy", params: [`reps=${q ? 5 : 9}`], sides: ["c", ...TS] });
  for (const { threads, pool } of TRAIN_CONFIGS) {
    jobs.push({ bench: "train", params: [`epochs=${q ? 2 : 7}`, `threads=${threads}`, `pool=${pool ? 1 : 0}`], sides: ["c", ...TS], runs: q ? 1 : 3 });
  }
  return jobs;
}

function runOne(side, job) {
  const params = side === "ggml-python" && job.py ? job.py : job.params;
  const [cmd, args] = SIDES[side](side === "c" && job.cBench ? job.cBench : job.bench, params);
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", maxBuffer: 64 << 20, env: { ...process.env, NODE_NO_WARNINGS: "1" } });
  if (r.status !== 0) {
    log(`FAILED ${side} ${job.bench} ${params.join(" ")}: ${(r.stderr || r.error?.message || "").trim().split("\n").slice(-3).join(" / ")}`);
    return [];
  }
  return r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Runs every job `runs` times, sides interleaved; returns figures keyed by side|bench|label with the median of the run medians. */
function runAll(jobs) {
  const figures = new Map();
  for (const job of jobs) {
    const runs = job.runs ?? RUNS;
    log(`${job.bench} ${job.params.join(" ")} × ${runs} on ${job.sides.join(", ")}`);
    for (let r = 0; r < runs; r++) {
      for (const side of job.sides) {
        for (const s of runOne(side, job)) {
          const key = `${side}|${s.bench}|${s.label}`;
          const f = figures.get(key) ?? { ...s, side, runs: [] };
          f.runs.push(s.median_ns);
          f.mins = [...(f.mins ?? []), s.min_ns];
          f.sampleRuns = [...(f.sampleRuns ?? []), s.samples_ns];
          f.extra = s.extra;
          f.variant = s.variant;
          figures.set(key, f);
        }
      }
    }
  }
  for (const f of figures.values()) {
    f.median_ns = median(f.runs);
    f.min_ns = Math.min(...f.mins);
  }
  return figures;
}

// ---- report -------------------------------------------------------------------------------------

function fmtNs(ns) {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(ns < 10 ? 2 : 1)} ns`;
}
/**
 * The ratio of two figures measured in the same processes, sampled in turn (a TS case times
 * C's loop from bench/work.c beside its own): the median, over every round of every process,
 * of the ratio of the two samples taken one after the other. It cancels the process-to-process
 * swings of this VM that a ratio of two processes keeps, and a sample that a passing slowdown
 * hit moves it no more than any other.
 */
function paired(x, ref) {
  if (!x || !ref) return undefined;
  const xs = x.sampleRuns, rs = ref.sampleRuns;
  if (xs.length !== rs.length || xs.some((run, j) => run.length !== rs[j].length)) return x.median_ns / ref.median_ns;
  return median(xs.flatMap((run, j) => run.map((v, i) => v / rs[j][i])));
}
/** The same for the fastest samples: the median over processes of min / min. */
function pairedMin(x, ref) {
  if (!x || !ref) return undefined;
  if (x.mins.length !== ref.mins.length) return x.min_ns / ref.min_ns;
  return median(x.mins.map((v, i) => v / ref.mins[i]));
}
const IN_C = "C in this process";
const ratio = (x, ref) => (x && ref ? (x / ref).toFixed(2) : "—");

function report(figures, mach, vers, peer, seconds) {
  const all = [...figures.values()];
  const find = (side, bench, labelPart = "") => all.find((f) => f.side === side && f.bench === bench && f.label.includes(labelPart));
  const lines = [];
  const targets = [];
  const out = (s = "") => lines.push(s);

  // Per-call.
  const perCall = [];
  for (const bench of ["nelements", "nbytes", "add"]) {
    const c = find("c", bench);
    const py = find("ggml-python", bench);
    for (const side of TS) {
      for (const kind of ["raw", "handles", "napi probe (", "napi probe:", "API"]) {
        const f = find(side, bench, kind);
        if (!f) continue;
        perCall.push({ bench, side, kind, label: f.label, ns: f.median_ns, c: c?.median_ns, py: py?.median_ns, overhead: c ? f.median_ns - c.median_ns : undefined });
      }
    }
  }
  const shapeRows = [];
  for (const side of TS) {
    const cCalls = find("c", "shape"), cNe = find("c", "shape-ne"), py = find("ggml-python", "shape"), pyNe = find("ggml-python", "shape-ne");
    const raw = find(side, "shape", "raw"), api = find(side, "shape", "API"), ne = find(side, "shape-ne");
    if (raw) shapeRows.push({ side, label: raw.label, ns: raw.median_ns, c: cCalls?.median_ns, cLabel: "C: the same 4 calls", py: py?.median_ns });
    if (api) shapeRows.push({ side, label: api.label, ns: api.median_ns, c: cCalls?.median_ns, cLabel: "C: the same 4 calls", py: py?.median_ns, vsRaw: raw?.median_ns });
    if (ne) shapeRows.push({ side, label: ne.label, ns: ne.median_ns, c: cNe?.median_ns, cLabel: "C: ne[0..3] struct reads", py: pyNe?.median_ns });
  }
  const graphRows = [];
  const cGraph = find("c", "graph"), pyGraph = find("ggml-python", "graph");
  for (const side of TS) for (const kind of ["API", "raw", "napi probe"]) {
    const f = find(side, "graph", kind), inC = find(side, "graph", IN_C);
    if (f) graphRows.push({ side, kind, label: f.label, ns: f.median_ns, c: cGraph?.median_ns, inC: inC?.median_ns, paired: paired(f, inC), py: pyGraph?.median_ns, nodes: f.extra });
  }
  const mmRows = [];
  for (const f of all.filter((x) => x.bench === "matmul" && x.side === "c")) {
    const [, type, size] = f.label.split(" ");
    const flops = 2 * Number(size) ** 3;
    const row = { type, size: Number(size), c: f.median_ns, cMin: f.min_ns, cGflops: flops / f.median_ns, sides: {} };
    for (const side of [...TS, ...PEER]) {
      const g = all.find((x) => x.side === side && x.bench === "matmul" && x.label === f.label);
      const inC = all.find((x) => x.side === side && x.bench === "matmul" && x.label.startsWith(`${f.label} ${IN_C}`));
      if (g) row.sides[side] = { ns: g.median_ns, min: g.min_ns, paired: paired(g, inC), pairedMin: pairedMin(g, inC), gflops: flops / g.median_ns, sameResult: Math.abs(g.extra - f.extra) <= 1e-3 * Math.max(1, Math.abs(f.extra)) };
    }
    mmRows.push(row);
  }
  const memcpy = find("c", "memcpy");


  // Targets.
  const mmPaired = mmRows.flatMap((r) => TS.filter((s) => r.sides[s]?.paired !== undefined).map((s) => r.sides[s].paired));
  const tsMm = mmRows.flatMap((r) => TS.filter((s) => r.sides[s]).map((s) => r.sides[s].ns / r.c));
  const worstOf = (xs) => (xs.length ? Math.max(...xs) : NaN), bestOf = (xs) => (xs.length ? Math.min(...xs) : NaN);
  const mmWorst = worstOf(mmPaired);
  targets.push([
    "Compute within 3% of C (matmul, binding / C)",
    `C timed in the same process, in turn with the binding: median ${median(mmPaired).toFixed(3)}, range ${bestOf(mmPaired).toFixed(3)}–${mmWorst.toFixed(3)} over ${mmPaired.length} figures; against the C driver's own processes: median ${median(tsMm).toFixed(3)}, range ${bestOf(tsMm).toFixed(3)}–${worstOf(tsMm).toFixed(3)} (process-to-process swings of this VM)`,
    mmPaired.length && mmWorst <= 1.03 ? "met" : mmPaired.length && median(mmPaired) <= 1.03 ? "met at the median; not every figure" : "not met",
  ]);
  const gApi = graphRows.filter((r) => r.kind === "API");
  targets.push([
    "Graph construction within 2× of C (API)",
    gApi.map((r) => `${r.side} ${r.paired?.toFixed(2)}× (C's own process: ${(r.ns / r.c).toFixed(2)}×)`).join(", ") + "; C timed in the same process",
    gApi.length && gApi.every((r) => r.paired <= 2) ? "met" : gApi.some((r) => r.paired <= 2) ? `met on ${gApi.filter((r) => r.paired <= 2).map((r) => r.side).join(", ")}` : "not met",
  ]);
  // A runtime's per-call figure: its fastest binding path (`handles` where they are bigints and beat `symbols`).
  const rawOver = [];
  for (const side of ["deno", "bun"]) for (const bench of ["nelements", "nbytes"]) {
    const rows = perCall.filter((r) => r.side === side && r.bench === bench && r.kind !== "API" && r.overhead !== undefined);
    if (rows.length) rawOver.push(rows.reduce((a, b) => (b.overhead < a.overhead ? b : a)));
  }
  targets.push(["Per-call overhead under 15 ns on Deno and Bun (raw nelements/nbytes, minus C's call)", rawOver.map((r) => `${r.side} ${r.bench} +${r.overhead.toFixed(1)} ns`).join(", "), rawOver.length && rawOver.every((r) => r.overhead < 15) ? "met" : rawOver.some((r) => r.overhead < 15) ? `not met (under 15 ns: ${rawOver.filter((r) => r.overhead < 15).map((r) => `${r.side} ${r.bench}`).join(", ")})` : "not met"]);
  if (peer.ok) {
    const vsPy = [];
    for (const r of perCall.filter((x) => x.kind === "raw")) if (r.py) vsPy.push([`${r.side} ${r.bench}`, r.ns / r.py]);
    for (const r of graphRows.filter((x) => x.kind === "API")) if (r.py) vsPy.push([`${r.side} graph`, r.ns / r.py]);
    for (const r of mmRows) for (const s of TS) if (r.sides[s] && r.sides["ggml-python"]) vsPy.push([`${s} matmul ${r.type} ${r.size}`, r.sides[s].ns / r.sides["ggml-python"].ns]);
    const behind = vsPy.filter(([, x]) => x > 1);
    targets.push(["Every figure ahead of ggml-python (time ratio < 1)", `${vsPy.length - behind.length} of ${vsPy.length} ahead` + (behind.length ? `; behind: ${behind.map(([k, x]) => `${k} ${x.toFixed(2)}×`).join(", ")}` : ""), behind.length === 0 ? "met" : "not met"]);
  } else {
    targets.push(["Every figure ahead of ggml-python", `no peer: ${peer.why}`, "not measured"]);
  }

  out("# bench/RESULTS.md");
  out();
  out(`Generated by \`node bench/run.mjs${quick ? " --quick" : ""}\` (\`npm run bench\`, \`deno task bench\`) on ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC in ${Math.round(seconds)} s.`);
  out();
  out(`> **Load:** 1-minute load average ${loadBefore.toFixed(2)} when the benchmarks started (after the set-up, waiting up to 3 min for it to fall below 0.5) on ${cpus().length} cores${loadBefore > 0.5 ? " (other jobs were running: absolute figures carry noise)" : ""};`);
  out("> every ratio below compares figures taken in the same run, sides interleaved, medians of medians.");
  out();
  out("## Machine and runtimes");
  out();
  out(`- CPU: ${mach.model} (${mach.vendor}, family ${mach.family}), ${mach.cores} cores, ${mach.mhz} MHz (/proc/cpuinfo)`);
  out(`- SIMD flags: ${mach.flags.join(" ")}`);
  out(`- CPU variant loaded by both the TS loader and the C driver: ${[...new Set(all.filter((f) => f.side !== "ggml-python").map((f) => f.variant))].join(", ")}`);
  for (const [k, v] of Object.entries(vers)) out(`- ${k}: ${v}`);
  out();
  out(`Estimated peak (f32): cores × clock × f32 lanes × FMA units × 2 = ${mach.cores} × ${(mach.mhz / 1000).toFixed(3)} GHz × ${mach.flopsPerCycle} FLOP/cycle = **${mach.peakGflops.toFixed(1)} GFLOP/s** (${mach.simd}: ${mach.flopsPerCycle / 2} f32 FMA per cycle per core). It is an upper bound for f32; the f16/q8_0/q4_0 kernels convert or dot integers, so their fraction of this peak measures the kernel, not the binding.`);
  out();
  out("## Targets (issue 8)");
  out();
  out("| target | measured | verdict |");
  out("|---|---|---|");
  for (const [t, m, v] of targets) out(`| ${t} | ${m} | **${v}** |`);
  out();
  out("## (a) Per-call overhead");
  out();
  out("One call per iteration in a loop of n; ns per iteration. *raw* is the generated binding as the library calls it (`loadLibrary().symbols`, through the runtime's adapter: Deno `Deno.dlopen`, Bun `bun:ffi`, Node koffi; Deno and Bun call the number-ABI wrappers `wsp_num_*`, which take and return pointers and 64-bit integers as doubles, so C's side of each call includes that wrapper); *API* is the public API: `Tensor.nelements` / `Tensor.nbytes` are computed in JS from the struct layout (no FFI call), `ctx.add` checks its operands and, while the no_alloc context has room for any op's objects, calls ggml directly with the runtime's native handles (a fresh no_alloc `Context` per 1000 nodes, the API has no reset). C: the same loop in bench/driver.c (wsp_ggml_add with a reset every 1000 nodes). *napi probe* (Node only) is the raw loop through bench/napi_probe.c, a Node-API module written the fastest way node_api.h allows, and a Node-API function that does nothing: what an addon of our own would gain over koffi, and Node-API's floor.");
  out();
  out("| benchmark | runtime | what | time | C | ratio to C | overhead vs C | ggml-python | ratio to ggml-python |");
  out("|---|---|---|---|---|---|---|---|---|");
  for (const r of perCall) out(`| ${r.bench} | ${r.side} | ${r.label} | ${fmtNs(r.ns)} | ${r.c ? fmtNs(r.c) : "—"} | ${ratio(r.ns, r.c)} | ${r.overhead !== undefined ? (r.overhead >= 0 ? "+" : "") + r.overhead.toFixed(1) + " ns" : "—"} | ${r.py ? fmtNs(r.py) : "—"} | ${ratio(r.ns, r.py)} |`);
  out();
  out("## (b) Shape queries: struct layout vs FFI calls");
  out();
  out("| runtime | what | time | reference (C) | ratio to C | vs the FFI calls | ggml-python | ratio to ggml-python |");
  out("|---|---|---|---|---|---|---|---|");
  for (const r of shapeRows) out(`| ${r.side} | ${r.label} | ${fmtNs(r.ns)} | ${r.cLabel} ${r.c ? fmtNs(r.c) : "—"} | ${ratio(r.ns, r.c)} | ${r.vsRaw ? ratio(r.ns, r.vsRaw) : "—"} | ${r.py ? fmtNs(r.py) : "—"} | ${ratio(r.ns, r.py)} |`);
  out();
  out("## (c) Graph construction");
  out();
  out(`A 334-layer MLP (\`relu(add(mulMat(W, h), b))\` per layer): ${cGraph?.extra ?? "?"} nodes, built from nothing per iteration (no_alloc context, 669 tensors, the ops, a 2048-node graph, buildForwardExpand, free). C and the raw rows make each context over one reused buffer, as llama.cpp does with its compute-meta buffer; the API recycles a freed context's pool the same way. The time of one process's graphs is bimodal on this VM (C: ~120 or ~210 µs per graph, from one process to the next), so each TS process also times C's own loop (bench/work.c, the driver's code, loaded as libwsp-bench-work) in turn with the API and raw loops: *same process* is the median over 7 processes × 11 rounds of API (or raw) / C, each ratio of two samples taken one after the other. *C driver* is the C driver's own processes (median of 7), the reference a reader can rerun alone. The *napi probe* row (Node) is the raw loop with its five hot functions (new_tensor_1d/2d, mul_mat, add, relu) called through bench/napi_probe.c, a Node-API module, instead of koffi.`);
  out();
  out("| runtime | path | time per graph | C, same process | ratio, same process | C driver | ratio to C driver | ggml-python | ratio to ggml-python |");
  out("|---|---|---|---|---|---|---|---|---|");
  for (const r of graphRows) out(`| ${r.side} | ${r.label} | ${fmtNs(r.ns)} | ${r.inC ? fmtNs(r.inC) : "—"} | ${r.paired ? r.paired.toFixed(2) : "—"} | ${r.c ? fmtNs(r.c) : "—"} | ${ratio(r.ns, r.c)} | ${r.py ? fmtNs(r.py) : "—"} | ${ratio(r.ns, r.py)} |`);
  if (pyGraph) out(`| ggml-python | ctypes | ${fmtNs(pyGraph.median_ns)} | | | ${cGraph ? fmtNs(cGraph.median_ns) : "—"} | ${ratio(pyGraph.median_ns, cGraph?.median_ns)} | | |`);
  out();
  out("## (d) Compute: matmul, nThreads = 2");
  out();
  out("`a` [n, n] of the type (weights from a fixed LCG, converted or quantized), `b` [n, n] f32, `mulMat(a, b)`, one `graph.compute` per sample (the CPU backend's `graph_compute`); 2n³ flops. Every side computes the same numbers (the checksum of 16 outputs agrees: ✓). ggml-python carries its own, newer ggml build (its sdist's vendored tree, built by pip with CMake: Release, `-march=native`, OpenMP when the compiler has it), so its column compares builds as well as bindings: *C driver / ggml-python* is the build's share, which the binding cannot change. (zig compiles C at `-O2` in ReleaseFast; an `-O3` build of the icelake variant measured the same: f32/f16/q4_0 at 512 within ±3%, no consistent direction.)");
  out();
  out("On this VM a process's two compute threads sometimes share one vCPU for the whole process (a fresh thread per compute lands beside the main thread), and whole processes run 10–30% apart, on any side. So each TS process also times the same compute of the same graph on the same backend from C (bench/work.c, `wsp_bench_compute`), sampled in turn with `graph.compute`: *binding / C* is the median, over every round of every process (n = 512: 7 processes, 1024: 5, 2048: 2), of the ratio of the two samples taken one after the other, and in brackets the median over processes of each process's ratio of fastest samples. *vs C driver* is the ratio of medians to the C driver's own processes, which carries those swings; the C driver's time is the C column.");
  out();
  out(`| type | n | C driver | C GFLOP/s | % of peak | ${TS.map((s) => `${s} / C (same process) | ${s} vs C driver`).join(" | ")} | ggml-python | ggml-python GFLOP/s | C driver / ggml-python | ${TS.map((s) => `${s} / ggml-python`).join(" | ")} |`);
  out(`|---|---|---|---|---|${TS.map(() => "---|---|").join("")}---|---|---|${TS.map(() => "---|").join("")}`);
  for (const r of mmRows) {
    const py = r.sides["ggml-python"];
    const ts = TS.map((s) => {
      const x = r.sides[s];
      if (!x) return "— | —";
      const same = x.paired !== undefined ? `${x.paired.toFixed(3)} (${x.pairedMin.toFixed(3)})` : "—";
      return `${same}${x.sameResult ? " ✓" : " ✗"} | ${(x.ns / r.c).toFixed(3)}`;
    }).join(" | ");
    const tsPy = TS.map((s) => (r.sides[s] && py ? (r.sides[s].ns / py.ns).toFixed(2) : "—")).join(" | ");
    out(`| ${r.type} | ${r.size} | ${fmtNs(r.c)} | ${r.cGflops.toFixed(1)} | ${((100 * r.cGflops) / mach.peakGflops).toFixed(0)}% | ${ts} | ${py ? `${fmtNs(py.ns)}${py.sameResult ? " ✓" : " ✗"}` : "—"} | ${py ? py.gflops.toFixed(1) : "—"} | ${py ? (r.c / py.ns).toFixed(2) : "—"} | ${tsPy} |`);
  }
  out();
  out("## (e) Data movement: 64 MiB");
  out();
  out("| runtime | what | time | GB/s | C memcpy | ratio to memcpy |");
  out("|---|---|---|---|---|---|");
  for (const side of TS) for (const bench of ["data-set", "data-get", "data-view"]) {
    const f = find(side, bench);
    if (!f) continue;
    const view = bench === "data-view";
    out(`| ${side} | ${f.label} | ${fmtNs(f.median_ns)} | ${view ? "—" : ((64 << 20) / f.median_ns).toFixed(1)} | ${memcpy ? fmtNs(memcpy.median_ns) : "—"} | ${view ? `${(f.median_ns / (memcpy?.median_ns ?? NaN)).toExponential(1)} (zero-copy)` : ratio(f.median_ns, memcpy?.median_ns)} |`);
  }
  out();
  out("`set` copies from a JS Float32Array into the tensor (in the context's pool); `get` allocates a new array and copies into it (so it pays page faults a preallocated memcpy does not); `view` builds the typed array over the data (no copy).");
  out();
  out("## (f) Training the demo model");
  out();
  out("examples/demo's MLP (2 → 64 → 64 → 3, relu), spirals (2400 training points), batch 32, ggml-opt AdamW (lr 0.005) with cross-entropy on the CPU backend through the scheduler, 1 and 2 threads (the demo's default is 2), the 2 threads once started and joined by every compute (no threadpool, as in the demo) and once from a persistent `Threadpool` (`wsp_ggml_threadpool_new`, the same on the C side); one `epoch` (75 optimizer steps) per sample, no progress callback on either side. The C side (bench/work.c, shared by the C driver and libwsp-bench-work) trains the same model on data of the same shape (its own spirals and initial weights), so its loss differs, its work per step does not. Each TS process also runs that C training on the same backend (threads, threadpool and abort callback alike), one epoch in turn with each of the binding's: *same process* is the median over 3 processes × 7 epochs of binding / C, each ratio of two epochs run one after the other; *C driver* is the C driver's own processes, which carry this VM's process-to-process swings (a 2-thread process's speed is bimodal).");
  out();
  out("| threads | runtime | time per step | steps/s | C, same process | ratio, same process | C driver | ratio to C driver |");
  out("|---|---|---|---|---|---|---|---|");
  for (const { threads, pool } of TRAIN_CONFIGS) {
    const label = `one optimizer step, ${threads} thread${threads === 1 ? "" : "s"}${pool ? ", threadpool" : ""}`;
    const col = `${threads}${pool ? ", threadpool" : ""}`;
    const cTrain = find("c", "train", label);
    if (cTrain) out(`| ${col} | C driver | ${fmtNs(cTrain.median_ns)} | ${(1e9 / cTrain.median_ns).toFixed(0)} | | | ${fmtNs(cTrain.median_ns)} | 1.00 |`);
    for (const side of TS) {
      const f = all.find((x) => x.side === side && x.bench === "train" && x.label === label);
      const inC = find(side, "train", `${label} ${IN_C}`);
      const same = paired(f, inC);
      if (f) out(`| ${col} | ${side} | ${fmtNs(f.median_ns)} | ${(1e9 / f.median_ns).toFixed(0)} | ${inC ? fmtNs(inC.median_ns) : "—"} | ${same ? same.toFixed(2) : "—"} | ${cTrain ? fmtNs(cTrain.median_ns) : "—"} | ${ratio(f.median_ns, cTrain?.median_ns)} |`);
    }
  }
  out();
  out("Without a threadpool every step's graph computes start and join their threads: with this small model that costs more than the second thread gains, and on this VM a fresh thread can land on its parent's vCPU and spin there at ggml's barriers (a whole process then runs many times slower, on any side). The threadpool rows keep the threads between computes. The single-thread row isolates the binding's share.");
  out();
  if (!peer.ok) {
    out("## The peer");
    out();
    out(`ggml-python ${PEER_VERSION} could not be used: ${peer.why}`);
    out();
  }
  out("Raw figures (every run's median, samples, params): bench/results.json.");
  return { text: lines.join("\n") + "\n", targets };
}

// ---- main ---------------------------------------------------------------------------------------

const peer = setup();
const loadBefore = settleLoad();
const mach = machine();
const vers = versions(peer);
const figures = runAll(plan(peer.ok));
const seconds = (Date.now() - started) / 1000;
const { text, targets } = report(figures, mach, vers, peer, seconds);
// The sections of the other runners (llm_run.mjs, whisper_run.mjs, rpc.mjs, index_scan.mjs) are theirs: keep them.
const resultsFile = join(root, "bench", "RESULTS.md");
const old = existsSync(resultsFile) ? readFileSync(resultsFile, "utf8") : "";
// (llm_run.mjs writes one section per model: `llm:begin` for Gemma, `llm:<id>:begin` for the others.)
const kept = [...old.matchAll(/<!-- (llm(?::[\w.-]+)?|whisper|rpc|indices):begin[\s\S]*?<!-- \1:end -->/g)].map((m) => m[0]);
writeFileSync(resultsFile, [text.trimEnd(), ...kept].join("\n\n") + "\n");
writeFileSync(join(root, "bench", "results.json"), JSON.stringify({ quick, runs: RUNS, seconds, machine: mach, versions: vers, peer, targets, figures: [...figures.values()] }, null, 1) + "\n");
log(`wrote bench/RESULTS.md and bench/results.json in ${seconds.toFixed(0)} s`);
for (const [t, m, v] of targets) log(`${v.toUpperCase()}: ${t}: ${m}`);
