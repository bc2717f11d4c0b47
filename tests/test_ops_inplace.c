/* tests/test_ops_inplace.c - in-place ops add_, sub_, mul_, div_, pow_,
 * scale_, copy_, fill_ (and tg_mark_modified): values, broadcasting of `other`, writes
 * through strided views landing in the base, aliasing operands, the version
 * counter moving by exactly 1 per call, refusal on leaves that require grad
 * (allowed under TG_NO_GRAD), and recording on non-leaves: the gradient of a
 * loss through an in-place op equals the out-of-place formula's. */
#include "tg_ops_test_util.h"

TestSuite(inplace_values, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(inplace_autograd, .init = tgt_setup, .fini = tgt_teardown);

enum { IP_ADD, IP_SUB, IP_MUL, IP_SCALE, IP_COPY, IP_FILL, IP_DIV, IP_POW, IP_N };
static const char *const ip_names[IP_N] = {"add_",  "sub_",  "mul_", "scale_",
                                           "copy_", "fill_", "div_", "pow_"};

/* Applies in-place op k to t (with other, or the scalar v). */
static tg_status ip(int k, tg_tensor *t, tg_tensor *other, double v) {
    switch (k) {
    case IP_ADD: return tg_add_(t, other);
    case IP_SUB: return tg_sub_(t, other);
    case IP_MUL: return tg_mul_(t, other);
    case IP_SCALE: return tg_scale_(t, v);
    case IP_COPY: return tg_copy_(t, other);
    case IP_FILL: return tg_fill_(t, v);
    case IP_DIV: return tg_div_(t, other);
    case IP_POW: return tg_pow_(t, other);
    }
    return TG_ERR_INTERNAL;
}

/* ip(), asserting success and a version step of exactly 1 on t. */
static void ip_ok(int k, tg_tensor *t, tg_tensor *other, double v) {
    uint64_t v0 = tg_version(t);
    tg_status st = ip(k, t, other, v);
    cr_assert_eq(st, TG_OK, "%s: %s", ip_names[k], tg_last_error());
    cr_assert_eq(tg_version(t), v0 + 1, "%s moved the version %llu -> %llu", ip_names[k],
                 (unsigned long long)v0, (unsigned long long)tg_version(t));
}

/* ---- values ------------------------------------------------------------------------- */

static void check_values(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *t = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *row = TGO_MAKE(dt, TG_SHAPE(3), 10, 20, 30);
    tg_tensor *one = TGO_MAKE(dt, TG_SCALAR, 1);
    tg_tensor *col = TGO_MAKE(dt, TG_SHAPE(2, 1), 2, 3);
    tg_tensor *same = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 1, 1, 2, 2, 2);
    uint64_t v0 = tg_version(t);
    ip_ok(IP_ADD, t, row, 0);
    TGO_ASSERT_VALUES(t, rt, 11, 22, 33, 14, 25, 36);
    ip_ok(IP_SUB, t, one, 0);
    TGO_ASSERT_VALUES(t, rt, 10, 21, 32, 13, 24, 35);
    ip_ok(IP_MUL, t, col, 0);
    TGO_ASSERT_VALUES(t, rt, 20, 42, 64, 39, 72, 105);
    ip_ok(IP_SUB, t, same, 0);
    TGO_ASSERT_VALUES(t, rt, 19, 41, 63, 37, 70, 103);
    ip_ok(IP_SCALE, t, NULL, 0.5);
    TGO_ASSERT_VALUES(t, rt, 9.5, 20.5, 31.5, 18.5, 35, 51.5);
    ip_ok(IP_COPY, t, row, 0);
    TGO_ASSERT_VALUES(t, rt, 10, 20, 30, 10, 20, 30);
    ip_ok(IP_COPY, t, col, 0);
    TGO_ASSERT_VALUES(t, rt, 2, 2, 2, 3, 3, 3);
    ip_ok(IP_FILL, t, NULL, -2.5);
    TGO_ASSERT_VALUES(t, rt, -2.5, -2.5, -2.5, -2.5, -2.5, -2.5);
    cr_assert_eq(tg_version(t), v0 + 8);
    /* `other` is never written, and its version never moves */
    TGO_ASSERT_VALUES(row, rt, 10, 20, 30);
    cr_assert_eq(tg_version(row), 0);
    cr_assert(tg_is_contiguous(t));
    TGO_RELEASE(t, row, one, col, same);
}
Test(inplace_values, every_op_with_broadcast_other) {
    check_values(TG_F32);
    check_values(TG_F64);
}

static void check_div_pow_values(tg_dtype dt) {
    double rt = tgo_rtol(dt);
    tg_tensor *t = TGO_MAKE(dt, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *row = TGO_MAKE(dt, TG_SHAPE(3), 2, 4, -8);
    tg_tensor *col = TGO_MAKE(dt, TG_SHAPE(2, 1), 2, 0.5);
    tg_tensor *zero = TGO_MAKE(dt, TG_SCALAR, 0);
    uint64_t v0 = tg_version(t);
    ip_ok(IP_DIV, t, row, 0);
    TGO_ASSERT_VALUES(t, rt, 0.5, 0.5, -0.375, 2, 1.25, -0.75);
    ip_ok(IP_POW, t, col, 0);
    TGO_ASSERT_VALUES(t, rt, 0.25, 0.25, 0.140625, sqrt(2), sqrt(1.25), NAN);
    ip_ok(IP_DIV, t, zero, 0); /* true division: +-inf, NaN */
    TGO_ASSERT_VALUES(t, 0, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, NAN);
    ip_ok(IP_POW, t, zero, 0); /* anything ** 0 is 1, NaN included (C's pow) */
    TGO_ASSERT_VALUES(t, 0, 1, 1, 1, 1, 1, 1);
    cr_assert_eq(tg_version(t), v0 + 4);
    TGO_ASSERT_VALUES(row, 0, 2, 4, -8);
    cr_assert_eq(tg_version(row), 0, "other is never written");
    TGO_RELEASE(t, row, col, zero);
}
Test(inplace_values, div_and_pow_with_broadcast_other) {
    check_div_pow_values(TG_F32);
    check_div_pow_values(TG_F64);
}

/* PyTorch's div_ is true division: an i64 (or bool) tensor cannot take the
 * f32 quotient ("result type Float can't be cast to the desired output type
 * Long"), whatever the divisor; nothing is written. */
Test(inplace_values, div_of_an_integer_tensor_is_refused_as_pytorch) {
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(3), 4, 6, -8);
    tg_tensor *divisors[] = {TGO_MAKE(TG_I64, TG_SHAPE(3), 2, 2, 2), TGO_MAKE(TG_I64, TG_SCALAR, 1),
                             TGO_MAKE(TG_F64, TG_SHAPE(3), 2, 2, 2),
                             TGO_MAKE(TG_BOOL, TG_SHAPE(3), 1, 1, 1)};
    for (size_t k = 0; k < sizeof divisors / sizeof *divisors; k++) {
        tgo_snap snap = tgo_snapshot(i);
        tg_clear_error();
        cr_assert_eq(tg_div_(i, divisors[k]), TG_ERR_DTYPE, "divisor %zu", k);
        tgt_assert_error(TG_ERR_DTYPE, "tg_div_:", k == 2 ? "result type f64" : "result type f32",
                         "output type i64", NULL);
        tgo_assert_unchanged(&snap);
    }
    tg_tensor *b = TGO_MAKE(TG_BOOL, TG_SHAPE(3), 1, 0, 1);
    tg_clear_error();
    cr_assert_eq(tg_div_(b, b), TG_ERR_DTYPE);
    tgt_assert_error(TG_ERR_DTYPE, "tg_div_:", "output type bool", NULL);
    /* a float tensor takes an integer divisor */
    tg_tensor *f = TGO_MAKE(TG_F32, TG_SHAPE(3), 1, 2, 3);
    ip_ok(IP_DIV, f, divisors[0], 0);
    TGO_ASSERT_VALUES(f, 0, 0.5, 1, 1.5);
    TGO_RELEASE(i, divisors[0], divisors[1], divisors[2], divisors[3], b, f);
}

/* pow_ of two i64 tensors as PyTorch's integer pow: exact, a negative
 * exponent giving 1 for 1, +-1 for -1 and 0 for any other base (0 too); an
 * integer tensor takes no float exponent; two bools are refused. */
Test(inplace_values, pow_of_integers_as_pytorch) {
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(8), 1, -1, -1, 2, 0, -3, 3, 7);
    tg_tensor *e = TGO_MAKE(TG_I64, TG_SHAPE(8), -1, -1, -2, -2, -1, 3, 0, 2);
    ip_ok(IP_POW, i, e, 0);
    TGO_ASSERT_VALUES(i, 0, 1, -1, 1, 0, 0, -27, 1, 49);
    tg_tensor *neg = TGO_MAKE(TG_I64, TG_SCALAR, -1); /* a 0-d exponent is a tensor too */
    tg_tensor *j = TGO_MAKE(TG_I64, TG_SHAPE(4), 1, 2, -3, 4);
    ip_ok(IP_POW, j, neg, 0);
    TGO_ASSERT_VALUES(j, 0, 1, 0, 0, 0);
    tg_tensor *bo = TGO_MAKE(TG_BOOL, TG_SHAPE(4), 1, 0, 1, 1);
    tg_tensor *k = TGO_MAKE(TG_I64, TG_SHAPE(4), 1, 2, -3, 4);
    ip_ok(IP_POW, k, bo, 0);
    TGO_ASSERT_VALUES(k, 0, 1, 1, -3, 4);
    tg_tensor *f = TGO_MAKE(TG_F64, TG_SHAPE(4), 1, 2, 3, 4);
    tgo_snap snap = tgo_snapshot(k);
    tg_clear_error();
    cr_assert_eq(tg_pow_(k, f), TG_ERR_DTYPE);
    tgt_assert_error(TG_ERR_DTYPE, "tg_pow_:", "result type f64", "output type i64", NULL);
    tgo_assert_unchanged(&snap);
    tg_tensor *b2 = TGO_MAKE(TG_BOOL, TG_SHAPE(4), 1, 1, 0, 0);
    snap = tgo_snapshot(bo);
    tg_clear_error();
    cr_assert_eq(tg_pow_(bo, b2), TG_ERR_DTYPE);
    tgt_assert_error(TG_ERR_DTYPE, "tg_pow_:", "bool", NULL);
    tgo_assert_unchanged(&snap);
    cr_assert_eq(tg_pow_(b2, k), TG_ERR_DTYPE, "an i64 result into a bool tensor");
    /* a float tensor takes integer and bool exponents */
    ip_ok(IP_POW, f, k, 0);
    TGO_ASSERT_VALUES(f, 0, 1, 2, 1.0 / 27, 256);
    TGO_RELEASE(i, e, neg, j, bo, k, f, b2);
}

Test(inplace_values, copy_converts_dtypes) {
    tg_tensor *f = tg_zeros(TG_F32, TG_SHAPE(3));
    tg_tensor *d = TGO_MAKE(TG_F64, TG_SHAPE(3), 0.1, -2, 3.5);
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(3), 7, -8, 9);
    ip_ok(IP_COPY, f, d, 0);
    TGO_ASSERT_VALUES(f, 0, (double)0.1f, -2, 3.5);
    ip_ok(IP_COPY, f, i, 0);
    TGO_ASSERT_VALUES(f, 0, 7, -8, 9);
    tg_tensor *i2 = tg_zeros(TG_I64, TG_SHAPE(3));
    ip_ok(IP_COPY, i2, i, 0);
    TGO_ASSERT_VALUES(i2, 0, 7, -8, 9);
    ip_ok(IP_FILL, i2, NULL, 4);
    TGO_ASSERT_VALUES(i2, 0, 4, 4, 4);
    TGO_RELEASE(f, d, i, i2);
}

Test(inplace_values, writes_through_strided_views_land_in_the_base) {
    tg_tensor *base = tg_zeros(TG_F64, TG_SHAPE(4, 4));
    tg_tensor *ones2 = tg_ones(TG_F64, TG_SHAPE(2));
    /* every second column */
    tg_tensor *cols = tg_slice(base, 1, 0, 4, 2);
    uint64_t v0 = tg_version(base);
    ip_ok(IP_ADD, cols, ones2, 0);
    cr_assert_eq(tg_version(base), v0 + 1, "the base shares the view's counter");
    TGO_ASSERT_VALUES(base, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0);
    /* the transpose, written from a contiguous source */
    double iv[16];
    for (int k = 0; k < 16; k++) iv[k] = k;
    tg_tensor *src = tgo_make(TG_F64, TG_SHAPE(4, 4), iv);
    tg_tensor *bt = tg_transpose(base, 0, 1);
    ip_ok(IP_COPY, bt, src, 0);
    double want[16];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) want[r * 4 + c] = c * 4 + r;
    tgo_assert_close(base, want, 16, 0);
    /* every second row, then a scale through the transposed view */
    tg_tensor *rows = tg_slice(base, 0, 1, 4, 2);
    ip_ok(IP_FILL, rows, NULL, -1);
    for (int c = 0; c < 4; c++) want[1 * 4 + c] = want[3 * 4 + c] = -1;
    tgo_assert_close(base, want, 16, 0);
    ip_ok(IP_SCALE, bt, NULL, 2);
    for (int k = 0; k < 16; k++) want[k] *= 2;
    tgo_assert_close(base, want, 16, 0);
    /* mul_ and sub_ on a 2-step slice of a 2-step slice */
    tg_tensor *corner = tg_slice(cols, 0, 0, 4, 2); /* rows 0, 2; columns 0, 2 */
    tg_tensor *two = TGO_MAKE(TG_F64, TG_SHAPE(2, 1), 10, 100);
    ip_ok(IP_MUL, corner, two, 0);
    want[0] *= 10, want[2] *= 10, want[8] *= 100, want[10] *= 100;
    tgo_assert_close(base, want, 16, 0);
    ip_ok(IP_SUB, corner, two, 0);
    want[0] -= 10, want[2] -= 10, want[8] -= 100, want[10] -= 100;
    tgo_assert_close(base, want, 16, 0);
    cr_assert_eq(tg_version(base), v0 + 6);
    cr_assert_eq(tg_version(corner), v0 + 6);
    cr_assert_eq(tg_version(rows), v0 + 6);
    TGO_RELEASE(base, ones2, cols, src, bt, rows, corner, two);
}

Test(inplace_values, aliasing_operands_read_the_old_values) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 1, 2, 3, 4);
    ip_ok(IP_ADD, x, x, 0);
    TGO_ASSERT_VALUES(x, 0, 2, 4, 6, 8);
    ip_ok(IP_MUL, x, x, 0);
    TGO_ASSERT_VALUES(x, 0, 4, 16, 36, 64);
    tg_tensor *xt = tg_transpose(x, 0, 1);
    ip_ok(IP_ADD, x, xt, 0); /* x + x^T from the values before the write */
    TGO_ASSERT_VALUES(x, 0, 8, 52, 52, 128);
    tg_tensor *y = TGO_MAKE(TG_F64, TG_SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    tg_tensor *yt = tg_transpose(y, 0, 1);
    tg_tensor *d = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 1, 2, 3, 4);
    ip_ok(IP_DIV, d, d, 0);
    TGO_ASSERT_VALUES(d, 0, 1, 1, 1, 1);
    tg_tensor *p = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 1, 2, 3, 0.5);
    tg_tensor *pt = tg_transpose(p, 0, 1);
    ip_ok(IP_POW, p, pt, 0); /* p ** p^T from the values before the write */
    TGO_ASSERT_VALUES(p, 1e-15, 1, 8, 9, sqrt(0.5));
    ip_ok(IP_POW, pt, pt, 0);
    TGO_ASSERT_VALUES(p, 1e-15, 1, 16777216, pow(9, 9), pow(sqrt(0.5), sqrt(0.5)));
    TGO_RELEASE(d, p, pt);
    ip_ok(IP_COPY, y, yt, 0); /* a true transpose, not a half-overwritten one */
    TGO_ASSERT_VALUES(y, 0, 1, 4, 7, 2, 5, 8, 3, 6, 9);
    tg_tensor *r0 = tg_slice(y, 0, 0, 1, 1); /* [1,3], broadcast over y's rows */
    ip_ok(IP_SUB, y, r0, 0);
    TGO_ASSERT_VALUES(y, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2);
    TGO_RELEASE(x, xt, y, yt, r0);
}

Test(inplace_values, mark_modified_bumps_once) {
    tg_tensor *x = tg_zeros(TG_F32, TG_SHAPE(3));
    tg_tensor *v = tg_slice(x, 0, 1, 3, 1);
    uint64_t v0 = tg_version(x);
    float *p = tg_data(v);
    cr_assert_not_null(p);
    p[0] = 5;
    cr_assert_eq(tg_version(x), v0, "a raw write does not bump by itself");
    cr_assert_eq(tg_mark_modified(v, "my_kernel_"), TG_OK);
    cr_assert_eq(tg_version(x), v0 + 1);
    TGO_ASSERT_VALUES(x, 0, 0, 5, 0);
    TGO_RELEASE(x, v);
}

/* ---- autograd rules ------------------------------------------------------------------ */

Test(inplace_autograd, refused_on_leaf_requiring_grad_allowed_under_no_grad) {
    for (int k = 0; k < IP_N; k++) {
        tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 1, 2, 3, 4);
        tg_set_name(x, "param");
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        tg_tensor *o = TGO_MAKE(TG_F64, TG_SHAPE(2), 5, 6);
        tgo_snap s = tgo_snapshot(x);
        tg_clear_error();
        tg_status st = ip(k, x, o, 3);
        cr_assert_eq(st, TG_ERR_AUTOGRAD, "%s on a leaf requiring grad: %s", ip_names[k],
                     tg_status_name(st));
        tgt_assert_error(TG_ERR_AUTOGRAD, "leaf", "param", NULL);
        tgo_assert_unchanged(&s);
        /* the same through a view of that leaf */
        tg_tensor *v = tg_slice(x, 0, 0, 1, 1);
        s = tgo_snapshot(x);
        tg_clear_error();
        st = ip(k, v, o, 3);
        cr_assert_eq(st, TG_ERR_AUTOGRAD, "%s on a view of a leaf requiring grad: %s",
                     ip_names[k], tg_status_name(st));
        tgt_assert_error(TG_ERR_AUTOGRAD, NULL);
        tgo_assert_unchanged(&s);
        /* allowed with grad mode off (an optimizer step) */
        TG_NO_GRAD {
            ip_ok(k, x, o, 3);
            ip_ok(k, v, o, 3);
        }
        cr_assert(tg_is_grad_enabled(), "TG_NO_GRAD restores grad mode");
        cr_assert(tg_requires_grad(x) && tg_is_leaf(x), "%s changed the leaf's status",
                  ip_names[k]);
        double *vals = tgo_values(x);
        bool moved = vals[0] != 1 || vals[1] != 2;
        free(vals);
        cr_assert(moved, "%s under no-grad did not write", ip_names[k]);
        TGO_RELEASE(x, o, v);
    }
}

/* Builds loss = sum(y * w) for y made by `make` from leaves x [2,3] and z [3]
 * (both f64, requiring grad), runs backward, and returns copies of the
 * gradients of x and z (NULL-able) in gx/gz. */
typedef tg_tensor *(*make_fn)(tg_tensor *x, tg_tensor *z, bool inplace);

static void grads_of(make_fn make, bool inplace, tg_tensor **gx, tg_tensor **gz,
                     tg_tensor **yout) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 0.5, -1, 2, 1.5, 0.25, -0.75);
    tg_tensor *z = TGO_MAKE(TG_F64, TG_SHAPE(3), 1.25, -0.5, 2);
    tg_tensor *w = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, -1, -2, 0.5);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
    tg_tensor *y = make(x, z, inplace);
    cr_assert_not_null(y, "%s", tg_last_error());
    tg_tensor *yw = tg_mul(y, w), *loss = tg_sum(yw);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    *gx = tg_grad(x);
    *gz = tg_grad(z);
    *yout = y;
    TGO_RELEASE(x, z, w, yw, loss);
}

/* Asserts the in-place and out-of-place versions give the same y and grads.
 * x_gets_grad false: the in-place op overwrote y (copy_), so x's gradient
 * through it is zero (PyTorch's CopyBackwards keeps y's history and sends it
 * zeros), while the out-of-place version never reaches x. */
static void compare_with_out_of_place(make_fn make, bool x_gets_grad) {
    tg_tensor *gx1, *gz1, *y1, *gx2, *gz2, *y2;
    grads_of(make, true, &gx1, &gz1, &y1);
    grads_of(make, false, &gx2, &gz2, &y2);
    tgo_assert_same(y1, y2, 1e-15);
    cr_assert(tg_requires_grad(y1));
    cr_assert_not_null(gz1, "z got no gradient through the in-place op");
    tgo_assert_same(gz1, gz2, 1e-15);
    if (x_gets_grad) {
        cr_assert_not_null(gx1, "x got no gradient through the in-place op");
        tgo_assert_same(gx1, gx2, 1e-15);
    } else {
        cr_assert_not_null(gx1, "the overwritten history must still reach x, with zeros");
        TGO_ASSERT_VALUES(gx1, 0, 0, 0, 0, 0, 0, 0);
        cr_assert_null(gx2);
    }
    TGO_RELEASE(gx1, gz1, y1, gx2, gz2, y2);
}

/* Each maker builds a non-leaf y from x, then applies the op in place (or out
 * of place), checking the in-place call's version step and grad_fn. */
static tg_tensor *after_ip(tg_tensor *y, int k, tg_tensor *o, double v) {
    ip_ok(k, y, o, v);
    cr_assert(!tg_is_leaf(y));
    return y;
}
static tg_tensor *mk_add(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_scale(x, 2);
    if (inplace) return after_ip(y, IP_ADD, z, 0);
    tg_tensor *r = tg_add(y, z);
    TGO_RELEASE(y);
    return r;
}
static tg_tensor *mk_sub(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_scale(x, 2);
    if (inplace) return after_ip(y, IP_SUB, z, 0);
    tg_tensor *r = tg_sub(y, z);
    TGO_RELEASE(y);
    return r;
}
static tg_tensor *mk_mul(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_add_scalar(x, 1);
    if (inplace) return after_ip(y, IP_MUL, z, 0);
    tg_tensor *r = tg_mul(y, z);
    TGO_RELEASE(y);
    return r;
}
static tg_tensor *mk_scale(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_add(x, z);
    if (inplace) return after_ip(y, IP_SCALE, NULL, -3);
    tg_tensor *r = tg_scale(y, -3);
    TGO_RELEASE(y);
    return r;
}
static tg_tensor *mk_copy(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_scale(x, 2);
    if (inplace) return after_ip(y, IP_COPY, z, 0);
    TGO_RELEASE(y);
    tg_tensor *e = tg_expand(z, TG_SHAPE(2, 3)), *r = tg_clone(e);
    TGO_RELEASE(e);
    return r;
}
static tg_tensor *mk_div(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_add_scalar(x, 1);
    if (inplace) return after_ip(y, IP_DIV, z, 0);
    tg_tensor *r = tg_div(y, z);
    TGO_RELEASE(y);
    return r;
}
/* (x^2 + 1) ** z: a positive base */
static tg_tensor *mk_pow(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *sq = tg_square(x), *y = tg_add_scalar(sq, 1);
    TGO_RELEASE(sq);
    if (inplace) return after_ip(y, IP_POW, z, 0);
    tg_tensor *r = tg_pow(y, z);
    TGO_RELEASE(y);
    return r;
}
/* two in-place ops in a row on the same non-leaf: y = (2x + z) * z */
static tg_tensor *mk_chain(tg_tensor *x, tg_tensor *z, bool inplace) {
    tg_tensor *y = tg_scale(x, 2);
    if (inplace) {
        uint64_t v0 = tg_version(y);
        after_ip(y, IP_ADD, z, 0);
        after_ip(y, IP_MUL, z, 0);
        cr_assert_eq(tg_version(y), v0 + 2);
        return y;
    }
    tg_tensor *a = tg_add(y, z), *r = tg_mul(a, z);
    TGO_RELEASE(y, a);
    return r;
}

Test(inplace_autograd, add_on_non_leaf_is_recorded) { compare_with_out_of_place(mk_add, true); }
Test(inplace_autograd, sub_on_non_leaf_is_recorded) { compare_with_out_of_place(mk_sub, true); }
Test(inplace_autograd, mul_on_non_leaf_is_recorded) { compare_with_out_of_place(mk_mul, true); }
Test(inplace_autograd, div_on_non_leaf_is_recorded) { compare_with_out_of_place(mk_div, true); }
Test(inplace_autograd, pow_on_non_leaf_is_recorded) { compare_with_out_of_place(mk_pow, true); }
Test(inplace_autograd, scale_on_non_leaf_is_recorded) {
    compare_with_out_of_place(mk_scale, true);
}
Test(inplace_autograd, copy_on_non_leaf_keeps_the_history_with_zero_gradient) {
    compare_with_out_of_place(mk_copy, false);
}
Test(inplace_autograd, two_inplace_ops_in_a_row) { compare_with_out_of_place(mk_chain, true); }

Test(inplace_autograd, grad_values_through_add_by_hand) {
    /* y = 2x; y += z; loss = sum(y * w): dx = 2w, dz = column sums of w */
    tg_tensor *gx, *gz, *y;
    grads_of(mk_add, true, &gx, &gz, &y);
    TGO_ASSERT_VALUES(gx, 0, 2, 4, 6, -2, -4, 1);
    TGO_ASSERT_VALUES(gz, 0, 0, 0, 3.5);
    TGO_ASSERT_VALUES(y, 0, 2.25, -2.5, 6, 4.25, 0, 0.5);
    TGO_RELEASE(gx, gz, y);
}

/* As PyTorch (FillBackward): y keeps its place in the graph, and backward
 * through it succeeds with a zero gradient for x (a regression: fill_ used to
 * drop y's history, and backward then failed with "does not require grad"). */
Test(inplace_autograd, fill_on_non_leaf_keeps_the_history_with_zero_gradient) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(2, 3), 1, true);
    tg_tensor *y = tg_scale(x, 2);
    cr_assert(tg_requires_grad(y));
    ip_ok(IP_FILL, y, NULL, 3);
    cr_assert_str_eq(tg_grad_fn_name(y), "FillBackward");
    cr_assert(tg_requires_grad(y));
    TGO_ASSERT_VALUES(y, 0, 3, 3, 3, 3, 3, 3);
    tg_tensor *loss = tg_sum(y);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 0, 0, 0, 0, 0, 0);
    TGO_RELEASE(x, y, loss);
}

Test(inplace_autograd, plain_tensor_plus_grad_requiring_other_is_recorded) {
    tg_tensor *y = tg_zeros(TG_F64, TG_SHAPE(2, 3));
    tg_tensor *z = TGO_MAKE(TG_F64, TG_SHAPE(3), 1, 2, 3);
    tg_tensor *w = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
    ip_ok(IP_ADD, y, z, 0);
    cr_assert(tg_requires_grad(y), "y now depends on z");
    cr_assert_not_null(tg_grad_fn_name(y));
    tg_tensor *yw = tg_mul(y, w), *loss = tg_sum(yw);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(z, 0, 5, 7, 9);
    TGO_RELEASE(y, z, w, yw, loss);
}

/* In-place ops on a view of a non-leaf are recorded (CopySlices on the base);
 * tests/test_views_inplace.c covers the semantics in depth. */
Test(inplace_autograd, view_of_a_non_leaf_requiring_grad_is_recorded) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *y = tg_scale(x, 2), *v = tg_slice(y, 1, 0, 3, 2);
    tg_tensor *o = TGO_MAKE(TG_F64, TG_SHAPE(2), 10, 20);
    uint64_t v0 = tg_version(y);
    cr_assert_eq(tg_mul_(v, o), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_version(y), v0 + 1);
    cr_assert_str_eq(tg_grad_fn_name(y), "CopySlices");
    cr_assert_str_eq(tg_grad_fn_name(v), "AsStridedBackward");
    TGO_ASSERT_VALUES(y, 0, 20, 4, 120, 80, 10, 240);
    tg_tensor *loss = tg_sum(y);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    /* d(2x * o on columns 0 and 2)/dx */
    TGO_ASSERT_GRAD(x, 0, 20, 2, 40, 20, 2, 40);
    TGO_RELEASE(x, y, v, o, loss);
}

Test(inplace_autograd, modifying_a_saved_output_fails_backward_naming_the_op) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(3), 3, true);
    tg_tensor *e = tg_exp(x); /* saves its output */
    tg_tensor *o = tg_ones(TG_F64, TG_SHAPE(3));
    ip_ok(IP_ADD, e, o, 0); /* recorded, but moves the saved output's version */
    tg_tensor *loss = tg_sum(e);
    tg_clear_error();
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "add_", "version", NULL);
    tg_tensor *g = tg_grad(x);
    cr_assert_null(g, "a failed backward changed .grad");
    TGO_RELEASE(x, e, o, loss);
}

/* What div_ and pow_ save is PyTorch's: div_ a copy of y's old values (and
 * other), so editing y afterwards changes nothing; pow_ also its result, y
 * itself, so editing y afterwards fails backward naming the edit ("output 0
 * of PowBackward ... is at version 2; expected version 1" in PyTorch), with
 * y or only the exponent requiring grad. */
Test(inplace_autograd, edits_after_div_and_pow_fail_backward_as_pytorch) {
    for (int k = 0; k < 2; k++)
        for (int which = 0; which < 2; which++) { /* 0: y requires grad; 1: the exponent */
            tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(3), 1, 2, 3);
            tg_tensor *z = TGO_MAKE(TG_F64, TG_SHAPE(3), 2, 0.5, 1.5);
            cr_assert_eq(tg_set_requires_grad(which ? z : x, true), TG_OK);
            tg_tensor *y = tg_scale(x, 1), *one = tg_ones(TG_F64, TG_SHAPE(3));
            ip_ok(k ? IP_POW : IP_DIV, y, z, 0);
            cr_assert_str_eq(tg_grad_fn_name(y), k ? "PowBackward" : "DivBackward");
            ip_ok(IP_ADD, y, one, 0);
            tg_tensor *loss = tg_sum(y);
            tg_clear_error();
            tg_status st = tg_backward(loss, NULL, false);
            if (k) {
                cr_assert_eq(st, TG_ERR_INPLACE, "pow_ then add_: %s", tg_status_name(st));
                tgt_assert_error(TG_ERR_INPLACE, "output 0 of PowBackward", "add_",
                                 "expected version 1", NULL);
            } else {
                cr_assert_eq(st, TG_OK, "div_ then add_: %s", tg_last_error());
            }
            TGO_RELEASE(x, z, y, one, loss);
        }
}

/* An f32 y **= an f64 exponent is computed in f64 and rounded into y; the
 * f64 result is what backward uses, y is saved beside it for the version
 * check: editing y afterwards fails backward as in PyTorch. Every allocation
 * failing in turn leaves y as it was. */
Test(inplace_autograd, pow_of_f32_by_f64_checks_its_result) {
    for (uint64_t n = 1;; n++) {
        tg_tensor *x = TGO_MAKE(TG_F32, TG_SHAPE(3), 1, 2, 3);
        tg_tensor *z = TGO_MAKE(TG_F64, TG_SHAPE(3), 2, 0.5, 1.5);
        cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
        tg_tensor *y = tg_scale(x, 1);
        tgo_snap snap = tgo_snapshot(y);
        tg_clear_error();
        tg_fault_inject(n, false);
        tg_status st = tg_pow_(y, z);
        uint64_t fired = tg_fault_inject(0, false);
        if (fired) {
            cr_assert_eq(st, TG_ERR_NOMEM, "allocation %llu: %s", (unsigned long long)n,
                         tg_status_name(st));
            tgo_assert_unchanged(&snap);
            cr_assert(!tg_requires_grad(y), "allocation %llu: y joined the graph",
                      (unsigned long long)n);
            TGO_RELEASE(x, z, y);
            tg_live_counts lc = tg_live();
            cr_assert(lc.nodes == 0 && lc.tensors == 0, "allocation %llu: left alive",
                      (unsigned long long)n);
            continue;
        }
        cr_assert_eq(st, TG_OK, "%s", tg_last_error());
        free(snap.v);
        TGO_ASSERT_VALUES(y, 1e-7, 1, sqrt(2), pow(3, 1.5));
        tg_tensor *loss = tg_sum(y);
        cr_assert_eq(tg_backward(loss, NULL, true), TG_OK, "%s", tg_last_error());
        TGO_ASSERT_GRAD(z, 1e-6, 0, sqrt(2) * log(2), pow(3, 1.5) * log(3));
        tg_tensor *one = tg_ones(TG_F32, TG_SHAPE(3));
        ip_ok(IP_ADD, y, one, 0);
        tg_clear_error();
        cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
        tgt_assert_error(TG_ERR_INPLACE, "PowBackward", "add_", NULL);
        TGO_RELEASE(x, z, y, loss, one);
        break;
    }
}

/* x.div_(x) and x.pow_(x) recorded: x is saved as it was (the exponent, the
 * divisor), and the write makes backward fail its version check, as in
 * PyTorch; the history names the op and its call site. */
Test(inplace_autograd, aliased_div_and_pow_fail_backward_naming_the_op) {
    for (int k = 0; k < 2; k++) {
        tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(3), 5, true);
        tg_tensor *sq = tg_square(x), *y = tg_add_scalar(sq, 1);
        cr_assert_eq(k ? tg_pow_(y, y) : tg_div_(y, y), TG_OK, "%s", tg_last_error());
        const int line = __LINE__ - 1;
        tg_tensor *loss = tg_sum(y);
        tg_clear_error();
        cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
        char site[64];
        snprintf(site, sizeof site, "test_ops_inplace.c:%d", line);
        tgt_assert_error(TG_ERR_INPLACE, k ? "pow_" : "div_", site, NULL);
        tg_tensor *g = tg_grad(x);
        cr_assert_null(g, "a failed backward changed .grad");
        TGO_RELEASE(x, sq, y, loss);
    }
}

/* matmul saves only what the needed gradients use (as PyTorch): with only a
 * requiring grad, dA = dC @ B^T needs b but not a, so editing a afterwards
 * (an optimizer step) is fine while editing b fails backward (a regression:
 * both were saved, and editing a failed too). */
Test(inplace_autograd, matmul_saves_only_what_backward_needs) {
    for (int edit_b = 0; edit_b < 2; edit_b++) {
        tg_tensor *a = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 1, 1, 1, 1, 1);
        tg_tensor *b = TGO_MAKE(TG_F64, TG_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
        cr_assert_eq(tg_set_requires_grad(a, true), TG_OK);
        tg_tensor *c = tg_matmul(a, b), *loss = tg_sum(c);
        TG_NO_GRAD { cr_assert_eq(tg_scale_(edit_b ? b : a, 2), TG_OK); }
        tg_clear_error();
        if (edit_b) {
            cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
            tgt_assert_error(TG_ERR_INPLACE, "MmBackward", "scale_", NULL);
        } else {
            cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
            TGO_ASSERT_GRAD(a, 0, 3, 7, 11, 3, 7, 11);
        }
        TGO_RELEASE(a, b, c, loss);
    }
    /* and the other way round, batched with a shared weight */
    tg_tensor *a = tgo_randn(TG_F64, TG_SHAPE(2, 2, 3), 1, false);
    tg_tensor *w = tgo_randn(TG_F64, TG_SHAPE(3, 4), 2, true);
    tg_tensor *c = tg_matmul(a, w), *loss = tg_sum(c);
    TG_NO_GRAD { cr_assert_eq(tg_scale_(w, 2), TG_OK); }
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *gw = tg_grad(w);
    cr_assert_not_null(gw);
    TGO_RELEASE(a, w, c, loss, gw);
}

/* The in-place history in the error message is built with bounded appends:
 * eight in-place ops whose call sites have 300-byte file names (tg_*_at
 * takes any site) fill the history buffer, which is cut with "..." (the
 * message stays within its buffer; ASan would see an overrun). */
Test(inplace_autograd, in_place_history_with_long_sites_is_cut_cleanly) {
    char file[301];
    memset(file, 'f', 300);
    file[300] = '\0';
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(3), 4, true);
    tg_tensor *e = tg_exp(x); /* saves its output */
    tg_tensor *s = tg_sum(e);
    TG_NO_GRAD {
        for (int i = 0; i < 8; i++)
            cr_assert_eq(tg_scale__at((tg_site){file, 1000 + i}, e, 1.0), TG_OK);
    }
    tg_clear_error();
    cr_assert_eq(tg_backward(s, NULL, false), TG_ERR_INPLACE);
    const char *m = tg_last_error();
    cr_assert(strstr(m, "scale_ at ffff") != NULL, "%s", m);
    cr_assert(strstr(m, "...") != NULL, "the history was not marked as cut: %s", m);
    cr_assert(strstr(m, "is at version 8; expected version 0") != NULL, "%s", m);
    TGO_RELEASE(x, e, s);
}

/* What a batched matmul with a shared 2-D weight saves for the weight's gradient is
 * what PyTorch saves: PyTorch folds a (..., M, K) into (B M, K) with reshape, a view
 * when the batch dims can be merged (an in-place edit of a then fails backward) and a
 * copy otherwise (the edit does not matter). Found by the differential suite: tapegrad
 * always saved a itself, so the second case failed backward where PyTorch's did not. */
Test(inplace_autograd, batched_matmul_saves_what_pytorch_folds) {
    for (int foldable = 0; foldable < 2; foldable++) {
        int sc = tg_scope_begin(); /* owns every tensor made below */
        tg_tensor *base = tg_randn(TG_F64, TG_SHAPE(2, 4, 2), 3, 0, 1);
        tg_tensor *a = foldable ? base : tg_transpose(base, 0, 1); /* (4, 2, 2) */
        tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(2, 3), 4, 0, 1);
        cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
        tg_tensor *ac = tg_clone(a); /* a's values at the matmul */
        tg_tensor *y = tg_matmul(a, w), *l = tg_sum(y);
        cr_assert_eq(tg_fill_(base, 7.0), TG_OK);
        tg_status st = tg_backward(l, NULL, false);
        if (foldable) {
            cr_assert_eq(st, TG_ERR_INPLACE, "%s", tg_last_error());
            tg_clear_error();
        } else {
            cr_assert_eq(st, TG_OK, "%s", tg_last_error());
            /* dW = sum over the batch of a^T 1, from the values at the matmul */
            tg_tensor *want = tg_matmul(tg_transpose(tg_reshape(ac, TG_SHAPE(8, 2)), 0, 1),
                                        tg_ones(TG_F64, TG_SHAPE(8, 3)));
            tgo_assert_same(tg_grad(w), want, 1e-14);
        }
        cr_assert_eq(tg_scope_end(sc), TG_OK, "%s", tg_last_error());
    }
}
