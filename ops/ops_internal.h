/* ops/ops_internal.h - what the ops share: the internal entry points of the
 * ops (no scope registration, for backward formulas and composite ops), CPU
 * scalar promotion, and the in-place-on-a-view machinery. Includes the core
 * (tape/core.h); nothing below ops/ includes this header.
 *
 * How an op is written (ops/elementwise.c shows the pattern; docs/design.md
 * "Adding an op" the recipe):
 *   1. check arguments: tg__null_arg() for NULL propagation, then dtype/shape,
 *      failing with tg__fail(status, "tg_op: ...") (returns NULL);
 *   2. allocate the result with tg__new_output_on() (category activation, or
 *      gradient while backward runs) and run the kernel (tg__k_*);
 *   3. if tg__needs_grad(n_in, inputs): node = tg__record(site, &def, ...),
 *      then tg__node_save() what backward needs (inputs, or the output: saving
 *      the output stores its storage, never the handle, so no cycle);
 *   4. the public tg_op_at() returns tg__ret(result), which hands it to the
 *      innermost open scope. Internal callers (backward formulas, composite
 *      ops) call the tg__ functions, which never touch scopes.
 * Backward formulas run with grad mode off and return, for each input i with
 * n->edge[i].kind != TG__EDGE_NONE, a new tensor of shape n->in_meta[i] (or
 * NULL for zero) in gin[i]. gout[k] may be NULL only for nodes with several
 * outputs (that output received no gradient).
 */
#ifndef TG_OPS_INTERNAL_H
#define TG_OPS_INTERNAL_H

#include "tapegrad.h"
#include "../tape/core.h"

/* ---- internal op entry points (no scope registration) ---------------------- */
tg_tensor *tg__add(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__sub(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__mul(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__div(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__pow(tg_site s, tg_tensor *a, tg_tensor *b);
/* The saved slot of n's result when n is tg_pow's node (PowBackward), else -1
 * (n may be NULL). */
int tg__pow_result_slot(const tg__node *n);
tg_tensor *tg__neg(tg_site s, tg_tensor *t);
tg_tensor *tg__scale(tg_site s, tg_tensor *t, double k);
tg_tensor *tg__where(tg_site s, tg_tensor *c, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__sum_dim(tg_site s, tg_tensor *t, int dim, bool keepdim);
tg_tensor *tg__mean_dim(tg_site s, tg_tensor *t, int dim, bool keepdim);
/* tg_logprob_entropy without the scope: *lp and *h (NULL unless the entropy
 * is wanted) are the caller's references; errors name `who`. */
tg_status tg__logprob_entropy(tg_site s, const char *who, tg_tensor *logits, tg_tensor *targets,
                              const tg_logprob_opts *opts, tg_tensor **lp, tg_tensor **h);
/* tg__logprob_entropy with the row log-sum-exp of z / T in *lse when lse is
 * not NULL (0 on ignored rows; its gradient g_lse p / T). */
tg_status tg__logprob_entropy_lse(tg_site s, const char *who, tg_tensor *logits,
                                  tg_tensor *targets, const tg_logprob_opts *opts, tg_tensor **lp,
                                  tg_tensor **h, tg_tensor **lse);
/* tg_logsumexp_dim and the scalar comparisons without the scope (new references). */
tg_tensor *tg__logsumexp_dim(tg_site s, tg_tensor *t, int dim, bool keepdim);
tg_tensor *tg__test_scalar(tg_site s, const char *who, tg__testop op, tg_tensor *t, double v);
/* Sum (mean false) or mean of all elements: a 0-d tensor. */
tg_tensor *tg__reduce_all(tg_site s, tg_tensor *t, bool mean);
/* The dims list of a multi-dim reduction (ops/reduce.c): red[d] for the
 * ndim dims of the input, true where listed (every dim for ndims 0, as
 * PyTorch's dim=()). False with TG_ERR_VALUE (ndims outside 0..8), TG_ERR_NULL
 * (dims NULL) or TG_ERR_DIM (out of range, repeated), naming who. */
bool tg__dims_mask(const char *who, int ndims, const int *dims, int ndim, bool *red);
/* The result shape of reducing (ndim, shape) over red (keepdim: size 1
 * there): its ndim; *count the elements reduced into each result. */
int tg__reduced_shape(int ndim, const int64_t *shape, const bool *red, bool keepdim,
                      int64_t *oshape, int64_t *count);
/* t with the dims of red moved last and merged into one (the kept dims first,
 * in order): a recorded permute + reshape, so a line reduction along its last
 * dim reduces over every dim of red with the gradient of the whole set (a 0-d
 * t becomes (1)). New reference, or NULL with the error set. */
tg_tensor *tg__merge_reduced(tg_site s, tg_tensor *t, const bool *red);
/* Sums g over broadcast dimensions down to shape m (for the backward of
 * broadcasting ops and expand). Returns a new reference (g retained if the
 * shapes already match). */
tg_tensor *tg__sum_to(tg_site s, tg_tensor *g, const tg__meta *m);
tg_tensor *tg__matmul(tg_site s, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__softmax(tg_site s, tg_tensor *t);
tg_tensor *tg__log_softmax(tg_site s, tg_tensor *t);
tg_tensor *tg__gather(tg_site s, tg_tensor *t, tg_tensor *index);
/* tg_gather_dim without the scope (recorded: GatherBackward); errors name who. */
tg_tensor *tg__gather_dim(tg_site s, const char *who, tg_tensor *t, int dim, tg_tensor *index);
tg_tensor *tg__transpose(tg_site s, tg_tensor *t, int d0, int d1);
tg_tensor *tg__slice(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t end, int64_t step);
tg_tensor *tg__narrow(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t length);
tg_tensor *tg__permute(tg_site s, tg_tensor *t, int ndim, const int *dims);
tg_tensor *tg__squeeze(tg_site s, tg_tensor *t, int dim);
tg_tensor *tg__unsqueeze(tg_site s, tg_tensor *t, int dim);
tg_tensor *tg__contiguous(tg_site s, tg_tensor *t);
tg_tensor *tg__clone(tg_site s, tg_tensor *t);
tg_tensor *tg__view(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
tg_tensor *tg__reshape(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
/* Contiguous t seen with another shape, recorded like tg_view, but NOT a view:
 * for an op's internal result whose storage nobody else will hold (the
 * result then behaves as a tensor of its own under in-place ops).
 * TG_ERR_INTERNAL if t is not contiguous or the element counts differ. */
tg_tensor *tg__reshape_own(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
tg_tensor *tg__expand(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
tg_tensor *tg__to_dtype(tg_site s, tg_tensor *t, tg_dtype dt);
/* i64 arithmetic (ops/intarith.c): op of two i64 tensors (broadcast), and
 * unary op `code` of an i64 or bool tensor by PyTorch's rules (an integer
 * result, the op in f32, or TG_ERR_DTYPE where PyTorch refuses). Never
 * recorded. */
tg_tensor *tg__int_binary(tg_site s, const char *who, tg__intop op, tg_tensor *a, tg_tensor *b);
tg_tensor *tg__int_unary(tg_site s, const char *who, tg__unop code, tg_tensor *t, double p0,
                         double p1);
/* ---- type promotion (ops/promote.c) ------------------------------------------ */

/* PyTorch's promote_types: the wider of a and b (bool < i64 < bf16 < f32 < f64,
 * bf16 with f32 giving f32). */
tg_dtype tg__promote_types(tg_dtype a, tg_dtype b);
/* PyTorch's result_type of ts[0..n) (NULL entries skipped): 0-d tensors count
 * only when their category (bool, integer, floating) is higher than that of
 * the tensors with dims. */
tg_dtype tg__result_type(int n, tg_tensor *const *ts);
/* Replaces each ts[k] whose dtype is not dt by a recorded tg_to_dtype of it
 * (owned[k] the reference to release, NULL for the others; release with
 * tg__release_promoted). False with the error set, nothing left to release. */
bool tg__convert_operands(tg_site s, tg_dtype dt, int n, tg_tensor **ts, tg_tensor **owned);

/* tg_to_device without the scope (recorded: its backward copies back). */
tg_tensor *tg__to_device(tg_site s, tg_tensor *t, tg_device dev);

/* ---- the unary op table (ops/unary.c) ---------------------------------------- */

/* One unary elementwise op. Its formulas are kernels/kernel.h's (for both
 * backends); the entry says how the library sees it. What the tests know of
 * it (a reference in double, its smooth range, PyTorch's gradient at its
 * kinks) is its row in the op registry, tests/registry/rows_elementwise.c. */
typedef struct tg__unary_info {
    const char *name;      /* the public function, "tg_exp" */
    tg__op_def def;        /* the node: its name and the shared backward */
    tg__unop code;
    int saves;             /* TG__SAVES_NONE, _INPUT or _OUTPUT (kernels/kernel.h) */
} tg__unary_info;
/* Indexed by op code; every code of TG__UNARY_OPS has an entry. */
extern const tg__unary_info tg__unary_table[];
/* Runs unary op `code` on t (recorded like any op; p0/p1 its parameters). */
tg_tensor *tg__unary(tg_site s, tg__unop code, tg_tensor *t, double p0, double p1);

/* ---- CPU scalars (ops/scalars.c) ------------------------------------------- */

/* CPU scalars, as in PyTorch: when some tensor of ts[0..n) is on CUDA, each
 * 0-d CPU tensor among them is replaced by its copy on that device, made by
 * a recorded tg_to_device (a gradient goes back to the CPU). owned[k]
 * receives the reference to release for each replaced ts[k] (NULL for the
 * others). False with the error set (nothing left to release) on failure. */
bool tg__promote_scalars(tg_site s, int n, tg_tensor **ts, tg_tensor **owned);
/* The same onto a given device (the in-place ops: their target stays where
 * it is); nothing happens when dev is TG_CPU. */
bool tg__promote_scalars_to(tg_site s, tg_device dev, int n, tg_tensor **ts, tg_tensor **owned);
void tg__release_promoted(int n, tg_tensor **owned);
/* A 0-d constant v of like's dtype on like's device (not recorded), for the
 * composed ops' where() branches. NULL with the error set. */
tg_tensor *tg__scalar_like(tg_site s, const tg_tensor *like, double v);

/* ---- in-place ops on views (ops/view_inplace.c) ----------------------------- */

/* For a recorded in-place op on view t whose out-of-place result is r (a new
 * tensor of t's shape with its grad_fn): records the CopySlices node that
 * becomes the base's grad_fn (input 0 the base's old history, input 1 r) and
 * returns it unattached, so that nothing changes if writing the data then
 * fails. tg__copyslices_commit attaches it once the data is written. NULL
 * with the error set on failure. */
tg__node *tg__copyslices_new(tg_site s, tg_tensor *t, tg_tensor *r);
void tg__copyslices_commit(tg__node *n, tg_tensor *t);
/* Checks that a recorded in-place op may modify view t (PyTorch's rules):
 * TG_ERR_AUTOGRAD for a view made in no-grad mode or by a custom function,
 * and for a view of a leaf that requires grad; TG_ERR_LAYOUT when the base
 * has overlapping elements. `who` names the op. */
tg_status tg__check_view_inplace(const char *who, const tg_tensor *t);

/* ---- backward of the line reductions (ops/reduce_line.c, ops/moments.c) ----- */

/* The node parameters every line reduction records (iparam). */
enum { TG__LINE_DIM = 0, TG__LINE_KEEPDIM = 1, TG__LINE_SLOT_X = 2, TG__LINE_SLOT_OUT = 3 };

/* What a line backward reads, each a new reference: x the saved slot
 * TG__LINE_SLOT_X (the input, or max/min's indices), viewed with the reduced
 * dim kept when keep_x; rk the saved result with the reduced dim kept (with_r
 * only); gk the incoming gradient with the reduced dim kept. */
typedef struct {
    const tg__meta *m; /* the node's input's */
    int d;             /* the reduced dim */
    tg_tensor *x, *rk, *gk;
} tg__line_grad;

/* Fills b from node n and incoming gradient g; false with the error set
 * (a saved tensor freed or modified in place, or no memory) and nothing held
 * on failure. tg__line_grad_close releases what it holds. */
bool tg__line_grad_open(tg__node *n, tg_tensor *g, bool keep_x, bool with_r, tg__line_grad *b);
void tg__line_grad_close(tg__line_grad *b);

#endif
