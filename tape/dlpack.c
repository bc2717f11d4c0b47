/* tape/dlpack.c - tensors to and from DLPack (tapegrad/dlpack.h): an export
 * is a struct holding a reference to the tensor and its shape and strides;
 * an import is tg_from_blob over the producer's memory, with the producer's
 * deleter as the release callback. */
#include <stdlib.h>
#include <string.h>

#include "tapegrad/dlpack.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "dispatch.h"

/* ---- out ------------------------------------------------------------------- */

typedef struct export_ctx {
    tg_dl_managed_tensor m; /* first: the consumer's pointer is ours */
    tg_tensor *t;           /* the reference the export holds */
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
} export_ctx;

static void export_delete(tg_dl_managed_tensor *self) {
    export_ctx *e = (export_ctx *)self;
    tg__tensor_release(e->t);
    free(e);
}

static tg_dl_dtype dl_dtype_of(tg_dtype dt) {
    tg_dl_dtype d = {TG_DL_FLOAT, 32, 1};
    switch (dt) {
    case TG_F32: break;
    case TG_F64: d.bits = 64; break;
    case TG_I64: d.code = TG_DL_INT, d.bits = 64; break;
    case TG_BOOL: d.code = TG_DL_BOOL, d.bits = 8; break;
    case TG_BF16: d.code = TG_DL_BFLOAT, d.bits = 16; break;
    }
    return d;
}

tg_dl_managed_tensor *tg_to_dlpack(tg_tensor *t) {
    if (tg__null_arg(t, "tg_to_dlpack", "t")) return NULL;
    export_ctx *e = tg__xcalloc(1, sizeof *e);
    if (!e) return NULL;
    e->t = tg_retain(t);
    for (int d = 0; d < t->ndim; d++) {
        e->shape[d] = t->shape[d];
        e->strides[d] = t->strides[d];
    }
    tg_dl_tensor *x = &e->m.dl_tensor;
    x->data = tg__user_ptr(t);
    x->device.device_type = t->storage->device == TG_CUDA ? TG_DL_CUDA : TG_DL_CPU;
    x->device.device_id = 0;
    x->ndim = t->ndim;
    x->dtype = dl_dtype_of(t->dtype);
    x->shape = e->shape;
    x->strides = e->strides;
    x->byte_offset = 0;
    e->m.manager_ctx = e;
    e->m.deleter = export_delete;
    return &e->m;
}

/* ---- in -------------------------------------------------------------------- */

/* tapegrad's dtype for a DLPack one; -1 when there is none. */
static int dtype_of_dl(tg_dl_dtype d) {
    if (d.lanes != 1) return -1;
    if (d.code == TG_DL_FLOAT && d.bits == 32) return TG_F32;
    if (d.code == TG_DL_FLOAT && d.bits == 64) return TG_F64;
    if (d.code == TG_DL_INT && d.bits == 64) return TG_I64;
    if (d.code == TG_DL_BOOL && d.bits == 8) return TG_BOOL;
    if (d.code == TG_DL_BFLOAT && d.bits == 16) return TG_BF16;
    return -1;
}

static void import_release(void *ctx) {
    tg_dl_managed_tensor *m = ctx;
    if (m->deleter) m->deleter(m);
}

tg_tensor *tg_from_dlpack_at(tg_site s, tg_dl_managed_tensor *m) {
    const char *who = "tg_from_dlpack";
    if (tg__null_arg(m, who, "m")) return NULL;
    const tg_dl_tensor *x = &m->dl_tensor;
    const int dt = dtype_of_dl(x->dtype);
    if (dt < 0)
        return tg__fail(TG_ERR_DTYPE, "%s: DLPack dtype (code %u, %u bits, %u lanes) has no "
                        "tapegrad dtype (f32, f64, i64, bool, bf16; one lane)", who,
                        (unsigned)x->dtype.code, (unsigned)x->dtype.bits,
                        (unsigned)x->dtype.lanes);
    tg_device dev;
    if (x->device.device_type == TG_DL_CPU) {
        dev = TG_CPU;
    } else if (x->device.device_type == TG_DL_CUDA && x->device.device_id == 0) {
        dev = TG_CUDA;
    } else {
        return tg__fail(TG_ERR_DEVICE, "%s: DLPack device (type %d, id %d) is not the CPU (1) or "
                        "CUDA device 0 (2)", who, (int)x->device.device_type,
                        (int)x->device.device_id);
    }
    if (x->ndim < 0 || x->ndim > TG_MAX_DIMS)
        return tg__fail(TG_ERR_VALUE, "%s: ndim %d outside [0, %d]", who, (int)x->ndim,
                        TG_MAX_DIMS);
    if (x->ndim > 0 && tg__null_arg(x->shape, who, "m->dl_tensor.shape")) return NULL;
    char *data = x->data ? (char *)x->data + x->byte_offset : NULL;
    /* the caller's scope first, then from_blob: past this nothing fails */
    const char *prev = tg__caller_enter(who);
    tg_tensor *t = tg_from_blob_at(s, dev, (tg_dtype)dt, x->ndim, x->shape, x->strides, data,
                                   import_release, m);
    tg__caller_leave(prev);
    return t;
}
