/* tape/gradcheck.c - tg_gradcheck: analytical Jacobian (one backward per
 * output element) against central differences, with PyTorch's default
 * tolerances. The steps: check_args, alloc_jacobians (from fn's first
 * output), analytical, numerical, compare. */
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

/* The status of a fn that returned NULL: its own error, or TG_ERR_NULL
 * saying it set none. */
static tg_status fn_failed(void) {
    if (tg_last_status() != TG_OK) return tg_last_status();
    return tg__set_error(TG_ERR_NULL, "tg_gradcheck: fn returned NULL without an error");
}

/* Evaluates fn and copies its output into y (m doubles). */
static tg_status eval(tg_gradcheck_fn fn, void *user, tg_tensor *const *in, double *y, int64_t m) {
    tg_tensor *out = fn(in, user);
    if (!out) return fn_failed();
    tg_status st = TG_OK;
    if (tg__k_numel(out->ndim, out->shape) != m)
        st = tg__set_error(TG_ERR_SHAPE, "tg_gradcheck: fn returned %lld elements, then %lld",
                           (long long)m, (long long)tg__k_numel(out->ndim, out->shape));
    else
        st = tg_copy_out(out, TG_F64, y, (size_t)m * sizeof(double));
    tg__tensor_release(out);
    return st;
}

/* The inputs as tg_gradcheck takes them: fn set, 1..TG__MAX_IO inputs, each
 * on the CPU, f32/f64 and a leaf when it requires grad, no overlapping
 * elements (a perturbation would move several at once). */
static tg_status check_args(const char *who, tg_gradcheck_fn fn, int n_in,
                            tg_tensor *const *inputs) {
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
    return TG_OK;
}

/* One check: fn, its inputs and tolerances; m output elements; the
 * Jacobians ja (analytical) and jn (numerical), each (total, m) with a row
 * per element of the inputs that require grad, in order; yp and ym the
 * outputs at x + eps and x - eps. */
typedef struct gc_run {
    tg_gradcheck_fn fn;
    void *user;
    int n_in;
    tg_tensor *const *in;
    tg_gradcheck_opts o;
    int64_t m;
    double *ja, *jn, *yp, *ym;
} gc_run;

/* From fn's first output y: m, and the Jacobians and buffers, zeroed. */
static tg_status alloc_jacobians(gc_run *r, const tg_tensor *y) {
    const char *who = "tg_gradcheck";
    if (!tg__is_float(y->dtype))
        return tg__set_error(TG_ERR_DTYPE, "%s: fn returned a %s tensor", who,
                             tg_dtype_name(y->dtype));
    r->m = tg__k_numel(y->ndim, y->shape);
    int64_t total = 0, cells;
    for (int i = 0; i < r->n_in; i++)
        if (r->in[i]->requires_grad) total += tg__k_numel(r->in[i]->ndim, r->in[i]->shape);
    if (__builtin_mul_overflow(total, r->m, &cells) || cells > TG__MAX_NUMEL)
        return tg__set_error(TG_ERR_SHAPE, "%s: a Jacobian of %lld inputs x %lld outputs is "
                             "too large", who, (long long)total, (long long)r->m);
    r->ja = tg__xcalloc((size_t)cells + 1, sizeof(double));
    r->jn = tg__xcalloc((size_t)cells + 1, sizeof(double));
    r->yp = tg__xcalloc((size_t)r->m + 1, sizeof(double));
    r->ym = tg__xcalloc((size_t)r->m + 1, sizeof(double));
    return r->ja && r->jn && r->yp && r->ym ? TG_OK : TG_ERR_NOMEM;
}

/* Column j of ja (the analytical Jacobian) for each output element j: the
 * inputs' .grad after a backward of y with seed e_j (no .grad: a zero
 * column). */
static tg_status analytical(gc_run *r, tg_tensor *y) {
    const int64_t m = r->m;
    tg_tensor *seed = tg__tensor_new(y->site, "tg_gradcheck", y->dtype, y->ndim, y->shape,
                                     TG_MEM_WORKSPACE);
    if (!seed) return tg_last_status();
    tg_status st = TG_OK;
    for (int64_t j = 0; j < m && st == TG_OK; j++) {
        memset(seed->storage->data, 0, seed->storage->nbytes);
        set_at(seed, j, 1.0);
        st = tg_backward(y, seed, true);
        int64_t base = 0;
        for (int i = 0; i < r->n_in && st == TG_OK; i++) {
            tg_tensor *t = r->in[i];
            if (!t->requires_grad) continue;
            int64_t ni = tg__k_numel(t->ndim, t->shape);
            if (t->grad) {
                double *col = r->ja + base * m; /* (ni, m) */
                for (int64_t e = 0; e < ni; e++)
                    col[e * m + j] = get_at(t->grad, t->grad->offset + tg__k_offset_of(
                                                e, t->ndim, t->shape, t->grad->strides));
                tg__set_grad(t, NULL);
            }
            base += ni;
        }
    }
    tg__tensor_release(seed);
    return st;
}

/* jn (the numerical Jacobian): central differences, each element of each
 * input that requires grad perturbed in place by +-eps, then restored bit
 * for bit. */
static tg_status numerical(gc_run *r) {
    const int64_t m = r->m;
    const double eps = r->o.eps;
    tg_status st = TG_OK;
    int64_t base = 0;
    for (int i = 0; i < r->n_in && st == TG_OK; i++) {
        tg_tensor *t = r->in[i];
        if (!t->requires_grad) continue;
        int64_t ni = tg__k_numel(t->ndim, t->shape);
        for (int64_t e = 0; e < ni && st == TG_OK; e++) {
            int64_t off = t->offset + tg__k_offset_of(e, t->ndim, t->shape, t->strides);
            char raw[8];
            size_t es = tg_dtype_size(t->dtype);
            memcpy(raw, (char *)t->storage->data + (size_t)off * es, es);
            double x = get_at(t, off);
            set_at(t, off, x + eps);
            st = eval(r->fn, r->user, r->in, r->yp, m);
            if (st == TG_OK) {
                set_at(t, off, x - eps);
                st = eval(r->fn, r->user, r->in, r->ym, m);
            }
            memcpy((char *)t->storage->data + (size_t)off * es, raw, es); /* bit-exact restore */
            for (int64_t j = 0; st == TG_OK && j < m; j++)
                r->jn[(base + e) * m + j] = (r->yp[j] - r->ym[j]) / (2.0 * eps);
        }
        base += ni;
    }
    return st;
}

/* TG_ERR_GRADCHECK naming the first entry where |analytical - numerical| >
 * atol + rtol * |numerical|. */
static tg_status compare(const gc_run *r) {
    const int64_t m = r->m;
    const tg_gradcheck_opts o = r->o;
    int64_t base = 0;
    for (int i = 0; i < r->n_in; i++) {
        tg_tensor *t = r->in[i];
        if (!t->requires_grad) continue;
        int64_t ni = tg__k_numel(t->ndim, t->shape);
        for (int64_t e = 0; e < ni; e++)
            for (int64_t j = 0; j < m; j++) {
                double a = r->ja[(base + e) * m + j], nu = r->jn[(base + e) * m + j];
                if (fabs(a - nu) <= o.atol + o.rtol * fabs(nu)) continue;
                return tg__set_error(TG_ERR_GRADCHECK,
                                     "tg_gradcheck: Jacobian mismatch for input %d (%s) element "
                                     "%lld and output element %lld: numerical %.10g, analytical "
                                     "%.10g (|difference| %.3g > atol %g + rtol %g * "
                                     "|numerical|)", i, TG__LABEL(t), (long long)e, (long long)j,
                                     nu, a, fabs(a - nu), o.atol, o.rtol);
            }
        base += ni;
    }
    return TG_OK;
}

/* The steps above, with scopes hidden, grad mode on (off for the numerical
 * step) and the inputs' .grad set aside, all three restored at the end. */
tg_status tg_gradcheck(tg_gradcheck_fn fn, void *user, int n_in, tg_tensor *const *inputs,
                       const tg_gradcheck_opts *opts) {
    tg_status st = check_args("tg_gradcheck", fn, n_in, inputs);
    if (st != TG_OK) return st;
    gc_run r = {fn, user, n_in, inputs, {1e-6, 1e-5, 1e-3}, 0, NULL, NULL, NULL, NULL};
    if (opts) r.o = *opts;

    int prev_scopes = tg__scopes_suspend();
    bool prev_grad = tg_set_grad_enabled(true);
    tg_tensor *saved_grad[TG__MAX_IO] = {0};
    for (int i = 0; i < n_in; i++) {
        saved_grad[i] = inputs[i]->grad;
        inputs[i]->grad = NULL;
    }
    tg_tensor *y = fn(inputs, user);
    st = !y ? fn_failed() : alloc_jacobians(&r, y);
    if (st == TG_OK && tg__req_grad(y)) st = analytical(&r, y);
    tg__tensor_release(y);
    tg_set_grad_enabled(false);
    if (st == TG_OK) st = numerical(&r);
    if (st == TG_OK) st = compare(&r);
    free(r.ja);
    free(r.jn);
    free(r.yp);
    free(r.ym);
    for (int i = 0; i < n_in; i++) { /* saved_grad[i] kept its library reference */
        tg__set_grad(inputs[i], NULL);
        inputs[i]->grad = saved_grad[i];
    }
    tg_set_grad_enabled(prev_grad);
    tg__scopes_resume(prev_scopes);
    return st;
}
