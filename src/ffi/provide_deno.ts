/**
 * Installs the Deno (Deno.dlopen) adapter; imported first by `entry_deno.ts`.
 *
 * @module
 */
import { adapter } from "./deno.ts";
import { provideAdapter } from "./mod.ts";

provideAdapter(adapter);
