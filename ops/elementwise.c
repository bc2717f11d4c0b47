/* ops/elementwise.c - binary elementwise differentiable ops: add, sub, mul,
 * div, maximum, minimum, pow, xlogy, remainder, floor_divide, where (NumPy
 * broadcasting), and to_dtype; their backward formulas. The unary ops are table-driven in ops/unary.c.
 *
 * Contract: operands of any dtypes, promoted as PyTorch does
 * (ops/promote.c: f32 * bool mask is f32, i64 / i64 is f32, f32 + f64 is
 * f64) and converted to the promoted dtype first; where's cond may be any
 * dtype. Any strides; integer results (i64, or bool for bool operands) go to
 * ops/intarith.c; results are new contiguous tensors. Each public tg_X_at() is `return tg__ret(X(...))`; the internal versions
 * (tg__add, ...) do the same work without touching scopes. A node is recorded
 * only when grad mode is on and an input requires grad, and only what
 * backward needs is saved (mul saves b only when a needs a gradient, etc.).
 * Gradients of broadcast operands are summed back with tg__sum_to.
 * On failure nothing is leaked, inputs are unchanged and NULL is returned
 * with the error set.
 */
#include <math.h>

#include "ops_internal.h"

/* ---- argument checks ------------------------------------------------------- */

static bool check_device(const char *who, const tg_tensor *t) {
    return tg__same_device(who, 1, &t);
}

static bool check_float(const char *who, const tg_tensor *t) {
    if (!check_device(who, t)) return false;
    if (tg__is_float(t->dtype)) return true;
    tg__dtype_unsupported(who, t->dtype);
    return false;
}

static bool check_pair(const char *who, const tg_tensor *a, const tg_tensor *b) {
    const tg_tensor *ab[2] = {a, b};
    if (!check_float(who, a) || !check_float(who, b) || !tg__same_device(who, 2, ab)) return false;
    if (a->dtype == b->dtype) return true;
    tg__set_error(TG_ERR_DTYPE, "%s: operands have different dtypes (%s and %s); convert one "
                  "with tg_to_dtype", who, tg_dtype_name(a->dtype), tg_dtype_name(b->dtype));
    return false;
}

static bool needs(const tg__node *n, int i) { return n->edge[i].kind != TG__EDGE_NONE; }

/* Releases gin[0..n) (set so far) and returns the pending error. */
static tg_status bw_fail(tg_tensor **gin, int n) {
    for (int i = 0; i < n; i++) {
        tg__tensor_release(gin[i]);
        gin[i] = NULL;
    }
    return tg_last_status();
}

/* Unpacks saved slot (>= 0) into *out; false with the error set. */
static bool unpack(tg__node *n, int64_t slot, tg_tensor **out) {
    *out = slot >= 0 ? tg__node_saved(n, (int)slot) : NULL;
    if (*out) return true;
    if (slot < 0) tg__set_error(TG_ERR_INTERNAL, "%s: a tensor needed by backward was not saved",
                                n->name);
    return false;
}

/* A new tensor of g's shape and dtype, for gradient helpers. */
static tg_tensor *like(tg__node *n, const tg_tensor *g) {
    return tg__new_output_on(n->site, n->name, g->storage->device, g->dtype, g->ndim, g->shape);
}

/* Sums t (a gradient of the broadcast shape) down to input i's shape and
 * releases t. NULL passes through. */
static tg_tensor *reduce_to_input(tg__node *n, int i, tg_tensor *t) {
    if (!t) return NULL;
    tg_tensor *r = tg__sum_to(n->site, t, &n->in_meta[i]);
    tg__tensor_release(t);
    return r;
}

/* Node parameters: the saved slots of the operands and of pow's result (-1:
 * not saved). */
enum { SLOT_A = 0, SLOT_B = 1, SLOT_OUT = 2, SLOT_COND = 0 };

/* ---- binary ops ------------------------------------------------------------ */

static tg_status add_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status sub_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status mul_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status div_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status max_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status min_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status pow_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status remainder_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static tg_status xlogy_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

static const tg__op_def ADD_DEF = {"AddBackward", add_backward, false, NULL};
static const tg__op_def SUB_DEF = {"SubBackward", sub_backward, false, NULL};
static const tg__op_def MUL_DEF = {"MulBackward", mul_backward, false, NULL};
static const tg__op_def DIV_DEF = {"DivBackward", div_backward, false, NULL};
static const tg__op_def MAX_DEF = {"MaximumBackward", max_backward, false, NULL};
static const tg__op_def MIN_DEF = {"MinimumBackward", min_backward, false, NULL};
static const tg__op_def POW_DEF = {"PowBackward", pow_backward, false, NULL};
static const tg__op_def REMAINDER_DEF = {"RemainderBackward", remainder_backward, false, NULL};
static const tg__op_def XLOGY_DEF = {"XlogyBackward", xlogy_backward, false, NULL};

/* out = a op b with broadcasting. Saves per op (iparam[SLOT_A], iparam[SLOT_B]: the
 * slots of a and b, -1 when not saved):
 *   mul: a if b needs a gradient, b if a does;  div: b always, a if b needs one;
 *   maximum/minimum, xlogy: both; pow: both and its result (PyTorch saves the three:
 *   an in-place edit of the result fails backward there too); remainder: both
 *   if b needs a gradient. floor_divide records nothing (no gradient: its
 *   result does not require grad). */
static tg_tensor *binary_on(tg_site s, const char *who, tg__binop op, const tg__op_def *def,
                            tg_tensor *a, tg_tensor *b);
static tg_tensor *int_binary(tg_site s, const char *who, tg__binop op, tg_tensor *a,
                             tg_tensor *b);

/* The dtype op computes in for operands promoted to rt (PyTorch's rules: true
 * division of integers gives f32; bool arithmetic is done in i64, its result
 * converted back), or -1 with the error set where PyTorch refuses the
 * operands. */
static int compute_dtype(const char *who, tg__binop op, tg_dtype rt, const tg_tensor *a,
                         const tg_tensor *b) {
    if (op == TG__BIN_SUB && (a->dtype == TG_BOOL || b->dtype == TG_BOOL))
        return tg__set_error(TG_ERR_DTYPE, "%s: subtraction with a bool tensor is not supported "
                             "(as in PyTorch): use tg_logical_xor or tg_logical_not, or convert "
                             "it with tg_to_dtype", who), -1;
    if ((op == TG__BIN_DIV || op == TG__BIN_XLOGY) && !tg__is_floating(rt)) return TG_F32;
    if ((op == TG__BIN_REMAINDER || op == TG__BIN_FLOOR_DIVIDE) && rt == TG_BOOL)
        return tg__set_error(TG_ERR_DTYPE, "%s: two bool tensors are not supported (as in "
                             "PyTorch): convert one with tg_to_dtype", who), -1;
    if (rt != TG_BOOL) return (int)rt;
    if (op == TG__BIN_POW)
        return tg__set_error(TG_ERR_DTYPE, "%s: pow of two bool tensors is not supported (as in "
                             "PyTorch): convert one with tg_to_dtype", who), -1;
    return (int)TG_I64;
}

/* A 0-d CPU operand of a CUDA tensor is moved to the device first (see
 * tg__promote_scalars); operands of different dtypes are converted to the
 * promoted one (ops/promote.c). */
static tg_tensor *binary(tg_site s, const char *who, tg__binop op, const tg__op_def *def,
                         tg_tensor *a, tg_tensor *b) {
    if (tg__null_arg(a, who, "a") || tg__null_arg(b, who, "b")) return NULL;
    tg_tensor *ab[2] = {a, b}, *owned[2], *conv[2] = {NULL, NULL};
    if (!tg__promote_scalars(s, 2, ab, owned)) return NULL;
    const tg_dtype rt = tg__result_type(2, ab);
    const int cdt = compute_dtype(who, op, rt, ab[0], ab[1]);
    tg_tensor *out = NULL;
    if (cdt >= 0 && tg__convert_operands(s, (tg_dtype)cdt, 2, ab, conv)) {
        if (cdt == TG_I64) /* PyTorch's integer arithmetic */
            out = int_binary(s, who, op, ab[0], ab[1]);
        else
            out = binary_on(s, who, op, def, ab[0], ab[1]);
        tg__release_promoted(2, conv);
    }
    tg__release_promoted(2, owned);
    if (out && rt == TG_BOOL && cdt == TG_I64) { /* bool + bool and the like: back to bool */
        tg_tensor *r = tg__to_dtype(s, out, TG_BOOL);
        tg__tensor_release(out);
        out = r;
    }
    return out;
}

/* Two i64 operands: the exact integer kernels (ops/intarith.c). */
static tg_tensor *int_binary(tg_site s, const char *who, tg__binop op, tg_tensor *a,
                             tg_tensor *b) {
    switch (op) {
    case TG__BIN_ADD: return tg__int_binary(s, who, TG__INT_ADD, a, b);
    case TG__BIN_SUB: return tg__int_binary(s, who, TG__INT_SUB, a, b);
    case TG__BIN_MUL: return tg__int_binary(s, who, TG__INT_MUL, a, b);
    case TG__BIN_MAX: return tg__int_binary(s, who, TG__INT_MAX, a, b);
    case TG__BIN_MIN: return tg__int_binary(s, who, TG__INT_MIN, a, b);
    case TG__BIN_POW: return tg__int_binary(s, who, TG__INT_POW, a, b);
    case TG__BIN_REMAINDER: return tg__int_binary(s, who, TG__INT_REMAINDER, a, b);
    case TG__BIN_FLOOR_DIVIDE: return tg__int_binary(s, who, TG__INT_FLOOR_DIVIDE, a, b);
    default:
        return tg__fail(TG_ERR_DTYPE, "%s: dtype i64 is not supported (f32 or f64 required; "
                        "convert with tg_to_dtype)", who);
    }
}

static tg_tensor *binary_on(tg_site s, const char *who, tg__binop op, const tg__op_def *def,
                            tg_tensor *a, tg_tensor *b) {
    if (!check_pair(who, a, b)) return NULL;
    int nd;
    int64_t shape[TG_MAX_DIMS];
    if (tg__broadcast_shapes(who, a->ndim, a->shape, b->ndim, b->shape, &nd, shape) != TG_OK)
        return NULL;
    tg_tensor *out = tg__new_output_on(s, who, a->storage->device, a->dtype, nd, shape);
    if (!out || !(out = tg__k_ok(tg__k_binary(op, out, a, b, 0.0, 0.0), out))) return NULL;
    tg_tensor *in[2] = {a, b};
    if (op == TG__BIN_FLOOR_DIVIDE || !tg__needs_grad(2, in)) return out;
    tg__node *n = tg__record(s, def, 2, in, out);
    if (!n) goto fail;
    bool save_a = false, save_b = false;
    switch (op) {
    case TG__BIN_MUL: save_a = needs(n, 1); save_b = needs(n, 0); break;
    case TG__BIN_DIV: save_a = needs(n, 1); save_b = true; break;
    case TG__BIN_MAX:
    case TG__BIN_MIN:
    case TG__BIN_XLOGY:
    case TG__BIN_POW: save_a = save_b = true; break;
    case TG__BIN_REMAINDER: save_a = save_b = needs(n, 1); break;
    default: break;
    }
    n->iparam[SLOT_A] = n->iparam[SLOT_B] = n->iparam[SLOT_OUT] = -1;
    if (save_a && (n->iparam[SLOT_A] = tg__node_save(n, a, false, 0)) < 0) goto fail;
    if (save_b && (n->iparam[SLOT_B] = tg__node_save(n, b, false, 1)) < 0) goto fail;
    if (op == TG__BIN_POW && (n->iparam[SLOT_OUT] = tg__node_save(n, out, true, 0)) < 0)
        goto fail;
    return out;
fail:
    tg__tensor_release(out); /* also releases the node it owns */
    return NULL;
}

tg_tensor *tg__add(tg_site s, tg_tensor *a, tg_tensor *b) {
    return binary(s, "tg_add", TG__BIN_ADD, &ADD_DEF, a, b);
}
tg_tensor *tg__sub(tg_site s, tg_tensor *a, tg_tensor *b) {
    return binary(s, "tg_sub", TG__BIN_SUB, &SUB_DEF, a, b);
}
tg_tensor *tg__mul(tg_site s, tg_tensor *a, tg_tensor *b) {
    return binary(s, "tg_mul", TG__BIN_MUL, &MUL_DEF, a, b);
}
tg_tensor *tg__div(tg_site s, tg_tensor *a, tg_tensor *b) {
    return binary(s, "tg_div", TG__BIN_DIV, &DIV_DEF, a, b);
}


tg_tensor *tg_add_at(tg_site s, tg_tensor *a, tg_tensor *b) { return tg__ret(tg__add(s, a, b)); }
tg_tensor *tg_sub_at(tg_site s, tg_tensor *a, tg_tensor *b) { return tg__ret(tg__sub(s, a, b)); }
tg_tensor *tg_mul_at(tg_site s, tg_tensor *a, tg_tensor *b) { return tg__ret(tg__mul(s, a, b)); }
tg_tensor *tg_div_at(tg_site s, tg_tensor *a, tg_tensor *b) { return tg__ret(tg__div(s, a, b)); }
tg_tensor *tg_maximum_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(binary(s, "tg_maximum", TG__BIN_MAX, &MAX_DEF, a, b));
}
tg_tensor *tg_minimum_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(binary(s, "tg_minimum", TG__BIN_MIN, &MIN_DEF, a, b));
}
tg_tensor *tg__pow(tg_site s, tg_tensor *a, tg_tensor *b) {
    return binary(s, "tg_pow", TG__BIN_POW, &POW_DEF, a, b);
}
tg_tensor *tg_pow_at(tg_site s, tg_tensor *a, tg_tensor *b) { return tg__ret(tg__pow(s, a, b)); }
int tg__pow_result_slot(const tg__node *n) {
    return n && n->op == &POW_DEF ? (int)n->iparam[SLOT_OUT] : -1;
}
tg_tensor *tg_remainder_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(binary(s, "tg_remainder", TG__BIN_REMAINDER, &REMAINDER_DEF, a, b));
}
tg_tensor *tg_xlogy_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(binary(s, "tg_xlogy", TG__BIN_XLOGY, &XLOGY_DEF, a, b));
}
tg_tensor *tg_floor_divide_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(binary(s, "tg_floor_divide", TG__BIN_FLOOR_DIVIDE, NULL, a, b));
}

/* d(a remainder b): g, and -g * floor_divide(a, b) (PyTorch's). */
static tg_status remainder_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *g = gout[0], *a = NULL, *b = NULL;
    if (needs(n, 0)) {
        gin[0] = tg__sum_to(n->site, g, &n->in_meta[0]);
        if (!gin[0]) return bw_fail(gin, 2);
    }
    if (!needs(n, 1)) return TG_OK;
    if (!unpack(n, n->iparam[SLOT_A], &a) || !unpack(n, n->iparam[SLOT_B], &b)) goto fail;
    tg_tensor *t = like(n, g);
    if (t) t = tg__k_ok(tg__k_ternary(TG__TER_REMAINDER_GRAD_B, t, g, a, b), t);
    gin[1] = reduce_to_input(n, 1, t);
    if (!gin[1]) goto fail;
    tg__tensor_release(a);
    tg__tensor_release(b);
    return TG_OK;
fail:
    tg__tensor_release(a);
    tg__tensor_release(b);
    return bw_fail(gin, 2);
}

/* d(a+b): g summed to each input's shape. */
static tg_status add_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    for (int i = 0; i < 2; i++) {
        if (!needs(n, i)) continue;
        gin[i] = tg__sum_to(n->site, gout[0], &n->in_meta[i]);
        if (!gin[i]) return bw_fail(gin, 2);
    }
    return TG_OK;
}

/* d(a-b): g and -g, summed to the inputs' shapes. */
static tg_status sub_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    if (needs(n, 0)) {
        gin[0] = tg__sum_to(n->site, gout[0], &n->in_meta[0]);
        if (!gin[0]) return bw_fail(gin, 2);
    }
    if (needs(n, 1)) {
        tg_tensor *r = tg__sum_to(n->site, gout[0], &n->in_meta[1]);
        gin[1] = r ? tg__neg(n->site, r) : NULL;
        tg__tensor_release(r);
        if (!gin[1]) return bw_fail(gin, 2);
    }
    return TG_OK;
}

/* d(a*b): g*b and g*a. */
static tg_status mul_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    for (int i = 0; i < 2; i++) {
        if (!needs(n, i)) continue;
        tg_tensor *other;
        if (!unpack(n, n->iparam[SLOT_A + 1 - i], &other)) return bw_fail(gin, 2);
        gin[i] = reduce_to_input(n, i, tg__mul(n->site, gout[0], other));
        tg__tensor_release(other);
        if (!gin[i]) return bw_fail(gin, 2);
    }
    return TG_OK;
}

/* d(a/b): g/b and -g*a/b^2. */
static tg_status div_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *g = gout[0], *a = NULL, *b = NULL;
    if (!unpack(n, n->iparam[SLOT_B], &b)) return bw_fail(gin, 2);
    if (needs(n, 0)) {
        gin[0] = reduce_to_input(n, 0, tg__div(n->site, g, b));
        if (!gin[0]) goto fail;
    }
    if (needs(n, 1)) {
        if (!unpack(n, n->iparam[SLOT_A], &a)) goto fail;
        tg_tensor *t = like(n, g);
        if (t) t = tg__k_ok(tg__k_ternary(TG__TER_DIV_GRAD_B, t, g, a, b), t);
        gin[1] = reduce_to_input(n, 1, t);
        if (!gin[1]) goto fail;
    }
    tg__tensor_release(a);
    tg__tensor_release(b);
    return TG_OK;
fail:
    tg__tensor_release(a);
    tg__tensor_release(b);
    return bw_fail(gin, 2);
}

/* Gradients from the saved operands by a ternary formula each (maximum,
 * minimum, pow): op_a for input 0, op_b for input 1. */
static tg_status minmax_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin,
                                 tg__terop op_a, tg__terop op_b) {
    tg_tensor *a = NULL, *b = NULL;
    if (!unpack(n, n->iparam[SLOT_A], &a) || !unpack(n, n->iparam[SLOT_B], &b)) goto fail;
    for (int i = 0; i < 2; i++) {
        if (!needs(n, i)) continue;
        tg_tensor *t = like(n, gout[0]);
        if (t) t = tg__k_ok(tg__k_ternary(i == 0 ? op_a : op_b, t, gout[0], a, b), t);
        gin[i] = reduce_to_input(n, i, t);
        if (!gin[i]) goto fail;
    }
    tg__tensor_release(a);
    tg__tensor_release(b);
    return TG_OK;
fail:
    tg__tensor_release(a);
    tg__tensor_release(b);
    return bw_fail(gin, 2);
}

/* maximum: a gets g where a > b (or a is NaN), g/2 where a == b. */
static tg_status max_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return minmax_backward(n, gout, gin, TG__TER_GE_GRAD, TG__TER_LE_GRAD);
}
static tg_status min_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return minmax_backward(n, gout, gin, TG__TER_LE_GRAD, TG__TER_GE_GRAD);
}
/* d x = xlogy(g, y), 0 where x == 0 and y <= 0; d y = g x / y. */
static tg_status xlogy_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    return minmax_backward(n, gout, gin, TG__TER_XLOGY_GRAD_A, TG__TER_XLOGY_GRAD_B);
}
/* d base = b a^(b-1) g; d exponent = g r log(a) from the saved result r. */
static tg_status pow_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *a = NULL, *b = NULL, *r = NULL;
    if (!unpack(n, n->iparam[SLOT_A], &a) || !unpack(n, n->iparam[SLOT_B], &b) ||
        !unpack(n, n->iparam[SLOT_OUT], &r))
        goto fail;
    for (int i = 0; i < 2; i++) {
        if (!needs(n, i)) continue;
        tg_tensor *t = like(n, gout[0]);
        if (t) t = tg__k_ok(i == 0 ? tg__k_ternary(TG__TER_POW_GRAD_A, t, gout[0], a, b)
                                   : tg__k_ternary(TG__TER_POW_GRAD_B, t, gout[0], a, r), t);
        gin[i] = reduce_to_input(n, i, t);
        if (!gin[i]) goto fail;
    }
    tg__tensor_release(a);
    tg__tensor_release(b);
    tg__tensor_release(r);
    return TG_OK;
fail:
    tg__tensor_release(a);
    tg__tensor_release(b);
    tg__tensor_release(r);
    return bw_fail(gin, 2);
}

/* ---- where ----------------------------------------------------------------- */

static tg_status where_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static const tg__op_def WHERE_DEF = {"WhereBackward", where_backward, false, NULL};

/* The node's inputs are (a, b) only: cond never gets a gradient, so it is not
 * an edge of the graph; it is saved (slot iparam[SLOT_COND]) for the backward mask. */
static tg_tensor *where_on(tg_site s, tg_tensor *c, tg_tensor *a, tg_tensor *b);

tg_tensor *tg__where(tg_site s, tg_tensor *c, tg_tensor *a, tg_tensor *b) {
    const char *who = "tg_where";
    if (tg__null_arg(c, who, "cond") || tg__null_arg(a, who, "a") || tg__null_arg(b, who, "b"))
        return NULL;
    tg_tensor *cab[3] = {c, a, b}, *owned[3], *conv[2] = {NULL, NULL};
    if (!tg__promote_scalars(s, 3, cab, owned)) return NULL;
    tg_tensor *out = NULL;
    /* a and b promoted as PyTorch's where does (where(mask, x, 0-d f64) keeps x's f32) */
    if (tg__same_device(who, 3, (const tg_tensor *const *)cab) &&
        tg__convert_operands(s, tg__result_type(2, cab + 1), 2, cab + 1, conv)) {
        out = where_on(s, cab[0], cab[1], cab[2]);
        tg__release_promoted(2, conv);
    }
    tg__release_promoted(3, owned);
    return out;
}

static tg_tensor *where_on(tg_site s, tg_tensor *c, tg_tensor *a, tg_tensor *b) {
    const char *who = "tg_where";
    const tg_tensor *cab[3] = {c, a, b};
    if (!tg__same_device(who, 3, cab)) return NULL;
    int nd;
    int64_t shape[TG_MAX_DIMS];
    if (tg__broadcast_shapes(who, a->ndim, a->shape, b->ndim, b->shape, &nd, shape) != TG_OK)
        return NULL;
    if (tg__broadcast_shapes(who, c->ndim, c->shape, nd, shape, &nd, shape) != TG_OK)
        return NULL;
    tg_tensor *out = tg__new_output_on(s, who, a->storage->device, a->dtype, nd, shape);
    if (!out || !(out = tg__k_ok(tg__k_where(out, c, a, b), out))) return NULL;
    tg_tensor *in[2] = {a, b};
    if (!tg__needs_grad(2, in)) return out;
    tg__node *n = tg__record(s, &WHERE_DEF, 2, in, out);
    if (!n || (n->iparam[SLOT_COND] = tg__node_save(n, c, false, -1)) < 0) {
        tg__tensor_release(out);
        return NULL;
    }
    return out;
}

tg_tensor *tg_where_at(tg_site s, tg_tensor *cond, tg_tensor *a, tg_tensor *b) {
    return tg__ret(tg__where(s, cond, a, b));
}

/* d(where(c, a, b)): where(c, g, 0) and where(c, 0, g). */
static tg_status where_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    tg_tensor *c;
    if (!unpack(n, n->iparam[SLOT_COND], &c)) return bw_fail(gin, 2);
    for (int i = 0; i < 2; i++) {
        if (!needs(n, i)) continue;
        tg_tensor *t = like(n, gout[0]);
        if (t) t = tg__k_ok(tg__k_where(t, c, i == 0 ? gout[0] : NULL, i == 0 ? NULL : gout[0]), t);
        gin[i] = reduce_to_input(n, i, t);
        if (!gin[i]) {
            tg__tensor_release(c);
            return bw_fail(gin, 2);
        }
    }
    tg__tensor_release(c);
    return TG_OK;
}

/* ---- dtype conversion ---------------------------------------------------------- */

static tg_status to_dtype_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);
static const tg__op_def TO_DTYPE_DEF = {"ToDtypeBackward", to_dtype_backward, false, NULL};

/* Between f32, f64 and bf16 it is differentiable (the gradient converted
 * back); to or from i64 or bool is allowed but records nothing (the result
 * never requires grad). */
tg_tensor *tg__to_dtype(tg_site s, tg_tensor *t, tg_dtype dt) {
    const char *who = "tg_to_dtype";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (tg_dtype_size(dt) == 0) return tg__fail(TG_ERR_DTYPE, "%s: invalid dtype %d", who, (int)dt);
    if (!check_device(who, t)) return NULL;
    if (dt == t->dtype) return tg_retain(t);
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, dt, t->ndim, t->shape);
    if (!out || !(out = tg__k_ok(tg__k_copy(out, t), out))) return NULL;
    if (tg__is_floating(dt) && tg__is_floating(t->dtype) && tg__needs_grad(1, &t) &&
        !tg__record(s, &TO_DTYPE_DEF, 1, &t, out)) {
        tg__tensor_release(out);
        return NULL;
    }
    return out;
}

tg_tensor *tg_to_dtype_at(tg_site s, tg_tensor *t, tg_dtype dt) {
    return tg__ret(tg__to_dtype(s, t, dt));
}

static tg_status to_dtype_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    gin[0] = tg__to_dtype(n->site, gout[0], n->in_meta[0].dtype);
    return gin[0] ? TG_OK : tg_last_status();
}
