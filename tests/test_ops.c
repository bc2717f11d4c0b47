/* tests/test_ops.c - forward values of the core ops against hand-computed
 * expectations (small literal tensors, f32 and f64) and the view ops'
 * sharing and strides. What every op must do (recording only when needed,
 * f32 against f64, ...) is checked on every registry row by test_registry.c.
 *
 * Gradient checks are in test_ops_grad.c, in-place ops in test_ops_inplace.c.
 * Every suite uses the fixture that asserts nothing is left alive. */
#include "tg_ops_test_util.h"

TestSuite(ops_forward, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(ops_views, .init = tgt_setup, .fini = tgt_teardown);

#define BOTH_DTYPES(fn)                                                                    \
    do {                                                                                   \
        fn(TG_F32);                                                                        \
        fn(TG_F64);                                                                        \
    } while (0)

/* Asserts out is a fresh contiguous result of dtype dt recorded as nothing
 * (no input requires grad). */
static void assert_plain_result(const tg_tensor *out, tg_dtype dt) {
    cr_assert_not_null(out, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(out), dt);
    cr_assert(tg_is_contiguous(out));
    cr_assert(tg_is_leaf(out));
    cr_assert(!tg_requires_grad(out));
    cr_assert_null(tg_grad_fn_name(out));
}

/* ---- binary ops ------------------------------------------------------------- */

static void check_add(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *b = TGO_MAKE(dt, TG_SHAPE(3), 10, 20, 30);
    tg_tensor *c = tg_add(a, b);
    assert_plain_result(c, dt);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 3));
    TGO_ASSERT_VALUES(c, rt, 11, 22, 33, 14, 25, 36);
    tg_tensor *col = TGO_MAKE(dt, TG_SHAPE(3, 1), 1, 2, 3);
    tg_tensor *row = TGO_MAKE(dt, TG_SHAPE(4), 10, 20, 30, 40);
    tg_tensor *d = tg_add(col, row);
    TGO_ASSERT_SHAPE(d, dt, TG_SHAPE(3, 4));
    TGO_ASSERT_VALUES(d, rt, 11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43);
    tg_tensor *e = tg_add(row, col); /* commutes, same broadcast shape */
    tgo_assert_same(e, d, rt);
    TGO_RELEASE(a, b, c, col, row);
    TGO_RELEASE(d, e);
}
Test(ops_forward, add_broadcasts) { BOTH_DTYPES(check_add); }

static void check_sub(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *col = TGO_MAKE(dt, TG_SHAPE(3, 1), 1, 2, 3);
    tg_tensor *row = TGO_MAKE(dt, TG_SHAPE(4), 1, 2, 3, 4);
    tg_tensor *c = tg_sub(col, row);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(3, 4));
    TGO_ASSERT_VALUES(c, rt, 0, -1, -2, -3, 1, 0, -1, -2, 2, 1, 0, -1);
    tg_tensor *s = TGO_MAKE(dt, TG_SCALAR, 10);
    tg_tensor *m = TGO_MAKE(dt, TG_SHAPE(2, 2), 1, 2, 3, 4);
    tg_tensor *d = tg_sub(s, m);
    TGO_ASSERT_SHAPE(d, dt, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(d, rt, 9, 8, 7, 6);
    tg_tensor *e = tg_sub(m, s);
    TGO_ASSERT_VALUES(e, rt, -9, -8, -7, -6);
    TGO_RELEASE(col, row, c, s, m);
    TGO_RELEASE(d, e);
}
Test(ops_forward, sub_broadcasts_and_scalar) { BOTH_DTYPES(check_sub); }

static void check_mul(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(2, 1, 2), 1, 2, 3, 4);
    tg_tensor *b = TGO_MAKE(dt, TG_SHAPE(3, 1), 1, 10, 100);
    tg_tensor *c = tg_mul(a, b);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 3, 2));
    TGO_ASSERT_VALUES(c, rt, 1, 2, 10, 20, 100, 200, 3, 4, 30, 40, 300, 400);
    tg_tensor *s = TGO_MAKE(dt, TG_SCALAR, 2.5);
    tg_tensor *v = TGO_MAKE(dt, TG_SHAPE(3), 1, 2, -4);
    tg_tensor *d = tg_mul(s, v);
    TGO_ASSERT_SHAPE(d, dt, TG_SHAPE(3));
    TGO_ASSERT_VALUES(d, rt, 2.5, 5, -10);
    tg_tensor *ss = tg_mul(s, s); /* 0-d with 0-d stays 0-d */
    TGO_ASSERT_SHAPE(ss, dt, TG_SCALAR);
    TGO_ASSERT_VALUES(ss, rt, 6.25);
    TGO_RELEASE(a, b, c, s, v, d);
    TGO_RELEASE(ss);
}
Test(ops_forward, mul_broadcasts_3d_and_scalar) { BOTH_DTYPES(check_mul); }

static void check_div(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(2, 2), 1, 2, 3, 4);
    tg_tensor *b = TGO_MAKE(dt, TG_SHAPE(2), 2, 4);
    tg_tensor *c = tg_div(a, b);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(c, rt, 0.5, 0.5, 1.5, 1);
    tg_tensor *d = tg_div(b, a);
    TGO_ASSERT_VALUES(d, rt, 2, 2, 2.0 / 3.0, 1);
    TGO_RELEASE(a, b, c, d);
}
Test(ops_forward, div_broadcasts) { BOTH_DTYPES(check_div); }

static void check_minmax(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(4), 1, 5, -2, NAN);
    tg_tensor *b = TGO_MAKE(dt, TG_SHAPE(4), 3, 5, -7, 0);
    tg_tensor *mx = tg_maximum(a, b), *mn = tg_minimum(a, b);
    TGO_ASSERT_VALUES(mx, rt, 3, 5, -2, NAN);
    TGO_ASSERT_VALUES(mn, rt, 1, 5, -7, NAN);
    /* NaN in the second operand gives NaN too */
    tg_tensor *mx2 = tg_maximum(b, a), *mn2 = tg_minimum(b, a);
    TGO_ASSERT_VALUES(mx2, rt, 3, 5, -2, NAN);
    TGO_ASSERT_VALUES(mn2, rt, 1, 5, -7, NAN);
    tg_tensor *m = TGO_MAKE(dt, TG_SHAPE(2, 2), 1, 4, 3, 2);
    tg_tensor *r = TGO_MAKE(dt, TG_SHAPE(2), 2, 3);
    tg_tensor *bx = tg_maximum(m, r), *bn = tg_minimum(r, m);
    TGO_ASSERT_SHAPE(bx, dt, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(bx, rt, 2, 4, 3, 3);
    TGO_ASSERT_VALUES(bn, rt, 1, 3, 2, 2);
    TGO_RELEASE(a, b, mx, mn, mx2);
    TGO_RELEASE(mn2, m, r, bx, bn);
}
Test(ops_forward, maximum_minimum_with_nan_and_broadcast) { BOTH_DTYPES(check_minmax); }

static void check_where(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *cond = TGO_MAKE(TG_I64, TG_SHAPE(3, 1), 1, 0, 1);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(4), 1, 2, 3, 4);
    tg_tensor *b = TGO_MAKE(dt, TG_SCALAR, -1);
    tg_tensor *w = tg_where(cond, a, b);
    TGO_ASSERT_SHAPE(w, dt, TG_SHAPE(3, 4));
    TGO_ASSERT_VALUES(w, rt, 1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4);
    /* a floating cond: non-zero (also negative) is true */
    tg_tensor *fc = TGO_MAKE(dt, TG_SHAPE(4), 0.5, 0, -2, 0);
    tg_tensor *b2 = TGO_MAKE(dt, TG_SHAPE(4), 10, 20, 30, 40);
    tg_tensor *w2 = tg_where(fc, a, b2);
    TGO_ASSERT_SHAPE(w2, dt, TG_SHAPE(4));
    TGO_ASSERT_VALUES(w2, rt, 1, 20, 3, 40);
    TGO_RELEASE(cond, a, b, w);
    TGO_RELEASE(fc, b2, w2);
}
Test(ops_forward, where_broadcasts_cond_of_any_dtype) { BOTH_DTYPES(check_where); }

/* ---- unary ops -------------------------------------------------------------- */

static void check_unary(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *x = TGO_MAKE(dt, TG_SHAPE(4), -1, 0, 0.5, 2);
    tg_tensor *n = tg_neg(x), *s = tg_scale(x, -3), *p = tg_add_scalar(x, 1.5);
    assert_plain_result(n, dt);
    TGO_ASSERT_VALUES(n, rt, 1, 0, -0.5, -2);
    TGO_ASSERT_VALUES(s, rt, 3, 0, -1.5, -6);
    TGO_ASSERT_VALUES(p, rt, 0.5, 1.5, 2, 3.5);
    tg_tensor *ex = TGO_MAKE(dt, TG_SHAPE(4), 0, 1, -1, log(2.0));
    tg_tensor *e = tg_exp(ex);
    TGO_ASSERT_VALUES(e, rt, 1, exp(1.0), exp(-1.0), 2);
    tg_tensor *lx = TGO_MAKE(dt, TG_SHAPE(5), 1, exp(1.0), 0.5, 4, 0);
    tg_tensor *l = tg_log(lx);
    TGO_ASSERT_VALUES(l, rt, 0, 1, -log(2.0), 2 * log(2.0), -INFINITY);
    TGO_RELEASE(x, n, s, p, ex, e);
    TGO_RELEASE(lx, l);
}
Test(ops_forward, neg_scale_add_scalar_exp_log) { BOTH_DTYPES(check_unary); }

static void check_clamp(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *x = TGO_MAKE(dt, TG_SHAPE(5), -2, -0.5, 0, 0.5, 2);
    tg_tensor *c1 = tg_clamp(x, -1, 1), *c2 = tg_clamp(x, -INFINITY, 0);
    tg_tensor *c3 = tg_clamp(x, 0.5, INFINITY), *c4 = tg_clamp(x, 0.25, 0.25);
    tg_tensor *c5 = tg_clamp(x, -INFINITY, INFINITY);
    TGO_ASSERT_VALUES(c1, rt, -1, -0.5, 0, 0.5, 1);
    TGO_ASSERT_VALUES(c2, rt, -2, -0.5, 0, 0, 0);
    TGO_ASSERT_VALUES(c3, rt, 0.5, 0.5, 0.5, 0.5, 2);
    TGO_ASSERT_VALUES(c4, rt, 0.25, 0.25, 0.25, 0.25, 0.25);
    TGO_ASSERT_VALUES(c5, rt, -2, -0.5, 0, 0.5, 2);
    TGO_RELEASE(x, c1, c2, c3, c4);
    TGO_RELEASE(c5);
}
Test(ops_forward, clamp_with_and_without_bounds) { BOTH_DTYPES(check_clamp); }

static void check_unary_strided(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    /* exp of a transposed view: read through the strides, written contiguous */
    tg_tensor *x = TGO_MAKE(dt, TG_SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    tg_tensor *xt = tg_transpose(x, 0, 1);
    tg_tensor *e = tg_scale(xt, 2);
    TGO_ASSERT_SHAPE(e, dt, TG_SHAPE(3, 2));
    cr_assert(tg_is_contiguous(e));
    TGO_ASSERT_VALUES(e, rt, 0, 6, 2, 8, 4, 10);
    tg_tensor *s = tg_slice(x, 1, 0, 3, 2); /* columns 0 and 2 */
    tg_tensor *n = tg_neg(s);
    TGO_ASSERT_SHAPE(n, dt, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(n, rt, 0, -2, -3, -5);
    tg_tensor *sum = tg_add(xt, xt);
    TGO_ASSERT_VALUES(sum, rt, 0, 6, 2, 8, 4, 10);
    TGO_RELEASE(x, xt, e, s, n, sum);
}
Test(ops_forward, ops_read_strided_views) { BOTH_DTYPES(check_unary_strided); }

/* ---- reductions ------------------------------------------------------------- */

static void check_sum_mean(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *x = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *s = tg_sum(x), *m = tg_mean(x);
    TGO_ASSERT_SHAPE(s, dt, TG_SCALAR);
    TGO_ASSERT_SHAPE(m, dt, TG_SCALAR);
    double v;
    cr_assert_eq(tg_item(s, &v), TG_OK);
    cr_assert(tgo_close(v, 21, rt), "sum %g", v);
    cr_assert_eq(tg_item(m, &v), TG_OK);
    cr_assert(tgo_close(v, 3.5, rt), "mean %g", v);
    tg_tensor *xt = tg_transpose(x, 0, 1);
    tg_tensor *st = tg_sum(xt);
    TGO_ASSERT_VALUES(st, rt, 21);
    tg_tensor *z = tg_zeros(dt, TG_SHAPE(0));
    tg_tensor *zs = tg_sum(z), *zm = tg_mean(z);
    TGO_ASSERT_VALUES(zs, rt, 0);
    TGO_ASSERT_VALUES(zm, rt, NAN);
    tg_tensor *sc = TGO_MAKE(dt, TG_SCALAR, -4);
    tg_tensor *scm = tg_mean(sc);
    TGO_ASSERT_VALUES(scm, rt, -4);
    TGO_RELEASE(x, s, m, xt, st);
    TGO_RELEASE(z, zs, zm, sc, scm);
}
Test(ops_forward, sum_mean_all) { BOTH_DTYPES(check_sum_mean); }

static void check_dim_reductions(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    double xv[24], want[24];
    for (int i = 0; i < 24; i++) xv[i] = i; /* x[i][j][k] = 12i + 4j + k */
    tg_tensor *x = tgo_make(dt, TG_SHAPE(2, 3, 4), xv);

    tg_tensor *a = tg_sum_dim(x, 1, false);
    TGO_ASSERT_SHAPE(a, dt, TG_SHAPE(2, 4));
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) want[i * 4 + k] = 36 * i + 12 + 3 * k;
    tgo_assert_close(a, want, 8, rt);
    tg_tensor *ak = tg_sum_dim(x, 1, true);
    TGO_ASSERT_SHAPE(ak, dt, TG_SHAPE(2, 1, 4));
    tgo_assert_close(ak, want, 8, rt);

    tg_tensor *b = tg_sum_dim(x, -1, false);
    TGO_ASSERT_SHAPE(b, dt, TG_SHAPE(2, 3));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) want[i * 3 + j] = 48 * i + 16 * j + 6;
    tgo_assert_close(b, want, 6, rt);

    tg_tensor *c = tg_mean_dim(x, -1, true);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 3, 1));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) want[i * 3 + j] = 12 * i + 4 * j + 1.5;
    tgo_assert_close(c, want, 6, rt);

    tg_tensor *d = tg_mean_dim(x, 0, false);
    TGO_ASSERT_SHAPE(d, dt, TG_SHAPE(3, 4));
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++) want[j * 4 + k] = 4 * j + k + 6;
    tgo_assert_close(d, want, 12, rt);

    tg_tensor *e = tg_sum_dim(x, -3, true);
    TGO_ASSERT_SHAPE(e, dt, TG_SHAPE(1, 3, 4));
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++) want[j * 4 + k] = 2 * (4 * j + k) + 12;
    tgo_assert_close(e, want, 12, rt);

    tg_tensor *f = tg_mean_dim(x, -2, false);
    TGO_ASSERT_SHAPE(f, dt, TG_SHAPE(2, 4));
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) want[i * 4 + k] = 12 * i + 4 + k;
    tgo_assert_close(f, want, 8, rt);

    /* along a transposed view: sum over its last dim = over x's dim 1 */
    tg_tensor *xt = tg_transpose(x, 1, 2); /* [2, 4, 3] */
    tg_tensor *g = tg_sum_dim(xt, -1, false);
    TGO_ASSERT_SHAPE(g, dt, TG_SHAPE(2, 4));
    tgo_assert_same(g, a, rt);

    /* an empty reduced dim: sum 0, mean NaN */
    tg_tensor *z = tg_zeros(dt, TG_SHAPE(2, 0));
    tg_tensor *zs = tg_sum_dim(z, 1, false), *zm = tg_mean_dim(z, 1, true);
    TGO_ASSERT_SHAPE(zs, dt, TG_SHAPE(2));
    TGO_ASSERT_VALUES(zs, rt, 0, 0);
    TGO_ASSERT_SHAPE(zm, dt, TG_SHAPE(2, 1));
    TGO_ASSERT_VALUES(zm, rt, NAN, NAN);
    TGO_RELEASE(x, a, ak, b, c, d);
    TGO_RELEASE(e, f, xt, g, z, zs);
    TGO_RELEASE(zm);
}
Test(ops_forward, sum_dim_mean_dim_keepdim_and_negative_dims) { BOTH_DTYPES(check_dim_reductions); }

/* ---- matmul ------------------------------------------------------------------- */

static void check_matmul(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *b = TGO_MAKE(dt, TG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12);
    tg_tensor *c = tg_matmul(a, b);
    assert_plain_result(c, dt);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(c, rt, 58, 64, 139, 154);
    /* the same operands as transposed views */
    tg_tensor *at_store = TGO_MAKE(dt, TG_SHAPE(3, 2), 1, 4, 2, 5, 3, 6);
    tg_tensor *bt_store = TGO_MAKE(dt, TG_SHAPE(2, 3), 7, 9, 11, 8, 10, 12);
    tg_tensor *at = tg_transpose(at_store, 0, 1), *bt = tg_transpose(bt_store, 0, 1);
    tg_tensor *c2 = tg_matmul(at, bt), *c3 = tg_matmul(a, bt), *c4 = tg_matmul(at, b);
    TGO_ASSERT_VALUES(c2, rt, 58, 64, 139, 154);
    TGO_ASSERT_VALUES(c3, rt, 58, 64, 139, 154);
    TGO_ASSERT_VALUES(c4, rt, 58, 64, 139, 154);
    /* a column-sliced operand (stride 2 in the last dim) */
    tg_tensor *wide = TGO_MAKE(dt, TG_SHAPE(3, 4), 7, 0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0);
    tg_tensor *bs = tg_slice(wide, 1, 0, 4, 2);
    tg_tensor *c5 = tg_matmul(a, bs);
    TGO_ASSERT_VALUES(c5, rt, 58, 64, 139, 154);
    TGO_RELEASE(a, b, c, at_store, bt_store);
    TGO_RELEASE(at, bt, c2, c3, c4);
    TGO_RELEASE(wide, bs, c5);
}
Test(ops_forward, matmul_2d_and_strided_operands) { BOTH_DTYPES(check_matmul); }

static void check_matmul_batched(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *a = TGO_MAKE(dt, TG_SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    tg_tensor *b = TGO_MAKE(dt, TG_SHAPE(2, 2, 2), 1, 0, 0, 1, 2, 0, 0, 2);
    tg_tensor *c = tg_matmul(a, b);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 2, 2));
    TGO_ASSERT_VALUES(c, rt, 1, 2, 3, 4, 10, 12, 14, 16);
    tg_tensor *w = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 0, 1, 0, 1, 1);
    tg_tensor *d = tg_matmul(a, w); /* batched @ shared 2-D weight */
    TGO_ASSERT_SHAPE(d, dt, TG_SHAPE(2, 2, 3));
    TGO_ASSERT_VALUES(d, rt, 1, 2, 3, 3, 4, 7, 5, 6, 11, 7, 8, 15);
    tg_tensor *a4 = tg_view(a, TG_SHAPE(2, 1, 2, 2)), *b4 = tg_view(b, TG_SHAPE(2, 1, 2, 2));
    tg_tensor *e = tg_matmul(a4, b4); /* 4-D batched */
    TGO_ASSERT_SHAPE(e, dt, TG_SHAPE(2, 1, 2, 2));
    TGO_ASSERT_VALUES(e, rt, 1, 2, 3, 4, 10, 12, 14, 16);
    tg_tensor *bT = tg_transpose(b, 1, 2); /* batched transposed operand */
    tg_tensor *f = tg_matmul(a, bT);
    TGO_ASSERT_VALUES(f, rt, 1, 2, 3, 4, 10, 12, 14, 16); /* b's batches are symmetric */
    TGO_RELEASE(a, b, c, w, d);
    TGO_RELEASE(a4, b4, e, bT, f);
}
Test(ops_forward, matmul_batched_and_shared_weight) { BOTH_DTYPES(check_matmul_batched); }

static void check_matmul_empty_inner(tg_dtype dt) {
    tg_tensor *a = tg_ones(dt, TG_SHAPE(2, 0)), *b = tg_ones(dt, TG_SHAPE(0, 3));
    tg_tensor *c = tg_matmul(a, b);
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 3));
    TGO_ASSERT_VALUES(c, 0, 0, 0, 0, 0, 0, 0);
    TGO_RELEASE(a, b, c);
}
Test(ops_forward, matmul_k0_gives_zeros) { BOTH_DTYPES(check_matmul_empty_inner); }

/* ---- softmax family, gather ------------------------------------------------- */

static void check_softmax(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *x = TGO_MAKE(dt, TG_SHAPE(2, 3), 0, log(2.0), log(3.0), 1000, 1000, 1000);
    tg_tensor *s = tg_softmax(x), *l = tg_log_softmax(x);
    TGO_ASSERT_SHAPE(s, dt, TG_SHAPE(2, 3));
    TGO_ASSERT_VALUES(s, rt, 1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3);
    TGO_ASSERT_SHAPE(l, dt, TG_SHAPE(2, 3));
    TGO_ASSERT_VALUES(l, rt, -log(6.0), -log(3.0), -log(2.0), -log(3.0), -log(3.0), -log(3.0));
    /* -inf entries get probability 0; a row of all -inf is NaN */
    tg_tensor *y = TGO_MAKE(dt, TG_SHAPE(2, 2), -INFINITY, 0, -INFINITY, -INFINITY);
    tg_tensor *ys = tg_softmax(y), *yl = tg_log_softmax(y);
    TGO_ASSERT_VALUES(ys, rt, 0, 1, NAN, NAN);
    TGO_ASSERT_VALUES(yl, rt, -INFINITY, 0, NAN, NAN);
    /* along the last dim of a transposed view */
    tg_tensor *z = TGO_MAKE(dt, TG_SHAPE(3, 2), 0, 1, log(2.0), 1, log(3.0), 1);
    tg_tensor *zt = tg_transpose(z, 0, 1);
    tg_tensor *zs = tg_softmax(zt);
    TGO_ASSERT_VALUES(zs, rt, 1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3);
    /* 3-D and 0-d */
    tg_tensor *u = TGO_MAKE(dt, TG_SHAPE(2, 1, 2), 0, 0, 0, log(3.0));
    tg_tensor *us = tg_softmax(u);
    TGO_ASSERT_SHAPE(us, dt, TG_SHAPE(2, 1, 2));
    TGO_ASSERT_VALUES(us, rt, 0.5, 0.5, 0.25, 0.75);
    tg_tensor *c = TGO_MAKE(dt, TG_SCALAR, 5);
    tg_tensor *cs = tg_softmax(c), *cl = tg_log_softmax(c);
    TGO_ASSERT_SHAPE(cs, dt, TG_SCALAR);
    TGO_ASSERT_VALUES(cs, rt, 1);
    TGO_ASSERT_VALUES(cl, rt, 0);
    TGO_RELEASE(x, s, l, y, ys, yl);
    TGO_RELEASE(z, zt, zs, u, us);
    TGO_RELEASE(c, cs, cl);
}
Test(ops_forward, softmax_log_softmax_stable_inf_strided) { BOTH_DTYPES(check_softmax); }

static void check_gather(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *t = TGO_MAKE(dt, TG_SHAPE(2, 4), 10, 11, 12, 13, 20, 21, 22, 23);
    tg_tensor *idx = TGO_MAKE(TG_I64, TG_SHAPE(2, 3), 3, 0, 3, 1, 1, 2);
    tg_tensor *g = tg_gather(t, idx);
    assert_plain_result(g, dt);
    TGO_ASSERT_SHAPE(g, dt, TG_SHAPE(2, 3));
    TGO_ASSERT_VALUES(g, rt, 13, 10, 13, 21, 21, 22);
    tg_tensor *i1 = TGO_MAKE(TG_I64, TG_SHAPE(2, 1), 2, 0);
    tg_tensor *g1 = tg_gather(t, i1);
    TGO_ASSERT_SHAPE(g1, dt, TG_SHAPE(2, 1));
    TGO_ASSERT_VALUES(g1, rt, 12, 20);
    /* from a transposed view: rows of t^T are t's columns */
    tg_tensor *tt = tg_transpose(t, 0, 1); /* [4, 2] */
    tg_tensor *i2 = TGO_MAKE(TG_I64, TG_SHAPE(4, 1), 1, 0, 1, 0);
    tg_tensor *g2 = tg_gather(tt, i2);
    TGO_ASSERT_VALUES(g2, rt, 20, 11, 22, 13);
    /* 3-D */
    tg_tensor *t3 = tg_view(t, TG_SHAPE(2, 2, 2));
    tg_tensor *i3 = TGO_MAKE(TG_I64, TG_SHAPE(2, 2, 1), 1, 0, 0, 1);
    tg_tensor *g3 = tg_gather(t3, i3);
    TGO_ASSERT_SHAPE(g3, dt, TG_SHAPE(2, 2, 1));
    TGO_ASSERT_VALUES(g3, rt, 11, 12, 20, 23);
    TGO_RELEASE(t, idx, g, i1, g1);
    TGO_RELEASE(tt, i2, g2, t3, i3, g3);
}
Test(ops_forward, gather_last_dim) { BOTH_DTYPES(check_gather); }

/* ---- dtype conversion ------------------------------------------------------- */

Test(ops_forward, to_dtype_converts_and_returns_same_for_same_dtype) {
    tg_tensor *d = TGO_MAKE(TG_F64, TG_SHAPE(3), 1.5, -2.25, 1e-3);
    tg_tensor *f = tg_to_dtype(d, TG_F32);
    assert_plain_result(f, TG_F32);
    TGO_ASSERT_SHAPE(f, TG_F32, TG_SHAPE(3));
    TGO_ASSERT_VALUES(f, 0, 1.5, -2.25, (double)(float)1e-3);
    cr_assert(!tg_same_storage(f, d));
    tg_tensor *back = tg_to_dtype(f, TG_F64);
    TGO_ASSERT_SHAPE(back, TG_F64, TG_SHAPE(3));
    TGO_ASSERT_VALUES(back, 0, 1.5, -2.25, (double)(float)1e-3);
    tg_tensor *same = tg_to_dtype(d, TG_F64);
    cr_assert_eq(same, d, "to_dtype to the same dtype must return t itself");
    TGO_RELEASE(same);
    /* i64 <-> float, not differentiable */
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(3), 1, -2, 3);
    tg_tensor *fi = tg_to_dtype(i, TG_F32);
    TGO_ASSERT_SHAPE(fi, TG_F32, TG_SHAPE(3));
    TGO_ASSERT_VALUES(fi, 0, 1, -2, 3);
    tg_tensor *r = TGO_MAKE(TG_F64, TG_SHAPE(2), 4, -5);
    cr_assert_eq(tg_set_requires_grad(r, true), TG_OK);
    tg_tensor *ri = tg_to_dtype(r, TG_I64);
    TGO_ASSERT_SHAPE(ri, TG_I64, TG_SHAPE(2));
    TGO_ASSERT_VALUES(ri, 0, 4, -5);
    cr_assert(!tg_requires_grad(ri));
    cr_assert_null(tg_grad_fn_name(ri));
    tg_tensor *rf = tg_to_dtype(r, TG_F32); /* float <-> float is recorded */
    cr_assert(tg_requires_grad(rf));
    cr_assert_not_null(tg_grad_fn_name(rf));
    TGO_RELEASE(d, f, back, i, fi);
    TGO_RELEASE(r, ri, rf);
}

/* ---- views -------------------------------------------------------------------- */

static tg_tensor *iota(tg_dtype dt, int ndim, const int64_t *shape) {
    double v[64];
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    cr_assert(n <= 64);
    for (int64_t i = 0; i < n; i++) v[i] = (double)i;
    return tgo_make(dt, ndim, shape, v);
}

static void check_slice(tg_dtype dt) {
    tg_tensor *x = iota(dt, TG_SHAPE(4, 5));
    tg_tensor *a = tg_slice(x, 1, 1, 5, 2);
    TGO_ASSERT_SHAPE(a, dt, TG_SHAPE(4, 2));
    TGO_ASSERT_VALUES(a, 0, 1, 3, 6, 8, 11, 13, 16, 18);
    cr_assert(tg_same_storage(a, x));
    cr_assert(!tg_is_contiguous(a));
    cr_assert_eq(tg_stride(a, 1), 2);
    cr_assert_eq(tg_stride(a, 0), 5);
    tg_tensor *b = tg_slice(x, 0, -3, -1, 1); /* rows 1, 2 */
    TGO_ASSERT_SHAPE(b, dt, TG_SHAPE(2, 5));
    TGO_ASSERT_VALUES(b, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
    cr_assert(tg_is_contiguous(b));
    tg_tensor *c = tg_slice(x, -2, -100, 100, 3); /* clamped: rows 0, 3 */
    TGO_ASSERT_SHAPE(c, dt, TG_SHAPE(2, 5));
    TGO_ASSERT_VALUES(c, 0, 0, 1, 2, 3, 4, 15, 16, 17, 18, 19);
    tg_tensor *d = tg_slice(x, 0, 3, 1, 1); /* empty */
    TGO_ASSERT_SHAPE(d, dt, TG_SHAPE(0, 5));
    tg_tensor *e = tg_slice(a, 0, 1, 4, 2); /* slice of a slice: rows 1, 3 */
    TGO_ASSERT_SHAPE(e, dt, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(e, 0, 6, 8, 16, 18);
    tg_tensor *f = tg_slice(x, -1, 4, 5, 1); /* last column */
    TGO_ASSERT_SHAPE(f, dt, TG_SHAPE(4, 1));
    TGO_ASSERT_VALUES(f, 0, 4, 9, 14, 19);
    TGO_RELEASE(x, a, b, c, d, e);
    TGO_RELEASE(f);
}
Test(ops_views, slice_steps_negative_and_clamped_bounds) { BOTH_DTYPES(check_slice); }

static void check_view_reshape(tg_dtype dt) {
    tg_tensor *x = iota(dt, TG_SHAPE(2, 6));
    tg_tensor *v = tg_view(x, TG_SHAPE(3, -1));
    TGO_ASSERT_SHAPE(v, dt, TG_SHAPE(3, 4));
    TGO_ASSERT_VALUES(v, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    cr_assert(tg_same_storage(v, x));
    tg_tensor *row = tg_slice(x, 0, 1, 2, 1); /* contiguous [1, 6] at offset 6 */
    tg_tensor *rv = tg_view(row, TG_SHAPE(2, 3));
    TGO_ASSERT_VALUES(rv, 0, 6, 7, 8, 9, 10, 11);
    tg_tensor *sc = tg_view(row, TG_SHAPE(6, 1, 1));
    TGO_ASSERT_SHAPE(sc, dt, TG_SHAPE(6, 1, 1));
    /* reshape: a view when possible, a copy of the C-order values otherwise */
    tg_tensor *r1 = tg_reshape(x, TG_SHAPE(12));
    cr_assert(tg_same_storage(r1, x));
    tg_tensor *y = iota(dt, TG_SHAPE(2, 3));
    tg_tensor *yt = tg_transpose(y, 0, 1);
    tg_tensor *r2 = tg_reshape(yt, TG_SHAPE(6));
    TGO_ASSERT_SHAPE(r2, dt, TG_SHAPE(6));
    TGO_ASSERT_VALUES(r2, 0, 0, 3, 1, 4, 2, 5);
    cr_assert(!tg_same_storage(r2, y));
    /* a view of a transposed tensor that only splits a dim is possible */
    tg_tensor *r3 = tg_view(yt, TG_SHAPE(3, 2, 1));
    cr_assert_not_null(r3, "%s", tg_last_error());
    cr_assert(tg_same_storage(r3, y));
    TGO_ASSERT_VALUES(r3, 0, 0, 3, 1, 4, 2, 5);
    TGO_RELEASE(x, v, row, rv, sc);
    TGO_RELEASE(r1, y, yt, r2, r3);
}
Test(ops_views, view_and_reshape) { BOTH_DTYPES(check_view_reshape); }

static void check_transpose(tg_dtype dt) {
    tg_tensor *x = iota(dt, TG_SHAPE(2, 3));
    tg_tensor *t = tg_transpose(x, 0, 1), *t2 = tg_transpose(x, -1, -2);
    TGO_ASSERT_SHAPE(t, dt, TG_SHAPE(3, 2));
    TGO_ASSERT_VALUES(t, 0, 0, 3, 1, 4, 2, 5);
    cr_assert_eq(tg_stride(t, 0), 1);
    cr_assert_eq(tg_stride(t, 1), 3);
    cr_assert(tg_same_storage(t, x));
    tgo_assert_same(t2, t, 0);
    tg_tensor *y = iota(dt, TG_SHAPE(2, 3, 4));
    tg_tensor *yt = tg_transpose(y, 0, 2);
    TGO_ASSERT_SHAPE(yt, dt, TG_SHAPE(4, 3, 2));
    double want[24];
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++) want[k * 6 + j * 2 + i] = 12 * i + 4 * j + k;
    tgo_assert_close(yt, want, 24, 0);
    tg_tensor *id = tg_transpose(y, 1, 1);
    TGO_ASSERT_SHAPE(id, dt, TG_SHAPE(2, 3, 4));
    cr_assert(tg_is_contiguous(id));
    TGO_RELEASE(x, t, t2, y, yt, id);
}
Test(ops_views, transpose_2d_3d_negative_dims) { BOTH_DTYPES(check_transpose); }

static void check_expand(tg_dtype dt) {
    tg_tensor *x = TGO_MAKE(dt, TG_SHAPE(3, 1), 1, 2, 3);
    tg_tensor *e = tg_expand(x, TG_SHAPE(2, -1, 4));
    TGO_ASSERT_SHAPE(e, dt, TG_SHAPE(2, 3, 4));
    double want[24];
    for (int i = 0; i < 24; i++) want[i] = (i / 4) % 3 + 1;
    tgo_assert_close(e, want, 24, 0);
    cr_assert_eq(tg_stride(e, 0), 0);
    cr_assert_eq(tg_stride(e, 1), 1);
    cr_assert_eq(tg_stride(e, 2), 0);
    cr_assert(tg_same_storage(e, x));
    tg_tensor *s = TGO_MAKE(dt, TG_SCALAR, 7);
    tg_tensor *es = tg_expand(s, TG_SHAPE(2, 2));
    TGO_ASSERT_VALUES(es, 0, 7, 7, 7, 7);
    tg_tensor *same = tg_expand(x, TG_SHAPE(3, 1));
    TGO_ASSERT_VALUES(same, 0, 1, 2, 3);
    TGO_RELEASE(x, e, s, es, same);
}
Test(ops_views, expand_broadcasts_with_stride_zero) { BOTH_DTYPES(check_expand); }

static void check_contiguous_clone(tg_dtype dt) {
    tg_tensor *x = iota(dt, TG_SHAPE(2, 3));
    tg_tensor *c = tg_contiguous(x);
    cr_assert_eq(c, x, "contiguous of a contiguous tensor is the tensor itself");
    TGO_RELEASE(c);
    tg_tensor *t = tg_transpose(x, 0, 1);
    tg_tensor *ct = tg_contiguous(t);
    cr_assert(tg_is_contiguous(ct));
    cr_assert(!tg_same_storage(ct, x));
    TGO_ASSERT_SHAPE(ct, dt, TG_SHAPE(3, 2));
    TGO_ASSERT_VALUES(ct, 0, 0, 3, 1, 4, 2, 5);
    tg_tensor *k = tg_clone(x);
    cr_assert_neq(k, x);
    cr_assert(!tg_same_storage(k, x));
    cr_assert(tg_is_contiguous(k));
    TGO_ASSERT_VALUES(k, 0, 0, 1, 2, 3, 4, 5);
    tg_tensor *kt = tg_clone(t);
    cr_assert(tg_is_contiguous(kt));
    TGO_ASSERT_VALUES(kt, 0, 0, 3, 1, 4, 2, 5);
    /* the clone owns its data: writing it leaves x alone */
    cr_assert_eq(tg_fill_(k, 9), TG_OK);
    TGO_ASSERT_VALUES(x, 0, 0, 1, 2, 3, 4, 5);
    TGO_ASSERT_VALUES(k, 0, 9, 9, 9, 9, 9, 9);
    TGO_RELEASE(x, t, ct, k, kt);
}
Test(ops_views, contiguous_and_clone) { BOTH_DTYPES(check_contiguous_clone); }

Test(ops_views, views_share_the_version_counter) {
    tg_tensor *x = iota(TG_F64, TG_SHAPE(2, 3));
    tg_tensor *t = tg_transpose(x, 0, 1), *s = tg_slice(x, 1, 0, 3, 2);
    tg_tensor *row0 = tg_slice(x, 0, 0, 1, 1);
    tg_tensor *v = tg_view(x, TG_SHAPE(6)), *e = tg_expand(row0, TG_SHAPE(4, 3));
    uint64_t v0 = tg_version(x);
    cr_assert_eq(tg_fill_(s, 1), TG_OK);
    cr_assert_eq(tg_version(x), v0 + 1);
    cr_assert_eq(tg_version(t), v0 + 1);
    cr_assert_eq(tg_version(v), v0 + 1);
    cr_assert_eq(tg_version(e), v0 + 1);
    TGO_ASSERT_VALUES(x, 0, 1, 1, 1, 1, 4, 1);
    TGO_ASSERT_VALUES(e, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    tg_tensor *c = tg_clone(x);
    cr_assert_eq(tg_scale_(c, 2), TG_OK);
    cr_assert_eq(tg_version(x), v0 + 1, "a clone has its own counter");
    TGO_RELEASE(x, t, s, row0, v, e, c);
}
