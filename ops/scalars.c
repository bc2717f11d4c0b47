/* ops/scalars.c - PyTorch's CPU scalars: a 0-d CPU tensor may meet CUDA
 * tensors in elementwise ops, tg_where and the in-place ops' `other`; it is
 * replaced by its copy on that device, made by a recorded tg_to_device, so a
 * gradient goes back to the CPU. */
#include "ops_internal.h"

static bool cpu_scalar(const tg_tensor *t) {
    return t && t->ndim == 0 && t->storage->device == TG_CPU;
}

bool tg__promote_scalars(tg_site s, int n, tg_tensor **ts, tg_tensor **owned) {
    tg_device dev = TG_CPU;
    for (int i = 0; i < n; i++)
        if (ts[i] && !cpu_scalar(ts[i]) && ts[i]->storage->device != TG_CPU)
            dev = ts[i]->storage->device;
    return tg__promote_scalars_to(s, dev, n, ts, owned);
}

bool tg__promote_scalars_to(tg_site s, tg_device dev, int n, tg_tensor **ts, tg_tensor **owned) {
    for (int i = 0; i < n; i++) owned[i] = NULL;
    if (dev == TG_CPU) return true;
    for (int i = 0; i < n; i++) {
        if (!cpu_scalar(ts[i])) continue;
        if (!(owned[i] = tg__to_device(s, ts[i], dev))) {
            tg__release_promoted(i, owned);
            return false;
        }
        ts[i] = owned[i];
    }
    return true;
}

void tg__release_promoted(int n, tg_tensor **owned) {
    for (int i = 0; i < n; i++) {
        tg__tensor_release(owned[i]);
        owned[i] = NULL;
    }
}

tg_tensor *tg__scalar_like(tg_site s, const tg_tensor *like, double v) {
    tg_tensor *t = tg__zeros_on(s, like->storage->device, like->dtype, 0, NULL);
    if (t && v != 0 && tg__k_fill(t, v) != TG_OK) {
        tg__tensor_release(t);
        return NULL;
    }
    return t;
}
