/* tests/test_errors.c - every bad-input path returns the right status and a
 * non-empty message naming the function (and the culprit where the contract
 * says so), leaves its inputs unchanged (values, version, requires_grad, leaf
 * status) and leaks nothing (the fixture checks that no tensor, storage,
 * node or byte is left after each test).
 *
 * Allocation-failure injection is in test_errors_alloc.c. */
#include "tg_ops_test_util.h"

TestSuite(errors_shape, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(errors_dtype, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(errors_null, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(errors_value, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(errors_state, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(errors_autograd, .init = tgt_setup, .fini = tgt_teardown);

/* expr returns a tensor: asserts it is NULL with status st and a message
 * containing every substring given (at least one). */
#define EXPECT_NULL(expr, st, ...)                                                          \
    do {                                                                                    \
        tg_clear_error();                                                                   \
        tg_tensor *r_ = (expr);                                                             \
        if (r_) tg_release(r_);                                                             \
        cr_assert_null(r_, "%s succeeded", #expr);                                          \
        tgt_assert_error(st, __VA_ARGS__, NULL);                                            \
    } while (0)

/* expr returns a tg_status: asserts it is st, recorded with a message. */
#define EXPECT_STATUS(expr, st, ...)                                                        \
    do {                                                                                    \
        tg_clear_error();                                                                   \
        tg_status s_ = (expr);                                                              \
        cr_assert_eq(s_, st, "%s returned %s, expected %s", #expr, tg_status_name(s_),      \
                     tg_status_name(st));                                                   \
        tgt_assert_error(st, __VA_ARGS__, NULL);                                            \
    } while (0)

static tg_tensor *leaf_rg(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed) {
    return tgo_rand(dt, ndim, shape, seed, 0.5, 2.0, true);
}

/* ---- shape ---------------------------------------------------------------------------- */

Test(errors_shape, matmul_shapes) {
    tg_tensor *a = leaf_rg(TG_F64, TG_SHAPE(2, 3), 1), *b = leaf_rg(TG_F64, TG_SHAPE(4, 2), 2);
    tg_tensor *a3 = leaf_rg(TG_F64, TG_SHAPE(2, 3, 4), 3), *b3 = leaf_rg(TG_F64, TG_SHAPE(3, 4, 2), 4);
    tg_tensor *v = leaf_rg(TG_F64, TG_SHAPE(3), 5), *w = leaf_rg(TG_F64, TG_SHAPE(3, 2), 6);
    tgo_snap sa = tgo_snapshot(a), sb = tgo_snapshot(b);
    EXPECT_NULL(tg_matmul(a, b), TG_ERR_SHAPE, "tg_matmul", "inner", "[2, 3]", "[4, 2]");
    EXPECT_NULL(tg_matmul(a3, b3), TG_ERR_SHAPE, "tg_matmul", "batch", "[2, 3, 4]", "[3, 4, 2]");
    EXPECT_NULL(tg_matmul(v, w), TG_ERR_SHAPE, "tg_matmul", "[3]");
    EXPECT_NULL(tg_matmul(w, v), TG_ERR_SHAPE, "tg_matmul");
    EXPECT_NULL(tg_matmul(a3, a), TG_ERR_SHAPE, "tg_matmul", "inner"); /* 4 != 2 */
    EXPECT_NULL(tg_matmul(a, a3), TG_ERR_SHAPE, "tg_matmul", "batch"); /* 2-D @ 3-D */
    tgo_assert_unchanged(&sa);
    tgo_assert_unchanged(&sb);
    TGO_RELEASE(a, b, a3, b3, v, w);
}

Test(errors_shape, gather_leading_dims) {
    tg_tensor *t = leaf_rg(TG_F64, TG_SHAPE(2, 4), 1);
    tg_tensor *i1 = TGO_MAKE(TG_I64, TG_SHAPE(3, 1), 0, 1, 2);
    tg_tensor *i2 = TGO_MAKE(TG_I64, TG_SHAPE(2), 0, 1);
    tg_tensor *i3 = TGO_MAKE(TG_I64, TG_SHAPE(2, 1, 1), 0, 1);
    tgo_snap st = tgo_snapshot(t);
    EXPECT_NULL(tg_gather(t, i1), TG_ERR_SHAPE, "tg_gather", "[3, 1]", "[2, 4]");
    EXPECT_NULL(tg_gather(t, i2), TG_ERR_SHAPE, "tg_gather");
    EXPECT_NULL(tg_gather(t, i3), TG_ERR_SHAPE, "tg_gather");
    tgo_assert_unchanged(&st);
    TGO_RELEASE(t, i1, i2, i3);
}

Test(errors_shape, backward_with_a_wrong_gradient) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(2, 3), 1);
    tg_tensor *y = tg_scale(x, 2);
    tg_tensor *g_shape = tg_ones(TG_F64, TG_SHAPE(3, 2));
    tg_tensor *g_f32 = tg_ones(TG_F32, TG_SHAPE(2, 3)), *g_dtype = tg_to_dtype(g_f32, TG_BF16);
    tg_tensor *g_flat = tg_ones(TG_F64, TG_SHAPE(6));
    EXPECT_STATUS(tg_backward(y, g_shape, false), TG_ERR_SHAPE, "tg_backward", "[3, 2]", "[2, 3]");
    EXPECT_STATUS(tg_backward(y, g_flat, false), TG_ERR_SHAPE, "tg_backward");
    EXPECT_STATUS(tg_backward(y, g_dtype, false), TG_ERR_DTYPE, "tg_backward", "bf16", "f64");
    EXPECT_STATUS(tg_backward(y, NULL, false), TG_ERR_AUTOGRAD, "tg_backward", "[2, 3]");
    tg_tensor *g0 = tg_grad(x);
    cr_assert_null(g0, "a refused backward wrote .grad");
    /* the graph is intact: a right gradient still works */
    tg_tensor *good = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    cr_assert_eq(tg_backward(y, good, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 2, 4, 6, 8, 10, 12);
    TGO_RELEASE(x, y, g_shape, g_f32, g_dtype, g_flat, good);
}

/* A gradient of another dtype is converted to the root's, as PyTorch does
 * (found by the differential programs: an f64 gradient for an f32 root was
 * refused with TG_ERR_DTYPE). */
Test(errors_shape, backward_converts_a_gradient_of_another_dtype) {
    tg_tensor *x = leaf_rg(TG_F32, TG_SHAPE(3), 1);
    tg_tensor *y = tg_scale(x, 2);
    tg_tensor *g64 = TGO_MAKE(TG_F64, TG_SHAPE(3), 0.5, 1e-9, -2);
    tg_tensor *gi = TGO_MAKE(TG_I64, TG_SHAPE(3), 1, 2, 3);
    cr_assert_eq(tg_backward(y, g64, true), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(x);
    tgo_assert_shape(g, TG_F32, 1, (int64_t[]){3});
    tg_release(g);
    TGO_ASSERT_GRAD(x, 0, 1, (float)2e-9, -4);
    cr_assert_eq(tg_backward(y, gi, false), TG_OK);
    TGO_ASSERT_GRAD(x, 0, 3, (float)2e-9 + 4, 2);
    TGO_RELEASE(x, y, g64, gi);
}

Test(errors_shape, inplace_other_not_broadcastable_writes_nothing) {
    tg_tensor *t = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *o1 = tg_ones(TG_F64, TG_SHAPE(2)), *o2 = tg_ones(TG_F64, TG_SHAPE(4, 2, 3));
    tg_tensor *o3 = tg_ones(TG_F64, TG_SHAPE(2, 1, 3)); /* broadcasts the other way only */
    tgo_snap s = tgo_snapshot(t);
    tg_tensor *others[3] = {o1, o2, o3};
    for (int i = 0; i < 3; i++) {
        EXPECT_STATUS(tg_add_(t, others[i]), TG_ERR_SHAPE, "tg_add_", "[2, 3]");
        EXPECT_STATUS(tg_sub_(t, others[i]), TG_ERR_SHAPE, "tg_sub_");
        EXPECT_STATUS(tg_mul_(t, others[i]), TG_ERR_SHAPE, "tg_mul_");
        EXPECT_STATUS(tg_copy_(t, others[i]), TG_ERR_SHAPE, "tg_copy_");
    }
    tgo_assert_unchanged(&s);
    TGO_RELEASE(t, o1, o2, o3);
}

/* ---- dtype ---------------------------------------------------------------------------- */

/* The elementwise and in-place ops promote mixed dtypes (test_promotion.c);
 * matmul refuses them, and an in-place op refuses a result of a higher
 * category than the modified tensor's, as PyTorch. */
Test(errors_dtype, operands_of_different_float_dtypes) {
    tg_tensor *a = leaf_rg(TG_F32, TG_SHAPE(2, 2), 1), *b = leaf_rg(TG_F64, TG_SHAPE(2, 2), 2);
    tgo_snap sa = tgo_snapshot(a), sb = tgo_snapshot(b);
    EXPECT_NULL(tg_matmul(a, b), TG_ERR_DTYPE, "tg_matmul", "f32", "f64");
    tg_tensor *t = TGO_MAKE(TG_I64, TG_SHAPE(2, 2), 1, 2, 3, 4);
    tgo_snap st = tgo_snapshot(t);
    EXPECT_STATUS(tg_add_(t, b), TG_ERR_DTYPE, "tg_add_", "f64", "i64");
    EXPECT_STATUS(tg_mul_(t, b), TG_ERR_DTYPE, "tg_mul_", "can't be cast");
    EXPECT_STATUS(tg_scale_(t, 0.5), TG_ERR_DTYPE, "tg_scale_", "f32", "i64");
    tgo_assert_unchanged(&st);
    tgo_assert_unchanged(&sa);
    tgo_assert_unchanged(&sb);
    TGO_RELEASE(a, b, t);
}

Test(errors_dtype, integer_tensors_into_float_ops) {
    tg_tensor *i = TGO_MAKE(TG_I64, TG_SHAPE(2, 2), 1, 2, 3, 4);
    tg_tensor *f = leaf_rg(TG_F64, TG_SHAPE(2, 2), 1);
    tgo_snap si = tgo_snapshot(i);
    /* exp, log, sigmoid, ... of an i64 tensor are f32 and tg_neg, tg_scale by an
     * integer, tg_add, ... i64, as PyTorch (test_registry.c); what PyTorch refuses: */
    EXPECT_NULL(tg_silu(i), TG_ERR_DTYPE, "tg_silu", "i64");
    EXPECT_NULL(tg_gelu(i, TG_GELU_NONE), TG_ERR_DTYPE, "tg_gelu", "i64");
    EXPECT_NULL(tg_pow_scalar(i, -1), TG_ERR_VALUE, "tg_pow_scalar", "negative");
    EXPECT_NULL(tg_mean(i), TG_ERR_DTYPE, "tg_mean");
    EXPECT_NULL(tg_mean_dim(i, 0, true), TG_ERR_DTYPE, "tg_mean_dim");
    EXPECT_NULL(tg_softmax(i), TG_ERR_DTYPE, "tg_softmax");
    EXPECT_NULL(tg_log_softmax(i), TG_ERR_DTYPE, "tg_log_softmax");
    EXPECT_NULL(tg_matmul(i, i), TG_ERR_DTYPE, "tg_matmul");
    EXPECT_NULL(tg_gather(i, i), TG_ERR_DTYPE, "tg_gather");
    tg_tensor *bo = tg_gt_scalar(f, 0.0);
    EXPECT_STATUS(tg_add_(bo, i), TG_ERR_DTYPE, "tg_add_", "i64", "bool");
    EXPECT_STATUS(tg_sub_(bo, bo), TG_ERR_DTYPE, "tg_sub_", "bool");
    tg_release(bo);
    EXPECT_STATUS(tg_set_requires_grad(i, true), TG_ERR_DTYPE, "tg_set_requires_grad", "i64");
    cr_assert(!tg_requires_grad(i));
    tgo_assert_unchanged(&si);
    TGO_RELEASE(i, f);
}

Test(errors_dtype, gather_index_must_be_i64) {
    tg_tensor *t = leaf_rg(TG_F64, TG_SHAPE(2, 3), 1);
    tg_tensor *fi = TGO_MAKE(TG_F64, TG_SHAPE(2, 1), 0, 1), *f32i = TGO_MAKE(TG_F32, TG_SHAPE(2, 1), 0, 1);
    EXPECT_NULL(tg_gather(t, fi), TG_ERR_DTYPE, "tg_gather", "i64", "f64");
    EXPECT_NULL(tg_gather(t, f32i), TG_ERR_DTYPE, "tg_gather", "f32");
    TGO_RELEASE(t, fi, f32i);
}

Test(errors_dtype, invalid_dtype_values) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    EXPECT_NULL(tg_zeros((tg_dtype)7, TG_SHAPE(2)), TG_ERR_DTYPE, "tg_zeros", "7");
    EXPECT_NULL(tg_randn(TG_I64, TG_SHAPE(2), 1, 0, 1), TG_ERR_DTYPE, "tg_randn", "i64");
    EXPECT_NULL(tg_rand(TG_I64, TG_SHAPE(2), 1, 0, 1), TG_ERR_DTYPE, "tg_rand");
    EXPECT_NULL(tg_to_dtype(x, (tg_dtype)9), TG_ERR_DTYPE, "tg_to_dtype");
    double buf[2];
    EXPECT_STATUS(tg_copy_out(x, (tg_dtype)5, buf, sizeof buf), TG_ERR_DTYPE, "tg_copy_out");
    cr_assert_eq(tg_dtype_size((tg_dtype)5), 0);
    cr_assert_str_eq(tg_dtype_name((tg_dtype)5), "?");
    TGO_RELEASE(x);
}

/* ---- NULL arguments -------------------------------------------------------------------- */

Test(errors_null, tensor_api) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2, 3));
    tgo_snap sx = tgo_snapshot(x);
    tg_clear_error();
    cr_assert_null(tg_retain(NULL));
    cr_assert_eq(tg_release(NULL), TG_OK);
    cr_assert_str_eq(tg_name(NULL), "");
    cr_assert_eq(tg_last_status(), TG_OK, "NULL no-ops must not record an error");
    EXPECT_NULL(tg_set_name(NULL, "a"), TG_ERR_NULL, "tg_set_name");
    tg_clear_error();
    cr_assert_eq(tg_set_name(x, NULL), x, "a NULL name clears the label");
    cr_assert_str_eq(tg_name(x), "");
    cr_assert_eq(tg_last_status(), TG_OK);
    EXPECT_NULL(tg_zeros(TG_F64, 2, NULL), TG_ERR_NULL, "tg_zeros", "shape");
    EXPECT_NULL(tg_ones(TG_F64, 1, NULL), TG_ERR_NULL, "tg_ones");
    EXPECT_NULL(tg_empty(TG_F64, 1, NULL), TG_ERR_NULL, "tg_empty");
    EXPECT_NULL(tg_full(TG_F64, 1, NULL, 2.0), TG_ERR_NULL, "tg_full");
    EXPECT_NULL(tg_randn(TG_F64, 1, NULL, 1, 0, 1), TG_ERR_NULL, "tg_randn");
    EXPECT_NULL(tg_rand(TG_F64, 1, NULL, 1, 0, 1), TG_ERR_NULL, "tg_rand");
    EXPECT_NULL(tg_from_data(TG_F64, TG_SHAPE(2), NULL), TG_ERR_NULL, "tg_from_data", "data");
    tg_tensor *empty = tg_from_data(TG_F64, TG_SHAPE(0), NULL); /* allowed: nothing to copy */
    cr_assert_not_null(empty, "%s", tg_last_error());
    EXPECT_NULL(tg_slice(NULL, 0, 0, 1, 1), TG_ERR_NULL, "tg_slice");
    EXPECT_NULL(tg_view(NULL, TG_SHAPE(6)), TG_ERR_NULL, "tg_view");
    EXPECT_NULL(tg_view(x, 2, NULL), TG_ERR_NULL, "tg_view", "shape");
    EXPECT_NULL(tg_reshape(NULL, TG_SHAPE(6)), TG_ERR_NULL, "tg_reshape");
    EXPECT_NULL(tg_reshape(x, 2, NULL), TG_ERR_NULL, "tg_reshape");
    EXPECT_NULL(tg_transpose(NULL, 0, 1), TG_ERR_NULL, "tg_transpose");
    EXPECT_NULL(tg_expand(NULL, TG_SHAPE(2, 3)), TG_ERR_NULL, "tg_expand");
    EXPECT_NULL(tg_expand(x, 2, NULL), TG_ERR_NULL, "tg_expand");
    EXPECT_NULL(tg_contiguous(NULL), TG_ERR_NULL, "tg_contiguous");
    EXPECT_NULL(tg_clone(NULL), TG_ERR_NULL, "tg_clone");
    EXPECT_NULL(tg_to_dtype(NULL, TG_F32), TG_ERR_NULL, "tg_to_dtype");
    EXPECT_NULL(tg_detach(NULL), TG_ERR_NULL, "tg_detach");
    EXPECT_NULL(tg_grad(NULL), TG_ERR_NULL, "tg_grad");
    /* metadata queries */
    tg_clear_error();
    cr_assert_eq(tg_ndim(NULL), -1);
    cr_assert_eq(tg_numel(NULL), -1);
    cr_assert_null(tg_shape(NULL));
    cr_assert(!tg_is_contiguous(NULL));
    cr_assert_eq(tg_version(NULL), 0);
    cr_assert(!tg_same_storage(NULL, x) && !tg_same_storage(x, NULL));
    cr_assert_null(tg_data(NULL));
    cr_assert(!tg_requires_grad(NULL));
    cr_assert(!tg_is_leaf(NULL));
    cr_assert_null(tg_grad_fn_name(NULL));
    tg_clear_error();
    cr_assert_eq(tg_size(NULL, 0), -1);
    tgt_assert_error(TG_ERR_NULL, "tg_size", NULL);
    tg_clear_error();
    cr_assert_eq(tg_stride(NULL, 0), -1);
    tgt_assert_error(TG_ERR_NULL, "tg_stride", NULL);
    /* data out */
    double buf[6], v = 42;
    int64_t idx[2] = {0, 0};
    EXPECT_STATUS(tg_copy_out(NULL, TG_F64, buf, sizeof buf), TG_ERR_NULL, "tg_copy_out");
    EXPECT_STATUS(tg_copy_out(x, TG_F64, NULL, sizeof buf), TG_ERR_NULL, "tg_copy_out", "dst");
    EXPECT_STATUS(tg_item(NULL, &v), TG_ERR_NULL, "tg_item");
    tg_tensor *one = tg_ones(TG_F64, TG_SCALAR);
    EXPECT_STATUS(tg_item(one, NULL), TG_ERR_NULL, "tg_item", "out");
    EXPECT_STATUS(tg_get(NULL, idx, &v), TG_ERR_NULL, "tg_get");
    EXPECT_STATUS(tg_get(x, NULL, &v), TG_ERR_NULL, "tg_get", "idx");
    EXPECT_STATUS(tg_get(x, idx, NULL), TG_ERR_NULL, "tg_get", "out");
    cr_assert_eq(v, 42, "a failed call wrote its output");
    EXPECT_STATUS(tg_print(NULL, x, 4), TG_ERR_NULL, "tg_print");
    EXPECT_STATUS(tg_print(stderr, NULL, 4), TG_ERR_NULL, "tg_print");
    tgo_assert_unchanged(&sx);
    TGO_RELEASE(x, empty, one);
}

static tg_status noop_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                              tg_tensor **out, void *user) {
    (void)ctx, (void)n_in, (void)n_out, (void)user;
    out[0] = tg_clone(in[0]);
    return out[0] ? TG_OK : tg_last_status();
}
static tg_status noop_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                               tg_tensor **gin, void *user) {
    (void)ctx, (void)n_out, (void)n_in, (void)user;
    gin[0] = tg_retain(gout[0]);
    return TG_OK;
}
static tg_tensor *ident_fn(tg_tensor *const *in, void *user) {
    (void)user;
    return tg_clone(in[0]);
}

Test(errors_null, autograd_memory_gradcheck) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(2), 1);
    tgo_snap sx = tgo_snapshot(x);
    EXPECT_STATUS(tg_set_requires_grad(NULL, true), TG_ERR_NULL, "tg_set_requires_grad");
    EXPECT_STATUS(tg_zero_grad(NULL), TG_ERR_NULL, "tg_zero_grad");
    EXPECT_STATUS(tg_backward(NULL, NULL, false), TG_ERR_NULL, "tg_backward");
    tg_function fn = {"NoopBackward", noop_forward, noop_backward};
    tg_tensor *in[1] = {x}, *nul[1] = {NULL}, *out[1];
    EXPECT_STATUS(tg_function_apply(NULL, NULL, 1, in, 1, out), TG_ERR_NULL, "tg_function_apply",
                  "fn");
    EXPECT_STATUS(tg_function_apply(&fn, NULL, 1, in, 1, NULL), TG_ERR_NULL, "tg_function_apply",
                  "outputs");
    EXPECT_STATUS(tg_function_apply(&fn, NULL, 1, NULL, 1, out), TG_ERR_NULL, "tg_function_apply",
                  "inputs");
    EXPECT_STATUS(tg_function_apply(&fn, NULL, 1, nul, 1, out), TG_ERR_NULL, "tg_function_apply");
    cr_assert_null(out[0], "outputs must be NULL after a failed apply");
    tg_clear_error();
    cr_assert_eq(tg_ctx_save(NULL, x), -1);
    tgt_assert_error(TG_ERR_NULL, "tg_ctx_save", NULL);
    EXPECT_NULL(tg_ctx_saved(NULL, 0), TG_ERR_NULL, "tg_ctx_saved");
    EXPECT_STATUS(tg_ctx_set_state(NULL, &fn, 4), TG_ERR_NULL, "tg_ctx_set_state");
    tg_clear_error();
    cr_assert(!tg_ctx_needs_input_grad(NULL, 0));
    cr_assert(!tg_ctx_is_recording(NULL));
    cr_assert_null(tg_ctx_state(NULL));
    cr_assert_null(tg_scope_keep(NULL), "NULL passes through tg_scope_keep");
    EXPECT_STATUS(tg_mem_get(TG_CPU, NULL), TG_ERR_NULL, "tg_mem_get");
    EXPECT_STATUS(tg_gradcheck(NULL, NULL, 1, in, NULL), TG_ERR_NULL, "tg_gradcheck", "fn");
    EXPECT_STATUS(tg_gradcheck(ident_fn, NULL, 1, NULL, NULL), TG_ERR_NULL, "tg_gradcheck",
                  "inputs");
    EXPECT_STATUS(tg_gradcheck(ident_fn, NULL, 1, nul, NULL), TG_ERR_NULL, "tg_gradcheck");
    tgo_assert_unchanged(&sx);
    TGO_RELEASE(x);
}

Test(errors_null, propagation_keeps_the_first_error) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(3), 1);
    tg_clear_error();
    tg_tensor *r = tg_add(tg_exp(NULL), x);
    cr_assert_null(r);
    tgt_assert_error(TG_ERR_NULL, "tg_exp", NULL);
    cr_assert_null(strstr(tg_last_error(), "tg_add"), "the first error was overwritten: %s",
                   tg_last_error());
    /* a deeper expression whose first failure is not a NULL: shapes that do not broadcast */
    tg_tensor *f = leaf_rg(TG_F64, TG_SHAPE(2), 2);
    tg_clear_error();
    int tok = tg_scope_begin();
    cr_assert_geq(tok, 1);
    tg_tensor *loss = tg_mean(tg_mul(tg_log(tg_add(f, x)), tg_softmax(x)));
    cr_assert_null(loss);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_SHAPE,
                 "tg_backward(NULL) must return the first error's status");
    cr_assert_eq(tg_set_requires_grad(loss, true), TG_ERR_SHAPE);
    cr_assert_null(tg_set_name(loss, "loss"));
    tgt_assert_error(TG_ERR_SHAPE, "tg_add", "[2]", "[3]", NULL);
    cr_assert_eq(tg_scope_end(tok), TG_OK); /* releases the softmax that succeeded */
    cr_assert_eq(tg_live().tensors, 2, "only x and f are left");
    cr_assert_eq(tg_live().nodes, 0);
    TGO_RELEASE(x, f);
}

/* ---- out-of-range dims, negative and invalid sizes, steps ------------------------------- */

Test(errors_value, dims_out_of_range) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(2, 3), 1);
    tgo_snap sx = tgo_snapshot(x);
    EXPECT_NULL(tg_sum_dim(x, 2, false), TG_ERR_DIM, "tg_sum_dim", "2");
    EXPECT_NULL(tg_sum_dim(x, -3, true), TG_ERR_DIM, "tg_sum_dim", "-3");
    EXPECT_NULL(tg_mean_dim(x, 5, false), TG_ERR_DIM, "tg_mean_dim");
    EXPECT_NULL(tg_slice(x, 2, 0, 1, 1), TG_ERR_DIM, "tg_slice");
    EXPECT_NULL(tg_slice(x, -3, 0, 1, 1), TG_ERR_DIM, "tg_slice");
    EXPECT_NULL(tg_transpose(x, 0, 2), TG_ERR_DIM, "tg_transpose");
    EXPECT_NULL(tg_transpose(x, -3, 1), TG_ERR_DIM, "tg_transpose");
    tg_tensor *s = tg_ones(TG_F64, TG_SCALAR);
    EXPECT_NULL(tg_slice(s, 0, 0, 1, 1), TG_ERR_DIM, "tg_slice", "0-d");
    tg_clear_error();
    cr_assert_eq(tg_size(x, 2), -1);
    tgt_assert_error(TG_ERR_DIM, "tg_size", NULL);
    tg_clear_error();
    cr_assert_eq(tg_size(x, -3), -1);
    tgt_assert_error(TG_ERR_DIM, "tg_size", NULL);
    cr_assert_eq(tg_size(x, -1), 3, "negative dims count from the end");
    tg_clear_error();
    cr_assert_eq(tg_stride(x, 7), -1);
    tgt_assert_error(TG_ERR_DIM, "tg_stride", NULL);
    double v = 42;
    EXPECT_STATUS(tg_get(x, (const int64_t[]){2, 0}, &v), TG_ERR_DIM, "tg_get");
    EXPECT_STATUS(tg_get(x, (const int64_t[]){0, -1}, &v), TG_ERR_DIM, "tg_get");
    cr_assert_eq(v, 42);
    tgo_assert_unchanged(&sx);
    TGO_RELEASE(x, s);
}

Test(errors_value, negative_sizes) {
    EXPECT_NULL(tg_zeros(TG_F32, TG_SHAPE(-1)), TG_ERR_VALUE, "tg_zeros", "negative", "-1");
    EXPECT_NULL(tg_ones(TG_F64, TG_SHAPE(2, -3)), TG_ERR_VALUE, "tg_ones", "negative");
    EXPECT_NULL(tg_empty(TG_F64, TG_SHAPE(-5)), TG_ERR_VALUE, "tg_empty");
    EXPECT_NULL(tg_full(TG_F64, TG_SHAPE(-5), 1.0), TG_ERR_VALUE, "tg_full");
    EXPECT_NULL(tg_randn(TG_F64, TG_SHAPE(-2), 1, 0, 1), TG_ERR_VALUE, "tg_randn");
    EXPECT_NULL(tg_rand(TG_F64, TG_SHAPE(3, -2), 1, 0, 1), TG_ERR_VALUE, "tg_rand");
    double d[4] = {0};
    EXPECT_NULL(tg_from_data(TG_F64, TG_SHAPE(-4), d), TG_ERR_VALUE, "tg_from_data");
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2, 3));
    tgo_snap sx = tgo_snapshot(x);
    EXPECT_NULL(tg_view(x, TG_SHAPE(-2, 3)), TG_ERR_VALUE, "tg_view", "negative", "-2");
    EXPECT_NULL(tg_reshape(x, TG_SHAPE(3, -2)), TG_ERR_VALUE, "tg_reshape", "negative");
    EXPECT_NULL(tg_view(x, TG_SHAPE(-1, -1)), TG_ERR_VALUE, "tg_view", "-1");
    EXPECT_NULL(tg_view(x, TG_SHAPE(4, 2)), TG_ERR_SHAPE, "tg_view", "[4, 2]");
    EXPECT_NULL(tg_view(x, TG_SHAPE(-1, 4)), TG_ERR_SHAPE, "tg_view");
    EXPECT_NULL(tg_reshape(x, TG_SHAPE(7)), TG_ERR_SHAPE, "tg_reshape");
    EXPECT_NULL(tg_expand(x, TG_SHAPE(-2, 2, 3)), TG_ERR_VALUE, "tg_expand");
    EXPECT_NULL(tg_expand(x, TG_SHAPE(2, 4)), TG_ERR_SHAPE, "tg_expand", "[2, 3]", "[2, 4]");
    EXPECT_NULL(tg_expand(x, TG_SHAPE(3)), TG_ERR_SHAPE, "tg_expand");
    EXPECT_NULL(tg_arange(TG_F64, 0, 5, 0), TG_ERR_VALUE, "tg_arange");
    EXPECT_NULL(tg_arange(TG_F64, 0, INFINITY, 1), TG_ERR_VALUE, "tg_arange");
    EXPECT_NULL(tg_arange(TG_F64, 0, 5, -1), TG_ERR_VALUE, "tg_arange", "opposite directions");
    EXPECT_NULL(tg_arange(TG_F64, 5, 0, 1), TG_ERR_VALUE, "tg_arange", "opposite directions");
    EXPECT_NULL(tg_full(TG_I64, TG_SHAPE(2), INFINITY), TG_ERR_VALUE, "tg_full");
    EXPECT_NULL(tg_randn(TG_F64, TG_SHAPE(2), 1, 0, -1), TG_ERR_VALUE, "tg_randn");
    EXPECT_NULL(tg_rand(TG_F64, TG_SHAPE(2), 1, 2, 1), TG_ERR_VALUE, "tg_rand");
    tgo_assert_unchanged(&sx);
    TGO_RELEASE(x);
}

Test(errors_value, more_than_8_dims) {
    const int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
    double d[2] = {1, 2};
    EXPECT_NULL(tg_zeros(TG_F64, 9, s9), TG_ERR_VALUE, "tg_zeros", "ndim 9");
    EXPECT_NULL(tg_ones(TG_F64, -1, s9), TG_ERR_VALUE, "tg_ones", "ndim -1");
    EXPECT_NULL(tg_from_data(TG_F64, 9, s9, d), TG_ERR_VALUE, "tg_from_data");
    EXPECT_NULL(tg_randn(TG_F64, 9, s9, 1, 0, 1), TG_ERR_VALUE, "tg_randn");
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    EXPECT_NULL(tg_view(x, 9, s9), TG_ERR_VALUE, "tg_view", "ndim 9");
    EXPECT_NULL(tg_reshape(x, 9, s9), TG_ERR_VALUE, "tg_reshape");
    EXPECT_NULL(tg_expand(x, 9, s9), TG_ERR_SHAPE, "tg_expand", "9");
    /* exactly 8 dims is fine */
    tg_tensor *y = tg_view(x, TG_SHAPE(1, 1, 1, 1, 1, 1, 1, 2));
    cr_assert_not_null(y, "%s", tg_last_error());
    cr_assert_eq(tg_ndim(y), 8);
    TGO_RELEASE(x, y);
}

Test(errors_value, slice_step_must_be_positive) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(4));
    EXPECT_NULL(tg_slice(x, 0, 0, 4, 0), TG_ERR_VALUE, "tg_slice", "step");
    EXPECT_NULL(tg_slice(x, 0, 4, 0, -1), TG_ERR_VALUE, "tg_slice", "-1");
    TGO_RELEASE(x);
}

Test(errors_value, view_of_non_contiguous_needs_reshape) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    tg_tensor *xt = tg_transpose(x, 0, 1);
    tg_tensor *xs = tg_slice(x, 1, 0, 3, 2); /* [2, 2], column stride 2 */
    EXPECT_NULL(tg_view(xt, TG_SHAPE(6)), TG_ERR_LAYOUT, "tg_view", "tg_reshape", "[3, 2]");
    EXPECT_NULL(tg_view(xs, TG_SHAPE(4)), TG_ERR_LAYOUT, "tg_view");
    tg_tensor *r = tg_reshape(xt, TG_SHAPE(6));
    cr_assert_not_null(r, "%s", tg_last_error());
    TGO_ASSERT_VALUES(r, 0, 0, 3, 1, 4, 2, 5);
    tg_tensor *r2 = tg_reshape(xs, TG_SHAPE(4));
    TGO_ASSERT_VALUES(r2, 0, 0, 2, 3, 5);
    TGO_RELEASE(x, xt, xs, r, r2);
}

Test(errors_value, gather_index_out_of_range_names_the_value) {
    tg_tensor *t = leaf_rg(TG_F64, TG_SHAPE(2, 4), 1);
    tg_tensor *hi = TGO_MAKE(TG_I64, TG_SHAPE(2, 2), 0, 1, 5, 2);
    tg_tensor *lo = TGO_MAKE(TG_I64, TG_SHAPE(2, 2), 0, -1, 1, 2);
    tgo_snap st = tgo_snapshot(t);
    EXPECT_NULL(tg_gather(t, hi), TG_ERR_VALUE, "tg_gather", "index 5", "[1, 0]", "4");
    EXPECT_NULL(tg_gather(t, lo), TG_ERR_VALUE, "tg_gather", "index -1", "[0, 1]");
    cr_assert_eq(tg_live().nodes, 0);
    tgo_assert_unchanged(&st);
    TGO_RELEASE(t, hi, lo);
}

/* As PyTorch: lo > hi gives hi everywhere (gradient 0), a NaN bound NaN
 * everywhere (it used to be refused with TG_ERR_VALUE). */
Test(errors_value, clamp_bounds_as_pytorch) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(4), -3, 0.5, 3, NAN);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *a = tg_clamp(x, 2, 1), *b = tg_clamp(x, NAN, 1), *c = tg_clamp(x, 0, NAN);
    TGO_ASSERT_VALUES(a, 0, 1, 1, 1, NAN);
    TGO_ASSERT_VALUES(b, 0, NAN, NAN, NAN, NAN);
    TGO_ASSERT_VALUES(c, 0, NAN, NAN, NAN, NAN);
    tg_tensor *s = tg_sum(a);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 0, 0, 0, 0);
    TGO_RELEASE(x, a, b, c, s);
}

Test(errors_value, copy_out_buffer_too_small_writes_nothing) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2, 3));
    double buf[6];
    for (int i = 0; i < 6; i++) buf[i] = -7;
    EXPECT_STATUS(tg_copy_out(x, TG_F64, buf, 5 * sizeof(double)), TG_ERR_VALUE, "tg_copy_out",
                  "48");
    EXPECT_STATUS(tg_copy_out(x, TG_F32, buf, 23), TG_ERR_VALUE, "tg_copy_out", "24");
    for (int i = 0; i < 6; i++) cr_assert_eq(buf[i], -7, "element %d written", i);
    cr_assert_eq(tg_copy_out(x, TG_F32, buf, 24), TG_OK, "exactly enough is enough");
    TGO_RELEASE(x);
}

Test(errors_value, item_of_a_non_scalar) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    tg_tensor *e = tg_ones(TG_F64, TG_SHAPE(0));
    double v = 42;
    EXPECT_STATUS(tg_item(x, &v), TG_ERR_SHAPE, "tg_item", "[2]");
    EXPECT_STATUS(tg_item(e, &v), TG_ERR_SHAPE, "tg_item", "0");
    cr_assert_eq(v, 42, "tg_item wrote on failure");
    tg_tensor *one = tg_full(TG_F64, TG_SHAPE(1, 1), 3.5);
    cr_assert_eq(tg_item(one, &v), TG_OK);
    cr_assert_eq(v, 3.5);
    TGO_RELEASE(x, e, one);
}

Test(errors_value, gradcheck_refuses_bad_inputs_and_leaves_them_alone) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(3, 1), 1);
    tg_tensor *e = tg_expand(x, TG_SHAPE(3, 4)); /* overlapping, and not a leaf */
    tg_tensor *d = tg_detach(e);                 /* a leaf with stride 0 */
    cr_assert_eq(tg_set_requires_grad(d, true), TG_OK);
    tg_tensor *in_e[1] = {e}, *in_d[1] = {d}, *in_x[1] = {x};
    tgo_snap sx = tgo_snapshot(x);
    EXPECT_STATUS(tg_gradcheck(ident_fn, NULL, 1, in_d, NULL), TG_ERR_LAYOUT, "tg_gradcheck",
                  "expand");
    EXPECT_STATUS(tg_gradcheck(ident_fn, NULL, 1, in_e, NULL), TG_ERR_VALUE, "tg_gradcheck",
                  "leaf");
    EXPECT_STATUS(tg_gradcheck(ident_fn, NULL, 0, in_x, NULL), TG_ERR_VALUE, "tg_gradcheck");
    EXPECT_STATUS(tg_gradcheck(ident_fn, NULL, 17, in_x, NULL), TG_ERR_VALUE, "tg_gradcheck");
    tgo_assert_unchanged(&sx);
    tg_tensor *g = tg_grad(x);
    cr_assert_null(g);
    TGO_RELEASE(x, e, d);
}

/* What a bad fn does, by the int at user: 0 fails with its own error, 1
 * returns NULL and sets none, 2 returns an i64 tensor, 3 changes its element
 * count after the first call, 4 returns a view of 2^60 elements, 5 sums (a
 * good fn), 6 returns a result outside the graph. */
static tg_tensor *bad_gc_fn(tg_tensor *const *in, void *user) {
    int *kind = user;
    static int calls;
    switch (kind[0]) {
    case 0: {
        tg_tensor *z = tg_zeros(TG_F64, TG_SHAPE(5)), *r = tg_add(in[0], z);
        tg_release(z);
        return r;
    }
    case 1: return NULL;
    case 2: return tg_to_dtype(in[0], TG_I64);
    case 3: return calls++ ? tg_sum(in[0]) : tg_clone(in[0]);
    case 4: {
        tg_tensor *s = tg_sum(in[0]);
        tg_tensor *v = tg_expand(s, TG_SHAPE((int64_t)1 << 30, (int64_t)1 << 30));
        tg_release(s);
        return v;
    }
    case 6: { /* no graph: the analytical Jacobian is 0, the numerical one is not */
        tg_tensor *s = tg_scale(in[0], 2.0), *d = tg_detach(s);
        tg_release(s);
        return d;
    }
    default: return tg_sum(in[0]);
    }
}

/* Every refusal of a bad fn (its own error kept; a NULL without one; a
 * result that is not float, that changes its size, whose Jacobian is too
 * large, that is outside the graph) and of an input that requires grad but
 * is not f32/f64: each leaves
 * the inputs' values and their .grad as they were, and so does a success. */
Test(errors_value, gradcheck_refuses_bad_fns_and_keeps_the_grads) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(4), 1);
    tg_tensor *g0 = tg_full(TG_F64, TG_SHAPE(4), 7.0);
    tg_tensor *m0 = tg_mul(x, g0), *s0 = tg_sum(m0); /* .grad = g0 */
    cr_assert_eq(tg_backward(s0, NULL, false), TG_OK);
    tgo_snap sx = tgo_snapshot(x);
    tg_tensor *in[1] = {x};
    int kind = 0;
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, in, NULL), TG_ERR_SHAPE, "tg_add");
    kind = 1;
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, in, NULL), TG_ERR_NULL, "tg_gradcheck",
                  "fn returned NULL without an error");
    kind = 2;
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, in, NULL), TG_ERR_DTYPE, "tg_gradcheck",
                  "fn returned a i64 tensor");
    kind = 3;
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, in, NULL), TG_ERR_SHAPE, "tg_gradcheck",
                  "fn returned 4 elements, then 1");
    kind = 4;
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, in, NULL), TG_ERR_SHAPE, "tg_gradcheck",
                  "too large");
    kind = 6;
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, in, NULL), TG_ERR_GRADCHECK, "tg_gradcheck",
                  "input 0", "analytical 0 ");
    kind = 5;
    tg_gradcheck_opts o = {1e-6, 1e-5, 1e-3};
    cr_assert_eq(tg_gradcheck(bad_gc_fn, &kind, 1, in, &o), TG_OK, "%s", tg_last_error());
    tgo_assert_unchanged(&sx);
    tg_tensor *g = tg_grad(x);
    cr_assert(g && tgt_at(g, 0) == 7.0 && tgt_at(g, 3) == 7.0, "the caller's .grad is kept");
    tg_tensor *b = tg_to_dtype(x, TG_BF16), *bl = tg_detach(b);
    cr_assert_eq(tg_set_requires_grad(bl, true), TG_OK);
    tg_tensor *inb[1] = {bl};
    EXPECT_STATUS(tg_gradcheck(bad_gc_fn, &kind, 1, inb, NULL), TG_ERR_DTYPE, "tg_gradcheck",
                  "input 0 is bf16");
    TGO_RELEASE(x, g0, m0, s0, g, b, bl);
}

/* ---- scopes ------------------------------------------------------------------------------- */

Test(errors_state, release_of_a_scope_owned_tensor) {
    int tok = tg_scope_begin();
    cr_assert_geq(tok, 1);
    tg_tensor *t = tg_ones(TG_F64, TG_SHAPE(2));
    tg_set_name(t, "owned");
    EXPECT_STATUS(tg_release(t), TG_ERR_STATE, "tg_release", "scope", "owned");
    cr_assert_eq(tg_numel(t), 2, "the tensor must still be alive");
    /* a reference of the caller's own is given back after the scope ends (inside
     * it, which reference is given back cannot be told apart) */
    cr_assert_eq(tg_retain(t), t);
    EXPECT_STATUS(tg_release(t), TG_ERR_STATE, "tg_release", "scope");
    cr_assert_eq(tg_live().tensors, 1);
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    cr_assert_eq(tg_live().tensors, 1, "the caller's reference keeps it");
    cr_assert_eq(tg_release(t), TG_OK);
}

/* tg_contiguous of a contiguous tensor returns the same handle, owned twice by
 * the scope. After tg_scope_keep takes one reference out, the scope still owns
 * the other: a tg_release of the second name must be refused, else the scope
 * frees the kept tensor at tg_scope_end (found by fuzz_ops: use after free). */
Test(errors_state, release_of_a_same_handle_result_after_scope_keep) {
    tg_tensor *x = tg_full(TG_F64, TG_SHAPE(3), 0.5);
    tg_set_requires_grad(x, true);
    int tok = tg_scope_begin();
    tg_tensor *e = tg_exp(x);
    tg_tensor *c = tg_contiguous(e);
    cr_assert_eq(c, e, "a contiguous tensor's own handle");
    cr_assert_eq(tg_scope_keep(e), e);
    EXPECT_STATUS(tg_release(c), TG_ERR_STATE, "tg_release", "scope");
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    cr_assert_eq(tg_live().tensors, 2, "x and the kept exp(x)");
    tg_tensor *s = tg_sum(e); /* still usable */
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *gx = tg_grad(x);
    cr_assert_float_eq(((double *)tg_data(gx))[0], exp(0.5), 1e-12);
    tg_release(gx);
    tg_release(s);
    tg_release(e);
    tg_release(x);
}

/* A tensor the library also holds (a leaf's .grad) must not lose the scope's
 * reference to a tg_release inside the scope. */
Test(errors_state, release_inside_a_scope_cannot_take_the_scopes_reference) {
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3), 1, 0, 1);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_sum(x);
    cr_assert_eq(tg_backward(y, NULL, false), TG_OK);
    int tok = tg_scope_begin();
    tg_tensor *g = tg_grad(x);
    EXPECT_STATUS(tg_release(g), TG_ERR_STATE, "tg_release", "scope");
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    tg_tensor *g2 = tg_grad(x); /* still x's, still alive */
    cr_assert_eq(g2, g);
    TGO_ASSERT_VALUES(g2, 0, 1, 1, 1);
    tg_release(g2);
    tg_release(y);
    tg_release(x);
}

Test(errors_state, scope_end_with_a_wrong_token_releases_nothing) {
    EXPECT_STATUS(tg_scope_end(1), TG_ERR_STATE, "tg_scope_end"); /* none open */
    int outer = tg_scope_begin();
    tg_tensor *a = tg_ones(TG_F64, TG_SHAPE(2));
    int inner = tg_scope_begin();
    cr_assert_eq(inner, outer + 1);
    tg_tensor *b = tg_scale(a, 2);
    EXPECT_STATUS(tg_scope_end(outer), TG_ERR_STATE, "tg_scope_end", "token");
    EXPECT_STATUS(tg_scope_end(inner + 1), TG_ERR_STATE, "tg_scope_end");
    EXPECT_STATUS(tg_scope_end(0), TG_ERR_STATE, "tg_scope_end");
    cr_assert_eq(tg_live().tensors, 2, "a refused scope_end released something");
    TGO_ASSERT_VALUES(b, 0, 2, 2);
    cr_assert_eq(tg_scope_end(inner), TG_OK);
    cr_assert_eq(tg_live().tensors, 1);
    cr_assert_eq(tg_scope_end(outer), TG_OK);
}

Test(errors_state, scope_keep_of_a_tensor_not_in_the_innermost_scope) {
    tg_tensor *before = tg_ones(TG_F64, TG_SHAPE(2));
    EXPECT_NULL(tg_scope_keep(before), TG_ERR_STATE, "tg_scope_keep"); /* no scope open */
    int outer = tg_scope_begin();
    EXPECT_NULL(tg_scope_keep(before), TG_ERR_STATE, "tg_scope_keep");
    tg_tensor *mid = tg_ones(TG_F64, TG_SHAPE(3));
    int inner = tg_scope_begin();
    EXPECT_NULL(tg_scope_keep(mid), TG_ERR_STATE, "tg_scope_keep", "innermost");
    tg_tensor *kept = tg_scope_keep(tg_zeros(TG_F64, TG_SHAPE(4)));
    cr_assert_not_null(kept, "%s", tg_last_error());
    cr_assert_eq(tg_scope_end(inner), TG_OK);
    cr_assert_eq(tg_numel(kept), 4, "kept moves to the enclosing scope");
    cr_assert_eq(tg_scope_end(outer), TG_OK);
    cr_assert_eq(tg_live().tensors, 1, "outer scope releases mid and kept");
    TGO_RELEASE(before);
}

/* ---- custom functions ------------------------------------------------------------------- */

static tg_status failing_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                                 tg_tensor **out, void *user) {
    (void)n_in, (void)n_out;
    int mode = *(const int *)user;
    out[0] = tg_exp(in[0]); /* made, then the forward fails: the library releases it */
    if (tg_ctx_save(ctx, in[0]) < 0 || tg_ctx_save(ctx, out[0]) < 0) return tg_last_status();
    switch (mode) {
    case 0: return tg_ctx_fail(ctx, TG_ERR_VALUE, "row %d is not normalised", 3);
    case 1: return TG_ERR_IO; /* no message of its own */
    case 2: /* OK, but the output slot left NULL */
        tg_release(out[0]);
        out[0] = NULL;
        return TG_OK;
    case 3: /* returns its input as output */
        tg_release(out[0]);
        out[0] = tg_retain(in[0]);
        return TG_OK;
    }
    return TG_OK;
}

Test(errors_state, function_apply_bad_arguments_and_failing_forward) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(3), 1);
    tg_set_name(x, "logits");
    tg_tensor *in[1] = {x};
    tg_tensor *out[2];
    tgo_snap sx = tgo_snapshot(x);
    int mode = 0;
    tg_function fn = {"FailingBackward", failing_forward, noop_backward};
    tg_function no_fwd = {"F", NULL, noop_backward}, no_bwd = {"F", failing_forward, NULL};
    EXPECT_STATUS(tg_function_apply(&fn, &mode, 1, in, 0, out), TG_ERR_VALUE, "tg_function_apply",
                  "FailingBackward");
    EXPECT_STATUS(tg_function_apply(&fn, &mode, 1, in, 17, out), TG_ERR_VALUE, "tg_function_apply");
    EXPECT_STATUS(tg_function_apply(&fn, &mode, -1, in, 1, out), TG_ERR_VALUE, "tg_function_apply");
    EXPECT_STATUS(tg_function_apply(&fn, &mode, 17, in, 1, out), TG_ERR_VALUE, "tg_function_apply");
    EXPECT_STATUS(tg_function_apply(&no_fwd, &mode, 1, in, 1, out), TG_ERR_NULL, "forward");
    EXPECT_STATUS(tg_function_apply(&no_bwd, &mode, 1, in, 1, out), TG_ERR_NULL, "backward");
    cr_assert_eq(tg_live().tensors, 1);
    /* the forward's own error (message kept), or its status with a message naming it */
    const tg_status want[4] = {TG_ERR_VALUE, TG_ERR_IO, TG_ERR_VALUE, TG_ERR_VALUE};
    const char *const says[4] = {"row 3 is not normalised", "FailingBackward", "NULL", "input"};
    for (mode = 0; mode < 4; mode++) {
        out[0] = out[1] = x; /* must be reset to NULL */
        EXPECT_STATUS(tg_function_apply(&fn, &mode, 1, in, 2, out), want[mode], says[mode]);
        cr_assert_null(out[0], "mode %d: outputs[0] not NULL after a failed forward", mode);
        cr_assert_null(out[1], "mode %d: outputs[1] not NULL after a failed forward", mode);
        tg_live_counts c = tg_live();
        cr_assert_eq(c.nodes, 0, "mode %d: a node was recorded", mode);
        cr_assert_eq(c.tensors, 1, "mode %d: %lld tensors alive", mode, (long long)c.tensors);
        cr_assert_eq(c.storages, 1, "mode %d: %lld storages alive", mode, (long long)c.storages);
        tg_mem_stats m;
        cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
        cr_assert_eq(m.saved, 0, "mode %d: saved bytes still counted", mode);
    }
    cr_assert(tg_is_grad_enabled(), "a failed forward must restore grad mode");
    tgo_assert_unchanged(&sx);
    TGO_RELEASE(x);
}

/* ---- autograd misuse -------------------------------------------------------------------- */

Test(errors_autograd, inplace_on_an_expand_view) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(3, 1), 1, 2, 3);
    tg_tensor *e = tg_expand(x, TG_SHAPE(3, 4));
    tg_tensor *o = tg_ones(TG_F64, TG_SHAPE(4));
    tgo_snap sx = tgo_snapshot(x);
    EXPECT_STATUS(tg_add_(e, o), TG_ERR_LAYOUT, "tg_add_", "overlapping");
    EXPECT_STATUS(tg_mul_(e, o), TG_ERR_LAYOUT, "tg_mul_");
    EXPECT_STATUS(tg_scale_(e, 2), TG_ERR_LAYOUT, "tg_scale_");
    EXPECT_STATUS(tg_copy_(e, o), TG_ERR_LAYOUT, "tg_copy_");
    TG_NO_GRAD {
        tg_clear_error();
        tg_status st = tg_sub_(e, o);
        cr_assert_eq(st, TG_ERR_LAYOUT, "refused under no-grad too");
    }
    tgt_assert_error(TG_ERR_LAYOUT, "tg_sub_", NULL);
    tgo_assert_unchanged(&sx);
    /* fill_ writes one value everywhere: overlap is harmless (as PyTorch), but a
     * recorded fill_ of overlapping elements is refused */
    cr_assert_eq(tg_fill_(e, 2), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(x, 0, 2, 2, 2);
    tg_tensor *xr = tg_ones(TG_F64, TG_SHAPE(3, 1));
    cr_assert_eq(tg_set_requires_grad(xr, true), TG_OK);
    tg_tensor *yr = tg_scale(xr, 1), *er = tg_expand(yr, TG_SHAPE(3, 4));
    EXPECT_STATUS(tg_fill_(er, 2), TG_ERR_LAYOUT, "tg_fill_", "overlapping");
    TGO_RELEASE(xr, yr, er);
    TGO_ASSERT_VALUES(x, 0, 2, 2, 2);
    /* a size-1 expand has no overlap and is allowed */
    tg_tensor *e1 = tg_expand(x, TG_SHAPE(1, 3, 1));
    cr_assert_eq(tg_scale_(e1, 2), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(x, 0, 4, 4, 4);
    TGO_RELEASE(x, e, o, e1);
}

Test(errors_autograd, backward_without_grad) {
    tg_tensor *x = TGO_MAKE(TG_F64, TG_SHAPE(3), 1, 2, 3);
    tg_set_name(x, "plain");
    tg_tensor *y = tg_sum(x);
    EXPECT_STATUS(tg_backward(y, NULL, false), TG_ERR_AUTOGRAD, "tg_backward", "require grad");
    EXPECT_STATUS(tg_backward(x, NULL, false), TG_ERR_AUTOGRAD, "tg_backward", "plain");
    tg_tensor *w = leaf_rg(TG_F64, TG_SHAPE(3), 1);
    tg_tensor *z = tg_mul(x, w);
    EXPECT_STATUS(tg_backward(z, NULL, false), TG_ERR_AUTOGRAD, "tg_backward", "one-element",
                  "[3]");
    tg_tensor *g = tg_grad(w);
    cr_assert_null(g, "a refused backward wrote .grad");
    tg_tensor *h = NULL;
    TG_NO_GRAD { h = tg_mul(x, w); }
    EXPECT_STATUS(tg_backward(h, NULL, false), TG_ERR_AUTOGRAD, "tg_backward");
    /* the graph of z is intact */
    tg_tensor *s = tg_sum(z);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(w, 0, 1, 2, 3);
    TGO_RELEASE(x, y, w, z, h, s);
}

Test(errors_autograd, requires_grad_on_a_non_leaf) {
    tg_tensor *x = leaf_rg(TG_F64, TG_SHAPE(3), 1);
    tg_tensor *y = tg_exp(x);
    EXPECT_STATUS(tg_set_requires_grad(y, false), TG_ERR_AUTOGRAD, "tg_set_requires_grad",
                  "leaf");
    cr_assert(tg_requires_grad(y));
    cr_assert_not_null(tg_grad_fn_name(y));
    TGO_RELEASE(x, y);
}

/* Inside callbacks the outer scopes are hidden: a function that returns its
 * input's own handle (tg_contiguous, tg_to_dtype, tg_reshape without a copy)
 * gives the callback a reference of its own, which it must give back, even
 * when a scope opened outside owns another reference to that tensor (a
 * regression: tg_release refused with TG_ERR_STATE, the input, its node and
 * the leaf behind it leaked, and tg_gradcheck returned TG_OK with the error
 * still pending). */
static tg_status same_handle_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                                 tg_tensor **out, void *user) {
    (void)ctx, (void)n_in, (void)n_out, (void)user;
    tg_tensor *c = tg_contiguous(in[0]), *d = tg_to_dtype(in[0], TG_F64);
    tg_tensor *r = tg_reshape(in[0], TG_SHAPE(3));
    cr_assert(c == in[0] && d == in[0], "no copy needed: the same handle");
    out[0] = tg_scale(r, 2);
    cr_assert_eq(tg_release(c), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_release(d), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_release(r), TG_OK, "%s", tg_last_error());
    return out[0] ? TG_OK : tg_last_status();
}
static tg_status same_handle_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                                 tg_tensor **gin, void *user) {
    (void)ctx, (void)n_out, (void)n_in, (void)user;
    tg_tensor *c = tg_contiguous(gout[0]);
    gin[0] = tg_scale(c, 2);
    tg_status st = tg_release(c);
    return st == TG_OK && gin[0] ? TG_OK : tg_last_status();
}
static const tg_function same_handle_fn = {"SameHandleBackward", same_handle_fwd,
                                           same_handle_bwd};

static tg_tensor *same_handle_gc(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *c = tg_contiguous(in[0]), *out = tg_exp(c);
    cr_assert_eq(tg_release(c), TG_OK, "%s", tg_last_error());
    return out;
}

Test(errors_state, callbacks_give_back_same_handle_references_under_an_outer_scope) {
    int tok = tg_scope_begin();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(3)), *out = NULL;
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_clear_error();
    cr_assert_eq(tg_function_apply(&same_handle_fn, NULL, 1, &x, 1, &out), TG_OK, "%s",
                 tg_last_error());
    tg_tensor *s = tg_sum(out);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(x); /* the scope's */
    TGO_ASSERT_VALUES(g, 0, 2, 2, 2);
    tg_clear_error();
    cr_assert_eq(tg_gradcheck(same_handle_gc, NULL, 1, &x, NULL), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_last_status(), TG_OK, "an error was left pending: %s", tg_last_error());
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    tgt_assert_nothing_live();
}
