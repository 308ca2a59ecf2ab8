// Force-included (-include) into llama.cpp b6673's sources by `zig build llama-bench`: the ggml
// functions that b6673 calls and whisper.rn 0.5.1's ggml does not have. Each is defined in
// compat.c and aborts with a message if it is ever reached (none is, for the models the
// benchmark loads).
#pragma once
#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

// xIELU activation (Apertus models only): b6673's ggml has WSP_GGML_UNARY_OP_XIELU, whisper.rn's has not.
struct wsp_ggml_tensor * wsp_ggml_xielu(struct wsp_ggml_context * ctx, struct wsp_ggml_tensor * a, float alpha_n, float alpha_p, float beta, float eps);

#ifdef __cplusplus
}
#endif
