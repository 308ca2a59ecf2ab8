// Shared by llama.cpp's programs built against libwsp-ggml (native/rpc/upstream_server.cpp,
// native/llama/bench.cpp): wsp_ggml_backend_load_all searches the executable's folder and the
// working directory; the CPU variants are installed in ../lib beside bin/, so that folder is
// searched too when those found nothing. Each program #defines wsp_ggml_backend_load_all to
// wsp_upstream_load_all before it includes the upstream source.
#pragma once
#include "ggml-backend.h"

#include <filesystem>
#include <string>
#include <system_error>

#if defined(__APPLE__)
#    include <mach-o/dyld.h>
#elif defined(_WIN32)
#    include <windows.h>
#endif

static std::filesystem::path wsp_upstream_exe_dir() {
#if defined(__APPLE__)
    char buf[4096];
    uint32_t size = sizeof(buf);
    if (_NSGetExecutablePath(buf, &size) == 0) {
        return std::filesystem::path(buf).parent_path();
    }
    return {};
#elif defined(_WIN32)
    wchar_t buf[MAX_PATH];
    DWORD n = GetModuleFileNameW(nullptr, buf, MAX_PATH);
    return n > 0 && n < MAX_PATH ? std::filesystem::path(buf).parent_path() : std::filesystem::path();
#else
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : p.parent_path();
#endif
}

static void wsp_upstream_load_all() {
    wsp_ggml_backend_load_all();
    if (wsp_ggml_backend_dev_count() > 0) {
        return;
    }
    const auto lib = wsp_upstream_exe_dir() / ".." / "lib";
    std::error_code ec;
    if (std::filesystem::is_directory(lib, ec)) {
        wsp_ggml_backend_load_all_from_path(lib.string().c_str());
    }
}
