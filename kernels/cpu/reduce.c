/* kernels/cpu/reduce.c - CPU sum over any set of dims (sum, mean, sum_dim,
 * sum_to and the bias-gradient pattern), f32/f64, any strides, double
 * accumulation.
 *
 * Contract (kernels/kernel.h): out is contiguous over the kept dims of x.
 * The dims of x are simplified first (size-1 dims dropped; neighbouring dims
 * of the same kind - both kept or both reduced - merged when their strides
 * allow). Then:
 *  - "column" strategy, when some kept dim is read with a smaller stride than
 *    the innermost reduced dim (sum over leading dims, e.g. a bias gradient;
 *    sum over the last dim of a transposed view): a tile of up to COL_TILE
 *    outputs along that kept dim is accumulated for every reduced position
 *    (unit-stride reads when possible), in blocks of COL_BLOCK positions
 *    added into a running total;
 *  - "row" strategy otherwise (sum over the last dim, sum of everything):
 *    each output sums rows of the innermost reduced dim pairwise; outputs are
 *    split over threads, or, when there are few outputs, the reduced range of
 *    each output is cut into fixed chunks whose partial sums are added in
 *    order.
 * Chunk counts depend only on the shapes, never on the thread count, so the
 * result is deterministic.
 */
#include <string.h>

#include "cpu.h"

#define PW_BASE 128      /* pairwise summation: plain loop below this length */
#define ROW_MAX_CHUNKS 64
#define ROW_CHUNK_MIN 4096
#define COL_TILE 64
#define COL_BLOCK 64
#define COL_MAX_PARTIAL 4096 /* doubles of partial sums kept on the stack */

typedef struct rdims {
    int n;                        /* >= 1 */
    int64_t shape[TG__K_MAX_DIMS];
    int64_t st[TG__K_MAX_DIMS];      /* element strides in x */
    int64_t ost[TG__K_MAX_DIMS];     /* kept dims: element strides in out */
    int64_t numel;
} rdims;

/* ---- pairwise row sums ------------------------------------------------------ */

#define PW_SUM(NAME, T)                                                         \
    static double NAME(const T *x, int64_t n, int64_t s) {                      \
        if (n > PW_BASE) {                                                      \
            int64_t h = n / 2;                                                  \
            return NAME(x, h, s) + NAME(x + h * s, n - h, s);                   \
        }                                                                       \
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;                          \
        int64_t i = 0;                                                          \
        if (s == 1) {                                                           \
            for (; i + 4 <= n; i += 4) {                                        \
                a0 += (double)x[i];                                             \
                a1 += (double)x[i + 1];                                         \
                a2 += (double)x[i + 2];                                         \
                a3 += (double)x[i + 3];                                         \
            }                                                                   \
        } else {                                                                \
            for (; i + 4 <= n; i += 4) {                                        \
                a0 += (double)x[i * s];                                         \
                a1 += (double)x[(i + 1) * s];                                   \
                a2 += (double)x[(i + 2) * s];                                   \
                a3 += (double)x[(i + 3) * s];                                   \
            }                                                                   \
        }                                                                       \
        for (; i < n; i++) a0 += (double)x[i * s];                              \
        return (a0 + a1) + (a2 + a3);                                           \
    }

PW_SUM(pw_f32, float)
PW_SUM(pw_f64, double)

static double row_sum(const char *p, int dt, int64_t n, int64_t s) {
    if (s == 0) return n * (dt == TG_F64 ? *(const double *)p : (double)*(const float *)p);
    return dt == TG_F64 ? pw_f64((const double *)p, n, s) : pw_f32((const float *)p, n, s);
}

/* Sum of the reduced positions [start, end) (C order over R) starting from
 * element offset base of x. Rows of R's innermost dim are summed pairwise;
 * the row sums go into a block total flushed every COL_BLOCK rows. */
static double red_range(const char *xb, int dt, int64_t base, const rdims *R,
                        int64_t start, int64_t end) {
    size_t esz = tg__k_dtype_size(dt);
    int last = R->n - 1;
    int64_t idx[TG__K_MAX_DIMS], off = base, lin = start;
    for (int d = last; d >= 0; d--) {
        idx[d] = lin % R->shape[d];
        lin /= R->shape[d];
        off += idx[d] * R->st[d];
    }
    double tot = 0.0, blk = 0.0;
    int nblk = 0;
    int64_t pos = start;
    while (pos < end) {
        int64_t n = R->shape[last] - idx[last];
        if (n > end - pos) n = end - pos;
        blk += row_sum(xb + off * (int64_t)esz, dt, n, R->st[last]);
        if (++nblk == COL_BLOCK) {
            tot += blk;
            blk = 0.0;
            nblk = 0;
        }
        pos += n;
        if (pos >= end) break;
        off += (n - R->shape[last]) * R->st[last];
        idx[last] = 0;
        for (int d = last - 1; d >= 0; d--) {
            idx[d]++;
            off += R->st[d];
            if (idx[d] < R->shape[d]) break;
            off -= R->shape[d] * R->st[d];
            idx[d] = 0;
        }
    }
    return tot + blk;
}

static inline int64_t absi(int64_t v) { return v < 0 ? -v : v; }

static inline void store(const tg__arr *out, int64_t j, double v) {
    if (out->dtype == TG_F64) ((double *)out->data)[j] = v;
    else ((float *)out->data)[j] = (float)v;
}

/* ---- row strategy ------------------------------------------------------------- */

static void reduce_rows(const tg__arr *out, const char *xb, int dt, const rdims *K,
                        const rdims *R, double scale) {
    int64_t nout = K->numel, rtot = R->numel;
    int64_t total = nout * rtot;
    if (total < TG__PAR_MIN) {
        for (int64_t j = 0; j < nout; j++) {
            int64_t base = tg__k_offset_of(j, K->n, K->shape, K->st);
            store(out, j, scale * red_range(xb, dt, base, R, 0, rtot));
        }
        return;
    }
    int64_t nch = (rtot + ROW_CHUNK_MIN - 1) / ROW_CHUNK_MIN;
    if (nch > ROW_MAX_CHUNKS) nch = ROW_MAX_CHUNKS;
    if (nout >= ROW_MAX_CHUNKS || nch <= 1) {
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < nout; j++) {
            int64_t base = tg__k_offset_of(j, K->n, K->shape, K->st);
            store(out, j, scale * red_range(xb, dt, base, R, 0, rtot));
        }
        return;
    }
    /* few outputs, long reductions: fixed chunks per output, added in order */
    double part[ROW_MAX_CHUNKS * ROW_MAX_CHUNKS]; /* (nout, nch) */
    int64_t cs = (rtot + nch - 1) / nch;
    int64_t nwork = nout * nch;
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < nwork; w++) {
        int64_t j = w / nch, c = w % nch;
        int64_t a = c * cs, b = a + cs < rtot ? a + cs : rtot;
        int64_t base = tg__k_offset_of(j, K->n, K->shape, K->st);
        part[w] = a < b ? red_range(xb, dt, base, R, a, b) : 0.0;
    }
    for (int64_t j = 0; j < nout; j++) {
        double acc = 0.0;
        for (int64_t c = 0; c < nch; c++) acc += part[j * nch + c];
        store(out, j, scale * acc);
    }
}

/* ---- column strategy ------------------------------------------------------------- */

#define COL_ACC(T)                                                              \
    do {                                                                        \
        const T *xp = (const T *)xb + off;                                      \
        if (sk == 1)                                                            \
            for (int64_t l = 0; l < tl; l++) blk[l] += (double)xp[l];           \
        else                                                                    \
            for (int64_t l = 0; l < tl; l++) blk[l] += (double)xp[l * sk];      \
    } while (0)

/* Accumulates into tot[0..tl) the tile of tl elements (stride sk) at element
 * offset base, for the reduced positions [start, end) of R. */
static void col_tile(const char *xb, int dt, int64_t base, int64_t tl, int64_t sk,
                     const rdims *R, int64_t start, int64_t end, double *tot) {
    double blk[COL_TILE];
    int nblk = 0;
    for (int64_t l = 0; l < tl; l++) tot[l] = blk[l] = 0.0;
    int last = R->n - 1;
    int64_t idx[TG__K_MAX_DIMS], off = base, lin = start;
    for (int d = last; d >= 0; d--) {
        idx[d] = lin % R->shape[d];
        lin /= R->shape[d];
        off += idx[d] * R->st[d];
    }
    for (int64_t pos = start; pos < end; pos++) {
        if (dt == TG_F64) COL_ACC(double);
        else COL_ACC(float);
        if (++nblk == COL_BLOCK) {
            for (int64_t l = 0; l < tl; l++) {
                tot[l] += blk[l];
                blk[l] = 0.0;
            }
            nblk = 0;
        }
        /* next reduced position */
        for (int d = last; d >= 0; d--) {
            idx[d]++;
            off += R->st[d];
            if (idx[d] < R->shape[d]) break;
            off -= R->shape[d] * R->st[d];
            idx[d] = 0;
        }
    }
    for (int64_t l = 0; l < tl; l++) tot[l] += blk[l];
}

/* Tiles run along kept dim ti of K (the one x reads with the smallest
 * stride); the other kept dims are enumerated as Q. */
static void reduce_cols(const tg__arr *out, const char *xb, int dt, const rdims *K, int ti,
                        const rdims *R, double scale) {
    int64_t lk = K->shape[ti], sk = K->st[ti], ok = K->ost[ti];
    rdims Q = {0, {0}, {0}, {0}, 1}; /* the kept dims but ti */
    for (int d = 0; d < K->n; d++) {
        if (d == ti) continue;
        Q.shape[Q.n] = K->shape[d];
        Q.st[Q.n] = K->st[d];
        Q.ost[Q.n] = K->ost[d];
        Q.n++;
    }
    if (Q.n == 0) {
        Q.n = 1;
        Q.shape[0] = 1;
        Q.st[0] = Q.ost[0] = 0;
    }
    int64_t nq = K->numel / lk, rtot = R->numel;
    int64_t ntile = (lk + COL_TILE - 1) / COL_TILE;
    int64_t nwork = nq * ntile;
    int64_t total = K->numel * rtot;
    int64_t nch = 1;
    if (total >= TG__PAR_MIN && nwork < 64) {
        nch = (rtot + 1023) / 1024;
        if (nch > 64 / nwork) nch = 64 / nwork;
        if (nch > COL_MAX_PARTIAL / (nwork * COL_TILE)) nch = COL_MAX_PARTIAL / (nwork * COL_TILE);
        if (nch < 1) nch = 1;
    }
    int64_t cs = (rtot + nch - 1) / nch;
    double part[COL_MAX_PARTIAL]; /* (nwork, nch, COL_TILE) when nch > 1 */
#pragma omp parallel for schedule(static) if (total >= TG__PAR_MIN)
    for (int64_t w = 0; w < nwork * nch; w++) {
        int64_t item = w / nch, c = w % nch;
        int64_t q = item / ntile, l0 = (item % ntile) * COL_TILE;
        int64_t tl = lk - l0 < COL_TILE ? lk - l0 : COL_TILE;
        int64_t base = tg__k_offset_of(q, Q.n, Q.shape, Q.st) + l0 * sk;
        int64_t a = c * cs, b = a + cs < rtot ? a + cs : rtot;
        double tot[COL_TILE];
        col_tile(xb, dt, base, tl, sk, R, a < b ? a : b, b, tot);
        if (nch == 1) {
            int64_t ob = tg__k_offset_of(q, Q.n, Q.shape, Q.ost) + l0 * ok;
            for (int64_t l = 0; l < tl; l++) store(out, ob + l * ok, scale * tot[l]);
        } else {
            for (int64_t l = 0; l < tl; l++) part[w * COL_TILE + l] = tot[l];
        }
    }
    if (nch == 1) return;
    for (int64_t item = 0; item < nwork; item++) {
        int64_t q = item / ntile, l0 = (item % ntile) * COL_TILE;
        int64_t tl = lk - l0 < COL_TILE ? lk - l0 : COL_TILE;
        int64_t ob = tg__k_offset_of(q, Q.n, Q.shape, Q.ost) + l0 * ok;
        for (int64_t l = 0; l < tl; l++) {
            double acc = 0.0;
            for (int64_t c = 0; c < nch; c++) acc += part[(item * nch + c) * COL_TILE + l];
            store(out, ob + l * ok, scale * acc);
        }
    }
}

/* ---- entry point ------------------------------------------------------------------ */

/* out (i64, contiguous over x's kept dims) = the exact sum of x (i64 or bool)
 * over the dims with red[d], wrapping around on overflow as PyTorch. */
static void int_sum(const tg__arr *out, const tg__arr *x, const bool *red) {
    const int64_t nout = tg__k_numel(out->ndim, out->shape), n = tg__k_numel(x->ndim, x->shape);
    uint64_t *o = (uint64_t *)out->data;
    memset(o, 0, (size_t)nout * sizeof *o);
    for (int64_t lin = 0; lin < n; lin++) {
        int64_t rest = lin, off = 0, oi = 0, ost = 1;
        for (int d = x->ndim - 1; d >= 0; d--) {
            const int64_t i = rest % x->shape[d];
            rest /= x->shape[d];
            off += i * x->strides[d];
            if (!red[d]) {
                oi += i * ost;
                ost *= x->shape[d];
            }
        }
        o[oi] += x->dtype == TG_BOOL ? (uint64_t)((const uint8_t *)x->data)[off]
                                     : (uint64_t)((const int64_t *)x->data)[off];
    }
}

tg_status tg__cpu_sum_reduce(const tg__arr *out, const tg__arr *x, const bool *red,
                             double scale) {
    int64_t nout = tg__k_numel(out->ndim, out->shape);
    if (nout == 0) return TG_OK;
    if (out->dtype == TG_I64) { /* an exact integer sum (scale is 1) */
        int_sum(out, x, red);
        return TG_OK;
    }
    if (tg__k_numel(x->ndim, x->shape) == 0) { /* sum over no elements */
        for (int64_t j = 0; j < nout; j++) store(out, j, 0.0 * scale);
        return TG_OK;
    }
    /* simplified dims: L[0..m) in x's order */
    int64_t ls[TG__K_MAX_DIMS], lst[TG__K_MAX_DIMS];
    bool lr[TG__K_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < x->ndim; d++) {
        int64_t n = x->shape[d];
        if (n == 1) continue;
        if (m > 0 && lr[m - 1] == red[d] && lst[m - 1] == x->strides[d] * n) {
            ls[m - 1] *= n;
            lst[m - 1] = x->strides[d];
        } else {
            ls[m] = n;
            lst[m] = x->strides[d];
            lr[m] = red[d];
            m++;
        }
    }
    rdims K = {0, {0}, {0}, {0}, 1}, R = {0, {0}, {0}, {0}, 1};
    for (int i = 0; i < m; i++) {
        rdims *D = lr[i] ? &R : &K;
        D->shape[D->n] = ls[i];
        D->st[D->n] = lst[i];
        D->numel *= ls[i];
        D->n++;
    }
    int64_t ostride = 1; /* out is contiguous over K */
    for (int d = K.n - 1; d >= 0; d--) {
        K.ost[d] = ostride;
        ostride *= K.shape[d];
    }
    /* column strategy when a kept dim is read with a smaller stride than the
     * innermost reduced dim (e.g. sum over the leading dims of a contiguous
     * tensor, or over the last dim of a transposed one) */
    int ti = -1;
    for (int d = 0; d < K.n; d++)
        if (K.st[d] != 0 && (ti < 0 || absi(K.st[d]) <= absi(K.st[ti]))) ti = d;
    bool col = R.n > 0 && ti >= 0 && absi(K.st[ti]) < absi(R.st[R.n - 1]);
    if (R.n == 0) { /* nothing reduced: a scaled copy */
        R.n = 1;
        R.shape[0] = 1;
        R.st[0] = 0;
    }
    if (K.n == 0) {
        K.n = 1;
        K.shape[0] = 1;
        K.st[0] = K.ost[0] = 0;
    }
    const char *xb = (const char *)x->data;
    if (col) reduce_cols(out, xb, x->dtype, &K, ti, &R, scale);
    else reduce_rows(out, xb, x->dtype, &K, &R, scale);
    return TG_OK;
}
