/* tape/gradcheck.c - tg_gradcheck: analytical Jacobian (one backward per
 * output element) against central differences, with PyTorch's default
 * tolerances. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/autograd.h"
#include "tapegrad/gradcheck.h"
#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"
#include "device.h"

static double get_at(const tg_tensor *t, int64_t off) {
    const void *b = t->storage->data;
    return t->dtype == TG_F32 ? ((const float *)b)[off] : ((const double *)b)[off];
}
static void set_at(tg_tensor *t, int64_t off, double v) {
    void *b = t->storage->data;
    if (t->dtype == TG_F32) ((float *)b)[off] = (float)v;
    else ((double *)b)[off] = v;
}

/* Evaluates fn and copies its output into y (m doubles). */
static tg_status eval(tg_gradcheck_fn fn, void *user, tg_tensor *const *in, double *y, int64_t m) {
    tg_tensor *out = fn(in, user);
    if (!out) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NULL;
    tg_status st = TG_OK;
    if (tg__k_numel(out->ndim, out->shape) != m)
        st = tg__set_error(TG_ERR_SHAPE, "tg_gradcheck: fn returned %lld elements, then %lld",
                           (long long)m, (long long)tg__k_numel(out->ndim, out->shape));
    else
        st = tg_copy_out(out, TG_F64, y, (size_t)m * sizeof(double));
    tg__tensor_release(out);
    return st;
}

tg_status tg_gradcheck(tg_gradcheck_fn fn, void *user, int n_in, tg_tensor *const *inputs,
                       const tg_gradcheck_opts *opts) {
    const char *who = "tg_gradcheck";
    if (tg__null_arg((const void *)fn, who, "fn")) return tg_last_status();
    if (n_in < 1 || n_in > TG__MAX_IO)
        return tg__set_error(TG_ERR_VALUE, "%s: n_in %d outside [1, %d]", who, n_in, TG__MAX_IO);
    if (tg__null_arg(inputs, who, "inputs")) return tg_last_status();
    for (int i = 0; i < n_in; i++) {
        tg_tensor *t = inputs[i];
        if (tg__null_arg(t, who, "inputs[i]")) return tg_last_status();
        if (t->storage->device != TG_CPU)
            return tg__set_error(TG_ERR_DEVICE, "%s: input %d is on %s; the checker perturbs "
                                 "inputs on the CPU only", who, i,
                                 tg__device_name(t->storage->device));
        if (tg__req_grad(t) && !tg__is_float(t->dtype))
            return tg__set_error(TG_ERR_DTYPE, "%s: input %d is %s", who, i,
                                 tg_dtype_name(t->dtype));
        if (tg__req_grad(t) && tg__has_grad_fn(t))
            return tg__set_error(TG_ERR_VALUE, "%s: input %d (%s) is not a leaf", who, i,
                                 TG__LABEL(t));
        for (int d = 0; d < t->ndim && tg__k_numel(t->ndim, t->shape) > 0; d++)
            if (t->strides[d] == 0 && t->shape[d] > 1)
                return tg__set_error(TG_ERR_LAYOUT, "%s: input %d has overlapping elements "
                                     "(stride 0); expand inside fn instead", who, i);
        char what[64]; /* the inputs that require grad are perturbed in place below */
        snprintf(what, sizeof what, "input %d, which the checker perturbs in place,", i);
        if (t->requires_grad && tg__check_writable(who, what, t) != TG_OK) return tg_last_status();
    }
    tg_gradcheck_opts o = {1e-6, 1e-5, 1e-3};
    if (opts) o = *opts;

    int prev_scopes = tg__scopes_suspend();
    bool prev_grad = tg_set_grad_enabled(true);
    tg_tensor *saved_grad[TG__MAX_IO] = {0};
    for (int i = 0; i < n_in; i++) {
        saved_grad[i] = inputs[i]->grad;
        inputs[i]->grad = NULL;
    }
    tg_status st = TG_OK;
    double *ja = NULL, *jn = NULL, *yp = NULL, *ym = NULL;
    tg_tensor *y = fn(inputs, user), *seed = NULL;
    if (!y) {
        st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NULL;
        goto out;
    }
    if (!tg__is_float(y->dtype)) {
        st = tg__set_error(TG_ERR_DTYPE, "%s: fn returned a %s tensor", who,
                           tg_dtype_name(y->dtype));
        goto out;
    }
    int64_t m = tg__k_numel(y->ndim, y->shape);
    int64_t total = 0;
    for (int i = 0; i < n_in; i++)
        if (inputs[i]->requires_grad) total += tg__k_numel(inputs[i]->ndim, inputs[i]->shape);
    int64_t cells;
    if (__builtin_mul_overflow(total, m, &cells) || cells > TG__MAX_NUMEL) {
        st = tg__set_error(TG_ERR_SHAPE, "%s: a Jacobian of %lld inputs x %lld outputs is too "
                           "large", who, (long long)total, (long long)m);
        goto out;
    }
    ja = tg__xcalloc((size_t)cells + 1, sizeof(double));
    jn = tg__xcalloc((size_t)cells + 1, sizeof(double));
    yp = tg__xcalloc((size_t)m + 1, sizeof(double));
    ym = tg__xcalloc((size_t)m + 1, sizeof(double));
    if (!ja || !jn || !yp || !ym) {
        st = TG_ERR_NOMEM;
        goto out;
    }

    /* analytical: row j of the Jacobian from backward with seed e_j */
    if (tg__req_grad(y)) {
        seed = tg__tensor_new(y->site, who, y->dtype, y->ndim, y->shape, TG_MEM_WORKSPACE);
        if (!seed) {
            st = tg_last_status();
            goto out;
        }
        for (int64_t j = 0; j < m; j++) {
            memset(seed->storage->data, 0, seed->storage->nbytes);
            set_at(seed, j, 1.0);
            st = tg_backward(y, seed, true);
            if (st != TG_OK) goto out;
            int64_t base = 0;
            for (int i = 0; i < n_in; i++) {
                tg_tensor *t = inputs[i];
                if (!t->requires_grad) continue;
                int64_t ni = tg__k_numel(t->ndim, t->shape);
                if (t->grad) {
                    double *col = ja + base * m; /* (ni, m) */
                    for (int64_t e = 0; e < ni; e++)
                        col[e * m + j] = get_at(t->grad, t->grad->offset + tg__k_offset_of(
                                                    e, t->ndim, t->shape, t->grad->strides));
                    tg__set_grad(t, NULL);
                }
                base += ni;
            }
        }
    }
    tg__tensor_release(y);
    y = NULL;

    /* numerical: central differences, perturbing inputs in place */
    tg_set_grad_enabled(false);
    int64_t base = 0;
    for (int i = 0; i < n_in && st == TG_OK; i++) {
        tg_tensor *t = inputs[i];
        if (!t->requires_grad) continue;
        int64_t ni = tg__k_numel(t->ndim, t->shape);
        for (int64_t e = 0; e < ni && st == TG_OK; e++) {
            int64_t off = t->offset + tg__k_offset_of(e, t->ndim, t->shape, t->strides);
            char raw[8];
            size_t es = tg_dtype_size(t->dtype);
            memcpy(raw, (char *)t->storage->data + (size_t)off * es, es);
            double x = get_at(t, off);
            set_at(t, off, x + o.eps);
            st = eval(fn, user, inputs, yp, m);
            if (st == TG_OK) {
                set_at(t, off, x - o.eps);
                st = eval(fn, user, inputs, ym, m);
            }
            memcpy((char *)t->storage->data + (size_t)off * es, raw, es); /* bit-exact restore */
            for (int64_t j = 0; st == TG_OK && j < m; j++)
                jn[(base + e) * m + j] = (yp[j] - ym[j]) / (2.0 * o.eps);
        }
        base += ni;
    }
    if (st != TG_OK) goto out;

    /* compare */
    base = 0;
    for (int i = 0; i < n_in && st == TG_OK; i++) {
        tg_tensor *t = inputs[i];
        if (!t->requires_grad) continue;
        int64_t ni = tg__k_numel(t->ndim, t->shape);
        for (int64_t e = 0; e < ni && st == TG_OK; e++)
            for (int64_t j = 0; j < m; j++) {
                double a = ja[(base + e) * m + j], nu = jn[(base + e) * m + j];
                if (fabs(a - nu) <= o.atol + o.rtol * fabs(nu)) continue;
                st = tg__set_error(TG_ERR_GRADCHECK,
                                   "tg_gradcheck: Jacobian mismatch for input %d (%s) element "
                                   "%lld and output element %lld: numerical %.10g, analytical "
                                   "%.10g (|difference| %.3g > atol %g + rtol %g * |numerical|)",
                                   i, TG__LABEL(t), (long long)e, (long long)j, nu, a, fabs(a - nu),
                                   o.atol, o.rtol);
                break;
            }
        base += ni;
    }
out:
    tg__tensor_release(y);
    tg__tensor_release(seed);
    free(ja);
    free(jn);
    free(yp);
    free(ym);
    for (int i = 0; i < n_in; i++) { /* saved_grad[i] kept its library reference */
        tg__set_grad(inputs[i], NULL);
        inputs[i]->grad = saved_grad[i];
    }
    tg_set_grad_enabled(prev_grad);
    tg__scopes_resume(prev_scopes);
    return st;
}
