/**
 * Emits `src/backend/cpu_types.gen.ts`: which tensor types the CPU backend computes
 * each op for. ggml's CPU kernels dispatch on the source (or result) type and
 * `WSP_GGML_ABORT` on any other, after `supports_op` said yes; the API checks
 * a graph against this table before computing it.
 *
 * The table is read from the vendored CPU backend: the op → kernel switch of
 * `ggml-cpu.c` (and the unary / GLU sub-op switches of `ops.cpp`), then, for
 * each kernel, its first type dispatch — a `switch` on `src0->type` /
 * `dst->type` whose `default:` aborts, or the `if` chain of the `unary_op` /
 * `binary_op` templates. Kernels without such a dispatch are listed as
 * unchecked.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GENERATED } from "./emit_ts.ts";

/** One allowed combination of types, by operand. */
export type Combo = Partial<Record<"src0" | "src1" | "dst", string>>;

/** The rules read from the sources: kernel key → allowed combinations. */
export interface CpuTypes {
  /** `ADD`, `UNARY.GELU`, `GLU.SWIGLU` → combinations (any matching one is supported). */
  readonly rules: ReadonlyMap<string, readonly Combo[]>;
  /** Keys whose kernel has no type dispatch to read. */
  readonly unchecked: readonly string[];
}

/** `src` without its comments (a commented-out `case` is no case); string and character literals kept. */
function stripComments(src: string): string {
  return src.replace(/"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m) => (m[0] === "/" ? " " : m));
}

/** The bodies of `[static] void <name>(…) { … }` at the top level of `src`, by name. */
function functionBodies(src: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /^(?:static )?void (wsp_ggml_compute_forward_\w+|unary_op|binary_op)\s*\(/gm;
  for (let m = re.exec(src); m; m = re.exec(src)) {
    const end = src.indexOf("\n}", m.index);
    out.set(m[1], stripComments(src.slice(m.index, end + 2)));
  }
  return out;
}

/** `case A: case B: { fn(` → A, B ↦ fn, for the switch on `subject` in `body`. */
function caseTargets(body: string, label: RegExp): Map<string, string> {
  const out = new Map<string, string>();
  const re = new RegExp(`((?:\\s*case ${label.source}:)+)\\s*\\{\\s*(wsp_ggml_compute_forward_\\w+)\\(`, "g");
  for (let m = re.exec(body); m; m = re.exec(body)) {
    for (const c of m[1].matchAll(new RegExp(`case ${label.source}:`, "g"))) out.set(c[1], m[m.length - 1]);
  }
  return out;
}

function dispatch(body: string, bodies: Map<string, string>, depth = 0): Combo[] | undefined {
  const sw = /switch \((src0->type|dst->type|dst->src\[0\]->type)\)\s*\{/.exec(body);
  if (sw) {
    const rest = body.slice(sw.index);
    const def = rest.indexOf("default:");
    if (def < 0 || !/WSP_GGML_ABORT/.test(rest.slice(def, def + 200))) return undefined;
    const subject = sw[1] === "dst->type" ? "dst" : "src0";
    const cases = rest.slice(0, def);
    const targets = caseTargets(cases, /WSP_GGML_TYPE_(\w+)/);
    const out: Combo[] = [];
    for (const c of cases.matchAll(/case WSP_GGML_TYPE_(\w+):/g)) {
      // A case that falls through to the aborting default (only more case labels between), or whose block
      // starts with an abort (a "todo"), is not computed.
      if (/^(?:\s*case WSP_GGML_TYPE_\w+:)*\s*(?:default:|\{\s*WSP_GGML_ABORT\b)/.test(rest.slice(c.index! + c[0].length))) continue;
      // A case whose kernel dispatches again (e.g. through binary_op) narrows to that kernel's combinations.
      const target = targets.get(c[1]);
      const inner = target && depth < 3 ? dispatch(bodies.get(target) ?? "", bodies, depth + 1) : undefined;
      const narrowed = inner?.filter((x) => x[subject] === undefined || x[subject] === c[1]).map((x) => ({ ...x, [subject]: c[1] }));
      if (narrowed?.length) out.push(...narrowed);
      else out.push({ [subject]: c[1] });
    }
    return out;
  }
  const template = /\b(unary_op|binary_op)</.exec(body);
  if (template) {
    const t = bodies.get(template[1]);
    if (!t) return undefined;
    const combos: Combo[] = [];
    for (const cond of t.matchAll(/if \(([^{]*)\)\s*\{/g)) {
      const combo: Combo = {};
      for (const c of cond[1].matchAll(/(src0|src1|dst)->type == WSP_GGML_TYPE_(\w+)/g)) combo[c[1] as keyof Combo] = c[2];
      if (Object.keys(combo).length) combos.push(combo);
    }
    return combos.length ? combos : undefined;
  }
  return undefined;
}

/** Reads the rules from the vendored CPU backend in `cpuDir`. */
export function readCpuTypes(cpuDir: string): CpuTypes {
  const read = (f: string) => readFileSync(join(cpuDir, f), "utf8");
  const bodies = new Map<string, string>();
  for (const f of ["ops.cpp", "unary-ops.cpp", "binary-ops.cpp"]) for (const [k, v] of functionBodies(read(f))) bodies.set(k, v);
  const cpu = read("ggml-cpu.c");
  const start = cpu.indexOf("static void wsp_ggml_compute_forward(struct wsp_ggml_compute_params * params");
  if (start < 0) throw new Error("ggml-cpu.c: the op dispatch (wsp_ggml_compute_forward) was not found");
  const forward = cpu.slice(start, cpu.indexOf("\n}", start));
  const kernels = new Map<string, string>();
  for (const [op, fn] of caseTargets(forward, /WSP_GGML_OP_(\w+)/)) kernels.set(op, fn);
  for (const [sub, fn] of caseTargets(bodies.get("wsp_ggml_compute_forward_unary") ?? "", /WSP_GGML_UNARY_OP_(\w+)/)) kernels.set(`UNARY.${sub}`, fn);
  for (const [sub, fn] of caseTargets(bodies.get("wsp_ggml_compute_forward_glu") ?? "", /WSP_GGML_GLU_OP_(\w+)/)) kernels.set(`GLU.${sub}`, fn);
  if (kernels.size < 50) throw new Error(`ggml-cpu.c: only ${kernels.size} op kernels found; the dispatch changed shape`);
  const rules = new Map<string, Combo[]>();
  const unchecked: string[] = [];
  for (const [key, fn] of kernels) {
    if (key === "UNARY" || key === "GLU") continue; // dispatched by sub-op
    const body = bodies.get(fn);
    const combos = body ? dispatch(body, bodies) : undefined;
    if (combos) rules.set(key, combos);
    else unchecked.push(key);
  }
  return { rules, unchecked };
}

/** The text of `src/backend/cpu_types.gen.ts`. */
export function emitCpuTypes(t: CpuTypes): string {
  const q = (s: string) => JSON.stringify(s);
  const rows = [...t.rules].map(([key, combos]) =>
    `  ${q(key)}: [${combos.map((c) => `{ ${Object.entries(c).map(([k, v]) => `${k}: ${q(v)}`).join(", ")} }`).join(", ")}],`
  );
  return `${GENERATED}
/**
 * The tensor types the CPU backend computes each op for, read from the
 * vendored kernels (codegen/emit_cpu_types.ts): \`ggml-cpu.c\` dispatches an
 * op to its kernel, and the kernel dispatches on its types and aborts on any
 * other. A node is supported when one combination matches its source 0,
 * source 1 and result types (\`Type\` member names).
 *
 * Kernels with no type dispatch to read (checked by their op's own rules
 * only): ${t.unchecked.map((k) => `\`${k}\``).join(", ")}.
 *
 * @module
 */

/** Allowed type combinations per op (\`Op\` name, or \`UNARY.<UnaryOp>\` / \`GLU.<GluOp>\`). */
export const CPU_TYPES: Readonly<Record<string, readonly Readonly<{ src0?: string; src1?: string; dst?: string }>[]>> = {
${rows.join("\n")}
};
`;
}
