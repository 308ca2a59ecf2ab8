/**
 * The decisions the op emitter (`emit_ops.ts`) cannot take from the headers:
 * which tensor parameters accept NULL, which ops are written by hand, and
 * which are left out (each with its reason).
 *
 * @module
 */

/** Tensor parameters that may be NULL, by function. */
export const NULLABLE: Readonly<Record<string, readonly string[]>> = {
  wsp_ggml_soft_max_ext: ["mask"],
  wsp_ggml_rope_ext: ["c"],
  wsp_ggml_rope_ext_inplace: ["c"],
  wsp_ggml_rope_ext_back: ["c"],
  wsp_ggml_rope_multi: ["c"],
  wsp_ggml_rope_multi_inplace: ["c"],
  wsp_ggml_rope_multi_back: ["c"],
  wsp_ggml_flash_attn_ext: ["mask"],
};

/** Ops written by hand in `src/core/context.ts`, with the method that covers each. */
export const HANDWRITTEN: Readonly<Record<string, string>> = {
  wsp_ggml_new_tensor: "Context.newTensor(type, shape)",
  wsp_ggml_get_first_tensor: "Context.tensors()",
  wsp_ggml_get_next_tensor: "Context.tensors()",
  wsp_ggml_get_tensor: "Context.getTensor(name)",
};

/** Ops left out of the API, with the reason. */
export const SKIPPED: Readonly<Record<string, string>> = {
  wsp_ggml_map_custom1: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_map_custom1_inplace: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_map_custom2: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_map_custom2_inplace: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_map_custom3: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_map_custom3_inplace: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_custom_4d: "custom ops call back into JS from compute threads (API part 2)",
  wsp_ggml_custom_inplace: "custom ops call back into JS from compute threads (API part 2)",
};

/** Fixed-length array parameters: the JS tuple length and the typed array that carries them to C. */
export const ARRAYS: Readonly<Record<string, { readonly length: number; readonly array: "Int32Array" | "BigInt64Array" }>> = {
  "int[4]": { length: 4, array: "Int32Array" },
  "int64_t *": { length: 4, array: "BigInt64Array" },
};
