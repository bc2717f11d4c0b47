/* examples/losses/chunked.c - PPO and GRPO as tg_linear_loss callbacks
 * (chunked.h): the per-token formulas of losses.c, on one chunk of rows at a
 * time, with the aggregation as per-token weights known before the step. */
#include "chunked.h"

tg_tensor *zoo_agg_weights(tg_tensor *mask, tg_agg_mode mode) {
    if (!mask) { /* a failed call's NULL: its error stays */
        if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_NULL, "zoo_agg_weights: mask is NULL");
        return NULL;
    }
    int sc = tg_scope_begin();
    tg_tensor *w = NULL; /* mask's shape */
    const int64_t T = tg_ndim(mask) > 0 ? tg_size(mask, -1) : 1;
    const double n_seqs = T > 0 ? (double)(tg_numel(mask) / T) : 0.0;
    TG_NO_GRAD {
        if (mode == TG_AGG_TOKEN_MEAN)
            w = tg_div(mask, tg_sum(mask));
        else if (mode == TG_AGG_SEQ_MEAN_TOKEN_SUM)
            w = tg_scale(mask, 1.0 / n_seqs);
        else if (mode == TG_AGG_SEQ_MEAN_TOKEN_MEAN)
            w = tg_div(mask, tg_scale(tg_sum_dim(mask, -1, true), n_seqs));
        else
            tg_set_error(TG_ERR_VALUE, "zoo_agg_weights: mode is %d", (int)mode);
    }
    tg_tensor *kept = w ? tg_scope_keep(w) : NULL;
    tg_scope_end(sc);
    return kept;
}

tg_tensor *zoo_grpo_token_advantages(tg_tensor *rewards, int64_t group, double eps, int64_t T) {
    int sc = tg_scope_begin();
    tg_tensor *adv = NULL; /* (B, T) */
    TG_NO_GRAD {
        tg_tensor *a = tg_unsqueeze(zoo_grpo_advantages(rewards, group, eps), 1); /* (B, 1) */
        adv = tg_contiguous(tg_expand(a, TG_SHAPE(-1, T)));
    }
    tg_tensor *kept = adv ? tg_scope_keep(adv) : NULL;
    tg_scope_end(sc);
    return kept;
}

/* The chunk's rows of a per-token constant of N elements (any contiguous
 * shape): a 1-D view. */
static tg_tensor *rows(tg_tensor *t, const tg_linear_loss_chunk *c) {
    tg_tensor *flat = t ? tg_reshape(t, TG_SHAPE(tg_numel(t))) : NULL;
    return tg_narrow(flat, 0, c->row_start, c->row_end - c->row_start);
}

/* -min(ratio adv, clamp(ratio, 1 - clip, 1 + clip) adv): the clipped surrogate. */
static tg_tensor *clipped_pg(tg_tensor *lp, tg_tensor *old, tg_tensor *adv, double clip) {
    tg_tensor *ratio = tg_exp(tg_sub(lp, old));
    return tg_neg(tg_minimum(tg_mul(ratio, adv), tg_mul(tg_clamp(ratio, 1 - clip, 1 + clip), adv)));
}

/* KL(pi || ref) per token from d = ref - lp (losses.c's estimators). */
static tg_tensor *kl_estimate(tg_tensor *lp, tg_tensor *ref, zoo_kl kl) {
    tg_tensor *d = tg_sub(ref, lp);
    if (kl == ZOO_KL_K1) return tg_neg(d);
    if (kl == ZOO_KL_K2) return tg_scale(tg_square(d), 0.5);
    return tg_sub(tg_add_scalar(tg_exp(d), -1), d);
}

/* The end of both callbacks: sum(w * per_token) out of the scope into *loss. */
static tg_status finish_chunk(int sc, tg_tensor *per_token, tg_tensor *w, tg_tensor **loss) {
    tg_tensor *kept = tg_scope_keep(tg_sum(tg_mul(w, per_token)));
    tg_status st = kept ? TG_OK : tg_last_status();
    tg_scope_end(sc);
    *loss = kept;
    if (!kept && st == TG_OK) { /* cannot happen: every NULL above sets an error */
        tg_set_error(TG_ERR_INTERNAL, "loss zoo: no chunk loss and no error");
        st = TG_ERR_INTERNAL;
    }
    return st;
}

tg_status zoo_chunk_ppo_loss(const tg_linear_loss_chunk *c, void *user, tg_tensor **loss) {
    const zoo_chunk_ppo *p = user;
    int sc = tg_scope_begin();
    tg_tensor *per_token = clipped_pg(c->logprob, rows(p->old_logp, c), rows(p->adv, c), p->clip);
    if (p->ent_coef != 0) /* the entropy bonus */
        per_token = tg_sub(per_token, tg_scale(c->entropy, p->ent_coef));
    if (p->kl_coef != 0) /* the KL penalty, k3 */
        per_token = tg_add(per_token,
                           tg_scale(kl_estimate(c->logprob, rows(p->ref_logp, c), ZOO_KL_K3),
                                    p->kl_coef));
    return finish_chunk(sc, per_token, rows(p->weights, c), loss);
}

tg_status zoo_chunk_grpo_loss(const tg_linear_loss_chunk *c, void *user, tg_tensor **loss) {
    const zoo_chunk_grpo *g = user;
    int sc = tg_scope_begin();
    tg_tensor *per_token = clipped_pg(c->logprob, rows(g->old_logp, c), rows(g->adv, c), g->clip);
    if (g->beta != 0)
        per_token = tg_add(per_token,
                           tg_scale(kl_estimate(c->logprob, rows(g->ref_logp, c), g->kl), g->beta));
    return finish_chunk(sc, per_token, rows(g->weights, c), loss);
}
