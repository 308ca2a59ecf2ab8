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
import { main } from "./main.ts";

// A reader that stops early (`wsp-ggml gguf-info big.gguf | head`) is not an error.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw e;
});
process.exitCode = await main(process.argv.slice(2));
