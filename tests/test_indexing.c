/* tests/test_indexing.c - gather along any dim, scatter_add, index_select,
 * flip: values and gradients (weighted upstream 1, 2, 3, ...) as PyTorch
 * float64 gives them, repeated indices, gradcheck in f64, and the error
 * paths: an index out of range is named before anything is written. */
#include "tg_ops_test_util.h"

TestSuite(indexing, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped);

static tg_tensor *leaf23(void) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    return x;
}
static tg_tensor *iota(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return tg_reshape(tg_arange(TG_F64, 1, (double)n + 1, 1), ndim, shape);
}
static tg_tensor *idx(int ndim, const int64_t *shape, const int64_t *v) {
    tg_tensor *t = tg_from_data(TG_I64, ndim, shape, v);
    cr_assert_not_null(t);
    return t;
}
#define IDX(shape_pair, ...) idx(shape_pair, (const int64_t[]){__VA_ARGS__})

static void backward_weighted(tg_tensor *r) {
    cr_assert_not_null(r, "%s", tg_last_error());
    cr_assert_eq(tg_backward(r, iota(tg_ndim(r), tg_shape(r)), false), TG_OK, "%s", tg_last_error());
}

Test(indexing, gather_dim_scatter_add_index_select_flip_as_pytorch) {
    tg_tensor *x = leaf23();
    tg_tensor *r = tg_gather_dim(x, 0, IDX(TG_SHAPE(2, 3), 1, 0, 1, 0, 0, 1));
    TGO_ASSERT_VALUES(r, 0, 4, 2, 6, 1, 2, 6);
    backward_weighted(r);
    TGO_ASSERT_GRAD(x, 0, 4, 7, 0, 1, 0, 9);

    tg_tensor *y = leaf23(), *src = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 10, 20, 30, 40);
    cr_assert_eq(tg_set_requires_grad(src, true), TG_OK);
    r = tg_scatter_add(y, 1, IDX(TG_SHAPE(2, 2), 2, 2, 0, 1), src);
    TGO_ASSERT_VALUES(r, 0, 1, 2, 33, 34, 45, 6);
    backward_weighted(r);
    TGO_ASSERT_GRAD(y, 0, 1, 2, 3, 4, 5, 6);
    TGO_ASSERT_GRAD(src, 0, 3, 3, 4, 5);
    tg_tensor *src0 = TGO_MAKE(TG_F64, TG_SHAPE(1, 3), 10, 20, 30);
    cr_assert_eq(tg_set_requires_grad(src0, true), TG_OK);
    r = tg_scatter_add(leaf23(), 0, IDX(TG_SHAPE(1, 3), 1, 0, 1), src0);
    TGO_ASSERT_VALUES(r, 0, 1, 22, 3, 14, 5, 36);
    backward_weighted(r);
    TGO_ASSERT_GRAD(src0, 0, 4, 2, 6);

    tg_tensor *z = leaf23();
    r = tg_index_select(z, 1, IDX(TG_SHAPE(4), 2, 0, 2, 2));
    TGO_ASSERT_VALUES(r, 0, 3, 1, 3, 3, 6, 4, 6, 6);
    backward_weighted(r);
    TGO_ASSERT_GRAD(z, 0, 2, 0, 8, 6, 0, 20);

    tg_tensor *f = leaf23();
    r = tg_flip(f, 2, (const int[]){0, -1});
    TGO_ASSERT_VALUES(r, 0, 6, 5, 4, 3, 2, 1);
    backward_weighted(r);
    TGO_ASSERT_GRAD(f, 0, 6, 5, 4, 3, 2, 1);
    /* flip of no dims is a copy */
    tg_tensor *c = tg_flip(f, 0, NULL);
    cr_assert(!tg_same_storage(c, f));
    TGO_ASSERT_VALUES(c, 0, 1, 2, 3, 4, 5, 6);
    /* a strided (transposed) input */
    tg_tensor *ft = tg_flip(tg_transpose(f, 0, 1), 1, (const int[]){0});
    TGO_ASSERT_VALUES(ft, 0, 3, 6, 2, 5, 1, 4);
}

typedef enum { G_GATHER0, G_GATHER2, G_SCATTER1, G_ISEL, G_FLIP } gop;
static tg_tensor *g_fn(tg_tensor *const *in, void *user) {
    gop op = *(const gop *)user;
    tg_tensor *r = NULL;
    int64_t iv[64];
    for (int i = 0; i < 64; i++) iv[i] = (i * 7) % 3;
    switch (op) {
    case G_GATHER0: {
        tg_tensor *ix = tg_from_data(TG_I64, TG_SHAPE(5, 4, 2), iv); /* dim 0 of (3, 4, 2): 5 picks */
        r = tg_gather_dim(in[0], 0, ix);
        tg_release(ix);
        break;
    }
    case G_GATHER2: {
        tg_tensor *t = tg_transpose(in[0], 0, 1), *ix = tg_from_data(TG_I64, TG_SHAPE(4, 3, 3), iv);
        for (int i = 0; i < 64; i++) iv[i] %= 2;
        tg_release(ix);
        ix = tg_from_data(TG_I64, TG_SHAPE(4, 3, 3), iv);
        r = tg_gather_dim(t, 2, ix);
        tg_release(t);
        tg_release(ix);
        break;
    }
    case G_SCATTER1: {
        tg_tensor *ix = tg_from_data(TG_I64, TG_SHAPE(3, 2, 2), iv);
        r = tg_scatter_add(in[0], 1, ix, in[1]);
        tg_release(ix);
        break;
    }
    case G_ISEL: {
        tg_tensor *ix = tg_from_data(TG_I64, TG_SHAPE(5), (const int64_t[]){3, 0, 3, 1, 1});
        r = tg_index_select(in[0], 1, ix);
        tg_release(ix);
        break;
    }
    default: r = tg_flip(in[0], 2, (const int[]){2, 0}); break;
    }
    return r;
}

Test(indexing, gradcheck) {
    for (int op = 0; op <= G_FLIP; op++) {
        int sc = tg_scope_begin();
        tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3, 4, 2), 5 + op, 0, 1);
        tg_tensor *src = tg_randn(TG_F64, TG_SHAPE(3, 2, 2), 9, 0, 1);
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        cr_assert_eq(tg_set_requires_grad(src, true), TG_OK);
        tg_tensor *in[2] = {x, src};
        gop g = (gop)op;
        cr_assert_eq(tg_gradcheck(g_fn, &g, op == G_SCATTER1 ? 2 : 1, in, NULL), TG_OK, "op %d: %s",
                     op, tg_last_error());
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

Test(indexing, bad_inputs_are_named_before_anything_is_written) {
    tg_tensor *x = leaf23();
    tgo_snap sx = tgo_snapshot(x);
    cr_assert_null(tg_gather_dim(x, 0, IDX(TG_SHAPE(2, 3), 0, 2, 0, 0, 0, 0)));
    tgt_assert_error(TG_ERR_VALUE, "tg_gather_dim", "index 2", "out of range for size 2", NULL);
    cr_assert_null(tg_gather_dim(x, 0, IDX(TG_SHAPE(2, 2), 0, 0, 0, 0)));
    tgt_assert_error(TG_ERR_SHAPE, "tg_gather_dim", NULL);
    cr_assert_null(tg_gather_dim(x, 2, IDX(TG_SHAPE(2, 3), 0, 0, 0, 0, 0, 0)));
    tgt_assert_error(TG_ERR_DIM, NULL);
    tg_tensor *src = TGO_MAKE(TG_F64, TG_SHAPE(2, 2), 1, 2, 3, 4);
    cr_assert_null(tg_scatter_add(x, 1, IDX(TG_SHAPE(2, 2), 0, 3, 0, 0), src));
    tgt_assert_error(TG_ERR_VALUE, "tg_scatter_add", "index 3", NULL);
    cr_assert_null(tg_scatter_add(x, 1, IDX(TG_SHAPE(2, 1), 0, 0), src));
    tgt_assert_error(TG_ERR_SHAPE, "tg_scatter_add", NULL);
    cr_assert_null(tg_scatter_add(x, 1, IDX(TG_SHAPE(2, 2), 0, 0, 0, 0),
                                  TGO_MAKE(TG_F32, TG_SHAPE(2, 2), 1, 2, 3, 4)));
    tgt_assert_error(TG_ERR_DTYPE, "tg_scatter_add", NULL);
    cr_assert_null(tg_index_select(x, 1, IDX(TG_SHAPE(2, 1), 0, 0)));
    tgt_assert_error(TG_ERR_SHAPE, "tg_index_select", "1-D", NULL);
    cr_assert_null(tg_index_select(x, 1, IDX(TG_SHAPE(2), 0, -1)));
    tgt_assert_error(TG_ERR_VALUE, "tg_index_select", "-1", NULL);
    cr_assert_null(tg_flip(x, 2, (const int[]){1, -1}));
    tgt_assert_error(TG_ERR_DIM, "tg_flip", "twice", NULL);
    cr_assert_null(tg_flip(x, 1, NULL));
    tgt_assert_error(TG_ERR_VALUE, "tg_flip", NULL);
    cr_assert_null(tg_flip(x, TG_MAX_DIMS + 1, (const int[TG_MAX_DIMS + 1]){0}));
    tgt_assert_error(TG_ERR_VALUE, "tg_flip", "dims", NULL);
    cr_assert_null(tg_flip(x, -1, (const int[]){0}));
    tgt_assert_error(TG_ERR_VALUE, "tg_flip", NULL);
    tg_clear_error(); /* a NULL argument keeps an earlier error (NULL propagation) */
    cr_assert_null(tg_scatter_add(x, 1, IDX(TG_SHAPE(2, 2), 0, 0, 0, 0), NULL));
    tgt_assert_error(TG_ERR_NULL, "tg_scatter_add", "src", NULL);
    tg_clear_error();
    cr_assert_null(tg_scatter_add(x, 1, NULL, src));
    tgt_assert_error(TG_ERR_NULL, "tg_scatter_add", "index", NULL);
    tgo_assert_unchanged(&sx);
}

/* FlipBackward saves nothing (as PyTorch's): a second backward through it needs no
 * retain_graph. Regression: flip was recorded as index_select, whose saved index is
 * freed by the first backward, so the second one failed with TG_ERR_FREED. */
Test(indexing, flip_saves_nothing_so_a_second_backward_works) {
    tg_tensor *x = leaf23();
    tg_tensor *l = tg_sum(tg_flip(x, 1, (const int[]){0}));
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 2, 2, 2, 2, 2, 2);
    cr_assert_str_eq(tg_grad_fn_name(tg_flip(x, 0, NULL)), "FlipBackward");
}

/* scatter_add saves its index only when src needs a gradient (t's gradient is g
 * itself), as PyTorch: with only t requiring grad a second backward needs no
 * retain_graph. Regression (found by the differential suite): the index was
 * always saved, so the second backward failed with TG_ERR_FREED. */
Test(indexing, scatter_add_saves_the_index_only_for_src) {
    tg_tensor *x = leaf23(), *src = tg_ones(TG_F64, TG_SHAPE(2, 3));
    tg_tensor *index = tg_zeros(TG_I64, TG_SHAPE(2, 3));
    tg_tensor *l = tg_sum(tg_scatter_add(x, 1, index, src));
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 2, 2, 2, 2, 2, 2);
    cr_assert_eq(tg_set_requires_grad(src, true), TG_OK);
    l = tg_sum(tg_scatter_add(x, 1, index, src));
    cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(l, NULL, false), TG_ERR_FREED);
    tg_clear_error();
}

/* Results are tensors of their own, never views of an op's internals. Regression (found
 * by the differential suite): flipping a (3, 4, 1) tensor along dim 1 returned a
 * transposed view of the gather's result (contiguous thanks to the size-1 dim), made
 * with grad mode off inside the op, so an in-place op with grad on a slice of it was
 * refused (TG_ERR_AUTOGRAD) where PyTorch accepts it. */
Test(indexing, results_are_not_views_of_internals) {
    tg_tensor *t = tg_randn(TG_F64, TG_SHAPE(3, 4, 1), 2, 0, 1);
    tg_tensor *f = tg_flip(t, 1, (const int[]){1});
    cr_assert(!tg_is_view(f));
    tg_tensor *g = tg_gather_dim(t, 1, tg_zeros(TG_I64, TG_SHAPE(3, 2, 1)));
    cr_assert(!tg_is_view(g));
    tg_tensor *r = TGO_MAKE(TG_F64, TG_SCALAR, 1.5);
    cr_assert_eq(tg_set_requires_grad(r, true), TG_OK);
    tg_tensor *v = tg_slice(f, -1, 0, 1, 1);
    cr_assert_eq(tg_sub_(v, r), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(tg_sum(f), NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(r, 0, -12);
}
