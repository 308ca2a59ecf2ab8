// Interop of ggml's RPC protocol between this project and upstream's programs, loopback only:
//   - llama.cpp's own rpc-server (tools/rpc/rpc-server.cpp of the second pin, built by
//     `zig build rpc-upstream` into zig-out/bin/wsp-rpc-server-upstream) serves the TypeScript
//     client: a matmul + add graph (f32 and q8_0 weights) on rpcBackend, and a two-layer split
//     across it and the local CPU through Sched, give the local CPU's bytes;
//   - our servers (RpcServer in this process, `wsp-ggml rpc-server` in a child) serve a C client
//     built from the same sources (native/rpc/client.c, `zig build rpc-client`), which computes
//     the same graph on its own CPU backend and prints OK when the bytes agree.
// The two programs are built here when missing or older than their sources (about 2 s with the
// host libraries already built); without the pinned zig or the laid-out tool source the tests are
// skipped with the reason. Every server binds 127.0.0.1, every child is killed in `finally` and
// in the after hook, every wait is bounded.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import process from "node:process";
import {
  allocCtxTensors, Backend, Context, quantize, rpcBackend, rpcCompute, rpcDeviceMemory, RpcServer, Sched, setRpcTimeout, type Tensor, tensorGet, tensorSet, Type,
} from "../src/mod.ts";
import { root, zigBuilt } from "./run.ts";
import { createRng } from "../src/llm/sampler.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const exe = process.platform === "win32" ? ".exe" : "";
const UPSTREAM = join(root, "zig-out", "bin", `wsp-rpc-server-upstream${exe}`);
const CLIENT = join(root, "zig-out", "bin", `wsp-rpc-client${exe}`);
const LIBDIR = join(root, "zig-out", "lib");

/** Builds the two programs when missing or stale; returns why they are unusable, or false. */
function buildPeers(): string | false {
  const tool = join(root, "vendor", "llama-tools", "rpc", "rpc-server.cpp");
  if (!existsSync(tool)) return "vendor/llama-tools/rpc/rpc-server.cpp is not laid out (node scripts/vendor.mjs)";
  return zigBuilt(["rpc-upstream", "rpc-client"], [UPSTREAM, CLIENT], ["vendor/llama-tools/rpc/rpc-server.cpp", "native/rpc/upstream_server.cpp", "native/rpc/client.c", "zig-out/lib/libwsp-ggml.so"]) || false;
}
const skip = process.platform === "win32" ? "loopback peers are exercised on POSIX hosts" : buildPeers();
if (skip) console.warn(`skipping the RPC interop tests: ${skip}`);

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill("SIGKILL");
  setRpcTimeout(0);
});

interface Proc {
  readonly child: ChildProcess;
  out(): string;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
}

function start(cmd: string, args: readonly string[]): Proc {
  const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let out = "";
  child.stdout!.on("data", (d: Uint8Array) => void (out += new TextDecoder().decode(d)));
  child.stderr!.on("data", (d: Uint8Array) => void (out += new TextDecoder().decode(d)));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    })
  );
  return { child, out: () => out, exited };
}

/** Waits for `p` to exit, at most `ms` (then SIGKILL and an error). */
async function exitOf(p: Proc, ms: number, what: string) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
  const end = await Promise.race([p.exited, late]);
  clearTimeout(timer);
  if (end === null) {
    p.child.kill("SIGKILL");
    throw new Error(`${what}: no exit in ${ms} ms\n${p.out()}`);
  }
  return end;
}

/** A port that was free a moment ago (upstream's server takes no port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect({ host: "127.0.0.1", port });
    c.setTimeout(1000);
    c.on("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.on("error", () => resolve(false));
    c.on("timeout", () => {
      c.destroy();
      resolve(false);
    });
  });
}

/**
 * llama.cpp's rpc-server on a free port, once it accepts connections (its stdout is a pipe, so
 * block-buffered: readiness is a TCP connect, which it serves as a client that says nothing).
 */
async function upstreamServer(): Promise<Proc & { endpoint: string }> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const p = start(UPSTREAM, ["--host", "127.0.0.1", "--port", String(port), "--threads", "1", "--device", "CPU"]);
    const deadline = performance.now() + 30_000;
    let exited = false;
    void p.exited.then(() => (exited = true));
    while (!exited && performance.now() < deadline) {
      if (await connects(port)) return { ...p, endpoint: `127.0.0.1:${port}` };
      await new Promise((r) => setTimeout(r, 100));
    }
    p.child.kill("SIGKILL");
    // Another process took the port between freePort and the bind: try another once more.
    if (attempt >= 2) throw new Error(`upstream rpc-server did not come up on ${port}\n${p.out()}`);
  }
}

/** `wsp-ggml rpc-server --port 0` on this runtime; resolves with its endpoint. */
async function cliServer(): Promise<Proc & { endpoint: string }> {
  const args = [...(g.Bun !== undefined ? [] : g.Deno !== undefined ? ["run", "-A"] : ["--import", "tsx"]), join(root, "src/cli/bin.ts"), "rpc-server", "--port", "0", "--threads", "1"];
  const p = start(process.execPath, args);
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const m = /serving .* on (\d+\.\d+\.\d+\.\d+:\d+)/.exec(p.out());
    if (m) return { ...p, endpoint: m[1] };
    if (p.child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  p.child.kill("SIGKILL");
  throw new Error(`wsp-ggml rpc-server did not start\n${p.out()}`);
}

/** The C client against `endpoint`: its exit and output. */
/** Runs the C client against `endpoint`: it exits 0 and reports its values identical to its own CPU's. */
async function expectClientOk(endpoint: string): Promise<void> {
  const r = await cClient(endpoint);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^OK \d+ values identical/m);
}

async function cClient(endpoint: string) {
  const p = start(CLIENT, [endpoint, LIBDIR]);
  try {
    const end = await exitOf(p, 60_000, "wsp-rpc-client");
    return { ...end, out: p.out() };
  } finally {
    p.child.kill("SIGKILL");
  }
}

const rand = createRng(26);
const values = (n: number) => Float32Array.from({ length: n }, () => rand() * 2 - 1);
const K = 128, N = 64, BATCH = 5;
const W1 = values(K * N), B1 = values(N), W2 = values(N * N), B2 = values(N), X = values(K * BATCH);

/** One layer's weights (f32 or q8_0) in their own context, allocated on `backend`. */
function layer(backend: Backend, w: Float32Array, b: Float32Array, nIn: number, nOut: number, type: Type) {
  const ctx = new Context({ memSize: 1 << 16, noAlloc: true });
  const wt = ctx.newTensor2d(type, nIn, nOut), bt = ctx.newTensor1d(Type.F32, nOut);
  const buf = allocCtxTensors(ctx, backend)!;
  tensorSet(wt, type === Type.F32 ? w : quantize(type, w, { nPerRow: nIn }));
  tensorSet(bt, b);
  return { w: wt, b: bt, buf };
}

/**
 * `W2·relu(W1·x + b1) + b2`, layer i's weights and nodes on backends[i] (one Sched over both when
 * they differ); returns the output's bytes.
 */
function twoLayers(backends: readonly [Backend, Backend], type: Type, local: Backend): Uint8Array {
  const l1 = layer(backends[0], W1, B1, K, N, type), l2 = layer(backends[1], W2, B2, N, N, type);
  try {
    const gctx = new Context({ memSize: 1 << 20, noAlloc: true });
    const x = gctx.newTensor2d(Type.F32, K, BATCH).setInput();
    const m1 = gctx.mulMat(l1.w, x), a1 = gctx.add(m1, l1.b), r1 = gctx.relu(a1);
    const m2 = gctx.mulMat(l2.w, r1), y = gctx.add(m2, l2.b).setOutput();
    const n1: Tensor[] = [m1, a1, r1], n2: Tensor[] = [m2, y];
    const gf = gctx.newGraph().buildForwardExpand(y);
    // ggml's scheduler wants the CPU last.
    const list = [...new Set([...backends.filter((b) => b !== local), local])];
    using s = new Sched({ backends: list });
    n1.forEach((n) => s.setTensorBackend(n, backends[0]));
    n2.forEach((n) => s.setTensorBackend(n, backends[1]));
    s.allocGraph(gf);
    tensorSet(x, X);
    rpcCompute(s, gf);
    const out = tensorGet(y) as Float32Array;
    return new Uint8Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength));
  } finally {
    l1.buf.free();
    l2.buf.free();
  }
}

describe("RPC interop with llama.cpp's programs", { skip }, () => {
  test("llama.cpp's rpc-server serves rpcBackend: matmul + add (f32, q8_0) and a split through Sched give the local CPU's bytes", async () => {
    setRpcTimeout(30_000);
    const server = await upstreamServer();
    using cpu = Backend.cpu({ nThreads: 1 });
    let remote: Backend | undefined;
    try {
      remote = rpcBackend(server.endpoint);
      assert.equal(remote.name, `RPC[${server.endpoint}]`);
      const mem = rpcDeviceMemory(server.endpoint);
      assert.ok(mem.total > 0 && mem.free <= mem.total, JSON.stringify(mem));
      for (const type of [Type.F32, Type.Q8_0]) {
        const want = twoLayers([cpu, cpu], type, cpu);
        assert.deepEqual(twoLayers([remote, remote], type, cpu), want, `both layers remote (${type === Type.F32 ? "f32" : "q8_0"})`);
        assert.deepEqual(twoLayers([cpu, remote], type, cpu), want, `layer 1 local, layer 2 remote (${type === Type.F32 ? "f32" : "q8_0"})`);
      }
      assert.equal(server.child.exitCode, null, "the server is still up");
    } finally {
      remote?.free();
      server.child.kill("SIGKILL");
      await exitOf(server, 10_000, "upstream rpc-server");
      setRpcTimeout(0);
    }
  });

  test("the C client checks itself against llama.cpp's rpc-server (the client alone)", async () => {
    const server = await upstreamServer();
    try {
      await expectClientOk(server.endpoint);
    } finally {
      server.child.kill("SIGKILL");
      await exitOf(server, 10_000, "upstream rpc-server");
    }
  });

  test("RpcServer (in this process) serves the C client: OK", async () => {
    const server = RpcServer.start({ port: 0, nThreads: 1 });
    try {
      await expectClientOk(server.endpoint);
      assert.ok(server.clients >= 1, `clients: ${server.clients}`);
      assert.equal(server.dropped, 0);
    } finally {
      server.stop();
    }
  });

  test("`wsp-ggml rpc-server` serves the C client: OK", async () => {
    const server = await cliServer();
    try {
      await expectClientOk(server.endpoint);
    } finally {
      server.child.kill("SIGKILL");
      await exitOf(server, 10_000, "wsp-ggml rpc-server");
    }
  });
});
