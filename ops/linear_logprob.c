/* ops/linear_logprob.c - tg_linear_logprob_entropy: log-prob, entropy and
 * log-sum-exp of z = h W^T + b without z ever being whole in memory.
 *
 * The loop (docs/design.md draws it). A chunk is the next plan.chunk_rows
 * kept rows (target != ignore_index): a row range of h and of every per-row
 * tensor when they follow each other, else gathered into buffers (for_chunks,
 * move_rows). Ignored rows are never multiplied. For each chunk, for each
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
 * The composite impl is tg_matmul (+ bias) then the fused logits op. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "logprob_internal.h"

#define WHO "tg_linear_logprob_entropy"
#define MIN_CHUNK 128   /* rows a GEMM wants before the vocabulary is split */
#define STAGE_COLS 5    /* merged outputs per row: logprob, entropy, M, ls, H */

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

/* ---- the plan ------------------------------------------------------------------ */

/* The GPU's default, from its free memory the first time it is asked (so
 * that every step of a run has the same plan: the same GEMM shapes). */
static size_t cuda_default_workspace(void) {
    tg_cuda_props p;
    if (tg_cuda_get_props(&p) != TG_OK) {
        tg_clear_error();
        return TG_LINEAR_LOGPROB_WORKSPACE;
    }
    const size_t b = p.free_bytes / 16;
    return b < TG_LINEAR_LOGPROB_WORKSPACE          ? TG_LINEAR_LOGPROB_WORKSPACE
           : b > TG_LINEAR_LOGPROB_WORKSPACE_CUDA_MAX ? TG_LINEAR_LOGPROB_WORKSPACE_CUDA_MAX
                                                      : b;
}

size_t tg_linear_logprob_default_workspace(tg_device dev) {
    static _Atomic size_t cuda_ws; /* 0: not asked yet */
    if (dev != TG_CUDA || tg_cuda_device_count() == 0) return TG_LINEAR_LOGPROB_WORKSPACE;
    size_t b = atomic_load(&cuda_ws);
    if (!b) {
        b = cuda_default_workspace();
        size_t none = 0;
        if (!atomic_compare_exchange_strong(&cuda_ws, &none, b)) b = none; /* another thread's */
    }
    return b;
}

/* Workspace bytes per chunk row besides the logits, with several blocks.
 * Forward: the merge state held throughout, and at most either the
 * per-block buffers (local targets, logprob es, statistics, target logit
 * es) or the staged outputs (8 * STAGE_COLS = 40 <= MERGE_STATE_BYTES +
 * 2 es). Backward: the local targets. The bias gradient's row of ones (es)
 * comes on top in backward. */
#define MERGE_STATE_BYTES 32  /* (M, S, A, z_y) of the running merge, f64 each */
#define LOCAL_TARGET_BYTES 8  /* the row's target within the block, i64 */
#define BLOCK_STATS_BYTES 24  /* the block's (M, ls, H), f64 each */
static size_t fwd_extra(size_t es) {
    return MERGE_STATE_BYTES + LOCAL_TARGET_BYTES + 2 * es + BLOCK_STATS_BYTES;
}

/* Each chunk row also has its copy in the gather buffer (d * es:
 * `conv_row`; es = 4, the f32 compute size, for bf16 inputs, converted),
 * and with bf16 each block its f32 weight rows and bias ((d + 1) * 4 per
 * vocabulary row: `conv_vocab`). Backward, for a chunk gathered from
 * several runs of rows: its statistics, upstream gradients and d hidden
 * rows (GATHER_ROW bytes per row besides d * es).
 * On a device with bf16 GEMMs (the tensor-core layout, `tc`) bf16 operands
 * are read as they are: the gather buffer holds bf16 rows (d * 2), only the
 * bias is converted (4 per vocabulary row), and backward rounds each
 * block's dZ to a bf16 copy for its GEMMs (`dz_es` = 2 bytes per logit). */
#define GATHER_ROW(es) (BLOCK_STATS_BYTES + 3 * (es)) /* statistics, 3 upstream gradients */
/* conv_row: a chunk row in the gather buffer; dh_row: a d hidden row (d es:
 * the f32 accumulator's, whatever conv_row is) */
static size_t per_row(int64_t vb, size_t es, bool has_bias, size_t conv_row, size_t dh_row,
                      size_t dz_es) {
    size_t z = (size_t)vb * es;
    size_t fwd = z + fwd_extra(es);
    size_t bwd = z + (size_t)vb * dz_es + LOCAL_TARGET_BYTES + (has_bias ? es : 0) + dh_row +
                 GATHER_ROW(es);
    return (fwd > bwd ? fwd : bwd) + conv_row;
}

/* The most either pass holds: a chunk gathered across ignored rows takes the
 * several-blocks path (the merge buffers) even with one block. */
static void plan_bytes(tg_linear_logprob_plan *p, size_t es, bool has_bias, size_t conv_row,
                       size_t dh_row, size_t conv_vocab, size_t dz_es) {
    const size_t c = (size_t)p->chunk_rows, z = c * (size_t)p->vocab_block * es;
    const size_t conv = c * conv_row + (size_t)p->vocab_block * conv_vocab;
    p->forward_workspace = z + c * fwd_extra(es) + conv;
    p->backward_workspace = z + c * (size_t)p->vocab_block * dz_es + c * 8 +
                            (has_bias ? c * es : 0) + conv + c * (dh_row + GATHER_ROW(es));
}

tg_status tg_linear_logprob_plan_for(int64_t N, int64_t d, int64_t V, tg_dtype dt, bool has_bias,
                                     const tg_linear_logprob_opts *opts,
                                     tg_linear_logprob_plan *plan) {
    const char *who = "tg_linear_logprob_plan_for";
    if (tg__null_arg(plan, who, "plan")) return tg_last_status();
    memset(plan, 0, sizeof *plan);
    tg_linear_logprob_opts o = opts ? *opts : tg_linear_logprob_opts_default();
    if (dt != TG_F32 && dt != TG_F64 && dt != TG_BF16)
        return tg__set_error(TG_ERR_DTYPE, "%s: dtype must be f32, f64 or bf16, got %s", who,
                             tg_dtype_name(dt));
    if (N < 0 || d < 1 || V < 1)
        return tg__set_error(TG_ERR_VALUE, "%s: need N >= 0, d >= 1 and V >= 1, got N %lld, "
                             "d %lld, V %lld", who, (long long)N, (long long)d, (long long)V);
    if (o.chunk_rows < 0 || o.vocab_block < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: chunk_rows and vocab_block must be >= 0, got "
                             "%lld and %lld", who, (long long)o.chunk_rows,
                             (long long)o.vocab_block);
    if (o.device != TG_CPU && o.device != TG_CUDA)
        return tg__set_error(TG_ERR_DEVICE, "%s: unknown device %d", who, (int)o.device);
    const bool bf = dt == TG_BF16, tc = bf && tg__k_has_bf16_gemm(o.device);
    const size_t B = o.workspace_bytes ? o.workspace_bytes
                                       : tg_linear_logprob_default_workspace(o.device);
    const size_t es = bf ? 4 : tg_dtype_size(dt), dz_es = tc ? 2 : 0;
    /* every chunk's rows of hidden gathered (converted) into a buffer */
    const size_t crow = (size_t)d * (tc ? 2 : es), dhrow = (size_t)d * es;
    const size_t cvoc = tc ? (has_bias ? 4 : 0) : bf ? (size_t)(d + 1) * 4 : 0;
    const int64_t nmax = N > 0 ? N : 1;
    int64_t c = o.chunk_rows > 0 ? (o.chunk_rows < nmax ? o.chunk_rows : nmax) : 0;
    int64_t vb = o.vocab_block > 0 ? (o.vocab_block < V ? o.vocab_block : V) : 0;
    if (!c || !vb) {
        const size_t least = per_row(1, es, has_bias, crow, dhrow, dz_es) + cvoc;
        if (B < least && (!c || !vb))
            return tg__set_error(TG_ERR_VALUE, "%s: workspace_bytes %zu cannot hold one row of "
                                 "one vocabulary entry (%s, d %lld): give at least %zu", who, B,
                                 tg_dtype_name(dt), (long long)d, least);
    }
    if (!vb) {
        /* the whole vocabulary when enough rows fit, else blocks of it. With
         * bf16 every chunk converts the whole weight again (its blocks' f32
         * copies): chunks of d rows, where the logits block and the weight
         * block take the same room, keep that conversion to about 1/d of the
         * GEMMs' work (128-row chunks made it a quarter of the step) */
        const int64_t goal = bf && !tc && d > MIN_CHUNK ? d : MIN_CHUNK;
        const int64_t least = c ? c : (nmax < MIN_CHUNK ? nmax : MIN_CHUNK);
        if ((size_t)least * per_row(V, es, has_bias, crow, dhrow, dz_es) + (size_t)V * cvoc <= B) {
            vb = V;
        } else {
            const int64_t want = c ? c : (nmax < goal ? nmax : goal);
            /* rows * (vb es + extra) + vb cvoc <= B */
            const size_t extra = per_row(0, es, has_bias, crow, dhrow, dz_es);
            int64_t rows = want;
            while (rows > 1 && B < (size_t)rows * (extra + es + dz_es) + cvoc) rows /= 2;
            for (;;) {
                vb = B > (size_t)rows * extra
                         ? (int64_t)((B - (size_t)rows * extra) /
                                     ((size_t)rows * (es + dz_es) + cvoc))
                         : 0;
                if (vb < 1) vb = 1;
                if (vb >= V) vb = V > 1 ? V - 1 : 1; /* several blocks were needed */
                vb = (V + (V + vb - 1) / vb - 1) / ((V + vb - 1) / vb); /* as many, even */
                /* tensor cores: blocks of a multiple of 8 columns keep every
                 * row of Z and dZ on 16-byte boundaries (vector kernels, GEMM
                 * leading dimensions) */
                if (tc && vb > 8) vb -= vb % 8;
                /* d rows beside a sliver of the vocabulary: fewer rows (not
                 * below 128), a block at least as wide as the chunk is tall */
                if (c || rows <= MIN_CHUNK || vb >= rows) break;
                rows = rows / 2 > MIN_CHUNK ? rows / 2 : MIN_CHUNK;
            }
            if (!c) c = rows;
        }
    }
    const int64_t nb = (V + vb - 1) / vb;
    if (!c) {
        const size_t fixed = (size_t)vb * cvoc;
        int64_t fit = B > fixed ? (int64_t)((B - fixed) / per_row(vb, es, has_bias, crow, dhrow, dz_es)) : 0;
        c = fit < 1 ? 1 : (fit < nmax ? fit : nmax);
    }
    plan->chunk_rows = c;
    plan->vocab_block = vb;
    plan->n_blocks = nb;
    plan->saved_per_row = o.want_entropy && o.entropy_grad ? 24 : 16;
    plan_bytes(plan, es, has_bias, crow, dhrow, cvoc, dz_es);
    return TG_OK;
}

/* ---- what forward and backward share ------------------------------------------- */

/* The call's operands as the loop reads them. */
typedef struct lin_inputs {
    tg_site s;
    tg_tensor *h;        /* (N, d) rows of hidden (a view of the contiguous input) */
    tg_tensor *w;        /* (V, d) contiguous */
    tg_tensor *b;        /* (V) contiguous, or NULL */
    tg_tensor *y;        /* (N) contiguous targets */
    const int64_t *yh;   /* (N) the targets on the host */
    void *y_owned;
    int64_t N, d, V, ignore;
    double inv_t;
    tg_dtype dt;         /* the compute dtype: the inputs', f32 for bf16 inputs */
    tg_dtype in_dt;      /* the inputs' dtype */
    tg_device dev;
    size_t es;           /* dt's size */
} lin_inputs;

/* How the GEMMs read the operands. bf16 inputs on a device with bf16 GEMMs
 * (tg__k_has_bf16_gemm, `tc`): h and W are read as bf16 by the GEMMs (f32
 * sums into f32 logits), no f32 copy of them is made, and backward rounds
 * each block's dZ to bf16 (dz16) for the dh and dW GEMMs, as PyTorch's
 * autocast does. */
typedef struct lin_gemm {
    bool tc;
    tg_dtype mm_dt;      /* the GEMMs' operand dtype: bf16 with tc, else dt */
    size_t hes;          /* the size of an element of hp / wp (mm_dt's) */
} lin_gemm;

/* The loop's workspace (freed by lin_free_workspace before backward's
 * gradients are made). */
typedef struct lin_buffers {
    tg_tensor *zbuf;     /* (chunk_rows * vocab_block) the logits */
    tg_tensor *dz16;     /* tc backward: (chunk_rows * vocab_block) bf16 */
    /* bf16 inputs: f32 copies of the current chunk's rows and block's weight
     * rows and bias; NULL otherwise */
    tg_tensor *hbuf;     /* (chunk_rows * d), mm_dt: gathered rows (any dtype) */
    tg_tensor *wbuf;     /* (vocab_block * d), without tc */
    tg_tensor *bbuf;     /* (vocab_block) */
    int64_t *rows;       /* (chunk_rows) a gathered chunk's rows (see for_chunks) */
} lin_buffers;

/* Where the loop is: the current chunk's rows and block's weights. */
typedef struct lin_cursor {
    char *hp;            /* the current chunk's rows (c, d), mm_dt: in h or hbuf */
    char *wp;            /* the current block's weight rows (vb, d), mm_dt: in w or wbuf */
    tg_tensor *bcur;     /* the current block's bias (vb), dt, or NULL */
} lin_cursor;

/* Vocab-parallel: the communicator, what the agreement established, this
 * rank's first vocabulary row (0 in one process) and the exchange's state. */
typedef struct lin_parallel {
    tg_comm *comm;
    const tg__vp *vp;
    int64_t vstart;
    tg__lpe_acc *accs;   /* (N) this rank's part of every row (xb.mine) */
    tg__vp_buf xb;       /* the statistics exchange's buffers */
    tg_tensor *stage;    /* on the CPU: (N, STAGE_COLS) f64, the merged rows,
                          * allocated before the exchange */
} lin_parallel;

/* The fused linear op's loop state. */
typedef struct lin {
    lin_inputs in;
    lin_gemm gemm;
    tg_linear_logprob_plan plan;
    lin_buffers buf;
    lin_cursor cur;
    lin_parallel par;
} lin;

static void rel(tg_tensor *t) {
    if (t) tg__tensor_release(t);
}

/* Releases the loop's buffers (before backward's bf16 gradients are made:
 * those then take the workspace's place rather than adding to it). */
static void lin_free_workspace(lin *L) {
    tg_tensor **ws[6] = {&L->buf.zbuf, &L->buf.dz16, &L->buf.hbuf, &L->buf.wbuf, &L->buf.bbuf, &L->cur.bcur};
    for (int k = 0; k < 6; k++) {
        rel(*ws[k]);
        *ws[k] = NULL;
    }
}

static void lin_done(lin *L) {
    rel(L->in.h);
    rel(L->in.w);
    rel(L->in.b);
    rel(L->in.y);
    rel(L->buf.zbuf);
    rel(L->buf.hbuf);
    rel(L->buf.wbuf);
    rel(L->buf.bbuf);
    rel(L->buf.dz16);
    rel(L->cur.bcur);
    free(L->in.y_owned);
    tg__vp_buf_free(&L->par.xb);
    rel(L->par.stage);
    free(L->buf.rows);
}

/* A 2-D or 1-D alias of t's storage. */
static tg_tensor *alias2(const lin *L, const tg_tensor *t, int64_t off, int64_t rows,
                         int64_t cols, int64_t rs) {
    if (cols < 0)
        return tg__tensor_alias(L->in.s, t->storage, t->dtype, 1, &rows, (int64_t[]){rs},
                                t->offset + off);
    return tg__tensor_alias(L->in.s, t->storage, t->dtype, 2, (int64_t[]){rows, cols},
                            (int64_t[]){rs, 1}, t->offset + off);
}

/* A workspace tensor on dev. */
static tg_tensor *ws_new(const lin *L, tg_device dev, tg_dtype dt, int ndim, const int64_t *shape) {
    return tg__tensor_new_on(L->in.s, WHO, dev, dt, ndim, shape, TG_MEM_WORKSPACE);
}

/* rows [r0, r0 + c) of src (a 2-D (n, k) contiguous tensor, or 1-D) copied
 * (converted) into the front of buf; returns buf's data. NULL on failure. */
static char *convert_rows(const lin *L, tg_tensor *buf, const tg_tensor *src, int64_t r0,
                          int64_t c) {
    const int64_t k = src->ndim == 2 ? src->shape[1] : -1;
    tg_tensor *from = alias2(L, src, r0 * (k > 0 ? k : 1), c, k, k > 0 ? k : 1);
    tg_tensor *to = from ? alias2(L, buf, 0, c, k, k > 0 ? k : 1) : NULL;
    tg_status st = to ? tg__k_copy(to, from) : tg_last_status();
    rel(from);
    rel(to);
    return st == TG_OK ? tg__ptr(buf) : NULL;
}

/* ---- chunks --------------------------------------------------------------------
 * A chunk is c kept rows: the rows [r0, r0 + c) when they follow each other
 * (r0 >= 0), or, when ignored rows fall between them, the rows L->buf.rows[0..c)
 * (r0 == -1: "gathered"), whose per-row data is gathered into buffers. */

/* The global row of chunk row i. */
static inline int64_t row_of(const lin *L, int64_t r0, int64_t i) {
    return r0 >= 0 ? r0 + i : L->buf.rows[i];
}

/* Copies between chunk rows and global rows, run by run of consecutive rows:
 * to_chunk: dst (c[, k]) chunk rows <- src (N[, k]) global rows; else the
 * reverse. Tensors are 1-D (any stride) or 2-D row-major. */
static tg_status move_rows(const lin *L, int64_t r0, int64_t c, tg_tensor *chunk_t,
                           tg_tensor *global_t, bool to_chunk) {
    tg_status st = TG_OK;
    for (int64_t i = 0; st == TG_OK && i < c;) {
        int64_t j = i + 1;
        while (j < c && row_of(L, r0, j) == row_of(L, r0, i) + (j - i)) j++;
        const int64_t g = row_of(L, r0, i), n = j - i;
        tg_tensor *views[2] = {NULL, NULL}, *ts[2] = {chunk_t, global_t};
        const int64_t at[2] = {i, g};
        for (int k = 0; k < 2; k++) {
            const tg_tensor *t = ts[k];
            views[k] = t->ndim == 2 ? alias2(L, t, at[k] * t->strides[0], n, t->shape[1],
                                             t->strides[0])
                                    : alias2(L, t, at[k] * t->strides[0], n, -1, t->strides[0]);
        }
        st = views[0] && views[1] ? tg__k_copy(views[to_chunk ? 0 : 1], views[to_chunk ? 1 : 0])
                                  : tg_last_status();
        rel(views[0]);
        rel(views[1]);
        i = j;
    }
    return st;
}

/* Makes the chunk's rows of hidden current (L->cur.hp): in place when they
 * follow each other (and need no conversion), else gathered (converted)
 * into the buffer. */
static tg_status load_chunk(lin *L, int64_t r0, int64_t c) {
    if (r0 >= 0 && (L->in.in_dt != TG_BF16 || L->gemm.tc)) {
        L->cur.hp = (char *)tg__ptr(L->in.h) + (size_t)(r0 * L->in.d) * L->gemm.hes;
        return TG_OK;
    }
    tg_tensor *buf = alias2(L, L->buf.hbuf, 0, c, L->in.d, L->in.d);
    tg_status st = buf ? move_rows(L, r0, c, buf, L->in.h, true) : tg_last_status();
    rel(buf);
    L->cur.hp = tg__ptr(L->buf.hbuf);
    return st;
}

/* Makes the block [v0, v0 + vb) of W (and b) current, converting bf16. */
static tg_status load_block(lin *L, int64_t v0, int64_t vb) {
    rel(L->cur.bcur);
    L->cur.bcur = NULL;
    if (!L->buf.wbuf) {
        L->cur.wp = (char *)tg__ptr(L->in.w) + (size_t)(v0 * L->in.d) * L->gemm.hes;
        if (L->in.b && !L->buf.bbuf && !(L->cur.bcur = alias2(L, L->in.b, v0, vb, -1, 1)))
            return tg_last_status();
    } else if (!(L->cur.wp = convert_rows(L, L->buf.wbuf, L->in.w, v0, vb))) {
        return tg_last_status();
    }
    if (L->buf.bbuf) {
        if (!convert_rows(L, L->buf.bbuf, L->in.b, v0, vb) ||
            !(L->cur.bcur = alias2(L, L->buf.bbuf, 0, vb, -1, 1)))
            return tg_last_status();
    }
    return TG_OK;
}

/* Z (c, vb) = h[chunk] @ W[block]^T (+ b[block]) for the current chunk and
 * block (load_chunk, load_block), as a view of the workspace; NULL with the
 * error set. */
static tg_tensor *block_logits(const lin *L, int64_t c, int64_t vb) {
    tg_tensor *Z = tg__tensor_alias(L->in.s, L->buf.zbuf->storage, L->in.dt, 2, (int64_t[]){c, vb},
                                    (int64_t[]){vb, 1}, 0);
    if (!Z) return NULL;
    tg__mat a = {0}, bm = {0}, cm = {0};
    a.data = L->cur.hp;
    a.rows = c, a.cols = L->in.d, a.rs = L->in.d, a.cs = 1;
    bm.data = L->cur.wp; /* W[block]^T (d, vb) */
    bm.rows = L->in.d, bm.cols = vb, bm.rs = 1, bm.cs = L->in.d;
    cm.data = tg__ptr(Z);
    cm.rows = c, cm.cols = vb, cm.rs = vb, cm.cs = 1;
    tg_status st = tg__k_matmul(L->in.dev, WHO, L->gemm.mm_dt, 0, NULL, &a, &bm, &cm, false, false);
    if (st == TG_OK && L->cur.bcur) st = tg__k_binary(TG__BIN_ADD, Z, Z, L->cur.bcur, 0, 0);
    return tg__k_ok(st, Z);
}

/* The buffer a chunk's rows of hidden are gathered into, the list of its
 * rows, and, for bf16 inputs, the f32 buffers of a block's weight rows. */
static tg_status conv_buffers(lin *L) {
    const int64_t hn = L->plan.chunk_rows * L->in.d, wn = L->plan.vocab_block * L->in.d;
    if (!(L->buf.hbuf = ws_new(L, L->in.dev, L->gemm.mm_dt, 1, &hn))) return tg_last_status();
    if (!(L->buf.rows = tg__xmalloc((size_t)L->plan.chunk_rows * sizeof *L->buf.rows)))
        return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", WHO);
    if (L->in.in_dt != TG_BF16) return TG_OK;
    if ((!L->gemm.tc && !(L->buf.wbuf = ws_new(L, L->in.dev, TG_F32, 1, &wn))) ||
        (L->in.b && !(L->buf.bbuf = ws_new(L, L->in.dev, TG_F32, 1, &L->plan.vocab_block))))
        return tg_last_status();
    return TG_OK;
}

/* Local targets of rows [r0, r0 + c) for the block [v0, v0 + vb): y - v0
 * when inside, else `outside`; a new (c) i64 tensor on L->in.dev. */
static tg_tensor *local_targets(const lin *L, int64_t r0, int64_t c, int64_t v0, int64_t vb,
                                int64_t outside) {
    tg_tensor *hst = ws_new(L, TG_CPU, TG_I64, 1, &c);
    if (!hst) return NULL;
    int64_t *t = tg__ptr(hst);
    for (int64_t i = 0; i < c; i++) {
        const int64_t y = L->in.yh[row_of(L, r0, i)] - L->par.vstart; /* in this rank's vocabulary */
        t[i] = y >= v0 && y < v0 + vb ? y - v0 : outside;
    }
    if (L->in.dev == TG_CPU) return hst;
    tg_mem_category prev = tg__set_category_override(TG_MEM_WORKSPACE);
    tg_tensor *dv = tg__device_copy(L->in.s, WHO, hst, L->in.dev);
    tg__set_category_override(prev);
    rel(hst);
    return dv;
}

/* Calls fn(L, r0, c, arg) for each chunk of c kept rows (the next
 * chunk_rows of them, in order; r0 as above); stops at the first failure
 * and returns it. Ignored rows are in no chunk: never multiplied. */
typedef tg_status (*chunk_fn)(lin *L, int64_t r0, int64_t c, void *arg);
static tg_status for_chunks(lin *L, chunk_fn fn, void *arg) {
    int64_t i = 0;
    while (i < L->in.N) {
        int64_t c = 0;
        while (i < L->in.N && c < L->plan.chunk_rows) {
            if (L->in.yh[i] != L->in.ignore) L->buf.rows[c++] = i;
            i++;
        }
        if (!c) break;
        const bool together = L->buf.rows[c - 1] - L->buf.rows[0] == c - 1;
        tg_status st = fn(L, together ? L->buf.rows[0] : -1, c, arg);
        if (st != TG_OK) return st;
    }
    return TG_OK;
}

/* The error for a rejected entry of Z (rows from r0, entries from v0). */
static tg_status bad_entry(const lin *L, const tg_tensor *Z, tg__lpe_bad *bad, int64_t r0,
                           int64_t v0, int64_t vb) {
    if (tg__lpe_locate_bad(WHO, Z, bad, L->in.inv_t) != TG_OK) return tg_last_status();
    if (bad->col < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: row %lld: every logit of vocabulary entries "
                             "[%lld, %lld) is -inf (a row needs a finite logit; give it "
                             "ignore_index)", WHO, (long long)row_of(L, r0, bad->row), (long long)v0,
                             (long long)(v0 + vb));
    return tg__set_error(TG_ERR_VALUE, "%s: row %lld: the logit of vocabulary entry %lld "
                         "(hidden row %lld . weight row %lld%s) is %g (logits must be finite "
                         "or -inf)", WHO, (long long)row_of(L, r0, bad->row),
                         (long long)(v0 + bad->col), (long long)row_of(L, r0, bad->row),
                         (long long)(v0 + bad->col), L->in.b ? " + bias" : "", bad->value);
}

/* ---- forward --------------------------------------------------------------------- */

typedef struct fwd_out {
    tg_tensor *lp, *H, *st; /* (N), (N) or NULL, (N, nstat) or NULL */
    int nstat;
} fwd_out;

/* rows [r0, r0 + c) of a 1-D (or (N, k)) output */
static tg_tensor *out_rows(const lin *L, tg_tensor *t, int64_t r0, int64_t c) {
    if (!t) return NULL;
    if (t->ndim == 2)
        return alias2(L, t, r0 * t->shape[1], c, t->shape[1], t->shape[1]);
    return alias2(L, t, r0, c, -1, 1);
}

/* One block: the outputs directly from the fused kernel. */
static tg_status fwd_one_block(lin *L, int64_t r0, int64_t c, fwd_out *o) {
    tg_tensor *Z = load_block(L, 0, L->in.V) == TG_OK ? block_logits(L, c, L->in.V) : NULL;
    tg_tensor *y = Z ? alias2(L, L->in.y, r0, c, -1, 1) : NULL;
    tg_tensor *lp = y ? out_rows(L, o->lp, r0, c) : NULL;
    tg_tensor *H = lp && o->H ? out_rows(L, o->H, r0, c) : NULL;
    tg_tensor *st = lp && o->st ? out_rows(L, o->st, r0, c) : NULL;
    tg_status rc = TG_ERR_NOMEM;
    if (lp && (!o->H || H) && (!o->st || st)) {
        tg__lpe_bad bad;
        rc = tg__k_lpe_forward(Z, y, L->in.ignore, L->in.inv_t, 0, lp, H, st, o->nstat, &bad);
        if (rc == TG_OK && bad.row >= 0) rc = bad_entry(L, Z, &bad, r0, 0, L->in.V);
    } else {
        rc = tg_last_status();
    }
    tg_tensor *all[5] = {Z, y, lp, H, st};
    for (int k = 0; k < 5; k++) rel(all[k]);
    return rc;
}

/* Adds block statistics st_b (c, 3) and target logits zy (c) of the block
 * [v0, v0 + vb) of this rank's vocabulary rows to the rows' accumulators. */
static void merge(const lin *L, int64_t r0, int64_t c, int64_t v0, int64_t vb, const double *st_b,
                  const void *zy, tg__lpe_acc *acc) {
    for (int64_t i = 0; i < c; i++) {
        if (isnan(st_b[3 * i + 1])) continue; /* all -inf in this block: an empty part */
        const tg__lpe_acc b = tg__lpe_acc_of(st_b[3 * i], st_b[3 * i + 1], st_b[3 * i + 2]);
        tg__lpe_acc_add(&acc[i], &b, L->in.inv_t);
        const int64_t y = L->in.yh[row_of(L, r0, i)] - L->par.vstart;
        if (y >= v0 && y < v0 + vb)
            acc[i].zy = L->in.dt == TG_F32 ? (double)((const float *)zy)[i] : ((const double *)zy)[i];
    }
}

/* Host values of a (CPU or device) workspace tensor; *owned to free(). */
static const void *host_of(const tg_tensor *t, void **owned) {
    int64_t lo;
    const void *p = tg__host_elems(WHO, t, owned, &lo);
    return p ? (const char *)p + (size_t)(t->offset - lo) * tg_dtype_size(t->dtype) : NULL;
}

/* The rows' accumulators over this rank's vocabulary, block by block:
 * acc (c) starts empty. */
/* After the kernel reported a row of Z: every row whose statistics it left
 * unwritten (NaN) is looked at; a NaN or +inf logit is the error, a row all
 * -inf in this block is an empty part (other blocks may hold its finite
 * logits; a row empty in every block is refused at the end). */
static tg_status empty_parts(const lin *L, const tg_tensor *Z, int64_t r0, int64_t c, int64_t v0,
                             int64_t vb, const double *sh) {
    for (int64_t i = 0; i < c; i++) {
        if (!isnan(sh[3 * i + 1])) continue;
        tg__lpe_bad b = {i, TG__LPE_COL_UNKNOWN, 0.0};
        if (tg__lpe_locate_bad(WHO, Z, &b, L->in.inv_t) != TG_OK) return tg_last_status();
        if (b.col >= 0) return bad_entry(L, Z, &b, r0, v0, vb);
    }
    return TG_OK;
}

static tg_status blocks_acc(lin *L, int64_t r0, int64_t c, tg__lpe_acc *acc) {
    const int64_t vbs = L->plan.vocab_block;
    tg_tensor *lpb = ws_new(L, L->in.dev, L->in.dt, 1, &c);                              // (c)
    tg_tensor *stb = lpb ? ws_new(L, L->in.dev, TG_F64, 2, (int64_t[]){c, 3}) : NULL; // (c, 3)
    tg_tensor *zyb = stb ? ws_new(L, L->in.dev, L->in.dt, 2, (int64_t[]){c, 1}) : NULL;  // (c, 1)
    tg_status rc = zyb ? TG_OK : tg_last_status();
    for (int64_t v0 = 0; rc == TG_OK && v0 < L->in.V; v0 += vbs) {
        const int64_t vb = L->in.V - v0 < vbs ? L->in.V - v0 : vbs;
        /* in-block targets, 0 elsewhere: the gather reads a valid entry, the
         * statistics do not depend on the targets */
        tg_tensor *idx = local_targets(L, r0, c, v0, vb, 0);
        tg_tensor *Z = idx && load_block(L, v0, vb) == TG_OK ? block_logits(L, c, vb) : NULL;
        tg_tensor *idx2 = Z ? alias2(L, idx, 0, c, 1, 1) : NULL;
        rc = idx2 ? TG_OK : tg_last_status();
        tg__lpe_bad bad = {-1, -1, 0.0};
        if (rc == TG_OK) rc = tg__k_fill(stb, NAN); /* rows the kernel refuses stay NaN */
        if (rc == TG_OK)
            rc = tg__k_lpe_forward(Z, idx, INT64_MIN, L->in.inv_t, 0, lpb, NULL, stb, 3, &bad);
        if (rc == TG_OK) rc = tg__k_gather_forward(Z, idx2, zyb);
        void *own1 = NULL, *own2 = NULL;
        const double *sh = rc == TG_OK ? host_of(stb, &own1) : NULL;
        const void *zh = sh ? host_of(zyb, &own2) : NULL;
        if (rc == TG_OK && !zh) rc = tg_last_status();
        if (rc == TG_OK && bad.row >= 0) rc = empty_parts(L, Z, r0, c, v0, vb, sh);
        if (rc == TG_OK) merge(L, r0, c, v0, vb, sh, zh, acc);
        free(own1);
        free(own2);
        rel(idx2);
        rel(Z);
        rel(idx);
    }
    rel(lpb);
    rel(stb);
    rel(zyb);
    return rc;
}

static tg_status all_minus_inf(int64_t row) {
    return tg__set_error(TG_ERR_VALUE, "%s: row %lld: every logit is -inf (the row has no valid "
                         "token; give it ignore_index)", WHO, (long long)row);
}

/* The staged outputs (c, 5) of a chunk's rows written to those rows of the
 * outputs, run by run. */
static tg_status put_chunk_rows(lin *L, int64_t r0, int64_t c, tg_tensor *stage, fwd_out *o) {
    if (r0 >= 0) return tg__lpe_put_rows(L->in.s, WHO, stage, r0, o->lp, o->H, o->st, o->nstat);
    tg_status st = TG_OK;
    for (int64_t i = 0; st == TG_OK && i < c;) {
        int64_t j = i + 1;
        while (j < c && L->buf.rows[j] == L->buf.rows[i] + (j - i)) j++;
        tg_tensor *run = alias2(L, stage, i * STAGE_COLS, j - i, STAGE_COLS, STAGE_COLS);
        st = run ? tg__lpe_put_rows(L->in.s, WHO, run, L->buf.rows[i], o->lp, o->H, o->st, o->nstat)
                 : tg_last_status();
        rel(run);
        i = j;
    }
    return st;
}

/* Several blocks (or gathered rows): the rows' accumulators, their outputs
 * staged as (c, 5) f64 and written to the rows. */
static tg_status fwd_blocks(lin *L, int64_t r0, int64_t c, fwd_out *o) {
    tg_tensor *state = ws_new(L, TG_CPU, TG_F64, 2, (int64_t[]){c, 4}); // (c, 4)
    tg_status rc = state ? TG_OK : tg_last_status();
    tg__lpe_acc *acc = state ? tg__ptr(state) : NULL;
    if (acc) memset(acc, 0, (size_t)c * sizeof *acc);
    if (rc == TG_OK) rc = blocks_acc(L, r0, c, acc);
    for (int64_t i = 0; rc == TG_OK && i < c; i++)
        if (acc[i].S == 0.0) rc = all_minus_inf(row_of(L, r0, i));
    tg_tensor *stage = rc == TG_OK ? ws_new(L, TG_CPU, TG_F64, 2, (int64_t[]){c, STAGE_COLS})
                                   : NULL;
    if (rc == TG_OK && !stage) rc = tg_last_status();
    if (rc == TG_OK) {
        double *g = tg__ptr(stage);
        for (int64_t i = 0; i < c; i++) {
            double *r = g + STAGE_COLS * i;
            tg__lpe_acc_finish(&acc[i], L->in.inv_t, &r[0], &r[1], &r[3]);
            r[2] = acc[i].M;
            r[4] = r[1];
        }
    }
    rel(state);
    if (rc == TG_OK) rc = put_chunk_rows(L, r0, c, stage, o);
    rel(stage);
    return rc;
}

static tg_status fwd_chunk(lin *L, int64_t r0, int64_t c, void *arg) {
    tg_status st = load_chunk(L, r0, c);
    if (st != TG_OK) return st;
    if (L->par.accs && r0 >= 0) return blocks_acc(L, r0, c, L->par.accs + r0); /* merged later */
    if (L->par.accs) { /* gathered rows: their accumulators to their places */
        tg__lpe_acc *acc = tg__xcalloc((size_t)c, sizeof *acc);
        if (!acc) return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", WHO);
        st = blocks_acc(L, r0, c, acc);
        for (int64_t i = 0; st == TG_OK && i < c; i++) L->par.accs[L->buf.rows[i]] = acc[i];
        free(acc);
        return st;
    }
    return L->plan.n_blocks == 1 && r0 >= 0 ? fwd_one_block(L, r0, c, arg)
                                            : fwd_blocks(L, r0, c, arg);
}

/* Vocab-parallel, after the chunks: every rank's accumulators of every row
 * in one exchange (made whatever this rank's status rc: a failure here fails
 * every rank), merged in rank order and written to the outputs. */
static tg_status vp_finish(lin *L, tg_status rc, fwd_out *o) {
    rc = tg__vp_exchange(L->par.comm, WHO, rc, &L->par.xb);
    const tg__lpe_acc *all = L->par.xb.all;
    for (int64_t i = 0; rc == TG_OK && i < L->in.N; i++) { /* a row empty on every rank */
        if (L->in.yh[i] == L->in.ignore) continue;
        double S = 0.0;
        for (int r = 0; r < L->par.vp->P; r++) S += all[(size_t)r * (size_t)L->in.N + (size_t)i].S;
        if (S == 0.0) rc = all_minus_inf(i);
    }
    if (rc == TG_OK && L->par.stage) { /* the CPU: written without allocating */
        const double *m = tg__ptr(L->par.stage);
        tg__vp_merge(L->par.vp, L->in.yh, L->in.ignore, all, L->in.N, L->in.inv_t, (double *)tg__ptr(L->par.stage));
        tg__vp_put_rows_host(m, L->in.N, o->lp, o->H, o->st, o->nstat);
        return TG_OK;
    }
    tg_tensor *stage = rc == TG_OK ? ws_new(L, TG_CPU, TG_F64, 2, (int64_t[]){L->in.N, STAGE_COLS})
                                   : NULL;
    if (rc == TG_OK && !stage) rc = tg_last_status();
    if (rc == TG_OK) {
        tg__vp_merge(L->par.vp, L->in.yh, L->in.ignore, all, L->in.N, L->in.inv_t, tg__ptr(stage));
        rc = tg__lpe_put_rows(L->in.s, WHO, stage, 0, o->lp, o->H, o->st, o->nstat);
    }
    rel(stage);
    return rc;
}

/* ---- backward ----------------------------------------------------------------------- */

/* Node parameters. */
enum { P_IGNORE = 0, P_NSTAT = 1, P_LSE_OUT = 2, P_HAS_BIAS = 3, /* iparam */
       P_COMM = 4, P_VSTART = 5 };  /* the communicator (NULL: one process), vocab_start */
enum { P_INV_T = 0, P_CHUNK = 1, P_VBLOCK = 2, P_GRAD_F32 = 3 };   /* dparam */
/* Saved slots: hidden (contiguous), weight, targets (N) contiguous, stats
 * (N, nstat) f64, bias (when given). */
enum { S_H = 0, S_W = 1, S_Y = 2, S_ST = 3, S_B = 4 };

typedef struct bwd_ctx {
    tg_tensor *st;               /* (N, nstat) saved statistics */
    int nstat;
    tg_tensor *glp, *gH, *glse;  /* (N) upstream gradients or NULL */
    tg_tensor *dh, *dw, *db;     /* gradients being accumulated, or NULL */
    tg_tensor *ones;             /* (c) ones for db, or NULL */
} bwd_ctx;

/* c += a @ b, the operands of dtype dt (bf16: into f32 c). */
static tg_status gemm_acc(const lin *L, tg_dtype dt, const tg__mat *a, const tg__mat *b,
                          const tg__mat *c) {
    return tg__k_matmul(L->in.dev, "LinearLogprobEntropyBackward", dt, 0, NULL, a, b, c, false, true);
}

/* tc: the bf16 buffer of dZ as a (c, vb) tensor. */
static tg_tensor *dz16_view(const lin *L, int64_t c, int64_t vb) {
    return tg__tensor_alias(L->in.s, L->buf.dz16->storage, TG_BF16, 2, (int64_t[]){c, vb},
                            (int64_t[]){vb, 1}, 0);
}

/* tc: dZ (c, vb) f32 rounded into the bf16 buffer (the dh and dW GEMMs'
 * operand); returns its data, NULL with the error set. */
static char *round_dz(const lin *L, const tg_tensor *Z, int64_t c, int64_t vb) {
    tg_tensor *d16 = dz16_view(L, c, vb);
    tg_status st = d16 ? tg__k_copy(d16, Z) : tg_last_status();
    rel(d16);
    return st == TG_OK ? tg__ptr(L->buf.dz16) : NULL;
}

static tg__mat mat(void *data, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    tg__mat m;
    memset(&m, 0, sizeof m);
    m.data = data, m.rows = rows, m.cols = cols, m.rs = rs, m.cs = cs;
    return m;
}

/* A gathered chunk's rows of a per-row tensor t ((N) or (N, k)): a new
 * workspace tensor (c) or (c, k) of t's dtype. */
static tg_tensor *gather_of(lin *L, int64_t r0, int64_t c, tg_tensor *t) {
    tg_tensor *buf = t->ndim == 2 ? ws_new(L, L->in.dev, t->dtype, 2, (int64_t[]){c, t->shape[1]})
                                  : ws_new(L, L->in.dev, t->dtype, 1, &c);
    if (buf && move_rows(L, r0, c, buf, t, true) != TG_OK) {
        rel(buf);
        return NULL;
    }
    return buf;
}

static tg_status bwd_chunk(lin *L, int64_t r0, int64_t c, void *arg) {
    bwd_ctx *B = arg;
    const int64_t vbs = L->plan.vocab_block, d = L->in.d;
    const size_t es = L->in.es;
    tg_status rc = TG_OK;
    /* the chunk's statistics and upstream gradients: views, or gathered */
    tg_tensor *st = r0 >= 0 ? out_rows(L, B->st, r0, c) : gather_of(L, r0, c, B->st);
    tg_tensor *g[3] = {NULL, NULL, NULL}, *gsrc[3] = {B->glp, B->gH, B->glse};
    for (int k = 0; k < 3; k++)
        if (gsrc[k] && !(g[k] = r0 >= 0 ? alias2(L, gsrc[k], r0 * gsrc[k]->strides[0], c, -1,
                                                 gsrc[k]->strides[0])
                                        : gather_of(L, r0, c, gsrc[k])))
            rc = tg_last_status();
    if (!st) rc = tg_last_status();
    /* d hidden of gathered rows: summed in a buffer, then put in their rows */
    tg_tensor *dhb = r0 < 0 && B->dh && rc == TG_OK
                         ? ws_new(L, L->in.dev, L->in.dt, 2, (int64_t[]){c, d})
                         : NULL;
    if (r0 < 0 && B->dh && rc == TG_OK) rc = dhb ? tg__k_fill(dhb, 0.0) : tg_last_status();
    if (rc == TG_OK) rc = load_chunk(L, r0, c);
    for (int64_t v0 = 0; rc == TG_OK && v0 < L->in.V; v0 += vbs) {
        const int64_t vb = L->in.V - v0 < vbs ? L->in.V - v0 : vbs;
        tg_tensor *y = L->plan.n_blocks == 1 && !L->par.comm && r0 >= 0
                           ? alias2(L, L->in.y, r0, c, -1, 1)
                           : local_targets(L, r0, c, v0, vb, -1);
        tg_tensor *Z = y && load_block(L, v0, vb) == TG_OK ? block_logits(L, c, vb) : NULL;
        /* tc without a bias gradient: the kernel writes dZ rounded to bf16
         * straight into the GEMMs' buffer; else dZ replaces Z (f32) */
        const bool direct16 = L->gemm.tc && !B->db && (B->dh || B->dw) && tg__k_has_bf16_lpe(L->in.dev);
        tg_tensor *dZ = Z && direct16 ? dz16_view(L, c, vb) : (Z ? tg_retain(Z) : NULL);
        rc = dZ ? tg__k_lpe_backward(Z, y, INT64_MIN, L->in.inv_t, 0, st, B->nstat, g[0], g[1],
                                     g[2], dZ)
                : tg_last_status();
        rel(dZ);
        char *zp = Z ? tg__ptr(Z) : NULL;
        char *hp = L->cur.hp, *wp = L->cur.wp;
        /* the dh and dW GEMMs' dZ: Z itself, or its bf16 rounding (tc) */
        char *gz = rc == TG_OK && direct16                          ? tg__ptr(L->buf.dz16)
                   : rc == TG_OK && L->gemm.tc && (B->dh || B->dw) ? round_dz(L, Z, c, vb)
                                                              : zp;
        if (rc == TG_OK && !gz) rc = tg_last_status();
        if (rc == TG_OK && B->dh) { /* dh[chunk] (c, d) += dZ (c, vb) @ W[block] (vb, d) */
            tg__mat a = mat(gz, c, vb, vb, 1), b = mat(wp, vb, d, d, 1);
            tg__mat o = mat(dhb ? (char *)tg__ptr(dhb)
                                : (char *)tg__ptr(B->dh) + (size_t)(r0 * d) * es,
                            c, d, d, 1);
            rc = gemm_acc(L, L->gemm.mm_dt, &a, &b, &o);
        }
        if (rc == TG_OK && B->dw) { /* dW[block] (vb, d) += dZ^T (vb, c) @ h[chunk] (c, d) */
            tg__mat a = mat(gz, vb, c, 1, vb), b = mat(hp, c, d, d, 1);
            tg__mat o = mat((char *)tg__ptr(B->dw) + (size_t)(v0 * d) * es, vb, d, d, 1);
            rc = gemm_acc(L, L->gemm.mm_dt, &a, &b, &o);
        }
        if (rc == TG_OK && B->db) { /* db[block] (1, vb) += 1 (1, c) @ dZ (c, vb), in f32 */
            tg__mat a = mat(tg__ptr(B->ones), 1, c, c, 1), b = mat(zp, c, vb, vb, 1);
            tg__mat o = mat((char *)tg__ptr(B->db) + (size_t)v0 * es, 1, vb, vb, 1);
            rc = gemm_acc(L, L->in.dt, &a, &b, &o);
        }
        rel(Z);
        rel(y);
    }
    if (rc == TG_OK && dhb) { /* the chunk's rows of d hidden, each its own */
        tg_tensor *dh2 = alias2(L, B->dh, 0, L->in.N, d, d);
        rc = dh2 ? move_rows(L, r0, c, dhb, dh2, false) : tg_last_status();
        rel(dh2);
    }
    rel(dhb);
    for (int k = 0; k < 3; k++) rel(g[k]);
    rel(st);
    return rc;
}

/* The GEMMs' layout: L->in.in_dt, L->in.dt and L->in.dev set. */
static void gemm_layout(lin *L) {
    L->gemm.tc = L->in.in_dt == TG_BF16 && tg__k_has_bf16_gemm(L->in.dev);
    L->gemm.mm_dt = L->gemm.tc ? TG_BF16 : L->in.dt;
    L->gemm.hes = tg_dtype_size(L->gemm.mm_dt);
}

/* Fills L from the saved tensors (new references) for backward. */
static tg_status lin_from_node(tg__node *n, lin *L) {
    memset(L, 0, sizeof *L);
    L->in.s = n->site;
    tg_tensor *h = tg__node_saved(n, S_H);
    if (!h) return tg_last_status();
    L->in.d = h->shape[h->ndim - 1];
    L->in.N = tg__numel(h->ndim - 1, h->shape);
    L->in.h = alias2(L, h, 0, L->in.N, L->in.d, L->in.d);
    rel(h);
    if (!L->in.h || !(L->in.w = tg__node_saved(n, S_W)) || !(L->in.y = tg__node_saved(n, S_Y)) ||
        (n->iparam[P_HAS_BIAS] && !(L->in.b = tg__node_saved(n, S_B))))
        return tg_last_status();
    L->in.V = L->in.w->shape[0];
    L->in.in_dt = L->in.h->dtype;
    L->in.dt = L->in.in_dt == TG_BF16 ? TG_F32 : L->in.in_dt;
    L->in.es = tg_dtype_size(L->in.dt);
    L->in.dev = L->in.h->storage->device;
    gemm_layout(L);
    L->in.ignore = n->iparam[P_IGNORE];
    L->in.inv_t = n->dparam[P_INV_T];
    L->plan.chunk_rows = (int64_t)n->dparam[P_CHUNK];
    L->plan.vocab_block = (int64_t)n->dparam[P_VBLOCK];
    L->plan.n_blocks = (L->in.V + L->plan.vocab_block - 1) / L->plan.vocab_block;
    L->par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM];
    L->par.vstart = n->iparam[P_VSTART];
    L->in.yh = tg__lpe_targets_host(WHO, L->in.y, &L->in.y_owned);
    if (!L->in.yh) return tg_last_status();
    return L->in.N > 0 ? conv_buffers(L) : TG_OK;
}

static const char *const lin_name = "LinearLogprobEntropyBackward";

/* The backward's agreement, then (every rank ran its part) the all-reduce of
 * d hidden. skipped: no gradient reached the node on this rank (dh NULL). */
static tg_status vp_reduce_dh(lin *L, tg_status rc, bool want_h, bool skipped, tg_tensor *dh) {
    const int P = tg_comm_size(L->par.comm);
    tg__agree mine;
    const tg__agree *all = NULL;
    memset(&mine, 0, sizeof mine);
    if (rc != TG_OK) tg__agree_fail(&mine, lin_name, rc);
    mine.sig[0] = want_h;
    mine.sig[1] = skipped;
    tg_status st = tg__comm_agree(L->par.comm, lin_name, &mine, &all);
    for (int r = 1; st == TG_OK && r < P; r++) {
        if (all[r].sig[1] != all[0].sig[1])
            st = tg__set_error(TG_ERR_COMM, "%s: rank %d's backward %s a gradient to this node, "
                               "rank 0's %s (the same graph on every rank)", lin_name, r,
                               all[r].sig[1] ? "brought no" : "brought", all[0].sig[1] ? "did not"
                                                                                    : "did");
        else if (all[r].sig[0] != all[0].sig[0])
            st = tg__set_error(TG_ERR_COMM, "%s: rank %d %s d hidden, rank 0 %s (the same graph "
                               "on every rank)", lin_name, r, all[r].sig[0] ? "wants" : "does not want",
                               all[0].sig[0] ? "does" : "does not");
    }
    if (st == TG_OK && want_h && !skipped) st = tg__comm_allreduce_sum(L->par.comm, lin_name, dh);
    return st;
}

static tg_status lin_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    lin L;
    bwd_ctx B;
    memset(&B, 0, sizeof B);
    tg_status rc = lin_from_node(n, &L);
    const bool want_h = n->edge[0].kind != TG__EDGE_NONE, want_w = n->edge[1].kind != TG__EDGE_NONE;
    const bool want_b = n->iparam[P_HAS_BIAS] && n->edge[2].kind != TG__EDGE_NONE;
    B.nstat = (int)n->iparam[P_NSTAT];
    bool ok1 = true, ok2 = true, ok3 = true;
    if (rc == TG_OK && !(B.st = tg__node_saved(n, S_ST))) rc = tg_last_status();
    if (rc == TG_OK) {
        B.glp = tg__lpe_flat(L.in.s, gout[0], L.in.N, &ok1);
        B.gH = B.nstat == 3 ? tg__lpe_flat(L.in.s, gout[1], L.in.N, &ok2) : NULL;
        B.glse = n->iparam[P_LSE_OUT] >= 0
                     ? tg__lpe_flat(L.in.s, gout[n->iparam[P_LSE_OUT]], L.in.N, &ok3)
                     : NULL;
        if (!ok1 || !ok2 || !ok3) rc = tg_last_status();
    }
    const tg__meta *mh = &n->in_meta[0];
    if (rc == TG_OK && want_h && !(B.dh = tg__zeros_on(n->site, L.in.dev, L.in.dt, mh->ndim, mh->shape)))
        rc = tg_last_status();
    if (rc == TG_OK && want_w &&
        !(B.dw = tg__zeros_on(n->site, L.in.dev, L.in.dt, 2, (int64_t[]){L.in.V, L.in.d})))
        rc = tg_last_status();
    if (rc == TG_OK && want_b && !(B.db = tg__zeros_on(n->site, L.in.dev, L.in.dt, 1, &L.in.V)))
        rc = tg_last_status();
    if (rc == TG_OK && L.in.N > 0) {
        const int64_t zn = L.plan.chunk_rows * L.plan.vocab_block;
        if (!(L.buf.zbuf = ws_new(&L, L.in.dev, L.in.dt, 1, &zn))) rc = tg_last_status();
        if (rc == TG_OK && L.gemm.tc && (want_h || want_w) &&
            !(L.buf.dz16 = ws_new(&L, L.in.dev, TG_BF16, 1, &zn)))
            rc = tg_last_status();
        if (rc == TG_OK && want_b) {
            B.ones = ws_new(&L, L.in.dev, L.in.dt, 1, &L.plan.chunk_rows);
            rc = B.ones ? tg__k_fill(B.ones, 1.0) : tg_last_status();
        }
        if (rc == TG_OK && (want_h || want_w || want_b)) rc = for_chunks(&L, bwd_chunk, &B);
    }
    /* vocab-parallel: d hidden is the sum of every rank's part, one all-reduce,
     * after an agreement that makes a failure on one rank fail them all */
    L.par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM];
    if (L.par.comm) rc = vp_reduce_dh(&L, rc, want_h, false, B.dh);
    tg_tensor *keep[3] = {B.dh, B.dw, B.db};
    lin_free_workspace(&L);
    rel(B.ones);
    B.ones = NULL;
    /* bf16 inputs: the f32 accumulators become bf16 gradients, unless asked
     * for in f32 */
    for (int k = 0; k < 3 && rc == TG_OK; k++) {
        if (!keep[k] || L.in.in_dt != TG_BF16 || n->dparam[P_GRAD_F32] != 0) continue;
        tg_tensor *g16 = tg__new_output_on(n->site, lin_name, L.in.dev, TG_BF16, keep[k]->ndim,
                                           keep[k]->shape);
        if (g16) g16 = tg__k_ok(tg__k_copy(g16, keep[k]), g16);
        rel(keep[k]);
        keep[k] = g16;
        if (!g16) rc = tg_last_status();
    }
    for (int k = 0; k < 3; k++) {
        if (rc == TG_OK) gin[k] = keep[k];
        else rel(keep[k]);
    }
    rel(B.st);
    rel(B.glp);
    rel(B.gH);
    rel(B.glse);
    rel(B.ones);
    lin_done(&L);
    return rc;
}

/* The engine's call for a node whose backward does not run (tg__op_def.
 * not_run): this rank failed before it (st), or no gradient reached it
 * (TG_OK). Vocab-parallel, it makes the backward's agreement all the same,
 * as the other ranks' node does, so that they are told instead of waiting. */
static tg_status lin_not_run(tg__node *n, tg_status st) {
    lin L;
    memset(&L, 0, sizeof L);
    if (!(L.par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM])) return TG_OK;
    return vp_reduce_dh(&L, st, n->edge[0].kind != TG__EDGE_NONE, true, NULL);
}

static const tg__op_def lin_def = {"LinearLogprobEntropyBackward", lin_backward, false,
                                   lin_not_run};

/* ---- checks and the public entry ---------------------------------------------------- */

static tg_status check(const tg_tensor *h, const tg_tensor *w, const tg_tensor *b,
                       const tg_tensor *y, const tg_linear_logprob_opts *o) {
    char s1[160], s2[160];
    if (!tg__is_floating(h->dtype) || w->dtype != h->dtype || (b && b->dtype != h->dtype))
        return tg__set_error(TG_ERR_DTYPE, "%s: hidden, weight and bias must be f32, f64 or "
                             "bf16 of one dtype, got %s, %s and %s", WHO, tg_dtype_name(h->dtype),
                             tg_dtype_name(w->dtype), b ? tg_dtype_name(b->dtype) : "none");
    if (y->dtype != TG_I64)
        return tg__set_error(TG_ERR_DTYPE, "%s: targets must be i64, got %s", WHO,
                             tg_dtype_name(y->dtype));
    const tg_tensor *all[4] = {h, w, y, b};
    if (!tg__same_device(WHO, b ? 4 : 3, all)) return tg_last_status();
    if (h->ndim < 1 || h->shape[h->ndim - 1] < 1)
        return tg__set_error(TG_ERR_SHAPE, "%s: hidden of shape %s: need (..., d) with d >= 1",
                             WHO, tg__shape_str(s1, sizeof s1, h->ndim, h->shape));
    const int64_t d = h->shape[h->ndim - 1];
    if (w->ndim != 2 || w->shape[1] != d || w->shape[0] < 1)
        return tg__set_error(TG_ERR_SHAPE, "%s: weight of shape %s does not fit hidden of shape "
                             "%s (need (V, %lld), V >= 1)", WHO,
                             tg__shape_str(s1, sizeof s1, w->ndim, w->shape),
                             tg__shape_str(s2, sizeof s2, h->ndim, h->shape), (long long)d);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tg__set_error(TG_ERR_SHAPE, "%s: bias of shape %s does not fit weight of shape "
                             "%s (need (%lld))", WHO, tg__shape_str(s1, sizeof s1, b->ndim, b->shape),
                             tg__shape_str(s2, sizeof s2, w->ndim, w->shape),
                             (long long)w->shape[0]);
    bool same = y->ndim == h->ndim - 1;
    for (int k = 0; same && k < y->ndim; k++) same = y->shape[k] == h->shape[k];
    if (!same)
        return tg__set_error(TG_ERR_SHAPE, "%s: targets of shape %s do not match hidden of shape "
                             "%s (targets must have hidden's shape without its last dimension)",
                             WHO, tg__shape_str(s1, sizeof s1, y->ndim, y->shape),
                             tg__shape_str(s2, sizeof s2, h->ndim, h->shape));
    if (!(o->temperature > 0.0) || !isfinite(o->temperature))
        return tg__set_error(TG_ERR_VALUE, "%s: temperature must be finite and > 0, got %g", WHO,
                             o->temperature);
    if (o->impl != TG_LOGPROB_FUSED && o->impl != TG_LOGPROB_COMPOSITE)
        return tg__set_error(TG_ERR_VALUE, "%s: unknown impl %d", WHO, (int)o->impl);
    if (o->chunk_rows < 0 || o->vocab_block < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: chunk_rows and vocab_block must be >= 0, got "
                             "%lld and %lld", WHO, (long long)o->chunk_rows,
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
    rel(wt);
    rel(z);
    rel(b32);
    if (!zb) return tg_last_status();
    tg_logprob_opts lo = tg_logprob_opts_default();
    lo.temperature = o->temperature;
    lo.ignore_index = o->ignore_index;
    lo.want_entropy = o->want_entropy;
    lo.entropy_grad = o->entropy_grad;
    tg_set_name(zb, "logits");
    tg_status st = lse ? tg__logprob_entropy_lse(s, WHO, zb, y, &lo, lp, H, lse)
                       : tg__logprob_entropy(s, WHO, zb, y, &lo, lp, H);
    rel(zb);
    return st;
}

/* Fills L from the inputs (contiguous copies where needed, the targets on
 * the host); *hc receives hidden made contiguous. With a communicator the
 * targets are global ids, checked in the agreement instead. */
static tg_status prepare(lin *L, tg_tensor *hidden, tg_tensor *w, tg_tensor *b, tg_tensor *y,
                         const tg_linear_logprob_opts *o, tg_tensor **hc) {
    L->in.in_dt = hidden->dtype;
    L->in.dt = L->in.in_dt == TG_BF16 ? TG_F32 : L->in.in_dt;
    L->in.es = tg_dtype_size(L->in.dt);
    L->in.dev = hidden->storage->device;
    gemm_layout(L);
    L->in.d = hidden->shape[hidden->ndim - 1];
    L->in.V = w->shape[0];
    L->in.N = tg__numel(hidden->ndim - 1, hidden->shape);
    L->in.ignore = o->ignore_index;
    L->in.inv_t = 1.0 / o->temperature;
    tg_linear_logprob_opts on_dev = *o; /* the plan of the inputs' device */
    on_dev.device = L->in.dev;
    tg_status rc = tg_linear_logprob_plan_for(L->in.N, L->in.d, L->in.V, L->in.in_dt, b != NULL, &on_dev,
                                              &L->plan);
    if (rc != TG_OK) return rc;
    if (!(*hc = tg__contiguous(L->in.s, hidden)) || !(L->in.w = tg__contiguous(L->in.s, w)) ||
        (b && !(L->in.b = tg__contiguous(L->in.s, b))) ||
        !(L->in.y = tg__lpe_targets(L->in.s, WHO, y, L->par.comm ? INT64_MAX : L->in.V, L->in.ignore)) ||
        !(L->in.h = alias2(L, *hc, 0, L->in.N, L->in.d, L->in.d)))
        return tg_last_status();
    tg_tensor *yflat = alias2(L, L->in.y, 0, L->in.N, -1, 1);
    if (!yflat) return tg_last_status();
    rel(L->in.y);
    L->in.y = yflat;
    return (L->in.yh = tg__lpe_targets_host(WHO, L->in.y, &L->in.y_owned)) ? TG_OK : tg_last_status();
}

/* What vocab-parallel needs beyond check(). */
static tg_status vp_checks(const tg_tensor *hidden, int64_t V, const tg_linear_logprob_opts *o) {
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
static tg_status hand_out(lin *L, tg_tensor *hidden, tg_tensor *hc, tg_tensor *b,
                          const tg_linear_logprob_opts *o, bool record, bool grad_h, bool want_lse,
                          bool empty, fwd_out *F, tg_tensor **lse, tg_tensor *const *ins) {
    const tg_site s = L->in.s;
    const int lead = hidden->ndim - 1;
    tg_tensor *shaped[2] = {NULL, NULL}, *flat[2] = {F->lp, F->H};
    int64_t cst[TG_MAX_DIMS], acc = 1;
    for (int k = lead - 1; k >= 0; k--) {
        cst[k] = acc;
        acc *= hidden->shape[k];
    }
    for (int k = 0; k < 2; k++)
        if (flat[k])
            shaped[k] = tg__tensor_alias(s, flat[k]->storage, L->in.dt, lead, hidden->shape, cst, 0);
    rel(F->lp);
    rel(F->H);
    F->lp = shaped[0];
    F->H = shaped[1];
    if (!F->lp || (o->want_entropy && !F->H)) return tg_last_status();
    if (want_lse) {
        *lse = empty ? tg__new_output_on(s, WHO, L->in.dev, tg__lpe_out_dtype(hidden), lead,
                                         hidden->shape)
                     : tg__lpe_lse_of(s, WHO, hidden, F->st, F->nstat, L->in.inv_t);
        if (!*lse) return tg_last_status();
    }
    if (!record) return TG_OK;
    tg__node *n = tg__node_new(s, &lin_def, lin_def.name, b ? 3 : 2, ins,
                               1 + grad_h + want_lse);
    if (!n) return tg_last_status();
    n->dparam[P_INV_T] = L->in.inv_t;
    n->dparam[P_CHUNK] = (double)L->plan.chunk_rows;
    n->dparam[P_VBLOCK] = (double)L->plan.vocab_block;
    n->dparam[P_GRAD_F32] = o->grad_f32 ? 1.0 : 0.0;
    n->iparam[P_IGNORE] = L->in.ignore;
    n->iparam[P_NSTAT] = F->nstat;
    n->iparam[P_LSE_OUT] = want_lse ? 1 + grad_h : -1;
    n->iparam[P_HAS_BIAS] = b != NULL;
    n->iparam[P_COMM] = (int64_t)(intptr_t)L->par.comm;
    n->iparam[P_VSTART] = L->par.vstart;
    tg_set_name(F->st, "row max/logsumexp/entropy");
    if (tg__node_save(n, hc, false, 0) < 0 || tg__node_save(n, L->in.w, false, 1) < 0 ||
        tg__node_save(n, L->in.y, false, -1) < 0 || tg__node_save(n, F->st, false, -1) < 0 ||
        (b && tg__node_save(n, L->in.b, false, 2) < 0)) {
        tg__node_release(n);
        return tg_last_status();
    }
    tg__node_set_output(n, 0, F->lp);
    if (grad_h) tg__node_set_output(n, 1, F->H);
    if (want_lse) tg__node_set_output(n, 1 + grad_h, *lse);
    tg__node_release(n);
    return TG_OK;
}

/* pre: this rank's status from the argument checks (only with a
 * communicator can it be other than TG_OK: every rank then still takes part
 * in the agreement, and in the first exchange after a later failure). */
static tg_status fused(tg_site s, tg_status pre, tg_tensor *hidden, tg_tensor *w, tg_tensor *b,
                       tg_tensor *y, const tg_linear_logprob_opts *o, tg_tensor **lp_out,
                       tg_tensor **h_out, tg_tensor **lse_out) {
    lin L;
    memset(&L, 0, sizeof L);
    L.in.s = s;
    L.par.comm = o->comm;
    tg__vp vp;
    memset(&vp, 0, sizeof vp);
    tg_tensor *hc = NULL, *lse = NULL;
    fwd_out F = {NULL, NULL, NULL, 2};
    tg_status rc = pre;
    if (rc == TG_OK) rc = check(hidden, w, b, y, o);
    if (rc == TG_OK && L.par.comm) rc = vp_checks(hidden, w->shape[0], o);
    if (rc == TG_OK) rc = prepare(&L, hidden, w, b, y, o, &hc);
    tg_tensor *ins[3] = {hc, L.in.w, L.in.b};
    const bool record = rc == TG_OK && tg__needs_grad(b ? 3 : 2, ins);
    const bool grad_h = record && o->want_entropy && o->entropy_grad;
    if (L.par.comm) {
        /* the exchange's buffers before the agreement: a failure is told in it */
        if (rc == TG_OK && (rc = tg__vp_buf_new(L.par.comm, WHO, L.in.N, &L.par.xb)) == TG_OK)
            L.par.accs = L.par.xb.mine;
        const bool want_hg = record && tg__needs_grad(1, &hc);
        tg__vp_sig sig = {L.in.N, L.in.V, o->vocab_start, L.in.in_dt, o->temperature, o->ignore_index,
                          (int64_t)o->want_entropy | (int64_t)o->entropy_grad << 1 |
                              (int64_t)(lse_out != NULL) << 2 | (int64_t)(b != NULL) << 3 |
                              (int64_t)want_hg << 4 | (int64_t)record << 5,
                          L.in.yh, L.plan.chunk_rows, L.in.d};
        if ((rc = tg__vp_agree(L.par.comm, WHO, rc, &sig, &vp)) != TG_OK) goto fail;
        L.par.vp = &vp;
        L.par.vstart = o->vocab_start;
        L.plan.chunk_rows = vp.chunk; /* the same chunks on every rank */
    } else if (rc != TG_OK) {
        goto fail;
    }
    F.nstat = grad_h ? 3 : 2;
    F.lp = tg__zeros_on(s, L.in.dev, L.in.dt, 1, &L.in.N);
    F.H = F.lp && o->want_entropy ? tg__zeros_on(s, L.in.dev, L.in.dt, 1, &L.in.N) : NULL;
    F.st = F.lp && (record || lse_out)
               ? tg__zeros_on(s, L.in.dev, TG_F64, 2, (int64_t[]){L.in.N, F.nstat})
               : NULL;
    const int64_t zn = L.plan.chunk_rows * L.plan.vocab_block;
    rc = !F.lp || (o->want_entropy && !F.H) || ((record || lse_out) && !F.st) ||
                 (L.in.N > 0 && (!(L.buf.zbuf = ws_new(&L, L.in.dev, L.in.dt, 1, &zn)) ||
                              conv_buffers(&L) != TG_OK))
             ? tg_last_status()
             : TG_OK;
    if (rc != TG_OK && !L.par.comm) goto fail;
    /* vocab-parallel on the CPU: everything the call hands out is made before
     * the statistics exchange, so that a failure making it is told there
     * (every rank fails) rather than failing this rank's call alone while the
     * others record their node, whose backward would then wait for it */
    const bool early = L.par.comm && L.in.dev == TG_CPU;
    if (rc == TG_OK && early &&
        !(L.par.stage = ws_new(&L, TG_CPU, TG_F64, 2, (int64_t[]){L.in.N, STAGE_COLS})))
        rc = tg_last_status();
    if (rc == TG_OK && early) rc = hand_out(&L, hidden, hc, b, o, record, grad_h, lse_out != NULL,
                                            true, &F, &lse, ins);
    if (rc == TG_OK && early && !tg__ret_reserve(3)) rc = tg_last_status(); /* handing out */
    if (rc == TG_OK && L.in.N > 0) rc = for_chunks(&L, fwd_chunk, &F);
    if (L.par.comm) rc = vp_finish(&L, rc, &F); /* every rank, whatever rc is */
    if (rc != TG_OK) goto fail;
    if (L.in.N > 0) {
        tg_tensor *ws[5] = {L.buf.zbuf, L.buf.hbuf, L.buf.wbuf, L.buf.bbuf, L.cur.bcur};
        for (int k = 0; k < 5; k++) rel(ws[k]);
        L.buf.zbuf = L.buf.hbuf = L.buf.wbuf = L.buf.bbuf = L.cur.bcur = NULL;
    }
    if (early) {
        if (lse) tg__vp_lse_host(lse, F.st, F.nstat, L.in.inv_t);
    } else if ((rc = hand_out(&L, hidden, hc, b, o, record, grad_h, lse_out != NULL, false, &F,
                              &lse, ins)) != TG_OK) {
        goto fail;
    }
    rel(F.st);
    rel(hc);
    lin_done(&L);
    tg__vp_free(&vp);
    *lp_out = F.lp;
    *h_out = F.H;
    if (lse_out) *lse_out = lse;
    return TG_OK;
fail:
    rc = tg_last_status();
    rel(lse);
    rel(F.lp);
    rel(F.H);
    rel(F.st);
    rel(hc);
    lin_done(&L);
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
        st = fused(s, bad_arg ? tg_last_status() : TG_OK, hidden, weight, bias, targets, &o, &lp,
                   &h, lse ? &l : NULL);
    } else {
        st = check(hidden, weight, bias, targets, &o);
        if (st != TG_OK) return st;
        st = o.impl == TG_LOGPROB_FUSED
                 ? fused(s, TG_OK, hidden, weight, bias, targets, &o, &lp, &h, lse ? &l : NULL)
                 : composite(s, hidden, weight, bias, targets, &o, &lp, &h, lse ? &l : NULL);
    }
    if (st != TG_OK) return st;
    return tg__lpe_hand_out(lp, h, l, logprob, o.want_entropy ? entropy : NULL, lse);
}
