/* kernels/cuda/reduce.cu - sum reductions over any set of dims on the GPU,
 * accumulated in double. Each output element gets one block (grid-stride over
 * outputs) whose threads sum strided slices of the reduced elements and then
 * combine them in a fixed tree, so results are deterministic; when fewer than
 * 64 elements are reduced per output, or when there are many outputs along a
 * unit-stride dim, one thread per output sums them in order instead. */
#include "kcommon.cuh"

struct red_geom {
    int nk, nr;                               /* kept / reduced dims */
    int64_t nout, R;
    int64_t kshape[TG__CUDA_MAX_DIMS], kst[TG__CUDA_MAX_DIMS];
    int64_t rshape[TG__CUDA_MAX_DIMS], rst[TG__CUDA_MAX_DIMS];
};

__device__ __forceinline__ int64_t geo_off(int n, const int64_t *shape, const int64_t *st,
                                           int64_t i) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (i % shape[d]) * st[d];
        i /= shape[d];
    }
    return off;
}

template <class TO, class TI>
__global__ void k_sum_block(red_geom g, TO *out, const TI *x, double scale) {
    __shared__ double buf[32];
    for (int64_t o = blockIdx.x; o < g.nout; o += gridDim.x) {
        const TI *xo = x + geo_off(g.nk, g.kshape, g.kst, o);
        double acc = 0.0;
        for (int64_t r = threadIdx.x; r < g.R; r += blockDim.x)
            acc += (double)xo[geo_off(g.nr, g.rshape, g.rst, r)];
        acc = tgk_block_sum(acc, buf);
        if (threadIdx.x == 0) out[o] = (TO)(acc * scale);
    }
}

template <class TO, class TI>
__global__ void k_sum_thread(red_geom g, TO *out, const TI *x, double scale) {
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < g.nout;
         o += (int64_t)gridDim.x * blockDim.x) {
        const TI *xo = x + geo_off(g.nk, g.kshape, g.kst, o);
        double acc = 0.0;
        for (int64_t r = 0; r < g.R; r++) acc += (double)xo[geo_off(g.nr, g.rshape, g.rst, r)];
        out[o] = (TO)(acc * scale);
    }
}

template <class TO, class TI>
static tg_status launch_sum(const red_geom &g, void *out, const void *x, double scale) {
    /* Many outputs along a unit-stride dim (a bias gradient summed over rows):
     * one thread per output reads consecutive addresses across a warp, where
     * a block per output would read one column with strided, uncoalesced loads. */
    bool coalesced = g.nk > 0 && g.kst[g.nk - 1] == 1 && g.nout >= 2048;
    if (g.R >= 64 && !coalesced) {
        auto k = k_sum_block<TO, TI>;
        return TGK_LAUNCH(k, tgk_grid(g.nout, 1), TGK_BLOCK, g, (TO *)out, (const TI *)x, scale);
    }
    auto k = k_sum_thread<TO, TI>;
    return TGK_LAUNCH(k, tgk_grid(g.nout, TGK_BLOCK), TGK_BLOCK, g, (TO *)out, (const TI *)x,
                      scale);
}

extern "C" tg_status tg__cuda_sum_reduce(const tg__cuda_arr *out, const tg__cuda_arr *x,
                                         const bool *red, double scale) {
    red_geom g;
    g.nk = g.nr = 0;
    g.nout = g.R = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (red[d]) {
            g.rshape[g.nr] = x->shape[d];
            g.rst[g.nr++] = x->strides[d];
            g.R *= x->shape[d];
        } else {
            g.kshape[g.nk] = x->shape[d];
            g.kst[g.nk++] = x->strides[d];
            g.nout *= x->shape[d];
        }
    }
    if (g.nout == 0) return TG_OK;
    bool o32 = out->dtype == TG_F32, i32 = x->dtype == TG_F32;
    if (o32 && i32) return launch_sum<float, float>(g, out->data, x->data, scale);
    if (o32) return launch_sum<float, double>(g, out->data, x->data, scale);
    if (i32) return launch_sum<double, float>(g, out->data, x->data, scale);
    return launch_sum<double, double>(g, out->data, x->data, scale);
}
