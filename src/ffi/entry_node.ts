/**
 * The package entry for Node.js (koffi): the `"node"` condition of package.json's
 * `exports`. Its first import installs the runtime's adapter statically, so
 * the library's modules (evaluated after it) never load another runtime's.
 *
 * @module
 */
import "./provide_node.ts";
export * from "../mod.ts";
