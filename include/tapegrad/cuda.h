/* tapegrad/cuda.h - the CUDA device: discovery, properties, synchronisation
 * and the device memory cache.
 *
 * Tensors live on TG_CPU or TG_CUDA (the current CUDA device of the process).
 * tg_to_device() (tensor.h) copies a tensor between them; tg_copy_out,
 * tg_item, tg_get and tg_print read CUDA tensors by copying to the host.
 * Every op runs on either device when all its tensor operands are on one
 * (TG_ERR_DEVICE names both devices otherwise; a 0-d CPU tensor may meet
 * CUDA tensors in elementwise, where and in-place ops, as in PyTorch);
 * results stay on that device.
 * CUDA / cuBLAS failures are TG_ERR_CUDA naming the failing call and site.
 * Device memory is counted by tg_mem_get(TG_CUDA, ...) exactly like host
 * memory. Without a device, or in a build without the CUDA backend, every
 * attempt to make a CUDA tensor fails with TG_ERR_DEVICE and a message saying
 * why; nothing here aborts.
 */
#ifndef TAPEGRAD_CUDA_H
#define TAPEGRAD_CUDA_H

#include <stdbool.h>
#include <stddef.h>

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

/* What tg_cuda_get_props reports about the device in use (device 0). */
typedef struct tg_cuda_props {
    char name[128];           /* e.g. "NVIDIA H100 80GB HBM3" */
    size_t total_bytes;       /* device memory */
    size_t free_bytes;        /* free now, as CUDA sees it (includes nothing cached) */
    double peak_bytes_per_s;  /* theoretical memory bandwidth: 2 x memory clock x bus
                                 width; 0 when the device does not report them */
    int sm_count;             /* streaming multiprocessors */
} tg_cuda_props;

/* Fills *out. Errors: TG_ERR_NULL (out NULL), TG_ERR_DEVICE (no device or no
 * CUDA backend; the message gives tg_cuda_unavailable_reason()), TG_ERR_CUDA
 * (a failing query, named). */
tg_status tg_cuda_get_props(tg_cuda_props *out);

/* Waits until every kernel queued on the device has finished. Kernels run
 * asynchronously: time GPU work with this before reading the clock. Copies to
 * the host (tg_copy_out, tg_item, tg_to_device(t, TG_CPU)) wait by
 * themselves. TG_OK without a device or without the backend; TG_ERR_CUDA
 * when a queued kernel failed (named by CUDA only, not by launch site). */
tg_status tg_cuda_synchronize(void);

/* Makes every later kernel, cuBLAS call and host<->device copy of the
 * library run on `stream`, a cudaStream_t of the current device (e.g.
 * PyTorch's torch.cuda.current_stream().cuda_stream), so that tapegrad's work
 * is ordered with the framework's; NULL: the legacy default stream, the
 * default. Process-wide (all threads). The work queued on the previous stream
 * is waited for first, so device blocks freed there and reused on the new
 * one are never touched by both; switching back and forth therefore costs a
 * synchronisation. Copies to and from the host stay synchronous for the
 * host. The stream must outlive its use (set NULL before destroying it).
 * Errors: TG_ERR_DEVICE (no device or no CUDA backend: nothing changes),
 * TG_ERR_CUDA (waiting for the old stream failed: it stays). */
tg_status tg_cuda_set_stream(void *stream);

/* A device allocator from outside the library (tg_cuda_set_allocator): alloc
 * returns a block of at least `bytes` bytes (>= 1) of the current device,
 * aligned to 256 bytes, usable on `stream` (the library's,
 * tg_cuda_get_stream), or NULL when it cannot (a misaligned block is given
 * back and the op fails with TG_ERR_VALUE);
 * free gives back a block alloc returned, with the same bytes, and the
 * stream the library runs on when it lets go of it (which differs from the
 * allocation's when tg_cuda_set_stream switched in between: a stream-ordered
 * allocator must then wait for that stream before reusing the block). ctx is
 * passed through. Both are called from the thread of the op that allocates
 * or frees; they must not call the library. */
typedef void *(*tg_cuda_alloc_fn)(size_t bytes, void *stream, void *ctx);
typedef void (*tg_cuda_free_fn)(void *ptr, size_t bytes, void *stream, void *ctx);
/* Makes every later device allocation of the library (tensors, workspaces,
 * gradients) go through alloc / free_fn instead of the library's caching
 * allocator, e.g. PyTorch's (torch.cuda.caching_allocator_alloc / _delete),
 * so that one cache serves both and memory the library lets go of is
 * PyTorch's to reuse. Both NULL: back to the library's own allocator. The
 * library's cached blocks are given back to CUDA first. The accounting
 * (tg_mem_get) counts the bytes asked for as before; nothing is cached on
 * the library's side. Call it before the library has device memory, with
 * no other thread using the device. A NULL from alloc is TG_ERR_NOMEM for
 * the op that asked. Errors: TG_ERR_VALUE (one of alloc and free_fn NULL),
 * TG_ERR_DEVICE (no device or no CUDA backend), TG_ERR_STATE (the library
 * holds device memory now: the message gives the bytes), TG_ERR_CUDA
 * (giving the cache back failed: part of it may be given back already);
 * nothing else changes on error. */
tg_status tg_cuda_set_allocator(tg_cuda_alloc_fn alloc, tg_cuda_free_fn free_fn, void *ctx);
/* The stream tg_cuda_set_stream set (NULL: the legacy default stream; also
 * without a device). */
void *tg_cuda_get_stream(void);

/* Lets f32 matrix products on the CUDA device (tg_matmul, the f32 GEMMs of
 * tg_linear_logprob_entropy, including the bias gradient's with bf16
 * inputs) use the tensor cores' TF32: every operand
 * element rounded to 10 mantissa bits (to nearest), products summed in f32,
 * about 8x the f32 rate on an H100 and a relative error near 1e-3 instead
 * of 1e-6. PyTorch's torch.backends.cuda.matmul.allow_tf32. Off by default
 * (exact f32, as PyTorch >= 1.12). Process-wide; takes effect for products
 * started after the call. CPU products and f64 are never affected. Returns
 * the previous setting; never fails (a build without CUDA only records it). */
bool tg_set_allow_tf32(bool allow);

/* The setting tg_set_allow_tf32 made (false at start). */
bool tg_allow_tf32(void);

#ifdef __cplusplus
}
#endif
#endif
