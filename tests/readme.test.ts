// The README usage example (examples/readme.ts, pasted into README.md) runs as
// written on this runtime and prints what the README says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { root, runTs } from "./run.ts";

test("the README example runs as written", () => {
  const out = runTs(join(root, "examples", "readme.ts"));
  assert.match(out, /\[ 2, 2, 1, 1 \] \[ 4, 10, 2, 5 \] \[ ["']0\.047["'], ["']0\.953["'], ["']0\.182["'], ["']0\.818["'] \]/);
});

test("the README's usage block is examples/readme.ts", async () => {
  const { readFileSync } = await import("node:fs");
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = /## Usage\n\n```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "README.md has no ## Usage code block");
  assert.equal(block[1], readFileSync(join(root, "examples", "readme.ts"), "utf8"));
});
