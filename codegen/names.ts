/**
 * How C names become TypeScript names: ggml's names in camelCase (PascalCase
 * for types) without the `wsp_ggml_` / `wsp_` prefix.
 *
 * @module
 */
import { NUM_PREFIX, SHIM_PREFIX } from "./config.ts";
import type { EnumIR } from "./ir.ts";

/** `wsp_ggml_backend_dev_type` → `BackendDevType`; `wsp_gguf_type` → `GgufType`. */
export function typeName(c: string): string {
  const bare = c.replace(/^wsp_ggml_/, "").replace(/^wsp_/, "");
  return bare.split("_").filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join("");
}

/** `WSP_GGML_MAX_DIMS` → `MAX_DIMS`; `WSP_GGUF_MAGIC` → `GGUF_MAGIC`. */
export function constantName(c: string): string {
  return c.replace(/^WSP_GGML_/, "").replace(/^WSP_/, "");
}

/** The exported name of the pointer-based wrapper of `fn`. */
export function shimName(fn: string): string {
  return SHIM_PREFIX + fn.replace(/^wsp_/, "");
}

/** The exported name of a function's number-ABI wrapper (`wsp_ggml_add` → `wsp_num_ggml_add`). */
export function numName(fn: string): string {
  return NUM_PREFIX + fn.replace(/^wsp_/, "");
}

/** The member names of an enum without their common prefix (`WSP_GGML_TYPE_F32` → `F32`). */
export function memberNames(e: EnumIR): string[] {
  const names = e.members.map((m) => m.name);
  const split = names.map((n) => n.split("_"));
  let common = 0;
  if (names.length > 1) {
    while (split.every((s) => s.length > common + 1 && s[common] === split[0][common])) common++;
  } else {
    const want = e.name.toUpperCase().split("_");
    while (common < want.length && split[0][common] === want[common] && split[0].length > common + 1) common++;
  }
  for (; common > 0; common--) {
    const rest = split.map((s) => s.slice(common).join("_"));
    if (rest.every((r) => /^[A-Za-z_]/.test(r)) && new Set(rest).size === rest.length) return rest;
  }
  return names;
}
