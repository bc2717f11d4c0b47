/* tape/readonly.c - memory marked read-only (tg_mark_read_only): the flag on
 * the storage, and the check every write of the library into existing memory
 * makes before it writes anything (the in-place ops, tg_gradcheck's
 * perturbation, grad_into_logits). The backward engine never accumulates
 * into such memory in place (tg__storage_callers, tape/engine.c). */
#include "errors.h"
#include "tensor_impl.h"

tg_status tg_mark_read_only(tg_tensor *t) {
    if (tg__null_arg(t, "tg_mark_read_only", "t")) return tg_last_status();
    t->storage->read_only = true;
    return TG_OK;
}

bool tg_is_read_only(const tg_tensor *t) { return t && t->storage->read_only; }

tg_status tg__check_writable(const char *who, const char *what, const tg_tensor *t) {
    if (!t->storage->read_only) return TG_OK;
    char shape[160];
    return tg__set_error(TG_ERR_READONLY, "%s: %s (%s, %s %s) is read-only memory (marked with "
                         "tg_mark_read_only): nothing was written; write into a copy "
                         "(tg_clone) instead", who, what, TG__LABEL(t),
                         tg__shape_str(shape, sizeof shape, t->ndim, t->shape),
                         tg_dtype_name(t->dtype));
}
