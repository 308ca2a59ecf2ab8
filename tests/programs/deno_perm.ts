// The programs of the package README's Deno permission table (tests/deno_permissions.test.ts runs
// each with exactly its row's flags, then with one fewer): `core` computes a graph, writes and
// reads a GGUF file, runs the LLM one step and transcribes half a second, from the model files
// given; `cache-warm` gets the same models through ensureModel() / ensureWhisperModel() from a
// cache that already holds them, and loads them. Prints "ok <part>" on success.
import process from "node:process";
import { Context, GgufType, GgufWriter, readGguf, Type } from "../../src/mod.ts";
import { ensureModel, GemmaModel } from "../../src/llm/mod.ts";
import { ensureWhisperModel, WhisperModel } from "../../src/whisper/mod.ts";

const [part, modelArg, whisperArg, dir] = process.argv.slice(2);
const model = part === "cache-warm" ? await ensureModel() : modelArg;
const whisper = part === "cache-warm" ? await ensureWhisperModel({ type: "q8_0" }) : whisperArg;

const ctx = new Context({ memSize: 1 << 20 });
const a = ctx.newTensor2d(Type.F32, 2, 2).setName("a").set(new Float32Array([1, 2, 3, 4]));
const c = ctx.mulMat(a, a);
ctx.newGraph().buildForwardExpand(c).compute();
if (c.get(Float32Array)[0] !== 5) throw new Error(`mulMat: ${c.get(Float32Array)}`);
const writer = new GgufWriter();
writer.set("general.name", GgufType.STRING, "perm").addTensor(a).write(`${dir}/perm.gguf`);
writer.free();
if (readGguf(`${dir}/perm.gguf`).getString("general.name") !== "perm") throw new Error("gguf round trip");
ctx.free();

using llm = GemmaModel.load(model, { nCtx: 32 });
if (llm.forward([2, 100]).length !== llm.hparams.nVocab) throw new Error("forward");
const w = await WhisperModel.load(whisper);
await w.transcribe(new Float32Array(8000), { language: "en" });
w.free();
console.log(`ok ${part}`);
