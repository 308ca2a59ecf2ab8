/**
 * The demo's model: a small multi-layer perceptron written with ggml ops
 * (`mulMat`, `add`, `relu`), its weights, and their GGUF file (weights as
 * tensors, hyper-parameters as KVs).
 *
 * @module
 */
import { Context, GgufType, GgufWriter, readGguf, type Tensor, tensorGet, tensorSet, Type } from "../../mod.ts";
import { gaussian, rng } from "./data.ts";

/** The model's hyper-parameters (stored in the GGUF file as KVs). */
export interface Hyper {
  /** Features per input point. */
  readonly inputs: number;
  /** Units per hidden layer. */
  readonly hidden: number;
  /** Hidden layers (each `relu(W·x + b)`). */
  readonly layers: number;
  /** Output classes (the logits). */
  readonly classes: number;
}

/** The GGUF architecture name; the hyper-parameter keys are `ARCH.<name>`. */
export const ARCH = "spiral-mlp";

/** The weight tensors: name and ggml shape (`[in, out]` for a matrix, `[out]` for a bias). */
export function weightShapes(hp: Hyper): { name: string; shape: number[] }[] {
  const out: { name: string; shape: number[] }[] = [];
  for (let l = 0; l <= hp.layers; l++) {
    const nIn = l === 0 ? hp.inputs : hp.hidden, nOut = l === hp.layers ? hp.classes : hp.hidden;
    out.push({ name: `fc${l + 1}.weight`, shape: [nIn, nOut] }, { name: `fc${l + 1}.bias`, shape: [nOut] });
  }
  return out;
}

/** Bytes a context needs for the structs of `n` tensors (no data). */
export function metaSize(n: number): number {
  return n * 512 + 4096;
}

/** Creates the (named) weight tensors of `hp` in `ctx`. */
export function createWeights(ctx: Context, hp: Hyper): Map<string, Tensor> {
  const w = new Map<string, Tensor>();
  for (const { name, shape } of weightShapes(hp)) w.set(name, ctx.newTensor(Type.F32, shape).setName(name));
  return w;
}

/** He-normal weights and zero biases, from `seed`; works for tensors in any host or backend buffer. */
export function initWeights(weights: Map<string, Tensor>, seed: number): void {
  const random = rng(seed ^ 0x5eed);
  for (const [name, t] of weights) {
    const v = new Float32Array(t.nelements);
    if (name.endsWith(".weight")) {
      const std = Math.sqrt(2 / t.shape[0]);
      for (let i = 0; i < v.length; i++) v[i] = std * gaussian(random);
    }
    tensorSet(t, v);
  }
}

/**
 * The forward pass: logits `[classes, n]` of the inputs `[inputs, n]`,
 * created in `ctx` (a `noAlloc` context for training, where the scheduler
 * allocates them; a normal one for a plain compute).
 */
export function forward(ctx: Context, weights: Map<string, Tensor>, hp: Hyper, input: Tensor): Tensor {
  let h = input;
  for (let l = 1; l <= hp.layers + 1; l++) {
    // mulMat(W [in, out], h [in, n]) = W^T h : [out, n]; the bias [out] broadcasts over the n columns.
    h = ctx.add(ctx.mulMat(weights.get(`fc${l}.weight`)!, h), weights.get(`fc${l}.bias`)!);
    if (l <= hp.layers) h = ctx.relu(h);
  }
  return h.setName("logits");
}

/**
 * The predicted class of each point of `x` (`[inputs, n]` flattened): a
 * forward graph in a fresh context, computed on the CPU, with ggml's
 * `argmax` over the logits. The weights may be in any buffer (a GPU's
 * too): they are read into the context first.
 */
export function predict(weights: Map<string, Tensor>, hp: Hyper, x: Float32Array, nThreads: number): Int32Array {
  const n = x.length / hp.inputs;
  // Data of every tensor: the weights, the input, mulMat + add (+ relu) per layer, the argmax; plus structs and a graph.
  let weightFloats = 0;
  for (const t of weights.values()) weightFloats += t.nelements;
  const floats = weightFloats + n * (hp.inputs + 3 * hp.layers * hp.hidden + 2 * hp.classes + 1);
  using ctx = new Context({ memSize: 4 * floats + metaSize(8 + 5 * (hp.layers + 1)) + (1 << 20) });
  const host = new Map<string, Tensor>();
  for (const [name, t] of weights) {
    // A tensor in a backend buffer is read through its backend; one in a context's memory directly.
    const data = t.context.noAlloc ? tensorGet(t) as Float32Array : t.get(Float32Array);
    host.set(name, ctx.newTensor(Type.F32, t.shape.slice(0, Math.max(1, t.nDims))).setName(name).set(data));
  }
  const input = ctx.newTensor2d(Type.F32, hp.inputs, n).setName("input").set(x);
  const pred = ctx.argmax(forward(ctx, host, hp, input));
  ctx.newGraph().buildForwardExpand(pred).compute({ nThreads });
  return Int32Array.from(pred.get(Int32Array));
}

/** The fraction of `pred` equal to `labels`. */
export function accuracy(pred: Int32Array, labels: Int32Array): number {
  let ok = 0;
  for (let i = 0; i < labels.length; i++) if (pred[i] === labels[i]) ok++;
  return ok / labels.length;
}

/** Extra KVs to store with the model (training facts). */
export type ExtraKv = [key: string, type: GgufType, value: number | string | boolean | bigint][];

/**
 * Writes the weights and the hyper-parameters to a GGUF file: the tensors
 * under their names, `general.architecture`, `general.name`, and
 * `spiral-mlp.{input_size, hidden_size, hidden_layers, class_count}`.
 */
export function saveGguf(path: string, weights: Map<string, Tensor>, hp: Hyper, extra: ExtraKv = []): void {
  using w = new GgufWriter();
  w.set("general.architecture", GgufType.STRING, ARCH);
  w.set("general.name", GgufType.STRING, "wsp-ggml spiral demo");
  w.set(`${ARCH}.input_size`, GgufType.UINT32, hp.inputs);
  w.set(`${ARCH}.hidden_size`, GgufType.UINT32, hp.hidden);
  w.set(`${ARCH}.hidden_layers`, GgufType.UINT32, hp.layers);
  w.set(`${ARCH}.class_count`, GgufType.UINT32, hp.classes);
  for (const [k, type, v] of extra) w.set(k, type, v);
  for (const { name } of weightShapes(hp)) w.addTensor(weights.get(name)!);
  w.write(path);
}

/** A model read back from its GGUF file, its weights in a fresh context. */
export interface LoadedModel {
  readonly hp: Hyper;
  readonly context: Context;
  readonly weights: Map<string, Tensor>;
}

/**
 * Reads a model written by {@linkcode saveGguf}: the hyper-parameters from
 * the KVs, the tensors into a fresh context (checked against the shapes the
 * hyper-parameters imply).
 */
export function loadGguf(path: string): LoadedModel {
  const file = readGguf(path);
  if (file.getString("general.architecture") !== ARCH) throw new Error(`${path}: not a ${ARCH} model`);
  const u32 = (k: string) => file.require(`${ARCH}.${k}`, GgufType.UINT32) as number;
  const hp: Hyper = { inputs: u32("input_size"), hidden: u32("hidden_size"), layers: u32("hidden_layers"), classes: u32("class_count") };
  const want = weightShapes(hp);
  for (const { name, shape } of want) {
    const info = file.tensor(name);
    if (!info || info.type !== Type.F32 || info.shape.join() !== shape.join()) throw new Error(`${path}: tensor ${name} is missing or not f32 [${shape}]`);
  }
  const { context, tensors } = file.loadTensors({ names: want.map((t) => t.name) });
  return { hp, context, weights: tensors };
}
