/* tests/test_errors_alloc.c - allocation-failure injection (SQLite's method,
 * tg_fault_inject in memory.h). Each workload is run with allocation N made
 * to fail, for N = 1, 2, ... until a run sees no injected failure, in both
 * modes (only the Nth fails / the Nth and every later one fails). Every run
 * must either fail with TG_ERR_NOMEM (NULL results, the status and an
 * "injected" message kept) or succeed with exactly the reference results;
 * never crash; a failed backward must leave every .grad untouched; and once
 * everything is released nothing may be alive or counted. */
#include "tg_ops_test_util.h"

TestSuite(alloc_failure, .init = tgt_setup, .fini = tgt_teardown);

#define MAX_RUNS 20000

typedef struct result {
    double loss;
    double g0[32], g1[32]; /* gradients of the two leaves (C order) */
    int64_t n0, n1;
} result;

/* Copies leaf's .grad out. With a scope open the reference tg_grad returns
 * belongs to the scope and must not be released here. */
static void read_grad(tg_tensor *leaf, double *dst, int64_t *n, bool in_scope) {
    tg_tensor *g = tg_grad(leaf);
    cr_assert_not_null(g, "a successful backward left no .grad");
    *n = tg_numel(g);
    cr_assert(*n <= 32);
    cr_assert_eq(tg_copy_out(g, TG_F64, dst, 32 * sizeof(double)), TG_OK);
    if (!in_scope) TGO_RELEASE(g);
}

static void assert_same_result(const result *a, const result *ref, uint64_t n) {
    cr_assert(tgo_close(a->loss, ref->loss, 1e-12), "run %llu: loss %.17g vs %.17g",
              (unsigned long long)n, a->loss, ref->loss);
    cr_assert_eq(a->n0, ref->n0);
    cr_assert_eq(a->n1, ref->n1);
    for (int64_t i = 0; i < ref->n0; i++)
        cr_assert(tgo_close(a->g0[i], ref->g0[i], 1e-12), "run %llu: g0[%lld]",
                  (unsigned long long)n, (long long)i);
    for (int64_t i = 0; i < ref->n1; i++)
        cr_assert(tgo_close(a->g1[i], ref->g1[i], 1e-12), "run %llu: g1[%lld]",
                  (unsigned long long)n, (long long)i);
}

/* Checks a run's outcome: success (compared with ref unless ref is NULL) or
 * TG_ERR_NOMEM with an injected failure recorded. */
static void check_outcome(tg_status st, uint64_t fired, const result *res, const result *ref,
                          uint64_t n, bool persistent) {
    if (fired == 0) {
        cr_assert_eq(st, TG_OK, "run %llu without injected failure: %s: %s",
                     (unsigned long long)n, tg_status_name(st), tg_last_error());
    }
    if (st == TG_OK) {
        if (ref) assert_same_result(res, ref, n);
        return;
    }
    cr_assert_eq(st, TG_ERR_NOMEM, "run %llu (%s): %s: %s", (unsigned long long)n,
                 persistent ? "persistent" : "once", tg_status_name(st), tg_last_error());
    cr_assert_eq(tg_last_status(), TG_ERR_NOMEM, "run %llu: last status %s: %s",
                 (unsigned long long)n, tg_status_name(tg_last_status()), tg_last_error());
    cr_assert(strstr(tg_last_error(), "injected") != NULL,
              "run %llu: the kept error is not the injected failure: %s", (unsigned long long)n,
              tg_last_error());
}

/* Runs workload(n, persistent) for n = 1, 2, ... until no failure fires.
 * Returns how many runs saw an injected failure. */
typedef tg_status (*workload_fn)(uint64_t n, bool persistent, result *res, uint64_t *fired);

static uint64_t sweep(workload_fn w, bool persistent, const result *ref) {
    uint64_t failing = 0;
    for (uint64_t n = 1;; n++) {
        cr_assert(n < MAX_RUNS, "the workload never ran to completion");
        result res = {0};
        uint64_t fired = 0;
        tg_status st = w(n, persistent, &res, &fired);
        check_outcome(st, fired, &res, ref, n, persistent);
        tgt_assert_nothing_live();
        cr_assert(tg_is_grad_enabled(), "run %llu left grad mode off", (unsigned long long)n);
        if (fired == 0) break;
        failing++;
    }
    return failing;
}

/* ---- workload 1: y = sum(exp(x) * w); backward --------------------------------------- */

static tg_status small_workload(uint64_t n, bool persistent, result *res, uint64_t *fired) {
    tg_clear_error();
    tg_fault_inject(n, persistent);
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3, 4), 11, 0, 1);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(3, 4), 12, 0, 1);
    tg_status st = tg_set_requires_grad(x, true);
    if (st == TG_OK) st = tg_set_requires_grad(w, true);
    tg_tensor *e = tg_exp(x), *p = tg_mul(e, w), *y = tg_sum(p);
    tg_status bst = tg_backward(y, NULL, false);
    *fired = tg_fault_inject(0, false);
    if (st == TG_OK) st = bst;
    if (st == TG_OK) {
        cr_assert(x && w && e && p && y, "a NULL result but TG_OK");
        cr_assert_eq(tg_item(y, &res->loss), TG_OK);
        read_grad(x, res->g0, &res->n0, false);
        read_grad(w, res->g1, &res->n1, false);
    } else if (bst != TG_OK && x && w) {
        tg_tensor *gx = tg_grad(x), *gw = tg_grad(w);
        cr_assert_null(gx, "run %llu: a failed backward wrote x.grad", (unsigned long long)n);
        cr_assert_null(gw, "run %llu: a failed backward wrote w.grad", (unsigned long long)n);
    }
    TGO_RELEASE(x, w, e, p, y);
    return st;
}

Test(alloc_failure, small_workload_fails_cleanly_at_every_allocation) {
    result ref = {0};
    uint64_t fired = 1;
    cr_assert_eq(small_workload(0, false, &ref, &fired), TG_OK, "%s", tg_last_error());
    cr_assert_eq(fired, 0);
    /* by hand: d/dx sum(exp(x) w) = exp(x) w, d/dw = exp(x) */
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3, 4), 11, 0, 1);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(3, 4), 12, 0, 1);
    double *xv = tgo_values(x), *wv = tgo_values(w), loss = 0;
    for (int i = 0; i < 12; i++) {
        cr_assert(tgo_close(ref.g0[i], exp(xv[i]) * wv[i], 1e-14));
        cr_assert(tgo_close(ref.g1[i], exp(xv[i]), 1e-14));
        loss += exp(xv[i]) * wv[i];
    }
    cr_assert(tgo_close(ref.loss, loss, 1e-12));
    free(xv), free(wv);
    TGO_RELEASE(x, w);
    uint64_t once = sweep(small_workload, false, &ref);
    uint64_t pers = sweep(small_workload, true, &ref);
    cr_assert_gt(once, 5, "only %llu allocations could be made to fail", (unsigned long long)once);
    cr_assert_eq(once, pers, "both modes must reach the same allocations (%llu vs %llu)",
                 (unsigned long long)once, (unsigned long long)pers);
}

/* ---- workload 2: a loss with views, softmax family, gather, an in-place op, scope ---- */

static tg_status loss_workload(uint64_t n, bool persistent, result *res, uint64_t *fired) {
    tg_clear_error();
    int tok = tg_scope_begin(); /* opened before injection: its own failure is tested below */
    cr_assert_geq(tok, 1);
    tg_fault_inject(n, persistent);
    tg_tensor *h = tg_randn(TG_F64, TG_SHAPE(4, 3), 21, 0, 1);
    tg_tensor *W = tg_randn(TG_F64, TG_SHAPE(5, 3), 22, 0, 1);
    tg_status st = tg_set_requires_grad(h, true);
    if (st == TG_OK) st = tg_set_requires_grad(W, true);
    tg_tensor *idx = tg_from_data(TG_I64, TG_SHAPE(4, 1), (const int64_t[]){0, 4, 2, 1});
    tg_tensor *logits = tg_matmul(h, tg_transpose(W, 0, 1));  /* [4, 5], strided weight */
    tg_tensor *lp = tg_log_softmax(logits);
    tg_tensor *nll = tg_neg(tg_mean(tg_gather(lp, idx)));
    tg_tensor *ent = tg_sum_dim(tg_mul(tg_softmax(logits), lp), -1, false); /* [4] */
    tg_status ist = tg_scale_(ent, 2.0); /* recorded in-place op on a non-leaf */
    if (st == TG_OK) st = ist;
    tg_tensor *c = tg_clamp(ent, -10, 0);
    tg_tensor *m = tg_maximum(c, tg_scale(c, 0.5));
    tg_tensor *r = tg_reshape(tg_slice(m, 0, 0, 4, 2), TG_SHAPE(2, 1));
    tg_tensor *d = tg_div(r, tg_add_scalar(tg_exp(r), 1));
    tg_tensor *total = tg_add(nll, tg_sum(tg_sub(d, tg_minimum(d, tg_zeros(TG_F64, TG_SCALAR)))));
    tg_status bst = tg_backward(total, NULL, false);
    *fired = tg_fault_inject(0, false);
    if (st == TG_OK) st = bst;
    if (st == TG_OK) {
        cr_assert_eq(tg_item(total, &res->loss), TG_OK);
        read_grad(h, res->g0, &res->n0, true);
        read_grad(W, res->g1, &res->n1, true);
    } else if (bst != TG_OK && h && W) {
        tg_tensor *gh = tg_grad(h), *gw = tg_grad(W);
        cr_assert_null(gh, "run %llu: a failed backward wrote h.grad", (unsigned long long)n);
        cr_assert_null(gw, "run %llu: a failed backward wrote W.grad", (unsigned long long)n);
    }
    cr_assert_eq(tg_scope_end(tok), TG_OK, "%s", tg_last_error());
    return st;
}

Test(alloc_failure, loss_with_views_scope_and_inplace_fails_cleanly) {
    result ref = {0};
    uint64_t fired = 1;
    cr_assert_eq(loss_workload(0, false, &ref, &fired), TG_OK, "%s", tg_last_error());
    cr_assert_eq(fired, 0);
    cr_assert_eq(ref.n0, 12);
    cr_assert_eq(ref.n1, 15);
    uint64_t once = sweep(loss_workload, false, &ref);
    uint64_t pers = sweep(loss_workload, true, &ref);
    cr_assert_gt(once, 20, "only %llu allocations could be made to fail", (unsigned long long)once);
    cr_assert_gt(pers, 20);
}

/* ---- workload 3: tg_gradcheck restores its inputs even when it fails ------------------ */

static tg_tensor *gc_fn(tg_tensor *const *in, void *user) {
    (void)user;
    tg_tensor *p = tg_mul(in[0], in[1]), *s = tg_softmax(p), *l = tg_log(in[1]);
    tg_tensor *out = tg_add(s, l);
    TGO_RELEASE(p, s, l);
    return out;
}

static tg_status gradcheck_workload(uint64_t n, bool persistent, result *res, uint64_t *fired) {
    (void)res;
    tg_clear_error();
    tg_tensor *a = tgo_randn(TG_F64, TG_SHAPE(2, 3), 31, true);
    tg_tensor *b = tgo_rand(TG_F64, TG_SHAPE(2, 3), 32, 0.5, 2, true);
    tg_tensor *s = tg_sum(a);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK); /* a has a .grad to preserve */
    tg_tensor *ga = tg_grad(a);
    tgo_snap sa = tgo_snapshot(a), sb = tgo_snapshot(b);
    tg_tensor *in[2] = {a, b};
    tg_fault_inject(n, persistent);
    tg_status st = tg_gradcheck(gc_fn, NULL, 2, in, NULL);
    *fired = tg_fault_inject(0, false);
    cr_assert(st == TG_OK || st == TG_ERR_NOMEM, "run %llu: %s: %s", (unsigned long long)n,
              tg_status_name(st), tg_last_error());
    tgo_assert_unchanged(&sa);
    tgo_assert_unchanged(&sb);
    tg_tensor *ga2 = tg_grad(a), *gb2 = tg_grad(b);
    cr_assert_eq(ga2, ga, "run %llu: the input's .grad was replaced", (unsigned long long)n);
    cr_assert_null(gb2, "run %llu: gradcheck left a .grad", (unsigned long long)n);
    TGO_RELEASE(a, b, s, ga, ga2);
    return st;
}

Test(alloc_failure, gradcheck_restores_inputs_on_failure) {
    uint64_t once = sweep(gradcheck_workload, false, NULL);
    uint64_t pers = sweep(gradcheck_workload, true, NULL);
    cr_assert_gt(once, 10);
    cr_assert_gt(pers, 10);
}

/* ---- workload 4: a custom function and a scope whose own allocations fail ------------ */

static tg_status twice_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                               tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    out[0] = tg_scale(in[0], 2);
    out[1] = tg_exp(in[0]);
    if (!out[0] || !out[1]) return tg_last_status();
    double k = 2;
    if (tg_ctx_save(ctx, out[1]) < 0) return tg_last_status();
    return tg_ctx_set_state(ctx, &k, sizeof k);
}

static tg_status twice_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                                tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    const double *k = tg_ctx_state(ctx);
    tg_tensor *e = tg_ctx_saved(ctx, 0);
    if (!e || !k) {
        TGO_RELEASE(e);
        return tg_last_status();
    }
    tg_tensor *a = tg_scale(gout[0], *k), *b = tg_mul(gout[1], e);
    gin[0] = tg_add(a, b);
    TGO_RELEASE(a, b, e);
    return gin[0] ? TG_OK : tg_last_status();
}

static const tg_function TWICE = {"TwiceBackward", twice_forward, twice_backward};

static tg_status custom_workload(uint64_t n, bool persistent, result *res, uint64_t *fired) {
    tg_clear_error();
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(5), 41, true);
    tg_fault_inject(n, persistent);
    int tok = tg_scope_begin();
    tg_status st = tok >= 1 ? TG_OK : tg_last_status();
    if (st == TG_OK) {
        tg_tensor *out[2] = {NULL, NULL};
        st = tg_function_apply(&TWICE, NULL, 1, (tg_tensor *const[]){x}, 2, out);
        if (st == TG_OK) cr_assert(out[0] && out[1]);
        else cr_assert(!out[0] && !out[1], "outputs must be NULL after a failed apply");
        tg_tensor *loss = tg_add(tg_sum(out[0]), tg_sum(out[1]));
        tg_status bst = tg_backward(loss, NULL, false);
        if (st == TG_OK) st = bst;
        if (st == TG_OK) cr_assert_eq(tg_item(loss, &res->loss), TG_OK);
        cr_assert_eq(tg_scope_end(tok), TG_OK, "%s", tg_last_error());
    }
    *fired = tg_fault_inject(0, false);
    if (st == TG_OK) {
        read_grad(x, res->g0, &res->n0, false);
    } else {
        tg_tensor *g = tg_grad(x);
        cr_assert_null(g, "run %llu: a failed backward wrote x.grad", (unsigned long long)n);
    }
    TGO_RELEASE(x);
    return st;
}

Test(alloc_failure, custom_function_and_scope_fail_cleanly) {
    result ref = {0};
    uint64_t fired = 1;
    cr_assert_eq(custom_workload(0, false, &ref, &fired), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ref.n0, 5);
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(5), 41, false);
    double *xv = tgo_values(x);
    for (int i = 0; i < 5; i++) cr_assert(tgo_close(ref.g0[i], 2 + exp(xv[i]), 1e-14));
    free(xv);
    TGO_RELEASE(x);
    uint64_t once = sweep(custom_workload, false, &ref);
    uint64_t pers = sweep(custom_workload, true, &ref);
    cr_assert_gt(once, 5);
    cr_assert_gt(pers, 5);
}

/* An output whose bytes cannot be allocated: the message names the op and
 * the line that called it, so a failure deep in a loss points at the user's
 * code; inside a composite op the composite's name leads once, as for every
 * error. (The library's small bookkeeping allocations keep the plain
 * message.) */
static void oom_named(const char *want_op, int line, const char *msg, const char *what) {
    char where[80];
    snprintf(where, sizeof where, "(called at %s:%d)", __FILE__, line);
    cr_assert_eq(tg_last_status(), TG_ERR_NOMEM, "%s: %s", what, msg);
    cr_assert(strstr(msg, want_op) == msg, "%s: does not start with %s: %s", what, want_op, msg);
    cr_assert_not_null(strstr(msg, where), "%s: lacks %s: %s", what, where, msg);
    cr_assert_not_null(strstr(msg, "injected"), "%s: %s", what, msg);
    cr_assert_null(strstr(msg + 1, want_op), "%s: %s named twice: %s", what, want_op, msg);
}

Test(alloc_failure, out_of_memory_names_the_op_and_its_call_site) {
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(4, 4));
    cr_assert_not_null(x);
    bool saw_bytes = false;
    for (uint64_t n = 1; n <= 8; n++) { /* the storage's header, its bytes, the tensor, ... */
        tg_fault_inject(n, false);
        int line = __LINE__ + 1;
        tg_tensor *y = tg_matmul(x, x);
        uint64_t fired = tg_fault_inject(0, false);
        if (!fired) {
            TGO_RELEASE(y);
            break;
        }
        cr_assert_null(y);
        if (strstr(tg_last_error(), "(activation)")) { /* the output's bytes */
            oom_named("tg_matmul: out of memory", line, tg_last_error(), "tg_matmul");
            saw_bytes = true;
        }
    }
    cr_assert(saw_bytes, "no run failed the output's bytes");
    /* a composite op: its own name leads, the inner op's follows, the line is the user's */
    tg_tensor *t = tg_zeros(TG_F32, TG_SHAPE(4, 4));
    bool composite = false;
    for (uint64_t n = 1; n <= 40 && !composite; n++) {
        tg_fault_inject(n, false);
        int line = __LINE__ + 1;
        tg_tensor *l = tg_mse_loss(x, t, TG_REDUCTION_MEAN);
        uint64_t fired = tg_fault_inject(0, false);
        if (!fired) {
            TGO_RELEASE(l);
            break;
        }
        const char *m = tg_last_error();
        if (strstr(m, "(activation)") && strstr(m, "(in tg_")) {
            oom_named("tg_mse_loss: out of memory", line, m, "tg_mse_loss");
            composite = true;
        }
    }
    cr_assert(composite, "no run failed inside the composite op");
    TGO_RELEASE(t);
    TGO_RELEASE(x);
}
