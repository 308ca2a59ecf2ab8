/**
 * Token sampling: pure functions over a logits row, and a seeded PRNG whose
 * sequence is the same on every runtime (32-bit integer arithmetic only).
 *
 * The order is llama.cpp's default chain: repetition penalty → top-k →
 * temperature → softmax → top-p → draw. Temperature 0 (or below) is greedy:
 * the arg-max of the model's logits, with no repetition penalty unless one is
 * given ({@linkcode samplerSettings}), in the API and the CLI alike.
 *
 * @module
 */

/** Sampling settings. */
export interface SamplerOptions {
  /** Softmax temperature; ≤ 0 picks the arg-max (greedy). Default 0.8. */
  readonly temperature?: number;
  /** Keep the k most likely tokens; 0 keeps all. Default 40. */
  readonly topK?: number;
  /** Keep the smallest set of tokens whose probability reaches p; 1 keeps all. Default 0.95. */
  readonly topP?: number;
  /**
   * Divide positive (multiply negative) logits of recently seen tokens by this; 1 disables.
   * Default 1.1 when sampling, 1 when greedy (temperature ≤ 0).
   */
  readonly repeatPenalty?: number;
  /** How many of the latest tokens the penalty looks at. Default 64. */
  readonly repeatWindow?: number;
}

/** The defaults of {@linkcode SamplerOptions} when sampling (temperature > 0); see {@linkcode samplerSettings}. */
export const SAMPLER_DEFAULTS: Required<SamplerOptions> = { temperature: 0.8, topK: 40, topP: 0.95, repeatPenalty: 1.1, repeatWindow: 64 };

/**
 * The settings {@linkcode sample} applies for `options`, the one place both the
 * API and the CLI take their defaults from: each unset field is its
 * {@linkcode SAMPLER_DEFAULTS} value, except that greedy decoding
 * (temperature ≤ 0) has no repetition penalty unless `repeatPenalty` is given.
 */
export function samplerSettings(options: SamplerOptions = {}): Required<SamplerOptions> {
  const d = SAMPLER_DEFAULTS;
  const temperature = options.temperature ?? d.temperature;
  return {
    temperature,
    topK: options.topK ?? d.topK,
    topP: options.topP ?? d.topP,
    repeatPenalty: options.repeatPenalty ?? (temperature > 0 ? d.repeatPenalty : 1),
    repeatWindow: options.repeatWindow ?? d.repeatWindow,
  };
}

/** A source of uniform numbers in [0, 1). */
export type Rng = () => number;

/**
 * A seeded PRNG (mulberry32): 32-bit state, integer steps only, so the same
 * seed gives the same numbers on every runtime.
 */
export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Index of the largest value (the first on ties); -1 for an empty array. */
export function argmax(logits: ArrayLike<number>): number {
  let best = -1, bv = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    if (logits[i] > bv || best < 0) {
      bv = logits[i];
      best = i;
    }
  }
  return best;
}

/**
 * Applies the repetition penalty in place to the tokens among the last
 * `window` of `history` (each once): a positive logit is divided by
 * `penalty`, a negative one multiplied (llama.cpp's rule).
 */
export function applyRepetitionPenalty(logits: Float32Array, history: readonly number[], penalty: number, window: number): void {
  if (penalty === 1 || window <= 0) return;
  const seen = new Set<number>();
  for (let i = Math.max(0, history.length - window); i < history.length; i++) {
    const id = history[i];
    if (seen.has(id) || id < 0 || id >= logits.length) continue;
    seen.add(id);
    logits[id] = logits[id] > 0 ? logits[id] / penalty : logits[id] * penalty;
  }
}

/** A candidate token and its logit. */
export interface Candidate {
  /** The token id. */
  readonly id: number;
  /** Its logit. */
  readonly logit: number;
}

/**
 * The `k` largest logits, highest first (ties: lower id first); all of them
 * when k is 0 or at least the vocabulary.
 */
export function topK(logits: ArrayLike<number>, k: number): Candidate[] {
  const n = logits.length;
  if (k <= 0 || k >= n) {
    const all = Array.from({ length: n }, (_, id) => ({ id, logit: logits[id] }));
    return all.sort((a, b) => b.logit - a.logit || a.id - b.id);
  }
  // A sorted list of the best k so far: O(n) when most logits lose to the k-th at once.
  const best: Candidate[] = [];
  let floor = -Infinity;
  for (let id = 0; id < n; id++) {
    const logit = logits[id];
    if (best.length === k && logit <= floor) continue;
    let i = best.length;
    while (i > 0 && best[i - 1].logit < logit) i--;
    best.splice(i, 0, { id, logit });
    if (best.length > k) best.pop();
    floor = best[best.length - 1].logit;
  }
  return best;
}

/** Softmax of the candidates' logits divided by `temperature` (> 0): probabilities in the same order. */
export function softmax(cands: readonly Candidate[], temperature = 1): Float64Array {
  const p = new Float64Array(cands.length);
  if (cands.length === 0) return p;
  let max = -Infinity;
  for (const c of cands) if (c.logit > max) max = c.logit;
  let sum = 0;
  for (let i = 0; i < cands.length; i++) sum += p[i] = Math.exp((cands[i].logit - max) / temperature);
  for (let i = 0; i < p.length; i++) p[i] /= sum;
  return p;
}

/**
 * How many of the candidates (sorted by probability, highest first) top-p
 * keeps: the fewest whose cumulative probability reaches `p` (at least 1).
 */
export function topPCount(probs: ArrayLike<number>, p: number): number {
  if (p >= 1) return probs.length;
  let cum = 0;
  for (let i = 0; i < probs.length; i++) {
    cum += probs[i];
    if (cum >= p) return i + 1;
  }
  return probs.length;
}

/** Draws an index with the given (unnormalised) weights, using one number of `rng`. */
export function drawIndex(weights: ArrayLike<number>, count: number, rng: Rng): number {
  let total = 0;
  for (let i = 0; i < count; i++) total += weights[i];
  let r = rng() * total;
  for (let i = 0; i < count; i++) {
    r -= weights[i];
    if (r < 0) return i;
  }
  return count - 1;
}

/**
 * Picks the next token from a logits row. `logits` is modified (the
 * repetition penalty is applied to it in place); `history` is the tokens so
 * far (prompt included), for the penalty.
 */
export function sample(logits: Float32Array, history: readonly number[], options: SamplerOptions, rng: Rng): number {
  const o = samplerSettings(options);
  applyRepetitionPenalty(logits, history, o.repeatPenalty, o.repeatWindow);
  if (!(o.temperature > 0)) return argmax(logits);
  const cands = topK(logits, o.topK);
  const probs = softmax(cands, o.temperature);
  const keep = topPCount(probs, o.topP);
  return cands[drawIndex(probs, keep, rng)].id;
}
