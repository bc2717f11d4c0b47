/* kernels/cpu/softmax.c - softmax / log-softmax along the last dim, forward
 * and backward (contract in softmax.h).
 *
 * One row at a time: max, then sum of exp(x - max) in double, then the write.
 * Inputs are read in place through their strides (row r starts at the C-order
 * offset of r over the leading dims, elements `inner` apart); outputs are
 * contiguous, row r at r * V.
 */
#include "softmax.h"

#include <math.h>

/* Row addressing of a tensor seen as N rows of length V (last dim). */
typedef struct rows {
    const char *base;
    int nlead;
    const int64_t *shape, *strides; /* [nlead] */
    int64_t inner;                  /* element stride along a row */
    size_t es;
} rows;

static rows rows_of(const tg_tensor *t) {
    rows r;
    r.base = tg__ptr(t);
    r.nlead = t->ndim > 0 ? t->ndim - 1 : 0;
    r.shape = t->shape;
    r.strides = t->strides;
    r.inner = t->ndim > 0 ? t->strides[t->ndim - 1] : 1;
    r.es = tg_dtype_size(t->dtype);
    return r;
}

static inline const void *row_ptr(const rows *r, int64_t i) {
    return r->base + (size_t)tg__offset_of(i, r->nlead, r->shape, r->strides) * r->es;
}

/* One row of each kernel for element type T (exp function EXP). */
#define TG__SOFTMAX_ROWS(T, EXP, SFX)                                                          \
    static void fwd_row_##SFX(const T *x, int64_t xs, T *y, int64_t V, bool is_log) {          \
        T m = (T)-INFINITY;                                                                    \
        for (int64_t j = 0; j < V; j++)                                                        \
            if (x[j * xs] > m)                                                                 \
                m = x[j * xs];                                                                 \
        double sum = 0.0;                                                                      \
        if (is_log) {                                                                          \
            for (int64_t j = 0; j < V; j++)                                                    \
                sum += (double)EXP(x[j * xs] - m);                                             \
            T ls = (T)log(sum);                                                                \
            for (int64_t j = 0; j < V; j++)                                                    \
                y[j] = (x[j * xs] - m) - ls;                                                   \
        } else {                                                                               \
            for (int64_t j = 0; j < V; j++) {                                                  \
                T e = EXP(x[j * xs] - m);                                                      \
                y[j] = e;                                                                      \
                sum += (double)e;                                                              \
            }                                                                                  \
            double inv = 1.0 / sum;                                                            \
            for (int64_t j = 0; j < V; j++)                                                    \
                y[j] = (T)((double)y[j] * inv);                                                \
        }                                                                                      \
    }                                                                                          \
    static void bwd_row_##SFX(const T *y, int64_t ys, const T *g, int64_t gs, T *dx,           \
                              int64_t V, bool is_log) {                                        \
        double acc = 0.0;                                                                      \
        if (is_log) {                                                                          \
            for (int64_t j = 0; j < V; j++)                                                    \
                acc += (double)g[j * gs];                                                      \
            T sg = (T)acc;                                                                     \
            for (int64_t j = 0; j < V; j++)                                                    \
                dx[j] = g[j * gs] - EXP(y[j * ys]) * sg;                                       \
        } else {                                                                               \
            for (int64_t j = 0; j < V; j++)                                                    \
                acc += (double)g[j * gs] * (double)y[j * ys];                                  \
            T dot = (T)acc;                                                                    \
            for (int64_t j = 0; j < V; j++)                                                    \
                dx[j] = y[j * ys] * (g[j * gs] - dot);                                         \
        }                                                                                      \
    }

TG__SOFTMAX_ROWS(float, expf, f32)
TG__SOFTMAX_ROWS(double, exp, f64)

/* Rows of length V of a tensor with these dims: (N, V); N = 0 when empty. */
static int64_t n_rows(const tg_tensor *t, int64_t *V) {
    *V = t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
    int64_t numel = tg__numel(t->ndim, t->shape);
    return *V > 0 ? numel / *V : 0;
}

void tg__cpu_softmax_forward(const tg_tensor *x, tg_tensor *y, bool is_log) {
    int64_t V, N = n_rows(x, &V);
    rows rx = rows_of(x);
    char *py = tg__ptr(y); // (N, V)
    size_t es = rx.es;
    bool f32 = x->dtype == TG_F32;
    bool par = N > 1 && N * V >= TG__SOFTMAX_PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const void *xr = row_ptr(&rx, r);
        void *yr = py + (size_t)(r * V) * es;
        if (f32)
            fwd_row_f32(xr, rx.inner, yr, V, is_log);
        else
            fwd_row_f64(xr, rx.inner, yr, V, is_log);
    }
}

void tg__cpu_softmax_backward(const tg_tensor *y, const tg_tensor *g, tg_tensor *dx, bool is_log) {
    int64_t V, N = n_rows(y, &V);
    rows ry = rows_of(y), rg = rows_of(g);
    char *pdx = tg__ptr(dx); // (N, V)
    size_t es = ry.es;
    bool f32 = y->dtype == TG_F32;
    bool par = N > 1 && N * V >= TG__SOFTMAX_PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const void *yr = row_ptr(&ry, r), *gr = row_ptr(&rg, r);
        void *dr = pdx + (size_t)(r * V) * es;
        if (f32)
            bwd_row_f32(yr, ry.inner, gr, rg.inner, dr, V, is_log);
        else
            bwd_row_f64(yr, ry.inner, gr, rg.inner, dr, V, is_log);
    }
}
