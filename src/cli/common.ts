/**
 * What the `wsp-ggml` command's subcommands share: exit codes, the usage
 * error, argument parsing with `node:util`'s `parseArgs`, and type names.
 *
 * @module
 */
import process from "node:process";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { Type, typeName as ggmlTypeName } from "../mod.ts";

/** Exit status: success. */
export const EXIT_OK = 0;
/** Exit status: the command was well formed but failed while it ran (a missing file, a corrupt GGUF, …). */
export const EXIT_FAILURE = 1;
/** Exit status: a usage error (unknown command or option, a missing or malformed argument), or a command not available yet. */
export const EXIT_USAGE = 2;
/** Exit status: stopped by Ctrl-C (SIGINT), as a shell reports a process SIGINT ended (128 + 2). */
export const EXIT_INTERRUPTED = 130;

/** The exit codes as `--help` documents them. */
export const EXIT_CODES_HELP = `exit status:
  0  success
  1  failure while running (missing or unreadable file, bad GGUF, library or model problem)
  2  usage error (unknown command or option, missing or malformed argument), or a command not available yet
  130  stopped by Ctrl-C (generate: between tokens, the text so far ending with a newline)`;

/** A malformed command line: the dispatcher prints it with a pointer to `--help` and exits with {@linkcode EXIT_USAGE}. */
export class UsageError extends Error {
  /** `"UsageError"`. */
  override readonly name = "UsageError";
}

/** One subcommand of `wsp-ggml`. */
export interface Command {
  /** Its name on the command line. */
  readonly name: string;
  /** One line for the top-level help. */
  readonly summary: string;
  /** Its full `--help` text. */
  readonly help: string;
  /**
   * Runs it with the arguments after its name; resolves to the exit code.
   *
   * @throws {UsageError} for a malformed command line (exit 2); any other error is a run-time failure (exit 1)
   */
  run(argv: string[]): Promise<number>;
}

/** The option config of `parseArgs`. */
export type Options = NonNullable<ParseArgsConfig["options"]>;

/** What {@linkcode parse} returns: the option values (strings, booleans) and the positionals. */
export interface Parsed<O extends Options> {
  /** Each option given, by name; `help` when `-h` / `--help` was. */
  readonly values: { [K in keyof O]?: O[K]["type"] extends "boolean" ? boolean : string } & { help?: boolean };
  /** The positional arguments. */
  readonly positionals: string[];
}

/**
 * `parseArgs` in strict mode, with `-h, --help` added; its errors become a
 * {@linkcode UsageError}, as does a positional count outside `min..max`.
 */
export function parse<O extends Options>(argv: string[], options: O, positionals: { min: number; max: number; names: string }): Parsed<O> {
  let r;
  try {
    r = parseArgs({ args: argv, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: positionals.max > 0, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const values = r.values as Parsed<O>["values"];
  if (!values.help) {
    const n = r.positionals.length;
    if (n < positionals.min) throw new UsageError(`missing ${positionals.names}`);
    if (n > positionals.max) throw new UsageError(`unexpected argument ${JSON.stringify(r.positionals[positionals.max])}`);
  }
  return { values, positionals: r.positionals };
}

/** A number option: `dflt` when absent, else `raw` as a number that passes `ok`. */
export function numberOption(name: string, raw: string | undefined, dflt: number, ok: (v: number) => boolean, what: string): number {
  if (raw === undefined) return dflt;
  const v = raw.trim() === "" ? NaN : Number(raw);
  if (!ok(v)) throw new UsageError(`--${name} must be ${what}, got ${JSON.stringify(raw)}`);
  return v;
}

/** A predicate: an integer ≥ `min`. */
export const intAtLeast = (min: number): (v: number) => boolean => (v: number): boolean => Number.isInteger(v) && v >= min;

const TYPE_NAMES = new Map<number, string>(Object.entries(Type).filter(([k]) => k !== "COUNT").map(([k, v]) => [v as number, k]));

/** ggml's name of a tensor type (`q8_0`, `q4_K`, `f16`), or its number when it is not a type. */
export function typeName(type: number): string {
  return TYPE_NAMES.has(type) ? ggmlTypeName(type as Type) : String(type);
}

/** The type named `name` (any case: `q8_0`, `Q4_K`, `f16`), or undefined. */
export function typeByName(name: string): number | undefined {
  const up = name.toUpperCase();
  for (const [v, k] of TYPE_NAMES) if (k === up) return v;
  return undefined;
}

/** JSON with bigints written as exact numbers. */
export function toJson(value: unknown, indent?: number): string {
  const marker = "\u0000bigint:";
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${marker}${v}` : v), indent).replace(/"\\u0000bigint:(-?\d+)"/g, "$1");
}

/** Writes a line to stderr. */
export function warn(line: string): void {
  process.stderr.write(`${line}\n`);
}
