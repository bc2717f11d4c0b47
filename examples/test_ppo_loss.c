/* examples/test_ppo_loss.c - Criterion tests for the PPO loss of ppo_loss.c,
 * written as a template for the tests of your own losses and training steps.
 *
 * Each group below is a pattern to copy:
 *   value       the loss against a plain C computation of the same formula;
 *   in-place    a training step raises no in-place error (backward returns
 *               TG_OK), and a buggy step that edits a saved tensor in place is
 *               caught: TG_ERR_INPLACE, the message naming the in-place ops;
 *   leak        no graph outlives its step (tg_step_mark, then
 *               TG_ASSERT_NO_LEAKED_GRAPH), and a step that keeps its loss for
 *               logging is caught: TG_ERR_LEAK, the message naming the root;
 *   memory      entropy_coef = 0 saves nothing for the entropy: exactly 8
 *               bytes per row less than entropy_coef != 0 (exact byte counts
 *               from tg_mem_get), and evaluation under no-grad saves nothing;
 *   gradcheck   the analytical gradient against central differences (f64);
 *   errors      bad inputs give NULL, the first error, and leak nothing, even
 *               when any allocation fails.
 * The fixture checks after every test that every tensor, storage and graph
 * node was released. Only the public API (tapegrad.h) is used.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "ppo_loss.h"

/* ---- fixture: every test must release everything it made ------------------ */

static void setup(void) {
    tg_clear_error();
}

/* Criterion does not count failed assertions in .fini: a leak aborts the test
 * process instead, after tg_shutdown has listed what is still alive and where
 * it was created. */
static void teardown(void) {
    tg_fault_inject(0, false);
    /* a failed assertion skips the test's tg_scope_end: close what it left
     * open, so that the failure is not reported again as a leak */
    tg_scope_unwind(0);
    if (tg_shutdown(stderr) != 0) {
        fprintf(stderr, "test left tapegrad objects alive\n");
        abort();
    }
}

TestSuite(ppo, .init = setup, .fini = teardown);

/* Asserts the last error is st and its message contains each string given
 * (NULL-terminated list). */
static void assert_error(tg_status st, const char *const *subs) {
    cr_assert_eq(tg_last_status(), st, "expected %s, got %s: %s", tg_status_name(st),
                 tg_status_name(tg_last_status()), tg_last_error());
    for (; *subs; subs++)
        cr_assert(strstr(tg_last_error(), *subs), "message lacks \"%s\": %s", *subs,
                  tg_last_error());
}
#define ASSERT_ERROR(st, ...) assert_error(st, (const char *const[]){__VA_ARGS__, NULL})

/* ---- a seeded batch --------------------------------------------------------- */

#define IGNORE (-100)

/* Logits (B, T, V) requiring grad (named "logits"); the last token of every
 * odd sequence is padding; old and reference log-probs are the current ones
 * perturbed (so that some ratios are clipped), advantages are N(0, 1).
 * The tensors belong to the caller's scope. */
static ppo_batch make_batch(tg_dtype dt, int64_t B, int64_t T, int64_t V, uint64_t seed) {
    ppo_batch b;
    int64_t *y = malloc((size_t)(B * T) * sizeof *y);
    cr_assert_not_null(y);
    uint64_t s = seed * 7919u + 1;
    for (int64_t i = 0; i < B * T; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const bool pad = (i / T) % 2 == 1 && i % T == T - 1;
        y[i] = pad ? IGNORE : (int64_t)((s >> 33) % (uint64_t)V);
    }
    b.targets = tg_set_name(tg_from_data(TG_I64, TG_SHAPE(B, T), y), "targets");
    free(y);
    b.logits = tg_set_name(tg_randn(dt, TG_SHAPE(B, T, V), seed, 0.0, 1.0), "logits");
    b.advantages = tg_randn(dt, TG_SHAPE(B, T), seed + 1, 0.0, 1.0);
    tg_tensor *lp = NULL;
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.ignore_index = IGNORE;
    lo.want_entropy = false;
    tg_logprob_entropy(b.logits, b.targets, &lo, &lp, NULL);
    b.old_logprob = tg_add(lp, tg_randn(dt, TG_SHAPE(B, T), seed + 2, 0.0, 0.3));
    b.ref_logprob = tg_add(lp, tg_randn(dt, TG_SHAPE(B, T), seed + 3, 0.0, 0.2));
    cr_assert_not_null(b.old_logprob, "%s", tg_last_error());
    cr_assert_not_null(b.ref_logprob, "%s", tg_last_error());
    cr_assert_eq(tg_set_requires_grad(b.logits, true), TG_OK);
    return b;
}

static ppo_loss_opts opts_with(double entropy_coef, double kl_coef) {
    ppo_loss_opts o = ppo_loss_opts_default();
    o.entropy_coef = entropy_coef;
    o.kl_coef = kl_coef;
    o.ignore_index = IGNORE;
    return o;
}

/* A plain SGD step on the logits: the update is in place, so it runs under
 * no-grad (it is not part of any graph), after backward. */
static void sgd_update(tg_tensor *logits, double lr) {
    tg_status st = TG_OK;
    TG_NO_GRAD { st = tg_sub_(logits, tg_scale(tg_grad(logits), lr)); }
    cr_assert_eq(st, TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_zero_grad(logits), TG_OK);
}

static double *copy_f64(const tg_tensor *t) {
    double *p = malloc((size_t)tg_numel(t) * sizeof *p);
    cr_assert_not_null(p);
    cr_assert_eq(tg_copy_out(t, TG_F64, p, (size_t)tg_numel(t) * sizeof *p), TG_OK);
    return p;
}

/* ---- value: the loss against plain C -------------------------------------------- */

Test(ppo, loss_and_metrics_match_a_plain_c_computation) {
    const int sc = tg_scope_begin();
    enum { B = 3, T = 5, V = 7 };
    ppo_batch b = make_batch(TG_F64, B, T, V, 11);
    const ppo_loss_opts o = opts_with(0.05, 0.1);
    ppo_metrics m;
    tg_tensor *loss = ppo_loss(&b, &o, &m);
    cr_assert_not_null(loss, "%s", tg_last_error());
    cr_assert_eq(tg_ndim(loss), 0);
    cr_assert(tg_requires_grad(loss));

    double *z = copy_f64(b.logits), *old = copy_f64(b.old_logprob);
    double *ref = copy_f64(b.ref_logprob), *adv = copy_f64(b.advantages);
    int64_t y[B * T];
    cr_assert_eq(tg_copy_out(b.targets, TG_I64, y, sizeof y), TG_OK);
    double s_sum = 0, h_sum = 0, kl_sum = 0, r_sum = 0, clipped = 0;
    int n = 0;
    for (int r = 0; r < B * T; r++) {
        if (y[r] == IGNORE) continue;
        const double *x = z + r * V;
        double mx = x[0], se = 0, sx = 0;
        for (int v = 1; v < V; v++) mx = fmax(mx, x[v]);
        for (int v = 0; v < V; v++) se += exp(x[v] - mx);
        const double lse = mx + log(se);
        for (int v = 0; v < V; v++) sx += exp(x[v] - lse) * x[v];
        const double lp = x[y[r]] - lse, ratio = exp(lp - old[r]);
        const double rc = fmin(fmax(ratio, 1 - o.clip_eps), 1 + o.clip_eps);
        const double d = ref[r] - lp;
        s_sum += fmin(ratio * adv[r], rc * adv[r]);
        h_sum += lse - sx;
        kl_sum += exp(d) - d - 1;
        r_sum += ratio;
        clipped += rc != ratio;
        n++;
    }
    const double want = -s_sum / n - o.entropy_coef * h_sum / n + o.kl_coef * kl_sum / n;
    cr_assert_eq(m.n_valid, n);
    cr_assert_eq(n, B * T - 1, "one padded token (sequence 1)");
    cr_assert_float_eq(m.loss, want, 1e-12, "loss %.15g, want %.15g", m.loss, want);
    double value;
    cr_assert_eq(tg_item(loss, &value), TG_OK);
    cr_assert_eq(value, m.loss);
    cr_assert_float_eq(m.policy_loss, -s_sum / n, 1e-12);
    cr_assert_float_eq(m.entropy, h_sum / n, 1e-12);
    cr_assert_float_eq(m.kl, kl_sum / n, 1e-12);
    cr_assert_float_eq(m.ratio_mean, r_sum / n, 1e-12);
    cr_assert_float_eq(m.clip_frac, clipped / n, 1e-12);
    cr_assert(m.clip_frac > 0 && m.clip_frac < 1, "both branches of the clip are exercised");
    free(z), free(old), free(ref), free(adv);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- in-place: a step raises no in-place error; a buggy one is caught ------ */

Test(ppo, training_step_raises_no_inplace_error) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 16, 64, 1);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    for (int step = 0; step < 3; step++) {
        const int step_sc = tg_scope_begin();
        tg_tensor *loss = ppo_loss(&b, &o, NULL);
        cr_assert_not_null(loss, "%s", tg_last_error());
        /* the assertion: TG_OK, else the message says which op broke what */
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *g = tg_grad(b.logits);
        cr_assert_not_null(g);
        double gsum = 0;
        cr_assert_eq(tg_item(tg_sum(tg_mul(g, g)), &gsum), TG_OK);
        cr_assert(isfinite(gsum) && gsum > 0, "gradient norm^2 %g", gsum);
        sgd_update(b.logits, 10.0); /* after backward: fine */
        cr_assert_eq(tg_scope_end(step_sc), TG_OK);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* The bug of "story 2": the logits are shifted for stability in place and
 * shifted back (sub_ then add_) between forward and backward. The values are
 * restored, but the fused op saved the logits at an earlier version. */
Test(ppo, modify_then_restore_of_saved_logits_is_caught) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 8, 32, 2);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    tg_tensor *loss = ppo_loss(&b, &o, NULL);
    cr_assert_not_null(loss, "%s", tg_last_error());
    tg_tensor *shift = tg_full(TG_F32, TG_SCALAR, 3.0);
    tg_status st1 = TG_OK, st2 = TG_OK;
    TG_NO_GRAD {
        st1 = tg_sub_(b.logits, shift); /* BUG: modifies a saved tensor */
        st2 = tg_add_(b.logits, shift);
    }
    cr_assert_eq(st1, TG_OK);
    cr_assert_eq(st2, TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    ASSERT_ERROR(TG_ERR_INPLACE, "'logits'", "LogprobEntropyBackward", "sub_ at ", "add_ at ",
                 "test_ppo_loss.c:");
    cr_assert_null(tg_grad(b.logits), "a failed backward changes no .grad");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Gradient accumulation with the optimizer step in the wrong place: the
 * update of microbatch 1 runs before the backward of microbatch 2, whose
 * graph saved the logits. */
Test(ppo, optimizer_step_before_backward_is_caught) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 8, 32, 3);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    tg_tensor *loss1 = ppo_loss(&b, &o, NULL);
    cr_assert_eq(tg_backward(loss1, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *loss2 = ppo_loss(&b, &o, NULL);
    cr_assert_not_null(loss2, "%s", tg_last_error());
    sgd_update(b.logits, 1.0);                         /* BUG: before loss2's backward */
    cr_assert_eq(tg_backward(loss2, NULL, false), TG_ERR_INPLACE);
    ASSERT_ERROR(TG_ERR_INPLACE, "'logits'", "LogprobEntropyBackward", "sub_ at ",
                 "test_ppo_loss.c:");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- leak: no graph outlives its step; keeping the loss is caught ----------- */

Test(ppo, no_graph_outlives_a_step) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 16, 64, 4);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    double logged[4];              /* the fix of story 3: log plain numbers... */
    tg_tensor *logged_detached[4]; /* ...or detached tensors */
    for (int step = 0; step < 4; step++) {
        const int step_sc = tg_scope_begin();
        ppo_metrics m;
        tg_tensor *loss = ppo_loss(&b, &o, &m);
        cr_assert_not_null(loss, "%s", tg_last_error());
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        sgd_update(b.logits, 10.0);
        logged[step] = m.loss;
        logged_detached[step] = tg_scope_keep(tg_detach(loss)); /* to the test's scope */
        cr_assert_eq(tg_scope_end(step_sc), TG_OK);
        tg_step_mark("ppo step");
        TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail); /* the assertion */
    }
    cr_assert(logged[3] < logged[0], "the loss goes down: %g -> %g", logged[0], logged[3]);
    double v;
    cr_assert_eq(tg_item(logged_detached[3], &v), TG_OK);
    cr_assert_eq(v, logged[3]);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* The bug of "story 3": losses kept for logging, with their graphs. */
Test(ppo, keeping_the_loss_for_logging_is_caught) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 16, 64, 5);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    tg_tensor *losses[3];
    for (int step = 0; step < 3; step++) {
        const int step_sc = tg_scope_begin();
        tg_tensor *loss = ppo_loss(&b, &o, NULL);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        sgd_update(b.logits, 10.0);
        char name[16];
        snprintf(name, sizeof name, "losses[%d]", step);
        losses[step] = tg_scope_keep(tg_set_name(loss, name)); /* BUG: not detached */
        cr_assert_eq(tg_scope_end(step_sc), TG_OK);
        tg_step_mark("ppo step");
    }
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    /* the report names each root and the loss's own node, and says the fix */
    const char *want[] = {"root \"losses[0]\" (f32 []) -> AddBackward", "losses[1]", "losses[2]",
                          "examples/ppo_loss.c:", "tg_detach"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(tg_leak_check_report(), want[i]), "report lacks \"%s\": %s", want[i],
                  tg_leak_check_report());
    cr_assert_eq(tg_last_status(), TG_OK, "a leak found on purpose leaves no error behind");

    /* The same check, as a report a program can read. */
    tg_leak_report *r = tg_leak_scan();
    cr_assert_not_null(r);
    cr_assert_eq(tg_leak_report_nroots(r), 3);
    for (int64_t i = 0; i < 3; i++) {
        const tg_leak_root *root = tg_leak_report_root(r, i);
        cr_assert(strncmp(root->name, "losses[", 7) == 0, "root %s", root->name);
        cr_assert_gt(root->nodes, 0);
        cr_assert_eq(root->nodes_with_saved, 0, "backward ran: only the node chain is kept");
    }
    tg_leak_report_free(r);
    cr_assert_str_eq(tg_grad_fn_name(losses[0]), "AddBackward");
    cr_assert_eq(tg_scope_end(sc), TG_OK); /* releases the losses: no leak now */
    TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail);
}

/* ---- memory: entropy_coef = 0 saves nothing for the entropy ------------------- */

/* Bytes held by saved tensors after building the loss (released again). */
static size_t saved_after_forward(const ppo_batch *b, double entropy_coef, double kl_coef) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    cr_assert_eq(m.saved, 0, "no graph alive before");
    cr_assert_eq(tg_mem_reset_peak(TG_CPU), TG_OK);
    const int sc = tg_scope_begin();
    const ppo_loss_opts o = opts_with(entropy_coef, kl_coef);
    cr_assert_not_null(ppo_loss(b, &o, NULL), "%s", tg_last_error());
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    const size_t saved = m.saved;
    /* a term with coefficient 0 must not even be recorded for a while */
    cr_assert_eq(m.saved_peak, saved, "entropy_coef %g, kl_coef %g: %zu bytes saved at peak, "
                 "%zu after forward", entropy_coef, kl_coef, m.saved_peak, saved);
    cr_assert_eq(tg_scope_end(sc), TG_OK); /* the loss and its graph go */
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    cr_assert_eq(m.saved, 0, "nothing saved once the loss is released");
    return saved;
}

/* Bytes the fused op alone saves, for the given entropy options. */
static size_t saved_by_logprob(const ppo_batch *b, bool want_entropy, bool entropy_grad) {
    const int sc = tg_scope_begin();
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.ignore_index = IGNORE;
    lo.want_entropy = want_entropy;
    lo.entropy_grad = entropy_grad;
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(b->logits, b->targets, &lo, &lp, &h), TG_OK);
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    return m.saved;
}

Test(ppo, entropy_coef_zero_saves_no_entropy_state) {
    const int sc = tg_scope_begin();
    enum { B = 4, T = 32, V = 1000 };
    ppo_batch b = make_batch(TG_F32, B, T, V, 6);
    const size_t rows = B * T; /* padding rows included: the op saves per row */

    /* the fused op: 16 bytes per row for log-probs, 24 with the entropy's gradient */
    const size_t lp_only = saved_by_logprob(&b, false, false);
    const size_t logits_bytes = rows * V * sizeof(float), targets_bytes = rows * sizeof(int64_t);
    cr_assert_eq(lp_only, logits_bytes + targets_bytes + 16 * rows, "saved %zu", lp_only);
    cr_assert_eq(saved_by_logprob(&b, true, false), lp_only,
                 "computing the entropy without its gradient saves nothing more");
    cr_assert_eq(saved_by_logprob(&b, true, true), lp_only + 8 * rows);

    /* the loss: the difference is exactly the entropy's 8 bytes per row */
    const size_t off = saved_after_forward(&b, 0.0, 0.05);
    const size_t on = saved_after_forward(&b, 0.01, 0.05);
    cr_log_info("saved after forward: entropy_coef 0: %zu B, 0.01: %zu B (%zu rows)", off, on,
                rows);
    cr_assert_eq(on - off, 8 * rows, "saved %zu with the entropy bonus, %zu without", on, off);
    cr_assert_gt(off, lp_only, "the rest of the loss saves its own activations");
    cr_assert_lt(saved_after_forward(&b, 0.0, 0.0), off, "the KL term saves activations");

    /* evaluation (no-grad): nothing recorded, nothing saved, same value */
    ppo_metrics m_train, m_eval;
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    tg_tensor *train = ppo_loss(&b, &o, &m_train);
    tg_mem_stats before, after;
    tg_tensor *eval = NULL;
    tg_mem_get(TG_CPU, &before);
    TG_NO_GRAD { eval = ppo_loss(&b, &o, &m_eval); }
    tg_mem_get(TG_CPU, &after);
    cr_assert_not_null(train);
    cr_assert_not_null(eval, "%s", tg_last_error());
    cr_assert_eq(after.saved, before.saved, "no-grad saves nothing");
    cr_assert_null(tg_grad_fn_name(eval));
    cr_assert_eq(m_eval.loss, m_train.loss);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- gradcheck: analytical vs numerical gradient, f64 ----------------------- */

typedef struct gc_user {
    ppo_batch batch;
    ppo_loss_opts opts;
} gc_user;

/* The function under test: a new reference, nothing else kept. */
static tg_tensor *loss_of_logits(tg_tensor *const *inputs, void *user) {
    gc_user *u = user;
    ppo_batch b = u->batch;
    b.logits = inputs[0];
    return ppo_loss(&b, &u->opts, NULL);
}

static void gradcheck_with(double entropy_coef, double kl_coef) {
    const int sc = tg_scope_begin();
    gc_user u;
    u.batch = make_batch(TG_F64, 2, 3, 5, 7);
    /* large coefficients, so that every term weighs in the gradient */
    u.opts = opts_with(entropy_coef, kl_coef);
    ppo_metrics m;
    cr_assert_not_null(ppo_loss(&u.batch, &u.opts, &m), "%s", tg_last_error());
    cr_assert(m.clip_frac > 0 && m.clip_frac < 1, "clip_frac %g: both branches", m.clip_frac);
    cr_assert_eq(tg_gradcheck(loss_of_logits, &u, 1, &u.batch.logits, NULL), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(ppo, gradcheck_f64_all_terms) { gradcheck_with(0.3, 0.5); }
Test(ppo, gradcheck_f64_entropy_coef_zero) { gradcheck_with(0.0, 0.5); }
Test(ppo, gradcheck_f64_policy_only) { gradcheck_with(0.0, 0.0); }

/* ---- errors: NULL, the first error, nothing leaked ------------------------------ */

Test(ppo, padding_values_are_ignored) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F64, 2, 4, 6, 8); /* position (1, 3) is padding */
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    ppo_metrics m0, m1;
    tg_tensor *l0 = ppo_loss(&b, &o, &m0);
    cr_assert_eq(tg_backward(l0, NULL, false), TG_OK, "%s", tg_last_error());
    double *g0 = copy_f64(tg_grad(b.logits));
    tg_zero_grad(b.logits);
    /* garbage at the padding position of every per-token input */
    tg_tensor *pad = tg_slice(tg_slice(b.old_logprob, 0, 1, 2, 1), 1, 3, 4, 1);
    cr_assert_eq(tg_fill_(pad, NAN), TG_OK);
    cr_assert_eq(tg_fill_(tg_slice(tg_slice(b.ref_logprob, 0, 1, 2, 1), 1, 3, 4, 1), 1e300), TG_OK);
    cr_assert_eq(tg_fill_(tg_slice(tg_slice(b.advantages, 0, 1, 2, 1), 1, 3, 4, 1), INFINITY),
                 TG_OK);
    tg_tensor *l1 = ppo_loss(&b, &o, &m1);
    cr_assert_eq(tg_backward(l1, NULL, false), TG_OK, "%s", tg_last_error());
    double *g1 = copy_f64(tg_grad(b.logits));
    cr_assert_eq(m1.loss, m0.loss);
    for (int64_t i = 0; i < tg_numel(b.logits); i++)
        cr_assert_eq(g1[i], g0[i], "gradient %lld: %g vs %g", (long long)i, g1[i], g0[i]);
    free(g0), free(g1);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(ppo, all_padding_gives_a_zero_loss_and_a_zero_gradient) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F64, 2, 3, 5, 12);
    b.targets = tg_full(TG_I64, TG_SHAPE(2, 3), IGNORE);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    ppo_metrics m;
    tg_tensor *loss = ppo_loss(&b, &o, &m);
    cr_assert_not_null(loss, "%s", tg_last_error());
    cr_assert_eq(m.n_valid, 0);
    cr_assert_eq(m.loss, 0.0);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    double *g = copy_f64(tg_grad(b.logits));
    for (int64_t i = 0; i < tg_numel(b.logits); i++) cr_assert_eq(g[i], 0.0);
    free(g);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(ppo, bad_inputs_give_null_and_the_first_error) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 4, 6, 9);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    const tg_live_counts before = tg_live();
    ppo_metrics m;

    /* a target outside [0, V): the fused op names the row */
    ppo_batch bad = b;
    bad.targets = tg_full(TG_I64, TG_SHAPE(2, 4), 6.0);
    const tg_live_counts with_bad = tg_live();
    cr_assert_null(ppo_loss(&bad, &o, &m));
    ASSERT_ERROR(TG_ERR_VALUE, "row", "6");
    cr_assert(isnan(m.loss) && m.n_valid == 0, "metrics are NaN on failure");
    tg_live_counts now = tg_live();
    cr_assert(now.tensors == with_bad.tensors && now.nodes == with_bad.nodes, "nothing leaked");

    /* a NULL input made by a failed call: that call's error is kept */
    tg_clear_error();
    bad = b;
    bad.advantages = tg_slice(b.advantages, 5, 0, 1, 1); /* no dim 5: NULL, TG_ERR_DIM */
    cr_assert_null(ppo_loss(&bad, &o, NULL));
    cr_assert_eq(tg_last_status(), TG_ERR_DIM, "%s", tg_last_error());

    /* shapes and coefficients are checked, with messages that say what is wrong */
    tg_clear_error();
    bad = b;
    bad.advantages = tg_slice(b.advantages, 1, 0, 1, 1); /* (2, 1): would broadcast */
    cr_assert_null(ppo_loss(&bad, &o, NULL));
    ASSERT_ERROR(TG_ERR_SHAPE, "advantages", "[2, 1]");
    tg_clear_error();
    ppo_loss_opts wrong = o;
    wrong.clip_eps = 1.5;
    cr_assert_null(ppo_loss(&b, &wrong, NULL));
    ASSERT_ERROR(TG_ERR_VALUE, "clip_eps");
    tg_clear_error();
    cr_assert_null(ppo_loss(NULL, &o, NULL));
    ASSERT_ERROR(TG_ERR_NULL, "batch");

    /* the good batch still works, and the failures above left nothing behind */
    tg_clear_error();
    tg_tensor *loss = ppo_loss(&b, &o, &m);
    cr_assert_not_null(loss, "%s", tg_last_error());
    cr_assert(isfinite(m.loss));
    now = tg_live();
    cr_assert_gt(now.nodes, before.nodes, "the good loss has a graph");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* SQLite's method: make the 1st, 2nd, ... allocation of ppo_loss + backward
 * fail. Every run must fail cleanly (NULL or an error status) or succeed, and
 * leave no object behind. */
Test(ppo, any_allocation_failure_is_reported_and_leaks_nothing) {
    const int sc = tg_scope_begin();
    ppo_batch b = make_batch(TG_F32, 2, 4, 6, 10);
    const ppo_loss_opts o = opts_with(0.01, 0.05);
    const tg_live_counts base = tg_live();
    int failures = 0;
    for (uint64_t n = 1; n < 1000; n++) {
        tg_clear_error();
        const int step_sc = tg_scope_begin();
        tg_fault_inject(n, false);
        tg_tensor *loss = ppo_loss(&b, &o, NULL);
        const tg_status st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
        const uint64_t fired = tg_fault_inject(0, false);
        cr_assert(st == TG_OK || fired > 0, "n = %llu: %s without an injected failure: %s",
                  (unsigned long long)n, tg_status_name(st), tg_last_error());
        cr_assert(fired == 0 || st != TG_OK || tg_grad(b.logits) != NULL);
        tg_zero_grad(b.logits);
        cr_assert_eq(tg_scope_end(step_sc), TG_OK);
        const tg_live_counts now = tg_live();
        cr_assert(now.tensors == base.tensors && now.storages == base.storages &&
                      now.nodes == base.nodes,
                  "n = %llu: %lld tensors, %lld storages, %lld nodes alive (base %lld, %lld, %lld)",
                  (unsigned long long)n, (long long)now.tensors, (long long)now.storages,
                  (long long)now.nodes, (long long)base.tensors, (long long)base.storages,
                  (long long)base.nodes);
        if (fired == 0) break; /* past the last allocation: done */
        failures++;
    }
    cr_assert_gt(failures, 10, "the injection reached ppo_loss");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- on a CUDA device ------------------------------------------------------------ */

/* The same loss, unchanged, on a batch moved to the GPU: its 0-d CPU constants
 * (zero, one) meet the device tensors as CPU scalars. Loss, metrics and the
 * logits' gradient match the CPU run. Reported SKIPPED without a device. */
Test(ppo, runs_on_a_cuda_device_like_on_the_cpu) {
    if (tg_cuda_device_count() == 0)
        cr_skip_test("no CUDA device: %s", tg_cuda_unavailable_reason());
    for (int d = 0; d < 2; d++) {
        const tg_dtype dt = d ? TG_F64 : TG_F32;
        const int sc = tg_scope_begin();
        ppo_batch b = make_batch(dt, 2, 6, 40, 31);
        ppo_batch g = b;
        g.logits = tg_to_device(tg_detach(b.logits), TG_CUDA);
        g.old_logprob = tg_to_device(b.old_logprob, TG_CUDA);
        g.ref_logprob = tg_to_device(b.ref_logprob, TG_CUDA);
        g.advantages = tg_to_device(b.advantages, TG_CUDA);
        g.targets = tg_to_device(b.targets, TG_CUDA);
        cr_assert_eq(tg_set_requires_grad(g.logits, true), TG_OK, "%s", tg_last_error());
        ppo_loss_opts o = opts_with(0.01, 0.05);
        ppo_metrics mc, mg;
        tg_tensor *lc = ppo_loss(&b, &o, &mc), *lg = ppo_loss(&g, &o, &mg);
        cr_assert_not_null(lg, "%s", tg_last_error());
        cr_assert_eq(tg_get_device(lg), TG_CUDA);
        const double tol = d ? 1e-12 : 1e-5;
        cr_assert_float_eq(mg.loss, mc.loss, tol * (1 + fabs(mc.loss)));
        cr_assert_float_eq(mg.entropy, mc.entropy, tol * (1 + fabs(mc.entropy)));
        cr_assert_float_eq(mg.kl, mc.kl, tol * (1 + fabs(mc.kl)));
        cr_assert_eq(mg.clip_frac, mc.clip_frac);
        cr_assert_eq(mg.n_valid, mc.n_valid);
        cr_assert_eq(tg_backward(lc, NULL, false), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_backward(lg, NULL, false), TG_OK, "%s", tg_last_error());
        double *gc = copy_f64(tg_grad(b.logits)), *gg = copy_f64(tg_grad(g.logits));
        for (int64_t i = 0; i < tg_numel(b.logits); i++)
            cr_assert(fabs(gc[i] - gg[i]) <= tol * (fabs(gc[i]) + 1e-3), "grad[%lld]: %g vs %g",
                      (long long)i, gc[i], gg[i]);
        free(gc);
        free(gg);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}
