#!/usr/bin/env node
// The whisper.rn-family JS peer: npm `@fugood/whisper.node` (a Node-API binding of whisper.cpp with
// its own prebuilt binaries, the API of whisper.rn) transcribing the same clips with the same model
// file, timed like bench/whisper.ts: the model loaded first, then each clip `reps` times, the wall
// time of the `transcribeData(...).promise` alone (its argument is the WAV's 16-bit PCM, which the
// addon turns into float samples by / 32768, as the C driver does).
//
//   node bench/whisper_peer_node.mjs --model FILE [--threads 1] [--reps 2] [--flash-attn 0|1] WAV...
//
// Prints one JSON line. The package is not a dependency of this project: bench/whisper_run.mjs
// installs it (install scripts off) into the git-ignored .cache/whisper-node-peer/ with
// `npm install --prefix`; --peer-dir names another folder.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const flags = new Map();
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i].startsWith("--")) flags.set(args[i], args[++i]);
  else files.push(args[i]);
}
const threads = Number(flags.get("--threads") ?? 1), reps = Number(flags.get("--reps") ?? 2);
const flashAttn = (flags.get("--flash-attn") ?? "0") !== "0";
const model = flags.get("--model");
const peerDir = resolve(flags.get("--peer-dir") ?? join(root, ".cache", "whisper-node-peer"));
if (!model || files.length === 0) {
  console.error("usage: whisper_peer_node.mjs --model FILE [--threads N] [--reps N] [--flash-attn 0|1] WAV...");
  process.exit(2);
}

/** The data chunk of a 16-bit mono 16 kHz WAV (what scripts/speech.mjs writes), as an ArrayBuffer of its own. */
function pcm16(path) {
  const b = readFileSync(path);
  for (let at = 12; at + 8 <= b.length; at += 8 + b.readUInt32LE(at + 4) + (b.readUInt32LE(at + 4) & 1)) {
    if (b.toString("latin1", at, at + 4) === "data") {
      const n = Math.min(b.readUInt32LE(at + 4), b.length - at - 8);
      return { buf: b.buffer.slice(b.byteOffset + at + 8, b.byteOffset + at + 8 + n), seconds: n / 32000 };
    }
  }
  throw new Error(`${path}: no data chunk`);
}

const require = createRequire(join(peerDir, "package.json"));
const pkgJson = require.resolve("@fugood/whisper.node/package.json");
const version = JSON.parse(readFileSync(pkgJson, "utf8")).version;
const platformPkg = `@fugood/node-whisper-${process.platform}-${process.arch}`;
const lib = require("@fugood/whisper.node");

const tLoad = performance.now();
const ctx = await lib.initWhisper({ filePath: resolve(model), useGpu: false, useFlashAttn: flashAttn }, "default");
const loadMs = performance.now() - tLoad;
const info = typeof ctx.getModelInfo === "function" ? ctx.getModelInfo() : {};

const clips = [];
for (const file of files) {
  const { buf, seconds } = pcm16(file);
  const runs = [];
  let text = "";
  for (let r = 0; r < reps; r++) {
    const data = buf.slice(0); // a fresh copy per run, outside the timed part
    const t0 = performance.now();
    const res = await ctx.transcribeData(data, { language: "en", maxThreads: threads, temperature: 0, temperatureInc: 0.2 }).promise;
    const ms = performance.now() - t0;
    runs.push(ms);
    text = res.segments.map((s) => s.text).join("");
  }
  clips.push({ file, seconds, wallMs: runs, text });
}
await ctx.release();
console.log(JSON.stringify({
  peer: `@fugood/whisper.node ${version} (${platformPkg}, prebuilt Node-API addon)`,
  version,
  threads,
  flashAttn,
  loadMs,
  cpuModel: cpus()[0]?.model,
  systemInfo: info.systemInfo ?? info.system_info ?? null,
  modelInfo: info,
  clips,
}));
