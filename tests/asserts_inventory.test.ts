// The abort-site inventory cannot go stale: vendor/ggml is scanned again
// (codegen/asserts.ts) and every WSP_GGML_ASSERT / _ABORT / _UNREACHABLE,
// abort() and kernel index read must have a disposition in
// docs/asserts.map.json (a TS check and its test, a reason it cannot be
// reached, or `open`), every map key must still exist, every test reference
// must resolve, and the generated docs must be fresh. Reads files only (no FFI).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scanSource, WHISPER_NEVER_DEFINED, withoutDebugBlocks, withoutMacroCalls } from "../codegen/asserts.ts";
import {
  checkMap,
  INVENTORY_PATH,
  loadMap,
  renderInventory,
  renderSummary,
  ROOT,
  scanVendor,
  SUMMARY_END,
  SUMMARY_START,
  VENDOR,
  WHISPER_VENDOR,
} from "../codegen/asserts_map.ts";

const vendorThere = existsSync(join(ROOT, VENDOR, "ggml.c"));
let scanned: { ms: number; scan: ReturnType<typeof scanVendor> } | undefined;
/** One scan of vendor/ggml for every test here (timed). */
function scan() {
  if (!scanned) {
    const t0 = performance.now();
    const s = scanVendor();
    scanned = { ms: performance.now() - t0, scan: s };
  }
  return scanned.scan;
}
const regenerate = "node --import tsx codegen/asserts_map.ts --write";

test("vendor/ggml is there (run the set-up: npm run setup)", () => {
  assert.ok(vendorThere, `${VENDOR} is missing: run the set-up (npm run setup, or node scripts/setup.mjs) before the tests`);
});

test("every abort site of vendor/ggml is in docs/asserts.map.json, and every map entry is a site", { skip: !vendorThere }, () => {
  const { tree, reach } = scan();
  const ms = scanned!.ms;
  const map = loadMap();
  const problems = checkMap(tree.sites, map, { reach });
  assert.ok(tree.sites.length > 1000, `${tree.sites.length} sites: the reader lost most of them`);
  // Each kind the reader knows occurs in these sources.
  for (const kind of ["assert", "abort", "unreachable", "assert_aligned", "abort_call", "index"]) {
    assert.ok(tree.sites.some((s) => s.kind === kind), `no site of kind ${kind}`);
  }
  assert.deepEqual(problems, [], `the map and the sources disagree (fix docs/asserts.map.json; \`node --import tsx codegen/asserts_map.ts --missing\` prints the entries it lacks)`);
  console.log(`asserts inventory: ${tree.sites.length} sites scanned and checked in ${ms.toFixed(0)} ms`);
});

test("docs/asserts-inventory.md and the summary in docs/asserts.md are fresh", { skip: !vendorThere }, () => {
  const { tree } = scan();
  const map = loadMap();
  const inventory = readFileSync(join(ROOT, INVENTORY_PATH), "utf8");
  assert.ok(inventory === renderInventory(tree.sites, map), `${INVENTORY_PATH} is stale: run ${regenerate}`);
  const doc = readFileSync(join(ROOT, "docs", "asserts.md"), "utf8");
  const a = doc.indexOf(SUMMARY_START);
  const b = doc.indexOf(SUMMARY_END);
  assert.ok(a >= 0 && b > a, `docs/asserts.md has no generated inventory section: run ${regenerate}`);
  assert.equal(doc.slice(a + SUMMARY_START.length, b).trim(), renderSummary(tree.sites, map).trim(), `docs/asserts.md's inventory section is stale: run ${regenerate}`);
});

test("a new assert in a copy of a source is reported by name; a removed one is reported stale", { skip: !vendorThere }, () => {
  const { tree } = scan();
  const map = loadMap();
  const file = "ggml-alloc.c";
  const fn = "wsp_ggml_tallocr_alloc";
  const dir = mkdtempSync(join(tmpdir(), "wsp-asserts-"));
  try {
    const src = readFileSync(join(ROOT, VENDOR, file), "utf8");
    // Insert the assert as the first statement of the function's body.
    const header = new RegExp(`\\b${fn}\\s*\\([^)]*\\)\\s*\\{`).exec(src);
    assert.ok(header, `${fn} not found in ${file}`);
    const at = header.index + header[0].length;
    const mutated = `${src.slice(0, at)}\n    WSP_GGML_ASSERT(x == 1);${src.slice(at)}`;
    const copy = join(dir, "ggml-alloc.c");
    writeFileSync(copy, mutated);
    const sites = [...tree.sites.filter((s) => s.file !== file), ...scanSource(file, readFileSync(copy, "utf8"))];
    const problems = checkMap(sites, map);
    assert.deepEqual(problems.map((p) => p.replace(/ \(.*\)$/, "")), [`unmapped: ${file}:${fn}:assert x == 1`]);

    // The same assert twice in the function: the second one is a key of its own.
    const twice = `${src.slice(0, at)}\n    WSP_GGML_ASSERT(x == 1);\n    WSP_GGML_ASSERT( x  ==  1 );${src.slice(at)}`;
    const twiceSites = [...tree.sites.filter((s) => s.file !== file), ...scanSource(file, twice)];
    assert.deepEqual(checkMap(twiceSites, map).map((p) => p.replace(/ \(.*\)$/, "")), [
      `unmapped: ${file}:${fn}:assert x == 1`,
      `unmapped: ${file}:${fn}:assert x == 1#2`,
    ]);

    // An assert commented out, or in a string, is no site; an edit elsewhere in the file changes no key.
    const inert = `/* WSP_GGML_ASSERT(y == 2); */\nstatic const char * s_inert = "WSP_GGML_ABORT(\\"z\\")";\n\n\n${src}`;
    const inertSites = [...tree.sites.filter((s) => s.file !== file), ...scanSource(file, inert)];
    assert.deepEqual(checkMap(inertSites, map), []);

    // Deleting a mapped assert leaves a stale map entry, named.
    const victim = tree.sites.find((s) => s.file === file && s.kind === "assert")!;
    const gone = tree.sites.filter((s) => s !== victim);
    assert.ok(checkMap(gone, map).includes(`stale: ${victim.key}`), `removing ${victim.key} was not reported`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the reader attributes sites to functions, #define bodies, methods and #if branches", () => {
  const src = [
    "#define CHECK(x) WSP_GGML_ASSERT((x) > 0)",
    "namespace ns {",
    "struct S {",
    "    void m(int a) const { WSP_GGML_ASSERT(a); }",
    "};",
    "}",
    "static const int table[] = { 1, 2 };",
    "template <typename T> static void t(T v) {",
    "#if defined(A)",
    "    if (v) {",
    "#else",
    "    if (!v) {",
    "#endif",
    "        WSP_GGML_ABORT(\"fatal %s\", \"error\");",
    "    }",
    "    // WSP_GGML_ASSERT(commented);",
    "    WSP_GGML_ASSERT(v\n        && 1);",
    "}",
    "void f(struct wsp_ggml_tensor * dst) {",
    "    const int64_t i = *(int32_t *) ((char *) dst->src[1]->data + 4);",
    "    WSP_GGML_UNREACHABLE();",
    "    abort();",
    "}",
  ].join("\n");
  const sites = scanSource("ggml-cpu/x.cpp", src).map((s) => `${s.function} | ${s.local}`);
  assert.deepEqual(sites, [
    "#define CHECK | assert (x) > 0",
    "S::m | assert a",
    "t | abort \"fatal %s\", \"error\"",
    "t | assert v && 1",
    "f | unreachable",
    "f | abort_call",
  ]);
});

test("code under debug switches no build defines is neither a site nor a call; their #else branch is kept", () => {
  const src = [
    "void f(void) {",
    "#ifdef WSP_GGML_VULKAN_CHECK_RESULTS",
    "  WSP_GGML_ASSERT(debug_only);",
    "#if X",
    "  WSP_GGML_ASSERT(nested);",
    "#endif",
    "#else",
    "  WSP_GGML_ASSERT(kept);",
    "#endif",
    "#if defined(WSP_GGML_VULKAN_RUN_TESTS) || defined(WSP_GGML_VULKAN_CHECK_RESULTS)",
    "  WSP_GGML_ABORT(\"tests\");",
    "#endif",
    "#if defined(WSP_GGML_VULKAN_RUN_TESTS) || defined(SOMETHING_ELSE)",
    "  WSP_GGML_ASSERT(maybe);",
    "#endif",
    "}",
  ].join("\n");
  const out = withoutDebugBlocks(src);
  assert.equal(out.split("\n").length, src.split("\n").length, "line numbers kept");
  assert.deepEqual(scanSource("f.c", out).map((s) => s.condition), ["kept", "maybe"]);
});

// whisper.cpp (vendor/whisper, libwsp-whisper) is read by the same reader, with its own kinds.
const whisperThere = existsSync(join(ROOT, WHISPER_VENDOR, "whisper.cpp"));

test("whisper.cpp: its sites are read (each kind), attributed to functions, and all mapped", { skip: !vendorThere || !whisperThere }, () => {
  const { tree } = scan();
  const w = tree.sites.filter((s) => s.file === "whisper/whisper.cpp");
  assert.ok(w.length > 300, `${w.length} whisper.cpp sites: the reader lost most of them`);
  for (const kind of ["whisper_assert", "assert", "c_assert", "throw", "at", "regex", "ggml_call", "abort_call"]) {
    assert.ok(w.some((s) => s.kind === kind), `no whisper.cpp site of kind ${kind}`);
  }
  // The graphs' ggml calls are sites of the graph builders; the loader's throws are the loader's.
  assert.ok(w.some((s) => s.function === "whisper_build_graph_encoder" && s.local.startsWith("ggml_call wsp_ggml_mul_mat")));
  assert.ok(w.some((s) => s.function === "whisper_model_load" && s.kind === "throw"));
  // Compiled out: WHISPER_LOG_DEBUG's arguments and #ifdef WHISPER_DEBUG (their .at() calls are no sites).
  assert.ok(!w.some((s) => s.kind === "at" && s.function === "whisper_full_with_state"), "a .at() under WHISPER_DEBUG was read as a site");
});

test("whisper.cpp reader: WHISPER_ASSERT, assert, throw, .at(), std::regex and ggml calls; debug code ignored", () => {
  const src = [
    "#define WHISPER_ASSERT(x) do { if (!(x)) { abort(); } } while (0)",
    "#define WHISPER_LOG_DEBUG(...)",
    "static int f(const std::map<int, int> & m, std::vector<int> & v, const char * s) {",
    "    WHISPER_ASSERT(v.size() > 0);",
    "    assert(s);",
    "    WHISPER_LOG_DEBUG(\"%d\", m.at(3));",
    "#ifdef WHISPER_DEBUG",
    "    v.at(9);",
    "#endif",
    "#if 0",
    "    throw 1;",
    "#endif",
    "    std::regex re(s);",
    "    if (!std::regex_match(s, re)) throw std::runtime_error(\"no\");",
    "    wsp_ggml_mul_mat(nullptr, nullptr, nullptr);",
    "    wsp_ggml_time_us();",
    "    return m.at(v.at(0)) + tables[1].at(2);",
    "}",
  ].join("\n");
  const clean = withoutMacroCalls(withoutDebugBlocks(src, WHISPER_NEVER_DEFINED, true), "WHISPER_LOG_DEBUG");
  const sites = scanSource("whisper/x.cpp", clean, { whisper: true, ggmlCalls: new Set(["wsp_ggml_mul_mat"]) }).map((s) => `${s.function} | ${s.local}`);
  assert.deepEqual(sites, [
    "#define WHISPER_ASSERT | abort_call",
    "f | whisper_assert v.size() > 0",
    "f | c_assert s",
    "f | regex std::regex re(s)",
    "f | regex std::regex_match(s, re)",
    "f | throw std::runtime_error(\"no\")",
    "f | ggml_call wsp_ggml_mul_mat",
    "f | at m.at(v.at(0))",
    "f | at v.at(0)",
    "f | at tables[1].at(2)",
  ]);
});

test("a param-off disposition fails when src/whisper/whisper.ts names one of its params", () => {
  const map = { dispositions: { x: { unreachable: "param-off", params: ["n_threads"] }, y: { unreachable: "param-off", params: ["grammar_rules"] } }, sites: {} };
  assert.deepEqual(checkMap([], map), ["disposition x: src/whisper/whisper.ts names n_threads: the API may set it"]);
});
