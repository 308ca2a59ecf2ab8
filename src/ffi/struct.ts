/**
 * Reading and writing native structs through the generated layouts, without
 * a native call per field. All supported targets are little-endian with
 * 8-byte pointers.
 *
 * @module
 */
import { toInt64, toPointer } from "./common.ts";
import type { FfiAdapter, FfiType, Pointer } from "./types.ts";

/** The layout of one field, as the generator emits it. */
export interface FieldLayout {
  /** Byte offset from the start of the struct. */
  readonly offset: number;
  /** Size in bytes of the whole field (all elements of an array). */
  readonly size: number;
  /** Scalar type of the field or of its elements; `"record"` for a nested struct or union. */
  readonly type: FfiType | "record";
  /** Element count when the field is an array. */
  readonly length?: number;
  /** The nested struct or union (its layout key) when `type` is `"record"`. */
  readonly record?: string;
  /** The C type as written in the header. */
  readonly ctype: string;
}

/** The layout of a struct or union, as the generator emits it. */
export interface StructLayout {
  /** The C name (`struct wsp_ggml_tensor`). */
  readonly name: string;
  /** `sizeof` in bytes. */
  readonly size: number;
  /** `_Alignof` in bytes. */
  readonly align: number;
  /** Fields by name, in declaration order. */
  readonly fields: { readonly [field: string]: FieldLayout };
}

const SIZES: Partial<Record<FfiType, number>> = {
  bool: 1, i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4, f32: 4,
  i64: 8, u64: 8, isize: 8, usize: 8, f64: 8, pointer: 8, function: 8,
};

/** The value a scalar field reads as. */
export type FieldValue = number | bigint | boolean;

/** Reads and writes the fields of one struct in native or JS memory. */
export class StructView<L extends StructLayout = StructLayout> {
  /** The layout this view follows. */
  readonly layout: L;
  /** The bytes of the struct. */
  readonly data: DataView;

  /**
   * @param layout the generated layout
   * @param buffer memory holding the struct (e.g. from {@linkcode FfiAdapter.view})
   * @param byteOffset where the struct starts in `buffer`
   */
  constructor(layout: L, buffer: ArrayBufferLike, byteOffset = 0) {
    if (buffer.byteLength - byteOffset < layout.size) {
      throw new RangeError(`${layout.name} needs ${layout.size} bytes, the buffer has ${buffer.byteLength - byteOffset}`);
    }
    this.layout = layout;
    this.data = new DataView(buffer as ArrayBuffer, byteOffset, layout.size);
  }

  /** A zeroed struct in JS memory, e.g. to pass to a C shim by pointer. */
  static alloc<L extends StructLayout>(layout: L): StructView<L> {
    // 16-byte granules keep the allocation aligned for any C scalar.
    return new StructView(layout, new ArrayBuffer(Math.ceil(layout.size / 16) * 16));
  }

  /** A view over the struct that `ptr` points at in native memory. */
  static at<L extends StructLayout>(ffi: FfiAdapter, layout: L, ptr: Pointer): StructView<L> {
    return new StructView(layout, ffi.view(ptr, layout.size));
  }

  #field(name: keyof L["fields"] & string, index: number): [FieldLayout, number] {
    const f = this.layout.fields[name];
    if (!f) throw new TypeError(`${this.layout.name} has no field ${name}`);
    if (f.type === "record") throw new TypeError(`${this.layout.name}.${name} is a nested record: use sub()`);
    const n = f.length ?? 1;
    if (!Number.isInteger(index) || index < 0 || index >= n) {
      throw new RangeError(`${this.layout.name}.${name}[${index}] is out of bounds (length ${n})`);
    }
    return [f, f.offset + index * (SIZES[f.type] ?? 0)];
  }

  /** Reads a scalar field (element `index` of an array field). */
  get(name: keyof L["fields"] & string, index = 0): FieldValue {
    const [f, at] = this.#field(name, index);
    const d = this.data;
    switch (f.type) {
      case "bool": return d.getUint8(at) !== 0;
      case "i8": return d.getInt8(at);
      case "u8": return d.getUint8(at);
      case "i16": return d.getInt16(at, true);
      case "u16": return d.getUint16(at, true);
      case "i32": return d.getInt32(at, true);
      case "u32": return d.getUint32(at, true);
      case "f32": return d.getFloat32(at, true);
      case "f64": return d.getFloat64(at, true);
      case "i64": case "isize": return toInt64(d.getBigInt64(at, true));
      case "u64": case "usize": return toInt64(d.getBigUint64(at, true));
      case "pointer": case "function": return toPointer(d.getBigUint64(at, true));
      default: throw new TypeError(`cannot read ${f.type}`);
    }
  }

  /** Reads a pointer field as a {@linkcode Pointer}. */
  getPointer(name: keyof L["fields"] & string, index = 0): Pointer {
    const v = this.get(name, index);
    if (typeof v !== "number") throw new TypeError(`${this.layout.name}.${name} is not a pointer`);
    return v;
  }

  /** Writes a scalar field (element `index` of an array field). */
  set(name: keyof L["fields"] & string, value: FieldValue, index = 0): void {
    const [f, at] = this.#field(name, index);
    const d = this.data;
    const n = typeof value === "boolean" ? Number(value) : value;
    switch (f.type) {
      case "bool": case "u8": case "i8": d.setUint8(at, Number(n) & 0xff); return;
      case "i16": case "u16": d.setUint16(at, Number(n) & 0xffff, true); return;
      case "i32": d.setInt32(at, Number(n), true); return;
      case "u32": d.setUint32(at, Number(n), true); return;
      case "f32": d.setFloat32(at, Number(n), true); return;
      case "f64": d.setFloat64(at, Number(n), true); return;
      case "i64": case "isize": d.setBigInt64(at, BigInt(n), true); return;
      case "u64": case "usize": case "pointer": case "function": d.setBigUint64(at, BigInt(n), true); return;
      default: throw new TypeError(`cannot write ${f.type}`);
    }
  }

  /** Reads a `char[N]` field as a string (up to the first NUL). */
  getString(name: keyof L["fields"] & string): string {
    const f = this.layout.fields[name];
    if (!f || f.length === undefined || f.size !== f.length) throw new TypeError(`${this.layout.name}.${name} is not a char array`);
    const bytes = new Uint8Array(this.data.buffer, this.data.byteOffset + f.offset, f.length);
    const end = bytes.indexOf(0);
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes.subarray(0, end < 0 ? f.length : end));
  }

  /** A view of the nested struct or union field `name`, sharing this memory. */
  sub<M extends StructLayout>(name: keyof L["fields"] & string, layout: M): StructView<M> {
    const f = this.layout.fields[name];
    if (!f || f.type !== "record") throw new TypeError(`${this.layout.name}.${name} is not a nested record`);
    return new StructView(layout, this.data.buffer, this.data.byteOffset + f.offset);
  }

  /** The bytes of the struct, e.g. to pass by pointer with {@linkcode FfiAdapter.addressOf}. */
  get bytes(): Uint8Array {
    return new Uint8Array(this.data.buffer, this.data.byteOffset, this.layout.size);
  }
}
