// See work.h.
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#endif

#include "work.h"

#include <stdlib.h>
#include <time.h>

#ifdef _WIN32
#    include <windows.h>
#endif

double wsp_bench_now_ns(void) {
#ifdef _WIN32
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double) c.QuadPart * 1e9 / (double) f.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
#endif
}

size_t wsp_bench_graph_mem(int layers) {
    return (size_t) (5 * layers + 8) * wsp_ggml_tensor_overhead() + wsp_ggml_graph_overhead_custom(WSP_BENCH_GRAPH_SIZE, false);
}

double wsp_bench_graphs(int layers, int hidden, int batch, int64_t n, void * buf, int * nodes) {
    size_t mem = wsp_bench_graph_mem(layers);
    double t0 = wsp_bench_now_ns();
    for (int64_t i = 0; i < n; i++) {
        struct wsp_ggml_init_params params = { .mem_size = mem, .mem_buffer = buf, .no_alloc = true };
        struct wsp_ggml_context * ctx = wsp_ggml_init(params);
        struct wsp_ggml_tensor * h = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, hidden, batch);
        for (int l = 0; l < layers; l++) {
            struct wsp_ggml_tensor * w = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, hidden, hidden);
            struct wsp_ggml_tensor * bias = wsp_ggml_new_tensor_1d(ctx, WSP_GGML_TYPE_F32, hidden);
            h = wsp_ggml_relu(ctx, wsp_ggml_add(ctx, wsp_ggml_mul_mat(ctx, w, h), bias));
        }
        struct wsp_ggml_cgraph * gf = wsp_ggml_new_graph_custom(ctx, WSP_BENCH_GRAPH_SIZE, false);
        wsp_ggml_build_forward_expand(gf, h);
        *nodes = wsp_ggml_graph_n_nodes(gf);
        wsp_ggml_free(ctx);
    }
    return (wsp_bench_now_ns() - t0) / (double) (n > 0 ? n : 1);
}

double wsp_bench_compute(wsp_ggml_backend_t backend, struct wsp_ggml_cgraph * gf) {
    double t0 = wsp_bench_now_ns();
    if (wsp_ggml_backend_graph_compute(backend, gf) != WSP_GGML_STATUS_SUCCESS) return -1;
    return wsp_bench_now_ns() - t0;
}

void * wsp_bench_alloc(size_t bytes) {
    return malloc(bytes);
}

void wsp_bench_free(void * p) {
    free(p);
}
