/* ops/logprob_composite.c - the composite (teaching baseline) implementation
 * of tg_logprob_entropy, built from generic ops:
 *   x = z / T; lsm = log_softmax(x); logprob = where(mask, gather(lsm, y), 0)
 *   entropy = where(mask, -sum(p * where(p, log_softmax(x), 0)), 0),  p = softmax(x)
 * (the entropy computes its own softmax/log_softmax, as a separate entropy
 * function in a trainer does; the where() keeps masked -inf logits from
 * turning 0 * -inf into NaN). With entropy_grad off the entropy is computed
 * under no-grad, which is the fix of the entropy-coefficient-0 story: the
 * (N, V) softmax and log-softmax it would save are never kept.
 * With chunk_size c (0 < c < N) the rows are processed c at a time inside one
 * custom function that keeps nothing but the logits and, in backward,
 * recomputes each chunk with grad on (activation checkpointing): bounded
 * memory, more compute. Rows are checked like in the fused path (NaN, +inf,
 * all -inf are refused); ignored rows are replaced by zeros before the
 * generic ops read them (when there are any: one more (N, V) activation). */
#include <stdlib.h>
#include <string.h>

#include "logprob_internal.h"

typedef struct {
    double inv_t;
    int64_t chunk;
    bool want_h, h_grad;
    bool ignored; /* some row is ignored */
    const char *who; /* the public op called, for the errors */
} comp_state;

/* logprob (n) and, if want_h, entropy (n) of rows z2 (n, V); idx (n, 1) i64
 * with ignored rows set to 0; mask (n) of z2's dtype. With `ignored` (some
 * row of z2 is ignored), those rows are replaced by zeros first: their
 * logits are never read (NaN or -inf there would otherwise reach the results
 * and the gradient through 0 * NaN), as in the fused path. */
static tg_status rows_forward(tg_site s, tg_tensor *z2, tg_tensor *idx, tg_tensor *mask,
                              bool ignored, double inv_t, bool want_h, bool h_grad,
                              tg_tensor **lp, tg_tensor **h) {
    const int64_t n = z2->shape[0];
    tg_tensor *x = NULL, *lsm = NULL, *g = NULL, *g1 = NULL, *p = NULL, *l2 = NULL, *pl = NULL,
              *sm = NULL, *hn = NULL, *l2z = NULL, *zero = NULL, *zw = NULL, *m2 = NULL;
    *lp = NULL;
    if (h) *h = NULL;
    if (!(zero = tg__zeros_on(s, z2->storage->device, z2->dtype, 0, NULL))) goto out;
    if (!ignored) zw = tg_retain(z2);
    else if ((m2 = tg__view(s, mask, 2, (int64_t[]){n, 1}))) zw = tg__where(s, m2, z2, zero);
    if (!zw) goto out;
    x = inv_t == 1.0 ? tg_retain(zw) : tg__scale(s, zw, inv_t);
    /* where, not a product with the mask: an ignored row's value is +0 and its
     * gradient 0 whatever the upstream gradient holds there (inf * 0 is NaN) */
    if (!x || !(lsm = tg__log_softmax(s, x)) || !(g = tg__gather(s, lsm, idx)) ||
        !(g1 = tg__view(s, g, 1, &n)) || !(*lp = tg__where(s, mask, g1, zero)))
        goto out;
    if (want_h) {
        bool prev = h_grad ? tg_is_grad_enabled() : tg_set_grad_enabled(false);
        if ((p = tg__softmax(s, x)) && (l2 = tg__log_softmax(s, x)) &&
            (l2z = tg__where(s, p, l2, zero)) && (pl = tg__mul(s, p, l2z)) &&
            (sm = tg__sum_dim(s, pl, -1, false)) && (hn = tg__neg(s, sm)))
            *h = tg__where(s, mask, hn, zero);
        tg_set_grad_enabled(prev);
        if (!*h) {
            tg__tensor_release(*lp);
            *lp = NULL;
        }
    }
out:
    tg__tensor_release(zw);
    tg__tensor_release(m2);
    tg__tensor_release(x);
    tg__tensor_release(lsm);
    tg__tensor_release(g);
    tg__tensor_release(g1);
    tg__tensor_release(p);
    tg__tensor_release(l2);
    tg__tensor_release(pl);
    tg__tensor_release(sm);
    tg__tensor_release(hn);
    tg__tensor_release(l2z);
    tg__tensor_release(zero);
    return *lp ? TG_OK : tg_last_status();
}

/* Rows [c0, c1) of t along dim 0, as an internal view. */
static tg_tensor *rows(tg_site s, tg_tensor *t, int64_t c0, int64_t c1) {
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[0] = c1 - c0;
    return tg__tensor_alias(s, t->storage, t->dtype, t->ndim, shape, t->strides,
                         t->offset + c0 * t->strides[0]);
}

/* ---- the checkpointed (chunked) version as a custom function ---------------- */

static tg_status chunked_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                                 tg_tensor **out, void *user) {
    (void)n_in, (void)n_out;
    const comp_state *cs = user;
    tg_tensor *z2 = in[0], *idx = in[1], *mask = in[2];
    const int64_t N = z2->shape[0];
    tg_site s = {__FILE__, __LINE__};
    const tg_device dev = z2->storage->device;
    out[0] = tg__new_output_on(s, cs->who, dev, z2->dtype, 1, &N);
    if (!out[0]) return tg_last_status();
    if (cs->want_h && !(out[1] = tg__new_output_on(s, cs->who, dev, z2->dtype, 1, &N)))
        return tg_last_status();
    for (int64_t c0 = 0; c0 < N; c0 += cs->chunk) {
        const int64_t c1 = c0 + cs->chunk < N ? c0 + cs->chunk : N;
        tg_tensor *zc = rows(s, z2, c0, c1), *ic = rows(s, idx, c0, c1), *mc = rows(s, mask, c0, c1);
        tg_tensor *lp = NULL, *h = NULL, *dst;
        tg_status st = zc && ic && mc ? rows_forward(s, zc, ic, mc, cs->ignored, cs->inv_t,
                                                     cs->want_h, false, &lp,
                                                     cs->want_h ? &h : NULL)
                                      : tg_last_status();
        if (st == TG_OK) {
            if ((dst = rows(s, out[0], c0, c1))) {
                st = tg__k_copy(dst, lp);
                tg__tensor_release(dst);
            } else {
                st = tg_last_status();
            }
        }
        if (st == TG_OK && h) {
            if ((dst = rows(s, out[1], c0, c1))) {
                st = tg__k_copy(dst, h);
                tg__tensor_release(dst);
            } else {
                st = tg_last_status();
            }
        }
        tg__tensor_release(lp);
        tg__tensor_release(h);
        tg__tensor_release(zc);
        tg__tensor_release(ic);
        tg__tensor_release(mc);
        if (st != TG_OK) return st;
    }
    for (int i = 0; i < 3; i++)
        if (tg_ctx_save(ctx, in[i]) < 0) return tg_last_status();
    return tg_ctx_set_state(ctx, cs, sizeof *cs);
}

static tg_status chunked_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                                  tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in, (void)user;
    if (!tg_ctx_needs_input_grad(ctx, 0)) return TG_OK;
    const comp_state *cs = tg_ctx_state(ctx);
    tg_site s = {__FILE__, __LINE__};
    tg_tensor *z2 = tg_ctx_saved(ctx, 0), *idx = tg_ctx_saved(ctx, 1), *mask = tg_ctx_saved(ctx, 2);
    tg_tensor *dz = NULL;
    tg_status st = TG_OK;
    if (!z2 || !idx || !mask) {
        st = tg_last_status();
        goto out;
    }
    const int64_t N = z2->shape[0];
    dz = tg__new_output_on(s, cs->who, z2->storage->device, z2->dtype, 2, z2->shape);
    if (!dz) {
        st = tg_last_status();
        goto out;
    }
    for (int64_t c0 = 0; c0 < N && st == TG_OK; c0 += cs->chunk) {
        const int64_t c1 = c0 + cs->chunk < N ? c0 + cs->chunk : N;
        int sc = tg_scope_begin(); /* everything below is released at its end */
        if (sc < 0) {
            st = tg_last_status();
            break;
        }
        tg_tensor *zc = tg_contiguous(tg__ret(rows(s, z2, c0, c1)));
        tg_tensor *leaf = tg_clone(zc);
        st = leaf ? tg_set_requires_grad(leaf, true) : tg_last_status();
        tg_tensor *lp = NULL, *h = NULL;
        bool prev = tg_set_grad_enabled(true);
        if (st == TG_OK)
            st = rows_forward(s, leaf, tg__ret(rows(s, idx, c0, c1)), tg__ret(rows(s, mask, c0, c1)),
                              cs->ignored, cs->inv_t, cs->h_grad, cs->h_grad, &lp,
                              cs->h_grad ? &h : NULL);
        tg__ret(lp);
        tg__ret(h);
        tg_tensor *loss = NULL;
        if (st == TG_OK) {
            loss = tg_sum(tg_mul(lp, tg__ret(rows(s, gout[0], c0, c1))));
            if (h) loss = tg_add(loss, tg_sum(tg_mul(h, tg__ret(rows(s, gout[1], c0, c1)))));
            st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
        }
        tg_set_grad_enabled(prev);
        if (st == TG_OK) {
            tg_tensor *dst = tg__ret(rows(s, dz, c0, c1));
            tg_tensor *g = tg_grad(leaf);
            if (dst && g) st = tg__k_copy(dst, g);
            else st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_INTERNAL;
        }
        tg_scope_end(sc);
    }
out:
    tg__tensor_release(z2);
    tg__tensor_release(idx);
    tg__tensor_release(mask);
    if (st == TG_OK) gin[0] = dz;
    else tg__tensor_release(dz);
    return st;
}

static const tg_function chunked_fn = {"CompositeChunkedLogprobBackward", chunked_forward,
                                       chunked_backward};

/* ---- entry ------------------------------------------------------------------------ */

tg_status tg__lpe_composite(tg_site s, const char *who, tg_tensor *z, tg_tensor *y,
                            const tg_logprob_opts *o, tg_tensor **lp_out, tg_tensor **h_out) {
    const int64_t V = z->shape[z->ndim - 1];
    const int lead = z->ndim - 1;
    const int64_t N = tg__k_numel(lead, z->shape);
    tg_tensor *yc = tg__lpe_targets(s, who, y, V, o->ignore_index);
    if (!yc) return tg_last_status();
    /* idx and mask are built on the host, then moved to z's device */
    tg_tensor *idx = tg__new_output_on(s, who, TG_CPU, TG_I64, 2, (int64_t[]){N, 1}); // (N, 1)
    tg_tensor *mask = tg__new_output_on(s, who, TG_CPU, z->dtype, 1, &N);            // (N)
    tg_tensor *z2 = NULL, *lp = NULL, *h = NULL, *lpv = NULL, *hv = NULL;
    tg_status st = TG_OK;
    void *owned = NULL;
    if (!idx || !mask || !(z2 = tg__reshape(s, z, 2, (int64_t[]){N, V}))) goto fail;
    const int64_t *t = tg__lpe_targets_host(who, yc, &owned);
    if (!t) goto fail;
    tg__lpe_bad bad;
    if (tg__k_lpe_check_rows(z, tg__ptr(yc), o->ignore_index, 1.0 / o->temperature, &bad) !=
        TG_OK)
        goto fail;
    if (bad.row >= 0) {
        tg__lpe_bad_row_error(who, z, &bad, 1.0 / o->temperature);
        goto fail;
    }
    bool ignored = false;
    for (int64_t i = 0; i < N; i++) {
        bool keep = t[i] != o->ignore_index;
        ignored |= !keep;
        ((int64_t *)tg__ptr(idx))[i] = keep ? t[i] : 0;
        if (z->dtype == TG_F32) ((float *)tg__ptr(mask))[i] = keep ? 1.0f : 0.0f;
        else ((double *)tg__ptr(mask))[i] = keep ? 1.0 : 0.0;
    }
    free(owned);
    owned = NULL;
    if (z->storage->device != TG_CPU) {
        tg_tensor *di = tg__device_copy(s, who, idx, z->storage->device);
        tg_tensor *dm = di ? tg__device_copy(s, who, mask, z->storage->device) : NULL;
        tg__tensor_release(idx);
        tg__tensor_release(mask);
        idx = di;
        mask = dm;
        if (!idx || !mask) goto fail;
    }
    const bool chunked = o->chunk_size > 0 && o->chunk_size < N;
    const bool h_grad = o->want_entropy && o->entropy_grad;
    if (!chunked) {
        st = rows_forward(s, z2, idx, mask, ignored, 1.0 / o->temperature, o->want_entropy,
                          h_grad, &lp, o->want_entropy ? &h : NULL);
    } else {
        comp_state cs = {1.0 / o->temperature, o->chunk_size, o->want_entropy, h_grad, ignored,
                         who};
        tg_tensor *in[3] = {z2, idx, mask}, *out[2] = {NULL, NULL};
        int prev = tg__scopes_suspend(); /* the outputs are ours, not a scope's */
        st = tg_function_apply_at(s, &chunked_fn, &cs, 3, in, o->want_entropy ? 2 : 1, out);
        tg__scopes_resume(prev);
        lp = out[0];
        h = out[1];
        if (st == TG_OK && h && !h_grad) { /* entropy only logged: cut it from the graph */
            tg_tensor *d = tg__tensor_alias(s, h->storage, h->dtype, h->ndim, h->shape, h->strides,
                                         h->offset);
            tg__tensor_release(h);
            h = d;
        }
    }
    if (st != TG_OK || (o->want_entropy && !h)) goto fail;
    /* shaped like the fused outputs, and like them not views: nothing else
     * holds their storage, so in-place ops on them are plain */
    if (!(lpv = tg__reshape_own(s, lp, lead, z->shape))) goto fail;
    if (h && !(hv = tg__reshape_own(s, h, lead, z->shape))) goto fail;
    *lp_out = lpv;
    if (h_out) *h_out = hv;
    lpv = hv = NULL; /* the caller's now */
    st = TG_OK;
    goto done;
fail:
    st = tg_last_status();
    if (st == TG_OK) st = TG_ERR_INTERNAL;
done:
    free(owned);
    tg__tensor_release(lpv);
    tg__tensor_release(hv);
    tg__tensor_release(lp);
    tg__tensor_release(h);
    tg__tensor_release(z2);
    tg__tensor_release(idx);
    tg__tensor_release(mask);
    tg__tensor_release(yc);
    return st;
}
