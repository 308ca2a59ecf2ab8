// See compat.h: ggml functions of llama.cpp b6673 that whisper.rn 0.5.1's ggml lacks.
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>

static void wsp_llama_compat_missing(const char * name) {
    fprintf(stderr, "llama-bench (wsp-ggml build): %s is not in whisper.rn's ggml; this model needs an op the build cannot run\n", name);
    abort();
}

struct wsp_ggml_tensor * wsp_ggml_xielu(struct wsp_ggml_context * ctx, struct wsp_ggml_tensor * a, float alpha_n, float alpha_p, float beta, float eps) {
    (void) ctx; (void) a; (void) alpha_n; (void) alpha_p; (void) beta; (void) eps;
    wsp_llama_compat_missing("wsp_ggml_xielu");
    return NULL;
}
