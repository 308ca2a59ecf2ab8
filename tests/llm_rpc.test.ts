// The Gemma 3 270M runner with its layers split across two RPC servers on 127.0.0.1 and the local
// CPU (GemmaModel's `split` option, src/llm/model.ts), against the same model on the CPU alone:
//   - layers 0-5 (with the embedding and the output) local, 6-11 on server A, 12-17 on server B,
//     both servers in-process RpcServers serving a CPU backend with one thread: the logits of
//     every prompt position and of 8 greedy decode steps are bit-identical to the CPU alone (the
//     same CPU kernels compute every op, on the same bytes), and the greedy tokens equal;
//   - server B a `wsp-ggml rpc-server` child killed (SIGKILL) mid-generation: the next step
//     throws RpcError, the process lives on, the model frees, and a CPU model still computes.
// Every server binds 127.0.0.1 on a port the system picks; the child is killed at the end.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Backend, GgmlError, type GgufFile, readGguf, RpcError, RpcServer } from "../src/mod.ts";
import { _setRpcBackendFactory } from "../src/backend/backend.ts";
import { parseGenerateOptions } from "../src/cli/generate.ts";
import { UsageError } from "../src/cli/common.ts";
import { END_OF_TURN_ID, generate, type TokenizerLike } from "../src/llm/generate.ts";
import { evenLayers, GemmaModel } from "../src/llm/model.ts";
import { argmax } from "../src/llm/sampler.ts";
import { gemmaModel } from "./llm_model.ts";
import { root } from "./run.ts";

const model = await gemmaModel();
if (model.skip) console.warn(`skipping the split-model tests: ${model.skip}`);
const skip = model.skip;
const file: GgufFile | undefined = skip ? undefined : readGguf(model.path);
// repack: false: the RPC servers hold plain weights, and bit-identical logits need the same kernels on every layer.
const OPTS = { threads: 1, device: "cpu", nCtx: 256, ubatch: 64, repack: false } as const;
const STEPS = 8;

/** The prompts of llama.cpp's tokenizer (tests/fixtures/llm/llama_cpp.json). */
const fixture = JSON.parse(readFileSync(join(root, "tests", "fixtures", "llm", "llama_cpp.json"), "utf8")) as { generations: { prompt: number[] }[] };
const PROMPTS = fixture.generations.map((g) => g.prompt);
const PROMPT = PROMPTS[0];

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill("SIGKILL");
});

/** Logits of every prompt position, then of `steps` greedy decode steps, and the greedy ids. */
function run(m: GemmaModel, steps: number, tokens = PROMPT): { prompt: Float32Array; decode: Float32Array[]; ids: number[] } {
  m.reset();
  const prompt = m.forward(tokens, { allLogits: true });
  const nVocab = m.hparams.nVocab;
  let last = prompt.subarray(prompt.length - nVocab);
  const decode: Float32Array[] = [], ids: number[] = [];
  for (let i = 0; i < steps; i++) {
    const id = argmax(last);
    ids.push(id);
    last = m.forward([id]);
    decode.push(last);
  }
  return { prompt, decode, ids };
}

/** Elements that differ in their bits, the largest absolute difference and Σ(a−b)²/Σb². */
function compare(a: Float32Array, b: Float32Array) {
  assert.equal(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length), ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let differ = 0, maxAbs = 0, num = 0, den = 0;
  for (let i = 0; i < a.length; i++) {
    if (ua[i] !== ub[i]) differ++;
    const d = a[i] - b[i];
    maxAbs = Math.max(maxAbs, Math.abs(d));
    num += d * d;
    den += b[i] * b[i];
  }
  return { differ, maxAbs, nmse: num / den };
}

let cpuRuns: ReturnType<typeof run>[] | undefined;
/** The CPU-alone reference of every prompt, computed once. */
function cpuAlone(): ReturnType<typeof run>[] {
  if (!cpuRuns) {
    using m = GemmaModel.fromGguf(file!, OPTS);
    const t0 = performance.now();
    cpuRuns = PROMPTS.map((p) => run(m, STEPS, p));
    console.log(`CPU alone: ${PROMPTS.length} prompts (${PROMPTS.map((p) => p.length).join(", ")} tokens) + ${STEPS} steps each in ${(performance.now() - t0).toFixed(0)} ms, splits ${m.splits}`);
  }
  return cpuRuns;
}

const SPLIT = evenLayers(18, 3); // [[0..5], [6..11], [12..17]]

test("Backend.rpc(endpoint) is rpcBackend(endpoint)", () => {
  using server = RpcServer.start({ port: 0, nThreads: 1 });
  using remote = Backend.rpc(server.endpoint);
  assert.equal(remote.name, `RPC[${server.endpoint}]`);
  assert.throws(() => Backend.rpc("no port"), /host:port/);
  // Without the RPC module's hook (backend.ts alone): a clear error, not a crash.
  const hook = _setRpcBackendFactory(undefined);
  try {
    assert.throws(() => Backend.rpc(server.endpoint), (e: unknown) => e instanceof GgmlError && e.code === "UNSUPPORTED" && /RPC module is not loaded/.test(e.message));
  } finally {
    _setRpcBackendFactory(hook);
  }
});

test("generate --rpc: endpoints parsed, malformed ones a usage error", () => {
  assert.deepEqual(parseGenerateOptions(["--prompt", "x", "--rpc", "127.0.0.1:50052,localhost:50053"])!.rpc, ["127.0.0.1:50052", "localhost:50053"]);
  assert.deepEqual(parseGenerateOptions(["--prompt", "x"])!.rpc, []);
  for (const bad of ["", "host", "host:0", "host:70000", "a:1,,b:2"]) assert.throws(() => parseGenerateOptions(["--prompt", "x", "--rpc", bad]), UsageError, bad);
});

test("layers split across two RPC servers and the local CPU: logits bit-identical to the CPU alone, the same greedy tokens", { skip }, () => {
  assert.equal(file!.tensors.filter((t) => t.name.endsWith(".attn_q.weight")).length, 18, "Gemma 3 270M has 18 layers");
  const want = cpuAlone();
  using a = RpcServer.start({ port: 0, nThreads: 1 }), b = RpcServer.start({ port: 0, nThreads: 1 });
  using ra = Backend.rpc(a.endpoint), rb = Backend.rpc(b.endpoint);
  let t0 = performance.now();
  {
    using m = GemmaModel.fromGguf(file!, { ...OPTS, split: { backends: [ra, rb], layers: SPLIT.slice(1) } });
    const loadMs = performance.now() - t0;
    assert.equal(m.layerBackends.map((x) => x === ra ? "A" : x === rb ? "B" : x === m.backend ? "L" : "?").join(""), "LLLLLLAAAAAABBBBBB");
    assert.equal(m.backends.at(-1), m.backend, "the local CPU last");
    t0 = performance.now();
    const gots = PROMPTS.map((p) => run(m, STEPS, p));
    const runMs = performance.now() - t0;
    // CPU (embedding, layers 0-5) → A (6-11) → B (12-17) → CPU (output): the scheduler ran the layers where their weights are.
    assert.ok(m.splits >= 4 && m.splits <= 6, `splits: ${m.splits}`);
    console.log(`split over local + 2 RPC servers: load ${loadMs.toFixed(0)} ms, ${PROMPTS.length} prompts + ${STEPS} steps each ${runMs.toFixed(0)} ms, splits ${m.splits}`);
    gots.forEach((got, k) => {
      const p = compare(got.prompt, want[k].prompt);
      const d = got.decode.map((x, i) => compare(x, want[k].decode[i]));
      console.log(
        `  prompt ${k}: prompt logits ${p.differ} of ${got.prompt.length} differ (max |Δ| ${p.maxAbs}, nMSE ${p.nmse}); ` +
          `decode logits ${d.reduce((s, x) => s + x.differ, 0)} of ${STEPS * got.decode[0].length} differ (max |Δ| ${Math.max(...d.map((x) => x.maxAbs))}); greedy ${got.ids.join(",")}`,
      );
      assert.deepEqual(got.ids, want[k].ids, `prompt ${k}: greedy tokens`);
      assert.equal(p.differ, 0, `prompt ${k}: prompt logits bit-identical (max |Δ| ${p.maxAbs}, nMSE ${p.nmse})`);
      d.forEach((x, i) => assert.equal(x.differ, 0, `prompt ${k}: decode step ${i} bit-identical (max |Δ| ${x.maxAbs}, nMSE ${x.nmse})`));
    });
    assert.ok(a.clients >= 1 && b.clients >= 1);
  }
});

test("split: bad placements are refused before anything is loaded", { skip }, () => {
  using server = RpcServer.start({ port: 0, nThreads: 1 });
  using r = Backend.rpc(server.endpoint);
  using cpu = Backend.cpu({ nThreads: 1 });
  const load = (split: { backends: Backend[]; layers: number[][] }) => GemmaModel.fromGguf(file!, { ...OPTS, split });
  assert.throws(() => load({ backends: [r], layers: [] }), /1 backends but 0 layer lists/);
  assert.throws(() => load({ backends: [r], layers: [[18]] }), /layer 18 is not in 0..17/);
  assert.throws(() => load({ backends: [r, r], layers: [[1], [2]] }), /given twice/);
  assert.throws(() => load({ backends: [cpu], layers: [[1]] }), /CPU backend/);
  assert.deepEqual(evenLayers(18, 4).map((l) => l.length), [5, 5, 4, 4]);
});

/** `wsp-ggml rpc-server --port 0 --threads 1` in a child on this runtime; resolves with it and its endpoint. */
function cliServer(): Promise<{ child: ChildProcess; endpoint: string; exited: Promise<unknown> }> {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  const bin = join(root, "src/cli/bin.ts"), argv = ["rpc-server", "--port", "0", "--threads", "1"];
  const args = g.Bun !== undefined ? [bin, ...argv] : g.Deno !== undefined ? ["run", "-A", bin, ...argv] : ["--import", "tsx", bin, ...argv];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const exited = new Promise((resolve) => child.on("exit", () => resolve(children.delete(child))));
  let out = "", err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`rpc-server: not ready in 60 s\nstdout: ${out}\nstderr: ${err}`));
    }, 60_000);
    child.stderr!.on("data", (d: Uint8Array) => void (err += new TextDecoder().decode(d)));
    child.stdout!.on("data", (d: Uint8Array) => {
      out += new TextDecoder().decode(d);
      const m = /serving .* on (\d+\.\d+\.\d+\.\d+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, endpoint: m[1], exited });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`rpc-server exited (${code}) before it was ready\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

const stubTokenizer: TokenizerLike = {
  bos: 2, eos: 1, vocabSize: 262144,
  encode: () => [],
  decoder: () => ({ push: (id: number) => `<${id}>`, flush: () => "" }),
  isControl: (id: number) => id === END_OF_TURN_ID || id < 4,
};

test("server B killed mid-generation: RpcError, the process lives on, a CPU model still computes", { skip }, async () => {
  const want = cpuAlone()[0];
  using a = RpcServer.start({ port: 0, nThreads: 1 });
  const b = await cliServer();
  const ra = Backend.rpc(a.endpoint), rb = Backend.rpc(b.endpoint);
  const m = GemmaModel.fromGguf(file!, { ...OPTS, split: { backends: [ra, rb], layers: SPLIT.slice(1) } });
  const ids: number[] = [];
  await assert.rejects(async () => {
    for await (const piece of generate(m, stubTokenizer, PROMPT, { temperature: 0, repeatPenalty: 1, maxTokens: 32 })) {
      ids.push(piece.id);
      if (ids.length === 3) {
        b.child.kill("SIGKILL");
        await b.exited;
      }
    }
  }, (e: unknown) => e instanceof RpcError && /RPC\[/.test(e.message));
  assert.deepEqual(ids, want.ids.slice(0, 3), "the tokens before the kill are the CPU's");
  // The model and the backends free after the fault; server A serves on.
  m.free();
  rb.free();
  ra.free();
  using m2 = GemmaModel.fromGguf(file!, OPTS);
  const again = run(m2, 1);
  assert.equal(compare(again.prompt, want.prompt).differ, 0, "the CPU model computes as before");
});
