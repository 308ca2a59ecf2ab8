// ggml's RPC backend (src/rpc/, native/rpc_guard.cpp), loopback only: every server binds
// 127.0.0.1 on a port the system picks, every child is killed at the end, every wait is bounded.
//   - a 3-layer MLP split across two in-process RpcServers and the local CPU through Sched gives
//     the CPU-alone result bit for bit (the same CPU kernels compute every op on each side);
//   - RpcServer.stop with a client connected returns and the client gets RpcError; a taken port
//     is RpcError; the served backend is busy while served;
//   - faults are RpcError, the process lives on and the CPU backend still computes: a server
//     killed mid-session (the CLI in a child, SIGKILL), a server that lies after the set-up (a
//     proxy that answers the compute with random bytes), garbage for HELLO, a protocol-version
//     mismatch, a server that never answers (setRpcTimeout), a refused connection;
//   - the server fed ≥ 10,000 malformed, truncated, oversized and mutated messages over raw
//     sockets stays up and then serves a correct compute (WSP_GGML_RPC_FUZZ_MESSAGES, _SEED);
//   - `wsp-ggml rpc-server` starts, serves, and stops on SIGINT and on SIGTERM (exit 0); binding
//     an address outside 127.0.0.0/8 needs --allow-remote (refused before any socket is made:
//     no test binds anything but 127.0.0.1).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import { join } from "node:path";
import process from "node:process";
import {
  allocCtxTensors, ArgumentError, Backend, type Buffer, ComputeError, Context, isRpcBackend, RpcError, rpcBackend, rpcCompute, rpcComputeAsync,
  rpcDevice, rpcDeviceMemory, rpcFaultCount, rpcGuard, RpcServer, Sched, setRpcTimeout, type Tensor, tensorGet, tensorMemset, tensorSet, Type, UnsupportedOpError,
} from "../src/mod.ts";
import { root } from "./run.ts";
import { createRng } from "../src/llm/sampler.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const runtimeArgs = (file: string, argv: readonly string[]) =>
  [...(g.Bun !== undefined ? [file] : g.Deno !== undefined ? ["run", "-A", file] : ["--import", "tsx", file]), ...argv];

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill("SIGKILL");
});

interface Child {
  readonly child: ChildProcess;
  readonly line: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Starts `file` (TypeScript) on this runtime; resolves once a stdout line matches `ready` (at most `ms`). */
function startChild(file: string, argv: readonly string[], ready: RegExp, ms = 60_000): Promise<Child> {
  const child = spawn(process.execPath, runtimeArgs(join(root, file), argv), { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let out = "", err = "";
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    })
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${file} ${argv.join(" ")}: no line matching ${ready} in ${ms} ms\nstdout: ${out}\nstderr: ${err}`));
    }, ms);
    child.stderr!.on("data", (d: Uint8Array) => void (err += new TextDecoder().decode(d)));
    child.stdout!.on("data", (d: Uint8Array) => {
      out += new TextDecoder().decode(d);
      const m = out.split("\n").find((l) => ready.test(l));
      if (m !== undefined) {
        clearTimeout(timer);
        resolve({ child, line: m, stdout: () => out, stderr: () => err, exited });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited (${code}) before it was ready\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

/** `wsp-ggml rpc-server --port 0 …` in a child; resolves with its endpoint. */
async function cliServer(...argv: string[]): Promise<Child & { endpoint: string }> {
  const c = await startChild("src/cli/bin.ts", ["rpc-server", "--port", "0", "--threads", "1", ...argv], /serving .* on \d+\.\d+\.\d+\.\d+:\d+/);
  return { ...c, endpoint: /on (\S+:\d+)/.exec(c.line)![1] };
}

/** A misbehaving server (tests/rpc_liar.ts) in a child; resolves with its endpoint. */
async function liar(...argv: string[]): Promise<Child & { endpoint: string }> {
  const c = await startChild("tests/rpc_liar.ts", argv, /^listening \d+$/);
  return { ...c, endpoint: `127.0.0.1:${/\d+/.exec(c.line)![0]}` };
}


const IN = 16, HIDDEN = 32, OUT = 8, BATCH = 8;
const rand = createRng(7);
const values = (n: number) => Float32Array.from({ length: n }, () => rand() * 2 - 1);
const WEIGHTS = { w1: values(IN * HIDDEN), b1: values(HIDDEN), w2: values(HIDDEN * HIDDEN), b2: values(HIDDEN), w3: values(HIDDEN * OUT), b3: values(OUT) };
const X = values(IN * BATCH);

/** One layer's weights in their own context, allocated on `backend`. */
function layer(backend: Backend, w: Float32Array, b: Float32Array, nIn: number, nOut: number) {
  const ctx = new Context({ memSize: 1 << 16, noAlloc: true });
  const wt = ctx.newTensor2d(Type.F32, nIn, nOut), bt = ctx.newTensor1d(Type.F32, nOut);
  const buf = allocCtxTensors(ctx, backend)!;
  tensorSet(wt, w);
  tensorSet(bt, b);
  return { ctx, w: wt, b: bt, buf };
}

/** The MLP `relu(W3·relu(W2·relu(W1·x + b1) + b2) + b3)`, layer i on backends[i]; returns y and the nodes of each layer. */
function mlp(backends: readonly [Backend, Backend, Backend]) {
  const l1 = layer(backends[0], WEIGHTS.w1, WEIGHTS.b1, IN, HIDDEN);
  const l2 = layer(backends[1], WEIGHTS.w2, WEIGHTS.b2, HIDDEN, HIDDEN);
  const l3 = layer(backends[2], WEIGHTS.w3, WEIGHTS.b3, HIDDEN, OUT);
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  const x = g.newTensor2d(Type.F32, IN, BATCH).setInput();
  const nodes: Tensor[][] = [];
  let h = x;
  for (const l of [l1, l2, l3]) {
    const m = g.mulMat(l.w, h), a = g.add(m, l.b), r = g.relu(a);
    nodes.push([m, a, r]);
    h = r;
  }
  h.setOutput();
  const gf = g.newGraph().buildForwardExpand(h);
  return { g, x, y: h, gf, nodes, layers: [l1, l2, l3], free: () => [l1, l2, l3].forEach((l) => l.buf.free()) };
}

/** The MLP on the CPU alone. */
function cpuAlone(): Float32Array {
  using cpu = Backend.cpu({ nThreads: 1 });
  const m = mlp([cpu, cpu, cpu]);
  using s = new Sched({ backends: [cpu] });
  s.allocGraph(m.gf);
  tensorSet(m.x, X);
  s.graphCompute(m.gf);
  const y = tensorGet(m.y) as Float32Array;
  m.free();
  return y;
}

/** A small graph on `backend` alone: (a + b) * b with a, b of 4 floats. */
function smallCompute(backend: Backend): number[] {
  const w = new Context({ memSize: 1 << 16, noAlloc: true });
  const a = w.newTensor1d(Type.F32, 4), b = w.newTensor1d(Type.F32, 4);
  const buf: Buffer = allocCtxTensors(w, backend)!;
  tensorSet(a, new Float32Array([1, 2, 3, 4]));
  tensorSet(b, new Float32Array([10, 20, 30, 40]));
  const g = new Context({ memSize: 1 << 20, noAlloc: true });
  const c = g.mul(g.add(a, b), b).setOutput();
  const gf = g.newGraph().buildForwardExpand(c);
  using s = new Sched({ backends: backend.isCpu ? [backend] : [backend, cpuForSched()] });
  rpcCompute(s, gf);
  const out = [...(tensorGet(c) as Float32Array)];
  buf.free();
  return out;
}
const SMALL = [110, 440, 990, 1760];
let sharedCpu: Backend | undefined;
const cpuForSched = () => (sharedCpu ??= Backend.cpu({ nThreads: 1 }));

describe("RPC backend", () => {
  test("an MLP split across two RPC servers and the local CPU equals the CPU alone, bit for bit", async () => {
    const want = cpuAlone();
    using a = RpcServer.start({ port: 0, nThreads: 1 }), b = RpcServer.start({ port: 0, nThreads: 1 });
    assert.equal(a.host, "127.0.0.1");
    const ra = rpcBackend(a.endpoint), rb = rpcBackend(b.endpoint);
    using cpu = Backend.cpu({ nThreads: 1 });
    assert.ok(isRpcBackend(ra) && !isRpcBackend(cpu));
    assert.equal(ra.name, `RPC[${a.endpoint}]`);
    const mem = rpcDeviceMemory(a.endpoint);
    assert.ok(mem.total > 0 && mem.free <= mem.total, JSON.stringify(mem));
    assert.deepEqual(rpcDevice(a.endpoint).memory(), mem);
    assert.equal(ra.device.name, `RPC[${a.endpoint}]`);
    const m = mlp([ra, rb, cpu]);
    using s = new Sched({ backends: [ra, rb, cpu] });
    m.nodes[0].forEach((n) => s.setTensorBackend(n, ra));
    m.nodes[1].forEach((n) => s.setTensorBackend(n, rb));
    m.nodes[2].forEach((n) => s.setTensorBackend(n, cpu));
    s.allocGraph(m.gf);
    assert.equal(s.getTensorBackend(m.nodes[0][0]), ra);
    assert.equal(s.getTensorBackend(m.nodes[1][0]), rb);
    assert.equal(s.getTensorBackend(m.nodes[2][0]), cpu);
    assert.ok(s.nSplits >= 3, `splits: ${s.nSplits}`);
    tensorSet(m.x, X);
    s.graphCompute(m.gf);
    const got = tensorGet(m.y) as Float32Array;
    assert.deepEqual(new Uint32Array(got.buffer), new Uint32Array(want.buffer), "bit-identical to the CPU alone");
    // Again, off the JS thread, with other inputs written into the RPC-resident weights' neighbours.
    tensorSet(m.x, X.map((v) => v * 0.5));
    await rpcComputeAsync(s, m.gf);
    assert.ok((tensorGet(m.y) as Float32Array).some((v, i) => v !== got[i]), "a new input gives a new output");
    assert.ok(a.clients >= 1 && b.clients >= 1);
    s.free();
    m.free();
    ra.free();
    rb.free();
  });

  test("a tensor in an RPC buffer under a scheduler without the RPC backend, or pinned where it cannot run: UnsupportedOpError, not ggml's abort", () => {
    using server = RpcServer.start({ port: 0, nThreads: 1 });
    const remote = rpcBackend(server.endpoint);
    using cpu = Backend.cpu({ nThreads: 1 });
    const w = new Context({ memSize: 1 << 16, noAlloc: true });
    const a = w.newTensor1d(Type.F32, 4);
    const pre = w.scale(a, 3).setOutput(); // a node allocated with the weights: pre-allocated in the RPC buffer
    const buf = allocCtxTensors(w, remote)!;
    tensorSet(a, new Float32Array([1, 2, 3, 4]));
    const g = new Context({ memSize: 1 << 20, noAlloc: true });
    const c = g.scale(a, 2).setOutput();
    const gfLeaf = g.newGraph().buildForwardExpand(c), gfNode = g.newGraph().buildForwardExpand(pre);
    const cpuOnly = new Sched({ backends: [cpu] });
    const refused = (what: RegExp) => (e: unknown) => e instanceof UnsupportedOpError && /RPC\[.*\] buffer/.test(e.message) && what.test(e.message);
    // ggml's split gives the leaf (op NONE) no backend and aborts: "pre-allocated tensor in a buffer that cannot run the operation".
    assert.throws(() => cpuOnly.allocGraph(gfLeaf), refused(/the tensor .* takes it/));
    assert.throws(() => cpuOnly.graphCompute(gfLeaf), refused(/takes it/));
    assert.throws(() => cpuOnly.allocGraph(gfNode), refused(/SCALE.* runs it/));
    cpuOnly.free();
    // With the RPC backend in the scheduler both compute, and nothing was lost.
    const both = new Sched({ backends: [remote, cpu] });
    rpcCompute(both, gfLeaf);
    assert.deepEqual([...(tensorGet(c) as Float32Array)], [2, 4, 6, 8]);
    rpcCompute(both, gfNode);
    assert.deepEqual([...(tensorGet(pre) as Float32Array)], [3, 6, 9, 12]);
    // ggml keeps a user's assignment as it is; setTensorBackend refuses one the backend cannot honour.
    const permuted = g.mulMat(g.permute(g.newTensor3d(Type.F32, 4, 3, 2), 2, 0, 1, 3), g.newTensor3d(Type.F32, 3, 5, 4));
    assert.throws(() => both.setTensorBackend(permuted, cpu), (e: unknown) => e instanceof UnsupportedOpError && /CPU does not run MUL_MAT/.test(e.message));
    assert.throws(() => both.setTensorBackend(pre, cpu), (e: unknown) => e instanceof UnsupportedOpError && /RPC\[.*\] buffer, which CPU cannot use/.test(e.message));
    both.setTensorBackend(pre, remote);
    both.free();
    g.free();
    buf.free();
    w.free();
    remote.free();
  });

  // An RPC server's buffers have no memset_tensor, which wsp_ggml_backend_tensor_memset asserts (an abort).
  test("tensorMemset into an RPC buffer writes the bytes; Graph.reset of AdamW moments there is UnsupportedOpError", () => {
    using server = RpcServer.start({ port: 0, nThreads: 1 });
    const remote = rpcBackend(server.endpoint);
    const w = new Context({ memSize: 1 << 20, noAlloc: true });
    const a = w.newTensor1d(Type.F32, 8);
    // A loss over a parameter and an AdamW step whose moments (which Graph.reset zeroes) are on the server.
    const p = w.newTensor1d(Type.F32, 4).setParam();
    const loss = w.sum(w.sqr(p)).setLoss();
    const g = w.newGraphCustom(64, true).buildForwardExpand(loss).buildBackwardExpand();
    const step = w.optStepAdamw(p, g.grad(p)!, w.newTensor1d(Type.F32, 4), w.newTensor1d(Type.F32, 4), w.newTensor1d(Type.F32, 7));
    g.buildForwardExpand(step);
    const buf = allocCtxTensors(w, remote)!;
    tensorSet(a, new Float32Array(8).fill(5));
    tensorMemset(a, 0, 8, 16);
    assert.deepEqual([...(tensorGet(a) as Float32Array)], [5, 5, 0, 0, 0, 0, 5, 5]);
    assert.throws(() => g.reset(), (e: unknown) => e instanceof UnsupportedOpError && /reset: AdamW's moment .* is in an RPC server's buffer, which cannot be zeroed/.test(e.message));
    buf.free();
    w.free();
    remote.free();
  });

  test("a server killed mid-session: RpcError, the process lives on, the CPU backend still computes", async () => {
    const server = await cliServer();
    const remote = rpcBackend(server.endpoint);
    assert.deepEqual(smallCompute(remote), SMALL);
    const w = new Context({ memSize: 1 << 16, noAlloc: true });
    const a = w.newTensor1d(Type.F32, 4);
    const buf = allocCtxTensors(w, remote)!;
    tensorSet(a, new Float32Array([1, 2, 3, 4]));
    const g = new Context({ memSize: 1 << 20, noAlloc: true });
    const c = g.scale(a, 2).setOutput();
    const gf = g.newGraph().buildForwardExpand(c);
    const s = new Sched({ backends: [remote, cpuForSched()] });
    rpcCompute(s, gf);
    assert.deepEqual([...(tensorGet(c) as Float32Array)], [2, 4, 6, 8]);
    server.child.kill("SIGKILL");
    await server.exited;
    const before = rpcFaultCount();
    assert.throws(() => rpcCompute(s, gf), (e: unknown) => e instanceof RpcError && e.cause instanceof ComputeError && /RPC\[/.test(e.message));
    assert.ok(rpcFaultCount() > before);
    // The bare API too: the scheduler's failed compute becomes an RpcError (its cause the ComputeError).
    assert.throws(() => s.graphCompute(gf), (e: unknown) => e instanceof RpcError && e.cause instanceof ComputeError);
    assert.deepEqual(smallCompute(cpuForSched()), SMALL, "the CPU backend computes");
    // A new connection to the dead endpoint is refused.
    assert.throws(() => rpcBackend(server.endpoint), RpcError);
    s.free();
    buf.free();
    remote.free();
  });

  test("a server that lies after the set-up: the compute throws RpcError", async () => {
    using real = RpcServer.start({ port: 0, nThreads: 1 });
    const proxy = await liar("lie", real.endpoint);
    const remote = rpcBackend(proxy.endpoint);
    const before = rpcFaultCount();
    assert.throws(() => smallCompute(remote), RpcError);
    assert.ok(rpcFaultCount() > before);
    assert.deepEqual(smallCompute(cpuForSched()), SMALL);
    remote.free();
    proxy.child.kill("SIGKILL");
    // The real server lost its client and serves the next one.
    const direct = rpcBackend(real.endpoint);
    assert.deepEqual(smallCompute(direct), SMALL);
    direct.free();
  });

  test("RpcServer.stop with a client connected: it returns, the port closes, the client gets RpcError", () => {
    const server = RpcServer.start({ port: 0, nThreads: 1 });
    assert.throws(() => RpcServer.start({ port: server.port }), RpcError, "the port is taken");
    assert.throws(() => server.backend.free(), /computing|busy/i, "the served backend is busy");
    const remote = rpcBackend(server.endpoint);
    const w = new Context({ memSize: 1 << 16, noAlloc: true });
    const a = w.newTensor1d(Type.F32, 4);
    const buf = allocCtxTensors(w, remote)!; // holds the connection open
    tensorSet(a, new Float32Array([1, 2, 3, 4]));
    const t0 = performance.now();
    server.stop();
    assert.ok(performance.now() - t0 < 5000, "stop returned");
    assert.equal(server.running, false);
    server.stop(); // a second stop does nothing
    assert.ok(server.backend.freed, "the backend the server made is freed");
    assert.throws(() => rpcGuard(() => tensorGet(a)), RpcError, "a read from the stopped server");
    assert.throws(() => rpcBackend(server.endpoint), RpcError, "the port is closed");
    buf.free();
    remote.free();
  });

  test("garbage, a protocol-version mismatch, no answer, a refused connection: RpcError at connect", async () => {
    const garbage = await liar("garbage");
    assert.throws(() => rpcBackend(garbage.endpoint), (e: unknown) => e instanceof RpcError && e.endpoint === garbage.endpoint);
    const version = await liar("version");
    assert.throws(() => rpcBackend(version.endpoint), RpcError);
    assert.throws(() => rpcDeviceMemory(version.endpoint), RpcError);
    const silent = await liar("silent");
    setRpcTimeout(500);
    try {
      const t0 = performance.now();
      assert.throws(() => rpcBackend(silent.endpoint), RpcError);
      const ms = performance.now() - t0;
      assert.ok(ms >= 400 && ms < 5000, `the timeout took ${ms} ms`);
    } finally {
      setRpcTimeout(0);
    }
    // A port nothing listens on (the liar's, once it is gone).
    garbage.child.kill("SIGKILL");
    await garbage.exited;
    assert.throws(() => rpcBackend(garbage.endpoint), RpcError);
    for (const c of [version, silent]) c.child.kill("SIGKILL");
    assert.throws(() => rpcBackend("127.0.0.1"), ArgumentError);
    assert.throws(() => rpcBackend("127.0.0.1:70000"), ArgumentError);
    assert.throws(() => RpcServer.start({ host: "0.0.0.0", port: 0 }), ArgumentError);
    assert.deepEqual(smallCompute(cpuForSched()), SMALL);
  });
});

// ---- the fuzz -----------------------------------------------------------------------------------

const CMD = { ALLOC_BUFFER: 0, GET_ALIGNMENT: 1, GET_MAX_SIZE: 2, BUFFER_GET_BASE: 3, FREE_BUFFER: 4, BUFFER_CLEAR: 5, SET_TENSOR: 6, SET_TENSOR_HASH: 7, GET_TENSOR: 8, COPY_TENSOR: 9, GRAPH_COMPUTE: 10, GET_DEVICE_MEMORY: 11, INIT_TENSOR: 12, GET_ALLOC_SIZE: 13, HELLO: 14 };
const RPC_TENSOR_SIZE = 296;

function frame(cmd: number, payload: Uint8Array, claimed: bigint = BigInt(payload.length)): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  out[0] = cmd;
  new DataView(out.buffer).setBigUint64(1, claimed, true);
  out.set(payload, 9);
  return out;
}

/** A raw client: writes bytes, reads exactly n bytes (or null when the server closes). */
class Raw {
  #buf = new Uint8Array(0);
  #wait: (() => void) | undefined;
  closed = false;
  private constructor(readonly sock: net.Socket) {
    sock.on("data", (d: Uint8Array) => {
      const b = new Uint8Array(this.#buf.length + d.length);
      b.set(this.#buf);
      b.set(d, this.#buf.length);
      this.#buf = b;
      this.#wait?.();
    });
    const end = () => {
      this.closed = true;
      this.#wait?.();
    };
    sock.on("close", end);
    sock.on("error", end);
  }
  static connect(port: number): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, "127.0.0.1", () => resolve(new Raw(s)));
      s.once("error", reject);
    });
  }
  /** The last messages written (for the failure message). */
  static log: string[] = [];
  write(b: Uint8Array): void {
    Raw.log.push(`${b.length} bytes: ${[...b.slice(0, 24)].map((x) => x.toString(16).padStart(2, "0")).join("")}`);
    if (Raw.log.length > 6) Raw.log.shift();
    if (!this.closed) this.sock.write(b);
  }
  async read(n: number, ms = 10_000): Promise<Uint8Array | null> {
    const deadline = Date.now() + ms;
    while (this.#buf.length < n) {
      if (this.closed) return null;
      if (Date.now() > deadline) throw new Error(`the server sent nothing for ${ms} ms`);
      await new Promise<void>((r) => {
        this.#wait = r;
        setTimeout(r, 200);
      });
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }
  /** Sends the command and reads a response of `size` bytes; null when the server hung up. */
  async call(cmd: number, payload: Uint8Array, size: number): Promise<Uint8Array | null> {
    this.write(frame(cmd, payload));
    const head = await this.read(8);
    if (head === null) return null;
    assert.equal(new DataView(head.buffer).getBigUint64(0, true), BigInt(size), `response size of command ${cmd}`);
    return await this.read(size);
  }
  /**
   * Ends the connection and waits until the server has closed its side (it serves one client at a
   * time, and its accept queue is short: the next connection must not pile up behind this one).
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.sock.end();
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 10_000);
        this.sock.once("close", () => (clearTimeout(timer), r()));
      });
    }
    this.sock.destroy();
  }
}

function u64(...v: bigint[]): Uint8Array {
  const out = new Uint8Array(8 * v.length);
  v.forEach((x, i) => new DataView(out.buffer).setBigUint64(8 * i, x, true));
  return out;
}

/** An rpc_tensor: f32 of `ne` in `buffer` at `data`, each field open to mutation. */
function rpcTensor(o: { id?: bigint; type?: number; buffer: bigint; ne: number[]; data: bigint }): Uint8Array {
  const b = new Uint8Array(RPC_TENSOR_SIZE), v = new DataView(b.buffer);
  v.setBigUint64(0, o.id ?? 1n, true);
  v.setUint32(8, o.type ?? 0, true);
  v.setBigUint64(12, o.buffer, true);
  const ne = [...o.ne, 1, 1, 1, 1].slice(0, 4);
  let stride = 4;
  ne.forEach((n, i) => {
    v.setUint32(20 + 4 * i, n, true);
    v.setUint32(36 + 4 * i, stride, true);
    stride *= n;
  });
  // op (52) = NONE, op_params, flags, src, view_src, view_offs stay 0
  v.setBigUint64(52 + 4 + 64 + 4 + 80 + 8 + 8, o.data, true);
  return b;
}

describe("RPC server fuzz", () => {
  test("≥ 10,000 malformed, truncated, oversized and mutated messages: the server stays up, then computes correctly", async () => {
    const total = Number(process.env.WSP_GGML_RPC_FUZZ_MESSAGES ?? 10_000);
    const server = await cliServer();
    const port = Number(server.endpoint.split(":")[1]);
    const r = createRng(Number(process.env.WSP_GGML_RPC_FUZZ_SEED ?? 26));
    const int = (n: number) => Math.floor(r() * n);
    const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
    const hello = async (c: Raw) => {
      const v = await c.call(CMD.HELLO, new Uint8Array(0), 3);
      assert.ok(v !== null, `HELLO answered (connection ${connections}, after ${sent} messages, ${[...kinds].map(([k, n]) => `${k} ${n}`).join(", ")})\nlast messages:\n${Raw.log.join("\n")}\nserver stderr: ${server.stderr().slice(-3000)}`);
      assert.deepEqual([...v], [2, 0, 0]);
    };
    let sent = 0, connections = 0;
    const kinds = new Map<string, number>();
    const count = (k: string) => kinds.set(k, (kinds.get(k) ?? 0) + 1);
    const t0 = performance.now();
    while (sent < total) {
      const c = await Raw.connect(port).catch(async (e) => {
        const end = await Promise.race([server.exited, new Promise((r) => setTimeout(() => r("running"), 2000))]);
        throw new Error(`connection ${connections + 1} after ${sent} messages: ${e}; the server: ${JSON.stringify(end)}\nlast messages:\n${Raw.log.join("\n")}\n${server.stderr().slice(-3000)}`);
      });
      connections++;
      const kind = int(8);
      if (kind === 0) {
        // random bytes from the first byte on
        c.write(bytes(1 + int(64)));
        sent++;
        count("random bytes");
      } else if (kind === 1) {
        // a first command that is not HELLO
        c.write(frame(int(14), bytes(int(32))));
        sent++;
        count("no HELLO");
      } else {
        await hello(c);
        sent++;
        if (kind === 2) {
          // a session of valid commands with random arguments, until the server hangs up
          for (let i = 0; i < 40 && !c.closed; i++, sent++) {
            const pick = int(6);
            if (pick === 0) await c.call(CMD.GET_ALIGNMENT, new Uint8Array(0), 8);
            else if (pick === 1) await c.call(CMD.GET_MAX_SIZE, new Uint8Array(0), 8);
            else if (pick === 2) await c.call(CMD.GET_DEVICE_MEMORY, new Uint8Array(0), 16);
            else if (pick === 3) await c.call(CMD.ALLOC_BUFFER, u64(BigInt(int(1 << 16))), 16);
            else if (pick === 4) c.write(frame(CMD.BUFFER_CLEAR, new Uint8Array([...u64(BigInt(int(2 ** 31)) * 4096n), 0])));
            else c.write(frame(CMD.FREE_BUFFER, u64(BigInt(int(2 ** 31)) * 4096n)));
          }
          count("valid commands, random arguments");
        } else if (kind === 3) {
          // a known command with the wrong size, or an unknown command
          c.write(int(2) ? frame(int(14), bytes(int(600))) : frame(15 + int(241), bytes(int(16))));
          sent++;
          count("wrong size / unknown command");
        } else if (kind === 4) {
          // truncated: the header promises more than comes
          const cmd = [CMD.SET_TENSOR, CMD.GRAPH_COMPUTE, CMD.ALLOC_BUFFER, CMD.GET_TENSOR][int(4)];
          c.write(frame(cmd, bytes(int(40)), BigInt(64 + int(4096))).slice(0, 1 + int(40)));
          sent++;
          count("truncated");
        } else if (kind === 5) {
          // huge sizes for the variable-size commands
          const huge = [2n ** 63n, 2n ** 62n + 7n, 2n ** 48n, 2n ** 40n, 0xffffffffffffffffn][int(5)];
          c.write(frame([CMD.SET_TENSOR, CMD.GRAPH_COMPUTE][int(2)], bytes(16), huge));
          sent++;
          count("huge size");
        } else {
          // tensors: a real buffer, then tensors inside, across and outside it (mutated fields)
          const alloc = await c.call(CMD.ALLOC_BUFFER, u64(4096n), 16);
          sent++;
          if (alloc !== null) {
            const remote = new DataView(alloc.buffer).getBigUint64(0, true);
            const based = await c.call(CMD.BUFFER_GET_BASE, u64(remote), 8);
            sent++;
            const base = based ? new DataView(based.buffer).getBigUint64(0, true) : 0n;
            for (let i = 0; i < 20 && !c.closed; i++, sent++) {
              const ne = [1 + int(int(2) ? 64 : 4096), 1 + int(4)];
              const offset = [0n, BigInt(int(4096)), BigInt(4096 + int(64)), -BigInt(int(4096)), 2n ** 63n][int(5)];
              const t = rpcTensor({ type: int(8) === 0 ? int(64) : 0, buffer: int(6) === 0 ? BigInt(int(2 ** 31)) : remote, ne, data: (base + offset) & 0xffffffffffffffffn });
              const which = int(4);
              if (which === 0) {
                c.write(frame(CMD.SET_TENSOR, new Uint8Array([...t, ...u64(BigInt(int(64))), ...bytes(int(256))])));
              } else if (which === 1) {
                c.write(frame(CMD.GET_TENSOR, new Uint8Array([...t, ...u64(BigInt(int(64)), BigInt(int(256)))])));
                const head = await c.read(8, 10_000);
                if (head !== null) await c.read(Number(new DataView(head.buffer).getBigUint64(0, true)));
              } else if (which === 2) {
                c.write(frame(CMD.COPY_TENSOR, new Uint8Array([...t, ...rpcTensor({ buffer: remote, ne: [1 + int(64)], data: base + BigInt(int(8192)) })])));
                await c.read(9);
              } else {
                c.write(frame(CMD.GET_ALLOC_SIZE, t));
                await c.read(16);
              }
            }
          }
          count("tensors in / across / outside a buffer");
        }
      }
      await c.close();
      assert.equal(server.child.exitCode, null, `the server died after ${sent} messages (${connections} connections)`);
    }
    const ms = performance.now() - t0;
    console.log(`rpc fuzz: ${sent} messages over ${connections} connections in ${(ms / 1000).toFixed(1)} s: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(", ")}`);
    // Still up, and correct.
    assert.equal(server.child.exitCode, null);
    const remote = rpcBackend(server.endpoint);
    assert.deepEqual(smallCompute(remote), SMALL);
    remote.free();
    server.child.kill("SIGKILL");
  });
});

// ---- the CLI ------------------------------------------------------------------------------------

describe("wsp-ggml rpc-server", () => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`starts on 127.0.0.1, serves a compute, and stops on ${signal} with exit 0`, { skip: process.platform === "win32" ? "no POSIX signals" : false }, async () => {
      const server = await cliServer();
      assert.match(server.endpoint, /^127\.0\.0\.1:\d+$/);
      const remote = rpcBackend(server.endpoint);
      assert.deepEqual(smallCompute(remote), SMALL);
      remote.free();
      server.child.kill(signal);
      const end = await Promise.race([server.exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
      assert.ok(end !== null, `no exit 30 s after ${signal}`);
      assert.match(server.stdout(), new RegExp(`${signal}: stopped after \\d+ client`), "the server stopped itself on the signal");
      // Deno's node:child_process reports the signal given to kill() as the way a child ended even
      // when the child handled it and exited 0 (a Deno child of a Node parent reports 0).
      if (g.Deno !== undefined && end.code === null) assert.equal(end.signal, signal);
      else assert.equal(end.code, 0, `exit ${end.code} (${end.signal})`);
    });
  }

  test("an address outside 127.0.0.0/8 needs --allow-remote (usage error, exit 2)", async () => {
    const child = spawn(process.execPath, runtimeArgs(join(root, "src/cli/bin.ts"), ["rpc-server", "--host", "0.0.0.0", "--port", "0"]), { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Uint8Array) => void (err += new TextDecoder().decode(d)));
    const code = await new Promise<number | null>((r) => child.on("exit", (c) => r(c)));
    assert.equal(code, 2);
    assert.match(err, /--allow-remote/);
  });
});
