/**
 * ggml-alloc's free list has room for 256 ranges per buffer chunk (`MAX_FREE_BLOCKS`) and
 * aborts the process when a free would need a 257th. Free ranges are kept merged, so between
 * two of them lies at least one allocated tensor: a chunk never has more free ranges than
 * tensors allocated in it, plus one. This module replays ggml-alloc's order of allocations and
 * frees (`wsp_ggml_gallocr_alloc_graph_impl`) over a graph to bound the tensors it keeps
 * allocated at once; a graph under the limit cannot reach the abort.
 *
 * The replay over-counts, never under-counts: it allocates where ggml would reuse a parent's
 * memory in place (that parent is then freed at the same node), and counts every buffer and
 * chunk together.
 *
 * @module
 */
import { GraphFullError } from "../core/errors.ts";
import type { Graph } from "../core/graph.ts";
import type { Tensor } from "../core/tensor.ts";
import { Op, TensorFlag } from "../ffi/bindings.gen.ts";

/** ggml-alloc's free ranges per chunk (ggml-alloc.c). */
export const MAX_FREE_BLOCKS = 256;

/**
 * The most tensors held at once (an upper bound) that the placement keeps allocated: over
 * this, a free could need a free range past {@linkcode MAX_FREE_BLOCKS}.
 */
export const MAX_LIVE_ALLOCATIONS = MAX_FREE_BLOCKS - 2;

/** An upper bound on the tensors ggml-alloc keeps allocated at once while it places `graph`. */
export function maxLiveAllocations(nodes: readonly Tensor[], leafs: readonly Tensor[]): number {
  const children = new Map<Tensor, number>(), views = new Map<Tensor, number>();
  const allocated = new Set<Tensor>();
  let live = 0, max = 0;
  const add = (m: Map<Tensor, number>, t: Tensor, d: number) => m.set(t, (m.get(t) ?? 0) + d);
  // wsp_ggml_gallocr_allocate_node: tensors with data of their own, and views, take no memory.
  const allocate = (t: Tensor) => {
    if (t._data !== 0 || t.viewSrc !== null || allocated.has(t)) return;
    allocated.add(t);
    if (++live > max) max = live;
  };
  // wsp_ggml_gallocr_free_node: outputs stay.
  const free = (t: Tensor) => {
    if (t.flags & TensorFlag.OUTPUT) return;
    allocated.delete(t);
    live--;
  };
  for (const leaf of leafs) allocate(leaf);
  for (const node of nodes) {
    if (node.viewSrc !== null && node.op !== Op.NONE) add(views, node.viewSrc, 1);
    if (node.flags & TensorFlag.INPUT) allocate(node);
    for (const src of node.src) {
      add(children, src, 1);
      if (src.flags & TensorFlag.INPUT) allocate(src);
    }
  }
  for (const node of nodes) {
    for (const parent of node.src) allocate(parent);
    allocate(node);
    for (const parent of node.src) {
      add(children, parent, -1);
      if (children.get(parent) !== 0 || (views.get(parent) ?? 0) !== 0) continue;
      const vs = parent.viewSrc;
      if (vs !== null) {
        add(views, vs, -1);
        if (views.get(vs) === 0 && (children.get(vs) ?? 0) === 0 && allocated.has(vs)) free(vs);
      } else if (allocated.has(parent)) free(parent);
    }
  }
  return max;
}

/**
 * Throws {@linkcode GraphFullError} when placing `graph` could overflow ggml-alloc's free list
 * (an abort in `wsp_ggml_dyn_tallocr_insert_block`): more than {@linkcode MAX_LIVE_ALLOCATIONS}
 * tensors allocated at once.
 */
export function checkAllocBound(what: string, graph: Graph): void {
  const nodes = graph.nodes(), leafs = graph._leafs();
  // Cheap first: fewer tensors than the limit in all cannot be over it at once.
  if (nodes.length + leafs.length <= MAX_LIVE_ALLOCATIONS) return;
  const n = maxLiveAllocations(nodes, leafs);
  if (n > MAX_LIVE_ALLOCATIONS) {
    throw new GraphFullError(
      `${what}: placing this graph keeps up to ${n} tensors allocated at once; ggml-alloc tracks at most ${MAX_FREE_BLOCKS} free ranges per buffer, which holds for ${MAX_LIVE_ALLOCATIONS} — ` +
        `split the graph, or give the long-lived tensors memory of their own (allocCtxTensors) so the allocator does not place them`,
    );
  }
}
