#!/usr/bin/env node
// Builds the npm packages into dist-npm/ and packs them: `npm run pack`.
//
//   dist-npm/wsp-ggml/            the main package: ESM JavaScript + .d.ts (tsc -p tsconfig.build.json)
//   dist-npm/linux-x64/ …         one package per `zig build dist` target: @wsp-ggml/<target>, lib/ = zig-out/dist/<target>/
//                                 (the base library and the CPU variants)
//   dist-npm/linux-x64-vulkan/ …  the optional GPU package of each target that has a Vulkan backend library
//                                 (linux-*, win32-x64): @wsp-ggml/<target>-vulkan, lib/ = libggml-vulkan.so / ggml-vulkan.dll
//   dist-npm/tarballs/*.tgz       `npm pack` of each (with --pack)
//   dist-npm/pack-report.json     each package's files and sizes, as `npm pack --json` reports them
//
//   node scripts/pack.mjs [--pack] [--dry-run] [--allow-missing] [--skip-js] [--help]
//     --pack           run `npm pack` on every package (tarballs in dist-npm/tarballs)
//     --dry-run        run `npm pack --dry-run` instead and print the file lists
//     --allow-missing  targets whose zig-out/dist/<target> is missing or incomplete (or has no
//                      Vulkan library, for a -vulkan package) are skipped (reported) instead of
//                      failing; the host's platform package is always required (from
//                      zig-out/dist/<host>, else the host build zig-out/lib), its -vulkan one is not
//     --skip-js        reuse dist-npm/wsp-ggml/dist from an earlier run
//     --help           print this text
//
// `npm run pack` is `node scripts/pack.mjs --pack`: it needs all seven targets, which
// `node scripts/zig.mjs build dist` cross-compiles (slow). With only the host built
// (`npm run build`), pack the host's package and the main one:
//   npm run pack -- --allow-missing
//
// The main package's README is packages/wsp-ggml/README.md (the user README; the
// repository's README.md and CONTRIBUTING.md are for contributors). Its JavaScript carries
// source maps (.js.map with the TypeScript sources inside), so stack traces under
// `node --enable-source-maps` name the .ts files and lines (Deno maps the line numbers
// but keeps the .js names of node_modules files; Bun does not apply them there).
//
// WSP_GGML_PACK_OUT=<dir> writes everything there instead of dist-npm/ (for tests).
//
// The -vulkan packages are optionalDependencies of the main package with the os/cpu/libc of their
// platform package, so an install brings the host's, and the platform package stays small
// (the Vulkan library is ~27 MB, ~7.2 MiB packed). The loader looks for it beside the base
// library, then in @wsp-ggml/<target>-vulkan; without it, CPU only.
//
// The manifest templates are packages/wsp-ggml/package.json, packages/platform/package.json and
// packages/vulkan/package.json (READMEs beside them);
// name, version, description, license, engines and dependencies (koffi added) come from the root package.json, so the
// version is set in one place (src/runtime/version.ts and deno.json are checked against it by
// tests/package/version.test.ts).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = process.env.WSP_GGML_PACK_OUT ? path.resolve(process.env.WSP_GGML_PACK_OUT) : path.join(root, "dist-npm");
const args = new Set(process.argv.slice(2));
const KNOWN = ["--pack", "--dry-run", "--allow-missing", "--skip-js", "--help", "-h"];

/** The usage: this file's header comment, from its usage line on. */
function usage() {
  const lines = fs.readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
  const from = lines.findIndex((l) => l.includes("node scripts/pack.mjs ["));
  const to = lines.findIndex((l, i) => i > from && !l.startsWith("//"));
  return lines.slice(from, to).map((l) => l.replace(/^\/\/ ?/, "")).join("\n").trimEnd();
}

/** Every `zig build dist` target, as npm's os/cpu/libc name it. */
export const TARGETS = [
  { target: "linux-x64", os: "linux", cpu: "x64", libc: "glibc" },
  { target: "linux-arm64", os: "linux", cpu: "arm64", libc: "glibc" },
  { target: "linux-x64-musl", os: "linux", cpu: "x64", libc: "musl" },
  { target: "linux-arm64-musl", os: "linux", cpu: "arm64", libc: "musl" },
  { target: "darwin-x64", os: "darwin", cpu: "x64" },
  { target: "darwin-arm64", os: "darwin", cpu: "arm64" },
  { target: "win32-x64", os: "win32", cpu: "x64" },
];

const SCOPE = "@wsp-ggml";
const BASE = { linux: "libwsp-ggml.so", darwin: "libwsp-ggml.dylib", win32: "wsp-ggml.dll" };
const CPU_VARIANT = /^(?:lib)?ggml-cpu-(.+)\.(?:so|dylib|dll)$/;
/** whisper.cpp's library (opened only when whisper is used; links against the base library beside it). */
const WHISPER = { linux: "libwsp-whisper.so", darwin: "libwsp-whisper.dylib", win32: "wsp-whisper.dll" };
/** The Vulkan backend library, on the platforms the build makes one for (not macOS: Metal). */
const VULKAN = { linux: "libggml-vulkan.so", win32: "ggml-vulkan.dll" };
const VULKAN_SUFFIX = "-vulkan";

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function run(cmd, cmdArgs, opts = {}) {
  const r = spawnSync(cmd, cmdArgs, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], shell: process.platform === "win32", ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${cmdArgs.join(" ")} failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

function hostTarget() {
  if (process.platform !== "linux") return `${process.platform}-${process.arch}`;
  const report = process.report?.getReport?.();
  return `linux-${process.arch}${report && !report.header.glibcVersionRuntime ? "-musl" : ""}`;
}

/** The third-party notice of the compiled code. */
function licenseText(rootPkg) {
  const whisperRn = path.join(root, "node_modules", "whisper.rn", "LICENSE");
  const parts = [`${rootPkg.name} is released under the ${rootPkg.license} license.`];
  if (fs.existsSync(whisperRn)) {
    parts.push(
      `The native code is ggml as vendored by whisper.rn ${rootPkg.devDependencies["whisper.rn"]} (whisper.cpp / ggml, MIT License,\n` +
        "Copyright (c) 2023-2025 The ggml authors); whisper.rn's license follows.",
      fs.readFileSync(whisperRn, "utf8").trim(),
    );
  }
  return `${parts.join("\n\n")}\n`;
}

function fill(template, values) {
  return template.replace(/\{\{(\w+)\}\}/g, (_, k) => values[k] ?? "");
}

/** The platform package directory for one target, or why it could not be made. */
function platformPackage(rootPkg, t, license) {
  const host = t.target === hostTarget();
  let src = path.join(root, "zig-out", "dist", t.target);
  const base = BASE[t.os];
  let note;
  if (!fs.existsSync(path.join(src, base)) && host && fs.existsSync(path.join(root, "zig-out", "lib", base))) {
    note = `zig-out/dist/${t.target} has no ${base}: packed from the host build zig-out/lib`;
    src = path.join(root, "zig-out", "lib");
  }
  const files = fs.existsSync(src) ? fs.readdirSync(src).sort() : [];
  const variants = files.filter((f) => CPU_VARIANT.test(f));
  if (!files.includes(base) || variants.length === 0) {
    return { missing: `zig-out/dist/${t.target} ${!fs.existsSync(src) ? "does not exist" : !files.includes(base) ? `has no ${base}` : "has no CPU variant"}` };
  }
  const dir = path.join(out, t.target);
  fs.mkdirSync(path.join(dir, "lib"), { recursive: true });
  const whisper = files.includes(WHISPER[t.os]) ? [WHISPER[t.os]] : [];
  if (!whisper.length) note = [note, `${path.relative(root, src)} has no ${WHISPER[t.os]}: packed without whisper`].filter(Boolean).join("; ");
  for (const f of [base, ...whisper, ...variants]) fs.copyFileSync(path.join(src, f), path.join(dir, "lib", f));
  const template = readJson(path.join(root, "packages", "platform", "package.json"));
  delete template["//"];
  const name = `${SCOPE}/${t.target}`;
  writeJson(path.join(dir, "package.json"), {
    name,
    version: rootPkg.version,
    description: `wsp-ggml native libraries for ${t.target} (installed by wsp-ggml; do not depend on it directly)`,
    license: rootPkg.license,
    os: [t.os],
    cpu: [t.cpu],
    ...(t.libc ? { libc: [t.libc] } : {}),
    ...template,
  });
  const names = variants.map((f) => CPU_VARIANT.exec(f)[1]);
  const readme = fs.readFileSync(path.join(root, "packages", "platform", "README.md"), "utf8");
  fs.writeFileSync(path.join(dir, "README.md"), fill(readme, {
    name,
    target: t.target,
    base,
    variants: names.join(", "),
    whisperRn: rootPkg.devDependencies["whisper.rn"],
    ggmlCommit: "85871a9",
  }));
  fs.writeFileSync(path.join(dir, "LICENSE"), license);
  return { dir, name, variants: names, note, src };
}

/**
 * The optional GPU package of one target, `@wsp-ggml/<target>-vulkan`: the Vulkan backend library
 * from the same directory as its platform package's libraries, or why it could not be made.
 */
function vulkanPackage(rootPkg, t, license, src) {
  const file = VULKAN[t.os];
  if (!fs.existsSync(path.join(src, file))) return { missing: `${path.relative(root, src)} has no ${file}` };
  const dir = path.join(out, `${t.target}${VULKAN_SUFFIX}`);
  fs.mkdirSync(path.join(dir, "lib"), { recursive: true });
  fs.copyFileSync(path.join(src, file), path.join(dir, "lib", file));
  const template = readJson(path.join(root, "packages", "vulkan", "package.json"));
  delete template["//"];
  const name = `${SCOPE}/${t.target}${VULKAN_SUFFIX}`;
  writeJson(path.join(dir, "package.json"), {
    name,
    version: rootPkg.version,
    description: `wsp-ggml's Vulkan (GPU) backend for ${t.target} (an optional dependency of wsp-ggml; do not depend on it directly)`,
    license: rootPkg.license,
    os: [t.os],
    cpu: [t.cpu],
    ...(t.libc ? { libc: [t.libc] } : {}),
    ...template,
  });
  const second = readJson(path.join(root, "vendor", "manifest.json")).second ?? {};
  const source = second.package
    ? `ggml-vulkan of llama.cpp ${second.bundle?.release ?? ""} (commit ${String(second.bundle?.commit ?? "").slice(0, 7)}), as bundled by ${second.package} ${second.version}`
    : "ggml-vulkan";
  const readme = fs.readFileSync(path.join(root, "packages", "vulkan", "README.md"), "utf8");
  fs.writeFileSync(path.join(dir, "README.md"), fill(readme, {
    name,
    target: t.target,
    library: file,
    platformPackage: `${SCOPE}/${t.target}`,
    size: `${(fs.statSync(path.join(src, file)).size / 1e6).toFixed(1)} MB`,
    loader: t.os === "win32" ? "vulkan-1.dll" : "libvulkan.so.1",
    source,
  }));
  fs.writeFileSync(
    path.join(dir, "LICENSE"),
    `${license}\nThe Vulkan backend is ${source} (MIT License, Copyright (c) 2023-2025 The ggml authors),\nrenamed as whisper.rn renames ggml.\n`,
  );
  return { dir, name };
}

/**
 * tsc writes each map's `sources` relative to this checkout (`../../../../../src/core/x.ts`
 * from dist-npm/wsp-ggml/dist/src/core/), which in an installed package points above it.
 * Rewritten to the place the file has in the repository, inside the package
 * (`node_modules/wsp-ggml/src/core/x.ts`): stack traces then name the repository's path.
 * The file itself is not shipped; the map carries its text (`sourcesContent`).
 */
function relocateSourceMaps(distDir, pkgDir) {
  for (const rel of fs.readdirSync(distDir, { recursive: true })) {
    if (!String(rel).endsWith(".js.map")) continue;
    const file = path.join(distDir, String(rel));
    const map = readJson(file);
    map.sources = map.sources.map((src) => {
      const fromRoot = path.relative(root, path.resolve(path.dirname(file), map.sourceRoot || "", src));
      return path.relative(path.dirname(file), path.join(pkgDir, fromRoot)).split(path.sep).join("/");
    });
    map.sourceRoot = "";
    fs.writeFileSync(file, JSON.stringify(map));
  }
}

function mainPackage(rootPkg, license) {
  const dir = path.join(out, "wsp-ggml");
  if (!args.has("--skip-js")) {
    fs.rmSync(path.join(dir, "dist"), { recursive: true, force: true });
    const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
    // Source maps with the sources inside, whatever tsconfig.build.json says: the package
    // carries no .ts files, and a stack trace should still reach the TypeScript line.
    run(process.execPath, [tsc, "-p", "tsconfig.build.json", "--sourceMap", "--inlineSources", "--outDir", path.join(dir, "dist")]);
    relocateSourceMaps(path.join(dir, "dist"), dir);
  }
  const template = readJson(path.join(root, "packages", "wsp-ggml", "package.json"));
  delete template["//"];
  writeJson(path.join(dir, "package.json"), {
    name: rootPkg.name,
    version: rootPkg.version,
    description: rootPkg.description,
    license: rootPkg.license,
    keywords: ["ggml", "tensor", "ffi", "deno", "bun", "node", "whisper.rn"],
    engines: rootPkg.engines,
    ...template,
    // The root's runtime dependencies (@huggingface/jinja for chat templates), and koffi for Node's FFI.
    dependencies: { ...rootPkg.dependencies, koffi: rootPkg.devDependencies.koffi },
    optionalDependencies: Object.fromEntries([
      ...TARGETS.map((t) => [`${SCOPE}/${t.target}`, rootPkg.version]),
      ...TARGETS.filter((t) => VULKAN[t.os]).map((t) => [`${SCOPE}/${t.target}${VULKAN_SUFFIX}`, rootPkg.version]),
    ]),
  });
  fs.copyFileSync(path.join(root, "packages", "wsp-ggml", "README.md"), path.join(dir, "README.md"));
  fs.writeFileSync(path.join(dir, "LICENSE"), license);
  return { dir, name: rootPkg.name };
}

/** `npm pack [--dry-run] --json` of one package directory. */
function npmPack(dir, dryRun) {
  const dest = path.join(out, "tarballs");
  fs.mkdirSync(dest, { recursive: true });
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const json = run(npm, ["pack", "--json", "--ignore-scripts", ...(dryRun ? ["--dry-run"] : []), "--pack-destination", dest], { cwd: dir });
  const [r] = JSON.parse(json);
  return { name: r.name, version: r.version, filename: r.filename, tarball: dryRun ? undefined : path.join(dest, r.filename), size: r.size, unpackedSize: r.unpackedSize, files: r.files.map((f) => ({ path: f.path, size: f.size })) };
}

function kb(n) {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(2)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

/**
 * Builds (and with `pack`, packs) every package. Returns the report. `vulkan: "host"` makes only
 * the host's -vulkan package (the others are listed in `report.skipped`): each takes a few
 * seconds of gzip, which tests/package/pack.test.ts spares.
 */
export function buildPackages({ pack = false, dryRun = false, allowMissing = false, vulkan = "all" } = {}) {
  if (vulkan !== "all" && vulkan !== "host") throw new Error(`buildPackages: vulkan must be "all" or "host", not ${JSON.stringify(vulkan)}`);
  const rootPkg = readJson(path.join(root, "package.json"));
  fs.mkdirSync(out, { recursive: true });
  for (const t of TARGETS) {
    fs.rmSync(path.join(out, t.target), { recursive: true, force: true });
    fs.rmSync(path.join(out, `${t.target}${VULKAN_SUFFIX}`), { recursive: true, force: true });
  }
  fs.rmSync(path.join(out, "tarballs"), { recursive: true, force: true });
  const license = licenseText(rootPkg);
  const packages = [];
  const missing = [];
  const gpu = [];
  const skipped = [];
  for (const t of TARGETS) {
    const p = platformPackage(rootPkg, t, license);
    if (p.missing) missing.push({ name: `${SCOPE}/${t.target}`, target: t.target, why: p.missing });
    else packages.push(p);
    if (!VULKAN[t.os]) continue;
    if (vulkan === "host" && t.target !== hostTarget()) {
      skipped.push({ name: `${SCOPE}/${t.target}${VULKAN_SUFFIX}`, why: "vulkan: \"host\" (only the host's -vulkan package)" });
      continue;
    }
    const v = p.missing ? { missing: `its platform package cannot be made (${p.missing})` } : vulkanPackage(rootPkg, t, license, p.src);
    if (v.missing) missing.push({ name: `${SCOPE}/${t.target}${VULKAN_SUFFIX}`, target: `${t.target}${VULKAN_SUFFIX}`, why: v.missing });
    else gpu.push(v);
  }
  packages.push(...gpu);
  const host = missing.find((m) => m.target === hostTarget());
  if (host || (missing.length > 0 && !allowMissing)) {
    const list = missing.map((m) => `  ${m.name}: ${m.why}${m === host ? " (this machine's target: always required)" : ""}`).join("\n");
    throw new Error(
      `${missing.length} of ${TARGETS.length + TARGETS.filter((t) => VULKAN[t.os]).length} platform and -vulkan packages cannot be made:\n${list}\n` +
        (host
          ? "Build the host's libraries with `npm run build` (or all targets with `node scripts/zig.mjs build dist`)."
          : "Build every target with `node scripts/zig.mjs build dist`, or pack only what is built with " +
            "`npm run pack -- --allow-missing` (`node scripts/pack.mjs --pack --allow-missing`; the missing packages are listed, not packed)."),
    );
  }
  packages.unshift(mainPackage(rootPkg, license)); // after the check: tsc is the slow part
  const report = { packages: [], missing, skipped };
  for (const p of packages) {
    const entry = { name: p.name, dir: path.relative(root, p.dir), variants: p.variants, note: p.note };
    const t0 = performance.now();
    if (pack || dryRun) Object.assign(entry, npmPack(p.dir, dryRun), { packMs: Math.round(performance.now() - t0) });
    report.packages.push(entry);
  }
  writeJson(path.join(out, "pack-report.json"), report);
  return report;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (args.has("--help") || args.has("-h")) {
    console.log(usage());
    process.exit(0);
  }
  const unknown = [...args].filter((a) => !KNOWN.includes(a));
  if (unknown.length) {
    console.error(`pack.mjs: unknown option ${unknown.join(", ")}\n\n${usage()}`);
    process.exit(2);
  }
  const dryRun = args.has("--dry-run");
  let report;
  try {
    report = buildPackages({ pack: args.has("--pack"), dryRun, allowMissing: args.has("--allow-missing") });
  } catch (e) {
    console.error(`pack.mjs: ${e.message}`);
    process.exit(1);
  }
  for (const p of report.packages) {
    if (p.files) {
      console.log(`\n${p.name}@${p.version}  tarball ${kb(p.size)}, unpacked ${kb(p.unpackedSize)}, ${p.files.length} files${p.note ? `  (${p.note})` : ""}`);
      for (const f of p.files) console.log(`  ${kb(f.size).padStart(11)}  ${f.path}`);
    } else console.log(`${p.name}: ${p.dir}${p.note ? `  (${p.note})` : ""}`);
  }
  for (const m of report.missing) console.log(`missing: ${m.name}: ${m.why}`);
}
