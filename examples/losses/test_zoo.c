/* examples/losses/test_zoo.c - every loss of losses.h against PyTorch.
 *
 * For each case of make_fixtures.py: the inputs are read from its .npy files,
 * the loss is built with losses.c, and its value and the gradient of every
 * input that requires grad must equal PyTorch float64's within 1e-12
 * (relative, floored at 1). Then the three assertions a user copies into
 * their own tests:
 *   - backward succeeds: no in-place error anywhere in the loss;
 *   - nothing outlives the step: once the step's scope is closed, no tensor,
 *     storage or graph node is alive (a loss kept for logging would show here);
 *   - a term whose coefficient is 0 saves nothing: the bytes saved for
 *     backward equal those of the loss built without that term's inputs, and
 *     those inputs get no gradient. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "losses.h"
#include "npy.h"

/* The largest relative difference from PyTorch seen so far (printed per test
 * with TG_ZOO_REPORT=1 in the environment). */
static double g_worst;
static char g_worst_what[160];

static void setup(void) {
    tg_clear_error();
    g_worst = 0;
    g_worst_what[0] = '\0';
}
static void teardown(void) {
    if (getenv("TG_ZOO_REPORT"))
        fprintf(stderr, "largest relative difference from PyTorch: %.3g (%s)\n", g_worst,
                g_worst_what);
    tg_live_counts c = tg_live();
    cr_expect_eq(c.tensors + c.storages + c.nodes, 0,
                 "alive after the test: %lld tensors, %lld storages, %lld nodes",
                 (long long)c.tensors, (long long)c.storages, (long long)c.nodes);
}
TestSuite(zoo, .init = setup, .fini = teardown);

/* CASE.NAME.npy of the fixtures, in the current scope; requires grad when rg. */
static tg_tensor *fx(const char *cas, const char *name, bool rg) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s.npy", ZOO_FIXTURES, cas, name);
    tg_tensor *t = NULL;
    cr_assert_eq(tgcli_npy_load(path, &t), TG_OK, "%s", tg_last_error());
    if (rg) cr_assert_eq(tg_set_requires_grad(t, true), TG_OK, "%s", tg_last_error());
    return t;
}

static void assert_close(const char *what, const tg_tensor *got, const tg_tensor *want) {
    cr_assert_not_null(got, "%s: missing (%s)", what, tg_last_error());
    int64_t n = tg_numel(want);
    cr_assert_eq(tg_numel(got), n, "%s: %lld elements, PyTorch has %lld", what,
                 (long long)tg_numel(got), (long long)n);
    double *a = malloc((size_t)(n ? n : 1) * sizeof *a), *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    cr_assert(a && b);
    cr_assert_eq(tg_copy_out(got, TG_F64, a, (size_t)n * sizeof *a), TG_OK);
    cr_assert_eq(tg_copy_out(want, TG_F64, b, (size_t)n * sizeof *b), TG_OK);
    for (int64_t i = 0; i < n; i++) {
        double tol = 1e-12 * (fabs(b[i]) > 1 ? fabs(b[i]) : 1);
        double rel = fabs(a[i] - b[i]) / (fabs(b[i]) > 1e-300 ? fabs(b[i]) : 1);
        if (rel > g_worst) {
            g_worst = rel;
            snprintf(g_worst_what, sizeof g_worst_what, "%s[%lld]", what, (long long)i);
        }
        if (!(fabs(a[i] - b[i]) <= tol)) {
            double x = a[i], y = b[i];
            free(a);
            free(b);
            cr_assert_fail("%s[%lld]: tapegrad %.17g, PyTorch %.17g", what, (long long)i, x, y);
        }
    }
    free(a);
    free(b);
}

/* The value, backward (no in-place error) and the gradients of names[0..n). */
static void check_case(const char *cas, tg_tensor *loss, int n, const char *const *names,
                       tg_tensor *const *leaves) {
    char what[160];
    cr_assert_not_null(loss, "%s: %s", cas, tg_last_error());
    snprintf(what, sizeof what, "%s: loss", cas);
    assert_close(what, loss, fx(cas, "loss", false));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s: backward: %s", cas, tg_last_error());
    for (int i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof name, "grad.%s", names[i]);
        snprintf(what, sizeof what, "%s: gradient of %s", cas, names[i]);
        assert_close(what, tg_grad(leaves[i]), fx(cas, name, false));
    }
}

static size_t saved_bytes(void) {
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    return m.saved;
}

/* Runs one step in its own scope, then checks that nothing outlives it. */
#define STEP(...)                                                                          \
    do {                                                                                   \
        int sc_ = tg_scope_begin();                                                        \
        __VA_ARGS__;                                                                       \
        cr_assert_eq(tg_scope_end(sc_), TG_OK, "%s", tg_last_error());                     \
        tg_live_counts c_ = tg_live();                                                     \
        cr_assert_eq(c_.nodes + c_.tensors, 0, "the step left %lld nodes, %lld tensors",   \
                     (long long)c_.nodes, (long long)c_.tensors);                          \
    } while (0)

static const char *const MODES[3] = {"token_mean", "seq_mean_token_sum", "seq_mean_token_mean"};

Test(zoo, ppo_clipped_dual_clip_entropy_value_loss) {
    for (int m = 0; m < 3; m++) {
        char cas[64];
        snprintf(cas, sizeof cas, "ppo_%s", MODES[m]);
        STEP({
            tg_tensor *logp = fx(cas, "logp", true), *ent = fx(cas, "entropy", true),
                      *v = fx(cas, "values", true);
            zoo_ppo_opts o = zoo_ppo_defaults();
            o.mode = (tg_agg_mode)m;
            tg_tensor *loss = zoo_ppo_loss(logp, fx(cas, "old_logp", false), fx(cas, "adv", false),
                                           fx(cas, "mask", false), ent, v,
                                           fx(cas, "old_values", false), fx(cas, "returns", false), &o);
            check_case(cas, loss, 3, (const char *const[]){"logp", "entropy", "values"},
                       (tg_tensor *const[]){logp, ent, v});
        });
    }
}

Test(zoo, ppo_zero_coefficients_save_nothing_for_their_terms) {
    const char *cas = "ppo_token_mean";
    size_t with_zero = 0, without = 0;
    STEP({
        tg_tensor *logp = fx(cas, "logp", true), *ent = fx(cas, "entropy", true),
                  *v = fx(cas, "values", true);
        zoo_ppo_opts o = zoo_ppo_defaults();
        o.ent_coef = o.vf_coef = 0;
        size_t s0 = saved_bytes();
        tg_tensor *loss = zoo_ppo_loss(logp, fx(cas, "old_logp", false), fx(cas, "adv", false),
                                       fx(cas, "mask", false), ent, v, fx(cas, "old_values", false),
                                       fx(cas, "returns", false), &o);
        with_zero = saved_bytes() - s0;
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        cr_assert_null(tg_grad(ent), "the entropy took part in backward");
        cr_assert_null(tg_grad(v), "the values took part in backward");
    });
    STEP({
        zoo_ppo_opts o = zoo_ppo_defaults();
        o.ent_coef = o.vf_coef = 0;
        size_t s0 = saved_bytes();
        tg_tensor *loss = zoo_ppo_loss(fx(cas, "logp", true), fx(cas, "old_logp", false),
                                       fx(cas, "adv", false), fx(cas, "mask", false), NULL, NULL,
                                       NULL, NULL, &o);
        cr_assert_not_null(loss, "%s", tg_last_error());
        without = saved_bytes() - s0;
    });
    cr_assert_eq(with_zero, without, "saved %zu bytes with zero coefficients, %zu without the terms",
                 with_zero, without);
}

Test(zoo, grpo_every_kl_estimator_and_aggregation) {
    static const char *const KL[3] = {"k1", "k2", "k3"};
    for (int k = 0; k < 3; k++) {
        for (int m = 0; m < 3; m++) {
            char cas[64];
            snprintf(cas, sizeof cas, "grpo_%s_%s", KL[k], MODES[m]);
            STEP({
                tg_tensor *logp = fx(cas, "logp", true);
                tg_tensor *loss = zoo_grpo_loss(logp, fx(cas, "old_logp", false),
                                                fx(cas, "ref_logp", false), fx(cas, "rewards", false),
                                                fx(cas, "mask", false), 2, 0.2, 0.04, (zoo_kl)k,
                                                (tg_agg_mode)m);
                check_case(cas, loss, 1, (const char *const[]){"logp"}, (tg_tensor *const[]){logp});
            });
        }
    }
    /* beta 0: the reference model's log-probs are not needed, nothing is saved for them */
    size_t with_zero = 0, without = 0;
    const char *cas = "grpo_k3_token_mean";
    for (int with_ref = 1; with_ref >= 0; with_ref--) {
        STEP({
            size_t s0 = saved_bytes();
            tg_tensor *loss = zoo_grpo_loss(fx(cas, "logp", true), fx(cas, "old_logp", false),
                                            with_ref ? fx(cas, "ref_logp", false) : NULL,
                                            fx(cas, "rewards", false), fx(cas, "mask", false), 2,
                                            0.2, 0.0, ZOO_KL_K3, TG_AGG_TOKEN_MEAN);
            cr_assert_not_null(loss, "%s", tg_last_error());
            *(with_ref ? &with_zero : &without) = saved_bytes() - s0;
        });
    }
    cr_assert_eq(with_zero, without);
}

Test(zoo, dpo_cdpo_ipo_simpo) {
    static const char *const CASES[4] = {"dpo", "cdpo", "ipo", "simpo"};
    for (int k = 0; k < 4; k++) {
        const char *cas = CASES[k];
        STEP({
            tg_tensor *pc = fx(cas, "pi_c", true), *pr = fx(cas, "pi_r", true);
            bool simpo = k == 3;
            tg_tensor *loss = zoo_dpo_loss(pc, pr, fx(cas, "ref_c", false), fx(cas, "ref_r", false),
                                           simpo ? 2.0 : 0.1, k == 1 ? 0.1 : 0.0,
                                           k == 2 ? ZOO_DPO_IPO : simpo ? ZOO_DPO_SIMPO : ZOO_DPO_SIGMOID,
                                           simpo ? fx(cas, "len_c", false) : NULL,
                                           simpo ? fx(cas, "len_r", false) : NULL, 0.5);
            check_case(cas, loss, 2, (const char *const[]){"pi_c", "pi_r"},
                       (tg_tensor *const[]){pc, pr});
        });
    }
}

Test(zoo, kto_reinforce_pretrain) {
    STEP({
        tg_tensor *pi = fx("kto", "pi", true);
        tg_tensor *loss = zoo_kto_loss(pi, fx("kto", "ref", false), fx("kto", "desirable", false),
                                       fx("kto", "kl_pi", false), fx("kto", "kl_ref", false), 0.1,
                                       1.0, 1.33);
        check_case("kto", loss, 1, (const char *const[]){"pi"}, (tg_tensor *const[]){pi});
    });
    STEP({
        tg_tensor *logp = fx("reinforce", "logp", true);
        tg_tensor *loss = zoo_reinforce_loss(logp, fx("reinforce", "rewards", false),
                                             fx("reinforce", "mask", false));
        check_case("reinforce", loss, 1, (const char *const[]){"logp"}, (tg_tensor *const[]){logp});
    });
    STEP({
        tg_tensor *z = fx("pretrain", "logits", true);
        tg_tensor *loss = zoo_pretrain_loss(z, fx("pretrain", "targets", false), 0.1, 1e-4);
        check_case("pretrain", loss, 1, (const char *const[]){"logits"}, (tg_tensor *const[]){z});
    });
}

/* PPO on GAE advantages: the advantages and returns (tg_discounted_cumsum of the
 * deltas with gamma lambda) against the trainers' loop over t, then the loss and
 * the gradients of logp and of the critic's new values; the rollout's values
 * require grad here and get none (the advantages are computed with grad mode
 * off), and nothing is saved for the advantages. */
Test(zoo, ppo_gae_advantages_and_clipped_value_loss) {
    static const char *const CASES[2] = {"ppo_gae_bootstrap", "ppo_gae_terminal"};
    for (int k = 0; k < 2; k++) {
        const char *cas = CASES[k];
        STEP({
            tg_tensor *ret = NULL, *values = fx(cas, "values", true);
            size_t s0 = saved_bytes();
            tg_tensor *adv = zoo_gae(fx(cas, "rewards", false), values, fx(cas, "mask", false),
                                     0.99, 0.95, &ret);
            cr_assert_not_null(adv, "%s: %s", cas, tg_last_error());
            cr_assert_eq(saved_bytes(), s0, "%s: the advantages saved something", cas);
            cr_assert(!tg_requires_grad(adv) && !tg_requires_grad(ret));
            char what[96];
            snprintf(what, sizeof what, "%s: advantages", cas);
            assert_close(what, adv, fx(cas, "adv", false));
            snprintf(what, sizeof what, "%s: returns", cas);
            assert_close(what, ret, fx(cas, "returns", false));
            tg_tensor *logp = fx(cas, "logp", true), *nv = fx(cas, "new_values", true);
            zoo_gae_opts o = zoo_gae_defaults();
            tg_tensor *loss = zoo_ppo_gae_loss(logp, fx(cas, "old_logp", false), nv,
                                               fx(cas, "rewards", false), values,
                                               fx(cas, "mask", false), &o);
            check_case(cas, loss, 2, (const char *const[]){"logp", "new_values"},
                       (tg_tensor *const[]){logp, nv});
            cr_assert_null(tg_grad(values), "%s: the rollout's values got a gradient", cas);
        });
    }
    STEP({ /* values of another length: the example's own error */
        tg_tensor *ret = NULL, *r = fx("ppo_gae_terminal", "rewards", false);
        tg_clear_error();
        cr_assert_null(zoo_gae(r, tg_zeros(TG_F64, TG_SHAPE(4, 3)), r, 0.99, 0.95, &ret));
        cr_assert_null(ret);
        cr_assert_eq(tg_last_status(), TG_ERR_SHAPE, "%s", tg_last_error());
        tg_clear_error();
    });
}

/* Cross-entropy plus z-loss on (B, T, V) logits: the lse of the fused op with two
 * leading dims against torch.logsumexp; with z_coef 0 the lse is not asked for
 * and the loss saves what plain cross-entropy saves. */
Test(zoo, zloss_on_batch_time_vocab_logits) {
    STEP({
        tg_tensor *z = fx("zloss", "logits", true);
        tg_tensor *loss = zoo_zloss_loss(z, fx("zloss", "targets", false),
                                         fx("zloss", "mask", false), 1e-3);
        check_case("zloss", loss, 1, (const char *const[]){"logits"}, (tg_tensor *const[]){z});
    });
    size_t saved[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        STEP({
            tg_tensor *z = fx("zloss", "logits", true), *y = fx("zloss", "targets", false);
            tg_tensor *m = fx("zloss", "mask", false);
            size_t s0 = saved_bytes();
            tg_tensor *loss = NULL;
            if (k == 0) {
                loss = zoo_zloss_loss(z, y, m, 0.0);
            } else { /* the cross-entropy term alone, written out */
                tg_logprob_opts o = tg_logprob_opts_default();
                tg_tensor *lp = NULL;
                o.want_entropy = false;
                cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
                loss = tg_masked_mean(tg_neg(lp), m, 0, true);
            }
            cr_assert_not_null(loss, "%s", tg_last_error());
            saved[k] = saved_bytes() - s0;
        });
    }
    cr_assert_eq(saved[0], saved[1], "z_coef 0 saved %zu bytes, cross-entropy alone %zu",
                 saved[0], saved[1]);
}

Test(zoo, bad_inputs_give_the_first_error_and_keep_nothing) {
    STEP({
        zoo_ppo_opts o = zoo_ppo_defaults();
        tg_tensor *logp = fx("ppo_token_mean", "logp", true);
        tg_tensor *wrong = tg_zeros(TG_F64, TG_SHAPE(3, 2));
        tg_clear_error();
        cr_assert_null(zoo_ppo_loss(logp, wrong, wrong, wrong, NULL, NULL, NULL, NULL, &o));
        cr_assert_eq(tg_last_status(), TG_ERR_SHAPE, "%s", tg_last_error());
        cr_assert(strstr(tg_last_error(), "tg_sub"), "%s", tg_last_error());
        tg_clear_error();
        cr_assert_null(zoo_dpo_loss(NULL, logp, logp, logp, 0.1, 0, ZOO_DPO_SIGMOID, NULL, NULL, 0));
        cr_assert_eq(tg_last_status(), TG_ERR_NULL, "%s", tg_last_error());
        tg_clear_error();
    });
}
