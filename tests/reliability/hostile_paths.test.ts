// Hostile paths: the loader (src/runtime/loader.ts: the path option, WSP_GGML_LIBRARY_PATH, the local
// build, the platform package) never takes a library from the working directory or another
// unexpected place, a WSP_GGML_LIBRARY_PATH that holds no usable library is a typed error (not a
// crash), and paths with spaces and non-ASCII characters work for the library and for GGUF files.
//
// The working-directory case plants copies of the real libraries (which would load, and show in
// /proc/self/maps) in every place a naive search would look: the directory itself, its zig-out/lib
// and lib, a node_modules platform package, and each relative run path the built libraries carry
// (zig's linker records its build cache, `.zig-cache/o/<hash>`, relative to the working directory).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import process from "node:process";
import { Context, GgufType, GgufWriter, localBuildDir, platformPackage, readGguf, Type } from "../../mod.ts";
import { describeChild, report, root, runChild } from "./lib.ts";

interface Report {
  loaded: boolean;
  source?: string;
  base?: string;
  cpuPath?: string;
  values?: number[];
  maps?: string[];
  error?: string;
  code?: string | null;
  typed?: boolean;
  message?: string;
}

const child = join(root, "tests", "reliability", "hostile_paths_child.ts");
const tmp = mkdtempSync(join(tmpdir(), "wsp-hostile-"));
after(() => rmSync(tmp, { recursive: true, force: true }));
const libDir = localBuildDir();
const libs = readdirSync(libDir).filter((f) => /ggml/.test(f));
const linux = process.platform === "linux";

/** Runs the child; returns its report (fails with the child's output when it has none, or died). */
function load(env: Record<string, string>, cwd = root): Report {
  const r = runChild(child, { env: { WSP_GGML_LIBRARY_PATH: "", WSP_GGML_PROBE: "0", ...env }, cwd, timeoutMs: 60_000 });
  assert.equal(r.signal, null, `the child was killed\n${describeChild(r)}`);
  assert.equal(r.timedOut, false, describeChild(r));
  assert.equal(r.status, 0, describeChild(r));
  assert.doesNotMatch(r.stderr, /WSP_GGML_ASSERT|GGML_ABORT/, "no ggml assert message");
  const rep = report<Report>(r.stdout, "hostile-report");
  assert.ok(rep, `no report\n${describeChild(r)}`);
  return rep;
}

/** The relative entries of the run paths (DT_RUNPATH / DT_RPATH strings, found next to $ORIGIN) of a library. */
function relativeRunPaths(file: string): string[] {
  const text = readFileSync(file).toString("latin1");
  const out = new Set<string>();
  for (const m of text.matchAll(/[\x20-\x7e]*\$ORIGIN[\x20-\x7e]*/g)) {
    for (const p of m[0].split(":")) if (p && !p.startsWith("/") && !p.startsWith("$")) out.add(p);
  }
  return [...out];
}

const plant = (dir: string) => {
  mkdirSync(dir, { recursive: true });
  for (const f of libs) copyFileSync(join(libDir, f), join(dir, f));
};

const checkComputed = (rep: Report) => assert.deepEqual(rep.values, [1, 2, 3, 4], "(a + a) / 2 computed by the loaded library");

test("a library in the working directory or a relative run path is never loaded", { skip: !linux && "reads /proc/self/maps" }, () => {
  const cwd = join(tmp, "cwd");
  const runPaths = [...new Set(libs.flatMap((f) => relativeRunPaths(join(libDir, f))))];
  const planted = [".", "zig-out/lib", "lib", `node_modules/${platformPackage()}/lib`, ...runPaths];
  for (const p of planted) plant(join(cwd, p));
  writeFileSync(join(cwd, "package.json"), JSON.stringify({ name: "hostile", dependencies: { [platformPackage()]: "*" } }));
  const rep = load({}, cwd);
  assert.ok(rep.loaded, rep.message);
  checkComputed(rep);
  assert.equal(rep.source, "local", "the checkout's own build");
  const mapped = rep.maps!;
  assert.ok(mapped.length >= 2, `the base library and a CPU variant are mapped: ${mapped}`);
  const foreign = mapped.filter((f) => f.startsWith(cwd));
  assert.deepEqual(foreign, [], `libraries mapped from the working directory (planted in ${planted.join(", ")})`);
  for (const f of mapped) assert.ok(f.startsWith(libDir + sep), `${f} is from ${libDir}`);
  console.log(`hostile cwd: planted copies in ${planted.length} places (relative run paths: ${runPaths.join(", ") || "none"}); mapped: ${mapped.map((f) => relative(root, f)).join(", ")}`);
});

test("WSP_GGML_LIBRARY_PATH without a usable library is a typed error, not a crash", () => {
  const junk = join(tmp, "junk");
  mkdirSync(junk, { recursive: true });
  writeFileSync(join(junk, "libwsp-ggml.so"), "this is not a library\n");
  writeFileSync(join(junk, "libwsp-ggml.dylib"), "this is not a library\n");
  writeFileSync(join(junk, "wsp-ggml.dll"), "this is not a library\n");
  writeFileSync(join(junk, "libggml-cpu-x64.so"), "#!/bin/sh\necho pwned\n");
  writeFileSync(join(junk, "notes.txt"), "hello\n");
  // A real library of the wrong kind: the C library's math library, named as ours.
  const wrong = join(tmp, "wrong");
  mkdirSync(wrong, { recursive: true });
  const libm = linux ? readFileSync("/proc/self/maps", "utf8").split("\n").map((l) => l.split(/\s+/).slice(5).join(" ")).find((f) => /\/libm[.-]/.test(f)) : undefined;
  if (libm) {
    copyFileSync(libm, join(wrong, "libwsp-ggml.so"));
    copyFileSync(libm, join(wrong, "libggml-cpu-x64.so"));
  }
  const halfReal = join(tmp, "half");
  mkdirSync(halfReal, { recursive: true });
  copyFileSync(join(libDir, libs.find((f) => /wsp-ggml/.test(f))!), join(halfReal, libs.find((f) => /wsp-ggml/.test(f))!));
  writeFileSync(join(halfReal, "libggml-cpu-x64.so"), "not a library either\n");
  const cases: [string, string][] = [
    ["a directory of text files named like the libraries", junk],
    ["a text file", join(junk, "notes.txt")],
    ["a path that does not exist", join(tmp, "nowhere", "libwsp-ggml.so")],
    ["an empty directory", join(tmp, "cwd", "empty")],
    ["the real base library with a fake CPU variant", halfReal],
    ...(libm ? [["another real library under our names", wrong] as [string, string]] : []),
  ];
  mkdirSync(join(tmp, "cwd", "empty"), { recursive: true });
  const seen: string[] = [];
  for (const [what, path] of cases) {
    const rep = load({ WSP_GGML_LIBRARY_PATH: path });
    assert.equal(rep.loaded, false, `${what}: loaded ${rep.base}`);
    assert.ok(rep.typed, `${what}: threw ${rep.error}: ${rep.message} (want a GgmlError)`);
    assert.equal(rep.code, "LIBRARY_NOT_FOUND", `${what}: ${rep.error}: ${rep.message}`);
    assert.ok([path, dirname(path), "WSP_GGML_LIBRARY_PATH"].some((p) => rep.message!.includes(p)), `${what}: the message names the place: ${rep.message}`);
    seen.push(`${what}: ${rep.error}`);
  }
  console.log(`hostile WSP_GGML_LIBRARY_PATH: ${seen.join("; ")}`);
});

const odd = join(tmp, "dir with spaces", "ünïcødé ✓");

test("WSP_GGML_LIBRARY_PATH with spaces and non-ASCII characters (a directory, the base library itself, with the probe)", () => {
  plant(odd);
  const base = libs.find((f) => /wsp-ggml/.test(f))!;
  const probe = { WSP_GGML_PROBE: "1", WSP_GGML_CACHE_DIR: join(tmp, "probe cache ✓") };
  for (const [path, env] of [[odd, {}], [join(odd, base), {}], [odd, probe]] as const) {
    const rep = load({ WSP_GGML_LIBRARY_PATH: path, ...env }); // (the last: checked first in a probe child)
    assert.ok(rep.loaded, `${path}: ${rep.error}: ${rep.message}`);
    assert.equal(rep.source, "env");
    assert.equal(rep.base, join(odd, base));
    assert.ok(rep.cpuPath!.startsWith(odd + sep), rep.cpuPath);
    checkComputed(rep);
    if (linux) for (const f of rep.maps!) assert.ok(f.startsWith(odd + sep), `${f} is mapped from the configured directory`);
  }
});

test("GGUF files written to and read from a path with spaces and non-ASCII characters", () => {
  const dir = join(tmp, "gguf dir", "dätä ünïcødé ✓");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "wéights 1 ✓.gguf");
  const values = Float32Array.from({ length: 12 }, (_, i) => i * 0.25 - 1);
  {
    using ctx = new Context({ memSize: 1 << 20 });
    using w = new GgufWriter();
    w.set("general.name", GgufType.STRING, "späces ✓");
    w.addTensor(ctx.newTensor2d(Type.F32, 4, 3).set(values).setName("wéight"));
    w.write(path);
  }
  const f = readGguf(path);
  assert.equal(f.get("general.name"), "späces ✓");
  const { context, tensors } = f.loadTensors();
  try {
    assert.deepEqual(Array.from(tensors.get("wéight")!.get(Float32Array)), Array.from(values));
  } finally {
    context.free();
  }
  assert.deepEqual(readdirSync(dir), ["wéights 1 ✓.gguf"], "the file has exactly the name given");
});
