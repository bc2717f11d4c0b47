/* tapegrad/tensor.h - tensors: creation, views, metadata, data in and out.
 *
 * A tg_tensor is a reference-counted handle on a storage (bytes on one device)
 * plus dtype, shape, strides (in elements) and an offset (in elements). Views
 * (slice, view, transpose, expand) share the storage, and with it the version
 * counter that in-place operations bump.
 *
 * Ownership: every function that returns a tg_tensor* returns a NEW reference
 * that the caller must give back with tg_release() - unless a scope is open
 * (see tg_scope_begin in autograd.h), in which case the scope owns it.
 * Functions taking tensors never steal the caller's reference.
 *
 * Every function returning a tensor is called through a macro (tg_zeros(...))
 * that passes the caller's file and line to the *_at function (tg_zeros_at(site,
 * ...)). Use the *_at form for function pointers or from other languages.
 *
 * Errors: NULL is returned and tg_last_status()/tg_last_error() say why. No
 * function in this header aborts or exits on bad input.
 */
#ifndef TAPEGRAD_TENSOR_H
#define TAPEGRAD_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dtype.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TG_MAX_DIMS, tg_dtype and tg_device: tapegrad/dtype.h */

typedef struct tg_tensor tg_tensor;

/* Spells a shape as the (ndim, const int64_t *shape) argument pair:
 * tg_zeros(TG_F32, TG_SHAPE(4, 8)). TG_SCALAR is the empty (0-d) shape. */
#define TG_SHAPE(...)                                                          \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                 \
        ((const int64_t[]){__VA_ARGS__})
#define TG_SCALAR 0, ((const int64_t *)0)

/* The bfloat16 bit pattern of f, rounded to nearest even (NaN stays a quiet
 * NaN with f's sign; overflow gives infinity), and back (exact). */
uint16_t tg_bf16_from_f32(float f);
float tg_bf16_to_f32(uint16_t h);

/* ---- reference counting and names ------------------------------------- */

/* Adds a reference to t and returns t (NULL passes through). Reference
 * counts are atomic: any thread may retain and release a shared tensor, and
 * the last reference frees it on whichever thread gives it back. */
tg_tensor *tg_retain(tg_tensor *t);

/* Gives back one reference. NULL is a no-op returning TG_OK. Returns
 * TG_ERR_STATE (and does nothing) while an open scope of this thread owns t:
 * which reference is given back could not be told apart, and the scope
 * releases its own at tg_scope_end(); take t out first with tg_scope_keep(),
 * or give back your own references after the scope ends. Inside a callback
 * the scopes opened outside are hidden: a result the callback received is its
 * own reference and can be given back even when a hidden scope owns another
 * reference to the same tensor. Scopes of other threads are never in the
 * way. */
tg_status tg_release(tg_tensor *t);

/* Labels t for error messages and reports (copied, truncated to 47 bytes).
 * Returns t. A NULL t keeps the first error and returns NULL. */
tg_tensor *tg_set_name(tg_tensor *t, const char *name);

/* Returns t's label, or "" if it has none (or t is NULL). Owned by t. */
const char *tg_name(const tg_tensor *t);

/* ---- creation (category "leaf" in the memory accounting) --------------- */

/* A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).
 * Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,
 * TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows). */
tg_tensor *tg_empty_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape);
tg_tensor *tg_zeros_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape);
tg_tensor *tg_ones_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape);
tg_tensor *tg_full_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape, double value);
#define tg_empty(dt, ...) tg_empty_at(TG_SITE, dt, __VA_ARGS__)
#define tg_zeros(dt, ...) tg_zeros_at(TG_SITE, dt, __VA_ARGS__)
#define tg_ones(dt, ...) tg_ones_at(TG_SITE, dt, __VA_ARGS__)
#define tg_full(dt, ...) tg_full_at(TG_SITE, dt, __VA_ARGS__)

/* 1-D tensor start, start+step, ... < end (step may be negative, not 0;
 * end == start gives an empty tensor). Errors: TG_ERR_VALUE (step 0,
 * non-finite bounds, a step pointing away from end, as PyTorch),
 * TG_ERR_NOMEM. */
tg_tensor *tg_arange_at(tg_site s, tg_dtype dt, double start, double end, double step);
#define tg_arange(dt, start, end, step) tg_arange_at(TG_SITE, dt, start, end, step)

/* A new contiguous tensor holding a copy of data (C order, dtype dt; for
 * TG_BOOL one byte per element, any non-zero byte read as true and stored
 * as 1; for TG_BF16 the uint16_t bit patterns, see tg_bf16_from_f32).
 * Errors: TG_ERR_NULL (data NULL with a non-empty shape), as tg_empty. */
tg_tensor *tg_from_data_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape,
                           const void *data);
#define tg_from_data(dt, ...) tg_from_data_at(TG_SITE, dt, __VA_ARGS__)

/* Called once, with the ctx given to tg_from_blob, when the last tensor on
 * the caller's memory is gone (its views, saved copies in a graph and .grad
 * references included), on the thread that let it go, with no lock of the
 * library held (for a storage freed by tg_backward: just before it
 * returns). It may call the library; the scopes open where it is called are
 * hidden from it, and the thread's error is restored after it. */
typedef void (*tg_release_fn)(void *ctx);

/* A tensor over memory the caller owns, without a copy (a NumPy array's
 * buffer, a DLPack tensor's data): torch.from_blob with a deleter. dev:
 * TG_CPU for a host pointer, TG_CUDA for a device pointer of the current
 * device. data: the first element, aligned to the element size; NULL is
 * accepted when the shape has no elements (what NumPy and DLPack give for an
 * empty array): the tensor then reads and writes nothing, every op takes it
 * as any empty tensor, and tg_data gives the NULL back. strides: in elements, each >= 0, ndim of them;
 * NULL for C-contiguous. release: called with ctx exactly once when the
 * storage dies, never on failure (NULL: the caller keeps the memory alive
 * longer than every tensor on it). The elements reachable through shape and
 * strides are counted as TG_MEM_EXTERNAL (live, peak, the leak checker, the
 * timeline), not allocated or freed. The result is a leaf that may require
 * grad; in-place ops on it write the caller's memory and bump its version
 * counter (memory the caller may not write: tg_mark_read_only below). Writes
 * made from outside (the other framework, the caller) are invisible to the
 * version counter: call tg_mark_modified() after one, or a graph that saved
 * the tensor computes with the new values unchecked.
 * Errors (NULL, release not called, nothing kept): TG_ERR_NULL (data NULL
 * with a non-empty shape), TG_ERR_DTYPE, TG_ERR_VALUE (ndim outside
 * [0, TG_MAX_DIMS], a negative size or stride, data not aligned to the
 * element size, a span beyond the address space), TG_ERR_SHAPE (the element
 * count overflows), TG_ERR_DEVICE (an unknown device, CUDA without a
 * device), TG_ERR_NOMEM. */
tg_tensor *tg_from_blob_at(tg_site s, tg_device dev, tg_dtype dt, int ndim, const int64_t *shape,
                           const int64_t *strides, void *data, tg_release_fn release, void *ctx);
#define tg_from_blob(dev, ...) tg_from_blob_at(TG_SITE, dev, __VA_ARGS__)

/* Marks the memory under t read-only for the library: memory the caller may
 * not write (a read-only NumPy memmap, an immutable bytes object, an array
 * with writeable=False), given through tg_from_blob or tg_from_dlpack. One-way;
 * the flag lives on the storage, so every tensor sharing it sees it: views,
 * tg_detach's result, tensors a graph saved, tensors made on it later. From
 * then on every write the library would make into that memory fails before
 * anything is written, with TG_ERR_READONLY and a message naming the op
 * called and the tensor: the in-place ops (tg_add_, tg_sub_, tg_mul_,
 * tg_div_, tg_pow_, tg_scale_, tg_copy_, tg_fill_) with t, or a view of it,
 * as the modified tensor; tg_gradcheck with it as an input that requires grad
 * (the checker perturbs its inputs in place); tg_logprob_entropy's
 * grad_into_logits on it (refused in forward, and by tg_backward when the
 * logits were marked after the forward). A gradient is never accumulated in
 * place into it (a .grad marked read-only is replaced by a new tensor
 * holding the sum; the engine never does that into the caller's memory
 * either). Reading, views, copies and saving it for backward work as before.
 * tg_mark_modified still bumps the version: it writes nothing, and the
 * memory's owner may change it (a graph that saved it must then refuse it).
 * tg_data(t) still returns the pointer (writing through it is the caller's
 * business), and tg_to_dlpack cannot pass the flag on (DLPack 0.8 has none).
 * Any tensor may be marked, library memory included. Returns TG_OK (also when
 * already marked); TG_ERR_NULL. */
tg_status tg_mark_read_only(tg_tensor *t);
/* True when t's memory was marked read-only (tg_mark_read_only); false for
 * NULL. */
bool tg_is_read_only(const tg_tensor *t);

/* Seeded random tensors (f32/f64 only). The generator (xoshiro256** seeded by
 * splitmix64, polar normal method with a fixed-arithmetic logarithm) gives the
 * same numbers for the same seed on every IEEE-754 machine.
 * tg_randn: normal(mean, std); tg_rand: uniform in [lo, hi). */
tg_tensor *tg_randn_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape,
                       uint64_t seed, double mean, double std);
tg_tensor *tg_rand_at(tg_site s, tg_dtype dt, int ndim, const int64_t *shape,
                      uint64_t seed, double lo, double hi);
#define tg_randn(dt, ...) tg_randn_at(TG_SITE, dt, __VA_ARGS__)
#define tg_rand(dt, ...) tg_rand_at(TG_SITE, dt, __VA_ARGS__)

/* A new i64 tensor of integers drawn uniformly from [low, high) (without
 * bias, any range up to the whole of int64), from the same seeded generator:
 * the same numbers for the same seed everywhere. For seeded targets, token
 * ids, indices. Errors: TG_ERR_VALUE (low >= high), as tg_empty. */
tg_tensor *tg_randint_at(tg_site s, int ndim, const int64_t *shape, uint64_t seed, int64_t low,
                         int64_t high);
#define tg_randint(...) tg_randint_at(TG_SITE, __VA_ARGS__)

/* ---- views (share storage and version counter; differentiable) ---------
 * A view remembers its base (the tensor, never a view, whose storage it
 * shares). As in PyTorch, an in-place op on a view rebases the base's history
 * (CopySlices), and a view made before such an edit of its base or of another
 * of its views gets a new grad_fn (AsStridedBackward) when next used; a view
 * requires grad when its base does. See ops.h for the in-place rules. */

/* Whether t is a view (made by a view op, shares its base's storage). False
 * for NULL. */
bool tg_is_view(const tg_tensor *t);
/* t's base (PyTorch's t._base): the tensor, never itself a view, whose
 * storage the view shares. A new reference the caller releases; NULL when t
 * is not a view (no error set). Errors: TG_ERR_NULL (t NULL). */
tg_tensor *tg_view_base(const tg_tensor *t);

/* Elements start, start+step, ... < end along dim. dim, start and end may be
 * negative (counted from the end, as in Python); start/end are clamped to
 * [0, size]. Errors: TG_ERR_DIM, TG_ERR_VALUE (step <= 0). */
tg_tensor *tg_slice_at(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t end,
                       int64_t step);
#define tg_slice(t, dim, start, end, step) tg_slice_at(TG_SITE, t, dim, start, end, step)

/* PyTorch's narrow: elements start .. start+length-1 along dim, a view.
 * start may be negative (counted from the end). Errors: TG_ERR_DIM (0-d or
 * bad dim), TG_ERR_VALUE (the range is not inside the dim). */
tg_tensor *tg_narrow_at(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t length);
#define tg_narrow(t, dim, start, length) tg_narrow_at(TG_SITE, t, dim, start, length)

/* PyTorch's select: the elements at position `index` along dim, without that
 * dim (a view; a new reference). dim and index may be negative (counted from
 * the end). Gradient: g at that position of a zero tensor of t's shape; an
 * in-place op on the result behaves as on any view. Any dtype. Errors:
 * TG_ERR_NULL, TG_ERR_DIM (t is 0-d, or dim out of range), TG_ERR_VALUE
 * (index outside [-size, size)), TG_ERR_NOMEM. */
tg_tensor *tg_select_at(tg_site s, tg_tensor *t, int dim, int64_t index);
#define tg_select(t, dim, index) tg_select_at(TG_SITE, t, dim, index)

/* The dims of t reordered: dim i of the result is dim dims[i] of t (a view;
 * ndim must be t's, each dim once, negative counted from the end). Errors:
 * TG_ERR_NULL, TG_ERR_DIM. */
tg_tensor *tg_permute_at(tg_site s, tg_tensor *t, int ndim, const int *dims);
#define tg_permute(t, ...) tg_permute_at(TG_SITE, t, __VA_ARGS__)

/* Without dim `dim` when its size is 1, else t's shape (a view either way,
 * as PyTorch's squeeze(dim)); a 0-d t takes dim 0 or -1. Errors: TG_ERR_DIM. */
tg_tensor *tg_squeeze_at(tg_site s, tg_tensor *t, int dim);
#define tg_squeeze(t, dim) tg_squeeze_at(TG_SITE, t, dim)

/* With a new size-1 dim at position dim (-(ndim+1) .. ndim), a view. Errors:
 * TG_ERR_DIM (bad dim, or t already has TG_MAX_DIMS dims). */
tg_tensor *tg_unsqueeze_at(tg_site s, tg_tensor *t, int dim);
#define tg_unsqueeze(t, dim) tg_unsqueeze_at(TG_SITE, t, dim)

/* Dims start_dim..end_dim merged into one (a 0-d t gives shape [1]); a view
 * when the strides allow, else a copy, as tg_reshape; t itself (a new
 * reference) when start_dim and end_dim are the same dim, as PyTorch.
 * Errors: TG_ERR_DIM (bad dims, start after end). */
tg_tensor *tg_flatten_at(tg_site s, tg_tensor *t, int start_dim, int end_dim);
#define tg_flatten(t, start_dim, end_dim) tg_flatten_at(TG_SITE, t, start_dim, end_dim)

/* Same data seen with a new shape (one size may be -1). Never copies.
 * Errors: TG_ERR_SHAPE (element counts differ), TG_ERR_LAYOUT (the strides do
 * not allow it without a copy: use tg_reshape). */
tg_tensor *tg_view_at(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
#define tg_view(t, ...) tg_view_at(TG_SITE, t, __VA_ARGS__)

/* Like tg_view, but copies (differentiably) when a view is impossible. */
tg_tensor *tg_reshape_at(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
#define tg_reshape(t, ...) tg_reshape_at(TG_SITE, t, __VA_ARGS__)

/* Swaps two dimensions (negative indices allowed). Errors: TG_ERR_DIM. */
tg_tensor *tg_transpose_at(tg_site s, tg_tensor *t, int d0, int d1);
#define tg_transpose(t, d0, d1) tg_transpose_at(TG_SITE, t, d0, d1)

/* Broadcast view to shape (size-1 dims get stride 0, new leading dims added;
 * -1 keeps a size). Errors: TG_ERR_SHAPE. */
tg_tensor *tg_expand_at(tg_site s, tg_tensor *t, int ndim, const int64_t *shape);
#define tg_expand(t, ...) tg_expand_at(TG_SITE, t, __VA_ARGS__)

/* t itself (new reference) if contiguous, else a contiguous copy. */
tg_tensor *tg_contiguous_at(tg_site s, tg_tensor *t);
#define tg_contiguous(t) tg_contiguous_at(TG_SITE, t)

/* A contiguous copy with its own storage (differentiable). */
tg_tensor *tg_clone_at(tg_site s, tg_tensor *t);
#define tg_clone(t) tg_clone_at(TG_SITE, t)

/* A copy converted to dtype dt (between f32, f64 and bf16 differentiable;
 * i64 and bool <-> any dtype allowed, not differentiable; to bool: != 0, NaN
 * is true; to bf16: through f32, to nearest even). Returns a new reference to
 * t if t already has dtype dt. */
tg_tensor *tg_to_dtype_at(tg_site s, tg_tensor *t, tg_dtype dt);
#define tg_to_dtype(t, dt) tg_to_dtype_at(TG_SITE, t, dt)

/* A contiguous copy of t on device dev (any strides in t), differentiable:
 * backward copies the gradient back to t's device. Returns a new reference
 * to t if t is already on dev. Copies are synchronous. Errors: TG_ERR_NULL,
 * TG_ERR_DEVICE (unknown device, no CUDA device or no CUDA backend: the
 * message says which), TG_ERR_NOMEM, TG_ERR_CUDA (a CUDA call failed; the
 * message names it). */
tg_tensor *tg_to_device_at(tg_site s, tg_tensor *t, tg_device dev);
#define tg_to_device(t, dev) tg_to_device_at(TG_SITE, t, dev)

/* ---- metadata (t must not be NULL unless stated) ------------------------ */

int tg_ndim(const tg_tensor *t);            /* -1 if t is NULL */
/* Size of dim (negative counts from the end); -1 if t is NULL or dim is out of
 * range (sets TG_ERR_DIM). */
int64_t tg_size(const tg_tensor *t, int dim);
/* Stride of dim in elements; -1 on error like tg_size. */
int64_t tg_stride(const tg_tensor *t, int dim);
const int64_t *tg_shape(const tg_tensor *t); /* borrowed, ndim entries; NULL if t NULL */
/* Strides in elements (borrowed, ndim entries; NULL if t NULL): with
 * tg_data() and tg_shape() what a DLPack or __array_interface__ export
 * needs. */
const int64_t *tg_strides(const tg_tensor *t);
int64_t tg_numel(const tg_tensor *t);        /* -1 if t is NULL */
tg_dtype tg_get_dtype(const tg_tensor *t);
tg_device tg_get_device(const tg_tensor *t);
size_t tg_dtype_size(tg_dtype dt);           /* 4, 8, 8, 1; 0 for an invalid value */
const char *tg_dtype_name(tg_dtype dt);      /* "f32", "f64", "i64", "bool", "?" */
bool tg_is_contiguous(const tg_tensor *t);
/* The version counter of t's storage (shared by views and detached copies). */
uint64_t tg_version(const tg_tensor *t);
/* True when a and b share one storage. */
bool tg_same_storage(const tg_tensor *a, const tg_tensor *b);

/* Pointer to t's first element (storage data + offset), for kernels written by
 * users (custom functions); a device pointer for a TG_CUDA tensor. Writing
 * through it does NOT bump the version counter: call tg_mark_modified()
 * afterwards, or use the in-place ops. NULL if t is NULL, and for a tensor
 * over the NULL that tg_from_blob or tg_from_dlpack took for an empty one;
 * for another tensor without elements, an address that must not be read. */
void *tg_data(tg_tensor *t);

/* ---- data out -------------------------------------------------------------- */

/* All four read TG_CUDA tensors too, by copying the elements they need to the
 * host first (then they may also fail with TG_ERR_NOMEM or TG_ERR_CUDA). */

/* Copies t's elements in C order (any strides) to dst, converting to dtype
 * dst_dt. dst_bytes is the size of dst; dst may be NULL when t has no
 * elements. Errors: TG_ERR_NULL, TG_ERR_VALUE (dst_bytes too small),
 * TG_ERR_DTYPE. */
tg_status tg_copy_out(const tg_tensor *t, tg_dtype dst_dt, void *dst, size_t dst_bytes);

/* The single element of a one-element tensor as a double. Errors: TG_ERR_NULL,
 * TG_ERR_SHAPE (numel != 1). */
tg_status tg_item(const tg_tensor *t, double *out);

/* The element at index idx[0..ndim-1] as a double. Errors: TG_ERR_NULL,
 * TG_ERR_DIM (index out of range). */
tg_status tg_get(const tg_tensor *t, const int64_t *idx, double *out);

/* Prints "name f32[2, 3] (grad_fn=MulBackward)" and up to max_elems values.
 * Errors: TG_ERR_NULL; TG_ERR_AUTOGRAD, with nothing written, when t's
 * grad_fn cannot be made (a view made in no-grad mode whose storage was
 * modified in place since: PyTorch's print refuses it too). */
tg_status tg_print(FILE *f, const tg_tensor *t, int max_elems);

#ifdef __cplusplus
}
#endif
#endif
