// llama.cpp's own rpc-server (tools/rpc/rpc-server.cpp of the second pin, laid out renamed in
// vendor/llama-tools/ by scripts/vendor.mjs), compiled unchanged against libwsp-ggml as the
// upstream peer of tests/rpc_interop.test.ts and bench/rpc.mjs (`zig build rpc-upstream`).
//
// Two calls are redirected, because this build differs from upstream's where the tool meets it:
//   - wsp_ggml_backend_load_all searches the executable's folder and the working directory; the
//     CPU variants are installed in ../lib beside bin/, so that folder is searched too;
//   - the base library is built without WSP_GGML_USE_RPC (the RPC backend is reached through its
//     own API, not the registry), so the registry has no "RPC" entry: it is answered here with
//     wsp_ggml_backend_rpc_reg(), whose get_proc_address gives the same server entry point.
#include "ggml-backend.h"
#include "ggml-rpc.h"

#include <cstring>
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

static wsp_ggml_backend_reg_t wsp_upstream_reg_by_name(const char * name) {
    if (name != nullptr && strcmp(name, "RPC") == 0) {
        return wsp_ggml_backend_rpc_reg();
    }
    return wsp_ggml_backend_reg_by_name(name);
}

#define wsp_ggml_backend_load_all wsp_upstream_load_all
#define wsp_ggml_backend_reg_by_name wsp_upstream_reg_by_name
#include "rpc/rpc-server.cpp"
