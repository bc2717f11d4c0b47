/* tests/tg_test_util.c - helpers shared by the Criterion suites. */
#include "tg_test_util.h"
#include "core.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define TGT_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define TGT_LSAN 1
#endif
#endif

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void tgt_setup(void) {
    tg_clear_error();
    tg_set_grad_enabled(true);
}

static int g_test_scope;

void tgt_setup_scoped(void) {
    tgt_setup();
    g_test_scope = tg_scope_begin();
}

void tgt_teardown_scoped(void) {
    cr_expect_eq(tg_scope_end(g_test_scope), TG_OK, "%s", tg_last_error());
    tgt_teardown();
}

void tgt_assert_nothing_live(void) {
    tg_live_counts c = tg_live();
    cr_assert_eq(c.tensors, 0, "%lld tensors still alive", (long long)c.tensors);
    cr_assert_eq(c.storages, 0, "%lld storages still alive", (long long)c.storages);
    cr_assert_eq(c.nodes, 0, "%lld nodes still alive", (long long)c.nodes);
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    cr_assert_eq(m.live_total, 0, "%zu bytes still counted live", m.live_total);
    cr_assert_eq(m.saved, 0, "%zu saved bytes still counted", m.saved);
    cr_assert_eq(tg_mem_get(TG_CUDA, &m), TG_OK);
    cr_assert_eq(m.live_total, 0, "%zu bytes still counted live on cuda", m.live_total);
    cr_assert_eq(m.saved, 0, "%zu saved bytes still counted on cuda", m.saved);
}

void tgt_teardown(void) {
    /* Criterion does not count assertion failures in .fini, so a leak ends the
     * test process with an error instead (reported as a crash). */
    tg_fault_inject(0, false);
    /* a failed assertion skips the test's tg_scope_end: close what it left
     * open, so that the failure is not reported again as a leak */
    int open = tg_scope_depth();
    if (open > 0) {
        fprintf(stderr, "teardown: closing %d scope(s) the test left open\n", open);
        tg_scope_unwind(0);
    }
    tg_live_counts c = tg_live();
    tg_mem_stats m;
    tg_mem_get(TG_CPU, &m);
    tg_mem_stats mc;
    tg_mem_get(TG_CUDA, &mc);
    m.live_total += mc.live_total;
    m.saved += mc.saved;
    if (c.tensors || c.storages || c.nodes || m.live_total || m.saved) {
        fprintf(stderr, "LEAK after test: %lld tensors, %lld storages, %lld nodes, %zu bytes "
                "live, %zu saved bytes\n", (long long)c.tensors, (long long)c.storages,
                (long long)c.nodes, m.live_total, m.saved);
        tg__reg_dump(stderr);
        abort();
    }
#ifdef TGT_LSAN
    /* plain-malloc leaks too: LeakSanitizer's report at exit would not fail the test */
    if (__lsan_do_recoverable_leak_check()) {
        fprintf(stderr, "LEAK after test: LeakSanitizer found unreleased memory (above)\n");
        abort();
    }
#endif
}

void tgt_assert_error(tg_status st, ...) {
    cr_assert_eq(tg_last_status(), st, "expected %s, got %s: %s", tg_status_name(st),
                 tg_status_name(tg_last_status()), tg_last_error());
    cr_assert(strlen(tg_last_error()) > 0, "error %s has no message", tg_status_name(st));
    va_list ap;
    va_start(ap, st);
    tgt_assert_error_substrings(ap);
    va_end(ap);
}

void tgt_assert_leak_report(const char *first, ...) {
    va_list ap;
    va_start(ap, first);
    for (const char *sub = first; sub; sub = va_arg(ap, const char *))
        cr_assert(strstr(tg_leak_check_report(), sub) != NULL, "leak report lacks \"%s\": %s",
                  sub, tg_leak_check_report());
    va_end(ap);
}

void tgt_assert_error_substrings(va_list ap) {
    const char *sub;
    while ((sub = va_arg(ap, const char *)) != NULL)
        cr_assert(strstr(tg_last_error(), sub) != NULL, "message lacks \"%s\": %s", sub,
                  tg_last_error());
}

tg_tensor *tgt_f64(int ndim, const int64_t *shape, const double *data) {
    tg_tensor *t = tg_from_data(TG_F64, ndim, shape, data);
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

double tgt_at(const tg_tensor *t, int64_t i) {
    int64_t n = tg_numel(t);
    cr_assert(i >= 0 && i < n);
    double *buf = malloc((size_t)n * sizeof *buf);
    cr_assert_eq(tg_copy_out(t, TG_F64, buf, (size_t)n * sizeof *buf), TG_OK);
    double v = buf[i];
    free(buf);
    return v;
}

void tgt_assert_values(const tg_tensor *t, const double *want, int64_t n, double tol) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_numel(t), n, "numel %lld, expected %lld", (long long)tg_numel(t), (long long)n);
    double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    cr_assert_eq(tg_copy_out(t, TG_F64, buf, (size_t)(n ? n : 1) * sizeof *buf), TG_OK);
    for (int64_t i = 0; i < n; i++) {
        bool ok = (isnan(want[i]) && isnan(buf[i])) || buf[i] == want[i] ||
                  fabs(buf[i] - want[i]) <= tol;
        if (!ok) {
            double got = buf[i];
            free(buf);
            cr_assert_fail("element %lld: got %.17g, expected %.17g", (long long)i, got, want[i]);
        }
    }
    free(buf);
}

tg_tensor *tgt_targets(int64_t n, int64_t v, uint64_t seed) {
    int64_t *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    cr_assert_not_null(y);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        y[i] = i % 3 == 2 ? -100 : (int64_t)((s >> 33) % (uint64_t)v);
    }
    tg_tensor *t = tg_from_data(TG_I64, 1, &n, y);
    free(y);
    return t;
}

/* From kernels/cuda/runtime.cu; weak: a build without the CUDA backend has none. */
size_t tg__cuda_guard_violations(void) __attribute__((weak));

size_t tgt_cuda_guard_violations(void) {
    return tg__cuda_guard_violations ? tg__cuda_guard_violations() : 0;
}

double tgt_max_rel(const tg_tensor *a, const tg_tensor *b) {
    cr_assert(a && b);
    const int64_t n = tg_numel(a);
    cr_assert_eq(n, tg_numel(b));
    double *x = malloc((size_t)(n + 1) * sizeof *x), *e = malloc((size_t)(n + 1) * sizeof *e);
    cr_assert(x && e);
    cr_assert_eq(tg_copy_out(a, TG_F64, x, (size_t)n * sizeof *x), TG_OK);
    cr_assert_eq(tg_copy_out(b, TG_F64, e, (size_t)n * sizeof *e), TG_OK);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(e[i]));
    for (int64_t i = 0; i < n && worst < INFINITY; i++)
        worst = isnan(x[i]) || isnan(e[i]) ? INFINITY
                                           : fmax(worst, fabs(x[i] - e[i]) / (scale > 0 ? scale : 1));
    free(x);
    free(e);
    return worst;
}

size_t tgt_cpu_live(void) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    return m.live_total;
}

size_t tgt_cpu_peak(void) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    return m.peak_total;
}
