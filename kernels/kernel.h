/* kernels/kernel.h - the kernel interface: what the core (tape/) asks of a
 * backend, and the little a backend asks of the core.
 *
 * Kernels see plain descriptors (tg__arr: device pointer to element 0,
 * dtype, shape, strides in elements), never tensors, storages or graph
 * nodes. One table per device (tg__backend) lists the device runtime
 * (memory, host copies, properties) and every kernel; the core picks the
 * table of the tensors' device (tg__backend_of) and calls through it, so
 * nothing above this header knows which backends exist. The CPU table is
 * kernels/cpu/backend.c; the CUDA table kernels/cuda/backend.c, or, in a
 * build without the CUDA backend, kernels/cuda/stub.c, whose every entry
 * answers TG_ERR_DEVICE.
 *
 * Contract shared by every kernel entry:
 *  - inputs are described over the output's shape (broadcasting already
 *    applied: stride 0 for a broadcast dim), unless the entry says otherwise;
 *  - outputs may have any non-overlapping strides unless the entry says
 *    "contiguous";
 *  - the return is TG_OK or the error the kernel recorded with tg__k_fail
 *    (TG_ERR_NOMEM for workspace, TG_ERR_CUDA naming the failing launch or
 *    library call). CPU kernels fail only for workspace.
 *
 * Plain C, included by the .cu files too (C++): this header includes only
 * the public headers.
 */
#ifndef TG_KERNEL_H
#define TG_KERNEL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tapegrad/dtype.h"
#include "tapegrad/cuda.h" /* tg_cuda_alloc_fn, tg_cuda_free_fn: plain function types */
#include "tapegrad/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG__K_MAX_DIMS TG_MAX_DIMS

/* ---- the elementwise formulas (one definition for both backends) ---------
 *
 * Each list entry is X(NAME, ...) with C expressions that both backends
 * instantiate for float and for double (T): the CPU row kernels
 * (kernels/cpu/elementwise.c) and the CUDA kernels (kernels/cuda/
 * elementwise.cu) expand the same lists, so an op has one formula. Names in
 * the expressions: x, y (operands), g (the upstream gradient), s (the tensor
 * a unary op saved: its input or its output, per the SAVES column), p0, p1
 * (scalar parameters), all of type T. Math through the TGM_ macros below.
 *
 * Unary ops: X(NAME, forward(x, p0, p1), backward(g, s, p0, p1), SAVES)
 * with SAVES one of TG__SAVES_NONE, TG__SAVES_INPUT, TG__SAVES_OUTPUT.
 * Adding a unary op is one line here, one table entry in ops/unary.c,
 * its declaration in include/tapegrad/ops.h and its docs/api.md entry
 * (docs/design.md, "Adding an op"). */
#define TG__UNARY_OPS(X)                                                            \
    X(NEG, -x, -g, TG__SAVES_NONE)                                                  \
    X(EXP, TGM_EXP(x), g * s, TG__SAVES_OUTPUT)                                     \
    X(LOG, TGM_LOG(x), g / s, TG__SAVES_INPUT)                                      \
    X(SCALE, x * p0, g * p0, TG__SAVES_NONE)                                        \
    X(ADDS, x + p0, g, TG__SAVES_NONE)                                              \
    X(CLAMP,                                                                        \
      (p0 != p0 || p1 != p1) ? p0 + p1 /* a NaN bound: NaN */                       \
                             : ((x < p0 ? p0 : x) > p1 ? p1 : (x < p0 ? p0 : x)),   \
      (s >= p0 && s <= p1) ? g : (T)0, TG__SAVES_INPUT)                                                              \
    X(SQRT, TGM_SQRT(x), g * (T)0.5 / s, TG__SAVES_OUTPUT)                          \
    X(RSQRT, (T)1 / TGM_SQRT(x), g * (T)-0.5 * s * s * s, TG__SAVES_OUTPUT)         \
    X(ABS, TGM_FABS(x), g * TG__SGN(s), TG__SAVES_INPUT)                             \
    X(SIGN, TG__SGN(x), TG__ZERO_GRAD, TG__SAVES_NONE)                               \
    X(SQUARE, x * x, g * (T)2 * s, TG__SAVES_INPUT)                                  \
    X(POW, TG__POW(x, p0), p0 == 0 ? (T)0 : g * (p0 * TG__POW(s, p0 - (T)1)),        \
      TG__SAVES_INPUT)                                                              \
    X(LOG1P, TGM_LOG1P(x), g / (s + (T)1), TG__SAVES_INPUT)                          \
    X(EXPM1, TGM_EXPM1(x), g * (s + (T)1), TG__SAVES_OUTPUT)                         \
    X(SIGMOID, TG__SIGMOID(x), g * ((T)1 - s) * s, TG__SAVES_OUTPUT)                 \
    X(LOGSIGMOID, (x < 0 ? x : (T)0) - TGM_LOG1P(TGM_EXP(-TGM_FABS(x))),            \
      g * (s < 0 ? (T)1 - TG__LOGSIG_Q(s) : TG__LOGSIG_Q(s)), TG__SAVES_INPUT)      \
    X(SOFTPLUS, x * p0 > p1 ? x : TGM_LOG1P(TGM_EXP(x * p0)) / p0,                   \
      s * p0 > p1 ? g : g * TGM_EXP(s * p0) / (TGM_EXP(s * p0) + (T)1),               \
      TG__SAVES_INPUT)                                                              \
    X(TANH, TGM_TANH(x), g * ((T)1 - s * s), TG__SAVES_OUTPUT)                       \
    X(RELU, x < 0 ? (T)0 : x, s <= 0 ? (T)0 : g, TG__SAVES_OUTPUT)                   \
    X(GELU, x * (T)0.5 * ((T)1 + TGM_ERF(x * (T)TG__SQRT1_2)),                       \
      g * ((T)0.5 * ((T)1 + TGM_ERF(s * (T)TG__SQRT1_2)) +                          \
           s * ((T)TG__INV_SQRT_2PI * TGM_EXP(s * s * (T)-0.5))),                    \
      TG__SAVES_INPUT)                                                              \
    X(GELU_TANH, (T)0.5 * x * ((T)1 + TGM_TANH(TG__GELU_INNER(x))),                  \
      g * ((T)0.5 * ((T)1 + TGM_TANH(TG__GELU_INNER(s))) +                          \
           (T)0.5 * s * ((T)1 - TGM_TANH(TG__GELU_INNER(s)) * TGM_TANH(TG__GELU_INNER(s))) * \
               ((T)TG__SQRT_2_PI * ((T)1 + (T)3 * (T)0.044715 * s * s))),            \
      TG__SAVES_INPUT)                                                              \
    X(SILU, x / ((T)1 + TGM_EXP(-x)),                                               \
      g * TG__SIGMOID(s) * ((T)1 + s * ((T)1 - TG__SIGMOID(s))), TG__SAVES_INPUT)     \
    X(RECIPROCAL, (T)1 / x, -g * (s * s), TG__SAVES_OUTPUT)                          \
    X(FLOOR, TGM_FLOOR(x), TG__ZERO_GRAD, TG__SAVES_NONE)                            \
    X(CEIL, TGM_CEIL(x), TG__ZERO_GRAD, TG__SAVES_NONE)                              \
    X(ROUND, TGM_RINT(x), TG__ZERO_GRAD, TG__SAVES_NONE)

/* Helpers of the unary formulas (type T as above). */
#define TG__SGN(v) ((T)(((v) > 0) - ((v) < 0))) /* 0 for 0, -0 and NaN, as PyTorch */
#define TG__ZERO_GRAD ((void)g, (void)s, (T)0)  /* zeros even where g is NaN, as PyTorch */
#define TG__SIGMOID(v) ((T)1 / ((T)1 + TGM_EXP(-(v))))
#define TG__LOGSIG_Q(v) (TGM_EXP(-TGM_FABS(v)) / ((T)1 + TGM_EXP(-TGM_FABS(v))))
/* x ** e as PyTorch computes it: exact forms for 2, 3, -1, -2, 0.5 and -0.5
 * (so (-0) ** 0.5 is -0 and (-inf) ** 0.5 NaN, as sqrt gives), else pow */
#define TG__POW(v, e)                                                               \
    ((e) == (T)2      ? (v) * (v)                                                    \
     : (e) == (T)3    ? (v) * (v) * (v)                                              \
     : (e) == (T)-1   ? (T)1 / (v)                                                   \
     : (e) == (T)-2   ? (T)1 / ((v) * (v))                                           \
     : (e) == (T)0.5  ? TGM_SQRT(v)                                                  \
     : (e) == (T)-0.5 ? (T)1 / TGM_SQRT(v)                                           \
                      : TGM_POW(v, e))
#define TG__SQRT1_2 0.70710678118654752440      /* 1 / sqrt(2) */
#define TG__INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */
#define TG__SQRT_2_PI 0.79788456080286535588    /* sqrt(2 / pi) */
#define TG__GELU_INNER(v) ((T)TG__SQRT_2_PI * ((v) + (T)0.044715 * (v) * (v) * (v)))

/* Binary ops: X(NAME, forward(x, y, p0, p1)). Their gradients are formulas
 * of ops/elementwise.c built from these and the ternary helpers. */
#define TG__BINARY_OPS(X)                                                           \
    X(ADD, x + y)                                                                   \
    X(SUB, x - y)                                                                   \
    X(MUL, x * y)                                                                   \
    X(DIV, x / y)                                                                   \
    X(MAX, (x > y || x != x) ? x : y) /* NaN in x kept, NaN in y taken */           \
    X(MIN, (x < y || x != x) ? x : y)                                               \
    X(POW, TGM_POW(x, y))                                                           \
    X(REMAINDER, TG__FLOAT2(tg__remainder, x, y))                                   \
    X(FLOOR_DIVIDE, TG__FLOAT2(tg__floor_divide, x, y))                             \
    X(XLOGY, (y != y) ? y : (x == 0 ? (T)0 : x * TGM_LOG(y)))

/* Ternary gradient helpers: X(NAME, f(g, x, y)). */
#define TG__TERNARY_OPS(X)                                                          \
    X(GE_GRAD, x == y ? g * (T)0.5 : (x < y ? (T)0 : g)) /* max: d/dx, min: d/dy */ \
    X(LE_GRAD, x == y ? g * (T)0.5 : (x > y ? (T)0 : g)) /* max: d/dy, min: d/dx */ \
    X(DIV_GRAD_B, -g * x / (y * y))                                                 \
    /* pow, as PyTorch. d/d base (x base, y exponent): 0 where the exponent is  \
     * 0. d/d exponent (x base, y the result): result * log(base), 0 where the  \
     * base is 0 and the exponent >= 0, i.e. where the result is then 0 or 1 */   \
    X(POW_GRAD_A, y == 0 ? (T)0 : g * (y * TGM_POW(x, y - (T)1)))                   \
    X(POW_GRAD_B, (x == 0 && (y == 0 || y == 1)) ? (T)0 : g * (y * TGM_LOG(x)))     \
    X(REMAINDER_GRAD_B, -g * TG__FLOAT2(tg__floor_divide, x, y)) /* PyTorch's */     \
    /* xlogy, as PyTorch: d/dx xlogy(g, y), 0 where x == 0 and y <= 0; d/dy g x / y */ \
    X(XLOGY_GRAD_A, (x == 0 && y <= 0) ? (T)0                                        \
                    : (y != y) ? y : (g == 0 ? (T)0 : g * TGM_LOG(y)))               \
    X(XLOGY_GRAD_B, g * x / y)

/* Exact ops, no gradient (ops/compare.c, ops/intarith.c). Operands of one
 * dtype T; x, y, p0, p1 of type T (the unary ones ignore y: backends pass x
 * twice). Names of integer formulas as above.
 *
 * Tests: X(NAME, formula for float and double, formula for int64_t and
 * uint8_t (bool)); the result is bool (uint8_t 0 or 1). NaN compares as C
 * (and PyTorch) do: unequal to everything, itself included; as a truth value
 * NaN is true (NaN != 0). */
#define TG__TEST_OPS(X)                                                             \
    X(EQ, x == y, x == y)                                                           \
    X(NE, x != y, x != y)                                                           \
    X(LT, x < y, x < y)                                                             \
    X(LE, x <= y, x <= y)                                                           \
    X(GT, x > y, x > y)                                                             \
    X(GE, x >= y, x >= y)                                                           \
    X(AND, x != 0 && y != 0, x != 0 && y != 0)                                      \
    X(OR, x != 0 || y != 0, x != 0 || y != 0)                                       \
    X(XOR, (x != 0) != (y != 0), (x != 0) != (y != 0))                              \
    X(NOT, x == 0, x == 0)                                                          \
    X(ISNAN, x != x, 0)                                                             \
    X(ISINF, x == x && x - x != 0, 0)                                               \
    X(ISFINITE, x - x == 0, 1)

/* Integer arithmetic on i64, X(NAME, formula): wraps around on overflow as
 * PyTorch does (computed through uint64_t: no undefined behaviour), never
 * divides by 0 or INT64_MIN by -1 (the ops refuse a zero divisor before the
 * kernel runs; the kernel gives 0 there). remainder and floor_divide round
 * toward -inf (Python's and PyTorch's rules: the remainder has the divisor's
 * sign). clamp: p0 = min, p1 = max (min > max gives max, as PyTorch). */
#define TG__INT_OPS(X)                                                              \
    X(ADD, (int64_t)((uint64_t)x + (uint64_t)y))                                    \
    X(SUB, (int64_t)((uint64_t)x - (uint64_t)y))                                    \
    X(MUL, (int64_t)((uint64_t)x * (uint64_t)y))                                    \
    X(MAX, x > y ? x : y)                                                           \
    X(MIN, x < y ? x : y)                                                           \
    X(REMAINDER, (y == 0 || y == -1) ? 0                                            \
                 : (x % y != 0 && ((x % y < 0) != (y < 0))) ? x % y + y : x % y)     \
    X(FLOOR_DIVIDE, y == 0 ? 0                                                      \
                    : y == -1 ? (int64_t)(0 - (uint64_t)x)                          \
                    : x / y - (int64_t)(x % y != 0 && ((x % y < 0) != (y < 0))))     \
    X(NEG, (int64_t)(0 - (uint64_t)x))                                              \
    X(ABS, x < 0 ? (int64_t)(0 - (uint64_t)x) : x)                                  \
    X(SIGN, (int64_t)((x > 0) - (x < 0)))                                           \
    X(CLAMP, (x < p0 ? p0 : x) > p1 ? p1 : (x < p0 ? p0 : x))                       \
    X(POW, tg__ipow(x, y))

#ifdef __CUDACC__
#define TG__K_FN static __host__ __device__ inline
#else
#define TG__K_FN static inline
#endif
/* x ** y on i64 as PyTorch computes it: by squaring, wrapping around on
 * overflow; a negative exponent gives 1 for the base 1, -1 or 1 for the
 * base -1 (odd or even exponent), 0 for any other base (0 ** -1 too). */
TG__K_FN int64_t tg__ipow(int64_t x, int64_t y) {
    if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x, e = (uint64_t)y;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* PyTorch's float remainder and floor division (its CPU kernels' rules, so
 * the results agree bit for bit): the remainder has the divisor's sign (x
 * itself for an infinite divisor of its sign), and the floor division is
 * (x - remainder) / y rounded to the nearest integer, a signed 0 where that
 * is 0, and x / y (inf or NaN) for a zero divisor. */
#define TG__FLOAT_PAIR(NAME, T, FMOD, FLOOR, COPYSIGN)                              \
    TG__K_FN T NAME##_remainder(T x, T y) {                                         \
        T m = FMOD(x, y);                                                           \
        return (m != 0 && ((y < 0) != (m < 0))) ? m + y : m;                        \
    }                                                                               \
    TG__K_FN T NAME##_floor_divide(T x, T y) {                                      \
        if (y == 0) return x / y;                                                   \
        T m = FMOD(x, y);                                                           \
        T d = (x - m) / y;                                                          \
        if (m != 0 && ((y < 0) != (m < 0))) d -= (T)1;                              \
        if (d == 0) return COPYSIGN((T)0, x / y);                                   \
        T f = FLOOR(d);                                                             \
        return d - f > (T)0.5 ? f + (T)1 : f;                                       \
    }
TG__FLOAT_PAIR(tg__f, float, fmodf, floorf, copysignf)
TG__FLOAT_PAIR(tg__d, double, fmod, floor, copysign)
/* f(x, y) for the formulas' type T (float or double). */
#define TG__FLOAT2(f, x, y)                                                         \
    (sizeof(T) == sizeof(float) ? (T)f##_f((float)(x), (float)(y))                  \
                                : (T)f##_d((double)(x), (double)(y)))
#define tg__remainder_f tg__f_remainder
#define tg__remainder_d tg__d_remainder
#define tg__floor_divide_f tg__f_floor_divide
#define tg__floor_divide_d tg__d_floor_divide

/* Reductions along one dim and scans (kernels/line.h has their definitions). */
typedef enum tg__redop {
    TG__RED_MAX, TG__RED_MIN, TG__RED_LOGSUMEXP, TG__RED_PROD, TG__RED_ANY, TG__RED_ALL,
    TG__RED_NOP
} tg__redop;
typedef enum tg__scanop {
    TG__SCAN_CUMSUM, TG__SCAN_REV_CUMSUM, TG__SCAN_CUMPROD, TG__SCAN_CUMPROD_GRAD,
    TG__SCAN_PROD_GRAD, TG__SCAN_DISC_REV, TG__SCAN_DISC_FWD, TG__SCAN_NOP
} tg__scanop;

enum { TG__SAVES_NONE = 0, TG__SAVES_INPUT, TG__SAVES_OUTPUT };

#define TG__UN_CODE(NAME, ...) TG__UN_##NAME,
#define TG__BIN_CODE(NAME, ...) TG__BIN_##NAME,
#define TG__TER_CODE(NAME, ...) TG__TER_##NAME,
#define TG__TEST_CODE(NAME, ...) TG__TEST_##NAME,
#define TG__INT_CODE(NAME, ...) TG__INT_##NAME,
typedef enum tg__unop { TG__UNARY_OPS(TG__UN_CODE) TG__UN_NOP } tg__unop;
typedef enum tg__binop { TG__BINARY_OPS(TG__BIN_CODE) TG__BIN_NOP } tg__binop;
typedef enum tg__terop { TG__TERNARY_OPS(TG__TER_CODE) TG__TER_NOP } tg__terop;
typedef enum tg__testop { TG__TEST_OPS(TG__TEST_CODE) TG__TEST_NOP } tg__testop;
typedef enum tg__intop { TG__INT_OPS(TG__INT_CODE) TG__INT_NOP } tg__intop;
/* TG__UN_SAVES_EXP etc.: what each unary op saves, as a constant. */
#define TG__UN_SAVES(NAME, FWD, BWD, SAVES) TG__UN_SAVES_##NAME = SAVES,
enum { TG__UNARY_OPS(TG__UN_SAVES) TG__UN_SAVES_NOP_ };

/* Type-generic math for the formulas: C++ (the .cu files) has overloads,
 * C picks the float or double function. */
#ifdef __cplusplus
#define TGM_EXP(v) exp(v)
#define TGM_LOG(v) log(v)
#define TGM_SQRT(v) sqrt(v)
#define TGM_FABS(v) fabs(v)
#define TGM_LOG1P(v) log1p(v)
#define TGM_EXPM1(v) expm1(v)
#define TGM_TANH(v) tanh(v)
#define TGM_ERF(v) erf(v)
#define TGM_FLOOR(v) floor(v)
#define TGM_CEIL(v) ceil(v)
#define TGM_RINT(v) rint(v)
#define TGM_POW(v, e) pow(v, e)
#else
#define TGM_EXP(v) _Generic((v), float: expf, default: exp)(v)
#define TGM_LOG(v) _Generic((v), float: logf, default: log)(v)
#define TGM_SQRT(v) _Generic((v), float: sqrtf, default: sqrt)(v)
#define TGM_FABS(v) _Generic((v), float: fabsf, default: fabs)(v)
#define TGM_LOG1P(v) _Generic((v), float: log1pf, default: log1p)(v)
#define TGM_EXPM1(v) _Generic((v), float: expm1f, default: expm1)(v)
#define TGM_TANH(v) _Generic((v), float: tanhf, default: tanh)(v)
#define TGM_ERF(v) _Generic((v), float: erff, default: erf)(v)
#define TGM_FLOOR(v) _Generic((v), float: floorf, default: floor)(v)
#define TGM_CEIL(v) _Generic((v), float: ceilf, default: ceil)(v)
#define TGM_RINT(v) _Generic((v), float: rintf, default: rint)(v) /* half to even */
#define TGM_POW(v, e) _Generic((v), float: powf, default: pow)(v, e)
#endif

/* ---- descriptors ---------------------------------------------------------- */


typedef struct tg__arr {
    void *data;                       /* element (0, ..., 0); NULL: see the entry */
    int dtype;                        /* a tg_dtype */
    int ndim;
    int64_t shape[TG__K_MAX_DIMS];
    int64_t strides[TG__K_MAX_DIMS];  /* elements; 0 for a broadcast dim */
} tg__arr;

/* A batch of (rows, cols) matrices: matrix i (C-order index over the batch
 * shape) starts at data + sum_d idx_d * bs[d] elements; element (r, c) of a
 * matrix is at r * rs + c * cs. */
typedef struct tg__mat {
    void *data;
    int64_t rows, cols;
    int64_t rs, cs;
    int64_t bs[TG__K_MAX_DIMS];       /* batch strides (0: the same matrix for all) */
} tg__mat;

/* The first row the fused log-prob kernels refuse: a non-ignored row whose
 * logits are all -inf or contain NaN or +inf. */
typedef struct tg__lpe_bad {
    int64_t row;    /* -1 if none */
    int64_t col;    /* first offending column, -1 when all entries are -inf,
                       TG__LPE_COL_UNKNOWN when the backend does not say */
    double value;   /* its value (NaN or +inf) */
} tg__lpe_bad;
#define TG__LPE_COL_UNKNOWN (-2)

/* ---- the table ------------------------------------------------------------ */

/* The kernel entries of a backend, each once: X(name, (parameters)), all
 * returning tg_status. The table's fields (tg__backend), the CPU's and the
 * CUDA backend's tables (every entry `name` is tg__cpu_name / tg__cuda_name)
 * and the stub of a build without CUDA are all made from this list, so that
 * an entry cannot be missing from one of them. */
#define TG__KERNELS(X)                                                                         \
    /* Elementwise (the formulas above). An operand with data NULL in where                    \
     * reads as 0. unary_grad: out = the backward formula of unary op `op`                     \
     * for upstream g and saved s (s data NULL when the op saves nothing). */                  \
    X(unary, (int op, const tg__arr *out, const tg__arr *x, double p0, double p1))             \
    X(unary_grad, (int op, const tg__arr *out, const tg__arr *g, const tg__arr *s,             \
          double p0, double p1))                                                               \
    X(binary, (int op, const tg__arr *out, const tg__arr *a, const tg__arr *b, double p0,      \
          double p1))                                                                          \
    X(ternary, (int op, const tg__arr *out, const tg__arr *g, const tg__arr *a,                \
          const tg__arr *b))                                                                   \
    /* out = c != 0 ? a : b (out any dtype, a and b of out's dtype, c any                      \
     * dtype, NaN is true; a or b data NULL = 0) */                                            \
    X(where, (const tg__arr *out, const tg__arr *c, const tg__arr *a, const tg__arr *b))       \
    /* The exact ops above: test (out bool; a and b of one dtype, any) and                     \
     * int_op (out, a, b i64; p0, p1 clamp's bounds). */                                       \
    X(test, (int op, const tg__arr *out, const tg__arr *a, const tg__arr *b))                  \
    X(int_op, (int op, const tg__arr *out, const tg__arr *a, const tg__arr *b, int64_t p0,     \
          int64_t p1))                                                                         \
    /* out = src, converting dtypes (f32/f64/i64/bool all ways; to i64                         \
     * truncating, saturating, NaN -> 0; to bool: != 0, NaN -> true) */                        \
    X(copy, (const tg__arr *out, const tg__arr *src))                                          \
    X(accumulate, (const tg__arr *out, const tg__arr *src)) /* out += src */                   \
    X(fill, (const tg__arr *out, double v))                                                    \
    /* out (contiguous, numel = product of x's kept dims in C order) = scale *                 \
     * sum of x over the dims with red[d]; x over its own shape. With out i64                  \
     * (x i64 or bool; scale 1) the sum is exact, wrapping around on overflow. */              \
    X(sum_reduce, (const tg__arr *out, const tg__arr *x, const bool *red, double scale))       \
    /* Along dim `dim` of x (over its own shape, any strides, ndim >= 1),                      \
     * one line per position of the other dims (C order), kernels/line.h's                     \
     * algorithms. reduce_dim: out (x's dtype, or bool for ANY/ALL) and idx                    \
     * (i64) contiguous over x's shape without dim; either may have data NULL                  \
     * (not wanted). scan: out contiguous with x's shape; g (gradient scans)                   \
     * over x's shape, any strides (PROD_GRAD: stride 0 along dim); gamma the                  \
     * discount of the DISC scans (0 for the others). */                                       \
    X(reduce_dim, (int op, const tg__arr *out, const tg__arr *idx, const tg__arr *x,           \
          int dim))                                                                            \
    X(scan, (int op, const tg__arr *out, const tg__arr *x, const tg__arr *g, int dim,          \
          double gamma))                                                                       \
    /* Rows are the last dim of x (0-d: one row of length 1); y, g and dx                      \
     * have x's shape, any strides (the ops move another dim last as a                         \
     * permuted view of every operand). */                                                     \
    X(softmax_forward, (const tg__arr *x, const tg__arr *y, bool is_log))                      \
    X(softmax_backward, (const tg__arr *y, const tg__arr *g, const tg__arr *dx,                \
          bool is_log))                                                                        \
    /* t (..., V) and index (..., J) i64 with t's leading shape, each over its                 \
     * own shape; out / dt contiguous. find_bad: *bad = the first C-order                      \
     * position of an index outside [0, V), -1 if none. backward: dt is                        \
     * zero-filled by the caller and accumulated into. forward takes t of                      \
     * any dtype (elements are moved by their size, never read as numbers);                    \
     * backward f32/f64. */                                                                    \
    X(gather_find_bad, (const tg__arr *index, int64_t V, int64_t *bad))                        \
    X(gather_forward, (const tg__arr *t, const tg__arr *index, void *out))                     \
    X(gather_backward, (const tg__arr *g, const tg__arr *index, void *dt, int64_t V))          \
    /* Along dim `dim` of x (f32, f64, i64 or bool; over its own shape, any                    \
     * strides, ndim >= 1), kernels/sort.h's stable order: idx (i64) and val                   \
     * (x's dtype; data NULL: not wanted) contiguous with x's shape get, line                  \
     * by line, the positions along dim in sorted order and the elements                       \
     * there. Workspace: 8 bytes per element of x. */                                          \
    X(argsort, (const tg__arr *idx, const tg__arr *val, const tg__arr *x, int dim,             \
          bool descending))                                                                    \
    /* c[i] = a[i] @ b[i] over the nb-dim batch shape bshape, or, with                         \
     * `reduce`, c = sum_i a[i] @ b[i] (b's gradient for a shared weight).                     \
     * With `accumulate` the product is added to c (BLAS's beta = 1).                          \
     * Any strides; the backend packs what its library cannot read. */                         \
    X(matmul, (int dtype, int nb, const int64_t *bshape, const tg__mat *a, const tg__mat *b,   \
          const tg__mat *c, bool reduce, bool accumulate))                                     \
    /* The fused log-prob / entropy op (ops/logprob.c has the formulas). z                     \
     * (..., V) over its own shape, any strides; y the targets over z's                        \
     * leading shape, contiguous i64; lp, H (may be NULL), stats (nstat doubles                \
     * per row, may be NULL) contiguous. A target outside [0, V) that is not                   \
     * `ignore` has no target term (lp 0, no one-hot in backward): the rows                    \
     * of a vocabulary block that does not hold their target. A bad row stops                  \
     * the forward and is reported in *bad (nothing else is meaningful                         \
     * then). chunk: rows per block on the CPU (results are bitwise the                        \
     * same for every chunk). */                                                               \
    X(lpe_forward, (const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,          \
          int64_t chunk, void *lp, void *H, double *stats, int nstat, tg__lpe_bad *bad))       \
    X(lpe_check_rows, (const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,       \
          tg__lpe_bad *bad))                                                                   \
    /* g_lp / g_H / g_lse over z's leading shape, data NULL for zero (g_lse:                   \
     * the upstream of the row log-sum-exp of z / T, which adds g_lse p / T);                  \
     * dz contiguous. */                                                                       \
    X(lpe_backward, (const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,         \
          int64_t chunk, const double *stats, int nstat, const tg__arr *g_lp,                  \
          const tg__arr *g_H, const tg__arr *g_lse, void *dz, int dz_dtype))

#define TG__KERNEL_FIELD(name, params) tg_status(*name) params;

typedef struct tg__backend {
    const char *name; /* "cpu", "cuda" */
    bool compiled_in; /* false for the stub of a build without the backend */

    /* Runtime. The CPU's memory is managed by the core (tape/alloc.c): its
     * alloc/free and copies are NULL. */
    int (*device_count)(void);                  /* usable devices, asked once */
    const char *(*unavailable_reason)(void);    /* why device_count() is 0 */
    tg_status (*alloc)(void **p, size_t nbytes);
    void (*free)(void *p, size_t nbytes);
    size_t (*cached_bytes)(void);
    tg_status (*empty_cache)(void);
    tg_status (*copy_h2d)(void *dst, const void *src_host, size_t nbytes);
    tg_status (*copy_d2h)(void *dst_host, const void *src, size_t nbytes);
    tg_status (*get_props)(char *name, size_t name_len, double *peak_bw, size_t *total,
                           size_t *free_b, int *sms);
    tg_status (*synchronize)(void);

    /* The kernels: TG__KERNELS above (elementwise, copies, reductions,
     * softmax, gather, sort, matmul, the fused log-prob / entropy op). */
    TG__KERNELS(TG__KERNEL_FIELD)

    /* The instruction set the fused log-prob kernels run ("avx512", "avx2",
     * "base") and whether their backward streams long rows past the caches;
     * NULL where there is no such choice (CUDA). */
    const char *(*kernel_variant)(void);
    bool (*stream_stores)(void);

    /* Whether matmul takes dtype TG_BF16: a and b bf16, c f32, every sum
     * in f32 (the GPU's tensor cores), with no f32 copy of an operand.
     * Backends without it (false) are never called with TG_BF16. */
    bool matmul_bf16;
    /* Whether f32 matmuls may round their operands to TF32 (10 mantissa
     * bits, f32 sums: PyTorch's allow_tf32); NULL where there is no such
     * mode (the CPU). Process-wide, default off. */
    void (*set_allow_tf32)(bool allow);
    /* The stream every later kernel, GEMM and copy runs on (NULL: the
     * legacy default stream); changing it waits for the old stream's work
     * first. NULL entries where there are no streams (the CPU). */
    tg_status (*set_stream)(void *stream);
    void *(*get_stream)(void);
    /* Where device blocks come from: alloc/free_fn (both non-NULL; called
     * with the block's bytes, the stream and ctx) or, both NULL, the
     * backend's own allocator; only called while the backend has no live
     * block. NULL where memory is the host's (the CPU). */
    tg_status (*set_allocator)(tg_cuda_alloc_fn alloc, tg_cuda_free_fn free_fn, void *ctx);

    /* Whether the three lpe entries take bf16 z: read as it is, every sum
     * and lp / H / the upstream gradients in f32, dz in bf16; and, for f32
     * z, a bf16 dz (dz_dtype TG_BF16: the gradient rounded as written, the
     * linear op's GEMM operand). Backends
     * without it (false) are never given bf16 z (the core converts rows to
     * f32 first). */
    bool lpe_bf16;
} tg__backend;

extern const tg__backend tg__cpu_backend;
extern const tg__backend tg__cuda_backend; /* the stub without the CUDA backend */

/* ---- collectives -------------------------------------------------------------
 * One table per kind of communicator: MPI (kernels/cpu/comm_mpi.c, host
 * buffers) and NCCL (kernels/cuda/comm_nccl.c, device buffers). A build
 * without the library has the same table with compiled_in false, whose
 * entries answer TG_ERR_COMM. Each entry returns TG_OK or TG_ERR_COMM with a
 * message naming the failing call. Collective entries must be called by
 * every rank with the same sizes. */
typedef struct tg__comm_impl {
    const char *name;  /* "MPI", "NCCL" */
    bool compiled_in;
    int device;        /* the tg_device its buffers live on */
    /* MPI: arg0 points to an MPI_Comm (duplicated: collective); NCCL: arg0 is
     * an ncclComm_t, arg1 a cudaStream_t */
    tg_status (*create)(const void *arg0, void *arg1, void **handle, int *rank, int *size);
    tg_status (*destroy)(void *handle);
    /* every rank's `bytes` bytes of send, in rank order, into recv
     * (size x bytes) */
    tg_status (*allgather)(void *handle, const void *send, void *recv, size_t bytes);
    /* buf (count elements, f32 or f64) summed over the ranks, in place, the
     * same bits on every rank */
    tg_status (*allreduce_sum)(void *handle, void *buf, size_t count, int dtype);
} tg__comm_impl;

extern const tg__comm_impl tg__comm_mpi;
extern const tg__comm_impl tg__comm_nccl;

/* The table of a build without the library: every entry answers
 * TG_ERR_COMM with `why`. */
#define TG__COMM_STUB(var, NAME, DEVICE, why)                                               \
    static tg_status stub_none_(void) { return tg__k_fail(TG_ERR_COMM, "%s", why); }     \
    static tg_status stub_create_(const void *a0, void *a1, void **h, int *r, int *s) {     \
        (void)a0, (void)a1, (void)h, (void)r, (void)s;                                      \
        return stub_none_();                                                                \
    }                                                                                       \
    static tg_status stub_destroy_(void *h) {                                               \
        (void)h;                                                                            \
        return stub_none_();                                                                \
    }                                                                                       \
    static tg_status stub_allgather_(void *h, const void *s, void *r, size_t b) {           \
        (void)h, (void)s, (void)r, (void)b;                                                 \
        return stub_none_();                                                                \
    }                                                                                       \
    static tg_status stub_allreduce_(void *h, void *b, size_t c, int d) {                   \
        (void)h, (void)b, (void)c, (void)d;                                                 \
        return stub_none_();                                                                \
    }                                                                                       \
    const tg__comm_impl var = {NAME, false, DEVICE, stub_create_, stub_destroy_,            \
                               stub_allgather_, stub_allreduce_}

/* ---- what a kernel may ask for: a failure's reason, workspace ----------------
 * Kernels call nothing above them. They record why they failed and get
 * workspace through these (kernels/services.c), which forward to the
 * services the core installs once, before any kernel can run
 * (tg__kernel_services_install): the core records the reason as the
 * thread's error and counts workspace in its accounting. */
typedef struct tg__kernel_services {
    tg_status (*fail)(tg_status st, const char *reason); /* records; returns st */
    void *(*workspace)(tg_device dev, size_t nbytes);    /* NULL: TG_ERR_NOMEM recorded */
    void (*workspace_free)(tg_device dev, void *p, size_t nbytes);
} tg__kernel_services;
void tg__kernel_services_install(const tg__kernel_services *s);
/* The formatted reason (cut at 4 KiB) as the thread's error; returns st. */
tg_status tg__k_fail(tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* nbytes of workspace on dev (counted; 0 gives a valid pointer), and its
 * release with the same nbytes. NULL with TG_ERR_NOMEM recorded. */
void *tg__k_workspace(tg_device dev, size_t nbytes);
void tg__k_workspace_free(tg_device dev, void *p, size_t nbytes);

/* ---- small shared helpers --------------------------------------------------- */

/* Bytes per element of dt (4, 8, 8, 1, 2; 0 for an invalid value). */
static inline size_t tg__k_dtype_size(int dt) {
    switch (dt) {
    case TG_F32: return 4;
    case TG_F64: return 8;
    case TG_I64: return 8;
    case TG_BOOL: return 1;
    case TG_BF16: return 2;
    }
    return 0;
}

static inline int64_t tg__k_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Element offset of C-order linear index lin in (ndim, shape, strides). */
static inline int64_t tg__k_offset_of(int64_t lin, int ndim, const int64_t *shape,
                                      const int64_t *strides) {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t i = lin % shape[d];
        lin /= shape[d];
        off += i * strides[d];
    }
    return off;
}

/* True when a's elements are in C order with no gap (size-1 dims ignored). */
static inline bool tg__k_contiguous(const tg__arr *a) {
    int64_t expect = 1;
    if (tg__k_numel(a->ndim, a->shape) == 0) return true;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] != 1 && a->strides[d] != expect) return false;
        expect *= a->shape[d];
    }
    return true;
}

/* double -> i64 without undefined behaviour: truncates toward zero,
 * saturates out-of-range values, NaN -> 0. */
static inline int64_t tg__to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* bfloat16 <-> f32: round to nearest even, NaN kept quiet with its sign;
 * back exactly. From double: through f32 (as PyTorch). */
static inline uint16_t tg__f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float tg__bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Threads are used above this many elements. */
#define TG__PAR_MIN 32768

#ifdef __cplusplus
}
#endif
#endif
