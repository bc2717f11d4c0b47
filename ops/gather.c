/* ops/gather.c - tg_gather: out[..., j] = t[..., index[..., j]] (last dim),
 * and along any dim: tg_gather_dim, tg_scatter_add, tg_index_select, tg_flip.
 *
 * Contract: t f32/f64 and index i64, both CPU, any strides, same ndim and the
 * same leading sizes; index's last size is free and gives out's. Every index
 * is validated before anything is written. Errors: TG_ERR_NULL, TG_ERR_DTYPE
 * (t not floating, index not i64), TG_ERR_DEVICE, TG_ERR_SHAPE (ndim or a
 * leading size differs), TG_ERR_VALUE (an index outside [0, V): the message
 * names the position and the value), TG_ERR_NOMEM.
 * Backward (GatherBackward) saves only index; t's shape comes from the node's
 * input metadata: dt = zeros(t's shape), dt[..., index[..., j]] += g[..., j].
 */
#include <inttypes.h>
#include <stdio.h>

#include <stdlib.h>

#include "ops_internal.h"

static tg_status gather_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

static const tg__op_def gather_def = {"GatherBackward", gather_backward, false, NULL};

static bool gather_check(const char *who, const tg_tensor *t, const tg_tensor *index) {
    char st[128], si[128];
    const tg_tensor *ti[2] = {t, index};
    if (!tg__same_device(who, 2, ti))
        return false;
    if (!tg__is_float(t->dtype)) {
        tg__set_error(TG_ERR_DTYPE, "%s: t must be f32 or f64, got %s", who,
                      tg_dtype_name(t->dtype));
        return false;
    }
    if (index->dtype != TG_I64) {
        tg__set_error(TG_ERR_DTYPE, "%s: index must be i64, got %s", who,
                      tg_dtype_name(index->dtype));
        return false;
    }
    bool ok = t->ndim == index->ndim;
    for (int d = 0; ok && d < t->ndim - 1; d++)
        ok = t->shape[d] == index->shape[d];
    if (!ok) {
        tg__shape_str(st, sizeof st, t->ndim, t->shape);
        tg__shape_str(si, sizeof si, index->ndim, index->shape);
        tg__set_error(TG_ERR_SHAPE, "%s: index %s must have t's ndim and its sizes but along "
                      "the gathered dim, t is %s", who, si, st);
        return false;
    }
    return true;
}

/* Records TG_ERR_VALUE for the entry of index at C-order position pos. */
static void report_bad(const char *who, const tg_tensor *index, int64_t pos, int64_t V) {
    int64_t idx[TG_MAX_DIMS];
    char where[160];
    int64_t rest = pos;
    for (int d = index->ndim - 1; d >= 0; d--) {
        idx[d] = rest % index->shape[d];
        rest /= index->shape[d];
    }
    tg__shape_str(where, sizeof where, index->ndim, idx);
    void *owned;
    int64_t lo;
    const int64_t *p = tg__host_elems(who, index, &owned, &lo);
    if (!p)
        return;
    int64_t v = p[index->offset - lo + tg__k_offset_of(pos, index->ndim, index->shape, index->strides)];
    free(owned);
    tg__set_error(TG_ERR_VALUE,
                  "%s: index %" PRId64 " at position %s is out of range for size %" PRId64, who,
                  v, where, V);
}

/* Checks every index against V before anything is written. */
static bool check_range(const char *who, const tg_tensor *index, int64_t V) {
    int64_t bad = -1;
    if (tg__k_gather_find_bad(index, V, &bad) != TG_OK) return false;
    if (bad >= 0) {
        report_bad(who, index, bad, V);
        return false;
    }
    return true;
}

static tg_tensor *gather_last(tg_site s, const char *who, tg_tensor *t, tg_tensor *index) {
    if (tg__null_arg(t, who, "t") || tg__null_arg(index, who, "index"))
        return NULL;
    if (!gather_check(who, t, index))
        return NULL;
    int64_t V = t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
    if (!check_range(who, index, V))
        return NULL;

    // (..., J)
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, index->ndim,
                                       index->shape);
    if (!out || !(out = tg__k_ok(tg__k_gather_forward(t, index, out), out)))
        return NULL;

    tg_tensor *inputs[2] = {t, index};
    if (tg__needs_grad(2, inputs)) {
        tg__node *n = tg__record(s, &gather_def, 2, inputs, out);
        if (!n || tg__node_save(n, index, false, 1) < 0) {
            tg__tensor_release(out);
            return NULL;
        }
    }
    return out;
}

tg_tensor *tg__gather(tg_site s, tg_tensor *t, tg_tensor *index) {
    return gather_last(s, "tg_gather", t, index);
}

tg_tensor *tg_gather_at(tg_site s, tg_tensor *t, tg_tensor *index) {
    return tg__ret(tg__gather(s, t, index));
}

/* Saved slot 0: index (..., J). */
static tg_status gather_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    if (n->edge[0].kind == TG__EDGE_NONE)
        return TG_OK;
    tg_tensor *index = tg__node_saved(n, 0);
    if (!index)
        return tg_last_status();
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *dt = tg__zeros_on(n->site, index->storage->device, m->dtype, m->ndim,
                                 m->shape); // (..., V)
    if (!dt) {
        tg__tensor_release(index);
        return tg_last_status();
    }
    dt = tg__k_ok(tg__k_gather_backward(gout[0], index, dt), dt);
    tg__tensor_release(index);
    gin[0] = dt;
    return dt ? TG_OK : tg_last_status();
}

/* ---- along any dim: gather_dim, scatter_add, index_select, flip ---------------------- */

/* a with dims d and its last swapped (a new reference; a itself when d is last). */
static tg_tensor *to_last(tg_site s, tg_tensor *a, int d) {
    return d == a->ndim - 1 ? tg_retain(a) : tg__transpose(s, a, d, a->ndim - 1);
}

/* r (a new contiguous result) with dims d and its last swapped, as a tensor of
 * its own: a copy, or, when the swap leaves the elements in place (a size-1
 * dim), r seen with the swapped shape but not as a view (a result that is a
 * view would be refused by later in-place ops as a view made inside an op). */
static tg_tensor *from_last(tg_site s, tg_tensor *r, int d) {
    if (d == r->ndim - 1) return tg_retain(r);
    tg_tensor *v = tg__transpose(s, r, d, r->ndim - 1);
    if (!v) return NULL;
    tg_tensor *out = tg__is_contiguous(v) ? tg__reshape_own(s, r, v->ndim, v->shape)
                                          : tg__contiguous(s, v);
    tg__tensor_release(v);
    return out;
}

static tg_tensor *gather_dim(tg_site s, const char *who, tg_tensor *t, int dim, tg_tensor *index) {
    if (tg__null_arg(t, who, "t") || tg__null_arg(index, who, "index")) return NULL;
    if (t->ndim == 0 || index->ndim != t->ndim) return gather_last(s, who, t, index);
    int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    tg_tensor *tt = to_last(s, t, d), *it = tt ? to_last(s, index, d) : NULL;
    tg_tensor *r = it ? gather_last(s, who, tt, it) : NULL;
    tg_tensor *out = r ? from_last(s, r, d) : NULL;
    tg_tensor *temps[3] = {tt, it, r};
    for (int i = 0; i < 3; i++)
        tg__tensor_release(temps[i]);
    return out;
}

tg_tensor *tg_gather_dim_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index) {
    return tg__ret(gather_dim(s, "tg_gather_dim", t, dim, index));
}

tg_tensor *tg__gather_dim(tg_site s, const char *who, tg_tensor *t, int dim, tg_tensor *index) {
    return gather_dim(s, who, t, dim, index);
}

/* scatter_add: node inputs (t, index, src); saves index when src needs a
 * gradient (as PyTorch: t's gradient is g itself); iparam[0] = dim. */
static tg_status scatter_add_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    if (n->edge[0].kind != TG__EDGE_NONE) gin[0] = tg_retain(gout[0]);
    if (n->edge[2].kind != TG__EDGE_NONE) {
        tg_tensor *index = tg__node_saved(n, 0);
        gin[2] = index ? gather_dim(n->site, n->name, gout[0], (int)n->iparam[0], index) : NULL;
        tg__tensor_release(index);
        if (!gin[2]) {
            tg__tensor_release(gin[0]);
            gin[0] = NULL;
            return tg_last_status();
        }
    }
    return TG_OK;
}
static const tg__op_def scatter_add_def = {"ScatterAddBackward", scatter_add_backward, false, NULL};

static tg_tensor *scatter_add(tg_site s, tg_tensor *t, int dim, tg_tensor *index, tg_tensor *src) {
    const char *who = "tg_scatter_add";
    char b1[128], b2[128];
    if (tg__null_arg(t, who, "t") || tg__null_arg(index, who, "index") ||
        tg__null_arg(src, who, "src"))
        return NULL;
    const tg_tensor *all[3] = {t, index, src};
    if (!tg__same_device(who, 3, all)) return NULL;
    if (!tg__is_float(t->dtype) || src->dtype != t->dtype)
        return tg__fail(TG_ERR_DTYPE, "%s: t and src must be of one float dtype (got %s and %s)",
                        who, tg_dtype_name(t->dtype), tg_dtype_name(src->dtype));
    if (index->dtype != TG_I64)
        return tg__fail(TG_ERR_DTYPE, "%s: index must be i64, got %s", who,
                        tg_dtype_name(index->dtype));
    int nd = t->ndim == 0 ? 1 : t->ndim;
    int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    bool ok = index->ndim == t->ndim && src->ndim == t->ndim;
    for (int i = 0; ok && i < t->ndim; i++)
        ok = src->shape[i] == index->shape[i] && (i == d || index->shape[i] == t->shape[i]);
    if (!ok)
        return tg__fail(TG_ERR_SHAPE, "%s: index %s and src %s must have one shape, t's %s but "
                        "along dim %d", who, tg__shape_str(b1, sizeof b1, index->ndim, index->shape),
                        tg__shape_str(b2, sizeof b2, src->ndim, src->shape),
                        tg__shape_str((char[128]){0}, 128, t->ndim, t->shape), d);
    if (!check_range(who, index, t->ndim ? t->shape[d] : 1)) return NULL;
    (void)nd;
    /* out^T = contiguous(t^T); out^T[..., index^T[..., j]] += src^T[..., j]; out = (out^T)^T */
    bool prev = tg_is_grad_enabled();
    tg_set_grad_enabled(false);
    tg_tensor *tt = t->ndim ? to_last(s, t, d) : tg_retain(t);
    tg_tensor *ot = tt ? tg__clone(s, tt) : NULL;
    tg_tensor *it = ot ? (t->ndim ? to_last(s, index, d) : tg_retain(index)) : NULL;
    tg_tensor *st = it ? (t->ndim ? to_last(s, src, d) : tg_retain(src)) : NULL;
    tg_tensor *res = NULL;
    if (st && tg__k_gather_backward(st, it, ot) == TG_OK)
        res = t->ndim ? from_last(s, ot, d) : tg_retain(ot);
    tg_set_grad_enabled(prev);
    tg_tensor *temps[4] = {tt, ot, it, st};
    for (int i = 0; i < 4; i++)
        tg__tensor_release(temps[i]);
    if (!res) return NULL;
    tg_tensor *in[3] = {t, index, src};
    if (tg__needs_grad(3, in)) {
        /* res may share storage with ot only through views, released above: a tensor of its own */
        tg__node *n = tg__record(s, &scatter_add_def, 3, in, res);
        if (!n || (n->edge[2].kind != TG__EDGE_NONE && tg__node_save(n, index, false, 1) < 0)) {
            tg__tensor_release(res);
            return NULL;
        }
        n->iparam[0] = d;
    }
    return res;
}

tg_tensor *tg_scatter_add_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index, tg_tensor *src) {
    return tg__ret(scatter_add(s, t, dim, index, src));
}

/* index_select: a 1-D i64 index of length L; t's dim becomes L. Through
 * gather_dim with the index expanded over t's other dims (its gradient adds
 * the repeated picks). */
static tg_tensor *index_select(tg_site s, const char *who, tg_tensor *t, int dim,
                               tg_tensor *index) {
    char b[128];
    if (tg__null_arg(t, who, "t") || tg__null_arg(index, who, "index")) return NULL;
    const tg_tensor *ti[2] = {t, index};
    if (!tg__same_device(who, 2, ti)) return NULL;
    if (index->dtype != TG_I64)
        return tg__fail(TG_ERR_DTYPE, "%s: index must be i64, got %s", who,
                        tg_dtype_name(index->dtype));
    if (index->ndim > 1)
        return tg__fail(TG_ERR_SHAPE, "%s: index must be 1-D (or 0-d), got %s", who,
                        tg__shape_str(b, sizeof b, index->ndim, index->shape));
    int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    if (!check_range(who, index, t->ndim ? t->shape[d] : 1)) return NULL;
    if (t->ndim == 0) return tg__clone(s, t); /* index [0] or 0: t itself */
    int64_t n_picked = index->ndim ? index->shape[0] : 1;
    int64_t vshape[TG_MAX_DIMS], eshape[TG_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) {
        vshape[i] = i == d ? n_picked : 1;
        eshape[i] = i == d ? n_picked : t->shape[i];
    }
    tg_tensor *iv = tg__reshape(s, index, t->ndim, vshape);
    tg_tensor *ie = iv ? tg__expand(s, iv, t->ndim, eshape) : NULL;
    tg_tensor *out = ie ? gather_dim(s, who, t, d, ie) : NULL;
    tg__tensor_release(iv);
    tg__tensor_release(ie);
    return out;
}

tg_tensor *tg_index_select_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index) {
    return tg__ret(index_select(s, "tg_index_select", t, dim, index));
}

/* flip: index_select with n-1, ..., 0 along each listed dim, computed
 * without recording; the node FlipBackward (iparam[0]: the flipped dims as a
 * bit mask) flips the gradient back and, as PyTorch's, saves nothing (a second
 * backward through it needs no retain_graph). */
static tg_status flip_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static const tg__op_def flip_def = {"FlipBackward", flip_backward, false, NULL};
static tg_tensor *flip_mask(tg_site s, tg_tensor *t, int64_t mask);

static tg_tensor *flip(tg_site s, tg_tensor *t, int ndims, const int *dims) {
    const char *who = "tg_flip";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (ndims < 0 || ndims > TG_MAX_DIMS || (ndims > 0 && !dims))
        return tg__fail(TG_ERR_VALUE, "%s: %d dims (0..%d, dims not NULL)", who, ndims, TG_MAX_DIMS);
    bool seen[TG_MAX_DIMS] = {false};
    for (int k = 0; k < ndims; k++) {
        int d = tg__wrap_dim(who, dims[k], t->ndim);
        if (d < 0) return NULL;
        if (t->ndim > 0 && seen[d])
            return tg__fail(TG_ERR_DIM, "%s: dim %d appears twice", who, d);
        if (t->ndim > 0) seen[d] = true;
    }
    int64_t mask = 0;
    for (int d = 0; d < t->ndim; d++)
        if (seen[d]) mask |= (int64_t)1 << d;
    bool prev = tg_is_grad_enabled();
    tg_set_grad_enabled(false);
    tg_tensor *out = flip_mask(s, t, mask);
    tg_set_grad_enabled(prev);
    if (out && tg__needs_grad(1, &t)) {
        tg__node *n = tg__record(s, &flip_def, 1, &t, out);
        if (!n) {
            tg__tensor_release(out);
            return NULL;
        }
        n->iparam[0] = mask;
    }
    return out;
}

static tg_status flip_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    gin[0] = flip_mask(n->site, gout[0], n->iparam[0]);
    return gin[0] ? TG_OK : tg_last_status();
}

/* t flipped along the dims of the bit mask (a copy, even for no dim). */
static tg_tensor *flip_mask(tg_site s, tg_tensor *t, int64_t mask) {
    const char *who = "tg_flip";
    tg_tensor *cur = tg_retain(t);
    for (int d = 0; d < t->ndim && cur; d++) {
        if (!(mask >> d & 1)) continue;
        int64_t n = t->shape[d];
        tg_tensor *ix = tg__tensor_new(s, who, TG_I64, 1, &n, TG_MEM_WORKSPACE);
        if (ix)
            for (int64_t i = 0; i < n; i++) ((int64_t *)ix->storage->data)[i] = n - 1 - i;
        tg_tensor *dix = ix && t->storage->device != TG_CPU ? tg__to_device(s, ix, t->storage->device)
                                                            : (ix ? tg_retain(ix) : NULL);
        tg_tensor *next = dix ? index_select(s, who, cur, d, dix) : NULL;
        tg__tensor_release(ix);
        tg__tensor_release(dix);
        tg__tensor_release(cur);
        cur = next;
    }
    if (cur && cur == t) { /* nothing flipped: a copy, as PyTorch */
        tg_tensor *c = tg__clone(s, t);
        tg__tensor_release(cur);
        cur = c;
    }
    return cur;
}

tg_tensor *tg_flip_at(tg_site s, tg_tensor *t, int ndims, const int *dims) {
    return tg__ret(flip(s, t, ndims, dims));
}
