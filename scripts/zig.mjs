#!/usr/bin/env node
// Runs the pinned zig, installing it first when it is missing.
//
//   node scripts/zig.mjs build [args…]     same as `zig build [args…]`
//
// zig comes from PyPI's `ziglang` package at exactly ZIG_VERSION. A zig of that
// version on PATH is used as it is; otherwise the wheel is installed with pip into
// .tools/ziglang-<version>/ (project-local, ignored by git).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The one zig version this project builds with (also minimum_zig_version in build.zig.zon). */
export const ZIG_VERSION = "0.15.2";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const toolsDir = path.join(root, ".tools", `ziglang-${ZIG_VERSION}`);
const exe = process.platform === "win32" ? "zig.exe" : "zig";
const localZig = path.join(toolsDir, "ziglang", exe);

function versionOf(cmd) {
  const r = spawnSync(cmd, ["version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** Returns the path of a zig of the pinned version, installing it if needed. */
export function ensureZig({ quiet = false } = {}) {
  if (versionOf("zig") === ZIG_VERSION) return "zig";
  if (fs.existsSync(localZig) && versionOf(localZig) === ZIG_VERSION) return localZig;
  if (!quiet) console.error(`zig ${ZIG_VERSION} not found: installing PyPI's ziglang==${ZIG_VERSION} into .tools/`);
  const python = ["python3", "python"].find((p) => spawnSync(p, ["--version"]).status === 0);
  if (!python) {
    throw new Error(`zig ${ZIG_VERSION} is needed and Python's pip is not available to install it: install Python 3 with pip, or put zig ${ZIG_VERSION} on PATH.`);
  }
  fs.rmSync(toolsDir, { recursive: true, force: true });
  const r = spawnSync(python, ["-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--quiet", "--target", toolsDir, `ziglang==${ZIG_VERSION}`], { stdio: "inherit" });
  if (r.status !== 0 || versionOf(localZig) !== ZIG_VERSION) {
    throw new Error(`installing ziglang==${ZIG_VERSION} with pip failed (exit ${r.status}); install it by hand: ${python} -m pip install ziglang==${ZIG_VERSION}`);
  }
  return localZig;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const zig = ensureZig();
    const r = spawnSync(zig, process.argv.slice(2), { stdio: "inherit", cwd: root });
    process.exit(r.status ?? 1);
  } catch (e) {
    console.error(`zig.mjs: ${e.message}`);
    process.exit(1);
  }
}
