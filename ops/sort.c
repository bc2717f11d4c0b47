/* ops/sort.c - sorting along a dim: tg_argsort, tg_sort, tg_topk.
 *
 * Contract: t f32, f64, i64 or bool (tg_topk: not bool, as PyTorch), any
 * strides, 0-d (one element) and empty dims allowed. The order is PyTorch's
 * stable sort (kernels/sort.h): ties keep their index order, NaN is larger
 * than +inf, -0.0 equals +0.0; tg_topk takes the first k of that order, so
 * among equal elements the lowest index comes first (PyTorch leaves topk's
 * tie order unspecified). The indices come from one kernel (the backend's
 * argsort); the values of a float t are a gather along dim of them
 * (tg__gather_dim: recorded as GatherBackward, which saves only the indices
 * and scatters the gradient back, PyTorch's SortBackward / TopkBackward
 * formula for indices that never repeat), those of an i64 or bool t are
 * written by the same kernel (never differentiable).
 * Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_VALUE (topk's k
 * outside [0, size]), TG_ERR_DEVICE, TG_ERR_NOMEM; every message names the
 * public op called. Nothing is leaked and *indices stays NULL on failure.
 */
#include "ops_internal.h"

static bool check(const char *who, const tg_tensor *t, bool bool_ok, int dim, int *d) {
    if (!tg__same_device(who, 1, &t)) return false;
    if (!tg__is_float(t->dtype) && t->dtype != TG_I64 && (t->dtype != TG_BOOL || !bool_ok)) {
        tg__set_error(TG_ERR_DTYPE, "%s: dtype %s is not supported (f32, f64, i64%s)%s", who,
                      tg_dtype_name(t->dtype), bool_ok ? " or bool" : "",
                      t->dtype == TG_BF16 ? "; convert bf16 with tg_to_dtype(t, TG_F32) first"
                      : t->dtype == TG_BOOL ? " (as PyTorch's topk)" : "");
        return false;
    }
    return (*d = tg__wrap_dim(who, dim, t->ndim)) >= 0;
}

/* The stable order along d of t: *idx (i64, t's shape) and, when val is not
 * NULL, *val the elements in that order (t's dtype). False with the error
 * set and nothing held. */
static bool order(tg_site s, const char *who, tg_tensor *t, int d, bool desc, tg_tensor **idx,
                  tg_tensor **val) {
    tg_device dev = t->storage->device;
    *idx = tg__new_output_on(s, who, dev, TG_I64, t->ndim, t->shape);
    if (val) *val = *idx ? tg__new_output_on(s, who, dev, t->dtype, t->ndim, t->shape) : NULL;
    if (*idx && (!val || *val) && tg__k_argsort(*idx, val ? *val : NULL, t, d, desc) == TG_OK)
        return true;
    if (*idx) tg__tensor_release(*idx);
    if (val && *val) tg__tensor_release(*val);
    *idx = NULL;
    if (val) *val = NULL;
    return false;
}

/* The first k along d of a new tensor r (released): r itself when k is its
 * size there (or r is 0-d), else a copy of that window (a tensor of its own,
 * not a view). */
static tg_tensor *first_k(tg_site s, tg_tensor *r, int d, int64_t k) {
    if (!r || r->ndim == 0 || k == r->shape[d]) return r;
    tg_tensor *v = tg__narrow(s, r, d, 0, k);
    tg_tensor *c = v ? tg__clone(s, v) : NULL;
    tg__tensor_release(v);
    tg__tensor_release(r);
    return c;
}

/* The first k (all for k < 0) along dim of t in sorted order: the values,
 * and the indices in *indices (or released when indices is NULL). */
static tg_tensor *sorted(tg_site s, const char *who, tg_tensor *t, int dim, bool desc, int64_t k,
                         bool bool_ok, tg_tensor **indices) {
    if (indices) *indices = NULL;
    if (tg__null_arg(t, who, "t")) return NULL;
    int d;
    if (!check(who, t, bool_ok, dim, &d)) return NULL;
    const int64_t n = t->ndim ? t->shape[d] : 1;
    if (k > n)
        return tg__fail(TG_ERR_VALUE, "%s: k %lld is out of range for size %lld along dim %d "
                        "(0 <= k <= size)", who, (long long)k, (long long)n, d);
    if (k < 0) k = n;
    const bool floating = tg__is_float(t->dtype);
    tg_tensor *idx, *val = NULL;
    if (!order(s, who, t, d, desc, &idx, floating ? NULL : &val)) return NULL;
    idx = first_k(s, idx, d, k);
    val = floating ? NULL : first_k(s, val, d, k);
    if (idx && floating) val = tg__gather_dim(s, who, t, d, idx);
    if (!idx || !val) {
        tg__tensor_release(idx);
        tg__tensor_release(val);
        return NULL;
    }
    if (indices) *indices = idx;
    else tg__tensor_release(idx);
    return val;
}

/* ---- the public entry points (inner errors told in their names) ------------------------ */

tg_tensor *tg_argsort_at(tg_site s, tg_tensor *t, int dim, bool descending) {
    const char *who = "tg_argsort", *prev = tg__caller_enter(who);
    tg_tensor *idx = NULL;
    int d;
    if (!tg__null_arg(t, who, "t") && check(who, t, true, dim, &d))
        order(s, who, t, d, descending, &idx, NULL);
    tg__caller_leave(prev);
    return tg__ret(idx);
}

tg_tensor *tg_sort_at(tg_site s, tg_tensor *t, int dim, bool descending, tg_tensor **indices) {
    const char *prev = tg__caller_enter("tg_sort");
    tg_tensor *v = sorted(s, "tg_sort", t, dim, descending, -1, true, indices);
    tg__caller_leave(prev);
    if (v && indices) tg__ret(*indices);
    return tg__ret(v);
}

tg_tensor *tg_topk_at(tg_site s, tg_tensor *t, int64_t k, int dim, bool largest,
                      tg_tensor **indices) {
    const char *who = "tg_topk", *prev = tg__caller_enter(who);
    tg_tensor *v = NULL;
    if (k < 0) {
        if (indices) *indices = NULL;
        if (!tg__null_arg(t, who, "t"))
            tg__set_error(TG_ERR_VALUE, "%s: k %lld is out of range (0 <= k <= size)", who,
                          (long long)k);
    } else {
        v = sorted(s, who, t, dim, largest, k, false, indices);
    }
    tg__caller_leave(prev);
    if (v && indices) tg__ret(*indices);
    return tg__ret(v);
}
