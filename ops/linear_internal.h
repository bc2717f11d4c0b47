/* ops/linear_internal.h - what the files of the fused linear op share
 * (tg_linear_logprob_entropy): the loop's state, the plan's sizes, and the
 * loop's steps each file calls in another:
 *   ops/linear_logprob.c  the checks, the composite impl and the public entry
 *   ops/linear_plan.c     the chunk and block sizes from the workspace budget
 *   ops/linear_loop.c     buffers, chunks of kept rows, blocks of the vocabulary
 *   ops/linear_forward.c  block statistics merged per row; the vocab-parallel merge
 *   ops/linear_backward.c dZ in place, the dh / dW / db GEMMs, the node
 * The loop itself is drawn in ops/linear_logprob.c's opening comment. */
#ifndef TG_OPS_LINEAR_INTERNAL_H
#define TG_OPS_LINEAR_INTERNAL_H

#include "comm_internal.h"
#include "logprob_internal.h"

#define WHO "tg_linear_logprob_entropy"
#define MIN_CHUNK 128   /* rows a GEMM wants before the vocabulary is split */
#define STAGE_COLS 5    /* merged outputs per row: logprob, entropy, M, ls, H */

/* The call's operands as the loop reads them. */
typedef struct lin_inputs {
    tg_site s;
    const char *who;     /* the op messages name: the entry called, or the node */
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

/* ---- forward --------------------------------------------------------------------- */

typedef struct fwd_out {
    tg_tensor *lp, *H, *st; /* (N), (N) or NULL, (N, nstat) or NULL */
    int nstat;
} fwd_out;

/* The global row of chunk row i. */
static inline int64_t tg__lin_row_of(const lin *loop, int64_t r0, int64_t i) {
    return r0 >= 0 ? r0 + i : loop->buf.rows[i];
}

/* The node (ops/linear_backward.c reads what ops/linear_logprob.c records). */
enum { P_IGNORE = 0, P_NSTAT = 1, P_LSE_OUT = 2, P_HAS_BIAS = 3, /* iparam */
       P_COMM = 4, P_VSTART = 5 };  /* the communicator (NULL: one process), vocab_start */
enum { P_INV_T = 0, P_CHUNK = 1, P_VBLOCK = 2, P_GRAD_F32 = 3 };   /* dparam */
/* Saved slots: hidden (contiguous), weight, targets (N) contiguous, stats
 * (N, nstat) f64, bias (when given). */
enum { S_H = 0, S_W = 1, S_Y = 2, S_ST = 3, S_B = 4 };

/* ---- ops/linear_logprob.c ------------------------------------------------------- */

/* The operands' dtypes, devices and shapes and the options (the message
 * names who). */
tg_status tg__lin_check(const char *who, const tg_tensor *h, const tg_tensor *w,
                        const tg_tensor *b, const tg_tensor *y, const tg_linear_logprob_opts *o);
/* Fills loop (loop->in.s, who and par.comm set) from checked inputs: the
 * plan, contiguous operands, the targets checked and on the host; *hc
 * receives hidden made contiguous (a new reference). */
tg_status tg__lin_prepare(lin *loop, tg_tensor *hidden, tg_tensor *w, tg_tensor *b, tg_tensor *y,
                          const tg_linear_logprob_opts *o, tg_tensor **hc);

/* ---- ops/linear_loop.c ---------------------------------------------------------- */

/* Releases the loop's buffers (before backward's bf16 gradients are made:
 * those then take the workspace's place rather than adding to it), and
 * everything the loop holds. */
void tg__lin_free_workspace(lin *loop);
void tg__lin_done(lin *loop);
/* A 2-D (cols >= 0) or 1-D alias of t's storage: rows rows from element off,
 * rs elements apart. */
tg_tensor *tg__lin_alias_rows(const lin *loop, const tg_tensor *t, int64_t off, int64_t rows,
                              int64_t cols, int64_t rs);
/* A workspace tensor on dev. */
tg_tensor *tg__lin_ws_new(const lin *loop, tg_device dev, tg_dtype dt, int ndim,
                          const int64_t *shape);
/* The chunk's rows of a per-row tensor: moved between its global rows and
 * the chunk's (to_chunk: gathered in; else scattered out). */
tg_status tg__lin_move_rows(const lin *loop, int64_t r0, int64_t c, tg_tensor *chunk_t,
                            tg_tensor *global_t, bool to_chunk);
/* Makes the chunk's rows of hidden, and the block's weight rows and bias,
 * current (loop->cur), converted where the GEMMs need it. */
tg_status tg__lin_load_chunk(lin *loop, int64_t r0, int64_t c);
tg_status tg__lin_load_block(lin *loop, int64_t v0, int64_t vb);
/* The block's logits (c, vb) in the workspace: Z = h W^T (+ b). */
tg_tensor *tg__lin_block_logits(const lin *loop, int64_t c, int64_t vb);
/* The workspace buffers the plan asks for. */
tg_status tg__lin_conv_buffers(lin *loop);
/* The chunk's targets within block [v0, v0 + vb) (outside: those in another
 * block). */
tg_tensor *tg__lin_local_targets(const lin *loop, int64_t r0, int64_t c, int64_t v0, int64_t vb,
                                 int64_t outside);
/* Calls fn(loop, r0, c, arg) for each chunk of c kept rows (r0 < 0: a
 * gathered chunk, its rows in loop->buf.rows). */
typedef tg_status (*chunk_fn)(lin *loop, int64_t r0, int64_t c, void *arg);
tg_status tg__lin_for_chunks(lin *loop, chunk_fn fn, void *arg);
/* TG_ERR_VALUE naming the row and the vocabulary entry of a bad logit. */
tg_status tg__lin_bad_entry(const lin *loop, const tg_tensor *Z, tg__lpe_bad *bad, int64_t r0,
                            int64_t v0, int64_t vb);

/* ---- ops/linear_forward.c -------------------------------------------------------- */

/* The chunk's rows of a per-row output. */
tg_tensor *tg__lin_out_rows(const lin *loop, tg_tensor *t, int64_t r0, int64_t c);
/* One chunk of forward (a chunk_fn; arg: the fwd_out). */
tg_status tg__lin_fwd_chunk(lin *loop, int64_t r0, int64_t c, void *arg);
/* Vocab-parallel: the exchange and the merge in rank order after the loop. */
tg_status tg__lin_vp_finish(lin *loop, tg_status rc, fwd_out *o);

/* ---- ops/linear_backward.c ------------------------------------------------------- */

/* What a chunk's backward reads and accumulates into. */
typedef struct tg__lin_bwd {
    tg_tensor *st;               /* (N, nstat) the rows' statistics */
    int nstat;
    tg_tensor *glp, *gH, *glse;  /* (N) upstream gradients or NULL; with g_local
                                    (c): the chunk's kept rows, in order */
    bool g_local;
    tg_tensor *dh, *dw, *db;     /* gradients being accumulated, or NULL */
    tg_tensor *ones;             /* (chunk_rows) ones for db, or NULL */
} tg__lin_bwd;

/* bf16 inputs: the f32 accumulators grads[0..3) (NULL ones skipped) become
 * bf16 gradients, each replaced in place; on failure the ones not yet
 * converted stay (the caller releases all). Other dtypes: nothing. */
tg_status tg__lin_grads_to_inputs(const lin *loop, tg_tensor **grads);
/* The GEMMs' layout: loop->in.in_dt, loop->in.dt and loop->in.dev set. */
void tg__lin_gemm_layout(lin *loop);
/* One chunk of backward: each block's logits (recomputed, or with z_ready
 * and one block the chunk's logits forward left in the workspace, its rows
 * and weight rows still current) turned into dZ in place, then dh, dW and
 * db accumulated. */
tg_status tg__lin_bwd_chunk(lin *loop, int64_t r0, int64_t c, tg__lin_bwd *B, bool z_ready);
/* The node's definition (backward, not_run). */
extern const tg__op_def tg__lin_def;

#endif
