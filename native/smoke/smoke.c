// Smoke test of a built wsp-ggml: loads the best CPU backend variant the way a user does
// (ggml's dynamic-backend loader), reports which one it chose, and checks a small graph —
// matmul in f32 / f16 / q8_0, add with broadcast, softmax — against references computed
// here in plain C (double precision).
//
//   wsp-ggml-smoke [LIBDIR]      LIBDIR holds libggml-cpu-*.so / ggml-cpu-*.dll (default: beside the exe)
//
// Exit code 0 when every check passes. Tolerances are ggml's own (tests/test-backend-ops):
// normalised mean squared error Σ(a−b)²/Σb² ≤ 1e-7 for exact f32 work, 5e-4 for matmul
// with quantized or half-precision weights, max abs error 1e-6 for softmax.
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE  // dladdr, RTLD_NOLOAD
#endif
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#    include <windows.h>
#else
#    include <dlfcn.h>
#endif

static int n_pass = 0, n_fail = 0;

static void check(const char * name, int ok, const char * fmt, double value) {
    printf("%s %-34s ", ok ? "ok  " : "FAIL", name);
    printf(fmt, value);
    printf("\n");
    if (ok) n_pass++; else n_fail++;
}

/** Σ(a−b)² / Σb² */
static double nmse(const float * a, const double * ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += (a[i] - ref[i]) * (a[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den == 0 ? num : num / den;
}

/** Deterministic values in [-1, 1): a 32-bit LCG, so every platform sees the same inputs. */
static float lcg(unsigned * s) {
    *s = *s * 1664525u + 1013904223u;
    return (float) ((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/** Which variant file did ggml's loader pick? Ask the library that holds the CPU registry. */
static void report_variant(wsp_ggml_backend_reg_t reg) {
    const char * (*variant_name)(void) = NULL;
    char path[1024] = "?";
#ifdef _WIN32
    HMODULE mod = NULL;
    if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCSTR) reg, &mod)) {
        GetModuleFileNameA(mod, path, sizeof(path));
        variant_name = (const char * (*)(void)) GetProcAddress(mod, "wsp_ggml_cpu_variant_name");
    }
#else
    Dl_info info;
    if (dladdr((const void *) reg, &info) && info.dli_fname) {
        snprintf(path, sizeof(path), "%s", info.dli_fname);
        void * h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        if (h) variant_name = (const char * (*)(void)) dlsym(h, "wsp_ggml_cpu_variant_name");
    }
#endif
    const char * base = strrchr(path, '/');
    const char * base2 = strrchr(path, '\\');
    if (base2 > base) base = base2;
    printf("cpu variant: %s (%s)\n", variant_name ? variant_name() : "?", base ? base + 1 : path);

    wsp_ggml_backend_get_features_t get_features =
        (wsp_ggml_backend_get_features_t) wsp_ggml_backend_reg_get_proc_address(reg, "wsp_ggml_backend_get_features");
    if (get_features) {
        printf("cpu features:");
        for (struct wsp_ggml_backend_feature * f = get_features(reg); f && f->name; f++) printf(" %s=%s", f->name, f->value);
        printf("\n");
    }
}

/** Reference matmul in ggml's convention: a is [K, M], b is [K, N], result [M, N]. */
static void ref_mul_mat(const float * a, const float * b, double * out, int K, int M, int N) {
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double) a[m * K + k] * b[n * K + k];
            out[n * M + m] = s;
        }
}

int main(int argc, char ** argv) {
    const char * dir = argc > 1 ? argv[1] : NULL;
    wsp_ggml_backend_load_all_from_path(dir);
    wsp_ggml_backend_reg_t reg = wsp_ggml_backend_reg_by_name("CPU");
    if (!reg) {
        fprintf(stderr, "no CPU backend loaded from %s: no libggml-cpu-* file there, or none scored > 0 on this CPU\n",
                dir ? dir : "the executable's folder");
        return 2;
    }
    report_variant(reg);

    wsp_ggml_backend_t backend = wsp_ggml_backend_dev_init(wsp_ggml_backend_reg_dev_get(reg, 0), NULL);
    wsp_ggml_backend_set_n_threads_t set_n_threads =
        (wsp_ggml_backend_set_n_threads_t) wsp_ggml_backend_reg_get_proc_address(reg, "wsp_ggml_backend_set_n_threads");
    if (set_n_threads) set_n_threads(backend, 2);

    // K is a multiple of the q8_0 block (32); sizes exercise the SIMD main loops and tails.
    enum { K = 96, M = 40, N = 24 };
    unsigned seed = 42;
    static float a[K * M], b[K * N], a_deq[K * M];
    for (int i = 0; i < K * M; i++) a[i] = lcg(&seed);
    for (int i = 0; i < K * N; i++) b[i] = lcg(&seed);

    // Hand-derived case: [[1,2,3],[4,5,6]] · [[7,8,9],[10,11,12]]ᵀ = [[50,68],[122,167]].
    const float ha[6] = { 1, 2, 3, 4, 5, 6 }, hb[6] = { 7, 8, 9, 10, 11, 12 };
    const double hc[4] = { 50, 122, 68, 167 };
    const float x[12] = { 1, 2, 3, 4, -1, -2, -3, -4, 0.5f, 0.25f, 10, -10 };
    const float y[4] = { 100, 200, 300, 400 };

    struct wsp_ggml_init_params params = {
        .mem_size = 32 * wsp_ggml_tensor_overhead() + wsp_ggml_graph_overhead(),
        .mem_buffer = NULL,
        .no_alloc = true,
    };
    struct wsp_ggml_context * ctx = wsp_ggml_init(params);
    struct wsp_ggml_tensor * tha = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, 3, 2);
    struct wsp_ggml_tensor * thb = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, 3, 2);
    struct wsp_ggml_tensor * ta32 = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, K, M);
    struct wsp_ggml_tensor * ta16 = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F16, K, M);
    struct wsp_ggml_tensor * taq8 = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_Q8_0, K, M);
    struct wsp_ggml_tensor * tb = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, K, N);
    struct wsp_ggml_tensor * tx = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, 4, 3);
    struct wsp_ggml_tensor * ty = wsp_ggml_new_tensor_1d(ctx, WSP_GGML_TYPE_F32, 4);

    struct wsp_ggml_tensor * hmm = wsp_ggml_mul_mat(ctx, tha, thb);
    struct wsp_ggml_tensor * mm32 = wsp_ggml_mul_mat(ctx, ta32, tb);
    struct wsp_ggml_tensor * mm16 = wsp_ggml_mul_mat(ctx, ta16, tb);
    struct wsp_ggml_tensor * mmq8 = wsp_ggml_mul_mat(ctx, taq8, tb);
    struct wsp_ggml_tensor * sum = wsp_ggml_add(ctx, tx, ty);  // ty broadcast over the rows of tx
    struct wsp_ggml_tensor * sm = wsp_ggml_soft_max(ctx, tx);

    struct wsp_ggml_cgraph * gf = wsp_ggml_new_graph(ctx);
    struct wsp_ggml_tensor * outs[] = { hmm, mm32, mm16, mmq8, sum, sm };
    for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) wsp_ggml_build_forward_expand(gf, outs[i]);

    wsp_ggml_backend_buffer_t buf = wsp_ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (!buf) {
        fprintf(stderr, "buffer allocation failed\n");
        return 2;
    }

    static wsp_ggml_fp16_t a16[K * M];
    static unsigned char aq8[K * M * 2];
    wsp_ggml_fp32_to_fp16_row(a, a16, K * M);
    size_t q8_size = wsp_ggml_wsp_quantize_chunk(WSP_GGML_TYPE_Q8_0, a, aq8, 0, M, K, NULL);
    // The q8_0 reference uses the dequantized weights: it checks the kernel, not quantization.
    wsp_ggml_get_type_traits(WSP_GGML_TYPE_Q8_0)->to_float(aq8, a_deq, K * M);
    static float a16f[K * M];
    wsp_ggml_fp16_to_fp32_row(a16, a16f, K * M);

    wsp_ggml_backend_tensor_set(tha, ha, 0, sizeof(ha));
    wsp_ggml_backend_tensor_set(thb, hb, 0, sizeof(hb));
    wsp_ggml_backend_tensor_set(ta32, a, 0, sizeof(a));
    wsp_ggml_backend_tensor_set(ta16, a16, 0, sizeof(a16));
    wsp_ggml_backend_tensor_set(taq8, aq8, 0, q8_size);
    wsp_ggml_backend_tensor_set(tb, b, 0, sizeof(b));
    wsp_ggml_backend_tensor_set(tx, x, 0, sizeof(x));
    wsp_ggml_backend_tensor_set(ty, y, 0, sizeof(y));

    if (wsp_ggml_backend_graph_compute(backend, gf) != WSP_GGML_STATUS_SUCCESS) {
        fprintf(stderr, "graph compute failed\n");
        return 2;
    }

    static float out[M * N];
    static double ref[M * N];

    wsp_ggml_backend_tensor_get(hmm, out, 0, 4 * sizeof(float));
    check("mul_mat f32 hand-derived 2x3·3x2", nmse(out, hc, 4) == 0, "nmse %.3g", nmse(out, hc, 4));

    ref_mul_mat(a, b, ref, K, M, N);
    wsp_ggml_backend_tensor_get(mm32, out, 0, sizeof(out));
    check("mul_mat f32 96x40·96x24", nmse(out, ref, M * N) <= 1e-7, "nmse %.3g (limit 1e-7)", nmse(out, ref, M * N));

    ref_mul_mat(a16f, b, ref, K, M, N);
    wsp_ggml_backend_tensor_get(mm16, out, 0, sizeof(out));
    check("mul_mat f16 weights", nmse(out, ref, M * N) <= 5e-4, "nmse %.3g (limit 5e-4)", nmse(out, ref, M * N));

    ref_mul_mat(a_deq, b, ref, K, M, N);
    wsp_ggml_backend_tensor_get(mmq8, out, 0, sizeof(out));
    check("mul_mat q8_0 weights", nmse(out, ref, M * N) <= 5e-4, "nmse %.3g (limit 5e-4)", nmse(out, ref, M * N));

    for (int i = 0; i < 12; i++) ref[i] = (double) x[i] + y[i % 4];
    wsp_ggml_backend_tensor_get(sum, out, 0, 12 * sizeof(float));
    check("add with row broadcast", nmse(out, ref, 12) <= 1e-7, "nmse %.3g (limit 1e-7)", nmse(out, ref, 12));

    double max_err = 0;
    for (int r = 0; r < 3; r++) {
        double mx = -INFINITY, s = 0;
        for (int c = 0; c < 4; c++) mx = fmax(mx, x[r * 4 + c]);
        for (int c = 0; c < 4; c++) s += exp(x[r * 4 + c] - mx);
        for (int c = 0; c < 4; c++) ref[r * 4 + c] = exp(x[r * 4 + c] - mx) / s;
    }
    wsp_ggml_backend_tensor_get(sm, out, 0, 12 * sizeof(float));
    for (int i = 0; i < 12; i++) max_err = fmax(max_err, fabs(out[i] - ref[i]));
    check("soft_max rows", max_err <= 1e-6, "max abs err %.3g (limit 1e-6)", max_err);

    wsp_ggml_backend_buffer_free(buf);
    wsp_ggml_free(ctx);
    wsp_ggml_backend_free(backend);

    printf("smoke: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
