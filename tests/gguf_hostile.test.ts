// Corrupt, truncated and hostile GGUF files: each gives a GgufError (never an abort, a SIGFPE,
// an uncaught C++ exception or a huge allocation in ggml's reader), all in one process. Then a
// seeded mutation run over the Python fixture: every mutant reads to a value or a GgufError.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GgufError, type GgufErrorReason, GgufType, readGguf, Type } from "../mod.ts";

const here = dirname(fileURLToPath(import.meta.url));
const pyBytes = readFileSync(join(here, "fixtures", "gguf", "python.gguf"));
const tmp = mkdtempSync(join(tmpdir(), "wsp-gguf-hostile-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/** Little-endian GGUF bytes, field by field. */
class Bytes {
  readonly #parts: Uint8Array[] = [];
  #num(n: number, set: (v: DataView) => void): this {
    const b = new Uint8Array(n);
    set(new DataView(b.buffer));
    this.#parts.push(b);
    return this;
  }
  raw(b: Uint8Array | string): this {
    this.#parts.push(typeof b === "string" ? new TextEncoder().encode(b) : b);
    return this;
  }
  u8 = (v: number) => this.#num(1, (d) => d.setUint8(0, v));
  u32 = (v: number) => this.#num(4, (d) => d.setUint32(0, v, true));
  i32 = (v: number) => this.#num(4, (d) => d.setInt32(0, v, true));
  f32 = (v: number) => this.#num(4, (d) => d.setFloat32(0, v, true));
  u64 = (v: bigint | number) => this.#num(8, (d) => d.setBigUint64(0, BigInt.asUintN(64, BigInt(v)), true));
  str(s: string, length?: number): this {
    const b = new TextEncoder().encode(s);
    return this.u64(length ?? b.length).raw(b);
  }
  header(nTensors: bigint | number, nKv: bigint | number, version = 3): this {
    return this.raw("GGUF").u32(version).u64(nTensors).u64(nKv);
  }
  tensor(name: string, ne: (number | bigint)[], type: number, offset: number | bigint = 0): this {
    this.str(name).u32(ne.length);
    for (const n of ne) this.u64(n);
    return this.i32(type).u64(offset);
  }
  pad(to = 32): this {
    const n = this.#parts.reduce((a, p) => a + p.length, 0);
    return this.raw(new Uint8Array((to - (n % to)) % to));
  }
  get bytes(): Uint8Array {
    const out = new Uint8Array(this.#parts.reduce((a, p) => a + p.length, 0));
    let at = 0;
    for (const p of this.#parts) out.set(p, at), at += p.length;
    return out;
  }
}
const file = () => new Bytes();

let n = 0;
function read(bytes: Uint8Array, limits = {}) {
  const path = join(tmp, `f${n++}.gguf`);
  writeFileSync(path, bytes);
  return readGguf(path, limits);
}

const rejects = (reason: GgufErrorReason) => (e: unknown) => e instanceof GgufError && e.reason === reason;

const kvU32 = (b: Bytes, key: string, v: number) => b.str(key).i32(GgufType.UINT32).u32(v);

test("a minimal file of the test's own builder is valid (the builder is right)", () => {
  const f = read(kvU32(file().header(1, 1), "k", 7).tensor("t", [32, 2], Type.Q8_0).pad().raw(new Uint8Array(68)).bytes);
  assert.equal(f.get("k"), 7);
  assert.deepEqual(f.tensors.map((t) => [t.name, t.shape, t.nbytes]), [["t", [32, 2], 68]]);
  const { context } = f.loadTensors();
  context.free();
});

/** [name, bytes, limits, reason]. */
const cases: [string, () => Uint8Array, object, GgufErrorReason][] = [
  ["empty file", () => new Uint8Array(0), {}, "TRUNCATED"],
  ["bad magic", () => file().raw("GGML").u32(3).u64(0).u64(0).bytes, {}, "FORMAT"],
  ["version 0", () => file().header(0, 0, 0).bytes, {}, "FORMAT"],
  ["version 1", () => file().header(0, 0, 1).bytes, {}, "FORMAT"],
  ["version 4", () => file().header(0, 0, 4).bytes, {}, "FORMAT"],
  ["big-endian version", () => file().header(0, 0, 0x03000000).bytes, {}, "FORMAT"],
  ["header cut short", () => file().raw("GGUF").u32(3).u64(0).bytes, {}, "TRUNCATED"],
  ["negative tensor count", () => file().header(-1n, 0).bytes, {}, "INVALID"],
  ["tensor count 2^62", () => file().header(2n ** 62n, 0).bytes, {}, "INVALID"],
  ["KV count 2^63 - 1", () => file().header(0, 2n ** 63n - 1n).bytes, {}, "INVALID"],
  ["KV count over the limit", () => kvU32(kvU32(file().header(0, 2), "a", 1), "b", 2).bytes, { maxKv: 1 }, "INVALID"],
  ["counts larger than the file", () => file().header(1000, 1000).bytes, {}, "TRUNCATED"],
  ["empty key (ggml asserts)", () => kvU32(file().header(0, 1), "", 1).bytes, {}, "INVALID"],
  ["key length 2^64 - 1", () => file().header(0, 1).u64(2n ** 64n - 1n).raw(new Uint8Array(16)).bytes, {}, "INVALID"],
  ["key longer than the file", () => file().header(0, 1).u64(1000).raw("abc").raw(new Uint8Array(16)).bytes, {}, "TRUNCATED"],
  ["key with NUL", () => kvU32(file().header(0, 1), "a\0b", 1).bytes, {}, "INVALID"],
  ["duplicate key", () => kvU32(kvU32(file().header(0, 2), "a", 1), "a", 2).bytes, {}, "DUPLICATE"],
  ["value type 13", () => file().header(0, 1).str("k").i32(13).u32(0).bytes, {}, "INVALID"],
  ["value type -1", () => file().header(0, 1).str("k").i32(-1).u32(0).bytes, {}, "INVALID"],
  ["array of arrays", () => file().header(0, 1).str("k").i32(GgufType.ARRAY).i32(GgufType.ARRAY).u64(1).u64(0).bytes, {}, "INVALID"],
  ["array length 2^40 (ggml allocates first)", () => file().header(0, 1).str("k").i32(GgufType.ARRAY).i32(GgufType.UINT8).u64(2n ** 40n).u64(0).bytes, {}, "INVALID"],
  ["array longer than the file", () => file().header(0, 1).str("k").i32(GgufType.ARRAY).i32(GgufType.UINT64).u64(1000).u64(0).bytes, {}, "TRUNCATED"],
  ["string array longer than the file", () => file().header(0, 1).str("k").i32(GgufType.ARRAY).i32(GgufType.STRING).u64(1000).str("a").bytes, {}, "TRUNCATED"],
  ["string value 2^60 bytes (uncaught length_error in ggml)", () => file().header(0, 1).str("k").i32(GgufType.STRING).u64(2n ** 60n).bytes, {}, "INVALID"],
  ["string value 200 MB in a small file", () => file().header(0, 1).str("k").i32(GgufType.STRING).u64(200_000_000).raw("x").bytes, {}, "TRUNCATED"],
  ["alignment as f32 (ggml asserts)", () => file().header(0, 1).str("general.alignment").i32(GgufType.FLOAT32).f32(32).bytes, {}, "INVALID"],
  ["alignment as a string", () => file().header(0, 1).str("general.alignment").i32(GgufType.STRING).str("32").bytes, {}, "INVALID"],
  ["alignment as a u32 array of 2 (ggml asserts)", () => file().header(0, 1).str("general.alignment").i32(GgufType.ARRAY).i32(GgufType.UINT32).u64(2).u32(32).u32(32).bytes, {}, "INVALID"],
  ["alignment 0", () => kvU32(file().header(0, 1), "general.alignment", 0).bytes, {}, "INVALID"],
  ["alignment 48", () => kvU32(file().header(0, 1), "general.alignment", 48).bytes, {}, "INVALID"],
  ["tensor name of 64 bytes", () => file().header(1, 0).tensor("x".repeat(64), [4], Type.F32).bytes, {}, "INVALID"],
  ["tensor name with NUL", () => file().header(1, 0).tensor("a\0b", [4], Type.F32).bytes, {}, "INVALID"],
  ["duplicate tensor name", () => file().header(2, 0).tensor("t", [8], Type.F32, 0).tensor("t", [8], Type.F32, 32).bytes, {}, "DUPLICATE"],
  ["tensor count over the limit", () => file().header(2, 0).tensor("a", [8], Type.F32, 0).tensor("b", [8], Type.F32, 32).bytes, { maxTensors: 1 }, "INVALID"],
  ["5 dimensions", () => file().header(1, 0).tensor("t", [1, 1, 1, 1, 1], Type.F32).bytes, {}, "INVALID"],
  ["2^32 - 1 dimensions", () => file().header(1, 0).str("t").u32(2 ** 32 - 1).u64(1).raw(new Uint8Array(32)).bytes, {}, "INVALID"],
  ["negative ne", () => file().header(1, 0).tensor("t", [-4n], Type.F32).bytes, {}, "INVALID"],
  ["ne1 = 0 (ggml divides by it: SIGFPE)", () => file().header(1, 0).tensor("t", [4, 0], Type.F32).bytes, {}, "INVALID"],
  ["ne3 = 0", () => file().header(1, 0).tensor("t", [4, 1, 1, 0], Type.F32).bytes, {}, "INVALID"],
  ["element count overflows int64", () => file().header(1, 0).tensor("t", [2n ** 32n, 2n ** 32n], Type.F32).bytes, {}, "INVALID"],
  ["data size beyond 2^53", () => file().header(1, 0).tensor("t", [2n ** 30n, 2n ** 30n], Type.F32).bytes, {}, "INVALID"],
  ["tensor type 99", () => file().header(1, 0).tensor("t", [4], 99).bytes, {}, "INVALID"],
  ["tensor type -1", () => file().header(1, 0).tensor("t", [4], -1).bytes, {}, "INVALID"],
  ["removed tensor type 4 (Q4_2)", () => file().header(1, 0).tensor("t", [32], 4).bytes, {}, "INVALID"],
  ["q8_0 row of 33", () => file().header(1, 0).tensor("t", [33], Type.Q8_0).bytes, {}, "INVALID"],
  ["first offset not 0", () => file().header(1, 0).tensor("t", [4], Type.F32, 32).bytes, {}, "INVALID"],
  ["second offset not padded", () => file().header(2, 0).tensor("a", [4], Type.F32, 0).tensor("b", [4], Type.F32, 16).bytes, {}, "INVALID"],
  ["tensor info cut short", () => file().header(1, 0).str("t").u32(2).u64(4).bytes, {}, "TRUNCATED"],
];

test("hostile files: each gives its typed GgufError", () => {
  const wrong: string[] = [];
  for (const [name, make, limits, reason] of cases) {
    try {
      read(make(), limits);
      wrong.push(`${name}: no error`);
    } catch (e) {
      if (!(e instanceof GgufError) || e.reason !== reason) wrong.push(`${name}: ${e}${e instanceof GgufError ? ` (${e.reason})` : ""}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test("every truncation of a real file: a GgufError, or metadata whose data load is refused", () => {
  let meta = 0;
  for (let len = 0; len < pyBytes.length; len++) {
    try {
      const f = read(pyBytes.subarray(0, len));
      meta++;
      if (f.tensors.every((t) => t.fileOffset + t.nbytes <= len)) f.loadTensors().context.free(); // only padding is missing
      else assert.throws(() => f.loadTensors(), (e: unknown) => e instanceof GgufError && e.reason === "TRUNCATED", `length ${len}`);
    } catch (e) {
      if (!(e instanceof GgufError)) throw e;
      assert.equal(e.reason, "TRUNCATED", `length ${len}: ${e.message}`);
    }
  }
  assert.ok(meta > 0);
});

/** mulberry32: a small seeded generator, so that a failure reproduces. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

test("seeded mutations of a real file: each is a value or a GgufError, never a disagreement with ggml", () => {
  const SEED = 0x5eed, CASES = 400;
  const rand = rng(SEED), int = (n: number) => Math.floor(rand() * n);
  const extremes = [0n, 1n, 31n, 32n, 33n, 64n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n];
  const outcomes = new Map<string, number>();
  for (let i = 0; i < CASES; i++) {
    let b: Uint8Array = pyBytes.slice();
    for (let m = 1 + int(3); m > 0; m--) {
      const at = int(b.length);
      switch (int(4)) {
        case 0: b[at] = int(256); break;
        case 1: if (at + 8 <= b.length) new DataView(b.buffer, b.byteOffset).setBigUint64(at, extremes[int(extremes.length)], true); break;
        case 2: b = b.slice(0, at); break;
        case 3: { const c = new Uint8Array(b.length + 4); c.set(b.subarray(0, at)); c.set(b.subarray(at), at + 4); b = c; }
      }
    }
    let outcome: string;
    try {
      const f = read(b);
      try {
        f.loadTensors().context.free();
        outcome = "loaded";
      } catch (e) {
        if (!(e instanceof GgufError)) throw e;
        outcome = `metadata, load: ${e.reason}`;
      }
    } catch (e) {
      if (!(e instanceof GgufError)) throw new Error(`mutant ${i} (seed ${SEED}): ${e}`);
      assert.notEqual(e.reason, "CHANGED", `mutant ${i} (seed ${SEED}): ggml refused what the check accepted: ${e.message}`);
      outcome = e.reason;
    }
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  assert.ok(outcomes.size >= 3, JSON.stringify([...outcomes]));
});
