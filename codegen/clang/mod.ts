/**
 * A typed binding of the part of libclang's C API that the generator needs,
 * driven over FFI through the same runtime adapter as `src/` (so it runs on
 * Deno, Bun and Node alike). Cursors and types are handles into the tables of
 * `shim.c`, valid until the next {@linkcode Clang.parse}.
 *
 * @module
 */
import { cString, type FfiAdapter, loadAdapter, type NativeLibrary } from "../../src/ffi/mod.ts";
import { buildShim, findLibclang } from "./find.ts";

const I32 = ["i32"] as const;
const SHIM = {
  wcg_open: { args: ["pointer"], result: "pointer" },
  wcg_parse: { args: ["pointer", "pointer", "pointer"], result: "i32" },
  wcg_num_diagnostics: { args: [], result: "i32" },
  wcg_diagnostic_severity: { args: I32, result: "i32" },
  wcg_diagnostic: { args: I32, result: "pointer" },
  wcg_children: { args: I32, result: "i32" },
  wcg_children_first: { args: [], result: "i32" },
  wcg_cursor_kind: { args: I32, result: "i32" },
  wcg_cursor_spelling: { args: I32, result: "pointer" },
  wcg_cursor_file: { args: I32, result: "pointer" },
  wcg_cursor_line: { args: I32, result: "i32" },
  wcg_cursor_tokens: { args: I32, result: "pointer" },
  wcg_cursor_type: { args: I32, result: "i32" },
  wcg_typedef_underlying: { args: I32, result: "i32" },
  wcg_enum_integer_type: { args: I32, result: "i32" },
  wcg_enum_value: { args: I32, result: "i64" },
  wcg_num_arguments: { args: I32, result: "i32" },
  wcg_argument: { args: ["i32", "i32"], result: "i32" },
  wcg_field_offset_bits: { args: I32, result: "i64" },
  wcg_is_definition: { args: I32, result: "i32" },
  wcg_is_anonymous: { args: I32, result: "i32" },
  wcg_is_bitfield: { args: I32, result: "i32" },
  wcg_is_macro_function_like: { args: I32, result: "i32" },
  wcg_raw_comment: { args: I32, result: "pointer" },
  wcg_brief_comment: { args: I32, result: "pointer" },
  wcg_type_kind: { args: I32, result: "i32" },
  wcg_type_spelling: { args: I32, result: "pointer" },
  wcg_type_canonical: { args: I32, result: "i32" },
  wcg_type_pointee: { args: I32, result: "i32" },
  wcg_type_result: { args: I32, result: "i32" },
  wcg_type_num_args: { args: I32, result: "i32" },
  wcg_type_arg: { args: ["i32", "i32"], result: "i32" },
  wcg_type_is_variadic: { args: I32, result: "i32" },
  wcg_type_is_const: { args: I32, result: "i32" },
  wcg_type_sizeof: { args: I32, result: "i64" },
  wcg_type_alignof: { args: I32, result: "i64" },
  wcg_type_array_size: { args: I32, result: "i64" },
  wcg_type_element: { args: I32, result: "i32" },
  wcg_type_named: { args: I32, result: "i32" },
  wcg_type_declaration: { args: I32, result: "i32" },
} as const;

/** Keeps buffers reachable until after the native call that uses their address. */
let sink: unknown;
function keepAlive(...buffers: Uint8Array[]): void {
  sink = buffers;
  sink = undefined;
}

type Shim = NativeLibrary<typeof SHIM>["symbols"];

/** libclang cursor kinds (CXCursorKind) the generator looks at. */
export const CursorKind = {
  StructDecl: 2,
  UnionDecl: 3,
  EnumDecl: 5,
  FieldDecl: 6,
  EnumConstantDecl: 7,
  FunctionDecl: 8,
  VarDecl: 9,
  ParmDecl: 10,
  TypedefDecl: 20,
  TypeRef: 43,
  UnexposedAttr: 400,
  VisibilityAttr: 417,
  DLLExport: 418,
  MacroDefinition: 501,
} as const;

/** libclang type kinds (CXTypeKind) the generator looks at. */
export const TypeKind = {
  Invalid: 0,
  Unexposed: 1,
  Void: 2,
  Bool: 3,
  Char_U: 4,
  UChar: 5,
  UShort: 8,
  UInt: 9,
  ULong: 10,
  ULongLong: 11,
  Char_S: 13,
  SChar: 14,
  Short: 16,
  Int: 17,
  Long: 18,
  LongLong: 19,
  Float: 21,
  Double: 22,
  Pointer: 101,
  Record: 105,
  Enum: 106,
  Typedef: 107,
  FunctionNoProto: 110,
  FunctionProto: 111,
  ConstantArray: 112,
  IncompleteArray: 114,
  Elaborated: 119,
} as const;

/** What a {@linkcode Type} and a {@linkcode Cursor} share: a libclang handle and the binding that resolves it. */
abstract class Handle {
  /** @internal */
  protected readonly c: Clang;
  /** The handle. */
  readonly handle: number;
  /** @internal */
  constructor(c: Clang, handle: number) {
    this.c = c;
    this.handle = handle;
  }
  /** @internal */
  protected get s(): Shim {
    return this.c.shim;
  }
}

/** A libclang type (a handle). */
export class Type extends Handle {
  /** CXTypeKind. */
  get kind(): number {
    return this.s.wcg_type_kind(this.handle);
  }
  /** The type as written (`size_t`, `struct wsp_ggml_tensor *`). */
  get spelling(): string {
    return this.c.str(this.s.wcg_type_spelling(this.handle)) ?? "";
  }
  /** The canonical type (typedefs resolved). */
  get canonical(): Type {
    return new Type(this.c, this.s.wcg_type_canonical(this.handle));
  }
  /** The pointee of a pointer type. */
  get pointee(): Type {
    return new Type(this.c, this.s.wcg_type_pointee(this.handle));
  }
  /** The result type of a function type. */
  get result(): Type {
    return new Type(this.c, this.s.wcg_type_result(this.handle));
  }
  /** The parameter types of a function type. */
  get args(): Type[] {
    const n = this.s.wcg_type_num_args(this.handle);
    return Array.from({ length: Math.max(n, 0) }, (_, i) => new Type(this.c, this.s.wcg_type_arg(this.handle, i)));
  }
  /** Whether a function type is variadic. */
  get variadic(): boolean {
    return this.s.wcg_type_is_variadic(this.handle) !== 0;
  }
  /** Whether the type is const-qualified. */
  get isConst(): boolean {
    return this.s.wcg_type_is_const(this.handle) !== 0;
  }
  /** `sizeof` in bytes (negative: libclang's CXTypeLayoutError). */
  get size(): number {
    return Number(this.s.wcg_type_sizeof(this.handle));
  }
  /** `_Alignof` in bytes (negative: libclang's CXTypeLayoutError). */
  get align(): number {
    return Number(this.s.wcg_type_alignof(this.handle));
  }
  /** Element count of a constant array (-1 otherwise). */
  get arraySize(): number {
    return Number(this.s.wcg_type_array_size(this.handle));
  }
  /** The element type of an array type. */
  get element(): Type {
    return new Type(this.c, this.s.wcg_type_element(this.handle));
  }
  /** The named type of an elaborated type (`struct x` → the record). */
  get named(): Type {
    return new Type(this.c, this.s.wcg_type_named(this.handle));
  }
  /** The declaration of a record, enum or typedef type. */
  get declaration(): Cursor {
    return new Cursor(this.c, this.s.wcg_type_declaration(this.handle));
  }
}

/** A libclang cursor (a handle). */
export class Cursor extends Handle {
  /** CXCursorKind. */
  get kind(): number {
    return this.s.wcg_cursor_kind(this.handle);
  }
  /** The name. */
  get spelling(): string {
    return this.c.str(this.s.wcg_cursor_spelling(this.handle)) ?? "";
  }
  /** The file of the spelling location (`null` for built-ins). */
  get file(): string | null {
    return this.c.str(this.s.wcg_cursor_file(this.handle));
  }
  /** The line of the spelling location. */
  get line(): number {
    return this.s.wcg_cursor_line(this.handle);
  }
  /** The tokens of the cursor's extent, as written (macros unexpanded). */
  get tokens(): string[] {
    const s = this.c.str(this.s.wcg_cursor_tokens(this.handle)) ?? "";
    return s === "" ? [] : s.split("\x1f");
  }
  /** The direct children. */
  children(): Cursor[] {
    const n = this.s.wcg_children(this.handle);
    const first = this.s.wcg_children_first();
    return Array.from({ length: n }, (_, i) => new Cursor(this.c, first + i));
  }
  /** The declared type. */
  get type(): Type {
    return new Type(this.c, this.s.wcg_cursor_type(this.handle));
  }
  /** The underlying type of a typedef. */
  get typedefUnderlying(): Type {
    return new Type(this.c, this.s.wcg_typedef_underlying(this.handle));
  }
  /** The integer type of an enum. */
  get enumIntegerType(): Type {
    return new Type(this.c, this.s.wcg_enum_integer_type(this.handle));
  }
  /** The value of an enum constant. */
  get enumValue(): bigint {
    return BigInt(this.s.wcg_enum_value(this.handle));
  }
  /** The parameter cursors of a function declaration. */
  get arguments(): Cursor[] {
    const n = this.s.wcg_num_arguments(this.handle);
    return Array.from({ length: Math.max(n, 0) }, (_, i) => new Cursor(this.c, this.s.wcg_argument(this.handle, i)));
  }
  /** Offset of a field in bits. */
  get fieldOffsetBits(): number {
    return Number(this.s.wcg_field_offset_bits(this.handle));
  }
  /** Whether this is a definition (a struct with a body). */
  get isDefinition(): boolean {
    return this.s.wcg_is_definition(this.handle) !== 0;
  }
  /** Whether this record is anonymous. */
  get isAnonymous(): boolean {
    return this.s.wcg_is_anonymous(this.handle) !== 0;
  }
  /** Whether this field is a bit field. */
  get isBitField(): boolean {
    return this.s.wcg_is_bitfield(this.handle) !== 0;
  }
  /** Whether this macro takes arguments. */
  get isMacroFunctionLike(): boolean {
    return this.s.wcg_is_macro_function_like(this.handle) !== 0;
  }
  /** The comment attached to the declaration, as written. */
  get rawComment(): string | null {
    return this.c.str(this.s.wcg_raw_comment(this.handle));
  }
  /** The first paragraph of the attached comment. */
  get briefComment(): string | null {
    return this.c.str(this.s.wcg_brief_comment(this.handle));
  }
}

/** One diagnostic of a parse. */
export interface Diagnostic {
  /** 0 ignored, 1 note, 2 warning, 3 error, 4 fatal. */
  readonly severity: number;
  /** The formatted message with its location. */
  readonly message: string;
}

/** An open libclang: parse translation units, walk their cursors. */
export class Clang {
  /** @internal */
  readonly shim: Shim;
  readonly #ffi: FfiAdapter;

  private constructor(ffi: FfiAdapter, shim: Shim) {
    this.#ffi = ffi;
    this.shim = shim;
  }

  /** Opens libclang (see `findLibclang`) through the handle shim. */
  static async open(libclangPath: string = findLibclang()): Promise<Clang> {
    const ffi = await loadAdapter();
    const lib = ffi.open(buildShim(), SHIM);
    const path = cString(libclangPath);
    const err = ffi.readCString(lib.symbols.wcg_open(ffi.addressOf(path)));
    keepAlive(path);
    if (err !== null) throw new Error(`cannot open libclang at ${libclangPath}: ${err}`);
    return new Clang(ffi, lib.symbols);
  }

  /** @internal */
  str(ptr: number): string | null {
    return this.#ffi.readCString(ptr);
  }

  /**
   * Parses `contents` as the C file `name` with compiler `args`; returns the
   * translation unit cursor. Invalidates every earlier handle.
   */
  parse(name: string, contents: string, args: readonly string[]): Cursor {
    // Held in locals so that the buffers outlive the call.
    const n = cString(name), c = cString(contents), a = cString(args.join("\n"));
    const rc = this.shim.wcg_parse(this.#ffi.addressOf(n), this.#ffi.addressOf(c), this.#ffi.addressOf(a));
    keepAlive(n, c, a);
    if (rc !== 0) throw new Error(`libclang could not parse ${name} (CXErrorCode ${rc})`);
    return new Cursor(this, 0);
  }

  /** The diagnostics of the last parse. */
  diagnostics(): Diagnostic[] {
    const n = this.shim.wcg_num_diagnostics();
    return Array.from({ length: n }, (_, i) => ({
      severity: this.shim.wcg_diagnostic_severity(i),
      message: this.str(this.shim.wcg_diagnostic(i)) ?? "",
    }));
  }
}
