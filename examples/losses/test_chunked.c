/* examples/losses/test_chunked.c - the callbacks of chunked.c on
 * tg_linear_loss, the loss known in forward, against the full-batch losses.
 *
 * In float64, for hidden (B, T, d), weight (V, d) and bias (V), all requiring
 * grad, targets (B, T) with right padding (ignored rows), a temperature of
 * 1.3: tg_linear_loss with a callback must give the value, and the gradients
 * of hidden, weight and bias, that tg_linear_logprob_entropy followed by the
 * same loss on the whole batch gives (losses.c's zoo_ppo_loss plus a k3 KL
 * term, zoo_grpo_loss), within 1e-12 (relative, floored at 1). Each case runs
 * with several chunks (5 kept rows each, of 18), with the vocabulary cut into
 * blocks (vocab_block 4 of 13: the logits are recomputed) and whole, and with
 * the chunks following sequence boundaries (seq_lens). PPO is also checked
 * against examples/ppo_loss.c on the logits made with tg_matmul. On a CUDA
 * device (the emulated one of tests/simt in test_chunked_simt) the entry must
 * agree with the CPU. Every test leaves nothing alive. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "losses.h"
#include "ppo_loss.h"

#define B 4
#define T 6
#define D 5
#define V 13
#define N (B * T)
#define GROUP 2
#define IGNORE (-100)
#define TEMP 1.3

static void setup(void) {
    tg_clear_error();
}
static void teardown(void) {
    tg_scope_unwind(0);
    tg_live_counts c = tg_live();
    cr_expect_eq(c.tensors + c.storages + c.nodes, 0,
                 "alive after the test: %lld tensors, %lld storages, %lld nodes",
                 (long long)c.tensors, (long long)c.storages, (long long)c.nodes);
}
TestSuite(chunked, .init = setup, .fini = teardown);

/* One seeded batch; every tensor belongs to the scope open when it is made. */
typedef struct batch {
    tg_tensor *h, *w, *b;    /* (B, T, D), (V, D), (V): leaves requiring grad */
    tg_tensor *y;            /* (B, T) i64, IGNORE past each sequence's length */
    tg_tensor *mask;         /* (B, T) f64, 1 on the kept tokens */
    tg_tensor *old_lp, *ref_lp, *adv; /* (B, T) f64 */
    tg_tensor *rewards;      /* (B) f64, GROUP sequences per prompt */
} batch;

static const int64_t LENS[B] = {6, 3, 5, 4};

static tg_tensor *leaf(tg_tensor *t) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK, "%s", tg_last_error());
    return t;
}

static batch make_batch(void) {
    batch x;
    x.h = leaf(tg_randn(TG_F64, TG_SHAPE(B, T, D), 11, 0.0, 1.0));
    x.w = leaf(tg_randn(TG_F64, TG_SHAPE(V, D), 12, 0.0, 0.8));
    x.b = leaf(tg_randn(TG_F64, TG_SHAPE(V), 13, 0.0, 0.5));
    x.y = tg_randint(TG_SHAPE(B, T), 14, 0, V);
    double m[N];
    int64_t *y = tg_data(x.y);
    for (int64_t i = 0; i < N; i++) {
        m[i] = i % T < LENS[i / T];
        if (!m[i]) y[i] = IGNORE;
    }
    x.mask = tg_from_data(TG_F64, TG_SHAPE(B, T), m);
    /* the old and reference log-probs near the current ones: some ratios are
     * clipped above, some below, most not */
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.temperature = TEMP;
    tg_tensor *lp = NULL, *ent = NULL;
    TG_NO_GRAD {
        cr_assert_eq(tg_linear_logprob_entropy(x.h, x.w, x.b, x.y, &lo, &lp, &ent, NULL), TG_OK,
                     "%s", tg_last_error());
        x.old_lp = tg_add(lp, tg_randn(TG_F64, TG_SHAPE(B, T), 15, 0.0, 0.3));
        x.ref_lp = tg_add(lp, tg_randn(TG_F64, TG_SHAPE(B, T), 16, 0.0, 0.3));
    }
    x.adv = tg_randn(TG_F64, TG_SHAPE(B, T), 17, 0.0, 1.0);
    x.rewards = tg_rand(TG_F64, TG_SHAPE(B), 18, 0.0, 1.0);
    cr_assert(x.old_lp && x.ref_lp && x.adv && x.rewards && x.mask, "%s", tg_last_error());
    return x;
}

/* A loss of the whole batch from tg_linear_logprob_entropy's (B, T) outputs. */
typedef tg_tensor *(*full_fn)(tg_tensor *lp, tg_tensor *ent, const batch *x, const void *cfg);

/* The gradients of h, w, b (in that order) as doubles, then zeroed. */
typedef struct grads {
    double v[3][B * T * D > V * D ? B * T * D : V * D];
    int64_t n[3];
} grads;

static void take_grads(const batch *x, grads *g) {
    tg_tensor *p[3] = {x->h, x->w, x->b};
    for (int k = 0; k < 3; k++) {
        tg_tensor *gr = tg_grad(p[k]);
        cr_assert_not_null(gr, "no gradient of input %d", k);
        g->n[k] = tg_numel(gr);
        cr_assert_eq(tg_copy_out(gr, TG_F64, g->v[k], (size_t)g->n[k] * sizeof(double)), TG_OK,
                     "%s", tg_last_error());
        cr_assert_eq(tg_zero_grad(p[k]), TG_OK);
    }
}

static void assert_near(const char *what, double got, double want) {
    double tol = 1e-12 * (fabs(want) > 1 ? fabs(want) : 1);
    cr_assert(fabs(got - want) <= tol, "%s: %.17g, expected %.17g (difference %.3g)", what, got,
              want, got - want);
}

static void assert_same_grads(const char *cas, const grads *got, const grads *want) {
    static const char *const NAMES[3] = {"hidden", "weight", "bias"};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(got->n[k], want->n[k]);
        for (int64_t i = 0; i < want->n[k]; i++) {
            char what[160];
            snprintf(what, sizeof what, "%s: gradient of %s[%lld]", cas, NAMES[k], (long long)i);
            assert_near(what, got->v[k][i], want->v[k][i]);
        }
    }
}

/* The reference: the fused op on the whole batch, the full loss, backward. */
static double reference(const batch *x, full_fn full, const void *cfg, bool entropy_grad,
                        grads *g) {
    int sc = tg_scope_begin();
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.temperature = TEMP;
    lo.entropy_grad = entropy_grad;
    tg_tensor *lp = NULL, *ent = NULL;
    cr_assert_eq(tg_linear_logprob_entropy(x->h, x->w, x->b, x->y, &lo, &lp, &ent, NULL), TG_OK,
                 "%s", tg_last_error());
    tg_tensor *loss = full(lp, ent, x, cfg);
    cr_assert_not_null(loss, "%s", tg_last_error());
    double v = 0;
    cr_assert_eq(tg_item(loss, &v), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    take_grads(x, g);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    return v;
}

/* The ways the entry is run: chunks of 5 kept rows with the vocabulary in
 * blocks of 4 (recomputed) or whole, and one chunk per sequence. */
enum { PLAN_BLOCKS, PLAN_WHOLE_VOCAB, PLAN_SEQUENCES, N_PLANS };
static const char *const PLAN_NAMES[N_PLANS] = {"chunks of 5, blocks of 4",
                                                "chunks of 5, whole vocabulary",
                                                "one sequence per chunk"};
static const int64_t SEQ_LENS[B] = {T, T, T, T};

static tg_linear_loss_opts plan_opts(int plan, bool entropy_grad) {
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.temperature = TEMP;
    o.ignore_index = IGNORE;
    o.entropy_grad = entropy_grad;
    o.chunk_rows = plan == PLAN_SEQUENCES ? 1 : 5;
    o.vocab_block = plan == PLAN_BLOCKS ? 4 : 0;
    if (plan == PLAN_SEQUENCES) {
        o.seq_lens = SEQ_LENS;
        o.n_seqs = B;
    }
    return o;
}

/* Counts the chunks the callback sees and checks they tile [0, N) in order. */
typedef struct counted {
    tg_linear_loss_fn fn;
    void *user;
    int64_t calls, next_row;
} counted;

static tg_status counting_fn(const tg_linear_loss_chunk *c, void *user, tg_tensor **loss) {
    counted *k = user;
    cr_assert_eq(c->index, k->calls, "chunk %lld out of order", (long long)c->index);
    cr_assert_eq(c->row_start, k->next_row, "chunk %lld starts at %lld, not %lld",
                 (long long)c->index, (long long)c->row_start, (long long)k->next_row);
    cr_assert_eq(tg_numel(c->logprob), c->row_end - c->row_start);
    k->calls++;
    k->next_row = c->row_end;
    return k->fn(c, k->user, loss);
}

/* tg_linear_loss with fn against the reference; the logged log-prob and
 * entropy against the fused op's. Returns the number of chunks. */
static int64_t check_entry(const char *cas, const batch *x, tg_linear_loss_fn fn, void *user,
                           int plan, bool entropy_grad, double want, const grads *gwant) {
    char what[200];
    snprintf(what, sizeof what, "%s, %s", cas, PLAN_NAMES[plan]);
    int sc = tg_scope_begin();
    tg_linear_loss_opts o = plan_opts(plan, entropy_grad);
    counted k = {fn, user, 0, 0};
    tg_tensor *loss = NULL, *lp = NULL, *ent = NULL;
    cr_assert_eq(tg_linear_loss(x->h, x->w, x->b, x->y, counting_fn, &k, &o, &loss, &lp, &ent),
                 TG_OK, "%s: %s", what, tg_last_error());
    cr_assert_eq(k.next_row, N, "%s: the chunks end at row %lld", what, (long long)k.next_row);
    cr_assert_eq(tg_ndim(lp), 2, "%s: the log-prob is not (B, T)", what);
    double v = 0;
    cr_assert_eq(tg_item(loss, &v), TG_OK);
    assert_near(what, v, want);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s: %s", what, tg_last_error());
    grads *g = malloc(sizeof *g);
    cr_assert_not_null(g);
    take_grads(x, g);
    assert_same_grads(what, g, gwant);
    free(g);
    /* the logged outputs are the fused op's */
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.temperature = TEMP;
    tg_tensor *lp2 = NULL, *ent2 = NULL;
    TG_NO_GRAD {
        cr_assert_eq(tg_linear_logprob_entropy(x->h, x->w, x->b, x->y, &lo, &lp2, &ent2, NULL),
                     TG_OK, "%s", tg_last_error());
    }
    double a[N], b[N];
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(tg_copy_out(pass ? ent : lp, TG_F64, a, sizeof a), TG_OK);
        cr_assert_eq(tg_copy_out(pass ? ent2 : lp2, TG_F64, b, sizeof b), TG_OK);
        for (int i = 0; i < N; i++) {
            char w2[240];
            snprintf(w2, sizeof w2, "%s: logged %s[%d]", what, pass ? "entropy" : "logprob", i);
            assert_near(w2, a[i], b[i]);
        }
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    return k.calls;
}

/* ---- PPO -------------------------------------------------------------------- */

typedef struct ppo_cfg {
    tg_agg_mode mode;
    double ent_coef, kl_coef;
} ppo_cfg;

/* zoo_ppo_loss (no dual-clip, no value loss) plus kl_coef agg(k3). */
static tg_tensor *full_ppo(tg_tensor *lp, tg_tensor *ent, const batch *x, const void *cfg) {
    const ppo_cfg *c = cfg;
    zoo_ppo_opts o = zoo_ppo_defaults();
    o.dual_clip = 0;
    o.vf_coef = 0;
    o.ent_coef = c->ent_coef;
    o.mode = c->mode;
    tg_tensor *loss = zoo_ppo_loss(lp, x->old_lp, x->adv, x->mask, ent, NULL, NULL, NULL, &o);
    if (c->kl_coef != 0) {
        tg_tensor *d = tg_sub(x->ref_lp, lp);
        tg_tensor *k3 = tg_sub(tg_add_scalar(tg_exp(d), -1), d);
        loss = tg_add(loss, tg_scale(tg_agg_loss(k3, x->mask, c->mode), c->kl_coef));
    }
    return loss;
}

static const char *const MODES[3] = {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean"};

Test(chunked, ppo_equals_the_fused_op_then_the_loss) {
    const ppo_cfg CFGS[4] = {{TG_AGG_TOKEN_MEAN, 0.01, 0.05},
                             {TG_AGG_SEQ_MEAN_TOKEN_SUM, 0.01, 0.05},
                             {TG_AGG_SEQ_MEAN_TOKEN_MEAN, 0.01, 0.05},
                             {TG_AGG_TOKEN_MEAN, 0.0, 0.0}};
    grads *want = malloc(sizeof *want);
    cr_assert_not_null(want);
    for (int k = 0; k < 4; k++) {
        int sc = tg_scope_begin();
        batch x = make_batch();
        const ppo_cfg *c = &CFGS[k];
        const bool eg = c->ent_coef != 0;
        char cas[128];
        snprintf(cas, sizeof cas, "ppo %s, ent %g, kl %g", MODES[c->mode], c->ent_coef,
                 c->kl_coef);
        double v = reference(&x, full_ppo, c, eg, want);
        zoo_chunk_ppo p = {x.old_lp, c->kl_coef != 0 ? x.ref_lp : NULL, x.adv,
                           zoo_agg_weights(x.mask, c->mode), 0.2, c->ent_coef, c->kl_coef};
        cr_assert_not_null(p.weights, "%s", tg_last_error());
        for (int plan = 0; plan < N_PLANS; plan++) {
            int64_t chunks = check_entry(cas, &x, zoo_chunk_ppo_loss, &p, plan, eg, v, want);
            cr_assert_geq(chunks, plan == PLAN_SEQUENCES ? B : 4, "%s: %lld chunks", cas,
                          (long long)chunks);
        }
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
    free(want);
}

/* The token-mean case against examples/ppo_loss.c on the (B, T, V) logits
 * (h @ W^T + b) / T made with tg_matmul: no fused linear op on that side. */
Test(chunked, ppo_equals_the_example_on_materialized_logits) {
    int sc = tg_scope_begin();
    batch x = make_batch();
    grads *want = malloc(sizeof *want);
    cr_assert_not_null(want);
    tg_tensor *z = tg_scale(tg_add(tg_matmul(x.h, tg_transpose(x.w, 0, 1)), x.b), 1.0 / TEMP);
    ppo_batch pb = {z, x.old_lp, x.ref_lp, x.adv, x.y};
    ppo_loss_opts po = ppo_loss_opts_default(); /* clip 0.2, entropy 0.01, kl 0.05 */
    tg_tensor *loss = ppo_loss(&pb, &po, NULL);
    cr_assert_not_null(loss, "%s", tg_last_error());
    double v = 0;
    cr_assert_eq(tg_item(loss, &v), TG_OK);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    take_grads(&x, want);
    zoo_chunk_ppo p = {x.old_lp, x.ref_lp, x.adv, zoo_agg_weights(x.mask, TG_AGG_TOKEN_MEAN),
                       po.clip_eps, po.entropy_coef, po.kl_coef};
    check_entry("ppo_loss.c", &x, zoo_chunk_ppo_loss, &p, PLAN_BLOCKS, true, v, want);
    free(want);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- GRPO ------------------------------------------------------------------- */

typedef struct grpo_cfg {
    zoo_kl kl;
    tg_agg_mode mode;
} grpo_cfg;

static tg_tensor *full_grpo(tg_tensor *lp, tg_tensor *ent, const batch *x, const void *cfg) {
    const grpo_cfg *c = cfg;
    (void)ent;
    return zoo_grpo_loss(lp, x->old_lp, x->ref_lp, x->rewards, x->mask, GROUP, 0.2, 0.04, c->kl,
                         c->mode);
}

Test(chunked, grpo_equals_the_fused_op_then_the_loss) {
    static const char *const KL[3] = {"k1", "k2", "k3"};
    grads *want = malloc(sizeof *want);
    cr_assert_not_null(want);
    for (int kl = 0; kl < 3; kl++) {
        for (int m = 0; m < 3; m++) {
            int sc = tg_scope_begin();
            batch x = make_batch();
            grpo_cfg c = {(zoo_kl)kl, (tg_agg_mode)m};
            char cas[128];
            snprintf(cas, sizeof cas, "grpo %s %s", KL[kl], MODES[m]);
            /* the entropy is not in the loss: no entropy term in either */
            double v = reference(&x, full_grpo, &c, false, want);
            zoo_chunk_grpo g = {x.old_lp, x.ref_lp,
                                zoo_grpo_token_advantages(x.rewards, GROUP, 1e-4, T),
                                zoo_agg_weights(x.mask, c.mode), 0.2, 0.04, c.kl};
            cr_assert(g.adv && g.weights, "%s", tg_last_error());
            for (int plan = 0; plan < N_PLANS; plan++)
                check_entry(cas, &x, zoo_chunk_grpo_loss, &g, plan, false, v, want);
            cr_assert_eq(tg_scope_end(sc), TG_OK);
        }
    }
    free(want);
}

/* The weights reproduce tg_agg_loss for any per-token values. */
Test(chunked, weights_give_tg_agg_loss) {
    int sc = tg_scope_begin();
    batch x = make_batch();
    tg_tensor *vals = tg_randn(TG_F64, TG_SHAPE(B, T), 21, 0.0, 2.0);
    for (int m = 0; m < 3; m++) {
        double a = 0, b = 0;
        cr_assert_eq(tg_item(tg_sum(tg_mul(zoo_agg_weights(x.mask, (tg_agg_mode)m), vals)), &a),
                     TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_item(tg_agg_loss(vals, x.mask, (tg_agg_mode)m), &b), TG_OK);
        assert_near(MODES[m], a, b);
    }
    cr_assert_null(zoo_agg_weights(x.mask, (tg_agg_mode)7));
    cr_assert_eq(tg_last_status(), TG_ERR_VALUE);
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* A constant of the wrong length: the callback's error comes back from the
 * entry, naming the chunk's rows; nothing is kept and no .grad is touched. */
Test(chunked, a_failing_callback_fails_the_entry_cleanly) {
    int sc = tg_scope_begin();
    batch x = make_batch();
    zoo_chunk_grpo g = {x.old_lp, x.ref_lp, zoo_grpo_token_advantages(x.rewards, GROUP, 1e-4, T),
                        tg_ones(TG_F64, TG_SHAPE(N - 3)), 0.2, 0.04, ZOO_KL_K3};
    tg_linear_loss_opts o = plan_opts(PLAN_BLOCKS, false);
    tg_tensor *loss = NULL, *lp = NULL;
    tg_status st = tg_linear_loss(x.h, x.w, x.b, x.y, zoo_chunk_grpo_loss, &g, &o, &loss, &lp,
                                  NULL);
    cr_assert_eq(st, TG_ERR_VALUE, "%s", tg_last_error());
    cr_assert_eq(tg_last_status(), st);
    cr_assert_null(loss);
    cr_assert_null(lp);
    cr_assert(strstr(tg_last_error(), "tg_narrow") && strstr(tg_last_error(), "rows ["), "%s",
              tg_last_error());
    cr_assert_null(tg_grad(x.h));
    cr_assert_null(tg_grad(x.w));
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- on a CUDA device ------------------------------------------------------- */

/* The entry with both callbacks on the device (inputs and constants moved
 * there) against the same call on the CPU. Skipped without a device. */
Test(chunked, runs_on_a_cuda_device_like_on_the_cpu) {
    if (tg_cuda_device_count() == 0)
        cr_skip_test("no CUDA device: %s", tg_cuda_unavailable_reason());
    grads *gc = malloc(sizeof *gc), *gg = malloc(sizeof *gg);
    cr_assert(gc && gg);
    for (int which = 0; which < 2; which++) {
        for (int plan = 0; plan < N_PLANS; plan++) {
            int sc = tg_scope_begin();
            batch c = make_batch(), g;
            double v[2];
            for (int dev = 0; dev < 2; dev++) {
                const batch *x = &c;
                if (dev) { /* the same batch on the device */
                    g = c;
                    tg_tensor **f[] = {&g.h, &g.w, &g.b, &g.y, &g.mask, &g.old_lp, &g.ref_lp,
                                       &g.adv, &g.rewards};
                    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
                        *f[i] = tg_to_device(tg_detach(*f[i]), TG_CUDA);
                        cr_assert_not_null(*f[i], "%s", tg_last_error());
                    }
                    leaf(g.h);
                    leaf(g.w);
                    leaf(g.b);
                    x = &g;
                }
                zoo_chunk_ppo p = {x->old_lp, x->ref_lp, x->adv,
                                   zoo_agg_weights(x->mask, TG_AGG_TOKEN_MEAN), 0.2, 0.01, 0.05};
                zoo_chunk_grpo r = {x->old_lp, x->ref_lp,
                                    zoo_grpo_token_advantages(x->rewards, GROUP, 1e-4, T),
                                    zoo_agg_weights(x->mask, TG_AGG_SEQ_MEAN_TOKEN_MEAN), 0.2,
                                    0.04, ZOO_KL_K3};
                tg_linear_loss_opts o = plan_opts(plan, which == 0);
                tg_tensor *loss = NULL;
                cr_assert_eq(tg_linear_loss(x->h, x->w, x->b, x->y,
                                            which ? zoo_chunk_grpo_loss : zoo_chunk_ppo_loss,
                                            which ? (void *)&r : (void *)&p, &o, &loss, NULL, NULL),
                             TG_OK, "%s", tg_last_error());
                cr_assert_eq(tg_get_device(loss), dev ? TG_CUDA : TG_CPU);
                cr_assert_eq(tg_item(loss, &v[dev]), TG_OK);
                cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
                take_grads(x, dev ? gg : gc);
            }
            char what[160];
            snprintf(what, sizeof what, "%s on the device, %s", which ? "grpo" : "ppo",
                     PLAN_NAMES[plan]);
            assert_near(what, v[1], v[0]);
            assert_same_grads(what, gg, gc);
            cr_assert_eq(tg_scope_end(sc), TG_OK);
        }
    }
    free(gc);
    free(gg);
}
