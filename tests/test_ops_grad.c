/* tests/test_ops_grad.c - gradients beyond what the op registry's walk
 * (test_registry.c: tg_gradcheck of every row on every smooth sample, strided
 * and broadcast, each differentiable input alone and together) checks:
 * views made inside the checked function, a composite loss reusing its
 * inputs, a negative control (a custom function with a wrong backward must
 * fail the check, naming the input), and hand-computed gradients for what a
 * finite difference cannot see (ties of maximum/minimum, clamp at its
 * bounds, where's cond, the dtype of to_dtype's gradient). */
#include "tg_ops_test_util.h"

TestSuite(gradcheck_ops, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(gradcheck_views, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(gradcheck_control, .init = tgt_setup, .fini = tgt_teardown);
TestSuite(grad_values, .init = tgt_setup, .fini = tgt_teardown);

/* Runs tg_gradcheck(fn) on in[0..n_in-1] with the default options and asserts
 * it passes, leaves every input's values, version and .grad (none) as found. */
static void check_fn(tg_gradcheck_fn fn, void *user, int n_in, tg_tensor **in,
                     const tg_gradcheck_opts *opts, const char *what) {
    tgo_snap snap[4];
    cr_assert(n_in <= 4);
    for (int i = 0; i < n_in; i++) snap[i] = tgo_snapshot(in[i]);
    tg_status st = tg_gradcheck(fn, user, n_in, in, opts);
    cr_assert_eq(st, TG_OK, "%s: %s: %s", what, tg_status_name(st), tg_last_error());
    for (int i = 0; i < n_in; i++) {
        tgo_assert_unchanged(&snap[i]);
        tg_tensor *g = tg_grad(in[i]);
        cr_assert_null(g, "%s: gradcheck left a .grad on input %d", what, i);
    }
}


static tg_tensor *N(int ndim, const int64_t *shape, uint64_t seed) {
    return tgo_randn(TG_F64, ndim, shape, seed, true);
}

/* ---- views, copies and dtype conversion -------------------------------------------- */

typedef enum {
    V_SLICE,      /* slice(x, 1, 1, 5, 2) of [3, 5] */
    V_SLICE_NEG,  /* slice(x, 0, -3, -1, 1) of [5, 2] */
    V_VIEW,       /* view(x, [2, -1]) of [3, 4] */
    V_RESHAPE,    /* reshape(x, [4, 3]) of [3, 4] (a view) */
    V_RESHAPE_T,  /* reshape(transpose(x), [12]) of [3, 4] (a copy) */
    V_TRANSPOSE,  /* transpose(x, 0, 2) of [2, 3, 2] */
    V_EXPAND,     /* expand(x, [2, -1, 4]) of [3, 1] */
    V_EXPAND0D,   /* expand(x, [2, 3]) of a 0-d */
    V_CONTIG_T,   /* contiguous(transpose(x)) of [3, 4] */
    V_CLONE,      /* clone(x) of [3, 4] */
    V_TO_F32,     /* to_dtype(x, f32) of [3, 4] f64 */
    V_F32_EXP_F64 /* to_dtype(exp(to_dtype(x, f32)), f64) */
} view_kind;

static tg_tensor *view_fn(tg_tensor *const *in, void *user) {
    view_kind k = *(const view_kind *)user;
    tg_tensor *x = in[0], *t, *u, *r = NULL;
    switch (k) {
    case V_SLICE: return tg_slice(x, 1, 1, 5, 2);
    case V_SLICE_NEG: return tg_slice(x, 0, -3, -1, 1);
    case V_VIEW: return tg_view(x, TG_SHAPE(2, -1));
    case V_RESHAPE: return tg_reshape(x, TG_SHAPE(4, 3));
    case V_RESHAPE_T:
        t = tg_transpose(x, 0, 1);
        r = tg_reshape(t, TG_SHAPE(12));
        tg_release(t);
        return r;
    case V_TRANSPOSE: return tg_transpose(x, 0, 2);
    case V_EXPAND: return tg_expand(x, TG_SHAPE(2, -1, 4));
    case V_EXPAND0D: return tg_expand(x, TG_SHAPE(2, 3));
    case V_CONTIG_T:
        t = tg_transpose(x, 0, 1);
        r = tg_contiguous(t);
        tg_release(t);
        return r;
    case V_CLONE: return tg_clone(x);
    case V_TO_F32: return tg_to_dtype(x, TG_F32);
    case V_F32_EXP_F64:
        t = tg_to_dtype(x, TG_F32);
        u = tg_exp(t);
        r = tg_to_dtype(u, TG_F64);
        tg_release(t);
        tg_release(u);
        return r;
    }
    return NULL;
}

static void view_case(view_kind k, tg_tensor *x, const tg_gradcheck_opts *opts) {
    tg_tensor *in[1] = {x};
    char what[32];
    snprintf(what, sizeof what, "view kind %d", (int)k);
    check_fn(view_fn, &k, 1, in, opts, what);
    TGO_RELEASE(x);
}

Test(gradcheck_views, slice) {
    view_case(V_SLICE, N(TG_SHAPE(3, 5), 1), NULL);
    view_case(V_SLICE, tgo_transposed_leaf(3, 5, 2, -2, 2), NULL);
    view_case(V_SLICE_NEG, N(TG_SHAPE(5, 2), 3), NULL);
    view_case(V_SLICE_NEG, tgo_step2_leaf(5, 2, 4, -2, 2), NULL);
}

Test(gradcheck_views, view_reshape) {
    view_case(V_VIEW, N(TG_SHAPE(3, 4), 1), NULL);
    view_case(V_RESHAPE, N(TG_SHAPE(3, 4), 2), NULL);
    view_case(V_RESHAPE, tgo_transposed_leaf(3, 4, 3, -2, 2), NULL); /* copies */
    view_case(V_RESHAPE_T, N(TG_SHAPE(3, 4), 4), NULL);
    view_case(V_RESHAPE_T, tgo_step2_leaf(3, 4, 5, -2, 2), NULL);
}

Test(gradcheck_views, transpose_expand) {
    view_case(V_TRANSPOSE, N(TG_SHAPE(2, 3, 2), 1), NULL);
    view_case(V_EXPAND, N(TG_SHAPE(3, 1), 2), NULL);
    view_case(V_EXPAND, tgo_step2_leaf(3, 1, 3, -2, 2), NULL);
    view_case(V_EXPAND0D, N(TG_SCALAR, 4), NULL);
}

Test(gradcheck_views, contiguous_clone) {
    view_case(V_CONTIG_T, N(TG_SHAPE(3, 4), 1), NULL);
    view_case(V_CONTIG_T, tgo_transposed_leaf(3, 4, 2, -2, 2), NULL); /* the view is contiguous */
    view_case(V_CLONE, N(TG_SHAPE(3, 4), 3), NULL);
    view_case(V_CLONE, tgo_step2_leaf(3, 4, 4, -2, 2), NULL);
}

/* f32 <-> f64. Rounding to f32 puts ~6e-8 noise in every value, which central
 * differences divide by 2*eps: with the default eps 1e-6 that is ~3% and no
 * check could pass. eps = 1e-2 brings it to ~3e-6 (within atol 1e-5); the
 * functions are linear (or exp, whose O(eps^2) error is within rtol 1e-3). */
Test(gradcheck_views, to_dtype_f32_f64) {
    tg_gradcheck_opts o = {.eps = 1e-2, .atol = 1e-5, .rtol = 1e-3};
    view_case(V_TO_F32, N(TG_SHAPE(3, 4), 1), &o);
    view_case(V_TO_F32, tgo_transposed_leaf(3, 4, 2, -2, 2), &o);
    view_case(V_F32_EXP_F64, N(TG_SHAPE(3, 4), 3), &o);
    view_case(V_F32_EXP_F64, tgo_step2_leaf(3, 4, 4, -2, 2), &o);
}

/* f32 leaf -> f64 -> log, checked in f64 downstream of the conversion. */
static tg_tensor *f32_to_f64_log(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *d = tg_to_dtype(in[0], TG_F64);
    tg_tensor *l = tg_log(d);
    tg_release(d);
    return l;
}
Test(gradcheck_views, to_dtype_from_f32_leaf) {
    tg_gradcheck_opts o = {.eps = 1e-2, .atol = 1e-5, .rtol = 1e-3};
    tg_tensor *x = tgo_rand(TG_F32, TG_SHAPE(2, 3), 5, 1.0, 2.0, true);
    tg_tensor *in[1] = {x};
    check_fn(f32_to_f64_log, NULL, 1, in, &o, "f32 -> f64 -> log");
    TGO_RELEASE(x);
}

/* ---- composites: one input used many times, several ops deep ------------------------ */

/* mean(gather(log_softmax(x @ w + b), idx)) + sum(x * x * exp(x)) */
static tg_tensor *loss_fn(tg_tensor *const *in, void *user) {
    tg_tensor *idx = user;
    tg_tensor *x = in[0], *w = in[1], *b = in[2];
    tg_tensor *h = tg_matmul(x, w), *hb = tg_add(h, b), *ls = tg_log_softmax(hb);
    tg_tensor *g = tg_gather(ls, idx), *m = tg_mean(g);
    tg_tensor *xx = tg_mul(x, x), *ex = tg_exp(x), *p = tg_mul(xx, ex), *s = tg_sum(p);
    tg_tensor *out = tg_add(m, s);
    TGO_RELEASE(h, hb, ls, g, m, xx, ex, p, s);
    return out;
}

Test(gradcheck_ops, composite_loss_reuses_inputs) {
    tg_tensor *idx = TGO_MAKE(TG_I64, TG_SHAPE(3, 1), 2, 0, 3);
    tg_tensor *in[3] = {N(TG_SHAPE(3, 4), 1), N(TG_SHAPE(4, 5), 2), N(TG_SHAPE(5), 3)};
    check_fn(loss_fn, idx, 3, in, NULL, "composite loss");
    TGO_RELEASE(in[0], in[1], in[2], idx);
}

/* ---- negative control: a custom function with a wrong backward ----------------------- */

/* out = x * y * y; backward gives dx = g*y*y and dy = 2*g*x*y, or, when the
 * user flag says so, dy = g*x*y (wrong by a factor of 2) / dx = g*y (wrong). */
typedef struct {
    int wrong_input; /* -1: correct backward */
} sq_user;

static tg_status sq_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                            tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    tg_tensor *yy = tg_mul(in[1], in[1]);
    out[0] = tg_mul(in[0], yy);
    tg_release(yy);
    if (!out[0]) return tg_last_status();
    if (tg_ctx_save(ctx, in[0]) < 0 || tg_ctx_save(ctx, in[1]) < 0) return tg_last_status();
    return TG_OK;
}

static tg_status sq_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                             tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in;
    const sq_user *u = user;
    tg_tensor *x = tg_ctx_saved(ctx, 0), *y = tg_ctx_saved(ctx, 1);
    if (!x || !y) {
        TGO_RELEASE(x, y);
        return tg_last_status();
    }
    tg_tensor *gy = tg_mul(gout[0], y);
    if (tg_ctx_needs_input_grad(ctx, 0))
        gin[0] = u->wrong_input == 0 ? tg_retain(gy) : tg_mul(gy, y);
    if (tg_ctx_needs_input_grad(ctx, 1)) {
        tg_tensor *gxy = tg_mul(gy, x);
        gin[1] = u->wrong_input == 1 ? tg_retain(gxy) : tg_scale(gxy, 2.0);
        tg_release(gxy);
    }
    TGO_RELEASE(x, y, gy);
    return TG_OK;
}

static const tg_function SQ_FN = {"XYYBackward", sq_forward, sq_backward};

static tg_tensor *sq_apply(tg_tensor *const *in, void *user) {
    tg_tensor *out[1] = {NULL};
    if (tg_function_apply(&SQ_FN, user, 2, in, 1, out) != TG_OK) return NULL;
    return out[0];
}

Test(gradcheck_control, correct_custom_backward_passes) {
    sq_user u = {-1};
    tg_tensor *in[2] = {N(TG_SHAPE(2, 3), 1), N(TG_SHAPE(2, 3), 2)};
    check_fn(sq_apply, &u, 2, in, NULL, "correct custom function");
    TGO_RELEASE(in[0], in[1]);
}

static void expect_mismatch(int wrong, const char *input_tag, const char *name_tag) {
    sq_user u = {wrong};
    tg_tensor *in[2] = {N(TG_SHAPE(2, 3), 3), N(TG_SHAPE(2, 3), 4)};
    tg_set_name(in[0], "x_ok");
    tg_set_name(in[1], "y_bad");
    if (wrong == 0) tg_set_name(in[0], "x_bad"), tg_set_name(in[1], "y_ok");
    tgo_snap s0 = tgo_snapshot(in[0]), s1 = tgo_snapshot(in[1]);
    tg_clear_error();
    tg_status st = tg_gradcheck(sq_apply, &u, 2, in, NULL);
    cr_assert_eq(st, TG_ERR_GRADCHECK, "a wrong backward passed the check: %s",
                 tg_status_name(st));
    tgt_assert_error(TG_ERR_GRADCHECK, input_tag, name_tag, "numerical", "analytical", NULL);
    tgo_assert_unchanged(&s0);
    tgo_assert_unchanged(&s1);
    for (int i = 0; i < 2; i++) {
        tg_tensor *g = tg_grad(in[i]);
        cr_assert_null(g, "a failed gradcheck left a .grad on input %d", i);
    }
    TGO_RELEASE(in[0], in[1]);
}

Test(gradcheck_control, wrong_backward_of_second_input_fails_naming_it) {
    expect_mismatch(1, "input 1", "y_bad");
}

Test(gradcheck_control, wrong_backward_of_first_input_fails_naming_it) {
    expect_mismatch(0, "input 0", "x_bad");
}

static tg_tensor *exp_fn(tg_tensor *const *in, void *user) {
    (void)user;
    return tg_exp(in[0]);
}

/* A .grad the input had before the check is left exactly as found. */
Test(gradcheck_control, existing_grad_is_preserved) {
    tg_tensor *x = N(TG_SHAPE(3), 5);
    tg_tensor *s = tg_sum(x);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK);
    tg_tensor *g0 = tg_grad(x);
    tg_tensor *in[1] = {x};
    cr_assert_eq(tg_gradcheck(exp_fn, NULL, 1, in, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *g1 = tg_grad(x);
    cr_assert_eq(g1, g0, "gradcheck replaced the input's .grad");
    TGO_ASSERT_VALUES(g1, 0, 1, 1, 1);
    TGO_RELEASE(x, s, g0, g1);
}

/* ---- hand-computed gradients (what finite differences cannot check) ----------------- */

static tg_tensor *leaf(tg_dtype dt, int ndim, const int64_t *shape, const double *v) {
    tg_tensor *t = tgo_make(dt, ndim, shape, v);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    return t;
}
#define LEAF(dt, shape_pair, ...) leaf(dt, shape_pair, (const double[]){__VA_ARGS__})

static void backward_sum(tg_tensor *y) {
    tg_tensor *s = tg_sum(y);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(s);
}

static void check_ties(tg_dtype dt) {
    tg_tensor *a = LEAF(dt, TG_SHAPE(3), 1, 2, 3), *b = LEAF(dt, TG_SHAPE(3), 1, 0, 3);
    tg_tensor *mx = tg_maximum(a, b);
    backward_sum(mx);
    TGO_ASSERT_GRAD(a, 0, 0.5, 1, 0.5);
    TGO_ASSERT_GRAD(b, 0, 0.5, 0, 0.5);
    tg_zero_grad(a), tg_zero_grad(b);
    tg_tensor *mn = tg_minimum(a, b);
    backward_sum(mn);
    TGO_ASSERT_GRAD(a, 0, 0.5, 0, 0.5);
    TGO_ASSERT_GRAD(b, 0, 0.5, 1, 0.5);
    /* broadcast scalar tied with two entries */
    tg_tensor *m = LEAF(dt, TG_SHAPE(2, 2), 1, 2, 2, 3), *s = LEAF(dt, TG_SCALAR, 2);
    tg_tensor *bx = tg_maximum(m, s);
    backward_sum(bx);
    TGO_ASSERT_GRAD(m, 0, 0, 0.5, 0.5, 1);
    TGO_ASSERT_GRAD(s, 0, 2);
    TGO_RELEASE(a, b, mx, mn, m, s, bx);
}
Test(grad_values, maximum_minimum_split_ties_evenly) {
    check_ties(TG_F32);
    check_ties(TG_F64);
}

static void check_clamp_bounds(tg_dtype dt) {
    tg_tensor *x = LEAF(dt, TG_SHAPE(5), -1, -0.5, 1, 2, -3);
    tg_tensor *c = tg_clamp(x, -1, 1);
    backward_sum(c);
    TGO_ASSERT_GRAD(x, 0, 1, 1, 1, 0, 0); /* gradient 1 on the bounds themselves */
    tg_zero_grad(x);
    tg_tensor *c2 = tg_clamp(x, -INFINITY, 0);
    backward_sum(c2);
    TGO_ASSERT_GRAD(x, 0, 1, 1, 0, 0, 1);
    TGO_RELEASE(x, c, c2);
}
Test(grad_values, clamp_gradient_is_one_on_the_bounds) {
    check_clamp_bounds(TG_F32);
    check_clamp_bounds(TG_F64);
}

/* pow's gradients where PyTorch sets them by convention (values from PyTorch
 * float64): 0 for the base where the exponent is 0, 0 for the exponent where
 * the base is 0 and the exponent >= 0, NaN from the log of a negative base. */
static void check_pow_conventions(tg_dtype dt) {
    tg_tensor *a = LEAF(dt, TG_SHAPE(6), 0, 0, 2, 0, -2, 4);
    tg_tensor *b = LEAF(dt, TG_SHAPE(6), 2, 0, 0, -1, 3, 0.5);
    tg_tensor *y = tg_pow(a, b);
    TGO_ASSERT_VALUES(y, 1e-6, 0, 1, 1, INFINITY, -8, 2);
    backward_sum(y);
    TGO_ASSERT_GRAD(a, 1e-6, 0, 0, 0, -INFINITY, 12, 0.25);
    TGO_ASSERT_GRAD(b, 1e-6, 0, 0, 0.6931471805599453, -INFINITY, NAN, 2.772588722239781);
    TGO_RELEASE(a, b, y);
}
Test(grad_values, pow_gradients_at_zero_bases_and_exponents_as_pytorch) {
    check_pow_conventions(TG_F32);
    check_pow_conventions(TG_F64);
}

Test(grad_values, where_gives_cond_no_gradient) {
    tg_tensor *cond = LEAF(TG_F64, TG_SHAPE(3), 1, 0, 2);
    tg_tensor *a = LEAF(TG_F64, TG_SHAPE(3), 1, 2, 3), *b = LEAF(TG_F64, TG_SCALAR, 5);
    tg_tensor *w = tg_where(cond, a, b), *wa = tg_mul(w, a);
    backward_sum(wa); /* d/da sum(where(c,a,b) * a) = c ? 2a : b */
    TGO_ASSERT_GRAD(a, 1e-15, 2, 5, 6);
    TGO_ASSERT_GRAD(b, 1e-15, 2);
    tg_tensor *gc_ = tg_grad(cond);
    cr_assert_null(gc_, "cond got a gradient");
    TGO_RELEASE(cond, a, b, w, wa);
}

Test(grad_values, to_dtype_gradient_has_the_input_dtype) {
    tg_tensor *x = LEAF(TG_F64, TG_SHAPE(2), 1.5, -2);
    tg_tensor *f = tg_to_dtype(x, TG_F32), *f2 = tg_mul(f, f);
    backward_sum(f2);
    TGO_ASSERT_GRAD(x, 0, 3, -4); /* tgo_assert_grad checks the dtype is f64 */
    tg_tensor *y = LEAF(TG_F32, TG_SHAPE(2), 0.5, 4);
    tg_tensor *d = tg_to_dtype(y, TG_F64), *l = tg_log(d);
    backward_sum(l);
    TGO_ASSERT_GRAD(y, 0, 2, 0.25);
    TGO_RELEASE(x, f, f2, y, d, l);
}

Test(grad_values, broadcast_gradients_are_summed) {
    tg_tensor *col = LEAF(TG_F64, TG_SHAPE(3, 1), 1, 2, 3), *row = LEAF(TG_F64, TG_SHAPE(4), 1, 2, 3, 4);
    tg_tensor *p = tg_mul(col, row); /* [3,4] */
    backward_sum(p);
    TGO_ASSERT_GRAD(col, 0, 10, 10, 10); /* sum of row */
    TGO_ASSERT_GRAD(row, 0, 6, 6, 6, 6); /* sum of col */
    tg_tensor *m = LEAF(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *md = tg_mean_dim(m, -1, true), *ms = tg_mean(m);
    backward_sum(md);
    TGO_ASSERT_GRAD(m, 1e-15, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3);
    backward_sum(ms); /* accumulates into the existing .grad */
    double third = 1.0 / 3, sixth = 1.0 / 6;
    TGO_ASSERT_GRAD(m, 1e-15, third + sixth, third + sixth, third + sixth, third + sixth,
                    third + sixth, third + sixth);
    TGO_RELEASE(col, row, p, m, md, ms);
}

Test(grad_values, matmul_gradients_by_hand) {
    /* C = A @ B, loss = sum(C): dA = 1 @ B^T (row sums of B), dB = A^T @ 1 */
    tg_tensor *a = LEAF(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *b = LEAF(TG_F64, TG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12);
    tg_tensor *c = tg_matmul(a, b);
    backward_sum(c);
    TGO_ASSERT_GRAD(a, 0, 15, 19, 23, 15, 19, 23);
    TGO_ASSERT_GRAD(b, 0, 5, 5, 7, 7, 9, 9);
    /* batched @ shared weight: the weight's gradient sums over the batch */
    tg_tensor *ab = LEAF(TG_F64, TG_SHAPE(2, 1, 2), 1, 2, 3, 4), *w = LEAF(TG_F64, TG_SHAPE(2, 1), 5, 6);
    tg_tensor *d = tg_matmul(ab, w);
    backward_sum(d);
    TGO_ASSERT_GRAD(w, 0, 4, 6);
    TGO_ASSERT_GRAD(ab, 0, 5, 6, 5, 6);
    TGO_RELEASE(a, b, c, ab, w, d);
}

Test(grad_values, gather_repeated_index_accumulates) {
    tg_tensor *t = LEAF(TG_F32, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *idx = TGO_MAKE(TG_I64, TG_SHAPE(2, 3), 2, 2, 0, 1, 1, 1);
    tg_tensor *g = tg_gather(t, idx);
    backward_sum(g);
    TGO_ASSERT_GRAD(t, 0, 1, 0, 2, 0, 3, 0);
    TGO_RELEASE(t, idx, g);
}
