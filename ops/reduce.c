/* ops/reduce.c - differentiable sum/mean reductions: sum and mean of all
 * elements, sum_dim and mean_dim along one dim, sum_dims and mean_dims over
 * several (keepdim), tg__sum_to, which sums a broadcast gradient back down to
 * an input's shape, and the dims-list helpers of the other multi-dim
 * reductions (tg__dims_mask, tg__merge_reduced).
 *
 * Contract: inputs are f32 or f64 with any strides; results are new
 * contiguous tensors of the input's dtype, accumulated in double (see
 * kernels/cpu/reduce.c). The sums also take i64 and bool, summed exactly
 * into i64 (PyTorch's mask.sum()); the means refuse them, as PyTorch. Mean over 0 elements is NaN. Backward expands the
 * upstream gradient back to the input's shape (a new contiguous tensor,
 * divided by the count for means). Nothing is saved for backward: the
 * node's in_meta, iparam (dim, keepdim) and dparam (scale) suffice.
 */
#include <math.h>
#include <stdbool.h>

#include "ops_internal.h"

/* Node parameters. */
enum { P_RED = 0 };   /* iparam: bit d set when dim d is reduced; -1 for all (right-aligned) */
enum { P_SCALE = 0 }; /* dparam: 1, or 1/count for means */

static int count_bits(int64_t mask) {
    int n = 0;
    for (int d = 0; d < TG_MAX_DIMS; d++) n += (int)((mask >> d) & 1);
    return n;
}

/* Strides to read g as a tensor of shape m (broadcast): g has m's ndim
 * (keepdim: size-1 dims read with stride 0), or lacks exactly the dims of the
 * mask `red` (bit d: dim d reduced), or otherwise has fewer dims aligned to
 * the right. */
static void expand_strides(const tg_tensor *g, const tg__meta *m, int64_t red, int64_t *xs) {
    if (red > 0 && g->ndim == m->ndim - count_bits(red)) {
        for (int d = 0, gd = 0; d < m->ndim; d++) {
            if ((red >> d) & 1) {
                xs[d] = 0;
                continue;
            }
            xs[d] = g->shape[gd] == 1 ? 0 : g->strides[gd];
            gd++;
        }
        return;
    }
    for (int d = 0; d < m->ndim; d++) {
        int gd = d - (m->ndim - g->ndim);
        xs[d] = (gd < 0 || g->shape[gd] == 1) ? 0 : g->strides[gd];
    }
}

/* Backward of every reduction here: gin[0] = scale * g expanded to the input's
 * shape. iparam[P_RED] = the reduced dims' mask (-1: all dims / right-aligned),
 * dparam[P_SCALE] = scale. */
static tg_status expand_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *g = gout[0];
    int64_t xs[TG_MAX_DIMS];
    expand_strides(g, m, n->iparam[P_RED], xs);
    tg_tensor *out = tg__new_output_on(n->site, n->name, g->storage->device, m->dtype, m->ndim,
                                       m->shape);
    if (!out) return tg_last_status();
    if (g->dtype == m->dtype) {
        out = tg__k_ok(tg__k_unary(TG__UN_SCALE, out, g, xs, n->dparam[P_SCALE], 0.0), out);
    } else { /* sum_to converted the dtype: convert back, then scale */
        tg_tensor *c = tg__to_dtype(n->site, g, m->dtype);
        if (!c) {
            tg__tensor_release(out);
            return tg_last_status();
        }
        expand_strides(c, m, n->iparam[P_RED], xs);
        out = tg__k_ok(tg__k_unary(TG__UN_SCALE, out, c, xs, n->dparam[P_SCALE], 0.0), out);
        tg__tensor_release(c);
    }
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

static const tg__op_def SUM_DEF = {"SumBackward", expand_backward, false, NULL};
static const tg__op_def MEAN_DEF = {"MeanBackward", expand_backward, false, NULL};
static const tg__op_def SUM_DIM_DEF = {"SumDimBackward", expand_backward, false, NULL};
static const tg__op_def MEAN_DIM_DEF = {"MeanDimBackward", expand_backward, false, NULL};
static const tg__op_def SUM_DIMS_DEF = {"SumDimsBackward", expand_backward, false, NULL};
static const tg__op_def MEAN_DIMS_DEF = {"MeanDimsBackward", expand_backward, false, NULL};
static const tg__op_def SUM_TO_DEF = {"SumToBackward", expand_backward, false, NULL};

static bool check_input(const char *who, const tg_tensor *t) {
    if (!tg__same_device(who, 1, &t)) return false;
    if (!tg__is_float(t->dtype)) {
        tg__dtype_unsupported(who, t->dtype);
        return false;
    }
    return true;
}

/* The sums take i64 and bool too (an exact i64 result, as PyTorch's
 * mask.sum()); the means refuse them, as PyTorch does (no dtype to infer). */
static bool check_sum_input(const char *who, const tg_tensor *t, bool mean, tg_dtype *odt) {
    *odt = t->dtype;
    if (mean || (t->dtype != TG_I64 && t->dtype != TG_BOOL)) return check_input(who, t);
    *odt = TG_I64;
    return tg__same_device(who, 1, &t);
}

/* Runs the reduction of t over red[] into a new tensor of shape (ond, oshape)
 * and dtype odt, and records def when t requires grad (iparam[P_RED] = ins,
 * the mask of the dims the result lacks or -1, dparam[P_SCALE] = scale). */
static tg_tensor *reduce(tg_site s, const char *who, const tg__op_def *def, tg_tensor *t,
                         const bool *red, int ond, const int64_t *oshape, tg_dtype odt,
                         double scale, int64_t ins) {
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, odt, ond, oshape);
    if (!out || !(out = tg__k_ok(tg__k_sum_reduce(out, t, red, scale), out))) return NULL;
    if (!tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, def, 1, &t, out);
    if (!n) {
        tg__tensor_release(out);
        return NULL;
    }
    n->iparam[P_RED] = ins;
    n->dparam[P_SCALE] = scale;
    return out;
}

/* Sum (or mean) of all elements: a 0-d tensor. */
static tg_tensor *reduce_all(tg_site s, tg_tensor *t, bool mean) {
    const char *who = mean ? "tg_mean" : "tg_sum";
    tg_dtype odt;
    if (tg__null_arg(t, who, "t") || !check_sum_input(who, t, mean, &odt)) return NULL;
    bool red[TG_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) red[d] = true;
    int64_t cnt = tg__k_numel(t->ndim, t->shape);
    double scale = !mean ? 1.0 : cnt > 0 ? 1.0 / (double)cnt : NAN;
    return reduce(s, who, mean ? &MEAN_DEF : &SUM_DEF, t, red, 0, NULL, odt, scale, -1);
}

/* Sum (or mean) along dim. A 0-d tensor accepts dim 0 / -1 (nothing reduced). */
static tg_tensor *reduce_dim(tg_site s, tg_tensor *t, int dim, bool keepdim, bool mean) {
    const char *who = mean ? "tg_mean_dim" : "tg_sum_dim";
    tg_dtype odt;
    if (tg__null_arg(t, who, "t") || !check_sum_input(who, t, mean, &odt)) return NULL;
    int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    bool red[TG_MAX_DIMS];
    int64_t oshape[TG_MAX_DIMS];
    int ond = 0;
    int64_t cnt = 1;
    for (int i = 0; i < t->ndim; i++) {
        red[i] = i == d;
        if (i != d) oshape[ond++] = t->shape[i];
        else if (keepdim) oshape[ond++] = 1;
        if (i == d) cnt = t->shape[i];
    }
    double scale = !mean ? 1.0 : cnt > 0 ? 1.0 / (double)cnt : NAN;
    return reduce(s, who, mean ? &MEAN_DIM_DEF : &SUM_DIM_DEF, t, red, ond, oshape, odt,
                  scale, t->ndim == 0 || keepdim ? -1 : (int64_t)1 << d);
}

bool tg__dims_mask(const char *who, int ndims, const int *dims, int ndim, bool *red) {
    if (ndims < 0 || ndims > TG_MAX_DIMS) {
        tg__set_error(TG_ERR_VALUE, "%s: ndims %d outside [0, %d]", who, ndims, TG_MAX_DIMS);
        return false;
    }
    if (ndims > 0 && !dims) {
        tg__set_error(TG_ERR_NULL, "%s: dims is NULL with ndims %d", who, ndims);
        return false;
    }
    bool seen[TG_MAX_DIMS] = {false};
    for (int k = 0; k < ndims; k++) {
        int d = tg__wrap_dim(who, dims[k], ndim);
        if (d < 0) return false;
        if (seen[d]) {
            tg__set_error(TG_ERR_DIM, "%s: dim %d appears multiple times in the list of dims",
                          who, d);
            return false;
        }
        seen[d] = true;
    }
    for (int d = 0; d < ndim; d++) red[d] = ndims == 0 || seen[d];
    return true;
}

int tg__reduced_shape(int ndim, const int64_t *shape, const bool *red, bool keepdim,
                      int64_t *oshape, int64_t *count) {
    int ond = 0;
    *count = 1;
    for (int d = 0; d < ndim; d++) {
        if (!red[d]) oshape[ond++] = shape[d];
        else if (keepdim) oshape[ond++] = 1;
        if (red[d]) *count *= shape[d];
    }
    return ond;
}

tg_tensor *tg__merge_reduced(tg_site s, tg_tensor *t, const bool *red) {
    int64_t one = 1;
    if (t->ndim == 0) return tg__reshape(s, t, 1, &one);
    int perm[TG_MAX_DIMS], np = 0, nkept = 0;
    int64_t shape[TG_MAX_DIMS];
    bool identity = true;
    for (int d = 0; d < t->ndim; d++)
        if (!red[d]) shape[nkept++] = t->shape[d], perm[np++] = d;
    for (int d = 0; d < t->ndim; d++)
        if (red[d]) one *= t->shape[d], perm[np++] = d;
    for (int d = 0; d < t->ndim; d++) identity = identity && perm[d] == d;
    shape[nkept] = one;
    tg_tensor *p = identity ? tg_retain(t) : tg__permute(s, t, t->ndim, perm);
    tg_tensor *w = p ? tg__reshape(s, p, nkept + 1, shape) : NULL;
    tg__tensor_release(p);
    return w;
}

/* Sum (or mean) over the dims listed (all of them for ndims 0, as PyTorch's
 * dim=()). */
static tg_tensor *reduce_dims(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim,
                              bool mean) {
    const char *who = mean ? "tg_mean_dims" : "tg_sum_dims";
    tg_dtype odt;
    if (tg__null_arg(t, who, "t") || !check_sum_input(who, t, mean, &odt)) return NULL;
    bool red[TG_MAX_DIMS];
    if (!tg__dims_mask(who, ndims, dims, t->ndim, red)) return NULL;
    int64_t oshape[TG_MAX_DIMS], cnt, mask = 0;
    int ond = tg__reduced_shape(t->ndim, t->shape, red, keepdim, oshape, &cnt);
    for (int d = 0; d < t->ndim; d++)
        if (red[d]) mask |= (int64_t)1 << d;
    double scale = !mean ? 1.0 : cnt > 0 ? 1.0 / (double)cnt : NAN;
    return reduce(s, who, mean ? &MEAN_DIMS_DEF : &SUM_DIMS_DEF, t, red, ond, oshape, odt,
                  scale, keepdim || mask == 0 ? -1 : mask);
}

tg_tensor *tg__sum_dim(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return reduce_dim(s, t, dim, keepdim, false);
}


tg_tensor *tg__reduce_all(tg_site s, tg_tensor *t, bool mean) { return reduce_all(s, t, mean); }
tg_tensor *tg__mean_dim(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return reduce_dim(s, t, dim, keepdim, true);
}
tg_tensor *tg_sum_at(tg_site s, tg_tensor *t) { return tg__ret(reduce_all(s, t, false)); }
tg_tensor *tg_mean_at(tg_site s, tg_tensor *t) { return tg__ret(reduce_all(s, t, true)); }
tg_tensor *tg_sum_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(reduce_dim(s, t, dim, keepdim, false));
}
tg_tensor *tg_mean_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(reduce_dim(s, t, dim, keepdim, true));
}
/* The non-zero elements of t (any dtype; NaN counts) over the dims listed:
 * the bool test t != 0 summed exactly into i64. Never differentiable. */
static tg_tensor *count_nonzero(tg_site s, tg_tensor *t, int ndims, const int *dims) {
    const char *who = "tg_count_nonzero";
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    if (t->dtype == TG_BF16) return tg__dtype_unsupported(who, t->dtype), NULL;
    bool red[TG_MAX_DIMS];
    if (!tg__dims_mask(who, ndims, dims, t->ndim, red)) return NULL;
    int64_t oshape[TG_MAX_DIMS], cnt;
    int ond = tg__reduced_shape(t->ndim, t->shape, red, false, oshape, &cnt);
    tg_device dev = t->storage->device;
    tg_tensor *zero = tg__scalar_like(s, t, 0.0);
    tg_tensor *nz = zero ? tg__tensor_new_on(s, who, dev, TG_BOOL, t->ndim, t->shape, // t's shape
                                             TG_MEM_WORKSPACE)
                         : NULL;
    if (nz) nz = tg__k_ok(tg__k_test(TG__TEST_NE, nz, t, zero), nz);
    tg_tensor *out = nz ? tg__new_output_on(s, who, dev, TG_I64, ond, oshape) : NULL;
    if (out) out = tg__k_ok(tg__k_sum_reduce(out, nz, red, 1.0), out);
    tg__tensor_release(zero);
    tg__tensor_release(nz);
    return out;
}
tg_tensor *tg_count_nonzero_at(tg_site s, tg_tensor *t, int ndims, const int *dims) {
    return tg__ret(count_nonzero(s, t, ndims, dims));
}
tg_tensor *tg_sum_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim) {
    return tg__ret(reduce_dims(s, t, ndims, dims, keepdim, false));
}
tg_tensor *tg_mean_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim) {
    return tg__ret(reduce_dims(s, t, ndims, dims, keepdim, true));
}

/* Sums g down to shape m: g's leading extra dims are summed away, and dims
 * where m has size 1 (and g does not) are summed with keepdim. The result has
 * m's dtype (g is converted if it differs). A new reference: g itself when
 * shape and dtype already match. */
tg_tensor *tg__sum_to(tg_site s, tg_tensor *g, const tg__meta *m) {
    const char *who = "tg__sum_to";
    char bg[160], bm[160];
    if (tg__null_arg(g, who, "g") || tg__null_arg(m, who, "m")) return NULL;
    if (!check_input(who, g)) return NULL;
    if (m->ndim < 0 || m->ndim > TG_MAX_DIMS || !tg__is_float(m->dtype))
        return tg__fail(TG_ERR_INTERNAL, "%s: invalid target metadata", who);
    bool same = g->ndim == m->ndim && g->dtype == m->dtype;
    for (int d = 0; same && d < g->ndim; d++) same = g->shape[d] == m->shape[d];
    if (same) return tg_retain(g);
    bool red[TG_MAX_DIMS];
    int lead = g->ndim - m->ndim;
    bool ok = true;
    for (int d = 0; d < g->ndim; d++) {
        int md = d - lead;
        if (md < 0) red[d] = true;
        else if (m->shape[md] == g->shape[d]) red[d] = false;
        else if (m->shape[md] == 1) red[d] = true;
        else ok = false;
    }
    for (int md = 0; md < -lead; md++) /* m has more dims: they must be 1 */
        if (m->shape[md] != 1) ok = false;
    if (!ok)
        return tg__fail(TG_ERR_SHAPE, "%s: shape %s cannot be summed to %s", who,
                        tg__shape_str(bg, sizeof bg, g->ndim, g->shape),
                        tg__shape_str(bm, sizeof bm, m->ndim, m->shape));
    return reduce(s, who, &SUM_TO_DEF, g, red, m->ndim, m->shape, m->dtype, 1.0, -1);
}
