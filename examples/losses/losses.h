/* examples/losses/losses.h - the losses RL and LLM researchers write first,
 * with tapegrad's public API only: PPO, GRPO, DPO and its variants (cDPO,
 * IPO, SimPO), KTO, REINFORCE with a baseline, and the pretraining loss
 * (label-smoothed cross-entropy plus z-loss). examples/README.md shows each
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

/* Pretraining: cross_entropy(logits (N, V), targets (N), ignore -100,
 * label_smoothing) + z_coef mean over kept rows of logsumexp(logits)^2,
 * the log-sum-exp taken from the fused log-prob op (no extra pass). */
tg_tensor *zoo_pretrain_loss(tg_tensor *logits, tg_tensor *targets, double label_smoothing,
                             double z_coef);

#endif
