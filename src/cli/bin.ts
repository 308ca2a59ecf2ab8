#!/usr/bin/env node
/**
 * The `wsp-ggml` executable (the package's `bin`): runs {@linkcode main}
 * with the process's arguments and exits with its status. Node runs it
 * through the shebang; Bun (`bunx --bun wsp-ggml`, `bun x --bun`) and Deno
 * (`deno run -A npm:wsp-ggml`) run the same file, each through its own FFI.
 *
 * @module
 */
import process from "node:process";
import { bunxOnNode, main } from "./main.ts";

// A reader that stops early (`wsp-ggml gguf-info big.gguf | head`) is not an error.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw e;
});
// `bunx wsp-ggml` without --bun follows the shebang to Node: say so, since it looks like Bun.
if (bunxOnNode(process.env)) process.stderr.write("wsp-ggml: running on Node.js: bunx follows this script's `#!/usr/bin/env node` line; `bunx --bun wsp-ggml` runs it on Bun\n");
process.exitCode = await main(process.argv.slice(2));
