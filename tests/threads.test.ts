// The thread policy (src/runtime/threads.ts): the default thread count leaves out the cores other
// processes keep busy, WSP_GGML_THREADS fixes it, and asking for more threads than CPUs warns once.
// The busy figure is checked against a known load: a child process that spins on one core for
// the whole window adds about one core's worth of busy time (other load on the machine can only
// add to it, so the bound is one-sided), and this process's own work is not counted as busy.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import process from "node:process";
import { ArgumentError } from "../src/core/errors.ts";
import { checkThreads, cpuLoad, defaultThreads, THREADS_ENV } from "../src/runtime/threads.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("threads: WSP_GGML_THREADS fixes the default; a bad value is an ArgumentError", () => {
  const saved = process.env[THREADS_ENV];
  try {
    process.env[THREADS_ENV] = "3";
    assert.equal(defaultThreads(), 3);
    assert.equal(defaultThreads({ cap: 1 }), 3, "the variable wins over a caller's cap: it is the user's word");
    for (const bad of ["0", "-1", "1.5", "x", "513"]) {
      process.env[THREADS_ENV] = bad;
      assert.throws(() => defaultThreads(), ArgumentError, bad);
    }
  } finally {
    if (saved === undefined) delete process.env[THREADS_ENV];
    else process.env[THREADS_ENV] = saved;
  }
});

test("threads: the default is between 1 and the cores, and within a cap", () => {
  const load = cpuLoad();
  assert.ok(load.available >= 1 && load.available === availableParallelism(), JSON.stringify(load));
  assert.ok(load.cores >= 1 && load.cores <= load.available, JSON.stringify(load));
  assert.ok(load.windowMs > 0, "the machine's counters were read");
  const n = defaultThreads();
  assert.ok(n >= 1 && n <= load.cores, `${n} of ${JSON.stringify(load)}`);
  assert.equal(defaultThreads({ cap: 1 }), 1);
  console.log(`# ${JSON.stringify(load)} → ${n} thread(s)`);
});

test("threads: a process spinning on one core counts as about one busy core; this process's own work does not", async () => {
  // The spinner: a plain Node process, so the test measures the same load on every runtime.
  const spinner = spawn(process.platform === "win32" ? "node.exe" : "node", ["-e", "const t = Date.now() + 20000; while (Date.now() < t);"], { stdio: "ignore" });
  try {
    await sleep(300); // started and spinning
    cpuLoad(); // the window starts here
    await sleep(600);
    const busy = cpuLoad({ fresh: false });
    console.log(`# with a spinner: ${JSON.stringify(busy)}`);
    assert.ok(busy.busy >= 0.7, `a spinning process counts as ≥ 0.7 busy cores: ${JSON.stringify(busy)}`);
    if (busy.cores === 2 && busy.busy < 1.5) assert.equal(defaultThreads({ fresh: false }), 1, "2 cores, one of them busy: 1 thread");
  } finally {
    spinner.kill();
  }
  await sleep(300);
  // This process burns a window's time itself: its own CPU time is taken out of the busy figure,
  // which stays what an idle window just before measured (the machine's other load), within 0.5.
  cpuLoad();
  await sleep(400);
  const idle = cpuLoad({ fresh: false });
  const t = performance.now() + 400;
  let x = 0;
  while (performance.now() < t) x += Math.sqrt(x + 1);
  const own = cpuLoad({ fresh: false });
  console.log(`# idle: ${JSON.stringify(idle)}; while this process computes: ${JSON.stringify(own)} (${x > 0})`);
  assert.ok(own.busy < idle.busy + 0.5, `this process's own use is not busy: ${JSON.stringify(own)} against ${JSON.stringify(idle)}`);
});

test("threads: more threads than CPUs warn once per place", () => {
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (...a: unknown[]) => void warnings.push(a.join(" "));
  try {
    const over = availableParallelism() + 1;
    checkThreads("threads-test", over);
    checkThreads("threads-test", over);
    checkThreads("threads-test-ok", 1);
  } finally {
    console.warn = warn;
  }
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(warnings[0], /threads-test: \d+ threads on \d+ available CPUs?.*many times slower/);
});
