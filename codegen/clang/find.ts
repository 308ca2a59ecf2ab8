/**
 * Locating libclang and building the handle shim (`shim.c`) that the typed
 * binding drives.
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const ROOT: string = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Thrown when libclang or zig cannot be found. */
export class LibclangNotFoundError extends Error {
  /**
   * @param looked every place searched
   */
  constructor(looked: string[]) {
    super(
      "libclang not found. Install it with `bash scripts/install-libclang.sh` " +
        "(Debian's libclang1-14), or point WSP_GGML_LIBCLANG at a libclang shared library " +
        "(e.g. the one in PyPI's `libclang` wheel: clang/native/libclang.so).\nLooked in:\n  " +
        looked.join("\n  "),
    );
    this.name = "LibclangNotFoundError";
  }
}

function pythonWheelCandidates(): string[] {
  const out: string[] = [];
  for (const base of ["/usr/lib", "/usr/local/lib", "/opt/homebrew/lib"]) {
    let names: string[] = [];
    try {
      names = readdirSync(base).filter((n) => n.startsWith("python3"));
    } catch {
      continue;
    }
    for (const py of names.sort()) {
      for (const site of ["site-packages", "dist-packages"]) {
        for (const lib of ["libclang.so", "libclang.dylib"]) out.push(join(base, py, site, "clang", "native", lib));
      }
    }
  }
  return out;
}

/** Well-known places of libclang, most specific first. */
export function libclangCandidates(): string[] {
  const out: string[] = [];
  for (const v of [14, 15, 16, 17, 18, 19, 20]) {
    out.push(`/usr/lib/x86_64-linux-gnu/libclang-${v}.so.1`, `/usr/lib/aarch64-linux-gnu/libclang-${v}.so.1`);
    out.push(`/usr/lib/llvm-${v}/lib/libclang.so.1`);
  }
  out.push(
    "/usr/lib/libclang.so",
    "/opt/homebrew/opt/llvm/lib/libclang.dylib",
    "/usr/local/opt/llvm/lib/libclang.dylib",
    "/Library/Developer/CommandLineTools/usr/lib/libclang.dylib",
  );
  return out.concat(pythonWheelCandidates());
}

/** The libclang to use: `$WSP_GGML_LIBCLANG`, else the first well-known path that exists. */
export function findLibclang(): string {
  const env = process.env.WSP_GGML_LIBCLANG;
  if (env) {
    if (existsSync(env)) return env;
    throw new LibclangNotFoundError([`WSP_GGML_LIBCLANG=${env} (does not exist)`]);
  }
  const candidates = libclangCandidates();
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new LibclangNotFoundError(["$WSP_GGML_LIBCLANG (unset)", ...candidates]);
  return found;
}

/** The pinned zig (scripts/zig.mjs installs it under .tools/). */
export function zigPath(): string {
  const zig = join(ROOT, ".tools", "ziglang-0.15.2", "ziglang", process.platform === "win32" ? "zig.exe" : "zig");
  if (!existsSync(zig)) throw new Error(`zig not found at ${zig}: run \`node scripts/zig.mjs\` first`);
  return zig;
}

/** The zig library dir: clang builtin headers and libc headers for every target. */
export function zigLibDir(): string {
  return join(dirname(zigPath()), "lib");
}

/**
 * Builds `shim.c` for the host (once per content hash) into `.zig-cache/` and
 * returns the path of the shared library.
 */
export function buildShim(): string {
  const src = join(ROOT, "codegen", "clang", "shim.c");
  const hash = createHash("sha256").update(readFileSync(src)).digest("hex").slice(0, 16);
  const ext = process.platform === "darwin" ? "dylib" : "so";
  const dir = join(ROOT, ".zig-cache", "wsp-codegen");
  const out = join(dir, `libclang-shim-${hash}.${ext}`);
  if (existsSync(out)) return out;
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `tmp-${process.pid}-${hash}.${ext}`);
  execFileSync(zigPath(), ["cc", "-shared", "-fPIC", "-O2", "-o", tmp, src], { stdio: "inherit" });
  renameSync(tmp, out);
  return out;
}
