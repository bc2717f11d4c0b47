/* examples/ppo_loss.h - a PPO-style clipped policy loss with an entropy bonus
 * and a KL penalty, written with tapegrad's public API as a user would.
 *
 * For logits z (B, T, V) of the policy, targets y (B, T) (the sampled tokens,
 * ignore_index on padding), and per token the log-prob under the policy that
 * sampled them (old_logprob), under a frozen reference policy (ref_logprob)
 * and the advantage A, with lp = logprob(z, y) and H = entropy(z):
 *
 *   ratio     = exp(lp - old_logprob)
 *   surrogate = min(ratio * A, clamp(ratio, 1 - clip_eps, 1 + clip_eps) * A)
 *   kl        = exp(ref - lp) - (ref - lp) - 1          (the "k3" estimator)
 *   loss      = -mean(surrogate) - entropy_coef * mean(H) + kl_coef * mean(kl)
 *
 * where every mean is over the valid (non-padding) tokens.
 *
 * What the example shows:
 *  - log-prob and entropy come from one call of the fused op; the entropy's
 *    gradient is recorded only when entropy_coef != 0, so a loss that merely
 *    logs the entropy saves nothing for it (8 bytes per row less);
 *  - the loss is written as nested calls inside a scope: intermediates are
 *    released at the end, NULL flows through, one check at the end;
 *  - the metrics are plain doubles, computed under no-grad: logging them keeps
 *    no graph alive (keeping the loss tensor itself would).
 */
#ifndef PPO_LOSS_H
#define PPO_LOSS_H

#include <stdint.h>

#include <tapegrad.h>

typedef struct ppo_loss_opts {
    double clip_eps;      /* in (0, 1); default 0.2 */
    double entropy_coef;  /* finite; 0 = the entropy is only logged: its gradient
                             is not recorded and nothing is saved for it.
                             Default 0.01 */
    double kl_coef;       /* finite; 0 = the KL is only logged (default 0.05) */
    int64_t ignore_index; /* target of padding tokens (default -100) */
    int64_t chunk_size;   /* rows per block of the fused op, 0 = all (default 0) */
} ppo_loss_opts;

/* The defaults listed above. */
ppo_loss_opts ppo_loss_opts_default(void);

/* The inputs of one (micro)batch. The tensors are borrowed, never kept.
 * logits: (B, T, V) f32 or f64, any strides; usually requires grad.
 * old_logprob, ref_logprob, advantages: (B, T), logits' dtype; their values at
 * padding positions are ignored (they may be anything, NaN included).
 * targets: (B, T) i64, in [0, V) or ignore_index. */
typedef struct ppo_batch {
    tg_tensor *logits;
    tg_tensor *old_logprob;
    tg_tensor *ref_logprob;
    tg_tensor *advantages;
    tg_tensor *targets;
} ppo_batch;

/* Figures for logging: plain numbers, they keep nothing alive. Means are over
 * the valid tokens. All NaN (n_valid 0) when ppo_loss fails. */
typedef struct ppo_metrics {
    double loss;        /* the value of the returned loss */
    double policy_loss; /* -mean(surrogate) */
    double entropy;     /* mean(H), whether or not it is in the loss */
    double kl;          /* mean(kl), whether or not it is in the loss */
    double clip_frac;   /* fraction of tokens whose ratio was clipped */
    double ratio_mean;  /* mean(ratio) */
    int64_t n_valid;    /* tokens whose target is not ignore_index */
} ppo_metrics;

/* Computes the loss above: a 0-d tensor of logits' dtype, a NEW reference
 * (owned by the caller's innermost open scope if there is one, else by the
 * caller, who must tg_release it). It requires grad when logits do and grad
 * mode is on; terms whose coefficient is 0 are left out of the graph. With no
 * valid token the loss is 0 (with a zero gradient).
 * opts: NULL for the defaults. metrics: NULL, or filled in.
 * Errors: NULL is returned, tg_last_status()/tg_last_error() say why, and
 * nothing is leaked: TG_ERR_NULL (batch or a tensor NULL: an error already
 * recorded for this thread, e.g. by the call that returned the NULL, is kept);
 * TG_ERR_VALUE (coefficients out of range; a target outside [0, V): the
 * message names the row); TG_ERR_SHAPE (shapes are not as above);
 * TG_ERR_DTYPE; TG_ERR_NOMEM. */
tg_tensor *ppo_loss(const ppo_batch *batch, const ppo_loss_opts *opts, ppo_metrics *metrics);

#endif
