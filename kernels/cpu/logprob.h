/* kernels/cpu/logprob.h - CPU kernels of the fused log-prob / entropy op
 * (the math is in include/tapegrad/logprob.h). */
#ifndef TG_KERNELS_CPU_LOGPROB_H
#define TG_KERNELS_CPU_LOGPROB_H

#include "tg_internal.h"

/* Where a forward pass found a row it cannot compute. */
typedef struct tg__lpe_bad {
    int64_t row;    /* -1 if none */
    int64_t col;    /* first offending column, -1 when all entries are -inf */
    double value;   /* its value (NaN or +inf) */
} tg__lpe_bad;

/* Forward over the N rows of z (..., V) (any strides), targets y (N)
 * contiguous, rows with y == ignore skipped (outputs 0, logits not read).
 * Writes lp (N) and, if H is non-NULL, H (N) in z's dtype (contiguous), and,
 * if stats is non-NULL, stats (N, nstat) f64: the row's max logit M, then
 * ls = log sum exp((z - M) * inv_t) (so lse = M * inv_t + ls), then the
 * entropy when nstat == 3. Rows are processed chunk rows at a
 * time (0 = all), each chunk split over the OpenMP threads; results do not
 * depend on the chunk size. Returns the lowest bad row (NaN or +inf entry, or
 * all -inf), with nothing meaningful written, or bad.row == -1. */
tg__lpe_bad tg__cpu_lpe_forward(const tg_tensor *z, const int64_t *y, int64_t ignore,
                                double inv_t, int64_t chunk, void *lp, void *H,
                                double *stats, int nstat);

/* Checks, without computing anything else, that every non-ignored row has no
 * NaN or +inf entry and at least one entry above -inf (after scaling by
 * inv_t). Returns the lowest bad row as tg__cpu_lpe_forward does. */
tg__lpe_bad tg__cpu_lpe_check_rows(const tg_tensor *z, const int64_t *y, int64_t ignore,
                                   double inv_t);

/* Backward: dz (N, V) contiguous in z's dtype receives
 *   (g_lp * (onehot(y) - p) - g_H * p * (x - lse + H)) * inv_t
 * with x = z * inv_t, p = exp(x - lse); rows with y == ignore get zeros.
 * stats as written by the forward. g_lp and g_H are tensors with z's leading
 * shape (any strides, z's dtype) or NULL for zero; g_H is used only when
 * nstat == 3. */
void tg__cpu_lpe_backward(const tg_tensor *z, const int64_t *y, int64_t ignore, double inv_t,
                          int64_t chunk, const double *stats, int nstat, const tg_tensor *g_lp,
                          const tg_tensor *g_H, tg_tensor *dz);

/* The single-precision exponential used by the f32 kernels, for d <= 0 (and
 * -inf); exposed so tests can measure its accuracy. */
float tg__cpu_exp_nonpos(float d);

#endif
