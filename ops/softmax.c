/* ops/softmax.c - softmax and log-softmax along a dim (tg_softmax_dim,
 * tg_log_softmax_dim; tg_softmax and tg_log_softmax along the last one).
 *
 * Contract: f32/f64 input of any shape and strides (a 0-d tensor is one row
 * of length 1; dim may be negative); returns a new contiguous tensor of the
 * same shape. Another dim than the last is read and written in place through
 * a permuted view (no copy).
 * Numerically stable (row max subtracted); a row of all -inf gives NaN and a
 * -inf entry probability 0, as in PyTorch. Errors: TG_ERR_NULL, TG_ERR_DTYPE,
 * TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM.
 * Backward saves the OUTPUT y only (its storage, no reference cycle):
 *   SoftmaxBackward:    dx = y * (g - sum(g * y))
 *   LogSoftmaxBackward: dx = g - exp(y) * sum(g)
 */
#include "ops_internal.h"

static tg_status softmax_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status log_softmax_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

static const tg__op_def softmax_def = {"SoftmaxBackward", softmax_backward, false, NULL};
static const tg__op_def log_softmax_def = {"LogSoftmaxBackward", log_softmax_backward, false, NULL};

enum { P_DIM = 0 }; /* iparam: the dim of the rows */

static tg_tensor *softmax_common(tg_site s, const char *who, tg_tensor *t, int dim, bool is_log) {
    if (tg__null_arg(t, who, "t"))
        return NULL;
    if (!tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    if (!tg__is_float(t->dtype))
        return tg__fail(TG_ERR_DTYPE, "%s: t must be f32 or f64, got %s", who,
                        tg_dtype_name(t->dtype));
    int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0)
        return NULL;

    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, t->ndim,
                                       t->shape); // (..., V)
    if (!out || !(out = tg__k_ok(tg__k_softmax_forward(t, out, d, is_log), out)))
        return NULL;

    if (tg__needs_grad(1, &t)) {
        tg__node *n = tg__record(s, is_log ? &log_softmax_def : &softmax_def, 1, &t, out);
        if (!n || tg__node_save(n, out, true, 0) < 0) {
            tg__tensor_release(out);
            return NULL;
        }
        n->iparam[P_DIM] = d;
    }
    return out;
}

tg_tensor *tg__softmax(tg_site s, tg_tensor *t) {
    return softmax_common(s, "tg_softmax", t, -1, false);
}

tg_tensor *tg__log_softmax(tg_site s, tg_tensor *t) {
    return softmax_common(s, "tg_log_softmax", t, -1, true);
}

tg_tensor *tg_softmax_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__softmax(s, t));
}

tg_tensor *tg_log_softmax_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__log_softmax(s, t));
}

tg_tensor *tg_softmax_dim_at(tg_site s, tg_tensor *t, int dim) {
    return tg__ret(softmax_common(s, "tg_softmax_dim", t, dim, false));
}

tg_tensor *tg_log_softmax_dim_at(tg_site s, tg_tensor *t, int dim) {
    return tg__ret(softmax_common(s, "tg_log_softmax_dim", t, dim, true));
}

/* Saved slot 0: the output y (..., V). */
static tg_status backward_common(tg__node *n, tg_tensor *const *gout, tg_tensor **gin,
                                 bool is_log) {
    if (n->edge[0].kind == TG__EDGE_NONE)
        return TG_OK;
    tg_tensor *y = tg__node_saved(n, 0);
    if (!y)
        return tg_last_status();
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *dx = tg__new_output_on(n->site, n->name, y->storage->device, m->dtype, m->ndim,
                                      m->shape); // (..., V)
    if (!dx) {
        tg__tensor_release(y);
        return tg_last_status();
    }
    dx = tg__k_ok(tg__k_softmax_backward(y, gout[0], dx, (int)n->iparam[P_DIM], is_log), dx);
    tg__tensor_release(y);
    gin[0] = dx;
    return dx ? TG_OK : tg_last_status();
}

static tg_status softmax_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return backward_common(n, gout, gin, false);
}

static tg_status log_softmax_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return backward_common(n, gout, gin, true);
}
