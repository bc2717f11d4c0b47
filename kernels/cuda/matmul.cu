/* kernels/cuda/matmul.cu - batched matrix products through cuBLAS.
 *
 * cuBLAS is column-major; tapegrad's results are row-major. A row-major
 * (M, N) matrix C with row stride ldc is, read column-major, C^T (N, M) with
 * leading dimension ldc, so C = A B is computed as C^T = B^T A^T: gemm with
 * m = N, n = M, k = K and the operands swapped. An operand stored row-major
 * (cs == 1) is its own transpose in column-major terms (CUBLAS_OP_N, ld = rs);
 * one stored column-major (rs == 1) needs CUBLAS_OP_T with ld = cs. Operands
 * with neither unit stride are packed by the caller (tg__cuda_mat_usable
 * tells which). A batch is one cublas?gemmStridedBatched call when every
 * operand's batch offsets are a multiple of the flat batch index, otherwise
 * one gemm per entry; a reduced batch (c = sum_i a_i b_i) accumulates with
 * beta = 1 after the first entry. One handle per process, used under a lock
 * (a handle is not safe to share between threads).
 *
 * bf16 (dtype TG_BF16): a and b are bf16, c is f32, every product summed in
 * f32 on the tensor cores (cublasGemmEx with CUBLAS_COMPUTE_32F): no f32
 * copy of an operand is made. f32 products use the tensor cores' TF32 only
 * when tg__cuda_set_allow_tf32 said so (PyTorch's allow_tf32: inputs
 * rounded to 10 mantissa bits, f32 sums). */
#include <cublas_v2.h>
#include <pthread.h>

#include "kcommon.cuh"

static pthread_mutex_t g_blas_lock = PTHREAD_MUTEX_INITIALIZER;
static cublasHandle_t g_handle = NULL;
static bool g_allow_tf32 = false; /* under g_blas_lock */

extern "C" void tg__cuda_set_allow_tf32(bool allow) {
    pthread_mutex_lock(&g_blas_lock);
    g_allow_tf32 = allow;
    pthread_mutex_unlock(&g_blas_lock);
}

extern "C" void tg__cuda_mat_normalise(tg__mat *m) {
    if (m->cols == 1) m->cs = 1; /* a stride along a size-1 dim is never used */
    if (m->rows == 1) m->rs = m->cs == 1 ? (m->cols > 1 ? m->cols : 1) : 1;
}

extern "C" bool tg__cuda_mat_usable(const tg__mat *m) {
    int64_t r1 = m->rows > 1 ? m->rows : 1, c1 = m->cols > 1 ? m->cols : 1;
    if (m->cs == 1 && m->rs >= c1 && m->rs <= INT32_MAX) return true;
    if (m->rs == 1 && m->cs >= r1 && m->cs <= INT32_MAX) return true;
    return false;
}

/* Operand in cuBLAS terms: transposition and leading dimension for reading
 * the transpose of m (m row-major -> OP_N). */
static void as_transposed(const tg__mat *m, cublasOperation_t *op, int *ld) {
    if (m->cs == 1) {
        *op = CUBLAS_OP_N;
        *ld = (int)m->rs;
    } else {
        *op = CUBLAS_OP_T;
        *ld = (int)m->cs;
    }
}

/* Offset (elements) of batch entry i of m, and whether every operand's
 * offsets are i * stride (returned in *st). */
static int64_t batch_off(const tg__mat *m, int nb, const int64_t *bshape, int64_t i) {
    int64_t off = 0;
    for (int d = nb - 1; d >= 0; d--) {
        off += (i % bshape[d]) * m->bs[d];
        i /= bshape[d];
    }
    return off;
}
static bool flat_stride(const tg__mat *m, int nb, const int64_t *bshape, int64_t *st) {
    *st = nb > 0 ? m->bs[nb - 1] : 0;
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] == 1) continue;
        int64_t want = *st;
        for (int e = d + 1; e < nb; e++) want *= bshape[e];
        if (m->bs[d] != want) return false;
    }
    return true;
}

template <class T> struct blas;
template <> struct blas<float> {
    static constexpr const char *gemm_name = "cublasSgemm";
    static constexpr const char *batched_name = "cublasSgemmStridedBatched";
    static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                               int n, int k, const float *al, const float *A, int lda,
                               const float *B, int ldb, const float *be, float *C, int ldc) {
        return cublasSgemm(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    }
    static cublasStatus_t batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const float *al, const float *A, int lda,
                                  long long sA, const float *B, int ldb, long long sB,
                                  const float *be, float *C, int ldc, long long sC, int cnt) {
        return cublasSgemmStridedBatched(h, ta, tb, m, n, k, al, A, lda, sA, B, ldb, sB, be, C,
                                         ldc, sC, cnt);
    }
};
template <> struct blas<double> {
    static constexpr const char *gemm_name = "cublasDgemm";
    static constexpr const char *batched_name = "cublasDgemmStridedBatched";
    static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                               int n, int k, const double *al, const double *A, int lda,
                               const double *B, int ldb, const double *be, double *C, int ldc) {
        return cublasDgemm(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    }
    static cublasStatus_t batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const double *al, const double *A, int lda,
                                  long long sA, const double *B, int ldb, long long sB,
                                  const double *be, double *C, int ldc, long long sC, int cnt) {
        return cublasDgemmStridedBatched(h, ta, tb, m, n, k, al, A, lda, sA, B, ldb, sB, be, C,
                                         ldc, sC, cnt);
    }
};

/* bf16 operands, f32 result and sums: the one cuBLAS call for both,
 * cublasGemm(StridedBatched)Ex. The element type T of the pointers is the
 * result's (float); the operands are read as bf16. */
struct bf16_ops {
    static constexpr const char *gemm_name = "cublasGemmEx";
    static constexpr const char *batched_name = "cublasGemmStridedBatchedEx";
    static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                               int n, int k, const float *al, const void *A, int lda,
                               const void *B, int ldb, const float *be, float *C, int ldc) {
        return cublasGemmEx(h, ta, tb, m, n, k, al, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb, be,
                            C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    static cublasStatus_t batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const float *al, const void *A, int lda,
                                  long long sA, const void *B, int ldb, long long sB,
                                  const float *be, float *C, int ldc, long long sC, int cnt) {
        return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, al, A, CUDA_R_16BF, lda, sA, B,
                                          CUDA_R_16BF, ldb, sB, be, C, CUDA_R_32F, ldc, sC, cnt,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
};
template <> struct blas<uint16_t> : bf16_ops {};

/* The result's element type for operands of type T (bf16 -> f32). */
template <class T> struct out_of { typedef T type; };
template <> struct out_of<uint16_t> { typedef float type; };

/* One gemm c = a b (no batch). */
template <class T>
static tg_status gemm1(const tg__mat *a, const tg__mat *b, const tg__mat *c, bool accumulate) {
    cublasOperation_t opa, opb;
    int lda, ldb;
    as_transposed(a, &opa, &lda);
    as_transposed(b, &opb, &ldb);
    typedef typename out_of<T>::type C;
    const C one = (C)1, zero = (C)0;
    return tg__cublas_check(blas<T>::gemm(g_handle, opb, opa, (int)c->cols, (int)c->rows,
                                          (int)a->cols, &one, (const T *)b->data, ldb,
                                          (const T *)a->data, lda, accumulate ? &one : &zero,
                                          (C *)c->data,
                                          (int)c->rs),
                            blas<T>::gemm_name, __FILE__, __LINE__);
}

/* A batch whose entries continue one another is one bigger gemm:
 *  - reduced (c = sum_i a_i b_i): when a's entries follow each other along
 *    its columns and b's along its rows, c = [a_0 a_1 ...] [b_0; b_1; ...]
 *    (the weight gradient of x (B, T, K) @ w (K, N): one gemm with k = B T);
 *  - b shared: when a's and c's entries follow each other along their rows,
 *    [c_0; c_1; ...] = [a_0; a_1; ...] b (x (B, T, K) @ w: m = B T).
 * Returns false (nothing run) when the batch does not fold. */
template <class T>
static bool folded(int nb, const int64_t *bshape, int64_t nbatch, const tg__mat *a,
                   const tg__mat *b, const tg__mat *c, bool reduce, bool accumulate,
                   tg_status *st) {
    int64_t sa, sb, sc;
    if (nbatch < 2 || !flat_stride(a, nb, bshape, &sa) || !flat_stride(b, nb, bshape, &sb))
        return false;
    tg__mat fa = *a, fb = *b, fc = *c;
    if (reduce && sa == a->cols * a->cs && sb == b->rows * b->rs) {
        fa.cols *= nbatch;
        fb.rows *= nbatch;
    } else if (!reduce && sb == 0 && flat_stride(c, nb, bshape, &sc) && sa == a->rows * a->rs &&
               sc == c->rows * c->rs) {
        fa.rows *= nbatch;
        fc.rows *= nbatch;
    } else {
        return false;
    }
    tg__cuda_mat_normalise(&fa);
    tg__cuda_mat_normalise(&fb);
    tg__cuda_mat_normalise(&fc);
    if (fa.rows > INT32_MAX || fa.cols > INT32_MAX || !tg__cuda_mat_usable(&fa) ||
        !tg__cuda_mat_usable(&fb) || !tg__cuda_mat_usable(&fc))
        return false;
    *st = gemm1<T>(&fa, &fb, &fc, accumulate);
    return true;
}

template <class T>
static tg_status run(int nb, const int64_t *bshape, const tg__mat *a, const tg__mat *b,
                     const tg__mat *c, bool reduce, bool accumulate) {
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++) nbatch *= bshape[d];
    tg_status fst;
    if (folded<T>(nb, bshape, nbatch, a, b, c, reduce, accumulate, &fst)) return fst;
    const int M = (int)c->rows, N = (int)c->cols, K = (int)a->cols, ldc = (int)c->rs;
    cublasOperation_t opa, opb;
    int lda, ldb;
    as_transposed(a, &opa, &lda);
    as_transposed(b, &opb, &ldb);
    typedef typename out_of<T>::type R;
    const R one = (R)1, zero = (R)0;
    R *C = (R *)c->data;
    const T *A = (const T *)a->data, *B = (const T *)b->data;
    int64_t sa, sb, sc;
    if (!reduce && nbatch > 1 && nbatch <= INT32_MAX && flat_stride(a, nb, bshape, &sa) &&
        flat_stride(b, nb, bshape, &sb) && flat_stride(c, nb, bshape, &sc))
        return tg__cublas_check(blas<T>::batched(g_handle, opb, opa, N, M, K, &one, B, ldb, sb, A,
                                                 lda, sa, accumulate ? &one : &zero, C, ldc, sc,
                                                 (int)nbatch),
                                blas<T>::batched_name, __FILE__, __LINE__);
    for (int64_t i = 0; i < nbatch; i++) {
        const R *beta = (accumulate || (reduce && i > 0)) ? &one : &zero;
        R *Ci = reduce ? C : C + batch_off(c, nb, bshape, i);
        tg_status st = tg__cublas_check(blas<T>::gemm(g_handle, opb, opa, N, M, K, &one,
                                                      B + batch_off(b, nb, bshape, i), ldb,
                                                      A + batch_off(a, nb, bshape, i), lda, beta,
                                                      Ci, ldc),
                                        blas<T>::gemm_name, __FILE__, __LINE__);
        if (st != TG_OK) return st;
    }
    return TG_OK;
}

extern "C" tg_status tg__cuda_gemm(int dtype, int nb, const int64_t *bshape,
                                     const tg__mat *a, const tg__mat *b,
                                     const tg__mat *c, bool reduce, bool accumulate) {
    if (c->rows == 0 || c->cols == 0) return TG_OK;
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++) nbatch *= bshape[d];
    if (a->cols == 0 || nbatch == 0) { /* empty sums: zeros */
        if ((nbatch == 0 && !reduce) || accumulate) return TG_OK; /* nothing, or + 0 */
        tg__arr arr;
        arr.data = c->data;
        arr.dtype = dtype == TG_BF16 ? TG_F32 : dtype; /* c's */
        arr.ndim = 2;
        arr.shape[0] = c->rows;
        arr.shape[1] = c->cols;
        arr.strides[0] = c->rs;
        arr.strides[1] = c->cs;
        if (reduce || nbatch == 1) return tg__cuda_fill(&arr, 0.0);
        arr.ndim = nb + 2; /* every batch entry of c */
        for (int d = 0; d < nb; d++) {
            arr.shape[d] = bshape[d];
            arr.strides[d] = c->bs[d];
        }
        arr.shape[nb] = c->rows;
        arr.shape[nb + 1] = c->cols;
        arr.strides[nb] = c->rs;
        arr.strides[nb + 1] = c->cs;
        return tg__cuda_fill(&arr, 0.0);
    }
    if (c->rows > INT32_MAX || c->cols > INT32_MAX || a->cols > INT32_MAX || c->rs > INT32_MAX)
        return tg__k_fail(TG_ERR_SHAPE, "tg_matmul: a size is beyond cuBLAS's int range");
    pthread_mutex_lock(&g_blas_lock);
    tg_status st = TG_OK;
    if (!g_handle) {
        st = TG__CUBLAS_CHECK(cublasCreate(&g_handle));
        if (st != TG_OK) g_handle = NULL; /* its value is unspecified then: try again next time */
    }
    if (st == TG_OK) st = TG__CUBLAS_CHECK(cublasSetStream(g_handle, (cudaStream_t)tg__cuda_stream()));
    if (st == TG_OK && dtype == TG_F32)
        st = TG__CUBLAS_CHECK(cublasSetMathMode(g_handle, g_allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                        : CUBLAS_DEFAULT_MATH));
    if (st == TG_OK)
        st = dtype == TG_F32    ? run<float>(nb, bshape, a, b, c, reduce, accumulate)
             : dtype == TG_BF16 ? run<uint16_t>(nb, bshape, a, b, c, reduce, accumulate)
                                : run<double>(nb, bshape, a, b, c, reduce, accumulate);
    pthread_mutex_unlock(&g_blas_lock);
    return st;
}
