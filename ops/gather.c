/* ops/gather.c - tg_gather: out[..., j] = t[..., index[..., j]] (last dim).
 *
 * Contract: t f32/f64 and index i64, both CPU, any strides, same ndim and the
 * same leading sizes; index's last size is free and gives out's. Every index
 * is validated before anything is written. Errors: TG_ERR_NULL, TG_ERR_DTYPE
 * (t not floating, index not i64), TG_ERR_DEVICE, TG_ERR_SHAPE (ndim or a
 * leading size differs), TG_ERR_VALUE (an index outside [0, V): the message
 * names the position and the value), TG_ERR_NOMEM.
 * Backward (GatherBackward) saves only index; t's shape comes from the node's
 * input metadata: dt = zeros(t's shape), dt[..., index[..., j]] += g[..., j].
 */
#include <inttypes.h>
#include <stdio.h>

#include <stdlib.h>

#include "ops_internal.h"

static tg_status gather_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

static const tg__op_def gather_def = {"GatherBackward", gather_backward, false};

static bool gather_check(const tg_tensor *t, const tg_tensor *index) {
    char st[128], si[128];
    const tg_tensor *ti[2] = {t, index};
    if (!tg__same_device("tg_gather", 2, ti))
        return false;
    if (!tg__is_float(t->dtype)) {
        tg__set_error(TG_ERR_DTYPE, "tg_gather: t must be f32 or f64, got %s",
                      tg_dtype_name(t->dtype));
        return false;
    }
    if (index->dtype != TG_I64) {
        tg__set_error(TG_ERR_DTYPE, "tg_gather: index must be i64, got %s",
                      tg_dtype_name(index->dtype));
        return false;
    }
    bool ok = t->ndim == index->ndim;
    for (int d = 0; ok && d < t->ndim - 1; d++)
        ok = t->shape[d] == index->shape[d];
    if (!ok) {
        tg__shape_str(st, sizeof st, t->ndim, t->shape);
        tg__shape_str(si, sizeof si, index->ndim, index->shape);
        tg__set_error(TG_ERR_SHAPE,
                      "tg_gather: index %s must have t's ndim and leading sizes, t is %s", si, st);
        return false;
    }
    return true;
}

/* Records TG_ERR_VALUE for the entry of index at C-order position pos. */
static void report_bad(const tg_tensor *index, int64_t pos, int64_t V) {
    int64_t idx[TG_MAX_DIMS];
    char where[160];
    int64_t rest = pos;
    for (int d = index->ndim - 1; d >= 0; d--) {
        idx[d] = rest % index->shape[d];
        rest /= index->shape[d];
    }
    tg__shape_str(where, sizeof where, index->ndim, idx);
    void *owned;
    int64_t lo;
    const int64_t *p = tg__host_elems("tg_gather", index, &owned, &lo);
    if (!p)
        return;
    int64_t v = p[index->offset - lo + tg__offset_of(pos, index->ndim, index->shape, index->strides)];
    free(owned);
    tg__set_error(TG_ERR_VALUE,
                  "tg_gather: index %" PRId64 " at position %s is out of range for size %" PRId64,
                  v, where, V);
}

tg_tensor *tg__gather(tg_site s, tg_tensor *t, tg_tensor *index) {
    if (tg__null_arg(t, "tg_gather", "t") || tg__null_arg(index, "tg_gather", "index"))
        return NULL;
    if (!gather_check(t, index))
        return NULL;
    int64_t V = t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
    int64_t bad = -1;
    if (tg__k_gather_find_bad(index, V, &bad) != TG_OK)
        return NULL;
    if (bad >= 0) {
        report_bad(index, bad, V);
        return NULL;
    }

    // (..., J)
    tg_tensor *out = tg__new_output_on(s, "tg_gather", t->storage->device, t->dtype, index->ndim,
                                       index->shape);
    if (!out || !(out = tg__k_ok(tg__k_gather_forward(t, index, out), out)))
        return NULL;

    tg_tensor *inputs[2] = {t, index};
    if (tg__needs_grad(2, inputs)) {
        tg__node *n = tg__record(s, &gather_def, 2, inputs, out);
        if (!n || tg__node_save(n, index, false, 1) < 0) {
            tg__tensor_release(out);
            return NULL;
        }
    }
    return out;
}

tg_tensor *tg_gather_at(tg_site s, tg_tensor *t, tg_tensor *index) {
    return tg__ret(tg__gather(s, t, index));
}

/* Saved slot 0: index (..., J). */
static tg_status gather_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    if (n->edge[0].kind == TG__EDGE_NONE)
        return TG_OK;
    tg_tensor *index = tg__node_saved(n, 0);
    if (!index)
        return tg_last_status();
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *dt = tg__zeros_on(n->site, index->storage->device, m->dtype, m->ndim,
                                 m->shape); // (..., V)
    if (!dt) {
        tg__tensor_release(index);
        return tg_last_status();
    }
    dt = tg__k_ok(tg__k_gather_backward(gout[0], index, dt), dt);
    tg__tensor_release(index);
    gin[0] = dt;
    return dt ? TG_OK : tg_last_status();
}
