/* ops/loss.c - losses and the masked reductions RL trainers aggregate with,
 * composed from the recorded ops (PyTorch's F.mse_loss, F.smooth_l1_loss,
 * F.binary_cross_entropy_with_logits, F.cross_entropy and F.nll_loss with
 * class weights, F.kl_div; masked_mean as verl and TRL write it).
 *
 * Contract: float inputs of one dtype and device, broadcast as tg_sub does;
 * reduction TG_REDUCTION_NONE (the elementwise loss), _MEAN or _SUM (0-d),
 * and for tg_kl_div alone _BATCHMEAN.
 * Composed ops: the graph is the one the formula's ops record (each saves
 * what it needs), so the values and gradients are those of the formula, and
 * every op's error reaches the caller with its own message. On failure
 * nothing is leaked and NULL is returned with the error set. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* Releases a and b (either may be NULL) and returns r. */
static tg_tensor *drop2(tg_tensor *r, tg_tensor *a, tg_tensor *b) {
    tg__tensor_release(a);
    tg__tensor_release(b);
    return r;
}

/* NONE, MEAN or SUM; BATCHMEAN only where `batchmean` (tg_kl_div: PyTorch
 * refuses 'batchmean' in every other loss). */
static bool check_reduction_of(const char *who, tg_reduction r, bool batchmean) {
    if (r == TG_REDUCTION_NONE || r == TG_REDUCTION_MEAN || r == TG_REDUCTION_SUM) return true;
    if (r == TG_REDUCTION_BATCHMEAN && batchmean) return true;
    if (r == TG_REDUCTION_BATCHMEAN)
        tg__set_error(TG_ERR_VALUE, "%s: reduction TG_REDUCTION_BATCHMEAN is tg_kl_div's only "
                      "(TG_REDUCTION_NONE, _MEAN or _SUM here)", who);
    else
        tg__set_error(TG_ERR_VALUE, "%s: reduction is %d (TG_REDUCTION_NONE, _MEAN or _SUM%s)",
                      who, (int)r, batchmean ? ", _BATCHMEAN" : "");
    return false;
}

static bool check_reduction(const char *who, tg_reduction r) {
    return check_reduction_of(who, r, false);
}

/* Applies the reduction to the elementwise loss l (consumed); BATCHMEAN is
 * the sum divided by batch, input.size(0) (kl_div). */
static tg_tensor *reduce_batch(tg_site s, tg_tensor *l, tg_reduction r, int64_t batch) {
    if (!l || r == TG_REDUCTION_NONE) return l;
    tg_tensor *t = drop2(tg__reduce_all(s, l, r == TG_REDUCTION_MEAN), l, NULL);
    if (!t || r != TG_REDUCTION_BATCHMEAN) return t;
    return drop2(tg__scale(s, t, 1.0 / (double)batch), t, NULL); /* batch 0: 0 / 0, NaN */
}

static tg_tensor *reduce(tg_site s, tg_tensor *l, tg_reduction r) {
    return reduce_batch(s, l, r, 1);
}

static tg_tensor *mse_loss_op(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r) {
    if (tg__null_arg(input, "tg_mse_loss", "input") ||
        tg__null_arg(target, "tg_mse_loss", "target") || !check_reduction("tg_mse_loss", r))
        return NULL;
    tg_tensor *d = tg__sub(s, input, target);
    tg_tensor *l = d ? tg__unary(s, TG__UN_SQUARE, d, 0, 0) : NULL;
    return reduce(s, drop2(l, d, NULL), r);
}

/* |d| < beta: 0.5 d^2 / beta, else |d| - 0.5 beta; written as
 * 0.5 m^2 / beta + (|d| - m) with m = min(|d|, beta), whose gradient is
 * PyTorch's at every point (clamp's is 1 on its bound); beta 0 is the L1 loss. */
static tg_tensor *smooth_l1_loss_op(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r,
                                double beta) {
    const char *who = "tg_smooth_l1_loss";
    if (tg__null_arg(input, who, "input") || tg__null_arg(target, who, "target") ||
        !check_reduction(who, r))
        return NULL;
    if (!(beta >= 0) || isinf(beta))
        return tg__fail(TG_ERR_VALUE, "%s: beta must be finite and >= 0 (got %g)", who, beta);
    tg_tensor *d = tg__sub(s, input, target);
    tg_tensor *a = d ? tg__unary(s, TG__UN_ABS, d, 0, 0) : NULL;
    tg__tensor_release(d);
    if (!a || beta == 0) return reduce(s, a, r);
    tg_tensor *m = tg__unary(s, TG__UN_CLAMP, a, -INFINITY, beta);
    tg_tensor *q = m ? tg__unary(s, TG__UN_SQUARE, m, 0, 0) : NULL;
    tg_tensor *qs = q ? tg__scale(s, q, 0.5 / beta) : NULL;
    tg__tensor_release(q);
    tg_tensor *lin = m ? tg__sub(s, a, m) : NULL;
    drop2(NULL, a, m);
    tg_tensor *l = qs && lin ? tg__add(s, qs, lin) : NULL;
    return reduce(s, drop2(l, qs, lin), r);
}

/* (1 - t) x - w log sigmoid(x), w = 1 + (pos_weight - 1) t (PyTorch's stable
 * form; pos_weight NULL: w = 1). */
static tg_tensor *binary_cross_entropy_with_logits_op(tg_site s, tg_tensor *input,
                                                  tg_tensor *target, tg_tensor *pos_weight,
                                                  tg_reduction r) {
    const char *who = "tg_binary_cross_entropy_with_logits";
    if (tg__null_arg(input, who, "input") || tg__null_arg(target, who, "target") ||
        !check_reduction(who, r))
        return NULL;
    tg_tensor *one_minus = tg__unary(s, TG__UN_SCALE, target, -1, 0);
    tg_tensor *om = one_minus ? tg__unary(s, TG__UN_ADDS, one_minus, 1, 0) : NULL;
    tg__tensor_release(one_minus);
    tg_tensor *lin = om ? tg__mul(s, om, input) : NULL;
    tg__tensor_release(om);
    tg_tensor *ls = lin ? tg__unary(s, TG__UN_LOGSIGMOID, input, 0, 0) : NULL;
    if (ls && pos_weight) { /* w = 1 + (pos_weight - 1) t */
        tg_tensor *pm = tg__unary(s, TG__UN_ADDS, pos_weight, -1, 0);
        tg_tensor *pt = pm ? tg__mul(s, pm, target) : NULL;
        tg_tensor *w = pt ? tg__unary(s, TG__UN_ADDS, pt, 1, 0) : NULL;
        drop2(NULL, pm, pt);
        tg_tensor *wl = w ? tg__mul(s, w, ls) : NULL;
        drop2(NULL, w, ls);
        ls = wl;
    }
    tg_tensor *l = ls ? tg__sub(s, lin, ls) : NULL;
    return reduce(s, drop2(l, lin, ls), r);
}

static tg_tensor *masked_mean(tg_site s, const char *who, tg_tensor *x, tg_tensor *mask, int dim,
                              bool all) {
    if (tg__null_arg(x, who, "x") || tg__null_arg(mask, who, "mask")) return NULL;
    tg_tensor *xm = tg__mul(s, x, mask), *num = NULL, *den = NULL, *mb = NULL;
    if (xm && !all) {
        int nd = xm->ndim;
        if (tg__wrap_dim(who, dim, nd) < 0) return drop2(NULL, xm, NULL);
        num = tg__sum_dim(s, xm, dim, false);
        /* the mask broadcast to x's shape, so that both sums have one shape */
        mb = num ? tg__expand(s, mask, nd, xm->shape) : NULL;
        den = mb ? tg__sum_dim(s, mb, dim, false) : NULL;
    } else if (xm) {
        num = tg__reduce_all(s, xm, false);
        mb = num ? tg__expand(s, mask, xm->ndim, xm->shape) : NULL;
        den = mb ? tg__reduce_all(s, mb, false) : NULL;
    }
    drop2(NULL, xm, mb);
    tg_tensor *out = num && den ? tg__div(s, num, den) : NULL;
    return drop2(out, num, den);
}

static tg_tensor *masked_mean_op(tg_site s, tg_tensor *x, tg_tensor *mask, int dim, bool all) {
    return masked_mean(s, "tg_masked_mean", x, mask, dim, all);
}

/* ---- cross-entropy and NLL over a class dim ------------------------------------------ */

/* PyTorch's layouts: input (C) with a 0-d target, or (N, C, d1, ...) with
 * target (N, d1, ...). *rows receives input with the classes last (a view)
 * and *tg targets of the same leading shape (new references). */
static bool classes_last(tg_site s, const char *who, tg_tensor *input, tg_tensor *target,
                         tg_tensor **rows, tg_tensor **tg) {
    *rows = *tg = NULL;
    if (input->ndim == 0)
        return tg__fail(TG_ERR_SHAPE, "%s: input is 0-d (expected (C) or (N, C, ...))", who),
               false;
    if (input->ndim == 1) {
        *rows = tg__unsqueeze(s, input, 0);
        *tg = *rows ? tg__unsqueeze(s, target, 0) : NULL;
    } else {
        int perm[TG_MAX_DIMS], k = 0;
        perm[k++] = 0;
        for (int d = 2; d < input->ndim; d++) perm[k++] = d;
        perm[k++] = 1;
        *rows = tg__permute(s, input, input->ndim, perm);
        *tg = *rows ? tg_retain(target) : NULL;
    }
    if (*tg) return true;
    tg__tensor_release(*rows);
    *rows = NULL;
    return false;
}

/* The class weights of tg_cross_entropy / tg_nll_loss, checked as PyTorch
 * checks them: NULL, or (C) of the input's dtype on its device. A weight that
 * requires grad is refused while grad mode is on, as PyTorch 1.13 refuses it
 * ("nll_loss_forward is not differentiable with respect to argument
 * 'weight'"). False with the error set. */
static bool check_weight(const char *who, tg_tensor *weight, tg_tensor *input, int64_t C) {
    if (!weight) return true;
    if (weight->ndim != 1 || weight->shape[0] != C) {
        char a[160];
        tg__set_error(TG_ERR_SHAPE, "%s: weight tensor should be defined either for all %lld "
                      "classes or no classes but got weight tensor of shape: %s", who,
                      (long long)C, tg__shape_str(a, sizeof a, weight->ndim, weight->shape));
        return false;
    }
    if (weight->dtype != input->dtype) {
        tg__set_error(TG_ERR_DTYPE, "%s: weight is %s, input %s (class weights of the input's "
                      "dtype required)", who, tg_dtype_name(weight->dtype),
                      tg_dtype_name(input->dtype));
        return false;
    }
    if (weight->storage->device != input->storage->device) {
        tg__set_error(TG_ERR_DEVICE, "%s: weight is on %s, input on %s", who,
                      tg__device_name(weight->storage->device),
                      tg__device_name(input->storage->device));
        return false;
    }
    if (tg_is_grad_enabled() && tg_requires_grad(weight)) {
        tg__set_error(TG_ERR_AUTOGRAD, "%s: weight requires grad, but the loss is not "
                      "differentiable with respect to its class weights (as PyTorch's): pass "
                      "tg_detach(weight), or call it with grad mode off", who);
        return false;
    }
    return true;
}

/* What the class losses need of their targets, made in one host pass. */
typedef struct class_rows {
    tg_tensor *keep; /* (y's shape) 1 where y != ignore_index, else 0; on input's device */
    tg_tensor *w;    /* (y's shape) weight[y], 0 on ignored rows; NULL without weights */
    tg_tensor *idx;  /* (y's shape, 1) i64: y with ignored rows set to class 0; or NULL */
    double total;    /* MEAN's divisor: the rows kept, or the sum of their weights */
} class_rows;

static void class_rows_free(class_rows *c) {
    drop2(NULL, c->keep, c->w);
    tg__tensor_release(c->idx);
    *c = (class_rows){0};
}

static void put(tg_tensor *t, int64_t i, double v) {
    if (t->dtype == TG_F32) ((float *)t->storage->data)[i] = (float)v;
    else ((double *)t->storage->data)[i] = v;
}

/* *t (a new host tensor) moved to dev; false with the error set and *t NULL. */
static bool move_to(tg_site s, tg_tensor **t, tg_device dev) {
    if (!*t || dev == TG_CPU) return true;
    tg_tensor *d = tg__to_device(s, *t, dev);
    tg__tensor_release(*t);
    *t = d;
    return d != NULL;
}

/* One host pass over the targets y and the class weights (NULL: none), both
 * copied from any device: c->keep, c->w (with a weight), c->idx (when
 * want_idx), c->total, on like's device; keep and w are f64 for an f64 like,
 * else f32 (the fused op's log-probs of bf16 logits are f32). A kept target
 * that indexes something (want_idx, or a weight) must lie in [0, C). False
 * with the error set, nothing left behind. */
static bool host_targets(tg_site s, const char *who, tg_tensor *y, tg_tensor *like,
                         int64_t ignore_index, int64_t C, tg_tensor *weight, bool want_idx,
                         class_rows *c) {
    *c = (class_rows){0};
    int64_t n = tg__k_numel(y->ndim, y->shape), shape1[TG_MAX_DIMS];
    for (int d = 0; d < y->ndim; d++) shape1[d] = y->shape[d];
    shape1[y->ndim] = 1;
    const tg_dtype dt = like->dtype == TG_F64 ? TG_F64 : TG_F32;
    double *wv = weight ? tg__xmalloc((size_t)(C ? C : 1) * sizeof *wv) : NULL; /* (C) */
    c->keep = weight && !wv ? NULL
              : tg__tensor_new(s, who, dt, y->ndim, y->shape, TG_MEM_WORKSPACE);
    c->w = c->keep && weight ? tg__tensor_new(s, who, dt, y->ndim, y->shape, TG_MEM_WORKSPACE)
                             : NULL;
    tg_tensor *h = c->keep && (c->w || !weight)
                       ? tg__tensor_new(s, who, TG_I64, y->ndim + 1, shape1, TG_MEM_WORKSPACE)
                       : NULL;
    if (!h || tg_copy_out(y, TG_I64, h->storage->data, (size_t)n * sizeof(int64_t)) != TG_OK ||
        (wv && tg_copy_out(weight, TG_F64, wv, (size_t)C * sizeof *wv) != TG_OK))
        goto fail;
    int64_t *hv = h->storage->data;
    for (int64_t i = 0; i < n; i++) {
        bool keep = hv[i] != ignore_index;
        if (keep && (want_idx || wv) && (hv[i] < 0 || hv[i] >= C)) {
            tg__set_error(TG_ERR_VALUE, "%s: target %lld at position %lld is outside [0, %lld) "
                          "(and is not ignore_index %lld)", who, (long long)hv[i], (long long)i,
                          (long long)C, (long long)ignore_index);
            goto fail;
        }
        if (!keep) hv[i] = 0;
        double w = !keep ? 0 : wv ? wv[hv[i]] : 1;
        c->total += w;
        put(c->keep, i, keep);
        if (c->w) put(c->w, i, w);
    }
    free(wv);
    wv = NULL;
    if (want_idx) c->idx = h;
    else tg__tensor_release(h);
    h = NULL;
    tg_device dev = like->storage->device;
    if (move_to(s, &c->keep, dev) && move_to(s, &c->w, dev) && move_to(s, &c->idx, dev))
        return true;
fail:
    free(wv);
    tg__tensor_release(h);
    class_rows_free(c);
    return false;
}

/* The per-row loss (consumed) reduced: MEAN divides by total (the rows kept,
 * or their weights' sum: 0 / 0 is NaN when none is kept, as PyTorch); NONE
 * gives a 0-d loss back for a (C) input (squeeze). */
static tg_tensor *reduce_rows(tg_site s, tg_tensor *loss, tg_reduction r, double total,
                              bool squeeze) {
    if (!loss) return NULL;
    tg_tensor *t;
    if (r == TG_REDUCTION_NONE) {
        if (!squeeze) return loss;
        t = tg__squeeze(s, loss, 0);
    } else {
        t = tg__reduce_all(s, loss, false);
        if (t && r == TG_REDUCTION_MEAN) {
            tg_tensor *d = tg__scale(s, t, 1.0 / total);
            tg__tensor_release(t);
            t = d;
        }
    }
    tg__tensor_release(loss);
    return t;
}

/* PyTorch's label smoothing: (1 - eps) nll + eps / C * (-sum_c w_c log p_c)
 * on the kept rows, the second term 0 on ignored ones (w_c = 1 without a
 * weight). nll (per row, already weighted) is consumed. */
static tg_tensor *smoothed(tg_site s, tg_tensor *rows, tg_tensor *weight, tg_tensor *keep,
                           tg_tensor *nll, double eps) {
    int64_t C = rows->shape[rows->ndim - 1];
    tg_tensor *ls = tg__log_softmax(s, rows); /* (..., C) */
    tg_tensor *lw = ls && weight ? tg__mul(s, ls, weight) : ls ? tg_retain(ls) : NULL;
    tg_tensor *sm = lw ? tg__sum_dim(s, lw, -1, false) : NULL;
    drop2(NULL, ls, lw);
    tg_tensor *u = sm ? tg__scale(s, sm, -eps / (double)C) : NULL;
    tg_tensor *z = u ? tg__scalar_like(s, u, 0) : NULL;
    tg_tensor *um = z ? tg__where(s, keep, u, z) : NULL; /* ignored rows: 0, no gradient */
    drop2(NULL, sm, u);
    tg_tensor *a = um ? tg__scale(s, nll, 1 - eps) : NULL;
    tg_tensor *sum = a ? tg__add(s, a, um) : NULL;
    drop2(NULL, z, um);
    return drop2(sum, a, nll);
}

/* t * w (t consumed); t itself when w is NULL. */
static tg_tensor *times(tg_site s, tg_tensor *t, tg_tensor *w) {
    if (!t || !w) return t;
    return drop2(tg__mul(s, t, w), t, NULL);
}

/* PyTorch's nll_loss saves the class weights for its backward, so an in-place
 * edit of them after the forward fails the backward. The gradient here is
 * made of the weights read at forward; saving them on the loss's node checks
 * their version too (TG_ERR_INPLACE naming the edit). NULL (loss released)
 * on NOMEM. */
static tg_tensor *weight_checked_in_backward(tg_tensor *loss, tg_tensor *weight) {
    if (!loss || !weight || !loss->grad_fn || tg__node_save(loss->grad_fn, weight, false, -1) >= 0)
        return loss;
    tg__tensor_release(loss);
    return NULL;
}

static tg_tensor *cross_entropy_op(tg_site s, tg_tensor *input, tg_tensor *target,
                                   tg_tensor *weight, int64_t ignore_index,
                                   double label_smoothing, tg_reduction r) {
    const char *who = "tg_cross_entropy";
    if (tg__null_arg(input, who, "input") || tg__null_arg(target, who, "target") ||
        !check_reduction(who, r))
        return NULL;
    if (!(label_smoothing >= 0 && label_smoothing <= 1))
        return tg__fail(TG_ERR_VALUE, "%s: label_smoothing must be in [0, 1] (got %g)", who,
                        label_smoothing);
    tg_tensor *rows = NULL, *y = NULL, *lp = NULL, *h = NULL, *loss = NULL;
    class_rows c = {0};
    if (!classes_last(s, who, input, target, &rows, &y)) return NULL;
    int64_t C = rows->shape[rows->ndim - 1];
    if (!check_weight(who, weight, input, C)) goto out;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.ignore_index = ignore_index;
    o.want_entropy = false;
    if (tg__logprob_entropy(s, who, rows, y, &o, &lp, &h) != TG_OK) goto out;
    loss = tg__neg(s, lp); /* -log p(target); 0 on ignored rows */
    if (loss && (weight || label_smoothing > 0 || r == TG_REDUCTION_MEAN) &&
        !host_targets(s, who, y, rows, ignore_index, C, weight, false, &c)) {
        tg__tensor_release(loss);
        loss = NULL;
    }
    loss = times(s, loss, c.w); /* w[y] (-log p(target)), per row: no (N, C) tensor */
    if (loss && label_smoothing > 0)
        loss = smoothed(s, rows, weight, c.keep, loss, label_smoothing);
    loss = weight_checked_in_backward(reduce_rows(s, loss, r, c.total, input->ndim == 1),
                                      weight);
out:
    drop2(NULL, rows, y);
    drop2(NULL, lp, h);
    class_rows_free(&c);
    return loss;
}

/* target * (log target - input), the 0 log 0 terms 0 (PyTorch's xlogy), or
 * exp(target) * (target - input) for a log target; BATCHMEAN divides the sum
 * by input.size(0) (a 0-d input: the sum, as PyTorch). */
static tg_tensor *kl_div_op(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r,
                            bool log_target) {
    const char *who = "tg_kl_div";
    if (tg__null_arg(input, who, "input") || tg__null_arg(target, who, "target") ||
        !check_reduction_of(who, r, true))
        return NULL;
    tg_tensor *d = tg__sub(s, log_target ? target : input, log_target ? input : target);
    tg_tensor *l = NULL;
    if (d && log_target) { /* exp(t) (t - x) */
        tg_tensor *e = tg__unary(s, TG__UN_EXP, target, 0, 0);
        l = e ? tg__mul(s, e, d) : NULL;
        tg__tensor_release(e);
    } else if (d) { /* t log(t where t != 0, else 1) - t x: 0 log 0 is 0, gradients finite */
        tg_tensor *one = tg__scalar_like(s, target, 1);
        tg_tensor *safe = one ? tg__where(s, target, target, one) : NULL;
        tg_tensor *lg = safe ? tg__unary(s, TG__UN_LOG, safe, 0, 0) : NULL;
        tg_tensor *xl = lg ? tg__mul(s, target, lg) : NULL;
        tg_tensor *tx = xl ? tg__mul(s, target, input) : NULL;
        l = tx ? tg__sub(s, xl, tx) : NULL;
        drop2(NULL, one, safe);
        tg__tensor_release(lg);
        drop2(NULL, xl, tx);
    }
    tg__tensor_release(d);
    return reduce_batch(s, l, r, input->ndim ? input->shape[0] : 1);
}

/* -weight[target] input[..., target] on the kept rows (PyTorch's nll_loss). */
static tg_tensor *nll_loss_op(tg_site s, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                              int64_t ignore_index, tg_reduction r) {
    const char *who = "tg_nll_loss";
    if (tg__null_arg(input, who, "input") || tg__null_arg(target, who, "target") ||
        !check_reduction(who, r))
        return NULL;
    if (target->dtype != TG_I64)
        return tg__fail(TG_ERR_DTYPE, "%s: target is %s (i64 class indices required)", who,
                        tg_dtype_name(target->dtype));
    tg_tensor *rows = NULL, *y = NULL, *g = NULL, *loss = NULL;
    class_rows c = {0};
    if (!classes_last(s, who, input, target, &rows, &y)) return NULL;
    bool same = y->ndim + 1 == rows->ndim;
    for (int d = 0; same && d < y->ndim; d++) same = y->shape[d] == rows->shape[d];
    if (!same) {
        char a[160], b[160];
        tg__set_error(TG_ERR_SHAPE, "%s: target has shape %s, input %s (expected the input's "
                      "shape without its class dim)", who,
                      tg__shape_str(a, sizeof a, target->ndim, target->shape),
                      tg__shape_str(b, sizeof b, input->ndim, input->shape));
        goto out;
    }
    int64_t C = rows->shape[rows->ndim - 1];
    if (!check_weight(who, weight, input, C) ||
        !host_targets(s, who, y, rows, ignore_index, C, weight, true, &c))
        goto out;
    tg_tensor *gi = tg__gather(s, rows, c.idx);
    g = gi ? tg__view(s, gi, y->ndim, y->shape) : NULL;
    tg__tensor_release(gi);
    tg_tensor *z = g ? tg__scalar_like(s, rows, 0) : NULL;
    tg_tensor *ng = times(s, z ? tg__neg(s, g) : NULL, c.w);
    loss = weight_checked_in_backward(
        reduce_rows(s, ng ? tg__where(s, c.keep, ng, z) : NULL, r, c.total, input->ndim == 1),
        weight);
    drop2(NULL, z, ng);
out:
    drop2(NULL, rows, y);
    tg__tensor_release(g);
    class_rows_free(&c);
    return loss;
}

/* ---- one_hot ------------------------------------------------------------------------- */

static tg_tensor *one_hot_op(tg_site s, tg_tensor *target, int64_t num_classes) {
    const char *who = "tg_one_hot";
    if (tg__null_arg(target, who, "target")) return NULL;
    if (target->dtype != TG_I64)
        return tg__fail(TG_ERR_DTYPE, "%s: target is %s (i64 class indices required)", who,
                        tg_dtype_name(target->dtype));
    if (target->ndim == TG_MAX_DIMS)
        return tg__fail(TG_ERR_DIM, "%s: target already has %d dims", who, TG_MAX_DIMS);
    int64_t n = tg__k_numel(target->ndim, target->shape);
    int64_t *y = tg__xmalloc((size_t)(n ? n : 1) * sizeof *y);
    if (!y) return NULL;
    tg_tensor *out = NULL;
    if (tg_copy_out(target, TG_I64, y, (size_t)n * sizeof *y) != TG_OK) goto done;
    if (num_classes < 0) { /* as PyTorch: one more than the largest target */
        if (num_classes != -1 || n == 0) {
            tg__set_error(TG_ERR_VALUE, "%s: num_classes is %lld: give it (>= 0) or -1 to take "
                          "max(target) + 1 of a non-empty target", who, (long long)num_classes);
            goto done;
        }
        num_classes = 0;
        for (int64_t i = 0; i < n; i++)
            if (y[i] + 1 > num_classes) num_classes = y[i] + 1;
    }
    for (int64_t i = 0; i < n; i++)
        if (y[i] < 0 || y[i] >= num_classes) {
            tg__set_error(TG_ERR_VALUE, "%s: target %lld at position %lld is outside [0, %lld)",
                          who, (long long)y[i], (long long)i, (long long)num_classes);
            goto done;
        }
    int64_t shape[TG_MAX_DIMS];
    for (int d = 0; d < target->ndim; d++) shape[d] = target->shape[d];
    shape[target->ndim] = num_classes;
    if (tg__shape_check(who, target->ndim + 1, shape) < 0) goto done;
    out = tg__tensor_new(s, who, TG_I64, target->ndim + 1, shape, tg__op_category());
    if (!out) goto done;
    int64_t *ov = out->storage->data;
    memset(ov, 0, (size_t)(n * num_classes) * sizeof *ov);
    for (int64_t i = 0; i < n; i++) ov[i * num_classes + y[i]] = 1;
    if (target->storage->device != TG_CPU) {
        tg_tensor *d = tg__to_device(s, out, target->storage->device);
        tg__tensor_release(out);
        out = d;
    }
done:
    free(y);
    return out;
}

/* ---- the aggregation modes of RL trainers ---------------------------------------------- */

static tg_tensor *agg_loss_op(tg_site s, tg_tensor *loss, tg_tensor *mask, tg_agg_mode mode) {
    const char *who = "tg_agg_loss";
    if (tg__null_arg(loss, who, "loss") || tg__null_arg(mask, who, "mask")) return NULL;
    if (mode != TG_AGG_TOKEN_MEAN && mode != TG_AGG_SEQ_MEAN_TOKEN_SUM &&
        mode != TG_AGG_SEQ_MEAN_TOKEN_MEAN)
        return tg__fail(TG_ERR_VALUE, "%s: mode is %d (TG_AGG_TOKEN_MEAN, "
                        "_SEQ_MEAN_TOKEN_SUM or _SEQ_MEAN_TOKEN_MEAN)", who, (int)mode);
    if (loss->ndim < 1) /* every mode: a per-token loss has a token dim */
        return tg__fail(TG_ERR_DIM, "%s: loss is 0-d (expected (..., tokens))", who);
    if (mode == TG_AGG_TOKEN_MEAN) return masked_mean(s, who, loss, mask, 0, true);
    tg_tensor *seq = NULL; /* one value per sequence (all dims but the last) */
    if (mode == TG_AGG_SEQ_MEAN_TOKEN_SUM) {
        tg_tensor *lm = tg__mul(s, loss, mask);
        seq = lm ? tg__sum_dim(s, lm, -1, false) : NULL;
        tg__tensor_release(lm);
    } else {
        seq = masked_mean(s, who, loss, mask, -1, false);
    }
    tg_tensor *out = seq ? tg__reduce_all(s, seq, true) : NULL;
    tg__tensor_release(seq);
    return out;
}

/* ---- the public entry points: each names itself in the errors of the ops it
 * is made of (tg__caller_enter) ------------------------------------------------------- */

static tg_tensor *done(const char *prev, tg_tensor *r) {
    tg__caller_leave(prev);
    return tg__ret(r);
}

tg_tensor *tg_mse_loss_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r) {
    const char *prev = tg__caller_enter("tg_mse_loss");
    return done(prev, mse_loss_op(s, input, target, r));
}
tg_tensor *tg_smooth_l1_loss_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r,
                                double beta) {
    const char *prev = tg__caller_enter("tg_smooth_l1_loss");
    return done(prev, smooth_l1_loss_op(s, input, target, r, beta));
}
tg_tensor *tg_binary_cross_entropy_with_logits_at(tg_site s, tg_tensor *input,
                                                  tg_tensor *target, tg_tensor *pos_weight,
                                                  tg_reduction r) {
    const char *prev = tg__caller_enter("tg_binary_cross_entropy_with_logits");
    return done(prev, binary_cross_entropy_with_logits_op(s, input, target, pos_weight, r));
}
tg_tensor *tg_masked_mean_at(tg_site s, tg_tensor *x, tg_tensor *mask, int dim, bool all) {
    const char *prev = tg__caller_enter("tg_masked_mean");
    return done(prev, masked_mean_op(s, x, mask, dim, all));
}
tg_tensor *tg_cross_entropy_at(tg_site s, tg_tensor *input, tg_tensor *target,
                               tg_tensor *weight, int64_t ignore_index, double label_smoothing,
                               tg_reduction r) {
    const char *prev = tg__caller_enter("tg_cross_entropy");
    return done(prev,
                cross_entropy_op(s, input, target, weight, ignore_index, label_smoothing, r));
}
tg_tensor *tg_kl_div_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_reduction r,
                        bool log_target) {
    const char *prev = tg__caller_enter("tg_kl_div");
    return done(prev, kl_div_op(s, input, target, r, log_target));
}
tg_tensor *tg_nll_loss_at(tg_site s, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                          int64_t ignore_index, tg_reduction r) {
    const char *prev = tg__caller_enter("tg_nll_loss");
    return done(prev, nll_loss_op(s, input, target, weight, ignore_index, r));
}
tg_tensor *tg_one_hot_at(tg_site s, tg_tensor *target, int64_t num_classes) {
    const char *prev = tg__caller_enter("tg_one_hot");
    return done(prev, one_hot_op(s, target, num_classes));
}
tg_tensor *tg_agg_loss_at(tg_site s, tg_tensor *loss, tg_tensor *mask, tg_agg_mode mode) {
    const char *prev = tg__caller_enter("tg_agg_loss");
    return done(prev, agg_loss_op(s, loss, mask, mode));
}
