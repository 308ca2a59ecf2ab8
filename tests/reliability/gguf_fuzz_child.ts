// The GGUF fuzz run, in its own process (gguf_fuzz.test.ts starts it, so that a crash is a failed
// test naming the seed and case, not a dead runner). Seeds: files made by our writer (every KV type,
// arrays, tensors of several types and ranks, general.alignment) and the Python fixture. Each case
// applies 1–3 structured mutations (header, counts, key lengths, value types, string and array
// lengths, array element types, tensor n_dims, dims, types, offsets, alignment, duplicated or
// removed entries, truncation) or random byte flips, writes the file and opens it: readGguf, then
// the tensors loaded into a context (allocated, and noAlloc) and read with readTensorData, checked
// against the file's bytes. Every case must end in a value or a typed GgmlError.
//
// Environment: WSP_GGML_FUZZ_SEED (default 1), WSP_GGML_FUZZ_CASES (default 3000),
// WSP_GGML_FUZZ_CASE=N (run only case N), WSP_GGML_FUZZ_DUMP=path (write case N's file there).
// Prints `fuzz-progress {...}` at each tenth and `fuzz-report {...}` at the end.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Context, GgmlError, GgufError, GgufType, GgufWriter, quantize, readGguf, Type } from "../../mod.ts";
import { envInt, forcedGc, mib, Rng, root, rss } from "./lib.ts";

const seed = envInt("WSP_GGML_FUZZ_SEED", 1);
const cases = envInt("WSP_GGML_FUZZ_CASES", 3000);
const only = envInt("WSP_GGML_FUZZ_CASE", -1);
const dump = process.env.WSP_GGML_FUZZ_DUMP;
const tmp = mkdtempSync(join(tmpdir(), "wsp-gguf-fuzz-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

// ---- seed files ------------------------------------------------------------------------------
function writerSeed(variant: number): Uint8Array {
  const path = join(tmp, `seed${variant}.gguf`);
  using ctx = new Context({ memSize: 1 << 20 });
  using w = new GgufWriter();
  w.set("general.architecture", GgufType.STRING, `fuzz-${variant}`);
  if (variant !== 1) w.set("general.alignment", GgufType.UINT32, 32);
  w.set("a.u8", GgufType.UINT8, 200).set("a.i8", GgufType.INT8, -5).set("a.u16", GgufType.UINT16, 60000);
  w.set("a.i16", GgufType.INT16, -300).set("a.u32", GgufType.UINT32, 4e9).set("a.i32", GgufType.INT32, -7);
  w.set("a.f32", GgufType.FLOAT32, 1.5).set("a.u64", GgufType.UINT64, 2n ** 40n).set("a.i64", GgufType.INT64, -(2n ** 40n));
  w.set("a.f64", GgufType.FLOAT64, Math.PI).set("a.bool", GgufType.BOOL, true).set("a.str", GgufType.STRING, "héllo wörld");
  w.setArray("arr.i32", GgufType.INT32, [1, -2, 3, -4]).setArray("arr.str", GgufType.STRING, ["x", "", "yz", "ünï"]);
  w.setArray("arr.f32", GgufType.FLOAT32, [0.5, 2.5]).setArray("arr.bool", GgufType.BOOL, [true, false, true]);
  w.setArray("arr.u64", GgufType.UINT64, [1n, 2n ** 63n]).setArray("arr.empty", GgufType.UINT8, []);
  const add = (name: string, t: ReturnType<Context["newTensor"]>) => w.addTensor(t.setName(name));
  const f = (n: number, k: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * k + variant));
  add("t.f32.1d", ctx.newTensor(Type.F32, [7]).set(f(7, 1)));
  add("t.f32.4d", ctx.newTensor(Type.F32, [2, 3, 2, 2]).set(f(24, 2)));
  add("t.f16", ctx.newTensor(Type.F16, [5, 3]).set(f(15, 3)));
  add("t.i32", ctx.newTensor(Type.I32, [3]).set(Int32Array.of(1, -1, 7)));
  if (variant !== 1) {
    add("t.q8_0", ctx.newTensor(Type.Q8_0, [64, 2]).set(quantize(Type.Q8_0, f(128, 4))));
    add("t.q4_0", ctx.newTensor(Type.Q4_0, [32, 1, 2]).set(quantize(Type.Q4_0, f(64, 5))));
  }
  w.write(path);
  return new Uint8Array(readFileSync(path));
}
const seeds: { name: string; bytes: Uint8Array }[] = [
  { name: "writer-0", bytes: writerSeed(0) },
  { name: "writer-1 (no alignment key, float types only)", bytes: writerSeed(1) },
];
try {
  seeds.push({ name: "python fixture", bytes: new Uint8Array(readFileSync(join(root, "tests", "fixtures", "gguf", "python.gguf"))) });
} catch { /* the fixture is optional */ }

// ---- structure map of a seed -----------------------------------------------------------------
type Kind = "version" | "nTensors" | "nKv" | "keyLen" | "vtype" | "atype" | "alen" | "slen" | "scalar" | "alignVal" | "nameLen" | "nDims" | "ne" | "ttype" | "toff";
interface Field { at: number; size: 4 | 8; kind: Kind }
interface Layout { fields: Field[]; kvs: [number, number][]; tensors: [number, number][]; infoEnd: number; dataOffset: number; alignment: number }
const SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

function layout(b: Uint8Array): Layout {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const fields: Field[] = [];
  let p = 4;
  const f = (size: 4 | 8, kind: Kind) => {
    fields.push({ at: p, size, kind });
    const val = size === 4 ? v.getUint32(p, true) : Number(v.getBigUint64(p, true));
    p += size;
    return val;
  };
  f(4, "version");
  const nT = f(8, "nTensors"), nKv = f(8, "nKv");
  const kvs: [number, number][] = [], tensors: [number, number][] = [];
  let alignment = 32;
  for (let i = 0; i < nKv; i++) {
    const start = p;
    const klen = f(8, "keyLen");
    const key = new TextDecoder().decode(b.subarray(p, p + klen));
    p += klen;
    let t = f(4, "vtype"), n = 1;
    const isArr = t === 9;
    if (isArr) {
      t = f(4, "atype");
      n = f(8, "alen");
    }
    for (let j = 0; j < n; j++) {
      if (t === 8) {
        const n = f(8, "slen");
        p += n;
      }
      else if (key === "general.alignment" && !isArr) alignment = f(4, "alignVal");
      else {
        if (SIZE[t] >= 4 && !isArr) fields.push({ at: p, size: SIZE[t] as 4 | 8, kind: "scalar" });
        p += SIZE[t];
      }
    }
    kvs.push([start, p]);
  }
  for (let i = 0; i < nT; i++) {
    const start = p;
    const nl = f(8, "nameLen");
    p += nl;
    const nd = f(4, "nDims");
    for (let j = 0; j < nd; j++) f(8, "ne");
    f(4, "ttype");
    f(8, "toff");
    tensors.push([start, p]);
  }
  return { fields, kvs, tensors, infoEnd: p, dataOffset: Math.ceil(p / alignment) * alignment, alignment };
}
const layouts = seeds.map((s) => layout(s.bytes));

// ---- mutations -------------------------------------------------------------------------------
const U32 = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 31, 33, 64, 255, 256, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const U64 = [0n, 1n, 2n, 3n, 31n, 32n, 33n, 255n, 4096n, 65536n, 65537n, 2n ** 31n, 2n ** 32n, 2n ** 32n + 1n, 2n ** 53n, 2n ** 62n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n];

function setField(b: Uint8Array, fld: Field, r: Rng): string {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (fld.at + fld.size > b.length) return "noop";
  if (fld.size === 4) {
    const cur = v.getUint32(fld.at, true);
    let nv: number;
    const how = r.int(4);
    if (fld.kind === "vtype" || fld.kind === "atype") nv = r.chance(0.8) ? r.range(0, 14) : r.pick(U32);
    else if (fld.kind === "ttype") nv = r.chance(0.8) ? r.range(0, 42) : r.pick(U32);
    else if (fld.kind === "nDims") nv = r.chance(0.8) ? r.range(0, 6) : r.pick(U32);
    else if (how === 0) nv = (cur + r.pick([1, -1, 2, -2, 32, -32])) >>> 0;
    else if (how === 1) nv = r.int(2 ** 32);
    else nv = r.pick(U32);
    v.setUint32(fld.at, nv >>> 0, true);
    return `${fld.kind}@${fld.at}=${nv >>> 0}`;
  }
  const cur = v.getBigUint64(fld.at, true);
  let nv: bigint;
  const how = r.int(5);
  if (how === 0) nv = BigInt.asUintN(64, cur + BigInt(r.pick([1, -1, 2, -2, 32, -32, 64, 1000])));
  else if (how === 1) nv = BigInt.asUintN(64, cur * BigInt(r.range(2, 17)));
  else if (how === 2) nv = BigInt(r.int(b.length * 2));
  else if (how === 3 && fld.kind === "ne") nv = BigInt.asUintN(64, -BigInt(r.range(1, 3)));
  else nv = r.pick(U64);
  v.setBigUint64(fld.at, nv, true);
  return `${fld.kind}@${fld.at}=${nv}`;
}

const u64At = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset).getBigUint64(at, true);
const setU64 = (b: Uint8Array, at: number, v: bigint) => new DataView(b.buffer, b.byteOffset).setBigUint64(at, BigInt.asUintN(64, v), true);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
};

/** One mutation of `b` (which has layout `l` when `fresh`); returns the new bytes and a label. */
function mutate(b: Uint8Array, l: Layout, fresh: boolean, r: Rng): [Uint8Array, string] {
  const kinds = (k: Kind[]) => l.fields.filter((f) => k.includes(f.kind));
  const op = r.int(fresh ? 16 : 5);
  switch (op) {
    case 0: { // random byte flips
      const n = r.range(1, 8);
      for (let i = 0; i < n; i++) b[r.int(b.length)] ^= 1 << r.int(8);
      return [b, `flip×${n}`];
    }
    case 1: { // random bytes in the metadata
      const at = r.int(Math.min(b.length, fresh ? l.infoEnd : b.length));
      b[at] = r.int(256);
      return [b, `byte@${at}`];
    }
    case 2: { // truncation (anywhere, or around a field)
      const cut = fresh && r.chance(0.5) ? Math.max(0, r.pick(l.fields).at + r.range(-1, 2)) : r.int(b.length + 1);
      return [b.slice(0, cut), `truncate@${cut}`];
    }
    case 3: { // random chunk inserted or removed
      const at = r.int(b.length), n = r.range(1, 16);
      if (r.chance(0.5)) return [concat(b.subarray(0, at), Uint8Array.from({ length: n }, () => r.int(256)), b.subarray(at)), `insert${n}@${at}`];
      return [concat(b.subarray(0, at), b.subarray(at + n)), `delete${n}@${at}`];
    }
    case 4: // bytes appended (a valid file stays valid)
      return [concat(b, Uint8Array.from({ length: r.range(1, 64) }, () => r.int(256))), "append"];
    case 5: return [b, setField(b, r.pick(l.fields.filter((f) => f.kind === "version" || f.kind === "nTensors" || f.kind === "nKv")), r)];
    case 6: return [b, setField(b, r.pick(kinds(["keyLen", "nameLen"])), r)];
    case 7: return [b, setField(b, r.pick(kinds(["vtype", "atype"])), r)];
    case 8: return [b, setField(b, r.pick(kinds(["slen", "alen"])), r)];
    case 9: return [b, setField(b, r.pick(kinds(["nDims", "ne"])), r)];
    case 10: return [b, setField(b, r.pick(kinds(["ttype"])), r)];
    case 11: return [b, setField(b, r.pick(kinds(["toff"])), r)];
    case 12: { // alignment: another value (powers of two keep the file consistent only when the padding happens to fit)
      const a = kinds(["alignVal"]);
      if (!a.length) return [b, setField(b, r.pick(kinds(["scalar", "ne"])), r)];
      new DataView(b.buffer, b.byteOffset).setUint32(a[0].at, r.chance(0.6) ? 2 ** r.range(0, 12) : r.pick(U32), true);
      return [b, `alignment=${new DataView(b.buffer, b.byteOffset).getUint32(a[0].at, true)}`];
    }
    case 13: { // a KV or tensor info duplicated, its count raised
      const tensor = r.chance(0.4) && l.tensors.length > 0;
      const [s, e] = r.pick(tensor ? l.tensors : l.kvs);
      const at = tensor ? 8 : 16;
      setU64(b, at, u64At(b, at) + 1n);
      return [concat(b.subarray(0, e), b.subarray(s, e), b.subarray(e)), tensor ? "dup-tensor" : "dup-kv"];
    }
    case 14: { // a KV removed, its count lowered (the data offset moves: valid only by chance)
      const [s, e] = r.pick(l.kvs);
      setU64(b, 16, u64At(b, 16) - 1n);
      return [concat(b.subarray(0, s), b.subarray(e)), "drop-kv"];
    }
    default: { // key or name bytes: a NUL, or the same text as another entry
      const f = r.pick(kinds(["keyLen", "nameLen"]));
      const n = Number(u64At(b, f.at));
      if (n > 0 && f.at + 8 + n <= b.length) b[f.at + 8 + r.int(n)] = r.chance(0.5) ? 0 : r.pick([0x2e, 0xff, 0xc3]);
      return [b, `name-byte@${f.at}`];
    }
  }
}

function makeCase(i: number): { bytes: Uint8Array; label: string; seedName: string } {
  const r = new Rng((seed * 0x9e3779b1 + i * 0x85ebca6b) >>> 0);
  const k = r.int(seeds.length);
  let bytes: Uint8Array = seeds[k].bytes.slice();
  const labels: string[] = [];
  const n = r.chance(0.6) ? 1 : r.range(2, 3);
  for (let j = 0; j < n; j++) {
    const [out, label] = mutate(bytes, layouts[k], j === 0, r);
    bytes = out;
    labels.push(label);
  }
  return { bytes, label: labels.join(" + "), seedName: seeds[k].name };
}

// ---- one case --------------------------------------------------------------------------------
const eq = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

function typed(e: unknown, stage: string): string {
  if (e instanceof GgufError) {
    if (e.reason === "CHANGED") throw new Error(`${stage}: the TS check and ggml disagree (${e.message})`);
    return `${stage}:${e.reason}`;
  }
  if (e instanceof GgmlError) return `${stage}:${e.code}`;
  throw e;
}

function runCase(path: string, bytes: Uint8Array): string {
  writeFileSync(path, bytes);
  let f;
  try {
    f = readGguf(path);
  } catch (e) {
    return typed(e, "read");
  }
  // Loading: tensors whose data the file holds load, and hold the file's bytes.
  const outcome: string[] = ["valid"];
  try {
    const { context, tensors } = f.loadTensors();
    try {
      for (const info of f.tensors) {
        const want = bytes.subarray(info.fileOffset, info.fileOffset + info.nbytes);
        if (!eq(tensors.get(info.name)!.bytes(), want)) throw new Error(`tensor ${info.name}: loaded bytes differ from the file's`);
        if (!eq(f.readTensorData(info), want)) throw new Error(`tensor ${info.name}: readTensorData differs from the file's bytes`);
      }
    } finally {
      context.free();
    }
    outcome.push("loaded");
  } catch (e) {
    outcome.push(typed(e, "load"));
  }
  try {
    using ctx = new Context({ memSize: (f.tensors.length + 1) * 512, noAlloc: true });
    f.loadTensors({ context: ctx });
  } catch (e) {
    outcome.push(typed(e, "noalloc"));
  }
  return outcome.join(",");
}

// ---- the run ---------------------------------------------------------------------------------
const path = join(tmp, "case.gguf");
const gc = forcedGc();
const outcomes = new Map<string, number>();
const failures: { case: number; label: string; seed: string; error: string }[] = [];
const t0 = Date.now();
const first = only >= 0 ? only : 0, last = only >= 0 ? only + 1 : cases;
let rssWarm = 0;
const rssStart = rss();
for (let i = first; i < last; i++) {
  const c = makeCase(i);
  if (dump && i === only) writeFileSync(dump, c.bytes);
  let o: string;
  try {
    o = runCase(path, c.bytes);
  } catch (e) {
    o = "FAILURE";
    failures.push({ case: i, label: c.label, seed: c.seedName, error: String((e as Error)?.stack ?? e).split("\n").slice(0, 4).join(" | ") });
  }
  const cls = o.split(",").map((s) => s.replace(/^(read|load|noalloc):/, "$1:")).join(",");
  outcomes.set(cls, (outcomes.get(cls) ?? 0) + 1);
  if (only < 0 && (i + 1) % Math.max(1, Math.floor(cases / 10)) === 0) {
    gc();
    const now = rss();
    if (i + 1 === Math.max(1, Math.floor(cases / 10))) rssWarm = now;
    console.log(`fuzz-progress ${JSON.stringify({ done: i + 1, rssMiB: mib(now) })}`);
  }
}
gc();
const rssEnd = rss();
console.log(`fuzz-report ${JSON.stringify({
  seed, cases: last - first, ms: Date.now() - t0, seeds: seeds.map((s) => `${s.name} (${s.bytes.length} B)`),
  outcomes: Object.fromEntries([...outcomes].sort((a, b) => b[1] - a[1])), failures: failures.slice(0, 20), nFailures: failures.length,
  rss: { start: rssStart, warm: rssWarm || rssStart, end: rssEnd },
})}`);
