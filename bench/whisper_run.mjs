#!/usr/bin/env node
// The speech-to-text benchmark (`npm run bench:whisper`): real-time factor (audio seconds / wall
// seconds of the transcription itself, the model load excluded) of Whisper base q8_0 on the
// espeak-ng clips of scripts/speech.mjs, on every side with the same converted model file, the
// same audio, the same thread count, greedy decoding, language "en" and flash attention set alike:
//
//   - the reference: whisper.cpp's own CLI program (examples/cli/cli.cpp of whisper.cpp 1.9.1, the
//     third pin, built by `zig build whisper-cli` against the same libwsp-whisper / libwsp-ggml:
//     zig-out/bin/wsp-whisper-cli), `-bs 1` (greedy, as the others), `-ng`; its time is the sum of
//     its own whisper_print_timings stages (mel, sample, encode, decode, batchd, prompt), one
//     process per run;
//   - the binding (bench/whisper.ts) on Deno, Bun and Node: `Transcript.elapsedMs` (whisper.cpp's
//     run alone) and the wall time of the whole `transcribe()` promise;
//   - C: whisper.cpp called by native/whisper/driver.c (zig-out/bin/wsp-whisper-driver, the same
//     libwsp-whisper / libwsp-ggml), its `time_ms:` (whisper_full alone), one process per run;
//   - pywhispercpp (PyPI, its own whisper.cpp wheels; bench/whisper_peer_pywhispercpp.py) in the
//     git-ignored .cache/bench-whisper-venv/;
//   - @fugood/whisper.node (npm, whisper.rn's API for Node; bench/whisper_peer_node.mjs) installed
//     with install scripts off into the git-ignored .cache/whisper-node-peer/, not a dependency.
//
// Processes run in rounds with the sides interleaved (C, deno, bun, node, pywhispercpp,
// whisper.node, then again), so background load hits every side alike; each figure is the median
// over all runs of all rounds. The binding's transcript must equal the C driver's exactly; the
// peers' are shown beside it.
//
//   node bench/whisper_run.mjs [--rounds 3] [--reps 2] [--peer-reps 1] [--threads 1]
//     [--flash-attn 0|1] [--clips paragraph,long] [--only whisper-cli,c,deno,bun,node,pywhispercpp,whisper.node]
//     [--no-build] [--no-write]
//
// --reps: transcriptions of each clip per process and round (C: processes); --peer-reps: the same
// for @fugood/whisper.node, whose linux-x64 build has no AVX and runs about 10x slower.
// Writes the "Speech to text" section of bench/RESULTS.md (between its markers) and
// bench/whisper_results.json.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeResultsSection } from "./results_md.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(opt("--rounds", "3")), REPS = Number(opt("--reps", "2")), PEER_REPS = Number(opt("--peer-reps", "1"));
const THREADS = Number(opt("--threads", "1")), FLASH = opt("--flash-attn", "0") === "0" ? "0" : "1";
const CLIPS = opt("--clips", "paragraph,long").split(",");
const ONLY = opt("--only", "whisper-cli,c,deno,bun,node,pywhispercpp,whisper.node").split(",");
const bin = (name) => join(root, "node_modules", ".bin", name);
const started = Date.now();
const exe = process.platform === "win32" ? ".exe" : "";

/** Pinned peer versions (the ones measured); change them here. */
const PYWHISPERCPP = "1.5.1", WHISPER_NODE = "1.1.3";
const VENV = join(root, ".cache", "bench-whisper-venv");
const VENV_PY = join(VENV, process.platform === "win32" ? "Scripts/python.exe" : "bin/python");
const NODE_PEER = join(root, ".cache", "whisper-node-peer");
const DRIVER = join(root, "zig-out", "bin", `wsp-whisper-driver${exe}`);
const CLI = join(root, "zig-out", "bin", `wsp-whisper-cli${exe}`);

/** The markers of the section this script owns in bench/RESULTS.md. */
const BEGIN = "<!-- whisper:begin (bench/whisper_run.mjs) -->", END = "<!-- whisper:end -->";

const log = (m) => process.stderr.write(`[bench:whisper ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${m}\n`);
const loads = () => loadavg().map((x) => Math.round(x * 100) / 100);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const tail = (s, n = 5) => (s ?? "").trim().split("\n").slice(-n).join(" / ");
/** Paths of this machine stay out of the files: a clip is named by its id, the model by its file name. */
const rel = (p) => (p.startsWith(root) ? p.slice(root.length + 1) : basename(p));

// ---- setup -------------------------------------------------------------------------------------

const why = {}; // side → why it could not run
if (!argv.includes("--no-build")) {
  log("node scripts/zig.mjs build whisper-driver");
  const b = spawnSync(process.execPath, ["scripts/zig.mjs", "build", "whisper-driver"], { cwd: root, stdio: "inherit" });
  if (b.status !== 0) why.c = `zig build whisper-driver failed (${b.status ?? b.signal})`;
}
if (!existsSync(DRIVER)) why.c ??= "zig-out/bin/wsp-whisper-driver is not built";
if (ONLY.includes("whisper-cli") && !argv.includes("--no-build")) {
  log("node scripts/zig.mjs build whisper-cli");
  const b = spawnSync(process.execPath, ["scripts/zig.mjs", "build", "whisper-cli"], { cwd: root, stdio: "inherit" });
  if (b.status !== 0) why["whisper-cli"] = `zig build whisper-cli failed (${b.status ?? b.signal}); run \`node scripts/vendor.mjs\` if vendor/whisper-cli/ is missing`;
}
if (!existsSync(CLI)) why["whisper-cli"] ??= "zig-out/bin/wsp-whisper-cli is not built";

log("the model (ensureWhisperModel q8_0) and the speech clips");
const prep = spawnSync(process.execPath, ["--import", "tsx", "-e", `
  const { ensureWhisperModel } = await import("./src/whisper/model_fetch.ts");
  const { speechFiles } = await import("./scripts/speech.mjs");
  const model = await ensureWhisperModel({ type: "q8_0" });
  console.log(JSON.stringify({ model, clips: speechFiles() }));`], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
if (prep.status !== 0) throw new Error("the model or the speech clips could not be made (see above)");
const { model, clips: allClips } = JSON.parse(prep.stdout.trim().split("\n").pop());
const clips = CLIPS.map((id) => {
  const c = allClips.find((x) => x.id === id);
  if (!c) throw new Error(`no clip ${id} (there are: ${allClips.map((x) => x.id).join(", ")})`);
  return c;
});

if (ONLY.includes("pywhispercpp")) {
  const have = existsSync(VENV_PY) && spawnSync(VENV_PY, ["-c", `import importlib.metadata as m; assert m.version("pywhispercpp") == "${PYWHISPERCPP}"`]).status === 0;
  if (!have) {
    log(`pywhispercpp ${PYWHISPERCPP} into .cache/bench-whisper-venv (pip)`);
    const py = process.platform === "win32" ? "python" : "python3";
    const v = existsSync(VENV_PY) ? { status: 0 } : spawnSync(py, ["-m", "venv", VENV], { encoding: "utf8" });
    const p = v.status === 0 ? spawnSync(VENV_PY, ["-m", "pip", "install", "-q", `pywhispercpp==${PYWHISPERCPP}`], { encoding: "utf8", timeout: 900_000 }) : v;
    if (p.status !== 0) why.pywhispercpp = `pip install pywhispercpp==${PYWHISPERCPP} failed: ${tail(p.stderr ?? p.error?.message, 3)}`;
  }
}
let whisperNodeNoAvx = null;
if (ONLY.includes("whisper.node")) {
  const plat = `@fugood/node-whisper-${process.platform}-${process.arch}`;
  const pkg = join(NODE_PEER, "node_modules", "@fugood", "whisper.node", "package.json");
  const have = existsSync(pkg) && JSON.parse(readFileSync(pkg, "utf8")).version === WHISPER_NODE && existsSync(join(NODE_PEER, "node_modules", plat));
  if (!have) {
    log(`@fugood/whisper.node ${WHISPER_NODE} into .cache/whisper-node-peer (npm, install scripts off, no GPU variants)`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const r = spawnSync(npm, ["install", "--prefix", NODE_PEER, "--no-save", "--no-package-lock", "--ignore-scripts", "--omit=optional", "--no-audit", "--no-fund",
      `@fugood/whisper.node@${WHISPER_NODE}`, `${plat}@${WHISPER_NODE}`], { encoding: "utf8", timeout: 900_000, shell: process.platform === "win32" });
    if (r.status !== 0) why["whisper.node"] = `npm install @fugood/whisper.node@${WHISPER_NODE} ${plat}@${WHISPER_NODE} failed: ${tail(r.stderr ?? r.error?.message, 3)}`;
  }
  // Does its prebuilt addon use AVX at all? Count the instructions on 256/512-bit registers.
  const addon = join(NODE_PEER, "node_modules", plat, "index.node");
  if (existsSync(addon) && process.arch === "x64") {
    const d = spawnSync("objdump", ["-d", "--no-show-raw-insn", addon], { encoding: "utf8", maxBuffer: 1 << 30 });
    if (d.status === 0) whisperNodeNoAvx = !/%[yz]mm\d/.test(d.stdout);
  }
}

// ---- the sides ---------------------------------------------------------------------------------

const wavs = clips.map((c) => c.path);
const common = ["--threads", String(THREADS), "--flash-attn", FLASH];
const ts = (cmd, pre) => ({ cmd, args: [...pre, "bench/whisper.ts", "--model", model, ...common, "--reps", String(REPS), ...wavs] });
const sides = {
  "whisper-cli": null, // one process per clip and run, below
  c: null, // one process per clip and run, below
  deno: ts(bin("deno"), ["run", "-A"]),
  bun: ts(bin("bun"), []),
  node: ts(process.execPath, ["--import", "tsx"]),
  pywhispercpp: { cmd: VENV_PY, args: ["bench/whisper_peer_pywhispercpp.py", "--model", model, ...common, "--reps", String(REPS), ...wavs] },
  "whisper.node": { cmd: process.execPath, args: ["bench/whisper_peer_node.mjs", "--model", model, ...common, "--reps", String(PEER_REPS), "--peer-dir", NODE_PEER, ...wavs] },
};
const order = Object.keys(sides).filter((s) => ONLY.includes(s));

function runJson(name, { cmd, args }) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", timeout: 1_800_000, maxBuffer: 64 << 20 });
  const line = (r.stdout ?? "").trim().split("\n").filter((l) => l.startsWith("{")).pop();
  if (r.status !== 0 || !line) throw new Error(`${name} failed (${r.status ?? r.signal ?? r.error?.message}): ${tail(r.stderr)}`);
  return JSON.parse(line);
}

/** The C driver: one process per clip and run; its `time_ms:` is whisper_full alone. */
function runC() {
  const out = { clips: [] };
  for (const c of clips) {
    const ms = [];
    let text = "";
    for (let r = 0; r < REPS; r++) {
      const p = spawnSync(DRIVER, [model, c.path, "--threads", String(THREADS), "--language", "en", "--flash-attn", FLASH], { cwd: root, encoding: "utf8", timeout: 1_800_000 });
      const m = /time_ms:\s*([\d.]+)/.exec(p.stderr ?? "");
      if (p.status !== 0 || !m) throw new Error(`the C driver failed on ${c.id} (${p.status ?? p.signal}): ${tail(p.stderr)}`);
      ms.push(Number(m[1]));
      text = p.stdout.replace(/\r?\n$/, "");
      out.systemInfo ??= /system_info: (.*)/.exec(p.stderr)?.[1]?.trim() ?? null;
    }
    out.clips.push({ file: c.path, seconds: c.seconds, elapsedMs: ms, text });
  }
  return out;
}

/**
 * whisper.cpp's CLI: one process per clip and run. Its time is the sum of its own stage timings
 * (mel, sample, encode, decode, batchd, prompt): the kernels' time, without the state set-up,
 * the WAV read and the printing that its total carries (kept as totalLessLoadMs).
 */
function runCli() {
  const out = { clips: [] };
  const seg = /^\[\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\]  (.*)$/;
  for (const c of clips) {
    const ms = [], wall = [], totalLessLoad = [];
    let text = "";
    for (let r = 0; r < REPS; r++) {
      const args = ["-m", model, "-f", c.path, "-t", String(THREADS), "-l", "en", "-bs", "1", "-ng", FLASH === "1" ? "-fa" : "-nfa"];
      const t0 = performance.now();
      const p = spawnSync(CLI, args, { cwd: root, encoding: "utf8", timeout: 1_800_000 });
      wall.push(performance.now() - t0);
      const stage = (name) => Number(new RegExp(`${name} time =\\s*([\\d.]+) ms`).exec(p.stderr ?? "")?.[1]);
      const stages = ["mel", "sample", "encode", "decode", "batchd", "prompt"].map(stage);
      if (p.status !== 0 || stages.some(Number.isNaN) || Number.isNaN(stage("total"))) throw new Error(`whisper-cli failed on ${c.id} (${p.status ?? p.signal}): ${tail(p.stderr)}`);
      ms.push(stages.reduce((x, y) => x + y, 0));
      totalLessLoad.push(stage("total") - stage("load"));
      text = p.stdout.split(/\r?\n/).map((l) => seg.exec(l)?.[1]).filter((t) => t !== undefined).join("");
      out.systemInfo ??= /system_info: (.*)/.exec(p.stderr)?.[1]?.trim() ?? null;
    }
    out.clips.push({ file: c.path, seconds: c.seconds, elapsedMs: ms, totalLessLoadMs: totalLessLoad, processWallMs: wall, text });
  }
  return out;
}

const loadStart = loads();
log(`load average at the start ${loadStart.join(" ")}; ${ROUNDS} round(s) of ${order.join(", ")}; clips ${clips.map((c) => `${c.id} (${c.seconds.toFixed(1)} s)`).join(", ")}`);
const processes = Object.fromEntries(order.map((s) => [s, []]));
const roundLoads = [];
for (let round = 1; round <= ROUNDS; round++) {
  roundLoads.push(loads());
  for (const name of order) {
    if (why[name]) continue;
    log(`round ${round}/${ROUNDS}: ${name}`);
    try {
      processes[name].push(name === "c" ? runC() : name === "whisper-cli" ? runCli() : runJson(name, sides[name]));
    } catch (e) {
      why[name] = String(e.message ?? e);
      log(`${name} could not run: ${why[name]}`);
    }
  }
}
const loadEnd = loads();
const seconds = (Date.now() - started) / 1000;

// ---- summary -----------------------------------------------------------------------------------

const ran = order.filter((s) => processes[s].length > 0 && !why[s]);
const summary = {};
for (const name of ran) {
  const ps = processes[name];
  summary[name] = {
    about: name === "c" ? "whisper.cpp from C (native/whisper/driver.c, the same libwsp-whisper)" : name === "whisper-cli" ? "whisper.cpp's CLI (whisper.cpp 1.9.1's examples/cli/cli.cpp, the same libwsp-whisper)" : ps[0].peer ?? `wsp-ggml on ${ps[0].runtime} (${ps[0].variant})`,
    version: ps[0].version ?? null,
    systemInfo: ps[0].systemInfo ?? null,
    loadMs: ps[0].loadMs !== undefined ? median(ps.map((p) => p.loadMs)) : null,
    clips: Object.fromEntries(clips.map((c, i) => {
      const runs = ps.map((p) => p.clips[i]);
      const el = runs.flatMap((r) => r.elapsedMs ?? r.wallMs), wall = runs.flatMap((r) => r.wallMs ?? r.elapsedMs);
      const texts = [...new Set(runs.map((r) => r.text))];
      return [c.id, {
        seconds: c.seconds,
        runs: el.length,
        elapsedMs: median(el),
        elapsedRange: [Math.min(...el), Math.max(...el)],
        wallMs: median(wall),
        rtf: c.seconds / (median(el) / 1000),
        rtfWall: c.seconds / (median(wall) / 1000),
        rtfBest: c.seconds / (Math.min(...el) / 1000),
        text: texts[0],
        stable: texts.length === 1,
      }];
    })),
  };
}

const C = summary.c;
/** The reference side: whisper.cpp's CLI when it ran, else the C driver. */
const REF = summary["whisper-cli"] ? "whisper-cli" : "c", R = summary[REF];
const refName = REF === "whisper-cli" ? "CLI" : "C";
const isBinding = (n) => ["deno", "bun", "node"].includes(n);
const fmt = (x, d = 2) => (x === undefined || x === null || Number.isNaN(x) ? "—" : x.toFixed(d));
const date = new Date().toISOString().slice(0, 16).replace("T", " ");
const lines = [
  BEGIN,
  "## Speech to text: Whisper base q8_0 against whisper.cpp",
  "",
  `Generated by \`node bench/whisper_run.mjs\` (\`npm run bench:whisper\`) on ${date} UTC in ${seconds.toFixed(0)} s. ` +
    `Load average (1, 5, 15 min) ${loadStart.join(" / ")} at the start, ${loadEnd.join(" / ")} at the end (rounds started at 1-min ${roundLoads.map((l) => l[0]).join(", ")}). ` +
    `${ROUNDS} rounds, sides interleaved (${order.join(", ")}); in each, ${REPS} transcriptions of each clip per side (C: one process each; @fugood/whisper.node: ${PEER_REPS}). ` +
    `Model \`${basename(model)}\` (Whisper base converted by \`ensureWhisperModel({ type: "q8_0" })\`), the same file on every side; ` +
    `${THREADS} thread(s), greedy, language "en", temperature fallback 0.2 (whisper.cpp's default), flash attention ${FLASH === "1" ? "on" : "off"} on every side, CPU only.`,
  "",
  `RTF = audio seconds / seconds of the transcription (the model load excluded; > 1: faster than real time), median of all runs [range]. ` +
    `Binding: \`Transcript.elapsedMs\` (whisper.cpp's run, the native job alone) and, in *wall*, the whole \`transcribe()\` promise (checks, parameters, 25 ms poll, reading segments and tokens). ` +
    `CLI (the reference): whisper.cpp's own \`whisper-cli\` program, the sum of its \`whisper_print_timings\` stages (mel, sample, encode, decode, batchd, prompt): the strict side, since whisper_full's work between the stages, which the binding's and C's times include, is not in it. ` +
    `C: the driver's \`time_ms\` (\`whisper_full\` alone), the cross-check with the least around the call. Peers: the wall time of their transcribe call. Ratio = RTF / the ${refName}'s RTF (≥ 1: as fast or faster; target for the binding ≥ 0.98). ` +
    `*best / ${refName} best*: the fastest run against the ${refName}'s fastest, the least disturbed runs on a shared machine: the steadier comparison when the load moves during the rounds.`,
  "",
  `| side | ${clips.map((c) => `${c.id} (${c.seconds.toFixed(1)} s) RTF`).join(" | ")} | ${clips.map((c) => `${c.id} ms`).join(" | ")} | ${clips.map((c) => `${c.id} / ${refName}`).join(" | ")} | ${clips.map((c) => `${c.id} wall / ${refName}`).join(" | ")} | ${clips.map((c) => `${c.id} best / ${refName} best`).join(" | ")} | ${clips.map((c) => `${c.id} / C driver`).join(" | ")} |`,
  `|---|${clips.map(() => "---|").join("").repeat(6)}`,
];
for (const name of ran) {
  const s = summary[name];
  const cell = (id) => {
    const k = s.clips[id];
    return `${fmt(k.rtf)} [${fmt(k.seconds / (k.elapsedRange[1] / 1000))}–${fmt(k.seconds / (k.elapsedRange[0] / 1000))}]`;
  };
  const ratio = (id, key) => (name === REF ? "—" : `**${fmt(s.clips[id][key] / R.clips[id].rtf)}**`);
  const label = name === "c" ? "C (driver.c)" : name === "whisper-cli" ? "whisper.cpp's CLI (reference)" : isBinding(name) ? `wsp-ggml, ${s.about.replace(/^wsp-ggml on /, "")}` : s.about;
  lines.push(`| ${label} | ${clips.map((c) => cell(c.id)).join(" | ")} | ${clips.map((c) => `${fmt(s.clips[c.id].elapsedMs, 0)}${isBinding(name) ? ` (wall ${fmt(s.clips[c.id].wallMs, 0)})` : ""}`).join(" | ")} | ${clips.map((c) => ratio(c.id, "rtf")).join(" | ")} | ${clips.map((c) => (isBinding(name) ? ratio(c.id, "rtfWall") : "—")).join(" | ")} | ${clips.map((c) => (name === REF ? "—" : fmt(s.clips[c.id].rtfBest / R.clips[c.id].rtfBest))).join(" | ")} | ${clips.map((c) => (name === "c" || !C ? "—" : fmt(s.clips[c.id].rtf / C.clips[c.id].rtf))).join(" | ")} |`);
}
for (const [name, reason] of Object.entries(why)) lines.push(`| ${name} | could not run: ${reason.replaceAll("|", "\\|").replace(/\s+/g, " ").slice(0, 300)} |`);

lines.push("", "Transcripts (the binding's must equal C's exactly; the peers may differ):", "");
for (const c of clips) {
  const ref = C?.clips[c.id].text;
  lines.push(`- **${c.id}**, C: ${JSON.stringify(ref ?? "(C did not run)")}`);
  for (const name of ran.filter((n) => n !== "c")) {
    const k = summary[name].clips[c.id];
    const same = ref === undefined ? "" : k.text === ref ? "identical to C" : k.text.trim() === ref.trim() ? "identical to C but for outer spaces" : "DIFFERS from C";
    const show = ref !== undefined && k.text === ref ? "" : `: ${JSON.stringify(k.text)}`;
    lines.push(`  - ${name}: ${same}${k.stable ? "" : " (not the same in every run)"}${show}`);
  }
}
lines.push("", "Builds:", "");
const infoLine = (name) => summary[name]?.systemInfo ? `\`${summary[name].systemInfo.replace(/\s*\|\s*$/, "")}\`` : "—";
if (summary.deno || summary.bun || summary.node) lines.push(`- wsp-ggml (libwsp-whisper, CPU variant ${(processes.deno?.[0] ?? processes.bun?.[0] ?? processes.node?.[0]).variant}): ${infoLine(summary.deno ? "deno" : summary.bun ? "bun" : "node")}`);
if (summary["whisper-cli"]) lines.push("- whisper.cpp's CLI: whisper.cpp 1.9.1's `examples/cli/cli.cpp` (and the example files it compiles with) from the npm package nodejs-whisper 0.3.1 (the third pin, vendor/manifest.json), compiled unchanged by zig against the same `libwsp-whisper` (whisper.rn's whisper.cpp 1.8.0) and `libwsp-ggml`, the CPU variant chosen by ggml's registry: " + infoLine("whisper-cli"));
if (summary.c) lines.push("- C driver: the same `libwsp-whisper` and `libwsp-ggml` from zig-out/lib, the same CPU variant chosen by ggml's registry (highest score).");
if (summary.pywhispercpp) lines.push(`- pywhispercpp ${summary.pywhispercpp.version} (its own whisper.cpp and ggml in the wheel, OpenMP; flash attention set through \`context_params={"flash_attn": …}\`): ${infoLine("pywhispercpp")}`);
if (summary["whisper.node"] || why["whisper.node"]) {
  lines.push(`- @fugood/whisper.node ${WHISPER_NODE} (prebuilt \`@fugood/node-whisper-${process.platform}-${process.arch}\`; flash attention set through \`useFlashAttn\`)` +
    (whisperNodeNoAvx === true ? ": its addon has no AVX instruction at all (objdump finds no ymm/zmm register), so ggml runs its SSE/scalar paths — the ~10x gap is the build, not the binding." : whisperNodeNoAvx === false ? ": its addon uses AVX registers." : "."));
}
lines.push("", END);
// No path of this machine in the files: the checkout's root becomes ".".
const section = lines.join("\n").replaceAll(root, ".");

if (!argv.includes("--no-write")) {
  writeResultsSection(root, BEGIN, END, section);
  // Paths of this machine stay out of the JSON: clips by id, the model by its file name.
  const clean = (p) => ({ ...p, clips: p.clips.map(({ file, ...k }, i) => ({ id: clips[i].id, ...k })), modelInfo: undefined });
  writeFileSync(join(root, "bench", "whisper_results.json"), JSON.stringify({
    date, seconds, loadStart, loadEnd, roundLoads, rounds: ROUNDS, reps: REPS, peerReps: PEER_REPS, threads: THREADS, flashAttn: FLASH === "1",
    model: basename(model), clips: clips.map((c) => ({ id: c.id, seconds: c.seconds, file: rel(c.path) })), whisperNodeNoAvx,
    couldNotRun: why, summary, processes: Object.fromEntries(Object.entries(processes).map(([k, ps]) => [k, ps.map(clean)])),
  }, null, 1).replaceAll(root, ".") + "\n");
  log("wrote the Speech to text section of bench/RESULTS.md and bench/whisper_results.json");
}
console.log(section);
