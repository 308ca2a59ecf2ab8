/**
 * The mel filterbank Whisper's front end uses — Slaney's mel scale with
 * Slaney's area normalisation, as librosa's `filters.mel` computes it with
 * its defaults (`htk=False`, `norm="slaney"`) — derived from the formula:
 *
 * - the mel scale is linear below 1 kHz (200/3 Hz per mel) and logarithmic
 *   above (27 mels per factor 6.4);
 * - `nMels + 2` points spaced evenly in mels from `fMin` to `fMax` are the
 *   band edges; band `i` is the triangle rising from edge `i` to `i + 1`
 *   and falling to `i + 2`, sampled at the FFT bin frequencies
 *   `k · sampleRate / nFft`, `k = 0 … nFft/2`;
 * - each triangle is scaled by `2 / (edge[i+2] − edge[i])`, so every band
 *   has about the same area.
 *
 * CTranslate2's Whisper packages do not carry the filters; whisper.cpp's
 * model file does (80 × 201 f32 for the 16 kHz, `n_fft` 400 front end).
 *
 * @module
 */

/** Slaney's mel scale: Hz → mel. */
export function hzToMel(hz: number): number {
  const fSp = 200 / 3, minLogHz = 1000, minLogMel = minLogHz / fSp, logStep = Math.log(6.4) / 27;
  return hz >= minLogHz ? minLogMel + Math.log(hz / minLogHz) / logStep : hz / fSp;
}

/** Slaney's mel scale: mel → Hz. */
export function melToHz(mel: number): number {
  const fSp = 200 / 3, minLogHz = 1000, minLogMel = minLogHz / fSp, logStep = Math.log(6.4) / 27;
  return mel >= minLogMel ? minLogHz * Math.exp(logStep * (mel - minLogMel)) : fSp * mel;
}

/** Options of {@linkcode melFilters}. */
export interface MelOptions {
  /** Number of mel bands (default 80; 128 for large-v3). */
  readonly nMels?: number;
  /** FFT size (default 400: 25 ms at 16 kHz); there are `nFft/2 + 1` bins. */
  readonly nFft?: number;
  /** Sample rate in Hz (default 16000). */
  readonly sampleRate?: number;
  /** Lowest band edge in Hz (default 0). */
  readonly fMin?: number;
  /** Highest band edge in Hz (default sampleRate / 2). */
  readonly fMax?: number;
}

/**
 * The `nMels × (nFft/2 + 1)` filterbank, row-major (one row per mel band),
 * computed in float64 and rounded to f32 as whisper.cpp stores it.
 */
export function melFilters(options: MelOptions = {}): Float32Array {
  const nMels = options.nMels ?? 80, nFft = options.nFft ?? 400, sr = options.sampleRate ?? 16000;
  const fMin = options.fMin ?? 0, fMax = options.fMax ?? sr / 2;
  const nBins = Math.floor(nFft / 2) + 1;
  const lo = hzToMel(fMin), hi = hzToMel(fMax);
  const edges = Array.from({ length: nMels + 2 }, (_, i) => melToHz(lo + ((hi - lo) * i) / (nMels + 1)));
  const out = new Float32Array(nMels * nBins);
  for (let m = 0; m < nMels; m++) {
    const left = edges[m], center = edges[m + 1], right = edges[m + 2];
    const norm = 2 / (right - left);
    for (let k = 0; k < nBins; k++) {
      const f = (k * sr) / nFft;
      const rise = (f - left) / (center - left), fall = (right - f) / (right - center);
      out[m * nBins + k] = Math.max(0, Math.min(rise, fall)) * norm;
    }
  }
  return out;
}
