/* ops/intarith.c - arithmetic on i64 (and bool) tensors, as PyTorch does it
 * on integer tensors: tg_add, tg_sub, tg_mul, tg_maximum, tg_minimum, tg_pow
 * of two i64 tensors and every unary op of one i64 or bool tensor come here
 * (ops/elementwise.c, ops/unary.c): integer results where PyTorch keeps the
 * integer dtype (neg, abs, sign, square, relu, clamp, scale / add_scalar /
 * pow_scalar by an integer, rounding), f32 where it promotes to its default
 * float (exp, log, sqrt, sigmoid, tanh, ..., a fractional constant), refusals
 * where it refuses (neg of a bool, gelu of an integer); and tg_remainder /
 * tg_floor_divide of two i64 tensors. Never differentiable (the results
 * do not require grad), wrap around on overflow as PyTorch, and never divide
 * by zero: a zero divisor is refused before the kernel runs (PyTorch's CPU
 * raises ZeroDivisionError there). Kernels: kernels/kernel.h's TG__INT_OPS.
 * On failure nothing is leaked and NULL is returned with the error set. */
#include <math.h>

#include "ops_internal.h"

static bool integral(double v) {
    return isfinite(v) && v == floor(v) && fabs(v) < 9223372036854775808.0;
}

/* An index (C order) of b's first 0, or -1; -2 with the error set on failure.
 * On b's device: mask = (b == 0), any(mask), and only when there is one its
 * argmax; two one-element reads come to the host, never the divisor. */
static int64_t find_zero(tg_site s, const char *who, tg_tensor *b) {
    int64_t n = tg__k_numel(b->ndim, b->shape);
    if (n == 0) return -1;
    tg_device dev = b->storage->device;
    tg_tensor *zero = tg__scalar_like(s, b, 0.0);
    tg_tensor *mask = zero ? tg__tensor_new_on(s, who, dev, TG_BOOL, b->ndim, b->shape,
                                               TG_MEM_WORKSPACE)
                           : NULL;
    if (mask) mask = tg__k_ok(tg__k_test(TG__TEST_EQ, mask, b, zero), mask);
    tg_tensor *flat = mask ? tg__reshape(s, mask, 1, &n) : NULL; // (n)
    tg_tensor *any = flat ? tg__tensor_new_on(s, who, dev, TG_BOOL, 0, NULL, TG_MEM_WORKSPACE)
                          : NULL;
    if (any) any = tg__k_ok(tg__k_reduce_dim(TG__RED_ANY, any, NULL, flat, 0), any);
    bool found = false;
    int64_t at = -2;
    if (any && tg_copy_out(any, TG_BOOL, &found, sizeof found) == TG_OK) at = -1;
    tg_tensor *idx = at == -1 && found ? tg__tensor_new_on(s, who, dev, TG_I64, 0, NULL,
                                                            TG_MEM_WORKSPACE)
                                       : NULL;
    if (idx) idx = tg__k_ok(tg__k_reduce_dim(TG__RED_MAX, NULL, idx, flat, 0), idx);
    if (at == -1 && found && !(idx && tg_copy_out(idx, TG_I64, &at, sizeof at) == TG_OK)) at = -2;
    tg_tensor *temps[5] = {zero, mask, flat, any, idx};
    for (int i = 0; i < 5; i++)
        tg__tensor_release(temps[i]);
    return at;
}

tg_tensor *tg__int_binary(tg_site s, const char *who, tg__intop op, tg_tensor *a, tg_tensor *b) {
    const tg_tensor *ab[2] = {a, b};
    if (!tg__same_device(who, 2, ab)) return NULL;
    if (a->dtype != TG_I64 || b->dtype != TG_I64)
        return tg__fail(TG_ERR_DTYPE, "%s: operands have dtypes %s and %s (i64 and i64 required; "
                        "convert one with tg_to_dtype)", who, tg_dtype_name(a->dtype),
                        tg_dtype_name(b->dtype));
    int nd;
    int64_t shape[TG_MAX_DIMS];
    if (tg__broadcast_shapes(who, a->ndim, a->shape, b->ndim, b->shape, &nd, shape) != TG_OK)
        return NULL;
    /* a zero divisor is refused where a division happens: not for an empty result */
    if ((op == TG__INT_REMAINDER || op == TG__INT_FLOOR_DIVIDE) && tg__k_numel(nd, shape) > 0) {
        int64_t z = find_zero(s, who, b);
        if (z == -2) return NULL;
        if (z >= 0)
            return tg__fail(TG_ERR_VALUE, "%s: division by zero (element %lld of the divisor, in C "
                            "order, is 0)", who, (long long)z);
    }
    tg_tensor *out = tg__new_output_on(s, who, a->storage->device, TG_I64, nd, shape);
    return out ? tg__k_ok(tg__k_int_op(op, out, a, b, 0, 0), out) : NULL;
}

/* i64 t op the integer k (a 0-d tensor on t's device). */
static tg_tensor *with_scalar(tg_site s, const char *who, tg__intop op, tg_tensor *t, double k) {
    if (!integral(k))
        return tg__fail(TG_ERR_VALUE, "%s: %g is not an integer, and t is i64 (convert t with "
                        "tg_to_dtype for float arithmetic)", who, k);
    tg_tensor *sc = tg__scalar_like(s, t, k);
    if (!sc) return NULL;
    tg_tensor *out = tg__int_binary(s, who, op, t, sc);
    tg__tensor_release(sc);
    return out;
}

/* A clamp bound: -inf / +inf are no bound; otherwise an integer (false when
 * it is not one: the clamp is then done in f32, as PyTorch's float bounds). */
static bool bound(double v, int64_t *out) {
    if (v == -INFINITY) *out = INT64_MIN;
    else if (v == INFINITY) *out = INT64_MAX;
    else if (integral(v)) *out = (int64_t)v;
    else return false;
    return true;
}

/* The op on t converted to f32, PyTorch's default float (exp of an i64 tensor,
 * i64 * 2.5, a clamp with fractional bounds). */
static tg_tensor *in_f32(tg_site s, tg__unop code, tg_tensor *t, double p0, double p1) {
    tg_tensor *f = tg__to_dtype(s, t, TG_F32);
    tg_tensor *out = f ? tg__unary(s, code, f, p0, p1) : NULL;
    tg__tensor_release(f);
    return out;
}

/* The op on a bool t converted to i64 (bool * 2, bool squared, as PyTorch). */
static tg_tensor *in_i64(tg_site s, tg__unop code, tg_tensor *t, double p0, double p1) {
    tg_tensor *i = tg__to_dtype(s, t, TG_I64);
    tg_tensor *out = i ? tg__unary(s, code, i, p0, p1) : NULL;
    tg__tensor_release(i);
    return out;
}

static void *no_bool(const char *who) {
    return tg__fail(TG_ERR_DTYPE, "%s: dtype bool is not supported (as in PyTorch; convert with "
                    "tg_to_dtype)", who);
}

tg_tensor *tg__int_unary(tg_site s, const char *who, tg__unop code, tg_tensor *t, double p0,
                         double p1) {
    const bool b = t->dtype == TG_BOOL;
    tg__intop op;
    int64_t lo = 0, hi = 0;
    switch (code) {
    case TG__UN_EXP: case TG__UN_LOG: case TG__UN_SQRT: case TG__UN_RSQRT: case TG__UN_LOG1P:
    case TG__UN_EXPM1: case TG__UN_SIGMOID: case TG__UN_TANH: case TG__UN_RECIPROCAL:
        return in_f32(s, code, t, p0, p1); /* integers to the default float, as PyTorch */
    case TG__UN_POW:
        if (!integral(p0)) return in_f32(s, code, t, p0, p1);
        if (p0 < 0)
            return tg__fail(TG_ERR_VALUE, "%s: integers to negative integer powers are not "
                            "allowed (as in PyTorch): convert t with tg_to_dtype", who);
        if (b) return in_i64(s, code, t, p0, p1);
        return with_scalar(s, who, TG__INT_POW, t, p0);
    case TG__UN_SCALE:
    case TG__UN_ADDS:
        if (!integral(p0)) return in_f32(s, code, t, p0, p1);
        if (b) return in_i64(s, code, t, p0, p1);
        return with_scalar(s, who, code == TG__UN_SCALE ? TG__INT_MUL : TG__INT_ADD, t, p0);
    case TG__UN_SQUARE:
        if (b) return in_i64(s, code, t, p0, p1);
        return tg__int_binary(s, who, TG__INT_MUL, t, t);
    case TG__UN_SIGN:
        if (b) return tg__clone(s, t); /* a bool's sign is itself */
        op = TG__INT_SIGN;
        break;
    case TG__UN_NEG:
    case TG__UN_ABS:
        if (b) return no_bool(who);
        op = code == TG__UN_NEG ? TG__INT_NEG : TG__INT_ABS;
        break;
    case TG__UN_FLOOR:
    case TG__UN_CEIL:
    case TG__UN_ROUND:
        if (b) return no_bool(who);
        return tg__clone(s, t); /* integers already: a copy, as PyTorch */
    case TG__UN_RELU:
        if (b) return no_bool(who);
        op = TG__INT_CLAMP;
        lo = 0, hi = INT64_MAX;
        break;
    case TG__UN_CLAMP:
        if (!bound(p0, &lo) || !bound(p1, &hi)) return in_f32(s, code, t, p0, p1);
        if (b) return in_i64(s, code, t, p0, p1);
        op = TG__INT_CLAMP;
        break;
    default:
        return tg__fail(TG_ERR_DTYPE, "%s: dtype %s is not supported (f32 or f64 required, as "
                        "in PyTorch; convert with tg_to_dtype)", who, tg_dtype_name(t->dtype));
    }
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, TG_I64, t->ndim, t->shape);
    return out ? tg__k_ok(tg__k_int_op(op, out, t, t, lo, hi), out) : NULL;
}
