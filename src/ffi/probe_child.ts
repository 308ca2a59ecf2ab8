/**
 * The child process of the loader's probes (`probeLibrary` and `probeVulkan` in
 * `../runtime/loader.ts`): loads the library named on the command line exactly as the parent
 * would and prints one JSON line.
 *
 *     <runtime> probe_child.js <base library> [<cpu variant>]
 *
 * computes a small graph with the chosen CPU variant and prints `{"ok":true,"variant":"…"}`;
 *
 *     <runtime> probe_child.js <base library> <cpu variant> <Vulkan library>
 *
 * registers the Vulkan library as well and prints `{"ok":true,"vulkan":{"devices":N,"skipped":…,"maxAllocation":[…]}}`
 * (each device's largest allocation, see `PROBE_BLOCK_SIZE_ENV`).
 * A binary or driver that cannot run here kills this process, not the parent.
 *
 * @module
 */
import process from "node:process";
import { loadLibrary, registerVulkan } from "../runtime/loader.ts";
import { Context } from "../core/context.ts";
import { Type } from "./bindings.gen.ts";

const [base, variant, vulkanPath] = process.argv.slice(2);
// The Vulkan library is given by path (a platform package keeps it in a package of its own).
const lib = loadLibrary({ path: base, probe: false, ...(variant ? { cpuVariant: variant } : {}), ...(vulkanPath ? { vulkan: false } : {}) });
if (vulkanPath) {
  const vk = registerVulkan(lib, lib.location.base, vulkanPath);
  const s = lib.symbols;
  const devices = vk.reg === 0 ? 0 : Number(s.wsp_ggml_backend_reg_dev_count(vk.reg));
  // With the parent's PROBE_BLOCK_SIZE_ENV, a device buffer type's maximum is the device's
  // max_memory_allocation_size (what ggml-vulkan's temporaries may not exceed).
  const maxAllocation = Array.from({ length: devices }, (_, i) =>
    Number(s.wsp_ggml_backend_buft_get_max_size(s.wsp_ggml_backend_dev_buffer_type(s.wsp_ggml_backend_reg_dev_get(vk.reg, i)))));
  console.log(JSON.stringify({ ok: true, vulkan: { devices, skipped: vk.skipped, maxAllocation } }));
} else {
  const ctx = new Context({ memSize: 1 << 20 });
  try {
    const a = ctx.newTensor1d(Type.F32, 8).set(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]));
    const b = ctx.newTensor1d(Type.F32, 8).set(new Float32Array(8).fill(0.5));
    const c = ctx.mul(ctx.add(a, b), b);
    ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 1 });
    const got = Array.from(c.get(Float32Array));
    const want = [1, 2, 3, 4, 5, 6, 7, 8].map((x) => (x + 0.5) * 0.5);
    if (got.some((v, i) => v !== want[i])) throw new Error(`wrong result ${got} (want ${want})`);
  } finally {
    ctx.free();
  }
  const file = lib.cpuPath.split(/[\\/]/).pop() ?? "";
  const key = /^(?:lib)?ggml-cpu-(.+)\.(?:so|dylib|dll)$/.exec(file)?.[1];
  console.log(JSON.stringify({ ok: true, variant: key, name: lib.cpuVariant }));
}
