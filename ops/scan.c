/* ops/scan.c - the scans along one dim: cumsum, cumprod and the discounted
 * reverse cumulative sum of RL returns (kernels/line.h's tg__line_scan).
 *
 * Contract: any strides; `dim` may be negative; a 0-d tensor is one line of
 * one element; results are new contiguous tensors of the input's shape.
 *   cumsum: f32/f64 of the input's dtype; i64 and bool inputs give i64,
 *     summed exactly (wrapping around on overflow), as PyTorch. Gradient: the
 *     reversed cumulative sum of g. Saves nothing.
 *   cumprod: the same dtypes. Gradient exact at zeros (products of the other
 *     elements, no division). Saves its input and result, as PyTorch's node.
 *   discounted_cumsum: f32/f64, y_j = x_j + gamma y_{j+1} (no PyTorch op; the
 *     returns and GAE advantages of RL trainers). Gradient: the forward
 *     discounted scan of g, dx_j = g_j + gamma dx_{j-1}. Saves nothing.
 * Values are accumulated in double. On failure nothing is leaked and NULL is
 * returned with the error set. */
#include <math.h>

#include "ops_internal.h"

enum { P_DIM = 0, P_SLOT_X = 1 }; /* iparam */
enum { P_GAMMA = 0 };             /* dparam */

/* cumsum: the reversed cumulative sum of g. */
static tg_status cumsum_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *out = tg__new_output_on(n->site, n->name, m->device, m->dtype, m->ndim, m->shape);
    if (out) out = tg__k_ok(tg__k_scan(TG__SCAN_REV_CUMSUM, out, gout[0], NULL,
                                       (int)n->iparam[P_DIM], 0.0), out);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

/* cumprod: exact at zeros (CUMPROD_GRAD scan of the saved input). */
static tg_status cumprod_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *x = tg__node_saved(n, (int)n->iparam[P_SLOT_X]);
    tg_tensor *out = x ? tg__new_output_on(n->site, n->name, m->device, m->dtype, m->ndim,
                                           m->shape)
                       : NULL;
    if (out) out = tg__k_ok(tg__k_scan(TG__SCAN_CUMPROD_GRAD, out, x, gout[0],
                                       (int)n->iparam[P_DIM], 0.0), out);
    tg__tensor_release(x);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

/* discounted_cumsum: dx_j = sum_{i <= j} gamma^(j - i) g_i (DISC_FWD scan of g). */
static tg_status discounted_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *out = tg__new_output_on(n->site, n->name, m->device, m->dtype, m->ndim, m->shape);
    if (out) out = tg__k_ok(tg__k_scan(TG__SCAN_DISC_FWD, out, gout[0], NULL,
                                       (int)n->iparam[P_DIM], n->dparam[P_GAMMA]), out);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

static const tg__op_def CUMSUM_DEF = {"CumsumBackward", cumsum_backward, false, NULL};
static const tg__op_def CUMPROD_DEF = {"CumprodBackward", cumprod_backward, false, NULL};
static const tg__op_def DISCOUNTED_DEF = {"DiscountedCumsumBackward", discounted_backward, false,
                                          NULL};

/* The scan `op` of t along dim (def: its node; int_ok: i64/bool inputs give
 * i64 without a node). */
static tg_tensor *scan(tg_site s, const char *who, tg__scanop op, const tg__op_def *def,
                       tg_tensor *t, int dim, double gamma, bool int_ok) {
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    bool is_int = t->dtype == TG_I64 || t->dtype == TG_BOOL;
    if (!tg__is_float(t->dtype) && !(int_ok && is_int))
        return tg__dtype_unsupported(who, t->dtype), NULL;
    int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    tg_tensor *w = NULL; /* t, or a 0-d t as one line of one element */
    if (t->ndim == 0) {
        int64_t one = 1;
        w = tg__reshape(s, t, 1, &one);
    } else {
        w = tg_retain(t);
    }
    if (!w) return NULL;
    tg_tensor *out = tg__new_output_on(s, who, w->storage->device, is_int ? TG_I64 : w->dtype,
                                       w->ndim, w->shape);
    if (!out || !(out = tg__k_ok(tg__k_scan(op, out, w, NULL, d, gamma), out))) goto fail;
    if (!is_int && tg__needs_grad(1, &w)) {
        tg__node *n = tg__record(s, def, 1, &w, out);
        if (!n) goto fail;
        n->iparam[P_DIM] = d;
        n->dparam[P_GAMMA] = gamma;
        /* cumprod saves its input and, as PyTorch's node, its result */
        if (def == &CUMPROD_DEF && ((n->iparam[P_SLOT_X] = tg__node_save(n, w, false, 0)) < 0 ||
                                    tg__node_save(n, out, true, 0) < 0))
            goto fail;
    }
    if (t->ndim == 0) { /* back to 0-d */
        tg_tensor *r = tg__reshape(s, out, 0, NULL);
        tg__tensor_release(out);
        out = r;
    }
    tg__tensor_release(w);
    return out;
fail:
    tg__tensor_release(w);
    tg__tensor_release(out);
    return NULL;
}

tg_tensor *tg_cumsum_at(tg_site s, tg_tensor *t, int dim) {
    return tg__ret(scan(s, "tg_cumsum", TG__SCAN_CUMSUM, &CUMSUM_DEF, t, dim, 0.0, true));
}

tg_tensor *tg_cumprod_at(tg_site s, tg_tensor *t, int dim) {
    return tg__ret(scan(s, "tg_cumprod", TG__SCAN_CUMPROD, &CUMPROD_DEF, t, dim, 0.0, true));
}

tg_tensor *tg_discounted_cumsum_at(tg_site s, tg_tensor *x, double gamma, int dim) {
    if (x && !isfinite(gamma))
        return tg__ret(tg__fail(TG_ERR_VALUE, "tg_discounted_cumsum: gamma must be finite, got %g",
                                gamma));
    return tg__ret(scan(s, "tg_discounted_cumsum", TG__SCAN_DISC_REV, &DISCOUNTED_DEF, x, dim,
                        gamma, false));
}
