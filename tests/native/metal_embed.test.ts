/**
 * Checks what `zig build metal-embed` makes without a macOS SDK: the Metal shader source of the
 * second pin with ggml-common.h and ggml-metal-impl.h pasted in (the backend compiles it from
 * memory, where includes cannot resolve), and the Mach-O objects that embed it between
 * `wsp_ggml_metallib_start` and `wsp_ggml_metallib_end`, which ggml-metal-device.m reads.
 *
 * Runs under Node after the cross-compile step (the test runner builds it first).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readBinary } from "./binfmt.ts";

const root = join(fileURLToPath(import.meta.url), "..", "..", "..");
const out = join(root, "zig-out", "metal-embed");
const vendor = join(root, "vendor", "ggml");
const lines = (f: string) => readFileSync(f, "utf8").replace(/\n+$/, "").split("\n");

test("the merged shader source is the .metal file with its two local headers pasted in at their lines", () => {
  const shader = lines(join(vendor, "ggml-metal", "ggml-metal.metal"));
  const common = lines(join(vendor, "ggml-common.h"));
  const impl = lines(join(vendor, "ggml-metal", "ggml-metal-impl.h"));
  const merged = lines(join(out, "ggml-metal-embed.metal"));
  const iCommon = shader.findIndex((l) => l.trim() === "__embed_ggml-common.h__");
  const iImpl = shader.findIndex((l) => l.trim() === '#include "ggml-metal-impl.h"');
  assert.ok(iCommon > 0 && iImpl > iCommon, "marker lines in the pinned shader");
  const expected = [...shader.slice(0, iCommon), ...common, ...shader.slice(iCommon + 1, iImpl), ...impl, ...shader.slice(iImpl + 1)];
  assert.equal(merged.length, expected.length);
  assert.deepEqual(merged, expected);
  assert.ok(!merged.some((l) => l.includes("__embed_ggml-common.h__")));
});

test("every kernel name the vendored Metal backend formats has a kernel of that shape in the pinned shader", () => {
  // The backend (whisper.rn's, 85871a9) builds names with snprintf("kernel_%s_%s", ...); the shader
  // (llama.cpp b6673's) declares them with [[host_name("...")]] or by name. A format with no match would fail
  // at run time on a Mac: this is the part of that check that needs no Mac.
  // A kernel is found by its [[host_name("...")]] (templates) or by its function name.
  const text = readFileSync(join(out, "ggml-metal-embed.metal"), "utf8");
  const hostNames = [...text.matchAll(/host_name\("(kernel_[A-Za-z0-9_]+)"\)|kernel void (kernel_[A-Za-z0-9_]+)\s*\(/g)].map((m) => m[1] ?? m[2]);
  assert.ok(hostNames.length > 300, `${hostNames.length} host names`);
  const backend = ["ggml-metal-device.m", "ggml-metal-device.cpp", "ggml-metal-ops.cpp"].map((f) => readFileSync(join(vendor, "ggml-metal", f), "utf8")).join("\n");
  const formats = [...new Set([...backend.matchAll(/"(kernel_[^"%]*(?:%[sd][^"%]*)*)"/g)].map((m) => m[1]))];
  assert.ok(formats.length > 40, `${formats.length} name formats`);
  const missing = formats.filter((f) => {
    if (f === "kernel_%s" || f === "kernel_%s_%s" || f === "kernel_%s_%s%s") return false; // generic: any kernel matches
    const re = new RegExp("^" + f.split(/%[sd]/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[A-Za-z0-9_]*") + "$");
    return !hostNames.some((n) => re.test(n));
  });
  assert.deepEqual(missing, []);
});

for (const arch of ["aarch64", "x86_64"] as const) {
  test(`the ${arch} macOS object embeds the merged source between wsp_ggml_metallib_start and _end`, () => {
    const obj = join(out, arch, "ggml-metal-embed.o");
    const info = readBinary(obj);
    assert.equal(info.format, "macho");
    assert.equal(info.machine, arch);
    const start = info.symbols?.get("_wsp_ggml_metallib_start");
    const end = info.symbols?.get("_wsp_ggml_metallib_end");
    assert.ok(start && end, "both symbols defined");
    assert.equal(start.section, end.section);
    const source = readFileSync(join(out, "ggml-metal-embed.metal"));
    assert.equal(end.value - start.value, BigInt(source.length));
    assert.ok(readFileSync(obj).includes(source), "the bytes themselves are in the object");
  });
}
