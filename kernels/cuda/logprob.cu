/* kernels/cuda/logprob.cu - the fused log-prob / entropy op on the GPU.
 *
 * Forward: one team per row (grid-stride over rows): a block, or a warp
 * when rows are many and short (warp_rows). Each thread walks the
 * columns j = tid, tid + team size, ... (coalesced when the row is contiguous)
 * keeping an online state over the raw logits: its max M, S = sum exp(d) and
 * A = sum exp(d) * d with d = (z - M) * inv_t, rescaled when M grows. The
 * states are merged with warp shuffles, then across warps through shared
 * memory: merging (M1, S1, A1) into M >= M1 multiplies by f = exp(dm) with
 * dm = (M1 - M) * inv_t: S1 f and (A1 + S1 dm) f. Then lse = M inv_t + log S
 * and H = log S - A / S, as on the CPU (kernels/cpu/logprob.c). f32 rows
 * accumulate in f32 and f64 rows in f64; the per-row results are formed in
 * double. A row with a NaN or +inf entry, or with every entry -inf, sets
 * *bad_row with an atomic minimum.
 *
 * Backward: one team per row (as forward), p = exp((z - M) inv_t - ls), and
 *   dz = p == 0 ? 0 : -g_lp inv_t p - g_H inv_t p (d + H), plus g_lp inv_t at
 * the target column, written by the thread that owns that column.
 *
 * bf16 logits are read as they are (eight to a 16-byte load), every sum and
 * output in f32, and their gradient written in bf16: 2 bytes a logit each
 * way instead of an f32 copy made and read. */
#include <stdlib.h>
#include <string.h>

#include "kcommon.cuh"

template <class A> struct lpe_state {
    A m, s, a; /* max raw logit, sum exp(d), sum exp(d) * d */
};

/* Folds (m2, s2, a2) into st (both over the same inv_t). */
template <class A>
__device__ __forceinline__ void lpe_merge(lpe_state<A> &st, A m2, A s2, A a2, A it) {
    if (s2 == (A)0 && m2 == (A)-INFINITY) return;
    if (st.s == (A)0 && st.m == (A)-INFINITY) {
        st.m = m2;
        st.s = s2;
        st.a = a2;
        return;
    }
    if (m2 > st.m) { /* rescale st to m2 */
        A dm = (st.m - m2) * it, f = exp(dm);
        st.a = (st.a + st.s * dm) * f;
        st.s *= f;
        st.m = m2;
    } else if (m2 < st.m) {
        A dm = (m2 - st.m) * it, f = exp(dm);
        a2 = (a2 + s2 * dm) * f;
        s2 *= f;
    }
    st.s += s2;
    st.a += a2;
}

/* Folds logit v into the thread's state; a NaN or +inf sets nbad. */
template <class T>
__device__ __forceinline__ void lpe_push(lpe_state<T> &st, T v, T it, int &nbad) {
    if (v != v || v == (T)INFINITY) {
        nbad = 1;
        return;
    }
    if (v == (T)-INFINITY) return;
    if (v > st.m) {
        if (st.s > (T)0) {
            T dm = (st.m - v) * it, f = exp(dm);
            st.a = (st.a + st.s * dm) * f;
            st.s *= f;
        }
        st.m = v;
    }
    T d = (v - st.m) * it, e = exp(d);
    st.s += e;
    st.a += e == (T)0 ? (T)0 : e * d;
}

/* Folds four logits into the thread's state with at most one rescale (the
 * max of the four first): a quarter of lpe_push's compares and branches,
 * and four independent exponentials, taken base 2 on arguments scaled by
 * log2(e) once (one multiply and one ex2 each: the bf16 forward is bound by
 * this arithmetic, not by memory). Same sums as four lpe_push calls up to
 * rounding; a NaN or +inf sets nbad (the state is then unused). */
__device__ __forceinline__ void lpe_push4(lpe_state<float> &st, float4 v, float it, int &nbad) {
    const float inf = INFINITY, log2e = 1.4426950408889634f, ln2 = 0.6931471805599453f;
    nbad |= !(v.x < inf) | !(v.y < inf) | !(v.z < inf) | !(v.w < inf); /* NaN or +inf */
    const float mx = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); /* NaN ignored: flagged above */
    if (!(mx > -inf)) return;                                 /* all -inf (or NaN) */
    if (mx > st.m) {
        if (st.s > 0.0f) {
            float dm = (st.m - mx) * it, f = exp2f(dm * log2e);
            st.a = (st.a + st.s * dm) * f;
            st.s *= f;
        }
        st.m = mx;
    }
    const float c = it * log2e; /* d log2(e): the base-2 exponent */
    float b0 = (v.x - st.m) * c, b1 = (v.y - st.m) * c, b2 = (v.z - st.m) * c,
          b3 = (v.w - st.m) * c;
    float e0 = exp2f(b0), e1 = exp2f(b1), e2 = exp2f(b2), e3 = exp2f(b3);
    st.s += (e0 + e1) + (e2 + e3);
    /* sum e d = ln 2 sum e b; e == 0 (a -inf logit, or one far below the
     * max): no term, as lpe_push */
    st.a += ln2 * (((e0 == 0.0f ? 0.0f : e0 * b0) + (e1 == 0.0f ? 0.0f : e1 * b1)) +
                   ((e2 == 0.0f ? 0.0f : e2 * b2) + (e3 == 0.0f ? 0.0f : e3 * b3)));
}

/* The block's state for row x (every thread gets it); *bad is set when the
 * row has a NaN or +inf entry (raw), or no entry above -inf. A contiguous
 * f32 row is read with 16-byte loads after a scalar head up to its first
 * 16-byte boundary, two loads in flight per thread, four logits folded at
 * a time (lpe_push4). */
/* The team that reads a row: the whole block, or one warp (WARP). */
template <bool WARP> struct team {
    __device__ static int64_t rank() { return WARP ? threadIdx.x % 32 : threadIdx.x; }
    __device__ static int64_t size() { return WARP ? 32 : blockDim.x; }
    /* the first row and the stride between a team's rows */
    __device__ static int64_t first() {
        return WARP ? (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32 : blockIdx.x;
    }
    __device__ static int64_t stride() {
        return WARP ? (int64_t)gridDim.x * (blockDim.x / 32) : gridDim.x;
    }
    __device__ static bool leader() { return rank() == 0; }
};

template <class T, class S, bool WARP>
__device__ __forceinline__ lpe_state<T> lpe_row_state(const S *x, int64_t xs, int64_t V, T it,
                                                      int *bad) {
    __shared__ T bm[32], bsum[32], ba[32];
    __shared__ int bbad[32];
    lpe_state<T> st = {(T)-INFINITY, (T)0, (T)0};
    int nbad = 0;
    const int64_t tid = team<WARP>::rank(), nt = team<WARP>::size();
    if constexpr (sizeof(S) == 2) { /* bf16: eight a load, two loads in flight */
        if (xs == 1) {
            int64_t head = tgk_head8(x, V), n8 = (V - head) / 8;
            for (int64_t j = tid; j < head; j += nt)
                lpe_push(st, tgk_ld<T>(x + j), it, nbad);
            int64_t q = tid;
            for (; q + nt < n8; q += 2 * nt) {
                float4 a0, a1, b0, b1;
                tgk_load8bf(x + head + 8 * q, a0, a1);
                tgk_load8bf(x + head + 8 * (q + nt), b0, b1);
                lpe_push4(st, a0, it, nbad);
                lpe_push4(st, a1, it, nbad);
                lpe_push4(st, b0, it, nbad);
                lpe_push4(st, b1, it, nbad);
            }
            if (q < n8) {
                float4 a0, a1;
                tgk_load8bf(x + head + 8 * q, a0, a1);
                lpe_push4(st, a0, it, nbad);
                lpe_push4(st, a1, it, nbad);
            }
            for (int64_t j = head + 8 * n8 + tid; j < V; j += nt)
                lpe_push(st, tgk_ld<T>(x + j), it, nbad);
            xs = 0; /* done: skip the strided loop below */
            V = 0;
        }
    } else if constexpr (sizeof(T) == 4) {
        if (xs == 1) {
            int64_t head = tgk_head4(x, V), n4 = (V - head) / 4;
            for (int64_t j = tid; j < head; j += nt) lpe_push(st, x[j], it, nbad);
            int64_t q = tid;
            for (; q + nt < n4; q += 2 * nt) {
                float4 v0 = tgk_load4(x + head + 4 * q);
                float4 v1 = tgk_load4(x + head + 4 * (q + nt));
                lpe_push4(st, v0, it, nbad);
                lpe_push4(st, v1, it, nbad);
            }
            if (q < n4) lpe_push4(st, tgk_load4(x + head + 4 * q), it, nbad);
            for (int64_t j = head + 4 * n4 + tid; j < V; j += nt)
                lpe_push(st, x[j], it, nbad);
            xs = 0; /* done: skip the strided loop below */
            V = 0;
        }
    }
    for (int64_t j = tid; j < V; j += nt)
        lpe_push(st, tgk_ld<T>(x + j * xs), it, nbad);
    /* warp merge */
    for (int o = 16; o > 0; o >>= 1) {
        T m2 = __shfl_xor_sync(0xffffffffu, st.m, o);
        T s2 = __shfl_xor_sync(0xffffffffu, st.s, o);
        T a2 = __shfl_xor_sync(0xffffffffu, st.a, o);
        nbad |= __shfl_xor_sync(0xffffffffu, nbad, o);
        lpe_merge(st, m2, s2, a2, it);
    }
    if constexpr (WARP) { /* lane 0's merge order for every lane */
        st.m = __shfl_sync(0xffffffffu, st.m, 0);
        st.s = __shfl_sync(0xffffffffu, st.s, 0);
        st.a = __shfl_sync(0xffffffffu, st.a, 0);
        *bad = nbad || st.m == (T)-INFINITY;
        return st;
    }
    int lane = (int)(threadIdx.x % 32), w = (int)(threadIdx.x / 32), nw = (int)(blockDim.x / 32);
    __syncthreads(); /* the buffers may still be read for the previous row */
    if (lane == 0) {
        bm[w] = st.m;
        bsum[w] = st.s;
        ba[w] = st.a;
        bbad[w] = nbad;
    }
    __syncthreads();
    lpe_state<T> tot = {(T)-INFINITY, (T)0, (T)0};
    int tbad = 0;
    for (int k = 0; k < nw; k++) { /* same order in every thread: same result */
        lpe_merge(tot, bm[k], bsum[k], ba[k], it);
        tbad |= bbad[k];
    }
    *bad = tbad || tot.m == (T)-INFINITY;
    return tot;
}

/* Both row kernels are streaming kernels: 8 blocks of 256 threads per SM (32
 * registers a thread, checked to spill nothing) keep more loads in flight
 * than the 6 blocks the compiler's own choice allows. */
/* T: the compute type and that of lp / H; S: the logits' element type (T,
 * or uint16_t: bf16 logits read as they are, computed in f32). */
template <class T, class S, bool WARP>
__global__ void __launch_bounds__(TGK_BLOCK, 8)
    k_lpe_fwd(tg__arr z, int64_t N, int64_t V, const int64_t *y, int64_t ignore,
              double inv_t, T *lp, T *H, double *stats, int nstat, unsigned long long *bad_row) {
    int64_t xs = z.strides[z.ndim - 1];
    typedef team<WARP> tm;
    for (int64_t r = tm::first(); r < N; r += tm::stride()) {
        int64_t yr = y[r];
        if (yr == ignore) { /* uniform across the team: no barrier is skipped by some only */
            if (tm::leader()) {
                lp[r] = (T)0;
                if (H) H[r] = (T)0;
                if (stats)
                    for (int k = 0; k < nstat; k++) stats[r * nstat + k] = 0.0;
            }
            continue;
        }
        const S *x = (const S *)z.data + tgk_row_offset(z, r);
        int bad;
        lpe_state<T> st = lpe_row_state<T, S, WARP>(x, xs, V, (T)inv_t, &bad);
        if (!tm::leader()) continue;
        if (bad) {
            atomicMin(bad_row, (unsigned long long)r);
            continue;
        }
        double M = (double)st.m, ls = log((double)st.s);
        double h = ls - (double)st.a / (double)st.s;
        /* a target outside [0, V): no target term (a block of the vocabulary) */
        lp[r] = yr >= 0 && yr < V ? (T)(((double)tgk_ld<T>(x + yr * xs) - M) * inv_t - ls)
                                  : (T)0;
        if (H) H[r] = (T)h;
        if (stats) {
            stats[r * nstat] = M;
            stats[r * nstat + 1] = ls;
            if (nstat == 3) stats[r * nstat + 2] = h;
        }
    }
}

template <class T, class S>
__global__ void k_lpe_check(tg__arr z, int64_t N, int64_t V, const int64_t *y,
                            int64_t ignore, double inv_t, unsigned long long *bad_row) {
    __shared__ int buf[32];
    int64_t xs = z.strides[z.ndim - 1];
    double lim = sizeof(T) == 4 ? 3.402823466e38 : 1.7976931348623157e308;
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        if (y[r] == ignore) continue;
        const S *x = (const S *)z.data + tgk_row_offset(z, r);
        int nbad = 0, nfin = 0;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
            double v = (double)tgk_ld<T>(x + j * xs) * inv_t;
            nbad |= !(v <= lim);
            nfin |= v > -INFINITY;
        }
        int tb = tgk_block_sum(nbad, buf), tf = tgk_block_sum(nfin, buf);
        if (threadIdx.x == 0 && (tb || !tf)) atomicMin(bad_row, (unsigned long long)r);
    }
}

/* T, S as k_lpe_fwd; dz of type D: the logits' type S, or bf16 for f32
 * logits (the linear op's GEMM operand); bf16 is rounded as written. */
template <class T, class S, class D, bool WARP>
__global__ void __launch_bounds__(TGK_BLOCK, 8)
    k_lpe_bwd(tg__arr z, int64_t N, int64_t V, const int64_t *y, int64_t ignore,
              double inv_t, const double *stats, int nstat, tg__arr glp, tg__arr gH,
              tg__arr glse, D *dz) {
    int64_t xs = z.strides[z.ndim - 1];
    typedef team<WARP> tm;
    const int64_t tid = tm::rank(), nt = tm::size();
    for (int64_t r = tm::first(); r < N; r += tm::stride()) {
        D *o = dz + r * V;
        int64_t yr = y[r];
        if (yr == ignore) {
            for (int64_t j = tid; j < V; j += nt) o[j] = (D)0;
            continue;
        }
        double g1 = glp.data ? (double)((const T *)glp.data)[tgk_elem_offset(glp, r)] : 0.0;
        double g2 = (nstat == 3 && gH.data) ? (double)((const T *)gH.data)[tgk_elem_offset(gH, r)]
                                            : 0.0;
        double g3 = glse.data ? (double)((const T *)glse.data)[tgk_elem_offset(glse, r)] : 0.0;
        T M = (T)stats[r * nstat], ls = (T)stats[r * nstat + 1];
        T h = nstat == 3 ? (T)stats[r * nstat + 2] : (T)0;
        T it = (T)inv_t, a = (T)((g3 - g1) * inv_t), b = (T)(-g2 * inv_t), at_y = (T)(g1 * inv_t);
        const S *x = (const S *)z.data + tgk_row_offset(z, r);
        auto grad = [&](int64_t j, T xv) {
            T d = (xv - M) * it - ls;
            T p = exp(d);
            T v = p == (T)0 ? (T)0 : a * p + b * p * (d + h);
            return j == yr ? v + at_y : v;
        };
        int64_t j0 = 0; /* entries [0, j0) done by the vector path */
        if constexpr (sizeof(S) == 4 && sizeof(D) == 2) {
            /* f32 in, bf16 out: eight at a time when both rows start on a
             * 16-byte boundary (the linear op's blocks of 8k columns) */
            if (xs == 1 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)o & 15) == 0) {
                const int64_t n8 = V / 8;
                for (int64_t q = tid; q < n8; q += nt) {
                    int64_t j = 8 * q;
                    float4 a = tgk_load4(x + j), b = tgk_load4(x + j + 4), ga, gb;
                    ga.x = grad(j, a.x), ga.y = grad(j + 1, a.y);
                    ga.z = grad(j + 2, a.z), ga.w = grad(j + 3, a.w);
                    gb.x = grad(j + 4, b.x), gb.y = grad(j + 5, b.y);
                    gb.z = grad(j + 6, b.z), gb.w = grad(j + 7, b.w);
                    tgk_store8bf(o + j, ga, gb);
                }
                j0 = 8 * n8;
            }
        } else if constexpr (sizeof(S) == 2) {
            /* contiguous, and the same offset from a 16-byte boundary as o */
            if (xs == 1 && ((uintptr_t)x & 15) == ((uintptr_t)o & 15)) {
                int64_t head = tgk_head8(x, V), n8 = (V - head) / 8;
                for (int64_t j = tid; j < head; j += nt)
                    tgk_st(o + j, grad(j, tgk_ld<T>(x + j)));
                for (int64_t q = tid; q < n8; q += nt) {
                    int64_t j = head + 8 * q;
                    float4 a, b, ga, gb;
                    tgk_load8bf(x + j, a, b);
                    ga.x = grad(j, a.x), ga.y = grad(j + 1, a.y);
                    ga.z = grad(j + 2, a.z), ga.w = grad(j + 3, a.w);
                    gb.x = grad(j + 4, b.x), gb.y = grad(j + 5, b.y);
                    gb.z = grad(j + 6, b.z), gb.w = grad(j + 7, b.w);
                    tgk_store8bf(o + j, ga, gb);
                }
                j0 = head + 8 * n8;
            }
        } else if constexpr (sizeof(T) == 4 && sizeof(D) == 4) {
            /* contiguous, and the same offset from a 16-byte boundary as o */
            if (xs == 1 && ((uintptr_t)x & 15) == ((uintptr_t)o & 15)) {
                int64_t head = tgk_head4(x, V), n4 = (V - head) / 4;
                for (int64_t j = tid; j < head; j += nt) o[j] = grad(j, x[j]);
                for (int64_t q = tid; q < n4; q += nt) {
                    int64_t j = head + 4 * q;
                    float4 v = tgk_load4(x + j), g;
                    g.x = grad(j, v.x);
                    g.y = grad(j + 1, v.y);
                    g.z = grad(j + 2, v.z);
                    g.w = grad(j + 3, v.w);
                    tgk_store4(o + j, g);
                }
                j0 = head + 4 * n4;
            }
        }
        for (int64_t j = j0 + tid; j < V; j += nt)
            tgk_st(o + j, grad(j, tgk_ld<T>(x + j * xs)));
    }
}

/* Who reads a row: a warp when there are rows enough to fill the device
 * with one wave of warps and rows short enough for 32 lanes to stream
 * (N >= 2048, V <= 65536: no block barrier, no tail of row-sized waves),
 * else the block. TAPEGRAD_CUDA_LPE_TEAM=warp or =block forces one (read
 * once; for measuring the two). */
static bool warp_rows(int64_t N, int64_t V) {
    static int forced = -1; /* -1 unread, 0 auto, 1 warp, 2 block */
    if (forced < 0) {
        const char *e = getenv("TAPEGRAD_CUDA_LPE_TEAM");
        forced = e && !strcmp(e, "warp") ? 1 : e && !strcmp(e, "block") ? 2 : 0;
    }
    if (forced) return forced == 1;
    return N >= 2048 && V <= 65536;
}
/* The grid for N rows: one team per row (8 warps to a block). */
static unsigned row_grid(int64_t N, bool warp) { return tgk_grid(N, warp ? TGK_BLOCK / 32 : 1); }
#define LPE_K(kern, T, S) (warp ? kern<T, S, true> : kern<T, S, false>)
#define LPE_KB(T, S, D) (warp ? k_lpe_bwd<T, S, D, true> : k_lpe_bwd<T, S, D, false>)

extern "C" tg_status tg__cuda_lpe_forward_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                                          double inv_t, void *lp, void *H, double *stats,
                                          int nstat, int64_t *bad_row) {
    int64_t V, xs, N = tgk_rows(z, &V, &xs);
    *bad_row = -1;
    if (N == 0) return TG_OK;
    const bool warp = warp_rows(N, V);
    unsigned g = row_grid(N, warp);
    return tgk_report_min(bad_row, [&](unsigned long long *dbad) {
        if (z->dtype == TG_F32 || z->dtype == TG_BF16) {
            auto k = z->dtype == TG_F32 ? LPE_K(k_lpe_fwd, float, float)
                                        : LPE_K(k_lpe_fwd, float, uint16_t);
            return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, (float *)lp, (float *)H,
                              stats, nstat, dbad);
        }
        auto k = LPE_K(k_lpe_fwd, double, double);
        return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, (double *)lp, (double *)H,
                          stats, nstat, dbad);
    });
}

extern "C" tg_status tg__cuda_lpe_check_rows_at(const tg__arr *z, const int64_t *y,
                                             int64_t ignore, double inv_t, int64_t *bad_row) {
    int64_t V, xs, N = tgk_rows(z, &V, &xs);
    *bad_row = -1;
    if (N == 0) return TG_OK;
    unsigned g = tgk_grid(N, 1);
    return tgk_report_min(bad_row, [&](unsigned long long *dbad) {
        if (z->dtype == TG_F32 || z->dtype == TG_BF16) {
            auto k = z->dtype == TG_F32 ? k_lpe_check<float, float> : k_lpe_check<float, uint16_t>;
            return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, dbad);
        }
        auto k = k_lpe_check<double, double>;
        return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, dbad);
    });
}

extern "C" tg_status tg__cuda_lpe_backward_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                                           double inv_t, const double *stats, int nstat,
                                           const tg__arr *g_lp, const tg__arr *g_H,
                                           const tg__arr *g_lse, void *dz, int dz_dtype) {
    int64_t V, xs, N = tgk_rows(z, &V, &xs);
    if (N == 0) return TG_OK;
    const bool warp = warp_rows(N, V);
    unsigned g = row_grid(N, warp);
    if (z->dtype == TG_F32 && dz_dtype == TG_BF16) {
        auto k = LPE_KB(float, float, uint16_t);
        return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, stats, nstat, *g_lp, *g_H,
                          *g_lse, (uint16_t *)dz);
    }
    if (z->dtype == TG_F32) {
        auto k = LPE_KB(float, float, float);
        return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, stats, nstat, *g_lp, *g_H,
                          *g_lse, (float *)dz);
    }
    if (z->dtype == TG_BF16) {
        auto k = LPE_KB(float, uint16_t, uint16_t);
        return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, stats, nstat, *g_lp, *g_H,
                          *g_lse, (uint16_t *)dz);
    }
    auto k = LPE_KB(double, double, double);
    return TGK_LAUNCH(k, g, TGK_BLOCK, *z, N, V, y, ignore, inv_t, stats, nstat, *g_lp, *g_H,
                      *g_lse, (double *)dz);
}
