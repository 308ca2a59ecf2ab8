// GGUF read and write against Python's gguf package (an independent implementation):
// tests/fixtures/gguf/python.gguf (written by tests/fixtures/make_gguf_fixtures.py) is read here
// and every value checked; files written here are checked by tests/fixtures/check_gguf.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ArgumentError,
  Backend,
  Context,
  cpuBufferType,
  dequantize,
  GgmlError,
  GgufError,
  GgufType,
  GgufWriter,
  memoryStats,
  NotAllocatedError,
  quantize,
  readGguf,
  ShapeError,
  tensorGet,
  tensorGetBytes,
  Type,
  UseAfterFreeError,
} from "../mod.ts";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, "fixtures");
const pyFile = join(fixtures, "gguf", "python.gguf");
interface ExpectKv { key: string; type: keyof typeof GgufType; array: boolean; value: unknown }
interface ExpectTensor { name: string; type: "F32" | "F16" | "Q8_0"; shape: number[]; values: number[] }
interface Expect { kv: ExpectKv[]; tensors: ExpectTensor[] }
const expect: Expect = JSON.parse(readFileSync(join(fixtures, "gguf", "python.expect.json"), "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "wsp-gguf-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

const python = (() => {
  const r = spawnSync("python3", ["-c", "import gguf, numpy"], { encoding: "utf8" });
  if (r.error) return "python3 is not installed";
  if (r.status !== 0) return "Python's gguf package is missing (pip install -r tests/fixtures/requirements-gguf.txt)";
  return "";
})();
if (python) console.warn(`skipping the Python checks: ${python}`);

/** The JS value the reader gives for an expected JSON value. */
function jsValue(type: number, v: unknown): unknown {
  if (type === GgufType.UINT64 || type === GgufType.INT64) return BigInt(v as string);
  if (type === GgufType.FLOAT32) return Math.fround(v as number);
  return v;
}

function checkEntries(file: ReturnType<typeof readGguf>, kvs: ExpectKv[]): void {
  assert.deepEqual(file.keys(), kvs.map((e) => e.key));
  for (const e of kvs) {
    const entry = file.entry(e.key)!;
    const type = GgufType[e.type];
    if (e.array) {
      assert.equal(entry.type, GgufType.ARRAY, e.key);
      assert.equal(entry.arrayType, type, e.key);
      assert.deepEqual(Array.from(entry.value as ArrayLike<unknown>), (e.value as unknown[]).map((v) => jsValue(type, v)), e.key);
    } else {
      assert.equal(entry.type, type, e.key);
      assert.equal(entry.arrayType, undefined);
      assert.deepEqual(entry.value, jsValue(type, e.value), e.key);
    }
  }
}

function tensorValues(t: { type: number; get(): unknown; bytes(): Uint8Array; shape: number[] }): Float32Array {
  if (t.type === Type.Q8_0) return dequantize(Type.Q8_0, t.bytes(), t.shape[0]);
  return t.get() as Float32Array;
}

test("reads every KV type, tensor info and tensor of a file Python wrote", () => {
  const f = readGguf(pyFile);
  assert.equal(f.version, 3);
  assert.equal(f.alignment, 32);
  assert.equal(f.dataOffset % 32, 0);
  checkEntries(f, expect.kv);
  assert.equal(f.getString("t.str"), "héllo, wörld ✓");
  assert.equal(f.require("a.u8", GgufType.ARRAY, GgufType.UINT8) instanceof Uint8Array, true);
  assert.ok(f.get("a.u64") instanceof BigUint64Array);
  assert.ok(f.get("a.i64") instanceof BigInt64Array);
  let offset = 0;
  assert.deepEqual(f.tensors.map((t) => t.name), expect.tensors.map((t) => t.name));
  for (const e of expect.tensors) {
    const info = f.tensor(e.name)!;
    assert.equal(info.type, Type[e.type]);
    assert.deepEqual(info.shape, e.shape);
    assert.equal(info.offset, offset);
    assert.equal(info.fileOffset, f.dataOffset + offset);
    offset += Math.ceil(info.nbytes / 32) * 32;
  }
  const { context, tensors } = f.loadTensors();
  try {
    // require: the tensor itself, or a GgufError naming what is missing and the closest loaded names.
    const first = expect.tensors[0].name;
    assert.equal(tensors.require(first), tensors.get(first));
    assert.throws(() => tensors.require(`${first}.missing`), (e: unknown) =>
      e instanceof GgufError && e.reason === "NOT_FOUND" && e.message.includes(`no tensor "${first}.missing"`) && e.message.includes(`closest: "${first}"`));
    for (const e of expect.tensors) {
      const t = tensors.require(e.name);
      assert.equal(t.type, Type[e.type]);
      assert.deepEqual(t.shape.slice(0, e.shape.length), e.shape);
      assert.deepEqual(Array.from(tensorValues(t)), e.values.map(Math.fround), e.name);
      assert.deepEqual(f.readTensorData(e.name), t.bytes(), `${e.name}: readTensorData`);
    }
  } finally {
    context.free();
  }
});

test("typed getters refuse other types and missing keys", () => {
  const f = readGguf(pyFile);
  assert.throws(() => f.getString("t.u8"), (e: unknown) => e instanceof GgufError && e.reason === "TYPE");
  assert.throws(() => f.require("nope", GgufType.UINT8), (e: unknown) => e instanceof GgufError && e.reason === "NOT_FOUND");
  assert.throws(() => f.require("a.u8", GgufType.ARRAY, GgufType.INT8), (e: unknown) => e instanceof GgufError && e.reason === "TYPE");
  assert.throws(() => f.readTensorData("nope"), (e: unknown) => e instanceof GgufError && e.reason === "NOT_FOUND");
  assert.throws(() => f.readTensorData("w.f32", new Uint8Array(3)), ArgumentError);
  assert.equal(f.get("nope"), undefined);
});

test("a subset of tensors into a noAlloc context, data read into a caller's buffer", () => {
  const f = readGguf(pyFile);
  using ctx = new Context({ memSize: 1 << 16, noAlloc: true });
  const { tensors } = f.loadTensors({ context: ctx, names: ["w.q8_0"] });
  assert.deepEqual([...tensors.keys()], ["w.q8_0"]);
  assert.equal(tensors.get("w.q8_0")!.isAllocated, false);
  const info = f.tensor("w.q8_0")!;
  const dest = new Uint8Array(info.nbytes);
  assert.equal(f.readTensorData(info, dest), dest);
  assert.deepEqual(Array.from(dequantize(Type.Q8_0, dest, 64)), expect.tensors.find((t) => t.name === "w.q8_0")!.values.map(Math.fround));
});

test("loadTensorsToBackend: every tensor into one CPU buffer, read straight from the file", () => {
  const f = readGguf(pyFile);
  using backend = Backend.cpu();
  for (const target of [backend, cpuBufferType()]) {
    const before = memoryStats().contexts;
    const { context, tensors, buffer } = f.loadTensorsToBackend(target);
    try {
      assert.ok(buffer && buffer.isHost);
      assert.deepEqual([...tensors.keys()], expect.tensors.map((t) => t.name));
      for (const e of expect.tensors) {
        const t = tensors.get(e.name)!;
        // The data lives in the backend buffer (not in the context's pool): the file was read into it.
        assert.ok(t._data >= buffer.base && t._data + t.nbytes <= buffer.base + buffer.size, `${e.name} inside the buffer`);
        const values = t.type === Type.Q8_0 ? dequantize(Type.Q8_0, tensorGetBytes(t), t.shape[0]) : tensorGet(t) as Float32Array;
        assert.deepEqual(Array.from(values), e.values.map(Math.fround), e.name);
      }
    } finally {
      buffer?.free();
      context.free();
    }
    assert.equal(memoryStats().contexts, before, "the context is freed");
  }
  const { context, tensors, buffer } = f.loadTensorsToBackend(backend, { names: ["w.f16"] });
  assert.deepEqual([...tensors.keys()], ["w.f16"]);
  buffer?.free();
  context.free();
  assert.throws(() => f.loadTensorsToBackend(backend, { names: ["nope"] }), (e: unknown) => e instanceof GgufError && e.reason === "NOT_FOUND");
});

/** Values of every KV type, written from TS. */
const written: ExpectKv[] = [
  { key: "general.architecture", type: "STRING", array: false, value: "wsp-ts" },
  { key: "s.u8", type: "UINT8", array: false, value: 200 },
  { key: "s.i8", type: "INT8", array: false, value: -7 },
  { key: "s.u16", type: "UINT16", array: false, value: 65535 },
  { key: "s.i16", type: "INT16", array: false, value: -32768 },
  { key: "s.u32", type: "UINT32", array: false, value: 4294967295 },
  { key: "s.i32", type: "INT32", array: false, value: -2147483648 },
  { key: "s.f32", type: "FLOAT32", array: false, value: -0.375 },
  { key: "s.bool", type: "BOOL", array: false, value: false },
  { key: "s.str", type: "STRING", array: false, value: "naïve ☃" },
  { key: "s.u64", type: "UINT64", array: false, value: "18446744073709551615" },
  { key: "s.i64", type: "INT64", array: false, value: "-9223372036854775807" },
  { key: "s.f64", type: "FLOAT64", array: false, value: 1e-300 },
  { key: "v.u8", type: "UINT8", array: true, value: [1, 2, 255] },
  { key: "v.i8", type: "INT8", array: true, value: [-1, 127] },
  { key: "v.u16", type: "UINT16", array: true, value: [7] },
  { key: "v.i16", type: "INT16", array: true, value: [-2, 2] },
  { key: "v.u32", type: "UINT32", array: true, value: [0, 4294967295] },
  { key: "v.i32", type: "INT32", array: true, value: [-5, 5, 6] },
  { key: "v.f32", type: "FLOAT32", array: true, value: [0.25, 1024] },
  { key: "v.bool", type: "BOOL", array: true, value: [false, true] },
  { key: "v.str", type: "STRING", array: true, value: ["", "tok", "ü"] },
  { key: "v.u64", type: "UINT64", array: true, value: ["1", "18446744073709551614"] },
  { key: "v.i64", type: "INT64", array: true, value: ["-3", "9223372036854775807"] },
  { key: "v.f64", type: "FLOAT64", array: true, value: [Math.PI, -0.5] },
];

const sine = (n: number, phase: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + phase) * 3);

function writeFile(path: string, options: { metaOnly?: boolean } = {}): ExpectTensor[] {
  using ctx = new Context({ memSize: 1 << 20 });
  using w = new GgufWriter();
  for (const e of written) {
    const type = GgufType[e.type];
    if (e.array) w.setArray(e.key, type, (e.value as unknown[]).map((v) => jsValue(type, v)));
    else w.set(e.key, type, jsValue(type, e.value) as number);
  }
  const f32 = ctx.newTensor(Type.F32, [6, 2]).set(sine(12, 1)).setName("t.f32");
  const f16 = ctx.newTensor(Type.F16, [32, 3]).set(sine(96, 2)).setName("t.f16");
  const q = ctx.newTensor(Type.Q8_0, [64, 2]).set(quantize(Type.Q8_0, sine(128, 3), { nPerRow: 64 })).setName("t.q8_0");
  for (const t of [f32, f16, q]) w.addTensor(t);
  w.write(path, options);
  return [f32, f16, q].map((t) => ({
    name: t.name,
    type: t.traits.name.toUpperCase() as ExpectTensor["type"],
    shape: t.shape.slice(0, t.nDims),
    values: Array.from(tensorValues(t)),
  }));
}

test("a file written here reads back with every value", () => {
  const path = join(tmp, "ts.gguf");
  const tensors = writeFile(path);
  const f = readGguf(path);
  checkEntries(f, written);
  const { context, tensors: loaded } = f.loadTensors();
  for (const e of tensors) assert.deepEqual(Array.from(tensorValues(loaded.get(e.name)!)), e.values);
  context.free();
});

test("Python's gguf reads a file written here", { skip: python || false }, () => {
  const path = join(tmp, "py-check.gguf");
  const tensors = writeFile(path);
  const expectPath = join(tmp, "py-check.json");
  writeFileSync(expectPath, JSON.stringify({ kv: written, tensors }));
  const r = spawnSync("python3", [join(fixtures, "check_gguf.py"), path, expectPath], { encoding: "utf8" });
  assert.equal(r.stdout.trim(), "ok", r.stdout + r.stderr);
  assert.equal(r.status, 0);
});

test("Python's gguf agrees with the fixture's expectation (check_gguf.py itself)", { skip: python || false }, () => {
  const r = spawnSync("python3", [join(fixtures, "check_gguf.py"), pyFile, join(fixtures, "gguf", "python.expect.json")], { encoding: "utf8" });
  assert.equal(r.stdout.trim(), "ok", r.stdout + r.stderr);
});

test("metadata only: metaData() is the file's head; a meta-only file has no tensor data", () => {
  const full = join(tmp, "full.gguf"), meta = join(tmp, "meta.gguf");
  writeFile(full);
  writeFile(meta, { metaOnly: true });
  using w = new GgufWriter();
  w.set("general.architecture", GgufType.STRING, "x");
  const bytes = w.metaData();
  assert.equal(bytes.length, w.metaSize);
  assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "GGUF");
  const head = readFileSync(full), m = readFileSync(meta);
  const f = readGguf(meta);
  assert.equal(m.length, f.dataOffset);
  assert.deepEqual(m, head.subarray(0, m.length));
  assert.equal(f.tensors.length, 3);
  assert.throws(() => f.loadTensors(), (e: unknown) => e instanceof GgufError && e.reason === "TRUNCATED");
  using lazy = new Context({ memSize: 1 << 16, noAlloc: true });
  assert.equal(f.loadTensors({ context: lazy }).tensors.size, 3);
});

test("writer misuse: each wrong call throws its typed error and the writer stays usable", () => {
  using ctx = new Context({ memSize: 1 << 20 });
  const t = ctx.newTensor(Type.F32, [4, 4]).setName("t");
  const dead = new Context({ memSize: 1 << 16 });
  const deadT = dead.newTensor(Type.F32, [4]).setName("dead");
  using lazy = new Context({ memSize: 1 << 16, noAlloc: true });
  const noData = lazy.newTensor(Type.F32, [4]).setName("nodata");
  const w = new GgufWriter();
  w.set("k", GgufType.UINT8, 1);
  w.addTensor(t);
  const is = (reason: string) => (e: unknown) => e instanceof GgufError && e.reason === reason;
  const cases: [string, () => unknown, (e: unknown) => boolean][] = [
    ["duplicate key", () => w.set("k", GgufType.UINT8, 2), is("DUPLICATE")],
    ["duplicate key, array", () => w.setArray("k", GgufType.UINT8, [2]), is("DUPLICATE")],
    ["empty key", () => w.set("", GgufType.UINT8, 1), is("INVALID")],
    ["key with NUL", () => w.set("a\0b", GgufType.UINT8, 1), is("INVALID")],
    ["u8 out of range", () => w.set("x", GgufType.UINT8, 256), is("TYPE")],
    ["i8 fractional", () => w.set("x", GgufType.INT8, 1.5), is("TYPE")],
    ["u32 negative", () => w.set("x", GgufType.UINT32, -1), is("TYPE")],
    ["u64 too large", () => w.set("x", GgufType.UINT64, 2n ** 64n), is("TYPE")],
    ["i64 unsafe number", () => w.set("x", GgufType.INT64, 2 ** 60), is("TYPE")],
    ["f32 from a string", () => w.set("x", GgufType.FLOAT32, "1" as never), is("TYPE")],
    ["bool from a number", () => w.set("x", GgufType.BOOL, 1 as never), is("TYPE")],
    ["string with NUL", () => w.set("x", GgufType.STRING, "a\0b"), is("INVALID")],
    ["scalar of type ARRAY", () => w.set("x", GgufType.ARRAY, 1), is("TYPE")],
    ["array of arrays", () => w.setArray("x", GgufType.ARRAY, []), is("TYPE")],
    ["array of type out of range", () => w.setArray("x", 99 as GgufType, [1]), is("TYPE")],
    ["array element out of range", () => w.setArray("x", GgufType.INT16, [1, 40000]), is("TYPE")],
    ["array that is not an array", () => w.setArray("x", GgufType.INT16, 5 as never), is("TYPE")],
    ["alignment as u64", () => w.set("general.alignment", GgufType.UINT64, 32n), is("TYPE")],
    ["alignment not 32", () => w.set("general.alignment", GgufType.UINT32, 64), is("INVALID")],
    ["alignment as an array", () => w.setArray("general.alignment", GgufType.UINT32, [32]), is("TYPE")],
    ["duplicate tensor", () => w.addTensor(ctx.newTensor(Type.F32, [2]).setName("t")), is("DUPLICATE")],
    ["unnamed tensor", () => w.addTensor(ctx.newTensor(Type.F32, [2])), is("INVALID")],
    ["not a tensor", () => w.addTensor({} as never), (e) => e instanceof ArgumentError],
    ["non-contiguous tensor", () => w.addTensor(ctx.transpose(t).setName("tt")), (e) => e instanceof ShapeError],
  ];
  for (const [name, call, ok] of cases) assert.throws(call, ok, name);
  w.set("general.alignment", GgufType.UINT32, 32);
  w.set("k", GgufType.INT32, -1, { replace: true });
  assert.deepEqual(w.keys(), ["general.alignment", "k"]);
  assert.equal(w.remove("k"), true);
  assert.equal(w.remove("k"), false);
  w.addTensor(deadT);
  dead.free();
  assert.throws(() => w.write(join(tmp, "dead.gguf")), UseAfterFreeError);
  const w2 = new GgufWriter();
  w2.addTensor(noData);
  assert.throws(() => w2.write(join(tmp, "nodata.gguf")), NotAllocatedError);
  w2.write(join(tmp, "nodata-meta.gguf"), { metaOnly: true });
  assert.throws(() => w2.write(join(tmp, "no-such-dir", "x.gguf"), { metaOnly: true }), is("IO"));
  w2.free();
  w.free();
  w.free();
  assert.throws(() => w.set("y", GgufType.UINT8, 1), UseAfterFreeError);
  assert.throws(() => readGguf(join(tmp, "missing.gguf")), is("IO"));
  assert.throws(() => readGguf(""), ArgumentError);
});

test("setAll copies a file's KVs into a writer", () => {
  using w = new GgufWriter();
  w.setAll(readGguf(pyFile));
  const path = join(tmp, "copy.gguf");
  w.write(path);
  checkEntries(readGguf(path), expect.kv);
  assert.ok(new GgufError("IO", "x") instanceof GgmlError);
});
