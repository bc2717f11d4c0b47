/* tests/test_backends.c - every op on the CUDA backend against the CPU: every
 * sample of every row of the op registry (tests/registry), and the launch
 * shapes, layouts and paths of the kernels that the small samples do not
 * reach (large and strided reductions, matmul layouts, the fused ops).
 *
 * Each case builds its inputs on the CPU, runs the same expression on them
 * and on copies moved to the CUDA device, and compares the results read back:
 * f64 within 1e-12 and f32 within 1e-5 (relative, with a floor of that much
 * of the tensor's largest magnitude for values that come from cancellation),
 * NaN where the CPU has NaN and the same infinities. An f32 case is also run
 * on the CPU in f64: where the formula is ill-conditioned (sigmoid's
 * (1 - s) * s near s = 1 turns a GPU's 2-ulp expf into a 1e-4 relative
 * difference), a device value also passes when it is no further from the f64
 * result than 32 times the CPU's own largest f32 error on that tensor: as
 * accurate as the CPU, not bitwise the CPU's libm (the emulated device's
 * math is moved by an ulp for the same reason, tests/simt). Then it runs backward
 * from the same upstream gradient on both and compares every input's
 * gradient the same way. Errors must be the same on both devices too.
 *
 * This file is built twice: as test_backends against the library (its cases
 * are reported SKIPPED, with the reason, when no CUDA device is present) and
 * as test_backends_simt against the simt build (tests/simt), where the CUDA
 * kernels run on an emulated device, so they are tested on every machine.
 * With TAPEGRAD_CUDA_GUARD=1 (set by CTest) every device block has guard bytes
 * before and after it, checked after every case. Memory, leaks and failures
 * of the device are in test_device_faults.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tg_test_util.h"
#include "registry.h"

/* After every case: no device block's guard bytes were overwritten. */
static void fini(void) {
    cr_expect_eq(tgt_cuda_guard_violations(), 0, "a kernel wrote outside its output (see stderr)");
    tgt_teardown();
}

TestSuite(backends, .init = tgt_setup, .fini = fini);

#define NEED_DEVICE() TGT_NEED_CUDA()

/* ---- comparing ------------------------------------------------------------------------ */

static double *host_values(const tg_tensor *t) {
    int64_t n = tg_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    cr_assert_eq(tg_copy_out(t, TG_F64, v, (size_t)(n > 0 ? n : 1) * sizeof *v), TG_OK, "%s",
                 tg_last_error());
    return v;
}

/* Gradients compared by run_both may differ from the CPU's by up to this
 * fraction of the largest of them (0: the dtype's own tolerance). The bf16
 * linear op's device GEMMs read dZ rounded to bf16 (tensor cores, as
 * PyTorch's autocast), the CPU's read it in f32: tests/test_bf16.c holds both
 * to float64 and autocast's error; here they must agree to 2^-7 of the
 * largest gradient. */
static double g_grad_max_rel;

/* Asserts that dev (any device) holds cpu's values (see the file comment).
 * ref: NULL, or for f32 the same result computed on the CPU in f64. */
static void expect_close_to(const char *what, const tg_tensor *cpu, const tg_tensor *dev,
                            const tg_tensor *ref, double max_rel);
static void expect_close(const char *what, const tg_tensor *cpu, const tg_tensor *dev,
                         const tg_tensor *ref) {
    expect_close_to(what, cpu, dev, ref, 0.0);
}
static void expect_close_to(const char *what, const tg_tensor *cpu, const tg_tensor *dev,
                            const tg_tensor *ref, double max_rel) {
    cr_assert_not_null(cpu, "%s: cpu result missing: %s", what, tg_last_error());
    cr_assert_not_null(dev, "%s: cuda result missing: %s", what, tg_last_error());
    cr_assert_eq(tg_ndim(cpu), tg_ndim(dev), "%s: ndim", what);
    for (int d = 0; d < tg_ndim(cpu); d++)
        cr_assert_eq(tg_shape(cpu)[d], tg_shape(dev)[d], "%s: shape[%d]", what, d);
    cr_assert_eq(tg_get_dtype(cpu), tg_get_dtype(dev), "%s: dtype", what);
    int64_t n = tg_numel(cpu);
    double *a = host_values(cpu), *b = host_values(dev);
    double *r = ref && tg_get_dtype(cpu) == TG_F32 && tg_numel(ref) == n ? host_values(ref) : NULL;
    /* bf16: one unit in the last place (an f32 result a hair apart on the two
     * devices may round to neighbouring bf16 values) */
    double rtol = tg_get_dtype(cpu) == TG_F64    ? 1e-12
                  : tg_get_dtype(cpu) == TG_F32  ? 1e-5
                  : tg_get_dtype(cpu) == TG_BF16 ? 0x1p-7
                                                 : 0.0;
    double big = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(a[i]) && fabs(a[i]) > big) big = fabs(a[i]);
    /* the CPU's largest f32 error on this tensor, scaled as the tolerance is */
    double cpu_err = 0.0;
    for (int64_t i = 0; r && i < n; i++)
        if (isfinite(a[i]) && isfinite(r[i]))
            cpu_err = fmax(cpu_err, fabs(a[i] - r[i]) / (fabs(r[i]) + 1e-3 * big + 1e-300));
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i])) {
            cr_assert(isnan(b[i]), "%s[%lld]: cpu NaN, cuda %.17g", what, (long long)i, b[i]);
        } else if (isinf(a[i])) {
            cr_assert_eq(a[i], b[i], "%s[%lld]: cpu %g, cuda %.17g", what, (long long)i, a[i], b[i]);
        } else {
            /* and at least an ulp of 1 (log_softmax of one element: 0 vs an ulp) */
            const double ulp1 = tg_get_dtype(cpu) == TG_F32   ? 0x1p-23
                                : tg_get_dtype(cpu) == TG_F64 ? 0x1p-52
                                                              : 0.0;
            double tol = rtol * (fabs(a[i]) > 1e-3 * big ? fabs(a[i]) : 1e-3 * big) + ulp1;
            tol = fmax(tol, max_rel * big);
            bool as_accurate = r && isfinite(r[i]) &&
                               fabs(b[i] - r[i]) / (fabs(r[i]) + 1e-3 * big + 1e-300) <= 32 * cpu_err;
            cr_assert(fabs(a[i] - b[i]) <= tol || as_accurate,
                      "%s[%lld]: cpu %.17g, cuda %.17g (tol %g; f64 %.17g, cpu's largest scaled "
                      "f32 error %g)",
                      what, (long long)i, a[i], b[i], tol, r ? r[i] : NAN, cpu_err);
        }
    }
    free(a);
    free(b);
    free(r);
}

static void expect_same(const char *what, const tg_tensor *cpu, const tg_tensor *dev) {
    expect_close(what, cpu, dev, NULL);
}

/* ---- running one expression on both devices ------------------------------------------ */

typedef tg_tensor *(*expr_fn)(tg_tensor *const *in, const void *arg);

/* Inputs: CPU tensors (owned by the caller's scope). Float inputs become leaves
 * that require grad when `grad`; the CUDA copies are leaves of their own. */
static void run_both(const char *what, int nin, tg_tensor *const *in, expr_fn f, const void *arg,
                     bool grad) {
    tg_tensor *cin[8], *gin[8], *rin[8];
    cr_assert(nin <= 8);
    bool f32 = false;
    for (int i = 0; i < nin; i++) {
        bool fl = tg_get_dtype(in[i]) == TG_F32 || tg_get_dtype(in[i]) == TG_F64 ||
                  tg_get_dtype(in[i]) == TG_BF16;
        f32 |= tg_get_dtype(in[i]) == TG_F32 || tg_get_dtype(in[i]) == TG_BF16;
        cin[i] = tg_clone(tg_detach(in[i]));
        gin[i] = tg_to_device(tg_detach(in[i]), TG_CUDA);
        cr_assert_not_null(gin[i], "%s: to_device: %s", what, tg_last_error());
        cr_assert_eq(tg_get_device(gin[i]), TG_CUDA);
        if (grad && fl) {
            cr_assert_eq(tg_set_requires_grad(cin[i], true), TG_OK);
            cr_assert_eq(tg_set_requires_grad(gin[i], true), TG_OK, "%s", tg_last_error());
        }
    }
    tg_tensor *oc = f(cin, arg);
    cr_assert_not_null(oc, "%s (cpu): %s", what, tg_last_error());
    tg_tensor *og = f(gin, arg);
    cr_assert_not_null(og, "%s (cuda): %s", what, tg_last_error());
    cr_assert_eq(tg_get_device(og), TG_CUDA, "%s: result stays on the device", what);
    /* the f64 reference of an f32 case (NULL where the expression has no f64 form) */
    tg_tensor *orf = NULL;
    if (f32) {
        for (int i = 0; i < nin; i++) {
            bool fl = tg_get_dtype(in[i]) == TG_F32 || tg_get_dtype(in[i]) == TG_BF16;
            rin[i] = fl ? tg_to_dtype(tg_detach(in[i]), TG_F64) : tg_clone(tg_detach(in[i]));
            if (grad && fl) cr_assert_eq(tg_set_requires_grad(rin[i], true), TG_OK);
        }
        orf = f(rin, arg);
    }
    expect_close(what, oc, og, orf);
    if (!grad) return;
    cr_assert(tg_requires_grad(oc), "%s: gradients asked for, but the result is in no graph",
              what);
    cr_assert(tg_requires_grad(og), "%s: the cuda result is part of a graph", what);
    tg_tensor *up = tg_randn(tg_get_dtype(oc), tg_ndim(oc), tg_shape(oc), 99, 0.0, 1.0);
    cr_assert_eq(tg_backward(oc, up, false), TG_OK, "%s: cpu backward: %s", what,
                 tg_last_error());
    cr_assert_eq(tg_backward(og, tg_to_device(up, TG_CUDA), false), TG_OK,
                 "%s: cuda backward: %s", what, tg_last_error());
    if (orf && (!tg_requires_grad(orf) ||
                tg_backward(orf, tg_to_dtype(up, tg_get_dtype(orf)), false) != TG_OK))
        orf = NULL;
    for (int i = 0; i < nin; i++) {
        if (!tg_requires_grad(cin[i])) continue;
        char name[96];
        snprintf(name, sizeof name, "%s: grad of input %d", what, i);
        tg_tensor *gc = tg_grad(cin[i]), *gg = tg_grad(gin[i]);
        if (!gc) {
            cr_assert_null(gg, "%s: cpu has no gradient, cuda has one", name);
            continue;
        }
        cr_assert_not_null(gg, "%s: missing on cuda", name);
        cr_assert_eq(tg_get_device(gg), TG_CUDA, "%s: on the device", name);
        expect_close_to(name, gc, gg, orf ? tg_grad(rin[i]) : NULL, g_grad_max_rel);
    }
}

static tg_tensor *randn(tg_dtype dt, int nd, const int64_t *shape, uint64_t seed) {
    return tg_randn(dt, nd, shape, seed, 0.0, 1.0);
}

/* A copy of t with NaN, +inf and -inf written at positions 1, 4 and 7. */
static tg_tensor *with_specials(tg_tensor *t) {
    int64_t n = tg_numel(t);
    double *v = host_values(t);
    if (n > 1) v[1] = NAN;
    if (n > 4) v[4] = INFINITY;
    if (n > 7) v[7] = -INFINITY;
    tg_tensor *r = tg_to_dtype(tg_from_data(TG_F64, tg_ndim(t), tg_shape(t), v), tg_get_dtype(t));
    free(v);
    return r;
}

static const tg_dtype FLOATS[2] = {TG_F32, TG_F64};

/* ---- every registry row ---------------------------------------------------------------- */

static bool is_float(const tg_tensor *t) {
    return t && (tg_get_dtype(t) == TG_F32 || tg_get_dtype(t) == TG_F64);
}

/* Input k of a sample on dev: its values with its layout (a strided sample
 * input is made strided on the device the way the registry made it; an
 * empty one over no memory). A leaf that requires grad when rg. */
static tg_tensor *input_on(const tg_tensor *t, tg_device dev, bool rg) {
    if (!t) return NULL;
    if (tg_numel(t) == 0) { /* over no memory (a device pointer NULL), through DLPack */
        tg_tensor *e = tgr_over_null(t, dev, true, rg);
        cr_assert_not_null(e, "%s", tg_last_error());
        return e;
    }
    tg_tensor *d = tg_detach((tg_tensor *)t);
    tg_tensor *c = tg_contiguous(d);
    tg_tensor *m = dev == TG_CPU ? tg_clone(c) : tg_to_device(c, dev);
    cr_assert_not_null(m, "%s", tg_last_error());
    if (!tg_is_contiguous(t) && tg_numel(t) > 1 && tg_ndim(t) >= 2) /* as tgr_strided makes it */
        m = tg_transpose(tg_contiguous(tg_transpose(m, -2, -1)), -2, -1);
    else if (!tg_is_contiguous(t) && tg_numel(t) > 1) {
        tg_tensor *u = tg_unsqueeze(m, -1);
        m = tg_squeeze(tg_narrow(tg_cat(2, (tg_tensor *[]){u, u}, -1), -1, 0, 1), -1);
    }
    tg_tensor *leaf = tg_detach(m);
    if (rg) cr_assert_eq(tg_set_requires_grad(leaf, true), TG_OK, "%s", tg_last_error());
    return leaf;
}

/* sum_k sum(out_k * w_k) over the outputs that require grad, the weights made on
 * the CPU (tgr_weights of the CPU's outputs) and moved to the outputs' device. */
static tg_tensor *loss_on(tg_tensor *const *out, tg_tensor *const *cpu_out, int n) {
    tg_tensor *loss = NULL;
    for (int k = 0; k < n; k++) {
        if (!out[k] || !is_float(out[k]) || !tg_requires_grad(out[k])) continue;
        tg_tensor *w = tg_to_device(tgr_weights(cpu_out[k], k), tg_get_device(out[k]));
        tg_tensor *t = tg_sum(tg_mul(out[k], tg_to_dtype(w, tg_get_dtype(out[k]))));
        loss = loss ? tg_add(loss, t) : t;
    }
    return loss;
}

/* One sample of a row on the device against the CPU (see the file comment):
 * outputs, then gradients for the same loss; a bad sample fails alike. */
static void run_sample(const tgr_op *op, tg_dtype dt, const tgr_sample *s) {
    char what[160];
    snprintf(what, sizeof what, "%s (%s, %s)", op->name, tg_dtype_name(dt), s->what);
    const bool bad = s->flags & TGR_S_BAD;
    /* gradients through NaN and inf are compared as values only (an ulp of the
     * device's libm at an infinity is a different finite gradient) */
    const bool grad = op->diff && !(op->flags & TGR_CREATE) && !bad && !(s->flags & TGR_S_SPECIAL);
    int sc = tg_scope_begin();
    tg_tensor *cin[TGR_MAX_IN] = {NULL}, *gin[TGR_MAX_IN] = {NULL}, *rin[TGR_MAX_IN] = {NULL};
    bool f32 = false;
    for (int k = 0; k < s->nin; k++) {
        const bool rg = grad && (op->diff >> k & 1) && is_float(s->in[k]);
        cin[k] = input_on(s->in[k], TG_CPU, rg);
        gin[k] = input_on(s->in[k], TG_CUDA, rg);
        f32 |= s->in[k] && tg_get_dtype(s->in[k]) == TG_F32;
        rin[k] = !s->in[k] ? NULL
                 : tg_get_dtype(s->in[k]) == TG_F32 ? input_on(tg_to_dtype(s->in[k], TG_F64), TG_CPU, rg)
                                                    : input_on(s->in[k], TG_CPU, rg);
    }
    tg_tensor *oc[TGR_MAX_OUT], *og[TGR_MAX_OUT], *orf[TGR_MAX_OUT] = {NULL};
    if (bad) {
        tg_status sc_st = op->apply(op, cin, &s->a, oc), sg_st = op->apply(op, gin, &s->a, og);
        cr_assert_eq(sg_st, sc_st, "%s: cpu %s, cuda %s: %s", what, tg_status_name(sc_st),
                     tg_status_name(sg_st), tg_last_error());
        tg_clear_error();
        cr_assert_eq(tg_scope_end(sc), TG_OK);
        return;
    }
    cr_assert_eq(tgr_call_in(op, cin, &s->a, oc), TG_OK, "%s (cpu): %s", what, tg_last_error());
    cr_assert_eq(tgr_call_in(op, gin, &s->a, og), TG_OK, "%s (cuda): %s", what, tg_last_error());
    const int n = tgr_nout(op);
    if (f32) cr_assert_eq(tgr_call_in(op, rin, &s->a, orf), TG_OK, "%s (f64): %s", what, tg_last_error());
    for (int k = 0; k < n; k++) { /* the scope owns the outputs */
        char name[192];
        snprintf(name, sizeof name, "%s: output %d", what, k);
        if (!oc[k]) {
            cr_assert_null(og[k], "%s: cpu has none, cuda has one", name);
            continue;
        }
        expect_close(name, oc[k], og[k], orf[k] && tg_get_dtype(orf[k]) == TG_F64 ? orf[k] : NULL);
    }
    if (grad) {
        tg_tensor *lc = loss_on(oc, oc, n), *lg = loss_on(og, oc, n), *lr = f32 ? loss_on(orf, oc, n) : NULL;
        if (lc) {
            cr_assert_not_null(lg, "%s: cuda outputs not in a graph", what);
            cr_assert_eq(tg_backward(lc, NULL, false), TG_OK, "%s: cpu backward: %s", what,
                         tg_last_error());
            cr_assert_eq(tg_backward(lg, NULL, false), TG_OK, "%s: cuda backward: %s", what,
                         tg_last_error());
            if (lr && tg_backward(lr, NULL, false) != TG_OK) lr = NULL;
            for (int k = 0; k < s->nin; k++) {
                if (!cin[k] || !tg_requires_grad(cin[k])) continue;
                char name[192];
                snprintf(name, sizeof name, "%s: gradient of input %d", what, k);
                tg_tensor *gc = tg_grad(cin[k]), *gg = tg_grad(gin[k]);
                if (!gc) {
                    cr_assert_null(gg, "%s: cpu has none, cuda has one", name);
                    continue;
                }
                cr_assert_not_null(gg, "%s: missing on cuda", name);
                cr_assert_eq(tg_get_device(gg), TG_CUDA, "%s: on the device", name);
                expect_close(name, gc, gg, lr && rin[k] ? tg_grad(rin[k]) : NULL);
            }
        }
    }
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK, "%s: %s", what, tg_last_error());
}

/* Every sample (f32 and f64) of every registry row but creation (made on the
 * CPU) and the rows that move tensors between devices. */
Test(backends, every_registry_row) {
    NEED_DEVICE();
    tgr_init();
    int ran = 0;
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        if (op->flags & (TGR_CREATE | TGR_NO_DEVICE)) continue;
        for (int d = 0; d < 2; d++) {
            tgr_samples ss;
            tgr_samples_of(op, FLOATS[d], &ss);
            for (int k = 0; k < ss.n; k++, ran++) run_sample(op, FLOATS[d], &ss.s[k]);
            tgr_samples_free(&ss);
        }
    }
    cr_assert(ran > 1000, "%d samples", ran);
}

/* The elementwise rows on an input large enough for every launch shape,
 * transposed. */
Test(backends, elementwise_rows_at_launch_sizes) {
    NEED_DEVICE();
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        if (!op->ref) continue;
        for (int d = 0; d < 2; d++) {
            tgr_samples ss;
            tgr_samples_of(op, FLOATS[d], &ss);
            tgr_sample big = ss.s[0];
            snprintf(big.what, sizeof big.what, "(401, 97) transposed");
            big.in[0] = tgr_strided(tg_rand(FLOATS[d], TG_SHAPE(401, 97), 51 + (uint64_t)i,
                                            op->lo, op->hi));
            run_sample(op, FLOATS[d], &big);
            tg_release(big.in[0]);
            tgr_samples_free(&ss);
        }
    }
}

static tg_tensor *e_to_other(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_to_dtype(in[0], tg_get_dtype(in[0]) == TG_F32 ? TG_F64 : TG_F32);
}
static tg_tensor *e_to_i64_and_back(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_to_dtype(tg_to_dtype(in[0], TG_I64), TG_F64);
}

Test(backends, dtype_conversions) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    for (int d = 0; d < 2; d++) {
        tg_tensor *x = tg_scale(randn(FLOATS[d], 2, (int64_t[]){5, 7}, 50 + d), 1e3);
        run_both("to_dtype f32 <-> f64", 1, &x, e_to_other, NULL, true);
        tg_tensor *s = with_specials(x); /* NaN -> 0, inf saturates */
        run_both("to i64 and back", 1, &s, e_to_i64_and_back, NULL, false);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- reductions ------------------------------------------------------------------------------ */

static tg_tensor *r_sum(tg_tensor *const *in, const void *a) { (void)a; return tg_sum(in[0]); }
static tg_tensor *r_mean(tg_tensor *const *in, const void *a) { (void)a; return tg_mean(in[0]); }
static tg_tensor *r_sum_dim(tg_tensor *const *in, const void *a) {
    return tg_sum_dim(in[0], *(const int *)a, true);
}
static tg_tensor *r_mean_dim(tg_tensor *const *in, const void *a) {
    return tg_mean_dim(in[0], *(const int *)a, false);
}
static tg_tensor *r_sum_strided(tg_tensor *const *in, const void *a) {
    return tg_sum_dim(tg_transpose(in[0], 0, 2), *(const int *)a, false);
}

Test(backends, reductions_small_and_large_and_strided) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_tensor *small = randn(FLOATS[d], 3, (int64_t[]){4, 5, 6}, 60);
        tg_tensor *large = randn(FLOATS[d], 2, (int64_t[]){3, 5000}, 61); /* block-per-output path */
        run_both("sum", 1, &small, r_sum, NULL, true);
        run_both("mean", 1, &large, r_mean, NULL, true);
        for (int dim = 0; dim < 3; dim++) {
            run_both("sum_dim keepdim", 1, &small, r_sum_dim, &dim, true);
            run_both("mean_dim", 1, &small, r_mean_dim, &dim, true);
            run_both("sum_dim of a transposed view", 1, &small, r_sum_strided, &dim, true);
        }
        int last = 1, first = 0;
        run_both("sum_dim over 5000", 1, &large, r_sum_dim, &last, true);
        tg_tensor *wide = randn(FLOATS[d], 2, (int64_t[]){100, 3000}, 62); /* thread per output */
        run_both("sum_dim over rows of a wide tensor", 1, &wide, r_sum_dim, &first, true);
        /* outputs few and long: each output's range is split over blocks */
        tg_tensor *lng = randn(FLOATS[d], 2, (int64_t[]){2, 70000}, 63);
        run_both("sum_dim split over blocks", 1, &lng, r_sum_dim, &last, true);
        tg_tensor *tall = tg_transpose(randn(FLOATS[d], 2, (int64_t[]){1000, 300}, 64), 0, 1);
        run_both("mean of 300000 strided elements, split", 1, &tall, r_mean, NULL, true);
        tg_tensor *sp = with_specials(small);
        run_both("sum with NaN and inf", 1, &sp, r_sum, NULL, false);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

/* The fused linear op (tg_linear_logprob_entropy): hidden, weight, bias,
 * targets; logprob + entropy / 2 + lse / 4 so one comparison covers the three
 * outputs and backward sends a gradient into each. */
static tg_tensor *e_linear(tg_tensor *const *in, const void *a) {
    const tg_linear_logprob_opts *o = a;
    tg_tensor *lp, *H, *lse;
    if (tg_linear_logprob_entropy(in[0], in[1], in[2], in[3], o, &lp, &H, &lse) != TG_OK)
        return NULL;
    return tg_add(tg_add(lp, tg_scale(H, 0.5)), tg_scale(lse, 0.25));
}

/* The loss entry (tg_linear_loss): hidden, weight, bias, targets and a
 * per-row constant (detached: the callback slices it); the chunk's loss
 * sums exp(lp - c) - H / 4 + lse^2 / 8 over its rows. */
static tg_status e_loss_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    tg_tensor *c = tg_narrow(user, 0, ch->row_start, ch->row_end - ch->row_start);
    tg_tensor *t = tg_add(tg_sub(tg_exp(tg_sub(ch->logprob, c)), tg_scale(ch->entropy, 0.25)),
                          tg_scale(tg_square(ch->lse), 0.125));
    *loss = tg_sum(t); /* the callback's scope releases the rest */
    return *loss ? TG_OK : tg_last_status();
}
static tg_tensor *e_linear_loss(tg_tensor *const *in, const void *a) {
    const tg_linear_loss_opts *o = a;
    tg_tensor *loss, *c = tg_detach(in[4]);
    tg_status st = tg_linear_loss(in[0], in[1], in[2], in[3], e_loss_chunk, c, o, &loss, NULL,
                                  NULL);
    return st == TG_OK ? loss : NULL;
}

/* bf16 on the device: conversions both ways (specials, rounding to even),
 * the fused logits op and the fused linear op reading bf16 */
static tg_tensor *e_bf16_round_trip(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_to_dtype(tg_to_dtype(in[0], TG_BF16), TG_F32);
}
static tg_tensor *e_logprob_bf16(tg_tensor *const *in, const void *a) {
    (void)a;
    tg_tensor *lp, *H, *lse;
    if (tg_logprob_entropy_lse(in[0], in[1], NULL, &lp, &H, &lse) != TG_OK) return NULL;
    return tg_add(tg_add(lp, tg_scale(H, 0.5)), tg_scale(lse, 0.25));
}

Test(backends, bf16_conversions_and_fused_ops) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *x = with_specials(randn(TG_F32, 2, (int64_t[]){9, 33}, 41));
    ((float *)tg_data(x))[5] = 1.0f + 0x1p-8f; /* a tie: to even */
    ((float *)tg_data(x))[6] = 3.4028235e38f;  /* rounds to infinity */
    run_both("bf16 round trip", 1, &x, e_bf16_round_trip, NULL, false);
    tg_tensor *z = tg_to_dtype(randn(TG_F32, 2, (int64_t[]){13, 700}, 42), TG_BF16);
    tg_tensor *in[2] = {z, tgt_targets(13, 700, 43)};
    run_both("bf16 logits op", 2, in, e_logprob_bf16, NULL, true);
    for (int j = 0; j < 2; j++) {
        tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
        o.vocab_block = j ? 7 : 0;
        o.chunk_rows = j ? 5 : 0;
        o.grad_f32 = j == 1;
        tg_tensor *li[4] = {tg_to_dtype(randn(TG_F32, 2, (int64_t[]){17, 6}, 44), TG_BF16),
                            tg_to_dtype(randn(TG_F32, 2, (int64_t[]){30, 6}, 45), TG_BF16),
                            tg_to_dtype(randn(TG_F32, 1, (int64_t[]){30}, 46), TG_BF16),
                            tgt_targets(17, 30, 47)};
        g_grad_max_rel = 0x1p-7;
        run_both(j ? "bf16 linear, blocks, f32 grads" : "bf16 linear", 4, li, e_linear, &o, true);
        g_grad_max_rel = 0.0;
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* a loss on the host for device inputs: refused, naming the rows */
static tg_status host_loss_chunk(const tg_linear_loss_chunk *ch, void *user, tg_tensor **loss) {
    (void)user;
    *loss = tg_to_device(tg_sum(ch->logprob), TG_CPU);
    return *loss ? TG_OK : tg_last_status();
}

Test(backends, linear_loss_refuses_a_loss_on_another_device) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *h = tg_to_device(randn(TG_F64, 2, (int64_t[]){7, 3}, 1), TG_CUDA);
    tg_tensor *w = tg_to_device(randn(TG_F64, 2, (int64_t[]){5, 3}, 2), TG_CUDA);
    tg_tensor *y = tg_to_device(tgt_targets(7, 5, 3), TG_CUDA);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    tg_tensor *loss = NULL;
    cr_assert_eq(tg_linear_loss(h, w, NULL, y, host_loss_chunk, NULL, NULL, &loss, NULL, NULL),
                 TG_ERR_DEVICE, "%s", tg_last_error());
    tgt_assert_error(TG_ERR_DEVICE, "tg_linear_loss: the loss of rows [0, 7) is on cpu",
                     "the inputs are on cuda", NULL);
    cr_assert_null(loss);
    cr_assert_null(tg_grad(w));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(backends, linear_loss_agrees_with_the_cpu) {
    NEED_DEVICE();
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 3; j++) {
            int t = tg_scope_begin();
            tg_linear_loss_opts o = tg_linear_loss_opts_default();
            o.temperature = 0.8;
            o.chunk_rows = j == 0 ? 0 : 5;
            o.vocab_block = j == 2 ? 7 : 0; /* several blocks: the recompute path */
            o.entropy_grad = j != 1;
            tg_tensor *in[5] = {randn(FLOATS[k], 2, (int64_t[]){17, 6}, 1),
                                randn(FLOATS[k], 2, (int64_t[]){30, 6}, 2),
                                randn(FLOATS[k], 1, (int64_t[]){30}, 3), tgt_targets(17, 30, 4),
                                randn(FLOATS[k], 1, (int64_t[]){17}, 5)};
            char what[64];
            snprintf(what, sizeof what, "linear loss %s chunk %lld block %lld",
                     tg_dtype_name(FLOATS[k]), (long long)o.chunk_rows, (long long)o.vocab_block);
            run_both(what, 5, in, e_linear_loss, &o, true);
            cr_assert_eq(tg_scope_end(t), TG_OK);
        }
    }
    int sc = tg_scope_begin(); /* bf16: the device's GEMMs read bf16 */
    tg_linear_loss_opts o = tg_linear_loss_opts_default();
    o.chunk_rows = 5;
    tg_tensor *li[5] = {tg_to_dtype(randn(TG_F32, 2, (int64_t[]){17, 6}, 44), TG_BF16),
                        tg_to_dtype(randn(TG_F32, 2, (int64_t[]){30, 6}, 45), TG_BF16),
                        tg_to_dtype(randn(TG_F32, 1, (int64_t[]){30}, 46), TG_BF16),
                        tgt_targets(17, 30, 47), randn(TG_F32, 1, (int64_t[]){17}, 48)};
    g_grad_max_rel = 0x1p-7;
    run_both("bf16 linear loss", 5, li, e_linear_loss, &o, true);
    g_grad_max_rel = 0.0;
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(backends, linear_logprob_entropy_chunks_and_blocks) {
    NEED_DEVICE();
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 3; j++) {
            int t = tg_scope_begin();
            tg_linear_logprob_opts o = tg_linear_logprob_opts_default();
            o.temperature = 0.8;
            o.chunk_rows = j == 0 ? 0 : 5;
            o.vocab_block = j == 2 ? 7 : 0;
            o.entropy_grad = j != 1;
            tg_tensor *in[4] = {randn(FLOATS[k], 2, (int64_t[]){17, 6}, 1),
                                randn(FLOATS[k], 2, (int64_t[]){30, 6}, 2),
                                randn(FLOATS[k], 1, (int64_t[]){30}, 3), tgt_targets(17, 30, 4)};
            char what[64];
            snprintf(what, sizeof what, "linear %s chunk %lld block %lld",
                     tg_dtype_name(FLOATS[k]), (long long)o.chunk_rows, (long long)o.vocab_block);
            run_both(what, 4, in, e_linear, &o, true);
            cr_assert_eq(tg_scope_end(t), TG_OK);
        }
    }
}

/* ---- softmax ------------------------------------------------------------------------------- */

static tg_tensor *s_softmax(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_softmax(in[0]);
}
static tg_tensor *s_log_softmax(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_log_softmax(in[0]);
}
static tg_tensor *s_softmax_t(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_log_softmax(tg_transpose(in[0], 0, 1));
}

/* Rows with -inf entries and one row of all -inf (NaN out). */
static tg_tensor *masked_rows(tg_dtype dt, int64_t n, int64_t v, uint64_t seed) {
    tg_tensor *t = randn(dt, 2, (int64_t[]){n, v}, seed);
    double *x = host_values(t);
    for (int64_t j = 0; j < v; j += 3) x[j] = -INFINITY; /* row 0: every third */
    for (int64_t j = 0; j < v; j++) x[v + j] = -INFINITY; /* row 1: all */
    tg_tensor *r = tg_to_dtype(tg_from_data(TG_F64, 2, (int64_t[]){n, v}, x), dt);
    free(x);
    return r;
}

Test(backends, softmax_and_log_softmax) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_tensor *x = randn(FLOATS[d], 3, (int64_t[]){2, 3, 700}, 70);
        run_both("softmax", 1, &x, s_softmax, NULL, true);
        run_both("log_softmax", 1, &x, s_log_softmax, NULL, true);
        tg_tensor *y = randn(FLOATS[d], 2, (int64_t[]){37, 9}, 71);
        run_both("log_softmax of a transposed view", 1, &y, s_softmax_t, NULL, true);
        tg_tensor *m = masked_rows(FLOATS[d], 4, 50, 72);
        run_both("softmax with -inf", 1, &m, s_softmax, NULL, false);
        run_both("log_softmax with -inf", 1, &m, s_log_softmax, NULL, false);
        tg_tensor *sp = with_specials(randn(FLOATS[d], 2, (int64_t[]){3, 300}, 74)); /* NaN, inf */
        run_both("softmax with NaN and inf", 1, &sp, s_softmax, NULL, false);
        run_both("log_softmax with NaN and inf", 1, &sp, s_log_softmax, NULL, false);
        tg_tensor *z = randn(FLOATS[d], 0, NULL, 73);
        run_both("softmax of a 0-d tensor", 1, &z, s_softmax, NULL, true);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

/* ---- gather ---------------------------------------------------------------------------------- */

static tg_tensor *g_gather(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_gather(in[0], in[1]);
}

Test(backends, gather_with_repeated_indices_and_range_errors) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        int64_t idx[3 * 4] = {0, 5, 5, 2, 6, 6, 6, 6, 1, 0, 3, 6};
        tg_tensor *in[2] = {randn(FLOATS[d], 2, (int64_t[]){3, 7}, 80),
                            tg_from_data(TG_I64, 2, (int64_t[]){3, 4}, idx)};
        run_both("gather", 2, in, g_gather, NULL, true);
        /* out of range: the same error on both devices */
        idx[6] = 7;
        tg_tensor *bad = tg_from_data(TG_I64, 2, (int64_t[]){3, 4}, idx);
        tg_tensor *t = randn(FLOATS[d], 2, (int64_t[]){3, 7}, 81);
        cr_assert_null(tg_gather(t, bad));
        char cpu_msg[512];
        snprintf(cpu_msg, sizeof cpu_msg, "%s", tg_last_error());
        tg_clear_error();
        cr_assert_null(tg_gather(tg_to_device(t, TG_CUDA), tg_to_device(bad, TG_CUDA)));
        cr_assert_eq(tg_last_status(), TG_ERR_VALUE);
        cr_assert_str_eq(tg_last_error(), cpu_msg);
        tg_clear_error();
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

/* ---- matmul ---------------------------------------------------------------------------------- */

static tg_tensor *m_mm(tg_tensor *const *in, const void *a) {
    (void)a;
    return tg_matmul(in[0], in[1]);
}
static tg_tensor *m_mm_tt(tg_tensor *const *in, const void *a) { /* both read transposed */
    (void)a;
    return tg_matmul(tg_transpose(in[0], -1, -2), tg_transpose(in[1], -1, -2));
}
static tg_tensor *m_mm_step(tg_tensor *const *in, const void *a) { /* no unit stride: packed */
    (void)a;
    return tg_matmul(tg_slice(in[0], -1, 0, 8, 2), tg_slice(in[1], 0, 0, 8, 2));
}

Test(backends, matmul_layouts_batches_and_shared_weights) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_dtype dt = FLOATS[d];
        tg_tensor *a2[2] = {randn(dt, 2, (int64_t[]){5, 4}, 90), randn(dt, 2, (int64_t[]){4, 3}, 91)};
        run_both("matmul 2-D", 2, a2, m_mm, NULL, true);
        tg_tensor *ab[2] = {randn(dt, 3, (int64_t[]){2, 5, 4}, 92),
                            randn(dt, 3, (int64_t[]){2, 4, 3}, 93)};
        run_both("matmul batched", 2, ab, m_mm, NULL, true);
        tg_tensor *as[2] = {randn(dt, 4, (int64_t[]){2, 3, 5, 4}, 94),
                            randn(dt, 2, (int64_t[]){4, 3}, 95)};
        run_both("matmul with a shared 2-D b", 2, as, m_mm, NULL, true);
        tg_tensor *at[2] = {randn(dt, 3, (int64_t[]){2, 4, 5}, 96),
                            randn(dt, 3, (int64_t[]){2, 3, 4}, 97)};
        run_both("matmul of transposed views", 2, at, m_mm_tt, NULL, true);
        tg_tensor *ap[2] = {randn(dt, 2, (int64_t[]){3, 8}, 98), randn(dt, 2, (int64_t[]){8, 6}, 99)};
        run_both("matmul of step-2 slices", 2, ap, m_mm_step, NULL, true);
        tg_tensor *v[2] = {randn(dt, 2, (int64_t[]){1, 6}, 100), randn(dt, 2, (int64_t[]){6, 1}, 101)};
        run_both("matmul 1x6 @ 6x1", 2, v, m_mm, NULL, true);
        tg_tensor *k0[2] = {randn(dt, 2, (int64_t[]){3, 0}, 102), randn(dt, 2, (int64_t[]){0, 4}, 103)};
        run_both("matmul with K = 0", 2, k0, m_mm, NULL, false);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

/* ---- views and copies -------------------------------------------------------------------------- */

static tg_tensor *v_chain(tg_tensor *const *in, const void *a) {
    (void)a;
    tg_tensor *t = tg_contiguous(tg_transpose(in[0], 0, 2));          /* (5, 3, 4) */
    tg_tensor *s = tg_slice(t, 2, 1, 4, 2);                            /* (5, 3, 2) */
    tg_tensor *r = tg_reshape(tg_transpose(s, 0, 1), TG_SHAPE(3, 10)); /* copy */
    tg_tensor *e = tg_expand(tg_sum_dim(r, 0, true), TG_SHAPE(4, 10));
    return tg_mul(tg_clone(e), tg_exp(tg_scale(e, 0.1)));
}

Test(backends, views_copies_and_expand) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_tensor *x = randn(FLOATS[d], 3, (int64_t[]){4, 3, 5}, 110);
        run_both("transpose/slice/reshape/expand chain", 1, &x, v_chain, NULL, true);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

/* permute, narrow, unsqueeze, flatten, then cat and stack with a strided view */
static tg_tensor *v_join(tg_tensor *const *in, const void *a) {
    (void)a;
    tg_tensor *p = tg_permute(in[0], 3, (int[]){2, 0, 1});          /* (5, 4, 3) */
    tg_tensor *n = tg_narrow(p, 1, 1, 2);                           /* (5, 2, 3) */
    tg_tensor *u = tg_unsqueeze(tg_flatten(n, 1, 2), 0);            /* (1, 5, 6) */
    tg_tensor *c = tg_cat(3, (tg_tensor *[]){u, u, tg_exp(u)}, 0);  /* (3, 5, 6) */
    tg_tensor *st = tg_stack(2, (tg_tensor *[]){c, tg_transpose(tg_permute(c, 3, (int[]){0, 2, 1}), 1, 2)}, 1);
    return tg_add(tg_triu(st, -1), tg_tril(st, 2));
}

Test(backends, shape_ops_and_joining) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_tensor *x = randn(FLOATS[d], 3, (int64_t[]){4, 3, 5}, 120);
        run_both("permute/narrow/flatten/unsqueeze/cat/stack/triu/tril", 1, &x, v_join, NULL, true);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

/* the losses composed from recorded ops, cross-entropy through the fused op */
static tg_tensor *ip_chain(tg_tensor *const *in, const void *a) {
    (void)a;
    tg_tensor *t = tg_clone(in[0]); /* (4, 6), part of the graph when in[0] requires grad */
    tg_tensor *o = in[1];           /* (6) */
    if (tg_add_(t, o) != TG_OK || tg_mul_(t, o) != TG_OK || tg_scale_(t, 0.5) != TG_OK ||
        tg_sub_(t, tg_exp(o)) != TG_OK)
        return NULL;
    return t;
}
static tg_tensor *ip_views(tg_tensor *const *in, const void *a) {
    (void)a;
    bool prev = tg_set_grad_enabled(false);
    tg_tensor *t = tg_clone(in[0]);                        /* (4, 6) */
    tg_tensor *v = tg_transpose(tg_slice(t, 1, 1, 6, 2), 0, 1); /* (3, 4), strided */
    tg_status st = tg_add_(v, tg_slice(in[1], 0, 0, 4, 1));
    if (st == TG_OK) st = tg_scale_(v, -2.0);
    if (st == TG_OK) st = tg_fill_(tg_slice(t, 0, 3, 4, 1), 7.25);
    if (st == TG_OK) st = tg_copy_(tg_slice(t, 0, 0, 1, 1), tg_to_dtype(tg_slice(in[0], 0, 2, 3, 1), TG_I64));
    if (st == TG_OK) st = tg_add_(t, t); /* aliasing: read from a copy */
    tg_set_grad_enabled(prev);
    return st == TG_OK ? t : NULL;
}

/* Recorded in-place ops through views (CopySlices) and a view made before
 * them (AsStridedBackward when it is used): the same graph on both devices. */
static tg_tensor *ip_views_grad(tg_tensor *const *in, const void *a) {
    (void)a;
    tg_tensor *t = tg_scale(in[0], 1.0);                        /* (4, 6) in the graph */
    tg_tensor *early = tg_slice(t, 0, 1, 3, 1);                 /* before the edits */
    tg_tensor *v = tg_transpose(tg_slice(t, 1, 1, 6, 2), 0, 1); /* (3, 4), strided */
    tg_status st = tg_mul_(v, tg_slice(in[1], 0, 0, 4, 1));
    if (st == TG_OK) st = tg_fill_(tg_slice(t, 0, 3, 4, 1), 7.25);
    if (st == TG_OK) st = tg_copy_(tg_slice(t, 0, 0, 1, 1), in[1]);
    if (st == TG_OK) st = tg_add_(tg_slice(t, 1, 0, 2, 1), tg_slice(t, 1, 4, 6, 1));
    return st == TG_OK ? tg_add(t, tg_sum(early)) : NULL;
}

Test(backends, in_place_ops_recorded_strided_and_aliased) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_tensor *in[2] = {randn(FLOATS[d], 2, (int64_t[]){4, 6}, 120),
                            randn(FLOATS[d], 1, (int64_t[]){6}, 121)};
        run_both("add_/mul_/scale_/sub_ recorded", 2, in, ip_chain, NULL, true);
        run_both("in-place ops through strided views", 2, in, ip_views, NULL, false);
        run_both("recorded in-place ops through views", 2, in, ip_views_grad, NULL, true);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

Test(backends, in_place_error_names_the_op_on_the_device_too) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *x = tg_set_name(tg_to_device(randn(TG_F32, 2, (int64_t[]){3, 4}, 130), TG_CUDA), "x");
    tg_set_requires_grad(x, true);
    tg_tensor *h = tg_exp(tg_scale(x, 1.0)); /* exp saves its output */
    cr_assert_not_null(h, "%s", tg_last_error());
    tg_tensor *loss = tg_sum(h);
    bool prev = tg_set_grad_enabled(false);
    cr_assert_eq(tg_scale_(h, 2.0), TG_OK, "%s", tg_last_error());
    tg_set_grad_enabled(prev);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "ExpBackward", "scale_", "test_backends.c", "version 1",
                     NULL);
    cr_assert_null(tg_grad(x));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- CPU scalars --------------------------------------------------------------------------- */

/* A 0-d CPU tensor may meet CUDA tensors in elementwise ops, where and
 * in-place ops (PyTorch's CPU scalars): it is copied to the device by a
 * recorded tg_to_device, so its gradient comes back to the CPU. */
static tg_tensor *scalar_expr(tg_tensor *x, tg_tensor *sc) {
    tg_tensor *y = tg_mul(tg_add(x, sc), sc);
    return tg_sum(tg_add(y, tg_where(x, sc, tg_div(x, sc))));
}

Test(backends, cpu_scalars_mix_with_device_tensors) {
    NEED_DEVICE();
    int sc0 = tg_scope_begin();
    tg_tensor *x = randn(TG_F64, 2, (int64_t[]){3, 4}, 250);
    tg_tensor *s = tg_full(TG_F64, TG_SCALAR, 1.75);
    tg_tensor *xc = tg_clone(x), *scpu = tg_clone(s);
    tg_tensor *xd = tg_to_device(x, TG_CUDA), *sd = tg_clone(s); /* sd stays on the CPU */
    tg_set_requires_grad(xc, true), tg_set_requires_grad(scpu, true);
    tg_set_requires_grad(xd, true), tg_set_requires_grad(sd, true);
    tg_tensor *yc = scalar_expr(xc, scpu), *yd = scalar_expr(xd, sd);
    cr_assert_not_null(yd, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(yd), TG_CUDA);
    expect_same("value", yc, yd);
    cr_assert_eq(tg_backward(yc, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(yd, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(tg_grad(sd)), TG_CPU, "the scalar's gradient is on the CPU");
    expect_same("grad of the scalar", tg_grad(scpu), tg_grad(sd));
    expect_same("grad of x", tg_grad(xc), tg_grad(xd));
    /* in place, with grad mode off */
    bool prev = tg_set_grad_enabled(false);
    tg_tensor *tc = tg_clone(x), *td = tg_to_device(x, TG_CUDA);
    cr_assert_eq(tg_add_(td, s), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_mul_(td, s), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_add_(tc, s), TG_OK);
    cr_assert_eq(tg_mul_(tc, s), TG_OK);
    tg_set_grad_enabled(prev);
    expect_same("in place", tc, td);
    /* a CPU tensor that is not 0-d is still refused, as is a CUDA 0-d into a CPU tensor */
    cr_assert_null(tg_add(xd, tg_ones(TG_F64, TG_SHAPE(4))));
    tgt_assert_error(TG_ERR_DEVICE, "different devices", NULL);
    tg_clear_error();
    cr_assert_eq(tg_add_(tc, tg_to_device(s, TG_CUDA)), TG_ERR_DEVICE);
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc0), TG_OK);
}

/* ---- the fused log-prob / entropy op ---------------------------------------------------------- */

typedef struct lp_arg {
    tg_logprob_opts o;
    bool transposed; /* logits given as the transpose of a (V, N) tensor */
    bool with_lse;   /* the row log-sum-exp too, in the loss (z-loss) */
} lp_arg;

static tg_tensor *lp_expr(tg_tensor *const *in, const void *arg) {
    const lp_arg *a = arg;
    tg_tensor *z = a->transposed ? tg_transpose(in[0], 0, 1) : in[0];
    tg_tensor *lp = NULL, *h = NULL, *lse = NULL;
    if (a->with_lse) {
        if (tg_logprob_entropy_lse(z, in[1], &a->o, &lp, a->o.want_entropy ? &h : NULL, &lse) !=
            TG_OK)
            return NULL;
        lp = tg_add(lp, tg_scale(tg_square(lse), 0.05));
    } else if (tg_logprob_entropy(z, in[1], &a->o, &lp, a->o.want_entropy ? &h : NULL) != TG_OK) {
        return NULL;
    }
    if (!h) return lp;
    /* one output carrying both, so run_both compares both and backpropagates into both */
    return tg_add(lp, tg_scale(h, 0.37));
}


/* grad_into_logits on the device: the kernel writes the gradient over the logits it reads. */
static tg_tensor *lp_into(tg_tensor *const *in, const void *arg) {
    (void)arg;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.grad_into_logits = true;
    o.temperature = 0.8;
    tg_tensor *lp = NULL, *h = NULL, *lse = NULL;
    if (tg_logprob_entropy_lse(tg_scale(in[0], 1.5), in[1], &o, &lp, &h, &lse) != TG_OK)
        return NULL;
    return tg_add(tg_add(lp, tg_scale(h, 0.37)), tg_scale(tg_square(lse), 0.05));
}

Test(backends, logprob_grad_into_logits) {
    NEED_DEVICE();
    for (int d = 0; d < 2; d++) {
        int sc = tg_scope_begin();
        tg_tensor *in[2] = {randn(FLOATS[d], 2, (int64_t[]){9, 1100}, 170 + d),
                            tgt_targets(9, 1100, 171)};
        run_both("logprob grad_into_logits", 2, in, lp_into, NULL, true);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

Test(backends, logprob_fused_and_composite_match_the_cpu) {
    NEED_DEVICE();
    const int64_t N = 13, V = 1500;
    for (int d = 0; d < 2; d++) {
        for (int impl = 0; impl < 2; impl++) {
            for (int variant = 0; variant < 4; variant++) {
                int sc = tg_scope_begin();
                lp_arg a = {tg_logprob_opts_default(), variant == 2, variant < 2};
                a.o.impl = impl ? TG_LOGPROB_COMPOSITE : TG_LOGPROB_FUSED;
                a.o.temperature = variant == 1 ? 0.7 : 1.0;
                a.o.entropy_grad = variant != 3;
                a.o.chunk_size = impl && variant == 1 ? 4 : 0;
                tg_tensor *z = tg_scale(randn(FLOATS[d], 2, (int64_t[]){N, V}, 140 + variant), 3.0);
                if (variant == 3) z = masked_rows(FLOATS[d], N, V, 150); /* -inf entries */
                if (variant == 3) { /* row 1 (all -inf) is ignored: a valid input */
                    int64_t y[13];
                    tg_tensor *t0 = tgt_targets(N, V, 151);
                    tg_copy_out(t0, TG_I64, y, sizeof y);
                    y[0] = 1; /* a finite column of row 0 */
                    y[1] = -100;
                    tg_tensor *in[2] = {z, tg_from_data(TG_I64, 1, (int64_t[]){N}, y)};
                    run_both("logprob with -inf entries", 2, in, lp_expr, &a, true);
                } else {
                    tg_tensor *zz = variant == 2 ? tg_contiguous(tg_transpose(z, 0, 1)) : z;
                    tg_tensor *in[2] = {zz, tgt_targets(N, V, 160 + variant)};
                    char what[96];
                    snprintf(what, sizeof what, "logprob %s %s variant %d",
                             impl ? "composite" : "fused", tg_dtype_name(FLOATS[d]), variant);
                    run_both(what, 2, in, lp_expr, &a, true);
                }
                cr_assert_eq(tg_scope_end(sc), TG_OK);
            }
        }
    }
}

/* Contiguous f32 rows are read (and their gradients written) with 16-byte
 * vectors after a scalar head: rows of odd length, rows that start off a
 * 16-byte boundary (a column slice), and logits whose rows are aligned
 * differently from their gradient's. */
static tg_tensor *lp_sliced(tg_tensor *const *in, const void *arg) {
    const int64_t *c0 = arg;
    tg_tensor *z = tg_slice(in[0], 1, c0[0], c0[1], 1);
    tg_tensor *lp = NULL, *h = NULL;
    if (tg_logprob_entropy(z, in[1], NULL, &lp, &h) != TG_OK) return NULL;
    return tg_add(lp, tg_scale(h, 0.37));
}

Test(backends, logprob_vector_paths_with_any_alignment) {
    NEED_DEVICE();
    const int64_t N = 7;
    const int64_t widths[3][3] = {{1501, 0, 1501}, {1503, 1, 1502}, {1507, 3, 1504}};
    const tg_dtype dts[3] = {FLOATS[0], FLOATS[1], TG_BF16}; /* bf16: 8 a 16-byte load */
    for (int d = 0; d < 3; d++) {
        for (int k = 0; k < 3; k++) {
            int sc = tg_scope_begin();
            int64_t W = widths[k][0], cols[2] = {widths[k][1], widths[k][2]};
            tg_tensor *z = tg_scale(randn(dts[d] == TG_BF16 ? TG_F32 : dts[d], 2,
                                          (int64_t[]){N, W}, 240 + k), 4.0);
            tg_tensor *in[2] = {dts[d] == TG_BF16 ? tg_to_dtype(z, TG_BF16) : z,
                                tgt_targets(N, cols[1] - cols[0], 241 + k)};
            char what[96];
            snprintf(what, sizeof what, "logprob %s rows of %lld from column %lld of %lld",
                     tg_dtype_name(dts[d]), (long long)(cols[1] - cols[0]),
                     (long long)cols[0], (long long)W);
            run_both(what, 2, in, lp_sliced, cols, true);
            cr_assert_eq(tg_scope_end(sc), TG_OK);
        }
    }
}

Test(backends, logprob_many_short_rows_a_warp_per_row) {
    /* 2048 rows of 21 (sliced from 23: rows off the 16-byte grid) take the
     * warp-per-row kernels (N >= 2048, V <= 65536); f32, f64 and bf16, with
     * ignored rows, a row of -inf but one entry, temperature and lse */
    NEED_DEVICE();
    const int64_t N = 2048, W = 23;
    const tg_dtype dts[3] = {TG_F32, TG_F64, TG_BF16};
    for (int d = 0; d < 3; d++) {
        int sc = tg_scope_begin();
        tg_tensor *z = randn(d == 1 ? TG_F64 : TG_F32, 2, (int64_t[]){N, W}, 300 + d);
        double *x = host_values(z);
        for (int64_t j = 0; j < W; j++) x[7 * W + j] = j == 5 ? 1.0 : -INFINITY;
        z = tg_to_dtype(tg_from_data(TG_F64, 2, (int64_t[]){N, W}, x), dts[d]);
        free(x);
        int64_t *y = malloc((size_t)N * sizeof *y);
        cr_assert_not_null(y);
        tg_tensor *t0 = tgt_targets(N, W - 2, 310 + d);
        tg_copy_out(t0, TG_I64, y, (size_t)N * sizeof *y);
        y[7] = 4; /* column 5 of the row, from column 1 */
        for (int64_t i = 3; i < N; i += 97) y[i] = -100;
        tg_tensor *in[2] = {z, tg_from_data(TG_I64, 1, (int64_t[]){N}, y)};
        free(y);
        const int64_t cols[2] = {1, W - 1};
        char what[64];
        snprintf(what, sizeof what, "logprob %s, %lld rows of %lld", tg_dtype_name(dts[d]),
                 (long long)N, (long long)(W - 2));
        run_both(what, 2, in, lp_sliced, cols, true);
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}

Test(backends, logprob_bad_rows_give_the_same_error) {
    NEED_DEVICE();
    for (int impl = 0; impl < 4; impl++) { /* fused, composite; f32, bf16 (impl & 2) */
        for (int kind = 0; kind < 4; kind++) {
            int sc = tg_scope_begin();
            tg_tensor *z = randn(TG_F32, 2, (int64_t[]){6, 40}, 170);
            double *x = host_values(z);
            if (kind == 0) x[4 * 40 + 9] = NAN;                         /* row 4, column 9 */
            else if (kind == 1) for (int j = 0; j < 40; j++) x[2 * 40 + j] = -INFINITY; /* all */
            else if (kind == 2) x[3 * 40 + 17] = INFINITY;               /* row 3: +inf */
            else for (int j = 0; j < 40; j++) x[1 * 40 + j] = j % 4 ? -INFINITY : NAN; /* mixed */
            x[5 * 40 + 3] = NAN; /* a later bad row: the lowest is reported */
            z = tg_to_dtype(tg_from_data(TG_F64, 2, (int64_t[]){6, 40}, x),
                            impl & 2 ? TG_BF16 : TG_F32);
            free(x);
            tg_tensor *y = tg_from_data(TG_I64, 1, (int64_t[]){6}, (int64_t[]){0, 1, 2, 3, 4, 5});
            tg_logprob_opts o = tg_logprob_opts_default();
            o.impl = impl & 1 ? TG_LOGPROB_COMPOSITE : TG_LOGPROB_FUSED;
            tg_tensor *lp = NULL, *h = NULL;
            cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_ERR_VALUE);
            char cpu_msg[512];
            snprintf(cpu_msg, sizeof cpu_msg, "%s", tg_last_error());
            tg_clear_error();
            cr_assert_eq(tg_logprob_entropy(tg_to_device(z, TG_CUDA), tg_to_device(y, TG_CUDA), &o,
                                            &lp, &h),
                         TG_ERR_VALUE);
            cr_assert_str_eq(tg_last_error(), cpu_msg);
            cr_assert_null(lp);
            cr_assert_null(h);
            /* a target outside [0, V) */
            tg_clear_error();
            tg_tensor *yb = tg_from_data(TG_I64, 1, (int64_t[]){6}, (int64_t[]){0, 1, 40, 3, 4, 5});
            cr_assert_eq(tg_logprob_entropy(tg_to_device(z, TG_CUDA), tg_to_device(yb, TG_CUDA), &o,
                                            &lp, &h),
                         TG_ERR_VALUE);
            tgt_assert_error(TG_ERR_VALUE, "row 2: target 40 is outside [0, 40)", NULL);
            tg_clear_error();
            cr_assert_eq(tg_scope_end(sc), TG_OK);
        }
    }
}
