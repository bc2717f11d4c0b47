/* tests/registry/rows_elementwise.c - the registry rows of the elementwise
 * ops: unary (with their double references, smooth ranges and PyTorch's
 * gradients at the kinks), binary arithmetic, where, comparisons and logic,
 * integer division, masked_fill. */
#include <math.h>
#include <string.h>

#include "registry.h"

#define P(k) (a->fv[k])
#define PI(k) (a->iv[k])

/* ---- apply functions by shape of call ------------------------------------------------ */

#define UNARY0(fn)                                                                              \
    static tg_status ap_##fn(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,       \
                             tg_tensor **out) {                                                 \
        (void)op, (void)a;                                                                      \
        out[0] = fn(in[0]);                                                                     \
        return out[0] ? TG_OK : tg_last_status();                                               \
    }
#define CALL(name, expr)                                                                        \
    static tg_status ap_##name(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,     \
                               tg_tensor **out) {                                               \
        (void)op, (void)a, (void)in;                                                            \
        out[0] = (expr);                                                                        \
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
}

/* i64 dividends and non-zero divisors, broadcast; a zero divisor is refused */
static void s_intdiv(const tgr_op *op, tg_dtype dt, tgr_samples *out) {
    (void)op;
    tgr_args a = tgr_args0(dt);
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
    s = tgr_add(out, "float operands", TGR_S_BAD, &a, 2, tgr_rand(dt, 1, c4, 5, 1, 3),
                tgr_rand(dt, 1, c4, 6, 1, 3));
    if (s) s->want = TG_ERR_DTYPE;
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
    BIN(pow, "torch.pow(a, b)", 0.5, 2),
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
    CMP(remainder, "R.int_division(torch.remainder, a, b)", s_intdiv),
    CMP(floor_divide, "R.int_division(torch.floor_divide, a, b)", s_intdiv),
    {.name = "masked_fill", .c_name = "tg_masked_fill", .torch = "R.masked_fill(a, b, value)",
     .params = "r:value", .nin = 2, .nin_required = 2, .nout = 1, .diff = 1,
     .flags = TGR_COMPOSITE, .apply = ap_masked_fill, .samples = s_masked_fill},
};
const int TGR_N_ELEMENTWISE = (int)(sizeof TGR_ROWS_ELEMENTWISE / sizeof TGR_ROWS_ELEMENTWISE[0]);
