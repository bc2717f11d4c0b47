/* examples/ppo_train_step.c - a few PPO "training steps" on seeded data.
 *
 * The policy is the logits tensor itself (B, T, V), a leaf that requires grad,
 * standing in for a model's output. Each step:
 *   loss = ppo_loss(...)            (one scope per step owns what it makes)
 *   tg_backward(loss)               (frees the graph's saved tensors)
 *   logits -= lr * logits.grad      (under TG_NO_GRAD: an in-place update)
 *   tg_zero_grad(logits)
 *   tg_step_mark(...), tg_leak_check()   (no graph may outlive its step)
 * and prints the loss and the metrics (plain doubles). At the end every
 * tensor is released and tg_shutdown() must report nothing alive.
 *
 * Usage: ppo_train_step [steps]   (default 5). Exit status 0 on success, 1 on
 * any error (printed on stderr), a leaked graph, or objects left alive.
 */
#include <stdio.h>
#include <stdlib.h>

#include <tapegrad.h>

#include "ppo_loss.h"

enum { B = 4, T = 32, V = 512 };

int main(int argc, char **argv) {
    const int steps = argc > 1 ? atoi(argv[1]) : 5;
    if (steps < 1 || steps > 1000) {
        fprintf(stderr, "usage: ppo_train_step [steps 1..1000]\n");
        return 2;
    }
    ppo_loss_opts opts = ppo_loss_opts_default(); /* clip 0.2, entropy 0.01, kl 0.05 */
    const double lr = 20.0;
    int rc = 0;
    int64_t n_valid = 0;

    /* ---- the batch: tensors kept across steps (owned here, no scope) ---- */
    int64_t y[B * T];
    tg_tensor *tokens = tg_randint(TG_SHAPE(B * T), 42, 0, V); /* the sampled tokens */
    if (!tokens || tg_copy_out(tokens, TG_I64, y, sizeof y) != TG_OK) {
        fprintf(stderr, "ppo_train_step: %s\n", tg_last_error());
        return 1;
    }
    tg_release(tokens);
    for (int b = 0; b < B; b++)
        for (int t = T - 5 * b; t < T; t++) /* sequence b is padded after T - 5*b tokens */
            y[b * T + t] = opts.ignore_index;
    tg_tensor *logits = tg_set_name(tg_randn(TG_F32, TG_SHAPE(B, T, V), 1, 0.0, 1.0), "logits");
    tg_tensor *targets = tg_set_name(tg_from_data(TG_I64, TG_SHAPE(B, T), y), "targets");
    tg_tensor *advantages = tg_set_name(tg_randn(TG_F32, TG_SHAPE(B, T), 2, 0.0, 1.0), "advantages");
    tg_tensor *old_lp = NULL, *ref_lp = NULL;
    {   /* old and reference policies: the initial log-probs, slightly perturbed */
        int sc = tg_scope_begin();
        tg_tensor *lp0 = NULL;
        tg_logprob_opts lo = tg_logprob_opts_default();
        lo.ignore_index = opts.ignore_index;
        lo.want_entropy = false;
        tg_logprob_entropy(logits, targets, &lo, &lp0, NULL);
        old_lp = tg_scope_keep(tg_add(lp0, tg_randn(TG_F32, TG_SHAPE(B, T), 3, 0.0, 0.2)));
        ref_lp = tg_scope_keep(tg_add(lp0, tg_randn(TG_F32, TG_SHAPE(B, T), 4, 0.0, 0.1)));
        tg_scope_end(sc);
    }
    if (!old_lp || !ref_lp || tg_set_requires_grad(logits, true) != TG_OK) {
        fprintf(stderr, "ppo_train_step: setup: %s\n", tg_last_error());
        rc = 1;
    }
    tg_set_name(old_lp, "old_logprob");
    tg_set_name(ref_lp, "ref_logprob");
    const ppo_batch batch = {logits, old_lp, ref_lp, advantages, targets};

    printf("PPO loss on logits (B %d, T %d, V %d) f32; clip_eps %.2f, entropy_coef %.3f, "
           "kl_coef %.3f, lr %.1f\n",
           B, T, V, opts.clip_eps, opts.entropy_coef, opts.kl_coef, lr);
    printf("%4s  %10s  %10s  %8s  %9s  %9s  %7s  %12s\n", "step", "loss", "policy", "entropy",
           "kl", "clip_frac", "ratio", "saved (B)");

    /* ---- the training steps ---- */
    for (int step = 1; rc == 0 && step <= steps; step++) {
        const int sc = tg_scope_begin(); /* releases this step's tensors */
        ppo_metrics m;
        tg_mem_stats mem = {0};
        tg_tensor *loss = ppo_loss(&batch, &opts, &m);
        tg_mem_get(TG_CPU, &mem); /* bytes the graph saved for backward */
        tg_status st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
        if (st == TG_OK) {
            TG_NO_GRAD { st = tg_sub_(logits, tg_scale(tg_grad(logits), lr)); }
        }
        if (st == TG_OK) st = tg_zero_grad(logits);
        tg_scope_end(sc); /* the loss goes here: nothing of this step is kept */

        char label[32];
        snprintf(label, sizeof label, "step %d", step);
        tg_step_mark(label);
        if (st != TG_OK) {
            fprintf(stderr, "ppo_train_step: %s: %s\n", label, tg_last_error());
            rc = 1;
        } else if (tg_leak_check() != TG_OK) {
            fprintf(stderr, "ppo_train_step: %s kept a graph alive:\n%s\n", label,
                    tg_leak_check_report());
            rc = 1;
        } else {
            n_valid = m.n_valid;
            printf("%4d  %+10.6f  %+10.6f  %8.4f  %9.6f  %9.3f  %7.4f  %12zu\n", step, m.loss,
                   m.policy_loss, m.entropy, m.kl, m.clip_frac, m.ratio_mean, mem.saved);
        }
    }
    if (rc == 0)
        printf("%lld valid tokens of %d; no graph outlived its step\n", (long long)n_valid,
               B * T);

    /* ---- teardown: every object must be gone ---- */
    tg_release(logits);
    tg_release(targets);
    tg_release(advantages);
    tg_release(old_lp);
    tg_release(ref_lp);
    if (tg_shutdown(stderr) != 0) rc = 1;
    return rc;
}
