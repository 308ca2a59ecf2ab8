/**
 * Matrix products on the CPU backend with the weights in f32, f16, q8_0 and
 * q4_0 (`ctx.mulMat(a, b)`, `b` in f32), each checked against a float64
 * product of the original values, with its time.
 *
 *   deno run -A examples/matmul.ts [--m 256] [--n 256] [--k 512] [--threads 2] [--repeat 10] [--json]
 *   bun examples/matmul.ts …
 *   node --import tsx examples/matmul.ts …
 *
 * The error is `max |C - R| / max |R|` against the float64 product R of the
 * f32 inputs: it includes the rounding of the weights to the type, and of
 * `b` to what the kernel multiplies with (f16 for f16, q8_0 for the
 * quantized types), so each type has its own tolerance.
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { Context, quantize, Type } from "../mod.ts";
import { rng } from "./demo/data.ts";

/** Tolerance of the normalised max error, per type (uniform inputs in [-1, 1]). */
export const TOLERANCE: Record<string, number> = { f32: 1e-5, f16: 2e-3, q8_0: 2e-2, q4_0: 1.5e-1 };
const TYPES: [string, Type][] = [["f32", Type.F32], ["f16", Type.F16], ["q8_0", Type.Q8_0], ["q4_0", Type.Q4_0]];

/** One row of the report. */
export interface MatmulResult {
  readonly type: string;
  readonly maxError: number;
  readonly tolerance: number;
  readonly ok: boolean;
  /** Median milliseconds of one product. */
  readonly ms: number;
  readonly gflops: number;
}

/** Runs every type's product of an `[k, m]` matrix by a `[k, n]` one. */
export function run(m: number, n: number, k: number, threads: number, repeat: number): MatmulResult[] {
  const random = rng(7);
  const a = Float32Array.from({ length: k * m }, () => 2 * random() - 1);
  const b = Float32Array.from({ length: k * n }, () => 2 * random() - 1);
  // ggml's mulMat contracts dimension 0 of both: C[j][i] = Σₖ A[i][k]·B[j][k] (row i of a, row j of b).
  const ref = new Float64Array(m * n);
  for (let j = 0; j < n; j++) {
    for (let i = 0; i < m; i++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += a[i * k + p] * b[j * k + p];
      ref[j * m + i] = s;
    }
  }
  const refMax = ref.reduce((x, v) => Math.max(x, Math.abs(v)), 0);
  const out: MatmulResult[] = [];
  for (const [name, type] of TYPES) {
    using ctx = new Context({ memSize: 4 * (k * m + k * n + m * n) + (4 << 20) });
    const ta = ctx.newTensor2d(type, k, m);
    if (type === Type.F32 || type === Type.F16) ta.set(a);
    else ta.set(quantize(type, a, { nPerRow: k }));
    const tb = ctx.newTensor2d(Type.F32, k, n).set(b);
    const c = ctx.mulMat(ta, tb);
    const graph = ctx.newGraph().buildForwardExpand(c);
    graph.compute({ nThreads: threads }); // warm-up (and the result checked)
    const got = c.get(Float32Array);
    let err = 0;
    for (let i = 0; i < ref.length; i++) err = Math.max(err, Math.abs(got[i] - ref[i]));
    const times: number[] = [];
    for (let r = 0; r < repeat; r++) {
      const t0 = performance.now();
      graph.compute({ nThreads: threads });
      times.push(performance.now() - t0);
    }
    times.sort((x, y) => x - y);
    const ms = times[Math.floor(times.length / 2)];
    const maxError = err / refMax;
    out.push({ type: name, maxError, tolerance: TOLERANCE[name], ok: maxError <= TOLERANCE[name], ms, gflops: (2 * m * n * k) / (ms * 1e6) });
  }
  return out;
}

function main(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: { m: { type: "string" }, n: { type: "string" }, k: { type: "string" }, threads: { type: "string" }, repeat: { type: "string" }, json: { type: "boolean" } },
  });
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const m = num(values.m, 256), n = num(values.n, 256), k = num(values.k, 512), threads = num(values.threads, 2), repeat = num(values.repeat, 10);
  if (![m, n, k, threads, repeat].every((v) => Number.isInteger(v) && v >= 1) || k % 32 !== 0) {
    console.error("matmul: --m, --n, --threads, --repeat must be positive integers, --k a multiple of 32 (the q8_0 / q4_0 block)");
    return 2;
  }
  const results = run(m, n, k, threads, repeat);
  if (values.json) {
    console.log(JSON.stringify({ m, n, k, threads, results }));
  } else {
    console.log(`C = A·B with A [k=${k}, m=${m}] in each type, B [k=${k}, n=${n}] f32, ${threads} thread(s), median of ${repeat}`);
    console.log(`${"type".padEnd(6)} ${"max error".padStart(10)} ${"tolerance".padStart(10)} ${"ms".padStart(8)} ${"GFLOP/s".padStart(8)}`);
    for (const r of results) {
      console.log(`${r.type.padEnd(6)} ${r.maxError.toExponential(2).padStart(10)} ${r.tolerance.toExponential(1).padStart(10)} ${r.ms.toFixed(3).padStart(8)} ${r.gflops.toFixed(1).padStart(8)}  ${r.ok ? "ok" : "TOO LARGE"}`);
    }
  }
  return results.every((r) => r.ok) ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
