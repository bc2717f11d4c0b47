/* kernels/cuda/cuda_internal.h - the CUDA runtime layer (kernels/cuda/runtime.cu)
 * as seen from the C library: device discovery, the caching device allocator,
 * host <-> device copies, and the error checks every CUDA file uses. Not
 * installed. Included by C files (tape/) and by .cu files (compiled as C++),
 * so everything here has C linkage and uses C types only.
 *
 * Only compiled in when the build has the CUDA backend (TG_HAVE_CUDA); C
 * files reach it through tape/device.c, which answers TG_ERR_DEVICE without
 * it. No function here aborts: every CUDA / cuBLAS failure becomes
 * TG_ERR_CUDA naming the failing call, its file:line and the CUDA message.
 */
#ifndef TG_CUDA_INTERNAL_H
#define TG_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tapegrad/status.h"

#ifdef __cplusplus
extern "C" {
/* From tape/error.c (tg_internal.h is C only). */
tg_status tg__set_error(tg_status st, const char *fmt, ...);
#endif

/* Number of CUDA devices (cudaGetDeviceCount, asked once per process). 0 when
 * there is no driver or no device: that is not an error, the CUDA error state
 * is cleared and the thread's tapegrad error is left alone. */
int tg__cuda_device_count(void);

/* Why tg__cuda_device_count() is 0 ("cudaGetDeviceCount: no CUDA-capable
 * device is detected (cudaErrorNoDevice)"); "" when a device exists. Static. */
const char *tg__cuda_unavailable_reason(void);

/* Device memory through the caching allocator: sizes are rounded up to a
 * class (multiples of 512 B below 2 MiB, of 2 MiB above) and a freed block
 * goes to its class's free list, reused by the next allocation of exactly
 * that class. On success *p is the block (at least nbytes; nbytes 0 gives a
 * valid 512 B block). Errors: TG_ERR_NOMEM (cudaMalloc out of memory, even
 * after giving the cache back), TG_ERR_CUDA (any other CUDA failure). The
 * caller must have checked tg__cuda_device_count() > 0. */
tg_status tg__cuda_alloc(void **p, size_t nbytes);
/* Puts the block allocated for nbytes back in its class's free list. */
void tg__cuda_free(void *p, size_t nbytes);
/* Bytes in the free lists now (allocated from CUDA, not in use). */
size_t tg__cuda_cached_bytes(void);
/* cudaFree of every cached block. TG_OK, or TG_ERR_CUDA (the failing block
 * is dropped from the cache either way). TG_OK when no device. */
tg_status tg__cuda_empty_cache(void);

/* Synchronous copies of n contiguous bytes (cudaMemcpy). TG_OK when n is 0.
 * Errors: TG_ERR_CUDA. */
tg_status tg__cuda_copy_h2d(void *dst_dev, const void *src_host, size_t n);
tg_status tg__cuda_copy_d2h(void *dst_host, const void *src_dev, size_t n);
tg_status tg__cuda_copy_d2d(void *dst_dev, const void *src_dev, size_t n);

/* The error checks (used in .cu files): TG__CUDA_CHECK(cudaMalloc(&p, n))
 * evaluates the call once and, on failure, records TG_ERR_CUDA
 * "cudaMalloc(&p, n) failed at kernels/cuda/runtime.cu:42: out of memory
 * (cudaErrorMemoryAllocation)", clears the CUDA error state and yields the
 * status (TG_OK on success). TG__CUBLAS_CHECK is the same for a
 * cublasStatus_t. The recorders take the status as an int so that this
 * header needs no CUDA header. */
tg_status tg__cuda_check(int err, const char *call, const char *file, int line);
tg_status tg__cublas_check(int err, const char *call, const char *file, int line);
#define TG__CUDA_CHECK(call) tg__cuda_check((int)(call), #call, __FILE__, __LINE__)
#define TG__CUBLAS_CHECK(call) tg__cublas_check((int)(call), #call, __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif
#endif
