/**
 * The typed intermediate representation between the libclang parser
 * (`parse.ts`) and the emitters (`emit_*.ts`). Everything in it is plain
 * JSON-compatible data, so two IRs compare with `JSON.stringify`.
 *
 * @module
 */
import type { FfiType, LibraryName } from "../src/ffi/types.ts";

/** A C type as a parameter, result or field uses it. */
export interface TypeRef {
  /** The type as written in the header (`size_t`, `struct wsp_ggml_tensor *`). */
  readonly c: string;
  /** How it crosses the FFI boundary; `"record"` for a struct or union by value. */
  readonly ffi: FfiType | "record";
  /** The record (its IR key) when the type is a struct or union by value. */
  readonly record?: string;
  /** The function-pointer typedef when the type is one. */
  readonly callback?: string;
}

/** A parameter of a function. */
export interface ParamIR extends TypeRef {
  /** Its name in the header (`arg<i>` when unnamed). */
  readonly name: string;
}

/** A function declared with `WSP_GGML_API` / `WSP_GGML_BACKEND_API`. */
export interface FunctionIR {
  /** The C name. */
  readonly name: string;
  /** The header that declares it (file name only). */
  readonly header: string;
  /** The library that defines it. */
  readonly library: LibraryName;
  /** The comment above the declaration, cleaned of comment markers. */
  readonly doc?: string;
  /** Parameters. */
  readonly params: readonly ParamIR[];
  /** Result. */
  readonly result: TypeRef;
  /** Flags. */
  readonly flags: {
    /** A parameter or the result is a struct or union by value (needs a C shim). */
    readonly structByValue: boolean;
    /** A parameter is a function pointer. */
    readonly callbackParam: boolean;
    /** Takes `...`. */
    readonly variadic: boolean;
    /** Marked `WSP_GGML_DEPRECATED`. */
    readonly deprecated: boolean;
  };
}

/** A field of a struct or union. */
export interface FieldIR {
  /** Its name. */
  readonly name: string;
  /** The C type as written. */
  readonly c: string;
  /** Byte offset. */
  readonly offset: number;
  /** Byte size of the whole field. */
  readonly size: number;
  /** Scalar type of the field or its elements; `"record"` for a nested record. */
  readonly type: FfiType | "record";
  /** Element count when the field is an array. */
  readonly length?: number;
  /** The nested record's IR key when `type` is `"record"`. */
  readonly record?: string;
  /** The comment of the field. */
  readonly doc?: string;
}

/** A struct or union with a complete definition in a public header. */
export interface RecordIR {
  /** Key in the layout table: the tag (`wsp_ggml_tensor`), the typedef name of an anonymous one, or `<parent>_<field>` for a nested anonymous one. */
  readonly key: string;
  /** How C names the type (`struct wsp_ggml_tensor`, `wsp_ggml_bf16_t`). */
  readonly c: string;
  /** Whether it is a union. */
  readonly union: boolean;
  /** Declaring header. */
  readonly header: string;
  /** Comment. */
  readonly doc?: string;
  /** sizeof. */
  readonly size: number;
  /** _Alignof. */
  readonly align: number;
  /** Fields in declaration order. */
  readonly fields: readonly FieldIR[];
  /** For a nested anonymous record: its member path inside the record named by `c` (`adamw`). */
  readonly member?: string;
}

/** A member of an enum. */
export interface EnumMemberIR {
  /** C name. */
  readonly name: string;
  /** Value (decimal string: enums may exceed 2^53 in principle). */
  readonly value: string;
  /** Comment. */
  readonly doc?: string;
}

/** An enum. */
export interface EnumIR {
  /** C name (`wsp_ggml_type`). */
  readonly name: string;
  /** Declaring header. */
  readonly header: string;
  /** Comment. */
  readonly doc?: string;
  /** The underlying integer type (C spelling, canonical). */
  readonly underlying: string;
  /** The FFI type of the underlying integer. */
  readonly ffi: FfiType;
  /** Members in declaration order. */
  readonly members: readonly EnumMemberIR[];
}

/** A typedef that is not a function pointer, an enum or a record. */
export interface TypedefIR {
  /** Its name. */
  readonly name: string;
  /** The type it names, as written. */
  readonly c: string;
  /** How it crosses the FFI boundary. */
  readonly ffi: FfiType | "record";
  /** Declaring header. */
  readonly header: string;
}

/** A function-pointer typedef (callback type). */
export interface CallbackIR {
  /** Its name. */
  readonly name: string;
  /** Declaring header. */
  readonly header: string;
  /** Comment. */
  readonly doc?: string;
  /** Parameters. */
  readonly params: readonly ParamIR[];
  /** Result. */
  readonly result: TypeRef;
  /** A parameter or the result is a record by value (no JS callback can have this type). */
  readonly structByValue: boolean;
}

/** An object-like macro whose value is a number or a string. */
export interface ConstantIR {
  /** C name. */
  readonly name: string;
  /** Declaring header. */
  readonly header: string;
  /** The value: a number literal in decimal, or a JSON string literal. */
  readonly value: { readonly kind: "number"; readonly text: string } | { readonly kind: "string"; readonly text: string };
}

/** A function that is deliberately not in the table. */
export interface SkippedIR {
  /** C name. */
  readonly name: string;
  /** Declaring header. */
  readonly header: string;
  /** Why (from the skip list). */
  readonly reason: string;
}

/** Everything the public headers declare, for one target. */
export interface ApiIR {
  /** The target triple it was parsed for. */
  readonly target: string;
  /** Public headers parsed, in order. */
  readonly headers: readonly string[];
  /** Functions in the table. */
  readonly functions: readonly FunctionIR[];
  /** Functions left out, each with its reason. */
  readonly skipped: readonly SkippedIR[];
  /** Struct and union layouts. */
  readonly records: readonly RecordIR[];
  /** Enums. */
  readonly enums: readonly EnumIR[];
  /** Plain typedefs. */
  readonly typedefs: readonly TypedefIR[];
  /** Function-pointer typedefs. */
  readonly callbacks: readonly CallbackIR[];
  /** Object-like macros. */
  readonly constants: readonly ConstantIR[];
}
