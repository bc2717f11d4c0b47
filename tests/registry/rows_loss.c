/* tests/registry/rows_loss.c - the registry rows of the losses, the fused
 * log-prob ops and the in-place ops. */
#include <math.h>
#include <string.h>

#include "rows.h"

#define STATUS(name, expr)                                                                      \
    static tg_status ap_##name(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,     \
                               tg_tensor **out) {                                               \
        (void)op, (void)a, (void)in, (void)out;                                                 \
        return (expr);                                                                          \
    }

CALL(mse_loss, tg_mse_loss(in[0], in[1], (tg_reduction)PI(0)))
CALL(smooth_l1_loss, tg_smooth_l1_loss(in[0], in[1], (tg_reduction)PI(0), PR(0)))
CALL(binary_cross_entropy_with_logits,
     tg_binary_cross_entropy_with_logits(in[0], in[1], in[2], (tg_reduction)PI(0)))
CALL(masked_mean, tg_masked_mean(in[0], in[1], PD(0), PB(1)))
CALL(cross_entropy, tg_cross_entropy(in[0], in[1], in[2], PI(0), PR(0), (tg_reduction)PI(1)))
CALL(kl_div, tg_kl_div(in[0], in[1], (tg_reduction)PI(0), PB(1)))
CALL(nll_loss, tg_nll_loss(in[0], in[1], in[2], PI(0), (tg_reduction)PI(1)))
CALL(agg_loss, tg_agg_loss(in[0], in[1], (tg_agg_mode)PI(0)))
STATUS(add_, tg_add_(in[0], in[1]))
STATUS(sub_, tg_sub_(in[0], in[1]))
STATUS(mul_, tg_mul_(in[0], in[1]))
STATUS(div_, tg_div_(in[0], in[1]))
STATUS(pow_, tg_pow_(in[0], in[1]))
STATUS(scale_, tg_scale_(in[0], PR(0)))
STATUS(copy_, tg_copy_(in[0], in[1]))
STATUS(fill_, tg_fill_(in[0], PR(0)))

/* params "i:impl r:T i:ignore i:chunk b:entropy b:egrad" */
static tg_logprob_opts lp_opts(const tgr_args *a) {
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = (tg_logprob_impl)PI(0);
    o.temperature = PR(0);
    o.ignore_index = PI(1);
    o.chunk_size = PI(2);
    o.want_entropy = PB(3);
    o.entropy_grad = PB(4);
    return o;
}

static tg_status ap_logprob_entropy(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                                    tg_tensor **out) {
    (void)op;
    tg_logprob_opts o = lp_opts(a);
    return tg_logprob_entropy(in[0], in[1], &o, &out[0], o.want_entropy ? &out[1] : NULL);
}

static tg_status ap_logprob_entropy_lse(const tgr_op *op, tg_tensor *const *in,
                                        const tgr_args *a, tg_tensor **out) {
    (void)op;
    tg_logprob_opts o = lp_opts(a);
    return tg_logprob_entropy_lse(in[0], in[1], &o, &out[0], o.want_entropy ? &out[1] : NULL,
                                  &out[2]);
}

/* inputs (hidden, weight, targets, bias or NULL); params as lp_opts but for the
 * chunk: "i:chunk_rows i:vocab_block" */
static tg_status ap_linear_logprob_entropy(const tgr_op *op, tg_tensor *const *in,
                                           const tgr_args *a, tg_tensor **out) {
    (void)op;
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.impl = (tg_logprob_impl)PI(0);
    o.temperature = PR(0);
    o.ignore_index = PI(1);
    o.chunk_rows = PI(2);
    o.want_entropy = PB(3);
    o.entropy_grad = PB(4);
    o.vocab_block = PI(5);
    return tg_linear_logprob_entropy(in[0], in[1], in[3], in[2], &o, &out[0],
                                     o.want_entropy ? &out[1] : NULL, &out[2]);
}

/* tg_linear_loss with a fixed per-token loss (torch_ref.py's linear_loss):
 * the sum over rows of -lp + 0.3 exp(lp) - 0.1 H + 0.05 lse^2; inputs and
 * params as tg_linear_logprob_entropy's row (impl and entropy unused). */
static tg_status loss_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    (void)user;
    tg_tensor *t = tg_add(tg_sub(tg_scale(tg_exp(ch->logprob), 0.3), ch->logprob),
                          tg_sub(tg_scale(tg_square(ch->lse), 0.05), tg_scale(ch->entropy, 0.1)));
    *loss = tg_sum(t); /* the rest is the callback's scope's */
    return *loss ? TG_OK : tg_last_status();
}

static tg_status ap_linear_loss(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,
                                tg_tensor **out) {
    (void)op;
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.temperature = PR(0);
    o.ignore_index = PI(1);
    o.chunk_rows = PI(2);
    o.entropy_grad = PB(4);
    o.vocab_block = PI(5);
    return tg_linear_loss(in[0], in[1], in[3], in[2], loss_chunk, NULL, &o, &out[0], NULL,
                          NULL);
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static void bad(tgr_samples *out, const char *what, const tgr_args *a, tg_status want, int nin,
                tg_tensor *x, tg_tensor *y, tg_tensor *z) {
    tgr_sample *s = nin == 1   ? tgr_add(out, what, TGR_S_BAD, a, 1, x)
                    : nin == 2 ? tgr_add(out, what, TGR_S_BAD, a, 2, x, y)
                               : tgr_add(out, what, TGR_S_BAD, a, 3, x, y, z);
    if (s) s->want = want;
}

/* Targets of shape (nd, shape) in [0, V) with every fourth one ignore (-100),
 * and one out of range when `bad`. */
static tg_tensor *targets(int nd, const int64_t *shape, int64_t V, uint64_t seed) {
    tg_tensor *y = tg_randint(nd, shape, seed, 0, V);
    int64_t n = tg_numel(y);
    if (!y || n < 2) return y;
    tg_tensor *idx = tg_arange(TG_I64, 0, (double)n, 1);
    tg_tensor *four = tg_full(TG_I64, 0, NULL, 4);
    tg_tensor *rem = tg_remainder(idx, four);
    tg_tensor *m = tg_eq_scalar(rem, 1);
    tg_release(rem);
    tg_tensor *flat = tg_reshape(y, 1, &n);
    tg_tensor *ign = tg_full(TG_I64, 0, NULL, -100);
    tg_tensor *w = tg_where(m, ign, flat);
    tg_tensor *r = tg_reshape(w, nd, shape);
    tg_tensor *d = tg_detach(r);
    tg_release(y);
    tg_release(idx);
    tg_release(four);
    tg_release(m);
    tg_release(flat);
    tg_release(ign);
    tg_release(w);
    tg_release(r);
    return d;
}

/* kl_div's TG_REDUCTION_BATCHMEAN (the sum over input.size(0); a 0-d input:
 * the sum) with 0-3 leading dims, a log target, a broadcast target (the
 * divisor is the input's size 0) and an empty batch (0 / 0: NaN). */
static void s_batchmean(tg_dtype dt, tgr_samples *out) {
    const struct {
        int nd;
        int64_t s[3];
    } sh[] = {{0, {0}}, {1, {5}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    for (int i = 0; i < 4; i++) {
        tgr_args a = tgr_args0(dt);
        a.iv[0] = TG_REDUCTION_BATCHMEAN;
        a.iv[1] = i == 2; /* log_target */
        char what[48];
        snprintf(what, sizeof what, "batchmean, %d dims%s", sh[i].nd, i == 2 ? " log_target" : "");
        tg_tensor *x = tgr_rand(dt, sh[i].nd, sh[i].s, 110 + (uint64_t)i, -3, -0.1);
        tg_tensor *t = tgr_rand(dt, sh[i].nd, sh[i].s, 120 + (uint64_t)i, i == 2 ? -3 : 0.05,
                                i == 2 ? -0.1 : 1);
        tgr_add(out, what, TGR_S_SMOOTH, &a, 2, x, t);
    }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = TG_REDUCTION_BATCHMEAN;
    tgr_add(out, "batchmean, broadcast strided input", TGR_S_SMOOTH | TGR_S_BCAST | TGR_S_STRIDED,
            &a, 2, tgr_strided(tgr_rand(dt, 1, SH(4), 130, -3, -0.1)),
            tgr_rand(dt, 2, SH(3, 4), 131, 0.05, 1));
    tgr_add(out, "batchmean, empty batch", TGR_S_EMPTY, &a, 2,
            tgr_rand(dt, 2, SH(0, 3), 132, -3, -0.1), tgr_rand(dt, 2, SH(0, 3), 133, 0.05, 1));
}

/* The same-shaped pair losses (mse, smooth L1, BCE, KL) for each reduction
 * (params start "i:reduction"), with leading dims, broadcast and strided
 * targets; probabilities for KL, 0/1 targets for BCE. */
static void s_pair_loss(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool kl = !strcmp(op->name, "kl_div"), bce = !strncmp(op->name, "binary", 6);
    const bool sl1 = !strcmp(op->name, "smooth_l1_loss");
    const struct {
        int nd;
        int64_t s[3];
        const char *what;
    } shapes[] = {{1, {5}, "1-d"}, {2, {3, 4}, "lead 1"}, {3, {2, 3, 4}, "lead 2"}};
    int k = 0;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 3; i++) {
            tgr_args a = tgr_args0(dt);
            a.iv[0] = r;
            a.fv[0] = 1.0; /* smooth L1's beta */
            if (kl) a.iv[1] = i == 2;
            char what[48];
            snprintf(what, sizeof what, "%s reduction %d%s", shapes[i].what, r,
                     kl && i == 2 ? " log_target" : "");
            tg_tensor *x = tgr_rand(dt, shapes[i].nd, shapes[i].s, 1 + (uint64_t)k, -2, 2);
            tg_tensor *t = tgr_rand(dt, shapes[i].nd, shapes[i].s, 31 + (uint64_t)k, kl ? 0.05 : bce ? 0 : -2,
                                    kl ? 1 : bce ? 1 : 2);
            if (kl && i == 2) { /* log-probabilities */
                tg_tensor *l = tg_log(t);
                tg_release(t);
                t = tg_detach(l);
                tg_release(l);
            }
            k++;
            tgr_sample *s = tgr_add(out, what, sl1 ? 0 : TGR_S_SMOOTH, &a, 2, x, t);
            if (s && r == 0 && shapes[i].nd >= 2) s->batch = 3;
        }
    for (int r = 0; r < 3; r++) { /* no elements: the mean is 0 / 0 (NaN), as PyTorch */
        tgr_args e = tgr_args0(dt);
        e.iv[0] = r;
        e.fv[0] = 1.0;
        char what[48];
        snprintf(what, sizeof what, "empty reduction %d", r);
        if (bce && r == 2)
            tgr_add(out, "empty, pos_weight", 0, &e, 3, tgr_rand(dt, 2, SH(0, 4), 103, -2, 2),
                    tgr_rand(dt, 2, SH(0, 4), 104, 0, 1), tgr_rand(dt, 1, SH(4), 105, 0.5, 2));
        else
            tgr_add(out, what, 0, &e, 2, tgr_rand(dt, 2, SH(0, 4), 103 + (uint64_t)r, -2, 2),
                    tgr_rand(dt, 2, SH(0, 4), 106 + (uint64_t)r, 0.05, 1));
    }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = 1;
    a.fv[0] = 1.0;
    tgr_add(out, "broadcast strided target", TGR_S_BCAST | TGR_S_STRIDED, &a, 2,
            tgr_rand(dt, 2, SH(3, 4), 90, -2, 2), tgr_strided(tgr_rand(dt, 1, SH(4), 91, 0.05, 1)));
    if (bce) {
        tgr_add(out, "pos_weight", TGR_S_SMOOTH | TGR_S_BCAST, &a, 3, tgr_rand(dt, 2, SH(3, 4), 92, -2, 2),
                tgr_rand(dt, 2, SH(3, 4), 93, 0, 1), tgr_rand(dt, 1, SH(4), 94, 0.5, 2));
        tgr_add(out, "logits of +-1000", 0, &a, 2, tgr_rand(dt, 1, SH(4), 95, -1000, 1000),
                tgr_rand(dt, 1, SH(4), 96, 0, 1));
    }
    bad(out, "shapes that do not broadcast", &a, TG_ERR_SHAPE, 2,
        tgr_rand(dt, 2, SH(2, 3), 97, -2, 2), tgr_rand(dt, 1, SH(4), 98, 0, 1), NULL);
    if (kl) s_batchmean(dt, out);
    else { /* 'batchmean' is kl_div's only (PyTorch: "not a valid value for reduction") */
        a.iv[0] = TG_REDUCTION_BATCHMEAN;
        bad(out, "reduction batchmean", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 1, SH(3), 101, -2, 2),
            tgr_rand(dt, 1, SH(3), 102, 0, 1), NULL);
    }
    a.iv[0] = 7;
    bad(out, "reduction 7", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 1, SH(3), 99, -2, 2),
        tgr_rand(dt, 1, SH(3), 100, 0, 1), NULL);
}

/* masked_mean / agg_loss: (B, T) losses with bool and float masks (a row masked
 * out entirely gives NaN in the SEQ modes and along dim 1) */
static void s_masked(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool agg = !strcmp(op->name, "agg_loss");
    const double mv[12] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1};
    tg_tensor *fm = tg_from_data(TG_F64, 2, SH(3, 4), mv);
    for (int mode = 0; mode < 3; mode++)
        for (int mk = 0; mk < 3; mk++) {
            tgr_args a = tgr_args0(dt);
            if (agg) a.iv[0] = mode;
            else a.iv[0] = mode == 2 ? -1 : mode, a.iv[1] = mode == 2;
            tg_tensor *m = mk == 0 ? tg_to_dtype(fm, TG_BOOL) : mk == 1 ? tg_to_dtype(fm, dt)
                                                                     : tg_to_dtype(fm, TG_I64);
            char what[48];
            snprintf(what, sizeof what, "%s %d, %s mask", agg ? "mode" : "dim/all", mode,
                     mk == 0 ? "bool" : mk == 1 ? "float" : "i64");
            tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH | (mk != 1 ? TGR_S_DTYPES : 0u), &a, 2,
                                    tgr_rand(dt, 2, SH(3, 4), 1 + (uint64_t)(3 * mode + mk), -2, 2), m);
            if (s && !agg && mode == 1) s->batch = 3;
        }
    for (int mode = 0; mode < 3; mode++) { /* no elements: 0 / 0 is NaN, as PyTorch */
        tgr_args e = tgr_args0(dt);
        if (agg) e.iv[0] = mode;
        else e.iv[0] = mode == 2 ? -1 : mode, e.iv[1] = mode == 2;
        char what[48];
        snprintf(what, sizeof what, "empty, %s %d", agg ? "mode" : "dim/all", mode);
        tgr_add(out, what, 0, &e, 2, tgr_rand(dt, 2, SH(0, 4), 30 + (uint64_t)mode, -2, 2),
                tgr_rand(TG_BOOL, 2, SH(0, 4), 33 + (uint64_t)mode, 0, 2));
    }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = agg ? 2 : -1;
    tg_tensor *row = tg_narrow(fm, 0, 0, 1);
    tgr_add(out, "lead 2, row mask broadcast", TGR_S_SMOOTH | TGR_S_BCAST, &a, 2,
            tgr_rand(dt, 3, SH(2, 3, 4), 20, -2, 2), tg_to_dtype(row, TG_BOOL));
    tg_release(row);
    tg_release(fm);
    bad(out, "mask that does not broadcast", &a, TG_ERR_SHAPE, 2, tgr_rand(dt, 2, SH(3, 4), 21, -2, 2),
        tgr_rand(dt, 1, SH(3), 22, 0, 2), NULL);
    if (agg) {
        tgr_args z = tgr_args0(dt);
        bad(out, "0-d loss", &z, TG_ERR_DIM, 2, tgr_rand(dt, 0, NULL, 23, -2, 2),
            tgr_rand(dt, 0, NULL, 24, 0, 2), NULL);
        z.iv[0] = 9;
        bad(out, "mode 9", &z, TG_ERR_VALUE, 2, tgr_rand(dt, 1, SH(3), 25, -2, 2),
            tgr_rand(dt, 1, SH(3), 26, 0, 2), NULL);
    } else {
        tgr_args z = tgr_args0(dt);
        z.iv[0] = 2;
        bad(out, "dim 2", &z, TG_ERR_DIM, 2, tgr_rand(dt, 2, SH(3, 4), 27, -2, 2),
            tgr_rand(dt, 2, SH(3, 4), 28, 0, 2), NULL);
    }
}

/* Log-probabilities over the class dim (1, or 0 for a (C) input) of logits x
 * (consumed), detached and contiguous: nll_loss's input. */
static tg_tensor *class_log_probs(tg_tensor *x) {
    const bool k3 = tg_ndim(x) == 3;
    tg_tensor *xt = k3 ? tg_transpose(x, 1, 2) : tg_retain(x);
    tg_tensor *ls = tg_log_softmax(xt);
    tg_tensor *lt = k3 ? tg_transpose(ls, 1, 2) : tg_retain(ls);
    tg_tensor *c = tg_contiguous(lt);
    tg_tensor *d = tg_detach(c);
    tg_release(x);
    tg_release(xt);
    tg_release(ls);
    tg_release(lt);
    tg_release(c);
    return d;
}

/* cross_entropy / nll_loss: PyTorch's layouts (C), (N, C), (N, C, d1); ignored
 * rows; each reduction, without and with class weights (random positive, C =
 * 5); label smoothing for cross-entropy; all rows ignored (MEAN: NaN); an
 * ignore_index that is a class; bad weights. params "i:ignore_index
 * r:label_smoothing i:reduction" (nll_loss: "i:ignore_index i:reduction"),
 * inputs (input, target, weight or absent). */
static void s_class_loss(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool ce = !strcmp(op->name, "cross_entropy");
    const struct {
        int nd;
        int64_t x[3];
        int ny;
        int64_t y[2];
        const char *what;
    } lay[] = {{1, {5}, 0, {0}, "(C)"}, {2, {4, 5}, 1, {4}, "(N, C)"},
               {3, {2, 5, 3}, 2, {2, 3}, "(N, C, d1)"}};
    int k = 0;
    for (int wt = 0; wt < 2; wt++)
        for (int l = 0; l < 3; l++)
            for (int r = 0; r < 3; r++) {
                tgr_args a = tgr_args0(dt);
                a.iv[0] = -100;
                a.iv[1] = r;
                a.fv[0] = ce && r == 1 ? 0.1 : ce && wt && r == 2 ? 0.2 : 0.0;
                tg_tensor *x = tgr_rand(dt, lay[l].nd, lay[l].x, 1 + (uint64_t)k, -2, 2);
                if (!ce) x = class_log_probs(x);
                tg_tensor *y = lay[l].ny ? targets(lay[l].ny, lay[l].y, 5, 40 + (uint64_t)k)
                                         : tg_full(TG_I64, 0, NULL, 3);
                char what[48];
                snprintf(what, sizeof what, "%s%s reduction %d%s", lay[l].what,
                         wt ? " weighted" : "", r, a.fv[0] > 0 ? " smoothing" : "");
                k++;
                /* weighted: smooth in f64 only (gradcheck): test_registry's f32-vs-f64
                 * gradient check keeps the inputs without a gradient in f32, and a
                 * weight must have the input's dtype */
                tg_tensor *w = wt ? tgr_rand(dt, 1, SH(5), 70 + (uint64_t)k, 0.25, 2) : NULL;
                tgr_sample *s = wt ? tgr_add(out, what, dt == TG_F64 ? TGR_S_SMOOTH : 0u, &a, 3,
                                             x, y, w)
                                   : tgr_add(out, what, TGR_S_SMOOTH, &a, 2, x, y);
                if (s && r == 0 && lay[l].nd >= 2) s->batch = 3;
            }
    tgr_args a = tgr_args0(dt);
    a.iv[0] = -100;
    a.iv[1] = 1;
    tgr_add(out, "all ignored", 0, &a, 2, tgr_rand(dt, 2, SH(2, 3), 60, -2, 2),
            tg_full(TG_I64, 1, SH(2), -100));
    a.fv[0] = ce ? 0.1 : 0.0;
    tgr_add(out, "all ignored, weighted", 0, &a, 3, tgr_rand(dt, 2, SH(2, 3), 65, -2, 2),
            tg_full(TG_I64, 1, SH(2), -100), tgr_rand(dt, 1, SH(3), 66, 0.25, 2));
    tgr_add(out, "no rows, weighted", TGR_S_EMPTY, &a, 3, tgr_rand(dt, 2, SH(0, 3), 69, -2, 2),
            tg_zeros(TG_I64, 1, SH(0)), tgr_rand(dt, 1, SH(3), 70, 0.25, 2));
    tgr_args b = a;
    b.iv[0] = 1; /* a class: its rows are ignored */
    tg_tensor *x4 = tgr_rand(dt, 2, SH(4, 3), 67, -2, 2);
    tgr_add(out, "weighted, ignore_index 1, strided weight",
            (dt == TG_F64 ? TGR_S_SMOOTH : 0u) | TGR_S_STRIDED, &b, 3,
            ce ? x4 : class_log_probs(x4),
            tg_from_data(TG_I64, 1, SH(4), (const int64_t[]){1, 0, 2, 1}),
            tgr_strided(tgr_rand(dt, 1, SH(3), 68, 0.25, 2)));
    if (!ce) { /* a -inf log-probability at a target of weight 0: 0 * inf is NaN, as PyTorch */
        const double v[6] = {-INFINITY, -0.5, -1.0, -2.0, -0.25, -INFINITY};
        tg_tensor *lp = tg_from_data(TG_F64, 2, SH(2, 3), v), *w0 = tg_from_data(TG_F64, 1, SH(3),
                                                                       (const double[]){0, 1, 2});
        tgr_add(out, "-inf log-probs, weight 0", TGR_S_SPECIAL, &a, 3, tg_to_dtype(lp, dt),
                tg_from_data(TG_I64, 1, SH(2), (const int64_t[]){0, 2}), tg_to_dtype(w0, dt));
        tg_release(lp);
        tg_release(w0);
    }
    a.fv[0] = 0;
    bad(out, "target 5 of 5", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 2, SH(2, 5), 61, -2, 2),
        tg_full(TG_I64, 1, SH(2), 5), NULL);
    bad(out, "float targets", &a, TG_ERR_DTYPE, 2, tgr_rand(dt, 2, SH(2, 5), 62, -2, 2),
        tgr_rand(dt, 1, SH(2), 63, 0, 3), NULL);
    bad(out, "targets of another shape", &a, TG_ERR_SHAPE, 2, tgr_rand(dt, 2, SH(2, 5), 64, -2, 2),
        tg_zeros(TG_I64, 1, SH(3)), NULL);
    const struct {
        int nd;
        int64_t s[2];
        tg_dtype dt;
        tg_status want;
        const char *what;
    } bw[] = {{1, {4}, dt, TG_ERR_SHAPE, "weight (4) for 5 classes"},
              {2, {1, 5}, dt, TG_ERR_SHAPE, "weight (1, 5)"},
              {0, {0}, dt, TG_ERR_SHAPE, "0-d weight"},
              {1, {5}, dt == TG_F32 ? TG_F64 : TG_F32, TG_ERR_DTYPE, "weight of another dtype"},
              {1, {5}, TG_I64, TG_ERR_DTYPE, "i64 weight"}};
    for (int i = 0; i < 5; i++)
        bad(out, bw[i].what, &a, bw[i].want, 3, tgr_rand(dt, 2, SH(2, 5), 140 + (uint64_t)i, -2, 2),
            tg_zeros(TG_I64, 1, SH(2)),
            tgr_rand(bw[i].dt, bw[i].nd, bw[i].s, 150 + (uint64_t)i, 0, 2));
    a.iv[1] = TG_REDUCTION_BATCHMEAN;
    bad(out, "reduction batchmean", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 2, SH(2, 5), 160, -2, 2),
        tg_zeros(TG_I64, 1, SH(2)), NULL);
}

/* logits (lead..., V) with 0-3 leading dims, targets with ignored rows, the
 * options; params "i:impl r:T i:ignore i:chunk b:entropy b:egrad" */
static void s_logprob(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const struct {
        int nd;
        int64_t s[3];
        const char *what;
    } lead[] = {{0, {0}, "lead 0"}, {1, {5}, "lead 1"}, {2, {2, 3}, "lead 2"}, {3, {2, 2, 3}, "lead 3"}};
    const int64_t V = 7;
    int k = 0;
    for (int i = 0; i < 4; i++)
        for (int impl = 0; impl < 2; impl++) {
            tgr_args a = tgr_args0(dt);
            a.iv[0] = impl;
            a.fv[0] = impl ? 0.7 : 1.0;
            a.iv[1] = -100;
            a.iv[2] = i == 2 ? 2 : 0;
            a.iv[3] = 1;
            a.iv[4] = i != 3 || impl;
            int64_t zs[4];
            for (int d = 0; d < lead[i].nd; d++) zs[d] = lead[i].s[d];
            zs[lead[i].nd] = V;
            char what[48];
            snprintf(what, sizeof what, "%s %s%s", lead[i].what, impl ? "composite T 0.7" : "fused",
                     a.iv[4] ? "" : " entropy_grad off");
            tg_tensor *y = lead[i].nd ? targets(lead[i].nd, lead[i].s, V, 50 + (uint64_t)k)
                                      : tg_full(TG_I64, 0, NULL, 2);
            tgr_sample *s = tgr_add(out, what, TGR_S_SMOOTH, &a, 2,
                                    tgr_rand(dt, lead[i].nd + 1, zs, 10 + (uint64_t)k, -3, 3), y);
            if (s && lead[i].nd >= 1) s->batch = 3;
            k++;
        }
    tgr_args a = tgr_args0(dt);
    a.fv[0] = 1.0;
    a.iv[1] = -100;
    a.iv[2] = 1;
    a.iv[3] = 0; /* no entropy */
    tgr_add(out, "no entropy, transposed, chunk 1", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 2,
            tgr_strided(tgr_rand(dt, 2, SH(4, V), 80, -3, 3)), targets(1, SH(4), V, 81))->batch = 3;
    a.iv[3] = 1;
    a.iv[4] = 1;
    tgr_add(out, "empty rows", TGR_S_EMPTY, &a, 2, tgr_rand(dt, 2, SH(0, V), 82, -3, 3),
            tg_zeros(TG_I64, 1, SH(0)));
    /* no rows with leading dims, each impl, a temperature, a chunk size, the
     * entropy's gradient off, no entropy */
    for (int k2 = 0; k2 < 4; k2++) {
        tgr_args e = a;
        e.iv[0] = k2 & 1;
        e.fv[0] = k2 & 1 ? 0.7 : 1.0;
        e.iv[2] = k2 >= 2 ? 2 : 0;
        e.iv[3] = k2 != 3;
        e.iv[4] = k2 != 2;
        char what[48];
        snprintf(what, sizeof what, "empty (2, 0, V) %s%s", k2 & 1 ? "composite" : "fused",
                 k2 == 2 ? ", no entropy grad" : k2 == 3 ? ", no entropy, chunk 2" : "");
        tgr_add(out, what, TGR_S_EMPTY, &e, 2, tgr_rand(dt, 3, SH(2, 0, V), 86 + (uint64_t)k2, -3, 3),
                tg_zeros(TG_I64, 2, SH(2, 0)));
    }
    bad(out, "no vocabulary", &a, TG_ERR_SHAPE, 2, tgr_rand(dt, 2, SH(2, 0), 90, -3, 3),
        tg_zeros(TG_I64, 1, SH(2)), NULL);
    bad(out, "target 7 of 7", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 2, SH(2, V), 83, -3, 3),
        tg_full(TG_I64, 1, SH(2), V), NULL);
    bad(out, "targets of another shape", &a, TG_ERR_SHAPE, 2, tgr_rand(dt, 2, SH(2, V), 84, -3, 3),
        tg_zeros(TG_I64, 1, SH(3)), NULL);
    a.fv[0] = 0;
    bad(out, "temperature 0", &a, TG_ERR_VALUE, 2, tgr_rand(dt, 2, SH(2, V), 85, -3, 3),
        tg_zeros(TG_I64, 1, SH(2)), NULL);
}

/* hidden (lead..., d), weight (V, d), targets, bias or none; params "i:impl r:T
 * i:ignore i:chunk_rows b:entropy b:egrad i:vocab_block" */
static void s_linear(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const int64_t d = 4, V = 9;
    const struct {
        int nd;
        int64_t s[3];
        const char *what;
    } lead[] = {{1, {5}, "lead 1"}, {2, {2, 3}, "lead 2"}, {3, {2, 2, 2}, "lead 3"}};
    int k = 0;
    for (int i = 0; i < 3; i++)
        for (int v = 0; v < 2; v++) {
            tgr_args a = tgr_args0(dt);
            a.iv[0] = v && i == 0; /* composite once */
            a.fv[0] = v ? 0.8 : 1.0;
            a.iv[1] = -100;
            a.iv[2] = v ? 2 : 0;
            a.iv[3] = 1;
            a.iv[4] = 1;
            a.iv[5] = v ? 4 : 0;
            int64_t hs[4];
            for (int q = 0; q < lead[i].nd; q++) hs[q] = lead[i].s[q];
            hs[lead[i].nd] = d;
            char what[48];
            snprintf(what, sizeof what, "%s%s", lead[i].what,
                     v ? (a.iv[0] ? " composite, bias" : " chunks 2 blocks 4, bias") : "");
            tg_tensor *h = tgr_rand(dt, lead[i].nd + 1, hs, 1 + (uint64_t)k, -1, 1);
            tg_tensor *w = tgr_rand(dt, 2, SH(V, d), 20 + (uint64_t)k, -1, 1);
            tg_tensor *y = targets(lead[i].nd, lead[i].s, V, 40 + (uint64_t)k);
            tgr_sample *s = v ? tgr_add(out, what, TGR_S_SMOOTH, &a, 4, h, w, y,
                                        tgr_rand(dt, 1, SH(V), 60 + (uint64_t)k, -1, 1))
                              : tgr_add(out, what, TGR_S_SMOOTH, &a, 3, h, w, y);
            if (s) {
                s->batch = 5;
                if (!v) { /* bias absent: a fourth input NULL */
                    s->nin = 4;
                    s->in[3] = NULL;
                }
            }
            k++;
        }
    tgr_args a = tgr_args0(dt);
    a.fv[0] = 1.0;
    a.iv[1] = -100;
    a.iv[3] = 1;
    a.iv[4] = 0;
    tgr_sample *s = tgr_add(out, "transposed hidden, entropy_grad off", TGR_S_SMOOTH | TGR_S_STRIDED,
                            &a, 3, tgr_strided(tgr_rand(dt, 2, SH(3, d), 80, -1, 1)),
                            tgr_rand(dt, 2, SH(V, d), 81, -1, 1), targets(1, SH(3), V, 82));
    if (s) s->nin = 4, s->in[3] = NULL, s->batch = 5;
    /* no rows: (0, d) and (2, 0, d), each impl, a temperature, a bias, chunks and
     * vocabulary blocks, the entropy's gradient off; and hidden states of size 0
     * (the logits are the bias) */
    for (int k2 = 0; k2 < 4; k2++) {
        tgr_args e = a;
        e.iv[0] = k2 == 1;
        e.fv[0] = k2 & 1 ? 0.8 : 1.0;
        e.iv[2] = k2 == 2 ? 2 : 0;
        e.iv[4] = k2 != 3;
        e.iv[5] = k2 == 2 ? 4 : 0;
        char what[48];
        snprintf(what, sizeof what, "empty%s%s", k2 >= 2 ? " (2, 0, d)" : " (0, d)",
                 k2 == 1 ? " composite T 0.8, bias" : k2 == 2 ? " chunks 2 blocks 4, bias"
                 : k2 == 3 ? " T 0.8, entropy_grad off" : "");
        tg_tensor *h = k2 >= 2 ? tgr_rand(dt, 3, SH(2, 0, d), 100 + (uint64_t)k2, -1, 1)
                               : tgr_rand(dt, 2, SH(0, d), 100 + (uint64_t)k2, -1, 1);
        tg_tensor *y = k2 >= 2 ? tg_zeros(TG_I64, 2, SH(2, 0)) : tg_zeros(TG_I64, 1, SH(0));
        tg_tensor *w = tgr_rand(dt, 2, SH(V, d), 104 + (uint64_t)k2, -1, 1);
        s = k2 == 1 || k2 == 2
                ? tgr_add(out, what, TGR_S_EMPTY, &e, 4, h, w, y,
                          tgr_rand(dt, 1, SH(V), 108 + (uint64_t)k2, -1, 1))
                : tgr_add(out, what, TGR_S_EMPTY, &e, 3, h, w, y);
        if (s && s->nin == 3) s->nin = 4, s->in[3] = NULL;
    }
    for (int impl = 0; impl < 2; impl++) {
        tgr_args e = a;
        e.iv[0] = impl;
        e.iv[4] = 1;
        s = tgr_add(out, impl ? "hidden size 0, composite" : "hidden size 0", TGR_S_EMPTY, &e, 4,
                    tgr_rand(dt, 2, SH(3, 0), 112, -1, 1), tgr_rand(dt, 2, SH(V, 0), 113, -1, 1),
                    targets(1, SH(3), V, 114), tgr_rand(dt, 1, SH(V), 115, -1, 1));
    }
    s = tgr_add(out, "weight (V, d + 1)", TGR_S_BAD, &a, 3, tgr_rand(dt, 2, SH(3, d), 83, -1, 1),
                tgr_rand(dt, 2, SH(V, d + 1), 84, -1, 1), targets(1, SH(3), V, 85));
    if (s) s->nin = 4, s->in[3] = NULL, s->want = TG_ERR_SHAPE;
    s = tgr_add(out, "target 9 of 9", TGR_S_BAD, &a, 3, tgr_rand(dt, 2, SH(2, d), 86, -1, 1),
                tgr_rand(dt, 2, SH(V, d), 87, -1, 1), tg_full(TG_I64, 1, SH(2), V));
    if (s) s->nin = 4, s->in[3] = NULL, s->want = TG_ERR_VALUE;
}

/* in-place: target (3, 4) and others broadcast, of another float dtype, strided;
 * float values in [op->lo, op->hi) when the row gives a range, else [-2, 2) */
static void s_inplace(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const bool two = op->nin == 2;
    const bool div = !strcmp(op->name, "div_"), pow_ = !strcmp(op->name, "pow_");
    const double lo = op->lo < op->hi ? op->lo : -2, hi = op->lo < op->hi ? op->hi : 2;
    tgr_args a = tgr_args0(dt);
    a.fv[0] = -1.5;
#define T(dt_, nd_, sh_, seed_, lo_, hi_)                                                      \
    ((dt_) == TG_F32 || (dt_) == TG_F64 ? tgr_rand(dt_, nd_, sh_, seed_, lo, hi)               \
                                        : tgr_rand(dt_, nd_, sh_, seed_, lo_, hi_))
#define ADD(what, flags, x, y)                                                                  \
    do {                                                                                        \
        tg_tensor *x_ = (x), *y_ = (y);                                                         \
        const unsigned f_ = (flags);                                                            \
        tgr_sample *s_ = two ? tgr_add(out, what, f_, &a, 2, x_, y_)                            \
                             : (tg_release(y_), tgr_add(out, what, f_, &a, 1, x_));             \
        if (s_ && (f_ & TGR_S_BAD)) s_->want = TG_ERR_SHAPE;                                    \
        if (s_ && !(f_ & (TGR_S_BAD | TGR_S_BCAST))) s_->batch = two ? 3 : 1;                   \
    } while (0)
    ADD("same shape", TGR_S_SMOOTH, T(dt, 2, SH(3, 4), 1, -2, 2), T(dt, 2, SH(3, 4), 2, -2, 2));
    ADD("broadcast other", TGR_S_SMOOTH | TGR_S_BCAST, T(dt, 2, SH(3, 4), 3, -2, 2),
        T(dt, 1, SH(4), 4, -2, 2));
    ADD("lead 2, 0-d other", TGR_S_SMOOTH | TGR_S_BCAST, T(dt, 3, SH(2, 3, 4), 5, -2, 2),
        T(dt, 0, NULL, 6, -2, 2));
    ADD("transposed target", TGR_S_SMOOTH | TGR_S_STRIDED, tgr_strided(T(dt, 2, SH(3, 4), 7, -2, 2)),
        tgr_strided(T(dt, 2, SH(3, 4), 8, -2, 2)));
    ADD("empty", TGR_S_EMPTY | TGR_S_BCAST, T(dt, 2, SH(0, 4), 9, -2, 2), T(dt, 1, SH(4), 10, -2, 2));
    if (two) ADD("other that widens the target", TGR_S_BAD, T(dt, 1, SH(4), 11, -2, 2),
                 T(dt, 2, SH(3, 4), 12, -2, 2));
#undef ADD
    if (div || pow_) /* +-0, +-inf, NaN, tiny and huge values as the target */
        tgr_add(out, "special target", TGR_S_SPECIAL, &a, 2, tgr_specials(dt, 2, SH(3, 3)),
                T(dt, 2, SH(3, 3), 24, -2, 2));
    /* mixed dtypes: computed in the promoted dtype, written back converted (copy_
     * converts anything); a float into an i64 target refused, as PyTorch */
    const tg_dtype other = dt == TG_F32 ? TG_F64 : TG_F32;
    const bool copy = !strcmp(op->name, "copy_"), fill = !strcmp(op->name, "fill_");
    if (two) {
        tgr_add(out, "other float other", TGR_S_DTYPES, &a, 2, T(dt, 2, SH(3, 4), 13, -2, 2),
                T(other, 1, SH(4), 14, -2, 2));
        tgr_add(out, "i64 other", TGR_S_DTYPES, &a, 2, T(dt, 2, SH(3, 4), 15, -2, 2),
                T(TG_I64, 1, SH(4), 16, -3, 4));
        /* div_ of an i64 target is refused (its f32 quotient), as PyTorch; pow_ of
         * one by i64 exponents from -3 (PyTorch's integer rules for negative ones) */
        tgr_sample *si = tgr_add(out, "i64 target", div ? TGR_S_BAD : TGR_S_DTYPES, &a, 2,
                                 T(TG_I64, 2, SH(3, 4), 17, -3, 4),
                                 T(TG_I64, 2, SH(3, 4), 18, -3, 4));
        if (si && div) si->want = TG_ERR_DTYPE;
        /* PyTorch refuses a bool operand of sub */
        const bool refuse_bool = !strcmp(op->name, "sub_") || div;
        tgr_sample *sb = tgr_add(out, "i64 target, bool other",
                                 refuse_bool ? TGR_S_BAD : TGR_S_DTYPES, &a, 2,
                                 T(TG_I64, 2, SH(3, 4), 19, -3, 4),
                                 T(TG_BOOL, 1, SH(4), 20, 0, 2));
        if (sb && refuse_bool) sb->want = TG_ERR_DTYPE;
        if (div || pow_) { /* bool / bool is f32, bool ** bool has no kernel: refused */
            tgr_sample *bb = tgr_add(out, "bool target", TGR_S_BAD, &a, 2,
                                     T(TG_BOOL, 2, SH(3, 4), 25, 0, 2),
                                     T(TG_BOOL, 2, SH(3, 4), 26, 0, 2));
            if (bb) bb->want = TG_ERR_DTYPE;
        }
        tgr_sample *s = tgr_add(out, "float into an i64 target", copy ? TGR_S_DTYPES : TGR_S_BAD,
                                &a, 2, T(TG_I64, 2, SH(3, 4), 21, -3, 4),
                                T(dt, 1, SH(4), 22, -2, 2));
        if (s && !copy) s->want = TG_ERR_DTYPE;
    } else if (!fill) { /* scale_ of an i64 target by -1.5: f32 into i64, refused */
        tgr_sample *s = tgr_add(out, "i64 target", TGR_S_BAD, &a, 1,
                                T(TG_I64, 2, SH(3, 4), 23, -3, 4));
        if (s) s->want = TG_ERR_DTYPE;
    }
#undef T
}

#define LOSS(NAME, TORCH, PARAMS, NIN, NREQ, DIFF, SAMPLES)                                    \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = NIN,     \
     .nin_required = NREQ, .nout = 1, .diff = DIFF, .flags = TGR_COMPOSITE, .apply = ap_##NAME, \
     .samples = SAMPLES}
#define INPLACE(NAME, TORCH, PARAMS, NIN, DIFF)                                                \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = NIN,     \
     .nin_required = NIN, .nout = 0, .diff = DIFF, .flags = TGR_INPLACE, .apply = ap_##NAME,   \
     .samples = s_inplace}
/* an in-place row whose float samples take values in [LO, HI) */
#define INPLACE_IN(NAME, TORCH, LO, HI)                                                         \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = "", .nin = 2,            \
     .nin_required = 2, .nout = 0, .diff = 3, .flags = TGR_INPLACE, .apply = ap_##NAME,       \
     .samples = s_inplace, .lo = LO, .hi = HI}
#define LP "i:impl r:T i:ignore i:chunk b:entropy b:egrad"
#define LP_ARGS "impl, T, ignore, chunk, entropy, egrad"

/* The fused op's samples for the loss entry: its loss is one number (no
 * batch dim), and with the entropy detached (entropy_grad off) the loss
 * still varies with the entropy, so a numerical gradient sees a term the
 * analytical one leaves out by contract: no gradcheck there. */
static void s_linear_loss(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    const int first = out->n;
    s_linear(op, dt, out);
    for (int k = first; k < out->n; k++) {
        out->s[k].batch = 0;
        if (!out->s[k].a.iv[4]) out->s[k].flags &= ~(unsigned)TGR_S_SMOOTH;
    }
}

tgr_op TGR_ROWS_LOSS[] = {
    LOSS(mse_loss, "R.of_difference(F.mse_loss, a, b, reduction=R.reduction(reduction))", "i:reduction", 2, 2, 3,
         s_pair_loss),
    LOSS(smooth_l1_loss,
         "R.of_difference(F.smooth_l1_loss, a, b, reduction=R.reduction(reduction), beta=beta)",
         "i:reduction r:beta=1", 2, 2, 3, s_pair_loss),
    LOSS(binary_cross_entropy_with_logits,
         "F.binary_cross_entropy_with_logits(a, b, pos_weight=c, reduction=R.reduction(reduction))",
         "i:reduction", 3, 2, 7, s_pair_loss),
    LOSS(kl_div, "F.kl_div(a, b, reduction=R.reduction(reduction), log_target=bool(log_target))",
         "i:reduction b:log_target", 2, 2, 3, s_pair_loss),
    LOSS(masked_mean, "R.masked_mean(a, b, dim, all)", "d:dim b:all", 2, 2, 3, s_masked),
    LOSS(agg_loss, "R.agg_loss(a, b, mode)", "i:mode", 2, 2, 3, s_masked),
    LOSS(cross_entropy,
         "F.cross_entropy(a, b, weight=c, ignore_index=ignore_index, "
         "label_smoothing=label_smoothing, reduction=R.reduction(reduction))",
         "i:ignore_index=-100 r:label_smoothing i:reduction", 3, 2, 1, s_class_loss),
    LOSS(nll_loss,
         "F.nll_loss(a, b, weight=c, ignore_index=ignore_index, reduction=R.reduction(reduction))",
         "i:ignore_index=-100 i:reduction", 3, 2, 1, s_class_loss),
    {.name = "logprob_entropy", .c_name = "tg_logprob_entropy", .torch = "R.logprob(a, b, " LP_ARGS ")",
     .params = LP, .nin = 2, .nin_required = 2, .nout = 2, .diff = 1,
     .apply = ap_logprob_entropy, .samples = s_logprob},
    {.name = "logprob_entropy_lse", .c_name = "tg_logprob_entropy_lse",
     .torch = "R.logprob(a, b, " LP_ARGS ", lse=True)", .params = LP, .nin = 2,
     .nin_required = 2, .nout = 3, .diff = 1, .apply = ap_logprob_entropy_lse,
     .samples = s_logprob},
    {.name = "linear_logprob_entropy", .c_name = "tg_linear_logprob_entropy",
     .torch = "R.linear_logprob(a, b, c, d, impl, T, ignore, entropy, egrad)",
     .params = "i:impl r:T i:ignore i:chunk_rows b:entropy b:egrad i:vocab_block", .nin = 4,
     .nin_required = 3, .nout = 3, .diff = 11, .apply = ap_linear_logprob_entropy,
     .samples = s_linear},
    INPLACE(add_, "a.add_(b)", "", 2, 3),
    INPLACE(sub_, "a.sub_(b)", "", 2, 3),
    INPLACE(mul_, "a.mul_(b)", "", 2, 3),
    INPLACE(scale_, "R.scale_(a, k)", "r:k", 1, 1),
    INPLACE(copy_, "a.copy_(b)", "", 2, 3),
    INPLACE(fill_, "a.fill_(value)", "r:value", 1, 1),
    /* the latest rows last: the op programs' byte form numbers the rows */
    INPLACE_IN(div_, "a.div_(b)", 0.5, 2),
    INPLACE_IN(pow_, "a.pow_(b)", 0.5, 2),
    {.name = "linear_loss", .c_name = "tg_linear_loss",
     .torch = "R.linear_loss(a, b, c, d, T, ignore, egrad)",
     .params = "i:impl r:T i:ignore i:chunk_rows b:entropy b:egrad i:vocab_block", .nin = 4,
     .nin_required = 3, .nout = 1, .diff = 11, .apply = ap_linear_loss,
     .samples = s_linear_loss},
};
const int TGR_N_LOSS = (int)(sizeof TGR_ROWS_LOSS / sizeof TGR_ROWS_LOSS[0]);
