// A ggml assert that no TS check guards (a raw wsp_ggml_new_tensor with an
// invalid type, through the bindings table) aborts the process; wsp-ggml's
// abort callback (native/log.c) first prints ggml's message and, with
// abortTrace(true), the name and JS stack of the last native call. A child
// process of the current runtime per case.
import { test } from "node:test";
import assert from "node:assert/strict";
import { abortTrace, ArgumentError } from "../mod.ts";
import { ffi, library } from "../src/runtime/loader.ts";
import { logNatives } from "../src/runtime/log.ts";
import { type RunResult, runTsResult } from "./run.ts";

const ASSERT = /ggml\.c:\d+: WSP_GGML_ASSERT\(type >= 0 && type < WSP_GGML_TYPE_COUNT\) failed/;

/** SIGABRT, as a signal or as the shell-style exit code 128 + 6. */
function aborted(r: RunResult): boolean {
  return r.signal === "SIGABRT" || r.status === 134;
}

test("an unguarded ggml assert: ggml's message, the call's name and its JS stack, then SIGABRT", () => {
  const r = runTsResult("tests/programs/log_child.ts", {}, ["abort-trace"]);
  assert.ok(aborted(r), `status ${r.status} signal ${r.signal}\n${r.stderr}`);
  assert.doesNotMatch(r.stdout, /not aborted/);
  assert.match(r.stderr, ASSERT);
  assert.match(r.stderr, /wsp-ggml: the last native call from JS was wsp_ggml_new_tensor\n/);
  // The frame of the function that made the raw call, with its file.
  assert.match(r.stderr, /triggerUnguardedAbort.*log_child\.ts:\d+/);
  // ggml's message comes first, the JS call right after it.
  assert.ok(r.stderr.search(ASSERT) < r.stderr.indexOf("wsp-ggml: the last native call"));
});

test("with tracing off: ggml's message and a hint to turn tracing on", () => {
  const r = runTsResult("tests/programs/log_child.ts", {}, ["abort-plain"]);
  assert.ok(aborted(r), `status ${r.status} signal ${r.signal}\n${r.stderr}`);
  assert.match(r.stderr, ASSERT);
  assert.match(r.stderr, /call abortTrace\(true\) to see which JS call led here/);
  assert.doesNotMatch(r.stderr, /triggerUnguardedAbort/);
});

test("abortTrace records each native call's name and JS stack, and false restores the functions", () => {
  const symbols = library().symbols as unknown as Record<string, unknown>;
  const before = symbols.wsp_ggml_type_size;
  const recorded = () => ffi.readCString(logNatives().s.wsp_js_abort_info()) ?? "";
  function callerOfTypeSize(): void {
    library().symbols.wsp_ggml_type_size(0);
  }
  abortTrace(true);
  try {
    assert.notEqual(symbols.wsp_ggml_type_size, before);
    callerOfTypeSize();
    const text = recorded();
    assert.match(text, /^wsp_ggml_type_size\n/);
    assert.match(text, /callerOfTypeSize/);
    assert.doesNotMatch(text, /src\/log\.ts/, "the recorder's own frames are left out");
  } finally {
    abortTrace(false);
  }
  assert.equal(symbols.wsp_ggml_type_size, before);
  assert.equal(recorded(), "");
  assert.throws(() => abortTrace("yes" as never), ArgumentError);
});
