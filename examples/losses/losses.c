/* examples/losses/losses.c - the loss zoo of losses.h, written as a
 * researcher writes them: each formula line by line with the public API,
 * inside one scope that frees every intermediate; the loss is kept
 * (tg_scope_keep) and the first error, if any, is what the caller sees
 * (a NULL flows through the remaining calls, which keep that error). */
#include "losses.h"

#include <math.h>

/* The end of every loss: keeps `loss` (NULL passes through) and closes the scope. */
static tg_tensor *finish(int scope, tg_tensor *loss) {
    tg_tensor *kept = loss ? tg_scope_keep(loss) : NULL;
    tg_status st = tg_last_status();
    tg_scope_end(scope);
    if (!kept && st == TG_OK) tg_set_error(TG_ERR_INTERNAL, "loss zoo: no loss and no error");
    return kept;
}

zoo_ppo_opts zoo_ppo_defaults(void) {
    zoo_ppo_opts o = {0.2, 3.0, 0.01, 0.5, 0.2, TG_AGG_TOKEN_MEAN};
    return o;
}

tg_tensor *zoo_ppo_loss(tg_tensor *logp, tg_tensor *old_logp, tg_tensor *adv, tg_tensor *mask,
                        tg_tensor *entropy, tg_tensor *values, tg_tensor *old_values,
                        tg_tensor *returns, const zoo_ppo_opts *o) {
    int sc = tg_scope_begin();
    tg_tensor *ratio = tg_exp(tg_sub(logp, old_logp));
    tg_tensor *nadv = tg_neg(adv);
    tg_tensor *pg = tg_maximum(tg_mul(nadv, ratio),
                               tg_mul(nadv, tg_clamp(ratio, 1 - o->clip, 1 + o->clip)));
    if (o->dual_clip > 1) /* dual-clip: a floor on the loss of negative advantages */
        pg = tg_where(tg_lt_scalar(adv, 0), tg_minimum(tg_scale(nadv, o->dual_clip), pg), pg);
    tg_tensor *loss = tg_agg_loss(pg, mask, o->mode);
    if (o->ent_coef != 0) /* the entropy bonus */
        loss = tg_sub(loss, tg_scale(tg_agg_loss(entropy, mask, o->mode), o->ent_coef));
    if (o->vf_coef != 0) { /* the clipped value loss */
        tg_tensor *vclip = tg_add(old_values, tg_clamp(tg_sub(values, old_values), -o->vf_clip,
                                                       o->vf_clip));
        tg_tensor *vf = tg_scale(tg_maximum(tg_square(tg_sub(values, returns)),
                                            tg_square(tg_sub(vclip, returns))), 0.5);
        loss = tg_add(loss, tg_scale(tg_agg_loss(vf, mask, o->mode), o->vf_coef));
    }
    return finish(sc, loss);
}

tg_tensor *zoo_grpo_advantages(tg_tensor *rewards, int64_t group, double eps) {
    int sc = tg_scope_begin();
    int64_t n = tg_numel(rewards);
    tg_tensor *r = tg_reshape(rewards, TG_SHAPE(group > 0 ? n / group : 0, group));
    tg_tensor *a = tg_div(tg_sub(r, tg_mean_dim(r, 1, true)),
                          tg_add_scalar(tg_std_dim(r, 1, 1, true), eps));
    return finish(sc, tg_reshape(a, TG_SHAPE(n)));
}

tg_tensor *zoo_grpo_loss(tg_tensor *logp, tg_tensor *old_logp, tg_tensor *ref_logp,
                         tg_tensor *rewards, tg_tensor *mask, int64_t group, double clip,
                         double beta, zoo_kl kl, tg_agg_mode mode) {
    int sc = tg_scope_begin();
    tg_tensor *adv = tg_unsqueeze(zoo_grpo_advantages(rewards, group, 1e-4), 1); /* (B, 1) */
    tg_tensor *ratio = tg_exp(tg_sub(logp, old_logp));
    tg_tensor *per_token = tg_neg(tg_minimum(tg_mul(ratio, adv),
                                             tg_mul(tg_clamp(ratio, 1 - clip, 1 + clip), adv)));
    if (beta != 0) {
        tg_tensor *d = tg_sub(ref_logp, logp), *est;
        if (kl == ZOO_KL_K1) est = tg_neg(d);
        else if (kl == ZOO_KL_K2) est = tg_scale(tg_square(d), 0.5);
        else est = tg_sub(tg_add_scalar(tg_exp(d), -1), d);
        per_token = tg_add(per_token, tg_scale(est, beta));
    }
    return finish(sc, tg_agg_loss(per_token, mask, mode));
}

tg_tensor *zoo_dpo_loss(tg_tensor *pi_c, tg_tensor *pi_r, tg_tensor *ref_c, tg_tensor *ref_r,
                        double beta, double label_smoothing, zoo_dpo_kind kind, tg_tensor *len_c,
                        tg_tensor *len_r, double gamma) {
    int sc = tg_scope_begin();
    tg_tensor *loss = NULL;
    if (kind == ZOO_DPO_SIMPO) {
        tg_tensor *logits = tg_add_scalar(
            tg_scale(tg_sub(tg_div(pi_c, len_c), tg_div(pi_r, len_r)), beta), -gamma);
        loss = tg_mean(tg_neg(tg_logsigmoid(logits)));
    } else {
        tg_tensor *h = tg_sub(tg_sub(pi_c, ref_c), tg_sub(pi_r, ref_r));
        if (kind == ZOO_DPO_IPO) {
            loss = tg_mean(tg_square(tg_add_scalar(h, -1 / (2 * beta))));
        } else {
            tg_tensor *logits = tg_scale(h, beta);
            tg_tensor *l = tg_scale(tg_logsigmoid(logits), -(1 - label_smoothing));
            if (label_smoothing != 0) /* cDPO: the labels are flipped with this probability */
                l = tg_sub(l, tg_scale(tg_logsigmoid(tg_neg(logits)), label_smoothing));
            loss = tg_mean(l);
        }
    }
    return finish(sc, loss);
}

tg_tensor *zoo_kto_loss(tg_tensor *pi, tg_tensor *ref, tg_tensor *desirable, tg_tensor *kl_pi,
                        tg_tensor *kl_ref, double beta, double lambda_d, double lambda_u) {
    int sc = tg_scope_begin();
    tg_tensor *kl = tg_detach(tg_clamp(tg_mean(tg_sub(kl_pi, kl_ref)), 0, INFINITY));
    tg_tensor *r = tg_sub(pi, ref);
    tg_tensor *loss_d = tg_scale(tg_add_scalar(tg_neg(tg_sigmoid(tg_scale(tg_sub(r, kl), beta))), 1),
                                 lambda_d);
    tg_tensor *loss_u = tg_scale(tg_add_scalar(tg_neg(tg_sigmoid(tg_scale(tg_sub(kl, r), beta))), 1),
                                 lambda_u);
    return finish(sc, tg_mean(tg_where(desirable, loss_d, loss_u)));
}

tg_tensor *zoo_reinforce_loss(tg_tensor *logp, tg_tensor *rewards, tg_tensor *mask) {
    int sc = tg_scope_begin();
    tg_tensor *adv = tg_unsqueeze(tg_sub(rewards, tg_mean(rewards)), 1); /* (B, 1) */
    return finish(sc, tg_agg_loss(tg_neg(tg_mul(adv, logp)), mask, TG_AGG_TOKEN_MEAN));
}

tg_tensor *zoo_pretrain_loss(tg_tensor *logits, tg_tensor *targets, double label_smoothing,
                             double z_coef) {
    int sc = tg_scope_begin();
    /* one fused pass gives the log-prob and the log-sum-exp of every row; label
     * smoothing's -mean_j log p_j is lse - mean_j z_j: no (N, V) tensor is made */
    tg_logprob_opts o = tg_logprob_opts_default();
    o.want_entropy = false;
    tg_tensor *lp = NULL, *lse = NULL, *loss = NULL;
    if (tg_logprob_entropy_lse(logits, targets, &o, &lp, NULL, &lse) == TG_OK) {
        tg_tensor *keep = tg_to_dtype(tg_ne_scalar(targets, -100), tg_get_dtype(logits));
        tg_tensor *row = tg_scale(lp, -(1 - label_smoothing));
        if (label_smoothing != 0)
            row = tg_add(row, tg_scale(tg_sub(lse, tg_mean_dim(logits, -1, false)),
                                       label_smoothing));
        loss = tg_masked_mean(row, keep, 0, true);
        if (z_coef != 0)
            loss = tg_add(loss, tg_scale(tg_masked_mean(tg_square(lse), keep, 0, true), z_coef));
    }
    return finish(sc, loss);
}

zoo_gae_opts zoo_gae_defaults(void) {
    zoo_gae_opts o = {0.99, 0.95, 0.2, 0.2, 0.5};
    return o;
}

tg_tensor *zoo_gae(tg_tensor *rewards, tg_tensor *values, tg_tensor *mask, double gamma,
                   double lambda, tg_tensor **returns) {
    *returns = NULL;
    if (!rewards || !values || !mask) { /* a failed call's NULL: its error stays */
        if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_NULL, "zoo_gae: an input is NULL");
        return NULL;
    }
    int64_t B = tg_size(rewards, 0), T = tg_size(rewards, 1), TV = tg_size(values, 1);
    if (tg_ndim(rewards) != 2 || T < 1 || (TV != T && TV != T + 1)) {
        tg_set_error(TG_ERR_SHAPE, "zoo_gae: values has %lld steps for %lld rewards (T or T + 1)",
                     (long long)TV, (long long)T);
        return NULL;
    }
    int sc = tg_scope_begin();
    tg_tensor *adv = NULL, *ret = NULL;
    TG_NO_GRAD { /* the advantages are constants: nothing recorded, nothing saved */
        tg_tensor *v = tg_mul(tg_narrow(values, 1, 0, T), mask); /* V_t, 0 past the end */
        tg_tensor *boot = TV == T + 1 /* V_T where the row runs to its end, else 0 */
                              ? tg_mul(tg_narrow(values, 1, T, 1), tg_narrow(mask, 1, T - 1, 1))
                              : tg_zeros(tg_get_dtype(values), TG_SHAPE(B, 1));
        tg_tensor *v_next = tg_cat(2, (tg_tensor *[]){tg_narrow(v, 1, 1, T - 1), boot}, 1);
        tg_tensor *delta = tg_sub(tg_add(tg_mul(rewards, mask), tg_scale(v_next, gamma)), v);
        adv = tg_discounted_cumsum(delta, gamma * lambda, 1);
        ret = tg_add(adv, v);
    }
    tg_tensor *kept_ret = adv && ret ? tg_scope_keep(ret) : NULL;
    tg_tensor *kept = finish(sc, kept_ret ? adv : NULL);
    if (!kept) {
        tg_release(kept_ret);
        return NULL;
    }
    *returns = kept_ret;
    return kept;
}

tg_tensor *zoo_ppo_gae_loss(tg_tensor *logp, tg_tensor *old_logp, tg_tensor *new_values,
                            tg_tensor *rewards, tg_tensor *values, tg_tensor *mask,
                            const zoo_gae_opts *o) {
    int sc = tg_scope_begin();
    tg_tensor *ret = NULL;
    tg_tensor *adv = zoo_gae(rewards, values, mask, o->gamma, o->lambda, &ret);
    tg_tensor *ratio = tg_exp(tg_sub(logp, old_logp));
    tg_tensor *pg = tg_neg(tg_minimum(tg_mul(ratio, adv),
                                      tg_mul(tg_clamp(ratio, 1 - o->clip, 1 + o->clip), adv)));
    tg_tensor *loss = tg_masked_mean(pg, mask, 0, true);
    if (o->vf_coef != 0) { /* the clipped value loss, around the rollout's values */
        tg_tensor *old_v = adv ? tg_detach(tg_narrow(values, 1, 0, tg_size(adv, 1))) : NULL;
        tg_tensor *v_clip = tg_add(old_v, tg_clamp(tg_sub(new_values, old_v), -o->vf_clip,
                                                   o->vf_clip));
        tg_tensor *vf = tg_maximum(tg_square(tg_sub(new_values, ret)),
                                   tg_square(tg_sub(v_clip, ret)));
        loss = tg_add(loss, tg_scale(tg_masked_mean(vf, mask, 0, true), o->vf_coef * 0.5));
    }
    return finish(sc, loss);
}

tg_tensor *zoo_zloss_loss(tg_tensor *logits, tg_tensor *targets, tg_tensor *mask, double z_coef) {
    int sc = tg_scope_begin();
    tg_logprob_opts o = tg_logprob_opts_default();
    o.want_entropy = false;
    tg_tensor *lp = NULL, *lse = NULL, *loss = NULL; /* lp, lse: (B, T) */
    tg_status st = z_coef != 0 ? tg_logprob_entropy_lse(logits, targets, &o, &lp, NULL, &lse)
                               : tg_logprob_entropy(logits, targets, &o, &lp, NULL);
    if (st == TG_OK) {
        loss = tg_masked_mean(tg_neg(lp), mask, 0, true);
        if (z_coef != 0)
            loss = tg_add(loss, tg_scale(tg_masked_mean(tg_square(lse), mask, 0, true), z_coef));
    }
    return finish(sc, loss);
}
