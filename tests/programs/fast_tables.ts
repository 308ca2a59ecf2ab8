// Prints whether V8 keeps the tables every call loads its function from in fast-properties mode
// (tests/api.test.ts runs it with --allow-natives-syntax), beside a control that it does not.
import { loadLibrary } from "../../mod.ts";
import { opChecks } from "../../src/core/checks.ts";

const isFast = new Function("o", "return %HasFastProperties(o)") as (o: object) => boolean;
const lib = loadLibrary();
const control: Record<string, () => number> = {};
for (let i = 0; i < Object.keys(lib.symbols).length; i++) control[`f${i}`] = () => i;
console.log(JSON.stringify({ control: isFast(control), opChecks: isFast(opChecks), symbols: isFast(lib.symbols), handles: isFast(lib.handles), async: isFast(lib.async) }));
