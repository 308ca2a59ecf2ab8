/**
 * The tensors a GGUF load made, by name: a `Map` whose
 * {@linkcode TensorMap.require} says which name is missing instead of
 * returning `undefined`.
 *
 * @module
 */
import { GgufError } from "../core/errors.ts";
import type { Tensor } from "../core/tensor.ts";

/** Tensors by name, as `GgufFile.loadTensors` and `loadToBackend` return them. */
export class TensorMap extends Map<string, Tensor> {
  /** Where the tensors came from, for messages (the file's path). */
  readonly source: string;

  /**
   * Made by the GGUF loaders.
   *
   * @param source where the tensors came from (the file's path), for messages
   */
  constructor(source: string) {
    super();
    this.source = source;
  }

  /**
   * The tensor called `name`; unlike `get`, never `undefined`.
   *
   * @throws {GgufError} (reason `NOT_FOUND`) when no tensor of that name was loaded, naming the closest ones
   */
  require(name: string): Tensor {
    const t = this.get(name);
    if (t !== undefined) return t;
    throw new GgufError("NOT_FOUND", `${this.source}: no tensor ${JSON.stringify(name)} among the ${this.size} loaded${closest(name, [...this.keys()])}`);
  }
}

/** ", closest: …" with up to three loaded names sharing the longest prefix with `name`, or "". */
function closest(name: string, names: readonly string[]): string {
  const common = (a: string) => {
    let i = 0;
    while (i < a.length && i < name.length && a[i] === name[i]) i++;
    return i;
  };
  const best = names.map((n) => ({ n, c: common(n) })).filter((x) => x.c > 0).sort((a, b) => b.c - a.c || (a.n < b.n ? -1 : 1)).slice(0, 3);
  return best.length === 0 ? "" : `; closest: ${best.map((x) => JSON.stringify(x.n)).join(", ")}`;
}
