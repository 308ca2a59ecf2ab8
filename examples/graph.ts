/**
 * A tiny tour of ggml graphs: views (no copy), permute / transpose (strides
 * only, `cont` to make them dense), broadcasting in `add` and `mul`, and a
 * backward pass, each result printed.
 *
 *   deno run -A examples/graph.ts
 *   bun examples/graph.ts
 *   node --import tsx examples/graph.ts
 *
 * @module
 */
import { Context, type Tensor, Type } from "../mod.ts";

/** `[shape] [values]` (values rounded to 4 decimals; toArray reads strided views too). */
const fmt = (t: Tensor) => `[${t.shape.slice(0, t.nDims).join(", ")}] ${JSON.stringify(t.toArray().map((v) => Math.round(v * 1e4) / 1e4))}`;
const show = (name: string, t: Tensor) => console.log(`${name.padEnd(22)} ${fmt(t)}`);
const iota = (n: number, from = 1) => Float32Array.from({ length: n }, (_, i) => from + i);

using ctx = new Context({ memSize: 4 << 20 });

// m: 3 rows of 4 (ggml shape [4, 3]: the first dimension is the row).
const m = ctx.newTensor2d(Type.F32, 4, 3).set(iota(12));
// A view: 2 columns (1 and 2) of every row; same memory, strides of m.
const cols = ctx.view2d(m, 2, 3, m.nb(1), 1 * m.nb(0));
// Transpose: shape [3, 4], strides swapped; cont() copies it dense.
const mt = ctx.cont(ctx.transpose(m));
// Permute a [2, 3, 2] tensor: dimension i moves to position axes[i].
const t3 = ctx.newTensor3d(Type.F32, 2, 3, 2).set(iota(12, 0));
const p = ctx.cont(ctx.permute(t3, 1, 2, 0, 3));
// Broadcasting: a row [4, 1] added to every row of m, a column [1, 3] multiplying every column.
const row = ctx.newTensor2d(Type.F32, 4, 1).set(new Float32Array([10, 20, 30, 40]));
const col = ctx.newTensor2d(Type.F32, 1, 3).set(new Float32Array([1, 0, -1]));
const added = ctx.add(m, row), scaled = ctx.mul(m, col);
const g = ctx.newGraph();
for (const t of [cols, mt, p, added, scaled]) g.buildForwardExpand(ctx.cont(t));
g.compute({ nThreads: 1 });
show("m", m);
show("view2d(m) cols 1..2", cols);
show("cont(transpose(m))", mt);
show("t3", t3);
show("permute(t3, 1,2,0,3)", p);
show("m + row (broadcast)", added);
show("m * col (broadcast)", scaled);

// Backward: loss = Σ (w ⊙ x + b)², b broadcast over the rows; gradients by ggml's autodiff.
const x = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
const w = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([0.5, -1, 2, 0, 1, -0.5])).setParam();
const b = ctx.newTensor1d(Type.F32, 3).set(new Float32Array([1, 0, -1])).setParam();
const y = ctx.add(ctx.mul(w, x), b);
const loss = ctx.sum(ctx.sqr(y)).setLoss();
const gb = ctx.newGraphCustom(64, true).buildForwardExpand(loss).buildBackwardExpand();
gb.reset(); // d loss / d loss = 1, every other gradient 0
gb.compute({ nThreads: 1 });
show("y = w*x + b", y);
show("loss = sum(y^2)", loss);
show("grad w = 2*y*x", gb.grad(w)!);
show("grad b = sum_rows 2*y", gb.grad(b)!);
