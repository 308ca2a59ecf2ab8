// The API reference (`npm run docs` / `deno task docs` = `deno doc --html … mod.ts`) is generated
// from the JSDoc, and the package's `.d.ts` from the same sources (tsconfig.build.json). Checked:
// a doc comment on every export and public member; every op on Context's page with its ggml
// doc and C signature; no `@internal` member in the docs or the `.d.ts` (internal members
// carry `@ignore` for deno doc, `stripInternal` drops them from the `.d.ts`); `deno doc --lint`
// clean on every entry; the built `.d.ts` type-check in a strict consumer; source maps with the
// sources inside.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { root } from "./run.ts";
import { Context } from "../mod.ts";

interface DocNode { name: string; kind?: string; accessibility?: string; jsDoc?: { doc?: string } }
interface Decl { kind: string; jsDoc?: { doc?: string }; def?: { methods?: DocNode[]; properties?: DocNode[] } }
interface Sym { name: string; declarations: Decl[] }

const bin = (name: string) => join(root, "node_modules", ".bin", process.platform === "win32" ? `${name}.cmd` : name);
const deno = bin("deno");
const ENTRIES = ["mod.ts", "src/ffi/entry_deno.ts", "src/ffi/entry_node.ts", "src/ffi/entry_bun.ts", "src/ffi/compile.ts", "src/llm/entry_deno.ts", "src/llm/entry_node.ts", "src/llm/entry_bun.ts", "src/whisper/entry_deno.ts", "src/whisper/entry_node.ts", "src/whisper/entry_bun.ts"];

const tmp = mkdtempSync(join(tmpdir(), "wsp-docs-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** The documentation graph as JSON (deno doc leaves out what is marked `@ignore`). */
function docJson(): { nodes: Record<string, { symbols: Sym[] }> } {
  const json = execFileSync(deno, ["doc", "--json", "mod.ts"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], maxBuffer: 64 << 20 });
  return JSON.parse(json);
}
const modSymbols = (doc: ReturnType<typeof docJson>) => Object.entries(doc.nodes).find(([k]) => k.endsWith("/mod.ts"))![1].symbols;

/**
 * The ops, from the running code rather than the docs: the methods of the
 * class Context extends (ops.gen.ts's `Ops`, which codegen writes from ggml.h).
 */
const OPS = Object.getOwnPropertyNames(Object.getPrototypeOf(Context.prototype)).filter((n) => n !== "constructor");

test("npm run docs and deno task docs generate the reference from mod.ts", () => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const denoJson = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
  for (const cmd of [pkg.scripts.docs, denoJson.tasks.docs]) assert.match(cmd, /^deno doc --quiet --html --name=wsp-ggml --output=docs\/api mod\.ts$/);
  assert.match(readFileSync(join(root, ".gitignore"), "utf8"), /^\/docs\/api\/$/m);
});

test("every export and every public class member has a doc comment", () => {
  const symbols = modSymbols(docJson());
  const names = new Set(symbols.map((s) => s.name));
  for (const key of ["Context", "Tensor", "Graph", "Backend", "Sched", "GgufWriter", "readGguf", "quantize", "systemInfo", "loadLibrary", "Type", "typeName", "ArrayType", "GgmlError"]) {
    assert.ok(names.has(key), `mod.ts does not export ${key}`);
  }
  const has = (d?: { doc?: string }) => (d?.doc ?? "").trim().length > 0;
  const undocumented = symbols.filter((s) => !s.declarations.some((d) => has(d.jsDoc))).map((s) => s.name);
  assert.deepEqual(undocumented, []);
  // Members: an overloaded method or a getter/setter pair needs the comment on one of its declarations.
  const members: string[] = [];
  for (const s of symbols) {
    for (const d of s.declarations) {
      if (d.kind !== "class" && d.kind !== "interface") continue;
      const byName = new Map<string, boolean>();
      for (const m of [...(d.def?.methods ?? []), ...(d.def?.properties ?? [])]) {
        if (m.accessibility === "private" || m.name.startsWith("#")) continue;
        byName.set(m.name, (byName.get(m.name) ?? false) || has(m.jsDoc));
      }
      for (const [name, ok] of byName) if (!ok) members.push(`${s.name}.${name}`);
    }
  }
  assert.deepEqual(members, []);
});

test("every op is documented on Context with its C signature, in the JSON and on the HTML page", () => {
  assert.ok(OPS.length >= 200, `only ${OPS.length} ops found on Context's base class`);
  const ctx = modSymbols(docJson()).find((s) => s.name === "Context")!;
  const documented = new Map<string, string>();
  for (const d of ctx.declarations) for (const m of d.def?.methods ?? []) documented.set(m.name, m.jsDoc?.doc ?? "");
  const missing = OPS.filter((op) => !documented.has(op));
  assert.deepEqual(missing, [], "ops absent from Context in `deno doc --json`");
  const unsigned = OPS.filter((op) => !/C: `struct wsp_ggml_tensor \*wsp_ggml_\w+\(struct wsp_ggml_context \*ctx/.test(documented.get(op)!));
  assert.deepEqual(unsigned, [], "ops without their C signature");
  assert.match(documented.get("mulMat")!, /wsp_ggml_mul_mat\(/);
  // ggml.h's comment above the declaration comes along (here, mul_mat's).
  assert.match(documented.get("mulMat")!, /A: k columns, n rows => \[ne03, ne02, n, k\]/);

  const out = join(tmp, "html");
  execFileSync(deno, ["doc", "--quiet", "--html", "--name=wsp-ggml", `--output=${out}`, "mod.ts"], { cwd: root, stdio: ["ignore", "ignore", "ignore"] });
  const page = readFileSync(join(out, "~", "Context.html"), "utf8").replaceAll("&#x2F;", "/");
  const unlisted = OPS.filter((op) => !page.includes(`/Context.${op}.html"`) || !existsSync(join(out, "~", `Context.${op}.html`)));
  assert.deepEqual(unlisted, [], "ops without an entry on Context's page, or without their own page");
  assert.match(page, /wsp_ggml_mul_mat\(struct wsp_ggml_context \*ctx/);
  // Internal members have no page (they would be `Context.prototype._make.html` and the like).
  const internalPages = readdirSync(join(out, "~")).filter((f) => /(^|\.)_[^.]*\.html$/.test(f));
  assert.deepEqual(internalPages, []);
});

test("no @internal member in the docs", () => {
  const leaks: string[] = [];
  const walk = (o: unknown, path: string): void => {
    if (Array.isArray(o)) return o.forEach((v) => walk(v, path));
    if (typeof o !== "object" || o === null) return;
    const r = o as { name?: unknown; jsDoc?: { doc?: string; tags?: { kind: string }[] } };
    const here = typeof r.name === "string" ? `${path}.${r.name}` : path;
    if (r.jsDoc?.tags?.some((t) => t.kind === "internal") || /@internal\b/.test(r.jsDoc?.doc ?? "")) leaks.push(here);
    for (const v of Object.values(o)) walk(v, here);
  };
  walk(modSymbols(docJson()), "");
  assert.deepEqual(leaks, [], "add @ignore before @internal: deno doc has no other way to leave a member out");
});

test("deno doc --lint reports no error on any entry", () => {
  for (const entry of ENTRIES) {
    const r = spawnSync(deno, ["doc", "--lint", entry], { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
    const errors = (r.stderr ?? "").split("\n").filter((l) => /^error|-->/.test(l));
    assert.equal(r.status, 0, `deno doc --lint ${entry}:\n${errors.join("\n")}`);
  }
});

test("the package build: no @internal member in the .d.ts, source maps that carry the sources", () => {
  const out = join(tmp, "build");
  execFileSync(bin("tsc"), ["-p", "tsconfig.build.json", "--outDir", out], { cwd: root, stdio: ["ignore", "pipe", "pipe"], shell: process.platform === "win32" });
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) e.isDirectory() ? walk(join(dir, e.name)) : files.push(join(dir, e.name));
  };
  walk(out);
  const dts = files.filter((f) => f.endsWith(".d.ts"));
  assert.ok(dts.some((f) => f.endsWith(join("src", "core", "context.d.ts"))), "no context.d.ts in the build");
  const leaks = dts.filter((f) => readFileSync(f, "utf8").includes("@internal"));
  assert.deepEqual(leaks.map((f) => f.slice(out.length + 1)), [], ".d.ts files with @internal members (stripInternal off?)");
  const context = readFileSync(join(out, "src", "core", "context.d.ts"), "utf8");
  for (const name of ["_w", "_make", "_adopt", "_pool", "_wrap"]) assert.doesNotMatch(context, new RegExp(`\\b${name}\\b`), name);
  assert.match(context, /mulMat\(a: Tensor, b: Tensor\): Tensor;/);
  // What stripInternal removed is referenced by no declaration left: a strict consumer that checks the .d.ts compiles.
  const consumer = join(tmp, "consumer");
  mkdirSync(consumer);
  writeFileSync(join(consumer, "use.ts"), [
    `import { type ArrayType, Context, Type, typeName } from ${JSON.stringify(join(out, "src", "ffi", "entry_node.js").replaceAll("\\", "/"))};`,
    "const ctx = new Context({ memSize: 1 << 20 });",
    "const c = ctx.mulMat(ctx.newTensor1d(Type.F32, 2).set([1, 2]), ctx.newTensor1d(Type.F32, 2));",
    "const f32: ArrayType<Float32Array> = Float32Array;",
    "export const out: [Float32Array, string] = [c.get(f32), typeName(c.type)];",
  ].join("\n"));
  writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify({
    compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ESNext"], strict: true, noEmit: true, skipLibCheck: false, types: ["node"], typeRoots: [join(root, "node_modules", "@types")] },
    files: ["use.ts"],
  }));
  const check = spawnSync(bin("tsc"), ["-p", consumer], { encoding: "utf8", shell: process.platform === "win32" });
  assert.equal(check.status, 0, `the built .d.ts do not type-check:\n${check.stdout}${check.stderr}`);
  // Every emitted module has its map, with the TypeScript inside (the package ships no src/).
  const js = files.filter((f) => f.endsWith(".js"));
  assert.ok(js.length > 10);
  for (const f of js) {
    assert.match(readFileSync(f, "utf8"), /\/\/# sourceMappingURL=\S+\.js\.map\s*$/, f);
    const map = JSON.parse(readFileSync(`${f}.map`, "utf8")) as { sources: string[]; sourcesContent?: string[] };
    assert.equal(map.sourcesContent?.length, map.sources.length, `${f}.map has no sourcesContent`);
  }
});
