/* cli/linstep.c - one measured step of the output layer's log-prob and
 * entropy from hidden states. Contract: cli/linstep.h. Public API only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad.h>

#include "bandwidth.h"
#include "cli.h"
#include "common.h"
#include "linstep.h"
#include "lpstep.h"

static int lib_fail(const char *who, const char *what) {
    cli_progress_clear();
    fprintf(stderr, "tapegrad: %s: %s failed: %s: %s\n", who, what,
            tg_status_name(tg_last_status()), tg_last_error());
    return CLI_EXIT_FAIL;
}

const char *cli_lin_mode_name(const cli_lin_config *c) {
    if (c->mode == CLI_LIN_MATERIALIZED) return "materialized";
    if (c->mode == CLI_LIN_LOSS) return "loss";
    if (c->mode == CLI_LIN_FUSED_LOSS) return "fused+loss";
    return c->entropy_grad ? "fused" : "fused-no-entropy-grad";
}

/* t converted to dt (t itself when it has it); releases t. */
static tg_tensor *as_dtype(tg_tensor *t, tg_dtype dt) {
    if (!t || tg_get_dtype(t) == dt) return t;
    tg_tensor *r = tg_to_dtype(t, dt);
    tg_release(t);
    return r;
}

/* t on dev as a named leaf requiring grad (when grad); releases t. */
static tg_tensor *place(tg_tensor *t, tg_device dev, const char *name, bool grad) {
    if (!t) return NULL;
    tg_tensor *r = t;
    if (dev != TG_CPU) {
        r = tg_to_device(t, dev);
        tg_release(t);
    }
    if (r && grad && tg_set_requires_grad(r, true) != TG_OK) {
        tg_release(r);
        return NULL;
    }
    return r ? tg_set_name(r, name) : NULL;
}

int cli_lin_inputs(const char *who, int64_t seq, int64_t d, int64_t vocab, tg_dtype dt,
                   tg_device device, uint64_t seed, tg_tensor **hidden, tg_tensor **weight,
                   tg_tensor **targets) {
    const uint64_t s = cli_seed_mix(seed, seq, vocab) ^ (uint64_t)d * 0x9E3779B97F4A7C15ull;
    tg_clear_error();
    const tg_dtype gen = dt == TG_BF16 ? TG_F32 : dt; /* bf16: drawn in f32, rounded */
    *hidden = place(as_dtype(tg_randn(gen, TG_SHAPE(seq, d), s, 0.0, 1.0), dt), device, "hidden",
                    true);
    *weight = *hidden ? place(as_dtype(tg_randn(gen, TG_SHAPE(vocab, d), s + 1, 0.0,
                                                2.0 / sqrt((double)d)),
                                       dt),
                              device, "weight", true)
                      : NULL;
    tg_tensor *y = *weight ? tg_randint(TG_SHAPE(seq), s + 2, 0, vocab) : NULL;
    if (y) { /* 1% of the rows ignored, spread out */
        int64_t *p = tg_data(y);
        for (int64_t i = 37; i < seq; i += 100) p[i] = -100;
    }
    *targets = place(y, device, "targets", false);
    if (!*targets) {
        tg_release(*hidden);
        tg_release(*weight);
        *hidden = *weight = NULL;
        return lib_fail(who, "making the inputs");
    }
    return CLI_EXIT_OK;
}

int cli_lin_ppo_inputs(const char *who, tg_tensor *hidden, tg_tensor *weight, tg_tensor *targets,
                       uint64_t seed, cli_lin_ppo *ppo) {
    memset(ppo, 0, sizeof *ppo);
    ppo->clip = 0.2;
    ppo->ent_coef = 0.01;
    tg_clear_error();
    const int64_t n = tg_numel(targets);
    const tg_device dev = tg_get_device(hidden);
    const tg_dtype dt = tg_get_dtype(hidden) == TG_BF16 ? TG_F32 : tg_get_dtype(hidden);
    const int scope = tg_scope_begin();
    tg_tensor *lp = NULL, *ent = NULL; /* (seq) */
    tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
    o.want_entropy = false;
    TG_NO_GRAD {
        if (tg_linear_logprob_entropy(hidden, weight, NULL, targets, &o, &lp, &ent, NULL) ==
            TG_OK) {
            const uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
            tg_tensor *noise = tg_to_device(tg_randn(dt, TG_SHAPE(n), s, 0.0, 0.2), dev);
            tg_tensor *kept = tg_to_dtype(tg_ne_scalar(targets, -100), dt);
            ppo->old_logprob = tg_add(lp, noise);
            ppo->advantages = tg_to_device(tg_randn(dt, TG_SHAPE(n), s + 1, 0.0, 1.0), dev);
            ppo->weights = tg_div(kept, tg_sum(kept));
        }
    }
    const bool ok = ppo->old_logprob && ppo->advantages && ppo->weights;
    if (ok) { /* out of the scope, to the caller */
        tg_scope_keep(ppo->old_logprob);
        tg_scope_keep(ppo->advantages);
        tg_scope_keep(ppo->weights);
    }
    tg_scope_end(scope); /* on failure it releases whatever was made */
    if (!ok) {
        ppo->old_logprob = ppo->advantages = ppo->weights = NULL;
        return lib_fail(who, "making the loss's constants");
    }
    return CLI_EXIT_OK;
}

void cli_lin_ppo_release(cli_lin_ppo *ppo) {
    tg_release(ppo->old_logprob);
    tg_release(ppo->advantages);
    tg_release(ppo->weights);
    ppo->old_logprob = ppo->advantages = ppo->weights = NULL;
}

tg_status cli_lin_ppo_loss(const tg_linear_loss_chunk *c, void *user, tg_tensor **loss) {
    cli_lin_ppo *p = user;
    const int64_t rows = c->row_end - c->row_start;
    p->chunks++;
    if (rows > p->max_chunk_rows) p->max_chunk_rows = rows;
    const int scope = tg_scope_begin();
    tg_tensor *old = tg_narrow(p->old_logprob, 0, c->row_start, rows);
    tg_tensor *adv = tg_narrow(p->advantages, 0, c->row_start, rows);
    tg_tensor *w = tg_narrow(p->weights, 0, c->row_start, rows);
    tg_tensor *ratio = tg_exp(tg_sub(c->logprob, old));
    tg_tensor *pg = tg_neg(tg_minimum(tg_mul(ratio, adv),
                                      tg_mul(tg_clamp(ratio, 1 - p->clip, 1 + p->clip), adv)));
    if (p->ent_coef != 0) pg = tg_sub(pg, tg_scale(c->entropy, p->ent_coef));
    tg_tensor *kept = tg_scope_keep(tg_sum(tg_mul(w, pg)));
    const tg_status st = kept ? TG_OK : tg_last_status();
    tg_scope_end(scope);
    *loss = kept;
    return st;
}

static int step_fail(const char *who, const cli_lin_config *c, tg_status st, const char *what) {
    return cli_step_fail(who, c->device, st, what);
}

static tg_status clock_at(const cli_lin_config *c, double *t) {
    return cli_step_clock(c->device, t);
}

/* The forward of the configuration's mode: new references in *lp, *ent
 * (CLI_LIN_LOSS: the loss in *lp, *ent NULL). */
/* (inside the step's scope, which owns what it makes) */
static tg_status forward(tg_tensor *h, tg_tensor *w, tg_tensor *y, const cli_lin_config *c,
                         tg_tensor **lp, tg_tensor **ent) {
    *lp = *ent = NULL;
    if (c->mode == CLI_LIN_LOSS) {
        tg_linear_loss_opts o = tg_linear_loss_opts_default();
        o.entropy_grad = c->entropy_grad;
        o.chunk_rows = c->chunk_rows;
        o.workspace_bytes = c->workspace_bytes;
        return tg_linear_loss(h, w, NULL, y, cli_lin_ppo_loss, c->ppo, &o, lp, NULL, NULL);
    }
    if (c->mode == CLI_LIN_FUSED || c->mode == CLI_LIN_FUSED_LOSS) {
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.entropy_grad = c->entropy_grad;
        o.chunk_rows = c->chunk_rows;
        o.workspace_bytes = c->workspace_bytes;
        return tg_linear_logprob_entropy(h, w, NULL, y, &o, lp, ent, NULL);
    }
    tg_tensor *z = tg_set_name(tg_matmul(h, tg_transpose(w, 0, 1)), "logits");
    if (!z) return tg_last_status();
    tg_logprob_opts o = tg_logprob_opts_default();
    o.entropy_grad = c->entropy_grad;
    return tg_logprob_entropy(z, y, &o, lp, ent);
}

int cli_lin_step(const char *who, tg_tensor *h, tg_tensor *w, tg_tensor *y,
                 const cli_lin_config *c, cli_lin_measure *m, cli_lin_hook hook, void *user) {
    tg_mem_stats m0, m1, m2, h0;
    tg_mem_get(c->device, &m0);
    tg_mem_get(TG_CPU, &h0);
    tg_mem_reset_peak(c->device);
    tg_clear_error();
    memset(m, 0, sizeof *m);
    const int scope = tg_scope_begin(); /* everything the step makes */
    tg_tensor *lp = NULL, *ent = NULL, *loss = NULL;
    int rc = CLI_EXIT_OK;
    double t0, t1;
    tg_status st = clock_at(c, &t0);
    if (st == TG_OK) st = forward(h, w, y, c, &lp, &ent);
    tg_status sync = clock_at(c, &t1);
    tg_mem_get(c->device, &m1);
    if (st != TG_OK || sync != TG_OK) {
        rc = step_fail(who, c, st != TG_OK ? st : sync, "the forward call");
        goto done;
    }
    if (c->mode == CLI_LIN_LOSS) {
        loss = lp; /* made, with its gradient, by the forward call */
    } else if (c->mode == CLI_LIN_FUSED_LOSS) {
        /* the same loss on the whole batch as one chunk (it reads neither the
         * targets nor the log-sum-exp); the step's scope owns it */
        const tg_linear_loss_chunk all = {0, 0, tg_numel(lp), lp, ent, NULL, NULL};
        if (cli_lin_ppo_loss(&all, c->ppo, &loss) != TG_OK) loss = NULL;
    } else if (c->entropy_grad) {
        loss = tg_add(tg_neg(tg_mean(lp)), tg_scale(tg_mean(ent), -0.01));
    } else {
        loss = tg_neg(tg_mean(lp));
    }
    if (!loss || tg_item(loss, &m->loss) != TG_OK) {
        rc = step_fail(who, c, tg_last_status(), "building the loss");
        goto done;
    }
    double bwd = t1; /* from the end of forward: the loss, then backward */
    if ((rc = cli_step_backward(who, c->device, loss, hook, user, &bwd, &m2)) != CLI_EXIT_OK)
        goto done;
    m->fwd_ms = (t1 - t0) * 1e3;
    m->bwd_ms = bwd;
    m->peak_bytes = m2.peak_total > m0.live_total ? m2.peak_total - m0.live_total : 0;
    m->saved_bytes = m1.saved > m0.saved ? m1.saved - m0.saved : 0;
    /* bf16: the gradients are made in f32 and rounded to bf16 at the end of
     * backward, when both exist */
    const tg_dtype gdt = tg_get_dtype(h);
    m->grad_bytes = (size_t)(tg_numel(h) + tg_numel(w)) *
                    (tg_dtype_size(gdt) + (gdt == TG_BF16 ? 4 : 0));
done:
    tg_scope_end(scope);
    tg_zero_grad(h);
    tg_zero_grad(w);
    if (rc == CLI_EXIT_OK) rc = cli_step_check_left(who, c->device, &m0, &h0);
    return rc;
}
