/**
 * One side of bench/llamafile.mjs: the prompt-processing matmuls of Gemma 3 270M (weight types
 * and shapes of its Q4_K_M file, a batch of 128 f32 rows), on one thread, timed in process CPU
 * time (steadier than wall time on a shared machine: no other process's time is counted).
 * Prints one JSON line: GFLOP/s per case, best of 7 samples of 3 computes.
 *
 *   WSP_GGML_LIBRARY_PATH=DIR node --import tsx bench/llamafile_matmul.ts
 *
 * @module
 */
import process from "node:process";
import { Context, quantize, systemInfo, Type } from "../mod.ts";

/** [name, weight type, K (row length), M (rows)]: the model's matmuls by type and shape. */
export const CASES: ReadonlyArray<readonly [string, Type, number, number]> = [
  ["q5_0 640x2048 (ffn_gate/up)", Type.Q5_0, 640, 2048],
  ["q8_0 640x1024 (attn_q)", Type.Q8_0, 640, 1024],
  ["q4_K 2048x640 (ffn_down)", Type.Q4_K, 2048, 640],
  ["f16 640x1024", Type.F16, 640, 1024],
  ["f32 640x640", Type.F32, 640, 640],
];
const N = 128;

let seed = 1;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff) - 0.5;
const out: Record<string, number> = {};
for (const [name, type, k, m] of CASES) {
  const ctx = new Context({ memSize: 64 << 20 });
  const w = new Float32Array(k * m).map(rnd);
  const a = ctx.newTensor2d(type, k, m).set(type === Type.F32 || type === Type.F16 ? w : quantize(type, w));
  const b = ctx.newTensor2d(Type.F32, k, N).set(new Float32Array(k * N).map(rnd));
  const g = ctx.newGraph().buildForwardExpand(ctx.mulMat(a, b));
  g.compute({ nThreads: 1 });
  let best = Infinity;
  for (let r = 0; r < 7; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < 3; i++) g.compute({ nThreads: 1 });
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 3 / 1e6);
  }
  out[name] = +(2 * k * m * N / best / 1e9).toFixed(2);
  ctx.free();
}
console.log(JSON.stringify({ variant: systemInfo().cpuVariant.name, gflops: out }));
