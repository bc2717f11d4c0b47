/* kernels/cpu/matmul.h - batched matrix products on the CPU through CBLAS.
 *
 * Contract: operands are described by tg__mat (any element strides, batch
 * strides 0 for an operand shared by every batch entry). Operands BLAS can
 * read in place (row-major as stored, or as the transpose of a row-major
 * matrix) are passed to cblas_?gemm directly; others are packed one matrix at
 * a time into a workspace buffer (tg__alloc, TG_MEM_WORKSPACE). The result
 * must be writable row-major (cs == 1, rs >= cols): every caller passes a
 * fresh contiguous tensor. No checks on user input here: the ops do them.
 */
#ifndef TG_KERNELS_CPU_MATMUL_H
#define TG_KERNELS_CPU_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "tg_internal.h"

/* A batch of (rows, cols) matrices: matrix i (C-order index over the batch
 * shape given to the kernel) has element (r, c) at
 *   data + (offset_of(i, batch shape, bs) + r * rs + c * cs) * dtype size. */
typedef struct tg__mat {
    void *data;                  /* element (0, 0) of batch entry 0 */
    int64_t rows, cols;
    int64_t rs, cs;              /* element strides inside one matrix */
    int64_t bs[TG_MAX_DIMS];     /* element strides of the batch dims (0: shared) */
} tg__mat;

/* The matrix view of the last two dims of t (batch strides from t's leading
 * dims, or all 0 when shared). nb = t->ndim - 2 leading dims are used. */
tg__mat tg__mat_of(const tg_tensor *t, bool shared);
/* The same matrices transposed (rows <-> cols, rs <-> cs); no copy. */
tg__mat tg__mat_t(tg__mat m);

/* c[i] = a[i] @ b[i] for every index i of the batch shape bshape (nb dims),
 * or, when reduce is true, c = sum_i a[i] @ b[i] (c's batch strides unused).
 * a (M, K), b (K, N), c (M, N), dtype dt (TG_F32 or TG_F64). K == 0 writes
 * zeros. Returns TG_OK, TG_ERR_NOMEM (workspace), TG_ERR_SHAPE (a size beyond
 * the BLAS integer range) or TG_ERR_INTERNAL (c not row-major); the error is
 * recorded with `who` in the message. c is untouched on failure. */
tg_status tg__cpu_matmul(const char *who, tg_dtype dt, int nb, const int64_t *bshape,
                         const tg__mat *a, const tg__mat *b, const tg__mat *c, bool reduce);

#endif
