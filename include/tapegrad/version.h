/* tapegrad/version.h - the library's version and the backends it was built
 * with. */
#ifndef TAPEGRAD_VERSION_H
#define TAPEGRAD_VERSION_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_VERSION_MAJOR 0
#define TG_VERSION_MINOR 1
#define TG_VERSION_PATCH 0
#define TG_VERSION_STRING "0.1.0"

/* The library's version string ("0.1.0"); may differ from TG_VERSION_STRING
 * when a program runs against a newer shared library. */
const char *tg_lib_version(void);

/* "cpu" or "cpu+cuda": the backends this build of the library contains. */
const char *tg_build_backends(void);

/* The instruction set the CPU's fused log-prob kernels run on this machine:
 * "avx512", "avx2" (with FMA) or "base" (x86-64's SSE2, or another
 * architecture). The best the CPU has, unless the environment variable
 * TAPEGRAD_CPU_KERNELS names a lower one (avx2 or base); it is read once,
 * when the kernels first run or this function or tg_cpu_stream_stores is
 * first called: for measuring one variant on a CPU that has several. avx512
 * and avx2 give bit-identical results; x86-64's base (no fused
 * multiply-add) can differ from them by a few float ulps. f64 logits use
 * the same code on every CPU. Never NULL; static storage. */
const char *tg_cpu_kernels(void);

/* Whether the CPU's fused log-prob backward writes f32 rows of 4096
 * entries or more with non-temporal stores (past the caches, without
 * reading the lines first): the variant's default (on with avx512, off
 * otherwise), or TAPEGRAD_CPU_STREAM_STORES=on|off, read once as above.
 * Always false off x86-64, which has no such stores here. Results are the
 * same either way; only the speed differs. */
bool tg_cpu_stream_stores(void);

#ifdef __cplusplus
}
#endif
#endif
