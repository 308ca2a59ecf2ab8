// A Node-API module with the five functions of the graph benchmark's raw loop, written the
// fastest way Node-API allows: one callback per function, arguments read as doubles and int32,
// the pointer result made a double. bench/cases.ts (graph, on Node) times the raw loop through it
// in turn with the same loop through koffi, to measure what an addon of our own would gain over
// koffi. It is a probe of that question, not part of the product: it is built only by
// `zig build bench`, into zig-out/bench/, and links the host base library like bench/work.c.
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdint.h>

#include "ggml.h"

static napi_value fail(napi_env env) {
    napi_throw_type_error(env, NULL, "napi_probe: expected numbers");
    return NULL;
}

static int pointer_arg(napi_env env, napi_value v, void ** out) {
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) return 0;
    *out = (void *) (uintptr_t) d;
    return 1;
}

static int i64_arg(napi_env env, napi_value v, int64_t * out) {
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) return 0;
    *out = (int64_t) d;
    return 1;
}

static napi_value pointer_result(napi_env env, const void * p) {
    napi_value out;
    napi_create_double(env, (double) (uintptr_t) p, &out);
    return out;
}

#define ARGS(n)                                                  \
    size_t argc = (n);                                           \
    napi_value argv[(n)];                                        \
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);        \
    if (argc < (n)) return fail(env)

static napi_value new_tensor_1d(napi_env env, napi_callback_info info) {
    ARGS(3);
    void * ctx; int32_t type; int64_t ne0;
    if (!pointer_arg(env, argv[0], &ctx) || napi_get_value_int32(env, argv[1], &type) != napi_ok || !i64_arg(env, argv[2], &ne0)) return fail(env);
    return pointer_result(env, wsp_ggml_new_tensor_1d(ctx, (enum wsp_ggml_type) type, ne0));
}

static napi_value new_tensor_2d(napi_env env, napi_callback_info info) {
    ARGS(4);
    void * ctx; int32_t type; int64_t ne0, ne1;
    if (!pointer_arg(env, argv[0], &ctx) || napi_get_value_int32(env, argv[1], &type) != napi_ok || !i64_arg(env, argv[2], &ne0) || !i64_arg(env, argv[3], &ne1)) return fail(env);
    return pointer_result(env, wsp_ggml_new_tensor_2d(ctx, (enum wsp_ggml_type) type, ne0, ne1));
}

static napi_value binary(napi_env env, napi_callback_info info, struct wsp_ggml_tensor * (*op)(struct wsp_ggml_context *, struct wsp_ggml_tensor *, struct wsp_ggml_tensor *)) {
    ARGS(3);
    void *ctx, *a, *b;
    if (!pointer_arg(env, argv[0], &ctx) || !pointer_arg(env, argv[1], &a) || !pointer_arg(env, argv[2], &b)) return fail(env);
    return pointer_result(env, op(ctx, a, b));
}

static napi_value mul_mat(napi_env env, napi_callback_info info) { return binary(env, info, wsp_ggml_mul_mat); }
static napi_value add(napi_env env, napi_callback_info info) { return binary(env, info, wsp_ggml_add); }

static napi_value relu(napi_env env, napi_callback_info info) {
    ARGS(2);
    void *ctx, *a;
    if (!pointer_arg(env, argv[0], &ctx) || !pointer_arg(env, argv[1], &a)) return fail(env);
    return pointer_result(env, wsp_ggml_relu(ctx, a));
}

// The floor: a Node-API call that does nothing.
static napi_value empty(napi_env env, napi_callback_info info) {
    (void) env; (void) info;
    return NULL;
}

NAPI_MODULE_INIT() {
    const napi_property_descriptor props[] = {
        { "wsp_ggml_new_tensor_1d", NULL, new_tensor_1d, NULL, NULL, NULL, napi_default, NULL },
        { "wsp_ggml_new_tensor_2d", NULL, new_tensor_2d, NULL, NULL, NULL, napi_default, NULL },
        { "wsp_ggml_mul_mat", NULL, mul_mat, NULL, NULL, NULL, napi_default, NULL },
        { "wsp_ggml_add", NULL, add, NULL, NULL, NULL, napi_default, NULL },
        { "wsp_ggml_relu", NULL, relu, NULL, NULL, NULL, napi_default, NULL },
        { "empty", NULL, empty, NULL, NULL, NULL, napi_default, NULL },
    };
    if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
    return exports;
}
