/* ops/dispatch.c - runs a kernel on the device its tensors live on: the CPU
 * kernels (kernels/cpu/) or the CUDA kernels (kernels/cuda/, described by
 * tg__cuda_arr). Every entry returns TG_OK or the error the kernel recorded
 * (TG_ERR_CUDA naming the failing launch or cuBLAS call; TG_ERR_NOMEM for
 * workspace); CPU kernels cannot fail except matmul's workspace. A build
 * without the CUDA backend answers TG_ERR_DEVICE for CUDA tensors (the ops
 * have refused them before getting here). The operands of one call are on
 * one device: the ops check that first (tg__same_device). */
#include <string.h>

#include "../kernels/cpu/elementwise.h"
#include "../kernels/cpu/gather.h"
#include "../kernels/cpu/logprob.h"
#include "../kernels/cpu/matmul.h"
#include "../kernels/cpu/reduce.h"
#include "../kernels/cpu/softmax.h"
#include "tg_internal.h"
#ifdef TG_HAVE_CUDA
#include "../kernels/cuda/cuda_internal.h"
#endif

static bool on_cpu(const tg_tensor *t) { return t->storage->device == TG_CPU; }

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

static bool cpu_scalar(const tg_tensor *t) {
    return t && t->ndim == 0 && t->storage->device == TG_CPU;
}

bool tg__promote_scalars(tg_site s, int n, tg_tensor **ts, tg_tensor **owned) {
    tg_device dev = TG_CPU;
    for (int i = 0; i < n; i++)
        if (ts[i] && !cpu_scalar(ts[i]) && ts[i]->storage->device != TG_CPU)
            dev = ts[i]->storage->device;
    return tg__promote_scalars_to(s, dev, n, ts, owned);
}

bool tg__promote_scalars_to(tg_site s, tg_device dev, int n, tg_tensor **ts, tg_tensor **owned) {
    for (int i = 0; i < n; i++) owned[i] = NULL;
    if (dev == TG_CPU) return true;
    for (int i = 0; i < n; i++) {
        if (!cpu_scalar(ts[i])) continue;
        if (!(owned[i] = tg__to_device(s, ts[i], dev))) {
            tg__release_promoted(i, owned);
            return false;
        }
        ts[i] = owned[i];
    }
    return true;
}

void tg__release_promoted(int n, tg_tensor **owned) {
    for (int i = 0; i < n; i++) {
        if (owned[i]) tg__tensor_release(owned[i]);
        owned[i] = NULL;
    }
}

#ifdef TG_HAVE_CUDA
/* t over its own shape and strides. */
static tg__cuda_arr arr_of(const tg_tensor *t) {
    tg__cuda_arr a;
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

/* t (may be NULL: data NULL) read broadcast over out's shape, or with the
 * explicit strides st (one per dim of out) when st is not NULL. */
static tg__cuda_arr arr_over(const tg_tensor *t, const tg_tensor *out, const int64_t *st) {
    tg__cuda_arr a;
    memset(&a, 0, sizeof a);
    a.dtype = t ? (int)t->dtype : (int)out->dtype;
    a.data = t ? tg__ptr(t) : NULL;
    a.ndim = out->ndim;
    for (int d = 0; d < out->ndim; d++) {
        a.shape[d] = out->shape[d];
        if (!t || out->shape[d] == 1) {
            a.strides[d] = 0;
        } else if (st) {
            a.strides[d] = st[d];
        } else {
            int dt = t->ndim - out->ndim + d;
            a.strides[d] = (dt < 0 || t->shape[dt] == 1) ? 0 : t->strides[dt];
        }
    }
    return a;
}
#define NO_CUDA(t) (void)0
#else
/* Without the backend the CUDA entries only answer TG_ERR_DEVICE (the ops
 * have refused CUDA tensors before), so their parameters go unused. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define NO_CUDA(t) \
    return tg__set_error(TG_ERR_DEVICE, "this build of tapegrad has no CUDA backend")
#endif

tg_status tg__k_unary(tg__unop op, tg_tensor *out, const tg_tensor *x, const int64_t *xs,
                      double p0, double p1) {
    if (on_cpu(out)) {
        tg__cpu_unary(op, out, x, xs, p0, p1);
        return TG_OK;
    }
    NO_CUDA(out);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(out), a = arr_over(x, out, xs);
    return tg__cuda_unary((int)op, &o, &a, p0, p1);
#endif
}

tg_status tg__k_binary(tg__binop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       double p0, double p1) {
    if (on_cpu(out)) {
        tg__cpu_binary(op, out, a, b, p0, p1);
        return TG_OK;
    }
    NO_CUDA(out);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(out), x = arr_over(a, out, NULL), y = arr_over(b, out, NULL);
    return tg__cuda_binary((int)op, &o, &x, &y, p0, p1);
#endif
}

tg_status tg__k_ternary(tg__terop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *a,
                        const tg_tensor *b) {
    if (on_cpu(out)) {
        tg__cpu_ternary(op, out, g, a, b);
        return TG_OK;
    }
    NO_CUDA(out);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(out), x = arr_over(g, out, NULL), y = arr_over(a, out, NULL),
                 z = arr_over(b, out, NULL);
    return tg__cuda_ternary((int)op, &o, &x, &y, &z);
#endif
}

tg_status tg__k_where(tg_tensor *out, const tg_tensor *c, const tg_tensor *a, const tg_tensor *b) {
    if (on_cpu(out)) {
        tg__cpu_where(out, c, a, b);
        return TG_OK;
    }
    NO_CUDA(out);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(out), x = arr_over(c, out, NULL), y = arr_over(a, out, NULL),
                 z = arr_over(b, out, NULL);
    return tg__cuda_where(&o, &x, &y, &z);
#endif
}

tg_status tg__k_copy(tg_tensor *dst, const tg_tensor *src) {
    if (on_cpu(dst)) {
        tg__cpu_copy(dst, src);
        return TG_OK;
    }
    NO_CUDA(dst);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(dst), a = arr_over(src, dst, NULL);
    for (int d = 0; d < dst->ndim; d++) o.strides[d] = dst->strides[d];
    return tg__cuda_copy(&o, &a);
#endif
}

tg_status tg__k_accumulate(tg_tensor *dst, const tg_tensor *src) {
    if (on_cpu(dst)) {
        tg__cpu_accumulate(dst, src);
        return TG_OK;
    }
    NO_CUDA(dst);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(dst), a = arr_over(src, dst, NULL);
    return tg__cuda_accumulate(&o, &a);
#endif
}

tg_status tg__k_fill(tg_tensor *t, double v) {
    if (on_cpu(t)) {
        /* a 0-d f64 tensor holding v, read broadcast (and converted) by the copy
         * kernel */
        double value = v;
        tg__storage st = {.device = TG_CPU, .data = &value};
        tg_tensor src = {.storage = &st, .dtype = TG_F64};
        tg__cpu_copy(t, &src);
        return TG_OK;
    }
    NO_CUDA(t);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(t);
    for (int d = 0; d < t->ndim; d++) o.strides[d] = t->strides[d];
    return tg__cuda_fill(&o, v);
#endif
}

tg_status tg__k_sum_reduce(tg_tensor *out, const tg_tensor *x, const bool *red, double scale) {
    if (on_cpu(out)) {
        tg__cpu_sum_reduce(out, x, red, scale);
        return TG_OK;
    }
    NO_CUDA(out);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr o = arr_of(out), a = arr_of(x);
    return tg__cuda_sum_reduce(&o, &a, red, scale);
#endif
}

tg_status tg__k_softmax_forward(const tg_tensor *x, tg_tensor *y, bool is_log) {
    if (on_cpu(x)) {
        tg__cpu_softmax_forward(x, y, is_log);
        return TG_OK;
    }
    NO_CUDA(x);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(x);
    return tg__cuda_softmax_forward(&a, tg__ptr(y), is_log);
#endif
}

tg_status tg__k_softmax_backward(const tg_tensor *y, const tg_tensor *g, tg_tensor *dx,
                                 bool is_log) {
    if (on_cpu(y)) {
        tg__cpu_softmax_backward(y, g, dx, is_log);
        return TG_OK;
    }
    NO_CUDA(y);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(y), b = arr_of(g);
    return tg__cuda_softmax_backward(&a, &b, tg__ptr(dx), is_log);
#endif
}

tg_status tg__k_gather_find_bad(const tg_tensor *index, int64_t V, int64_t *bad) {
    if (on_cpu(index)) {
        *bad = tg__cpu_gather_find_bad(index, V);
        return TG_OK;
    }
    NO_CUDA(index);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(index);
    return tg__cuda_gather_find_bad(&a, V, bad);
#endif
}

tg_status tg__k_gather_forward(const tg_tensor *t, const tg_tensor *index, tg_tensor *out) {
    if (on_cpu(t)) {
        tg__cpu_gather_forward(t, index, out);
        return TG_OK;
    }
    NO_CUDA(t);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(t), b = arr_of(index);
    return tg__cuda_gather_forward(&a, &b, tg__ptr(out));
#endif
}

tg_status tg__k_gather_backward(const tg_tensor *g, const tg_tensor *index, tg_tensor *dt) {
    if (on_cpu(g)) {
        tg__cpu_gather_backward(g, index, dt);
        return TG_OK;
    }
    NO_CUDA(g);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(g), b = arr_of(index);
    int64_t V = dt->ndim > 0 ? dt->shape[dt->ndim - 1] : 1;
    return tg__cuda_gather_backward(&a, &b, tg__ptr(dt), V);
#endif
}

#ifdef TG_HAVE_CUDA
static tg__cuda_mat cmat(const tg__mat *m, int nb) {
    tg__cuda_mat c;
    memset(&c, 0, sizeof c);
    c.data = m->data;
    c.rows = m->rows;
    c.cols = m->cols;
    c.rs = m->rs;
    c.cs = m->cs;
    for (int d = 0; d < nb; d++) c.bs[d] = m->bs[d];
    return c;
}

/* Packs m (a batch over bshape, or one matrix when every batch stride is 0)
 * into a fresh contiguous device tensor *ws; m is rewritten to describe it. */
static tg_status pack(tg__cuda_mat *m, int dtype, int nb, const int64_t *bshape, tg_tensor **ws) {
    bool shared = true;
    for (int d = 0; d < nb; d++) shared = shared && m->bs[d] == 0;
    int pn = shared ? 0 : nb;
    int64_t shape[TG_MAX_DIMS];
    for (int d = 0; d < pn; d++) shape[d] = bshape[d];
    shape[pn] = m->rows;
    shape[pn + 1] = m->cols;
    *ws = tg__tensor_new_on(TG_SITE, "tg_matmul", TG_CUDA, (tg_dtype)dtype, pn + 2, shape,
                            TG_MEM_WORKSPACE);
    if (!*ws) return tg_last_status();
    tg__cuda_arr src, dst = arr_of(*ws);
    memset(&src, 0, sizeof src);
    src.data = m->data;
    src.dtype = dtype;
    src.ndim = pn + 2;
    for (int d = 0; d < pn + 2; d++) src.shape[d] = shape[d];
    for (int d = 0; d < pn; d++) src.strides[d] = m->bs[d];
    src.strides[pn] = m->rs;
    src.strides[pn + 1] = m->cs;
    for (int d = 0; d < pn + 2; d++) dst.strides[d] = (*ws)->strides[d];
    tg_status st = tg__cuda_copy(&dst, &src);
    if (st != TG_OK) return st;
    m->data = tg__ptr(*ws);
    m->rs = m->cols;
    m->cs = 1;
    for (int d = 0; d < nb; d++) m->bs[d] = shared ? 0 : (*ws)->strides[d];
    (void)tg__cuda_mat_usable(m);
    return TG_OK;
}
#endif

tg_status tg__k_matmul(tg_device dev, const char *who, tg_dtype dt, int nb, const int64_t *bshape,
                       const tg__mat *a, const tg__mat *b, const tg__mat *c, bool reduce) {
    if (dev == TG_CPU) return tg__cpu_matmul(who, dt, nb, bshape, a, b, c, reduce);
    (void)who;
    NO_CUDA(NULL);
#ifdef TG_HAVE_CUDA
    tg__cuda_mat ma = cmat(a, nb), mb = cmat(b, nb), mc = cmat(c, nb);
    tg_tensor *wa = NULL, *wb = NULL;
    tg_status st = TG_OK;
    if (!tg__cuda_mat_usable(&ma)) st = pack(&ma, (int)dt, nb, bshape, &wa);
    if (st == TG_OK && !tg__cuda_mat_usable(&mb)) st = pack(&mb, (int)dt, nb, bshape, &wb);
    (void)tg__cuda_mat_usable(&mc);
    if (st == TG_OK) st = tg__cuda_matmul((int)dt, nb, bshape, &ma, &mb, &mc, reduce);
    if (wa) tg__tensor_release(wa);
    if (wb) tg__tensor_release(wb);
    if (st != TG_OK) tg__set_error(st, "%s: %s", who, tg_last_error());
    return st;
#endif
}

/* The fused log-prob op's CUDA kernels (ops/logprob.c calls the CPU ones
 * itself: they report the bad column too). y is z's leading shape, i64,
 * contiguous; g_lp / g_H may be NULL. */
tg_status tg__k_lpe_forward_cuda(const tg_tensor *z, const tg_tensor *y, int64_t ignore,
                                 double inv_t, tg_tensor *lp, tg_tensor *H, tg_tensor *stats,
                                 int nstat, int64_t *bad_row) {
    NO_CUDA(z);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(z);
    a.strides[z->ndim - 1] = z->strides[z->ndim - 1];
    return tg__cuda_lpe_forward(&a, tg__ptr(y), ignore, inv_t, tg__ptr(lp), H ? tg__ptr(H) : NULL,
                                stats ? tg__ptr(stats) : NULL, nstat, bad_row);
#endif
}

tg_status tg__k_lpe_check_rows_cuda(const tg_tensor *z, const tg_tensor *y, int64_t ignore,
                                    double inv_t, int64_t *bad_row) {
    NO_CUDA(z);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(z);
    a.strides[z->ndim - 1] = z->strides[z->ndim - 1];
    return tg__cuda_lpe_check_rows(&a, tg__ptr(y), ignore, inv_t, bad_row);
#endif
}

tg_status tg__k_lpe_backward_cuda(const tg_tensor *z, const tg_tensor *y, int64_t ignore,
                                  double inv_t, const tg_tensor *stats, int nstat,
                                  const tg_tensor *g_lp, const tg_tensor *g_H, tg_tensor *dz) {
    NO_CUDA(z);
#ifdef TG_HAVE_CUDA
    tg__cuda_arr a = arr_of(z), gl, gh;
    a.strides[z->ndim - 1] = z->strides[z->ndim - 1];
    memset(&gl, 0, sizeof gl);
    memset(&gh, 0, sizeof gh);
    if (g_lp) gl = arr_of(g_lp);
    if (g_H) gh = arr_of(g_H);
    return tg__cuda_lpe_backward(&a, tg__ptr(y), ignore, inv_t, tg__ptr(stats), nstat, &gl, &gh,
                                 tg__ptr(dz));
#endif
}
