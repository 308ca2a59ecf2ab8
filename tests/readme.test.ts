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

test("the repository README keeps the two-command quick start and points to CONTRIBUTING.md", async () => {
  const { existsSync, readFileSync } = await import("node:fs");
  const readme = readFileSync(join(root, "README.md"), "utf8");
  assert.match(readme, /^npm ci && npm start\b/m);
  assert.match(readme, /^npm ci && npm test\b/m);
  assert.ok(readme.includes("(CONTRIBUTING.md)"));
  assert.ok(existsSync(join(root, "CONTRIBUTING.md")));
  assert.match(readFileSync(join(root, "CONTRIBUTING.md"), "utf8"), /--allow-missing/);
});

// The package's README (packages/wsp-ggml/README.md) is run from the installed
// tarballs by tests/package/pack.test.ts; here, what it must not contain.
test("the package README: user programs, not the checkout's", async () => {
  const { readFileSync } = await import("node:fs");
  const readme = readFileSync(join(root, "packages", "wsp-ggml", "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```(js|ts)\n([\s\S]*?)```/g)];
  const js = blocks.filter((b) => b[1] === "js").map((b) => b[2]);
  assert.ok(js.length >= 4, "JavaScript programs");
  assert.ok(blocks.some((b) => b[1] === "ts"), "a TypeScript program");
  for (const b of blocks) {
    assert.doesNotMatch(b[2], /from "\.\.?\/(?!libs\.gen)|\.\.\/mod\.ts|src\//, "imports the package by name only");
    if (b[1] === "js") assert.doesNotMatch(b[2], /^\s*(await\s+)?using\s/m, "plain Node 20 JavaScript cannot parse `using`");
  }
  for (const want of ["npm install wsp-ggml", "bun add wsp-ggml", "deno add npm:wsp-ggml", "AbortController", "readGguf", "quantize(", "wsp-ggml/compile"]) {
    assert.ok(readme.includes(want), want);
  }
  assert.doesNotMatch(readme, /npm ci|npm start/);
});
