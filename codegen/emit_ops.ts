/**
 * Emits `src/core/ops.gen.ts`: one method per tensor op of ggml.h (a function that
 * takes the context first and returns a tensor), with its argument
 * validation, the call of its handwritten check (`src/core/checks.ts` implements
 * the generated `OpChecks` interface, so the compiler proves none is
 * missing), and the measured creation in the context.
 *
 * @module
 */
import type { ApiIR, FunctionIR, ParamIR } from "./ir.ts";
import { GENERATED, jsdoc } from "./emit_ts.ts";
import { typeName } from "./names.ts";
import { ARRAYS, HANDWRITTEN, NULLABLE, SKIPPED } from "./ops_config.ts";

/** `mul_mat` → `mulMat`, `n_dims` → `nDims`, `conv_1d_dw` → `conv1dDw`. */
export function camel(c: string): string {
  return c.replace(/^wsp_ggml_/, "").replace(/_([a-z0-9])/gi, (_, ch: string) => ch.toUpperCase());
}

/** Whether `fn` is a tensor op: context first, tensor result, declared in ggml.h. */
export function isOp(fn: FunctionIR): boolean {
  return fn.header === "ggml.h" && fn.result.c === "struct wsp_ggml_tensor *" && /^(const )?struct wsp_ggml_context \*$/.test(fn.params[0]?.c ?? "");
}

const TENSOR = /^(const )?struct wsp_ggml_tensor \*$/;

interface Arg {
  readonly name: string;
  readonly ts: string;
  readonly validate?: string;
  readonly pass: string;
  readonly tensor?: boolean;
  readonly array?: string;
  readonly nullable?: boolean;
}

function arg(fn: FunctionIR, p: ParamIR, enums: Set<string>): Arg {
  const name = camel(p.name);
  // Messages name the op and the parameter ("view1d: ne0 must be ..."): one literal, no concatenation per call.
  const label = JSON.stringify(`${camel(fn.name)}: ${name}`);
  if (TENSOR.test(p.c)) {
    const nullable = NULLABLE[fn.name]?.includes(p.name) ?? false;
    return { name, ts: nullable ? "Tensor | null" : "Tensor", pass: nullable ? `${name}?._h ?? 0` : `${name}._h`, tensor: true, nullable };
  }
  const simple: Record<string, [string, string]> = {
    "int": ["number", "int"],
    "int32_t": ["number", "int"],
    "uint32_t": ["number", "uint"],
    "int64_t": ["number", "i64"],
    "size_t": ["number", "size"],
    "float": ["number", "float"],
    "_Bool": ["boolean", "bool"],
  };
  if (simple[p.c]) {
    const [ts, fnName] = simple[p.c];
    return { name, ts, validate: `${fnName}(${label}, ${name});`, pass: name };
  }
  const e = /^enum (wsp_ggml_\w+)$/.exec(p.c);
  if (e) {
    const t = typeName(e[1]);
    enums.add(t);
    return { name, ts: t, validate: `member(${label}, ${name}, ${t}, ${JSON.stringify(t)});`, pass: name };
  }
  const a = ARRAYS[p.c];
  if (a) {
    const tuple = `readonly [${Array(a.length).fill("number").join(", ")}]`;
    return { name, ts: tuple, validate: `const ${name}C = ints(${label}, ${name}, ${a.length}, ${a.array});`, pass: `ffi.addressOf(${name}C)`, array: `${name}C` };
  }
  throw new Error(`${fn.name}: no op mapping for parameter ${p.name} of type ${p.c}: map it in codegen/emit_ops.ts or list the op in codegen/ops_config.ts`);
}

/** The text of `src/core/ops.gen.ts`. */
export function emitOps(ir: ApiIR): string {
  const ops = ir.functions.filter(isOp);
  const names = new Set(ops.map((f) => f.name));
  for (const n of [...Object.keys(HANDWRITTEN), ...Object.keys(SKIPPED), ...Object.keys(NULLABLE)]) {
    if (!names.has(n)) throw new Error(`codegen/ops_config.ts names ${n}, which is not a tensor op of ggml.h`);
  }
  const generated = ops.filter((f) => !(f.name in HANDWRITTEN) && !(f.name in SKIPPED));
  const enums = new Set<string>();
  const methods: string[] = [];
  const reserved = new Set(["native", "ctx", "result"]);
  const checks: string[] = [];
  for (const fn of generated) {
    const method = camel(fn.name);
    const args = fn.params.slice(1).map((p) => arg(fn, p, enums));
    for (const a of args) if (reserved.has(a.name)) throw new Error(`${fn.name}: parameter ${a.name} clashes with a name of the generated body`);
    const sig = args.map((a) => `${a.name}: ${a.ts}`).join(", ");
    const tensors = args.filter((a) => a.tensor).map((a) => a.name);
    const label = JSON.stringify(method);
    const body: string[] = [];
    body.push(`const native = this._live(${label});`);
    for (const a of args.filter((a) => a.tensor)) body.push(`this._operand(${[label, JSON.stringify(a.name), a.name, ...(a.nullable ? ["true"] : [])].join(", ")});`);
    for (const a of args) if (a.validate) body.push(a.validate);
    body.push(`opChecks.${method}(${args.map((a) => a.name).join(", ")});`);
    // The common case runs the op directly; _make measures it first in the scratch context.
    if (tensors.length > 8) throw new Error(`${fn.name}: more than 8 tensor operands; widen Ops._adopt`);
    const direct = `native.${fn.name}(${["this._h", ...args.map((a) => a.pass)].join(", ")})`;
    const call = `(ctx) => native.${fn.name}(${["ctx", ...args.map((a) => a.pass)].join(", ")})`;
    const arrays = args.filter((a) => a.array).map((a) => a.array!);
    const result = arrays.length ? "const result = " : "return ";
    body.push(`${result}this._roomy()`);
    body.push(`  ? this._adopt(${[label, direct, ...tensors].join(", ")})`);
    body.push(`  : this._make(${[label, call, ...tensors].join(", ")});`);
    if (arrays.length) {
      body.push(`keepAlive([${arrays.join(", ")}]);`);
      body.push("return result;");
    }
    methods.push(`  ${method}(${sig}): Tensor {\n${body.map((l) => `    ${l}`).join("\n")}\n  }`);
    checks.push(`  /** Preconditions of \`${fn.name}\`. */\n  ${method}(${sig}): void;`);
  }
  const handwritten = Object.entries(HANDWRITTEN).map(([n, m]) => `\`${n}\` (${m})`).join(", ");
  const skipped = Object.entries(SKIPPED).map(([n, r]) => `\`${n}\` (${r})`).join("; ");
  return `${GENERATED}
/**
 * The tensor ops of ggml.h as methods of \`Context\`: ${generated.length} generated here,
 * ${Object.keys(HANDWRITTEN).length} written by hand (${handwritten}), ${Object.keys(SKIPPED).length} left out: ${skipped}.
 *
 * Each method validates its scalar arguments, runs its handwritten check
 * (\`src/core/checks.ts\`, which implements {@linkcode OpChecks}), then creates the
 * result in the context after measuring that it fits.
 *
 * @module
 */
import { ${[...enums].sort().join(", ")} } from "../ffi/bindings.gen.ts";
import type { WspGgml } from "../ffi/open.ts";
import type { Handle } from "../ffi/types.ts";
import { bool, float, i64, int, ints, member, size, uint } from "./args.ts";
import { opChecks } from "./checks.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import type { Tensor } from "./tensor.ts";

/** An operand as the generated ops pass it to \`_use\`: its parameter name, its value, whether it may be null. */
export type Operand = readonly [name: string, value: Tensor | null, nullable?: boolean];

/** The preconditions of every generated op, one method per op with the op's parameters. */
export interface OpChecks {
${checks.join("\n")}
}

/**
 * The implementations of the ops; \`Context\` extends this class. Their
 * documentation is on \`Context\` (its generated interface in context.ts), so
 * the API reference lists them on its page.
 *
 * @ignore
 */
export abstract class Ops {
  /**
   * @ignore @internal Checks that the context is alive and each operand (\`[name, value, nullable]\`)
   * is a live tensor (or null where allowed); returns the native symbols.
   */
  protected abstract _use(op: string, ...operands: Operand[]): WspGgml["symbols"];
  /** @ignore @internal Creates the op's result in the context (\`call\` gets the context pointer). */
  protected abstract _make(op: string, call: (ctx: number) => Handle, ...operands: (Tensor | null)[]): Tensor;
  /** @ignore @internal Checks that the context is alive; returns the native calls taking handles. */
  protected abstract _live(op: string): WspGgml["handles"];
  /** @ignore @internal Checks that \`value\` is a live tensor (or null where \`nullable\`). */
  protected abstract _operand(op: string, name: string, value: Tensor | null, nullable?: boolean): void;
  /** @ignore @internal Whether the context has room for any op's objects, so ops run directly. */
  protected abstract _roomy(): boolean;
  /** @ignore @internal The context as a handle. */
  protected abstract get _h(): Handle;
  /** @ignore @internal Wraps the result of an op run directly and records its operands' contexts (no rest parameter: no array per op). */
  protected abstract _adopt(op: string, result: Handle, a?: Tensor | null, b?: Tensor | null, c?: Tensor | null, d?: Tensor | null, e?: Tensor | null, f?: Tensor | null, g?: Tensor | null, h?: Tensor | null): Tensor;

${methods.join("\n\n")}
}
`;
}

/** The markers of the generated part of \`src/core/context.ts\`. */
export const CONTEXT_BEGIN = "// ---- generated by codegen/emit_ops.ts (`npm run codegen`); do not edit until the end marker ----";
/** The end marker. */
export const CONTEXT_END = "// ---- end of generated ops ----";

/**
 * \`src/core/context.ts\` with its generated part (between the markers) made from
 * \`ir\`: the ops declared on \`Context\` itself, each with ggml's doc comment and
 * its C signature. They are declared there, not only inherited from \`Ops\`,
 * because \`deno doc\` lists a class's own and merged members, never inherited
 * ones.
 */
export function spliceContext(text: string, ir: ApiIR): string {
  const begin = text.indexOf(CONTEXT_BEGIN), end = text.indexOf(CONTEXT_END);
  if (begin < 0 || end < begin) throw new Error("src/core/context.ts lacks the generated-ops markers (codegen/emit_ops.ts CONTEXT_BEGIN/END)");
  const enums = new Set<string>();
  const decls: string[] = [];
  for (const fn of ir.functions.filter(isOp)) {
    if (fn.name in HANDWRITTEN || fn.name in SKIPPED) continue;
    const args = fn.params.slice(1).map((p) => arg(fn, p, enums));
    const c = `C: \`${fn.result.c}${fn.name}(${fn.params.map((p) => `${p.c}${p.c.endsWith("*") ? "" : " "}${p.name}`).join(", ")})\``;
    const notes = [c];
    // ggml.h's comments are laid out by line (shapes in columns, formulas): a fence keeps the layout.
    const doc = fn.doc?.includes("\n") ? `\`\`\`text\n${fn.doc}\n\`\`\`` : fn.doc;
    if (fn.flags.deprecated) notes.push("@deprecated WSP_GGML_DEPRECATED in ggml.h");
    decls.push(`${jsdoc([doc, ...notes], "  ")}  ${camel(fn.name)}(${args.map((a) => `${a.name}: ${a.ts}`).join(", ")}): Tensor;`);
  }
  // The enums come from the handwritten imports: say which one is missing rather than leave tsc to.
  const imports = text.slice(0, begin).match(/^import[^;]*;/gm)?.join("\n") ?? "";
  for (const e of enums) if (!new RegExp(`\\b${e}\\b`).test(imports)) throw new Error(`src/core/context.ts must import ${e} (an op parameter's type)`);
  const region = `${CONTEXT_BEGIN}
/**
 * The tensor ops of ggml.h, one method per function (\`wsp_ggml_mul_mat\` →
 * \`mulMat\`), each with ggml's comment and C declaration. An op checks its
 * arguments and creates its result in this context; nothing is computed until
 * a graph holding the result is.
 */
export interface Context {
${decls.join("\n\n")}
}
`;
  return text.slice(0, begin) + region + text.slice(end);
}
