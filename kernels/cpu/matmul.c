/* kernels/cpu/matmul.c - batched GEMM through CBLAS (row-major).
 *
 * Contract (kernels/kernel.h): c[i] = a[i] @ b[i] over a batch, or the sum over
 * the batch when reducing (the weight gradient of a shared 2-D operand).
 * Strategy, cheapest first:
 *   1. zero-size M or N: nothing to do; K == 0 (or an empty reduced batch):
 *      c = 0 without calling BLAS;
 *   2. fold the batch into one GEMM when the layout allows it: b shared and
 *      the batch dims of a and c merge with their row dim (x (B, T, d) @ W),
 *      or, when reducing, the batch dims merge with the inner K dim of a and
 *      b (dW = x^T @ dy over all B*T rows);
 *   3. otherwise one GEMM per batch entry.
 * Each operand is passed to BLAS in place (CblasNoTrans with ld = row stride,
 * or CblasTrans with ld = column stride for a transposed matrix); an operand
 * with any other layout (expanded, overlapping, strided both ways) is packed
 * into a contiguous workspace matrix before each GEMM.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "cpu.h"

/* How BLAS can read a (rows, cols) matrix with element strides (rs, cs):
 * row-major as stored (trans false, ld = rs) or as the transpose of a stored
 * row-major matrix (trans true, ld = cs). Strides of size-1 dims are ignored.
 * False when neither works: the matrix must be packed. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                        int64_t *ld) {
    if (cols <= 1 || cs == 1) { /* rows contiguous */
        int64_t need = cols > 1 ? cols : 1;
        int64_t l = rows <= 1 ? need : rs;
        if (l >= need && l <= INT_MAX) {
            *trans = false;
            *ld = l;
            return true;
        }
    }
    if (rows <= 1 || rs == 1) { /* columns contiguous */
        int64_t need = rows > 1 ? rows : 1;
        int64_t l = cols <= 1 ? need : cs;
        if (l >= need && l <= INT_MAX) {
            *trans = true;
            *ld = l;
            return true;
        }
    }
    return false;
}

/* Merges the batch dims (bshape, strides bs) and one matrix dim (size n,
 * stride st, innermost) into a single dim when they are laid out as one in C
 * order (size-1 dims ignored). On success *out is the merged dim's stride. */
static bool fold_dim(int nb, const int64_t *bshape, const int64_t *bs, int64_t n, int64_t st,
                     int64_t *out) {
    bool have = n != 1;
    int64_t stride = st, size = have ? n : 1; /* innermost stride, size so far */
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] == 1)
            continue;
        if (!have) {
            stride = bs[d];
            size = bshape[d];
            have = true;
            continue;
        }
        if (bs[d] != stride * size)
            return false;
        size *= bshape[d];
    }
    *out = stride;
    return true;
}

static bool batch_shared(int nb, const int64_t *bshape, const int64_t *bs) {
    for (int d = 0; d < nb; d++)
        if (bshape[d] != 1 && bs[d] != 0)
            return false;
    return true;
}

/* Copies the (rows, cols) matrix at src (strides rs, cs) into dst, row-major. */
static void pack(int dt, int64_t rows, int64_t cols, const void *src, int64_t rs, int64_t cs,
                 void *dst) {
    if (dt == TG_F32) {
        const float *s = src;
        float *d = dst; // (rows, cols)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                d[r * cols + c] = s[r * rs + c * cs];
    } else {
        const double *s = src;
        double *d = dst; // (rows, cols)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                d[r * cols + c] = s[r * rs + c * cs];
    }
}

/* data + off elements of size es. */
static inline void *at(void *data, size_t es, int64_t off) {
    return (char *)data + (size_t)off * es;
}

static void zero_rows(size_t es, int64_t rows, int64_t cols, void *c, int64_t rs) {
    for (int64_t r = 0; r < rows; r++)
        memset((char *)c + (size_t)(r * rs) * es, 0, (size_t)cols * es);
}

/* One operand of a GEMM: where BLAS reads it and how. */
typedef struct operand {
    int64_t rows, cols, rs, cs;
    bool trans, packed;
    int64_t ld;
    void *ws;        /* packing buffer (rows, cols) when packed */
    size_t ws_bytes;
} operand;

static tg_status operand_init(operand *o, int dt, int64_t rows, int64_t cols, int64_t rs,
                              int64_t cs) {
    o->rows = rows;
    o->cols = cols;
    o->rs = rs;
    o->cs = cs;
    o->ws = NULL;
    o->ws_bytes = 0;
    o->packed = !blas_layout(rows, cols, rs, cs, &o->trans, &o->ld);
    if (o->packed) {
        o->trans = false;
        o->ld = cols > 1 ? cols : 1;
        o->ws_bytes = (size_t)rows * (size_t)cols * tg__k_dtype_size(dt);
        o->ws = tg__k_workspace(TG_CPU, o->ws_bytes);
        if (!o->ws)
            return TG_ERR_NOMEM;
    }
    return TG_OK;
}

static void operand_free(operand *o) {
    if (o->ws)
        tg__k_workspace_free(TG_CPU, o->ws, o->ws_bytes);
    o->ws = NULL;
}

/* The pointer BLAS reads for the matrix at p (packing it first if needed). */
static const void *operand_ptr(operand *o, int dt, const void *p) {
    if (!o->packed)
        return p;
    pack(dt, o->rows, o->cols, p, o->rs, o->cs, o->ws);
    return o->ws;
}

static void gemm(int dt, int64_t M, int64_t N, int64_t K, const operand *a, const void *pa,
                 const operand *b, const void *pb, void *pc, int64_t ldc, double beta) {
    enum CBLAS_TRANSPOSE ta = a->trans ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = b->trans ? CblasTrans : CblasNoTrans;
    if (dt == TG_F32)
        cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0f, pa, (int)a->ld, pb,
                    (int)b->ld, (float)beta, pc, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0, pa, (int)a->ld, pb,
                    (int)b->ld, beta, pc, (int)ldc);
}

tg_status tg__cpu_matmul(int dt, int nb, const int64_t *bshape, const tg__mat *a,
                         const tg__mat *b, const tg__mat *c, bool reduce, bool accumulate) {
    size_t es = tg__k_dtype_size(dt);
    int64_t M = a->rows, K = a->cols, N = b->cols;
    int64_t nbatch = tg__k_numel(nb, bshape);
    if (b->rows != K || c->rows != M || c->cols != N || (dt != TG_F32 && dt != TG_F64))
        return tg__k_fail(TG_ERR_INTERNAL, "inconsistent operands in the GEMM kernel");
    if (M == 0 || N == 0)
        return TG_OK;

    /* c must be row-major: (r, col) at r * ldc + col. */
    int64_t ldc = c->rows <= 1 ? (N > 1 ? N : 1) : c->rs;
    if ((N > 1 && c->cs != 1) || ldc < N)
        return tg__k_fail(TG_ERR_INTERNAL, "GEMM result is not row-major");

    if (K == 0 || nbatch == 0) {
        if (accumulate)
            return TG_OK; /* adds an empty sum */
        if (reduce)
            zero_rows(es, M, N, c->data, ldc);
        else
            for (int64_t i = 0; i < nbatch; i++)
                zero_rows(es, M, N, at(c->data, es, tg__k_offset_of(i, nb, bshape, c->bs)), ldc);
        return TG_OK;
    }

    /* Fold the batch into a single GEMM where the layout allows it. */
    int64_t fM = M, fK = K, fa_rs = a->rs, fa_cs = a->cs, fb_rs = b->rs, fc_rs = ldc;
    bool folded = nbatch == 1;
    if (!folded && !reduce && M * nbatch <= INT_MAX && batch_shared(nb, bshape, b->bs) &&
        fold_dim(nb, bshape, a->bs, M, a->rs, &fa_rs) &&
        fold_dim(nb, bshape, c->bs, M, ldc, &fc_rs)) {
        fM = M * nbatch; /* a (B*M, K) @ b (K, N) -> c (B*M, N) */
        folded = true;
    } else if (!folded && reduce && K * nbatch <= INT_MAX &&
               fold_dim(nb, bshape, a->bs, K, a->cs, &fa_cs) &&
               fold_dim(nb, bshape, b->bs, K, b->rs, &fb_rs)) {
        fK = K * nbatch; /* a (M, B*K) @ b (B*K, N) -> c (M, N) */
        folded = true;
    }
    if (!folded) {
        fa_rs = a->rs;
        fa_cs = a->cs;
        fb_rs = b->rs;
        fc_rs = ldc;
    }
    if (fM > INT_MAX || N > INT_MAX || fK > INT_MAX)
        return tg__k_fail(TG_ERR_SHAPE,
                             "GEMM sizes (%lld, %lld, %lld) exceed the BLAS integer range",
                             (long long)fM, (long long)N, (long long)fK);
    if (fM > 1 && (fc_rs < N || fc_rs > INT_MAX))
        return tg__k_fail(TG_ERR_INTERNAL, "GEMM result is not row-major");
    if (fM <= 1)
        fc_rs = N > 1 ? N : 1;

    operand oa, ob;
    tg_status st = operand_init(&oa, dt, fM, fK, fa_rs, fa_cs);
    if (st != TG_OK)
        return st;
    st = operand_init(&ob, dt, fK, N, fb_rs, b->cs);
    if (st != TG_OK) {
        operand_free(&oa);
        return st;
    }

    if (folded) {
        const void *pa = operand_ptr(&oa, dt, a->data);
        const void *pb = operand_ptr(&ob, dt, b->data);
        gemm(dt, fM, N, fK, &oa, pa, &ob, pb, c->data, fc_rs, accumulate ? 1.0 : 0.0);
    } else {
        /* A matrix shared by every entry (a weight) is packed only once. */
        bool a_shared = batch_shared(nb, bshape, a->bs), b_shared = batch_shared(nb, bshape, b->bs);
        const void *pa = NULL, *pb = NULL;
        for (int64_t i = 0; i < nbatch; i++) {
            const void *ai = at(a->data, es, tg__k_offset_of(i, nb, bshape, a->bs));
            const void *bi = at(b->data, es, tg__k_offset_of(i, nb, bshape, b->bs));
            void *ci = reduce ? c->data : at(c->data, es, tg__k_offset_of(i, nb, bshape, c->bs));
            if (!pa || !a_shared)
                pa = operand_ptr(&oa, dt, ai);
            if (!pb || !b_shared)
                pb = operand_ptr(&ob, dt, bi);
            gemm(dt, M, N, K, &oa, pa, &ob, pb, ci, ldc, accumulate || (reduce && i > 0) ? 1.0 : 0.0);
        }
    }
    operand_free(&oa);
    operand_free(&ob);
    return TG_OK;
}
