/* tape/node.h - graph nodes: edges, saved tensors, op definitions
 * (tape/node.c, engine.c). Internal (not installed); tape/core.h gathers
 * every tape/ header for the layers above. */
#ifndef TG_TAPE_NODE_H
#define TG_TAPE_NODE_H

#include "tensor_impl.h"

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
 * it dies; a gradient for it is then dropped (nobody can read it).
 * Threads: the handle is made, found (the leaf's `leafref`), made weak and
 * freed under the leafref lock, and `strong` and `leaf` change only under
 * it; `refcount` reaches 0 only under it. */
struct tg__leafref {
    atomic_int refcount; /* edges holding it */
    bool strong;
    tg_tensor *leaf;     /* owning while strong; NULL once a weakly held leaf died */
};

typedef struct tg__edge {
    tg__edge_kind kind;
    tg__node *node;    /* owning, kind NODE */
    int output_nr;     /* kind NODE */
    tg__leafref *ref;  /* owning the handle, kind LEAF */
} tg__edge;

/* The leaf an edge of kind LEAF points to, or NULL (another kind, or the
 * leaf has been freed). Borrowed: for readers holding the leafref lock
 * (tg__quiesce_begin); others use tg__edge_leaf_get. */
static inline tg_tensor *tg__edge_leaf(const tg__edge *e) {
    return e->kind == TG__EDGE_LEAF && e->ref ? e->ref->leaf : NULL;
}
/* The same as a new reference (NULL when the leaf is gone or going: its
 * last reference is being given back on another thread). */
tg_tensor *tg__edge_leaf_get(const tg__edge *e);

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
    atomic_int refcount;
    const tg__op_def *op;       /* NULL for custom functions */
    const char *name;           /* op->name or the custom function's name */
    tg_site site;
    int n_in, n_out;
    tg__edge *edge;             /* [n_in] */
    tg__meta *in_meta;          /* [n_in] */
    tg__meta *out_meta;         /* [n_out] */
    /* a leak scan may read the slots while an op saves: a slot is filled
     * before n_saved counts it, and `saved` moves under the registry lock */
    atomic_int n_saved;
    int cap_saved;
    tg__saved *saved;           /* [n_saved] */
    bool freed;                 /* saved tensors released by backward (under the engine
                                   lock) */
    double dparam[4];           /* op parameters (scale factor, bounds...) */
    int64_t iparam[6];          /* op parameters (dim, keepdim, ...) */
    void *state;                /* custom function state (owned) */
    size_t state_bytes;
    const tg_function *fn;      /* custom function, or NULL */
    void *fn_user;
    uint64_t id, step;
    /* backward engine scratch (under the engine lock) */
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
/* Slot i (an output of n) now holds t as it is now: its storage, layout and
 * version. For an op whose result was written into t in place (pow_ saves
 * its result, t, as PyTorch). Cannot fail. */
void tg__node_resave(tg__node *n, int i, tg_tensor *t);
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
/* For t dying (its last reference given back): its weak handle, if any,
 * forgets it, so edges see the leaf is gone. */
void tg__leafref_forget(tg_tensor *t);
/* After a recorded in-place op gave t (a tensor that is not a view) a new
 * history: makes the leaf handles of t and of the leaves owning it through
 * .grad (t's grad_owner, its grad_owner, ...) weak. The caller holds a
 * reference to t; the others may be freed here. */
void tg__unown_leaf_chain(tg_tensor *t);
/* Iterative release: chains of 10^6 nodes are freed without recursion. */
void tg__node_release(tg__node *n);

#endif
