/* tests/test_blob.c - tg_from_blob: tensors over memory the caller owns.
 * Values shared both ways (the library's in-place writes reach the caller's
 * array; the caller's writes are seen, and tg_mark_modified makes a graph
 * that saved the tensor refuse them), caller strides, the release callback
 * called exactly once when the last reference (views, saved tensors, .grad
 * targets) is gone and never on failure, with the caller's scopes hidden
 * and its error kept, the bytes counted as "external", every bad input
 * refused with nothing kept, allocation failures, a device pointer on the
 * (emulated) CUDA device (read-only there too), empty tensors over no
 * memory at all (data NULL, what NumPy and DLPack give) through the ops
 * that read memory on the host (the registry walks every op with them), and
 * no gradient ever accumulated into the caller's memory. (Read-only memory
 * on the host: tests/test_readonly.c.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test_util.h"

TestSuite(blob, .init = tgt_setup, .fini = tgt_teardown);

typedef struct owner {
    int released; /* times the release callback ran */
} owner;

static void on_release(void *ctx) { ((owner *)ctx)->released++; }

static size_t external_live(tg_device dev) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(dev, &m), TG_OK);
    return m.live[TG_MEM_EXTERNAL];
}

Test(blob, shares_memory_both_ways_and_releases_once) {
    float buf[6] = {1, 2, 3, 4, 5, 6};
    owner o = {0};
    const size_t ext0 = external_live(TG_CPU);
    tg_tensor *t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2, 3), NULL, buf, on_release, &o);
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_data(t), (void *)buf, "no copy");
    cr_assert(tg_is_contiguous(t));
    cr_assert_eq(tg_strides(t)[0], 3);
    cr_assert_eq(tg_strides(t)[1], 1);
    cr_assert_eq(external_live(TG_CPU) - ext0, sizeof buf, "counted as external");
    /* the library writes the caller's memory (and bumps the version) */
    uint64_t v0 = tg_version(t);
    cr_assert_eq(tg_scale_(t, 2.0), TG_OK, "%s", tg_last_error());
    cr_assert_eq(buf[5], 12.0f);
    cr_assert_gt(tg_version(t), v0);
    /* the caller's writes are read */
    buf[0] = -7.0f;
    double v;
    cr_assert_eq(tg_get(t, (int64_t[]){0, 0}, &v), TG_OK);
    cr_assert_eq(v, -7.0);
    /* a view keeps the memory: released with the last reference only */
    tg_tensor *row = tg_select(t, 0, 1);
    cr_assert_not_null(row);
    tg_release(t);
    cr_assert_eq(o.released, 0, "the view still holds it");
    cr_assert_eq(tg_get(row, (int64_t[]){2}, &v), TG_OK);
    cr_assert_eq(v, 12.0);
    tg_release(row);
    cr_assert_eq(o.released, 1, "released exactly once, with the last reference");
    cr_assert_eq(external_live(TG_CPU), ext0);
}

Test(blob, caller_strides_are_read_as_given) {
    /* a column-major (3, 2) matrix: strides (1, 3) */
    double buf[6] = {1, 2, 3, 10, 20, 30};
    tg_tensor *t = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(3, 2), (int64_t[]){1, 3}, buf, NULL,
                                NULL);
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert(!tg_is_contiguous(t));
    tg_tensor *c = tg_contiguous(t);
    double out[6];
    cr_assert_eq(tg_copy_out(c, TG_F64, out, sizeof out), TG_OK);
    const double want[6] = {1, 10, 2, 20, 3, 30};
    for (int i = 0; i < 6; i++) cr_assert_eq(out[i], want[i], "[%d]", i);
    /* a broadcast (stride 0) row, and an empty tensor with no data at all */
    float one = 4.0f;
    tg_tensor *b = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(5), (int64_t[]){0}, &one, NULL, NULL);
    cr_assert_not_null(b, "%s", tg_last_error());
    tg_tensor *s = tg_sum(b);
    cr_assert_eq(tgt_at(s, 0), 20.0);
    tg_tensor *e = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(0, 3), NULL, NULL, NULL, NULL);
    cr_assert_not_null(e, "%s", tg_last_error());
    cr_assert_eq(tg_numel(e), 0);
    tg_release(t);
    tg_release(c);
    tg_release(b);
    tg_release(s);
    tg_release(e);
}

Test(blob, autograd_over_the_callers_memory) {
    float x[4] = {1, 2, 3, 4};
    owner o = {0};
    tg_tensor *t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), NULL, x, on_release, &o);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    tg_tensor *m = tg_mul(t, t); /* saves t */
    tg_tensor *y = tg_sum(m);
    cr_assert_eq(tg_backward(y, NULL, true), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(t); /* a new reference */
    cr_assert_eq(tgt_at(g, 3), 8.0, "the gradient is the library's");
    tg_release(g);
    /* the caller writes the memory and says so: the graph that saved it refuses */
    x[0] = 100.0f;
    cr_assert_eq(tg_mark_modified(t, "numpy write"), TG_OK, "%s", tg_last_error());
    cr_assert_neq(tg_backward(y, NULL, false), TG_OK);
    tgt_assert_error(TG_ERR_INPLACE, "numpy write", "saved by MulBackward", NULL);
    tg_clear_error();
    tg_release(t);
    tg_release(y);
    cr_assert_eq(o.released, 0, "the graph's saved reference keeps it");
    tg_release(m);
    cr_assert_eq(o.released, 1);
}

/* A release callback that uses the library: makes a tensor and gives it
 * back, and fails a call of its own. */
static int g_cb_ok;
static void use_library(void *ctx) {
    (void)ctx;
    tg_tensor *t = tg_ones(TG_F32, TG_SHAPE(2));
    g_cb_ok += t && tg_release(t) == TG_OK;
    tg_set_error(TG_ERR_SHAPE, "the callback's own failure");
}

/* As any callback, a release callback sees none of its caller's scopes (a
 * tensor it makes is its own to release), and the thread's error is the
 * caller's again after it: when the last reference goes in tg_release, and
 * when backward frees the graph that saved the tensor. */
Test(blob, release_callback_hides_scopes_and_keeps_the_error) {
    float a[2] = {1, 2}, b[2] = {3, 4};
    g_cb_ok = 0;
    int tok = tg_scope_begin();
    tg_tensor *ta = tg_scope_keep(tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2), NULL, a,
                                               use_library, NULL));
    cr_assert_not_null(ta, "%s", tg_last_error());
    tg_set_error(TG_ERR_VALUE, "the caller's error");
    cr_assert_eq(tg_release(ta), TG_OK);
    cr_assert_eq(g_cb_ok, 1, "the callback could release what it made");
    tgt_assert_error(TG_ERR_VALUE, "the caller's error", NULL);
    tg_clear_error();
    /* freed by backward: the callback runs before tg_backward returns */
    tg_tensor *tb = tg_scope_keep(tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2), NULL, b,
                                               use_library, NULL));
    tg_tensor *w = tg_ones(TG_F32, TG_SHAPE(2));
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    tg_tensor *y = tg_sum(tg_mul(w, tb)); /* saves tb */
    cr_assert_eq(tg_release(tb), TG_OK);
    cr_assert_eq(tg_backward(y, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(g_cb_ok, 2, "ran in backward, and could release what it made");
    cr_assert_eq(tg_last_status(), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_scope_end(tok), TG_OK);
}

/* A release callback that opens a scope of its own. */
static void in_a_scope(void *ctx) {
    (void)ctx;
    int tok = tg_scope_begin();
    g_cb_ok += tg_ones(TG_F32, TG_SHAPE(2)) != NULL && tg_scope_end(tok) == TG_OK;
}

/* The callback runs inside tg_scope_end of the scope that held the last
 * reference, as deep as the scopes' array is long: its tg_scope_begin grows
 * (moves) the array the ending scope is read from. */
Test(blob, release_callback_opens_a_scope_while_one_ends) {
    float a[2] = {1, 2};
    g_cb_ok = 0;
    int outer = tg_scope_begin();
    while (tg_scope_depth() < 8) tg_scope_begin(); /* the array's first size */
    int tok = tg_scope_depth();
    cr_assert_not_null(tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2), NULL, a, in_a_scope, NULL));
    cr_assert_not_null(tg_ones(TG_F32, TG_SHAPE(3)), "released after the blob");
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    cr_assert_eq(g_cb_ok, 1);
    cr_assert_eq(tg_scope_unwind(outer - 1), TG_OK);
}

Test(blob, bad_inputs_keep_nothing_and_call_nothing) {
    float buf[4] = {0};
    owner o = {0};
    const size_t ext0 = external_live(TG_CPU);
    const struct {
        tg_status st;
        const char *msg;
    } cases[] = {
        {TG_ERR_NULL, "data"},
        {TG_ERR_DTYPE, "invalid dtype"},
        {TG_ERR_VALUE, "negative size -1"},
        {TG_ERR_VALUE, "ndim 9 outside"},
        {TG_ERR_VALUE, "stride -1 of dim 0 is negative"},
        {TG_ERR_VALUE, "not aligned"},
        {TG_ERR_VALUE, "beyond the address space"},
        {TG_ERR_DEVICE, "tg_from_blob"},
    };
    /* each bad call, for its own status and message */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tg_clear_error();
        tg_tensor *t = NULL;
        switch (k) {
        case 0: t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), NULL, NULL, on_release, &o); break;
        case 1: t = tg_from_blob(TG_CPU, (tg_dtype)99, TG_SHAPE(4), NULL, buf, on_release, &o); break;
        case 2: t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(-1), NULL, buf, on_release, &o); break;
        case 3: t = tg_from_blob(TG_CPU, TG_F32, TG_MAX_DIMS + 1, (int64_t[TG_MAX_DIMS + 1]){4}, NULL, buf, on_release, &o); break;
        case 4: t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), (int64_t[]){-1}, buf, on_release, &o); break;
        case 5: t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2), NULL, (char *)buf + 1, on_release, &o); break;
        case 6: t = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(3, 3), (int64_t[]){INT64_MAX / 2, 1}, buf, on_release, &o); break;
        default: t = tg_from_blob((tg_device)5, TG_F32, TG_SHAPE(4), NULL, buf, on_release, &o); break;
        }
        cr_assert_null(t);
        tgt_assert_error(cases[k].st, cases[k].msg, NULL);
    }
    tg_clear_error();
    cr_assert_eq(o.released, 0, "a failed call never calls release");
    cr_assert_eq(external_live(TG_CPU), ext0, "nothing counted");
    if (tg_cuda_device_count() == 0) {
        cr_assert_null(tg_from_blob(TG_CUDA, TG_F32, TG_SHAPE(4), NULL, buf, on_release, &o));
        tgt_assert_error(TG_ERR_DEVICE, "tg_from_blob", "no CUDA device", NULL);
        tg_clear_error();
    }
}

Test(blob, allocation_failures_call_nothing) {
    float buf[8] = {0};
    owner o = {0};
    int sc = tg_scope_begin();
    for (uint64_t k = 1; k < 8; k++) {
        tg_fault_inject(k, false);
        tg_tensor *t = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(8), NULL, buf, on_release, &o);
        uint64_t fired = tg_fault_inject(0, false);
        if (!t) {
            cr_assert_eq(fired, 1);
            cr_assert_eq(tg_last_status(), TG_ERR_NOMEM);
            cr_assert_eq(o.released, 0, "failure %llu called release", (unsigned long long)k);
            tg_clear_error();
            continue;
        }
        cr_assert_eq(fired, 0, "a fault fired and the call still succeeded");
        break;
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    cr_assert_eq(o.released, 1, "the scope's end released the one that succeeded");
}

Test(blob, device_pointer_on_the_cuda_device) {
    TGT_NEED_CUDA();
    /* a device buffer the test owns (made by the library, borrowed here) */
    tg_tensor *host = tg_from_data(TG_F32, TG_SHAPE(6), (float[]){1, 2, 3, 4, 5, 6});
    tg_tensor *owner_t = tg_to_device(host, TG_CUDA);
    tg_release(host);
    owner o = {0};
    const size_t ext0 = external_live(TG_CUDA);
    tg_tensor *t = tg_from_blob(TG_CUDA, TG_F32, TG_SHAPE(3, 2), (int64_t[]){1, 3},
                                tg_data(owner_t), on_release, &o);
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(t), TG_CUDA);
    cr_assert_eq(external_live(TG_CUDA) - ext0, 6 * sizeof(float));
    tg_tensor *c = tg_contiguous(t);
    float out[6];
    cr_assert_eq(tg_copy_out(c, TG_F32, out, sizeof out), TG_OK);
    const float want[6] = {1, 4, 2, 5, 3, 6};
    for (int i = 0; i < 6; i++) cr_assert_eq(out[i], want[i], "[%d]", i);
    tg_tensor *col = tg_select(t, 1, 1);
    cr_assert_eq(tg_fill_(col, 10.0), TG_OK, "%s", tg_last_error());
    tg_release(col);
    double v;
    cr_assert_eq(tg_get(owner_t, (int64_t[]){5}, &v), TG_OK);
    cr_assert_eq(v, 10.0, "written through to the owner's memory (column 1 is 4, 5, 6)");
    tg_release(c);
    tg_release(t);
    cr_assert_eq(o.released, 1);
    cr_assert_eq(external_live(TG_CUDA), ext0);
    tg_release(owner_t);
}

/* Every element of t is 0 (t may be NULL: an absent gradient). */
static void assert_zero(const tg_tensor *t, const char *what) {
    if (!t) return;
    for (int64_t i = 0; i < tg_numel(t); i++)
        cr_assert_eq(tgt_at(t, i), 0.0, "%s: element %lld", what, (long long)i);
}

/* Empty tensors over NULL on dev: the ops that read an input on the host (the
 * fused ops' targets, masked_select's mask) once took the NULL for a failed
 * read and returned TG_OK without outputs (masked_select then failed with
 * the message "TG_OK:", the linear op crashed saving its missing targets),
 * and fills and copies passed the NULL to memset and memcpy (UBSan). */
static void empty_over_null_on(tg_device dev) {
    int sc = tg_scope_begin();
    tg_tensor *z = tg_from_blob(dev, TG_F32, TG_SHAPE(0, 7), NULL, NULL, NULL, NULL);
    tg_tensor *y = tg_from_blob(dev, TG_I64, TG_SHAPE(0), NULL, NULL, NULL, NULL);
    cr_assert(z && y, "%s", tg_last_error());
    cr_assert_null(tg_data(z), "the caller's NULL comes back");
    /* in-place writes of no elements (memset(NULL) under UBSan) */
    cr_assert_eq(tg_fill_(z, 0.0), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_fill_(y, 1.0), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_copy_(z, tg_to_device(tg_zeros(TG_F32, TG_SHAPE(7)), dev)), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
    tg_tensor *lp = NULL, *h = NULL, *lse = NULL;
    cr_assert_eq(tg_logprob_entropy_lse(z, y, NULL, &lp, &h, &lse), TG_OK, "%s", tg_last_error());
    cr_assert(lp && h && lse, "outputs for no rows");
    cr_assert(tg_ndim(lp) == 1 && tg_numel(lp) == 0 && tg_numel(h) == 0 && tg_numel(lse) == 0);
    cr_assert_eq(tg_backward(tg_add(tg_sum(lp), tg_sum(h)), NULL, false), TG_OK, "%s",
                 tg_last_error());
    tg_tensor *gz = tg_grad(z);
    cr_assert(gz && tg_ndim(gz) == 2 && tg_shape(gz)[0] == 0 && tg_shape(gz)[1] == 7);

    tg_tensor *m = tg_from_blob(dev, TG_BOOL, TG_SHAPE(0, 7), NULL, NULL, NULL, NULL);
    tg_tensor *sel = tg_masked_select(z, m);
    cr_assert_not_null(sel, "%s", tg_last_error());
    cr_assert_eq(tg_numel(sel), 0);

    /* the linear op: 0 rows, (0, 4) hidden, a weight and bias that require grad */
    tg_tensor *hid = tg_from_blob(dev, TG_F32, TG_SHAPE(2, 0, 4), NULL, NULL, NULL, NULL);
    tg_tensor *yy = tg_from_blob(dev, TG_I64, TG_SHAPE(2, 0), NULL, NULL, NULL, NULL);
    tg_tensor *w = tg_to_device(tg_rand(TG_F32, TG_SHAPE(9, 4), 3, -1, 1), dev);
    tg_tensor *b = tg_to_device(tg_rand(TG_F32, TG_SHAPE(9), 4, -1, 1), dev);
    cr_assert_eq(tg_set_requires_grad(hid, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    cr_assert_eq(tg_set_requires_grad(b, true), TG_OK);
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    lo.temperature = 0.7;
    for (int impl = 0; impl < 2; impl++) {
        lo.impl = impl ? TG_LOGPROB_COMPOSITE : TG_LOGPROB_FUSED;
        lp = h = lse = NULL;
        cr_assert_eq(tg_linear_logprob_entropy(hid, w, b, yy, &lo, &lp, &h, &lse), TG_OK,
                     "impl %d: %s", impl, tg_last_error());
        cr_assert(lp && tg_ndim(lp) == 2 && tg_shape(lp)[0] == 2 && tg_shape(lp)[1] == 0);
        cr_assert(h && lse && tg_numel(h) == 0 && tg_numel(lse) == 0);
        cr_assert_eq(tg_backward(tg_add(tg_sum(lp), tg_sum(h)), NULL, false), TG_OK,
                     "impl %d: %s", impl, tg_last_error());
        tg_tensor *gw = tg_grad(w), *gb = tg_grad(b), *gh = tg_grad(hid);
        cr_assert(gw && tg_numel(gw) == 36, "as PyTorch: a zero gradient of the weight");
        assert_zero(gw, "dweight");
        assert_zero(gb, "dbias");
        cr_assert(gh && tg_ndim(gh) == 3 && tg_numel(gh) == 0);
        cr_assert_eq(tg_zero_grad(w), TG_OK);
    }

    /* copies of empty views over NULL (memcpy(NULL) under UBSan) */
    tg_tensor *c = tg_contiguous(tg_transpose(z, 0, 1));
    cr_assert(c && tg_numel(c) == 0, "%s", tg_last_error());
    cr_assert_not_null(tg_clone(z), "%s", tg_last_error());
    cr_assert_not_null(tg_to_device(z, TG_CPU), "%s", tg_last_error());
    cr_assert_eq(tg_copy_(tg_detach(c), tg_transpose(z, 0, 1)), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_copy_out(z, TG_F64, NULL, 0), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_scope_end(sc), TG_OK, "%s", tg_last_error());
}

Test(blob, empty_over_null_in_the_ops_that_read_on_the_host) { empty_over_null_on(TG_CPU); }

Test(blob, empty_over_a_null_device_pointer) {
    TGT_NEED_CUDA();
    empty_over_null_on(TG_CUDA);
}

/* Device memory marked read-only: every in-place op refuses it before its
 * kernel runs (a 0-d CPU operand too); it is read as any other. */
Test(blob, read_only_device_memory_is_refused) {
    TGT_NEED_CUDA();
    tg_tensor *host = tg_from_data(TG_F32, TG_SHAPE(4), (float[]){1, 2, 3, 4});
    tg_tensor *owner_t = tg_to_device(host, TG_CUDA);
    tg_tensor *t = tg_from_blob(TG_CUDA, TG_F32, TG_SHAPE(4), NULL, tg_data(owner_t), NULL, NULL);
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_mark_read_only(t), TG_OK);
    tg_tensor *two = tg_from_data(TG_F32, TG_SCALAR, (float[]){2});
    tg_tensor *dtwo = tg_to_device(two, TG_CUDA);
    tg_clear_error();
    cr_assert_eq(tg_fill_(t, 5), TG_ERR_READONLY);
    tgt_assert_error(TG_ERR_READONLY, "tg_fill_:", "read-only", NULL);
    cr_assert_eq(tg_add_(t, t), TG_ERR_READONLY);
    cr_assert_eq(tg_div_(t, two), TG_ERR_READONLY);
    cr_assert_eq(tg_pow_(t, dtwo), TG_ERR_READONLY);
    tg_tensor *v = tg_slice(t, 0, 1, 3, 1);
    cr_assert_eq(tg_copy_(v, dtwo), TG_ERR_READONLY);
    cr_assert_eq(tg_version(t), 0);
    float out[4];
    cr_assert_eq(tg_copy_out(owner_t, TG_F32, out, sizeof out), TG_OK);
    for (int i = 0; i < 4; i++) cr_assert_eq(out[i], (float)(i + 1), "[%d] written", i);
    /* read: owner_t *= t */
    cr_assert_eq(tg_mul_(owner_t, t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_copy_out(owner_t, TG_F32, out, sizeof out), TG_OK);
    cr_assert_eq(out[3], 16.0f);
    tg_clear_error();
    tg_release(v);
    tg_release(t);
    tg_release(two);
    tg_release(dtwo);
    tg_release(owner_t);
    tg_release(host);
}

/* ---- a .grad is never written in place over the caller's memory ------------ */

/* The gradient given to tg_backward for a leaf root, over the caller's memory:
 * the caller then lets go of it and a second backward adds into the leaf's
 * .grad; the caller's memory must keep its values. */
Test(blob, upstream_gradient_over_the_callers_memory_is_never_accumulated_into) {
    double gbuf[3] = {1, 2, 3};
    owner o = {0};
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(3));
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *g = tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(3), NULL, gbuf, on_release, &o);
    cr_assert_eq(tg_backward(x, g, false), TG_OK, "%s", tg_last_error());
    tg_release(g);
    tg_tensor *g2 = tg_full(TG_F64, TG_SHAPE(3), 10);
    cr_assert_eq(tg_backward(x, g2, false), TG_OK, "%s", tg_last_error());
    cr_assert(gbuf[0] == 1 && gbuf[1] == 2 && gbuf[2] == 3,
              "the caller's gradient memory was written: %g %g %g", gbuf[0], gbuf[1], gbuf[2]);
    tg_tensor *gx = tg_grad(x);
    cr_assert_eq(tgt_at(gx, 2), 13.0);
    tg_release(gx);
    tg_release(g2);
    tg_release(x);
    cr_assert_eq(o.released, 1);
}

/* A custom function whose backward hands back a tensor it saved, over the
 * caller's memory, as the input's gradient (an identity-like backward): once
 * the graph is freed that tensor is the only one on the memory, and it must
 * not become a .grad that later backwards add into. */
static tg_status blob_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                          tg_tensor **out, void *user) {
    (void)n_in, (void)n_out;
    tg_tensor *b = user;
    if (tg_ctx_save(ctx, b) < 0) return tg_last_status();
    out[0] = tg_mul(in[0], b);
    return out[0] ? TG_OK : tg_last_status();
}
static tg_status blob_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                          tg_tensor **gin, void *user) {
    (void)n_out, (void)gout, (void)n_in, (void)user;
    gin[0] = tg_ctx_saved(ctx, 0); /* d(x * b)/dx = b, with an upstream of ones */
    return gin[0] ? TG_OK : tg_last_status();
}
Test(blob, a_gradient_over_the_callers_memory_is_copied_into_grad) {
    double bbuf[3] = {1, 2, 3};
    owner o = {0};
    static const tg_function fn = {"BlobBackward", blob_fwd, blob_bwd};
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(3));
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    for (int round = 0; round < 2; round++) {
        tg_tensor *b = round ? tg_ones(TG_F64, TG_SHAPE(3))
                             : tg_from_blob(TG_CPU, TG_F64, TG_SHAPE(3), NULL, bbuf, on_release,
                                            &o);
        tg_tensor *y = NULL, *ones = tg_ones(TG_F64, TG_SHAPE(3));
        cr_assert_eq(tg_function_apply(&fn, b, 1, &x, 1, &y), TG_OK, "%s", tg_last_error());
        tg_release(b); /* the graph's saved copy holds the memory now */
        cr_assert_eq(tg_backward(y, ones, false), TG_OK, "%s", tg_last_error());
        tg_release(y);
        tg_release(ones);
    }
    cr_assert(bbuf[0] == 1 && bbuf[1] == 2 && bbuf[2] == 3,
              "the caller's memory was written: %g %g %g", bbuf[0], bbuf[1], bbuf[2]);
    tg_tensor *gx = tg_grad(x);
    cr_assert_eq(tgt_at(gx, 2), 4.0);
    tg_release(gx);
    tg_release(x);
    cr_assert_eq(o.released, 1, "the .grad holds no reference to the caller's memory");
}
