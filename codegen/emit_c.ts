/**
 * Emits the C shim: `native/shim/base.gen.c` (wrappers of base functions and
 * the layout probes) and `native/shim/cpu.gen.c` (wrappers of ggml-cpu.h
 * functions, compiled into every CPU variant), and the number-ABI wrappers
 * (`native/shim/num_base.gen.c`, `native/shim/num_cpu.gen.c`, see
 * src/ffi/num_abi.ts).
 *
 * @module
 */
import type { ApiIR, ParamIR, RecordIR } from "./ir.ts";
import { declarator, type Row, shimParams } from "./table.ts";
import { isWide } from "../src/ffi/num_abi.ts";
import { isPointer } from "../src/ffi/common.ts";
import { GENERATED } from "./emit_ts.ts";

const PRELUDE = `#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "gguf.h"
#include "ggml-rpc.h"

#if defined(_WIN32)
// mingw exports every non-static function of a DLL that has no dllexport.
#    define WSP_SHIM_API
#else
#    define WSP_SHIM_API __attribute__((visibility("default")))
#endif
`;

function wrapper(r: Row): string {
  const fn = r.fn;
  const params = shimParams(fn);
  const decl = params.length ? params.map((p) => declarator(p.c, p.name)).join(", ") : "void";
  const args = fn.params.map((p) => (p.ffi === "record" ? `*${p.name}` : p.name)).join(", ");
  const call = `${fn.name}(${args})`;
  const body = fn.result.ffi === "record" ? `*ret = ${call};` : fn.result.ffi === "void" ? `${call};` : `return ${call};`;
  const result = fn.result.ffi === "record" ? "void" : fn.result.c;
  return `/** Pointer-based ${fn.name}. */\nWSP_SHIM_API ${declarator(result, r.symbol!)}(${decl}) {\n    ${body}\n}\n`;
}

/** A pointer parameter's C type as a cast target: an array parameter (`int x[4]`) is a pointer. */
function pointerType(c: string): string {
  const arr = c.match(/^(.*?)\s*\[\d*\]$/);
  return arr ? `${arr[1]} *` : c;
}

/**
 * The number-ABI wrapper of a row: every pointer and 64-bit integer
 * parameter and result as a double, converted exactly (values below 2^53).
 * Records by value are taken by pointer, as the record shim's are, and a
 * record result is written through the trailing `ret` pointer.
 */
function numWrapper(r: Row): string {
  const fn = r.fn;
  const params = r.symbol ? shimParams(fn) : fn.params;
  const byValue = new Set(fn.params.filter((p) => p.ffi === "record").map((p) => p.name));
  const wide = params.map((p) => p.ffi !== "record" && isWide(p.ffi));
  const decl = params.length ? params.map((p, i) => (wide[i] ? `double ${p.name}` : declarator(p.c, p.name))).join(", ") : "void";
  const arg = (p: ParamIR) => {
    const v = isPointer(p.ffi as Row["result"]) ? `(${pointerType(p.c)})(uintptr_t)${p.name}` : isWide(p.ffi as Row["result"]) ? `(${p.c})${p.name}` : p.name;
    return byValue.has(p.name) ? `*${v}` : v;
  };
  const call = `${fn.name}(${fn.params.map((p) => arg(params.find((q) => q.name === p.name)!)).join(", ")})`;
  const res = fn.result.ffi;
  const body = res === "record" ? `*(${fn.result.c} *)(uintptr_t)ret = ${call};`
    : res === "void" ? `${call};`
    : isPointer(res) ? `return (double)(uintptr_t)${call};`
    : isWide(res) ? `return (double)${call};`
    : `return ${call};`;
  const ret = res === "record" || res === "void" ? "void" : isWide(res) ? "double" : fn.result.c;
  return `/** ${fn.name}, pointers and 64-bit integers as doubles. */\nWSP_SHIM_API ${declarator(ret, r.num!)}(${decl}) {\n    ${body}\n}\n`;
}

function probeRows(r: RecordIR): string[] {
  const base = r.c;
  const path = r.member;
  const obj = `((${base} *)0)->`;
  const size = path ? `sizeof(${obj}${path})` : `sizeof(${base})`;
  const align = path ? `_Alignof(__typeof__(${obj}${path}))` : `_Alignof(${base})`;
  const at = path ? `offsetof(${base}, ${path})` : "0";
  const rows = [`    { "${r.key}", NULL, ${size}, ${align} },`];
  for (const f of r.fields) {
    const member = path ? `${path}.${f.name}` : f.name;
    rows.push(`    { "${r.key}", "${f.name}", offsetof(${base}, ${member}) - ${at}, sizeof(${obj}${member}) },`);
  }
  return rows;
}

function probes(ir: ApiIR, fnName = "wsp_shim_layout"): string {
  return `
// ---- layout probes, for tests/layout.test.ts ----

struct wsp_shim_probe {
    const char * record;
    const char * field; // NULL: the record itself
    size_t a;           // record: sizeof; field: offsetof
    size_t b;           // record: _Alignof; field: sizeof
};

static const struct wsp_shim_probe wsp_shim_probes[] = {
${ir.records.flatMap(probeRows).join("\n")}
};

/**
 * What the compiler says about a record of src/ffi/bindings.gen.ts's layouts:
 * what = 0 sizeof, 1 _Alignof (field NULL); 2 offsetof, 3 sizeof (of field).
 * Returns -1 when the record or field is unknown.
 */
WSP_SHIM_API int64_t ${fnName}(const char * record, const char * field, int32_t what) {
    for (size_t i = 0; i < sizeof(wsp_shim_probes) / sizeof(wsp_shim_probes[0]); i++) {
        const struct wsp_shim_probe * p = &wsp_shim_probes[i];
        if (strcmp(p->record, record) != 0) continue;
        if (field == NULL && p->field == NULL && (what == 0 || what == 1)) return (int64_t)(what == 0 ? p->a : p->b);
        if (field != NULL && p->field != NULL && strcmp(p->field, field) == 0 && (what == 2 || what == 3)) {
            return (int64_t)(what == 2 ? p->a : p->b);
        }
    }
    return -1;
}
`;
}

/** The texts of the two number-ABI files: wrappers of the base library's functions, and of ggml-cpu.h's. */
export function emitNumShims(rows: readonly Row[]): { base: string; cpu: string } {
  const head = (what: string) =>
    `${GENERATED}\n// ${what}, with every pointer and 64-bit integer as a double (src/ffi/num_abi.ts).\n\n${PRELUDE}\n`;
  const of = (lib: Row["library"]) => rows.filter((r) => r.num && r.library === lib).map(numWrapper).join("\n");
  return {
    base: head("Number-ABI wrappers of the base library's functions") + of("base"),
    cpu: head("Number-ABI wrappers of ggml-cpu.h's functions") + of("cpu"),
  };
}

/** The texts of the two shim files. */
export function emitShims(ir: ApiIR, rows: readonly Row[]): { base: string; cpu: string } {
  const shimmed = rows.filter((r) => r.symbol);
  const metal = shimmed.filter((r) => r.library === "metal");
  if (metal.length) throw new Error(`no shim slot for metal functions: ${metal.map((r) => r.name).join(", ")}`);
  const head = (what: string) => `${GENERATED}\n// ${what}\n\n${PRELUDE}\n`;
  const base = head("Pointer-based wrappers of the base library's functions that take or return a record by value, and layout probes.") +
    shimmed.filter((r) => r.library === "base").map(wrapper).join("\n") + probes(ir);
  const cpu = head("Pointer-based wrappers of ggml-cpu.h's functions that take or return a record by value.") +
    shimmed.filter((r) => r.library === "cpu").map(wrapper).join("\n");
  return { base, cpu };
}

const WHISPER_PRELUDE = `#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "whisper.h"
#include "job.h"

#if defined(_WIN32)
// WHISPER_API is dllexport in this DLL, which turns MinGW's auto-export off: export explicitly.
#    define WSP_SHIM_API __declspec(dllexport)
#else
#    define WSP_SHIM_API __attribute__((visibility("default")))
#endif
`;

/**
 * The text of `native/shim/whisper.gen.c`, compiled into libwsp-whisper: the pointer-based
 * wrappers of whisper.h's functions that take or return a record by value, the number-ABI
 * wrappers, and the layout probes (`wsp_whisper_shim_layout`, beside the base library's
 * `wsp_shim_layout`).
 */
export function emitWhisperShims(ir: ApiIR, rows: readonly Row[], generated: string): string {
  return `${generated}\n// Pointer-based wrappers of whisper.h's functions that take or return a record by value,\n` +
    `// number-ABI wrappers (src/ffi/num_abi.ts) and layout probes, for libwsp-whisper.\n\n${WHISPER_PRELUDE}\n` +
    rows.filter((r) => r.symbol).map(wrapper).join("\n") + "\n" +
    rows.filter((r) => r.num).map(numWrapper).join("\n") + probes(ir, "wsp_whisper_shim_layout");
}
