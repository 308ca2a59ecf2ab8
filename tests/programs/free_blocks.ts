// Child of tests/alloc_bound.test.ts: the graph that fragments ggml-alloc's free list, placed
// through the raw wsp_ggml_gallocr_* calls (no TS check) to show that ggml aborts on it.
import process from "node:process";
import { Backend } from "../../mod.ts";
import { library } from "../../src/runtime/loader.ts";
import { fragmentingGraph } from "../alloc_bound_graph.ts";

const s = library().symbols;
const cpu = Backend.cpu();
const ga = s.wsp_ggml_gallocr_new(cpu.defaultBufferType.pointer);
const { graph } = fragmentingGraph(Number(process.argv[2] ?? 600));
const ok = s.wsp_ggml_gallocr_alloc_graph(ga, graph.pointer);
console.log(`not aborted: ${ok}`);
