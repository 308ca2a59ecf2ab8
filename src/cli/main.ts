/**
 * The `wsp-ggml` command: a small dispatcher over one module per
 * subcommand (`info`, `gguf-info`, `quantize`, `generate`, `chat`, `transcribe`,
 * `convert-whisper`, `rpc-server`).
 *
 *   wsp-ggml <command> [options]        (the package's bin)
 *   npm run cli -- <command> [options]  (from a checkout)
 *
 * Exit status: 0 success, 1 failure while running, 2 usage error.
 *
 * @module
 */
import process from "node:process";
import { chatCommand } from "./chat.ts";
import { type Command, EXIT_CODES_HELP, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError } from "./common.ts";
import { convertWhisperCommand } from "./convert_whisper.ts";
import { generateCommand } from "./generate.ts";
import { ggufInfo } from "./gguf_info.ts";
import { info } from "./info.ts";
import { quantizeCommand } from "./quantize.ts";
import { transcribeCommand } from "./transcribe.ts";
import { rpcServer } from "./rpc_server.ts";
import { VERSION } from "../runtime/version.ts";

/** Every subcommand, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [info, ggufInfo, quantizeCommand, generateCommand, chatCommand, transcribeCommand, convertWhisperCommand, rpcServer];

/** The top-level help. */
export const HELP = `usage: wsp-ggml <command> [options]
       wsp-ggml <command> --help

The ggml tensor library (whisper.rn's wsp_ggml) for TypeScript on Deno, Bun and Node.js.

commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(15)} ${c.summary}`).join("\n")}

options:
  -h, --help     this text
  -v, --version  the version

${EXIT_CODES_HELP}`;

/** Runs the command line `argv` (without the program name); resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    if (name === "help" && rest.length > 0) return main([rest[0], "--help"]);
    (name === undefined ? process.stderr : process.stdout).write(HELP + "\n");
    return name === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (name === "--version" || name === "-v") {
    process.stdout.write(`${VERSION}\n`);
    return EXIT_OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`wsp-ggml: unknown command ${JSON.stringify(name)}; commands: ${COMMANDS.map((c) => c.name).join(", ")} (wsp-ggml --help)\n`);
    return EXIT_USAGE;
  }
  try {
    return await command.run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`wsp-ggml ${name}: ${e.message} (wsp-ggml ${name} --help)\n`);
      return EXIT_USAGE;
    }
    const err = e as Error;
    process.stderr.write(`wsp-ggml ${name}: ${err?.name && err.name !== "Error" ? `${err.name}: ` : ""}${err?.message ?? String(e)}\n`);
    if (process.env.WSP_GGML_DEBUG) process.stderr.write(`${err?.stack ?? ""}\n`);
    return EXIT_FAILURE;
  }
}

/** Whether this process is Node.js started by `bunx` (which sets npm's variables with a `bun/` user agent). */
export function bunxOnNode(env: Readonly<Record<string, string | undefined>>): boolean {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  return g.Bun === undefined && g.Deno === undefined && env.npm_lifecycle_event === "bunx" && (env.npm_config_user_agent ?? "").startsWith("bun/");
}
