/* ops/unary.c - the unary elementwise ops, driven by one table.
 *
 * Each op is one entry of tg__unary_table, indexed by its op code
 * (kernels/kernel.h, where its forward and backward formulas are, for both
 * backends): the public function's name and the backward node's. One
 * forward (tg__unary) and one backward (unary_backward) serve every entry:
 * the backward runs the op's gradient formula on the upstream gradient and
 * the tensor the op saved (its input or its output, per the formula list).
 * i64 and bool inputs go to ops/intarith.c. Each op's tests come from its
 * row in the op registry (tests/registry/rows_elementwise.c). */
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

/* One entry per op code: the public function's name and the backward node's. */
#define ENTRY(CODE, FN, NODE)                                                                \
    [TG__UN_##CODE] = {FN, {NODE, unary_backward, false, NULL}, TG__UN_##CODE,               \
                       TG__UN_SAVES_##CODE}

const tg__unary_info tg__unary_table[TG__UN_NOP] = {
    ENTRY(NEG, "tg_neg", "NegBackward"),
    ENTRY(EXP, "tg_exp", "ExpBackward"),
    ENTRY(LOG, "tg_log", "LogBackward"),
    ENTRY(SCALE, "tg_scale", "ScaleBackward"),
    ENTRY(ADDS, "tg_add_scalar", "AddScalarBackward"),
    ENTRY(CLAMP, "tg_clamp", "ClampBackward"),
    ENTRY(SQRT, "tg_sqrt", "SqrtBackward"),
    ENTRY(RSQRT, "tg_rsqrt", "RsqrtBackward"),
    ENTRY(ABS, "tg_abs", "AbsBackward"),
    ENTRY(SIGN, "tg_sign", "SignBackward"),
    ENTRY(SQUARE, "tg_square", "PowBackward"),
    ENTRY(POW, "tg_pow_scalar", "PowBackward"),
    ENTRY(LOG1P, "tg_log1p", "Log1pBackward"),
    ENTRY(EXPM1, "tg_expm1", "Expm1Backward"),
    ENTRY(SIGMOID, "tg_sigmoid", "SigmoidBackward"),
    ENTRY(LOGSIGMOID, "tg_logsigmoid", "LogSigmoidBackward"),
    ENTRY(SOFTPLUS, "tg_softplus", "SoftplusBackward"),
    ENTRY(TANH, "tg_tanh", "TanhBackward"),
    ENTRY(RELU, "tg_relu", "ReluBackward"),
    ENTRY(GELU, "tg_gelu", "GeluBackward"),
    ENTRY(GELU_TANH, "tg_gelu", "GeluBackward"),
    ENTRY(SILU, "tg_silu", "SiluBackward"),
    ENTRY(RECIPROCAL, "tg_reciprocal", "ReciprocalBackward"),
    ENTRY(FLOOR, "tg_floor", "FloorBackward"),
    ENTRY(CEIL, "tg_ceil", "CeilBackward"),
    ENTRY(ROUND, "tg_round", "RoundBackward"),
};
/* a code of kernels/kernel.h's TG__UNARY_OPS without an entry here has a NULL name:
 * its registry row's walk (test_registry) fails on it */

tg_tensor *tg__unary(tg_site s, tg__unop code, tg_tensor *t, double p0, double p1) {
    const tg__unary_info *u = &tg__unary_table[code];
    const char *who = u->name;
    if (tg__null_arg(t, who, "t")) return NULL;
    if (!tg__same_device(who, 1, (const tg_tensor *const *)&t)) return NULL;
    if (t->dtype == TG_I64 || t->dtype == TG_BOOL) return tg__int_unary(s, who, code, t, p0, p1);
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
    if (tg__null_arg(t, "tg_gelu", "t")) return tg__ret(NULL); /* NULL first: it propagates */
    switch (approximate) {
    case TG_GELU_NONE: return gelu_erf_at(s, t);
    case TG_GELU_TANH: return gelu_tanh_at(s, t);
    }
    return tg__ret(tg__fail(TG_ERR_VALUE, "tg_gelu: approximate is %d (TG_GELU_NONE or "
                            "TG_GELU_TANH)", (int)approximate));
}
