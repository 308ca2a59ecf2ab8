// Compiled into every CPU backend variant: lets a caller ask a loaded variant which one it
// is, without relying on its file name.
#include "ggml-backend.h"

/** The variant name this CPU backend was built as ("haswell", "armv8.2", "native", …). */
WSP_GGML_BACKEND_API const char * wsp_ggml_cpu_variant_name(void);

const char * wsp_ggml_cpu_variant_name(void) {
    return WSP_GGML_CPU_VARIANT_NAME;
}
