#!/usr/bin/env node
// A second reference build of llama.cpp's llama-bench, the way upstream builds it: CMake and the
// system C/C++ compiler, GGML_NATIVE=ON (-march=native), no OpenMP, llama.cpp b6673's own ggml
// (the second pin's commit, unrenamed, exported from the git bundle that scripts/vendor.mjs
// fetched into .cache/vendor/). Built once into the git-ignored
// .cache/llama-cmake/<content hash>/ (the hash covers the commit, the flags and the compiler's
// version), so a changed compiler or flag builds a new folder.
//
//   node bench/llama_cmake.mjs [--print]     builds if needed; prints the llama-bench path
//
// Needs cmake and a C++ compiler (Debian: apt-get install cmake g++); exits 2 when they are missing.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pin = JSON.parse(readFileSync(join(root, "vendor", "manifest.json"), "utf8")).second;
const git = join(root, ".cache", "vendor", `${pin.package}-${pin.version}.git`);
const FLAGS = [
  "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DGGML_OPENMP=OFF", "-DBUILD_SHARED_LIBS=OFF",
  "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_TOOLS=ON",
];

const which = (cmd) => spawnSync(cmd, ["--version"], { encoding: "utf8" });
const cmake = which("cmake"), cxx = which(process.env.CXX || "c++"), cc = which(process.env.CC || "cc");
if (cmake.status !== 0 || cxx.status !== 0 || cc.status !== 0) {
  console.error("llama_cmake: cmake and a C/C++ compiler are needed (Debian: apt-get install cmake g++)");
  process.exit(2);
}
if (!existsSync(join(git, "HEAD"))) {
  console.error("llama_cmake: the second pin's bundle is not in .cache/vendor/: run `node scripts/vendor.mjs` first");
  process.exit(1);
}
const id = createHash("sha256").update(JSON.stringify({ commit: pin.bundle.commit, FLAGS, cxx: cxx.stdout.split("\n")[0], cc: cc.stdout.split("\n")[0], cmake: cmake.stdout.split("\n")[0] })).digest("hex").slice(0, 16);
const dir = join(root, ".cache", "llama-cmake", id);
const exe = join(dir, "build", "bin", "llama-bench");
if (!existsSync(exe)) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "src"), { recursive: true });
  console.error(`llama_cmake: exporting llama.cpp ${pin.bundle.release} (${pin.bundle.commit.slice(0, 7)}) and building llama-bench in .cache/llama-cmake/${id}/`);
  const tar = execFileSync("git", ["--git-dir", git, "archive", "--format=tar", pin.bundle.commit], { maxBuffer: 1 << 30 });
  execFileSync("tar", ["-x", "-C", join(dir, "src")], { input: tar });
  const run = (args) => {
    const r = spawnSync("cmake", args, { stdio: ["ignore", 2, 2] });
    if (r.status !== 0) throw new Error(`cmake ${args.join(" ")} failed (${r.status})`);
  };
  run(["-S", join(dir, "src"), "-B", join(dir, "build"), "-G", existsSync("/usr/bin/ninja") ? "Ninja" : "Unix Makefiles", ...FLAGS, `-DLLAMA_BUILD_NUMBER=${pin.bundle.release.slice(1)}`, `-DLLAMA_BUILD_COMMIT=${pin.bundle.commit.slice(0, 7)}`]);
  run(["--build", join(dir, "build"), "--target", "llama-bench", "-j", String(cpus().length)]);
  writeFileSync(join(dir, "build-info.json"), JSON.stringify({ commit: pin.bundle.commit, release: pin.bundle.release, flags: FLAGS, cxx: cxx.stdout.split("\n")[0] }, null, 1) + "\n");
}
console.log(exe);
