/* tape/version.c - library version and the backends compiled in. */
#include "tg_internal.h"

const char *tg_lib_version(void) { return TG_VERSION_STRING; }

/* The CUDA toolkit is detected at configure time (TG_HAVE_CUDA), but no CUDA
 * kernels exist yet, so only the CPU backend is reported. */
const char *tg_build_backends(void) { return "cpu"; }
