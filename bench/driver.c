// The C reference of the benchmarks in bench/: the same work as each TS benchmark (bench/cases.ts),
// through the same libwsp-ggml, timed the same way (a warm-up sample, then `reps` samples of `n`
// iterations each; the runner takes the median). Prints one JSON object on stdout.
//
// matmul warms up for at least `warm_ms` [2000] ms of its own work, not for one sample. On the
// 2-vCPU VM this runs on (its kernel boots with sched_vcpu_pack), the worker thread that every
// graph_compute starts anew often lands on the main thread's vCPU in a young process, and a 2-thread
// compute then runs at about 1-thread speed (f32 512: 8 ms, not 4.5) until the process has kept both
// vCPUs busy for a while. Spawned from the bench runner (node), 500 ms of warm-up still left 2 of 6
// processes at 2-3x (f16 512: 10-14 ms, not 4.1); 2000 ms left none, so every side warms up that long. The TS runtimes spend 70–900 ms starting up (JIT, modules, generating the
// data in JS) before their one warm-up sample; C, which measured a few ms after exec, caught that
// phase instead. (train keeps one warm-up epoch, as on the TS side: more would train the model on.)
//
//   wsp-bench LIBDIR BENCH [key=value ...]
//
// LIBDIR holds libwsp-ggml and the libggml-cpu-* variants; ggml's loader picks the variant that
// scores highest on this CPU, as the TS loader does (the JSON names it, so the runner can check
// that both sides ran the same code). Benchmarks and their keys (defaults in brackets):
//
//   nelements | nbytes   n [1000000] reps [15]   one call per iteration on a 2-D f32 tensor
//   add                  n [100000] reps [15]    wsp_ggml_add in a no_alloc context, reset every 1000 nodes
//   shape                n [1000000] reps [15]   nelements + nrows + nbytes + n_dims calls, and ne[] reads
//   graph                layers [334] hidden [64] batch [32] n [20] reps [15] warm_ms [500]
//                        a no_alloc context, 2·layers weights, layers × relu(add(mul_mat)), a graph of
//                        2048 nodes, build_forward_expand, free — per iteration
//   matmul               type [f32] size [512] threads [2] reps [5] warm_ms [2000]
//                        one graph compute per sample
//   memcpy               bytes [67108864] reps [9]   memcpy between two preallocated buffers
//   train                epochs [4] hidden [64] layers [2] batch [32] threads [2]
//                        the demo's MLP on spirals, ggml-opt AdamW, one sample per epoch
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#endif
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-opt.h"
#include "work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef _WIN32
#    include <dlfcn.h>
#endif

#define MAX_SAMPLES 256

static int    g_argc;
static char ** g_argv;

/** The integer parameter `key=value` from the command line, or `def`. */
static long long param(const char * key, long long def) {
    size_t n = strlen(key);
    for (int i = 3; i < g_argc; i++)
        if (strncmp(g_argv[i], key, n) == 0 && g_argv[i][n] == '=') return atoll(g_argv[i] + n + 1);
    return def;
}

static const char * param_str(const char * key, const char * def) {
    size_t n = strlen(key);
    for (int i = 3; i < g_argc; i++)
        if (strncmp(g_argv[i], key, n) == 0 && g_argv[i][n] == '=') return g_argv[i] + n + 1;
    return def;
}

static double now_ns(void) {
    return wsp_bench_now_ns();
}

static int cmp_double(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static wsp_ggml_backend_reg_t g_reg;
static const char *           g_variant = "?";

/** Prints the result: samples in ns per iteration, their median, and the facts the runner checks. */
static void report(const char * bench, const char * label, double * samples, int reps, long long n, double extra) {
    double sorted[MAX_SAMPLES];
    memcpy(sorted, samples, sizeof(double) * reps);
    qsort(sorted, reps, sizeof(double), cmp_double);
    double median = reps % 2 ? sorted[reps / 2] : (sorted[reps / 2 - 1] + sorted[reps / 2]) / 2;
    printf("{\"bench\":\"%s\",\"label\":\"%s\",\"side\":\"c\",\"variant\":\"%s\",\"n\":%lld,\"reps\":%d,\"median_ns\":%.4f,"
           "\"min_ns\":%.4f,\"extra\":%.6g,\"samples_ns\":[",
           bench, label, g_variant, n, reps, median, sorted[0], extra);
    for (int i = 0; i < reps; i++) printf("%s%.4f", i ? "," : "", samples[i]);
    printf("]}\n");
}

static int clamp_reps(long long reps) {
    return reps < 1 ? 1 : reps > MAX_SAMPLES ? MAX_SAMPLES : (int) reps;
}

static struct wsp_ggml_context * new_ctx(size_t mem, bool no_alloc) {
    struct wsp_ggml_init_params p = { .mem_size = mem, .mem_buffer = NULL, .no_alloc = no_alloc };
    return wsp_ggml_init(p);
}

static volatile int64_t g_sink;

/**
 * Whether the untimed warm-up that began at `t0` is over (asked after each warm-up iteration, so
 * there is at least one): `warm_ms` milliseconds have passed (see the top of the file for why
 * matmul needs it).
 */
static bool warmed_up(double t0, long long default_ms) {
    return now_ns() - t0 >= (double) param("warm_ms", default_ms) * 1e6;
}

// ---- per-call ---------------------------------------------------------------------------------

static void bench_call(const char * which) {
    long long n = param("n", 1000000);
    int reps = clamp_reps(param("reps", 15));
    struct wsp_ggml_context * ctx = new_ctx(16 * wsp_ggml_tensor_overhead() + 2 * 64 * 32 * 4 + 1024, false);
    // Two tensors used alternately, as the TS side does (there, so that no JIT hoists the query).
    struct wsp_ggml_tensor * t[2] = { wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, 64, 32), wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, 64, 32) };
    double samples[MAX_SAMPLES];
    int nelements = strcmp(which, "nelements") == 0;
    for (int r = -1; r < reps; r++) {
        int64_t acc = 0;
        double t0 = now_ns();
        if (nelements)
            for (long long i = 0; i < n; i++) acc += wsp_ggml_nelements(t[i & 1]);
        else
            for (long long i = 0; i < n; i++) acc += (int64_t) wsp_ggml_nbytes(t[i & 1]);
        double dt = now_ns() - t0;
        g_sink = acc;
        if (r >= 0) samples[r] = dt / n;
    }
    report(which, nelements ? "wsp_ggml_nelements" : "wsp_ggml_nbytes", samples, reps, n, 0);
    wsp_ggml_free(ctx);
}

enum { ADD_BATCH = 1000 };

static void bench_add(void) {
    long long n = param("n", 100000);
    int reps = clamp_reps(param("reps", 15));
    // a and b live in their own context; the nodes go to ops, reset every ADD_BATCH nodes.
    struct wsp_ggml_context * src = new_ctx(4 * wsp_ggml_tensor_overhead(), true);
    struct wsp_ggml_context * ops = new_ctx((ADD_BATCH + 8) * wsp_ggml_tensor_overhead(), true);
    struct wsp_ggml_tensor * a = wsp_ggml_new_tensor_2d(src, WSP_GGML_TYPE_F32, 64, 32);
    struct wsp_ggml_tensor * b = wsp_ggml_new_tensor_2d(src, WSP_GGML_TYPE_F32, 64, 32);
    double samples[MAX_SAMPLES];
    for (int r = -1; r < reps; r++) {
        double t0 = now_ns();
        for (long long i = 0; i < n; i++) {
            if (i % ADD_BATCH == 0) wsp_ggml_reset(ops);
            g_sink = (int64_t) (intptr_t) wsp_ggml_add(ops, a, b);
        }
        double dt = now_ns() - t0;
        if (r >= 0) samples[r] = dt / n;
    }
    report("add", "wsp_ggml_add (no_alloc)", samples, reps, n, 0);
    wsp_ggml_free(ops);
    wsp_ggml_free(src);
}

static void bench_shape(void) {
    long long n = param("n", 1000000);
    int reps = clamp_reps(param("reps", 15));
    struct wsp_ggml_context * ctx = new_ctx(4 * wsp_ggml_tensor_overhead(), true);
    struct wsp_ggml_tensor * t[2] = { wsp_ggml_new_tensor_3d(ctx, WSP_GGML_TYPE_F32, 64, 32, 3), wsp_ggml_new_tensor_3d(ctx, WSP_GGML_TYPE_F32, 64, 32, 3) };
    double calls[MAX_SAMPLES], reads[MAX_SAMPLES];
    for (int r = -1; r < reps; r++) {
        int64_t acc = 0;
        double t0 = now_ns();
        for (long long i = 0; i < n; i++) {
            struct wsp_ggml_tensor * p = t[i & 1];
            acc += wsp_ggml_nelements(p) + wsp_ggml_nrows(p) + (int64_t) wsp_ggml_nbytes(p) + wsp_ggml_n_dims(p);
        }
        double t1 = now_ns();
        // The struct read a C caller makes: the four ne[] through a pointer the compiler must reload.
        struct wsp_ggml_tensor * volatile tv[2] = { t[0], t[1] };
        for (long long i = 0; i < n; i++) {
            struct wsp_ggml_tensor * p = tv[i & 1];
            acc += p->ne[0] + p->ne[1] + p->ne[2] + p->ne[3];
        }
        double t2 = now_ns();
        g_sink = acc;
        if (r >= 0) {
            calls[r] = (t1 - t0) / n;
            reads[r] = (t2 - t1) / n;
        }
    }
    report("shape", "4 calls (nelements+nrows+nbytes+n_dims)", calls, reps, n, 0);
    report("shape-ne", "ne[0..3] struct reads", reads, reps, n, 0);
    wsp_ggml_free(ctx);
}

// ---- graph construction -----------------------------------------------------------------------

static void bench_graph(void) {
    int layers = (int) param("layers", 334), hidden = (int) param("hidden", 64), batch = (int) param("batch", 32);
    long long n = param("n", 20);
    int reps = clamp_reps(param("reps", 15));
    double samples[MAX_SAMPLES];
    int nodes = 0;
    // One buffer for every graph's context, as llama.cpp keeps buf_compute_meta (and as the API
    // recycles a freed pool): a fresh malloc of this size is mmap'd and page-faulted in on some
    // iterations and not others, which made this reference swing between ~120 and ~215 µs.
    void * buf = malloc(wsp_bench_graph_mem(layers));
    if (buf == NULL) return;
    double w0 = now_ns();
    for (int r = -1; r < reps; r++) {
        double dt = wsp_bench_graphs(layers, hidden, batch, n, buf, &nodes);
        if (r >= 0) samples[r] = dt;
        else if (!warmed_up(w0, 500)) r--; // the same time-based warm-up as the TS side's
    }
    free(buf);
    report("graph", "build a graph", samples, reps, n, nodes);
}

// ---- compute ----------------------------------------------------------------------------------

static wsp_ggml_backend_t cpu_backend(int threads) {
    wsp_ggml_backend_t backend = wsp_ggml_backend_dev_init(wsp_ggml_backend_reg_dev_get(g_reg, 0), NULL);
    wsp_ggml_backend_set_n_threads_t set_n_threads =
        (wsp_ggml_backend_set_n_threads_t) wsp_ggml_backend_reg_get_proc_address(g_reg, "wsp_ggml_backend_set_n_threads");
    if (set_n_threads) set_n_threads(backend, threads);
    return backend;
}

/**
 * A persistent threadpool of `threads` attached to the CPU `backend` (the TS side's
 * `Backend.cpu({ threadpool })`): its threads live between computes instead of being started and
 * joined by each one. Free it with threadpool_free after the backend.
 */
static struct wsp_ggml_threadpool * attach_threadpool(wsp_ggml_backend_t backend, int threads) {
    typedef struct wsp_ggml_threadpool * (*new_t)(struct wsp_ggml_threadpool_params *);
    typedef void (*set_t)(wsp_ggml_backend_t, struct wsp_ggml_threadpool *);
    new_t tp_new = (new_t) wsp_ggml_backend_reg_get_proc_address(g_reg, "wsp_ggml_threadpool_new");
    set_t tp_set = (set_t) wsp_ggml_backend_reg_get_proc_address(g_reg, "wsp_ggml_backend_cpu_set_threadpool");
    if (!tp_new || !tp_set) {
        fprintf(stderr, "the CPU backend has no threadpool functions\n");
        exit(2);
    }
    struct wsp_ggml_threadpool_params params = wsp_ggml_threadpool_params_default(threads);
    struct wsp_ggml_threadpool * pool = tp_new(&params);
    tp_set(backend, pool);
    return pool;
}

static void threadpool_free(struct wsp_ggml_threadpool * pool) {
    typedef void (*free_t)(struct wsp_ggml_threadpool *);
    free_t tp_free = (free_t) wsp_ggml_backend_reg_get_proc_address(g_reg, "wsp_ggml_threadpool_free");
    if (pool && tp_free) tp_free(pool);
}

static enum wsp_ggml_type type_by_name(const char * name) {
    for (int t = 0; t < WSP_GGML_TYPE_COUNT; t++) {
        const char * tn = wsp_ggml_type_name((enum wsp_ggml_type) t);
        if (tn && wsp_ggml_blck_size((enum wsp_ggml_type) t) > 0 && strcmp(tn, name) == 0) return (enum wsp_ggml_type) t;
    }
    fprintf(stderr, "unknown type %s\n", name);
    exit(2);
}

static void bench_matmul(void) {
    const char * tname = param_str("type", "f32");
    enum wsp_ggml_type type = type_by_name(tname);
    int size = (int) param("size", 512), threads = (int) param("threads", 2);
    int reps = clamp_reps(param("reps", 5));
    size_t elems = (size_t) size * size;
    size_t mem = 3 * elems * sizeof(float) + wsp_ggml_row_size(type, size) * size + 16 * wsp_ggml_tensor_overhead() + wsp_ggml_graph_overhead() + (1 << 20);
    struct wsp_ggml_context * ctx = new_ctx(mem, false);
    // a [size, size] of `type` (the weights), b [size, size] f32; c = a^T b, 2·size³ flops.
    struct wsp_ggml_tensor * a = wsp_ggml_new_tensor_2d(ctx, type, size, size);
    struct wsp_ggml_tensor * b = wsp_ggml_new_tensor_2d(ctx, WSP_GGML_TYPE_F32, size, size);
    uint32_t seed = 42;
    float * af = malloc(elems * sizeof(float));
    for (size_t i = 0; i < elems; i++) af[i] = wsp_bench_lcg(&seed);
    float * bf = (float *) b->data;
    for (size_t i = 0; i < elems; i++) bf[i] = wsp_bench_lcg(&seed);
    if (type == WSP_GGML_TYPE_F32) memcpy(a->data, af, elems * sizeof(float));
    else if (type == WSP_GGML_TYPE_F16) wsp_ggml_fp32_to_fp16_row(af, a->data, (int64_t) elems);
    else wsp_ggml_wsp_quantize_chunk(type, af, a->data, 0, size, size, NULL);
    free(af);
    struct wsp_ggml_tensor * c = wsp_ggml_mul_mat(ctx, a, b);
    struct wsp_ggml_cgraph * gf = wsp_ggml_new_graph(ctx);
    wsp_ggml_build_forward_expand(gf, c);
    wsp_ggml_backend_t backend = cpu_backend(threads);
    double samples[MAX_SAMPLES];
    double w0 = now_ns();
    for (int r = -1; r < reps; r++) {
        double dt = wsp_bench_compute(backend, gf);
        if (dt < 0) {
            fprintf(stderr, "compute failed\n");
            exit(2);
        }
        if (r >= 0) samples[r] = dt;
        else if (!warmed_up(w0, 2000)) r--; // still warming up: this was not a sample either
    }
    double check = 0;
    for (int i = 0; i < 16; i++) check += ((float *) c->data)[i];
    char label[64];
    snprintf(label, sizeof(label), "matmul %s %d", tname, size);
    report("matmul", label, samples, reps, 1, check);
    wsp_ggml_backend_free(backend);
    wsp_ggml_free(ctx);
}

// ---- data movement ----------------------------------------------------------------------------

static void bench_memcpy(void) {
    size_t bytes = (size_t) param("bytes", 64ll << 20);
    int reps = clamp_reps(param("reps", 9));
    unsigned char * src = malloc(bytes), * dst = malloc(bytes);
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    double samples[MAX_SAMPLES];
    for (int r = -1; r < reps; r++) {
        src[r & 1023] = (unsigned char) r;
        double t0 = now_ns();
        memcpy(dst, src, bytes);
        double dt = now_ns() - t0;
        g_sink = dst[r & 1023];
        if (r >= 0) samples[r] = dt;
    }
    report("memcpy", "memcpy 64 MiB", samples, reps, 1, 0);
    free(src);
    free(dst);
}

// ---- training ---------------------------------------------------------------------------------

static void bench_train(void) {
    int epochs = (int) param("epochs", 4), hidden = (int) param("hidden", 64), layers = (int) param("layers", 2);
    int batch = (int) param("batch", 32), threads = (int) param("threads", 2);
    int with_pool = (int) param("pool", 0);
    wsp_ggml_backend_t backend = cpu_backend(threads);
    struct wsp_ggml_threadpool * pool = with_pool ? attach_threadpool(backend, threads) : NULL;
    // As the TS Backend.cpu does: an abort callback, checked after every node (it reads a context's
    // no_alloc flag, which stays false).
    struct wsp_ggml_context * abort_flag = new_ctx(256, false);
    wsp_ggml_backend_set_abort_callback_t set_abort =
        (wsp_ggml_backend_set_abort_callback_t) wsp_ggml_backend_reg_get_proc_address(g_reg, "wsp_ggml_backend_set_abort_callback");
    if (set_abort) set_abort(backend, (wsp_ggml_abort_callback) wsp_ggml_get_no_alloc, abort_flag);
    wsp_bench_trainer * trainer = wsp_bench_train_new(backend, hidden, layers, batch);
    if (!trainer) {
        fprintf(stderr, "train: the set-up failed\n");
        exit(2);
    }
    int steps = wsp_bench_train_steps(trainer), reps = clamp_reps(epochs);
    double samples[MAX_SAMPLES];
    double loss = 0;
    for (int r = -1; r < reps; r++) {
        double dt = wsp_bench_train_epoch(trainer, &loss);
        if (r >= 0) samples[r] = dt / steps;
    }
    char label[64];
    snprintf(label, sizeof(label), "one optimizer step, %d thread%s%s", threads, threads == 1 ? "" : "s", pool ? ", threadpool" : "");
    report("train", label, samples, reps, steps, loss);
    wsp_bench_train_free(trainer);
    wsp_ggml_backend_free(backend);
    threadpool_free(pool);
    wsp_ggml_free(abort_flag);
}

// ---- main -------------------------------------------------------------------------------------

static void quiet_log(enum wsp_ggml_log_level level, const char * text, void * user) {
    (void) user;
    if (level >= WSP_GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

int main(int argc, char ** argv) {
    g_argc = argc;
    g_argv = argv;
    if (argc < 3) {
        fprintf(stderr, "usage: wsp-bench LIBDIR BENCH [key=value ...]\n"
                        "  BENCH: nelements nbytes add shape graph matmul memcpy train\n");
        return 2;
    }
    wsp_ggml_log_set(quiet_log, NULL);
    wsp_ggml_backend_load_all_from_path(argv[1]);
    g_reg = wsp_ggml_backend_reg_by_name("CPU");
    if (!g_reg) {
        fprintf(stderr, "no CPU backend variant in %s can run on this CPU\n", argv[1]);
        return 2;
    }
#ifndef _WIN32
    // The variant ggml's loader chose: ask the library that holds the CPU registry (as native/smoke does).
    Dl_info info;
    if (dladdr((const void *) g_reg, &info) && info.dli_fname) {
        void * h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        const char * (*variant_name)(void) = h ? (const char * (*)(void)) dlsym(h, "wsp_ggml_cpu_variant_name") : NULL;
        if (variant_name) g_variant = variant_name();
    }
#endif
    const char * b = argv[2];
    if (strcmp(b, "nelements") == 0 || strcmp(b, "nbytes") == 0) bench_call(b);
    else if (strcmp(b, "add") == 0) bench_add();
    else if (strcmp(b, "shape") == 0) bench_shape();
    else if (strcmp(b, "graph") == 0) bench_graph();
    else if (strcmp(b, "matmul") == 0) bench_matmul();
    else if (strcmp(b, "memcpy") == 0) bench_memcpy();
    else if (strcmp(b, "train") == 0) bench_train();
    else {
        fprintf(stderr, "unknown benchmark %s\n", b);
        return 2;
    }
    return 0;
}
