/**
 * What this process runs on: wsp-ggml's version and provenance, the library
 * and CPU variant loaded, the CPU features that variant was compiled with,
 * every backend, device and buffer type registered with ggml, and the device
 * `"auto"` picks (a GPU when there is one, else the CPU; `WSP_GGML_DEVICE`
 * overrides it), which the demo and the LLM runner compute on.
 *
 *   deno run -A examples/devices.ts [--json]
 *   bun examples/devices.ts [--json]
 *   node --import tsx examples/devices.ts [--json]
 *
 * @module
 */
import process from "node:process";
import { Backend, backendRegs, bestDevice, DEVICE_ENV, systemInfo } from "../mod.ts";

const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;

/** Every registered backend and its devices, as plain data. */
export function listDevices() {
  return backendRegs().map((reg) => ({
    backend: reg.name,
    devices: reg.devices().map((d) => {
      const buft = d.bufferType;
      const info = d.info();
      // The type as BackendDevType's key (CPU, GPU, IGPU, ACCEL), as this example has always printed it.
      return { ...info, type: info.type.toUpperCase(), bufferType: { name: buft.name, alignment: buft.alignment, isHost: buft.isHost, maxSize: buft.maxSize } };
    }),
  }));
}

function main(argv: string[]): number {
  const info = systemInfo();
  const regs = listDevices();
  using cpu = Backend.cpu({ nThreads: 1 });
  const cpuBackend = { name: cpu.name, alignment: cpu.alignment };
  const dev = bestDevice();
  using b = Backend.best({ nThreads: 1 });
  const best = { device: dev.name, type: dev.typeName, backend: b.name, env: process.env[DEVICE_ENV] ?? null };
  if (argv.includes("--json")) {
    console.log(JSON.stringify({ system: info, backends: regs, cpuBackend, best }, null, 1));
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
  console.log(`CPU backend: ${cpuBackend.name}, tensor alignment ${cpuBackend.alignment}`);
  console.log(`best device ("auto"${best.env ? `, ${DEVICE_ENV}=${best.env}` : ""}): ${best.device} [${best.type}], backend ${best.backend}`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
