/* ops/intarith.c - arithmetic on i64 tensors, as PyTorch does it on integer
 * tensors: tg_add, tg_sub, tg_mul, tg_maximum, tg_minimum of two i64 tensors
 * and tg_neg, tg_abs, tg_sign, tg_square, tg_clamp, tg_scale, tg_add_scalar,
 * tg_floor/ceil/round of one come here (ops/elementwise.c, ops/unary.c), and
 * tg_remainder / tg_floor_divide live here. Never differentiable (the results
 * do not require grad), wrap around on overflow as PyTorch, and never divide
 * by zero: a zero divisor is refused before the kernel runs (PyTorch's CPU
 * raises ZeroDivisionError there). Kernels: kernels/kernel.h's TG__INT_OPS.
 * On failure nothing is leaked and NULL is returned with the error set. */
#include <math.h>
#include <stdlib.h>

#include "ops_internal.h"

static bool integral(double v) {
    return isfinite(v) && v == floor(v) && fabs(v) < 9223372036854775808.0;
}

/* An index of b that holds 0, or -1 (-2 with the error set on failure). */
static int64_t find_zero(const tg_tensor *b) {
    int64_t n = tg__numel(b->ndim, b->shape);
    if (n == 0) return -1;
    int64_t *v = malloc((size_t)n * sizeof *v); // (n)
    if (!v) return tg__set_error(TG_ERR_NOMEM, "out of host memory reading the divisor"), -2;
    if (tg_copy_out(b, TG_I64, v, (size_t)n * sizeof *v) != TG_OK) {
        free(v);
        return -2;
    }
    int64_t at = -1;
    for (int64_t i = 0; i < n && at < 0; i++)
        if (v[i] == 0) at = i;
    free(v);
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
    if ((op == TG__INT_REMAINDER || op == TG__INT_FLOOR_DIVIDE) && tg__numel(nd, shape) > 0) {
        int64_t z = find_zero(b);
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

/* A clamp bound: -inf / +inf are no bound; otherwise an integer. */
static bool bound(const char *who, double v, int64_t *out) {
    if (v == -INFINITY) *out = INT64_MIN;
    else if (v == INFINITY) *out = INT64_MAX;
    else if (integral(v)) *out = (int64_t)v;
    else return tg__set_error(TG_ERR_VALUE, "%s: bound %g is not an integer, and t is i64", who, v),
                false;
    return true;
}

tg_tensor *tg__int_unary(tg_site s, const char *who, tg__unop code, tg_tensor *t, double p0,
                         double p1) {
    tg__intop op;
    int64_t lo = 0, hi = 0;
    switch (code) {
    case TG__UN_NEG: op = TG__INT_NEG; break;
    case TG__UN_ABS: op = TG__INT_ABS; break;
    case TG__UN_SIGN: op = TG__INT_SIGN; break;
    case TG__UN_SQUARE: return tg__int_binary(s, who, TG__INT_MUL, t, t);
    case TG__UN_SCALE: return with_scalar(s, who, TG__INT_MUL, t, p0);
    case TG__UN_ADDS: return with_scalar(s, who, TG__INT_ADD, t, p0);
    case TG__UN_FLOOR:
    case TG__UN_CEIL:
    case TG__UN_ROUND: return tg__clone(s, t); /* integers already: a copy, as PyTorch */
    case TG__UN_CLAMP:
        if (!bound(who, p0, &lo) || !bound(who, p1, &hi)) return NULL;
        op = TG__INT_CLAMP;
        break;
    default:
        return tg__fail(TG_ERR_DTYPE, "%s: dtype i64 is not supported (f32 or f64 required; "
                        "convert with tg_to_dtype)", who);
    }
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, TG_I64, t->ndim, t->shape);
    return out ? tg__k_ok(tg__k_int_op(op, out, t, t, lo, hi), out) : NULL;
}

static tg_tensor *divide(tg_site s, const char *who, tg__intop op, tg_tensor *a, tg_tensor *b) {
    if (tg__null_arg(a, who, "a") || tg__null_arg(b, who, "b")) return NULL;
    tg_tensor *ab[2] = {a, b}, *owned[2];
    if (!tg__promote_scalars(s, 2, ab, owned)) return NULL;
    tg_tensor *out = tg__int_binary(s, who, op, ab[0], ab[1]);
    tg__release_promoted(2, owned);
    return out;
}

tg_tensor *tg_remainder_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(divide(s, "tg_remainder", TG__INT_REMAINDER, a, b));
}
tg_tensor *tg_floor_divide_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(divide(s, "tg_floor_divide", TG__INT_FLOOR_DIVIDE, a, b));
}
