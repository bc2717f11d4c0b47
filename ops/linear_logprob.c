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
        if (!atomic_compare_exchange_strong(&cuda_ws, &none, b))
            b = none; /* another thread's */
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

tg_status tg_linear_logprob_plan_for(int64_t N, int64_t d, int64_t V, tg_dtype dt,
                                     bool has_bias, const tg_linear_logprob_opts *opts,
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
        if ((size_t)least * per_row(V, es, has_bias, crow, dhrow, dz_es) + (size_t)V * cvoc <=
            B) {
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
        int64_t fit =
            B > fixed ? (int64_t)((B - fixed) / per_row(vb, es, has_bias, crow, dhrow, dz_es))
                      : 0;
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

/* Releases the loop's buffers (before backward's bf16 gradients are made:
 * those then take the workspace's place rather than adding to it). */
static void lin_free_workspace(lin *loop) {
    tg_tensor **ws[6] = {&loop->buf.zbuf, &loop->buf.dz16, &loop->buf.hbuf,
                         &loop->buf.wbuf, &loop->buf.bbuf, &loop->cur.bcur};
    for (int k = 0; k < 6; k++) {
        tg__tensor_release(*ws[k]);
        *ws[k] = NULL;
    }
}

static void lin_done(lin *loop) {
    tg__tensor_release(loop->in.h);
    tg__tensor_release(loop->in.w);
    tg__tensor_release(loop->in.b);
    tg__tensor_release(loop->in.y);
    tg__tensor_release(loop->buf.zbuf);
    tg__tensor_release(loop->buf.hbuf);
    tg__tensor_release(loop->buf.wbuf);
    tg__tensor_release(loop->buf.bbuf);
    tg__tensor_release(loop->buf.dz16);
    tg__tensor_release(loop->cur.bcur);
    free(loop->in.y_owned);
    tg__vp_buf_free(&loop->par.xb);
    tg__tensor_release(loop->par.stage);
    free(loop->buf.rows);
}

/* A 2-D or 1-D alias of t's storage. */
static tg_tensor *alias_rows(const lin *loop, const tg_tensor *t, int64_t off, int64_t rows,
                         int64_t cols, int64_t rs) {
    if (cols < 0)
        return tg__tensor_alias(loop->in.s, t->storage, t->dtype, 1, &rows, (int64_t[]){rs},
                                t->offset + off);
    return tg__tensor_alias(loop->in.s, t->storage, t->dtype, 2, (int64_t[]){rows, cols},
                            (int64_t[]){rs, 1}, t->offset + off);
}

/* A workspace tensor on dev. */
static tg_tensor *ws_new(const lin *loop, tg_device dev, tg_dtype dt, int ndim,
                         const int64_t *shape) {
    return tg__tensor_new_on(loop->in.s, WHO, dev, dt, ndim, shape, TG_MEM_WORKSPACE);
}

/* rows [r0, r0 + c) of src (a 2-D (n, k) contiguous tensor, or 1-D) copied
 * (converted) into the front of buf; returns buf's data. NULL on failure. */
static char *convert_rows(const lin *loop, tg_tensor *buf, const tg_tensor *src, int64_t r0,
                          int64_t c) {
    const int64_t k = src->ndim == 2 ? src->shape[1] : -1;
    tg_tensor *from = alias_rows(loop, src, r0 * (k > 0 ? k : 1), c, k, k > 0 ? k : 1);
    tg_tensor *to = from ? alias_rows(loop, buf, 0, c, k, k > 0 ? k : 1) : NULL;
    tg_status st = to ? tg__k_copy(to, from) : tg_last_status();
    tg__tensor_release(from);
    tg__tensor_release(to);
    return st == TG_OK ? tg__ptr(buf) : NULL;
}

/* ---- chunks --------------------------------------------------------------------
 * A chunk is c kept rows: the rows [r0, r0 + c) when they follow each other
 * (r0 >= 0), or, when ignored rows fall between them, the rows loop->buf.rows[0..c)
 * (r0 == -1: "gathered"), whose per-row data is gathered into buffers. */

/* The global row of chunk row i. */
static inline int64_t row_of(const lin *loop, int64_t r0, int64_t i) {
    return r0 >= 0 ? r0 + i : loop->buf.rows[i];
}

/* Copies between chunk rows and global rows, run by run of consecutive rows:
 * to_chunk: dst (c[, k]) chunk rows <- src (N[, k]) global rows; else the
 * reverse. Tensors are 1-D (any stride) or 2-D row-major. */
static tg_status move_rows(const lin *loop, int64_t r0, int64_t c, tg_tensor *chunk_t,
                           tg_tensor *global_t, bool to_chunk) {
    tg_status st = TG_OK;
    for (int64_t i = 0; st == TG_OK && i < c;) {
        int64_t j = i + 1;
        while (j < c && row_of(loop, r0, j) == row_of(loop, r0, i) + (j - i)) j++;
        const int64_t g = row_of(loop, r0, i), n = j - i;
        tg_tensor *views[2] = {NULL, NULL}, *ts[2] = {chunk_t, global_t};
        const int64_t at[2] = {i, g};
        for (int k = 0; k < 2; k++) {
            const tg_tensor *t = ts[k];
            views[k] =
                t->ndim == 2
                    ? alias_rows(loop, t, at[k] * t->strides[0], n, t->shape[1], t->strides[0])
                    : alias_rows(loop, t, at[k] * t->strides[0], n, -1, t->strides[0]);
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
static tg_status load_chunk(lin *loop, int64_t r0, int64_t c) {
    if (r0 >= 0 && (loop->in.in_dt != TG_BF16 || loop->gemm.tc)) {
        loop->cur.hp = (char *)tg__ptr(loop->in.h) + (size_t)(r0 * loop->in.d) * loop->gemm.hes;
        return TG_OK;
    }
    tg_tensor *buf = alias_rows(loop, loop->buf.hbuf, 0, c, loop->in.d, loop->in.d);
    tg_status st = buf ? move_rows(loop, r0, c, buf, loop->in.h, true) : tg_last_status();
    tg__tensor_release(buf);
    loop->cur.hp = tg__ptr(loop->buf.hbuf);
    return st;
}

/* Makes the block [v0, v0 + vb) of W (and b) current, converting bf16. */
static tg_status load_block(lin *loop, int64_t v0, int64_t vb) {
    tg__tensor_release(loop->cur.bcur);
    loop->cur.bcur = NULL;
    if (!loop->buf.wbuf) {
        loop->cur.wp = (char *)tg__ptr(loop->in.w) + (size_t)(v0 * loop->in.d) * loop->gemm.hes;
        if (loop->in.b && !loop->buf.bbuf &&
            !(loop->cur.bcur = alias_rows(loop, loop->in.b, v0, vb, -1, 1)))
            return tg_last_status();
    } else if (!(loop->cur.wp = convert_rows(loop, loop->buf.wbuf, loop->in.w, v0, vb))) {
        return tg_last_status();
    }
    if (loop->buf.bbuf) {
        if (!convert_rows(loop, loop->buf.bbuf, loop->in.b, v0, vb) ||
            !(loop->cur.bcur = alias_rows(loop, loop->buf.bbuf, 0, vb, -1, 1)))
            return tg_last_status();
    }
    return TG_OK;
}

/* Z (c, vb) = h[chunk] @ W[block]^T (+ b[block]) for the current chunk and
 * block (load_chunk, load_block), as a view of the workspace; NULL with the
 * error set. */
static tg_tensor *block_logits(const lin *loop, int64_t c, int64_t vb) {
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
        tg__k_matmul(loop->in.dev, WHO, loop->gemm.mm_dt, 0, NULL, &a, &bm, &cm, false, false);
    if (st == TG_OK && loop->cur.bcur)
        st = tg__k_binary(TG__BIN_ADD, Z, Z, loop->cur.bcur, 0, 0);
    return tg__k_ok(st, Z);
}

/* The buffer a chunk's rows of hidden are gathered into, the list of its
 * rows, and, for bf16 inputs, the f32 buffers of a block's weight rows. */
static tg_status conv_buffers(lin *loop) {
    const int64_t hn = loop->plan.chunk_rows * loop->in.d,
                  wn = loop->plan.vocab_block * loop->in.d;
    if (!(loop->buf.hbuf = ws_new(loop, loop->in.dev, loop->gemm.mm_dt, 1, &hn)))
        return tg_last_status();
    if (!(loop->buf.rows = tg__xmalloc((size_t)loop->plan.chunk_rows * sizeof *loop->buf.rows)))
        return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", WHO);
    if (loop->in.in_dt != TG_BF16) return TG_OK;
    if ((!loop->gemm.tc && !(loop->buf.wbuf = ws_new(loop, loop->in.dev, TG_F32, 1, &wn))) ||
        (loop->in.b &&
         !(loop->buf.bbuf = ws_new(loop, loop->in.dev, TG_F32, 1, &loop->plan.vocab_block))))
        return tg_last_status();
    return TG_OK;
}

/* Local targets of rows [r0, r0 + c) for the block [v0, v0 + vb): y - v0
 * when inside, else `outside`; a new (c) i64 tensor on loop->in.dev. */
static tg_tensor *local_targets(const lin *loop, int64_t r0, int64_t c, int64_t v0, int64_t vb,
                                int64_t outside) {
    tg_tensor *hst = ws_new(loop, TG_CPU, TG_I64, 1, &c);
    if (!hst) return NULL;
    int64_t *t = tg__ptr(hst);
    for (int64_t i = 0; i < c; i++) {
        const int64_t y =
            loop->in.yh[row_of(loop, r0, i)] - loop->par.vstart; /* in this rank's vocabulary */
        t[i] = y >= v0 && y < v0 + vb ? y - v0 : outside;
    }
    if (loop->in.dev == TG_CPU) return hst;
    tg_mem_category prev = tg__set_category_override(TG_MEM_WORKSPACE);
    tg_tensor *dv = tg__device_copy(loop->in.s, WHO, hst, loop->in.dev);
    tg__set_category_override(prev);
    tg__tensor_release(hst);
    return dv;
}

/* Calls fn(loop, r0, c, arg) for each chunk of c kept rows (the next
 * chunk_rows of them, in order; r0 as above); stops at the first failure
 * and returns it. Ignored rows are in no chunk: never multiplied. */
typedef tg_status (*chunk_fn)(lin *loop, int64_t r0, int64_t c, void *arg);
static tg_status for_chunks(lin *loop, chunk_fn fn, void *arg) {
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
static tg_status bad_entry(const lin *loop, const tg_tensor *Z, tg__lpe_bad *bad, int64_t r0,
                           int64_t v0, int64_t vb) {
    if (tg__lpe_locate_bad(WHO, Z, bad, loop->in.inv_t) != TG_OK) return tg_last_status();
    if (bad->col < 0)
        return tg__set_error(TG_ERR_VALUE,
                             "%s: row %lld: every logit of vocabulary entries "
                             "[%lld, %lld) is -inf (a row needs a finite logit; give it "
                             "ignore_index)",
                             WHO, (long long)row_of(loop, r0, bad->row), (long long)v0,
                             (long long)(v0 + vb));
    return tg__set_error(TG_ERR_VALUE, "%s: row %lld: the logit of vocabulary entry %lld "
                         "(hidden row %lld . weight row %lld%s) is %g (logits must be finite "
                         "or -inf)", WHO, (long long)row_of(loop, r0, bad->row),
                         (long long)(v0 + bad->col), (long long)row_of(loop, r0, bad->row),
                         (long long)(v0 + bad->col), loop->in.b ? " + bias" : "", bad->value);
}

/* ---- forward --------------------------------------------------------------------- */

typedef struct fwd_out {
    tg_tensor *lp, *H, *st; /* (N), (N) or NULL, (N, nstat) or NULL */
    int nstat;
} fwd_out;

/* rows [r0, r0 + c) of a 1-D (or (N, k)) output */
static tg_tensor *out_rows(const lin *loop, tg_tensor *t, int64_t r0, int64_t c) {
    if (!t) return NULL;
    if (t->ndim == 2)
        return alias_rows(loop, t, r0 * t->shape[1], c, t->shape[1], t->shape[1]);
    return alias_rows(loop, t, r0, c, -1, 1);
}

/* One block: the outputs directly from the fused kernel. */
static tg_status fwd_one_block(lin *loop, int64_t r0, int64_t c, fwd_out *o) {
    tg_tensor *Z =
        load_block(loop, 0, loop->in.V) == TG_OK ? block_logits(loop, c, loop->in.V) : NULL;
    tg_tensor *y = Z ? alias_rows(loop, loop->in.y, r0, c, -1, 1) : NULL;
    tg_tensor *lp = y ? out_rows(loop, o->lp, r0, c) : NULL;
    tg_tensor *H = lp && o->H ? out_rows(loop, o->H, r0, c) : NULL;
    tg_tensor *st = lp && o->st ? out_rows(loop, o->st, r0, c) : NULL;
    tg_status rc = TG_ERR_NOMEM;
    if (lp && (!o->H || H) && (!o->st || st)) {
        tg__lpe_bad bad;
        rc = tg__k_lpe_forward(Z, y, loop->in.ignore, loop->in.inv_t, 0, lp, H, st, o->nstat,
                               &bad);
        if (rc == TG_OK && bad.row >= 0) rc = bad_entry(loop, Z, &bad, r0, 0, loop->in.V);
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
        const int64_t y = loop->in.yh[row_of(loop, r0, i)] - loop->par.vstart;
        if (y >= v0 && y < v0 + vb)
            acc[i].zy = loop->in.dt == TG_F32 ? (double)((const float *)zy)[i]
                                              : ((const double *)zy)[i];
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
static tg_status empty_parts(const lin *loop, const tg_tensor *Z, int64_t r0, int64_t c,
                             int64_t v0, int64_t vb, const double *sh) {
    for (int64_t i = 0; i < c; i++) {
        if (!isnan(sh[3 * i + 1])) continue;
        tg__lpe_bad b = {i, TG__LPE_COL_UNKNOWN, 0.0};
        if (tg__lpe_locate_bad(WHO, Z, &b, loop->in.inv_t) != TG_OK) return tg_last_status();
        if (b.col >= 0) return bad_entry(loop, Z, &b, r0, v0, vb);
    }
    return TG_OK;
}

static tg_status blocks_acc(lin *loop, int64_t r0, int64_t c, tg__lpe_acc *acc) {
    const int64_t vbs = loop->plan.vocab_block;
    tg_tensor *lpb = ws_new(loop, loop->in.dev, loop->in.dt, 1, &c); // (c)
    tg_tensor *stb =
        lpb ? ws_new(loop, loop->in.dev, TG_F64, 2, (int64_t[]){c, 3}) : NULL; // (c, 3)
    tg_tensor *zyb =
        stb ? ws_new(loop, loop->in.dev, loop->in.dt, 2, (int64_t[]){c, 1}) : NULL; // (c, 1)
    tg_status rc = zyb ? TG_OK : tg_last_status();
    for (int64_t v0 = 0; rc == TG_OK && v0 < loop->in.V; v0 += vbs) {
        const int64_t vb = loop->in.V - v0 < vbs ? loop->in.V - v0 : vbs;
        /* in-block targets, 0 elsewhere: the gather reads a valid entry, the
         * statistics do not depend on the targets */
        tg_tensor *idx = local_targets(loop, r0, c, v0, vb, 0);
        tg_tensor *Z =
            idx && load_block(loop, v0, vb) == TG_OK ? block_logits(loop, c, vb) : NULL;
        tg_tensor *idx2 = Z ? alias_rows(loop, idx, 0, c, 1, 1) : NULL;
        rc = idx2 ? TG_OK : tg_last_status();
        tg__lpe_bad bad = {-1, -1, 0.0};
        if (rc == TG_OK) rc = tg__k_fill(stb, NAN); /* rows the kernel refuses stay NaN */
        if (rc == TG_OK)
            rc = tg__k_lpe_forward(Z, idx, INT64_MIN, loop->in.inv_t, 0, lpb, NULL, stb, 3,
                                   &bad);
        if (rc == TG_OK) rc = tg__k_gather_forward(Z, idx2, zyb);
        void *own1 = NULL, *own2 = NULL;
        const double *sh = rc == TG_OK ? host_of(stb, &own1) : NULL;
        const void *zh = sh ? host_of(zyb, &own2) : NULL;
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

static tg_status all_minus_inf(int64_t row) {
    return tg__set_error(TG_ERR_VALUE,
                         "%s: row %lld: every logit is -inf (the row has no valid "
                         "token; give it ignore_index)",
                         WHO, (long long)row);
}

/* The staged outputs (c, 5) of a chunk's rows written to those rows of the
 * outputs, run by run. */
static tg_status put_chunk_rows(lin *loop, int64_t r0, int64_t c, tg_tensor *stage,
                                fwd_out *o) {
    if (r0 >= 0)
        return tg__lpe_put_rows(loop->in.s, WHO, stage, r0, o->lp, o->H, o->st, o->nstat);
    tg_status st = TG_OK;
    for (int64_t i = 0; st == TG_OK && i < c;) {
        int64_t j = i + 1;
        while (j < c && loop->buf.rows[j] == loop->buf.rows[i] + (j - i)) j++;
        tg_tensor *run = alias_rows(loop, stage, i * STAGE_COLS, j - i, STAGE_COLS, STAGE_COLS);
        st = run ? tg__lpe_put_rows(loop->in.s, WHO, run, loop->buf.rows[i], o->lp, o->H, o->st,
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
    tg_tensor *state = ws_new(loop, TG_CPU, TG_F64, 2, (int64_t[]){c, 4}); // (c, 4)
    tg_status rc = state ? TG_OK : tg_last_status();
    tg__lpe_acc *acc = state ? tg__ptr(state) : NULL;
    if (acc) memset(acc, 0, (size_t)c * sizeof *acc);
    if (rc == TG_OK) rc = blocks_acc(loop, r0, c, acc);
    for (int64_t i = 0; rc == TG_OK && i < c; i++)
        if (acc[i].S == 0.0) rc = all_minus_inf(row_of(loop, r0, i));
    tg_tensor *stage = rc == TG_OK ? ws_new(loop, TG_CPU, TG_F64, 2, (int64_t[]){c, STAGE_COLS})
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

static tg_status fwd_chunk(lin *loop, int64_t r0, int64_t c, void *arg) {
    tg_status st = load_chunk(loop, r0, c);
    if (st != TG_OK) return st;
    if (loop->par.accs && r0 >= 0)
        return blocks_acc(loop, r0, c, loop->par.accs + r0); /* merged later */
    if (loop->par.accs) { /* gathered rows: their accumulators to their places */
        tg__lpe_acc *acc = tg__xcalloc((size_t)c, sizeof *acc);
        if (!acc) return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", WHO);
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
static tg_status vp_finish(lin *loop, tg_status rc, fwd_out *o) {
    rc = tg__vp_exchange(loop->par.comm, WHO, rc, &loop->par.xb);
    const tg__lpe_acc *all = loop->par.xb.all;
    for (int64_t i = 0; rc == TG_OK && i < loop->in.N; i++) { /* a row empty on every rank */
        if (loop->in.yh[i] == loop->in.ignore) continue;
        double S = 0.0;
        for (int r = 0; r < loop->par.vp->P; r++)
            S += all[(size_t)r * (size_t)loop->in.N + (size_t)i].S;
        if (S == 0.0) rc = all_minus_inf(i);
    }
    if (rc == TG_OK && loop->par.stage) { /* the CPU: written without allocating */
        const double *m = tg__ptr(loop->par.stage);
        tg__vp_merge(loop->par.vp, loop->in.yh, loop->in.ignore, all, loop->in.N,
                     loop->in.inv_t, (double *)tg__ptr(loop->par.stage));
        tg__vp_put_rows_host(m, loop->in.N, o->lp, o->H, o->st, o->nstat);
        return TG_OK;
    }
    tg_tensor *stage =
        rc == TG_OK ? ws_new(loop, TG_CPU, TG_F64, 2, (int64_t[]){loop->in.N, STAGE_COLS})
                    : NULL;
    if (rc == TG_OK && !stage) rc = tg_last_status();
    if (rc == TG_OK) {
        tg__vp_merge(loop->par.vp, loop->in.yh, loop->in.ignore, all, loop->in.N,
                     loop->in.inv_t, tg__ptr(stage));
        rc = tg__lpe_put_rows(loop->in.s, WHO, stage, 0, o->lp, o->H, o->st, o->nstat);
    }
    tg__tensor_release(stage);
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
static tg_status gemm_acc(const lin *loop, tg_dtype dt, const tg__mat *a, const tg__mat *b,
                          const tg__mat *c) {
    return tg__k_matmul(loop->in.dev, "LinearLogprobEntropyBackward", dt, 0, NULL, a, b, c,
                        false, true);
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
    tg_tensor *buf = t->ndim == 2
                         ? ws_new(loop, loop->in.dev, t->dtype, 2, (int64_t[]){c, t->shape[1]})
                         : ws_new(loop, loop->in.dev, t->dtype, 1, &c);
    if (buf && move_rows(loop, r0, c, buf, t, true) != TG_OK) {
        tg__tensor_release(buf);
        return NULL;
    }
    return buf;
}

static tg_status bwd_chunk(lin *loop, int64_t r0, int64_t c, void *arg) {
    bwd_ctx *B = arg;
    const int64_t vbs = loop->plan.vocab_block, d = loop->in.d;
    const size_t es = loop->in.es;
    tg_status rc = TG_OK;
    /* the chunk's statistics and upstream gradients: views, or gathered */
    tg_tensor *st = r0 >= 0 ? out_rows(loop, B->st, r0, c) : gather_of(loop, r0, c, B->st);
    tg_tensor *g[3] = {NULL, NULL, NULL}, *gsrc[3] = {B->glp, B->gH, B->glse};
    for (int k = 0; k < 3; k++)
        if (gsrc[k] && !(g[k] = r0 >= 0 ? alias_rows(loop, gsrc[k], r0 * gsrc[k]->strides[0], c,
                                                     -1, gsrc[k]->strides[0])
                                        : gather_of(loop, r0, c, gsrc[k])))
            rc = tg_last_status();
    if (!st) rc = tg_last_status();
    /* d hidden of gathered rows: summed in a buffer, then put in their rows */
    tg_tensor *dhb = r0 < 0 && B->dh && rc == TG_OK
                         ? ws_new(loop, loop->in.dev, loop->in.dt, 2, (int64_t[]){c, d})
                         : NULL;
    if (r0 < 0 && B->dh && rc == TG_OK) rc = dhb ? tg__k_fill(dhb, 0.0) : tg_last_status();
    if (rc == TG_OK) rc = load_chunk(loop, r0, c);
    for (int64_t v0 = 0; rc == TG_OK && v0 < loop->in.V; v0 += vbs) {
        const int64_t vb = loop->in.V - v0 < vbs ? loop->in.V - v0 : vbs;
        tg_tensor *y = loop->plan.n_blocks == 1 && !loop->par.comm && r0 >= 0
                           ? alias_rows(loop, loop->in.y, r0, c, -1, 1)
                           : local_targets(loop, r0, c, v0, vb, -1);
        tg_tensor *Z =
            y && load_block(loop, v0, vb) == TG_OK ? block_logits(loop, c, vb) : NULL;
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
        tg_tensor *dh2 = alias_rows(loop, B->dh, 0, loop->in.N, d, d);
        rc = dh2 ? move_rows(loop, r0, c, dhb, dh2, false) : tg_last_status();
        tg__tensor_release(dh2);
    }
    tg__tensor_release(dhb);
    for (int k = 0; k < 3; k++) tg__tensor_release(g[k]);
    tg__tensor_release(st);
    return rc;
}

/* The GEMMs' layout: loop->in.in_dt, loop->in.dt and loop->in.dev set. */
static void gemm_layout(lin *loop) {
    loop->gemm.tc = loop->in.in_dt == TG_BF16 && tg__k_has_bf16_gemm(loop->in.dev);
    loop->gemm.mm_dt = loop->gemm.tc ? TG_BF16 : loop->in.dt;
    loop->gemm.hes = tg_dtype_size(loop->gemm.mm_dt);
}

/* Fills loop from the saved tensors (new references) for backward. */
static tg_status lin_from_node(tg__node *n, lin *loop) {
    memset(loop, 0, sizeof *loop);
    loop->in.s = n->site;
    tg_tensor *h = tg__node_saved(n, S_H);
    if (!h) return tg_last_status();
    loop->in.d = h->shape[h->ndim - 1];
    loop->in.N = tg__numel(h->ndim - 1, h->shape);
    loop->in.h = alias_rows(loop, h, 0, loop->in.N, loop->in.d, loop->in.d);
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
    gemm_layout(loop);
    loop->in.ignore = n->iparam[P_IGNORE];
    loop->in.inv_t = n->dparam[P_INV_T];
    loop->plan.chunk_rows = (int64_t)n->dparam[P_CHUNK];
    loop->plan.vocab_block = (int64_t)n->dparam[P_VBLOCK];
    loop->plan.n_blocks = (loop->in.V + loop->plan.vocab_block - 1) / loop->plan.vocab_block;
    loop->par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM];
    loop->par.vstart = n->iparam[P_VSTART];
    loop->in.yh = tg__lpe_targets_host(WHO, loop->in.y, &loop->in.y_owned);
    if (!loop->in.yh) return tg_last_status();
    return loop->in.N > 0 ? conv_buffers(loop) : TG_OK;
}

static const char *const lin_name = "LinearLogprobEntropyBackward";

/* The backward's agreement, then (every rank ran its part) the all-reduce of
 * d hidden. skipped: no gradient reached the node on this rank (dh NULL). */
static tg_status vp_reduce_dh(lin *loop, tg_status rc, bool want_h, bool skipped,
                              tg_tensor *dh) {
    const int P = tg_comm_size(loop->par.comm);
    tg__agree mine;
    const tg__agree *all = NULL;
    memset(&mine, 0, sizeof mine);
    if (rc != TG_OK) tg__agree_fail(&mine, lin_name, rc);
    mine.sig[0] = want_h;
    mine.sig[1] = skipped;
    tg_status st = tg__comm_agree(loop->par.comm, lin_name, &mine, &all);
    for (int r = 1; st == TG_OK && r < P; r++) {
        if (all[r].sig[1] != all[0].sig[1])
            st = tg__set_error(TG_ERR_COMM,
                               "%s: rank %d's backward %s a gradient to this node, "
                               "rank 0's %s (the same graph on every rank)",
                               lin_name, r, all[r].sig[1] ? "brought no" : "brought",
                               all[0].sig[1] ? "did not" : "did");
        else if (all[r].sig[0] != all[0].sig[0])
            st = tg__set_error(TG_ERR_COMM,
                               "%s: rank %d %s d hidden, rank 0 %s (the same graph "
                               "on every rank)",
                               lin_name, r, all[r].sig[0] ? "wants" : "does not want",
                               all[0].sig[0] ? "does" : "does not");
    }
    if (st == TG_OK && want_h && !skipped)
        st = tg__comm_allreduce_sum(loop->par.comm, lin_name, dh);
    return st;
}

static tg_status lin_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    lin loop;
    bwd_ctx B;
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
        if (!(loop.buf.zbuf = ws_new(&loop, loop.in.dev, loop.in.dt, 1, &zn)))
            rc = tg_last_status();
        if (rc == TG_OK && loop.gemm.tc && (want_h || want_w) &&
            !(loop.buf.dz16 = ws_new(&loop, loop.in.dev, TG_BF16, 1, &zn)))
            rc = tg_last_status();
        if (rc == TG_OK && want_b) {
            B.ones = ws_new(&loop, loop.in.dev, loop.in.dt, 1, &loop.plan.chunk_rows);
            rc = B.ones ? tg__k_fill(B.ones, 1.0) : tg_last_status();
        }
        if (rc == TG_OK && (want_h || want_w || want_b)) rc = for_chunks(&loop, bwd_chunk, &B);
    }
    /* vocab-parallel: d hidden is the sum of every rank's part, one all-reduce,
     * after an agreement that makes a failure on one rank fail them all */
    loop.par.comm = (tg_comm *)(intptr_t)n->iparam[P_COMM];
    if (loop.par.comm) rc = vp_reduce_dh(&loop, rc, want_h, false, B.dh);
    tg_tensor *keep[3] = {B.dh, B.dw, B.db};
    lin_free_workspace(&loop);
    tg__tensor_release(B.ones);
    B.ones = NULL;
    /* bf16 inputs: the f32 accumulators become bf16 gradients, unless asked
     * for in f32 */
    for (int k = 0; k < 3 && rc == TG_OK; k++) {
        if (!keep[k] || loop.in.in_dt != TG_BF16 || n->dparam[P_GRAD_F32] != 0) continue;
        tg_tensor *g16 = tg__new_output_on(n->site, lin_name, loop.in.dev, TG_BF16,
                                           keep[k]->ndim, keep[k]->shape);
        if (g16) g16 = tg__k_ok(tg__k_copy(g16, keep[k]), g16);
        tg__tensor_release(keep[k]);
        keep[k] = g16;
        if (!g16) rc = tg_last_status();
    }
    for (int k = 0; k < 3; k++) {
        if (rc == TG_OK) gin[k] = keep[k];
        else tg__tensor_release(keep[k]);
    }
    tg__tensor_release(B.st);
    tg__tensor_release(B.glp);
    tg__tensor_release(B.gH);
    tg__tensor_release(B.glse);
    tg__tensor_release(B.ones);
    lin_done(&loop);
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

static const tg__op_def lin_def = {"LinearLogprobEntropyBackward", lin_backward, false,
                                   lin_not_run};

/* ---- checks and the public entry ---------------------------------------------------- */

static tg_status check(const tg_tensor *h, const tg_tensor *w, const tg_tensor *b,
                       const tg_tensor *y, const tg_linear_logprob_opts *o) {
    char s1[160], s2[160];
    if (!tg__is_floating(h->dtype) || w->dtype != h->dtype || (b && b->dtype != h->dtype))
        return tg__set_error(TG_ERR_DTYPE,
                             "%s: hidden, weight and bias must be f32, f64 or "
                             "bf16 of one dtype, got %s, %s and %s",
                             WHO, tg_dtype_name(h->dtype), tg_dtype_name(w->dtype),
                             b ? tg_dtype_name(b->dtype) : "none");
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
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: weight of shape %s does not fit hidden of shape "
                             "%s (need (V, %lld), V >= 1)",
                             WHO, tg__shape_str(s1, sizeof s1, w->ndim, w->shape),
                             tg__shape_str(s2, sizeof s2, h->ndim, h->shape), (long long)d);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: bias of shape %s does not fit weight of shape "
                             "%s (need (%lld))",
                             WHO, tg__shape_str(s1, sizeof s1, b->ndim, b->shape),
                             tg__shape_str(s2, sizeof s2, w->ndim, w->shape),
                             (long long)w->shape[0]);
    bool same = y->ndim == h->ndim - 1;
    for (int k = 0; same && k < y->ndim; k++) same = y->shape[k] == h->shape[k];
    if (!same)
        return tg__set_error(TG_ERR_SHAPE,
                             "%s: targets of shape %s do not match hidden of shape "
                             "%s (targets must have hidden's shape without its last dimension)",
                             WHO, tg__shape_str(s1, sizeof s1, y->ndim, y->shape),
                             tg__shape_str(s2, sizeof s2, h->ndim, h->shape));
    if (!(o->temperature > 0.0) || !isfinite(o->temperature))
        return tg__set_error(TG_ERR_VALUE, "%s: temperature must be finite and > 0, got %g",
                             WHO, o->temperature);
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
static tg_status prepare(lin *loop, tg_tensor *hidden, tg_tensor *w, tg_tensor *b, tg_tensor *y,
                         const tg_linear_logprob_opts *o, tg_tensor **hc) {
    loop->in.in_dt = hidden->dtype;
    loop->in.dt = loop->in.in_dt == TG_BF16 ? TG_F32 : loop->in.in_dt;
    loop->in.es = tg_dtype_size(loop->in.dt);
    loop->in.dev = hidden->storage->device;
    gemm_layout(loop);
    loop->in.d = hidden->shape[hidden->ndim - 1];
    loop->in.V = w->shape[0];
    loop->in.N = tg__numel(hidden->ndim - 1, hidden->shape);
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
              loop->in.s, WHO, y, loop->par.comm ? INT64_MAX : loop->in.V, loop->in.ignore)) ||
        !(loop->in.h = alias_rows(loop, *hc, 0, loop->in.N, loop->in.d, loop->in.d)))
        return tg_last_status();
    tg_tensor *yflat = alias_rows(loop, loop->in.y, 0, loop->in.N, -1, 1);
    if (!yflat) return tg_last_status();
    tg__tensor_release(loop->in.y);
    loop->in.y = yflat;
    return (loop->in.yh = tg__lpe_targets_host(WHO, loop->in.y, &loop->in.y_owned))
               ? TG_OK
               : tg_last_status();
}

/* What vocab-parallel needs beyond check(). */
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
    int64_t cst[TG_MAX_DIMS], acc = 1;
    for (int k = lead - 1; k >= 0; k--) {
        cst[k] = acc;
        acc *= hidden->shape[k];
    }
    for (int k = 0; k < 2; k++)
        if (flat[k])
            shaped[k] =
                tg__tensor_alias(s, flat[k]->storage, loop->in.dt, lead, hidden->shape, cst, 0);
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
    tg__node *n = tg__node_new(s, &lin_def, lin_def.name, b ? 3 : 2, ins,
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

/* pre: this rank's status from the argument checks (only with a
 * communicator can it be other than TG_OK: every rank then still takes part
 * in the agreement, and in the first exchange after a later failure). */
static tg_status fused(tg_site s, tg_status pre, tg_tensor *hidden, tg_tensor *w, tg_tensor *b,
                       tg_tensor *y, const tg_linear_logprob_opts *o, tg_tensor **lp_out,
                       tg_tensor **h_out, tg_tensor **lse_out) {
    lin loop;
    memset(&loop, 0, sizeof loop);
    loop.in.s = s;
    loop.par.comm = o->comm;
    tg__vp vp;
    memset(&vp, 0, sizeof vp);
    tg_tensor *hc = NULL, *lse = NULL;
    fwd_out F = {NULL, NULL, NULL, 2};
    tg_status rc = pre;
    if (rc == TG_OK) rc = check(hidden, w, b, y, o);
    if (rc == TG_OK && loop.par.comm) rc = vp_checks(hidden, w->shape[0], o);
    if (rc == TG_OK) rc = prepare(&loop, hidden, w, b, y, o, &hc);
    tg_tensor *ins[3] = {hc, loop.in.w, loop.in.b};
    const bool record = rc == TG_OK && tg__needs_grad(b ? 3 : 2, ins);
    const bool grad_h = record && o->want_entropy && o->entropy_grad;
    if (loop.par.comm) {
        /* the exchange's buffers before the agreement: a failure is told in it */
        if (rc == TG_OK &&
            (rc = tg__vp_buf_new(loop.par.comm, WHO, loop.in.N, &loop.par.xb)) == TG_OK)
            loop.par.accs = loop.par.xb.mine;
        const bool want_hg = record && tg__needs_grad(1, &hc);
        tg__vp_sig sig = {loop.in.N,
                          loop.in.V,
                          o->vocab_start,
                          loop.in.in_dt,
                          o->temperature,
                          o->ignore_index,
                          (int64_t)o->want_entropy | (int64_t)o->entropy_grad << 1 |
                              (int64_t)(lse_out != NULL) << 2 | (int64_t)(b != NULL) << 3 |
                              (int64_t)want_hg << 4 | (int64_t)record << 5,
                          loop.in.yh,
                          loop.plan.chunk_rows,
                          loop.in.d};
        if ((rc = tg__vp_agree(loop.par.comm, WHO, rc, &sig, &vp)) != TG_OK) goto fail;
        loop.par.vp = &vp;
        loop.par.vstart = o->vocab_start;
        loop.plan.chunk_rows = vp.chunk; /* the same chunks on every rank */
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
                  (!(loop.buf.zbuf = ws_new(&loop, loop.in.dev, loop.in.dt, 1, &zn)) ||
                   conv_buffers(&loop) != TG_OK))
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
              ws_new(&loop, TG_CPU, TG_F64, 2, (int64_t[]){loop.in.N, STAGE_COLS})))
        rc = tg_last_status();
    if (rc == TG_OK && early)
        rc = hand_outputs(&loop, hidden, hc, b, o, record, grad_h, lse_out != NULL, true, &F,
                          &lse, ins);
    if (rc == TG_OK && early && !tg__ret_reserve(3)) rc = tg_last_status(); /* handing out */
    if (rc == TG_OK && loop.in.N > 0) rc = for_chunks(&loop, fwd_chunk, &F);
    if (loop.par.comm) rc = vp_finish(&loop, rc, &F); /* every rank, whatever rc is */
    if (rc != TG_OK) goto fail;
    if (loop.in.N > 0) {
        tg_tensor *ws[5] = {loop.buf.zbuf, loop.buf.hbuf, loop.buf.wbuf, loop.buf.bbuf,
                            loop.cur.bcur};
        for (int k = 0; k < 5; k++) tg__tensor_release(ws[k]);
        loop.buf.zbuf = loop.buf.hbuf = loop.buf.wbuf = loop.buf.bbuf = loop.cur.bcur = NULL;
    }
    if (early) {
        if (lse) tg__vp_lse_host(lse, F.st, F.nstat, loop.in.inv_t);
    } else if ((rc = hand_outputs(&loop, hidden, hc, b, o, record, grad_h, lse_out != NULL,
                                  false, &F, &lse, ins)) != TG_OK) {
        goto fail;
    }
    tg__tensor_release(F.st);
    tg__tensor_release(hc);
    lin_done(&loop);
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
    lin_done(&loop);
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
        st = check(hidden, weight, bias, targets, &o);
        if (st != TG_OK) return st;
        st = o.impl == TG_LOGPROB_FUSED
                 ? fused(s, TG_OK, hidden, weight, bias, targets, &o, &lp, &h, lse ? &l : NULL)
                 : composite(s, hidden, weight, bias, targets, &o, &lp, &h, lse ? &l : NULL);
    }
    if (st != TG_OK) return st;
    return tg__lpe_hand_out(lp, h, l, logprob, o.want_entropy ? entropy : NULL, lse);
}
