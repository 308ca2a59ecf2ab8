// whisper.cpp's own command-line program (examples/cli/cli.cpp of the third pin, whisper.cpp
// 1.9.1's examples from the npm package nodejs-whisper, laid out renamed in vendor/whisper-cli/
// by scripts/vendor.mjs), compiled unchanged against libwsp-whisper (whisper.rn's whisper.cpp)
// and libwsp-ggml as the reference side of bench/whisper_run.mjs (`zig build whisper-cli`).
//
// One call is redirected, as for llama.cpp's programs: wsp_ggml_backend_load_all also searches
// ../lib, where the CPU variants are installed (native/upstream_load.h).
#include "../upstream_load.h"

#define wsp_ggml_backend_load_all wsp_upstream_load_all
#include "cli/cli.cpp"
