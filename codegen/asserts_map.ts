/**
 * The abort-site map: `docs/asserts.map.json` gives every site the inventory
 * (codegen/asserts.ts) finds in vendor/ggml a disposition — the TS check that
 * pre-empts it and the test that proves it, the reason it cannot be reached
 * from the API, or `open` (reachable, not guarded yet: what is missing).
 *
 * The map, by file, then function, then the site's key within the function
 * (`kind condition[#n]`), names a disposition id. A function's value may be a
 * single id (every site of that function), and a file's value a single id
 * (every site of that file), only when the disposition says `"any": true`:
 * its reason must hold for any site there, so a new assert is never absorbed
 * by a pattern that did not mean it.
 *
 *   node --import tsx codegen/asserts_map.ts            check the map against the sources
 *   node --import tsx codegen/asserts_map.ts --write    also rewrite docs/asserts-inventory.md and the summary in docs/asserts.md
 *   node --import tsx codegen/asserts_map.ts --missing  print map entries (as JSON) for the sites the map lacks, as "open:review"
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { abortingFunctions, bindingRoots, reachable, scanTreeFull, scanWhisper, type Site, type TreeScan } from "./asserts.ts";

/** The reasons a site cannot be reached from the API (the only ones a disposition may give). */
export const REASONS: Readonly<Record<string, string>> = {
  "not-called": "no path from a function the binding calls to this one (the test recomputes the lexical call graph)",
  construction: "internal invariant: holds by construction of what ggml itself made",
  build: "build-time constant: holds for every build of the vendored sources",
  sink: "the abort itself: every assert ends here, and each caller is an entry of its own",
  resource: "host memory or threads exhausted (a failed malloc or thread start), not a caller's mistake",
  "not-index": "the value read from a tensor is used as data, never as a memory index",
  "param-off": "whisper.cpp reaches it only under a parameter the API never sets (src/whisper/whisper.ts writes the params; whisper.cpp's defaults leave it off; the test checks that whisper.ts names none of the disposition's params)",
};

/** What the map says of a site. Exactly one of `check`, `unreachable`, `open`. */
export interface Disposition {
  /** Where the TS check is. */
  readonly check?: string;
  /** The tests that prove it: `tests/misuse.test.ts: "case"`, `path: text in the file`, or `path`. */
  readonly test?: readonly string[];
  /** A key of {@link REASONS}. */
  readonly unreachable?: string;
  /** Why, for this disposition in particular. */
  readonly note?: string;
  /** What is missing. */
  readonly open?: string;
  /** The reason holds for any site of a function or file: the disposition may be used as a wildcard. */
  readonly any?: boolean;
  /** `param-off`: the whisper_full_params / whisper_context_params fields that gate the site (src/whisper/whisper.ts must name none). */
  readonly params?: readonly string[];
}

type FunctionEntry = string | Record<string, string>;
type FileEntry = string | Record<string, FunctionEntry>;

/** `docs/asserts.map.json` with the parts in `docs/asserts.map.d/` merged in. */
export interface AssertMap {
  readonly dispositions: Record<string, Disposition>;
  readonly sites: Record<string, FileEntry>;
}

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const MAP_PATH = "docs/asserts.map.json";
/** One file per backend reviewed on its own (`vulkan.json`, `metal.json`): each holds whole files of `sites` and its own dispositions. */
export const MAP_PARTS = "docs/asserts.map.d";
export const INVENTORY_PATH = "docs/asserts-inventory.md";
export const VENDOR = "vendor/ggml";
/** whisper.cpp (scripts/vendor.mjs); its sites are files `whisper/…`. */
export const WHISPER_VENDOR = "vendor/whisper";
/** Whether a site is whisper.cpp's. */
export const isWhisper = (s: Site): boolean => s.file.startsWith("whisper/");

/**
 * The map: {@link MAP_PATH} and every part in {@link MAP_PARTS}, merged. A part
 * may not redefine a disposition id or a source file another part has.
 */
export function loadMap(root = ROOT): AssertMap {
  const map = JSON.parse(readFileSync(join(root, MAP_PATH), "utf8")) as AssertMap;
  const dir = join(root, MAP_PARTS);
  if (!existsSync(dir)) return map;
  const dispositions = { ...map.dispositions }, sites = { ...map.sites };
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".json")).sort()) {
    const part = JSON.parse(readFileSync(join(dir, name), "utf8")) as AssertMap;
    for (const [id, d] of Object.entries(part.dispositions ?? {})) {
      if (id in dispositions) throw new Error(`${MAP_PARTS}/${name}: disposition ${id} is defined twice`);
      dispositions[id] = d;
    }
    for (const [file, e] of Object.entries(part.sites ?? {})) {
      if (file in sites) throw new Error(`${MAP_PARTS}/${name}: ${file} is mapped twice`);
      sites[file] = e;
    }
  }
  return { dispositions, sites };
}

/** The disposition id of `site`, and how it was found; undefined when the map lacks it. */
export function lookup(map: AssertMap, site: Site): { id: string; via: "site" | "function" | "file" } | undefined {
  const file = map.sites[site.file];
  if (file === undefined) return undefined;
  if (typeof file === "string") return { id: file, via: "file" };
  const fn = file[site.function];
  if (fn === undefined) return undefined;
  if (typeof fn === "string") return { id: fn, via: "function" };
  const id = fn[site.local];
  return id === undefined ? undefined : { id, via: "site" };
}

/** The category a disposition counts under: `check`, `check (untested)`, `unreachable: <reason>`, `open`. */
export function category(d: Disposition): string {
  if (d.check !== undefined) return d.test?.length ? "check" : "check (untested)";
  if (d.unreachable !== undefined) return `unreachable: ${d.unreachable}`;
  return "open";
}

/** The misuse case names of tests/misuse.test.ts. */
function misuseCases(root: string): Set<string> {
  const src = readFileSync(join(root, "tests", "misuse.test.ts"), "utf8");
  return new Set([...src.matchAll(/^\s+\["([^"]+)", \(\) =>/gm)].map((m) => m[1]));
}

/** Problems with one test reference, or none. */
function checkTestRef(root: string, ref: string, cases: Set<string>, cache: Map<string, string>): string | undefined {
  const m = /^([\w./-]+\.ts)(?:: (.*))?$/.exec(ref);
  if (!m) return `test reference "${ref}" is not "path" or "path: text"`;
  const [, path, text] = m;
  if (!existsSync(join(root, path))) return `test reference "${ref}": no file ${path}`;
  if (text === undefined) return undefined;
  if (path === "tests/misuse.test.ts" && /^".*"$/.test(text)) {
    return cases.has(text.slice(1, -1)) ? undefined : `test reference "${ref}": no such misuse case`;
  }
  let src = cache.get(path);
  if (src === undefined) cache.set(path, src = readFileSync(join(root, path), "utf8"));
  return src.includes(text) ? undefined : `test reference "${ref}": the text is not in ${path}`;
}

export interface CheckOptions {
  /** The functions reachable from the binding; `not-called` dispositions are checked against it. */
  readonly reach?: ReadonlySet<string>;
  /** Repository root, for test references (default: this checkout). */
  readonly root?: string;
}

/**
 * Every disagreement between the sources' sites and the map, one line each
 * (empty when they agree): sites the map lacks (by key), map keys no site has,
 * unknown or malformed dispositions, wildcards whose disposition is not
 * `any`, test references that do not resolve, and `not-called` sites that are
 * in fact reachable.
 */
export function checkMap(sites: readonly Site[], map: AssertMap, options: CheckOptions = {}): string[] {
  const root = options.root ?? ROOT;
  const problems: string[] = [];
  const cases = misuseCases(root);
  const cache = new Map<string, string>();
  for (const [id, d] of Object.entries(map.dispositions)) {
    const kinds = [d.check, d.unreachable, d.open].filter((x) => x !== undefined).length;
    if (kinds !== 1) problems.push(`disposition ${id}: needs exactly one of check, unreachable, open`);
    if (d.unreachable !== undefined && !(d.unreachable in REASONS)) problems.push(`disposition ${id}: unknown reason "${d.unreachable}" (one of ${Object.keys(REASONS).join(", ")})`);
    if (d.check !== undefined && !Array.isArray(d.test)) problems.push(`disposition ${id}: a check needs a test list (empty when untested)`);
    // A check names where it is: each `opChecks.name` must be a key of src/core/checks.ts's opChecks, each `src/….ts` a file.
    if (d.check !== undefined) {
      let checks = cache.get("src/core/checks.ts");
      if (checks === undefined) cache.set("src/core/checks.ts", checks = readFileSync(join(root, "src", "core", "checks.ts"), "utf8"));
      for (const m of d.check.matchAll(/\bopChecks\.(\w+)/g)) {
        if (!new RegExp(`^\\s+${m[1]}:`, "m").test(checks)) problems.push(`disposition ${id}: opChecks.${m[1]} is not in src/core/checks.ts`);
      }
      for (const m of d.check.matchAll(/\b(src\/[\w/]+\.ts)\b/g)) {
        if (!existsSync(join(root, m[1]))) problems.push(`disposition ${id}: no file ${m[1]}`);
      }
    }
    if (d.unreachable === "param-off") {
      if (!d.params?.length) problems.push(`disposition ${id}: param-off needs the params that gate it`);
      const api = readFileSync(join(root, "src", "whisper", "whisper.ts"), "utf8");
      for (const f of d.params ?? []) {
        if (new RegExp(`(?:\\.|["'])${f}\\b`).test(api)) problems.push(`disposition ${id}: src/whisper/whisper.ts names ${f}: the API may set it`);
      }
    }
    for (const ref of d.test ?? []) {
      const p = checkTestRef(root, ref, cases, cache);
      if (p) problems.push(`disposition ${id}: ${p}`);
    }
  }
  const known = (id: string, where: string, wildcard: boolean) => {
    const d = map.dispositions[id];
    if (!d) problems.push(`${where}: unknown disposition "${id}"`);
    else if (wildcard && !d.any) problems.push(`${where}: "${id}" is used for every site of a ${where.includes(":") ? "function" : "file"}, but its reason is not marked "any"`);
  };
  const present = new Set<string>();
  for (const s of sites) {
    present.add(`${s.file}:${s.function}:${s.local}`).add(`${s.file}:${s.function}`).add(s.file);
    const hit = lookup(map, s);
    if (!hit) {
      problems.push(`unmapped: ${s.key} (${s.file}:${s.line})`);
      continue;
    }
    if (options.reach && map.dispositions[hit.id]?.unreachable === "not-called" && options.reach.has(s.function)) {
      problems.push(`reachable: ${s.key} is mapped to "${hit.id}" but the binding reaches ${s.function}`);
    }
  }
  for (const [file, fe] of Object.entries(map.sites)) {
    if (!present.has(file)) problems.push(`stale: ${file} (no site in that file)`);
    if (typeof fe === "string") {
      known(fe, file, true);
      continue;
    }
    for (const [fn, entry] of Object.entries(fe)) {
      if (!present.has(`${file}:${fn}`)) problems.push(`stale: ${file}:${fn} (no site in that function)`);
      if (typeof entry === "string") {
        known(entry, `${file}:${fn}`, true);
        continue;
      }
      for (const [local, id] of Object.entries(entry)) {
        if (!present.has(`${file}:${fn}:${local}`)) problems.push(`stale: ${file}:${fn}:${local}`);
        known(id, `${file}:${fn}:${local}`, false);
      }
    }
  }
  return problems;
}

/** Sites counted by category and by disposition id. */
export function tally(sites: readonly Site[], map: AssertMap): { byCategory: Map<string, number>; byId: Map<string, number> } {
  const byCategory = new Map<string, number>();
  const byId = new Map<string, number>();
  for (const s of sites) {
    const hit = lookup(map, s);
    const id = hit?.id ?? "(unmapped)";
    const d = map.dispositions[id];
    const cat = d ? category(d) : "unmapped";
    byCategory.set(cat, (byCategory.get(cat) ?? 0) + 1);
    byId.set(id, (byId.get(id) ?? 0) + 1);
  }
  return { byCategory, byId };
}

const CATEGORY_ORDER = ["check", "check (untested)", ...Object.keys(REASONS).map((r) => `unreachable: ${r}`), "open", "unmapped"];

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");
const code = (s: string) => (s === "" ? "" : "`" + cell(s).replace(/`/g, "'") + "`");

/** The summary table (also written into docs/asserts.md): ggml's sites, then whisper.cpp's. */
export function renderSummary(sites: readonly Site[], map: AssertMap): string {
  const ggml = sites.filter((s) => !isWhisper(s));
  const whisper = sites.filter(isWhisper);
  const files = new Map<string, number>();
  for (const s of ggml) files.set(s.file, (files.get(s.file) ?? 0) + 1);
  const lines = [
    `${ggml.length} sites in ${files.size} files of \`vendor/ggml\` (\`WSP_GGML_ASSERT\`, \`WSP_GGML_ASSERT_ALIGNED\`, \`WSP_GGML_ABORT\`,`,
    "`WSP_GGML_UNREACHABLE`, `abort()`, and CPU-kernel reads of an index out of tensor data), each mapped in",
    `\`${MAP_PATH}\`; the full list is \`${INVENTORY_PATH}\`. Both are checked by \`tests/asserts_inventory.test.ts\`.`,
    "",
    ...table(ggml, map),
  ];
  if (whisper.length) {
    lines.push(
      "",
      `whisper.cpp (\`${WHISPER_VENDOR}\`, libwsp-whisper): ${whisper.length} sites (\`WHISPER_ASSERT\`, ggml's macros, \`assert\` (NDEBUG),`,
      "`throw` (compiled with exceptions, caught nowhere on these paths: std::terminate), `.at(` (std::out_of_range),",
      "`std::regex` (std::regex_error), and each call of a ggml function that can reach one of ggml's sites):",
      "",
      ...table(whisper, map),
    );
  }
  return lines.join("\n");
}

function table(sites: readonly Site[], map: AssertMap): string[] {
  const { byCategory, byId } = tally(sites, map);
  const lines = ["| Disposition | Sites |", "| --- | ---: |"];
  for (const cat of CATEGORY_ORDER) {
    const n = byCategory.get(cat);
    if (n) lines.push(`| ${cat} | ${n} |`);
  }
  const open = [...byId].filter(([id]) => map.dispositions[id]?.open !== undefined).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (open.length) {
    lines.push("", "Open, by what is missing:", "");
    for (const [id, n] of open) lines.push(`- ${code(id)} (${n}): ${cell(map.dispositions[id].open!)}`);
  }
  return lines;
}

/** `docs/asserts-inventory.md`. */
export function renderInventory(sites: readonly Site[], map: AssertMap): string {
  const { byId } = tally(sites, map);
  const out: string[] = [
    "# Abort-site inventory",
    "",
    "<!-- Generated by `node --import tsx codegen/asserts_map.ts --write` from vendor/ggml and docs/asserts.map.json; do not edit. -->",
    "",
    "Every place in the vendored ggml and whisper.cpp where a call could end the process, found by `codegen/asserts.ts` (a",
    "lexical reader: comments and literals stripped, `#if` branches followed, the enclosing function tracked by",
    "brace depth), and what `docs/asserts.map.json` says of it. A site's key is `file:function:kind condition`",
    "(plus `#n` for the n-th identical one in a function) — no line numbers, so keys survive unrelated edits;",
    "lines below are for reading only. `tests/asserts_inventory.test.ts` fails on a site the map lacks, a map",
    "key no site has, a test reference that does not resolve, and a `not-called` site the binding reaches.",
    "",
    "## Summary",
    "",
    renderSummary(sites, map),
    "",
    "Reasons a site cannot be reached:",
    "",
    ...Object.entries(REASONS).map(([k, v]) => `- **${k}**: ${v}`),
    "",
    "## Dispositions",
    "",
    "| Id | Kind | What | Test | Sites |",
    "| --- | --- | --- | --- | ---: |",
  ];
  for (const [id, d] of Object.entries(map.dispositions).sort(([a], [b]) => a.localeCompare(b))) {
    const what = d.check ?? d.open ?? `${d.unreachable}${d.note ? `: ${d.note}` : ""}`;
    out.push(`| ${code(id)} | ${category(d)} | ${cell(what)} | ${cell((d.test ?? []).join("; "))} | ${byId.get(id) ?? 0} |`);
  }
  const byFile = new Map<string, Site[]>();
  for (const s of sites) {
    let list = byFile.get(s.file);
    if (!list) byFile.set(s.file, list = []);
    list.push(s);
  }
  out.push("", "## Sites by file");
  for (const [file, list] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
    const fe = map.sites[file];
    out.push("", `### ${file} (${list.length})`, "");
    if (typeof fe === "string") {
      out.push(`Every site of this file: ${code(fe)}.`, "");
      const fns = new Map<string, number>();
      for (const s of list) fns.set(s.function, (fns.get(s.function) ?? 0) + 1);
      out.push("| Function | Sites |", "| --- | ---: |");
      for (const [fn, n] of fns) out.push(`| ${code(fn)} | ${n} |`);
      continue;
    }
    out.push("| Line | Function | Site | Disposition |", "| ---: | --- | --- | --- |");
    for (const s of list) {
      const hit = lookup(map, s);
      const disp = hit ? code(hit.id) + (hit.via === "function" ? " (every site of the function)" : "") : "**unmapped**";
      out.push(`| ${s.line} | ${code(s.function)} | ${code(s.local)} | ${disp} |`);
    }
  }
  return out.join("\n") + "\n";
}

export const SUMMARY_START = "<!-- asserts-inventory:start (generated by codegen/asserts_map.ts --write; do not edit) -->";
export const SUMMARY_END = "<!-- asserts-inventory:end -->";

/** `doc` (docs/asserts.md) with its generated summary section replaced, or appended when absent. */
export function withSummary(doc: string, summary: string): string {
  const block = `${SUMMARY_START}\n${summary}\n${SUMMARY_END}`;
  const a = doc.indexOf(SUMMARY_START);
  const b = doc.indexOf(SUMMARY_END);
  if (a >= 0 && b > a) return doc.slice(0, a) + block + doc.slice(b + SUMMARY_END.length);
  return `${doc.replace(/\n*$/, "\n")}\n## Inventory of every abort site\n\n${block}\n`;
}

/**
 * Scans vendor/ggml and vendor/whisper (when there), with the call graph of both and the functions
 * the binding reaches (ggml's functions that whisper.cpp calls included).
 */
export function scanVendor(root = ROOT): { tree: TreeScan; reach: Set<string> } {
  const dir = join(root, VENDOR);
  if (!existsSync(join(dir, "ggml.c"))) {
    throw new Error(`${VENDOR} is missing: run the set-up first (npm run setup, or node scripts/setup.mjs)`);
  }
  const ggml = scanTreeFull(dir);
  const wdir = join(root, WHISPER_VENDOR);
  if (!existsSync(join(wdir, "whisper.cpp"))) return { tree: ggml, reach: reachable(ggml, bindingRoots(root)) };
  const whisper = scanWhisper(wdir, abortingFunctions(ggml));
  const refs = new Map(ggml.refs);
  for (const [k, v] of whisper.refs) refs.set(k, new Set([...(refs.get(k) ?? []), ...v]));
  const tree: TreeScan = { sites: [...ggml.sites, ...whisper.sites], refs, fileRefs: new Map([...ggml.fileRefs, ...whisper.fileRefs]) };
  return { tree, reach: reachable(tree, bindingRoots(root)) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const t0 = performance.now();
  const { tree, reach } = scanVendor();
  const map = loadMap();
  const problems = checkMap(tree.sites, map, { reach });
  if (process.argv.includes("--missing")) {
    const out: Record<string, Record<string, Record<string, string>>> = {};
    for (const s of tree.sites) if (!lookup(map, s)) ((out[s.file] ??= {})[s.function] ??= {})[s.local] = "open:review";
    console.log(JSON.stringify(out, null, 1));
  }
  if (process.argv.includes("--write")) {
    writeFileSync(join(ROOT, INVENTORY_PATH), renderInventory(tree.sites, map));
    const docPath = join(ROOT, "docs", "asserts.md");
    writeFileSync(docPath, withSummary(readFileSync(docPath, "utf8"), renderSummary(tree.sites, map)));
  }
  for (const p of problems) console.error(p);
  const { byCategory } = tally(tree.sites, map);
  console.error(`${tree.sites.length} sites: ${[...byCategory].map(([k, v]) => `${k} ${v}`).join(", ")}; ${problems.length} problems; ${(performance.now() - t0).toFixed(0)} ms`);
  process.exitCode = problems.length ? 1 : 0;
}
