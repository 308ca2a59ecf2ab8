// The version and provenance constants agree with the manifests they repeat:
// package.json (version, whisper.rn), deno.json (version), the vendored tree's
// manifest (whisper.rn version), the platform package templates, and what the
// loaded library says of itself.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { GGML_COMMIT, systemInfo, VERSION, WHISPER_RN_VERSION } from "../../mod.ts";
import { root } from "../run.ts";

const json = (...p: string[]) => JSON.parse(readFileSync(join(root, ...p), "utf8"));

test("version.ts matches package.json, deno.json and the vendored whisper.rn", () => {
  const pkg = json("package.json");
  assert.equal(VERSION, pkg.version);
  assert.equal(VERSION, json("deno.json").version);
  assert.equal(WHISPER_RN_VERSION, pkg.devDependencies["whisper.rn"]);
  assert.equal(WHISPER_RN_VERSION, json("vendor", "manifest.json").version);
  assert.match(GGML_COMMIT, /^[0-9a-f]{7,40}$/);
});

test("systemInfo(): provenance, runtime, the loaded variant and its compiled features, the backends", () => {
  const info = systemInfo();
  assert.equal(info.version, VERSION);
  assert.equal(info.ggmlCommit, GGML_COMMIT);
  assert.equal(info.ggmlVersion, `whisper.rn-${WHISPER_RN_VERSION}`);
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  assert.equal(info.runtime.name, g.Bun !== undefined ? "bun" : g.Deno !== undefined ? "deno" : "node");
  assert.ok(info.cpuVariant.name.length > 0);
  assert.ok(info.cpuVariant.path.includes(info.cpuVariant.name));
  assert.ok(info.backends.some((b) => b.name === "CPU" && b.devices.length > 0), JSON.stringify(info.backends));
  if (process.arch === "x64" && info.cpuVariant.name !== "x64") assert.ok(info.cpuFeatures.includes("SSE3"), String(info.cpuFeatures));
  if (info.cpuVariant.name === "haswell") assert.ok(["AVX", "AVX2", "F16C", "FMA", "BMI2"].every((f) => info.cpuFeatures.includes(f)));
  if (info.cpuVariant.name === "x64") assert.ok(!info.cpuFeatures.includes("AVX"), "the x64 baseline is built without AVX");
  if (info.platform.os === "linux") assert.ok(info.platform.libc === "glibc" || info.platform.libc === "musl");
});
