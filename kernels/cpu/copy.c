/* kernels/cpu/copy.c - strided copy with broadcasting and dtype conversion,
 * and the gradient accumulation kernel (dst += src) used by the engine. */
#include <stdint.h>
#include <string.h>

#include "tg_internal.h"

#define TG__PAR_MIN 32768

/* Element read/write with conversion through double (exact for f32/f64; i64
 * values beyond 2^53 only when converting to float). */
static inline double rd(const void *base, tg_dtype dt, int64_t off) {
    switch (dt) {
    case TG_F32: return ((const float *)base)[off];
    case TG_F64: return ((const double *)base)[off];
    default: return (double)((const int64_t *)base)[off];
    }
}
static inline void wr(void *base, tg_dtype dt, int64_t off, double v) {
    switch (dt) {
    case TG_F32: ((float *)base)[off] = (float)v; break;
    case TG_F64: ((double *)base)[off] = v; break;
    default: ((int64_t *)base)[off] = tg__to_i64(v); break;
    }
}

void tg__cpu_copy(tg_tensor *dst, const tg_tensor *src) {
    int nd = dst->ndim;
    int64_t n = tg__numel(nd, dst->shape);
    if (n == 0) return;
    size_t es = tg_dtype_size(dst->dtype);
    bool same_layout = src->ndim == nd && tg__is_contiguous(dst) && tg__is_contiguous(src);
    for (int d = 0; same_layout && d < nd; d++) same_layout = src->shape[d] == dst->shape[d];
    if (same_layout && src->dtype == dst->dtype) {
        memcpy(tg__ptr(dst), tg__ptr(src), (size_t)n * es);
        return;
    }
    int64_t sst[TG_MAX_DIMS];
    tg__broadcast_strides(src, nd, dst->shape, sst);
    const char *sb = src->storage->data;
    char *db = dst->storage->data;
    const int64_t soff = src->offset, doff = dst->offset;
    if (src->dtype == dst->dtype && src->dtype == TG_I64) {
        #pragma omp parallel for if (n >= TG__PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)db)[doff + tg__offset_of(i, nd, dst->shape, dst->strides)] =
                ((const int64_t *)sb)[soff + tg__offset_of(i, nd, dst->shape, sst)];
        return;
    }
    #pragma omp parallel for if (n >= TG__PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        wr(db, dst->dtype, doff + tg__offset_of(i, nd, dst->shape, dst->strides),
           rd(sb, src->dtype, soff + tg__offset_of(i, nd, dst->shape, sst)));
}

void tg__cpu_accumulate(tg_tensor *dst, const tg_tensor *src) {
    int nd = dst->ndim;
    int64_t n = tg__numel(nd, dst->shape);
    if (n == 0) return;
    if (tg__is_contiguous(src) && src->dtype == dst->dtype) {
        if (dst->dtype == TG_F32) {
            float *d = tg__ptr(dst);              // (n)
            const float *s = tg__ptr(src);        // (n)
            #pragma omp parallel for simd if (n >= TG__PAR_MIN)
            for (int64_t i = 0; i < n; i++) d[i] += s[i];
        } else {
            double *d = tg__ptr(dst);             // (n)
            const double *s = tg__ptr(src);       // (n)
            #pragma omp parallel for simd if (n >= TG__PAR_MIN)
            for (int64_t i = 0; i < n; i++) d[i] += s[i];
        }
        return;
    }
    int64_t sst[TG_MAX_DIMS];
    tg__broadcast_strides(src, nd, dst->shape, sst);
    const char *sb = src->storage->data;
    char *db = dst->storage->data;
    #pragma omp parallel for if (n >= TG__PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        int64_t o = dst->offset + tg__offset_of(i, nd, dst->shape, dst->strides);
        wr(db, dst->dtype, o,
           rd(db, dst->dtype, o) + rd(sb, src->dtype, src->offset + tg__offset_of(i, nd, dst->shape, sst)));
    }
}
