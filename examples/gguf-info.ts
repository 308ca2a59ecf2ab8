/**
 * Prints a GGUF file's metadata (every KV with its type) and its tensor table
 * (name, type, shape, data offset, size), like gguf-py's `gguf-dump`.
 *
 *   deno run -A examples/gguf-info.ts FILE [--json] [--all]
 *   bun examples/gguf-info.ts FILE [--json] [--all]
 *   node --import tsx examples/gguf-info.ts FILE [--json] [--all]
 *
 * `--json` prints one JSON document (64-bit integers as exact JSON numbers);
 * `--all` prints arrays in full (the text output shows their first 8 items).
 *
 * @module
 */
import process from "node:process";
import { type GgufEntry, GgufError, type GgufFile, GgufType, readGguf, type Type, typeName } from "../mod.ts";

const GGUF_TYPE_NAMES = new Map(Object.entries(GgufType).map(([k, v]) => [v as number, k]));

/** ggml's name of a tensor type in gguf-dump's spelling: `Q4_K` for `q4_K`. */
const tensorType = (type: Type) => typeName(type).toUpperCase();

/** `UINT32`, or `[UINT32]` for an array of them. */
function kvType(e: GgufEntry): string {
  return e.type === GgufType.ARRAY ? `[${GGUF_TYPE_NAMES.get(e.arrayType!)}]` : GGUF_TYPE_NAMES.get(e.type)!;
}

function count(e: GgufEntry): number {
  return e.type === GgufType.ARRAY ? (e.value as ArrayLike<unknown>).length : 1;
}

function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "bigint") return v.toString();
  return String(v);
}

function valueText(e: GgufEntry, all: boolean): string {
  if (e.type !== GgufType.ARRAY) return show(e.value);
  const items = Array.from(e.value as ArrayLike<unknown>);
  const shown = all ? items : items.slice(0, 8);
  return `[${shown.map(show).join(", ")}${shown.length < items.length ? `, … ${items.length - shown.length} more` : ""}]`;
}

/** The file as a plain object (bigints kept as bigints). */
export function describe(f: GgufFile): Record<string, unknown> {
  return {
    path: f.path,
    version: f.version,
    alignment: f.alignment,
    dataOffset: f.dataOffset,
    fileSize: f.fileSize,
    kv: f.entries.map((e) => ({
      key: e.key,
      type: GGUF_TYPE_NAMES.get(e.type),
      ...(e.type === GgufType.ARRAY ? { arrayType: GGUF_TYPE_NAMES.get(e.arrayType!) } : {}),
      count: count(e),
      value: e.type === GgufType.ARRAY ? Array.from(e.value as ArrayLike<unknown>) : e.value,
    })),
    tensors: f.tensors.map((t) => ({
      name: t.name,
      type: tensorType(t.type),
      shape: t.shape,
      offset: t.offset,
      fileOffset: t.fileOffset,
      nbytes: t.nbytes,
    })),
  };
}

/** JSON with bigints written as exact JSON numbers (as Python's json would). */
export function toJson(value: unknown): string {
  const marker = "\u0000big:";
  const text = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${marker}${v}` : v), 1);
  return text.replace(/"\\u0000big:(-?\d+)"/g, "$1");
}

/** The text report. */
export function report(f: GgufFile, all = false): string {
  const lines = [
    `${f.path}: GGUF v${f.version}, ${f.fileSize} bytes, alignment ${f.alignment}, data at ${f.dataOffset}`,
    `* ${f.entries.length} key/value pair(s)`,
  ];
  f.entries.forEach((e, i) => {
    lines.push(`${String(i + 1).padStart(6)}: ${kvType(e).padEnd(10)} | ${String(count(e)).padStart(8)} | ${e.key} = ${valueText(e, all)}`);
  });
  lines.push(`* ${f.tensors.length} tensor(s)`);
  lines.push(`${"#".padStart(6)}  ${"name".padEnd(24)} ${"type".padEnd(6)} ${"shape".padEnd(22)} ${"offset".padStart(10)} ${"bytes".padStart(10)}`);
  f.tensors.forEach((t, i) => {
    lines.push(
      `${String(i + 1).padStart(6)}: ${t.name.padEnd(24)} ${tensorType(t.type).padEnd(6)} ${t.shape.join(" × ").padEnd(22)} ${String(t.offset).padStart(10)} ${String(t.nbytes).padStart(10)}`,
    );
  });
  return lines.join("\n");
}

/** The CLI. */
export function main(argv: string[]): number {
  const files = argv.filter((a) => !a.startsWith("--"));
  const unknown = argv.filter((a) => a.startsWith("--") && a !== "--json" && a !== "--all");
  if (files.length !== 1 || unknown.length) {
    console.error("usage: gguf-info.ts FILE [--json] [--all]");
    return 2;
  }
  let f: GgufFile;
  try {
    f = readGguf(files[0]);
  } catch (e) {
    if (!(e instanceof GgufError)) throw e;
    console.error(`gguf-info: ${e.message}`);
    return 1;
  }
  console.log(argv.includes("--json") ? toJson(describe(f)) : report(f, argv.includes("--all")));
  return 0;
}

process.exitCode = main(process.argv.slice(2));
