/* tapegrad/memory.h - exact memory accounting, live objects, fault injection.
 *
 * Every storage is allocated through one allocator per device, which counts
 * the requested bytes (exactly, no rounding) live and at peak, by category:
 *   leaf        tensors made by creation functions (parameters, inputs)
 *   activation  outputs of ops in forward
 *   gradient    tensors made during backward, and leaves' .grad
 *   workspace   temporaries inside kernels
 *   external    memory the caller owns, wrapped by tg_from_blob (counted,
 *               never allocated or freed by the library)
 * plus the bytes currently held by saved tensors (each storage counted once
 * however many nodes save it).
 */
#ifndef TAPEGRAD_MEMORY_H
#define TAPEGRAD_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_mem_category {
    TG_MEM_LEAF = 0,
    TG_MEM_ACTIVATION,
    TG_MEM_GRADIENT,
    TG_MEM_WORKSPACE,
    TG_MEM_EXTERNAL,
    TG_MEM_NCAT
} tg_mem_category;

typedef struct tg_mem_stats {
    size_t live[TG_MEM_NCAT]; /* bytes live now, by category */
    size_t peak[TG_MEM_NCAT]; /* highest live[c] since the last reset */
    size_t live_total;        /* sum of live[] */
    size_t peak_total;        /* highest live_total since the last reset */
    size_t saved;             /* bytes of storages held by saved tensors now */
    size_t saved_peak;        /* highest saved since the last reset */
    size_t cached;            /* freed large blocks kept for reuse (not live) */
    uint64_t n_alloc;         /* allocations since start */
    uint64_t n_free;          /* frees since start */
} tg_mem_stats;

/* Fills *out with dev's figures. Errors: TG_ERR_NULL, TG_ERR_DEVICE. */
tg_status tg_mem_get(tg_device dev, tg_mem_stats *out);

/* Gives the blocks kept for reuse back to the system. Large CPU blocks
 * (4 MiB and more) freed by the library are kept, up to 2 GiB in all
 * (TAPEGRAD_CPU_CACHE_MB sets the limit; 0 turns the cache off), and reused
 * for allocations of the same size, so that a loop does not pay the kernel
 * for fresh zeroed pages every step. They are not counted as live; the
 * process's RSS includes them. For TG_CUDA it is tg_cuda_empty_cache().
 * Errors: TG_ERR_DEVICE, TG_ERR_CUDA. */
tg_status tg_mem_empty_cache(tg_device dev);

/* Sets every peak of dev to the current live value. */
tg_status tg_mem_reset_peak(tg_device dev);

/* Name of a category ("leaf", "activation", "gradient", "workspace"). */
const char *tg_mem_category_name(tg_mem_category c);

/* The process's peak resident set size in bytes (VmHWM), 0 if unknown. */
size_t tg_peak_rss_bytes(void);

/* Numbers of live library objects (all threads). */
typedef struct tg_live_counts {
    int64_t tensors;  /* tensor handles */
    int64_t storages; /* storages (buffers) */
    int64_t nodes;    /* graph nodes */
} tg_live_counts;
tg_live_counts tg_live(void);

/* Allocation-failure injection (SQLite's method): the nth allocation from now
 * (n >= 1) fails with TG_ERR_NOMEM; if persistent, every later one fails too.
 * n == 0 turns injection off. Returns the number of injected failures since
 * the last call (so a test knows whether any fired). */
uint64_t tg_fault_inject(uint64_t n, bool persistent);

#ifdef __cplusplus
}
#endif
#endif
