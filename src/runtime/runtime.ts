/**
 * Per-process native state the API shares: the loaded library, the type
 * traits read once, the scratch context used to measure an op before it runs,
 * and the CPU backend that computes graphs.
 *
 * @module
 */
import { layouts, Type } from "../ffi/bindings.gen.ts";
import { ffi, keepAlive, library, type Library } from "./loader.ts";
import type { Handle } from "../ffi/types.ts";

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
  /** The same traits indexed by type value (a hole for removed types): the ops' checks read this array. */
  readonly traits: readonly (TypeTraits | undefined)[];
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

/** A JS-owned pool for a context: `size` bytes aligned to 64 bytes. */
export interface Pool {
  /** The memory (64 bytes more than `size`, for the alignment). */
  readonly buffer: ArrayBuffer;
  /** The `size` aligned bytes. */
  readonly view: DataView;
  /** The address of `view`'s first byte. */
  readonly base: number;
  /** `view`'s offset in `buffer`. */
  readonly offset: number;
  /** Whether the memory held an earlier pool (not zeroed). */
  readonly recycled: boolean;
}

/**
 * Memory of freed pools kept for the next pool of the same size: a fresh
 * ArrayBuffer is zeroed and page-faulted in on first touch, which costs
 * more than building a small graph in it (a context per graph is this API's
 * reset). At most {@linkcode SPARE_COUNT} pools of {@linkcode SPARE_BYTES} each.
 */
const spares: ArrayBuffer[] = [];
const SPARE_COUNT = 4;
const SPARE_BYTES = 16 << 20;

/**
 * A pool of `size` bytes aligned to 64 bytes. With `recycle`, the memory of
 * a freed pool of the same size is taken when there is one (its bytes are
 * what the last owner left).
 */
export function allocPool(size: number, recycle = false): Pool {
  let buffer: ArrayBuffer | undefined;
  if (recycle) {
    const i = spares.findIndex((b) => b.byteLength === size + 64);
    if (i >= 0) buffer = spares.splice(i, 1)[0];
  }
  const recycled = buffer !== undefined;
  buffer ??= new ArrayBuffer(size + 64);
  const address = ffi.addressOf(buffer);
  const offset = (64 - (address % 64)) % 64;
  return { buffer, view: new DataView(buffer, offset, size), base: address + offset, offset, recycled };
}

/**
 * Ends a pool. With `keep` (no JS view of the memory ever left the library)
 * its memory is kept for {@linkcode allocPool}; otherwise `buffer` is
 * detached, so that no view of it outlives its context.
 */
export function retirePool(buffer: ArrayBuffer, keep: boolean): void {
  if (keep && buffer.byteLength <= SPARE_BYTES + 64) {
    if (spares.length === SPARE_COUNT) spares.shift();
    spares.push(buffer);
    return;
  }
  const b = buffer as ArrayBuffer & { transfer?: (n: number) => ArrayBuffer };
  if (typeof b.transfer === "function") b.transfer(0);
  else structuredClone(buffer, { transfer: [buffer] });
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
  const ctx = (asHandle ? lib.handles : lib.symbols).wsp_ggml_init(ffi.addressOf(params.buffer));
  // Without this the params buffer is garbage after its address is taken, and a collection
  // in between (the address's own BigInt on Deno) frees the bytes ggml_init then reads.
  keepAlive(params);
  return ctx;
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
  const traits: (TypeTraits | undefined)[] = Array.from({ length: Type.COUNT }, (_, t) => types.get(t));
  state = {
    lib,
    types,
    traits,
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
