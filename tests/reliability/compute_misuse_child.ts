// Wrong calls whose precondition only shows at compute time or inside a callback (index values in
// tensor data, handles freed from inside a callback, inputs ggml-quants aborts on, …), run by
// compute_misuse.test.ts in a child process so that a death is a failed test naming the case.
//
//   <runtime> tests/reliability/compute_misuse_child.ts [case names…]   (no names: every case)
//
// Prints `case-start <name>` before and `case-done {"name", "outcome", "detail"}` after each case:
// outcome "ok" when the case behaved (its typed error, or the documented result), else "fail".
import process from "node:process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  allocCtxTensors,
  ArgumentError,
  Backend,
  BackendReg,
  BoundsError,
  Buffer,
  BufferType,
  BusyError,
  Context,
  cpuBufferType,
  Device,
  Gallocr,
  GgmlError,
  GgmlTypeError,
  GgufError,
  GgufWriter,
  LibraryNotFoundError,
  loadLibrary,
  LogLevel,
  logSet,
  OptContext,
  OptDataset,
  OptLossType,
  OptResult,
  quantize,
  readGguf,
  Sched,
  SortOrder,
  Tensor,
  tensorSet,
  Type,
  UnsupportedOpError,
} from "../../mod.ts";
import { logTest } from "../../src/runtime/log.ts";
import { root } from "./lib.ts";

type ErrorClass = abstract new (...args: never[]) => Error;
interface Case {
  readonly name: string;
  /** Runs the case; returns a string describing a failure, or nothing. */
  readonly run: () => void | string | Promise<void | string>;
}

const MiB = 1 << 20;

/** Expects `fn` to throw `cls` (checked with instanceof); returns a failure text otherwise. */
async function throws(cls: ErrorClass | typeof GgmlTypeError, fn: () => unknown): Promise<string | void> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof (cls as ErrorClass)) return;
    return `threw ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}, expected ${cls.name}`;
  }
  return `did not throw (expected ${cls.name})`;
}

const f32 = (ctx: Context, ne: number[], values?: number[]) => {
  const t = ctx.newTensor(Type.F32, ne);
  if (values) t.set(Float32Array.from(values));
  return t;
};
const i32 = (ctx: Context, ne: number[], values: number[]) => ctx.newTensor(Type.I32, ne).set(Int32Array.from(values));
const compute = (ctx: Context, t: Tensor) => ctx.newGraph().buildForwardExpand(t).compute({ nThreads: 1 });

/** A table of 4 rows of 3 values: row r holds r, r + 0.5, r + 0.25. */
const table = (ctx: Context, type: Type = Type.F32) => {
  const t = ctx.newTensor(type, type === Type.Q4_0 || type === Type.Q8_0 ? [32, 4] : [3, 4]);
  const n = t.shape[0];
  const v = Float32Array.from({ length: 4 * n }, (_, i) => Math.floor(i / n) + (i % n) / 4);
  if (type === Type.F32) t.set(v);
  else if (type === Type.F16) t.set(v);
  return t;
};

const cases: Case[] = [
  // ---- the library file (first: it must run before anything loads the library) ----
  { name: "loadLibrary: a truncated library file", run: async () => {
    const dir = mkdtempSync(join(tmpdir(), "wsp-ggml-trunc-"));
    try {
      const lib = join(root, "zig-out", "lib");
      const { copyFileSync, readdirSync, truncateSync } = await import("node:fs");
      for (const f of readdirSync(lib)) copyFileSync(join(lib, f), join(dir, f));
      const base = readdirSync(lib).find((f) => /^(lib)?wsp-ggml\.(so|dylib|dll)$/.test(f));
      if (!base) return "no built library to copy";
      truncateSync(join(dir, base), 4096 * 16);
      const r1 = await throws(LibraryNotFoundError, () => loadLibrary({ path: dir, probe: false }));
      if (r1) return `truncated: ${r1}`;
      writeFileSync(join(dir, base), "not a library at all");
      return throws(LibraryNotFoundError, () => loadLibrary({ path: dir, probe: false }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } },
  // ---- index values in tensor data (issue 21, item 3) ----
  { name: "getRows f32: index past the rows", run: () => {
    using ctx = new Context({ memSize: MiB });
    return throws(BoundsError, () => compute(ctx, ctx.getRows(table(ctx), i32(ctx, [2], [1, 4]))));
  } },
  { name: "getRows f32: negative index", run: () => {
    using ctx = new Context({ memSize: MiB });
    return throws(BoundsError, () => compute(ctx, ctx.getRows(table(ctx), i32(ctx, [2], [-1, 0]))));
  } },
  { name: "getRows f16: index past the rows", run: () => {
    using ctx = new Context({ memSize: MiB });
    return throws(BoundsError, () => compute(ctx, ctx.getRows(table(ctx, Type.F16), i32(ctx, [1], [1 << 30]))));
  } },
  { name: "getRows q8_0: index past the rows", run: () => {
    using ctx = new Context({ memSize: MiB });
    return throws(BoundsError, () => compute(ctx, ctx.getRows(table(ctx, Type.Q8_0), i32(ctx, [1], [4]))));
  } },
  { name: "getRows: in-range indices compute", run: () => {
    using ctx = new Context({ memSize: MiB });
    const r = ctx.getRows(table(ctx), i32(ctx, [2], [3, 0]));
    compute(ctx, r);
    const got = [...r.get(Float32Array)];
    if (got.join() !== [3, 3.25, 3.5, 0, 0.25, 0.5].join()) return `got ${got}`;
  } },
  { name: "getRows: index in a view of a leaf", run: () => {
    using ctx = new Context({ memSize: MiB });
    const ids = i32(ctx, [4], [0, 1, 9, 2]);
    return throws(BoundsError, () => compute(ctx, ctx.getRows(table(ctx), ctx.view1d(ids, 2, 8))));
  } },
  { name: "getRows: index data changed after a good compute", run: () => {
    using ctx = new Context({ memSize: MiB });
    const ids = i32(ctx, [2], [0, 1]);
    const g = ctx.newGraph().buildForwardExpand(ctx.getRows(table(ctx), ids));
    g.compute({ nThreads: 1 });
    ids.set(Int32Array.from([0, 100]));
    return throws(BoundsError, () => g.compute({ nThreads: 1 }));
  } },
  { name: "getRows: Backend.graphCompute", run: () => {
    using ctx = new Context({ memSize: MiB });
    using be = Backend.cpu({ nThreads: 1 });
    const g = ctx.newGraph().buildForwardExpand(ctx.getRows(table(ctx), i32(ctx, [1], [7])));
    return throws(BoundsError, () => be.graphCompute(g));
  } },
  { name: "getRows: Backend.graphComputeAsync", run: () => {
    using ctx = new Context({ memSize: MiB });
    using be = Backend.cpu({ nThreads: 1 });
    const g = ctx.newGraph().buildForwardExpand(ctx.getRows(table(ctx), i32(ctx, [1], [7])));
    return throws(BoundsError, () => be.graphComputeAsync(g));
  } },
  { name: "getRows: Sched.graphCompute over a backend buffer", run: () => {
    using be = Backend.cpu({ nThreads: 1 });
    using w = new Context({ memSize: MiB, noAlloc: true });
    const tab = w.newTensor(Type.F32, [3, 4]), ids = w.newTensor(Type.I32, [2]);
    using buf = allocCtxTensors(w, be)!;
    void buf;
    tensorSet(tab, new Float32Array(12));
    tensorSet(ids, Int32Array.from([1, 5]));
    using cc = new Context({ memSize: MiB, noAlloc: true });
    const g = cc.newGraph().buildForwardExpand(cc.getRows(tab, ids));
    using sched = new Sched({ backends: [be] });
    return throws(BoundsError, () => sched.graphCompute(g));
  } },
  { name: "setRows: i64 row past the destination", run: () => {
    using ctx = new Context({ memSize: MiB });
    const dst = f32(ctx, [3, 4]);
    const idx = ctx.newTensor(Type.I64, [2]).set(BigInt64Array.from([0n, 1n << 40n]));
    return throws(BoundsError, () => compute(ctx, ctx.setRows(dst, f32(ctx, [3, 2], [1, 2, 3, 4, 5, 6]), idx)));
  } },
  { name: "setRows: i32 row past the destination", run: () => {
    using ctx = new Context({ memSize: MiB });
    const dst = f32(ctx, [3, 4]);
    return throws(BoundsError, () => compute(ctx, ctx.setRows(dst, f32(ctx, [3, 2], [1, 2, 3, 4, 5, 6]), i32(ctx, [2], [4, 0]))));
  } },
  { name: "addId: expert past the end", run: () => {
    using ctx = new Context({ memSize: MiB });
    // a [4, 2, 3], b [4, 5] (5 experts), ids [2, 3]
    const ids = i32(ctx, [2, 3], [0, 1, 2, 3, 4, 5]);
    return throws(BoundsError, () => compute(ctx, ctx.addId(f32(ctx, [4, 2, 3]), f32(ctx, [4, 5]), ids)));
  } },
  { name: "mulMatId: expert past the end (SIGSEGV in ggml)", run: () => {
    using ctx = new Context({ memSize: 4 * MiB });
    // as: 2 experts [4, 3]; b [4, 1, 2]; ids [1, 2]
    const ids = i32(ctx, [1, 2], [0, 1 << 24]);
    return throws(BoundsError, () => compute(ctx, ctx.mulMatId(f32(ctx, [4, 3, 2]), f32(ctx, [4, 1, 2]), ids)));
  } },
  { name: "getRowsBack: row past the result", run: () => {
    using ctx = new Context({ memSize: MiB });
    // a [3, 2] (gradient rows), b [2] indices, c [3, 4] → result [3, 4]
    return throws(BoundsError, () => compute(ctx, ctx.getRowsBack(f32(ctx, [3, 2]), i32(ctx, [2], [1, 1 << 28]), f32(ctx, [3, 4]))));
  } },
  { name: "ssmScan: sequence past the state", run: () => {
    using ctx = new Context({ memSize: MiB });
    const s = f32(ctx, [16, 2, 1, 1]), x = f32(ctx, [2, 1, 1, 1]), dt = f32(ctx, [1, 1, 1]), A = f32(ctx, [16, 1]);
    const B = f32(ctx, [16, 1, 1, 1]), C = f32(ctx, [16, 1, 1, 1]);
    return throws(BoundsError, () => compute(ctx, ctx.ssmScan(s, x, dt, A, B, C, i32(ctx, [1], [1 << 26]))));
  } },
  { name: "computed indices: arithmetic is refused", run: () => {
    using ctx = new Context({ memSize: MiB });
    const ids = i32(ctx, [2], [0, 1]);
    return throws(UnsupportedOpError, () => compute(ctx, ctx.getRows(table(ctx), ctx.add(ids, ids))));
  } },
  { name: "computed indices: argsort over more values than rows", run: () => {
    using ctx = new Context({ memSize: MiB });
    return throws(BoundsError, () => compute(ctx, ctx.getRows(table(ctx), ctx.argsort(f32(ctx, [6], [1, 2, 3, 4, 5, 6]), SortOrder.DESC))));
  } },
  { name: "computed indices: topK of an expert score computes", run: () => {
    using ctx = new Context({ memSize: 4 * MiB });
    // 2 experts [4, 3]; scores [2 experts, 2 tokens]; top-1 expert per token
    const scores = f32(ctx, [2, 2], [0.1, 0.9, 0.8, 0.2]);
    const ids = ctx.topK(scores, 1);
    const r = ctx.mulMatId(f32(ctx, [4, 3, 2], Array.from({ length: 24 }, (_, i) => i % 5)), f32(ctx, [4, 1, 2], [1, 1, 1, 1, 1, 1, 1, 1]), ids);
    compute(ctx, r);
    if (r.get(Float32Array).some((v) => !Number.isFinite(v))) return "non-finite result";
  } },
  { name: "computed indices: a leaf the graph writes into is refused", run: () => {
    using ctx = new Context({ memSize: MiB });
    const ids = i32(ctx, [2], [0, 1]);
    const w = ctx.cpy(i32(ctx, [2], [9, 9]), ids);
    const g = ctx.newGraph().buildForwardExpand(w).buildForwardExpand(ctx.getRows(table(ctx), ids));
    return throws(UnsupportedOpError, () => g.compute({ nThreads: 1 }));
  } },
  // ---- lifetimes during callbacks (issue 21, item 5) ----
  { name: "Gallocr.free during an async compute", run: async () => {
    using be = Backend.cpu({ nThreads: 1 });
    using w = new Context({ memSize: MiB });
    const x = f32(w, [256, 256], Array.from({ length: 65536 }, (_, i) => i % 3));
    using cc = new Context({ memSize: MiB, noAlloc: true });
    let y = cc.mulMat(x, x);
    for (let i = 0; i < 8; i++) y = cc.mulMat(x, y);
    const g = cc.newGraph().buildForwardExpand(y);
    using ga = new Gallocr(cpuBufferType());
    ga.allocGraph(g);
    const p = be.graphComputeAsync(g);
    const r = await throws(BusyError, () => ga.free());
    const r2 = await throws(BusyError, () => ga.allocGraph(g));
    await p;
    ga.free(); // works once the compute settled
    return r ?? r2;
  } },
  ...(["sched", "backend", "context", "setEvalCallback(null)"] as const).map((what): Case => ({
    name: `eval callback: ${what === "setEvalCallback(null)" ? "setEvalCallback(null)" : `free the ${what}`} from inside`,
    run: () => {
      const be = Backend.cpu({ nThreads: 1 });
      const ctx = new Context({ memSize: MiB });
      const g = ctx.newGraph().buildForwardExpand(ctx.relu(ctx.relu(f32(ctx, [4], [1, -2, 3, -4]))));
      const sched = new Sched({ backends: [be] });
      sched.setEvalCallback((_node, ask) => {
        if (ask) return true;
        if (what === "sched") sched.free();
        else if (what === "backend") be.free();
        else if (what === "context") ctx.free();
        else sched.setEvalCallback(null);
        return true;
      });
      return throws(BusyError, () => sched.graphCompute(g)).then((r) => {
        // Everything still works afterwards, and frees.
        sched.setEvalCallback(null).graphCompute(g);
        sched.free();
        be.free();
        ctx.free();
        return r;
      });
    },
  })),
  ...(["optimizer", "dataset", "result", "sched", "backend", "model context"] as const).map((what): Case => ({
    name: `epoch callback: free the ${what} from inside`,
    run: () => {
      const m = linearModel();
      const opt = new OptContext({ sched: m.sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR });
      const data = new OptDataset({ neDatapoint: 1, neLabel: 1, ndata: 8 }).setData(new Float32Array(8).fill(1)).setLabels(new Float32Array(8).fill(2));
      const result = new OptResult();
      return throws(BusyError, () =>
        opt.epoch(data, {
          resultTrain: result,
          onProgress: () => {
            if (what === "optimizer") opt.free();
            else if (what === "dataset") data.free();
            else if (what === "result") result.free();
            else if (what === "sched") m.sched.free();
            else if (what === "backend") m.be.free();
            else m.ctxStatic.free();
          },
        })
      ).then((r) => {
        const again = opt.epoch(data); // still usable
        if (!Number.isFinite(again.train.loss.value)) return "no loss after the refused free";
        opt.free();
        data.free();
        result.free();
        m.free();
        return r;
      });
    },
  })),
  { name: "logSet from inside the log callback", run: async () => {
    const seen: string[] = [];
    logSet((_l, text) => {
      seen.push(text);
      logSet((_l2, t2) => {
        seen.push(`second: ${t2}`);
        if (t2 === "fourth\n") logSet(null); // the default again, from inside
      });
    });
    logTest(LogLevel.INFO, "first\n", null, false);
    logTest(LogLevel.INFO, "again\n", null, false); // the change waits for the stack to unwind
    await null;
    logTest(LogLevel.INFO, "third\n", null, false);
    logTest(LogLevel.INFO, "fourth\n", null, false);
    await null;
    logTest(LogLevel.INFO, "fifth (to the default log: dropped)\n", null, false);
    const want = ["first\n", "again\n", "second: third\n", "second: fourth\n"];
    if (JSON.stringify(seen) !== JSON.stringify(want)) return `delivered ${JSON.stringify(seen)}`;
  } },
  // ---- quantize, opt, gguf, loader (issue 21, item 7) ----
  ...(["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"] as const).flatMap((type): Case[] => {
    const src = () => Float32Array.from({ length: 512 }, (_, i) => Math.sin(i * 0.37) * 2);
    const im = () => Float32Array.from({ length: 256 }, (_, i) => 0.5 + (i % 7) / 7);
    const q = (x: Float32Array, w: Float32Array) => quantize(Type[type], x, { nPerRow: 256, imatrix: w });
    return [
      { name: `quantize ${type}: NaN input`, run: () => throws(ArgumentError, () => q(src().fill(NaN, 5, 6), im())) },
      { name: `quantize ${type}: huge input`, run: () => throws(ArgumentError, () => q(src().fill(3e38, 5, 6), im())) },
      { name: `quantize ${type}: zero importance`, run: () => throws(ArgumentError, () => q(src(), im().fill(0))) },
      { name: `quantize ${type}: negative importance`, run: () => throws(ArgumentError, () => q(src(), im().fill(-1))) },
      { name: `quantize ${type}: NaN importance`, run: () => throws(ArgumentError, () => q(src(), im().fill(NaN, 3, 4))) },
      { name: `quantize ${type}: a valid call quantizes`, run: () => void q(src(), im()) },
    ];
  }),
  { name: "epoch: a token in the dataset past the embedding rows", run: async () => {
    using be = Backend.cpu({ nThreads: 1 });
    using sched = new Sched({ backends: [be] });
    using st = new Context({ memSize: MiB, noAlloc: true });
    const emb = st.newTensor2d(Type.F32, 2, 4).setParam(); // 4 rows
    const inputs = st.newTensor2d(Type.I32, 1, 2).setInput(); // one token per datapoint, batch 2
    using buf = allocCtxTensors(st, be)!;
    void buf;
    tensorSet(emb, new Float32Array(8).fill(0.5));
    using cc = new Context({ memSize: 8 * MiB, noAlloc: true });
    const outputs = cc.getRows(emb, cc.reshape1d(inputs, 2)).setOutput(); // [2, batch]
    using opt = new OptContext({ sched, ctxCompute: cc, inputs, outputs, loss: OptLossType.MEAN_SQUARED_ERROR });
    using good = new OptDataset({ typeData: Type.I32, neDatapoint: 1, neLabel: 2, ndata: 4 }).setData(Int32Array.from([0, 1, 2, 3])).setLabels(new Float32Array(8));
    opt.epoch(good); // in range: trains
    using bad = new OptDataset({ typeData: Type.I32, neDatapoint: 1, neLabel: 2, ndata: 4 }).setData(Int32Array.from([0, 1, 4, 3])).setLabels(new Float32Array(8));
    return throws(BoundsError, () => opt.epoch(bad));
  } },
  { name: "OptContext: AdamW on an f16 parameter", run: () => {
    const m = linearModel(Type.F16);
    return throws(GgmlTypeError, () => new OptContext({ sched: m.sched, ctxCompute: m.ctxCompute, inputs: m.inputs, outputs: m.outputs, loss: OptLossType.MEAN_SQUARED_ERROR }));
  } },
  { name: "Sched: parallel with more than 30 inputs", run: () => {
    using be = Backend.cpu({ nThreads: 1 });
    using ctx = new Context({ memSize: 4 * MiB });
    let acc = f32(ctx, [4], [0, 0, 0, 0]).setInput();
    for (let i = 0; i < 40; i++) acc = ctx.add(acc, f32(ctx, [4], [1, 1, 1, 1]).setInput());
    const g = ctx.newGraph().buildForwardExpand(acc);
    using sched = new Sched({ backends: [be], parallel: true });
    return throws(BoundsError, () => sched.graphCompute(g));
  } },
  { name: "Sched: parallel with 30 inputs computes", run: () => {
    using be = Backend.cpu({ nThreads: 1 });
    using ctx = new Context({ memSize: 4 * MiB });
    let acc = f32(ctx, [4], [0, 0, 0, 0]).setInput();
    for (let i = 0; i < 29; i++) acc = ctx.add(acc, f32(ctx, [4], [1, 1, 1, 1]).setInput());
    const g = ctx.newGraph().buildForwardExpand(acc);
    using sched = new Sched({ backends: [be], parallel: true });
    sched.graphCompute(g);
    if (acc.get(Float32Array)[0] !== 29) return `got ${acc.get(Float32Array)[0]}`;
  } },
  { name: "Sched: a huge graphSize", run: async () => {
    using be = Backend.cpu({ nThreads: 1 });
    return (await throws(BoundsError, () => new Sched({ backends: [be], graphSize: 2 ** 40 }))) ??
      throws(BoundsError, () => new Sched({ backends: [be], graphSize: 2 ** 30 }));
  } },
  { name: "GgufWriter.write after the tensor's buffer was freed and reallocated", run: () => {
    using be = Backend.cpu({ nThreads: 1 });
    const w = new Context({ memSize: MiB, noAlloc: true });
    const t = w.newTensor(Type.F32, [1 << 22]).setName("big"); // 16 MiB: freed with munmap
    const buf1 = allocCtxTensors(w, be)!;
    tensorSet(t, new Float32Array(1 << 22).fill(1));
    const gw = new GgufWriter().addTensor(t);
    buf1.free();
    const buf2 = allocCtxTensors(w, be)!;
    tensorSet(t, new Float32Array(1 << 22).fill(2));
    const dir = mkdtempSync(join(tmpdir(), "wsp-ggml-gguf-"));
    try {
      const path = join(dir, "t.gguf");
      gw.write(path);
      const f = readGguf(path);
      const back = f.readTensorData(f.tensors[0]);
      const v = new Float32Array(back.buffer, back.byteOffset, 4);
      if (v[0] !== 2) return `wrote ${v[0]}, expected the current data 2`;
      buf2.free();
      return throws(GgmlError, () => gw.write(path));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      w.free();
    }
  } },
  { name: "readGguf: a directory", run: () => throws(GgufError, () => readGguf(tmpdir())) },
  { name: "OptDataset: more data than memory", run: () => throws(GgmlError, () => new OptDataset({ neDatapoint: 1 << 20, neLabel: 0, ndata: 1 << 22 })) },
  ...([
    ["Device", () => new (Device as unknown as new (p: number) => Device)(0).name],
    ["BackendReg", () => new (BackendReg as unknown as new (p: number) => BackendReg)(0).name],
    ["BufferType", () => new (BufferType as unknown as new (p: number) => BufferType)(0).name],
    ["Buffer", () => new (Buffer as unknown as new (p: number) => Buffer)(0).size],
    ["Backend", () => new (Backend as unknown as new (p: number) => Backend)(0).name],
    ["Tensor", () => new (Tensor as unknown as new (c: Context, o: number, p: undefined) => Tensor)(new Context({ memSize: 1024 }), 1 << 20, undefined).pointer],
  ] as const).map(([what, fn]): Case => ({ name: `new ${what}(0): not a public constructor`, run: () => throws(ArgumentError, fn) })),
];

/** A one-parameter linear model y = a·x on a fresh CPU backend and scheduler. */
function linearModel(paramType: Type = Type.F32) {
  const be = Backend.cpu({ nThreads: 1 });
  const sched = new Sched({ backends: [be] });
  const ctxStatic = new Context({ memSize: MiB, noAlloc: true });
  const a = ctxStatic.newTensor1d(paramType, 1).setParam();
  const inputs = ctxStatic.newTensor2d(Type.F32, 1, 2).setInput();
  const buf = allocCtxTensors(ctxStatic, be)!;
  tensorSet(a, new Float32Array([0.5]));
  const ctxCompute = new Context({ memSize: 8 * MiB, noAlloc: true });
  const outputs = ctxCompute.mul(inputs, paramType === Type.F32 ? a : ctxCompute.cast(a, Type.F32)).setOutput();
  return {
    be, sched, ctxStatic, ctxCompute, inputs, outputs,
    free() {
      sched.free();
      ctxCompute.free();
      buf.free();
      ctxStatic.free();
      be.free();
    },
  };
}

// ---- driver ----------------------------------------------------------------------------------
const wanted = process.argv.slice(2);
if (wanted[0] === "--list") {
  for (const c of cases) console.log(`case-name ${c.name}`);
  process.exit(0);
}
const run = wanted.length === 0 ? cases : wanted.map((n) => cases.find((c) => c.name === n) ?? { name: n, run: () => "no such case" });
for (const c of run) {
  console.log(`case-start ${c.name}`);
  let detail: string | void;
  try {
    detail = await c.run();
  } catch (e) {
    detail = `unexpected ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`;
  }
  console.log(`case-done ${JSON.stringify({ name: c.name, outcome: detail ? "fail" : "ok", detail: detail ?? "" })}`);
}
