/* tapegrad/logprob.h - fused, chunked log-prob and entropy of logits.
 *
 * For logits z with rows of length V (any leading shape, flattened to N rows;
 * rows may be a strided view such as logits[:, -n-1:-1, :], read in place),
 * integer targets y with the leading shape, and a temperature T, with x = z/T:
 *   lse = logsumexp(x),  logprob = x[y] - lse,
 *   p = exp(x - lse),    entropy = lse - sum(p * x).
 * Backward, for upstream g_lp and g_H per row:
 *   dx = g_lp * (onehot(y) - p) - g_H * p * (x - lse + entropy),  dz = dx / T.
 *
 * The fused implementation makes one pass over the logits in forward (online
 * max / sum-exp / sum-exp*x) and saves, per row, only what backward needs
 * (the row max and log-sum-exp, and the entropy when its gradient is wanted:
 * 16 or 24 bytes) plus a version-checked reference to the logits; backward is one pass that reads the logits and
 * writes their gradient. No (N, V) temporary is made. The composite
 * implementation builds the same quantities from generic ops (log_softmax,
 * gather, softmax, mul, sum): it is the baseline the fused op is measured
 * against, and with a chunk size it recomputes each chunk in backward.
 */
#ifndef TAPEGRAD_LOGPROB_H
#define TAPEGRAD_LOGPROB_H

#include "comm.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_logprob_impl {
    TG_LOGPROB_FUSED = 0,     /* one-pass kernels, nothing (N, V) saved */
    TG_LOGPROB_COMPOSITE = 1  /* generic ops: the teaching baseline */
} tg_logprob_impl;

typedef struct tg_logprob_opts {
    double temperature;     /* > 0; applied inside the kernels (default 1) */
    int64_t ignore_index;   /* rows with this target: logprob 0, entropy 0, no
                               gradient, logits never read (default -100) */
    int64_t chunk_size;     /* rows per block, 0 = all rows at once (default 0).
                               Fused: results are bitwise identical for every
                               chunk size. Composite: each chunk is a
                               checkpoint recomputed in backward. */
    bool want_entropy;      /* compute the entropy (default true) */
    bool entropy_grad;      /* the entropy takes part in backward (default
                               true). false = its coefficient is 0: nothing is
                               saved for it and backward has no entropy term;
                               the entropy returned does not require grad. */
    tg_logprob_impl impl;   /* default TG_LOGPROB_FUSED */
    bool grad_into_logits;  /* backward writes the logits' gradient over the
                               logits (llm.c's in-place dlogits): no second
                               (N, V) buffer. Then the logits' storage holds
                               the gradient, and its version moves, so any
                               other saved use of the logits (another op that
                               saved them, a second backward) fails backward
                               with the usual message naming this op. Needs
                               the fused impl and contiguous logits made by an
                               op (not a leaf: its .grad would share the
                               logits' memory; nor a view of a leaf that
                               requires grad: the leaf's values would be
                               overwritten); TG_ERR_VALUE otherwise.
                               Logits on read-only memory (tg_mark_read_only)
                               are refused, TG_ERR_READONLY, by this op, or
                               by tg_backward when marked after the forward
                               (nothing written). Default false. */
    tg_comm *comm;          /* vocab-parallel (tapegrad/comm.h): the logits are
                               this rank's slice of the vocabulary, rows
                               [vocab_start, vocab_start + V) of it; targets
                               are global ids; the outputs are the global
                               values, the same on every rank. Every rank of
                               comm makes the call. Needs the fused impl, f32
                               or f64 logits, no grad_into_logits; backward
                               needs no collective. The communicator must
                               outlive the graph. Default NULL: one process. */
    int64_t vocab_start;    /* with comm: this rank's first vocabulary row */
} tg_logprob_opts;

/* The defaults listed above. */
tg_logprob_opts tg_logprob_opts_default(void);

/* Computes logprob (and entropy) of logits at targets.
 * logits: f32, f64 or bf16 (read in chunks of rows converted to f32: the
 * outputs are then f32 and the gradient bf16), ndim >= 1, shape (..., V) with
 * V >= 1, any strides; no rows (a leading size 0) give empty outputs.
 * targets: i64 with shape (...) (logits' shape without its last dim).
 * opts: NULL for the defaults.
 * *logprob receives a new tensor of shape (...) and logits' dtype; *entropy
 * too when opts->want_entropy (entropy may be NULL otherwise; it is set to
 * NULL then). Under no-grad, or when logits do not require grad, nothing is
 * recorded or saved.
 * Errors (outputs set to NULL, nothing written, nothing leaked):
 * TG_ERR_NULL; TG_ERR_DTYPE (logits not f32/f64/bf16, targets not i64);
 * TG_ERR_SHAPE (targets' shape is not logits' leading shape, V == 0);
 * TG_ERR_VALUE (temperature not finite and > 0, chunk_size < 0, impl unknown;
 * a non-ignored target outside [0, V): the message names the row and value;
 * a non-ignored row whose logits are all -inf or contain NaN or +inf: the
 * message names the row, and the column and value of the first bad entry);
 * TG_ERR_NOMEM. */
tg_status tg_logprob_entropy_at(tg_site s, tg_tensor *logits, tg_tensor *targets,
                                const tg_logprob_opts *opts, tg_tensor **logprob,
                                tg_tensor **entropy);
#define tg_logprob_entropy(logits, targets, opts, logprob, entropy)                            \
    tg_logprob_entropy_at(TG_SITE, logits, targets, opts, logprob, entropy)

/* tg_logprob_entropy that also returns, in *lse, the row log-sum-exp of
 * logits / T (shape (...), logits' dtype; 0 on ignored rows): z-loss costs
 * no extra pass (the fused op has it from its statistics; the composite one
 * computes logsumexp). Its gradient, when the loss uses it, is g_lse * p / T,
 * added in the same backward pass; unused, it costs nothing in backward.
 * lse must not be NULL. Errors as tg_logprob_entropy; all outputs are set
 * to NULL on failure. */
tg_status tg_logprob_entropy_lse_at(tg_site s, tg_tensor *logits, tg_tensor *targets,
                                    const tg_logprob_opts *opts, tg_tensor **logprob,
                                    tg_tensor **entropy, tg_tensor **lse);
#define tg_logprob_entropy_lse(logits, targets, opts, logprob, entropy, lse)                   \
    tg_logprob_entropy_lse_at(TG_SITE, logits, targets, opts, logprob, entropy, lse)

/* ---- the logits never exist: fused linear + log-prob + entropy --------------
 *
 * For hidden states h (..., d) (N rows), the output layer's weight W (V, d)
 * and bias b (V) or none, the logits z = h W^T + b are the input of
 * tg_logprob_entropy; this op computes the same outputs without ever holding
 * z or its gradient whole. Rows are taken `chunk_rows` at a time and the
 * vocabulary `vocab_block` rows of W at a time: each block's logits are one
 * GEMM into a workspace, their online statistics (max, sum-exp, sum-exp * x,
 * the target logit) are merged across blocks, and the chunk's outputs come
 * from the merged statistics. Ignored rows are never multiplied. Backward
 * recomputes each block's logits, turns them into their gradient in place
 * (the upstream gradients of logprob, entropy and lse applied there) and
 * accumulates dh (GEMM), dW and db (GEMMs, fixed order: the same bits from
 * run to run on the CPU). Saved: per row the max and log-sum-exp (and the
 * entropy when its gradient is wanted), plus version-checked references to
 * h, W, b and the targets. docs/design.md draws the loop. */

typedef struct tg_linear_logprob_opts {
    double temperature;       /* > 0 (default 1) */
    int64_t ignore_index;     /* rows with this target: outputs 0, no gradient,
                                 never multiplied (default -100) */
    bool want_entropy;        /* default true */
    bool entropy_grad;        /* default true; false: no entropy term in
                                 backward and nothing saved for it */
    tg_logprob_impl impl;     /* TG_LOGPROB_FUSED (default): the chunked loop;
                                 TG_LOGPROB_COMPOSITE: tg_matmul (+ bias) then
                                 the fused logits op, the (N, V) logits made
                                 (the baseline the loop is measured against) */
    size_t workspace_bytes;   /* budget for the loop's buffers, from which the
                                 chunk and block are derived; 0 (the
                                 default): on the CPU an eighth of the
                                 (N, V) logits' bytes (f32 for bf16), at
                                 least TG_LINEAR_LOGPROB_WORKSPACE_MIN and
                                 at most tg_linear_logprob_default_workspace();
                                 on CUDA the latter */
    int64_t chunk_rows;       /* rows per chunk, 0 = from the budget */
    int64_t vocab_block;      /* vocabulary rows per block, 0 = from the budget */
    bool grad_f32;            /* bf16 inputs: their gradients in f32 (the f32
                                 accumulators as they are) instead of bf16,
                                 the inputs' dtype (default false, as PyTorch) */
    tg_comm *comm;            /* vocab-parallel (tapegrad/comm.h): weight and
                                 bias are this rank's rows [vocab_start,
                                 vocab_start + V) of the output layer; targets
                                 are global ids; the outputs are the global
                                 values on every rank. Forward: one agreement
                                 and one statistics all-gather per call;
                                 backward: one agreement and one all-reduce
                                 of d hidden per call. Every rank
                                 of comm makes the call; the communicator must
                                 outlive the graph. Default NULL. */
    int64_t vocab_start;      /* with comm: this rank's first vocabulary row */
    tg_device device;         /* tg_linear_logprob_plan_for only: the device
                                 the plan is for (default TG_CPU; the op uses
                                 its inputs' device whatever this says). With
                                 bf16 on TG_CUDA the GEMMs read bf16 on the
                                 tensor cores, so the workspace holds no f32
                                 copy of hidden or weight rows, and backward
                                 a bf16 copy of each block's logit gradient */
} tg_linear_logprob_opts;

#define TG_LINEAR_LOGPROB_WORKSPACE ((size_t)256 << 20) /* 256 MiB */
#define TG_LINEAR_LOGPROB_WORKSPACE_MIN ((size_t)1 << 20) /* 1 MiB */
#define TG_LINEAR_LOGPROB_WORKSPACE_CUDA_MAX ((size_t)2 << 30) /* 2 GiB */

/* The defaults listed above. */
tg_linear_logprob_opts tg_linear_logprob_opts_default(void);

/* The most a zero workspace_bytes stands for on dev (on the CPU the plan
 * takes less: an eighth of the logits' bytes). TG_CPU:
 * TG_LINEAR_LOGPROB_WORKSPACE. TG_CUDA: a sixteenth of the device's free
 * memory the first time it is asked in the process (then remembered, so a
 * run's steps share one plan), at least TG_LINEAR_LOGPROB_WORKSPACE and at
 * most TG_LINEAR_LOGPROB_WORKSPACE_CUDA_MAX (TG_LINEAR_LOGPROB_WORKSPACE
 * without a device). On the GPU the chunk's GEMMs want a few thousand rows: with a
 * vocabulary of 128256 in bf16, 256 MiB holds ~340 rows and the step takes
 * 1.5x as long as with 1 GiB (~1360 rows); beyond 2 GiB nothing is gained
 * (bench/README.md has the figures). Never fails. */
size_t tg_linear_logprob_default_workspace(tg_device dev);

/* What the loop will use for N rows of width d, a vocabulary of V and dtype
 * dt (f32, f64 or bf16: then the logits, statistics and gradients are f32;
 * on the CPU the workspace also holds the chunk's rows and the block's
 * weight rows converted to f32, on CUDA a bf16 copy of each block's logit
 * gradient instead) under opts (NULL: defaults) on opts->device. */
typedef struct tg_linear_logprob_plan {
    int64_t chunk_rows;       /* rows per chunk (>= 1) */
    int64_t vocab_block;      /* vocabulary rows per block (1..V) */
    int64_t n_blocks;         /* ceil(V / vocab_block) */
    size_t forward_workspace; /* bytes of workspace forward holds at most */
    size_t backward_workspace;/* bytes of workspace backward holds at most (its
                                 gradients dh, dW, db not included) */
    size_t saved_per_row;     /* bytes saved per row (16, or 24 with the
                                 entropy's gradient) */
} tg_linear_logprob_plan;

/* Fills *plan. Errors: TG_ERR_NULL (plan); TG_ERR_DTYPE (dt not f32/f64/bf16);
 * TG_ERR_VALUE (N < 0, d < 0, V < 1, chunk_rows or vocab_block < 0, a
 * budget too small for one row of one vocabulary row: the message gives the
 * smallest budget that works); TG_ERR_DEVICE (an unknown opts->device). */
tg_status tg_linear_logprob_plan_for(int64_t N, int64_t d, int64_t V, tg_dtype dt, bool has_bias,
                                     const tg_linear_logprob_opts *opts,
                                     tg_linear_logprob_plan *plan);

/* logprob, entropy and (when lse is not NULL) the row log-sum-exp of
 * z / T for z = hidden @ weight^T + bias, as tg_logprob_entropy_lse would
 * give for those logits.
 * hidden: f32, f64 or bf16, shape (..., d), d >= 0 (d = 0: the logits are
 * the bias, or 0; copied once when not contiguous); no rows give empty
 * outputs and zero gradients of weight and bias, as PyTorch. weight: (V, d),
 * V >= 1, hidden's dtype and device. bias: (V)
 * or NULL. targets: i64, hidden's leading shape. opts: NULL for defaults.
 * Outputs: new tensors of hidden's leading shape and dtype (f32 for bf16
 * inputs: bf16 is read, every sum is f32); *entropy when
 * want_entropy (else NULL; entropy may be NULL then); *lse when lse is not
 * NULL. Gradients flow to whichever of hidden, weight and bias require grad;
 * nothing is recorded or saved under no-grad or when none does.
 * Errors (all outputs NULL, nothing written or leaked): TG_ERR_NULL
 * (hidden, weight, targets, logprob, entropy when wanted); TG_ERR_DTYPE;
 * TG_ERR_DEVICE (operands on different devices); TG_ERR_SHAPE (weight not
 * (V, d) for hidden's d, bias not (V), targets not hidden's leading shape);
 * TG_ERR_VALUE (the options, as tg_linear_logprob_plan_for and
 * tg_logprob_entropy; a target outside [0, V) naming its row; a kept row
 * whose logits hold NaN or +inf, or are all -inf: the message names the row
 * and the vocabulary entry); TG_ERR_NOMEM; TG_ERR_CUDA. */
tg_status tg_linear_logprob_entropy_at(tg_site s, tg_tensor *hidden, tg_tensor *weight,
                                       tg_tensor *bias, tg_tensor *targets,
                                       const tg_linear_logprob_opts *opts, tg_tensor **logprob,
                                       tg_tensor **entropy, tg_tensor **lse);
#define tg_linear_logprob_entropy(hidden, weight, bias, targets, opts, logprob, entropy, lse)   \
    tg_linear_logprob_entropy_at(TG_SITE, hidden, weight, bias, targets, opts, logprob,       \
                                 entropy, lse)

/* ---- the loss known in forward: tg_linear_loss -------------------------------
 *
 * Most RL and fine-tuning losses are a sum over tokens of a function of the
 * token's log-prob, entropy and log-sum-exp and of per-token constants known
 * before the step (cross-entropy, PPO's clipped surrogate, GRPO / DAPO, KL
 * to a reference policy, the entropy bonus, the z-loss). Given such a loss
 * as a callback, tg_linear_loss computes it and its gradient in one pass
 * over the logits: for each chunk of rows, forward computes the chunk's
 * statistics (one GEMM per vocabulary block), runs the callback's loss and
 * its backward with tapegrad's own engine to get the per-row gradients of
 * log-prob, entropy and lse, turns the chunk's logits into their gradient
 * in place and accumulates the gradients of hidden, weight and bias (two
 * GEMMs): three GEMMs of 2 N d V in all where tg_linear_logprob_entropy
 * followed by the loss makes four (backward recomputes the logits). When
 * the plan splits the vocabulary into several blocks the logits of a chunk
 * are not whole in the workspace and are recomputed (four GEMMs); the
 * default plan keeps the whole vocabulary whenever 128 rows of it fit. */

/* What the callback is given for one chunk. The chunk is the rows
 * [row_start, row_end) of hidden's N rows (row-major over its leading
 * dimensions); chunks follow each other and cover every row, ignored rows
 * included (their statistics are 0 and whatever gradient the loss gives
 * them is dropped). */
typedef struct tg_linear_loss_chunk {
    int64_t index;         /* 0, 1, ... in row order */
    int64_t row_start, row_end;
    /* (row_end - row_start), the compute dtype (f32 for bf16 inputs),
     * hidden's device: new leaves, requiring grad when the call records a
     * gradient (entropy only with entropy_grad). Borrowed: valid during the
     * call; the callback must not keep them or modify them in place. */
    tg_tensor *logprob;    /* log softmax(z / T)[target] */
    tg_tensor *entropy;    /* the entropy of softmax(z / T) */
    tg_tensor *lse;        /* logsumexp(z / T) */
    const int64_t *targets;/* (row_end - row_start) the chunk's targets, on the host */
} tg_linear_loss_chunk;

/* Builds, with tapegrad's ops, the loss of one chunk as a one-element
 * tensor of a floating dtype on hidden's device, and stores it in *loss.
 * The scopes opened outside are hidden during the call, as in a custom
 * function. With callback_scope (the default) the callback runs inside a
 * scope of its own: whatever it makes is released when it returns, except
 * *loss, which tg_linear_loss takes (also a reference the callback owns
 * outright, from tg_retain); nested calls need no cleanup. Without it
 * (bindings whose objects own their references) no scope is open: the
 * callback owns what it makes and *loss is a new reference it gives away.
 * No lock of the library is held during the call: it may call any
 * function, on this or another thread.
 * The loss may depend on the chunk's logprob, entropy and lse and on
 * tensors that do not require grad (per-token constants, sliced with the
 * chunk's rows); nothing else that requires grad. Returns TG_OK, or an
 * error (any tapegrad status; the message is kept in tg_linear_loss's). */
typedef tg_status (*tg_linear_loss_fn)(const tg_linear_loss_chunk *chunk, void *user,
                                       tg_tensor **loss);

typedef struct tg_linear_loss_opts {
    double temperature;       /* > 0 (default 1) */
    int64_t ignore_index;     /* rows with this target are never multiplied
                                 (default -100) */
    bool entropy_grad;        /* default true; false: the entropy given to the
                                 callback does not require grad (no entropy
                                 term in the gradient, as a detached entropy) */
    bool grad_f32;            /* bf16 inputs: gradients in f32 (default false) */
    size_t workspace_bytes;   /* as tg_linear_logprob_opts (0: the default) */
    int64_t chunk_rows;       /* kept rows per chunk, 0 = from the budget */
    int64_t vocab_block;      /* 0 = from the budget (the whole vocabulary when
                                 128 rows fit) */
    /* Sequence boundaries (NULL: none): n_seqs lengths >= 0 summing to N.
     * Chunks then hold whole sequences, so that a loss over a sequence (GSPO's
     * sequence-level ratio, a sequence mean) sees all of it; a sequence with
     * more kept rows than chunk_rows is a chunk of its own, and the workspace
     * grows to hold it. Borrowed during the call. */
    const int64_t *seq_lens;
    int64_t n_seqs;
    bool callback_scope;      /* the callback runs in a scope of its own
                                 (default true; see tg_linear_loss_fn) */
} tg_linear_loss_opts;

/* The defaults listed above. */
tg_linear_loss_opts tg_linear_loss_opts_default(void);

/* The sum over chunks of loss_fn's losses for z = hidden @ weight^T + bias,
 * with its gradient computed in forward.
 * hidden (..., d), weight (V, d), bias (V) or NULL, targets (...): as
 * tg_linear_logprob_entropy. loss_fn: called once per chunk, in row order,
 * on this thread, with user. opts: NULL for defaults.
 * Outputs: *loss, a new 0-d tensor of the compute dtype (f32 for bf16
 * inputs) on hidden's device; when hidden, weight or bias requires grad (and
 * grad mode is on) its grad_fn (LinearLossBackward) holds the gradients
 * computed in forward (in the inputs' dtype, or f32 with grad_f32) and hands
 * them, times the upstream gradient, to the inputs that require grad;
 * hidden, weight and bias are also saved for the version check, so an
 * in-place edit of one before backward fails there as in the fused op.
 * *logprob and *entropy (may be NULL: not wanted): hidden's leading shape,
 * the compute dtype, no grad_fn (for logging).
 * Errors (all outputs NULL, nothing leaked, no .grad changed): those of
 * tg_linear_logprob_entropy (TG_ERR_NULL also for loss_fn and loss;
 * TG_ERR_VALUE for seq_lens that are negative or do not sum to N); and for
 * a chunk whose loss is refused, the message naming the chunk's rows:
 * the callback's own status when it fails; TG_ERR_VALUE when it returns no
 * loss, or a loss that depends on a tensor requiring grad other than the
 * chunk's logprob, entropy and lse (another chunk's, a parameter);
 * TG_ERR_SHAPE for a loss of more than one element; TG_ERR_DTYPE for one
 * not floating; TG_ERR_DEVICE for one on another device. */
tg_status tg_linear_loss_at(tg_site s, tg_tensor *hidden, tg_tensor *weight, tg_tensor *bias,
                            tg_tensor *targets, tg_linear_loss_fn loss_fn, void *user,
                            const tg_linear_loss_opts *opts, tg_tensor **loss,
                            tg_tensor **logprob, tg_tensor **entropy);
#define tg_linear_loss(hidden, weight, bias, targets, loss_fn, user, opts, loss, logprob,      \
                       entropy)                                                                 \
    tg_linear_loss_at(TG_SITE, hidden, weight, bias, targets, loss_fn, user, opts, loss,       \
                      logprob, entropy)

#ifdef __cplusplus
}
#endif
#endif
