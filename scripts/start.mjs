#!/usr/bin/env node
// `npm start`: set-up (vendor, zig, host build), then the main job: the demo
// (examples/demo/main.ts: train an MLP with ggml-opt, save it to GGUF, reload, evaluate).
//
//   npm start [-- demo flags]          the demo on Node
//   bun run start [-- demo flags]      the demo on Bun (set-up on Node)
//   deno task start [demo flags]       the demo on Deno (set-up on Node)
//   node scripts/start.mjs --runtime deno|bun|node [demo flags]
import { spawnSync } from "node:child_process";
import path from "node:path";
import { bin, root, setup } from "./setup.mjs";

const args = process.argv.slice(2);
const at = args.indexOf("--runtime");
const agent = process.env.npm_config_user_agent ?? "";
const runtime = at >= 0 ? args.splice(at, 2)[1] : agent.startsWith("bun/") ? "bun" : agent.startsWith("deno/") ? "deno" : "node";
const main = path.join(root, "examples", "demo", "main.ts");
const commands = {
  node: [process.execPath, ["--import", "tsx", main]],
  bun: [bin("bun"), [main]],
  deno: [bin("deno"), ["run", "-A", main]],
};
if (!commands[runtime]) {
  console.error(`start: --runtime must be deno, bun or node, got ${runtime}`);
  process.exit(2);
}
await setup({ libclang: false });
const [cmd, cmdArgs] = commands[runtime];
const t0 = Date.now();
const r = spawnSync(cmd, [...cmdArgs, ...args], { cwd: root, stdio: "inherit" });
console.log(`start: the demo on ${runtime} took ${((Date.now() - t0) / 1000).toFixed(1)} s (wall, including start-up)`);
process.exit(r.status ?? 1);
