/* tests/test_cuda.c - the CUDA foundation: device discovery, tg_to_device
 * (exact round trips, strided sources, backward), device memory accounting
 * and its cache, fault injection on device allocations, operands on mixed
 * devices refused, backward through device ops. Tests that need a device are reported SKIPPED (with the
 * reason) when there is none; the tests of the no-device behaviour are
 * skipped when there is one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tg_test_util.h"
#ifdef TG_TEST_SIMT
#include "simt/simt.h"
#endif

TestSuite(cuda, .init = tgt_setup, .fini = tgt_teardown);

#define NEED_DEVICE() TGT_NEED_CUDA()
#define NEED_NO_DEVICE()                                                                \
    do {                                                                                \
        if (tg_cuda_device_count() > 0)                                                 \
            cr_skip_test("a CUDA device is present (%d); this checks the behaviour "    \
                         "without one", tg_cuda_device_count());                        \
    } while (0)

static tg_mem_stats cuda_stats(void) {
    tg_mem_stats m;
    cr_assert_eq(tg_mem_get(TG_CUDA, &m), TG_OK);
    return m;
}

/* ---- without a device -------------------------------------------------------------- */

Test(cuda, no_device_count_is_zero_with_a_reason) {
    NEED_NO_DEVICE();
    cr_assert_eq(tg_cuda_device_count(), 0);
    cr_assert_neq(tg_cuda_unavailable_reason()[0], '\0', "a reason is given");
    cr_assert_eq(tg_last_status(), TG_OK, "asking is not an error");
}

Test(cuda, no_device_to_device_fails_cleanly) {
    NEED_NO_DEVICE();
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(3, 4));
    tg_set_requires_grad(x, true);
    tg_tensor *c = tg_to_device(x, TG_CUDA);
    cr_assert_null(c);
    tgt_assert_error(TG_ERR_DEVICE, "tg_to_device", "no CUDA device available",
                     tg_cuda_unavailable_reason(), NULL);
    tg_mem_stats m = cuda_stats();
    cr_assert_eq(m.n_alloc, 0);
    cr_assert_eq(m.live_total, 0);
    tg_release(x);
}

Test(cuda, no_device_empty_cache_is_ok) {
    NEED_NO_DEVICE();
    cr_assert_eq(tg_cuda_empty_cache(), TG_OK);
    cr_assert_eq(tg_mem_empty_cache(TG_CUDA), TG_OK);
    cr_assert_eq(cuda_stats().cached, 0);
}

/* ---- everywhere --------------------------------------------------------------------- */

Test(cuda, to_device_same_device_is_a_new_reference) {
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    tg_tensor *y = tg_to_device(x, TG_CPU);
    cr_assert_eq(y, x);
    tg_release(y);
    tg_release(x);
}

Test(cuda, to_device_bad_arguments) {
    cr_assert_null(tg_to_device(NULL, TG_CPU));
    tgt_assert_error(TG_ERR_NULL, "tg_to_device", NULL);
    tg_clear_error();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2));
    cr_assert_null(tg_to_device(x, (tg_device)9));
    tgt_assert_error(TG_ERR_DEVICE, "tg_to_device", "unknown device 9", NULL);
    tg_release(x);
}

Test(cuda, empty_cache_is_ok) {
    cr_assert_eq(tg_cuda_empty_cache(), TG_OK);
}

/* ---- with a device --------------------------------------------------------------------- */

/* x (any layout, CPU) -> cuda -> cpu equals x element for element, bit-exact. */
static void round_trip(tg_tensor *x) {
    int64_t n = tg_numel(x);
    size_t es = tg_dtype_size(tg_get_dtype(x));
    char *want = malloc((size_t)n * es + 1), *got = malloc((size_t)n * es + 1);
    cr_assert_eq(tg_copy_out(x, tg_get_dtype(x), want, (size_t)n * es), TG_OK);
    tg_tensor *c = tg_to_device(x, TG_CUDA);
    cr_assert_not_null(c, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(c), TG_CUDA);
    cr_assert(tg_is_contiguous(c));
    /* read directly from the device */
    cr_assert_eq(tg_copy_out(c, tg_get_dtype(x), got, (size_t)n * es), TG_OK, "%s", tg_last_error());
    cr_assert_eq(memcmp(want, got, (size_t)n * es), 0);
    /* and back to the host */
    tg_tensor *h = tg_to_device(c, TG_CPU);
    cr_assert_not_null(h, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(h), TG_CPU);
    cr_assert_eq(memcmp(want, tg_data(h), (size_t)n * es), 0);
    tg_release(h);
    tg_release(c);
    free(want);
    free(got);
}

Test(cuda, round_trip_exact_all_dtypes_and_strided_sources) {
    NEED_DEVICE();
    tg_tensor *f = tg_randn(TG_F32, TG_SHAPE(37, 129), 1, 0.0, 1.0);
    tg_tensor *d = tg_randn(TG_F64, TG_SHAPE(5, 7, 11), 2, 0.0, 1e30);
    tg_tensor *i = tg_arange(TG_I64, -1000, 1000, 3);
    round_trip(f);
    round_trip(d);
    round_trip(i);
    tg_tensor *ft = tg_transpose(f, 0, 1);       /* strided */
    tg_tensor *fs = tg_slice(ft, 1, 3, 30, 4);   /* strided with an offset */
    tg_tensor *ds = tg_slice(d, 2, -5, 11, 2);
    round_trip(ft);
    round_trip(fs);
    round_trip(ds);
    tg_tensor *e = tg_zeros(TG_F32, TG_SHAPE(0, 3)); /* empty */
    round_trip(e);
    tg_release(f), tg_release(d), tg_release(i), tg_release(ft), tg_release(fs), tg_release(ds);
    tg_release(e);
}

Test(cuda, strided_views_of_a_cuda_tensor_read_back) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *x = tg_arange(TG_F64, 0, 24, 1);
    tg_tensor *x2 = tg_view(x, TG_SHAPE(4, 6));
    tg_tensor *c = tg_to_device(x2, TG_CUDA);
    tg_tensor *v = tg_slice(tg_transpose(c, 0, 1), 0, 1, 6, 2); /* [3, 4]: x2[:, 1::2].T */
    cr_assert_not_null(v, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(v), TG_CUDA);
    double got[12];
    cr_assert_eq(tg_copy_out(v, TG_F64, got, sizeof got), TG_OK, "%s", tg_last_error());
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 4; k++) cr_assert_eq(got[r * 4 + k], k * 6 + 1 + 2 * r);
    double g;
    cr_assert_eq(tg_get(v, (const int64_t[]){2, 3}, &g), TG_OK);
    cr_assert_eq(g, 3 * 6 + 5);
    tg_tensor *h = tg_to_device(v, TG_CPU); /* a strided cuda source */
    cr_assert_not_null(h, "%s", tg_last_error());
    tgt_assert_values(h, got, 12, 0.0);
    tg_tensor *one = tg_slice(tg_slice(v, 0, 1, 2, 1), 1, 2, 3, 1);
    cr_assert_eq(tg_item(one, &g), TG_OK);
    cr_assert_eq(g, 2 * 6 + 3);
    char buf[256] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    cr_assert_eq(tg_print(f, v, 3), TG_OK);
    fclose(f);
    cr_assert(strstr(buf, "(cuda)") && strstr(buf, "[1, 7, 13, ...]"), "printed: %s", buf);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(cuda, accounting_is_exact_and_freed_blocks_are_cached) {
    NEED_DEVICE();
    cr_assert_eq(tg_cuda_empty_cache(), TG_OK);
    tg_mem_stats m0 = cuda_stats(), cpu0;
    cr_assert_eq(tg_mem_get(TG_CPU, &cpu0), TG_OK);
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(1000)); /* 4000 bytes, class 4096 */
    tg_tensor *c = tg_to_device(x, TG_CUDA);
    cr_assert_not_null(c, "%s", tg_last_error());
    tg_mem_stats m = cuda_stats();
    cr_assert_eq(m.live[TG_MEM_ACTIVATION], 4000, "requested bytes, not rounded");
    cr_assert_eq(m.live_total, 4000);
    cr_assert_eq(m.peak_total, 4000);
    cr_assert_eq(m.n_alloc, m0.n_alloc + 1);
    cr_assert_eq(m.cached, 0);
    tg_mem_stats cpu;
    cr_assert_eq(tg_mem_get(TG_CPU, &cpu), TG_OK);
    cr_assert_eq(cpu.live_total, 4000, "only x on the host");
    tg_release(c);
    m = cuda_stats();
    cr_assert_eq(m.live_total, 0);
    cr_assert_eq(m.n_free, m0.n_free + 1);
    cr_assert_eq(m.cached, 4096, "the block is kept in its 512-byte class");
    cr_assert_eq(m.peak_total, 4000);
    c = tg_to_device(x, TG_CUDA); /* same class: reused */
    m = cuda_stats();
    cr_assert_eq(m.cached, 0);
    cr_assert_eq(m.live_total, 4000);
    tg_tensor *big = tg_zeros(TG_F64, TG_SHAPE(300000)); /* 2.4 MB: class 4 MiB */
    tg_tensor *cb = tg_to_device(big, TG_CUDA);
    cr_assert_not_null(cb, "%s", tg_last_error());
    m = cuda_stats();
    cr_assert_eq(m.live_total, 4000 + 2400000);
    cr_assert_eq(m.peak_total, 4000 + 2400000);
    tg_release(cb);
    tg_release(c);
    m = cuda_stats();
    cr_assert_eq(m.cached, 4096 + ((size_t)4 << 20));
    cr_assert_eq(tg_mem_reset_peak(TG_CUDA), TG_OK);
    cr_assert_eq(cuda_stats().peak_total, 0);
    cr_assert_eq(tg_cuda_empty_cache(), TG_OK);
    cr_assert_eq(cuda_stats().cached, 0);
    tg_release(big);
    tg_release(x);
}

Test(cuda, gradients_made_in_backward_count_as_gradient) {
    NEED_DEVICE();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(10));
    tg_set_requires_grad(x, true);
    tg_tensor *c = tg_to_device(x, TG_CUDA);
    tg_tensor *h = tg_to_device(c, TG_CPU);
    tg_tensor *s = tg_sum(h);
    cr_assert_eq(tg_mem_reset_peak(TG_CUDA), TG_OK);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_mem_stats m = cuda_stats();
    cr_assert_eq(m.peak[TG_MEM_GRADIENT], 80, "the gradient of c, on the device");
    cr_assert_eq(m.live[TG_MEM_GRADIENT], 0);
    tg_release(s), tg_release(h), tg_release(c), tg_release(x);
}

Test(cuda, fault_injection_on_device_allocations) {
    NEED_DEVICE();
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(64));
    bool saw_device_failure = false;
    for (uint64_t n = 1; n < 50; n++) {
        tg_clear_error();
        tg_mem_stats before = cuda_stats();
        tg_fault_inject(n, false);
        tg_tensor *c = tg_to_device(x, TG_CUDA);
        uint64_t fired = tg_fault_inject(0, false);
        if (c) {
            cr_assert_eq(fired, 0);
            tg_release(c);
            break;
        }
        cr_assert_eq(fired, 1);
        tgt_assert_error(TG_ERR_NOMEM, "[injected failure]", NULL);
        tg_mem_stats after = cuda_stats();
        if (strstr(tg_last_error(), "on cuda")) {
            saw_device_failure = true;
            cr_assert_eq(after.n_alloc, before.n_alloc, "the failure comes before cudaMalloc");
        } else { /* a later book-keeping allocation failed: the block was given back */
            cr_assert_eq(after.n_alloc - before.n_alloc, after.n_free - before.n_free);
        }
        cr_assert_eq(after.live_total, 0);
        tg_live_counts lc = tg_live();
        cr_assert_eq(lc.tensors, 1, "only x");
    }
    cr_assert(saw_device_failure, "some injected failure hit the device allocation");
    tg_release(x);
}

Test(cuda, to_device_backward_copies_the_gradient_back) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *x = tg_randn(TG_F32, TG_SHAPE(3, 5), 7, 0.0, 1.0);
    tg_set_requires_grad(x, true);
    tg_tensor *c = tg_to_device(x, TG_CUDA);
    cr_assert(tg_requires_grad(c));
    tg_tensor *h = tg_to_device(c, TG_CPU);
    tg_tensor *s = tg_sum(tg_scale(h, 1.0));
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(x);
    cr_assert_not_null(g);
    cr_assert_eq(tg_get_device(g), TG_CPU);
    for (int64_t i = 0; i < 15; i++) cr_assert_eq(tgt_at(g, i), 1.0);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(cuda, mixed_device_operands_are_refused) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(4, 4));
    tg_tensor *c = tg_to_device(x, TG_CUDA);
    tg_tensor *y = tg_zeros(TG_I64, TG_SHAPE(4));
    cr_assert_not_null(c, "%s", tg_last_error());
#define REFUSED(expr)                                                                    \
    do {                                                                                 \
        tg_clear_error();                                                                \
        cr_assert_null(expr, #expr " should fail");                                      \
        cr_assert_eq(tg_last_status(), TG_ERR_DEVICE, #expr ": %s", tg_last_error());    \
        cr_assert(strstr(tg_last_error(), "different devices"), "%s", tg_last_error());  \
    } while (0)
#define REFUSED_ST(expr)                                                                 \
    do {                                                                                 \
        tg_clear_error();                                                                \
        cr_assert_eq(expr, TG_ERR_DEVICE, #expr ": %s", tg_last_error());                \
        cr_assert(strstr(tg_last_error(), "different devices"), "%s", tg_last_error());  \
    } while (0)
    REFUSED(tg_add(c, x));
    REFUSED(tg_where(x, c, c));
    REFUSED(tg_matmul(x, c));
    REFUSED(tg_gather(c, tg_view(y, TG_SHAPE(4, 1))));
    tg_tensor *lp = NULL;
    tg_logprob_opts o = tg_logprob_opts_default();
    o.want_entropy = false;
    REFUSED_ST(tg_logprob_entropy(c, y, &o, &lp, NULL));
    cr_assert_null(lp);
    REFUSED_ST(tg_add_(c, x));
    REFUSED_ST(tg_copy_(c, x));
    REFUSED_ST(tg_copy_(x, c));
    cr_assert_eq(tg_version(c), 0, "nothing was modified");
    cr_assert_eq(tg_version(x), 0, "nothing was modified");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(cuda, backward_through_device_views_and_ops) {
    NEED_DEVICE();
    int sc = tg_scope_begin();
    tg_tensor *x = tg_ones(TG_F64, TG_SHAPE(2, 3));
    tg_set_requires_grad(x, true);
    tg_tensor *v = tg_transpose(tg_to_device(x, TG_CUDA), 0, 1); /* a view on the device */
    tg_tensor *s = tg_sum(tg_scale(tg_contiguous(v), 3.0));
    cr_assert_not_null(s, "%s", tg_last_error());
    cr_assert_eq(tg_get_device(s), TG_CUDA);
    cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
    tg_tensor *g = tg_grad(x);
    cr_assert_not_null(g);
    cr_assert_eq(tg_get_device(g), TG_CPU);
    for (int64_t i = 0; i < 6; i++) cr_assert_eq(tgt_at(g, i), 3.0);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* ---- device properties and synchronisation ---------------------------------------- */

Test(cuda, get_props_bad_arguments_and_without_a_device) {
    cr_assert_eq(tg_cuda_get_props(NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "tg_cuda_get_props", "out", NULL);
    tg_clear_error();
    NEED_NO_DEVICE();
    tg_cuda_props p;
    memset(&p, 0x5a, sizeof p);
    cr_assert_eq(tg_cuda_get_props(&p), TG_ERR_DEVICE);
    tgt_assert_error(TG_ERR_DEVICE, "tg_cuda_get_props", tg_cuda_unavailable_reason(), NULL);
    cr_assert_eq(p.name[0], '\0', "zeroed on failure");
    cr_assert_eq(p.total_bytes, 0);
    tg_clear_error();
    cr_assert_eq(tg_cuda_synchronize(), TG_OK, "nothing to wait for");
}

Test(cuda, get_props_describes_the_device) {
    NEED_DEVICE();
    tg_cuda_props p;
    cr_assert_eq(tg_cuda_get_props(&p), TG_OK, "%s", tg_last_error());
    cr_assert_neq(p.name[0], '\0');
    cr_assert_gt(p.total_bytes, 0);
    cr_assert_leq(p.free_bytes, p.total_bytes);
    cr_assert_gt(p.sm_count, 0);
    cr_assert_geq(p.peak_bytes_per_s, 0.0);
    int sc = tg_scope_begin();
    tg_tensor *d = tg_exp(tg_to_device(tg_ones(TG_F32, TG_SHAPE(64)), TG_CUDA)); /* queued */
    cr_assert_eq(tg_cuda_synchronize(), TG_OK, "%s", tg_last_error());
    double v = 0.0;
    cr_assert_eq(tg_get(d, (int64_t[]){5}, &v), TG_OK);
    cr_assert_float_eq(v, exp(1.0), 1e-6);
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

/* c = a @ b for (n, n) f32 operands of the given values, read back at [0, 0]. */
static double product00(tg_device dev, tg_dtype dt, int64_t n, double av, double bv) {
    tg_tensor *a = tg_full(dt, TG_SHAPE(n, n), av), *b = tg_full(dt, TG_SHAPE(n, n), bv);
    if (dev != TG_CPU) {
        a = tg_to_device(a, dev);
        b = tg_to_device(b, dev);
    }
    tg_tensor *c = tg_matmul(a, b);
    cr_assert_not_null(c, "%s", tg_last_error());
    double v = NAN;
    cr_assert_eq(tg_get(c, (int64_t[]){0, 0}, &v), TG_OK, "%s", tg_last_error());
    return v;
}

Test(cuda, tf32_is_an_opt_in_for_f32_products_on_the_device) {
    /* recorded with or without a device; the previous setting is returned */
    cr_assert(!tg_allow_tf32(), "off by default");
    cr_assert(!tg_set_allow_tf32(true));
    cr_assert(tg_allow_tf32());
    cr_assert(tg_set_allow_tf32(false));
    cr_assert(!tg_allow_tf32());
    NEED_DEVICE();
    int sc = tg_scope_begin();
    /* 1 + 2^-12 is exact in f32; TF32 keeps 10 mantissa bits: 1 */
    const int64_t n = 256;
    const double x = 1.0 + 0x1p-12, exact = (double)n * x;
    cr_assert_eq(product00(TG_CUDA, TG_F32, n, x, 1.0), exact, "off: exact f32");
    cr_assert(!tg_set_allow_tf32(true));
    cr_assert_eq(product00(TG_CUDA, TG_F32, n, x, 1.0), (double)n, "on: operands rounded to TF32");
    cr_assert_eq(product00(TG_CPU, TG_F32, n, x, 1.0), exact, "the CPU is never affected");
    cr_assert_eq(product00(TG_CUDA, TG_F64, n, x, 1.0), exact, "nor f64");
    cr_assert(tg_set_allow_tf32(false));
    cr_assert_eq(product00(TG_CUDA, TG_F32, n, x, 1.0), exact, "off again");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(cuda, work_runs_on_the_stream_set) {
    cr_assert_null(tg_cuda_get_stream(), "the legacy default stream at start");
    if (tg_cuda_device_count() == 0) {
        cr_assert_eq(tg_cuda_set_stream((void *)0x10), TG_ERR_DEVICE);
        tgt_assert_error(TG_ERR_DEVICE, "tg_cuda_set_stream", NULL);
        tg_clear_error();
        cr_assert_null(tg_cuda_get_stream(), "nothing changed");
        return;
    }
    cr_assert_eq(tg_cuda_set_stream(NULL), TG_OK, "the same stream again: nothing to do");
#ifdef TG_TEST_SIMT
    /* the emulator takes any token as a stream and notes the one each
     * kernel, cuBLAS call and copy was given */
    void *s = (void *)0x5151;
    cr_assert_eq(tg_cuda_set_stream(s), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_cuda_get_stream(), s);
    int sc = tg_scope_begin();
    tg_tensor *x = tg_to_device(tg_full(TG_F32, TG_SHAPE(4, 4), 0.5), TG_CUDA);
    cr_assert_eq(tg_simt_last_stream("copy"), s, "host to device");
    tg_tensor *y = tg_exp(x);
    cr_assert_eq(tg_simt_last_stream("launch"), s, "a kernel");
    tg_tensor *z = tg_matmul(y, x);
    cr_assert_eq(tg_simt_last_stream("cublas"), s, "a GEMM");
    cr_assert_not_null(z, "%s", tg_last_error());
    cr_assert_eq(tg_cuda_set_stream(NULL), TG_OK);
    tg_tensor *w = tg_neg(z);
    cr_assert_null(tg_simt_last_stream("launch"), "back on the legacy default stream");
    double v;
    cr_assert_eq(tg_get(w, (int64_t[]){0, 0}, &v), TG_OK);
    cr_assert_float_eq(v, -4.0 * 0.5 * exp(0.5), 1e-6);
    /* waiting for the old stream fails: the error names the call, the stream stays */
    tg_simt_fail_after("cudaStreamSynchronize", 0);
    cr_assert_eq(tg_cuda_set_stream(s), TG_ERR_CUDA);
    tgt_assert_error(TG_ERR_CUDA, "tg_cuda_set_stream", "cudaStreamSynchronize", NULL);
    tg_clear_error();
    cr_assert_null(tg_cuda_get_stream(), "unchanged");
    cr_assert_eq(tg_scope_end(sc), TG_OK);
#endif
}

/* ---- an allocator from outside (tg_cuda_set_allocator) ---------------------------------- */

/* A framework's allocator as the library sees it: counts what it is asked for
 * and can be told to refuse; its memory is the emulated device's. */
typedef struct ext_log {
    int64_t allocs, frees;
    size_t live;
    void *stream;
    bool refuse, misalign;
} ext_log;

static void *ext_alloc(size_t bytes, void *stream, void *ctx) {
    ext_log *log = ctx;
    if (log->refuse) return NULL;
    log->allocs++;
    log->live += bytes;
    log->stream = stream;
#ifdef TG_TEST_SIMT
    char *p = tg_simt_device_alloc(bytes + 16);
    return p && log->misalign ? p + 16 : p;
#else
    return NULL;
#endif
}

static void ext_free(void *p, size_t bytes, void *stream, void *ctx) {
    ext_log *log = ctx;
    log->frees++;
    log->live -= bytes;
    log->stream = stream;
#ifdef TG_TEST_SIMT
    tg_simt_device_free(log->misalign ? (char *)p - 16 : p);
#else
    (void)p;
#endif
}

Test(cuda, set_allocator_refuses_bad_arguments_and_live_memory) {
    ext_log log = {0};
    cr_assert_eq(tg_cuda_set_allocator(ext_alloc, NULL, &log), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "tg_cuda_set_allocator", "both", NULL);
    tg_clear_error();
    if (tg_cuda_device_count() == 0) {
        cr_assert_eq(tg_cuda_set_allocator(ext_alloc, ext_free, &log), TG_ERR_DEVICE);
        tgt_assert_error(TG_ERR_DEVICE, "tg_cuda_set_allocator", NULL);
        tg_clear_error();
        return;
    }
    tg_tensor *h = tg_ones(TG_F32, TG_SHAPE(10));
    tg_tensor *c = tg_to_device(h, TG_CUDA);
    cr_assert_not_null(c, "%s", tg_last_error());
    cr_assert_eq(tg_cuda_set_allocator(ext_alloc, ext_free, &log), TG_ERR_STATE);
    tgt_assert_error(TG_ERR_STATE, "tg_cuda_set_allocator", "40 bytes", NULL);
    tg_clear_error();
    tg_release(c);
    tg_release(h);
    cr_assert_eq(log.allocs, 0, "nothing changed");
}

Test(cuda, device_memory_comes_from_the_allocator_set) {
#ifndef TG_TEST_SIMT
    cr_skip_test("needs device memory the test can allocate: the emulated device's");
#else
    NEED_DEVICE();
    ext_log log = {0};
    tg_tensor *host = tg_full(TG_F32, TG_SHAPE(64, 32), 0.25);
    cr_assert_eq(tg_cuda_set_allocator(ext_alloc, ext_free, &log), TG_OK, "%s", tg_last_error());
    cr_assert_eq(cuda_stats().cached, 0, "the library's cache was given back");
    void *s = (void *)0x7171;
    cr_assert_eq(tg_cuda_set_stream(s), TG_OK);
    int sc = tg_scope_begin(); /* owns every tensor made until tg_scope_end */
    tg_tensor *x = tg_to_device(host, TG_CUDA);
    cr_assert_eq(tg_set_requires_grad(x, true), TG_OK);
    cr_assert_eq(log.allocs, 1);
    cr_assert_eq(log.live, 64 * 32 * 4, "the bytes asked for");
    cr_assert_eq(log.stream, s, "with the library's stream");
    cr_assert_eq(cuda_stats().live_total, log.live, "the accounting counts them as before");
    /* a whole step: ops, the fused op's workspace, backward's gradients */
    tg_tensor *y = tg_randint(TG_SHAPE(64), 3, 0, 32);
    tg_tensor *yc = tg_to_device(y, TG_CUDA);
    tg_tensor *lp = NULL, *ent = NULL;
    cr_assert_eq(tg_logprob_entropy(x, yc, NULL, &lp, &ent), TG_OK, "%s", tg_last_error());
    tg_tensor *loss = tg_add(tg_mean(lp), tg_mean(ent));
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_not_null(tg_grad(x));
    cr_assert_gt(log.allocs, 6);
    cr_assert_eq(cuda_stats().cached, 0, "nothing is cached on the library's side");
    cr_assert_eq(cuda_stats().live_total, log.live);
    /* the allocator refusing: the op that asked fails cleanly */
    log.refuse = true;
    cr_assert_null(tg_exp(x));
    tgt_assert_error(TG_ERR_NOMEM, "tg_cuda_set_allocator", "8192 bytes", NULL);
    tg_clear_error();
    log.refuse = false;
    /* a block the kernels could not load vectors from is given back */
    int64_t frees = log.frees;
    log.misalign = true;
    cr_assert_null(tg_exp(x));
    tgt_assert_error(TG_ERR_VALUE, "tg_cuda_set_allocator", "not aligned to 256 bytes", NULL);
    tg_clear_error();
    log.misalign = false;
    cr_assert_eq(log.frees, frees + 1, "the misaligned block went back");
    /* changing it while the library holds blocks is refused */
    cr_assert_eq(tg_cuda_set_allocator(NULL, NULL, NULL), TG_ERR_STATE);
    tg_clear_error();
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    cr_assert_eq(log.allocs, log.frees, "every block went back to the allocator");
    cr_assert_eq(log.live, 0);
    cr_assert_eq(cuda_stats().live_total, 0);
    cr_assert_eq(tg_cuda_set_allocator(NULL, NULL, NULL), TG_OK, "back to the library's own");
    cr_assert_eq(tg_cuda_set_stream(NULL), TG_OK);
    tg_tensor *z = tg_to_device(host, TG_CUDA);
    cr_assert_eq(log.allocs, log.frees, "the allocator is no longer asked");
    tg_release(z);
    cr_assert_gt(cuda_stats().cached, 0, "cached by the library again");
    cr_assert_eq(tg_cuda_empty_cache(), TG_OK);
    tg_release(host);
#endif
}
