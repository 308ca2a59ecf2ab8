// llama.cpp's llama-bench (tools/llama-bench/llama-bench.cpp of the second pin, llama.cpp b6673,
// laid out renamed in vendor/llama/ by scripts/vendor.mjs), compiled unchanged against
// libwsp-ggml as the reference side of bench/llm_run.mjs (`zig build llama-bench`).
//
// One call is redirected, because this build differs from upstream's where the tool meets it:
// wsp_ggml_backend_load_all also searches ../lib, where the CPU variants are installed
// (native/upstream_load.h, as for native/rpc/upstream_server.cpp).
#include "../upstream_load.h"

#define wsp_ggml_backend_load_all wsp_upstream_load_all
#include "tools/llama-bench/llama-bench.cpp"
