/* cli/lpstep.h - one measured training step of tg_logprob_entropy, shared by
 * `tapegrad demo entropy`, `tapegrad demo chunk` and `tapegrad bench logprob`.
 *
 * Contract:
 *  - cli_lp_inputs() makes seeded f32 logits "logits" (seq, vocab), normal
 *    with std 2, requiring grad, and targets "targets" (seq) i64 uniform in
 *    [0, vocab): the same numbers for the same (seed, seq, vocab).
 *  - cli_lp_step() runs one step on them and measures it with the library's
 *    exact accounting:
 *      forward   tg_logprob_entropy(logits, targets) with the configuration's
 *                impl, chunk size and entropy_grad (want_entropy on);
 *      loss      -mean(logprob), minus entropy_coef * mean(entropy) when
 *                entropy_grad is on (the entropy then takes part in backward,
 *                even with a coefficient of 0); the mean entropy is read for
 *                logging in every case;
 *      hook      called with the loss just before backward (untimed), if given;
 *      backward  tg_backward(loss);
 *    then releases every tensor it made and the logits' gradient. fwd_ms is
 *    the op's call, bwd_ms the loss and the backward; peak_bytes is the
 *    library's peak_total during the step minus the bytes live before it
 *    (tg_mem_reset_peak first); saved_bytes is tg_mem_stats.saved right after
 *    the forward call minus before; held_bytes is what the forward call left
 *    live (its outputs and what its graph saved).
 *  - The configuration's device (TG_CPU or TG_CUDA) is where the logits and
 *    targets live. The memory figures are the library's exact ones for that
 *    device (tg_mem_get(device)). With TG_CUDA, whose kernels run
 *    asynchronously, tg_cuda_synchronize() is called before every clock read
 *    so that each time covers the GPU work queued before it.
 *  - Failures of the library: one line "tapegrad: <who>: <what> failed:
 *    STATUS: message" on stderr, CLI_EXIT_FAIL. Except: with TG_CUDA, a
 *    failure with TG_ERR_NOMEM prints nothing and returns CLI_LP_NOMEM, so
 *    that a caller can report a configuration too big for the device as
 *    skipped rather than failed. A step that leaves library bytes live (on
 *    the host or, with TG_CUDA, on the device) is a failure too.
 *  - cli_lp_check_size(): a usage error (exit 2, one line) when a size is out
 *    of range or the composite path would need more than 80% of the RAM.
 */
#ifndef TAPEGRAD_CLI_LPSTEP_H
#define TAPEGRAD_CLI_LPSTEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tapegrad.h>

#define CLI_LP_MAX_SEQ ((int64_t)1 << 22)
#define CLI_LP_MAX_VOCAB ((int64_t)1 << 22)
#define CLI_LP_MAX_ELEMS ((int64_t)1 << 30) /* 4 GiB of f32 logits */

/* Returned by cli_lp_step/cli_lp_steps (never an exit status): the device
 * ran out of memory (TG_CUDA only; nothing was printed). */
#define CLI_LP_NOMEM (-1)

typedef struct cli_lp_config {
    tg_logprob_impl impl;
    int64_t chunk;       /* rows per chunk, 0 = all at once */
    bool entropy_grad;   /* the entropy is recorded for backward */
    double entropy_coef; /* its coefficient in the loss (used when entropy_grad) */
    tg_device device;    /* where the logits and targets live: TG_CPU or TG_CUDA */
} cli_lp_config;

typedef struct cli_lp_measure {
    double fwd_ms, bwd_ms;
    size_t peak_bytes, saved_bytes, held_bytes;
    double loss, entropy_mean;
} cli_lp_measure;

/* Called before backward with the loss (borrowed); returns CLI_EXIT_OK to go on. */
typedef int (*cli_lp_hook)(tg_tensor *loss, void *user);

/* Makes the inputs (see the contract). Returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_lp_inputs(const char *who, int64_t seq, int64_t vocab, uint64_t seed,
                  tg_tensor **logits, tg_tensor **targets);

/* One step (see the contract). When gsample is not NULL, copies rows
 * rows[0..nrows-1] of the logits' gradient into gsample (nrows x vocab f32).
 * Returns CLI_EXIT_OK, CLI_EXIT_FAIL or (TG_CUDA) CLI_LP_NOMEM. */
int cli_lp_step(const char *who, tg_tensor *logits, tg_tensor *targets, const cli_lp_config *c,
                cli_lp_measure *m, cli_lp_hook hook, void *user, float *gsample,
                const int64_t *rows, int nrows);

/* Steps of one configuration, timed: at least `reps`, and more while all of
 * them took less than CLI_LP_SHORT_S (short steps are the noisiest), up to
 * CLI_LP_MORE x reps. *m receives the largest peak, saved and held bytes over
 * the steps, the medians of the forward, backward (and *total_ms of the
 * total) times, and the loss and entropy of the last step; *steps the number
 * of steps. hook and gsample (see cli_lp_step) apply to the first step.
 * Progress: "<label>: step k/n" (cli_progress). Returns CLI_EXIT_OK,
 * CLI_EXIT_FAIL or (TG_CUDA) CLI_LP_NOMEM. */
#define CLI_LP_SHORT_S 0.3
#define CLI_LP_MORE 10
int cli_lp_steps(const char *who, const char *label, tg_tensor *logits, tg_tensor *targets,
                 const cli_lp_config *c, int reps, cli_lp_measure *m, double *total_ms,
                 int *steps, cli_lp_hook hook, void *user, float *gsample, const int64_t *rows,
                 int nrows);

/* Pieces of a measured step, shared with cli/linstep.c. */
/* The clock in seconds, once the device's queued work is done (TG_CUDA). */
tg_status cli_step_clock(tg_device dev, double *t);
/* A library failure in a step: CLI_LP_NOMEM (nothing printed) for a device
 * out of memory, else the one-line message and CLI_EXIT_FAIL. */
int cli_step_fail(const char *who, tg_device dev, tg_status st, const char *what);
/* After the loss is built: the hook (untimed, if given), then backward. On
 * entry *bwd_ms holds the clock (s) at the end of forward; on success it
 * receives the milliseconds from then to the end of backward without the
 * hook's, and *after the device's figures after backward. */
int cli_step_backward(const char *who, tg_device dev, tg_tensor *loss, cli_lp_hook hook,
                      void *user, double *bwd_ms, tg_mem_stats *after);
/* CLI_EXIT_OK when the step left no library bytes live or saved beyond m0
 * (dev) and h0 (the host); else one line on stderr and CLI_EXIT_FAIL. */
int cli_step_check_left(const char *who, tg_device dev, const tg_mem_stats *m0,
                        const tg_mem_stats *h0);

/* Checks seq and vocab (and the composite path's memory, about 8 x seq x
 * vocab x 4 bytes, when composite). Returns CLI_EXIT_OK or CLI_EXIT_USAGE. */
int cli_lp_check_size(int64_t seq, int64_t vocab, bool composite);

#endif
