#!/usr/bin/env node
// The Vulkan backend's SPIR-V shaders, generated once per content hash (issue 25).
//
//   node scripts/vulkan_shaders.mjs            generate (or reuse) and print the folder
//   node scripts/vulkan_shaders.mjs --check    exit 0 when the tools are present, else 1 (says why)
//   node scripts/vulkan_shaders.mjs --force    generate again even when the folder exists
//
// Steps, as upstream's CMake does them, but for bookworm's glslc and with a compact output:
//   1. vulkan-shaders-gen.cpp (second pin, not renamed) is compiled for this machine with the
//      pinned zig (`zig c++`);
//   2. it runs Debian's glslc over the .comp shaders (up to 16 glslc at a time, which keeps both
//      cores busy). bookworm's glslc (shaderc 2023.2) lacks cooperative matrices (coopmat and
//      coopmat2), integer dot products and bfloat16, so the generator is built without the
//      GGML_VULKAN_*_GLSLC_SUPPORT macros and those shader paths are left out, as upstream's
//      CMake does when glslc cannot compile its test shaders;
//   3. the output is renamed the way whisper.rn renames (wspRename: `quantize_q8_1` →
//      `wsp_quantize_q8_1`, …) so that its names match the renamed ggml-vulkan.cpp; and the
//      132 MB of C byte arrays the generator writes are replaced by the raw SPIR-V in one blob
//      (ggml-vulkan-shaders.bin) that an assembly file (ggml-vulkan-shaders.S) pulls in with
//      `.incbin` and labels with the same symbol names (`<name>_data`); the small rest of the
//      generated .cpp (the tables of pointers) stays C++ (ggml-vulkan-shaders.cpp). A target then
//      assembles the 26 MB in a fraction of a second instead of compiling 132 MB of C.
//
// The result is cached in .cache/vulkan-shaders/ (ignored by git): spirv-<key>/ holds glslc's
// output, keyed by a hash of the shader sources and the generator, glslc's version and the
// generator's flags; <key>/ the files build.zig takes (keyed also by this script's FORMAT), with
// include/ linking to the Vulkan headers; `current` links to it. build.zig takes `current` by
// default (or -Dvulkan=<folder>, -Dvulkan=off); scripts/setup.mjs and scripts/build.mjs run this
// script first. One process generates at a time (a lock file); a second run with the same inputs
// only hashes (0.2 s).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { wspRename } from "./vendor_llama.mjs";
import { ensureZig } from "./zig.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const shaderDir = path.join(root, "vendor", "ggml", "ggml-vulkan", "vulkan-shaders");
const cacheRoot = path.join(root, ".cache", "vulkan-shaders");
/** Bumped when the folder's layout or contents change for the same inputs. */
const FORMAT = "wsp-vk-shaders-3";
/** Generator compile flags (none of the *_GLSLC_SUPPORT macros: see above). */
const GEN_FLAGS = ["-std=c++17", "-O2", "-fno-sanitize=undefined"];
/** The files build.zig takes from the folder. */
export const OUTPUTS = ["ggml-vulkan-shaders.hpp", "ggml-vulkan-shaders.cpp", "ggml-vulkan-shaders.S", "ggml-vulkan-shaders.bin"];

/** glslc's version text, or null when glslc is missing. */
function glslcVersion(glslc) {
  const r = spawnSync(glslc, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** Why Vulkan cannot be built here (no glslc, no headers, no shader sources), or null. */
export function vulkanToolsProblem({ glslc = process.env.GLSLC || "glslc" } = {}) {
  if (!fs.existsSync(path.join(shaderDir, "vulkan-shaders-gen.cpp"))) return "the Vulkan sources are not laid out (run `node scripts/vendor.mjs`)";
  if (glslcVersion(glslc) === null) return `${glslc} is not installed (Debian: apt-get install glslc)`;
  if (vulkanHeaders() === null) return "the Vulkan headers are not installed (Debian: apt-get install libvulkan-dev)";
  return null;
}

/** The include folder holding vulkan/vulkan.hpp (Debian's libvulkan-dev), or null. */
export function vulkanHeaders() {
  const dirs = [process.env.VULKAN_SDK && path.join(process.env.VULKAN_SDK, "include"), "/usr/include", "/usr/local/include"].filter(Boolean);
  return dirs.find((d) => fs.existsSync(path.join(d, "vulkan", "vulkan.hpp"))) ?? null;
}

/** The key of the SPIR-V: every input of glslc's run (sources, generator, its flags, glslc). */
function spirvKey(glslc) {
  const h = createHash("sha256");
  h.update(GEN_FLAGS.join(" ") + "\0" + glslcVersion(glslc) + "\0");
  for (const f of fs.readdirSync(shaderDir).sort()) {
    h.update(f + "\0");
    h.update(fs.readFileSync(path.join(shaderDir, f)));
  }
  return h.digest("hex").slice(0, 16);
}

/**
 * Generates the shaders (or finds them cached) and returns the folder holding OUTPUTS (and
 * include/); .cache/vulkan-shaders/current links to it, which build.zig uses without -Dvulkan.
 * Two levels of cache: spirv-<key>/ (glslc's output; only new shader sources, generator or glslc
 * run glslc again) and <key>/ (the files build.zig takes; also keyed by FORMAT).
 * `log` reports progress; `force` regenerates both.
 */
export function vulkanShaders({ log = (m) => console.error(m), force = false, glslc = process.env.GLSLC || "glslc" } = {}) {
  const problem = vulkanToolsProblem({ glslc });
  if (problem) throw new Error(`Vulkan shaders: ${problem}`);
  const skey = spirvKey(glslc);
  const key = createHash("sha256").update(`${skey}\0${FORMAT}`).digest("hex").slice(0, 16);
  const out = path.join(cacheRoot, key);
  const spirv = path.join(cacheRoot, `spirv-${skey}`);
  const ready = () => OUTPUTS.every((f) => fs.existsSync(path.join(out, f))) && fs.existsSync(path.join(out, "done.json"));
  if (force || !ready()) withLock(log, () => generate(force));
  linkHeaders(out);
  function generate(regenerate) {
    if (!regenerate && ready()) return; // another process made it while this one waited
    const t0 = Date.now();
    if (regenerate || !fs.existsSync(path.join(spirv, "done.json"))) runGenerator({ glslc, spirv, skey, log });
    const staged = path.join(cacheRoot, `tmp-${key}-${process.pid}`);
    fs.rmSync(staged, { recursive: true, force: true });
    fs.mkdirSync(staged, { recursive: true });
    const n = convert({ spirv, outDir: staged, key });
    const stats = { key, spirv: JSON.parse(fs.readFileSync(path.join(spirv, "done.json"), "utf8")), shaders: n.count, blobBytes: n.bytes, seconds: (Date.now() - t0) / 1000 };
    fs.writeFileSync(path.join(staged, "done.json"), JSON.stringify(stats, null, 2) + "\n");
    fs.rmSync(out, { recursive: true, force: true });
    fs.renameSync(staged, out);
    log(`vulkan-shaders: ${n.count} shaders, ${(n.bytes / 1e6).toFixed(1)} MB of SPIR-V in ${stats.seconds.toFixed(1)} s → ${path.relative(root, out)}`);
    // Older generations are of no use to this tree (a run in progress elsewhere keeps its tmp- folder).
    for (const e of fs.readdirSync(cacheRoot)) {
      if (e === key || e === `spirv-${skey}` || e === "current" || e === "lock") continue;
      if (e.startsWith("tmp-") && alive(Number(e.split("-").pop()))) continue;
      fs.rmSync(path.join(cacheRoot, e), { recursive: true, force: true });
    }
  }
  const current = path.join(cacheRoot, "current");
  let now = null;
  try {
    now = fs.readlinkSync(current);
  } catch { /* none yet */ }
  if (now !== key) {
    fs.rmSync(current, { recursive: true, force: true });
    if (process.platform === "win32") fs.symlinkSync(out, current, "junction");
    else fs.symlinkSync(key, current, "dir");
  }
  return out;
}

/** Whether process `pid` runs (on this machine). */
function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/**
 * Runs `fn` holding .cache/vulkan-shaders/lock (the process id inside): setup may run in several
 * processes of one tree at once (test runs, builds), and one glslc run at a time is enough; the
 * others wait for it and then find its result.
 */
function withLock(log, fn) {
  const lock = path.join(cacheRoot, "lock");
  fs.mkdirSync(cacheRoot, { recursive: true });
  let told = false;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: "wx" });
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    let pid = NaN, age = 0;
    try {
      pid = Number(fs.readFileSync(lock, "utf8"));
      age = Date.now() - fs.statSync(lock).mtimeMs;
    } catch { continue; /* released meanwhile */ }
    // A lock without its pid yet was created a moment ago: wait for it too.
    if (!(Number.isInteger(pid) && pid > 0 ? alive(pid) : age < 10_000)) {
      fs.rmSync(lock, { force: true });
      continue;
    }
    if (!told) log(`vulkan-shaders: waiting for process ${pid}, which is generating the shaders`);
    told = true;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2000);
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** Steps 1 and 2: the generator, and glslc over the shaders, into `spirv` (spv/, raw.hpp, tables.cpp). */
function runGenerator({ glslc, spirv, skey, log }) {
  const t0 = Date.now();
  const work = path.join(cacheRoot, `tmp-spirv-${skey}-${process.pid}`);
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(path.join(work, "spv"), { recursive: true });
  try {
    generateInto(work, { glslc, t0, log });
  } catch (e) {
    fs.rmSync(work, { recursive: true, force: true });
    throw e;
  }
  fs.rmSync(spirv, { recursive: true, force: true });
  fs.renameSync(work, spirv);
}

function generateInto(work, { glslc, t0, log }) {
  const gen = path.join(work, process.platform === "win32" ? "vulkan-shaders-gen.exe" : "vulkan-shaders-gen");
  execFileSync(ensureZig({ quiet: true }), ["c++", ...GEN_FLAGS, path.join(shaderDir, "vulkan-shaders-gen.cpp"), "-o", gen, ...(process.platform === "win32" ? [] : ["-lpthread"])], { stdio: "inherit" });
  const tGen = Date.now();
  log(`vulkan-shaders: generator compiled in ${((tGen - t0) / 1000).toFixed(1)} s; running glslc over ${fs.readdirSync(shaderDir).filter((f) => f.endsWith(".comp")).length} shaders (a few minutes)`);
  // glslc over the shaders; the SPIR-V files stay in spv/ (--no-clean).
  const rawHpp = path.join(work, "raw.hpp"), rawCpp = path.join(work, "raw.cpp");
  const r = spawnSync(gen, ["--glslc", glslc, "--input-dir", shaderDir, "--output-dir", path.join(work, "spv"), "--target-hpp", rawHpp, "--target-cpp", rawCpp, "--no-clean"], { encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0 || r.stderr.includes("cannot compile") || r.stderr.includes("Error")) {
    throw new Error(`vulkan-shaders-gen failed (exit ${r.status}):\n${(r.stderr || "").slice(-4000)}`);
  }
  // The tables: everything of the .cpp after the last byte array (the arrays come first, sorted).
  const cpp = fs.readFileSync(rawCpp, "utf8");
  const tables = cpp.slice(cpp.lastIndexOf("\n};\n") + 4).trimStart();
  if (/^unsigned char \w+_data\[\d+\] = \{/m.test(tables)) throw new Error("unexpected layout of the generated .cpp");
  fs.writeFileSync(path.join(work, "tables.cpp"), tables);
  fs.rmSync(rawCpp);
  fs.rmSync(gen);
  fs.writeFileSync(path.join(work, "done.json"), JSON.stringify({ glslc: glslcVersion(glslc), generatorSeconds: (tGen - t0) / 1000, glslcSeconds: (Date.now() - tGen) / 1000 }, null, 2) + "\n");
  log(`vulkan-shaders: glslc took ${((Date.now() - tGen) / 1000).toFixed(1)} s`);
}

/**
 * include/ of the folder: links to the Vulkan headers (vulkan/, vk_video/), and nothing else, so
 * that a cross build sees these platform-independent headers without the host's C library.
 */
function linkHeaders(out) {
  const from = vulkanHeaders();
  const inc = path.join(out, "include");
  fs.mkdirSync(inc, { recursive: true });
  for (const d of ["vulkan", "vk_video"]) {
    const link = path.join(inc, d), target = path.join(from, d);
    if (!fs.existsSync(target)) continue;
    let current = null;
    try {
      current = fs.readlinkSync(link);
    } catch { /* missing */ }
    if (current === target) continue;
    fs.rmSync(link, { recursive: true, force: true });
    fs.symlinkSync(target, link, "dir");
  }
  return out;
}

/**
 * The generator's header declares `extern unsigned char <name>_data[<size>];` and
 * `const uint64_t <name>_len = <size>;` per shader; its .cpp defines each array, then the
 * pointer tables. Writes the renamed header, the tables (the .cpp without the arrays), the
 * blob of every SPIR-V file (16-byte aligned) and the assembly that labels it.
 */
function convert({ spirv, outDir, key }) {
  const hpp = fs.readFileSync(path.join(spirv, "raw.hpp"), "utf8");
  const spvDir = path.join(spirv, "spv");
  const shaders = [...hpp.matchAll(/^extern unsigned char (\w+)_data\[(\d+)\];$/gm)].map((m) => ({ name: m[1], size: Number(m[2]) }));
  if (shaders.length < 100) throw new Error(`vulkan-shaders-gen wrote ${shaders.length} shaders; expected over a thousand`);
  const tables = fs.readFileSync(path.join(spirv, "tables.cpp"), "utf8");
  const chunks = [];
  let offset = 0;
  const asm = [
    `// Generated by scripts/vulkan_shaders.mjs (key ${key}): the SPIR-V of ggml-vulkan's shaders, from`,
    "// ggml-vulkan-shaders.bin (found on the include path), labelled with the names ggml-vulkan.cpp uses.",
    "#if defined(__APPLE__)",
    "#define S(x) _##x",
    "#else",
    "#define S(x) x",
    "#endif",
    "#if defined(_WIN32)",
    "  .section .rdata,\"dr\"",
    "#elif defined(__APPLE__)",
    "  .section __TEXT,__const",
    "#else",
    "  .section .rodata.wsp_vk_shaders,\"a\",@progbits",
    "#endif",
    "  .p2align 4",
    "wsp_vk_shader_blob:",
    "  .incbin \"ggml-vulkan-shaders.bin\"",
  ];
  const sym = (s) => `S(${s})`;
  for (const { name, size } of shaders) {
    const data = fs.readFileSync(path.join(spvDir, `${name}.spv`));
    if (data.length !== size) throw new Error(`${name}.spv: ${data.length} bytes, the header says ${size}`);
    const renamed = wspRename(name) + "_data";
    asm.push(`  .globl ${sym(renamed)}`);
    asm.push("#if defined(__ELF__)", `  .hidden ${renamed}`, `  .type ${renamed},@object`, `  .size ${renamed},${size}`, "#endif");
    asm.push(`  .set ${sym(renamed)}, wsp_vk_shader_blob + ${offset}`);
    const padded = (size + 15) & ~15;
    chunks.push(data, Buffer.alloc(padded - size));
    offset += padded;
  }
  // MinGW's linker exports every global symbol of a DLL that has no dllexport: keep the shaders
  // out of ggml-vulkan.dll's export table (as ELF's .hidden keeps them out of the .so's).
  const tableNames = [...wspRename(tables).matchAll(/^(?:unsigned char \*|uint64_t )(\w+)\[/gm)].map((m) => m[1]);
  const names = [...shaders.map(({ name }) => wspRename(name) + "_data"), ...tableNames];
  asm.push("#if defined(_WIN32)", "  .section .drectve,\"yn\"");
  for (let i = 0; i < names.length; i += 40) asm.push(`  .ascii " -exclude-symbols:${names.slice(i, i + 40).join(",")}"`);
  asm.push("#endif");
  fs.writeFileSync(path.join(outDir, "ggml-vulkan-shaders.bin"), Buffer.concat(chunks));
  fs.writeFileSync(path.join(outDir, "ggml-vulkan-shaders.S"), asm.join("\n") + "\n");
  fs.writeFileSync(path.join(outDir, "ggml-vulkan-shaders.hpp"), wspRename(hpp));
  fs.writeFileSync(path.join(outDir, "ggml-vulkan-shaders.cpp"), `// Generated by scripts/vulkan_shaders.mjs (key ${key}): the tables of vulkan-shaders-gen's .cpp; the arrays are in ggml-vulkan-shaders.S.\n#include "ggml-vulkan-shaders.hpp"\n\n` + wspRename(tables));
  return { count: shaders.length, bytes: offset };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args.includes("--check")) {
    const p = vulkanToolsProblem();
    if (p) console.error(`vulkan-shaders: ${p}`);
    process.exit(p ? 1 : 0);
  }
  try {
    console.log(vulkanShaders({ force: args.includes("--force") }));
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}
