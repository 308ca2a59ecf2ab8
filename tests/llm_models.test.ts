// The models users bring, beyond Gemma 3: the llama (SmolLM2 135M Instruct) and qwen2 (Qwen2.5-Coder
// 0.5B Instruct) files of the model catalog, against llama.cpp b6673 (teacher-forced greedy steps,
// tests/fixtures/llm/llama_cpp_<id>.json by llama_cpp_fixture.mjs) and against the independent
// float64 numpy implementation (tests/fixtures/llm/transformer_ref.py); and the files a runner
// must refuse with a typed error (an unknown architecture, a missing tensor, a wrong shape or
// type, a vocabulary of the wrong size), made here as tiny GGUFs with the library's own writer.
//
// The models are fetched on first use (tests/llm_model.ts; WSP_GGML_FETCH_MODELS=0 stays offline).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allocCtxTensors, argmax, Backend, type ChatMessage, chatPrompt, ChatTemplate, Context, GgufType, GgufWriter, LlmModel, ModelError, readHparams, ROPE_TYPE_NEOX, ROPE_TYPE_NORMAL, type Tensor, tensorOverhead, tensorSet, Tokenizer, Type } from "../src/llm/mod.ts";
import { readGguf } from "../mod.ts";
import { llmModel, nmse, referenceLogits as reference } from "./llm_model.ts";
import { root } from "./run.ts";

const THREADS = 1; // the test machines are small and shared: one thread is the steadiest
/** llama.cpp's top two within this in probability: a step where another correct computation may pick the runner-up. */
const NEAR_TIE = 0.02;

const REF_SCRIPT = join(root, "tests", "fixtures", "llm", "transformer_ref.py");
const python = spawnSync("python3", ["-c", "import numpy, gguf"], { encoding: "utf8" }).status === 0;
const refMissing = !existsSync(REF_SCRIPT) ? `${REF_SCRIPT} is not there` : !python ? "python3 with numpy and gguf is not available" : "";

interface Generation { name: string; prompt: number[]; tokens: number[]; steps: [number, number, number, number][] }
interface Chat { name: string; messages: ChatMessage[]; addGenerationPrompt: boolean; tools?: unknown[]; text: string; ids: number[] }
interface Fixture { model: { file: string; sha256: string }; tokenizer: { addBos: boolean }; chats: Chat[]; generations: Generation[] }

const CASES = [
  { id: "smollm2-135m-instruct", arch: "llama" },
  { id: "qwen2.5-coder-0.5b-instruct", arch: "qwen2" },
] as const;

/** The reference logits (n × nVocab, float32) of `tokens`, from the numpy script (cached under .cache/llm-ref/). */
const referenceLogits = (modelPath: string, sha256: string, tokens: number[], nVocab: number): Float32Array =>
  reference({ script: REF_SCRIPT, model: modelPath, modelSha256: sha256, tokens, nVocab, cacheDir: join(root, ".cache", "llm-ref") });

for (const { id, arch } of CASES) {
  const fixture: Fixture = JSON.parse(readFileSync(join(root, "tests", "fixtures", "llm", `llama_cpp_${id}.json`), "utf8"));
  const m = await llmModel(id);
  const skip = m.skip || false;
  if (skip) console.warn(`skipping the ${id} tests: ${skip}`);

  test(`${id}: the hyper-parameters are the file's (${arch})`, { skip }, () => {
    const file = readGguf(m.path);
    const hp = readHparams(file);
    assert.equal(hp.arch, arch);
    // Against the file's own keys, read one by one (gguf-py's GGUFReader lists the same values).
    const k = (name: string) => Number(file.get(`${arch}.${name}`));
    assert.equal(hp.nEmbd, k("embedding_length"));
    assert.equal(hp.nLayer, k("block_count"));
    assert.equal(hp.nHead, k("attention.head_count"));
    assert.equal(hp.nHeadKv, k("attention.head_count_kv"));
    assert.equal(hp.nFf, k("feed_forward_length"));
    assert.equal(hp.ropeBase, k("rope.freq_base"));
    assert.equal(hp.nVocab, (file.get("tokenizer.ggml.tokens") as string[]).length);
    // No key_length in these files: llama.cpp's n_embd / n_head; RoPE rotates the whole head.
    assert.equal(hp.headDimK, hp.nEmbd / hp.nHead);
    assert.equal(hp.nRot, hp.headDimK);
    assert.equal(hp.traits.ropeType, arch === "llama" ? ROPE_TYPE_NORMAL : ROPE_TYPE_NEOX);
    assert.equal(hp.ropeFreqScale, 1);
    assert.equal(hp.slidingWindow, 0);
    assert.equal(hp.attnScale, 1 / Math.sqrt(hp.headDimK));
  });

  test(`${id}: greedy steps fed llama.cpp's tokens pick llama.cpp's token (near ties listed)`, { skip }, () => {
    using model = LlmModel.load(m.path, { threads: THREADS, nCtx: 512 });
    const misses: string[] = [], ties: string[] = [];
    let steps = 0;
    for (const g of fixture.generations) {
      model.reset();
      let logits = model.forward(g.prompt);
      g.steps.forEach(([tok, p, second, pSecond], i) => {
        const ours = argmax(logits);
        steps++;
        if (ours !== tok) {
          const what = `${g.name} step ${i}: ours ${ours}, llama.cpp ${tok} (p ${p}, runner-up ${second} at ${pSecond}, margin ${(p - pSecond).toFixed(4)})`;
          (p - pSecond < NEAR_TIE && ours === second ? ties : misses).push(what);
        }
        if (i + 1 < g.steps.length) logits = model.forward([tok]);
      });
    }
    console.log(`${id}: ${steps - misses.length - ties.length}/${steps} steps equal, ${ties.length} near ties${ties.length ? `:\n  ${ties.join("\n  ")}` : ""}`);
    assert.deepEqual(misses, [], "steps where we pick another token than llama.cpp without a near tie");
  });

  test(`${id}: chat prompts rendered by the file's template and tokenized as llama.cpp's chat does are llama.cpp's token ids`, { skip }, () => {
    const file = readGguf(m.path);
    const tokenizer = Tokenizer.fromGguf(file), template = ChatTemplate.fromGguf(file);
    // The fixture tokenized jinja2's text with special tokens added: the same as the chat's path for these
    // files, which add no BOS (chatPrompt drops a leading BOS text only where the model adds BOS itself).
    assert.equal(tokenizer.addBos, fixture.tokenizer.addBos);
    assert.ok(fixture.chats.length >= 3, "three conversations or more");
    for (const c of fixture.chats) {
      const p = chatPrompt(tokenizer, template, c.messages, { addGenerationPrompt: c.addGenerationPrompt, tools: c.tools });
      assert.equal(p.text, c.text, `${c.name}: the rendered text`);
      assert.deepEqual(p.ids, c.ids, `${c.name}: the token ids`);
    }
  });

  test(`${id}: f32 weights: every position's logits match the float64 numpy reference (nMSE ≤ 1e-6)`, { skip: skip || refMissing || false }, () => {
    using model = LlmModel.load(m.path, { threads: THREADS, dequantize: true, nCtx: 256 });
    const V = model.hparams.nVocab;
    // Two of the fixture's prompts: the plain sentence and the chat (special tokens, ~30 positions).
    for (const g of [fixture.generations[0], fixture.generations[1]]) {
      model.reset();
      const ours = model.forward(g.prompt, { allLogits: true });
      const ref = referenceLogits(m.path, fixture.model.sha256, g.prompt, V);
      const errs = g.prompt.map((_, i) => nmse(ours.subarray(i * V, (i + 1) * V), ref.subarray(i * V, (i + 1) * V)));
      console.log(`${id} ${g.name} (${g.prompt.length} positions): worst nMSE ${Math.max(...errs).toExponential(2)}`);
      errs.forEach((e, i) => assert.ok(e <= 1e-6, `${g.name} position ${i}: nMSE ${e.toExponential(3)} > 1e-6`));
    }
  });
}

// ---- Files the runner must refuse: tiny GGUFs written with the library's own writer ----

/** How a tiny test file departs from a valid one. */
interface Tiny {
  arch?: string;
  /** Tensors left out. */
  drop?: string[];
  /** Tensors written with another shape. */
  shape?: Record<string, number[]>;
  /** Tensors written with another type. */
  type?: Record<string, Type>;
  /** Tokens in the vocabulary (default: the embedding's rows). */
  vocab?: number;
  /** KV pairs replaced. */
  keys?: Record<string, number>;
}

const TINY = { embd: 32, heads: 4, kv: 2, ff: 64, layers: 2, vocab: 50, ctx: 128 };

/** Writes a small llama-family model (random weights) to a temporary file; returns its path. */
function tinyModel(dir: string, t: Tiny = {}): string {
  const arch = t.arch ?? "llama", hd = TINY.embd / TINY.heads;
  const shapes: [string, number[]][] = [["token_embd.weight", [TINY.embd, TINY.vocab]], ["output_norm.weight", [TINY.embd]]];
  for (let il = 0; il < TINY.layers; il++) {
    const p = `blk.${il}.`;
    shapes.push(
      [`${p}attn_norm.weight`, [TINY.embd]], [`${p}attn_q.weight`, [TINY.embd, TINY.heads * hd]], [`${p}attn_k.weight`, [TINY.embd, TINY.kv * hd]],
      [`${p}attn_v.weight`, [TINY.embd, TINY.kv * hd]], [`${p}attn_output.weight`, [TINY.heads * hd, TINY.embd]], [`${p}ffn_norm.weight`, [TINY.embd]],
      [`${p}ffn_gate.weight`, [TINY.embd, TINY.ff]], [`${p}ffn_up.weight`, [TINY.embd, TINY.ff]], [`${p}ffn_down.weight`, [TINY.ff, TINY.embd]],
    );
    if (arch === "qwen2") shapes.push([`${p}attn_q.bias`, [TINY.heads * hd]], [`${p}attn_k.bias`, [TINY.kv * hd]], [`${p}attn_v.bias`, [TINY.kv * hd]]);
    if (arch === "qwen3") shapes.push([`${p}attn_q_norm.weight`, [hd]], [`${p}attn_k_norm.weight`, [hd]]);
  }
  const kept = shapes.filter(([n]) => !t.drop?.includes(n));
  using ctx = new Context({ memSize: (kept.length + 1) * tensorOverhead(), noAlloc: true });
  using cpu = Backend.cpu({ nThreads: 1 });
  const tensors: Tensor[] = [];
  let seed = 1;
  for (const [name, shape0] of kept) {
    const shape = t.shape?.[name] ?? shape0;
    const type = t.type?.[name] ?? Type.F32;
    tensors.push(ctx.newTensor(type, shape).setName(name));
  }
  using _buf = allocCtxTensors(ctx, cpu);
  for (const x of tensors) {
    const name = x.name, n = x.nelements;
    if (x.type === Type.F32) {
      // Norm weights near 1, the rest small: the forward pass stays finite.
      tensorSet(x, Float32Array.from({ length: n }, () => (name.includes("norm") ? 1 : 0) + 0.1 * (((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32) - 0.5)));
    } else tensorSet(x, new Uint8Array(x.nbytes));
  }
  using w = new GgufWriter();
  w.set("general.architecture", GgufType.STRING, arch);
  const u32 = (k: string, v: number) => w.set(`${arch}.${k}`, GgufType.UINT32, v);
  u32("context_length", TINY.ctx);
  u32("embedding_length", TINY.embd);
  u32("block_count", TINY.layers);
  u32("feed_forward_length", TINY.ff);
  u32("attention.head_count", TINY.heads);
  u32("attention.head_count_kv", TINY.kv);
  for (const [k, v] of Object.entries(t.keys ?? {})) w.set(`${arch}.${k}`, GgufType.UINT32, v, { replace: true });
  w.set(`${arch}.attention.layer_norm_rms_epsilon`, GgufType.FLOAT32, 1e-5);
  w.setArray("tokenizer.ggml.tokens", GgufType.STRING, Array.from({ length: t.vocab ?? TINY.vocab }, (_, i) => `t${i}`));
  for (const x of tensors) w.addTensor(x);
  const path = join(dir, `tiny-${Math.random().toString(36).slice(2)}.gguf`);
  w.write(path);
  return path;
}

test("tiny llama, qwen2 and qwen3 files load and compute finite logits (the fixtures of the error cases are valid but for their one flaw)", () => {
  const dir = mkdtempSync(join(tmpdir(), "wsp-ggml-tiny-"));
  try {
    for (const arch of ["llama", "qwen2", "qwen3"]) {
      using model = LlmModel.load(tinyModel(dir, { arch }), { threads: 1, nCtx: 32 });
      assert.equal(model.hparams.arch, arch);
      const logits = model.forward([1, 2, 3]);
      assert.equal(logits.length, TINY.vocab);
      assert.ok(logits.every(Number.isFinite), `${arch}: logits not finite`);
      // The cache path: one more token after three equals four at once.
      const next = model.forward([4]);
      model.reset();
      const all = model.forward([1, 2, 3, 4]);
      assert.ok(next.every((v, i) => Math.abs(v - all[i]) <= 1e-4 * (1 + Math.abs(all[i]))), `${arch}: the decode step's logits differ from the batch's`);
      // A prompt longer than the context: a RangeError before anything runs, and the cache keeps what it held.
      assert.throws(() => model.forward(Array.from({ length: 29 }, () => 5)), { name: "RangeError", message: "forward: 4 + 29 positions exceed the cache's 32" });
      assert.equal(model.nPast, 4);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("files the runner cannot use: a typed ModelError naming the key or tensor, and nothing dies", () => {
  const dir = mkdtempSync(join(tmpdir(), "wsp-ggml-tiny-"));
  const refuse = (t: Tiny, reason: string, message: RegExp) =>
    assert.throws(() => LlmModel.load(tinyModel(dir, t), { threads: 1, nCtx: 32 }), (e: unknown) => {
      assert.ok(e instanceof ModelError, `expected a ModelError, got ${e}`);
      assert.equal(e.reason, reason);
      assert.match(e.message, message);
      return true;
    });
  try {
    refuse({ arch: "mamba" }, "ARCHITECTURE", /architecture "mamba" is not one the runner implements \(llama, qwen2, qwen3, gemma3\)/);
    refuse({ drop: ["blk.1.ffn_up.weight"] }, "TENSOR", /no tensor blk\.1\.ffn_up\.weight \(the llama architecture needs it\)/);
    refuse({ arch: "qwen2", drop: ["blk.0.attn_k.bias"] }, "TENSOR", /no tensor blk\.0\.attn_k\.bias/);
    refuse({ arch: "qwen3", drop: ["blk.0.attn_q_norm.weight"] }, "TENSOR", /attn_q_norm/);
    refuse({ shape: { "blk.0.attn_k.weight": [32, 32] } }, "SHAPE", /blk\.0\.attn_k\.weight is \[32, 32\], expected \[32, 16\]/);
    refuse({ shape: { "output_norm.weight": [31] } }, "SHAPE", /output_norm\.weight is \[31\], expected \[32\]/);
    refuse({ type: { "blk.0.attn_norm.weight": Type.F16 } }, "TYPE", /blk\.0\.attn_norm\.weight is F16; norms, biases and RoPE factors must be F32/);
    refuse({ type: { "blk.0.ffn_down.weight": Type.I32 } }, "TYPE", /blk\.0\.ffn_down\.weight is I32; a weight matrix must be/);
    refuse({ vocab: 49 }, "VOCAB", /the vocabulary has 49 tokens but token_embd\.weight has 50 rows/);
    refuse({ keys: { "rope.dimension_count": 4 } }, "KEY", /rope\.dimension_count is 4, expected the head dimension 8/);
    refuse({ keys: { "attention.head_count": 0 } }, "KEY", /attention\.head_count is 0, expected a positive integer/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
