/* kernels/cuda/cuda_internal.h - the CUDA backend's entries: the runtime
 * layer (kernels/cuda/runtime.cu: device discovery, the caching device
 * allocator, host <-> device copies, the error checks every CUDA file uses)
 * and the kernels of each family. kernels/cuda/backend.c lists them in the
 * backend table; nothing outside kernels/cuda includes this header. Included
 * by C (backend.c) and by the .cu files (compiled as C++), so everything here
 * has C linkage and uses C types only.
 *
 * No function here aborts: every CUDA / cuBLAS failure becomes TG_ERR_CUDA
 * naming the failing call, its file:line and the CUDA message.
 */
#ifndef TG_CUDA_INTERNAL_H
#define TG_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "../kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices (cudaGetDeviceCount, asked once per process). 0 when
 * there is no driver or no device: that is not an error, the CUDA error state
 * is cleared and the thread's tapegrad error is left alone. */
int tg__cuda_device_count(void);

/* Why tg__cuda_device_count() is 0 ("cudaGetDeviceCount: no CUDA-capable
 * device is detected (cudaErrorNoDevice)"); "" when a device exists. Static. */
const char *tg__cuda_unavailable_reason(void);

/* Device memory through the caching allocator: sizes are rounded up to a
 * class (multiples of 512 B below 2 MiB, of 2 MiB above) and a freed block
 * goes to its class's free list, reused by the next allocation of exactly
 * that class. On success *p is the block (at least nbytes; nbytes 0 gives a
 * valid 512 B block). Errors: TG_ERR_NOMEM (cudaMalloc out of memory, even
 * after giving the cache back), TG_ERR_CUDA (any other CUDA failure). The
 * caller must have checked tg__cuda_device_count() > 0. */
tg_status tg__cuda_alloc(void **p, size_t nbytes);
/* Puts the block allocated for nbytes back in its class's free list. */
void tg__cuda_free(void *p, size_t nbytes);
/* The same without guard bytes (the layer under tg__cuda_alloc/free). */
void tg__cuda_free_block(void *p, size_t nbytes);
/* With TAPEGRAD_CUDA_GUARD=1 in the environment (read once), every block has
 * 256 guard bytes of a fixed pattern before and after it, checked when it is
 * freed: this counts the blocks whose guards were overwritten (each also
 * printed on stderr). 0 without the variable. */
size_t tg__cuda_guard_violations(void);
/* Makes every later device block come from alloc and go back to free_fn
 * (with the library's stream and ctx), or, both NULL, from the caching
 * allocator again; empties the cache first. The caller checked that no
 * block of the library is live. Errors: TG_ERR_CUDA (emptying the cache). */
tg_status tg__cuda_set_allocator(tg_cuda_alloc_fn alloc, tg_cuda_free_fn free_fn,
                                 void *ctx);
/* Bytes in the free lists now (allocated from CUDA, not in use). */
size_t tg__cuda_cached_bytes(void);
/* cudaFree of every cached block. TG_OK, or TG_ERR_CUDA (the failing block
 * is dropped from the cache either way). TG_OK when no device. */
tg_status tg__cuda_empty_cache(void);

/* Copies of n contiguous bytes between host and device (cudaMemcpy on the
 * default stream, ordered with the kernels; they return when the host side is
 * done). Copies within the device are kernels (tg__cuda_copy). TG_OK when n
 * is 0.
 * Errors: TG_ERR_CUDA. */
tg_status tg__cuda_copy_h2d(void *dst_dev, const void *src_host, size_t n);
tg_status tg__cuda_copy_d2h(void *dst_host, const void *src_dev, size_t n);

/* A small device buffer (256 bytes) for kernels that report a value back
 * (the lowest bad row, ...), held under a lock between acquire and release.
 * Allocated once with cudaMalloc and never counted (like book-keeping).
 * Errors of acquire: TG_ERR_CUDA (the lock is not held then). */
tg_status tg__cuda_scratch_acquire(void **p);
void tg__cuda_scratch_release(void);

/* The error checks (used in .cu files): TG__CUDA_CHECK(cudaMalloc(&p, n))
 * evaluates the call once and, on failure, records TG_ERR_CUDA
 * "cudaMalloc(&p, n) failed at kernels/cuda/runtime.cu:42: out of memory
 * (cudaErrorMemoryAllocation)", clears the CUDA error state and yields the
 * status (TG_OK on success). TG__CUBLAS_CHECK is the same for a
 * cublasStatus_t. The recorders take the status as an int so that this
 * header needs no CUDA header. */
tg_status tg__cuda_check(int err, const char *call, const char *file, int line);
tg_status tg__cublas_check(int err, const char *call, const char *file, int line);
#define TG__CUDA_CHECK(call) tg__cuda_check((int)(call), #call, __FILE__, __LINE__)
#define TG__CUBLAS_CHECK(call) tg__cublas_check((int)(call), #call, __FILE__, __LINE__)

/* ---- kernels (kernels/cuda/<family>.cu) -------------------------------------
 *
 * How the C side describes an operand: a strided array over the kernel's
 * iteration shape. `data` is the device address of element (0, ..., 0) (the
 * tensor's offset applied), strides are in elements (0 for a broadcast dim,
 * negative allowed). Every operand of one elementwise call is described over
 * the same shape (the output's). Kernels launch on the default stream, so
 * they are ordered with each other and with the synchronous copies above;
 * each entry returns TG_OK or TG_ERR_CUDA naming the launch that failed (an
 * error of an earlier asynchronous kernel can surface here too). Entries do
 * no argument checks: the ops have done them. f32 is computed in f32 and f64
 * in f64, except where stated. */

/* elementwise.cu. The op codes are kernels/kernel.h's (same formulas
 * as the CPU kernels). out may have any non-overlapping strides; an input may
 * be out itself (same layout: in-place ops). */
tg_status tg__cuda_unary(int op, const tg__arr *out, const tg__arr *x, double p0,
                         double p1);
tg_status tg__cuda_unary_grad(int op, const tg__arr *out, const tg__arr *g, const tg__arr *s,
                              double p0, double p1);
tg_status tg__cuda_binary(int op, const tg__arr *out, const tg__arr *a,
                          const tg__arr *b, double p0, double p1);
tg_status tg__cuda_ternary(int op, const tg__arr *out, const tg__arr *g,
                           const tg__arr *a, const tg__arr *b);
/* out = c != 0 ? a : b; out any dtype, c any dtype (NaN is true); a or b
 * with data NULL means 0. */
tg_status tg__cuda_where(const tg__arr *out, const tg__arr *c, const tg__arr *a,
                         const tg__arr *b);
/* The exact ops: out (bool) = test op of a and b (one dtype, any); out = the
 * i64 op of a and b (i64), p0 and p1 clamp's bounds. */
tg_status tg__cuda_test(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b);
tg_status tg__cuda_int_op(int op, const tg__arr *out, const tg__arr *a, const tg__arr *b,
                          int64_t p0, int64_t p1);

/* copy.cu. out = src with dtype conversion (f32/f64/i64/bool all ways, through
 * double as the CPU does); out += src (f32/f64, same dtype); out = v. */
tg_status tg__cuda_copy(const tg__arr *out, const tg__arr *src);
tg_status tg__cuda_accumulate(const tg__arr *out, const tg__arr *src);
tg_status tg__cuda_fill(const tg__arr *out, double v);

/* line.cu. Reductions along one dim and scans (kernels/line.h). */
tg_status tg__cuda_reduce_dim(int op, const tg__arr *out, const tg__arr *idx, const tg__arr *x,
                              int dim);
tg_status tg__cuda_scan(int op, const tg__arr *out, const tg__arr *x, const tg__arr *g, int dim,
                        double gamma);

/* reduce.cu. out (contiguous, f32/f64, numel = product of x's kept dims in C
 * order) = scale * sum of x over the dims with red[d] != 0, accumulated in
 * double. 0 elements give 0 * scale. */
tg_status tg__cuda_sum_reduce(const tg__arr *out, const tg__arr *x, const bool *red,
                              double scale);

/* softmax.cu. Rows are the last dim of x (0-d: one row of length 1); y, g
 * and dx have x's shape, any strides. Row sums in double, as on the CPU. */
tg_status tg__cuda_softmax_forward(const tg__arr *x, const tg__arr *y, bool is_log);
tg_status tg__cuda_softmax_backward(const tg__arr *y, const tg__arr *g, const tg__arr *dx,
                                    bool is_log);

/* gather.cu. t (..., V) and index (..., J) i64 with t's leading shape (both
 * described over their own shapes). find_bad sets *bad to the lowest linear
 * position of an index outside [0, V), or -1. forward writes out (contiguous,
 * index's shape); backward adds g (index's shape) into dt (contiguous, t's
 * shape, zero-filled by the caller) with atomics: the order of additions,
 * and so the last bits of f32 sums of repeated indices, is not fixed. */
tg_status tg__cuda_gather_find_bad(const tg__arr *index, int64_t V, int64_t *bad);
tg_status tg__cuda_gather_forward(const tg__arr *t, const tg__arr *index, void *out);
tg_status tg__cuda_gather_backward(const tg__arr *g, const tg__arr *index, void *dt,
                                   int64_t V);

/* sort.cu. The stable sort along dim (kernels/sort.h), one thread per line;
 * idx and val as the CPU's (kernels/kernel.h, argsort). */
tg_status tg__cuda_argsort(const tg__arr *idx, const tg__arr *val, const tg__arr *x, int dim,
                           bool descending);

/* logprob.cu: the fused log-prob / entropy op (kernels/cpu/logprob.c has the
 * math; the layout of lp, H and stats is the same). z (..., V), y (N) i64 on
 * the device, contiguous. One block per row, online max / sum exp / sum
 * exp * x per thread, merged with warp shuffles; f32 rows accumulate in f32,
 * f64 rows in f64. *bad_row receives the lowest row with a NaN or +inf entry
 * or with no entry above -inf (-1 if none); the caller finds the column. */
tg_status tg__cuda_lpe_forward_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                               double inv_t, void *lp, void *H, double *stats, int nstat,
                               int64_t *bad_row);
tg_status tg__cuda_lpe_check_rows_at(const tg__arr *z, const int64_t *y, int64_t ignore,
                                  double inv_t, int64_t *bad_row);
/* g_lp / g_H / g_lse: described over z's leading shape, data NULL for zero.
 * dz: z's dtype, or bf16 for f32 z (dz_dtype says which). */
tg_status tg__cuda_lpe_backward_rows(const tg__arr *z, const int64_t *y, int64_t ignore,
                                double inv_t, const double *stats, int nstat,
                                const tg__arr *g_lp, const tg__arr *g_H, const tg__arr *g_lse,
                                void *dz, int dz_dtype);

/* matmul.cu (tg__mat: kernels/kernel.h). c[i] = a[i] @ b[i] over the nb-dim batch shape bshape, or c = sum_i a[i] @
 * b[i] when reduce; added to c when accumulate. dtype: TG_F32, TG_F64, or TG_BF16 (a and b
 * bf16, c f32, f32 sums on the tensor cores). Every operand has a unit
 * stride in one of its two dims (backend.c packs the others into device
 * workspace it counts) and c is row-major (cs == 1). K == 0 writes zeros.
 * Errors: TG_ERR_CUDA (the cuBLAS call and site), TG_ERR_SHAPE (a size or
 * leading dimension beyond cuBLAS's int range). */
/* Sets the strides of m's size-1 dims to what cuBLAS expects (they are never
 * used to address an element). */
void tg__cuda_mat_normalise(tg__mat *m);
/* Whether cuBLAS can read a normalised m in place (a unit stride in one dim,
 * the other stride within int and at least the matrix's extent). backend.c
 * packs the operands that are not. */
bool tg__cuda_mat_usable(const tg__mat *m);
tg_status tg__cuda_gemm(int dtype, int nb, const int64_t *bshape, const tg__mat *a,
                          const tg__mat *b, const tg__mat *c, bool reduce, bool accumulate);
/* The library's stream (NULL: the legacy default stream) and its change,
 * which first waits for the old stream's work (kernels/kernel.h). */
void *tg__cuda_stream(void);
tg_status tg__cuda_set_stream(void *stream);
/* Whether later f32 matmuls may use TF32 (kernels/kernel.h's set_allow_tf32). */
void tg__cuda_set_allow_tf32(bool allow);
/* Device 0's name, peak memory bandwidth in bytes/s from the memory clock
 * and bus width (0 if unknown), total and free memory, SM count (for
 * tg_cuda_get_props). TG_ERR_CUDA on failure. */
tg_status tg__cuda_get_props(char *name, size_t name_len, double *peak_bw, size_t *total,
                             size_t *free_b, int *sms);
/* Waits for every queued kernel (for timing); TG_ERR_CUDA reports an error of
 * one of them. */
tg_status tg__cuda_synchronize(void);

#ifdef __cplusplus
}
#endif
#endif
