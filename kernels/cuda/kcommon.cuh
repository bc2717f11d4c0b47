/* kernels/cuda/kcommon.cuh - what every kernel file shares: the launch macro
 * with its error check, strided indexing over tg__arr, grid sizing, and
 * warp / block reductions. Included by .cu files only. The same sources build
 * for a GPU (nvcc) and for the host emulator of the test suite
 * (tests/simt/), so kernels use only what both provide: no dynamic shared
 * memory, no launch chevrons outside TGK_LAUNCH, every barrier reached by
 * every thread of the block. */
#ifndef TG_KCOMMON_CUH
#define TG_KCOMMON_CUH

#include <cuda_runtime.h>
#ifndef TG_SIMT
#include <cuda_bf16.h>
#endif
#include <stdint.h>

#include "../kernel.h"
#include "tapegrad/dtype.h"
#include "cuda_internal.h"

/* `#pragma unroll` where nvcc compiles (the host build of the emulator does
 * not know it). */
#ifdef __CUDACC__
#define TGK_UNROLL _Pragma("unroll")
#else
#define TGK_UNROLL
#endif

/* Threads per block of the elementwise and row kernels (a multiple of 32). */
#define TGK_BLOCK 256
/* Most blocks a grid-stride kernel launches. */
#define TGK_MAX_GRID 8192

/* Launches kern<<<grid, block>>>(...) on the library's stream (tg__cuda_stream:
 * tg_cuda_set_stream's, the legacy default one unless set) and returns its
 * status: TG_OK, or TG_ERR_CUDA naming the kernel and this file:line. */
#ifdef TG_SIMT
#define TGK_LAUNCH(kern, grid, block, ...)                                                  \
    (::tg_simt::note_stream("launch", tg__cuda_stream()),                                   \
     tg__cuda_check(::tg_simt::launch(dim3(grid), dim3(block), [&]() { kern(__VA_ARGS__); }, \
                                      #kern),                                               \
                    "launch of " #kern, __FILE__, __LINE__))
#else
#define TGK_LAUNCH(kern, grid, block, ...)                                           \
    (kern<<<(grid), (block), 0, (cudaStream_t)tg__cuda_stream()>>>(__VA_ARGS__),     \
     tg__cuda_check((int)cudaGetLastError(), "launch of " #kern, __FILE__, __LINE__))
#endif

/* for (i over [0, n)) in a grid-stride loop: one element per thread and pass. */
#define TGK_FOR_EACH(n, i)                                                       \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

static inline unsigned tgk_grid(int64_t n, int per_block) {
    int64_t g = (n + per_block - 1) / per_block;
    if (g < 1) g = 1;
    if (g > TGK_MAX_GRID) g = TGK_MAX_GRID;
    return (unsigned)g;
}

static inline int64_t tgk_numel(const tg__arr *a) {
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
    return n;
}

/* Up to 4 operands over one iteration shape, passed by value to kernels.
 * `contig` is set when every operand is C-contiguous over the shape, so the
 * element offset is the linear index itself. */
#define TGK_MAXOP 4
struct tgk_iter {
    int ndim, nop;
    bool contig;
    int64_t n;
    int64_t shape[TG__K_MAX_DIMS];
    int64_t st[TGK_MAXOP][TG__K_MAX_DIMS];
};

/* Builds the iterator from arrays described over ops[0]'s shape (an operand
 * may be NULL or have data NULL: its strides are then 0). */
static inline tgk_iter tgk_iter_make(int nop, const tg__arr *const *ops) {
    tgk_iter it;
    const tg__arr *o = ops[0];
    it.ndim = o->ndim;
    it.nop = nop;
    it.n = tgk_numel(o);
    it.contig = true;
    for (int d = 0; d < o->ndim; d++) it.shape[d] = o->shape[d];
    for (int k = 0; k < nop; k++) {
        int64_t acc = 1;
        for (int d = o->ndim - 1; d >= 0; d--) {
            int64_t s = (ops[k] && ops[k]->data) ? ops[k]->strides[d] : 0;
            it.st[k][d] = s;
            if (o->shape[d] != 1 && s != acc) it.contig = false;
            acc *= o->shape[d];
        }
    }
    return it;
}

/* Element offsets of linear index i for the NOP operands (NOP a constant, so
 * that off[] stays in registers). */
template <int NOP>
__device__ __forceinline__ void tgk_offsets(const tgk_iter &it, int64_t i, int64_t *off) {
    TGK_UNROLL
    for (int k = 0; k < NOP; k++) off[k] = it.contig ? i : 0;
    if (it.contig) return;
    for (int d = it.ndim - 1; d >= 0; d--) {
        int64_t q = i % it.shape[d];
        i /= it.shape[d];
        TGK_UNROLL
        for (int k = 0; k < NOP; k++) off[k] += q * it.st[k][d];
    }
}

/* Offset of row r (C order over the first ndim - 1 dims) of a. */
__device__ __forceinline__ int64_t tgk_row_offset(const tg__arr &a, int64_t r) {
    int64_t off = 0;
    for (int d = a.ndim - 2; d >= 0; d--) {
        off += (r % a.shape[d]) * a.strides[d];
        r /= a.shape[d];
    }
    return off;
}

__device__ __forceinline__ bool tgk_isnan(double x) { return x != x; }

/* bfloat16 <-> f32, the rules of kernels/kernel.h. */
__device__ __forceinline__ float tgk_bf16_to_f32(uint16_t h) {
    union { unsigned u; float f; } c;
    c.u = (unsigned)h << 16;
    return c.f;
}
__device__ __forceinline__ uint16_t tgk_f32_to_bf16(float f) {
    union { float f; unsigned u; } c;
    c.f = f;
    const unsigned u = c.u;
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Reads element off of a (any dtype) as double. */
__device__ __forceinline__ double tgk_read(const void *p, int dt, int64_t off) {
    if (dt == TG_F32) return (double)((const float *)p)[off];
    if (dt == TG_F64) return ((const double *)p)[off];
    if (dt == TG_BOOL) return (double)((const uint8_t *)p)[off];
    if (dt == TG_BF16) return (double)tgk_bf16_to_f32(((const uint16_t *)p)[off]);
    return (double)((const int64_t *)p)[off];
}

/* Warp and block sums: every lane / thread gets the total. The block version
 * needs blockDim.x a multiple of 32 (at most 1024), is reached by every
 * thread, and takes a __shared__ T[32] buffer (reusable right after: the
 * first barrier waits for the previous call's readers). */
template <class T> __device__ __forceinline__ T tgk_warp_sum(T v) {
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}
template <class T> __device__ __forceinline__ T tgk_block_sum(T v, T *buf) {
    int lane = (int)(threadIdx.x % 32), w = (int)(threadIdx.x / 32), nw = (int)(blockDim.x / 32);
    v = tgk_warp_sum(v);
    __syncthreads();
    if (lane == 0) buf[w] = v;
    __syncthreads();
    return tgk_warp_sum(lane < nw ? buf[lane] : (T)0);
}

/* Rows of a tensor seen as (N, V) over its last dim (a 0-d tensor is one row
 * of length 1). */
static inline int64_t tgk_rows(const tg__arr *a, int64_t *V, int64_t *inner) {
    *V = a->ndim > 0 ? a->shape[a->ndim - 1] : 1;
    *inner = a->ndim > 0 ? a->strides[a->ndim - 1] : 1;
    int64_t n = tgk_numel(a);
    return *V > 0 ? n / *V : 0;
}

/* Runs launch(unsigned long long *dmin) -> tg_status, whose kernels lower
 * *dmin with atomicMin, on the scratch buffer initialised to ~0, and sets
 * *out to the minimum found, or -1 when nothing lowered it. */
template <class F> static tg_status tgk_report_min(int64_t *out, F launch) {
    *out = -1;
    unsigned long long *dmin, h = ~0ull;
    tg_status st = tg__cuda_scratch_acquire((void **)&dmin);
    if (st != TG_OK) return st;
    st = tg__cuda_copy_h2d(dmin, &h, sizeof h);
    if (st == TG_OK) st = launch(dmin);
    if (st == TG_OK) st = tg__cuda_copy_d2h(&h, dmin, sizeof h);
    tg__cuda_scratch_release();
    if (st == TG_OK && h != ~0ull) *out = (int64_t)h;
    return st;
}

/* 16-byte loads and stores of four floats; p must be 16-byte aligned (the
 * emulator checks). */
__device__ __forceinline__ float4 tgk_load4(const float *p) {
#ifdef TG_SIMT
    ::tg_simt::check_vector_access(p, "load");
    float4 v;
    memcpy(&v, p, sizeof v);
    return v;
#else
    return *reinterpret_cast<const float4 *>(p);
#endif
}
__device__ __forceinline__ void tgk_store4(float *p, float4 v) {
#ifdef TG_SIMT
    ::tg_simt::check_vector_access(p, "store");
    memcpy(p, &v, sizeof v);
#else
    *reinterpret_cast<float4 *>(p) = v;
#endif
}

/* Entries of a contiguous f32 row before its first 16-byte boundary. */
__device__ __forceinline__ int64_t tgk_head4(const float *x, int64_t V) {
    int64_t h = (int64_t)(((16 - ((uintptr_t)x & 15)) & 15) / 4);
    return h < V ? h : V;
}

/* 16-byte loads and stores of eight bf16 values as two float4 (elements 0-3
 * and 4-7); p must be 16-byte aligned (the emulator checks). */
__device__ __forceinline__ void tgk_load8bf(const uint16_t *p, float4 &lo, float4 &hi) {
    uint16_t h[8];
#ifdef TG_SIMT
    ::tg_simt::check_vector_access(p, "load");
    memcpy(h, p, sizeof h);
#else
    *reinterpret_cast<uint4 *>(h) = *reinterpret_cast<const uint4 *>(p);
#endif
    lo.x = tgk_bf16_to_f32(h[0]), lo.y = tgk_bf16_to_f32(h[1]);
    lo.z = tgk_bf16_to_f32(h[2]), lo.w = tgk_bf16_to_f32(h[3]);
    hi.x = tgk_bf16_to_f32(h[4]), hi.y = tgk_bf16_to_f32(h[5]);
    hi.z = tgk_bf16_to_f32(h[6]), hi.w = tgk_bf16_to_f32(h[7]);
}
__device__ __forceinline__ void tgk_store8bf(uint16_t *p, float4 lo, float4 hi) {
#if !defined(TG_SIMT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    /* the device's conversion, two floats an instruction (cvt.rn.bf16x2.f32:
     * to nearest even as tgk_f32_to_bf16; a NaN becomes the canonical one) */
    __nv_bfloat162 h2[4] = {__floats2bfloat162_rn(lo.x, lo.y), __floats2bfloat162_rn(lo.z, lo.w),
                            __floats2bfloat162_rn(hi.x, hi.y), __floats2bfloat162_rn(hi.z, hi.w)};
    *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(h2);
#else
    uint16_t h[8] = {tgk_f32_to_bf16(lo.x), tgk_f32_to_bf16(lo.y), tgk_f32_to_bf16(lo.z),
                     tgk_f32_to_bf16(lo.w), tgk_f32_to_bf16(hi.x), tgk_f32_to_bf16(hi.y),
                     tgk_f32_to_bf16(hi.z), tgk_f32_to_bf16(hi.w)};
#ifdef TG_SIMT
    ::tg_simt::check_vector_access(p, "store");
    memcpy(p, h, sizeof h);
#else
    *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(h);
#endif
#endif
}

/* Entries of a contiguous bf16 row before its first 16-byte boundary (V when
 * the row is not even 2-byte aligned: no vector path). */
__device__ __forceinline__ int64_t tgk_head8(const uint16_t *x, int64_t V) {
    if ((uintptr_t)x & 1) return V;
    int64_t h = (int64_t)(((16 - ((uintptr_t)x & 15)) & 15) / 2);
    return h < V ? h : V;
}

/* An element of type S (float, double, or uint16_t: bf16 bits) as the
 * compute type T, and back (bf16: rounded to nearest even). */
template <class T, class S> __device__ __forceinline__ T tgk_ld(const S *p) {
    if constexpr (sizeof(S) == 2) return (T)tgk_bf16_to_f32(*p);
    else return (T)*p;
}
template <class S, class T> __device__ __forceinline__ void tgk_st(S *p, T v) {
    if constexpr (sizeof(S) == 2) *p = tgk_f32_to_bf16((float)v);
    else *p = (S)v;
}

/* Offset of element i (C order over all dims) of a. */
__device__ __forceinline__ int64_t tgk_elem_offset(const tg__arr &a, int64_t i) {
    int64_t off = 0;
    for (int d = a.ndim - 1; d >= 0; d--) {
        off += (i % a.shape[d]) * a.strides[d];
        i /= a.shape[d];
    }
    return off;
}

/* The lines along dim of x and of up to two more operands of x's shape (a
 * NULL operand, or one with data NULL, has strides 0): one line per position
 * of the other dims, in C order (kernels/cuda/line.cu, sort.cu). */
struct tgk_lines {
    int k;                                    /* dims other than the line's */
    int64_t lines, n;
    int64_t shape[TG__K_MAX_DIMS];
    int64_t st[3][TG__K_MAX_DIMS];            /* x, and the two others */
    int64_t lst[3];                           /* strides along the line */
};

static inline tgk_lines tgk_lines_of(const tg__arr *x, const tg__arr *o1, const tg__arr *o2,
                                     int dim) {
    tgk_lines G;
    G.k = 0;
    const tg__arr *a[3] = {x, o1, o2};
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim) continue;
        G.shape[G.k] = x->shape[d];
        for (int i = 0; i < 3; i++) G.st[i][G.k] = a[i] && a[i]->data ? a[i]->strides[d] : 0;
        G.k++;
    }
    for (int i = 0; i < 3; i++) G.lst[i] = a[i] && a[i]->data ? a[i]->strides[dim] : 0;
    G.lines = tg__k_numel(G.k, G.shape);
    G.n = x->shape[dim];
    return G;
}

/* The offset of line l's first element in operand `which`. */
__device__ __forceinline__ int64_t tgk_line_off(const tgk_lines &G, int which, int64_t l) {
    int64_t off = 0;
    for (int d = G.k - 1; d >= 0; d--) {
        off += (l % G.shape[d]) * G.st[which][d];
        l /= G.shape[d];
    }
    return off;
}

#endif
