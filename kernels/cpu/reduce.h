/* kernels/cpu/reduce.h - CPU sum reductions over any set of dims, any input
 * strides, accumulated in double.
 *
 * Contract: no argument checks, no allocation, no errors. Results are
 * deterministic: they do not depend on the number of threads.
 */
#ifndef TG_KERNELS_CPU_REDUCE_H
#define TG_KERNELS_CPU_REDUCE_H

#include <stdbool.h>

#include "tg_internal.h"

/* out = scale * (sum of x over the dims d with red[d] true).
 * x: f32/f64, any strides (stride 0 allowed), red: x->ndim flags.
 * out: f32/f64 (may differ from x's dtype), contiguous, its elements are the
 * kept positions of x in C order (out's shape is x's shape with the reduced
 * dims removed or set to 1, possibly with extra leading size-1 dims).
 * Accumulation is in double: pairwise along contiguous/strided rows, blocked
 * across rows. A reduction over 0 elements gives 0 * scale (NaN for a mean). */
void tg__cpu_sum_reduce(tg_tensor *out, const tg_tensor *x, const bool *red, double scale);

#endif
