/* kernels/cpu/elementwise.h - CPU elementwise kernels (unary, binary,
 * ternary, where) over broadcast, arbitrarily strided inputs.
 *
 * Contract: every kernel writes a CONTIGUOUS `out` whose shape is the
 * iteration shape; inputs are read in place (any strides, stride 0 for
 * broadcast dims) and must broadcast to out's shape (NumPy rules; the op
 * layer checks). No argument checks, no allocation, no errors: the caller
 * has validated dtypes and shapes. Inputs have out's dtype unless stated.
 * Work is split over OpenMP threads when out has >= TG__PAR_MIN elements.
 */
#ifndef TG_KERNELS_CPU_ELEMENTWISE_H
#define TG_KERNELS_CPU_ELEMENTWISE_H

#include "tg_internal.h"
#include "../kernel_ops.h"

/* Element count from which kernels run in parallel. */
#define TG__PAR_MIN 32768

/* out = op(x, p0, p1), x read with strides xs (elements, one per dim of out)
 * or, when xs is NULL, broadcast to out's shape. */
void tg__cpu_unary(tg__unop op, tg_tensor *out, const tg_tensor *x, const int64_t *xs,
                   double p0, double p1);

/* out = op(a, b, p0, p1), a and b broadcast to out's shape. */
void tg__cpu_binary(tg__binop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                    double p0, double p1);

/* out = op(g, a, b), all broadcast to out's shape. */
void tg__cpu_ternary(tg__terop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *a,
                     const tg_tensor *b);

/* out = c != 0 ? a : b, all broadcast to out's shape. c may have any dtype
 * (f32, f64, i64; NaN counts as true). a or b may be NULL, meaning 0. */
void tg__cpu_where(tg_tensor *out, const tg_tensor *c, const tg_tensor *a, const tg_tensor *b);

#endif
