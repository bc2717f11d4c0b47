/* tests/registry/rows_elementwise.c - the registry rows of the elementwise
 * ops: unary (with their double references, smooth ranges and PyTorch's
 * gradients at the kinks), binary arithmetic, where, comparisons and logic,
 * integer division, masked_fill, clamp with tensor bounds, nan_to_num. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "rows.h"

#define P(k) (a->fv[k])

/* ---- apply functions by shape of call ------------------------------------------------ */

#define UNARY0(fn)                                                                              \
    static tg_status ap_##fn(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,       \
                             tg_tensor **out) {                                                 \
        (void)op, (void)a;                                                                      \
        out[0] = fn(in[0]);                                                                     \
        return out[0] ? TG_OK : tg_last_status();                                               \
    }

UNARY0(tg_neg)
UNARY0(tg_exp)
UNARY0(tg_log)
UNARY0(tg_sqrt)
UNARY0(tg_rsqrt)
UNARY0(tg_abs)
UNARY0(tg_sign)
UNARY0(tg_square)
UNARY0(tg_log1p)
UNARY0(tg_expm1)
UNARY0(tg_sigmoid)
UNARY0(tg_logsigmoid)
UNARY0(tg_tanh)
UNARY0(tg_relu)
UNARY0(tg_silu)
UNARY0(tg_reciprocal)
UNARY0(tg_floor)
UNARY0(tg_ceil)
UNARY0(tg_round)
UNARY0(tg_logical_not)
UNARY0(tg_isnan)
UNARY0(tg_isinf)
UNARY0(tg_isfinite)
CALL(scale, tg_scale(in[0], P(0)))
CALL(add_scalar, tg_add_scalar(in[0], P(0)))
CALL(clamp, tg_clamp(in[0], P(0), P(1)))
CALL(pow_scalar, tg_pow_scalar(in[0], P(0)))
CALL(softplus, tg_softplus(in[0], P(0), P(1)))
CALL(gelu, tg_gelu(in[0], (tg_gelu_approx)PI(0)))
CALL(add, tg_add(in[0], in[1]))
CALL(sub, tg_sub(in[0], in[1]))
CALL(mul, tg_mul(in[0], in[1]))
CALL(div, tg_div(in[0], in[1]))
CALL(maximum, tg_maximum(in[0], in[1]))
CALL(minimum, tg_minimum(in[0], in[1]))
CALL(pow, tg_pow(in[0], in[1]))
CALL(xlogy, tg_xlogy(in[0], in[1]))
CALL(where, tg_where(in[0], in[1], in[2]))
CALL(eq, tg_eq(in[0], in[1]))
CALL(ne, tg_ne(in[0], in[1]))
CALL(lt, tg_lt(in[0], in[1]))
CALL(le, tg_le(in[0], in[1]))
CALL(gt, tg_gt(in[0], in[1]))
CALL(ge, tg_ge(in[0], in[1]))
CALL(eq_scalar, tg_eq_scalar(in[0], P(0)))
CALL(ne_scalar, tg_ne_scalar(in[0], P(0)))
CALL(lt_scalar, tg_lt_scalar(in[0], P(0)))
CALL(le_scalar, tg_le_scalar(in[0], P(0)))
CALL(gt_scalar, tg_gt_scalar(in[0], P(0)))
CALL(ge_scalar, tg_ge_scalar(in[0], P(0)))
CALL(logical_and, tg_logical_and(in[0], in[1]))
CALL(logical_or, tg_logical_or(in[0], in[1]))
CALL(logical_xor, tg_logical_xor(in[0], in[1]))
CALL(remainder, tg_remainder(in[0], in[1]))
CALL(floor_divide, tg_floor_divide(in[0], in[1]))
CALL(masked_fill, tg_masked_fill(in[0], in[1], P(0)))
CALL(clamp_tensor, tg_clamp_tensor(in[0], in[1], in[2]))
CALL(nan_to_num, tg_nan_to_num(in[0], P(0), P(1), P(2)))

/* ---- references in double -------------------------------------------------------------- */

static double r_neg(double x, const tgr_args *a) { return (void)a, -x; }
static double r_exp(double x, const tgr_args *a) { return (void)a, exp(x); }
static double r_log(double x, const tgr_args *a) { return (void)a, log(x); }
static double r_sqrt(double x, const tgr_args *a) { return (void)a, sqrt(x); }
static double r_rsqrt(double x, const tgr_args *a) { return (void)a, 1 / sqrt(x); }
static double r_abs(double x, const tgr_args *a) { return (void)a, fabs(x); }
static double r_sign(double x, const tgr_args *a) { /* NaN: 0, as PyTorch */
    return (void)a, x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}
static double r_square(double x, const tgr_args *a) { return (void)a, x * x; }
static double r_log1p(double x, const tgr_args *a) { return (void)a, log1p(x); }
static double r_expm1(double x, const tgr_args *a) { return (void)a, expm1(x); }
static double r_sigmoid(double x, const tgr_args *a) { return (void)a, 1 / (1 + exp(-x)); }
static double r_logsigmoid(double x, const tgr_args *a) { /* +0 at +inf, as PyTorch */
    return (void)a, (x < 0 ? x : 0.0) - log1p(exp(-fabs(x)));
}
static double r_tanh(double x, const tgr_args *a) { return (void)a, tanh(x); }
static double r_relu(double x, const tgr_args *a) { return (void)a, x < 0 ? 0 : x; }
static double r_silu(double x, const tgr_args *a) { return (void)a, x / (1 + exp(-x)); }
static double r_reciprocal(double x, const tgr_args *a) { return (void)a, 1 / x; }
static double r_floor(double x, const tgr_args *a) { return (void)a, floor(x); }
static double r_ceil(double x, const tgr_args *a) { return (void)a, ceil(x); }
static double r_round(double x, const tgr_args *a) { return (void)a, nearbyint(x); }
static double r_scale(double x, const tgr_args *a) { return x * P(0); }
static double r_adds(double x, const tgr_args *a) { return x + P(0); }
static double r_clamp(double x, const tgr_args *a) { /* min(max(x, lo), hi) */
    if (isnan(P(0)) || isnan(P(1))) return NAN;
    double t = x < P(0) ? P(0) : x;
    return t > P(1) ? P(1) : t;
}
static double r_pow_scalar(double x, const tgr_args *a) { /* PyTorch's exact forms first */
    const double e = P(0);
    if (e == 2) return x * x;
    if (e == 3) return x * x * x;
    if (e == -1) return 1 / x;
    if (e == -2) return 1 / (x * x);
    if (e == 0.5) return sqrt(x);
    if (e == -0.5) return 1 / sqrt(x);
    return pow(x, e);
}
static double r_softplus(double x, const tgr_args *a) {
    return x * P(0) > P(1) ? x : log1p(exp(x * P(0))) / P(0);
}
static double r_gelu(double x, const tgr_args *a) {
    if (PI(0) == TG_GELU_TANH)
        return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    return 0.5 * x * erfc(-x * 0.70710678118654752440); /* x Phi(x), through erfc */
}

/* gelu: the unary samples with the erf form, and with the tanh approximation; an
 * unknown approximation refused */
static void s_gelu(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    tgr_samples_unary(op, dt, out);
    const int n = out->n;
    tgr_args a = tgr_args0(dt);
    a.iv[0] = TG_GELU_TANH;
    for (int i = 0; i < n; i++) { /* each sample again with tanh */
        const tgr_sample *s = &out->s[i];
        if (s->flags & TGR_S_BAD) continue;
        char what[48];
        snprintf(what, sizeof what, "%.36s, tanh", s->what);
        tgr_sample *t = tgr_add(out, what, s->flags, &a, 1, tg_retain(out->s[i].in[0]));
        if (t) t->batch = out->s[i].batch;
    }
    a.iv[0] = 2;
    tgr_sample *b = tgr_add(out, "approximate 2", TGR_S_BAD, &a, 1,
                            tgr_rand(dt, 1, (int64_t[]){3}, 77, -1, 1));
    if (b) b->want = TG_ERR_VALUE;
}

/* ---- masked_fill and where: their own samples ------------------------------------------ */

static void s_where(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    const int64_t c23[2] = {2, 3}, c3[1] = {3}, c231[3] = {2, 3, 1}, c234[3] = {2, 3, 4};
    tg_tensor *b = tgr_rand(TG_BOOL, 2, c23, 1, 0, 2);
    tgr_add(out, "bool cond", TGR_S_SMOOTH, &a, 3, b, tgr_rand(dt, 2, c23, 2, -2, 2),
            tgr_rand(dt, 2, c23, 3, -2, 2))->batch = 7;
    tgr_add(out, "float cond broadcast", TGR_S_SMOOTH | TGR_S_BCAST, &a, 3,
            tgr_rand(TG_BOOL, 1, c3, 4, 0, 2), tgr_rand(dt, 2, c23, 5, -2, 2),
            tgr_rand(dt, 1, c3, 6, -2, 2));
    tgr_add(out, "lead 2 cond (2, 3, 1)", TGR_S_SMOOTH | TGR_S_BCAST, &a, 3,
            tgr_rand(TG_BOOL, 3, c231, 7, 0, 2), tgr_rand(dt, 3, c234, 8, -2, 2),
            tgr_rand(dt, 0, NULL, 9, -2, 2))->batch = 3;
    tgr_add(out, "strided", TGR_S_SMOOTH | TGR_S_STRIDED, &a, 3,
            tgr_strided(tgr_rand(TG_F64, 2, c23, 10, 0, 2)), tgr_strided(tgr_rand(dt, 2, c23, 11, -2, 2)),
            tgr_strided(tgr_rand(dt, 2, c23, 12, -2, 2)))->batch = 7;
    tgr_add(out, "0-d other branch of another float", TGR_S_DTYPES | TGR_S_BCAST, &a, 3,
            tgr_rand(TG_BOOL, 2, c23, 13, 0, 2), tgr_rand(dt, 2, c23, 14, -2, 2),
            tgr_rand(dt == TG_F32 ? TG_F64 : TG_F32, 0, NULL, 15, -2, 2));
    tgr_add(out, "i64 and float branches", TGR_S_DTYPES, &a, 3, tgr_rand(TG_BOOL, 2, c23, 16, 0, 2),
            tgr_rand(TG_I64, 2, c23, 17, -3, 4), tgr_rand(dt, 2, c23, 18, -2, 2));
    tgr_add(out, "bool branches", TGR_S_DTYPES, &a, 3, tgr_rand(TG_BOOL, 2, c23, 19, 0, 2),
            tgr_rand(TG_BOOL, 2, c23, 20, 0, 2), tgr_rand(TG_BOOL, 1, c3, 21, 0, 2));
    tgr_add(out, "empty", TGR_S_EMPTY, &a, 3, tgr_rand(TG_BOOL, 2, (int64_t[]){0, 3}, 22, 0, 2),
            tgr_rand(dt, 1, c3, 23, -2, 2), tgr_rand(dt, 1, c3, 24, -2, 2));
    tgr_sample *s = tgr_add(out, "cond that does not broadcast", TGR_S_BAD, &a, 3,
                            tgr_rand(TG_BOOL, 1, (int64_t[]){4}, 25, 0, 2),
                            tgr_rand(dt, 2, c23, 26, -2, 2), tgr_rand(dt, 2, c23, 27, -2, 2));
    if (s) s->want = TG_ERR_SHAPE;
}

static void s_masked_fill(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
    const int64_t c34[2] = {3, 4}, c4[1] = {4}, c234[3] = {2, 3, 4}, c31[2] = {3, 1};
    a.fv[0] = -1.5;
    tgr_add(out, "bool mask", TGR_S_SMOOTH, &a, 2, tgr_rand(dt, 2, c34, 1, -2, 2),
            tgr_rand(TG_BOOL, 2, c34, 2, 0, 2))->batch = 3;
    tgr_add(out, "row mask broadcast", TGR_S_SMOOTH | TGR_S_BCAST, &a, 2,
            tgr_rand(dt, 2, c34, 3, -2, 2), tgr_rand(TG_BOOL, 1, c4, 4, 0, 2))->batch = 1;
    tgr_add(out, "lead 2, f64 mask", TGR_S_SMOOTH | TGR_S_BCAST, &a, 2,
            tgr_rand(dt, 3, c234, 5, -2, 2), tgr_rand(TG_I64, 2, c31, 6, 0, 2))->batch = 1;
    a.fv[0] = -INFINITY;
    tgr_add(out, "-inf, strided", TGR_S_STRIDED, &a, 2, tgr_strided(tgr_rand(dt, 2, c34, 7, -2, 2)),
            tgr_strided(tgr_rand(TG_BOOL, 2, c34, 8, 0, 2)))->batch = 3;
    tgr_add(out, "empty, mask broadcast", TGR_S_BCAST, &a, 2,
            tgr_rand(dt, 2, (int64_t[]){0, 4}, 11, -2, 2), tgr_rand(TG_BOOL, 1, c4, 12, 0, 2));
    tgr_sample *s = tgr_add(out, "mask that widens the input", TGR_S_BAD, &a, 2,
                            tgr_rand(dt, 1, c4, 9, -2, 2), tgr_rand(TG_BOOL, 2, c34, 10, 0, 2));
    if (s) s->want = TG_ERR_SHAPE;
}

/* scalar comparisons: a float, an i64 and a bool t against whole, fractional
 * and special numbers */
static void s_cmp_scalar(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    static const double vs[] = {1.0, 0.5, -2.0, NAN, INFINITY};
    const int64_t c34[2] = {3, 4};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        tgr_args a = tgr_args0(dt);
        a.fv[0] = vs[i];
        char what[48];
        snprintf(what, sizeof what, "float ties vs %g", vs[i]);
        tgr_add(out, what, 0, &a, 1, tgr_ties(dt, 2, c34, 1 + i))->batch = 1;
        snprintf(what, sizeof what, "i64 vs %g", vs[i]);
        tgr_add(out, what, TGR_S_DTYPES, &a, 1, tgr_ties(TG_I64, 2, c34, 11 + i))->batch = 1;
        snprintf(what, sizeof what, "bool vs %g", vs[i]);
        tgr_add(out, what, TGR_S_DTYPES, &a, 1, tgr_rand(TG_BOOL, 2, c34, 21 + i, 0, 2));
    }
    tgr_args a = tgr_args0(dt);
    tgr_add(out, "specials vs 0", TGR_S_SPECIAL, &a, 1, tgr_specials(dt, 2, (int64_t[]){3, 3}));
    tgr_add(out, "empty", 0, &a, 1, tgr_rand(dt, 2, (int64_t[]){2, 0}, 31, -2, 2));
}

/* i64 dividends and non-zero divisors, broadcast; a zero divisor is refused */
/* remainder and floor_divide: binary's float samples (positive operands away
 * from the jumps at whole quotients), divisors 0, +-inf and NaN, and on i64
 * signs, extremes (INT64_MIN // -1 wraps), a strided dividend, a zero divisor
 * refused. */
static void s_intdiv(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    tgr_samples_binary(op, dt, out);
    tgr_args a = tgr_args0(dt);
    tgr_add(out, "special divisors", TGR_S_SPECIAL, &a, 2,
            tgr_rand(dt, 2, (int64_t[]){3, 3}, 7, -3, 3), tgr_specials(dt, 2, (int64_t[]){3, 3}));
    tgr_add(out, "negative operands", TGR_S_SMOOTH, &a, 2,
            tgr_rand(dt, 2, (int64_t[]){3, 4}, 8, -3.3, -0.3),
            tgr_rand(dt, 1, (int64_t[]){4}, 9, 0.7, 1.9))->batch = 1;
    const int64_t c34[2] = {3, 4}, c4[1] = {4};
    const int64_t dv[4] = {-3, -2, 2, 5};
    tgr_add(out, "signs", TGR_S_DTYPES, &a, 2, tgr_rand(TG_I64, 2, c34, 1, -9, 10),
            tg_from_data(TG_I64, 1, c4, dv))->batch = 1;
    const int64_t ext[8] = {INT64_MAX, INT64_MIN, -7, 0, 7, -1, 1, INT64_MIN + 1};
    const int64_t ediv[8] = {3, 7, 2, -5, -3, 4, 9, -2};
    tgr_add(out, "extremes", TGR_S_DTYPES, &a, 2, tg_from_data(TG_I64, 1, (int64_t[]){8}, ext),
            tg_from_data(TG_I64, 1, (int64_t[]){8}, ediv));
    tgr_add(out, "strided", TGR_S_DTYPES | TGR_S_STRIDED, &a, 2,
            tgr_strided(tgr_rand(TG_I64, 2, c34, 2, -9, 10)), tgr_rand(TG_I64, 0, NULL, 3, 1, 4));
    tgr_sample *s = tgr_add(out, "zero divisor", TGR_S_BAD, &a, 2, tgr_rand(TG_I64, 1, c4, 4, 1, 9),
                            tg_zeros(TG_I64, 1, c4));
    if (s) s->want = TG_ERR_VALUE;
}

/* ---- clamp with tensor bounds, nan_to_num ----------------------------------------------- */

/* A sample (t, min, max) with either bound absent (NULL). */
static tgr_sample *clamp_add(tgr_samples *out, const char *what, unsigned flags, tg_tensor *t,
                             tg_tensor *lo, tg_tensor *hi) {
    tgr_args a = tgr_args0(TG_F64);
    tgr_sample *s = lo && hi ? tgr_add(out, what, flags, &a, 3, t, lo, hi)
                    : lo     ? tgr_add(out, what, flags, &a, 2, t, lo)
                             : tgr_add(out, what, flags, &a, 2, t, hi);
    if (s && !(lo && hi)) {
        s->nin = 3;
        s->in[2] = lo ? NULL : s->in[1];
        s->in[1] = lo ? s->in[1] : NULL;
    }
    return s;
}

/* t, min and max of 0-3 leading dims, broadcast, min > max, one bound, strided,
 * ties (PyTorch's gradient at t == min, t == max and min == max), NaN and inf
 * in each operand, empty, promoted dtypes (another float, i64, bool); no bound,
 * bool with both and shapes that do not broadcast refused. */
static void s_clamp_tensor(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    const tg_dtype other = dt == TG_F32 ? TG_F64 : TG_F32;
#define SHP(...) ((const int64_t[]){__VA_ARGS__})
#define T(nd, shape, seed, lo, hi) tgr_rand(dt, nd, nd ? SHP shape : NULL, seed, lo, hi)
    tgr_sample *s;
    s = clamp_add(out, "same shape", TGR_S_SMOOTH, T(2, (2, 3), 1, -2, 2), T(2, (2, 3), 2, -1, 0),
                  T(2, (2, 3), 3, 0, 1));
    if (s) s->batch = 7;
    clamp_add(out, "0-d", TGR_S_SMOOTH, T(0, (0), 4, -2, 2), T(0, (0), 5, -1, 0), T(0, (0), 6, 0, 1));
    clamp_add(out, "1-d, 0-d bounds", TGR_S_SMOOTH | TGR_S_BCAST, T(1, (6), 7, -2, 2),
              T(0, (0), 8, -1, 0), T(0, (0), 9, 0, 1));
    s = clamp_add(out, "lead 1, row bounds", TGR_S_SMOOTH | TGR_S_BCAST, T(2, (3, 5), 10, -2, 2),
                  T(1, (5), 11, -1, 0), T(2, (3, 5), 12, 0, 1));
    if (s) s->batch = 5;
    s = clamp_add(out, "lead 2, (4) and 0-d", TGR_S_SMOOTH | TGR_S_BCAST, T(3, (2, 3, 4), 13, -2, 2),
                  T(1, (4), 14, -1, 0), T(0, (0), 15, 0, 1));
    if (s) s->batch = 1;
    s = clamp_add(out, "lead 3, (3, 1) bounds", TGR_S_SMOOTH | TGR_S_BCAST,
                  T(4, (2, 2, 3, 2), 16, -2, 2), T(2, (3, 1), 17, -1, 0), T(2, (3, 1), 18, 0, 1));
    if (s) s->batch = 1;
    clamp_add(out, "bounds widen t", TGR_S_SMOOTH | TGR_S_BCAST, T(1, (4), 19, -2, 2),
              T(2, (3, 1), 20, -1, 0), T(2, (3, 4), 21, 0, 1));
    s = clamp_add(out, "min > max", TGR_S_SMOOTH, T(2, (3, 4), 22, -2, 2), T(2, (3, 4), 23, 0.5, 1),
                  T(2, (3, 4), 24, -1, -0.5));
    if (s) s->batch = 7;
    s = clamp_add(out, "min only", TGR_S_SMOOTH, T(2, (3, 4), 25, -2, 2), T(2, (3, 4), 26, -1, 1), NULL);
    if (s) s->batch = 3;
    s = clamp_add(out, "max only, broadcast", TGR_S_SMOOTH | TGR_S_BCAST, T(2, (3, 4), 27, -2, 2),
                  NULL, T(1, (4), 28, -1, 1));
    if (s) s->batch = 1;
    s = clamp_add(out, "strided", TGR_S_SMOOTH | TGR_S_STRIDED, tgr_strided(T(2, (3, 4), 29, -2, 2)),
                  tgr_strided(T(2, (3, 4), 30, -1, 0)), tgr_strided(T(2, (3, 4), 31, 0, 1)));
    if (s) s->batch = 7;
    s = clamp_add(out, "ties", 0, tgr_ties(dt, 2, SHP(4, 6), 32), tgr_ties(dt, 2, SHP(4, 6), 33),
                  tgr_ties(dt, 2, SHP(4, 6), 34));
    if (s) s->batch = 7;
    clamp_add(out, "ties, min only", 0, tgr_ties(dt, 2, SHP(4, 6), 35), tgr_ties(dt, 1, SHP(6), 36),
              NULL);
    clamp_add(out, "ties, max only", 0, tgr_ties(dt, 2, SHP(4, 6), 37), NULL,
              tgr_ties(dt, 1, SHP(6), 38));
    clamp_add(out, "specials in t", TGR_S_SPECIAL, tgr_specials(dt, 2, SHP(3, 3)),
              T(1, (3), 39, -1, 0), T(1, (3), 40, 0, 1));
    clamp_add(out, "specials in min", TGR_S_SPECIAL, T(2, (3, 3), 41, -2, 2),
              tgr_specials(dt, 2, SHP(3, 3)), T(0, (0), 42, 0, 1));
    clamp_add(out, "specials in max", TGR_S_SPECIAL, T(2, (3, 3), 43, -2, 2), NULL,
              tgr_specials(dt, 2, SHP(3, 3)));
    clamp_add(out, "empty", TGR_S_EMPTY | TGR_S_BCAST, T(2, (0, 3), 44, -2, 2), T(1, (3), 45, -1, 0),
              T(1, (3), 46, 0, 1));
    /* PyTorch's promotion: the result type of the three */
    clamp_add(out, "min of the other float", TGR_S_DTYPES, T(2, (3, 4), 47, -2, 2),
              tgr_rand(other, 2, SHP(3, 4), 48, -1, 0), T(0, (0), 49, 0, 1));
    clamp_add(out, "0-d bound of the other float", TGR_S_DTYPES | TGR_S_BCAST,
              T(2, (3, 4), 50, -2, 2), tgr_rand(other, 0, NULL, 51, -1, 0), NULL);
    clamp_add(out, "i64 bounds", TGR_S_DTYPES, T(2, (3, 4), 52, -3, 3),
              tgr_rand(TG_I64, 1, SHP(4), 53, -2, 0), tgr_rand(TG_I64, 0, NULL, 54, 1, 2));
    s = clamp_add(out, "i64", TGR_S_DTYPES, tgr_rand(TG_I64, 2, SHP(3, 4), 55, -5, 6),
                  tgr_rand(TG_I64, 2, SHP(3, 4), 56, -3, 0), tgr_rand(TG_I64, 2, SHP(3, 4), 57, 0, 3));
    if (s) s->batch = 7;
    clamp_add(out, "i64 with float bounds", TGR_S_DTYPES, tgr_rand(TG_I64, 2, SHP(3, 4), 58, -5, 6),
              T(1, (4), 59, -2, 0), NULL);
    clamp_add(out, "i64 with a bool min", TGR_S_DTYPES, tgr_rand(TG_I64, 2, SHP(3, 4), 60, -5, 6),
              tgr_rand(TG_BOOL, 0, NULL, 61, 0, 2), NULL);
    clamp_add(out, "bool, bool max", TGR_S_DTYPES, tgr_rand(TG_BOOL, 2, SHP(3, 4), 62, 0, 2), NULL,
              tgr_rand(TG_BOOL, 1, SHP(4), 63, 0, 2));
    clamp_add(out, "bool, i64 0-d min", TGR_S_DTYPES, tgr_rand(TG_BOOL, 2, SHP(3, 4), 64, 0, 2),
              tg_full(TG_I64, 0, NULL, 2), NULL);
    s = clamp_add(out, "no bound", TGR_S_BAD, T(2, (3, 4), 65, -2, 2), NULL, NULL);
    if (s) s->want = TG_ERR_VALUE;
    s = clamp_add(out, "bool with both bounds", TGR_S_BAD, tgr_rand(TG_BOOL, 2, SHP(3, 4), 66, 0, 2),
                  tgr_rand(TG_BOOL, 0, NULL, 67, 0, 2), tgr_rand(TG_BOOL, 0, NULL, 68, 0, 2));
    if (s) s->want = TG_ERR_DTYPE;
    s = clamp_add(out, "bounds that do not broadcast", TGR_S_BAD, T(2, (2, 3), 69, -2, 2),
                  T(1, (4), 70, -1, 0), NULL);
    if (s) s->want = TG_ERR_SHAPE;
#undef T
#undef SHP
}

static double r_nan_to_num(double x, const tgr_args *a) {
    const bool f32 = a->dtype == TG_F32;
    const double big = f32 ? FLT_MAX : DBL_MAX;
    double v = isnan(x) ? P(0) : x == INFINITY ? (isnan(P(1)) ? big : P(1))
               : x == -INFINITY ? (isnan(P(2)) ? -big : P(2)) : x;
    if (f32 && isfinite(v) && fabs(v) > FLT_MAX) /* as an f32 holds it */
        v = fabs(v) >= 0x1p128 - 0x1p103 ? copysign(INFINITY, v) : copysign(FLT_MAX, v);
    return v;
}

/* The unary samples with PyTorch's defaults, and specials with other numbers:
 * given, NaN kept, an f32 overflow (1e300 is inf in f32), tiny ones. */
static void s_nan_to_num(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    tgr_samples_unary(op, dt, out);
    static const double vals[3][3] = {
        {2.0, 1e30, -3.0}, {NAN, INFINITY, NAN}, {-1.5, 5.0, -1e-300}};
    static const char *const what[3] = {"specials, 2 1e30 -3", "strided specials, nan inf nan",
                                        "specials, -1.5 5 -1e-300"};
    for (int i = 0; i < 3; i++) {
        tgr_args a = tgr_args0(dt);
        for (int k = 0; k < 3; k++) a.fv[k] = vals[i][k];
        tgr_add(out, what[i], TGR_S_SPECIAL | (i == 1 ? TGR_S_STRIDED : 0u), &a, 1,
                i == 1 ? tgr_strided(tgr_specials(dt, 2, (const int64_t[]){3, 3}))
                       : tgr_specials(dt, 2, (const int64_t[]){3, 3}));
    }
}

/* ---- the rows -------------------------------------------------------------------------- */

#define F (1u << TG_F32 | 1u << TG_F64)
#define I64 (1u << TG_I64)
#define B (1u << TG_BOOL)

/* A unary float op: name, torch, params, ref, lo, hi, dtypes beyond float, kinks... */
#define UN(NAME, TORCH, PARAMS, REF, LO, HI, DT, SAVES, ...)                                   \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = 1,       \
     .nin_required = 1, .nout = 1, .diff = 1, .dtypes = DT, .apply = ap_tg_##NAME,            \
     .samples = tgr_samples_unary, .ref = REF, .lo = LO, .hi = HI, .saves = TGR_SAVES_##SAVES, \
     .nkinks = (int)(sizeof((const double[][2]){__VA_ARGS__}) / sizeof(double[2])),           \
     .kinks = {__VA_ARGS__}}
#define UNP(NAME, TORCH, PARAMS, REF, LO, HI, DT, SAVES, ...)                                  \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = PARAMS, .nin = 1,       \
     .nin_required = 1, .nout = 1, .diff = 1, .dtypes = DT, .apply = ap_##NAME,               \
     .samples = tgr_samples_unary, .ref = REF, .lo = LO, .hi = HI, .saves = TGR_SAVES_##SAVES, \
     .nkinks = (int)(sizeof((const double[][2]){__VA_ARGS__}) / sizeof(double[2])),           \
     .kinks = {__VA_ARGS__}}
#define BIN(NAME, TORCH, LO, HI)                                                               \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .nin = 2, .nin_required = 2,       \
     .nout = 1, .diff = 3, .dtypes = I64 | B, .apply = ap_##NAME,                              \
     .samples = tgr_samples_binary, .lo = LO, .hi = HI}
#define CMP(NAME, TORCH, SAMPLES)                                                              \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .nin = 2, .nin_required = 2,       \
     .nout = 1, .dtypes = I64 | B, .apply = ap_##NAME, .samples = SAMPLES}
#define CMPS(NAME, TORCH)                                                                      \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .params = "r:v", .nin = 1,         \
     .nin_required = 1, .nout = 1, .dtypes = I64 | B, .apply = ap_##NAME,                      \
     .samples = s_cmp_scalar}
#define PRED(NAME, TORCH)                                                                      \
    {.name = #NAME, .c_name = "tg_" #NAME, .torch = TORCH, .nin = 1, .nin_required = 1,       \
     .nout = 1, .dtypes = I64 | B, .apply = ap_tg_##NAME, .samples = tgr_samples_unary}

tgr_op TGR_ROWS_ELEMENTWISE[] = {
    UN(neg, "torch.neg(a)", "", r_neg, -3, 3, I64, NONE, {0, -1}),
    UN(exp, "torch.exp(a)", "", r_exp, -3, 3, I64 | B, OUTPUT, {0, 1}),
    UN(log, "torch.log(a)", "", r_log, 0.1, 4, I64 | B, INPUT, {0, INFINITY}),
    UN(sqrt, "torch.sqrt(a)", "", r_sqrt, 0.1, 4, I64 | B, OUTPUT, {0, INFINITY}),
    UNP(scale, "R.scale(a, k)", "r:k=-2", r_scale, -3, 3, I64 | B, NONE, {0, -2}),
    UNP(add_scalar, "R.add_scalar(a, k)", "r:k=3", r_adds, -3, 3, I64 | B, NONE, {0, 1}),
    UNP(clamp, "R.clamp(a, lo, hi)", "r:lo=-1 r:hi=1", r_clamp, -3, 3, I64 | B, INPUT,
        {-1, 1}, {1, 1}),
    UN(rsqrt, "torch.rsqrt(a)", "", r_rsqrt, 0.1, 4, I64 | B, OUTPUT, {0, -INFINITY}),
    UN(abs, "torch.abs(a)", "", r_abs, -3, 3, I64, INPUT, {0, 0}, {-0.0, 0}),
    UN(sign, "torch.sign(a)", "", r_sign, -3, 3, I64 | B, NONE, {0, 0}, {1, 0}),
    UN(square, "torch.square(a)", "", r_square, -3, 3, I64 | B, INPUT, {0, 0}),
    UNP(pow_scalar, "R.pow_scalar(a, e)", "r:e=2.5", r_pow_scalar, 0.1, 3, I64 | B, INPUT, {0, 0}),
    UN(log1p, "torch.log1p(a)", "", r_log1p, -0.9, 3, I64 | B, INPUT, {-1, INFINITY}),
    UN(expm1, "torch.expm1(a)", "", r_expm1, -3, 3, I64 | B, OUTPUT, {0, 1}),
    UN(sigmoid, "torch.sigmoid(a)", "", r_sigmoid, -6, 6, I64 | B, OUTPUT, {0, 0.25}),
    UN(logsigmoid, "F.logsigmoid(a)", "", r_logsigmoid, -8, 8, 0, INPUT, {0, 0.5}),
    /* beta 1.5, threshold 2: both branches in [-3, 3]; at x beta == threshold PyTorch
     * takes the smooth branch */
    UNP(softplus, "F.softplus(a, beta, threshold)", "r:beta=1.5 r:threshold=2", r_softplus, -3,
        3, 0, INPUT, {4.0 / 3.0, 0.8807970779778824}),
    UN(tanh, "torch.tanh(a)", "", r_tanh, -3, 3, I64 | B, OUTPUT, {0, 1}),
    UN(relu, "torch.relu(a)", "", r_relu, -3, 3, I64, OUTPUT, {0, 0}, {-0.0, 0}),
    {.name = "gelu", .c_name = "tg_gelu", .torch = "R.gelu(a, approximate)",
     .params = "i:approximate", .nin = 1, .nin_required = 1, .nout = 1, .diff = 1,
     .apply = ap_gelu, .samples = s_gelu, .ref = r_gelu, .lo = -3, .hi = 3,
     .saves = TGR_SAVES_INPUT, .nkinks = 1, .kinks = {{0, 0.5}}},
    UN(silu, "F.silu(a)", "", r_silu, -3, 3, 0, INPUT, {0, 0.5}),
    UN(reciprocal, "torch.reciprocal(a)", "", r_reciprocal, 0.2, 3, I64 | B, OUTPUT, {0, -INFINITY}),
    UN(floor, "torch.floor(a)", "", r_floor, -3, 3, I64, NONE, {1, 0}),
    UN(ceil, "torch.ceil(a)", "", r_ceil, -3, 3, I64, NONE, {1, 0}),
    UN(round, "torch.round(a)", "", r_round, -3, 3, I64, NONE, {0.5, 0}, {1.5, 0}),
    BIN(add, "torch.add(a, b)", -2, 2),
    BIN(sub, "torch.sub(a, b)", -2, 2),
    BIN(mul, "torch.mul(a, b)", -2, 2),
    BIN(div, "torch.div(a, b)", 0.5, 2),
    BIN(maximum, "torch.maximum(a, b)", -2, 2),
    BIN(minimum, "torch.minimum(a, b)", -2, 2),
    BIN(pow, "R.pow(a, b)", 0.5, 2),
    BIN(xlogy, "torch.xlogy(a, b)", 0.2, 2),
    {.name = "where", .c_name = "tg_where", .torch = "R.where(a, b, c)", .nin = 3,
     .nin_required = 3, .nout = 1, .diff = 6, .apply = ap_where, .samples = s_where},
    CMP(eq, "torch.eq(a, b)", tgr_samples_compare),
    CMP(ne, "torch.ne(a, b)", tgr_samples_compare),
    CMP(lt, "torch.lt(a, b)", tgr_samples_compare),
    CMP(le, "torch.le(a, b)", tgr_samples_compare),
    CMP(gt, "torch.gt(a, b)", tgr_samples_compare),
    CMP(ge, "torch.ge(a, b)", tgr_samples_compare),
    CMPS(eq_scalar, "R.cmp_scalar(torch.eq, a, v)"),
    CMPS(ne_scalar, "R.cmp_scalar(torch.ne, a, v)"),
    CMPS(lt_scalar, "R.cmp_scalar(torch.lt, a, v)"),
    CMPS(le_scalar, "R.cmp_scalar(torch.le, a, v)"),
    CMPS(gt_scalar, "R.cmp_scalar(torch.gt, a, v)"),
    CMPS(ge_scalar, "R.cmp_scalar(torch.ge, a, v)"),
    CMP(logical_and, "torch.logical_and(a, b)", tgr_samples_compare),
    CMP(logical_or, "torch.logical_or(a, b)", tgr_samples_compare),
    CMP(logical_xor, "torch.logical_xor(a, b)", tgr_samples_compare),
    PRED(logical_not, "torch.logical_not(a)"),
    PRED(isnan, "torch.isnan(a)"),
    PRED(isinf, "torch.isinf(a)"),
    PRED(isfinite, "torch.isfinite(a)"),
    {.name = "remainder", .c_name = "tg_remainder",
     .torch = "R.int_division(torch.remainder, a, b)", .nin = 2, .nin_required = 2, .nout = 1,
     .diff = 3, .dtypes = I64 | B, .apply = ap_remainder, .samples = s_intdiv, .lo = 0.3,
     .hi = 3.7},
    {.name = "floor_divide", .c_name = "tg_floor_divide",
     .torch = "R.int_division(torch.floor_divide, a, b)", .nin = 2, .nin_required = 2,
     .nout = 1, .dtypes = I64 | B, .apply = ap_floor_divide, .samples = s_intdiv, .lo = 0.3,
     .hi = 3.7},
    {.name = "masked_fill", .c_name = "tg_masked_fill", .torch = "R.masked_fill(a, b, value)",
     .params = "r:value", .nin = 2, .nin_required = 2, .nout = 1, .diff = 1,
     .flags = TGR_COMPOSITE, .apply = ap_masked_fill, .samples = s_masked_fill},
    {.name = "clamp_tensor", .c_name = "tg_clamp_tensor", .torch = "torch.clamp(a, b, c)",
     .nin = 3, .nin_required = 1, .nout = 1, .diff = 7, .dtypes = I64 | B,
     .apply = ap_clamp_tensor, .samples = s_clamp_tensor},
    {.name = "nan_to_num", .c_name = "tg_nan_to_num",
     .torch = "torch.nan_to_num(a, nan_value, None if math.isnan(posinf) else posinf, "
              "None if math.isnan(neginf) else neginf)",
     .params = "r:nan_value=0 r:posinf=nan r:neginf=nan", .nin = 1, .nin_required = 1,
     .nout = 1, .diff = 1, .dtypes = I64 | B, .apply = ap_nan_to_num, .samples = s_nan_to_num,
     .ref = r_nan_to_num, .lo = -3, .hi = 3, .saves = TGR_SAVES_INPUT},
};
const int TGR_N_ELEMENTWISE = (int)(sizeof TGR_ROWS_ELEMENTWISE / sizeof TGR_ROWS_ELEMENTWISE[0]);
