/**
 * What this process runs on: wsp-ggml's version and provenance, the library
 * and CPU variant loaded, the CPU features that variant was compiled with,
 * and every backend, device and buffer type registered with ggml.
 *
 *   deno run -A examples/devices.ts [--json]
 *   bun examples/devices.ts [--json]
 *   node --import tsx examples/devices.ts [--json]
 *
 * @module
 */
import process from "node:process";
import { Backend, BackendDevType, backendRegs, systemInfo } from "../mod.ts";

const DEV_TYPES = new Map(Object.entries(BackendDevType).map(([k, v]) => [v as number, k]));
const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;

/** Every registered backend and its devices, as plain data. */
export function listDevices() {
  return backendRegs().map((reg) => ({
    backend: reg.name,
    devices: reg.devices().map((d) => {
      const p = d.props();
      const buft = d.bufferType;
      return {
        name: p.name,
        description: p.description,
        type: DEV_TYPES.get(p.type) ?? String(p.type),
        memory: p.memory,
        caps: p.caps,
        bufferType: { name: buft.name, alignment: buft.alignment, isHost: buft.isHost, maxSize: buft.maxSize },
      };
    }),
  }));
}

function main(argv: string[]): number {
  const info = systemInfo();
  const regs = listDevices();
  using cpu = Backend.cpu({ nThreads: 1 });
  const best = { name: cpu.name, alignment: cpu.alignment };
  if (argv.includes("--json")) {
    console.log(JSON.stringify({ system: info, backends: regs, cpuBackend: best }, null, 1));
    return 0;
  }
  console.log(`wsp-ggml ${info.version}: whisper.rn ${info.whisperRn}, ggml ${info.ggmlCommit} (${info.ggmlVersion})`);
  console.log(`runtime:  ${info.runtime.name} ${info.runtime.version} on ${info.platform.os}-${info.platform.arch}${info.platform.libc ? ` (${info.platform.libc})` : ""}`);
  console.log(`library:  ${info.library.base} (from: ${info.library.source}); platform package ${info.platformPackage}`);
  console.log(`CPU code: variant ${info.cpuVariant.name} (${info.cpuVariant.path})`);
  console.log(`features: ${info.cpuFeatures.join(" ") || "(none beyond the baseline)"}`);
  for (const reg of regs) {
    console.log(`backend ${reg.backend}: ${reg.devices.length} device(s)`);
    for (const d of reg.devices) {
      const caps = Object.entries(d.caps).filter(([, v]) => v).map(([k]) => k);
      console.log(`  ${d.name} [${d.type}] ${d.description}`);
      console.log(`    memory ${mib(d.memory.free)} free of ${mib(d.memory.total)}; caps: ${caps.join(", ") || "none"}`);
      console.log(`    buffer type ${d.bufferType.name} (alignment ${d.bufferType.alignment}, ${d.bufferType.isHost ? "host memory" : "device memory"})`);
    }
  }
  console.log(`CPU backend: ${best.name}, tensor alignment ${best.alignment}`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
