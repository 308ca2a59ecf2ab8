#!/usr/bin/env node
// `npm start`: set-up (vendor, zig, host build), then the main job: text generation with a
// real model (examples/llm/main.ts: the `wsp-ggml generate` command of src/cli/ over the runner
// in src/llm/, Gemma 3 270M fetched on first use). `npm run demo` runs the spiral training demo
// instead (examples/demo/main.ts). The whole command from a checkout: `npm run cli -- <command>`
// (Node), `bun src/cli/bin.ts <command>`, `deno run -A src/cli/bin.ts <command>`.
//
//   npm start [-- flags]               generation on Node
//   bun run start [-- flags]           on Bun (set-up on Node)
//   deno task start [flags]            on Deno (set-up on Node)
//   npm run transcribe [-- flags] [FILE.wav…]
//                                      speech to text (`wsp-ggml transcribe`, Whisper base fetched
//                                      and converted on first use); without a WAV file, the
//                                      clips scripts/speech.mjs synthesizes with espeak-ng
//   node scripts/start.mjs [--demo | --transcribe] [--runtime deno|bun|node] [flags]
import { spawnSync } from "node:child_process";
import path from "node:path";
import { bin, root, setup } from "./setup.mjs";

const args = process.argv.slice(2);
const at = args.indexOf("--runtime");
const agent = process.env.npm_config_user_agent ?? "";
const runtime = at >= 0 ? args.splice(at, 2)[1] : agent.startsWith("bun/") ? "bun" : agent.startsWith("deno/") ? "deno" : "node";
const demo = args.includes("--demo");
if (demo) args.splice(args.indexOf("--demo"), 1);
const transcribe = args.includes("--transcribe");
if (transcribe) args.splice(args.indexOf("--transcribe"), 1);
const job = demo ? "the demo" : transcribe ? "transcription" : "generation";
const main = transcribe ? path.join(root, "src", "cli", "bin.ts") : path.join(root, "examples", demo ? "demo" : "llm", "main.ts");
if (transcribe) {
  args.unshift("transcribe");
  if (!args.some((a) => a.toLowerCase().endsWith(".wav")) && !args.includes("--help") && !args.includes("-h")) {
    const { speechFiles, speechMissing } = await import("./speech.mjs");
    const missing = speechMissing();
    if (missing) {
      console.error(`transcribe: give WAV files (npm run transcribe -- FILE.wav…), or install espeak-ng and sox for the sample clips: ${missing}`);
      process.exit(2);
    }
    args.push(...speechFiles().map((c) => c.path));
  }
}
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
console.error(`start: ${job} on ${runtime} took ${((Date.now() - t0) / 1000).toFixed(1)} s (wall, including start-up)`);
process.exit(r.status ?? 1);
