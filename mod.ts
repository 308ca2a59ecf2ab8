/**
 * The package entry: see `src/mod.ts`.
 *
 * @module
 */
export * from "./src/mod.ts";
