// The package README's Deno permission table holds: each row marked `deno-perm:<part>` is run on
// Deno with exactly its flags (tests/programs/deno_perm.ts <part>) and succeeds, and with each
// one of them left out fails with a PermissionError that names the flag left out. The rows are
// read from packages/wsp-ggml/README.md, so the table cannot drift from what the code needs.
//
// The test drives Deno itself, so it runs on Node only (skipped on Bun and Deno). Needs the LLM's
// and Whisper's model files (fetched into the cache on first use, as their own tests do).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { ensureModel } from "../src/llm/fetch.ts";
import { ensureWhisperModel } from "../src/whisper/model_fetch.ts";
import { root } from "./run.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const onNode = g.Deno === undefined && g.Bun === undefined;

/** The README's rows with a `deno-perm:<part>` marker: part → flags. */
function rows(): Map<string, string[]> {
  const readme = readFileSync(join(root, "packages", "wsp-ggml", "README.md"), "utf8");
  const out = new Map<string, string[]>();
  for (const m of readme.matchAll(/^\|[^|\n]*<!-- deno-perm:([\w-]+) -->[^|\n]*\|\s*`([^`]+)`\s*\|$/gm)) out.set(m[1], m[2].trim().split(/\s+/));
  return out;
}

test("Deno: each part runs with exactly the README's flags and fails naming the one left out", { skip: onNode ? false : "drives Deno itself: runs on Node" }, async () => {
  const table = rows();
  assert.deepEqual([...table.keys()].sort(), ["cache-warm", "core"], "the README's marked rows");
  const model = await ensureModel();
  const whisper = await ensureWhisperModel({ type: "q8_0" });
  const dir = mkdtempSync(join(tmpdir(), "wsp-deno-perm-"));
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  delete env.WSP_GGML_PROBE;
  try {
    for (const [part, flags] of table) {
      const run = (fl: string[]) => spawnSync(join(root, "node_modules", ".bin", "deno"), ["run", ...fl, "tests/programs/deno_perm.ts", part, model, whisper, dir], { cwd: root, encoding: "utf8", env, timeout: 120_000 });
      const t0 = performance.now();
      const ok = run(flags);
      assert.equal(ok.status, 0, `${part} with ${flags.join(" ")}:\n${ok.stdout}\n${ok.stderr}`);
      assert.match(ok.stdout, new RegExp(`^ok ${part}$`, "m"));
      for (const left of flags) {
        const r = run(flags.filter((f) => f !== left));
        assert.notEqual(r.status, 0, `${part} without ${left} succeeded: the README lists a flag it does not need`);
        assert.match(r.stderr, new RegExp(`PermissionError[^\\n]*[Rr]un (it )?with[^\\n]*${left}`), `${part} without ${left}: the error names it:\n${r.stderr}`);
      }
      console.log(`# ${part}: ${flags.join(" ")} (${flags.length + 1} runs, ${(performance.now() - t0).toFixed(0)} ms)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
