/**
 * `wsp-ggml gguf-info FILE`: a GGUF file's metadata (every key with its
 * type and value) and its tensor table (name, type, shape, offset, size).
 *
 * @module
 */
import process from "node:process";
import { type GgufEntry, type GgufFile, GgufType, readGguf } from "../mod.ts";
import { type Command, EXIT_CODES_HELP, EXIT_OK, parse, toJson, typeName } from "./common.ts";

const HELP = `usage: wsp-ggml gguf-info FILE [--json] [--all]

Prints a GGUF file's header, its key/value metadata (with each value's type) and its tensor
table: name, type, shape (innermost dimension first), offset in the data section and bytes.

  --json      one JSON document: {path, version, alignment, dataOffset, fileSize, kv: [{key,
              type, arrayType?, count, value}], tensors: [{name, type, shape, offset, nbytes}]};
              64-bit integers are exact JSON numbers, arrays are given in full
  --all       text output: print arrays in full (default: their first 8 items)
  -h, --help  this text

${EXIT_CODES_HELP}`;

const GGUF_TYPE_NAMES = new Map<number, string>(Object.entries(GgufType).map(([k, v]) => [v as number, k.toLowerCase()]));

function kvType(e: GgufEntry): string {
  return e.type === GgufType.ARRAY ? `array[${GGUF_TYPE_NAMES.get(e.arrayType!)}]` : GGUF_TYPE_NAMES.get(e.type) ?? String(e.type);
}

function items(e: GgufEntry): unknown[] {
  return e.type === GgufType.ARRAY ? Array.from(e.value as ArrayLike<unknown>) : [e.value];
}

/** The file as a plain object (64-bit integers stay bigints; `toJson` writes them exactly). */
function describeGguf(f: GgufFile): Record<string, unknown> {
  return {
    path: f.path,
    version: f.version,
    alignment: f.alignment,
    dataOffset: f.dataOffset,
    fileSize: f.fileSize,
    kv: f.entries.map((e) => ({
      key: e.key,
      type: e.type === GgufType.ARRAY ? "array" : GGUF_TYPE_NAMES.get(e.type),
      ...(e.type === GgufType.ARRAY ? { arrayType: GGUF_TYPE_NAMES.get(e.arrayType!) } : {}),
      count: e.type === GgufType.ARRAY ? (e.value as ArrayLike<unknown>).length : 1,
      value: e.type === GgufType.ARRAY ? items(e) : e.value,
    })),
    tensors: f.tensors.map((t) => ({ name: t.name, type: typeName(t.type), shape: t.shape, offset: t.offset, nbytes: t.nbytes })),
  };
}

function show(v: unknown): string {
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

/** The text report. */
function ggufText(f: GgufFile, all = false): string {
  const lines = [
    `${f.path}: GGUF v${f.version}, ${f.fileSize} bytes, alignment ${f.alignment}, data at byte ${f.dataOffset}`,
    "",
    `${f.entries.length} key/value pairs:`,
  ];
  const keyWidth = Math.min(48, Math.max(0, ...f.entries.map((e) => e.key.length)));
  for (const e of f.entries) {
    let value: string;
    if (e.type === GgufType.ARRAY) {
      const xs = items(e), shown = all ? xs : xs.slice(0, 8);
      value = `[${shown.map(show).join(", ")}${shown.length < xs.length ? `, … ${xs.length - shown.length} more` : ""}] (${xs.length})`;
    } else value = show(e.value);
    lines.push(`  ${e.key.padEnd(keyWidth)}  ${kvType(e).padEnd(14)} ${value}`);
  }
  lines.push("", `${f.tensors.length} tensors:`);
  const nameWidth = Math.min(48, Math.max(4, ...f.tensors.map((t) => t.name.length)));
  lines.push(`  ${"name".padEnd(nameWidth)}  ${"type".padEnd(8)} ${"shape".padEnd(24)} ${"offset".padStart(12)} ${"bytes".padStart(12)}`);
  for (const t of f.tensors) {
    lines.push(`  ${t.name.padEnd(nameWidth)}  ${typeName(t.type).padEnd(8)} ${`[${t.shape.join(", ")}]`.padEnd(24)} ${String(t.offset).padStart(12)} ${String(t.nbytes).padStart(12)}`);
  }
  const total = f.tensors.reduce((a, t) => a + t.nbytes, 0);
  const elems = f.tensors.reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1), 0);
  lines.push(`  ${elems} elements, ${total} bytes of tensor data`);
  return lines.join("\n");
}

/** The `gguf-info` subcommand. */
export const ggufInfo: Command = {
  name: "gguf-info",
  summary: "a GGUF file's metadata and tensor table (--json)",
  help: HELP,
  run(argv) {
    const { values, positionals } = parse(argv, { json: { type: "boolean" }, all: { type: "boolean" } }, { min: 1, max: 1, names: "the GGUF FILE" });
    if (values.help) {
      console.log(HELP);
      return Promise.resolve(EXIT_OK);
    }
    const f = readGguf(positionals[0]);
    process.stdout.write((values.json ? toJson(describeGguf(f), 1) : ggufText(f, values.all ?? false)) + "\n");
    return Promise.resolve(EXIT_OK);
  },
};
