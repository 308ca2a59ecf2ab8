// A misbehaving RPC server for tests/rpc.test.ts, in a process of its own (the test's JS thread
// is blocked in the synchronous RPC call, so it cannot answer itself). Listens on 127.0.0.1, an
// ephemeral port, prints "listening PORT", and answers every connection as `mode` says:
//   garbage         random bytes instead of HELLO's answer
//   version         a well-formed HELLO answer of protocol 3.0.0
//   silent          accepts and never answers
//   lie HOST:PORT   a proxy to a real server that forwards everything until the client's first
//                   GRAPH_COMPUTE, and from then on answers random bytes
import net from "node:net";
import process from "node:process";

const [mode, upstream] = process.argv.slice(2);
const RPC_CMD_GRAPH_COMPUTE = 10;

function random(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (Math.random() * 256) | 0;
  return b;
}

/** Calls `onCommand(cmd)` for each command of the client's byte stream (| cmd u8 | size u64 | payload |). */
function commandParser(onCommand: (cmd: number) => void): (chunk: Uint8Array) => void {
  let header = new Uint8Array(0);
  let skip = 0n;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0n) {
        const n = Number(skip < BigInt(chunk.length - at) ? skip : BigInt(chunk.length - at));
        skip -= BigInt(n);
        at += n;
        continue;
      }
      const take = Math.min(9 - header.length, chunk.length - at);
      const h = new Uint8Array(header.length + take);
      h.set(header);
      h.set(chunk.subarray(at, at + take), header.length);
      header = h;
      at += take;
      if (header.length === 9) {
        onCommand(header[0]);
        skip = new DataView(header.buffer).getBigUint64(1, true);
        header = new Uint8Array(0);
      }
    }
  };
}

const server = net.createServer((client) => {
  client.on("error", () => {});
  if (mode === "garbage") {
    client.once("data", () => client.write(random(64)));
  } else if (mode === "version") {
    client.once("data", () => {
      const answer = new Uint8Array(11);
      new DataView(answer.buffer).setBigUint64(0, 3n, true);
      answer.set([3, 0, 0], 8);
      client.write(answer);
    });
  } else if (mode === "silent") {
    // never answers
  } else if (mode === "lie") {
    const [host, port] = upstream.split(":");
    const real = net.connect(Number(port), host);
    real.on("error", () => client.destroy());
    let lying = false;
    const parse = commandParser((cmd) => {
      if (cmd === RPC_CMD_GRAPH_COMPUTE) lying = true;
    });
    client.on("data", (chunk: Uint8Array) => {
      parse(chunk);
      real.write(chunk);
    });
    real.on("data", (chunk: Uint8Array) => client.write(lying ? random(Math.max(chunk.length, 16)) : chunk));
    client.on("close", () => real.destroy());
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as net.AddressInfo).port}\n`);
});
