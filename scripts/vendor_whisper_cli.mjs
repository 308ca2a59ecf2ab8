// The third pin: whisper.cpp's own command-line program (examples/cli/cli.cpp and the example
// files it compiles with), which whisper.rn does not ship, taken from the whisper.cpp tree that
// the npm package nodejs-whisper carries (cpp/whisper.cpp/, whisper.cpp 1.9.1), renamed the way
// whisper.rn renames its copy and laid out in vendor/whisper-cli/ (ignored by git). It is built
// only as the reference of bench/whisper_run.mjs (`zig build whisper-cli`), against the pinned
// whisper.cpp of whisper.rn (1.8.0) and its ggml; the program's library calls are the same
// across the two versions (their whisper.h differ by two streaming-VAD functions the CLI does not call).
//
// The tarball is fetched with `npm pack` (no install) into the ignored .cache/vendor/ and checked
// against the manifest's integrity before anything is read from it.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { ignoreFolder, pinnedTarball, wspRename } from "./vendor_llama.mjs";

/** The files laid out, by their path under the package's cpp/whisper.cpp/examples/. */
export const CLI_FILES = [
  "cli/cli.cpp",
  "common.cpp",
  "common.h",
  "common-whisper.cpp",
  "common-whisper.h",
  "grammar-parser.cpp",
  "grammar-parser.h",
  "miniaudio.h",
  "stb_vorbis.c",
];
const TREE = "package/cpp/whisper.cpp/examples/";

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
/** whisper.cpp's own files are renamed (they call ggml); the two third-party decoders are not. */
const renamed = (f) => !["miniaudio.h", "stb_vorbis.c"].includes(f);

function unpacked(root, pin, fail) {
  const cache = path.join(root, ".cache", "vendor");
  const tgz = pinnedTarball(root, pin, fail);
  const tmp = fs.mkdtempSync(path.join(cache, "unpack-"));
  try {
    execFileSync("tar", ["-xzf", tgz, "-C", tmp, ...CLI_FILES.map((f) => TREE + f)]);
    return new Map(CLI_FILES.map((f) => {
      const raw = fs.readFileSync(path.join(tmp, TREE, f));
      return [f, renamed(f) ? Buffer.from(wspRename(raw.toString("utf8")), "utf8") : raw];
    }));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Lays out (or with `check`, only verifies) the third pin in `dir`; files already there with
 * the manifest's hash are not read again, so a laid-out tree needs no network.
 */
export function layOutCliPin({ root, dir, manifest, check = false, fail }) {
  const pin = manifest.cli;
  if (Object.keys(pin.files).join() !== CLI_FILES.join()) fail(`the manifest's cli files are [${Object.keys(pin.files)}], expected [${CLI_FILES}]: run --update-manifest`);
  const stale = CLI_FILES.filter((f) => {
    const p = path.join(dir, f);
    return !fs.existsSync(p) || sha256(fs.readFileSync(p)) !== pin.files[f];
  });
  const what = `${pin.package} ${pin.version} (whisper.cpp ${pin.whisperCpp} examples)`;
  if (stale.length === 0) return void console.log(`vendor: ${what} verified, ${CLI_FILES.length} files in vendor/whisper-cli`);
  if (check) fail(`${stale.length} files of the third pin are missing or differ (first: ${stale[0]}); run \`node scripts/vendor.mjs\``);
  const files = unpacked(root, pin, fail);
  ignoreFolder(dir, "third pin");
  for (const f of stale) {
    const h = sha256(files.get(f));
    if (h !== pin.files[f]) fail(`${f} (renamed from the package): sha256 ${h} does not match the manifest (${pin.files[f]})`);
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), files.get(f));
  }
  console.log(`vendor: ${what} verified, ${CLI_FILES.length} files in vendor/whisper-cli (${stale.length} written)`);
}

/** The manifest's "cli" section rebuilt from the package (for --update-manifest). */
export function cliPinManifest(root, pin, fail) {
  const files = unpacked(root, pin, fail);
  return { ...pin, files: Object.fromEntries(CLI_FILES.map((f) => [f, sha256(files.get(f))])) };
}
