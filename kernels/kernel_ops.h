/* kernels/kernel_ops.h - the op codes shared by the CPU and CUDA elementwise
 * kernels (kernels/cpu/elementwise.c, kernels/cuda/elementwise.cu). Plain C,
 * also included by the .cu files (C++): one definition of what each code
 * computes, so both backends implement the same formula. */
#ifndef TG_KERNEL_OPS_H
#define TG_KERNEL_OPS_H

typedef enum tg__unop {
    TG__UN_NEG = 0,   /* -x */
    TG__UN_EXP,       /* exp(x) */
    TG__UN_LOG,       /* log(x) */
    TG__UN_SCALE,     /* x * p0 */
    TG__UN_ADDS,      /* x + p0 */
    TG__UN_CLAMP,     /* min(max(x, p0), p1), NaN propagates */
    TG__UN_NOP
} tg__unop;

typedef enum tg__binop {
    TG__BIN_ADD = 0,  /* a + b */
    TG__BIN_SUB,      /* a - b */
    TG__BIN_MUL,      /* a * b */
    TG__BIN_DIV,      /* a / b */
    TG__BIN_MAX,      /* (a > b || a != a) ? a : b   (NaN in a kept, NaN in b taken) */
    TG__BIN_MIN,      /* (a < b || a != a) ? a : b */
    TG__BIN_CLAMP_GRAD, /* p0 <= b <= p1 ? a : 0   (a = upstream grad, b = x) */
    TG__BIN_NOP
} tg__binop;

typedef enum tg__terop {
    /* out = f(g, a, b): gradient helpers of max/min/div. */
    TG__TER_GE_GRAD = 0, /* a == b ? g/2 : (a < b ? 0 : g)  (max: d/da, min: d/db) */
    TG__TER_LE_GRAD,     /* a == b ? g/2 : (a > b ? 0 : g)  (max: d/db, min: d/da) */
    TG__TER_DIV_GRAD_B,  /* -g * a / (b * b) */
    TG__TER_NOP
} tg__terop;

#endif
