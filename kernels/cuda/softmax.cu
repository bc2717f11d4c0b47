/* kernels/cuda/softmax.cu - row-wise softmax / log-softmax over the last dim
 * and their backward on the GPU: one block per row (grid-stride over rows),
 * the row max and the row sums reduced across the block. Same rules as the
 * CPU rows (kernels/cpu/softmax.c): the max ignores NaN, sums are in double,
 * a row of all -inf gives NaN and a -inf entry probability 0. */
#include "kcommon.cuh"

template <class T>
__global__ void k_softmax_fwd(tg__cuda_arr xa, int64_t N, int64_t V, int64_t xs, T *y,
                              bool is_log) {
    __shared__ double sbuf[32];
    __shared__ T mbuf[32];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *x = (const T *)xa.data + tgk_row_offset(xa, r);
        T *yr = y + r * V;
        T m = (T)-INFINITY;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) m = tgk_max2(m, x[j * xs]);
        m = tgk_block_max(m, mbuf);
        double sum = 0.0;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
            T e = exp(x[j * xs] - m);
            if (!is_log) yr[j] = e;
            sum += (double)e;
        }
        sum = tgk_block_sum(sum, sbuf);
        if (is_log) {
            T ls = (T)log(sum);
            for (int64_t j = threadIdx.x; j < V; j += blockDim.x) yr[j] = (x[j * xs] - m) - ls;
        } else {
            double inv = 1.0 / sum;
            for (int64_t j = threadIdx.x; j < V; j += blockDim.x) yr[j] = (T)((double)yr[j] * inv);
        }
    }
}

template <class T>
__global__ void k_softmax_bwd(tg__cuda_arr ya, tg__cuda_arr ga, int64_t N, int64_t V, T *dx,
                              bool is_log) {
    __shared__ double sbuf[32];
    int64_t ys = ya.ndim > 0 ? ya.strides[ya.ndim - 1] : 1;
    int64_t gs = ga.ndim > 0 ? ga.strides[ga.ndim - 1] : 1;
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *y = (const T *)ya.data + tgk_row_offset(ya, r);
        const T *g = (const T *)ga.data + tgk_row_offset(ga, r);
        T *d = dx + r * V;
        double acc = 0.0;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
            acc += is_log ? (double)g[j * gs] : (double)g[j * gs] * (double)y[j * ys];
        T s = (T)tgk_block_sum(acc, sbuf);
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
            d[j] = is_log ? g[j * gs] - exp(y[j * ys]) * s : y[j * ys] * (g[j * gs] - s);
    }
}

extern "C" tg_status tg__cuda_softmax_forward(const tg__cuda_arr *x, void *y, bool is_log) {
    int64_t V, xs, N = tgk_rows(x, &V, &xs);
    if (N == 0) return TG_OK;
    if (x->dtype == TG_F32) {
        auto k = k_softmax_fwd<float>;
        return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *x, N, V, xs, (float *)y, is_log);
    }
    auto k = k_softmax_fwd<double>;
    return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *x, N, V, xs, (double *)y, is_log);
}

extern "C" tg_status tg__cuda_softmax_backward(const tg__cuda_arr *y, const tg__cuda_arr *g,
                                               void *dx, bool is_log) {
    int64_t V, ys, N = tgk_rows(y, &V, &ys);
    if (N == 0) return TG_OK;
    if (y->dtype == TG_F32) {
        auto k = k_softmax_bwd<float>;
        return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *y, *g, N, V, (float *)dx, is_log);
    }
    auto k = k_softmax_bwd<double>;
    return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *y, *g, N, V, (double *)dx, is_log);
}
