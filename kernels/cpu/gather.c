/* kernels/cpu/gather.c - gather along the last dim and its scatter-add
 * (contract in kernels/kernel.h).
 *
 * Tensors are seen as rows over their leading dims: row r of a tensor starts
 * at the C-order offset of r over the leading dims (its strides), elements
 * along the last dim are `inner` apart. Rows run in parallel (OpenMP) when
 * there are many elements; the scatter-add is race-free because row r of the
 * gradient only receives row r of g.
 */
#include "cpu.h"

tg_status tg__cpu_gather_find_bad(const tg__arr *index, int64_t V, int64_t *bad) {
    tg__rows ri = tg__rows_of(index);
    int64_t N = ri.n, J = ri.len;
    int64_t first = INT64_MAX;
    bool par = N > 1 && N * J >= TG__PAR_MIN;
#pragma omp parallel for if (par) schedule(static) reduction(min : first)
    for (int64_t r = 0; r < N; r++) {
        const int64_t *ix = tg__row_ptr(&ri, r); // (J,) strided
        for (int64_t j = 0; j < J; j++) {
            int64_t v = ix[j * ri.inner];
            if (v < 0 || v >= V) {
                if (r * J + j < first)
                    first = r * J + j;
                break;
            }
        }
    }
    *bad = first == INT64_MAX ? -1 : first;
    return TG_OK;
}

/* Moves one row's elements (any dtype: copied as T, an unsigned type of the
 * element's size, never read as numbers). */
#define TG__GATHER_ROW(T)                                                          \
    do {                                                                           \
        const T *x = tg__row_ptr(&rt, r); /* (V,) strided */                       \
        T *o = (T *)po + r * J;           /* (J,) */                               \
        for (int64_t j = 0; j < J; j++) o[j] = x[ix[j * ri.inner] * rt.inner];     \
    } while (0)

tg_status tg__cpu_gather_forward(const tg__arr *t, const tg__arr *index, void *out) {
    tg__rows rt = tg__rows_of(t), ri = tg__rows_of(index);
    int64_t N = ri.n, J = ri.len;
    char *po = out; // (N, J)
    const size_t es = rt.es;
    bool par = N > 1 && N * J >= TG__PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const int64_t *ix = tg__row_ptr(&ri, r); // (J,) strided
        if (es == 8) TG__GATHER_ROW(uint64_t);
        else if (es == 4) TG__GATHER_ROW(uint32_t);
        else if (es == 2) TG__GATHER_ROW(uint16_t);
        else TG__GATHER_ROW(uint8_t);
    }
    return TG_OK;
}

tg_status tg__cpu_gather_backward(const tg__arr *g, const tg__arr *index, void *dt, int64_t V) {
    tg__rows rg = tg__rows_of(g), ri = tg__rows_of(index);
    int64_t N = ri.n, J = ri.len;
    char *pd = dt; // (N, V)
    bool f32 = g->dtype == TG_F32;
    bool par = N > 1 && N * J >= TG__PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const int64_t *ix = tg__row_ptr(&ri, r); // (J,) strided
        if (f32) {
            const float *gr = tg__row_ptr(&rg, r); // (J,) strided
            float *d = (float *)pd + r * V;     // (V,)
            for (int64_t j = 0; j < J; j++)
                d[ix[j * ri.inner]] += gr[j * rg.inner];
        } else {
            const double *gr = tg__row_ptr(&rg, r); // (J,) strided
            double *d = (double *)pd + r * V;    // (V,)
            for (int64_t j = 0; j < J; j++)
                d[ix[j * ri.inner]] += gr[j * rg.inner];
        }
    }
    return TG_OK;
}
