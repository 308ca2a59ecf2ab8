/**
 * The package entry for Bun (bun:ffi): the `"bun"` condition of package.json's
 * `exports`. Its first import installs the runtime's adapter statically, so
 * the library's modules (evaluated after it) never load another runtime's.
 *
 * @module
 */
import "./provide_bun.ts";
export * from "../mod.ts";
