// The Vulkan backend (issue 25) against the CPU backend, through the public API: mul_mat f32 and
// q4_0, add, rms_norm and soft_max on random inputs, compared as ggml's test-backend-ops does
// (normalized MSE ≤ 5e-4 for mul_mat, ≤ 1e-7 otherwise). On a machine without a GPU this runs on
// Mesa's software driver (lavapipe, Debian's mesa-vulkan-drivers), which ggml-vulkan skips as a
// CPU-type device unless WSP_GGML_VK_VISIBLE_DEVICES names it: the comparison runs in a child
// process with WSP_GGML_VK_VISIBLE_DEVICES=0 (unless set already), since the environment must be
// set before the library loads (and Bun's process.env does not reach C's getenv). Skipped, with
// the loader's reason, where the build has no Vulkan library or the machine no Vulkan loader or device.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import {
  allocCtxTensors, Backend, BackendDevType, Context, devices, Gallocr, loadLibrary, quantize, type Tensor, tensorGet, tensorSet, Type,
} from "../mod.ts";
import { baseLibraryName, cpuVariants, locateLibrary, vulkanLibraryName } from "../src/runtime/loader.ts";
import { runTsResult } from "./run.ts";

const CHILD_ENV = "WSP_GGML_VK_SMOKE_CHILD";

/** A seeded generator (mulberry32) of values in [-1, 1). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  };
}

/** ggml's test-backend-ops error measure: Σ(a−b)² / Σb². */
function nmse(got: Float32Array, want: Float32Array): number {
  let err = 0, norm = 0;
  for (let i = 0; i < want.length; i++) {
    err += (got[i] - want[i]) ** 2;
    norm += want[i] ** 2;
  }
  return err / norm;
}

const K = 256, M = 48, N = 8;
const LIMITS: Record<string, number> = { mul_mat_f32: 5e-4, mul_mat_q4_0: 5e-4, add: 1e-7, rms_norm: 1e-7, soft_max: 1e-7 };

/** Computes every op of LIMITS on `backend`; returns the outputs and whether the backend supports each. */
function compute(backend: Backend): Record<string, { out: Float32Array; supported: boolean }> {
  const rnd = random(25);
  const data = (n: number) => Float32Array.from({ length: n }, rnd);
  const A = data(K * M), B = data(K * N), X = data(K * N);
  using w = new Context({ memSize: 1 << 20, noAlloc: true });
  const a = w.newTensor2d(Type.F32, K, M), aq = w.newTensor2d(Type.Q4_0, K, M);
  const b = w.newTensor2d(Type.F32, K, N), x = w.newTensor2d(Type.F32, K, N);
  using buf = allocCtxTensors(w, backend)!;
  tensorSet(a, A);
  tensorSet(aq, quantize(Type.Q4_0, A, { nPerRow: K }));
  tensorSet(b, B);
  tensorSet(x, X);
  using g = new Context({ memSize: 1 << 20, noAlloc: true });
  const outs: Record<string, Tensor> = {
    mul_mat_f32: g.mulMat(a, b),
    mul_mat_q4_0: g.mulMat(aq, b),
    add: g.add(b, x),
    rms_norm: g.rmsNorm(b, 1e-6),
    soft_max: g.softMax(g.scale(b, 4)),
  };
  const gf = g.newGraph();
  for (const t of Object.values(outs)) gf.buildForwardExpand(t);
  using ga = new Gallocr(backend.defaultBufferType);
  ga.reserve(gf).allocGraph(gf);
  backend.graphCompute(gf);
  const res: Record<string, { out: Float32Array; supported: boolean }> = {};
  for (const [name, t] of Object.entries(outs)) res[name] = { out: Float32Array.from(tensorGet(t) as Float32Array), supported: backend.supportsOp(t) };
  void buf;
  return res;
}

/** The child: loads the library, compares, prints one JSON line. */
function child(): void {
  const lib = loadLibrary();
  if (lib.vulkan.reg === 0) {
    console.log(JSON.stringify({ skip: lib.vulkan.skipped }));
    return;
  }
  const dev = devices().find((d) => d.reg.name === "Vulkan" && d.type !== BackendDevType.CPU);
  if (!dev) {
    console.log(JSON.stringify({ skip: "the Vulkan backend registered no device" }));
    return;
  }
  using cpu = Backend.cpu({ nThreads: 2 });
  using vk = dev.init();
  const want = compute(cpu), got = compute(vk);
  const ops = Object.keys(LIMITS).map((op) => ({ op, supported: got[op].supported, nmse: nmse(got[op].out, want[op].out), limit: LIMITS[op] }));
  console.log(JSON.stringify({ device: dev.description, backend: vk.name, ops }));
}

/** The child without a Vulkan loader: loads, computes on the CPU, says what became of Vulkan. */
function cpuChild(): void {
  const lib = loadLibrary();
  using ctx = new Context({ memSize: 1 << 20 });
  const a = ctx.newTensor1d(Type.F32, 4).set(new Float32Array([1, 2, 3, 4]));
  const y = ctx.add(a, a);
  ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 1 });
  console.log(JSON.stringify({ vulkan: lib.vulkan, y: Array.from(y.get(Float32Array)), devices: devices().map((d) => d.name) }));
}

if (process.env[CHILD_ENV] === "1") {
  child();
} else if (process.env[CHILD_ENV] === "cpu") {
  cpuChild();
} else {
  describe("Vulkan backend against the CPU", () => {
    const r = runTsResult(fileURLToPath(import.meta.url), { [CHILD_ENV]: "1", WSP_GGML_VK_VISIBLE_DEVICES: process.env.WSP_GGML_VK_VISIBLE_DEVICES ?? "0" });
    let answer: { skip?: string; device?: string; backend?: string; ops?: { op: string; supported: boolean; nmse: number; limit: number }[] } = {};
    try {
      answer = JSON.parse(r.stdout.trim().split("\n").pop() ?? "");
    } catch { /* reported below */ }
    test("the child process answered", () => {
      assert.equal(r.status, 0, `child exited ${r.status ?? r.signal}:\n${r.stderr.slice(-3000)}`);
      assert.ok(answer.skip !== undefined || answer.ops !== undefined, `no answer in:\n${r.stdout}`);
    });
    const skip = answer.skip ? `no Vulkan: ${answer.skip}` : false;
    for (const op of Object.keys(LIMITS)) {
      test(`${op}: nMSE ≤ ${LIMITS[op]}`, { skip }, () => {
        const got = answer.ops?.find((o) => o.op === op);
        assert.ok(got, `no result for ${op}`);
        assert.ok(got.supported, `${answer.device} does not support ${op}`);
        assert.ok(got.nmse <= got.limit, `${op} on ${answer.device}: nMSE ${got.nmse} > ${got.limit}`);
      });
    }
  });

  // A machine without the Vulkan loader: the same libraries, with libggml-vulkan.so's need for
  // libvulkan.so.1 renamed to a library no machine has (same length, so the ELF stays valid).
  const dir = (() => {
    try {
      return locateLibrary().dir;
    } catch {
      return undefined;
    }
  })();
  const noLoaderSkip = process.platform !== "linux" ? "Linux only (renames an ELF dependency)"
    : dir === undefined || !existsSync(join(dir, vulkanLibraryName())) ? "the build has no Vulkan library" : false;
  test("without a Vulkan loader the CPU library still loads and computes; Vulkan is skipped with the reason", { skip: noLoaderSkip }, () => {
    const tmp = mkdtempSync(join(tmpdir(), "wsp-novk-"));
    try {
      for (const f of [join(dir!, baseLibraryName()), ...cpuVariants(dir!).values()]) copyFileSync(f, join(tmp, f.split("/").pop()!));
      const vk = readFileSync(join(dir!, vulkanLibraryName()));
      const from = Buffer.from("libvulkan.so.1\0"), to = Buffer.from("libvulkaX.so.1\0");
      const at = vk.indexOf(from);
      assert.ok(at >= 0 && vk.indexOf(from, at + 1) < 0, "libggml-vulkan.so names libvulkan.so.1 once");
      to.copy(vk, at);
      writeFileSync(join(tmp, vulkanLibraryName()), vk);
      const r = runTsResult(fileURLToPath(import.meta.url), { [CHILD_ENV]: "cpu", WSP_GGML_LIBRARY_PATH: tmp, WSP_GGML_VK_VISIBLE_DEVICES: "0", WSP_GGML_DEBUG: "1" });
      assert.equal(r.status, 0, `child exited ${r.status ?? r.signal}:\n${r.stderr.slice(-3000)}`);
      const answer = JSON.parse(r.stdout.trim().split("\n").pop() ?? "");
      assert.deepEqual(answer.y, [2, 4, 6, 8]);
      assert.deepEqual(answer.devices, ["CPU"]);
      assert.equal(answer.vulkan.reg, 0);
      assert.match(answer.vulkan.skipped, /libvulkaX\.so\.1/);
      assert.match(r.stdout + r.stderr, /DEBUG: Vulkan backend skipped/);
      assert.doesNotMatch(r.stderr, /failed to load/, "ggml's load error reached stderr");
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
}
