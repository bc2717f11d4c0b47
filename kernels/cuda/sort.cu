/* kernels/cuda/sort.cu - the stable sort along one dim on the GPU
 * (kernels/kernel.h, argsort): kernels/sort.h's merge sort, one thread per
 * line (grid-stride over lines), its merge buffer one counted device
 * workspace of 8 bytes per element (line l at l * n). Simple and exact
 * rather than fast: a few very long lines use little of the device. */
#include "kcommon.cuh"
#include "../sort.h"

struct sort_geom {
    int k;                                    /* dims other than the line's */
    int64_t lines, n;
    int64_t shape[TG__K_MAX_DIMS];
    int64_t st[3][TG__K_MAX_DIMS];            /* x, idx, val */
    int64_t lst[3];                           /* strides along the line */
};

static sort_geom geom(const tg__arr *x, const tg__arr *idx, const tg__arr *val, int dim) {
    sort_geom G;
    G.k = 0;
    const tg__arr *a[3] = {x, idx, val};
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim) continue;
        G.shape[G.k] = x->shape[d];
        for (int i = 0; i < 3; i++) G.st[i][G.k] = a[i]->data ? a[i]->strides[d] : 0;
        G.k++;
    }
    for (int i = 0; i < 3; i++) G.lst[i] = a[i]->data ? a[i]->strides[dim] : 0;
    G.lines = tg__k_numel(G.k, G.shape);
    G.n = x->shape[dim];
    return G;
}

__device__ __forceinline__ int64_t sort_off(const sort_geom &G, int which, int64_t l) {
    int64_t off = 0;
    for (int d = G.k - 1; d >= 0; d--) {
        off += (l % G.shape[d]) * G.st[which][d];
        l /= G.shape[d];
    }
    return off;
}

__global__ void k_argsort(sort_geom G, const void *x, int xdt, int64_t *idx, void *val,
                          int64_t *ws, bool desc) {
    TGK_FOR_EACH(G.lines, l) {
        const tg__sort_line L = {x, xdt, sort_off(G, 0, l), G.lst[0], G.n, desc};
        const tg__sort_buf a = {idx + sort_off(G, 1, l), G.lst[1]};
        const tg__sort_buf b = {ws + l * G.n, 1};
        tg__sort_line_run(&L, a, b);
        if (val) {
            const int64_t voff = sort_off(G, 2, l);
            for (int64_t j = 0; j < G.n; j++) tg__sort_put(&L, a.p[j * a.st], val, voff, G.lst[2], j);
        }
    }
}

extern "C" tg_status tg__cuda_argsort(const tg__arr *idx, const tg__arr *val, const tg__arr *x,
                                      int dim, bool descending) {
    sort_geom G = geom(x, idx, val, dim);
    if (G.lines == 0 || G.n == 0) return TG_OK;
    size_t nb = (size_t)(G.lines * G.n) * sizeof(int64_t);
    int64_t *ws = (int64_t *)tg__alloc(TG_CUDA, nb, TG_MEM_WORKSPACE); // (lines, n)
    if (!ws) return TG_ERR_NOMEM;
    tg_status st = TGK_LAUNCH(k_argsort, tgk_grid(G.lines, TGK_BLOCK), TGK_BLOCK, G,
                              (const void *)x->data, x->dtype, (int64_t *)idx->data, val->data,
                              ws, descending);
    tg__free(TG_CUDA, ws, nb, TG_MEM_WORKSPACE);
    return st;
}
