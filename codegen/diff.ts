/**
 * The API diff between two versions of the headers: functions added,
 * removed, and changed in signature.
 *
 * @module
 */
import type { ApiIR, FunctionIR } from "./ir.ts";
import { prototype } from "./table.ts";

/** What changed between two IRs. */
export interface ApiDiff {
  /** Functions only in the new headers. */
  readonly added: readonly FunctionIR[];
  /** Functions only in the old headers. */
  readonly removed: readonly FunctionIR[];
  /** Functions whose result or parameter types differ. */
  readonly changed: readonly { readonly before: FunctionIR; readonly after: FunctionIR }[];
}

/** The public functions of `ir`, bound or skipped, by name. */
function byName(ir: ApiIR): Map<string, FunctionIR> {
  return new Map(ir.functions.map((f) => [f.name, f]));
}

/** Compares the functions of two IRs. */
export function apiDiff(before: ApiIR, after: ApiIR): ApiDiff {
  const a = byName(before), b = byName(after);
  // Types only: a renamed parameter is not an API change.
  const sig = (f: FunctionIR) => [f.result.c, ...f.params.map((p) => p.c)].join(", ").replace(/\s+/g, " ");
  return {
    added: [...b.values()].filter((f) => !a.has(f.name)),
    removed: [...a.values()].filter((f) => !b.has(f.name)),
    changed: [...a.values()].filter((f) => b.has(f.name) && sig(f) !== sig(b.get(f.name)!))
      .map((f) => ({ before: f, after: b.get(f.name)! })),
  };
}

/** The diff as text. */
export function formatDiff(d: ApiDiff, fromLabel: string, toLabel: string): string {
  const out = [`API diff ${fromLabel} -> ${toLabel}: ${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed`];
  for (const f of d.added) out.push(`+ ${prototype(f)}  (${f.header})`);
  for (const f of d.removed) out.push(`- ${prototype(f)}  (${f.header})`);
  for (const { before, after } of d.changed) out.push(`~ ${prototype(before)}\n  -> ${prototype(after)}  (${after.header})`);
  return out.join("\n");
}
