/* kernels/cuda/line.cu - reductions along one dim and scans on the GPU:
 * kernels/line.h's line algorithms, one thread per line (grid-stride over
 * lines). Simple and exact rather than fast: a line is walked by one thread,
 * so a few very long lines (a logsumexp over a whole vocabulary) use little
 * of the device; the fused log-prob op is the fast path for those. */
#include "kcommon.cuh"
#include "../line.h"

__global__ void k_reduce_dim(tgk_lines G, int op, void *o, int odt, int64_t *idx, const void *x,
                             int xdt) {
    TGK_FOR_EACH(G.lines, l) {
        int64_t bi;
        double v = tg__line_reduce(op, x, xdt, tgk_line_off(G, 0, l), G.n, G.lst[0], &bi);
        if (o) tg__line_wr(o, odt, l, v);
        if (idx) idx[l] = bi;
    }
}

__global__ void k_scan(tgk_lines G, int op, void *o, int odt, const void *x, int xdt,
                       const void *g, int gdt, double gamma) {
    TGK_FOR_EACH(G.lines, l) {
        tg__line_scan(op, o, odt, tgk_line_off(G, 1, l), G.lst[1], x, xdt, tgk_line_off(G, 0, l),
                      G.lst[0], g, gdt, g ? tgk_line_off(G, 2, l) : 0, G.lst[2], G.n, gamma);
    }
}

extern "C" tg_status tg__cuda_reduce_dim(int op, const tg__arr *out, const tg__arr *idx,
                                         const tg__arr *x, int dim) {
    tgk_lines G = tgk_lines_of(x, NULL, NULL, dim);
    if (G.lines == 0) return TG_OK;
    return TGK_LAUNCH(k_reduce_dim, tgk_grid(G.lines, TGK_BLOCK), TGK_BLOCK, G, op, out->data,
                      out->dtype, (int64_t *)idx->data, (const void *)x->data, x->dtype);
}

extern "C" tg_status tg__cuda_scan(int op, const tg__arr *out, const tg__arr *x, const tg__arr *g,
                                   int dim, double gamma) {
    tgk_lines G = tgk_lines_of(x, out, g, dim);
    if (G.lines == 0 || G.n == 0) return TG_OK;
    return TGK_LAUNCH(k_scan, tgk_grid(G.lines, TGK_BLOCK), TGK_BLOCK, G, op, out->data,
                      out->dtype, (const void *)x->data, x->dtype, (const void *)g->data,
                      g->dtype, gamma);
}
