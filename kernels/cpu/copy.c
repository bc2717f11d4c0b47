/* kernels/cpu/copy.c - strided copy with dtype conversion (f32, f64, i64,
 * bool, bf16), fill, and the gradient accumulation kernel (dst += src; bf16
 * operands are added in double and rounded once; dst f32 with a bf16 src
 * too). Descriptors as in
 * kernels/kernel.h: src described over dst's shape. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"

/* Element read/write with conversion through double (exact for f32/f64; i64
 * values beyond 2^53 only when converting to float). */
static inline double read_as_f64(const void *base, int dt, int64_t off) {
    switch (dt) {
    case TG_F32: return ((const float *)base)[off];
    case TG_F64: return ((const double *)base)[off];
    case TG_BOOL: return ((const uint8_t *)base)[off];
    case TG_BF16: return tg__bf16_to_f32(((const uint16_t *)base)[off]);
    default: return (double)((const int64_t *)base)[off];
    }
}
static inline void write_f64_as(void *base, int dt, int64_t off, double v) {
    switch (dt) {
    case TG_F32: ((float *)base)[off] = (float)v; break;
    case TG_F64: ((double *)base)[off] = v; break;
    case TG_BOOL: ((uint8_t *)base)[off] = v != 0; break; /* NaN: true */
    case TG_BF16: ((uint16_t *)base)[off] = tg__f32_to_bf16((float)v); break;
    default: ((int64_t *)base)[off] = tg__to_i64(v); break;
    }
}

tg_status tg__cpu_copy(const tg__arr *dst, const tg__arr *src) {
    const int nd = dst->ndim;
    const int64_t n = tg__k_numel(nd, dst->shape);
    if (n == 0) return TG_OK;
    if (src->dtype == dst->dtype && tg__k_contiguous(dst) && tg__k_contiguous(src)) {
        bool broadcast = false;
        for (int d = 0; d < nd; d++) broadcast |= src->shape[d] != 1 && src->strides[d] == 0;
        if (!broadcast) {
            memcpy(dst->data, src->data, (size_t)n * tg__k_dtype_size(dst->dtype));
            return TG_OK;
        }
    }
    const char *sb = src->data;
    char *db = dst->data;
    /* bf16 <-> f32, both contiguous: the fused ops' conversions of a chunk */
    if (tg__k_contiguous(dst) && tg__k_contiguous(src) &&
        ((src->dtype == TG_BF16 && dst->dtype == TG_F32) ||
         (src->dtype == TG_F32 && dst->dtype == TG_BF16))) {
        bool broadcast = false;
        for (int d = 0; d < nd; d++) broadcast |= src->shape[d] != 1 && src->strides[d] == 0;
        if (!broadcast) {
            if (src->dtype == TG_BF16) {
                const uint16_t *s = src->data; // (n)
                float *o = dst->data;          // (n)
                #pragma omp parallel for simd if (n >= TG__PAR_MIN)
                for (int64_t i = 0; i < n; i++) o[i] = tg__bf16_to_f32(s[i]);
            } else {
                const float *s = src->data; // (n)
                uint16_t *o = dst->data;    // (n)
                #pragma omp parallel for simd if (n >= TG__PAR_MIN)
                for (int64_t i = 0; i < n; i++) o[i] = tg__f32_to_bf16(s[i]);
            }
            return TG_OK;
        }
    }
    if (src->dtype == TG_I64 && dst->dtype == TG_BOOL) { /* exact: not through double */
        #pragma omp parallel for if (n >= TG__PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)db)[tg__k_offset_of(i, nd, dst->shape, dst->strides)] =
                ((const int64_t *)sb)[tg__k_offset_of(i, nd, dst->shape, src->strides)] != 0;
        return TG_OK;
    }
    if (src->dtype == dst->dtype && src->dtype == TG_I64) {
        #pragma omp parallel for if (n >= TG__PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)db)[tg__k_offset_of(i, nd, dst->shape, dst->strides)] =
                ((const int64_t *)sb)[tg__k_offset_of(i, nd, dst->shape, src->strides)];
        return TG_OK;
    }
    #pragma omp parallel for if (n >= TG__PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        write_f64_as(db, dst->dtype, tg__k_offset_of(i, nd, dst->shape, dst->strides),
           read_as_f64(sb, src->dtype, tg__k_offset_of(i, nd, dst->shape, src->strides)));
    return TG_OK;
}

tg_status tg__cpu_fill(const tg__arr *dst, double v) {
    const int64_t n = tg__k_numel(dst->ndim, dst->shape);
    if (tg__k_contiguous(dst)) {
        if (v == 0.0 && !signbit(v)) {
            memset(dst->data, 0, (size_t)n * tg__k_dtype_size(dst->dtype));
        } else if (dst->dtype == TG_F32) {
            float *x = dst->data; // (n)
            for (int64_t i = 0; i < n; i++) x[i] = (float)v;
        } else if (dst->dtype == TG_F64) {
            double *x = dst->data; // (n)
            for (int64_t i = 0; i < n; i++) x[i] = v;
        } else if (dst->dtype == TG_BOOL) {
            memset(dst->data, v != 0, (size_t)n);
        } else if (dst->dtype == TG_BF16) {
            uint16_t *x = dst->data, b = tg__f32_to_bf16((float)v); // (n)
            for (int64_t i = 0; i < n; i++) x[i] = b;
        } else {
            int64_t *x = dst->data, iv = tg__to_i64(v); // (n)
            for (int64_t i = 0; i < n; i++) x[i] = iv;
        }
        return TG_OK;
    }
    /* strided: a 0-d f64 source read broadcast (and converted) by the copy kernel */
    double value = v;
    tg__arr src;
    memset(&src, 0, sizeof src);
    src.data = &value;
    src.dtype = TG_F64;
    src.ndim = dst->ndim;
    for (int d = 0; d < dst->ndim; d++) src.shape[d] = dst->shape[d];
    return tg__cpu_copy(dst, &src);
}

tg_status tg__cpu_accumulate(const tg__arr *dst, const tg__arr *src) {
    const int nd = dst->ndim;
    const int64_t n = tg__k_numel(nd, dst->shape);
    if (n == 0) return TG_OK;
    bool flat = src->dtype == dst->dtype && (dst->dtype == TG_F32 || dst->dtype == TG_F64) &&
                tg__k_contiguous(dst) && tg__k_contiguous(src);
    for (int d = 0; flat && d < nd; d++) flat = src->shape[d] == 1 || src->strides[d] != 0;
    if (flat) {
        if (dst->dtype == TG_F32) {
            float *d = dst->data;                 // (n)
            const float *s = src->data;           // (n)
            #pragma omp parallel for simd if (n >= TG__PAR_MIN)
            for (int64_t i = 0; i < n; i++) d[i] += s[i];
        } else {
            double *d = dst->data;                // (n)
            const double *s = src->data;          // (n)
            #pragma omp parallel for simd if (n >= TG__PAR_MIN)
            for (int64_t i = 0; i < n; i++) d[i] += s[i];
        }
        return TG_OK;
    }
    const char *sb = src->data;
    char *db = dst->data;
    #pragma omp parallel for if (n >= TG__PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        int64_t o = tg__k_offset_of(i, nd, dst->shape, dst->strides);
        write_f64_as(db, dst->dtype, o,
           read_as_f64(db, dst->dtype, o) + read_as_f64(sb, src->dtype, tg__k_offset_of(i, nd, dst->shape, src->strides)));
    }
    return TG_OK;
}
