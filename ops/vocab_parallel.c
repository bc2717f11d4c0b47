/* ops/vocab_parallel.c - what the vocab-parallel forms of tg_logprob_entropy
 * and tg_linear_logprob_entropy share: the agreement step, the exchange of
 * each rank's row statistics and their merge.
 *
 * A call on P ranks, each holding the vocabulary slice [start_r, start_r +
 * V_r), makes exactly these collectives:
 *  1. agreement: one all-gather of a fixed-size entry per rank (its local
 *     status and message, shapes, options, a checksum of the targets); a
 *     rank whose checks failed still takes part, so every rank fails with
 *     the same status and a message naming the rank; and since the entry's
 *     size never depends on the inputs, a shape mismatch cannot deadlock;
 *  2. statistics: one all-gather per call (the fused linear op first goes
 *     through all its chunks) of each row's (max, sum-exp, sum-exp * x,
 *     target logit),
 *     with a header carrying a failure found while computing them (a NaN
 *     logit); every rank merges the P parts in rank order (max-rescaling,
 *     tg__lpe_acc_add), so every rank gets the same bits, run after run,
 *     whatever algorithm the library picks for the collective.
 * Why an all-gather and not a user-defined reduction: a reduction's
 * combination order is the library's choice (and may differ between ranks
 * and runs); merging all P parts locally in rank order makes the result
 * bitwise the same everywhere, and is the same code on MPI and NCCL (NCCL
 * has no user-defined reductions). It receives P x 32 bytes per row where a
 * reduction would receive 32: at 65536 rows and P = 8, 16 MiB. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "logprob_internal.h"

/* Entries of the agreement's signature. */
enum {
    SIG_N = 0,       /* rows */
    SIG_V = 1,       /* this rank's vocabulary rows */
    SIG_START = 2,   /* this rank's first vocabulary row */
    SIG_DTYPE = 3,
    SIG_TBITS = 4,   /* the temperature's bits */
    SIG_IGNORE = 5,
    SIG_FLAGS = 6,   /* op-specific options that must agree */
    SIG_YSUM = 7,    /* checksum of the targets */
    SIG_CHUNK = 8,   /* the fused linear op's rows per chunk (the least is used) */
    SIG_D = 9,       /* hidden size (fused linear op) */
    SIG_COUNT
};
_Static_assert(SIG_COUNT <= TG__AGREE_SIG, "the signature fits the agreement's entry");

/* FNV-1a over the targets: ranks holding different targets are found. */
static int64_t checksum(const int64_t *y, int64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)y[i];
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return (int64_t)h;
}

void tg__vp_free(tg__vp *vp) {
    free(vp->start);
    free(vp->len);
    memset(vp, 0, sizeof *vp);
}

/* The lowest rank whose signature entry k differs from rank 0's, or -1. */
static int differs(const tg__agree *all, int P, int k) {
    for (int r = 1; r < P; r++)
        if (all[r].sig[k] != all[0].sig[k]) return r;
    return -1;
}

/* This rank's entry: its local status, or its signature. */
static void make_entry(tg__agree *mine, const char *who, tg_status local, const tg__vp_sig *sig) {
    memset(mine, 0, sizeof *mine);
    if (local != TG_OK) {
        tg__agree_fail(mine, who, local);
        return;
    }
    const int64_t s[] = {sig->N, sig->V, sig->start, sig->dtype, 0, sig->ignore, sig->flags,
                         checksum(sig->y, sig->N), sig->chunk, sig->d};
    memcpy(mine->sig, s, sizeof s);
    memcpy(&mine->sig[SIG_TBITS], &sig->temperature, sizeof(double));
}

/* The first signature entry some rank differs in from rank 0 as the error
 * (every rank sees the same entries: the same decision follows), or TG_OK. */
static tg_status check_same_call(const tg__agree *all, int P, const char *who) {
    static const char *const what[] = {"rows", NULL, NULL, "dtype", "temperature",
                                       "ignore_index", "options", "targets", NULL, "hidden size"};
    _Static_assert(sizeof what / sizeof what[0] == SIG_COUNT, "a name for every SIG_ entry");
    for (int k = 0; k < SIG_COUNT; k++) {
        int r = what[k] ? differs(all, P, k) : -1;
        if (r < 0) continue;
        const long long mine_k = (long long)all[r].sig[k], first = (long long)all[0].sig[k];
        if (k == SIG_N)
            return tg__set_error(TG_ERR_SHAPE, "%s: rank %d has %lld rows, rank 0 %lld (every "
                                 "rank holds the same rows)", who, r, mine_k, first);
        if (k == SIG_D)
            return tg__set_error(TG_ERR_SHAPE, "%s: rank %d's hidden size is %lld, rank 0's "
                                 "%lld", who, r, mine_k, first);
        if (k == SIG_FLAGS) { /* name the first option that differs */
            static const char *const bit[] = {"want_entropy", "entropy_grad", "lse wanted",
                                              "bias given", "hidden requires grad",
                                              "an input requires grad"};
            _Static_assert(sizeof bit / sizeof bit[0] == TG__AGREE_NFLAGS,
                           "a name for every TG__AGREE_ bit");
            const int nbits = TG__AGREE_NFLAGS;
            int b = 0;
            while (b < nbits - 1 && !((mine_k ^ first) >> b & 1)) b++;
            return tg__set_error(TG_ERR_VALUE, "%s: rank %d's options differ from rank 0's: "
                                 "%s is %s there, %s on rank 0 (every rank makes the same call "
                                 "on its own vocabulary slice)", who, r, bit[b],
                                 mine_k >> b & 1 ? "true" : "false",
                                 first >> b & 1 ? "true" : "false");
        }
        return tg__set_error(k == SIG_DTYPE ? TG_ERR_DTYPE : TG_ERR_VALUE, "%s: rank %d's %s "
                             "differ%s from rank 0's (every rank makes the same call on its own "
                             "vocabulary slice)", who, r, what[k], k == SIG_TBITS ? "s" : "");
    }
    return TG_OK;
}

/* Every rank's slice into vp (and V, the least chunk); TG_ERR_VALUE unless
 * the slices tile [0, V): no two overlap and none goes past V (their sizes
 * add up to V, so together they cover it). */
static tg_status take_slices(const tg__agree *all, int P, const char *who, tg__vp *vp) {
    vp->chunk = all[0].sig[SIG_CHUNK];
    for (int r = 0; r < P; r++) {
        vp->start[r] = all[r].sig[SIG_START];
        vp->len[r] = all[r].sig[SIG_V];
        vp->V += vp->len[r];
        if (all[r].sig[SIG_CHUNK] < vp->chunk) vp->chunk = all[r].sig[SIG_CHUNK];
    }
    for (int r = 0; r < P; r++) {
        const long long a = (long long)vp->start[r], b = (long long)(vp->start[r] + vp->len[r]);
        for (int q = r + 1; q < P; q++) {
            const long long qa = (long long)vp->start[q], qb = qa + (long long)vp->len[q];
            if (qb <= a || b <= qa) continue;
            return tg__set_error(TG_ERR_VALUE, "%s: rank %d's vocabulary slice [%lld, %lld) "
                                 "overlaps rank %d's [%lld, %lld) (the slices must tile the "
                                 "vocabulary: each rank's vocab_start is where another's slice "
                                 "ends, one starts at 0)", who, r, a, b, q, qa, qb);
        }
        if (a < 0 || b > (long long)vp->V)
            return tg__set_error(TG_ERR_VALUE, "%s: rank %d's vocabulary slice [%lld, %lld) "
                                 "goes past [0, %lld), the vocabulary the %d slices make (they "
                                 "must tile it, one starting at 0)", who, r, a, b,
                                 (long long)vp->V, P);
    }
    return TG_OK;
}

/* The targets (the same on every rank) against the whole vocabulary. */
static tg_status check_targets(const tg__vp_sig *sig, const tg__vp *vp, const char *who) {
    for (int64_t i = 0; i < sig->N; i++) {
        const int64_t t = sig->y[i];
        if (t != sig->ignore && (t < 0 || t >= vp->V))
            return tg__set_error(TG_ERR_VALUE, "%s: row %lld: target %lld is outside [0, %lld), "
                                 "the vocabulary of the %d ranks (and is not ignore_index "
                                 "%lld)", who, (long long)i, (long long)t, (long long)vp->V,
                                 vp->P, (long long)sig->ignore);
    }
    return TG_OK;
}

tg_status tg__vp_agree(tg_comm *c, const char *who, tg_status local, const tg__vp_sig *sig,
                       tg__vp *vp) {
    memset(vp, 0, sizeof *vp);
    const int P = tg_comm_size(c);
    tg__agree mine;
    const tg__agree *all = NULL;
    make_entry(&mine, who, local, sig);
    /* what the agreement fills, allocated before it: a failure here is told in it */
    vp->start = tg__xmalloc((size_t)P * sizeof *vp->start);
    vp->len = vp->start ? tg__xmalloc((size_t)P * sizeof *vp->len) : NULL;
    if ((!vp->start || !vp->len) && mine.status == TG_OK) {
        tg__set_error(TG_ERR_NOMEM, "%s: out of memory for %d ranks", who, P);
        tg__agree_fail(&mine, who, TG_ERR_NOMEM);
    }
    tg_status st = tg__comm_agree(c, who, &mine, &all);
    if (st == TG_OK) st = check_same_call(all, P, who);
    if (st == TG_OK) {
        vp->P = P;
        vp->rank = tg_comm_rank(c);
        st = take_slices(all, P, who, vp);
    }
    if (st == TG_OK) st = check_targets(sig, vp, who);
    if (st != TG_OK) tg__vp_free(vp);
    return st;
}

int64_t tg__vp_local_target(const tg__vp *vp, int64_t y, int64_t ignore) {
    if (y == ignore) return TG__VP_IGNORED;
    const int64_t a = vp->start[vp->rank];
    if (y >= a && y < a + vp->len[vp->rank]) return y - a;
    return -1; /* neither ignored nor in the slice: no target term */
}

tg_status tg__vp_buf_new(tg_comm *c, const char *who, int64_t n, tg__vp_buf *b) {
    const size_t P = (size_t)tg_comm_size(c), rows = (size_t)(n > 0 ? n : 1);
    const size_t bytes = sizeof(tg__agree) + (size_t)n * sizeof(tg__lpe_acc);
    memset(b, 0, sizeof *b);
    b->n = n;
    b->mine = tg__xcalloc(rows, sizeof *b->mine);
    b->all = b->mine ? tg__xcalloc(rows * P, sizeof *b->all) : NULL;
    b->send = b->all ? tg__xcalloc(1, bytes) : NULL;
    b->recv = b->send ? tg__xmalloc(bytes * P) : NULL;
    if (b->mine && b->all && b->send && b->recv) return TG_OK;
    tg__vp_buf_free(b);
    return tg__set_error(TG_ERR_NOMEM, "%s: out of memory for the statistics of %lld rows on %zu "
                         "ranks", who, (long long)n, P);
}

void tg__vp_buf_free(tg__vp_buf *b) {
    free(b->mine);
    free(b->all);
    free(b->send);
    free(b->recv);
    memset(b, 0, sizeof *b);
}

tg_status tg__vp_exchange(tg_comm *c, const char *who, tg_status local, tg__vp_buf *buf) {
    const int P = tg_comm_size(c);
    const int64_t n = buf->n;
    const size_t hdr = sizeof(tg__agree), row = sizeof(tg__lpe_acc);
    const size_t bytes = hdr + (size_t)n * row;
    char *send = buf->send, *recv = buf->recv;
    const tg__lpe_acc *mine = buf->mine;
    tg__lpe_acc *all = buf->all;
    memset(send, 0, hdr);
    tg__agree *h = (tg__agree *)send;
    if (local != TG_OK) tg__agree_fail(h, who, local);
    else if (n > 0) memcpy(send + hdr, mine, (size_t)n * row);
    tg_status st = tg__comm_allgather_host(c, who, send, recv, bytes);
    for (int r = 0; st == TG_OK && r < P; r++) { /* a failure anywhere first */
        tg__agree *e = (tg__agree *)(recv + (size_t)r * bytes);
        if (e->status == TG_OK) continue;
        e->msg[sizeof e->msg - 1] = '\0';
        st = tg__set_error((tg_status)e->status, "%s: rank %d: %s", who, r, e->msg);
    }
    for (int r = 0; st == TG_OK && n > 0 && r < P; r++)
        memcpy(all + (size_t)r * (size_t)n, recv + (size_t)r * bytes + hdr, (size_t)n * row);
    return st;
}

void tg__vp_merge(const tg__vp *vp, const int64_t *y, int64_t ignore, const tg__lpe_acc *all,
                  int64_t n, double inv_t, double *stage) {
    for (int64_t i = 0; i < n; i++) {
        double *g = stage + 5 * i;
        if (y[i] == ignore) {
            memset(g, 0, 5 * sizeof *g);
            continue;
        }
        tg__lpe_acc a = {0, 0, 0, 0};
        for (int r = 0; r < vp->P; r++) {
            const tg__lpe_acc *p = &all[(size_t)r * (size_t)n + (size_t)i];
            tg__lpe_acc_add(&a, p, inv_t);
            if (y[i] >= vp->start[r] && y[i] < vp->start[r] + vp->len[r]) a.zy = p->zy;
        }
        double lp, H, ls;
        tg__lpe_acc_finish(&a, inv_t, &lp, &H, &ls);
        g[0] = lp;
        g[1] = H;
        g[2] = a.M;
        g[3] = ls;
        g[4] = H;
    }
}

/* ---- tg_logprob_entropy on a vocabulary slice ------------------------------------------ */

/* This rank's checks (the fused op's, and what vocab-parallel needs). */
static tg_status vp_local_checks(const char *who, tg_status pre, const tg_tensor *z,
                                 const tg_tensor *y, const tg_logprob_opts *o) {
    if (pre != TG_OK) return pre;
    tg_status st = tg__lpe_check(who, z, y, o);
    if (st != TG_OK) return st;
    if (!tg__is_float(z->dtype))
        return tg__set_error(TG_ERR_DTYPE, "%s: vocab-parallel logits must be f32 or f64, got "
                             "%s", who, tg_dtype_name(z->dtype));
    if (o->impl != TG_LOGPROB_FUSED || o->grad_into_logits)
        return tg__set_error(TG_ERR_VALUE, "%s: vocab-parallel needs impl TG_LOGPROB_FUSED and "
                             "no grad_into_logits", who);
    if (o->vocab_start < 0 || o->vocab_start > INT64_MAX - z->shape[z->ndim - 1])
        return tg__set_error(TG_ERR_VALUE, "%s: vocab_start must be >= 0 and leave room for "
                             "the slice, got %lld", who, (long long)o->vocab_start);
    if (z->storage->device != tg_comm_device(o->comm))
        return tg__set_error(TG_ERR_DEVICE, "%s: the logits are on %s but the communicator "
                             "serves %s tensors", who, tg__device_name(z->storage->device),
                             tg__device_name(tg_comm_device(o->comm)));
    return TG_OK;
}

/* This rank's part of each row: the fused kernel's statistics of its slice
 * and the target's logit where the slice holds it. yl: the local targets
 * (a new (leading shape) i64 tensor on z's device, for backward too). */
static tg_status vp_local_stats(tg_site s, const char *who, tg_tensor *z, const tg__vp *vp,
                                const int64_t *yh, const tg_logprob_opts *o, tg_tensor **yl,
                                tg__lpe_acc *mine) {
    const int lead = z->ndim - 1;
    const int64_t N = tg__k_numel(lead, z->shape);
    const double it = 1.0 / o->temperature;
    const tg_device dev = z->storage->device;
    int64_t ishape[TG_MAX_DIMS];
    memcpy(ishape, z->shape, sizeof(int64_t) * (size_t)lead);
    ishape[lead] = 1;
    /* local targets, and a gather index that is always inside the slice */
    tg_tensor *hy = tg__tensor_new_on(s, who, TG_CPU, TG_I64, lead, z->shape, TG_MEM_WORKSPACE);
    tg_tensor *hi = hy ? tg__tensor_new_on(s, who, TG_CPU, TG_I64, lead + 1, ishape,
                                           TG_MEM_WORKSPACE)
                       : NULL;
    tg_status st = hi ? TG_OK : tg_last_status();
    if (st == TG_OK) {
        int64_t *t = tg__ptr(hy), *g = tg__ptr(hi);
        for (int64_t i = 0; i < N; i++) {
            t[i] = tg__vp_local_target(vp, yh[i], o->ignore_index);
            g[i] = t[i] >= 0 && t[i] < z->shape[lead] ? t[i] : 0;
        }
    }
    tg_tensor *idx = NULL;
    if (st == TG_OK) {
        tg_mem_category prev = tg__set_category_override(TG_MEM_WORKSPACE);
        *yl = tg__device_copy(s, who, hy, dev);
        idx = *yl ? tg__device_copy(s, who, hi, dev) : NULL;
        tg__set_category_override(prev);
        if (!idx) st = tg_last_status();
    }
    tg_tensor *lpb = st == TG_OK ? tg__tensor_new_on(s, who, dev, z->dtype, lead, z->shape,
                                                     TG_MEM_WORKSPACE)
                                 : NULL;
    tg_tensor *stb = lpb ? tg__tensor_new_on(s, who, dev, TG_F64, 2, (int64_t[]){N, 3},
                                             TG_MEM_WORKSPACE)
                         : NULL;
    tg_tensor *zy = stb ? tg__tensor_new_on(s, who, dev, z->dtype, lead + 1, ishape,
                                            TG_MEM_WORKSPACE)
                        : NULL;
    if (st == TG_OK && !zy) st = tg_last_status();
    tg__lpe_bad bad = {-1, -1, 0.0};
    if (st == TG_OK) st = tg__k_fill(stb, NAN); /* rows the kernel refuses stay NaN */
    if (st == TG_OK) st = tg__k_lpe_forward(z, *yl, TG__VP_IGNORED, it, o->chunk_size, lpb, NULL,
                                            stb, 3, &bad);
    if (st == TG_OK) st = tg__k_gather_forward(z, idx, zy);
    void *own1 = NULL, *own2 = NULL;
    int64_t lo1 = 0, lo2 = 0;
    const double *sh = st == TG_OK ? tg__host_elems(who, stb, &own1, &lo1) : NULL;
    const void *zh = sh ? tg__host_elems(who, zy, &own2, &lo2) : NULL;
    if (st == TG_OK && !zh) st = tg_last_status();
    /* a refused row: a NaN or +inf logit is the error (named in the whole
     * vocabulary); all -inf on this slice is an empty part (other slices may
     * hold its finite logits; empty on every rank is refused after the merge) */
    for (int64_t i = 0; st == TG_OK && bad.row >= 0 && i < N; i++) {
        const int64_t t = ((const int64_t *)tg__ptr(hy))[i];
        if (t == TG__VP_IGNORED || !isnan(sh[3 * i + 1])) continue;
        tg__lpe_bad b = {i, TG__LPE_COL_UNKNOWN, 0.0};
        st = tg__lpe_locate_bad(who, z, &b, it);
        if (st == TG_OK && b.col >= 0) {
            b.col += vp->start[vp->rank];
            st = tg__lpe_bad_row_error(who, z, &b, it);
        }
    }
    for (int64_t i = 0; st == TG_OK && i < N; i++) {
        const int64_t t = ((const int64_t *)tg__ptr(hy))[i];
        if (t == TG__VP_IGNORED || isnan(sh[3 * i + 1])) {
            memset(&mine[i], 0, sizeof mine[i]);
            continue;
        }
        mine[i] = tg__lpe_acc_of(sh[3 * i], sh[3 * i + 1], sh[3 * i + 2]);
        if (t >= 0 && t < z->shape[lead])
            mine[i].zy = z->dtype == TG_F32 ? (double)((const float *)zh)[i]
                                            : ((const double *)zh)[i];
    }
    free(own1);
    free(own2);
    tg_tensor *temps[6] = {hy, hi, idx, lpb, stb, zy};
    for (int k = 0; k < 6; k++)
        tg__tensor_release(temps[k]);
    return st;
}

void tg__vp_put_rows_host(const double *m, int64_t n, tg_tensor *lp, tg_tensor *H, tg_tensor *st,
                          int nstat) {
    tg_tensor *outs[2] = {lp, H};
    for (int k = 0; k < 2; k++) {
        if (!outs[k]) continue;
        if (outs[k]->dtype == TG_F64) {
            double *d = tg__ptr(outs[k]);
            for (int64_t i = 0; i < n; i++) d[i] = m[i * 5 + k];
        } else {
            float *f = tg__ptr(outs[k]);
            for (int64_t i = 0; i < n; i++) f[i] = (float)m[i * 5 + k];
        }
    }
    if (st) {
        double *d = tg__ptr(st);
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < nstat; j++) d[i * nstat + j] = m[i * 5 + 2 + j];
    }
}

void tg__vp_lse_host(tg_tensor *lse, const tg_tensor *st, int nstat, double inv_t) {
    const double *m = tg__ptr(st);
    const int64_t n = st->shape[0];
    for (int64_t i = 0; i < n; i++) {
        const double x = m[i * nstat] * inv_t;
        const double v = x + m[i * nstat + 1];
        if (lse->dtype == TG_F64) ((double *)tg__ptr(lse))[i] = v;
        else ((float *)tg__ptr(lse))[i] = (float)v;
    }
}

/* The logits op's outputs over z's leading shape: lp, h (want_h), st (N,
 * nstat) f64 statistics (want_st). false with the error set. */
typedef struct vp_outputs {
    tg_tensor *lp, *h, *st, *lse, *stage; /* stage: (N, 5) f64 merged rows, host */
} vp_outputs;

static bool new_outputs(tg_site s, const char *who, const tg_tensor *z, int64_t N, int nstat,
                        bool want_h, bool want_st, vp_outputs *out) {
    const tg_device dev = z->storage->device;
    const int lead = z->ndim - 1;
    return (out->lp = tg__new_output_on(s, who, dev, z->dtype, lead, z->shape)) &&
           (!want_h || (out->h = tg__new_output_on(s, who, dev, z->dtype, lead, z->shape))) &&
           (!want_st ||
            (out->st = tg__new_output_on(s, who, dev, TG_F64, 2, (int64_t[]){N, nstat})));
}

/* TG_ERR_VALUE for the first kept row whose logits are -inf on every rank. */
static tg_status check_rows_not_empty(const char *who, const int64_t *yh, int64_t ignore,
                                      const tg__lpe_acc *all, int64_t N, int P) {
    for (int64_t i = 0; i < N; i++) {
        if (yh[i] == ignore) continue;
        double S = 0.0;
        for (int r = 0; r < P; r++) S += all[(size_t)r * (size_t)N + (size_t)i].S;
        if (S == 0.0)
            return tg__set_error(TG_ERR_VALUE, "%s: row %lld: every logit is -inf (the row has "
                                 "no valid token; give it ignore_index)", who, (long long)i);
    }
    return TG_OK;
}

/* On a device: the merged rows (staged on the host) written into outputs
 * made now, the lse read off the statistics, the node recorded. */
static tg_status fill_on_device(tg_site s, const char *who, tg_tensor *z, tg_tensor *yl,
                                const tg__vp *vp, const int64_t *yh, const tg__lpe_acc *all,
                                int64_t N, int nstat, bool record, bool want_lse,
                                const tg_logprob_opts *o, const tg_logprob_opts *ro,
                                vp_outputs *out) {
    if (!(out->stage = tg__tensor_new_on(s, who, TG_CPU, TG_F64, 2, (int64_t[]){N, 5},
                                         TG_MEM_WORKSPACE)))
        return tg_last_status();
    tg__vp_merge(vp, yh, o->ignore_index, all, N, 1.0 / o->temperature, tg__ptr(out->stage));
    if (!new_outputs(s, who, z, N, nstat, o->want_entropy, record || want_lse, out))
        return tg_last_status();
    /* flat (N) views of the outputs for the row writer */
    tg_tensor *flp = tg__tensor_alias(s, out->lp->storage, out->lp->dtype, 1, &N,
                                      (int64_t[]){1}, 0);
    tg_tensor *fh = out->h && flp ? tg__tensor_alias(s, out->h->storage, out->h->dtype, 1, &N,
                                                     (int64_t[]){1}, 0)
                                  : NULL;
    tg_status rc = flp && (!out->h || fh)
                       ? tg__lpe_put_rows(s, who, out->stage, 0, flp, fh, out->st, nstat)
                       : tg_last_status();
    tg__tensor_release(flp);
    tg__tensor_release(fh);
    if (rc != TG_OK) return rc;
    if (want_lse && !(out->lse = tg__lpe_lse_of(s, who, z, out->st, nstat, 1.0 / o->temperature)))
        return tg_last_status();
    if (record && tg__lpe_record(s, z, yl, out->st, nstat, ro, out->lp, out->h, out->lse) != TG_OK)
        return tg_last_status();
    return TG_OK;
}

/* The protocol in its order: local checks, everything allocated before the
 * agreement, the exchange, the merge. */
tg_status tg__vp_logprob(tg_site s, const char *who, tg_status pre, tg_tensor *z, tg_tensor *y,
                         const tg_logprob_opts *o, tg_tensor **logprob, tg_tensor **entropy,
                         tg_tensor **lse_out) {
    tg_comm *c = o->comm;
    tg_status local = vp_local_checks(who, pre, z, y, o);
    tg_tensor *yc = NULL, *yl = NULL;
    vp_outputs out = {0};
    void *yown = NULL;
    const int64_t *yh = NULL;
    tg__vp_buf xb;
    memset(&xb, 0, sizeof xb);
    tg__vp vp;
    memset(&vp, 0, sizeof vp);
    int64_t N = 0;
    if (local == TG_OK) {
        N = tg__k_numel(z->ndim - 1, z->shape);
        yc = tg__contiguous(s, y);
        yh = yc ? tg__lpe_targets_host(who, yc, &yown) : NULL;
        if (!yh) local = tg_last_status();
    }
    /* what the exchange needs, before the agreement: a failure is told in it */
    if (local == TG_OK) local = tg__vp_buf_new(c, who, N, &xb);
    tg__vp_sig sig = {N, local == TG_OK ? z->shape[z->ndim - 1] : 0, o->vocab_start,
                      local == TG_OK ? z->dtype : 0, o->temperature, o->ignore_index,
                      (o->want_entropy ? TG__AGREE_WANT_ENTROPY : 0) |
                          (o->entropy_grad ? TG__AGREE_ENTROPY_GRAD : 0) |
                          (lse_out ? TG__AGREE_LSE : 0),
                      yh, 0, 0};
    tg_status rc = tg__vp_agree(c, who, local, &sig, &vp);
    if (rc != TG_OK) goto out;
    /* every rank's part of every row, one exchange, the same merge everywhere */
    local = vp_local_stats(s, who, z, &vp, yh, o, &yl, xb.mine);
    const bool record = tg__needs_grad(1, &z);
    const int nstat = record && o->want_entropy && o->entropy_grad ? 3 : 2;
    /* backward is the fused op's own, on this rank's slice: the saved
     * statistics are the global ones and the saved targets the local ones,
     * with their own ignore mark */
    tg_logprob_opts ro = *o;
    ro.ignore_index = TG__VP_IGNORED;
    /* on the CPU everything the call hands out (outputs, node, room in the
     * scope) is made before the exchange and filled after it without
     * allocating: running out of memory fails every rank, never one alone */
    const bool early = z->storage->device == TG_CPU;
    if (local == TG_OK && early) {
        if (!(out.stage = tg__tensor_new_on(s, who, TG_CPU, TG_F64, 2, (int64_t[]){N, 5},
                                            TG_MEM_WORKSPACE)) ||
            !new_outputs(s, who, z, N, nstat, o->want_entropy, record || lse_out, &out) ||
            (lse_out && !(out.lse = tg__new_output_on(s, who, TG_CPU, tg__lpe_out_dtype(z),
                                                      z->ndim - 1, z->shape))) ||
            (record &&
             tg__lpe_record(s, z, yl, out.st, nstat, &ro, out.lp, out.h, out.lse) != TG_OK) ||
            !tg__ret_reserve(3))
            local = tg_last_status();
    }
    if ((rc = tg__vp_exchange(c, who, local, &xb)) != TG_OK) goto out;
    if ((rc = check_rows_not_empty(who, yh, o->ignore_index, xb.all, N, vp.P)) != TG_OK) goto out;
    if (early) {
        tg__vp_merge(&vp, yh, o->ignore_index, xb.all, N, 1.0 / o->temperature,
                     tg__ptr(out.stage));
        tg__vp_put_rows_host(tg__ptr(out.stage), N, out.lp, out.h, out.st, nstat);
        if (out.lse) tg__vp_lse_host(out.lse, out.st, nstat, 1.0 / o->temperature);
    } else if ((rc = fill_on_device(s, who, z, yl, &vp, yh, xb.all, N, nstat, record,
                                    lse_out != NULL, o, &ro, &out)) != TG_OK) {
        goto out;
    }
    if (out.st) tg__tensor_release(out.st);
    out.st = NULL;
    rc = tg__lpe_give_outputs(out.lp, out.h, out.lse, logprob, entropy, lse_out);
    out.lp = out.h = out.lse = NULL;
out:;
    tg_tensor *held[7] = {yc, yl, out.lp, out.h, out.st, out.lse, out.stage};
    for (int k = 0; k < 7; k++)
        tg__tensor_release(held[k]);
    free(yown);
    tg__vp_buf_free(&xb);
    tg__vp_free(&vp);
    return rc;
}
