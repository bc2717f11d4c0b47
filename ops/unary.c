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

/* One entry: the op code, the public function (F0, F1 or F2: how many scalar
 * parameters it takes), the node's name, the parameters the tests pass, the
 * reference, and the input range the tests draw from (where the op is
 * smooth). */
#define F0(fn) #fn, fn##_at, NULL, NULL
#define F1(fn) #fn, NULL, fn##_at, NULL
#define F2(fn) #fn, NULL, NULL, fn##_at
#define ENTRY(CODE, FN, NPAR, NODE, P0, P1, REF, LO, HI)                                    \
    [TG__UN_##CODE] = {FN, {NODE, unary_backward, false}, TG__UN_##CODE, TG__UN_SAVES_##CODE, NPAR,     \
                       {P0, P1}, REF, LO, HI}

const tg__unary_info tg__unary_table[TG__UN_NOP] = {
    ENTRY(NEG, F0(tg_neg), 0, "NegBackward", 0, 0, ref_neg, -3, 3),
    ENTRY(EXP, F0(tg_exp), 0, "ExpBackward", 0, 0, ref_exp, -3, 3),
    ENTRY(LOG, F0(tg_log), 0, "LogBackward", 0, 0, ref_log, 0.1, 4),
    ENTRY(SCALE, F1(tg_scale), 1, "ScaleBackward", -1.75, 0, ref_scale, -3, 3),
    ENTRY(ADDS, F1(tg_add_scalar), 1, "AddScalarBackward", 0.5, 0, ref_adds, -3, 3),
    ENTRY(CLAMP, F2(tg_clamp), 2, "ClampBackward", -0.5, 0.75, ref_clamp, -3, 3),
    ENTRY(SQRT, F0(tg_sqrt), 0, "SqrtBackward", 0, 0, ref_sqrt, 0.1, 4),
};
const int tg__n_unary = TG__UN_NOP;

tg_tensor *tg__unary(tg_site s, tg__unop code, tg_tensor *t, double p0, double p1) {
    const tg__unary_info *u = &tg__unary_table[code];
    const char *who = u->name;
    if (tg__null_arg(t, who, "t")) return NULL;
    if (!tg__same_device(who, 1, (const tg_tensor *const *)&t)) return NULL;
    if (!tg__is_float(t->dtype))
        return tg__fail(TG_ERR_DTYPE, "%s: dtype %s is not supported (f32 or f64 required)", who,
                        tg_dtype_name(t->dtype));
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
