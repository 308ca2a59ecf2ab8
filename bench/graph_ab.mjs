#!/usr/bin/env node
// Did the TS layer's graph construction get slower since REV? Runs bench/main.ts's `graph` case
// from a worktree of REV and from this checkout, in turn (old, new, old, …, each runtime), against
// the same native libraries (the worktree links this checkout's node_modules and zig-out), so
// only the TS differs. Per process it takes API / C in that process (bench/work.c's loop, timed
// in turn with the API's), and prints the median over processes of each side and their ratio.
//
//   node bench/graph_ab.mjs REV [--rounds N] [--runtimes node,deno,bun]
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const rev = argv[0];
if (!rev || rev.startsWith("--")) {
  console.error("usage: node bench/graph_ab.mjs REV [--rounds N] [--runtimes node,deno,bun]");
  process.exit(2);
}
const opt = (name, dflt) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : dflt);
const rounds = Number(opt("--rounds", "6"));
const runtimes = opt("--runtimes", "node,deno,bun").split(",");
const bin = (name) => join(root, "node_modules", ".bin", name);
const command = {
  node: [process.execPath, ["--import", "tsx", "bench/main.ts", "graph"]],
  deno: [bin("deno"), ["run", "-A", "bench/main.ts", "graph"]],
  bun: [bin("bun"), ["bench/main.ts", "graph"]],
};

const old = mkdtempSync(join(tmpdir(), "wsp-graph-ab-"));
try {
  execFileSync("git", ["worktree", "add", "--detach", old, rev], { cwd: root, stdio: "ignore" });
  symlinkSync(join(root, "node_modules"), join(old, "node_modules"));
  symlinkSync(join(root, "zig-out"), join(old, "zig-out"));
  const ratios = {};
  console.log(`graph construction, ${rev} (old) against the checkout (new); 1-min load ${loadavg()[0].toFixed(2)} at the start`);
  for (let r = 0; r < rounds; r++) {
    for (const [side, cwd] of [["old", old], ["new", root]]) {
      for (const rt of runtimes) {
        const [cmd, args] = command[rt];
        const out = spawnSync(cmd, args, { cwd, encoding: "utf8" });
        const rows = out.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
        const api = rows.find((j) => j.label.startsWith("API"))?.median_ns;
        const c = rows.find((j) => j.label.startsWith("C in this process"))?.median_ns;
        if (!api || !c) throw new Error(`${side} ${rt}: no figures (exit ${out.status}): ${out.stderr.slice(-400)}`);
        (ratios[`${rt} ${side}`] ??= []).push(api / c);
      }
    }
    console.error(`round ${r + 1}/${rounds} done, load ${loadavg()[0].toFixed(2)}`);
  }
  const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
  console.log("| runtime | API / C, old | API / C, new | new / old |\n|---|---|---|---|");
  for (const rt of runtimes) {
    const o = median(ratios[`${rt} old`]), n = median(ratios[`${rt} new`]);
    console.log(`| ${rt} | ${o.toFixed(3)} | ${n.toFixed(3)} | ${(n / o).toFixed(3)} |`);
  }
  console.log(`1-min load ${loadavg()[0].toFixed(2)} at the end; ${rounds} processes per side and runtime`);
} finally {
  spawnSync("git", ["worktree", "remove", "--force", old], { cwd: root, stdio: "ignore" });
  rmSync(old, { recursive: true, force: true });
}
