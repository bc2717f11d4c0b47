/* kernels/cpu/logprob_rows.h - the f32 row kernels of the fused log-prob op,
 * written once and included by kernels/cpu/logprob.c once per instruction
 * set, with:
 *   LPE_SFX   the variant's suffix (base, avx2, avx512): its functions are
 *             lpe_fwd_SFX and lpe_bwd_SFX
 *   LPE_ATTR  the target attribute of those two functions (empty for base)
 *   LPE_W     floats per hardware register: 4 (SSE2), 8 (AVX2), 16 (AVX-512)
 *
 * Every variant computes on 16 lanes, the same lane-wise arithmetic in the
 * same order, so the sums are the same whatever the width: a 16-entry step is
 * 16 / LPE_W registers of the hardware's own width, each lane l of the step
 * in register l / LPE_W. (Written on 64-byte vectors instead, GCC lowers
 * them on AVX2 and SSE2 through the stack, with a store-forwarding stall per
 * step: 4x slower rows than the same arithmetic on whole registers.)
 * Exponentials are Cephes-style (see logprob.c); arguments are <= 0. */

#define LPE_CAT2(a, b) a##_##b
#define LPE_CAT(a, b) LPE_CAT2(a, b)
#define LPE_NAME(x) LPE_CAT(x, LPE_SFX)

#define LPE_PARTS (16 / LPE_W) /* registers per 16-lane step */
/* The helpers carry the variant's target too: an intrinsic (the streamed
 * store) may only be inlined into code compiled for its instruction set. */
#define LPE_INLINE VINLINE LPE_ATTR
#if defined(__clang__)
#define LPE_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define LPE_UNROLL _Pragma("GCC unroll 4")
#else
#define LPE_UNROLL
#endif

#define hv LPE_NAME(lpe_hv)
#define hi LPE_NAME(lpe_hi)
typedef float hv __attribute__((vector_size(LPE_W * 4)));
typedef int32_t hi __attribute__((vector_size(LPE_W * 4)));

#define hsplat LPE_NAME(lpe_hsplat)
#define hload LPE_NAME(lpe_hload)
#define hexp LPE_NAME(lpe_hexp)
#define hsum16 LPE_NAME(lpe_hsum16)
#define hstream LPE_NAME(lpe_hstream)
#define fwd_row LPE_NAME(lpe_fwd_row)
#define bwd_row LPE_NAME(lpe_bwd_row)

/* c in every lane (c - +0 keeps c's sign when c is -0; c + 0 would not). */
LPE_INLINE hv hsplat(float c) { return c - (hv){0}; }

/* Loads LPE_W entries x[0], x[xs], ...; the first `n` are real (n <= 0: none,
 * x not read), the rest are `pad`. */
LPE_INLINE hv hload(const float *x, int64_t xs, int n, float pad) {
    hv v;
    if (xs == 1 && n >= LPE_W) {
        memcpy(&v, x, sizeof v);
        return v;
    }
    v = hsplat(pad);
    for (int l = 0; l < n && l < LPE_W; l++) v[l] = x[l * xs];
    return v;
}

/* exp(d) for d <= 0 (or a tiny positive rounding residue). Lanes below -87
 * (including -inf, and the NaN that -inf produces inside) come out as exactly
 * 0 through the final mask, so no clamp is needed; *keep receives the mask
 * (d >= -87: false for NaN). No intermediate is ever denormal: 2^n is built
 * with a zero mantissa. */
LPE_INLINE hv hexp(hv d, hi *keep) {
    *keep = d >= -87.0f; /* one compare per register of the hardware's width */
    const hv t = d * 1.44269504088896341f + 12582912.0f;
    const hv n = t - 12582912.0f;
    hv r = d - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    hv p = hsplat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const hv scale = (hv)((((hi)t) - (0x4B400000 - 127)) << 23);
    return (hv)((hi)(p * scale) & *keep);
}

/* Pairwise sum, in double, of the 16 lanes acc[0..LPE_PARTS) hold (lane l in
 * acc[l / LPE_W]): lanes l and l + 8 first, then l and l + 4, ... */
LPE_INLINE double hsum16(const hv *acc) {
    double a[16];
    for (int l = 0; l < 16; l++) a[l] = acc[l / LPE_W][l % LPE_W];
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) a[l] += a[l + w];
    return a[0];
}

/* The entries are scaled after subtracting the max, d = (z - M) * it, so that
 * no rounding of z * it leaks into lse (and logprob stays <= 0). Each lane
 * sums 64 exponentials of a block in f32; blocks are added in f64. */
LPE_INLINE row_out fwd_row(const float *x, int64_t xs, int64_t V, float it) {
    float M = -INFINITY;
    double S = 0.0, A = 0.0;
    for (int64_t b0 = 0; b0 < V; b0 += LPE_BLOCK) {
        const int64_t n = V - b0 < LPE_BLOCK ? V - b0 : LPE_BLOCK;
        const float *xb = x + b0 * xs;
        float bm = -INFINITY;
        int nbad = 0;
        #pragma omp simd reduction(max : bm) reduction(| : nbad)
        for (int64_t j = 0; j < n; j++) {
            const float v = xb[j * xs];
            bm = v > bm ? v : bm;
            nbad |= !(v <= FLT_MAX); /* NaN or +inf */
        }
        if (nbad)
            return (row_out){-INFINITY, 0, 0, 1};
        if (bm == -INFINITY) continue;
        if (bm > M) {
            rescale_sums(M, bm, it, &S, &A);
            M = bm;
        }
        hv bs[LPE_PARTS], bt[LPE_PARTS];
        for (int q = 0; q < LPE_PARTS; q++) bs[q] = bt[q] = hsplat(0.0f);
        for (int64_t j = 0; j < n; j += 16) {
            const int m = n - j < 16 ? (int)(n - j) : 16;
            LPE_UNROLL /* the parts' accumulators stay in registers */
            for (int q = 0; q < LPE_PARTS; q++) {
                const int mq = m - q * LPE_W;
                const hv z = mq > 0 ? hload(xb + (j + q * LPE_W) * xs, xs, mq, -INFINITY)
                                    : hsplat(-INFINITY);
                const hv d = (z - M) * it;
                hi keep;
                const hv e = hexp(d, &keep);
                bs[q] += e;
                bt[q] += (hv)((hi)(e * d) & keep); /* 0 * -inf would be NaN */
            }
        }
        S += hsum16(bs);
        A += hsum16(bt);
    }
    return row_finish(M, S, A);
}

/* Stores a register of the gradient at p (64-byte aligned for AVX-512, 32
 * for AVX2, 16 for SSE2: within a cache line) past the caches. */
LPE_INLINE void hstream(float *p, hv g) {
#if !defined(LPE_DISPATCH)
    memcpy(p, &g, sizeof g);
#elif LPE_W == 16
    _mm512_stream_ps(p, (__m512)g);
#elif LPE_W == 8
    _mm256_stream_ps(p, (__m256)g);
#else
    _mm_stream_ps(p, (__m128)g);
#endif
}

LPE_INLINE void bwd_row(const float *x, int64_t xs, int64_t V, float it, float M, double ls,
                     float H, float glp, float gH, float *out, bool stream) {
    const float l_hi = (float)ls, l_lo = (float)(ls - (double)l_hi);
    const hv a = hsplat(-glp * it), b = hsplat(-gH * it);
#ifdef LPE_DISPATCH
    const bool nt = stream && V >= LPE_NT_MIN;
    /* entries before the first 64-byte boundary of out: a short first block, so
     * that the full blocks after it are whole cache lines (the lane-wise
     * arithmetic does not depend on where a block starts) */
    int64_t head = nt ? (int64_t)((64 - ((uintptr_t)out & 63)) & 63) / 4 : 0;
#else
    const bool nt = false;
    int64_t head = 0;
    (void)stream;
#endif
    for (int64_t j = 0; j < V;) {
        const int64_t left = head ? head : V - j;
        const int m = left < 16 ? (int)left : 16;
        head = 0;
        LPE_UNROLL
        for (int q = 0; q < LPE_PARTS; q++) {
            const int mq = m - q * LPE_W;
            if (mq <= 0) break;
            const hv z = hload(x + (j + q * LPE_W) * xs, xs, mq, -INFINITY);
            const hv d = (((z - M) * it - l_hi) - l_lo); /* x - lse */
            hi keep;
            const hv p = hexp(d, &keep);
            const hv g = p * (a + b * ((hv)((hi)d & keep) + H));
            float *o = out + j + q * LPE_W;
            if (m == 16 && nt) hstream(o, g);
            else if (mq >= LPE_W) memcpy(o, &g, sizeof g);
            else
                for (int l = 0; l < mq; l++) o[l] = g[l];
        }
        j += m;
    }
#ifdef LPE_DISPATCH
    if (nt) _mm_sfence(); /* the row's streamed stores are visible before anyone reads them */
#endif
}

/* The variant's entry points: the row kernels with a unit stride known at
 * compile time, or any stride. */
LPE_ATTR static row_out LPE_NAME(lpe_fwd)(const float *x, int64_t xs, int64_t V, float it) {
    return xs == 1 ? fwd_row(x, 1, V, it) : fwd_row(x, xs, V, it);
}

LPE_ATTR static void LPE_NAME(lpe_bwd)(const float *x, int64_t xs, int64_t V, float it, float M,
                                       double ls, float H, float glp, float gH, float *out,
                                       bool stream) {
    if (xs == 1) bwd_row(x, 1, V, it, M, ls, H, glp, gH, out, stream);
    else bwd_row(x, xs, V, it, M, ls, H, glp, gH, out, stream);
}

#undef hv
#undef hi
#undef hsplat
#undef hload
#undef hexp
#undef hsum16
#undef hstream
#undef fwd_row
#undef bwd_row
#undef LPE_PARTS
#undef LPE_INLINE
#undef LPE_UNROLL
