/* examples/ppo_loss.c - the PPO-style loss of ppo_loss.h, built from
 * tapegrad's public API only.
 *
 * Contract: see ppo_loss.h. Every tensor made here is owned by one scope and
 * released at its end, except the returned loss (tg_scope_keep); on failure
 * nothing is kept. Terms whose coefficient is 0 are computed for the metrics
 * without recording a graph, so they save nothing for backward.
 *
 * Padding: the fused op gives logprob 0 and entropy 0 on padding rows, but
 * old_logprob, ref_logprob and advantages may hold anything there. They are
 * replaced by 0 with tg_where *before* exp and mul, so that no NaN or inf is
 * ever computed from them, in forward or in backward. Masking the result
 * with a multiplication instead would make the loss NaN (0 * NaN); masking it
 * with tg_where at the end keeps the loss finite, but backward then sends
 * 0 * inf = NaN down to the padding rows' log-probs (harmless here only
 * because the fused op drops the gradient of ignored rows).
 */
#include "ppo_loss.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

ppo_loss_opts ppo_loss_opts_default(void) {
    ppo_loss_opts o;
    o.clip_eps = 0.2;
    o.entropy_coef = 0.01;
    o.kl_coef = 0.05;
    o.ignore_index = -100;
    o.chunk_size = 0;
    return o;
}

/* "[2, 3, 5]" in buf (n bytes), cut and ending with "..." when it does not fit.
 * Each piece is checked before the next is written: summing snprintf's
 * results could point past the end of buf. */
static const char *shape_str(const tg_tensor *t, char *buf, size_t n) {
    size_t k = 0;
    if (n == 0) return buf;
    buf[0] = '\0';
    for (int d = -1; d <= tg_ndim(t); d++) { /* "[", each size, "]" */
        int w = d < 0            ? snprintf(buf + k, n - k, "[")
                : d == tg_ndim(t) ? snprintf(buf + k, n - k, "]")
                                  : snprintf(buf + k, n - k, "%s%lld", d ? ", " : "",
                                             (long long)tg_size(t, d));
        if (w < 0 || (size_t)w >= n - k) { /* does not fit: end with "..." */
            if (n >= 4) memcpy(buf + n - 4, "...", 4);
            return buf;
        }
        k += (size_t)w;
    }
    return buf;
}

/* TG_ERR_NULL for a NULL input, unless an error is already recorded (most
 * likely by the call that returned the NULL): that first error is kept. */
static tg_tensor *null_input(const char *what) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_NULL, "ppo_loss: %s is NULL", what);
    return NULL;
}

/* Checks that t is (B, T) of logits' dtype (targets: i64). */
static bool check_bt(const tg_tensor *logits, const tg_tensor *t, const char *what, tg_dtype dt) {
    char a[96], b[96];
    if (tg_ndim(t) != 2 || tg_size(t, 0) != tg_size(logits, 0) ||
        tg_size(t, 1) != tg_size(logits, 1)) {
        tg_set_error(TG_ERR_SHAPE, "ppo_loss: %s has shape %s, expected (B, T) for logits %s", what,
                     shape_str(t, a, sizeof a), shape_str(logits, b, sizeof b));
        return false;
    }
    if (tg_get_dtype(t) != dt) {
        tg_set_error(TG_ERR_DTYPE, "ppo_loss: %s is %s, expected %s", what,
                     tg_dtype_name(tg_get_dtype(t)), tg_dtype_name(dt));
        return false;
    }
    return true;
}

/* sum(where(valid, x, 0)) / n_valid: a 0-d tensor. */
static tg_tensor *masked_mean(tg_tensor *valid, tg_tensor *x, tg_tensor *zero, double inv_n) {
    return tg_scale(tg_sum(tg_where(valid, x, zero)), inv_n);
}

tg_tensor *ppo_loss(const ppo_batch *batch, const ppo_loss_opts *opts, ppo_metrics *metrics) {
    if (metrics) {
        metrics->loss = metrics->policy_loss = metrics->entropy = NAN;
        metrics->kl = metrics->clip_frac = metrics->ratio_mean = NAN;
        metrics->n_valid = 0;
    }
    if (!batch) return null_input("batch");
    if (!batch->logits) return null_input("batch->logits");
    if (!batch->old_logprob) return null_input("batch->old_logprob");
    if (!batch->ref_logprob) return null_input("batch->ref_logprob");
    if (!batch->advantages) return null_input("batch->advantages");
    if (!batch->targets) return null_input("batch->targets");

    const ppo_loss_opts o = opts ? *opts : ppo_loss_opts_default();
    if (!(o.clip_eps > 0.0 && o.clip_eps < 1.0) || !isfinite(o.entropy_coef) ||
        !isfinite(o.kl_coef)) {
        tg_set_error(TG_ERR_VALUE,
                     "ppo_loss: need 0 < clip_eps < 1 and finite coefficients (clip_eps = %g, "
                     "entropy_coef = %g, kl_coef = %g)",
                     o.clip_eps, o.entropy_coef, o.kl_coef);
        return NULL;
    }
    tg_tensor *logits = batch->logits;
    char sh[96];
    if (tg_ndim(logits) != 3) {
        tg_set_error(TG_ERR_SHAPE, "ppo_loss: logits have shape %s, expected (B, T, V)",
                     shape_str(logits, sh, sizeof sh));
        return NULL;
    }
    const tg_dtype dt = tg_get_dtype(logits);
    if (dt != TG_F32 && dt != TG_F64) {
        tg_set_error(TG_ERR_DTYPE, "ppo_loss: logits are %s, expected f32 or f64",
                     tg_dtype_name(dt));
        return NULL;
    }
    if (!check_bt(logits, batch->old_logprob, "old_logprob", dt) ||
        !check_bt(logits, batch->ref_logprob, "ref_logprob", dt) ||
        !check_bt(logits, batch->advantages, "advantages", dt) ||
        !check_bt(logits, batch->targets, "targets", TG_I64))
        return NULL;

    const int scope = tg_scope_begin(); /* owns every tensor made below */
    if (scope < 0) return NULL;

    /* log-prob and entropy in one pass; entropy_grad only when it is used */
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.ignore_index = o.ignore_index;
    lo.chunk_size = o.chunk_size;
    lo.want_entropy = true;
    lo.entropy_grad = o.entropy_coef != 0.0;
    tg_tensor *lp = NULL, *ent = NULL; /* (B, T) each */
    tg_logprob_entropy(logits, batch->targets, &lo, &lp, &ent);

    tg_tensor *zero = tg_zeros(dt, TG_SCALAR), *one = tg_ones(dt, TG_SCALAR);
    /* valid: (B, T), non-zero on tokens whose target is not ignore_index. tg_where
     * takes any non-zero value as true, so targets - ignore_index will do. */
    tg_tensor *valid =
        tg_add_scalar(tg_to_dtype(batch->targets, TG_F64), -(double)o.ignore_index);
    double n_valid = 0.0;
    tg_status counted = TG_ERR_NULL;
    TG_NO_GRAD { counted = tg_item(tg_sum(tg_where(valid, one, zero)), &n_valid); }
    const double inv_n = 1.0 / (n_valid > 0.0 ? n_valid : 1.0);

    /* padding values replaced by 0 before they meet exp or mul (see the top) */
    tg_tensor *old_lp = tg_where(valid, batch->old_logprob, zero);
    tg_tensor *adv = tg_where(valid, batch->advantages, zero);
    tg_tensor *ref_lp = tg_where(valid, batch->ref_logprob, zero);

    /* clipped surrogate */
    tg_tensor *ratio = tg_exp(tg_sub(lp, old_lp));                      /* (B, T) */
    tg_tensor *clipped = tg_clamp(ratio, 1.0 - o.clip_eps, 1.0 + o.clip_eps);
    tg_tensor *surrogate = tg_minimum(tg_mul(ratio, adv), tg_mul(clipped, adv));
    tg_tensor *policy_loss = tg_neg(masked_mean(valid, surrogate, zero, inv_n)); /* () */

    /* entropy: when entropy_grad is off, ent does not require grad and this
     * records nothing */
    tg_tensor *ent_mean = masked_mean(valid, ent, zero, inv_n);

    /* KL, k3 estimator: exp(d) - d - 1 with d = ref - lp; recorded only when
     * it is in the loss */
    tg_tensor *kl_mean = NULL;
    const bool prev = tg_set_grad_enabled(tg_is_grad_enabled() && o.kl_coef != 0.0);
    {
        tg_tensor *d = tg_sub(ref_lp, lp);
        kl_mean = masked_mean(valid, tg_add_scalar(tg_sub(tg_exp(d), d), -1.0), zero, inv_n);
    }
    tg_set_grad_enabled(prev);

    tg_tensor *loss = policy_loss;
    if (o.entropy_coef != 0.0) loss = tg_sub(loss, tg_scale(ent_mean, o.entropy_coef));
    if (o.kl_coef != 0.0) loss = tg_add(loss, tg_scale(kl_mean, o.kl_coef));

    /* metrics: plain doubles, computed without recording anything */
    ppo_metrics m = {0};
    m.n_valid = (int64_t)n_valid;
    tg_tensor *clip_frac = NULL, *ratio_mean = NULL;
    TG_NO_GRAD {
        /* clipped where ratio != clamp(ratio): tg_where's cond is "non-zero" */
        clip_frac = masked_mean(valid, tg_where(tg_sub(ratio, clipped), one, zero), zero, inv_n);
        ratio_mean = masked_mean(valid, ratio, zero, inv_n);
    }

    /* the one check: any failure above left a NULL somewhere on this path */
    const bool ok = counted == TG_OK && loss && tg_item(loss, &m.loss) == TG_OK &&
                    tg_item(policy_loss, &m.policy_loss) == TG_OK &&
                    tg_item(ent_mean, &m.entropy) == TG_OK && tg_item(kl_mean, &m.kl) == TG_OK &&
                    tg_item(clip_frac, &m.clip_frac) == TG_OK &&
                    tg_item(ratio_mean, &m.ratio_mean) == TG_OK;
    tg_tensor *result = ok ? tg_scope_keep(loss) : NULL; /* out of this scope */
    tg_scope_end(scope);
    if (result && metrics) *metrics = m;
    return result;
}
