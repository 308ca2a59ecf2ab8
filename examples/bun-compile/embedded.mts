// Bun-only (the .mts extension keeps it out of the Deno/tsc checks of the Deno+Node sources).
// Writes the libraries embedded in a `bun build --compile` executable to a
// directory the loader can open, once per content: the directory's name is
// a hash of the executable's embedded files, so a new build never reuses an
// old extraction and an unchanged one extracts nothing.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** Extracts `libraries` (file name → embedded path) and returns their directory. */
export async function extractLibraries(libraries: Record<string, string>): Promise<string> {
  const contents = await Promise.all(Object.entries(libraries).map(async ([name, path]) => [name, new Uint8Array(await Bun.file(path).arrayBuffer())] as const));
  const hash = createHash("sha256");
  for (const [name, bytes] of contents) hash.update(name).update(bytes);
  const base = process.env.WSP_GGML_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? (homedir() ? join(homedir(), ".cache") : tmpdir()), "wsp-ggml");
  const dir = join(base, `embedded-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(join(dir, ".complete"))) return dir;
  // Into a private directory first, then renamed: a concurrent start never sees half a set.
  const staging = `${dir}.${process.pid}.tmp`;
  mkdirSync(staging, { recursive: true });
  for (const [name, bytes] of contents) writeFileSync(join(staging, name), bytes, { mode: 0o755 });
  writeFileSync(join(staging, ".complete"), "");
  try {
    renameSync(staging, dir);
  } catch {
    if (!existsSync(join(dir, ".complete"))) throw new Error(`cannot extract the embedded libraries to ${dir}`);
  }
  return dir;
}
