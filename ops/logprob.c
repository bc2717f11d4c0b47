/* ops/logprob.c - tg_logprob_entropy: argument checks, the fused path (one
 * forward pass, a node that saves the logits by reference plus lse/entropy
 * per row, one backward pass) and dispatch to the composite baseline
 * (ops/logprob_composite.c). The math is in include/tapegrad/logprob.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "logprob_internal.h"

tg_logprob_opts tg_logprob_opts_default(void) {
    tg_logprob_opts o = {1.0, -100, 0, true, true, TG_LOGPROB_FUSED, false, NULL, 0};
    return o;
}

/* ---- checks ---------------------------------------------------------------- */

tg_status tg__lpe_check(const char *who, const tg_tensor *z, const tg_tensor *y,
                        const tg_logprob_opts *o) {
    char a[160], b[160];
    if (!tg__is_floating(z->dtype))
        return tg__set_error(TG_ERR_DTYPE, "%s: logits must be f32, f64 or bf16, got %s", who,
                             tg_dtype_name(z->dtype));
    if (y->dtype != TG_I64)
        return tg__set_error(TG_ERR_DTYPE, "%s: targets must be i64, got %s", who,
                             tg_dtype_name(y->dtype));
    const tg_tensor *zy[2] = {z, y};
    if (!tg__same_device(who, 2, zy)) return tg_last_status();
    bool same = z->ndim >= 1 && y->ndim == z->ndim - 1;
    for (int d = 0; same && d < y->ndim; d++) same = y->shape[d] == z->shape[d];
    if (!same)
        return tg__set_error(TG_ERR_SHAPE, "%s: targets of shape %s do not match logits of shape "
                             "%s (targets must have the logits' shape without its last "
                             "dimension)", who, tg__shape_str(a, sizeof a, y->ndim, y->shape),
                             tg__shape_str(b, sizeof b, z->ndim, z->shape));
    if (z->shape[z->ndim - 1] == 0)
        return tg__set_error(TG_ERR_SHAPE, "%s: logits of shape %s have an empty vocabulary",
                             who, tg__shape_str(a, sizeof a, z->ndim, z->shape));
    if (!(o->temperature > 0.0) || !isfinite(o->temperature))
        return tg__set_error(TG_ERR_VALUE, "%s: temperature must be finite and > 0, got %g", who,
                             o->temperature);
    if (o->chunk_size < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: chunk_size must be >= 0, got %lld", who,
                             (long long)o->chunk_size);
    if (o->impl != TG_LOGPROB_FUSED && o->impl != TG_LOGPROB_COMPOSITE)
        return tg__set_error(TG_ERR_VALUE, "%s: unknown impl %d", who, (int)o->impl);
    return TG_OK;
}

tg_tensor *tg__lpe_targets(tg_site s, const char *who, tg_tensor *y, int64_t V, int64_t ignore) {
    tg_tensor *yc = tg__contiguous(s, y);
    if (!yc) return NULL;
    void *owned;
    const int64_t *t = tg__lpe_targets_host(who, yc, &owned); // (N)
    if (!t) {
        tg__tensor_release(yc);
        return NULL;
    }
    int64_t N = tg__k_numel(yc->ndim, yc->shape);
    for (int64_t i = 0; i < N; i++) {
        if (t[i] != ignore && (t[i] < 0 || t[i] >= V)) {
            const long long bad = (long long)t[i]; /* t may be the host copy freed below */
            tg__tensor_release(yc);
            free(owned);
            return tg__fail(TG_ERR_VALUE, "%s: row %lld: target %lld is outside [0, %lld) (and "
                            "is not ignore_index %lld)", who, (long long)i, bad, (long long)V,
                            (long long)ignore);
        }
    }
    free(owned);
    return yc;
}

const int64_t *tg__lpe_targets_host(const char *who, const tg_tensor *yc, void **owned) {
    int64_t lo;
    const int64_t *p = tg__host_elems(who, yc, owned, &lo);
    return p ? p + (yc->offset - lo) : NULL;
}

tg_status tg__lpe_locate_bad(const char *who, const tg_tensor *z, tg__lpe_bad *bad,
                             double inv_t) {
    if (bad->col != TG__LPE_COL_UNKNOWN) return TG_OK;
    const int64_t row = bad->row, V = z->shape[z->ndim - 1];
    int64_t off = z->offset + tg__k_offset_of(row, z->ndim - 1, z->shape, z->strides);
    tg_tensor *view = tg__tensor_alias(TG_SITE, z->storage, z->dtype, 2, (int64_t[]){1, V},
                                    (int64_t[]){V * z->strides[z->ndim - 1],
                                                z->strides[z->ndim - 1]}, off);
    tg_tensor *h = view ? tg__device_copy(TG_SITE, who, view, TG_CPU) : NULL;
    tg__tensor_release(view);
    if (h && h->dtype == TG_BF16) { /* a device that reads bf16 rows: the host checks f32 */
        tg_tensor *h32 = tg__tensor_new_on(TG_SITE, who, TG_CPU, TG_F32, 2, h->shape,
                                           TG_MEM_WORKSPACE);
        if (h32 && tg__k_copy(h32, h) != TG_OK) {
            tg__tensor_release(h32);
            h32 = NULL;
        }
        tg__tensor_release(h);
        h = h32;
    }
    if (!h) return tg_last_status();
    const int64_t y0 = 0; /* not the ignore value 1 below: the row is checked */
    tg__k_lpe_check_rows(h, &y0, 1, inv_t, bad); /* on the host: cannot fail */
    tg__tensor_release(h);
    bad->row = row;
    return TG_OK;
}

tg_status tg__lpe_bad_row_error(const char *who, const tg_tensor *z, const tg__lpe_bad *bad_in,
                                double inv_t) {
    tg__lpe_bad b = *bad_in, *bad = &b;
    if (tg__lpe_locate_bad(who, z, bad, inv_t) != TG_OK) return tg_last_status();
    if (bad->col < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: row %lld: every logit is -inf (the row has no "
                             "valid token; give it ignore_index)", who, (long long)bad->row);
    return tg__set_error(TG_ERR_VALUE, "%s: row %lld: logit %lld is %g (logits must be finite "
                         "or -inf)", who, (long long)bad->row, (long long)bad->col, bad->value);
}

/* ---- statistics merged across parts of the vocabulary -------------------------- */

tg__lpe_acc tg__lpe_acc_of(double M, double ls, double H) {
    const double S = exp(ls);
    tg__lpe_acc a = {M, S, S * (ls - H), 0.0};
    return a;
}

void tg__lpe_acc_add(tg__lpe_acc *a, const tg__lpe_acc *b, double inv_t) {
    if (b->S == 0.0) return;
    if (a->S == 0.0) {
        const double zy = a->zy;
        *a = *b;
        a->zy = zy;
        return;
    }
    const double Mn = a->M > b->M ? a->M : b->M;
    const double da = (a->M - Mn) * inv_t, db = (b->M - Mn) * inv_t;
    const double fa = exp(da), fb = exp(db);
    a->A = fa * (a->A + a->S * da) + fb * (b->A + b->S * db);
    a->S = fa * a->S + fb * b->S;
    a->M = Mn;
}

void tg__lpe_acc_finish(const tg__lpe_acc *a, double inv_t, double *lp, double *H, double *ls) {
    *ls = log(a->S);
    *H = *ls - a->A / a->S;
    *lp = (a->zy - a->M) * inv_t - *ls;
}

tg_status tg__lpe_put_rows(tg_site s, const char *who, tg_tensor *stage, int64_t r0,
                           tg_tensor *lp, tg_tensor *H, tg_tensor *st, int nstat) {
    const int64_t n = stage->shape[0];
    const tg_device dev = lp->storage->device;
    tg_mem_category prev = tg__set_category_override(TG_MEM_WORKSPACE);
    tg_tensor *dst = tg__device_copy(s, who, stage, dev);
    tg__set_category_override(prev);
    tg_status rc = dst ? TG_OK : tg_last_status();
    tg_tensor *outs[3] = {lp, H, st};
    for (int k = 0; k < 3 && rc == TG_OK; k++) {
        if (!outs[k]) continue;
        const int ncol = k == 2 ? nstat : 1;
        const int64_t col = k == 2 ? 2 : k;
        tg_tensor *t = outs[k];
        tg_tensor *rows = t->ndim == 2
                              ? tg__tensor_alias(s, t->storage, t->dtype, 2, (int64_t[]){n, ncol},
                                                 t->strides, t->offset + r0 * t->strides[0])
                              : tg__tensor_alias(s, t->storage, t->dtype, 1, &n, t->strides,
                                                 t->offset + r0 * t->strides[0]);
        tg_tensor *src = rows ? tg__tensor_alias(s, dst->storage, TG_F64, ncol == 1 ? 1 : 2,
                                                 (int64_t[]){n, ncol}, (int64_t[]){5, 1},
                                                 dst->offset + col)
                              : NULL;
        rc = src ? tg__k_copy(rows, src) : tg_last_status();
        tg__tensor_release(src);
        tg__tensor_release(rows);
    }
    tg__tensor_release(dst);
    return rc;
}

tg_dtype tg__lpe_out_dtype(const tg_tensor *z) {
    return z->dtype == TG_BF16 ? TG_F32 : z->dtype;
}

/* ---- bf16 logits: the f32 kernels on f32 copies of a chunk of rows ---------------
 * On a device whose kernels do not read bf16 (the CPU; tg__k_has_bf16_lpe)
 * the rows are converted BF16_CHUNK_BYTES of f32 at a time into a workspace,
 * the f32 kernels run on them, and backward converts each chunk's gradient
 * back into the bf16 gradient: bf16 in, every sum in f32, f32 outputs. The
 * CUDA kernels read bf16 rows and write the bf16 gradient themselves. */
#define BF16_CHUNK_BYTES ((size_t)64 << 20)

static int64_t bf16_chunk(int64_t V) {
    const int64_t c = (int64_t)(BF16_CHUNK_BYTES / ((size_t)V * 4));
    return c < 1 ? 1 : c;
}

/* t's elements (N rows of its last dim) as a 2-D (N, V) alias when the
 * leading dims merge; else NULL (the caller copies t first). */
static tg_tensor *rows_view(tg_site s, const tg_tensor *t, int64_t N, int64_t V) {
    const int lead = t->ndim - 1;
    int64_t st = V * t->strides[t->ndim - 1], expect = -1;
    for (int d = lead - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (expect < 0) st = t->strides[d];
        else if (t->strides[d] != expect) return NULL;
        expect = t->strides[d] * t->shape[d];
    }
    return tg__tensor_alias(s, t->storage, t->dtype, 2, (int64_t[]){N, V},
                            (int64_t[]){st, t->strides[t->ndim - 1]}, t->offset);
}

/* A (N, V) alias of z's rows: z itself, or a contiguous copy of it. */
static tg_tensor *rows_of(tg_site s, tg_tensor *z, int64_t N, int64_t V) {
    tg_tensor *r = rows_view(s, z, N, V);
    if (r) return r;
    tg_tensor *c = tg__contiguous(s, z);
    r = c ? rows_view(s, c, N, V) : NULL;
    tg__tensor_release(c);
    return r;
}

/* rows [r0, r0 + c) of a contiguous (N) or (N, k) tensor, 1-D or 2-D */
static tg_tensor *rows_at(tg_site s, const tg_tensor *t, int64_t r0, int64_t c) {
    if (!t) return NULL;
    if (t->ndim == 2)
        return tg__tensor_alias(s, t->storage, t->dtype, 2, (int64_t[]){c, t->shape[1]},
                                t->strides, t->offset + r0 * t->strides[0]);
    return tg__tensor_alias(s, t->storage, t->dtype, 1, &c, t->strides, t->offset + r0 * t->strides[0]);
}

tg_tensor *tg__lpe_flat(tg_site s, tg_tensor *t, int64_t N, bool *ok) {
    *ok = true;
    if (!t) return NULL;
    int64_t st = 1, expect = -1;
    bool merge = true;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (expect < 0) st = t->strides[d];
        else if (t->strides[d] != expect) merge = false;
        expect = t->strides[d] * t->shape[d];
    }
    tg_tensor *src = merge ? tg_retain(t) : tg__contiguous(s, t);
    tg_tensor *f = src ? tg__tensor_alias(s, src->storage, src->dtype, 1, &N,
                                          (int64_t[]){merge ? st : 1}, src->offset)
                       : NULL;
    tg__tensor_release(src);
    if (!f) *ok = false;
    return f;
}

/* The f32 copy of rows [r0, r0 + c) of z2 (N, V) in the workspace buffer. */
static tg_tensor *bf16_rows_f32(tg_site s, tg_tensor *buf, const tg_tensor *z2, int64_t r0,
                                int64_t c) {
    const int64_t V = z2->shape[1];
    tg_tensor *zc = tg__tensor_alias(s, buf->storage, TG_F32, 2, (int64_t[]){c, V},
                                     (int64_t[]){V, 1}, 0);
    tg_tensor *src = zc ? rows_at(s, z2, r0, c) : NULL;
    tg_status st = src ? tg__k_copy(zc, src) : tg_last_status();
    tg__tensor_release(src);
    return tg__k_ok(st, zc);
}

/* Forward on bf16 logits z (lp, H, stats: contiguous f32 / f64 outputs). */
static tg_status bf16_forward(tg_site s, const char *who, tg_tensor *z, tg_tensor *yc,
                              int64_t ignore, double inv_t, tg_tensor *lp, tg_tensor *H,
                              tg_tensor *stats, int nstat, tg__lpe_bad *bad) {
    const int64_t V = z->shape[z->ndim - 1], N = tg__k_numel(z->ndim - 1, z->shape);
    const int64_t cc = bf16_chunk(V);
    bad->row = -1;
    if (N == 0) return TG_OK;
    tg_tensor *z2 = rows_of(s, z, N, V);
    const int64_t bn = (N < cc ? N : cc) * V;
    tg_tensor *buf = z2 ? tg__tensor_new_on(s, who, z->storage->device, TG_F32, 1, &bn,
                                            TG_MEM_WORKSPACE)
                        : NULL;
    tg_status st = buf ? TG_OK : tg_last_status();
    for (int64_t r0 = 0; st == TG_OK && r0 < N; r0 += cc) {
        const int64_t c = N - r0 < cc ? N - r0 : cc;
        tg_tensor *zc = bf16_rows_f32(s, buf, z2, r0, c);
        tg_tensor *v[4] = {rows_at(s, yc, r0, c), rows_at(s, lp, r0, c), rows_at(s, H, r0, c),
                           rows_at(s, stats, r0, c)};
        st = zc && v[0] && v[1] && (!H || v[2]) && (!stats || v[3]) ? TG_OK : tg_last_status();
        if (st == TG_OK)
            st = tg__k_lpe_forward(zc, v[0], ignore, inv_t, 0, v[1], v[2], v[3], nstat, bad);
        if (st == TG_OK && bad->row >= 0) { /* where, in the f32 copy; then the global row */
            st = tg__lpe_locate_bad(who, zc, bad, inv_t);
            bad->row += r0;
        }
        for (int k = 0; k < 4; k++)
            tg__tensor_release(v[k]);
        tg__tensor_release(zc);
        if (bad->row >= 0) break;
    }
    tg__tensor_release(buf);
    tg__tensor_release(z2);
    return st;
}

/* Backward on bf16 logits: dz (z's shape, bf16, contiguous) gets the
 * gradient, computed in f32 a chunk at a time. */
static tg_status bf16_backward(tg_site s, tg_tensor *z, tg_tensor *yc, int64_t ignore,
                               double inv_t, tg_tensor *stats, int nstat, tg_tensor *g_lp,
                               tg_tensor *g_H, tg_tensor *g_lse, tg_tensor *dz) {
    const int64_t V = z->shape[z->ndim - 1], N = tg__k_numel(z->ndim - 1, z->shape);
    const int64_t cc = bf16_chunk(V);
    if (N == 0) return TG_OK;
    bool ok[3];
    tg_tensor *g[3] = {tg__lpe_flat(s, g_lp, N, &ok[0]), tg__lpe_flat(s, g_H, N, &ok[1]),
                       tg__lpe_flat(s, g_lse, N, &ok[2])};
    tg_tensor *z2 = ok[0] && ok[1] && ok[2] ? rows_of(s, z, N, V) : NULL;
    tg_tensor *d2 = z2 ? rows_view(s, dz, N, V) : NULL;
    const int64_t bn = (N < cc ? N : cc) * V;
    tg_tensor *buf = d2 ? tg__tensor_new_on(s, "LogprobEntropyBackward", z->storage->device,
                                            TG_F32, 1, &bn, TG_MEM_WORKSPACE)
                        : NULL;
    tg_status st = buf ? TG_OK : tg_last_status();
    for (int64_t r0 = 0; st == TG_OK && r0 < N; r0 += cc) {
        const int64_t c = N - r0 < cc ? N - r0 : cc;
        tg_tensor *zc = bf16_rows_f32(s, buf, z2, r0, c);
        tg_tensor *v[6] = {rows_at(s, yc, r0, c), rows_at(s, stats, r0, c), rows_at(s, g[0], r0, c),
                           rows_at(s, g[1], r0, c), rows_at(s, g[2], r0, c), rows_at(s, d2, r0, c)};
        st = zc && v[0] && v[1] && v[5] && (!g[0] || v[2]) && (!g[1] || v[3]) && (!g[2] || v[4])
                 ? TG_OK
                 : tg_last_status();
        if (st == TG_OK)
            st = tg__k_lpe_backward(zc, v[0], ignore, inv_t, 0, v[1], nstat, v[2], v[3], v[4], zc);
        if (st == TG_OK) st = tg__k_copy(v[5], zc); /* to bf16 */
        for (int k = 0; k < 6; k++)
            tg__tensor_release(v[k]);
        tg__tensor_release(zc);
    }
    tg_tensor *temps[6] = {buf, d2, z2, g[0], g[1], g[2]};
    for (int k = 0; k < 6; k++)
        tg__tensor_release(temps[k]);
    return st;
}

/* Node parameters of the fused node. */
enum { P_IGNORE = 0, P_CHUNK = 1, P_NSTAT = 2, P_LSE_OUT = 3 }; /* iparam (P_LSE_OUT: -1 none) */
enum { P_INV_T = 0, P_INTO = 1 };                 /* dparam (P_INTO: 1 = grad_into_logits) */

/* The name the in-place error gives for the version move of grad_into_logits. */
#define TG__INTO_OP "LogprobEntropyBackward (grad_into_logits)"

/* ---- fused node ------------------------------------------------------------- */

/* Saved slots: 0 logits, 1 targets (contiguous), 2 stats (N, nstat) f64:
 * row max, log-sum-exp of the shifted row, entropy (when its grad is wanted). */
static tg_status lpe_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    if (n->edge[0].kind == TG__EDGE_NONE) return TG_OK;
    tg_tensor *z = tg__node_saved(n, 0), *y = NULL, *st = NULL, *dz = NULL;
    if (!z || !(y = tg__node_saved(n, 1)) || !(st = tg__node_saved(n, 2))) goto out;
    if (n->dparam[P_INTO] != 0 && z->storage->read_only) { /* marked after the forward */
        char what[200];
        snprintf(what, sizeof what, "%s (created at %s:%d): the logits it would write the "
                 "gradient over", TG__INTO_OP, n->site.file ? n->site.file : "?", n->site.line);
        tg__check_writable("tg_backward", what, z);
        goto out;
    }
    if (n->dparam[P_INTO] != 0) {
        /* the gradient over the logits: the same storage, seen contiguous (checked in
         * forward); the kernel reads each element before it writes it */
        int64_t cst[TG_MAX_DIMS], acc = 1;
        for (int d = z->ndim - 1; d >= 0; d--) {
            cst[d] = acc;
            acc *= z->shape[d];
        }
        dz = tg__tensor_alias(n->site, z->storage, z->dtype, z->ndim, z->shape, cst, z->offset);
    } else {
        dz = tg__new_output_on(n->site, "LogprobEntropyBackward", z->storage->device, z->dtype,
                               z->ndim, z->shape);
    }
    if (!dz) goto out;
    tg_tensor *g_h = n->iparam[P_NSTAT] == 3 ? gout[1] : NULL;
    tg_tensor *g_l = n->iparam[P_LSE_OUT] >= 0 ? gout[n->iparam[P_LSE_OUT]] : NULL;
    tg_status kst = z->dtype == TG_BF16 && !tg__k_has_bf16_lpe(z->storage->device)
                        ? bf16_backward(n->site, z, y, n->iparam[P_IGNORE], n->dparam[P_INV_T],
                                        st, (int)n->iparam[P_NSTAT], gout[0], g_h, g_l, dz)
                        : tg__k_lpe_backward(z, y, n->iparam[P_IGNORE], n->dparam[P_INV_T],
                                             n->iparam[P_CHUNK], st, (int)n->iparam[P_NSTAT],
                                             gout[0], g_h, g_l, dz);
    if (kst != TG_OK) {
        tg__tensor_release(dz);
        goto out;
    }
    /* the logits are gone: every other saved use of them now fails its check */
    if (n->dparam[P_INTO] != 0) tg__storage_bump(z->storage, TG__INTO_OP, NULL, n->site);
    gin[0] = dz;
out:
    tg__tensor_release(z);
    tg__tensor_release(y);
    tg__tensor_release(st);
    return gin[0] ? TG_OK : tg_last_status();
}

static const tg__op_def lpe_def = {"LogprobEntropyBackward", lpe_backward, false, NULL};

tg_tensor *tg__lpe_lse_rows(tg_site s, const char *who, const tg_tensor *st, int nstat,
                            double inv_t, tg_device dev, tg_dtype dt) {
    const int64_t N = st->shape[0];
    tg_tensor *m = tg__tensor_alias(s, st->storage, TG_F64, 1, &N, (int64_t[]){nstat}, st->offset);
    tg_tensor *l = m ? tg__tensor_alias(s, st->storage, TG_F64, 1, &N, (int64_t[]){nstat},
                                        st->offset + 1)
                     : NULL;
    tg_tensor *r = l ? tg__new_output_on(s, who, dev, TG_F64, 1, &N) : NULL;
    if (r) r = tg__k_ok(tg__k_unary(TG__UN_SCALE, r, m, NULL, inv_t, 0), r);
    if (r) r = tg__k_ok(tg__k_binary(TG__BIN_ADD, r, r, l, 0, 0), r);
    tg_tensor *out = r ? tg__new_output_on(s, who, dev, dt, 1, &N) : NULL;
    if (out) out = tg__k_ok(tg__k_copy(out, r), out);
    tg__tensor_release(m);
    tg__tensor_release(l);
    tg__tensor_release(r);
    return out;
}

tg_tensor *tg__lpe_lse_of(tg_site s, const char *who, const tg_tensor *z, tg_tensor *st,
                          int nstat, double inv_t) {
    tg_tensor *flat = tg__lpe_lse_rows(s, who, st, nstat, inv_t, z->storage->device,
                                       tg__lpe_out_dtype(z));
    tg_tensor *out = flat ? tg__lpe_lead_view(s, flat, z) : NULL;
    tg__tensor_release(flat);
    return out;
}

tg_tensor *tg__lpe_lead_view(tg_site s, const tg_tensor *flat, const tg_tensor *like) {
    const int lead = like->ndim - 1;
    int64_t cst[TG_MAX_DIMS], acc = 1;
    for (int k = lead - 1; k >= 0; k--) {
        cst[k] = acc;
        acc *= like->shape[k];
    }
    return tg__tensor_alias(s, flat->storage, flat->dtype, lead, like->shape, cst, flat->offset);
}

tg_status tg__lpe_record(tg_site s, tg_tensor *z, tg_tensor *yc, tg_tensor *st, int nstat,
                         const tg_logprob_opts *o, tg_tensor *lp, tg_tensor *h, tg_tensor *lse) {
    const bool grad_h = nstat == 3;
    tg_tensor *in[2] = {z, yc};
    tg__node *n = tg__node_new(s, &lpe_def, lpe_def.name, 2, in, 1 + grad_h + (lse != NULL));
    if (!n) return tg_last_status();
    n->dparam[P_INV_T] = 1.0 / o->temperature;
    n->dparam[P_INTO] = o->grad_into_logits ? 1.0 : 0.0;
    n->iparam[P_IGNORE] = o->ignore_index;
    n->iparam[P_CHUNK] = o->chunk_size;
    n->iparam[P_NSTAT] = nstat;
    n->iparam[P_LSE_OUT] = lse ? 1 + grad_h : -1;
    tg_set_name(st, "row max/logsumexp/entropy");
    if (tg__node_save(n, z, false, 0) < 0 || tg__node_save(n, yc, false, 1) < 0 ||
        tg__node_save(n, st, false, -1) < 0) {
        tg__node_release(n);
        return tg_last_status();
    }
    tg__node_set_output(n, 0, lp);
    if (grad_h) tg__node_set_output(n, 1, h);
    if (lse) tg__node_set_output(n, 1 + grad_h, lse);
    tg__node_release(n); /* the outputs own it */
    return TG_OK;
}

static tg_status fused(tg_site s, const char *who, tg_tensor *z, tg_tensor *y,
                       const tg_logprob_opts *o, tg_tensor **lp_out, tg_tensor **h_out,
                       tg_tensor **lse_out) {
    const int64_t V = z->shape[z->ndim - 1];
    const int lead = z->ndim - 1;
    tg_tensor *yc = tg__lpe_targets(s, who, y, V, o->ignore_index);
    if (!yc) return tg_last_status();
    const bool record = tg__needs_grad(1, &z);
    const bool grad_h = record && o->want_entropy && o->entropy_grad;
    const int nstat = grad_h ? 3 : 2;
    const int64_t N = tg__k_numel(lead, z->shape);
    const tg_device dev = z->storage->device;
    const tg_dtype odt = tg__lpe_out_dtype(z);
    tg_tensor *lp = tg__new_output_on(s, who, dev, odt, lead, z->shape); // (N)
    tg_tensor *h = o->want_entropy ? tg__new_output_on(s, who, dev, odt, lead, z->shape) : NULL;
    const bool want_lse = lse_out != NULL;
    tg_tensor *st = record || want_lse
                        ? tg__new_output_on(s, who, dev, TG_F64, 2, (int64_t[]){N, nstat})
                        : NULL; // (N, nstat)
    tg_tensor *lse = NULL;
    if (!lp || (o->want_entropy && !h) || ((record || want_lse) && !st)) goto fail;
    tg__lpe_bad bad;
    if ((z->dtype == TG_BF16 && !tg__k_has_bf16_lpe(dev)
             ? bf16_forward(s, who, z, yc, o->ignore_index, 1.0 / o->temperature, lp, h, st,
                            nstat, &bad)
             : tg__k_lpe_forward(z, yc, o->ignore_index, 1.0 / o->temperature, o->chunk_size,
                                 lp, h, st, nstat, &bad)) != TG_OK)
        goto fail;
    if (bad.row >= 0) {
        tg__lpe_bad_row_error(who, z, &bad, 1.0 / o->temperature);
        goto fail;
    }
    if (want_lse && !(lse = tg__lpe_lse_of(s, who, z, st, nstat, 1.0 / o->temperature))) goto fail;
    if (record && tg__lpe_record(s, z, yc, st, nstat, o, lp, h, lse) != TG_OK) goto fail;
    tg__tensor_release(st);
    tg__tensor_release(yc);
    *lp_out = lp;
    if (h_out) *h_out = h;
    if (lse_out) *lse_out = lse;
    return TG_OK;
fail:
    tg__tensor_release(lse);
    tg__tensor_release(st);
    tg__tensor_release(h);
    tg__tensor_release(lp);
    tg__tensor_release(yc);
    return tg_last_status();
}

/* ---- public entry ------------------------------------------------------------ */

tg_status tg__logprob_entropy(tg_site s, const char *who, tg_tensor *logits, tg_tensor *targets,
                              const tg_logprob_opts *opts, tg_tensor **lp, tg_tensor **h) {
    return tg__logprob_entropy_lse(s, who, logits, targets, opts, lp, h, NULL);
}

tg_status tg__logprob_entropy_lse(tg_site s, const char *who, tg_tensor *logits,
                                  tg_tensor *targets, const tg_logprob_opts *opts, tg_tensor **lp,
                                  tg_tensor **h, tg_tensor **lse) {
    tg_logprob_opts o = opts ? *opts : tg_logprob_opts_default();
    *lp = *h = NULL;
    if (lse) *lse = NULL;
    tg_status st = tg__lpe_check(who, logits, targets, &o);
    if (st != TG_OK) return st;
    if (o.grad_into_logits && tg__needs_grad(1, &logits)) {
        char b[160];
        if (logits->dtype == TG_BF16)
            return tg__set_error(TG_ERR_VALUE, "%s: grad_into_logits needs f32 or f64 logits "
                                 "(bf16 logits get a bf16 gradient: no room for an f32 one)",
                                 who);
        if (o.impl != TG_LOGPROB_FUSED)
            return tg__set_error(TG_ERR_VALUE, "%s: grad_into_logits needs impl "
                                 "TG_LOGPROB_FUSED", who);
        if (tg_is_leaf(logits))
            return tg__set_error(TG_ERR_VALUE, "%s: grad_into_logits on a leaf: its .grad would "
                                 "share the logits' memory (it is for logits made by an op, "
                                 "such as the output layer's matmul)", who);
        const tg_tensor *base = logits->view_base;
        if (base && !tg__has_grad_fn(base) && base->requires_grad)
            return tg__set_error(TG_ERR_VALUE, "%s: grad_into_logits on a view of a leaf that "
                                 "requires grad (%s): the gradient would overwrite the leaf's "
                                 "values (it is for logits made by an op, such as the output "
                                 "layer's matmul)", who, TG__LABEL(base));
        if (!tg__is_contiguous(logits))
            return tg__set_error(TG_ERR_VALUE, "%s: grad_into_logits needs contiguous logits "
                                 "(these have shape %s and are a strided view; make them "
                                 "contiguous first)", who,
                                 tg__shape_str(b, sizeof b, logits->ndim, logits->shape));
        if (tg__check_writable(who, "the logits grad_into_logits would write the gradient "
                               "over", logits) != TG_OK)
            return tg_last_status();
    }
    if (o.impl == TG_LOGPROB_FUSED) return fused(s, who, logits, targets, &o, lp, h, lse);
    if (logits->dtype == TG_BF16) { /* the generic ops compute in f32: convert first */
        tg_tensor *z32 = tg__to_dtype(s, logits, TG_F32);
        if (!z32) return tg_last_status();
        st = tg__logprob_entropy_lse(s, who, z32, targets, &o, lp, h, lse);
        tg__tensor_release(z32);
        return st;
    }
    st = tg__lpe_composite(s, who, logits, targets, &o, lp, h);
    if (st != TG_OK || !lse) return st;
    /* the composite log-sum-exp: logsumexp(z / T) over the vocabulary, 0 on ignored rows */
    tg_tensor *x = tg__scale(s, logits, 1.0 / o.temperature);
    tg_tensor *l = x ? tg__logsumexp_dim(s, x, -1, false) : NULL;
    tg_tensor *ignored = l ? tg__test_scalar(s, who, TG__TEST_EQ, targets, (double)o.ignore_index)
                           : NULL;
    tg_tensor *zero = ignored ? tg__scalar_like(s, l, 0.0) : NULL;
    tg_tensor *keep = zero ? tg__where(s, ignored, zero, l) : NULL;
    tg_tensor *temps[4] = {x, l, ignored, zero};
    for (int i = 0; i < 4; i++)
        tg__tensor_release(temps[i]);
    if (!keep) {
        tg__tensor_release(*lp);
        tg__tensor_release(*h);
        *lp = *h = NULL;
        return tg_last_status();
    }
    *lse = keep;
    return TG_OK;
}

tg_status tg__lpe_give_outputs(tg_tensor *lp, tg_tensor *h, tg_tensor *lse, tg_tensor **logprob,
                          tg_tensor **entropy, tg_tensor **lse_out) {
    *logprob = tg__ret(lp);
    if (!*logprob) {
        tg__tensor_release(h);
        tg__tensor_release(lse);
        return tg_last_status();
    }
    if (entropy && h) {
        *entropy = tg__ret(h);
        if (!*entropy) {
            tg__tensor_release(lse);
            return tg_last_status(); /* *logprob belongs to the scope */
        }
    } else {
        tg__tensor_release(h);
    }
    if (lse_out) {
        *lse_out = tg__ret(lse);
        if (!*lse_out) return tg_last_status();
    }
    return TG_OK;
}

tg_status tg_logprob_entropy_at(tg_site s, tg_tensor *logits, tg_tensor *targets,
                                const tg_logprob_opts *opts, tg_tensor **logprob,
                                tg_tensor **entropy) {
    const char *who = "tg_logprob_entropy";
    tg_logprob_opts o = opts ? *opts : tg_logprob_opts_default();
    if (logprob) *logprob = NULL;
    if (entropy) *entropy = NULL;
    const bool bad_arg = tg__null_arg(logits, who, "logits") ||
                         tg__null_arg(targets, who, "targets") ||
                         tg__null_arg(logprob, who, "logprob") ||
                         (o.want_entropy && tg__null_arg(entropy, who, "entropy"));
    if (o.comm) /* every rank takes part, whatever its arguments */
        return tg__vp_logprob(s, who, bad_arg ? tg_last_status() : TG_OK, logits, targets, &o,
                              logprob, o.want_entropy ? entropy : NULL, NULL);
    if (bad_arg) return tg_last_status();
    tg_tensor *lp = NULL, *h = NULL;
    tg_status st = tg__logprob_entropy(s, who, logits, targets, &o, &lp, &h);
    if (st != TG_OK) return st;
    return tg__lpe_give_outputs(lp, h, NULL, logprob, o.want_entropy ? entropy : NULL, NULL);
}

tg_status tg_logprob_entropy_lse_at(tg_site s, tg_tensor *logits, tg_tensor *targets,
                                    const tg_logprob_opts *opts, tg_tensor **logprob,
                                    tg_tensor **entropy, tg_tensor **lse) {
    const char *who = "tg_logprob_entropy_lse";
    tg_logprob_opts o = opts ? *opts : tg_logprob_opts_default();
    if (logprob) *logprob = NULL;
    if (entropy) *entropy = NULL;
    if (lse) *lse = NULL;
    const bool bad_arg = tg__null_arg(logits, who, "logits") ||
                         tg__null_arg(targets, who, "targets") ||
                         tg__null_arg(logprob, who, "logprob") ||
                         (o.want_entropy && tg__null_arg(entropy, who, "entropy")) ||
                         tg__null_arg(lse, who, "lse");
    if (o.comm)
        return tg__vp_logprob(s, who, bad_arg ? tg_last_status() : TG_OK, logits, targets, &o,
                              logprob, o.want_entropy ? entropy : NULL, lse);
    if (bad_arg) return tg_last_status();
    tg_tensor *lp = NULL, *h = NULL, *l = NULL;
    tg_status st = tg__logprob_entropy_lse(s, who, logits, targets, &o, &lp, &h, &l);
    if (st != TG_OK) return st;
    return tg__lpe_give_outputs(lp, h, l, logprob, o.want_entropy ? entropy : NULL, lse);
}
