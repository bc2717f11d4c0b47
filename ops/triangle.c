/* ops/triangle.c - masks: triu and tril (PyTorch's): the elements on and above (or
 * below) a diagonal of the last two dims, the rest 0, computed as
 * where(mask, t, 0) with a (rows, cols) mask made on the host and moved to
 * t's device (NaN and inf outside the triangle become 0, as in PyTorch), and
 * recorded as a node that saves nothing (its gradient is the same triangle
 * of the upstream gradient); masked_fill, where(mask, value, t). */
#include "ops_internal.h"

/* Node parameters: the diagonal and which triangle. */
enum { P_DIAG = 0, P_UPPER = 1 };

static tg_status triangle_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static const tg__op_def TRIU_DEF = {"TriuBackward", triangle_backward, false, NULL};
static const tg__op_def TRIL_DEF = {"TrilBackward", triangle_backward, false, NULL};

/* where(mask, t, 0) with the (rows, cols) mask of the triangle, nothing recorded. */
static tg_tensor *masked(tg_site s, const char *who, tg_tensor *t, int64_t k, bool upper) {
    int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
    if (tg__k_numel(t->ndim, t->shape) == 0) /* no mask to make: (2^40, 0) has no elements */
        return tg__new_output_on(s, who, t->storage->device, t->dtype, t->ndim, t->shape);
    tg_tensor *m = tg__tensor_new(s, who, TG_I64, 2, (int64_t[]){R, C}, TG_MEM_WORKSPACE);
    if (!m) return NULL;
    int64_t *mv = m->storage->data;
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) mv[i * C + j] = upper ? j - i >= k : j - i <= k;
    if (t->storage->device != TG_CPU) {
        tg_tensor *d = tg__to_device(s, m, t->storage->device);
        tg__tensor_release(m);
        if (!(m = d)) return NULL;
    }
    tg_tensor *z = tg__scalar_like(s, t, 0), *out = NULL;
    TG_NO_GRAD { out = z ? tg__where(s, m, t, z) : NULL; }
    tg__tensor_release(z);
    tg__tensor_release(m);
    return out;
}

/* Recorded as its own node that saves nothing, as PyTorch's TriuBackward: its
 * gradient is the same triangle of the upstream gradient, so a second backward
 * through it needs nothing a first one freed. */
static tg_tensor *triangle(tg_site s, const char *who, tg_tensor *t, int64_t k, bool upper) {
    if (tg__null_arg(t, who, "t")) return NULL;
    if (t->ndim < 2)
        return tg__fail(TG_ERR_DIM, "%s: needs at least 2 dims (got %d)", who, t->ndim);
    tg_tensor *out = masked(s, who, t, k, upper);
    if (!out || !tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, upper ? &TRIU_DEF : &TRIL_DEF, 1, &t, out);
    if (!n) {
        tg__tensor_release(out);
        return NULL;
    }
    n->iparam[P_DIAG] = k;
    n->iparam[P_UPPER] = upper;
    return out;
}

static tg_status triangle_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    gin[0] = masked(n->site, n->name, gout[0], n->iparam[P_DIAG], n->iparam[P_UPPER] != 0);
    return gin[0] ? TG_OK : tg_last_status();
}

tg_tensor *tg_triu_at(tg_site s, tg_tensor *t, int64_t diagonal) {
    return tg__ret(triangle(s, "tg_triu", t, diagonal, true));
}
tg_tensor *tg_tril_at(tg_site s, tg_tensor *t, int64_t diagonal) {
    return tg__ret(triangle(s, "tg_tril", t, diagonal, false));
}

/* ---- masked_fill ------------------------------------------------------------------------- */

/* where(mask, value, t): mask of any dtype (non-zero = fill), broadcast to t's
 * shape; the result has t's shape (PyTorch's masked_fill, out of place). */
tg_tensor *tg_masked_fill_at(tg_site s, tg_tensor *t, tg_tensor *mask, double value) {
    const char *who = "tg_masked_fill";
    if (tg__null_arg(t, who, "t") || tg__null_arg(mask, who, "mask")) return NULL;
    int nd;
    int64_t shape[TG_MAX_DIMS];
    if (tg__broadcast_shapes(who, t->ndim, t->shape, mask->ndim, mask->shape, &nd, shape) != TG_OK)
        return NULL;
    bool same = nd == t->ndim;
    for (int d = 0; same && d < nd; d++) same = shape[d] == t->shape[d];
    if (!same) {
        char a[160], b[160];
        return tg__fail(TG_ERR_SHAPE, "%s: mask of shape %s would broadcast t of shape %s to "
                        "another shape", who, tg__shape_str(a, sizeof a, mask->ndim, mask->shape),
                        tg__shape_str(b, sizeof b, t->ndim, t->shape));
    }
    tg_tensor *v = tg__scalar_like(s, t, value);
    tg_tensor *out = v ? tg__where(s, mask, v, t) : NULL;
    tg__tensor_release(v);
    return tg__ret(out);
}
