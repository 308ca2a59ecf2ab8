// ggml's log through logSet: levels, CONT continuations, the minimum level,
// messages from native threads (queued, delivered on the JS thread), the
// default (WARN and ERROR to stderr, in a fresh child process) and restoring it.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { ArgumentError, loadAllFromPath, loadBackend, logFlush, LogLevel, logSet } from "../mod.ts";
import { logTest, logTestNonblocking } from "../src/runtime/log.ts";
import { layouts } from "../src/ffi/bindings.gen.ts";
import { cString } from "../src/ffi/mod.ts";
import { ffi, keepAlive, library } from "../src/runtime/loader.ts";
import { join } from "node:path";
import { root, runTsResult } from "./run.ts";

type Entry = [LogLevel, string];

/** Installs a collecting callback; returns what it collected. */
function collect(minLevel?: LogLevel): Entry[] {
  const got: Entry[] = [];
  logSet((level, text) => got.push([level, text]), minLevel === undefined ? {} : { minLevel });
  return got;
}

const MISSING = "/nonexistent-wsp-ggml-dir/libggml-nothing.so";

describe("logSet", () => {
  after(() => logSet(null));

  test("a real ggml message (wsp_ggml_backend_load of a missing file) arrives as ERROR", () => {
    const got = collect();
    assert.equal(loadBackend(MISSING), null);
    const errors = got.filter(([l]) => l === LogLevel.ERROR);
    assert.equal(errors.length, 1, JSON.stringify(got));
    assert.match(errors[0][1], /failed to load .*nonexistent-wsp-ggml-dir/);
  });

  test("a real ggml message from gguf (raw wsp_gguf_init_from_file of a file that is not GGUF) arrives as ERROR", () => {
    const got = collect();
    const fname = cString(join(root, "README.md"));
    const params = new Uint8Array(layouts.wsp_gguf_init_params.size);
    assert.equal(library().symbols.wsp_gguf_init_from_file(ffi.addressOf(fname), ffi.addressOf(params)), 0);
    keepAlive([fname, params]);
    assert.ok(got.some(([l, t]) => l === LogLevel.ERROR && /invalid magic/.test(t)), JSON.stringify(got));
  });

  test("minLevel drops lower levels (ggml's DEBUG 'search path does not exist')", () => {
    const all = collect();
    loadAllFromPath("/nonexistent-wsp-ggml-dir");
    assert.ok(all.some(([l, t]) => l === LogLevel.DEBUG && /does not exist/.test(t)), JSON.stringify(all));
    const warn = collect(LogLevel.WARN);
    loadAllFromPath("/nonexistent-wsp-ggml-dir");
    assert.ok(loadBackend(MISSING) === null);
    assert.ok(warn.length >= 1);
    assert.ok(warn.every(([l]) => l >= LogLevel.WARN), JSON.stringify(warn));
  });

  test("every level is delivered as given; CONT takes the level of the message it continues", () => {
    const got = collect();
    logTest(LogLevel.DEBUG, "d\n", null, false);
    logTest(LogLevel.INFO, "i ", "i-cont\n", false);
    logTest(LogLevel.WARN, "w ", "w-cont\n", false);
    logTest(LogLevel.ERROR, "e ", "e-cont\n", false);
    logTest(LogLevel.NONE, "plain\n", null, false);
    assert.deepEqual(got, [
      [LogLevel.DEBUG, "d\n"],
      [LogLevel.INFO, "i "],
      [LogLevel.INFO, "i-cont\n"],
      [LogLevel.WARN, "w "],
      [LogLevel.WARN, "w-cont\n"],
      [LogLevel.ERROR, "e "],
      [LogLevel.ERROR, "e-cont\n"],
      [LogLevel.NONE, "plain\n"],
    ]);
  });

  test("ggml-rpc's 'Null buffer for tensor' (an ERROR for every CPU tensor a server loads, not an error) comes as DEBUG", () => {
    const got = collect();
    logTest(LogLevel.ERROR, "Null buffer for tensor passed to init_tensor function\n", null, false);
    logTest(LogLevel.ERROR, "Null buffer for tensor passed to init_tensor function, and more\n", null, false);
    assert.deepEqual(got, [
      [LogLevel.DEBUG, "Null buffer for tensor passed to init_tensor function\n"],
      [LogLevel.ERROR, "Null buffer for tensor passed to init_tensor function, and more\n"],
    ]);
  });

  test("a CONT is filtered with the message it continues", () => {
    const got = collect(LogLevel.WARN);
    logTest(LogLevel.INFO, "i ", "i-cont\n", false);
    logTest(LogLevel.WARN, "w ", "w-cont\n", false);
    logTest(LogLevel.NONE, "plain\n", null, false); // NONE filters as INFO
    assert.deepEqual(got, [[LogLevel.WARN, "w "], [LogLevel.WARN, "w-cont\n"]]);
  });

  test("messages from a native thread wait for the JS thread: logFlush or the next message", () => {
    const got = collect();
    logTest(LogLevel.WARN, "from thread ", "continued\n", true);
    assert.deepEqual(got, []);
    logFlush();
    assert.deepEqual(got, [[LogLevel.WARN, "from thread "], [LogLevel.WARN, "continued\n"]]);
    logFlush();
    assert.equal(got.length, 2);
    logTest(LogLevel.ERROR, "second thread\n", null, true);
    logTest(LogLevel.INFO, "js thread\n", null, false);
    assert.deepEqual(got.slice(2), [[LogLevel.ERROR, "second thread\n"], [LogLevel.INFO, "js thread\n"]]);
  });

  test("a message logged inside a non-blocking call (the runtime's own worker thread) is queued too", async () => {
    const got = collect();
    await logTestNonblocking(LogLevel.ERROR, "nonblocking ", "continued\n");
    assert.deepEqual(got, []);
    logFlush();
    assert.deepEqual(got, [[LogLevel.ERROR, "nonblocking "], [LogLevel.ERROR, "continued\n"]]);
  });

  test("more than 4096 queued messages: the rest are counted in one WARN", () => {
    const got = collect();
    const N = 4096 + 10;
    for (let i = 0; i < N; i++) logTest(LogLevel.INFO, `m${i}\n`, null, true);
    logFlush();
    assert.equal(got.length, 4097);
    assert.deepEqual(got[0], [LogLevel.INFO, "m0\n"]);
    assert.deepEqual(got[4095], [LogLevel.INFO, "m4095\n"]);
    assert.equal(got[4096][0], LogLevel.WARN);
    assert.match(got[4096][1], /\b10 log messages from native threads were dropped/);
  });

  test("replacing the callback delivers what the old one had queued to it", () => {
    const first = collect();
    logTest(LogLevel.WARN, "queued\n", null, true);
    const second = collect();
    assert.deepEqual(first, [[LogLevel.WARN, "queued\n"]]);
    logTest(LogLevel.WARN, "new\n", null, false);
    assert.deepEqual(second, [[LogLevel.WARN, "new\n"]]);
    assert.equal(first.length, 1);
  });

  test("logSet(null) restores the default: the callback is not called any more", () => {
    const got = collect();
    logSet(null);
    logTest(LogLevel.DEBUG, "after restore (dropped by the default)\n", null, false);
    logTest(LogLevel.DEBUG, "after restore, thread (dropped by the default)\n", null, true);
    logFlush();
    assert.deepEqual(got, []);
  });

  test("bad arguments are ArgumentErrors", () => {
    assert.throws(() => logSet("x" as never), ArgumentError);
    assert.throws(() => logSet(() => {}, { minLevel: LogLevel.CONT }), /minLevel/);
    assert.throws(() => logSet(() => {}, { minLevel: 9 as LogLevel }), ArgumentError);
  });
});

test("the default, without logSet: WARN and ERROR (with their CONT) to stderr, from any thread", () => {
  const r = runTsResult("tests/programs/log_child.ts", {}, ["default"]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "done");
  const lines = r.stderr.split("\n").filter((l) => /-(js|thread)/.test(l));
  assert.deepEqual(lines, ["warn-js warn-cont-js", "error-js", "warn-thread warn-cont-thread", "error-thread"]);
});
