// Calls raw generated symbols on the running runtime: a context, a tensor read
// through the generated layout, by-value-struct functions through their C
// shims, a CPU graph computation, a callback, and the declared-but-undefined
// function.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { bunSymbols, denoSymbols, functions, layouts, LogLevel, MAX_DIMS, Type } from "../src/ffi/bindings.gen.ts";
import { cString, loadAdapter, StructView, SymbolNotDefinedError } from "../src/ffi/mod.ts";
import type { FunctionDef } from "../src/ffi/types.ts";
import { numDef } from "../src/ffi/num_abi.ts";
import { openWspGgml } from "../src/ffi/open.ts";
import { baseLibraryName, bestCpuVariant, locateLibrary } from "../src/runtime/loader.ts";

const ffi = await loadAdapter();
const dir = locateLibrary().dir;
const g = openWspGgml(ffi, { base: join(dir, baseLibraryName()), cpu: bestCpuVariant(ffi, dir) });
const s = g.symbols;
after(() => g.close());

function newContext(memSize: number): number {
  const params = StructView.alloc(layouts.wsp_ggml_init_params);
  params.set("mem_size", memSize);
  params.set("mem_buffer", 0);
  params.set("no_alloc", false);
  const ctx = s.wsp_ggml_init(ffi.addressOf(params.bytes)); // through wsp_shim_ggml_init
  assert.notEqual(ctx, 0);
  return ctx;
}

function f32s(tensor: number, n: number): Float32Array {
  const t = StructView.at(ffi, layouts.wsp_ggml_tensor, tensor);
  return new Float32Array(ffi.view(t.getPointer("data"), n * 4));
}

describe(`raw symbols on ${ffi.runtime}`, () => {
  test("every defined table entry is bound, the undefined ones are not", () => {
    for (const [name, def] of Object.entries(functions as Record<string, FunctionDef & { library: string }>)) {
      if (def.library === "metal") continue;
      assert.equal(g.has(name as keyof typeof functions), def.defined !== false, name);
    }
  });

  test("a declared but undefined function throws a clear error", () => {
    assert.equal(functions.wsp_ggml_threadpool_get_n_threads.defined, false);
    assert.throws(() => s.wsp_ggml_threadpool_get_n_threads(0), (e: unknown) =>
      e instanceof SymbolNotDefinedError && e.symbol === "wsp_ggml_threadpool_get_n_threads" && /defined by no source/.test(e.message));
  });

  test("context, tensor, ne through the layout, free", () => {
    const ctx = newContext(1 << 20);
    const tensor = s.wsp_ggml_new_tensor_3d(ctx, Type.F32, 5, 3, 2);
    const t = StructView.at(ffi, layouts.wsp_ggml_tensor, tensor);
    assert.equal(t.get("type"), Type.F32);
    const ne = Array.from({ length: MAX_DIMS }, (_, i) => t.get("ne", i));
    assert.deepEqual(ne, [5, 3, 2, 1]);
    assert.deepEqual(Array.from({ length: MAX_DIMS }, (_, i) => t.get("nb", i)), [4, 20, 60, 120]);
    assert.equal(s.wsp_ggml_nelements(tensor), 30);
    assert.equal(s.wsp_ggml_nbytes(tensor), 120);
    assert.equal(s.wsp_ggml_n_dims(tensor), 3);
    const name = cString("weights");
    s.wsp_ggml_set_name(tensor, ffi.addressOf(name));
    assert.equal(t.getString("name"), "weights");
    assert.equal(ffi.readCString(s.wsp_ggml_get_name(tensor)), "weights");
    assert.ok(Number(s.wsp_ggml_used_mem(ctx)) >= 120);
    s.wsp_ggml_free(ctx);
  });

  test("a struct returned by value, through the shim", () => {
    const out = StructView.alloc(layouts.wsp_ggml_threadpool_params);
    s.wsp_ggml_threadpool_params_default(3, ffi.addressOf(out.bytes));
    assert.equal(out.get("n_threads"), 3);
    assert.equal(out.get("paused"), false);
    const bf16 = StructView.alloc(layouts.wsp_ggml_bf16_t);
    s.wsp_ggml_fp32_to_bf16(-1.5, ffi.addressOf(bf16.bytes));
    assert.equal(bf16.get("bits"), 0xbfc0); // sign 1, exponent 127, mantissa .1
    assert.equal(s.wsp_ggml_bf16_to_fp32(ffi.addressOf(bf16.bytes)), -1.5);
  });

  test("a graph computed by the CPU variant", async () => {
    const ctx = newContext(1 << 20);
    const a = s.wsp_ggml_new_tensor_1d(ctx, Type.F32, 4);
    const b = s.wsp_ggml_new_tensor_1d(ctx, Type.F32, 4);
    f32s(a, 4).set([1, 2, 3, 4]);
    f32s(b, 4).set([10, 20, 30, 40]);
    const c = s.wsp_ggml_mul(ctx, s.wsp_ggml_add(ctx, a, b), b);
    const gf = s.wsp_ggml_new_graph(ctx);
    s.wsp_ggml_build_forward_expand(gf, c);
    assert.equal(s.wsp_ggml_graph_n_nodes(gf), 2);
    assert.equal(s.wsp_ggml_graph_compute_with_ctx(ctx, gf, 2), 0);
    assert.deepEqual([...f32s(c, 4)], [110, 440, 990, 1760]);
    const nonblocking = g.async.wsp_ggml_graph_compute_with_ctx;
    assert.equal(nonblocking !== undefined, ffi.hasNonblocking);
    if (nonblocking) {
      f32s(a, 4).set([0, 0, 0, 1]);
      assert.equal(await nonblocking(ctx, gf, 2), 0);
      assert.deepEqual([...f32s(c, 4)], [100, 400, 900, 1640]);
    }
    s.wsp_ggml_free(ctx);
  });

  test("a JS log callback called by C", () => {
    const seen: [number, string][] = [];
    const cb = ffi.callback(
      { args: ["i32", "pointer", "pointer"], result: "void" },
      ((level: number, text: number) => void seen.push([level, ffi.readCString(text) ?? ""])) as never,
    );
    try {
      s.wsp_ggml_log_set(cb.pointer, 0);
      const missing = cString(join(dir, "no-such-backend.so"));
      assert.equal(s.wsp_ggml_backend_load(ffi.addressOf(missing)), 0);
    } finally {
      s.wsp_ggml_log_set(0, 0);
      cb.close();
    }
    assert.ok(seen.some(([level, text]) => level === LogLevel.ERROR && text.includes("no-such-backend")), JSON.stringify(seen));
  });

  test("number-ABI wrappers: numbers out, 64-bit arguments as numbers or bigints, exact or refused", () => {
    const table = functions as Record<string, FunctionDef>;
    // Values that may pass 2^53 keep the exact path on every runtime.
    for (const name of ["wsp_gguf_get_val_u64", "wsp_gguf_set_val_i64", "wsp_ggml_backend_buffer_get_max_size", "wsp_ggml_cycles"]) {
      assert.equal(table[name].num, undefined, name);
    }
    assert.equal(table.wsp_ggml_new_tensor_1d.num, "wsp_num_ggml_new_tensor_1d");
    const ctx = newContext(1 << 16);
    try {
      const t = s.wsp_ggml_new_tensor_1d(ctx, Type.F32, 5n);
      assert.equal(typeof t, "number");
      assert.equal(s.wsp_ggml_nelements(t), 5);
      assert.equal(typeof s.wsp_ggml_nbytes(t), "number");
      assert.equal(g.handles.wsp_ggml_nelements(g.handles.wsp_ggml_new_tensor_2d(ctx, Type.F32, 3, 4)), 12, "handles: 64-bit integers as numbers");
      assert.equal(s.wsp_ggml_get_first_tensor(ctx), t, "a pointer result is the same number as before");
      assert.equal(s.wsp_ggml_get_next_tensor(ctx, s.wsp_ggml_get_next_tensor(ctx, t)), 0, "NULL is 0");
      if (ffi.runtime !== "node") {
        // A bigint the double cannot hold is refused before C sees a rounded value (Node's koffi takes it exactly).
        assert.throws(() => s.wsp_ggml_new_tensor_1d(ctx, Type.F32, 2n ** 53n + 1n), RangeError);
      }
    } finally {
      s.wsp_ggml_free(ctx);
    }
  });

  test("the generated runtime tables match the adapter's derivation", async () => {
    const table = functions as Record<string, FunctionDef & { library: "base" | "cpu" | "metal" }>;
    if (ffi.runtime === "deno") {
      const { denoSymbol } = await import(["..", "src", "ffi", "deno.ts"].join("/"));
      for (const [name, def] of Object.entries(table)) {
        assert.deepEqual((denoSymbols[def.library] as Record<string, unknown>)[name], denoSymbol(name, def), name);
      }
    } else if (ffi.runtime === "bun") {
      const { bunSymbol } = await import(["..", "src", "ffi", "bun.ts"].join("/"));
      const { FFIType } = await import(["bun", "ffi"].join(":"));
      for (const [name, def] of Object.entries(table)) {
        const gen = (bunSymbols[def.library] as unknown as Record<string, { args: string[]; returns: string }>)[numDef(name, def).symbol];
        if (def.defined === false) {
          assert.equal(gen, undefined, name);
          continue;
        }
        const want = bunSymbol(numDef(name, def));
        assert.deepEqual({ args: gen.args.map((a) => FFIType[a]), returns: FFIType[gen.returns] }, want, name);
      }
    }
  });
});
