// What ggml-metal's supports_op accepts but its encoders abort on, refused by metalRefusal
// (src/backend/metal_checks.ts; docs/asserts.map.d/metal.json maps each assert). Metal runs only
// on a Mac, so the predicate is tested on nodes built on the CPU: for every condition a node it
// refuses and a near-identical one it accepts (so it refuses no more than the assert does), and
// metalRuns is true for the CPU device on all of them (CPU and Vulkan are untouched).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { BackendDevType, Context, cpuBufferType, deviceByType, OpPool, type Tensor, Type, UnaryOp } from "../mod.ts";
import {
  checkMetalBufferType, checkMetalDevice, isMetalDevice, METAL_PRIVATE, metalExpertCopyRefusal, metalPrivateRefusal, metalRefusal, metalRuns,
} from "../src/backend/metal_checks.ts";
import { pickDevice } from "../src/backend/backend.ts";

const ctx = new Context({ memSize: 64 << 20, noAlloc: true });
const t = (type: Type, ...ne: number[]) => ctx.newTensor(type, ne);
const f32 = (...ne: number[]) => t(Type.F32, ...ne);
const f16 = (...ne: number[]) => t(Type.F16, ...ne);
const i32 = (...ne: number[]) => t(Type.I32, ...ne);
/** A matrix transposed: not contiguous, its elements strided (nb0 > the type's size) unless ne1 is 1. */
const T = (x: Tensor) => ctx.transpose(x);

/** [name, the node Metal aborts on (with a part of the reason), the near-identical node it runs]. */
const cases: [string, () => Tensor, RegExp, () => Tensor][] = [
  // wsp_ggml_metal_op_bin
  ["add: f16 b", () => ctx.add(f32(8, 2), f16(8, 2)), /b .* must be f32/, () => ctx.add(f32(8, 2), f32(8, 2))],
  ["mul: b with strided elements", () => ctx.mul(f32(4, 2), T(f32(2, 4))), /b .* dense rows/, () => ctx.mul(f32(4, 2), ctx.view2d(f32(8, 2), 4, 2, 32, 0))],
  ["sub: a with strided elements", () => ctx.sub(T(f32(2, 4)), f32(4, 2)), /a .* dense rows/, () => ctx.sub(ctx.cont(T(f32(2, 4))), f32(4, 2))],
  ["div: a with padded rows over one row of b", () => ctx.div(ctx.view2d(f32(8, 2), 4, 2, 32, 0), f32(4)), /contiguous on Metal when b .* is one row/,
    () => ctx.div(ctx.view2d(f32(8, 2), 4, 2, 32, 0), f32(4, 2))],
  // wsp_ggml_metal_op_add_id
  ["addId: f16 b", () => ctx.addId(f32(4, 2, 3), f16(4, 5), i32(2, 3)), /b .* must be f32/, () => ctx.addId(f32(4, 2, 3), f32(4, 5), i32(2, 3))],
  ["addId: a with strided elements", () => ctx.addId(ctx.permute(f32(2, 4, 3), 1, 0, 2, 3), f32(4, 5), i32(2, 3)), /a .* dense rows/,
    () => ctx.addId(ctx.permute(f32(4, 3, 2), 0, 2, 1, 3), f32(4, 5), i32(2, 3))],
  // wsp_ggml_metal_op_acc
  ["acc: b not contiguous", () => ctx.acc(f32(8, 4), T(f32(2, 4)), 32, 128, 128, 0), /b .* must be contiguous/,
    () => ctx.acc(f32(8, 4), f32(4, 2), 32, 128, 128, 0)],
  // wsp_ggml_metal_library_get_pipeline_unary
  ["scale: a not contiguous", () => ctx.scale(ctx.view2d(f32(8, 2), 4, 2, 32, 0), 2), /operand .* must be contiguous/, () => ctx.scale(ctx.view2d(f32(8, 2), 8, 1, 32, 0), 2)],
  ["clamp: a not contiguous", () => ctx.clamp(T(f32(3, 2)), 0, 1), /operand .* must be contiguous/, () => ctx.clamp(f32(2, 3), 0, 1)],
  ["leakyRelu: a not contiguous", () => ctx.leakyRelu(T(f32(3, 2)), 0.1, false), /operand .* must be contiguous/, () => ctx.leakyRelu(f32(2, 3), 0.1, false)],
  // wsp_ggml_metal_library_get_pipeline_sum_rows: a column with a stride passes supports_op's is_contiguous_rows
  ["sumRows: a transposed column", () => ctx.sumRows(T(f32(3, 1))), /dense elements/, () => ctx.sumRows(f32(1, 3))],
  ["mean: a transposed column", () => ctx.mean(T(f32(3, 1))), /dense elements/, () => ctx.mean(f32(1, 3))],
  // wsp_ggml_metal_library_get_pipeline_argmax
  ["argmax: f16 a", () => ctx.argmax(f16(4, 3)), /operand .* must be f32/, () => ctx.argmax(f32(4, 3))],
  ["argmax: a transposed", () => ctx.argmax(T(f32(3, 4))), /dense elements and rows/, () => ctx.argmax(ctx.view2d(f32(8, 3), 4, 3, 32, 0))],
  // wsp_ggml_metal_library_get_pipeline_group_norm, _pool_2d
  ["groupNorm: a not contiguous", () => ctx.groupNorm(ctx.permute(f32(4, 4, 6), 1, 0, 2, 3), 2, 1e-5), /operand .* must be contiguous/,
    () => ctx.groupNorm(f32(4, 4, 6), 2, 1e-5)],
  ["pool2d: a not contiguous", () => ctx.pool2d(T(f32(4, 4)), OpPool.AVG, 2, 2, 2, 2, 0, 0), /operand .* must be contiguous/,
    () => ctx.pool2d(f32(4, 4), OpPool.AVG, 2, 2, 2, 2, 0, 0)],
  // wsp_ggml_metal_library_get_pipeline_ssm_conv
  ["ssmConv: f16 sx", () => ctx.ssmConv(f16(6, 4, 2), f32(3, 4)), /sx .* must be f32/, () => ctx.ssmConv(f32(6, 4, 2), f32(3, 4))],
  ["ssmConv: f16 c", () => ctx.ssmConv(f32(6, 4, 2), f16(3, 4)), /c .* must be f32/, () => ctx.ssmConv(f32(6, 4, 2), f32(3, 4))],
  ["ssmConv: sx not contiguous", () => ctx.ssmConv(ctx.view3d(f32(12, 4, 2), 6, 4, 2, 48, 192, 0), f32(3, 4)), /sx .* must be contiguous/,
    () => ctx.ssmConv(ctx.view3d(f32(6, 4, 4), 6, 4, 2, 24, 96, 0), f32(3, 4))],
  ["ssmConv: c not contiguous", () => ctx.ssmConv(f32(6, 4, 2), ctx.view2d(f32(6, 4), 3, 4, 24, 0)), /c .* must be contiguous/,
    () => ctx.ssmConv(f32(6, 4, 2), ctx.view2d(f32(3, 8), 3, 4, 12, 0))],
  // wsp_ggml_metal_op_ssm_scan: s [d_state, head_dim, n_head, n_seqs], x [head_dim, n_head, tokens, seqs], A [1 or d_state, n_head]
  ["ssmScan: decay per state with a head dimension of 2", () => ctx.ssmScan(f32(4, 2, 3, 1), f32(2, 3, 5, 1), f32(3, 5, 1), f32(4, 3), f32(4, 1, 5, 1), f32(4, 1, 5, 1), i32(1)),
    /decay per state needs a head dimension of 1/,
    () => ctx.ssmScan(f32(4, 1, 3, 1), f32(1, 3, 5, 1), f32(3, 5, 1), f32(4, 3), f32(4, 1, 5, 1), f32(4, 1, 5, 1), i32(1))],
  ["ssmScan: a head dimension of 2 with a decay per head", () => ctx.ssmScan(f32(4, 2, 3, 1), f32(2, 3, 5, 1), f32(3, 5, 1), f32(4, 3), f32(4, 1, 5, 1), f32(4, 1, 5, 1), i32(1)),
    /decay per state/,
    () => ctx.ssmScan(f32(4, 2, 3, 1), f32(2, 3, 5, 1), f32(3, 5, 1), f32(1, 3), f32(4, 1, 5, 1), f32(4, 1, 5, 1), i32(1))],
  // wsp_ggml_metal_library_get_pipeline_rwkv: k, v, r [S, H, T], tf [S, H], td [S, H, T], state [S·S·H, n_seqs]
  ["rwkvWkv6: f16 state", () => wkv6(64, Type.F16), /state .* must be f32/, () => wkv6(64, Type.F32)],
  ["rwkvWkv6: head size 32", () => wkv6(32, Type.F32), /head size of 64, not 64 \/ 2 heads/, () => wkv6(64, Type.F32)],
  ["rwkvWkv7: f16 state", () => wkv7(64, Type.F16), /state .* must be f32/, () => wkv7(64, Type.F32)],
  ["rwkvWkv7: head size 16", () => wkv7(16, Type.F32), /head size of 64/, () => wkv7(64, Type.F32)],
  // wsp_ggml_metal_library_get_pipeline_conv_transpose_1d: kernel [K, OC, IC], input [L, IC]
  ["convTranspose1d: kernel not contiguous", () => ctx.convTranspose1d(ctx.permute(f32(2, 3, 4), 1, 0, 2, 3), f32(5, 4), 1, 0, 1), /kernel .* must be contiguous/,
    () => ctx.convTranspose1d(f32(3, 2, 4), f32(5, 4), 1, 0, 1)],
  ["convTranspose1d: input not contiguous", () => ctx.convTranspose1d(f32(3, 2, 4), ctx.view2d(f32(10, 4), 5, 4, 40, 0), 1, 0, 1), /input .* must be contiguous/,
    () => ctx.convTranspose1d(f32(3, 2, 4), ctx.view2d(f32(5, 8), 5, 4, 20, 0), 1, 0, 1)],
  ["convTranspose1d: i32 kernel", () => ctx.convTranspose1d(i32(3, 2, 4), f32(5, 4), 1, 0, 1), /kernel .* must be f16 or f32/, () => ctx.convTranspose1d(f16(3, 2, 4), f32(5, 4), 1, 0, 1)],
  ["convTranspose1d: f16 input", () => ctx.convTranspose1d(f32(3, 2, 4), f16(5, 4), 1, 0, 1), /input .* must be f32/, () => ctx.convTranspose1d(f32(3, 2, 4), f32(5, 4), 1, 0, 1)],
  // wsp_ggml_metal_library_get_pipeline_mul_mv / _mul_mv_id
  ["mulMat: i32 a", () => ctx.mulMat(i32(4, 3), f32(4, 2)), /no matrix kernel/, () => ctx.mulMat(f16(4, 3), f32(4, 2))],
  ["mulMat: q8_1 a", () => ctx.mulMat(t(Type.Q8_1, 32, 3), f32(32, 2)), /no matrix kernel/, () => ctx.mulMat(t(Type.Q8_0, 32, 3), f32(32, 2))],
  ["mulMat: q8_K a", () => ctx.mulMat(t(Type.Q8_K, 256, 3), f32(256, 2)), /no matrix kernel/, () => ctx.mulMat(t(Type.Q6_K, 256, 3), f32(256, 2))],
  ["mulMatId: i32 experts", () => ctx.mulMatId(i32(4, 3, 2), f32(4, 1, 5), i32(1, 5)), /no expert kernel/, () => ctx.mulMatId(f32(4, 3, 2), f32(4, 1, 5), i32(1, 5))],
  // wsp_ggml_metal_op_mul_mat_id
  ["mulMatId: b transposed", () => ctx.mulMatId(f32(4, 3, 2), ctx.permute(f32(2, 4, 5), 1, 0, 2, 3), i32(2, 5)), /b .* must not be transposed/,
    () => ctx.mulMatId(f32(4, 3, 2), f32(4, 2, 5), i32(2, 5))],
  ["mulMatId: 1025 experts in the matrix-matrix path", () => ctx.mulMatId(f32(64, 3, 1025), f32(64, 1, 32), i32(1, 32)), /at most 1024 experts/,
    () => ctx.mulMatId(f32(64, 3, 1024), f32(64, 1, 32), i32(1, 32))],
  ["mulMatId: 1025 experts of 64 with 32 tokens, not of 63 (matrix-vector path)", () => ctx.mulMatId(f32(64, 3, 1025), f32(64, 1, 32), i32(1, 32)), /at most 1024 experts/,
    () => ctx.mulMatId(f32(63, 3, 1025), f32(63, 1, 32), i32(1, 32))],
  ["mulMatId: 1025 experts with 31 tokens (matrix-vector path)", () => ctx.mulMatId(f32(64, 3, 1025), f32(64, 1, 32), i32(1, 32)), /at most 1024 experts/,
    () => ctx.mulMatId(f32(64, 3, 1025), f32(64, 1, 31), i32(1, 31))],
  ["mulMatId: an expert map over 32 KiB", () => ctx.mulMatId(f32(64, 3, 1024), f32(64, 17, 32), i32(17, 32)), /more than the 32768 bytes/,
    () => ctx.mulMatId(f32(64, 3, 1024), f32(64, 16, 32), i32(16, 32))],
  ["mulMatId: 3 experts used of each token in the matrix-matrix path", () => ctx.mulMatId(f32(64, 3, 8), f32(64, 3, 32), i32(3, 32)), /no expert-map kernel for 3 experts/,
    () => ctx.mulMatId(f32(64, 3, 8), f32(64, 4, 32), i32(4, 32))],
  ["mulMatId: 3 experts used of each token in the matrix-vector path", () => ctx.mulMatId(f32(64, 3, 8), f32(64, 3, 32), i32(3, 32)), /no expert-map kernel/,
    () => ctx.mulMatId(f32(64, 3, 8), f32(64, 3, 31), i32(3, 31))],
  ["mulMatId: permuted q4_0 experts of 4 elements a row", () => ctx.mulMatId(ctx.permute(t(Type.Q4_0, 32, 4, 2), 1, 0, 2, 3), f32(4, 1, 5), i32(1, 5)), /rows of at least 8 elements/,
    () => ctx.mulMatId(ctx.permute(t(Type.Q4_0, 32, 8, 2), 1, 0, 2, 3), f32(8, 1, 5), i32(1, 5))],
  // wsp_ggml_metal_op_cpy
  ["cont: q4_0 source of a partial block", () => ctx.cont(ctx.permute(t(Type.Q4_0, 32, 4), 1, 0, 2, 3)), /whole 32-element blocks/, () => ctx.cont(ctx.permute(t(Type.Q4_0, 32, 4, 2), 0, 2, 1, 3))],
  ["cpy: q8_0 source of a partial block to f32", () => ctx.cpy(ctx.permute(t(Type.Q8_0, 32, 4), 1, 0, 2, 3), f32(4, 32)), /whole 32-element blocks/, () => ctx.cpy(t(Type.Q8_0, 32, 4), f32(32, 4))],
  // wsp_ggml_metal_op_flash_attn_ext: q [D, n_q, H, 1], k and v [D, n_kv, H_kv, 1], mask [n_kv, ≥ PAD(n_q, 64)]
  ["flashAttnExt: 48 keys", () => fa({ nKv: 48 }), /multiple of 32/, () => fa({ nKv: 64 })],
  ["flashAttnExt: f16 queries", () => fa({ q: Type.F16 }), /queries .* must be f32/, () => fa({})],
  ["flashAttnExt: fewer values than keys", () => fa({ nV: 32 }), /as many rows as the keys/, () => fa({ nV: 64 })],
  ["flashAttnExt: values of fewer heads than the keys", () => fa({ hV: 1 }), /as many heads as the keys/, () => fa({ hV: 2 })],
  ["flashAttnExt: f32 mask", () => fa({ mask: Type.F32 }), /mask .* must be f16/, () => fa({ mask: Type.F16 })],
  ["flashAttnExt: 65536 queries", () => fa({ nQ: 65536 }), /fewer than 65536 queries/, () => fa({ nQ: 65535 })],
  ["flashAttnExt: over 2^31 result rows in the vector kernel", () => fa({ nQ: 16, hQ: 2 ** 27 + 2 }), /at most 2\^31 result rows/, () => fa({ nQ: 16, hQ: 2 ** 27 })],
  ["flashAttnExt: over 2^31 result rows past the vector kernel", () => fa({ nQ: 16, hQ: 2 ** 27 + 2 }), /2\^31/, () => fa({ nQ: 20, hQ: 2 ** 27 + 2 })],
  // wsp_ggml_metal_op_im2col
  ["im2col: a 2-D kernel of 33 × 32 taps", () => ctx.im2col(f32(33, 32, 1, 1), f32(40, 40, 1, 1), 1, 1, 0, 0, 1, 1, true, Type.F32), /at most 1024 taps, not 1056/,
    () => ctx.im2col(f32(32, 32, 1, 1), f32(40, 40, 1, 1), 1, 1, 0, 0, 1, 1, true, Type.F32)],
  ["im2col: a 1-D kernel of 1025 taps", () => ctx.im2col(f32(1025, 1, 1), f32(2000, 1, 1), 1, 0, 0, 0, 1, 0, false, Type.F16), /at most 1024 taps/,
    () => ctx.im2col(f32(1024, 1, 1), f32(2000, 1, 1), 1, 0, 0, 0, 1, 0, false, Type.F16)],
];

function wkv6(S: number, state: Type): Tensor {
  const H = 2, T = 3;
  const k = f32(S, H, T), v = f32(S, H, T), r = f32(S, H, T), tf = f32(S, H), td = f32(S, H, T);
  return ctx.rwkvWkv6(k, v, r, tf, td, t(state, S * S * H, 1));
}

function wkv7(S: number, state: Type): Tensor {
  const H = 2, T = 3;
  const x = () => f32(S, H, T);
  return ctx.rwkvWkv7(x(), x(), x(), x(), x(), x(), t(state, S * S * H, 1));
}

interface Fa {
  nQ?: number;
  hQ?: number;
  nKv?: number;
  nV?: number;
  hV?: number;
  q?: Type;
  mask?: Type;
}

function fa({ nQ = 4, hQ = 2, nKv = 64, nV = nKv, hV = 2, q = Type.F32, mask }: Fa): Tensor {
  const D = 64;
  const m = mask === undefined ? null : t(mask, nKv, Math.ceil(nQ / 64) * 64);
  return ctx.flashAttnExt(t(q, D, nQ, hQ), f16(D, nKv, 2), f16(D, nV, hV), m, 0.125, 0, 0);
}

describe("metalRefusal", () => {
  for (const [name, bad, reason, good] of cases) {
    test(name, () => {
      const refused = bad(), accepted = good();
      assert.match(metalRefusal(refused) ?? "(accepted)", reason);
      assert.equal(metalRefusal(accepted), null, `the near-identical ${accepted.describe()} is accepted`);
    });
  }

  test("views, leaves and empty nodes are never refused", () => {
    for (const n of [f16(4), T(f32(2, 3)), ctx.reshape1d(f32(2, 3), 6), ctx.add(f32(0, 2), f16(0, 2))]) assert.equal(metalRefusal(n), null);
    assert.match(metalRefusal(ctx.add(f32(1, 2), f16(1, 2)))!, /must be f32/);
  });

  test("ops Metal checks nothing more of are accepted whatever their operands", () => {
    assert.equal(metalRefusal(ctx.unary(f32(3, 2), UnaryOp.RELU)), null);
    assert.equal(metalRefusal(ctx.norm(ctx.view2d(f32(8, 2), 4, 2, 32, 0), 1e-5)), null);
  });
});

describe("metalRuns", () => {
  test("true for the CPU device on every case (CPU and Vulkan devices are untouched)", () => {
    const cpu = deviceByType(BackendDevType.CPU)!;
    assert.equal(isMetalDevice(cpu), false);
    for (const [, bad, , good] of cases) {
      assert.equal(metalRuns(cpu, bad()), true);
      assert.equal(metalRuns(cpu, good()), true);
    }
  });
});

// Copies into and out of a Metal buffer go through newBufferWithBytesNoCopy over the caller's memory
// (asserted: wsp_ggml_metal_buffer_set_tensor / _get_tensor, wsp_ggml_metal_get_tensor_async), which
// Metal refuses for memory that is not page-aligned, and a discrete GPU for host memory at all.
describe("Metal host copies", () => {
  test("a device with private buffers is refused, with what to do; a device with shared ones is not", () => {
    const why = metalPrivateRefusal("AMD Radeon Pro Vega 56", METAL_PRIVATE);
    assert.match(why ?? "", /AMD Radeon Pro Vega 56 keeps its buffers in memory the host cannot map/);
    assert.match(why ?? "", /compute on the CPU/);
    assert.equal(metalPrivateRefusal("Apple M2", "Metal"), null);
  });

  test("auto and gpu pass over an unusable device, a name still picks it (its init then refuses)", () => {
    const CPU = { name: "CPU", type: BackendDevType.CPU }, AMD = { name: "Metal", type: BackendDevType.GPU, usable: false };
    const IGPU = { name: "Vulkan1", type: BackendDevType.IGPU };
    assert.equal(pickDevice([AMD, CPU], "auto"), 1);
    assert.equal(pickDevice([AMD, IGPU, CPU], "gpu"), 1);
    assert.throws(() => pickDevice([AMD, CPU], "gpu"), /no GPU device .*Metal: a Metal device whose buffers the host cannot map/);
    assert.equal(pickDevice([AMD, CPU], "metal"), 0);
    assert.equal(pickDevice([{ ...AMD, usable: true }, CPU], "auto"), 0);
  });

  test("the device and buffer-type checks leave the CPU alone", () => {
    assert.doesNotThrow(() => checkMetalDevice("init", deviceByType(BackendDevType.CPU)!));
    assert.doesNotThrow(() => checkMetalBufferType("allocBuffer", cpuBufferType().pointer));
  });

  test("a MUL_MAT_ID on Metal with its experts in a host weights buffer is refused (the scheduler's expert copy)", () => {
    const node = ctx.mulMatId(f32(8, 4, 3), f32(8, 2, 5), i32(2, 5));
    assert.match(metalExpertCopyRefusal(node, true) ?? "", /experts .* are in a host weights buffer/);
    assert.equal(metalExpertCopyRefusal(node, false), null, "experts in the device's own buffer");
    assert.equal(metalExpertCopyRefusal(ctx.mulMat(f32(8, 4), f32(8, 2)), true), null, "only MUL_MAT_ID copies experts");
  });
});
