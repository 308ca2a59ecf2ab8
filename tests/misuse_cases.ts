// Shared by the misuse tests: a table of wrong calls, each expected to throw
// one typed GgmlError with a message.
import {
  allocCtxTensors,
  ArgumentError,
  Backend,
  BoundsError,
  type BufferType,
  Context,
  Gallocr,
  GgmlError,
  rpcBackend,
  RpcServer,
  Sched,
  ShapeError,
  type Tensor,
  Type,
  UnsupportedOpError,
} from "../mod.ts";

/** A GgmlError subclass a wrong call must throw. */
export type ErrorClass = new (...args: never[]) => GgmlError;

/** One wrong call: its name, the call, the error class it must throw, and (optionally) a fragment its message must contain. */
export type MisuseCase = [name: string, call: () => unknown, type: ErrorClass, message?: string | RegExp];

/** Runs every case; returns one line per case that did not throw its typed error (empty when all did). */
export function misuseFailures(cases: readonly MisuseCase[]): string[] {
  const failures: string[] = [];
  for (const [name, call, type, message] of cases) {
    try {
      call();
      failures.push(`${name}: did not throw`);
    } catch (e) {
      if (!(e instanceof type)) failures.push(`${name}: threw ${(e as Error)?.name}: ${(e as Error)?.message}, expected ${type.name}`);
      else if (!(e instanceof GgmlError) || !e.message) failures.push(`${name}: no message`);
      else if (message !== undefined && !(typeof message === "string" ? e.message.includes(message) : message.test(e.message))) {
        failures.push(`${name}: ${type.name} "${e.message}" does not match ${message}`);
      }
    }
  }
  return failures;
}

/**
 * Wrong calls that the abort-site inventory (docs/asserts.map.json) names as
 * the proof of a check that no case of tests/misuse.test.ts reached: each
 * triggers exactly one precondition (the message fragment says which), all in
 * one process (tests/misuse_inventory.test.ts). `free` releases what the
 * cases made (a context, CPU backends, an in-process RPC server on 127.0.0.1
 * and its client backend: the only non-CPU backend every machine has).
 */
export function inventoryCases(): { cases: MisuseCase[]; free(): void } {
  const MiB = 1 << 20;
  const ctx = new Context({ memSize: 16 * MiB });
  const f32 = (...ne: number[]) => ctx.newTensor(Type.F32, ne);
  const f16 = (...ne: number[]) => ctx.newTensor(Type.F16, ne);
  const i32 = (...ne: number[]) => ctx.newTensor(Type.I32, ne);
  const T = (t: Tensor) => ctx.transpose(t);
  const m23 = f32(2, 3);
  const compute = (t: Tensor) => ctx.newGraph().buildForwardExpand(t).compute({ nThreads: 1 });
  const cpu = Backend.cpu({ nThreads: 1 });
  const other = Backend.cpu({ nThreads: 1 });
  const owned: { free(): void }[] = [];
  let remote: Backend | undefined;
  let server: RpcServer | undefined;
  /** A backend of another device type than the CPU: an RPC client of an in-process server. */
  const rpc = () => {
    if (remote) return remote;
    server = RpcServer.start({ port: 0, nThreads: 1 });
    return remote = rpcBackend(server.endpoint);
  };
  /** A scheduler of `backends` (freed with the rest) when the call does not throw. */
  const sched = (backends: Backend[], bufferTypes?: BufferType[]) => {
    const s = new Sched(bufferTypes ? { backends, bufferTypes } : { backends });
    owned.push(s);
    return s;
  };
  const cases: MisuseCase[] = [
    // element-wise broadcast (ggml.c wsp_ggml_sub_impl, wsp_ggml_div_impl: can_repeat(b, a))
    ["sub: cannot broadcast", () => ctx.sub(f32(3), f32(4)), ShapeError, "sub: "],
    ["div: cannot broadcast", () => ctx.div(m23, f32(3, 2)), ShapeError, "div: "],
    // reshapes (ggml.c wsp_ggml_reshape_1d / _3d / _4d: is_contiguous(a), the element count)
    ["reshape1d: element count", () => ctx.reshape1d(m23, 5), ShapeError, "the new shape [5] has 5"],
    ["reshape3d: element count", () => ctx.reshape3d(m23, 1, 2, 2), ShapeError, "the new shape [1, 2, 2] has 4"],
    ["reshape3d: not contiguous", () => ctx.reshape3d(T(m23), 3, 2, 1), ShapeError, /^reshape3d: .*must be contiguous/],
    ["reshape4d: element count", () => ctx.reshape4d(m23, 1, 2, 2, 2), ShapeError, "the new shape [1, 2, 2, 2] has 8"],
    ["reshape4d: not contiguous", () => ctx.reshape4d(T(m23), 3, 2, 1, 1), ShapeError, /^reshape4d: .*must be contiguous/],
    // ggml.c wsp_ggml_cross_entropy_loss_back: is_scalar(a), same_shape(b, c)
    ["crossEntropyLossBack: gradient not a scalar", () => ctx.crossEntropyLossBack(f32(2), m23, m23), ShapeError, /^crossEntropyLossBack: .*must be a scalar/],
    ["crossEntropyLossBack: shapes differ", () => ctx.crossEntropyLossBack(f32(1), m23, f32(3, 2)), ShapeError, /^crossEntropyLossBack: .*must have the same shape/],
    // ggml-cpu kernels' layout asserts (cpuKernelRefusal at compute)
    ["cpy: f32 into a non-contiguous quantized destination at compute", () => compute(ctx.cpy(f32(32, 2), ctx.view2d(ctx.newTensor(Type.Q8_0, [32, 4]), 32, 2, 68, 0))), UnsupportedOpError, "the quantized destination"],
    ["cpy: strided f32 into a quantized tensor at compute", () => compute(ctx.cpy(T(f32(2, 32)), ctx.newTensor(Type.Q8_0, [32, 2]))), UnsupportedOpError, /the source .* has strided elements/],
    ["cpy: quantized into a strided destination of partial blocks at compute", () => compute(ctx.cpy(ctx.newTensor(Type.Q8_0, [32, 2]), ctx.view2d(f32(16, 8), 16, 4, 128, 0))), UnsupportedOpError, "must hold whole blocks per row or be contiguous"],
    ["add: strided quantized a at compute", () => compute(ctx.add(T(ctx.newTensor(Type.Q8_0, [64, 32])), f32(32, 64))), UnsupportedOpError, /: a .*q8_0 \[32, 64, 1, 1\] has strided elements \(nb0 = 68, not 34/],
    ["outProd: permuted quantized a at compute", () => compute(ctx.outProd(ctx.permute(ctx.newTensor(Type.Q8_0, [64, 3, 4]), 2, 0, 1, 3), f32(5, 4, 64))), UnsupportedOpError, /: a .*q8_0 \[3, 4, 64, 1\] has strided elements \(nb0 = 68, not 34/],
    ["im2col3d: f16 input with an f16 kernel and result at compute", () => compute(ctx.im2col3d(f16(2, 2, 2, 2), f16(4, 4, 4, 2), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, Type.F16)), UnsupportedOpError, /the input .*f16 \[4, 4, 4, 2\] must be f32/],
    ["im2col3d: transposed input with an f16 result at compute", () => compute(ctx.im2col3d(f16(2, 2, 2, 2), T(f32(4, 4, 4, 2)), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, Type.F16)), UnsupportedOpError, /the input .* has strided elements/],
    ["im2col3d: transposed input at compute", () => compute(ctx.im2col3d(f32(2, 2, 2, 2), T(f32(4, 4, 4, 2)), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1, Type.F32)), UnsupportedOpError, /the input .* has strided elements/],
    ["conv3dDirect: kernel patch larger than the work buffer at compute", () => {
      const big = new Context({ memSize: 40 * MiB });
      try {
        // 4,300,000 channels of a 1×1×1 kernel: one patch needs 17.2 MB, more than the 16 MiB work buffer
        const k = big.newTensor(Type.F32, [1, 1, 1, 4300000]);
        big.newGraph().buildForwardExpand(big.conv3dDirect(k, big.newTensor(Type.F32, [1, 1, 1, 4300000]), 1, 1, 1, 0, 0, 0, 1, 1, 1, 4300000, 1, 1)).compute({ nThreads: 1 });
      } finally {
        big.free();
      }
    }, UnsupportedOpError, "one patch needs 17200004 bytes"],
    ["conv2dDwDirect: channels-most input with a channels-first kernel at compute", () => compute(ctx.conv2dDwDirect(f32(3, 3, 1, 2), ctx.permute(f32(2, 8, 8, 1), 2, 0, 1, 3), 1, 1, 0, 0, 1, 1)), UnsupportedOpError, "needs a channels-first kernel"],
    ["ssmScan: strided ids at compute", () => compute(ctx.ssmScan(f32(4, 2, 3, 1), f32(2, 3, 2, 1), f32(3, 2, 1), f32(4, 3), f32(4, 1, 2, 1), f32(4, 1, 2, 1), T(ctx.view2d(i32(2, 1), 1, 1, 8, 0)))), UnsupportedOpError, /operand 6 .*i32 \[1, 1, 1, 1\] has strided elements \(nb0 = 8, not 4/],
    ["optStepAdamw: strided parameter at compute", () => {
      const p = ctx.viewTensor(T(f32(4, 3))).setParam();
      return compute(ctx.optStepAdamw(p, f32(3, 4), f32(3, 4), f32(3, 4), f32(7)));
    }, UnsupportedOpError, /the operand .* has strided elements/],
    ["optStepSgd: strided parameter at compute", () => {
      const p = ctx.viewTensor(T(f32(4, 3))).setParam();
      return compute(ctx.optStepSgd(p, f32(3, 4), f32(2)));
    }, UnsupportedOpError, /the operand .* has strided elements/],
    // backends, buffers, allocators (ggml-backend.cpp, ggml-alloc.c)
    ["allocCtxTensors: a context that is not noAlloc", () => allocCtxTensors(ctx, cpu), ArgumentError, "must be created with noAlloc"],
    ["Gallocr.bufferSize: buffer id past the buffer types", () => {
      const ga = new Gallocr(cpu.defaultBufferType);
      owned.push(ga);
      return ga.bufferSize(1);
    }, BoundsError, "buffer id 1 out of 0..0"],
    ["Gallocr.bufferSize: negative buffer id", () => {
      const ga = new Gallocr(cpu.defaultBufferType);
      owned.push(ga);
      return ga.bufferSize(-1);
    }, BoundsError, "buffer id -1 out of 0..0"],
    ["Sched: no backends", () => sched([]), ArgumentError, "at least one backend"],
    ["Sched: 17 backends", () => {
      const many = Array.from({ length: 17 }, () => Backend.cpu({ nThreads: 1 }));
      try {
        return sched(many);
      } finally {
        for (const b of many) b.free();
      }
    }, ArgumentError, "at most 16 backends, got 17"],
    ["Sched: the last backend is not a CPU one", () => sched([cpu, rpc()]), ArgumentError, "the last backend must be a CPU backend"],
    ["Sched: a buffer type the backend cannot use", () => sched([cpu], [rpc().defaultBufferType]), ArgumentError, "cannot use buffers of type"],
    ["Sched.getBufferSize: a backend not of the scheduler", () => sched([cpu]).getBufferSize(other), ArgumentError, "getBufferSize: the backend is not one of the scheduler's"],
    ["Sched.getBufferType: a backend not of the scheduler", () => sched([cpu]).getBufferType(other), ArgumentError, "getBufferType: the backend is not one of the scheduler's"],
    ["Sched.setTensorBackend: a backend not of the scheduler", () => sched([cpu]).setTensorBackend(ctx.relu(f32(4)), other), ArgumentError, "setTensorBackend: the backend is not one of the scheduler's"],
    ["Backend.setNThreads: not a CPU backend", () => rpc().setNThreads(2), UnsupportedOpError, "is not a CPU backend"],
    ["Backend.setThreadpool: not a CPU backend", () => rpc().setThreadpool(null), UnsupportedOpError, "is not a CPU backend"],
  ];
  return {
    cases,
    free() {
      for (const o of owned.reverse()) o.free();
      remote?.free();
      server?.stop();
      other.free();
      cpu.free();
      ctx.free();
    },
  };
}
