/**
 * Reads the wsp_ggml public headers through libclang into the IR.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { FfiType, LibraryName } from "../src/ffi/types.ts";
import { type Clang, type Cursor, CursorKind, type Type, TypeKind } from "./clang/mod.ts";
import { API_MACROS, HEADERS, SKIP } from "./config.ts";
import type {
  ApiIR,
  CallbackIR,
  ConstantIR,
  EnumIR,
  FieldIR,
  FunctionIR,
  ParamIR,
  RecordIR,
  SkippedIR,
  TypedefIR,
  TypeRef,
} from "./ir.ts";
import { evaluateMacro } from "./macro.ts";

/** Where to find the headers and the C standard headers for one target. */
export interface ParseOptions {
  /** The folder holding ggml.h and friends (and ggml-cpu/). */
  readonly headersDir: string;
  /** libclang target triple. */
  readonly triple: string;
  /** `-isystem` folders, in order (builtin headers first). */
  readonly systemIncludes: readonly string[];
  /** Another header set than ggml's (whisper's): what it binds and how. */
  readonly set?: HeaderSet;
}

/** A set of public headers parsed in one translation unit. */
export interface HeaderSet {
  /** The headers to bind, each in its own folder (absolute), in include order. */
  readonly headers: readonly { readonly file: string; readonly library: LibraryName; readonly dir: string }[];
  /** Functions left out on purpose, with the reason. */
  readonly skip: Readonly<Record<string, string>>;
  /** Object-like macros with this prefix become constants. */
  readonly macroPrefix: string;
  /** Extra `-D` definitions (the API macros' shared-library spelling). */
  readonly defines: readonly string[];
  /** The umbrella file's name (in the first header's folder). */
  readonly umbrella: string;
}

/** ggml's own set: HEADERS of config.ts, all in `headersDir`. */
function ggmlSet(headersDir: string): HeaderSet {
  return {
    headers: HEADERS.map((h) => ({ ...h, dir: headersDir })),
    skip: SKIP,
    macroPrefix: "WSP_",
    defines: [],
    umbrella: "wsp_ggml_codegen_umbrella.c",
  };
}

/** A function the generator cannot bind; the caller decides whether the skip list covers it. */
export class UnsupportedError extends Error {
  /**
   * @param message what is unsupported
   */
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedError";
  }
}

/** Strips comment markers and common indentation from a raw comment. */
export function cleanComment(raw: string | null): string | undefined {
  if (!raw) return undefined;
  const lines = raw.split(/\r?\n/).map((l) =>
    l.trim()
      .replace(/^\/\*+!?<?/, "")
      .replace(/\*+\/$/, "")
      .replace(/^\/\/+!?<?/, "")
      .replace(/^\* ?/, "")
      .replace(/\s+$/, "")
  );
  while (lines.length && lines[0].trim() === "") lines.shift();
  while (lines.length && lines[lines.length - 1].trim() === "") lines.pop();
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)![0].length));
  const out = lines.map((l) => l.slice(Number.isFinite(indent) ? indent : 0)).join("\n");
  return out === "" ? undefined : out;
}

function intType(size: number, signed: boolean): FfiType {
  switch (size) {
    case 1: return signed ? "i8" : "u8";
    case 2: return signed ? "i16" : "u16";
    case 4: return signed ? "i32" : "u32";
    case 8: return signed ? "i64" : "u64";
  }
  throw new UnsupportedError(`no FFI type for a ${size}-byte integer`);
}

const SIZE_TYPES: Readonly<Record<string, FfiType>> = {
  size_t: "usize",
  uintptr_t: "usize",
  ssize_t: "isize",
  intptr_t: "isize",
  ptrdiff_t: "isize",
};

function isAnonymousName(name: string): boolean {
  return name === "" || name.includes("(");
}

class Parser {
  readonly functions: FunctionIR[] = [];
  readonly skipped: SkippedIR[] = [];
  readonly records: RecordIR[] = [];
  readonly enums: EnumIR[] = [];
  readonly typedefs: TypedefIR[] = [];
  readonly callbacks: CallbackIR[] = [];
  readonly constants: ConstantIR[] = [];
  readonly #seen = new Set<string>();
  readonly #recordKeys = new Map<string, string>(); // record type spelling -> key
  readonly #set: HeaderSet;
  readonly #texts = new Map<string, string>();

  constructor(set: HeaderSet) {
    this.#set = set;
  }

  /** Whether the header wraps the declaration of `name` in WSP_GGML_DEPRECATED(...) (whisper.h: WHISPER_DEPRECATED). */
  isDeprecated(file: string, name: string): boolean {
    let text = this.#texts.get(file);
    const h = this.#set.headers.find((x) => x.file === file)!;
    if (text === undefined) this.#texts.set(file, text = readFileSync(join(h.dir, file), "utf8"));
    return new RegExp(`(?:WSP_GGML|WHISPER)_DEPRECATED\\(\\s*(${API_MACROS.join("|")})[^;]*?\\b${name}\\s*\\(`).test(text);
  }

  /** The public header a cursor is spelled in, or null. */
  headerOf(c: Cursor): { file: string; library: LibraryName } | null {
    const file = c.file;
    if (!file) return null;
    const dir = resolve(dirname(file));
    return this.#set.headers.find((h) => h.file === basename(file) && resolve(h.dir) === dir) ?? null;
  }

  /** The IR key of a record type, registering anonymous ones by context. */
  recordKey(t: Type, fallback?: string): string {
    const canon = t.canonical;
    const decl = canon.declaration;
    const tag = decl.spelling;
    if (!isAnonymousName(tag)) return tag;
    const known = this.#recordKeys.get(canon.spelling);
    if (known) return known;
    if (fallback) {
      this.#recordKeys.set(canon.spelling, fallback);
      return fallback;
    }
    throw new UnsupportedError(`anonymous record ${canon.spelling} has no name`);
  }

  typeRef(t: Type): TypeRef {
    const c = t.spelling;
    const canon = t.canonical;
    const k = canon.kind;
    const base = { c } as const;
    const sized = SIZE_TYPES[c.replace(/^const /, "")];
    if (sized) return { ...base, ffi: sized };
    switch (k) {
      case TypeKind.Void: return { ...base, ffi: "void" };
      case TypeKind.Bool: return { ...base, ffi: "bool" };
      case TypeKind.Char_S: case TypeKind.Char_U:
        // Plain char is signed on x86 and unsigned on AArch64 Linux: as bytes of
        // text (char[N] fields) it is u8 everywhere; a char value would need the
        // target's signedness, so function parameters and results reject it.
        return { ...base, ffi: "u8", plainChar: true } as TypeRef;
      case TypeKind.SChar: case TypeKind.Short: case TypeKind.Int:
      case TypeKind.Long: case TypeKind.LongLong:
        return { ...base, ffi: intType(canon.size, true) };
      case TypeKind.UChar: case TypeKind.UShort: case TypeKind.UInt:
      case TypeKind.ULong: case TypeKind.ULongLong:
        return { ...base, ffi: intType(canon.size, false) };
      case TypeKind.Float: return { ...base, ffi: "f32" };
      case TypeKind.Double: return { ...base, ffi: "f64" };
      case TypeKind.Enum: {
        const it = canon.declaration.enumIntegerType.canonical;
        return { ...base, ffi: enumFfi(canon.size, it) };
      }
      case TypeKind.Pointer: {
        const pk = canon.pointee.kind;
        if (pk === TypeKind.FunctionProto || pk === TypeKind.FunctionNoProto) {
          const name = t.kind === TypeKind.Typedef || t.kind === TypeKind.Elaborated ? c : undefined;
          return name ? { ...base, ffi: "function", callback: name } : { ...base, ffi: "function" };
        }
        return { ...base, ffi: "pointer" };
      }
      case TypeKind.ConstantArray:
      case TypeKind.IncompleteArray:
        // Only reached for parameters, where C decays arrays to pointers.
        return { ...base, ffi: "pointer" };
      case TypeKind.Record:
        return { c: isAnonymousName(canon.declaration.spelling) && !t.spelling.match(/^[A-Za-z_]\w*$/) ? "struct <anonymous>" : c, ffi: "record", record: this.recordKey(t, /^[A-Za-z_]\w*$/.test(c) ? c : undefined) };
    }
    throw new UnsupportedError(`type ${c} (${canon.spelling}, kind ${k}) has no FFI mapping`);
  }

  signature(fnType: Type, names: string[]): { params: ParamIR[]; result: TypeRef } {
    const value = (t: Type): TypeRef => {
      const ref = this.typeRef(t) as TypeRef & { plainChar?: boolean };
      if (ref.plainChar) throw new UnsupportedError(`plain char by value (${ref.c}) has a target-dependent signedness`);
      return ref;
    };
    const params = fnType.args.map((a, i) => ({ name: names[i] || `arg${i}`, ...value(a) }));
    return { params, result: value(fnType.result) };
  }

  function(c: Cursor, header: { file: string; library: LibraryName }): void {
    const name = c.spelling;
    if (this.#seen.has(`fn:${name}`)) return;
    // WSP_GGML_API / WSP_GGML_BACKEND_API expand to a visibility attribute on
    // every target once WSP_GGML_SHARED and WSP_GGML_BACKEND_SHARED are defined;
    // WHISPER_API (WHISPER_SHARED) to dllexport on Windows.
    if (!c.children().some((a) => a.kind === CursorKind.VisibilityAttr || a.kind === CursorKind.DLLExport)) return;
    this.#seen.add(`fn:${name}`);
    const type = c.type;
    const reason = this.#set.skip[name];
    if (reason !== undefined) {
      this.skipped.push({ name, header: header.file, reason });
      return;
    }
    if (type.variadic) throw new UnsupportedError(`${name} is variadic and not in the skip list (codegen/config.ts SKIP)`);
    let sig;
    try {
      sig = this.signature(type, c.arguments.map((a) => a.spelling));
    } catch (e) {
      if (e instanceof UnsupportedError) {
        throw new UnsupportedError(`${name}: ${e.message}; bind it or add it to the skip list (codegen/config.ts SKIP)`);
      }
      throw e;
    }
    const all = [...sig.params, sig.result];
    this.functions.push({
      name,
      header: header.file,
      library: header.library,
      ...(cleanComment(c.rawComment) ? { doc: cleanComment(c.rawComment) } : {}),
      params: sig.params,
      result: sig.result,
      flags: {
        structByValue: all.some((p) => p.ffi === "record"),
        callbackParam: sig.params.some((p) => p.ffi === "function"),
        variadic: false,
        deprecated: this.isDeprecated(header.file, name),
      },
    });
  }

  /** Emits the record declared by `c` under `key` (and its nested anonymous records). */
  record(c: Cursor, key: string, cname: string, header: string, member?: string): void {
    if (this.#seen.has(`rec:${key}`)) return;
    this.#seen.add(`rec:${key}`);
    const type = c.type;
    this.#recordKeys.set(type.canonical.spelling, key);
    const fields: FieldIR[] = [];
    for (const f of c.children()) {
      if (f.kind !== CursorKind.FieldDecl) continue;
      if (f.isBitField) throw new UnsupportedError(`${key}.${f.spelling} is a bit field`);
      const name = f.spelling;
      const ft = f.type;
      const offset = f.fieldOffsetBits / 8;
      const size = ft.size;
      let elem = ft;
      let length: number | undefined;
      while (elem.canonical.kind === TypeKind.ConstantArray) {
        length = (length ?? 1) * elem.canonical.arraySize;
        elem = elem.canonical.element;
      }
      const doc = cleanComment(f.rawComment);
      const ec = elem.canonical;
      let ref: TypeRef;
      if (ec.kind === TypeKind.Record) {
        const decl = ec.declaration;
        const anon = isAnonymousName(decl.spelling);
        const sub = anon ? `${key}_${name}` : decl.spelling;
        if (anon) this.record(decl, sub, cname, header, member ? `${member}.${name}` : name);
        ref = { c: anon ? (decl.kind === CursorKind.UnionDecl ? "union <anonymous>" : "struct <anonymous>") : ft.spelling, ffi: "record", record: sub };
      } else {
        const { plainChar: _, ...scalar } = this.typeRef(elem) as TypeRef & { plainChar?: boolean };
        ref = { ...scalar, c: ft.spelling };
      }
      fields.push({
        name,
        c: ref.c,
        offset,
        size,
        type: ref.ffi,
        ...(length !== undefined ? { length } : {}),
        ...(ref.record ? { record: ref.record } : {}),
        ...(doc ? { doc } : {}),
      });
    }
    this.records.push({
      key,
      c: cname,
      union: c.kind === CursorKind.UnionDecl,
      header,
      ...(cleanComment(c.rawComment) ? { doc: cleanComment(c.rawComment) } : {}),
      size: type.size,
      align: type.align,
      fields,
      ...(member ? { member } : {}),
    });
  }

  enumDecl(c: Cursor, name: string, header: string): void {
    if (this.#seen.has(`enum:${name}`)) return;
    this.#seen.add(`enum:${name}`);
    const it = c.enumIntegerType.canonical;
    this.enums.push({
      name,
      header,
      ...(cleanComment(c.rawComment) ? { doc: cleanComment(c.rawComment) } : {}),
      underlying: it.spelling,
      ffi: enumFfi(c.type.canonical.size, it),
      members: c.children().filter((m) => m.kind === CursorKind.EnumConstantDecl).map((m) => {
        const doc = cleanComment(m.rawComment);
        return { name: m.spelling, value: m.enumValue.toString(), ...(doc ? { doc } : {}) };
      }),
    });
  }

  typedef(c: Cursor, header: string): void {
    const name = c.spelling;
    const u = c.typedefUnderlying;
    const canon = u.canonical;
    if (canon.kind === TypeKind.Pointer && (canon.pointee.kind === TypeKind.FunctionProto)) {
      // The written pointee keeps typedef names (int64_t, not long / long long).
      const written = u.kind === TypeKind.Pointer ? u.pointee : undefined;
      const fn = written && written.args.length === canon.pointee.args.length ? written : canon.pointee;
      // Parameter names live on the ParmDecl children of the typedef.
      const names = c.children().filter((p) => p.kind === CursorKind.ParmDecl).map((p) => p.spelling);
      let sig;
      try {
        sig = this.signature(fn, names);
      } catch (e) {
        if (e instanceof UnsupportedError) throw new UnsupportedError(`callback ${name}: ${e.message}`);
        throw e;
      }
      const doc = cleanComment(c.rawComment);
      this.callbacks.push({
        name,
        header,
        ...(doc ? { doc } : {}),
        ...sig,
        structByValue: [...sig.params, sig.result].some((p) => p.ffi === "record"),
      });
      return;
    }
    if (canon.kind === TypeKind.Record) {
      const decl = canon.declaration;
      if (isAnonymousName(decl.spelling) && decl.isDefinition) this.record(decl, name, name, header);
      return;
    }
    if (canon.kind === TypeKind.Enum) {
      const decl = canon.declaration;
      if (isAnonymousName(decl.spelling)) this.enumDecl(decl, name, header);
      return;
    }
    // An array typedef only ever crosses the boundary decayed to a pointer.
    const ref = canon.kind === TypeKind.ConstantArray ? { ffi: "pointer" as const } : this.typeRef(u);
    this.typedefs.push({ name, c: u.spelling, ffi: ref.ffi, header });
  }

  visit(tu: Cursor): void {
    for (const c of tu.children()) {
      const header = this.headerOf(c);
      if (!header) continue;
      switch (c.kind) {
        case CursorKind.FunctionDecl:
          this.function(c, header);
          break;
        case CursorKind.StructDecl:
        case CursorKind.UnionDecl: {
          const tag = c.spelling;
          if (c.isDefinition && !isAnonymousName(tag)) {
            this.record(c, tag, `${c.kind === CursorKind.UnionDecl ? "union" : "struct"} ${tag}`, header.file);
          }
          break;
        }
        case CursorKind.EnumDecl:
          if (!isAnonymousName(c.spelling)) this.enumDecl(c, c.spelling, header.file);
          break;
        case CursorKind.TypedefDecl:
          this.typedef(c, header.file);
          break;
        case CursorKind.MacroDefinition: {
          if (c.isMacroFunctionLike) break;
          const [name, ...body] = c.tokens;
          // Only the library's own namespace: headers may also set platform
          // macros (0.7's ggml.h defines _WIN32_WINNT on Windows).
          if (!name.startsWith(this.#set.macroPrefix)) break;
          const value = evaluateMacro(body, this.constants);
          if (value) this.constants.push({ name, header: header.file, value });
          break;
        }
      }
    }
  }
}

function enumFfi(size: number, underlying: Type): FfiType {
  const signed = underlying.kind !== TypeKind.UInt && underlying.kind !== TypeKind.ULong &&
    underlying.kind !== TypeKind.ULongLong && underlying.kind !== TypeKind.UChar && underlying.kind !== TypeKind.UShort;
  // SysV gives an enum without negative members `unsigned int`, Windows `int`;
  // both pass the same way, so a 4-byte enum is `i32` on every target when its
  // members fit (checked by the emitter).
  return size === 4 ? "i32" : intType(size, signed);
}

/** The translation unit that includes every public header. */
export function umbrella(set?: HeaderSet): string {
  return (set?.headers ?? HEADERS).map((h) => `#include "${h.file}"\n`).join("");
}

/** Compiler arguments for parsing the headers for one target. */
export function clangArgs(o: ParseOptions): string[] {
  return [
    "-x", "c", "-std=c11",
    "-target", o.triple,
    "-nostdinc",
    ...o.systemIncludes.flatMap((d) => ["-isystem", d]),
    "-I", o.headersDir,
    "-I", join(o.headersDir, "ggml-cpu"),
    ...(o.set ? [...new Set(o.set.headers.map((h) => h.dir))].flatMap((d) => ["-I", d]) : []),
    "-DWSP_GGML_SHARED", "-DWSP_GGML_BUILD", "-DWSP_GGML_BACKEND_SHARED", "-DWSP_GGML_BACKEND_BUILD",
    ...(o.set?.defines ?? []).map((d) => `-D${d}`),
    "-fparse-all-comments",
    "-Wno-ignored-attributes",
  ];
}

/** Parses the public headers for one target into the IR. */
export function parseApi(clang: Clang, o: ParseOptions): ApiIR {
  const dir = resolve(o.headersDir);
  const set = o.set ?? ggmlSet(dir);
  const tu = clang.parse(join(set.headers[0].dir, set.umbrella), umbrella(set), clangArgs({ ...o, headersDir: dir }));
  const errors = clang.diagnostics().filter((d) => d.severity >= 3);
  if (errors.length) {
    throw new Error(`libclang reported errors for ${o.triple}:\n${errors.map((d) => d.message).join("\n")}`);
  }
  const p = new Parser(set);
  p.visit(tu);
  for (const name of Object.keys(set.skip)) {
    if (!p.skipped.some((s) => s.name === name)) {
      throw new Error(`skip list entry ${name} is not declared by any public header: remove it from codegen/config.ts`);
    }
  }
  return {
    target: o.triple,
    headers: set.headers.map((h) => h.file),
    functions: p.functions,
    skipped: p.skipped,
    records: p.records,
    enums: p.enums,
    typedefs: p.typedefs,
    callbacks: p.callbacks,
    constants: p.constants,
  };
}
