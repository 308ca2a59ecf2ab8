// What a user sees when the libraries cannot be loaded (issue 23, item 7):
// a corrupt CPU-variant library is named in the error (koffi's and bun:ffi's
// dlopen messages do not always name it), and Deno without --allow-ffi gets a
// PermissionError that says which flag to add, not "library not found".
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { localBuildDir, PermissionError } from "../../mod.ts";
import { permissionError } from "../../src/runtime/loader.ts";
import { root, runTsResult } from "../run.ts";

const child = join(root, "tests", "package", "load_child.ts");
const linux = process.platform === "linux";

interface Outcome {
  ok: boolean;
  name?: string;
  code?: string;
  flag?: string;
  message?: string;
}

const last = (stdout: string): Outcome => JSON.parse(stdout.trim().split("\n").pop()!) as Outcome;

test("a CPU variant that dlopen refuses is named in the error", { skip: !linux && "crafts an ELF file" }, () => {
  const dir = mkdtempSync(join(tmpdir(), "wsp-corrupt-"));
  try {
    const libs = readdirSync(localBuildDir()).filter((f) => /ggml/.test(f));
    for (const f of libs) copyFileSync(join(localBuildDir(), f), join(dir, f));
    // Sound ELF and program-header extents (the loader's own size checks pass), but every
    // program header zeroed: dlopen answers "object file has no loadable segments".
    const variant = libs.find((f) => /ggml-cpu-/.test(f))!;
    const bytes = readFileSync(join(dir, variant));
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const phoff = Number(v.getBigUint64(32, true)), phnum = v.getUint16(56, true), phentsize = v.getUint16(54, true);
    bytes.fill(0, phoff, phoff + phnum * phentsize);
    writeFileSync(join(dir, variant), bytes);
    const r = runTsResult(child, { WSP_GGML_LIBRARY_PATH: dir, WSP_GGML_PROBE: "0" });
    assert.equal(r.status, 0, r.stderr);
    const out = last(r.stdout);
    assert.equal(out.ok, false, r.stdout);
    assert.equal(out.name, "LibraryNotFoundError");
    assert.ok(out.message!.includes(join(dir, variant)), out.message);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("Deno without --allow-ffi: a PermissionError that names the flag", () => {
  const deno = join(root, "node_modules", ".bin", process.platform === "win32" ? "deno.cmd" : "deno");
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  delete env.WSP_GGML_LIBRARY_PATH;
  const r = spawnSync(deno, ["run", "--allow-read", "--allow-env", child], { cwd: root, encoding: "utf8", env, timeout: 120_000, shell: process.platform === "win32" });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const out = last(r.stdout);
  assert.equal(out.name, "PermissionError", out.message);
  assert.equal(out.code, "PERMISSION");
  assert.equal(out.flag, "--allow-ffi");
  assert.match(out.message!, /Run it with --allow-ffi/);
  assert.doesNotMatch(out.message!, /not found|could not be opened/);
});

test("Deno with the probe but without --allow-run: a PermissionError naming --allow-run, and no cached verdict", () => {
  const deno = join(root, "node_modules", ".bin", process.platform === "win32" ? "deno.cmd" : "deno");
  const cache = mkdtempSync(join(tmpdir(), "wsp-probe-cache-"));
  try {
    const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", WSP_GGML_PROBE: "1", WSP_GGML_CACHE_DIR: cache };
    delete env.WSP_GGML_LIBRARY_PATH;
    const r = spawnSync(deno, ["run", "--allow-ffi", "--allow-read", "--allow-env", "--allow-write", child], { cwd: root, encoding: "utf8", env, timeout: 120_000, shell: process.platform === "win32" });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const out = last(r.stdout);
    assert.equal(out.name, "PermissionError", out.message);
    assert.equal(out.flag, "--allow-run");
    assert.deepEqual(readdirSync(cache), [], "a refused permission is no verdict on the library");
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

test("permissionError: Deno's refusals become PermissionError; other errors are left alone", () => {
  const denied = Object.assign(new Error('Requires ffi access to "/x/libwsp-ggml.so", run again with the --allow-ffi flag'), { name: "NotCapable" });
  const e = permissionError(denied, "/x/libwsp-ggml.so");
  assert.ok(e instanceof PermissionError);
  assert.equal(e.flag, "--allow-ffi");
  const env = permissionError(Object.assign(new Error('Requires env access to "WSP_GGML_LIBRARY_PATH", run again with the --allow-env flag'), { name: "NotCapable" }));
  assert.equal(env?.flag, "--allow-env");
  assert.equal(permissionError(new Error("file too short")), undefined);
});
