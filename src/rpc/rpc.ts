/**
 * ggml's RPC backend: compute on another machine's backend over TCP
 * ({@linkcode rpcBackend}, {@linkcode rpcDevice}), and serve this machine's
 * backend to such clients ({@linkcode RpcServer}).
 *
 * The protocol (ggml-rpc 2.0.0, llama.cpp's `--rpc` and `rpc-server`) has no
 * authentication and no encryption: whoever reaches the port can read and
 * write the server's memory through it. A server binds to 127.0.0.1 unless
 * told otherwise; serve other machines only on a private network or through
 * an SSH tunnel.
 *
 * Faults. ggml-rpc's client ends the process (`WSP_GGML_ABORT`) when a server
 * dies or answers malformed data. This build catches that inside the RPC code
 * (native/rpc_guard.cpp): the connection is shut down, the failing call
 * returns a failure ggml handles (a compute returns a failure status, an
 * allocation NULL, a read zeros), and the fault is recorded. The calls of this
 * module throw {@linkcode RpcError}; a compute or read through the generic API
 * wrapped in {@linkcode rpcGuard} (or {@linkcode rpcCompute}) throws
 * {@linkcode RpcError} too, even where ggml's answer alone (zeros from a read)
 * would not tell.
 *
 * @module
 */
import process from "node:process";
import { INTERNAL } from "../core/brand.ts";
import { ArgumentError, BusyError, GgmlError, RpcError } from "../core/errors.ts";
import { cString } from "../ffi/mod.ts";
import { ffi, keepAlive, library } from "../runtime/loader.ts";
import { defaultThreads } from "../runtime/threads.ts";
import { runtime } from "../runtime/runtime.ts";
import { _setComputeFaultHook, _setRpcBackendFactory, type AsyncComputeOptions, Backend, Device, type DeviceMemory } from "../backend/backend.ts";
import type { Sched } from "../backend/sched.ts";
import type { Graph } from "../core/graph.ts";

/** The RPC protocol version this build speaks (`RPC_PROTO_*_VERSION` of ggml-rpc.h). */
export const RPC_PROTOCOL_VERSION = "2.0.0";

/** The port `wsp-ggml rpc-server` and llama.cpp's `rpc-server` listen on by default. */
export const RPC_DEFAULT_PORT = 50052;

const natives = {
  wsp_rpc_fault_count: { args: [], result: "i32" },
  wsp_rpc_last_error: { args: ["pointer", "i32"], result: "i32" },
  wsp_rpc_set_timeout_ms: { args: ["i32"], result: "void" },
  wsp_rpc_server_start: { args: ["pointer", "pointer", "i32", "f64", "f64", "pointer"], result: "pointer" },
  wsp_rpc_server_port: { args: ["pointer"], result: "i32" },
  wsp_rpc_server_clients: { args: ["pointer"], result: "i32" },
  wsp_rpc_server_dropped: { args: ["pointer"], result: "i32" },
  wsp_rpc_server_stop: { args: ["pointer"], result: "void" },
} as const;

function openNatives() {
  const base = library().location.base;
  const lib = ffi.open(base, natives);
  if (!lib.has("wsp_rpc_server_start")) {
    throw new GgmlError("UNSUPPORTED", `${base} has no RPC backend (no wsp_rpc_server_start): rebuild it (npm run build)`);
  }
  return lib.symbols;
}

let opened: ReturnType<typeof openNatives> | undefined;
function rpc() {
  return (opened ??= openNatives());
}
const sym = () => runtime().lib.symbols;

/** How many RPC faults were caught since the library loaded (each also logged at ERROR level). */
export function rpcFaultCount(): number {
  return rpc().wsp_rpc_fault_count();
}

/** The last RPC fault's message (`""` when none happened yet). */
export function rpcLastError(): string {
  const s = rpc();
  const out = new Uint8Array(1024);
  s.wsp_rpc_last_error(ffi.addressOf(out), out.length);
  return ffi.readCString(ffi.addressOf(out)) ?? "";
}

/**
 * The time a client waits for a server to answer one command (and to take
 * one message), in milliseconds, for every RPC connection of this process
 * from its next command on; 0 (the default) waits forever. A server that
 * does not answer in time is a fault: {@linkcode RpcError}, and the
 * connection is shut down. A compute is one command: allow for the longest
 * graph.
 */
export function setRpcTimeout(ms: number): void {
  if (!Number.isInteger(ms) || ms < 0 || ms > 2 ** 31 - 1) throw new ArgumentError(`setRpcTimeout: expected an integer number of milliseconds ≥ 0, got ${ms}`);
  rpc().wsp_rpc_set_timeout_ms(ms);
}

/** `host:port` checked: a host without spaces or colons, and a port 1 … 65535. */
function checkEndpoint(what: string, endpoint: unknown): string {
  if (typeof endpoint !== "string") throw new ArgumentError(`${what}: expected an endpoint "host:port", got ${typeof endpoint}`);
  const m = /^([^:\s]+):(\d{1,5})$/.exec(endpoint);
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535) throw new ArgumentError(`${what}: expected an endpoint "host:port" (port 1 … 65535), got ${JSON.stringify(endpoint)}`);
  return endpoint;
}

function faultError(what: string, endpoint: string | undefined, cause?: unknown): RpcError {
  const last = rpcLastError();
  faultsSeen = rpcFaultCount();
  return new RpcError(`${what}: ${last || "the RPC server failed"}`, endpoint ?? /^RPC\[([^\]]+)\]/.exec(last)?.[1], cause === undefined ? undefined : { cause });
}

// A failed compute of any backend or scheduler (Backend.graphCompute, Sched.graphCompute, their
// async forms) becomes an RpcError when an RPC fault happened since the last one reported.
let faultsSeen = 0;
_setComputeFaultHook((e) => {
  const n = rpcFaultCount();
  return n === faultsSeen ? undefined : faultError(e.message.split(" failed")[0], undefined, e);
});

/**
 * A backend that computes on the RPC server at `endpoint` (`host:port`,
 * `wsp_ggml_backend_rpc_init`). It connects first (once per endpoint and
 * process; the connection is shared by the server's buffers and backends)
 * and checks the protocol version. The connection stays while buffers on
 * that server exist: after a fault, free them before connecting again (a new
 * backend would share the dead connection and fail).
 *
 * @throws {RpcError} when the server cannot be reached, speaks another protocol version, or answers malformed data
 */
export function rpcBackend(endpoint: string): Backend {
  checkEndpoint("rpcBackend", endpoint);
  rpc();
  const c = cString(endpoint);
  const s = sym();
  const buft = s.wsp_ggml_backend_rpc_buffer_type(ffi.addressOf(c));
  if (buft === 0) {
    keepAlive(c);
    throw faultError(`rpcBackend: cannot use the RPC server at ${endpoint}`, endpoint);
  }
  // The buffer type is made once per endpoint and process: ask the server itself, to find it gone.
  const before = rpcFaultCount();
  const out = new BigUint64Array(2);
  s.wsp_ggml_backend_rpc_get_device_memory(ffi.addressOf(c), ffi.addressOf(out), ffi.addressOf(out) + 8);
  if (rpcFaultCount() !== before) {
    keepAlive(c);
    throw faultError(`rpcBackend: cannot use the RPC server at ${endpoint}`, endpoint);
  }
  const p = s.wsp_ggml_backend_rpc_init(ffi.addressOf(c));
  keepAlive([c, out]);
  if (p === 0) throw new RpcError(`rpcBackend: wsp_ggml_backend_rpc_init(${JSON.stringify(endpoint)}) failed`, endpoint);
  return new Backend(p, INTERNAL);
}

// Backend.rpc(endpoint) is rpcBackend(endpoint) once this module is loaded.
_setRpcBackendFactory(rpcBackend);

/**
 * The device of the RPC server at `endpoint` (`wsp_ggml_backend_rpc_add_device`);
 * it does not connect until used. Its `memory()` is the server's, or 0 / 0
 * when the server cannot be reached ({@linkcode rpcDeviceMemory} throws instead).
 */
export function rpcDevice(endpoint: string): Device {
  checkEndpoint("rpcDevice", endpoint);
  rpc();
  const c = cString(endpoint);
  const p = sym().wsp_ggml_backend_rpc_add_device(ffi.addressOf(c));
  keepAlive(c);
  return new Device(p, INTERNAL);
}

/**
 * The free and total memory the RPC server at `endpoint` reports
 * (`wsp_ggml_backend_rpc_get_device_memory`).
 *
 * @throws {RpcError} when the server cannot be reached or answers malformed data
 */
export function rpcDeviceMemory(endpoint: string): DeviceMemory {
  checkEndpoint("rpcDeviceMemory", endpoint);
  const before = rpcFaultCount();
  const c = cString(endpoint);
  const out = new BigUint64Array(2);
  const base = ffi.addressOf(out);
  sym().wsp_ggml_backend_rpc_get_device_memory(ffi.addressOf(c), base, base + 8);
  keepAlive(c);
  if (rpcFaultCount() !== before) throw faultError(`rpcDeviceMemory(${endpoint})`, endpoint);
  return { free: Number(out[0]), total: Number(out[1]) };
}

/** Whether `backend` is an RPC backend (`wsp_ggml_backend_is_rpc`). */
export function isRpcBackend(backend: Backend): boolean {
  return sym().wsp_ggml_backend_is_rpc(backend.pointer) as boolean;
}

/**
 * Runs `fn` (a compute, a tensor read or write, an allocation — anything that
 * may talk to an RPC server) and throws {@linkcode RpcError} when an RPC
 * fault happened during it: a failed compute's {@linkcode ComputeError}
 * becomes the `cause` of the RpcError, and a call that returned (a read of
 * zeros from a dead server) throws too. A promise is awaited. Faults are
 * counted per process: a fault of another thread's RPC call at the same
 * time is also reported.
 */
export function rpcGuard<T>(fn: () => Promise<T>): Promise<T>;
/** Runs `fn` and throws {@linkcode RpcError} when an RPC fault happened during it (see the other overload). */
export function rpcGuard<T>(fn: () => T): T;
export function rpcGuard<T>(fn: () => T | Promise<T>): T | Promise<T> {
  const before = rpcFaultCount();
  const settle = (value: T): T => {
    if (rpcFaultCount() !== before) throw faultError("rpc", undefined);
    return value;
  };
  const fail = (e: unknown): never => {
    if (rpcFaultCount() !== before && !(e instanceof RpcError)) throw faultError("rpc", undefined, e);
    throw e;
  };
  let r: T | Promise<T>;
  try {
    r = fn();
  } catch (e) {
    return fail(e);
  }
  if (r instanceof Promise) return r.then(settle, fail);
  return settle(r);
}

/**
 * `target.graphCompute(graph)` under {@linkcode rpcGuard}: a lost or lying
 * RPC server throws {@linkcode RpcError}.
 */
export function rpcCompute(target: Sched | Backend, graph: Graph): void {
  rpcGuard(() => target.graphCompute(graph));
}

/**
 * `target.graphComputeAsync(graph, options)` under {@linkcode rpcGuard}: a
 * lost or lying RPC server rejects with {@linkcode RpcError}.
 */
export function rpcComputeAsync(target: Sched | Backend, graph: Graph, options?: AsyncComputeOptions): Promise<void> {
  return rpcGuard(() => target.graphComputeAsync(graph, options));
}

/** Options of {@linkcode RpcServer.start}. */
export interface RpcServerOptions {
  /**
   * The IPv4 address to bind; default `127.0.0.1` (this machine only).
   * Any address outside 127.0.0.0/8 needs `allowRemote: true`.
   */
  readonly host?: string;
  /** The port; default {@linkcode RPC_DEFAULT_PORT}; 0 lets the system pick a free one ({@linkcode RpcServer.port} says which). */
  readonly port?: number;
  /**
   * Serve on an address other machines can reach. The protocol has no
   * authentication: anyone who reaches the port can read and write the
   * server's memory through it. A warning is printed to stderr.
   */
  readonly allowRemote?: boolean;
  /** The backend to serve; default a new CPU backend with `nThreads`. It is busy (cannot compute or be freed) until the server stops. */
  readonly backend?: Backend;
  /** Threads of the CPU backend made when `backend` is not given; default: the package's thread policy (`defaultThreads`). */
  readonly nThreads?: number;
  /** The memory reported to clients, in bytes; default the backend's device memory. */
  readonly memory?: DeviceMemory;
}

/** Servers that run: kept from the collector (a collected one would serve a freed backend). */
const running = new Set<RpcServer>();

/**
 * A server of ggml's RPC protocol that serves a local backend (the CPU by
 * default) on `host:port`: llama.cpp's `rpc-server`, started and stopped
 * from TypeScript. The socket is bound on the calling thread; clients are
 * served one at a time on a native thread of the server's own, so the JS
 * thread stays free. A client whose message is malformed, truncated or
 * refers to memory outside its buffers is disconnected and the server goes
 * on with the next one.
 *
 * ```ts ignore
 * using server = RpcServer.start({ port: 0 });
 * const remote = rpcBackend(server.endpoint);
 * ```
 */
export class RpcServer {
  /** The address it is bound to. */
  readonly host: string;
  /** The port it listens on. */
  readonly port: number;
  /** The backend it serves. */
  readonly backend: Backend;
  #ptr: number;
  readonly #owned: boolean;

  private constructor(host: string, port: number, backend: Backend, ptr: number, owned: boolean) {
    this.host = host;
    this.port = port;
    this.backend = backend;
    this.#ptr = ptr;
    this.#owned = owned;
  }

  /**
   * Binds `host:port` and starts serving.
   *
   * @throws {ArgumentError} for a malformed host or port, or a host outside 127.0.0.0/8 without `allowRemote`
   * @throws {RpcError} when the address cannot be bound (the port is in use, no permission)
   */
  static start(options: RpcServerOptions = {}): RpcServer {
    const raw = options.host ?? "127.0.0.1";
    const host = raw === "localhost" ? "127.0.0.1" : raw;
    const octets = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
    if (!octets || octets.slice(1).some((o) => Number(o) > 255)) throw new ArgumentError(`RpcServer: host must be an IPv4 address, got ${JSON.stringify(raw)}`);
    const port = options.port ?? RPC_DEFAULT_PORT;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ArgumentError(`RpcServer: port must be an integer 0 … 65535, got ${port}`);
    const loopback = octets[1] === "127";
    if (!loopback && !options.allowRemote) {
      throw new ArgumentError(`RpcServer: ${host} is reachable from other machines and the RPC protocol has no authentication; pass allowRemote: true (CLI: --allow-remote) to serve there anyway`);
    }
    const s = rpc();
    const owned = options.backend === undefined;
    const backend = options.backend ?? Backend.cpu({ nThreads: options.nThreads ?? defaultThreads() });
    try {
      backend._live("RpcServer");
      backend._setBusy(true, "RpcServer");
    } catch (e) {
      if (owned) backend.free();
      if (e instanceof BusyError) throw new BusyError(`RpcServer: the backend ${backend.name} is computing a graph (await it first)`);
      throw e;
    }
    let memory = options.memory;
    if (memory === undefined) memory = backend.device.memory();
    const c = cString(host);
    const err = new Int32Array(1);
    const ptr = s.wsp_rpc_server_start(backend.pointer, ffi.addressOf(c), port, memory.free, memory.total, ffi.addressOf(err));
    keepAlive([c, err]);
    if (ptr === 0) {
      backend._setBusy(false, "RpcServer");
      if (owned) backend.free();
      const why = err[0] === 1 ? "not a usable address" : err[0] === 3 ? "the socket library did not start" : "bind or listen failed (the port is in use, or no permission)";
      throw new RpcError(`RpcServer: cannot serve on ${host}:${port}: ${why}`, `${host}:${port}`);
    }
    const server = new RpcServer(host, s.wsp_rpc_server_port(ptr), backend, ptr, owned);
    if (!loopback) {
      process.stderr.write(
        `wsp-ggml rpc-server: WARNING: serving on ${host}:${server.port}, reachable from other machines. The RPC protocol has no authentication or encryption: anyone who reaches this port can read and write this process's backend memory and run graphs on it. Use a private network or an SSH tunnel.\n`,
      );
    }
    running.add(server);
    return server;
  }

  /** `host:port`, as clients name it. */
  get endpoint(): string {
    return `${this.host}:${this.port}`;
  }

  /** Whether it is still serving. */
  get running(): boolean {
    return this.#ptr !== 0;
  }

  /** Clients accepted so far (0 once stopped). */
  get clients(): number {
    return this.#ptr === 0 ? 0 : rpc().wsp_rpc_server_clients(this.#ptr);
  }

  /** Clients disconnected because their message made the server's code refuse it with an assert. */
  get dropped(): number {
    return this.#ptr === 0 ? 0 : rpc().wsp_rpc_server_dropped(this.#ptr);
  }

  /**
   * Stops serving: the current client is disconnected, the serving thread
   * ends (after the command it is running, a compute included), the port is
   * closed, and a backend the server made is freed. A second stop does
   * nothing.
   */
  stop(): void {
    const p = this.#ptr;
    if (p === 0) return;
    this.#ptr = 0;
    rpc().wsp_rpc_server_stop(p);
    running.delete(this);
    this.backend._setBusy(false, "RpcServer");
    if (this.#owned) this.backend.free();
  }

  /** {@linkcode stop} (for `using`). */
  [Symbol.dispose](): void {
    this.stop();
  }
}
