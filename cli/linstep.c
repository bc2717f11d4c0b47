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

static int step_fail(const char *who, const cli_lin_config *c, tg_status st, const char *what) {
    return cli_step_fail(who, c->device, st, what);
}

static tg_status clock_at(const cli_lin_config *c, double *t) {
    return cli_step_clock(c->device, t);
}

/* The forward of the configuration's mode: new references in *lp, *ent. */
/* (inside the step's scope, which owns what it makes) */
static tg_status forward(tg_tensor *h, tg_tensor *w, tg_tensor *y, const cli_lin_config *c,
                         tg_tensor **lp, tg_tensor **ent) {
    *lp = *ent = NULL;
    if (c->mode == CLI_LIN_FUSED) {
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
    tg_tensor *lp = NULL, *ent = NULL, *mlp = NULL, *mh = NULL, *sh = NULL, *loss = NULL;
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
    mlp = tg_neg(tg_mean(lp));
    if (c->entropy_grad) {
        mh = tg_mean(ent);
        sh = tg_scale(mh, -0.01);
        loss = tg_add(mlp, sh);
    } else {
        loss = mlp;
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
