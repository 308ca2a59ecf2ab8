// The README usage example (examples/readme.ts, pasted into README.md) runs as
// written on this runtime and prints what the README says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const example = join(root, "examples", "readme.ts");

/** The command line that runs a TypeScript file on the current runtime. */
function command(): [string, string[]] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Bun !== undefined) return [process.execPath, [example]];
  if (g.Deno !== undefined) return [process.execPath, ["run", "-A", example]];
  return [process.execPath, ["--import", "tsx", example]];
}

test("the README example runs as written", () => {
  const [cmd, args] = command();
  const out = execFileSync(cmd, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  assert.match(out, /\[ 2, 2, 1, 1 \] \[ 4, 10, 2, 5 \] \[ ["']0\.047["'], ["']0\.953["'], ["']0\.182["'], ["']0\.818["'] \]/);
});
