// Mistakes that ggml-vulkan answers with an abort (or a crash, or silence), refused by the API
// first (src/backend/vulkan_checks.ts; docs/asserts.map.d/vulkan.json maps each assert): a graph
// whose tensors are not in the Vulkan backend's buffers, and nodes that ggml-vulkan's supports_op
// accepts but its kernels do not (a bf16 or quantized b of mul_mat, an f16 b of mul_mat_id, an
// i64 copy, an f16 scale or rms_norm, a quantized im2col kernel, a view at an offset the device's
// storage alignment does not divide, more than 2^32 - 1 elements, a temporary of a matrix product
// over the device's largest allocation, forced small here). Like tests/vulkan_smoke.test.ts,
// the cases run in a child process with WSP_GGML_VK_VISIBLE_DEVICES=0 (Mesa's lavapipe, which
// ggml-vulkan skips unless named), which then checks that it is alive and computes; skipped where
// the build has no Vulkan library or the machine no Vulkan loader or device.
//
// With WSP_GGML_VK_MISUSE_RAW=<case> the program builds that case and hands it to ggml-vulkan
// directly (wsp_ggml_backend_graph_compute, no check): how each case ends without the API.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { fileURLToPath } from "node:url";
import {
  allocCtxTensors, Backend, BackendBufferUsage, type BufferType, BackendDevType, Context, cpuBufferType, devices, Gallocr, type Graph, loadLibrary, quantize, Sched, tensorGet, tensorSet, Type,
} from "../mod.ts";
import { runtime } from "../src/runtime/runtime.ts";
import { probeVulkan } from "../src/runtime/loader.ts";
import { vulkanMaxAllocation, vulkanRefusal } from "../src/backend/vulkan_checks.ts";
import { runTsResult } from "./run.ts";

const CHILD_ENV = "WSP_GGML_VK_MISUSE_CHILD";
const RAW_ENV = "WSP_GGML_VK_MISUSE_RAW";
/**
 * The children's device allocation limit (WSP_GGML_VK_FORCE_MAX_ALLOCATION_SIZE; 4 MiB, so that the
 * suballocation blocks, and with them every buffer, are 4 MiB at most too): the temporaries of the
 * prealloc cases exceed it, the tensors of every case fit in it.
 */
const LIMIT = 4 << 20;
const FORCE_ENV = { WSP_GGML_VK_FORCE_MAX_ALLOCATION_SIZE: String(LIMIT) };

/** A case: builds a graph for `vk` (allocating what it needs); the error class the API throws. */
interface Case {
  readonly name: string;
  readonly error: string;
  /** A part of the message. */
  readonly message: RegExp;
  /** The node `Backend.supportsOp` must now refuse, if the case is about a node's types or layout. */
  readonly unsupported?: boolean;
  /** What ggml-vulkan dies with when the case is handed to it directly (a RAW child is run and must die so). */
  readonly raw?: RegExp;
  readonly build: (vk: Backend, keep: { free(): void }[]) => { graph: Graph; node?: import("../mod.ts").Tensor };
}

/** A no_alloc context whose tensors `fill` creates, allocated in `vk`'s buffer; `ops` then builds the graph in a second one, allocated by a Gallocr. */
function onDevice(vk: Backend, keep: { free(): void }[], fill: (w: Context) => void, ops: (g: Context) => import("../mod.ts").Tensor) {
  const w = new Context({ memSize: 1 << 20, noAlloc: true });
  keep.push(w);
  fill(w);
  const buf = allocCtxTensors(w, vk);
  if (buf) keep.push(buf);
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  keep.push(g);
  const node = ops(g);
  const graph = g.newGraph().buildForwardExpand(node);
  const ga = new Gallocr(vk.defaultBufferType);
  keep.push(ga);
  ga.allocGraph(graph);
  return { graph, node };
}

/** `add(a, a)` with every tensor allocated in a buffer of `buft` (one the Vulkan backend cannot compute on). */
function inBufferCase(name: string, message: RegExp, buft: (vk: Backend) => BufferType): Case {
  return {
    name,
    error: "ArgumentError",
    message,
    build: (vk, keep) => {
      const w = new Context({ memSize: 1 << 20, noAlloc: true });
      keep.push(w);
      const a = w.newTensor1d(Type.F32, 4);
      const y = w.add(a, a);
      keep.push(allocCtxTensors(w, buft(vk))!);
      tensorSet(a, new Float32Array([1, 2, 3, 4]));
      return { graph: w.newGraph().buildForwardExpand(y) };
    },
  };
}

/** A node whose types ggml-vulkan's supports_op accepts and its kernels do not: operands of `shapes` in the device's buffer, `op` of them. */
function kernelCase(name: string, message: RegExp, shapes: [Type, number[]][], op: (g: Context, ts: import("../mod.ts").Tensor[]) => import("../mod.ts").Tensor): Case {
  return {
    name,
    error: "UnsupportedOpError",
    message,
    unsupported: true,
    build: (vk, keep) => {
      let ts: import("../mod.ts").Tensor[] = [];
      return onDevice(vk, keep, (w) => void (ts = shapes.map(([type, ne]) => w.newTensor(type, ne))), (g) => op(g, ts));
    },
  };
}

const CASES: readonly Case[] = [
  {
    name: "graph in a context's memory",
    error: "NotAllocatedError",
    message: /in a context's memory, not in a buffer of Vulkan0/,
    build: (_vk, keep) => {
      const ctx = new Context({ memSize: 1 << 20 });
      keep.push(ctx);
      const a = ctx.newTensor1d(Type.F32, 4).set(new Float32Array([1, 2, 3, 4]));
      return { graph: ctx.newGraph().buildForwardExpand(ctx.add(a, a)) };
    },
  },
  inBufferCase("tensors in a CPU buffer", /is in a CPU buffer, which Vulkan0 cannot compute on/, () => cpuBufferType()),
  inBufferCase("tensors in the Vulkan host buffer", /is in a Vulkan_Host buffer, which Vulkan0 cannot compute on/, (vk) => vk.device.hostBufferType!),
  {
    name: "softMax of a view at a misaligned offset",
    error: "UnsupportedOpError",
    message: /bytes past a multiple of the device's \d+-byte storage alignment/,
    build: (vk, keep) => {
      let a!: import("../mod.ts").Tensor;
      return onDevice(vk, keep, (w) => void (a = w.newTensor1d(Type.F32, 64)), (g) => g.softMax(g.view1d(a, 8, 4)));
    },
  },
  {
    name: "getRows of a view at a misaligned offset",
    error: "UnsupportedOpError",
    message: /storage alignment/,
    build: (vk, keep) => {
      let a!: import("../mod.ts").Tensor, ids!: import("../mod.ts").Tensor;
      return onDevice(vk, keep, (w) => {
        a = w.newTensor2d(Type.F32, 4, 8);
        ids = w.newTensor1d(Type.I32, 3);
      }, (g) => g.getRows(g.view2d(a, 4, 7, a.nb(1), 4), ids));
    },
  },
  kernelCase("mulMat with a bf16 b", /must be f32 or f16/, [[Type.F32, [32, 16]], [Type.BF16, [32, 16]]], (g, [a, b]) => g.mulMat(a, b)),
  kernelCase("mulMat with a q8_0 b", /must be f32 or f16/, [[Type.Q8_0, [32, 16]], [Type.Q8_0, [32, 16]]], (g, [a, b]) => g.mulMat(a, b)),
  kernelCase("mulMatId with an f16 b", /must be f32/, [[Type.F16, [32, 16, 4]], [Type.F16, [32, 2, 1]], [Type.I32, [2, 1]]], (g, [as, b, ids]) => g.mulMatId(as, b, ids)),
  kernelCase("cont of an i64 tensor", /no kernel for i64 → i64/, [[Type.I64, [16]]], (g, [a]) => g.cont(a)),
  kernelCase("scale of an f16 tensor", /no kernel for f16 → f16/, [[Type.F16, [16]]], (g, [a]) => g.scale(a, 2)),
  kernelCase("rmsNorm of an f16 tensor", /no kernel for f16 → f16/, [[Type.F16, [16]]], (g, [a]) => g.rmsNorm(a, 1e-6)),
  kernelCase("im2col with a quantized kernel", /is quantized/, [[Type.Q8_0, [32, 1, 1]], [Type.F32, [64, 1, 1]]], (g, [k, x]) => g.im2col(k, x, 1, 0, 0, 0, 1, 0, false, Type.F32)),
  // "Requested preallocation size is too large" (mul_mat_q_f16, mul_mat_id_q_f16): a temporary over the
  // device's max_memory_allocation_size (LIMIT here). A q8_0 a (2.2 MiB) times an f16 b has no kernel
  // without coopmat2: a is dequantized to f16 first, 4.25 MiB.
  preallocCase("mulMat of a q8_0 a whose f16 copy exceeds the allocation limit", /an f16 copy of a .* of up to 4456448 bytes/, [[Type.Q8_0, [2048, 1088]], [Type.F16, [2048, 16]]], (g, [a, b]) => g.mulMat(a, b)),
  // A strided b (576 KiB of f32, 2 columns in each of 288 batches) is copied to f16 with its columns
  // padded to the tile width (32 at least): 4.5 MiB or more.
  preallocCase("mulMat of a strided b whose f16 copy exceeds the allocation limit", /an f16 copy of b .* \(columns padded to the tile width\)/, [[Type.F16, [256, 64, 1]], [Type.F32, [256, 288, 2]]], (g, [a, b]) => g.mulMat(a, g.permute(b, 0, 2, 1, 3))),
  preallocCase("mulMatId of a strided b whose f16 copy exceeds the allocation limit", /an f16 copy of b .* \(columns padded to the tile width\)/, [[Type.F16, [256, 64, 4]], [Type.F32, [256, 288, 2]], [Type.I32, [2, 288]]], (g, [as, b, ids]) => g.mulMatId(as, g.permute(b, 0, 2, 1, 3), ids)),
];

/** A node whose temporary ggml-vulkan would allocate over the device's limit (in a child with the limit forced to LIMIT). */
function preallocCase(name: string, message: RegExp, shapes: [Type, number[]][], op: (g: Context, ts: import("../mod.ts").Tensor[]) => import("../mod.ts").Tensor): Case {
  const limit = new RegExp(`${message.source}.*more than the device's largest allocation of ${LIMIT} bytes`);
  return { ...kernelCase(name, limit, shapes, op), raw: /Requested preallocation size is too large/ };
}

/** Deterministic values in [-1, 1) that f16 holds exactly (multiples of 1/64). */
const values = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => (((i * 7919 + seed * 104729) % 128) - 64) / 64);

/** Normalised mean squared error `Σ(a−b)²/Σb²` (ggml's test-backend-ops measure). */
function nmse(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0, den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return num / den;
}

/**
 * The near miss: a q8_0 a whose f16 copy (3.75 MiB) is just under LIMIT, times an f16 b, on the
 * Vulkan device, and the same product on the CPU backend. Returns whether the device accepts it and the NMSE.
 */
function nearMiss(vk: Backend, cpu: Backend): { supportsOp: boolean; nmse: number } {
  const [k, m, n] = [2048, 960, 16];
  const aq = quantize(Type.Q8_0, values(k * m, 1), { nPerRow: k }), bv = values(k * n, 2);
  // The CPU kernels take an f32 b (the values are exact in f16 too); the device's f16 b is what sends a through its f16 copy.
  const run = (be: Backend, bType: Type) => {
    const keep: { free(): void }[] = [];
    try {
      let a!: import("../mod.ts").Tensor, b!: import("../mod.ts").Tensor;
      const { graph, node } = onDevice(be, keep, (w) => {
        a = w.newTensor2d(Type.Q8_0, k, m);
        b = w.newTensor2d(bType, k, n);
      }, (g) => g.mulMat(a, b));
      tensorSet(a, aq);
      tensorSet(b, bv);
      const supportsOp = be.supportsOp(node!);
      be.graphCompute(graph);
      return { supportsOp, out: Array.from(tensorGet(node!) as Float32Array) };
    } finally {
      for (const x of keep.reverse()) x.free();
    }
  };
  const got = run(vk, Type.F16), want = run(cpu, Type.F32);
  return { supportsOp: got.supportsOp, nmse: nmse(got.out, want.out) };
}

/** A weight `a` [32, 16] in a Vulkan WEIGHTS buffer (its consumers run on Vulkan), and `b` [32, 4] with data in the plain context `p`'s memory. */
function weightAndPoolTensor(vk: Backend, keep: { free(): void }[]) {
  const w = new Context({ memSize: 1 << 20, noAlloc: true });
  keep.push(w);
  const a = w.newTensor2d(Type.F32, 32, 16);
  const buf = allocCtxTensors(w, vk)!;
  keep.push(buf);
  buf.usage = BackendBufferUsage.WEIGHTS;
  tensorSet(a, Float32Array.from({ length: 512 }, (_, i) => i / 512));
  const p = new Context({ memSize: 1 << 20 });
  keep.push(p);
  const b = p.newTensor2d(Type.F32, 32, 4).set(new Float32Array(128).fill(1));
  return { a, b, p };
}

/**
 * The scheduler's side: it asks Backend.supportsOp (which includes vulkanRefusal, the offsets of
 * operands already in the device's buffers too) when a node is assigned to the Vulkan backend
 * (setTensorBackend) and of every node the split placed there. Each returns the error's class and message.
 */
const SCHED_CASES: readonly { name: string; error: string; message: RegExp; run: (vk: Backend, cpu: Backend, keep: { free(): void }[]) => void }[] = [
  {
    name: "Sched: setTensorBackend of a mulMat with a bf16 b",
    error: "UnsupportedOpError",
    message: /setTensorBackend: Vulkan0 does not run/,
    run: (vk, cpu, keep) => {
      const w = new Context({ memSize: 1 << 20, noAlloc: true });
      keep.push(w);
      const y = w.mulMat(w.newTensor2d(Type.F32, 32, 16), w.newTensor2d(Type.BF16, 32, 16));
      const sched = new Sched({ backends: [vk, cpu] });
      keep.push(sched);
      sched.setTensorBackend(y, vk);
    },
  },
  {
    name: "Sched: softMax of a misaligned view of a weight in a Vulkan buffer",
    error: "UnsupportedOpError",
    message: /placed on a backend that cannot run it: Vulkan0 does not support it/,
    run: (vk, cpu, keep) => {
      const w = new Context({ memSize: 1 << 20, noAlloc: true });
      keep.push(w);
      const a = w.newTensor1d(Type.F32, 64);
      const buf = allocCtxTensors(w, vk)!;
      keep.push(buf);
      buf.usage = BackendBufferUsage.WEIGHTS; // the scheduler runs the weight's consumers on its backend
      tensorSet(a, Float32Array.from({ length: 64 }, (_, i) => i / 64));
      const g = new Context({ memSize: 1 << 20, noAlloc: true });
      keep.push(g);
      const y = g.softMax(g.view1d(a, 8, 4));
      const sched = new Sched({ backends: [vk, cpu] });
      keep.push(sched);
      sched.graphCompute(g.newGraph().buildForwardExpand(y));
    },
  },
  {
    name: "Sched: a mulMat in a context's memory placed on Vulkan",
    error: "UnsupportedOpError",
    message: /placed on a backend that cannot run it: Vulkan0 does not support it/,
    run: (vk, cpu, keep) => {
      // the product lives in a plain context's memory: ggml-vulkan would skip it (zeros, no error)
      const { a, b, p } = weightAndPoolTensor(vk, keep);
      const sched = new Sched({ backends: [vk, cpu] });
      keep.push(sched);
      sched.graphCompute(p.newGraph().buildForwardExpand(p.mulMat(a, b)));
    },
  },
  {
    name: "Sched: a source in a context's memory read by a node on Vulkan",
    error: "UnsupportedOpError",
    message: /its source .* is in a context's own memory, which Vulkan0 cannot read/,
    run: (vk, cpu, keep) => {
      // b has data in a plain context's memory; ggml gives it its consumer's backend and copies nothing (SIGSEGV)
      const { a, b } = weightAndPoolTensor(vk, keep);
      const g = new Context({ memSize: 1 << 20, noAlloc: true });
      keep.push(g);
      const sched = new Sched({ backends: [vk, cpu] });
      keep.push(sched);
      sched.graphCompute(g.newGraph().buildForwardExpand(g.mulMat(a, b)));
    },
  },
];

/** The Vulkan device, or the reason there is none. */
function vulkanDevice(): import("../mod.ts").Device | string {
  const lib = loadLibrary();
  if (lib.vulkan.reg === 0) return lib.vulkan.skipped ?? "no Vulkan library";
  return devices().find((d) => d.reg.name === "Vulkan" && d.type !== BackendDevType.CPU) ?? "the Vulkan backend registered no device";
}

/** The child: every case through the API, then a compute that must still work. */
function child(): void {
  const dev = vulkanDevice();
  if (typeof dev === "string") return void console.log(JSON.stringify({ skip: dev }));
  using vk = dev.init();
  const results: { name: string; error: string; message: string; supportsOp?: boolean }[] = [];
  for (const c of CASES) {
    const keep: { free(): void }[] = [];
    try {
      const { graph, node } = c.build(vk, keep);
      const supportsOp = c.unsupported && node ? vk.supportsOp(node) : undefined;
      try {
        vk.graphCompute(graph);
        results.push({ name: c.name, error: "none", message: "", supportsOp });
      } catch (e) {
        results.push({ name: c.name, error: (e as Error).constructor.name, message: (e as Error).message, supportsOp });
      }
    } finally {
      for (const k of keep.reverse()) k.free();
    }
  }
  using cpu = Backend.cpu({ nThreads: 1 });
  for (const c of SCHED_CASES) {
    const keep: { free(): void }[] = [];
    try {
      c.run(vk, cpu, keep);
      results.push({ name: c.name, error: "none", message: "" });
    } catch (e) {
      results.push({ name: c.name, error: (e as Error).constructor.name, message: (e as Error).message });
    } finally {
      for (const k of keep.reverse()) k.free();
    }
  }
  // Alive: a graph on the device computes.
  const keep: { free(): void }[] = [];
  let a!: import("../mod.ts").Tensor;
  const { graph, node } = onDevice(vk, keep, (w) => void (a = w.newTensor1d(Type.F32, 4)), (g) => g.add(a, a));
  tensorSet(a, new Float32Array([1, 2, 3, 4]));
  vk.graphCompute(graph);
  const alive = Array.from(tensorGet(node!) as Float32Array);
  for (const k of keep.reverse()) k.free();
  console.log(JSON.stringify({ results, alive, maxAllocation: vulkanMaxAllocation(dev), nearMiss: nearMiss(vk, cpu) }));
}

/** One case handed to ggml-vulkan without the check. */
function raw(name: string): void {
  const dev = vulkanDevice();
  if (typeof dev === "string") return void console.log(`skip: ${dev}`);
  const vk = dev.init();
  const c = CASES.find((x) => x.name === name);
  if (!c) throw new Error(`no case ${name}`);
  const { graph } = c.build(vk, []);
  const status = runtime().lib.symbols.wsp_ggml_backend_graph_compute(vk.pointer, graph.pointer);
  console.log(`returned ${status}`);
}

if (process.env[CHILD_ENV] === "1") {
  child();
} else if (process.env[RAW_ENV]) {
  raw(process.env[RAW_ENV]!);
} else {
  // No device needed: the element count ggml-vulkan's push constants hold (vk_op_unary_push_constants_init,
  // vk_op_pad_push_constants_init: ne <= UINT32_MAX). Such a tensor needs a buffer over 4 GiB, more than
  // ggml-vulkan's buffer type allocates by default (1 GiB), so it is checked on a tensor that is never allocated.
  test("vulkanRefusal: a node of more than 2^32 - 1 elements", () => {
    using ctx = new Context({ memSize: 1 << 20, noAlloc: true });
    const a = ctx.newTensor2d(Type.F32, 1 << 16, 1 << 16);
    assert.match(vulkanRefusal(ctx.scale(a, 2), 1, () => 0) ?? "", /4294967296 elements, more than the 4294967295 the Vulkan kernels count/);
    assert.equal(vulkanRefusal(ctx.scale(ctx.newTensor2d(Type.F32, 1 << 16, (1 << 16) - 1), 2), 1, () => 0), null);
  });

  // No device needed either: the layouts and types of the ops whose kernels ggml-vulkan asserts on
  // (each rule of vulkanRefusal that the child's cases do not reach on lavapipe).
  test("vulkanRefusal: layouts and types the Vulkan kernels assert on", () => {
    using ctx = new Context({ memSize: 1 << 20, noAlloc: true });
    const refuse = (t: import("../mod.ts").Tensor) => vulkanRefusal(t, 16, () => 0) ?? "";
    // wsp_ggml_vk_flash_attn: nbk0 == type size, nev1 == nek1, nem1 % WSP_GGML_KQ_MASK_PAD == 0
    const q = ctx.newTensor3d(Type.F32, 64, 1, 4), v = ctx.newTensor3d(Type.F16, 64, 32, 4);
    const kT = ctx.transpose(ctx.newTensor3d(Type.F16, 32, 64, 4));
    assert.match(refuse(ctx.flashAttnExt(q, kT, v, null, 1, 0, 0)), /the keys .* must have dense rows/);
    const k = ctx.newTensor3d(Type.F16, 64, 32, 4);
    assert.match(refuse(ctx.flashAttnExt(q, k, ctx.newTensor3d(Type.F16, 64, 16, 4), null, 1, 0, 0)), /as many rows as the keys/);
    assert.match(refuse(ctx.flashAttnExt(q, k, v, ctx.newTensor2d(Type.F16, 32, 65), 1, 0, 0)), /multiple of 64 rows/);
    assert.equal(refuse(ctx.flashAttnExt(q, k, v, ctx.newTensor2d(Type.F16, 32, 64), 1, 0, 0)), "");
    // wsp_ggml_vk_conv_transpose_1d: nb00 == sizeof(float)
    const kernel = ctx.transpose(ctx.newTensor3d(Type.F32, 2, 3, 2));
    assert.match(refuse(ctx.convTranspose1d(ctx.cont(kernel), ctx.newTensor2d(Type.F32, 8, 2), 1, 0, 1)), /^$/);
    assert.match(refuse(ctx.convTranspose1d(kernel, ctx.newTensor2d(Type.F32, 8, 2), 1, 0, 1)), /is not contiguous/);
    // wsp_ggml_vk_op_f32_opt_step_adamw: every operand f32 and contiguous
    const w = ctx.newTensor1d(Type.F32, 8).setParam();
    const params = ctx.newTensor1d(Type.F32, 7);
    assert.match(refuse(ctx.optStepAdamw(w, ctx.newTensor1d(Type.F32, 8), ctx.newTensor1d(Type.F16, 8), ctx.newTensor1d(Type.F32, 8), params)), /operand 2 .* must be f32 and contiguous/);
    // mul_mat_vec_nc_f16_f32 / _p021_: a strided f16 a times one f16 column
    const a16 = ctx.permute(ctx.newTensor3d(Type.F16, 32, 4, 8), 0, 2, 1, 3);
    assert.match(refuse(ctx.mulMat(a16, ctx.newTensor3d(Type.F16, 32, 1, 4))), /takes an f32 b/);
    assert.equal(refuse(ctx.mulMat(a16, ctx.newTensor3d(Type.F32, 32, 1, 4))), "");
    // wsp_ggml_vk_get_mul_mat_mat_id_pipeline: src1 F32 (a strided b is converted to f16 first)
    const experts = ctx.newTensor3d(Type.Q8_0, 32, 16, 4), ids = ctx.newTensor2d(Type.I32, 2, 3);
    const bT = ctx.permute(ctx.newTensor3d(Type.F32, 32, 3, 2), 0, 2, 1, 3);
    assert.match(refuse(ctx.mulMatId(experts, bT, ids)), /a strided b .* needs f16 or bf16 experts/);
    assert.equal(refuse(ctx.mulMatId(experts, ctx.cont(bT), ids)), "");
    // wsp_ggml_vk_op_f32: a strided operand of an op whose shader reads it densely
    assert.match(refuse(ctx.diagMaskInf(ctx.transpose(ctx.newTensor2d(Type.F32, 4, 4)), 0)), /is not contiguous/);
    // wsp_ggml_vk_op_get_pipeline: soft_max's f32 kernels, rope's f32 / f16 ones
    assert.match(refuse(ctx.softMax(ctx.newTensor2d(Type.F16, 4, 4))), /no kernel for f16 → f16/);
    assert.equal(refuse(ctx.softMax(ctx.newTensor2d(Type.F32, 4, 4))), "");
  });

  // No device needed: the temporaries of matrix products and flash attention against a given limit.
  test("vulkanRefusal: temporaries over the device's largest allocation", () => {
    using ctx = new Context({ memSize: 1 << 20, noAlloc: true });
    const refuse = (t: import("../mod.ts").Tensor, max: number) => vulkanRefusal(t, 16, () => 0, max) ?? "";
    // an f16 a times an f16 b is read as it is: no temporary, whatever the limit
    assert.equal(refuse(ctx.mulMat(ctx.newTensor2d(Type.F16, 1024, 64), ctx.newTensor2d(Type.F16, 1024, 16)), 1), "");
    // mul_mat_q_f16: split_k (k >= 2048, m and n >= 32) keeps up to 8 partial products of m x n floats
    const big = ctx.mulMat(ctx.newTensor2d(Type.F16, 4096, 64), ctx.newTensor2d(Type.F16, 4096, 64));
    assert.match(refuse(big, 131071), /the 8 partial products of split_k of up to 131072 bytes, more than the device's largest allocation of 131071 bytes/);
    assert.equal(refuse(big, 131072), "");
    // mul_mat_vec_q_f16: a strided a is copied as it is, each matrix aligned
    const aP = ctx.permute(ctx.newTensor3d(Type.F32, 100, 2, 64), 0, 2, 1, 3);
    assert.match(refuse(ctx.mulMat(aP, ctx.newTensor3d(Type.F32, 100, 1, 2)), 51199), /a copy of the strided a .* of up to 51200 bytes/);
    // flash attention with one query row: split_k partials, one per key at most
    const q = ctx.newTensor3d(Type.F32, 128, 1, 1), kv = ctx.newTensor3d(Type.F16, 128, 4096, 1);
    const fa = ctx.flashAttnExt(q, kv, kv, null, 1, 0, 0);
    assert.match(refuse(fa, 1 << 19), /the 1024 partial results of split_k of up to 532480 bytes, more than the device's largest allocation of 524288 bytes/);
    assert.equal(refuse(fa, 1 << 20), "");
    assert.equal(refuse(ctx.flashAttnExt(ctx.newTensor3d(Type.F32, 128, 2, 1), kv, kv, null, 1, 0, 0), 1), "");
  });

  // The probe child measures the device's max_memory_allocation_size (through its buffer type, with
  // an unbounded suballocation block size in its own environment): the forced limit, above the
  // default 1 GiB block size too.
  test("probeVulkan reports the forced allocation limit", (t) => {
    const lib = loadLibrary(), path = lib.vulkan.path;
    if (path === null) return void t.skip(`no Vulkan: ${lib.vulkan.skipped}`);
    const names = ["WSP_GGML_VK_FORCE_MAX_ALLOCATION_SIZE", "WSP_GGML_VK_VISIBLE_DEVICES"] as const;
    const saved = names.map((k) => process.env[k]);
    try {
      process.env.WSP_GGML_VK_VISIBLE_DEVICES ??= "0";
      for (const n of [LIMIT, 3 << 29]) {
        process.env.WSP_GGML_VK_FORCE_MAX_ALLOCATION_SIZE = String(n);
        const v = probeVulkan(lib.location, path);
        assert.ok(v, "the probe did not run");
        if (v.devices === 0) return void t.skip(`no Vulkan device: ${v.skipped}`);
        assert.deepEqual(v.maxAllocation?.slice(0, 1), [n]);
      }
    } finally {
      names.forEach((k, i) => saved[i] === undefined ? delete process.env[k] : (process.env[k] = saved[i]));
    }
  });

  describe("Vulkan misuse, refused before ggml-vulkan aborts", () => {
    const vkEnv = { WSP_GGML_VK_VISIBLE_DEVICES: process.env.WSP_GGML_VK_VISIBLE_DEVICES ?? "0", ...FORCE_ENV };
    const r = runTsResult(fileURLToPath(import.meta.url), { [CHILD_ENV]: "1", ...vkEnv });
    let answer: {
      skip?: string;
      results?: { name: string; error: string; message: string; supportsOp?: boolean }[];
      alive?: number[];
      maxAllocation?: number;
      nearMiss?: { supportsOp: boolean; nmse: number };
    } = {};
    try {
      answer = JSON.parse(r.stdout.trim().split("\n").pop() ?? "");
    } catch { /* reported below */ }
    test("the child process answered, alive", () => {
      assert.equal(r.status, 0, `child exited ${r.status ?? r.signal}:\n${r.stderr.slice(-3000)}`);
      assert.ok(answer.skip !== undefined || answer.results !== undefined, `no answer in:\n${r.stdout}`);
      if (answer.alive) assert.deepEqual(answer.alive, [2, 4, 6, 8]);
    });
    const skip = answer.skip ? `no Vulkan: ${answer.skip}` : false;
    for (const c of [...CASES, ...SCHED_CASES]) {
      test(c.name, { skip }, () => {
        const got = answer.results?.find((x) => x.name === c.name);
        assert.ok(got, `no result for ${c.name}`);
        assert.equal(got.error, c.error, got.message);
        assert.match(got.message, c.message);
        if ("unsupported" in c && c.unsupported) assert.equal(got.supportsOp, false, "Backend.supportsOp still says yes");
      });
    }
    test("the device's allocation limit is the forced one", { skip }, () => assert.equal(answer.maxAllocation, LIMIT));
    test("a q8_0 mulMat whose f16 copy is just under the limit computes as on the CPU", { skip }, () => {
      assert.equal(answer.nearMiss?.supportsOp, true);
      assert.ok(answer.nearMiss!.nmse < 5e-4, `NMSE ${answer.nearMiss!.nmse}`);
    });
    // Without the API: ggml-vulkan aborts the process (mul_mat_q_f16, mul_mat_id_q_f16).
    for (const c of CASES.filter((x) => x.raw)) {
      test(`without the check, ggml-vulkan dies: ${c.name}`, { skip }, () => {
        const raw = runTsResult(fileURLToPath(import.meta.url), { [RAW_ENV]: c.name, ...vkEnv });
        assert.notEqual(raw.status, 0, `the raw child survived: ${raw.stdout}`);
        assert.match(raw.stderr, c.raw!);
      });
    }
  });
}
