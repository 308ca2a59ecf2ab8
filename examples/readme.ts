import { Context, Type } from "../mod.ts";

// A context owns its tensors; `using` frees it at the end of the scope.
using ctx = new Context({ memSize: 16 * 1024 * 1024 });
const a = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 2, 3, 4, 5, 6]));
const b = ctx.newTensor2d(Type.F32, 3, 2).set(new Float32Array([1, 0, 1, 0, 1, 0]));
const c = ctx.mulMat(a, b); // c[i][j] = Σₖ a[j][k]·b[i][k], shape [2, 2]
const y = ctx.softMax(ctx.scale(c, 0.5));
ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 2 });
console.log(c.shape, c.toArray(), Array.from(y.get(Float32Array), (v) => v.toFixed(3)));
