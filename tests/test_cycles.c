/* tests/test_cycles.c - the public API cannot build a reference cycle.
 *
 * Owning references: tensor -> storage, grad_fn, .grad, a view's base; node ->
 * earlier nodes, saved storages, and the handle shared by its edges to a leaf,
 * which owns the leaf until a recorded in-place op gives the leaf (or a tensor
 * the leaf owns through .grad) a history of its own (tape/core.h,
 * struct tg__leafref). Each test below builds one pattern that closes a cycle
 * in a refcounted engine with owning leaf edges (PyTorch leaks on several of
 * them), checks that a leak scan finds nothing unreachable while the program
 * still holds its tensors, that backward through it still works, and (in the
 * fixture's teardown) that everything is freed once the program lets go. */
#include "tg_ops_test_util.h"

TestSuite(cycles, .init = tgt_setup, .fini = tgt_teardown);

static void assert_no_cycle(const char *what) {
    tg_leak_report *r = tg_leak_scan();
    cr_assert_not_null(r, "%s", tg_last_error());
    cr_assert_eq(tg_leak_report_unreachable(r), 0, "%s: %lld objects in a cycle", what,
                 (long long)tg_leak_report_unreachable(r));
    tg_leak_report_free(r);
}

static tg_tensor *leaf3(double a, double b, double c) {
    tg_tensor *t = TGT_F64(TG_SHAPE(3), a, b, c);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    return t;
}

/* Once reported: x requires grad, y = log_softmax(x), x stops requiring grad,
 * x += y. x's new history (AddBackward -> LogSoftmaxBackward) ends in an edge
 * to x itself. */
Test(cycles, leaf_used_by_a_graph_then_given_a_history_by_inplace) {
    tg_tensor *x = leaf3(1, 2, 3);
    tg_tensor *y = tg_log_softmax(x);
    cr_assert_eq(tg_set_requires_grad(x, false), TG_OK);
    cr_assert_eq(tg_add_(x, y), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_grad_fn_name(x), "AddBackward");
    assert_no_cycle("x += log_softmax(x)");
    /* as PyTorch, backward refuses to send x's earlier self a gradient: x is
     * no longer a leaf ("leaf variable has been moved into the graph
     * interior"), and nothing changes */
    tg_tensor *s = tg_sum(x);
    tg_clear_error();
    cr_assert_eq(tg_backward(s, NULL, false), TG_ERR_AUTOGRAD);
    tgt_assert_error(TG_ERR_AUTOGRAD, "moved into the graph interior", "tensor #",
                     "LogSoftmaxBackward", NULL);
    cr_assert_null(tg_grad(x));
    TGO_RELEASE(s, y, x);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* Once reported: a weight-decay update written with grad mode on. x.grad +=
 * x makes x's .grad depend on x: x -> .grad -> AddBackward -> edge -> x. */
Test(cycles, grad_updated_in_place_from_its_own_leaf) {
    tg_tensor *x = leaf3(1, 2, 3);
    tg_tensor *s = tg_sum(x);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK);
    tg_tensor *g = tg_grad(x);
    cr_assert_eq(tg_add_(g, x), TG_OK, "%s", tg_last_error());
    cr_assert(tg_requires_grad(g));
    assert_no_cycle("x.grad += x");
    TGO_ASSERT_VALUES(g, 0, 2, 3, 4);
    TGO_RELEASE(g, s);
    assert_no_cycle("x.grad += x, only x held");
    TGO_RELEASE(x);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* The same one level up: x.grad requires grad and gets a .grad of its own,
 * which is then updated from x. x -> g -> h -> MulBackward -> edge -> x. */
Test(cycles, grad_of_a_grad_updated_from_the_first_leaf) {
    tg_tensor *x = leaf3(1, 2, 3);
    tg_tensor *s = tg_sum(x);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK);
    tg_tensor *g = tg_grad(x);
    cr_assert_eq(tg_set_requires_grad(g, true), TG_OK);
    tg_tensor *gg = tg_mul(g, g), *sg = tg_sum(gg);
    cr_assert_eq(tg_backward(sg, NULL, false), TG_OK);
    tg_tensor *h = tg_grad(g);
    TGO_ASSERT_VALUES(h, 0, 2, 2, 2);
    cr_assert_eq(tg_mul_(h, x), TG_OK, "%s", tg_last_error());
    assert_no_cycle("x.grad.grad *= x");
    TGO_RELEASE(gg, sg, s, h, g, x);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* A leaf that is a view of a constant (requires_grad set on the view): the
 * base is updated from the view, so the base's history ends in the view,
 * which owns the base. */
Test(cycles, base_updated_from_its_own_leaf_view) {
    tg_tensor *b = tg_zeros(TG_F64, TG_SHAPE(3)), *v = tg_slice(b, 0, 0, 3, 1);
    cr_assert_eq(tg_set_requires_grad(v, true), TG_OK);
    tg_tensor *v2 = tg_scale(v, 2);
    cr_assert_eq(tg_add_(b, v2), TG_OK, "%s", tg_last_error());
    assert_no_cycle("b += 2 * b[:]");
    TGO_RELEASE(v2, v);
    assert_no_cycle("b += 2 * b[:], only b held");
    TGO_RELEASE(b);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* Two leaves whose .grads are updated from each other:
 * a -> a.grad -> edge -> b -> b.grad -> edge -> a. */
Test(cycles, two_grads_updated_from_each_others_leaf) {
    tg_tensor *a = leaf3(1, 2, 3), *b = leaf3(4, 5, 6);
    tg_tensor *ab = tg_mul(a, b), *s = tg_sum(ab);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK);
    tg_tensor *ga = tg_grad(a), *gb = tg_grad(b);
    cr_assert_eq(tg_add_(ga, b), TG_OK);
    cr_assert_eq(tg_add_(gb, a), TG_OK);
    assert_no_cycle("a.grad += b; b.grad += a");
    TGO_RELEASE(ab, s, ga, gb);
    assert_no_cycle("a.grad += b; b.grad += a, leaves held");
    TGO_RELEASE(a, b);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* A view of x is modified in place from x itself (x += x's own slice, through
 * CopySlices), with a detached alias and a saved view in the mix. */
Test(cycles, base_and_views_updated_from_each_other) {
    tg_tensor *x = leaf3(1, 2, 3);
    tg_tensor *y = tg_scale(x, 1), *v = tg_slice(y, 0, 0, 2, 1), *w = tg_slice(y, 0, 1, 3, 1);
    tg_tensor *d = tg_detach(y);
    cr_assert_eq(tg_add_(v, w), TG_OK, "%s", tg_last_error()); /* reads y's other slice */
    cr_assert_eq(tg_mul_(w, v), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_add_(d, y), TG_OK, "%s", tg_last_error()); /* a detached alias joins in */
    assert_no_cycle("views of y updated from each other");
    tg_tensor *s = tg_sum(y);
    /* the partly overlapping operands were read into copies before the writes
     * (what mul_ saves), so d += y, which moves y's version, fails nothing */
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(s, d, w, v, y, x);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* An in-place op whose operand is the tensor itself: t += t. */
Test(cycles, tensor_updated_from_itself) {
    tg_tensor *x = leaf3(1, 2, 3), *y = tg_scale(x, 1);
    cr_assert_eq(tg_add_(y, y), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_VALUES(y, 0, 2, 4, 6);
    assert_no_cycle("y += y");
    tg_tensor *s = tg_sum(y);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 2, 2, 2);
    TGO_RELEASE(s, y, x);
}

/* A custom function saving its input and output and returning a view of its
 * input; the leaf's .grad then fed back through it. */
static tg_status cf_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                            tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    out[0] = tg_slice(in[0], 0, 0, 2, 1);
    out[1] = tg_scale(in[0], 2);
    if (!out[0] || !out[1]) return tg_last_status();
    if (tg_ctx_save(ctx, in[0]) < 0 || tg_ctx_save(ctx, out[1]) < 0) return tg_last_status();
    return TG_OK;
}
static tg_status cf_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                             tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    tg_tensor *x = tg_ctx_saved(ctx, 0); /* checks the saved input's version */
    if (!x) return tg_last_status();
    tg_release(x);
    /* d/dx: 2 * g1 + [g0, 0] (backward runs with grad mode off: plain writes) */
    gin[0] = tg_scale(gout[1], 2);
    tg_tensor *head = gin[0] ? tg_slice(gin[0], 0, 0, 2, 1) : NULL;
    tg_status st = head ? tg_add_(head, gout[0]) : tg_last_status();
    tg_release(head);
    return st;
    tgt_assert_nothing_live(); /* no cycle kept anything */
}
static const tg_function cf = {"ViewAndScaleBackward", cf_forward, cf_backward};

Test(cycles, custom_function_returning_a_view_of_its_input) {
    tg_tensor *x = leaf3(1, 2, 3), *out[2];
    int tok = tg_scope_begin(); /* the callbacks' temporaries: released at the end */
    tg_tensor *y = tg_scale(x, 1);
    cr_assert_eq(tg_function_apply(&cf, NULL, 1, &y, 2, out), TG_OK, "%s", tg_last_error());
    tg_tensor *a = tg_sum(out[0]), *b = tg_sum(out[1]), *s = tg_add(a, b);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 3, 3, 2);
    tg_tensor *g = tg_grad(x);
    cr_assert_eq(tg_add_(g, out[1]), TG_OK, "%s", tg_last_error());
    assert_no_cycle("x.grad += f(x)");
    /* the view output may not be rebased: PyTorch refuses it too */
    tg_clear_error();
    cr_assert_eq(tg_scale_(y, 2), TG_OK);
    cr_assert_null(tg_scale(out[0], 1));
    tgt_assert_error(TG_ERR_AUTOGRAD, "custom function", NULL);
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    TGO_RELEASE(x);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}

/* Many microbatches mixing all of the above, with scopes and retained losses;
 * the program then lets go of everything (the fixture checks nothing lives). */
Test(cycles, everything_at_once_in_a_loop) {
    tg_tensor *w = leaf3(0.5, -1, 2), *keep[8] = {0};
    for (int k = 0; k < 8; k++) {
        int tok = tg_scope_begin();
        tg_tensor *y = tg_mul(w, w), *v = tg_slice(y, 0, 0, 2, 1);
        cr_assert_eq(tg_scale_(v, 1.0 + k), TG_OK);
        tg_tensor *s = tg_sum(y);
        cr_assert_eq(tg_backward(s, NULL, true), TG_OK, "%s", tg_last_error());
        tg_tensor *g = tg_grad(w);
        cr_assert_eq(tg_add_(g, w), TG_OK); /* weight decay with grad mode on */
        keep[k] = tg_scope_keep(s);          /* kept for logging, not detached */
        cr_assert_eq(tg_scope_end(tok), TG_OK);
        assert_no_cycle("loop step");
    }
    for (int k = 0; k < 8; k++) TGO_RELEASE(keep[k]);
    TGO_RELEASE(w);
    tgt_assert_nothing_live(); /* no cycle kept anything */
}
