/* ops/reduce_line.c - reductions along one dim that are not sums: amax/amin,
 * max/min with their indices, argmax/argmin, logsumexp, prod, any/all, the
 * vector norms (p = 1, 2, inf); each also over all elements where PyTorch
 * has that form (the scans are in ops/scan.c). Kernels: kernels/line.h.
 *
 * Contract: float inputs (f32/f64; any/all and argmax/argmin also i64 and
 * bool) with any strides; results are new contiguous tensors. `dim` may be
 * negative; a 0-d tensor is one line of one element. keepdim keeps the
 * reduced dim with size 1. Gradients are PyTorch's:
 *   amax/amin: split evenly among the elements equal to the result (a line
 *     with a NaN gets NaN everywhere, as PyTorch's amax);
 *   max_dim/min_dim: all to the returned index (the first extreme, or the
 *     first NaN);
 *   logsumexp: g exp(x - result) (NaN on an all -inf line, as PyTorch);
 *   prod: exact at zeros (products of the other elements, no division);
 *   norm: p = 1 g sign(x); p = 2 g x / norm, 0 where the norm is 0; p = inf
 *     g sign(x) split evenly among the elements of largest magnitude.
 * Each saves what PyTorch's node saves (amax/amin, logsumexp and prod: input
 * and result; max/min: the indices), so that an in-place edit fails backward
 * exactly where PyTorch's does. On failure nothing is leaked and NULL is
 * returned with the error set. */
#include <math.h>

#include "ops_internal.h"

/* Node parameters. */
enum {
    P_DIM = TG__LINE_DIM,
    P_KEEPDIM = TG__LINE_KEEPDIM,
    P_SLOT_X = TG__LINE_SLOT_X,
    P_SLOT_OUT = TG__LINE_SLOT_OUT
}; /* iparam */

/* ---- shared steps ------------------------------------------------------------------ */

static bool check_dtype(const char *who, const tg_tensor *t, bool any_dtype) {
    if (!tg__same_device(who, 1, &t)) return false;
    if (any_dtype || tg__is_float(t->dtype)) return true;
    tg__dtype_unsupported(who, t->dtype);
    return false;
}

/* The line geometry: *work is t (a new reference), or for a 0-d t its 1-element
 * 1-D view, or with `all` t flattened (recorded, so gradients flow); *d the
 * line's dim in *work; oshape/ond the result's shape. */
static bool setup(tg_site s, const char *who, tg_tensor *t, int dim, bool keepdim, bool all,
                  tg_tensor **work, int *d, int *ond, int64_t *oshape) {
    *work = NULL;
    if (all || t->ndim == 0) {
        int64_t n = tg__k_numel(t->ndim, t->shape);
        if (!(*work = tg__reshape(s, t, 1, &n))) return false;
        *d = 0;
        *ond = 0;
        if (!all && tg__wrap_dim(who, dim, 0) < 0) {
            tg__tensor_release(*work);
            *work = NULL;
            return false;
        }
        return true;
    }
    if ((*d = tg__wrap_dim(who, dim, t->ndim)) < 0) return false;
    *work = tg_retain(t);
    *ond = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != *d) oshape[(*ond)++] = t->shape[i];
        else if (keepdim) oshape[(*ond)++] = 1;
    return true;
}

/* t viewed with the reduced dim d back as size 1 (t has the result's shape,
 * keepdim or not, of an input with `ndim` dims). A new reference. */
static tg_tensor *keep(tg_site s, tg_tensor *t, int ndim, int d, bool keepdim) {
    if (keepdim || t->ndim == ndim) return tg_retain(t);
    return tg__unsqueeze(s, t, d);
}

static tg_tensor *like_meta(tg__node *n, const tg__meta *m, tg_dtype dt) {
    return tg__new_output_on(n->site, n->name, m->device, dt, m->ndim, m->shape);
}

/* Releases up to 6 tensors (NULL skipped). */
static void drop(tg_tensor *a, tg_tensor *b, tg_tensor *c, tg_tensor *d, tg_tensor *e,
                 tg_tensor *f) {
    tg_tensor *ts[6] = {a, b, c, d, e, f};
    for (int i = 0; i < 6; i++)
        tg__tensor_release(ts[i]);
}

/* The i64 positions 0..n-1 along dim d of an ndim-dim tensor on dev, shaped
 * (1, .., n, .., 1). */
static tg_tensor *positions(tg_site s, tg_device dev, int ndim, int d, int64_t n) {
    tg_tensor *a = tg__tensor_new(s, "positions", TG_I64, 1, &n, TG_MEM_WORKSPACE);
    if (!a) return NULL;
    for (int64_t i = 0; i < n; i++) ((int64_t *)a->storage->data)[i] = i;
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = i == d ? n : 1;
    tg_tensor *v = tg__reshape(s, a, ndim, shape);
    tg__tensor_release(a);
    if (!v || dev == TG_CPU) return v;
    tg_tensor *dv = tg__to_device(s, v, dev);
    tg__tensor_release(v);
    return dv;
}

/* ---- backward functions ------------------------------------------------------------- */

bool tg__line_grad_open(tg__node *n, tg_tensor *g, bool keep_x, bool with_r, tg__line_grad *b) {
    const tg__meta *m = b->m = &n->in_meta[0];
    int d = b->d = (int)n->iparam[P_DIM];
    bool kd = n->iparam[P_KEEPDIM] != 0;
    b->x = b->rk = b->gk = NULL;
    tg_tensor *x = tg__node_saved(n, (int)n->iparam[P_SLOT_X]);
    if (x && keep_x) {
        b->x = keep(n->site, x, m->ndim, d, kd);
        tg__tensor_release(x);
    } else {
        b->x = x;
    }
    tg_tensor *r = b->x && with_r ? tg__node_saved(n, (int)n->iparam[P_SLOT_OUT]) : NULL;
    if (r) {
        b->rk = keep(n->site, r, m->ndim, d, kd);
        tg__tensor_release(r);
    }
    if (b->x && (b->rk || !with_r)) b->gk = keep(n->site, g, m->ndim, d, kd);
    if (b->gk) return true;
    drop(b->x, b->rk, NULL, NULL, NULL, NULL);
    b->x = b->rk = NULL;
    return false;
}

void tg__line_grad_close(tg__line_grad *b) { drop(b->x, b->rk, b->gk, NULL, NULL, NULL); }

/* amax/amin: g_k * mask / count_k, mask = (x == result_k). Saves x and the result. */
static tg_status extreme_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg__line_grad b;
    if (!tg__line_grad_open(n, gout[0], false, true, &b)) return tg_last_status();
    const tg__meta *m = b.m;
    tg_tensor *mask = like_meta(n, m, TG_BOOL);
    if (mask) mask = tg__k_ok(tg__k_test(TG__TEST_EQ, mask, b.x, b.rk), mask);
    tg_tensor *maskf = mask ? like_meta(n, m, m->dtype) : NULL;
    if (maskf) maskf = tg__k_ok(tg__k_copy(maskf, mask), maskf);
    tg_tensor *cnt = maskf ? tg__new_output_on(n->site, n->name, m->device, m->dtype, b.rk->ndim,
                                               b.rk->shape)
                           : NULL;
    bool red[TG_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++) red[i] = i == b.d;
    if (cnt) cnt = tg__k_ok(tg__k_sum_reduce(cnt, maskf, red, 1.0), cnt);
    if (cnt) cnt = tg__k_ok(tg__k_binary(TG__BIN_DIV, cnt, b.gk, cnt, 0, 0), cnt); /* g / count */
    tg_tensor *out = cnt ? like_meta(n, m, m->dtype) : NULL;
    if (out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, maskf, cnt, 0, 0), out);
    tg__line_grad_close(&b);
    drop(mask, maskf, cnt, NULL, NULL, NULL);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

/* max_dim/min_dim: g_k where the position equals the saved index. */
static tg_status indexed_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg__line_grad b; /* b.x: the saved indices */
    if (!tg__line_grad_open(n, gout[0], true, false, &b)) return tg_last_status();
    const tg__meta *m = b.m;
    tg_tensor *pos = positions(n->site, m->device, m->ndim, b.d, m->shape[b.d]);
    tg_tensor *mask = pos ? like_meta(n, m, TG_BOOL) : NULL;
    if (mask) mask = tg__k_ok(tg__k_test(TG__TEST_EQ, mask, pos, b.x), mask);
    tg_tensor *out = mask ? like_meta(n, m, m->dtype) : NULL;
    if (out) out = tg__k_ok(tg__k_where(out, mask, b.gk, NULL), out);
    tg__line_grad_close(&b);
    drop(pos, mask, NULL, NULL, NULL, NULL);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

/* logsumexp: g_k exp(x - result_k). Saves x and the result. */
static tg_status lse_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg__line_grad b;
    if (!tg__line_grad_open(n, gout[0], false, true, &b)) return tg_last_status();
    tg_tensor *out = like_meta(n, b.m, b.m->dtype);
    if (out) out = tg__k_ok(tg__k_binary(TG__BIN_SUB, out, b.x, b.rk, 0, 0), out);
    if (out) out = tg__k_ok(tg__k_unary(TG__UN_EXP, out, out, NULL, 0, 0), out);
    if (out) out = tg__k_ok(tg__k_binary(TG__BIN_MUL, out, out, b.gk, 0, 0), out);
    tg__line_grad_close(&b);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

/* prod: g_k times the product of the other elements (PROD_GRAD scan). Saves x. */
static tg_status prod_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg__line_grad b;
    if (!tg__line_grad_open(n, gout[0], false, false, &b)) return tg_last_status();
    tg_tensor *out = like_meta(n, b.m, b.m->dtype);
    if (out) out = tg__k_ok(tg__k_scan(TG__SCAN_PROD_GRAD, out, b.x, b.gk, b.d, 0.0), out);
    tg__line_grad_close(&b);
    gin[0] = out;
    return out ? TG_OK : tg_last_status();
}

static const tg__op_def AMAX_DEF = {"AmaxBackward", extreme_backward, false, NULL};
static const tg__op_def AMIN_DEF = {"AminBackward", extreme_backward, false, NULL};
static const tg__op_def MAX_DEF = {"MaxBackward", indexed_backward, false, NULL};
static const tg__op_def MIN_DEF = {"MinBackward", indexed_backward, false, NULL};
static const tg__op_def LSE_DEF = {"LogsumexpBackward", lse_backward, false, NULL};
static const tg__op_def PROD_DEF = {"ProdBackward", prod_backward, false, NULL};

/* ---- forward -------------------------------------------------------------------------- */

/* How line_reduce reduces (flags, or-ed). */
enum {
    LR_ALL = 1,        /* over all elements (dim ignored), else along dim */
    LR_KEEPDIM = 2,    /* the reduced dim stays, of size 1 */
    LR_INDEX_ONLY = 4  /* only the index is wanted (argmax): it is the result */
};
#define LR_KEEP(keepdim) ((keepdim) ? LR_KEEPDIM : 0)

/* The reduction op of t along dim (or over all): values (NULL with
 * LR_INDEX_ONLY) and the index in *idx when asked. Records def (saving what
 * its backward reads) when t requires grad. */
static tg_tensor *line_reduce(tg_site s, const char *who, tg__redop op, const tg__op_def *def,
                              tg_tensor *t, int dim, unsigned flags, tg_tensor **idx) {
    const bool keepdim = flags & LR_KEEPDIM, all = flags & LR_ALL,
               idx_only = flags & LR_INDEX_ONLY;
    if (idx) *idx = NULL;
    if (tg__null_arg(t, who, "t")) return NULL;
    bool any_dtype = op == TG__RED_ANY || op == TG__RED_ALL || idx_only;
    if (!check_dtype(who, t, any_dtype)) return NULL;
    tg_tensor *w;
    int d, ond;
    int64_t oshape[TG_MAX_DIMS];
    if (!setup(s, who, t, dim, keepdim, all, &w, &d, &ond, oshape)) return NULL;
    if ((op == TG__RED_MAX || op == TG__RED_MIN) && w->shape[d] == 0) {
        char b[160];
        tg__tensor_release(w);
        return tg__fail(TG_ERR_SHAPE, "%s: the reduced dim of %s is empty (PyTorch: \"Expected "
                        "reduction dim to have non-zero size\")", who,
                        tg__shape_str(b, sizeof b, t->ndim, t->shape));
    }
    tg_dtype odt = (op == TG__RED_ANY || op == TG__RED_ALL) ? TG_BOOL : w->dtype;
    tg_tensor *out = idx_only ? NULL : tg__new_output_on(s, who, w->storage->device, odt, ond, oshape);
    tg_tensor *ix = idx ? tg__new_output_on(s, who, w->storage->device, TG_I64, ond, oshape) : NULL;
    tg_status st = (idx_only ? 1 : out != NULL) && (!idx || ix)
                       ? tg__k_reduce_dim(op, out, ix, w, d)
                       : tg_last_status();
    if (st != TG_OK) goto fail;
    if (def && !idx_only && tg__needs_grad(1, &w)) {
        tg__node *n = tg__record(s, def, 1, &w, out);
        if (!n) goto fail;
        n->iparam[P_DIM] = d;
        n->iparam[P_KEEPDIM] = keepdim;
        int sx = 0, so = 0;
        /* what PyTorch's node saves (so that in-place edits fail backward alike):
         * max/min the indices; amax/amin, logsumexp and prod the input and the
         * result (prod's backward reads only the input) */
        if (def == &MAX_DEF || def == &MIN_DEF) sx = tg__node_save(n, ix, false, -1);
        else {
            sx = tg__node_save(n, w, false, 0);
            so = sx < 0 ? -1 : tg__node_save(n, out, true, 0);
        }
        if (sx < 0 || so < 0) goto fail;
        n->iparam[P_SLOT_X] = sx;
        n->iparam[P_SLOT_OUT] = so;
    }
    tg__tensor_release(w);
    if (idx) *idx = ix;
    return idx_only ? ix : out;
fail:
    drop(w, out, ix, NULL, NULL, NULL);
    return NULL;
}

tg_tensor *tg_amax_at(tg_site s, tg_tensor *t) {
    return tg__ret(line_reduce(s, "tg_amax", TG__RED_MAX, &AMAX_DEF, t, 0, LR_ALL, NULL));
}
tg_tensor *tg_amin_at(tg_site s, tg_tensor *t) {
    return tg__ret(line_reduce(s, "tg_amin", TG__RED_MIN, &AMIN_DEF, t, 0, LR_ALL, NULL));
}
tg_tensor *tg_amax_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(line_reduce(s, "tg_amax_dim", TG__RED_MAX, &AMAX_DEF, t, dim,
                               LR_KEEP(keepdim), NULL));
}
tg_tensor *tg_amin_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(line_reduce(s, "tg_amin_dim", TG__RED_MIN, &AMIN_DEF, t, dim,
                               LR_KEEP(keepdim), NULL));
}

/* amax / amin / logsumexp over the dims listed (all for ndims 0): the line
 * reduction along the last dim of t with those dims merged into it
 * (tg__merge_reduced: the gradient is the whole set's, ties split over all
 * of it), then viewed with keepdim's shape when asked. */
static tg_tensor *line_reduce_dims(tg_site s, const char *who, tg__redop op,
                                   const tg__op_def *def, tg_tensor *t, int ndims,
                                   const int *dims, bool keepdim) {
    if (tg__null_arg(t, who, "t") || !check_dtype(who, t, false)) return NULL;
    bool red[TG_MAX_DIMS];
    if (!tg__dims_mask(who, ndims, dims, t->ndim, red)) return NULL;
    int64_t oshape[TG_MAX_DIMS], cnt;
    int ond = tg__reduced_shape(t->ndim, t->shape, red, keepdim, oshape, &cnt);
    if (op != TG__RED_LOGSUMEXP && cnt == 0) {
        char b[160];
        return tg__fail(TG_ERR_SHAPE, "%s: the reduced dims of %s are empty (PyTorch: \"Expected "
                        "reduction dim to have non-zero size\")", who,
                        tg__shape_str(b, sizeof b, t->ndim, t->shape));
    }
    tg_tensor *w = tg__merge_reduced(s, t, red);
    tg_tensor *r = w ? line_reduce(s, who, op, def, w, -1, 0, NULL) : NULL;
    tg__tensor_release(w);
    if (!r || !keepdim || t->ndim == 0) return r;
    tg_tensor *k = tg__reshape(s, r, ond, oshape);
    tg__tensor_release(r);
    return k;
}
tg_tensor *tg_amax_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim) {
    return tg__ret(line_reduce_dims(s, "tg_amax_dims", TG__RED_MAX, &AMAX_DEF, t, ndims, dims,
                                    keepdim));
}
tg_tensor *tg_amin_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims, bool keepdim) {
    return tg__ret(line_reduce_dims(s, "tg_amin_dims", TG__RED_MIN, &AMIN_DEF, t, ndims, dims,
                                    keepdim));
}
tg_tensor *tg_logsumexp_dims_at(tg_site s, tg_tensor *t, int ndims, const int *dims,
                                bool keepdim) {
    return tg__ret(line_reduce_dims(s, "tg_logsumexp_dims", TG__RED_LOGSUMEXP, &LSE_DEF, t,
                                    ndims, dims, keepdim));
}

/* values and indices: both handed to the caller's scope (or to the caller). */
static tg_tensor *with_indices(tg_site s, const char *who, tg__redop op, const tg__op_def *def,
                               tg_tensor *t, int dim, bool keepdim, tg_tensor **indices) {
    tg_tensor *ix = NULL;
    tg_tensor *v = line_reduce(s, who, op, def, t, dim, LR_KEEP(keepdim), &ix);
    if (!v) return NULL;
    if (indices) *indices = tg__ret(ix);
    else tg__tensor_release(ix);
    return tg__ret(v);
}
tg_tensor *tg_max_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim, tg_tensor **indices) {
    if (indices) *indices = NULL;
    return with_indices(s, "tg_max_dim", TG__RED_MAX, &MAX_DEF, t, dim, keepdim, indices);
}
tg_tensor *tg_min_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim, tg_tensor **indices) {
    if (indices) *indices = NULL;
    return with_indices(s, "tg_min_dim", TG__RED_MIN, &MIN_DEF, t, dim, keepdim, indices);
}
tg_tensor *tg_argmax_at(tg_site s, tg_tensor *t) {
    tg_tensor *ix;
    return tg__ret(line_reduce(s, "tg_argmax", TG__RED_MAX, NULL, t, 0,
                               LR_ALL | LR_INDEX_ONLY, &ix));
}
tg_tensor *tg_argmin_at(tg_site s, tg_tensor *t) {
    tg_tensor *ix;
    return tg__ret(line_reduce(s, "tg_argmin", TG__RED_MIN, NULL, t, 0,
                               LR_ALL | LR_INDEX_ONLY, &ix));
}
tg_tensor *tg_argmax_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    tg_tensor *ix;
    return tg__ret(line_reduce(s, "tg_argmax_dim", TG__RED_MAX, NULL, t, dim,
                               LR_KEEP(keepdim) | LR_INDEX_ONLY, &ix));
}
tg_tensor *tg_argmin_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    tg_tensor *ix;
    return tg__ret(line_reduce(s, "tg_argmin_dim", TG__RED_MIN, NULL, t, dim,
                               LR_KEEP(keepdim) | LR_INDEX_ONLY, &ix));
}
tg_tensor *tg_logsumexp_at(tg_site s, tg_tensor *t) {
    return tg__ret(line_reduce(s, "tg_logsumexp", TG__RED_LOGSUMEXP, &LSE_DEF, t, 0,
                               LR_ALL, NULL));
}
tg_tensor *tg__logsumexp_dim(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return line_reduce(s, "tg_logsumexp_dim", TG__RED_LOGSUMEXP, &LSE_DEF, t, dim,
                       LR_KEEP(keepdim), NULL);
}
tg_tensor *tg_logsumexp_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(line_reduce(s, "tg_logsumexp_dim", TG__RED_LOGSUMEXP, &LSE_DEF, t, dim,
                               LR_KEEP(keepdim), NULL));
}
tg_tensor *tg_prod_at(tg_site s, tg_tensor *t) {
    return tg__ret(line_reduce(s, "tg_prod", TG__RED_PROD, &PROD_DEF, t, 0, LR_ALL, NULL));
}
tg_tensor *tg_prod_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(line_reduce(s, "tg_prod_dim", TG__RED_PROD, &PROD_DEF, t, dim,
                               LR_KEEP(keepdim), NULL));
}
tg_tensor *tg_any_at(tg_site s, tg_tensor *t) {
    return tg__ret(line_reduce(s, "tg_any", TG__RED_ANY, NULL, t, 0, LR_ALL, NULL));
}
tg_tensor *tg_all_at(tg_site s, tg_tensor *t) {
    return tg__ret(line_reduce(s, "tg_all", TG__RED_ALL, NULL, t, 0, LR_ALL, NULL));
}
tg_tensor *tg_any_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(line_reduce(s, "tg_any_dim", TG__RED_ANY, NULL, t, dim,
                               LR_KEEP(keepdim), NULL));
}
tg_tensor *tg_all_dim_at(tg_site s, tg_tensor *t, int dim, bool keepdim) {
    return tg__ret(line_reduce(s, "tg_all_dim", TG__RED_ALL, NULL, t, dim,
                               LR_KEEP(keepdim), NULL));
}
