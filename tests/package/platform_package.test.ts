// Choosing the platform package: the name per platform/arch/libc, the libc of
// this process, and the glibc/musl choice when both packages are installed
// (Deno installs both: it ignores the `libc` field, denoland/deno#36597).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { baseLibraryName, detectLibc, LibraryNotFoundError, localBuildDir, locateLibrary, platformPackage } from "../../mod.ts";

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
