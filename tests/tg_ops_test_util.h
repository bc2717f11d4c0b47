/* tests/tg_ops_test_util.h - static helpers shared by the op suites
 * (test_ops*.c, test_errors*.c, test_registry.c): tensors from literals in any
 * dtype, value and shape assertions, and snapshots proving an input was left
 * unchanged. The list of ops the suites walk is the registry (tests/registry).
 *
 * Everything is `static inline` so that a suite using only part of it still
 * compiles with -Wall -Werror. */
#ifndef TG_OPS_TEST_UTIL_H
#define TG_OPS_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test_util.h"

/* ---- creation ----------------------------------------------------------------- */

/* A tensor of dtype dt holding v[0..numel-1] (C order), converted from double. */
static inline tg_tensor *tgo_make(tg_dtype dt, int ndim, const int64_t *shape, const double *v) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    size_t es = tg_dtype_size(dt);
    void *buf = malloc((size_t)(n ? n : 1) * es);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++) {
        if (dt == TG_F32) ((float *)buf)[i] = (float)v[i];
        else if (dt == TG_F64) ((double *)buf)[i] = v[i];
        else if (dt == TG_BOOL) ((uint8_t *)buf)[i] = v[i] != 0;
        else ((int64_t *)buf)[i] = (int64_t)v[i];
    }
    tg_tensor *t = tg_from_data(dt, ndim, shape, buf);
    free(buf);
    cr_assert_not_null(t, "tg_from_data: %s", tg_last_error());
    return t;
}
/* TGO_MAKE(TG_F32, TG_SHAPE(2, 2), 1, 2, 3, 4) */
#define TGO_MAKE(dt, shape_pair, ...) tgo_make(dt, shape_pair, (const double[]){__VA_ARGS__})

/* A seeded normal f64 (or dt) tensor; requires grad when rg. */
static inline tg_tensor *tgo_randn(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed,
                                   bool rg) {
    tg_tensor *t = tg_randn(dt, ndim, shape, seed, 0.0, 1.0);
    cr_assert_not_null(t, "tg_randn: %s", tg_last_error());
    if (rg) cr_assert_eq(tg_set_requires_grad(t, true), TG_OK, "%s", tg_last_error());
    return t;
}

/* A seeded uniform tensor in [lo, hi); requires grad when rg. */
static inline tg_tensor *tgo_rand(tg_dtype dt, int ndim, const int64_t *shape, uint64_t seed,
                                  double lo, double hi, bool rg) {
    tg_tensor *t = tg_rand(dt, ndim, shape, seed, lo, hi);
    cr_assert_not_null(t, "tg_rand: %s", tg_last_error());
    if (rg) cr_assert_eq(tg_set_requires_grad(t, true), TG_OK, "%s", tg_last_error());
    return t;
}

/* A NON-contiguous f64 leaf of shape [rows, cols] that requires grad: the
 * transpose of a [cols, rows] uniform [lo, hi) tensor, detached (strides
 * (1, rows)). */
static inline tg_tensor *tgo_transposed_leaf(int64_t rows, int64_t cols, uint64_t seed, double lo,
                                             double hi) {
    tg_tensor *base = tgo_rand(TG_F64, TG_SHAPE(cols, rows), seed, lo, hi, false);
    tg_tensor *v = tg_transpose(base, 0, 1);
    tg_tensor *l = tg_detach(v);
    cr_assert_not_null(l, "%s", tg_last_error());
    tg_release(v);
    tg_release(base);
    cr_assert(!tg_is_contiguous(l));
    cr_assert_eq(tg_stride(l, 0), 1);
    cr_assert_eq(tg_set_requires_grad(l, true), TG_OK, "%s", tg_last_error());
    return l;
}

/* A NON-contiguous f64 leaf of shape [rows, cols] that requires grad: every
 * second column of a [rows, 2*cols] uniform [lo, hi) tensor (slice step 2),
 * detached. */
static inline tg_tensor *tgo_step2_leaf(int64_t rows, int64_t cols, uint64_t seed, double lo,
                                        double hi) {
    tg_tensor *base = tgo_rand(TG_F64, TG_SHAPE(rows, 2 * cols), seed, lo, hi, false);
    tg_tensor *v = tg_slice(base, 1, 0, 2 * cols, 2);
    tg_tensor *l = tg_detach(v);
    cr_assert_not_null(l, "%s", tg_last_error());
    tg_release(v);
    tg_release(base);
    cr_assert(!tg_is_contiguous(l));
    cr_assert_eq(tg_stride(l, 1), 2);
    cr_assert_eq(tg_set_requires_grad(l, true), TG_OK, "%s", tg_last_error());
    return l;
}

/* Releases every tensor given (NULL allowed), asserting each release succeeds. */
#define TGO_RELEASE(...)                                                                   \
    do {                                                                                   \
        tg_tensor *tgo_rel_[] = {__VA_ARGS__};                                             \
        for (size_t tgo_i_ = 0; tgo_i_ < sizeof tgo_rel_ / sizeof tgo_rel_[0]; tgo_i_++)   \
            cr_assert_eq(tg_release(tgo_rel_[tgo_i_]), TG_OK, "%s", tg_last_error());      \
    } while (0)

/* ---- reading and asserting ------------------------------------------------------ */

/* t's values as a malloc'ed double array (caller frees). */
static inline double *tgo_values(const tg_tensor *t) {
    int64_t n = tg_numel(t);
    cr_assert(n >= 0);
    double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    cr_assert_not_null(buf);
    cr_assert_eq(tg_copy_out(t, TG_F64, buf, (size_t)(n ? n : 1) * sizeof *buf), TG_OK, "%s",
                 tg_last_error());
    return buf;
}

/* Relative tolerance for comparing a result of dtype dt with exact values. */
static inline double tgo_rtol(tg_dtype dt) { return dt == TG_F32 ? 2e-6 : 1e-13; }

static inline bool tgo_close(double got, double want, double rtol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= rtol * (fabs(want) > 1.0 ? fabs(want) : 1.0);
}

/* Asserts t's values equal want[0..n-1] within rtol (relative, floored at 1). */
static inline void tgo_assert_close(const tg_tensor *t, const double *want, int64_t n,
                                    double rtol) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_numel(t), n, "numel %lld, expected %lld", (long long)tg_numel(t),
                 (long long)n);
    double *v = tgo_values(t);
    for (int64_t i = 0; i < n; i++) {
        if (!tgo_close(v[i], want[i], rtol)) {
            double got = v[i];
            free(v);
            cr_assert_fail("element %lld: got %.17g, expected %.17g (rtol %g)", (long long)i, got,
                           want[i], rtol);
        }
    }
    free(v);
}
#define TGO_ASSERT_VALUES(t, rtol, ...)                                                     \
    tgo_assert_close(t, (const double[]){__VA_ARGS__},                                      \
                     (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), rtol)

/* Asserts t's dtype and shape. */
static inline void tgo_assert_shape(const tg_tensor *t, tg_dtype dt, int ndim,
                                    const int64_t *shape) {
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_get_dtype(t), dt, "dtype %s, expected %s", tg_dtype_name(tg_get_dtype(t)),
                 tg_dtype_name(dt));
    cr_assert_eq(tg_ndim(t), ndim, "ndim %d, expected %d", tg_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(tg_size(t, d), shape[d], "dim %d has size %lld, expected %lld", d,
                     (long long)tg_size(t, d), (long long)shape[d]);
}
#define TGO_ASSERT_SHAPE(t, dt, shape_pair) tgo_assert_shape(t, dt, shape_pair)

/* Asserts that leaf x has an accumulated gradient equal to want[0..n-1]. */
static inline void tgo_assert_grad(const tg_tensor *x, const double *want, int64_t n,
                                   double rtol) {
    tg_tensor *g = tg_grad(x);
    cr_assert_not_null(g, "no gradient on '%s'", tg_name(x));
    cr_assert_eq(tg_get_dtype(g), tg_get_dtype(x));
    cr_assert_eq(tg_ndim(g), tg_ndim(x));
    for (int d = 0; d < tg_ndim(x); d++) cr_assert_eq(tg_size(g, d), tg_size(x, d));
    tgo_assert_close(g, want, n, rtol);
    tg_release(g);
}
#define TGO_ASSERT_GRAD(x, rtol, ...)                                                      \
    tgo_assert_grad(x, (const double[]){__VA_ARGS__},                                      \
                    (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), rtol)

/* Asserts two tensors have the same shape and values within rtol (relative,
 * floored at 1). */
static inline void tgo_assert_same(const tg_tensor *a, const tg_tensor *b, double rtol) {
    cr_assert_not_null(a, "%s", tg_last_error());
    cr_assert_not_null(b, "%s", tg_last_error());
    cr_assert_eq(tg_ndim(a), tg_ndim(b), "ndim %d vs %d", tg_ndim(a), tg_ndim(b));
    for (int d = 0; d < tg_ndim(a); d++) cr_assert_eq(tg_size(a, d), tg_size(b, d));
    double *vb = tgo_values(b);
    tgo_assert_close(a, vb, tg_numel(b), rtol);
    free(vb);
}

/* ---- snapshots: an input is unchanged after a call --------------------------- */

typedef struct tgo_snap {
    const tg_tensor *t;
    double *v;
    int64_t n;
    uint64_t version;
    bool requires_grad;
    bool leaf;
} tgo_snap;

static inline tgo_snap tgo_snapshot(const tg_tensor *t) {
    tgo_snap s = {t, tgo_values(t), tg_numel(t), tg_version(t), tg_requires_grad(t),
                  tg_is_leaf(t)};
    return s;
}

/* Asserts the tensor's values (bit for bit, NaN = NaN), version, requires_grad
 * and leaf status are as snapshotted; frees the snapshot. */
static inline void tgo_assert_unchanged(tgo_snap *s) {
    double *v = tgo_values(s->t);
    cr_assert_eq(tg_numel(s->t), s->n);
    for (int64_t i = 0; i < s->n; i++)
        cr_assert(memcmp(&v[i], &s->v[i], sizeof(double)) == 0 || (isnan(v[i]) && isnan(s->v[i])),
                  "element %lld changed: %.17g -> %.17g", (long long)i, s->v[i], v[i]);
    free(v);
    free(s->v);
    s->v = NULL;
    cr_assert_eq(tg_version(s->t), s->version, "version moved %llu -> %llu",
                 (unsigned long long)s->version, (unsigned long long)tg_version(s->t));
    cr_assert_eq(tg_requires_grad(s->t), s->requires_grad);
    cr_assert_eq(tg_is_leaf(s->t), s->leaf);
}

#endif
