#!/usr/bin/env node
// RPC over loopback (`npm run bench:rpc`): what a compute on ggml's RPC server costs against the
// same compute on the local CPU backend, and how many bytes it moves. Writes the "RPC over
// loopback" section of bench/RESULTS.md (between its markers; the other sections are left as they
// are, the file is read again just before writing) and bench/rpc_results.json.
//
//   node bench/rpc.mjs [--runs N] [--rounds R] [--iters M] [--runtimes node,bun,deno] [--no-write]
//
// The server is `wsp-ggml rpc-server --threads 1` on Node in a child process, bound to 127.0.0.1;
// the timed side is bench/rpc.ts in a child process per runtime (a synchronous FFI call blocks its
// thread, so nothing else may run there). Latency: each process times every variant in R rounds of
// M calls, the variants' order rotated each round; the runner runs the runtimes' processes N times,
// interleaved, and reports the median of the process medians [range]. Bytes: ggml-rpc does not
// count them, so one extra Node process talks to the server through a TCP proxy here that counts
// both directions, phase by phase (set-up, M calls, free).
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import net from "node:net";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generatedBy, writeResultsSection } from "./results_md.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const RUNS = Number(opt("--runs", "3")), ROUNDS = opt("--rounds", "20"), ITERS = opt("--iters", "100"), BYTE_ITERS = 100;
const bin = (name) => join(root, "node_modules", ".bin", name);
const started = Date.now();
const BEGIN = "<!-- rpc:begin (bench/rpc.mjs) -->", END = "<!-- rpc:end -->";
const log = (m) => process.stderr.write(`[bench:rpc ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${m}\n`);

const sides = {
  node: [process.execPath, ["--import", "tsx", "bench/rpc.ts"]],
  bun: [bin("bun"), ["bench/rpc.ts"]],
  deno: [bin("deno"), ["run", "-A", "bench/rpc.ts"]],
};
const runtimes = opt("--runtimes", "node,bun,deno").split(",").filter((r) => r === "node" || existsSync(sides[r]?.[0] ?? ""));

const children = new Set();
const killAll = () => children.forEach((c) => c.kill("SIGKILL"));
process.on("exit", killAll);
for (const s of ["SIGINT", "SIGTERM"]) process.on(s, () => process.exit(130));

/** Spawns a child; `onLine` sees each stdout line; resolves with its output when it exits (at most ms). */
function run(cmd, args, { onLine, ms = 600_000 } = {}) {
  const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let out = "", err = "", partial = "";
  child.stdout.on("data", (d) => {
    out += d;
    partial += d;
    const lines = partial.split("\n");
    partial = lines.pop();
    for (const l of lines) onLine?.(l);
  });
  child.stderr.on("data", (d) => (err += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), ms);
  const done = new Promise((resolve) =>
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal, out, err });
    })
  );
  return { child, done };
}

/** The server: `wsp-ggml rpc-server --port 0 --threads 1` on Node; resolves with its endpoint. */
async function startServer() {
  let endpoint;
  const got = new Promise((resolve) => {
    const s = run(process.execPath, ["--import", "tsx", "src/cli/bin.ts", "rpc-server", "--port", "0", "--threads", "1"], {
      onLine: (l) => {
        const m = /serving .* on (\d+\.\d+\.\d+\.\d+:\d+)/.exec(l);
        if (m) resolve((endpoint = m[1]));
      },
    });
    s.done.then((r) => resolve(endpoint ?? Promise.reject(new Error(`the server exited (${r.code ?? r.signal}): ${r.err}`))));
  });
  const late = new Promise((_, reject) => setTimeout(() => reject(new Error("the server did not start in 60 s")), 60_000));
  return await Promise.race([got, late]);
}

/** A TCP proxy on 127.0.0.1 in front of `target` that counts the bytes each way. */
function countingProxy(target) {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  const count = { up: 0, down: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect({ host, port });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on("data", (d) => {
      count.up += d.length;
      upstream.write(d);
    });
    upstream.on("data", (d) => {
      count.down += d.length;
      client.write(d);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, count, endpoint: `127.0.0.1:${server.address().port}` })));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const load0 = loadavg();
log(`load average ${load0.map((l) => l.toFixed(2)).join(" / ")}; runtimes ${runtimes.join(", ")}`);
const endpoint = await startServer();
log(`server on ${endpoint}`);

// Bytes: one Node process through the proxy, phase by phase.
const proxy = await countingProxy(endpoint);
const marks = [];
const pending = [];
const bytesRun = run(sides.node[0], [...sides.node[1], "--endpoint", proxy.endpoint, "--mode", "bytes", "--iters", String(BYTE_ITERS)], {
  onLine: (l) => {
    const m = /^mark (\S+) (\S+) (\S+) (\d+)$/.exec(l);
    // The worker pauses 300 ms after each mark: by 150 ms every byte of the phase has passed here.
    if (m) pending.push(new Promise((r) => setTimeout(() => r(marks.push({ case: m[1].replace("_", " "), variant: m[2], phase: m[3], calls: Number(m[4]), up: proxy.count.up, down: proxy.count.down })), 150)));
  },
});
const br = await bytesRun.done;
await Promise.all(pending);
proxy.server.close();
if (br.code !== 0) throw new Error(`the bytes run failed (${br.code ?? br.signal}): ${br.err.trim().split("\n").slice(-5).join(" / ")}`);
const bytes = [];
for (let i = 0; i + 4 <= marks.length; i += 4) {
  const [start, setup, calls, free] = marks.slice(i, i + 4);
  const per = (a, b, n) => ({ up: (b.up - a.up) / n, down: (b.down - a.down) / n });
  bytes.push({ case: start.case, variant: start.variant, setup: per(start, setup, 1), call: per(setup, calls, calls.calls), free: per(calls, free, 1) });
}
log(`bytes counted for ${bytes.length} remote variants`);

// Latency: the runtimes' processes interleaved, RUNS times.
const runs = Object.fromEntries(runtimes.map((r) => [r, []]));
for (let i = 1; i <= RUNS; i++) {
  for (const r of runtimes) {
    const [cmd, args] = sides[r];
    const res = await run(cmd, [...args, "--endpoint", endpoint, "--mode", "time", "--rounds", ROUNDS, "--iters", ITERS]).done;
    const line = res.out.trim().split("\n").filter((l) => l.startsWith("{")).pop();
    if (res.code !== 0 || !line) throw new Error(`${r} failed (${res.code ?? res.signal}): ${res.err.trim().split("\n").slice(-5).join(" / ")}`);
    runs[r].push(JSON.parse(line));
    log(`run ${i}/${RUNS} ${r} done`);
  }
}
killAll();
const load1 = loadavg();
const seconds = (Date.now() - started) / 1000;

const summary = {};
for (const r of runtimes) {
  summary[r] = {};
  for (const [c, variants] of Object.entries(runs[r][0].results)) {
    summary[r][c] = {};
    for (const v of Object.keys(variants)) {
      const meds = runs[r].map((p) => p.results[c][v].median_us);
      summary[r][c][v] = { median_us: median(meds), min_us: Math.min(...meds), max_us: Math.max(...meds), p90_us: median(runs[r].map((p) => p.results[c][v].p90_us)) };
    }
  }
}

const us = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const fig = (s) => `${us(s.median_us)} [${us(s.min_us)}–${us(s.max_us)}]`;
const kib = (b) => (b >= 1024 ? `${(b / 1024).toFixed(b >= 10240 ? 0 : 1)} KiB` : `${Math.round(b)} B`);
const first = runs[runtimes[0]][0];
const lines = [
  BEGIN,
  "## RPC over loopback",
  "",
  generatedBy("bench/rpc.mjs", "bench:rpc", seconds, load0, load1) +
  `Server: \`wsp-ggml rpc-server --threads 1\` (Node, a child process, 127.0.0.1); client: bench/rpc.ts, CPU variant ${first.variant}, local CPU backend with ${first.threads} thread. ` +
  `${RUNS} processes per runtime, runtimes interleaved; in each, ${ROUNDS} rounds of ${ITERS} calls per variant, the variants' order rotated each round. ` +
  `One call = \`tensorSet(x)\` (one row of ${first.d} f32) + compute + \`tensorGet(y)\`; the weights are uploaded once and stay where their nodes run. ` +
  `Figures: µs per call, median of the processes' medians [range]; *remote / local* = the ratio of the medians. Every variant's result is checked equal to the local one before timing.`,
  "",
  `- **matmul**: y = W·x, W ${first.d}×${first.d} (f32: 1 MiB, q8_0: 272 KiB), on one backend (the CPU, or the server alone).`,
  `- **mlp**: ${first.layers} layers relu(W·h + b), ${first.d} wide, f32, through a \`Sched\`: all local; *split* = layers 0–${first.splitAt - 1} local, ${first.splitAt}–${first.layers - 1} on the server; all remote.`,
  "",
  `| runtime | case | local µs | remote µs | split µs | remote / local | split / local |`,
  "|---|---|---|---|---|---|---|",
];
for (const r of runtimes) {
  for (const [c, v] of Object.entries(summary[r])) {
    const ratio = (x) => (x ? `**${(x.median_us / v.local.median_us).toFixed(1)}×**` : "—");
    lines.push(`| ${runs[r][0].runtime} | ${c} | ${fig(v.local)} | ${fig(v.remote)} | ${v.split ? fig(v.split) : "—"} | ${ratio(v.remote)} | ${ratio(v.split)} |`);
  }
}
lines.push(
  "",
  `Bytes on the wire (counted by a TCP proxy in the runner, Node client, ${BYTE_ITERS} calls; up = client → server). *Set-up* is the connection, the buffers, the weights' upload and the first call; *per call* the steady state:`,
  "",
  "| case | variant | set-up up | set-up down | per call up | per call down | free up / down |",
  "|---|---|---|---|---|---|---|",
);
for (const b of bytes) lines.push(`| ${b.case} | ${b.variant} | ${kib(b.setup.up)} | ${kib(b.setup.down)} | ${kib(b.call.up)} | ${kib(b.call.down)} | ${kib(b.free.up)} / ${kib(b.free.down)} |`);
lines.push(
  "",
  "Per call the client sends the input row (set_tensor) and the graph (graph_compute: every node and leaf serialized, so a bigger graph costs more bytes even when its weights stay put) and reads the result back (get_tensor); a split also crosses between the backends where the layers change sides. The latency over loopback is the round trips and the server's own work (deserializing the graph, its CPU compute on one thread), not the bandwidth.",
  "",
  END,
);
const section = lines.join("\n");

if (!argv.includes("--no-write")) {
  writeResultsSection(root, BEGIN, END, section);
  writeFileSync(join(root, "bench", "rpc_results.json"), JSON.stringify({ seconds, load: { start: load0, end: load1 }, runs: RUNS, rounds: Number(ROUNDS), iters: Number(ITERS), server: "wsp-ggml rpc-server --threads 1 (node)", summary, bytes, processes: runs }, null, 1) + "\n");
  log("wrote the RPC over loopback section of bench/RESULTS.md and bench/rpc_results.json");
}
console.log(section);
process.exit(0);
