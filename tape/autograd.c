/* tape/autograd.c - per-thread grad mode, requires_grad, leaves and their
 * .grad, detach. */
#include <string.h>

#include "tapegrad/autograd.h"

#include "errors.h"
#include "tensor_impl.h"
#include "node.h"
#include "sync.h"

static _Thread_local bool tl_grad_disabled = false; /* zero-initialised = grad on */

bool tg_set_grad_enabled(bool enabled) {
    bool prev = !tl_grad_disabled;
    tl_grad_disabled = !enabled;
    return prev;
}

bool tg_is_grad_enabled(void) { return !tl_grad_disabled; }

tg_status tg_set_requires_grad(tg_tensor *t, bool requires_grad) {
    if (tg__null_arg(t, "tg_set_requires_grad", "t")) return tg_last_status();
    if (!requires_grad && !tg__has_grad_fn(t)) { /* any leaf may stop requiring grad */
        t->requires_grad = false;
        return TG_OK;
    }
    if (requires_grad && !tg__is_floating(t->dtype))
        return tg__set_error(TG_ERR_DTYPE, "tg_set_requires_grad: only f32/f64/bf16 tensors "
                                           "can require grad (%s is %s)",
                             TG__LABEL(t), tg_dtype_name(t->dtype));
    if (tg__has_grad_fn(t)) {
        tg__node *fn;
        if (!tg__grad_fn(t, &fn)) return tg_last_status();
        if (requires_grad) return TG_OK; /* as PyTorch: it already does, nothing to change */
        return tg__set_error(TG_ERR_AUTOGRAD, "tg_set_requires_grad: %s is not a leaf (its "
                                              "grad_fn is %s); only a leaf can stop requiring "
                                              "grad. Use tg_detach to get a leaf.",
                             TG__LABEL(t), fn->name);
    }
    t->requires_grad = requires_grad;
    return TG_OK;
}

bool tg_requires_grad(const tg_tensor *t) { return t && tg__req_grad(t); }
bool tg_is_leaf(const tg_tensor *t) { return t && !tg__has_grad_fn(t); }
const char *tg_grad_fn_name(const tg_tensor *t) {
    if (!t || !tg__has_grad_fn(t)) return NULL;
    /* a view's grad_fn may have to be made first (PyTorch does the same when
     * .grad_fn is read); t is not const to the library */
    tg__node *fn;
    return tg__grad_fn((tg_tensor *)t, &fn) && fn ? fn->name : NULL;
}

tg_tensor *tg_grad(const tg_tensor *t) {
    if (tg__null_arg(t, "tg_grad", "t")) return NULL;
    tg__grad_lock(); /* a backward on another thread may be committing into it */
    tg_tensor *g = tg_retain(t->grad);
    tg__grad_unlock();
    return tg__ret(g);
}

tg_status tg_zero_grad(tg_tensor *t) {
    if (tg__null_arg(t, "tg_zero_grad", "t")) return tg_last_status();
    tg__set_grad(t, NULL);
    return TG_OK;
}

tg_tensor *tg_detach_at(tg_site s, tg_tensor *t) {
    if (tg__null_arg(t, "tg_detach", "t")) return NULL;
    tg_tensor *d = tg__tensor_alias(s, t->storage, t->dtype, t->ndim, t->shape, t->strides,
                                 t->offset);
    if (d) memcpy(d->name, t->name, TG__NAME_LEN);
    return tg__ret(d);
}
