// Types of scripts/speech.mjs, for the TypeScript tests that import it.

/** A clip of tests/fixtures/speech/sentences.json. */
export interface SpeechClip {
  /** A short name, also the start of the file name. */
  readonly id: string;
  /** What espeak-ng reads. */
  readonly text: string;
  /** The transcript a listener would write. */
  readonly reference: string;
}

/** A clip made into a WAV file (16 kHz, 16-bit, mono). */
export interface SpeechFile extends SpeechClip {
  /** The WAV file. */
  readonly path: string;
  /** Its length in seconds. */
  readonly seconds: number;
}

/** Why the clips cannot be made here ("" when they can): espeak-ng or sox missing. */
export function speechMissing(): string;

/** The clips as listed, without making them. */
export function speechClips(): SpeechClip[];

/**
 * Makes (when missing) every clip and returns where each is.
 *
 * @param options `dir`: where the WAVs go (default `.cache/speech/` of the checkout)
 * @throws {Error} when espeak-ng or sox is missing or fails
 */
export function speechFiles(options?: { dir?: string }): SpeechFile[];
