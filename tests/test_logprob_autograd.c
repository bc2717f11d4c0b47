/* tests/test_logprob_autograd.c - tg_logprob_entropy and the tape: argument
 * and data errors (status, message, nothing written or leaked), conditional
 * recording (exact saved bytes), peak memory of the fused path, gradcheck of
 * both implementations, and the shared-storage in-place story.
 * Values and accuracy are in test_logprob.c. */
#include <stdarg.h>

#include "test_logprob_util.h"
#include "tg_ops_test_util.h"

TestSuite(logprob, .init = tgt_setup, .fini = tgt_teardown);

/* ---- 6. errors ------------------------------------------------------------------------- */

static int sentinel_;
#define SENTINEL ((tg_tensor *)&sentinel_)

/* Calls the op with outputs preset to a sentinel and asserts: status st, a
 * message holding every (NULL-terminated) substring, outputs set to NULL (the
 * entropy output is passed only when pass_h), no object or byte left behind,
 * logits and targets unchanged (bytes and version). */
static void expect_fail(tg_tensor *z, tg_tensor *y, const tg_logprob_opts *o, bool pass_h,
                        tg_status st, ...) {
    size_t zb = 0;
    void *zraw = z ? lpt_raw(z, &zb) : NULL;
    uint64_t zv = z ? tg_version(z) : 0, yv = y ? tg_version(y) : 0;
    tg_live_counts l0 = tg_live();
    tg_mem_stats m0, m1;
    tg_mem_get(TG_CPU, &m0);
    tg_tensor *lp = SENTINEL, *h = SENTINEL;
    tg_clear_error();
    tg_status got = tg_logprob_entropy(z, y, o, &lp, pass_h ? &h : NULL);
    cr_assert_eq(got, st, "expected %s, got %s: %s", tg_status_name(st), tg_status_name(got),
                 tg_last_error());
    cr_assert_eq(tg_last_status(), st);
    va_list ap;
    va_start(ap, st);
    tgt_assert_error_substrings(ap);
    va_end(ap);
    cr_assert_null(lp, "logprob output not set to NULL");
    if (pass_h) cr_assert_null(h, "entropy output not set to NULL");
    tg_live_counts l1 = tg_live();
    tg_mem_get(TG_CPU, &m1);
    cr_assert(l1.tensors == l0.tensors && l1.storages == l0.storages && l1.nodes == l0.nodes,
              "leaked: tensors %lld -> %lld, storages %lld -> %lld, nodes %lld -> %lld",
              (long long)l0.tensors, (long long)l1.tensors, (long long)l0.storages,
              (long long)l1.storages, (long long)l0.nodes, (long long)l1.nodes);
    cr_assert_eq(m1.live_total, m0.live_total, "live bytes %zu -> %zu", m0.live_total,
                 m1.live_total);
    cr_assert_eq(m1.saved, m0.saved, "saved bytes %zu -> %zu", m0.saved, m1.saved);
    if (z) {
        cr_assert_eq(tg_version(z), zv, "logits' version moved");
        size_t zb2;
        void *zraw2 = lpt_raw(z, &zb2);
        cr_assert(zb == zb2 && !memcmp(zraw, zraw2, zb), "logits were written");
        free(zraw2);
        free(zraw);
    }
    if (y) cr_assert_eq(tg_version(y), yv, "targets' version moved");
    tg_clear_error();
}

/* Bad rows: all -inf, NaN, +inf; the message names the row (and the column
 * and value); the lowest bad row is the one named. With and without grad. */
static void bad_rows(tg_dtype dt, bool rg) {
    int sc = tg_scope_begin();
    const int64_t N = 5, V = 1500;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.temperature = 0.5;
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 701);
    struct {
        int64_t row, col; /* col -1: the whole row */
        double v;
        const char *s1, *s2, *s3;
    } cases[] = {
        {2, -1, -INFINITY, "row 2", "-inf", NULL},
        {1, 1234, NAN, "row 1", "logit 1234", "nan"},
        {3, 5, INFINITY, "row 3", "logit 5", "inf"},
        {4, 0, NAN, "row 4", "logit 0", "nan"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tg_tensor *z = tg_randn(dt, TG_SHAPE(N, V), 702 + k, 0.0, 2.0);
        if (cases[k].col < 0)
            for (int64_t j = 0; j < V; j++) lpt_set(z, cases[k].row * V + j, -INFINITY);
        else
            lpt_set(z, cases[k].row * V + cases[k].col, cases[k].v);
        if (rg) tg_set_requires_grad(z, true);
        for (int chunk = 0; chunk <= 2; chunk++) {
            o.chunk_size = chunk;
            expect_fail(z, y, &o, true, TG_ERR_VALUE, "tg_logprob_entropy", cases[k].s1,
                        cases[k].s2, cases[k].s3, NULL);
        }
    }
    /* two bad rows: the lowest is named */
    tg_tensor *z = tg_randn(dt, TG_SHAPE(N, V), 720, 0.0, 2.0);
    lpt_set(z, 3 * V + 9, NAN);
    for (int64_t j = 0; j < V; j++) lpt_set(z, 1 * V + j, -INFINITY);
    if (rg) tg_set_requires_grad(z, true);
    o.chunk_size = 0;
    expect_fail(z, y, &o, true, TG_ERR_VALUE, "row 1", NULL);
    cr_assert_null(strstr(tg_last_error(), "row 3"));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, bad_rows_f32_with_grad) { bad_rows(TG_F32, true); }
Test(logprob, bad_rows_f64_with_grad) { bad_rows(TG_F64, true); }
Test(logprob, bad_rows_f32_no_grad) { bad_rows(TG_F32, false); }
Test(logprob, bad_rows_f64_no_grad) { bad_rows(TG_F64, false); }

/* Targets outside [0, V) (and not ignore_index): the message names the row and
 * the value. Both implementations. */
Test(logprob, targets_out_of_range) {
    int sc = tg_scope_begin();
    const int64_t N = 4, V = 1500;
    tg_tensor *z = tg_randn(TG_F32, TG_SHAPE(N, V), 731, 0.0, 1.0);
    tg_set_requires_grad(z, true);
    for (int impl = 0; impl < 2; impl++) {
        tg_logprob_opts o = tg_logprob_opts_default();
        o.impl = (tg_logprob_impl)impl;
        tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 732);
        lpt_set(y, 2, (double)V);
        expect_fail(z, y, &o, true, TG_ERR_VALUE, "row 2", "target 1500", NULL);
        lpt_set(y, 2, 3);
        lpt_set(y, 0, -1);
        expect_fail(z, y, &o, true, TG_ERR_VALUE, "row 0", "target -1", NULL);
        o.ignore_index = -1; /* now -1 is fine, -100 is not */
        lpt_set(y, 3, -100);
        expect_fail(z, y, &o, true, TG_ERR_VALUE, "row 3", "target -100", NULL);
        lpt_set_i64(y, 3, INT64_MAX);
        expect_fail(z, y, &o, true, TG_ERR_VALUE, "row 3", "9223372036854775807", NULL);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* The public contract (logprob.h) lists the bad-row errors for the op, not
 * for one implementation: the composite path must refuse them too. */
Test(logprob, composite_refuses_bad_rows) {
    int sc = tg_scope_begin();
    const int64_t N = 3, V = 20;
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 741);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = TG_LOGPROB_COMPOSITE;
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, V), 742, 0.0, 1.0);
    lpt_set(z, 1 * V + 4, NAN);
    expect_fail(z, y, &o, true, TG_ERR_VALUE, "row 1", NULL);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Dtypes, shapes, options, NULL arguments. */
Test(logprob, argument_errors) {
    int sc = tg_scope_begin();
    const int64_t N = 4, V = 30;
    tg_tensor *z = tg_set_name(tg_randn(TG_F32, TG_SHAPE(N, V), 751, 0.0, 1.0), "z");
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 752);
    tg_logprob_opts o = tg_logprob_opts_default();

    tg_tensor *yf = tg_zeros(TG_F32, TG_SHAPE(N));
    expect_fail(z, yf, &o, true, TG_ERR_DTYPE, "targets", "f32", NULL);
    tg_tensor *zi = tg_zeros(TG_I64, TG_SHAPE(N, V));
    expect_fail(zi, y, &o, true, TG_ERR_DTYPE, "logits", "i64", NULL);
    tg_tensor *y5 = lpt_targets(TG_SHAPE(N + 1), V, 753);
    expect_fail(z, y5, &o, true, TG_ERR_SHAPE, "[5]", "[4, 30]", NULL);
    tg_tensor *y41 = lpt_targets(TG_SHAPE(N, 1), V, 754);
    expect_fail(z, y41, &o, true, TG_ERR_SHAPE, "[4, 1]", NULL);
    tg_tensor *z0 = tg_zeros(TG_F32, TG_SHAPE(N, 0));
    expect_fail(z0, y, &o, true, TG_ERR_SHAPE, "[4, 0]", NULL);

    const double bad_t[] = {0.0, -0.0, -1.0, NAN, INFINITY};
    for (size_t k = 0; k < sizeof bad_t / sizeof *bad_t; k++) {
        o = tg_logprob_opts_default();
        o.temperature = bad_t[k];
        expect_fail(z, y, &o, true, TG_ERR_VALUE, "temperature", NULL);
    }
    o = tg_logprob_opts_default();
    o.chunk_size = -1;
    expect_fail(z, y, &o, true, TG_ERR_VALUE, "chunk_size", "-1", NULL);
    o = tg_logprob_opts_default();
    o.impl = (tg_logprob_impl)7;
    expect_fail(z, y, &o, true, TG_ERR_VALUE, "impl", NULL);

    o = tg_logprob_opts_default();
    expect_fail(NULL, y, &o, true, TG_ERR_NULL, "logits", NULL);
    expect_fail(z, NULL, &o, true, TG_ERR_NULL, "targets", NULL);
    expect_fail(z, y, &o, false, TG_ERR_NULL, "entropy", NULL); /* wanted but NULL */
    tg_clear_error();
    cr_assert_eq(tg_logprob_entropy(z, y, &o, NULL, NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "logprob", NULL);
    /* tg_logprob_entropy_lse: lse is its reason to be called, so NULL is refused,
     * and the other outputs it was given are left NULL */
    tg_tensor *lp0 = SENTINEL, *h0 = SENTINEL;
    tg_clear_error();
    cr_assert_eq(tg_logprob_entropy_lse(z, y, &o, &lp0, &h0, NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "tg_logprob_entropy_lse", "lse", NULL);
    cr_assert_null(lp0);
    cr_assert_null(h0);

    /* entropy NULL is fine when not wanted */
    o.want_entropy = false;
    tg_tensor *lp = NULL;
    tg_clear_error();
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
    cr_assert_not_null(lp);
    cr_assert_eq(tg_numel(lp), N);
    /* ...and a given entropy pointer is set to NULL */
    tg_tensor *h = SENTINEL;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    cr_assert_null(h);

    /* NULL propagation: the first error is kept */
    tg_clear_error();
    cr_assert_null(tg_slice(z, 5, 0, 1, 1));
    tg_status first = tg_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tg_last_error());
    cr_assert_neq(first, TG_OK);
    cr_assert_eq(tg_logprob_entropy(tg_slice(z, 5, 0, 1, 1), y, NULL, &lp, &h), first);
    cr_assert_null(lp);
    cr_assert_null(h);
    cr_assert_str_eq(tg_last_error(), msg);
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Allocation failures at every point of forward and backward: an error (or
 * success), never a crash, nothing leaked. */
Test(logprob, allocation_failures_leak_nothing) {
    const int64_t N = 3, V = 40;
    for (int impl = 0; impl < 2; impl++) {
        uint64_t n = 1;
        for (; n < 5000; n++) {
            int sc = tg_scope_begin();
            tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, V), 761, 0.0, 1.0);
            tg_set_requires_grad(z, true);
            tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 762);
            tg_logprob_opts o = tg_logprob_opts_default();
            o.impl = (tg_logprob_impl)impl;
            o.chunk_size = 2;
            tg_tensor *lp = NULL, *h = NULL;
            tg_fault_inject(n, false);
            tg_status st = tg_logprob_entropy(z, y, &o, &lp, &h);
            if (st == TG_OK) {
                tg_tensor *loss = tg_add(tg_sum(lp), tg_sum(h));
                st = loss ? tg_backward(loss, NULL, false) : tg_last_status();
            } else {
                cr_assert_null(lp);
                cr_assert_null(h);
            }
            uint64_t fired = tg_fault_inject(0, false);
            if (st != TG_OK) cr_assert_eq(st, TG_ERR_NOMEM, "%s", tg_last_error());
            tg_clear_error();
            cr_assert_eq(tg_scope_end(sc), TG_OK);
            tgt_assert_nothing_live();
            if (!fired) break; /* the whole run fits in n - 1 allocations */
        }
        cr_log_info("%s: failed each of %llu allocations in turn", impl ? "composite" : "fused",
                    (unsigned long long)(n - 1));
        cr_assert(n > 5 && n < 5000, "allocation count %llu", (unsigned long long)n);
    }
}

/* ---- 7. conditional recording ------------------------------------------------------------ */

static size_t saved_now(void) {
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    return m.saved;
}

static void recording(tg_dtype dt, tg_logprob_impl impl) {
    int sc = tg_scope_begin();
    const int64_t N = 6, V = 1500;
    tg_tensor *z = tg_randn(dt, TG_SHAPE(N, V), 801, 0.0, 2.0);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 802);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = impl;
    tg_tensor *lp = NULL, *h = NULL;

    /* logits do not require grad */
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_live().nodes, 0, "a node was recorded for logits without grad");
    cr_assert_eq(saved_now(), 0);
    cr_assert(!tg_requires_grad(lp) && !tg_requires_grad(h));
    /* under no-grad */
    tg_set_requires_grad(z, true);
    TG_NO_GRAD { cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error()); }
    cr_assert_eq(tg_live().nodes, 0, "a node was recorded under no-grad");
    cr_assert_eq(saved_now(), 0);
    cr_assert(!tg_requires_grad(lp) && !tg_requires_grad(h));
    cr_assert_null(tg_grad_fn_name(lp));
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, no_grad_records_nothing_fused) {
    recording(TG_F32, TG_LOGPROB_FUSED);
    recording(TG_F64, TG_LOGPROB_FUSED);
}
Test(logprob, no_grad_records_nothing_composite) {
    recording(TG_F32, TG_LOGPROB_COMPOSITE);
    recording(TG_F64, TG_LOGPROB_COMPOSITE);
}

/* With grad: the fused op saves the logits' storage (by reference), the
 * targets, and per row its max, log-sum-exp and entropy (24 bytes) - or the
 * first two only (16 bytes) when entropy_grad is off or the entropy is not
 * wanted. Exact figures. */
static void saved_bytes(tg_dtype dt) {
    int sc = tg_scope_begin();
    const int64_t N = 6, V = 1500;
    const size_t es = tg_dtype_size(dt), zbytes = (size_t)(N * V) * es, ybytes = (size_t)N * 8;
    tg_tensor *z = tg_randn(dt, TG_SHAPE(N, V), 811, 0.0, 2.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 812);
    tg_tensor *glp = tg_rand(dt, TG_SHAPE(N), 813, -1.0, 1.0);

    tg_logprob_opts o = tg_logprob_opts_default();
    int s1 = tg_scope_begin();
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_live().nodes, 1);
    cr_assert_eq(saved_now(), zbytes + ybytes + (size_t)N * 24, "saved %zu, expected %zu",
                 saved_now(), zbytes + ybytes + (size_t)N * 24);
    cr_assert_str_eq(tg_grad_fn_name(lp), "LogprobEntropyBackward");
    cr_assert_str_eq(tg_grad_fn_name(h), "LogprobEntropyBackward");
    cr_assert_eq(tg_scope_end(s1), TG_OK);
    cr_assert_eq(saved_now(), 0, "outputs released: the node and its saved tensors go");

    /* entropy_grad off */
    o.entropy_grad = false;
    s1 = tg_scope_begin();
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    cr_assert_eq(saved_now(), zbytes + ybytes + (size_t)N * 16, "saved %zu, expected %zu",
                 saved_now(), zbytes + ybytes + (size_t)N * 16);
    cr_assert(tg_requires_grad(lp));
    cr_assert(!tg_requires_grad(h), "entropy_grad off: the entropy must not require grad");
    cr_assert_null(tg_grad_fn_name(h));
    tg_tensor *loss = tg_add(tg_sum(tg_mul(lp, glp)), tg_sum(h)); /* h: a constant */
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g_off = tg_scope_keep(tg_grad(z));
    cr_assert_eq(tg_scope_end(s1), TG_OK);
    tg_zero_grad(z);

    /* the entropy not wanted at all: same saving, same gradient */
    o.want_entropy = false;
    s1 = tg_scope_begin();
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
    cr_assert_eq(saved_now(), zbytes + ybytes + (size_t)N * 16);
    cr_assert_eq(tg_backward(tg_sum(tg_mul(lp, glp)), NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g_lp_only = tg_scope_keep(tg_grad(z));
    cr_assert_eq(tg_scope_end(s1), TG_OK);
    lpt_assert_bitwise(g_off, g_lp_only, "gradient with entropy_grad off vs logprob only");

    /* strided targets are copied (contiguous), and that copy is what is saved */
    tg_tensor *y2 = lpt_targets(TG_SHAPE(N, 3), V, 814);
    tg_tensor *ys = tg_view(tg_slice(y2, 1, 1, 2, 1), TG_SHAPE(N));
    cr_assert(!tg_is_contiguous(ys));
    o = tg_logprob_opts_default();
    s1 = tg_scope_begin();
    cr_assert_eq(tg_logprob_entropy(z, ys, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    cr_assert_eq(saved_now(), zbytes + ybytes + (size_t)N * 24);
    cr_assert_eq(tg_scope_end(s1), TG_OK);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, saved_bytes_exact_f32) { saved_bytes(TG_F32); }
Test(logprob, saved_bytes_exact_f64) { saved_bytes(TG_F64); }

/* ---- 8. memory ----------------------------------------------------------------------------------- */

/* Fused forward + backward: the peak above what was live before is the
 * logits' gradient plus at most 64 bytes per row. */
Test(logprob, fused_peak_is_the_gradient_plus_64_bytes_per_row) {
    int sc = tg_scope_begin();
    const int64_t N = 128, V = 4096;
    tg_tensor *z = tg_randn(TG_F32, TG_SHAPE(N, V), 821, 0.0, 2.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 822);
    tg_tensor *glp = tg_rand(TG_F32, TG_SHAPE(N), 823, -1.0, 1.0);
    tg_tensor *gh = tg_rand(TG_F32, TG_SHAPE(N), 824, -1.0, 1.0);
    for (int64_t chunk = 0; chunk <= 32; chunk += 32) {
        tg_zero_grad(z);
        int s1 = tg_scope_begin();
        tg_mem_stats m0, m1;
        tg_mem_get(TG_CPU, &m0);
        tg_mem_reset_peak(TG_CPU);
        tg_logprob_opts o = tg_logprob_opts_default();
        o.chunk_size = chunk;
        lpt_out r = lpt_run(z, z, y, &o, glp, gh);
        (void)r;
        tg_mem_get(TG_CPU, &m1);
        size_t grew = m1.peak_total - m0.live_total, budget = (size_t)(N * V) * 4 + 64 * (size_t)N;
        cr_log_info("fused f32 (%lld, %lld) chunk %lld: peak above live %zu bytes = gradient "
                    "%zu + %zu", (long long)N, (long long)V, (long long)chunk, grew,
                    (size_t)(N * V) * 4, grew - (size_t)(N * V) * 4);
        cr_assert(grew <= budget, "chunk %lld: peak grew by %zu bytes > gradient %zu + 64 * N %zu",
                  (long long)chunk, grew, (size_t)(N * V) * 4, 64 * (size_t)N);
        cr_assert_eq(tg_scope_end(s1), TG_OK);
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* Composite (chunk 0): with entropy_grad on, it saves at least 2 * N * V
 * elements more than with it off (the entropy's softmax and log-softmax). */
static size_t composite_saved(tg_dtype dt, bool entropy_grad, int64_t N, int64_t V) {
    int sc = tg_scope_begin();
    tg_tensor *z = tg_randn(dt, TG_SHAPE(N, V), 831, 0.0, 2.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 832);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = TG_LOGPROB_COMPOSITE;
    o.entropy_grad = entropy_grad;
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    size_t s = saved_now();
    cr_assert_eq(tg_requires_grad(h), entropy_grad);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    return s;
}

Test(logprob, composite_entropy_grad_off_saves_two_nv_less) {
    const int64_t N = 64, V = 512;
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F64 : TG_F32;
        size_t on = composite_saved(dt, true, N, V), off = composite_saved(dt, false, N, V);
        size_t nv = (size_t)(N * V) * tg_dtype_size(dt);
        cr_log_info("composite %s saved: entropy_grad on %zu, off %zu (N*V*elem = %zu)",
                    tg_dtype_name(dt), on, off, nv);
        cr_assert(on >= off + 2 * nv, "%s: saved %zu with entropy_grad on, %zu off: less than "
                  "2*N*V*elem = %zu apart", tg_dtype_name(dt), on, off, 2 * nv);
    }
}

/* ---- 9. gradcheck ------------------------------------------------------------------------------ */

typedef struct gc_case {
    tg_tensor *y;
    tg_logprob_opts o;
} gc_case;

/* logprob + 0.7 * entropy per row (logprob only when entropy_grad is off). */
static tg_tensor *gc_fn(tg_tensor *const *in, void *user) {
    const gc_case *c = user;
    tg_tensor *lp = NULL, *h = NULL;
    if (tg_logprob_entropy(in[0], c->y, &c->o, &lp, c->o.want_entropy ? &h : NULL) != TG_OK)
        return NULL;
    if (!c->o.want_entropy || !c->o.entropy_grad) {
        tg_release(h);
        return lp;
    }
    tg_tensor *hs = tg_scale(h, 0.7);
    tg_tensor *out = tg_add(lp, hs);
    tg_release(hs);
    tg_release(h);
    tg_release(lp);
    return out;
}

static void gradcheck_all(tg_tensor *z, tg_tensor *y, const char *what) {
    for (int impl = 0; impl < 2; impl++)
        for (int chunk = 0; chunk <= 2; chunk += 2)
            for (int eg = 1; eg >= 0; eg--) {
                gc_case c = {y, tg_logprob_opts_default()};
                c.o.impl = (tg_logprob_impl)impl;
                c.o.chunk_size = chunk;
                c.o.temperature = 1.3;
                c.o.entropy_grad = eg;
                cr_assert_eq(tg_gradcheck(gc_fn, &c, 1, &z, NULL), TG_OK,
                             "%s, %s, chunk %d, entropy_grad %d: %s", what,
                             impl ? "composite" : "fused", chunk, eg, tg_last_error());
            }
}

Test(logprob, gradcheck_fused_and_composite) {
    int sc = tg_scope_begin();
    const int64_t N = 5, V = 7;
    tg_tensor *z = tg_rand(TG_F64, TG_SHAPE(N, V), 841, -3.0, 3.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 842);
    lpt_set(y, 1, -100);
    gradcheck_all(z, y, "contiguous");
    /* column-strided logits (a transposed leaf), one masked entry */
    tg_tensor *base = tg_rand(TG_F64, TG_SHAPE(V, N), 843, -3.0, 3.0);
    lpt_set(base, 2 * N + 3, -INFINITY);
    tg_tensor *zt = tg_detach(tg_transpose(base, 0, 1));
    tg_set_requires_grad(zt, true);
    cr_assert(!tg_is_contiguous(zt));
    tg_tensor *yt = lpt_targets(TG_SHAPE(N), V, 844);
    lpt_set(yt, 1, -100);
    lpt_set(yt, 3, 4); /* not the masked column 2 of row 3 */
    /* composite gives NaN gradients at -inf (0 * -inf): fused only here */
    for (int chunk = 0; chunk <= 2; chunk += 2)
        for (int eg = 1; eg >= 0; eg--) {
            gc_case c = {yt, tg_logprob_opts_default()};
            c.o.chunk_size = chunk;
            c.o.temperature = 1.3;
            c.o.entropy_grad = eg;
            cr_assert_eq(tg_gradcheck(gc_fn, &c, 1, &zt, NULL), TG_OK,
                         "column-strided, fused, chunk %d, entropy_grad %d: %s", chunk, eg,
                         tg_last_error());
        }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- 10. the in-place story ------------------------------------------------------------------ */

/* A user's entropy as a custom function over (a view of) the logits:
 * H = -sum(softmax(x) * log_softmax(x)) per row; saves x. Its backward
 * "stabilises" x by a constant shift; with user != NULL (the bug) it does so
 * in place on the saved view and shifts back afterwards (sub_ then add_),
 * otherwise out of place. dH/dx = -p * (log p + H). */
static tg_status ent_fwd(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out, tg_tensor **out,
                         void *user) {
    (void)n_in, (void)n_out, (void)user;
    int sc = tg_scope_begin(); /* callbacks own what they make: a scope of their own */
    tg_tensor *lsm = tg_log_softmax(in[0]);
    out[0] = tg_scope_keep(tg_neg(tg_sum_dim(tg_mul(tg_exp(lsm), lsm), -1, false)));
    tg_scope_end(sc);
    if (!out[0]) return tg_last_status();
    return tg_ctx_save(ctx, in[0]) >= 0 ? TG_OK : tg_last_status();
}

static tg_status ent_bwd(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                         tg_tensor **gin, void *user) {
    (void)n_out, (void)n_in;
    tg_tensor *x = tg_ctx_saved(ctx, 0);
    if (!x) return tg_last_status();
    int sc = tg_scope_begin();
    tg_tensor *c = tg_full(tg_get_dtype(x), TG_SCALAR, 3.0);
    tg_tensor *xs = x;
    tg_status st = TG_OK;
    if (user) st = tg_sub_(x, c); /* the bug */
    else xs = tg_sub(x, c);       /* the fix */
    tg_tensor *lsm = tg_log_softmax(xs);
    tg_tensor *p = tg_exp(lsm);
    tg_tensor *H = tg_neg(tg_sum_dim(tg_mul(p, lsm), -1, true));
    tg_tensor *g = tg_reshape(gout[0], TG_SHAPE(tg_size(gout[0], 0), 1));
    gin[0] = tg_scope_keep(tg_neg(tg_mul(tg_mul(p, tg_add(lsm, H)), g)));
    if (user && st == TG_OK) st = tg_add_(x, c); /* "restore" */
    tg_scope_end(sc);
    tg_release(x);
    if (st != TG_OK) {
        tg_release(gin[0]);
        gin[0] = NULL;
        return st;
    }
    return gin[0] ? TG_OK : tg_last_status();
}

static const tg_function ent_fn = {"UserEntropyBackward", ent_fwd, ent_bwd};

/* loss = sum(fused logprob of logits) + sum(user entropy of a view of them). */
static tg_tensor *story_loss(tg_tensor *logits, tg_tensor *y, bool buggy) {
    tg_logprob_opts o = tg_logprob_opts_default();
    o.want_entropy = false;
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(logits, y, &o, &lp, NULL), TG_OK, "%s", tg_last_error());
    tg_tensor *view = tg_slice(logits, 0, 0, tg_size(logits, 0), 1); /* all rows */
    cr_assert(tg_same_storage(view, logits));
    cr_assert_eq(tg_function_apply(&ent_fn, buggy ? (void *)1 : NULL, 1, &view, 1, &h), TG_OK,
                 "%s", tg_last_error());
    tg_tensor *s_lp = tg_sum(lp);
    tg_tensor *s_h = tg_sum(h);
    tg_tensor *loss = tg_add(s_lp, s_h);
    cr_assert_not_null(loss, "%s", tg_last_error());
    return loss;
}

Test(logprob, inplace_story_sub_add_on_a_saved_view_fails_then_fix_is_right) {
    int sc = tg_scope_begin();
    const int64_t N = 4, V = 9;
    tg_tensor *logits = tg_set_name(tg_randn(TG_F64, TG_SHAPE(N, V), 851, 0.0, 2.0), "logits");
    tg_set_requires_grad(logits, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(N), V, 852);
    tg_tensor *snapshot = NULL;
    TG_NO_GRAD { snapshot = tg_clone(logits); }
    TG_NO_GRAD { cr_assert_eq(tg_scale_(logits, 1.0), TG_OK); } /* an earlier update: v1 */
    const uint64_t v_saved = tg_version(logits);
    cr_assert_eq(v_saved, 1);

    /* the bug */
    tg_tensor *loss = story_loss(logits, y, true);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_ERR_INPLACE, "%s", tg_last_error());
    const uint64_t v_now = tg_version(logits);
    cr_assert_eq(v_now, v_saved + 2, "sub_ and add_ each bump the version");
    char versions[96], step1[64], step2[64];
    snprintf(versions, sizeof versions, "is at version %llu; expected version %llu",
             (unsigned long long)v_now, (unsigned long long)v_saved);
    snprintf(step1, sizeof step1, "(version %llu -> %llu)", (unsigned long long)v_saved,
             (unsigned long long)v_saved + 1);
    snprintf(step2, sizeof step2, "(version %llu -> %llu)", (unsigned long long)v_saved + 1,
             (unsigned long long)v_now);
    tgt_assert_error(TG_ERR_INPLACE, "'logits'", "LogprobEntropyBackward", "sub_ at ", "add_ at ",
                     "test_logprob_autograd.c:", versions, step1, step2, NULL);
    cr_assert(strstr(tg_last_error(), "is at version 3; expected version 1"),
              "the story's numbers: %s", tg_last_error());
    cr_log_info("%s", tg_last_error());
    cr_assert_null(tg_grad(logits), "logits' .grad must be untouched on failure");
    tg_clear_error();

    /* the fix: shift out of place; both gradients right */
    TG_NO_GRAD { cr_assert_eq(tg_copy_(logits, snapshot), TG_OK); }
    loss = story_loss(logits, y, false);
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g_story = tg_grad(logits);
    /* reference: the fused op's own entropy, same loss */
    tg_tensor *z = tg_clone(snapshot);
    tg_set_requires_grad(z, true);
    lpt_out r = lpt_run(z, z, y, NULL, NULL, NULL);
    double d = lpt_max_abs_diff(g_story, r.grad);
    cr_assert(d <= 1e-12, "gradient with the fixed user entropy differs from the fused op's by "
              "%.3g", d);
    lpt_err e;
    lpt_check_reference(z, y, 1.0, -100, NULL, NULL, r.lp, r.h, NULL, 1e-12, 1e-13, 1e-13,
                        "story reference", &e);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* The fused op's saved logits are version-checked on their own too: an
 * in-place write after forward fails backward, naming the op. */
Test(logprob, logits_modified_after_forward_fail_backward) {
    int sc = tg_scope_begin();
    tg_tensor *z = tg_set_name(tg_randn(TG_F32, TG_SHAPE(3, 1100), 861, 0.0, 1.0), "z");
    tg_set_requires_grad(z, true);
    tg_tensor *y = lpt_targets(TG_SHAPE(3), 1100, 862);
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(z, y, NULL, &lp, &h), TG_OK, "%s", tg_last_error());
    TG_NO_GRAD { cr_assert_eq(tg_fill_(tg_slice(z, 0, 1, 2, 1), 0.0), TG_OK); }
    cr_assert_eq(tg_backward(tg_sum(h), NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "'z'", "LogprobEntropyBackward", "fill_",
                     "is at version 1; expected version 0", NULL);
    cr_assert_null(tg_grad(z));
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- the composite path agrees with the fused one on ignored rows ----------------- */

/* Ignored rows are never read by either path: NaN anywhere, or -inf in the
 * column the composite path gathers (0), gave NaN log-prob, entropy and
 * gradient in the composite path (a regression; the fused path gave 0). */
static void ignored_rows_case(tg_logprob_impl impl, int64_t chunk, bool entropy_grad,
                              double temperature, tg_tensor **lp, tg_tensor **h, tg_tensor **gz) {
    const int64_t N = 5, V = 4;
    double zv[5 * 4];
    for (int i = 0; i < N * V; i++) zv[i] = 0.25 * (i % 7) - 0.5;
    zv[1 * V + 2] = NAN;       /* row 1: ignored, NaN inside */
    zv[3 * V + 0] = -INFINITY; /* row 3: ignored, -inf in column 0 */
    zv[4 * V + 1] = NAN;       /* row 4: ignored, all of it unusable */
    zv[4 * V + 0] = INFINITY;
    tg_tensor *z = tg_from_data(TG_F64, TG_SHAPE(N, V), zv);
    cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(N), (int64_t[]){2, -100, 0, -100, -100});
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = impl;
    o.chunk_size = chunk;
    o.entropy_grad = entropy_grad;
    o.temperature = temperature;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, lp, h), TG_OK, "%s", tg_last_error());
    /* upstream gradients that are not finite at ignored rows: still no
     * gradient there (a product with a 0 mask gave NaN) */
    tg_tensor *w = tg_from_data(TG_F64, TG_SHAPE(N), (double[]){1, INFINITY, 3, NAN, 5});
    tg_tensor *ab = tg_add(*lp, *h);
    cr_assert_eq(tg_backward(ab, w, false), TG_OK, "%s", tg_last_error());
    *gz = tg_grad(z);
    cr_assert_not_null(*gz);
    TGO_RELEASE(z, y, w, ab);
}

Test(logprob, composite_never_reads_ignored_rows) {
    for (int eg = 0; eg < 2; eg++)
        for (int ti = 0; ti < 2; ti++) {
            double T = ti ? 0.7 : 1.0;
            tg_tensor *lp0, *h0, *g0;
            ignored_rows_case(TG_LOGPROB_FUSED, 0, eg, T, &lp0, &h0, &g0);
            for (int64_t chunk = 0; chunk <= 2; chunk += 2) {
                tg_tensor *lp, *h, *g;
                ignored_rows_case(TG_LOGPROB_COMPOSITE, chunk, eg, T, &lp, &h, &g);
                for (int64_t r = 0; r < 5; r++) {
                    bool ign = r == 1 || r == 3 || r == 4;
                    cr_assert_eq(tgt_at(lp, r), ign ? 0.0 : tgt_at(lp0, r));
                    if (ign) cr_assert(tgt_at(h, r) == 0.0 && !signbit(tgt_at(lp, r)) &&
                                       !signbit(tgt_at(h, r)), "row %lld: +0 as the fused path",
                                       (long long)r);
                    for (int64_t c = 0; c < 4; c++) {
                        double gv = tgt_at(g, r * 4 + c), gf = tgt_at(g0, r * 4 + c);
                        if (ign) cr_assert_eq(gv, 0.0, "ignored row %lld got a gradient",
                                              (long long)r);
                        else cr_assert_float_eq(gv, gf, 1e-12);
                    }
                }
                tgo_assert_same(lp, lp0, 1e-12);
                tgo_assert_same(h, h0, 1e-12);
                TGO_RELEASE(lp, h, g);
            }
            TGO_RELEASE(lp0, h0, g0);
        }
}

/* The composite outputs are tensors of their own like the fused ones (they
 * were internal views, on which in-place ops were refused): in-place ops on
 * them work, and both paths give the same gradient. */
Test(logprob, inplace_on_outputs_works_on_both_paths) {
    tg_tensor *g[3];
    for (int k = 0; k < 3; k++) {
        tg_tensor *z = tgo_randn(TG_F64, TG_SHAPE(2, 3, 5), 11, true);
        tg_tensor *y = tgt_targets(6, 5, 3), *y2 = tg_view(y, TG_SHAPE(2, 3));
        tg_logprob_opts o = tg_logprob_opts_default();
        o.impl = k == 0 ? TG_LOGPROB_FUSED : TG_LOGPROB_COMPOSITE;
        o.chunk_size = k == 2 ? 2 : 0;
        tg_tensor *lp, *h;
        cr_assert_eq(tg_logprob_entropy(z, y2, &o, &lp, &h), TG_OK, "%s", tg_last_error());
        cr_assert(tg_is_contiguous(lp));
        cr_assert_eq(tg_scale_(lp, 3), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_add_(lp, h), TG_OK, "%s", tg_last_error());
        tg_tensor *loss = tg_sum(lp);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        g[k] = tg_grad(z);
        TGO_RELEASE(z, y, y2, lp, h, loss);
    }
    tgo_assert_same(g[1], g[0], 1e-12);
    tgo_assert_same(g[2], g[0], 1e-12);
    TGO_RELEASE(g[0], g[1], g[2]);
}

/* ---- the row log-sum-exp (z-loss) ------------------------------------------------------- */

/* loss = sum(lp * (1, 2, 3)) + 1e-2 sum(lse^2): values and gradient as PyTorch float64
 * computes them (logsumexp(z / T), 0 on the ignored row), fused and composite, chunked. */
Test(logprob, lse_output_and_its_gradient_as_pytorch) {
    static const double zv[12] = {0.5, -1.0, 2.0, 0.25, 1.0, 1.0, -3.0, 0.0, 3.0, -2.0, 0.5, 1.5};
    static const double want_lse[3] = {3.0503779370841855, 0.0, 4.422188495646826};
    static const double want_grad[12] = {
        -0.1297215396686409, -0.015218822858387215, 0.32285661668445703, -0.09076259881216658,
        0, 0, 0, 0,
        0.6569634770225824, -0.0028684923992845445, -0.10202472305098309, -0.42572201883954885};
    for (int impl = 0; impl < 2; impl++) {
        for (int chunk = 0; chunk < 3; chunk += 2) {
            int sc = tg_scope_begin();
            tg_tensor *z = tg_from_data(TG_F64, TG_SHAPE(3, 4), zv);
            cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
            tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(3), ((const int64_t[]){2, -100, 0}));
            tg_logprob_opts o = tg_logprob_opts_default();
            o.temperature = 0.7;
            o.impl = (tg_logprob_impl)impl;
            o.chunk_size = chunk;
            o.want_entropy = false;
            tg_tensor *lp = NULL, *lse = NULL;
            cr_assert_eq(tg_logprob_entropy_lse(z, y, &o, &lp, NULL, &lse), TG_OK, "%s",
                         tg_last_error());
            tgo_assert_close(lse, want_lse, 3, 1e-14);
            cr_assert(tg_requires_grad(lse));
            tg_tensor *w = tg_from_data(TG_F64, TG_SHAPE(3), ((const double[]){1, 2, 3}));
            tg_tensor *loss = tg_add(tg_sum(tg_mul(lp, w)), tg_scale(tg_sum(tg_square(lse)), 1e-2));
            cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
            tgo_assert_close(tg_grad(z), want_grad, 12, 1e-13);
            cr_assert_eq(tg_scope_end(sc), TG_OK);
        }
    }
}

/* Logits with 2 and 3 leading dims, (B, T, V) as trainers hold them: lse[b, t] is
 * logsumexp(z[b, t] / T) for every b, on both paths, chunked or not, as are its
 * gradient (z-loss: sum(lse^2)) and the log-prob and entropy beside it. Before the
 * fix the (N) statistics were broadcast into (B, T), so every b got row [0, t]. */
Test(logprob, lse_with_several_leading_dims) {
    static const int64_t shapes[2][4] = {{2, 3, 5, 0}, {2, 2, 3, 4}};
    for (int s = 0; s < 2; s++) {
        const int nd = s == 0 ? 3 : 4;
        for (int impl = 0; impl < 2; impl++) {
            for (int chunk = 0; chunk < 3; chunk += 2) {
                int sc = tg_scope_begin();
                tg_tensor *z = tg_randn(TG_F64, nd, shapes[s], 11 + s, 0, 2);
                cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
                const int64_t V = shapes[s][nd - 1];
                tg_tensor *y = tg_remainder(tg_arange(TG_I64, 0, tg_numel(z) / V, 1),
                                            tg_full(TG_I64, TG_SCALAR, V));
                y = tg_reshape(y, nd - 1, shapes[s]);
                tg_logprob_opts o = tg_logprob_opts_default();
                o.temperature = 0.7;
                o.impl = (tg_logprob_impl)impl;
                o.chunk_size = chunk;
                tg_tensor *lp = NULL, *h = NULL, *lse = NULL;
                cr_assert_eq(tg_logprob_entropy_lse(z, y, &o, &lp, &h, &lse), TG_OK, "%s",
                             tg_last_error());
                tg_tensor *want = tg_logsumexp_dim(tg_scale(z, 1 / 0.7), -1, false);
                tgo_assert_same(lse, want, 1e-14);
                tg_tensor *lsm = tg_log_softmax(tg_scale(z, 1 / 0.7));
                tgo_assert_same(lp, tg_squeeze(tg_gather(lsm, tg_unsqueeze(y, -1)), -1), 1e-13);
                tgo_assert_same(h, tg_neg(tg_sum_dim(tg_mul(tg_exp(lsm), lsm), -1, false)), 1e-13);
                /* the z-loss's gradient, against the one through logsumexp_dim */
                cr_assert_eq(tg_backward(tg_sum(tg_square(lse)), NULL, false), TG_OK, "%s",
                             tg_last_error());
                tg_tensor *g = tg_clone(tg_grad(z));
                cr_assert_eq(tg_zero_grad(z), TG_OK);
                cr_assert_eq(tg_backward(tg_sum(tg_square(want)), NULL, false), TG_OK);
                tgo_assert_same(g, tg_grad(z), 1e-13);
                cr_assert_eq(tg_scope_end(sc), TG_OK);
            }
        }
    }
}

/* Unused, the log-sum-exp changes nothing: the same gradient, bit for bit, and the
 * same saved bytes as tg_logprob_entropy; under no-grad nothing is saved. */
Test(logprob, lse_unused_costs_nothing_in_backward) {
    size_t saved[2];
    tg_tensor *grad[2];
    for (int with_lse = 0; with_lse < 2; with_lse++) {
        int sc = tg_scope_begin();
        tg_tensor *z = tg_randn(TG_F32, TG_SHAPE(6, 33), 3, 0, 2);
        cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
        tg_tensor *y = tgt_targets(6, 33, 4);
        tg_tensor *lp, *h, *l;
        size_t s0 = saved_now();
        if (with_lse) cr_assert_eq(tg_logprob_entropy_lse(z, y, NULL, &lp, &h, &l), TG_OK);
        else cr_assert_eq(tg_logprob_entropy(z, y, NULL, &lp, &h), TG_OK);
        saved[with_lse] = saved_now() - s0;
        cr_assert_eq(tg_backward(tg_add(tg_sum(lp), tg_sum(h)), NULL, false), TG_OK);
        grad[with_lse] = tg_scope_keep(tg_clone(tg_grad(z)));
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
    cr_assert_eq(saved[0], saved[1], "saved %zu vs %zu bytes", saved[0], saved[1]);
    tgo_assert_same(grad[0], grad[1], 0);
    tg_release(grad[0]);
    tg_release(grad[1]);
}

static tg_tensor *lse_fn(tg_tensor *const *in, void *user) {
    const tg_logprob_opts *o = user;
    tg_tensor *y = tgt_targets(tg_shape(in[0])[0], tg_shape(in[0])[1], 8);
    tg_tensor *lp = NULL, *h = NULL, *l = NULL;
    tg_tensor *r = NULL;
    if (tg_logprob_entropy_lse(in[0], y, o, &lp, o->want_entropy ? &h : NULL, &l) == TG_OK) {
        tg_tensor *a = tg_mul(l, l), *b = h ? tg_add(lp, h) : tg_retain(lp);
        r = tg_add(a, b);
        tg_release(a);
        tg_release(b);
    }
    tg_release(y);
    tg_release(lp);
    tg_release(h);
    tg_release(l);
    return r;
}

Test(logprob, lse_gradcheck_with_entropy_temperature_chunks) {
    for (int impl = 0; impl < 2; impl++) {
        for (int ent = 0; ent < 2; ent++) {
            tg_logprob_opts o = tg_logprob_opts_default();
            o.impl = (tg_logprob_impl)impl;
            o.want_entropy = ent;
            o.temperature = 1.3;
            o.chunk_size = 2;
            tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(5, 7), 21 + ent, 0, 1.5);
            cr_assert_eq(tg_set_requires_grad(z, true), TG_OK);
            cr_assert_eq(tg_gradcheck(lse_fn, &o, 1, &z, NULL), TG_OK, "impl %d entropy %d: %s",
                         impl, ent, tg_last_error());
            tg_release(z);
        }
    }
}

/* ---- grad_into_logits (llm.c's in-place dlogits) ---------------------------------------- */

/* The output layer's step, hidden (N, d) @ W (d, V) -> logits -> fused op, with and
 * without grad_into_logits: the same gradients bit for bit, and a backward peak lower by
 * exactly one (N, V) buffer (the library's own accounting). */
Test(logprob, grad_into_logits_writes_the_gradient_over_the_logits) {
    const int64_t N = 12, d = 8, V = 300;
    size_t peak[2];
    tg_tensor *gh[2], *gw[2];
    for (int into = 0; into < 2; into++) {
        int sc = tg_scope_begin();
        tg_tensor *h = tg_randn(TG_F32, TG_SHAPE(N, d), 1, 0, 1), *w = tg_randn(TG_F32, TG_SHAPE(d, V), 2, 0, 1);
        cr_assert_eq(tg_set_requires_grad(h, true), TG_OK);
        cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
        tg_tensor *y = tgt_targets(N, V, 3);
        tg_logprob_opts o = tg_logprob_opts_default();
        o.grad_into_logits = into;
        tg_tensor *lp, *ent;
        cr_assert_eq(tg_logprob_entropy(tg_matmul(h, w), y, &o, &lp, &ent), TG_OK, "%s",
                     tg_last_error());
        tg_tensor *loss = tg_add(tg_sum(lp), tg_scale(tg_sum(ent), 0.1));
        tg_mem_stats m0;
        tg_mem_get(TG_CPU, &m0);
        tg_mem_reset_peak(TG_CPU);
        cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
        tg_mem_stats m;
        tg_mem_get(TG_CPU, &m);
        peak[into] = m.peak_total - m0.live_total;
        gh[into] = tg_scope_keep(tg_clone(tg_grad(h)));
        gw[into] = tg_scope_keep(tg_clone(tg_grad(w)));
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
    tgo_assert_same(gh[0], gh[1], 0);
    tgo_assert_same(gw[0], gw[1], 0);
    cr_assert_eq(peak[0] - peak[1], (size_t)(N * V * 4), "backward peaks %zu and %zu bytes",
                 peak[0], peak[1]);
    TGO_RELEASE(gh[0], gh[1], gw[0], gw[1]);
}

/* The logits are gone after that backward: a second backward through the graph (or
 * any other saved use of the logits) fails with the in-place error naming the op. */
Test(logprob, grad_into_logits_refuses_every_later_use_of_the_logits) {
    int sc = tg_scope_begin();
    tg_tensor *x = tg_randn(TG_F64, TG_SHAPE(4, 7), 5, 0, 1);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *z = tg_set_name(tg_scale(x, 2.0), "logits");
    tg_logprob_opts o = tg_logprob_opts_default();
    o.grad_into_logits = true;
    o.want_entropy = false;
    tg_tensor *lp;
    cr_assert_eq(tg_logprob_entropy(z, tgt_targets(4, 7, 6), &o, &lp, NULL), TG_OK);
    tg_tensor *l = tg_sum(lp);
    cr_assert_eq(tg_backward(l, NULL, true), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_backward(l, NULL, false), TG_ERR_INPLACE);
    tgt_assert_error(TG_ERR_INPLACE, "'logits'", "grad_into_logits", NULL);
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(logprob, grad_into_logits_bad_uses) {
    int sc = tg_scope_begin();
    tg_tensor *leaf = tg_randn(TG_F32, TG_SHAPE(4, 7), 5, 0, 1);
    cr_assert_eq(tg_set_requires_grad(leaf, true), TG_OK);
    tg_tensor *y = tgt_targets(4, 7, 6), *lp, *h;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.grad_into_logits = true;
    cr_assert_eq(tg_logprob_entropy(leaf, y, &o, &lp, &h), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "grad_into_logits", "leaf", NULL);
    /* a view of that leaf (not a leaf itself): the gradient would have
     * overwritten the leaf's values, silently (a regression) */
    tg_tensor *flat = tg_view(leaf, TG_SHAPE(28)), *lv = tg_view(flat, TG_SHAPE(4, 7));
    tgo_snap snap = tgo_snapshot(leaf);
    cr_assert(!tg_is_leaf(lv));
    cr_assert_eq(tg_logprob_entropy(lv, y, &o, &lp, &h), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "grad_into_logits", "view of a leaf", NULL);
    tgo_assert_unchanged(&snap);
    tg_tensor *x = tg_randn(TG_F32, TG_SHAPE(4, 9), 5, 0, 1);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    tg_tensor *sl = tg_slice(tg_scale(x, 1.0), 1, 0, 7, 1); /* (4, 7), a strided view */
    cr_assert_eq(tg_logprob_entropy(sl, y, &o, &lp, &h), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "grad_into_logits", "contiguous", NULL);
    o.impl = TG_LOGPROB_COMPOSITE;
    cr_assert_eq(tg_logprob_entropy(tg_scale(leaf, 1.0), y, &o, &lp, &h), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "grad_into_logits", "TG_LOGPROB_FUSED", NULL);
    /* nothing recorded (no grad): the option has nothing to do */
    o.impl = TG_LOGPROB_FUSED;
    tg_tensor *plain = tg_randn(TG_F32, TG_SHAPE(4, 7), 5, 0, 1);
    cr_assert_eq(tg_logprob_entropy(plain, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}
