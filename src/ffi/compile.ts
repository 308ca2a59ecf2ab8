/**
 * Native libraries embedded in a single-file executable (`bun build
 * --compile`; also `deno compile --include`): the `wsp-ggml/compile` subpath.
 *
 * A compiled executable carries its files inside itself, but `dlopen` — and
 * ggml's own loading of the CPU variants — needs real files. So the build
 * step imports every library file with `with { type: "file" }` (which makes
 * `bun build --compile` embed it; {@linkcode writeLibrariesModule} writes that
 * module), and at start {@linkcode extractLibraries} writes them out once to
 * a cache directory that `loadLibrary` is then pointed at:
 *
 * ```ts
 * import { Context, loadLibrary } from "wsp-ggml";
 * import { extractLibraries } from "wsp-ggml/compile";
 * import { libraries } from "./libs.gen.ts"; // written by writeLibrariesModule
 *
 * loadLibrary({ path: extractLibraries(libraries) }); // before the first tensor
 * ```
 *
 * This module imports nothing of the library itself (no FFI, no loader), so
 * it can be imported before `wsp-ggml` and by a build script.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import process from "node:process";

/** The file names of the wsp-ggml libraries (`libwsp-ggml.so`, `libggml-cpu-haswell.so`, `wsp-ggml.dll`, …). */
export const LIBRARY_FILE: RegExp = /^(lib)?(wsp-ggml|ggml-cpu-.+)\.(so|dylib|dll)$/;

/** Options of {@linkcode extractLibraries}. */
export interface ExtractOptions {
  /**
   * The directory under which the libraries are written (in a subdirectory
   * named by their hash). Defaults to `$WSP_GGML_CACHE_DIR`, else
   * `$XDG_CACHE_HOME/wsp-ggml`, else `~/.cache/wsp-ggml` (the temporary
   * directory when there is no home).
   */
  readonly cacheDir?: string;
}

/** The default cache directory (see {@linkcode ExtractOptions.cacheDir}). */
function defaultCacheDir(): string {
  const env = process.env;
  if (env.WSP_GGML_CACHE_DIR) return env.WSP_GGML_CACHE_DIR;
  const home = homedir();
  return join(env.XDG_CACHE_HOME || (home ? join(home, ".cache") : tmpdir()), "wsp-ggml");
}

/**
 * Writes the embedded libraries (file name → the path the runtime gives an
 * embedded file, e.g. `/$bunfs/root/libwsp-ggml-…so`) to a directory the
 * loader can open, and returns that directory: pass it to
 * `loadLibrary({ path })`.
 *
 * The directory is named by a hash of the names and contents, so a new build
 * never reuses an old extraction and a second start of the same executable
 * writes nothing. The files are written to a private directory first and then
 * renamed into place, so concurrent starts never see half a set.
 *
 * @param libraries the embedded files by library file name (as {@linkcode writeLibrariesModule} exports them)
 * @param options where to extract
 * @returns the directory holding the libraries
 */
export function extractLibraries(libraries: Readonly<Record<string, string>>, options: ExtractOptions = {}): string {
  const names = Object.keys(libraries).sort();
  if (!names.some((n) => /wsp-ggml\./.test(n))) throw new Error(`extractLibraries: no wsp-ggml base library among ${names.join(", ") || "no files"}`);
  const contents = names.map((name) => {
    if (!LIBRARY_FILE.test(name) || name !== name.split(/[\\/]/).pop()) throw new Error(`extractLibraries: ${name} is not a wsp-ggml library file name`);
    return [name, readFileSync(libraries[name])] as const;
  });
  const hash = createHash("sha256");
  for (const [name, bytes] of contents) hash.update(name).update(bytes);
  const dir = join(options.cacheDir ?? defaultCacheDir(), `embedded-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(join(dir, ".complete"))) return dir;
  const staging = `${dir}.${process.pid}.tmp`;
  mkdirSync(staging, { recursive: true });
  try {
    for (const [name, bytes] of contents) writeFileSync(join(staging, name), bytes, { mode: 0o755 });
    writeFileSync(join(staging, ".complete"), "");
    try {
      renameSync(staging, dir);
    } catch {
      // Another start won the race (or an incomplete directory is in the way).
      if (!existsSync(join(dir, ".complete"))) throw new Error(`extractLibraries: cannot extract the embedded libraries to ${dir}`);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return dir;
}

/** Options of {@linkcode writeLibrariesModule}. */
export interface LibrariesModuleOptions {
  /** The directory holding the libraries (the platform package's `lib/`, or `zig-out/lib`). */
  readonly dir: string;
  /** The module file to write (`.ts`, `.mts` or `.js`); its imports are relative to it. */
  readonly out: string;
}

/**
 * Writes the module that embeds the libraries of `dir` in a `bun build
 * --compile` executable: one `import … with { type: "file" }` per library
 * file, and `export const libraries` mapping each file name to the embedded
 * path, for {@linkcode extractLibraries}. Run it in the build step, before
 * `bun build --compile`.
 *
 * @returns the library file names it embeds
 */
export function writeLibrariesModule(options: LibrariesModuleOptions): string[] {
  const dir = resolve(options.dir);
  const out = resolve(options.out);
  const files = readdirSync(dir).filter((f) => LIBRARY_FILE.test(f)).sort();
  if (!files.some((f) => /wsp-ggml\./.test(f)) || !files.some((f) => /ggml-cpu-/.test(f))) {
    throw new Error(`writeLibrariesModule: ${dir} holds no wsp-ggml libraries (the base library and at least one ggml-cpu-<variant>)`);
  }
  const spec = (f: string) => {
    const rel = relative(dirname(out), join(dir, f)).split("\\").join("/");
    return rel.startsWith(".") ? rel : `./${rel}`;
  };
  const lines = files.map((f, i) =>
    `// @ts-ignore: a native library (no module types); the attribute makes Bun embed it\nimport f${i} from ${JSON.stringify(spec(f))} with { type: "file" };`
  );
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, [
    "// Generated by writeLibrariesModule (wsp-ggml/compile): the embedded native libraries, by file name.",
    ...lines,
    `export const libraries${/\.[cm]?ts$/.test(out) ? ": Record<string, string>" : ""} = { ${files.map((f, i) => `${JSON.stringify(f)}: f${i}`).join(", ")} };`,
    "",
  ].join("\n"));
  return files;
}
