/* tests/test_device_faults.c - the CUDA backend's memory and failures:
 * exact device accounting, the leak checker on device graphs, guard bytes
 * around device blocks, every allocation failure of a device step, and (on
 * the emulated device, which can inject them) failed launches, copies and
 * cuBLAS calls. Built twice like test_backends.c: against the library (cases
 * SKIPPED without a device) and against the simt build. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tg_test_util.h"
#ifdef TG_TEST_SIMT
#include "simt.h"
#endif

/* After every case: no device block's guard bytes were overwritten. */
static void fini(void) {
    cr_expect_eq(tgt_cuda_guard_violations(), 0, "a kernel wrote outside its output (see stderr)");
    tgt_teardown();
}

TestSuite(device_faults, .init = tgt_setup, .fini = fini);

static tg_tensor *randn(tg_dtype dt, int nd, const int64_t *shape, uint64_t seed) {
    return tg_randn(dt, nd, shape, seed, 0.0, 1.0);
}


/* ---- memory ------------------------------------------------------------------------------------ */

Test(device_faults, device_results_are_counted_and_freed) {
    TGT_NEED_CUDA();
    tg_mem_stats before;
    cr_assert_eq(tg_mem_get(TG_CUDA, &before), TG_OK);
    int sc = tg_scope_begin();
    tg_tensor *z = tg_to_device(randn(TG_F32, 2, (int64_t[]){8, 100}, 180), TG_CUDA);
    tg_set_requires_grad(z, true);
    tg_tensor *y = tg_to_device(tgt_targets(8, 100, 181), TG_CUDA);
    tg_logprob_opts o = tg_logprob_opts_default();
    tg_tensor *lp, *h;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    tg_mem_stats mid;
    cr_assert_eq(tg_mem_get(TG_CUDA, &mid), TG_OK);
    /* z saved by reference: 8 x 3 x 8 B of row statistics beyond the outputs */
    cr_assert_eq(mid.saved - before.saved, 8 * 100 * 4 + 8 * 8 + 8 * 3 * 8);
    cr_assert_eq(tg_backward(tg_sum(lp), NULL, false), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    tg_mem_stats after;
    cr_assert_eq(tg_mem_get(TG_CUDA, &after), TG_OK);
    cr_assert_eq(after.live_total, before.live_total);
}

/* Story 3 on the device: per-microbatch losses kept without detaching keep
 * every microbatch's device graph alive, and the leak checker names them. */
Test(device_faults, leak_checker_sees_graphs_kept_on_the_device) {
    TGT_NEED_CUDA();
    for (int detach = 0; detach < 2; detach++) {
        tg_tensor *w = randn(TG_F32, 2, (int64_t[]){16, 32}, 230);
        tg_tensor *wd = tg_set_name(tg_to_device(w, TG_CUDA), "w"); /* a device leaf */
        tg_set_requires_grad(wd, true);
        tg_tensor *losses[4];
        for (int k = 0; k < 4; k++) {
            int sc = tg_scope_begin();
            tg_tensor *x = tg_to_device(randn(TG_F32, 2, (int64_t[]){8, 16}, 231 + k), TG_CUDA);
            tg_tensor *y = tg_to_device(tgt_targets(8, 32, 232 + k), TG_CUDA);
            tg_tensor *lp, *h;
            cr_assert_eq(tg_logprob_entropy(tg_matmul(x, wd), y, NULL, &lp, &h), TG_OK, "%s",
                         tg_last_error());
            tg_tensor *loss = tg_neg(tg_mean(lp));
            cr_assert_eq(tg_backward(loss, NULL, true), TG_OK, "%s", tg_last_error());
            losses[k] = tg_scope_keep(detach ? tg_detach(loss) : loss);
            char name[16];
            snprintf(name, sizeof name, "losses[%d]", k);
            tg_set_name(losses[k], name);
            cr_assert_eq(tg_scope_end(sc), TG_OK);
            tg_step_mark("microbatch");
        }
        tg_leak_report *r = tg_leak_scan();
        cr_assert_not_null(r, "%s", tg_last_error());
        if (detach) {
            cr_assert_eq(tg_leak_report_nroots(r), 0);
            cr_assert_eq(tg_leak_check(), TG_OK, "%s", tg_leak_check_report());
        } else {
            cr_assert_eq(tg_leak_report_nroots(r), 4, "every kept loss outlived its step");
            const tg_leak_root *q = tg_leak_report_root(r, 0);
            cr_assert(strstr(q->name, "losses["), "%s", q->name);
            cr_assert_gt(q->bytes, 0, "device bytes are counted");
            cr_assert_eq(tg_leak_check(), TG_ERR_LEAK);
            tgt_assert_leak_report("losses[0]", "LogprobEntropyBackward", NULL);
            tg_clear_error();
        }
        tg_leak_report_free(r);
        for (int k = 0; k < 4; k++) tg_release(losses[k]);
        tg_release(wd);
        tg_release(w);
    }
}

Test(device_faults, guard_bytes_around_device_blocks_are_intact) {
    TGT_NEED_CUDA();
    const char *g = getenv("TAPEGRAD_CUDA_GUARD");
    if (!g || !*g || !strcmp(g, "0")) cr_skip_test("TAPEGRAD_CUDA_GUARD is not set");
    int sc = tg_scope_begin();
    /* odd sizes, so that an overrun lands in the guard, not in class padding */
    for (int64_t n = 1; n < 40; n += 7) {
        tg_tensor *a = tg_to_device(randn(TG_F32, 2, (int64_t[]){n, 3}, 190 + n), TG_CUDA);
        tg_tensor *b = tg_to_device(randn(TG_F32, 2, (int64_t[]){3, n}, 191 + n), TG_CUDA);
        tg_set_requires_grad(a, true);
        tg_tensor *m = tg_matmul(a, b);
        tg_tensor *s = tg_sum(tg_mul(tg_log_softmax(m), tg_softmax(m)));
        cr_assert_not_null(s, "%s", tg_last_error());
        cr_assert_eq(tg_backward(s, NULL, false), TG_OK, "%s", tg_last_error());
        tg_tensor *y = tg_to_device(tgt_targets(n, n, 192), TG_CUDA);
        tg_tensor *lp, *h;
        cr_assert_eq(tg_logprob_entropy(m, y, NULL, &lp, &h), TG_OK, "%s", tg_last_error());
    }
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    cr_assert_eq(tgt_cuda_guard_violations(), 0, "a kernel wrote outside its block");
}

/* A whole step on the device with the n-th allocation failing (once, then
 * for good), for every n until the step needs no more: each run ends with
 * TG_ERR_NOMEM or succeeds with the reference values, leaks nothing and
 * leaves the leaf's gradient either whole or absent. */
static tg_status device_step(tg_tensor *w_cpu, tg_tensor *x_cpu, tg_tensor *y_cpu, double *loss,
                             double *gsum) {
    tg_tensor *w = tg_to_device(w_cpu, TG_CUDA);
    tg_tensor *x = tg_to_device(x_cpu, TG_CUDA), *y = tg_to_device(y_cpu, TG_CUDA);
    tg_tensor *lp = NULL, *h = NULL;
    tg_status st = tg_logprob_entropy(tg_matmul(x, w), y, NULL, &lp, &h);
    tg_tensor *l = st == TG_OK ? tg_neg(tg_mean(tg_add(lp, tg_scale(h, 0.1)))) : NULL;
    if (st == TG_OK && !l) st = tg_last_status();
    if (st == TG_OK) st = tg_item(l, loss);
    if (st == TG_OK) st = tg_backward(l, NULL, false);
    if (st == TG_OK) st = tg_item(tg_sum(tg_grad(w_cpu)), gsum);
    return st;
}

Test(device_faults, every_allocation_failure_in_a_device_step_is_clean) {
    TGT_NEED_CUDA();
    tg_tensor *w = randn(TG_F64, 2, (int64_t[]){6, 10}, 220);
    tg_tensor *x = randn(TG_F64, 2, (int64_t[]){5, 6}, 221);
    tg_tensor *y = tgt_targets(5, 10, 222);
    cr_assert_eq(tg_set_requires_grad(w, true), TG_OK);
    double ref_loss, ref_g;
    int sc = tg_scope_begin();
    cr_assert_eq(device_step(w, x, y, &ref_loss, &ref_g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_scope_end(sc), TG_OK);
    tg_zero_grad(w);
    for (int persistent = 0; persistent < 2; persistent++) {
        uint64_t failing = 0;
        for (uint64_t n = 1;; n++) {
            double loss = 0, g = 0;
            sc = tg_scope_begin();
            tg_fault_inject(n, persistent);
            tg_status st = device_step(w, x, y, &loss, &g);
            uint64_t fired = tg_fault_inject(0, false);
            cr_assert_eq(tg_scope_end(sc), TG_OK);
            if (fired == 0) {
                cr_assert_eq(st, TG_OK, "run %llu: %s", (unsigned long long)n, tg_last_error());
                cr_assert_eq(loss, ref_loss);
                cr_assert_eq(g, ref_g);
                tg_zero_grad(w);
                break;
            }
            failing++;
            cr_assert_eq(st, TG_ERR_NOMEM, "run %llu: %s: %s", (unsigned long long)n,
                         tg_status_name(st), tg_last_error());
            sc = tg_scope_begin(); /* tg_grad returns a new reference */
            if (tg_grad(w)) { /* the failure came after backward */
                double gg = 0;
                cr_assert_eq(tg_item(tg_sum(tg_grad(w)), &gg), TG_OK);
                cr_assert_eq(gg, ref_g, "run %llu: the gradient is whole", (unsigned long long)n);
            }
            cr_assert_eq(tg_scope_end(sc), TG_OK);
            tg_zero_grad(w);
            tg_clear_error();
            tg_live_counts lc = tg_live();
            cr_assert_eq(lc.tensors, 3, "run %llu (%s): only w, x, y live", (unsigned long long)n,
                         persistent ? "persistent" : "once");
            cr_assert_eq(lc.nodes, 0);
            tg_mem_stats dm;
            cr_assert_eq(tg_mem_get(TG_CUDA, &dm), TG_OK);
            cr_assert_eq(dm.live_total, 0, "run %llu: no device bytes", (unsigned long long)n);
        }
        cr_assert_gt(failing, 10, "the step allocates (%llu)", (unsigned long long)failing);
    }
    tg_release(w), tg_release(x), tg_release(y);
}

/* ---- failures of the device (emulated device only: failure injection) ------------------------ */

#ifdef TG_TEST_SIMT
Test(device_faults, failed_launch_is_tg_err_cuda_naming_the_kernel_and_site) {
    int sc = tg_scope_begin();
    tg_tensor *a = tg_to_device(randn(TG_F32, 2, (int64_t[]){4, 4}, 200), TG_CUDA);
    tg_simt_fail_after("launch", 0);
    cr_assert_null(tg_add(a, a));
    tgt_assert_error(TG_ERR_CUDA, "launch of k", "kernels/cuda/elementwise.cu:",
                     "cudaErrorLaunchFailure", NULL);
    tg_clear_error();
    tg_simt_fail_after("cublas", 0);
    cr_assert_null(tg_matmul(a, a));
    tgt_assert_error(TG_ERR_CUDA, "tg_matmul", "cublasSgemm", "kernels/cuda/matmul.cu:",
                     "CUBLAS_STATUS_EXECUTION_FAILED", NULL);
    tg_clear_error();
    tg_simt_fail_after("cudaMemcpy", 0);
    cr_assert_null(tg_to_device(a, TG_CPU));
    tgt_assert_error(TG_ERR_CUDA, "cudaMemcpy", "cudaErrorIllegalAddress", NULL);
    tg_clear_error();
    tg_simt_fail_after("", -1);
    cr_assert_not_null(tg_add(a, a), "the device works again: %s", tg_last_error());
    cr_assert_eq(tg_scope_end(sc), TG_OK);
}

Test(device_faults, every_launch_failure_in_a_training_step_is_clean) {
    /* Fail the k-th kernel launch of a whole step for every k: each run must end
     * with TG_ERR_CUDA (or succeed once k is past the step), leak nothing and
     * leave no leaf gradient half-written. */
    for (int k = 0;; k++) {
        int sc = tg_scope_begin();
        tg_tensor *w = tg_to_device(randn(TG_F32, 2, (int64_t[]){6, 10}, 210), TG_CUDA);
        tg_set_requires_grad(w, true);
        tg_tensor *x = tg_to_device(randn(TG_F32, 2, (int64_t[]){5, 6}, 211), TG_CUDA);
        tg_tensor *y = tg_to_device(tgt_targets(5, 10, 212), TG_CUDA);
        long before = tg_simt_launch_count();
        tg_simt_fail_after("launch", k);
        tg_tensor *lp = NULL, *h = NULL;
        tg_status st = tg_logprob_entropy(tg_matmul(x, w), y, NULL, &lp, &h);
        if (st == TG_OK) st = tg_backward(tg_neg(tg_mean(tg_add(lp, tg_scale(h, 0.1)))), NULL, false);
        long used = tg_simt_launch_count() - before;
        tg_simt_fail_after("", -1);
        if (st == TG_OK) {
            cr_assert(k >= used - 1, "k = %d: the step succeeded", k);
            cr_assert_not_null(tg_grad(w));
            cr_assert_eq(tg_scope_end(sc), TG_OK);
            cr_assert(k > 3, "the step launches several kernels");
            break;
        }
        cr_assert(st == TG_ERR_CUDA, "k = %d: %s", k, tg_last_error());
        cr_assert_null(tg_grad(w), "k = %d: no half-written gradient", k);
        tg_clear_error();
        cr_assert_eq(tg_scope_end(sc), TG_OK);
    }
}
#endif
