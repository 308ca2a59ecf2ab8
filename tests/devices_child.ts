// The child of tests/devices.test.ts: on the best device (a GPU when ggml has one, else the CPU;
// WSP_GGML_DEVICE chooses), builds live device objects — the device's backend, a CPU fallback, a
// scheduler over both, weights in a device buffer, a graph allocated by the scheduler — then does
// what argv[2] says. It prints `devices: <step>` as it goes.
//
//   abort        an asynchronous compute on the scheduler, aborted after 20 ms: the promise rejects
//                with the signal's reason; the same graph then computes again (exit 0)
//   abort-direct the same on the device's backend alone (every tensor in its buffer)
//   exit-async   process.exit(7) while an asynchronous compute runs on the device
//   alive-exit   process.exit(3) with every object alive
//   alive-end    the script ends with every object alive (exit 0)
import process from "node:process";
import { allocCtxTensors, Backend, bestDevice, Context, Gallocr, type Graph, Sched, type Tensor, tensorGet, tensorSet, Type } from "../mod.ts";

const mode = process.argv[2];
const say = (s: string) => console.log(`devices: ${s}`);

const device = bestDevice();
const backend = Backend.best({ nThreads: 2 });
const cpu = backend.isCpu ? backend : Backend.cpu({ nThreads: 2 });
const sched = new Sched({ backends: cpu === backend ? [backend] : [backend, cpu] });
const n = 192;
const wctx = new Context({ memSize: 1 << 20, noAlloc: true });
const w = wctx.newTensor2d(Type.F32, n, n).setName("w");
const wbuf = allocCtxTensors(wctx, backend)!;
tensorSet(w, new Float32Array(n * n).fill(1 / n));

/** A chain of n×n matmuls by w: long enough to be computing 20 ms later; each step keeps the values (w's rows average). */
function heavy(steps: number): { ctx: Context; x: Tensor; out: Tensor; graph: Graph } {
  const ctx = new Context({ memSize: 4 << 20, noAlloc: true });
  const x = ctx.newTensor2d(Type.F32, n, n).setName("x").setInput();
  let t: Tensor = x;
  for (let i = 0; i < steps; i++) t = ctx.mulMat(w, t);
  const out = t.setOutput();
  const graph = ctx.newGraphCustom(4 * steps + 16).buildForwardExpand(out);
  return { ctx, x, out, graph };
}

const g = heavy(400);
sched.allocGraph(g.graph);
tensorSet(g.x, new Float32Array(n * n).fill(2));
say(`alive on ${device.name} [${device.typeName}], ${sched.backends.length} backend(s)`);

async function abortOnce(compute: (signal: AbortSignal) => Promise<void>, read: () => number): Promise<void> {
  const ac = new AbortController();
  const reason = new Error("stop");
  const p = compute(ac.signal);
  setTimeout(() => ac.abort(reason), 20);
  try {
    await p;
    say("finished without the abort (not expected)");
  } catch (e) {
    say(e === reason ? "rejected with the reason" : `rejected with something else: ${e}`);
  }
  await compute(new AbortController().signal);
  say(`computed again: ${read().toFixed(4)}`);
}

switch (mode) {
  case "abort":
    await abortOnce((signal) => sched.graphComputeAsync(g.graph, { signal }), () => (tensorGet(g.out) as Float32Array)[0]);
    break;
  case "abort-direct": {
    const d = heavy(400);
    using ga = new Gallocr(backend.defaultBufferType);
    ga.allocGraph(d.graph);
    tensorSet(d.x, new Float32Array(n * n).fill(2));
    await abortOnce((signal) => backend.graphComputeAsync(d.graph, { signal }), () => (tensorGet(d.out) as Float32Array)[0]);
    break;
  }
  case "exit-async": {
    const p = sched.graphComputeAsync(g.graph);
    say("computing");
    setTimeout(() => {
      say("exit");
      process.exit(7);
    }, 20);
    await p;
    say("finished before the exit");
    process.exit(7);
    break;
  }
  case "alive-exit":
    say("exit");
    process.exit(3);
    break;
  case "alive-end":
    say("end");
    break;
  default:
    throw new Error(`unknown mode ${mode}`);
}
void wbuf;
