// Wrong calls whose precondition only shows at compute time or inside a callback (compute_misuse_child.ts):
// index values in tensor data, handles freed from inside an eval / epoch / log callback, inputs
// ggml-quants aborts on, a truncated library file, … Each case runs in a child process of this
// runtime; a case that kills the process fails here by name, and the remaining cases run in a new
// child. docs/asserts.md lists each case (in italics) next to the C assert it guards.
//
//   one case, by hand:  <runtime> tests/reliability/compute_misuse_child.ts "getRows f32: index past the rows"
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { describeChild, root, runChild, runtimeName } from "./lib.ts";

const CHILD = join(root, "tests", "reliability", "compute_misuse_child.ts");

interface Done {
  name: string;
  outcome: "ok" | "fail";
  detail: string;
}

test(`compute-time misuse: every case throws its typed error and the process survives (${runtimeName})`, () => {
  const list = runChild(CHILD, { argv: ["--list"], timeoutMs: 120_000 });
  const names = list.stdout.split("\n").filter((l) => l.startsWith("case-name ")).map((l) => l.slice("case-name ".length));
  assert.ok(names.length >= 60, `the child lists ${names.length} cases\n${describeChild(list)}`);
  const results = new Map<string, string>(); // name → why it failed ("" when it behaved)
  // Every case in order; after a death the remaining ones run in a new child.
  while (results.size < names.length) {
    const rest = names.filter((n) => !results.has(n));
    const r = runChild(CHILD, { argv: rest, timeoutMs: 600_000 });
    const lines = r.stdout.split("\n");
    for (const l of lines) {
      if (!l.startsWith("case-done ")) continue;
      const d = JSON.parse(l.slice("case-done ".length)) as Done;
      results.set(d.name, d.outcome === "ok" ? "" : d.detail);
    }
    const died = lines.filter((l) => l.startsWith("case-start ")).map((l) => l.slice("case-start ".length)).find((n) => !results.has(n)) ?? rest.find((n) => !results.has(n));
    if (died === undefined) break;
    results.set(died, `killed the process (status ${r.status}, signal ${r.signal}, timed out ${r.timedOut})\n${describeChild(r)}`);
  }
  const failures = [...results].filter(([, why]) => why !== "").map(([name, why]) => `${name}: ${why}`);
  console.log(`compute misuse on ${runtimeName}: ${results.size} cases, ${failures.length} failed`);
  assert.deepEqual(failures, []);
});
