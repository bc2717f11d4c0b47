/* tests/test_registry.c - every row of the op registry (tests/registry), on
 * every sample, f64 and f32:
 *  - the registry is complete: each public tg_*_at function of include/ is a
 *    row (or one of the few listed as not an op), each row's function exists;
 *  - forward: succeeds, results contiguous unless a view, and for the
 *    elementwise rows equal to the double reference (special values too);
 *  - batch: a sample whose dim 0 is a batch dim gives, on each slice b of its
 *    inputs, slice b of the whole result (what (B, T, V) vs (B*T, V) hid);
 *  - strided inputs give what their contiguous copies give;
 *  - f32 agrees with f64 within f32 accuracy;
 *  - gradients: gradcheck (f64, smooth samples), backward on every sample
 *    gives gradients of the inputs' shapes and dtypes, PyTorch's gradient at
 *    the kinks, nothing recorded under no-grad;
 *  - an input edited in place after the forward makes backward fail naming
 *    the in-place op (TG_ERR_INPLACE), or changes nothing: never a silently
 *    different gradient;
 *  - bad inputs and NULLs fail with the status the sample expects and a
 *    message naming the op called, inputs unchanged, nothing left alive;
 *  - every allocation failing in turn gives TG_ERR_NOMEM, no gradient, no leak;
 *  - every row has a sample without elements, its inputs over NULL (as
 *    NumPy and DLPack hand them over): the walks above run it with every
 *    differentiable input requiring grad (leaves over NULL too), the edits
 *    after the forward and the allocation sweep included.
 * PyTorch's own values, gradients and errors are compared through the manifest
 * (tests/registry/torch_ops.py, CTest registry_torch). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "registry.h"
#include "tg_ops_test_util.h"

TestSuite(registry, .init = tgt_setup, .fini = tgt_teardown);

/* ---- helpers ---------------------------------------------------------------------- */

static bool is_float(const tg_tensor *t) {
    return t && (tg_get_dtype(t) == TG_F32 || tg_get_dtype(t) == TG_F64);
}

static void release_outs(tg_tensor **out) {
    for (int k = 0; k < TGR_MAX_OUT; k++) {
        tg_release(out[k]);
        out[k] = NULL;
    }
}

/* a and b: same dtype and shape, values within rtol/atol (NaN = NaN, infs
 * equal, i64/bool exact). Writes what differs into why. */
static bool same(const tg_tensor *a, const tg_tensor *b, double rtol, double atol, char *why,
                 size_t n) {
    if (!a || !b) {
        snprintf(why, n, "%s is NULL", a ? "the second" : "the first");
        return !a && !b;
    }
    if (tg_get_dtype(a) != tg_get_dtype(b)) {
        snprintf(why, n, "dtype %s vs %s", tg_dtype_name(tg_get_dtype(a)),
                 tg_dtype_name(tg_get_dtype(b)));
        return false;
    }
    if (tg_ndim(a) != tg_ndim(b)) {
        snprintf(why, n, "ndim %d vs %d", tg_ndim(a), tg_ndim(b));
        return false;
    }
    for (int d = 0; d < tg_ndim(a); d++)
        if (tg_shape(a)[d] != tg_shape(b)[d]) {
            snprintf(why, n, "dim %d: %lld vs %lld", d, (long long)tg_shape(a)[d],
                     (long long)tg_shape(b)[d]);
            return false;
        }
    double *va = tgo_values(a), *vb = tgo_values(b);
    bool ok = true;
    for (int64_t i = 0; i < tg_numel(a) && ok; i++) {
        double x = va[i], y = vb[i];
        if (isnan(x) || isnan(y)) ok = isnan(x) && isnan(y);
        else if (isinf(x) || isinf(y)) ok = x == y;
        else ok = fabs(x - y) <= atol + rtol * fmax(fabs(x), fabs(y));
        if (!ok) snprintf(why, n, "element %lld: %.17g vs %.17g", (long long)i, x, y);
    }
    free(va);
    free(vb);
    return ok;
}

/* The row is a differentiable function of input k of sample s. */
static bool diff_input(const tgr_op *op, const tgr_sample *s, int k) {
    return (op->diff >> k & 1) && is_float(s->in[k]);
}

/* A leaf of its own with t's values and layout (a strided t gives a strided
 * leaf, made as the registry makes one; an empty one has data NULL),
 * requiring grad. */
static tg_tensor *leaf_copy(const tg_tensor *t) {
    if (tg_numel(t) == 0) { /* over no memory, through DLPack (the samples': tg_from_blob) */
        tg_tensor *e = tgr_over_null(t, TG_CPU, true, true);
        cr_assert_not_null(e, "%s", tg_last_error());
        return e;
    }
    tg_tensor *d = tg_detach((tg_tensor *)t);
    tg_tensor *c = tg_clone(d);
    tg_release(d);
    if (!tg_is_contiguous(t) && tg_numel(t) > 1) {
        tg_tensor *v = tgr_strided(c); /* consumes c */
        c = v;
    }
    cr_assert_not_null(c, "%s", tg_last_error());
    cr_assert_eq(tg_set_requires_grad(c, true), TG_OK, "%s", tg_last_error());
    return c;
}

/* leaves[k]: a copy of the sample's input k that requires grad (for the
 * differentiable float inputs in `which`, a mask; the input itself otherwise,
 * retained). */
static void make_leaves_of(const tgr_op *op, const tgr_sample *s, tg_tensor **leaves,
                           unsigned which) {
    for (int k = 0; k < TGR_MAX_IN; k++) leaves[k] = NULL;
    for (int k = 0; k < s->nin; k++) {
        if (!s->in[k]) continue;
        if ((which >> k & 1) && diff_input(op, s, k) && !(op->flags & TGR_CREATE))
            leaves[k] = leaf_copy(s->in[k]);
        else
            leaves[k] = tg_retain(s->in[k]);
    }
}

static void make_leaves(const tgr_op *op, const tgr_sample *s, tg_tensor **leaves, bool grad) {
    make_leaves_of(op, s, leaves, grad ? ~0u : 0u);
}

static void release_n(tg_tensor **t, int n) {
    for (int k = 0; k < n; k++) {
        tg_release(t[k]);
        t[k] = NULL;
    }
}

static tg_tensor *loss_mask(tg_tensor *const *out, int nout, unsigned mask) {
    return tgr_loss(out, nout, mask);
}
static tg_tensor *loss_of(tg_tensor *const *out, int nout) { return loss_mask(out, nout, ~0u); }

typedef void (*sample_check)(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index);

/* Calls check on every sample of every row for both float dtypes (bad samples
 * only when `bad`), with nothing left alive after each row. */
static void each_sample(sample_check check, bool bad, bool f32) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        for (int d = 0; d < (f32 ? 2 : 1); d++) {
            const tg_dtype dt = d ? TG_F32 : TG_F64;
            tgr_samples ss;
            tgr_samples_of(op, dt, &ss);
            cr_assert(ss.n > 0, "%s has no samples", op->name);
            for (int k = 0; k < ss.n; k++)
                if (!(ss.s[k].flags & TGR_S_BAD) != bad) check(op, dt, &ss.s[k], k);
            tgr_samples_free(&ss);
        }
        tg_clear_error();
        tg_live_counts lc = tg_live();
        cr_assert(lc.tensors == 0 && lc.nodes == 0, "%s: %lld tensors, %lld nodes alive after its "
                  "samples", op->name, (long long)lc.tensors, (long long)lc.nodes);
    }
}

#define WHAT(op, dt, s) "%s (%s, %s): %s", (op)->name, tg_dtype_name(dt), (s)->what

/* ---- completeness ------------------------------------------------------------------- */

/* Every `tg_NAME_at(` declared in include/tapegrad/ *.h is a row or a non-op. */
Test(registry, every_public_op_has_a_row) {
    static const char *const headers[] = {"ops.h", "tensor.h", "logprob.h", "autograd.h"};
    int found = 0;
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
        char path[512];
        snprintf(path, sizeof path, "%s/include/tapegrad/%s", TGR_SOURCE_DIR, headers[h]);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "cannot read %s", path);
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            if (strstr(line, "#define")) continue;
            for (char *p = strstr(line, "tg_"); p; p = strstr(p + 1, "tg_")) {
                if (p > line && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
                char name[128];
                size_t n = 0;
                while ((isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < sizeof name)
                    name[n] = p[n], n++;
                name[n] = '\0';
                if (n < 4 || strcmp(name + n - 3, "_at") || p[n] != '(') continue;
                name[n - 3] = '\0';
                found++;
                bool listed = tgr_find_c(name) != NULL;
                for (int k = 0; !listed && TGR_NOT_OPS[k]; k++) listed = !strcmp(TGR_NOT_OPS[k], name);
                cr_assert(listed, "%s (include/tapegrad/%s) is public but has no registry row "
                          "(tests/registry/rows_*.c) and is not in TGR_NOT_OPS", name, headers[h]);
            }
        }
        fclose(f);
    }
    cr_assert(found > 100, "only %d public functions found", found);
}

/* Every row names a public function, once; names are unique. */
Test(registry, rows_are_unique_and_complete) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        cr_assert(op->name && op->c_name && op->torch && op->apply && op->samples, "row %d", i);
        for (int j = 0; j < i; j++) {
            cr_assert(strcmp(op->name, tgr_ops[j]->name), "two rows named %s", op->name);
            cr_assert(strcmp(op->c_name, tgr_ops[j]->c_name), "two rows for %s", op->c_name);
        }
        cr_assert(op->nin <= TGR_MAX_IN && op->nout <= TGR_MAX_OUT && op->nparams <= TGR_MAX_PARAMS);
        cr_assert(op->nin_required <= op->nin);
        for (int k = 0; k < op->nparams; k++)
            cr_assert(strchr("ibdrTSDV", op->p[k].kind), "%s: parameter kind %c", op->name,
                      op->p[k].kind);
    }
}

/* Every row has a sample without elements (an empty input over NULL, as
 * tgr_add makes it; an empty result for the rows that create), so that every
 * walk meets one: forward, backward with every input requiring grad, the
 * edits after the forward, the allocation sweep, the device, PyTorch. It is
 * a bad sample only where PyTorch refuses no elements (the max of nothing). */
Test(registry, every_row_has_an_empty_sample) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        int empty = 0;
        for (int k = 0; k < ss.n; k++) {
            const tgr_sample *s = &ss.s[k];
            if (s->flags & TGR_S_EMPTY) empty++;
            for (int j = 0; j < s->nin; j++)
                if (s->in[j] && tg_numel(s->in[j]) == 0)
                    cr_assert(tg_data(s->in[j]) == NULL && (s->flags & TGR_S_EMPTY),
                              "%s (%s): input %d has no elements but is not over NULL", op->name,
                              s->what, j);
        }
        cr_assert(empty > 0, "%s has no sample without elements", op->name);
        tgr_samples_free(&ss);
    }
}

/* ---- forward -------------------------------------------------------------------------- */

static void check_forward(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    tg_tensor *out[TGR_MAX_OUT];
    tg_clear_error();
    tg_status st = tgr_call(op, s, out);
    cr_assert_eq(st, TG_OK, WHAT(op, dt, s), tg_last_error());
    cr_assert_eq(tg_last_status(), TG_OK, "%s left an error after succeeding", op->name);
    cr_assert_not_null(out[0], "%s (%s): no output", op->name, s->what);
    for (int k = 0; k < tgr_nout(op); k++) {
        if (!out[k]) continue;
        if (!(op->flags & (TGR_VIEW | TGR_MAYBE_SELF)))
            cr_assert(tg_is_contiguous(out[k]), "%s (%s): output %d not contiguous", op->name,
                      s->what, k);
    }
    if (op->ref && is_float(s->in[0]) && !(s->flags & TGR_S_DTYPES)) {
        double *x = tgo_values(s->in[0]), *y = tgo_values(out[0]);
        const double rtol = dt == TG_F32 ? 4e-7 : 1e-15;
        for (int64_t i = 0; i < tg_numel(out[0]); i++) {
            double want = op->ref(x[i], &s->a);
            if (dt == TG_F32) want = (float)want;
            bool ok = isnan(want) ? isnan(y[i])
                      : isinf(want) ? y[i] == want
                                    : fabs(y[i] - want) <= rtol * fmax(1, fabs(want)) &&
                                          (want != 0 || signbit(want) == signbit(y[i]));
            cr_assert(ok, "%s (%s, %s) element %lld: %.17g for %.17g, reference %.17g", op->name,
                      tg_dtype_name(dt), s->what, (long long)i, y[i], x[i], want);
        }
        free(x);
        free(y);
    }
    release_outs(out);
}

Test(registry, forward_on_every_sample) { each_sample(check_forward, false, true); }

/* The elementwise rows against their reference at the sizes that reach the
 * tiled transposed kernel (>= 1024 elements) and the threaded one (>= 32768),
 * contiguous, transposed and strided, f32 and f64. */
Test(registry, elementwise_reference_at_kernel_sizes) {
    tgr_init();
    static const int64_t sizes[][2] = {{40, 40}, {200, 200}};
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        if (!op->ref) continue;
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        const tgr_args a = ss.s[0].a;
        tgr_samples_free(&ss);
        for (int d = 0; d < 2; d++)
            for (int z = 0; z < 2; z++)
                for (int layout = 0; layout < 3; layout++) {
                    const tg_dtype dt = d ? TG_F64 : TG_F32;
                    const int64_t r = sizes[z][0], c = sizes[z][1];
                    tg_tensor *x = layout == 0 ? tg_rand(dt, TG_SHAPE(r, c), 7, op->lo, op->hi)
                                   : layout == 1
                                       ? tgr_strided(tg_rand(dt, TG_SHAPE(r, c), 8, op->lo, op->hi))
                                       : NULL;
                    if (layout == 2) { /* every second column of a (r, 2c) tensor */
                        tg_tensor *b = tg_rand(dt, TG_SHAPE(r, 2 * c), 9, op->lo, op->hi);
                        x = tg_slice(b, 1, 1, 2 * c, 2);
                        tg_release(b);
                    }
                    tg_tensor *out[TGR_MAX_OUT];
                    cr_assert_eq(tgr_call_in(op, (tg_tensor *[]){x}, &a, out), TG_OK, "%s: %s",
                                 op->name, tg_last_error());
                    double *xv = tgo_values(x), *yv = tgo_values(out[0]);
                    const double rtol = dt == TG_F32 ? 4e-7 : 1e-15;
                    for (int64_t e = 0; e < r * c; e++) {
                        double want = op->ref(xv[e], &a);
                        if (dt == TG_F32) want = (float)want;
                        cr_assert(fabs(yv[e] - want) <= rtol * fmax(1, fabs(want)),
                                  "%s (%s, (%lld, %lld), layout %d) element %lld: %.17g for %.17g, "
                                  "reference %.17g", op->name, tg_dtype_name(dt), (long long)r,
                                  (long long)c, layout, (long long)e, yv[e], xv[e], want);
                    }
                    free(xv);
                    free(yv);
                    release_outs(out);
                    tg_release(x);
                }
    }
}

/* The rows that say what backward keeps keep exactly that (the bytes of the
 * input, of the output, or nothing), and nothing under no-grad. */
Test(registry, saved_bytes_as_declared) {
    tgr_init();
    int checked = 0;
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        if (op->saves == TGR_SAVES_UNSAID) continue;
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        const tgr_args a = ss.s[0].a;
        tgr_samples_free(&ss);
        tg_tensor *x = tg_rand(TG_F64, TG_SHAPE(8, 16), 5, op->lo, op->hi), *out[TGR_MAX_OUT];
        cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
        tg_mem_stats m;
        bool prev = tg_set_grad_enabled(false);
        cr_assert_eq(tgr_call_in(op, (tg_tensor *[]){x}, &a, out), TG_OK, "%s", tg_last_error());
        tg_set_grad_enabled(prev);
        cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
        cr_assert_eq(m.saved, 0, "%s saved %zu bytes under no-grad", op->name, (size_t)m.saved);
        release_outs(out);
        cr_assert_eq(tgr_call_in(op, (tg_tensor *[]){x}, &a, out), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
        const size_t want = op->saves == TGR_SAVES_NONE ? 0 : 8 * 16 * sizeof(double);
        cr_assert_eq(m.saved, want, "%s: %zu saved bytes, expected %zu (%s)", op->name,
                     (size_t)m.saved, want, op->saves == TGR_SAVES_INPUT ? "its input"
                     : op->saves == TGR_SAVES_OUTPUT ? "its output" : "nothing");
        release_outs(out);
        tg_release(x);
        checked++;
    }
    cr_assert(checked >= 25, "%d rows", checked);
}

/* Slice b of the batched inputs gives slice b of every output. */
static void check_batch(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    if (!s->batch || (op->flags & TGR_NO_BATCH)) return;
    tg_tensor *whole[TGR_MAX_OUT];
    cr_assert_eq(tgr_call(op, s, whole), TG_OK, WHAT(op, dt, s), tg_last_error());
    int64_t B = -1;
    for (int k = 0; k < s->nin; k++)
        if (s->batch >> k & 1) {
            cr_assert(s->in[k] && tg_ndim(s->in[k]) >= 1, "%s (%s): batched input %d", op->name,
                      s->what, k);
            if (B < 0) B = tg_shape(s->in[k])[0];
            cr_assert_eq(tg_shape(s->in[k])[0], B, "%s (%s): batch sizes differ", op->name, s->what);
        }
    const double rtol = dt == TG_F32 ? 2e-6 : 1e-13, atol = dt == TG_F32 ? 1e-6 : 1e-13;
    for (int64_t b = 0; b < B; b++) {
        tg_tensor *in[TGR_MAX_IN] = {NULL}, *part[TGR_MAX_OUT];
        for (int k = 0; k < s->nin; k++)
            in[k] = (s->batch >> k & 1) ? tg_narrow(s->in[k], 0, b, 1) : tg_retain(s->in[k]);
        cr_assert_eq(tgr_call_in(op, in, &s->a, part), TG_OK, WHAT(op, dt, s), tg_last_error());
        for (int k = 0; k < tgr_nout(op); k++) {
            if (!whole[k]) continue;
            cr_assert(tg_ndim(whole[k]) >= 1 && tg_shape(whole[k])[0] == B,
                      "%s (%s): output %d has no batch dim", op->name, s->what, k);
            tg_tensor *w = tg_narrow(whole[k], 0, b, 1);
            char why[160];
            cr_assert(same(part[k], w, rtol, atol, why, sizeof why),
                      "%s (%s, %s): output %d on batch slice %lld differs from slice %lld of the "
                      "whole: %s", op->name, tg_dtype_name(dt), s->what, k, (long long)b,
                      (long long)b, why);
            tg_release(w);
        }
        release_outs(part);
        release_n(in, s->nin);
    }
    release_outs(whole);
}

Test(registry, batch_slices_give_slices_of_the_result) { each_sample(check_batch, false, true); }

/* Strided inputs give what their contiguous copies give. */
static void check_strided(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    if (!(s->flags & TGR_S_STRIDED)) return;
    tg_tensor *a[TGR_MAX_OUT], *b[TGR_MAX_OUT], *in[TGR_MAX_IN] = {NULL};
    cr_assert_eq(tgr_call(op, s, a), TG_OK, WHAT(op, dt, s), tg_last_error());
    for (int k = 0; k < s->nin; k++) in[k] = s->in[k] ? tg_clone(s->in[k]) : NULL;
    cr_assert_eq(tgr_call_in(op, in, &s->a, b), TG_OK, WHAT(op, dt, s), tg_last_error());
    for (int k = 0; k < tgr_nout(op); k++) {
        char why[160];
        cr_assert(same(a[k], b[k], dt == TG_F32 ? 1e-6 : 1e-14, 1e-14, why, sizeof why),
                  "%s (%s, %s): output %d of strided inputs differs from contiguous: %s", op->name,
                  tg_dtype_name(dt), s->what, k, why);
    }
    release_outs(a);
    release_outs(b);
    release_n(in, s->nin);
}

Test(registry, strided_inputs_as_contiguous) { each_sample(check_strided, false, true); }

/* An f32 sample's result agrees with the same values computed in f64. */
static void check_f32(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    if (dt != TG_F32 || !(s->flags & TGR_S_SMOOTH) || (s->flags & TGR_S_DTYPES)) return;
    if (op->flags & (TGR_CREATE | TGR_RANDOM)) return;
    tg_tensor *a[TGR_MAX_OUT], *b[TGR_MAX_OUT], *in[TGR_MAX_IN] = {NULL};
    cr_assert_eq(tgr_call(op, s, a), TG_OK, WHAT(op, dt, s), tg_last_error());
    for (int k = 0; k < s->nin; k++)
        in[k] = is_float(s->in[k]) ? tg_to_dtype(s->in[k], TG_F64) : tg_retain(s->in[k]);
    cr_assert_eq(tgr_call_in(op, in, &s->a, b), TG_OK, WHAT(op, dt, s), tg_last_error());
    for (int k = 0; k < tgr_nout(op); k++) {
        if (!a[k] || !is_float(a[k])) continue;
        tg_tensor *b32 = tg_to_dtype(b[k], tg_get_dtype(a[k]));
        char why[160];
        cr_assert(same(a[k], b32, 2e-5, 2e-6, why, sizeof why),
                  "%s (%s): output %d in f32 differs from f64 by more than f32 rounding: %s",
                  op->name, s->what, k, why);
        tg_release(b32);
    }
    release_outs(a);
    release_outs(b);
    release_n(in, s->nin);
    if (!op->diff) return;
    /* the gradients too: f32 leaves and their f64 copies, one loss */
    tg_tensor *l32[TGR_MAX_IN], *l64[TGR_MAX_IN] = {NULL};
    make_leaves(op, s, l32, true);
    for (int k = 0; k < s->nin; k++) {
        if (!l32[k]) continue;
        if (!tg_requires_grad(l32[k])) {
            l64[k] = tg_retain(l32[k]);
            continue;
        }
        tg_tensor *c = tg_to_dtype(s->in[k], TG_F64);
        l64[k] = leaf_copy(c);
        tg_release(c);
    }
    cr_assert_eq(tgr_call_in(op, l32, &s->a, a), TG_OK, WHAT(op, dt, s), tg_last_error());
    cr_assert_eq(tgr_call_in(op, l64, &s->a, b), TG_OK, WHAT(op, dt, s), tg_last_error());
    tg_tensor *loss32 = loss_of(a, tgr_nout(op)), *loss64 = loss_of(b, tgr_nout(op));
    if (loss32 && loss64) {
        cr_assert_eq(tg_backward(loss32, NULL, false), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_backward(loss64, NULL, false), TG_OK, "%s", tg_last_error());
        for (int k = 0; k < s->nin; k++) {
            if (!l32[k] || !tg_requires_grad(l32[k])) continue;
            tg_tensor *g32 = tg_grad(l32[k]), *g64 = tg_grad(l64[k]);
            if (!g32 && !g64) continue;
            tg_tensor *g = tg_to_dtype(g64, TG_F32);
            char why[160];
            cr_assert(same(g32, g, 1e-4, 1e-5, why, sizeof why),
                      "%s (%s): the f32 gradient of input %d differs from f64's: %s", op->name,
                      s->what, k, why);
            TGO_RELEASE(g32, g64, g);
        }
    }
    tg_release(loss32);
    tg_release(loss64);
    release_outs(a);
    release_outs(b);
    release_n(l32, s->nin);
    release_n(l64, s->nin);
}

Test(registry, f32_agrees_with_f64) { each_sample(check_f32, false, true); }

/* ---- gradients ------------------------------------------------------------------------ */

typedef struct gc_user {
    const tgr_op *op;
    const tgr_sample *s;
    int which[TGR_MAX_IN]; /* leaf position of input k, -1 for the sample's own */
    unsigned outs;         /* the outputs that are differentiable (they require grad) */
} gc_user;

static tg_tensor *gc_fn(tg_tensor *const *leaves, void *user) {
    const gc_user *u = user;
    tg_tensor *in[TGR_MAX_IN] = {NULL}, *out[TGR_MAX_OUT];
    for (int k = 0; k < u->s->nin; k++) in[k] = u->which[k] >= 0 ? leaves[u->which[k]] : u->s->in[k];
    if (tgr_call_in(u->op, in, &u->s->a, out) != TG_OK) return NULL;
    tg_tensor *l = loss_mask(out, tgr_nout(u->op), u->outs);
    release_outs(out);
    return l;
}

/* gradcheck of the inputs in `which` (a mask), the others held fixed */
static void gradcheck_inputs(const tgr_op *op, const tgr_sample *s, unsigned which) {
    gc_user u = {op, s, {-1, -1, -1, -1}, 0};
    tg_tensor *leaves[TGR_MAX_IN];
    int n = 0;
    for (int k = 0; k < s->nin; k++) {
        if (!(which >> k & 1) || !diff_input(op, s, k) || tg_numel(s->in[k]) == 0) continue;
        leaves[n] = leaf_copy(s->in[k]); /* strided where the sample's input is */
        u.which[k] = n++;
    }
    if (n == 0) return;
    const tg_dtype dt = TG_F64;
    tg_tensor *in[TGR_MAX_IN] = {NULL}, *out[TGR_MAX_OUT];
    for (int k = 0; k < s->nin; k++) in[k] = u.which[k] >= 0 ? leaves[u.which[k]] : s->in[k];
    cr_assert_eq(tgr_call_in(op, in, &s->a, out), TG_OK, WHAT(op, dt, s), tg_last_error());
    u.outs = 0;
    for (int k = 0; k < tgr_nout(op); k++)
        if (out[k] && tg_requires_grad(out[k])) u.outs |= 1u << k;
    release_outs(out);
    if (!u.outs) { /* nothing differentiable came out (entropy_grad off and no log-prob...) */
        release_n(leaves, n);
        return;
    }
    tg_status st = tg_gradcheck(gc_fn, &u, n, leaves, NULL);
    cr_assert_eq(st, TG_OK, "%s (%s, inputs %#x): %s", op->name, s->what, which, tg_last_error());
    release_n(leaves, n);
}

/* Every differentiable input together, then (for a row of several) each alone. */
static void check_gradcheck(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    if (dt != TG_F64 || !(s->flags & TGR_S_SMOOTH) || !op->diff || (op->flags & TGR_CREATE)) return;
    gradcheck_inputs(op, s, ~0u);
    int ndiff = 0;
    for (int k = 0; k < s->nin; k++) ndiff += diff_input(op, s, k);
    if (ndiff > 1)
        for (int k = 0; k < s->nin; k++)
            if (diff_input(op, s, k)) gradcheck_inputs(op, s, 1u << k);
}

Test(registry, gradcheck_on_smooth_samples) { each_sample(check_gradcheck, false, false); }

/* Backward on every sample with float inputs: gradients of the inputs' shapes
 * and dtypes, none for the inputs that are not differentiable; zero where no
 * output has an element. */
static void check_backward(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    if (!op->diff || (op->flags & TGR_CREATE)) return;
    tg_tensor *leaves[TGR_MAX_IN], *out[TGR_MAX_OUT];
    make_leaves(op, s, leaves, true);
    cr_assert_eq(tgr_call_in(op, leaves, &s->a, out), TG_OK, WHAT(op, dt, s), tg_last_error());
    for (int k = 0; k < tgr_nout(op); k++) /* a recorded output names its node */
        if (out[k] && tg_requires_grad(out[k]) && !tg_is_leaf(out[k]))
            cr_assert(strstr(tg_grad_fn_name(out[k]), "Backward"), "%s (%s): grad_fn %s",
                      op->name, s->what, tg_grad_fn_name(out[k]));
    bool no_elements = true; /* every output is empty */
    for (int k = 0; k < tgr_nout(op); k++) no_elements &= !out[k] || tg_numel(out[k]) == 0;
    tg_tensor *loss = loss_of(out, tgr_nout(op));
    if (loss) {
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, WHAT(op, dt, s), tg_last_error());
        for (int k = 0; k < s->nin; k++) {
            if (!leaves[k] || !tg_requires_grad(leaves[k]) || !tg_is_leaf(leaves[k])) continue;
            tg_tensor *g = tg_grad(leaves[k]);
            if (!g) continue; /* an input the loss does not depend on (an empty output) */
            cr_assert_eq(tg_get_dtype(g), tg_get_dtype(leaves[k]), "%s (%s): gradient %d dtype",
                         op->name, s->what, k);
            cr_assert_eq(tg_ndim(g), tg_ndim(leaves[k]));
            for (int d = 0; d < tg_ndim(g); d++)
                cr_assert_eq(tg_shape(g)[d], tg_shape(leaves[k])[d], "%s (%s): gradient %d shape",
                             op->name, s->what, k);
            if (no_elements) { /* nothing came out: nothing flows back */
                double *v = tgo_values(g);
                for (int64_t e = 0; e < tg_numel(g); e++)
                    cr_assert(v[e] == 0, "%s (%s, %s): outputs without elements, gradient %d "
                              "element %lld is %g", op->name, tg_dtype_name(dt), s->what, k,
                              (long long)e, v[e]);
                free(v);
            }
            tg_release(g);
        }
    }
    tg_release(loss);
    release_outs(out);
    release_n(leaves, s->nin);
}

Test(registry, backward_on_every_sample) { each_sample(check_backward, false, true); }

/* Under no-grad nothing is recorded: no output requires grad, no node is made. */
static void check_no_grad(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    if ((index > 2 && !(s->flags & TGR_S_EMPTY)) || !op->diff || (op->flags & TGR_CREATE)) return;
    tg_tensor *leaves[TGR_MAX_IN], *out[TGR_MAX_OUT];
    make_leaves(op, s, leaves, true);
    int64_t nodes = tg_live().nodes;
    bool prev = tg_set_grad_enabled(false);
    tg_status st = tgr_call_in(op, leaves, &s->a, out);
    tg_set_grad_enabled(prev);
    cr_assert_eq(st, TG_OK, WHAT(op, dt, s), tg_last_error());
    cr_assert_eq(tg_live().nodes, nodes, "%s (%s): a node was recorded under no-grad", op->name,
                 s->what);
    for (int k = 0; k < tgr_nout(op); k++)
        /* a view of a tensor that requires grad does too, as in PyTorch */
        cr_assert(!out[k] || !tg_requires_grad(out[k]) || (op->flags & (TGR_MAYBE_SELF | TGR_VIEW)),
                  "%s (%s): output %d requires grad under no-grad", op->name, s->what, k);
    release_outs(out);
    release_n(leaves, s->nin);
    /* with grad mode on but no input that requires grad: nothing recorded either */
    make_leaves(op, s, leaves, false);
    cr_assert_eq(tgr_call_in(op, leaves, &s->a, out), TG_OK, WHAT(op, dt, s), tg_last_error());
    cr_assert_eq(tg_live().nodes, nodes, "%s (%s): a node recorded without need", op->name,
                 s->what);
    for (int k = 0; k < tgr_nout(op); k++)
        cr_assert(!out[k] || !tg_requires_grad(out[k]), "%s (%s): output %d requires grad",
                  op->name, s->what, k);
    release_outs(out);
    release_n(leaves, s->nin);
}

Test(registry, no_grad_records_nothing) { each_sample(check_no_grad, false, false); }

/* The elementwise rows' gradients at their kinks are PyTorch's. */
Test(registry, gradient_at_the_kinks_as_pytorch) {
    tgr_init();
    int checked = 0;
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        for (int k = 0; k < 2 * op->nkinks; k++) {
            const tg_dtype dt = k % 2 ? TG_F32 : TG_F64;
            tgr_args a;
            tgr_samples ss;
            tgr_samples_of(op, dt, &ss);
            a = ss.s[0].a;
            tgr_samples_free(&ss);
            tg_tensor *x = tg_full(dt, 1, (int64_t[]){1}, op->kinks[k / 2][0]);
            cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
            tg_tensor *out[TGR_MAX_OUT];
            cr_assert_eq(tgr_call_in(op, (tg_tensor *[]){x}, &a, out), TG_OK, "%s", tg_last_error());
            tg_tensor *l = tg_sum(out[0]);
            cr_assert_eq(tg_backward(l, NULL, false), TG_OK, "%s: %s", op->name, tg_last_error());
            tg_tensor *g = tg_grad(x);
            double got = tgt_at(g, 0), want = op->kinks[k / 2][1];
            if (dt == TG_F32) want = (float)want;
            cr_assert((got == want && signbit(got) == signbit(want)) ||
                          (isnan(got) && isnan(want)) ||
                          fabs(got - want) <= (dt == TG_F32 ? 4e-7 : 1e-12) * fmax(1, fabs(want)),
                      "%s (%s) at %g: gradient %.17g, PyTorch's %.17g", op->name,
                      tg_dtype_name(dt), op->kinks[k / 2][0], got, want);
            TGO_RELEASE(x, l, g);
            release_outs(out);
            checked++;
        }
    }
    cr_assert(checked >= 25, "%d kinks", checked);
}

/* ---- saved tensors edited after the forward --------------------------------------------- */

/* For each input: forward, then an in-place edit of that input (scale_ by 2
 * of a float one, fill_ of another dtype), then backward. Either backward
 * fails with TG_ERR_INPLACE naming the edit, or the gradients are exactly
 * those of the run without the edit. The first smooth samples and every
 * empty one (an edit of no elements moves the version all the same). */
static void check_edit_after_forward(const tgr_op *op, tg_dtype dt, const tgr_sample *s,
                                     int index) {
    const bool empty = s->flags & TGR_S_EMPTY;
    if (dt != TG_F64 || (!empty && (index > 3 || !(s->flags & TGR_S_SMOOTH))) || !op->diff ||
        (op->flags & TGR_CREATE))
        return;
    tg_tensor *ref[TGR_MAX_IN] = {NULL};
    for (int e = -1; e < s->nin; e++) {
        if (e >= 0 && !s->in[e]) continue;
        tg_tensor *leaves[TGR_MAX_IN], *in[TGR_MAX_IN] = {NULL}, *out[TGR_MAX_OUT];
        make_leaves(op, s, leaves, true);
        /* inputs the op sees: non-leaf copies (an in-place edit of them is allowed) */
        for (int k = 0; k < s->nin; k++)
            in[k] = !leaves[k] ? NULL
                    : tg_requires_grad(leaves[k]) ? tg_scale(leaves[k], 1.0)
                                                  : tg_clone(leaves[k]);
        cr_assert_eq(tgr_call_in(op, in, &s->a, out), TG_OK, WHAT(op, dt, s), tg_last_error());
        tg_tensor *loss = loss_of(out, tgr_nout(op));
        bool stop = loss == NULL;
        if (loss && e >= 0) {
            tg_status edit = is_float(in[e]) ? tg_scale_(in[e], 2.0)
                                             : tg_fill_(in[e], tg_get_dtype(in[e]) == TG_BOOL ? 1 : 0);
            cr_assert_eq(edit, TG_OK, "%s (%s): editing input %d: %s", op->name, s->what, e,
                         tg_last_error());
        }
        tg_status st = loss ? tg_backward(loss, NULL, false) : TG_OK;
        if (loss && e < 0) {
            cr_assert_eq(st, TG_OK, WHAT(op, dt, s), tg_last_error());
            for (int k = 0; k < s->nin; k++)
                ref[k] = leaves[k] && tg_requires_grad(leaves[k]) ? tg_grad(leaves[k]) : NULL;
        } else if (loss && st == TG_ERR_INPLACE) {
            const char *m = tg_last_error();
            cr_assert(strstr(m, is_float(in[e]) ? "tg_scale_" : "tg_fill_") != NULL,
                      "%s (%s): the in-place error does not name the edit: %s", op->name,
                      s->what, m);
        } else if (loss) {
            cr_assert_eq(st, TG_OK, "%s (%s), input %d edited: %s", op->name, s->what, e,
                         tg_last_error());
            for (int k = 0; k < s->nin; k++) {
                if (!ref[k]) continue;
                tg_tensor *g = tg_grad(leaves[k]);
                char why[160];
                cr_assert(same(g, ref[k], 0, 0, why, sizeof why),
                          "%s (%s): input %d edited in place after the forward, backward "
                          "succeeded with another gradient for input %d (%s): it used the "
                          "edited values without a version check", op->name, s->what, e, k, why);
                tg_release(g);
            }
        }
        tg_clear_error();
        tg_release(loss);
        release_outs(out);
        release_n(in, s->nin);
        release_n(leaves, s->nin);
        if (stop) break;
    }
    release_n(ref, TGR_MAX_IN);
}

Test(registry, inputs_edited_after_forward_fail_backward_or_change_nothing) {
    each_sample(check_edit_after_forward, false, false);
}

/* ---- bad inputs ---------------------------------------------------------------------- */

static bool names_op(const tgr_op *op, const char *msg) {
    size_t n = strlen(op->c_name);
    return !strncmp(msg, op->c_name, n) && msg[n] == ':';
}

static void check_bad(const tgr_op *op, tg_dtype dt, const tgr_sample *s, int index) {
    (void)index;
    tgo_snap snap[TGR_MAX_IN];
    for (int k = 0; k < s->nin; k++)
        if (s->in[k]) snap[k] = tgo_snapshot(s->in[k]);
    tg_live_counts before = tg_live();
    tg_tensor *out[TGR_MAX_OUT] = {NULL};
    tg_clear_error();
    /* in-place rows are called as they are: the target itself must not change */
    tg_status st = op->apply(op, s->in, &s->a, out);
    cr_assert_eq(st, s->want, "%s (%s, %s): %s, expected %s: %s", op->name, tg_dtype_name(dt),
                 s->what, tg_status_name(st), tg_status_name(s->want), tg_last_error());
    cr_assert_eq(tg_last_status(), st);
    cr_assert(names_op(op, tg_last_error()), "%s (%s): the error does not start with \"%s:\": %s",
              op->name, s->what, op->c_name, tg_last_error());
    for (int k = 0; k < TGR_MAX_OUT; k++)
        cr_assert_null(out[k], "%s (%s): output %d set on failure", op->name, s->what, k);
    tg_live_counts after = tg_live();
    cr_assert(after.tensors == before.tensors && after.nodes == before.nodes,
              "%s (%s): a failed call left %lld tensors, %lld nodes", op->name, s->what,
              (long long)(after.tensors - before.tensors), (long long)(after.nodes - before.nodes));
    for (int k = 0; k < s->nin; k++)
        if (s->in[k]) tgo_assert_unchanged(&snap[k]);
    tg_clear_error();
}

Test(registry, bad_inputs_fail_naming_the_op) { each_sample(check_bad, true, true); }

/* A NULL in each required input position is TG_ERR_NULL naming the op. */
/* With every sample's arguments (the bad ones too: a NULL input is checked
 * before the other arguments, so that the nested-calls style reports the
 * first failure), a NULL required input fails with TG_ERR_NULL naming the op,
 * or keeps the error pending from the call that failed to make it. */
Test(registry, null_inputs_fail_naming_the_op) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        for (int j = 0; j < ss.n; j++) {
            const tgr_sample *s = &ss.s[j];
            for (int pos = 0; pos < op->nin_required; pos++) {
                tg_tensor *in[TGR_MAX_IN] = {NULL}, *out[TGR_MAX_OUT] = {NULL};
                for (int k = 0; k < s->nin; k++) in[k] = s->in[k];
                in[pos] = NULL;
                tg_clear_error();
                tg_status st = op->apply(op, in, &s->a, out);
                cr_assert_eq(st, TG_ERR_NULL, "%s (%s): a NULL input %d gave %s: %s", op->name,
                             s->what, pos, tg_status_name(st), tg_last_error());
                cr_assert(names_op(op, tg_last_error()), "%s: %s", op->name, tg_last_error());
                for (int k = 0; k < TGR_MAX_OUT; k++) cr_assert_null(out[k]);
                /* NULL propagation: a pending error (the op that failed to make the
                 * input) is kept, as the nested-calls style needs */
                tg_set_error(TG_ERR_SHAPE, "earlier");
                st = op->apply(op, in, &s->a, out);
                cr_assert(st == TG_ERR_SHAPE && !strcmp(tg_last_error(), "earlier"),
                          "%s (%s): a NULL input %d replaced the pending error with %s: %s",
                          op->name, s->what, pos, tg_status_name(st), tg_last_error());
                for (int k = 0; k < TGR_MAX_OUT; k++) cr_assert_null(out[k]);
            }
        }
        tgr_samples_free(&ss);
        tg_clear_error();
    }
}

/* ---- allocation failures ---------------------------------------------------------------- */

static bool has_grad(const tg_tensor *t) {
    tg_tensor *g = tg_grad(t);
    bool r = g != NULL;
    tg_release(g);
    return r;
}

/* One sample of a row (and its backward): allocation n fails, for n = 1, 2,
 * ... until a run succeeds. */
static void sweep_allocations(const tgr_op *op, const tgr_sample *s) {
    const bool grad = op->diff && !(op->flags & TGR_CREATE);
    bool done = false;
    for (uint64_t n = 1; !done && n < 2000; n++) {
        tg_tensor *leaves[TGR_MAX_IN], *out[TGR_MAX_OUT];
        make_leaves(op, s, leaves, grad);
        tg_clear_error();
        tg_fault_inject(n, false);
        tg_status st = tgr_call_in(op, leaves, &s->a, out);
        tg_tensor *loss = st == TG_OK && grad ? loss_of(out, tgr_nout(op)) : NULL;
        if (st == TG_OK && grad && !loss && tg_last_status() == TG_ERR_NOMEM) st = TG_ERR_NOMEM;
        if (loss) st = tg_backward(loss, NULL, false);
        uint64_t fired = tg_fault_inject(0, false);
        if (!fired) {
            cr_assert_eq(st, TG_OK, "%s (%s): %s", op->name, s->what, tg_last_error());
            done = true;
        } else {
            cr_assert_eq(st, TG_ERR_NOMEM, "%s (%s), allocation %llu failing: %s, %s", op->name,
                         s->what, (unsigned long long)n, tg_status_name(st), tg_last_error());
            for (int k = 0; k < s->nin; k++)
                if (leaves[k] && tg_requires_grad(leaves[k]) && tg_is_leaf(leaves[k]))
                    cr_assert(!has_grad(leaves[k]), "%s (%s): a failed run left a gradient",
                              op->name, s->what);
        }
        tg_release(loss);
        release_outs(out);
        release_n(leaves, s->nin);
        tg_live_counts lc = tg_live();
        cr_assert(lc.nodes == 0, "%s (%s), allocation %llu: %lld nodes alive", op->name, s->what,
                  (unsigned long long)n, (long long)lc.nodes);
    }
    cr_assert(done, "%s (%s) never succeeded", op->name, s->what);
}

/* The first good sample of each row and every empty one. */
Test(registry, every_allocation_failure_is_clean) {
    tgr_init();
    for (int i = 0; i < tgr_nops; i++) {
        const tgr_op *op = tgr_ops[i];
        tgr_samples ss;
        tgr_samples_of(op, TG_F64, &ss);
        bool first = true;
        for (int k = 0; k < ss.n; k++) {
            const tgr_sample *s = &ss.s[k];
            if (s->flags & TGR_S_BAD) continue;
            if (first || (s->flags & TGR_S_EMPTY)) sweep_allocations(op, s);
            first = false;
        }
        tgr_samples_free(&ss);
        tg_clear_error();
    }
}
