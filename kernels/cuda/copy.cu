/* kernels/cuda/copy.cu - strided copy with dtype conversion, gradient
 * accumulation (out += src) and fill, on the GPU. Conversions go through
 * double with the CPU's rules: to i64 truncates toward zero, saturates, and
 * maps NaN to 0; to bool is != 0 (NaN true; i64 exactly). */
#include "kcommon.cuh"

__device__ __forceinline__ void tgk_write(void *p, int dt, int64_t off, double v) {
    if (dt == TG_F32) {
        ((float *)p)[off] = (float)v;
    } else if (dt == TG_F64) {
        ((double *)p)[off] = v;
    } else if (dt == TG_BOOL) {
        ((uint8_t *)p)[off] = v != 0.0; /* NaN: true */
    } else if (dt == TG_BF16) { /* through f32, to nearest even */
        ((uint16_t *)p)[off] = tgk_f32_to_bf16((float)v);
    } else {
        int64_t r;
        if (v != v) r = 0;
        else if (v >= 9223372036854775807.0) r = INT64_MAX;
        else if (v <= -9223372036854775808.0) r = INT64_MIN;
        else r = (int64_t)v;
        ((int64_t *)p)[off] = r;
    }
}

__global__ void k_copy(tgk_iter it, void *o, int odt, const void *s, int sdt) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[2];
        tgk_offsets<2>(it, i, off);
        if (odt == sdt && odt == TG_I64) /* exact beyond 2^53 */
            ((int64_t *)o)[off[0]] = ((const int64_t *)s)[off[1]];
        else if (odt == TG_BOOL && sdt == TG_I64)
            ((uint8_t *)o)[off[0]] = ((const int64_t *)s)[off[1]] != 0;
        else
            tgk_write(o, odt, off[0], tgk_read(s, sdt, off[1]));
    }
}

/* Any other pair (bf16): read as double, add, write back converted. */
__global__ void k_accumulate_any(tgk_iter it, void *o, int odt, const void *s, int sdt) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[2];
        tgk_offsets<2>(it, i, off);
        tgk_write(o, odt, off[0], tgk_read(o, odt, off[0]) + tgk_read(s, sdt, off[1]));
    }
}

template <class T> __global__ void k_accumulate(tgk_iter it, T *o, const T *s) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[2];
        tgk_offsets<2>(it, i, off);
        o[off[0]] += s[off[1]];
    }
}

__global__ void k_fill(tgk_iter it, void *o, int odt, double v) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[1];
        tgk_offsets<1>(it, i, off);
        tgk_write(o, odt, off[0], v);
    }
}

extern "C" tg_status tg__cuda_copy(const tg__arr *out, const tg__arr *src) {
    const tg__arr *ops[2] = {out, src};
    tgk_iter it = tgk_iter_make(2, ops);
    if (it.n == 0) return TG_OK;
    return TGK_LAUNCH(k_copy, tgk_grid(it.n, TGK_BLOCK), TGK_BLOCK, it, out->data, out->dtype,
                      (const void *)src->data, src->dtype);
}

extern "C" tg_status tg__cuda_accumulate(const tg__arr *out, const tg__arr *src) {
    const tg__arr *ops[2] = {out, src};
    tgk_iter it = tgk_iter_make(2, ops);
    if (it.n == 0) return TG_OK;
    unsigned g = tgk_grid(it.n, TGK_BLOCK);
    if (out->dtype != src->dtype || (out->dtype != TG_F32 && out->dtype != TG_F64))
        return TGK_LAUNCH(k_accumulate_any, g, TGK_BLOCK, it, out->data, out->dtype,
                          (const void *)src->data, src->dtype);
    if (out->dtype == TG_F32) {
        auto k = k_accumulate<float>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, it, (float *)out->data, (const float *)src->data);
    }
    auto k = k_accumulate<double>;
    return TGK_LAUNCH(k, g, TGK_BLOCK, it, (double *)out->data, (const double *)src->data);
}

extern "C" tg_status tg__cuda_fill(const tg__arr *out, double v) {
    const tg__arr *ops[1] = {out};
    tgk_iter it = tgk_iter_make(1, ops);
    if (it.n == 0) return TG_OK;
    return TGK_LAUNCH(k_fill, tgk_grid(it.n, TGK_BLOCK), TGK_BLOCK, it, out->data, out->dtype, v);
}
