/**
 * The runtime-neutral function table derived from the IR: shim rewrites,
 * `defined` and `nonblocking` flags. Shared by the emitters.
 *
 * @module
 */
import type { FfiType, LibraryName } from "../src/ffi/types.ts";
import { NONBLOCKING, NOT_DEFINED, WIDE_VALUES } from "./config.ts";
import { hasWide } from "../src/ffi/num_abi.ts";
import type { FunctionIR, ParamIR, TypeRef } from "./ir.ts";
import { numName, shimName } from "./names.ts";

/** One row of the generated table. */
export interface Row {
  readonly name: string;
  readonly library: LibraryName;
  readonly header: string;
  readonly symbol?: string;
  /** The number-ABI wrapper's exported name (pointers and 64-bit integers as doubles), when there is one. */
  readonly num?: string;
  readonly args: FfiType[];
  readonly result: FfiType;
  readonly defined: boolean;
  readonly nonblocking: boolean;
  /** The C prototype as declared. */
  readonly c: string;
  readonly fn: FunctionIR;
}

/** A C declarator: `int x[4]` for arrays, `T name` otherwise. */
export function declarator(c: string, name: string): string {
  const arr = c.match(/^(.*?)\s*(\[\d*\])$/);
  if (arr) return `${arr[1]} ${name}${arr[2]}`;
  if (c.includes("(")) throw new Error(`cannot write a declarator for ${c}`);
  return c.endsWith("*") ? `${c}${name}` : `${c} ${name}`;
}

/** The C prototype of a function as declared. */
export function prototype(fn: FunctionIR, name = fn.name): string {
  const params = fn.params.length ? fn.params.map((p) => declarator(p.c, p.name)).join(", ") : "void";
  return `${declarator(fn.result.c, name)}(${params})`;
}

const ffiOf = (t: TypeRef): FfiType => (t.ffi === "record" ? "pointer" : t.ffi);

/** The parameters of the pointer-based wrapper (records by pointer, a record result as a trailing out pointer). */
export function shimParams(fn: FunctionIR): ParamIR[] {
  const params: ParamIR[] = fn.params.map((p) => (p.ffi === "record" ? { ...p, c: `const ${p.c} *`, ffi: "pointer" } : p));
  if (fn.result.ffi === "record") params.push({ name: "ret", c: `${fn.result.c} *`, ffi: "pointer" });
  return params;
}

/** The table rows, one per bound function, in header order (`wide`: WIDE_VALUES of this header set). */
export function rows(functions: readonly FunctionIR[], wide: Readonly<Record<string, string>> = WIDE_VALUES): Row[] {
  for (const name of Object.keys(wide)) {
    if (!functions.some((fn) => fn.name === name)) throw new Error(`codegen/config.ts: WIDE_VALUES names ${name}, which no header declares`);
  }
  return functions.map((fn) => {
    const shim = fn.flags.structByValue;
    const args = shim ? shimParams(fn).map(ffiOf) : fn.params.map(ffiOf);
    const result = shim && fn.result.ffi === "record" ? "void" : ffiOf(fn.result);
    const defined = !(fn.name in NOT_DEFINED);
    // Metal's library is Objective-C built elsewhere: it has no shim slot.
    const num = defined && fn.library !== "metal" && !(fn.name in wide) && hasWide({ args, result });
    return {
      name: fn.name,
      library: fn.library,
      header: fn.header,
      ...(shim ? { symbol: shimName(fn.name) } : {}),
      ...(num ? { num: numName(fn.name) } : {}),
      args,
      result,
      defined,
      nonblocking: NONBLOCKING.has(fn.name),
      c: prototype(fn),
      fn,
    };
  });
}
