/* ops/join.c - joining tensors: cat and stack (PyTorch's torch.cat and
 * torch.stack).
 *
 * Contract: every input is on one device, of any dtypes (converted to the
 * promoted one, as PyTorch's cat: ops/promote.c); cat's inputs have the
 * same number of dims and the same sizes but along dim; stack's have the same
 * shape. The result is a new contiguous tensor: each input is copied into its
 * window of it (the copy kernel writes through strides, on either device).
 * Recorded when an input requires grad: the node saves nothing (only the
 * inputs' sizes along dim, from their metadata), and its backward gives
 * input i the window of the gradient it filled (a contiguous copy). A node
 * has at most TG__MAX_IO inputs, so more are joined in groups. On failure
 * nothing is leaked and NULL is returned with the error set. */
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* iparam[0]: the dim. */
static tg_status cat_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    int dim = (int)n->iparam[0];
    int64_t off = 0;
    for (int i = 0; i < n->n_in; i++) {
        int64_t len = n->in_meta[i].shape[dim];
        if (n->edge[i].kind != TG__EDGE_NONE) {
            tg_tensor *w = tg__slice(n->site, gout[0], dim, off, off + len, 1);
            gin[i] = w ? tg__contiguous(n->site, w) : NULL;
            tg__tensor_release(w);
            if (!gin[i]) {
                for (int k = 0; k < i; k++) {
                    tg__tensor_release(gin[k]);
                    gin[k] = NULL;
                }
                return tg_last_status();
            }
        }
        off += len;
    }
    return TG_OK;
}
static const tg__op_def cat_def = {"CatBackward", cat_backward, false, NULL};

/* Checks n inputs for cat along d (already wrapped); fills the result's shape. */
static bool cat_shape(const char *who, int n, tg_tensor *const *ts, int d, int64_t *shape) {
    const tg_tensor *a = ts[0];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    for (int i = 1; i < n; i++) {
        const tg_tensor *b = ts[i];
        bool same = b->ndim == a->ndim;
        for (int k = 0; same && k < a->ndim; k++) same = k == d || b->shape[k] == a->shape[k];
        if (!same) {
            char sa[160], sb[160];
            tg__set_error(TG_ERR_SHAPE, "%s: input %d has shape %s, input 0 %s: the sizes must "
                          "match except along dim %d", who, i,
                          tg__shape_str(sb, sizeof sb, b->ndim, b->shape),
                          tg__shape_str(sa, sizeof sa, a->ndim, a->shape), d);
            return false;
        }
        if (__builtin_add_overflow(shape[d], b->shape[d], &shape[d])) {
            tg__set_error(TG_ERR_SHAPE, "%s: the result is too large", who);
            return false;
        }
    }
    return tg__shape_check(who, a->ndim, shape) >= 0;
}

/* cat of n <= TG__MAX_IO inputs (checked) along d. */
static tg_tensor *cat_group(tg_site s, const char *who, int n, tg_tensor *const *ts, int d) {
    int64_t shape[TG_MAX_DIMS];
    if (!cat_shape(who, n, ts, d, shape)) return NULL;
    tg_tensor *out = tg__new_output_on(s, who, ts[0]->storage->device, ts[0]->dtype, ts[0]->ndim,
                                       shape);
    if (!out) return NULL;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        int64_t len = ts[i]->shape[d];
        tg_tensor *w = NULL;
        TG_NO_GRAD { w = tg__slice(s, out, d, off, off + len, 1); }
        tg_status st = w ? tg__k_copy(w, ts[i]) : tg_last_status();
        tg__tensor_release(w);
        if (st != TG_OK) {
            tg__tensor_release(out);
            return NULL;
        }
        off += len;
    }
    if (!tg__needs_grad(n, ts)) return out;
    tg__node *node = tg__record(s, &cat_def, n, ts, out);
    if (!node) {
        tg__tensor_release(out);
        return NULL;
    }
    node->iparam[0] = d;
    return out;
}

/* cat of any number of inputs: groups of TG__MAX_IO, then the groups. */
static tg_tensor *cat_any(tg_site s, const char *who, int n, tg_tensor *const *ts, int d) {
    if (n <= TG__MAX_IO) return cat_group(s, who, n, ts, d);
    int ng = (n + TG__MAX_IO - 1) / TG__MAX_IO;
    tg_tensor **parts = tg__xcalloc((size_t)ng, sizeof *parts);
    if (!parts) return NULL;
    tg_tensor *out = NULL;
    int k = 0;
    for (; k < ng; k++) {
        int m = n - k * TG__MAX_IO < TG__MAX_IO ? n - k * TG__MAX_IO : TG__MAX_IO;
        if (!(parts[k] = cat_group(s, who, m, ts + k * TG__MAX_IO, d))) break;
    }
    if (k == ng) out = cat_any(s, who, ng, parts, d);
    for (int i = 0; i < k; i++) tg__tensor_release(parts[i]);
    free(parts);
    return out;
}

/* cat_any of the inputs converted to their promoted dtype (PyTorch's cat
 * promotes: f32 with f64 gives f64, i64 with f32 f32), the conversions
 * recorded so that gradients return in each input's dtype. */
static tg_tensor *cat_promoted(tg_site s, const char *who, int n, tg_tensor *const *ts, int d) {
    const tg_dtype rt = tg__result_type(n, ts);
    bool mixed = false;
    for (int i = 0; i < n; i++) mixed |= ts[i]->dtype != rt;
    if (!mixed) return cat_any(s, who, n, ts, d);
    tg_tensor **c = tg__xcalloc((size_t)n, sizeof *c);
    if (!c) return NULL;
    tg_tensor *out = NULL;
    int k = 0;
    for (; k < n; k++)
        if (!(c[k] = ts[k]->dtype == rt ? tg_retain(ts[k]) : tg__to_dtype(s, ts[k], rt))) break;
    if (k == n) out = cat_any(s, who, n, c, d);
    for (int i = 0; i < k; i++) tg__tensor_release(c[i]);
    free(c);
    return out;
}

/* The checks cat and stack share: n >= 1 inputs, none NULL, one device. */
static bool check_inputs(const char *who, int n, tg_tensor *const *ts) {
    if (tg__null_arg(ts, who, "tensors")) return false;
    /* a NULL element keeps an earlier error (a failed op that made it), as
     * every op's NULL argument does */
    for (int i = 0; i < n; i++)
        if (!ts[i]) {
            if (tg_last_status() == TG_OK)
                tg__set_error(TG_ERR_NULL, "%s: tensors[%d] is NULL", who, i);
            return false;
        }
    if (n < 1) {
        tg__set_error(TG_ERR_VALUE, "%s: needs at least one tensor", who);
        return false;
    }
    return tg__same_device(who, n, (const tg_tensor *const *)ts);
}

tg_tensor *tg_cat_at(tg_site s, int n, tg_tensor *const *tensors, int dim) {
    if (!check_inputs("tg_cat", n, tensors)) return NULL;
    if (tensors[0]->ndim == 0)
        return tg__ret(tg__fail(TG_ERR_DIM, "tg_cat: zero-dimensional tensors cannot be "
                                "concatenated (use tg_stack)"));
    int d = tg__wrap_dim("tg_cat", dim, tensors[0]->ndim);
    if (d < 0) return NULL;
    return tg__ret(cat_promoted(s, "tg_cat", n, tensors, d));
}

tg_tensor *tg_stack_at(tg_site s, int n, tg_tensor *const *tensors, int dim) {
    if (!check_inputs("tg_stack", n, tensors)) return NULL;
    int d = tg__wrap_dim("tg_stack", dim, tensors[0]->ndim + 1);
    if (d < 0) return NULL;
    for (int i = 1; i < n; i++) {
        const tg_tensor *a = tensors[0], *b = tensors[i];
        bool same = a->ndim == b->ndim;
        for (int k = 0; same && k < a->ndim; k++) same = a->shape[k] == b->shape[k];
        if (!same) {
            char sa[160], sb[160];
            return tg__ret(tg__fail(TG_ERR_SHAPE, "tg_stack: input %d has shape %s, input 0 %s: "
                                    "stack needs one shape", i,
                                    tg__shape_str(sb, sizeof sb, b->ndim, b->shape),
                                    tg__shape_str(sa, sizeof sa, a->ndim, a->shape)));
        }
    }
    tg_tensor **u = tg__xcalloc((size_t)n, sizeof *u);
    if (!u) return NULL;
    tg_tensor *out = NULL;
    int k = 0;
    for (; k < n; k++)
        if (!(u[k] = tg__unsqueeze(s, tensors[k], d))) break;
    if (k == n) out = cat_promoted(s, "tg_stack", n, u, d);
    for (int i = 0; i < k; i++) tg__tensor_release(u[i]);
    free(u);
    return tg__ret(out);
}
