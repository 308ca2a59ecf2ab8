/**
 * Subcommand names kept for work to come: `transcribe` (speech to text with
 * Whisper). It says it is not available yet and exits with status 2.
 *
 * @module
 */
import { type Command, EXIT_CODES_HELP, EXIT_OK, EXIT_USAGE, warn } from "./common.ts";

function reserved(name: string, what: string): Command {
  const help = `usage: wsp-ggml ${name} …

${what}: not available yet in this version of wsp-ggml (the name is reserved; running it exits
with status 2).

${EXIT_CODES_HELP}`;
  return {
    name,
    summary: `${what} (not available yet)`,
    help,
    run(argv) {
      if (argv.includes("--help") || argv.includes("-h")) {
        console.log(help);
        return Promise.resolve(EXIT_OK);
      }
      warn(`wsp-ggml ${name}: not available yet (${what})`);
      return Promise.resolve(EXIT_USAGE);
    },
  };
}

/** `wsp-ggml transcribe`: reserved. */
export const transcribe: Command = reserved("transcribe", "speech to text with a Whisper model");
