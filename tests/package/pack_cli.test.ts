// scripts/pack.mjs as a command (issue 23, item 6): --help documents
// --allow-missing, and a pack with targets missing fails before any build,
// naming every missing target and the option. Runs on Node (it spawns
// node); skipped on Bun and Deno. Writes into a temporary folder
// (WSP_GGML_PACK_OUT), never into dist-npm/, which pack.test.ts uses.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { root } from "../run.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const onNode = g.Deno === undefined && g.Bun === undefined;
const skip = onNode ? false : "spawns node: runs on Node";
const TARGETS = ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl", "darwin-x64", "darwin-arm64", "win32-x64"];

function pack(args: string[], out: string) {
  return spawnSync(process.execPath, [join(root, "scripts", "pack.mjs"), ...args], { cwd: root, encoding: "utf8", env: { ...process.env, WSP_GGML_PACK_OUT: out }, timeout: 120_000 });
}

test("pack.mjs --help documents --allow-missing and `npm run pack -- --allow-missing`", { skip }, () => {
  const r = pack(["--help"], tmpdir());
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /--allow-missing\s+targets whose zig-out\/dist\/<target> is missing/);
  assert.match(r.stdout, /npm run pack -- --allow-missing/);
});

test("pack.mjs with an unknown option: exit 2 and the usage", { skip }, () => {
  const r = pack(["--allow-mising"], tmpdir());
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown option --allow-mising[\s\S]*--allow-missing/);
});

test("pack.mjs without --allow-missing names every missing target and the option", { skip }, (t) => {
  const missing = TARGETS.filter((x) => !existsSync(join(root, "zig-out", "dist", x)));
  if (missing.length === 0) return t.skip("every target is built here");
  const out = mkdtempSync(join(tmpdir(), "wsp-pack-cli-"));
  try {
    const t0 = performance.now();
    const r = pack(["--pack"], out);
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    // The host's own target may come from the host build (zig-out/lib) instead.
    for (const m of missing.filter((x) => x !== hostTarget())) {
      assert.ok(r.stderr.includes(`@wsp-ggml/${m}: zig-out/dist/${m}`), `${m} named in:\n${r.stderr}`);
    }
    assert.match(r.stderr, /npm run pack -- --allow-missing/);
    assert.ok(!existsSync(join(out, "wsp-ggml", "dist")), "it failed before compiling anything");
    assert.ok(performance.now() - t0 < 60_000);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

function hostTarget(): string {
  if (process.platform !== "linux") return `${process.platform}-${process.arch}`;
  const report = (process as { report?: { getReport(): { header: { glibcVersionRuntime?: string } } } }).report?.getReport();
  return `linux-${process.arch}${report && !report.header.glibcVersionRuntime ? "-musl" : ""}`;
}
