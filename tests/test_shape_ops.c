/* tests/test_shape_ops.c - shape ops and joining: tg_narrow, tg_permute,
 * tg_squeeze, tg_unsqueeze, tg_flatten (views, or a copy where tg_reshape
 * needs one), tg_cat and tg_stack. For each: values and shapes as PyTorch
 * gives them, which results share their input's storage, gradcheck in f64
 * on contiguous and strided inputs, the error paths (nothing left behind),
 * and an allocation-failure sweep of cat's forward and backward. Expected
 * shapes and strides were checked with PyTorch (float64). */
#include "tg_ops_test_util.h"

TestSuite(shape_ops, .init = tgt_setup, .fini = tgt_teardown);

static void assert_shape(const tg_tensor *t, int ndim, const int64_t *shape) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_ndim(t), ndim, "ndim %d, expected %d", tg_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(tg_size(t, d), shape[d], "dim %d: %lld, expected %lld", d,
                     (long long)tg_size(t, d), (long long)shape[d]);
}
#define ASSERT_SHAPE(t, ...) assert_shape(t, TG_SHAPE(__VA_ARGS__))

/* 0, 1, 2, ... as f64 of the given shape. */
static tg_tensor *iota(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    tg_tensor *a = tg_arange(TG_F64, 0, (double)n, 1);
    tg_tensor *v = tg_reshape(a, ndim, shape);
    tg_release(a);
    cr_assert_not_null(v, "%s", tg_last_error());
    return v;
}

Test(shape_ops, narrow_is_an_in_range_slice) {
    tg_tensor *x = iota(TG_SHAPE(3, 4));
    tg_tensor *a = tg_narrow(x, 1, 1, 2), *b = tg_narrow(x, 0, -2, 2), *e = tg_narrow(x, 1, 4, 0);
    ASSERT_SHAPE(a, 3, 2);
    TGO_ASSERT_VALUES(a, 0, 1, 2, 5, 6, 9, 10);
    TGO_ASSERT_VALUES(b, 0, 4, 5, 6, 7, 8, 9, 10, 11);
    ASSERT_SHAPE(e, 3, 0);
    cr_assert(tg_same_storage(a, x) && tg_is_view(a));
    tg_clear_error();
    cr_assert_null(tg_narrow(x, 1, 3, 2)); /* PyTorch refuses; tg_slice would clamp */
    tgt_assert_error(TG_ERR_VALUE, "tg_narrow", "out of range", "size 4", NULL);
    cr_assert_null(tg_narrow(x, 1, -5, 1));
    cr_assert_null(tg_narrow(x, 0, 0, -1));
    cr_assert_null(tg_narrow(x, 2, 0, 1));
    tgt_assert_error(TG_ERR_DIM, NULL);
    TGO_RELEASE(x, a, b, e);
}

Test(shape_ops, permute_reorders_dims_as_a_view) {
    tg_tensor *x = iota(TG_SHAPE(2, 3, 4));
    tg_tensor *p = tg_permute(x, 3, (int[]){2, 0, -2});
    ASSERT_SHAPE(p, 4, 2, 3);
    cr_assert_eq(tg_stride(p, 0), 1);
    cr_assert_eq(tg_stride(p, 1), 12);
    cr_assert_eq(tg_stride(p, 2), 4);
    cr_assert(tg_same_storage(p, x));
    double v;
    cr_assert_eq(tg_get(p, (int64_t[]){3, 1, 2}, &v), TG_OK);
    cr_assert_eq(v, 12 + 2 * 4 + 3); /* x[1, 2, 3] */
    tg_clear_error();
    cr_assert_null(tg_permute(x, 3, (int[]){0, 1, 1}));
    tgt_assert_error(TG_ERR_DIM, "tg_permute", "repeated", NULL);
    cr_assert_null(tg_permute(x, 2, (int[]){0, 1}));
    tgt_assert_error(TG_ERR_DIM, "2 dims given", NULL);
    cr_assert_null(tg_permute(x, 3, (int[]){0, 1, 3}));
    tgt_assert_error(TG_ERR_DIM, NULL);
    tg_clear_error();
    cr_assert_null(tg_permute(x, 3, NULL));
    tgt_assert_error(TG_ERR_NULL, "dims", NULL);
    TGO_RELEASE(x, p);
}

Test(shape_ops, squeeze_and_unsqueeze_as_pytorch) {
    tg_tensor *x = iota(TG_SHAPE(2, 1, 3));
    tg_tensor *s1 = tg_squeeze(x, 1), *s0 = tg_squeeze(x, 0), *sn = tg_squeeze(x, -2);
    ASSERT_SHAPE(s1, 2, 3);
    ASSERT_SHAPE(s0, 2, 1, 3); /* size 2: unchanged, as PyTorch */
    ASSERT_SHAPE(sn, 2, 3);
    tg_tensor *u0 = tg_unsqueeze(x, 0), *ue = tg_unsqueeze(x, -1), *u2 = tg_unsqueeze(x, 2);
    ASSERT_SHAPE(u0, 1, 2, 1, 3);
    ASSERT_SHAPE(ue, 2, 1, 3, 1);
    ASSERT_SHAPE(u2, 2, 1, 1, 3);
    /* PyTorch's strides: x (3, 3, 1): unsqueeze(0) (6, 3, 3, 1), (-1) (3, 3, 1, 1),
     * (2) (3, 3, 3, 1) */
    cr_assert_eq(tg_stride(u0, 0), 6);
    cr_assert_eq(tg_stride(ue, 3), 1);
    cr_assert_eq(tg_stride(u2, 2), 3);
    cr_assert(tg_same_storage(u2, x) && tg_same_storage(s1, x));
    tg_tensor *z = tg_full(TG_F64, TG_SCALAR, 7), *z1 = tg_unsqueeze(z, 0), *z0 = tg_squeeze(z, -1);
    ASSERT_SHAPE(z1, 1);
    cr_assert_eq(tg_ndim(z0), 0);
    tg_clear_error();
    cr_assert_null(tg_unsqueeze(x, 4));
    tgt_assert_error(TG_ERR_DIM, NULL);
    cr_assert_null(tg_squeeze(x, 3));
    tgt_assert_error(TG_ERR_DIM, NULL);
    tg_tensor *big = tg_zeros(TG_F64, TG_SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    cr_assert_null(tg_unsqueeze(big, 0));
    tgt_assert_error(TG_ERR_DIM, "tg_unsqueeze", "8 dims", NULL);
    TGO_RELEASE(x, s1, s0, sn, u0, ue, u2, z, z1, z0, big);
}

Test(shape_ops, flatten_merges_dims_viewing_or_copying) {
    tg_tensor *x = iota(TG_SHAPE(2, 3, 4));
    tg_tensor *f = tg_flatten(x, 0, -1), *m = tg_flatten(x, 1, 2), *h = tg_flatten(x, 0, 1);
    ASSERT_SHAPE(f, 24);
    ASSERT_SHAPE(m, 2, 12);
    ASSERT_SHAPE(h, 6, 4);
    cr_assert(tg_same_storage(f, x));
    tg_tensor *t = tg_transpose(x, 0, 2), *ft = tg_flatten(t, 0, -1); /* needs a copy */
    ASSERT_SHAPE(ft, 24);
    cr_assert(!tg_same_storage(ft, x));
    double v;
    cr_assert_eq(tg_get(ft, (int64_t[]){1}, &v), TG_OK);
    cr_assert_eq(v, 12); /* x.transpose(0, 2).flatten()[1] = x[1, 0, 0] */
    tg_tensor *z = tg_full(TG_F64, TG_SCALAR, 5), *fz = tg_flatten(z, 0, -1);
    ASSERT_SHAPE(fz, 1);
    /* one dim: x itself, as PyTorch (a view made under no-grad would be a leaf
     * where PyTorch's result keeps x's grad_fn: found by the differential suite) */
    tg_tensor *one = tg_flatten(x, 1, -2);
    cr_assert_eq(one, x);
    tg_release(one);
    tg_clear_error();
    cr_assert_null(tg_flatten(x, 2, 1));
    tgt_assert_error(TG_ERR_DIM, "tg_flatten", "after", NULL);
    TGO_RELEASE(x, f, m, h, t, ft, z, fz);
}

Test(shape_ops, cat_and_stack_join_as_pytorch) {
    tg_tensor *a = iota(TG_SHAPE(2, 3)), *b = tg_full(TG_F64, TG_SHAPE(1, 3), -1);
    tg_tensor *c = tg_cat(2, (tg_tensor *[]){a, b}, 0);
    ASSERT_SHAPE(c, 3, 3);
    TGO_ASSERT_VALUES(c, 0, 0, 1, 2, 3, 4, 5, -1, -1, -1);
    tg_tensor *bt = tg_transpose(b, 0, 1), *at = tg_transpose(a, 0, 1); /* strided inputs */
    tg_tensor *c1 = tg_cat(2, (tg_tensor *[]){at, bt}, -1);
    ASSERT_SHAPE(c1, 3, 3);
    TGO_ASSERT_VALUES(c1, 0, 0, 3, -1, 1, 4, -1, 2, 5, -1);
    tg_tensor *s = tg_stack(2, (tg_tensor *[]){a, a}, 1);
    ASSERT_SHAPE(s, 2, 2, 3);
    TGO_ASSERT_VALUES(s, 0, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5);
    tg_tensor *sl = tg_stack(2, (tg_tensor *[]){a, a}, -1);
    ASSERT_SHAPE(sl, 2, 3, 2);
    tg_tensor *z = tg_full(TG_F64, TG_SCALAR, 2), *zs = tg_stack(3, (tg_tensor *[]){z, z, z}, 0);
    TGO_ASSERT_VALUES(zs, 0, 2, 2, 2);
    tg_tensor *e = tg_zeros(TG_F64, TG_SHAPE(0, 3)), *ce = tg_cat(2, (tg_tensor *[]){e, a}, 0);
    TGO_ASSERT_VALUES(ce, 0, 0, 1, 2, 3, 4, 5);
    TGO_RELEASE(a, b, c, bt, at, c1, s, sl, z, zs, e, ce);
}

/* More inputs than a node takes: joined in groups, values and gradients. */
Test(shape_ops, cat_of_many_tensors) {
    enum { N = 40 };
    tg_tensor *ts[N];
    for (int i = 0; i < N; i++) {
        ts[i] = tg_full(TG_F64, TG_SHAPE(1, 2), i);
        cr_assert_eq(tg_set_requires_grad(ts[i], true), TG_OK);
    }
    tg_tensor *c = tg_cat(N, ts, 0);
    ASSERT_SHAPE(c, N, 2);
    double v;
    cr_assert_eq(tg_get(c, (int64_t[]){37, 1}, &v), TG_OK);
    cr_assert_eq(v, 37);
    tg_tensor *w = tg_arange(TG_F64, 0, 2 * N, 1), *wv = tg_view(w, TG_SHAPE(N, 2));
    tg_tensor *p = tg_mul(c, wv), *l = tg_sum(p);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    for (int i = 0; i < N; i++) TGO_ASSERT_GRAD(ts[i], 0, 2 * i, 2 * i + 1);
    for (int i = 0; i < N; i++) tg_release(ts[i]);
    TGO_RELEASE(c, w, wv, p, l);
}

Test(shape_ops, cat_and_stack_errors_leave_nothing_behind) {
    tg_tensor *a = iota(TG_SHAPE(2, 3)), *b = iota(TG_SHAPE(2, 4)), *c = iota(TG_SHAPE(2, 3, 1));
    tg_tensor *f = tg_zeros(TG_F32, TG_SHAPE(2, 3)), *z = tg_full(TG_F64, TG_SCALAR, 1);
    tg_clear_error();
    cr_assert_null(tg_cat(2, (tg_tensor *[]){a, b}, 0));
    tgt_assert_error(TG_ERR_SHAPE, "tg_cat", "input 1", "[2, 4]", "except along dim 0", NULL);
    tg_tensor *ok = tg_cat(2, (tg_tensor *[]){a, b}, 1);
    ASSERT_SHAPE(ok, 2, 7);
    cr_assert_null(tg_cat(2, (tg_tensor *[]){a, c}, 0));
    tgt_assert_error(TG_ERR_SHAPE, NULL);
    tg_tensor *promoted = tg_cat(2, (tg_tensor *[]){a, f}, 0); /* as PyTorch: the wider dtype */
    cr_assert_not_null(promoted, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(promoted), tg_get_dtype(a) == TG_F64 || tg_get_dtype(f) == TG_F64
                                             ? TG_F64 : TG_F32);
    tg_release(promoted);
    cr_assert_null(tg_cat(0, (tg_tensor *[]){a}, 0));
    tgt_assert_error(TG_ERR_VALUE, "at least one", NULL);
    tg_clear_error();
    cr_assert_null(tg_cat(2, NULL, 0));
    tgt_assert_error(TG_ERR_NULL, NULL);
    tg_clear_error();
    cr_assert_null(tg_cat(2, (tg_tensor *[]){a, NULL}, 0));
    tgt_assert_error(TG_ERR_NULL, "tensors[1]", NULL);
    /* a NULL element keeps the error of the op that failed to make it (the
     * program checker found tg_cat replacing it) */
    tg_set_error(TG_ERR_SHAPE, "earlier");
    cr_assert_null(tg_cat(2, (tg_tensor *[]){a, NULL}, 0));
    tgt_assert_error(TG_ERR_SHAPE, "earlier", NULL);
    cr_assert_null(tg_stack(2, (tg_tensor *[]){NULL, a}, 0));
    tgt_assert_error(TG_ERR_SHAPE, "earlier", NULL);
    cr_assert_null(tg_cat(1, (tg_tensor *[]){z}, 0));
    tgt_assert_error(TG_ERR_DIM, "zero-dimensional", NULL);
    cr_assert_null(tg_cat(1, (tg_tensor *[]){a}, 2));
    tgt_assert_error(TG_ERR_DIM, NULL);
    cr_assert_null(tg_stack(2, (tg_tensor *[]){a, b}, 0));
    tgt_assert_error(TG_ERR_SHAPE, "tg_stack", "one shape", NULL);
    cr_assert_null(tg_stack(1, (tg_tensor *[]){a}, 3));
    tgt_assert_error(TG_ERR_DIM, NULL);
    cr_assert_eq(tg_live().nodes, 0);
    TGO_RELEASE(a, b, c, f, z, ok);
}

/* ---- gradients ------------------------------------------------------------------ */

typedef enum { G_NARROW, G_PERMUTE, G_SQUEEZE, G_UNSQUEEZE, G_FLATTEN, G_CAT, G_STACK } gop;

/* The op on the inputs (after a transpose of input 0 when `strided`), times a
 * fixed weight so that every element's gradient differs. */
typedef struct {
    gop op;
    bool strided;
} gcase;

static tg_tensor *g_fn(tg_tensor *const *in, void *user) {
    const gcase *c = user;
    tg_tensor *x = c->strided ? tg_transpose(in[0], 0, -1) : tg_retain(in[0]), *y = NULL;
    switch (c->op) {
    case G_NARROW: y = tg_narrow(x, 1, 1, 2); break;
    case G_PERMUTE: y = tg_permute(x, 3, (int[]){1, 2, 0}); break;
    case G_SQUEEZE: y = tg_squeeze(x, 1); break;
    case G_UNSQUEEZE: y = tg_unsqueeze(x, 1); break;
    case G_FLATTEN: y = tg_flatten(x, 0, 1); break;
    case G_CAT: y = tg_cat(2, (tg_tensor *[]){x, in[1]}, 1); break;
    case G_STACK: y = tg_stack(2, (tg_tensor *[]){x, in[1]}, 2); break;
    }
    tg_release(x);
    int64_t n = y ? tg_numel(y) : 0;
    tg_tensor *w = tg_arange(TG_F64, 1, (double)n + 1, 1);
    tg_tensor *wv = w && y ? tg_reshape(w, tg_ndim(y), tg_shape(y)) : NULL;
    tg_tensor *r = y && wv ? tg_mul(y, wv) : NULL;
    tg_release(w);
    tg_release(wv);
    tg_release(y);
    return r;
}

static void gradcheck_case(gop op, int64_t d0, int64_t d1, int64_t d2, int n_in) {
    for (int strided = 0; strided < 2; strided++) {
        gcase c = {op, strided != 0};
        /* after the transpose of dims 0 and 2, input 0 has shape (d0, d1, d2) */
        tg_tensor *in[2] = {strided ? tgo_randn(TG_F64, TG_SHAPE(d2, d1, d0), 3, true)
                                    : tgo_randn(TG_F64, TG_SHAPE(d0, d1, d2), 3, true),
                            tgo_randn(TG_F64, TG_SHAPE(d0, op == G_STACK ? d1 : 2, d2), 4, true)};
        tg_clear_error();
        cr_assert_eq(tg_gradcheck(g_fn, &c, n_in, in, NULL), TG_OK, "op %d strided %d: %s", op,
                     strided, tg_last_error());
        TGO_RELEASE(in[0], in[1]);
    }
}

Test(shape_ops, gradients_against_central_differences) {
    gradcheck_case(G_NARROW, 2, 4, 3, 1);
    gradcheck_case(G_PERMUTE, 2, 3, 4, 1);
    gradcheck_case(G_SQUEEZE, 2, 1, 3, 1);
    gradcheck_case(G_UNSQUEEZE, 2, 3, 2, 1);
    gradcheck_case(G_FLATTEN, 2, 3, 2, 1);
    gradcheck_case(G_CAT, 2, 3, 2, 2);
    gradcheck_case(G_STACK, 2, 3, 2, 2);
}

/* Every allocation of a recorded cat and its backward fails in turn. */
Test(shape_ops, cat_allocation_failure_sweep) {
    bool done = false;
    for (uint64_t n = 1; !done && n < 64; n++) {
        tg_tensor *a = tgo_randn(TG_F64, TG_SHAPE(2, 3), 1, true);
        tg_tensor *b = tgo_randn(TG_F64, TG_SHAPE(2, 2), 2, true);
        tg_clear_error();
        tg_fault_inject(n, false);
        tg_tensor *c = tg_cat(2, (tg_tensor *[]){a, b}, 1), *l = c ? tg_sum(c) : NULL;
        tg_status st = l ? tg_backward(l, NULL, false) : tg_last_status();
        uint64_t injected = tg_fault_inject(0, false);
        tg_tensor *ga = tg_grad(a), *gb = tg_grad(b);
        if (injected == 0) {
            cr_assert_eq(st, TG_OK, "%s", tg_last_error());
            cr_assert(ga && gb);
            done = true;
        } else {
            cr_assert_eq(st, TG_ERR_NOMEM, "allocation %llu: %s", (unsigned long long)n,
                         tg_last_error());
            cr_assert(!ga && !gb, "a failed backward left a gradient");
        }
        TGO_RELEASE(a, b, c, l, ga, gb);
        tgt_assert_nothing_live();
    }
    cr_assert(done);
}

/* triu / tril: PyTorch's values for diagonals 0, 1, -1 (NaN outside the
 * triangle becomes 0), batched inputs, the gradient (the same triangle). */
Test(shape_ops, triu_and_tril_as_pytorch) {
    tg_tensor *x = iota(TG_SHAPE(3, 4));
    tg_tensor *u0 = tg_triu(x, 0), *u1 = tg_triu(x, 1), *lm = tg_tril(x, -1), *l0 = tg_tril(x, 0);
    TGO_ASSERT_VALUES(u0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11);
    TGO_ASSERT_VALUES(u1, 0, 0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11);
    TGO_ASSERT_VALUES(lm, 0, 0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0);
    TGO_ASSERT_VALUES(l0, 0, 0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0);
    tg_tensor *n = tgt_f64(2, (int64_t[]){2, 2}, (double[]){1, NAN, INFINITY, 2});
    tg_tensor *nu = tg_triu(n, 0);
    TGO_ASSERT_VALUES(nu, 0, 1, NAN, 0, 2);
    tg_tensor *b = tgo_randn(TG_F64, TG_SHAPE(2, 3, 3), 5, true);
    tg_tensor *bl = tg_tril(b, 0), *w = tg_arange(TG_F64, 1, 19, 1), *wv = tg_view(w, TG_SHAPE(2, 3, 3));
    tg_tensor *p = tg_mul(bl, wv), *sp = tg_sum(p);
    cr_assert_eq(tg_backward(sp, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(b, 0, 1, 0, 0, 4, 5, 0, 7, 8, 9, 10, 0, 0, 13, 14, 0, 16, 17, 18);
    tg_tensor *v = tg_ones(TG_F64, TG_SHAPE(3));
    tg_clear_error();
    cr_assert_null(tg_triu(v, 0));
    tgt_assert_error(TG_ERR_DIM, "tg_triu", "2 dims", NULL);
    TGO_RELEASE(x, u0, u1, lm, l0, n, nu, b, bl, w, wv, p, sp, v);
}

/* masked_fill as PyTorch's: a broadcast mask, -inf for a causal mask (the
 * softmax of the filled rows is then exact), the gradient only where the
 * mask is 0, and a mask that would grow t is refused. */
Test(shape_ops, masked_fill_as_pytorch) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(2, 3), 7, true);
    tg_tensor *m = tgt_f64(1, (int64_t[]){3}, (double[]){0, 1, 0});
    tg_tensor *f = tg_masked_fill(x, m, -INFINITY);
    double v;
    cr_assert_eq(tg_get(f, (int64_t[]){1, 1}, &v), TG_OK);
    cr_assert(isinf(v) && v < 0);
    tg_tensor *sm = tg_softmax(f), *w = tg_arange(TG_F64, 1, 7, 1), *wv = tg_view(w, TG_SHAPE(2, 3));
    cr_assert_eq(tg_get(sm, (int64_t[]){0, 1}, &v), TG_OK);
    cr_assert_eq(v, 0);
    tg_tensor *p = tg_mul(f, wv), *m2 = tg_masked_fill(p, m, 0), *l = tg_sum(m2);
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 1, 0, 3, 4, 0, 6);
    tg_tensor *big = tg_ones(TG_F64, TG_SHAPE(4, 2, 3));
    tg_clear_error();
    cr_assert_null(tg_masked_fill(x, big, 0));
    tgt_assert_error(TG_ERR_SHAPE, "tg_masked_fill", NULL);
    tg_clear_error();
    cr_assert_null(tg_masked_fill(x, NULL, 0));
    tgt_assert_error(TG_ERR_NULL, "tg_masked_fill", "mask", NULL);
    TGO_RELEASE(x, m, f, sm, w, wv, p, m2, l, big);
}

/* triu/tril save nothing, as PyTorch's: a second backward through their output
 * after a first one without retain_graph works (it failed with TG_ERR_FREED
 * while they were composed with where, whose saved mask the first freed). */
Test(shape_ops, triangles_save_nothing_so_a_second_backward_works) {
    for (int upper = 0; upper < 2; upper++) {
        tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(4, 5), 3, 0, 1);
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        tg_tensor *t = upper ? tg_triu(x, 1) : tg_tril(x, -1);
        tg_tensor *s1 = tg_sum(t);
        cr_assert_eq(tg_backward(s1, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *m = tg_mean(t);
        cr_assert_eq(tg_backward(m, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *g = tg_grad(x);
        /* d(sum) + d(mean) on the triangle: 1 + 1/20 there, 0 elsewhere */
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 5; j++) {
                bool in = upper ? j - i >= 1 : j - i <= -1;
                cr_assert_float_eq(tgt_at(g, i * 5 + j), in ? 1.05 : 0.0, 1e-15);
            }
        TGO_RELEASE(x, t, s1, m, g);
    }
}
