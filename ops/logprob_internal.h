/* ops/logprob_internal.h - shared by the fused (ops/logprob.c) and composite
 * (ops/logprob_composite.c) implementations of tg_logprob_entropy. */
#ifndef TG_OPS_LOGPROB_INTERNAL_H
#define TG_OPS_LOGPROB_INTERNAL_H

#include "ops_internal.h"

/* Validates dtypes, shapes and options (not the target values). */
tg_status tg__lpe_check(const char *who, const tg_tensor *z, const tg_tensor *y,
                        const tg_logprob_opts *o);
/* A contiguous copy (or reference) of y with every non-ignored target checked
 * to be in [0, V); NULL with TG_ERR_VALUE naming the row otherwise. */
tg_tensor *tg__lpe_targets(tg_site s, const char *who, tg_tensor *y, int64_t V, int64_t ignore);
/* The values of a contiguous targets tensor yc on the host: its own data on
 * the CPU, else a copy put in *owned (give it to free()). NULL with the
 * error set. */
const int64_t *tg__lpe_targets_host(const char *who, const tg_tensor *yc, void **owned);
/* For a kernel that rejected row bad->row of z without saying where
 * (bad->col == TG__LPE_COL_UNKNOWN): finds the offending column and value on
 * a host copy of that row and fills them in. TG_OK, or the error of the
 * copy. */
tg_status tg__lpe_locate_bad(const char *who, const tg_tensor *z, tg__lpe_bad *bad,
                             double inv_t);
/* A flat (N) alias of a tensor of N elements (an upstream gradient of the
 * leading shape) when its dims merge, else of a contiguous copy of it. A
 * NULL t gives NULL with *ok true; a failure NULL with *ok false. */
tg_tensor *tg__lpe_flat(tg_site s, tg_tensor *t, int64_t N, bool *ok);
/* The dtype of the outputs for logits z: z's, or f32 for bf16 logits. */
tg_dtype tg__lpe_out_dtype(const tg_tensor *z);
/* The row log-sum-exp of z / T from saved statistics st (N, nstat) f64:
 * M inv_t + ls (0 on ignored rows, whose statistics are 0), a new tensor of
 * tg__lpe_out_dtype(z) and z's leading shape (its shape without the last dim). */
tg_tensor *tg__lpe_lse_of(tg_site s, const char *who, const tg_tensor *z, tg_tensor *st,
                          int nstat, double inv_t);
/* A contiguous (N) tensor seen in like's leading shape (like's shape
 * without its last dim): a new alias of its storage. */
tg_tensor *tg__lpe_lead_view(tg_site s, const tg_tensor *flat, const tg_tensor *like);
/* The same for the rows of st (N, nstat) as a new (N) tensor of dtype dt
 * on dev. */
tg_tensor *tg__lpe_lse_rows(tg_site s, const char *who, const tg_tensor *st, int nstat,
                            double inv_t, tg_device dev, tg_dtype dt);
/* Hands the outputs that were asked for to the caller (scope): lp always,
 * h when entropy is not NULL (else releases it), lse when lse_out is not
 * NULL. Takes over the references. */
tg_status tg__lpe_give_outputs(tg_tensor *lp, tg_tensor *h, tg_tensor *lse, tg_tensor **logprob,
                           tg_tensor **entropy, tg_tensor **lse_out);
/* Sets the error for a row of z the forward kernel rejected (looking the
 * column up when the backend did not give it). Returns it. */
tg_status tg__lpe_bad_row_error(const char *who, const tg_tensor *z, const tg__lpe_bad *bad,
                                double inv_t);
/* ---- row statistics merged across parts of the vocabulary ---------------------
 * (blocks of the fused linear op, ranks of the vocab-parallel ops). With
 * d = (z - M) / T over a part: S = sum exp(d), A = sum exp(d) d; two parts
 * combine by max-rescaling, M' = max(M_a, M_b), f = exp((M - M') / T):
 *   A' = f_a (A_a + S_a (M_a - M') / T) + f_b (A_b + S_b (M_b - M') / T),
 *   S' = f_a S_a + f_b S_b.
 * The combination is symmetric (the same bits whichever part comes first). */
typedef struct tg__lpe_acc {
    double M, S, A; /* as above; S == 0: nothing yet */
    double zy;      /* the target's logit, from the part that holds it */
} tg__lpe_acc;
/* A part's statistics as the fused kernels write them (row max M, ls =
 * log S, H = ls - A / S) as an accumulator (zy 0). */
tg__lpe_acc tg__lpe_acc_of(double M, double ls, double H);
/* a += b. */
void tg__lpe_acc_add(tg__lpe_acc *a, const tg__lpe_acc *b, double inv_t);
/* The merged row's logprob, entropy and ls = log S (lse = M / T + ls). */
void tg__lpe_acc_finish(const tg__lpe_acc *a, double inv_t, double *lp, double *H, double *ls);
/* Writes rows [r0, r0 + n) of the outputs from stage, a CPU (n, 5) f64
 * tensor of logprob, entropy, M, ls, H per row (copied to the outputs'
 * device first): lp, H (may be NULL) 1-D; st (may be NULL) (N, nstat) with
 * nstat 2 or 3. */
tg_status tg__lpe_put_rows(tg_site s, const char *who, tg_tensor *stage, int64_t r0,
                           tg_tensor *lp, tg_tensor *H, tg_tensor *st, int nstat);

/* ---- vocab-parallel (ops/vocab_parallel.c) ------------------------------------ */

/* The options every rank must share: the bits of tg__vp_sig.flags (the
 * agreement's message names them, vocab_parallel.c, in this order). */
enum {
    TG__AGREE_WANT_ENTROPY = 1 << 0,
    TG__AGREE_ENTROPY_GRAD = 1 << 1,
    TG__AGREE_LSE = 1 << 2,
    TG__AGREE_BIAS = 1 << 3,
    TG__AGREE_HIDDEN_GRAD = 1 << 4,
    TG__AGREE_RECORD = 1 << 5,
    TG__AGREE_NFLAGS = 6
};

/* What every rank brings to the agreement step. */
typedef struct tg__vp_sig {
    int64_t N, V, start;  /* rows, this rank's vocabulary rows and first row */
    int64_t dtype;
    double temperature;
    int64_t ignore;
    int64_t flags;        /* options that must agree: TG__AGREE_* bits */
    const int64_t *y;     /* (N) targets on the host (checksummed) */
    int64_t chunk;        /* the fused linear op's rows per chunk (0 otherwise) */
    int64_t d;            /* hidden size (0 for the logits op) */
} tg__vp_sig;

/* What the agreement established, the same on every rank. */
typedef struct tg__vp {
    int P, rank;
    int64_t V;            /* the whole vocabulary */
    int64_t *start, *len; /* [P] each rank's slice */
    int64_t chunk;        /* the least rows per chunk over the ranks */
} tg__vp;

/* The agreement step (ops/vocab_parallel.c has the protocol): local is this
 * rank's status so far (its message is this thread's last error), sig its
 * numbers (used only when local is TG_OK). On TG_OK *vp is filled (free it
 * with tg__vp_free); otherwise every rank returns the same error. */
tg_status tg__vp_agree(tg_comm *c, const char *who, tg_status local, const tg__vp_sig *sig,
                       tg__vp *vp);
void tg__vp_free(tg__vp *vp);
/* The target index within this rank's slice: y - start when inside,
 * TG__VP_IGNORED for an ignored row (the kernels' ignore mark in
 * vocab-parallel calls: never a local index, whatever ignore_index is), else
 * -1 (no target term). */
#define TG__VP_IGNORED INT64_MIN

int64_t tg__vp_local_target(const tg__vp *vp, int64_t y, int64_t ignore);
/* The buffers of one statistics exchange of n rows: this rank's
 * accumulators (mine, n, zeroed), every rank's (all, P x n, rank-major) and
 * the messages. Allocated before the agreement, so that a failure is told
 * there instead of by leaving a rank out of the exchange. */
typedef struct tg__vp_buf {
    int64_t n;
    tg__lpe_acc *mine, *all;
    char *send, *recv;
} tg__vp_buf;
tg_status tg__vp_buf_new(tg_comm *c, const char *who, int64_t n, tg__vp_buf *b);
void tg__vp_buf_free(tg__vp_buf *b);
/* Every rank's b->mine into b->all, with the local status carried along:
 * when a rank failed, every rank returns its error. One collective. */
tg_status tg__vp_exchange(tg_comm *c, const char *who, tg_status local, tg__vp_buf *b);
/* The merged rows m (n, 5) into outputs on the host, without allocating:
 * logprob and entropy (contiguous, f32 or f64, n elements, entropy may be
 * NULL) and the statistics (n, nstat) f64 (columns 2.. of m; may be NULL). */
void tg__vp_put_rows_host(const double *m, int64_t n, tg_tensor *lp, tg_tensor *H, tg_tensor *st,
                          int nstat);
/* The lse (contiguous, f32 or f64) from the statistics st (n, nstat) on the
 * host: M inv_t + ls in f64, then rounded (tg__lpe_lse_of's order). */
void tg__vp_lse_host(tg_tensor *lse, const tg_tensor *st, int nstat, double inv_t);
/* Merges the P parts of each row in rank order into stage (n, 5): logprob,
 * entropy, M, ls, H (zeros for ignored rows); y the rows' global targets. */
void tg__vp_merge(const tg__vp *vp, const int64_t *y, int64_t ignore, const tg__lpe_acc *all,
                  int64_t n, double inv_t, double *stage);

/* Records the fused op's node for outputs lp, h (used when nstat is 3) and
 * lse (may be NULL), saving z, the targets yc (as the kernels read them)
 * and the statistics st. TG_OK or the error (nothing recorded then). */
tg_status tg__lpe_record(tg_site s, tg_tensor *z, tg_tensor *yc, tg_tensor *st, int nstat,
                         const tg_logprob_opts *o, tg_tensor *lp, tg_tensor *h, tg_tensor *lse);
/* The vocab-parallel tg_logprob_entropy(_lse) (ops/vocab_parallel.c):
 * pre is this rank's status from the argument checks already made. Hands
 * the outputs to the caller's scope like the public entries. */
tg_status tg__vp_logprob(tg_site s, const char *who, tg_status pre, tg_tensor *z, tg_tensor *y,
                         const tg_logprob_opts *o, tg_tensor **logprob, tg_tensor **entropy,
                         tg_tensor **lse);

/* The composite implementation; outputs are new references (not in scopes);
 * errors name `who` (the public op called). */
tg_status tg__lpe_composite(tg_site s, const char *who, tg_tensor *z, tg_tensor *y,
                            const tg_logprob_opts *o, tg_tensor **lp, tg_tensor **h);

#endif
