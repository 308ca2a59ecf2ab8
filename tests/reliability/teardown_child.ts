// The child of teardown.test.ts: builds a population of live native objects (contexts with
// tensors and graphs, CPU backends, a threadpool, a backend buffer, schedulers, a GGUF writer,
// an optimizer), then ends the process the way argv[2] says. It prints `teardown: <step>` as it
// goes, so the parent knows how far it got.
//
//   alive-exit      process.exit(3) with everything alive
//   alive-natural   the script ends with everything alive (exit 0)
//   async-exit      process.exit(4) while graphComputeAsync runs a long graph
//   async-natural   the script ends while graphComputeAsync runs (the compute finishes, exit 0)
//   async-throw     an uncaught exception while graphComputeAsync runs (exit 1)
//   async-rejection an unhandled rejection while graphComputeAsync runs (exit 1)
//   eval-exit       the scheduler's eval callback calls process.exit(5) in the middle of a compute
//   eval-throw      the eval callback throws; nothing catches it (exit 1)
//   progress-exit   the optimizer's progress callback calls process.exit(6) during an epoch
//   uncaught        an uncaught exception with everything alive (exit 1)
//   rejection       an unhandled promise rejection with everything alive (exit 1)
import process from "node:process";
import {
  allocCtxTensors,
  Backend,
  Context,
  GgufType,
  GgufWriter,
  OptContext,
  OptDataset,
  OptLossType,
  Sched,
  tensorSet,
  Threadpool,
  Type,
} from "../../mod.ts";

const mode = process.argv[2];
const say = (s: string) => console.log(`teardown: ${s}`);

// ---- everything alive ----
const ctx = new Context({ memSize: 8 << 20 });
const a = ctx.newTensor2d(Type.F32, 64, 64).set(new Float32Array(64 * 64).fill(1 / 64));
const y = ctx.mulMat(a, a);
const graph = ctx.newGraph().buildForwardExpand(ctx.sum(y));
graph.compute({ nThreads: 2 });
const cpu = Backend.cpu({ nThreads: 2 });
const pool = new Threadpool({ nThreads: 2 });
const pooled = Backend.cpu({ threadpool: pool });
const lazy = new Context({ memSize: 1 << 20, noAlloc: true });
const w = lazy.newTensor1d(Type.F32, 16);
const buffer = allocCtxTensors(lazy, cpu)!;
tensorSet(w, new Float32Array(16).fill(2));
const sched = new Sched({ backends: [cpu] });
const writer = new GgufWriter().set("general.name", GgufType.STRING, "teardown");
const alive: unknown[] = [ctx, graph, pooled, buffer, sched, writer];
say(`alive ${alive.length}`);

/** A graph long enough to be computing when the next line runs: a chain of 256² matmuls. */
function heavy() {
  const c = new Context({ memSize: 64 << 20 });
  const n = 256;
  const m = c.newTensor2d(Type.F32, n, n).set(new Float32Array(n * n).fill(1 / n));
  let t = m;
  for (let i = 0; i < 60; i++) t = c.mulMat(t, m);
  return c.newGraph().buildForwardExpand(t);
}

/** A scheduler graph of many small nodes, for the eval callback. */
function chain() {
  const c = new Context({ memSize: 1 << 20 });
  let t = c.newTensor1d(Type.F32, 8).set(new Float32Array(8).fill(1));
  for (let i = 0; i < 20; i++) t = c.scale(t, 1.5);
  return c.newGraph().buildForwardExpand(t);
}

switch (mode) {
  case "alive-exit":
    say("exit");
    process.exit(3);
    break;
  case "alive-natural":
    say("end");
    break;
  case "async-exit": {
    const p = cpu.graphComputeAsync(heavy());
    say("computing");
    setTimeout(() => {
      say("exit");
      process.exit(4);
    }, 20);
    await p;
    say("finished before the exit (not expected)");
    break;
  }
  case "async-natural":
    cpu.graphComputeAsync(heavy()).then(() => say("finished"));
    say("computing");
    break;
  case "async-throw": {
    cpu.graphComputeAsync(heavy());
    say("computing");
    setTimeout(() => {
      throw new Error("uncaught while computing");
    }, 20);
    break;
  }
  case "async-rejection":
    cpu.graphComputeAsync(heavy());
    say("computing");
    Promise.reject(new Error("unhandled rejection while computing"));
    break;
  case "eval-exit": {
    let n = 0;
    sched.setEvalCallback((_node, ask) => {
      if (!ask && ++n === 5) {
        say("exit from the eval callback");
        process.exit(5);
      }
      return true;
    });
    sched.graphCompute(chain());
    say("compute returned (not expected)");
    break;
  }
  case "eval-throw":
    sched.setEvalCallback((_node, ask) => {
      if (!ask) throw new Error("thrown by the eval callback");
      return true;
    });
    say("computing");
    sched.graphCompute(chain());
    break;
  case "progress-exit": {
    const st = new Context({ memSize: 1 << 16, noAlloc: true });
    const p = st.newTensor1d(Type.F32, 1).setParam();
    const x = st.newTensor2d(Type.F32, 1, 4).setInput();
    const b2 = allocCtxTensors(st, cpu)!;
    tensorSet(p, new Float32Array([0]));
    const cc = new Context({ memSize: 1 << 20, noAlloc: true });
    const out = cc.mul(x, p).setOutput();
    const data = new OptDataset({ neDatapoint: 1, neLabel: 1, ndata: 16 }).setData(new Float32Array(16).fill(1)).setLabels(new Float32Array(16).fill(2));
    const opt = new OptContext({ sched: new Sched({ backends: [Backend.cpu({ nThreads: 1 })] }), ctxCompute: cc, inputs: x, outputs: out, loss: OptLossType.MEAN_SQUARED_ERROR });
    alive.push(b2, data, opt);
    opt.epoch(data, {
      onProgress: (pr) => {
        if (pr.batch === 2) {
          say("exit from the progress callback");
          process.exit(6);
        }
      },
    });
    say("epoch returned (not expected)");
    break;
  }
  case "uncaught":
    say("throw");
    throw new Error("uncaught with everything alive");
  case "rejection":
    say("reject");
    Promise.reject(new Error("unhandled rejection with everything alive"));
    break;
  default:
    throw new Error(`unknown mode ${mode}`);
}
