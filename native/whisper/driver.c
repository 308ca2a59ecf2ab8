// The C reference of the whisper bindings: transcribes a WAV file with whisper_full and the same
// defaults as the TypeScript API, so that its transcript can be compared with the bindings' and
// its time is the C baseline of the benchmark.
//
//   wsp-whisper-driver MODEL WAV [--threads N] [--language L] [--flash-attn 0|1] [--lib DIR] [--cpu-variant NAME]
//
// stdout: the segments' text, concatenated, then a newline.
// stderr: whisper.cpp's log, then `time_ms: <wall time of whisper_full alone>`.
//
// Parameters: whisper_full_default_params(WHISPER_SAMPLING_GREEDY) as whisper.cpp sets them
// (n_threads min(4, cores), no_context true, language "en", temperature fallback on) with the
// printing turned off; whisper_context_default_params() as whisper.cpp sets them (use_gpu true,
// flash_attn true unless --flash-attn 0). The CPU backend variants (and Vulkan) come from --lib, by default ../lib from
// the program (zig-out/lib beside zig-out/bin; zig's RUNPATH may name its cache first, so the folder
// of the libwsp-ggml that was loaded is only the fallback). --cpu-variant (default: $WSP_GGML_CPU_VARIANT, as the
// bindings' loader reads it) loads that CPU variant alone instead of the best-scoring one, and nothing else.
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "whisper.h"

#if defined(_WIN32)
#    define WIN32_LEAN_AND_MEAN
#    include <windows.h>
#else
#    include <dlfcn.h>
#endif

static double now_ms(void) {
#if defined(_WIN32)
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart * 1000.0 / (double)f.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
#endif
}

static uint32_t u32le(const unsigned char * p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t u16le(const unsigned char * p) { return (uint16_t)(p[0] | p[1] << 8); }

// A minimal RIFF/WAVE reader: 16-bit PCM, mono, 16 kHz only (what whisper takes without resampling).
static float * read_wav(const char * path, int * n_out) {
    FILE * f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char * data = size > 0 ? (unsigned char *)malloc((size_t)size) : NULL;
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "cannot read %s\n", path);
        fclose(f);
        free(data);
        return NULL;
    }
    fclose(f);
    float * out = NULL;
    int fmt_ok = 0;
    if (size < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WAVE", 4) != 0) {
        fprintf(stderr, "%s: not a RIFF/WAVE file\n", path);
        goto done;
    }
    for (long at = 12; at + 8 <= size;) {
        uint32_t len = u32le(data + at + 4);
        const unsigned char * body = data + at + 8;
        if ((long)len > size - at - 8) len = (uint32_t)(size - at - 8);
        if (memcmp(data + at, "fmt ", 4) == 0 && len >= 16) {
            uint16_t format = u16le(body), channels = u16le(body + 2), bits = u16le(body + 14);
            uint32_t rate = u32le(body + 4);
            if (format != 1 || channels != 1 || rate != 16000 || bits != 16) {
                fprintf(stderr, "%s: need 16-bit PCM mono 16 kHz, got format %u, %u channels, %u Hz, %u bits\n", path, format, channels, rate, bits);
                goto done;
            }
            fmt_ok = 1;
        } else if (memcmp(data + at, "data", 4) == 0) {
            if (!fmt_ok) {
                fprintf(stderr, "%s: data chunk before fmt chunk\n", path);
                goto done;
            }
            int n = (int)(len / 2);
            out = (float *)malloc(n > 0 ? (size_t)n * sizeof(float) : 1);
            if (!out) goto done;
            for (int i = 0; i < n; i++) out[i] = (float)(int16_t)u16le(body + 2 * i) / 32768.0f;
            *n_out = n;
            goto done;
        }
        at += 8 + (long)len + (len & 1);
    }
    fprintf(stderr, "%s: no data chunk\n", path);
done:
    free(data);
    return out;
}

// The folder of libwsp-ggml, where the CPU variants lie beside it.
static void library_dir(char * buf, size_t cap) {
    snprintf(buf, cap, ".");
#if defined(_WIN32)
    HMODULE m = NULL;
    if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT, (LPCSTR)(void *)&wsp_ggml_backend_load_all_from_path, &m) &&
        GetModuleFileNameA(m, buf, (DWORD)cap)) {
        char * slash = strrchr(buf, '\\');
        if (slash) *slash = '\0';
    }
#else
    Dl_info info;
    if (dladdr((const void *)&wsp_ggml_backend_load_all_from_path, &info) && info.dli_fname) {
        snprintf(buf, cap, "%s", info.dli_fname);
        char * slash = strrchr(buf, '/');
        if (slash) *slash = '\0';
        else snprintf(buf, cap, ".");
    }
#endif
}

int main(int argc, char ** argv) {
    const char * model = NULL, * wav = NULL, * language = NULL, * lib = NULL, * variant = getenv("WSP_GGML_CPU_VARIANT");
    int threads = 0, flash_attn = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--flash-attn") == 0 && i + 1 < argc) flash_attn = atoi(argv[++i]) != 0;
        else if (strcmp(argv[i], "--language") == 0 && i + 1 < argc) language = argv[++i];
        else if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc) lib = argv[++i];
        else if (strcmp(argv[i], "--cpu-variant") == 0 && i + 1 < argc) variant = argv[++i];
        else if (!model) model = argv[i];
        else if (!wav) wav = argv[i];
        else {
            wav = NULL;
            break;
        }
    }
    if (!model || !wav) {
        fprintf(stderr, "usage: wsp-whisper-driver MODEL WAV [--threads N] [--language L] [--flash-attn 0|1] [--lib DIR] [--cpu-variant NAME]\n");
        return 2;
    }
    char dir[4096];
    const char * slash = strrchr(argv[0], '/');
#if defined(_WIN32)
    const char * bslash = strrchr(argv[0], '\\');
    if (bslash && (!slash || bslash > slash)) slash = bslash;
#endif
    if (lib) snprintf(dir, sizeof dir, "%s", lib);
    else if (slash) snprintf(dir, sizeof dir, "%.*s/../lib", (int)(slash - argv[0]), argv[0]);
    else library_dir(dir, sizeof dir);
    if (variant && *variant) {
        char path[4200];
#if defined(_WIN32)
        snprintf(path, sizeof path, "%s\\ggml-cpu-%s.dll", dir, variant);
#else
        snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", dir, variant);
#endif
        // ggml's loader refuses a variant whose score is 0 on this CPU (and a missing file).
        if (!wsp_ggml_backend_load(path)) {
            fprintf(stderr, "the CPU variant %s (%s) is missing or cannot run on this CPU\n", variant, path);
            return 2;
        }
    } else {
        wsp_ggml_backend_load_all_from_path(dir);
    }
    if (!wsp_ggml_backend_reg_by_name("CPU")) {
        fprintf(stderr, "no CPU backend variant in %s can run on this CPU\n", dir);
        return 2;
    }

    int n_samples = 0;
    float * samples = read_wav(wav, &n_samples);
    if (!samples) return 1;

    struct whisper_context_params cparams = whisper_context_default_params();
    if (flash_attn >= 0) cparams.flash_attn = flash_attn;
    struct whisper_context * ctx = whisper_init_from_file_with_params(model, cparams);
    if (!ctx) {
        fprintf(stderr, "cannot load the model %s\n", model);
        free(samples);
        return 1;
    }
    struct whisper_full_params params = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
    params.print_progress = false;
    params.print_realtime = false;
    params.print_timestamps = false;
    params.print_special = false;
    if (threads > 0) params.n_threads = threads;
    if (language) params.language = language;

    const double t0 = now_ms();
    const int rc = whisper_full(ctx, params, samples, n_samples);
    const double t1 = now_ms();
    if (rc != 0) {
        fprintf(stderr, "whisper_full failed: %d\n", rc);
        whisper_free(ctx);
        free(samples);
        return 1;
    }
    const int n = whisper_full_n_segments(ctx);
    for (int i = 0; i < n; i++) fputs(whisper_full_get_segment_text(ctx, i), stdout);
    fputs("\n", stdout);
    fflush(stdout);
    fprintf(stderr, "time_ms: %.3f\n", t1 - t0);
    whisper_free(ctx);
    free(samples);
    return 0;
}
