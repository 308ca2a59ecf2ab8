#!/usr/bin/env node
// `npm run build [-- zig build args]`: the pinned zig's `zig build`, after the vendor step.
//   npm run build                 host libraries → zig-out/lib
//   npm run build -- dist         every release target → zig-out/dist/<target>
//   npm run build -- -Dvulkan=off without the Vulkan backend (built when glslc and the Vulkan
//                                 headers are installed: Debian's glslc, libvulkan-dev)
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { vulkanShaders, vulkanToolsProblem } from "./vulkan_shaders.mjs";
import { ensureZig } from "./zig.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let r = spawnSync(process.execPath, [path.join(root, "scripts", "vendor.mjs")], { stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);
// The Vulkan shaders (scripts/vulkan_shaders.mjs; cached, ~0 s when unchanged), which build.zig
// then finds in .cache/vulkan-shaders/current; without glslc or the Vulkan headers, no Vulkan.
if (!process.argv.slice(2).some((a) => a.startsWith("-Dvulkan="))) {
  const problem = vulkanToolsProblem();
  if (problem) console.error(`build: Vulkan backend skipped: ${problem}`);
  else vulkanShaders();
}
r = spawnSync(ensureZig(), ["build", ...process.argv.slice(2)], { stdio: "inherit", cwd: root });
process.exit(r.status ?? 1);
