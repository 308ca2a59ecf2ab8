/**
 * @ignore @internal The strided extents of views and of `set` / `acc`, checked where
 * the node is built. ggml checks only a view's contiguous size
 * (`data_size + view_offs <= wsp_ggml_nbytes(view_src)`) and nothing for
 * `set` / `acc`: a view whose strides run past its source, or a `set` /
 * `acc` whose offset and strides put `b` past the end of `a`, reads or
 * writes outside the tensor's memory at compute time.
 *
 * @module
 */
import { BoundsError } from "./errors.ts";
import type { Tensor } from "./tensor.ts";

/**
 * The bytes a strided block spans: `offset` + the last row's start
 * (`Σ (ne[i] − 1) · nb[i]` for i ≥ 1) + one row of `ne0` elements; 0 when
 * a dimension is empty.
 */
function span(rowBytes: number, ne: readonly number[], nb: readonly number[], offset: number): number {
  for (const n of ne) if (n === 0) return 0;
  let end = offset + rowBytes;
  for (let i = 1; i < ne.length; i++) end += (ne[i] - 1) * nb[i - 1];
  return end;
}

/**
 * A view `[ne…]` with strides `nb1…` at `offset` into `a` (view1d … view4d)
 * stays inside the storage it views (the source's source for a view of a
 * view: `viewOffset` is `a`'s own offset in it).
 *
 * @throws {BoundsError} when the last element lies past the end
 */
export function checkViewExtent(op: string, a: Tensor, ne: readonly number[], nb: readonly number[], offset: number, viewOffset: number): void {
  if (nb.length === 0) return; // view1d: the contiguous size is the extent (checked by checkView)
  const { blckSize, typeSize } = a.traits;
  const base = a.viewSrc ?? a;
  const end = span((ne[0] / blckSize) * typeSize, ne, nb, offset + viewOffset);
  if (end > base.nbytes) {
    throw new BoundsError(`${op}: a view of [${ne.join(", ")}] with strides [${nb.join(", ")}] at offset ${offset + viewOffset} reaches byte ${end}, past the ${base.nbytes} bytes of ${base.describe()}`);
  }
}

/**
 * `set*` / `acc*`: `b` written into `a` at `offset` with `a`'s row strides
 * `nb1, nb2, nb3` stays inside `a`.
 *
 * @throws {BoundsError} when the last element of `b` lands past the end of `a`
 */
export function checkSetExtent(op: string, a: Tensor, b: Tensor, nb: readonly number[], offset: number): void {
  const ne = b.shape;
  const end = span(ne[0] * a.traits.typeSize, ne, nb, offset);
  if (end > a.nbytes) {
    throw new BoundsError(`${op}: ${b.describe()} written at offset ${offset} with strides [${nb.join(", ")}] reaches byte ${end}, past the ${a.nbytes} bytes of ${a.describe()}`);
  }
}
