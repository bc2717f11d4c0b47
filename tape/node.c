/* tape/node.c - graph nodes: edges to the inputs' nodes, saved tensors with
 * their version check and the in-place error message, iterative release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/autograd.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"
#include "live_objects.h"
#include "sync.h"

bool tg__req_grad(const tg_tensor *t) {
    return t->requires_grad || t->grad_fn || (t->view_base && tg__req_grad(t->view_base));
}

bool tg__needs_grad(int n_in, tg_tensor *const *inputs) {
    if (!tg_is_grad_enabled()) return false;
    for (int i = 0; i < n_in; i++)
        if (inputs[i] && tg__req_grad(inputs[i])) return true;
    return false;
}

/* A new reference to t's leaf handle (made with the first edge). NULL on
 * NOMEM. Two threads making nodes on one leaf at once find one handle. */
static tg__leafref *leafref_of(tg_tensor *t) {
    tg__leafref *fresh = NULL, *r = NULL;
    while (!r) { /* twice at most: when the handle went between the look and the lock */
        /* a new handle is allocated before the lock is taken */
        if (!fresh && !atomic_load(&t->leafref) && !(fresh = tg__xmalloc(sizeof *fresh)))
            return NULL;
        tg__leafref_lock();
        if ((r = t->leafref)) {
            atomic_fetch_add_explicit(&r->refcount, 1, memory_order_relaxed);
        } else if (fresh) {
            r = fresh;
            fresh = NULL;
            atomic_init(&r->refcount, 1);
            r->leaf = t;
            r->strong = !t->view_base; /* a view owns its base: holding it could close a cycle */
            if (r->strong) {
                tg_retain(t);
                t->lib_refs++;
            }
            t->leafref = r;
        }
        tg__leafref_unlock();
    }
    free(fresh); /* another thread made one meanwhile */
    return r;
}

/* Makes r weak: the reference it owned on its leaf, if any, for the caller
 * to give back (not under the lock: the leaf may be freed). */
static tg_tensor *unown_locked(tg__leafref *r) {
    if (!r || !r->strong) return NULL;
    r->strong = false;
    r->leaf->lib_refs--;
    return r->leaf;
}

void tg__leafref_release(tg__leafref *r) {
    if (!r) return;
    int n = atomic_load_explicit(&r->refcount, memory_order_relaxed);
    while (n > 1) /* not the last edge: no lock */
        if (atomic_compare_exchange_weak_explicit(&r->refcount, &n, n - 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return;
    tg__leafref_lock();
    if (atomic_fetch_sub_explicit(&r->refcount, 1, memory_order_acq_rel) > 1) {
        tg__leafref_unlock(); /* another edge came meanwhile */
        return;
    }
    if (r->leaf) r->leaf->leafref = NULL;
    tg_tensor *owned = unown_locked(r);
    tg__leafref_unlock();
    tg__tensor_release(owned);
    free(r);
}

void tg__leafref_forget(tg_tensor *t) {
    tg__leafref_lock();
    tg__leafref *r = t->leafref;
    if (r) r->leaf = NULL; /* a weak handle (a strong one would have kept t alive) */
    t->leafref = NULL;
    tg__leafref_unlock();
}

tg_tensor *tg__edge_leaf_get(const tg__edge *e) {
    if (e->kind != TG__EDGE_LEAF || !e->ref) return NULL;
    tg__leafref_lock();
    tg_tensor *leaf = e->ref->leaf;
    if (leaf && !tg__tensor_try_retain(leaf)) leaf = NULL; /* dying on another thread */
    tg__leafref_unlock();
    return leaf;
}

void tg__unown_leaf_chain(tg_tensor *t) {
    tg_tensor *x = tg_retain(t);
    while (x) {
        tg_tensor *next = tg_retain(x->grad_owner);
        tg__leafref_lock();
        tg_tensor *owned = unown_locked(x->leafref);
        tg__leafref_unlock();
        tg__tensor_release(owned);
        tg__tensor_release(x);
        x = next;
    }
}

static void meta_of(tg__meta *m, const tg_tensor *t) {
    memset(m, 0, sizeof *m);
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) m->shape[d] = t->shape[d];
    m->device = t->storage->device;
}

tg__node *tg__node_new(tg_site s, const tg__op_def *op, const char *name, int n_in,
                       tg_tensor *const *inputs, int n_out) {
    /* First bring stale views up to date (their new nodes get earlier ids:
     * edges always point to nodes created before). */
    tg__node *fn[TG__MAX_IO] = {0};
    for (int i = 0; i < n_in && i < TG__MAX_IO; i++)
        if (inputs[i] && tg__req_grad(inputs[i]) && !tg__grad_fn(inputs[i], &fn[i])) return NULL;
    size_t sz = sizeof(tg__node) + (size_t)n_in * (sizeof(tg__edge) + sizeof(tg__meta)) +
                (size_t)n_out * (sizeof(tg__meta) + sizeof(tg_tensor *));
    tg__node *n = tg__xcalloc(1, sz);
    if (!n) return NULL;
    char *p = (char *)(n + 1);
    n->edge = (tg__edge *)p;
    p += (size_t)n_in * sizeof(tg__edge);
    n->in_meta = (tg__meta *)p;
    p += (size_t)n_in * sizeof(tg__meta);
    n->out_meta = (tg__meta *)p;
    p += (size_t)n_out * sizeof(tg__meta);
    n->gbuf = (tg_tensor **)p; /* [n_out], used by the backward engine */
    atomic_init(&n->refcount, 1);
    n->op = op;
    n->name = name ? name : (op ? op->name : "Backward");
    n->site = s;
    n->n_in = n_in;
    n->n_out = n_out;
    for (int i = 0; i < n_in; i++) {
        tg_tensor *t = inputs[i];
        if (!t) continue;
        meta_of(&n->in_meta[i], t);
        if (!tg__req_grad(t)) continue;
        if (fn[i]) {
            n->edge[i].kind = TG__EDGE_NODE;
            n->edge[i].node = fn[i];
            n->edge[i].output_nr = t->output_nr;
            tg__node_retain(fn[i]);
        } else if (t->requires_grad) {
            /* A leaf. (A view made in no-grad mode of a base that requires grad
             * requires grad but has neither: its gradient goes nowhere, as in
             * PyTorch.) */
            n->edge[i].ref = leafref_of(t);
            if (!n->edge[i].ref) goto fail;
            n->edge[i].kind = TG__EDGE_LEAF;
        }
    }
    tg__reg_node_add(n); /* listed once its edges are set: a leak scan may read them */
    return n;
fail:
    tg__reg_node_add(n); /* counted, for the release */
    tg__node_release(n);
    return NULL;
}

void tg__node_set_output(tg__node *n, int k, tg_tensor *out) {
    meta_of(&n->out_meta[k], out);
    tg__node_retain(n);
    out->output_nr = k;
    out->requires_grad = true;
    tg__node *old = atomic_exchange(&out->grad_fn, n);
    tg__node_release(old);
}

tg__node *tg__record(tg_site s, const tg__op_def *op, int n_in, tg_tensor *const *inputs,
                     tg_tensor *out) {
    tg__node *n = tg__node_new(s, op, op->name, n_in, inputs, 1);
    if (!n) return NULL;
    tg__node_set_output(n, 0, out);
    tg__node_release(n); /* out owns it now */
    return n;
}

int tg__node_save(tg__node *n, tg_tensor *t, bool is_output, int io) {
    if (n->n_saved == n->cap_saved) {
        int cap = n->cap_saved ? 2 * n->cap_saved : 2;
        tg__reg_lock(); /* a leak scan on another thread may be reading the slots */
        tg__saved *ns = tg__xrealloc(n->saved, (size_t)cap * sizeof *ns);
        if (ns) {
            n->saved = ns;
            n->cap_saved = cap;
        }
        tg__reg_unlock();
        if (!ns) return -1;
    }
    tg__saved *sv = &n->saved[n->n_saved];
    memset(sv, 0, sizeof *sv);
    sv->storage = t->storage;
    tg__storage_retain(t->storage);
    tg__saved_hold(t->storage);
    meta_of(&sv->meta, t);
    for (int d = 0; d < t->ndim; d++) sv->strides[d] = t->strides[d];
    sv->offset = t->offset;
    sv->version = t->storage->version;
    sv->is_output = is_output;
    sv->io_index = io;
    if (is_output) {
        sv->producer = n->name;
        sv->producer_output = io;
    } else if (t->grad_fn) {
        sv->producer = t->grad_fn->name;
        sv->producer_output = t->output_nr;
    }
    sv->leaf_requires_grad = !t->grad_fn && t->requires_grad;
    memcpy(sv->name, t->name, TG__NAME_LEN);
    sv->id = t->id;
    return n->n_saved++;
}

void tg__node_resave(tg__node *n, int i, tg_tensor *t) {
    tg__saved *sv = &n->saved[i];
    tg__storage *old = sv->storage;
    tg__storage_retain(t->storage);
    tg__saved_hold(t->storage);
    sv->storage = t->storage;
    meta_of(&sv->meta, t);
    for (int d = 0; d < t->ndim; d++) sv->strides[d] = t->strides[d];
    sv->offset = t->offset;
    sv->version = t->storage->version;
    memcpy(sv->name, t->name, TG__NAME_LEN);
    sv->id = t->id;
    if (old) {
        tg__saved_drop(old);
        tg__storage_release(old);
    }
}

/* Builds the TG_ERR_INPLACE message for slot sv of node n. */
static tg_status inplace_error(const tg__node *n, const tg__saved *sv) {
    tg__version_event ring[TG__VERSION_HISTORY]; /* a copy: other threads may bump it */
    uint64_t version;
    const uint64_t n_events = tg__storage_history(sv->storage, ring, &version);
    char shape[160], what[256], hist[1600];
    tg__shape_str(shape, sizeof shape, sv->meta.ndim, sv->meta.shape);
    if (sv->producer)
        snprintf(what, sizeof what, "which is output %d of %s", sv->producer_output, sv->producer);
    else if (sv->leaf_requires_grad)
        snprintf(what, sizeof what, "which is a leaf tensor that requires grad");
    else
        snprintf(what, sizeof what, "which does not require grad");

    /* In-place events after the save, oldest first, from the ring buffer. */
    size_t k = 0;
    hist[0] = '\0';
    uint64_t first = n_events > TG__VERSION_HISTORY ? n_events - TG__VERSION_HISTORY : 0;
    uint64_t listed = 0;
    /* the hint names each op that was used, once, with its out-of-place form */
    char hint[256];
    size_t hk = 0;
    const char *named[TG__VERSION_HISTORY];
    int n_named = 0;
    hint[0] = '\0';
    for (uint64_t e = first; e < n_events; e++) {
        const tg__version_event *ev = &ring[e % TG__VERSION_HISTORY];
        if (ev->version <= sv->version) continue;
        bool seen = false;
        for (int i = 0; i < n_named; i++) seen |= strcmp(named[i], ev->op) == 0;
        if (!seen) {
            named[n_named++] = ev->op;
            if (ev->alt)
                hk = tg__appendf(hint, sizeof hint, hk, "%s%s instead of tg_%s", hk ? ", " : "",
                                 ev->alt, ev->op);
            else
                hk = tg__appendf(hint, sizeof hint, hk, "%sthe write marked '%s' into a new tensor",
                                 hk ? ", " : "", ev->op);
        }
        k = tg__appendf(hist, sizeof hist, k, "%s%s at %s:%d (version %llu -> %llu)",
                        listed ? "; " : "", ev->op, ev->site.file ? ev->site.file : "?",
                        ev->site.line, (unsigned long long)(ev->version - 1),
                        (unsigned long long)ev->version);
        listed++;
    }
    uint64_t moved = version - sv->version;
    char lost[96] = "";
    if (moved > listed)
        snprintf(lost, sizeof lost, " (and %llu earlier ones not remembered)",
                 (unsigned long long)(moved - listed));
    if (!hk) snprintf(hint, sizeof hint, "the out-of-place form of the op");
    char role[48] = "";
    if (sv->io_index >= 0)
        snprintf(role, sizeof role, " as its %s %d", sv->is_output ? "output" : "input",
                 sv->io_index);
    return tg__set_error(
        TG_ERR_INPLACE,
        "one of the tensors needed for gradient computation has been modified by an in-place "
        "operation: [%s %s] %s, %s, saved by %s (created at %s:%d)%s, is at version %llu; "
        "expected version %llu instead. In-place operations since it was saved: %s%s. "
        "Hint: make the modification out of place (%s), or clone the tensor before modifying "
        "it.",
        tg_dtype_name(sv->meta.dtype), shape,
        tg__label((char[TG__LABEL_LEN]){0}, TG__LABEL_LEN, sv->name, sv->id), what, n->name,
        n->site.file ? n->site.file : "?", n->site.line, role,
        (unsigned long long)version, (unsigned long long)sv->version,
        listed ? hist : "(none recorded)", lost, hint);
}

/* TG_ERR_FREED for node n, whose saved state a backward released. */
static tg_status freed_error(const tg__node *n) {
    return tg__set_error(
        TG_ERR_FREED,
        "trying to backward through the graph a second time (or to access saved tensors "
        "after they have been freed): the saved tensors of %s (created at %s:%d) were freed "
        "by an earlier tg_backward. Pass retain_graph = true to the first tg_backward if "
        "you need to backward through the graph a second time.",
        n->name, n->site.file ? n->site.file : "?", n->site.line);
}

tg_status tg__node_check_saved(tg__node *n, int i) {
    if (i < 0 || i >= n->n_saved)
        return tg__set_error(TG_ERR_VALUE, "%s: no saved tensor %d (it saved %d)", n->name, i,
                             n->n_saved);
    const tg__saved *sv = &n->saved[i];
    if (!sv->storage || n->freed) return freed_error(n);
    if (sv->storage->version != sv->version) return inplace_error(n, sv);
    return TG_OK;
}

tg_status tg__node_check(tg__node *n) {
    if (n->freed && n->op && n->op->single_use) return freed_error(n);
    for (int k = 0; k < n->n_saved; k++) {
        tg_status st = tg__node_check_saved(n, k);
        if (st != TG_OK) return st;
    }
    /* as PyTorch's AccumulateGrad: a leaf this node sends a gradient to must
     * still be a leaf (an in-place op recorded on it, or on the base of a view
     * that was marked requires_grad itself, gave it a grad_fn since) */
    for (int i = 0; i < n->n_in; i++) {
        tg_tensor *leaf = tg__edge_leaf_get(&n->edge[i]);
        tg__node *fn;
        if (!leaf || !tg__has_grad_fn(leaf)) {
            tg__tensor_release(leaf);
            continue;
        }
        if (tg__grad_fn(leaf, &fn)) /* else its error stands */
            tg__set_error(TG_ERR_AUTOGRAD,
                          "tg_backward: leaf variable has been moved into the graph interior: "
                          "%s was a leaf when %s (created at %s:%d) used it as its input %d, "
                          "and has a grad_fn (%s) since (an in-place op recorded on it, or on "
                          "the base of a view of it). Use a clone or tg_detach for the "
                          "in-place op.",
                          TG__LABEL(leaf), n->name, n->site.file ? n->site.file : "?",
                          n->site.line, i, fn ? fn->name : "?");
        tg__tensor_release(leaf);
        return tg_last_status();
    }
    return TG_OK;
}

tg_tensor *tg__node_saved(tg__node *n, int i) {
    if (tg__node_check_saved(n, i) != TG_OK) return NULL;
    const tg__saved *sv = &n->saved[i];
    tg_tensor *t = tg__tensor_alias(n->site, sv->storage, sv->meta.dtype, sv->meta.ndim,
                                 sv->meta.shape, sv->strides, sv->offset);
    if (t) memcpy(t->name, sv->name, TG__NAME_LEN);
    return t;
}

void tg__node_free_saved(tg__node *n) {
    for (int i = 0; i < n->n_saved; i++) {
        tg__storage *st = n->saved[i].storage;
        if (!st) continue;
        n->saved[i].storage = NULL;
        tg__saved_drop(st);
        tg__storage_release(st);
    }
    if (n->n_saved || (n->op && n->op->single_use)) n->freed = true;
}

void tg__node_retain(tg__node *n) {
    if (n) atomic_fetch_add_explicit(&n->refcount, 1, memory_order_relaxed);
}

/* Gives back one reference to n; true when it was the last. */
static bool node_unref(tg__node *n) {
    return atomic_fetch_sub_explicit(&n->refcount, 1, memory_order_acq_rel) == 1;
}

void tg__node_release(tg__node *n) {
    if (!n || !node_unref(n)) return;
    /* Worklist through the intrusive free_next link: no recursion, no allocation. */
    tg__node *todo = n;
    n->free_next = NULL;
    while (todo) {
        tg__node *cur = todo;
        todo = cur->free_next;
        tg__reg_node_del(cur); /* first: a leak scan reads listed nodes whole */
        tg__node_free_saved(cur);
        free(cur->saved);
        for (int i = 0; i < cur->n_in; i++) {
            tg__edge *e = &cur->edge[i];
            if (e->kind == TG__EDGE_LEAF) {
                tg__leafref_release(e->ref);
            } else if (e->kind == TG__EDGE_NODE && node_unref(e->node)) {
                e->node->free_next = todo;
                todo = e->node;
            }
        }
        for (int k = 0; k < cur->n_out; k++) tg__tensor_release(cur->gbuf[k]);
        free(cur->state);
        free(cur);
    }
}
