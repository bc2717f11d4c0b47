/* kernels/cuda/sort.cu - the stable sort along one dim on the GPU
 * (kernels/kernel.h, argsort): kernels/sort.h's merge sort, one thread per
 * line (grid-stride over lines), its merge buffer one counted device
 * workspace of 8 bytes per element (line l at l * n). Simple and exact
 * rather than fast: a few very long lines use little of the device. */
#include "kcommon.cuh"
#include "../sort.h"

__global__ void k_argsort(tgk_lines G, const void *x, int xdt, int64_t *idx, void *val,
                          int64_t *ws, bool desc) {
    TGK_FOR_EACH(G.lines, l) {
        const tg__sort_line L = {x, xdt, tgk_line_off(G, 0, l), G.lst[0], G.n, desc};
        const tg__sort_buf a = {idx + tgk_line_off(G, 1, l), G.lst[1]};
        const tg__sort_buf b = {ws + l * G.n, 1};
        tg__sort_line_run(&L, a, b);
        if (val) {
            const int64_t voff = tgk_line_off(G, 2, l);
            for (int64_t j = 0; j < G.n; j++) tg__sort_put(&L, a.p[j * a.st], val, voff, G.lst[2], j);
        }
    }
}

extern "C" tg_status tg__cuda_argsort(const tg__arr *idx, const tg__arr *val, const tg__arr *x,
                                      int dim, bool descending) {
    tgk_lines G = tgk_lines_of(x, idx, val, dim);
    if (G.lines == 0 || G.n == 0) return TG_OK;
    size_t nb = (size_t)(G.lines * G.n) * sizeof(int64_t);
    int64_t *ws = (int64_t *)tg__k_workspace(TG_CUDA, nb); // (lines, n)
    if (!ws) return TG_ERR_NOMEM;
    tg_status st = TGK_LAUNCH(k_argsort, tgk_grid(G.lines, TGK_BLOCK), TGK_BLOCK, G,
                              (const void *)x->data, x->dtype, (int64_t *)idx->data, val->data,
                              ws, descending);
    tg__k_workspace_free(TG_CUDA, ws, nb);
    return st;
}
