/**
 * Installs the Bun (bun:ffi) adapter; imported first by `entry_bun.ts`.
 *
 * @module
 */
import { adapter } from "./bun.ts";
import { provideAdapter } from "./mod.ts";

provideAdapter(adapter);
