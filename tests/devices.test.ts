// Devices and the choice of one: every registered device as plain data (name, description, type,
// backend, memory, caps); the "auto" choice (a GPU when there is one, else the CPU) as a pure function
// over device lists, so that the GPU cases run on a machine without one; WSP_GGML_DEVICE and its
// precedence; Backend.best. On the best device: the demo's training and the LLM runner's logits equal
// the CPU's within test-backend-ops' limits (skipped with the reason when there is no GPU device); an
// asynchronous compute aborted, and a process ended, with live device objects (child processes,
// tests/devices_child.ts): no signal, no ggml assert, the expected exit code.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import process from "node:process";
import {
  ArgumentError,
  Backend,
  BackendDevType,
  bestDevice,
  DEVICE_ENV,
  deviceByName,
  devices,
  deviceTypeName,
  readGguf,
} from "../src/mod.ts";
import { pickDevice } from "../src/backend/backend.ts";
import { GemmaModel } from "../src/llm/model.ts";
import { argmaxes, demoReport, gpuPlan, llmLogits, PROMPT, resplit, runGpuChild, VK_VISIBLE_ENV } from "./gpu_compare_child.ts";
import { nmse, TOL } from "./backend_ops_cases.ts";
import { gemmaModel } from "./llm_model.ts";
import { describeChild, root, runChild, runtimeName } from "./reliability/lib.ts";

const gpus = devices().filter((d) => d.isGpu);

/** Runs `f` with WSP_GGML_DEVICE set to `value` (or unset), then restores it. */
function withEnv<T>(value: string | undefined, f: () => T): T {
  const before = process.env[DEVICE_ENV];
  if (value === undefined) delete process.env[DEVICE_ENV];
  else process.env[DEVICE_ENV] = value;
  try {
    return f();
  } finally {
    if (before === undefined) delete process.env[DEVICE_ENV];
    else process.env[DEVICE_ENV] = before;
  }
}

describe("devices", () => {
  test("every device as plain data: name, description, type, backend, memory, caps", () => {
    const list = devices();
    assert.ok(list.length >= 1);
    for (const d of list) {
      const i = d.info(), p = d.props();
      assert.equal(i.name, d.name);
      assert.equal(i.name, p.name);
      assert.equal(i.description, p.description);
      assert.equal(i.type, deviceTypeName(p.type));
      assert.equal(i.type, d.typeName);
      assert.ok(["cpu", "gpu", "igpu", "accel"].includes(i.type));
      assert.equal(i.backend, d.reg.name);
      assert.ok(i.memory.total >= 0 && i.memory.free >= 0 && i.memory.free <= i.memory.total, JSON.stringify(i.memory));
      for (const k of ["async", "hostBuffer", "bufferFromHostPtr", "events"] as const) assert.equal(typeof i.caps[k], "boolean");
      assert.equal(d.isGpu, i.type === "gpu" || i.type === "igpu");
      assert.deepEqual(JSON.parse(JSON.stringify(i)), i, "JSON round trip");
    }
    const cpu = list.find((d) => d.typeName === "cpu")!;
    assert.equal(cpu.info().backend, "CPU");
    assert.ok(cpu.info().memory.total > 0);
    console.log(`devices: ${list.map((d) => `${d.name} [${d.typeName}] ${d.description}`).join("; ")}`);
  });

  test("deviceTypeName", () => {
    assert.deepEqual([BackendDevType.CPU, BackendDevType.GPU, BackendDevType.IGPU, BackendDevType.ACCEL].map(deviceTypeName), ["cpu", "gpu", "igpu", "accel"]);
    assert.throws(() => deviceTypeName(9 as BackendDevType), ArgumentError);
  });

  test("the choice over device lists: a GPU first, then an integrated one, then the CPU; never an accelerator", () => {
    const CPU = { name: "CPU", type: BackendDevType.CPU }, BLAS = { name: "BLAS", type: BackendDevType.ACCEL };
    const VK0 = { name: "Vulkan0", type: BackendDevType.GPU }, VK1 = { name: "Vulkan1", type: BackendDevType.GPU };
    const IGPU = { name: "Vulkan2", type: BackendDevType.IGPU };
    assert.equal(pickDevice([CPU], "auto"), 0);
    assert.equal(pickDevice([CPU, BLAS], "auto"), 0);
    assert.equal(pickDevice([CPU, VK0], "auto"), 1);
    assert.equal(pickDevice([IGPU, CPU, VK0, VK1], "auto"), 2, "a discrete GPU before an integrated one, the first of ggml's order");
    assert.equal(pickDevice([CPU, IGPU], "auto"), 1);
    assert.equal(pickDevice([CPU, IGPU], "gpu"), 1);
    assert.equal(pickDevice([VK0, CPU], "cpu"), 1);
    assert.equal(pickDevice([CPU, VK0, VK1], "vulkan1"), 2, "names are case-insensitive");
    assert.equal(pickDevice([CPU, VK0], " AUTO "), 1);
    assert.equal(pickDevice([CPU, BLAS], "blas"), 1, "an accelerator only by name");
    assert.throws(() => pickDevice([CPU, BLAS], "gpu"), (e: Error) => e instanceof ArgumentError && /no GPU device \(have: CPU \(cpu\), BLAS \(accel\)\)/.test(e.message));
    assert.throws(() => pickDevice([CPU], "Metal"), (e: Error) => e instanceof ArgumentError && /no device called "Metal"/.test(e.message));
    assert.throws(() => pickDevice([VK0], "cpu"), ArgumentError);
  });

  test("bestDevice: the default, WSP_GGML_DEVICE, and an explicit choice winning over it", () => {
    const want = gpus[0] ?? deviceByName("CPU")!;
    withEnv(undefined, () => {
      assert.equal(bestDevice().pointer, want.pointer);
      assert.equal(bestDevice({ device: "auto" }).pointer, want.pointer);
      assert.equal(bestDevice({ device: "cpu" }).typeName, "cpu");
      assert.equal(bestDevice({ device: "CPU" }).typeName, "cpu");
      assert.equal(bestDevice({ device: want }).pointer, want.pointer);
      if (gpus.length === 0) assert.throws(() => bestDevice({ device: "gpu" }), /no GPU device/);
      else assert.ok(bestDevice({ device: "gpu" }).isGpu);
      assert.throws(() => bestDevice({ device: "no-such-device" }), /no device called "no-such-device" \(have: .*CPU \(cpu\)/);
      assert.throws(() => bestDevice({ device: 3 as unknown as string }), ArgumentError);
    });
    withEnv("cpu", () => {
      assert.equal(bestDevice().typeName, "cpu");
      assert.equal(bestDevice({ device: want }).pointer, want.pointer);
      assert.equal(bestDevice({ env: false }).pointer, want.pointer, "env: false ignores the variable");
    });
    withEnv("no-such-device", () => {
      assert.throws(() => bestDevice(), /no device called "no-such-device"/);
      assert.equal(bestDevice({ device: "cpu" }).typeName, "cpu", "an explicit choice wins over the variable");
    });
    withEnv("  ", () => assert.equal(bestDevice().pointer, want.pointer, "a blank variable is unset"));
    if (gpus.length > 0) withEnv(gpus[0].name.toUpperCase(), () => assert.equal(bestDevice().pointer, gpus[0].pointer));
  });

  test("Backend.best: a backend on the chosen device; a CPU one gets the threads", () => {
    withEnv(undefined, () => {
      using b = Backend.best({ nThreads: 3 });
      assert.equal(b.device.pointer, (gpus[0] ?? deviceByName("CPU")!).pointer);
      using c = Backend.best({ device: "cpu", nThreads: 1 });
      assert.ok(c.isCpu);
      assert.throws(() => Backend.best({ device: "cpu", nThreads: 0 }), ArgumentError);
      assert.throws(() => Backend.best({ device: "nope" }), ArgumentError);
    });
  });
});

describe("on the best device, as on the CPU", () => {
  const plan = gpuPlan();
  const skip = plan.where === "none" && plan.reason;
  const inChild = plan.where === "child" ? ` (in a child with ${VK_VISIBLE_ENV}=0)` : "";

  test(`the demo's training: losses and weights${inChild}`, { skip }, () => {
    type R = { devices: string[] } & Partial<ReturnType<typeof demoReport>>;
    const r: R = plan.where === "here" ? { devices: gpus.map((d) => d.name), ...demoReport(gpus[0].name) } : runGpuChild<R>("demo").report;
    if (r.devices.length === 0) return void console.log("skipped: no GPU device in the child either");
    const { one, two } = r as Required<R>;
    console.log(`demo training (mean squared error), 1 epoch on ${r.device} vs CPU: loss nMSE ${one.loss}, largest weight nMSE ${one.weights}`);
    assert.equal(r.device, r.devices[0]);
    assert.ok(one.loss !== null && one.weights !== null && one.loss <= TOL.matmul && one.weights <= TOL.matmul, JSON.stringify(r));
    // Two epochs: the second computes ggml-opt's graph as allocated by the first (it went NaN when the scheduler
    // was reset between epochs and ggml split the already split graph copy again; tests/opt_gpu.test.ts).
    assert.ok(two.gpu.every((x) => x !== null), `2 epochs on ${r.device}: losses ${JSON.stringify(two.gpu)} against the CPU's ${JSON.stringify(two.cpu)}`);
    const twoErr = nmse(Float64Array.from(two.cpu), Float64Array.from(two.gpu as number[]));
    console.log(`demo training, 2 epochs on ${r.device} vs CPU: loss nMSE ${twoErr}`);
    assert.ok(twoErr <= TOL.matmul, JSON.stringify(two));
  });

  test(`the LLM runner's logits${inChild}`, { skip }, async () => {
    const m = await gemmaModel();
    if (m.skip) return void console.log(`skipped: ${m.skip}`);
    type R = { devices: string[]; device?: string; backends?: string[]; positions?: number; nmse?: number; argmaxEqual?: boolean };
    const run = (f32: boolean): R => {
      if (plan.where !== "here") return runGpuChild<R>("llm", [m.path, f32 ? "f32" : "file"]).report;
      const cpu = llmLogits(m.path, "cpu", f32), gpu = llmLogits(m.path, gpus[0].name, f32);
      assert.equal(cpu.backends.length, 1);
      const a = argmaxes(cpu.logits), b = argmaxes(gpu.logits);
      return { devices: gpus.map((d) => d.name), device: gpu.device, backends: gpu.backends, positions: PROMPT.length, nmse: nmse(cpu.logits, gpu.logits), argmaxEqual: a.every((v, i) => v === b[i]) };
    };
    const f32 = run(true);
    if (f32.devices.length === 0) return void console.log("skipped: no GPU device in the child either");
    const file = run(false);
    console.log(`LLM logits of ${f32.positions} positions on ${f32.device} (backends ${f32.backends!.join(", ")}) vs CPU: nMSE ${f32.nmse!.toExponential(2)} with f32 weights, ${file.nmse!.toExponential(2)} with the file's Q4_K_M (arg-max equal: ${file.argmaxEqual})`);
    assert.equal(f32.backends!.length, 2, "the GPU first, the CPU as the fallback");
    // test-backend-ops' matmul limit, with the weights in f32 (the reference-accuracy mode).
    assert.ok(f32.nmse! <= TOL.matmul && f32.argmaxEqual, JSON.stringify(f32));
    // The quantized weights: the two backends round the activations differently (the CPU to q8_K for its K-quant dots);
    // over 18 layers that is ~1.5e-3 (the KV-cache test's limit for two CPU paths is 2e-3). The arg-max must agree.
    assert.ok(file.nmse! <= 5e-3 && file.argmaxEqual, JSON.stringify(file));
  });

  test(`a graph split between the GPU and the CPU computes alike after a reset and a reserve${inChild}`, { skip }, () => {
    type R = { devices: string[] } & Partial<ReturnType<typeof resplit>>;
    const r: R = plan.where === "here" ? { devices: gpus.map((d) => d.name), ...resplit(gpus[0].name) } : runGpuChild<R>("resplit").report;
    if (r.devices.length === 0) return void console.log("skipped: no GPU device in the child either");
    assert.equal(r.same, true, JSON.stringify(r));
    assert.equal(r.sources, 2 + 1 + 2, "out_prod(a, b), scale(op), mul_mat(op, scaled): the sources as built");
  });

  test("the LLM runner defaults to the best device, with the CPU as the scheduler's fallback", async () => {
    const m = await gemmaModel();
    if (m.skip) return void console.log(`skipped: ${m.skip}`);
    withEnv(undefined, () => {
      using model = GemmaModel.fromGguf(readGguf(m.path), { nCtx: 64 });
      assert.equal(model.backend.device.pointer, (gpus[0] ?? deviceByName("CPU")!).pointer);
      assert.equal(model.backends.length, gpus.length > 0 ? 2 : 1);
      assert.ok(model.backends.at(-1)!.isCpu);
      const out = model.forward([2, 818]);
      assert.equal(out.length, model.hparams.nVocab);
      assert.ok(out.every(Number.isFinite));
    });
  });
});

describe("live device objects", () => {
  const child = join(root, "tests", "devices_child.ts");
  const CRASH = /WSP_GGML_ASSERT|GGML_ABORT|Aborted|Segmentation fault|core dumped|panicked|SIGSEGV|SIGABRT|Illegal instruction/;
  const cases: [string, number, string][] = [
    ["abort", 0, "computed again: 2"],
    ["abort-direct", 0, "computed again: 2"],
    ["exit-async", 7, "exit"],
    ["alive-exit", 3, "exit"],
    ["alive-end", 0, "end"],
  ];
  // The best device of this process; and Vulkan's lavapipe too where only WSP_GGML_VK_VISIBLE_DEVICES=0 makes it appear.
  const envs: [string, Record<string, string>][] = [["", {}]];
  if (gpuPlan().where === "child") envs.push([` (${VK_VISIBLE_ENV}=0)`, { [VK_VISIBLE_ENV]: "0" }]);
  for (const [label, env] of envs) for (const [mode, code, last] of cases) {
    test(`on ${runtimeName}${label}, ${mode}: exit ${code}, no signal, no assert`, () => {
      const r = runChild(child, { argv: [mode], env, timeoutMs: 120_000 });
      assert.equal(r.timedOut, false, `hung\n${describeChild(r)}`);
      assert.equal(r.signal, null, describeChild(r));
      assert.equal(r.status, code, describeChild(r));
      assert.doesNotMatch(r.stderr, CRASH, describeChild(r));
      const said = r.stdout.split("\n").filter((l) => l.startsWith("devices: "));
      assert.match(said[0] ?? "", label ? /^devices: alive on \S+ \[(gpu|igpu)\], 2 backend\(s\)$/ : /^devices: alive on /, describeChild(r));
      if (mode.startsWith("abort")) assert.ok(said.includes("devices: rejected with the reason"), describeChild(r));
      // A chain of 400 matmuls by a matrix of 1/n keeps 2 (a GPU's f16 accumulation drifts a little: 1.9995 on lavapipe).
      const again = /^devices: computed again: ([\d.]+)$/.exec(said.at(-1) ?? "");
      if (last === "computed again: 2") assert.ok(again && Math.abs(Number(again[1]) - 2) < 0.01, describeChild(r));
      else assert.equal(said.at(-1), `devices: ${last}`, describeChild(r));
    });
  }
});
