// The timed work of the C reference, shared by the driver (bench/driver.c, its own process) and
// libwsp-bench-work, which the TS cases load to time the same C beside the binding in one process
// (bench/cases.ts): on this VM a process's speed is bimodal, so a ratio of two processes carries
// that noise and a ratio within one process does not.
#pragma once

#include "ggml.h"
#include "ggml-backend.h"

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

/** malloc / free for callers without a C heap of their own (the TS cases). */
WSP_BENCH_API void * wsp_bench_alloc(size_t bytes);
WSP_BENCH_API void   wsp_bench_free(void * p);

#ifdef __cplusplus
}
#endif
