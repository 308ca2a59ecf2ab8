/**
 * Per-process native state the API shares: the loaded library, the type
 * traits read once, the scratch context used to measure an op before it runs,
 * and the CPU backend that computes graphs.
 *
 * @module
 */
import { layouts, Type } from "./bindings.gen.ts";
import { ffi, library, type Library } from "./loader.ts";
import type { Handle } from "./ffi/types.ts";

/** Traits of one tensor type, read once from `wsp_ggml_blck_size` / `_type_size` / `_type_name`. */
export interface TypeTraits {
  /** Elements per block (1 for plain types). */
  readonly blckSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
  /** ggml's name (`f32`, `q4_0`, …). */
  readonly name: string;
  /** Whether the type is quantized (blocks of several elements). */
  readonly quantized: boolean;
}

/** The shared native state. */
export interface Runtime {
  /** The loaded library. */
  readonly lib: Library;
  /** Traits by type value, for every type that can be created (removed types are absent). */
  readonly types: ReadonlyMap<number, TypeTraits>;
  /** `sizeof(struct wsp_ggml_object)`: the header of every object in a context pool. */
  readonly objectSize: number;
  /** `sizeof(struct wsp_ggml_tensor)`. */
  readonly tensorSize: number;
  /** The scratch context (no_alloc) where ops are measured before they run. */
  readonly scratch: Scratch;
  /** The CPU backend, created on first use. */
  cpuBackend(): number;
}

/** A context whose pool lives in JS memory, for measuring ops. */
export interface Scratch {
  /** The native context. */
  readonly ptr: number;
  /** The pool's bytes. */
  readonly view: DataView;
  /** The pool's address. */
  readonly base: number;
  /** The pool, referenced for the process lifetime (the scratch context is never freed). */
  readonly buffer: ArrayBuffer;
}

/** A JS-owned pool of `size` bytes aligned to 64 bytes for a context. */
export function allocPool(size: number): { buffer: ArrayBuffer; view: DataView; base: number; offset: number } {
  const buffer = new ArrayBuffer(size + 64);
  const address = ffi.addressOf(buffer);
  const offset = (64 - (address % 64)) % 64;
  return { buffer, view: new DataView(buffer, offset, size), base: address + offset, offset };
}

/** Creates a context over `pool` (not owned by ggml: `wsp_ggml_free` leaves the memory alone). */
export function initContext(lib: Library, base: number, memSize: number, noAlloc: boolean): number;
/** The same, returning the context as a handle (`NativeLibrary.handles`). */
export function initContext(lib: Library, base: number, memSize: number, noAlloc: boolean, asHandle: true): Handle;
export function initContext(lib: Library, base: number, memSize: number, noAlloc: boolean, asHandle = false): Handle {
  const params = new DataView(new ArrayBuffer(layouts.wsp_ggml_init_params.size));
  const f = layouts.wsp_ggml_init_params.fields;
  params.setBigUint64(f.mem_size.offset, BigInt(memSize), true);
  params.setBigUint64(f.mem_buffer.offset, BigInt(base), true);
  params.setUint8(f.no_alloc.offset, noAlloc ? 1 : 0);
  return (asHandle ? lib.handles : lib.symbols).wsp_ggml_init(ffi.addressOf(params.buffer));
}

let state: Runtime | undefined;

/** The shared state, loading the library on first use. */
export function runtime(): Runtime {
  if (state) return state;
  const lib = library();
  const s = lib.symbols;
  const types = new Map<number, TypeTraits>();
  for (const [key, value] of Object.entries(Type)) {
    if (key === "COUNT") continue;
    const blckSize = Number(s.wsp_ggml_blck_size(value));
    if (blckSize === 0) continue; // a removed type: no traits
    types.set(value, {
      blckSize,
      typeSize: Number(s.wsp_ggml_type_size(value)),
      name: ffi.readCString(s.wsp_ggml_type_name(value)) ?? key.toLowerCase(),
      quantized: s.wsp_ggml_is_quantized(value),
    });
  }
  const tensorSize = layouts.wsp_ggml_tensor.size;
  const objectSize = Number(s.wsp_ggml_tensor_overhead()) - tensorSize;
  const SCRATCH = 1 << 20;
  const pool = allocPool(SCRATCH);
  const scratchPtr = initContext(lib, pool.base, SCRATCH, true);
  if (scratchPtr === 0) throw new Error("wsp_ggml_init failed for the scratch context");
  let backend = 0;
  state = {
    lib,
    types,
    objectSize,
    tensorSize,
    scratch: { ptr: scratchPtr, view: pool.view, base: pool.base, buffer: pool.buffer },
    cpuBackend: () => {
      if (backend === 0) {
        backend = s.wsp_ggml_backend_cpu_init();
        if (backend === 0) throw new Error("wsp_ggml_backend_cpu_init failed");
      }
      return backend;
    },
  };
  return state;
}
