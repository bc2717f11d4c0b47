/* tests/test_fault_injection.c - allocation-failure injection (SQLite's
 * method) over one workload per op family, the fused and composite log-prob
 * op, tg_gradcheck, nested scopes and the leak scan itself.
 *
 * For each workload, allocation N is made to fail for N = 1, 2, ... until a
 * run sees no injected failure, first failing only the Nth allocation, then
 * the Nth and every later one. Each run must: return TG_ERR_NOMEM (NULL
 * results, the injected failure kept as the thread's error) or succeed with
 * exactly the results of a run without injection; leave its inputs as they
 * were (values, version counter, requires_grad, leaf status, no .grad after a
 * failure); leave grad mode on and no scope open; and once everything is
 * released leave nothing alive and no byte counted. test_errors_alloc.c and
 * test_npy.c cover other workloads (a mixed loss, a custom function in a
 * scope, gradcheck of softmax/log, the npy reader). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tg_ops_test_util.h"

TestSuite(fault_injection, .init = tgt_setup, .fini = tgt_teardown);

#define MAX_RUNS 5000
#define MAX_IN 6
#define MAX_VALS 512

/* ---- the harness ------------------------------------------------------------------------------ */

typedef struct result {
    double v[MAX_VALS];
    int n;
} result;

typedef struct workload {
    const char *name;
    int n_in;
    /* the inputs, made before injection starts (leaves, some requiring grad) */
    void (*make)(tg_tensor **in, const void *cfg);
    /* the work, under injection: returns TG_OK (and records its results) or
     * the error; releases everything it made */
    tg_status (*run)(tg_tensor *const *in, const void *cfg, result *res);
    const void *cfg;
    /* a failed run may leave a .grad (it ran several backward passes) */
    bool grad_may_remain;
} workload;

static void rec(result *r, double v) {
    cr_assert_lt(r->n, MAX_VALS);
    r->v[r->n++] = v;
}

static void rec_tensor(result *r, const tg_tensor *t) {
    cr_assert_not_null(t);
    double *v = tgo_values(t);
    for (int64_t i = 0; i < tg_numel(t); i++) rec(r, v[i]);
    free(v);
}

/* Records the .grad of every input that requires grad (NaN marks none). With a
 * scope open the reference tg_grad returns is the scope's. */
static bool g_in_scope;
static void rec_grads(result *r, tg_tensor *const *in, int n) {
    for (int i = 0; i < n; i++) {
        if (!tg_requires_grad(in[i])) continue;
        tg_tensor *g = tg_grad(in[i]);
        if (!g) {
            rec(r, NAN);
            continue;
        }
        rec_tensor(r, g);
        if (!g_in_scope) TGO_RELEASE(g);
    }
}

/* Everything a run makes goes into a bag released at its end (NULL allowed). */
typedef struct bag {
    tg_tensor *t[160];
    int n;
} bag;

static tg_tensor *put(bag *b, tg_tensor *t) {
    cr_assert_lt(b->n, 160);
    b->t[b->n++] = t;
    return t;
}

static void bag_release(bag *b) {
    for (int i = 0; i < b->n; i++)
        cr_assert_eq(tg_release(b->t[i]), TG_OK, "%s", tg_last_error());
    b->n = 0;
}

/* Backward from loss (NULL: the error of the forward) and the results: the
 * loss value and the inputs' gradients. */
static tg_status finish(tg_tensor *loss, tg_tensor *const *in, int n_in, result *res) {
    if (!loss) {
        cr_assert_neq(tg_last_status(), TG_OK, "a NULL result without an error");
        return tg_last_status();
    }
    tg_status st = tg_backward(loss, NULL, false);
    if (st != TG_OK) return st;
    double v;
    cr_assert_eq(tg_item(loss, &v), TG_OK);
    rec(res, v);
    rec_grads(res, in, n_in);
    return TG_OK;
}

static void assert_same(const result *a, const result *ref, const char *what, uint64_t n) {
    cr_assert_eq(a->n, ref->n, "%s run %llu: %d results, expected %d", what,
                 (unsigned long long)n, a->n, ref->n);
    for (int i = 0; i < ref->n; i++)
        cr_assert(tgo_close(a->v[i], ref->v[i], 1e-12), "%s run %llu: result %d is %.17g, "
                  "expected %.17g", what, (unsigned long long)n, i, a->v[i], ref->v[i]);
}

/* No scope is left open: a new one gets token 1. */
static void assert_no_scope_open(const char *what, uint64_t n) {
    int tok = tg_scope_begin();
    cr_assert_eq(tok, 1, "%s run %llu left a scope open (token %d)", what, (unsigned long long)n,
                 tok);
    cr_assert_eq(tg_scope_end(tok), TG_OK);
}

/* One run with allocation n failing (n == 0: no injection). Returns the
 * number of injected failures. */
static uint64_t run_once(const workload *w, uint64_t n, bool persistent, const result *ref,
                         result *out) {
    tg_tensor *in[MAX_IN] = {0};
    w->make(in, w->cfg);
    tgo_snap snap[MAX_IN];
    for (int i = 0; i < w->n_in; i++) {
        cr_assert_not_null(in[i]);
        snap[i] = tgo_snapshot(in[i]);
    }
    result res = {0};
    tg_clear_error();
    tg_fault_inject(n, persistent);
    tg_status st = w->run(in, w->cfg, &res);
    uint64_t fired = tg_fault_inject(0, false);
    const char *mode = persistent ? "persistent" : "once";
    if (fired == 0)
        cr_assert_eq(st, TG_OK, "%s run %llu (%s) without injected failure: %s: %s", w->name,
                     (unsigned long long)n, mode, tg_status_name(st), tg_last_error());
    if (st == TG_OK) {
        if (ref) assert_same(&res, ref, w->name, n);
    } else {
        cr_assert_eq(st, TG_ERR_NOMEM, "%s run %llu (%s): %s: %s", w->name,
                     (unsigned long long)n, mode, tg_status_name(st), tg_last_error());
        cr_assert_eq(tg_last_status(), TG_ERR_NOMEM, "%s run %llu: last status %s: %s", w->name,
                     (unsigned long long)n, tg_status_name(tg_last_status()), tg_last_error());
        cr_assert(strstr(tg_last_error(), "injected") != NULL,
                  "%s run %llu: the error kept is not the injected failure: %s", w->name,
                  (unsigned long long)n, tg_last_error());
    }
    for (int i = 0; i < w->n_in; i++) {
        tgo_assert_unchanged(&snap[i]);
        if (st != TG_OK && !w->grad_may_remain) {
            tg_tensor *g = tg_grad(in[i]);
            cr_assert_null(g, "%s run %llu: a failed run left a .grad on input %d", w->name,
                           (unsigned long long)n, i);
        }
    }
    for (int i = 0; i < w->n_in; i++) TGO_RELEASE(in[i]);
    cr_assert(tg_is_grad_enabled(), "%s run %llu left grad mode off", w->name,
              (unsigned long long)n);
    assert_no_scope_open(w->name, n);
    tg_live_counts c = tg_live();
    cr_assert(c.tensors == 0 && c.storages == 0 && c.nodes == 0,
              "%s run %llu (%s, %s): %lld tensors, %lld storages, %lld nodes still alive",
              w->name, (unsigned long long)n, mode, tg_status_name(st), (long long)c.tensors,
              (long long)c.storages, (long long)c.nodes);
    tgt_assert_nothing_live();
    if (out) *out = res;
    return fired;
}

/* The reference run, then both sweeps; asserts that each reached at least
 * min_fail allocations and that both reached the same number. */
static void sweep_both(const workload *w, uint64_t min_fail) {
    result ref;
    cr_assert_eq(run_once(w, 0, false, NULL, &ref), 0);
    cr_assert_gt(ref.n, 0);
    uint64_t count[2] = {0, 0};
    for (int p = 0; p < 2; p++) {
        for (uint64_t n = 1;; n++) {
            cr_assert_lt(n, MAX_RUNS, "%s never completed", w->name);
            if (run_once(w, n, p == 1, &ref, NULL) == 0) break;
            count[p]++;
        }
    }
    cr_log_info("%s: %llu allocations made to fail, in each mode", w->name,
                (unsigned long long)count[0]);
    cr_assert_geq(count[0], min_fail, "%s: only %llu allocations could be made to fail", w->name,
                  (unsigned long long)count[0]);
    cr_assert_eq(count[0], count[1], "%s: once %llu vs persistent %llu allocations", w->name,
                 (unsigned long long)count[0], (unsigned long long)count[1]);
}

static tg_tensor *leaf(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed, double lo,
                       double hi, bool rg) {
    return tgo_rand(dt, ndim, shape, seed, lo, hi, rg);
}

/* ---- elementwise binary ops, with broadcasting --------------------------------------------- */

static void binary_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(3, 1), 1, 0.5, 2, true);
    in[1] = leaf(TG_F64, TG_SHAPE(1, 4), 2, 0.5, 2, true);
    in[2] = leaf(TG_F64, TG_SHAPE(4), 3, -1, 1, true);
    in[3] = TGO_MAKE(TG_F64, TG_SHAPE(3, 4), 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0); /* cond */
}

static tg_status binary_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *a = in[0], *b = in[1], *c = in[2];
    tg_tensor *s = put(&B, tg_add(a, b));                          /* [3, 4] */
    tg_tensor *d = put(&B, tg_sub(s, c));                          /* [3, 4] - [4] */
    tg_tensor *m = put(&B, tg_mul(d, b));                          /* [3, 4] * [1, 4] */
    tg_tensor *q = put(&B, tg_div(m, put(&B, tg_add_scalar(put(&B, tg_mul(a, a)), 1))));
    tg_tensor *mx = put(&B, tg_maximum(q, c));
    tg_tensor *mn = put(&B, tg_minimum(mx, a));
    tg_tensor *w = put(&B, tg_where(in[3], mn, b));
    tg_tensor *loss = put(&B, tg_sum(w));
    tg_status st = finish(loss, in, 4, res);
    bag_release(&B);
    return st;
}

static const workload BINARY = {"binary", 4, binary_make, binary_run, NULL, false};

Test(fault_injection, binary_ops_with_broadcasting) { sweep_both(&BINARY, 40); }

/* ---- elementwise unary ops, dtype conversion ------------------------------------------------- */

static void unary_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(2, 3), 4, 0.5, 2, true);
}

static tg_status unary_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *x = in[0];
    tg_tensor *e = put(&B, tg_exp(put(&B, tg_scale(put(&B, tg_neg(x)), 0.5))));
    tg_tensor *l = put(&B, tg_log(put(&B, tg_add_scalar(e, 1))));
    tg_tensor *c = put(&B, tg_clamp(l, 0.2, 0.5));
    tg_tensor *f = put(&B, tg_to_dtype(put(&B, tg_to_dtype(x, TG_F32)), TG_F64));
    tg_tensor *loss = put(&B, tg_sum(put(&B, tg_add(put(&B, tg_mul(c, f)), l))));
    tg_status st = finish(loss, in, 1, res);
    bag_release(&B);
    return st;
}

static const workload UNARY = {"unary", 1, unary_make, unary_run, NULL, false};

Test(fault_injection, unary_ops_and_dtype_conversion) { sweep_both(&UNARY, 30); }

/* ---- reductions -------------------------------------------------------------------------------- */

static void reduce_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(2, 3, 4), 5, -1, 1, true);
}

static tg_status reduce_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *x = in[0];
    tg_tensor *a = put(&B, tg_sum_dim(x, 1, true));   /* [2, 1, 4] */
    tg_tensor *b = put(&B, tg_mean_dim(x, -1, true)); /* [2, 3, 1] */
    tg_tensor *c = put(&B, tg_mul(a, b));             /* [2, 3, 4] */
    tg_tensor *d = put(&B, tg_mean_dim(x, 0, false)); /* [3, 4] */
    tg_tensor *e = put(&B, tg_sum_dim(c, 0, false));  /* [3, 4] */
    tg_tensor *loss = put(&B, tg_add(put(&B, tg_mean(put(&B, tg_mul(d, e)))), put(&B, tg_sum(x))));
    tg_status st = finish(loss, in, 1, res);
    bag_release(&B);
    return st;
}

static const workload REDUCE = {"reductions", 1, reduce_make, reduce_run, NULL, false};

Test(fault_injection, reductions) { sweep_both(&REDUCE, 25); }

/* ---- batched matmul ------------------------------------------------------------------------------ */

static void matmul_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(2, 3, 4), 6, -1, 1, true);
    in[1] = leaf(TG_F64, TG_SHAPE(2, 4, 5), 7, -1, 1, true);
    in[2] = leaf(TG_F64, TG_SHAPE(5, 2), 8, -1, 1, true);
}

static tg_status matmul_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *C = put(&B, tg_matmul(in[0], in[1]));                        /* [2, 3, 5] */
    tg_tensor *D = put(&B, tg_matmul(C, in[2]));                            /* shared weight */
    tg_tensor *E = put(&B, tg_matmul(put(&B, tg_transpose(in[0], -1, -2)), D)); /* strided */
    tg_tensor *loss = put(&B, tg_sum(put(&B, tg_mul(E, E))));
    tg_status st = finish(loss, in, 3, res);
    bag_release(&B);
    return st;
}

static const workload MATMUL = {"batched matmul", 3, matmul_make, matmul_run, NULL, false};

Test(fault_injection, batched_matmul) { sweep_both(&MATMUL, 25); }

/* ---- softmax, log_softmax, gather ------------------------------------------------------------- */

static void softmax_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(3, 5), 9, -2, 2, true);
    in[1] = TGO_MAKE(TG_I64, TG_SHAPE(3, 4), 0, 4, 4, 1, 2, 2, 0, 3, 4, 1, 1, 1);
}

static tg_status softmax_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *x = in[0];
    tg_tensor *s = put(&B, tg_softmax(x)), *l = put(&B, tg_log_softmax(x));
    tg_tensor *t = put(&B, tg_softmax(put(&B, tg_transpose(x, 0, 1)))); /* strided rows */
    tg_tensor *g = put(&B, tg_gather(x, in[1]));                       /* repeated indices */
    tg_tensor *g2 = put(&B, tg_gather(l, in[1]));
    tg_tensor *loss = put(&B, tg_add(put(&B, tg_sum(put(&B, tg_mul(s, l)))),
                                     put(&B, tg_add(put(&B, tg_sum(put(&B, tg_mul(t, t)))),
                                                    put(&B, tg_sum(put(&B, tg_mul(g, g2))))))));
    tg_status st = finish(loss, in, 2, res);
    bag_release(&B);
    return st;
}

static const workload SOFTMAX = {"softmax/log_softmax/gather", 2, softmax_make, softmax_run, NULL,
                                 false};

Test(fault_injection, softmax_log_softmax_gather) { sweep_both(&SOFTMAX, 40); }

/* ---- views: slice, transpose, reshape (copy and view), view, expand, contiguous, clone ---- */

static void views_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(4, 6), 10, -1, 1, true);
}

static tg_status views_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *x = in[0];
    tg_tensor *sl = put(&B, tg_slice(x, 1, 1, 5, 2));           /* [4, 2] strided */
    tg_tensor *t = put(&B, tg_transpose(sl, 0, 1));             /* [2, 4] */
    tg_tensor *r = put(&B, tg_reshape(t, TG_SHAPE(8)));         /* a copy */
    tg_tensor *v = put(&B, tg_view(x, TG_SHAPE(6, 4)));
    tg_tensor *rv = put(&B, tg_reshape(v, TG_SHAPE(3, -1)));    /* a view */
    tg_tensor *e = put(&B, tg_expand(put(&B, tg_slice(x, 0, 0, 1, 1)), TG_SHAPE(3, 6)));
    tg_tensor *c = put(&B, tg_contiguous(t));
    tg_tensor *cl = put(&B, tg_clone(x));
    tg_tensor *loss = put(&B, tg_sum(put(&B, tg_mul(r, r))));
    loss = put(&B, tg_add(loss, put(&B, tg_sum(e))));
    loss = put(&B, tg_add(loss, put(&B, tg_sum(put(&B, tg_mul(rv, rv))))));
    loss = put(&B, tg_add(loss, put(&B, tg_sum(put(&B, tg_exp(c))))));
    loss = put(&B, tg_add(loss, put(&B, tg_mean(cl))));
    tg_status st = finish(loss, in, 1, res);
    bag_release(&B);
    return st;
}

static const workload VIEWS = {"views", 1, views_make, views_run, NULL, false};

Test(fault_injection, views_and_copies) { sweep_both(&VIEWS, 40); }

/* ---- in-place ops recorded on non-leaves ------------------------------------------------------ */

static void inplace_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(3, 4), 11, -1, 1, true);
    in[1] = leaf(TG_F64, TG_SHAPE(4), 12, -1, 1, true);
}

static tg_status inplace_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *x = in[0], *w = in[1];
    tg_status st = TG_OK, s;
#define IP(call) (s = (call), st = st == TG_OK ? s : st)
    tg_tensor *y = put(&B, tg_scale(x, 1.5));
    IP(tg_add_(y, w)); /* broadcast [4] */
    IP(tg_sub_(y, put(&B, tg_mul(w, w))));
    IP(tg_mul_(y, x)); /* saves a clone of y */
    IP(tg_scale_(y, 0.5));
    tg_tensor *z = put(&B, tg_clone(x));
    IP(tg_copy_(z, w)); /* z's history is cut: it is w broadcast */
    tg_tensor *v = put(&B, tg_add_scalar(x, 1));
    IP(tg_fill_(v, 2.0)); /* a constant now */
#undef IP
    tg_tensor *loss = put(&B, tg_add(put(&B, tg_sum(y)), put(&B, tg_sum(z))));
    loss = put(&B, tg_add(loss, put(&B, tg_sum(put(&B, tg_mul(v, x))))));
    if (st == TG_OK) {
        st = finish(loss, in, 2, res);
        if (st == TG_OK) rec_tensor(res, y);
    }
    bag_release(&B);
    return st;
}

static const workload INPLACE = {"in-place on non-leaves", 2, inplace_make, inplace_run, NULL,
                                 false};

Test(fault_injection, inplace_ops_recorded_on_non_leaves) { sweep_both(&INPLACE, 40); }

/* ---- a custom function: two outputs (one without gradient), saves its output,
 *      a view of an input and state; a second input that does not require grad -- */

static tg_status cf_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                            tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    out[0] = tg_mul(in[0], in[1]);
    out[1] = tg_exp(in[0]);
    tg_tensor *v = tg_slice(in[0], 0, 1, 3, 1);
    tg_status st = out[0] && out[1] && v ? TG_OK : tg_last_status();
    if (st == TG_OK && (tg_ctx_save(ctx, out[1]) < 0 || tg_ctx_save(ctx, v) < 0 ||
                        tg_ctx_save(ctx, in[1]) < 0))
        st = tg_last_status();
    double k = 3;
    if (st == TG_OK) st = tg_ctx_set_state(ctx, &k, sizeof k);
    tg_release(v);
    if (st != TG_OK) {
        tg_release(out[0]);
        tg_release(out[1]);
        out[0] = out[1] = NULL;
    }
    return st;
}

static tg_status cf_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                             tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    const double *k = tg_ctx_state(ctx);
    tg_tensor *e = tg_ctx_saved(ctx, 0), *v = tg_ctx_saved(ctx, 1), *b = tg_ctx_saved(ctx, 2);
    tg_status st = TG_OK;
    if (!e || !v || !b || !k) {
        st = tg_last_status();
    } else {
        /* d/dx: gout0 * b + gout1 * e, plus k * 0 * sum(v) (reads the saved view) */
        tg_tensor *p = tg_mul(gout[0], b), *q = tg_mul(gout[1], e), *sv = tg_sum(v);
        tg_tensor *z = tg_scale(sv, 0.0 * *k), *sum = tg_add(p, q);
        gin[0] = tg_add(sum, z);
        st = gin[0] ? TG_OK : tg_last_status();
        tg_release(p), tg_release(q), tg_release(sv), tg_release(z), tg_release(sum);
    }
    tg_release(e), tg_release(v), tg_release(b);
    return st;
}

static const tg_function CF = {"TwoOutBackward", cf_forward, cf_backward};

static void custom_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(4), 13, -1, 1, true);
    in[1] = leaf(TG_F64, TG_SHAPE(4), 14, -1, 1, false);
}

static tg_status custom_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *out[2] = {NULL, NULL};
    tg_status st = tg_function_apply(&CF, NULL, 2, in, 2, out);
    if (st != TG_OK) cr_assert(!out[0] && !out[1], "outputs must be NULL after a failed apply");
    put(&B, out[0]);
    put(&B, out[1]);
    /* the loss uses output 0 only: output 1's gradient is materialised as zeros */
    tg_tensor *loss = put(&B, tg_sum(out[0]));
    tg_status fst = finish(loss, in, 2, res);
    bag_release(&B);
    return st != TG_OK ? st : fst;
}

static const workload CUSTOM = {"custom function", 2, custom_make, custom_run, NULL, false};

Test(fault_injection, custom_function_two_outputs_saved_output_and_view) {
    sweep_both(&CUSTOM, 15);
}

/* ---- tg_logprob_entropy, fused and composite, chunked ---------------------------------------- */

typedef struct lp_cfg {
    tg_logprob_impl impl;
    tg_dtype dt;
    int64_t chunk;
    bool entropy_grad;
    double temperature;
    bool strided; /* logits are a column slice of a wider leaf */
} lp_cfg;

static void lp_make(tg_tensor **in, const void *cfg) {
    const lp_cfg *c = cfg;
    in[0] = leaf(c->dt, TG_SHAPE(2, 3, c->strided ? 9 : 7), 15, -2, 2, true);
    in[1] = TGO_MAKE(TG_I64, TG_SHAPE(2, 3), 3, -100, 6, 0, 2, 2); /* one ignored row */
}

static tg_status lp_run(tg_tensor *const *in, const void *cfg, result *res) {
    const lp_cfg *c = cfg;
    bag B = {0};
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = c->impl;
    o.chunk_size = c->chunk;
    o.entropy_grad = c->entropy_grad;
    o.temperature = c->temperature;
    tg_tensor *z = c->strided ? put(&B, tg_slice(in[0], -1, 1, 8, 1)) : in[0];
    tg_tensor *lp = NULL, *h = NULL;
    tg_status st = tg_logprob_entropy(z, in[1], &o, &lp, &h);
    if (st != TG_OK) {
        cr_assert(!lp && !h, "outputs must be NULL after a failure (%s)", tg_status_name(st));
    } else {
        cr_assert(lp && h);
        cr_assert_eq(tg_requires_grad(h), c->entropy_grad);
    }
    put(&B, lp);
    put(&B, h);
    tg_tensor *loss = put(&B, tg_neg(put(&B, tg_mean(lp))));
    if (c->entropy_grad) loss = put(&B, tg_add(loss, put(&B, tg_scale(put(&B, tg_mean(h)), 0.1))));
    tg_status fst = finish(loss, in, 2, res);
    if (fst == TG_OK) {
        rec_tensor(res, lp);
        rec_tensor(res, h);
    }
    bag_release(&B);
    return st != TG_OK ? st : fst;
}

static void lp_sweep(const lp_cfg *c, const char *name) {
    workload w = {name, 2, lp_make, lp_run, c, false};
    sweep_both(&w, 12);
}

Test(fault_injection, logprob_fused) {
    lp_sweep(&(lp_cfg){TG_LOGPROB_FUSED, TG_F32, 0, true, 1.0, false}, "fused f32");
    lp_sweep(&(lp_cfg){TG_LOGPROB_FUSED, TG_F64, 2, true, 0.7, true}, "fused chunked strided");
    lp_sweep(&(lp_cfg){TG_LOGPROB_FUSED, TG_F64, 4, false, 1.3, false}, "fused no entropy grad");
}

Test(fault_injection, logprob_composite) {
    lp_sweep(&(lp_cfg){TG_LOGPROB_COMPOSITE, TG_F64, 0, true, 1.0, false}, "composite");
    lp_sweep(&(lp_cfg){TG_LOGPROB_COMPOSITE, TG_F64, 0, false, 0.7, true},
             "composite no entropy grad");
}

Test(fault_injection, logprob_composite_chunked) {
    lp_sweep(&(lp_cfg){TG_LOGPROB_COMPOSITE, TG_F64, 2, true, 1.0, false}, "composite chunked");
    lp_sweep(&(lp_cfg){TG_LOGPROB_COMPOSITE, TG_F32, 4, false, 0.7, true},
             "composite chunked no entropy grad");
}

/* ---- tg_gradcheck of the fused op --------------------------------------------------------------- */

static tg_tensor *gc_lpe(tg_tensor *const *in, void *user) {
    tg_tensor *y = user, *lp = NULL, *h = NULL;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 0.8;
    if (tg_logprob_entropy(in[0], y, &o, &lp, &h) != TG_OK) return NULL;
    tg_tensor *hs = tg_scale(h, 0.5);
    tg_tensor *out = tg_add(lp, hs);
    tg_release(lp);
    tg_release(h);
    tg_release(hs);
    return out;
}

static void gc_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(2, 4), 16, -1, 1, true);
    in[1] = TGO_MAKE(TG_I64, TG_SHAPE(2), 3, 1);
}

static tg_status gc_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    tg_status st = tg_gradcheck(gc_lpe, in[1], 1, in, NULL);
    if (st == TG_OK) rec(res, 1);
    return st;
}

static const workload GRADCHECK = {"gradcheck", 2, gc_make, gc_run, NULL, false};

Test(fault_injection, gradcheck_of_the_fused_op) {
    sweep_both(&GRADCHECK, 80);
}

/* ---- nested scopes with tg_scope_keep ------------------------------------------------------------ */

static void scope_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(4), 17, -1, 1, true);
}

/* outer { inner { loss = nested expression; keep loss } backward; read grad;
 * keep loss } release loss */
static tg_status scope_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    tg_tensor *x = in[0];
    int outer = tg_scope_begin();
    if (outer < 0) return tg_last_status();
    cr_assert_eq(outer, 1);
    tg_status st = TG_OK;
    tg_tensor *kept = NULL;
    int inner = tg_scope_begin();
    if (inner < 0) {
        st = tg_last_status();
    } else {
        cr_assert_eq(inner, 2);
        tg_tensor *loss = tg_sum(tg_mul(tg_exp(tg_scale(x, 0.5)), tg_add_scalar(tg_mul(x, x), 1)));
        kept = tg_scope_keep(loss); /* to the outer scope */
        if (!kept) st = tg_last_status();
        cr_assert_eq(tg_scope_end(inner), TG_OK, "%s", tg_last_error());
    }
    if (st == TG_OK) st = tg_backward(kept, NULL, false);
    if (st == TG_OK) {
        double v;
        cr_assert_eq(tg_item(kept, &v), TG_OK);
        rec(res, v);
        tg_tensor *g = tg_grad(x); /* owned by the outer scope */
        if (!g) st = tg_last_status();
        else rec_tensor(res, g);
    }
    tg_tensor *mine = st == TG_OK ? tg_scope_keep(kept) : NULL; /* to the caller */
    if (st == TG_OK && !mine) st = tg_last_status();
    cr_assert_eq(tg_scope_end(outer), TG_OK, "%s", tg_last_error());
    if (mine) {
        double v;
        cr_assert_eq(tg_item(mine, &v), TG_OK, "the kept loss survives its scopes");
        cr_assert_eq(v, res->v[0]);
        TGO_RELEASE(mine);
    }
    return st;
}

static const workload SCOPES = {"nested scopes", 1, scope_make, scope_run, NULL, false};

Test(fault_injection, nested_scopes_with_keep) { sweep_both(&SCOPES, 20); }

/* The log-prob op called inside nested scopes (its composite chunked path
 * applies a custom function and takes the outputs back from the scope). */
static tg_status scope_lp_run(tg_tensor *const *in, const void *cfg, result *res) {
    const lp_cfg *c = cfg;
    int outer = tg_scope_begin();
    if (outer < 0) return tg_last_status();
    int inner = tg_scope_begin();
    tg_status st = inner < 0 ? tg_last_status() : TG_OK;
    tg_tensor *kept = NULL;
    if (st == TG_OK) {
        tg_logprob_opts o = tg_logprob_opts_default();
        o.impl = c->impl;
        o.chunk_size = c->chunk;
        o.entropy_grad = c->entropy_grad;
        tg_tensor *lp = NULL, *h = NULL;
        st = tg_logprob_entropy(in[0], in[1], &o, &lp, &h);
        tg_tensor *loss = tg_add(tg_neg(tg_mean(lp)), tg_scale(tg_mean(h), 0.1));
        if (st == TG_OK && !loss) st = tg_last_status();
        if (st == TG_OK && !(kept = tg_scope_keep(loss))) st = tg_last_status();
        cr_assert_eq(tg_scope_end(inner), TG_OK, "%s", tg_last_error());
    }
    g_in_scope = true;
    if (st == TG_OK) st = finish(kept, in, 2, res);
    g_in_scope = false;
    cr_assert_eq(tg_scope_end(outer), TG_OK, "%s", tg_last_error());
    return st;
}

Test(fault_injection, logprob_inside_nested_scopes) {
    static const lp_cfg cfgs[] = {
        {TG_LOGPROB_FUSED, TG_F64, 2, true, 1.0, false},
        {TG_LOGPROB_COMPOSITE, TG_F64, 0, true, 1.0, false},
        {TG_LOGPROB_COMPOSITE, TG_F64, 2, true, 1.0, false},
        {TG_LOGPROB_COMPOSITE, TG_F64, 2, false, 1.0, false},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        workload w = {"logprob in nested scopes", 2, lp_make, scope_lp_run, &cfgs[i], false};
        sweep_both(&w, 20);
    }
}

/* Without injection: a successful call inside one scope leaves no error
 * behind (a stale error would be kept, by NULL propagation, in place of a
 * later failure's TG_ERR_NOMEM). */
Test(fault_injection, logprob_in_a_scope_leaves_no_stale_error) {
    static const lp_cfg cfgs[] = {
        {TG_LOGPROB_FUSED, TG_F64, 2, false, 1.0, false},
        {TG_LOGPROB_COMPOSITE, TG_F64, 0, false, 1.0, false},
        {TG_LOGPROB_COMPOSITE, TG_F64, 2, true, 1.0, false},
        {TG_LOGPROB_COMPOSITE, TG_F64, 2, false, 1.0, false},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        tg_tensor *in[2];
        lp_make(in, &cfgs[i]);
        tg_logprob_opts o = tg_logprob_opts_default();
        o.impl = cfgs[i].impl;
        o.chunk_size = cfgs[i].chunk;
        o.entropy_grad = cfgs[i].entropy_grad;
        int tok = tg_scope_begin();
        tg_clear_error();
        tg_tensor *lp = NULL, *h = NULL;
        cr_assert_eq(tg_logprob_entropy(in[0], in[1], &o, &lp, &h), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_last_status(), TG_OK, "config %zu: a successful call left %s: %s", i,
                     tg_status_name(tg_last_status()), tg_last_error());
        cr_assert_eq(tg_scope_end(tok), TG_OK);
        TGO_RELEASE(in[0], in[1]);
    }
}

/* ---- backward with an explicit gradient and retain_graph ------------------------------------ */

static void engine_make(tg_tensor **in, const void *cfg) {
    (void)cfg;
    in[0] = leaf(TG_F64, TG_SHAPE(3), 18, -1, 1, true);
    in[1] = TGO_MAKE(TG_F64, TG_SHAPE(3), 0.5, -1, 2); /* upstream gradient */
}

static tg_status engine_run(tg_tensor *const *in, const void *cfg, result *res) {
    (void)cfg;
    bag B = {0};
    tg_tensor *y = put(&B, tg_exp(put(&B, tg_mul(in[0], in[0]))));
    tg_status st = y ? tg_backward(y, in[1], true) : tg_last_status();
    double first[3] = {0};
    if (st == TG_OK) {
        tg_tensor *g = tg_grad(in[0]);
        cr_assert_not_null(g);
        cr_assert_eq(tg_copy_out(g, TG_F64, first, sizeof first), TG_OK);
        TGO_RELEASE(g);
        st = tg_backward(y, in[1], false);
        if (st != TG_OK) { /* the first gradient is left as it was */
            tg_tensor *g2 = tg_grad(in[0]);
            cr_assert_not_null(g2);
            tgo_assert_close(g2, first, 3, 0);
            TGO_RELEASE(g2);
        }
    } else {
        tg_tensor *g = tg_grad(in[0]);
        cr_assert_null(g, "a failed first backward wrote .grad");
    }
    if (st == TG_OK) {
        rec_grads(res, in, 2);
        tg_status again = tg_backward(y, in[1], false);
        /* (still under injection: it may fail to allocate before it finds out) */
        cr_assert(again == TG_ERR_FREED || again == TG_ERR_NOMEM, "%s: %s",
                  tg_status_name(again), tg_last_error());
        tg_clear_error();
    }
    bag_release(&B);
    return st;
}

static const workload ENGINE = {"backward with grad, retain_graph", 2, engine_make, engine_run,
                                NULL, true};

Test(fault_injection, backward_with_explicit_grad_and_retain_graph) { sweep_both(&ENGINE, 12); }

/* ---- the leak scan itself -------------------------------------------------------------------- */

/* A retained loss of an earlier step (6 nodes, kept for logging) plus a
 * current-step graph. */
static void scan_setup(tg_tensor **kept, tg_tensor **x) {
    *x = leaf(TG_F32, TG_SHAPE(4, 16), 19, -1, 1, true);
    tg_tensor *y = TGO_MAKE(TG_I64, TG_SHAPE(4), 1, 5, 9, 15), *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(*x, y, NULL, &lp, &h), TG_OK);
    tg_tensor *a = tg_mean(lp), *na = tg_neg(a), *b = tg_mean(h), *sb = tg_scale(b, 0.01);
    *kept = tg_add(na, sb);
    tg_set_name(*kept, "losses[0]");
    cr_assert_eq(tg_backward(*kept, NULL, false), TG_OK);
    TGO_RELEASE(y, lp, h, a, na, b, sb);
    tg_step_mark("mb0");
}

static void scan_sweep(bool persistent) {
    tg_tensor *kept, *x;
    scan_setup(&kept, &x);
    tg_live_counts before = tg_live();
    tg_mem_stats m0;
    tg_mem_get(TG_CPU, &m0);
    uint64_t failing = 0;
    for (uint64_t n = 1;; n++) {
        cr_assert_lt(n, MAX_RUNS);
        tg_clear_error();
        tg_fault_inject(n, persistent);
        tg_leak_report *r = tg_leak_scan();
        uint64_t fired = tg_fault_inject(0, false);
        if (!r) {
            cr_assert_gt(fired, 0, "run %llu: NULL without an injected failure: %s",
                         (unsigned long long)n, tg_last_error());
            tgt_assert_error(TG_ERR_NOMEM, "injected", NULL);
        } else {
            cr_assert_eq(tg_leak_report_nroots(r), 1);
            const tg_leak_root *q = tg_leak_report_root(r, 0);
            cr_assert_str_eq(q->name, "losses[0]");
            cr_assert_eq(q->nodes, 6);
            cr_assert_eq(q->bytes, 4, "the logits are held by the program");
            cr_assert_eq(tg_leak_report_unreachable(r), 0);
            tg_leak_report_free(r);
        }
        tg_live_counts c = tg_live();
        cr_assert(c.tensors == before.tensors && c.storages == before.storages &&
                  c.nodes == before.nodes, "run %llu: the scan changed the live objects",
                  (unsigned long long)n);
        tg_mem_stats m;
        tg_mem_get(TG_CPU, &m);
        cr_assert_eq(m.live_total, m0.live_total);
        /* the assertion API: TG_ERR_LEAK, or TG_ERR_NOMEM when its scan failed */
        tg_clear_error();
        tg_fault_inject(n, persistent);
        tg_status st = tg_leak_check();
        uint64_t fired2 = tg_fault_inject(0, false);
        cr_assert(st == TG_ERR_LEAK || (st == TG_ERR_NOMEM && fired2 > 0), "run %llu: %s: %s",
                  (unsigned long long)n, tg_status_name(st),
                  st == TG_ERR_LEAK ? tg_leak_check_report() : tg_last_error());
        cr_assert_eq(fired > 0, fired2 > 0, "the check and the scan allocate alike");
        if (fired == 0) break;
        failing++;
    }
    cr_log_info("leak scan (%s): %llu allocations made to fail", persistent ? "persistent" : "once",
                (unsigned long long)failing);
    cr_assert_geq(failing, 10, "only %llu allocations of the scan could be made to fail",
                  (unsigned long long)failing);
    TGO_RELEASE(kept, x);
    tgt_assert_nothing_live();
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
}

Test(fault_injection, leak_scan_and_check) {
    scan_sweep(false);
    scan_sweep(true);
}
