/* kernels/cuda/backend.c - the CUDA backend's table (kernels/kernel.h): the
 * runtime of kernels/cuda/runtime.cu and the kernels of the .cu files, with
 * the adapters the interface needs (matmul operands cuBLAS cannot read are
 * packed here into counted device workspace; the log-prob kernels report a
 * bad row without its column, which the core then looks up). Compiled only
 * with the CUDA backend (and in the emulated-device test build); a build
 * without it links kernels/cuda/stub.c instead. */
#include <string.h>

#include "cuda_internal.h"

/* Packs m (a batch over bshape, or one matrix when every batch stride is 0)
 * into fresh contiguous device workspace *ws (*ws_bytes); m is rewritten to
 * describe it. */
static tg_status pack(tg__mat *m, int dtype, int nb, const int64_t *bshape, void **ws,
                      size_t *ws_bytes) {
    bool shared = true;
    for (int d = 0; d < nb; d++) shared = shared && m->bs[d] == 0;
    int pn = shared ? 0 : nb;
    tg__arr src, dst;
    memset(&src, 0, sizeof src);
    memset(&dst, 0, sizeof dst);
    src.data = m->data;
    src.dtype = dst.dtype = dtype;
    src.ndim = dst.ndim = pn + 2;
    for (int d = 0; d < pn; d++) src.shape[d] = bshape[d];
    src.shape[pn] = m->rows;
    src.shape[pn + 1] = m->cols;
    for (int d = 0; d < pn; d++) src.strides[d] = m->bs[d];
    src.strides[pn] = m->rs;
    src.strides[pn + 1] = m->cs;
    int64_t acc = 1;
    for (int d = pn + 1; d >= 0; d--) {
        dst.shape[d] = src.shape[d];
        dst.strides[d] = acc;
        acc *= src.shape[d];
    }
    *ws_bytes = (size_t)acc * tg__k_dtype_size(dtype);
    *ws = tg__k_workspace(TG_CUDA, *ws_bytes);
    if (!*ws) return TG_ERR_NOMEM;
    dst.data = *ws;
    tg_status st = tg__cuda_copy(&dst, &src);
    if (st != TG_OK) return st;
    m->data = *ws;
    m->rs = m->cols;
    m->cs = 1;
    for (int d = 0; d < nb; d++) m->bs[d] = shared ? 0 : dst.strides[d];
    tg__cuda_mat_normalise(m);
    return TG_OK;
}

static tg_status tg__cuda_matmul(int dtype, int nb, const int64_t *bshape, const tg__mat *a,
                        const tg__mat *b, const tg__mat *c, bool reduce, bool accumulate) {
    tg__mat ma = *a, mb = *b, mc = *c;
    void *wa = NULL, *wb = NULL;
    size_t na = 0, nbytes = 0;
    tg_status st = TG_OK;
    tg__cuda_mat_normalise(&ma);
    tg__cuda_mat_normalise(&mb);
    tg__cuda_mat_normalise(&mc);
    if (!tg__cuda_mat_usable(&ma)) st = pack(&ma, dtype, nb, bshape, &wa, &na);
    if (st == TG_OK && !tg__cuda_mat_usable(&mb)) st = pack(&mb, dtype, nb, bshape, &wb, &nbytes);
    if (st == TG_OK) st = tg__cuda_gemm(dtype, nb, bshape, &ma, &mb, &mc, reduce, accumulate);
    if (wa) tg__k_workspace_free(TG_CUDA, wa, na);
    if (wb) tg__k_workspace_free(TG_CUDA, wb, nbytes);
    return st;
}

static void bad_row(tg__lpe_bad *bad, int64_t row) {
    bad->row = row;
    bad->col = row >= 0 ? TG__LPE_COL_UNKNOWN : -1;
    bad->value = 0.0;
}

static tg_status tg__cuda_lpe_forward(const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,
                             int64_t chunk, void *lp, void *H, double *stats, int nstat,
                             tg__lpe_bad *bad) {
    (void)chunk; /* one block per row: there is no chunk to choose */
    int64_t row = -1;
    tg_status st = tg__cuda_lpe_forward_rows(z, y, ignore, inv_t, lp, H, stats, nstat, &row);
    bad_row(bad, row);
    return st;
}

static tg_status tg__cuda_lpe_check_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                                double inv_t, tg__lpe_bad *bad) {
    int64_t row = -1;
    tg_status st = tg__cuda_lpe_check_rows_at(z, y, ignore, inv_t, &row);
    bad_row(bad, row);
    return st;
}

static tg_status tg__cuda_lpe_backward(const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,
                              int64_t chunk, const double *stats, int nstat, const tg__arr *g_lp,
                              const tg__arr *g_H, const tg__arr *g_lse, void *dz, int dz_dtype) {
    (void)chunk;
    return tg__cuda_lpe_backward_rows(z, y, ignore, inv_t, stats, nstat, g_lp, g_H, g_lse, dz,
                                 dz_dtype);
}

/* every kernel entry `name` is tg__cuda_name (cuda_internal.h, or above) */
#define CUDA_KERNEL(name, params) .name = tg__cuda_##name,

const tg__backend tg__cuda_backend = {
    .name = "cuda",
    .compiled_in = true,
    .device_count = tg__cuda_device_count,
    .unavailable_reason = tg__cuda_unavailable_reason,
    .alloc = tg__cuda_alloc,
    .free = tg__cuda_free,
    .cached_bytes = tg__cuda_cached_bytes,
    .empty_cache = tg__cuda_empty_cache,
    .copy_h2d = tg__cuda_copy_h2d,
    .copy_d2h = tg__cuda_copy_d2h,
    .get_props = tg__cuda_get_props,
    .synchronize = tg__cuda_synchronize,
    TG__KERNELS(CUDA_KERNEL)
    .matmul_bf16 = true,
    .set_allow_tf32 = tg__cuda_set_allow_tf32,
    .set_stream = tg__cuda_set_stream,
    .get_stream = tg__cuda_stream,
    .set_allocator = tg__cuda_set_allocator,
    .lpe_bf16 = true,
};
