/* cli/lpstep.c - one measured training step of tg_logprob_entropy, shared by
 * the entropy and chunk demos.
 *
 * Contract: see cli/lpstep.h. Uses only the public API (<tapegrad.h>).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad.h>

#include "bandwidth.h"
#include "cli.h"
#include "common.h"
#include "lpstep.h"

#define MIB (1024.0 * 1024.0)

static int lib_fail(const char *who, const char *what) {
    cli_progress_clear();
    fprintf(stderr, "tapegrad: %s: %s failed: %s: %s\n", who, what,
            tg_status_name(tg_last_status()), tg_last_error());
    return CLI_EXIT_FAIL;
}

int cli_lp_inputs(const char *who, int64_t seq, int64_t vocab, uint64_t seed,
                  tg_tensor **logits, tg_tensor **targets) {
    const uint64_t s = cli_seed_mix(seed, seq, vocab);
    *targets = NULL;
    tg_clear_error();
    *logits = tg_set_name(tg_randn(TG_F32, TG_SHAPE(seq, vocab), s, 0.0, 2.0), "logits");
    if (!*logits || tg_set_requires_grad(*logits, true) != TG_OK) {
        tg_release(*logits);
        *logits = NULL;
        return lib_fail(who, "making the logits");
    }
    *targets = tg_set_name(tg_randint(TG_SHAPE(seq), s + 1, 0, vocab), "targets");
    if (!*targets) {
        tg_release(*logits);
        *logits = NULL;
        return lib_fail(who, "making the targets");
    }
    return CLI_EXIT_OK;
}

/* A library failure inside a step: CLI_LP_NOMEM, silently, when the device
 * ran out of memory (the caller reports the configuration as skipped), else
 * the usual one-line message. */
int cli_step_fail(const char *who, tg_device dev, tg_status st, const char *what) {
    if (dev == TG_CUDA && st == TG_ERR_NOMEM)
        return CLI_LP_NOMEM;
    return lib_fail(who, what);
}

static int step_fail(const char *who, const cli_lp_config *c, tg_status st, const char *what) {
    return cli_step_fail(who, c->device, st, what);
}

/* The clock, once the GPU work queued so far has finished: CUDA kernels are
 * asynchronous, so without the wait a time would cover only their launches.
 * On the CPU, the clock alone (no call into the CUDA runtime). */
tg_status cli_step_clock(tg_device dev, double *t) {
    tg_status st = dev == TG_CUDA ? tg_cuda_synchronize() : TG_OK;
    *t = cli_now_s();
    return st;
}

static tg_status step_clock(const cli_lp_config *c, double *t) {
    return cli_step_clock(c->device, t);
}

int cli_step_backward(const char *who, tg_device dev, tg_tensor *loss, cli_lp_hook hook,
                      void *user, double *bwd_ms, tg_mem_stats *after) {
    double t2, t3, t4;
    tg_status st = cli_step_clock(dev, &t2);
    if (st != TG_OK) return cli_step_fail(who, dev, st, "building the loss");
    int rc = hook ? hook(loss, user) : CLI_EXIT_OK;
    if (rc != CLI_EXIT_OK) return rc;
    if ((st = cli_step_clock(dev, &t3)) != TG_OK)
        return cli_step_fail(who, dev, st, "waiting for the device");
    st = tg_backward(loss, NULL, false);
    tg_status sync = cli_step_clock(dev, &t4);
    tg_mem_get(dev, after);
    if (st != TG_OK || sync != TG_OK)
        return cli_step_fail(who, dev, st != TG_OK ? st : sync, "backward");
    *bwd_ms = (t2 - *bwd_ms + (t4 - t3)) * 1e3;
    return CLI_EXIT_OK;
}

int cli_step_check_left(const char *who, tg_device dev, const tg_mem_stats *m0,
                        const tg_mem_stats *h0) {
    tg_mem_stats m3, h3, a = *m0;
    tg_mem_get(dev, &m3);
    tg_mem_get(TG_CPU, &h3);
    const char *where = dev == TG_CUDA ? " on the device" : "";
    if (dev == TG_CUDA && (h3.live_total != h0->live_total || h3.saved != h0->saved)) {
        m3 = h3;
        a = *h0;
        where = " on the host";
    }
    if (m3.live_total == a.live_total && m3.saved == a.saved) return CLI_EXIT_OK;
    cli_progress_clear();
    fprintf(stderr, "tapegrad: %s: %zu library bytes (%zu saved) live%s after a step, %zu (%zu) "
            "before\n", who, m3.live_total, m3.saved, where, a.live_total, a.saved);
    return CLI_EXIT_FAIL;
}

/* Copies the sampled rows of the logits' gradient to gsample: directly on
 * the CPU, through tg_copy_out of one-row views on the device. */
static int copy_gsample(const char *who, tg_tensor *logits, float *gsample, const int64_t *rows,
                        int nrows) {
    const int64_t V = tg_size(logits, 1);
    tg_tensor *g = tg_grad(logits);
    int rc = CLI_EXIT_OK;
    if (tg_get_device(logits) == TG_CPU) {
        const float *gp = g && tg_get_dtype(g) == TG_F32 && tg_is_contiguous(g) ? tg_data(g)
                                                                                 : NULL;
        if (!gp)
            rc = lib_fail(who, "reading the gradient");
        for (int i = 0; gp && i < nrows; i++)
            memcpy(gsample + (size_t)i * (size_t)V, gp + (size_t)rows[i] * (size_t)V,
                   (size_t)V * sizeof *gp);
    } else {
        for (int i = 0; rc == CLI_EXIT_OK && i < nrows; i++) {
            tg_tensor *row = tg_slice(g, 0, rows[i], rows[i] + 1, 1);
            if (!row || tg_copy_out(row, TG_F32, gsample + (size_t)i * (size_t)V,
                                    (size_t)V * sizeof *gsample) != TG_OK)
                rc = lib_fail(who, "reading the gradient");
            tg_release(row);
        }
    }
    tg_release(g);
    return rc;
}

int cli_lp_step(const char *who, tg_tensor *logits, tg_tensor *targets, const cli_lp_config *c,
                cli_lp_measure *m, cli_lp_hook hook, void *user, float *gsample,
                const int64_t *rows, int nrows) {
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.impl = c->impl;
    lo.chunk_size = c->chunk;
    lo.want_entropy = true;
    lo.entropy_grad = c->entropy_grad;

    /* host figures too when the step runs on the device: it must leave no
     * library bytes live on either */
    tg_mem_stats m0, m1, m2, h0;
    tg_mem_get(c->device, &m0);
    tg_mem_get(TG_CPU, &h0);
    tg_mem_reset_peak(c->device);
    tg_clear_error();

    tg_tensor *lp = NULL, *ent = NULL, *mlp = NULL, *nlp = NULL, *mh = NULL, *sh = NULL,
              *loss = NULL;
    int rc = CLI_EXIT_OK;
    double t0, t1;
    tg_status st = step_clock(c, &t0); /* the inputs' own kernels are not the step's */
    if (st != TG_OK) {
        rc = step_fail(who, c, st, "waiting for the device");
        goto done;
    }
    st = tg_logprob_entropy(logits, targets, &lo, &lp, &ent);
    tg_status sync = step_clock(c, &t1);
    tg_mem_get(c->device, &m1);
    if (st != TG_OK || sync != TG_OK) {
        rc = step_fail(who, c, st != TG_OK ? st : sync, "the forward call");
        goto done;
    }
    mlp = tg_mean(lp);
    nlp = tg_neg(mlp);
    mh = tg_mean(ent); /* recorded only when the entropy requires grad */
    if (c->entropy_grad) {
        sh = tg_scale(mh, -c->entropy_coef);
        loss = tg_add(nlp, sh);
    } else {
        loss = tg_retain(nlp);
    }
    if (!loss || tg_item(loss, &m->loss) != TG_OK || tg_item(mh, &m->entropy_mean) != TG_OK) {
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
    m->held_bytes = m1.live_total > m0.live_total ? m1.live_total - m0.live_total : 0;
    if (gsample && nrows > 0)
        rc = copy_gsample(who, logits, gsample, rows, nrows);
done:
    tg_release(loss);
    tg_release(sh);
    tg_release(mh);
    tg_release(nlp);
    tg_release(mlp);
    tg_release(ent);
    tg_release(lp);
    tg_zero_grad(logits);
    if (rc == CLI_EXIT_OK) rc = cli_step_check_left(who, c->device, &m0, &h0);
    return rc;
}

int cli_lp_steps(const char *who, const char *label, tg_tensor *logits, tg_tensor *targets,
                 const cli_lp_config *c, int reps, cli_lp_measure *m, double *total_ms,
                 int *steps, cli_lp_hook hook, void *user, float *gsample, const int64_t *rows,
                 int nrows) {
    const int max = reps * CLI_LP_MORE;
    double *t = calloc((size_t)max * 3, sizeof *t);
    if (!t) {
        cli_progress_clear();
        fprintf(stderr, "tapegrad: %s: out of memory\n", who);
        return CLI_EXIT_FAIL;
    }
    double *fwd = t, *bwd = t + max, *tot = t + 2 * max, spent = 0.0;
    int rc = CLI_EXIT_OK, n = 0;
    memset(m, 0, sizeof *m);
    while (n < max && (n < reps || spent < CLI_LP_SHORT_S)) {
        cli_progress("%s: step %d/%d (forward + backward)", label, n + 1, n < reps ? reps : max);
        cli_lp_measure s;
        rc = cli_lp_step(who, logits, targets, c, &s, n == 0 ? hook : NULL, user,
                         n == 0 ? gsample : NULL, rows, nrows);
        if (rc != CLI_EXIT_OK)
            break;
        fwd[n] = s.fwd_ms;
        bwd[n] = s.bwd_ms;
        tot[n] = s.fwd_ms + s.bwd_ms;
        spent += tot[n] * 1e-3;
        n++;
        if (s.peak_bytes > m->peak_bytes)
            m->peak_bytes = s.peak_bytes;
        if (s.saved_bytes > m->saved_bytes)
            m->saved_bytes = s.saved_bytes;
        if (s.held_bytes > m->held_bytes)
            m->held_bytes = s.held_bytes;
        m->loss = s.loss;
        m->entropy_mean = s.entropy_mean;
    }
    if (rc == CLI_EXIT_OK) {
        m->fwd_ms = cli_median(fwd, n);
        m->bwd_ms = cli_median(bwd, n);
        *total_ms = cli_median(tot, n);
        *steps = n;
    }
    free(t);
    return rc;
}

int cli_lp_check_size(int64_t seq, int64_t vocab, bool composite) {
    if (seq * vocab > CLI_LP_MAX_ELEMS)
        return cli_usage_error("seq %" PRId64 " x vocab %" PRId64 " is %.1f GiB of f32 logits "
                               "(at most %.0f GiB)",
                               seq, vocab, (double)seq * (double)vocab * 4.0 / (MIB * 1024.0),
                               (double)CLI_LP_MAX_ELEMS * 4.0 / (MIB * 1024.0));
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    double ram = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
    double need = (double)seq * (double)vocab * 4.0 * (composite ? 8.0 : 3.0);
    if (ram > 0.0 && need > 0.8 * ram)
        return cli_usage_error("seq %" PRId64 " x vocab %" PRId64 " needs about %.1f GiB "
                               "(%s x seq x vocab x 4 bytes), more than 80%% of this "
                               "machine's %.1f GiB of RAM; refusing",
                               seq, vocab, need / (MIB * 1024.0), composite ? "8" : "3",
                               ram / (MIB * 1024.0));
    return CLI_EXIT_OK;
}
