/* kernels/cpu/gather.c - gather along the last dim and its scatter-add
 * (contract in gather.h).
 *
 * Tensors are seen as rows over their leading dims: row r of a tensor starts
 * at the C-order offset of r over the leading dims (its strides), elements
 * along the last dim are `inner` apart. Rows run in parallel (OpenMP) when
 * there are many elements; the scatter-add is race-free because row r of the
 * gradient only receives row r of g.
 */
#include "gather.h"

#define TG__GATHER_PAR_MIN 32768

typedef struct rows {
    const char *base;
    int nlead;
    const int64_t *shape, *strides; /* [nlead] */
    int64_t inner;                  /* element stride along a row */
    int64_t len;                    /* row length */
    size_t es;
} rows;

static rows rows_of(const tg_tensor *t) {
    rows r;
    r.base = tg__ptr(t);
    r.nlead = t->ndim > 0 ? t->ndim - 1 : 0;
    r.shape = t->shape;
    r.strides = t->strides;
    r.inner = t->ndim > 0 ? t->strides[t->ndim - 1] : 1;
    r.len = t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
    r.es = tg_dtype_size(t->dtype);
    return r;
}

static inline const void *row_ptr(const rows *r, int64_t i) {
    return r->base + (size_t)tg__offset_of(i, r->nlead, r->shape, r->strides) * r->es;
}

static int64_t n_rows(const tg_tensor *t) {
    return t->ndim > 1 ? tg__numel(t->ndim - 1, t->shape) : 1;
}

int64_t tg__cpu_gather_find_bad(const tg_tensor *index, int64_t V) {
    rows ri = rows_of(index);
    int64_t N = n_rows(index), J = ri.len;
    int64_t first = INT64_MAX;
    bool par = N > 1 && N * J >= TG__GATHER_PAR_MIN;
#pragma omp parallel for if (par) schedule(static) reduction(min : first)
    for (int64_t r = 0; r < N; r++) {
        const int64_t *ix = row_ptr(&ri, r); // (J,) strided
        for (int64_t j = 0; j < J; j++) {
            int64_t v = ix[j * ri.inner];
            if (v < 0 || v >= V) {
                if (r * J + j < first)
                    first = r * J + j;
                break;
            }
        }
    }
    return first == INT64_MAX ? -1 : first;
}

void tg__cpu_gather_forward(const tg_tensor *t, const tg_tensor *index, tg_tensor *out) {
    rows rt = rows_of(t), ri = rows_of(index);
    int64_t N = n_rows(index), J = ri.len;
    char *po = tg__ptr(out); // (N, J)
    bool f32 = t->dtype == TG_F32;
    bool par = N > 1 && N * J >= TG__GATHER_PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const int64_t *ix = row_ptr(&ri, r); // (J,) strided
        if (f32) {
            const float *x = row_ptr(&rt, r); // (V,) strided
            float *o = (float *)po + r * J;   // (J,)
            for (int64_t j = 0; j < J; j++)
                o[j] = x[ix[j * ri.inner] * rt.inner];
        } else {
            const double *x = row_ptr(&rt, r); // (V,) strided
            double *o = (double *)po + r * J;  // (J,)
            for (int64_t j = 0; j < J; j++)
                o[j] = x[ix[j * ri.inner] * rt.inner];
        }
    }
}

void tg__cpu_gather_backward(const tg_tensor *g, const tg_tensor *index, tg_tensor *dt) {
    rows rg = rows_of(g), ri = rows_of(index);
    int64_t N = n_rows(index), J = ri.len;
    int64_t V = dt->ndim > 0 ? dt->shape[dt->ndim - 1] : 1;
    char *pd = tg__ptr(dt); // (N, V)
    bool f32 = g->dtype == TG_F32;
    bool par = N > 1 && N * J >= TG__GATHER_PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const int64_t *ix = row_ptr(&ri, r); // (J,) strided
        if (f32) {
            const float *gr = row_ptr(&rg, r); // (J,) strided
            float *d = (float *)pd + r * V;     // (V,)
            for (int64_t j = 0; j < J; j++)
                d[ix[j * ri.inner]] += gr[j * rg.inner];
        } else {
            const double *gr = row_ptr(&rg, r); // (J,) strided
            double *d = (double *)pd + r * V;    // (V,)
            for (int64_t j = 0; j < J; j++)
                d[ix[j * ri.inner]] += gr[j * rg.inner];
        }
    }
}
