/* kernels/cpu/gather.h - gather along the last dim and its scatter-add.
 *
 * Contract: t (..., V) f32/f64, index (..., J) i64 with t's leading sizes,
 * both with any strides (0-d tensors are one row of length 1). The ops check
 * shapes and dtypes; tg__cpu_gather_find_bad() must have returned -1 before
 * the other two run (they do not bounds-check). Outputs are contiguous.
 */
#ifndef TG_KERNELS_CPU_GATHER_H
#define TG_KERNELS_CPU_GATHER_H

#include "tg_internal.h"

/* Linear (C-order) position of the first entry of index outside [0, V), or
 * -1 when every entry is in range. */
int64_t tg__cpu_gather_find_bad(const tg_tensor *index, int64_t V);

/* out[..., j] = t[..., index[..., j]]; out contiguous with index's shape. */
void tg__cpu_gather_forward(const tg_tensor *t, const tg_tensor *index, tg_tensor *out);

/* dt[..., index[..., j]] += g[..., j]; dt contiguous with t's shape (the
 * caller zero-fills it), g with index's shape, any strides. */
void tg__cpu_gather_backward(const tg_tensor *g, const tg_tensor *index, tg_tensor *dt);

#endif
