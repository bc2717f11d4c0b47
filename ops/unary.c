/* ops/unary.c - the unary elementwise ops, driven by one table.
 *
 * Each op is one entry of tg__unary_table, indexed by its op code
 * (kernels/kernel.h, where its forward and backward formulas are, for both
 * backends): public name, backward node name, number of scalar parameters,
 * a reference in double and the input range the tests use. One forward
 * (unary_op) and one backward (unary_backward) serve every entry: the
 * backward runs the op's gradient formula on the upstream gradient and the
 * tensor the op saved (its input or its output, per the formula list). The
 * tests walk the table (tests/test_op_table.c, tests/test_backends.c), so an
 * op added here is tested without editing a test file. */
#include <math.h>
#include <stddef.h>

#include "ops_internal.h"

/* Node parameters: the op's scalar parameters (dparam). */
enum { P_P0 = 0, P_P1 = 1 };

static tg_status unary_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

/* The entry whose node definition is def. */
static const tg__unary_info *info_of(const tg__op_def *def) {
    return (const tg__unary_info *)((const char *)def - offsetof(tg__unary_info, def));
}

static double ref_neg(double x, double p0, double p1) { return (void)p0, (void)p1, -x; }
static double ref_exp(double x, double p0, double p1) { return (void)p0, (void)p1, exp(x); }
static double ref_log(double x, double p0, double p1) { return (void)p0, (void)p1, log(x); }
static double ref_scale(double x, double p0, double p1) { return (void)p1, x * p0; }
static double ref_adds(double x, double p0, double p1) { return (void)p1, x + p0; }
static double ref_sqrt(double x, double p0, double p1) { return (void)p0, (void)p1, sqrt(x); }
static double ref_clamp(double x, double p0, double p1) { /* min(max(x, lo), hi) */
    if (isnan(p0) || isnan(p1)) return NAN;
    double t = x < p0 ? p0 : x;
    return t > p1 ? p1 : t;
}
static double ref_rsqrt(double x, double p0, double p1) { return (void)p0, (void)p1, 1 / sqrt(x); }
static double ref_abs(double x, double p0, double p1) { return (void)p0, (void)p1, fabs(x); }
static double ref_sign(double x, double p0, double p1) {
    return (void)p0, (void)p1, x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; /* NaN: 0, as PyTorch */
}
static double ref_square(double x, double p0, double p1) { return (void)p0, (void)p1, x * x; }
static double ref_pow(double x, double p0, double p1) { /* PyTorch's exact forms first */
    (void)p1;
    if (p0 == 2) return x * x;
    if (p0 == 3) return x * x * x;
    if (p0 == -1) return 1 / x;
    if (p0 == -2) return 1 / (x * x);
    if (p0 == 0.5) return sqrt(x);
    if (p0 == -0.5) return 1 / sqrt(x);
    return pow(x, p0);
}
static double ref_log1p(double x, double p0, double p1) { return (void)p0, (void)p1, log1p(x); }
static double ref_expm1(double x, double p0, double p1) { return (void)p0, (void)p1, expm1(x); }
static double ref_sigmoid(double x, double p0, double p1) {
    return (void)p0, (void)p1, 1 / (1 + exp(-x));
}
static double ref_logsigmoid(double x, double p0, double p1) { /* +0 at +inf, as PyTorch */
    return (void)p0, (void)p1, (x < 0 ? x : 0.0) - log1p(exp(-fabs(x)));
}
static double ref_softplus(double x, double beta, double threshold) {
    return x * beta > threshold ? x : log1p(exp(x * beta)) / beta;
}
static double ref_tanh(double x, double p0, double p1) { return (void)p0, (void)p1, tanh(x); }
static double ref_relu(double x, double p0, double p1) { return (void)p0, (void)p1, x < 0 ? 0 : x; }
static double ref_gelu(double x, double p0, double p1) { /* x * Phi(x), through erfc */
    return (void)p0, (void)p1, 0.5 * x * erfc(-x * 0.70710678118654752440);
}
static double ref_gelu_tanh(double x, double p0, double p1) {
    (void)p0, (void)p1;
    return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
static double ref_silu(double x, double p0, double p1) { return (void)p0, (void)p1, x / (1 + exp(-x)); }
static double ref_reciprocal(double x, double p0, double p1) { return (void)p0, (void)p1, 1 / x; }
static double ref_floor(double x, double p0, double p1) { return (void)p0, (void)p1, floor(x); }
static double ref_ceil(double x, double p0, double p1) { return (void)p0, (void)p1, ceil(x); }
static double ref_round(double x, double p0, double p1) { /* half to even */
    return (void)p0, (void)p1, nearbyint(x);
}

/* One entry: the op code, the public function (F0, F1 or F2: how many scalar
 * parameters it takes), the node's name, the parameters the tests pass, the
 * reference, the input range the tests draw from (where the op is smooth),
 * then the kinks: {x, PyTorch's gradient at x} pairs. */
#define F0(fn) #fn, fn##_at, NULL, NULL
#define F1(fn) #fn, NULL, fn##_at, NULL
#define F2(fn) #fn, NULL, NULL, fn##_at
#define NAMED0(name, fn) name, fn, NULL, NULL /* one form of a public function */
#define ENTRY(CODE, FN, NPAR, NODE, P0, P1, REF, LO, HI, ...)                               \
    [TG__UN_##CODE] = {FN, {NODE, unary_backward, false}, TG__UN_##CODE, TG__UN_SAVES_##CODE, NPAR,     \
                       {P0, P1}, REF, LO, HI,                                               \
                       (int)(sizeof((const double[][2]){__VA_ARGS__}) / sizeof(double[2])), \
                       {__VA_ARGS__}}

static tg_tensor *gelu_erf_at(tg_site s, tg_tensor *t);
static tg_tensor *gelu_tanh_at(tg_site s, tg_tensor *t);

const tg__unary_info tg__unary_table[TG__UN_NOP] = {
    ENTRY(NEG, F0(tg_neg), 0, "NegBackward", 0, 0, ref_neg, -3, 3, {0, -1}),
    ENTRY(EXP, F0(tg_exp), 0, "ExpBackward", 0, 0, ref_exp, -3, 3, {0, 1}),
    ENTRY(LOG, F0(tg_log), 0, "LogBackward", 0, 0, ref_log, 0.1, 4, {0, INFINITY}),
    ENTRY(SCALE, F1(tg_scale), 1, "ScaleBackward", -1.75, 0, ref_scale, -3, 3, {0, -1.75}),
    ENTRY(ADDS, F1(tg_add_scalar), 1, "AddScalarBackward", 0.5, 0, ref_adds, -3, 3, {0, 1}),
    ENTRY(CLAMP, F2(tg_clamp), 2, "ClampBackward", -0.5, 0.75, ref_clamp, -3, 3, {-0.5, 1},
          {0.75, 1}),
    ENTRY(SQRT, F0(tg_sqrt), 0, "SqrtBackward", 0, 0, ref_sqrt, 0.1, 4, {0, INFINITY}),
    ENTRY(RSQRT, F0(tg_rsqrt), 0, "RsqrtBackward", 0, 0, ref_rsqrt, 0.1, 4, {0, -INFINITY}),
    ENTRY(ABS, F0(tg_abs), 0, "AbsBackward", 0, 0, ref_abs, -3, 3, {0, 0}, {-0.0, 0}),
    ENTRY(SIGN, F0(tg_sign), 0, "SignBackward", 0, 0, ref_sign, -3, 3, {0, 0}, {1, 0}),
    ENTRY(SQUARE, F0(tg_square), 0, "PowBackward", 0, 0, ref_square, -3, 3, {0, 0}),
    ENTRY(POW, F1(tg_pow_scalar), 1, "PowBackward", 2.5, 0, ref_pow, 0.1, 3, {0, 0}),
    ENTRY(LOG1P, F0(tg_log1p), 0, "Log1pBackward", 0, 0, ref_log1p, -0.9, 3, {-1, INFINITY}),
    ENTRY(EXPM1, F0(tg_expm1), 0, "Expm1Backward", 0, 0, ref_expm1, -3, 3, {0, 1}),
    ENTRY(SIGMOID, F0(tg_sigmoid), 0, "SigmoidBackward", 0, 0, ref_sigmoid, -6, 6, {0, 0.25}),
    ENTRY(LOGSIGMOID, F0(tg_logsigmoid), 0, "LogSigmoidBackward", 0, 0, ref_logsigmoid, -8, 8,
          {0, 0.5}),
    /* beta 1.5, threshold 2: both branches in [-3, 3]; at x * beta == threshold
     * PyTorch takes the smooth branch */
    ENTRY(SOFTPLUS, F2(tg_softplus), 2, "SoftplusBackward", 1.5, 2, ref_softplus, -3, 3,
          {4.0 / 3.0, 0.8807970779778824}),
    ENTRY(TANH, F0(tg_tanh), 0, "TanhBackward", 0, 0, ref_tanh, -3, 3, {0, 1}),
    ENTRY(RELU, F0(tg_relu), 0, "ReluBackward", 0, 0, ref_relu, -3, 3, {0, 0}, {-0.0, 0}),
    ENTRY(GELU, NAMED0("tg_gelu", gelu_erf_at), 0, "GeluBackward", 0, 0, ref_gelu, -3, 3,
          {0, 0.5}),
    ENTRY(GELU_TANH, NAMED0("tg_gelu(tanh)", gelu_tanh_at), 0, "GeluBackward", 0, 0,
          ref_gelu_tanh, -3, 3, {0, 0.5}),
    ENTRY(SILU, F0(tg_silu), 0, "SiluBackward", 0, 0, ref_silu, -3, 3, {0, 0.5}),
    ENTRY(RECIPROCAL, F0(tg_reciprocal), 0, "ReciprocalBackward", 0, 0, ref_reciprocal, 0.2, 3,
          {0, -INFINITY}),
    ENTRY(FLOOR, F0(tg_floor), 0, "FloorBackward", 0, 0, ref_floor, -3, 3, {1, 0}),
    ENTRY(CEIL, F0(tg_ceil), 0, "CeilBackward", 0, 0, ref_ceil, -3, 3, {1, 0}),
    ENTRY(ROUND, F0(tg_round), 0, "RoundBackward", 0, 0, ref_round, -3, 3, {0.5, 0}, {1.5, 0}),
};
const int tg__n_unary = TG__UN_NOP;

tg_tensor *tg__unary(tg_site s, tg__unop code, tg_tensor *t, double p0, double p1) {
    const tg__unary_info *u = &tg__unary_table[code];
    const char *who = u->name;
    if (tg__null_arg(t, who, "t")) return NULL;
    if (!tg__same_device(who, 1, (const tg_tensor *const *)&t)) return NULL;
    if (t->dtype == TG_I64) return tg__int_unary(s, who, code, t, p0, p1);
    if (!tg__is_float(t->dtype))
        return tg__dtype_unsupported_null(who, t->dtype);
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, t->ndim, t->shape);
    if (!out || !(out = tg__k_ok(tg__k_unary(code, out, t, NULL, p0, p1), out))) return NULL;
    if (!tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, &u->def, 1, &t, out);
    if (!n) goto fail;
    n->dparam[P_P0] = p0;
    n->dparam[P_P1] = p1;
    if (u->saves == TG__SAVES_INPUT && tg__node_save(n, t, false, 0) < 0) goto fail;
    if (u->saves == TG__SAVES_OUTPUT && tg__node_save(n, out, true, 0) < 0) goto fail;
    return out;
fail:
    tg__tensor_release(out);
    return NULL;
}

/* dx = the op's gradient formula of (g, saved, p0, p1). */
static tg_status unary_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__unary_info *u = info_of(n->op);
    tg_tensor *sv = NULL;
    if (u->saves != TG__SAVES_NONE && !(sv = tg__node_saved(n, 0))) return tg_last_status();
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *dx = tg__new_output_on(n->site, n->name, m->device, m->dtype, m->ndim, m->shape);
    if (dx) dx = tg__k_ok(tg__k_unary_grad(u->code, dx, gout[0], sv, n->dparam[P_P0], n->dparam[P_P1]),
                          dx);
    tg__tensor_release(sv);
    gin[0] = dx;
    return dx ? TG_OK : tg_last_status();
}

/* ---- the public functions --------------------------------------------------- */

tg_tensor *tg__neg(tg_site s, tg_tensor *t) { return tg__unary(s, TG__UN_NEG, t, 0, 0); }
tg_tensor *tg__scale(tg_site s, tg_tensor *t, double k) {
    return tg__unary(s, TG__UN_SCALE, t, k, 0);
}

tg_tensor *tg_neg_at(tg_site s, tg_tensor *t) { return tg__ret(tg__neg(s, t)); }
tg_tensor *tg_exp_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__unary(s, TG__UN_EXP, t, 0, 0));
}
tg_tensor *tg_log_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__unary(s, TG__UN_LOG, t, 0, 0));
}
tg_tensor *tg_sqrt_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__unary(s, TG__UN_SQRT, t, 0, 0));
}
tg_tensor *tg_scale_at(tg_site s, tg_tensor *t, double k) { return tg__ret(tg__scale(s, t, k)); }
tg_tensor *tg_add_scalar_at(tg_site s, tg_tensor *t, double k) {
    return tg__ret(tg__unary(s, TG__UN_ADDS, t, k, 0));
}
tg_tensor *tg_clamp_at(tg_site s, tg_tensor *t, double lo, double hi) {
    return tg__ret(tg__unary(s, TG__UN_CLAMP, t, lo, hi));
}

/* One line per op: the public functions of the formula list. */
#define UNARY0(fn, CODE) \
    tg_tensor *fn##_at(tg_site s, tg_tensor *t) { return tg__ret(tg__unary(s, TG__UN_##CODE, t, 0, 0)); }
UNARY0(tg_rsqrt, RSQRT)
UNARY0(tg_abs, ABS)
UNARY0(tg_sign, SIGN)
UNARY0(tg_square, SQUARE)
UNARY0(tg_log1p, LOG1P)
UNARY0(tg_expm1, EXPM1)
UNARY0(tg_sigmoid, SIGMOID)
UNARY0(tg_logsigmoid, LOGSIGMOID)
UNARY0(tg_tanh, TANH)
UNARY0(tg_relu, RELU)
UNARY0(tg_silu, SILU)
UNARY0(tg_reciprocal, RECIPROCAL)
UNARY0(tg_floor, FLOOR)
UNARY0(tg_ceil, CEIL)
UNARY0(tg_round, ROUND)

tg_tensor *tg_pow_scalar_at(tg_site s, tg_tensor *t, double exponent) {
    return tg__ret(tg__unary(s, TG__UN_POW, t, exponent, 0));
}
tg_tensor *tg_softplus_at(tg_site s, tg_tensor *t, double beta, double threshold) {
    return tg__ret(tg__unary(s, TG__UN_SOFTPLUS, t, beta, threshold));
}
static tg_tensor *gelu_erf_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__unary(s, TG__UN_GELU, t, 0, 0));
}
static tg_tensor *gelu_tanh_at(tg_site s, tg_tensor *t) {
    return tg__ret(tg__unary(s, TG__UN_GELU_TANH, t, 0, 0));
}
tg_tensor *tg_gelu_at(tg_site s, tg_tensor *t, tg_gelu_approx approximate) {
    switch (approximate) {
    case TG_GELU_NONE: return gelu_erf_at(s, t);
    case TG_GELU_TANH: return gelu_tanh_at(s, t);
    }
    return tg__ret(tg__fail(TG_ERR_VALUE, "tg_gelu: approximate is %d (TG_GELU_NONE or "
                            "TG_GELU_TANH)", (int)approximate));
}
