/**
 * `wsp-ggml rpc-server`: serves this machine's backend (the CPU by default)
 * to ggml's RPC backend — llama.cpp's `--rpc` clients and {@linkcode rpcBackend}
 * — until SIGINT or SIGTERM.
 *
 * @module
 */
import process from "node:process";
import { Backend, RPC_DEFAULT_PORT, RPC_PROTOCOL_VERSION, RpcServer } from "../mod.ts";
import { type Command, EXIT_CODES_HELP, EXIT_OK, intAtLeast, numberOption, parse, UsageError } from "./common.ts";
import { defaultThreads, THREADS_ENV } from "../runtime/threads.ts";

const HELP = `usage: wsp-ggml rpc-server [--host ADDR] [--port N] [--backend NAME] [--threads N] [--allow-remote]

Serves a local backend over ggml's RPC protocol (${RPC_PROTOCOL_VERSION}, the one of llama.cpp's
rpc-server) until SIGINT (Ctrl-C) or SIGTERM. Clients are served one at a time; a client that
sends malformed data is disconnected. The first line on stdout says where it listens:
  wsp-ggml rpc-server: serving CPU on 127.0.0.1:${RPC_DEFAULT_PORT} (RPC protocol ${RPC_PROTOCOL_VERSION})

  --host ADDR      IPv4 address to bind (default 127.0.0.1: this machine only)
  --port N         port (default ${RPC_DEFAULT_PORT}; 0 picks a free one)
  --backend NAME   device to serve: cpu (default), or a device name as 'wsp-ggml info' lists it
  --threads N      CPU threads (default: the physical cores other processes leave free;
                   ${THREADS_ENV} fixes it)
  --allow-remote   required to bind an address outside 127.0.0.0/8
  -h, --help       this text

SECURITY: the protocol has no authentication and no encryption. Anyone who can reach the port
can read and write the served backend's memory and run graphs on it. Keep the default address,
or serve on a private network, or reach it through an SSH tunnel from the client machine:
  ssh -N -L ${RPC_DEFAULT_PORT}:127.0.0.1:${RPC_DEFAULT_PORT} user@server   (then connect to 127.0.0.1:${RPC_DEFAULT_PORT})

${EXIT_CODES_HELP}`;

const OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  backend: { type: "string" },
  threads: { type: "string" },
  "allow-remote": { type: "boolean" },
} as const;

/** `wsp-ggml rpc-server`. */
export const rpcServer: Command = {
  name: "rpc-server",
  summary: "serve this machine's backend to ggml's RPC backend (127.0.0.1 by default)",
  help: HELP,
  async run(argv) {
    const { values } = parse(argv, OPTIONS, { min: 0, max: 0, names: "" });
    if (values.help) {
      console.log(HELP);
      return EXIT_OK;
    }
    const port = numberOption("port", values.port, RPC_DEFAULT_PORT, (v) => Number.isInteger(v) && v >= 0 && v <= 65535, "an integer 0 … 65535");
    const threads = numberOption("threads", values.threads, defaultThreads(), intAtLeast(1), "an integer ≥ 1");
    const host = values.host ?? "127.0.0.1";
    if (!/^(\d{1,3}\.){3}\d{1,3}$/.test(host) && host !== "localhost") throw new UsageError(`--host must be an IPv4 address, got ${JSON.stringify(host)}`);
    const isLoopback = host === "localhost" || host.startsWith("127.");
    if (!isLoopback && !values["allow-remote"]) {
      throw new UsageError(`--host ${host} is reachable from other machines and the RPC protocol has no authentication; add --allow-remote to serve there anyway`);
    }
    const name = values.backend ?? "cpu";
    const backend = name.toLowerCase() === "cpu" ? Backend.cpu({ nThreads: threads }) : Backend.initByName(name);
    if (backend.isCpu) backend.setNThreads(threads);
    let server: RpcServer;
    try {
      server = RpcServer.start({ host, port, backend, allowRemote: values["allow-remote"] === true });
    } catch (e) {
      backend.free();
      throw e;
    }
    const signal = new Promise<string>((resolve) => {
      // The server runs on a native thread; this timer keeps the event loop (and so the process) alive.
      const keep = setInterval(() => {}, 1 << 30);
      // Deno's own listener (its node:process signal events do not stop the default action there).
      const deno = (globalThis as { Deno?: { addSignalListener(s: string, f: () => void): void; removeSignalListener(s: string, f: () => void): void } }).Deno;
      const on = (sig: string) => () => {
        clearInterval(keep);
        for (const [s, f] of [["SIGINT", onInt], ["SIGTERM", onTerm]] as const) {
          if (deno) deno.removeSignalListener(s, f);
          else process.off(s, f);
        }
        resolve(sig);
      };
      const onInt = on("SIGINT"), onTerm = on("SIGTERM");
      for (const [s, f] of [["SIGINT", onInt], ["SIGTERM", onTerm]] as const) {
        if (deno && process.platform !== "win32") deno.addSignalListener(s, f);
        else process.on(s, f);
      }
    });
    // The listeners are in place (Deno installs its handler on the next turn) before the line that says it serves.
    await new Promise((r) => setTimeout(r, 10));
    process.stdout.write(`wsp-ggml rpc-server: serving ${backend.name} on ${server.endpoint} (RPC protocol ${RPC_PROTOCOL_VERSION})\n`);
    const stopped = await signal;
    const clients = server.clients;
    server.stop();
    backend.free();
    process.stdout.write(`wsp-ggml rpc-server: ${stopped}: stopped after ${clients} client${clients === 1 ? "" : "s"}\n`);
    return EXIT_OK;
  },
};
