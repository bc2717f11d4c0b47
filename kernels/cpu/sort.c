/* kernels/cpu/sort.c - the stable sort along one dim on the CPU (contract in
 * kernels/kernel.h, argsort): kernels/sort.h's merge sort, one line per
 * position of the other dims, lines in parallel. The merge buffer is one
 * counted workspace of 8 bytes per element, line l at l * n. */
#include "cpu.h"
#include "../sort.h"

tg_status tg__cpu_argsort(const tg__arr *idx, const tg__arr *val, const tg__arr *x, int dim,
                          bool descending) {
    int64_t shape[TG__K_MAX_DIMS], xst[TG__K_MAX_DIMS], ist[TG__K_MAX_DIMS],
        vst[TG__K_MAX_DIMS];
    const int k = tg__cpu_other_dims(x, dim, shape, xst);
    tg__cpu_other_dims(idx, dim, shape, ist);
    if (val->data) tg__cpu_other_dims(val, dim, shape, vst);
    const int64_t lines = tg__k_numel(k, shape), n = x->shape[dim];
    if (lines == 0 || n == 0) return TG_OK;
    const size_t nb = (size_t)(lines * n) * sizeof(int64_t);
    int64_t *ws = tg__k_workspace(TG_CPU, nb); // (lines, n)
    if (!ws) return TG_ERR_NOMEM;
    #pragma omp parallel for if (lines * n >= TG__PAR_MIN)
    for (int64_t l = 0; l < lines; l++) {
        const tg__sort_line L = {x->data, x->dtype, tg__k_offset_of(l, k, shape, xst),
                                 x->strides[dim], n, descending};
        const tg__sort_buf a = {(int64_t *)idx->data + tg__k_offset_of(l, k, shape, ist),
                                idx->strides[dim]};
        const tg__sort_buf b = {ws + l * n, 1};
        tg__sort_line_run(&L, a, b);
        if (val->data) {
            const int64_t voff = tg__k_offset_of(l, k, shape, vst);
            for (int64_t j = 0; j < n; j++)
                tg__sort_put(&L, a.p[j * a.st], val->data, voff, val->strides[dim], j);
        }
    }
    tg__k_workspace_free(TG_CPU, ws, nb);
    return TG_OK;
}
