/**
 * A graph that makes ggml-alloc fragment its free list: `n` tensors computed from one input and
 * all alive at once, then summed even ones first, so that every other one is freed while its
 * neighbours still hold memory. Shared by tests/alloc_bound.test.ts and its child program.
 */
import { Context, type Graph, type Tensor, Type } from "../mod.ts";

/** The graph, its input [1, 2, 3, 4] (set once allocated) and its output Σ (i + 1)·x. */
export function fragmentingGraph(n: number): { ctx: Context; graph: Graph; x: Tensor; y: Tensor; factor: number } {
  const ctx = new Context({ memSize: 64 << 20, noAlloc: true });
  const x = ctx.newTensor1d(Type.F32, 4).setName("x");
  x.setInput();
  const graph = ctx.newGraphCustom(4 * n + 16, false);
  const xs = Array.from({ length: n }, (_, i) => ctx.scale(x, i + 1));
  for (const t of xs) graph.buildForwardExpand(t);
  const sum = (idx: number[]) => idx.slice(1).reduce((acc, i) => ctx.add(acc, xs[i]), xs[idx[0]]);
  const even = sum(xs.map((_, i) => i).filter((i) => i % 2 === 0));
  const odd = sum(xs.map((_, i) => i).filter((i) => i % 2 === 1));
  const y = ctx.add(even, odd);
  y.setOutput();
  graph.buildForwardExpand(y);
  return { ctx, graph, x, y, factor: (n * (n + 1)) / 2 };
}
