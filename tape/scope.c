/* tape/scope.c - scopes (autorelease pools): tensors returned by the public
 * API while a scope is open are owned by the innermost scope and released at
 * tg_scope_end, unless taken out with tg_scope_keep. */
#include <stdlib.h>
#include <string.h>

#include "tapegrad/autograd.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "dispatch.h"

typedef struct {
    tg_tensor **t; // (n) owned references
    size_t n, cap;
} scope;

static _Thread_local scope *tl_scopes; // (tl_depth)
static _Thread_local int tl_depth, tl_cap;
/* Scopes at depth <= tl_floor are hidden: the backward engine and custom
 * function callbacks raise the floor so that tensors they make are not handed
 * to the user's scopes, while scopes opened inside a callback still work. */
static _Thread_local int tl_floor;

int tg__scopes_suspend(void) {
    int prev = tl_floor;
    tl_floor = tl_depth;
    return prev;
}
void tg__scopes_resume(int prev) { tl_floor = prev; }

bool tg__scope_may_release(const tg_tensor *t) {
    if (t->scope_refs == 0) return true;
    for (int d = tl_floor; d < tl_depth; d++) /* a scope the caller sees owns it */
        for (size_t i = 0; i < tl_scopes[d].n; i++)
            if (tl_scopes[d].t[i] == t) return false;
    /* Every scope reference belongs to a hidden (outer) scope of a callback
     * or to another thread's scope: a reference beyond those and the
     * library's own is the caller's. Read in this order the counts never
     * make one up while other threads move them: a reference is counted in
     * refcount before scope_refs or lib_refs, and leaves it after them. */
    const int scoped = t->scope_refs, lib = t->lib_refs;
    return t->refcount - lib > scoped;
}

static bool reserve(scope *sc, size_t extra) {
    if (sc->n + extra <= sc->cap) return true;
    size_t cap = sc->cap ? 2 * sc->cap : 32;
    while (cap < sc->n + extra) cap *= 2;
    tg_tensor **nt = tg__xrealloc(sc->t, cap * sizeof *nt);
    if (!nt) return false;
    sc->t = nt;
    sc->cap = cap;
    return true;
}

bool tg__ret_reserve(size_t n) {
    if (tl_depth <= tl_floor) return true;
    if (reserve(&tl_scopes[tl_depth - 1], n)) return true;
    tg__set_error(TG_ERR_NOMEM, "out of memory: the scope cannot take %zu more tensors", n);
    return false;
}

tg_tensor *tg__ret(tg_tensor *t) {
    if (!t || tl_depth <= tl_floor) return t;
    scope *sc = &tl_scopes[tl_depth - 1];
    if (!reserve(sc, 1)) {
        tg__tensor_release(t); /* the caller would never release it */
        return NULL;
    }
    sc->t[sc->n++] = t;
    t->scope_refs++;
    return t;
}

int tg_scope_begin(void) {
    if (tl_depth == tl_cap) {
        int cap = tl_cap ? 2 * tl_cap : 8;
        scope *ns = tg__xrealloc(tl_scopes, (size_t)cap * sizeof *ns);
        if (!ns) return -1;
        tl_scopes = ns;
        tl_cap = cap;
    }
    memset(&tl_scopes[tl_depth], 0, sizeof(scope));
    return ++tl_depth;
}

tg_status tg_scope_end(int token) {
    if (tl_depth <= tl_floor || token != tl_depth)
        return tg__set_error(TG_ERR_STATE, "tg_scope_end: token %d does not match the innermost "
                                           "open scope (depth %d)", token, tl_depth);
    /* the array is read again after each release: a release callback may
     * open scopes of its own, which can move it (it sees none of these) */
    const int d = tl_depth - 1;
    for (size_t i = tl_scopes[d].n; i-- > 0;) {
        tg_tensor *t = tl_scopes[d].t[i];
        t->scope_refs--;
        tg__tensor_release(t);
    }
    free(tl_scopes[d].t);
    tl_depth--;
    if (tl_depth == 0) {
        free(tl_scopes);
        tl_scopes = NULL;
        tl_cap = 0;
    }
    return TG_OK;
}

int tg_scope_depth(void) { return tl_depth; }

tg_status tg_scope_unwind(int depth) {
    if (depth < tl_floor || depth > tl_depth)
        return tg__set_error(TG_ERR_STATE, "tg_scope_unwind: cannot unwind to depth %d with %d "
                             "scopes open%s", depth, tl_depth,
                             depth < tl_floor ? " (the outer ones are hidden in a callback)" : "");
    while (tl_depth > depth) tg_scope_end(tl_depth);
    return TG_OK;
}

tg_tensor *tg_scope_keep(tg_tensor *t) {
    if (!t) return NULL;
    if (tl_depth <= tl_floor)
        return tg__fail(TG_ERR_STATE, "tg_scope_keep: no scope is open");
    scope *sc = &tl_scopes[tl_depth - 1];
    size_t i = sc->n;
    while (i-- > 0)
        if (sc->t[i] == t) break;
    if (i == (size_t)-1)
        return tg__fail(TG_ERR_STATE, "tg_scope_keep: %s is not owned by the innermost "
                                      "scope", TG__LABEL(t));
    scope *parent = tl_depth - 1 > tl_floor ? &tl_scopes[tl_depth - 2] : NULL;
    if (parent && !reserve(parent, 1)) return NULL;
    memmove(&sc->t[i], &sc->t[i + 1], (sc->n - i - 1) * sizeof *sc->t);
    sc->n--;
    if (parent) parent->t[parent->n++] = t;
    else t->scope_refs--;
    return t;
}
