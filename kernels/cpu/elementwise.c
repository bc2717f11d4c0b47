/* kernels/cpu/elementwise.c - CPU elementwise kernels: unary, binary,
 * ternary (gradient helpers), f32 and f64; where (any dtype); the exact ops
 * (tests with bool results on any dtype, i64 arithmetic); any input strides.
 *
 * Contract (kernels/kernel.h): inputs are described over out's shape (stride
 * 0 where broadcast); out may be strided (rows are then written through a
 * small contiguous buffer). f32 is
 * computed in f32. The iteration shape is simplified first (size-1 dims
 * dropped, dims merged where every operand allows), then split into equal
 * linear ranges, one per thread; each range starts from its multi-index
 * (computed once) and walks rows of the innermost dim with a row kernel that
 * has tight loops for the stride patterns 1/1, 1/0, 0/1. When an input is
 * read transposed (innermost stride larger than the next one), the last two
 * dims are walked in square tiles instead, for cache reuse.
 */
#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu.h"

#define EW_MAXOP 4
#define EW_TILE 32 /* tile side for inputs read transposed */

/* ---- the strided iterator -------------------------------------------------- */

typedef struct ew_iter {
    int ndim, nop;                       /* ndim >= 1 after simplification */
    int64_t shape[TG__K_MAX_DIMS];
    int64_t st[EW_MAXOP][TG__K_MAX_DIMS];   /* element strides, operand 0 = out */
    char *base[EW_MAXOP];                /* element 0 of each operand */
    size_t esz[EW_MAXOP];                /* element sizes */
    int64_t numel;
} ew_iter;

/* p[k] points at the current element of operand k; s[k] is its stride along
 * the row (elements). out (p[0]) is contiguous: st[0] is 1 (or n is 1). */
typedef void (*ew_row_fn)(int64_t n, char *const *p, const int64_t *st, const double *prm);

/* Builds the iterator over out's shape (ops[0] = out). Inputs are described
 * over out's shape (kernels/kernel.h); data NULL means a constant zero of
 * out's dtype. */
static void ew_init(ew_iter *it, int nop, const tg__arr *const *ops) {
    static const double zero64 = 0.0;
    static const float zero32 = 0.0f;
    const tg__arr *out = ops[0];
    int nd = out->ndim;
    it->nop = nop;
    it->numel = tg__k_numel(nd, out->shape);
    for (int k = 0; k < nop; k++) {
        const tg__arr *t = ops[k];
        if (t->data) {
            it->base[k] = (char *)t->data;
            it->esz[k] = tg__k_dtype_size(t->dtype);
        } else {
            it->base[k] = out->dtype == TG_F32 ? (char *)&zero32 : (char *)&zero64;
            it->esz[k] = tg__k_dtype_size(out->dtype);
        }
    }
    /* drop size-1 dims, merge dims that are contiguous for every operand */
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (out->shape[d] == 1) continue;
        bool merge = m > 0;
        for (int k = 0; merge && k < nop; k++) {
            int64_t sk = ops[k]->data ? ops[k]->strides[d] : 0;
            if (it->st[k][m - 1] != sk * out->shape[d]) merge = false;
        }
        if (merge) it->shape[m - 1] *= out->shape[d];
        else it->shape[m] = out->shape[d];
        for (int k = 0; k < nop; k++) it->st[k][merge ? m - 1 : m] = ops[k]->data ? ops[k]->strides[d] : 0;
        if (!merge) m++;
    }
    if (m == 0) {
        it->shape[0] = 1;
        for (int k = 0; k < nop; k++) it->st[k][0] = 0;
        m = 1;
    }
    it->ndim = m;
}

/* fn over n elements whose output is strided (s[0] != 1): through a
 * contiguous buffer, in blocks. */
static void ew_row_strided(ew_row_fn fn, int nop, const size_t *esz, int64_t n, char *const *p,
                           const int64_t *s, const double *prm) {
    enum { BLK = 256 };
    double buf[BLK]; /* 8-byte aligned, holds BLK elements of any dtype */
    char *q[EW_MAXOP];
    int64_t s1[EW_MAXOP];
    for (int k = 0; k < nop; k++) {
        q[k] = p[k];
        s1[k] = s[k];
    }
    s1[0] = 1;
    for (int64_t done = 0; done < n; done += BLK) {
        int64_t m = n - done < BLK ? n - done : BLK;
        char *o = q[0];
        q[0] = (char *)buf;
        fn(m, q, s1, prm);
        for (int64_t i = 0; i < m; i++)
            memcpy(o + (size_t)(i * s[0]) * esz[0], (char *)buf + (size_t)i * esz[0], esz[0]);
        q[0] = o + (size_t)(m * s[0]) * esz[0];
        for (int k = 1; k < nop; k++) q[k] += (size_t)(m * s[k]) * esz[k];
    }
}

static inline void ew_row(const ew_iter *it, ew_row_fn fn, int64_t n, char *const *p,
                          const int64_t *s, const double *prm) {
    if (s[0] == 1 || n == 1) fn(n, p, s, prm);
    else ew_row_strided(fn, it->nop, it->esz, n, p, s, prm);
}

/* Runs fn over the linear range [start, end) of the iteration space. */
static void ew_range(const ew_iter *it, ew_row_fn fn, const double *prm, int64_t start,
                     int64_t end) {
    int nd = it->ndim, nop = it->nop, last = nd - 1;
    int64_t idx[TG__K_MAX_DIMS], off[EW_MAXOP] = {0}, s[EW_MAXOP];
    char *p[EW_MAXOP];
    int64_t lin = start;
    for (int d = last; d >= 0; d--) {
        idx[d] = lin % it->shape[d];
        lin /= it->shape[d];
        for (int k = 0; k < nop; k++) off[k] += idx[d] * it->st[k][d];
    }
    for (int k = 0; k < nop; k++) s[k] = it->st[k][last];
    int64_t pos = start;
    while (pos < end) {
        int64_t n = it->shape[last] - idx[last];
        if (n > end - pos) n = end - pos;
        for (int k = 0; k < nop; k++) p[k] = it->base[k] + (size_t)off[k] * it->esz[k];
        ew_row(it, fn, n, p, s, prm);
        pos += n;
        if (pos >= end) break;
        /* the row is finished: carry into the outer dims */
        for (int k = 0; k < nop; k++) off[k] += (n - it->shape[last]) * s[k];
        idx[last] = 0;
        for (int d = last - 1; d >= 0; d--) {
            idx[d]++;
            for (int k = 0; k < nop; k++) off[k] += it->st[k][d];
            if (idx[d] < it->shape[d]) break;
            for (int k = 0; k < nop; k++) off[k] -= it->shape[d] * it->st[k][d];
            idx[d] = 0;
        }
    }
}

/* True when some input reads the last two dims "transposed" (a larger
 * stride along the innermost dim than along the one before it). */
static bool ew_transposed(const ew_iter *it) {
    int nd = it->ndim;
    if (nd < 2) return false;
    for (int k = 1; k < it->nop; k++) {
        int64_t si = it->st[k][nd - 1], so = it->st[k][nd - 2];
        if (si < 0) si = -si;
        if (so < 0) so = -so;
        if (si > 1 && so < si) return true;
    }
    return false;
}

/* Walks the last two dims in EW_TILE x EW_TILE tiles so that the cache lines
 * a transposed input brings in are reused by the next rows of the tile. */
static void ew_run_tiled(const ew_iter *it, ew_row_fn fn, const double *prm) {
    int nd = it->ndim, nop = it->nop;
    int64_t nr = it->shape[nd - 2], nc = it->shape[nd - 1];
    int64_t tr = (nr + EW_TILE - 1) / EW_TILE, tc = (nc + EW_TILE - 1) / EW_TILE;
    int64_t ntiles = it->numel / (nr * nc) * tr * tc;
    int64_t s[EW_MAXOP];
    for (int k = 0; k < nop; k++) s[k] = it->st[k][nd - 1];
#pragma omp parallel for schedule(static) if (it->numel >= TG__PAR_MIN)
    for (int64_t t = 0; t < ntiles; t++) {
        int64_t o = t / (tr * tc), i0 = (t / tc) % tr * EW_TILE, j0 = t % tc * EW_TILE;
        int64_t ni = nr - i0 < EW_TILE ? nr - i0 : EW_TILE;
        int64_t nj = nc - j0 < EW_TILE ? nc - j0 : EW_TILE;
        int64_t off[EW_MAXOP];
        char *p[EW_MAXOP];
        for (int k = 0; k < nop; k++)
            off[k] = tg__k_offset_of(o, nd - 2, it->shape, it->st[k]) + i0 * it->st[k][nd - 2] +
                     j0 * s[k];
        for (int64_t i = 0; i < ni; i++) {
            for (int k = 0; k < nop; k++)
                p[k] = it->base[k] + (size_t)(off[k] + i * it->st[k][nd - 2]) * it->esz[k];
            ew_row(it, fn, nj, p, s, prm);
        }
    }
}

static void ew_run(const ew_iter *it, ew_row_fn fn, const double *prm) {
    int64_t total = it->numel;
    if (total <= 0) return;
    if (total >= EW_TILE * EW_TILE && ew_transposed(it)) {
        ew_run_tiled(it, fn, prm);
        return;
    }
    if (total < TG__PAR_MIN) {
        ew_range(it, fn, prm, 0, total);
        return;
    }
#pragma omp parallel
    {
        int nt = 1, tid = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        tid = omp_get_thread_num();
#endif
        int64_t chunk = (total + nt - 1) / nt;
        int64_t a = (int64_t)tid * chunk, b = a + chunk;
        if (b > total) b = total;
        if (a < b) ew_range(it, fn, prm, a, b);
    }
}

/* ---- unary row kernels ------------------------------------------------------- */

#define UN_ROW(NAME, TY, EXPR)                                                   \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const double *prm) { \
        typedef TY T;                                                           \
        T *o = (T *)p[0];                                                         \
        const TY *xp = (const TY *)p[1];                                          \
        const int64_t sx = st[1];                                                \
        const TY p0 = (TY)prm[0], p1 = (TY)prm[1];                                 \
        (void)p0;                                                               \
        (void)p1;                                                               \
        if (sx == 1) {                                                          \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY x = xp[i];                                              \
                o[i] = (EXPR);                                                  \
            }                                                                   \
        } else if (sx == 0) {                                                   \
            const TY x = xp[0];                                                  \
            const TY v = (EXPR);                                                 \
            for (int64_t i = 0; i < n; i++) o[i] = v;                           \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY x = xp[i * sx];                                         \
                o[i] = (EXPR);                                                  \
            }                                                                   \
        }                                                                       \
    }

/* one row kernel per op and dtype, from the formulas of kernels/kernel.h */
#define UN_ROWS(NAME, FWD, BWD, SAVES)                                          \
    UN_ROW(un_##NAME##_f32, float, FWD)                                         \
    UN_ROW(un_##NAME##_f64, double, FWD)
TG__UNARY_OPS(UN_ROWS)

#define UN_ENTRY(NAME, ...) [TG__UN_##NAME] = {un_##NAME##_f32, un_##NAME##_f64},
static const ew_row_fn un_rows[TG__UN_NOP][2] = {TG__UNARY_OPS(UN_ENTRY)};

tg_status tg__cpu_unary(int op, const tg__arr *out, const tg__arr *x, double p0, double p1) {
    ew_iter it;
    const tg__arr *ops[2] = {out, x};
    double prm[2] = {p0, p1};
    ew_init(&it, 2, ops);
    ew_run(&it, un_rows[op][out->dtype == TG_F64], prm);
    return TG_OK;
}

/* ---- binary row kernels -------------------------------------------------------- */

#define BIN_ROW_AS(NAME, TY, X, Y, EXPR)                                                  \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const double *prm) { \
        typedef TY T;                                                           \
        T *o = (T *)p[0];                                                         \
        const TY *ap = (const TY *)p[1], *bp = (const TY *)p[2];                   \
        const int64_t sa = st[1], sb = st[2];                                     \
        const TY p0 = (TY)prm[0], p1 = (TY)prm[1];                                 \
        (void)p0;                                                               \
        (void)p1;                                                               \
        if (sa == 1 && sb == 1) {                                               \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY X = ap[i], Y = bp[i];                                   \
                (void)X, (void)Y, o[i] = (EXPR);                                                  \
            }                                                                   \
        } else if (sa == 1 && sb == 0) {                                        \
            const TY Y = bp[0];                                                  \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY X = ap[i];                                              \
                (void)X, (void)Y, o[i] = (EXPR);                                                  \
            }                                                                   \
        } else if (sa == 0 && sb == 1) {                                        \
            const TY X = ap[0];                                                  \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY Y = bp[i];                                              \
                (void)X, (void)Y, o[i] = (EXPR);                                                  \
            }                                                                   \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY X = ap[i * sa], Y = bp[i * sb];                         \
                (void)X, (void)Y, o[i] = (EXPR);                                                  \
            }                                                                   \
        }                                                                       \
    }

#define BIN_ROW(NAME, T, EXPR) BIN_ROW_AS(NAME, T, x, y, EXPR)

#define BIN_ROWS(NAME, FWD)                                                     \
    BIN_ROW(bin_##NAME##_f32, float, FWD)                                       \
    BIN_ROW(bin_##NAME##_f64, double, FWD)
TG__BINARY_OPS(BIN_ROWS)

#define BIN_ENTRY(NAME, ...) [TG__BIN_##NAME] = {bin_##NAME##_f32, bin_##NAME##_f64},
static const ew_row_fn bin_rows[TG__BIN_NOP][2] = {TG__BINARY_OPS(BIN_ENTRY)};

tg_status tg__cpu_binary(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b,
                         double p0, double p1) {
    ew_iter it;
    const tg__arr *ops[3] = {out, a, b};
    double prm[2] = {p0, p1};
    ew_init(&it, 3, ops);
    ew_run(&it, bin_rows[op][out->dtype == TG_F64], prm);
    return TG_OK;
}

/* ---- unary gradients: out = backward(g, s) -------------------------------------- */

#define UG_ROWS(NAME, FWD, BWD, SAVES)                                          \
    BIN_ROW_AS(ug_##NAME##_f32, float, g, s, BWD)                               \
    BIN_ROW_AS(ug_##NAME##_f64, double, g, s, BWD)
TG__UNARY_OPS(UG_ROWS)

#define UG_ENTRY(NAME, ...) [TG__UN_##NAME] = {ug_##NAME##_f32, ug_##NAME##_f64},
static const ew_row_fn ug_rows[TG__UN_NOP][2] = {TG__UNARY_OPS(UG_ENTRY)};

tg_status tg__cpu_unary_grad(int op, const tg__arr *out, const tg__arr *g, const tg__arr *s,
                             double p0, double p1) {
    ew_iter it;
    const tg__arr *ops[3] = {out, g, s};
    double prm[2] = {p0, p1};
    ew_init(&it, 3, ops);
    ew_run(&it, ug_rows[op][out->dtype == TG_F64], prm);
    return TG_OK;
}

/* ---- ternary row kernels (gradient helpers) ---------------------------------- */

#define TER_ROW(NAME, TY, EXPR)                                                  \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const double *prm) { \
        typedef TY T;                                                           \
        T *o = (T *)p[0];                                                         \
        const TY *gp = (const TY *)p[1], *ap = (const TY *)p[2], *bp = (const TY *)p[3]; \
        const int64_t sg = st[1], sa = st[2], sb = st[3];                          \
        (void)prm;                                                              \
        if (sg == 1 && sa == 1 && sb == 1) {                                    \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY g = gp[i], x = ap[i], y = bp[i];                        \
                o[i] = (EXPR);                                                  \
            }                                                                   \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY g = gp[i * sg], x = ap[i * sa], y = bp[i * sb];         \
                o[i] = (EXPR);                                                  \
            }                                                                   \
        }                                                                       \
    }

#define TER_ROWS(NAME, F)                                                       \
    TER_ROW(ter_##NAME##_f32, float, F)                                         \
    TER_ROW(ter_##NAME##_f64, double, F)
TG__TERNARY_OPS(TER_ROWS)

#define TER_ENTRY(NAME, ...) [TG__TER_##NAME] = {ter_##NAME##_f32, ter_##NAME##_f64},
static const ew_row_fn ter_rows[TG__TER_NOP][2] = {TG__TERNARY_OPS(TER_ENTRY)};

tg_status tg__cpu_ternary(int op, const tg__arr *out, const tg__arr *g, const tg__arr *a,
                          const tg__arr *b) {
    ew_iter it;
    const tg__arr *ops[4] = {out, g, a, b};
    ew_init(&it, 4, ops);
    ew_run(&it, ter_rows[op][out->dtype == TG_F64], NULL);
    return TG_OK;
}

/* ---- where -------------------------------------------------------------------------- */

#define WHERE_ROW(NAME, T, C)                                                   \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const double *prm) { \
        T *o = (T *)p[0];                                                       \
        const C *cp = (const C *)p[1];                                          \
        const T *ap = (const T *)p[2], *bp = (const T *)p[3];                   \
        const int64_t sc = st[1], sa = st[2], sb = st[3];                          \
        (void)prm;                                                              \
        if (sc == 1 && sa == 1 && sb == 1) {                                    \
            for (int64_t i = 0; i < n; i++) o[i] = cp[i] != 0 ? ap[i] : bp[i];  \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++)                                     \
                o[i] = cp[i * sc] != 0 ? ap[i * sa] : bp[i * sb];               \
        }                                                                       \
    }

/* every output dtype x every condition dtype (the table's order: tg_dtype) */
#define WHERE_ROWS(T, TN)                                                       \
    WHERE_ROW(where_##TN##_f32, T, float)                                       \
    WHERE_ROW(where_##TN##_f64, T, double)                                      \
    WHERE_ROW(where_##TN##_i64, T, int64_t)                                     \
    WHERE_ROW(where_##TN##_bool, T, uint8_t)
WHERE_ROWS(float, f32)
WHERE_ROWS(double, f64)
WHERE_ROWS(int64_t, i64)
WHERE_ROWS(uint8_t, bool)
#define WHERE_ENTRY(TN) {where_##TN##_f32, where_##TN##_f64, where_##TN##_i64, where_##TN##_bool}

tg_status tg__cpu_where(const tg__arr *out, const tg__arr *c, const tg__arr *a,
                        const tg__arr *b) {
    static const ew_row_fn rows[4][4] = {
        WHERE_ENTRY(f32), WHERE_ENTRY(f64), WHERE_ENTRY(i64), WHERE_ENTRY(bool),
    };
    ew_iter it;
    const tg__arr *ops[4] = {out, c, a, b};
    ew_init(&it, 4, ops);
    ew_run(&it, rows[out->dtype][c->dtype], NULL);
    return TG_OK;
}

/* ---- tests (bool results) and integer arithmetic ----------------------------------- */

#define TEST_ROW(NAME, TY, EXPR)                                                \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const double *prm) { \
        uint8_t *o = (uint8_t *)p[0];                                           \
        const TY *ap = (const TY *)p[1], *bp = (const TY *)p[2];                 \
        const int64_t sa = st[1], sb = st[2];                                    \
        (void)prm;                                                              \
        if (sa == 1 && sb == 1) {                                               \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY x = ap[i], y = bp[i];                                  \
                (void)x, (void)y, o[i] = (uint8_t)(EXPR);                       \
            }                                                                   \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                const TY x = ap[i * sa], y = bp[i * sb];                        \
                (void)x, (void)y, o[i] = (uint8_t)(EXPR);                       \
            }                                                                   \
        }                                                                       \
    }

#define TEST_ROWS(NAME, FL, IN)                                                 \
    TEST_ROW(test_##NAME##_f32, float, FL)                                      \
    TEST_ROW(test_##NAME##_f64, double, FL)                                     \
    TEST_ROW(test_##NAME##_i64, int64_t, IN)                                    \
    TEST_ROW(test_##NAME##_bool, uint8_t, IN)
TG__TEST_OPS(TEST_ROWS)

#define TEST_ENTRY(NAME, ...)                                                   \
    [TG__TEST_##NAME] = {test_##NAME##_f32, test_##NAME##_f64, test_##NAME##_i64, test_##NAME##_bool},
static const ew_row_fn test_rows[TG__TEST_NOP][4] = {TG__TEST_OPS(TEST_ENTRY)};

tg_status tg__cpu_test(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b) {
    ew_iter it;
    const tg__arr *ops[3] = {out, a, b};
    ew_init(&it, 3, ops);
    ew_run(&it, test_rows[op][a->dtype], NULL);
    return TG_OK;
}

/* prm: clamp's bounds, passed as the int64_t bit patterns of two doubles */
#define INT_ROW(NAME, EXPR)                                                     \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const double *prm) { \
        int64_t *o = (int64_t *)p[0];                                           \
        const int64_t *ap = (const int64_t *)p[1], *bp = (const int64_t *)p[2]; \
        const int64_t sa = st[1], sb = st[2];                                    \
        int64_t p0, p1;                                                         \
        memcpy(&p0, &prm[0], sizeof p0);                                        \
        memcpy(&p1, &prm[1], sizeof p1);                                        \
        (void)p0, (void)p1;                                                     \
        for (int64_t i = 0; i < n; i++) {                                       \
            const int64_t x = ap[i * sa], y = bp[i * sb];                       \
            (void)x, (void)y, o[i] = (EXPR);                                    \
        }                                                                       \
    }
#define INT_ROWS(NAME, F) INT_ROW(int_##NAME, F)
TG__INT_OPS(INT_ROWS)
#define INT_ENTRY(NAME, ...) [TG__INT_##NAME] = int_##NAME,
static const ew_row_fn int_rows[TG__INT_NOP] = {TG__INT_OPS(INT_ENTRY)};

tg_status tg__cpu_int_op(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b,
                         int64_t p0, int64_t p1) {
    ew_iter it;
    const tg__arr *ops[3] = {out, a, b};
    double prm[2];
    memcpy(&prm[0], &p0, sizeof p0);
    memcpy(&prm[1], &p1, sizeof p1);
    ew_init(&it, 3, ops);
    ew_run(&it, int_rows[op], prm);
    return TG_OK;
}
