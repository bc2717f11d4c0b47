/* tape/engine.c - tg_backward: reverse topological walk of the graph from a
 * root, gradient accumulation into nodes and leaves, freeing saved tensors.
 *
 * Order of work: (1) collect the nodes reachable from the root and count, for
 * each, the edges that point to it (iterative DFS, no recursion); (2) validate
 * the whole graph (freed saved tensors, saved tensors modified in place)
 * before computing anything; (3) run the nodes in an order where a node runs
 * only after every node that feeds it a gradient (Kahn's algorithm);
 * (4) commit the leaves' gradients only when everything succeeded. While the
 * memory timeline records, backward is a span named "tg_backward" and each
 * node run a span inside it named by the node.
 *
 * Threads: one backward runs at a time in the process (the engine lock,
 * tape/sync.h, held for all of tg_backward; recursive, so a custom backward
 * may call tg_backward), since the walk keeps its scratch in the nodes
 * (deps, mark, ran, gbuf) and the leaves (pending), which graphs on other
 * threads may share. The commit holds the grad lock too: no other thread
 * takes a reference to a .grad between the check that nobody else holds it
 * and the add into it. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/autograd.h"
#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"
#include "device.h"
#include "timeline_hooks.h"
#include "sync.h"

static _Atomic uint64_t g_epoch = 1;

typedef struct {
    void **v;
    size_t n, cap;
} ptrvec;

static bool vec_push(ptrvec *a, void *p) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        void **nv = tg__xrealloc(a->v, cap * sizeof *nv);
        if (!nv) return false;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = p;
    return true;
}

/* Ready nodes: a max-heap on creation id (latest created first). */
static bool heap_push(ptrvec *h, tg__node *n) {
    if (!vec_push(h, n)) return false;
    size_t i = h->n - 1;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (((tg__node *)h->v[p])->id >= n->id) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = n;
    return true;
}

static tg__node *heap_pop(ptrvec *h) {
    tg__node *top = h->v[0], *last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && ((tg__node *)h->v[c + 1])->id > ((tg__node *)h->v[c])->id) c++;
        if (((tg__node *)h->v[c])->id <= last->id) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

static int by_id_desc(const void *a, const void *b) {
    uint64_t x = (*(tg__node *const *)a)->id, y = (*(tg__node *const *)b)->id;
    return (x < y) - (x > y);
}

/* A backward stopped with st: each node reachable from start whose
 * backward did not run in it (ran != epoch) and that asks to be told
 * (tg__op_def.not_run) is called with st, in the order the nodes would have
 * run (latest created first). It needs no memory, since running out of it
 * is one of the failures it tells: the graph is walked through the nodes'
 * free_next link (a node reachable from a live one is never on a release
 * worklist) and the nodes to call are taken largest id first from a list
 * through the same link. Called on every failure of tg_backward, also
 * before the graph was collected (the seed or the collection could not be
 * allocated, a wrong-shaped grad). The thread's error is what it was. */
/* Where root's graph is entered when its grad_fn was not (or could not be)
 * brought up to date: a view's through its base (the view's own node would
 * only lead there), anything else's through its grad_fn. */
static tg__node *graph_of(const tg_tensor *root) {
    return root->view_base ? root->view_base->grad_fn : root->grad_fn;
}

static void tell_not_run(tg__node *start, uint64_t epoch, tg_status st) {
    if (!start) return;
    const uint64_t walk = atomic_fetch_add(&g_epoch, 1);
    tg__node *todo = start, *tell = NULL;
    start->mark = walk;
    start->free_next = NULL;
    while (todo) {
        tg__node *n = todo;
        todo = n->free_next;
        for (int e = 0; e < n->n_in; e++) {
            if (n->edge[e].kind != TG__EDGE_NODE || n->edge[e].node->mark == walk) continue;
            tg__node *c = n->edge[e].node;
            c->mark = walk;
            c->free_next = todo;
            todo = c;
        }
        if (n->op && n->op->not_run && n->ran != epoch) {
            n->free_next = tell;
            tell = n;
        }
    }
    if (!tell) return;
    char msg[TG__MSG_LEN];
    snprintf(msg, sizeof msg, "%s", tg_last_error());
    for (;;) {
        tg__node *next = NULL;
        for (tg__node *n = tell; n; n = n->free_next)
            if (n->ran != epoch && (!next || n->id > next->id)) next = n;
        if (!next) break;
        next->ran = epoch;
        /* each node is told the first failure, not what an earlier call left */
        tg__set_error(st, "%s", msg);
        (void)next->op->not_run(next, st);
    }
    tg__set_error(st, "%s", msg);
}

/* t fits m: same shape and dtype; an f32 gradient also fits a bf16 input
 * (the fused ops' gradients in f32 for bf16 parameters, by option). */
static bool same_meta(const tg_tensor *t, const tg__meta *m) {
    const bool dt_ok = t->dtype == m->dtype || (m->dtype == TG_BF16 && t->dtype == TG_F32);
    if (!dt_ok || t->ndim != m->ndim) return false;
    for (int d = 0; d < m->ndim; d++)
        if (t->shape[d] != m->shape[d]) return false;
    return true;
}

/* True when t may be modified in place: nobody else can see it, and its
 * memory is the library's own (not the caller's, as a gradient that a
 * custom backward made from a tensor over the caller's memory is, nor marked
 * read-only): such a gradient is copied before it becomes a .grad, and
 * added to out of place. */
static bool exclusive(const tg_tensor *t) {
    return t->refcount == 1 && t->storage->refcount == 1 && tg__is_contiguous(t) &&
           t->storage->saved_refs == 0 && !tg__storage_callers(t->storage);
}

/* a + b (same shape and device) in a new tensor; nothing is recorded. Of
 * one dtype, or bf16 and f32 (an f32 gradient of a bf16 input): the sum is
 * then f32. bf16 has no elementwise kernel: a copy, then accumulate. */
static tg_tensor *grad_sum(tg_site s, const tg_tensor *a, const tg_tensor *b) {
    const tg_dtype dt = a->dtype == b->dtype ? a->dtype : TG_F32;
    tg_tensor *r = tg__new_output_on(s, "tg_backward", a->storage->device, dt, a->ndim,
                                     a->shape);
    if (r && tg__is_float(dt) && a->dtype == b->dtype)
        return tg__k_ok(tg__k_binary(TG__BIN_ADD, r, a, b, 0.0, 0.0), r);
    if (r) r = tg__k_ok(tg__k_copy(r, a), r);
    return r ? tg__k_ok(tg__k_accumulate(r, b), r) : NULL;
}

/* A contiguous copy of g of its own. */
static tg_tensor *grad_copy(tg_site s, const tg_tensor *g) {
    tg_tensor *r = tg__new_output_on(s, "tg_backward", g->storage->device, g->dtype, g->ndim,
                                     g->shape);
    return r ? tg__k_ok(tg__k_copy(r, g), r) : NULL;
}

/* *slot += g, taking ownership of g. In place when *slot is exclusive. */
static tg_status accumulate(tg_site s, tg_tensor **slot, tg_tensor *g) {
    if (!*slot) {
        *slot = g;
        return TG_OK;
    }
    if (exclusive(*slot) && (*slot)->storage->device == g->storage->device &&
        ((*slot)->dtype == g->dtype || (*slot)->dtype == TG_F32)) {
        tg_status st = tg__k_accumulate(*slot, g); /* on a failed device kernel: the error */
        tg__tensor_release(g);
        return st;
    }
    tg_tensor *sum = grad_sum(s, *slot, g);
    tg__tensor_release(g);
    if (!sum) return tg_last_status();
    tg__tensor_release(*slot);
    *slot = sum;
    return TG_OK;
}

static tg_status check_root(tg_tensor *root, tg_tensor *grad) {
    char a[160], b[160];
    if (!tg__req_grad(root))
        return tg__set_error(TG_ERR_AUTOGRAD,
                             "tg_backward: %s does not require grad and has no grad_fn "
                             "(was it computed under no-grad, or only from tensors that do not "
                             "require grad?)",
                             TG__LABEL(root));
    if (!grad) {
        if (tg__k_numel(root->ndim, root->shape) != 1)
            return tg__set_error(TG_ERR_AUTOGRAD,
                                 "tg_backward: a gradient can be created implicitly only for a "
                                 "one-element root; %s has shape %s: pass grad",
                                 TG__LABEL(root), tg__shape_str(a, sizeof a, root->ndim, root->shape));
        return TG_OK;
    }
    if (grad->dtype == TG_BF16 && root->dtype != TG_BF16)
        return tg__set_error(TG_ERR_DTYPE, "tg_backward: grad is bf16 but the root is %s",
                             tg_dtype_name(root->dtype));
    if (grad->storage->device != root->storage->device)
        return tg__set_error(TG_ERR_DEVICE, "tg_backward: grad is on %s but the root is on %s",
                             tg__device_name(grad->storage->device),
                             tg__device_name(root->storage->device));
    tg__meta m = {grad->dtype, root->ndim, {0}, root->storage->device}; /* any dtype: converted */
    memcpy(m.shape, root->shape, sizeof m.shape);
    if (!same_meta(grad, &m))
        return tg__set_error(TG_ERR_SHAPE, "tg_backward: grad has shape %s but the root has %s",
                             tg__shape_str(a, sizeof a, grad->ndim, grad->shape),
                             tg__shape_str(b, sizeof b, root->ndim, root->shape));
    return TG_OK;
}

/* Commit, phase A (may fail, changes no .grad): turns the leaf's pending
 * gradient into the tensor that phase B will install or add. Both phases
 * run under the grad lock; what they release meanwhile never takes it, and
 * a release callback waits for the engine lock to go (tg__release_later). */
/* Whether phase B adds g into the leaf's .grad in place: .grad exclusive,
 * both on the CPU (adding there cannot fail), and .grad of g's dtype or f32
 * (a bf16 .grad gaining an f32 gradient is replaced by the f32 sum). */
static bool add_in_place(const tg_tensor *leaf, const tg_tensor *g) {
    return leaf->grad && exclusive(leaf->grad) && leaf->grad->storage->device == TG_CPU &&
           g->storage->device == TG_CPU &&
           (leaf->grad->dtype == g->dtype || leaf->grad->dtype == TG_F32);
}

static tg_status prepare_leaf(tg_tensor *leaf) {
    tg_tensor *g = leaf->pending;
    /* Adding in place (phase B) must not fail, so it is done only on the CPU:
     * on a device, add out of place here (a kernel failure is reported now). */
    if (leaf->grad && !add_in_place(leaf, g)) {
        /* .grad is shared (the user holds it): replace it with a new sum */
        tg_tensor *sum = grad_sum(leaf->site, leaf->grad, g);
        if (!sum) return tg_last_status();
        tg__tensor_release(g);
        leaf->pending = sum;
    } else if (!exclusive(g)) {
        tg_tensor *c = grad_copy(leaf->site, g);
        if (!c) return tg_last_status();
        tg__tensor_release(g);
        leaf->pending = c;
    }
    return TG_OK;
}

/* Commit, phase B (cannot fail). */
static void install_leaf(tg_tensor *leaf) {
    tg_tensor *g = leaf->pending;
    leaf->pending = NULL;
    if (add_in_place(leaf, g)) { /* as prepare_leaf decided */
        (void)tg__k_accumulate(leaf->grad, g); /* cannot fail on the host */
        tg__tensor_release(g);
    } else {
        tg__tensor_release(tg__swap_grad(leaf, g));
    }
}

static tg_status run_node(tg__node *n, tg_tensor **gin) {
    for (int k = 0; k < n->n_out; k++)
        if (n->gbuf[k]) goto has_grad;
    /* no gradient reached it: all its input gradients are zero */
    return n->op && n->op->not_run ? n->op->not_run(n, TG_OK) : TG_OK;
has_grad:
    if (!tg__timeline_on()) return n->op->backward(n, n->gbuf, gin);
    uint64_t token = tg__tl_span_begin(n->name); /* a span in the memory timeline */
    tg_status st = n->op->backward(n, n->gbuf, gin);
    tg__tl_span_end(n->name, token);
    return st;
}

/* The gradient backward starts from: grad (a new reference), converted to
 * the root's dtype when it has another (as PyTorch), or a one-element 1 on
 * the root's device. NULL with the error set. */
static tg_tensor *make_seed(tg_tensor *root, tg_tensor *grad) {
    if (grad && (grad->dtype == root->dtype || (root->dtype == TG_BF16 && grad->dtype == TG_F32)))
        return tg_retain(grad);
    if (grad) {
        tg_tensor *seed = tg__new_output_on(root->site, "tg_backward", root->storage->device,
                                            root->dtype == TG_BF16 ? TG_F32 : root->dtype,
                                            root->ndim, root->shape);
        return seed ? tg__k_ok(tg__k_copy(seed, grad), seed) : NULL;
    }
    tg_tensor *seed = tg__new_output_on(root->site, "tg_backward", root->storage->device,
                                        root->dtype, root->ndim, root->shape);
    return seed ? tg__k_ok(tg__k_fill(seed, 1.0), seed) : NULL;
}

/* Step (1): every node reachable from rn into *nodes, each marked with
 * epoch and its deps set to the number of edges that point to it. */
static tg_status collect(tg__node *rn, uint64_t epoch, ptrvec *nodes) {
    rn->mark = epoch;
    rn->deps = 0;
    if (!vec_push(nodes, rn)) return TG_ERR_NOMEM;
    for (size_t i = 0; i < nodes->n; i++) {
        tg__node *n = nodes->v[i];
        for (int e = 0; e < n->n_in; e++) {
            if (n->edge[e].kind != TG__EDGE_NODE) continue;
            tg__node *c = n->edge[e].node;
            if (c->mark != epoch) {
                c->mark = epoch;
                c->deps = 0;
                if (!vec_push(nodes, c)) return TG_ERR_NOMEM;
            }
            c->deps++;
        }
    }
    return TG_OK;
}

/* PyTorch's validate_outputs: the gradient node n's backward returned for
 * input i is on that input's device, of its shape and dtype. A custom
 * function's mistake is the user's (TG_ERR_DEVICE / TG_ERR_SHAPE), an op's
 * is the library's (TG_ERR_INTERNAL). */
static tg_status check_input_grad(const tg__node *n, int i, const tg_tensor *g) {
    const tg__meta *m = &n->in_meta[i];
    if (g->storage->device != m->device)
        return tg__set_error(n->fn ? TG_ERR_DEVICE : TG_ERR_INTERNAL,
                             "%s (created at %s:%d): backward returned a gradient on %s for "
                             "input %d, which is on %s",
                             n->name, n->site.file, n->site.line,
                             tg__device_name(g->storage->device), i, tg__device_name(m->device));
    if (!same_meta(g, m)) {
        char a[160], b[160];
        return tg__set_error(n->fn ? TG_ERR_SHAPE : TG_ERR_INTERNAL,
                             "%s (created at %s:%d): backward returned a %s%s gradient for "
                             "input %d, which is %s%s",
                             n->name, n->site.file, n->site.line, tg_dtype_name(g->dtype),
                             tg__shape_str(a, sizeof a, g->ndim, g->shape), i,
                             tg_dtype_name(m->dtype),
                             tg__shape_str(b, sizeof b, m->ndim, m->shape));
    }
    return TG_OK;
}

/* Hands the gradient g of n's input edge e on (taking g): into the gradient
 * buffer of the node it comes from, or into the leaf's pending gradient
 * (the leaf joins *leaves, held until the commit: a custom backward may
 * release it), or nowhere when the leaf is gone or no longer requires grad
 * (as PyTorch's AccumulateGrad: nothing added). */
static tg_status route(const tg__node *n, tg__edge *e, tg_tensor *g, ptrvec *leaves) {
    if (e->kind == TG__EDGE_NODE) return accumulate(n->site, &e->node->gbuf[e->output_nr], g);
    tg_tensor *leaf = tg__edge_leaf_get(e); /* a weakly held leaf may be going on a thread */
    if (!leaf || !tg__req_grad(leaf)) {
        tg__tensor_release(leaf);
        tg__tensor_release(g);
        return TG_OK;
    }
    if (!leaf->pending) {
        if (!vec_push(leaves, leaf)) {
            tg__tensor_release(leaf);
            tg__tensor_release(g);
            return tg_last_status();
        }
        leaf->lib_refs++; /* the list's reference: the one tg__edge_leaf_get gave */
    } else {
        tg__tensor_release(leaf); /* the list holds one */
    }
    return accumulate(n->site, &leaf->pending, g);
}

/* Step (3) for one node: runs its backward, drops its gradient buffers,
 * checks and routes the input gradients, and pushes the nodes it fed whose
 * last dependency this was on *ready. */
static tg_status run_and_route(tg__node *n, uint64_t epoch, ptrvec *ready, ptrvec *leaves,
                               bool retain_graph) {
    tg_tensor *gin[TG__MAX_IO] = {0};
    n->ran = epoch;
    tg_status st = run_node(n, gin);
    for (int k = 0; k < n->n_out; k++) {
        tg__tensor_release(n->gbuf[k]);
        n->gbuf[k] = NULL;
    }
    for (int i = 0; st == TG_OK && i < n->n_in; i++) {
        if (!gin[i]) continue;
        if (n->edge[i].kind == TG__EDGE_NONE) { /* an input without gradient: dropped now */
            tg__tensor_release(gin[i]);
            gin[i] = NULL;
            continue;
        }
        if ((st = check_input_grad(n, i, gin[i])) != TG_OK) break;
        tg_tensor *g = gin[i];
        gin[i] = NULL;
        st = route(n, &n->edge[i], g, leaves);
    }
    for (int i = 0; i < n->n_in; i++) tg__tensor_release(gin[i]);
    if (st != TG_OK) return st;
    for (int i = 0; i < n->n_in; i++) {
        tg__edge *e = &n->edge[i];
        if (e->kind == TG__EDGE_NODE && --e->node->deps == 0 && !heap_push(ready, e->node))
            return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NOMEM;
    }
    if (!retain_graph) tg__node_free_saved(n);
    return TG_OK;
}

/* Steps (1) to (4) from the root's node rn, its gradient seed (taken). */
static tg_status run_graph(tg_tensor *root, tg__node *rn, tg_tensor *seed, uint64_t epoch,
                           bool retain_graph, ptrvec *nodes, ptrvec *leaves) {
    tg_status st = collect(rn, epoch, nodes);
    if (st != TG_OK) {
        tg__tensor_release(seed);
        return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NOMEM;
    }
    /* (2) validate before computing anything, in the order the nodes would run
     * (latest created first: the first error is the one running would meet) */
    qsort(nodes->v, nodes->n, sizeof *nodes->v, by_id_desc);
    for (size_t i = 0; i < nodes->n; i++) {
        if ((st = tg__node_check(nodes->v[i])) != TG_OK) {
            tg__tensor_release(seed);
            return st;
        }
    }
    /* (3) run, latest created first among the ready ones */
    ptrvec ready = {0};
    rn->gbuf[root->output_nr] = seed;
    if (!heap_push(&ready, rn)) st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NOMEM;
    while (st == TG_OK && ready.n)
        st = run_and_route(heap_pop(&ready), epoch, &ready, leaves, retain_graph);
    free(ready.v);
    /* (4) commit the leaves: all or nothing */
    tg__grad_lock();
    for (size_t i = 0; i < leaves->n && st == TG_OK; i++) st = prepare_leaf(leaves->v[i]);
    if (st == TG_OK)
        for (size_t i = 0; i < leaves->n; i++) install_leaf(leaves->v[i]);
    tg__grad_unlock();
    return st;
}

/* A leaf root: its gradient is the seed (taken). */
static tg_status backward_leaf(tg_tensor *root, tg_tensor *seed) {
    root->pending = seed;
    tg__grad_lock();
    tg_status st = prepare_leaf(root);
    if (st == TG_OK) install_leaf(root);
    tg__grad_unlock();
    tg__tensor_release(root->pending);
    root->pending = NULL;
    return st;
}

/* After a backward: gradients still buffered (a failure) are dropped and
 * the leaves held for the commit are let go. */
static void release_work(ptrvec *nodes, ptrvec *leaves) {
    for (size_t i = 0; i < nodes->n; i++) {
        tg__node *n = nodes->v[i];
        for (int k = 0; k < n->n_out; k++) {
            tg__tensor_release(n->gbuf[k]);
            n->gbuf[k] = NULL;
        }
    }
    for (size_t i = 0; i < leaves->n; i++) {
        tg_tensor *l = leaves->v[i];
        tg__tensor_release(l->pending);
        l->pending = NULL;
        l->lib_refs--;
        tg__tensor_release(l);
    }
    free(nodes->v);
    free(leaves->v);
}

/* From root with its seed: a leaf's gradient, or the graph run. *rn: the
 * root's node once known. *told: the nodes that did not run were told of a
 * failure already (tell_not_run), before the gradient buffers went. */
static tg_status backward_from(tg_tensor *root, tg_tensor *grad, uint64_t epoch,
                               bool retain_graph, tg__node **rn, bool *told) {
    tg_tensor *seed = make_seed(root, grad);
    if (!seed) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NOMEM;
    if (!tg__grad_fn(root, rn)) { /* a view's grad_fn could not be made */
        tg__tensor_release(seed);
        return tg_last_status();
    }
    if (!*rn && !root->requires_grad) { /* a view made in no-grad mode: as PyTorch */
        tg__tensor_release(seed);
        return tg__set_error(TG_ERR_AUTOGRAD,
                             "tg_backward: %s has no grad_fn and is not a leaf that "
                             "requires grad (a view made in no-grad mode of a tensor that "
                             "requires grad: nothing can flow back from it)",
                             TG__LABEL(root));
    }
    if (!*rn) return backward_leaf(root, seed);
    ptrvec nodes = {0}, leaves = {0};
    tg_status st = run_graph(root, *rn, seed, epoch, retain_graph, &nodes, &leaves);
    if (st != TG_OK) tell_not_run(*rn, epoch, st); /* before the buffers go */
    *told = st != TG_OK;
    release_work(&nodes, &leaves);
    return st;
}

/* tg_backward with the engine lock held. */
static tg_status backward_locked(tg_tensor *root, tg_tensor *grad, bool retain_graph) {
    /* this backward's epoch: a node that ran in it has ran == epoch */
    const uint64_t epoch = atomic_fetch_add(&g_epoch, 1);
    tg_status st = check_root(root, grad);
    if (st != TG_OK) {
        tell_not_run(graph_of(root), epoch, st);
        return st;
    }
    const bool timeline = tg__timeline_on(); /* the whole backward is a span too */
    uint64_t tl_token = timeline ? tg__tl_span_begin("tg_backward") : 0;
    bool prev_grad = tg_set_grad_enabled(false);
    int prev_scopes = tg__scopes_suspend();
    tg_mem_category prev_cat = tg__set_category_override(TG_MEM_GRADIENT);

    tg__node *rn = NULL;
    bool told = false;
    st = backward_from(root, grad, epoch, retain_graph, &rn, &told);
    if (st != TG_OK && !told) tell_not_run(rn ? rn : graph_of(root), epoch, st);

    tg__set_category_override(prev_cat);
    tg__scopes_resume(prev_scopes);
    tg_set_grad_enabled(prev_grad);
    if (timeline) tg__tl_span_end("tg_backward", tl_token);
    return st;
}

tg_status tg_backward(tg_tensor *root, tg_tensor *grad, bool retain_graph) {
    if (tg__null_arg(root, "tg_backward", "root")) return tg_last_status();
    tg__engine_lock();
    tg_status st = backward_locked(root, grad, retain_graph);
    tg__engine_unlock(); /* then the release callbacks put off meanwhile run */
    return st;
}
