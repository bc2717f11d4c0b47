/* ops/linear_backward.c - the fused linear op's backward: each block's
 * logits recomputed and turned into dZ in place, then dh, dW and db by
 * accumulating GEMMs in a fixed order; its graph node. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linear_internal.h"

#define LIN_NAME "LinearLogprobEntropyBackward" /* the node, its messages and GEMMs */


/* c += a @ b, the operands of dtype dt (bf16: into f32 c). */
static tg_status gemm_acc(const lin *loop, tg_dtype dt, const tg__mat *a, const tg__mat *b,
                          const tg__mat *c) {
    return tg__k_matmul(loop->in.dev, loop->in.who, dt, 0, NULL, a, b, c, false, true);
}

/* tc: the bf16 buffer of dZ as a (c, vb) tensor. */
static tg_tensor *dz16_view(const lin *loop, int64_t c, int64_t vb) {
    return tg__tensor_alias(loop->in.s, loop->buf.dz16->storage, TG_BF16, 2, (int64_t[]){c, vb},
                            (int64_t[]){vb, 1}, 0);
}

/* tc: dZ (c, vb) f32 rounded into the bf16 buffer (the dh and dW GEMMs'
 * operand); returns its data, NULL with the error set. */
static char *round_dz(const lin *loop, const tg_tensor *Z, int64_t c, int64_t vb) {
    tg_tensor *d16 = dz16_view(loop, c, vb);
    tg_status st = d16 ? tg__k_copy(d16, Z) : tg_last_status();
    tg__tensor_release(d16);
    return st == TG_OK ? tg__ptr(loop->buf.dz16) : NULL;
}

static tg__mat mat(void *data, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    tg__mat m;
    memset(&m, 0, sizeof m);
    m.data = data, m.rows = rows, m.cols = cols, m.rs = rs, m.cs = cs;
    return m;
}

/* A gathered chunk's rows of a per-row tensor t ((N) or (N, k)): a new
 * workspace tensor (c) or (c, k) of t's dtype. */
static tg_tensor *gather_of(lin *loop, int64_t r0, int64_t c, tg_tensor *t) {
    tg_tensor *buf = t->ndim == 2 ? tg__lin_ws_new(loop, loop->in.dev, t->dtype, 2,
                                                   (int64_t[]){c, t->shape[1]})
                                  : tg__lin_ws_new(loop, loop->in.dev, t->dtype, 1, &c);
    if (buf && tg__lin_move_rows(loop, r0, c, buf, t, true) != TG_OK) {
        tg__tensor_release(buf);
        return NULL;
    }
    return buf;
}

tg_status tg__lin_bwd_chunk(lin *loop, int64_t r0, int64_t c, tg__lin_bwd *B, bool z_ready) {
    const int64_t vbs = loop->plan.vocab_block, d = loop->in.d;
    const size_t es = loop->in.es;
    tg_status rc = TG_OK;
    /* the chunk's statistics and upstream gradients: views, or gathered */
    tg_tensor *st =
        r0 >= 0 ? tg__lin_out_rows(loop, B->st, r0, c) : gather_of(loop, r0, c, B->st);
    tg_tensor *g[3] = {NULL, NULL, NULL}, *gsrc[3] = {B->glp, B->gH, B->glse};
    for (int k = 0; k < 3; k++)
        if (gsrc[k] &&
            !(g[k] = B->g_local ? tg_retain(gsrc[k])
                     : r0 >= 0    ? tg__lin_alias_rows(loop, gsrc[k], r0 * gsrc[k]->strides[0],
                                                       c, -1, gsrc[k]->strides[0])
                                  : gather_of(loop, r0, c, gsrc[k])))
            rc = tg_last_status();
    if (!st) rc = tg_last_status();
    /* d hidden of gathered rows: summed in a buffer, then put in their rows */
    tg_tensor *dhb = r0 < 0 && B->dh && rc == TG_OK
                         ? tg__lin_ws_new(loop, loop->in.dev, loop->in.dt, 2, (int64_t[]){c, d})
                         : NULL;
    if (r0 < 0 && B->dh && rc == TG_OK) rc = dhb ? tg__k_fill(dhb, 0.0) : tg_last_status();
    /* z_ready: forward left the chunk's one block of logits, its rows and
     * its weight rows current */
    z_ready = z_ready && loop->plan.n_blocks == 1;
    if (rc == TG_OK && !z_ready) rc = tg__lin_load_chunk(loop, r0, c);
    for (int64_t v0 = 0; rc == TG_OK && v0 < loop->in.V; v0 += vbs) {
        const int64_t vb = loop->in.V - v0 < vbs ? loop->in.V - v0 : vbs;
        tg_tensor *y = loop->plan.n_blocks == 1 && !loop->par.comm && r0 >= 0
                           ? tg__lin_alias_rows(loop, loop->in.y, r0, c, -1, 1)
                           : tg__lin_local_targets(loop, r0, c, v0, vb, -1);
        tg_tensor *Z = !y ? NULL
                       : z_ready
                           ? tg__tensor_alias(loop->in.s, loop->buf.zbuf->storage, loop->in.dt, 2,
                                              (int64_t[]){c, vb}, (int64_t[]){vb, 1}, 0)
                       : tg__lin_load_block(loop, v0, vb) == TG_OK
                           ? tg__lin_block_logits(loop, c, vb)
                           : NULL;
        /* tc without a bias gradient: the kernel writes dZ rounded to bf16
         * straight into the GEMMs' buffer; else dZ replaces Z (f32) */
        const bool direct16 =
            loop->gemm.tc && !B->db && (B->dh || B->dw) && tg__k_has_bf16_lpe(loop->in.dev);
        tg_tensor *dZ = Z && direct16 ? dz16_view(loop, c, vb) : (Z ? tg_retain(Z) : NULL);
        rc = dZ ? tg__k_lpe_backward(Z, y, INT64_MIN, loop->in.inv_t, 0, st, B->nstat, g[0],
                                     g[1], g[2], dZ)
                : tg_last_status();
        tg__tensor_release(dZ);
        char *zp = Z ? tg__ptr(Z) : NULL;
        char *hp = loop->cur.hp, *wp = loop->cur.wp;
        /* the dh and dW GEMMs' dZ: Z itself, or its bf16 rounding (tc) */
        char *gz = rc == TG_OK && direct16                          ? tg__ptr(loop->buf.dz16)
                   : rc == TG_OK && loop->gemm.tc && (B->dh || B->dw) ? round_dz(loop, Z, c, vb)
                                                              : zp;
        if (rc == TG_OK && !gz) rc = tg_last_status();
        if (rc == TG_OK && B->dh) { /* dh[chunk] (c, d) += dZ (c, vb) @ W[block] (vb, d) */
            tg__mat a = mat(gz, c, vb, vb, 1), b = mat(wp, vb, d, d, 1);
            tg__mat o = mat(dhb ? (char *)tg__ptr(dhb)
                                : (char *)tg__ptr(B->dh) + (size_t)(r0 * d) * es,
                            c, d, d, 1);
            rc = gemm_acc(loop, loop->gemm.mm_dt, &a, &b, &o);
        }
        if (rc == TG_OK && B->dw) { /* dW[block] (vb, d) += dZ^T (vb, c) @ h[chunk] (c, d) */
            tg__mat a = mat(gz, vb, c, 1, vb), b = mat(hp, c, d, d, 1);
            tg__mat o = mat((char *)tg__ptr(B->dw) + (size_t)(v0 * d) * es, vb, d, d, 1);
            rc = gemm_acc(loop, loop->gemm.mm_dt, &a, &b, &o);
        }
        if (rc == TG_OK && B->db) { /* db[block] (1, vb) += 1 (1, c) @ dZ (c, vb), in f32 */
            tg__mat a = mat(tg__ptr(B->ones), 1, c, c, 1), b = mat(zp, c, vb, vb, 1);
            tg__mat o = mat((char *)tg__ptr(B->db) + (size_t)v0 * es, 1, vb, vb, 1);
            rc = gemm_acc(loop, loop->in.dt, &a, &b, &o);
        }
        tg__tensor_release(Z);
        tg__tensor_release(y);
    }
    if (rc == TG_OK && dhb) { /* the chunk's rows of d hidden, each its own */
        tg_tensor *dh2 = tg__lin_alias_rows(loop, B->dh, 0, loop->in.N, d, d);
        rc = dh2 ? tg__lin_move_rows(loop, r0, c, dhb, dh2, false) : tg_last_status();
        tg__tensor_release(dh2);
    }
    tg__tensor_release(dhb);
    for (int k = 0; k < 3; k++) tg__tensor_release(g[k]);
    tg__tensor_release(st);
    return rc;
}

static tg_status bwd_chunk(lin *loop, int64_t r0, int64_t c, void *arg) {
    return tg__lin_bwd_chunk(loop, r0, c, arg, false);
}

tg_status tg__lin_grads_to_inputs(const lin *loop, tg_tensor **grads) {
    if (loop->in.in_dt != TG_BF16) return TG_OK;
    for (int k = 0; k < 3; k++) {
        tg_tensor *a = grads[k];
        if (!a) continue;
        tg_tensor *g16 =
            tg__new_output_on(loop->in.s, loop->in.who, loop->in.dev, TG_BF16, a->ndim, a->shape);
        if (g16) g16 = tg__k_ok(tg__k_copy(g16, a), g16);
        if (!g16) return tg_last_status();
        tg__tensor_release(a);
        grads[k] = g16;
    }
    return TG_OK;
}

/* The GEMMs' layout: loop->in.in_dt, loop->in.dt and loop->in.dev set. */
void tg__lin_gemm_layout(lin *loop) {
    loop->gemm.tc = loop->in.in_dt == TG_BF16 && tg__k_has_bf16_gemm(loop->in.dev);
    loop->gemm.mm_dt = loop->gemm.tc ? TG_BF16 : loop->in.dt;
    loop->gemm.hes = tg_dtype_size(loop->gemm.mm_dt);
}

/* Fills loop from the saved tensors (new references) for backward. */
static tg_status lin_from_node(tg__node *n, lin *loop) {
    memset(loop, 0, sizeof *loop);
    loop->in.s = n->site;
    loop->in.who = LIN_NAME;
    tg_tensor *h = tg__node_saved(n, S_H);
    if (!h) return tg_last_status();
    loop->in.d = h->shape[h->ndim - 1];
    loop->in.N = tg__k_numel(h->ndim - 1, h->shape);
    loop->in.h = tg__lin_alias_rows(loop, h, 0, loop->in.N, loop->in.d, loop->in.d);
    tg__tensor_release(h);
    if (!loop->in.h || !(loop->in.w = tg__node_saved(n, S_W)) ||
        !(loop->in.y = tg__node_saved(n, S_Y)) ||
        (n->iparam[P_HAS_BIAS] && !(loop->in.b = tg__node_saved(n, S_B))))
        return tg_last_status();
    loop->in.V = loop->in.w->shape[0];
    loop->in.in_dt = loop->in.h->dtype;
    loop->in.dt = loop->in.in_dt == TG_BF16 ? TG_F32 : loop->in.in_dt;
    loop->in.es = tg_dtype_size(loop->in.dt);
    loop->in.dev = loop->in.h->storage->device;
    tg__lin_gemm_layout(loop);
    loop->in.ignore = n->iparam[P_IGNORE];
    loop->in.inv_t = n->dparam[P_INV_T];
    loop->plan.chunk_rows = (int64_t)n->dparam[P_CHUNK];
    loop->plan.vocab_block = (int64_t)n->dparam[P_VBLOCK];
    loop->plan.n_blocks = (loop->in.V + loop->plan.vocab_block - 1) / loop->plan.vocab_block;
    loop->par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM];
    loop->par.vstart = n->iparam[P_VSTART];
    loop->in.yh = tg__lpe_targets_host(loop->in.who, loop->in.y, &loop->in.y_owned);
    if (!loop->in.yh) return tg_last_status();
    return loop->in.N > 0 ? tg__lin_conv_buffers(loop) : TG_OK;
}


/* The backward's agreement, then (every rank ran its part) the all-reduce of
 * d hidden. skipped: no gradient reached the node on this rank (dh NULL). */
static tg_status vp_reduce_dh(lin *loop, tg_status rc, bool want_h, bool skipped,
                              tg_tensor *dh) {
    const int P = tg_comm_size(loop->par.comm);
    tg__agree mine;
    const tg__agree *all = NULL;
    memset(&mine, 0, sizeof mine);
    if (rc != TG_OK) tg__agree_fail(&mine, LIN_NAME, rc);
    mine.sig[0] = want_h;
    mine.sig[1] = skipped;
    tg_status st = tg__comm_agree(loop->par.comm, LIN_NAME, &mine, &all);
    for (int r = 1; st == TG_OK && r < P; r++) {
        if (all[r].sig[1] != all[0].sig[1])
            st = tg__set_error(TG_ERR_COMM,
                               "%s: rank %d's backward %s a gradient to this node, "
                               "rank 0's %s (the same graph on every rank)",
                               LIN_NAME, r, all[r].sig[1] ? "brought no" : "brought",
                               all[0].sig[1] ? "did not" : "did");
        else if (all[r].sig[0] != all[0].sig[0])
            st = tg__set_error(TG_ERR_COMM,
                               "%s: rank %d %s d hidden, rank 0 %s (the same graph "
                               "on every rank)",
                               LIN_NAME, r, all[r].sig[0] ? "wants" : "does not want",
                               all[0].sig[0] ? "does" : "does not");
    }
    if (st == TG_OK && want_h && !skipped)
        st = tg__comm_allreduce_sum(loop->par.comm, LIN_NAME, dh);
    return st;
}

static tg_status lin_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    lin loop;
    tg__lin_bwd B;
    memset(&B, 0, sizeof B);
    tg_status rc = lin_from_node(n, &loop);
    const bool want_h = n->edge[0].kind != TG__EDGE_NONE,
               want_w = n->edge[1].kind != TG__EDGE_NONE;
    const bool want_b = n->iparam[P_HAS_BIAS] && n->edge[2].kind != TG__EDGE_NONE;
    B.nstat = (int)n->iparam[P_NSTAT];
    bool ok1 = true, ok2 = true, ok3 = true;
    if (rc == TG_OK && !(B.st = tg__node_saved(n, S_ST))) rc = tg_last_status();
    if (rc == TG_OK) {
        B.glp = tg__lpe_flat(loop.in.s, gout[0], loop.in.N, &ok1);
        B.gH = B.nstat == 3 ? tg__lpe_flat(loop.in.s, gout[1], loop.in.N, &ok2) : NULL;
        B.glse = n->iparam[P_LSE_OUT] >= 0
                     ? tg__lpe_flat(loop.in.s, gout[n->iparam[P_LSE_OUT]], loop.in.N, &ok3)
                     : NULL;
        if (!ok1 || !ok2 || !ok3) rc = tg_last_status();
    }
    const tg__meta *mh = &n->in_meta[0];
    if (rc == TG_OK && want_h &&
        !(B.dh = tg__zeros_on(n->site, loop.in.dev, loop.in.dt, mh->ndim, mh->shape)))
        rc = tg_last_status();
    if (rc == TG_OK && want_w &&
        !(B.dw = tg__zeros_on(n->site, loop.in.dev, loop.in.dt, 2,
                              (int64_t[]){loop.in.V, loop.in.d})))
        rc = tg_last_status();
    if (rc == TG_OK && want_b &&
        !(B.db = tg__zeros_on(n->site, loop.in.dev, loop.in.dt, 1, &loop.in.V)))
        rc = tg_last_status();
    if (rc == TG_OK && loop.in.N > 0) {
        const int64_t zn = loop.plan.chunk_rows * loop.plan.vocab_block;
        if (!(loop.buf.zbuf = tg__lin_ws_new(&loop, loop.in.dev, loop.in.dt, 1, &zn)))
            rc = tg_last_status();
        if (rc == TG_OK && loop.gemm.tc && (want_h || want_w) &&
            !(loop.buf.dz16 = tg__lin_ws_new(&loop, loop.in.dev, TG_BF16, 1, &zn)))
            rc = tg_last_status();
        if (rc == TG_OK && want_b) {
            B.ones = tg__lin_ws_new(&loop, loop.in.dev, loop.in.dt, 1, &loop.plan.chunk_rows);
            rc = B.ones ? tg__k_fill(B.ones, 1.0) : tg_last_status();
        }
        if (rc == TG_OK && (want_h || want_w || want_b))
            rc = tg__lin_for_chunks(&loop, bwd_chunk, &B);
    }
    /* vocab-parallel: d hidden is the sum of every rank's part, one all-reduce,
     * after an agreement that makes a failure on one rank fail them all */
    loop.par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM];
    if (loop.par.comm) rc = vp_reduce_dh(&loop, rc, want_h, false, B.dh);
    tg_tensor *keep[3] = {B.dh, B.dw, B.db};
    tg__lin_free_workspace(&loop);
    tg__tensor_release(B.ones);
    B.ones = NULL;
    if (rc == TG_OK && n->dparam[P_GRAD_F32] == 0) rc = tg__lin_grads_to_inputs(&loop, keep);
    for (int k = 0; k < 3; k++) {
        if (rc == TG_OK) gin[k] = keep[k];
        else tg__tensor_release(keep[k]);
    }
    tg__tensor_release(B.st);
    tg__tensor_release(B.glp);
    tg__tensor_release(B.gH);
    tg__tensor_release(B.glse);
    tg__lin_done(&loop);
    return rc;
}

/* The engine's call for a node whose backward does not run (tg__op_def.
 * not_run): this rank failed before it (st), or no gradient reached it
 * (TG_OK). Vocab-parallel, it makes the backward's agreement all the same,
 * as the other ranks' node does, so that they are told instead of waiting. */
static tg_status lin_not_run(tg__node *n, tg_status st) {
    lin loop;
    memset(&loop, 0, sizeof loop);
    if (!(loop.par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM])) return TG_OK;
    return vp_reduce_dh(&loop, st, n->edge[0].kind != TG__EDGE_NONE, true, NULL);
}

const tg__op_def tg__lin_def = {LIN_NAME, lin_backward, false, lin_not_run};
