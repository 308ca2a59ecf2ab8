// The timed work of the C reference, shared by the driver (bench/driver.c, its own process) and
// libwsp-bench-work, which the TS cases load to time the same C beside the binding in one process
// (bench/cases.ts): on this VM a process's speed is bimodal, so a ratio of two processes carries
// that noise and a ratio within one process does not.
#pragma once

#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-opt.h"

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#    define WSP_BENCH_API __declspec(dllexport)
#else
#    define WSP_BENCH_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Nanoseconds from a monotonic clock. */
WSP_BENCH_API double wsp_bench_now_ns(void);

/** Graph nodes of the MLP graph (bench `graph`), for the pool of its context. */
enum { WSP_BENCH_GRAPH_SIZE = 2048 };

/** Bytes of the no_alloc context one MLP graph of `layers` layers needs. */
WSP_BENCH_API size_t wsp_bench_graph_mem(int layers);

/**
 * Builds `n` MLP graphs (`layers` × relu(add(mul_mat(W, h), b)), hidden × batch), each in a fresh
 * no_alloc context over `buf` (wsp_bench_graph_mem(layers) bytes), then frees it. Returns ns per
 * graph; `*nodes` gets the last graph's node count.
 */
WSP_BENCH_API double wsp_bench_graphs(int layers, int hidden, int batch, int64_t n, void * buf, int * nodes);

/** One compute of `gf` on `backend`: its ns, or -1 when it fails. */
WSP_BENCH_API double wsp_bench_compute(wsp_ggml_backend_t backend, struct wsp_ggml_cgraph * gf);

/** Deterministic values in [-1, 1): the 32-bit LCG of bench/cases.ts (`lcgFill`). */
WSP_BENCH_API float wsp_bench_lcg(uint32_t * s);

/** The demo's training (bench `train`): model, data and optimizer; see wsp_bench_train_new. */
typedef struct wsp_bench_trainer wsp_bench_trainer;

/**
 * The demo's MLP (2 → hidden ×layers → 3, relu) on 3 spiral arms (2400 training points), ggml-opt
 * AdamW (lr 0.005) with cross-entropy, through a scheduler over the CPU `backend`, which the caller
 * made, set up (threads, threadpool, abort callback) and frees after wsp_bench_train_free. NULL
 * for sizes out of range (layers 0..15, hidden and batch >= 1) or when the weights' buffer cannot
 * be allocated; the other steps' failures abort in ggml, as in the driver before.
 */
WSP_BENCH_API wsp_bench_trainer * wsp_bench_train_new(wsp_ggml_backend_t backend, int hidden, int layers, int batch);

/** Optimizer steps per epoch. */
WSP_BENCH_API int wsp_bench_train_steps(const wsp_bench_trainer * t);

/** One epoch (wsp_ggml_opt_epoch, then a scheduler reset): its ns; `*loss` gets its training loss. */
WSP_BENCH_API double wsp_bench_train_epoch(wsp_bench_trainer * t, double * loss);

WSP_BENCH_API void wsp_bench_train_free(wsp_bench_trainer * t);

/** malloc / free for callers without a C heap of their own (the TS cases). */
WSP_BENCH_API void * wsp_bench_alloc(size_t bytes);
WSP_BENCH_API void   wsp_bench_free(void * p);

#ifdef __cplusplus
}
#endif
