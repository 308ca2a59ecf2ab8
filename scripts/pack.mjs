#!/usr/bin/env node
// Builds the npm packages into dist-npm/ and packs them: `npm run pack`.
//
//   dist-npm/wsp-ggml/            the main package: ESM JavaScript + .d.ts (tsc -p tsconfig.build.json)
//   dist-npm/linux-x64/ …         one package per `zig build dist` target: @wsp-ggml/<target>, lib/ = zig-out/dist/<target>/
//   dist-npm/tarballs/*.tgz       `npm pack` of each (with --pack)
//   dist-npm/pack-report.json     each package's files and sizes, as `npm pack --json` reports them
//
//   node scripts/pack.mjs [--pack] [--dry-run] [--allow-missing] [--skip-js]
//     --pack           run `npm pack` on every package (tarballs in dist-npm/tarballs)
//     --dry-run        run `npm pack --dry-run` instead and print the file lists
//     --allow-missing  targets whose zig-out/dist/<target> is missing or incomplete are skipped
//                      (reported) instead of failing; the host's target is always required
//     --skip-js        reuse dist-npm/wsp-ggml/dist from an earlier run
//
// The manifest templates are packages/wsp-ggml/package.json and packages/platform/package.json;
// name, version, description, license and engines come from the root package.json, so the
// version is set in one place (src/runtime/version.ts and deno.json are checked against it by
// tests/package/version.test.ts).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(root, "dist-npm");
const args = new Set(process.argv.slice(2));

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
  for (const f of [base, ...variants]) fs.copyFileSync(path.join(src, f), path.join(dir, "lib", f));
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
  return { dir, name, variants: names, note };
}

function mainPackage(rootPkg, license) {
  const dir = path.join(out, "wsp-ggml");
  if (!args.has("--skip-js")) {
    fs.rmSync(path.join(dir, "dist"), { recursive: true, force: true });
    const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
    run(process.execPath, [tsc, "-p", "tsconfig.build.json"]);
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
    dependencies: { koffi: rootPkg.devDependencies.koffi },
    optionalDependencies: Object.fromEntries(TARGETS.map((t) => [`${SCOPE}/${t.target}`, rootPkg.version])),
  });
  fs.copyFileSync(path.join(root, "README.md"), path.join(dir, "README.md"));
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

/** Builds (and with `pack`, packs) every package. Returns the report. */
export function buildPackages({ pack = false, dryRun = false, allowMissing = false } = {}) {
  const rootPkg = readJson(path.join(root, "package.json"));
  fs.mkdirSync(out, { recursive: true });
  for (const t of TARGETS) fs.rmSync(path.join(out, t.target), { recursive: true, force: true });
  fs.rmSync(path.join(out, "tarballs"), { recursive: true, force: true });
  const license = licenseText(rootPkg);
  const packages = [mainPackage(rootPkg, license)];
  const missing = [];
  for (const t of TARGETS) {
    const p = platformPackage(rootPkg, t, license);
    if (p.missing) {
      if (!allowMissing || t.target === hostTarget()) throw new Error(`${SCOPE}/${t.target}: ${p.missing} (run \`node scripts/zig.mjs build dist\`)`);
      missing.push({ name: `${SCOPE}/${t.target}`, why: p.missing });
    } else packages.push(p);
  }
  const report = { packages: [], missing };
  for (const p of packages) {
    const entry = { name: p.name, dir: path.relative(root, p.dir), variants: p.variants, note: p.note };
    if (pack || dryRun) Object.assign(entry, npmPack(p.dir, dryRun));
    report.packages.push(entry);
  }
  writeJson(path.join(out, "pack-report.json"), report);
  return report;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dryRun = args.has("--dry-run");
  const report = buildPackages({ pack: args.has("--pack"), dryRun, allowMissing: args.has("--allow-missing") });
  for (const p of report.packages) {
    if (p.files) {
      console.log(`\n${p.name}@${p.version}  tarball ${kb(p.size)}, unpacked ${kb(p.unpackedSize)}, ${p.files.length} files${p.note ? `  (${p.note})` : ""}`);
      for (const f of p.files) console.log(`  ${kb(f.size).padStart(11)}  ${f.path}`);
    } else console.log(`${p.name}: ${p.dir}${p.note ? `  (${p.note})` : ""}`);
  }
  for (const m of report.missing) console.log(`missing: ${m.name}: ${m.why}`);
}
