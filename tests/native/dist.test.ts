/**
 * Checks the output of `zig build dist smoke-dist` (the test runner builds it first):
 * every artifact has the right format and machine, Linux builds keep their libc floor,
 * the Windows DLLs export the public API, and the C smoke test passes on every target
 * this machine can run — natively, under qemu-user with older and other CPUs, and wine.
 *
 * Runs under Node only: it inspects files and starts processes, nothing runtime-specific.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { functions } from "../../src/ffi/bindings.gen.ts";
import { whisperFunctions } from "../../src/ffi/whisper.gen.ts";
import { readBinary } from "./binfmt.ts";

const root = join(fileURLToPath(import.meta.url), "..", "..", "..");
const dist = join(root, "zig-out", "dist");
const smoke = join(root, "zig-out", "smoke");

const x86 = ["x64", "sse42", "sandybridge", "haswell", "alderlake", "skylakex", "icelake"];
const armLinux = ["armv8.0", "armv8.2", "armv8.6"];
const armApple = ["apple_m1", "apple_m2"];

/**
 * The Vulkan backend (issue 25): built into these targets when build.zig had shaders, as it has
 * after `npm run setup` on a machine with glslc and libvulkan-dev (.cache/vulkan-shaders/current).
 */
const vulkanBuilt = existsSync(join(root, ".cache", "vulkan-shaders", "current", "ggml-vulkan-shaders.S"));
const vulkanTargets: Record<string, string> = {
  "linux-x64": "libggml-vulkan.so",
  "linux-arm64": "libggml-vulkan.so",
  "linux-x64-musl": "libggml-vulkan.so",
  "linux-arm64-musl": "libggml-vulkan.so",
  "win32-x64": "ggml-vulkan.dll",
};
/** The DLLs a Windows build may import: the Vulkan loader, the base library, Windows itself and its C runtime. */
const windowsImportOk = (dll: string) => /^(vulkan-1|wsp-ggml|kernel32|advapi32|user32|ntdll|bcrypt|ws2_32|api-ms-win-[a-z0-9-]+)\.dll$/i.test(dll);

/** Expected contents of each target folder. */
const targets: Record<string, { machine: "x86_64" | "aarch64"; format: "elf" | "macho" | "pe"; variants: string[]; libc?: "glibc" | "musl" }> = {
  "linux-x64": { machine: "x86_64", format: "elf", variants: x86, libc: "glibc" },
  "linux-arm64": { machine: "aarch64", format: "elf", variants: armLinux, libc: "glibc" },
  "linux-x64-musl": { machine: "x86_64", format: "elf", variants: x86, libc: "musl" },
  "linux-arm64-musl": { machine: "aarch64", format: "elf", variants: armLinux, libc: "musl" },
  "darwin-x64": { machine: "x86_64", format: "macho", variants: ["sandybridge", "haswell", "skylakex", "icelake"] },
  "darwin-arm64": { machine: "aarch64", format: "macho", variants: armApple },
  "win32-x64": { machine: "x86_64", format: "pe", variants: x86 },
};

function libNames(name: string): { base: string; whisper: string; variant: (v: string) => string } {
  if (name.startsWith("win32")) return { base: "wsp-ggml.dll", whisper: "wsp-whisper.dll", variant: (v) => `ggml-cpu-${v}.dll` };
  if (name.startsWith("darwin")) return { base: "libwsp-ggml.dylib", whisper: "libwsp-whisper.dylib", variant: (v) => `libggml-cpu-${v}.so` };
  return { base: "libwsp-ggml.so", whisper: "libwsp-whisper.so", variant: (v) => `libggml-cpu-${v}.so` };
}

/** Every exported name the whisper table binds: the functions, their C shims and number-ABI wrappers, the probes. */
const whisperExports = [
  ...new Set([
    ...Object.entries(whisperFunctions as Record<string, { symbol?: string; num?: string }>).flatMap(([n, d]) => [d.symbol ?? n, ...(d.num ? [d.num] : [])]),
    "wsp_whisper_shim_layout",
  ]),
].sort();

function run(cmd: string, args: string[], env: Record<string, string> = {}): { code: number | null; out: string } {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 600_000, env: { ...process.env, ...env } });
  return { code: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}

const have = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;

/** Runs a smoke binary, checks it passed, returns the variant it reported. */
function smokeVariant(cmd: string, args: string[], env: Record<string, string> = {}): string {
  const r = run(cmd, args, env);
  assert.equal(r.code, 0, `smoke failed (exit ${r.code}):\n${r.out}`);
  assert.match(r.out, /^smoke: 6 passed, 0 failed$/m, r.out);
  const m = /^cpu variant: (\S+) /m.exec(r.out);
  assert.ok(m, `no variant reported:\n${r.out}`);
  return m[1];
}

describe("zig build dist", () => {
  for (const [name, t] of Object.entries(targets)) {
    test(`${name}: every library has the right format and machine`, () => {
      const dir = join(dist, name);
      const names = libNames(name);
      const want = [names.base, names.whisper, ...t.variants.map(names.variant), ...(vulkanBuilt && vulkanTargets[name] ? [vulkanTargets[name]] : [])].sort();
      assert.deepEqual(readdirSync(dir).sort(), want, `contents of dist/${name}`);
      for (const file of want) {
        const info = readBinary(join(dir, file));
        assert.equal(info.format, t.format, file);
        assert.equal(info.machine, t.machine, file);
        assert.ok(info.sharedLibrary, `${file} is not a shared library`);
      }
    });
  }

  for (const name of ["linux-x64", "linux-arm64"]) {
    test(`${name}: needs nothing newer than glibc 2.17`, () => {
      for (const file of readdirSync(join(dist, name))) {
        const r = run("readelf", ["-V", "-W", join(dist, name, file)]);
        assert.equal(r.code, 0, r.out);
        const versions = [...r.out.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
        assert.ok(versions.length > 0, `${file}: no GLIBC version needs found`);
        for (const [major, minor] of versions) assert.ok(major < 2 || (major === 2 && minor <= 17), `${file} needs GLIBC_${major}.${minor}`);
      }
    });
  }

  for (const name of ["linux-x64-musl", "linux-arm64-musl"]) {
    test(`${name}: linked against musl, not glibc`, () => {
      for (const file of readdirSync(join(dist, name))) {
        const r = run("readelf", ["-d", "-W", join(dist, name, file)]);
        const needed = [...r.out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
        assert.ok(needed.includes("libc.so"), `${file}: NEEDED ${needed}`);
        assert.ok(!needed.some((n) => n.startsWith("libc.so.6")), `${file} needs glibc`);
      }
    });
  }

  for (const name of ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl"]) {
    test(`${name}: libwsp-whisper.so exports whisper.h, the job API and the shims, and needs libwsp-ggml.so`, () => {
      const file = join(dist, name, "libwsp-whisper.so");
      const dyn = run("readelf", ["--dyn-syms", "-W", file]);
      assert.equal(dyn.code, 0, dyn.out);
      const defined = new Set([...dyn.out.matchAll(/^\s*\d+:\s+\S+\s+\d+\s+FUNC\s+GLOBAL\s+DEFAULT\s+\d+\s+(\S+)$/gm)].map((m) => m[1]));
      assert.ok(whisperExports.length > 200);
      assert.deepEqual(whisperExports.filter((s) => !defined.has(s)), [], `missing from dist/${name}/libwsp-whisper.so`);
      // One ggml: whisper's calls go to the base library's registry, not to a copy of its own.
      assert.ok(!defined.has("wsp_ggml_init"), "libwsp-whisper.so carries a copy of ggml");
      const d = run("readelf", ["-d", "-W", file]);
      const needed = [...d.out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
      assert.ok(needed.includes("libwsp-ggml.so"), `NEEDED ${needed}`);
    });
  }

  test("win32-x64: wsp-whisper.dll exports whisper.h, the job API and the shims, and imports wsp-ggml.dll", () => {
    const dll = readBinary(join(dist, "win32-x64", "wsp-whisper.dll"));
    const exported = new Set(dll.exports);
    assert.deepEqual(whisperExports.filter((s) => !exported.has(s)), [], "missing from wsp-whisper.dll");
    assert.ok(!exported.has("wsp_ggml_init") && !exported.has("atexit"), "wsp-whisper.dll exports ggml or the CRT");
    const imports = [...dll.imports!.keys()];
    assert.ok(imports.some((i) => i.toLowerCase() === "wsp-ggml.dll"), `imports: ${imports}`);
    assert.deepEqual(imports.filter((i) => !windowsImportOk(i)), [], "unexpected imports of wsp-whisper.dll");
  });

  test("win32-x64: the DLLs export every defined function of the generated table", () => {
    const table = functions as Record<string, { library: string; symbol?: string; defined?: boolean }>;
    const want = (lib: string) => Object.entries(table).filter(([, d]) => d.library === lib && d.defined !== false).map(([n, d]) => d.symbol ?? n);
    const base = new Set(readBinary(join(dist, "win32-x64", "wsp-ggml.dll")).exports);
    assert.ok(want("base").length > 400);
    assert.deepEqual(want("base").filter((s) => !base.has(s)), [], "missing from wsp-ggml.dll");
    for (const v of x86) {
      const cpu = new Set(readBinary(join(dist, "win32-x64", `ggml-cpu-${v}.dll`)).exports);
      const missing = [...want("cpu"), "wsp_ggml_backend_score", "wsp_ggml_backend_init", "wsp_ggml_cpu_variant_name"].filter((s) => !cpu.has(s));
      assert.deepEqual(missing, [], `missing from ggml-cpu-${v}.dll`);
    }
  });
});

describe("the Vulkan backend libraries", { skip: vulkanBuilt ? false : "built without Vulkan (no .cache/vulkan-shaders/current: glslc or libvulkan-dev missing)" }, () => {
  for (const name of ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl"]) {
    test(`${name}: libggml-vulkan.so needs libvulkan.so.1 and the base library; nothing else does`, () => {
      const needed = (file: string) => {
        const r = run("readelf", ["-d", "-W", join(dist, name, file)]);
        assert.equal(r.code, 0, r.out);
        return [...r.out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
      };
      const vk = needed("libggml-vulkan.so");
      assert.ok(vk.includes("libvulkan.so.1") && vk.includes("libwsp-ggml.so"), `libggml-vulkan.so: NEEDED ${vk}`);
      // The Vulkan loader only as a dependency of the Vulkan library: a machine without it still loads the CPU.
      for (const file of readdirSync(join(dist, name)).filter((f) => f !== "libggml-vulkan.so")) {
        assert.ok(!needed(file).some((n) => n.startsWith("libvulkan")), `${file} needs the Vulkan loader`);
      }
      // The SPIR-V is in the library (26 MB of it), its symbols are not exported.
      const size = readFileSync(join(dist, name, "libggml-vulkan.so")).length;
      assert.ok(size > 20e6, `libggml-vulkan.so is ${size} bytes: no shaders?`);
      const syms = run("readelf", ["--dyn-syms", "-W", join(dist, name, "libggml-vulkan.so")]);
      assert.match(syms.out, /\bwsp_ggml_backend_init\b/);
      assert.doesNotMatch(syms.out, /\b(matmul_f32_f32|add)_data\b/, "shader symbols are exported");
    });
  }

  test("win32-x64: ggml-vulkan.dll imports only vulkan-1.dll, the base DLL and system DLLs; the others do not import vulkan-1.dll", () => {
    const dir = join(dist, "win32-x64");
    const vk = readBinary(join(dir, "ggml-vulkan.dll"));
    const dlls = [...vk.imports!.keys()];
    assert.ok(dlls.some((d) => d.toLowerCase() === "vulkan-1.dll"), `imports: ${dlls}`);
    assert.deepEqual(dlls.filter((d) => !windowsImportOk(d)), [], "unexpected imports of ggml-vulkan.dll");
    const fromLoader = vk.imports!.get([...vk.imports!.keys()].find((d) => d.toLowerCase() === "vulkan-1.dll")!)!;
    assert.deepEqual([...fromLoader].sort(), ["vkCmdCopyBuffer", "vkGetInstanceProcAddr", "vkGetPhysicalDeviceFeatures2"]);
    assert.ok(vk.exports!.includes("wsp_ggml_backend_init"), "ggml-vulkan.dll does not export wsp_ggml_backend_init");
    assert.deepEqual(vk.exports!.filter((e) => /^(matmul_f32_f32|add_f32_f32_f32|add|arr_dmmv_q4_0_f32_f32)_data$/.test(e)), [], "shader symbols are exported");
    for (const file of readdirSync(dir).filter((f) => f !== "ggml-vulkan.dll")) {
      const imports = [...readBinary(join(dir, file)).imports!.keys()];
      assert.ok(!imports.some((d) => d.toLowerCase() === "vulkan-1.dll"), `${file} imports vulkan-1.dll`);
      assert.deepEqual(imports.filter((d) => !windowsImportOk(d)), [], `unexpected imports of ${file}`);
    }
  });
});

describe("smoke test on every target this machine can run", () => {
  const hostFlags = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const bestHostVariant = (): string => {
    const has = (f: string) => new RegExp(`\\b${f}\\b`).test(hostFlags);
    if (has("avx512f") && has("avx512vbmi") && has("avx512_vnni")) return "icelake";
    if (has("avx512f") && has("avx512bw")) return "skylakex";
    if (has("avx_vnni") && has("avx2")) return "alderlake";
    if (has("avx2") && has("fma") && has("bmi2")) return "haswell";
    if (has("avx")) return "sandybridge";
    if (has("sse4_2")) return "sse42";
    return "x64";
  };
  const x64Smoke = join(smoke, "linux-x64", "wsp-ggml-smoke");
  const x64Libs = join(dist, "linux-x64");

  test("linux-x64 natively picks the best variant this CPU runs", { skip: process.arch !== "x64" || process.platform !== "linux" }, () => {
    assert.equal(smokeVariant(x64Smoke, [x64Libs]), bestHostVariant());
  });

  const qemuX86 = have("qemu-x86_64-static") ? "qemu-x86_64-static" : have("qemu-x86_64") ? "qemu-x86_64" : null;
  // qemu's CPU models each present one feature set; the loader must pick the matching variant
  // and nothing may die of SIGILL.
  for (const [cpu, variant] of [["qemu64", "x64"], ["Nehalem", "sse42"], ["SandyBridge", "sandybridge"], ["Haswell", "haswell"]]) {
    test(`linux-x64 under qemu -cpu ${cpu} picks ${variant}`, { skip: qemuX86 ? false : "qemu-user-static is not installed" }, () => {
      assert.equal(smokeVariant(qemuX86!, ["-cpu", cpu, x64Smoke, x64Libs]), variant);
    });
  }

  test("linux-x64-musl natively", { skip: existsSync("/lib/ld-musl-x86_64.so.1") ? false : "musl's loader is not installed (Debian package musl)" }, () => {
    assert.equal(smokeVariant(join(smoke, "linux-x64-musl", "wsp-ggml-smoke"), [join(dist, "linux-x64-musl")]), bestHostVariant());
  });

  const qemuArm = have("qemu-aarch64-static") ? "qemu-aarch64-static" : have("qemu-aarch64") ? "qemu-aarch64" : null;
  const armSysroot = "/usr/aarch64-linux-gnu";
  const armSkip = !qemuArm ? "qemu-user-static is not installed" : !existsSync(armSysroot) ? "libc6-arm64-cross is not installed" : false;
  for (const [cpu, variant] of [["cortex-a53", "armv8.0"], ["cortex-a76", "armv8.2"], ["max", "armv8.6"]]) {
    test(`linux-arm64 under qemu -cpu ${cpu} picks ${variant} (NEON code computes the right numbers)`, { skip: armSkip }, () => {
      const exe = join(smoke, "linux-arm64", "wsp-ggml-smoke");
      assert.equal(smokeVariant(qemuArm!, ["-L", armSysroot, "-cpu", cpu, exe, join(dist, "linux-arm64")]), variant);
    });
  }

  // Debian's wine64 package installs its loader outside PATH.
  const wine = have("wine64") ? "wine64" : existsSync("/usr/lib/wine/wine64") ? "/usr/lib/wine/wine64" : have("wine") ? "wine" : null;
  test("win32-x64 under wine", { skip: wine ? false : "wine64 is not installed" }, () => {
    const libs = join(dist, "win32-x64");
    const winPath = `Z:${libs.replaceAll("/", "\\")}`;
    const variant = smokeVariant(wine!, [join(smoke, "win32-x64", "wsp-ggml-smoke.exe"), winPath], {
      WINEPATH: winPath,
      WINEDEBUG: "-all",
      WINEPREFIX: join(root, ".zig-cache", "wineprefix"),
    });
    assert.equal(variant, bestHostVariant());
  });

  // The smoke test loads every backend of the folder (wsp_ggml_backend_load_all_from_path), so
  // ggml-vulkan.dll too: without a Vulkan driver (no ICD for wine's vulkan-1.dll to reach) and
  // without a Vulkan loader at all (wine's builtin vulkan-1.dll disabled), the CPU still computes.
  for (const [what, env] of [["no Vulkan driver", { VK_ICD_FILENAMES: "/nonexistent/icd.json", VK_DRIVER_FILES: "/nonexistent/icd.json" }], ["no vulkan-1.dll", { WINEDLLOVERRIDES: "vulkan-1=d" }]] as const) {
    test(`win32-x64 under wine with ${what}: the CPU still computes`, { skip: !wine ? "wine64 is not installed" : !vulkanBuilt ? "built without Vulkan" : false }, () => {
      const libs = join(dist, "win32-x64");
      const winPath = `Z:${libs.replaceAll("/", "\\")}`;
      const variant = smokeVariant(wine!, [join(smoke, "win32-x64", "wsp-ggml-smoke.exe"), winPath], {
        WINEPATH: winPath,
        WINEDEBUG: "-all",
        WINEPREFIX: join(root, ".zig-cache", "wineprefix"),
        ...env,
      });
      assert.equal(variant, bestHostVariant());
    });
  }
});
