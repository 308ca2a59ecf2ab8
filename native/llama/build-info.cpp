// What CMake generates from common/build-info.cpp.in for upstream's builds: the build that
// llama-bench reports in its output (build_commit, build_number). The release and commit are
// the second pin's (vendor/manifest.json, "second".bundle).
int LLAMA_BUILD_NUMBER = 6673;
char const * LLAMA_COMMIT = "50d26e8";
char const * LLAMA_COMPILER = "zig 0.15.2 (clang)";
char const * LLAMA_BUILD_TARGET = "wsp-ggml zig build llama-bench";
