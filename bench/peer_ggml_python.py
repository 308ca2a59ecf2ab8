"""The peer: the per-call, graph-construction and matmul benchmarks of bench/ through
ggml-python (the ctypes binding of ggml, from PyPI), doing the same work as bench/driver.c
and bench/cases.ts. Prints one JSON object per figure, in the driver's shape.

    .bench-venv/bin/python bench/peer_ggml_python.py BENCH [key=value ...]

BENCH: nelements nbytes add shape graph matmul. ggml-python carries its own ggml (a newer
upstream, unprefixed symbols), so compute figures compare two builds of ggml as well as two
bindings; per-call and graph figures compare the bindings' call paths.
"""
import ctypes
import json
import sys
import time

import numpy as np
import ggml.ggml as g
import ggml.utils as gu

ARGS = dict(a.split("=", 1) for a in sys.argv[2:])


def num(key, default):
    return int(ARGS.get(key, default))


def median(xs):
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def measure(bench, label, n, reps, once, extra=0, budget_ns=25e6, warm_ns=0):
    """One warm-up, then `reps` samples of `once(n)` (elapsed ns of n iterations) / n; fewer
    iterations per sample when the warm-up exceeds `budget_ns`, and more warm-up until `warm_ns`
    have passed (as bench/cases.ts does)."""
    warm = once(n)
    if warm > budget_ns and n > 1:
        n = max(1, round(n * budget_ns / warm))
    w0 = time.perf_counter_ns()
    while time.perf_counter_ns() - w0 < warm_ns:
        once(n)
    samples = [once(n) / n for _ in range(reps)]
    print(json.dumps({"bench": bench, "label": label, "side": "ggml-python", "variant": "ggml-python", "n": n,
                      "reps": reps, "median_ns": median(samples), "min_ns": min(samples), "extra": extra,
                      "samples_ns": samples}))


def new_ctx(mem, no_alloc):
    return g.ggml_init(g.ggml_init_params(mem_size=mem, mem_buffer=None, no_alloc=no_alloc))


def call(which):
    n, reps = num("n", 200000), num("reps", 15)
    ctx = new_ctx(16 * g.ggml_tensor_overhead() + 64 * 32 * 4 + 1024, False)
    t = g.ggml_new_tensor_2d(ctx, g.GGML_TYPE_F32, 64, 32)
    f = g.ggml_nelements if which == "nelements" else g.ggml_nbytes

    def once(n=n):
        acc = 0
        t0 = time.perf_counter_ns()
        for _ in range(n):
            acc += f(t)
        return time.perf_counter_ns() - t0

    measure(which, f"ggml_{which}", n, reps, once)
    g.ggml_free(ctx)


def add():
    n, reps = num("n", 50000), num("reps", 15)
    batch = 1000
    src = new_ctx(4 * g.ggml_tensor_overhead(), True)
    ops = new_ctx((batch + 8) * g.ggml_tensor_overhead(), True)
    a = g.ggml_new_tensor_2d(src, g.GGML_TYPE_F32, 64, 32)
    b = g.ggml_new_tensor_2d(src, g.GGML_TYPE_F32, 64, 32)
    f, reset = g.ggml_add, g.ggml_reset

    def once(n=n):
        t0 = time.perf_counter_ns()
        for i in range(n):
            if i % batch == 0:
                reset(ops)
            f(ops, a, b)
        return time.perf_counter_ns() - t0

    measure("add", "ggml_add (no_alloc)", n, reps, once)
    g.ggml_free(ops)
    g.ggml_free(src)


def shape():
    n, reps = num("n", 200000), num("reps", 15)
    ctx = new_ctx(4 * g.ggml_tensor_overhead(), True)
    t = g.ggml_new_tensor_3d(ctx, g.GGML_TYPE_F32, 64, 32, 3)
    ne, nr, nb, nd = g.ggml_nelements, g.ggml_nrows, g.ggml_nbytes, g.ggml_n_dims

    def calls(n=n):
        acc = 0
        t0 = time.perf_counter_ns()
        for _ in range(n):
            acc += ne(t) + nr(t) + nb(t) + nd(t)
        return time.perf_counter_ns() - t0

    def reads(n=n):
        acc = 0
        t0 = time.perf_counter_ns()
        for _ in range(n):
            s = t.contents.ne  # the struct through ctypes, as ggml.utils.get_shape reads it
            acc += s[0] + s[1] + s[2] + s[3]
        return time.perf_counter_ns() - t0

    measure("shape", "4 calls (nelements+nrows+nbytes+n_dims)", n, reps, calls)
    measure("shape-ne", "t.contents.ne[0..3] (ctypes struct)", n, reps, reads)
    g.ggml_free(ctx)


def graph():
    layers, hidden, batch = num("layers", 334), num("hidden", 64), num("batch", 32)
    n, reps = num("n", 5), num("reps", 15)
    size = 2048
    mem = (5 * layers + 8) * g.ggml_tensor_overhead() + g.ggml_graph_overhead_custom(size, False)
    nodes = [0]

    def once(n=n):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            ctx = new_ctx(mem, True)
            h = g.ggml_new_tensor_2d(ctx, g.GGML_TYPE_F32, hidden, batch)
            for _ in range(layers):
                w = g.ggml_new_tensor_2d(ctx, g.GGML_TYPE_F32, hidden, hidden)
                bias = g.ggml_new_tensor_1d(ctx, g.GGML_TYPE_F32, hidden)
                h = g.ggml_relu(ctx, g.ggml_add(ctx, g.ggml_mul_mat(ctx, w, h), bias))
            gf = g.ggml_new_graph_custom(ctx, size, False)
            g.ggml_build_forward_expand(gf, h)
            nodes[0] = g.ggml_graph_n_nodes(gf)
            g.ggml_free(ctx)
        return time.perf_counter_ns() - t0

    once()  # the node count, for `extra`
    measure("graph", "build a graph", n, reps, once, nodes[0])


def lcg(count, state):
    """The 32-bit LCG of bench/driver.c: values in [-1, 1). Blocks of K values advance by the
    K-step jump (s -> A s + C mod 2^32), which numpy does for a whole block at once."""
    a, c, k, mask = 1664525, 1013904223, 4096, 0xFFFFFFFF
    first = np.empty(k, dtype=np.uint64)
    s = state[0]
    for i in range(k):
        s = (a * s + c) & mask
        first[i] = s
    big_a, big_c = 1, 0
    for _ in range(k):
        big_a, big_c = (a * big_a) & mask, (a * big_c + c) & mask
    blocks = [first]
    while len(blocks) * k < count:
        blocks.append((blocks[-1] * np.uint64(big_a) + np.uint64(big_c)) & np.uint64(mask))
    vals = np.concatenate(blocks)[:count]
    state[0] = int(vals[-1])
    return (((vals >> np.uint64(8)) & np.uint64(0xFFFF)).astype(np.float32) / np.float32(32768.0) - np.float32(1.0)).astype(np.float32)


def matmul():
    tname = ARGS.get("type", "f32")
    types = {"f32": g.GGML_TYPE_F32, "f16": g.GGML_TYPE_F16, "q8_0": g.GGML_TYPE_Q8_0, "q4_0": g.GGML_TYPE_Q4_0}
    typ = types[tname]
    size, threads, reps = num("size", 512), num("threads", 2), num("reps", 5)
    elems = size * size
    ctx = new_ctx(4 * elems * 4 + 16 * g.ggml_tensor_overhead() + g.ggml_graph_overhead() + (1 << 20), False)
    a = g.ggml_new_tensor_2d(ctx, typ, size, size)
    b = g.ggml_new_tensor_2d(ctx, g.GGML_TYPE_F32, size, size)
    state = [42]
    af = lcg(elems, state)
    bf = lcg(elems, state)
    ctypes.memmove(g.ggml_get_data(b), bf.ctypes.data, bf.nbytes)
    if typ == g.GGML_TYPE_F32:
        ctypes.memmove(g.ggml_get_data(a), af.ctypes.data, af.nbytes)
    elif typ == g.GGML_TYPE_F16:
        g.ggml_fp32_to_fp16_row(af.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                ctypes.cast(g.ggml_get_data(a), ctypes.POINTER(ctypes.c_uint16)), elems)
    else:
        g.ggml_quantize_chunk(typ, af.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), g.ggml_get_data(a), 0, size, size, None)
    c = g.ggml_mul_mat(ctx, a, b)
    gf = g.ggml_new_graph(ctx)
    g.ggml_build_forward_expand(gf, c)
    backend = g.ggml_backend_cpu_init()
    g.ggml_backend_cpu_set_n_threads(backend, threads)

    def once(n=1):
        t0 = time.perf_counter_ns()
        g.ggml_backend_graph_compute(backend, gf)
        return time.perf_counter_ns() - t0

    once()  # the product, for the checksum in `extra` (the same 16 values as the driver sums)
    check = float(gu.to_numpy(c).reshape(-1)[:16].astype(np.float64).sum())
    measure("matmul", f"matmul {tname} {size}", 1, reps, once, check, warm_ns=num("warm_ms", 2000) * 1e6)
    g.ggml_backend_free(backend)
    g.ggml_free(ctx)


CASES = {"nelements": lambda: call("nelements"), "nbytes": lambda: call("nbytes"), "add": add, "shape": shape,
         "graph": graph, "matmul": matmul}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print(f"usage: peer_ggml_python.py BENCH [key=value ...]; BENCH is one of {' '.join(CASES)}", file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[1]]()
