/* tape/tensor_impl.h - storages and their version counters, tensors, scopes,
 * shapes and views (tape/storage.c, tensor.c, scope.c, shape.c, view.c).
 * Internal (not installed); tape/core.h gathers every tape/ header for the
 * layers above. */
#ifndef TG_TAPE_TENSOR_IMPL_H
#define TG_TAPE_TENSOR_IMPL_H

#include <stdatomic.h>

#include "defs.h"
#include "tapegrad/autograd.h"
#include "tapegrad/memory.h"
#include "../kernels/kernel.h"

/* ---- storage (tape/storage.c) ------------------------------------------- */

typedef struct tg__version_event {
    const char *op;      /* "sub_" (static string) */
    const char *alt;     /* its out-of-place form for the hint ("tg_sub"), NULL if none */
    tg_site site;        /* caller of the in-place op */
    uint64_t version;    /* version after the bump */
} tg__version_event;

/* Fields of atomic types may be read and changed by several threads at once;
 * the comments (and tape/sync.h) name the lock that guards some of the rest. */
struct tg__storage {
    atomic_int refcount;
    atomic_int saved_refs;     /* saved-tensor slots holding it (saved bytes); changed under
                                  the allocator lock (tg__saved_hold / tg__saved_drop) */
    tg_device device;
    tg_mem_category cat;
    size_t nbytes;
    void *data;                /* never NULL (tg__storage_adopt: an empty tensor's NULL) */
    _Atomic uint64_t version;
    uint64_t n_events;         /* bumps recorded in total (under the history lock) */
    tg__version_event hist[TG__VERSION_HISTORY]; /* ring: hist[(k) % N] = event k (under
                                                    the history lock) */
    tg_site site;
    uint64_t id, step;
    int64_t scan;              /* index during a leak scan, -1 when not listed */
    tg__storage *reg_prev, *reg_next;
    uint64_t tl_tag;           /* memory timeline: the op that allocated it (0: none) */
    /* cat == TG_MEM_EXTERNAL (tg_from_blob): data is the caller's; release
     * (may be NULL) is called with release_ctx when the storage dies */
    void (*release)(void *ctx);
    void *release_ctx;
    tg__storage *later_next;   /* dead, its callback put off (tg__release_later) */
    _Atomic bool read_only;    /* tg_mark_read_only (one-way): nothing writes data */
};

/* `who` (may be NULL) names the op allocating it in the memory timeline. */
tg__storage *tg__storage_new(tg_site s, tg_device dev, size_t nbytes, tg_mem_category cat,
                             const char *who);
void tg__storage_retain(tg__storage *st);
/* A storage over the caller's nbytes at data on dev (TG_MEM_EXTERNAL):
 * counted, never freed; release(ctx) when it dies. data NULL (nbytes 0: an
 * empty tensor's) is stored as a valid address of no bytes: a storage's data
 * is never NULL. NULL (TG_ERR_NOMEM) on failure, when release is not called. */
tg__storage *tg__storage_adopt(tg_site s, tg_device dev, void *data, size_t nbytes,
                               void (*release)(void *ctx), void *ctx, const char *who);
void tg__storage_release(tg__storage *st);
/* ---- read-only memory (tape/readonly.c) ------------------------------------- */

/* The memory is the caller's (tg_from_blob, tg_from_dlpack) or marked
 * read-only: the library writes it only when told to by the op the user
 * called on it (an in-place op on a writable one), never on its own (a
 * gradient accumulated in place). */
static inline bool tg__storage_callers(const tg__storage *st) {
    return st->cat == TG_MEM_EXTERNAL || st->read_only;
}
/* TG_OK when `who` may write into t's memory; else TG_ERR_READONLY with a
 * message naming who, what t is to it ("the modified tensor") and t. */
tg_status tg__check_writable(const char *who, const char *what, const tg_tensor *t);

/* Bumps the version and records the event. */
void tg__storage_bump(tg__storage *st, const char *op, const char *alt, tg_site site);
/* A consistent copy of st's in-place history: the ring into hist, returns
 * the number of events recorded in total and sets *version. */
uint64_t tg__storage_history(const tg__storage *st, tg__version_event *hist, uint64_t *version);

/* ---- tensors (tape/tensor.c) ------------------------------------------------ */

struct tg_tensor {
    atomic_int refcount;
    atomic_int scope_refs;     /* references owned by open scopes (of any thread) */
    atomic_int lib_refs;       /* references held by library objects: a view's base, a
                                  leaf's .grad, a strong leaf handle, backward's list of
                                  leaves */
    tg__storage *storage;
    tg_dtype dtype;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    int64_t strides[TG_MAX_DIMS]; /* in elements */
    int64_t offset;               /* in elements */
    /* atomic: made again for a stale view while other threads read them */
    atomic_bool requires_grad; /* set on leaves by the user; true on every non-leaf. A view
                                  also requires grad when its base does (tg__req_grad) */
    _Atomic(tg__node *) grad_fn; /* owning, NULL for leaves; for a view see tg__grad_fn */
    atomic_int output_nr;      /* which output of grad_fn */
    tg_tensor *grad;           /* owning, leaves only (under the grad lock) */
    tg_tensor *pending;        /* backward scratch: gradient being accumulated (under the
                                  engine lock) */
    _Atomic(tg__leafref *) leafref; /* not owning: the handle graph edges hold on this leaf,
                                  NULL while no edge points to it (set under the leafref
                                  lock) */
    tg_tensor *grad_owner;     /* not owning: the leaf whose .grad this tensor is, or NULL */
    /* Views (PyTorch's view + in-place semantics, ops/view_inplace.c). */
    tg_tensor *view_base;      /* owning: the tensor (never itself a view) whose storage a view
                                  op's result shares; NULL for tensors that are not views */
    _Atomic uint64_t view_hist; /* view_base->hist when grad_fn was last made */
    _Atomic uint64_t view_version; /* the storage's version when the view was made (views
                                  that may not be rebased compare it, as PyTorch) */
    uint8_t view_kind;         /* tg__view_kind: how the view was created */
    _Atomic uint64_t hist;     /* bases: bumped each time a recorded in-place op (on the
                                  tensor or on one of its views) replaces grad_fn */
    char name[TG__NAME_LEN];
    tg_site site;
    uint64_t id, step;
    int64_t scan;              /* index during a leak scan, -1 when not listed */
    tg_tensor *reg_prev, *reg_next;
};

/* A new contiguous tensor with uninitialised data in category cat. NULL with
 * an error on bad shape (TG_ERR_VALUE/TG_ERR_SHAPE) or TG_ERR_NOMEM. `who` is
 * the public function name used in messages. */
tg_tensor *tg__tensor_new(tg_site s, const char *who, tg_dtype dt, int ndim,
                          const int64_t *shape, tg_mem_category cat);
/* Same on device dev (tg__tensor_new is tg__tensor_new_on(TG_CPU, ...)). */
tg_tensor *tg__tensor_new_on(tg_site s, const char *who, tg_device dev, tg_dtype dt, int ndim,
                             const int64_t *shape, tg_mem_category cat);
/* A handle on st (retained) with the given layout; no grad. NULL on NOMEM. */
tg_tensor *tg__tensor_alias(tg_site s, tg__storage *st, tg_dtype dt, int ndim,
                            const int64_t *shape, const int64_t *strides, int64_t offset);
/* A new op result on device dev (category tg__op_category(): activation, or
 * gradient while backward runs). */
tg_tensor *tg__new_output_on(tg_site s, const char *who, tg_device dev, tg_dtype dt, int ndim,
                             const int64_t *shape);
/* A zero-filled tensor on dev (category tg__op_category()). */
tg_tensor *tg__zeros_on(tg_site s, tg_device dev, tg_dtype dt, int ndim, const int64_t *shape);
void tg__tensor_release(tg_tensor *t); /* ignores scope ownership; NULL: nothing */
/* A new reference to t unless its last one is being given back (on another
 * thread): false then. For weak pointers read under the lock that their
 * target's release takes before it frees it (a leaf handle's leaf). */
bool tg__tensor_try_retain(tg_tensor *t);
/* Replaces leaf's .grad with g (taking over the caller's reference to g; NULL
 * to drop it), keeping lib_refs in step; takes the grad lock. */
void tg__set_grad(tg_tensor *leaf, tg_tensor *g);
/* The same with the grad lock held by the caller (or leaf reachable by no
 * other thread): returns the old .grad, which the caller releases. */
tg_tensor *tg__swap_grad(tg_tensor *leaf, tg_tensor *g);
/* Hands t to the innermost open scope (unless scopes are suspended); returns t. */
tg_tensor *tg__ret(tg_tensor *t);
/* Makes room in the innermost open scope for n more tensors, so that the
 * next n tg__ret calls cannot fail (a collective op hands its outputs out
 * after its last exchange, where one rank failing alone would leave the
 * others waiting later). false with TG_ERR_NOMEM. */
bool tg__ret_reserve(size_t n);
/* Hides the scopes open now (during backward and custom-function callbacks:
 * what they make is not handed to the user's scopes; scopes opened inside a
 * callback work). Returns the previous state for tg__scopes_resume. */
int tg__scopes_suspend(void);
void tg__scopes_resume(int prev);
/* Whether tg_release may give back a reference to t: always when no open
 * scope owns it; never when a scope the caller sees owns it (the reference
 * could be that scope's); when only scopes the caller does not see own it
 * (outer scopes hidden in a callback, scopes of other threads), when t has
 * a reference beyond those scopes' and the library's own (the caller's:
 * tg_contiguous and the like return their input's own handle). */
bool tg__scope_may_release(const tg_tensor *t);

bool tg__is_contiguous(const tg_tensor *t);
/* Pointer to the element at linear (C-order) position 0 = data + offset. */
static inline void *tg__ptr(const tg_tensor *t) {
    return (char *)t->storage->data + (size_t)t->offset * tg_dtype_size(t->dtype);
}
/* tg__ptr as the caller sees it (tg_data, DLPack export): NULL for a tensor
 * over the NULL that tg_from_blob took for an empty tensor. */
void *tg__user_ptr(const tg_tensor *t);
/* Normalises a possibly negative dim against ndim; -1 (and TG_ERR_DIM set,
 * message naming `who`) if out of range. */
int tg__wrap_dim(const char *who, int dim, int ndim);
bool tg__is_float(tg_dtype dt);
/* f32, f64 or bf16: the dtypes that may require grad. */
bool tg__is_floating(tg_dtype dt);
/* TG_ERR_DTYPE "who: dtype X is not supported (f32 or f64 required)", with
 * how to convert a bf16 tensor; returns the status (the _null form NULL). */
tg_status tg__dtype_unsupported(const char *who, tg_dtype dt);
void *tg__dtype_unsupported_null(const char *who, tg_dtype dt);

/* ---- shapes and strided iteration (tape/shape.c) ------------------------------ */

/* Every tensor's shape satisfies prod(max(size, 1)) <= TG__MAX_NUMEL, so that
 * element counts, strides and byte sizes of it and of any subset of its dims
 * are computed without overflow (and bytes fit in int64 for 8-byte dtypes). */
#define TG__MAX_NUMEL ((int64_t)1 << 60)
/* Checks ndim (0..8), shape (non-NULL when ndim > 0, sizes >= 0) and the
 * bound above with checked arithmetic. Returns the element count, or -1 with
 * TG_ERR_VALUE / TG_ERR_NULL / TG_ERR_SHAPE (message naming `who`). */
int64_t tg__shape_check(const char *who, int ndim, const int64_t *shape);

/* NumPy broadcasting of two shapes into out (ndim *nout). TG_ERR_SHAPE with a
 * message naming `who` when they do not broadcast. */
tg_status tg__broadcast_shapes(const char *who, int na, const int64_t *sa, int nb,
                               const int64_t *sb, int *nout, int64_t *out);
/* Strides (elements) to read t as if it had shape oshape (t broadcast to it):
 * 0 for broadcast dims. Requires t's shape to broadcast to oshape. */
void tg__broadcast_strides(const tg_tensor *t, int ndim, const int64_t *oshape,
                           int64_t *strides);
/* (The element offset of a linear index: tg__k_offset_of, kernels/kernel.h.) */

/* ---- views (tape/view.c) ------------------------------------------------------ */

typedef enum {
    TG__VIEW_DEFAULT = 0, /* made with grad mode on */
    TG__VIEW_NO_GRAD,     /* made with grad mode off */
    TG__VIEW_CUSTOM       /* returned by a custom function's forward */
} tg__view_kind;

/* Makes v (a new handle on src's storage) a view: its base is src's base, or
 * src itself when src is not a view. */
void tg__view_attach(tg_tensor *v, tg_tensor *src);
/* Sets *fn to t's grad_fn (NULL for none; borrowed), first brought up to
 * date for a view whose base's history was rebased by a recorded in-place op
 * since the view's grad_fn was made (or that had none, and whose base now
 * has one): the new grad_fn is an AsStridedBackward node routing the view's
 * gradient into its window of the base. Returns false with the error set
 * (TG_ERR_NOMEM; TG_ERR_AUTOGRAD for a view made in no-grad mode or by a
 * custom function whose storage was modified in place since: PyTorch refuses
 * those too). Threads using one stale view at once find one new grad_fn:
 * it is made under the view lock. */
bool tg__grad_fn(tg_tensor *t, tg__node **fn);
/* Whether tg__grad_fn(t) would return a node (never changes t). */
bool tg__has_grad_fn(const tg_tensor *t);
/* "was created in no-grad mode" / "was returned by a custom function's
 * forward", for a view whose kind is not TG__VIEW_DEFAULT (messages). */
const char *tg__view_kind_text(const tg_tensor *t);
/* True when some element of t is stored at the same place as another (views
 * overlap only through stride-0 dims). */
bool tg__overlaps(const tg_tensor *t);

/* A view's position relative to its base, in elements of the storage (the
 * state of the nodes that route gradients between them). */
typedef struct tg__view_geom {
    int bnd, vnd;
    int64_t bshape[TG_MAX_DIMS], bstr[TG_MAX_DIMS]; /* base */
    int64_t vshape[TG_MAX_DIMS], vstr[TG_MAX_DIMS]; /* view */
    int64_t voff; /* view offset - base offset */
    int64_t span; /* elements from the base's first to its last, inclusive */
} tg__view_geom;
void tg__view_geom_of(tg__view_geom *g, const tg_tensor *v, const tg_tensor *base);
/* For node n whose input 0 is the base: a zero buffer of g->span elements on
 * its device (the base's "storage space"), and a handle on such a buffer z
 * seen through the view's (view) or the base's geometry. NULL with the error
 * set on failure. */
tg_tensor *tg__view_space(tg__node *n, const tg__view_geom *g);
tg_tensor *tg__view_window(tg__node *n, tg_tensor *z, const tg__view_geom *g, bool view);

#endif
