/**
 * `wsp-ggml info`: the library this process loaded (where from, which CPU
 * variant, its features), the versions, and the devices ggml sees with their
 * type and memory.
 *
 * @module
 */
import process from "node:process";
import { BackendDevType, devices, systemInfo } from "../mod.ts";
import { type Command, EXIT_CODES_HELP, EXIT_OK, parse } from "./common.ts";

const HELP = `usage: wsp-ggml info [--json]

Prints what this process loaded: wsp-ggml's version and the ggml it wraps, the runtime, the
library (base file, where it was found) and the CPU variant chosen for this CPU with its
features, and every device ggml's backends offer, with its type and memory.

  --json      one JSON document instead of the text
  -h, --help  this text

${EXIT_CODES_HELP}`;

const DEV_TYPES = new Map<number, string>(Object.entries(BackendDevType).map(([k, v]) => [v as number, k.toLowerCase()]));

/** What `info` reports (`--json` prints it). */
export interface InfoReport {
  /** wsp-ggml's version. */
  readonly version: string;
  /** The ggml inside: its commit, version string, and the whisper.rn release it comes from. */
  readonly ggml: { readonly commit: string; readonly version: string; readonly whisperRn: string };
  /** The JavaScript runtime and its version. */
  readonly runtime: { readonly name: string; readonly version: string };
  /** Operating system, architecture and (Linux) C library. */
  readonly platform: { readonly os: string; readonly arch: string; readonly libc?: string };
  /** The base library loaded, the folder of its CPU variants, which search place supplied it, and this platform's package. */
  readonly library: { readonly base: string; readonly dir: string; readonly source: string; readonly platformPackage: string };
  /** The CPU variant loaded (name and file). */
  readonly cpuVariant: { readonly name: string; readonly path: string };
  /** The CPU features the variant was compiled with. */
  readonly cpuFeatures: readonly string[];
  /** ggml's devices: name, description, type (`cpu`, `gpu`, `igpu`, `accel`) and memory in bytes. */
  readonly devices: readonly { name: string; description: string; type: string; memory: { free: number; total: number } }[];
}

/** What `info` reports. */
export function infoReport(): InfoReport {
  const s = systemInfo();
  return {
    version: s.version,
    ggml: { commit: s.ggmlCommit, version: s.ggmlVersion, whisperRn: s.whisperRn },
    runtime: s.runtime,
    platform: s.platform,
    library: { base: s.library.base, dir: s.library.dir, source: s.library.source, platformPackage: s.platformPackage },
    cpuVariant: s.cpuVariant,
    cpuFeatures: s.cpuFeatures,
    devices: devices().map((d) => {
      const m = d.memory();
      return { name: d.name, description: d.description, type: DEV_TYPES.get(d.type) ?? String(d.type), memory: { free: m.free, total: m.total } };
    }),
  };
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;

/** The `info` subcommand. */
export const info: Command = {
  name: "info",
  summary: "the library, CPU variant, version and devices",
  help: HELP,
  run(argv) {
    const { values } = parse(argv, { json: { type: "boolean" } }, { min: 0, max: 0, names: "" });
    if (values.help) {
      console.log(HELP);
      return Promise.resolve(EXIT_OK);
    }
    const r = infoReport();
    if (values.json) {
      console.log(JSON.stringify(r, null, 1));
      return Promise.resolve(EXIT_OK);
    }
    const lines = [
      `wsp-ggml ${r.version} (ggml ${r.ggml.version}, commit ${r.ggml.commit}, from whisper.rn ${r.ggml.whisperRn})`,
      `runtime:     ${r.runtime.name} ${r.runtime.version} on ${r.platform.os}-${r.platform.arch}${r.platform.libc ? ` (${r.platform.libc})` : ""}`,
      `library:     ${r.library.base} (${r.library.source}${r.library.source === "package" ? ` ${r.library.platformPackage}` : ""})`,
      `CPU variant: ${r.cpuVariant.name} (${r.cpuVariant.path})`,
      `features:    ${r.cpuFeatures.join(" ") || "(none)"}`,
      `devices:`,
      ...r.devices.map((d) => `  ${d.name} [${d.type}] ${d.description}, memory ${mib(d.memory.free)} free of ${mib(d.memory.total)}`),
    ];
    process.stdout.write(lines.join("\n") + "\n");
    return Promise.resolve(EXIT_OK);
  },
};
