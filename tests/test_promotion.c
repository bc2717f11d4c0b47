/* tests/test_promotion.c - PyTorch's type promotion in the elementwise ops and
 * the sums: what a loss author writes with masks and counts (x * mask,
 * mask.sum(), loss / count, where(mask, x, 0-d)), the 0-d rule, the
 * gradient of a promoted float operand in its own dtype, the refusals
 * PyTorch makes (bool subtraction, bool ** bool, the mean of integers), i64
 * ** i64 and exact i64 sums. The result dtype of every op for every pair of
 * dtypes is compared with PyTorch by the registry's differential suite. */
#include "tg_ops_test_util.h"

TestSuite(promotion, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

static tg_tensor *bools(int64_t n, const double *v) { return tgo_make(TG_BOOL, 1, &n, v); }

/* The loss author's sentence: masked token mean with a bool mask and an i64 count. */
Test(promotion, mask_times_loss_over_count) {
    tg_tensor *loss = TGO_MAKE(TG_F32, TG_SHAPE(4), 1.5, -2.0, 4.0, 8.0);
    cr_assert_eq(tg_set_requires_grad(loss, true), TG_OK);
    tg_tensor *mask = bools(4, (const double[]){1, 0, 1, 1});
    tg_tensor *count = tg_sum(mask);
    tgo_assert_shape(count, TG_I64, 0, NULL);
    cr_assert_eq(tgt_at(count, 0), 3.0);
    tg_tensor *num = tg_sum(tg_mul(loss, mask));
    tgo_assert_shape(num, TG_F32, 0, NULL);
    tg_tensor *mean = tg_div(num, count); /* f32 0-d / i64 0-d: f32 */
    tgo_assert_shape(mean, TG_F32, 0, NULL);
    TGO_ASSERT_VALUES(mean, 1e-7, 13.5 / 3);
    cr_assert_eq(tg_backward(mean, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(loss);
    tgo_assert_shape(g, TG_F32, 1, (int64_t[]){4});
    TGO_ASSERT_VALUES(g, 1e-7, 1.0 / 3, 0, 1.0 / 3, 1.0 / 3);
}

/* A 0-d operand of a higher category decides; of the same category it does
 * not (f32 (3) * f64 0-d stays f32; i64 (3) * f64 0-d is f64). */
Test(promotion, zero_dim_operands) {
    tg_tensor *f = TGO_MAKE(TG_F32, TG_SHAPE(3), 1, 2, 3);
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(3), 1, 2, 3);
    tg_tensor *half = TGO_MAKE(TG_F64, TG_SCALAR, 0.5);
    tgo_assert_shape(tg_mul(f, half), TG_F32, 1, (int64_t[]){3});
    tgo_assert_shape(tg_mul(i, half), TG_F64, 1, (int64_t[]){3});
    TGO_ASSERT_VALUES(tg_mul(i, half), 0, 0.5, 1, 1.5);
    tgo_assert_shape(tg_add(TGO_MAKE(TG_F32, TG_SCALAR, 1), half), TG_F64, 0, NULL);
    /* where(mask, x, 0-d): x's f32 kept */
    tg_tensor *m = bools(3, (const double[]){1, 0, 1});
    tg_tensor *w = tg_where(m, f, TGO_MAKE(TG_F64, TG_SCALAR, 0));
    tgo_assert_shape(w, TG_F32, 1, (int64_t[]){3});
    TGO_ASSERT_VALUES(w, 0, 1, 0, 3);
    /* where with i64 and f32 branches: f32 */
    tgo_assert_shape(tg_where(m, i, f), TG_F32, 1, (int64_t[]){3});
}

/* The float operand of a promoted op gets its gradient in its own dtype,
 * through the recorded conversion. */
Test(promotion, gradient_comes_back_in_the_operand_dtype) {
    tg_tensor *a = TGO_MAKE(TG_F32, TG_SHAPE(2, 2), 1, 2, 3, 4);
    tg_tensor *b = TGO_MAKE(TG_F64, TG_SHAPE(2), 0.5, -1);
    cr_assert_eq(tg_set_requires_grad(a, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(b, true), TG_OK);
    tg_tensor *y = tg_mul(a, b);
    tgo_assert_shape(y, TG_F64, 2, (int64_t[]){2, 2});
    cr_assert_eq(tg_backward(tg_sum(tg_div(y, a)), NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *ga = tg_grad(a), *gb = tg_grad(b);
    tgo_assert_shape(ga, TG_F32, 2, (int64_t[]){2, 2});
    tgo_assert_shape(gb, TG_F64, 1, (int64_t[]){2});
    TGO_ASSERT_VALUES(ga, 1e-7, 0, 0, 0, 0);
    TGO_ASSERT_VALUES(gb, 1e-15, 2, 2);
}

/* What PyTorch refuses is refused, naming the op. */
Test(promotion, refusals_as_pytorch) {
    tg_tensor *b = bools(2, (const double[]){1, 0});
    tg_tensor *f = TGO_MAKE(TG_F32, TG_SHAPE(2), 1, 2);
    cr_assert_null(tg_sub(b, b));
    tgt_assert_error(TG_ERR_DTYPE, "tg_sub", "bool", NULL);
    cr_assert_null(tg_sub(f, b));
    tgt_assert_error(TG_ERR_DTYPE, "tg_sub", "bool", NULL);
    cr_assert_null(tg_pow(b, b));
    tgt_assert_error(TG_ERR_DTYPE, "tg_pow", "bool", NULL);
    cr_assert_null(tg_mean(TGO_MAKE(TG_I64, TG_SHAPE(2), 1, 2)));
    tgt_assert_error(TG_ERR_DTYPE, "tg_mean", "i64", NULL);
    tg_clear_error();
    /* bool + bool is a bool (logical or), bool * bool logical and */
    tg_tensor *c = bools(2, (const double[]){1, 1});
    tgo_assert_shape(tg_add(b, c), TG_BOOL, 1, (int64_t[]){2});
    TGO_ASSERT_VALUES(tg_add(b, c), 0, 1, 1);
    TGO_ASSERT_VALUES(tg_mul(b, c), 0, 1, 0);
    /* integer true division gives f32 */
    tg_tensor *q = tg_div(TGO_MAKE(TG_I64, TG_SHAPE(2), 1, 3), TGO_MAKE(TG_I64, TG_SHAPE(2), 2, 4));
    tgo_assert_shape(q, TG_F32, 1, (int64_t[]){2});
    TGO_ASSERT_VALUES(q, 0, 0.5, 0.75);
}

/* i64 ** i64 by squaring, wrapping; negative exponents as PyTorch's CPU. */
Test(promotion, integer_pow) {
    tg_tensor *base = TGO_MAKE(TG_I64, TG_SHAPE(6), 3, -2, 1, -1, 2, 0);
    tg_tensor *ex = TGO_MAKE(TG_I64, TG_SHAPE(6), 4, 3, -5, -3, -1, 0);
    tg_tensor *p = tg_pow(base, ex);
    tgo_assert_shape(p, TG_I64, 1, (int64_t[]){6});
    TGO_ASSERT_VALUES(p, 0, 81, -8, 1, -1, 0, 1);
    /* 3 ** 41 wraps around modulo 2^64 */
    int64_t v = 0;
    tg_tensor *w = tg_pow(TGO_MAKE(TG_I64, TG_SCALAR, 3), TGO_MAKE(TG_I64, TG_SCALAR, 41));
    cr_assert_eq(tg_copy_out(w, TG_I64, &v, sizeof v), TG_OK);
    uint64_t want = 1;
    for (int k = 0; k < 41; k++) want *= 3;
    cr_assert_eq(v, (int64_t)want);
}

/* Sums of i64 and bool are exact i64 (past 2^53, wrapping past 2^63). */
Test(promotion, integer_sums_are_exact) {
    const int64_t big[3] = {INT64_MAX, 1, (int64_t)1 << 53};
    tg_tensor *t = tg_from_data(TG_I64, TG_SHAPE(3), big);
    int64_t got = 0;
    cr_assert_eq(tg_copy_out(tg_sum(t), TG_I64, &got, sizeof got), TG_OK);
    cr_assert_eq(got, (int64_t)((uint64_t)INT64_MAX + 1 + ((uint64_t)1 << 53)));
    const int64_t two[2] = {((int64_t)1 << 53) + 1, 2};
    tg_tensor *exact = tg_from_data(TG_I64, TG_SHAPE(2), two);
    cr_assert_eq(tg_copy_out(tg_sum(exact), TG_I64, &got, sizeof got), TG_OK);
    cr_assert_eq(got, ((int64_t)1 << 53) + 3);
    /* a bool mask summed along a dim of a transposed view */
    tg_tensor *m = tg_transpose(tgo_make(TG_BOOL, 2, (int64_t[]){2, 3},
                                         (const double[]){1, 0, 1, 1, 1, 0}), 0, 1);
    tg_tensor *s = tg_sum_dim(m, 1, false);
    tgo_assert_shape(s, TG_I64, 1, (int64_t[]){3});
    TGO_ASSERT_VALUES(s, 0, 2, 1, 1);
    tgo_assert_shape(tg_sum_dim(m, 0, true), TG_I64, 2, (int64_t[]){1, 2});
    TGO_ASSERT_VALUES(tg_sum(tg_zeros(TG_BOOL, TG_SHAPE(0))), 0, 0);
}

/* In-place arithmetic computes in the promoted dtype and writes back converted,
 * as PyTorch: f32 += f64 is rounded once into the f32 tensor, i64 *= i64 stays
 * exact, i64 += bool is i64; a float result into an i64 tensor and an i64 one
 * into a bool tensor are refused, nothing written. Recorded, the gradient
 * reaches the other operand in its own dtype. */
Test(promotion, inplace_ops_promote_and_write_back) {
    tg_tensor *t = TGO_MAKE(TG_F32, TG_SHAPE(3), 1.1, 2.2, 3.3);
    tg_tensor *d = TGO_MAKE(TG_F64, TG_SHAPE(3), 1e-9, 2.0, 0.1);
    cr_assert_eq(tg_add_(t, d), TG_OK, "%s", tg_last_error());
    tgo_assert_shape(t, TG_F32, 1, (int64_t[]){3});
    const float *v = tg_data(t);
    cr_assert(v[0] == (float)((double)1.1f + 1e-9) && v[1] == (float)((double)2.2f + 2.0) &&
              v[2] == (float)((double)3.3f + 0.1), "%.9g %.9g %.9g", v[0], v[1], v[2]);
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(3), 3037000500.0, -2, 5);
    cr_assert_eq(tg_mul_(i, TGO_MAKE(TG_I64, TG_SHAPE(3), 3037000500.0, 3, -1)), TG_OK);
    const int64_t *iv = tg_data(i);
    cr_assert_eq(iv[0], (int64_t)((uint64_t)3037000500 * (uint64_t)3037000500));
    cr_assert(iv[1] == -6 && iv[2] == -5);
    cr_assert_eq(tg_add_(i, bools(3, (const double[]){1, 0, 1})), TG_OK);
    cr_assert(iv[1] == -6 && iv[2] == -4);
    tgo_snap si = tgo_snapshot(i);
    cr_assert_eq(tg_add_(i, d), TG_ERR_DTYPE);
    tgt_assert_error(TG_ERR_DTYPE, "tg_add_", "f64", "i64", NULL);
    tgo_assert_unchanged(&si);
    tg_tensor *b = bools(3, (const double[]){1, 0, 1});
    cr_assert_eq(tg_mul_(b, b), TG_OK); /* bool *= bool: logical and, as PyTorch */
    cr_assert_eq(tg_add_(b, i), TG_ERR_DTYPE);
    tgt_assert_error(TG_ERR_DTYPE, "tg_add_", "i64", "bool", NULL);
    /* recorded: f32 y *= f64 w (w requires grad): dy/dw in f64 */
    tg_tensor *w = TGO_MAKE(TG_F64, TG_SHAPE(3), 0.5, 2, -1);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    tg_tensor *y = tg_clone(TGO_MAKE(TG_F32, TG_SHAPE(3), 1, 2, 3));
    cr_assert_eq(tg_mul_(y, w), TG_OK, "%s", tg_last_error());
    tgo_assert_shape(y, TG_F32, 1, (int64_t[]){3});
    cr_assert(tg_requires_grad(y));
    cr_assert_eq(tg_backward(tg_sum(y), NULL, false), TG_OK, "%s", tg_last_error());
    tgo_assert_shape(tg_grad(w), TG_F64, 1, (int64_t[]){3});
    TGO_ASSERT_VALUES(tg_grad(w), 0, 1, 2, 3);
}
