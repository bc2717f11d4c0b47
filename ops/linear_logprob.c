/* ops/linear_logprob.c - tg_linear_logprob_entropy: log-prob, entropy and
 * log-sum-exp of z = h W^T + b without z ever being whole in memory.
 *
 * The loop (docs/design.md draws it). A chunk is the next plan.chunk_rows
 * kept rows (target != ignore_index): a row range of h and of every per-row
 * tensor when they follow each other, else gathered into buffers
 * (tg__lin_for_chunks, tg__lin_move_rows). Ignored rows are never multiplied. For each chunk, for each
 * block of plan.vocab_block vocabulary rows:
 *   Z = h[chunk] @ W[block]^T (+ b[block])     one GEMM into the workspace
 *   forward:  the fused kernel's row statistics of Z (max M_b, ls_b, H_b) and
 *             the target logit; with one block these are the answer, with
 *             several they are merged on the host (max-rescaling, below)
 *   backward: Z becomes dZ in place (the fused backward kernel with the saved
 *             global statistics; a row whose target is in another block gets
 *             no one-hot term), then dh[chunk] += dZ @ W[block],
 *             dW[block] += dZ^T @ h[chunk], db[block] += 1^T dZ.
 * Merging block statistics (d = (z - M) / T, S = sum exp(d), A = sum exp(d) d):
 *   S_b = exp(ls_b), A_b = S_b (ls_b - H_b); with M' = max(M, M_b),
 *   f = exp((M - M') / T), f_b = exp((M_b - M') / T):
 *   A' = f (A + S (M - M') / T) + f_b (A_b + S_b (M_b - M') / T),
 *   S' = f S + f_b S_b;  at the end ls = log S, H = ls - A / S,
 *   logprob = (z_y - M) / T - ls.
 * The composite impl is tg_matmul (+ bias) then the fused logits op.
 * This file: the checks, the composite impl and the public entry; the plan,
 * the loop, forward and backward are ops/linear_{plan,loop,forward,
 * backward}.c (ops/linear_internal.h). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linear_internal.h"

tg_linear_logprob_opts tg_linear_logprob_opts_default(void) {
    tg_linear_logprob_opts o;
    memset(&o, 0, sizeof o);
    o.temperature = 1.0;
    o.ignore_index = -100;
    o.want_entropy = true;
    o.entropy_grad = true;
    o.impl = TG_LOGPROB_FUSED;
    o.workspace_bytes = 0; /* the device's: tg_linear_logprob_default_workspace */
    return o;
}

/* ---- checks and the public entry ---------------------------------------------------- */

tg_status tg__lin_check(const char *who, const tg_tensor *h, const tg_tensor *w, const tg_tensor *b,
                       const tg_tensor *y, const tg_linear_logprob_opts *o) {
    char s1[160], s2[160];
    if (!tg__is_floating(h->dtype) || w->dtype != h->dtype || (b && b->dtype != h->dtype))
        return tg__set_error(TG_ERR_DTYPE,
                             "%s: hidden, weight and bias must be f32, f64 or "
                             "bf16 of one dtype, got %s, %s and %s",
                             who, tg_dtype_name(h->dtype), tg_dtype_name(w->dtype),
                             b ? tg_dtype_name(b->dtype) : "none");
    if (y->dtype != TG_I64)
        return tg__set_error(TG_ERR_DTYPE, "%s: targets must be i64, got %s", who,
                             tg_dtype_name(y->dtype));
    const tg_tensor *all[4] = {h, w, y, b};
    if (!tg__same_device(who, b ? 4 : 3, all)) return tg_last_status();
    if (h->ndim < 1)
        return tg__set_error(TG_ERR_SHAPE, "%s: hidden of shape %s: need (..., d)", who,
                             tg__shape_str(s1, sizeof s1, h->ndim, h->shape));
    const int64_t d = h->shape[h->ndim - 1];
    if (w->ndim != 2 || w->shape[1] != d || w->shape[0] < 1)
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: weight of shape %s does not fit hidden of shape "
                             "%s (need (V, %lld), V >= 1)",
                             who, tg__shape_str(s1, sizeof s1, w->ndim, w->shape),
                             tg__shape_str(s2, sizeof s2, h->ndim, h->shape), (long long)d);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: bias of shape %s does not fit weight of shape "
                             "%s (need (%lld))",
                             who, tg__shape_str(s1, sizeof s1, b->ndim, b->shape),
                             tg__shape_str(s2, sizeof s2, w->ndim, w->shape),
                             (long long)w->shape[0]);
    bool same = y->ndim == h->ndim - 1;
    for (int k = 0; same && k < y->ndim; k++) same = y->shape[k] == h->shape[k];
    if (!same)
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: targets of shape %s do not match hidden of shape "
                             "%s (targets must have hidden's shape without its last dimension)",
                             who, tg__shape_str(s1, sizeof s1, y->ndim, y->shape),
                             tg__shape_str(s2, sizeof s2, h->ndim, h->shape));
    if (!(o->temperature > 0.0) || !isfinite(o->temperature))
        return tg__set_error(TG_ERR_VALUE, "%s: temperature must be finite and > 0, got %g",
                             who, o->temperature);
    if (o->impl != TG_LOGPROB_FUSED && o->impl != TG_LOGPROB_COMPOSITE)
        return tg__set_error(TG_ERR_VALUE, "%s: unknown impl %d", who, (int)o->impl);
    if (o->chunk_rows < 0 || o->vocab_block < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: chunk_rows and vocab_block must be >= 0, got "
                             "%lld and %lld", who, (long long)o->chunk_rows,
                             (long long)o->vocab_block);
    return TG_OK;
}

/* The baseline: logits = hidden @ weight^T (+ bias), then the fused logits op. */
static tg_status composite(tg_site s, tg_tensor *h, tg_tensor *w, tg_tensor *b, tg_tensor *y,
                           const tg_linear_logprob_opts *o, tg_tensor **lp, tg_tensor **H,
                           tg_tensor **lse) {
    tg_tensor *wt = tg__transpose(s, w, 0, 1);
    tg_tensor *z = wt ? tg__matmul(s, h, wt) : NULL; /* f32 for bf16 operands */
    tg_tensor *b32 = z && b ? tg__to_dtype(s, b, z->dtype) : NULL;
    tg_tensor *zb = b32 ? tg__add(s, z, b32) : (z && !b ? tg_retain(z) : NULL);
    tg__tensor_release(wt);
    tg__tensor_release(z);
    tg__tensor_release(b32);
    if (!zb) return tg_last_status();
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.temperature = o->temperature;
    lo.ignore_index = o->ignore_index;
    lo.want_entropy = o->want_entropy;
    lo.entropy_grad = o->entropy_grad;
    tg_set_name(zb, "logits");
    tg_status st = lse ? tg__logprob_entropy_lse(s, WHO, zb, y, &lo, lp, H, lse)
                       : tg__logprob_entropy(s, WHO, zb, y, &lo, lp, H);
    tg__tensor_release(zb);
    return st;
}

/* Fills loop from the inputs (contiguous copies where needed, the targets on
 * the host); *hc receives hidden made contiguous. With a communicator the
 * targets are global ids, checked in the agreement instead. */
tg_status tg__lin_prepare(lin *loop, tg_tensor *hidden, tg_tensor *w, tg_tensor *b, tg_tensor *y,
                         const tg_linear_logprob_opts *o, tg_tensor **hc) {
    loop->in.in_dt = hidden->dtype;
    loop->in.dt = loop->in.in_dt == TG_BF16 ? TG_F32 : loop->in.in_dt;
    loop->in.es = tg_dtype_size(loop->in.dt);
    loop->in.dev = hidden->storage->device;
    tg__lin_gemm_layout(loop);
    loop->in.d = hidden->shape[hidden->ndim - 1];
    loop->in.V = w->shape[0];
    loop->in.N = tg__k_numel(hidden->ndim - 1, hidden->shape);
    loop->in.ignore = o->ignore_index;
    loop->in.inv_t = 1.0 / o->temperature;
    tg_linear_logprob_opts on_dev = *o; /* the plan of the inputs' device */
    on_dev.device = loop->in.dev;
    tg_status rc = tg_linear_logprob_plan_for(loop->in.N, loop->in.d, loop->in.V,
                                              loop->in.in_dt, b != NULL, &on_dev, &loop->plan);
    if (rc != TG_OK) return rc;
    if (!(*hc = tg__contiguous(loop->in.s, hidden)) ||
        !(loop->in.w = tg__contiguous(loop->in.s, w)) ||
        (b && !(loop->in.b = tg__contiguous(loop->in.s, b))) ||
        !(loop->in.y = tg__lpe_targets(
              loop->in.s, loop->in.who, y, loop->par.comm ? INT64_MAX : loop->in.V, loop->in.ignore)) ||
        !(loop->in.h = tg__lin_alias_rows(loop, *hc, 0, loop->in.N, loop->in.d, loop->in.d)))
        return tg_last_status();
    tg_tensor *yflat = tg__lin_alias_rows(loop, loop->in.y, 0, loop->in.N, -1, 1);
    if (!yflat) return tg_last_status();
    tg__tensor_release(loop->in.y);
    loop->in.y = yflat;
    return (loop->in.yh = tg__lpe_targets_host(loop->in.who, loop->in.y, &loop->in.y_owned))
               ? TG_OK
               : tg_last_status();
}

/* What vocab-parallel needs beyond tg__lin_check(). */
static tg_status vp_checks(const tg_tensor *hidden, int64_t V,
                           const tg_linear_logprob_opts *o) {
    if (hidden->storage->device != tg_comm_device(o->comm))
        return tg__set_error(TG_ERR_DEVICE, "%s: the inputs are on %s but the communicator "
                             "serves %s tensors", WHO, tg__device_name(hidden->storage->device),
                             tg__device_name(tg_comm_device(o->comm)));
    if (o->vocab_start < 0 || o->vocab_start > INT64_MAX - V || o->impl != TG_LOGPROB_FUSED)
        return tg__set_error(TG_ERR_VALUE, "%s: vocab-parallel needs vocab_start >= 0 (got "
                             "%lld) and impl TG_LOGPROB_FUSED", WHO, (long long)o->vocab_start);
    return TG_OK;
}

/* What the call hands out: the outputs in hidden's leading shape (F's flat
 * ones are replaced), the lse (computed from F->st; only allocated when
 * `empty`, filled by lse_host later) and, when recording, the node (owned by
 * the outputs from then on). */
static tg_status hand_outputs(lin *loop, tg_tensor *hidden, tg_tensor *hc, tg_tensor *b,
                              const tg_linear_logprob_opts *o, bool record, bool grad_h,
                              bool want_lse, bool empty, fwd_out *F, tg_tensor **lse,
                              tg_tensor *const *ins) {
    const tg_site s = loop->in.s;
    const int lead = hidden->ndim - 1;
    tg_tensor *shaped[2] = {NULL, NULL}, *flat[2] = {F->lp, F->H};
    for (int k = 0; k < 2; k++)
        if (flat[k]) shaped[k] = tg__lpe_lead_view(s, flat[k], hidden);
    tg__tensor_release(F->lp);
    tg__tensor_release(F->H);
    F->lp = shaped[0];
    F->H = shaped[1];
    if (!F->lp || (o->want_entropy && !F->H)) return tg_last_status();
    if (want_lse) {
        *lse = empty ? tg__new_output_on(s, WHO, loop->in.dev, tg__lpe_out_dtype(hidden), lead,
                                         hidden->shape)
                     : tg__lpe_lse_of(s, WHO, hidden, F->st, F->nstat, loop->in.inv_t);
        if (!*lse) return tg_last_status();
    }
    if (!record) return TG_OK;
    tg__node *n = tg__node_new(s, &tg__lin_def, tg__lin_def.name, b ? 3 : 2, ins,
                               1 + grad_h + want_lse);
    if (!n) return tg_last_status();
    n->dparam[P_INV_T] = loop->in.inv_t;
    n->dparam[P_CHUNK] = (double)loop->plan.chunk_rows;
    n->dparam[P_VBLOCK] = (double)loop->plan.vocab_block;
    n->dparam[P_GRAD_F32] = o->grad_f32 ? 1.0 : 0.0;
    n->iparam[P_IGNORE] = loop->in.ignore;
    n->iparam[P_NSTAT] = F->nstat;
    n->iparam[P_LSE_OUT] = want_lse ? 1 + grad_h : -1;
    n->iparam[P_HAS_BIAS] = b != NULL;
    n->iparam[P_COMM] = (int64_t)(intptr_t)loop->par.comm;
    n->iparam[P_VSTART] = loop->par.vstart;
    tg_set_name(F->st, "row max/logsumexp/entropy");
    if (tg__node_save(n, hc, false, 0) < 0 || tg__node_save(n, loop->in.w, false, 1) < 0 ||
        tg__node_save(n, loop->in.y, false, -1) < 0 || tg__node_save(n, F->st, false, -1) < 0 ||
        (b && tg__node_save(n, loop->in.b, false, 2) < 0)) {
        tg__node_release(n);
        return tg_last_status();
    }
    tg__node_set_output(n, 0, F->lp);
    if (grad_h) tg__node_set_output(n, 1, F->H);
    if (want_lse) tg__node_set_output(n, 1 + grad_h, *lse);
    tg__node_release(n);
    return TG_OK;
}

/* Vocab-parallel: the exchange's buffers (before the agreement: a failure is
 * told in it), then the agreement with this rank's status rc; on success the
 * loop takes what it established (every rank the same chunks). */
static tg_status agree_parallel(lin *loop, tg_status rc, const tg_linear_logprob_opts *o,
                                unsigned flags, tg__vp *vp) {
    if (rc == TG_OK &&
        (rc = tg__vp_buf_new(loop->par.comm, WHO, loop->in.N, &loop->par.xb)) == TG_OK)
        loop->par.accs = loop->par.xb.mine;
    tg__vp_sig sig = {loop->in.N,         loop->in.V,        o->vocab_start,
                      loop->in.in_dt,     o->temperature,    o->ignore_index,
                      (int64_t)flags,     loop->in.yh,       loop->plan.chunk_rows,
                      loop->in.d};
    if ((rc = tg__vp_agree(loop->par.comm, WHO, rc, &sig, vp)) != TG_OK) return rc;
    loop->par.vp = vp;
    loop->par.vstart = o->vocab_start;
    loop->plan.chunk_rows = vp->chunk;
    return TG_OK;
}

/* pre: this rank's status from the argument checks (only with a
 * communicator can it be other than TG_OK: every rank then still takes part
 * in the agreement, and in the first exchange after a later failure). */
static tg_status fused(tg_site s, tg_status pre, tg_tensor *hidden, tg_tensor *w, tg_tensor *b,
                       tg_tensor *y, const tg_linear_logprob_opts *o, tg_tensor **lp_out,
                       tg_tensor **h_out, tg_tensor **lse_out) {
    lin loop;
    memset(&loop, 0, sizeof loop);
    loop.in.s = s;
    loop.in.who = WHO;
    loop.par.comm = o->comm;
    tg__vp vp;
    memset(&vp, 0, sizeof vp);
    tg_tensor *hc = NULL, *lse = NULL;
    fwd_out F = {NULL, NULL, NULL, 2};
    tg_status rc = pre;
    if (rc == TG_OK) rc = tg__lin_check(WHO, hidden, w, b, y, o);
    if (rc == TG_OK && loop.par.comm) rc = vp_checks(hidden, w->shape[0], o);
    if (rc == TG_OK) rc = tg__lin_prepare(&loop, hidden, w, b, y, o, &hc);
    tg_tensor *ins[3] = {hc, loop.in.w, loop.in.b};
    const bool record = rc == TG_OK && tg__needs_grad(b ? 3 : 2, ins);
    const bool grad_h = record && o->want_entropy && o->entropy_grad;
    if (loop.par.comm) {
        unsigned flags = (o->want_entropy ? TG__AGREE_WANT_ENTROPY : 0) |
                         (o->entropy_grad ? TG__AGREE_ENTROPY_GRAD : 0) |
                         (lse_out ? TG__AGREE_LSE : 0) | (b ? TG__AGREE_BIAS : 0) |
                         (record && tg__needs_grad(1, &hc) ? TG__AGREE_HIDDEN_GRAD : 0) |
                         (record ? TG__AGREE_RECORD : 0);
        if ((rc = agree_parallel(&loop, rc, o, flags, &vp)) != TG_OK) goto fail;
    } else if (rc != TG_OK) {
        goto fail;
    }
    F.nstat = grad_h ? 3 : 2;
    F.lp = tg__zeros_on(s, loop.in.dev, loop.in.dt, 1, &loop.in.N);
    F.H = F.lp && o->want_entropy ? tg__zeros_on(s, loop.in.dev, loop.in.dt, 1, &loop.in.N)
                                  : NULL;
    F.st = F.lp && (record || lse_out)
               ? tg__zeros_on(s, loop.in.dev, TG_F64, 2, (int64_t[]){loop.in.N, F.nstat})
               : NULL;
    const int64_t zn = loop.plan.chunk_rows * loop.plan.vocab_block;
    rc = !F.lp || (o->want_entropy && !F.H) || ((record || lse_out) && !F.st) ||
                 (loop.in.N > 0 &&
                  (!(loop.buf.zbuf = tg__lin_ws_new(&loop, loop.in.dev, loop.in.dt, 1, &zn)) ||
                   tg__lin_conv_buffers(&loop) != TG_OK))
             ? tg_last_status()
             : TG_OK;
    if (rc != TG_OK && !loop.par.comm) goto fail;
    /* vocab-parallel on the CPU: everything the call hands out is made before
     * the statistics exchange, so that a failure making it is told there
     * (every rank fails) rather than failing this rank's call alone while the
     * others record their node, whose backward would then wait for it */
    const bool early = loop.par.comm && loop.in.dev == TG_CPU;
    if (rc == TG_OK && early &&
        !(loop.par.stage =
              tg__lin_ws_new(&loop, TG_CPU, TG_F64, 2, (int64_t[]){loop.in.N, STAGE_COLS})))
        rc = tg_last_status();
    if (rc == TG_OK && early)
        rc = hand_outputs(&loop, hidden, hc, b, o, record, grad_h, lse_out != NULL, true, &F,
                          &lse, ins);
    if (rc == TG_OK && early && !tg__ret_reserve(3)) rc = tg_last_status(); /* handing out */
    if (rc == TG_OK && loop.in.N > 0) rc = tg__lin_for_chunks(&loop, tg__lin_fwd_chunk, &F);
    if (loop.par.comm) rc = tg__lin_vp_finish(&loop, rc, &F); /* every rank, whatever rc is */
    if (rc != TG_OK) goto fail;
    tg__lin_free_workspace(&loop); /* before the outputs are handed out */
    if (early) {
        if (lse) tg__vp_lse_host(lse, F.st, F.nstat, loop.in.inv_t);
    } else if ((rc = hand_outputs(&loop, hidden, hc, b, o, record, grad_h, lse_out != NULL,
                                  false, &F, &lse, ins)) != TG_OK) {
        goto fail;
    }
    tg__tensor_release(F.st);
    tg__tensor_release(hc);
    tg__lin_done(&loop);
    tg__vp_free(&vp);
    *lp_out = F.lp;
    *h_out = F.H;
    if (lse_out) *lse_out = lse;
    return TG_OK;
fail:
    rc = tg_last_status();
    tg__tensor_release(lse);
    tg__tensor_release(F.lp);
    tg__tensor_release(F.H);
    tg__tensor_release(F.st);
    tg__tensor_release(hc);
    tg__lin_done(&loop);
    tg__vp_free(&vp);
    return rc;
}

tg_status tg_linear_logprob_entropy_at(tg_site s, tg_tensor *hidden, tg_tensor *weight,
                                       tg_tensor *bias, tg_tensor *targets,
                                       const tg_linear_logprob_opts *opts, tg_tensor **logprob,
                                       tg_tensor **entropy, tg_tensor **lse) {
    tg_linear_logprob_opts o = opts ? *opts : tg_linear_logprob_opts_default();
    if (logprob) *logprob = NULL;
    if (entropy) *entropy = NULL;
    if (lse) *lse = NULL;
    const bool bad_arg = tg__null_arg(hidden, WHO, "hidden") ||
                         tg__null_arg(weight, WHO, "weight") ||
                         tg__null_arg(targets, WHO, "targets") ||
                         tg__null_arg(logprob, WHO, "logprob") ||
                         (o.want_entropy && tg__null_arg(entropy, WHO, "entropy"));
    if (bad_arg && !o.comm) return tg_last_status();
    tg_tensor *lp = NULL, *h = NULL, *l = NULL;
    tg_status st;
    if (o.comm) { /* every rank takes part, whatever its arguments */
        st = fused(s, bad_arg ? tg_last_status() : TG_OK, hidden, weight, bias, targets, &o,
                   &lp, &h, lse ? &l : NULL);
    } else {
        st = tg__lin_check(WHO, hidden, weight, bias, targets, &o);
        if (st != TG_OK) return st;
        st = o.impl == TG_LOGPROB_FUSED
                 ? fused(s, TG_OK, hidden, weight, bias, targets, &o, &lp, &h, lse ? &l : NULL)
                 : composite(s, hidden, weight, bias, targets, &o, &lp, &h, lse ? &l : NULL);
    }
    if (st != TG_OK) return st;
    return tg__lpe_give_outputs(lp, h, l, logprob, o.want_entropy ? entropy : NULL, lse);
}
