/* ops/linear_plan.c - the fused linear op's plan: rows per chunk and
 * vocabulary rows per block from the workspace budget (tg_linear_logprob_plan_for,
 * tg_linear_logprob_default_workspace). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linear_internal.h"

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

/* The budget a zero workspace_bytes stands for at N x V (es bytes a
 * logit): on the CPU an eighth of the logits the op avoids (the peak stays
 * near a tenth of the naive step's), at least TG_LINEAR_LOGPROB_WORKSPACE_MIN
 * and at most the device's default; on a GPU the device's default (its
 * GEMMs want chunks of thousands of rows: docs/api.md). */
static size_t default_budget(tg_device dev, int64_t N, int64_t V, size_t es) {
    const size_t dflt = tg_linear_logprob_default_workspace(dev);
    if (dev != TG_CPU) return dflt;
    const double eighth = (double)N * (double)V * (double)es / 8.0;
    if (eighth >= (double)dflt) return dflt;
    const size_t b = (size_t)eighth;
    return b < TG_LINEAR_LOGPROB_WORKSPACE_MIN ? TG_LINEAR_LOGPROB_WORKSPACE_MIN : b;
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
    if (N < 0 || d < 0 || V < 1)
        return tg__set_error(TG_ERR_VALUE, "%s: need N >= 0, d >= 0 and V >= 1, got N %lld, "
                             "d %lld, V %lld", who, (long long)N, (long long)d, (long long)V);
    if (o.chunk_rows < 0 || o.vocab_block < 0)
        return tg__set_error(TG_ERR_VALUE, "%s: chunk_rows and vocab_block must be >= 0, got "
                             "%lld and %lld", who, (long long)o.chunk_rows,
                             (long long)o.vocab_block);
    if (o.device != TG_CPU && o.device != TG_CUDA)
        return tg__set_error(TG_ERR_DEVICE, "%s: unknown device %d", who, (int)o.device);
    const bool bf = dt == TG_BF16, tc = bf && tg__k_has_bf16_gemm(o.device);
    const size_t es = bf ? 4 : tg_dtype_size(dt), dz_es = tc ? 2 : 0;
    const size_t B = o.workspace_bytes ? o.workspace_bytes
                                       : default_budget(o.device, N, V, es);
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
