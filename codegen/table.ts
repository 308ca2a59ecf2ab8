/**
 * The runtime-neutral function table derived from the IR: shim rewrites,
 * `defined` and `nonblocking` flags. Shared by the emitters.
 *
 * @module
 */
import type { FfiType, LibraryName } from "../src/ffi/types.ts";
import { NONBLOCKING, NOT_DEFINED } from "./config.ts";
import type { FunctionIR, ParamIR, TypeRef } from "./ir.ts";
import { shimName } from "./names.ts";

/** One row of the generated table. */
export interface Row {
  readonly name: string;
  readonly library: LibraryName;
  readonly header: string;
  readonly symbol?: string;
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

/** The table rows, one per bound function, in header order. */
export function rows(functions: readonly FunctionIR[]): Row[] {
  return functions.map((fn) => {
    const shim = fn.flags.structByValue;
    return {
      name: fn.name,
      library: fn.library,
      header: fn.header,
      ...(shim ? { symbol: shimName(fn.name) } : {}),
      args: shim ? shimParams(fn).map(ffiOf) : fn.params.map(ffiOf),
      result: shim && fn.result.ffi === "record" ? "void" : ffiOf(fn.result),
      defined: !(fn.name in NOT_DEFINED),
      nonblocking: NONBLOCKING.has(fn.name),
      c: prototype(fn),
      fn,
    };
  });
}
