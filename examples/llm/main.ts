/**
 * `npm start`'s job: text generation with Gemma 3 270M (Q4_K_M), fetched on
 * first use. It is the `wsp-ggml generate` command (src/cli/generate.ts,
 * over the `wsp-ggml/llm` runner in src/llm/) with two defaults of its own:
 * a prompt when none is given, and the prompt echoed before the text.
 *
 *   deno run -A examples/llm/main.ts [options]
 *   bun examples/llm/main.ts [options]
 *   node --import tsx examples/llm/main.ts [options]
 *
 * Options: those of `wsp-ggml generate --help` (`--prompt`, `--n`, `--temp`,
 * `--top-k`, `--top-p`, `--seed`, `--threads`, `--json`, …).
 *
 * @module
 */
import process from "node:process";
import { main } from "../../src/cli/main.ts";
import { isProgram } from "../shared/program.ts";

/** The prompt used when none is given. */
export const DEFAULT_PROMPT = "The history of the printing press began";

/** The `generate` command line for `argv`: the default prompt added when there is none, the prompt echoed unless `--json`. */
export function commandLine(argv: readonly string[]): string[] {
  const has = (flag: string) => argv.some((a) => a === flag || a.startsWith(`${flag}=`));
  return ["generate", ...(has("--prompt") ? [] : ["--prompt", DEFAULT_PROMPT]), ...(has("--json") ? [] : ["--echo"]), ...argv];
}

if (isProgram(import.meta)) {
  process.exitCode = await main(commandLine(process.argv.slice(2)));
}
