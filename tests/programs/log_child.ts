// Child process of tests/log.test.ts and tests/abort.test.ts (a fresh process each):
//   default      logs at every level, from this thread and a native one, with no logSet
//   abort-trace  abortTrace(true), then a raw wsp_ggml_new_tensor with an invalid type
//   abort-plain  the same abort with tracing off
import process from "node:process";
import { abortTrace, LogLevel } from "../../mod.ts";
import { library } from "../../src/runtime/loader.ts";
import { logTest } from "../../src/runtime/log.ts";
import { runtime } from "../../src/runtime/runtime.ts";

const mode = process.argv[process.argv.length - 1];

/** A raw call that no TS check guards: ggml asserts the type and aborts. */
function triggerUnguardedAbort(): void {
  const ne = new BigInt64Array([4n]);
  const s = library().symbols;
  s.wsp_ggml_new_tensor(runtime().scratch.ptr, 9999, 1, library().ffi.addressOf(ne));
}

if (mode === "default") {
  for (const threaded of [false, true]) {
    const where = threaded ? "thread" : "js";
    logTest(LogLevel.DEBUG, `debug-${where}\n`, null, threaded);
    logTest(LogLevel.INFO, `info-${where} `, `info-cont-${where}\n`, threaded);
    logTest(LogLevel.WARN, `warn-${where} `, `warn-cont-${where}\n`, threaded);
    logTest(LogLevel.ERROR, `error-${where}\n`, null, threaded);
  }
  console.log("done");
} else if (mode === "abort-trace" || mode === "abort-plain") {
  runtime();
  if (mode === "abort-trace") abortTrace(true);
  triggerUnguardedAbort();
  console.log("not aborted");
} else {
  throw new Error(`unknown mode ${mode}`);
}
