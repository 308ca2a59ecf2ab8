// A small C client of ggml's RPC backend, the C end of tests/rpc_interop.test.ts: it computes
// y = W·x + b (f32 matmul + add) on the server at ENDPOINT and on its own CPU backend, and
// prints "OK …" when the two results are the same bytes (exit 0), else why not (exit 1).
//
//   wsp-rpc-client HOST:PORT [LIBDIR]
//
// LIBDIR holds the CPU variants (default: ../lib beside the executable, as zig-out/ lays it out).
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-rpc.h"
#include "ggml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K = 96, N = 40, B = 3 };

// Deterministic inputs in [-1, 1) (xorshift32), the same on every run.
static float next_value(uint32_t * s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return (float) (*s >> 8) / (float) (1u << 23) - 1.0f;
}

// Computes the graph on `backend`; returns 0 and fills out[N*B], or 1 with a message.
static int compute(wsp_ggml_backend_t backend, const char * what, float * out) {
    struct wsp_ggml_init_params params = { .mem_size = 16 * wsp_ggml_tensor_overhead() + wsp_ggml_graph_overhead(), .mem_buffer = NULL, .no_alloc = true };
    struct wsp_ggml_context * ctx = wsp_ggml_init(params);
    struct wsp_ggml_tensor * w = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, K, N);
    struct wsp_ggml_tensor * x = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, K, B);
    struct wsp_ggml_tensor * b = wsp_ggml_new_tensor_1d(ctx, WSP_GGML_TYPE_F32, N);
    struct wsp_ggml_tensor * y = wsp_ggml_add(ctx, wsp_ggml_mul_mat(ctx, w, x), b);
    struct wsp_ggml_cgraph * gf = wsp_ggml_new_graph(ctx);
    wsp_ggml_build_forward_expand(gf, y);
    // Every tensor of the context (inputs and results) in one buffer of the backend.
    wsp_ggml_backend_buffer_t buf = wsp_ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (buf == NULL) {
        fprintf(stderr, "%s: cannot allocate the tensors\n", what);
        wsp_ggml_free(ctx);
        return 1;
    }
    uint32_t seed = 12345;
    static float wv[K * N], xv[K * B], bv[N];
    for (int i = 0; i < K * N; i++) wv[i] = next_value(&seed);
    for (int i = 0; i < K * B; i++) xv[i] = next_value(&seed);
    for (int i = 0; i < N; i++) bv[i] = next_value(&seed);
    wsp_ggml_backend_tensor_set(w, wv, 0, sizeof(wv));
    wsp_ggml_backend_tensor_set(x, xv, 0, sizeof(xv));
    wsp_ggml_backend_tensor_set(b, bv, 0, sizeof(bv));
    enum wsp_ggml_status st = wsp_ggml_backend_graph_compute(backend, gf);
    if (st != WSP_GGML_STATUS_SUCCESS) {
        fprintf(stderr, "%s: compute failed (status %d)\n", what, (int) st);
        wsp_ggml_backend_buffer_free(buf);
        wsp_ggml_free(ctx);
        return 1;
    }
    wsp_ggml_backend_tensor_get(y, out, 0, sizeof(float) * N * B);
    wsp_ggml_backend_buffer_free(buf);
    wsp_ggml_free(ctx);
    return 0;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s HOST:PORT [LIBDIR]\n", argv[0]);
        return 2;
    }
    char libdir[4096];
    if (argc > 2) {
        snprintf(libdir, sizeof(libdir), "%s", argv[2]);
    } else {
        // ../lib beside the executable, from argv[0] (the tests and scripts start it by path).
        const char * slash = strrchr(argv[0], '/');
        int n = slash ? (int) (slash - argv[0]) : 1;
        snprintf(libdir, sizeof(libdir), "%.*s/../lib", n, slash ? argv[0] : ".");
    }
    wsp_ggml_backend_load_all_from_path(libdir);
    wsp_ggml_backend_t cpu = wsp_ggml_backend_init_by_type(WSP_GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (cpu == NULL) {
        fprintf(stderr, "no CPU backend in %s\n", libdir);
        return 1;
    }
    wsp_ggml_backend_t rpc = wsp_ggml_backend_rpc_init(argv[1]);
    if (rpc == NULL) {
        fprintf(stderr, "cannot make an RPC backend for %s\n", argv[1]);
        return 1;
    }
    static float remote[N * B], local[N * B];
    if (compute(rpc, "rpc", remote) != 0 || compute(cpu, "cpu", local) != 0) {
        return 1;
    }
    if (memcmp(remote, local, sizeof(local)) != 0) {
        int first = 0;
        while (first < N * B - 1 && memcmp(&remote[first], &local[first], sizeof(float)) == 0) first++;
        fprintf(stderr, "results differ: element %d is %.9g remotely, %.9g locally\n", first, remote[first], local[first]);
        return 1;
    }
    double sum = 0;
    for (int i = 0; i < N * B; i++) sum += local[i];
    printf("OK %d values identical (%s vs %s, sum %.6f)\n", N * B, wsp_ggml_backend_name(rpc), wsp_ggml_backend_name(cpu), sum);
    wsp_ggml_backend_free(rpc);
    wsp_ggml_backend_free(cpu);
    return 0;
}
