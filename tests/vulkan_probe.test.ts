// The Vulkan probe (issue 25): creating a Vulkan instance maps the machine's drivers (Mesa's
// lavapipe, ~55 MiB of RSS) even when ggml-vulkan ends up with no device, so the loader counts
// the devices in a child process first and, with none, does not load libggml-vulkan here.
// Each case runs in a fresh child (the library loads once per process, and ggml-vulkan reads
// WSP_GGML_VK_VISIBLE_DEVICES before any JS could set it) with a cache directory of its own.
// Linux only: the check is that /proc/self/maps names no Vulkan loader or driver.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Context, devices, loadLibrary, Type } from "../mod.ts";
import { locateLibrary, vulkanLibraryName } from "../src/runtime/loader.ts";
import { root } from "./run.ts";

const CHILD_ENV = "WSP_GGML_VK_PROBE_CHILD";
const MAPPED_VULKAN = /libvulkan\.so|libvulkan_lvp|lavapipe/;

interface Answer {
  vulkan: { path: string | null; reg: number; skipped: string | null };
  devices: string[];
  y: number[];
  mappedVulkan: boolean | null;
}

/** The child: loads, computes on the CPU, says what became of Vulkan and what it mapped. */
function child(): void {
  const lib = loadLibrary();
  using ctx = new Context({ memSize: 1 << 20 });
  const a = ctx.newTensor1d(Type.F32, 4).set(new Float32Array([1, 2, 3, 4]));
  const y = ctx.add(a, a);
  ctx.newGraph().buildForwardExpand(y).compute({ nThreads: 1 });
  let mappedVulkan: boolean | null = null; // Deno reads /proc only with --allow-all
  try {
    mappedVulkan = MAPPED_VULKAN.test(readFileSync("/proc/self/maps", "utf8"));
  } catch { /* not allowed */ }
  const answer: Answer = { vulkan: lib.vulkan, devices: devices().map((d) => d.name), y: Array.from(y.get(Float32Array)), mappedVulkan };
  console.log(JSON.stringify(answer));
}

/** Runs this file as a child of the current runtime (or of `runtime` with its own arguments) with `env` on top of ours; undefined unsets. */
function run(env: Record<string, string | undefined>, runtime?: { cmd: string; args: string[] }): { answer?: Answer; out: string; status: number | null } {
  const file = fileURLToPath(import.meta.url);
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  const [cmd, args] = runtime ? [runtime.cmd, [...runtime.args, file]]
    : [process.execPath, g.Bun !== undefined ? [file] : g.Deno !== undefined ? ["run", "-A", file] : ["--import", "tsx", file]];
  const full: Record<string, string | undefined> = { ...process.env, [CHILD_ENV]: "1", ...env };
  for (const k of Object.keys(full)) if (full[k] === undefined) delete full[k];
  delete full.NODE_TEST_CONTEXT;
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", env: full as Record<string, string>, stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
  const out = `${r.stdout ?? ""}\n${r.stderr ?? ""}`;
  try {
    return { answer: JSON.parse((r.stdout ?? "").trim().split("\n").pop() ?? ""), out, status: r.status };
  } catch {
    return { out, status: r.status };
  }
}

/** The Vulkan probe verdicts in a cache directory. */
function verdicts(cache: string): string[] {
  return existsSync(cache) ? readdirSync(cache).filter((f) => f.startsWith("vulkan-probe-")) : [];
}

if (process.env[CHILD_ENV] === "1") {
  child();
} else {
  const dir = (() => {
    try {
      return locateLibrary().dir;
    } catch {
      return undefined;
    }
  })();
  const skip = process.platform !== "linux" ? "Linux only (reads /proc/self/maps)"
    : dir === undefined || !existsSync(join(dir, vulkanLibraryName())) ? "the build has no Vulkan library" : false;

  describe("the Vulkan probe", { skip }, () => {
    const cache = mkdtempSync(join(tmpdir(), "wsp-vkprobe-"));
    const noDevice = { WSP_GGML_CACHE_DIR: cache, WSP_GGML_VK_VISIBLE_DEVICES: undefined, GGML_VK_VISIBLE_DEVICES: undefined, WSP_GGML_PROBE: undefined, WSP_GGML_VULKAN: undefined, WSP_GGML_DEBUG: "1" };
    let first: ReturnType<typeof run> | undefined;
    /** Whether this machine has a Vulkan device ggml-vulkan takes by default (a real GPU): nothing to spare then. */
    let hasGpu = false;

    test("without a visible device: Vulkan skipped with the reason, and no Vulkan driver mapped", () => {
      first = run(noDevice);
      assert.equal(first.status, 0, first.out.slice(-3000));
      const a = first.answer!;
      assert.deepEqual(a.y, [2, 4, 6, 8]);
      if (a.vulkan.reg !== 0) {
        hasGpu = true;
        return void console.log(`skipped: this machine has a Vulkan device (${a.devices.join(", ")})`);
      }
      assert.match(a.vulkan.skipped ?? "", /probed in a child process/);
      assert.equal(a.mappedVulkan, false, "the process mapped the Vulkan loader or a driver");
      assert.deepEqual(a.devices, ["CPU"]);
      assert.match(first.out, /DEBUG: Vulkan backend skipped/);
      assert.equal(verdicts(cache).length, 1, "the verdict is cached");
    });

    test("the second process takes the verdict from the cache", () => {
      if (hasGpu) return void console.log("skipped: this machine has a Vulkan device");
      const r = run(noDevice);
      assert.equal(r.status, 0, r.out.slice(-3000));
      assert.match(r.answer!.vulkan.skipped ?? "", /probed in a child process, cached/);
      assert.equal(r.answer!.mappedVulkan, false);
      assert.equal(verdicts(cache).length, 1);
    });

    test("with WSP_GGML_VK_VISIBLE_DEVICES=0 (lavapipe is then a device): Vulkan is registered", () => {
      if (/could not be loaded/.test(first?.answer?.vulkan.skipped ?? "")) {
        return void console.log(`skipped: no Vulkan loader here (${first!.answer!.vulkan.skipped})`);
      }
      const r = run({ ...noDevice, WSP_GGML_VK_VISIBLE_DEVICES: "0" });
      assert.equal(r.status, 0, r.out.slice(-3000));
      const a = r.answer!;
      assert.notEqual(a.vulkan.reg, 0, `Vulkan was skipped: ${a.vulkan.skipped}`);
      assert.equal(a.vulkan.skipped, null);
      assert.ok(a.devices.some((d) => /vulkan/i.test(d)), `devices: ${a.devices}`);
      assert.equal(a.mappedVulkan, true);
      assert.deepEqual(a.y, [2, 4, 6, 8]);
      // The environment is part of the key: a verdict of its own.
      if (!hasGpu) assert.equal(verdicts(cache).length, 2);
    });

    test("WSP_GGML_PROBE=0: loaded in this process as before the probe", () => {
      const before = verdicts(cache).length;
      const r = run({ ...noDevice, WSP_GGML_PROBE: "0" });
      assert.equal(r.status, 0, r.out.slice(-3000));
      assert.doesNotMatch(r.answer!.vulkan.skipped ?? "", /probed/);
      assert.deepEqual(r.answer!.y, [2, 4, 6, 8]);
      assert.equal(verdicts(cache).length, before, "no probe ran");
    });

    test("WSP_GGML_VULKAN=0: no probe, no Vulkan", () => {
      const fresh = mkdtempSync(join(tmpdir(), "wsp-vkprobe-off-"));
      try {
        const r = run({ ...noDevice, WSP_GGML_CACHE_DIR: fresh, WSP_GGML_VULKAN: "0", WSP_GGML_VK_VISIBLE_DEVICES: "0" });
        assert.equal(r.status, 0, r.out.slice(-3000));
        assert.match(r.answer!.vulkan.skipped ?? "", /turned off/);
        assert.equal(r.answer!.mappedVulkan, false);
        assert.deepEqual(verdicts(fresh), []);
      } finally {
        rmSync(fresh, { recursive: true, force: true });
      }
    });

    test("Deno without --allow-run: no error; Vulkan is loaded in the process as before", () => {
      const deno = join(root, "node_modules", ".bin", "deno");
      if (!existsSync(deno)) return void console.log("skipped: no deno in node_modules/.bin");
      const fresh = mkdtempSync(join(tmpdir(), "wsp-vkprobe-deno-"));
      try {
        const r = run({ ...noDevice, WSP_GGML_CACHE_DIR: fresh, NO_COLOR: "1" }, { cmd: deno, args: ["run", "--allow-ffi", "--allow-read", "--allow-env", "--no-prompt"] });
        assert.equal(r.status, 0, r.out.slice(-3000));
        assert.deepEqual(r.answer!.y, [2, 4, 6, 8]);
        assert.doesNotMatch(r.answer!.vulkan.skipped ?? "", /probed/);
        assert.match(r.out, /Vulkan probe not run \(the runtime does not allow running a child process/);
        assert.deepEqual(verdicts(fresh), []);
      } finally {
        rmSync(fresh, { recursive: true, force: true });
      }
    });

    test("a Vulkan library that crashes: skipped with the signal in a child, this process lives, the verdict is cached", () => {
      // A stand-in for a driver that faults while ggml-vulkan initialises: its backend init writes to address 0.
      const zig = [join(root, ".tools", "ziglang-0.15.2", "ziglang", "zig"), "zig"].find((z) => spawnSync(z, ["version"]).status === 0);
      if (!zig) return void console.log("skipped: no zig to build the crashing library (node scripts/zig.mjs installs it)");
      const fake = mkdtempSync(join(tmpdir(), "wsp-vkcrash-"));
      try {
        for (const f of readdirSync(dir!).filter((f) => /^(?:lib)?(?:wsp-ggml\.so|ggml-cpu-.+\.so)$/.test(f))) copyFileSync(join(dir!, f), join(fake, f));
        writeFileSync(join(fake, "crash.c"), "void *wsp_ggml_backend_init(void) { *(volatile int *)0 = 0; return 0; }\n");
        const cc = spawnSync(zig, ["cc", "-shared", "-fPIC", "-o", join(fake, vulkanLibraryName()), join(fake, "crash.c")], { encoding: "utf8" });
        assert.equal(cc.status, 0, cc.stderr);
        const env = { ...noDevice, WSP_GGML_CACHE_DIR: join(fake, "cache"), WSP_GGML_LIBRARY_PATH: fake };
        const r = run(env);
        assert.equal(r.status, 0, r.out.slice(-3000));
        assert.deepEqual(r.answer!.y, [2, 4, 6, 8]);
        assert.equal(r.answer!.vulkan.reg, 0);
        assert.match(r.answer!.vulkan.skipped ?? "", /the Vulkan probe process was killed by SIGSEGV.*\(probed in a child process\)/);
        assert.match(r.out, /was not loaded: the Vulkan probe process was killed by SIGSEGV/, "a warning on stderr");
        const again = run(env);
        assert.equal(again.status, 0, again.out.slice(-3000));
        assert.match(again.answer!.vulkan.skipped ?? "", /killed by SIGSEGV.*cached/);
      } finally {
        rmSync(fake, { recursive: true, force: true });
      }
    });

    test("clean-up", () => rmSync(cache, { recursive: true, force: true }));
  });
}
