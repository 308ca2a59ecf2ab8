// What the machine has and how busy it is, for the thread policy and the memory checks
// (src/runtime/machine.ts): CPU time counters (how many cores other processes keep busy is the
// difference of two readings), physical cores, physical memory. In C rather than TypeScript
// because Deno lets a script read /proc only with --allow-all, and os.loadavg() (a lagging
// average) and os.totalmem() only with --allow-sys.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#    define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(_WIN32)
#    define WIN32_LEAN_AND_MEAN
#    include <windows.h>
#    define WSP_JS_API
#else
#    include <sys/resource.h>
#    include <unistd.h>
#    define WSP_JS_API __attribute__((visibility("default")))
#endif
#if defined(__APPLE__)
#    include <mach/mach.h>
#    include <mach/mach_host.h>
#    include <sys/sysctl.h>
#endif

static double seconds(struct timeval tv) {
    return (double) tv.tv_sec + (double) tv.tv_usec / 1e6;
}

// out[0]: seconds of CPU time every core has spent busy (all processes, since boot);
// out[1]: seconds of CPU time in all (busy + idle), summed over the cores;
// out[2]: seconds of CPU time this process has used (user + system);
// out[3]: a monotonic clock, in seconds.
// Returns 1, or 0 where the machine-wide figures cannot be read (then out[0..1] are 0).
WSP_JS_API int32_t wsp_js_cpu_times(double * out) {
    out[0] = out[1] = out[2] = out[3] = 0;
    int32_t ok = 0;
#if defined(_WIN32)
    FILETIME idle, kernel, user, created, exited, pk, pu;
    if (GetSystemTimes(&idle, &kernel, &user)) {
        // 100 ns units; the kernel time includes the idle time.
        const double i = (double) (((uint64_t) idle.dwHighDateTime << 32) | idle.dwLowDateTime) / 1e7;
        const double k = (double) (((uint64_t) kernel.dwHighDateTime << 32) | kernel.dwLowDateTime) / 1e7;
        const double u = (double) (((uint64_t) user.dwHighDateTime << 32) | user.dwLowDateTime) / 1e7;
        out[0] = k + u - i;
        out[1] = k + u;
        ok = 1;
    }
    if (GetProcessTimes(GetCurrentProcess(), &created, &exited, &pk, &pu)) {
        out[2] = (double) ((((uint64_t) pk.dwHighDateTime << 32) | pk.dwLowDateTime) + (((uint64_t) pu.dwHighDateTime << 32) | pu.dwLowDateTime)) / 1e7;
    }
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    out[3] = (double) c.QuadPart / (double) f.QuadPart;
#else
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) out[2] = seconds(ru.ru_utime) + seconds(ru.ru_stime);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    out[3] = (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
#    if defined(__linux__)
    FILE * f = fopen("/proc/stat", "r");
    if (f) {
        // cpu  user nice system idle iowait irq softirq steal (clock ticks). Niced time counts as
        // busy: with autogroup scheduling (most Linux desktops, and this project's CI machines) a
        // niced process in another session gets a full share of a core, measured so.
        unsigned long long v[8] = { 0 };
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) >= 4) {
            const double tick = (double) sysconf(_SC_CLK_TCK);
            const double idle = (double) (v[3] + v[4]);
            double all = 0;
            for (int i = 0; i < 8; i++) all += (double) v[i];
            out[0] = (all - idle) / tick;
            out[1] = all / tick;
            ok = 1;
        }
        fclose(f);
    }
#    elif defined(__APPLE__)
    host_cpu_load_info_data_t load;
    mach_msg_type_number_t count = HOST_CPU_LOAD_INFO_COUNT;
    mach_port_t host = mach_host_self();
    if (host_statistics(host, HOST_CPU_LOAD_INFO, (host_info_t) &load, &count) == KERN_SUCCESS) {
        const double tick = (double) sysconf(_SC_CLK_TCK);
        const double user = (double) load.cpu_ticks[CPU_STATE_USER] + (double) load.cpu_ticks[CPU_STATE_NICE];
        const double sys = (double) load.cpu_ticks[CPU_STATE_SYSTEM];
        const double idle = (double) load.cpu_ticks[CPU_STATE_IDLE];
        out[0] = (user + sys) / tick;
        out[1] = (user + sys + idle) / tick;
        ok = 1;
    }
    mach_port_deallocate(mach_task_self(), host);
#    endif
#endif
    return ok;
}

// Physical cores of the online CPUs (SMT siblings counted once), or 0 where unknown.
WSP_JS_API int32_t wsp_js_physical_cores(void) {
#if defined(__linux__)
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0 || n > 4096) return 0;
    // Each core's sibling list, as the kernel prints it ("0,8" or "0-1"); distinct lists are cores.
    static char seen[4096][32];
    int32_t cores = 0;
    for (long cpu = 0; cpu < n; cpu++) {
        char path[96], list[32] = { 0 };
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/thread_siblings_list", cpu);
        FILE * f = fopen(path, "r");
        if (!f) return 0;
        const int got = fscanf(f, "%31s", list);
        fclose(f);
        if (got != 1) return 0;
        int known = 0;
        for (int32_t i = 0; i < cores && !known; i++) known = strcmp(seen[i], list) == 0;
        if (!known) memcpy(seen[cores++], list, sizeof list);
    }
    return cores;
#elif defined(__APPLE__)
    int32_t cores = 0;
    size_t size = sizeof cores;
    return sysctlbyname("hw.physicalcpu", &cores, &size, NULL, 0) == 0 ? cores : 0;
#else
    return 0;
#endif
}

// Bytes of physical memory, or 0 where unknown (os.totalmem() needs --allow-sys on Deno).
WSP_JS_API double wsp_js_total_memory(void) {
#if defined(_WIN32)
    MEMORYSTATUSEX m;
    m.dwLength = sizeof m;
    return GlobalMemoryStatusEx(&m) ? (double) m.ullTotalPhys : 0;
#elif defined(__APPLE__)
    uint64_t bytes = 0;
    size_t size = sizeof bytes;
    return sysctlbyname("hw.memsize", &bytes, &size, NULL, 0) == 0 ? (double) bytes : 0;
#else
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double) pages * (double) page : 0;
#endif
}
