// Keeps each wsp-ggml library mapped until the process exits, whatever the FFI runtime does.
//
// Why: koffi (Node) dlclose()s libraries when it tears down, and the statically linked C++
// runtime leaves exit handlers pointing into the unmapped code: the process then dies with
// SIGSEGV in exit(). ggml itself says its backends "cannot be safely unloaded"
// (ggml-backend-reg.cpp), so the library pins itself the way `-z nodelete` would.
#if !defined(_WIN32)
#    if !defined(_GNU_SOURCE)
#        define _GNU_SOURCE
#    endif
#    include <dlfcn.h>

__attribute__((constructor)) static void wsp_ggml_pin_library(void) {
    Dl_info info;
    if (dladdr((void *) &wsp_ggml_pin_library, &info) && info.dli_fname) {
        // RTLD_NOLOAD: only takes another reference (with NODELETE) on the image already loaded.
        (void) dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
}
#endif
