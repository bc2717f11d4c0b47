/* tests/simt/test_simt.cpp - checks of the emulated device itself: the
 * backend suites trust it to run kernels as a GPU would and to reject what a
 * GPU would not run correctly. Each check prints one line; the exit status is
 * the number of failed checks. */
#include <stdio.h>
#include <string.h>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "simt.h"

static int g_failed = 0;

static void check(bool ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) g_failed++;
}

/* Shared memory written by every thread before a barrier and read after it
 * (reversed): correct only if the barrier orders the two phases. */
__global__ void k_reverse(int *out, int n) {
    __shared__ int buf[256];
    int t = (int)threadIdx.x;
    buf[t] = t * 3 + (int)blockIdx.x;
    __syncthreads();
    if (t < n) out[blockIdx.x * n + t] = buf[n - 1 - t];
}

__global__ void k_shuffles(int *out) {
    int lane = (int)(threadIdx.x % 32);
    int x = __shfl_xor_sync(0xffffffffu, lane, 5);
    int d = __shfl_down_sync(0xffffffffu, lane * 10, 3);
    double s = (double)lane;
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    out[threadIdx.x * 3] = x;
    out[threadIdx.x * 3 + 1] = d;
    out[threadIdx.x * 3 + 2] = (int)s;
}

/* Only the first half of the block reaches the barrier. */
__global__ void k_divergent_barrier(int *out) {
    if (threadIdx.x < blockDim.x / 2) __syncthreads();
    out[threadIdx.x] = 1;
}

/* Some threads return before a barrier the others wait at. */
__global__ void k_exit_before_barrier(int *out) {
    if (threadIdx.x == 3) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

/* A shuffle executed by only some lanes of a warp. */
__global__ void k_divergent_shuffle(int *out) {
    int v = (int)threadIdx.x;
    if (threadIdx.x % 2 == 0) v = __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x] = v;
}

__global__ void k_atomics(unsigned long long *m, double *sum) {
    atomicMin(m, 1000ull - blockIdx.x * blockDim.x - threadIdx.x);
    atomicAdd(sum, 0.5);
}

int main(void) {
    int *d = nullptr;
    check(cudaMalloc((void **)&d, 4096 * sizeof(int)) == cudaSuccess, "cudaMalloc");
    int h[4096];

    int n = 200;
    int st = ::tg_simt::launch(dim3(3), dim3(256), [&]() { k_reverse(d, n); }, "k_reverse");
    check(st == cudaSuccess, "a barrier between shared-memory phases runs");
    check(cudaMemcpy(h, d, 3 * n * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
    bool ok = true;
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < n; t++) ok = ok && h[b * n + t] == (n - 1 - t) * 3 + b;
    check(ok, "every thread reads what another wrote before the barrier");

    st = ::tg_simt::launch(dim3(1), dim3(64), [&]() { k_shuffles(d); }, "k_shuffles");
    check(st == cudaSuccess, "shuffles run");
    cudaMemcpy(h, d, 64 * 3 * sizeof(int), cudaMemcpyDeviceToHost);
    ok = true;
    for (int t = 0; t < 64; t++) {
        int lane = t % 32;
        ok = ok && h[3 * t] == (lane ^ 5);
        ok = ok && h[3 * t + 1] == (lane + 3 < 32 ? lane + 3 : lane) * 10;
        ok = ok && h[3 * t + 2] == 31 * 32 / 2;
    }
    check(ok, "__shfl_xor_sync, __shfl_down_sync (own value past the warp) and a butterfly sum");

    st = ::tg_simt::launch(dim3(1), dim3(64), [&]() { k_divergent_barrier(d); }, "k_divergent_barrier");
    check(st == cudaErrorLaunchFailure, "a __syncthreads() reached by half the block is an error");
    (void)cudaGetLastError();
    st = ::tg_simt::launch(dim3(1), dim3(64), [&]() { k_exit_before_barrier(d); },
                           "k_exit_before_barrier");
    check(st == cudaErrorLaunchFailure, "exiting while others wait at a barrier is an error");
    (void)cudaGetLastError();
    st = ::tg_simt::launch(dim3(1), dim3(32), [&]() { k_divergent_shuffle(d); },
                           "k_divergent_shuffle");
    check(st == cudaErrorLaunchFailure, "a shuffle executed by half a warp is an error");
    (void)cudaGetLastError();
    st = ::tg_simt::launch(dim3(1), dim3(2048), [&]() { k_reverse(d, 1); }, "k_reverse");
    check(st == cudaErrorInvalidConfiguration, "more than 1024 threads per block is refused");
    check(cudaGetLastError() == cudaErrorInvalidConfiguration, "and is the last error");
    check(cudaGetLastError() == cudaSuccess, "which reading clears");

    unsigned long long *m = nullptr;
    double *sum = nullptr;
    cudaMalloc((void **)&m, sizeof *m);
    cudaMalloc((void **)&sum, sizeof *sum);
    unsigned long long big = ~0ull;
    double zero = 0.0;
    cudaMemcpy(m, &big, sizeof big, cudaMemcpyHostToDevice);
    cudaMemcpy(sum, &zero, sizeof zero, cudaMemcpyHostToDevice);
    st = ::tg_simt::launch(dim3(4), dim3(128), [&]() { k_atomics(m, sum); }, "k_atomics");
    unsigned long long hm = 0;
    double hs = 0;
    cudaMemcpy(&hm, m, sizeof hm, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hs, sum, sizeof hs, cudaMemcpyDeviceToHost);
    check(st == cudaSuccess && hm == 1000ull - 511 && hs == 256.0, "atomicMin and atomicAdd");

    /* A host pointer given as device memory is refused, as the real runtime's
     * kinds would misbehave. */
    check(cudaMemcpy(h, h + 8, 8, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
          "cudaMemcpy with a host pointer as the device source is refused");
    (void)cudaGetLastError();

    /* cuBLAS: column-major C (2x2) = A (2x3) B (3x2), and argument checks */
    cublasHandle_t hb;
    check(cublasCreate(&hb) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    double ha[6] = {1, 4, 2, 5, 3, 6}; /* A = [[1,2,3],[4,5,6]] column-major */
    double hbm[6] = {1, 0, 1, 0, 1, 1};  /* B = [[1,0],[0,1],[1,1]] column-major */
    double hc[4] = {0};
    double *da, *db, *dc;
    cudaMalloc((void **)&da, sizeof ha);
    cudaMalloc((void **)&db, sizeof hbm);
    cudaMalloc((void **)&dc, sizeof hc);
    cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hbm, sizeof hbm, cudaMemcpyHostToDevice);
    double one = 1.0, zr = 0.0;
    check(cublasDgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, 2, db, 3, &zr, dc, 2) ==
              CUBLAS_STATUS_SUCCESS,
          "cublasDgemm");
    cudaMemcpy(hc, dc, sizeof hc, cudaMemcpyDeviceToHost);
    check(hc[0] == 4 && hc[1] == 10 && hc[2] == 5 && hc[3] == 11, "column-major product");
    check(cublasDgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, 1, db, 3, &zr, dc, 2) ==
              CUBLAS_STATUS_INVALID_VALUE,
          "lda below the rows of A is refused");
    check(cublasDgemm(hb, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, da, 2, db, 3, &zr, dc, 2) ==
              CUBLAS_STATUS_INVALID_VALUE,
          "lda below k for a transposed A is refused");
    cublasDestroy(hb);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(m);
    cudaFree(sum);
    cudaFree(d);
    check(tg_simt_device_bytes() == 0, "every emulated block was freed");
    printf("%d failed\n", g_failed);
    return g_failed;
}
