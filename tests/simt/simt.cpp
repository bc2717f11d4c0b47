/* tests/simt/simt.cpp - the emulated CUDA device (see include/cuda_runtime.h).
 *
 * Scheduling: a launch runs its blocks in order. The threads of a block are
 * ucontext coroutines on their own stacks; the scheduler resumes each
 * runnable thread until it finishes or reaches a barrier, then releases a
 * barrier once every live thread of its scope (block or warp) waits at it.
 * Anything else (a barrier some threads skip, a thread exiting while others
 * wait, warp operations in a partial warp) stops the launch with
 * cudaErrorLaunchFailure and a message on stderr naming the kernel.
 *
 * Device memory: each cudaMalloc is its own mapping, PROT_NONE while host
 * code runs and readable/writable during launches, copies and cuBLAS calls.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "simt.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMT_ASAN 1
#endif
#endif
#ifdef SIMT_ASAN
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                               size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
#define STACK_SIZE ((size_t)512 << 10)
#else
#define STACK_SIZE ((size_t)128 << 10)
#endif

namespace {

enum state { RUN, AT_BLOCK, AT_WARP, DONE };

struct thr {
    ucontext_t ctx;
    dim3 tid;
    int lin;
    state st;
    char *stack;
};

pthread_mutex_t g_launch_lock = PTHREAD_MUTEX_INITIALIZER;

struct launch_state {
    dim3 grid, block, bidx;
    int nthreads = 0;
    std::vector<thr> threads;
    int cur = -1;
    ucontext_t sched;
    const std::function<void()> *body = nullptr;
    uint64_t slots[32][32];          /* [warp][lane] shuffle values */
    void *sched_fake_stack = nullptr;
} L;

std::vector<char *> g_stacks;        /* reused between launches */

/* device memory */
std::map<uintptr_t, size_t> g_mem;   /* base -> mapped length */
size_t g_dev_bytes = 0;
bool g_open = false;                 /* device memory accessible now */
cudaError_t g_last = cudaSuccess;
long g_launches = 0;
std::string g_fail_api;
int g_fail_after = -1;

size_t page_round(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

void protect_all(bool open) {
    for (auto &m : g_mem)
        mprotect((void *)m.first, m.second, open ? PROT_READ | PROT_WRITE : PROT_NONE);
    g_open = open;
}

/* [p, p + n) inside one live allocation */
bool in_device(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    auto it = g_mem.upper_bound(a);
    if (it == g_mem.begin()) return false;
    --it;
    return a >= it->first && a + n <= it->first + it->second;
}

void fail(const char *name, const char *why) {
    fprintf(stderr, "simt: kernel %s, block (%u, %u, %u): %s\n", name, L.bidx.x, L.bidx.y, L.bidx.z,
            why);
}

void entry() {
    thr &t = L.threads[L.cur];
#ifdef SIMT_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    (*L.body)();
    t.st = DONE;
#ifdef SIMT_ASAN
    __sanitizer_start_switch_fiber(nullptr, nullptr, 0); /* this fiber ends */
#endif
    setcontext(&L.sched);
}

/* Saves the current context in *save and continues in *to; returns when
 * something later resumes *save. Written with getcontext/setcontext rather
 * than swapcontext: AddressSanitizer's swapcontext interceptor maps shadow
 * memory for the target stack on every call, which makes a sanitizer build
 * of the emulator hundreds of times slower. */
__attribute__((noinline)) void switch_context(ucontext_t *save, const ucontext_t *to) {
    volatile bool resumed = false;
    getcontext(save);
    if (!resumed) {
        resumed = true;
        setcontext(to);
    }
}

void resume(int i) {
    L.cur = i;
#ifdef SIMT_ASAN
    __sanitizer_start_switch_fiber(&L.sched_fake_stack, L.threads[i].stack, STACK_SIZE);
#endif
    switch_context(&L.sched, &L.threads[i].ctx);
#ifdef SIMT_ASAN
    __sanitizer_finish_switch_fiber(L.sched_fake_stack, nullptr, nullptr);
#endif
}

void yield_to_scheduler(state s) {
    thr &t = L.threads[L.cur];
    t.st = s;
#ifdef SIMT_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, nullptr, 0);
#endif
    switch_context(&t.ctx, &L.sched);
#ifdef SIMT_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

/* Runs one block; false (message printed) on a barrier error. */
bool run_block(const char *name) {
    int n = L.nthreads;
    for (int i = 0; i < n; i++) {
        thr &t = L.threads[i];
        t.lin = i;
        t.tid = dim3(i % L.block.x, i / L.block.x % L.block.y, i / (L.block.x * L.block.y));
        t.st = RUN;
        t.stack = g_stacks[i];
        getcontext(&t.ctx);
        t.ctx.uc_stack.ss_sp = t.stack;
        t.ctx.uc_stack.ss_size = STACK_SIZE;
        t.ctx.uc_link = nullptr;
        makecontext(&t.ctx, entry, 0);
    }
    int nwarps = (n + 31) / 32;
    for (;;) {
        for (int i = 0; i < n; i++)
            if (L.threads[i].st == RUN) resume(i);
        /* everybody is now DONE or at a barrier */
        int done = 0, at_block = 0, at_warp = 0;
        for (int i = 0; i < n; i++) {
            state s = L.threads[i].st;
            done += s == DONE;
            at_block += s == AT_BLOCK;
            at_warp += s == AT_WARP;
        }
        if (done == n) return true;
        bool released = false;
        for (int w = 0; w < nwarps; w++) {
            int lo = 32 * w, hi = lo + 32 < n ? lo + 32 : n, wait = 0, other = 0;
            for (int i = lo; i < hi; i++) {
                wait += L.threads[i].st == AT_WARP;
                other += L.threads[i].st != AT_WARP;
            }
            if (wait == 0) continue;
            if (hi - lo < 32) {
                fail(name, "warp operation in a partial warp (block size not a multiple of 32)");
                return false;
            }
            if (other == 0) {
                for (int i = lo; i < hi; i++) L.threads[i].st = RUN;
                released = true;
            }
        }
        if (released) continue;
        if (at_warp > 0) {
            fail(name, "a warp operation is not reached by every lane of its warp "
                       "(divergent shuffle or __syncwarp, or a lane exited)");
            return false;
        }
        if (at_block > 0 && done > 0) {
            fail(name, "__syncthreads() waited on by some threads while others had exited");
            return false;
        }
        if (at_block == n - done) {
            for (int i = 0; i < n; i++)
                if (L.threads[i].st == AT_BLOCK) L.threads[i].st = RUN;
            continue;
        }
        fail(name, "deadlock");
        return false;
    }
}

}  // namespace

namespace tg_simt {
const dim3 &thread_idx() { return L.threads[L.cur].tid; }
const dim3 &block_idx() { return L.bidx; }
const dim3 &block_dim() { return L.block; }
const dim3 &grid_dim() { return L.grid; }
int lane() { return L.threads[L.cur].lin % 32; }
void check_vector_access(const void *p, const char *what) {
    if (((uintptr_t)p & 15) == 0) return;
    fprintf(stderr, "simt: misaligned 16-byte %s at %p (a GPU would fault)\n", what, p);
    abort();
}
void barrier_block() { yield_to_scheduler(AT_BLOCK); }
void barrier_warp() { yield_to_scheduler(AT_WARP); }

void exchange(const void *v, void *out, size_t n, int src) {
    int lin = L.threads[L.cur].lin, w = lin / 32, ln = lin % 32;
    memcpy(&L.slots[w][ln], v, n);
    barrier_warp();
    memcpy(out, (src >= 0 && src < 32) ? &L.slots[w][src] : &L.slots[w][ln], n);
    barrier_warp();
}

bool should_fail(const char *api) {
    if (g_fail_after < 0 || g_fail_api != api) return false;
    if (g_fail_after > 0) {
        g_fail_after--;
        return false;
    }
    g_fail_after = -1;
    return true;
}

int launch(dim3 grid, dim3 block, const std::function<void()> &body, const char *name) {
    pthread_mutex_lock(&g_launch_lock);
    g_launches++;
    int nthreads = (int)(block.x * block.y * block.z);
    cudaError_t err = cudaSuccess;
    if (should_fail("launch")) {
        err = cudaErrorLaunchFailure;
    } else if (block.x == 0 || block.y == 0 || block.z == 0 || block.x * block.y * block.z > 1024 ||
               block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
               grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
        fprintf(stderr, "simt: kernel %s: invalid configuration grid (%u, %u, %u) block (%u, %u, %u)\n",
                name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
        err = cudaErrorInvalidConfiguration;
    }
    if (err != cudaSuccess) {
        g_last = err;
        pthread_mutex_unlock(&g_launch_lock);
        return err;
    }
    while ((int)g_stacks.size() < nthreads) {
        char *s = (char *)mmap(nullptr, STACK_SIZE, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED) {
            pthread_mutex_unlock(&g_launch_lock);
            return g_last = cudaErrorMemoryAllocation;
        }
        g_stacks.push_back(s);
    }
    L.grid = grid;
    L.block = block;
    L.nthreads = nthreads;
    L.threads.resize((size_t)nthreads);
    L.body = &body;
    bool was_open = g_open;
    if (!was_open) protect_all(true);
    bool ok = true;
    for (unsigned z = 0; ok && z < grid.z; z++)
        for (unsigned y = 0; ok && y < grid.y; y++)
            for (unsigned x = 0; ok && x < grid.x; x++) {
                L.bidx = dim3(x, y, z);
                ok = run_block(name);
            }
    if (!was_open) protect_all(false);
    L.body = nullptr;
    L.cur = -1;
    if (!ok) g_last = cudaErrorLaunchFailure;
    pthread_mutex_unlock(&g_launch_lock);
    return ok ? cudaSuccess : cudaErrorLaunchFailure;
}

bool device_begin() {
    bool prev = g_open;
    if (!prev) protect_all(true);
    return prev;
}
void device_end(bool prev) {
    if (!prev) protect_all(false);
}
}  // namespace tg_simt

extern "C" void tg_simt_fail_after(const char *api, int n) {
    g_fail_api = api ? api : "";
    g_fail_after = n;
}
static const void *g_last_stream[3]; /* launch, copy, cublas */
static int stream_slot(const char *what) {
    return !strcmp(what, "launch") ? 0 : !strcmp(what, "copy") ? 1 : 2;
}
void tg_simt::note_stream(const char *what, const void *stream) {
    g_last_stream[stream_slot(what)] = stream;
}
extern "C" const void *tg_simt_last_stream(const char *what) {
    return g_last_stream[stream_slot(what)];
}

extern "C" long tg_simt_launch_count(void) { return g_launches; }
extern "C" size_t tg_simt_device_bytes(void) { return g_dev_bytes; }

/* ---- the runtime API ---------------------------------------------------------------- */

const char *tg_simt_device_name(void) { return "tapegrad simt emulator (host)"; }

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
    cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return g_last; }

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    }
    return "unknown error";
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    }
    return "cudaErrorUnknown";
}

cudaError_t cudaMalloc(void **p, size_t n) {
    pthread_mutex_lock(&g_launch_lock);
    *p = nullptr;
    if (tg_simt::should_fail("cudaMalloc")) {
        pthread_mutex_unlock(&g_launch_lock);
        return g_last = cudaErrorMemoryAllocation;
    }
    size_t len = page_round(n ? n : 1);
    void *q = mmap(nullptr, len, g_open ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (q == MAP_FAILED) {
        pthread_mutex_unlock(&g_launch_lock);
        return g_last = cudaErrorMemoryAllocation;
    }
    g_mem[(uintptr_t)q] = len;
    g_dev_bytes += len;
    *p = q;
    pthread_mutex_unlock(&g_launch_lock);
    return cudaSuccess;
}

extern "C" void *tg_simt_device_alloc(size_t n) {
    void *p = NULL;
    return cudaMalloc(&p, n) == cudaSuccess ? p : NULL;
}

extern "C" void tg_simt_device_free(void *p) { (void)cudaFree(p); }

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&g_launch_lock);
    auto it = g_mem.find((uintptr_t)p);
    if (it == g_mem.end()) {
        pthread_mutex_unlock(&g_launch_lock);
        return g_last = cudaErrorInvalidValue;
    }
    munmap(p, it->second);
    g_dev_bytes -= it->second;
    g_mem.erase(it);
    pthread_mutex_unlock(&g_launch_lock);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    pthread_mutex_lock(&g_launch_lock);
    cudaError_t e = cudaSuccess;
    bool dd = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyHostToDevice;
    bool sd = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDeviceToHost;
    if (tg_simt::should_fail("cudaMemcpy")) {
        e = cudaErrorIllegalAddress;
    } else if ((dd && !in_device(dst, n)) || (sd && !in_device(src, n)) ||
               (!dd && in_device(dst, 1)) || (!sd && in_device(src, 1))) {
        fprintf(stderr, "simt: cudaMemcpy(%p, %p, %zu, kind %d): pointer not where the kind says\n",
                dst, src, n, (int)kind);
        e = cudaErrorInvalidValue;
    } else {
        bool prev = tg_simt::device_begin();
        memmove(dst, src, n);
        tg_simt::device_end(prev);
    }
    if (e != cudaSuccess) g_last = e;
    pthread_mutex_unlock(&g_launch_lock);
    return e;
}

cudaError_t cudaMemset(void *p, int v, size_t n) {
    pthread_mutex_lock(&g_launch_lock);
    cudaError_t e = cudaSuccess;
    if (!in_device(p, n)) {
        e = g_last = cudaErrorInvalidValue;
    } else {
        bool prev = tg_simt::device_begin();
        memset(p, v, n);
        tg_simt::device_end(prev);
    }
    pthread_mutex_unlock(&g_launch_lock);
    return e;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream) {
    tg_simt::note_stream("copy", stream);
    return cudaMemcpy(dst, src, n, kind);
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t stream) {
    tg_simt::note_stream("copy", stream);
    return cudaMemset(p, v, n);
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    (void)stream;
    if (tg_simt::should_fail("cudaStreamSynchronize")) return g_last = cudaErrorLaunchFailure;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b) {
    *total_b = (size_t)16 << 30;
    *free_b = g_dev_bytes < *total_b ? *total_b - g_dev_bytes : 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetDevice(int *dev) {
    *dev = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int dev) {
    (void)dev;
    switch (attr) {
    case cudaDevAttrMultiProcessorCount: *v = 4; break;
    case cudaDevAttrMemoryClockRate: *v = 0; break;
    case cudaDevAttrGlobalMemoryBusWidth: *v = 0; break;
    default: return g_last = cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

/* ---- cuBLAS --------------------------------------------------------------------------- */

struct cublasContext {
    int magic;
    cublasMath_t math;
    cudaStream_t stream;
};

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = new cublasContext{0x5eed, CUBLAS_DEFAULT_MATH, nullptr};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    }
    return "unknown";
}
const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

namespace {
/* An operand element as the device reads it: bf16 widened, f32 rounded to
 * TF32 when the handle's math mode says so (to nearest, ties away). */
struct bf16_in {
    uint16_t bits;
};
inline double operand(float v, bool tf32) {
    if (!tf32 || !isfinite(v)) return (double)v;
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x1000u) & ~0x1fffu;
    float r;
    memcpy(&r, &u, 4);
    return (double)r;
}
inline double operand(double v, bool) { return v; }
inline double operand(bf16_in v, bool) {
    uint32_t u = (uint32_t)v.bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return (double)f;
}

/* A (and B) of element type T, C of element type R. */
template <class T, class R = T>
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const R *alpha, const T *A, int lda, long long sA, const T *B, int ldb,
                    long long sB, const R *beta, R *C, int ldc, long long sC, int batch) {
    if (!h || h->magic != 0x5eed) return CUBLAS_STATUS_NOT_INITIALIZED;
    int arow = ta == CUBLAS_OP_N ? m : k, brow = tb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (arow > 1 ? arow : 1) ||
        ldb < (brow > 1 ? brow : 1) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (tg_simt::should_fail("cublas")) return CUBLAS_STATUS_EXECUTION_FAILED;
    const bool tf32 = h->math == CUBLAS_TF32_TENSOR_OP_MATH;
    tg_simt::note_stream("cublas", h->stream);
    pthread_mutex_lock(&g_launch_lock);
    bool prev = tg_simt::device_begin();
    for (int bi = 0; bi < batch; bi++) {
        const T *a = A + bi * sA, *b = B + bi * sB;
        R *c = C + bi * sC;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int p = 0; p < k; p++) {
                    T av = ta == CUBLAS_OP_N ? a[i + (long long)p * lda] : a[p + (long long)i * lda];
                    T bv = tb == CUBLAS_OP_N ? b[p + (long long)j * ldb] : b[j + (long long)p * ldb];
                    acc += operand(av, tf32) * operand(bv, tf32);
                }
                R *cij = &c[i + (long long)j * ldc];
                /* beta == 0: C is not read (it may hold NaN), as in cuBLAS */
                *cij = (R)((double)*alpha * acc + (*beta == (R)0 ? 0.0 : (double)*beta * *cij));
            }
    }
    tg_simt::device_end(prev);
    pthread_mutex_unlock(&g_launch_lock);
    return CUBLAS_STATUS_SUCCESS;
}
}  // namespace

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const double *alpha, const double *A, int lda,
                           const double *B, int ldb, const double *beta, double *C, int ldc) {
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long sA, const float *B, int ldb, long long sB,
                                         const float *beta, float *C, int ldc, long long sC,
                                         int batch) {
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda,
                                         long long sA, const double *B, int ldb, long long sB,
                                         const double *beta, double *C, int ldc, long long sC,
                                         int batch) {
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
}

/* The mixed-type calls: bf16 operands into f32, or f32 throughout. */
static cublasStatus_t gemm_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const void *alpha, const void *A, cudaDataType at,
                              int lda, long long sA, const void *B, cudaDataType bt, int ldb,
                              long long sB, const void *beta, void *C, cudaDataType ct, int ldc,
                              long long sC, int batch, cublasComputeType_t compute) {
    if (compute != CUBLAS_COMPUTE_32F || at != bt || ct != CUDA_R_32F ||
        (at != CUDA_R_16BF && at != CUDA_R_32F))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const float *al = (const float *)alpha, *be = (const float *)beta;
    if (at == CUDA_R_32F)
        return gemm(h, ta, tb, m, n, k, al, (const float *)A, lda, sA, (const float *)B, ldb, sB,
                    be, (float *)C, ldc, sC, batch);
    return gemm(h, ta, tb, m, n, k, al, (const bf16_in *)A, lda, sA, (const bf16_in *)B, ldb, sB,
                be, (float *)C, ldc, sC, batch);
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
    (void)algo;
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0,
                   1, compute);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long sA, const void *B, cudaDataType bt,
                                          int ldb, long long sB, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long sC, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    (void)algo;
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, sA, B, bt, ldb, sB, beta, C, ct, ldc,
                   sC, batch, compute);
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t stream) {
    if (!h || h->magic != 0x5eed) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!h || h->magic != 0x5eed) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}
