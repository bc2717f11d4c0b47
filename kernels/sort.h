/* kernels/sort.h - the stable sort of one line, the single definition both
 * backends run (kernels/cpu/sort.c calls it on the CPU, kernels/cuda/sort.cu
 * in a GPU thread per line): argsort, sort and topk of ops/sort.c.
 *
 * Order (PyTorch's sort with stable=True): ascending, or descending; NaN is
 * larger than +inf (last ascending, first descending); -0.0 and +0.0 are
 * equal; equal elements keep their index order in both directions. i64 is
 * compared as i64 (exact beyond 2^53), bool as 0 < 1.
 *
 * The algorithm is a bottom-up merge sort of the positions 0..n-1: runs of
 * TG__SORT_RUN sorted by insertion, then merged pairwise, each pass from one
 * buffer into the other. Both buffers hold n positions and are the caller's
 * (a: the line of the i64 index output, b: workspace); the result ends in a.
 * O(n log n) comparisons, no recursion, no allocation.
 * Included by kernels/ only, after kernel.h. */
#ifndef TG_KERNELS_SORT_H
#define TG_KERNELS_SORT_H

#include <stdint.h>
#include <string.h>

#include "kernel.h"

#ifdef __CUDACC__
#define TG__SORT_FN static __host__ __device__ inline
#else
#define TG__SORT_FN static inline
#endif

#define TG__SORT_RUN 16 /* insertion-sorted run length before the merges */

/* The line being sorted: n elements of dtype dt at x + (off0 + j * st)
 * elements, and the direction. */
typedef struct tg__sort_line {
    const void *x;
    int dt;
    int64_t off0, st, n;
    bool desc;
} tg__sort_line;

/* A buffer of n positions, element j at p[j * st]. */
typedef struct tg__sort_buf {
    int64_t *p;
    int64_t st;
} tg__sort_buf;

/* Whether position i must come strictly before position j (never for equal
 * elements, so that a merge taking the left run on ties is stable). */
TG__SORT_FN bool tg__sort_before(const tg__sort_line *L, int64_t i, int64_t j) {
    const int64_t oi = L->off0 + i * L->st, oj = L->off0 + j * L->st;
    if (L->dt == TG_I64) {
        const int64_t a = ((const int64_t *)L->x)[oi], b = ((const int64_t *)L->x)[oj];
        return L->desc ? a > b : a < b;
    }
    if (L->dt == TG_BOOL) {
        const int a = ((const uint8_t *)L->x)[oi] != 0, b = ((const uint8_t *)L->x)[oj] != 0;
        return L->desc ? a > b : a < b;
    }
    double a, b;
    if (L->dt == TG_F32) {
        a = (double)((const float *)L->x)[oi];
        b = (double)((const float *)L->x)[oj];
    } else {
        a = ((const double *)L->x)[oi];
        b = ((const double *)L->x)[oj];
    }
    const bool an = a != a, bn = b != b;
    if (L->desc) return (an && !bn) || a > b; /* NaN first */
    return (!an && bn) || a < b;              /* NaN last */
}

/* Sorts the runs [lo, lo + TG__SORT_RUN) of positions in a by insertion. */
TG__SORT_FN void tg__sort_runs(const tg__sort_line *L, tg__sort_buf a) {
    for (int64_t lo = 0; lo < L->n; lo += TG__SORT_RUN) {
        const int64_t hi = lo + TG__SORT_RUN < L->n ? lo + TG__SORT_RUN : L->n;
        for (int64_t k = lo; k < hi; k++) {
            int64_t j = k;
            while (j > lo && tg__sort_before(L, k, a.p[(j - 1) * a.st])) {
                a.p[j * a.st] = a.p[(j - 1) * a.st];
                j--;
            }
            a.p[j * a.st] = k;
        }
    }
}

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi),
 * the left run first on ties. */
TG__SORT_FN void tg__sort_merge(const tg__sort_line *L, tg__sort_buf src, tg__sort_buf dst,
                                int64_t lo, int64_t mid, int64_t hi) {
    int64_t i = lo, j = mid;
    for (int64_t k = lo; k < hi; k++) {
        bool right = j < hi && (i >= mid || tg__sort_before(L, src.p[j * src.st],
                                                            src.p[i * src.st]));
        dst.p[k * dst.st] = right ? src.p[(j++) * src.st] : src.p[(i++) * src.st];
    }
}

/* a = the positions 0..n-1 of line L in sorted order (b: workspace of n). */
TG__SORT_FN void tg__sort_line_run(const tg__sort_line *L, tg__sort_buf a, tg__sort_buf b) {
    tg__sort_runs(L, a);
    tg__sort_buf src = a, dst = b;
    for (int64_t w = TG__SORT_RUN; w < L->n; w *= 2) {
        for (int64_t lo = 0; lo < L->n; lo += 2 * w) {
            const int64_t mid = lo + w < L->n ? lo + w : L->n;
            const int64_t hi = lo + 2 * w < L->n ? lo + 2 * w : L->n;
            tg__sort_merge(L, src, dst, lo, mid, hi);
        }
        tg__sort_buf t = src;
        src = dst;
        dst = t;
    }
    if (src.p != a.p)
        for (int64_t k = 0; k < L->n; k++) a.p[k * a.st] = src.p[k * src.st];
}

/* The element at position i of line L copied to element k of v (dtype L->dt,
 * element k at v + (voff0 + k * vst) elements): sort's values for the dtypes
 * without a gradient. */
TG__SORT_FN void tg__sort_put(const tg__sort_line *L, int64_t i, void *v, int64_t voff0,
                              int64_t vst, int64_t k) {
    const int64_t src = L->off0 + i * L->st, dst = voff0 + k * vst;
    if (L->dt == TG_F32) ((float *)v)[dst] = ((const float *)L->x)[src];
    else if (L->dt == TG_BOOL) ((uint8_t *)v)[dst] = ((const uint8_t *)L->x)[src];
    else if (L->dt == TG_I64) ((int64_t *)v)[dst] = ((const int64_t *)L->x)[src];
    else ((double *)v)[dst] = ((const double *)L->x)[src];
}

#endif
