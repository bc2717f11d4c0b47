/* kernels/cuda/gather.cu - gather along the last dim, its scatter-add
 * backward and the index range check, on the GPU. */
#include "kcommon.cuh"

__global__ void k_find_bad(tgk_iter it, const int64_t *idx, int64_t V, unsigned long long *bad) {
    TGK_FOR_EACH(it.n, i) {
        int64_t off[1];
        tgk_offsets<1>(it, i, off);
        int64_t v = idx[off[0]];
        if (v < 0 || v >= V) atomicMin(bad, (unsigned long long)i);
    }
}

/* One thread per index entry; rows are the leading dims of index (and t). */
template <class T>
__global__ void k_gather_fwd(tg__arr t, tg__arr ix, int64_t n, int64_t J, T *out) {
    int64_t ts = t.ndim > 0 ? t.strides[t.ndim - 1] : 1;
    int64_t is = ix.ndim > 0 ? ix.strides[ix.ndim - 1] : 1;
    TGK_FOR_EACH(n, i) {
        int64_t r = i / J, j = i % J;
        int64_t v = ((const int64_t *)ix.data)[tgk_row_offset(ix, r) + j * is];
        out[i] = ((const T *)t.data)[tgk_row_offset(t, r) + v * ts];
    }
}

template <class T>
__global__ void k_gather_bwd(tg__arr g, tg__arr ix, int64_t n, int64_t J, int64_t V,
                             T *dt) {
    int64_t gs = g.ndim > 0 ? g.strides[g.ndim - 1] : 1;
    int64_t is = ix.ndim > 0 ? ix.strides[ix.ndim - 1] : 1;
    TGK_FOR_EACH(n, i) {
        int64_t r = i / J, j = i % J;
        int64_t v = ((const int64_t *)ix.data)[tgk_row_offset(ix, r) + j * is];
        atomicAdd(&dt[r * V + v], ((const T *)g.data)[tgk_row_offset(g, r) + j * gs]);
    }
}

extern "C" tg_status tg__cuda_gather_find_bad(const tg__arr *index, int64_t V, int64_t *bad) {
    const tg__arr *ops[1] = {index};
    tgk_iter it = tgk_iter_make(1, ops);
    *bad = -1;
    if (it.n == 0) return TG_OK;
    return tgk_report_min(bad, [&](unsigned long long *dbad) {
        return TGK_LAUNCH(k_find_bad, tgk_grid(it.n, TGK_BLOCK), TGK_BLOCK, it,
                          (const int64_t *)index->data, V, dbad);
    });
}

extern "C" tg_status tg__cuda_gather_forward(const tg__arr *t, const tg__arr *index,
                                             void *out) {
    int64_t J, is, n = tgk_numel(index);
    (void)tgk_rows(index, &J, &is);
    if (n == 0) return TG_OK;
    unsigned g = tgk_grid(n, TGK_BLOCK);
    /* elements are moved, never read as numbers: any dtype, by its size */
    const size_t es = tg__k_dtype_size(t->dtype);
    if (es == 4) {
        auto k = k_gather_fwd<uint32_t>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, *t, *index, n, J, (uint32_t *)out);
    }
    if (es == 2) {
        auto k = k_gather_fwd<uint16_t>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, *t, *index, n, J, (uint16_t *)out);
    }
    if (es == 1) {
        auto k = k_gather_fwd<uint8_t>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, *t, *index, n, J, (uint8_t *)out);
    }
    auto k = k_gather_fwd<uint64_t>;
    return TGK_LAUNCH(k, g, TGK_BLOCK, *t, *index, n, J, (uint64_t *)out);
}

extern "C" tg_status tg__cuda_gather_backward(const tg__arr *g, const tg__arr *index,
                                              void *dt, int64_t V) {
    int64_t J, is, n = tgk_numel(index);
    (void)tgk_rows(index, &J, &is);
    if (n == 0) return TG_OK;
    unsigned gr = tgk_grid(n, TGK_BLOCK);
    if (g->dtype == TG_F32) {
        auto k = k_gather_bwd<float>;
        return TGK_LAUNCH(k, gr, TGK_BLOCK, *g, *index, n, J, V, (float *)dt);
    }
    auto k = k_gather_bwd<double>;
    return TGK_LAUNCH(k, gr, TGK_BLOCK, *g, *index, n, J, V, (double *)dt);
}
