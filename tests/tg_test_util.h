/* tests/tg_test_util.h - helpers shared by the Criterion suites. */
#ifndef TG_TEST_UTIL_H
#define TG_TEST_UTIL_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <string.h>

#include "tapegrad.h"

/* Fixture: clear the thread's error before each test; after it, check that
 * every library object was freed (tensors, storages, nodes) and no byte is
 * still counted live. Use: TestSuite(name, .init = tgt_setup, .fini = tgt_teardown); */
void tgt_setup(void);
void tgt_teardown(void);
/* The same fixture with a scope open around the whole test: tensors the test
 * makes need no tg_free; teardown expects the scope to close with TG_OK.
 * Use: TestSuite(name, .init = tgt_setup_scoped, .fini = tgt_teardown_scoped); */
void tgt_setup_scoped(void);
void tgt_teardown_scoped(void);

/* Asserts that no tensor, storage or node is alive and no byte is counted. */
void tgt_assert_nothing_live(void);

/* Asserts the last error has status st and its message contains every
 * NULL-terminated substring given. */
void tgt_assert_error(tg_status st, ...);
/* Asserts tg_leak_check_report() contains each string given (NULL-terminated). */
void tgt_assert_leak_report(const char *first, ...);
/* The substring checks of tgt_assert_error on a va_list (for variadic helpers). */
void tgt_assert_error_substrings(va_list ap);

/* f64 tensor from a literal array: TGT_F64(TG_SHAPE(2, 2), 1, 2, 3, 4). */
tg_tensor *tgt_f64(int ndim, const int64_t *shape, const double *data);
#define TGT_F64(shape_pair, ...) tgt_f64(shape_pair, (const double[]){__VA_ARGS__})

/* Reads element i (C order) of t as double. */
double tgt_at(const tg_tensor *t, int64_t i);

/* Asserts t's values equal want[0..n-1] within tol. */
void tgt_assert_values(const tg_tensor *t, const double *want, int64_t n, double tol);

/* max |a - b| / max |b| over the elements (a NaN on either side:
 * infinite); asserts they have the same number of elements. */
double tgt_max_rel(const tg_tensor *a, const tg_tensor *b);

/* The CPU's live and peak bytes (tg_mem_get's live_total, peak_total). */
size_t tgt_cpu_live(void);
size_t tgt_cpu_peak(void);

/* Targets (n) i64 in [0, v), seeded, with every third row ignored (-100). */
tg_tensor *tgt_targets(int64_t n, int64_t v, uint64_t seed);

/* Device blocks whose guard bytes were overwritten so far (with
 * TAPEGRAD_CUDA_GUARD=1; 0 in a build without the CUDA backend). */
size_t tgt_cuda_guard_violations(void);

/* Reports the test SKIPPED, with the reason, when there is no CUDA device. */
#define TGT_NEED_CUDA()                                                                 \
    do {                                                                                \
        if (tg_cuda_device_count() == 0)                                                \
            cr_skip_test("no CUDA device: %s", tg_cuda_unavailable_reason());           \
    } while (0)

#endif
