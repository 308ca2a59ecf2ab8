// Choosing the platform package: the name per platform/arch/libc, the libc of
// this process, and the glibc/musl choice when both packages are installed
// (Deno installs both: it ignores the `libc` field, denoland/deno#36597), and
// the optional `-vulkan` package resolved beside it.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { baseLibraryName, detectLibc, LibraryNotFoundError, localBuildDir, locateLibrary, platformPackage } from "../../mod.ts";
import { vulkanLibraryName, vulkanPackage } from "../../src/runtime/loader.ts";

test("package names: os-arch, -musl on musl Linux only", () => {
  assert.equal(platformPackage("linux", "x64", "glibc"), "@wsp-ggml/linux-x64");
  assert.equal(platformPackage("linux", "arm64", "musl"), "@wsp-ggml/linux-arm64-musl");
  assert.equal(platformPackage("darwin", "arm64", "musl"), "@wsp-ggml/darwin-arm64");
  assert.equal(platformPackage("win32", "x64"), "@wsp-ggml/win32-x64");
});

test("detectLibc: this process's C library (Linux), undefined elsewhere", () => {
  const libc = detectLibc();
  if (process.platform !== "linux") return assert.equal(libc, undefined);
  const report = (process as { report?: { getReport(): { header: { glibcVersionRuntime?: string } } } }).report?.getReport();
  if (report && "glibcVersionRuntime" in report.header) assert.equal(libc, report.header.glibcVersionRuntime ? "glibc" : "musl");
  else assert.ok(libc === "glibc" || libc === "musl");
});

test("both libc packages installed: the libc decides; only the other one: an error naming the right one", { skip: process.platform !== "linux" && "Linux only" }, () => {
  const root = mkdtempSync(join(tmpdir(), "wsp-libc-"));
  const cleanup = [root];
  try {
    const install = (name: string) => {
      const pkg = join(root, "node_modules", ...name.split("/"));
      mkdirSync(join(pkg, "lib"), { recursive: true });
      writeFileSync(join(pkg, "package.json"), JSON.stringify({ name, version: "0.0.0" }));
      for (const f of readdirSync(localBuildDir())) {
        if (f === baseLibraryName() || f.includes("ggml-cpu-")) symlinkSync(join(localBuildDir(), f), join(pkg, "lib", f));
      }
      return pkg;
    };
    const glibc = install(platformPackage("linux", process.arch, "glibc"));
    const musl = install(platformPackage("linux", process.arch, "musl"));
    const places = { localDir: join(root, "no-build"), resolveFrom: join(root, "main.js") };
    assert.equal(locateLibrary({}, {}, { ...places, libc: "glibc" }).dir, join(glibc, "lib"));
    assert.equal(locateLibrary({}, {}, { ...places, libc: "musl" }).dir, join(musl, "lib"));
    // Only the musl one, in a tree of its own (not below the first, whose node_modules it would see).
    const other = mkdtempSync(join(tmpdir(), "wsp-libc-other-"));
    cleanup.push(other);
    mkdirSync(join(other, "node_modules", "@wsp-ggml"), { recursive: true });
    symlinkSync(musl, join(other, "node_modules", ...platformPackage("linux", process.arch, "musl").split("/")));
    assert.throws(() => locateLibrary({}, {}, { ...places, resolveFrom: join(other, "main.js"), libc: "glibc" }), (e: unknown) => {
      assert.ok(e instanceof LibraryNotFoundError);
      const want = platformPackage("linux", process.arch, "glibc");
      assert.ok(e.message.includes(`Install ${want}`), e.message);
      assert.ok(e.searched.at(-1)!.includes(`${platformPackage("linux", process.arch, "musl")} is, but it is built for musl`), e.searched.at(-1));
      return true;
    });
  } finally {
    for (const d of cleanup) rmSync(d, { recursive: true, force: true });
  }
});

test("the -vulkan package beside the platform package: resolved per libc, null when absent, not for an explicit path", () => {
  // Two trees, each laid out before its first lookup (Bun's require cache remembers a package it did not find).
  const without = mkdtempSync(join(tmpdir(), "wsp-vkpkg-"));
  const withGpu = mkdtempSync(join(tmpdir(), "wsp-vkpkg-"));
  try {
    const install = (root: string, name: string, files: string[]) => {
      const pkg = join(root, "node_modules", ...name.split("/"));
      mkdirSync(join(pkg, "lib"), { recursive: true });
      writeFileSync(join(pkg, "package.json"), JSON.stringify({ name, version: "0.0.0" }));
      for (const f of files) writeFileSync(join(pkg, "lib", f), "");
      return pkg;
    };
    const libc = process.platform === "linux" ? detectLibc() : undefined;
    const otherLibc = libc === "musl" ? "glibc" : "musl";
    const name = platformPackage(process.platform, process.arch, libc);
    const other = platformPackage("linux", process.arch, otherLibc);
    const cpuFiles = [baseLibraryName(), process.platform === "win32" ? "ggml-cpu-x64.dll" : "libggml-cpu-x64.so"];
    const pkg = install(without, name, cpuFiles);
    const gpu = join(install(withGpu, `${name}-vulkan`, [vulkanLibraryName()]), "lib");
    install(withGpu, name, cpuFiles);
    if (process.platform === "linux") {
      install(withGpu, other, cpuFiles);
      install(withGpu, `${other}-vulkan`, [vulkanLibraryName()]);
    }
    const places = (root: string) => ({ localDir: join(root, "no-build"), resolveFrom: join(root, "main.js"), libc });
    assert.equal(vulkanPackage(name), `${name}-vulkan`);
    assert.deepEqual(locateLibrary({}, {}, places(without)).vulkanPackage, { name: `${name}-vulkan`, dir: null }, "not installed");
    assert.deepEqual(locateLibrary({}, {}, places(withGpu)).vulkanPackage, { name: `${name}-vulkan`, dir: gpu });
    if (process.platform === "linux") {
      // Each libc's platform package has its own -vulkan package.
      assert.deepEqual(locateLibrary({}, {}, { ...places(withGpu), libc: otherLibc }).vulkanPackage, {
        name: `${other}-vulkan`,
        dir: join(withGpu, "node_modules", ...`${other}-vulkan`.split("/"), "lib"),
      });
    }
    // An explicit place keeps today's rule: the Vulkan library beside the base library, no package.
    assert.equal(locateLibrary({ path: join(pkg, "lib") }, {}, places(withGpu)).vulkanPackage, undefined);
  } finally {
    for (const d of [without, withGpu]) rmSync(d, { recursive: true, force: true });
  }
});
