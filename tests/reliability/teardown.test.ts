// Teardown: a process that ends while native objects are alive — by process.exit, by its natural
// end, while an asynchronous compute runs on another thread, from inside a native callback (the
// scheduler's eval callback, the optimizer's progress callback), by an uncaught exception or an
// unhandled rejection — ends with the expected exit code: no signal (abort, segfault), no ggml
// assert message, no hang (each child has a time limit). teardown_child.ts is the program.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { describeChild, root, runChild, runtimeName } from "./lib.ts";

const child = join(root, "tests", "reliability", "teardown_child.ts");

/** [mode, expected exit code, the last `teardown:` line the child printed]. */
const cases: [string, number, string][] = [
  ["alive-exit", 3, "exit"],
  ["alive-natural", 0, "end"],
  ["async-exit", 4, "exit"],
  ["async-natural", 0, "finished"],
  ["async-throw", 1, "computing"],
  ["async-rejection", 1, "computing"],
  ["eval-exit", 5, "exit from the eval callback"],
  ["eval-throw", 1, "computing"],
  ["progress-exit", 6, "exit from the progress callback"],
  ["uncaught", 1, "throw"],
  ["rejection", 1, "reject"],
];

/** What stderr must not hold: ggml's assert / abort text, a crash report, a runtime panic. */
const CRASH = /WSP_GGML_ASSERT|GGML_ABORT|Aborted|Segmentation fault|core dumped|panicked|SIGSEGV|SIGABRT|Illegal instruction/;

for (const [mode, code, last] of cases) {
  test(`teardown on ${runtimeName}: ${mode} exits with ${code}`, () => {
    const r = runChild(child, { argv: [mode], timeoutMs: 60_000 });
    assert.equal(r.timedOut, false, `hung\n${describeChild(r)}`);
    assert.equal(r.signal, null, `killed by a signal\n${describeChild(r)}`);
    assert.equal(r.status, code, describeChild(r));
    assert.doesNotMatch(r.stderr, CRASH, describeChild(r));
    const said = r.stdout.split("\n").filter((l) => l.startsWith("teardown: "));
    assert.ok(said[0]?.startsWith("teardown: alive "), `the objects were created\n${describeChild(r)}`);
    assert.equal(said.at(-1), `teardown: ${last}`, describeChild(r));
  });
}
