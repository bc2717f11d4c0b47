/* tests/test_logprob_util.h - static helpers shared by the log-prob suites
 * (test_logprob.c, test_logprob_autograd.c): seeded targets, copies out, the
 * long-double reference, and one call running the op forward and backward.
 *
 * Everything is `static inline` so that a suite using only part of it still
 * compiles with -Wall -Werror. */
#ifndef TEST_LOGPROB_UTIL_H
#define TEST_LOGPROB_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test_util.h"

/* splitmix64: the test's own deterministic stream (targets, picks). */
static inline uint64_t lpt_mix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int64_t lpt_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* i64 targets of the given shape, uniform in [0, V). */
static inline tg_tensor *lpt_targets(int ndim, const int64_t *shape, int64_t V, uint64_t seed) {
    int64_t n = lpt_numel(ndim, shape);
    int64_t *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++) buf[i] = (int64_t)(lpt_mix(&seed) % (uint64_t)V);
    tg_tensor *t = tg_from_data(TG_I64, ndim, shape, buf);
    free(buf);
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

/* Writes element i (C order) of a CONTIGUOUS tensor through tg_data, without
 * bumping its version (test setup only, before any op saved it). */
static inline void lpt_set(tg_tensor *t, int64_t i, double v) {
    cr_assert(tg_is_contiguous(t));
    void *p = tg_data(t);
    switch (tg_get_dtype(t)) {
    case TG_F32: ((float *)p)[i] = (float)v; break;
    case TG_F64: ((double *)p)[i] = v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

/* Same for an i64 tensor, exactly (no trip through double). */
static inline void lpt_set_i64(tg_tensor *t, int64_t i, int64_t v) {
    cr_assert(tg_is_contiguous(t) && tg_get_dtype(t) == TG_I64);
    ((int64_t *)tg_data(t))[i] = v;
}

/* t's elements (C order) as a malloc'd f64 array (free it). */
static inline double *lpt_f64(const tg_tensor *t) {
    cr_assert_not_null(t, "%s", tg_last_error());
    int64_t n = tg_numel(t);
    double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    cr_assert_not_null(buf);
    cr_assert_eq(tg_copy_out(t, TG_F64, buf, (size_t)(n ? n : 1) * sizeof *buf), TG_OK, "%s",
                 tg_last_error());
    return buf;
}

/* t's elements (C order) in t's own dtype, malloc'd (free it); *bytes gets
 * the size. For bitwise comparisons. */
static inline void *lpt_raw(const tg_tensor *t, size_t *bytes) {
    cr_assert_not_null(t, "%s", tg_last_error());
    size_t n = (size_t)tg_numel(t) * tg_dtype_size(tg_get_dtype(t));
    void *buf = malloc(n ? n : 1);
    cr_assert_not_null(buf);
    cr_assert_eq(tg_copy_out(t, tg_get_dtype(t), buf, n ? n : 1), TG_OK, "%s", tg_last_error());
    *bytes = n;
    return buf;
}

/* Asserts a and b hold bitwise identical elements (same dtype and numel). */
static inline void lpt_assert_bitwise(const tg_tensor *a, const tg_tensor *b, const char *what) {
    cr_assert_eq(tg_get_dtype(a), tg_get_dtype(b), "%s: dtypes differ", what);
    cr_assert_eq(tg_numel(a), tg_numel(b), "%s: numel differ", what);
    size_t na, nb;
    void *ra = lpt_raw(a, &na), *rb = lpt_raw(b, &nb);
    int diff = memcmp(ra, rb, na);
    if (diff) {
        double *fa = lpt_f64(a), *fb = lpt_f64(b);
        int64_t i = 0, n = tg_numel(a);
        size_t es = tg_dtype_size(tg_get_dtype(a));
        while (i < n && !memcmp((char *)ra + (size_t)i * es, (char *)rb + (size_t)i * es, es)) i++;
        double x = i < n ? fa[i] : 0, y = i < n ? fb[i] : 0;
        free(fa);
        free(fb);
        free(ra);
        free(rb);
        cr_assert_fail("%s: not bitwise identical, first difference at element %lld: %.17g vs "
                       "%.17g", what, (long long)i, x, y);
    }
    free(ra);
    free(rb);
}

/* max |a - b| over all elements, both converted to f64; asserts equal numel. */
static inline double lpt_max_abs_diff(const tg_tensor *a, const tg_tensor *b) {
    cr_assert_eq(tg_numel(a), tg_numel(b));
    double *fa = lpt_f64(a), *fb = lpt_f64(b), m = 0.0;
    for (int64_t i = 0; i < tg_numel(a); i++) {
        double d = fabs(fa[i] - fb[i]);
        if (d > m || d != d) m = d;
    }
    free(fa);
    free(fb);
    return m;
}

/* ---- running the op ----------------------------------------------------------- */

typedef struct lpt_out {
    tg_tensor *lp, *h, *grad; /* grad: leaf's .grad after backward (NULL if none) */
} lpt_out;

/* With a scope open (it owns everything returned): runs the op on logits,
 * then, if leaf is non-NULL, backward of
 *   loss = sum(lp * g_lp) + sum(h * g_h)
 * (the h term only when h exists and requires grad; g_lp/g_h NULL = 1) and
 * reads leaf's .grad (its previous gradient is dropped first). */
static inline lpt_out lpt_run(tg_tensor *logits, tg_tensor *leaf, tg_tensor *targets,
                              const tg_logprob_opts *o, tg_tensor *g_lp, tg_tensor *g_h) {
    lpt_out r = {NULL, NULL, NULL};
    bool want_h = o ? o->want_entropy : true;
    cr_assert_eq(tg_logprob_entropy(logits, targets, o, &r.lp, want_h ? &r.h : NULL), TG_OK,
                 "%s", tg_last_error());
    cr_assert_not_null(r.lp);
    if (want_h) cr_assert_not_null(r.h);
    if (!leaf) return r;
    tg_zero_grad(leaf);
    tg_tensor *loss = tg_sum(g_lp ? tg_mul(r.lp, g_lp) : r.lp);
    if (r.h && tg_requires_grad(r.h)) loss = tg_add(loss, tg_sum(g_h ? tg_mul(r.h, g_h) : r.h));
    cr_assert_not_null(loss, "%s", tg_last_error());
    cr_assert_eq(tg_backward(loss, NULL, false), TG_OK, "%s", tg_last_error());
    r.grad = tg_grad(leaf);
    cr_assert_not_null(r.grad, "no gradient reached the logits");
    return r;
}

/* ---- the long-double reference ------------------------------------------------- */

typedef struct lpt_err {
    double lp, h, grad; /* largest error seen (relative-with-floor for lp/h: the
                           ratio err / (rel*|ref| + abs); absolute for grad) */
    double lp_abs, h_abs;
} lpt_err;

/* Reference for one row z[0..V-1] (stride 1, f64 copies of the logits; -inf
 * allowed), two passes in long double with x = z / T:
 *   m = max x, s = sum exp(x - m), lse = m + log s, H = lse - sum p x,
 *   dz = (g_lp * (onehot(y) - p) - g_h * p * (x - lse + H)) / T. */
static inline void lpt_ref_row(const double *z, int64_t V, int64_t y, long double T,
                               long double glp, long double gh, long double *lp, long double *H,
                               double *dz) {
    long double m = -INFINITY;
    for (int64_t j = 0; j < V; j++) {
        long double x = (long double)z[j] / T;
        if (x > m) m = x;
    }
    long double s = 0.0L, sd = 0.0L;
    for (int64_t j = 0; j < V; j++) {
        if (z[j] == -INFINITY) continue;
        long double d = (long double)z[j] / T - m, e = expl(d);
        s += e;
        sd += e * d;
    }
    long double lse = m + logl(s);
    *H = logl(s) - sd / s;
    *lp = (long double)z[y] / T - lse;
    if (!dz) return;
    for (int64_t j = 0; j < V; j++) {
        if (z[j] == -INFINITY) {
            dz[j] = 0.0;
            continue;
        }
        long double x = (long double)z[j] / T, p = expl(x - lse);
        long double d = glp * ((j == y ? 1.0L : 0.0L) - p) - gh * p * (x - lse + *H);
        dz[j] = (double)(d / T);
    }
}

/* Checks lp and h (h may be NULL) and grad (may be NULL) of logits z
 * (..., V) with targets y against the reference; ignored rows must give 0
 * and a zero gradient row. g_lp / g_h: the upstream gradients used (NULL = 0
 * for the reference gradient). Tolerances: |got - ref| <= rel*|ref| + abs for
 * lp and h, <= gabs for the gradient. Fills *e with what it measured. */
static inline void lpt_check_reference(const tg_tensor *z, const tg_tensor *y, double T,
                                       int64_t ignore, const tg_tensor *g_lp,
                                       const tg_tensor *g_h, const tg_tensor *lp,
                                       const tg_tensor *h, const tg_tensor *grad, double rel,
                                       double abs_tol, double gabs, const char *what,
                                       lpt_err *e) {
    const int64_t V = tg_size(z, -1), N = tg_numel(y);
    memset(e, 0, sizeof *e);
    double *zz = lpt_f64(z), *lpv = lpt_f64(lp), *hv = h ? lpt_f64(h) : NULL;
    double *gv = grad ? lpt_f64(grad) : NULL;
    double *gl = g_lp ? lpt_f64(g_lp) : NULL, *gh = g_h ? lpt_f64(g_h) : NULL;
    double *yy = lpt_f64(y);
    double *dz = malloc((size_t)V * sizeof *dz);
    cr_assert_not_null(dz);
    char msg[512] = "";
    for (int64_t i = 0; i < N && !msg[0]; i++) {
        const int64_t yi = (int64_t)yy[i];
        long double rlp = 0.0L, rh = 0.0L;
        if (yi == ignore) {
            for (int64_t j = 0; j < V; j++) dz[j] = 0.0;
        } else {
            lpt_ref_row(zz + i * V, V, yi, T, gl ? gl[i] : 0.0, gh ? gh[i] : 0.0, &rlp, &rh,
                        gv ? dz : NULL);
        }
        double elp = fabs(lpv[i] - (double)rlp), tol = rel * fabsl(rlp) + abs_tol;
        if (elp / tol > e->lp || elp != elp) e->lp = elp / tol;
        if (elp > e->lp_abs) e->lp_abs = elp;
        if (!(elp <= tol))
            snprintf(msg, sizeof msg, "%s: row %lld logprob %.17g, reference %.17Lg (error %.3g > "
                     "%.3g)", what, (long long)i, lpv[i], rlp, elp, tol);
        if (hv && !msg[0]) {
            double eh = fabs(hv[i] - (double)rh), th = rel * fabsl(rh) + abs_tol;
            if (eh / th > e->h || eh != eh) e->h = eh / th;
            if (eh > e->h_abs) e->h_abs = eh;
            if (!(eh <= th))
                snprintf(msg, sizeof msg, "%s: row %lld entropy %.17g, reference %.17Lg (error "
                         "%.3g > %.3g)", what, (long long)i, hv[i], rh, eh, th);
        }
        for (int64_t j = 0; gv && j < V && !msg[0]; j++) {
            double eg = fabs(gv[i * V + j] - dz[j]);
            if (eg > e->grad || eg != eg) e->grad = eg;
            if (!(eg <= gabs))
                snprintf(msg, sizeof msg, "%s: row %lld column %lld gradient %.17g, reference "
                         "%.17g (error %.3g > %.3g)", what, (long long)i, (long long)j,
                         gv[i * V + j], dz[j], eg, gabs);
        }
    }
    free(zz);
    free(lpv);
    free(hv);
    free(gv);
    free(gl);
    free(gh);
    free(yy);
    free(dz);
    if (msg[0]) cr_assert_fail("%s", msg);
}

#endif
