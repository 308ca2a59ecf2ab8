// Child process of tests/api.test.ts: loads the library with the CPU variant
// named by argv / env and computes one op.
import process from "node:process";
import { Context, loadLibrary, Type } from "../../mod.ts";

const lib = loadLibrary({ cpuVariant: process.env.WSP_TEST_VARIANT });
using ctx = new Context({ memSize: 1 << 20 });
const a = ctx.newTensor1d(Type.F32, 3).set(new Float32Array([1, 2, 3]));
const y = ctx.sqr(a);
ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 1 });
console.log(JSON.stringify({ variant: lib.cpuVariant, source: lib.location.source, y: y.toArray() }));
