/* tests/simt/include/cublas_v2.h - a host emulation of the cuBLAS calls
 * kernels/cuda/matmul.cu makes (see cuda_runtime.h here). Column-major, with
 * the argument checks the real library does on m, n, k and the leading
 * dimensions (CUBLAS_STATUS_INVALID_VALUE). */
#ifndef TG_SIMT_CUBLAS_V2_H
#define TG_SIMT_CUBLAS_V2_H

#include "cuda_runtime.h"

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;

typedef struct cublasContext *cublasHandle_t;

/* library_types.h's names for the types and modes used here */
typedef enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;

cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
const char *cublasGetStatusString(cublasStatus_t s);
const char *cublasGetStatusName(cublasStatus_t s);
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const double *alpha, const double *A, int lda,
                           const double *B, int ldb, const double *beta, double *C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long sA, const float *B, int ldb, long long sB,
                                         const float *beta, float *C, int ldc, long long sC,
                                         int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda,
                                         long long sA, const double *B, int ldb, long long sB,
                                         const double *beta, double *C, int ldc, long long sC,
                                         int batch);

/* Types: A and B CUDA_R_16BF with C CUDA_R_32F, or all three CUDA_R_32F;
 * compute CUBLAS_COMPUTE_32F (anything else: CUBLAS_STATUS_NOT_SUPPORTED,
 * as the real library answers a combination it lacks). Products are summed
 * in double here and stored as f32 (the device sums in f32). */
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long sA, const void *B, cudaDataType bt,
                                          int ldb, long long sB, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long sC, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo);
/* CUBLAS_TF32_TENSOR_OP_MATH: later cublasSgemm* calls on h round each
 * operand element to TF32 (10 mantissa bits, to nearest, ties away from
 * zero, as the device's cvt.rna.tf32) before multiplying. A device kernel
 * may instead drop the 13 low bits (the MMA ignores them): tests use
 * operands on which both give the same product. */
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
/* Later calls on h run on stream (noted for tg_simt_last_stream("cublas")). */
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t stream);

#endif
