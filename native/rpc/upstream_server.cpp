// llama.cpp's own rpc-server (tools/rpc/rpc-server.cpp of the second pin, laid out renamed in
// vendor/llama-tools/ by scripts/vendor.mjs), compiled unchanged against libwsp-ggml as the
// upstream peer of tests/rpc_interop.test.ts and bench/rpc.mjs (`zig build rpc-upstream`).
//
// Two calls are redirected, because this build differs from upstream's where the tool meets it:
//   - wsp_ggml_backend_load_all searches the executable's folder and the working directory; the
//     CPU variants are installed in ../lib beside bin/, so that folder is searched too
//     (native/upstream_load.h, shared with native/llama/bench.cpp);
//   - the base library is built without WSP_GGML_USE_RPC (the RPC backend is reached through its
//     own API, not the registry), so the registry has no "RPC" entry: it is answered here with
//     wsp_ggml_backend_rpc_reg(), whose get_proc_address gives the same server entry point.
#include "ggml-backend.h"
#include "ggml-rpc.h"

#include "../upstream_load.h"

#include <cstring>

static wsp_ggml_backend_reg_t wsp_upstream_reg_by_name(const char * name) {
    if (name != nullptr && strcmp(name, "RPC") == 0) {
        return wsp_ggml_backend_rpc_reg();
    }
    return wsp_ggml_backend_reg_by_name(name);
}

#define wsp_ggml_backend_load_all wsp_upstream_load_all
#define wsp_ggml_backend_reg_by_name wsp_upstream_reg_by_name
#include "rpc/rpc-server.cpp"
