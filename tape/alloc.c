/* tape/alloc.c - the allocator: exact byte accounting per device and category,
 * saved-tensor bytes, peaks, allocation-failure injection, peak RSS, and the
 * per-thread memory-category override used by the backward engine. Every
 * change of the figures is reported to the memory timeline (tape/timeline.c)
 * while it records, under the allocator lock, so the timeline sees them in
 * the order they happened.
 *
 * TG_CUDA memory comes from the CUDA backend's caching allocator (its table's
 * alloc/free, kernels/kernel.h) and is counted here exactly like host memory (requested bytes, categories,
 * peaks, saved bytes, fault injection before any cudaMalloc); its `cached`
 * figure is the bytes in the CUDA free lists. */
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tapegrad/cuda.h"
#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "timeline_hooks.h"

#define TG__NDEV 2
#define TG__ALIGN 64
/* Large buffers (the (N, V) logits and their gradient) are aligned to 2 MiB
 * and marked for transparent huge pages: a fresh 1 GiB gradient then costs
 * 512 page faults instead of 262144. */
#define TG__HUGE_MIN ((size_t)4 << 20)
#define TG__HUGE_ALIGN ((size_t)2 << 20)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static tg_mem_stats g_stats[TG__NDEV];

/* fault injection: fail when g_counter reaches g_target (>0) */
static uint64_t g_fault_target = 0;
static uint64_t g_fault_counter = 0;
static bool g_fault_persistent = false;
static uint64_t g_fault_fired = 0;

static _Thread_local tg_mem_category tl_override = TG_MEM_NCAT;

/* The CPU cache of large blocks: a training loop allocates the same large
 * buffers (a logits gradient...) every step; reusing a freed one saves the
 * kernel from zeroing fresh pages each time. Bytes in the cache are not live
 * (they are reported as `cached`); tg_mem_empty_cache gives them back.
 *
 * How much it keeps: TAPEGRAD_CPU_CACHE_MB when set (0: nothing); otherwise
 * as much as the process has already had live at once (its high-water mark,
 * never reset), at least 2 GiB and at most half the machine's memory. A step
 * that once needed a 4 GiB gradient then finds it again the next step, and a
 * process never caches more than it has shown it uses. */
#define TG__CACHE_SLOTS 8
#define TG__CACHE_FLOOR ((size_t)2 << 30)
static struct {
    void *p;
    size_t size; /* rounded size of the block */
} g_cache[TG__CACHE_SLOTS];
static size_t g_cache_fixed = (size_t)-1; /* (size_t)-1: not read yet; (size_t)-2: not set */
static size_t g_phys_half;                /* half the machine's memory; 0: unknown */
static size_t g_live_hwm;                 /* most CPU bytes live at once, ever */

/* Called with g_lock held. */
static size_t cache_limit(void) {
    if (g_cache_fixed == (size_t)-1) {
        const char *e = getenv("TAPEGRAD_CPU_CACHE_MB");
        g_cache_fixed = e ? (size_t)strtoull(e, NULL, 10) << 20 : (size_t)-2;
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        g_phys_half = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 2 : 0;
    }
    if (g_cache_fixed != (size_t)-2) return g_cache_fixed;
    size_t lim = g_live_hwm > TG__CACHE_FLOOR ? g_live_hwm : TG__CACHE_FLOOR;
    if (g_phys_half && lim > g_phys_half) lim = g_phys_half;
    return lim;
}

/* Takes a cached block of at least `size` bytes (and at most 1.25x), or NULL.
 * Called with g_lock held. */
static void *cache_take(size_t size) {
    int best = -1;
    for (int i = 0; i < TG__CACHE_SLOTS; i++)
        if (g_cache[i].p && g_cache[i].size >= size && g_cache[i].size <= size + size / 4 &&
            (best < 0 || g_cache[i].size < g_cache[best].size))
            best = i;
    if (best < 0) return NULL;
    void *p = g_cache[best].p;
    g_stats[TG_CPU].cached -= g_cache[best].size;
    g_cache[best].p = NULL;
    return p;
}

/* Puts a freed block in the cache; false if it does not fit (then free it).
 * Called with g_lock held. */
static bool cache_put(void *p, size_t size) {
    if (g_stats[TG_CPU].cached + size > cache_limit()) return false;
    for (int i = 0; i < TG__CACHE_SLOTS; i++)
        if (!g_cache[i].p) {
            g_cache[i].p = p;
            g_cache[i].size = size;
            g_stats[TG_CPU].cached += size;
            return true;
        }
    return false;
}

tg_status tg_mem_empty_cache(tg_device dev) {
    if ((int)dev < 0 || (int)dev >= TG__NDEV)
        return tg__set_error(TG_ERR_DEVICE, "tg_mem_empty_cache: unknown device %d", (int)dev);
    if (dev == TG_CUDA) return tg_cuda_empty_cache();
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < TG__CACHE_SLOTS; i++) {
        free(g_cache[i].p);
        g_cache[i].p = NULL;
    }
    g_stats[TG_CPU].cached = 0;
    pthread_mutex_unlock(&g_lock);
    return TG_OK;
}

/* Bytes in the CUDA allocator's free lists (0 without the CUDA backend). */
static size_t cuda_cached(void) { return tg__cuda_backend.cached_bytes(); }

tg_status tg_cuda_empty_cache(void) {
    if (tg__cuda_backend.device_count() == 0) return TG_OK;
    tg_status st = tg__cuda_backend.empty_cache();
    pthread_mutex_lock(&g_lock);
    g_stats[TG_CUDA].cached = cuda_cached();
    pthread_mutex_unlock(&g_lock);
    return st;
}

tg_mem_category tg__set_category_override(tg_mem_category c) {
    tg_mem_category prev = tl_override;
    tl_override = c;
    return prev;
}
tg_mem_category tg__op_category(void) {
    return tl_override == TG_MEM_NCAT ? TG_MEM_ACTIVATION : tl_override;
}
tg_mem_category tg__creation_category(void) {
    return tl_override == TG_MEM_NCAT ? TG_MEM_LEAF : tl_override;
}

/* Called with g_lock held. True when this allocation must fail. */
static bool fault_now(void) {
    if (g_fault_target == 0) return false;
    g_fault_counter++;
    if (g_fault_counter == g_fault_target ||
        (g_fault_persistent && g_fault_counter > g_fault_target)) {
        g_fault_fired++;
        return true;
    }
    return false;
}

uint64_t tg_fault_inject(uint64_t n, bool persistent) {
    pthread_mutex_lock(&g_lock);
    uint64_t fired = g_fault_fired;
    g_fault_fired = 0;
    g_fault_target = n;
    g_fault_counter = 0;
    g_fault_persistent = persistent;
    pthread_mutex_unlock(&g_lock);
    return fired;
}

static bool injected_failure(void) {
    pthread_mutex_lock(&g_lock);
    bool f = fault_now();
    pthread_mutex_unlock(&g_lock);
    return f;
}

void *tg__alloc(tg_device dev, size_t nbytes, tg_mem_category cat) {
    uint64_t tag;
    return tg__alloc_op(dev, nbytes, cat, NULL, &tag);
}

/* Counts an allocation of nbytes on dev (g_lock held). */
static void count_alloc(tg_device dev, size_t nbytes, tg_mem_category cat, const char *op,
                        uint64_t *tag) {
    tg_mem_stats *st = &g_stats[dev];
    st->live[cat] += nbytes;
    if (st->live[cat] > st->peak[cat]) st->peak[cat] = st->live[cat];
    st->live_total += nbytes;
    if (st->live_total > st->peak_total) st->peak_total = st->live_total;
    if (dev == TG_CPU && st->live_total > g_live_hwm) g_live_hwm = st->live_total;
    st->n_alloc++;
    if (dev == TG_CUDA) st->cached = cuda_cached();
    if (tg__timeline_on()) *tag = tg__tl_alloc(dev, cat, nbytes, st, op);
}

/* Counts a free of nbytes on dev (g_lock held). */
static void count_free(tg_device dev, size_t nbytes, tg_mem_category cat, uint64_t tag) {
    tg_mem_stats *st = &g_stats[dev];
    st->live[cat] -= nbytes;
    st->live_total -= nbytes;
    st->n_free++;
    if (dev == TG_CUDA) st->cached = cuda_cached();
    if (tg__timeline_on()) tg__tl_free(dev, cat, nbytes, st, tag);
}

/* TG_CUDA: fault injection, then the CUDA caching allocator. */
static void *cuda_alloc(size_t nbytes, tg_mem_category cat, const char *op, uint64_t *tag) {
    const tg__backend *cu = &tg__cuda_backend;
    if (cu->device_count() == 0)
        return tg__fail(TG_ERR_DEVICE, "no CUDA device available (%s)", cu->unavailable_reason());
    pthread_mutex_lock(&g_lock);
    bool fail = fault_now();
    pthread_mutex_unlock(&g_lock);
    if (fail)
        return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes on cuda (%s) "
                        "[injected failure]", nbytes, tg_mem_category_name(cat));
    void *p = NULL;
    if (cu->alloc(&p, nbytes) != TG_OK) return NULL;
    pthread_mutex_lock(&g_lock);
    count_alloc(TG_CUDA, nbytes, cat, op, tag);
    pthread_mutex_unlock(&g_lock);
    return p;
}

void *tg__alloc_op(tg_device dev, size_t nbytes, tg_mem_category cat, const char *op,
                   uint64_t *tag) {
    *tag = 0;
    if ((int)dev < 0 || (int)dev >= TG__NDEV || (int)cat < 0 || cat >= TG_MEM_NCAT)
        return tg__fail(TG_ERR_INTERNAL, "tg__alloc: bad device %d or category %d", (int)dev,
                        (int)cat);
    if (dev == TG_CUDA) return cuda_alloc(nbytes, cat, op, tag);
    const size_t align = nbytes >= TG__HUGE_MIN ? TG__HUGE_ALIGN : TG__ALIGN;
    size_t rounded = (nbytes + align - 1) / align * align;
    if (rounded < nbytes) /* overflow */
        return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes", nbytes);
    if (rounded == 0) rounded = TG__ALIGN;
    pthread_mutex_lock(&g_lock);
    bool fail = fault_now();
    void *p = !fail && align == TG__HUGE_ALIGN ? cache_take(rounded) : NULL;
    pthread_mutex_unlock(&g_lock);
    if (!p && !fail) {
        p = aligned_alloc(align, rounded);
#ifdef MADV_HUGEPAGE
        if (p && align == TG__HUGE_ALIGN) (void)madvise(p, rounded, MADV_HUGEPAGE); /* a hint */
#endif
    }
    if (!p)
        return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes (%s)%s", nbytes,
                        tg_mem_category_name(cat), fail ? " [injected failure]" : "");
    pthread_mutex_lock(&g_lock);
    count_alloc(dev, nbytes, cat, op, tag);
    pthread_mutex_unlock(&g_lock);
    return p;
}

void tg__external_adopt(tg_device dev, size_t nbytes, const char *op, uint64_t *tag) {
    pthread_mutex_lock(&g_lock);
    count_alloc(dev, nbytes, TG_MEM_EXTERNAL, op, tag);
    pthread_mutex_unlock(&g_lock);
}

void tg__external_drop(tg_device dev, size_t nbytes, uint64_t tag) {
    pthread_mutex_lock(&g_lock);
    count_free(dev, nbytes, TG_MEM_EXTERNAL, tag);
    pthread_mutex_unlock(&g_lock);
}

void tg__free(tg_device dev, void *p, size_t nbytes, tg_mem_category cat) {
    tg__free_op(dev, p, nbytes, cat, TG__TL_LAST_OP);
}

void tg__free_op(tg_device dev, void *p, size_t nbytes, tg_mem_category cat, uint64_t tag) {
    if (!p) return;
    if (dev == TG_CUDA) tg__cuda_backend.free(p, nbytes); /* to its free list */
    pthread_mutex_lock(&g_lock);
    if (dev == TG_CPU) {
        size_t rounded = (nbytes + TG__HUGE_ALIGN - 1) / TG__HUGE_ALIGN * TG__HUGE_ALIGN;
        if (!(nbytes >= TG__HUGE_MIN && cache_put(p, rounded))) free(p);
    }
    count_free(dev, nbytes, cat, tag);
    pthread_mutex_unlock(&g_lock);
}

void tg__mem_lock(void) { pthread_mutex_lock(&g_lock); }
void tg__mem_unlock(void) { pthread_mutex_unlock(&g_lock); }
const tg_mem_stats *tg__mem_stats_locked(tg_device dev) {
    return (int)dev >= 0 && (int)dev < TG__NDEV ? &g_stats[dev] : NULL;
}

void *tg__xmalloc(size_t n) {
    if (injected_failure())
        return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes [injected failure]", n);
    void *p = malloc(n ? n : 1);
    if (!p) return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes", n);
    return p;
}

void *tg__xcalloc(size_t n, size_t size) {
    if (injected_failure())
        return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu x %zu bytes [injected failure]",
                        n, size);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu x %zu bytes", n, size);
    return p;
}

void *tg__xrealloc(void *old, size_t n) {
    if (injected_failure())
        return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes [injected failure]", n);
    void *p = realloc(old, n ? n : 1);
    if (!p) return tg__fail(TG_ERR_NOMEM, "out of memory: cannot allocate %zu bytes", n);
    return p;
}

void tg__saved_hold(tg__storage *s) {
    pthread_mutex_lock(&g_lock);
    if (atomic_fetch_add(&s->saved_refs, 1) == 0) {
        tg_mem_stats *st = &g_stats[s->device];
        st->saved += s->nbytes;
        if (st->saved > st->saved_peak) st->saved_peak = st->saved;
        if (tg__timeline_on()) tg__tl_saved(s->device, st);
    }
    pthread_mutex_unlock(&g_lock);
}

void tg__saved_drop(tg__storage *s) {
    pthread_mutex_lock(&g_lock);
    if (atomic_fetch_sub(&s->saved_refs, 1) == 1) {
        g_stats[s->device].saved -= s->nbytes;
        if (tg__timeline_on()) tg__tl_saved(s->device, &g_stats[s->device]);
    }
    pthread_mutex_unlock(&g_lock);
}

tg_status tg_mem_get(tg_device dev, tg_mem_stats *out) {
    if (tg__null_arg(out, "tg_mem_get", "out")) return TG_ERR_NULL;
    if ((int)dev < 0 || (int)dev >= TG__NDEV)
        return tg__set_error(TG_ERR_DEVICE, "tg_mem_get: unknown device %d", (int)dev);
    pthread_mutex_lock(&g_lock);
    if (dev == TG_CUDA) g_stats[TG_CUDA].cached = cuda_cached();
    *out = g_stats[dev];
    pthread_mutex_unlock(&g_lock);
    return TG_OK;
}

tg_status tg_mem_reset_peak(tg_device dev) {
    if ((int)dev < 0 || (int)dev >= TG__NDEV)
        return tg__set_error(TG_ERR_DEVICE, "tg_mem_reset_peak: unknown device %d", (int)dev);
    pthread_mutex_lock(&g_lock);
    tg_mem_stats *st = &g_stats[dev];
    for (int c = 0; c < TG_MEM_NCAT; c++) st->peak[c] = st->live[c];
    st->peak_total = st->live_total;
    st->saved_peak = st->saved;
    pthread_mutex_unlock(&g_lock);
    return TG_OK;
}

const char *tg_mem_category_name(tg_mem_category c) {
    switch (c) {
    case TG_MEM_LEAF: return "leaf";
    case TG_MEM_ACTIVATION: return "activation";
    case TG_MEM_GRADIENT: return "gradient";
    case TG_MEM_WORKSPACE: return "workspace";
    case TG_MEM_EXTERNAL: return "external";
    default: return "?";
    }
}

size_t tg_peak_rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "VmHWM: %llu kB", &v) == 1) {
            kb = (size_t)v;
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}
