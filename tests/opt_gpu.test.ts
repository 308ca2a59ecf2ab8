// ggml-opt (OptContext) over a scheduler with a GPU first and the CPU behind it, in child processes
// (tests/opt_gpu_child.ts) with Mesa's lavapipe made visible where this process has no GPU device:
//  - cross-entropy: ggml-opt keeps the loss in a buffer of the first backend, and ggml-vulkan has no
//    CROSS_ENTROPY_LOSS kernel: ggml aborted ("pre-allocated tensor (loss_cross_entropy) in a buffer
//    (Vulkan0) that cannot run the operation"); OptContext now moves that tensor to a CPU buffer;
//  - several epochs: OptContext reset the scheduler after each epoch, and ggml then split ggml-opt's
//    already split graph copy again (NaN from the second step of the second epoch on a GPU + CPU split;
//    tests/devices.test.ts's demo training); and with another graph computed on the scheduler between
//    them, ggml-opt computed that graph's splits instead of its own (no training, on the CPU too). Now
//    its graph stays allocated, and is allocated anew when the scheduler was used for something else.
// Each against the same training on the CPU alone: the losses within test-backend-ops' matmul limit.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { gpuPlan, VK_VISIBLE_ENV } from "./gpu_compare_child.ts";
import { nmse, TOL } from "./backend_ops_cases.ts";
import { describeChild, root, runChild, runtimeName } from "./reliability/lib.ts";

const plan = gpuPlan();
const skip = plan.where === "none" && plan.reason;
const env: Record<string, string> = plan.where === "child" ? { [VK_VISIBLE_ENV]: "0" } : {};
const CRASH = /WSP_GGML_ASSERT|GGML_ABORT|pre-allocated tensor|Aborted|Segmentation fault|core dumped|SIGSEGV|SIGABRT/;

interface Run {
  losses: number[];
  accuracies: (number | null)[];
  weights: Record<string, number[]>;
}
interface Report {
  devices: string[];
  device?: string;
  cpu?: Run;
  gpu?: Run;
  plain?: Run;
}

function child(mode: string): Report | null {
  const r = runChild(join(root, "tests", "opt_gpu_child.ts"), { argv: [mode], env, timeoutMs: 590_000 });
  assert.equal(r.timedOut, false, `hung\n${describeChild(r)}`);
  assert.equal(r.signal, null, describeChild(r));
  assert.doesNotMatch(r.stderr, CRASH, describeChild(r));
  assert.equal(r.status, 0, describeChild(r));
  const line = r.stdout.split("\n").find((l) => l.startsWith("opt-gpu "));
  assert.ok(line, describeChild(r));
  const rep = JSON.parse(line.slice("opt-gpu ".length)) as Report;
  if (rep.devices.length === 0) {
    console.log("skipped: no GPU device in the child either");
    return null;
  }
  return rep;
}

const maxWeightNmse = (a: Run, b: Run) => Math.max(...Object.keys(a.weights).map((k) => nmse(Float64Array.from(a.weights[k]), Float64Array.from(b.weights[k]))));

describe(`OptContext on a GPU-first scheduler (${runtimeName}${plan.where === "child" ? `, in a child with ${VK_VISIBLE_ENV}=0` : ""})`, () => {
  test("cross-entropy: trains (no ggml abort), 3 epochs' losses as on the CPU", { skip }, () => {
    const r = child("ce");
    if (!r) return;
    const { cpu, gpu } = r as Required<Report>;
    const lossErr = nmse(Float64Array.from(cpu.losses), Float64Array.from(gpu.losses)), wErr = maxWeightNmse(cpu, gpu);
    console.log(`cross-entropy, 3 epochs on ${r.device} vs CPU: losses ${JSON.stringify(gpu.losses)} (nMSE ${lossErr.toExponential(2)}), accuracies ${JSON.stringify(gpu.accuracies)} vs ${JSON.stringify(cpu.accuracies)}, largest weight nMSE ${wErr.toExponential(2)}`);
    assert.ok(gpu.losses.every(Number.isFinite), JSON.stringify(gpu.losses));
    assert.ok(lossErr <= TOL.matmul, `loss nMSE ${lossErr}`);
    for (let e = 0; e < cpu.accuracies.length; e++) assert.ok(Math.abs(cpu.accuracies[e]! - gpu.accuracies[e]!) <= 0.03, JSON.stringify([cpu.accuracies, gpu.accuracies]));
    // AdamW divides each step by the gradient's running magnitude: a parameter whose gradient is ~0 (a relu
    // unit at the edge) takes full-size steps of either sign from rounding noise, so the weights drift apart
    // more than the losses do (5.7e-3 on lavapipe after 24 steps; 2.6e-5 with the mean squared error).
    assert.ok(wErr <= 2e-2, `weights nMSE ${wErr}`);
  });

  test("epochs with another graph computed on the scheduler between them: losses as on the CPU", { skip }, () => {
    const r = child("resched");
    if (!r) return;
    const { cpu, gpu, plain } = r as Required<Report>;
    // The other graph changes nothing in the training (before, ggml-opt computed that graph's splits instead of its
    // own after it: the losses stopped moving, on the CPU as on the GPU).
    assert.deepEqual(cpu.losses, plain.losses, "CPU: the same losses with and without the other graph between the epochs");
    assert.deepEqual(cpu.weights, plain.weights, "CPU: the same weights with and without the other graph between the epochs");
    const lossErr = nmse(Float64Array.from(cpu.losses), Float64Array.from(gpu.losses)), wErr = maxWeightNmse(cpu, gpu);
    console.log(`mean squared error, 3 epochs on ${r.device} vs CPU, a matmul computed between them: losses ${JSON.stringify(gpu.losses)} (nMSE ${lossErr.toExponential(2)}), largest weight nMSE ${wErr.toExponential(2)}`);
    assert.ok(gpu.losses.every(Number.isFinite), JSON.stringify(gpu.losses));
    assert.ok(lossErr <= TOL.matmul && wErr <= TOL.matmul, JSON.stringify({ lossErr, wErr }));
  });
});
