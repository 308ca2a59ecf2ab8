/**
 * The llama / qwen2 / qwen3 runner (src/llm/model.ts) on tiny random-weight GGUF files, against the
 * independent float64 numpy implementation (tests/fixtures/llm/transformer_ref.py, which reads the
 * weights through Python gguf's own dequantization):
 *
 * - the files of tests/fixtures/llm/make_tiny_llm.py (written by Python's gguf, made here into the
 *   git-ignored .cache/tiny-llm/): qwen3 (q/k norms, key_length ≠ n_embd / n_head), llama with
 *   Llama 3.1's rope_freqs.weight, llama with linear RoPE scaling and a SentencePiece vocabulary,
 *   qwen2 with biases and YaRN, and a llama whose rows are multiples of 256; their matrices mix
 *   F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1;
 * - the last of them re-encoded here by the library's own GgufWriter and ggml's quantizer into
 *   the types Python's gguf cannot write (the K-quants, i-quants and ternary types), which gguf
 *   still dequantizes: an independent check of ggml's dequantization too.
 *
 * For each file, with f32 (dequantized) weights: every position's logits of two prompts, in one
 * batch and then one token at a time through the KV cache, must match the reference to a
 * normalized MSE ≤ 1e-6, and each position's argmax must be the reference's wherever the
 * reference's top two logits are more than 1e-3 apart. Skipped when python3 with numpy and gguf
 * is missing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { allocCtxTensors, argmax, Backend, Context, dequantize, GgufType, GgufWriter, LlmModel, quantize, readGguf, requiresImatrix, type Tensor, tensorOverhead, tensorSet, Type, typeName } from "../src/llm/mod.ts";
import { nmse, referenceLogits } from "./llm_model.ts";
import { root } from "./run.ts";

const THREADS = 1; // the test machines are small and shared: one thread is the steadiest
const BOUND = 1e-6;
/** Reference top-two logits closer than this: another correct computation may pick the runner-up. */
const MARGIN = 1e-3;

const FIXTURES = join(root, "tests", "fixtures", "llm");
const MAKE_SCRIPT = join(FIXTURES, "make_tiny_llm.py");
const REF_SCRIPT = join(FIXTURES, "transformer_ref.py");
const CACHE = join(root, ".cache", "tiny-llm");
const python = spawnSync("python3", ["-c", "import numpy, gguf"], { encoding: "utf8" }).status === 0;
const skip = python ? false : "python3 with numpy and gguf is not available";
if (skip) console.warn(`skipping the tiny-model tests: ${skip}`);

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/**
 * make_tiny_llm.py's files in .cache/tiny-llm/: `name → path`. Reused while the script is the
 * same and every file still has the sha256 the script printed for it; made again otherwise
 * (in a temporary folder first, so that an interrupted run leaves nothing half-written).
 */
function tinyFiles(): Map<string, string> {
  const script = readFileSync(MAKE_SCRIPT);
  const sums = join(CACHE, "SHA256SUMS");
  const header = `# make_tiny_llm.py ${sha256(script)}`;
  const parse = (lines: string[]) => new Map(lines.filter((l) => l && !l.startsWith("#")).map((l) => {
    const [sum, file] = l.split(/\s+/);
    return [file, sum] as const;
  }));
  if (existsSync(sums)) {
    const lines = readFileSync(sums, "utf8").split("\n");
    const want = parse(lines);
    if (lines[0] === header && want.size > 0 && [...want].every(([f, s]) => existsSync(join(CACHE, f)) && sha256(readFileSync(join(CACHE, f))) === s)) {
      return new Map([...want.keys()].map((f) => [f.replace(/\.gguf$/, ""), join(CACHE, f)]));
    }
  }
  const tmp = join(CACHE, `tmp-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  try {
    const r = spawnSync("python3", [MAKE_SCRIPT, tmp], { encoding: "utf8" });
    assert.equal(r.status, 0, `make_tiny_llm.py failed:\n${r.stderr}`);
    const lines = r.stdout.trim().split("\n");
    const files = parse(lines);
    for (const [f, s] of files) {
      assert.equal(sha256(readFileSync(join(tmp, f))), s, `${f}: the sha256 make_tiny_llm.py printed`);
      renameSync(join(tmp, f), join(CACHE, f));
    }
    writeFileSync(sums, [header, ...lines, ""].join("\n"));
    return new Map([...files.keys()].map((f) => [f.replace(/\.gguf$/, ""), join(CACHE, f)]));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The reference logits (n × nVocab) of `tokens` for the file `path`, cached in .cache/tiny-llm/ref/. */
const reference = (path: string, tokens: number[], nVocab: number): Float32Array =>
  referenceLogits({ script: REF_SCRIPT, model: path, modelSha256: sha256(readFileSync(path)), tokens, nVocab, cacheDir: join(CACHE, "ref") });

/** Two prompts inside a vocabulary of `nVocab`: a run of the byte tokens' printable range, and 40 ids spread over the whole vocabulary (special tokens too). */
function prompts(nVocab: number): { name: string; tokens: number[] }[] {
  let s = 12345;
  const spread = Array.from({ length: 40 }, () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) % nVocab);
  return [
    { name: "bytes", tokens: Array.from({ length: 12 }, (_, i) => (40 + 7 * i) % nVocab) },
    { name: "spread", tokens: spread },
  ];
}

/** Index of the largest and the gap to the second largest. */
function top2(row: Float32Array): { best: number; gap: number } {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  let second = -Infinity;
  for (let i = 0; i < row.length; i++) if (i !== best && row[i] > second) second = row[i];
  return { best, gap: row[best] - second };
}

/**
 * The checks of the header on one file; returns the worst nMSE. Batch: one forward pass over the
 * prompt with every position's logits. Decode: the same prompt again, one token per forward pass
 * (the KV cache path), each step's logits against the same reference row.
 */
function checkFile(name: string, path: string): number {
  using model = LlmModel.load(path, { threads: THREADS, dequantize: true, nCtx: 64 });
  const V = model.hparams.nVocab;
  let worst = 0;
  const bad: string[] = [];
  for (const p of prompts(V)) {
    const ref = reference(path, p.tokens, V);
    const row = (a: Float32Array, i: number) => a.subarray(i * V, (i + 1) * V);
    model.reset();
    const batch = model.forward(p.tokens, { allLogits: true });
    model.reset();
    const decode = new Float32Array(p.tokens.length * V);
    p.tokens.forEach((t, i) => decode.set(model.forward([t]), i * V));
    for (const [how, ours] of [["batch", batch], ["decode", decode]] as const) {
      for (let i = 0; i < p.tokens.length; i++) {
        const e = nmse(row(ours, i), row(ref, i));
        worst = Math.max(worst, e);
        if (!(e <= BOUND)) bad.push(`${p.name} ${how} position ${i}: nMSE ${e.toExponential(3)} > ${BOUND}`);
        const { best, gap } = top2(row(ref, i));
        const mine = argmax(row(ours, i));
        if (gap > MARGIN && mine !== best) bad.push(`${p.name} ${how} position ${i}: argmax ${mine}, the reference's ${best} (its top-2 gap ${gap.toFixed(4)})`);
      }
    }
  }
  console.log(`${name}: worst nMSE ${worst.toExponential(2)} over ${prompts(V).map((p) => p.tokens.length).join(" + ")} positions, batch and decode`);
  assert.deepEqual(bad, [], `${name}: positions off the reference`);
  return worst;
}

let files = new Map<string, string>();
let made: unknown;
if (!skip) {
  try {
    files = tinyFiles();
  } catch (e) {
    made = e; // a failing test below, not a file that fails to load
  }
}
test("make_tiny_llm.py writes its files into .cache/tiny-llm/", { skip }, () => {
  if (made) throw made;
  assert.ok(files.has("tiny-wide-llama"), `its files: ${[...files.keys()].join(", ")}`);
});

for (const [name, path] of files) {
  const types = [...new Set(readGguf(path).tensors.map((t) => typeName(t.type)))].sort().join(", ");
  test(`${name} (${types}): every position's logits, batch and decode, match the float64 numpy reference (nMSE ≤ 1e-6)`, () => {
    checkFile(name, path);
  });
}

// ---- The types Python's gguf cannot write: tiny-wide-llama re-encoded with the library's writer ----

/**
 * The type each of tiny-wide-llama's 16 matrices gets (its rows are 256 or 512 long: whole blocks
 * of every type): types the runner multiplies with and Python's gguf dequantizes but
 * make_tiny_llm.py cannot write. Left out: IQ1_S, IQ1_M, IQ2_XS and IQ2_S, whose quantizers first
 * build a codebook neighbour table (2 to 9 s each, per process: 16 s of the test's 17 with them),
 * and MXFP4, which this gguf cannot read.
 */
const REQUANT: Record<string, Type> = {
  "token_embd.weight": Type.Q6_K,
  "output.weight": Type.Q4_K,
  "blk.0.attn_q.weight": Type.Q5_K,
  "blk.0.attn_k.weight": Type.Q3_K,
  "blk.0.attn_v.weight": Type.Q2_K,
  "blk.0.attn_output.weight": Type.IQ4_XS,
  "blk.0.ffn_gate.weight": Type.IQ4_NL,
  "blk.0.ffn_up.weight": Type.IQ3_S,
  "blk.0.ffn_down.weight": Type.IQ3_XXS,
  "blk.1.attn_q.weight": Type.Q4_K,
  "blk.1.attn_k.weight": Type.Q6_K,
  "blk.1.attn_v.weight": Type.IQ2_XXS,
  "blk.1.attn_output.weight": Type.Q5_K,
  "blk.1.ffn_gate.weight": Type.Q4_K,
  "blk.1.ffn_up.weight": Type.TQ2_0,
  "blk.1.ffn_down.weight": Type.TQ1_0,
};

/** Writes `src` again with REQUANT's types through GgufWriter: every key copied, the matrices quantized by ggml from their f32 values, the rest as they were. */
function requantize(src: string, dest: string): void {
  const f = readGguf(src);
  using ctx = new Context({ memSize: (f.tensors.length + 1) * tensorOverhead(), noAlloc: true });
  using cpu = Backend.cpu({ nThreads: 1 });
  const data = new Map<Tensor, Uint8Array>();
  for (const info of f.tensors) {
    const raw = f.readTensorData(info);
    const type = REQUANT[info.name];
    let bytes = raw;
    if (type !== undefined) {
      const ne0 = info.shape[0];
      const values = info.type === Type.F32 ? new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)) : dequantize(info.type, raw, ne0);
      // The types ggml quantizes only with an importance matrix: a flat one (every column alike).
      bytes = quantize(type, values, { nPerRow: ne0, ...(requiresImatrix(type) ? { imatrix: new Float32Array(ne0).fill(1) } : {}) });
    }
    data.set(ctx.newTensor(type ?? info.type, info.shape).setName(info.name), bytes);
  }
  assert.deepEqual(Object.keys(REQUANT).filter((n) => !f.tensor(n)), [], "REQUANT names tensors the file lacks");
  using _buf = allocCtxTensors(ctx, cpu);
  using w = new GgufWriter();
  w.setAll(f);
  w.set("general.name", GgufType.STRING, `${f.get("general.name")}, re-encoded by tests/llm_tiny.test.ts`, { replace: true });
  for (const [t, bytes] of data) {
    tensorSet(t, bytes);
    w.addTensor(t);
  }
  w.write(`${dest}.${process.pid}`);
  renameSync(`${dest}.${process.pid}`, dest);
}

test(`tiny-wide-llama re-encoded by the library's GgufWriter as ${[...new Set(Object.values(REQUANT))].map(typeName).join(", ")}: logits match the float64 numpy reference over gguf's dequantization (nMSE ≤ 1e-6)`, { skip }, () => {
  const dest = join(CACHE, "tiny-wide-llama-requant.gguf");
  requantize(files.get("tiny-wide-llama")!, dest);
  const back = readGguf(dest);
  for (const [name, type] of Object.entries(REQUANT)) assert.equal(typeName(back.tensor(name)!.type), typeName(type), `${name}'s type in the file written`);
  checkFile("tiny-wide-llama-requant", dest);
});
