#!/usr/bin/env node
// Everything a fresh clone needs before it can run: `npm run setup` (the test and start
// scripts call it too). Each step is skipped when its result is already in place.
//
//   1. npm dependencies (npm ci) — whisper.rn 0.5.1 is verified by the lockfile's integrity hash
//   2. vendor/ggml/ laid out from whisper.rn and checked against vendor/manifest.json
//   3. the pinned zig (PyPI's ziglang) in .tools/ when not on PATH
//   4. libclang for codegen (Debian's libclang1-14), when --libclang is given
//   5. the Vulkan shaders (scripts/vulkan_shaders.mjs), when glslc and the Vulkan headers are there
//   6. the host libraries in zig-out/lib (`zig build`; incremental; with libggml-vulkan after 5)
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { vulkanShaders, vulkanToolsProblem } from "./vulkan_shaders.mjs";
import { ensureZig } from "./zig.mjs";

/** The repository root. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Path of an npm-installed executable (deno, bun, tsc, …). */
export function bin(name) {
  return path.join(root, "node_modules", ".bin", process.platform === "win32" ? `${name}.cmd` : name);
}

function step(cmd, args, what) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit" });
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${cmd} ${args.join(" ")}`);
}

function libclangPresent() {
  if (process.env.WSP_GGML_LIBCLANG) return fs.existsSync(process.env.WSP_GGML_LIBCLANG);
  return ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"].some((d) => fs.existsSync(path.join(d, "libclang-14.so.1")));
}

/** Runs the set-up steps; `libclang` also installs libclang for codegen. */
export async function setup({ log = console.log, libclang = true } = {}) {
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  if (!fs.existsSync(bin("deno")) || !fs.existsSync(path.join(root, "node_modules", "whisper.rn", "package.json"))) {
    log("setup: installing npm dependencies (npm ci)");
    step(npm, ["ci", "--no-audit", "--no-fund"], "npm ci");
  }
  step(process.execPath, [path.join(root, "scripts", "vendor.mjs")], "vendor step");
  const zig = ensureZig();
  if (libclang && !libclangPresent()) {
    log("setup: installing libclang for codegen (scripts/install-libclang.sh)");
    const r = spawnSync("bash", [path.join(root, "scripts", "install-libclang.sh")], { stdio: "inherit" });
    if (r.status !== 0) log("setup: libclang could not be installed; codegen --check will say what to do");
  }
  // The Vulkan backend's shaders, once per content hash (scripts/vulkan_shaders.mjs): build.zig
  // builds libggml-vulkan from them. Without glslc or the Vulkan headers the CPU build goes on.
  const vkProblem = vulkanToolsProblem();
  if (vkProblem) log(`setup: Vulkan backend skipped: ${vkProblem}`);
  else {
    const t = Date.now();
    vulkanShaders({ log });
    if (Date.now() - t > 1000) log(`setup: Vulkan shaders ready (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }
  log("setup: building the host libraries (zig build)");
  const t0 = Date.now();
  step(zig, ["build"], "zig build");
  log(`setup: host libraries ready in zig-out/lib (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  setup().catch((e) => {
    console.error(`setup: ${e.message}`);
    process.exit(1);
  });
}
