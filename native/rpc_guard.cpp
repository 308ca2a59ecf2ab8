// Compiled into the base library: ggml's RPC backend (vendor/ggml/ggml-rpc.cpp, included below
// unchanged) with its process-killing failures turned into errors, and a server that can be
// stopped.
//
// Client faults. ggml-rpc's client calls WSP_GGML_ABORT (RPC_STATUS_ASSERT) when a server dies,
// times out or answers something malformed, and dereferences a null socket when it cannot
// connect. In this translation unit, and only here, WSP_GGML_ABORT throws a C++ exception
// (rpc_fault) instead. Every function of ggml-rpc's client that ggml's generic code calls
// through a function pointer (buffer, buffer type, backend and device interfaces) is replaced
// by a wrapper that catches the fault in the same call: the exception never leaves this file,
// so it unwinds only through ggml-rpc.cpp's own C++ frames (RAII: its vectors, shared_ptrs and
// lock_guards are released) and never through ggml's C code or a foreign frame. The wrapper
// then
//   - shuts the connection down (shutdown(2)): the byte stream is out of step after a partial
//     exchange, so every later command on it fails at once instead of reading stale bytes
//     (the socket is closed when its last buffer lets go of it; a backend or buffer type made
//     after that connects afresh);
//   - records the fault (wsp_rpc_fault_count, wsp_rpc_last_error) for the TS layer, which
//     turns a failed compute into RpcError;
//   - returns what ggml's caller handles: graph_compute → WSP_GGML_STATUS_FAILED, alloc_buffer
//     → NULL, get_tensor → zeros, cpy_tensor → false, get_base → a placeholder address
//     (never dereferenced: the buffer is not host memory), device memory → 0 / 0, the buffer
//     type of a device → NULL. A set_tensor, init_tensor or clear that fails does nothing;
//     the dead connection makes the next compute fail.
// What leaks: nothing of ours; the remote buffers of a dead server are gone with it, and their
// local records are freed by free() as usual (free_buffer's fault is caught after it deleted
// nothing, so the wrapper deletes the record). ggml-rpc's own per-endpoint buffer types and
// devices are never freed by design (as upstream).
//
// Server. wsp_ggml_backend_rpc_start_server never returns. wsp_rpc_server_start binds the socket
// on the caller's thread (so a bad address or a port in use is an error at once), then serves
// one client at a time on a thread of its own with ggml-rpc's rpc_serve_client, checking a stop
// flag between clients (select() with a timeout); wsp_rpc_server_stop sets the flag, shuts the
// current client's socket down (its recv returns) and joins the thread. A client whose message
// makes ggml-rpc's server code assert (a tensor outside its buffer, a shape ggml refuses) loses
// its connection: the assert throws on the server thread (this file's WSP_GGML_ABORT, and ggml's
// abort callback while that thread serves), and the server goes on with the next client. Before
// ggml-rpc reads a message the size is checked against the server's memory, and before it makes
// a tensor the type and row are checked (a removed type would divide by zero). Not covered: a
// well-formed graph whose ops are inconsistent reaches the CPU kernels, whose asserts end the
// server as upstream's (the compute runs with the default abort), and a tensor with no buffer
// but a data pointer is computed where it points — the protocol trusts its client, hence the
// loopback default.
#include "ggml.h"

// The vendored RPC code, with WSP_GGML_ABORT (and so WSP_GGML_ASSERT) throwing, and without the
// dynamic-backend entry point (it is part of the base library, not a backend library).
[[noreturn]] static void wsp_rpc_throw(const char * file, int line, const char * fmt, ...);
#undef WSP_GGML_ABORT
#define WSP_GGML_ABORT(...) wsp_rpc_throw(__FILE__, __LINE__, __VA_ARGS__)
#undef WSP_GGML_BACKEND_DL
#include "ggml-rpc.h"

// Every header ggml-rpc.cpp includes, first: the macro below must rename its one call of
// connect(), not a declaration.
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#ifdef _WIN32
#    define WIN32_LEAN_AND_MEAN
#    ifndef NOMINMAX
#        define NOMINMAX
#    endif
#    include <windows.h>
#    include <winsock2.h>
#else
#    include <arpa/inet.h>
#    include <netdb.h>
#    include <netinet/in.h>
#    include <netinet/tcp.h>
#    include <sys/socket.h>
#    include <sys/time.h>
#    include <sys/types.h>
#    include <unistd.h>
#endif

// The client's send/receive timeout (wsp_rpc_set_timeout_ms), set on every socket before it
// connects, so that it also bounds connect() and the HELLO exchange inside ggml-rpc's get_socket.
static std::atomic<int32_t> g_timeout_ms{0};

static void wsp_rpc_set_socket_timeout(long long fd) {
    int32_t ms = g_timeout_ms.load();
    if (ms <= 0) {
        return;
    }
#ifdef _WIN32
    DWORD tv = (DWORD) ms;
#else
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
#endif
    setsockopt((decltype(socket(0, 0, 0))) fd, SOL_SOCKET, SO_RCVTIMEO, (const char *) &tv, sizeof(tv));
    setsockopt((decltype(socket(0, 0, 0))) fd, SOL_SOCKET, SO_SNDTIMEO, (const char *) &tv, sizeof(tv));
}

template <typename S, typename A, typename L> static int wsp_rpc_connect(S fd, A addr, L len) {
    wsp_rpc_set_socket_timeout((long long) fd);
    return (connect)(fd, addr, len);
}
#define connect(fd, addr, len) wsp_rpc_connect(fd, addr, len)

// The server side: whether this thread serves a client, and where it is in the client's byte
// stream (| cmd u8 | size u64 | payload |), seen through ggml-rpc's one call of recv(). A size
// above the server's memory is refused before ggml-rpc sizes a vector for it (a claimed
// 2^40-byte message would otherwise be allocated and zeroed, or fault).
static thread_local bool t_serving = false;
static thread_local int t_rx_state = 0;  // 0 command byte, 1 size, 2 payload
static thread_local unsigned char t_rx_size[8];
static thread_local int t_rx_have = 0;
static thread_local uint64_t t_rx_left = 0;
static thread_local uint64_t t_rx_limit = 0;
static thread_local uint64_t t_rx_refused = 0;

template <typename S, typename B, typename L, typename F> static auto wsp_rpc_recv(S fd, B buf, L len, F flags) -> decltype((recv)(fd, buf, len, flags)) {
    auto n = (recv)(fd, buf, len, flags);
    if (!t_serving || n <= 0) {
        return n;
    }
    // recv_data asks for the rest of one field at a time: n never crosses a field's end.
    if (t_rx_state == 0) {
        t_rx_state = 1;
        t_rx_have = 0;
    } else if (t_rx_state == 1) {
        memcpy(t_rx_size + t_rx_have, buf, (size_t) n);
        t_rx_have += (int) n;
        if (t_rx_have == 8) {
            uint64_t size;
            memcpy(&size, t_rx_size, 8);
            if (size > t_rx_limit) {
                t_rx_refused = size;
                return -1;
            }
            t_rx_left = size;
            t_rx_state = size == 0 ? 0 : 2;
        }
    } else {
        t_rx_left -= (uint64_t) n;
        if (t_rx_left == 0) {
            t_rx_state = 0;
        }
    }
    return n;
}
#define recv(fd, buf, len, flags) wsp_rpc_recv(fd, buf, len, flags)

// The server makes a tensor from every descriptor a client sends (deserialize_tensor), and ggml
// divides by the type's block size: a removed type (block size 0) would fault, a row that is not
// a whole number of blocks would assert. Refused here, in this file's terms (an exception that
// drops the client), as is a size that does not fit in 63 bits.
static wsp_ggml_tensor * wsp_rpc_new_tensor_4d(wsp_ggml_context * ctx, wsp_ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    if ((int) type < 0 || type >= WSP_GGML_TYPE_COUNT || wsp_ggml_blck_size(type) <= 0 || wsp_ggml_type_size(type) == 0) {
        throw std::runtime_error("a tensor of type " + std::to_string((int) type) + ", which this ggml does not have");
    }
    if (ne0 % wsp_ggml_blck_size(type) != 0) {
        throw std::runtime_error("a row of " + std::to_string(ne0) + " elements is not a whole number of " + wsp_ggml_type_name(type) + " blocks");
    }
    const double bytes = (double) ne0 * (double) ne1 * (double) ne2 * (double) ne3 * (double) wsp_ggml_type_size(type) / (double) wsp_ggml_blck_size(type);
    if (bytes > 9.0e18) {
        throw std::runtime_error("a tensor of more than 2^63 bytes");
    }
    return (wsp_ggml_new_tensor_4d)(ctx, type, ne0, ne1, ne2, ne3);
}
#define wsp_ggml_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3) wsp_rpc_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3)

// The server's compute runs the CPU kernels on a threadpool: an assert there must not unwind one
// thread out of the pool while the others wait for it, so during the compute ggml's abort does
// what it does anywhere else (the server ends, as upstream's does).
static wsp_ggml_status wsp_rpc_server_graph_compute(wsp_ggml_backend_t backend, wsp_ggml_cgraph * graph) {
    const bool serving = t_serving;
    t_serving = false;
    wsp_ggml_status status = (wsp_ggml_backend_graph_compute)(backend, graph);
    t_serving = serving;
    return status;
}
#define wsp_ggml_backend_graph_compute(backend, graph) wsp_rpc_server_graph_compute(backend, graph)

// Renamed: this file defines the exported names as guarded wrappers.
wsp_ggml_backend_t wsp_rpc_raw_init(const char * endpoint);
wsp_ggml_backend_buffer_type_t wsp_rpc_raw_buffer_type(const char * endpoint);
void wsp_rpc_raw_get_device_memory(const char * endpoint, size_t * free, size_t * total);
wsp_ggml_backend_dev_t wsp_rpc_raw_add_device(const char * endpoint);
#define wsp_ggml_backend_rpc_init wsp_rpc_raw_init
#define wsp_ggml_backend_rpc_buffer_type wsp_rpc_raw_buffer_type
#define wsp_ggml_backend_rpc_get_device_memory wsp_rpc_raw_get_device_memory
#define wsp_ggml_backend_rpc_add_device wsp_rpc_raw_add_device
#include "ggml-rpc.cpp"
#undef wsp_ggml_backend_rpc_init
#undef wsp_ggml_backend_rpc_buffer_type
#undef wsp_ggml_backend_rpc_get_device_memory
#undef wsp_ggml_backend_rpc_add_device
#undef connect
#undef recv
#undef wsp_ggml_new_tensor_4d
#undef wsp_ggml_backend_graph_compute

#include <atomic>
#include <cstdarg>
#include <csignal>
#include <stdexcept>
#include <thread>
#ifdef _WIN32
#    include <ws2tcpip.h>
#else
#    include <sys/select.h>
#    include <sys/time.h>
#endif

#if defined(_WIN32)
#    define WSP_RPC_API extern "C"
#else
#    define WSP_RPC_API extern "C" __attribute__((visibility("default")))
#endif

namespace {

struct rpc_fault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::mutex g_fault_mutex;
std::string g_last_error;
std::atomic<int32_t> g_fault_count{0};

void record_fault(const std::string & what) {
    {
        std::lock_guard<std::mutex> lock(g_fault_mutex);
        g_last_error = what;
    }
    g_fault_count.fetch_add(1);
    WSP_GGML_LOG_ERROR("wsp-ggml rpc: %s\n", what.c_str());
}

void kill_socket(const std::shared_ptr<socket_t> & sock) {
    if (sock) {
#ifdef _WIN32
        shutdown(sock->fd, SD_BOTH);
#else
        shutdown(sock->fd, SHUT_RDWR);
#endif
    }
}

// The client's receive/send timeout, applied to a connection before each command (0: none).
void apply_timeout(const std::shared_ptr<socket_t> & sock) {
    if (sock) {
        wsp_rpc_set_socket_timeout((long long) sock->fd);
    }
}

// A peer that closed makes send() raise SIGPIPE, whose default action ends the process. Node,
// Deno and Bun already ignore it; a host program that does not gets it ignored too.
void ignore_sigpipe() {
#ifndef _WIN32
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction old;
        if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
            signal(SIGPIPE, SIG_IGN);
        }
    });
#endif
}

bool winsock_ready() {
#ifdef _WIN32
    static std::once_flag once;
    static bool ok = false;
    std::call_once(once, [] {
        WSADATA data;
        ok = WSAStartup(MAKEWORD(2, 2), &data) == 0;
    });
    return ok;
#else
    return true;
#endif
}

std::string describe(const std::string & endpoint, const char * what, const char * detail) {
    std::string s = "RPC[" + endpoint + "]: " + what;
    if (detail && *detail) {
        s += ": ";
        s += detail;
    }
    return s;
}

const std::string & buffer_endpoint(wsp_ggml_backend_buffer_t buffer) {
    return ((wsp_ggml_backend_rpc_buffer_type_context *) buffer->buft->context)->endpoint;
}

// ---- buffer interface ---------------------------------------------------------------------

#define WSP_RPC_BUFFER_GUARD(op, body, on_fault)                                       \
    auto * ctx = (wsp_ggml_backend_rpc_buffer_context *) buffer->context;               \
    try {                                                                               \
        apply_timeout(ctx->sock);                                                       \
        body;                                                                           \
    } catch (const std::exception & e) {                                                \
        kill_socket(ctx->sock);                                                         \
        record_fault(describe(buffer_endpoint(buffer), op, e.what()));                 \
        on_fault;                                                                       \
    }

void guarded_free_buffer(wsp_ggml_backend_buffer_t buffer) {
    WSP_RPC_BUFFER_GUARD("free_buffer", wsp_ggml_backend_rpc_buffer_free_buffer(buffer); return, delete ctx)
}

// A placeholder base for a buffer whose server is gone: aligned, non-null, never dereferenced.
void * const PLACEHOLDER_BASE = (void *) (uintptr_t) 0x100000;

void * guarded_get_base(wsp_ggml_backend_buffer_t buffer) {
    WSP_RPC_BUFFER_GUARD("buffer_get_base", return wsp_ggml_backend_rpc_buffer_get_base(buffer),
                         ctx->base_ptr = PLACEHOLDER_BASE; return PLACEHOLDER_BASE)
}

wsp_ggml_status guarded_init_tensor(wsp_ggml_backend_buffer_t buffer, wsp_ggml_tensor * tensor) {
    WSP_RPC_BUFFER_GUARD("init_tensor", return wsp_ggml_backend_rpc_buffer_init_tensor(buffer, tensor),
                         return WSP_GGML_STATUS_SUCCESS)
}

void guarded_set_tensor(wsp_ggml_backend_buffer_t buffer, wsp_ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    WSP_RPC_BUFFER_GUARD("set_tensor", wsp_ggml_backend_rpc_buffer_set_tensor(buffer, tensor, data, offset, size), return)
}

void guarded_get_tensor(wsp_ggml_backend_buffer_t buffer, const wsp_ggml_tensor * tensor, void * data, size_t offset, size_t size) {
    WSP_RPC_BUFFER_GUARD("get_tensor", wsp_ggml_backend_rpc_buffer_get_tensor(buffer, tensor, data, offset, size),
                         memset(data, 0, size))
}

bool guarded_cpy_tensor(wsp_ggml_backend_buffer_t buffer, const wsp_ggml_tensor * src, wsp_ggml_tensor * dst) {
    // Only RPC buffers of the same server copy remotely; ggml asks this of any source buffer.
    if (src->buffer == nullptr || src->buffer->iface.get_base != guarded_get_base) {
        return false;
    }
    WSP_RPC_BUFFER_GUARD("copy_tensor", return wsp_ggml_backend_rpc_buffer_cpy_tensor(buffer, src, dst), return false)
}

void guarded_clear(wsp_ggml_backend_buffer_t buffer, uint8_t value) {
    WSP_RPC_BUFFER_GUARD("buffer_clear", wsp_ggml_backend_rpc_buffer_clear(buffer, value), return)
}

// ---- buffer type interface ----------------------------------------------------------------

wsp_ggml_backend_buffer_t guarded_alloc_buffer(wsp_ggml_backend_buffer_type_t buft, size_t size) {
    auto * bctx = (wsp_ggml_backend_rpc_buffer_type_context *) buft->context;
    std::shared_ptr<socket_t> sock;
    try {
        sock = get_socket(bctx->endpoint);
        if (sock == nullptr) {
            record_fault(describe(bctx->endpoint, "alloc_buffer", "cannot connect"));
            return nullptr;
        }
        apply_timeout(sock);
        // The original connects again: it finds the connection held here.
        return wsp_ggml_backend_rpc_buffer_type_alloc_buffer(buft, size);
    } catch (const std::exception & e) {
        kill_socket(sock);
        record_fault(describe(bctx->endpoint, "alloc_buffer", e.what()));
        return nullptr;
    }
}

size_t guarded_get_alloc_size(wsp_ggml_backend_buffer_type_t buft, const wsp_ggml_tensor * tensor) {
    auto * bctx = (wsp_ggml_backend_rpc_buffer_type_context *) buft->context;
    if (!(wsp_ggml_is_quantized(tensor->type) && (tensor->ne[0] % 512 != 0) && (tensor->view_src == nullptr))) {
        return wsp_ggml_nbytes(tensor);
    }
    std::shared_ptr<socket_t> sock;
    try {
        sock = get_socket(bctx->endpoint);
        if (sock == nullptr) {
            record_fault(describe(bctx->endpoint, "get_alloc_size", "cannot connect"));
            return wsp_ggml_nbytes(tensor);
        }
        apply_timeout(sock);
        return wsp_ggml_backend_rpc_buffer_type_get_alloc_size(buft, tensor);
    } catch (const std::exception & e) {
        kill_socket(sock);
        record_fault(describe(bctx->endpoint, "get_alloc_size", e.what()));
        return wsp_ggml_nbytes(tensor);
    }
}

// ---- backend interface --------------------------------------------------------------------

wsp_ggml_status guarded_graph_compute(wsp_ggml_backend_t backend, wsp_ggml_cgraph * cgraph) {
    auto * rctx = (wsp_ggml_backend_rpc_context *) backend->context;
    std::shared_ptr<socket_t> sock;
    try {
        sock = get_socket(rctx->endpoint);
        if (sock == nullptr) {
            record_fault(describe(rctx->endpoint, "graph_compute", "cannot connect"));
            return WSP_GGML_STATUS_FAILED;
        }
        apply_timeout(sock);
        wsp_ggml_status status = wsp_ggml_backend_rpc_graph_compute(backend, cgraph);
        if (status != WSP_GGML_STATUS_SUCCESS && status != WSP_GGML_STATUS_FAILED && status != WSP_GGML_STATUS_ALLOC_FAILED &&
            status != WSP_GGML_STATUS_ABORTED) {
            throw rpc_fault("the server answered an unknown status " + std::to_string((int) status));
        }
        return status;
    } catch (const std::exception & e) {
        kill_socket(sock);
        record_fault(describe(rctx->endpoint, "graph_compute", e.what()));
        return WSP_GGML_STATUS_FAILED;
    }
}

// ---- device interface (each device holds its own copy of the table) -------------------------

void guarded_device_get_memory(wsp_ggml_backend_dev_t dev, size_t * free, size_t * total);

void guarded_device_get_props(wsp_ggml_backend_dev_t dev, struct wsp_ggml_backend_dev_props * props) {
    props->name = wsp_ggml_backend_rpc_device_get_name(dev);
    props->description = wsp_ggml_backend_rpc_device_get_description(dev);
    props->type = wsp_ggml_backend_rpc_device_get_type(dev);
    guarded_device_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps = { false, false, false, false };
}

wsp_ggml_backend_buffer_type_t guarded_device_get_buffer_type(wsp_ggml_backend_dev_t dev);
wsp_ggml_backend_t guarded_device_init(wsp_ggml_backend_dev_t dev, const char * params);

void patch_device(wsp_ggml_backend_dev_t dev) {
    if (dev != nullptr && dev->iface.get_memory != guarded_device_get_memory) {
        dev->iface.get_memory = guarded_device_get_memory;
        dev->iface.get_props = guarded_device_get_props;
        dev->iface.get_buffer_type = guarded_device_get_buffer_type;
        dev->iface.init_backend = guarded_device_init;
    }
}

// The interface tables of ggml-rpc.cpp are plain statics: point them at the wrappers once,
// before any RPC object exists (the base library's load).
struct patch_tables {
    patch_tables() {
        auto & b = wsp_ggml_backend_rpc_buffer_interface;
        b.free_buffer = guarded_free_buffer;
        b.get_base = guarded_get_base;
        b.init_tensor = guarded_init_tensor;
        b.set_tensor = guarded_set_tensor;
        b.get_tensor = guarded_get_tensor;
        b.cpy_tensor = guarded_cpy_tensor;
        b.clear = guarded_clear;
        wsp_ggml_backend_rpc_buffer_type_interface.alloc_buffer = guarded_alloc_buffer;
        wsp_ggml_backend_rpc_buffer_type_interface.get_alloc_size = guarded_get_alloc_size;
        wsp_ggml_backend_rpc_interface.graph_compute = guarded_graph_compute;
    }
} patch_tables_once;

}  // namespace

[[noreturn]] static void wsp_rpc_throw(const char * file, int line, const char * fmt, ...) {
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof(message), fmt, args);
    va_end(args);
    const char * base = strrchr(file, '/');
    throw rpc_fault(std::string(message) + " (" + (base ? base + 1 : file) + ":" + std::to_string(line) + ")");
}

// ---- the exported API of ggml-rpc.h, guarded -----------------------------------------------

extern "C" {

wsp_ggml_backend_dev_t wsp_ggml_backend_rpc_add_device(const char * endpoint) {
    wsp_ggml_backend_dev_t dev = wsp_rpc_raw_add_device(endpoint);
    patch_device(dev);
    return dev;
}

wsp_ggml_backend_t wsp_ggml_backend_rpc_init(const char * endpoint) {
    if (endpoint == nullptr) {
        return nullptr;
    }
    ignore_sigpipe();
    winsock_ready();
    wsp_ggml_backend_t backend = wsp_rpc_raw_init(endpoint);
    patch_device(backend->device);
    return backend;
}

wsp_ggml_backend_buffer_type_t wsp_ggml_backend_rpc_buffer_type(const char * endpoint) {
    if (endpoint == nullptr) {
        return nullptr;
    }
    ignore_sigpipe();
    winsock_ready();
    try {
        wsp_ggml_backend_buffer_type_t buft = wsp_rpc_raw_buffer_type(endpoint);
        if (buft == nullptr) {
            record_fault(describe(endpoint, "connect", "cannot connect (refused, unknown host, or a protocol version mismatch)"));
            return nullptr;
        }
        patch_device(buft->device);
        return buft;
    } catch (const std::exception & e) {
        record_fault(describe(endpoint, "connect", e.what()));
        return nullptr;
    }
}

void wsp_ggml_backend_rpc_get_device_memory(const char * endpoint, size_t * free, size_t * total) {
    *free = 0;
    *total = 0;
    if (endpoint == nullptr) {
        return;
    }
    ignore_sigpipe();
    winsock_ready();
    std::shared_ptr<socket_t> sock;
    try {
        sock = get_socket(endpoint);
        if (sock == nullptr) {
            record_fault(describe(endpoint, "get_device_memory", "cannot connect"));
            return;
        }
        apply_timeout(sock);
        get_device_memory(sock, free, total);
    } catch (const std::exception & e) {
        kill_socket(sock);
        *free = 0;
        *total = 0;
        record_fault(describe(endpoint, "get_device_memory", e.what()));
    }
}

}  // extern "C"

namespace {

void guarded_device_get_memory(wsp_ggml_backend_dev_t dev, size_t * free, size_t * total) {
    auto * dctx = (wsp_ggml_backend_rpc_device_context *) dev->context;
    wsp_ggml_backend_rpc_get_device_memory(dctx->endpoint.c_str(), free, total);
}

wsp_ggml_backend_buffer_type_t guarded_device_get_buffer_type(wsp_ggml_backend_dev_t dev) {
    auto * dctx = (wsp_ggml_backend_rpc_device_context *) dev->context;
    return wsp_ggml_backend_rpc_buffer_type(dctx->endpoint.c_str());
}

wsp_ggml_backend_t guarded_device_init(wsp_ggml_backend_dev_t dev, const char * params) {
    WSP_GGML_UNUSED(params);
    auto * dctx = (wsp_ggml_backend_rpc_device_context *) dev->context;
    return wsp_ggml_backend_rpc_init(dctx->endpoint.c_str());
}

}  // namespace

// ---- wsp-ggml's additions ------------------------------------------------------------------

/** Faults caught since the library loaded (each is also logged at ERROR level). */
WSP_RPC_API int32_t wsp_rpc_fault_count(void) {
    return g_fault_count.load();
}

/** Copies the last fault's message (NUL-terminated, truncated to size) into out; returns its full length. */
WSP_RPC_API int32_t wsp_rpc_last_error(char * out, int32_t size) {
    std::lock_guard<std::mutex> lock(g_fault_mutex);
    if (out != nullptr && size > 0) {
        snprintf(out, (size_t) size, "%s", g_last_error.c_str());
    }
    return (int32_t) g_last_error.size();
}

/** The client's send and receive timeout in milliseconds, for every connection from the next command on (0: none). */
WSP_RPC_API void wsp_rpc_set_timeout_ms(int32_t ms) {
    g_timeout_ms.store(ms < 0 ? 0 : ms);
}

// ---- the server ------------------------------------------------------------------------------

namespace {

wsp_ggml_abort_callback_t g_prev_abort = nullptr;
std::once_flag g_abort_once;

// ggml's abort callback while a server exists: on a serving thread it throws (the assert was
// caused by the client's message; rpc_serve_client's frames and ggml's C frames between are
// unwound, the client is dropped), elsewhere it does what the previous callback did.
void server_abort(const char * message) {
    if (t_serving) {
        throw rpc_fault(message);
    }
    if (g_prev_abort) {
        g_prev_abort(message);
    }
}

struct rpc_server_state {
    wsp_ggml_backend_t backend;
    std::shared_ptr<socket_t> listener;
    std::atomic<bool> stop{false};
    std::mutex client_mutex;
    sockfd_t client_fd;
    bool has_client = false;
    size_t free_mem, total_mem;
    std::atomic<int32_t> clients{0};
    std::atomic<int32_t> dropped{0};
    int32_t port = 0;
    std::thread thread;
};

bool readable(sockfd_t fd, int ms) {
    fd_set set;
    FD_ZERO(&set);
    FD_SET(fd, &set);
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return select((int) fd + 1, &set, nullptr, nullptr, &tv) > 0;
}

void serve(rpc_server_state * s) {
    while (!s->stop.load()) {
        if (!readable(s->listener->fd, 100)) {
            continue;
        }
        auto client = socket_accept(s->listener->fd);
        if (client == nullptr) {
            continue;
        }
        {
            std::lock_guard<std::mutex> lock(s->client_mutex);
            if (s->stop.load()) {
                break;
            }
            s->client_fd = client->fd;
            s->has_client = true;
        }
        s->clients.fetch_add(1);
        t_serving = true;
        t_rx_state = 0;
        t_rx_refused = 0;
        t_rx_limit = std::max<uint64_t>(s->total_mem, 1u << 20);
        try {
            rpc_serve_client(s->backend, nullptr, client->fd, s->free_mem, s->total_mem);
            if (t_rx_refused != 0) {
                s->dropped.fetch_add(1);
                WSP_GGML_LOG_WARN("wsp-ggml rpc server: dropped a client: a message of %" PRIu64 " bytes, more than the server's memory\n", t_rx_refused);
            }
        } catch (const std::exception & e) {
            s->dropped.fetch_add(1);
            WSP_GGML_LOG_WARN("wsp-ggml rpc server: dropped a client: %s\n", e.what());
        } catch (...) {
            s->dropped.fetch_add(1);
            WSP_GGML_LOG_WARN("wsp-ggml rpc server: dropped a client\n");
        }
        t_serving = false;
        std::lock_guard<std::mutex> lock(s->client_mutex);
        s->has_client = false;
    }
}

}  // namespace

/**
 * Binds host:port (IPv4 address; port 0 picks a free one) and serves backend on a thread of its
 * own, reporting free_mem / total_mem bytes to clients (doubles: exact up to 2^53). Returns the server, or NULL with *error set: 1 bad address, 2 bind/listen failed (port in
 * use, no permission), 3 socket layer unavailable.
 */
WSP_RPC_API void * wsp_rpc_server_start(wsp_ggml_backend_t backend, const char * host, int32_t port, double free_mem, double total_mem, int32_t * error) {
    *error = 0;
    ignore_sigpipe();
    if (!winsock_ready()) {
        *error = 3;
        return nullptr;
    }
    if (host == nullptr || inet_addr(host) == INADDR_NONE || port < 0 || port > 65535) {
        *error = 1;
        return nullptr;
    }
    auto listener = create_server_socket(host, port);
    if (listener == nullptr) {
        *error = 2;
        return nullptr;
    }
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    int32_t bound = port;
    if (getsockname(listener->fd, (struct sockaddr *) &addr, &len) == 0) {
        bound = ntohs(addr.sin_port);
    }
    std::call_once(g_abort_once, [] { g_prev_abort = wsp_ggml_set_abort_callback(server_abort); });
    auto * s = new rpc_server_state();
    s->backend = backend;
    s->listener = listener;
    s->free_mem = (size_t) free_mem;
    s->total_mem = (size_t) total_mem;
    s->port = bound;
    s->thread = std::thread(serve, s);
    return s;
}

/** The port the server listens on (the one the system picked for port 0). */
WSP_RPC_API int32_t wsp_rpc_server_port(void * server) {
    return ((rpc_server_state *) server)->port;
}

/** Clients accepted so far. */
WSP_RPC_API int32_t wsp_rpc_server_clients(void * server) {
    return ((rpc_server_state *) server)->clients.load();
}

/** Clients dropped because their message made the server's code assert. */
WSP_RPC_API int32_t wsp_rpc_server_dropped(void * server) {
    return ((rpc_server_state *) server)->dropped.load();
}

/** Stops serving (the current client is disconnected), joins the thread and frees the server. */
WSP_RPC_API void wsp_rpc_server_stop(void * server) {
    auto * s = (rpc_server_state *) server;
    s->stop.store(true);
    {
        std::lock_guard<std::mutex> lock(s->client_mutex);
        if (s->has_client) {
#ifdef _WIN32
            shutdown(s->client_fd, SD_BOTH);
#else
            shutdown(s->client_fd, SHUT_RDWR);
#endif
        }
    }
    s->thread.join();
    delete s;
}
