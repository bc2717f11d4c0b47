/* tape/dispatch.c - runs a kernel on the device its tensors live on: builds
 * the plain descriptors of kernels/kernel.h from tensors and calls the
 * device's backend table. Nothing here knows which backends exist (a build
 * without CUDA links a stub table that answers TG_ERR_DEVICE). The operands
 * of one call are on one device: the ops check that first (tg__same_device).
 * Every entry returns TG_OK or the error the kernel recorded. */
#include <stdatomic.h>
#include <string.h>

#include "alloc.h"
#include "errors.h"
#include "tensor_impl.h"
#include "dispatch.h"
#include "device.h"

/* ---- what the kernels may ask for (kernels/kernel.h): installed at load ------------ */

static tg_status kernel_fail(tg_status st, const char *reason) {
    return tg__set_error(st, "%s", reason);
}

static void *kernel_workspace(tg_device dev, size_t nbytes) {
    return tg__alloc(dev, nbytes, TG_MEM_WORKSPACE);
}

static void kernel_workspace_free(tg_device dev, void *p, size_t nbytes) {
    tg__free(dev, p, nbytes, TG_MEM_WORKSPACE);
}

static const tg__kernel_services kernel_services = {kernel_fail, kernel_workspace,
                                                    kernel_workspace_free};

/* Before any kernel can run: when the library is loaded (or the program
 * linked with it starts). */
__attribute__((constructor)) static void install_kernel_services(void) {
    tg__kernel_services_install(&kernel_services);
}

const tg__backend *tg__backend_of(tg_device dev) {
    switch (dev) {
    case TG_CPU: return &tg__cpu_backend;
    case TG_CUDA: return &tg__cuda_backend;
    }
    return NULL;
}

static const tg__backend *be(const tg_tensor *t) { return tg__backend_of(t->storage->device); }

bool tg__same_device(const char *who, int n, const tg_tensor *const *ts) {
    tg_device dev = TG_CPU;
    const tg_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (!first) {
            first = ts[i];
            dev = first->storage->device;
            if (tg__check_device_usable(who, dev) != TG_OK) return false;
        } else if (ts[i]->storage->device != dev) {
            tg__set_error(TG_ERR_DEVICE,
                          "%s: operands are on different devices (%s and %s); move one with "
                          "tg_to_device",
                          who, tg__device_name(dev), tg__device_name(ts[i]->storage->device));
            return false;
        }
    }
    return true;
}

/* ---- descriptors --------------------------------------------------------- */

tg__arr tg__arr_of(const tg_tensor *t) {
    tg__arr a;
    memset(&a, 0, sizeof a);
    a.data = tg__ptr(t);
    a.dtype = (int)t->dtype;
    a.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        a.shape[d] = t->shape[d];
        a.strides[d] = t->shape[d] == 1 ? 0 : t->strides[d];
    }
    return a;
}

tg__arr tg__arr_over(const tg_tensor *t, const tg_tensor *out, const int64_t *st) {
    tg__arr a;
    memset(&a, 0, sizeof a);
    a.dtype = t ? (int)t->dtype : (int)out->dtype;
    a.data = t ? tg__ptr(t) : NULL;
    a.ndim = out->ndim;
    int64_t bst[TG_MAX_DIMS];
    if (t && !st) {
        tg__broadcast_strides(t, out->ndim, out->shape, bst);
        st = bst;
    }
    for (int d = 0; d < out->ndim; d++) {
        a.shape[d] = out->shape[d];
        a.strides[d] = !t || out->shape[d] == 1 ? 0 : st[d];
    }
    return a;
}

tg__mat tg__mat_of(const tg_tensor *t, bool shared) {
    tg__mat m;
    memset(&m, 0, sizeof m);
    int nd = t->ndim;
    m.data = tg__ptr(t);
    m.rows = t->shape[nd - 2];
    m.cols = t->shape[nd - 1];
    m.rs = t->strides[nd - 2];
    m.cs = t->strides[nd - 1];
    for (int d = 0; d < nd - 2; d++) m.bs[d] = shared ? 0 : t->strides[d];
    return m;
}

tg__mat tg__mat_t(tg__mat m) {
    tg__mat r = m;
    r.rows = m.cols;
    r.cols = m.rows;
    r.rs = m.cs;
    r.cs = m.rs;
    return r;
}

/* ---- entries ---------------------------------------------------------------- */

/* bf16 is a storage dtype: only copy, fill, accumulate and the fused ops'
 * own paths take it. Every other kernel refuses it here, whatever op called
 * it (the ops that check dtypes name themselves first). */
static tg_status refuse_bf16(int n, const tg_tensor *const *ts) {
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->dtype == TG_BF16)
            return tg__set_error(TG_ERR_DTYPE, "bf16 is a storage dtype: this op computes in "
                                 "f32 or f64 (convert with tg_to_dtype(t, TG_F32) first; the "
                                 "ops that take bf16 are tg_to_dtype, tg_matmul, "
                                 "tg_logprob_entropy and tg_linear_logprob_entropy)");
    return TG_OK;
}
#define REFUSE_BF16(...)                                                                  \
    do {                                                                                  \
        const tg_tensor *ts_[] = {__VA_ARGS__};                                           \
        tg_status rs_ = refuse_bf16((int)(sizeof ts_ / sizeof ts_[0]), ts_);              \
        if (rs_ != TG_OK) return rs_;                                                     \
    } while (0)

tg_status tg__k_unary(tg__unop op, tg_tensor *out, const tg_tensor *x, const int64_t *xs,
                      double p0, double p1) {
    REFUSE_BF16(out, x);
    tg__arr o = tg__arr_of(out), a = tg__arr_over(x, out, xs);
    return be(out)->unary((int)op, &o, &a, p0, p1);
}

tg_status tg__k_unary_grad(tg__unop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *s,
                           double p0, double p1) {
    REFUSE_BF16(out, g, s);
    tg__arr o = tg__arr_of(out), a = tg__arr_over(g, out, NULL), b = tg__arr_over(s, out, NULL);
    return be(out)->unary_grad((int)op, &o, &a, &b, p0, p1);
}

tg_status tg__k_binary(tg__binop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       double p0, double p1) {
    REFUSE_BF16(out, a, b);
    tg__arr o = tg__arr_of(out), x = tg__arr_over(a, out, NULL), y = tg__arr_over(b, out, NULL);
    return be(out)->binary((int)op, &o, &x, &y, p0, p1);
}

tg_status tg__k_ternary(tg__terop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *a,
                        const tg_tensor *b) {
    REFUSE_BF16(out, g, a, b);
    tg__arr o = tg__arr_of(out), x = tg__arr_over(g, out, NULL), y = tg__arr_over(a, out, NULL),
            z = tg__arr_over(b, out, NULL);
    return be(out)->ternary((int)op, &o, &x, &y, &z);
}

tg_status tg__k_where(tg_tensor *out, const tg_tensor *c, const tg_tensor *a, const tg_tensor *b) {
    REFUSE_BF16(out, c, a, b);
    tg__arr o = tg__arr_of(out), x = tg__arr_over(c, out, NULL), y = tg__arr_over(a, out, NULL),
            z = tg__arr_over(b, out, NULL);
    return be(out)->where(&o, &x, &y, &z);
}

tg_status tg__k_test(tg__testop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b) {
    REFUSE_BF16(out, a, b);
    tg__arr o = tg__arr_of(out), x = tg__arr_over(a, out, NULL), y = tg__arr_over(b, out, NULL);
    return be(out)->test((int)op, &o, &x, &y);
}

tg_status tg__k_int_op(tg__intop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       int64_t p0, int64_t p1) {
    REFUSE_BF16(out, a, b);
    tg__arr o = tg__arr_of(out), x = tg__arr_over(a, out, NULL), y = tg__arr_over(b, out, NULL);
    return be(out)->int_op((int)op, &o, &x, &y, p0, p1);
}

tg_status tg__k_reduce_dim(tg__redop op, tg_tensor *out, tg_tensor *idx, const tg_tensor *x,
                           int dim) {
    REFUSE_BF16(out, idx, x);
    tg__arr o = tg__arr_of(out ? out : idx), i = tg__arr_of(idx ? idx : out), a = tg__arr_of(x);
    if (!out) o.data = NULL;
    if (!idx) i.data = NULL;
    return be(x)->reduce_dim((int)op, &o, &i, &a, dim);
}

tg_status tg__k_scan(tg__scanop op, tg_tensor *out, const tg_tensor *x, const tg_tensor *g,
                     int dim, double gamma) {
    REFUSE_BF16(out, x, g);
    tg__arr o = tg__arr_of(out), a = tg__arr_of(x), b = tg__arr_over(g, x, NULL);
    return be(x)->scan((int)op, &o, &a, &b, dim, gamma);
}

tg_status tg__k_copy(tg_tensor *dst, const tg_tensor *src) {
    tg__arr o = tg__arr_of(dst), a = tg__arr_over(src, dst, NULL);
    return be(dst)->copy(&o, &a);
}

tg_status tg__k_accumulate(tg_tensor *dst, const tg_tensor *src) {
    tg__arr o = tg__arr_of(dst), a = tg__arr_over(src, dst, NULL);
    return be(dst)->accumulate(&o, &a);
}

tg_status tg__k_fill(tg_tensor *t, double v) {
    tg__arr o = tg__arr_of(t);
    for (int d = 0; d < o.ndim; d++) /* each place written once (an expand view) */
        if (o.strides[d] == 0) o.shape[d] = o.shape[d] ? 1 : 0;
    return be(t)->fill(&o, v);
}

tg_status tg__k_sum_reduce(tg_tensor *out, const tg_tensor *x, const bool *red, double scale) {
    REFUSE_BF16(out, x);
    tg__arr o = tg__arr_of(out), a = tg__arr_of(x);
    return be(out)->sum_reduce(&o, &a, red, scale);
}

/* a with its dim d moved last (a permuted view of the same elements). */
static void move_last(tg__arr *a, int d) {
    if (a->ndim == 0 || d == a->ndim - 1) return;
    int64_t sz = a->shape[d], st = a->strides[d];
    for (int i = d; i < a->ndim - 1; i++) {
        a->shape[i] = a->shape[i + 1];
        a->strides[i] = a->strides[i + 1];
    }
    a->shape[a->ndim - 1] = sz;
    a->strides[a->ndim - 1] = st;
}

tg_status tg__k_softmax_forward(const tg_tensor *x, tg_tensor *y, int dim, bool is_log) {
    REFUSE_BF16(x, y);
    tg__arr a = tg__arr_of(x), o = tg__arr_of(y);
    move_last(&a, dim);
    move_last(&o, dim);
    return be(x)->softmax_forward(&a, &o, is_log);
}

tg_status tg__k_softmax_backward(const tg_tensor *y, const tg_tensor *g, tg_tensor *dx, int dim,
                                 bool is_log) {
    REFUSE_BF16(y, g, dx);
    tg__arr a = tg__arr_of(y), b = tg__arr_of(g), o = tg__arr_of(dx);
    move_last(&a, dim);
    move_last(&b, dim);
    move_last(&o, dim);
    return be(y)->softmax_backward(&a, &b, &o, is_log);
}

tg_status tg__k_gather_find_bad(const tg_tensor *index, int64_t V, int64_t *bad) {
    tg__arr a = tg__arr_of(index);
    return be(index)->gather_find_bad(&a, V, bad);
}

tg_status tg__k_gather_forward(const tg_tensor *t, const tg_tensor *index, tg_tensor *out) {
    REFUSE_BF16(t, out);
    tg__arr a = tg__arr_of(t), b = tg__arr_of(index);
    return be(t)->gather_forward(&a, &b, tg__ptr(out));
}

tg_status tg__k_gather_backward(const tg_tensor *g, const tg_tensor *index, tg_tensor *dt) {
    REFUSE_BF16(g, dt);
    tg__arr a = tg__arr_of(g), b = tg__arr_of(index);
    int64_t V = dt->ndim > 0 ? dt->shape[dt->ndim - 1] : 1;
    return be(g)->gather_backward(&a, &b, tg__ptr(dt), V);
}

tg_status tg__k_argsort(tg_tensor *idx, tg_tensor *val, const tg_tensor *x, int dim,
                        bool descending) {
    REFUSE_BF16(x);
    tg__arr i = tg__arr_of(idx), v = tg__arr_of(val ? val : idx), a = tg__arr_of(x);
    if (!val) v.data = NULL;
    if (x->ndim == 0) { /* one line of one element */
        tg__arr *all[3] = {&i, &v, &a};
        for (int k = 0; k < 3; k++) all[k]->ndim = 1, all[k]->shape[0] = 1, all[k]->strides[0] = 0;
        dim = 0;
    }
    return be(x)->argsort(&i, &v, &a, dim, descending);
}

bool tg__k_has_bf16_gemm(tg_device dev) { return tg__backend_of(dev)->matmul_bf16; }

static _Atomic uint64_t matmul_macs; /* multiply-adds asked of the GEMMs, every device */

uint64_t tg__k_matmul_macs(void) { return atomic_load(&matmul_macs); }

tg_status tg__k_matmul(tg_device dev, const char *who, tg_dtype dt, int nb, const int64_t *bshape,
                       const tg__mat *a, const tg__mat *b, const tg__mat *c, bool reduce,
                       bool accumulate) {
    if (dt == TG_BF16 && !tg__k_has_bf16_gemm(dev))
        return tg__set_error(TG_ERR_DTYPE, "%s: the %s backend has no bf16 matrix product", who,
                             tg__device_name(dev));
    uint64_t batch = 1;
    for (int k = 0; k < nb; k++) batch *= (uint64_t)bshape[k];
    atomic_fetch_add(&matmul_macs,
                     batch * (uint64_t)a->rows * (uint64_t)a->cols * (uint64_t)b->cols);
    tg_status st = tg__backend_of(dev)->matmul((int)dt, nb, bshape, a, b, c, reduce, accumulate);
    if (st != TG_OK) tg__set_error(st, "%s: %s", who, tg_last_error());
    return st;
}

/* z over its own shape, with the row stride kept even for a single row. */
static tg__arr rows_arr(const tg_tensor *z) {
    tg__arr a = tg__arr_of(z);
    a.strides[z->ndim - 1] = z->strides[z->ndim - 1];
    return a;
}

bool tg__k_has_bf16_lpe(tg_device dev) { return tg__backend_of(dev)->lpe_bf16; }

/* bf16 logits are for the backends that take them (lpe_bf16). */
#define REFUSE_BF16_LOGITS(z)                                                             \
    do {                                                                                  \
        if (!be(z)->lpe_bf16) REFUSE_BF16(z);                                             \
    } while (0)

tg_status tg__k_lpe_forward(const tg_tensor *z, const tg_tensor *y, int64_t ignore, double inv_t,
                            int64_t chunk, tg_tensor *lp, tg_tensor *H, tg_tensor *stats,
                            int nstat, tg__lpe_bad *bad) {
    REFUSE_BF16_LOGITS(z);
    REFUSE_BF16(lp, H);
    tg__arr a = rows_arr(z);
    return be(z)->lpe_forward(&a, tg__ptr(y), ignore, inv_t, chunk, tg__ptr(lp),
                              H ? tg__ptr(H) : NULL, stats ? tg__ptr(stats) : NULL, nstat, bad);
}

tg_status tg__k_lpe_check_rows(const tg_tensor *z, const int64_t *y, int64_t ignore,
                               double inv_t, tg__lpe_bad *bad) {
    REFUSE_BF16_LOGITS(z);
    tg__arr a = rows_arr(z);
    return be(z)->lpe_check_rows(&a, y, ignore, inv_t, bad);
}

tg_status tg__k_lpe_backward(const tg_tensor *z, const tg_tensor *y, int64_t ignore,
                             double inv_t, int64_t chunk, const tg_tensor *stats, int nstat,
                             const tg_tensor *g_lp, const tg_tensor *g_H,
                             const tg_tensor *g_lse, tg_tensor *dz) {
    REFUSE_BF16_LOGITS(z);
    REFUSE_BF16(g_lp, g_H, g_lse);
    /* dz is z's dtype, or bf16 for f32 z on a backend that writes it */
    if (dz->dtype != z->dtype && !(be(z)->lpe_bf16 && z->dtype == TG_F32 && dz->dtype == TG_BF16))
        return tg__set_error(TG_ERR_DTYPE, "the logits' gradient must be %s, got %s",
                             tg_dtype_name(z->dtype), tg_dtype_name(dz->dtype));
    tg__arr a = rows_arr(z), gl, gh, gs;
    memset(&gl, 0, sizeof gl);
    memset(&gh, 0, sizeof gh);
    memset(&gs, 0, sizeof gs);
    if (g_lp) gl = tg__arr_of(g_lp);
    if (g_H) gh = tg__arr_of(g_H);
    if (g_lse) gs = tg__arr_of(g_lse);
    return be(z)->lpe_backward(&a, tg__ptr(y), ignore, inv_t, chunk, tg__ptr(stats), nstat, &gl,
                               &gh, &gs, tg__ptr(dz), (int)dz->dtype);
}
