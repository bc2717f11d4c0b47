/* kernels/cpu/cpu.h - the CPU backend's entries (listed in the table of
 * kernels/cpu/backend.c, contracts in kernels/kernel.h) and the helpers its
 * files share. Includes only the kernel interface. */
#ifndef TG_KERNELS_CPU_H
#define TG_KERNELS_CPU_H

#include "../kernel.h"

/* ---- entries (kernels/kernel.h has the contracts) ----------------------------- */

/* elementwise.c */
tg_status tg__cpu_unary(int op, const tg__arr *out, const tg__arr *x, double p0, double p1);
tg_status tg__cpu_unary_grad(int op, const tg__arr *out, const tg__arr *g, const tg__arr *s,
                             double p0, double p1);
tg_status tg__cpu_binary(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b,
                         double p0, double p1);
tg_status tg__cpu_ternary(int op, const tg__arr *out, const tg__arr *g, const tg__arr *a,
                          const tg__arr *b);
tg_status tg__cpu_where(const tg__arr *out, const tg__arr *c, const tg__arr *a,
                        const tg__arr *b);
tg_status tg__cpu_test(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b);
tg_status tg__cpu_int_op(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b,
                         int64_t p0, int64_t p1);
tg_status tg__cpu_reduce_dim(int op, const tg__arr *out, const tg__arr *idx, const tg__arr *x,
                             int dim);
tg_status tg__cpu_scan(int op, const tg__arr *out, const tg__arr *x, const tg__arr *g, int dim,
                       double gamma);
/* copy.c */
tg_status tg__cpu_copy(const tg__arr *out, const tg__arr *src);
tg_status tg__cpu_accumulate(const tg__arr *out, const tg__arr *src);
tg_status tg__cpu_fill(const tg__arr *out, double v);
/* reduce.c */
tg_status tg__cpu_sum_reduce(const tg__arr *out, const tg__arr *x, const bool *red,
                             double scale);
/* softmax.c */
tg_status tg__cpu_softmax_forward(const tg__arr *x, const tg__arr *y, bool is_log);
tg_status tg__cpu_softmax_backward(const tg__arr *y, const tg__arr *g, const tg__arr *dx,
                                   bool is_log);
/* gather.c */
tg_status tg__cpu_gather_find_bad(const tg__arr *index, int64_t V, int64_t *bad);
tg_status tg__cpu_gather_forward(const tg__arr *t, const tg__arr *index, void *out);
tg_status tg__cpu_gather_backward(const tg__arr *g, const tg__arr *index, void *dt, int64_t V);
/* sort.c */
tg_status tg__cpu_argsort(const tg__arr *idx, const tg__arr *val, const tg__arr *x, int dim,
                          bool descending);
/* matmul.c */
tg_status tg__cpu_matmul(int dtype, int nb, const int64_t *bshape, const tg__mat *a,
                         const tg__mat *b, const tg__mat *c, bool reduce, bool accumulate);
/* logprob.c */
tg_status tg__cpu_lpe_forward(const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,
                              int64_t chunk, void *lp, void *H, double *stats, int nstat,
                              tg__lpe_bad *bad);
tg_status tg__cpu_lpe_check_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                                 double inv_t, tg__lpe_bad *bad);
tg_status tg__cpu_lpe_backward(const tg__arr *z, const int64_t *y, int64_t ignore, double inv_t,
                               int64_t chunk, const double *stats, int nstat,
                               const tg__arr *g_lp, const tg__arr *g_H, const tg__arr *g_lse,
                               void *dz, int dz_dtype);
/* The f32 exponential of d <= 0 the log-prob kernels use (exposed for its
 * accuracy test). */
float tg__cpu_exp_nonpos(float d);

/* The fused log-prob kernels' instruction set on this CPU ("avx512", "avx2"
 * or "base"), chosen once: the best the CPU runs, or a lower one named by
 * TAPEGRAD_CPU_KERNELS. */
const char *tg__cpu_lpe_variant(void);
/* Whether their backward writes long rows with non-temporal stores: the
 * variant's default, or TAPEGRAD_CPU_STREAM_STORES=on|off. */
bool tg__cpu_lpe_streams(void);
/* Runs the variant `name` from now on, with non-temporal stores on (1), off
 * (0) or its default (-1); false (nothing changed) when this CPU cannot run
 * it. For tests and measurements: not thread-safe against running kernels. */
bool tg__cpu_lpe_select(const char *name, int stream);

/* ---- shared helpers --------------------------------------------------------------- */

/* An array seen as N rows of its last dim (a 0-d array: one row of length 1):
 * row r starts at the C-order offset of r over the leading dims. */
typedef struct tg__rows {
    const char *base;
    int nlead;
    const int64_t *shape, *strides; /* [nlead] */
    int64_t inner;                  /* element stride along a row */
    int64_t len;                    /* row length */
    int64_t n;                      /* number of rows (0 when empty) */
    size_t es;                      /* element size */
} tg__rows;

static inline tg__rows tg__rows_of(const tg__arr *a) {
    tg__rows r;
    r.base = (const char *)a->data;
    r.nlead = a->ndim > 0 ? a->ndim - 1 : 0;
    r.shape = a->shape;
    r.strides = a->strides;
    r.inner = a->ndim > 0 ? a->strides[a->ndim - 1] : 1;
    r.len = a->ndim > 0 ? a->shape[a->ndim - 1] : 1;
    int64_t numel = tg__k_numel(a->ndim, a->shape);
    r.n = r.len > 0 ? numel / r.len : 0;
    r.es = tg__k_dtype_size(a->dtype);
    return r;
}

static inline const void *tg__row_ptr(const tg__rows *r, int64_t i) {
    return r->base + (size_t)tg__k_offset_of(i, r->nlead, r->shape, r->strides) * r->es;
}

/* The dims of a other than dim, as (ndim - 1, shape, strides): the positions
 * of the lines along dim (kernels/cpu/line.c, sort.c). Returns ndim - 1. */
static inline int tg__cpu_other_dims(const tg__arr *a, int dim, int64_t *shape, int64_t *st) {
    int k = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (d == dim) continue;
        shape[k] = a->shape[d];
        st[k++] = a->strides[d];
    }
    return k;
}

#endif
