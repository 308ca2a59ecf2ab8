/**
 * @ignore @internal The data-dependent preconditions of the index ops, checked
 * before a compute: `get_rows`, `set_rows`, `add_id`, `mul_mat_id`,
 * `get_rows_back` and `ssm_scan` read row / expert / sequence numbers from a
 * tensor's data. ggml checks them with `WSP_GGML_ASSERT` inside the CPU
 * kernels (abort), with a plain `assert` compiled out of release builds
 * (`mul_mat_id`: the kernel reads `n_as` rows past its counters, SIGSEGV), or
 * not at all (`get_rows_back`, `ssm_scan`: writes and reads out of bounds).
 *
 * Where the indices come from decides how they are checked:
 * - data set from JS (a leaf, or a view / reshape / permute / transpose of
 *   one): its values are scanned (a typed-array min/max) against the bound;
 * - computed by the graph: proved in range from the producing op, or the
 *   graph is refused:
 *   - `argsort` (and `top_k`, a view of it) yields 0 … ne0(src) − 1: in range
 *     when ne0(src) ≤ the bound;
 *   - `argmax` yields 0 … ne0(src) − 1: the same;
 *   - `cont`, `cpy`, `dup` copy values: what holds for the source holds;
 *   - `get_rows` of an i32 table picks values of the table: what holds for
 *     the table holds;
 *   - any other op (arithmetic on indices, `set_rows` into them, …) cannot be
 *     bounded without computing: {@linkcode UnsupportedOpError}.
 *   A leaf some non-view node of the same graph writes into (an in-place op,
 *   a `cpy` into it) is treated as computed: its data at the time of the read
 *   is not the data scanned before the compute.
 *
 * @module
 */
import { Op, Type } from "../ffi/bindings.gen.ts";
import { BoundsError, UnsupportedOpError } from "./errors.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { runtime } from "../runtime/runtime.ts";
import { layouts } from "../ffi/bindings.gen.ts";
import type { Tensor } from "./tensor.ts";

const BUFFER = layouts.wsp_ggml_tensor.fields.buffer.offset;

/** The ops that read indices: which source holds them, and the exclusive bound of their values. */
function indexUse(n: Tensor): { idx: Tensor; bound: number; what: string } | null {
  switch (n.op) {
    case Op.GET_ROWS: {
      const [a, b] = n.src;
      return { idx: b, bound: a.ne(1), what: `row numbers of ${a.describe()} (ne1 = ${a.ne(1)})` };
    }
    case Op.SET_ROWS:
      return { idx: n.src[1], bound: n.ne(1), what: `row numbers of the destination (ne1 = ${n.ne(1)})` };
    case Op.GET_ROWS_BACK:
      return { idx: n.src[1], bound: n.ne(1), what: `row numbers of the result (ne1 = ${n.ne(1)})` };
    case Op.ADD_ID: {
      const b = n.src[1];
      return { idx: n.src[2], bound: b.ne(1), what: `rows of ${b.describe()} (ne1 = ${b.ne(1)})` };
    }
    case Op.MUL_MAT_ID: {
      const as = n.src[0];
      return { idx: n.src[2], bound: as.ne(2), what: `experts of ${as.describe()} (ne2 = ${as.ne(2)})` };
    }
    case Op.SSM_SCAN: {
      const s = n.src[0];
      return { idx: n.src[6], bound: s.ne(3), what: `sequences of the state ${s.describe()} (ne3 = ${s.ne(3)})` };
    }
    default:
      return null;
  }
}

const VIEW_OPS: ReadonlySet<number> = new Set([Op.VIEW, Op.RESHAPE, Op.PERMUTE, Op.TRANSPOSE]);
const COPY_OPS: ReadonlySet<number> = new Set([Op.CONT, Op.CPY, Op.DUP]);

/** One index tensor to scan before each compute. */
interface Scan {
  readonly node: Tensor;
  readonly idx: Tensor;
  readonly bound: number;
  readonly what: string;
  /** The values to scan instead of the tensor's data (contiguous): an optimizer's dataset feeding the inputs. */
  readonly data?: { readonly buffer: ArrayBuffer; readonly offset: number; readonly count: number };
}

/** What to do before each compute of a graph: the index tensors to scan (empty for most graphs). */
export type IndexPlan = readonly Scan[];

/** The root a tensor's storage belongs to (the end of its view chain). */
const base = (t: Tensor): Tensor => t.viewSrc ?? t;

/**
 * Plans the index checks of `nodes` (a graph's nodes, in any order): throws
 * for indices computed in the graph that cannot be proved in range; returns
 * the tensors whose data must be scanned before each compute.
 *
 * @throws {BoundsError} for computed indices whose range exceeds the bound
 * @throws {UnsupportedOpError} for computed indices that cannot be bounded
 */
export function planIndexChecks(what: string, nodes: readonly Tensor[]): IndexPlan {
  let uses: { node: Tensor; idx: Tensor; bound: number; what: string }[] | undefined;
  for (const n of nodes) {
    const op = n.op;
    if (op !== Op.GET_ROWS && op !== Op.SET_ROWS && op !== Op.GET_ROWS_BACK && op !== Op.ADD_ID && op !== Op.MUL_MAT_ID && op !== Op.SSM_SCAN) continue;
    const u = indexUse(n);
    if (u) (uses ??= []).push({ node: n, ...u });
  }
  if (!uses) return [];
  // Storage written by the graph's own non-view nodes: a leaf's data read there may change during the compute.
  const written = new Set<Tensor>();
  for (const n of nodes) if (n.viewSrc !== null && !VIEW_OPS.has(n.op)) written.add(base(n));
  const plan: Scan[] = [];
  for (const u of uses) {
    const refuse = (t: Tensor, why: string): never => {
      throw new UnsupportedOpError(
        `${what}: the indices ${u.idx.describe()} of ${u.node.describe()} (${u.what}) are ${why}; ggml does not check them (abort or memory corruption). Compute the indices in a graph of their own, or set them from JS`,
      );
    };
    let t = u.idx;
    for (let depth = 0;; depth++) {
      if (depth > 10_000) refuse(t, "computed by too long a chain");
      const op = t.op;
      if (op === Op.NONE) {
        if (written.has(base(t))) refuse(t, `in ${base(t).describe()}, which a node of the graph writes into`);
        plan.push({ node: u.node, idx: t, bound: u.bound, what: u.what });
        break;
      }
      if (VIEW_OPS.has(op)) {
        // A view of a leaf's storage: scan the view itself (with its strides); of computed data: follow its source.
        if (base(t).op === Op.NONE) {
          if (written.has(base(t))) refuse(t, `in ${base(t).describe()}, which a node of the graph writes into`);
          plan.push({ node: u.node, idx: t, bound: u.bound, what: u.what });
          break;
        }
        t = t.src[0];
        continue;
      }
      if (COPY_OPS.has(op) && t.src[0].type === t.type) {
        t = t.src[0];
        continue;
      }
      if (op === Op.GET_ROWS && t.type === Type.I32 && t.src[0].type === Type.I32) {
        // Rows picked from an i32 table: the table's values bound them (its own row numbers are checked as an index use).
        t = t.src[0];
        continue;
      }
      if (op === Op.ARGSORT || op === Op.ARGMAX) {
        const n = t.src[0].ne(0);
        if (n > u.bound) {
          throw new BoundsError(`${what}: the indices of ${u.node.describe()} come from ${op === Op.ARGSORT ? "argsort" : "argmax"} over ${n} values, so they reach ${n - 1}: out of range for the ${u.what}`);
        }
        break; // 0 … n − 1 < bound
      }
      const name = Object.entries(Op).find(([, v]) => v === op)?.[0] ?? String(op);
      refuse(t, `computed by ${t.describe()} (op ${name}), whose values cannot be bounded before the compute`);
    }
  }
  return plan;
}

/** Reused for index data outside host memory (read with wsp_ggml_backend_tensor_get). */
let scratch = new ArrayBuffer(0);

/** The bytes of `t`'s data span: JS memory for a pool, the native memory of a host buffer, else a copy. */
function dataOf(t: Tensor): { buffer: ArrayBuffer; offset: number } {
  const data = t._data;
  const n = t.nbytes;
  const src = base(t);
  const buf = ffi.readPointer(src._ptr, BUFFER);
  const s = runtime().lib.symbols;
  if (buf === 0) return t.context._locate(data, n, "compute: indices");
  if (s.wsp_ggml_backend_buffer_is_host(buf)) return { buffer: ffi.view(data, n), offset: 0 };
  if (scratch.byteLength < n) scratch = new ArrayBuffer(Math.max(n, 2 * scratch.byteLength));
  s.wsp_ggml_backend_tensor_get(t._ptr, ffi.addressOf(scratch), 0, n);
  keepAlive(scratch);
  return { buffer: scratch, offset: 0 };
}

/**
 * Scans the planned index tensors: each value must be in 0 … bound − 1.
 *
 * @throws {BoundsError} naming the node, the index and the bound
 */
export function scanIndices(what: string, plan: IndexPlan): void {
  for (const p of plan) {
    const t = p.idx;
    const [ne0, ne1, ne2, ne3] = t.shape;
    if (ne0 * ne1 * ne2 * ne3 === 0) continue;
    const wide = t.type === Type.I64;
    const { buffer, offset } = p.data ?? dataOf(t);
    let bad = -1, badAt = -1;
    if (p.data || (t.isContiguous && offset % 4 === 0)) {
      const n = p.data ? p.data.count : ne0 * ne1 * ne2 * ne3;
      const bound = p.bound;
      if (!wide) {
        const a = new Int32Array(buffer, offset, n);
        // Unsigned compare: negatives become ≥ 2^31 ≥ bound.
        for (let i = 0; i < n; i++) {
          if ((a[i] >>> 0) >= bound) {
            bad = a[i], badAt = i;
            break;
          }
        }
      } else {
        const a = new Int32Array(buffer, offset, 2 * n);
        for (let i = 0; i < n; i++) {
          const lo = a[2 * i] >>> 0, hi = a[2 * i + 1];
          if (hi !== 0 || lo >= bound) {
            bad = hi * 4294967296 + lo, badAt = i;
            break;
          }
        }
      }
    } else {
      const v = new DataView(buffer, offset);
      const nb = [t.nb(0), t.nb(1), t.nb(2), t.nb(3)];
      outer: for (let i3 = 0; i3 < ne3; i3++) {
        for (let i2 = 0; i2 < ne2; i2++) {
          for (let i1 = 0; i1 < ne1; i1++) {
            for (let i0 = 0; i0 < ne0; i0++) {
              const at = i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
              const x = wide ? Number(v.getBigInt64(at, true)) : v.getInt32(at, true);
              if (x < 0 || x >= p.bound) {
                bad = x, badAt = ((i3 * ne2 + i2) * ne1 + i1) * ne0 + i0;
                break outer;
              }
            }
          }
        }
      }
    }
    if (badAt >= 0) {
      throw new BoundsError(`${what}: ${p.node.describe()} reads index ${bad} (element ${badAt} of ${t.describe()}), outside the ${p.bound} ${p.what}`);
    }
  }
}

/** The nodes `root` depends on (itself included), leafs excluded: a model's forward graph without building one. */
export function nodesOf(root: Tensor): Tensor[] {
  const seen = new Set<Tensor>(), out: Tensor[] = [], stack = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (seen.has(t)) continue;
    seen.add(t);
    if (t.op !== Op.NONE) out.push(t);
    for (const s of t.src) stack.push(s);
  }
  return out;
}
