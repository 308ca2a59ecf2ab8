#!/usr/bin/env node
// Sums the self time of a V8 CPU profile (`node --cpu-prof`'s .cpuprofile files in DIR) by
// function, and by where it runs: the FFI adapter (koffi or the runtime's FFI), the handwritten
// layer (src/), the generated ops (src/core/ops.gen.ts), the runtime's own code and native time.
//
//   node bench/graph_profile_report.mjs DIR [--top 25]
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [dir] = process.argv.slice(2);
const top = Number(process.argv.includes("--top") ? process.argv[process.argv.indexOf("--top") + 1] : 25);
const byFn = new Map(), byPlace = new Map();
let total = 0;
const place = (f) => {
  const u = f.url ?? "";
  if (u.includes("koffi")) return "koffi (Node's FFI adapter)";
  if (u.includes("/src/ffi/")) return "src/ffi (the runtime adapter)";
  if (u.includes("ops.gen.ts")) return "src/core/ops.gen.ts (generated ops)";
  if (u.includes("/src/")) return "src/ (handwritten layer)";
  if (u.includes("/bench/")) return "bench loop";
  if (f.functionName === "(garbage collector)") return "garbage collector";
  if (f.functionName === "(program)" || f.functionName === "(idle)") return "(program/idle)";
  if (u === "") return `native or builtin: ${f.functionName || "(anonymous)"}`;
  return "other JS";
};
for (const file of readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
  const p = JSON.parse(readFileSync(join(dir, file), "utf8"));
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const dt = new Map();
  p.samples.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  for (const [id, us] of dt) {
    const f = nodes.get(id).callFrame;
    const key = `${f.functionName || "(anonymous)"} ${(f.url ?? "").replace(/^.*\/(src|bench|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    const pl = place(f);
    byPlace.set(pl, (byPlace.get(pl) ?? 0) + us);
    total += us;
  }
}
const show = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)} %  ${k}`).join("\n");
console.log(`self time by place (${(total / 1e6).toFixed(2)} s sampled):\n${show(byPlace, 20)}\n\nby function (top ${top}):\n${show(byFn, top)}`);
