/* kernels/cpu/softmax.c - softmax / log-softmax along the last dim, forward
 * and backward (contract in softmax.h).
 *
 * One row at a time: max, then sum of exp(x - max) in double, then the write.
 * Every operand is read or written in place through its strides (row r
 * starts at the C-order offset of r over the leading dims, elements `inner`
 * apart).
 */
#include "cpu.h"

#include <math.h>

/* One row of each kernel for element type T (exp function EXP). */
#define TG__SOFTMAX_ROWS(T, EXP, SFX)                                                           \
    static void fwd_row_##SFX(const T *x, int64_t xs, T *y, int64_t ys, int64_t V,              \
                              bool is_log) {                                                    \
        T m = (T)-INFINITY;                                                                     \
        for (int64_t j = 0; j < V; j++)                                                         \
            if (x[j * xs] > m)                                                                  \
                m = x[j * xs];                                                                  \
        double sum = 0.0;                                                                       \
        if (is_log) {                                                                           \
            for (int64_t j = 0; j < V; j++)                                                     \
                sum += (double)EXP(x[j * xs] - m);                                              \
            T ls = (T)log(sum);                                                                 \
            for (int64_t j = 0; j < V; j++)                                                     \
                y[j * ys] = (x[j * xs] - m) - ls;                                               \
        } else {                                                                                \
            for (int64_t j = 0; j < V; j++) {                                                   \
                T e = EXP(x[j * xs] - m);                                                       \
                y[j * ys] = e;                                                                  \
                sum += (double)e;                                                               \
            }                                                                                   \
            double inv = 1.0 / sum;                                                             \
            for (int64_t j = 0; j < V; j++)                                                     \
                y[j * ys] = (T)((double)y[j * ys] * inv);                                       \
        }                                                                                       \
    }                                                                                           \
    static void bwd_row_##SFX(const T *y, int64_t ys, const T *g, int64_t gs, T *dx,            \
                              int64_t ds, int64_t V, bool is_log) {                             \
        double acc = 0.0;                                                                       \
        if (is_log) {                                                                           \
            for (int64_t j = 0; j < V; j++)                                                     \
                acc += (double)g[j * gs];                                                       \
            T sg = (T)acc;                                                                      \
            for (int64_t j = 0; j < V; j++)                                                     \
                dx[j * ds] = g[j * gs] - EXP(y[j * ys]) * sg;                                   \
        } else {                                                                                \
            for (int64_t j = 0; j < V; j++)                                                     \
                acc += (double)g[j * gs] * (double)y[j * ys];                                   \
            T dot = (T)acc;                                                                     \
            for (int64_t j = 0; j < V; j++)                                                     \
                dx[j * ds] = y[j * ys] * (g[j * gs] - dot);                                     \
        }                                                                                       \
    }

TG__SOFTMAX_ROWS(float, expf, f32)
TG__SOFTMAX_ROWS(double, exp, f64)

tg_status tg__cpu_softmax_forward(const tg__arr *x, const tg__arr *y, bool is_log) {
    tg__rows rx = tg__rows_of(x), ry = tg__rows_of(y);
    const int64_t V = rx.len, N = rx.n;
    bool f32 = x->dtype == TG_F32;
    bool par = N > 1 && N * V >= TG__PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const void *xr = tg__row_ptr(&rx, r);
        void *yr = (void *)tg__row_ptr(&ry, r);
        if (f32)
            fwd_row_f32(xr, rx.inner, yr, ry.inner, V, is_log);
        else
            fwd_row_f64(xr, rx.inner, yr, ry.inner, V, is_log);
    }
    return TG_OK;
}

tg_status tg__cpu_softmax_backward(const tg__arr *y, const tg__arr *g, const tg__arr *dx,
                                   bool is_log) {
    tg__rows ry = tg__rows_of(y), rg = tg__rows_of(g), rd = tg__rows_of(dx);
    const int64_t V = ry.len, N = ry.n;
    bool f32 = y->dtype == TG_F32;
    bool par = N > 1 && N * V >= TG__PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const void *yr = tg__row_ptr(&ry, r), *gr = tg__row_ptr(&rg, r);
        void *dr = (void *)tg__row_ptr(&rd, r);
        if (f32)
            bwd_row_f32(yr, ry.inner, gr, rg.inner, dr, rd.inner, V, is_log);
        else
            bwd_row_f64(yr, ry.inner, gr, rg.inner, dr, rd.inner, V, is_log);
    }
    return TG_OK;
}
