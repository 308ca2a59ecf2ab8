/**
 * How each runtime spells the runtime-neutral FFI types. Plain data, so the
 * generator (which runs on any runtime) and the adapters share one mapping.
 *
 * Pointers are declared as pointer-sized integers on Deno and Node so that
 * they cross as numbers; Bun's `ptr` already is a number.
 *
 * @module
 */
import type { FfiType } from "./types.ts";

/** Deno `Deno.NativeType` names. */
export const DENO_TYPES = {
  void: "void", bool: "bool", i8: "i8", u8: "u8", i16: "i16", u16: "u16", i32: "i32", u32: "u32",
  i64: "i64", u64: "u64", isize: "isize", usize: "usize", f32: "f32", f64: "f64",
  pointer: "usize", function: "usize",
} as const satisfies Record<FfiType, string>;

/** bun:ffi `FFITypeOrString` names (`*_fast`: a number when it fits, else a bigint). */
export const BUN_TYPES = {
  void: "void", bool: "bool", i8: "i8", u8: "u8", i16: "i16", u16: "u16", i32: "i32", u32: "u32",
  i64: "i64_fast", u64: "u64_fast", isize: "i64_fast", usize: "u64_fast", f32: "f32", f64: "f64",
  pointer: "ptr", function: "ptr",
} as const satisfies Record<FfiType, string>;

/** koffi primitive type names. */
export const KOFFI_TYPES = {
  void: "void", bool: "bool", i8: "int8_t", u8: "uint8_t", i16: "int16_t", u16: "uint16_t",
  i32: "int32_t", u32: "uint32_t", i64: "int64_t", u64: "uint64_t", isize: "intptr_t", usize: "uintptr_t",
  f32: "float", f64: "double", pointer: "uintptr_t", function: "uintptr_t",
} as const satisfies Record<FfiType, string>;
