/* tapegrad/cuda.h - the CUDA device: discovery and the device memory cache.
 *
 * Tensors live on TG_CPU or TG_CUDA (the current CUDA device of the process).
 * tg_to_device() (tensor.h) copies a tensor between them; tg_copy_out,
 * tg_item, tg_get and tg_print read CUDA tensors by copying to the host.
 * Ops with CPU kernels only fail with TG_ERR_DEVICE when given a CUDA tensor.
 * Device memory is counted by tg_mem_get(TG_CUDA, ...) exactly like host
 * memory. Without a device, or in a build without the CUDA backend, every
 * attempt to make a CUDA tensor fails with TG_ERR_DEVICE and a message saying
 * why; nothing here aborts.
 */
#ifndef TAPEGRAD_CUDA_H
#define TAPEGRAD_CUDA_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices the process can use: 0 when the library was built
 * without the CUDA backend, when there is no driver, or no device (never an
 * error; the thread's error is left alone). Asked once, then remembered. */
int tg_cuda_device_count(void);

/* Why tg_cuda_device_count() is 0, e.g. "this build of tapegrad has no CUDA
 * backend" or "cudaGetDeviceCount: CUDA driver version is insufficient for
 * CUDA runtime version (cudaErrorInsufficientDriver)"; "" when a device is
 * available. Static string. */
const char *tg_cuda_unavailable_reason(void);

/* Gives the device blocks kept for reuse back to CUDA (cudaFree). Freed CUDA
 * tensors' blocks are kept in per-size free lists (sizes rounded up to 512 B
 * below 2 MiB, to 2 MiB above) and reused for the next allocation of the
 * same rounded size; tg_mem_get(TG_CUDA, ...) reports them as `cached`, not
 * live. TG_OK (also without a device or without the CUDA backend), or
 * TG_ERR_CUDA if a cudaFree failed. */
tg_status tg_cuda_empty_cache(void);

#ifdef __cplusplus
}
#endif
#endif
