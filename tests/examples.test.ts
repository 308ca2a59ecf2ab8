// Every example under examples/ runs as a child process of this runtime and
// prints what independent sources say: gguf-info what Python's gguf reads
// from a file it wrote; matmul errors within each type's tolerance of a
// float64 product; devices what the package and the OS report; graph the
// hand-derived views, broadcasts and gradients. Timings are never checked.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { root, runTs } from "./run.ts";

const ex = (name: string) => join(root, "examples", name);
const fixtures = join(root, "tests", "fixtures");
const pyFile = join(fixtures, "gguf", "python.gguf");
const python = (() => {
  const r = spawnSync("python3", ["-c", "import gguf, numpy"], { encoding: "utf8" });
  if (r.error) return "python3 is not installed";
  if (r.status !== 0) return "Python's gguf package is missing (pip install -r tests/fixtures/requirements-gguf.txt)";
  return "";
})();

describe("examples/gguf-info.ts", () => {
  const expect = JSON.parse(readFileSync(join(fixtures, "gguf", "python.expect.json"), "utf8")) as {
    kv: { key: string; type: string; array: boolean }[];
    tensors: { name: string; type: string; shape: number[] }[];
  };

  test("--json lists the KVs and tensors Python's gguf wrote (python.expect.json)", () => {
    const info = JSON.parse(runTs(ex("gguf-info.ts"), {}, [pyFile, "--json"]));
    assert.deepEqual(info.kv.map((e: { key: string; type: string; arrayType?: string }) => [e.key, e.arrayType ?? e.type]), expect.kv.map((e) => [e.key, e.type]));
    assert.deepEqual(info.kv.map((e: { type: string }) => e.type === "ARRAY"), expect.kv.map((e) => e.array));
    assert.deepEqual(info.tensors.map((t: { name: string; type: string; shape: number[] }) => [t.name, t.type, t.shape]), expect.tensors.map((t) => [t.name, t.type, t.shape]));
    // 64-bit values are exact JSON numbers, as gguf-dump writes them.
    assert.match(runTs(ex("gguf-info.ts"), {}, [pyFile, "--json"]), /"value": 18446744073709551615/);
  });

  test("--json agrees with Python's GGUFReader on every KV, type, value, tensor offset and size", { skip: python || false }, () => {
    const dir = mkdtempSync(join(tmpdir(), "wsp-gguf-info-"));
    try {
      const json = join(dir, "info.json");
      writeFileSync(json, runTs(ex("gguf-info.ts"), {}, [pyFile, "--json"]));
      const r = spawnSync("python3", [join(fixtures, "check_gguf_info.py"), pyFile, json], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /25 KVs, 4 tensors, 0 mismatch/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the text report shows types, counts, values and the tensor table", () => {
    const out = runTs(ex("gguf-info.ts"), {}, [pyFile]);
    assert.match(out, /GGUF v3, 1376 bytes, alignment 32, data at 1024/);
    assert.match(out, /UINT64 +\| +1 \| t\.u64 = 18446744073709551615/);
    assert.match(out, /\[STRING\] +\| +4 \| a\.str = \["", "a", "ünïcode", "tab\\tnew\\nline"\]/);
    // Offsets and sizes: f32 8×3 = 96 bytes at 0; f16 16×2 = 64 at 96; q8_0 64×2 = 4 blocks of 34 = 136 at 160; f32 5 = 20 at 320.
    assert.match(out, /w\.f32 +F32 +8 × 3 +0 +96\n/);
    assert.match(out, /w\.f16 +F16 +16 × 2 +96 +64\n/);
    assert.match(out, /w\.q8_0 +Q8_0 +64 × 2 +160 +136\n/);
    assert.match(out, /v\.f32 +F32 +5 +320 +20/);
  });

  test("a file that is not GGUF exits 1 with the reader's message", () => {
    assert.throws(() => runTs(ex("gguf-info.ts"), {}, [join(root, "README.md")]), (e: { status?: number; stderr?: string }) => e.status === 1 && /not a GGUF file/.test(String(e.stderr)));
  });
});

test("examples/matmul.ts: every type within its tolerance of the float64 product", () => {
  const out = JSON.parse(runTs(ex("matmul.ts"), {}, ["--m", "64", "--n", "48", "--k", "96", "--repeat", "2", "--json"]));
  const err = Object.fromEntries(out.results.map((r: { type: string; maxError: number }) => [r.type, r.maxError]));
  assert.deepEqual(Object.keys(err), ["f32", "f16", "q8_0", "q4_0"]);
  // Stated bounds (normalised max error, inputs uniform in [-1, 1]).
  assert.ok(err.f32 <= 1e-5, `f32 ${err.f32}`);
  assert.ok(err.f16 <= 2e-3, `f16 ${err.f16}`);
  assert.ok(err.q8_0 <= 2e-2, `q8_0 ${err.q8_0}`);
  assert.ok(err.q4_0 <= 1.5e-1, `q4_0 ${err.q4_0}`);
  // Fewer bits, more error: the types really are what they say.
  assert.ok(err.f32 < err.f16 && err.f16 < err.q8_0 && err.q8_0 < err.q4_0, JSON.stringify(err));
  for (const r of out.results) assert.ok(r.ms > 0 && r.gflops > 0 && r.ok);
});

test("examples/devices.ts: version, CPU device and features as the package and the OS report them", () => {
  const out = JSON.parse(runTs(ex("devices.ts"), {}, ["--json"]));
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  assert.equal(out.system.version, pkg.version);
  assert.equal(out.system.whisperRn, pkg.devDependencies["whisper.rn"]);
  const cpu = out.backends.find((b: { backend: string }) => b.backend === "CPU");
  assert.ok(cpu, "a CPU backend is registered");
  assert.equal(cpu.devices[0].type, "CPU");
  assert.ok(cpu.devices[0].bufferType.isHost);
  if (process.platform === "linux" && existsSync("/proc/cpuinfo") && process.arch === "x64") {
    // Each feature the variant was compiled for must be one this CPU has (the loader chose it by score).
    const flags = new Set(/^flags\s*:(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))![1].trim().split(/\s+/));
    const linuxName: Record<string, string> = {
      SSE3: "pni", SSSE3: "ssse3", AVX: "avx", AVX2: "avx2", F16C: "f16c", FMA: "fma", BMI2: "bmi2", AVX_VNNI: "avx_vnni",
      AVX512: "avx512f", AVX512_VBMI: "avx512vbmi", AVX512_VNNI: "avx512_vnni", AVX512_BF16: "avx512_bf16", AMX_INT8: "amx_int8",
    };
    for (const f of out.system.cpuFeatures as string[]) if (linuxName[f]) assert.ok(flags.has(linuxName[f]), `${f} reported, /proc/cpuinfo lacks ${linuxName[f]}`);
    const memTotal = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"))![1]) * 1024;
    assert.ok(Math.abs(cpu.devices[0].memory.total - memTotal) / memTotal < 0.01, `device memory ${cpu.devices[0].memory.total} vs MemTotal ${memTotal}`);
  }
  const text = runTs(ex("devices.ts"));
  assert.match(text, new RegExp(`^wsp-ggml ${pkg.version.replace(/\./g, "\\.")}: whisper\\.rn `, "m"));
  assert.match(text, /^backend CPU: 1 device\(s\)/m);
});

test("examples/graph.ts: views, permute, broadcasting and gradients as derived by hand", () => {
  const out = runTs(ex("graph.ts"));
  const line = (name: string) => {
    const l = out.split("\n").find((s) => s.startsWith(name + " "));
    assert.ok(l, `no line for ${name}`);
    const [, shape, values] = /^.*? {2,}(\[[^\]]*\]) (\[.*\])$/.exec(l)!;
    return { shape: JSON.parse(shape), values: JSON.parse(values) as number[] };
  };
  const m = Array.from({ length: 12 }, (_, i) => i + 1); // 3 rows of 4
  assert.deepEqual(line("view2d(m) cols 1..2"), { shape: [2, 3], values: [2, 3, 6, 7, 10, 11] });
  assert.deepEqual(line("cont(transpose(m))"), { shape: [3, 4], values: [0, 1, 2, 3].flatMap((c) => [0, 1, 2].map((r) => m[4 * r + c])) });
  // permute(t3, 1, 2, 0, 3): dim 0 → position 1, dim 1 → 2, dim 2 → 0; t3[i0, i1, i2] = i0 + 2 i1 + 6 i2.
  const p: number[] = [];
  for (let a = 0; a < 3; a++) for (let b = 0; b < 2; b++) for (let c = 0; c < 2; c++) p.push(b + 2 * a + 6 * c);
  assert.deepEqual(line("permute(t3, 1,2,0,3)"), { shape: [2, 2, 3], values: p });
  assert.deepEqual(line("m + row (broadcast)").values, m.map((v, i) => v + [10, 20, 30, 40][i % 4]));
  assert.deepEqual(line("m * col (broadcast)").values, m.map((v, i) => v * [1, 0, -1][Math.floor(i / 4)]).map((v) => v + 0));
  // loss = Σ (w x + b)²: ∂/∂w = 2 y x, ∂/∂b_i = Σ_rows 2 y.
  const x = [1, 2, 3, 4, 5, 6], w = [0.5, -1, 2, 0, 1, -0.5], b = [1, 0, -1];
  const y = x.map((xi, i) => w[i] * xi + b[i % 3]);
  assert.deepEqual(line("y = w*x + b").values, y);
  assert.deepEqual(line("loss = sum(y^2)").values, [y.reduce((s, v) => s + v * v, 0)]);
  assert.deepEqual(line("grad w = 2*y*x"), { shape: [3, 2], values: y.map((v, i) => 2 * v * x[i]) });
  assert.deepEqual(line("grad b = sum_rows 2*y"), { shape: [3], values: [0, 1, 2].map((i) => 2 * (y[i] + y[i + 3])) });
});
