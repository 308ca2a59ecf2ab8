// The timed side of bench/index_scan.mjs (one process per runtime): what the scan of index data
// before a compute costs (src/core/indices.ts: the ids of get_rows, set_rows, add_id, mul_mat_id,
// get_rows_back, ssm_scan that JS set are checked against their bound), per index, against the
// compute of the same get_rows on the CPU backend.
//
//   <runtime> bench/index_scan.ts [--reps R] [--threads T]
//
// For each N: a table f32 [4, 1024], ids i32 [N] (random rows), `getRows(table, ids)`; the scan
// (the graph's cached plan: only the typed-array pass over the ids) and `graph.compute` are timed
// in turn, R samples each after a warm-up; one JSON line per N with the medians.
import process from "node:process";
import { parseArgs } from "node:util";
import { Context, systemInfo, Type } from "../mod.ts";
import { createRng } from "../src/llm/sampler.ts";

const { values: opts } = parseArgs({
  args: process.argv.slice(2),
  options: { reps: { type: "string", default: "15" }, threads: { type: "string", default: "1" } },
});
const REPS = Number(opts.reps), THREADS = Number(opts.threads);
const ROWS = 1024, WIDTH = 4;
const rand = createRng(7);
const now = () => Number(process.hrtime.bigint());
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];

for (const n of [1024, 65536, 1048576]) {
  using ctx = new Context({ memSize: 2 * n * WIDTH * 4 + n * 4 + (8 << 20) });
  const table = ctx.newTensor2d(Type.F32, WIDTH, ROWS).set(Float32Array.from({ length: WIDTH * ROWS }, (_, i) => i));
  const ids = ctx.newTensor1d(Type.I32, n).set(Int32Array.from({ length: n }, () => Math.floor(rand() * ROWS)));
  const out = ctx.getRows(table, ids);
  const graph = ctx.newGraph().buildForwardExpand(out);
  graph.compute({ nThreads: THREADS }); // plans the index checks, warms the caches
  // Enough iterations per sample for ~1 ms of scanning.
  const iters = Math.max(1, Math.round(1_000_000 / n));
  const scan: number[] = [], compute: number[] = [];
  for (let r = 0; r < REPS + 1; r++) {
    let t0 = now();
    for (let i = 0; i < iters; i++) graph._checkIndices("bench");
    const s = (now() - t0) / iters;
    t0 = now();
    for (let i = 0; i < iters; i++) graph.compute({ nThreads: THREADS });
    const c = (now() - t0) / iters;
    if (r > 0) {
      scan.push(s);
      compute.push(c);
    }
  }
  // The rows gathered are the table's (row r holds 4r … 4r + 3).
  const got = out.get() as Float32Array, want = ids.get() as Int32Array;
  for (let i = 0; i < n; i += 997) if (got[i * WIDTH] !== want[i] * WIDTH) throw new Error(`getRows row ${i}: ${got[i * WIDTH]}, want ${want[i] * WIDTH}`);
  console.log(JSON.stringify({
    n,
    scan_ns: median(scan),
    scan_ns_per_index: median(scan) / n,
    compute_ns: median(compute),
    scan_share: median(scan) / median(compute),
    variant: systemInfo().cpuVariant.name,
  }));
}
