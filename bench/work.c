// See work.h.
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#endif

#include "work.h"

#include <math.h>
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

float wsp_bench_lcg(uint32_t * s) {
    *s = *s * 1664525u + 1013904223u;
    return (float) ((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/** A normal deviate (Box–Muller) from the LCG. */
static float gaussian(uint32_t * s) {
    float u = (wsp_bench_lcg(s) + 1.0f) / 2.0f, v = (wsp_bench_lcg(s) + 1.0f) / 2.0f;
    return sqrtf(-2.0f * logf(1.0f - u * 0.999f)) * cosf(6.2831853f * v);
}

enum { TRAIN_MAX_LAYERS = 15 };

struct wsp_bench_trainer {
    wsp_ggml_backend_sched_t         sched;
    struct wsp_ggml_context *        ctx_static;
    struct wsp_ggml_context *        ctx_compute;
    wsp_ggml_backend_buffer_t        buf;
    wsp_ggml_opt_dataset_t           dataset;
    wsp_ggml_opt_context_t           opt;
    struct wsp_ggml_opt_optimizer_params pars;
    int                              ndata, batch;
};

static struct wsp_ggml_context * new_ctx(size_t mem, bool no_alloc) {
    struct wsp_ggml_init_params p = { .mem_size = mem, .mem_buffer = NULL, .no_alloc = no_alloc };
    return wsp_ggml_init(p);
}

wsp_bench_trainer * wsp_bench_train_new(wsp_ggml_backend_t backend, int hidden, int layers, int batch) {
    const int inputs = 2, classes = 3, per_class = 1000;
    if (layers < 0 || layers > TRAIN_MAX_LAYERS || hidden < 1 || batch < 1) return NULL;
    wsp_bench_trainer * t = calloc(1, sizeof *t);
    if (!t) return NULL;
    // The demo's data: 3 spiral arms of 1000 points, 20% held out; 2400 training points.
    int total = classes * per_class, n_test = (int) lround(total * 0.2), n_train_all = total - n_test;
    t->batch = batch;
    t->ndata = n_train_all / batch * batch;
    uint32_t seed = 1;

    t->sched = wsp_ggml_backend_sched_new(&backend, NULL, 1, WSP_GGML_DEFAULT_GRAPH_SIZE, false, true);
    t->ctx_static = new_ctx(16 * 512 + 4096, true);
    struct wsp_ggml_tensor * w[TRAIN_MAX_LAYERS + 1], * bias[TRAIN_MAX_LAYERS + 1];
    for (int l = 0; l <= layers; l++) {
        int n_in = l == 0 ? inputs : hidden, n_out = l == layers ? classes : hidden;
        w[l] = wsp_ggml_new_tensor_2d(t->ctx_static, WSP_GGML_TYPE_F32, n_in, n_out);
        bias[l] = wsp_ggml_new_tensor_1d(t->ctx_static, WSP_GGML_TYPE_F32, n_out);
    }
    struct wsp_ggml_tensor * input = wsp_ggml_new_tensor_2d(t->ctx_static, WSP_GGML_TYPE_F32, inputs, batch);
    wsp_ggml_set_input(input);
    t->buf = wsp_ggml_backend_alloc_ctx_tensors(t->ctx_static, backend);
    if (!t->buf) {
        wsp_bench_train_free(t);
        return NULL;
    }
    for (int l = 0; l <= layers; l++) {
        int64_t nw = wsp_ggml_nelements(w[l]), nb = wsp_ggml_nelements(bias[l]);
        float * v = malloc(sizeof(float) * nw);
        float sd = sqrtf(2.0f / (float) w[l]->ne[0]);
        for (int64_t i = 0; i < nw; i++) v[i] = sd * gaussian(&seed);
        wsp_ggml_backend_tensor_set(w[l], v, 0, sizeof(float) * nw);
        free(v);
        wsp_ggml_backend_tensor_memset(bias[l], 0, 0, sizeof(float) * nb);
        wsp_ggml_set_param(w[l]);
        wsp_ggml_set_param(bias[l]);
    }
    size_t mem = 2048 * 512 + 4096 + 3 * wsp_ggml_graph_overhead_custom(2048, true);
    t->ctx_compute = new_ctx(mem, true);
    struct wsp_ggml_tensor * h = input;
    for (int l = 0; l <= layers; l++) {
        h = wsp_ggml_add(t->ctx_compute, wsp_ggml_mul_mat(t->ctx_compute, w[l], h), bias[l]);
        if (l < layers) h = wsp_ggml_relu(t->ctx_compute, h);
    }
    wsp_ggml_set_output(h);

    t->dataset = wsp_ggml_opt_dataset_init(WSP_GGML_TYPE_F32, WSP_GGML_TYPE_F32, inputs, classes, t->ndata, 1);
    float * x = (float *) wsp_ggml_opt_dataset_data(t->dataset)->data;
    float * y = (float *) wsp_ggml_opt_dataset_labels(t->dataset)->data;
    for (int i = 0; i < t->ndata; i++) {
        int c = i % classes;
        float r = (float) (i / classes + 1) / (float) per_class;
        float theta = 6.2831853f * (float) c / classes + 6.2831853f * 2 * r;
        x[2 * i] = r * cosf(theta) + 0.02f * gaussian(&seed);
        x[2 * i + 1] = r * sinf(theta) + 0.02f * gaussian(&seed);
        for (int k = 0; k < classes; k++) y[classes * i + k] = k == c ? 1.0f : 0.0f;
    }

    t->pars = wsp_ggml_opt_get_default_optimizer_params(NULL);
    t->pars.adamw.alpha = 0.005f;
    struct wsp_ggml_opt_params params = wsp_ggml_opt_default_params(t->sched, WSP_GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    params.ctx_compute = t->ctx_compute;
    params.inputs = input;
    params.outputs = h;
    params.optimizer = WSP_GGML_OPT_OPTIMIZER_TYPE_ADAMW;
    params.get_opt_pars = wsp_ggml_opt_get_constant_optimizer_params;
    params.get_opt_pars_ud = &t->pars;
    t->opt = wsp_ggml_opt_init(params);
    return t;
}

int wsp_bench_train_steps(const wsp_bench_trainer * t) {
    return t->ndata / t->batch;
}

double wsp_bench_train_epoch(wsp_bench_trainer * t, double * loss) {
    wsp_ggml_opt_result_t train = wsp_ggml_opt_result_init(), eval = wsp_ggml_opt_result_init();
    double t0 = wsp_bench_now_ns();
    wsp_ggml_opt_epoch(t->opt, t->dataset, train, eval, t->ndata, NULL, NULL);
    wsp_ggml_backend_sched_reset(t->sched);
    double dt = wsp_bench_now_ns() - t0;
    double unc;
    wsp_ggml_opt_result_loss(train, loss, &unc);
    wsp_ggml_opt_result_free(train);
    wsp_ggml_opt_result_free(eval);
    return dt;
}

void wsp_bench_train_free(wsp_bench_trainer * t) {
    if (!t) return;
    if (t->opt) wsp_ggml_opt_free(t->opt);
    if (t->dataset) wsp_ggml_opt_dataset_free(t->dataset);
    if (t->ctx_compute) wsp_ggml_free(t->ctx_compute);
    if (t->buf) wsp_ggml_backend_buffer_free(t->buf);
    if (t->ctx_static) wsp_ggml_free(t->ctx_static);
    if (t->sched) wsp_ggml_backend_sched_free(t->sched);
    free(t);
}

void * wsp_bench_alloc(size_t bytes) {
    return malloc(bytes);
}

void wsp_bench_free(void * p) {
    free(p);
}
