/* ops/linear_loop.c - the fused linear op's loop: its buffers, chunks of
 * kept rows (contiguous runs or gathered), blocks of the vocabulary and
 * their logits in the workspace. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linear_internal.h"

/* Releases the loop's buffers (before backward's bf16 gradients are made:
 * those then take the workspace's place rather than adding to it). */
void tg__lin_free_workspace(lin *loop) {
    tg_tensor **ws[6] = {&loop->buf.zbuf, &loop->buf.dz16, &loop->buf.hbuf,
                         &loop->buf.wbuf, &loop->buf.bbuf, &loop->cur.bcur};
    for (int k = 0; k < 6; k++) {
        tg__tensor_release(*ws[k]);
        *ws[k] = NULL;
    }
}

void tg__lin_done(lin *loop) {
    tg__lin_free_workspace(loop);
    tg__tensor_release(loop->in.h);
    tg__tensor_release(loop->in.w);
    tg__tensor_release(loop->in.b);
    tg__tensor_release(loop->in.y);
    free(loop->in.y_owned);
    tg__vp_buf_free(&loop->par.xb);
    tg__tensor_release(loop->par.stage);
    free(loop->buf.rows);
}

/* A 2-D or 1-D alias of t's storage. */
tg_tensor *tg__lin_alias_rows(const lin *loop, const tg_tensor *t, int64_t off, int64_t rows,
                         int64_t cols, int64_t rs) {
    if (cols < 0)
        return tg__tensor_alias(loop->in.s, t->storage, t->dtype, 1, &rows, (int64_t[]){rs},
                                t->offset + off);
    return tg__tensor_alias(loop->in.s, t->storage, t->dtype, 2, (int64_t[]){rows, cols},
                            (int64_t[]){rs, 1}, t->offset + off);
}

/* A workspace tensor on dev. */
tg_tensor *tg__lin_ws_new(const lin *loop, tg_device dev, tg_dtype dt, int ndim,
                         const int64_t *shape) {
    return tg__tensor_new_on(loop->in.s, loop->in.who, dev, dt, ndim, shape, TG_MEM_WORKSPACE);
}

/* rows [r0, r0 + c) of src (a 2-D (n, k) contiguous tensor, or 1-D) copied
 * (converted) into the front of buf; returns buf's data. NULL on failure. */
static char *convert_rows(const lin *loop, tg_tensor *buf, const tg_tensor *src, int64_t r0,
                          int64_t c) {
    const int64_t k = src->ndim == 2 ? src->shape[1] : -1;
    tg_tensor *from = tg__lin_alias_rows(loop, src, r0 * (k > 0 ? k : 1), c, k, k > 0 ? k : 1);
    tg_tensor *to = from ? tg__lin_alias_rows(loop, buf, 0, c, k, k > 0 ? k : 1) : NULL;
    tg_status st = to ? tg__k_copy(to, from) : tg_last_status();
    tg__tensor_release(from);
    tg__tensor_release(to);
    return st == TG_OK ? tg__ptr(buf) : NULL;
}

/* ---- chunks --------------------------------------------------------------------
 * A chunk is c kept rows: the rows [r0, r0 + c) when they follow each other
 * (r0 >= 0), or, when ignored rows fall between them, the rows loop->buf.rows[0..c)
 * (r0 == -1: "gathered"), whose per-row data is gathered into buffers. */



/* Copies between chunk rows and global rows, run by run of consecutive rows:
 * to_chunk: dst (c[, k]) chunk rows <- src (N[, k]) global rows; else the
 * reverse. Tensors are 1-D (any stride) or 2-D row-major. */
tg_status tg__lin_move_rows(const lin *loop, int64_t r0, int64_t c, tg_tensor *chunk_t,
                           tg_tensor *global_t, bool to_chunk) {
    tg_status st = TG_OK;
    for (int64_t i = 0; st == TG_OK && i < c;) {
        int64_t j = i + 1;
        while (j < c && tg__lin_row_of(loop, r0, j) == tg__lin_row_of(loop, r0, i) + (j - i))
            j++;
        const int64_t g = tg__lin_row_of(loop, r0, i), n = j - i;
        tg_tensor *views[2] = {NULL, NULL}, *ts[2] = {chunk_t, global_t};
        const int64_t at[2] = {i, g};
        for (int k = 0; k < 2; k++) {
            const tg_tensor *t = ts[k];
            views[k] = t->ndim == 2 ? tg__lin_alias_rows(loop, t, at[k] * t->strides[0], n,
                                                         t->shape[1], t->strides[0])
                                    : tg__lin_alias_rows(loop, t, at[k] * t->strides[0], n, -1,
                                                         t->strides[0]);
        }
        st = views[0] && views[1] ? tg__k_copy(views[to_chunk ? 0 : 1], views[to_chunk ? 1 : 0])
                                  : tg_last_status();
        tg__tensor_release(views[0]);
        tg__tensor_release(views[1]);
        i = j;
    }
    return st;
}

/* Makes the chunk's rows of hidden current (loop->cur.hp): in place when they
 * follow each other (and need no conversion), else gathered (converted)
 * into the buffer. */
tg_status tg__lin_load_chunk(lin *loop, int64_t r0, int64_t c) {
    if (r0 >= 0 && (loop->in.in_dt != TG_BF16 || loop->gemm.tc)) {
        loop->cur.hp = (char *)tg__ptr(loop->in.h) + (size_t)(r0 * loop->in.d) * loop->gemm.hes;
        return TG_OK;
    }
    tg_tensor *buf = tg__lin_alias_rows(loop, loop->buf.hbuf, 0, c, loop->in.d, loop->in.d);
    tg_status st =
        buf ? tg__lin_move_rows(loop, r0, c, buf, loop->in.h, true) : tg_last_status();
    tg__tensor_release(buf);
    loop->cur.hp = tg__ptr(loop->buf.hbuf);
    return st;
}

/* Makes the block [v0, v0 + vb) of W (and b) current, converting bf16. */
tg_status tg__lin_load_block(lin *loop, int64_t v0, int64_t vb) {
    tg__tensor_release(loop->cur.bcur);
    loop->cur.bcur = NULL;
    if (!loop->buf.wbuf) {
        loop->cur.wp = (char *)tg__ptr(loop->in.w) + (size_t)(v0 * loop->in.d) * loop->gemm.hes;
        if (loop->in.b && !loop->buf.bbuf &&
            !(loop->cur.bcur = tg__lin_alias_rows(loop, loop->in.b, v0, vb, -1, 1)))
            return tg_last_status();
    } else if (!(loop->cur.wp = convert_rows(loop, loop->buf.wbuf, loop->in.w, v0, vb))) {
        return tg_last_status();
    }
    if (loop->buf.bbuf) {
        if (!convert_rows(loop, loop->buf.bbuf, loop->in.b, v0, vb) ||
            !(loop->cur.bcur = tg__lin_alias_rows(loop, loop->buf.bbuf, 0, vb, -1, 1)))
            return tg_last_status();
    }
    return TG_OK;
}

/* Z (c, vb) = h[chunk] @ W[block]^T (+ b[block]) for the current chunk and
 * block (tg__lin_load_chunk, tg__lin_load_block), as a view of the workspace; NULL with the
 * error set. */
tg_tensor *tg__lin_block_logits(const lin *loop, int64_t c, int64_t vb) {
    tg_tensor *Z = tg__tensor_alias(loop->in.s, loop->buf.zbuf->storage, loop->in.dt, 2,
                                    (int64_t[]){c, vb}, (int64_t[]){vb, 1}, 0);
    if (!Z) return NULL;
    tg__mat a = {0}, bm = {0}, cm = {0};
    a.data = loop->cur.hp;
    a.rows = c, a.cols = loop->in.d, a.rs = loop->in.d, a.cs = 1;
    bm.data = loop->cur.wp; /* W[block]^T (d, vb) */
    bm.rows = loop->in.d, bm.cols = vb, bm.rs = 1, bm.cs = loop->in.d;
    cm.data = tg__ptr(Z);
    cm.rows = c, cm.cols = vb, cm.rs = vb, cm.cs = 1;
    tg_status st =
        tg__k_matmul(loop->in.dev, loop->in.who, loop->gemm.mm_dt, 0, NULL, &a, &bm, &cm, false, false);
    if (st == TG_OK && loop->cur.bcur)
        st = tg__k_binary(TG__BIN_ADD, Z, Z, loop->cur.bcur, 0, 0);
    return tg__k_ok(st, Z);
}

/* The buffer a chunk's rows of hidden are gathered into, the list of its
 * rows, and, for bf16 inputs, the f32 buffers of a block's weight rows. */
tg_status tg__lin_conv_buffers(lin *loop) {
    const int64_t hn = loop->plan.chunk_rows * loop->in.d,
                  wn = loop->plan.vocab_block * loop->in.d;
    if (!(loop->buf.hbuf = tg__lin_ws_new(loop, loop->in.dev, loop->gemm.mm_dt, 1, &hn)))
        return tg_last_status();
    if (!(loop->buf.rows = tg__xmalloc((size_t)loop->plan.chunk_rows * sizeof *loop->buf.rows)))
        return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", loop->in.who);
    if (loop->in.in_dt != TG_BF16) return TG_OK;
    if ((!loop->gemm.tc &&
         !(loop->buf.wbuf = tg__lin_ws_new(loop, loop->in.dev, TG_F32, 1, &wn))) ||
        (loop->in.b && !(loop->buf.bbuf = tg__lin_ws_new(loop, loop->in.dev, TG_F32, 1,
                                                         &loop->plan.vocab_block))))
        return tg_last_status();
    return TG_OK;
}

/* Local targets of rows [r0, r0 + c) for the block [v0, v0 + vb): y - v0
 * when inside, else `outside`; a new (c) i64 tensor on loop->in.dev. */
tg_tensor *tg__lin_local_targets(const lin *loop, int64_t r0, int64_t c, int64_t v0, int64_t vb,
                                int64_t outside) {
    tg_tensor *hst = tg__lin_ws_new(loop, TG_CPU, TG_I64, 1, &c);
    if (!hst) return NULL;
    int64_t *t = tg__ptr(hst);
    for (int64_t i = 0; i < c; i++) {
        const int64_t y = loop->in.yh[tg__lin_row_of(loop, r0, i)] -
                          loop->par.vstart; /* in this rank's vocabulary */
        t[i] = y >= v0 && y < v0 + vb ? y - v0 : outside;
    }
    if (loop->in.dev == TG_CPU) return hst;
    tg_mem_category prev = tg__set_category_override(TG_MEM_WORKSPACE);
    tg_tensor *dv = tg__device_copy(loop->in.s, loop->in.who, hst, loop->in.dev);
    tg__set_category_override(prev);
    tg__tensor_release(hst);
    return dv;
}

/* Calls fn(loop, r0, c, arg) for each chunk of c kept rows (the next
 * chunk_rows of them, in order; r0 as above); stops at the first failure
 * and returns it. Ignored rows are in no chunk: never multiplied. */
tg_status tg__lin_for_chunks(lin *loop, chunk_fn fn, void *arg) {
    int64_t i = 0;
    while (i < loop->in.N) {
        int64_t c = 0;
        while (i < loop->in.N && c < loop->plan.chunk_rows) {
            if (loop->in.yh[i] != loop->in.ignore) loop->buf.rows[c++] = i;
            i++;
        }
        if (!c) break;
        const bool together = loop->buf.rows[c - 1] - loop->buf.rows[0] == c - 1;
        tg_status st = fn(loop, together ? loop->buf.rows[0] : -1, c, arg);
        if (st != TG_OK) return st;
    }
    return TG_OK;
}

/* The error for a rejected entry of Z (rows from r0, entries from v0). */
tg_status tg__lin_bad_entry(const lin *loop, const tg_tensor *Z, tg__lpe_bad *bad, int64_t r0,
                           int64_t v0, int64_t vb) {
    if (tg__lpe_locate_bad(loop->in.who, Z, bad, loop->in.inv_t) != TG_OK) return tg_last_status();
    if (bad->col < 0)
        return tg__set_error(TG_ERR_VALUE,
                             "%s: row %lld: every logit of vocabulary entries "
                             "[%lld, %lld) is -inf (a row needs a finite logit; give it "
                             "ignore_index)",
                             loop->in.who, (long long)tg__lin_row_of(loop, r0, bad->row), (long long)v0,
                             (long long)(v0 + vb));
    return tg__set_error(TG_ERR_VALUE,
                         "%s: row %lld: the logit of vocabulary entry %lld "
                         "(hidden row %lld . weight row %lld%s) is %g (logits must be finite "
                         "or -inf)",
                         loop->in.who, (long long)tg__lin_row_of(loop, r0, bad->row),
                         (long long)(v0 + bad->col),
                         (long long)tg__lin_row_of(loop, r0, bad->row),
                         (long long)(v0 + bad->col), loop->in.b ? " + bias" : "", bad->value);
}
