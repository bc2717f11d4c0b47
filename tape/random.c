/* tape/random.c - seeded random tensors that are the same on every IEEE-754
 * machine: xoshiro256** seeded by splitmix64, uniform doubles from the top 53
 * bits, normals by Marsaglia's polar method with a logarithm computed in plain
 * double arithmetic (this file is compiled without FMA contraction) instead of
 * libm, whose last bits differ between implementations. */
#include <math.h>
#include <string.h>

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"

typedef struct {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* uniform in [0, 1) */
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Natural logarithm of x > 0 to about 1 ulp, in plain arithmetic:
 * x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(f) with
 * f = (m-1)/(m+1), |f| <= 0.1716, summed as 2 f (1 + f^2/3 + f^4/5 + ...)
 * up to f^24 (the next term is below 2e-20 of the result), by Horner's rule
 * with the coefficients 1/(2k+1) as constants. */
static double det_log(double x) {
    static const double c[] = {1.0 / 25, 1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15,
                               1.0 / 13, 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
    /* frexp for a normal x > 0, by its bits (exact; x here is >= 2^-104) */
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1022;
    bits = (bits & 0x000fffffffffffffULL) | 0x3fe0000000000000ULL;
    double m;
    memcpy(&m, &bits, sizeof m); /* in [0.5, 1) */
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e--;
    }
    const double f = (m - 1.0) / (m + 1.0), f2 = f * f;
    double p = c[0];
    for (int k = 1; k < (int)(sizeof c / sizeof c[0]); k++) p = p * f2 + c[k];
    const double logm = 2.0 * f + 2.0 * f * (f2 * p);
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    return ((double)e * ln2_lo + logm) + (double)e * ln2_hi;
}

static tg_tensor *random_tensor(tg_site s, const char *who, tg_dtype dt, int ndim,
                                const int64_t *shape, uint64_t seed, bool normal, double a,
                                double b) {
    if (!tg__is_float(dt))
        return tg__fail(TG_ERR_DTYPE, "%s: needs f32 or f64, got %s", who, tg_dtype_name(dt));
    if (!isfinite(a) || !isfinite(b) || (normal ? b < 0 : b < a))
        return tg__fail(TG_ERR_VALUE, "%s: invalid parameters (%g, %g)", who, a, b);
    tg_tensor *t = tg__tensor_new(s, who, dt, ndim, shape, tg__creation_category());
    if (!t) return NULL;
    rng r;
    rng_seed(&r, seed);
    int64_t n = tg__k_numel(ndim, t->shape);
    for (int64_t i = 0; i < n;) {
        double v[2];
        int nv = 1;
        if (normal) {
            double u, w, q;
            do {
                u = 2.0 * rng_uniform(&r) - 1.0;
                w = 2.0 * rng_uniform(&r) - 1.0;
                q = u * u + w * w;
            } while (q >= 1.0 || q == 0.0);
            double f = sqrt(-2.0 * det_log(q) / q);
            v[0] = a + b * (u * f);
            v[1] = a + b * (w * f);
            nv = 2;
        } else {
            v[0] = a + (b - a) * rng_uniform(&r);
        }
        for (int j = 0; j < nv && i < n; j++, i++) {
            if (dt == TG_F32) ((float *)t->storage->data)[i] = (float)v[j];
            else ((double *)t->storage->data)[i] = v[j];
        }
    }
    return t;
}

tg_tensor *tg_randn_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed,
                       double mean, double std) {
    return tg__ret(random_tensor(s, "tg_randn", dt, ndim, shape, seed, true, mean, std));
}

tg_tensor *tg_rand_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed,
                      double lo, double hi) {
    return tg__ret(random_tensor(s, "tg_rand", dt, ndim, shape, seed, false, lo, hi));
}

/* Uniform in [0, span) without bias: the top of the range that would wrap
 * unevenly is rejected (Lemire's threshold). span >= 1. */
static uint64_t rng_below(rng *r, uint64_t span) {
    uint64_t threshold = (0 - span) % span; /* 2^64 mod span */
    for (;;) {
        uint64_t x = rng_next(r);
        if (x >= threshold) return x % span;
    }
}

tg_tensor *tg_randint_at(tg_site s, int ndim, const int64_t *shape, uint64_t seed, int64_t low,
                         int64_t high) {
    const char *who = "tg_randint";
    if (low >= high)
        return tg__fail(TG_ERR_VALUE, "%s: empty range [%lld, %lld) (need low < high)", who,
                        (long long)low, (long long)high);
    tg_tensor *t = tg__tensor_new(s, who, TG_I64, ndim, shape, tg__creation_category());
    if (!t) return NULL;
    rng r;
    rng_seed(&r, seed);
    const uint64_t span = (uint64_t)high - (uint64_t)low; /* exact modulo 2^64 */
    int64_t *y = t->storage->data, n = tg__k_numel(ndim, t->shape); // (n)
    for (int64_t i = 0; i < n; i++) y[i] = (int64_t)((uint64_t)low + rng_below(&r, span));
    return tg__ret(t);
}
