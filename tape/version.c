/* tape/version.c - library version and the backends compiled in. */
#include "tapegrad/version.h"
#include "../kernels/kernel.h"

const char *tg_lib_version(void) { return TG_VERSION_STRING; }

/* "cpu+cuda" when the CUDA backend was compiled in (whether or not this
 * machine has a device: see tg_cuda_device_count). */
const char *tg_build_backends(void) {
    return tg__cuda_backend.compiled_in ? "cpu+cuda" : "cpu";
}

const char *tg_cpu_kernels(void) { return tg__cpu_backend.kernel_variant(); }

bool tg_cpu_stream_stores(void) { return tg__cpu_backend.stream_stores(); }
