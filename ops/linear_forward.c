/* ops/linear_forward.c - the fused linear op's forward: each block's row
 * statistics merged per row by max-rescaling; vocab-parallel, this rank's
 * parts exchanged and merged in rank order. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linear_internal.h"

/* rows [r0, r0 + c) of a 1-D (or (N, k)) output */
tg_tensor *tg__lin_out_rows(const lin *loop, tg_tensor *t, int64_t r0, int64_t c) {
    if (!t) return NULL;
    if (t->ndim == 2)
        return tg__lin_alias_rows(loop, t, r0 * t->shape[1], c, t->shape[1], t->shape[1]);
    return tg__lin_alias_rows(loop, t, r0, c, -1, 1);
}

/* One block: the outputs directly from the fused kernel. */
static tg_status fwd_one_block(lin *loop, int64_t r0, int64_t c, fwd_out *o) {
    tg_tensor *Z = tg__lin_load_block(loop, 0, loop->in.V) == TG_OK
                       ? tg__lin_block_logits(loop, c, loop->in.V)
                       : NULL;
    tg_tensor *y = Z ? tg__lin_alias_rows(loop, loop->in.y, r0, c, -1, 1) : NULL;
    tg_tensor *lp = y ? tg__lin_out_rows(loop, o->lp, r0, c) : NULL;
    tg_tensor *H = lp && o->H ? tg__lin_out_rows(loop, o->H, r0, c) : NULL;
    tg_tensor *st = lp && o->st ? tg__lin_out_rows(loop, o->st, r0, c) : NULL;
    tg_status rc = TG_ERR_NOMEM;
    if (lp && (!o->H || H) && (!o->st || st)) {
        tg__lpe_bad bad;
        rc = tg__k_lpe_forward(Z, y, loop->in.ignore, loop->in.inv_t, 0, lp, H, st, o->nstat,
                               &bad);
        if (rc == TG_OK && bad.row >= 0)
            rc = tg__lin_bad_entry(loop, Z, &bad, r0, 0, loop->in.V);
    } else {
        rc = tg_last_status();
    }
    tg_tensor *all[5] = {Z, y, lp, H, st};
    for (int k = 0; k < 5; k++) tg__tensor_release(all[k]);
    return rc;
}

/* Adds block statistics st_b (c, 3) and target logits zy (c) of the block
 * [v0, v0 + vb) of this rank's vocabulary rows to the rows' accumulators. */
static void merge(const lin *loop, int64_t r0, int64_t c, int64_t v0, int64_t vb,
                  const double *st_b, const void *zy, tg__lpe_acc *acc) {
    for (int64_t i = 0; i < c; i++) {
        if (isnan(st_b[3 * i + 1])) continue; /* all -inf in this block: an empty part */
        const tg__lpe_acc b = tg__lpe_acc_of(st_b[3 * i], st_b[3 * i + 1], st_b[3 * i + 2]);
        tg__lpe_acc_add(&acc[i], &b, loop->in.inv_t);
        const int64_t y = loop->in.yh[tg__lin_row_of(loop, r0, i)] - loop->par.vstart;
        if (y >= v0 && y < v0 + vb)
            acc[i].zy = loop->in.dt == TG_F32 ? (double)((const float *)zy)[i]
                                              : ((const double *)zy)[i];
    }
}

/* Host values of a (CPU or device) workspace tensor; *owned to free(). */
static const void *host_of(const lin *loop, const tg_tensor *t, void **owned) {
    int64_t lo;
    const void *p = tg__host_elems(loop->in.who, t, owned, &lo);
    return p ? (const char *)p + (size_t)(t->offset - lo) * tg_dtype_size(t->dtype) : NULL;
}

/* The rows' accumulators over this rank's vocabulary, block by block:
 * acc (c) starts empty. */
/* After the kernel reported a row of Z: every row whose statistics it left
 * unwritten (NaN) is looked at; a NaN or +inf logit is the error, a row all
 * -inf in this block is an empty part (other blocks may hold its finite
 * logits; a row empty in every block is refused at the end). */
static tg_status empty_parts(const lin *loop, const tg_tensor *Z, int64_t r0, int64_t c,
                             int64_t v0, int64_t vb, const double *sh) {
    for (int64_t i = 0; i < c; i++) {
        if (!isnan(sh[3 * i + 1])) continue;
        tg__lpe_bad b = {i, TG__LPE_COL_UNKNOWN, 0.0};
        if (tg__lpe_locate_bad(loop->in.who, Z, &b, loop->in.inv_t) != TG_OK) return tg_last_status();
        if (b.col >= 0) return tg__lin_bad_entry(loop, Z, &b, r0, v0, vb);
    }
    return TG_OK;
}

static tg_status blocks_acc(lin *loop, int64_t r0, int64_t c, tg__lpe_acc *acc) {
    const int64_t vbs = loop->plan.vocab_block;
    tg_tensor *lpb = tg__lin_ws_new(loop, loop->in.dev, loop->in.dt, 1, &c); // (c)
    tg_tensor *stb =
        lpb ? tg__lin_ws_new(loop, loop->in.dev, TG_F64, 2, (int64_t[]){c, 3}) : NULL; // (c, 3)
    tg_tensor *zyb = stb ? tg__lin_ws_new(loop, loop->in.dev, loop->in.dt, 2, (int64_t[]){c, 1})
                         : NULL; // (c, 1)
    tg_status rc = zyb ? TG_OK : tg_last_status();
    for (int64_t v0 = 0; rc == TG_OK && v0 < loop->in.V; v0 += vbs) {
        const int64_t vb = loop->in.V - v0 < vbs ? loop->in.V - v0 : vbs;
        /* in-block targets, 0 elsewhere: the gather reads a valid entry, the
         * statistics do not depend on the targets */
        tg_tensor *idx = tg__lin_local_targets(loop, r0, c, v0, vb, 0);
        tg_tensor *Z = idx && tg__lin_load_block(loop, v0, vb) == TG_OK
                           ? tg__lin_block_logits(loop, c, vb)
                           : NULL;
        tg_tensor *idx2 = Z ? tg__lin_alias_rows(loop, idx, 0, c, 1, 1) : NULL;
        rc = idx2 ? TG_OK : tg_last_status();
        tg__lpe_bad bad = {-1, -1, 0.0};
        if (rc == TG_OK) rc = tg__k_fill(stb, NAN); /* rows the kernel refuses stay NaN */
        if (rc == TG_OK)
            rc = tg__k_lpe_forward(Z, idx, INT64_MIN, loop->in.inv_t, 0, lpb, NULL, stb, 3,
                                   &bad);
        if (rc == TG_OK) rc = tg__k_gather_forward(Z, idx2, zyb);
        void *own1 = NULL, *own2 = NULL;
        const double *sh = rc == TG_OK ? host_of(loop, stb, &own1) : NULL;
        const void *zh = sh ? host_of(loop, zyb, &own2) : NULL;
        if (rc == TG_OK && !zh) rc = tg_last_status();
        if (rc == TG_OK && bad.row >= 0) rc = empty_parts(loop, Z, r0, c, v0, vb, sh);
        if (rc == TG_OK) merge(loop, r0, c, v0, vb, sh, zh, acc);
        free(own1);
        free(own2);
        tg__tensor_release(idx2);
        tg__tensor_release(Z);
        tg__tensor_release(idx);
    }
    tg__tensor_release(lpb);
    tg__tensor_release(stb);
    tg__tensor_release(zyb);
    return rc;
}

static tg_status all_minus_inf(const lin *loop, int64_t row) {
    return tg__set_error(TG_ERR_VALUE,
                         "%s: row %lld: every logit is -inf (the row has no valid "
                         "token; give it ignore_index)",
                         loop->in.who, (long long)row);
}

/* The staged outputs (c, 5) of a chunk's rows written to those rows of the
 * outputs, run by run. */
static tg_status put_chunk_rows(lin *loop, int64_t r0, int64_t c, tg_tensor *stage,
                                fwd_out *o) {
    if (r0 >= 0)
        return tg__lpe_put_rows(loop->in.s, loop->in.who, stage, r0, o->lp, o->H, o->st, o->nstat);
    tg_status st = TG_OK;
    for (int64_t i = 0; st == TG_OK && i < c;) {
        int64_t j = i + 1;
        while (j < c && loop->buf.rows[j] == loop->buf.rows[i] + (j - i)) j++;
        tg_tensor *run =
            tg__lin_alias_rows(loop, stage, i * STAGE_COLS, j - i, STAGE_COLS, STAGE_COLS);
        st = run ? tg__lpe_put_rows(loop->in.s, loop->in.who, run, loop->buf.rows[i], o->lp, o->H, o->st,
                                    o->nstat)
                 : tg_last_status();
        tg__tensor_release(run);
        i = j;
    }
    return st;
}

/* Several blocks (or gathered rows): the rows' accumulators, their outputs
 * staged as (c, 5) f64 and written to the rows. */
static tg_status fwd_blocks(lin *loop, int64_t r0, int64_t c, fwd_out *o) {
    tg_tensor *state = tg__lin_ws_new(loop, TG_CPU, TG_F64, 2, (int64_t[]){c, 4}); // (c, 4)
    tg_status rc = state ? TG_OK : tg_last_status();
    tg__lpe_acc *acc = state ? tg__ptr(state) : NULL;
    if (acc) memset(acc, 0, (size_t)c * sizeof *acc);
    if (rc == TG_OK) rc = blocks_acc(loop, r0, c, acc);
    for (int64_t i = 0; rc == TG_OK && i < c; i++)
        if (acc[i].S == 0.0) rc = all_minus_inf(loop, tg__lin_row_of(loop, r0, i));
    tg_tensor *stage = rc == TG_OK
                           ? tg__lin_ws_new(loop, TG_CPU, TG_F64, 2, (int64_t[]){c, STAGE_COLS})
                           : NULL;
    if (rc == TG_OK && !stage) rc = tg_last_status();
    if (rc == TG_OK) {
        double *g = tg__ptr(stage);
        for (int64_t i = 0; i < c; i++) {
            double *r = g + STAGE_COLS * i;
            tg__lpe_acc_finish(&acc[i], loop->in.inv_t, &r[0], &r[1], &r[3]);
            r[2] = acc[i].M;
            r[4] = r[1];
        }
    }
    tg__tensor_release(state);
    if (rc == TG_OK) rc = put_chunk_rows(loop, r0, c, stage, o);
    tg__tensor_release(stage);
    return rc;
}

tg_status tg__lin_fwd_chunk(lin *loop, int64_t r0, int64_t c, void *arg) {
    tg_status st = tg__lin_load_chunk(loop, r0, c);
    if (st != TG_OK) return st;
    if (loop->par.accs && r0 >= 0)
        return blocks_acc(loop, r0, c, loop->par.accs + r0); /* merged later */
    if (loop->par.accs) { /* gathered rows: their accumulators to their places */
        tg__lpe_acc *acc = tg__xcalloc((size_t)c, sizeof *acc);
        if (!acc) return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", loop->in.who);
        st = blocks_acc(loop, r0, c, acc);
        for (int64_t i = 0; st == TG_OK && i < c; i++)
            loop->par.accs[loop->buf.rows[i]] = acc[i];
        free(acc);
        return st;
    }
    return loop->plan.n_blocks == 1 && r0 >= 0 ? fwd_one_block(loop, r0, c, arg)
                                            : fwd_blocks(loop, r0, c, arg);
}

/* Vocab-parallel, after the chunks: every rank's accumulators of every row
 * in one exchange (made whatever this rank's status rc: a failure here fails
 * every rank), merged in rank order and written to the outputs. */
tg_status tg__lin_vp_finish(lin *loop, tg_status rc, fwd_out *o) {
    rc = tg__vp_exchange(loop->par.comm, loop->in.who, rc, &loop->par.xb);
    const tg__lpe_acc *all = loop->par.xb.all;
    for (int64_t i = 0; rc == TG_OK && i < loop->in.N; i++) { /* a row empty on every rank */
        if (loop->in.yh[i] == loop->in.ignore) continue;
        double S = 0.0;
        for (int r = 0; r < loop->par.vp->P; r++)
            S += all[(size_t)r * (size_t)loop->in.N + (size_t)i].S;
        if (S == 0.0) rc = all_minus_inf(loop, i);
    }
    if (rc == TG_OK && loop->par.stage) { /* the CPU: written without allocating */
        const double *m = tg__ptr(loop->par.stage);
        tg__vp_merge(loop->par.vp, loop->in.yh, loop->in.ignore, all, loop->in.N,
                     loop->in.inv_t, (double *)tg__ptr(loop->par.stage));
        tg__vp_put_rows_host(m, loop->in.N, o->lp, o->H, o->st, o->nstat);
        return TG_OK;
    }
    tg_tensor *stage = rc == TG_OK ? tg__lin_ws_new(loop, TG_CPU, TG_F64, 2,
                                                    (int64_t[]){loop->in.N, STAGE_COLS})
                                   : NULL;
    if (rc == TG_OK && !stage) rc = tg_last_status();
    if (rc == TG_OK) {
        tg__vp_merge(loop->par.vp, loop->in.yh, loop->in.ignore, all, loop->in.N,
                     loop->in.inv_t, tg__ptr(stage));
        rc = tg__lpe_put_rows(loop->in.s, loop->in.who, stage, 0, o->lp, o->H, o->st, o->nstat);
    }
    tg__tensor_release(stage);
    return rc;
}
