/* kernels/cuda/reduce.cu - sum reductions over any set of dims on the GPU,
 * accumulated in double. Each output element gets one block (grid-stride over
 * outputs) whose threads sum strided slices of the reduced elements and then
 * combine them in a fixed tree, so results are deterministic; when fewer than
 * 64 elements are reduced per output, one thread per output sums them in
 * order instead, and outputs along a unit-stride dim are summed by tiles that
 * read whole rows (k_sum_cols). When
 * few outputs each reduce very many elements (a full sum of a large tensor),
 * one block per output would leave most of the GPU idle: each output's range
 * is then split into P fixed parts, a block per part writes a partial sum to
 * counted workspace, and a second kernel adds each output's P partials in
 * order (still deterministic: the split depends only on the shapes). */
#include "kcommon.cuh"

struct red_geom {
    int nk, nr;                               /* kept / reduced dims */
    int64_t nout, R;
    int64_t kshape[TG__K_MAX_DIMS], kst[TG__K_MAX_DIMS];
    int64_t rshape[TG__K_MAX_DIMS], rst[TG__K_MAX_DIMS];
};

/* Offset of index i < product(shape[0..n)) over those dims. */
__device__ __forceinline__ int64_t geo_off(int n, const int64_t *shape, const int64_t *st,
                                           int64_t i) {
    if (n == 1) return i * st[0]; /* the common case, without a division */
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

/* Reductions of at least this many elements per output, with fewer outputs
 * than TGK_SPLIT_BLOCKS, are split so that about that many blocks run. */
#define TGK_SPLIT_MIN ((int64_t)1 << 16)
#define TGK_SPLIT_BLOCKS 1024

/* Pass 1 of the split sum: block b sums part b % P of output b / P. */
template <class TI>
__global__ void k_sum_split(red_geom g, int64_t P, int64_t chunk, const TI *x, double *part) {
    __shared__ double buf[32];
    for (int64_t b = blockIdx.x; b < g.nout * P; b += gridDim.x) {
        int64_t o = b / P, r0 = (b % P) * chunk, r1 = r0 + chunk < g.R ? r0 + chunk : g.R;
        const TI *xo = x + geo_off(g.nk, g.kshape, g.kst, o);
        double acc = 0.0;
        for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x)
            acc += (double)xo[geo_off(g.nr, g.rshape, g.rst, r)];
        acc = tgk_block_sum(acc, buf);
        if (threadIdx.x == 0) part[b] = acc;
    }
}

/* Pass 2: out[o] = scale * (sum of its P partials, in order). */
template <class TO>
__global__ void k_sum_parts(int64_t nout, int64_t P, const double *part, TO *out, double scale) {
    TGK_FOR_EACH(nout, o) {
        double acc = 0.0;
        for (int64_t p = 0; p < P; p++) acc += part[o * P + p];
        out[o] = (TO)(acc * scale);
    }
}

/* Pass 1 for outputs along a unit-stride dim (a bias gradient summed over
 * rows): a (32, 8) block takes 32 consecutive outputs, so each warp reads 32
 * consecutive elements, and its 8 rows of threads walk part blockIdx.y of
 * the reduced range; the 8 partial sums of each output are added in order. */
#define TGK_COLS_Y 8
template <class TI>
__global__ void k_sum_cols(red_geom g, int64_t P, int64_t chunk, const TI *x, double *part) {
    __shared__ double buf[TGK_COLS_Y][33];
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    for (int64_t bx = blockIdx.x; bx * 32 < g.nout; bx += gridDim.x) {
        int64_t o = bx * 32 + tx, p = blockIdx.y;
        int64_t r0 = p * chunk, r1 = r0 + chunk < g.R ? r0 + chunk : g.R;
        double acc = 0.0;
        if (o < g.nout) {
            const TI *xo = x + geo_off(g.nk, g.kshape, g.kst, o);
            for (int64_t r = r0 + ty; r < r1; r += TGK_COLS_Y)
                acc += (double)xo[geo_off(g.nr, g.rshape, g.rst, r)];
        }
        __syncthreads(); /* buf may still be read for the previous bx */
        buf[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && o < g.nout) {
            double s = 0.0;
            for (int k = 0; k < TGK_COLS_Y; k++) s += buf[k][tx];
            part[o * P + p] = s;
        }
    }
}

/* The two passes of a split sum: each output's range in P parts of `chunk`
 * (P trimmed so that none is empty), pass1(part, P, chunk) writing the
 * partials (nout, P) to counted workspace, then k_sum_parts. */
template <class TO, class F>
static tg_status two_pass(const red_geom &g, int64_t P, void *out, double scale, F pass1) {
    int64_t chunk = (g.R + P - 1) / P;
    P = (g.R + chunk - 1) / chunk;
    size_t nb = (size_t)(g.nout * P) * sizeof(double);
    double *part = (double *)tg__k_workspace(TG_CUDA, nb); // (nout, P)
    if (!part) return TG_ERR_NOMEM;
    tg_status st = pass1(part, P, chunk);
    if (st == TG_OK) {
        auto k2 = k_sum_parts<TO>;
        st = TGK_LAUNCH(k2, tgk_grid(g.nout, TGK_BLOCK), TGK_BLOCK, g.nout, P,
                        (const double *)part, (TO *)out, scale);
    }
    tg__k_workspace_free(TG_CUDA, part, nb);
    return st;
}

template <class TO, class TI>
static tg_status launch_cols(const red_geom &g, void *out, const void *x, double scale) {
    int64_t bx = (g.nout + 31) / 32;
    int64_t P = TGK_SPLIT_BLOCKS / bx, most = g.R / 256;
    if (P > most) P = most;
    if (P > 65535) P = 65535;
    if (P < 1) P = 1;
    return two_pass<TO>(g, P, out, scale, [&](double *part, int64_t np, int64_t chunk) {
        auto k1 = k_sum_cols<TI>;
        dim3 grid(tgk_grid(bx, 1), (unsigned)np), block(32, TGK_COLS_Y);
        return TGK_LAUNCH(k1, grid, block, g, np, chunk, (const TI *)x, part);
    });
}

template <class TO, class TI>
static tg_status launch_split(const red_geom &g, int64_t P, void *out, const void *x,
                              double scale) {
    return two_pass<TO>(g, P, out, scale, [&](double *part, int64_t np, int64_t chunk) {
        auto k1 = k_sum_split<TI>;
        return TGK_LAUNCH(k1, tgk_grid(g.nout * np, 1), TGK_BLOCK, g, np, chunk, (const TI *)x,
                          part);
    });
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
    /* Outputs along a unit-stride dim: a block per output would read one
     * column with strided, uncoalesced loads; k_sum_cols reads rows. */
    bool unit = g.nk > 0 && g.kst[g.nk - 1] == 1 && g.kshape[g.nk - 1] > 1;
    if (unit && g.nout >= 32 && g.R >= 64) return launch_cols<TO, TI>(g, out, x, scale);
    if (g.R >= TGK_SPLIT_MIN && g.nout < TGK_SPLIT_BLOCKS) {
        int64_t P = TGK_SPLIT_BLOCKS / g.nout, most = g.R / (TGK_SPLIT_MIN / 4);
        return launch_split<TO, TI>(g, P < most ? P : most, out, x, scale);
    }
    if (g.R >= 64) {
        auto k = k_sum_block<TO, TI>;
        return TGK_LAUNCH(k, tgk_grid(g.nout, 1), TGK_BLOCK, g, (TO *)out, (const TI *)x, scale);
    }
    auto k = k_sum_thread<TO, TI>;
    return TGK_LAUNCH(k, tgk_grid(g.nout, TGK_BLOCK), TGK_BLOCK, g, (TO *)out, (const TI *)x,
                      scale);
}

/* Exact sums of i64 or bool elements into i64 (wrapping around as PyTorch):
 * a block per output; integer addition does not depend on the order. */
template <class TI> __global__ void k_isum_block(red_geom g, int64_t *out, const TI *x) {
    __shared__ unsigned long long buf[32];
    for (int64_t o = blockIdx.x; o < g.nout; o += gridDim.x) {
        const TI *xo = x + geo_off(g.nk, g.kshape, g.kst, o);
        unsigned long long acc = 0;
        for (int64_t r = threadIdx.x; r < g.R; r += blockDim.x)
            acc += (unsigned long long)xo[geo_off(g.nr, g.rshape, g.rst, r)];
        acc = tgk_block_sum(acc, buf);
        if (threadIdx.x == 0) out[o] = (int64_t)acc;
    }
}

extern "C" tg_status tg__cuda_sum_reduce(const tg__arr *out, const tg__arr *x,
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
    if (out->dtype == TG_I64) { /* an exact integer sum (scale is 1) */
        if (x->dtype == TG_BOOL) {
            auto k = k_isum_block<uint8_t>;
            return TGK_LAUNCH(k, tgk_grid(g.nout, 1), TGK_BLOCK, g, (int64_t *)out->data,
                              (const uint8_t *)x->data);
        }
        auto k = k_isum_block<int64_t>;
        return TGK_LAUNCH(k, tgk_grid(g.nout, 1), TGK_BLOCK, g, (int64_t *)out->data,
                          (const int64_t *)x->data);
    }
    bool o32 = out->dtype == TG_F32, i32 = x->dtype == TG_F32;
    if (o32 && i32) return launch_sum<float, float>(g, out->data, x->data, scale);
    if (o32) return launch_sum<float, double>(g, out->data, x->data, scale);
    if (i32) return launch_sum<double, float>(g, out->data, x->data, scale);
    return launch_sum<double, double>(g, out->data, x->data, scale);
}
