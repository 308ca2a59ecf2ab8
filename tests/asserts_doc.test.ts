// docs/asserts.md stays true: every misuse case it names exists, and every
// misuse case is named by a row of the table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { scanTreeFull } from "../codegen/asserts.ts";

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

// The C column cannot go stale by name either: each ggml function it names is one
// the vendored sources define (or a type or prefix of theirs), read by the same
// reader as the abort-site inventory (tests/asserts_inventory.test.ts).
test("every ggml function docs/asserts.md names exists in vendor/ggml", { skip: !existsSync(join(root, "vendor", "ggml", "ggml.c")) }, () => {
  const vendor = join(root, "vendor", "ggml");
  const tree = scanTreeFull(vendor);
  const defined = new Set<string>();
  for (const fn of tree.refs.keys()) for (const part of [fn, ...fn.split("::")]) defined.add(part.replace(/<.*>$/, ""));
  const headers = ["ggml.h", "ggml-backend.h", "ggml-opt.h", "gguf.h", "ggml-impl.h", "ggml-alloc.h", "ggml-cpu.h"]
    .map((h) => readFileSync(join(vendor, h), "utf8")).join("\n") + readFileSync(join(vendor, "gguf.cpp"), "utf8");
  const cColumn = doc.split("\n").filter((l) => l.startsWith("| ")).map((l) => l.split(" | ")[0]);
  const named = new Set(cColumn.flatMap((c) => [...c.matchAll(/`[^`]*?\b(wsp_(?:ggml|gguf)\w*)/g)].map((m) => m[1])));
  const exists = (n: string) =>
    defined.has(n) || (n.endsWith("_") && [...defined].some((d) => d.startsWith(n))) || new RegExp(`\\b(struct|typedef|enum)\\s+${n}\\b`).test(headers);
  assert.ok(named.size >= 50, `${named.size} names`);
  assert.deepEqual([...named].filter((n) => !exists(n)), [], "named by docs/asserts.md, defined nowhere in vendor/ggml");
});
