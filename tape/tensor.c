/* tape/tensor.c - tensor handles: creation, reference counting, names,
 * metadata, copying data out, printing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"
#include "device.h"
#include "live_objects.h"
#include "sync.h"

size_t tg_dtype_size(tg_dtype dt) { return tg__k_dtype_size(dt); }

const char *tg_dtype_name(tg_dtype dt) {
    switch (dt) {
    case TG_F32: return "f32";
    case TG_F64: return "f64";
    case TG_I64: return "i64";
    case TG_BOOL: return "bool";
    case TG_BF16: return "bf16";
    }
    return "?";
}

bool tg__is_float(tg_dtype dt) { return dt == TG_F32 || dt == TG_F64; }
bool tg__is_floating(tg_dtype dt) { return tg__is_float(dt) || dt == TG_BF16; }

tg_status tg__dtype_unsupported(const char *who, tg_dtype dt) {
    return tg__set_error(TG_ERR_DTYPE, "%s: dtype %s is not supported (f32 or f64 required%s)",
                         who, tg_dtype_name(dt),
                         dt == TG_BF16 ? "; bf16 is a storage dtype: convert with "
                                         "tg_to_dtype(t, TG_F32) first"
                                       : "");
}

void *tg__dtype_unsupported_null(const char *who, tg_dtype dt) {
    tg__dtype_unsupported(who, dt);
    return NULL;
}

uint16_t tg_bf16_from_f32(float f) { return tg__f32_to_bf16(f); }
float tg_bf16_to_f32(uint16_t h) { return tg__bf16_to_f32(h); }

bool tg__is_contiguous(const tg_tensor *t) {
    if (tg__k_numel(t->ndim, t->shape) == 0) return true; /* as PyTorch: no element to misplace */
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect) return false;
        expect *= t->shape[d];
    }
    return true;
}

int tg__wrap_dim(const char *who, int dim, int ndim) {
    int n = ndim == 0 ? 1 : ndim; /* a 0-d tensor accepts dim 0 / -1 like PyTorch */
    if (dim < -n || dim >= n) {
        tg__set_error(TG_ERR_DIM, "%s: dimension %d out of range (expected to be in [%d, %d])", who,
                      dim, -n, n - 1);
        return -1;
    }
    return dim < 0 ? dim + n : dim;
}

/* Validates (dt, ndim, shape) for a new tensor; returns its element count or
 * -1 with the error set. */
static int64_t check_shape(const char *who, tg_dtype dt, int ndim, const int64_t *shape) {
    if (tg_dtype_size(dt) == 0)
        return tg__set_error(TG_ERR_DTYPE, "%s: invalid dtype %d", who, (int)dt), -1;
    return tg__shape_check(who, ndim, shape);
}

tg_tensor *tg__tensor_alias(tg_site s, tg__storage *st, tg_dtype dt, int ndim,
                         const int64_t *shape, const int64_t *strides, int64_t offset) {
    tg_tensor *t = tg__xcalloc(1, sizeof *t);
    if (!t) return NULL;
    atomic_init(&t->refcount, 1);
    t->storage = st;
    tg__storage_retain(st);
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
    t->offset = offset;
    t->site = s;
    tg__reg_tensor_add(t);
    return t;
}

tg_tensor *tg__tensor_new(tg_site s, const char *who, tg_dtype dt, int ndim,
                          const int64_t *shape, tg_mem_category cat) {
    return tg__tensor_new_on(s, who, TG_CPU, dt, ndim, shape, cat);
}

tg_tensor *tg__tensor_new_on(tg_site s, const char *who, tg_device dev, tg_dtype dt, int ndim,
                             const int64_t *shape, tg_mem_category cat) {
    int64_t n = check_shape(who, dt, ndim, shape);
    if (n < 0) return NULL;
    int64_t strides[TG_MAX_DIMS];
    int64_t acc = 1;
    for (int d = ndim - 1; d >= 0; d--) { /* as PyTorch: a size-0 dim counts as 1 */
        strides[d] = acc;
        acc *= shape[d] ? shape[d] : 1;
    }
    tg__storage *st = tg__storage_new(s, dev, (size_t)n * tg_dtype_size(dt), cat, who);
    if (!st) return NULL;
    tg_tensor *t = tg__tensor_alias(s, st, dt, ndim, shape, strides, 0);
    tg__storage_release(st); /* t holds it now (or it is freed on failure) */
    return t;
}

tg_tensor *tg__new_output_on(tg_site s, const char *who, tg_device dev, tg_dtype dt, int ndim,
                             const int64_t *shape) {
    return tg__tensor_new_on(s, who, dev, dt, ndim, shape, tg__op_category());
}

tg_tensor *tg__zeros_on(tg_site s, tg_device dev, tg_dtype dt, int ndim, const int64_t *shape) {
    tg_tensor *t = tg__new_output_on(s, "zeros", dev, dt, ndim, shape);
    return t ? tg__k_ok(tg__k_fill(t, 0.0), t) : NULL;
}

void tg__tensor_release(tg_tensor *t) {
    if (!t || atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) > 1) return;
    /* No other thread can reach t now, but through the weak pointers of the
     * leak scan (the registry) and of a weak leaf handle: both are let go
     * under their locks before t is freed. */
    tg__reg_tensor_del(t);
    if (atomic_load(&t->leafref)) tg__leafref_forget(t);
    tg__storage_release(t->storage);
    /* Depth: a strong leaf handle never holds a tensor that has a grad_fn or
     * whose .grad has one (tg__unown_leaf_chain), and a view's base is never a
     * view: the recursion below is shallow. */
    tg__tensor_release(tg__swap_grad(t, NULL));
    tg__tensor_release(t->pending);
    tg__node_release(t->grad_fn);
    if (t->view_base) {
        t->view_base->lib_refs--;
        tg__tensor_release(t->view_base);
    }
    free(t);
}

bool tg__tensor_try_retain(tg_tensor *t) {
    int n = atomic_load_explicit(&t->refcount, memory_order_relaxed);
    while (n > 0)
        if (atomic_compare_exchange_weak_explicit(&t->refcount, &n, n + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    return false;
}

tg_tensor *tg__swap_grad(tg_tensor *leaf, tg_tensor *g) {
    if (g) {
        g->lib_refs++;
        g->grad_owner = leaf;
    }
    tg_tensor *old = leaf->grad;
    leaf->grad = g;
    if (old) {
        old->lib_refs--;
        if (old->grad_owner == leaf) old->grad_owner = NULL;
    }
    return old;
}

void tg__set_grad(tg_tensor *leaf, tg_tensor *g) {
    tg__grad_lock();
    tg_tensor *old = tg__swap_grad(leaf, g);
    tg__grad_unlock();
    tg__tensor_release(old); /* not under the lock: its release may run a callback */
}

tg_tensor *tg_retain(tg_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

tg_status tg_release(tg_tensor *t) {
    if (!t) return TG_OK;
    /* Refused while an open scope the caller sees owns t: the reference given
     * back could be the scope's, which would then free it a second time. In a
     * callback the outer scopes are hidden: a reference the callback received
     * beyond theirs and the library's own can be given back
     * (tg__scope_may_release). */
    if (!tg__scope_may_release(t))
        return tg__set_error(TG_ERR_STATE,
                             "tg_release: %s is owned by an open scope, which "
                             "releases it at tg_scope_end (take it out with tg_scope_keep, "
                             "or release references of your own after the scope ends)",
                             TG__LABEL(t));
    tg__tensor_release(t);
    return TG_OK;
}

tg_tensor *tg_set_name(tg_tensor *t, const char *name) {
    if (tg__null_arg(t, "tg_set_name", "t")) return NULL;
    if (!name) name = "";
    size_t n = strlen(name);
    if (n > TG__NAME_LEN - 1) { /* cut, but not inside a UTF-8 character */
        n = TG__NAME_LEN - 1;
        while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
    }
    memcpy(t->name, name, n);
    t->name[n] = '\0';
    return t;
}

const char *tg_name(const tg_tensor *t) { return t ? t->name : ""; }

/* ---- creation ------------------------------------------------------------- */

static void fill_value(tg_tensor *t, double v) {
    int64_t n = tg__k_numel(t->ndim, t->shape);
    void *p = tg__ptr(t);
    if (t->dtype == TG_F32) {
        float *x = p; // (n)
        for (int64_t i = 0; i < n; i++) x[i] = (float)v;
    } else if (t->dtype == TG_F64) {
        double *x = p; // (n)
        for (int64_t i = 0; i < n; i++) x[i] = v;
    } else if (t->dtype == TG_BOOL) {
        memset(p, v != 0, (size_t)n); /* NaN is true */
    } else if (t->dtype == TG_BF16) {
        uint16_t *x = p, b = tg__f32_to_bf16((float)v); // (n)
        for (int64_t i = 0; i < n; i++) x[i] = b;
    } else {
        int64_t *x = p; // (n)
        for (int64_t i = 0; i < n; i++) x[i] = tg__to_i64(v);
    }
}

tg_tensor *tg_empty_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape) {
    return tg__ret(tg__tensor_new(s, "tg_empty", dt, ndim, shape, tg__creation_category()));
}

static tg_tensor *filled(tg_site s, const char *who, tg_dtype dt, int ndim,
                         const int64_t *shape, double v) {
    tg_tensor *t = tg__tensor_new(s, who, dt, ndim, shape, tg__creation_category());
    if (t) fill_value(t, v);
    return tg__ret(t);
}

tg_tensor *tg_zeros_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape) {
    return filled(s, "tg_zeros", dt, ndim, shape, 0.0);
}
tg_tensor *tg_ones_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape) {
    return filled(s, "tg_ones", dt, ndim, shape, 1.0);
}
tg_tensor *tg_full_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape, double value) {
    if (dt == TG_I64 && !isfinite(value))
        return tg__fail(TG_ERR_VALUE, "tg_full: value %g is not representable as i64", value);
    return filled(s, "tg_full", dt, ndim, shape, value);
}

tg_tensor *tg_arange_at(tg_site s, tg_dtype dt, double start, double end, double step) {
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0.0)
        return tg__fail(TG_ERR_VALUE, "tg_arange: need finite start/end and a non-zero step "
                                      "(got %g, %g, %g)", start, end, step);
    if ((end > start && step < 0) || (end < start && step > 0))
        return tg__fail(TG_ERR_VALUE, "tg_arange: the range [%g, %g) and the step %g point in "
                        "opposite directions", start, end, step);
    double cnt = ceil((end - start) / step);
    if (cnt > 1e15) return tg__fail(TG_ERR_SHAPE, "tg_arange: %g elements is too many", cnt);
    int64_t n = (int64_t)cnt;
    tg_tensor *t = tg__tensor_new(s, "tg_arange", dt, 1, &n, tg__creation_category());
    if (!t) return NULL;
    for (int64_t i = 0; i < n; i++) {
        double v = start + (double)i * step;
        if (dt == TG_F32) ((float *)t->storage->data)[i] = (float)v;
        else if (dt == TG_F64) ((double *)t->storage->data)[i] = v;
        else if (dt == TG_BOOL) ((uint8_t *)t->storage->data)[i] = v != 0;
        else if (dt == TG_BF16) ((uint16_t *)t->storage->data)[i] = tg__f32_to_bf16((float)v);
        else ((int64_t *)t->storage->data)[i] = tg__to_i64(v);
    }
    return tg__ret(t);
}

tg_tensor *tg_from_data_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape,
                           const void *data) {
    int64_t n = check_shape("tg_from_data", dt, ndim, shape);
    if (n < 0) return NULL;
    if (n > 0 && tg__null_arg(data, "tg_from_data", "data")) return NULL;
    tg_tensor *t = tg__tensor_new(s, "tg_from_data", dt, ndim, shape, tg__creation_category());
    if (!t) return NULL;
    if (n > 0) memcpy(t->storage->data, data, (size_t)n * tg_dtype_size(dt));
    if (dt == TG_BOOL) /* one representation of true */
        for (int64_t i = 0; i < n; i++) ((uint8_t *)t->storage->data)[i] = ((uint8_t *)t->storage->data)[i] != 0;
    return tg__ret(t);
}

tg_tensor *tg_from_blob_at(tg_site s, tg_device dev, tg_dtype dt, int ndim, const int64_t *shape,
                           const int64_t *strides, void *data, tg_release_fn release, void *ctx) {
    const char *who = "tg_from_blob";
    int64_t n = check_shape(who, dt, ndim, shape);
    if (n < 0 || tg__check_device_usable(who, dev) != TG_OK) return NULL;
    if (n > 0 && tg__null_arg(data, who, "data")) return NULL;
    const size_t es = tg_dtype_size(dt);
    if ((uintptr_t)data % es != 0)
        return tg__fail(TG_ERR_VALUE, "%s: data %p is not aligned to the %zu-byte elements of %s",
                        who, data, es, tg_dtype_name(dt));
    int64_t st[TG_MAX_DIMS], acc = 1, last = 0; /* last: the farthest element's index */
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = strides ? strides[d] : acc;
        if (st[d] < 0)
            return tg__fail(TG_ERR_VALUE, "%s: stride %lld of dim %d is negative (strides must "
                            "be >= 0)", who, (long long)st[d], d);
        acc *= shape[d] ? shape[d] : 1;
        int64_t ext;
        if (n > 0 && (__builtin_mul_overflow(shape[d] - 1, st[d], &ext) ||
                      __builtin_add_overflow(last, ext, &last)))
            return tg__fail(TG_ERR_VALUE, "%s: shape and strides reach beyond the address space",
                            who);
    }
    size_t nbytes = 0;
    if (n > 0 && __builtin_mul_overflow((size_t)last + 1, es, &nbytes))
        return tg__fail(TG_ERR_VALUE, "%s: shape and strides reach beyond the address space", who);
    /* room in the caller's scope first: past it nothing can fail, so a
     * failed call never calls release */
    if (!tg__ret_reserve(1)) return NULL;
    tg__storage *sto = tg__storage_adopt(s, dev, data, nbytes, release, ctx, who);
    if (!sto) return NULL;
    tg_tensor *t = tg__tensor_alias(s, sto, dt, ndim, shape, st, 0);
    if (!t) sto->release = NULL; /* a failed call keeps nothing and calls nothing */
    tg__storage_release(sto);
    return tg__ret(t);
}

/* ---- metadata ------------------------------------------------------------- */

int tg_ndim(const tg_tensor *t) { return t ? t->ndim : -1; }

int64_t tg_size(const tg_tensor *t, int dim) {
    if (tg__null_arg(t, "tg_size", "t")) return -1;
    int d = tg__wrap_dim("tg_size", dim, t->ndim);
    if (d < 0) return -1;
    return t->ndim == 0 ? 1 : t->shape[d];
}

int64_t tg_stride(const tg_tensor *t, int dim) {
    if (tg__null_arg(t, "tg_stride", "t")) return -1;
    int d = tg__wrap_dim("tg_stride", dim, t->ndim);
    if (d < 0) return -1;
    return t->ndim == 0 ? 1 : t->strides[d];
}

const int64_t *tg_shape(const tg_tensor *t) { return t ? t->shape : NULL; }
const int64_t *tg_strides(const tg_tensor *t) { return t ? t->strides : NULL; }
int64_t tg_numel(const tg_tensor *t) { return t ? tg__k_numel(t->ndim, t->shape) : -1; }
tg_dtype tg_get_dtype(const tg_tensor *t) { return t ? t->dtype : TG_F32; }
tg_device tg_get_device(const tg_tensor *t) { return t ? t->storage->device : TG_CPU; }
bool tg_is_contiguous(const tg_tensor *t) { return t && tg__is_contiguous(t); }
uint64_t tg_version(const tg_tensor *t) { return t ? t->storage->version : 0; }
bool tg_same_storage(const tg_tensor *a, const tg_tensor *b) {
    return a && b && a->storage == b->storage;
}
void *tg_data(tg_tensor *t) { return t ? tg__user_ptr(t) : NULL; }

/* ---- data out ------------------------------------------------------------- */

/* Element at index `off` of host data `base` (from tg__host_elems). */
static double read_elem(const void *base, tg_dtype dt, int64_t off) {
    switch (dt) {
    case TG_F32: return ((const float *)base)[off];
    case TG_F64: return ((const double *)base)[off];
    case TG_I64: return (double)((const int64_t *)base)[off];
    case TG_BOOL: return ((const uint8_t *)base)[off];
    case TG_BF16: return tg__bf16_to_f32(((const uint16_t *)base)[off]);
    }
    return NAN;
}

tg_status tg_copy_out(const tg_tensor *t, tg_dtype dst_dt, void *dst, size_t dst_bytes) {
    if (tg__null_arg(t, "tg_copy_out", "t")) return tg_last_status();
    if (tg_dtype_size(dst_dt) == 0)
        return tg__set_error(TG_ERR_DTYPE, "tg_copy_out: invalid dtype %d", (int)dst_dt);
    int64_t n = tg__k_numel(t->ndim, t->shape);
    size_t need = (size_t)n * tg_dtype_size(dst_dt);
    if (n > 0 && tg__null_arg(dst, "tg_copy_out", "dst")) return tg_last_status();
    if (dst_bytes < need)
        return tg__set_error(TG_ERR_VALUE, "tg_copy_out: destination has %zu bytes, %zu needed",
                             dst_bytes, need);
    if (n == 0) return TG_OK;
    void *owned;
    int64_t lo;
    const void *base = tg__host_elems("tg_copy_out", t, &owned, &lo);
    if (!base) return tg_last_status();
    for (int64_t i = 0; i < n; i++) {
        int64_t off = t->offset - lo + tg__k_offset_of(i, t->ndim, t->shape, t->strides);
        if (dst_dt == TG_I64 && t->dtype == TG_I64)
            ((int64_t *)dst)[i] = ((const int64_t *)base)[off];
        else if (dst_dt == TG_I64)
            ((int64_t *)dst)[i] = tg__to_i64(read_elem(base, t->dtype, off));
        else if (dst_dt == TG_BOOL && t->dtype == TG_I64)
            ((uint8_t *)dst)[i] = ((const int64_t *)base)[off] != 0;
        else if (dst_dt == TG_BOOL)
            ((uint8_t *)dst)[i] = read_elem(base, t->dtype, off) != 0; /* NaN: true */
        else if (dst_dt == TG_F32)
            ((float *)dst)[i] = (float)read_elem(base, t->dtype, off);
        else if (dst_dt == TG_BF16 && t->dtype == TG_BF16)
            ((uint16_t *)dst)[i] = ((const uint16_t *)base)[off];
        else if (dst_dt == TG_BF16)
            ((uint16_t *)dst)[i] = tg__f32_to_bf16((float)read_elem(base, t->dtype, off));
        else
            ((double *)dst)[i] = read_elem(base, t->dtype, off);
    }
    free(owned);
    return TG_OK;
}

/* The element at storage offset off of t, read (from the device if need be). */
static tg_status read_one(const char *who, const tg_tensor *t, int64_t off, double *out) {
    if (t->storage->device == TG_CPU) {
        *out = read_elem(t->storage->data, t->dtype, off);
        return TG_OK;
    }
    /* a 0-d view of that one element */
    tg_tensor one = *t;
    one.ndim = 0;
    one.offset = off;
    void *owned;
    int64_t lo;
    const void *base = tg__host_elems(who, &one, &owned, &lo);
    if (!base) return tg_last_status();
    *out = read_elem(base, t->dtype, off - lo);
    free(owned);
    return TG_OK;
}

tg_status tg_item(const tg_tensor *t, double *out) {
    if (tg__null_arg(t, "tg_item", "t") || tg__null_arg(out, "tg_item", "out"))
        return tg_last_status();
    if (tg__k_numel(t->ndim, t->shape) != 1) {
        char buf[160];
        return tg__set_error(TG_ERR_SHAPE, "tg_item: tensor of shape %s has %lld elements, not 1",
                             tg__shape_str(buf, sizeof buf, t->ndim, t->shape),
                             (long long)tg__k_numel(t->ndim, t->shape));
    }
    return read_one("tg_item", t, t->offset, out);
}

tg_status tg_get(const tg_tensor *t, const int64_t *idx, double *out) {
    if (tg__null_arg(t, "tg_get", "t") || tg__null_arg(out, "tg_get", "out"))
        return tg_last_status();
    if (t->ndim > 0 && tg__null_arg(idx, "tg_get", "idx")) return tg_last_status();
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (idx[d] < 0 || idx[d] >= t->shape[d])
            return tg__set_error(TG_ERR_DIM, "tg_get: index %lld out of range for dimension %d "
                                 "of size %lld", (long long)idx[d], d, (long long)t->shape[d]);
        off += idx[d] * t->strides[d];
    }
    return read_one("tg_get", t, off, out);
}

tg_status tg_print(FILE *f, const tg_tensor *t, int max_elems) {
    if (tg__null_arg(f, "tg_print", "f") || tg__null_arg(t, "tg_print", "t"))
        return tg_last_status();
    /* the grad_fn is named in the output: as PyTorch's print, refuse before
     * writing anything when it cannot be made (a no-grad view modified in place) */
    tg__node *fn = NULL;
    if (tg__has_grad_fn(t) && !tg__grad_fn((tg_tensor *)t, &fn)) return tg_last_status();
    int64_t n = tg__k_numel(t->ndim, t->shape);
    void *owned = NULL;
    int64_t lo = 0;
    const void *base = n > 0 && max_elems > 0 ? tg__host_elems("tg_print", t, &owned, &lo) : NULL;
    if (n > 0 && max_elems > 0 && !base) return tg_last_status();
    char buf[160];
    fprintf(f, "%s%s%s%s", t->name, t->name[0] ? " " : "", tg_dtype_name(t->dtype),
            tg__shape_str(buf, sizeof buf, t->ndim, t->shape));
    if (t->storage->device != TG_CPU) fprintf(f, " (%s)", tg__device_name(t->storage->device));
    if (fn) fprintf(f, " (grad_fn=%s)", fn->name);
    else if (tg__req_grad(t)) fprintf(f, " (requires_grad)");
    fprintf(f, " [");
    for (int64_t i = 0; i < n && i < max_elems; i++) {
        int64_t off = t->offset - lo + tg__k_offset_of(i, t->ndim, t->shape, t->strides);
        const char *sep = i ? ", " : "";
        if (t->dtype == TG_I64) /* exact, not through double */
            fprintf(f, "%s%lld", sep, (long long)((const int64_t *)base)[off]);
        else if (t->dtype == TG_BOOL)
            fprintf(f, "%s%s", sep, ((const uint8_t *)base)[off] ? "true" : "false");
        else
            fprintf(f, "%s%.6g", sep, read_elem(base, t->dtype, off));
    }
    fprintf(f, "%s]\n", n > max_elems ? ", ..." : "");
    free(owned);
    return TG_OK;
}
