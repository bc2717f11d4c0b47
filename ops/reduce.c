/* ops/reduce.c - differentiable sum/mean reductions: sum and mean of all
 * elements, sum_dim and mean_dim along one dim (keepdim), and tg__sum_to,
 * which sums a broadcast gradient back down to an input's shape.
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

/* Strides to read g as a tensor of shape m (broadcast): g has m's ndim
 * (keepdim: size-1 dims read with stride 0), or one dim fewer where `ins` is
 * the reduced dim, or otherwise fewer dims aligned to the right. */
/* Node parameters. */
enum { P_DIM = 0 };   /* iparam: the reduced dim, -1 for all */
enum { P_SCALE = 0 }; /* dparam: 1, or 1/count for means */

static void expand_strides(const tg_tensor *g, const tg__meta *m, int ins, int64_t *xs) {
    if (ins >= 0 && g->ndim == m->ndim - 1) {
        for (int d = 0, gd = 0; d < m->ndim; d++) {
            if (d == ins) {
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
 * shape. iparam[P_DIM] = reduced dim (-1: all dims / right-aligned), dparam[P_SCALE] =
 * scale. */
static tg_status expand_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *g = gout[0];
    int64_t xs[TG_MAX_DIMS];
    expand_strides(g, m, (int)n->iparam[P_DIM], xs);
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
        expand_strides(c, m, (int)n->iparam[P_DIM], xs);
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
 * and dtype odt, and records def when t requires grad (iparam[P_DIM] = ins,
 * dparam[P_SCALE] = scale). */
static tg_tensor *reduce(tg_site s, const char *who, const tg__op_def *def, tg_tensor *t,
                         const bool *red, int ond, const int64_t *oshape, tg_dtype odt,
                         double scale, int ins) {
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, odt, ond, oshape);
    if (!out || !(out = tg__k_ok(tg__k_sum_reduce(out, t, red, scale), out))) return NULL;
    if (!tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, def, 1, &t, out);
    if (!n) {
        tg__tensor_release(out);
        return NULL;
    }
    n->iparam[P_DIM] = ins;
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
    int64_t cnt = tg__numel(t->ndim, t->shape);
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
                  scale, t->ndim == 0 ? -1 : d);
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
