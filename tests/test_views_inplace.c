/* tests/test_views_inplace.c - views and in-place ops as PyTorch has them
 * (ops/view_inplace.c): a view taken before an in-place op on its base sees
 * the edit in its gradient; in-place ops through views rebase the base
 * (CopySlices); the refusals PyTorch makes; the version errors as strict as
 * before; nothing changed by a failed op. Every expected number was computed
 * with PyTorch (float64) on the same program. */
#include "tg_ops_test_util.h"

TestSuite(views_inplace, .init = tgt_setup, .fini = tgt_teardown);

static tg_tensor *leaf(int ndim, const int64_t *shape, const double *v) {
    tg_tensor *t = tgt_f64(ndim, shape, v);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    return t;
}
#define LEAF(shape_pair, ...) leaf(shape_pair, (const double[]){__VA_ARGS__})

static void backward_ok(tg_tensor *root) {
    tg_clear_error();
    cr_assert_eq(tg_backward(root, NULL, false), TG_OK, "%s", tg_last_error());
}

/* The reported bug: x = ones(3); y = x * 1; v = y[0:2]; y *= 3; sum(v)
 * backward gave x.grad = [1, 1, 0] (v kept y's old history). */
Test(views_inplace, view_taken_before_an_inplace_op_on_its_base_sees_it) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 0, 2, 1);
    cr_assert_eq(tg_scale_(y, 3), TG_OK, "%s", tg_last_error());
    tg_tensor *loss = tg_sum(v);
    TGO_ASSERT_VALUES(loss, 0, 6);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 3, 3, 0);
    cr_assert_str_eq(tg_grad_fn_name(v), "AsStridedBackward");
    TGO_RELEASE(x, y, v, loss);
}

/* A view made while its base required no grad requires grad once the base
 * does (b += x), and its gradient reaches x. */
Test(views_inplace, view_of_a_constant_follows_its_base_into_the_graph) {
    tg_tensor *b = tg_zeros(TG_F64, TG_SHAPE(3)), *v = tg_slice(b, 0, 0, 2, 1);
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    cr_assert(!tg_requires_grad(v));
    cr_assert_eq(tg_add_(b, x), TG_OK, "%s", tg_last_error());
    cr_assert(tg_requires_grad(v), "the view's base requires grad now");
    cr_assert(!tg_is_leaf(v));
    tg_tensor *loss = tg_sum(v);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 1, 1, 0);
    TGO_RELEASE(b, v, x, loss);
}

/* In-place through a transposed view: y = x * 1; y.t() *= arange(6).view(3, 2). */
Test(views_inplace, inplace_through_a_transposed_view) {
    tg_tensor *x = LEAF(TG_SHAPE(2, 3), 1, 1, 1, 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *t = tg_transpose(y, 0, 1);
    tg_tensor *a = tg_arange(TG_F64, 0, 6, 1), *a2 = tg_view(a, TG_SHAPE(3, 2));
    cr_assert_eq(tg_mul_(t, a2), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_grad_fn_name(y), "CopySlices");
    tg_tensor *loss = tg_sum(y);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 0, 2, 4, 1, 3, 5);
    TGO_RELEASE(x, y, t, a, a2, loss);
}

/* A view of a view is a view of the root base: w = y[0:2][1:2]; w *= 5. */
Test(views_inplace, inplace_through_a_view_of_a_view) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 0, 2, 1), *w = tg_slice(v, 0, 1, 2, 1);
    cr_assert_eq(tg_scale_(w, 5), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_grad_fn_name(y), "CopySlices");
    cr_assert_str_eq(tg_grad_fn_name(v), "AsStridedBackward");
    cr_assert_str_eq(tg_grad_fn_name(w), "AsStridedBackward");
    TGO_ASSERT_VALUES(y, 0, 1, 5, 1);
    tg_tensor *loss = tg_sum(y);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 1, 5, 1);
    TGO_RELEASE(x, y, v, w, loss);
}

/* An expanded view (stride 0) of a base modified in place afterwards: each
 * base element gets the sum over its copies. */
Test(views_inplace, expanded_view_of_a_rebased_base_sums_its_copies) {
    tg_tensor *x = LEAF(TG_SHAPE(2, 3), 1, 1, 1, 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *y1 = tg_view(y, TG_SHAPE(1, 2, 3));
    tg_tensor *e = tg_expand(y1, TG_SHAPE(2, 2, 3));
    cr_assert_eq(tg_scale_(y, 2), TG_OK);
    tg_tensor *loss = tg_sum(e);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 4, 4, 4, 4, 4, 4);
    TGO_RELEASE(x, y, y1, e, loss);
}

/* fill_ and copy_ through views: the overwritten elements get no gradient. */
Test(views_inplace, fill_and_copy_through_views) {
    tg_tensor *x = LEAF(TG_SHAPE(4), 1, 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = tg_view(y, TG_SHAPE(2, 2)), *r = tg_slice(v, 0, 1, 2, 1);
    cr_assert_eq(tg_fill_(r, 7), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(y, 0, 1, 1, 7, 7);
    tg_tensor *loss = tg_sum(y);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 1, 1, 0, 0);
    TGO_RELEASE(x, y, v, r, loss);

    /* copy_ of a constant, then of a tensor that requires grad; loss sum(y*y) */
    for (int req = 0; req < 2; req++) {
        x = LEAF(TG_SHAPE(4), 1, 1, 1, 1);
        tg_tensor *src = TGT_F64(TG_SHAPE(2), req ? 3 : 5, req ? 3 : 6);
        if (req) cr_assert_eq(tg_set_requires_grad(src, true), TG_OK);
        y = tg_scale(x, 1);
        v = tg_slice(y, 0, 1, 3, 1);
        cr_assert_eq(tg_copy_(v, src), TG_OK, "%s", tg_last_error());
        tg_tensor *yy = tg_mul(y, y);
        loss = tg_sum(yy);
        backward_ok(loss);
        TGO_ASSERT_GRAD(x, 0, 2, 0, 0, 2);
        if (req) TGO_ASSERT_GRAD(src, 0, 6, 6);
        TGO_RELEASE(x, src, y, v, yy, loss);
    }
}

/* A strided view of a reshaped base: y.view(3, 2)[:, 1] *= 10. */
Test(views_inplace, inplace_through_a_strided_view_of_a_reshape) {
    tg_tensor *x = LEAF(TG_SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
    tg_tensor *y = tg_scale(x, 1), *y2 = tg_view(y, TG_SHAPE(3, 2));
    tg_tensor *c = tg_slice(y2, 1, 1, 2, 1);
    cr_assert_eq(tg_scale_(c, 10), TG_OK);
    tg_tensor *loss = tg_sum(y);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 1, 10, 1, 10, 1, 10);
    TGO_RELEASE(x, y, y2, c, loss);
}

/* The pattern of the log-prob code: logits[:, :k].sub_(max) with the max
 * requiring grad; loss sum(y * y * w). */
Test(views_inplace, logits_prefix_sub_with_a_grad_requiring_operand) {
    tg_tensor *x = LEAF(TG_SHAPE(2, 4), 0, 1, 2, 3, 4, 5, 6, 7);
    tg_tensor *m = LEAF(TG_SHAPE(2, 1), 2, 1);
    tg_tensor *w = TGT_F64(TG_SHAPE(2, 4), 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 1, 0, 2, 1);
    cr_assert_eq(tg_sub_(v, m), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(y, 0, -2, -1, 2, 3, 3, 4, 6, 7);
    tg_tensor *yy = tg_mul(y, y), *yyw = tg_mul(yy, w), *loss = tg_sum(yyw);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 1e-15, 0, -1, 4, 9, 12, 20, 36, 49);
    TGO_ASSERT_GRAD(m, 1e-15, 1, -32);
    TGO_RELEASE(x, m, w, y, v, yy, yyw, loss);
}

/* Two overlapping views of one base, each modified in place, then all three
 * used: a = y[0:4] *= 2, b = y[2:6] *= 3. */
Test(views_inplace, two_overlapping_views_modified_in_turn) {
    tg_tensor *x = LEAF(TG_SHAPE(6), 0, 1, 2, 3, 4, 5);
    tg_tensor *y = tg_scale(x, 1), *a = tg_slice(y, 0, 0, 4, 1), *b = tg_slice(y, 0, 2, 6, 1);
    cr_assert_eq(tg_scale_(a, 2), TG_OK);
    cr_assert_eq(tg_scale_(b, 3), TG_OK);
    tg_tensor *sa = tg_sum(a), *sb = tg_sum(b), *sy = tg_sum(y);
    tg_tensor *s1 = tg_add(sa, sb), *loss = tg_add(s1, sy);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 4, 4, 18, 18, 6, 6);
    TGO_RELEASE(x, y, a, b, sa, sb, sy, s1, loss);
}

/* Two recorded in-place ops on one view: v *= w; v += w; loss sum(y * y). */
Test(views_inplace, two_inplace_ops_on_one_view) {
    tg_tensor *x = LEAF(TG_SHAPE(4), 0, 1, 2, 3), *w = LEAF(TG_SHAPE(2), 2, 3);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 1, 3, 1);
    uint64_t v0 = tg_version(y);
    cr_assert_eq(tg_mul_(v, w), TG_OK);
    cr_assert_eq(tg_add_(v, w), TG_OK);
    cr_assert_eq(tg_version(y), v0 + 2);
    tg_tensor *yy = tg_mul(y, y), *loss = tg_sum(yy);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 0, 16, 54, 6);
    TGO_ASSERT_GRAD(w, 0, 16, 54);
    TGO_RELEASE(x, w, y, v, yy, loss);
}

/* A constant's view modified by a tensor that requires grad: the constant
 * base joins the graph (CopySlices with no history of its own). */
Test(views_inplace, view_of_a_constant_modified_by_a_grad_requiring_tensor) {
    tg_tensor *b = tg_zeros(TG_F64, TG_SHAPE(3)), *v = tg_slice(b, 0, 0, 2, 1);
    tg_tensor *x = LEAF(TG_SHAPE(2), 1, 1), *c = TGT_F64(TG_SHAPE(3), 1, 2, 3);
    cr_assert_eq(tg_add_(v, x), TG_OK, "%s", tg_last_error());
    cr_assert(tg_requires_grad(b));
    cr_assert_str_eq(tg_grad_fn_name(b), "CopySlices");
    tg_tensor *bc = tg_mul(b, c), *loss = tg_sum(bc);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 1, 2);
    TGO_RELEASE(b, v, x, c, bc, loss);
}

/* The base itself strided (a detached transpose) or at an offset (a detached
 * slice): the gradient is routed through the base's own layout. */
Test(views_inplace, bases_that_are_strided_or_offset) {
    tg_tensor *z = tg_zeros(TG_F64, TG_SHAPE(2, 3)), *zt = tg_transpose(z, 0, 1);
    tg_tensor *b = tg_detach(zt), *v = tg_slice(b, 0, 0, 2, 1);
    cr_assert(!tg_is_contiguous(b));
    tg_tensor *x = LEAF(TG_SHAPE(2, 2), 1, 2, 3, 4);
    cr_assert_eq(tg_add_(v, x), TG_OK, "%s", tg_last_error());
    tg_tensor *a6 = tg_arange(TG_F64, 0, 6, 1), *w = tg_view(a6, TG_SHAPE(3, 2));
    tg_tensor *bb = tg_mul(b, b), *bbw = tg_mul(bb, w), *loss = tg_sum(bbw);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 0, 4, 12, 24);
    TGO_ASSERT_VALUES(b, 0, 1, 2, 3, 4, 0, 0);
    TGO_RELEASE(z, zt, b, v, x, a6, w, bb, bbw, loss);

    tg_tensor *base = tg_arange(TG_F64, 0, 7, 1), *sl = tg_slice(base, 0, 1, 6, 1);
    b = tg_detach(sl);
    v = tg_slice(b, 0, 1, 5, 2);
    x = LEAF(TG_SHAPE(2), 2, 3);
    cr_assert_eq(tg_mul_(v, x), TG_OK, "%s", tg_last_error());
    bb = tg_mul(b, b);
    loss = tg_sum(bb);
    backward_ok(loss);
    TGO_ASSERT_GRAD(x, 0, 16, 96);
    TGO_ASSERT_VALUES(base, 0, 0, 1, 4, 3, 12, 5, 6);
    TGO_RELEASE(base, sl, b, v, x, bb, loss);
}

/* gradcheck through in-place ops on views: f(x) = sum(y * y) where y = 2x
 * and y[1:3] *= x[0:2]. */
static tg_tensor *inplace_fn(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *y = tg_scale(in[0], 2), *v = tg_slice(y, 0, 1, 3, 1);
    tg_tensor *xs = tg_slice(in[0], 0, 0, 2, 1);
    tg_tensor *out = NULL;
    if (tg_mul_(v, xs) == TG_OK) {
        tg_tensor *yy = tg_mul(y, y);
        out = tg_sum(yy);
        tg_release(yy);
    }
    tg_release(xs);
    tg_release(v);
    tg_release(y);
    return out;
}

Test(views_inplace, gradcheck_through_inplace_ops_on_views) {
    tg_tensor *x = LEAF(TG_SHAPE(4), 1, 2, 3, 4);
    tg_clear_error();
    cr_assert_eq(tg_gradcheck(inplace_fn, NULL, 1, &x, NULL), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(x);
}

/* the same through div_ and pow_ on views: y = x^2 + 1; y[1:3] /= x[0:2];
 * y[0:2] **= x[2:4] (a transposed view of a 2-D y); f = sum(y * y) */
static tg_tensor *div_pow_fn(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *sq = tg_square(in[0]), *y = tg_add_scalar(sq, 1);
    tg_tensor *v = tg_slice(y, 0, 1, 3, 1), *xs = tg_slice(in[0], 0, 0, 2, 1);
    tg_tensor *y2 = tg_view(y, TG_SHAPE(2, 2)), *yt = tg_transpose(y2, 0, 1);
    tg_tensor *col = tg_slice(yt, 1, 0, 1, 1); /* y[0], y[2] */
    tg_tensor *xe = tg_slice(in[0], 0, 2, 4, 1), *e = tg_view(xe, TG_SHAPE(2, 1));
    tg_tensor *out = NULL;
    if (tg_div_(v, xs) == TG_OK && tg_pow_(col, e) == TG_OK) {
        tg_tensor *yy = tg_mul(y, y);
        out = tg_sum(yy);
        tg_release(yy);
    }
    tg_tensor *all[] = {sq, y, v, xs, y2, yt, col, xe, e};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) tg_release(all[k]);
    return out;
}

Test(views_inplace, gradcheck_through_div_and_pow_on_views) {
    tg_tensor *x = LEAF(TG_SHAPE(4), 0.5, 1.25, 0.75, -0.5);
    tg_clear_error();
    cr_assert_eq(tg_gradcheck(div_pow_fn, NULL, 1, &x, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *f = div_pow_fn(&x, NULL);
    cr_assert_not_null(f, "%s", tg_last_error());
    cr_assert_eq(tg_backward(f, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(x, f);
}

/* ---- what PyTorch refuses, refused the same way, changing nothing --------------- */

Test(views_inplace, view_of_a_leaf_requiring_grad_is_refused) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 2, 3), *v = tg_slice(x, 0, 0, 2, 1);
    tg_set_name(x, "param");
    tgo_snap s = tgo_snapshot(x);
    tg_clear_error();
    cr_assert_eq(tg_scale_(v, 2), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "tg_scale_", "view of a leaf", "param", NULL);
    tgo_assert_unchanged(&s);
    TG_NO_GRAD { cr_assert_eq(tg_scale_(v, 2), TG_OK); } /* an optimizer step is fine */
    TGO_ASSERT_VALUES(x, 0, 2, 4, 3);
    TGO_RELEASE(x, v);
}

Test(views_inplace, view_made_in_no_grad_mode_modified_with_grad_on_is_refused) {
    /* of a base that requires grad, and (as PyTorch) of a constant too */
    for (int req = 0; req < 2; req++) {
        tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
        tg_tensor *b = req ? tg_scale(x, 1) : tg_zeros(TG_F64, TG_SHAPE(3)), *v = NULL;
        TG_NO_GRAD { v = tg_slice(b, 0, 0, 2, 1); }
        tg_tensor *o = tg_slice(x, 0, 0, 2, 1);
        tgo_snap s = tgo_snapshot(b);
        tg_clear_error();
        cr_assert_eq(tg_add_(v, o), TG_ERR_AUTOGRAD);
        tgt_assert_error(TG_ERR_AUTOGRAD, "tg_add_", "no-grad mode", NULL);
        tgo_assert_unchanged(&s);
        TGO_RELEASE(x, b, v, o);
    }
}

/* A view made in no-grad mode of a base whose history is then rebased with
 * grad mode on: using the view is refused (its gradient is ambiguous). */
Test(views_inplace, no_grad_view_of_a_rebased_base_is_refused_when_used) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = NULL;
    TG_NO_GRAD { v = tg_slice(y, 0, 0, 2, 1); }
    cr_assert(tg_requires_grad(v));
    cr_assert_eq(tg_scale_(y, 2), TG_OK);
    tg_clear_error();
    cr_assert_null(tg_scale(v, 1));
    tgt_assert_error(TG_ERR_AUTOGRAD, "no-grad mode", "modified in place", NULL);
    TG_NO_GRAD { /* with grad mode off it is an ordinary tensor */
        tg_tensor *z = tg_scale(v, 1);
        cr_assert_not_null(z);
        TGO_ASSERT_VALUES(z, 0, 2, 2);
        TGO_RELEASE(z);
    }
    TGO_RELEASE(x, y, v);
}

/* tg_is_view / tg_view_base (PyTorch's _is_view() / _base): the base is the
 * root, never a view; NULL without an error for a tensor that is not a view. */
Test(views_inplace, a_view_names_its_root_base) {
    tg_tensor *x = LEAF(TG_SHAPE(4), 1, 2, 3, 4);
    tg_tensor *v = tg_slice(x, 0, 1, 4, 1), *w = tg_slice(v, 0, 0, 2, 1);
    cr_assert(!tg_is_view(x) && tg_is_view(v) && tg_is_view(w) && !tg_is_view(NULL));
    tg_clear_error();
    tg_tensor *b = tg_view_base(w), *n = tg_view_base(x);
    cr_assert_eq(b, x);
    cr_assert_null(n);
    cr_assert_eq(tg_last_status(), TG_OK);
    cr_assert_null(tg_view_base(NULL));
    tgt_assert_error(TG_ERR_NULL, "tg_view_base", NULL);
    TGO_RELEASE(x, v, w, b);
}

/* As PyTorch: made in no-grad mode, a view requires grad exactly when its
 * base does, even when its input is a view that was marked requires_grad
 * itself (r4 = rand(()); r6 = r4.expand(()) [no-grad]; r6.requires_grad_();
 * r7 = r6.expand(()) [no-grad]: r7.requires_grad is False). The program
 * checker expected True (found by fuzz_ops). */
Test(views_inplace, a_no_grad_view_requires_grad_when_its_base_does) {
    tg_tensor *r4 = tg_ones(TG_F64, TG_SCALAR), *r6 = NULL, *r7 = NULL, *r8 = NULL;
    TG_NO_GRAD { r6 = tg_expand(r4, 0, NULL); }
    cr_assert_eq(tg_set_requires_grad(r6, true), TG_OK, "%s", tg_last_error());
    cr_assert(tg_requires_grad(r6) && tg_is_leaf(r6));
    TG_NO_GRAD { r7 = tg_expand(r6, 0, NULL); }
    cr_assert(!tg_requires_grad(r7));
    r8 = tg_expand(r6, 0, NULL); /* grad mode on: follows its input */
    cr_assert(tg_requires_grad(r8));
    cr_assert_str_eq(tg_grad_fn_name(r8), "ExpandBackward");
    TGO_RELEASE(r4, r6, r7, r8);
}

/* A view made before its base required grad, written in place while nothing
 * required grad, then used after the base started to: PyTorch makes its
 * grad_fn again (the version moved) and the gradient reaches the base
 * (x.grad = [0, 2, 2]); tapegrad kept the view without a grad_fn and x got
 * no gradient (found by the differential suite). Without the write, PyTorch
 * sends nothing to x, and neither does tapegrad. */
Test(views_inplace, a_view_written_before_its_base_required_grad_reaches_the_base) {
    for (int write = 0; write < 2; write++) {
        tg_tensor *x = tgt_f64(1, (int64_t[]){3}, (double[]){1, 2, 3});
        tg_tensor *v = tg_slice(x, 0, 1, 3, 1);
        if (write) cr_assert_eq(tg_scale_(v, 0.5), TG_OK);
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        tg_tensor *y = tg_scale(v, 2), *l = tg_sum(y);
        backward_ok(l);
        tg_tensor *g = tg_grad(x);
        if (write) {
            cr_assert_str_eq(tg_grad_fn_name(v), "AsStridedBackward");
            TGO_ASSERT_GRAD(x, 0, 0, 2, 2);
        } else {
            cr_assert_null(g, "PyTorch gives x no gradient through a view without grad_fn");
        }
        TGO_RELEASE(x, v, y, l, g);
    }
}

/* A view marked requires_grad itself is a leaf; once an in-place op with
 * grad on its base gives it a history, a graph that used it as a leaf cannot
 * send it a gradient: PyTorch fails backward ("leaf variable has been moved
 * into the graph interior"); tapegrad added the gradient to the view's .grad
 * (found by the differential suite). */
Test(views_inplace, a_leaf_view_moved_into_the_graph_interior_fails_backward) {
    tg_tensor *b = tgt_f64(2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
    tg_tensor *v = tg_slice(b, 0, 0, 1, 1);
    cr_assert_eq(tg_set_requires_grad(v, true), TG_OK);
    tg_tensor *k = tgt_f64(0, NULL, (double[]){1.5});
    tg_tensor *y = tg_mul(k, v), *l = tg_sum(y);
    tg_tensor *w = LEAF(TG_SCALAR, -1);
    cr_assert_eq(tg_add_(b, w), TG_OK, "%s", tg_last_error());
    tg_clear_error();
    cr_assert_eq(tg_backward(l, NULL, false), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "moved into the graph interior", "MulBackward",
                     "input 1", NULL);
    tg_tensor *g = tg_grad(v);
    cr_assert_null(g);
    TGO_RELEASE(b, v, k, y, l, w);
}

/* Printing names the grad_fn, so printing such a view is refused as PyTorch's
 * print(v) is, before anything is written (tg_print used to write it with no
 * grad_fn and return TG_OK while leaving TG_ERR_AUTOGRAD set). */
Test(views_inplace, printing_a_refused_no_grad_view_fails_and_writes_nothing) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = NULL;
    TG_NO_GRAD { v = tg_slice(y, 0, 0, 2, 1); }
    cr_assert_eq(tg_scale_(y, 2), TG_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    tg_clear_error();
    cr_assert_eq(tg_print(f, v, 8), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "no-grad mode", "modified in place", NULL);
    tg_clear_error();
    cr_assert_eq(tg_print(f, y, 8), TG_OK, "%s", tg_last_error()); /* the base prints */
    cr_assert_eq(tg_last_status(), TG_OK);
    fclose(f);
    cr_assert_str_eq(text, "f64[3] (grad_fn=ScaleBackward) [2, 2, 2]\n");
    free(text);
    TGO_RELEASE(x, y, v);
}

/* As PyTorch: such a view is refused once its storage's version moved, even
 * by an in-place op made with grad mode off. */
Test(views_inplace, no_grad_view_is_refused_after_any_inplace_op_on_its_storage) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = NULL;
    TG_NO_GRAD {
        v = tg_slice(y, 0, 0, 2, 1);
        cr_assert_eq(tg_scale_(y, 2), TG_OK);
    }
    tg_clear_error();
    cr_assert_null(tg_exp(v));
    tgt_assert_error(TG_ERR_AUTOGRAD, "no-grad mode", NULL);
    TGO_RELEASE(x, y, v);
}

/* A view made in no-grad mode of a base that requires grad requires grad but
 * has no history: its gradient goes nowhere (PyTorch: backward succeeds, no
 * .grad). */
Test(views_inplace, no_grad_view_of_a_leaf_gives_no_gradient) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1), *v = NULL;
    TG_NO_GRAD { v = tg_slice(x, 0, 0, 2, 1); }
    cr_assert(tg_requires_grad(v));
    cr_assert(tg_is_leaf(v));
    tg_tensor *s = tg_sum(v);
    backward_ok(s);
    tg_tensor *g = tg_grad(x);
    cr_assert_null(g);
    TGO_RELEASE(x, v, s);
}

/* In-place ops with grad mode off leave the histories as they were; a view
 * of the written storage remakes its grad_fn as an as_strided of its base
 * (the same gradient), as PyTorch does on any version change. */
Test(views_inplace, inplace_ops_in_no_grad_mode_do_not_rebase) {
    tg_tensor *x = LEAF(TG_SHAPE(3), 1, 1, 1);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 0, 2, 1);
    cr_assert_str_eq(tg_grad_fn_name(v), "SliceBackward");
    TG_NO_GRAD { cr_assert_eq(tg_scale_(y, 2), TG_OK); }
    cr_assert_str_eq(tg_grad_fn_name(v), "AsStridedBackward");
    tg_tensor *s = tg_sum(v);
    backward_ok(s);
    TGO_ASSERT_GRAD(x, 0, 1, 1, 0);
    TGO_RELEASE(s);
    tg_zero_grad(x);
    TG_NO_GRAD { cr_assert_eq(tg_scale_(v, 2), TG_OK); }
    cr_assert_str_eq(tg_grad_fn_name(y), "ScaleBackward");
    s = tg_sum(y);
    backward_ok(s);
    TGO_ASSERT_GRAD(x, 0, 1, 1, 1);
    TGO_RELEASE(x, y, v, s);
}

/* The version counter stays exactly as strict: an op that saved a view reads
 * it in backward, and an in-place op on the base (or on another view) since
 * then fails backward naming that op. */
Test(views_inplace, saved_view_modified_through_its_base_fails_backward) {
    tg_tensor *x = LEAF(TG_SHAPE(4), 1, 2, 3, 4);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 1, 3, 1), *l = tg_log(v);
    tg_tensor *w = tg_slice(y, 0, 0, 1, 1);
    int line = __LINE__ + 1;
    cr_assert_eq(tg_add_(w, w), TG_OK);
    tg_tensor *s = tg_sum(l);
    tg_clear_error();
    cr_assert_eq(tg_backward(s, NULL, false), TG_ERR_INPLACE);
    char at[64];
    snprintf(at, sizeof at, "add_ at tests/test_views_inplace.c:%d", line);
    tgt_assert_error(TG_ERR_INPLACE, "LogBackward", "is at version 1; expected version 0", at,
                     NULL);
    tg_tensor *g = tg_grad(x);
    cr_assert_null(g);
    TGO_RELEASE(x, y, v, l, w, s);
}

/* The base of the view has overlapping elements (a detached expand): no
 * rebase is possible there. */
Test(views_inplace, view_of_an_overlapping_base_is_refused_when_recorded) {
    tg_tensor *c = tg_ones(TG_F64, TG_SHAPE(1, 3)), *e = tg_expand(c, TG_SHAPE(2, 3));
    tg_tensor *d = tg_detach(e), *r = tg_slice(d, 0, 0, 1, 1);
    tg_tensor *x = LEAF(TG_SHAPE(1, 3), 1, 2, 3);
    tgo_snap s = tgo_snapshot(c);
    tg_clear_error();
    cr_assert_eq(tg_add_(r, x), TG_ERR_LAYOUT);
    tgt_assert_error(TG_ERR_LAYOUT, "tg_add_", "overlapping", NULL);
    tgo_assert_unchanged(&s);
    TGO_RELEASE(c, e, d, r, x);
}

/* Allocation failures at every point of a recorded in-place op on a view
 * leave the base's values, version and history as they were. */
Test(views_inplace, allocation_failure_changes_nothing) {
    bool done = false;
    for (uint64_t n = 1; !done && n < 64; n++) {
        tg_tensor *x = LEAF(TG_SHAPE(4), 1, 2, 3, 4), *w = LEAF(TG_SHAPE(2), 5, 6);
        tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 1, 3, 1);
        tgo_snap s = tgo_snapshot(y);
        const char *fn0 = tg_grad_fn_name(y);
        tg_clear_error();
        tg_fault_inject(n, false);
        tg_status st = tg_mul_(v, w);
        uint64_t injected = tg_fault_inject(0, false);
        if (st == TG_OK) {
            cr_assert_eq(injected, 0, "allocation %llu failed but the op succeeded",
                         (unsigned long long)n);
            free(s.v);
            done = true;
        } else {
            cr_assert_eq(st, TG_ERR_NOMEM, "%s", tg_last_error());
            tgo_assert_unchanged(&s);
            cr_assert_str_eq(tg_grad_fn_name(y), fn0);
            /* still usable */
            tg_tensor *l = tg_sum(v);
            backward_ok(l);
            TGO_ASSERT_GRAD(x, 0, 0, 1, 1, 0);
            TGO_RELEASE(l);
        }
        TGO_RELEASE(x, w, y, v);
    }
    cr_assert(done, "the op never succeeded");
}

/* A view of a view that was made a leaf requiring grad: after an unrecorded
 * write to the root base, PyTorch remakes the inner view's grad_fn from the
 * root (which does not require grad), so the leaf view gets no gradient; the
 * same here (the differential programs found the old path to the leaf). */
Test(views_inplace, view_of_a_leaf_view_after_an_unrecorded_write) {
    tg_tensor *r0 = TGO_MAKE(TG_F64, TG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tg_tensor *r15 = tg_transpose(r0, 0, 1);
    cr_assert_eq(tg_set_requires_grad(r15, true), TG_OK);
    tg_tensor *r8 = tg_slice(r15, 1, 0, 2, 1);
    cr_assert_eq(tg_scale_(r0, -1), TG_OK); /* r0 requires no grad: not recorded */
    cr_assert(tg_is_leaf(r15));
    cr_assert_str_eq(tg_grad_fn_name(r8), "AsStridedBackward");
    tg_tensor *s = tg_sum(r8);
    backward_ok(s);
    cr_assert_null(tg_grad(r15));
    TGO_RELEASE(r0, r15, r8, s);
}
