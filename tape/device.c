/* tape/device.c - devices as the tape sees them: whether CUDA is usable,
 * reading CUDA tensors from the host, and contiguous copies between devices
 * (synchronous host <-> device copies through the CUDA backend's runtime; a
 * strided host source is gathered on the host first, a strided device
 * source by the copy kernel). A build without the CUDA backend has the stub
 * table (kernels/cuda/stub.c): no device, and every CUDA path answers
 * TG_ERR_DEVICE. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/cuda.h"
#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "dispatch.h"
#include "device.h"

static const tg__backend *const cu = &tg__cuda_backend;

int tg_cuda_device_count(void) { return cu->device_count(); }

const char *tg_cuda_unavailable_reason(void) { return cu->unavailable_reason(); }

tg_status tg_cuda_get_props(tg_cuda_props *out) {
    if (tg__null_arg(out, "tg_cuda_get_props", "out")) return tg_last_status();
    memset(out, 0, sizeof *out);
    tg_status st = tg__check_device_usable("tg_cuda_get_props", TG_CUDA);
    if (st != TG_OK) return st;
    return cu->get_props(out->name, sizeof out->name, &out->peak_bytes_per_s, &out->total_bytes,
                         &out->free_bytes, &out->sm_count);
}

static _Atomic bool g_allow_tf32;                          /* tg_set_allow_tf32 */
static pthread_mutex_t g_tf32_lock = PTHREAD_MUTEX_INITIALIZER; /* the flag and the backend's */

bool tg_set_allow_tf32(bool allow) {
    pthread_mutex_lock(&g_tf32_lock);
    bool prev = atomic_exchange(&g_allow_tf32, allow);
    if (cu->set_allow_tf32) cu->set_allow_tf32(allow);
    pthread_mutex_unlock(&g_tf32_lock);
    return prev;
}

bool tg_allow_tf32(void) { return atomic_load(&g_allow_tf32); }

tg_status tg_cuda_set_stream(void *stream) {
    tg_status st = tg__check_device_usable("tg_cuda_set_stream", TG_CUDA);
    if (st != TG_OK) return st;
    st = cu->set_stream(stream);
    if (st != TG_OK) tg__set_error(st, "tg_cuda_set_stream: %s", tg_last_error());
    return st;
}

tg_status tg_cuda_set_allocator(tg_cuda_alloc_fn alloc, tg_cuda_free_fn free_fn, void *ctx) {
    if ((alloc == NULL) != (free_fn == NULL))
        return tg__set_error(TG_ERR_VALUE,
                             "tg_cuda_set_allocator: alloc and free must both be given or both "
                             "be NULL (alloc %s, free %s)",
                             alloc ? "given" : "NULL", free_fn ? "given" : "NULL");
    tg_status st = tg__check_device_usable("tg_cuda_set_allocator", TG_CUDA);
    if (st != TG_OK) return st;
    tg_mem_stats m;
    st = tg_mem_get(TG_CUDA, &m);
    if (st != TG_OK) return st;
    size_t own = m.live_total - m.live[TG_MEM_EXTERNAL];
    if (own != 0)
        return tg__set_error(TG_ERR_STATE,
                             "tg_cuda_set_allocator: %zu bytes of the library's device memory "
                             "are live; set the allocator before making CUDA tensors, or "
                             "release them first",
                             own);
    st = cu->set_allocator(alloc, free_fn, ctx);
    if (st != TG_OK) tg__set_error(st, "tg_cuda_set_allocator: %s", tg_last_error());
    return st;
}

void *tg_cuda_get_stream(void) {
    return cu->get_stream && tg_cuda_device_count() > 0 ? cu->get_stream() : NULL;
}

tg_status tg_cuda_synchronize(void) {
    if (tg_cuda_device_count() == 0) return TG_OK;
    return cu->synchronize();
}

const char *tg__device_name(tg_device dev) {
    switch (dev) {
    case TG_CPU: return "cpu";
    case TG_CUDA: return "cuda";
    }
    return "an unknown device";
}

tg_status tg__check_device_usable(const char *who, tg_device dev) {
    if (dev == TG_CPU) return TG_OK;
    if (dev != TG_CUDA) return tg__set_error(TG_ERR_DEVICE, "%s: unknown device %d", who, (int)dev);
    if (tg_cuda_device_count() > 0) return TG_OK;
    return tg__set_error(TG_ERR_DEVICE, "%s: no CUDA device available (%s)", who,
                         tg_cuda_unavailable_reason());
}

/* Storage element range [lo, hi] that t can reach (numel > 0). */
static void span(const tg_tensor *t, int64_t *lo, int64_t *hi) {
    *lo = *hi = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        int64_t ext = (t->shape[d] - 1) * t->strides[d];
        if (ext < 0) *lo += ext;
        else *hi += ext;
    }
}

const void *tg__host_elems(const char *who, const tg_tensor *t, void **owned, int64_t *lo) {
    *owned = NULL;
    *lo = 0;
    if (t->storage->device == TG_CPU) return t->storage->data;
    if (tg__check_device_usable(who, t->storage->device) != TG_OK) return NULL;
    size_t es = tg_dtype_size(t->dtype);
    int64_t hi;
    if (tg__k_numel(t->ndim, t->shape) == 0) return t->storage->data; /* nothing will be read */
    span(t, lo, &hi);
    size_t nb = (size_t)(hi - *lo + 1) * es;
    void *buf = tg__xmalloc(nb);
    if (!buf) return NULL;
    if (cu->copy_d2h(buf, (const char *)t->storage->data + (size_t)*lo * es, nb) != TG_OK) {
        free(buf);
        tg__set_error(TG_ERR_CUDA, "%s: reading a cuda tensor: %s", who, tg_last_error());
        return NULL;
    }
    *owned = buf;
    return buf;
}

tg_tensor *tg__device_copy(tg_site s, const char *who, tg_tensor *t, tg_device dev) {
    if (tg__check_device_usable(who, dev) != TG_OK ||
        tg__check_device_usable(who, t->storage->device) != TG_OK)
        return NULL;
    tg_device from = t->storage->device;
    if (from == dev && tg__is_contiguous(t)) return tg_retain(t);
    if (from == TG_CPU && dev == TG_CPU) {
        tg_tensor *c = tg__new_output_on(s, who, TG_CPU, t->dtype, t->ndim, t->shape);
        return c ? tg__k_ok(tg__k_copy(c, t), c) : NULL;
    }
    tg_tensor *out = tg__tensor_new_on(s, who, dev, t->dtype, t->ndim, t->shape,
                                       tg__op_category());
    if (!out) return NULL;
    size_t nb = out->storage->nbytes;
    tg_status st = TG_OK;
    if (from == TG_CPU) { /* host -> device: gather a strided source on the host first */
        tg_tensor *src = t;
        if (!tg__is_contiguous(t)) {
            src = tg__tensor_new(s, who, t->dtype, t->ndim, t->shape, TG_MEM_WORKSPACE);
            if (!src) goto fail;
            tg__k_copy(src, t); /* cannot fail on the host */
        }
        st = cu->copy_h2d(out->storage->data, tg__ptr(src), nb);
        if (src != t) tg__tensor_release(src);
    } else if (dev == TG_CPU) { /* device -> host */
        if (tg__is_contiguous(t)) {
            st = cu->copy_d2h(out->storage->data, tg__ptr(t), nb);
        } else {
            void *owned;
            int64_t lo;
            if (!tg__host_elems(who, t, &owned, &lo)) goto fail;
            /* t's layout over the host copy of its elements */
            tg__arr dst = tg__arr_of(out), src = tg__arr_of(t);
            src.data = (char *)owned + (size_t)(t->offset - lo) * tg_dtype_size(t->dtype);
            tg__cpu_backend.copy(&dst, &src); /* cannot fail on the host */
            free(owned);
        }
    } else { /* device -> device: only a non-contiguous source gets here */
        st = tg__k_copy(out, t);
    }
    if (st != TG_OK) {
        tg__set_error(st, "%s: %s", who, tg_last_error());
        goto fail;
    }
    return out;
fail:
    tg__tensor_release(out);
    return NULL;
}
