/* tests/test_memory.c - exact memory accounting: bytes by category, saved
 * bytes (each storage once), peaks and their reset, fault injection basics. */
#include <unistd.h>

#include "tg_test_util.h"

TestSuite(memory, .init = tgt_setup, .fini = tgt_teardown);

static tg_mem_stats stats(void) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CPU, &m), TG_OK);
    return m;
}

Test(memory, categories_saved_bytes_and_peaks) {
    const size_t B = 100 * sizeof(double);
    int sc = tg_scope_begin();
    tg_tensor *x = tg_zeros(TG_F64, TG_SHAPE(100));
    tg_set_requires_grad(x, true);
    tg_mem_stats m = stats();
    cr_assert_eq(m.live[TG_MEM_LEAF], B);
    cr_assert_eq(m.live_total, B);

    tg_tensor *y = tg_exp(x); /* saves its output y */
    m = stats();
    cr_assert_eq(m.live[TG_MEM_ACTIVATION], B);
    cr_assert_eq(m.saved, B);

    tg_tensor *z = tg_mul(y, x); /* saves y (already counted) and x */
    m = stats();
    cr_assert_eq(m.live[TG_MEM_ACTIVATION], 2 * B);
    cr_assert_eq(m.saved, 2 * B, "a storage saved twice is counted once");

    tg_tensor *s = tg_sum(z);
    m = stats();
    cr_assert_eq(m.live[TG_MEM_ACTIVATION], 2 * B + sizeof(double));
    cr_assert_eq(m.live_total, 3 * B + sizeof(double));
    cr_assert_eq(m.peak_total, m.live_total);

    cr_assert_eq(tg_backward(s, NULL, false), TG_OK);
    m = stats();
    cr_assert_eq(m.saved, 0, "backward frees saved tensors");
    cr_assert_eq(m.saved_peak, 2 * B);
    cr_assert_eq(m.live[TG_MEM_GRADIENT], B, "only x.grad remains");
    cr_assert_gt(m.peak[TG_MEM_GRADIENT], B, "backward made temporaries");
    cr_assert_geq(m.peak_total, m.live_total);

    cr_assert_eq(tg_mem_reset_peak(TG_CPU), TG_OK);
    m = stats();
    cr_assert_eq(m.peak_total, m.live_total);
    cr_assert_eq(m.peak[TG_MEM_GRADIENT], m.live[TG_MEM_GRADIENT]);
    cr_assert_eq(m.saved_peak, 0);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    (void)y;
}

Test(memory, views_allocate_nothing_and_free_with_the_last_handle) {
    tg_tensor *x = tg_zeros(TG_F32, TG_SHAPE(4, 8));
    tg_mem_stats m0 = stats();
    tg_tensor *v = tg_transpose(x, 0, 1);
    tg_tensor *s = tg_slice(v, 1, 0, 4, 2);
    tg_mem_stats m1 = stats();
    cr_assert_eq(m1.live_total, m0.live_total);
    cr_assert_eq(m1.n_alloc, m0.n_alloc);
    tg_release(x);
    tg_release(v);
    cr_assert_eq(stats().live_total, 4 * 8 * sizeof(float), "the slice keeps the storage");
    tg_release(s);
    cr_assert_eq(stats().live_total, 0);
}

/* The peak RSS follows memory the process really touched: after filling a
 * 96 MiB tensor it is at least that much above what it was before. */
Test(memory, peak_rss_follows_touched_memory) {
    size_t before = tg_peak_rss_bytes();
    cr_assert_gt(before, 0, "VmHWM unreadable");
    const int64_t n = (int64_t)96 << 20 >> 3; /* 96 MiB of f64 */
    tg_tensor *t = tg_full(TG_F64, TG_SHAPE(n), 1.5);
    cr_assert_not_null(t);
    size_t after = tg_peak_rss_bytes();
    cr_assert_geq(after, (size_t)96 << 20, "peak RSS %zu after touching 96 MiB", after);
    cr_assert_geq(after, before);
    tg_release(t);
    tg_mem_empty_cache(TG_CPU);
}

Test(memory, category_names) {
    cr_assert_str_eq(tg_mem_category_name(TG_MEM_LEAF), "leaf");
    cr_assert_str_eq(tg_mem_category_name(TG_MEM_ACTIVATION), "activation");
    cr_assert_str_eq(tg_mem_category_name(TG_MEM_GRADIENT), "gradient");
    cr_assert_str_eq(tg_mem_category_name(TG_MEM_WORKSPACE), "workspace");
    cr_assert_str_eq(tg_mem_category_name(TG_MEM_EXTERNAL), "external");
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get((tg_device)7, &m), TG_ERR_DEVICE);
    cr_assert_eq(tg_mem_get(TG_CPU, NULL), TG_ERR_NULL);
}

Test(memory, fault_injection_once_and_persistent) {
    tg_fault_inject(1, false);
    tg_tensor *a = tg_zeros(TG_F64, TG_SHAPE(3));
    cr_assert_null(a);
    tgt_assert_error(TG_ERR_NOMEM, "injected", NULL);
    tg_tensor *b = tg_zeros(TG_F64, TG_SHAPE(3)); /* once: the next one works */
    cr_assert_not_null(b);
    cr_assert_eq(tg_fault_inject(2, true), 1, "one failure fired");
    tg_tensor *c = tg_ones(TG_F64, TG_SHAPE(3)); /* 1st and 2nd allocation of it */
    cr_assert_null(c);
    cr_assert_null(tg_ones(TG_F64, TG_SHAPE(3)));
    cr_assert_gt(tg_fault_inject(0, false), 0);
    c = tg_ones(TG_F64, TG_SHAPE(3));
    cr_assert_not_null(c);
    tg_release(b);
    tg_release(c);
}

Test(memory, large_blocks_are_cached_and_given_back) {
    const int64_t n = (int64_t)(8 << 20) / 8; /* 8 MiB: above the cache's 4 MiB floor */
    tg_tensor *a = tg_zeros(TG_F64, TG_SHAPE(n));
    cr_assert_not_null(a);
    tg_release(a);
    tg_mem_stats m = stats();
    cr_assert_eq(m.live_total, 0);
    cr_assert_geq(m.cached, (size_t)n * 8, "the freed block is kept for reuse");
    uint64_t allocs = m.n_alloc;
    tg_tensor *b = tg_ones(TG_F64, TG_SHAPE(n)); /* reuses it, counted as usual */
    int sc = tg_scope_begin();
    tgt_assert_values(tg_slice(b, 0, 0, 2, 1), (double[]){1, 1}, 2, 0);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    m = stats();
    cr_assert_eq(m.n_alloc, allocs + 1);
    cr_assert_eq(m.cached, 0);
    cr_assert_eq(m.live_total, (size_t)n * 8);
    tg_release(b);
    cr_assert_eq(tg_mem_empty_cache(TG_CPU), TG_OK);
    cr_assert_eq(stats().cached, 0);
    cr_assert_eq(tg_mem_empty_cache((tg_device)9), TG_ERR_DEVICE);
    tgt_assert_error(TG_ERR_DEVICE, "tg_mem_empty_cache", NULL);
}

/* The cache keeps as much as the process has had live at once (at least 2 GiB, at
 * most half the machine's memory). Regression: the limit was a fixed 2 GiB, so a
 * step's 2.5 GiB gradient was freed and its pages zeroed afresh every step (seq
 * 32768 x vocab 32000 cost 13.8x seq 8192 for 4x the work). The block is never
 * touched: only address space is used. */
Test(memory, the_cache_keeps_blocks_as_large_as_the_process_has_used) {
    if (getenv("TAPEGRAD_CPU_CACHE_MB")) cr_skip_test("TAPEGRAD_CPU_CACHE_MB sets the limit");
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    const size_t bytes = (size_t)5 << 29; /* 2.5 GiB */
    if (pages > 0 && psz > 0 && (size_t)pages * (size_t)psz / 2 < bytes)
        cr_skip_test("this machine has less than 5 GiB: the cache stays below 2.5 GiB");
    tg_tensor *a = tg_empty(TG_F32, TG_SHAPE((int64_t)(bytes / 4)));
    cr_assert_not_null(a, "%s", tg_last_error());
    tg_release(a);
    cr_assert_eq(stats().cached, bytes, "the 2.5 GiB block is kept: cached %zu", stats().cached);
    tg_tensor *b = tg_empty(TG_F32, TG_SHAPE((int64_t)(bytes / 4))); /* the next step's */
    cr_assert_eq(stats().cached, 0, "reused");
    tg_release(b);
    cr_assert_eq(tg_mem_empty_cache(TG_CPU), TG_OK);
    cr_assert_eq(stats().cached, 0);
}

Test(memory, set_error_records_status_and_message) {
    cr_assert_eq(tg_set_error(TG_ERR_IO, "reading %s: %d", "x.bin", 7), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, "reading x.bin: 7", NULL);
    tg_clear_error();
    cr_assert_eq(tg_last_status(), TG_OK);
    cr_assert_str_eq(tg_last_error(), "");
}
