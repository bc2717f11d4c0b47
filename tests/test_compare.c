/* tests/test_compare.c - the bool dtype, comparisons, logic, the float
 * predicates and i64 arithmetic. Expected values were checked with PyTorch
 * (torch 2.x, CPU): NaN compares unequal, a NaN is true as a truth value,
 * promotion bool < i64 < f32 < f64, a non-integer scalar against an integer
 * tensor compares in f32, integer arithmetic wraps around, remainder and
 * floor_divide round toward -inf, a zero divisor is refused (PyTorch raises
 * ZeroDivisionError; with INT64_MIN // -1 PyTorch's CPU dies of SIGFPE, we
 * wrap to INT64_MIN). Every result is checked for dtype, shape and for not
 * requiring grad; each bad input for its status, message and that nothing
 * is left behind (the fixture). */
#include <stdint.h>

#include "tg_ops_test_util.h"

/* Each test runs in a scope that owns every tensor it makes. */
TestSuite(compare, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

#define I64_MAX INT64_MAX
#define I64_MIN INT64_MIN

/* Asserts a bool result of the given shape holding want[] (0/1). */
static void assert_bool(tg_tensor *t, int ndim, const int64_t *shape, const int *want) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(t), TG_BOOL, "dtype %s", tg_dtype_name(tg_get_dtype(t)));
    cr_assert(!tg_requires_grad(t));
    cr_assert_eq(tg_ndim(t), ndim);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        cr_assert_eq(tg_shape(t)[d], shape[d]);
        n *= shape[d];
    }
    uint8_t v[64];
    cr_assert(n <= 64);
    cr_assert_eq(tg_copy_out(t, TG_BOOL, v, sizeof v), TG_OK, "%s", tg_last_error());
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(v[i], (uint8_t)want[i], "element %lld: %d, expected %d", (long long)i, v[i],
                     want[i]);
}
#define ASSERT_BOOL(t, shape_pair, ...) assert_bool(t, shape_pair, (const int[]){__VA_ARGS__})

static tg_tensor *i64s(int ndim, const int64_t *shape, const int64_t *v) {
    tg_tensor *t = tg_from_data(TG_I64, ndim, shape, v);
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}
#define I64S(shape_pair, ...) i64s(shape_pair, (const int64_t[]){__VA_ARGS__})

/* Asserts an i64 result holding want[] exactly. */
static void assert_i64(tg_tensor *t, int64_t n, const int64_t *want) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(t), TG_I64);
    cr_assert(!tg_requires_grad(t));
    cr_assert_eq(tg_numel(t), n);
    int64_t v[64];
    cr_assert(n <= 64);
    cr_assert_eq(tg_copy_out(t, TG_I64, v, sizeof v), TG_OK, "%s", tg_last_error());
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(v[i], want[i], "element %lld: %lld, expected %lld", (long long)i,
                     (long long)v[i], (long long)want[i]);
}
#define ASSERT_I64(t, ...)                                                                 \
    assert_i64(t, (int64_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),     \
               (const int64_t[]){__VA_ARGS__})

/* ---- the bool dtype --------------------------------------------------------------------- */

Test(compare, bool_dtype_converts_as_pytorch) {
    cr_assert_eq(tg_dtype_size(TG_BOOL), 1);
    cr_assert_str_eq(tg_dtype_name(TG_BOOL), "bool");
    /* to bool: != 0, NaN true, -0 false; i64 exactly (2^62 is true) */
    tg_tensor *f = TGO_MAKE(TG_F32, TG_SHAPE(4), NAN, -0.0, 2.0, -INFINITY);
    ASSERT_BOOL(tg_to_dtype(f, TG_BOOL), TG_SHAPE(4), 1, 0, 1, 1);
    tg_tensor *i = I64S(TG_SHAPE(3), 0, (int64_t)1 << 62, -1);
    ASSERT_BOOL(tg_to_dtype(i, TG_BOOL), TG_SHAPE(3), 0, 1, 1);
    /* from bool: 0 or 1 in every dtype */
    uint8_t raw[3] = {0, 7, 1}; /* any non-zero byte is true, stored as 1 */
    tg_tensor *b = tg_from_data(TG_BOOL, TG_SHAPE(3), raw);
    TGO_ASSERT_VALUES(tg_to_dtype(b, TG_F64), 0, 0, 1, 1);
    ASSERT_I64(tg_to_dtype(b, TG_I64), 0, 1, 1);
    ASSERT_BOOL(tg_to_dtype(b, TG_BOOL), TG_SHAPE(3), 0, 1, 1);
    uint8_t back[3];
    cr_assert_eq(tg_copy_out(b, TG_BOOL, back, sizeof back), TG_OK);
    cr_assert(back[0] == 0 && back[1] == 1 && back[2] == 1);
    /* creation and fill */
    ASSERT_BOOL(tg_full(TG_BOOL, TG_SHAPE(2), NAN), TG_SHAPE(2), 1, 1);
    ASSERT_BOOL(tg_zeros(TG_BOOL, TG_SHAPE(2)), TG_SHAPE(2), 0, 0);
    ASSERT_BOOL(tg_ones(TG_BOOL, TG_SHAPE(1)), TG_SHAPE(1), 1);
    /* a bool tensor never requires grad */
    cr_assert_neq(tg_set_requires_grad(b, true), TG_OK);
    tgt_assert_error(TG_ERR_DTYPE, NULL);
    tg_clear_error();
    /* printed as PyTorch: true/false; i64 exactly */
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    cr_assert_eq(tg_print(mf, b, 8), TG_OK);
    tg_tensor *big = I64S(TG_SHAPE(1), I64_MAX);
    cr_assert_eq(tg_print(mf, big, 8), TG_OK);
    fclose(mf);
    cr_assert(strstr(buf, "bool[3] [false, true, true]"), "%s", buf);
    cr_assert(strstr(buf, "[9223372036854775807]"), "%s", buf);
    free(buf);
}

/* ---- comparisons ---------------------------------------------------------------------- */

Test(compare, comparisons_broadcast_with_nan_and_infinities) {
    tg_tensor *a = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, NAN, INFINITY, -0.0, 2, -INFINITY);
    tg_tensor *b = TGO_MAKE(TG_F64, TG_SHAPE(3), 1, NAN, INFINITY); /* broadcast over rows */
    ASSERT_BOOL(tg_eq(a, b), TG_SHAPE(2, 3), 1, 0, 1, 0, 0, 0);
    ASSERT_BOOL(tg_ne(a, b), TG_SHAPE(2, 3), 0, 1, 0, 1, 1, 1);
    ASSERT_BOOL(tg_lt(a, b), TG_SHAPE(2, 3), 0, 0, 0, 1, 0, 1);
    ASSERT_BOOL(tg_le(a, b), TG_SHAPE(2, 3), 1, 0, 1, 1, 0, 1);
    ASSERT_BOOL(tg_gt(a, b), TG_SHAPE(2, 3), 0, 0, 0, 0, 0, 0);
    ASSERT_BOOL(tg_ge(a, b), TG_SHAPE(2, 3), 1, 0, 1, 0, 0, 0);
    /* -0 == 0; a transposed (strided) operand */
    tg_tensor *z = TGO_MAKE(TG_F64, TG_SHAPE(1), 0.0);
    tg_tensor *at = tg_transpose(a, 0, 1); /* (3, 2): 1, -0, NaN, 2, inf, -inf */
    ASSERT_BOOL(tg_eq(at, z), TG_SHAPE(3, 2), 0, 1, 0, 0, 0, 0);
    ASSERT_BOOL(tg_ge_scalar(at, 0.0), TG_SHAPE(3, 2), 1, 1, 0, 1, 1, 0);
}

Test(compare, mixed_dtypes_promote_as_pytorch) {
    tg_tensor *i = I64S(TG_SHAPE(3), 1, 2, 3);
    tg_tensor *f = TGO_MAKE(TG_F32, TG_SHAPE(3), 1.0, 2.5, 3.0);
    ASSERT_BOOL(tg_eq(i, f), TG_SHAPE(3), 1, 0, 1);
    tg_tensor *bl = TGO_MAKE(TG_BOOL, TG_SHAPE(2), 1, 0);
    tg_tensor *h = TGO_MAKE(TG_F64, TG_SHAPE(2), 0.5, 0.5);
    ASSERT_BOOL(tg_lt(bl, h), TG_SHAPE(2), 0, 1);
    /* a scalar: t's dtype; a non-integer against integers compares in f32 */
    ASSERT_BOOL(tg_gt_scalar(i, 1.5), TG_SHAPE(3), 0, 1, 1);
    tg_tensor *big = I64S(TG_SHAPE(1), 16777217); /* 2^24 + 1: 2^24 in f32 */
    ASSERT_BOOL(tg_gt_scalar(big, 16777216.5), TG_SHAPE(1), 0);
    ASSERT_BOOL(tg_eq_scalar(big, 16777217.0), TG_SHAPE(1), 1);
    tg_tensor *f1 = TGO_MAKE(TG_F32, TG_SHAPE(1), 0.1);
    ASSERT_BOOL(tg_eq_scalar(f1, 0.1), TG_SHAPE(1), 1); /* 0.1 converted to f32 first */
    /* bool against integers: true == 1, true != 2 */
    ASSERT_BOOL(tg_eq_scalar(bl, 2), TG_SHAPE(2), 0, 0);
    ASSERT_BOOL(tg_eq_scalar(bl, 1), TG_SHAPE(2), 1, 0);
    ASSERT_BOOL(tg_eq_scalar(TGO_MAKE(TG_F64, TG_SHAPE(1), NAN), NAN), TG_SHAPE(1), 0);
}

Test(compare, logic_and_predicates) {
    tg_tensor *a = TGO_MAKE(TG_F64, TG_SHAPE(4), NAN, 0, 1, -0.0);
    tg_tensor *b = I64S(TG_SHAPE(4), 1, 1, 0, 0);
    ASSERT_BOOL(tg_logical_and(a, b), TG_SHAPE(4), 1, 0, 0, 0);
    ASSERT_BOOL(tg_logical_or(a, b), TG_SHAPE(4), 1, 1, 1, 0);
    ASSERT_BOOL(tg_logical_xor(a, b), TG_SHAPE(4), 0, 1, 1, 0);
    ASSERT_BOOL(tg_logical_not(a), TG_SHAPE(4), 0, 1, 0, 1);
    tg_tensor *f = TGO_MAKE(TG_F32, TG_SHAPE(5), NAN, INFINITY, -INFINITY, 0, -3e38);
    ASSERT_BOOL(tg_isnan(f), TG_SHAPE(5), 1, 0, 0, 0, 0);
    ASSERT_BOOL(tg_isinf(f), TG_SHAPE(5), 0, 1, 1, 0, 0);
    ASSERT_BOOL(tg_isfinite(f), TG_SHAPE(5), 0, 0, 0, 1, 1);
    ASSERT_BOOL(tg_isfinite(b), TG_SHAPE(4), 1, 1, 1, 1);
    ASSERT_BOOL(tg_isnan(b), TG_SHAPE(4), 0, 0, 0, 0);
    /* 0-d */
    tg_tensor *s = TGO_MAKE(TG_F64, TG_SCALAR, 2.0);
    ASSERT_BOOL(tg_logical_not(s), TG_SCALAR, 0);
}

Test(compare, masks_from_comparisons_drive_where_and_gradients) {
    /* the loss author's pattern: mask = targets != -100, safe = where(mask, targets, 0) */
    tg_tensor *y = I64S(TG_SHAPE(4), 3, -100, 0, -100);
    tg_tensor *mask = tg_ne_scalar(y, -100);
    tg_tensor *zero = I64S(TG_SCALAR, 0);
    ASSERT_I64(tg_where(mask, y, zero), 3, 0, 0, 0);
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(4), 1, 2, 3, 4);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *xz = tg_zeros(TG_F64, TG_SHAPE(4));
    tg_tensor *m = tg_where(mask, x, xz);
    tg_tensor *l = tg_sum(m);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 1, 0, 1, 0);
    /* bool values selected too */
    tg_tensor *t = TGO_MAKE(TG_BOOL, TG_SHAPE(1), 1), *fl = TGO_MAKE(TG_BOOL, TG_SHAPE(1), 0);
    ASSERT_BOOL(tg_where(mask, t, fl), TG_SHAPE(4), 1, 0, 1, 0);
    /* a and b of different dtypes are promoted, as PyTorch's where: i64 and f64 give f64 */
    tg_tensor *w = tg_where(mask, y, x);
    cr_assert_not_null(w, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(w), TG_F64);
    TGO_ASSERT_VALUES(w, 0, 3, 2, 0, 4);
}

/* ---- i64 arithmetic ---------------------------------------------------------------------- */

Test(compare, i64_arithmetic_wraps_as_pytorch) {
    tg_tensor *a = I64S(TG_SHAPE(3), I64_MAX, I64_MIN, -7);
    tg_tensor *one = I64S(TG_SCALAR, 1), *two = I64S(TG_SCALAR, 2);
    ASSERT_I64(tg_add(a, one), I64_MIN, I64_MIN + 1, -6);
    ASSERT_I64(tg_sub(a, one), I64_MAX - 1, I64_MAX, -8);
    ASSERT_I64(tg_mul(a, two), -2, 0, -14);
    ASSERT_I64(tg_neg(a), -I64_MAX, I64_MIN, 7);
    ASSERT_I64(tg_abs(a), I64_MAX, I64_MIN, 7);
    ASSERT_I64(tg_sign(a), 1, -1, -1);
    ASSERT_I64(tg_maximum(a, one), I64_MAX, 1, 1);
    ASSERT_I64(tg_minimum(a, one), 1, I64_MIN, -7);
    ASSERT_I64(tg_square(I64S(TG_SHAPE(2), -3, 4)), 9, 16);
    ASSERT_I64(tg_add_scalar(a, -1), I64_MAX - 1, I64_MAX, -8);
    ASSERT_I64(tg_scale(a, 3), I64_MAX - 2, I64_MIN, -21);
    ASSERT_I64(tg_clamp(I64S(TG_SHAPE(3), 1, 5, 9), 3, INFINITY), 3, 5, 9);
    ASSERT_I64(tg_clamp(I64S(TG_SHAPE(3), 1, 5, 9), 3, 2), 2, 2, 2); /* lo > hi: hi */
    ASSERT_I64(tg_floor(a), I64_MAX, I64_MIN, -7);
    /* broadcasting and a strided operand */
    tg_tensor *m = I64S(TG_SHAPE(2, 2), 1, 2, 3, 4), *mt = tg_transpose(m, 0, 1);
    tg_tensor *r = I64S(TG_SHAPE(2), 10, 20);
    ASSERT_I64(tg_add(mt, r), 11, 23, 12, 24);
}

Test(compare, remainder_and_floor_divide_round_toward_minus_infinity) {
    tg_tensor *a = I64S(TG_SHAPE(4), -7, 7, -7, 7);
    tg_tensor *b = I64S(TG_SHAPE(4), 3, -3, -3, 3);
    ASSERT_I64(tg_remainder(a, b), 2, -2, -1, 1);
    tg_tensor *c = I64S(TG_SHAPE(4), 2, -2, -2, 2);
    ASSERT_I64(tg_floor_divide(a, c), -4, -4, 3, 3);
    tg_tensor *mn = I64S(TG_SHAPE(1), I64_MIN), *m1 = I64S(TG_SHAPE(1), -1);
    ASSERT_I64(tg_floor_divide(mn, m1), I64_MIN); /* wraps; PyTorch's CPU traps here */
    ASSERT_I64(tg_remainder(mn, m1), 0);
    /* a zero divisor anywhere is refused, naming where */
    tg_tensor *z = I64S(TG_SHAPE(4), 1, 2, 0, 4);
    cr_assert_null(tg_remainder(a, z));
    tgt_assert_error(TG_ERR_VALUE, "tg_remainder", "division by zero", "element 2", NULL);
    cr_assert_null(tg_floor_divide(a, z));
    tgt_assert_error(TG_ERR_VALUE, "tg_floor_divide", "division by zero", NULL);
    /* the first zero in C order of the divisor as seen: several zeros, a
     * transposed view, a 0-d divisor broadcast */
    cr_assert_null(tg_remainder(a, I64S(TG_SHAPE(4), 1, 0, 0, 4)));
    tgt_assert_error(TG_ERR_VALUE, "element 1 of", NULL);
    tg_tensor *zt = tg_transpose(I64S(TG_SHAPE(2, 2), 1, 0, 2, 3), 0, 1); /* [[1, 2], [0, 3]] */
    cr_assert_null(tg_remainder(I64S(TG_SHAPE(2, 2), 5, 6, 7, 8), zt));
    tgt_assert_error(TG_ERR_VALUE, "element 2 of", NULL);
    cr_assert_null(tg_floor_divide(a, i64s(0, NULL, (const int64_t[]){0})));
    tgt_assert_error(TG_ERR_VALUE, "element 0 of", NULL);
}

Test(compare, bad_inputs_are_refused_cleanly) {
    tg_tensor *i = I64S(TG_SHAPE(3), 1, 2, 3), *f = TGO_MAKE(TG_F64, TG_SHAPE(3), 1, 2, 3);
    tg_tensor *f2 = TGO_MAKE(TG_F64, TG_SHAPE(2), 1, 2);
    cr_assert_null(tg_silu(i)); /* PyTorch has no silu of integers either */
    tgt_assert_error(TG_ERR_DTYPE, "tg_silu", "i64", NULL);
    tg_tensor *bo = tg_gt_scalar(f, 1.5);
    cr_assert_null(tg_remainder(bo, bo)); /* PyTorch has no remainder of two bools */
    tgt_assert_error(TG_ERR_DTYPE, "tg_remainder", "bool", NULL);
    tg_release(bo);
    /* a fractional constant with an i64 tensor computes in f32, as PyTorch's i64 + 0.5 */
    tg_tensor *h = tg_add_scalar(i, 0.5), *c = tg_clamp(i, 0.5, 3);
    cr_assert(h && c && tg_get_dtype(h) == TG_F32 && tg_get_dtype(c) == TG_F32, "%s",
              tg_last_error());
    TGO_ASSERT_VALUES(h, 0, 1.5, 2.5, 3.5);
    TGO_ASSERT_VALUES(c, 0, 1, 2, 3);
    cr_assert_null(tg_eq(f, f2));
    tgt_assert_error(TG_ERR_SHAPE, "tg_eq", NULL);
    tg_clear_error(); /* a NULL argument keeps a pending error (NULL inputs propagate) */
    cr_assert_null(tg_logical_and(NULL, f));
    tgt_assert_error(TG_ERR_NULL, "tg_logical_and", NULL);
    tg_clear_error();
    cr_assert_null(tg_isnan(NULL));
    tgt_assert_error(TG_ERR_NULL, "tg_isnan", NULL);
    tg_clear_error();
    cr_assert_null(tg_lt_scalar(NULL, 1));
    tgt_assert_error(TG_ERR_NULL, "tg_lt_scalar", NULL);
    cr_assert_null(tg_to_dtype(f, (tg_dtype)7));
    tgt_assert_error(TG_ERR_DTYPE, "invalid dtype", NULL);
    cr_assert_null(tg_randn(TG_BOOL, TG_SHAPE(2), 1, 0, 1));
    tgt_assert_error(TG_ERR_DTYPE, NULL);
}

/* Regression (found by the differential suite): a zero divisor was refused even when
 * the broadcast result is empty and nothing is divided; PyTorch returns the empty
 * result. */
Test(compare, zero_divisor_with_an_empty_result_is_fine) {
    tg_tensor *a = tg_zeros(TG_I64, TG_SHAPE(0, 2)), *b = I64S(TG_SHAPE(2), 0, 3);
    tg_tensor *r = tg_remainder(a, b);
    cr_assert_not_null(r, "%s", tg_last_error());
    cr_assert_eq(tg_numel(r), 0);
    cr_assert_not_null(tg_floor_divide(a, b), "%s", tg_last_error());
}
