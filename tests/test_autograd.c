/* tests/test_autograd.c - the tape: version counters and the in-place error,
 * grad mode, backward/retain_graph, leaves, the deep chain, custom functions,
 * scopes. */
#include <pthread.h>

#include "tg_test_util.h"

TestSuite(autograd, .init = tgt_setup, .fini = tgt_teardown);

static tg_tensor *leaf(int64_t n, uint64_t seed) {
    tg_tensor *t = tg_randn(TG_F64, TG_SHAPE(n), seed, 0.0, 1.0);
    cr_assert_not_null(t);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    return t;
}

Test(autograd, saved_then_modified_in_place_fails_and_names_the_op) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *w = tg_set_name(leaf(4, 1), "w");
    tg_tensor *a = tg_set_name(tg_ones(TG_F64, TG_SHAPE(4)), "a");
    tg_tensor *y = tg_mul(a, w); /* MulBackward saves a (to compute dw) */
    tg_tensor *loss = tg_sum(y);
    tg_tensor *one = tg_ones(TG_F64, TG_SHAPE(4));
    cr_assert_eq(tg_version(a), 0);
    cr_assert_eq(tg_sub_(a, one), TG_OK); /* a does not require grad: allowed */
    cr_assert_eq(tg_version(a), 1);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "modified by an in-place operation", "[f64 [4]]",
                     "tensor 'a'", "MulBackward", "is at version 1; expected version 0",
                     "sub_ at ", "test_autograd.c:", "created at", "(tg_sub instead of tg_sub_)",
                     NULL);
    /* nothing changed on failure */
    cr_assert_null(tg_grad(w));
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, modify_then_restore_still_fails) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *w = leaf(3, 2);
    tg_tensor *a = tg_set_name(TGT_F64(TG_SHAPE(3), 1, -2, 3), "logits");
    tg_tensor *loss = tg_sum(tg_mul(a, w));
    tg_tensor *before = tg_clone(a);
    tg_tensor *m = tg_full(TG_F64, TG_SHAPE(1), 5.0);
    cr_assert_eq(tg_sub_(a, m), TG_OK);
    cr_assert_eq(tg_add_(a, m), TG_OK); /* values restored... */
    tg_tensor *diff = tg_sum(tg_sub(a, before));
    double d;
    tg_item(diff, &d);
    cr_assert_eq(d, 0.0);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE); /* ...the version is not */
    tgt_assert_error(TG_ERR_INPLACE, "'logits'", "is at version 2; expected version 0", "sub_",
                     "add_", "(version 0 -> 1)", "(version 1 -> 2)",
                     "(tg_sub instead of tg_sub_, tg_add instead of tg_add_)", NULL);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, write_through_a_view_of_a_saved_tensor_fails) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *w = leaf(6, 3);
    tg_tensor *base = tg_set_name(tg_randn(TG_F64, TG_SHAPE(2, 3), 5, 0, 1), "base");
    tg_tensor *flat = tg_view(base, TG_SHAPE(6));
    tg_tensor *y = tg_mul(flat, w); /* saves the view's storage = base's storage */
    tg_tensor *loss = tg_sum(y);
    tg_tensor *row = tg_slice(base, 0, 1, 2, 1);
    cr_assert(tg_same_storage(row, base));
    cr_assert_eq(tg_fill_(row, 0.0), TG_OK);
    cr_assert_eq(tg_version(flat), 1, "views share the counter");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "fill_", "(tg_full instead of tg_fill_)", NULL);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

/* The hint names the op that was used (it always said "tg_sub instead of
 * tg_sub_"), once per op, and a write marked by tg_mark_modified by its mark;
 * an unnamed tensor is "tensor #id" in every message, as in the leak
 * reports (messages used to print '' for it). */
Test(autograd, inplace_hint_names_the_ops_used_and_unnamed_tensors_have_ids) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *w = leaf(3, 4);
    tg_tensor *a = tg_randn(TG_F64, TG_SHAPE(3), 9, 0, 1); /* unnamed */
    tg_tensor *loss = tg_sum(tg_mul(a, w));
    cr_assert_eq(tg_mul_(a, a), TG_OK);
    cr_assert_eq(tg_scale_(a, 2), TG_OK);
    cr_assert_eq(tg_mul_(a, a), TG_OK);
    cr_assert_eq(tg_mark_modified(a, "my_kernel"), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "[f64 [3]] tensor #",
                     "(tg_mul instead of tg_mul_, tg_scale instead of tg_scale_, the write "
                     "marked 'my_kernel' into a new tensor)", NULL);
    cr_assert_null(strstr(tg_last_error(), "tg_sub"));
    cr_assert_null(strstr(tg_last_error(), "''"));
    /* the other messages that name a tensor follow the same rule */
    tg_tensor *c = tg_ones(TG_F64, TG_SHAPE(2));
    tg_clear_error();
    cr_assert_eq(tg_backward(c, NULL, false), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "tg_backward: tensor #", NULL);
    cr_assert_null(strstr(tg_last_error(), "''"));
    tg_set_name(c, "c");
    cr_assert_eq(tg_backward(c, NULL, false), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "tg_backward: tensor 'c' does not require grad", NULL);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, detach_shares_the_version_counter) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *w = leaf(3, 4);
    tg_tensor *a = tg_randn(TG_F64, TG_SHAPE(3), 9, 0, 1);
    tg_tensor *loss = tg_sum(tg_mul(a, w));
    tg_tensor *d = tg_detach(a);
    cr_assert(tg_same_storage(a, d));
    cr_assert_not(tg_requires_grad(d));
    cr_assert_eq(tg_scale_(d, 2.0), TG_OK);
    cr_assert_eq(tg_version(a), 1);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "scale_", NULL);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, saved_output_modified_in_place_through_the_graph) {
    int tgt_sc = tg_scope_begin();
    /* exp saves its output; an in-place op recorded on that output must
     * invalidate it, as in PyTorch (y = x.exp(); y.add_(1)). */
    tg_tensor *x = tg_set_name(leaf(3, 5), "x");
    tg_tensor *y = tg_set_name(tg_exp(x), "y");
    tg_tensor *one = tg_ones(TG_F64, TG_SHAPE(3));
    cr_assert_eq(tg_add_(y, one), TG_OK);
    cr_assert_str_eq(tg_grad_fn_name(y), "AddBackward");
    tg_tensor *loss = tg_sum(y);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "output 0 of ExpBackward", "add_", NULL);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, no_grad_records_and_saves_nothing) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = leaf(1000, 6);
    tg_tensor *y = NULL;
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CPU, &m0);
    TG_NO_GRAD { y = tg_sum(tg_mul(tg_exp(x), x)); }
    cr_assert(tg_is_grad_enabled(), "mode restored after the block");
    tg_mem_get(TG_CPU, &m1);
    cr_assert_eq(m1.saved, 0);
    cr_assert_eq(m1.saved_peak, m0.saved_peak);
    cr_assert_not(tg_requires_grad(y));
    cr_assert_null(tg_grad_fn_name(y));
    cr_assert_eq(tg_live().nodes, 0);
    /* with grad on, the same expression records nodes and saves tensors */
    cr_assert_not_null(tg_sum(tg_mul(tg_exp(x), x)));
    tg_mem_get(TG_CPU, &m1);
    cr_assert_gt(tg_live().nodes, 0);
    cr_assert_eq(m1.saved, 2 * 1000 * sizeof(double), "exp's output and x, each once");
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, inputs_without_grad_record_nothing) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *a = tg_ones(TG_F64, TG_SHAPE(4));
    tg_tensor *y = tg_exp(a);
    cr_assert_null(tg_grad_fn_name(y));
    cr_assert_eq(tg_live().nodes, 0);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

static void *thread_grad_mode(void *arg) {
    (void)arg;
    bool *out = malloc(sizeof *out);
    *out = tg_is_grad_enabled();
    return out;
}

Test(autograd, grad_mode_is_per_thread) {
    int tgt_sc = tg_scope_begin();
    cr_assert(tg_set_grad_enabled(false));
    pthread_t th;
    void *res;
    pthread_create(&th, NULL, thread_grad_mode, NULL);
    pthread_join(th, &res);
    cr_assert(*(bool *)res, "a new thread starts with grad on");
    free(res);
    cr_assert_not(tg_set_grad_enabled(true));
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, backward_twice_fails_without_retain_graph) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = leaf(3, 8);
    tg_tensor *loss = tg_sum(tg_mul(x, x));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
    tg_tensor *g1 = tg_grad(x);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_FREED);
    tgt_assert_error(TG_ERR_FREED, "second time", "retain_graph", "MulBackward", NULL);
    tg_tensor *g2 = tg_grad(x);
    tgt_assert_values(g2, (double[]){tgt_at(g1, 0), tgt_at(g1, 1), tgt_at(g1, 2)}, 3, 0);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, retain_graph_accumulates) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = tgt_f64(TG_SHAPE(3), (double[]){1, 2, 3});
    tg_set_requires_grad(x, true);
    tg_tensor *loss = tg_sum(tg_mul(x, x));
    tg_mem_stats m;
    cr_assert_eq(tg_backward(loss, NULL, true), TG_OK);
    tg_mem_get(TG_CPU, &m);
    cr_assert_gt(m.saved, 0, "retained graph keeps its saved tensors");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
    tg_tensor *g = tg_grad(x);
    tgt_assert_values(g, (double[]){4, 8, 12}, 3, 0);
    tg_mem_get(TG_CPU, &m);
    cr_assert_eq(m.saved, 0, "freed by the last backward");
    cr_assert_eq(tg_zero_grad(x), TG_OK);
    tg_tensor *none = tg_grad(x);
    cr_assert_null(none);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, upstream_gradient_and_shared_inputs) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = tgt_f64(TG_SHAPE(2), (double[]){3, -1});
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_add(tg_mul(x, x), x); /* dy/dx = 2x + 1 */
    tg_tensor *g = tgt_f64(TG_SHAPE(2), (double[]){1, 10});
    cr_assert_eq(tg_backward(y, g, false), TG_OK);
    tg_tensor *gx = tg_grad(x);
    tgt_assert_values(gx, (double[]){7, -10}, 2, 1e-15);
    tgt_assert_values(g, (double[]){1, 10}, 2, 0); /* upstream gradient untouched */
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, backward_on_a_leaf) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = tgt_f64(TG_SCALAR, (double[]){2});
    tg_set_requires_grad(x, true);
    cr_assert_eq(tg_backward(x, NULL, false), TG_OK);
    tg_tensor *g = tg_grad(x);
    tgt_assert_values(g, (double[]){1}, 1, 0);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, deep_chain_of_200000_nodes) {
    /* no scope here: each link is released as soon as the next one holds it */
    const int n = 200000;
    tg_tensor *x = tgt_f64(TG_SHAPE(1), (double[]){1});
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_retain(x);
    for (int i = 0; i < n; i++) {
        tg_tensor *next = tg_add_scalar(y, 1.0);
        cr_assert_not_null(next);
        tg_release(y);
        y = next;
    }
    cr_assert_eq(tg_live().nodes, n);
    cr_assert_eq(tg_backward(y, NULL, false), TG_OK);
    tg_tensor *g = tg_grad(x);
    tgt_assert_values(g, (double[]){1}, 1, 0);
    tgt_assert_values(y, (double[]){n + 1.0}, 1, 0);
    tg_release(g);
    tg_release(y); /* frees the whole chain without recursion */
    cr_assert_eq(tg_live().nodes, 0);
    tg_release(x);
}

Test(autograd, requires_grad_rules) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *i = tg_zeros(TG_I64, TG_SHAPE(2));
    cr_assert_eq(tg_set_requires_grad(i, true), TG_ERR_DTYPE);
    tg_tensor *x = leaf(2, 10);
    tg_tensor *y = tg_exp(x);
    cr_assert(tg_is_leaf(x));
    cr_assert_not(tg_is_leaf(y));
    cr_assert_eq(tg_set_requires_grad(y, false), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "not a leaf", "ExpBackward", NULL);
    cr_assert_eq(tg_add_(x, x), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "leaf tensor that requires grad", "add_", NULL);
    uint64_t v = tg_version(x);
    TG_NO_GRAD { cr_assert_eq(tg_scale_(x, 0.5), TG_OK); } /* optimizer-style update */
    cr_assert_eq(tg_version(x), v + 1);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

/* ---- custom functions ------------------------------------------------------ */

/* y = x^3 with a hand-written backward 3x^2 * g; saves x. */
static tg_status cube_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                          tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    tg_tensor *sq = tg_mul(in[0], in[0]);
    out[0] = tg_mul(sq, in[0]);
    tg_release(sq);
    if (!out[0]) return tg_last_status();
    cr_assert_not(tg_requires_grad(out[0]), "forward runs with grad off");
    return tg_ctx_save(ctx, in[0]) >= 0 ? TG_OK : tg_last_status();
}

static tg_status cube_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                          tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    tg_tensor *x = tg_ctx_saved(ctx, 0);
    if (!x) return tg_last_status();
    tg_tensor *x2 = tg_mul(x, x);
    tg_tensor *d = tg_scale(x2, 3.0);
    gin[0] = tg_mul(d, gout[0]);
    tg_release(d);
    tg_release(x2);
    tg_release(x);
    return gin[0] ? TG_OK : tg_last_status();
}

static const tg_function cube_fn = {"CubeBackward", cube_fwd, cube_bwd};

static tg_tensor *cube_loss(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *y = NULL;
    if (tg_function_apply(&cube_fn, NULL, 1, in, 1, &y) != TG_OK) return NULL;
    return y;
}

Test(autograd, custom_function_gradient_and_name) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = leaf(5, 11);
    cr_assert_eq(tg_gradcheck(cube_loss, NULL, 1, &x, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *y = cube_loss(&x, NULL);
    cr_assert_str_eq(tg_grad_fn_name(y), "CubeBackward");
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, custom_function_saved_tensor_is_version_checked) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = leaf(3, 12);
    tg_tensor *y = cube_loss(&x, NULL);
    tg_tensor *loss = tg_sum(y);
    TG_NO_GRAD { tg_fill_(x, 1.0); }
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "CubeBackward", "fill_", "leaf tensor that requires grad",
                     NULL);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

/* Saves its own output: must not create a cycle (checked by the fixture). */
static tg_status exp_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                         tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    out[0] = tg_exp(in[0]);
    if (!out[0]) return tg_last_status();
    return tg_ctx_save(ctx, out[0]) >= 0 ? TG_OK : tg_last_status();
}
static tg_status exp_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                         tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    tg_tensor *y = tg_ctx_saved(ctx, 0);
    gin[0] = tg_mul(y, gout[0]);
    tg_release(y);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg_function myexp_fn = {"MyExpBackward", exp_fwd, exp_bwd};

Test(autograd, custom_function_saving_its_output_makes_no_cycle) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = leaf(4, 13);
    tg_tensor *y = NULL;
    cr_assert_eq(tg_function_apply(&myexp_fn, NULL, 1, &x, 1, &y), TG_OK);
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    cr_assert_eq(m.saved, 4 * sizeof(double));
    tg_release(tg_scope_keep(y)); /* output gone -> node gone -> saved storage gone */
    cr_assert_eq(tg_live().nodes, 0);
    tg_mem_get(TG_CPU, &m);
    cr_assert_eq(m.saved, 0);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, custom_function_without_grad_saves_nothing) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(4));
    tg_tensor *y = NULL;
    cr_assert_eq(tg_function_apply(&myexp_fn, NULL, 1, &x, 1, &y), TG_OK);
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    cr_assert_eq(m.saved, 0);
    cr_assert_null(tg_grad_fn_name(y));
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

/* ---- scopes ------------------------------------------------------------------- */

Test(autograd, scope_releases_nested_expressions) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = leaf(8, 14);
    int sc = tg_scope_begin();
    tg_tensor *loss = tg_mean(tg_mul(tg_exp(tg_scale(x, 0.5)), tg_log(tg_add_scalar(x, 10))));
    cr_assert_not_null(loss, "%s", tg_last_error());
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK);
    tg_tensor *kept = tg_scope_keep(tg_detach(loss));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    cr_assert_eq(tg_live().nodes, 0, "the graph went with the scope");
    cr_assert_not_null(kept);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, nested_scopes_keep_moves_to_parent) {
    int tgt_sc = tg_scope_begin();
    int outer = tg_scope_begin();
    int inner = tg_scope_begin();
    cr_assert_eq(inner, outer + 1);
    tg_tensor *a = tg_ones(TG_F64, TG_SHAPE(2));
    cr_assert_eq(tg_scope_keep(a), a);
    cr_assert_eq(tg_scope_end(outer), TG_ERR_STATE, "must close the inner scope first");
    cr_assert_eq(tg_scope_end(inner), TG_OK);
    cr_assert_eq(tg_live().tensors, 1, "kept into the outer scope");
    cr_assert_eq(tg_release(a), TG_ERR_STATE, "the outer scope owns it");
    cr_assert_eq(tg_scope_end(outer), TG_OK);
    cr_assert_eq(tg_live().tensors, 0);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

Test(autograd, null_propagates_through_nested_calls) {
    int tgt_sc = tg_scope_begin();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    tg_tensor *bad = tg_ones(TG_F64, TG_SHAPE(3));
    int sc = tg_scope_begin();
    tg_tensor *r = tg_sum(tg_exp(tg_add(x, tg_mul(x, bad))));
    cr_assert_null(r);
    tgt_assert_error(TG_ERR_SHAPE, "tg_mul", "[2]", "[3]", NULL);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    cr_assert_eq(tg_scope_end(tgt_sc), TG_OK);
}

/* ---- the shared-storage story: one op saves the logits, another op's backward
 * shifts and restores a view of them in place ------------------------------- */

/* out = sum over the row of x (a stand-in for a log-prob op); saves x. */
static tg_status rowsum_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                            tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    out[0] = tg_sum_dim(in[0], -1, false);
    if (!out[0]) return tg_last_status();
    return tg_ctx_save(ctx, in[0]) >= 0 ? TG_OK : tg_last_status();
}
static tg_status rowsum_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                            tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    tg_tensor *x = tg_ctx_saved(ctx, 0); /* only to check it is intact */
    if (!x) return tg_last_status();
    int64_t v = tg_size(x, -1);
    tg_release(x);
    int sc = tg_scope_begin(); /* scopes work inside callbacks too */
    tg_tensor *g = tg_reshape(gout[0], TG_SHAPE(tg_size(gout[0], 0), 1));
    gin[0] = tg_scope_keep(tg_contiguous(tg_expand(g, TG_SHAPE(-1, v))));
    tg_scope_end(sc);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg_function rowsum_fn = {"RowSumBackward", rowsum_fwd, rowsum_bwd};

/* out = sum of squares of x; saves a view of x; its backward (buggy flavour,
 * user == non-NULL) shifts the saved view in place and shifts it back. */
static tg_status sq_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out, tg_tensor **out,
                        void *user) {
    (void)n_in, (void)n_out, (void)user;
    tg_tensor *sq = tg_mul(in[0], in[0]);
    out[0] = tg_sum_dim(sq, -1, false);
    tg_release(sq);
    tg_tensor *view = tg_slice(in[0], 0, 0, tg_size(in[0], 0), 1);
    int slot = tg_ctx_save(ctx, view);
    tg_release(view);
    return out[0] && slot >= 0 ? TG_OK : tg_last_status();
}
static tg_status sq_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                        tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in;
    tg_tensor *x = tg_ctx_saved(ctx, 0);
    if (!x) return tg_last_status();
    if (user) { /* the bug: "stabilise" in place, then restore */
        tg_tensor *c = tg_full(TG_F64, TG_SCALAR, 4.0);
        tg_sub_(x, c);
        tg_add_(x, c);
        tg_release(c);
    }
    tg_tensor *g = tg_reshape(gout[0], TG_SHAPE(tg_size(gout[0], 0), 1));
    tg_tensor *two_x = tg_scale(x, 2.0);
    gin[0] = tg_mul(two_x, g);
    tg_release(two_x);
    tg_release(g);
    tg_release(x);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg_function sq_fn = {"SquareSumBackward", sq_fwd, sq_bwd};

static tg_status shared_storage_loss(tg_tensor *logits, bool buggy, tg_tensor **loss) {
    tg_tensor *a = NULL, *b = NULL;
    tg_status st = tg_function_apply(&rowsum_fn, NULL, 1, &logits, 1, &a);
    if (st == TG_OK) st = tg_function_apply(&sq_fn, buggy ? (void *)1 : NULL, 1, &logits, 1, &b);
    if (st != TG_OK) return st;
    *loss = tg_sum(tg_add(a, b));
    return *loss ? TG_OK : tg_last_status();
}

Test(autograd, inplace_in_another_ops_backward_is_caught_and_grads_untouched) {
    int sc = tg_scope_begin();
    tg_tensor *logits = tg_set_name(TGT_F64(TG_SHAPE(2, 3), 1, 2, 3, -1, 0, 1), "logits");
    tg_set_requires_grad(logits, true);
    tg_tensor *loss = NULL;
    cr_assert_eq(shared_storage_loss(logits, true, &loss), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "'logits'", "RowSumBackward", "sub_", "add_",
                     "is at version 2; expected version 0", NULL);
    cr_assert_null(tg_grad(logits), "no leaf gradient written on failure");
    /* the values were restored, so the fixed version gives the right gradient */
    tg_clear_error();
    TG_NO_GRAD { tg_copy_(logits, TGT_F64(TG_SHAPE(2, 3), 1, 2, 3, -1, 0, 1)); }
    cr_assert_eq(shared_storage_loss(logits, false, &loss), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tgt_assert_values(tg_grad(logits), (double[]){3, 5, 7, -1, 1, 3}, 6, 1e-15);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* As PyTorch's AccumulateGrad: a gradient that reaches a leaf after it stopped
 * requiring grad is not added to its .grad (it used to be). */
Test(autograd, leaf_that_stopped_requiring_grad_gets_no_gradient) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2)), *w = tg_ones(TG_F64, TG_SHAPE(2));
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    tg_tensor *xw = tg_mul(x, w), *s = tg_sum(xw);
    cr_assert_eq(tg_set_requires_grad(x, false), TG_OK);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *gx = tg_grad(x), *gw = tg_grad(w);
    cr_assert_null(gx);
    cr_assert_not_null(gw, "the other leaf still gets its gradient");
    tg_release(gw);
    tg_release(xw);
    tg_release(s);
    tg_release(x);
    tg_release(w);
}

/* As PyTorch: requires_grad true on a non-leaf is a no-op, false on any leaf
 * of any dtype is accepted; false on a non-leaf is refused. */
Test(autograd, set_requires_grad_as_pytorch) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2)), *i = tg_zeros(TG_I64, TG_SHAPE(2));
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *y = tg_exp(x);
    cr_assert_eq(tg_set_requires_grad(y, true), TG_OK);
    cr_assert_str_eq(tg_grad_fn_name(y), "ExpBackward");
    cr_assert_eq(tg_set_requires_grad(i, false), TG_OK);
    tg_clear_error();
    cr_assert_eq(tg_set_requires_grad(i, true), TG_ERR_DTYPE);
    cr_assert_eq(tg_set_requires_grad(y, false), TG_ERR_AUTOGRAD);
    tg_release(y);
    tg_release(x);
    tg_release(i);
}

/* TG_NO_GRAD restores the mode however its block is left (it was a plain
 * for loop: break, return or goto left grad mode off). */
static bool no_grad_then_return(void) {
    TG_NO_GRAD {
        if (!tg_is_grad_enabled()) return true;
    }
    return false;
}

Test(autograd, no_grad_block_restores_the_mode_on_every_exit) {
    cr_assert(tg_is_grad_enabled());
    TG_NO_GRAD { break; }
    cr_assert(tg_is_grad_enabled(), "break left grad mode off");
    for (int i = 0; i < 3; i++) {
        TG_NO_GRAD {
            if (i == 1) continue;
            cr_assert(!tg_is_grad_enabled());
        }
        cr_assert(tg_is_grad_enabled(), "continue left grad mode off");
    }
    cr_assert(no_grad_then_return());
    cr_assert(tg_is_grad_enabled(), "return left grad mode off");
    TG_NO_GRAD { goto out; }
out:
    cr_assert(tg_is_grad_enabled(), "goto left grad mode off");
    TG_NO_GRAD {
        TG_NO_GRAD { cr_assert(!tg_is_grad_enabled()); }
        cr_assert(!tg_is_grad_enabled(), "the inner block turned grad mode back on");
        tg_set_grad_enabled(true); /* the outer block still restores what it found */
    }
    cr_assert(tg_is_grad_enabled());
    tg_set_grad_enabled(false);
    TG_NO_GRAD { break; }
    cr_assert(!tg_is_grad_enabled(), "a block entered with grad mode off leaves it off");
    tg_set_grad_enabled(true);
}

/* tg_scope_depth / tg_scope_unwind: a fixture closes what a failed assertion
 * left open; bad depths change nothing. */
Test(autograd, scope_unwind_closes_inner_scopes_and_refuses_bad_depths) {
    cr_assert_eq(tg_scope_depth(), 0);
    int a = tg_scope_begin();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(3));
    int b = tg_scope_begin();
    tg_tensor *y = tg_ones(TG_F64, TG_SHAPE(3));
    (void)y;
    cr_assert_eq(tg_scope_depth(), b);
    tg_clear_error();
    cr_assert_eq(tg_scope_unwind(3), TG_ERR_STATE);
    tgt_assert_error(TG_ERR_STATE, "tg_scope_unwind", "depth 3", NULL);
    cr_assert_eq(tg_scope_unwind(-1), TG_ERR_STATE);
    cr_assert_eq(tg_scope_depth(), 2);
    cr_assert_eq(tg_live().tensors, 2);
    cr_assert_eq(tg_scope_unwind(a), TG_OK); /* closes b only */
    cr_assert_eq(tg_scope_depth(), 1);
    cr_assert_eq(tg_live().tensors, 1);
    cr_assert_not_null(x);
    cr_assert_eq(tg_scope_unwind(0), TG_OK);
    cr_assert_eq(tg_scope_depth(), 0);
    cr_assert_eq(tg_live().tensors, 0);
    cr_assert_eq(tg_scope_unwind(0), TG_OK); /* nothing open: nothing to do */
}
