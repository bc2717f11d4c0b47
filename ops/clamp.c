/* ops/clamp.c - tg_clamp_tensor (PyTorch's clamp with tensor bounds) and
 * tg_nan_to_num. tg_clamp with number bounds is a unary op (ops/unary.c).
 *
 * Contract (include/tapegrad/ops.h has the user's side):
 *  - clamp_tensor: t, min and max (either bound NULL: absent) broadcast
 *    together and promoted to PyTorch's result_type of the three (converted
 *    by a recorded tg_to_dtype, as the binary ops do; a 0-d CPU bound of a
 *    CUDA t is moved there first). Values: max(t, min) then min(., max) with
 *    the binary kernels' NaN rules (a NaN in any operand gives NaN, as
 *    PyTorch's clamp and maximum / minimum), in i64 through the integer
 *    kernels, and for bool (one bound only, as PyTorch) as logical or / and.
 *    ClampTensorBackward saves the three (converted) operands and forms
 *    PyTorch's clamp_backward / clamp_backward_min_max masks:
 *      t:   t >= min && t <= max          (an absent bound: no condition)
 *      min: t < min && min < max          (min alone: t < min)
 *      max: t > max || max < min          (max alone: t > max)
 *    each gradient where(mask, g, 0) summed to its input's shape.
 *  - nan_to_num: NaN, +inf and -inf of a float t replaced by three values
 *    converted to t's dtype (a NaN posinf / neginf: the dtype's largest /
 *    lowest finite value), through the comparison and where kernels; i64
 *    and bool are copied unchanged. NanToNumBackward saves t: g * isfinite(t).
 * Errors name the op called; nothing is leaked on failure.
 */
#include <float.h>
#include <math.h>

#include "ops_internal.h"

/* ---- clamp with tensor bounds ------------------------------------------------------------ */

static tg_status clamp_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static const tg__op_def CLAMP_T_DEF = {"ClampTensorBackward", clamp_backward, false, NULL};

/* The values into out (rt, the broadcast shape) from t, lo, hi (rt; lo or hi NULL). */
static tg_status clamp_values(tg_tensor *out, tg_tensor *t, tg_tensor *lo, tg_tensor *hi) {
    tg_status st = TG_OK;
    const tg_tensor *x = t;
    for (int k = 0; k < 2 && st == TG_OK; k++) {
        tg_tensor *b = k == 0 ? lo : hi;
        if (!b) continue;
        if (out->dtype == TG_I64)
            st = tg__k_int_op(k == 0 ? TG__INT_MAX : TG__INT_MIN, out, x, b, 0, 0);
        else if (out->dtype == TG_BOOL) /* max / min of truth values */
            st = tg__k_test(k == 0 ? TG__TEST_OR : TG__TEST_AND, out, x, b);
        else
            st = tg__k_binary(k == 0 ? TG__BIN_MAX : TG__BIN_MIN, out, x, b, 0.0, 0.0);
        x = out; /* elementwise: each element read, then written, in place */
    }
    return st;
}

/* After conversion: lo, hi of t's dtype (rt), on its device. */
static tg_tensor *clamp_on(tg_site s, const char *who, tg_tensor *t, tg_tensor *lo,
                           tg_tensor *hi) {
    int nd = t->ndim;
    int64_t shape[TG_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = t->shape[d];
    for (int k = 0; k < 2; k++) {
        tg_tensor *b = k == 0 ? lo : hi;
        if (b && tg__broadcast_shapes(who, nd, shape, b->ndim, b->shape, &nd, shape) != TG_OK)
            return NULL;
    }
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, nd, shape);
    if (!out || !(out = tg__k_ok(clamp_values(out, t, lo, hi), out))) return NULL;
    tg_tensor *in[3] = {t, lo, hi};
    if (!tg__needs_grad(3, in)) return out;
    tg__node *n = tg__record(s, &CLAMP_T_DEF, 3, in, out);
    if (!n) goto fail;
    for (int k = 0; k < 3; k++) {
        n->iparam[k] = -1;
        if (in[k] && (n->iparam[k] = tg__node_save(n, in[k], false, k)) < 0) goto fail;
    }
    return out;
fail:
    tg__tensor_release(out); /* also releases the node it owns */
    return NULL;
}

/* Whether the result dtype rt can be clamped (both: two bounds given). */
static bool dtype_ok(const char *who, tg_dtype rt, bool both) {
    if (rt == TG_BF16) return tg__dtype_unsupported(who, rt), false;
    if (rt == TG_BOOL && both)
        return tg__set_error(TG_ERR_DTYPE, "%s: bool operands take one bound only (PyTorch's "
                             "clamp is not implemented for bool); convert with tg_to_dtype",
                             who), false;
    return true;
}

static tg_tensor *clamp_tensor(tg_site s, tg_tensor *t, tg_tensor *lo, tg_tensor *hi) {
    const char *who = "tg_clamp_tensor";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (!lo && !hi) { /* a NULL bound that failed to be made keeps its error */
        if (tg_last_status() == TG_OK)
            tg__set_error(TG_ERR_VALUE, "%s: at least one of 'min' or 'max' must not be NULL "
                          "(as PyTorch's clamp)", who);
        return NULL;
    }
    tg_tensor *ts[3] = {t, lo, hi}, *owned[3], *conv[3] = {NULL, NULL, NULL};
    if (!tg__promote_scalars(s, 3, ts, owned)) return NULL;
    tg_tensor *out = NULL;
    const tg_dtype rt = tg__result_type(3, ts);
    if (tg__same_device(who, 3, (const tg_tensor *const *)ts) && dtype_ok(who, rt, lo && hi) &&
        tg__convert_operands(s, rt, 3, ts, conv)) {
        out = clamp_on(s, who, ts[0], ts[1], ts[2]);
        tg__release_promoted(3, conv);
    }
    tg__release_promoted(3, owned);
    return out;
}

tg_tensor *tg_clamp_tensor_at(tg_site s, tg_tensor *t, tg_tensor *min, tg_tensor *max) {
    const char *prev = tg__caller_enter("tg_clamp_tensor");
    tg_tensor *r = clamp_tensor(s, t, min, max);
    tg__caller_leave(prev);
    return tg__ret(r);
}

/* A bool mask of g's shape: a op b (each broadcast to it). */
static tg_tensor *mask(tg__node *n, const tg_tensor *g, tg__testop op, tg_tensor *a,
                       tg_tensor *b) {
    tg_tensor *m = tg__new_output_on(n->site, n->name, g->storage->device, TG_BOOL, g->ndim,
                                     g->shape);
    return m ? tg__k_ok(tg__k_test(op, m, a, b), m) : NULL;
}

/* m = m comb (a op b), in place; m released on failure. */
static tg_tensor *mask_also(tg__node *n, tg_tensor *m, tg__testop comb, tg__testop op,
                            tg_tensor *a, tg_tensor *b) {
    tg_tensor *m2 = m ? mask(n, m, op, a, b) : NULL;
    if (!m2) {
        tg__tensor_release(m);
        return NULL;
    }
    tg_status st = tg__k_test(comb, m, m, m2);
    tg__tensor_release(m2);
    return tg__k_ok(st, m);
}

/* PyTorch's mask for input i (0 t, 1 min, 2 max) from the saved x[3] (NULL: absent). */
static tg_tensor *clamp_mask(tg__node *n, const tg_tensor *g, int i, tg_tensor *const *x) {
    tg_tensor *t = x[0], *lo = x[1], *hi = x[2];
    if (i == 0) {
        tg_tensor *m = lo ? mask(n, g, TG__TEST_GE, t, lo) : mask(n, g, TG__TEST_LE, t, hi);
        return lo && hi ? mask_also(n, m, TG__TEST_AND, TG__TEST_LE, t, hi) : m;
    }
    if (i == 1) {
        tg_tensor *m = mask(n, g, TG__TEST_LT, t, lo);
        return hi ? mask_also(n, m, TG__TEST_AND, TG__TEST_LT, lo, hi) : m;
    }
    tg_tensor *m = mask(n, g, TG__TEST_GT, t, hi);
    return lo ? mask_also(n, m, TG__TEST_OR, TG__TEST_LT, hi, lo) : m;
}

static tg_status clamp_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *x[3] = {NULL, NULL, NULL};
    const tg_tensor *g = gout[0];
    for (int k = 0; k < 3; k++)
        if (n->iparam[k] >= 0 && !(x[k] = tg__node_saved(n, (int)n->iparam[k]))) goto fail;
    for (int i = 0; i < 3; i++) {
        if (n->edge[i].kind == TG__EDGE_NONE) continue;
        tg_tensor *m = clamp_mask(n, g, i, x);
        tg_tensor *r = m ? tg__new_output_on(n->site, n->name, g->storage->device, g->dtype,
                                             g->ndim, g->shape)
                         : NULL;
        if (r) r = tg__k_ok(tg__k_where(r, m, g, NULL), r);
        tg__tensor_release(m);
        gin[i] = r ? tg__sum_to(n->site, r, &n->in_meta[i]) : NULL;
        tg__tensor_release(r);
        if (!gin[i]) goto fail;
    }
    for (int k = 0; k < 3; k++)
        tg__tensor_release(x[k]);
    return TG_OK;
fail:
    for (int k = 0; k < 3; k++) {
        tg__tensor_release(x[k]);
        tg__tensor_release(gin[k]);
        gin[k] = NULL;
    }
    return tg_last_status();
}

/* ---- nan_to_num ---------------------------------------------------------------------------- */

static tg_status nan_to_num_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static const tg__op_def NAN_TO_NUM_DEF = {"NanToNumBackward", nan_to_num_backward, false, NULL};

/* v as dtype dt holds it (PyTorch's static_cast): an f32 beyond its range
 * rounds to +-FLT_MAX or, from half an ulp past it, to +-inf. */
static double in_dtype(tg_dtype dt, double v) {
    if (dt != TG_F32 || !isfinite(v) || fabs(v) <= FLT_MAX) return v;
    const double edge = 0x1p128 - 0x1p103; /* FLT_MAX + half its ulp: rounds to inf */
    return fabs(v) >= edge ? copysign(INFINITY, v) : copysign(FLT_MAX, v);
}

/* out = where(t op u, v, src) with u a 0-d of t's dtype (u unused for ISNAN). */
static tg_status replace(tg_site s, tg_tensor *out, const tg_tensor *src, tg_tensor *t,
                         tg__testop op, double u, double v) {
    tg_tensor *m = tg__new_output_on(s, "tg_nan_to_num", t->storage->device, TG_BOOL, t->ndim,
                                     t->shape);
    tg_tensor *ut = m && op != TG__TEST_ISNAN ? tg__scalar_like(s, t, u) : NULL;
    tg_tensor *vt = m && (op == TG__TEST_ISNAN || ut) ? tg__scalar_like(s, t, v) : NULL;
    tg_status st = vt ? tg__k_test(op, m, t, op == TG__TEST_ISNAN ? t : ut) : tg_last_status();
    if (st == TG_OK) st = tg__k_where(out, m, vt, src);
    tg_tensor *temps[3] = {m, ut, vt};
    for (int k = 0; k < 3; k++)
        tg__tensor_release(temps[k]);
    return st;
}

static tg_tensor *nan_to_num(tg_site s, tg_tensor *t, double nanv, double posinf, double neginf) {
    const char *who = "tg_nan_to_num";
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    if (t->dtype == TG_I64 || t->dtype == TG_BOOL) return tg__clone(s, t); /* as PyTorch */
    if (!tg__is_float(t->dtype)) return tg__dtype_unsupported_null(who, t->dtype);
    const double big = t->dtype == TG_F32 ? FLT_MAX : DBL_MAX;
    posinf = isnan(posinf) ? big : in_dtype(t->dtype, posinf);
    neginf = isnan(neginf) ? -big : in_dtype(t->dtype, neginf);
    nanv = in_dtype(t->dtype, nanv);
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, t->ndim, t->shape);
    tg_status st = out ? replace(s, out, t, t, TG__TEST_ISNAN, 0, nanv) : TG_ERR_NOMEM;
    if (st == TG_OK) st = replace(s, out, out, t, TG__TEST_EQ, INFINITY, posinf);
    if (st == TG_OK) st = replace(s, out, out, t, TG__TEST_EQ, -INFINITY, neginf);
    if (!out || !(out = tg__k_ok(st, out))) return NULL;
    if (!tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, &NAN_TO_NUM_DEF, 1, &t, out);
    if (!n || tg__node_save(n, t, false, 0) < 0) {
        tg__tensor_release(out);
        return NULL;
    }
    return out;
}

tg_tensor *tg_nan_to_num_at(tg_site s, tg_tensor *t, double nan_value, double posinf,
                            double neginf) {
    const char *prev = tg__caller_enter("tg_nan_to_num");
    tg_tensor *r = nan_to_num(s, t, nan_value, posinf, neginf);
    tg__caller_leave(prev);
    return tg__ret(r);
}

/* g * isfinite(t), as PyTorch's (a NaN g stays NaN where t is not finite). */
static tg_status nan_to_num_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *t = tg__node_saved(n, 0);
    tg_tensor *m = t ? mask(n, t, TG__TEST_ISFINITE, t, t) : NULL;
    gin[0] = m ? tg__mul(n->site, gout[0], m) : NULL;
    tg__tensor_release(t);
    tg__tensor_release(m);
    return gin[0] ? TG_OK : tg_last_status();
}
