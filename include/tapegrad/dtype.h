/* tapegrad/dtype.h - element types, devices and the rank limit: the few
 * names the library's public API and its kernels share (tensor.h includes
 * it). */
#ifndef TAPEGRAD_DTYPE_H
#define TAPEGRAD_DTYPE_H

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_DIMS 8

/* Element types. TG_BOOL is one byte, 0 or 1 (masks: the comparison and
 * logic ops return it; tg_where, tg_masked_fill and the masked losses take
 * it). Converting to bool gives true for every non-zero value, NaN included;
 * from bool, 0 or 1.
 * TG_BF16 (bfloat16: 1 sign, 8 exponent, 7 mantissa bits, 2 bytes) is a
 * storage type: tensors of it are made, viewed, copied, converted to and from
 * every dtype (to bf16 through f32, rounding to nearest even, NaN kept, as
 * PyTorch), printed, saved as .npy, and may require grad; the ops that take
 * it are tg_to_dtype, tg_matmul, tg_logprob_entropy and
 * tg_linear_logprob_entropy (every accumulation in f32; docs/api.md). Other
 * ops refuse it with TG_ERR_DTYPE: convert with tg_to_dtype first. */
typedef enum tg_dtype { TG_F32 = 0, TG_F64 = 1, TG_I64 = 2, TG_BOOL = 3, TG_BF16 = 4 } tg_dtype;
typedef enum tg_device { TG_CPU = 0, TG_CUDA = 1 } tg_device;

#ifdef __cplusplus
}
#endif
#endif
