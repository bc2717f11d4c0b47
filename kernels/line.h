/* kernels/line.h - the reductions along one dim and the scans, one line at a
 * time: the single definition both backends run (kernels/cpu/line.c calls
 * these on the CPU, kernels/cuda/line.cu in a GPU thread per line), so the
 * two differ only by their math libraries' rounding (exp, log) and the GPU's
 * fused multiply-adds.
 *
 * A line is n elements of x at off0, off0 + st, ... of dtype dt (read as
 * double: exact for f32, f64 and bool, and for the zero test of i64).
 * Accumulation is in double. Included by kernels/ only, after kernel.h. */
#ifndef TG_KERNELS_LINE_H
#define TG_KERNELS_LINE_H

#include <math.h>
#include <stdint.h>

#include "kernel.h"

#ifdef __CUDACC__
#define TG__LINE_FN static __host__ __device__ inline
#else
#define TG__LINE_FN static inline
#endif

TG__LINE_FN double tg__line_rd(const void *x, int dt, int64_t off) {
    if (dt == TG_F32) return (double)((const float *)x)[off];
    if (dt == TG_F64) return ((const double *)x)[off];
    if (dt == TG_BOOL) return (double)((const uint8_t *)x)[off];
    return (double)((const int64_t *)x)[off];
}

TG__LINE_FN void tg__line_wr(void *o, int dt, int64_t off, double v) {
    if (dt == TG_F32) ((float *)o)[off] = (float)v;
    else if (dt == TG_F64) ((double *)o)[off] = v;
    else if (dt == TG_BOOL) ((uint8_t *)o)[off] = v != 0.0;
    else ((int64_t *)o)[off] = (int64_t)v; /* the index outputs: always in range */
}

/* Reduces one line (n >= 1 for MAX and MIN; the ops refuse empty lines
 * there). *idx: MAX/MIN's index (the first NaN, else the first extreme
 * value, as PyTorch), 0 for the others.
 *   MAX/MIN: the value (NaN if the line has one).
 *   LOGSUMEXP: max + log(sum exp(x - max)); -inf for an empty or all -inf
 *     line, +inf when +inf is there, NaN with a NaN.
 *   PROD: the product (1 for an empty line). ANY/ALL: 1 or 0 (NaN is true). */
TG__LINE_FN double tg__line_reduce(int op, const void *x, int dt, int64_t off0, int64_t n,
                                   int64_t st, int64_t *idx) {
    *idx = 0;
    if (op == TG__RED_MAX || op == TG__RED_MIN || op == TG__RED_LOGSUMEXP) {
        double best = n > 0 ? tg__line_rd(x, dt, off0) : -INFINITY;
        int64_t bi = 0;
        bool is_max = op != TG__RED_MIN;
        for (int64_t j = 0; j < n && best == best; j++) {
            double v = tg__line_rd(x, dt, off0 + j * st);
            if (v != v || (is_max ? v > best : v < best)) {
                best = v;
                bi = j;
            }
        }
        *idx = bi;
        if (op != TG__RED_LOGSUMEXP || best != best || best == INFINITY || best == -INFINITY)
            return best;
        double s = 0.0;
        for (int64_t j = 0; j < n; j++) s += exp(tg__line_rd(x, dt, off0 + j * st) - best);
        return best + log(s);
    }
    if (op == TG__RED_PROD) {
        double p = 1.0;
        for (int64_t j = 0; j < n; j++) p *= tg__line_rd(x, dt, off0 + j * st);
        return p;
    }
    bool any = op == TG__RED_ANY; /* ANY: stop at a true; ALL: at a false */
    for (int64_t j = 0; j < n; j++)
        if ((tg__line_rd(x, dt, off0 + j * st) != 0.0) == any) return any ? 1.0 : 0.0;
    return any ? 0.0 : 1.0;
}

/* Scans one line into o (dtype odt, at ooff0 + j * ost): g (dtype gdt) is
 * read for the gradient scans only.
 *   CUMSUM: o_j = x_0 + ... + x_j.  REV_CUMSUM: o_j = x_j + ... + x_{n-1}
 *     (cumsum's backward, applied to g passed as x).
 *   CUMPROD: o_j = x_0 * ... * x_j.
 *   With o i64 (x i64 or bool), CUMSUM and CUMPROD are exact, wrapping
 *     around on overflow, as PyTorch.
 *   CUMPROD_GRAD: o_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k, the
 *     gradient of sum_j g_j cumprod(x)_j, without division (exact at zeros):
 *     o_i = P_{i-1} R_i with P the exclusive prefix product and
 *     R_i = g_i + x_{i+1} R_{i+1}.
 *   PROD_GRAD: the same with the upstream at the last element only (g_j for
 *     j < n - 1 not read): o_i = g prod_{k != i} x_k.
 *   DISC_REV: o_j = x_j + gamma o_{j+1} (the discounted return; o_{n-1} = x_{n-1}).
 *   DISC_FWD: o_j = x_j + gamma o_{j-1} (DISC_REV's backward, applied to g
 *     passed as x). */
TG__LINE_FN void tg__line_scan(int op, void *o, int odt, int64_t ooff0, int64_t ost,
                               const void *x, int dt, int64_t off0, int64_t st, const void *g,
                               int gdt, int64_t goff0, int64_t gst, int64_t n, double gamma) {
    if (op == TG__SCAN_DISC_REV || op == TG__SCAN_DISC_FWD) {
        double acc = 0.0;
        bool rev = op == TG__SCAN_DISC_REV;
        for (int64_t i = 0; i < n; i++) {
            int64_t j = rev ? n - 1 - i : i;
            acc = tg__line_rd(x, dt, off0 + j * st) + (i > 0 ? gamma * acc : 0.0);
            tg__line_wr(o, odt, ooff0 + j * ost, acc);
        }
        return;
    }
    if ((op == TG__SCAN_CUMSUM || op == TG__SCAN_CUMPROD) && odt == TG_I64) {
        uint64_t acc = op == TG__SCAN_CUMSUM ? 0 : 1;
        for (int64_t j = 0; j < n; j++) {
            int64_t off = off0 + j * st;
            uint64_t v = dt == TG_BOOL ? (uint64_t)(((const uint8_t *)x)[off] != 0)
                                       : (uint64_t)((const int64_t *)x)[off];
            acc = op == TG__SCAN_CUMSUM ? acc + v : acc * v;
            ((int64_t *)o)[ooff0 + j * ost] = (int64_t)acc;
        }
        return;
    }
    if (op == TG__SCAN_CUMSUM || op == TG__SCAN_CUMPROD) {
        double acc = op == TG__SCAN_CUMSUM ? 0.0 : 1.0;
        for (int64_t j = 0; j < n; j++) {
            double v = tg__line_rd(x, dt, off0 + j * st);
            acc = op == TG__SCAN_CUMSUM ? acc + v : acc * v;
            tg__line_wr(o, odt, ooff0 + j * ost, acc);
        }
        return;
    }
    if (op == TG__SCAN_REV_CUMSUM) {
        double acc = 0.0;
        for (int64_t j = n - 1; j >= 0; j--) {
            acc += tg__line_rd(x, dt, off0 + j * st);
            tg__line_wr(o, odt, ooff0 + j * ost, acc);
        }
        return;
    }
    /* CUMPROD_GRAD / PROD_GRAD: R from the end, kept in o (o's dtype) between
     * the two passes; then each times the exclusive prefix product. */
    double r = 0.0;
    for (int64_t i = n - 1; i >= 0; i--) {
        double gi = (op == TG__SCAN_CUMPROD_GRAD || i == n - 1)
                        ? tg__line_rd(g, gdt, goff0 + i * gst)
                        : 0.0;
        double xn = i + 1 < n ? tg__line_rd(x, dt, off0 + (i + 1) * st) : 0.0;
        r = gi + xn * r;
        tg__line_wr(o, odt, ooff0 + i * ost, r);
    }
    double p = 1.0;
    for (int64_t i = 0; i < n; i++) {
        double ri = tg__line_rd(o, odt, ooff0 + i * ost);
        tg__line_wr(o, odt, ooff0 + i * ost, p * ri);
        p *= tg__line_rd(x, dt, off0 + i * st);
    }
}

#endif
