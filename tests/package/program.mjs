// The program of tests/package/pack.test.ts, run unchanged under Node, Bun and
// Deno in a project that installed wsp-ggml from its tarballs: it computes a
// small graph and prints one JSON line for the test to check.
import { Context, systemInfo, Type } from "wsp-ggml";

const ctx = new Context({ memSize: 16 << 20 });
try {
  const a = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
  const b = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
  const c = ctx.mulMat(a, b);
  const y = ctx.softMax(ctx.scale(c, 0.5));
  ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 2 });
  const info = systemInfo();
  console.log(JSON.stringify({
    runtime: info.runtime.name,
    shape: c.shape,
    c: Array.from(c.get(Float32Array)),
    y: Array.from(y.get(Float32Array)),
    source: info.library.source,
    base: info.library.base,
    variant: info.cpuVariant.name,
    version: info.version,
    ggmlCommit: info.ggmlCommit,
  }));
} finally {
  ctx.free();
}
