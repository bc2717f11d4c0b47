/* examples/losses/chunked.h - PPO and GRPO as callbacks of tg_linear_loss, the
 * entry that computes the loss of the output layer and its gradient in one
 * pass over the logits (tapegrad/logprob.h), written with the public API as
 * you would write your own.
 *
 * tg_linear_loss calls the loss once per chunk of rows, with that chunk's
 * log-prob, entropy and log-sum-exp (1-D, one value per row) and its rows
 * [row_start, row_end) of the N flattened rows of hidden. So the loss must be
 * a sum over tokens of per-token terms, and everything else must be known
 * before the step:
 *   - the per-token constants (old and reference log-probs, advantages) are
 *     passed as whole tensors of N elements (or of hidden's leading shape,
 *     contiguous: (B, T)) and each callback takes its rows with tg_narrow;
 *   - the aggregation (token-mean, sequence-mean of token sums or of token
 *     means) becomes per-token weights computed once from the mask
 *     (zoo_agg_weights): sum(w * x) equals tg_agg_loss(x, mask, mode);
 *   - GRPO's group-normalised advantages are computed from the rewards
 *     before the step (zoo_grpo_token_advantages), one value per token.
 * The callbacks take the constants through their `user` pointer; they are
 * borrowed (not kept past the call), of the compute dtype (hidden's, f32 for
 * bf16) and on hidden's device. They must be finite everywhere, padding
 * included: a weight of 0 times a NaN is NaN.
 *
 * Each callback returns, in *loss, the chunk's share of the loss (a 0-d
 * tensor, a new reference) and TG_OK, or the error of the op that failed;
 * every intermediate is released inside (a scope). The sum over the chunks
 * is the full-batch loss of losses.h's zoo_ppo_loss (without dual-clip or
 * value loss, plus the KL term) and zoo_grpo_loss on
 * tg_linear_logprob_entropy's outputs; test_chunked.c checks that to 1e-12
 * in float64, with the gradients of hidden, weight and bias. */
#ifndef TG_EXAMPLES_CHUNKED_H
#define TG_EXAMPLES_CHUNKED_H

#include <tapegrad.h>

#include "losses.h"

/* Weights w of mask's shape (..., T), with sum(w * x) = tg_agg_loss(x, mask,
 * mode) for every x of that shape (up to rounding), for n = numel(mask) / T
 * sequences:
 *   TG_AGG_TOKEN_MEAN           w = mask / sum(mask)
 *   TG_AGG_SEQ_MEAN_TOKEN_SUM   w = mask / n
 *   TG_AGG_SEQ_MEAN_TOKEN_MEAN  w = mask / (n * sum_t(mask))  (per sequence)
 * Computed with grad mode off: a constant. NaN where tg_agg_loss would be
 * NaN (an empty mask, or a sequence with none in the last mode). A new
 * reference (moved to the caller's scope); NULL and the error on failure. */
tg_tensor *zoo_agg_weights(tg_tensor *mask, tg_agg_mode mode);

/* GRPO's advantages per token: zoo_grpo_advantages(rewards (B), group, eps)
 * repeated over the T tokens of each sequence, (B, T), contiguous; with grad
 * mode off. A new reference; NULL and the error on failure. */
tg_tensor *zoo_grpo_token_advantages(tg_tensor *rewards, int64_t group, double eps, int64_t T);

/* PPO, per token t with ratio = exp(lp - old_logp), d = ref_logp - lp:
 *   pg  = -min(ratio adv, clamp(ratio, 1 - clip, 1 + clip) adv)
 *   kl  = exp(d) - d - 1                                 (the k3 estimator)
 *   loss = sum_t w_t (pg_t - ent_coef H_t + kl_coef kl_t)
 * With token-mean weights over the valid tokens this is examples/ppo_loss.c's
 * loss. ent_coef 0: the entropy term is not built (set the entry's
 * entropy_grad false: nothing is then computed for it in backward); kl_coef
 * 0: the KL term is not built and ref_logp may be NULL. */
typedef struct zoo_chunk_ppo {
    tg_tensor *old_logp;  /* (N): the sampling policy's log-probs */
    tg_tensor *ref_logp;  /* (N): the reference policy's, or NULL (kl_coef 0) */
    tg_tensor *adv;       /* (N): advantages */
    tg_tensor *weights;   /* (N): zoo_agg_weights of the mask */
    double clip, ent_coef, kl_coef;
} zoo_chunk_ppo;

/* A tg_linear_loss_fn; user is a zoo_chunk_ppo. */
tg_status zoo_chunk_ppo_loss(const tg_linear_loss_chunk *chunk, void *user, tg_tensor **loss);

/* GRPO, per token, with ratio and d as above:
 *   loss = sum_t w_t (-min(ratio adv, clamp(ratio, 1 - clip, 1 + clip) adv)
 *                     + beta KL_t)
 * KL_t by zoo_kl: k1 = -d, k2 = d^2 / 2, k3 = exp(d) - d - 1; adv from
 * zoo_grpo_token_advantages. beta 0: no KL term, ref_logp may be NULL. */
typedef struct zoo_chunk_grpo {
    tg_tensor *old_logp;  /* (N) */
    tg_tensor *ref_logp;  /* (N), or NULL (beta 0) */
    tg_tensor *adv;       /* (N): zoo_grpo_token_advantages */
    tg_tensor *weights;   /* (N): zoo_agg_weights of the mask */
    double clip, beta;
    zoo_kl kl;
} zoo_chunk_grpo;

/* A tg_linear_loss_fn; user is a zoo_chunk_grpo. */
tg_status zoo_chunk_grpo_loss(const tg_linear_loss_chunk *chunk, void *user, tg_tensor **loss);

#endif
