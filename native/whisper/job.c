// The whisper_full job of job.h. whisper.cpp calls the callbacks on the thread that runs the job
// (wsp_whisper_job_run); the JS thread reads what they stored through the other functions, so
// segments are guarded by a mutex and progress and the abort flag are atomics.
#include "job.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#    define WIN32_LEAN_AND_MEAN
#    include <windows.h>
typedef SRWLOCK wsp_mutex;
static void mutex_init(wsp_mutex * m) { InitializeSRWLock(m); }
static void mutex_lock(wsp_mutex * m) { AcquireSRWLockExclusive(m); }
static void mutex_unlock(wsp_mutex * m) { ReleaseSRWLockExclusive(m); }
static void mutex_destroy(wsp_mutex * m) { (void)m; }
#else
#    include <pthread.h>
typedef pthread_mutex_t wsp_mutex;
static void mutex_init(wsp_mutex * m) { pthread_mutex_init(m, NULL); }
static void mutex_lock(wsp_mutex * m) { pthread_mutex_lock(m); }
static void mutex_unlock(wsp_mutex * m) { pthread_mutex_unlock(m); }
static void mutex_destroy(wsp_mutex * m) { pthread_mutex_destroy(m); }
#endif

struct wsp_whisper_segment {
    int64_t t0;
    int64_t t1;
    char * text;
    int len;
};

struct wsp_whisper_job {
    struct whisper_context * ctx;
    struct whisper_state * state;
    struct whisper_full_params params;
    float * samples;
    int n_samples;
    // Owned copies of the params' strings, so that JS may free its buffers once job_new returns.
    char * language;
    char * initial_prompt;
    char * suppress_regex;
    char * vad_model_path;

    atomic_int abort;
    atomic_int progress;

    wsp_mutex lock;
    struct wsp_whisper_segment * segments;
    int n_segments;
    int cap_segments;
};

static char * dup_string(const char * s, int * failed) {
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char * out = (char *)malloc(n);
    if (out == NULL) *failed = 1;
    else memcpy(out, s, n);
    return out;
}

static void on_new_segment(struct whisper_context * ctx, struct whisper_state * state, int n_new, void * user_data) {
    (void)ctx;
    struct wsp_whisper_job * job = (struct wsp_whisper_job *)user_data;
    const int n = whisper_full_n_segments_from_state(state);
    mutex_lock(&job->lock);
    for (int i = n - n_new; i < n; i++) {
        if (i < 0) continue;
        if (job->n_segments == job->cap_segments) {
            int cap = job->cap_segments ? job->cap_segments * 2 : 16;
            struct wsp_whisper_segment * grown = (struct wsp_whisper_segment *)realloc(job->segments, (size_t)cap * sizeof *grown);
            if (grown == NULL) break; // the final result stays readable from the state
            job->segments = grown;
            job->cap_segments = cap;
        }
        const char * text = whisper_full_get_segment_text_from_state(state, i);
        int failed = 0;
        char * copy = dup_string(text ? text : "", &failed);
        if (failed) break;
        struct wsp_whisper_segment * seg = &job->segments[job->n_segments++];
        seg->t0 = whisper_full_get_segment_t0_from_state(state, i);
        seg->t1 = whisper_full_get_segment_t1_from_state(state, i);
        seg->text = copy;
        seg->len = (int)strlen(copy);
    }
    mutex_unlock(&job->lock);
}

static void on_progress(struct whisper_context * ctx, struct whisper_state * state, int progress, void * user_data) {
    (void)ctx;
    (void)state;
    atomic_store(&((struct wsp_whisper_job *)user_data)->progress, progress);
}

static bool on_abort(void * user_data) {
    return atomic_load(&((struct wsp_whisper_job *)user_data)->abort) != 0;
}

// whisper.cpp's encoder_begin callback proceeds on true: the negation of the abort flag.
static bool on_encoder_begin(struct whisper_context * ctx, struct whisper_state * state, void * user_data) {
    (void)ctx;
    (void)state;
    return !on_abort(user_data);
}

struct wsp_whisper_job * wsp_whisper_job_new(struct whisper_context * ctx, const struct whisper_full_params * params, const float * samples, int n_samples) {
    if (ctx == NULL || params == NULL || n_samples < 0 || (n_samples > 0 && samples == NULL)) return NULL;
    struct wsp_whisper_job * job = (struct wsp_whisper_job *)calloc(1, sizeof *job);
    if (job == NULL) return NULL;
    job->ctx = ctx;
    job->params = *params;
    int failed = 0;
    job->language = dup_string(params->language, &failed);
    job->initial_prompt = dup_string(params->initial_prompt, &failed);
    job->suppress_regex = dup_string(params->suppress_regex, &failed);
    job->vad_model_path = dup_string(params->vad_model_path, &failed);
    job->n_samples = n_samples;
    job->samples = (float *)malloc(n_samples > 0 ? (size_t)n_samples * sizeof(float) : 1);
    if (job->samples == NULL) failed = 1;
    else if (n_samples > 0) memcpy(job->samples, samples, (size_t)n_samples * sizeof(float));
    atomic_init(&job->abort, 0);
    atomic_init(&job->progress, 0);
    mutex_init(&job->lock);
    if (!failed) job->state = whisper_init_state(ctx);
    if (failed || job->state == NULL) {
        wsp_whisper_job_free(job);
        return NULL;
    }
    struct whisper_full_params * p = &job->params;
    p->language = job->language;
    p->initial_prompt = job->initial_prompt;
    p->suppress_regex = job->suppress_regex;
    p->vad_model_path = job->vad_model_path;
    p->new_segment_callback = on_new_segment;
    p->new_segment_callback_user_data = job;
    p->progress_callback = on_progress;
    p->progress_callback_user_data = job;
    p->abort_callback = on_abort;
    p->abort_callback_user_data = job;
    p->encoder_begin_callback = on_encoder_begin;
    p->encoder_begin_callback_user_data = job;
    return job;
}

int wsp_whisper_job_run(struct wsp_whisper_job * job) {
    if (job == NULL) return -1;
    return whisper_full_with_state(job->ctx, job->state, job->params, job->samples, job->n_samples);
}

void wsp_whisper_job_abort(struct wsp_whisper_job * job) {
    if (job) atomic_store(&job->abort, 1);
}

int wsp_whisper_job_aborted(const struct wsp_whisper_job * job) {
    return job ? atomic_load(&((struct wsp_whisper_job *)job)->abort) : 0;
}

int wsp_whisper_job_progress(const struct wsp_whisper_job * job) {
    return job ? atomic_load(&((struct wsp_whisper_job *)job)->progress) : 0;
}

int wsp_whisper_job_n_segments(struct wsp_whisper_job * job) {
    if (job == NULL) return 0;
    mutex_lock(&job->lock);
    int n = job->n_segments;
    mutex_unlock(&job->lock);
    return n;
}

int wsp_whisper_job_segment(struct wsp_whisper_job * job, int i, int64_t * t0, int64_t * t1, char * buf, int cap) {
    if (job == NULL) return -1;
    mutex_lock(&job->lock);
    if (i < 0 || i >= job->n_segments) {
        mutex_unlock(&job->lock);
        return -1;
    }
    const struct wsp_whisper_segment * seg = &job->segments[i];
    if (t0) *t0 = seg->t0;
    if (t1) *t1 = seg->t1;
    if (buf && cap > 0) {
        int n = seg->len < cap - 1 ? seg->len : cap - 1;
        memcpy(buf, seg->text, (size_t)n);
        buf[n] = '\0';
    }
    int len = seg->len;
    mutex_unlock(&job->lock);
    return len;
}

struct whisper_state * wsp_whisper_job_state(struct wsp_whisper_job * job) {
    return job ? job->state : NULL;
}

void wsp_whisper_job_free(struct wsp_whisper_job * job) {
    if (job == NULL) return;
    if (job->state) whisper_free_state(job->state);
    for (int i = 0; i < job->n_segments; i++) free(job->segments[i].text);
    free(job->segments);
    free(job->samples);
    free(job->language);
    free(job->initial_prompt);
    free(job->suppress_regex);
    free(job->vad_model_path);
    mutex_destroy(&job->lock);
    free(job);
}
