/* ops/view_inplace.c - in-place ops on views (PyTorch's CopySlices). A
 * recorded in-place op on a view computes r = op(view, other) out of place,
 * writes it into the view's memory, and gives the base a CopySlices node with
 * two inputs: the base's old history and r. Its backward sends the base's
 * gradient with the view's window zeroed to the old history and the window
 * itself to r (whose node sends its own share back through the view's old
 * history into the same window): new_base = scatter(old_base, window, r).
 * The base's `hist` then moves and its views regenerate their grad_fn
 * (tape/view.c, which also has the geometry helpers used here). */
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* ---- CopySlices: the base's grad_fn after an in-place op on a view ---------- */

/* Input 0: the base before the op (gradient: g with the window zeroed);
 * input 1: the op's out-of-place result r (gradient: g's window). */
static tg_status copyslices_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__view_geom *g = n->state;
    tg_tensor *z = tg__view_space(n, g), *b = NULL, *w = NULL;
    tg_status st = TG_OK;
    if (!z || !(b = tg__view_window(n, z, g, false)) || !(w = tg__view_window(n, z, g, true))) goto fail;
    if ((st = tg__k_copy(b, gout[0])) != TG_OK) goto fail;
    if (n->edge[1].kind != TG__EDGE_NONE && !(gin[1] = tg__clone(n->site, w))) goto fail;
    if (n->edge[0].kind != TG__EDGE_NONE) {
        if ((st = tg__k_fill(w, 0.0)) != TG_OK) goto fail;
        gin[0] = b;
        b = NULL;
    }
    tg__tensor_release(w);
    tg__tensor_release(b);
    tg__tensor_release(z);
    return TG_OK;
fail:
    if (st == TG_OK) st = tg_last_status();
    tg__tensor_release(gin[1]);
    gin[1] = NULL;
    tg__tensor_release(w);
    tg__tensor_release(b);
    tg__tensor_release(z);
    return st;
}
static const tg__op_def copyslices_def = {"CopySlices", copyslices_backward, true, NULL};

tg_status tg__check_view_inplace(const char *who, const tg_tensor *t) {
    const tg_tensor *base = t->view_base;
    if (!base) return TG_OK;
    if (t->view_kind != TG__VIEW_DEFAULT)
        return tg__set_error(TG_ERR_AUTOGRAD,
                             "%s: the view (%s, created at %s:%d) %s and is being modified in "
                             "place with grad mode on; its gradient is ambiguous, so this is "
                             "refused (as in PyTorch). Make the view and the in-place op both "
                             "with grad mode on or both off, or clone the view.",
                             who, TG__LABEL(t), t->site.file ? t->site.file : "?", t->site.line,
                             tg__view_kind_text(t));
    if (tg__req_grad(t) && !tg__has_grad_fn(base))
        return tg__set_error(TG_ERR_AUTOGRAD,
                             "%s: a view of a leaf tensor that requires grad (%s) is being "
                             "used in an in-place operation; run it under TG_NO_GRAD (e.g. an "
                             "optimizer update) or use the out-of-place op",
                             who, TG__LABEL(base));
    if (tg__overlaps(base))
        return tg__set_error(TG_ERR_LAYOUT, "%s: the base of the view (%s) has overlapping "
                             "elements (an expanded tensor); clone it first", who, TG__LABEL(t));
    return TG_OK;
}

tg__node *tg__copyslices_new(tg_site s, tg_tensor *t, tg_tensor *r) {
    tg_tensor *base = t->view_base;
    tg__view_geom *g = tg__xmalloc(sizeof *g);
    if (!g) return NULL;
    tg__view_geom_of(g, t, base);
    tg_tensor *in[2] = {base, r};
    tg__node *n = tg__node_new(s, &copyslices_def, copyslices_def.name, 2, in, 1);
    if (!n) {
        free(g);
        return NULL;
    }
    n->state = g;
    n->state_bytes = sizeof *g;
    return n;
}

void tg__copyslices_commit(tg__node *n, tg_tensor *t) {
    tg_tensor *base = t->view_base;
    tg__node_set_output(n, 0, base);
    tg__node_release(n); /* the base owns it */
    base->hist++;        /* every view of it, t included, is now stale */
}
