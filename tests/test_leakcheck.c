/* tests/test_leakcheck.c - the leak checker (leakcheck.h): graphs kept alive
 * by references the program forgot (the "losses kept for logging" story),
 * detach as the fix, the entropy kept with grad and never backpropagated,
 * reference cycles (none through the public API; the detector on cycles made
 * with internals), step-over-step growth, the test assertion, the JSON and
 * text reports, tg_shutdown and the runtime switch. Every figure asserted is
 * computed by hand from the shapes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "tg_json_check.h"
#include "tg_ops_test_util.h"

TestSuite(leakcheck, .init = tgt_setup, .fini = tgt_teardown);

/* ---- helpers ------------------------------------------------------------------------------- */

#define V 128 /* vocabulary of the microbatches */
#define MB 5  /* microbatches per loop */

/* Rows of microbatch k: different per microbatch, so that each root's bytes
 * identify it. Each microbatch keeps (when retained) 4 + 8 * rows * V bytes:
 * its f32 loss scalar, its f32 logits leaf and the leaf's .grad. */
static int64_t mb_rows(int k) { return 4 + k; }
static uint64_t mb_kept_bytes(int k) { return 4 + 2 * (uint64_t)mb_rows(k) * V * sizeof(float); }

static int g_loss_line; /* where microbatch() creates the loss (the root's creation site) */

/* i64 targets [n], in [0, V). */
static tg_tensor *make_targets(int64_t n, int k) {
    int64_t t[64];
    cr_assert(n <= 64);
    for (int64_t i = 0; i < n; i++) t[i] = (i * 37 + 11 * k) % V;
    tg_tensor *y = tg_from_data(TG_I64, 1, &n, t);
    cr_assert_not_null(y, "%s", tg_last_error());
    return y;
}

/* f32 logits leaf [n, V] requiring grad, named "logits[k]". */
static tg_tensor *make_logits(int64_t n, int k) {
    tg_tensor *z = tg_randn(TG_F32, TG_SHAPE(n, V), 100 + (uint64_t)k, 0.0, 1.0);
    cr_assert_not_null(z, "%s", tg_last_error());
    cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
    char name[32];
    snprintf(name, sizeof name, "logits[%d]", k);
    tg_set_name(z, name);
    return z;
}

/* One microbatch of an RL-style loss: loss = -mean(logprob) + 0.01 mean(entropy)
 * through the fused op (entropy with grad), backward, and the loss returned
 * "for logging" (named "losses[k]"); everything else is released. The loss
 * keeps 6 nodes: Add, Neg, Mean, Scale, Mean, LogprobEntropy. */
static tg_tensor *microbatch(int k) {
    int64_t n = mb_rows(k);
    tg_tensor *z = make_logits(n, k), *y = make_targets(n, k), *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(z, y, NULL, &lp, &h), TG_OK, "%s", tg_last_error());
    tg_tensor *a = tg_mean(lp), *na = tg_neg(a), *b = tg_mean(h), *sb = tg_scale(b, 0.01);
    tg_tensor *loss = tg_add(na, sb); g_loss_line = __LINE__;
    cr_assert_not_null(loss, "%s", tg_last_error());
    char name[32];
    snprintf(name, sizeof name, "losses[%d]", k);
    tg_set_name(loss, name);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(z, y, lp, h, a, na, b, sb);
    return loss;
}

static const tg_leak_root *find_root(const tg_leak_report *r, const char *name) {
    for (int64_t i = 0; i < tg_leak_report_nroots(r); i++) {
        const tg_leak_root *q = tg_leak_report_root(r, i);
        cr_assert_not_null(q);
        if (strcmp(q->name, name) == 0) return q;
    }
    return NULL;
}

/* Asserts that s contains the NULL-terminated substrings in this order. */
static void assert_in_order(const char *s, ...) {
    va_list ap;
    va_start(ap, s);
    const char *p = s, *sub;
    while ((sub = va_arg(ap, const char *)) != NULL) {
        const char *q = strstr(p, sub);
        cr_assert_not_null(q, "\"%s\" missing (or out of order) in: %s", sub, s);
        p = q + strlen(sub);
    }
    va_end(ap);
}

/* The text report (malloc'd, caller frees). */
static char *report_text(const tg_leak_report *r) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    cr_assert_eq(tg_leak_report_print(f, r), TG_OK, "%s", tg_last_error());
    cr_assert_eq(fclose(f), 0);
    return buf;
}

static char *report_json(const tg_leak_report *r) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    cr_assert_eq(tg_leak_report_json(f, r), TG_OK, "%s", tg_last_error());
    cr_assert_eq(fclose(f), 0);
    return buf;
}


static size_t saved_bytes(void) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    return m.saved;
}

static tg_leak_report *scan(void) {
    tg_leak_report *r = tg_leak_scan();
    cr_assert_not_null(r, "tg_leak_scan: %s", tg_last_error());
    return r;
}

/* ---- 1. retention detected ----------------------------------------------------------------- */

Test(leakcheck, retained_losses_are_reported_with_name_path_nodes_and_exact_bytes) {
    tg_tensor *losses[MB];
    uint64_t s0 = tg_step_current();
    for (int k = 0; k < MB; k++) {
        losses[k] = microbatch(k);
        if (k == 0) /* the nodes of the current step are not leaks (yet) */
            cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
        cr_assert_eq(tg_step_mark("microbatch"), s0 + (uint64_t)k + 1);
        cr_assert_eq(tg_step_current(), s0 + (uint64_t)k + 1);
    }
    tg_clear_error();
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    tgt_assert_leak_report("losses[0]", "losses[4]", "LogprobEntropyBackward",
                     "saved tensors already freed", "tg_detach", NULL);

    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), MB, "%lld roots", (long long)tg_leak_report_nroots(r));
    cr_assert_eq(tg_leak_report_outlived_nodes(r), 6 * MB);
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    cr_assert_null(tg_leak_report_root(r, MB));
    cr_assert_null(tg_leak_report_root(r, -1));
    uint64_t total = 0;
    for (int k = 0; k < MB; k++) {
        char name[32], head[64], leaf[32];
        snprintf(name, sizeof name, "losses[%d]", k);
        snprintf(head, sizeof head, "root \"losses[%d]\" (f32 [])", k);
        snprintf(leaf, sizeof leaf, "leaf 'logits[%d]'", k);
        const tg_leak_root *q = find_root(r, name);
        cr_assert_not_null(q, "no root named %s", name);
        cr_assert_str_eq(q->shape, "f32 []");
        cr_assert_eq(q->nodes, 6, "%s: %lld nodes", name, (long long)q->nodes);
        cr_assert_eq(q->nodes_with_saved, 0, "backward ran: the saved tensors are freed");
        cr_assert_eq(q->bytes, mb_kept_bytes(k), "%s keeps %llu bytes, expected %llu", name,
                     (unsigned long long)q->bytes, (unsigned long long)mb_kept_bytes(k));
        cr_assert_eq(q->saved_bytes, 0);
        cr_assert_eq(q->step, s0 + (uint64_t)k);
        cr_assert_not_null(q->file);
        cr_assert_str_eq(q->file, __FILE__);
        cr_assert_eq(q->line, g_loss_line);
        cr_assert_eq(strncmp(q->path, head, strlen(head)), 0, "path: %s", q->path);
        /* the shortest path to the heaviest thing kept: the logits leaf */
        assert_in_order(q->path, head, " -> AddBackward", " -> NegBackward", " -> MeanBackward",
                        " -> LogprobEntropyBackward", leaf, " f32 [", ".grad ", NULL);
        total += q->bytes;
    }
    cr_assert_eq(tg_leak_report_kept_bytes(r), total);
    cr_assert_eq(tgt_cpu_live(), total, "the losses keep everything that is live");
    cr_assert_eq(saved_bytes(), 0);

    /* growth: live bytes grew at each of the last MB-1 marks by >= 4 KiB */
    int steps = -1;
    double g = tg_leak_report_growth(r, &steps);
    double want = 0;
    for (int k = 1; k < MB; k++) want += (double)mb_kept_bytes(k);
    want /= MB - 1;
    cr_assert_eq(steps, MB - 1, "growth over %d steps", steps);
    cr_assert(g == want, "growth %.17g per step, expected %.17g", g, want);

    char *text = report_text(r);
    assert_in_order(text, "30 graph nodes from earlier steps still alive", "held by 5 roots", NULL);
    assert_in_order(text, "root created at ", __FILE__, "6 nodes",
                    "saved tensors already freed", NULL);
    cr_assert(strstr(text, "live memory grew at each of the last 4 steps") != NULL, "%s", text);
    cr_assert_null(strstr(text, "saved tensors still live"), "%s", text);
    cr_assert_null(strstr(text, "reference cycle"), "%s", text);
    free(text);
    tg_leak_report_free(r);

    for (int k = 0; k < MB; k++) TGO_RELEASE(losses[k]);
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
}

/* A parameter shared by every microbatch (held by the program) is no one
 * loss's bytes: each loss keeps only its own scalar, and its node chain. */
Test(leakcheck, shared_parameter_bytes_are_not_attributed_to_one_loss) {
    tg_tensor *W = tgo_randn(TG_F32, TG_SHAPE(8, V), 7, true);
    tg_set_name(W, "W");
    tg_tensor *losses[3];
    for (int k = 0; k < 3; k++) {
        tg_tensor *x = tgo_randn(TG_F32, TG_SHAPE(mb_rows(k), 8), 20 + (uint64_t)k, false);
        tg_tensor *y = make_targets(mb_rows(k), k), *lp = NULL;
        tg_tensor *z = tg_matmul(x, W);
        tg_logprob_opts o = tg_logprob_opts_default();
        o.want_entropy = false;
        cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
        tg_tensor *m = tg_mean(lp);
        losses[k] = tg_neg(m);
        char name[32];
        snprintf(name, sizeof name, "losses[%d]", k);
        tg_set_name(losses[k], name);
        cr_assert_eq(tg_backward(losses[k], NULL, false), TG_OK, "%s", tg_last_error());
        TGO_RELEASE(x, y, z, lp, m);
        tg_step_mark(NULL);
    }
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 3);
    cr_assert_eq(tg_leak_report_outlived_nodes(r), 3 * 4); /* Neg, Mean, LogprobEntropy, Mm */
    for (int k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "losses[%d]", k);
        const tg_leak_root *q = find_root(r, name);
        cr_assert_not_null(q, "no root %s", name);
        cr_assert_eq(q->nodes, 4);
        cr_assert_eq(q->bytes, 4, "%s: %llu bytes (W and W.grad are shared)", name,
                     (unsigned long long)q->bytes);
        /* nothing is saved any more and no leaf is held by the graph only:
         * the path names the first node of the chain */
        char head[64];
        snprintf(head, sizeof head, "root \"%s\" (f32 []) -> NegBackward", name);
        cr_assert_eq(strncmp(q->path, head, strlen(head)), 0, "path: %s", q->path);
    }
    cr_assert_eq(tg_leak_report_kept_bytes(r), 12);
    int steps = -1;
    cr_assert_eq(tg_leak_report_growth(r, &steps), 0.0, "4 bytes per step is not growth");
    cr_assert_eq(steps, 0);
    tg_leak_report_free(r);

    /* the program lets go of W: now only the leaked graphs hold it and its
     * .grad; each loss keeps them, shared with the others; counted once */
    TGO_RELEASE(W);
    const uint64_t wb = 2 * 8 * V * sizeof(float); /* W and W.grad */
    r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 3);
    for (int k = 0; k < 3; k++) {
        const tg_leak_root *q = tg_leak_report_root(r, k);
        cr_assert_eq(q->bytes, 4 + wb, "%s: %llu bytes", q->name, (unsigned long long)q->bytes);
        cr_assert_eq(q->shared_bytes, wb, "%s: %llu shared bytes", q->name,
                     (unsigned long long)q->shared_bytes);
        cr_assert_eq(q->saved_bytes, 0);
    }
    cr_assert_eq(tg_leak_report_kept_bytes(r), 12 + wb);
    cr_assert_eq(tgt_cpu_live(), 12 + wb);
    char *text = report_text(r);
    cr_assert(strstr(text, "shared with other roots") != NULL, "%s", text);
    free(text);
    tg_leak_report_free(r);
    for (int k = 0; k < 3; k++) TGO_RELEASE(losses[k]);
}

/* Two kept tensors of one microbatch graph (the loss and a partial result
 * inside it): both keep graph nodes of an earlier step alive, so both are
 * roots of the report; every outlived node is counted once; and the total is
 * what would be freed if the reported roots let go: everything live. */
Test(leakcheck, two_roots_sharing_a_graph_are_both_reported_and_counted_once) {
    int64_t n = mb_rows(0);
    tg_tensor *z = make_logits(n, 0), *y = make_targets(n, 0), *lp = NULL;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.want_entropy = false;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *part = tg_mean(lp), *loss = tg_neg(part);
    tg_set_name(part, "part");
    tg_set_name(loss, "loss");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_RELEASE(z, y, lp);
    tg_step_mark(NULL);
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_outlived_nodes(r), 3, "Neg, Mean, LogprobEntropy, once each");
    const tg_leak_root *ql = find_root(r, "loss"), *qp = find_root(r, "part");
    cr_assert_not_null(ql, "the loss is not reported");
    cr_assert_not_null(qp, "'part' keeps MeanBackward and LogprobEntropyBackward of an earlier "
                           "step alive but is not reported (%lld roots)",
                       (long long)tg_leak_report_nroots(r));
    cr_assert_eq(tg_leak_report_nroots(r), 2);
    cr_assert(ql->nodes <= 3 && qp->nodes <= 2 && ql->nodes + qp->nodes >= 3,
              "loss %lld nodes, part %lld nodes", (long long)ql->nodes, (long long)qp->nodes);
    /* live: both scalars, the logits leaf and its .grad, all freed if both let go */
    uint64_t live = 8 + 2 * (uint64_t)n * V * 4;
    cr_assert_eq(tgt_cpu_live(), live);
    cr_assert_eq(tg_leak_report_kept_bytes(r), live, "kept bytes %llu, expected %llu",
                 (unsigned long long)tg_leak_report_kept_bytes(r), (unsigned long long)live);
    tg_leak_report_free(r);
    TGO_RELEASE(part, loss);
}

/* A chain of 3000 nodes is scanned without recursion; the path is cut to its
 * buffer and says so. */
Test(leakcheck, deep_chain_is_counted_and_its_path_elided) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(2), 1, true);
    tg_set_name(x, "x");
    tg_tensor *t = tg_retain(x);
    for (int i = 0; i < 3000; i++) {
        tg_tensor *u = tg_scale(t, 1.0);
        TGO_RELEASE(t);
        t = u;
    }
    cr_assert_not_null(t, "%s", tg_last_error());
    tg_set_name(t, "deep");
    TGO_RELEASE(x); /* the leaf is now held by the graph only: the heaviest target */
    tg_step_mark(NULL);
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 1);
    const tg_leak_root *q = tg_leak_report_root(r, 0);
    cr_assert_eq(q->nodes, 3000);
    cr_assert_eq(q->bytes, 32, "its 16 bytes and the leaf's 16 bytes");
    cr_assert_lt(strlen(q->path), sizeof q->path);
    assert_in_order(q->path, "root \"deep\" (f64 [2]) -> ...", " -> ScaleBackward", NULL);
    tg_leak_report_free(r);
    TGO_RELEASE(t);
}

/* ---- 2. detach makes it disappear --------------------------------------------------------- */

Test(leakcheck, detached_losses_keep_no_graph_and_do_not_grow) {
    tg_tensor *kept[MB];
    double want[MB];
    for (int k = 0; k < MB; k++) {
        tg_tensor *loss = microbatch(k);
        cr_assert_eq(tg_item(loss, &want[k]), TG_OK);
        kept[k] = tg_detach(loss);
        cr_assert_not_null(kept[k], "%s", tg_last_error());
        TGO_RELEASE(loss);
        tg_step_mark("microbatch");
    }
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
    TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail);
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 0);
    cr_assert_eq(tg_leak_report_outlived_nodes(r), 0);
    cr_assert_eq(tg_leak_report_kept_bytes(r), 0);
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    int steps = -1;
    cr_assert_eq(tg_leak_report_growth(r, &steps), 0.0);
    cr_assert_eq(steps, 0);
    tg_leak_report_free(r);
    tg_live_counts c = tg_live();
    cr_assert_eq(c.nodes, 0);
    cr_assert_eq(c.tensors, MB);
    cr_assert_eq(c.storages, MB);
    cr_assert_eq(tgt_cpu_live(), MB * sizeof(float), "only the scalars stay");
    for (int k = 0; k < MB; k++) {
        double v;
        cr_assert_eq(tg_item(kept[k], &v), TG_OK);
        cr_assert_eq(v, want[k], "the detached copy holds the loss value");
        cr_assert(tg_is_leaf(kept[k]) && !tg_requires_grad(kept[k]));
        char name[32];
        snprintf(name, sizeof name, "losses[%d]", k);
        cr_assert_str_eq(tg_name(kept[k]), name, "detach copies the name");
        TGO_RELEASE(kept[k]);
    }
}

/* ---- 3. entropy kept with grad, never backpropagated ------------------------------------ */

/* One microbatch where the loss uses only the log-probs, and the entropy is
 * computed by a second call "for logging" with entropy_grad = entropy_grad;
 * the program keeps mean(entropy) as "entropy_log[k]" and never backpropagates
 * it. Returns the kept tensor. */
static tg_tensor *entropy_microbatch(int k, bool entropy_grad) {
    int64_t n = mb_rows(k);
    tg_tensor *z = make_logits(n, k), *y = make_targets(n, k), *lp = NULL, *lp2 = NULL, *h = NULL;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.want_entropy = false;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *m = tg_mean(lp), *loss = tg_neg(m);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    o.want_entropy = true;
    o.entropy_grad = entropy_grad;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp2, &h), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_requires_grad(h), entropy_grad);
    tg_tensor *log = tg_mean(h);
    char name[32];
    snprintf(name, sizeof name, "entropy_log[%d]", k);
    tg_set_name(log, name);
    TGO_RELEASE(z, y, lp, m, loss, lp2, h);
    return log;
}

Test(leakcheck, entropy_kept_with_grad_reports_live_saved_tensors_and_their_bytes) {
    tg_tensor *logs[3];
    for (int k = 0; k < 3; k++) {
        logs[k] = entropy_microbatch(k, true);
        tg_step_mark("microbatch");
    }
    tg_clear_error();
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    tgt_assert_leak_report("entropy_log[0]", "saved tensors still live", NULL);
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 3);
    uint64_t total = 0, total_saved = 0;
    for (int k = 0; k < 3; k++) {
        int64_t n = mb_rows(k);
        char name[32], saved[48];
        snprintf(name, sizeof name, "entropy_log[%d]", k);
        snprintf(saved, sizeof saved, "(saved: 'logits[%d]' f32 [%lld, %d]", k, (long long)n, V);
        const tg_leak_root *q = find_root(r, name);
        cr_assert_not_null(q, "no root %s", name);
        cr_assert_eq(q->nodes, 2, "Mean and LogprobEntropy, got %lld", (long long)q->nodes);
        cr_assert_eq(q->nodes_with_saved, 1);
        /* saved: the logits (by reference), the targets, per row 3 f64 stats */
        uint64_t want_saved = (uint64_t)n * V * 4 + (uint64_t)n * 8 + (uint64_t)n * 24;
        cr_assert_eq(q->saved_bytes, want_saved, "%s: saved %llu bytes, expected %llu", name,
                     (unsigned long long)q->saved_bytes, (unsigned long long)want_saved);
        /* plus the kept scalar and the logits' .grad from the loss's backward */
        uint64_t want = want_saved + 4 + (uint64_t)n * V * 4;
        cr_assert_eq(q->bytes, want, "%s: %llu bytes, expected %llu", name,
                     (unsigned long long)q->bytes, (unsigned long long)want);
        assert_in_order(q->path, "root \"entropy_log[", " -> MeanBackward",
                        " -> LogprobEntropyBackward", saved, NULL);
        total += want;
        total_saved += want_saved;
    }
    cr_assert_eq(tg_leak_report_kept_bytes(r), total);
    cr_assert_eq(tgt_cpu_live(), total);
    cr_assert_eq(saved_bytes(), total_saved, "memory accounting agrees on saved bytes");
    char *text = report_text(r);
    cr_assert(strstr(text, "saved tensors still live") != NULL, "%s", text);
    cr_assert(strstr(text, "held as saved tensors") != NULL, "%s", text);
    free(text);
    tg_leak_report_free(r);
    for (int k = 0; k < 3; k++) TGO_RELEASE(logs[k]);
}

/* The fix of the story: entropy_grad = false records nothing for the entropy,
 * so the logged value keeps no graph. */
Test(leakcheck, entropy_logged_without_grad_keeps_nothing) {
    tg_tensor *logs[3];
    for (int k = 0; k < 3; k++) {
        logs[k] = entropy_microbatch(k, false);
        tg_step_mark("microbatch");
    }
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
    cr_assert_eq(tg_live().nodes, 0);
    cr_assert_eq(saved_bytes(), 0);
    cr_assert_eq(tgt_cpu_live(), 3 * sizeof(float));
    for (int k = 0; k < 3; k++) TGO_RELEASE(logs[k]);
}

/* ---- 4. reference cycles ------------------------------------------------------------------ */

/* Asserts: the scan finds nothing unreachable and no leak (everything is of
 * the current step). */
static void assert_no_cycle_now(const char *what) {
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_unreachable(r), 0, "%s: %lld unreachable objects", what,
                 (long long)tg_leak_report_unreachable(r));
    cr_assert_eq(tg_leak_report_nroots(r), 0, "%s", what);
    tg_leak_report_free(r);
    cr_assert_eq(tg_leak_check(), TG_OK, "%s: %s", what, tg_leak_check_report());
}

/* exp and softmax save their own output: a naive engine would hold the output
 * handle in its own grad_fn. */
Test(leakcheck, op_saving_its_own_output_makes_no_cycle) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(3, 4), 1, true);
    tg_tensor *e = tg_exp(x), *s = tg_softmax(x), *l = tg_log_softmax(e);
    tg_tensor *p = tg_mul(s, l), *loss = tg_sum(p);
    cr_assert_not_null(loss, "%s", tg_last_error());
    cr_assert_gt(saved_bytes(), 0);
    assert_no_cycle_now("exp/softmax before backward");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    assert_no_cycle_now("exp/softmax after backward");
    /* release the program's references, in creation order (outputs last) */
    TGO_RELEASE(x, e, s, l, p);
    cr_assert_gt(tg_live().nodes, 0, "the loss still holds its graph");
    TGO_RELEASE(loss);
    tgt_assert_nothing_live();
    /* same without backward: the saved outputs go with the graph */
    x = tgo_randn(TG_F64, TG_SHAPE(5), 2, true);
    e = tg_exp(x);
    s = tg_softmax(e);
    TGO_RELEASE(x, e);
    assert_no_cycle_now("softmax(exp) kept");
    TGO_RELEASE(s);
    tgt_assert_nothing_live();
}

static tg_status save_out_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                              tg_tensor **out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    out[0] = tg_exp(in[0]);
    tg_tensor *v = tg_slice(in[0], 0, 0, 2, 1); /* a view of the input */
    if (!out[0] || !v) {
        tg_release(v);
        return tg_last_status();
    }
    int a = tg_ctx_save(ctx, out[0]), b = tg_ctx_save(ctx, v);
    tg_release(v);
    return a < 0 || b < 0 ? tg_last_status() : TG_OK;
}

static tg_status save_out_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                              tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    tg_tensor *e = tg_ctx_saved(ctx, 0), *v = tg_ctx_saved(ctx, 1);
    if (e && v) gin[0] = tg_mul(gout[0], e);
    tg_release(e);
    tg_release(v);
    return gin[0] ? TG_OK : tg_last_status();
}

static const tg_function SAVE_OUT = {"SaveOutputBackward", save_out_fwd, save_out_bwd};

Test(leakcheck, custom_function_saving_its_output_and_an_input_view_makes_no_cycle) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(4, 3), 3, true);
    tg_tensor *out[1] = {NULL};
    cr_assert_eq(tg_function_apply(&SAVE_OUT, NULL, 1, (tg_tensor *const[]){x}, 1, out), TG_OK,
                 "%s", tg_last_error());
    cr_assert_str_eq(tg_grad_fn_name(out[0]), "SaveOutputBackward");
    tg_tensor *loss = tg_sum(out[0]);
    assert_no_cycle_now("custom function before backward");
    /* the function and its output alone, the program's input released */
    TGO_RELEASE(x, loss);
    assert_no_cycle_now("custom function output kept alone");
    TGO_RELEASE(out[0]);
    tgt_assert_nothing_live();

    x = tgo_randn(TG_F64, TG_SHAPE(4, 3), 3, true);
    cr_assert_eq(tg_function_apply(&SAVE_OUT, NULL, 1, (tg_tensor *const[]){x}, 1, out), TG_OK);
    loss = tg_sum(out[0]);
    cr_assert_eq(tg_backward(loss, NULL, true), TG_OK, "%s", tg_last_error());
    assert_no_cycle_now("custom function after backward");
    TGO_RELEASE(out[0], x, loss);
    tgt_assert_nothing_live();
}

/* An in-place op recorded on a non-leaf replaces its grad_fn; the old node
 * (which saved the same storage) stays in the graph behind the new one. */
Test(leakcheck, inplace_op_on_a_non_leaf_makes_no_cycle) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(2, 3), 4, true);
    tg_tensor *w = tgo_randn(TG_F64, TG_SHAPE(3), 5, true);
    tg_tensor *y = tg_exp(x); /* saves y's storage */
    cr_assert_eq(tg_add_(y, w), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_grad_fn_name(y), "AddBackward");
    cr_assert_eq(tg_mul_(y, w), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_grad_fn_name(y), "MulBackward");
    assert_no_cycle_now("in-place on a non-leaf");
    tg_tensor *loss = tg_sum(y);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE, "exp's saved output moved");
    TGO_RELEASE(x, w);
    assert_no_cycle_now("in-place, inputs released");
    TGO_RELEASE(loss, y);
    tgt_assert_nothing_live();

    /* a scale_ on a non-leaf whose history saved nothing: backward works */
    x = tgo_randn(TG_F64, TG_SHAPE(2, 3), 4, true);
    y = tg_scale(x, 3.0);
    cr_assert_eq(tg_scale_(y, 2.0), TG_OK);
    loss = tg_sum(y);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    TGO_ASSERT_GRAD(x, 0, 6, 6, 6, 6, 6, 6);
    TGO_RELEASE(y, loss);
    assert_no_cycle_now("scale_ released");
    TGO_RELEASE(x);
    tgt_assert_nothing_live();
}

/* A tensor used twice (both operands of one op, and two ops), and backward
 * with retain_graph (the graph is walked three times). */
Test(leakcheck, tensor_used_twice_and_retain_graph_make_no_cycle) {
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(4), 6, true);
    tg_tensor *sq = tg_mul(x, x); /* saves x's storage twice */
    tg_tensor *y = tg_add(sq, sq), *z = tg_mul(y, x), *loss = tg_sum(z);
    cr_assert_not_null(loss);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tg_backward(loss, NULL, true), TG_OK, "%s", tg_last_error());
    assert_no_cycle_now("retain_graph");
    cr_assert_gt(saved_bytes(), 0, "retain_graph keeps the saved tensors");
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(saved_bytes(), 0);
    assert_no_cycle_now("after the last backward");
    double *xv = tgo_values(x);
    tg_tensor *g = tg_grad(x);
    for (int i = 0; i < 4; i++) /* d/dx 2x^3 = 6x^2, three times */
        cr_assert(tgo_close(tgt_at(g, i), 18 * xv[i] * xv[i], 1e-12));
    free(xv);
    TGO_RELEASE(g, sq, y, z);
    tg_step_mark(NULL); /* the loss now outlives its step: a root, not a cycle */
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    cr_assert_eq(tg_leak_report_nroots(r), 1);
    cr_assert_eq(tg_leak_report_outlived_nodes(r), 4); /* Sum, Mul, Add, Mul */
    tg_leak_report_free(r);
    TGO_RELEASE(x, loss);
    tgt_assert_nothing_live();
}

/* Tensors owned by an open scope are held from outside the library: roots,
 * never unreachable. */
Test(leakcheck, scope_owned_graph_is_reachable) {
    int tok = tg_scope_begin();
    tg_tensor *x = tgo_randn(TG_F64, TG_SHAPE(3), 8, true);
    tg_tensor *loss = tg_sum(tg_exp(tg_mul(x, x)));
    cr_assert_not_null(loss);
    assert_no_cycle_now("scope-owned graph");
    tg_step_mark(NULL);
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    cr_assert_geq(tg_leak_report_nroots(r), 1, "the scope keeps the graph of an earlier step");
    tg_leak_report_free(r);
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    tgt_assert_nothing_live();
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
}

/* The public API cannot build a reference cycle (tests/test_cycles.c tries);
 * the detector is tested on cycles made by hand through the internals.
 * Here: leaf x's .grad is set to v, a view of x, which holds its base x.
 * x -> .grad v -> base x. */
Test(leakcheck, cycle_through_a_grad_field_is_reported_unreachable) {
    int lx = __LINE__ + 1;
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3), 9, 0.0, 1.0);
    cr_assert_not_null(x);
    tg_set_name(x, "cyc_x");
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    int lv = __LINE__ + 1;
    tg_tensor *v = tg_slice(x, 0, 0, 3, 1);
    cr_assert_not_null(v);
    tg_set_name(v, "cyc_v");
    tg__set_grad(x, tg_retain(v)); /* the cycle */

    /* still referenced by the program: reachable, no cycle reported */
    assert_no_cycle_now("cycle still referenced");
    TGO_RELEASE(v);
    assert_no_cycle_now("cycle referenced through x");
    TGO_RELEASE(x);
    tg_live_counts c = tg_live();
    cr_assert_eq(c.tensors, 2, "the cycle keeps both tensors alive");
    cr_assert_eq(c.nodes, 1);

    tg_leak_report *r = scan();
    /* x, v, their one storage, SliceBackward */
    cr_assert_eq(tg_leak_report_unreachable(r), 4, "%lld unreachable",
                 (long long)tg_leak_report_unreachable(r));
    cr_assert_eq(tg_leak_report_nroots(r), 0);
    char *text = report_text(r);
    char sx[160], sv[160];
    snprintf(sx, sizeof sx, "'cyc_x' f64 [3] (24 B, created at %s:%d)", __FILE__, lx);
    snprintf(sv, sizeof sv, "SliceBackward (created at %s:%d", __FILE__, lv);
    cr_assert(strstr(text, "4 objects alive but reachable from no reference held by the program "
                           "(a reference cycle)") != NULL, "%s", text);
    cr_assert(strstr(text, sx) != NULL, "missing \"%s\" in %s", sx, text);
    cr_assert(strstr(text, sv) != NULL, "missing \"%s\" in %s", sv, text);
    cr_assert(strstr(text, "'cyc_v' f64 [3]") != NULL, "%s", text);
    free(text);
    char *js = report_json(r);
    json j;
    assert_json_object(js, &j);
    cr_assert(strstr(js, "\"unreachable\":4") != NULL, "%s", js);
    cr_assert(strstr(js, "cyc_x") != NULL && strstr(js, "SliceBackward") != NULL, "%s", js);
    free(js);
    tg_leak_report_free(r);
    tg_clear_error();
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK, "a cycle fails the check in any step");
    tgt_assert_leak_report("reference cycle", "cyc_x", NULL);

    /* break it by hand: x (alive through v's base) drops v */
    tg__set_grad(x, NULL);
    tgt_assert_nothing_live();
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
}

/* Another shape: two nodes whose edges point at each other. y = exp(x) and
 * z = exp(y); y's node is made to point back at z's. */
Test(leakcheck, cycle_through_node_edges_is_reported_unreachable) {
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(2, 2), 10, 0.0, 1.0);
    cr_assert_not_null(x);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *y = tg_exp(x), *z = tg_exp(y);
    tg__node *a = y->grad_fn, *b = z->grad_fn;
    cr_assert(a && b && b->edge[0].node == a);
    cr_assert_eq(a->edge[0].kind, TG__EDGE_LEAF);
    tg__leafref_release(a->edge[0].ref);
    a->edge[0].kind = TG__EDGE_NODE; /* ExpBackward(y) -> ExpBackward(z) -> ExpBackward(y) */
    a->edge[0].node = b;
    a->edge[0].ref = NULL;
    tg__node_retain(b);
    TGO_RELEASE(z, y, x);
    tg_step_mark(NULL);
    tg_leak_report *r = scan();
    /* the two nodes and the outputs each saved (y's and z's storages) */
    cr_assert_eq(tg_leak_report_unreachable(r), 4, "%lld unreachable",
                 (long long)tg_leak_report_unreachable(r));
    cr_assert_eq(tg_leak_report_nroots(r), 0, "no root keeps the cycle");
    char *text = report_text(r);
    cr_assert(strstr(text, "ExpBackward") != NULL && strstr(text, "reference cycle") != NULL,
              "%s", text);
    free(text);
    tg_leak_report_free(r);
    a->edge[0].kind = TG__EDGE_NONE;
    tg__node_release(b);
    tgt_assert_nothing_live();
}

/* ---- 5. growth detection ------------------------------------------------------------------- */

/* Keeps a new f64 tensor of nbytes (a multiple of 8) and marks the step. */
static void grow(tg_tensor **keep, int *nkeep, int64_t nbytes) {
    cr_assert(*nkeep < 32);
    keep[(*nkeep)++] = tg_zeros(TG_F64, TG_SHAPE(nbytes / 8));
    cr_assert_not_null(keep[*nkeep - 1]);
    tg_step_mark(NULL);
}

static double growth_now(int *steps) {
    tg_leak_report *r = scan();
    double g = tg_leak_report_growth(r, steps);
    tg_leak_report_free(r);
    return g;
}

static void release_all(tg_tensor **keep, int n) {
    for (int i = 0; i < n; i++) TGO_RELEASE(keep[i]);
}

Test(leakcheck, growth_of_4_kib_per_step_over_4_steps_is_reported) {
    tg_tensor *keep[32];
    int n = 0, steps = -1;
    tg_step_mark("base");
    for (int s = 0; s < 4; s++) grow(keep, &n, 4096);
    double g = growth_now(&steps);
    cr_assert_eq(steps, 4);
    cr_assert(g == 4096.0, "growth %.17g", g);
    tg_leak_report *r = scan();
    char *text = report_text(r);
    cr_assert(strstr(text, "live memory grew at each of the last 4 steps") != NULL, "%s", text);
    free(text);
    char *js = report_json(r);
    cr_assert(strstr(js, "\"growth_bytes_per_step\":4096") != NULL, "%s", js);
    cr_assert(strstr(js, "\"growth_steps\":4") != NULL, "%s", js);
    free(js);
    tg_leak_report_free(r);
    release_all(keep, n);
}

Test(leakcheck, growth_needs_three_increases_in_a_row) {
    tg_tensor *keep[32];
    int n = 0, steps = -1;
    tg_step_mark("base");
    grow(keep, &n, 8192);
    grow(keep, &n, 8192);
    cr_assert_eq(growth_now(&steps), 0.0, "two increases are not a trend");
    cr_assert_eq(steps, 0);
    grow(keep, &n, 8192);
    cr_assert_eq(growth_now(&steps), 8192.0);
    cr_assert_eq(steps, 3);
    /* a flat step breaks the run */
    tg_step_mark(NULL);
    cr_assert_eq(growth_now(&steps), 0.0);
    cr_assert_eq(steps, 0);
    grow(keep, &n, 8192);
    grow(keep, &n, 8192);
    cr_assert_eq(growth_now(&steps), 0.0, "only two increases since the flat step");
    grow(keep, &n, 16384);
    cr_assert_eq(growth_now(&steps), (8192.0 + 8192 + 16384) / 3);
    cr_assert_eq(steps, 3);
    /* a decrease breaks it too */
    TGO_RELEASE(keep[--n]);
    tg_step_mark(NULL);
    cr_assert_eq(growth_now(&steps), 0.0);
    cr_assert_eq(steps, 0);
    release_all(keep, n);
}

Test(leakcheck, flat_or_small_growth_is_not_reported) {
    tg_tensor *keep[32];
    int n = 0, steps = -1;
    tg_tensor *big = tg_zeros(TG_F64, TG_SHAPE(4096));
    for (int s = 0; s < 6; s++) tg_step_mark(NULL);
    cr_assert_eq(growth_now(&steps), 0.0, "flat");
    cr_assert_eq(steps, 0);
    for (int s = 0; s < 6; s++) grow(keep, &n, 1024); /* 1 KiB per step */
    cr_assert_eq(growth_now(&steps), 0.0, "1 KiB per step is below the threshold");
    cr_assert_eq(steps, 0);
    for (int s = 0; s < 6; s++) grow(keep, &n, 4088); /* 8 bytes short of 4 KiB */
    cr_assert_eq(growth_now(&steps), 0.0, "4088 bytes per step is below 4 KiB");
    cr_assert_eq(steps, 0);
    release_all(keep, n);
    TGO_RELEASE(big);
}

Test(leakcheck, growth_average_is_over_the_whole_increasing_run) {
    tg_tensor *keep[32];
    int n = 0, steps = -1;
    tg_step_mark("base");
    grow(keep, &n, 8192);
    grow(keep, &n, 1024); /* one small step in a growing run */
    grow(keep, &n, 4096);
    double g = growth_now(&steps);
    cr_assert_eq(steps, 3);
    cr_assert_eq(g, (8192.0 + 1024 + 4096) / 3, "growth %.17g", g);
    release_all(keep, n);
    n = 0;
    /* 4088 x 3 then 4120: exactly 4 KiB on average over the 4 increases */
    tg_step_mark("base");
    for (int s = 0; s < 3; s++) grow(keep, &n, 4088);
    cr_assert_eq(growth_now(&steps), 0.0);
    grow(keep, &n, 4120);
    g = growth_now(&steps);
    cr_assert_eq(steps, 4, "steps %d", steps);
    cr_assert_eq(g, 4096.0, "growth %.17g", g);
    release_all(keep, n);
}

/* ---- 6. the test assertion and the JSON report --------------------------------------------- */

static int g_fail_calls;
static char g_fail_msg[8192];
#define RECORD_FAIL(fmt, msg) (g_fail_calls++, snprintf(g_fail_msg, sizeof g_fail_msg, fmt, msg))

Test(leakcheck, assertion_macro_passes_on_a_clean_step_and_fails_on_a_retained_loss) {
    tg_tensor *loss = microbatch(0);
    TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail); /* same step: fine */
    TGO_RELEASE(loss);
    tg_step_mark("clean");
    TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail);
    TG_ASSERT_NO_LEAKED_GRAPH(RECORD_FAIL);
    cr_assert_eq(g_fail_calls, 0);

    loss = microbatch(1);
    tg_step_mark("leaky");
    TG_ASSERT_NO_LEAKED_GRAPH(RECORD_FAIL);
    cr_assert_eq(g_fail_calls, 1, "the macro must fail on a retained graph");
    assert_in_order(g_fail_msg, "6 graph nodes from earlier steps still alive",
                    "root \"losses[1]\" (f32 [])", "LogprobEntropyBackward", NULL);
    TGO_RELEASE(loss);
    TG_ASSERT_NO_LEAKED_GRAPH(cr_assert_fail);
}

static const char *const TOP_KEYS[] = {"step", "outlived_nodes", "kept_bytes", "unreachable",
                                       "growth_bytes_per_step", "growth_steps", "roots",
                                       "unreachable_objects"};
static const char *const ROOT_KEYS[] = {"name", "shape", "site", "step", "nodes",
                                        "nodes_with_saved", "bytes", "shared_bytes", "saved_bytes",
                                        "path"};

Test(leakcheck, json_report_is_valid_json_with_the_documented_keys) {
    /* clean */
    tg_leak_report *r = scan();
    char *js = report_json(r);
    json j;
    assert_json_object(js, &j);
    for (size_t i = 0; i < sizeof TOP_KEYS / sizeof *TOP_KEYS; i++)
        cr_assert_eq(json_key_count(&j, TOP_KEYS[i]), 1, "key %s in %s", TOP_KEYS[i], js);
    cr_assert(strstr(js, "\"roots\":[]") && strstr(js, "\"unreachable_objects\":[]"), "%s", js);
    free(js);
    tg_leak_report_free(r);

    /* two retained losses, one named with characters JSON must escape */
    tg_tensor *a = microbatch(0), *b = microbatch(1);
    tg_set_name(b, "q\"uo\\te\ttab\x01");
    tg_step_mark(NULL);
    r = scan();
    js = report_json(r);
    assert_json_object(js, &j);
    for (size_t i = 0; i < sizeof TOP_KEYS / sizeof *TOP_KEYS; i++)
        cr_assert_eq(json_key_count(&j, TOP_KEYS[i]) - (strcmp(TOP_KEYS[i], "step") ? 0 : 2), 1,
                     "key %s in %s", TOP_KEYS[i], js);
    for (size_t i = 0; i < sizeof ROOT_KEYS / sizeof *ROOT_KEYS; i++)
        cr_assert_eq(json_key_count(&j, ROOT_KEYS[i]) - (strcmp(ROOT_KEYS[i], "step") ? 0 : 1),
                     2, "key %s twice (two roots) in %s", ROOT_KEYS[i], js);
    char want[128];
    snprintf(want, sizeof want, "\"kept_bytes\":%llu",
             (unsigned long long)(mb_kept_bytes(0) + mb_kept_bytes(1)));
    cr_assert(strstr(js, want) != NULL, "%s missing in %s", want, js);
    cr_assert(strstr(js, "\"outlived_nodes\":12") != NULL, "%s", js);
    cr_assert(strstr(js, "\"name\":\"q\\\"uo\\\\te\\u0009tab\\u0001\"") != NULL, "%s", js);
    snprintf(want, sizeof want, "\"site\":\"%s:%d\"", __FILE__, g_loss_line);
    cr_assert(strstr(js, want) != NULL, "%s missing in %s", want, js);
    free(js);
    tg_leak_report_free(r);
    TGO_RELEASE(a, b);
}

/* A name cut at 47 bytes inside a multi-byte UTF-8 character must not make
 * the JSON report invalid UTF-8 (JSON text is UTF-8, RFC 8259 section 8.1). */
Test(leakcheck, json_report_stays_valid_utf8_when_a_name_is_truncated) {
    tg_tensor *a = microbatch(0);
    char name[64] = "";
    for (int i = 0; i < 25; i++) strcat(name, "\xc3\xa9"); /* "é" x 25: 50 bytes */
    tg_set_name(a, name);
    tg_step_mark(NULL);
    tg_leak_report *r = scan();
    char *js = report_json(r);
    json j;
    assert_json_object(js, &j);
    free(js);
    tg_leak_report_free(r);
    TGO_RELEASE(a);
}

Test(leakcheck, report_writers_check_arguments_and_accessors_accept_null) {
    tg_leak_report *r = scan();
    tg_clear_error();
    cr_assert_eq(tg_leak_report_print(NULL, r), TG_ERR_NULL);
    cr_assert_eq(tg_leak_report_json(NULL, r), TG_ERR_NULL);
    cr_assert_eq(tg_leak_report_print(stdout, NULL), TG_ERR_NULL);
    cr_assert_eq(tg_leak_report_json(stdout, NULL), TG_ERR_NULL);
    tg_clear_error();
    char *text = report_text(r);
    cr_assert(strstr(text, "no graph node from an earlier step is alive") != NULL, "%s", text);
    cr_assert_eq(text[strlen(text) - 1], '\n', "the text report ends with a newline");
    free(text);
    tg_leak_report_free(r);
    tg_leak_report_free(NULL);
    int steps = 7;
    cr_assert_eq(tg_leak_report_nroots(NULL), 0);
    cr_assert_null(tg_leak_report_root(NULL, 0));
    cr_assert_eq(tg_leak_report_outlived_nodes(NULL), 0);
    cr_assert_eq(tg_leak_report_kept_bytes(NULL), 0);
    cr_assert_eq(tg_leak_report_unreachable(NULL), 0);
    cr_assert_eq(tg_leak_report_growth(NULL, &steps), 0.0);
    cr_assert_eq(steps, 0);
    cr_assert_eq(tg_leak_report_growth(NULL, NULL), 0.0);
    /* a write error is reported */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        r = scan();
        cr_assert_eq(tg_leak_report_json(full, r), TG_ERR_IO);
        cr_assert_eq(tg_leak_report_print(full, r), TG_ERR_IO);
        tg_leak_report_free(r);
        fclose(full);
    }
}

/* tg_step_mark's label "names the step that ends, in reports". */
Test(leakcheck, step_labels_appear_in_reports) {
    tg_tensor *a = microbatch(0);
    tg_step_mark("microbatch-zero");
    tg_leak_report *r = scan();
    char *text = report_text(r), *js = report_json(r);
    cr_assert(strstr(text, "microbatch-zero") != NULL,
              "the label of the step the root was created in is not in the text report: %s", text);
    cr_assert(strstr(js, "microbatch-zero") != NULL, "nor in the JSON report: %s", js);
    free(text);
    free(js);
    tg_leak_report_free(r);
    TGO_RELEASE(a);
}

/* A leak of a few KiB (and a growth of 4 KiB per step) must not read as
 * "0.00 MiB" in the text report. */
Test(leakcheck, text_report_does_not_round_small_amounts_to_zero) {
    tg_tensor *losses[4];
    for (int k = 0; k < 4; k++) {
        losses[k] = microbatch(k);
        tg_step_mark(NULL);
    }
    tg_leak_report *r = scan();
    cr_assert_gt(tg_leak_report_kept_bytes(r), 16000);
    int steps;
    cr_assert_gt(tg_leak_report_growth(r, &steps), 4096);
    char *text = report_text(r);
    cr_assert_null(strstr(text, " 0.00 MiB"), "a non-zero amount printed as 0.00 MiB: %s", text);
    cr_assert_null(strstr(text, "+0.00 MiB"), "a growth printed as +0.00 MiB: %s", text);
    free(text);
    tg_leak_report_free(r);
    for (int k = 0; k < 4; k++) TGO_RELEASE(losses[k]);
}

/* ---- 7. tg_shutdown -------------------------------------------------------------------------- */

Test(leakcheck, shutdown_counts_and_lists_what_is_alive) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(tg_shutdown(f), 0);
    fflush(f);
    cr_assert_eq(len, 0, "nothing printed when nothing is alive: %s", buf);
    fclose(f);
    free(buf);

    int lx = __LINE__ + 1;
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(3), 1, 0.0, 1.0);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_set_name(x, "sd_x");
    int ly = __LINE__ + 1;
    tg_tensor *y = tg_exp(x);
    cr_assert_not_null(y);
    buf = NULL;
    f = open_memstream(&buf, &len);
    cr_assert_eq(tg_shutdown(f), 5, "2 tensors, 2 storages, 1 node");
    fclose(f);
    char sx[128], sy[128];
    snprintf(sx, sizeof sx, "'sd_x' f64 ndim 1 refcount 2 (scope 0) created at %s:%d", __FILE__,
             lx);
    snprintf(sy, sizeof sy, "ExpBackward refcount 1 created at %s:%d", __FILE__, ly);
    cr_assert(strstr(buf, "2 tensors, 2 storages and 1 graph node still alive") != NULL, "%s",
              buf);
    cr_assert(strstr(buf, sx) != NULL, "missing \"%s\" in %s", sx, buf);
    cr_assert(strstr(buf, sy) != NULL, "missing \"%s\" in %s", sy, buf);
    cr_assert(strstr(buf, "storage #") != NULL, "%s", buf);
    free(buf);
    TGO_RELEASE(x, y);
    cr_assert_eq(tg_shutdown(stderr), 0);
}

/* ---- 8. the checker's own hygiene, the runtime switch ---------------------------------------- */

Test(leakcheck, scans_and_reports_leak_nothing) {
    tg_tensor *loss = microbatch(0);
    tg_step_mark(NULL);
    tg_live_counts before = tg_live();
    size_t bytes = tgt_cpu_live();
    for (int i = 0; i < 20; i++) {
        tg_leak_report *r = scan();
        free(report_text(r));
        free(report_json(r));
        tg_leak_report_free(r);
        cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    }
    tg_live_counts after = tg_live();
    cr_assert_eq(after.tensors, before.tensors);
    cr_assert_eq(after.storages, before.storages);
    cr_assert_eq(after.nodes, before.nodes);
    cr_assert_eq(tgt_cpu_live(), bytes);
    TGO_RELEASE(loss);
}

Test(leakcheck, switched_off_objects_are_counted_not_scanned) {
    cr_assert(tg_leakcheck_enabled(), "on by default");
    tg_leakcheck_set_enabled(false);
    cr_assert(!tg_leakcheck_enabled());
    tg_tensor *off = microbatch(0); /* created while off */
    tg_tensor *gone = microbatch(2);
    tg_live_counts c = tg_live();
    cr_assert_eq(c.nodes, 12, "live counts stay exact while off");
    cr_assert_eq(c.tensors, 6, "two losses, two logits (held by the graphs), their .grad");
    tg_step_mark(NULL);
    tg_leak_report *r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 0, "not listed, not scanned");
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    tg_leak_report_free(r);
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int64_t total = c.tensors + c.storages + c.nodes;
    cr_assert_eq(tg_shutdown(f), total, "tg_shutdown counts objects that are not listed");
    fclose(f);
    cr_assert_null(strstr(buf, "losses[0]"), "an unlisted object was listed: %s", buf);
    free(buf);

    tg_leakcheck_set_enabled(true);
    cr_assert(tg_leakcheck_enabled());
    TGO_RELEASE(gone); /* created while off, freed while on */
    tg_tensor *on = microbatch(1);
    tg_step_mark(NULL);
    r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 1);
    const tg_leak_root *q = tg_leak_report_root(r, 0);
    cr_assert_str_eq(q->name, "losses[1]");
    cr_assert_eq(q->nodes, 6);
    cr_assert_eq(q->bytes, mb_kept_bytes(1));
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    tg_leak_report_free(r);

    tg_leakcheck_set_enabled(false);
    TGO_RELEASE(on); /* created while on, freed while off: unlinked */
    tg_leakcheck_set_enabled(true);
    r = scan();
    cr_assert_eq(tg_leak_report_nroots(r), 0);
    cr_assert_eq(tg_leak_report_unreachable(r), 0);
    tg_leak_report_free(r);
    TGO_RELEASE(off);
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
}

/* A leak found on purpose leaves no error behind (tg_leak_check used to put
 * its report in tg_last_error(), where a later NULL argument kept it as "the
 * first error"); the report is tg_leak_check_report(), "" after a clean
 * check. */
Test(leakcheck, an_expected_leak_leaves_the_threads_error_alone) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(3));
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *y = tg_scale(x, 2), *kept = tg_set_name(tg_sum(y), "kept");
    tg_release(y);
    tg_step_mark("step 1");
    tg_clear_error();
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    cr_assert_eq(tg_last_status(), TG_OK);
    cr_assert_str_eq(tg_last_error(), "");
    tgt_assert_leak_report("kept", NULL);
    cr_assert_null(tg_exp(NULL)); /* the next error is its own */
    tgt_assert_error(TG_ERR_NULL, "tg_exp", NULL);
    /* an earlier error is not replaced either */
    cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
    tgt_assert_error(TG_ERR_NULL, "tg_exp", NULL);
    tg_release(kept);
    cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
    cr_assert_str_eq(tg_leak_check_report(), "");
    tg_release(x);
}
