/* tape/core.h - the core's internal structures and functions: errors,
 * memory, storages, tensors, shapes, views, graph nodes, dispatch to the
 * kernels, devices, the memory timeline's hooks and the live-object
 * registry. Used by tape/ and by the layers above it (ops/, leakcheck/);
 * it includes only the public headers and the kernel interface below it
 * (kernels/kernel.h). Not installed. Internal non-static names use the tg__
 * prefix. ops/ops_internal.h adds what only the ops share.
 */
#ifndef TG_CORE_H
#define TG_CORE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tapegrad.h"
#include "../kernels/kernel.h"

#define TG__MAX_IO 16            /* inputs/outputs of one node */
#define TG__VERSION_HISTORY 8    /* in-place events remembered per storage */
#define TG__NAME_LEN 48

#if defined(__GNUC__)
#define TG__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TG__PRINTF(a, b)
#endif

typedef struct tg__storage tg__storage;
typedef struct tg__node tg__node;
typedef struct tg__leafref tg__leafref;

/* ---- errors (tape/error.c) ----------------------------------------------- */

/* The longest message kept (with its '\0'); longer ones are cut, ending "...". */
#define TG__MSG_LEN 4096
/* Records st and the formatted message for this thread (overwriting any
 * previous error) and returns st. */
tg_status tg__set_error(tg_status st, const char *fmt, ...) TG__PRINTF(2, 3);
tg_status tg__set_errorv(tg_status st, const char *fmt, va_list ap);
/* A public op composed of others (the losses, tg_stack, ...) brackets its
 * work with prev = tg__caller_enter("tg_kl_div") ... tg__caller_leave(prev):
 * meanwhile an error set by an inner op ("tg_sub: shapes ... cannot be
 * broadcast") is recorded in the caller's name ("tg_kl_div: shapes ...
 * cannot be broadcast (in tg_sub)"), so the user always reads the op they
 * called. Nested composites keep the outermost name. */
const char *tg__caller_enter(const char *who);
void tg__caller_leave(const char *prev);
/* Same, returning NULL: `return tg__fail(TG_ERR_SHAPE, "tg_add: ...");` */
void *tg__fail(tg_status st, const char *fmt, ...) TG__PRINTF(2, 3);
/* NULL propagation: if p is NULL, records TG_ERR_NULL "fn: argument 'arg' is
 * NULL" unless an error is already pending on this thread (the first error is
 * kept), and returns true. */
bool tg__null_arg(const void *p, const char *fn, const char *arg);
/* Formats a shape as "[2, 3]" into buf (always NUL-terminated). */
const char *tg__shape_str(char *buf, size_t n, int ndim, const int64_t *shape);
/* How every message names a tensor, as the leak reports do: "tensor 'loss'"
 * when it has a name, else "tensor #12" (its id). Writes buf (n bytes,
 * TG__LABEL_LEN is enough) and returns it. */
#define TG__LABEL_LEN (TG__NAME_LEN + 32)
const char *tg__label(char *buf, size_t n, const char *name, uint64_t id);
#define TG__LABEL(t) tg__label((char[TG__LABEL_LEN]){0}, TG__LABEL_LEN, (t)->name, (t)->id)
/* Appends the formatted text to the text of length len in buf (cap bytes) and
 * returns the length to pass to the next call: never more than cap - 1, and
 * buf stays NUL-terminated (nothing is written when cap is 0; it returns 0).
 * Text that does not fit is cut, never inside a UTF-8 character, and ends
 * with "..." (as many dots as fit when cap < 4); the text is then full: the
 * return value is cap - 1 (buf may be up to 3 bytes shorter, where the cut
 * went back to the start of a character) and later calls add nothing. The
 * way to build a text piecewise: `k = tg__appendf(buf, sizeof buf, k, ...)`,
 * never `k += snprintf(...)`, whose sum can pass the end of buf. A len past
 * cap - 1 counts as full. */
size_t tg__appendf(char *buf, size_t cap, size_t len, const char *fmt, ...) TG__PRINTF(4, 5);
size_t tg__vappendf(char *buf, size_t cap, size_t len, const char *fmt, va_list ap);

/* ---- memory (tape/alloc.c) ------------------------------------------------- */

/* Allocates nbytes (>= 0; 0 gives a valid non-NULL pointer) on dev counting it
 * in category cat. NULL with TG_ERR_NOMEM on failure (or injected failure).
 * Every allocation of tensor data and of kernel workspace goes through here. */
void *tg__alloc(tg_device dev, size_t nbytes, tg_mem_category cat);
void tg__free(tg_device dev, void *p, size_t nbytes, tg_mem_category cat);
/* Book-keeping allocations (nodes, scope arrays...): not counted in the byte
 * figures, but subject to fault injection so every path is tested. */
void *tg__xmalloc(size_t n);
void *tg__xcalloc(size_t n, size_t size);
void *tg__xrealloc(void *p, size_t n);
void tg__saved_bytes_add(tg_device dev, size_t n);
void tg__saved_bytes_sub(tg_device dev, size_t n);
/* tg__alloc / tg__free naming the op that allocates the bytes (`op` may be
 * NULL: the op last named on this thread) for the memory timeline. *tag
 * receives what tg__free_op needs to name the op again at free time (0 when
 * not recording; tg__free passes TG__TL_LAST_OP). */
void *tg__alloc_op(tg_device dev, size_t nbytes, tg_mem_category cat, const char *op,
                   uint64_t *tag);
void tg__free_op(tg_device dev, void *p, size_t nbytes, tg_mem_category cat, uint64_t tag);
/* Counts memory the library does not own (tg_from_blob) as TG_MEM_EXTERNAL
 * on dev, and uncounts it: live, peak and the timeline as tg__alloc_op and
 * tg__free_op would, without allocating or freeing anything. */
void tg__external_adopt(tg_device dev, size_t nbytes, const char *op, uint64_t *tag);
void tg__external_drop(tg_device dev, size_t nbytes, uint64_t tag);
/* The allocator lock and its figures (for tg_timeline_start's first sample):
 * tg__mem_stats_locked returns NULL for an unknown device. */
void tg__mem_lock(void);
void tg__mem_unlock(void);
const tg_mem_stats *tg__mem_stats_locked(tg_device dev);

/* Category for op results: activation, or gradient while backward runs (the
 * engine sets an override); creation functions use leaf unless overridden. */
tg_mem_category tg__op_category(void);
tg_mem_category tg__creation_category(void);
/* Sets the per-thread override (TG_MEM_NCAT = none); returns the previous. */
tg_mem_category tg__set_category_override(tg_mem_category c);

/* ---- storage (tape/storage.c) ------------------------------------------- */

typedef struct tg__version_event {
    const char *op;      /* "sub_" (static string) */
    const char *alt;     /* its out-of-place form for the hint ("tg_sub"), NULL if none */
    tg_site site;        /* caller of the in-place op */
    uint64_t version;    /* version after the bump */
} tg__version_event;

struct tg__storage {
    int refcount;
    int saved_refs;            /* saved-tensor slots holding it (saved bytes) */
    tg_device device;
    tg_mem_category cat;
    size_t nbytes;
    void *data;
    uint64_t version;
    uint64_t n_events;         /* bumps recorded in total */
    tg__version_event hist[TG__VERSION_HISTORY]; /* ring: hist[(k) % N] = event k */
    tg_site site;
    uint64_t id, step;
    int64_t scan;              /* index during a leak scan, -1 when not listed */
    tg__storage *reg_prev, *reg_next;
    uint64_t tl_tag;           /* memory timeline: the op that allocated it (0: none) */
    /* cat == TG_MEM_EXTERNAL (tg_from_blob): data is the caller's; release
     * (may be NULL) is called with release_ctx when the storage dies */
    void (*release)(void *ctx);
    void *release_ctx;
};

/* `who` (may be NULL) names the op allocating it in the memory timeline. */
tg__storage *tg__storage_new(tg_site s, tg_device dev, size_t nbytes, tg_mem_category cat,
                             const char *who);
void tg__storage_retain(tg__storage *st);
/* A storage over the caller's nbytes at data on dev (TG_MEM_EXTERNAL):
 * counted, never freed; release(ctx) when it dies. NULL (TG_ERR_NOMEM) on
 * failure, when release is not called. */
tg__storage *tg__storage_adopt(tg_site s, tg_device dev, void *data, size_t nbytes,
                               void (*release)(void *ctx), void *ctx, const char *who);
void tg__storage_release(tg__storage *st);
/* Bumps the version and records the event. */
void tg__storage_bump(tg__storage *st, const char *op, const char *alt, tg_site site);

/* ---- tensors (tape/tensor.c) ------------------------------------------------ */

struct tg_tensor {
    int refcount;
    int scope_refs;            /* references owned by open scopes */
    int lib_refs;              /* references held by library objects: a view's base, a
                                  leaf's .grad, a strong leaf handle, backward's list of
                                  leaves */
    tg__storage *storage;
    tg_dtype dtype;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    int64_t strides[TG_MAX_DIMS]; /* in elements */
    int64_t offset;               /* in elements */
    bool requires_grad;        /* set on leaves by the user; true on every non-leaf. A view
                                  also requires grad when its base does (tg__req_grad) */
    tg__node *grad_fn;         /* owning, NULL for leaves; for a view see tg__grad_fn */
    int output_nr;             /* which output of grad_fn */
    tg_tensor *grad;           /* owning, leaves only */
    tg_tensor *pending;        /* backward scratch: gradient being accumulated */
    tg__leafref *leafref;      /* not owning: the handle graph edges hold on this leaf, NULL
                                  while no edge points to it */
    tg_tensor *grad_owner;     /* not owning: the leaf whose .grad this tensor is, or NULL */
    /* Views (PyTorch's view + in-place semantics, ops/view_inplace.c). */
    tg_tensor *view_base;      /* owning: the tensor (never itself a view) whose storage a view
                                  op's result shares; NULL for tensors that are not views */
    uint64_t view_hist;        /* view_base->hist when grad_fn was last made */
    uint64_t view_version;     /* the storage's version when the view was made (views
                                  that may not be rebased compare it, as PyTorch) */
    uint8_t view_kind;         /* tg__view_kind: how the view was created */
    uint64_t hist;             /* bases: bumped each time a recorded in-place op (on the
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
void tg__tensor_release(tg_tensor *t); /* ignores scope ownership */
/* Replaces leaf's .grad with g (taking over the caller's reference to g; NULL
 * to drop it), keeping lib_refs in step. */
void tg__set_grad(tg_tensor *leaf, tg_tensor *g);
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
 * could be that scope's); inside a callback, whose outer scopes are hidden,
 * when t has a reference beyond those scopes' and the library's own (the
 * callback's: tg_contiguous and the like return their input's own handle). */
bool tg__scope_may_release(const tg_tensor *t);

int64_t tg__numel(int ndim, const int64_t *shape);
bool tg__is_contiguous(const tg_tensor *t);
/* Pointer to the element at linear (C-order) position 0 = data + offset. */
static inline void *tg__ptr(const tg_tensor *t) {
    return (char *)t->storage->data + (size_t)t->offset * tg_dtype_size(t->dtype);
}
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
 * those too). */
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
/* ---- graph nodes (tape/node.c) ------------------------------------------------ */

typedef struct tg__meta {
    tg_dtype dtype;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    tg_device device;
} tg__meta;

typedef enum { TG__EDGE_NONE = 0, TG__EDGE_NODE, TG__EDGE_LEAF } tg__edge_kind;

/* The handle graph edges hold on a leaf (PyTorch's AccumulateGrad): created
 * with the first edge to the leaf, freed with the last. While `strong` it
 * owns one reference to the leaf, so a graph keeps its leaves alive (a kept
 * loss keeps its parameters and their .grad, as in PyTorch). It is made weak
 * (tg__unown_leaf_chain) when a recorded in-place op gives the leaf, or a
 * tensor the leaf owns through .grad, a history of its own: that history can
 * lead back to the leaf, and an owning reference there would close a cycle
 * (x -> grad_fn -> ... -> edge -> x). Handles on views are weak from the
 * start (a view owns its base). A weak handle's leaf sets `leaf` to NULL when
 * it dies; a gradient for it is then dropped (nobody can read it). */
struct tg__leafref {
    int refcount;      /* edges holding it */
    bool strong;
    tg_tensor *leaf;   /* owning while strong; NULL once a weakly held leaf died */
};

typedef struct tg__edge {
    tg__edge_kind kind;
    tg__node *node;    /* owning, kind NODE */
    int output_nr;     /* kind NODE */
    tg__leafref *ref;  /* owning the handle, kind LEAF */
} tg__edge;

/* The leaf an edge of kind LEAF points to, or NULL (another kind, or the
 * leaf has been freed). */
static inline tg_tensor *tg__edge_leaf(const tg__edge *e) {
    return e->kind == TG__EDGE_LEAF && e->ref ? e->ref->leaf : NULL;
}

typedef struct tg__saved {
    tg__storage *storage;       /* owning; NULL once freed */
    tg__meta meta;
    int64_t strides[TG_MAX_DIMS];
    int64_t offset;
    uint64_t version;           /* storage version at save time */
    const char *producer;       /* grad_fn name of the saved tensor, NULL if none */
    int producer_output;
    bool leaf_requires_grad;    /* a leaf that requires grad */
    bool is_output;             /* an output of the saving node */
    int io_index;               /* which input/output of the saving node, -1 if neither */
    char name[TG__NAME_LEN];
    uint64_t id;                /* the saved tensor's id (how messages name it if unnamed) */
} tg__saved;

typedef tg_status (*tg__backward_fn)(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

typedef struct tg__op_def {
    const char *name;           /* "MulBackward" */
    tg__backward_fn backward;
    /* After a backward without retain_graph the node may not run again, even
     * with nothing saved (PyTorch's CopySlices releases the function it
     * wraps): a second backward through it fails with TG_ERR_FREED. */
    bool single_use;
    /* Called for a node whose backward does not run in a backward that
     * reached it: with TG_OK when no gradient flowed into it (its input
     * gradients are all zero), and with the failure's status for every node
     * reachable from the root that had not run when a backward failed
     * (called in the order the nodes would have run, latest created first;
     * the result is then ignored, and the thread's error is the failure's
     * again afterwards). An op whose backward must meet other parties (the
     * vocab-parallel ops' collectives) does it here, so that they are not
     * left waiting. It must not need memory. NULL for the rest. */
    tg_status (*not_run)(tg__node *n, tg_status st);
} tg__op_def;

struct tg__node {
    int refcount;
    const tg__op_def *op;       /* NULL for custom functions */
    const char *name;           /* op->name or the custom function's name */
    tg_site site;
    int n_in, n_out;
    tg__edge *edge;             /* [n_in] */
    tg__meta *in_meta;          /* [n_in] */
    tg__meta *out_meta;         /* [n_out] */
    int n_saved, cap_saved;
    tg__saved *saved;           /* [n_saved] */
    bool freed;                 /* saved tensors released by backward */
    double dparam[4];           /* op parameters (scale factor, bounds...) */
    int64_t iparam[6];          /* op parameters (dim, keepdim, ...) */
    void *state;                /* custom function state (owned) */
    size_t state_bytes;
    const tg_function *fn;      /* custom function, or NULL */
    void *fn_user;
    uint64_t id, step;
    /* backward engine scratch */
    int deps;
    uint64_t mark;
    uint64_t ran;               /* the epoch of the last backward that ran it */
    tg_tensor **gbuf;           /* [n_out] gradients being accumulated */
    tg__node *free_next;        /* release worklist link */
    int64_t scan;               /* index during a leak scan, -1 when not listed */
    tg__node *reg_prev, *reg_next;
};

/* True when grad mode is on and some non-NULL input requires grad. */
bool tg__needs_grad(int n_in, tg_tensor *const *inputs);
/* PyTorch's requires_grad: a leaf's flag, any non-leaf, and a view whose base
 * requires grad. */
bool tg__req_grad(const tg_tensor *t);
/* Creates a node with edges to the inputs (retaining their grad_fn, after
 * tg__grad_fn brought a view's up to date; or a weak handle on a leaf that
 * requires grad) and their metadata. NULL with the error set on NOMEM or when
 * a view's grad_fn cannot be made (tg__grad_fn). */
tg__node *tg__node_new(tg_site s, const tg__op_def *op, const char *name, int n_in,
                       tg_tensor *const *inputs, int n_out);
/* Makes n the grad_fn of out as output k (n gains a reference). */
void tg__node_set_output(tg__node *n, int k, tg_tensor *out);
/* tg__node_new + tg__node_set_output(out, 0) for single-output ops. Returns
 * the node (owned by out) or NULL on NOMEM (error set; out untouched). */
tg__node *tg__record(tg_site s, const tg__op_def *op, int n_in, tg_tensor *const *inputs,
                     tg_tensor *out);
/* Saves t for backward: returns the slot index, -1 on NOMEM. is_output/io say
 * what t is to the node (for messages); io = -1 for neither. */
int tg__node_save(tg__node *n, tg_tensor *t, bool is_output, int io);
/* Unpacks slot i as a new tensor (no grad), checking the version: NULL with
 * TG_ERR_INPLACE (full message) or TG_ERR_FREED. */
tg_tensor *tg__node_saved(tg__node *n, int i);
/* Checks slot i without unpacking: TG_OK, TG_ERR_INPLACE or TG_ERR_FREED. */
tg_status tg__node_check_saved(tg__node *n, int i);
/* Checks that n can run backward: every saved slot, and a single-use node
 * that already ran without retain_graph. TG_OK, TG_ERR_INPLACE, TG_ERR_FREED. */
tg_status tg__node_check(tg__node *n);
/* Frees the saved tensors (after backward without retain_graph). */
void tg__node_free_saved(tg__node *n);
void tg__node_retain(tg__node *n);
void tg__leafref_release(tg__leafref *r);
/* After a recorded in-place op gave t (a tensor that is not a view) a new
 * history: makes the leaf handles of t and of the leaves owning it through
 * .grad (t's grad_owner, its grad_owner, ...) weak. The caller holds a
 * reference to t; the others may be freed here. */
void tg__unown_leaf_chain(tg_tensor *t);
/* Iterative release: chains of 10^6 nodes are freed without recursion. */
void tg__node_release(tg__node *n);

/* ---- kernels on the tensors' device (tape/dispatch.c) ----------------------
 * Each builds the descriptors of kernels/kernel.h and calls the backend of
 * the tensors' device; it returns TG_OK or the recorded error (TG_ERR_CUDA,
 * TG_ERR_NOMEM; TG_ERR_DEVICE in a build without CUDA). The device is out's
 * (the first tensor's); every operand must be on it (the ops check with
 * tg__same_device). Outputs may have any non-overlapping strides; inputs
 * are read broadcast to the output's shape. */
/* The backend table of dev; NULL for an unknown device. */
const tg__backend *tg__backend_of(tg_device dev);
/* t over its own shape (stride 0 for size-1 dims). */
tg__arr tg__arr_of(const tg_tensor *t);
/* t (NULL: data NULL) read over out's shape: broadcast, or with the explicit
 * strides st (one per dim of out) when st is not NULL. */
tg__arr tg__arr_over(const tg_tensor *t, const tg_tensor *out, const int64_t *st);
/* The last two dims of t as a batch of matrices (batch strides 0 when shared). */
tg__mat tg__mat_of(const tg_tensor *t, bool shared);
tg__mat tg__mat_t(tg__mat m);
/* True when every non-NULL tensor of ts is on one usable device; otherwise
 * TG_ERR_DEVICE naming `who` and both devices. */
bool tg__same_device(const char *who, int n, const tg_tensor *const *ts);
/* t when st is TG_OK; otherwise releases t and returns NULL (the error is
 * recorded). For `out = tg__k_ok(tg__k_binary(...), out)`. */
static inline tg_tensor *tg__k_ok(tg_status st, tg_tensor *t);
tg_status tg__k_unary(tg__unop op, tg_tensor *out, const tg_tensor *x, const int64_t *xs,
                      double p0, double p1);
tg_status tg__k_unary_grad(tg__unop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *s,
                           double p0, double p1);
tg_status tg__k_binary(tg__binop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       double p0, double p1);
tg_status tg__k_ternary(tg__terop op, tg_tensor *out, const tg_tensor *g, const tg_tensor *a,
                        const tg_tensor *b);
tg_status tg__k_where(tg_tensor *out, const tg_tensor *c, const tg_tensor *a, const tg_tensor *b);
/* The exact ops (kernels/kernel.h): out bool = test of a and b (one dtype;
 * b = a for the unary tests); out i64 = op of a and b (i64), p0/p1 clamp's
 * bounds. a and b read over out's shape (broadcast). */
tg_status tg__k_test(tg__testop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b);
tg_status tg__k_int_op(tg__intop op, tg_tensor *out, const tg_tensor *a, const tg_tensor *b,
                       int64_t p0, int64_t p1);
/* Along dim of x (ndim >= 1; kernels/line.h): out (may be NULL) and idx (i64,
 * may be NULL) new contiguous tensors of x's shape without dim (keepdim's
 * size-1 dim is allowed: same elements). scan: out contiguous with x's
 * shape; g (NULL, or broadcastable to x's shape) for the gradient scans;
 * gamma the discount of the DISC scans. */
tg_status tg__k_reduce_dim(tg__redop op, tg_tensor *out, tg_tensor *idx, const tg_tensor *x,
                           int dim);
tg_status tg__k_scan(tg__scanop op, tg_tensor *out, const tg_tensor *x, const tg_tensor *g,
                     int dim, double gamma);
tg_status tg__k_copy(tg_tensor *dst, const tg_tensor *src);
tg_status tg__k_accumulate(tg_tensor *dst, const tg_tensor *src);
tg_status tg__k_fill(tg_tensor *t, double v);
tg_status tg__k_sum_reduce(tg_tensor *out, const tg_tensor *x, const bool *red, double scale);
/* Softmax rows along dim of x (0 for a 0-d x); y, g and dx of x's shape. */
tg_status tg__k_softmax_forward(const tg_tensor *x, tg_tensor *y, int dim, bool is_log);
tg_status tg__k_softmax_backward(const tg_tensor *y, const tg_tensor *g, tg_tensor *dx, int dim,
                                 bool is_log);
tg_status tg__k_gather_find_bad(const tg_tensor *index, int64_t V, int64_t *bad);
tg_status tg__k_gather_forward(const tg_tensor *t, const tg_tensor *index, tg_tensor *out);
tg_status tg__k_gather_backward(const tg_tensor *g, const tg_tensor *index, tg_tensor *dt);
/* The stable sort along dim of x (0 for a 0-d x: one element): idx (i64) and
 * val (x's dtype, or NULL: not wanted) new contiguous tensors of x's shape. */
tg_status tg__k_argsort(tg_tensor *idx, tg_tensor *val, const tg_tensor *x, int dim,
                        bool descending);
/* dt TG_BF16: a and b bf16, c f32 (f32 sums), on a backend that has it
 * (tg__k_has_bf16_gemm; TG_ERR_DTYPE elsewhere). */
tg_status tg__k_matmul(tg_device dev, const char *who, tg_dtype dt, int nb, const int64_t *bshape,
                       const tg__mat *a, const tg__mat *b, const tg__mat *c, bool reduce,
                       bool accumulate);
bool tg__k_has_bf16_gemm(tg_device dev);
/* Whether dev's fused log-prob kernels read bf16 logits themselves (f32
 * sums and outputs, bf16 dz); else the caller gives them f32 rows. */
bool tg__k_has_bf16_lpe(tg_device dev);
/* The fused log-prob kernels (kernels/kernel.h): y contiguous i64 on z's
 * device; a rejected row is reported in *bad (its column may be
 * TG__LPE_COL_UNKNOWN: the caller looks it up). g_lp / g_H may be NULL. */
tg_status tg__k_lpe_forward(const tg_tensor *z, const tg_tensor *y, int64_t ignore, double inv_t,
                            int64_t chunk, tg_tensor *lp, tg_tensor *H, tg_tensor *stats,
                            int nstat, tg__lpe_bad *bad);
tg_status tg__k_lpe_check_rows(const tg_tensor *z, const int64_t *y, int64_t ignore,
                               double inv_t, tg__lpe_bad *bad);
tg_status tg__k_lpe_backward(const tg_tensor *z, const tg_tensor *y, int64_t ignore,
                             double inv_t, int64_t chunk, const tg_tensor *stats, int nstat,
                             const tg_tensor *g_lp, const tg_tensor *g_H,
                             const tg_tensor *g_lse, tg_tensor *dz);

static inline tg_tensor *tg__k_ok(tg_status st, tg_tensor *t) {
    if (st == TG_OK) return t;
    tg__tensor_release(t);
    return NULL;
}

/* ---- devices (tape/device.c, ops/to_device.c) ------------------------------ */

/* Host-readable elements of t: for a CPU tensor its storage data (*owned =
 * NULL, *lo = 0); for a CUDA tensor a host copy (*owned, give it to free())
 * of the storage elements [*lo, hi] that t can reach, so element offset o of
 * t (t->offset + strides...) is at index o - *lo of the result. NULL with
 * the error set (TG_ERR_NOMEM, TG_ERR_CUDA). `who` names the caller. */
const void *tg__host_elems(const char *who, const tg_tensor *t, void **owned, int64_t *lo);
/* A contiguous copy of t on dev (category tg__op_category()), recording no
 * graph; t itself (new reference) if already on dev and contiguous. */
tg_tensor *tg__device_copy(tg_site s, const char *who, tg_tensor *t, tg_device dev);
/* TG_ERR_DEVICE naming `who` unless dev is usable (CPU, or CUDA with a device
 * and the backend built in). */
tg_status tg__check_device_usable(const char *who, tg_device dev);
/* "cpu", "cuda" or "an unknown device". */
const char *tg__device_name(tg_device dev);

/* ---- memory timeline (tape/timeline.c) ------------------------------------- */

/* Nonzero while tg_timeline_start has the recorder on. The hooks below are
 * called only when tg__timeline_on() (one relaxed load and a predictable
 * branch when off); each checks again under the timeline's own lock. They
 * never fail and never touch the thread's error: when the event buffer cannot
 * grow (plain malloc, not counted, not fault-injected) the event is dropped
 * and counted. */
extern atomic_int tg__timeline_flag;
static inline bool tg__timeline_on(void) {
    return atomic_load_explicit(&tg__timeline_flag, memory_order_relaxed) != 0;
}
/* Allocation / free of nbytes in dev/cat; `after` is dev's figures after it.
 * Called with the allocator lock held (lock order: allocator, then timeline).
 * tg__tl_alloc returns the tag naming op (NULL: the op last named on this
 * thread) for tg__tl_free; tag 0 names no op, TG__TL_LAST_OP the op last
 * named on this thread. */
#define TG__TL_LAST_OP UINT64_MAX
uint64_t tg__tl_alloc(tg_device dev, tg_mem_category cat, size_t nbytes,
                      const tg_mem_stats *after, const char *op);
void tg__tl_free(tg_device dev, tg_mem_category cat, size_t nbytes, const tg_mem_stats *after,
                 uint64_t tag);
/* Saved bytes of dev changed (allocator lock held). */
void tg__tl_saved(tg_device dev, const tg_mem_stats *after);
/* A graph node run by backward on this thread: begin returns a token to give
 * to end (allocations in between are attributed to the node). */
uint64_t tg__tl_span_begin(const char *node);
void tg__tl_span_end(const char *node, uint64_t token);
/* tg_step_mark ended step `step` (label may be NULL). */
void tg__tl_step(uint64_t step, const char *label);
/* For tests: keep at most max_events events (0: no limit), dropping the rest
 * as if the buffer could not grow; and the number dropped so far. */
void tg__timeline_set_limit(size_t max_events);
uint64_t tg__timeline_dropped(void);

/* ---- registry (tape/registry.c) -------------------------------------- */
void tg__reg_tensor_add(tg_tensor *t);
void tg__reg_tensor_del(tg_tensor *t);
void tg__reg_storage_add(tg__storage *s);
void tg__reg_storage_del(tg__storage *s);
void tg__reg_node_add(tg__node *n);
void tg__reg_node_del(tg__node *n);
uint64_t tg__current_step(void);
/* Prints every live tensor, storage and node with its creation site; returns
 * the number of live objects (listed or not). */
int64_t tg__reg_dump(FILE *f);

/* For the leak scan (leakcheck/scan.c): the registry lock, the lists, and the
 * step history kept by tg_step_mark. */
void tg__reg_lock(void);
void tg__reg_unlock(void);
uint64_t tg__current_step_locked(void);
tg_tensor *tg__reg_tensors(void);
tg__storage *tg__reg_storages(void);
tg__node *tg__reg_nodes(void);
typedef struct tg__step_rec {
    uint64_t step;          /* the step that ended */
    char label[32];
    uint64_t live_bytes;    /* allocator live bytes (all devices) at the mark */
    int64_t old_nodes;      /* nodes created before this step still alive */
} tg__step_rec;
#define TG__STEP_HISTORY 16
/* Copies up to TG__STEP_HISTORY most recent records, oldest first; returns
 * how many. Call with the registry lock held. */
int tg__reg_step_history(tg__step_rec *out);

#endif
