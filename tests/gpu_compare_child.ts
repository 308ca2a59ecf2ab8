// The GPU comparisons of tests/backend_ops.test.ts and tests/devices.test.ts, as a program: run in a
// child process whose environment makes a GPU device appear (WSP_GGML_VK_VISIBLE_DEVICES=0 lets
// ggml-vulkan take Mesa's lavapipe, a CPU-type Vulkan device it skips by default), when the test's own
// process has none. Prints one `gpu-report {json}` line. Run as `gpu_compare_child.ts --gpu-compare MODE`:
//
//   ops    the op table (tests/backend_ops_cases.ts), CPU vs each GPU device
//   demo   the demo's training (2 epochs) on the CPU and on the first GPU device: losses, weights
//   llm    the LLM runner's logits of a prompt on the CPU and on the first GPU device (argv[4]: the model file)
import process from "node:process";
import { allocCtxTensors, Backend, Context, devices, readGguf, Sched, tensorGet, tensorSet, Type } from "../src/mod.ts";
import { GemmaModel } from "../src/llm/model.ts";
import { spirals } from "../examples/demo/data.ts";
import { train } from "../examples/demo/train.ts";
import { library } from "../src/runtime/loader.ts";
import { describeChild, root, runChild } from "./reliability/lib.ts";
import { join } from "node:path";
import { allCases, type CaseResult, compareCases, directSide, nmse } from "./backend_ops_cases.ts";

const mode = process.argv[2] === "--gpu-compare" ? process.argv[3] : undefined;
const gpus = devices().filter((d) => d.isGpu);
const report = (r: unknown) => console.log(`gpu-report ${JSON.stringify(r)}`);

/** ggml-vulkan's list of the devices it takes (by default it skips CPU-type ones such as lavapipe). */
export const VK_VISIBLE_ENV = "WSP_GGML_VK_VISIBLE_DEVICES";

/**
 * Where the GPU comparisons run: here (this process has a GPU device); in a child process with
 * `WSP_GGML_VK_VISIBLE_DEVICES=0` (the Vulkan library is there but registered no device, and the
 * variable is unset); or nowhere, with the reason.
 */
export function gpuPlan(): { where: "here" } | { where: "child" } | { where: "none"; reason: string } {
  if (gpus.length > 0) return { where: "here" };
  const vulkan = (library() as { vulkan?: { path: string | null; skipped: string | null } }).vulkan;
  if (!vulkan?.path) return { where: "none", reason: `no GPU device registered, and no Vulkan backend library${vulkan?.skipped ? ` (${vulkan.skipped})` : ""}` };
  if (process.env[VK_VISIBLE_ENV] !== undefined) return { where: "none", reason: `no GPU device registered (${VK_VISIBLE_ENV}=${process.env[VK_VISIBLE_ENV]}; Vulkan: ${vulkan.skipped ?? "registered"})` };
  return { where: "child" };
}

/** Runs this program in a child with lavapipe made visible; its report (throws when the child failed). */
export function runGpuChild<T>(mode: string, extra: string[] = []): { report: T & { devices: string[] }; text: string } {
  const r = runGpuChildRaw(mode, extra);
  const line = r.stdout.split("\n").find((l) => l.startsWith("gpu-report "));
  if (r.status !== 0 || r.signal !== null || line === undefined) throw new Error(`the GPU child (${mode}) failed\n${describeChild(r)}`);
  return { report: JSON.parse(line.slice("gpu-report ".length)), text: describeChild(r) };
}

/** Runs this program in a child with lavapipe made visible: its exit and output, whatever they are. */
export function runGpuChildRaw(mode: string, extra: string[] = [], env: Record<string, string> = {}): ReturnType<typeof runChild> {
  return runChild(join(root, "tests", "gpu_compare_child.ts"), { argv: ["--gpu-compare", mode, ...extra], env: { [VK_VISIBLE_ENV]: "0", ...env }, timeoutMs: 590_000 });
}

/** The `gpu-case` lines of an `ops` child: every case result it printed, by device. */
export function streamedCases(stdout: string): Map<string, CaseResult[]> {
  const out = new Map<string, CaseResult[]>();
  for (const l of stdout.split("\n")) {
    if (!l.startsWith("gpu-case ")) continue;
    const { device, ...r } = JSON.parse(l.slice("gpu-case ".length));
    out.set(device, [...out.get(device) ?? [], { ...r, err: Number(r.err) }]);
  }
  return out;
}

/** The positions a list such as "1-54,160,170-183" names. */
function positions(list: string): Set<number> {
  const out = new Set<number>();
  for (const part of list.split(",")) {
    const [a, b = a] = part.split("-").map(Number);
    for (let i = a; i <= b; i++) out.add(i);
  }
  return out;
}

/** The op table, CPU (2 threads) vs each GPU device. */
export function compareOps(): { device: string; description: string; results: CaseResult[] }[] {
  return gpus.map((dev) => {
    using ref = Backend.cpu({ nThreads: 2 });
    using gpu = dev.init();
    // WSP_GGML_OPS_FILTER: a regular expression the case names must match (to look into one case).
    const filter = process.env.WSP_GGML_OPS_FILTER ? new RegExp(process.env.WSP_GGML_OPS_FILTER) : null;
    // WSP_GGML_OPS_ONLY: 1-based positions in the table, as a list of numbers and ranges ("1-54,160-183").
    const only = process.env.WSP_GGML_OPS_ONLY ? positions(process.env.WSP_GGML_OPS_ONLY) : null;
    const cases = allCases().filter((c, i) => (!filter || filter.test(c.name)) && (!only || only.has(i + 1)));
    return { device: dev.name, description: dev.description, results: compareCases(cases, directSide("CPU", ref), directSide(dev.name, gpu), {
      // Each result as it comes, so that the parent keeps them if the process dies later.
      onResult: (r) => console.log(`gpu-case ${JSON.stringify({ device: dev.name, ...r, err: Number.isFinite(r.err) ? r.err : String(r.err) })}`),
    }) };
  });
}

/**
 * The demo's training on `device`: per-epoch losses and the final weights. With the mean squared
 * error: ggml-opt computes the loss on the first backend, and ggml-vulkan has no cross-entropy kernel.
 */
export function demoTraining(device: string, epochs: number, loss: "mse" | "cross-entropy" = "mse"): { device: string; fallback: string | null; losses: number[]; weights: Record<string, number[]> } {
  const data = spirals({ seed: 3 });
  const hp = { inputs: 2, hidden: 32, layers: 2, classes: data.classes };
  const t = train({ hp, data: data.train, epochs, batch: 32, lr: 0.005, threads: 2, seed: 3, device, loss });
  try {
    const weights: Record<string, number[]> = {};
    for (const [k, v] of t.weights) weights[k] = Array.from(tensorGet(v) as Float32Array);
    return { device: t.device, fallback: t.fallback, losses: t.history.map((h) => h.loss), weights };
  } finally {
    t.free();
  }
}

/** The demo's training on the CPU and on `device`: one epoch compared, and two (losses only). */
export function demoReport(device: string): { device: string; one: { loss: number | null; weights: number | null }; two: { cpu: number[]; gpu: (number | null)[] } } {
  const c1 = demoTraining("cpu", 1), g1 = demoTraining(device, 1), c2 = demoTraining("cpu", 2), g2 = demoTraining(device, 2);
  const finite = (x: number) => (Number.isFinite(x) ? x : null);
  const one = compareTraining(c1, g1);
  return { device: g1.device, one: { loss: finite(one.loss), weights: finite(one.weights) }, two: { cpu: c2.losses, gpu: g2.losses.map(finite) } };
}

/** nMSE of two trainings' losses, and the largest of their weights'. */
export function compareTraining(a: ReturnType<typeof demoTraining>, b: ReturnType<typeof demoTraining>): { loss: number; weights: number } {
  const loss = nmse(Float64Array.from(a.losses), Float64Array.from(b.losses));
  const weights = Math.max(...Object.keys(a.weights).map((k) => nmse(Float64Array.from(a.weights[k]), Float64Array.from(b.weights[k]))));
  return { loss, weights };
}

/**
 * A graph split between the GPU and the CPU (out_prod on the CPU, which ggml-vulkan lacks; mul_mat of
 * its result on the GPU through the scheduler's copy), computed, reset and computed again, reserved and
 * computed again: the three results are equal and the graph's sources stay readable from JS.
 */
export function resplit(device: string): { same: boolean; sources: number; first: number[] } {
  const dev = devices().find((d) => d.name === device)!;
  using gpu = dev.init();
  using cpu = Backend.cpu({ nThreads: 2 });
  using sched = new Sched({ backends: [gpu, cpu] });
  using w = new Context({ memSize: 1 << 20, noAlloc: true });
  const a = w.newTensor2d(Type.F32, 16, 8), b = w.newTensor2d(Type.F32, 12, 8);
  using buf = allocCtxTensors(w, gpu)!;
  tensorSet(a, Float32Array.from({ length: 128 }, (_, i) => Math.sin(i)));
  tensorSet(b, Float32Array.from({ length: 96 }, (_, i) => Math.cos(i)));
  using c = new Context({ memSize: 1 << 20, noAlloc: true });
  const op = c.outProd(a, b);
  const y = c.mulMat(op, c.scale(op, 2)).setOutput();
  const g = c.newGraph().buildForwardExpand(y);
  const run = () => Array.from(tensorGet(sched.graphCompute(g) && y) as Float32Array);
  const r1 = run();
  sched.reset();
  const r2 = run();
  sched.reset().reserve(g);
  const r3 = run();
  void buf;
  return { same: r1.every((v, i) => v === r2[i] && v === r3[i]), sources: g.nodes().reduce((n, t) => n + t.src.length, 0), first: r1.slice(0, 3) };
}

/** The arg-max of each row of `nVocab`-wide logits. */
export function argmaxes(logits: Float64Array, rows = PROMPT.length): number[] {
  const n = logits.length / rows;
  return Array.from({ length: rows }, (_, r) => {
    let best = 0;
    for (let i = 1; i < n; i++) if (logits[r * n + i] > logits[r * n + best]) best = i;
    return best;
  });
}

/** A prompt of Gemma 3 token ids (BOS, then text). */
export const PROMPT = [2, 818, 5279, 529, 7001, 563, 5213, 15578, 236761];

/** The LLM runner's logits of every position of {@linkcode PROMPT} on `device`. */
export function llmLogits(path: string, device: string, dequantize = false): { device: string; backends: string[]; logits: Float64Array } {
  using model = GemmaModel.fromGguf(readGguf(path), { device, nCtx: 256, threads: 2, dequantize });
  return { device: model.backend.device.name, backends: model.backends.map((b) => b.name), logits: Float64Array.from(model.forward(PROMPT, { allLogits: true })) };
}

if (mode !== undefined) {
  const devs = gpus.map((d) => d.name);
  if (mode === "ops") report({ devices: devs, runs: compareOps() });
  else if (mode === "demo") {
    if (gpus.length === 0) report({ devices: devs });
    else {
      report({ devices: devs, ...demoReport(gpus[0].name) });
    }
  } else if (mode === "llm") {
    if (gpus.length === 0) report({ devices: devs });
    else {
      const f32 = process.argv[5] === "f32";
      const cpu = llmLogits(process.argv[4], "cpu", f32), gpu = llmLogits(process.argv[4], gpus[0].name, f32);
      report({ devices: devs, device: gpu.device, backends: gpu.backends, positions: PROMPT.length, weights: f32 ? "f32" : "file", nmse: nmse(cpu.logits, gpu.logits), argmaxEqual: argmaxes(cpu.logits).every((v, i) => v === argmaxes(gpu.logits)[i]) });
    }
  } else if (mode === "resplit") report({ devices: devs, ...(gpus.length ? resplit(gpus[0].name) : {}) });
  else throw new Error(`unknown mode ${mode}`);
}
