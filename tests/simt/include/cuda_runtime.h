/* tests/simt/include/cuda_runtime.h - a host emulation of the part of the
 * CUDA runtime API and kernel language that kernels/cuda/ uses, so that the
 * same .cu sources, compiled as plain C++ against this header, run on a
 * machine without a GPU (the "simt" build of the library, used by the
 * backend test suite).
 *
 * What is emulated faithfully enough to catch real kernel bugs:
 *   - every thread of a block is a coroutine; __syncthreads() and warp
 *     operations (__syncwarp, shuffles) are real barriers: a barrier that not
 *     every live thread of the block (or warp) reaches is reported as an
 *     error, as is a thread that exits while others wait;
 *   - __shared__ memory is shared by the threads of a block;
 *   - device memory is mapped inaccessible except while a kernel, a copy or a
 *     cuBLAS call runs, so host code that dereferences a device pointer
 *     crashes here as it would misbehave on a GPU;
 *   - launch limits (block size <= 1024, grid.x < 2^31, grid.y/z < 65536);
 *   - cuBLAS gemm argument checks (leading dimensions), column-major math.
 * Blocks run one after another and threads interleave only at barriers:
 * races that need true concurrency are not found here.
 *
 * Failure injection for tests: tg_simt_fail_after() (tests/simt/simt.h).
 */
#ifndef TG_SIMT_CUDA_RUNTIME_H
#define TG_SIMT_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>

#define TG_SIMT 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct alignas(16) float4 {
    float x, y, z, w;
};

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoDevice = 100,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
} cudaMemcpyKind;

typedef enum cudaDeviceAttr {
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMemoryClockRate = 36,
    cudaDevAttrGlobalMemoryBusWidth = 37,
} cudaDeviceAttr;

typedef struct CUstream_st *cudaStream_t;

namespace tg_simt {
const dim3 &thread_idx();
const dim3 &block_idx();
const dim3 &block_dim();
const dim3 &grid_dim();
void barrier_block();
void barrier_warp();
/* Warp exchange: every lane of the warp publishes `v` (n <= 8 bytes) and
 * receives lane src's value (its own when src is outside the warp). */
void exchange(const void *v, void *out, size_t n, int src);
int lane();
/* A 16-byte vector access at p: reports and aborts unless p is 16-byte
 * aligned (a GPU faults with cudaErrorMisalignedAddress). */
void check_vector_access(const void *p, const char *what);
/* Runs body once per thread of every block; returns a cudaError_t. */
int launch(dim3 grid, dim3 block, const std::function<void()> &body, const char *name);
/* Makes emulated device memory accessible for a host-side emulation of a
 * device operation (cuBLAS); returns the previous state for device_end. */
bool device_begin();
void device_end(bool prev);
/* Consumes one call of `api` from the failure-injection counters: true when
 * this call must fail. */
bool should_fail(const char *api);
/* Notes the stream a kernel, a copy or a cuBLAS call was given. */
void note_stream(const char *what, const void *stream);
}  // namespace tg_simt

#define threadIdx (::tg_simt::thread_idx())
#define blockIdx (::tg_simt::block_idx())
#define blockDim (::tg_simt::block_dim())
#define gridDim (::tg_simt::grid_dim())
#define warpSize 32

static inline void __syncthreads() { ::tg_simt::barrier_block(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)mask;
    ::tg_simt::barrier_warp();
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    (void)mask;
    (void)width;
    T r;
    ::tg_simt::exchange(&v, &r, sizeof v, ::tg_simt::lane() ^ lane_mask);
    return r;
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    (void)mask;
    (void)width;
    T r;
    ::tg_simt::exchange(&v, &r, sizeof v, ::tg_simt::lane() + (int)delta);
    return r;
}
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    (void)mask;
    (void)width;
    T r;
    ::tg_simt::exchange(&v, &r, sizeof v, src);
    return r;
}
/* Threads interleave only at barriers: a plain read-modify-write is atomic. */
template <class T> static inline T atomicAdd(T *p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
    unsigned long long old = *p;
    if (v < old) *p = v;
    return old;
}

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemset(void *p, int v, size_t n);
/* Streams are opaque tokens here (work runs at once, in order): the async
 * calls do what the synchronous ones do and note the stream they were given
 * (tg_simt_last_stream). */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int dev);
cudaError_t cudaGetDevice(int *dev);
/* Not in the real API: the emulated device's name. */
const char *tg_simt_device_name(void);

/* ---- device math -----------------------------------------------------------------------
 * A GPU's exp, log, tanh, ... are not the host's libm: the CUDA Programming Guide
 * ("Mathematical Functions") bounds their error at 1 to 4 ulp (expf 2, logf 1, log1pf 1,
 * expm1f 1, tanhf 2, erff 2, powf 4; double: 1, 1, 1, 1, 1, 2, 2), while glibc is within
 * about 1 ulp and usually correctly rounded. The emulated device would otherwise agree with
 * the CPU bitwise, and a test that only passes because of that (a tolerance too tight for
 * an ill-conditioned formula such as sigmoid's (1 - s) * s near s = 1) would first fail on
 * a real GPU. So here every such call moves the host's result by -1, 0 or +1 ulp, chosen by
 * a hash of the argument's bits (the same argument always gives the same result). Results
 * a GPU gets exactly are left alone: NaN, infinities, zeros, +-1 from tanh and erf, the
 * largest finite value, and integers from pow. sqrt and division stay exact, as CUDA's
 * are by default (IEEE round-to-nearest). Macros, so that the kernels' unqualified
 * exp(x) calls reach them: every standard header is included above. */
namespace tg_simt {
template <class T> static inline T jitter(T r, T x, T y, unsigned fn, bool keep_integers) {
    if (r != r || r == 0 || !(r - r == 0)) return r; /* NaN, zero, infinity */
    if (keep_integers && fabs(r) < 9007199254740992.0 && r == (T)(int64_t)r) return r;
    uint64_t bx = 0, by = 0;
    memcpy(&bx, &x, sizeof x);
    memcpy(&by, &y, sizeof y);
    uint64_t h = (bx ^ (by * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)fn << 56)) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    int k = (int)(h % 3) - 1;
    if (k == 0) return r;
    T moved = nextafter(r, k > 0 ? (T)INFINITY : -(T)INFINITY);
    return moved - moved == 0 ? moved : r; /* never past the largest finite value */
}
}  // namespace tg_simt
#define TG_SIMT_MATH1(NAME, ID, BOUNDED)                                                   \
    static inline float tg_simt_##NAME(float x) {                                       \
        float r = ::NAME##f(x);                                                         \
        return (BOUNDED && (r == 1.0f || r == -1.0f)) ? r                               \
                                                      : ::tg_simt::jitter(r, x, 0.0f, ID, false); \
    }                                                                                   \
    static inline double tg_simt_##NAME(double x) {                                     \
        double r = ::NAME(x);                                                           \
        return (BOUNDED && (r == 1.0 || r == -1.0)) ? r                                 \
                                                    : ::tg_simt::jitter(r, x, 0.0, ID, false); \
    }
TG_SIMT_MATH1(exp, 1, false)
TG_SIMT_MATH1(log, 2, false)
TG_SIMT_MATH1(log1p, 3, false)
TG_SIMT_MATH1(expm1, 4, false)
TG_SIMT_MATH1(tanh, 5, true)
TG_SIMT_MATH1(erf, 6, true)
#undef TG_SIMT_MATH1
static inline float tg_simt_pow(float x, float y) {
    return ::tg_simt::jitter(::powf(x, y), x, y, 7, true);
}
static inline double tg_simt_pow(double x, double y) {
    return ::tg_simt::jitter(::pow(x, y), x, y, 7, true);
}
#define exp(x) tg_simt_exp(x)
#define log(x) tg_simt_log(x)
#define log1p(x) tg_simt_log1p(x)
#define expm1(x) tg_simt_expm1(x)
#define tanh(x) tg_simt_tanh(x)
#define erf(x) tg_simt_erf(x)
#define pow(x, y) tg_simt_pow(x, y)

#endif
