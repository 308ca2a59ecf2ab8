/**
 * Whisper's vocabulary as whisper.cpp's model file wants it: the raw bytes
 * of each token. Hugging Face's `tokenizer.json` (byte-level BPE) spells
 * every byte as a printable character — GPT-2's byte table: the printable
 * Latin-1 bytes stand for themselves, the other 68 bytes for U+0100
 * onwards in order — so a token's string is mapped back through that table.
 * Many tokens are partial UTF-8 sequences (half of a multi-byte character);
 * they stay bytes, never decoded as text.
 *
 * whisper.cpp computes the special tokens' ids from `n_vocab`
 * (end-of-text, start-of-transcript, the languages, tasks, timestamps) and
 * names those past the written ones itself, so only the regular tokens —
 * every id below the first special token — are written, as OpenAI's own
 * conversion does.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { Ct2FormatError } from "./ct2.ts";

/** GPT-2's byte table: byte value → the code point that stands for it in byte-level BPE strings. */
export function gpt2ByteToChar(): Uint32Array {
  const out = new Uint32Array(256);
  const direct = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  for (let b = 0; b < 256; b++) out[b] = direct(b) ? b : next++;
  return out;
}

/** The inverse of {@linkcode gpt2ByteToChar}: code point → byte (−1 for characters outside the table). */
function charToByte(): Map<number, number> {
  const t = gpt2ByteToChar();
  return new Map(Array.from(t, (cp, b) => [cp, b]));
}

let DECODE: Map<number, number> | undefined;

/**
 * The raw bytes of a byte-level BPE token string.
 *
 * @throws {Error} when the string holds a character outside GPT-2's byte table
 */
export function tokenBytes(token: string): Uint8Array {
  DECODE ??= charToByte();
  const out: number[] = [];
  for (const ch of token) {
    const b = DECODE.get(ch.codePointAt(0)!);
    if (b === undefined) throw new Error(`token ${JSON.stringify(token)}: U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")} is not in GPT-2's byte table`);
    out.push(b);
  }
  return Uint8Array.from(out);
}

/** What {@linkcode readWhisperVocab} found. */
export interface WhisperVocab {
  /** The regular tokens' bytes, by id (0 … the first special id − 1). */
  readonly tokens: readonly Uint8Array[];
  /** The id of the first special token (`<|endoftext|>`, 50257 for the multilingual models). */
  readonly firstSpecial: number;
  /** Every id the tokenizer knows, special ones included (`vocabulary.txt`'s line count when present). */
  readonly total: number;
}

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number> };
  added_tokens?: { id: number; content: string; special?: boolean }[];
}

/**
 * Reads the vocabulary of a CTranslate2 Whisper folder: `tokenizer.json`'s
 * BPE vocabulary, mapped to bytes; `vocabulary.txt`, when present, must
 * agree with it on every regular token.
 *
 * @throws {Ct2FormatError} when `tokenizer.json` is missing or not a byte-level BPE vocabulary, or the two files disagree
 */
export function readWhisperVocab(tokenizerJson: string, vocabularyTxt?: string): WhisperVocab {
  if (!existsSync(tokenizerJson)) throw new Ct2FormatError("IO", tokenizerJson, "no such file; the CTranslate2 Whisper folder needs its tokenizer.json");
  let tj: TokenizerJson;
  try {
    tj = JSON.parse(readFileSync(tokenizerJson, "utf8")) as TokenizerJson;
  } catch (e) {
    throw new Ct2FormatError("INVALID", tokenizerJson, `not JSON: ${(e as Error).message}`);
  }
  const vocab = tj.model?.vocab;
  if (tj.model?.type !== "BPE" || !vocab) throw new Ct2FormatError("FORMAT", tokenizerJson, "not a BPE tokenizer (model.type, model.vocab); expected Whisper's byte-level BPE tokenizer.json");
  const specials = (tj.added_tokens ?? []).filter((t) => t.special !== false).map((t) => t.id);
  const firstSpecial = specials.length ? Math.min(...specials) : Object.keys(vocab).length;
  const byId: (string | undefined)[] = new Array(firstSpecial);
  for (const [s, id] of Object.entries(vocab)) if (id < firstSpecial) byId[id] = s;
  const tokens: Uint8Array[] = [];
  for (let id = 0; id < firstSpecial; id++) {
    const s = byId[id];
    if (s === undefined) throw new Ct2FormatError("INVALID", tokenizerJson, `no token with id ${id} below the first special token ${firstSpecial}`);
    try {
      tokens.push(tokenBytes(s));
    } catch (e) {
      throw new Ct2FormatError("INVALID", tokenizerJson, (e as Error).message);
    }
  }
  let total = Math.max(firstSpecial, ...specials.map((i) => i + 1));
  if (vocabularyTxt !== undefined && existsSync(vocabularyTxt)) {
    const lines = readFileSync(vocabularyTxt, "utf8").split("\n");
    if (lines.at(-1) === "") lines.pop();
    for (let id = 0; id < firstSpecial; id++) {
      if (lines[id] !== byId[id]) throw new Ct2FormatError("INVALID", vocabularyTxt, `token ${id} is ${JSON.stringify(lines[id])}, tokenizer.json says ${JSON.stringify(byId[id])}; the two files are not of one model`);
    }
    total = lines.length;
  }
  return { tokens, firstSpecial, total };
}
