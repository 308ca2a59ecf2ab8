// Every generated struct layout equals what the compiler that built the
// library says, through the probes compiled into native/shim/base.gen.c.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { layouts } from "../src/ffi/bindings.gen.ts";
import { cString, loadAdapter } from "../src/ffi/mod.ts";
import { baseLibraryName, locateLibrary } from "../src/runtime/loader.ts";

const ffi = await loadAdapter();
const lib = ffi.open(join(locateLibrary().dir, baseLibraryName()), {
  wsp_shim_layout: { args: ["pointer", "pointer", "i32"], result: "i64" },
} as const);

const SIZEOF = 0, ALIGNOF = 1, OFFSETOF = 2, FIELD_SIZEOF = 3;

function probe(record: string, field: string | null, what: number): number {
  const r = cString(record);
  const f = field === null ? null : cString(field);
  const v = Number(lib.symbols.wsp_shim_layout(ffi.addressOf(r), f ? ffi.addressOf(f) : 0, what));
  assert.ok(r.length > 0 && (f === null || f.length > 0)); // keeps both buffers alive across the call
  return v;
}

describe(`struct layouts on ${ffi.runtime}`, () => {
  test("the probes know every generated record", () => {
    assert.ok(Object.keys(layouts).length >= 7);
    assert.equal(probe("no_such_record", null, SIZEOF), -1);
    assert.equal(probe("wsp_ggml_tensor", "no_such_field", OFFSETOF), -1);
  });
  for (const [key, layout] of Object.entries(layouts)) {
    test(key, () => {
      assert.equal(layout.size, probe(key, null, SIZEOF), `sizeof ${layout.name}`);
      assert.equal(layout.align, probe(key, null, ALIGNOF), `_Alignof ${layout.name}`);
      for (const [name, f] of Object.entries(layout.fields)) {
        assert.equal(f.offset, probe(key, name, OFFSETOF), `offsetof(${layout.name}, ${name})`);
        assert.equal(f.size, probe(key, name, FIELD_SIZEOF), `sizeof ${layout.name}.${name}`);
      }
    });
  }
  test("the layouts the API needs are there", () => {
    for (const k of ["wsp_ggml_tensor", "wsp_ggml_init_params", "wsp_gguf_init_params", "wsp_ggml_opt_params", "wsp_ggml_backend_dev_props", "wsp_ggml_threadpool_params", "wsp_ggml_cplan"]) {
      assert.ok(k in layouts, k);
    }
    for (const f of ["type", "ne", "nb", "op", "op_params", "flags", "src", "view_src", "view_offs", "data", "name", "buffer"]) {
      assert.ok(f in layouts.wsp_ggml_tensor.fields, `wsp_ggml_tensor.${f}`);
    }
  });
});
