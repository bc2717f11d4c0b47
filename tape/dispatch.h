/* tape/dispatch.h - kernels on the tensors' device: descriptors built from
 * tensors, the backend of their device (tape/dispatch.c). Internal (not
 * installed); tape/core.h gathers every tape/ header for the layers above. */
#ifndef TG_TAPE_DISPATCH_H
#define TG_TAPE_DISPATCH_H

#include "tensor_impl.h"
#include "../kernels/kernel.h"

/* ---- kernels on the tensors' device (tape/dispatch.c) ----------------------
 * Each builds the descriptors of kernels/kernel.h and calls the backend of
 * the tensors' device; it returns TG_OK or the recorded error (TG_ERR_CUDA,
 * TG_ERR_NOMEM; TG_ERR_DEVICE in a build without CUDA). The device is out's
 * (the first tensor's); every operand must be on it (the ops check with
 * tg__same_device). Outputs may have any non-overlapping strides; inputs
 * are read broadcast to the output's shape. */
/* The backend table of dev; NULL for an unknown device. */
const tg__backend *tg__backend_of(tg_device dev);
/* t over its own shape (stride 0 for size-1 dims). */
tg__arr tg__arr_of(const tg_tensor *t);
/* t (NULL: data NULL) read over out's shape: broadcast, or with the explicit
 * strides st (one per dim of out) when st is not NULL. */
tg__arr tg__arr_over(const tg_tensor *t, const tg_tensor *out, const int64_t *st);
/* The last two dims of t as a batch of matrices (batch strides 0 when shared). */
tg__mat tg__mat_of(const tg_tensor *t, bool shared);
tg__mat tg__mat_t(tg__mat m);
/* True when every non-NULL tensor of ts is on one usable device; otherwise
 * TG_ERR_DEVICE naming `who` and both devices. */
bool tg__same_device(const char *who, int n, const tg_tensor *const *ts);
/* t when st is TG_OK; otherwise releases t and returns NULL (the error is
 * recorded). For `out = tg__k_ok(tg__k_binary(...), out)`. */
static inline tg_tensor *tg__k_ok(tg_status st, tg_tensor *t);
tg_status tg__k_unary(tg__unop op, tg_tensor *out, const tg_tensor *x, const int64_t *xs,
                      double p0, double p1);
tg_status tg__k_unary_grad(tg__unop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *s,
                           double p0, double p1);
tg_status tg__k_binary(tg__binop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       double p0, double p1);
tg_status tg__k_ternary(tg__terop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *a,
                        const tg_tensor *b);
tg_status tg__k_where(tg_tensor *out, const tg_tensor *c, const tg_tensor *a, const tg_tensor *b);
/* The exact ops (kernels/kernel.h): out bool = test of a and b (one dtype;
 * b = a for the unary tests); out i64 = op of a and b (i64), p0/p1 clamp's
 * bounds. a and b read over out's shape (broadcast). */
tg_status tg__k_test(tg__testop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b);
tg_status tg__k_int_op(tg__intop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       int64_t p0, int64_t p1);
/* Along dim of x (ndim >= 1; kernels/line.h): out (may be NULL) and idx (i64,
 * may be NULL) new contiguous tensors of x's shape without dim (keepdim's
 * size-1 dim is allowed: same elements). scan: out contiguous with x's
 * shape; g (NULL, or broadcastable to x's shape) for the gradient scans;
 * gamma the discount of the DISC scans. */
tg_status tg__k_reduce_dim(tg__redop op, tg_tensor *out, tg_tensor *idx, const tg_tensor *x,
                           int dim);
tg_status tg__k_scan(tg__scanop op, tg_tensor *out, const tg_tensor *x, const tg_tensor *g,
                     int dim, double gamma);
tg_status tg__k_copy(tg_tensor *dst, const tg_tensor *src);
tg_status tg__k_accumulate(tg_tensor *dst, const tg_tensor *src);
tg_status tg__k_fill(tg_tensor *t, double v);
tg_status tg__k_sum_reduce(tg_tensor *out, const tg_tensor *x, const bool *red, double scale);
/* Softmax rows along dim of x (0 for a 0-d x); y, g and dx of x's shape. */
tg_status tg__k_softmax_forward(const tg_tensor *x, tg_tensor *y, int dim, bool is_log);
tg_status tg__k_softmax_backward(const tg_tensor *y, const tg_tensor *g, tg_tensor *dx, int dim,
                                 bool is_log);
tg_status tg__k_gather_find_bad(const tg_tensor *index, int64_t V, int64_t *bad);
tg_status tg__k_gather_forward(const tg_tensor *t, const tg_tensor *index, tg_tensor *out);
tg_status tg__k_gather_backward(const tg_tensor *g, const tg_tensor *index, tg_tensor *dt);
/* The stable sort along dim of x (0 for a 0-d x: one element): idx (i64) and
 * val (x's dtype, or NULL: not wanted) new contiguous tensors of x's shape. */
tg_status tg__k_argsort(tg_tensor *idx, tg_tensor *val, const tg_tensor *x, int dim,
                        bool descending);
/* The multiply-adds (rows x inner x cols, summed over calls and batches)
 * asked of tg__k_matmul since the process started, on every device: how
 * tests count the GEMM work an op does. */
uint64_t tg__k_matmul_macs(void);
/* dt TG_BF16: a and b bf16, c f32 (f32 sums), on a backend that has it
 * (tg__k_has_bf16_gemm; TG_ERR_DTYPE elsewhere). */
tg_status tg__k_matmul(tg_device dev, const char *who, tg_dtype dt, int nb, const int64_t *bshape,
                       const tg__mat *a, const tg__mat *b, const tg__mat *c, bool reduce,
                       bool accumulate);
bool tg__k_has_bf16_gemm(tg_device dev);
/* Whether dev's fused log-prob kernels read bf16 logits themselves (f32
 * sums and outputs, bf16 dz); else the caller gives them f32 rows. */
bool tg__k_has_bf16_lpe(tg_device dev);
/* The fused log-prob kernels (kernels/kernel.h): y contiguous i64 on z's
 * device; a rejected row is reported in *bad (its column may be
 * TG__LPE_COL_UNKNOWN: the caller looks it up). g_lp / g_H may be NULL. */
tg_status tg__k_lpe_forward(const tg_tensor *z, const tg_tensor *y, int64_t ignore, double inv_t,
                            int64_t chunk, tg_tensor *lp, tg_tensor *H, tg_tensor *stats,
                            int nstat, tg__lpe_bad *bad);
tg_status tg__k_lpe_check_rows(const tg_tensor *z, const int64_t *y, int64_t ignore,
                               double inv_t, tg__lpe_bad *bad);
tg_status tg__k_lpe_backward(const tg_tensor *z, const tg_tensor *y, int64_t ignore,
                             double inv_t, int64_t chunk, const tg_tensor *stats, int nstat,
                             const tg_tensor *g_lp, const tg_tensor *g_H,
                             const tg_tensor *g_lse, tg_tensor *dz);

static inline tg_tensor *tg__k_ok(tg_status st, tg_tensor *t) {
    if (st == TG_OK) return t;
    tg__tensor_release(t);
    return NULL;
}

#endif
