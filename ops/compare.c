/* ops/compare.c - comparisons, logic and the float predicates: eq, ne, lt, le,
 * gt, ge (tensor-tensor and tensor-scalar), logical_and/or/xor/not, isnan,
 * isinf, isfinite. Results are TG_BOOL and never require grad.
 *
 * Contract: operands of any dtype, any strides, broadcast as NumPy; a 0-d
 * CPU operand meets a CUDA tensor as in the arithmetic ops (ops/scalars.c).
 * Two tensors of different dtypes are compared in PyTorch's promoted dtype
 * (bool < i64 < f32 < f64); a scalar is converted to the tensor's dtype,
 * except a non-integer scalar against an i64 or bool tensor, which compares
 * in f32 as PyTorch does (its default float dtype). The logic ops read each
 * operand as a truth value (non-zero, NaN included, is true). The kernels
 * are kernels/kernel.h's TG__TEST_OPS. On failure nothing is leaked and NULL
 * is returned with the error set. */
#include <math.h>

#include "ops_internal.h"

/* PyTorch's promotion order of the four dtypes. */
static int rank(tg_dtype dt) {
    switch (dt) {
    case TG_BOOL: return 0;
    case TG_I64: return 1;
    case TG_F32: return 2;
    default: return 3;
    }
}

/* out (bool, the broadcast shape) = op(a, b), both already of one dtype and
 * on one device. */
static tg_tensor *test_same(tg_site s, const char *who, tg__testop op, tg_tensor *a,
                            tg_tensor *b) {
    int nd;
    int64_t shape[TG_MAX_DIMS];
    if (tg__broadcast_shapes(who, a->ndim, a->shape, b->ndim, b->shape, &nd, shape) != TG_OK)
        return NULL;
    tg_tensor *out = tg__new_output_on(s, who, a->storage->device, TG_BOOL, nd, shape);
    return out ? tg__k_ok(tg__k_test(op, out, a, b), out) : NULL;
}

/* Converts a and b to dtype dt (new references in *ca, *cb; no gradient is
 * recorded: the results of these ops are not differentiable). */
static bool convert_pair(tg_site s, tg_tensor *a, tg_tensor *b, tg_dtype dt, tg_tensor **ca,
                         tg_tensor **cb) {
    bool prev = tg_is_grad_enabled();
    tg_set_grad_enabled(false);
    *ca = tg__to_dtype(s, a, dt);
    *cb = *ca ? tg__to_dtype(s, b, dt) : NULL;
    tg_set_grad_enabled(prev);
    if (*cb) return true;
    if (*ca) tg__tensor_release(*ca);
    *ca = NULL;
    return false;
}

/* The binary tests: checks, CPU scalars moved to the device, the operands
 * converted to one dtype (promoted, or bool for the logic ops). */
static tg_tensor *test_binary(tg_site s, const char *who, tg__testop op, tg_tensor *a,
                              tg_tensor *b) {
    if (tg__null_arg(a, who, "a") || tg__null_arg(b, who, "b")) return NULL;
    tg_tensor *ab[2] = {a, b}, *owned[2];
    if (!tg__promote_scalars(s, 2, ab, owned)) return NULL;
    tg_tensor *out = NULL;
    const tg_tensor *cab[2] = {ab[0], ab[1]};
    if (tg__same_device(who, 2, cab)) {
        bool logic = op == TG__TEST_AND || op == TG__TEST_OR || op == TG__TEST_XOR;
        tg_dtype dt = ab[0]->dtype;
        if (ab[0]->dtype != ab[1]->dtype)
            dt = logic ? TG_BOOL : rank(ab[0]->dtype) > rank(ab[1]->dtype) ? ab[0]->dtype
                                                                           : ab[1]->dtype;
        if (dt == ab[0]->dtype && dt == ab[1]->dtype) {
            out = test_same(s, who, op, ab[0], ab[1]);
        } else {
            tg_tensor *ca, *cb;
            if (convert_pair(s, ab[0], ab[1], dt, &ca, &cb)) {
                out = test_same(s, who, op, ca, cb);
                tg__tensor_release(ca);
                tg__tensor_release(cb);
            }
        }
    }
    tg__release_promoted(2, owned);
    return out;
}

/* t op v: v as a 0-d tensor of t's dtype on t's device, or t in f32 for a
 * non-integer v against an integer or bool t. */
tg_tensor *tg__test_scalar(tg_site s, const char *who, tg__testop op, tg_tensor *t, double v) {
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    bool integral = isfinite(v) && v == floor(v) && fabs(v) < 9223372036854775808.0;
    tg_tensor *tt = NULL;
    if (!tg__is_float(t->dtype) && !integral) {
        bool prev = tg_is_grad_enabled();
        tg_set_grad_enabled(false);
        tt = tg__to_dtype(s, t, TG_F32);
        tg_set_grad_enabled(prev);
        if (!tt) return NULL;
    } else {
        tt = tg_retain(t);
    }
    tg_tensor *out = NULL;
    /* bool vs an integer other than 0 and 1: compare as i64 (true == 2 is false) */
    tg_tensor *lhs = tt;
    if (tt->dtype == TG_BOOL && v != 0 && v != 1) {
        bool prev = tg_is_grad_enabled();
        tg_set_grad_enabled(false);
        lhs = tg__to_dtype(s, tt, TG_I64);
        tg_set_grad_enabled(prev);
    }
    tg_tensor *sc = lhs ? tg__scalar_like(s, lhs, v) : NULL;
    if (sc) out = test_same(s, who, op, lhs, sc);
    tg__tensor_release(sc);
    if (lhs && lhs != tt) tg__tensor_release(lhs);
    tg__tensor_release(tt);
    return out;
}

static tg_tensor *test_unary(tg_site s, const char *who, tg__testop op, tg_tensor *t) {
    if (tg__null_arg(t, who, "t") || !tg__same_device(who, 1, (const tg_tensor *const *)&t))
        return NULL;
    return test_same(s, who, op, t, t);
}

#define TEST_BINARY(NAME, OP)                                                     \
    tg_tensor *tg_##NAME##_at(tg_site s, tg_tensor *a, tg_tensor *b) {            \
        return tg__ret(test_binary(s, "tg_" #NAME, OP, a, b));                    \
    }
#define TEST_SCALAR(NAME, OP)                                                     \
    tg_tensor *tg_##NAME##_scalar_at(tg_site s, tg_tensor *t, double v) {         \
        return tg__ret(tg__test_scalar(s, "tg_" #NAME "_scalar", OP, t, v));         \
    }
#define TEST_UNARY(NAME, OP)                                                      \
    tg_tensor *tg_##NAME##_at(tg_site s, tg_tensor *t) {                          \
        return tg__ret(test_unary(s, "tg_" #NAME, OP, t));                        \
    }

TEST_BINARY(eq, TG__TEST_EQ)
TEST_BINARY(ne, TG__TEST_NE)
TEST_BINARY(lt, TG__TEST_LT)
TEST_BINARY(le, TG__TEST_LE)
TEST_BINARY(gt, TG__TEST_GT)
TEST_BINARY(ge, TG__TEST_GE)
TEST_SCALAR(eq, TG__TEST_EQ)
TEST_SCALAR(ne, TG__TEST_NE)
TEST_SCALAR(lt, TG__TEST_LT)
TEST_SCALAR(le, TG__TEST_LE)
TEST_SCALAR(gt, TG__TEST_GT)
TEST_SCALAR(ge, TG__TEST_GE)
TEST_BINARY(logical_and, TG__TEST_AND)
TEST_BINARY(logical_or, TG__TEST_OR)
TEST_BINARY(logical_xor, TG__TEST_XOR)
TEST_UNARY(logical_not, TG__TEST_NOT)
TEST_UNARY(isnan, TG__TEST_ISNAN)
TEST_UNARY(isinf, TG__TEST_ISINF)
TEST_UNARY(isfinite, TG__TEST_ISFINITE)
