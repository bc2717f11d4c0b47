/* kernels/cuda/softmax.cu - row-wise softmax / log-softmax over the last dim
 * and their backward on the GPU: one block per row (grid-stride over rows),
 * the row max and the row sums reduced across the block. Same rules as the
 * CPU rows (kernels/cpu/softmax.c): sums are in double, a NaN entry makes the
 * row NaN, a row of all -inf gives NaN and a -inf entry probability 0. The
 * forward reads a row twice and writes it once (online max and sum). */
#include "kcommon.cuh"

/* Folds (m2, s2) into (m, s): s sums exp(x - m) over what it has seen.
 * (-inf, 0) is the empty state (it must not meet -inf - -inf = NaN). */
template <class T> __device__ __forceinline__ void sm_merge(T &m, double &s, T m2, double s2) {
    if (s2 == 0.0 && m2 == (T)-INFINITY) return;
    if (s == 0.0 && m == (T)-INFINITY) {
        m = m2;
        s = s2;
        return;
    }
    if (m2 > m) {
        s = s * exp((double)(m - m2)) + s2;
        m = m2;
    } else {
        s += s2 * exp((double)(m2 - m));
    }
}

/* One read of the row for its max and sum (online: a thread's sum is
 * rescaled when its max grows), one read and one write for the output. */
template <class T>
__global__ void k_softmax_fwd(tg__arr xa, tg__arr ya, int64_t N, int64_t V, int64_t xs,
                              int64_t ys, bool is_log) {
    __shared__ T mbuf[32];
    __shared__ double sbuf[32];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *x = (const T *)xa.data + tgk_row_offset(xa, r);
        T *yr = (T *)ya.data + tgk_row_offset(ya, r);
        T m = (T)-INFINITY;
        double sum = 0.0;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
            T v = x[j * xs];
            if (v == (T)-INFINITY) continue; /* adds 0; and -inf - -inf would be NaN */
            if (v > m) {
                if (sum > 0.0) sum *= exp((double)(m - v));
                m = v;
            }
            sum += (double)exp(v - m); /* NaN for a NaN entry, as on the CPU */
        }
        for (int o = 16; o > 0; o >>= 1) {
            T m2 = __shfl_xor_sync(0xffffffffu, m, o);
            double s2 = __shfl_xor_sync(0xffffffffu, sum, o);
            sm_merge(m, sum, m2, s2);
        }
        int lane = (int)(threadIdx.x % 32), w = (int)(threadIdx.x / 32), nw = (int)(blockDim.x / 32);
        __syncthreads(); /* the buffers may still be read for the previous row */
        if (lane == 0) {
            mbuf[w] = m;
            sbuf[w] = sum;
        }
        __syncthreads();
        m = (T)-INFINITY;
        sum = 0.0;
        for (int k = 0; k < nw; k++) sm_merge(m, sum, mbuf[k], sbuf[k]); /* same order everywhere */
        if (is_log) {
            T ls = (T)log(sum);
            for (int64_t j = threadIdx.x; j < V; j += blockDim.x) yr[j * ys] = (x[j * xs] - m) - ls;
        } else {
            double inv = 1.0 / sum;
            for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
                yr[j * ys] = (T)((double)exp(x[j * xs] - m) * inv);
        }
    }
}

template <class T>
__global__ void k_softmax_bwd(tg__arr ya, tg__arr ga, tg__arr da, int64_t N, int64_t V,
                              bool is_log) {
    __shared__ double sbuf[32];
    int64_t ys = ya.ndim > 0 ? ya.strides[ya.ndim - 1] : 1;
    int64_t gs = ga.ndim > 0 ? ga.strides[ga.ndim - 1] : 1;
    int64_t ds = da.ndim > 0 ? da.strides[da.ndim - 1] : 1;
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *y = (const T *)ya.data + tgk_row_offset(ya, r);
        const T *g = (const T *)ga.data + tgk_row_offset(ga, r);
        T *d = (T *)da.data + tgk_row_offset(da, r);
        double acc = 0.0;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
            acc += is_log ? (double)g[j * gs] : (double)g[j * gs] * (double)y[j * ys];
        T s = (T)tgk_block_sum(acc, sbuf);
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
            d[j * ds] = is_log ? g[j * gs] - exp(y[j * ys]) * s : y[j * ys] * (g[j * gs] - s);
    }
}

extern "C" tg_status tg__cuda_softmax_forward(const tg__arr *x, const tg__arr *y, bool is_log) {
    int64_t V, xs, ys, N = tgk_rows(x, &V, &xs);
    tgk_rows(y, &V, &ys);
    if (N == 0) return TG_OK;
    if (x->dtype == TG_F32) {
        auto k = k_softmax_fwd<float>;
        return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *x, *y, N, V, xs, ys, is_log);
    }
    auto k = k_softmax_fwd<double>;
    return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *x, *y, N, V, xs, ys, is_log);
}

extern "C" tg_status tg__cuda_softmax_backward(const tg__arr *y, const tg__arr *g,
                                               const tg__arr *dx, bool is_log) {
    int64_t V, ys, N = tgk_rows(y, &V, &ys);
    if (N == 0) return TG_OK;
    if (y->dtype == TG_F32) {
        auto k = k_softmax_bwd<float>;
        return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *y, *g, *dx, N, V, is_log);
    }
    auto k = k_softmax_bwd<double>;
    return TGK_LAUNCH(k, tgk_grid(N, 1), TGK_BLOCK, *y, *g, *dx, N, V, is_log);
}
