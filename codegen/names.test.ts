import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { constantName, memberNames, shimName, typeName } from "./names.ts";
import type { EnumIR } from "./ir.ts";

const enumOf = (name: string, members: string[]): EnumIR => ({
  name, header: "ggml.h", underlying: "int", ffi: "i32",
  members: members.map((m, i) => ({ name: m, value: String(i) })),
});

describe("names", () => {
  test("types and constants lose the wsp_ggml_ / wsp_ prefix", () => {
    assert.equal(typeName("wsp_ggml_type"), "Type");
    assert.equal(typeName("wsp_ggml_backend_dev_type"), "BackendDevType");
    assert.equal(typeName("wsp_gguf_type"), "GgufType");
    assert.equal(constantName("WSP_GGML_MAX_DIMS"), "MAX_DIMS");
    assert.equal(constantName("WSP_GGUF_MAGIC"), "GGUF_MAGIC");
    assert.equal(shimName("wsp_ggml_init"), "wsp_shim_ggml_init");
  });
  test("enum members lose their common prefix", () => {
    assert.deepEqual(memberNames(enumOf("wsp_ggml_type", ["WSP_GGML_TYPE_F32", "WSP_GGML_TYPE_Q4_0"])), ["F32", "Q4_0"]);
    assert.deepEqual(memberNames(enumOf("wsp_ggml_sort_order", ["WSP_GGML_SORT_ORDER_ASC", "WSP_GGML_SORT_ORDER_DESC"])), ["ASC", "DESC"]);
    assert.deepEqual(memberNames(enumOf("wsp_ggml_x", ["WSP_GGML_X_ONLY"])), ["ONLY"]);
  });
  test("a prefix that would leave a name starting with a digit is kept shorter", () => {
    assert.deepEqual(memberNames(enumOf("wsp_ggml_d", ["WSP_GGML_D_1D", "WSP_GGML_D_2D"])), ["D_1D", "D_2D"]);
  });
});
