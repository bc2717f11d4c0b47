/* ops/to_device.c - tg_to_device: a contiguous copy on another device,
 * differentiable (backward copies the gradient back to the source device).
 * The copy itself is tg__device_copy (tape/device.c). */
#include <string.h>

#include "ops_internal.h"

enum { P_FROM = 0 };
/* iparam[P_FROM]: the source device. */
static tg_status to_device_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    gin[0] = tg__device_copy(n->site, "ToDeviceBackward", gout[0], (tg_device)n->iparam[P_FROM]);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def to_device_def = {"ToDeviceBackward", to_device_backward, false, NULL};

tg_tensor *tg__to_device(tg_site s, tg_tensor *t, tg_device dev) {
    const char *who = "tg_to_device";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (tg__check_device_usable(who, dev) != TG_OK) return NULL;
    if (t->storage->device == dev) return tg_retain(t);
    tg_tensor *out = tg__device_copy(s, who, t, dev);
    if (!out) return NULL;
    memcpy(out->name, t->name, TG__NAME_LEN);
    if (tg__needs_grad(1, &t)) {
        tg__node *n = tg__record(s, &to_device_def, 1, &t, out);
        if (!n) {
            tg__tensor_release(out);
            return NULL;
        }
        n->iparam[P_FROM] = (int64_t)t->storage->device;
    }
    return out;
}

tg_tensor *tg_to_device_at(tg_site s, tg_tensor *t, tg_device dev) {
    return tg__ret(tg__to_device(s, t, dev));
}
