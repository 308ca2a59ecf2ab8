/**
 * Backends and devices (`ggml-backend.h`, `ggml-cpu.h`): ggml's registry of
 * backend libraries and their devices, {@linkcode Backend} instances that
 * compute graphs, the CPU backend's thread count and reusable
 * {@linkcode Threadpool}, and events.
 *
 * Each native object has one owner: call `free()` (or `using`) when done.
 * Every method of a freed object throws {@linkcode UseAfterFreeError};
 * ggml would read freed memory.
 *
 * @module
 */
import { INTERNAL, internal } from "../core/brand.ts";
import { BackendDevType, layouts, MAX_N_THREADS, SchedPriority, Status } from "../ffi/bindings.gen.ts";
import { int, member } from "../core/args.ts";
import { ArgumentError, BusyError, ComputeError, GgmlError, NotAllocatedError, UnsupportedOpError, UseAfterFreeError } from "../core/errors.ts";
import process from "node:process";
import { cString } from "../ffi/mod.ts";
import { ffi, keepAlive } from "../runtime/loader.ts";
import { checkThreads, defaultThreads } from "../runtime/threads.ts";
import { logFlush } from "../runtime/log.ts";
import { allocPool, initContext, runtime } from "../runtime/runtime.ts";
import { checkData, cpuHandlesTypes, Graph } from "../core/graph.ts";
import { Tensor } from "../core/tensor.ts";
import { Buffer, BufferType } from "./buffer.ts";
import { adopt, dispose, type Handle } from "../core/owned.ts";
import { checkVulkanGraph, vulkanRuns } from "./vulkan_checks.ts";
import { checkMetalDevice, checkMetalGraph, metalDeviceRefusal, metalRuns } from "./metal_checks.ts";

const sym = () => runtime().lib.symbols;
const str = (p: number) => ffi.readCString(p) ?? "";
const TENSOR = layouts.wsp_ggml_tensor.fields;

/** The memory of a device, in bytes (`wsp_ggml_backend_dev_memory`). */
export interface DeviceMemory {
  /** Bytes free. */
  readonly free: number;
  /** Bytes in total. */
  readonly total: number;
}

/** What a device can do (`struct wsp_ggml_backend_dev_caps`). */
export interface DeviceCaps {
  /** Asynchronous operations (`graphComputeAsync` that returns before the end, async copies). */
  readonly async: boolean;
  /** A pinned host buffer type (`hostBufferType`). */
  readonly hostBuffer: boolean;
  /** Buffers over existing host memory (`wsp_ggml_backend_dev_buffer_from_host_ptr`). */
  readonly bufferFromHostPtr: boolean;
  /** Events for synchronisation ({@linkcode BackendEvent}). */
  readonly events: boolean;
}

/** The properties of a device (`struct wsp_ggml_backend_dev_props`). */
export interface DeviceProps {
  /** Short name (`CPU`, `Metal`, …). */
  readonly name: string;
  /** What it is (for a CPU: the processor's name). */
  readonly description: string;
  /** Free and total memory. */
  readonly memory: DeviceMemory;
  /** A {@linkcode BackendDevType} value. */
  readonly type: BackendDevType;
  /** A stable identifier where the backend has one (a PCI bus id), else null. */
  readonly deviceId: string | null;
  /** Capabilities. */
  readonly caps: DeviceCaps;
}

/** A device of a backend library (`wsp_ggml_backend_dev_t`); owned by ggml's registry, never freed. */
export class Device {
  /** The native `wsp_ggml_backend_dev_t`. */
  readonly pointer: number;

  /** @ignore @internal Devices come from {@linkcode devices}, {@linkcode deviceByName}, {@linkcode Backend.device}. */
  constructor(pointer: number, token?: symbol) {
    internal("Device", token, "devices(), deviceByName() or backend.device");
    this.pointer = pointer;
  }

  /** Name (`wsp_ggml_backend_dev_name`). */
  get name(): string {
    return str(sym().wsp_ggml_backend_dev_name(this.pointer));
  }

  /** Description (`wsp_ggml_backend_dev_description`). */
  get description(): string {
    return str(sym().wsp_ggml_backend_dev_description(this.pointer));
  }

  /** A {@linkcode BackendDevType} value (`wsp_ggml_backend_dev_type`). */
  get type(): BackendDevType {
    return sym().wsp_ggml_backend_dev_type(this.pointer) as BackendDevType;
  }

  /** The type's short name: `"cpu"`, `"gpu"`, `"igpu"` or `"accel"`. */
  get typeName(): DeviceTypeName {
    return deviceTypeName(this.type);
  }

  /** Whether it is a GPU, discrete or integrated (what `"auto"` prefers, {@linkcode bestDevice}). */
  get isGpu(): boolean {
    const t = this.type;
    return t === BackendDevType.GPU || t === BackendDevType.IGPU;
  }

  /** Everything about the device as plain data (for printing or JSON): {@linkcode props} with the type's name and the backend library's name. */
  info(): DeviceInfo {
    const p = this.props();
    return { name: p.name, description: p.description, type: deviceTypeName(p.type), backend: this.reg.name, memory: p.memory, deviceId: p.deviceId, caps: p.caps };
  }

  /** Free and total memory (`wsp_ggml_backend_dev_memory`). */
  memory(): DeviceMemory {
    const out = new BigUint64Array(2);
    const base = ffi.addressOf(out);
    sym().wsp_ggml_backend_dev_memory(this.pointer, base, base + 8);
    return { free: Number(out[0]), total: Number(out[1]) };
  }

  /** Every property (`wsp_ggml_backend_dev_get_props`). */
  props(): DeviceProps {
    const L = layouts.wsp_ggml_backend_dev_props;
    const buf = new ArrayBuffer(L.size);
    sym().wsp_ggml_backend_dev_get_props(this.pointer, ffi.addressOf(buf));
    const v = new DataView(buf), f = L.fields, c = layouts.wsp_ggml_backend_dev_caps.fields, at = f.caps.offset;
    const p = (o: number) => Number(v.getBigUint64(o, true));
    const id = p(f.device_id.offset);
    return {
      name: str(p(f.name.offset)),
      description: str(p(f.description.offset)),
      memory: { free: p(f.memory_free.offset), total: p(f.memory_total.offset) },
      type: v.getInt32(f.type.offset, true) as BackendDevType,
      deviceId: id === 0 ? null : str(id),
      caps: {
        async: v.getUint8(at + c.async.offset) !== 0,
        hostBuffer: v.getUint8(at + c.host_buffer.offset) !== 0,
        bufferFromHostPtr: v.getUint8(at + c.buffer_from_host_ptr.offset) !== 0,
        events: v.getUint8(at + c.events.offset) !== 0,
      },
    };
  }

  /** The registry entry of the backend library this device belongs to. */
  get reg(): BackendReg {
    return new BackendReg(sym().wsp_ggml_backend_dev_backend_reg(this.pointer), INTERNAL);
  }

  /** The device's default buffer type (`wsp_ggml_backend_dev_buffer_type`). */
  get bufferType(): BufferType {
    return new BufferType(sym().wsp_ggml_backend_dev_buffer_type(this.pointer), INTERNAL);
  }

  /** The pinned host buffer type, or null when the device has none (`caps.hostBuffer`). */
  get hostBufferType(): BufferType | null {
    const p = sym().wsp_ggml_backend_dev_host_buffer_type(this.pointer);
    return p === 0 ? null : new BufferType(p, INTERNAL);
  }

  /** Whether the device can compute `tensor`'s op (`wsp_ggml_backend_dev_supports_op`). */
  supportsOp(tensor: Tensor): boolean {
    return supports(this.type, sym().wsp_ggml_backend_dev_supports_op(this.pointer, tensorPtr("supportsOp", tensor)), tensor) && vulkanRuns(this, tensor) && metalRuns(this, tensor);
  }

  /** Whether the device can use buffers of `type` (`wsp_ggml_backend_dev_supports_buft`). */
  supportsBufferType(type: BufferType): boolean {
    return sym().wsp_ggml_backend_dev_supports_buft(this.pointer, type.pointer);
  }

  /**
   * A backend instance on this device (`wsp_ggml_backend_dev_init`).
   *
   * @param params backend-specific parameters, or none
   * @throws {GgmlError} when the backend cannot be created, or (`UNSUPPORTED`) for a Metal device whose buffers the host cannot map
   */
  init(params?: string): Backend {
    checkMetalDevice("init", this);
    const c = params === undefined ? null : cString(params);
    const p = sym().wsp_ggml_backend_dev_init(this.pointer, c ? ffi.addressOf(c) : 0);
    keepAlive(c);
    if (p === 0) throw new GgmlError("ARGUMENT", `init: the ${this.name} device could not create a backend`);
    return new Backend(p, INTERNAL);
  }
}

/** A backend library in ggml's registry (`wsp_ggml_backend_reg_t`); never freed. */
export class BackendReg {
  /** The native `wsp_ggml_backend_reg_t`. */
  readonly pointer: number;

  /** @ignore @internal Registry entries come from {@linkcode backendRegs} and {@linkcode backendRegByName}. */
  constructor(pointer: number, token?: symbol) {
    internal("BackendReg", token, "backendRegs() or backendRegByName()");
    this.pointer = pointer;
  }

  /** Name (`wsp_ggml_backend_reg_name`). */
  get name(): string {
    return str(sym().wsp_ggml_backend_reg_name(this.pointer));
  }

  /** Its devices (`wsp_ggml_backend_reg_dev_count` / `_dev_get`). */
  devices(): Device[] {
    const s = sym();
    const n = Number(s.wsp_ggml_backend_reg_dev_count(this.pointer));
    return Array.from({ length: n }, (_, i) => new Device(s.wsp_ggml_backend_reg_dev_get(this.pointer, i), INTERNAL));
  }
}

/** Every registered backend library (`wsp_ggml_backend_reg_count` / `_get`). */
export function backendRegs(): BackendReg[] {
  const s = sym();
  const n = Number(s.wsp_ggml_backend_reg_count());
  return Array.from({ length: n }, (_, i) => new BackendReg(s.wsp_ggml_backend_reg_get(i), INTERNAL));
}

/** The registered backend library called `name` (case-insensitive), or null. */
export function backendRegByName(name: string): BackendReg | null {
  const c = cString(name);
  const p = sym().wsp_ggml_backend_reg_by_name(ffi.addressOf(c));
  keepAlive(c);
  return p === 0 ? null : new BackendReg(p, INTERNAL);
}

/** Every device of every registered backend (`wsp_ggml_backend_dev_count` / `_get`). */
export function devices(): Device[] {
  const s = sym();
  const n = Number(s.wsp_ggml_backend_dev_count());
  return Array.from({ length: n }, (_, i) => new Device(s.wsp_ggml_backend_dev_get(i), INTERNAL));
}

/** The device called `name` (case-insensitive, e.g. `"CPU"`), or null. */
export function deviceByName(name: string): Device | null {
  const c = cString(name);
  const p = sym().wsp_ggml_backend_dev_by_name(ffi.addressOf(c));
  keepAlive(c);
  return p === 0 ? null : new Device(p, INTERNAL);
}

/** The first device of a {@linkcode BackendDevType}, or null. */
export function deviceByType(type: BackendDevType): Device | null {
  member("deviceByType: type", type, BackendDevType, "BackendDevType");
  const p = sym().wsp_ggml_backend_dev_by_type(type);
  return p === 0 ? null : new Device(p, INTERNAL);
}

/** A device type's short name, as {@linkcode Device.typeName} gives it. */
export type DeviceTypeName = "cpu" | "gpu" | "igpu" | "accel";

const TYPE_NAMES: readonly DeviceTypeName[] = ["cpu", "gpu", "igpu", "accel"];

/** The short name of a {@linkcode BackendDevType} value (`"cpu"`, `"gpu"`, `"igpu"`, `"accel"`). */
export function deviceTypeName(type: BackendDevType): DeviceTypeName {
  const n = TYPE_NAMES[type];
  if (n === undefined) throw new ArgumentError(`deviceTypeName: ${type} is not a BackendDevType`);
  return n;
}

/** A device as plain data ({@linkcode Device.info}): what `examples/devices.ts` and `wsp-ggml info` print. */
export interface DeviceInfo {
  /** Short name (`CPU`, `Vulkan0`, …): what {@linkcode bestDevice} and {@linkcode deviceByName} take. */
  readonly name: string;
  /** What it is (a CPU's or a GPU's model name). */
  readonly description: string;
  /** The kind of device. */
  readonly type: DeviceTypeName;
  /** The backend library it belongs to (`CPU`, `Vulkan`, …). */
  readonly backend: string;
  /** Free and total memory, in bytes. */
  readonly memory: DeviceMemory;
  /** A stable identifier where the backend has one (a PCI bus id), else null. */
  readonly deviceId: string | null;
  /** Capabilities. */
  readonly caps: DeviceCaps;
}

/**
 * Which device to compute on:
 * - `"auto"`: a GPU if there is one, else an integrated GPU, else the CPU
 *   (node-llama-cpp's `gpu: "auto"`; the {@linkcode DEVICE_ENV} environment
 *   variable, when set, decides instead);
 * - `"cpu"`: the CPU;
 * - `"gpu"`: the first GPU or integrated GPU (an error when there is none);
 * - a device's name (`"Vulkan0"`, case-insensitive), or a {@linkcode Device}.
 */
export type DeviceChoice = "auto" | "cpu" | "gpu" | (string & {}) | Device;

/**
 * The environment variable that overrides the `"auto"` device choice of
 * {@linkcode bestDevice} and {@linkcode Backend.best}: `cpu`, `gpu`, `auto`
 * or a device's name. An explicit choice in code (anything but `"auto"`) wins over it.
 */
export const DEVICE_ENV = "WSP_GGML_DEVICE";

/** Options of {@linkcode bestDevice}. */
export interface BestDeviceOptions {
  /** The choice; default `"auto"`. */
  readonly device?: DeviceChoice;
  /** Whether {@linkcode DEVICE_ENV} may override `"auto"`; default true. */
  readonly env?: boolean;
}

/** @ignore @internal The value of {@linkcode DEVICE_ENV}, or undefined (no environment access is not an error). */
export function deviceEnv(): string | undefined {
  try {
    const v = process.env[DEVICE_ENV];
    return v === undefined || v.trim() === "" ? undefined : v.trim();
  } catch {
    return undefined;
  }
}

/**
 * @ignore @internal The index in `list` (ggml's device order) of the device
 * `choice` names; a pure function, so that the choice among GPUs can be
 * tested on a machine without one. `"auto"` and `"gpu"` pass over a device
 * marked `usable: false` (a Metal device whose buffers the host cannot map).
 *
 * @throws {ArgumentError} for a name no device has, or "gpu" with no GPU
 */
export function pickDevice(list: readonly { readonly name: string; readonly type: number; readonly usable?: boolean }[], choice: string): number {
  const c = choice.trim().toLowerCase();
  const have = () => list.map((d) => `${d.name} (${TYPE_NAMES[d.type] ?? d.type})`).join(", ") || "none";
  const first = (type: number) => list.findIndex((d) => d.type === type && d.usable !== false);
  if (c === "cpu") {
    const i = first(BackendDevType.CPU);
    if (i < 0) throw new ArgumentError(`bestDevice: no CPU device (have: ${have()})`);
    return i;
  }
  if (c === "auto" || c === "gpu") {
    for (const type of [BackendDevType.GPU, BackendDevType.IGPU]) {
      const i = first(type);
      if (i >= 0) return i;
    }
    const skipped = list.filter((d) => d.usable === false).map((d) => d.name);
    const why = skipped.length > 0 ? `; ${skipped.join(", ")}: a Metal device whose buffers the host cannot map, which ggml-metal cannot copy to` : "";
    if (c === "gpu") throw new ArgumentError(`bestDevice: no GPU device (have: ${have()}${why}); choose "auto" or "cpu"`);
    return pickDevice(list, "cpu");
  }
  const i = list.findIndex((d) => d.name.toLowerCase() === c);
  if (i < 0) throw new ArgumentError(`bestDevice: no device called ${JSON.stringify(choice)} (have: ${have()}; or "auto", "cpu", "gpu")`);
  return i;
}

/**
 * The device to compute on (see {@linkcode DeviceChoice}): by default a GPU
 * when ggml has one registered, else the CPU; {@linkcode DEVICE_ENV} can
 * override the default. Accelerator devices (BLAS, AMX) are never picked
 * by `"auto"`: they compute a few ops beside the CPU, not whole graphs.
 *
 * @throws {ArgumentError} for a name no device has, or `"gpu"` with no GPU
 */
export function bestDevice(options: BestDeviceOptions = {}): Device {
  const choice = options.device ?? "auto";
  if (choice instanceof Device) return choice;
  if (typeof choice !== "string") throw new ArgumentError(`bestDevice: device must be "auto", "cpu", "gpu", a device name or a Device, got ${typeof choice}`);
  const env = options.env ?? true;
  const effective = choice.trim().toLowerCase() === "auto" && env ? deviceEnv() ?? "auto" : choice;
  const list = devices();
  return list[pickDevice(list.map((d) => ({ name: d.name, type: d.type, usable: usable(d) })), effective)];
}

/** Whether a backend can be made on `device`: false only for a Metal device whose buffers the host cannot map. */
function usable(device: Device): boolean {
  return metalDeviceRefusal(device) === null;
}

/**
 * Loads and registers one backend library (`wsp_ggml_backend_load`); returns
 * its registry entry, or null when it cannot be loaded (ggml logs why).
 */
export function loadBackend(path: string): BackendReg | null {
  const c = cString(path);
  const p = sym().wsp_ggml_backend_load(ffi.addressOf(c));
  keepAlive(c);
  return p === 0 ? null : new BackendReg(p, INTERNAL);
}

/**
 * Loads every backend library of `dir` (`wsp_ggml_backend_load_all_from_path`:
 * files named `libggml-<name>-<variant>`, the best-scoring variant of each
 * name). Backends already registered (the CPU one) are kept. Returns the
 * registry entries registered by the call.
 */
export function loadAllFromPath(dir: string): BackendReg[] {
  const before = new Set(backendRegs().map((r) => r.pointer));
  const c = cString(dir);
  sym().wsp_ggml_backend_load_all_from_path(ffi.addressOf(c));
  keepAlive(c);
  return backendRegs().filter((r) => !before.has(r.pointer));
}

/** @ignore @internal The native pointer of an operand, checked to be a live tensor. */
export function tensorPtr(what: string, tensor: Tensor): number {
  if (!(tensor instanceof Tensor)) throw new ArgumentError(`${what}: expected a Tensor, got ${tensor === null ? "null" : typeof tensor}`);
  tensor.context._pool(what);
  return tensor._ptr;
}

/** @ignore @internal Whether a device of `type` that answers `native` supports `t` (the CPU kernels' type table too). */
export function supports(type: number, native: boolean, t: Tensor): boolean {
  return native && (type !== BackendDevType.CPU || cpuHandlesTypes(t));
}

/** @ignore @internal The backend buffer of a tensor (`view_src->buffer` for views), 0 when none. */
export function bufferOf(t: Tensor): number {
  const src = t.viewSrc ?? t;
  return ffi.readPointer(src._ptr, TENSOR.buffer.offset);
}

/**
 * @ignore @internal The sources of `node` that are tensors of live contexts. A scheduler over
 * several backends points a node's sources at its own copies of them (made in a context of its
 * own, not one of this library's: ggml's `split_graph` rewrites `node->src[j]`), which are left out.
 */
export function sourcesOf(node: Tensor): Tensor[] {
  try {
    return node.src;
  } catch (e) {
    if (!(e instanceof UseAfterFreeError)) throw e;
  }
  const out: Tensor[] = [];
  for (let i = 0; i < TENSOR.src.length; i++) {
    const p = ffi.readPointer(node._ptr, TENSOR.src.offset + 8 * i);
    if (p === 0) continue;
    try {
      out.push(node.context._resolve(p));
    } catch (e) {
      if (!(e instanceof UseAfterFreeError) || !/belongs to no live context/.test(e.message)) throw e;
    }
  }
  return out;
}

/** @ignore @internal Every tensor a graph reads or writes: its nodes and their sources. */
export function graphTensors(graph: Graph): Tensor[] {
  const seen = new Map<number, Tensor>();
  for (const n of graph.nodes()) {
    for (const s of sourcesOf(n)) seen.set(s._ptr, s);
    seen.set(n._ptr, n);
  }
  return [...seen.values()];
}

/**
 * An AbortSignal's state as C can read it from any thread: a one-byte ggml
 * context whose `no_alloc` flag is the "stop" bit, read by
 * `wsp_ggml_get_no_alloc` — an exported `bool (*)(void *)` that fits ggml's
 * `wsp_ggml_abort_callback` exactly, so no JS runs on the compute thread.
 */
class AbortFlag {
  readonly fn: number;
  readonly data: number;
  readonly #pool: ArrayBuffer;

  constructor() {
    const rt = runtime();
    const pool = allocPool(256);
    this.#pool = pool.buffer;
    this.data = initContext(rt.lib, pool.base, 256, false);
    if (this.data === 0) throw new Error("wsp_ggml_init failed for an abort flag");
    this.fn = ffi.symbolAddress(rt.lib.location.base, "wsp_ggml_get_no_alloc");
    if (this.fn === 0) throw new Error("wsp_ggml_get_no_alloc is not exported");
  }

  set(value: boolean): void {
    keepAlive(this.#pool);
    runtime().lib.symbols.wsp_ggml_set_no_alloc(this.data, value);
  }
}

let abortFlags: AbortFlag[] | undefined;
/** @ignore @internal An abort flag (reused: contexts are not freed). */
export function takeAbortFlag(): AbortFlag {
  return (abortFlags ??= []).pop() ?? new AbortFlag();
}
/** @ignore @internal Returns a flag to the pool, cleared. */
export function giveAbortFlag(f: AbortFlag): void {
  f.set(false);
  abortFlags!.push(f);
}
export type { AbortFlag };

/** Options of {@linkcode Backend.graphComputeAsync}. */
export interface AsyncComputeOptions {
  /** Stops the compute (through ggml's abort callback, checked between nodes); the promise then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** @ignore @internal Runs a native compute off the JS thread, aborting it through `flag` when `signal` fires. */
export async function runAbortable(
  what: string,
  flag: AbortFlag,
  signal: AbortSignal | undefined,
  call: () => Promise<number>,
): Promise<void> {
  signal?.throwIfAborted();
  const onAbort = () => flag.set(true);
  signal?.addEventListener("abort", onAbort, { once: true });
  let status: number;
  try {
    status = await call();
  } finally {
    signal?.removeEventListener("abort", onAbort);
    logFlush(); // what ggml logged on the compute's threads
  }
  if (status === Status.ABORTED && signal?.aborted) throw signal.reason;
  checkStatus(what, status);
}

/** @ignore @internal Throws a {@linkcode ComputeError} for a failure status. */
export function checkStatus(what: string, status: number): void {
  if (status !== Status.SUCCESS) {
    const e = new ComputeError(`${what} failed: ${str(sym().wsp_ggml_status_to_string(status))}`, status);
    throw computeFaultHook?.(e) ?? e;
  }
}

let computeFaultHook: ((e: ComputeError) => Error | undefined) | undefined;

/**
 * @ignore @internal Lets the RPC module (src/rpc/) turn a failed compute that a lost or
 * lying server caused into its own error, without backend.ts depending on it.
 */
export function _setComputeFaultHook(hook: (e: ComputeError) => Error | undefined): void {
  computeFaultHook = hook;
}

let rpcFactory: ((endpoint: string) => Backend) | undefined;

/**
 * @ignore @internal Installed by the RPC module (src/rpc/rpc.ts) when it loads, so that
 * {@linkcode Backend.rpc} works without backend.ts importing it (rpc.ts imports backend.ts).
 * Returns the factory it replaces.
 */
export function _setRpcBackendFactory(factory: ((endpoint: string) => Backend) | undefined): ((endpoint: string) => Backend) | undefined {
  const before = rpcFactory;
  rpcFactory = factory;
  return before;
}

/** Options of {@linkcode Backend.cpu}. */
export interface CpuBackendOptions {
  /** Threads (1 … 512); default: the package's thread policy (`defaultThreads`). */
  readonly nThreads?: number;
  /** A threadpool to compute with instead of one per compute call. */
  readonly threadpool?: Threadpool;
}

/**
 * A backend instance (`wsp_ggml_backend_t`): computes graphs whose tensors
 * are in buffers it can use. Create one with {@linkcode Backend.cpu},
 * {@linkcode Backend.initByName}, {@linkcode Backend.initByType}, {@linkcode Backend.rpc},
 * {@linkcode Backend.initBest} or {@linkcode Device.init}; free it with
 * `free()` (or `using`).
 */
export class Backend {
  readonly #h: Handle;
  #busy = false;
  readonly #flag: AbortFlag | undefined;
  #threadpool: Threadpool | undefined;
  /** How a threadpool refers to the backends it is attached to: weakly, so that it keeps none of them alive. */
  readonly #self = new WeakRef(this);

  /** @ignore @internal Backends come from {@linkcode Backend.cpu}, {@linkcode Backend.initByName}, … */
  constructor(ptr: number, token?: symbol) {
    internal("Backend", token, "Backend.cpu(), Backend.initByName(), Backend.initBest() or device.init()");
    const s = sym();
    // Always installed on a CPU backend: a compute running off the JS thread is stopped by setting the flag.
    const flag = s.wsp_ggml_backend_is_cpu(ptr) ? takeAbortFlag() : undefined;
    if (flag) s.wsp_ggml_backend_cpu_set_abort_callback(ptr, flag.fn, flag.data);
    this.#flag = flag;
    this.#h = adopt(this, "backend", ptr, (p) => {
      sym().wsp_ggml_backend_free(p);
      if (flag) giveAbortFlag(flag);
    });
  }

  /** A CPU backend (`wsp_ggml_backend_cpu_init`), with `nThreads` and an optional threadpool. */
  static cpu(options: CpuBackendOptions = {}): Backend {
    const p = sym().wsp_ggml_backend_cpu_init();
    if (p === 0) throw new GgmlError("OUT_OF_MEMORY", "wsp_ggml_backend_cpu_init failed");
    const b = new Backend(p, INTERNAL);
    b.setNThreads(options.nThreads ?? defaultThreads());
    if (options.threadpool !== undefined) b.setThreadpool(options.threadpool);
    return b;
  }

  /**
   * The backend of the device called `name` (`wsp_ggml_backend_init_by_name`).
   *
   * @throws {ArgumentError} when no device has that name
   */
  static initByName(name: string, params?: string): Backend {
    const dev = deviceByName(name);
    if (dev !== null) checkMetalDevice("initByName", dev);
    const n = cString(name), c = params === undefined ? null : cString(params);
    const p = sym().wsp_ggml_backend_init_by_name(ffi.addressOf(n), c ? ffi.addressOf(c) : 0);
    keepAlive([n, c]);
    if (p === 0) throw new ArgumentError(`initByName: no device called ${JSON.stringify(name)} (have: ${devices().map((d) => d.name).join(", ")})`);
    return new Backend(p, INTERNAL);
  }

  /**
   * The backend of the first device of `type` (`wsp_ggml_backend_init_by_type`).
   *
   * @throws {ArgumentError} when no device has that type
   */
  static initByType(type: BackendDevType, params?: string): Backend {
    member("initByType: type", type, BackendDevType, "BackendDevType");
    const dev = deviceByType(type);
    if (dev !== null) checkMetalDevice("initByType", dev);
    const c = params === undefined ? null : cString(params);
    const p = sym().wsp_ggml_backend_init_by_type(type, c ? ffi.addressOf(c) : 0);
    keepAlive(c);
    if (p === 0) throw new ArgumentError(`initByType: no device of type ${type}`);
    return new Backend(p, INTERNAL);
  }

  /**
   * A backend on the device {@linkcode bestDevice} picks: by default a GPU
   * when there is one, else the CPU ({@linkcode DEVICE_ENV} overrides the
   * default; `options.device` chooses: `"cpu"`, `"gpu"`, a name, a
   * {@linkcode Device}). A CPU backend gets `nThreads` and `threadpool`; on
   * another device they are ignored (give them to the CPU fallback backend
   * of a {@linkcode Sched} instead).
   *
   * @throws {ArgumentError} for a device name no device has, or `"gpu"` with no GPU
   * @throws {GgmlError} when the device cannot create a backend
   */
  static best(options: BestDeviceOptions & CpuBackendOptions = {}): Backend {
    const dev = bestDevice(options);
    if (dev.type === BackendDevType.CPU) {
      const b = dev.init();
      try {
        if (options.nThreads !== undefined) b.setNThreads(options.nThreads);
        if (options.threadpool !== undefined) b.setThreadpool(options.threadpool);
      } catch (e) {
        b.free();
        throw e;
      }
      return b;
    }
    return dev.init();
  }

  /**
   * A backend that computes on the RPC server at `endpoint` (`"host:port"`):
   * the same as `rpcBackend(endpoint)` (see it for the connection, the
   * protocol check and faults). The protocol has no authentication: connect
   * only to servers on this machine, a private network or an SSH tunnel.
   *
   * @throws {GgmlError} (`UNSUPPORTED`) when the RPC module is not loaded (the package's main entry loads it)
   * @throws {ArgumentError} for a malformed endpoint
   * @throws {RpcError} when the server cannot be reached, speaks another protocol version, or answers malformed data
   */
  static rpc(endpoint: string): Backend {
    if (!rpcFactory) throw new GgmlError("UNSUPPORTED", "Backend.rpc: the RPC module is not loaded; import the package's main entry (or its src/rpc/rpc.ts), which installs it");
    return rpcFactory(endpoint);
  }

  /**
   * The best backend there is: a GPU, else an integrated GPU, else the CPU
   * (`wsp_ggml_backend_init_best`); the CPU instead of a Metal device whose
   * buffers the host cannot map (see `Device.init`).
   */
  static initBest(): Backend {
    const p = sym().wsp_ggml_backend_init_best();
    if (p === 0) throw new GgmlError("UNSUPPORTED", "initBest: no backend could be created");
    const b = new Backend(p, INTERNAL);
    if (!usable(b.device)) {
      b.free();
      return Backend.cpu();
    }
    return b;
  }

  /** The native `wsp_ggml_backend_t`. */
  get pointer(): number {
    return this._live("backend");
  }

  /** Whether {@linkcode free} was called. */
  get freed(): boolean {
    return this.#h.ptr === 0;
  }

  /** @ignore @internal The pointer, or a {@linkcode UseAfterFreeError}. */
  _live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the backend was freed`);
    return this.#h.ptr;
  }

  /** Name (`wsp_ggml_backend_name`). */
  get name(): string {
    return str(sym().wsp_ggml_backend_name(this.pointer));
  }

  /** Whether this is a CPU backend (`wsp_ggml_backend_is_cpu`). */
  get isCpu(): boolean {
    return sym().wsp_ggml_backend_is_cpu(this.pointer);
  }

  /** Its device (`wsp_ggml_backend_get_device`). */
  get device(): Device {
    return new Device(sym().wsp_ggml_backend_get_device(this.pointer), INTERNAL);
  }

  /** The buffer type it allocates by default (`wsp_ggml_backend_get_default_buffer_type`). */
  get defaultBufferType(): BufferType {
    return new BufferType(sym().wsp_ggml_backend_get_default_buffer_type(this.pointer), INTERNAL);
  }

  /** Alignment of its default buffers, in bytes. */
  get alignment(): number {
    return Number(sym().wsp_ggml_backend_get_alignment(this.pointer));
  }

  /** Largest buffer it allocates, in bytes. */
  get maxSize(): number {
    return Number(sym().wsp_ggml_backend_get_max_size(this.pointer));
  }

  /** A buffer of its default type (`wsp_ggml_backend_alloc_buffer`). */
  allocBuffer(size: number): Buffer {
    return this.defaultBufferType.allocBuffer(size);
  }

  /** Whether it can compute `tensor`'s op with these types (`wsp_ggml_backend_supports_op`, and the CPU kernels' type table). */
  supportsOp(tensor: Tensor): boolean {
    return supports(this.device.type, sym().wsp_ggml_backend_supports_op(this.pointer, tensorPtr("supportsOp", tensor)), tensor) && vulkanRuns(this.device, tensor) && metalRuns(this.device, tensor);
  }

  /** Whether it can use buffers of `type` (`wsp_ggml_backend_supports_buft`). */
  supportsBufferType(type: BufferType): boolean {
    return sym().wsp_ggml_backend_supports_buft(this.pointer, type.pointer);
  }

  /** Whether it wants to run `tensor`'s op even when its weights are elsewhere (`wsp_ggml_backend_offload_op`). */
  offloadOp(tensor: Tensor): boolean {
    return sym().wsp_ggml_backend_offload_op(this.pointer, tensorPtr("offloadOp", tensor));
  }

  /**
   * Sets the CPU backend's thread count (`wsp_ggml_backend_cpu_set_n_threads`).
   *
   * @throws {UnsupportedOpError} on a backend that is not a CPU one
   */
  setNThreads(nThreads: number): this {
    int("setNThreads: nThreads", nThreads);
    if (nThreads < 1 || nThreads > MAX_N_THREADS) throw new ArgumentError(`setNThreads: nThreads must be in 1..${MAX_N_THREADS}, got ${nThreads}`);
    if (!this.isCpu) throw new UnsupportedOpError(`setNThreads: ${this.name} is not a CPU backend`);
    checkThreads("setNThreads", nThreads);
    sym().wsp_ggml_backend_cpu_set_n_threads(this.pointer, nThreads);
    return this;
  }

  /**
   * Computes with `pool`'s threads from now on, or with a threadpool per
   * compute call again (`null`) (`wsp_ggml_backend_cpu_set_threadpool`). The
   * threadpool must outlive its use: freeing it detaches it from this backend.
   */
  setThreadpool(pool: Threadpool | null): this {
    if (!this.isCpu) throw new UnsupportedOpError(`setThreadpool: ${this.name} is not a CPU backend`);
    if (pool !== null && !(pool instanceof Threadpool)) throw new ArgumentError("setThreadpool: expected a Threadpool or null");
    this.#threadpool?._detach(this.#self);
    sym().wsp_ggml_backend_cpu_set_threadpool(this.pointer, pool === null ? 0 : pool._live("setThreadpool"));
    this.#threadpool = pool ?? undefined;
    pool?._attach(this.#self);
    return this;
  }

  /** Waits for queued asynchronous work (`wsp_ggml_backend_synchronize`). */
  synchronize(): void {
    sym().wsp_ggml_backend_synchronize(this.pointer);
  }

  #preflight(what: string, graph: Graph): void {
    if (!(graph instanceof Graph)) throw new ArgumentError(`${what}: expected a Graph`);
    if (this.#busy) throw new BusyError(`${what}: the backend is computing another graph (await it first)`);
    graph._idle(what);
    for (const c of graph.context._reachable()) c._pool(`${what}: a context the graph uses`);
    const type = this.device.type;
    const s = sym();
    for (const t of graphTensors(graph)) {
      if (t._data === 0) throw new NotAllocatedError(`${what}: ${t.describe()} is not allocated (allocate its context with allocCtxTensors, or the graph with a Gallocr)`);
      checkData(what, t); // a view whose source's buffer was freed
    }
    for (const n of graph.nodes()) {
      if (!supports(type, s.wsp_ggml_backend_supports_op(this.#h.ptr, n._ptr), n)) {
        throw new UnsupportedOpError(`${what}: ${this.name} does not support ${str(s.wsp_ggml_op_desc(n._ptr))} on ${n.describe()}`);
      }
    }
    if (type !== BackendDevType.CPU) {
      checkVulkanGraph(what, this, graph);
      checkMetalGraph(what, this, graph);
    }
    graph._checkIndices(what);
  }

  /**
   * Computes `graph` (`wsp_ggml_backend_graph_compute`); every tensor of it
   * must be allocated (a context's pool, a backend buffer, a Gallocr).
   *
   * @throws {NotAllocatedError} when a tensor has no data
   * @throws {UnsupportedOpError} when the backend cannot compute a node
   * @throws {ComputeError} when ggml reports a failure
   */
  graphCompute(graph: Graph): this {
    this._live("graphCompute");
    this.#preflight("graphCompute", graph);
    checkStatus("graphCompute", sym().wsp_ggml_backend_graph_compute(this.#h.ptr, graph.pointer));
    return this;
  }

  /**
   * Computes `graph` without blocking the event loop: on another thread
   * (Deno `nonblocking`, koffi `.async`, a worker on Bun). The graph and its
   * tensors must not be changed until the promise settles, and the backend
   * computes one graph at a time. An aborted `signal` stops the compute
   * between two nodes (CPU backends) and rejects with the signal's reason;
   * a backend ggml cannot interrupt (a GPU one) finishes the graph, then
   * the promise rejects with the reason.
   */
  async graphComputeAsync(graph: Graph, options: AsyncComputeOptions = {}): Promise<void> {
    const ptr = this._live("graphComputeAsync");
    this.#preflight("graphComputeAsync", graph);
    const compute = runtime().lib.async.wsp_ggml_backend_graph_compute;
    if (!compute) throw new UnsupportedOpError("graphComputeAsync: this runtime has no non-blocking call");
    const g = graph.pointer;
    const release = graph._acquire("graphComputeAsync");
    this.#busy = true;
    const flag = this.#flag ?? takeAbortFlag();
    try {
      await runAbortable("graphComputeAsync", flag, options.signal, () => compute(ptr, g) as Promise<number>);
      // A backend without an abort callback (a GPU) finishes the graph it was given: the abort takes effect when it returns.
      if (!this.#flag) options.signal?.throwIfAborted();
    } finally {
      if (!this.#flag) giveAbortFlag(flag);
      this.#flag?.set(false);
      this.#busy = false;
      release();
      keepAlive(graph);
    }
  }

  /** @ignore @internal The abort flag of a CPU backend. */
  get _flag(): AbortFlag | undefined {
    return this.#h.ptr === 0 ? undefined : this.#flag; // a freed backend's flag went back to the pool
  }

  /** @ignore @internal Marks the backend as computing (asynchronous computes are exclusive). */
  _setBusy(busy: boolean, what: string): this {
    if (busy && this.#busy) throw new BusyError(`${what}: the backend ${this.name} is computing another graph (await it first)`);
    this.#busy = busy;
    return this;
  }

  /** Frees the backend (`wsp_ggml_backend_free`); further use throws. */
  free(): void {
    if (this.#h.ptr === 0) return;
    if (this.#busy) throw new BusyError("free: the backend is computing a graph (await it first)");
    this.#threadpool?._detach(this.#self);
    this.#threadpool = undefined;
    dispose(this.#h);
  }

  /** Frees the backend (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

/** Options of {@linkcode Threadpool}. */
export interface ThreadpoolOptions {
  /** Threads (1 … 512). */
  readonly nThreads: number;
  /** Scheduling priority of the threads (a {@linkcode SchedPriority}); default NORMAL. */
  readonly prio?: SchedPriority;
  /** Polling level, 0 (no polling) … 100 (aggressive); default 50. */
  readonly poll?: number;
  /** Start paused; default false. */
  readonly paused?: boolean;
}

/**
 * A reusable CPU threadpool (`wsp_ggml_threadpool_new`). Without one, ggml
 * creates and joins a threadpool on every compute call; with one the
 * threads live on between calls. Attach it with
 * {@linkcode Backend.setThreadpool}; free it with `free()` (or `using`),
 * which detaches it from its backends first.
 */
export class Threadpool {
  readonly #h: Handle;
  /** Threads in the pool. */
  readonly nThreads: number;
  /** The backends it is attached to (weakly: a backend nothing else refers to is collected). */
  readonly #backends = new Set<WeakRef<Backend>>();

  /**
   * A pool of `options.nThreads` threads (`wsp_ggml_threadpool_new`).
   *
   * @param options the pool's parameters
   */
  constructor(options: ThreadpoolOptions) {
    const n = int("Threadpool: nThreads", options.nThreads);
    if (n < 1 || n > MAX_N_THREADS) throw new ArgumentError(`Threadpool: nThreads must be in 1..${MAX_N_THREADS}, got ${n}`);
    const L = layouts.wsp_ggml_threadpool_params;
    const buf = new ArrayBuffer(L.size);
    const p = ffi.addressOf(buf);
    const s = sym();
    s.wsp_ggml_threadpool_params_init(p, n);
    const v = new DataView(buf);
    if (options.prio !== undefined) v.setInt32(L.fields.prio.offset, member("Threadpool: prio", options.prio, SchedPriority, "SchedPriority"), true);
    if (options.poll !== undefined) {
      const poll = int("Threadpool: poll", options.poll);
      if (poll < 0 || poll > 100) throw new ArgumentError(`poll must be in 0..100, got ${poll}`);
      v.setUint32(L.fields.poll.offset, poll, true);
    }
    if (options.paused !== undefined) v.setUint8(L.fields.paused.offset, options.paused ? 1 : 0);
    const pool = s.wsp_ggml_threadpool_new(p);
    keepAlive(buf);
    if (pool === 0) throw new GgmlError("OUT_OF_MEMORY", "wsp_ggml_threadpool_new failed");
    this.#h = adopt(this, "threadpool", pool, (q) => sym().wsp_ggml_threadpool_free(q));
    this.nThreads = n;
    checkThreads("Threadpool", n);
  }

  /** @ignore @internal */
  _live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the threadpool was freed`);
    return this.#h.ptr;
  }

  /** The native `struct wsp_ggml_threadpool *`. */
  get pointer(): number {
    return this._live("threadpool");
  }

  /** Pauses the threads (`wsp_ggml_threadpool_pause`); a compute resumes them. */
  pause(): void {
    sym().wsp_ggml_threadpool_pause(this.pointer);
  }

  /** Resumes the threads (`wsp_ggml_threadpool_resume`). */
  resume(): void {
    sym().wsp_ggml_threadpool_resume(this.pointer);
  }

  /** @ignore @internal */
  _attach(b: WeakRef<Backend>): void {
    this.#backends.add(b);
  }

  /** @ignore @internal */
  _detach(b: WeakRef<Backend>): void {
    this.#backends.delete(b);
  }

  /** Detaches the pool from its backends and frees it (`wsp_ggml_threadpool_free`). */
  free(): void {
    if (this.#h.ptr === 0) return;
    for (const ref of [...this.#backends]) {
      const b = ref.deref();
      if (b && !b.freed) b.setThreadpool(null);
    }
    this.#backends.clear();
    dispose(this.#h);
  }

  /** Frees the pool (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}

/**
 * An event of a device (`wsp_ggml_backend_event_t`), to order work between
 * asynchronous backends. Only devices with `caps.events` have them (not the
 * CPU).
 */
export class BackendEvent {
  readonly #h: Handle;
  /** The device it belongs to. */
  readonly device: Device;

  /**
   * A new event of `device`.
   *
   * @param device the device (`wsp_ggml_backend_event_new`)
   * @throws {UnsupportedOpError} when the device has no events
   */
  constructor(device: Device) {
    if (!(device instanceof Device)) throw new ArgumentError("BackendEvent: expected a Device");
    if (!device.props().caps.events) throw new UnsupportedOpError(`BackendEvent: the ${device.name} device has no events`);
    const p = sym().wsp_ggml_backend_event_new(device.pointer);
    if (p === 0) throw new UnsupportedOpError(`BackendEvent: the ${device.name} device could not create an event`);
    this.#h = adopt(this, "event", p, (q) => sym().wsp_ggml_backend_event_free(q));
    this.device = device;
  }

  #live(what: string): number {
    if (this.#h.ptr === 0) throw new UseAfterFreeError(`${what}: the event was freed`);
    return this.#h.ptr;
  }

  /** Records the event in `backend`'s queue (`wsp_ggml_backend_event_record`). */
  record(backend: Backend): void {
    sym().wsp_ggml_backend_event_record(this.#live("record"), backend._live("record"));
  }

  /** Blocks until the event happened (`wsp_ggml_backend_event_synchronize`). */
  synchronize(): void {
    sym().wsp_ggml_backend_event_synchronize(this.#live("synchronize"));
  }

  /** Makes `backend` wait for the event before its next work (`wsp_ggml_backend_event_wait`). */
  wait(backend: Backend): void {
    sym().wsp_ggml_backend_event_wait(backend._live("wait"), this.#live("wait"));
  }

  /** Frees the event. */
  free(): void {
    dispose(this.#h);
  }

  /** Frees the event (`using`). */
  [Symbol.dispose](): void {
    this.free();
  }
}
