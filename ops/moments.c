/* ops/moments.c - variance, standard deviation and vector norms, over all
 * elements or along one dim (keepdim), with PyTorch's values and gradients.
 *
 * Contract: f32/f64 inputs, any strides; results are new contiguous tensors
 * of the input's dtype, accumulated in double.
 *   var: sum((x - mean)^2) / max(0, n - correction) (NaN or inf when that is
 *     0, as PyTorch); gradient 2 g (x - mean) / (n - correction), that
 *     divisor not clamped (PyTorch's: -0, not NaN, for n = 1, correction 2).
 *   std: sqrt(var); gradient g (x - mean) / ((n - correction) std), and 0
 *     where std is 0 (PyTorch's rule: a constant line has gradient 0, not NaN).
 *   norm (PyTorch's linalg.vector_norm) for any p: (sum |x|^p)^(1/p), with
 *     sum |x| for 1, sqrt(sum x^2) for 2, max |x| for inf and min |x| for
 *     -inf (TG_ERR_SHAPE for an empty line, as PyTorch), the count of
 *     non-zero elements for 0; PyTorch's gradients (norm_backward): g sign(x),
 *     g x / norm (0 where the norm is 0), g sign(x) split evenly among the
 *     elements of extreme magnitude, 0 for p = 0, general_p_grad's for the
 *     others; NaN values and gradients for a NaN p.
 * Each saves its input (std and norm also their result). On failure nothing
 * is leaked and NULL is returned with the error set. */
#include <math.h>

#include "ops_internal.h"

enum {
    P_DIM = TG__LINE_DIM,
    P_KEEPDIM = TG__LINE_KEEPDIM,
    P_SLOT_X = TG__LINE_SLOT_X,
    P_SLOT_OUT = TG__LINE_SLOT_OUT
};                              /* iparam, read by tg__line_grad_open */
enum { P_CORR = 0, P_P = 1 }; /* dparam */

typedef struct geo {
    tg_tensor *w;                 /* the input, or its flattening for "all" */
    int d;                        /* the reduced dim of w */
    int ond;                      /* the result's dims */
    int64_t oshape[TG_MAX_DIMS];
    int kd;                       /* the keepdim shape (w's dims, size 1 at d) */
    int64_t kshape[TG_MAX_DIMS];
    bool red[TG_MAX_DIMS];
    int64_t n;                    /* elements per line */
} geo;

static bool setup(tg_site s, const char *who, tg_tensor *t, int dim, bool keepdim, bool all,
                  geo *g) {
    g->w = NULL;
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return false;
    if (!tg__is_float(t->dtype))
        return tg__dtype_unsupported(who, t->dtype), false;
    int d = 0;
    if (all || t->ndim == 0) {
        if (!all && tg__wrap_dim(who, dim, 0) < 0) return false;
        int64_t n = tg__k_numel(t->ndim, t->shape);
        if (!(g->w = tg__reshape(s, t, 1, &n))) return false;
        g->ond = 0;
    } else {
        if ((d = tg__wrap_dim(who, dim, t->ndim)) < 0) return false;
        g->w = tg_retain(t);
        g->ond = 0;
        for (int i = 0; i < t->ndim; i++)
            if (i != d) g->oshape[g->ond++] = t->shape[i];
            else if (keepdim) g->oshape[g->ond++] = 1;
    }
    g->d = d;
    g->kd = g->w->ndim;
    for (int i = 0; i < g->kd; i++) {
        g->kshape[i] = i == d ? 1 : g->w->shape[i];
        g->red[i] = i == d;
    }
    g->n = g->w->shape[d];
    return true;
}

static tg_tensor *new_k(tg_site s, const char *who, const geo *g) {
    return tg__new_output_on(s, who, g->w->storage->device, g->w->dtype, g->kd, g->kshape);
}
static tg_tensor *new_w(tg_site s, const char *who, const tg_tensor *w) {
    return tg__new_output_on(s, who, w->storage->device, w->dtype, w->ndim, w->shape);
}

/* x - mean(x) along the line (a new tensor of x's shape), from kernels. */
static tg_tensor *centered(tg_site s, const char *who, tg_tensor *x, const bool *red, int kd,
                           const int64_t *kshape, int64_t n) {
    tg_tensor *mean = tg__new_output_on(s, who, x->storage->device, x->dtype, kd, kshape);
    if (mean) mean = tg__k_ok(tg__k_sum_reduce(mean, x, red, n > 0 ? 1.0 / (double)n : NAN), mean);
    tg_tensor *dev = mean ? new_w(s, who, x) : NULL;
    if (dev) dev = tg__k_ok(tg__k_binary(TG__BIN_SUB, dev, x, mean, 0, 0), dev);
    tg__tensor_release(mean);
    return dev;
}

/* ---- backward ------------------------------------------------------------------------- */

/* The reduced-dim flags and the keepdim shape of the node's input. */
static void red_of(const tg__node *n, bool *red, int *kd, int64_t *kshape) {
    const tg__meta *m = &n->in_meta[0];
    *kd = m->ndim;
    for (int i = 0; i < m->ndim; i++) {
        red[i] = i == n->iparam[P_DIM];
        kshape[i] = red[i] ? 1 : m->shape[i];
    }
}

/* var: 2 g (x - mean) / (n - c); std: g (x - mean) / ((n - c) std), 0 where std == 0. */
static tg_status moment_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin, bool std) {
    tg__line_grad b; /* b.rk: std's saved result (var saves none) */
    if (!tg__line_grad_open(n, gout[0], false, std, &b)) return tg_last_status();
    bool red[TG_MAX_DIMS];
    int kd;
    int64_t kshape[TG_MAX_DIMS];
    red_of(n, red, &kd, kshape);
    int64_t cnt = b.m->shape[b.d];
    /* n - correction as it is (PyTorch's var_backward): the forward's divisor is
     * max(0, n - correction), the gradient's is not clamped */
    double den = (double)cnt - n->dparam[P_CORR];
    tg_tensor *x = b.x;
    tg_tensor *dev = centered(n->site, n->name, x, red, kd, kshape, cnt);
    tg_tensor *out = dev ? new_w(n->site, n->name, x) : NULL;
    if (out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, dev, b.gk, 0, 0), out);
    if (out) out = tg__k_ok(tg__k_unary(TG__UN_SCALE, out, out, NULL, (std ? 1.0 : 2.0) / den, 0),
                            out);
    tg_tensor *zero = NULL;
    if (out && std) {
        tg_tensor *q = new_w(n->site, n->name, x);
        if (q) q = tg__k_ok(tg__k_binary(TG__BIN_DIV, q, out, b.rk, 0, 0), q);
        /* where std == 0: 0 */
        tg_tensor *z0 = q ? tg__scalar_like(n->site, x, 0.0) : NULL;
        zero = z0 ? tg__new_output_on(n->site, n->name, x->storage->device, TG_BOOL, x->ndim,
                                      x->shape)
                  : NULL;
        if (zero) zero = tg__k_ok(tg__k_test(TG__TEST_EQ, zero, b.rk, z0), zero);
        if (zero) q = tg__k_ok(tg__k_where(q, zero, NULL, q), q);
        tg__tensor_release(z0);
        tg__tensor_release(out);
        out = zero ? q : NULL; /* q is NULL when where failed */
        if (!zero && q) tg__tensor_release(q);
    }
    tg__tensor_release(dev);
    tg__tensor_release(zero);
    tg__line_grad_close(&b);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}
static tg_status var_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return moment_backward(n, gout, gin, false);
}
static tg_status std_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return moment_backward(n, gout, gin, true);
}

/* releases a and b (either may be NULL) and returns r */
static tg_tensor *drop2(tg_tensor *r, tg_tensor *a, tg_tensor *b) {
    tg__tensor_release(a);
    tg__tensor_release(b);
    return r;
}

/* The gradient of the p-norm for a finite p other than 0, 1, 2, as PyTorch's
 * norm_backward: sign(x) |x|^(p-1) (0 where x is 0) g norm^(1-p) for p < 1;
 * sign(x) |x|^(p-1) g / norm^(p-1) for p < 2, x |x|^(p-2) g / norm^(p-1)
 * above, the scale 0 where the norm is 0. Composed of ops (backward records
 * nothing); gk and rk have the keepdim shape. */
static tg_tensor *general_p_grad(tg__node *n, tg_tensor *x, tg_tensor *gk, tg_tensor *rk,
                                 double p) {
    const tg_site s = n->site;
    tg_tensor *ax = tg__unary(s, TG__UN_ABS, x, 0, 0);
    tg_tensor *zero = ax ? tg__scalar_like(s, x, 0.0) : NULL;
    tg_tensor *scaled; /* self_scaled of PyTorch's formula */
    if (p < 2) {
        tg_tensor *pw = zero ? tg__unary(s, TG__UN_POW, ax, p - 1, 0) : NULL;
        tg_tensor *sg = pw ? tg__unary(s, TG__UN_SIGN, x, 0, 0) : NULL;
        scaled = sg ? tg__mul(s, sg, pw) : NULL;
        drop2(NULL, pw, sg);
        if (scaled && p < 1) { /* 0 where x is 0 (|x|^(p-1) is inf there) */
            tg_tensor *at0 = tg__test_scalar(s, n->name, TG__TEST_EQ, x, 0.0);
            tg_tensor *w = at0 ? tg__where(s, at0, zero, scaled) : NULL;
            drop2(NULL, at0, scaled);
            scaled = w;
        }
    } else {
        tg_tensor *pw = zero ? tg__unary(s, TG__UN_POW, ax, p - 2, 0) : NULL;
        scaled = pw ? tg__mul(s, x, pw) : NULL;
        tg__tensor_release(pw);
    }
    tg_tensor *scale = NULL;
    if (scaled && p < 1) { /* g norm^(1-p) */
        tg_tensor *np = tg__unary(s, TG__UN_POW, rk, 1 - p, 0);
        scale = np ? tg__mul(s, gk, np) : NULL;
        tg__tensor_release(np);
    } else if (scaled) { /* g / norm^(p-1), 0 where the norm is 0 */
        tg_tensor *np = tg__unary(s, TG__UN_POW, rk, p - 1, 0);
        tg_tensor *q = np ? tg__div(s, gk, np) : NULL;
        tg_tensor *nz = q ? tg__test_scalar(s, n->name, TG__TEST_EQ, rk, 0.0) : NULL;
        scale = nz ? tg__where(s, nz, zero, q) : NULL;
        drop2(NULL, np, q);
        tg__tensor_release(nz);
    }
    tg_tensor *out = scale ? tg__mul(s, scaled, scale) : NULL;
    drop2(NULL, ax, zero);
    drop2(NULL, scaled, scale);
    return out;
}

/* norm: p = 1 g sign(x); p = 2 g x / norm (0 where norm == 0); p = +-inf
 * g sign(x) mask / count with mask = (|x| == norm); p = 0 none; any other
 * p as general_p_grad. */
static tg_status norm_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    double p = n->dparam[P_P];
    if (p == 0) { /* the count is flat: no gradient, as PyTorch (its leaf's .grad stays unset) */
        gin[0] = NULL;
        return TG_OK;
    }
    tg__line_grad b;
    if (!tg__line_grad_open(n, gout[0], false, true, &b)) return tg_last_status();
    tg_tensor *x = b.x, *rk = b.rk, *gk = b.gk;
    tg_tensor *out = new_w(n->site, n->name, x), *mask = NULL, *z0 = NULL;
    if (out && p == 1.0) {
        out = tg__k_ok(tg__k_unary(TG__UN_SIGN, out, x, NULL, 0, 0), out);
        if (out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, out, gk, 0, 0), out);
    } else if (out && p == 2.0) {
        out = tg__k_ok(tg__k_binary(TG__BIN_DIV, out, x, rk, 0, 0), out);
        if (out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, out, gk, 0, 0), out);
        mask = out ? tg__new_output_on(n->site, n->name, x->storage->device, TG_BOOL, x->ndim,
                                       x->shape)
                   : NULL;
        z0 = mask ? tg__scalar_like(n->site, x, 0.0) : NULL;
        if (z0) mask = tg__k_ok(tg__k_test(TG__TEST_EQ, mask, rk, z0), mask);
        else if (mask) {
            tg__tensor_release(mask);
            mask = NULL;
        }
        if (mask) out = tg__k_ok(tg__k_where(out, mask, NULL, out), out);
        else if (out) {
            tg__tensor_release(out);
            out = NULL;
        }
    } else if (out && isnan(p)) {
        out = tg__k_ok(tg__k_fill(out, NAN), out);
    } else if (out && isfinite(p)) { /* PyTorch's norm_backward for the other p */
        tg__tensor_release(out);
        out = general_p_grad(n, x, gk, rk, p);
    } else if (out) { /* inf and -inf */
        tg_tensor *ax = new_w(n->site, n->name, x);
        if (ax) ax = tg__k_ok(tg__k_unary(TG__UN_ABS, ax, x, NULL, 0, 0), ax);
        mask = ax ? tg__new_output_on(n->site, n->name, x->storage->device, TG_BOOL, x->ndim,
                                      x->shape)
                  : NULL;
        if (mask) mask = tg__k_ok(tg__k_test(TG__TEST_EQ, mask, ax, rk), mask);
        if (mask) ax = tg__k_ok(tg__k_copy(ax, mask), ax); /* ax: the mask as 0/1 */
        bool red[TG_MAX_DIMS];
        int kd;
        int64_t kshape[TG_MAX_DIMS];
        red_of(n, red, &kd, kshape);
        tg_tensor *cnt = ax && mask ? tg__new_output_on(n->site, n->name, x->storage->device,
                                                        x->dtype, kd, kshape)
                                    : NULL;
        if (cnt) cnt = tg__k_ok(tg__k_sum_reduce(cnt, ax, red, 1.0), cnt);
        /* a line whose norm is NaN has no element equal to it: its gradient is
         * sign(t) 0, as PyTorch, not 0 / 0 (count at least 1) */
        tg_tensor *one = cnt ? tg__scalar_like(n->site, cnt, 1.0) : NULL;
        if (one) cnt = tg__k_ok(tg__k_binary(TG__BIN_MAX, cnt, cnt, one, 0, 0), cnt);
        else if (cnt) {
            tg__tensor_release(cnt);
            cnt = NULL;
        }
        tg__tensor_release(one);
        if (cnt) cnt = tg__k_ok(tg__k_binary(TG__BIN_DIV, cnt, gk, cnt, 0, 0), cnt);
        if (cnt) out = tg__k_ok(tg__k_unary(TG__UN_SIGN, out, x, NULL, 0, 0), out);
        if (cnt && out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, out, ax, 0, 0), out);
        if (cnt && out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, out, cnt, 0, 0), out);
        if (!cnt && out) {
            tg__tensor_release(out);
            out = NULL;
        }
        tg__tensor_release(ax);
        tg__tensor_release(cnt);
    }
    tg__tensor_release(mask);
    tg__tensor_release(z0);
    tg__line_grad_close(&b);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

static const tg__op_def VAR_DEF = {"VarBackward", var_backward, false, NULL};
static const tg__op_def STD_DEF = {"StdBackward", std_backward, false, NULL};
static const tg__op_def NORM_DEF = {"NormBackward", norm_backward, false, NULL};

/* ---- forward ---------------------------------------------------------------------------- */

/* Finishes: the keepdim result k becomes the result's shape, recorded with def
 * (saving w, and the result when save_out) when w requires grad. Takes k. */
static tg_tensor *finish(tg_site s, geo *g, tg_tensor *k, const tg__op_def *def, bool save_out,
                         double corr, double p) {
    tg_tensor *out = k ? tg__reshape_own(s, k, g->ond, g->oshape) : NULL;
    tg__tensor_release(k);
    if (out && tg__needs_grad(1, &g->w)) {
        tg__node *n = tg__record(s, def, 1, &g->w, out);
        int sx = n ? tg__node_save(n, g->w, false, 0) : -1;
        int so = sx >= 0 && save_out ? tg__node_save(n, out, true, 0) : 0;
        if (!n || sx < 0 || so < 0) {
            tg__tensor_release(out);
            out = NULL;
        } else {
            n->iparam[P_DIM] = g->d;
            n->iparam[P_KEEPDIM] = g->ond == g->kd;
            n->iparam[P_SLOT_X] = sx;
            n->iparam[P_SLOT_OUT] = so;
            n->dparam[P_CORR] = corr;
            n->dparam[P_P] = p;
        }
    }
    tg__tensor_release(g->w);
    return out;
}

static tg_tensor *moment(tg_site s, const char *who, tg_tensor *t, int dim, double correction,
                         bool keepdim, bool all, bool std) {
    geo g;
    if (!setup(s, who, t, dim, keepdim, all, &g)) return NULL;
    if (!isfinite(correction) || correction < 0) {
        tg__tensor_release(g.w);
        return tg__fail(TG_ERR_VALUE, "%s: correction %g must be finite and >= 0", who, correction);
    }
    double den = (double)g.n - correction;
    if (den < 0) den = 0;
    tg_tensor *dev = centered(s, who, g.w, g.red, g.kd, g.kshape, g.n);
    if (dev) dev = tg__k_ok(tg__k_binary(TG__BIN_MUL, dev, dev, dev, 0, 0), dev);
    tg_tensor *k = dev ? new_k(s, who, &g) : NULL;
    if (k) k = tg__k_ok(tg__k_sum_reduce(k, dev, g.red, 1.0 / den), k);
    if (k && std) k = tg__k_ok(tg__k_unary(TG__UN_SQRT, k, k, NULL, 0, 0), k);
    tg__tensor_release(dev);
    if (!k) {
        tg__tensor_release(g.w);
        return NULL;
    }
    return finish(s, &g, k, std ? &STD_DEF : &VAR_DEF, std, correction, 0);
}

static tg_tensor *norm(tg_site s, const char *who, tg_tensor *t, double p, int dim, bool keepdim,
                       bool all) {
    if (tg__null_arg(t, who, "t")) return NULL; /* a NULL input first: its error is kept */
    geo g;
    if (!setup(s, who, t, dim, keepdim, all, &g)) return NULL;
    /* a: what is summed (|x|^p, x^2 for 2, x != 0 for 0) or, for +-inf, |x| */
    tg_tensor *a = new_w(s, who, g.w), *k = NULL;
    const tg__unop first = p == 2.0 ? TG__UN_SQUARE : TG__UN_ABS;
    if (a) a = tg__k_ok(tg__k_unary(first, a, g.w, NULL, 0, 0), a);
    if (a && p == 0) { /* the count of non-zero elements */
        tg_tensor *nz = tg__new_output_on(s, who, a->storage->device, TG_BOOL, a->ndim, a->shape);
        tg_tensor *z0 = nz ? tg__scalar_like(s, a, 0.0) : NULL;
        if (z0) nz = tg__k_ok(tg__k_test(TG__TEST_NE, nz, a, z0), nz);
        a = z0 && nz ? tg__k_ok(tg__k_copy(a, nz), a) : drop2(NULL, a, NULL);
        drop2(NULL, nz, z0);
    } else if (a && isfinite(p) && p != 1.0 && p != 2.0) {
        a = tg__k_ok(tg__k_unary(TG__UN_POW, a, a, NULL, p, 0), a);
    }
    if (a) k = new_k(s, who, &g);
    if (k && g.n == 0 && (isinf(p) || p < 0)) {
        /* as PyTorch: the max, and the sum of negative powers (an infinite
         * term), have no identity (even for an empty result) */
        tg__tensor_release(k);
        k = tg__fail(TG_ERR_SHAPE, "%s: the %g-norm of an empty dim (%d) is undefined (%s, as "
                     "PyTorch says)", who, p, g.d,
                     p == INFINITY ? "the max has no identity" : "a negative power of 0 is infinite");
    } else if (k && isnan(p)) { /* NaN everywhere, as PyTorch; 0 for empty lines */
        k = tg__k_ok(tg__k_fill(k, g.n == 0 ? 0.0 : NAN), k);
    } else if (k && isinf(p)) {
        if (g.n > 0) {
            k = tg__k_ok(tg__k_reduce_dim(p > 0 ? TG__RED_MAX : TG__RED_MIN, k, NULL, a, g.d), k);
        }
    } else if (k) {
        k = tg__k_ok(tg__k_sum_reduce(k, a, g.red, 1.0), k);
        if (k && p == 2.0) k = tg__k_ok(tg__k_unary(TG__UN_SQRT, k, k, NULL, 0, 0), k);
        else if (k && p != 0 && p != 1.0) k = tg__k_ok(tg__k_unary(TG__UN_POW, k, k, NULL, 1 / p, 0), k);
    }
    tg__tensor_release(a);
    if (!k) {
        tg__tensor_release(g.w);
        return NULL;
    }
    return finish(s, &g, k, &NORM_DEF, true, 0, p);
}

tg_tensor *tg_var_at(tg_site s, tg_tensor *t, double correction) {
    return tg__ret(moment(s, "tg_var", t, 0, correction, false, true, false));
}
tg_tensor *tg_var_dim_at(tg_site s, tg_tensor *t, int dim, double correction, bool keepdim) {
    return tg__ret(moment(s, "tg_var_dim", t, dim, correction, keepdim, false, false));
}
/* var / std over the dims listed (all for ndims 0): along the last dim of t
 * with those dims merged into it (tg__merge_reduced), then viewed with
 * keepdim's shape when asked. */
static tg_tensor *moment_dims(tg_site s, const char *who, tg_tensor *t, int ndims,
                              const int *dims, double correction, bool keepdim, bool std) {
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    if (!tg__is_float(t->dtype)) return tg__dtype_unsupported(who, t->dtype), NULL;
    bool red[TG_MAX_DIMS];
    if (!tg__dims_mask(who, ndims, dims, t->ndim, red)) return NULL;
    if (!isfinite(correction) || correction < 0)
        return tg__fail(TG_ERR_VALUE, "%s: correction %g must be finite and >= 0", who, correction);
    int64_t oshape[TG_MAX_DIMS], cnt;
    int ond = tg__reduced_shape(t->ndim, t->shape, red, keepdim, oshape, &cnt);
    tg_tensor *w = tg__merge_reduced(s, t, red);
    tg_tensor *r = w ? moment(s, who, w, -1, correction, false, false, std) : NULL;
    tg__tensor_release(w);
    if (!r || !keepdim || t->ndim == 0) return r;
    tg_tensor *k = tg__reshape(s, r, ond, oshape);
    tg__tensor_release(r);
    return k;
}
tg_tensor *tg_var_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, double correction,
                          bool keepdim) {
    return tg__ret(moment_dims(s, "tg_var_dims", t, ndims, dims, correction, keepdim, false));
}
tg_tensor *tg_std_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, double correction,
                          bool keepdim) {
    return tg__ret(moment_dims(s, "tg_std_dims", t, ndims, dims, correction, keepdim, true));
}
tg_tensor *tg_std_at(tg_site s, tg_tensor *t, double correction) {
    return tg__ret(moment(s, "tg_std", t, 0, correction, false, true, true));
}
tg_tensor *tg_std_dim_at(tg_site s, tg_tensor *t, int dim, double correction, bool keepdim) {
    return tg__ret(moment(s, "tg_std_dim", t, dim, correction, keepdim, false, true));
}
tg_tensor *tg_norm_at(tg_site s, tg_tensor *t, double p) {
    return tg__ret(norm(s, "tg_norm", t, p, 0, false, true));
}
tg_tensor *tg_norm_dim_at(tg_site s, tg_tensor *t, double p, int dim, bool keepdim) {
    return tg__ret(norm(s, "tg_norm_dim", t, p, dim, keepdim, false));
}
