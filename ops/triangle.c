/* ops/triangle.c - masks: triu and tril (PyTorch's): the elements on and above (or
 * below) a diagonal of the last two dims, the rest 0. Composed as
 * where(mask, t, 0) with a (rows, cols) mask made on the host and moved to
 * t's device, so NaN and inf outside the triangle become 0 as in PyTorch, and
 * the gradient is the same triangle of the upstream gradient (no saved
 * input: where saves only the mask); masked_fill, where(mask, value, t). */
#include "ops_internal.h"

static tg_tensor *triangle(tg_site s, const char *who, tg_tensor *t, int64_t k, bool upper) {
    if (tg__null_arg(t, who, "t")) return NULL;
    if (t->ndim < 2)
        return tg__fail(TG_ERR_DIM, "%s: needs at least 2 dims (got %d)", who, t->ndim);
    int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
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
    tg_tensor *z = tg__scalar_like(s, t, 0);
    tg_tensor *out = z ? tg__where(s, m, t, z) : NULL;
    tg__tensor_release(z);
    tg__tensor_release(m);
    return out;
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
