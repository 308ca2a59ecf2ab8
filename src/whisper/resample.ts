/**
 * Band-limited resampling to Whisper's 16 kHz.
 *
 * The filter is a Kaiser-windowed sinc, evaluated as a polyphase table:
 *
 * - **cutoff**: 0.95 × the lower of the two Nyquist frequencies (7.6 kHz
 *   when downsampling to 16 kHz; 0.95 × fs/2 when upsampling from fs), so it
 *   is the anti-aliasing low-pass when downsampling and the anti-imaging one
 *   when upsampling;
 * - **length**: ±64 samples at the lower rate (129 taps at the lower rate;
 *   2·⌈64·fs/16000⌉ input taps per output sample when downsampling);
 * - **window**: Kaiser, β = 10 (Kaiser's formula gives ≈ 100 dB of stopband
 *   attenuation for that β), which with this length makes the transition
 *   band 0.90–1.00 × the lower Nyquist (7.2–8.0 kHz for a 16 kHz output);
 * - every phase is normalized to a DC gain of exactly 1.
 *
 * The ratio 16000 / fs is reduced to L / M; output sample n sits at input
 * position n·M / L, whose fractional part is one of L phases. Every common
 * rate (44.1 kHz gives L = 160) uses an exact table of L phases; when L
 * exceeds 4096 phases per lower-rate sample (a rate sharing no large factor
 * with 16000), the coefficients are interpolated linearly between that many
 * tabulated phases, an error far below the stopband. Samples outside the
 * input count as zeros. The output has ⌈n·L / M⌉ samples, aligned with the
 * input (the filter is symmetric: no delay).
 *
 * tests/whisper/wav.test.ts measures it against scipy's `resample_poly` and
 * against sinusoids evaluated at the output instants.
 *
 * @module
 */
import { ArgumentError } from "../core/errors.ts";

/** Whisper's sample rate. */
export const WHISPER_SAMPLE_RATE = 16000;

/** Half-length of the filter, in samples at the lower of the two rates. */
const HALF_TAPS = 64;
/** Cutoff as a fraction of the lower Nyquist frequency. */
const CUTOFF = 0.95;
/** Kaiser window shape. */
const BETA = 10;
/** Phases per sample at the lower rate: tabulated exactly up to this many, interpolated beyond. */
const MAX_PHASES = 4096;
/** The highest input rate accepted (the filter grows with the rate). */
export const MAX_SAMPLE_RATE = 1_000_000;
/** The lowest input rate accepted: below it there is no speech to hear, and the output grows 16000/rate-fold. */
export const MIN_SAMPLE_RATE = 1000;
/** Filters kept for reuse (each rate's table is up to ~8 MB). */
const MAX_CACHED_FILTERS = 4;

/** The zeroth-order modified Bessel function of the first kind, by its power series. */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 64; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** The polyphase filter for one input rate. */
interface Filter {
  /** Output samples per L… */
  readonly up: number;
  /** …input samples per M. */
  readonly down: number;
  /** Input taps per output sample (even); tap j multiplies input `i − taps/2 + 1 + j`. */
  readonly taps: number;
  /** Tabulated phases: `phases + 1` rows (the last equals row 0 shifted one tap, for interpolation). */
  readonly phases: number;
  readonly table: Float32Array;
}

const filters = new Map<number, Filter>();

/** Builds (once per rate) the table of coefficients: row p holds h(p/phases + k) for the taps. */
function filterFor(rate: number): Filter {
  const cached = filters.get(rate);
  if (cached) return cached;
  const g = gcd(WHISPER_SAMPLE_RATE, rate);
  const up = WHISPER_SAMPLE_RATE / g;
  const down = rate / g;
  // Cutoff in cycles per input sample ×2 (1 = input Nyquist), and the half-width in input samples.
  const fc = (CUTOFF * Math.min(rate, WHISPER_SAMPLE_RATE)) / rate;
  const half = (HALF_TAPS * Math.max(rate, WHISPER_SAMPLE_RATE)) / WHISPER_SAMPLE_RATE;
  const taps = 2 * Math.ceil(half);
  // The kernel varies on the scale of a lower-rate sample: resolve that finely, whatever the input rate.
  const phases = Math.min(up, Math.ceil((MAX_PHASES * Math.min(rate, WHISPER_SAMPLE_RATE)) / rate));
  const table = new Float32Array((phases + 1) * taps);
  const i0Beta = besselI0(BETA);
  for (let p = 0; p <= phases; p++) {
    const frac = p / phases;
    const row = new Float64Array(taps);
    let sum = 0;
    for (let j = 0; j < taps; j++) {
      // Distance from the output instant (i + frac) to input sample i − taps/2 + 1 + j.
      const x = frac + taps / 2 - 1 - j;
      const r = x / half;
      if (Math.abs(r) >= 1) continue;
      const t = Math.PI * fc * x;
      const sinc = t === 0 ? 1 : Math.sin(t) / t;
      row[j] = fc * sinc * (besselI0(BETA * Math.sqrt(1 - r * r)) / i0Beta);
      sum += row[j];
    }
    for (let j = 0; j < taps; j++) table[p * taps + j] = row[j] / sum;
  }
  const f = { up, down, taps, phases, table };
  if (filters.size >= MAX_CACHED_FILTERS) filters.delete(filters.keys().next().value!);
  filters.set(rate, f);
  return f;
}

/**
 * Resamples mono audio to 16 kHz with a band-limited (Kaiser-windowed sinc)
 * filter; see the module documentation for its design.
 *
 * @param samples the audio at `sampleRate`
 * @param sampleRate its rate in Hz, a positive integer
 * @returns a new array at 16 kHz; at 16 kHz already, an exact copy
 * @throws {ArgumentError} when `sampleRate` is not an integer from {@linkcode MIN_SAMPLE_RATE} to {@linkcode MAX_SAMPLE_RATE}, or the result would pass 2^31 - 1 samples
 */
export function resampleTo16k(samples: Float32Array, sampleRate: number): Float32Array {
  if (!Number.isInteger(sampleRate) || sampleRate < MIN_SAMPLE_RATE || sampleRate > MAX_SAMPLE_RATE) {
    throw new ArgumentError(`resampleTo16k: sampleRate must be an integer from ${MIN_SAMPLE_RATE} to ${MAX_SAMPLE_RATE} Hz, got ${sampleRate}`);
  }
  if (Math.ceil((samples.length * WHISPER_SAMPLE_RATE) / sampleRate) > 2 ** 31 - 1) {
    throw new ArgumentError(`resampleTo16k: ${samples.length} samples at ${sampleRate} Hz make more than 2^31 - 1 at 16 kHz (whisper.cpp's limit)`);
  }
  if (sampleRate === WHISPER_SAMPLE_RATE) return samples.slice();
  const { up, down, taps, phases, table } = filterFor(sampleRate);
  const n = samples.length;
  const outLen = Math.ceil((n * up) / down);
  const out = new Float32Array(outLen);
  const interpolate = phases !== up;
  const coef = interpolate ? new Float32Array(taps) : table;
  const lead = taps / 2 - 1;
  for (let o = 0; o < outLen; o++) {
    // Input position o·down/up = i + p/up, in integers (exact for any length a Float32Array can have).
    const num = o * down;
    const i = Math.floor(num / up);
    const p = num - i * up;
    let base: number;
    if (interpolate) {
      const pos = (p * phases) / up;
      const p0 = Math.floor(pos);
      const a = pos - p0;
      const r0 = p0 * taps;
      const r1 = r0 + taps;
      for (let j = 0; j < taps; j++) coef[j] = table[r0 + j] + a * (table[r1 + j] - table[r0 + j]);
      base = 0;
    } else {
      base = p * taps;
    }
    const start = i - lead;
    const j0 = Math.max(0, -start);
    const j1 = Math.min(taps, n - start);
    let acc = 0;
    for (let j = j0; j < j1; j++) acc += coef[base + j] * samples[start + j];
    out[o] = acc;
  }
  return out;
}
