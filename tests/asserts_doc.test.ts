// docs/asserts.md stays true: every misuse case it names exists, and every
// misuse case is named by a row of the table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const doc = readFileSync(join(root, "docs", "asserts.md"), "utf8");
const misuse = readFileSync(join(root, "tests", "misuse.test.ts"), "utf8");

test("docs/asserts.md and tests/misuse.test.ts name the same cases", () => {
  const cases = new Set([...misuse.matchAll(/^\s+\["([^"]+)", \(\) =>/gm)].map((m) => m[1]));
  const testColumn = doc.split("\n").filter((l) => l.startsWith("| ")).map((l) => l.split(" | ").at(-1) ?? "");
  const named = new Set(testColumn.flatMap((c) => [...c.matchAll(/"([^"]+)"/g)].map((m) => m[1])));
  assert.ok(cases.size >= 40, `${cases.size} misuse cases`);
  const prefixes = [...named].filter((n) => n.endsWith(": …")).map((n) => n.slice(0, -1));
  const missingInDoc = [...cases].filter((c) => !named.has(c) && !prefixes.some((p) => c.startsWith(p)));
  const missingInTest = [...named].filter((n) => !n.endsWith(": …") && !cases.has(n));
  assert.deepEqual(missingInTest, [], "named by the doc, absent from the test");
  assert.deepEqual(missingInDoc, [], "in the test, named by no row of the doc");
});
