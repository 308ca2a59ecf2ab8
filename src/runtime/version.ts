/**
 * Version and provenance constants. `tests/package/version.test.ts` keeps them
 * equal to package.json, deno.json and the vendored whisper.rn.
 *
 * @module
 */

/** This package's version (package.json and deno.json carry the same). */
export const VERSION = "0.1.0";

/** The npm whisper.rn release whose `cpp/` tree (the `wsp_`-prefixed ggml) is compiled. */
export const WHISPER_RN_VERSION = "0.5.1";

/** The whisper.cpp commit that whisper.rn 0.5.1 vendors ggml from. */
export const GGML_COMMIT = "85871a9";
