/* tests/test_losses.c - tg_mse_loss, tg_smooth_l1_loss,
 * tg_binary_cross_entropy_with_logits, tg_masked_mean, and the class losses
 * (cross-entropy and NLL with class weights, kl_div with 'batchmean'): values and both
 * inputs' gradients against numbers computed with PyTorch 1.13 (float64,
 * F.mse_loss, F.smooth_l1_loss, F.binary_cross_entropy_with_logits, and
 * (x * m).sum(dim) / m.sum(dim)), each reduction, the kinks of smooth L1,
 * logits of +-1000, gradcheck, and the error paths. */
#include "tg_ops_test_util.h"

TestSuite(losses, .init = tgt_setup, .fini = tgt_teardown);

typedef tg_tensor *(*loss_fn)(tg_tensor *x, tg_tensor *t, const void *arg);

/* x (2, 3) and t (2, 3) requiring grad, the loss, backward of its sum, and
 * the value and gradients against PyTorch's. */
static void check(loss_fn f, const void *arg, int64_t n_out, const double *want,
                  const double *gx, const double *gt) {
    tg_tensor *x = tgt_f64(2, (int64_t[]){2, 3}, (double[]){0.5, -1.5, 2.0, 3.0, -0.25, 0.0});
    tg_tensor *t = tgt_f64(2, (int64_t[]){2, 3}, (double[]){1.0, 0.0, 1.0, 0.0, 1.0, 0.5});
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    tg_tensor *l = f(x, t, arg);
    cr_assert_not_null(l, "%s", tg_last_error());
    tgt_assert_values(l, want, n_out, 1e-14);
    tg_tensor *sl = tg_sum(l);
    cr_assert_eq(tg_backward(sl, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *ga = tg_grad(x), *gb = tg_grad(t);
    tgt_assert_values(ga, gx, 6, 1e-14);
    tgt_assert_values(gb, gt, 6, 1e-14);
    TGO_RELEASE(x, t, l, sl, ga, gb);
}

static tg_tensor *mse(tg_tensor *x, tg_tensor *t, const void *arg) {
    return tg_mse_loss(x, t, *(const tg_reduction *)arg);
}
typedef struct {
    tg_reduction r;
    double beta;
} sl1_arg;
static tg_tensor *sl1(tg_tensor *x, tg_tensor *t, const void *arg) {
    const sl1_arg *a = arg;
    return tg_smooth_l1_loss(x, t, a->r, a->beta);
}
typedef struct {
    tg_reduction r;
    bool pw;
} bce_arg;
static tg_tensor *bce(tg_tensor *x, tg_tensor *t, const void *arg) {
    const bce_arg *a = arg;
    tg_tensor *pw = a->pw ? tgt_f64(1, (int64_t[]){3}, (double[]){2.0, 0.5, 1.0}) : NULL;
    tg_tensor *l = tg_binary_cross_entropy_with_logits(x, t, pw, a->r);
    tg_release(pw);
    return l;
}

Test(losses, mse_loss_as_pytorch) {
    tg_reduction none = TG_REDUCTION_NONE, mean = TG_REDUCTION_MEAN;
    check(mse, &none, 6, (double[]){0.25, 2.25, 1.0, 9.0, 1.5625, 0.25},
          (double[]){-1.0, -3.0, 2.0, 6.0, -2.5, -1.0}, (double[]){1.0, 3.0, -2.0, -6.0, 2.5, 1.0});
    check(mse, &mean, 1, (double[]){2.385416666666667},
          (double[]){-0.16666666666666666, -0.5, 0.3333333333333333, 1.0, -0.41666666666666663,
                     -0.16666666666666666},
          (double[]){0.16666666666666666, 0.5, -0.3333333333333333, -1.0, 0.41666666666666663,
                     0.16666666666666666});
}

Test(losses, smooth_l1_loss_as_pytorch) {
    sl1_arg m1 = {TG_REDUCTION_MEAN, 1.0}, s05 = {TG_REDUCTION_SUM, 0.5}, n0 = {TG_REDUCTION_NONE, 0};
    check(sl1, &m1, 1, (double[]){0.833333333333333},
          (double[]){-0.08333333333333333, -0.16666666666666666, 0.16666666666666666,
                     0.16666666666666666, -0.16666666666666666, -0.08333333333333333},
          (double[]){0.08333333333333333, 0.16666666666666666, -0.16666666666666666,
                     -0.16666666666666666, 0.16666666666666666, 0.08333333333333333});
    check(sl1, &s05, 1, (double[]){6.25}, (double[]){-1, -1, 1, 1, -1, -1},
          (double[]){1, 1, -1, -1, 1, 1});
    check(sl1, &n0, 6, (double[]){0.5, 1.5, 1.0, 3.0, 1.25, 0.5},
          (double[]){-1, -1, 1, 1, -1, -1}, (double[]){1, 1, -1, -1, 1, 1});
}

/* At |d| == beta both sides give the gradient sign(d) (PyTorch: 1, -1); at
 * d == 0 the gradient is 0, also for beta 0 where PyTorch's kernel gives -1
 * (docs/api.md). */
Test(losses, smooth_l1_kinks) {
    tg_tensor *x = tgt_f64(1, (int64_t[]){4}, (double[]){1, -1, 0, 2});
    tg_tensor *z = tg_zeros(TG_F64, TG_SHAPE(4));
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *l = tg_smooth_l1_loss(x, z, TG_REDUCTION_SUM, 1.0);
    TGO_ASSERT_VALUES(l, 0, 2.5);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK);
    TGO_ASSERT_GRAD(x, 0, 1, -1, 0, 1);
    tg_zero_grad(x);
    tg_tensor *l0 = tg_smooth_l1_loss(x, z, TG_REDUCTION_SUM, 0.0);
    TGO_ASSERT_VALUES(l0, 0, 4);
    cr_assert_eq(tg_backward(l0, NULL, false), TG_OK);
    TGO_ASSERT_GRAD(x, 0, 1, -1, 0, 1);
    TGO_RELEASE(x, z, l, l0);
}

Test(losses, bce_with_logits_as_pytorch) {
    bce_arg mean = {TG_REDUCTION_MEAN, false}, pw = {TG_REDUCTION_SUM, true};
    check(bce, &mean, 1, (double[]){0.895015370869727},
          (double[]){-0.0629234447996909, 0.030404253967726058, -0.01986715367035295,
                     0.15876235447040557, -0.09369608348096635, 0.0},
          (double[]){-0.08333333333333333, 0.25, -0.3333333333333333, -0.5, 0.041666666666666664,
                     -0.0});
    check(bce, &pw, 1, (double[]){5.431199499459048},
          (double[]){-0.7550813375962908, 0.18242552380635635, -0.11920292202211769,
                     0.9525741268224334, -0.28108825044289903, 0.0},
          (double[]){-0.025923015819893314, 0.6492933610086238, -2.0, -2.951412648426258,
                     -0.16296970993942178, 0.0});
}

/* Logits of +-1000 with the wrong label: 1000, gradients +-1, nothing infinite. */
Test(losses, bce_with_logits_is_stable_for_large_logits) {
    tg_tensor *x = tgt_f64(1, (int64_t[]){2}, (double[]){1000, -1000});
    tg_tensor *t = tgt_f64(1, (int64_t[]){2}, (double[]){0, 1});
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *l = tg_binary_cross_entropy_with_logits(x, t, NULL, TG_REDUCTION_NONE);
    TGO_ASSERT_VALUES(l, 0, 1000, 1000);
    tg_tensor *s = tg_sum(l);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK);
    TGO_ASSERT_GRAD(x, 0, 1, -1);
    TGO_RELEASE(x, t, l, s);
}

Test(losses, masked_mean_along_a_dim_and_over_all) {
    tg_tensor *x = tgt_f64(2, (int64_t[]){2, 3}, (double[]){0.5, -1.5, 2.0, 3.0, -0.25, 0.0});
    tg_tensor *m = tgt_f64(2, (int64_t[]){2, 3}, (double[]){1, 0, 1, 1, 1, 0});
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *r = tg_masked_mean(x, m, -1, false), *rs = tg_sum(r);
    TGO_ASSERT_VALUES(r, 1e-15, 1.25, 1.375);
    cr_assert_eq(tg_backward(rs, NULL, false), TG_OK);
    TGO_ASSERT_GRAD(x, 1e-15, 0.5, 0, 0.5, 0.5, 0.5, 0);
    tg_zero_grad(x);
    tg_tensor *a = tg_masked_mean(x, m, 0, true);
    TGO_ASSERT_VALUES(a, 1e-15, 1.3125);
    cr_assert_eq(tg_backward(a, NULL, false), TG_OK);
    TGO_ASSERT_GRAD(x, 1e-15, 0.25, 0, 0.25, 0.25, 0.25, 0);
    /* a mask of one row, broadcast over the rows */
    tg_tensor *m1 = tgt_f64(1, (int64_t[]){3}, (double[]){0, 1, 1});
    tg_tensor *b = tg_masked_mean(x, m1, 1, false);
    TGO_ASSERT_VALUES(b, 1e-15, 0.25, -0.125);
    TGO_RELEASE(x, m, r, rs, a, m1, b);
}

typedef struct {
    int which;
} gc_loss;
static tg_tensor *gc_fn(tg_tensor *const *in, void *user) {
    const gc_loss *c = user;
    switch (c->which) {
    case 0: return tg_mse_loss(in[0], in[1], TG_REDUCTION_MEAN);
    case 1: return tg_smooth_l1_loss(in[0], in[1], TG_REDUCTION_SUM, 0.7);
    case 2: return tg_binary_cross_entropy_with_logits(in[0], in[1], NULL, TG_REDUCTION_MEAN);
    default: return tg_masked_mean(in[0], in[1], 1, false);
    }
}

Test(losses, gradients_against_central_differences) {
    for (int k = 0; k < 4; k++) {
        tg_tensor *in[2] = {tgo_randn(TG_F64, TG_SHAPE(3, 4), 11 + (uint64_t)k, true),
                            tgo_rand(TG_F64, TG_SHAPE(3, 4), 21 + (uint64_t)k, 0.2, 1, true)};
        gc_loss c = {k};
        tg_clear_error();
        cr_assert_eq(tg_gradcheck(gc_fn, &c, 2, in, NULL), TG_OK, "loss %d: %s", k,
                     tg_last_error());
        TGO_RELEASE(in[0], in[1]);
    }
}

Test(losses, errors) {
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(2, 3)), *y = tg_zeros(TG_F64, TG_SHAPE(4));
    tg_tensor *f = tg_zeros(TG_F32, TG_SHAPE(2, 3));
    tg_clear_error();
    cr_assert_null(tg_mse_loss(x, y, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_SHAPE, NULL);
    /* f64 with f32 promotes to f64, as PyTorch's mse_loss */
    tg_tensor *m = tg_mse_loss(x, f, TG_REDUCTION_MEAN);
    cr_assert_not_null(m, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(m), TG_F64);
    tg_release(m);
    tg_clear_error();
    cr_assert_null(tg_mse_loss(x, x, (tg_reduction)7));
    tgt_assert_error(TG_ERR_VALUE, "tg_mse_loss", "reduction", NULL);
    tg_clear_error();
    cr_assert_null(tg_smooth_l1_loss(x, x, TG_REDUCTION_SUM, -1));
    tgt_assert_error(TG_ERR_VALUE, "beta", NULL);
    tg_clear_error();
    cr_assert_null(tg_smooth_l1_loss(x, x, TG_REDUCTION_SUM, NAN));
    tgt_assert_error(TG_ERR_VALUE, "beta", NULL);
    tg_clear_error();
    cr_assert_null(tg_binary_cross_entropy_with_logits(NULL, x, NULL, TG_REDUCTION_SUM));
    tgt_assert_error(TG_ERR_NULL, "input", NULL);
    tg_clear_error();
    cr_assert_null(tg_masked_mean(x, x, 2, false));
    tgt_assert_error(TG_ERR_DIM, NULL);
    cr_assert_eq(tg_live().nodes, 0);
    TGO_RELEASE(x, y, f);
}

/* ---- cross-entropy ------------------------------------------------------------------- */

/* (3, 4) logits, targets [2, ignored, 0]: value and gradient as PyTorch's
 * F.cross_entropy for each reduction and label smoothing, without class
 * weights or with weight [0.5, 2, 1.5, 0.25] (when `weighted`). */
static void check_ce_of(bool weighted, double eps, tg_reduction r, int64_t n_out,
                        const double *want, const double *gx) {
    tg_tensor *x = tgt_f64(2, (int64_t[]){3, 4},
                           (double[]){0.5, -1.5, 2.0, 0.1, 3.0, -0.25, 0.0, 1.0, 1.0, 1.0, -2.0,
                                      0.3});
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){2, -100, 0});
    tg_tensor *w = weighted ? TGT_F64(TG_SHAPE(4), 0.5, 2.0, 1.5, 0.25) : NULL;
    tg_tensor *l = tg_cross_entropy(x, y, w, -100, eps, r);
    cr_assert_not_null(l, "%s", tg_last_error());
    tgt_assert_values(l, want, n_out, 1e-14);
    tg_tensor *sl = tg_sum(l);
    cr_assert_eq(tg_backward(sl, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(x);
    tgt_assert_values(g, gx, 12, 1e-14);
    TGO_RELEASE(x, y, w, l, sl, g);
}
static void check_ce(double eps, tg_reduction r, int64_t n_out, const double *want,
                     const double *gx) {
    check_ce_of(false, eps, r, n_out, want, gx);
}

Test(losses, cross_entropy_as_pytorch) {
    check_ce(0, TG_REDUCTION_MEAN, 1, (double[]){0.6366042673524859},
             (double[]){0.07952483086992809, 0.010762515510125439, -0.14359443466976013,
                        0.05330708828970663, 0, 0, 0, 0, -0.30364223023044745,
                        0.19635776976955255, 0.009776077708077998, 0.09750838275281691});
    check_ce(0.1, TG_REDUCTION_MEAN, 1, (double[]){0.7691042673524859},
             (double[]){0.0670248308699281, -0.001737484489874562, -0.10609443466976015,
                        0.040807088289706625, 0, 0, 0, 0, -0.2661422302304475,
                        0.18385776976955254, -0.0027239222919220023, 0.08500838275281691});
    check_ce(0.2, TG_REDUCTION_SUM, 1, (double[]){1.8032085347049718},
             (double[]){0.10904966173985618, -0.028474968979749125, -0.13718886933952035,
                        0.056614176579413256, 0, 0, 0, 0, -0.4572844604608949,
                        0.34271553953910516, -0.030447844583844003, 0.14501676550563386});
    check_ce(0.1, TG_REDUCTION_NONE, 3, (double[]){0.5110387875427433, 0, 1.0271697471622285},
             (double[]){0.1340496617398562, -0.003474968979749124, -0.2121888693395203,
                        0.08161417657941325, 0, 0, 0, 0, -0.532284460460895,
                        0.3677155395391051, -0.005447844583844005, 0.17001676550563383});
}

/* Class weights: a row's loss is w[y] (-log p[y]), MEAN divides by the kept
 * rows' w[y], and label smoothing's term is -sum_c w_c log p_c (PyTorch's
 * LossNLL.cpp); numbers from PyTorch 1.13, float64. */
Test(losses, cross_entropy_class_weights_as_pytorch) {
    check_ce_of(true, 0, TG_REDUCTION_MEAN, 1, (double[]){0.48757152744761456},
                (double[]){0.11928724630489214, 0.016143773265188156, -0.2153916520046402,
                           0.07996063243455995, 0, 0, 0, 0, -0.15182111511522373,
                           0.09817888488477627, 0.004888038854038999, 0.048754191376408455});
    check_ce_of(true, 0.1, TG_REDUCTION_MEAN, 1, (double[]){0.6677035781090548},
                (double[]){0.1095580349543328, -0.009327086788379828, -0.17473439548783817,
                           0.0745034473218853, 0, 0, 0, 0, -0.1220259905656864,
                           0.0842240094343136, -0.013312056774881616, 0.051114037906254406});
    check_ce_of(true, 0.2, TG_REDUCTION_SUM, 1, (double[]){1.6956712575409898},
                (double[]){0.19965764720754686, -0.06959589368389564, -0.2681542779420724,
                           0.13809252441842124, 0, 0, 0, 0, -0.18446173203229815,
                           0.14053826796770189, -0.06302430480760446, 0.10694776887220073});
    check_ce_of(true, 0.1, TG_REDUCTION_NONE, 3,
                (double[]){0.6986221093591198, 0, 0.6367850468589896},
                (double[]){0.2191160699086656, -0.018654173576759657, -0.34946879097567635,
                           0.1490068946437706, 0, 0, 0, 0, -0.2440519811313728,
                           0.1684480188686272, -0.026624113549763233, 0.10222807581250881});
    /* every row ignored: NaN, and a zero gradient (PyTorch's too), smoothing included */
    tg_tensor *x = tgo_rand(TG_F64, TG_SHAPE(3, 4), 7, -2, 2, true);
    tg_tensor *y = tg_full(TG_I64, TG_SHAPE(3), -100), *w = TGT_F64(TG_SHAPE(4), 0.5, 2, 1.5, 1);
    tg_tensor *l = tg_cross_entropy(x, y, w, -100, 0.1, TG_REDUCTION_MEAN);
    double d;
    cr_assert_eq(tg_item(l, &d), TG_OK, "%s", tg_last_error());
    cr_assert(isnan(d));
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    TGO_RELEASE(x, y, w, l);
}

/* The weight PyTorch refuses, refused the same way: not (C), another dtype, or
 * requiring grad while grad mode is on (PyTorch 1.13's nll_loss is not
 * differentiable with respect to it); with grad mode off it is taken. */
Test(losses, class_weight_errors) {
    int sc = tg_scope_begin();
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(2, 3));
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(2), (int64_t[]){0, 2});
    tg_tensor *bad[4] = {tg_ones(TG_F64, TG_SHAPE(4)), tg_ones(TG_F64, TG_SHAPE(1, 3)),
                         tg_ones(TG_F64, TG_SCALAR), tg_ones(TG_F32, TG_SHAPE(3))};
    const tg_status want[4] = {TG_ERR_SHAPE, TG_ERR_SHAPE, TG_ERR_SHAPE, TG_ERR_DTYPE};
    for (int k = 0; k < 4; k++)
        for (int nll = 0; nll < 2; nll++) {
            tg_clear_error();
            cr_assert_null(nll ? tg_nll_loss(x, y, bad[k], -100, TG_REDUCTION_MEAN)
                               : tg_cross_entropy(x, y, bad[k], -100, 0.1, TG_REDUCTION_MEAN));
            tgt_assert_error(want[k], nll ? "tg_nll_loss: " : "tg_cross_entropy: ",
                             k < 3 ? "for all 3 classes" : "weight is f32", NULL);
        }
    tg_tensor *w = tg_ones(TG_F64, TG_SHAPE(3));
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    for (int nll = 0; nll < 2; nll++) {
        tg_clear_error();
        cr_assert_null(nll ? tg_nll_loss(x, y, w, -100, TG_REDUCTION_SUM)
                           : tg_cross_entropy(x, y, w, -100, 0, TG_REDUCTION_SUM));
        tgt_assert_error(TG_ERR_AUTOGRAD, nll ? "tg_nll_loss" : "tg_cross_entropy",
                         "weight requires grad", NULL);
        TG_NO_GRAD {
            tg_tensor *l = nll ? tg_nll_loss(x, y, w, -100, TG_REDUCTION_SUM)
                               : tg_cross_entropy(x, y, w, -100, 0, TG_REDUCTION_SUM);
            cr_assert_not_null(l, "%s", tg_last_error());
        }
    }
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    cr_assert_eq(tg_live().nodes, 0);
}

/* PyTorch's other layouts: (N, C, d) with classes on dim 1, and (C) with a
 * 0-d target (a 0-d loss); every row ignored gives NaN for MEAN. */
Test(losses, cross_entropy_layouts_and_all_ignored) {
    tg_tensor *z = tgt_f64(3, (int64_t[]){1, 3, 2}, (double[]){0.5, 1.0, -1.5, 0.0, 2.0, -0.5});
    cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
    tg_tensor *t = tg_from_data(TG_I64, TG_SHAPE(1, 2), (int64_t[]){2, 1});
    tg_tensor *l = tg_cross_entropy(z, t, NULL, -100, 0, TG_REDUCTION_MEAN);
    TGO_ASSERT_VALUES(l, 1e-14, 0.8450854166697721);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(z, 1e-14, 0.08901510275307953, 0.3142658596058812, 0.012046884143424197,
                    -0.3843880511889255, -0.1010619868965037, 0.07012219158304424);
    tg_tensor *v = tgt_f64(1, (int64_t[]){3}, (double[]){0.5, -1.5, 2.0});
    cr_assert_eq(tg_set_requires_grad(v, true), TG_OK);
    tg_tensor *k = tg_from_data(TG_I64, TG_SCALAR, (int64_t[]){1});
    tg_tensor *l1 = tg_cross_entropy(v, k, NULL, -100, 0.3, TG_REDUCTION_NONE);
    cr_assert_eq(tg_ndim(l1), 0);
    TGO_ASSERT_VALUES(l1, 1e-14, 3.1758020492315993);
    cr_assert_eq(tg_backward(l1, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(v, 1e-14, 0.07803020550615905, -0.7759062317131515, 0.6978760262069925);
    tg_tensor *ig = tg_from_data(TG_I64, TG_SHAPE(1, 2), (int64_t[]){-100, -100});
    tg_tensor *ln = tg_cross_entropy(z, ig, NULL, -100, 0, TG_REDUCTION_MEAN);
    double d;
    cr_assert_eq(tg_item(ln, &d), TG_OK);
    cr_assert(isnan(d));
    TGO_RELEASE(z, t, l, v, k, l1, ig, ln);
}

Test(losses, cross_entropy_errors) {
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(2, 3));
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(2), (int64_t[]){0, 3});
    tg_tensor *y2 = tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){0, 1, 2});
    tg_tensor *z = tg_full(TG_F64, TG_SCALAR, 1);
    tg_clear_error();
    cr_assert_null(tg_cross_entropy(x, y, NULL, -100, 0, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_VALUE, "tg_cross_entropy", "3", NULL); /* target out of range */
    tg_clear_error();
    cr_assert_null(tg_cross_entropy(x, y2, NULL, -100, 0, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_SHAPE, NULL);
    tg_clear_error();
    cr_assert_null(tg_cross_entropy(x, y, NULL, -100, 1.5, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_VALUE, "label_smoothing", NULL);
    tg_clear_error();
    cr_assert_null(tg_cross_entropy(z, y, NULL, -100, 0, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_SHAPE, "0-d", NULL);
    tg_clear_error();
    cr_assert_null(tg_cross_entropy(x, NULL, NULL, -100, 0, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_NULL, "target", NULL);
    cr_assert_eq(tg_live().nodes, 0);
    TGO_RELEASE(x, y, y2, z);
}

/* ---- KL divergence ---------------------------------------------------------------------- */

/* PyTorch's F.kl_div (float64). The target's gradient where the target is 0:
 * PyTorch's is NaN (its xlogy backward), tapegrad's -input (0 log 0 is held at
 * 0 through a where): docs/api.md. */
Test(losses, kl_div_as_pytorch) {
    const double xv[] = {-0.5, -1.5, -2.0, -3.0, -0.25, -1.0};
    const tg_reduction rs[3] = {TG_REDUCTION_SUM, TG_REDUCTION_MEAN, TG_REDUCTION_NONE};
    const double want[3][6] = {{2.131450395901867}, {0.35524173265031117},
                               {-0.22188758248682008, 0, 1.4214851589486324, 1.1534264097200273,
                                -0.22157359027997264, 0}};
    const double gx[2][6] = {{-0.2, -0.0, -0.8, -0.5, -0.5, -0.0},
                             {-0.03333333333333333, -0.0, -0.13333333333333333,
                              -0.08333333333333333, -0.08333333333333333, -0.0}};
    const double gt[2][6] = {{-0.10943791243410028, 1.5, 2.7768564486857903, 3.3068528194400546,
                              0.5568528194400547, 1.0},
                             {-0.018239652072350024, 0.25, 0.4628094081142984, 0.5511421365733424,
                              0.09280880324000912, 1.0 / 6}};
    for (int k = 0; k < 3; k++) {
        tg_tensor *x = tgt_f64(2, (int64_t[]){2, 3}, xv);
        tg_tensor *t = tgt_f64(2, (int64_t[]){2, 3}, (double[]){0.2, 0, 0.8, 0.5, 0.5, 0});
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
        tg_tensor *l = tg_kl_div(x, t, rs[k], false), *sl = tg_sum(l);
        tgt_assert_values(l, want[k], k == 2 ? 6 : 1, 1e-14);
        cr_assert_eq(tg_backward(sl, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *g = tg_grad(x), *h = tg_grad(t);
        tgt_assert_values(g, gx[k == 1], 6, 1e-14);
        tgt_assert_values(h, gt[k == 1], 6, 1e-14);
        TGO_RELEASE(x, t, l, sl, g, h);
    }
    tg_tensor *x = tgt_f64(2, (int64_t[]){2, 3}, xv);
    tg_tensor *t = tgt_f64(2, (int64_t[]){2, 3}, (double[]){-1, -2, -0.5, -0.1, -3, -0.7});
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    tg_tensor *l = tg_kl_div(x, t, TG_REDUCTION_SUM, true);
    TGO_ASSERT_VALUES(l, 1e-14, 3.2942782927950023);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 1e-14, -0.36787944117144233, -0.1353352832366127, -0.6065306597126334,
                    -0.9048374180359595, -0.049787068367863944, -0.4965853037914095);
    TGO_ASSERT_GRAD(t, 1e-14, 0.18393972058572117, 0.06766764161830635, 1.5163266492815834,
                    3.528865930340242, -0.08712736964376189, 0.6455608949288324);
    TGO_RELEASE(x, t, l);
}

/* TG_REDUCTION_BATCHMEAN: kl_div's sum over input.size(0) (a 0-d input: the
 * sum, as PyTorch's F.kl_div); every other loss refuses it, as PyTorch's
 * ("batchmean is not a valid value for reduction"). */
Test(losses, kl_div_batchmean_and_the_others_refuse_it) {
    int sc = tg_scope_begin();
    tg_tensor *x = TGT_F64(TG_SHAPE(2, 3), -0.5, -1.5, -2.0, -3.0, -0.25, -1.0);
    tg_tensor *t = TGT_F64(TG_SHAPE(2, 3), 0.2, 0, 0.8, 0.5, 0.5, 0);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *l = tg_kl_div(x, t, TG_REDUCTION_BATCHMEAN, false);
    TGO_ASSERT_VALUES(l, 1e-15, 1.0657251979509335);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 1e-15, -0.1, 0, -0.4, -0.25, -0.25, 0);
    tg_tensor *x0 = tg_full(TG_F64, TG_SCALAR, -0.5), *t0 = tg_full(TG_F64, TG_SCALAR, 0.2);
    TGO_ASSERT_VALUES(tg_kl_div(x0, t0, TG_REDUCTION_BATCHMEAN, false), 1e-15,
                      -0.22188758248682008);
    tg_tensor *e = tg_zeros(TG_F64, TG_SHAPE(0, 3));
    double d;
    cr_assert_eq(tg_item(tg_kl_div(e, e, TG_REDUCTION_BATCHMEAN, true), &d), TG_OK);
    cr_assert(isnan(d), "batchmean of an empty batch: %g (PyTorch: NaN)", d);
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(2), (int64_t[]){0, 2});
    static const char *const names[] = {"tg_mse_loss", "tg_smooth_l1_loss",
                                        "tg_binary_cross_entropy_with_logits",
                                        "tg_cross_entropy", "tg_nll_loss"};
    const tg_reduction bm = TG_REDUCTION_BATCHMEAN;
    for (int k = 0; k < 5; k++) {
        tg_clear_error();
        tg_tensor *r = k == 0   ? tg_mse_loss(x, t, bm)
                       : k == 1 ? tg_smooth_l1_loss(x, t, bm, 1.0)
                       : k == 2 ? tg_binary_cross_entropy_with_logits(x, t, NULL, bm)
                       : k == 3 ? tg_cross_entropy(x, y, NULL, -100, 0, bm)
                                : tg_nll_loss(x, y, NULL, -100, bm);
        cr_assert_null(r, "%s took TG_REDUCTION_BATCHMEAN", names[k]);
        tgt_assert_error(TG_ERR_VALUE, names[k], "BATCHMEAN", NULL);
    }
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- NLL and one_hot ------------------------------------------------------------------ */

/* PyTorch's F.nll_loss on log_softmax of the cross-entropy logits (float64). */
Test(losses, nll_loss_as_pytorch) {
    const double lpv[] = {-1.8385387875427432, -3.8385387875427432, -0.33853878754274325,
                          -2.238538787542743,  -0.2020396702543971, -3.452039670254397,
                          -3.202039670254397,  -2.202039670254397,  -0.9346697471622284,
                          -0.9346697471622284, -3.9346697471622285, -1.6346697471622282};
    const tg_reduction rs[3] = {TG_REDUCTION_MEAN, TG_REDUCTION_SUM, TG_REDUCTION_NONE};
    const double want[3][3] = {{0.6366042673524859}, {1.2732085347049718},
                               {0.33853878754274325, 0, 0.9346697471622284}};
    const double g = 1.0;
    for (int k = 0; k < 3; k++) {
        tg_tensor *lp = tgt_f64(2, (int64_t[]){3, 4}, lpv);
        cr_assert_eq(tg_set_requires_grad(lp, true), TG_OK);
        tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){2, -100, 0});
        tg_tensor *l = tg_nll_loss(lp, y, NULL, -100, rs[k]), *sl = tg_sum(l);
        cr_assert_not_null(l, "%s", tg_last_error());
        tgt_assert_values(l, want[k], k == 2 ? 3 : 1, 1e-15);
        cr_assert_eq(tg_backward(sl, NULL, false), TG_OK, "%s", tg_last_error());
        double w = k == 0 ? 0.5 * g : g;
        TGO_ASSERT_GRAD(lp, 0, 0, 0, -w, 0, 0, 0, 0, 0, -w, 0, 0, 0);
        TGO_RELEASE(lp, y, l, sl);
    }
    /* as cross_entropy on the logits themselves */
    tg_tensor *x = tgt_f64(2, (int64_t[]){3, 4},
                           (double[]){0.5, -1.5, 2.0, 0.1, 3.0, -0.25, 0.0, 1.0, 1.0, 1.0, -2.0,
                                      0.3});
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){2, -100, 0});
    tg_tensor *ls = tg_log_softmax(x), *a = tg_nll_loss(ls, y, NULL, -100, TG_REDUCTION_MEAN);
    tg_tensor *b = tg_cross_entropy(x, y, NULL, -100, 0, TG_REDUCTION_MEAN);
    tgo_assert_same(a, b, 1e-15);
    tg_tensor *bad = tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){2, 4, 0});
    tg_clear_error();
    cr_assert_null(tg_nll_loss(ls, bad, NULL, -100, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_VALUE, "tg_nll_loss", "target 4", "position 1", NULL);
    tg_tensor *f = tg_zeros(TG_F64, TG_SHAPE(3));
    tg_clear_error();
    cr_assert_null(tg_nll_loss(ls, f, NULL, -100, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_DTYPE, "i64", NULL);
    tg_tensor *y2 = tg_from_data(TG_I64, TG_SHAPE(2), (int64_t[]){0, 1});
    tg_clear_error();
    cr_assert_null(tg_nll_loss(ls, y2, NULL, -100, TG_REDUCTION_MEAN));
    tgt_assert_error(TG_ERR_SHAPE, "tg_nll_loss", NULL);
    cr_assert_eq(tg_live().nodes, 0); /* x does not require grad: nothing recorded */
    TGO_RELEASE(x, y, ls, a, b, bad, f, y2);
}

/* F.nll_loss with weight [0.5, 2, 1.5, 0.25] (float64): -w[y] lp[y], MEAN over
 * the kept rows' weights (1.5 + 0.5), the gradient -w[y] / 2 at the targets. */
Test(losses, nll_loss_class_weights_as_pytorch) {
    const tg_reduction rs[3] = {TG_REDUCTION_MEAN, TG_REDUCTION_SUM, TG_REDUCTION_NONE};
    const double want[3][3] = {{0.48757152744761456}, {0.9751430548952291},
                               {0.5078081813141149, 0, 0.4673348735811142}};
    for (int k = 0; k < 3; k++) {
        tg_tensor *x = TGT_F64(TG_SHAPE(3, 4), 0.5, -1.5, 2.0, 0.1, 3.0, -0.25, 0.0, 1.0, 1.0,
                               1.0, -2.0, 0.3);
        tg_tensor *lp = tg_log_softmax(x), *lpd = tg_detach(lp);
        cr_assert_eq(tg_set_requires_grad(lpd, true), TG_OK);
        tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(3), (int64_t[]){2, -100, 0});
        tg_tensor *w = TGT_F64(TG_SHAPE(4), 0.5, 2.0, 1.5, 0.25);
        tg_tensor *l = tg_nll_loss(lpd, y, w, -100, rs[k]), *sl = tg_sum(l);
        cr_assert_not_null(l, "%s", tg_last_error());
        tgt_assert_values(l, want[k], k == 2 ? 3 : 1, 1e-15);
        cr_assert_eq(tg_backward(sl, NULL, false), TG_OK, "%s", tg_last_error());
        double q = k == 0 ? 0.5 : 1.0;
        TGO_ASSERT_GRAD(lpd, 0, 0, 0, -1.5 * q, 0, 0, 0, 0, 0, -0.5 * q, 0, 0, 0);
        TGO_RELEASE(x, lp, lpd, y, w, l, sl);
    }
}

/* The class weights are saved for backward, as PyTorch's nll_loss does: an
 * in-place edit of them (or of their base) after the forward fails the
 * backward and names the edit; without one the backward runs. Both losses
 * that take weights, and a weight that is a view. */
Test(losses, class_weights_edited_after_forward_fail_the_backward) {
    for (int ce = 0; ce <= 1; ce++)
        for (int edit = 0; edit <= 1; edit++) {
            tg_tensor *x = TGT_F64(TG_SHAPE(2, 3), 0.5, -1.5, 2.0, 0.1, 3.0, -0.25);
            cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
            tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(2), (int64_t[]){2, 0});
            tg_tensor *base = TGT_F64(TG_SHAPE(6), 0.5, 9, 2.0, 9, 1.5, 9);
            tg_tensor *w = tg_slice(base, 0, 0, 6, 2); /* 0.5, 2.0, 1.5: a view */
            tg_tensor *l = ce ? tg_cross_entropy(x, y, w, -100, 0.0, TG_REDUCTION_MEAN)
                              : tg_nll_loss(x, y, w, -100, TG_REDUCTION_MEAN);
            cr_assert_not_null(l, "%s", tg_last_error());
            if (edit) cr_assert_eq(tg_scale_(base, 2.0), TG_OK, "%s", tg_last_error());
            tg_status st = tg_backward(l, NULL, false);
            if (edit)
                tgt_assert_error(TG_ERR_INPLACE, "tg_scale_", NULL);
            else
                cr_assert_eq(st, TG_OK, "%s", tg_last_error());
            TGO_RELEASE(x, y, base, w, l);
        }
}

Test(losses, one_hot_as_pytorch) {
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(2, 2), (int64_t[]){2, 0, 1, 3});
    tg_tensor *o = tg_one_hot(y, -1), *o5 = tg_one_hot(y, 5);
    cr_assert_not_null(o, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(o), TG_I64);
    cr_assert_eq(tg_size(o, 2), 4);
    TGO_ASSERT_VALUES(o, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1);
    cr_assert_eq(tg_size(o5, 2), 5);
    tg_clear_error();
    cr_assert_null(tg_one_hot(y, 3));
    tgt_assert_error(TG_ERR_VALUE, "tg_one_hot", "target 3", NULL);
    tg_clear_error();
    cr_assert_null(tg_one_hot(y, -2));
    tgt_assert_error(TG_ERR_VALUE, "num_classes is -2", NULL);
    tg_tensor *e = tg_zeros(TG_I64, TG_SHAPE(0));
    tg_clear_error();
    cr_assert_null(tg_one_hot(e, -1));
    tgt_assert_error(TG_ERR_VALUE, "empty", NULL);
    tg_tensor *f = tg_zeros(TG_F64, TG_SHAPE(2));
    tg_clear_error();
    cr_assert_null(tg_one_hot(f, 2));
    tgt_assert_error(TG_ERR_DTYPE, NULL);
    TGO_RELEASE(y, o, o5, e, f);
}

/* ---- aggregation modes ------------------------------------------------------------------ */

/* The three modes on a (3, 4) per-token loss with ragged masks, as the
 * trainers' PyTorch formulas give them (float64), and the mode's error. */
Test(losses, aggregation_modes_as_the_trainers_formulas) {
    const tg_agg_mode modes[3] = {TG_AGG_TOKEN_MEAN, TG_AGG_SEQ_MEAN_TOKEN_SUM,
                                  TG_AGG_SEQ_MEAN_TOKEN_MEAN};
    const double want[3] = {0.5357142857142857, 1.25, 0.4791666666666667};
    const double t = 1.0 / 7, q = 1.0 / 3, h = 1.0 / 6, e = 1.0 / 12;
    const double grads[3][12] = {{t, t, 0, 0, t, t, t, t, t, 0, 0, 0},
                                 {q, q, 0, 0, q, q, q, q, q, 0, 0, 0},
                                 {h, h, 0, 0, e, e, e, e, q, 0, 0, 0}};
    for (int k = 0; k < 3; k++) {
        tg_tensor *l = tgt_f64(2, (int64_t[]){3, 4},
                               (double[]){0.5, -1.5, 2.0, 0.1, 3.0, -0.25, 0.0, 1.0, 1.0, 1.0,
                                          -2.0, 0.3});
        tg_tensor *m = tgt_f64(2, (int64_t[]){3, 4},
                               (double[]){1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0});
        cr_assert_eq(tg_set_requires_grad(l, true), TG_OK);
        tg_tensor *a = tg_agg_loss(l, m, modes[k]);
        cr_assert_not_null(a, "%s", tg_last_error());
        cr_assert_eq(tg_ndim(a), 0);
        tgt_assert_values(a, &want[k], 1, 1e-15);
        cr_assert_eq(tg_backward(a, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *g = tg_grad(l);
        tgt_assert_values(g, grads[k], 12, 1e-15);
        TGO_RELEASE(l, m, a, g);
    }
    tg_tensor *l = tg_ones(TG_F64, TG_SHAPE(2, 2)), *z = tg_ones(TG_F64, TG_SCALAR);
    tg_clear_error();
    cr_assert_null(tg_agg_loss(l, l, (tg_agg_mode)9));
    tgt_assert_error(TG_ERR_VALUE, "tg_agg_loss", "mode", NULL);
    tg_clear_error();
    cr_assert_null(tg_agg_loss(z, z, TG_AGG_SEQ_MEAN_TOKEN_SUM));
    tgt_assert_error(TG_ERR_DIM, "0-d", NULL);
    /* every mode refuses a 0-d loss (TOKEN_MEAN took it before) */
    tg_clear_error();
    cr_assert_null(tg_agg_loss(z, z, TG_AGG_TOKEN_MEAN));
    tgt_assert_error(TG_ERR_DIM, "tg_agg_loss", "0-d", NULL);
    TGO_RELEASE(l, z);
}

/* A TG_BOOL mask (what tg_ne/tg_gt give) is taken by tg_masked_mean and every
 * mode of tg_agg_loss, with the value and gradient of the same 0/1 mask in f64
 * (before: TG_ERR_DTYPE from tg_mul). */
Test(losses, bool_masks_as_float_masks) {
    int sc = tg_scope_begin();
    tg_tensor *fm = tgt_f64(2, (int64_t[]){3, 4}, (double[]){1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0});
    tg_tensor *bm = tg_to_dtype(fm, TG_BOOL);
    for (int k = 0; k < 6; k++) {
        tg_tensor *g[2], *v[2];
        for (int b = 0; b < 2; b++) {
            tg_tensor *x = tg_randn(TG_F32, TG_SHAPE(3, 4), 5, 0, 1);
            cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
            tg_tensor *m = b ? bm : fm;
            tg_tensor *r = k == 0   ? tg_masked_mean(x, m, 1, false)
                           : k == 1 ? tg_masked_mean(x, m, 0, true)
                           : k == 2 ? tg_agg_loss(x, m, TG_AGG_TOKEN_MEAN)
                           : k == 3 ? tg_agg_loss(x, m, TG_AGG_SEQ_MEAN_TOKEN_SUM)
                           : k == 4 ? tg_agg_loss(x, m, TG_AGG_SEQ_MEAN_TOKEN_MEAN)
                                    : tg_masked_mean(x, tg_narrow(m, 0, 0, 1), 1, false);
            cr_assert_not_null(r, "case %d, %s mask: %s", k, b ? "bool" : "f64", tg_last_error());
            /* f32 x with an f64 mask is f64 (as PyTorch); with a bool mask f32 */
            cr_assert_eq(tg_get_dtype(r), b ? TG_F32 : TG_F64, "case %d", k);
            cr_assert_eq(tg_backward(tg_sum(r), NULL, false), TG_OK, "%s", tg_last_error());
            v[b] = r;
            g[b] = tg_grad(x);
        }
        tgo_assert_same(v[1], v[0], 1e-6);
        tgo_assert_same(g[1], g[0], 1e-6);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Errors of the losses made of other ops name the loss the user called, not
 * the op inside it that refused (before: "tg_sub: ...", "tg_mul: ...", and
 * cross-entropy's "tg_cross_entropy: tg_cross_entropy: ..."). */
Test(losses, errors_name_the_loss_called) {
    int sc = tg_scope_begin();
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(2, 3)), *y = tg_zeros(TG_F64, TG_SHAPE(4));
    static const char *const names[] = {"tg_kl_div", "tg_binary_cross_entropy_with_logits",
                                        "tg_mse_loss", "tg_smooth_l1_loss", "tg_masked_mean",
                                        "tg_agg_loss"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        tg_clear_error();
        tg_tensor *r = NULL;
        switch (k) {
        case 0: r = tg_kl_div(x, y, TG_REDUCTION_SUM, false); break;
        case 1: r = tg_binary_cross_entropy_with_logits(x, y, NULL, TG_REDUCTION_MEAN); break;
        case 2: r = tg_mse_loss(x, y, TG_REDUCTION_NONE); break;
        case 3: r = tg_smooth_l1_loss(x, y, TG_REDUCTION_MEAN, 1.0); break;
        case 4: r = tg_masked_mean(x, y, 1, false); break;
        default: r = tg_agg_loss(x, y, TG_AGG_SEQ_MEAN_TOKEN_MEAN); break;
        }
        cr_assert_null(r, "%s accepted shapes (2, 3) and (4)", names[k]);
        cr_assert_eq(tg_last_status(), TG_ERR_SHAPE, "%s: %s", names[k], tg_last_error());
        size_t n = strlen(names[k]);
        cr_assert(strncmp(tg_last_error(), names[k], n) == 0 && tg_last_error()[n] == ':',
                  "%s's error names another op: %s", names[k], tg_last_error());
    }
    /* one prefix, not two */
    tg_tensor *z = tg_zeros(TG_F64, TG_SHAPE(3, 4)), *t = tg_zeros(TG_F64, TG_SHAPE(3));
    tg_clear_error();
    cr_assert_null(tg_cross_entropy(z, t, NULL, -100, 0.0, TG_REDUCTION_MEAN));
    cr_assert(strncmp(tg_last_error(), "tg_cross_entropy: ", 18) == 0, "%s", tg_last_error());
    cr_assert_null(strstr(tg_last_error() + 1, "tg_cross_entropy"), "%s", tg_last_error());
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}
