/* tests/test_reductions.c - amax/amin, max/min with indices, argmax/argmin,
 * logsumexp, prod, any/all, cumsum/cumprod, var/std and the vector norms.
 * Values and gradients (with a weighted upstream, so every output element's
 * gradient is told apart) were computed by PyTorch in float64: ties, NaN,
 * zeros in products, constant lines for std, a zero vector for the 2-norm.
 * Then gradcheck in f64 along every dim of a 3-D tensor, contiguous and
 * transposed, and the error paths. */
#include "tg_ops_test_util.h"

TestSuite(reductions, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

static tg_tensor *leaf(int ndim, const int64_t *shape, const double *v) {
    tg_tensor *t = tgo_make(TG_F64, ndim, shape, v);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    return t;
}
#define LEAF(shape_pair, ...) leaf(shape_pair, (const double[]){__VA_ARGS__})

/* Runs backward from r with upstream w (NULL: ones for a 0-d r) and checks
 * r's values and x's gradient against PyTorch's (exact up to 1e-13). */
static void check(tg_tensor *r, const double *want, int64_t nr, tg_tensor *w, tg_tensor *x,
                  const double *grad, int64_t nx) {
    cr_assert_not_null(r, "%s", tg_last_error());
    tgo_assert_close(r, want, nr, 1e-13);
    if (!w && tg_numel(r) != 1) w = tg_ones(TG_F64, tg_ndim(r), tg_shape(r));
    cr_assert_eq(tg_backward(r, w, false), TG_OK, "%s", tg_last_error());
    tgo_assert_close(tg_grad(x), grad, nx, 1e-13);
}
#define D(...) (const double[]){__VA_ARGS__}, (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))

Test(reductions, amax_amin_and_indexed_max_min_as_pytorch) {
    tg_tensor *a = LEAF(TG_SHAPE(2, 3), 1, NAN, 3, 2, 2, 1);
    check(tg_amax_dim(a, 1, false), D(NAN, 2), NULL, a, D(NAN, NAN, NAN, 0.5, 0.5, 0));
    tg_tensor *b = LEAF(TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1);
    tg_tensor *r = tg_amin_dim(b, 0, true);
    cr_assert_eq(tg_ndim(r), 2);
    check(r, D(1, 2, 1), TGO_MAKE(TG_F64, TG_SHAPE(1, 3), 1, 2, 3), b, D(1, 0, 0, 0, 2, 3));
    tg_tensor *c = LEAF(TG_SHAPE(2, 3), 1, NAN, 3, 2, 2, 1), *idx = NULL;
    r = tg_min_dim(c, 1, false, &idx);
    cr_assert_not_null(idx);
    cr_assert_eq(tg_get_dtype(idx), TG_I64);
    cr_assert(!tg_requires_grad(idx));
    TGO_ASSERT_VALUES(idx, 0, 1, 2);
    check(r, D(NAN, 1), NULL, c, D(0, 1, 0, 0, 0, 1));
    /* ties: amax over all splits, max_dim gives the first */
    tg_tensor *d = LEAF(TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1);
    check(tg_amax(d), D(5), NULL, d, D(0, 0.5, 0.5, 0, 0, 0));
    tg_tensor *e = LEAF(TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1), *ei;
    check(tg_max_dim(e, 1, true, &ei), D(5, 2), NULL, e, D(0, 1, 0, 1, 0, 0));
    TGO_ASSERT_VALUES(ei, 0, 1, 0);
    cr_assert_eq(tg_ndim(ei), 2);
    /* argmax / argmin: the first NaN, else the first extreme; any dtype */
    tg_tensor *f = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, NAN, 3, 2, 2, 1);
    TGO_ASSERT_VALUES(tg_argmax_dim(f, 1, false), 0, 1, 0);
    TGO_ASSERT_VALUES(tg_argmin(TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1)), 0, 0);
    TGO_ASSERT_VALUES(tg_argmax(TGO_MAKE(TG_I64, TG_SHAPE(4), 3, 9, 9, -1)), 0, 1);
    /* an empty line is refused, as PyTorch */
    cr_assert_null(tg_amax_dim(tg_zeros(TG_F64, TG_SHAPE(0, 3)), 0, false));
    tgt_assert_error(TG_ERR_SHAPE, "tg_amax_dim", "empty", NULL);
    cr_assert_null(tg_argmax(tg_zeros(TG_F64, TG_SHAPE(0))));
    tgt_assert_error(TG_ERR_SHAPE, "tg_argmax", NULL);
}

Test(reductions, logsumexp_prod_scans_as_pytorch) {
    tg_tensor *y = LEAF(TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1);
    check(tg_logsumexp_dim(y, 1, false), D(5.702263321439095, 2.8619948040582512),
          TGO_MAKE(TG_F64, TG_SHAPE(2), 1, 2), y,
          D(0.009074714844313747, 0.4954626425778431, 0.4954626425778431, 0.8446375965030363,
            0.8446375965030363, 0.3107248069939272));
    tg_tensor *y2 = LEAF(TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1);
    check(tg_logsumexp(y2), D(5.759031084317375), NULL, y2,
          D(0.008573912772760194, 0.46811977593825277, 0.46811977593825277, 0.02330631128898694,
            0.02330631128898694, 0.008573912772760194));
    /* -inf lines and +inf */
    tg_tensor *z = TGO_MAKE(TG_F64, TG_SHAPE(3, 2), -INFINITY, -INFINITY, 1, INFINITY, NAN, 0);
    TGO_ASSERT_VALUES(tg_logsumexp_dim(z, 1, false), 0, -INFINITY, INFINITY, NAN);
    TGO_ASSERT_VALUES(tg_logsumexp_dim(tg_zeros(TG_F64, TG_SHAPE(2, 0)), 1, false), 0, -INFINITY,
                      -INFINITY);
    /* zeros in products: exact gradients, no division */
    tg_tensor *p = LEAF(TG_SHAPE(3, 4), 2, 0, 3, 0, 1, 2, 0, 4, 1, 2, 3, 4);
    check(tg_prod_dim(p, 1, false), D(0, 0, 24), TGO_MAKE(TG_F64, TG_SHAPE(3), 1, 2, 3), p,
          D(0, 0, 0, 0, 0, 0, 16, 0, 72, 36, 24, 18));
    tg_tensor *q = LEAF(TG_SHAPE(3, 4), 2, 0, 3, 0, 1, 2, 0, 4, 1, 2, 3, 4);
    tg_tensor *w = tg_reshape(tg_arange(TG_F64, 0, 12, 1), TG_SHAPE(3, 4));
    check(tg_cumprod(q, 1), D(2, 0, 0, 0, 1, 2, 0, 0, 1, 2, 6, 24), w, q,
          D(0, 14, 0, 0, 14, 5, 68, 0, 350, 171, 108, 66));
    tg_tensor *c = LEAF(TG_SHAPE(2, 3), 1, 5, 5, 2, 2, 1);
    check(tg_cumsum(c, 0), D(1, 5, 5, 3, 7, 6), TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
          c, D(5, 7, 9, 4, 5, 6));
    TGO_ASSERT_VALUES(tg_prod(tg_zeros(TG_F64, TG_SHAPE(0))), 0, 1);
    /* a 0-d tensor is one element */
    tg_tensor *s0 = TGO_MAKE(TG_F64, TG_SCALAR, 3);
    tg_tensor *cs = tg_cumsum(s0, 0);
    cr_assert_eq(tg_ndim(cs), 0);
    TGO_ASSERT_VALUES(cs, 0, 3);
}

Test(reductions, var_std_norm_as_pytorch) {
    tg_tensor *v = LEAF(TG_SHAPE(2, 4), 1, 2, 4, 7, 3, 3, 3, 3);
    check(tg_std_dim(v, 1, 1, false), D(2.6457513110645903, 0), TGO_MAKE(TG_F64, TG_SHAPE(2), 1, 2),
          v, D(-0.314970394174356, -0.18898223650461363, 0.06299407883487121, 0.4409585518440985,
               0, 0, 0, 0)); /* a constant line: gradient 0, not NaN */
    tg_tensor *v2 = LEAF(TG_SHAPE(2, 4), 1, 2, 4, 7, 3, 3, 3, 3);
    check(tg_var_dim(v2, 0, 0, true), D(1, 0.25, 0.25, 4),
          TGO_MAKE(TG_F64, TG_SHAPE(1, 4), 1, 2, 3, 4), v2, D(-1, -1, 1.5, 8, 1, 1, -1.5, -8));
    TGO_ASSERT_VALUES(tg_var(TGO_MAKE(TG_F64, TG_SHAPE(1), 5), 1), 0, NAN); /* n - correction 0 */
    TGO_ASSERT_VALUES(tg_var(TGO_MAKE(TG_F64, TG_SHAPE(3), 1, 2, 4), 1), 1e-15, 7.0 / 3.0);
    tg_tensor *n2 = LEAF(TG_SHAPE(2, 3), 3, -4, 0, 0, 0, 0);
    check(tg_norm_dim(n2, 2, 1, false), D(5, 0), TGO_MAKE(TG_F64, TG_SHAPE(2), 1, 2), n2,
          D(0.6, -0.8, 0, 0, 0, 0)); /* the zero vector: 0, not NaN */
    tg_tensor *ni = LEAF(TG_SHAPE(2, 3), 3, -4, 4, 0, -1, 0);
    check(tg_norm_dim(ni, INFINITY, 1, false), D(4, 1), TGO_MAKE(TG_F64, TG_SHAPE(2), 1, 2), ni,
          D(0, -0.5, 0.5, 0, -2, 0));
    tg_tensor *n1 = LEAF(TG_SHAPE(2, 3), 3, -4, 0, 0, -1, 0);
    check(tg_norm(n1, 1), D(8), NULL, n1, D(1, -1, 0, 0, -1, 0));
    /* any p, as linalg.vector_norm: (27 + 64 + 1)^(1/3) */
    TGO_ASSERT_VALUES(tg_norm(n1, 3), 1e-15, 4.514357435474001);
    cr_assert_null(tg_var(n1, -1));
    tgt_assert_error(TG_ERR_VALUE, "tg_var", "correction", NULL);
}

/* p = 0 counts the non-zero elements: flat, so no gradient reaches the input
 * from it, as PyTorch (a leaf reached only that way keeps no .grad; with
 * another path, only that path's). */
Test(reductions, norm_p0_gives_no_gradient) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 0, 2);
    tg_tensor *c = tg_norm(x, 0);
    TGO_ASSERT_VALUES(c, 0, 2);
    cr_assert_eq(tg_backward(c, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_null(tg_grad(x), "a .grad from a flat function");
    tg_tensor *y = tg_add(tg_scale(tg_norm(x, 0), 3), tg_sum(x));
    cr_assert_eq(tg_backward(y, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(tg_grad(x), 0, 1, 1, 1);
}

/* An inf norm that is NaN (a NaN in the line): no element equals it, so its
 * gradient is sign(t) 0 there (sign(NaN) 0), as PyTorch, not 0 / 0; the
 * other lines are unchanged. */
Test(reductions, inf_norm_of_a_nan_line_has_zero_gradient) {
    tg_tensor *x = LEAF(TG_SHAPE(2, 2), -1.2, 3.0, NAN, 1.0);
    tg_tensor *s = tg_sum(tg_norm_dim(x, INFINITY, 1, false));
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(tg_grad(x), 0, 0, 1, 0, 0);
    tg_tensor *y = LEAF(TG_SHAPE(3), -1.0, NAN, 2.0);
    cr_assert_eq(tg_backward(tg_norm(y, -INFINITY), NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(tg_grad(y), 0, 0, 0, 0);
}

Test(reductions, any_all_give_bool) {
    tg_tensor *a = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 0, NAN, 0, 0);
    tg_tensor *r = tg_any_dim(a, 1, false);
    cr_assert_eq(tg_get_dtype(r), TG_BOOL);
    TGO_ASSERT_VALUES(r, 0, 1, 0);
    TGO_ASSERT_VALUES(tg_all_dim(TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 1, NAN, 0, 1), 0, false), 0, 0, 1);
    TGO_ASSERT_VALUES(tg_any(tg_zeros(TG_F32, TG_SHAPE(0))), 0, 0);
    TGO_ASSERT_VALUES(tg_all(tg_zeros(TG_F32, TG_SHAPE(0))), 0, 1);
    TGO_ASSERT_VALUES(tg_all(TGO_MAKE(TG_I64, TG_SHAPE(3), 1, -2, 3)), 0, 1);
    TGO_ASSERT_VALUES(tg_any(tg_gt_scalar(a, 0.5)), 0, 0);
}

/* ---- gradcheck in f64 along every dim, contiguous and transposed ------------------------- */

typedef enum { G_AMAX, G_AMIN, G_MAX, G_LSE, G_PROD, G_CUMSUM, G_CUMPROD, G_VAR, G_STD, G_NORM1,
               G_NORM2, G_NORMINF, G_N } gop;
typedef struct { gop op; int dim; bool keepdim; bool transposed; } gcase;

static tg_tensor *g_fn(tg_tensor *const *in, void *user) {
    const gcase *c = user;
    tg_tensor *x = c->transposed ? tg_transpose(in[0], 0, 2) : tg_retain(in[0]);
    tg_tensor *r = NULL;
    switch (c->op) {
    case G_AMAX: r = tg_amax_dim(x, c->dim, c->keepdim); break;
    case G_AMIN: r = tg_amin_dim(x, c->dim, c->keepdim); break;
    case G_MAX: r = tg_max_dim(x, c->dim, c->keepdim, NULL); break;
    case G_LSE: r = tg_logsumexp_dim(x, c->dim, c->keepdim); break;
    case G_PROD: r = tg_prod_dim(x, c->dim, c->keepdim); break;
    case G_CUMSUM: r = tg_cumsum(x, c->dim); break;
    case G_CUMPROD: r = tg_cumprod(x, c->dim); break;
    case G_VAR: r = tg_var_dim(x, c->dim, 1, c->keepdim); break;
    case G_STD: r = tg_std_dim(x, c->dim, 0, c->keepdim); break;
    case G_NORM1: r = tg_norm_dim(x, 1, c->dim, c->keepdim); break;
    case G_NORM2: r = tg_norm_dim(x, 2, c->dim, c->keepdim); break;
    default: r = tg_norm_dim(x, INFINITY, c->dim, c->keepdim); break;
    }
    tg_release(x); /* scopes opened outside are hidden inside the callback */
    return r;
}

Test(reductions, gradcheck_every_dim_and_layout) {
    for (int op = 0; op < G_N; op++) {
        for (int dim = -3; dim < 3; dim++) {
            for (int tr = 0; tr < 2; tr++) {
                int sc = tg_scope_begin();
                /* distinct values (no ties, no zeros): the gradients are smooth there */
                tg_tensor *x = tg_add_scalar(tg_rand(TG_F64, TG_SHAPE(3, 4, 2), 11 + op, 0.5, 2.0),
                                             0);
                cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
                gcase c = {(gop)op, dim, (dim & 1) != 0, tr != 0};
                tg_tensor *in[1] = {x};
                cr_assert_eq(tg_gradcheck(g_fn, &c, 1, in, NULL), TG_OK, "op %d dim %d transposed %d: %s",
                             op, dim, tr, tg_last_error());
                cr_assert_eq(tg_scope_end(sc), TG_OK);
            }
        }
    }
}

Test(reductions, bad_inputs) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    cr_assert_null(tg_amax_dim(x, 2, false));
    tgt_assert_error(TG_ERR_DIM, "tg_amax_dim", NULL);
    cr_assert_null(tg_cumsum(x, -3));
    tgt_assert_error(TG_ERR_DIM, NULL);
    cr_assert_null(tg_logsumexp(TGO_MAKE(TG_I64, TG_SHAPE(2), 1, 2)));
    tgt_assert_error(TG_ERR_DTYPE, "tg_logsumexp", "i64", NULL);
    cr_assert_null(tg_discounted_cumsum(TGO_MAKE(TG_BOOL, TG_SHAPE(2), 1, 0), 0.9, 0));
    tgt_assert_error(TG_ERR_DTYPE, "tg_discounted_cumsum", "bool", NULL);
    tg_clear_error();
    cr_assert_null(tg_prod_dim(NULL, 0, false));
    tgt_assert_error(TG_ERR_NULL, "tg_prod_dim", NULL);
    tg_clear_error();
    tg_tensor *ix = (tg_tensor *)1;
    cr_assert_null(tg_max_dim(NULL, 0, false, &ix));
    cr_assert_null(ix, "the indices are NULL on failure");
    tg_clear_error(); /* a NULL input is TG_ERR_NULL before any other argument is looked at */
    cr_assert_null(tg_norm(NULL, 3));
    tgt_assert_error(TG_ERR_NULL, "tg_norm", NULL);
    tg_clear_error();
    cr_assert_null(tg_std_dim(NULL, 0, 1, false));
    tgt_assert_error(TG_ERR_NULL, "tg_std_dim", NULL);
}

/* Regression (found by the differential suite): the inf-norm of an empty line was 0;
 * PyTorch refuses it (the max has no identity). */
Test(reductions, inf_norm_of_an_empty_line_is_refused) {
    cr_assert_null(tg_norm_dim(tg_zeros(TG_F64, TG_SHAPE(0, 2)), INFINITY, 0, false));
    tgt_assert_error(TG_ERR_SHAPE, "tg_norm_dim", "empty", NULL);
    TGO_ASSERT_VALUES(tg_norm_dim(tg_zeros(TG_F64, TG_SHAPE(0, 2)), 2, 0, false), 0, 0, 0);
    tg_tensor *e = tg_norm_dim(tg_zeros(TG_F64, TG_SHAPE(2, 0)), INFINITY, 0, false);
    cr_assert_not_null(e, "an empty result needs no max: %s", tg_last_error());
    cr_assert_eq(tg_numel(e), 0);
}

/* Regression (found by the fuzzer, a timeout): a scan over an empty tensor whose other
 * dims are huge walked every one of their 2.7e16 empty lines. */
Test(reductions, scans_of_empty_tensors_with_huge_dims_return_at_once) {
    tg_tensor *z = tg_zeros(TG_F64, TG_SHAPE(0, 2, 3, 4510199916959526));
    cr_assert_not_null(z, "%s", tg_last_error());
    tg_tensor *c = tg_cumsum(z, 0), *p = tg_cumprod(z, 0);
    cr_assert(c && p, "%s", tg_last_error());
    cr_assert_eq(tg_numel(c), 0);
    cr_assert_eq(tg_numel(p), 0);
}
