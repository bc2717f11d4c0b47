/* kernels/cuda/runtime.cu - the CUDA runtime layer: device discovery that
 * never aborts, the error checks (CUDA / cuBLAS -> TG_ERR_CUDA), the caching
 * device allocator and host <-> device copies. No kernels live here.
 *
 * The caching allocator: cudaMalloc / cudaFree synchronise the device and
 * cost far more than a CPU malloc, and a training loop allocates the same
 * sizes every step. A block's size is rounded up to a class (multiples of
 * 512 B below 2 MiB, of 2 MiB above); a freed block is pushed on its class's
 * free list and popped by the next allocation of exactly that class. Blocks
 * in the lists are "cached" in the accounting, not live; tg_cuda_empty_cache
 * (or an out-of-memory cudaMalloc) gives them back to CUDA. Book-keeping
 * uses plain malloc (never counted, never fault-injected: the allocator's
 * caller, tape/alloc.c, does the accounting and the fault injection).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "cuda_internal.h"

/* Every kernel, copy, memset and cuBLAS call goes to one stream, the
 * library's (the legacy default stream unless tg_cuda_set_stream chose
 * another), so they run in order: the caching allocator hands a freed block
 * out again at once, and a block freed right after the launch of the kernel
 * that uses it (kernel workspace) is safe. Work on several streams at once
 * (per-thread default streams) would break that; a change of stream waits
 * for the old one first. */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "tapegrad's CUDA backend relies on the legacy default stream"
#endif

/* ---- errors -------------------------------------------------------------------- */

/* "kernels/cuda/runtime.cu" rather than the build machine's absolute path. */
static const char *short_file(const char *file) {
    const char *k = strstr(file, "kernels/cuda/");
    return k ? k : file;
}

/* Errors after which the CUDA context is unusable: every later call fails
 * too, whatever it is, so the message says so. */
static bool sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
#ifndef TG_SIMT
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
#endif
        return true;
    default: return false;
    }
}

extern "C" tg_status tg__cuda_check(int err, const char *call, const char *file, int line) {
    if (err == (int)cudaSuccess) return TG_OK;
    cudaError_t e = (cudaError_t)err;
    (void)cudaGetLastError(); /* clear the error state (only non-sticky errors clear) */
    return tg__k_fail(TG_ERR_CUDA, "%s failed at %s:%d: %s (%s)%s", call, short_file(file),
                         line, cudaGetErrorString(e), cudaGetErrorName(e),
                         sticky(e) ? "; a kernel failed on the device, which leaves the CUDA "
                                     "context unusable: later CUDA calls of this process fail "
                                     "too (the failing kernel may be an earlier one, since "
                                     "kernels run asynchronously)"
                                   : "");
}

extern "C" tg_status tg__cublas_check(int err, const char *call, const char *file, int line) {
    if (err == (int)CUBLAS_STATUS_SUCCESS) return TG_OK;
    cublasStatus_t e = (cublasStatus_t)err;
    return tg__k_fail(TG_ERR_CUDA, "%s failed at %s:%d: %s (%s)", call, short_file(file), line,
                         cublasGetStatusString(e), cublasGetStatusName(e));
}

/* ---- device discovery ------------------------------------------------------------- */

static pthread_once_t g_count_once = PTHREAD_ONCE_INIT;
static int g_count = 0;
static char g_reason[256] = "";

static void count_devices(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not fatal: no driver, or no device */
        snprintf(g_reason, sizeof g_reason, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        g_count = 0;
        return;
    }
    if (n <= 0) {
        snprintf(g_reason, sizeof g_reason, "cudaGetDeviceCount found no device");
        n = 0;
    }
    g_count = n;
}

extern "C" int tg__cuda_device_count(void) {
    pthread_once(&g_count_once, count_devices);
    return g_count;
}

extern "C" const char *tg__cuda_unavailable_reason(void) {
    pthread_once(&g_count_once, count_devices);
    return g_reason;
}

/* ---- the caching allocator ----------------------------------------------------------- */

#define SMALL_ROUND ((size_t)512)
#define LARGE_MIN ((size_t)2 << 20)
#define LARGE_ROUND ((size_t)2 << 20)

typedef struct block {
    void *p;
    struct block *next;
} block;

typedef struct size_class {
    size_t size;  /* rounded size of the blocks */
    block *free;  /* cached blocks of this size */
} size_class;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static size_class *g_classes = NULL; /* [g_nclasses], grown with realloc */
static size_t g_nclasses = 0, g_capclasses = 0;
static size_t g_cached = 0;

/* 0 on overflow. */
static size_t class_size(size_t nbytes) {
    size_t r = nbytes < LARGE_MIN ? SMALL_ROUND : LARGE_ROUND;
    if (nbytes == 0) return SMALL_ROUND;
    size_t c = (nbytes + r - 1) / r * r;
    return c < nbytes ? 0 : c;
}

/* The class of `size`, created if `create`; NULL if absent or on malloc
 * failure. Called with g_lock held. */
static size_class *find_class(size_t size, bool create) {
    for (size_t i = 0; i < g_nclasses; i++)
        if (g_classes[i].size == size) return &g_classes[i];
    if (!create) return NULL;
    if (g_nclasses == g_capclasses) {
        size_t cap = g_capclasses ? 2 * g_capclasses : 16;
        size_class *c = (size_class *)realloc(g_classes, cap * sizeof *c);
        if (!c) return NULL;
        g_classes = c;
        g_capclasses = cap;
    }
    g_classes[g_nclasses].size = size;
    g_classes[g_nclasses].free = NULL;
    return &g_classes[g_nclasses++];
}

/* Pops a cached block of exactly `size`, or NULL. */
static void *cache_take(size_t size) {
    pthread_mutex_lock(&g_lock);
    void *p = NULL;
    size_class *c = find_class(size, false);
    if (c && c->free) {
        block *b = c->free;
        c->free = b->next;
        p = b->p;
        free(b);
        g_cached -= size;
    }
    pthread_mutex_unlock(&g_lock);
    return p;
}

extern "C" tg_status tg__cuda_empty_cache(void) {
    if (tg__cuda_device_count() == 0) return TG_OK;
    tg_status st = TG_OK;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nclasses; i++) {
        while (g_classes[i].free) {
            block *b = g_classes[i].free;
            g_classes[i].free = b->next;
            tg_status s = TG__CUDA_CHECK(cudaFree(b->p));
            if (st == TG_OK) st = s;
            free(b);
            g_cached -= g_classes[i].size;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* ---- guard bytes (TAPEGRAD_CUDA_GUARD=1) -----------------------------------------
 * Every block gets GUARD bytes of a known pattern before and after the bytes
 * asked for; freeing the block checks them and counts a violation (with a
 * line on stderr) when a kernel wrote outside its output. Read once per
 * process; costs two small copies per allocation and free. */
#define GUARD ((size_t)256)
#define GUARD_BYTE 0xA5
static pthread_once_t g_guard_once = PTHREAD_ONCE_INIT;
static bool g_guard = false;
static size_t g_guard_violations = 0;
static void read_guard(void) {
    const char *e = getenv("TAPEGRAD_CUDA_GUARD");
    g_guard = e && *e && strcmp(e, "0") != 0;
}
static bool guard_on(void) {
    pthread_once(&g_guard_once, read_guard);
    return g_guard;
}
extern "C" size_t tg__cuda_guard_violations(void) {
    pthread_mutex_lock(&g_lock);
    size_t n = g_guard_violations;
    pthread_mutex_unlock(&g_lock);
    return n;
}
/* q: the whole block; the caller's bytes are [q + GUARD, q + GUARD + nbytes). */
static tg_status guard_fill(char *q, size_t nbytes) {
    cudaStream_t s = (cudaStream_t)tg__cuda_stream();
    tg_status st = TG__CUDA_CHECK(cudaMemsetAsync(q, GUARD_BYTE, GUARD, s));
    if (st == TG_OK) st = TG__CUDA_CHECK(cudaMemsetAsync(q + GUARD + nbytes, GUARD_BYTE, GUARD, s));
    return st;
}
static void guard_check(const char *q, size_t nbytes) {
    unsigned char buf[2 * GUARD];
    cudaStream_t s = (cudaStream_t)tg__cuda_stream();
    if (cudaMemcpyAsync(buf, q, GUARD, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaMemcpyAsync(buf + GUARD, q + GUARD + nbytes, GUARD, cudaMemcpyDeviceToHost, s) !=
            cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    for (size_t i = 0; i < 2 * GUARD; i++) {
        if (buf[i] != GUARD_BYTE) {
            fprintf(stderr, "tapegrad: cuda guard bytes %s a block of %zu bytes were overwritten "
                    "(byte %zu of the guard)\n", i < GUARD ? "before" : "after", nbytes,
                    i < GUARD ? GUARD - i : i - GUARD);
            pthread_mutex_lock(&g_lock);
            g_guard_violations++;
            pthread_mutex_unlock(&g_lock);
            return;
        }
    }
}

static tg_status alloc_block(void **p, size_t nbytes);

extern "C" tg_status tg__cuda_alloc(void **p, size_t nbytes) {
    if (!guard_on()) return alloc_block(p, nbytes);
    *p = NULL;
    if (nbytes > SIZE_MAX - 2 * GUARD)
        return tg__k_fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes on cuda",
                             nbytes);
    void *q;
    tg_status st = alloc_block(&q, nbytes + 2 * GUARD);
    if (st != TG_OK) return st;
    st = guard_fill((char *)q, nbytes);
    if (st != TG_OK) {
        tg__cuda_free_block(q, nbytes + 2 * GUARD);
        return st;
    }
    *p = (char *)q + GUARD;
    return TG_OK;
}

extern "C" void tg__cuda_free(void *p, size_t nbytes) {
    if (!p) return;
    if (!guard_on()) {
        tg__cuda_free_block(p, nbytes);
        return;
    }
    char *q = (char *)p - GUARD;
    guard_check(q, nbytes);
    tg__cuda_free_block(q, nbytes + 2 * GUARD);
}

/* ---- an allocator from outside (tg_cuda_set_allocator) -------------------------------
 * When set, every device block comes from it and goes back to it, with the
 * stream the library runs on; the class lists are not used. It changes only
 * while the library holds no block and no other thread uses the device, so
 * the per-block path reads it with one atomic load and no lock. */
#define TG__DEVICE_ALIGN 256
struct ext_hook {
    tg_cuda_alloc_fn alloc;
    tg_cuda_free_fn free_fn;
    void *ctx;
};
static ext_hook g_ext_slot;                     /* written under g_lock */
static std::atomic<const ext_hook *> g_ext{nullptr}; /* &g_ext_slot while set */

extern "C" tg_status tg__cuda_set_allocator(tg_cuda_alloc_fn alloc, tg_cuda_free_fn free_fn,
                                            void *ctx) {
    tg_status st = tg__cuda_empty_cache(); /* the cached blocks came from cudaMalloc */
    if (st != TG_OK) return st;
    pthread_mutex_lock(&g_lock);
    g_ext.store(nullptr);
    if (alloc) {
        g_ext_slot = {alloc, free_fn, ctx};
        g_ext.store(&g_ext_slot);
    }
    pthread_mutex_unlock(&g_lock);
    return TG_OK;
}

static tg_status alloc_block(void **p, size_t nbytes) {
    *p = NULL;
    if (const ext_hook *ext = g_ext.load()) {
        void *q = ext->alloc(nbytes ? nbytes : 1, tg__cuda_stream(), ext->ctx);
        if (!q)
            return tg__k_fail(TG_ERR_NOMEM,
                                 "out of memory: the allocator given to tg_cuda_set_allocator "
                                 "returned NULL for %zu bytes on cuda",
                                 nbytes);
        if ((uintptr_t)q % TG__DEVICE_ALIGN != 0) { /* the kernels' vector loads need it */
            ext->free_fn(q, nbytes ? nbytes : 1, tg__cuda_stream(), ext->ctx);
            return tg__k_fail(TG_ERR_VALUE,
                                 "the allocator given to tg_cuda_set_allocator returned %p for "
                                 "%zu bytes, not aligned to %d bytes",
                                 q, nbytes, TG__DEVICE_ALIGN);
        }
        *p = q;
        return TG_OK;
    }
    size_t size = class_size(nbytes);
    if (size == 0)
        return tg__k_fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes on cuda",
                             nbytes);
    void *q = cache_take(size);
    if (q) {
        *p = q;
        return TG_OK;
    }
    cudaError_t e = cudaMalloc(&q, size);
    if (e == cudaErrorMemoryAllocation) { /* give the cache back and try once more */
        (void)cudaGetLastError();
        if (tg__cuda_empty_cache() != TG_OK) return TG_ERR_CUDA;
        e = cudaMalloc(&q, size);
    }
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        (void)cudaMemGetInfo(&free_b, &total_b);
        (void)cudaGetLastError();
        return tg__k_fail(TG_ERR_NOMEM,
                             "out of memory: cudaMalloc(%zu bytes) failed on cuda (%zu of %zu "
                             "bytes free on the device)",
                             size, free_b, total_b);
    }
    tg_status st = TG__CUDA_CHECK(e);
    if (st != TG_OK) return st;
    *p = q;
    return TG_OK;
}

extern "C" void tg__cuda_free_block(void *p, size_t nbytes) {
    if (!p) return;
    if (const ext_hook *ext = g_ext.load()) {
        ext->free_fn(p, nbytes ? nbytes : 1, tg__cuda_stream(), ext->ctx);
        return;
    }
    size_t size = class_size(nbytes);
    block *b = (block *)malloc(sizeof *b);
    pthread_mutex_lock(&g_lock);
    size_class *c = b ? find_class(size, true) : NULL;
    if (c) {
        b->p = p;
        b->next = c->free;
        c->free = b;
        g_cached += size;
    }
    pthread_mutex_unlock(&g_lock);
    if (!c) { /* no room for the book-keeping: give the block back to CUDA now */
        free(b);
        if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
    }
}

extern "C" size_t tg__cuda_cached_bytes(void) {
    pthread_mutex_lock(&g_lock);
    size_t n = g_cached;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* ---- the stream ---------------------------------------------------------------------
 * Every kernel, cuBLAS call and copy of the library runs on one stream of the
 * process: the legacy default stream (NULL) unless tg_cuda_set_stream chose
 * another (a framework's current stream). Changing it first waits for what
 * the old one has queued, so a block freed there and handed out again by the
 * caching allocator is never used by both. */
static std::atomic<void *> g_stream{nullptr};

extern "C" void *tg__cuda_stream(void) { return g_stream.load(); }

extern "C" tg_status tg__cuda_set_stream(void *stream) {
    void *old = g_stream.load();
    if (old == stream) return TG_OK;
    tg_status st = TG__CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)old));
    if (st == TG_OK) g_stream.store(stream);
    return st;
}

/* ---- copies ------------------------------------------------------------------------ */

/* Synchronous for the host, ordered on the library's stream. */
extern "C" tg_status tg__cuda_copy_h2d(void *dst_dev, const void *src_host, size_t n) {
    if (n == 0) return TG_OK;
    cudaStream_t s = (cudaStream_t)tg__cuda_stream();
    tg_status st =
        TG__CUDA_CHECK(cudaMemcpyAsync(dst_dev, src_host, n, cudaMemcpyHostToDevice, s));
    return st == TG_OK ? TG__CUDA_CHECK(cudaStreamSynchronize(s)) : st;
}

extern "C" tg_status tg__cuda_copy_d2h(void *dst_host, const void *src_dev, size_t n) {
    if (n == 0) return TG_OK;
    cudaStream_t s = (cudaStream_t)tg__cuda_stream();
    tg_status st =
        TG__CUDA_CHECK(cudaMemcpyAsync(dst_host, src_dev, n, cudaMemcpyDeviceToHost, s));
    return st == TG_OK ? TG__CUDA_CHECK(cudaStreamSynchronize(s)) : st;
}


/* ---- scratch, synchronisation, device properties ------------------------------------ */

static pthread_mutex_t g_scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_scratch = NULL;

extern "C" tg_status tg__cuda_scratch_acquire(void **p) {
    pthread_mutex_lock(&g_scratch_lock);
    if (!g_scratch) {
        tg_status st = TG__CUDA_CHECK(cudaMalloc(&g_scratch, 256));
        if (st != TG_OK) {
            g_scratch = NULL;
            pthread_mutex_unlock(&g_scratch_lock);
            return st;
        }
    }
    *p = g_scratch;
    return TG_OK;
}

extern "C" void tg__cuda_scratch_release(void) { pthread_mutex_unlock(&g_scratch_lock); }

extern "C" tg_status tg__cuda_synchronize(void) {
    return TG__CUDA_CHECK(cudaDeviceSynchronize());
}

extern "C" tg_status tg__cuda_get_props(char *name, size_t name_len, double *peak_bw,
                                        size_t *total, size_t *free_b, int *sms) {
    int dev = 0, clock_khz = 0, bus_bits = 0;
    *peak_bw = 0.0;
    tg_status st = TG__CUDA_CHECK(cudaGetDevice(&dev));
    if (st == TG_OK)
        st = TG__CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev));
    if (st == TG_OK)
        st = TG__CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    if (st == TG_OK)
        st = TG__CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    if (st == TG_OK) st = TG__CUDA_CHECK(cudaMemGetInfo(free_b, total));
    if (st != TG_OK) return st;
    /* double data rate: 2 transfers per clock */
    *peak_bw = 2.0 * (double)clock_khz * 1e3 * (double)bus_bits / 8.0;
#ifdef TG_SIMT
    snprintf(name, name_len, "%s", tg_simt_device_name());
#else
    cudaDeviceProp prop;
    st = TG__CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    if (st != TG_OK) return st;
    snprintf(name, name_len, "%s", prop.name);
#endif
    return TG_OK;
}
