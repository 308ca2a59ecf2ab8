#!/usr/bin/env node
// `npm start`: set-up (vendor, zig, host build), then the main job on Node.
// Until the training demo lands (issue 7), the main job is the README example.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { root, setup } from "./setup.mjs";

await setup({ libclang: false });
const main = path.join(root, "examples", "readme.ts");
const r = spawnSync(process.execPath, ["--import", "tsx", main, ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
process.exit(r.status ?? 1);
