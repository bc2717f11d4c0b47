/* kernels/cuda/line.cu - reductions along one dim and scans on the GPU:
 * kernels/line.h's line algorithms, one thread per line (grid-stride over
 * lines). Simple and exact rather than fast: a line is walked by one thread,
 * so a few very long lines (a logsumexp over a whole vocabulary) use little
 * of the device; the fused log-prob op is the fast path for those. */
#include "kcommon.cuh"
#include "../line.h"

struct line_geom {
    int k;                                    /* dims other than the line's */
    int64_t lines, n;
    int64_t shape[TG__K_MAX_DIMS];
    int64_t st[3][TG__K_MAX_DIMS];            /* x, out, g */
    int64_t lst[3];                           /* strides along the line */
};

static line_geom geom(const tg__arr *x, const tg__arr *out, const tg__arr *g, int dim) {
    line_geom G;
    G.k = 0;
    const tg__arr *a[3] = {x, out, g};
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim) continue;
        G.shape[G.k] = x->shape[d];
        for (int i = 0; i < 3; i++) G.st[i][G.k] = a[i] && a[i]->data ? a[i]->strides[d] : 0;
        G.k++;
    }
    for (int i = 0; i < 3; i++) G.lst[i] = a[i] && a[i]->data ? a[i]->strides[dim] : 0;
    G.lines = tg__k_numel(G.k, G.shape);
    G.n = x->shape[dim];
    return G;
}

__device__ __forceinline__ int64_t line_off(const line_geom &G, int which, int64_t l) {
    int64_t off = 0;
    for (int d = G.k - 1; d >= 0; d--) {
        off += (l % G.shape[d]) * G.st[which][d];
        l /= G.shape[d];
    }
    return off;
}

__global__ void k_reduce_dim(line_geom G, int op, void *o, int odt, int64_t *idx, const void *x,
                             int xdt) {
    TGK_FOR_EACH(G.lines, l) {
        int64_t bi;
        double v = tg__line_reduce(op, x, xdt, line_off(G, 0, l), G.n, G.lst[0], &bi);
        if (o) tg__line_wr(o, odt, l, v);
        if (idx) idx[l] = bi;
    }
}

__global__ void k_scan(line_geom G, int op, void *o, int odt, const void *x, int xdt,
                       const void *g, int gdt, double gamma) {
    TGK_FOR_EACH(G.lines, l) {
        tg__line_scan(op, o, odt, line_off(G, 1, l), G.lst[1], x, xdt, line_off(G, 0, l),
                      G.lst[0], g, gdt, g ? line_off(G, 2, l) : 0, G.lst[2], G.n, gamma);
    }
}

extern "C" tg_status tg__cuda_reduce_dim(int op, const tg__arr *out, const tg__arr *idx,
                                         const tg__arr *x, int dim) {
    line_geom G = geom(x, NULL, NULL, dim);
    if (G.lines == 0) return TG_OK;
    return TGK_LAUNCH(k_reduce_dim, tgk_grid(G.lines, TGK_BLOCK), TGK_BLOCK, G, op, out->data,
                      out->dtype, (int64_t *)idx->data, (const void *)x->data, x->dtype);
}

extern "C" tg_status tg__cuda_scan(int op, const tg__arr *out, const tg__arr *x, const tg__arr *g,
                                   int dim, double gamma) {
    line_geom G = geom(x, out, g, dim);
    if (G.lines == 0 || G.n == 0) return TG_OK;
    return TGK_LAUNCH(k_scan, tgk_grid(G.lines, TGK_BLOCK), TGK_BLOCK, G, op, out->data,
                      out->dtype, (const void *)x->data, x->dtype, (const void *)g->data,
                      g->dtype, gamma);
}
