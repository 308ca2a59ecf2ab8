// The API reference (`npm run docs` / `deno task docs` = `deno doc --html … mod.ts`) is generated
// from the JSDoc: the same documentation graph, as JSON, must list the key exports and carry
// a doc comment on every export and on every public member of the exported classes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { root } from "./run.ts";

interface DocNode { name: string; kind?: string; accessibility?: string; jsDoc?: { doc?: string } }
interface Decl { kind: string; jsDoc?: { doc?: string }; def?: { methods?: DocNode[]; properties?: DocNode[] } }
interface Sym { name: string; declarations: Decl[] }

const deno = join(root, "node_modules", ".bin", process.platform === "win32" ? "deno.cmd" : "deno");

test("npm run docs and deno task docs generate the reference from mod.ts", () => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const denoJson = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
  for (const cmd of [pkg.scripts.docs, denoJson.tasks.docs]) assert.match(cmd, /^deno doc --quiet --html --name=wsp-ggml --output=docs\/api mod\.ts$/);
  assert.match(readFileSync(join(root, ".gitignore"), "utf8"), /^\/docs\/api\/$/m);
});

test("every export and every public class member has a doc comment", () => {
  const json = execFileSync(deno, ["doc", "--json", "mod.ts"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], maxBuffer: 64 << 20 });
  const doc = JSON.parse(json) as { nodes: Record<string, { symbols: Sym[] }> };
  const mod = Object.entries(doc.nodes).find(([k]) => k.endsWith("/mod.ts"))![1];
  const names = new Set(mod.symbols.map((s) => s.name));
  for (const key of ["Context", "Tensor", "Graph", "Backend", "Sched", "GgufWriter", "readGguf", "quantize", "systemInfo", "loadLibrary", "Type", "GgmlError"]) {
    assert.ok(names.has(key), `mod.ts does not export ${key}`);
  }
  const has = (d?: { doc?: string }) => (d?.doc ?? "").trim().length > 0;
  const undocumented = mod.symbols.filter((s) => !s.declarations.some((d) => has(d.jsDoc))).map((s) => s.name);
  assert.deepEqual(undocumented, []);
  // Members: an overloaded method or a getter/setter pair needs the comment on one of its declarations.
  const members: string[] = [];
  for (const s of mod.symbols) {
    for (const d of s.declarations) {
      if (d.kind !== "class") continue;
      const byName = new Map<string, boolean>();
      for (const m of [...(d.def?.methods ?? []), ...(d.def?.properties ?? [])]) {
        if (m.accessibility === "private" || m.name.startsWith("_") || m.name.startsWith("#")) continue;
        byName.set(m.name, (byName.get(m.name) ?? false) || has(m.jsDoc));
      }
      for (const [name, ok] of byName) if (!ok) members.push(`${s.name}.${name}`);
    }
  }
  assert.deepEqual(members, []);
});
