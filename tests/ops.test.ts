// Ops against numpy references (tests/fixtures/ops.json, written by
// tests/fixtures/make_fixtures.py). Tolerance per case, as ggml's own
// test-backend-ops: normalised mean squared error Σ(out−ref)²/Σref² ≤ 1e-7 for
// most ops, 1e-6 for softmax and rope, 5e-4 for matmul with f16 and out_prod,
// 1e-5 for gelu / gelu_quick (the CPU computes them through an f16 table),
// exact (0) for integer results and the f16 conversion.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Context, OpPool, SortOrder, type Tensor, Type } from "../mod.ts";
import { MAX_OP_OBJECTS, opStats } from "../src/core/context.ts";

interface FixtureTensor {
  readonly ne: number[];
  readonly type: "f32" | "f16" | "i32";
  readonly data: number[];
}
interface Case {
  readonly name: string;
  readonly op: string;
  readonly inputs: Record<string, FixtureTensor>;
  readonly params: Record<string, number | number[] | string>;
  readonly expected: FixtureTensor;
  readonly tol: number;
}

const fixture = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), "fixtures", "ops.json"), "utf8"),
) as { numpy: string; cases: Case[] };

const TYPES = { f32: Type.F32, f16: Type.F16, i32: Type.I32 } as const;

function input(ctx: Context, f: FixtureTensor): Tensor {
  const t = ctx.newTensor(TYPES[f.type], f.ne);
  return t.set(f.type === "i32" ? Int32Array.from(f.data) : Float32Array.from(f.data));
}

type Build = (ctx: Context, i: Record<string, Tensor>, p: Case["params"]) => Tensor;
const num = (p: Case["params"], k: string) => p[k] as number;

/** How each fixture op maps to the API; unary ops need no entry. */
const BUILD: Record<string, Build> = {
  leakyRelu: (c, i, p) => c.leakyRelu(i.a, num(p, "slope"), false),
  scale: (c, i, p) => c.scale(i.a, num(p, "s")),
  clamp: (c, i, p) => c.clamp(i.a, num(p, "min"), num(p, "max")),
  add: (c, i) => c.add(i.a, i.b),
  sub: (c, i) => c.sub(i.a, i.b),
  mul: (c, i) => c.mul(i.a, i.b),
  div: (c, i) => c.div(i.a, i.b),
  add1: (c, i) => c.add1(i.a, i.b),
  repeat: (c, i) => c.repeat(i.a, i.b),
  sum: (c, i) => c.sum(i.a),
  sumRows: (c, i) => c.sumRows(i.a),
  mean: (c, i) => c.mean(i.a),
  argmax: (c, i) => c.argmax(i.a),
  argsort: (c, i) => c.argsort(i.a, SortOrder.ASC),
  mulMat: (c, i) => c.mulMat(i.a, i.b),
  outProd: (c, i) => c.outProd(i.a, i.b),
  softMax: (c, i) => c.softMax(i.a),
  softMaxExt: (c, i, p) => c.softMaxExt(i.a, i.mask, num(p, "scale"), 0),
  diagMaskInf: (c, i, p) => c.softMax(c.diagMaskInf(i.a, num(p, "n_past"))),
  norm: (c, i, p) => c.norm(i.a, num(p, "eps")),
  rmsNorm: (c, i, p) => c.rmsNorm(i.a, num(p, "eps")),
  l2Norm: (c, i, p) => c.l2Norm(i.a, num(p, "eps")),
  groupNorm: (c, i, p) => c.groupNorm(i.a, num(p, "n_groups"), num(p, "eps")),
  ropeExt: (c, i, p) => c.ropeExt(i.a, i.b, null, num(p, "n_dims"), num(p, "mode"), 0, 10000, 1, 0, 1, 0, 0),
  permute: (c, i, p) => {
    const [a0, a1, a2, a3] = p.axes as number[];
    return c.cont(c.permute(i.a, a0, a1, a2, a3));
  },
  transpose: (c, i) => c.cont(c.transpose(i.a)),
  reshape2d: (c, i, p) => {
    const [ne0, ne1] = p.ne as number[];
    return c.reshape2d(i.a, ne0, ne1);
  },
  view2d: (c, i, p) => {
    const [ne0, ne1] = p.ne as number[];
    return c.cont(c.view2d(i.a, ne0, ne1, num(p, "nb1"), num(p, "offset")));
  },
  cast: (c, i) => c.cast(i.a, Type.F16),
  concat: (c, i, p) => c.concat(i.a, i.b, num(p, "dim")),
  getRows: (c, i) => c.getRows(i.a, i.b),
  pad: (c, i, p) => {
    const [p0, p1, p2, p3] = p.p as number[];
    return c.pad(i.a, p0, p1, p2, p3);
  },
  arange: (c, _i, p) => c.arange(num(p, "start"), num(p, "stop"), num(p, "step")),
  im2col: (c, i, p) => c.im2col(i.a, i.b, num(p, "s0"), num(p, "s1"), num(p, "p0"), num(p, "p1"), num(p, "d0"), num(p, "d1"), true, Type.F32),
  conv2d: (c, i, p) => c.conv2d(i.a, i.b, num(p, "s0"), num(p, "s1"), num(p, "p0"), num(p, "p1"), num(p, "d0"), num(p, "d1")),
  pool2d: (c, i, p) => c.pool2d(i.a, OpPool[p.pool as "MAX" | "AVG"], num(p, "k"), num(p, "k"), num(p, "s"), num(p, "s"), 0, 0),
  pool1d: (c, i, p) => c.pool1d(i.a, OpPool[p.pool as "MAX" | "AVG"], num(p, "k"), num(p, "s"), 0),
};

function build(ctx: Context, c: Case): Tensor {
  const inputs = Object.fromEntries(Object.entries(c.inputs).map(([k, v]) => [k, input(ctx, v)]));
  const custom = BUILD[c.op];
  if (custom) return custom(ctx, inputs, c.params);
  const unary = (ctx as unknown as Record<string, (a: Tensor) => Tensor>)[c.op];
  assert.equal(typeof unary, "function", `no op ${c.op}`);
  return unary.call(ctx, inputs.a);
}

/** Σ(a−b)²/Σb². */
function nmse(out: ArrayLike<number>, ref: ArrayLike<number>): number {
  let err = 0, norm = 0;
  for (let i = 0; i < ref.length; i++) {
    err += (out[i] - ref[i]) ** 2;
    norm += ref[i] ** 2;
  }
  return norm === 0 ? err : err / norm;
}

const ops = new Set(fixture.cases.map((c) => c.op));

describe(`ops against numpy ${fixture.numpy} (${fixture.cases.length} cases, ${ops.size} ops)`, () => {
  test("the fixture covers at least 40 ops", () => {
    assert.ok(ops.size >= 40, `${ops.size} ops`);
  });

  for (const c of fixture.cases) {
    test(`${c.name} (${c.op}), NMSE ≤ ${c.tol}`, () => {
      using ctx = new Context({ memSize: 16 << 20 });
      const out = build(ctx, c);
      ctx.newGraph().buildForwardExpand(out).compute({ nThreads: 2 });
      const ne = [...c.expected.ne, 1, 1, 1].slice(0, 4);
      assert.deepEqual(out.shape, ne, "shape");
      const got = out.toArray();
      if (c.tol === 0) assert.deepEqual(got, c.expected.data);
      else {
        const e = nmse(got, c.expected.data);
        assert.ok(e <= c.tol, `NMSE ${e} > ${c.tol}`);
      }
    });
  }
});

test("no op creates more objects than the noAlloc fast path allows (MAX_OP_OBJECTS)", () => {
  // Every op above ran in an allocating context, so each was measured in the scratch context first.
  assert.ok(opStats.maxObjects >= 1, "ops were measured");
  assert.ok(opStats.maxObjects * 4 <= MAX_OP_OBJECTS, `an op created ${opStats.maxObjects} objects; the bound ${MAX_OP_OBJECTS} keeps a 4× margin`);
});
