// A whisper_full run driven through memory: the segments, progress and abort flag that whisper.cpp
// reports through callbacks land in a job object that JS polls. JS callbacks cannot be called from
// whisper's worker threads on every runtime (Deno, Bun, Node), so none is ever installed.
#ifndef WSP_WHISPER_JOB_H
#define WSP_WHISPER_JOB_H

#include <stdint.h>

#include "whisper.h"

#ifdef __cplusplus
extern "C" {
#endif

struct wsp_whisper_job;

// Copies *params (and strdup's its language and initial_prompt strings) and the samples; creates its own whisper_state with whisper_init_state(ctx). Returns NULL on allocation failure.
WHISPER_API struct wsp_whisper_job * wsp_whisper_job_new(struct whisper_context * ctx, const struct whisper_full_params * params, const float * samples, int n_samples);

// Runs whisper_full_with_state(ctx, job state, params, samples, n) with the job's own new_segment, progress, abort and encoder_begin callbacks. Returns whisper_full's result; callable from a non-JS thread.
WHISPER_API int wsp_whisper_job_run(struct wsp_whisper_job * job);

// Sets the abort flag (any thread): the run stops at whisper's next abort or encoder_begin check.
WHISPER_API void wsp_whisper_job_abort(struct wsp_whisper_job * job);

// Whether wsp_whisper_job_abort was called.
WHISPER_API int wsp_whisper_job_aborted(const struct wsp_whisper_job * job);

// Progress of the run, 0..100.
WHISPER_API int wsp_whisper_job_progress(const struct wsp_whisper_job * job);

// The number of segments copied so far.
WHISPER_API int wsp_whisper_job_n_segments(struct wsp_whisper_job * job);

// Segment i so far: writes t0/t1 (centiseconds) and copies its text NUL-terminated into buf (at most cap bytes incl. NUL). Returns the text's byte length (excluding NUL), or -1 when i is out of range.
WHISPER_API int wsp_whisper_job_segment(struct wsp_whisper_job * job, int i, int64_t * t0, int64_t * t1, char * buf, int cap);

// The job's whisper_state: read the final result with whisper_full_*_from_state after run returns.
WHISPER_API struct whisper_state * wsp_whisper_job_state(struct wsp_whisper_job * job);

// Frees the state, the copies and the strings.
WHISPER_API void wsp_whisper_job_free(struct wsp_whisper_job * job);

#ifdef __cplusplus
}
#endif

#endif
