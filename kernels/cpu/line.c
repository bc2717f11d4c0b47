/* kernels/cpu/line.c - reductions along one dim (max/min with the index,
 * logsumexp, prod, any, all) and scans (cumsum, cumprod and their
 * gradients) on the CPU: kernels/line.h's line algorithms, one line per
 * position of the other dims, lines in parallel. Descriptors as in
 * kernels/kernel.h (reduce_dim, scan). */
#include "cpu.h"
#include "../line.h"

tg_status tg__cpu_reduce_dim(int op, const tg__arr *out, const tg__arr *idx, const tg__arr *x,
                             int dim) {
    int64_t shape[TG__K_MAX_DIMS], st[TG__K_MAX_DIMS];
    int k = tg__cpu_other_dims(x, dim, shape, st);
    int64_t lines = tg__k_numel(k, shape), n = x->shape[dim], xst = x->strides[dim];
    #pragma omp parallel for if (lines * n >= TG__PAR_MIN)
    for (int64_t l = 0; l < lines; l++) {
        int64_t bi;
        double v = tg__line_reduce(op, x->data, x->dtype, tg__k_offset_of(l, k, shape, st), n, xst,
                                   &bi);
        if (out->data) tg__line_wr(out->data, out->dtype, l, v);
        if (idx->data) ((int64_t *)idx->data)[l] = bi;
    }
    return TG_OK;
}

tg_status tg__cpu_scan(int op, const tg__arr *out, const tg__arr *x, const tg__arr *g, int dim,
                       double gamma) {
    int64_t shape[TG__K_MAX_DIMS], st[TG__K_MAX_DIMS], ost[TG__K_MAX_DIMS], gst[TG__K_MAX_DIMS];
    int k = tg__cpu_other_dims(x, dim, shape, st);
    tg__cpu_other_dims(out, dim, shape, ost);
    if (g->data) tg__cpu_other_dims(g, dim, shape, gst);
    int64_t lines = tg__k_numel(k, shape), n = x->shape[dim];
    if (n == 0) return TG_OK; /* nothing to write: the other dims may still be huge */
    #pragma omp parallel for if (lines * n >= TG__PAR_MIN)
    for (int64_t l = 0; l < lines; l++)
        tg__line_scan(op, out->data, out->dtype, tg__k_offset_of(l, k, shape, ost),
                      out->strides[dim], x->data, x->dtype, tg__k_offset_of(l, k, shape, st),
                      x->strides[dim], g->data, g->dtype,
                      g->data ? tg__k_offset_of(l, k, shape, gst) : 0,
                      g->data ? g->strides[dim] : 0, n, gamma);
    return TG_OK;
}
