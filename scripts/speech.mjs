#!/usr/bin/env node
// @ts-self-types="./speech.d.mts"
// Speech for the Whisper tests: each clip of tests/fixtures/speech/sentences.json spoken by
// espeak-ng (fixed voice, speed, pitch, amplitude, word gap) and brought to 16 kHz 16-bit mono
// by sox with a fixed random seed (-R) and no dither (-D), so the bytes repeat.
//
// The WAVs are not committed (about 2.6 MB at 16 kHz): they are made on first use into the
// git-ignored .cache/speech/, each file named by a hash of its text, the voice settings and the
// espeak-ng and sox versions, so a change to any of them makes a new file.
//
//   node scripts/speech.mjs            makes the clips (if missing), prints id, seconds, bytes, path
//   node scripts/speech.mjs --check    makes each clip twice in a temporary folder and fails
//                                      unless both runs are byte-identical
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SENTENCES = path.join(root, "tests", "fixtures", "speech", "sentences.json");
/** Bump when the way a clip is made changes (the commands below). */
const RECIPE = 1;

/** The first line a tool prints for `args`, or null when it does not run. */
function toolVersion(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.error || r.status !== 0) return null;
  return (r.stdout || r.stderr).trim().split("\n")[0].replace(/\s+Data at: .*$/, "");
}

/**
 * Why the clips cannot be made here ("" when they can): espeak-ng or sox missing.
 * @returns {string}
 */
export function speechMissing() {
  const missing = [["espeak-ng", ["--version"]], ["sox", ["--version"]]].filter(([c, a]) => toolVersion(c, a) === null).map(([c]) => c);
  return missing.length ? `${missing.join(" and ")} not installed (Debian: apt-get install espeak-ng sox)` : "";
}

/**
 * The clips as listed, without making them.
 * @returns {{ id: string, text: string, reference: string }[]}
 */
export function speechClips() {
  return JSON.parse(fs.readFileSync(SENTENCES, "utf8")).clips;
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.error || r.status !== 0) throw new Error(`${cmd} failed: ${r.error?.message ?? r.stderr}`);
}

/** Speaks `text` into `out` (16 kHz, 16-bit, mono), by way of a temporary 22.05 kHz file. */
function synthesize(text, voice, out) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "wsp-speech-"));
  try {
    const txt = path.join(tmp, "text.txt");
    const raw = path.join(tmp, "espeak.wav");
    fs.writeFileSync(txt, text);
    run("espeak-ng", ["-v", voice.name, "-s", String(voice.speed), "-p", String(voice.pitch), "-a", String(voice.amplitude), "-g", String(voice.wordGap), "-f", txt, "-w", raw]);
    // -R: sox's fixed seed; -D: no dither (dither is the one random step); `rate -v`: very high quality.
    run("sox", ["-R", "-D", "-V1", raw, "-b", "16", "-e", "signed-integer", "-c", "1", path.join(tmp, "out.wav"), "rate", "-v", "16000"]);
    // Renamed into place, so that a run cut short leaves no partial clip; the part name is per
    // process, as test runners on two runtimes may make the same clip at once.
    const part = `${out}.${process.pid}.part`;
    fs.copyFileSync(path.join(tmp, "out.wav"), part);
    fs.renameSync(part, out);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** The size of a WAV file's data chunk (the clips are plain RIFF, as sox writes them). */
function dataBytes(b) {
  for (let at = 12; at + 8 <= b.length; at += 8 + b.readUInt32LE(at + 4) + (b.readUInt32LE(at + 4) & 1)) {
    if (b.toString("latin1", at, at + 4) === "data") return Math.min(b.readUInt32LE(at + 4), b.length - at - 8);
  }
  throw new Error("a speech clip without a data chunk");
}

/**
 * Makes (when missing) every clip and returns where each is.
 *
 * @param {{ dir?: string }} [options] `dir`: where the WAVs go (default `.cache/speech/` of the checkout)
 * @returns {{ id: string, text: string, reference: string, path: string, seconds: number }[]}
 *   `seconds`: the length of the data chunk at 16-bit mono 16 kHz
 * @throws {Error} when espeak-ng or sox is missing or fails
 */
export function speechFiles(options = {}) {
  const missing = speechMissing();
  if (missing) throw new Error(`cannot make the speech clips: ${missing}`);
  const dir = options.dir ?? path.join(root, ".cache", "speech");
  fs.mkdirSync(dir, { recursive: true });
  const { voice, clips } = JSON.parse(fs.readFileSync(SENTENCES, "utf8"));
  const versions = [toolVersion("espeak-ng", ["--version"]), toolVersion("sox", ["--version"])];
  return clips.map((c) => {
    const key = createHash("sha256").update(JSON.stringify({ RECIPE, text: c.text, voice, versions })).digest("hex").slice(0, 16);
    const file = path.join(dir, `${c.id}-${key}.wav`);
    if (!fs.existsSync(file)) synthesize(c.text, voice, file);
    return { ...c, path: file, seconds: dataBytes(fs.readFileSync(file)) / 32000 };
  });
}

function main() {
  if (process.argv.includes("--check")) {
    const a = fs.mkdtempSync(path.join(os.tmpdir(), "wsp-speech-a-"));
    const b = fs.mkdtempSync(path.join(os.tmpdir(), "wsp-speech-b-"));
    try {
      const [ra, rb] = [speechFiles({ dir: a }), speechFiles({ dir: b })];
      let same = true;
      ra.forEach((c, i) => {
        const eq = fs.readFileSync(c.path).equals(fs.readFileSync(rb[i].path));
        same &&= eq;
        console.log(`${c.id.padEnd(10)} ${c.seconds.toFixed(2).padStart(6)} s  ${eq ? "identical" : "DIFFERENT"}`);
      });
      if (!same) process.exit(1);
    } finally {
      fs.rmSync(a, { recursive: true, force: true });
      fs.rmSync(b, { recursive: true, force: true });
    }
    return;
  }
  let total = 0;
  for (const c of speechFiles()) {
    const size = fs.statSync(c.path).size;
    total += size;
    console.log(`${c.id.padEnd(10)} ${c.seconds.toFixed(2).padStart(6)} s ${String(size).padStart(8)} B  ${path.relative(root, c.path)}`);
  }
  console.log(`total ${total} B`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
