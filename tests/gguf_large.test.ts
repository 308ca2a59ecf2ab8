// GGUF files whose metadata outgrows the reader's 1 MiB window (every real model's tokenizer
// does), and zero-element tensors, against Python's gguf package (an independent writer):
// - every fixed-width read of the structural scan, moved across the window's end one byte at a
//   time, returns the file's bytes (the reads once took the old window's view before refilling);
// - a 300,000-string vocabulary written by Python reads back value for value, and writes back
//   byte-identical, zero-element tensor included, from a context and from a backend buffer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Backend, Context, GgufType, GgufWriter, readGguf, type Tensor, tensorGet, Type } from "../mod.ts";

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "wsp-gguf-large-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/** The reader's window (src/gguf/scan.ts CHUNK). */
const WINDOW = 1 << 20;

const python = (() => {
  const r = spawnSync("python3", ["-c", "import gguf, numpy"], { encoding: "utf8" });
  if (r.error) return "python3 is not installed";
  if (r.status !== 0) return "Python's gguf package is missing (pip install -r tests/fixtures/requirements-gguf.txt)";
  return "";
})();

test("every scan read straddling the window's end returns the file's bytes", () => {
  // The file: a padding string KV that ends just before 1 MiB, then the region under test:
  // general.alignment (a u32 the scan reads), an i32 array (element type, u64 length), a string
  // array (u64 lengths), then four 4-d tensor infos (u64 name length, u32 dims, i64 ne, i32 type,
  // u64 offset). Growing the padding one byte per file slides that region across the boundary,
  // so each of its reads starts at every offset 1..width-1 before the window's end in some file.
  const ctx = new Context({ memSize: 1 << 20 });
  const shapes = [[2, 3, 5, 7], [8, 1, 2, 3], [1, 1, 1, 9], [4, 4, 4, 4]];
  const tensors = shapes.map((s, i) => ctx.newTensor(i % 2 ? Type.I32 : Type.F32, s).setName(`t${i}`));
  for (const [i, t] of tensors.entries()) {
    const n = t.nelements;
    t.set(i % 2 ? Int32Array.from({ length: n }, (_, j) => j * 3 - i) : Float32Array.from({ length: n }, (_, j) => j / 4 + i));
  }
  const region = 260; // > the bytes from the end of the padding to the end of the tensor infos
  let straddled = 0;
  for (let shift = 0; shift < region; shift++) {
    const w = new GgufWriter();
    // header 24 + key (8 + 3) + type 4 + length 8 = 47 bytes before the padding's bytes.
    w.set("pad", GgufType.STRING, "p".repeat(WINDOW - 47 - region + shift));
    w.set("general.alignment", GgufType.UINT32, 32);
    w.setArray("arr.i32", GgufType.INT32, [shift, -shift | 0, 7]);
    w.setArray("arr.str", GgufType.STRING, ["a", "bc", `s${shift}`]);
    for (const t of tensors) w.addTensor(t);
    const path = join(tmp, "window.gguf");
    w.write(path);
    w.free();
    const f = readGguf(path);
    assert.equal(f.alignment, 32, `shift ${shift}`);
    assert.equal(f.get("general.alignment"), 32, `shift ${shift}`);
    assert.deepEqual(Array.from(f.get("arr.i32") as Int32Array), [shift, -shift | 0, 7], `shift ${shift}`);
    assert.deepEqual(f.get("arr.str"), ["a", "bc", `s${shift}`], `shift ${shift}`);
    assert.deepEqual(f.tensors.map((t) => [t.name, t.type, t.shape]), tensors.map((t) => [t.name, t.type, t.shape]), `shift ${shift}`);
    const { context, tensors: loaded } = f.loadTensors();
    for (const t of tensors) assert.deepEqual(Array.from(loaded.get(t.name)!.get() as ArrayLike<number>), Array.from(t.get() as ArrayLike<number>), `shift ${shift}: ${t.name}`);
    context.free();
    if (f.tensors.length) straddled++;
  }
  assert.equal(straddled, region);
  ctx.free();
});

/** The i-th string of make_large_gguf.py's vocabulary. */
function piece(i: number): string {
  if (i % 13 === 0) return "\u{1F600}".repeat(i % 3) + i;
  if (i % 11 === 0) return "\u65e5\u672c" + i;
  if (i % 7 === 0) return "\u2581\u00e9" + i;
  if (i % 101 === 0) return "";
  return "tok" + i;
}

test("a 300,000-string vocabulary written by Python: read, loaded, written back byte-identical", { skip: python || false }, () => {
  const path = join(tmp, "large.gguf");
  const n = 300_000;
  const r = spawnSync("python3", [join(here, "fixtures", "make_large_gguf.py"), path, String(n)], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const bytes = readFileSync(path);
  const f = readGguf(path);
  assert.ok(f.tensors[0].fileOffset > 4 * WINDOW, `metadata of ${f.tensors[0].fileOffset} bytes`);
  const vocab = f.get("test.vocab") as string[];
  assert.equal(vocab.length, n);
  for (let i = 0; i < n; i++) if (vocab[i] !== piece(i)) assert.fail(`test.vocab[${i}] is ${JSON.stringify(vocab[i])}, expected ${JSON.stringify(piece(i))}`);
  const scores = f.get("test.scores") as Float32Array;
  const types = f.get("test.types") as Int32Array;
  for (let i = 0; i < n; i++) {
    if (scores[i] !== -i / 4 || types[i] !== i % 6) assert.fail(`entry ${i}: score ${scores[i]}, type ${types[i]}`);
  }
  assert.equal(f.get("test.after_u32"), 4_000_000_007);
  assert.equal(f.get("test.after_i64"), -(2n ** 40n) - 3n);
  assert.equal(f.get("test.after_string"), "past the first window");
  assert.deepEqual(f.tensors.map((t) => [t.name, t.shape, t.nbytes]), [["t.f32", [7, 3], 84], ["t.empty", [0], 0], ["t.i32", [5], 20]]);

  const expectValues = (tensors: Map<string, Tensor>, get: (t: Tensor) => unknown) => {
    assert.deepEqual(Array.from(get(tensors.get("t.f32")!) as Float32Array), Array.from({ length: 21 }, (_, i) => i / 8));
    assert.deepEqual(Array.from(get(tensors.get("t.i32")!) as Int32Array), [-2, -1, 0, 1, 2]);
    assert.equal(tensors.get("t.empty")!.nbytes, 0);
  };
  const writeBack = (tensors: Map<string, Tensor>, out: string) => {
    const w = new GgufWriter();
    w.setAll(f);
    for (const t of tensors.values()) w.addTensor(t);
    w.write(out);
    w.free();
    const back = readFileSync(out);
    assert.equal(back.length, bytes.length, out);
    assert.ok(back.equals(bytes), `${out} differs from Python's file`);
  };

  // Into a context (ggml leaves the zero-element tensor without data there).
  const { context, tensors } = f.loadTensors();
  expectValues(tensors, (t) => t.get());
  writeBack(tensors, join(tmp, "from-context.gguf"));
  // Into a backend buffer (allocated, read straight from the file).
  const backend = Backend.cpu();
  const onBackend = f.loadTensorsToBackend(backend);
  expectValues(onBackend.tensors, tensorGet);
  writeBack(onBackend.tensors, join(tmp, "from-backend.gguf"));
  onBackend.buffer?.free();
  onBackend.context.free();
  backend.free();
  context.free();
});

test("strings keep a leading U+FEFF (a byte-order mark is part of a value, a key or a name)", () => {
  const path = join(tmp, "bom.gguf");
  const ctx = new Context({ memSize: 1 << 16 });
  const w = new GgufWriter();
  w.set("\uFEFFkey", GgufType.STRING, "\uFEFFx");
  w.setArray("arr", GgufType.STRING, ["\uFEFF", "\uFEFF//", "a\uFEFF"]);
  w.addTensor(ctx.newTensor1d(Type.F32, 2).set(new Float32Array([1, 2])).setName("\uFEFFt"));
  w.write(path);
  w.free();
  const f = readGguf(path);
  assert.deepEqual(f.keys(), ["\uFEFFkey", "arr"]);
  assert.equal(f.get("\uFEFFkey"), "\uFEFFx");
  assert.deepEqual(f.get("arr"), ["\uFEFF", "\uFEFF//", "a\uFEFF"]);
  assert.deepEqual(f.tensors.map((t) => t.name), ["\uFEFFt"]);
  const { context, tensors } = f.loadTensors();
  assert.equal([...tensors.values()][0].name, "\uFEFFt");
  context.free();
  ctx.free();
});
