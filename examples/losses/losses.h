/* examples/losses/losses.h - the losses RL and LLM researchers write first,
 * with tapegrad's public API only: PPO (on given advantages, and on GAE
 * advantages with the clipped value loss), GRPO, DPO and its variants (cDPO,
 * IPO, SimPO), KTO, REINFORCE with a baseline, cross-entropy with z-loss on
 * (B, T, V) logits, and the pretraining loss (label-smoothed cross-entropy plus
 * z-loss). examples/README.md shows each
 * beside its PyTorch form; make_fixtures.py has that form and the reference
 * numbers the tests compare with.
 *
 * Shapes: per-token tensors are (B, T) with a float 0/1 mask (B, T);
 * per-sequence ones are (B). All float inputs of one dtype (f32 or f64).
 *
 * Ownership: each function returns the 0-d loss as a new reference that
 * moves to the caller's innermost open scope (or to the caller, who releases
 * it, when none is open); every intermediate is freed inside. On failure it
 * returns NULL with tapegrad's error set, keeping nothing. A term whose
 * coefficient is 0 is not built: nothing is saved for it. */
#ifndef TG_EXAMPLES_LOSSES_H
#define TG_EXAMPLES_LOSSES_H

#include <tapegrad.h>

/* PPO (the clipped surrogate with dual-clip, the entropy bonus and the
 * clipped value loss), verl's formulas:
 *   ratio = exp(logp - old_logp)
 *   pg = max(-adv ratio, -adv clamp(ratio, 1 - clip, 1 + clip)),
 *        and where adv < 0: min(pg, -adv dual_clip)
 *   vf = 0.5 max((v - R)^2, (old_v + clamp(v - old_v, +-vf_clip) - R)^2)
 *   loss = agg(pg) - ent_coef agg(entropy) + vf_coef agg(vf)
 * entropy, values, old_values, returns may be NULL when their coefficient
 * is 0. */
typedef struct zoo_ppo_opts {
    double clip, dual_clip, ent_coef, vf_coef, vf_clip;
    tg_agg_mode mode;
} zoo_ppo_opts;
zoo_ppo_opts zoo_ppo_defaults(void); /* 0.2, 3.0, 0.01, 0.5, 0.2, token-mean */
tg_tensor *zoo_ppo_loss(tg_tensor *logp, tg_tensor *old_logp, tg_tensor *adv, tg_tensor *mask,
                        tg_tensor *entropy, tg_tensor *values, tg_tensor *old_values,
                        tg_tensor *returns, const zoo_ppo_opts *o);

/* GRPO's group-normalised advantages: rewards (B) in consecutive groups of
 * `group`, (r - group mean) / (group std (correction 1) + eps); (B). */
tg_tensor *zoo_grpo_advantages(tg_tensor *rewards, int64_t group, double eps);

/* GRPO: -min(ratio adv, clamp(ratio) adv) + beta KL(pi || ref) per token,
 * aggregated; the KL estimator k1 = logp - ref, k2 = (ref - logp)^2 / 2,
 * k3 = exp(ref - logp) - (ref - logp) - 1 (Schulman's). ref_logp may be NULL
 * when beta is 0. */
typedef enum zoo_kl { ZOO_KL_K1, ZOO_KL_K2, ZOO_KL_K3 } zoo_kl;
tg_tensor *zoo_grpo_loss(tg_tensor *logp, tg_tensor *old_logp, tg_tensor *ref_logp,
                         tg_tensor *rewards, tg_tensor *mask, int64_t group, double clip,
                         double beta, zoo_kl kl, tg_agg_mode mode);

/* DPO on sequence log-probs (B): h = (pi_c - ref_c) - (pi_r - ref_r);
 *   SIGMOID: mean(-(1 - ls) logsigmoid(beta h) - ls logsigmoid(-beta h))
 *            (label smoothing ls > 0 is cDPO);
 *   IPO:     mean((h - 1 / (2 beta))^2);
 *   SIMPO:   mean(-logsigmoid(beta (pi_c / len_c - pi_r / len_r) - gamma)),
 *            no reference model (ref_c, ref_r unused, may be NULL). */
typedef enum zoo_dpo_kind { ZOO_DPO_SIGMOID, ZOO_DPO_IPO, ZOO_DPO_SIMPO } zoo_dpo_kind;
tg_tensor *zoo_dpo_loss(tg_tensor *pi_c, tg_tensor *pi_r, tg_tensor *ref_c, tg_tensor *ref_r,
                        double beta, double label_smoothing, zoo_dpo_kind kind, tg_tensor *len_c,
                        tg_tensor *len_r, double gamma);

/* KTO: kl = max(0, mean(kl_pi - kl_ref)) (a constant: no gradient), r = pi - ref,
 * mean(desirable ? lambda_d (1 - sigmoid(beta (r - kl)))
 *                : lambda_u (1 - sigmoid(beta (kl - r)))); desirable is bool (B). */
tg_tensor *zoo_kto_loss(tg_tensor *pi, tg_tensor *ref, tg_tensor *desirable, tg_tensor *kl_pi,
                        tg_tensor *kl_ref, double beta, double lambda_d, double lambda_u);

/* REINFORCE with the batch-mean baseline: token-mean of -(r - mean(r)) logp. */
tg_tensor *zoo_reinforce_loss(tg_tensor *logp, tg_tensor *rewards, tg_tensor *mask);

/* GAE (Schulman et al.), as OpenRLHF's get_advantages_and_returns computes
 * it for right-padded responses, one episode per row:
 *   V_t   = values[:, t] mask_t;  V_T = values[:, T] mask_{T-1} (a bootstrap
 *           column, for rows cut off at T) or 0 (values (B, T): every episode
 *           ends in its row)
 *   delta = rewards mask + gamma V_{t+1} - V_t
 *   adv   = discounted_cumsum(delta, gamma lambda, 1)   (tg_discounted_cumsum)
 *   ret   = adv + V
 * An episode ends at its row's last unmasked step (no value after it), unless
 * the row is unmasked to its end and values has the bootstrap column. rewards,
 * mask (B, T), values (B, T + 1) or (B, T). Computed with grad mode off, as
 * trainers do: the advantages and returns are constants (nothing is saved,
 * values gets no gradient through them). Returns adv (B, T) and *returns
 * (B, T), both moved to the caller's scope; NULL and *returns NULL on failure. */
tg_tensor *zoo_gae(tg_tensor *rewards, tg_tensor *values, tg_tensor *mask, double gamma,
                   double lambda, tg_tensor **returns);

/* PPO on GAE advantages, as OpenRLHF's PolicyLoss and ValueLoss (and CleanRL's
 * ppo.py) write it, token-means over the mask:
 *   adv, ret = zoo_gae(rewards, values, mask, gamma, lambda)   (no gradient)
 *   ratio = exp(logp - old_logp)
 *   pg    = -min(ratio adv, clamp(ratio, 1 - clip, 1 + clip) adv)
 *   old_v = values[:, :T] (detached); v_clip = old_v + clamp(new_values - old_v, +-vf_clip)
 *   vf    = max((new_values - ret)^2, (v_clip - ret)^2)
 *   loss  = mean(pg) + vf_coef 0.5 mean(vf)
 * logp, old_logp, new_values (the critic being trained), rewards, mask (B, T);
 * values: the rollout's critic values, (B, T + 1) or (B, T) as zoo_gae's.
 * new_values may be NULL when vf_coef is 0. */
typedef struct zoo_gae_opts {
    double gamma, lambda, clip, vf_clip, vf_coef;
} zoo_gae_opts;
zoo_gae_opts zoo_gae_defaults(void); /* 0.99, 0.95, 0.2, 0.2, 0.5 */
tg_tensor *zoo_ppo_gae_loss(tg_tensor *logp, tg_tensor *old_logp, tg_tensor *new_values,
                            tg_tensor *rewards, tg_tensor *values, tg_tensor *mask,
                            const zoo_gae_opts *o);

/* Cross-entropy plus z-loss on (B, T, V) logits (PaLM's auxiliary loss that
 * keeps log Z near 0), token-means over the float mask (B, T):
 *   mean(-log p(target)) + z_coef mean(logsumexp(logits)^2)
 * both from one tg_logprob_entropy_lse call (its lse output: no second pass
 * over the logits, no (B, T, V) tensor). targets (B, T) i64 classes, valid at
 * masked positions too. */
tg_tensor *zoo_zloss_loss(tg_tensor *logits, tg_tensor *targets, tg_tensor *mask, double z_coef);

/* Pretraining: cross_entropy(logits (N, V), targets (N), ignore -100,
 * label_smoothing) + z_coef mean over kept rows of logsumexp(logits)^2,
 * the log-sum-exp taken from the fused log-prob op (no extra pass). */
tg_tensor *zoo_pretrain_loss(tg_tensor *logits, tg_tensor *targets, double label_smoothing,
                             double z_coef);

#endif
