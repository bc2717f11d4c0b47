/* tapegrad/dlpack.h - tensors to and from DLPack, without a copy.
 *
 * DLPack is the C exchange format of PyTorch (torch.from_dlpack,
 * torch.utils.dlpack), NumPy (np.from_dlpack), CuPy and JAX: a struct that
 * describes a strided tensor's memory and a deleter its producer owns. The
 * structs below have DLPack's layout (the unversioned DLManagedTensor,
 * DLPack 0.8, what "dltensor" capsules hold), spelled with tapegrad's names
 * so that this header needs no other.
 *
 * Semantics shared with tg_from_blob: the memory is shared both ways; writes
 * made by the other framework are invisible to tapegrad's version counters
 * (call tg_mark_modified after one); the bytes a consumed DLPack tensor
 * reaches are counted as TG_MEM_EXTERNAL. DLPack 0.8 has no read-only flag:
 * mark a tensor over a producer's read-only memory with tg_mark_read_only
 * (tensor.h), and never give the consumer of tg_to_dlpack a read-only
 * tensor it may write.
 */
#ifndef TAPEGRAD_DLPACK_H
#define TAPEGRAD_DLPACK_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DLDeviceType values tapegrad knows (kDLCPU, kDLCUDA). */
enum { TG_DL_CPU = 1, TG_DL_CUDA = 2 };
/* DLDataTypeCode values tapegrad knows (kDLInt, kDLUInt, kDLFloat, kDLBfloat,
 * kDLBool). */
enum { TG_DL_INT = 0, TG_DL_UINT = 1, TG_DL_FLOAT = 2, TG_DL_BFLOAT = 4, TG_DL_BOOL = 6 };

typedef struct tg_dl_device { /* DLDevice */
    int32_t device_type;      /* a DLDeviceType (a C enum: 32 bits) */
    int32_t device_id;
} tg_dl_device;

typedef struct tg_dl_dtype { /* DLDataType */
    uint8_t code;            /* a DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} tg_dl_dtype;

typedef struct tg_dl_tensor { /* DLTensor */
    void *data;               /* the memory (plus byte_offset: the first element) */
    tg_dl_device device;
    int32_t ndim;
    tg_dl_dtype dtype;
    int64_t *shape;           /* ndim entries */
    int64_t *strides;         /* ndim entries in elements, or NULL: C order */
    uint64_t byte_offset;
} tg_dl_tensor;

typedef struct tg_dl_managed_tensor { /* DLManagedTensor */
    tg_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct tg_dl_managed_tensor *self); /* may be NULL */
} tg_dl_managed_tensor;

/* A DLPack view of t (no copy): data is tg_data(t) (byte_offset 0; NULL for
 * an empty tensor imported over NULL), shape
 * and strides are t's, the device kDLCPU or kDLCUDA (id 0), the dtype f32,
 * f64 (kDLFloat), i64 (kDLInt 64), bool (kDLBool 8) or bf16 (kDLBfloat 16).
 * The result holds a reference to t, dropped by its deleter, which the
 * consumer calls exactly once (PyTorch does when its tensor dies); t may be
 * released meanwhile. NULL on failure: TG_ERR_NULL, TG_ERR_NOMEM. */
tg_dl_managed_tensor *tg_to_dlpack(tg_tensor *t);

/* A tensor over a DLPack tensor's memory (no copy; torch.from_dlpack).
 * Accepted: kDLCPU, and kDLCUDA with device_id 0 when a device is present;
 * one lane of f32 / f64 (kDLFloat 32 / 64), i64 (kDLInt 64), bool (kDLBool
 * 8) or bf16 (kDLBfloat 16); strides >= 0 (NULL: C order); data + byte_offset
 * aligned to the element size; data may be NULL when the shape has no
 * elements (byte_offset is then not read): an empty tensor like any other,
 * as tg_from_blob's NULL. On success the tensor owns m: m's deleter is
 * called exactly once, when the last tensor on that memory is gone. On
 * failure the caller still owns m (its deleter is not called) and NULL is
 * returned: TG_ERR_NULL (m NULL, shape NULL with ndim > 0, data NULL with
 * elements), TG_ERR_DTYPE (another dtype or lanes != 1, naming it),
 * TG_ERR_DEVICE (another device type or id, or CUDA without a device),
 * TG_ERR_VALUE (ndim outside [0, TG_MAX_DIMS], a negative size or stride,
 * misaligned data), TG_ERR_NOMEM. */
tg_tensor *tg_from_dlpack_at(tg_site s, tg_dl_managed_tensor *m);
#define tg_from_dlpack(m) tg_from_dlpack_at(TG_SITE, m)

#ifdef __cplusplus
}
#endif
#endif
