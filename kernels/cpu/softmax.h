/* kernels/cpu/softmax.h - row-wise softmax / log-softmax over the last dim.
 *
 * Contract: x, g, y may have any strides (rows are read in place; a 0-d
 * tensor is one row of length 1); outputs (y in forward, dx in backward) are
 * fresh contiguous tensors of the same shape and dtype (f32 or f64). Rows are
 * numerically stable (the row max is subtracted); a row of all -inf gives NaN,
 * a -inf entry gives probability 0 (log-probability -inf), as in PyTorch. Row
 * sums are accumulated in double. Rows run in parallel (OpenMP) when the
 * tensor has at least TG__SOFTMAX_PAR_MIN elements. No argument checks.
 */
#ifndef TG_KERNELS_CPU_SOFTMAX_H
#define TG_KERNELS_CPU_SOFTMAX_H

#include <stdbool.h>

#include "tg_internal.h"

#define TG__SOFTMAX_PAR_MIN 32768

/* y = softmax(x) (or log_softmax(x) when log) along the last dim. */
void tg__cpu_softmax_forward(const tg_tensor *x, tg_tensor *y, bool is_log);

/* Given the forward output y and the upstream gradient g:
 *   softmax:     dx = y * (g - sum(g * y))
 *   log_softmax: dx = g - exp(y) * sum(g)          (sums along the last dim) */
void tg__cpu_softmax_backward(const tg_tensor *y, const tg_tensor *g, tg_tensor *dx, bool is_log);

#endif
