// Compiled into the base library: ggml's log and abort callbacks as wsp-ggml routes them.
//
// Log. ggml calls its log callback from whatever thread logs: the JS thread for most calls,
// but also the CPU backend's worker threads, and the threads that run the non-blocking calls
// (Deno `nonblocking`, koffi `.async`, the worker of Bun). A JS callback cannot simply be
// marked thread-safe on every runtime:
//   - Deno's UnsafeCallback and koffi's registered callbacks, called from a foreign thread,
//     queue the call to the JS thread and block the calling thread until it has run. When
//     the JS thread is itself inside a synchronous compute waiting for that worker thread
//     (ggml's barrier), neither can proceed: a deadlock.
//   - Bun's threadsafe JSCallback does not wait: by the time it runs, the `text` pointer
//     (ggml's stack buffer, or a buffer it frees right after the call) is gone.
// So this file owns the callback ggml sees. On the JS thread (the thread that last called
// wsp_js_log_install) it calls the JS callback directly and synchronously. From any other
// thread it copies the message into a bounded queue; the JS side drains the queue with
// wsp_js_log_pop (pull, no JS re-entry) on the JS thread: before the next message logged on
// the JS thread, after every non-blocking compute, and on demand (logFlush in src/runtime/log.ts).
// With no JS callback installed it prints WARN and ERROR messages (and their continuations)
// to stderr, from any thread, with no JS involved: the documented default.
//
// Abort. wsp_js_abort is installed as ggml's abort callback when the library loads. It runs
// at the moment of a failed WSP_GGML_ASSERT (any thread), so it does not call into JS: it
// prints ggml's message, then the text JS last wrote into wsp_js_abort_info (the JS stack of
// the last native call, written only while abortTrace(true) is on), then ggml's own native
// backtrace, and returns; ggml then calls abort().
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"

#if defined(_WIN32)
// mingw exports every non-static function of a DLL that has no dllexport (see win-exports.c).
#    define WSP_JS_API
#else
#    define WSP_JS_API __attribute__((visibility("default")))
#endif

// ggml.c (ggml-impl.h): the logger behind WSP_GGML_LOG_*.
void wsp_ggml_log_internal(enum wsp_ggml_log_level level, const char * format, ...);
// ggml.c (ggml-impl.h): gdb/lldb or backtrace_symbols, as ggml's default abort prints.
void wsp_ggml_print_backtrace(void);

typedef void (*wsp_js_log_fn)(int level, const char * text, void * user_data);

/** One queued message: its level (CONT already resolved) and its NUL-terminated text. */
struct wsp_js_log_message {
    struct wsp_js_log_message * next;
    int32_t level;
    int32_t length;
    char text[];
};

/** The most messages queued from other threads before new ones are dropped (and counted). */
#define WSP_JS_LOG_QUEUE_MAX 4096

static _Atomic(wsp_js_log_fn) js_callback = NULL;
static _Atomic(void *) js_thread = NULL;
static atomic_int min_level = WSP_GGML_LOG_LEVEL_DEBUG;
static _Thread_local char thread_marker;
static _Thread_local int last_level = WSP_GGML_LOG_LEVEL_INFO;

static atomic_flag queue_lock = ATOMIC_FLAG_INIT;
static struct wsp_js_log_message * queue_head = NULL;
static struct wsp_js_log_message * queue_tail = NULL;
static int queue_count = 0;
static atomic_int queue_dropped = 0;
static atomic_int queue_pending = 0;

static void lock(void) {
    while (atomic_flag_test_and_set_explicit(&queue_lock, memory_order_acquire)) {
    }
}

static void unlock(void) {
    atomic_flag_clear_explicit(&queue_lock, memory_order_release);
}

/** NONE (plain output) filters as INFO. */
static int rank(int level) {
    return level == WSP_GGML_LOG_LEVEL_NONE ? WSP_GGML_LOG_LEVEL_INFO : level;
}

static void enqueue(int level, const char * text) {
    size_t n = strlen(text);
    if (n > 1u << 20) n = 1u << 20;
    struct wsp_js_log_message * m = malloc(sizeof *m + n + 1);
    if (m == NULL) {
        atomic_fetch_add(&queue_dropped, 1);
        return;
    }
    m->next = NULL;
    m->level = level;
    m->length = (int32_t) n;
    memcpy(m->text, text, n);
    m->text[n] = 0;
    lock();
    if (queue_count >= WSP_JS_LOG_QUEUE_MAX) {
        unlock();
        free(m);
        atomic_fetch_add(&queue_dropped, 1);
        return;
    }
    if (queue_tail) queue_tail->next = m;
    else queue_head = m;
    queue_tail = m;
    queue_count++;
    atomic_store(&queue_pending, 1);
    unlock();
}

/** The log callback ggml gets (the loader restores it with wsp_ggml_log_set after capturing a load's messages). */
WSP_JS_API void wsp_js_log_dispatch(enum wsp_ggml_log_level level_in, const char * text, void * user_data) {
    (void) user_data;
    int level = (int) level_in;
    // ggml-rpc's server logs this as an ERROR for every tensor whose buffer type has no
    // init_tensor (the CPU's), dozens of times per model load; it is not an error: DEBUG.
    if (level == WSP_GGML_LOG_LEVEL_ERROR && strcmp(text, "Null buffer for tensor passed to init_tensor function\n") == 0) level = WSP_GGML_LOG_LEVEL_DEBUG;
    if (level == WSP_GGML_LOG_LEVEL_CONT) level = last_level;
    else last_level = level;
    wsp_js_log_fn cb = atomic_load(&js_callback);
    if (cb == NULL) {
        if (level == WSP_GGML_LOG_LEVEL_WARN || level == WSP_GGML_LOG_LEVEL_ERROR) {
            fputs(text, stderr);
            fflush(stderr);
        }
        return;
    }
    if (rank(level) < atomic_load(&min_level)) return;
    if (atomic_load(&js_thread) == (void *) &thread_marker) cb(level, text, NULL);
    else enqueue(level, text);
}

/**
 * Routes ggml's log to `callback` (called on this thread only, with the level of a CONT
 * message resolved to the level of the message it continues), keeping messages of at least
 * `minimum` (NONE counts as INFO); NULL restores the default (WARN and ERROR to stderr).
 * The calling thread becomes the JS thread.
 */
WSP_JS_API void wsp_js_log_install(wsp_js_log_fn callback, int32_t minimum) {
    atomic_store(&js_thread, (void *) &thread_marker);
    atomic_store(&min_level, minimum);
    atomic_store(&js_callback, callback);
    wsp_ggml_log_set(wsp_js_log_dispatch, NULL);
}

/** Whether messages from other threads are waiting: one cheap load, for the JS side to skip the drain. */
WSP_JS_API int32_t wsp_js_log_pending(void) {
    return atomic_load(&queue_pending);
}

/**
 * The oldest message queued from another thread, or NULL. The caller reads `level` and
 * `text` (at wsp_js_log_level_offset / wsp_js_log_text_offset), then frees it with
 * wsp_js_log_free.
 */
WSP_JS_API struct wsp_js_log_message * wsp_js_log_pop(void) {
    lock();
    struct wsp_js_log_message * m = queue_head;
    if (m) {
        queue_head = m->next;
        if (queue_head == NULL) queue_tail = NULL;
        queue_count--;
    }
    if (queue_head == NULL) atomic_store(&queue_pending, 0);
    unlock();
    return m;
}

/** Byte offset of `level` in a popped message. */
WSP_JS_API int32_t wsp_js_log_level_offset(void) {
    return (int32_t) offsetof(struct wsp_js_log_message, level);
}

/** Byte offset of `text` in a popped message. */
WSP_JS_API int32_t wsp_js_log_text_offset(void) {
    return (int32_t) offsetof(struct wsp_js_log_message, text);
}

/** Frees a message returned by wsp_js_log_pop. */
WSP_JS_API void wsp_js_log_free(struct wsp_js_log_message * m) {
    free(m);
}

/** Messages dropped since the last call (queue full or out of memory); resets the count. */
WSP_JS_API int32_t wsp_js_log_dropped(void) {
    return atomic_exchange(&queue_dropped, 0);
}

/**
 * Test hook: logs `text` at `level` through ggml's logger, then `cont` (when not NULL) as a
 * CONT continuation, from one new native thread (waiting for it to end) when `threaded`, else
 * from the calling thread.
 */
WSP_JS_API int32_t wsp_js_log_test(int32_t level, const char * text, const char * cont, int32_t threaded);


// ---------------------------------------------------------------------------------------------
// Abort

#define WSP_JS_ABORT_INFO_SIZE 8192
static char abort_info[WSP_JS_ABORT_INFO_SIZE];

/** The buffer JS writes the last call's description into (NUL-terminated UTF-8). */
WSP_JS_API char * wsp_js_abort_info(void) {
    return abort_info;
}

/** Size in bytes of the wsp_js_abort_info buffer. */
WSP_JS_API int32_t wsp_js_abort_info_size(void) {
    return WSP_JS_ABORT_INFO_SIZE;
}

static void wsp_js_abort(const char * message) {
    abort_info[WSP_JS_ABORT_INFO_SIZE - 1] = 0;
    fprintf(stderr, "%s\n", message);
    if (abort_info[0]) {
        fprintf(stderr, "wsp-ggml: the last native call from JS was %s\n", abort_info);
    } else {
        fprintf(stderr, "wsp-ggml: call abortTrace(true) to see which JS call led here\n");
    }
    fflush(stderr);
    wsp_ggml_print_backtrace();
}

__attribute__((constructor)) static void wsp_js_install_defaults(void) {
    wsp_ggml_log_set(wsp_js_log_dispatch, NULL);
    wsp_ggml_set_abort_callback(wsp_js_abort);
}

// ---------------------------------------------------------------------------------------------
// Test hook: a log message from the calling thread or from a native thread that is not it.

struct thread_args { int32_t level; const char * text; const char * cont; };
static void log_pair(const struct thread_args * a);

#if defined(_WIN32)
#    include <windows.h>
static DWORD WINAPI log_thread(LPVOID p) {
    struct thread_args * a = p;
    log_pair(a);
    return 0;
}
static int32_t log_from_thread(struct thread_args a) {
    HANDLE h = CreateThread(NULL, 0, log_thread, &a, 0, NULL);
    if (h == NULL) return -1;
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
    return 0;
}
#else
#    include <pthread.h>
static void * log_thread(void * p) {
    struct thread_args * a = p;
    log_pair(a);
    return NULL;
}
static int32_t log_from_thread(struct thread_args a) {
    pthread_t t;
    if (pthread_create(&t, NULL, log_thread, &a) != 0) return -1;
    pthread_join(t, NULL);
    return 0;
}
#endif

static void log_pair(const struct thread_args * a) {
    wsp_ggml_log_internal((enum wsp_ggml_log_level) a->level, "%s", a->text);
    if (a->cont) wsp_ggml_log_internal(WSP_GGML_LOG_LEVEL_CONT, "%s", a->cont);
}

int32_t wsp_js_log_test(int32_t level, const char * text, const char * cont, int32_t threaded) {
    struct thread_args a = { level, text, cont };
    if (threaded) return log_from_thread(a);
    log_pair(&a);
    return 0;
}
