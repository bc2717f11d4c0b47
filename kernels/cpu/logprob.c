/* kernels/cpu/logprob.c - fused log-prob / entropy forward and backward.
 *
 * Forward reads each row once: blocks of LPE_BLOCK entries are loaded into L1,
 * their max found, the running (max M, S = sum exp(x - M), T = sum exp(x - M)
 * * (x - M)) rescaled when the max grows, then the block's exponentials added
 * (f32 exponentials summed in f64, so V = 262144 keeps ~1e-7 relative
 * accuracy). lse = M / T + log S, entropy = log S - A / S with
 * A = sum exp(d) * d, the max M taken on the raw logits and d = (z - M) / T.
 * Backward reads each row once and writes its gradient.
 *
 * f32 uses a Cephes-style single-precision exponential on 16-float vectors
 * (magic-number rounding, degree-6 polynomial, 2^n built in the exponent
 * bits); arguments are always <= 0 here (x - max).
 * Measured against exp() in double over [-87, 0] in 2e6 steps: max relative
 * error 8.2e-8 (about 1.4 ulp); tests/test_logprob.c keeps it under 3e-7.
 * Below -87 it returns 0 (the true value is < 1.7e-38). The row functions
 * are compiled for AVX-512, AVX2+FMA and baseline x86-64 and picked at run
 * time (this file is compiled with FMA contraction). f64 uses libm's exp. */
#include "cpu.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LPE_BLOCK 1024

/* Instruction sets the row kernels are compiled for (x86-64 with GCC or
 * Clang): AVX-512, AVX2+FMA, and the baseline; picked once at run time. */
#if defined(__x86_64__) && defined(__GNUC__)
#define LPE_DISPATCH 1
#define LPE_T512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define LPE_T256 __attribute__((target("avx2,fma")))
#include <immintrin.h> /* _mm_stream_ps, _mm_sfence: SSE, every x86-64 */
#endif



/* ---- the f32 row kernels, one copy per instruction set ------------------------
 * kernels/cpu/logprob_rows.h computes on 16 lanes in registers of the
 * hardware's width (one zmm on AVX-512, two ymm on AVX2, four xmm on SSE2),
 * the same lane-wise arithmetic whatever the width: AVX-512 and AVX2 agree to
 * the bit. The SSE2 baseline has no fused multiply-add (each product is
 * rounded before the sum), so its results can differ in the last bit
 * (tests/test_logprob.c, every_cpu_variant_and_store_mode_agrees). */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#define VINLINE static inline __attribute__((always_inline))

typedef struct {
    double M;    /* max of the raw row z (before scaling by 1/T) */
    double ls;   /* log sum exp((z - M) / T): lse = M / T + ls */
    double H;
    int bad;     /* 1: NaN or +inf present; 2: all -inf */
} row_out;

/* Rows of at least this many entries are written with non-temporal stores
 * (x86-64) when the variant streams: the gradient is not read again soon, so
 * its cache lines are not fetched before being overwritten (no
 * read-for-ownership), and they do not evict the logits the next rows read.
 * Measured in bench/README.md. */
#define LPE_NT_MIN 4096

/* A block whose max bm is above the running max M: the running sums S =
 * sum exp(d) and A = sum exp(d) d, d = (x - M) it, rescaled from M to bm
 * (f32 and f64 rows alike, in f64). The caller then takes bm as its max. */
VINLINE void rescale_sums(double M, double bm, double it, double *S, double *A) {
    if (*S > 0.0) {
        const double dm = (M - bm) * it, f = exp(dm);
        *A = (*A + *S * dm) * f;
        *S *= f;
    }
}

/* The row's statistics from its max and sums; bad 2 when every entry is -inf. */
VINLINE row_out row_finish(double M, double S, double A) {
    row_out o = {-INFINITY, 0, 0, 2};
    if (M == -INFINITY)
        return o;
    o.M = M;
    o.ls = log(S);
    o.H = o.ls - A / S;
    o.bad = 0;
    return o;
}

#define LPE_SFX base
#define LPE_ATTR
#define LPE_W 4
#include "logprob_rows.h"
#undef LPE_SFX
#undef LPE_ATTR
#undef LPE_W

#ifdef LPE_DISPATCH
#define LPE_SFX avx2
#define LPE_ATTR LPE_T256
#define LPE_W 8
#include "logprob_rows.h"
#undef LPE_SFX
#undef LPE_ATTR
#undef LPE_W

#define LPE_SFX avx512
#define LPE_ATTR LPE_T512
#define LPE_W 16
#include "logprob_rows.h"
#undef LPE_SFX
#undef LPE_ATTR
#undef LPE_W
#endif

/* The kernels' exponential (the baseline's), one value at a time, for tests. */
float tg__cpu_exp_nonpos(float d) {
    lpe_hi_base keep;
    return lpe_hexp_base(d - (lpe_hv_base){0}, &keep)[0]; /* d in every lane, -0 kept */
}

typedef row_out (*fwd_fn)(const float *x, int64_t xs, int64_t V, float it);
typedef void (*bwd_fn)(const float *x, int64_t xs, int64_t V, float it, float M, double ls,
                       float H, float glp, float gH, float *out, bool stream);

/* The instruction sets, from the baseline up, and whether the backward
 * streams its gradient past the caches by default (non-temporal stores, rows
 * of LPE_NT_MIN entries or more): on with AVX-512, where it made the
 * backward 1.6-1.8x faster (bench/README.md); off with AVX2 and the
 * baseline: an AVX2-only CPU ran the old rows' backward 1.2x slower with
 * them, and the current rows are not measured on one yet. */
typedef struct lpe_variant {
    const char *name;
    fwd_fn fwd;
    bwd_fn bwd;
    bool stream;
} lpe_variant;

static const lpe_variant VARIANTS[] = {
    {"base", lpe_fwd_base, lpe_bwd_base, false},
#ifdef LPE_DISPATCH
    {"avx2", lpe_fwd_avx2, lpe_bwd_avx2, false},
    {"avx512", lpe_fwd_avx512, lpe_bwd_avx512, true},
#endif
};
#define N_VARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

/* The best variant this CPU runs (an index of VARIANTS). */
static int best_variant(void) {
#ifdef LPE_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 1;
#endif
    return 0;
}

/* What runs: the variant and the store mode, chosen once (the environment
 * read then) unless tg__cpu_lpe_select changes them; -1 until then. */
static _Atomic int g_variant = -1, g_stream = -1;

static void choose_once(void) {
    if (atomic_load(&g_variant) >= 0)
        return;
    int v = best_variant(), stream = VARIANTS[v].stream;
    const char *want = getenv("TAPEGRAD_CPU_KERNELS");
    for (int k = 0; want && k < v; k++) /* a lower instruction set only */
        if (!strcmp(want, VARIANTS[k].name)) {
            v = k;
            stream = VARIANTS[k].stream;
        }
    const char *st = getenv("TAPEGRAD_CPU_STREAM_STORES");
    if (st && (!strcmp(st, "on") || !strcmp(st, "off")))
        stream = !strcmp(st, "on");
#ifndef LPE_DISPATCH
    stream = 0; /* no non-temporal stores here */
#endif
    int unset = -1;
    if (atomic_compare_exchange_strong(&g_stream, &unset, stream))
        atomic_store(&g_variant, v); /* the variant last: it says both are set */
    else
        while (atomic_load(&g_variant) < 0) {} /* another thread is setting them */
}

static void pick(fwd_fn *f, bwd_fn *b, bool *stream) {
    choose_once();
    const lpe_variant *v = &VARIANTS[atomic_load(&g_variant)];
    *f = v->fwd;
    *b = v->bwd;
    *stream = atomic_load(&g_stream) != 0;
}

const char *tg__cpu_lpe_variant(void) {
    choose_once();
    return VARIANTS[atomic_load(&g_variant)].name;
}

bool tg__cpu_lpe_streams(void) {
    choose_once();
    return atomic_load(&g_stream) != 0;
}

bool tg__cpu_lpe_select(const char *name, int stream) {
    choose_once();
    int best = best_variant(), v = -1;
    for (int k = 0; k <= best && k < N_VARIANTS; k++)
        if (!strcmp(name, VARIANTS[k].name)) v = k;
    if (v < 0)
        return false;
#ifdef LPE_DISPATCH
    atomic_store(&g_stream, stream < 0 ? VARIANTS[v].stream : stream != 0);
#else
    (void)stream; /* no non-temporal stores here */
#endif
    atomic_store(&g_variant, v);
    return true;
}

/* ---- f64 rows (libm exp) --------------------------------------------------- */

static row_out fwd_row_f64(const double *x, int64_t xs, int64_t V, double it) {
    double M = -INFINITY, S = 0.0, T = 0.0;
    for (int64_t b0 = 0; b0 < V; b0 += LPE_BLOCK) {
        const int64_t n = V - b0 < LPE_BLOCK ? V - b0 : LPE_BLOCK;
        const double *xb = x + b0 * xs;
        double bm = -INFINITY;
        for (int64_t j = 0; j < n; j++) {
            const double v = xb[j * xs];
            if (!(v <= DBL_MAX))
                return (row_out){-INFINITY, 0, 0, 1};
            bm = v > bm ? v : bm;
        }
        if (bm == -INFINITY) continue;
        if (bm > M) {
            rescale_sums(M, bm, it, &S, &T);
            M = bm;
        }
        double bs = 0.0, bt = 0.0;
        for (int64_t j = 0; j < n; j++) {
            const double d = (xb[j * xs] - M) * it;
            const double e = exp(d);
            bs += e;
            bt += e == 0.0 ? 0.0 : e * d;
        }
        S += bs;
        T += bt;
    }
    return row_finish(M, S, T);
}

static void bwd_row_f64(const double *x, int64_t xs, int64_t V, double it, double M, double ls,
                        double H, double glp, double gH, double *out) {
    const double a = -glp * it, b = -gH * it;
    for (int64_t j = 0; j < V; j++) {
        const double d = (x[j * xs] - M) * it - ls;
        const double p = exp(d);
        out[j] = p == 0.0 ? 0.0 : a * p + b * p * (d + H);
    }
}

/* ---- drivers ------------------------------------------------------------------ */

static int64_t nrows(const tg__arr *z) { return tg__k_numel(z->ndim - 1, z->shape); }

static const char *row_ptr(const tg__arr *z, int64_t i) {
    return (const char *)z->data + (size_t)tg__k_offset_of(i, z->ndim - 1, z->shape, z->strides) *
                                       tg__k_dtype_size(z->dtype);
}

/* Value of a (leading-shape) gradient at row i, as double; 0 when absent. */
static double grad_at(const tg__arr *g, int64_t i) {
    if (!g || !g->data) return 0.0;
    int64_t off = tg__k_offset_of(i, g->ndim, g->shape, g->strides);
    return g->dtype == TG_F32 ? ((const float *)g->data)[off] : ((const double *)g->data)[off];
}

static void find_bad_entry(const tg__arr *z, int64_t row, double it, tg__lpe_bad *bad) {
    const int64_t V = z->shape[z->ndim - 1], xs = z->strides[z->ndim - 1];
    const char *p = row_ptr(z, row);
    bad->row = row;
    bad->col = -1;
    bad->value = -INFINITY;
    for (int64_t j = 0; j < V; j++) {
        double v = z->dtype == TG_F32 ? (double)((const float *)p)[j * xs] * it
                                      : ((const double *)p)[j * xs] * it;
        if (!(v <= DBL_MAX) || (z->dtype == TG_F32 && !(v <= FLT_MAX))) {
            bad->col = j;
            bad->value = v;
            return;
        }
    }
}

tg_status tg__cpu_lpe_forward(const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,
                              int64_t chunk, void *lp, void *H, double *stats, int nstat,
                              tg__lpe_bad *bad) {
    const int64_t N = nrows(z), V = z->shape[z->ndim - 1], xs = z->strides[z->ndim - 1];
    const bool f32 = z->dtype == TG_F32;
    if (chunk <= 0 || chunk > N) chunk = N > 0 ? N : 1;
    fwd_fn fwd32;
    bwd_fn bwd32;
    bool stream;
    pick(&fwd32, &bwd32, &stream); /* the instruction set's row kernels, once per call */
    int64_t first_bad = N;
    for (int64_t c0 = 0; c0 < N; c0 += chunk) {
        const int64_t c1 = c0 + chunk < N ? c0 + chunk : N;
        #pragma omp parallel for schedule(dynamic, 4) reduction(min : first_bad) if (c1 - c0 > 1 && V >= 1024)
        for (int64_t i = c0; i < c1; i++) {
            row_out o = {0, 0, 0, 0};
            double zy = 0.0;
            const bool has_y = y[i] >= 0 && y[i] < V; /* else no target term (a vocab block) */
            if (y[i] != ignore) {
                const char *p = row_ptr(z, i);
                if (f32) {
                    o = fwd32((const float *)p, xs, V, (float)inv_t);
                    if (has_y) zy = ((const float *)p)[y[i] * xs];
                } else {
                    o = fwd_row_f64((const double *)p, xs, V, inv_t);
                    if (has_y) zy = ((const double *)p)[y[i] * xs];
                }
                if (o.bad) {
                    if (i < first_bad) first_bad = i;
                    continue;
                }
            }
            /* -inf at the target gives -inf; (z_y - M) is exact for f32 z in double */
            const double lpi = y[i] == ignore || !has_y ? 0.0 : (zy - o.M) * inv_t - o.ls;
            if (f32) {
                ((float *)lp)[i] = (float)lpi;
                if (H) ((float *)H)[i] = (float)o.H;
            } else {
                ((double *)lp)[i] = lpi;
                if (H) ((double *)H)[i] = o.H;
            }
            if (stats) {
                stats[i * nstat] = o.M;
                stats[i * nstat + 1] = o.ls;
                if (nstat == 3) stats[i * nstat + 2] = o.H;
            }
        }
        if (first_bad < N) break;
    }
    bad->row = -1;
    bad->col = -1;
    bad->value = 0.0;
    if (first_bad < N) find_bad_entry(z, first_bad, inv_t, bad);
    return TG_OK;
}

tg_status tg__cpu_lpe_check_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                                 double inv_t, tg__lpe_bad *bad) {
    const int64_t N = nrows(z), V = z->shape[z->ndim - 1], xs = z->strides[z->ndim - 1];
    int64_t first_bad = N;
    #pragma omp parallel for schedule(dynamic, 4) reduction(min : first_bad) if (N > 1 && V >= 1024)
    for (int64_t i = 0; i < N; i++) {
        if (y[i] == ignore) continue;
        const char *p = row_ptr(z, i);
        int nbad = 0, nfinite = 0;
        for (int64_t j = 0; j < V; j++) {
            const double v = z->dtype == TG_F32 ? (double)((const float *)p)[j * xs] * inv_t
                                                : ((const double *)p)[j * xs] * inv_t;
            nbad += !(v <= (z->dtype == TG_F32 ? FLT_MAX : DBL_MAX));
            nfinite += v > -INFINITY;
        }
        if ((nbad || !nfinite) && i < first_bad) first_bad = i;
    }
    bad->row = -1;
    bad->col = -1;
    bad->value = 0.0;
    if (first_bad < N) find_bad_entry(z, first_bad, inv_t, bad);
    return TG_OK;
}

tg_status tg__cpu_lpe_backward(const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,
                               int64_t chunk, const double *stats, int nstat,
                               const tg__arr *g_lp, const tg__arr *g_H, const tg__arr *g_lse,
                               void *dz, int dz_dtype) {
    (void)dz_dtype; /* z's: the CPU has no bf16 kernels (lpe_bf16 false) */
    const int64_t N = nrows(z), V = z->shape[z->ndim - 1], xs = z->strides[z->ndim - 1];
    const bool f32 = z->dtype == TG_F32;
    char *out = dz; // (N, V)
    const size_t es = tg__k_dtype_size(z->dtype);
    if (chunk <= 0 || chunk > N) chunk = N > 0 ? N : 1;
    fwd_fn fwd32;
    bwd_fn bwd32;
    bool stream;
    pick(&fwd32, &bwd32, &stream);
    for (int64_t c0 = 0; c0 < N; c0 += chunk) {
        const int64_t c1 = c0 + chunk < N ? c0 + chunk : N;
        #pragma omp parallel for schedule(dynamic, 4) if (c1 - c0 > 1 && V >= 1024)
        for (int64_t i = c0; i < c1; i++) {
            char *o = out + (size_t)(i * V) * es;
            if (y[i] == ignore) {
                memset(o, 0, (size_t)V * es);
                continue;
            }
            const double glp = grad_at(g_lp, i), gH = nstat == 3 ? grad_at(g_H, i) : 0.0;
            /* the p term's coefficient: -g_lp, plus g_lse when the log-sum-exp is used */
            const double gp = glp - grad_at(g_lse, i);
            const double M = stats[i * nstat], ls = stats[i * nstat + 1];
            const double H = nstat == 3 ? stats[i * nstat + 2] : 0.0;
            const char *p = row_ptr(z, i);
            if (f32) {
                bwd32((const float *)p, xs, V, (float)inv_t, (float)M, ls, (float)H,
                      (float)gp, (float)gH, (float *)o, stream);
                if (y[i] >= 0 && y[i] < V) ((float *)o)[y[i]] += (float)(glp * inv_t);
            } else {
                bwd_row_f64((const double *)p, xs, V, inv_t, M, ls, H, gp, gH, (double *)o);
                if (y[i] >= 0 && y[i] < V) ((double *)o)[y[i]] += glp * inv_t;
            }
        }
    }
    return TG_OK;
}
