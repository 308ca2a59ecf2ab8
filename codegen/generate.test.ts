// The generator on the vendored headers: committed output is up to date
// (run on every runtime, this proves byte-identical output across them),
// determinism, coverage, and the errors that keep nothing from being lost.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Clang } from "./clang/mod.ts";
import { ROOT } from "./clang/find.ts";
import { generate, mergeTargets, OUTPUTS, parseAll, parseWhisper } from "./main.ts";
import { apiDiff } from "./diff.ts";
import { rows } from "./table.ts";
import type { ApiIR } from "./ir.ts";

const HEADERS = join(ROOT, "vendor", "ggml");
let clang: Clang;
let irs: ApiIR[];
let whisperIrs: ApiIR[];
let tmp: string;

before(async () => {
  clang = await Clang.open();
  irs = parseAll(clang, HEADERS);
  whisperIrs = parseWhisper(clang);
  tmp = mkdtempSync(join(tmpdir(), "wsp-codegen-"));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A copy of the vendored headers with `extra` appended to ggml.h. */
function headersWith(name: string, extra: string): string {
  const dir = join(tmp, name);
  cpSync(HEADERS, dir, { recursive: true, filter: (p) => !/\.(c|cpp|m|metal)$/.test(p) });
  writeFileSync(join(dir, "ggml.h"), readFileSync(join(dir, "ggml.h"), "utf8") + extra);
  return dir;
}

describe("codegen", () => {
  test("the committed generated files are what the generator writes", () => {
    const files = generate(irs, whisperIrs);
    assert.deepEqual([...files.keys()], [...OUTPUTS]);
    for (const [path, text] of files) assert.equal(readFileSync(join(ROOT, path), "utf8"), text, path);
  });

  test("output is deterministic", () => {
    const again = parseAll(clang, HEADERS);
    assert.deepEqual(generate(again, whisperIrs), generate(irs, whisperIrs));
  });

  test("no path of this machine leaks into the output", () => {
    for (const text of generate(irs, whisperIrs).values()) {
      assert.ok(!text.includes(ROOT), "repository path in output");
      assert.ok(!/anonymous at|unnamed .* at /.test(text), "clang location in output");
    }
  });

  test("every target agrees", () => {
    assert.equal(irs.length, 5);
    assert.doesNotThrow(() => mergeTargets(irs));
  });

  test("functions with records by value go through shims", () => {
    const table = new Map(rows(irs[0].functions).map((r) => [r.name, r]));
    for (const name of ["wsp_ggml_init", "wsp_gguf_init_from_file", "wsp_ggml_opt_init", "wsp_ggml_opt_default_params", "wsp_ggml_tallocr_new", "wsp_ggml_backend_graph_copy", "wsp_ggml_graph_plan"]) {
      const r = table.get(name);
      assert.ok(r, name);
      assert.equal(r.symbol, name.replace(/^wsp_/, "wsp_shim_"), name);
      assert.ok(r.args.every((a) => a !== ("record" as string)), name);
    }
    assert.equal(table.get("wsp_ggml_graph_plan")!.library, "cpu");
    assert.equal(table.get("wsp_ggml_threadpool_get_n_threads")!.defined, false);
  });

  test("variadic functions are skipped with a reason", () => {
    const skipped = new Map(irs[0].skipped.map((s) => [s.name, s.reason]));
    assert.ok(skipped.get("wsp_ggml_abort"));
    assert.ok(skipped.get("wsp_ggml_format_name"));
    assert.ok(!irs[0].functions.some((f) => skipped.has(f.name)));
  });

  test("an unlisted variadic function is an error", () => {
    const dir = headersWith("variadic", "\nWSP_GGML_API void wsp_ggml_extra_printf(const char * fmt, ...);\n");
    assert.throws(() => parseAll(clang, dir), /wsp_ggml_extra_printf is variadic and not in the skip list/);
  });

  test("the API diff sees added, removed and changed functions", () => {
    const dir = headersWith("changed", "\nWSP_GGML_API int wsp_ggml_extra(int x);\n");
    const text = readFileSync(join(dir, "ggml.h"), "utf8")
      .replace("WSP_GGML_API void    wsp_ggml_print_object", "void    wsp_ggml_print_object_gone")
      .replace(/WSP_GGML_API int64_t wsp_ggml_nelements\s*\(const struct wsp_ggml_tensor \* tensor\);/, "WSP_GGML_API int64_t wsp_ggml_nelements(struct wsp_ggml_tensor * tensor, int extra);");
    writeFileSync(join(dir, "ggml.h"), text);
    const [theirs] = parseAll(clang, dir);
    const d = apiDiff(irs[0], theirs);
    assert.deepEqual(d.added.map((f) => f.name), ["wsp_ggml_extra"]);
    assert.deepEqual(d.removed.map((f) => f.name), ["wsp_ggml_print_object"]);
    assert.deepEqual(d.changed.map((c) => c.after.name), ["wsp_ggml_nelements"]);
  });
});
