#!/usr/bin/env node
// `npm run build [-- zig build args]`: the pinned zig's `zig build`, after the vendor step.
//   npm run build                 host libraries → zig-out/lib
//   npm run build -- dist         every release target → zig-out/dist/<target>
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureZig } from "./zig.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let r = spawnSync(process.execPath, [path.join(root, "scripts", "vendor.mjs")], { stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);
r = spawnSync(ensureZig(), ["build", ...process.argv.slice(2)], { stdio: "inherit", cwd: root });
process.exit(r.status ?? 1);
