/* tape/view.c - views as the core sees them (PyTorch's view + in-place
 * design; ops/view_inplace.c has the in-place side, CopySlices).
 *
 * Every result of a view op remembers its base: the tensor, never itself a
 * view, whose storage it shares (tg__view_attach), and the base's `hist`
 * counter when the view's grad_fn was made. A recorded in-place op on the
 * base, or on one of its views, replaces the base's grad_fn and bumps `hist`;
 * every view of it made before is then stale: tg__grad_fn regenerates its
 * grad_fn, when it is next used, as an AsStridedBackward node from the base's
 * current history (the view's gradient scattered into its window of a zero
 * base gradient).
 *
 * PyTorch regenerates on any version change of the storage; we do when the
 * base's history changed, or when the view has no grad_fn yet (it was made
 * before its base required grad) and its storage's version moved. Otherwise
 * an in-place op under no-grad, or on a tensor that does not require grad,
 * leaves the old grad_fn correct: the gradients are the same, only the
 * grad_fn's name can differ (docs/api.md). A view made
 * in no-grad mode or by a custom function may not be rebased: as in PyTorch,
 * it is refused once its storage's version moved.
 *
 * Geometry: views never have negative strides, and a base that was rebased
 * has no overlapping elements (in-place ops refuse overlapping targets and
 * views of overlapping bases), so a gradient can be built in "storage
 * space": a flat zero buffer covering the base's elements, read through the
 * base's and the view's strides.
 */
#include <stdlib.h>
#include <string.h>

#include "tapegrad/autograd.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "node.h"
#include "dispatch.h"
#include "sync.h"

/* Elements from t's first to its last element (0 when empty). */
static int64_t span_of(const tg_tensor *t) {
    if (tg__k_numel(t->ndim, t->shape) == 0) return 0;
    int64_t span = 1;
    for (int d = 0; d < t->ndim; d++) span += (t->shape[d] - 1) * t->strides[d];
    return span;
}

void tg__view_geom_of(tg__view_geom *g, const tg_tensor *v, const tg_tensor *base) {
    memset(g, 0, sizeof *g);
    g->bnd = base->ndim;
    g->vnd = v->ndim;
    memcpy(g->bshape, base->shape, sizeof g->bshape);
    memcpy(g->bstr, base->strides, sizeof g->bstr);
    memcpy(g->vshape, v->shape, sizeof g->vshape);
    memcpy(g->vstr, v->strides, sizeof g->vstr);
    g->voff = v->offset - base->offset;
    g->span = span_of(base);
}

bool tg__overlaps(const tg_tensor *t) {
    if (tg__k_numel(t->ndim, t->shape) <= 1) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1) return true;
    return false;
}

tg_tensor *tg__view_space(tg__node *n, const tg__view_geom *g) {
    int64_t span = g->span;
    return tg__zeros_on(n->site, n->in_meta[0].device, n->in_meta[0].dtype, 1, &span);
}

tg_tensor *tg__view_window(tg__node *n, tg_tensor *z, const tg__view_geom *g, bool view) {
    return tg__tensor_alias(n->site, z->storage, z->dtype, view ? g->vnd : g->bnd,
                         view ? g->vshape : g->bshape, view ? g->vstr : g->bstr,
                         view ? g->voff : 0);
}

/* ---- AsStridedBackward: a regenerated view's grad_fn ------------------------- */

/* The base's gradient: the view's gradient (summed over its stride-0 dims,
 * where several view elements are one base element) in its window, 0
 * elsewhere. */
static tg_status as_strided_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__view_geom *g = n->state;
    tg__view_geom gr = *g; /* the view with its stride-0 dims reduced to size 1 */
    bool red[TG_MAX_DIMS] = {false};
    for (int d = 0; d < g->vnd; d++)
        if (g->vstr[d] == 0 && g->vshape[d] > 1) {
            red[d] = true;
            gr.vshape[d] = 1;
        }
    tg_tensor *gv = tg__new_output_on(n->site, n->name, n->in_meta[0].device, n->in_meta[0].dtype,
                                      gr.vnd, gr.vshape);
    if (!gv || !(gv = tg__k_ok(tg__k_sum_reduce(gv, gout[0], red, 1.0), gv)))
        return tg_last_status();
    tg_tensor *z = tg__view_space(n, g), *w = z ? tg__view_window(n, z, &gr, true) : NULL;
    tg_status st = w ? tg__k_copy(w, gv) : tg_last_status();
    tg__tensor_release(w);
    tg__tensor_release(gv);
    if (st == TG_OK && !(gin[0] = tg__view_window(n, z, g, false))) st = tg_last_status();
    tg__tensor_release(z);
    return st;
}
static const tg__op_def as_strided_def = {"AsStridedBackward", as_strided_backward, false, NULL};

void tg__view_attach(tg_tensor *v, tg_tensor *src) {
    tg_tensor *base = src->view_base ? src->view_base : src;
    v->view_base = tg_retain(base);
    base->lib_refs++;
    v->view_hist = base->hist;
    v->view_version = src->storage->version;
    /* as PyTorch: a view of a view made in no-grad mode (or by a custom
     * function) keeps that origin */
    if (src->view_base && src->view_kind != TG__VIEW_DEFAULT) v->view_kind = src->view_kind;
    else v->view_kind = tg_is_grad_enabled() ? TG__VIEW_DEFAULT : TG__VIEW_NO_GRAD;
}

/* True when t is a view whose grad_fn must be made again (or, for a view that
 * may not be rebased, refused) before use. A view made in no-grad mode or by
 * a custom function is refused as soon as its storage's version moved, as in
 * PyTorch; a default view is made again (an as_strided of its base) when its
 * base's history changed or its storage's version moved, as PyTorch does on
 * any version change. */
static bool stale(const tg_tensor *t) {
    const tg_tensor *b = t->view_base;
    if (!b || !(t->grad_fn || tg__req_grad(b))) return false;
    if (t->view_kind != TG__VIEW_DEFAULT) return t->view_version != t->storage->version;
    if (t->view_hist != b->hist) return true;
    /* PyTorch makes a view's grad_fn again on any version change: a view made
     * before its base required grad has none, and after an in-place write
     * (even an unrecorded one) its gradient reaches the base, as an
     * as_strided of the base (no longer through a view in between that was
     * made a leaf requiring grad: PyTorch's rule, kept) */
    return t->view_version != t->storage->version;
}

bool tg__has_grad_fn(const tg_tensor *t) { return t->grad_fn || stale(t); }

const char *tg__view_kind_text(const tg_tensor *t) {
    return t->view_kind == TG__VIEW_NO_GRAD ? "was created in no-grad mode"
                                            : "was returned by a custom function's forward";
}

/* tg__grad_fn for a stale t, with the view lock held: a new grad_fn for t,
 * *old receiving a reference to the old one (for the caller to release once
 * the lock is let go: its release may run a callback). */
static bool regenerate_locked(tg_tensor *t, tg__node **old) {
    tg_tensor *base = t->view_base;
    if (t->view_kind != TG__VIEW_DEFAULT) {
        tg__set_error(TG_ERR_AUTOGRAD,
                      "a view (%s, created at %s:%d) %s and its storage has since been "
                      "modified in place (version %llu, %llu when the view was made): its "
                      "gradient is ambiguous, so using it with grad mode on is refused (as in "
                      "PyTorch). Make the view with grad mode on, or clone it.",
                      TG__LABEL(t), t->site.file ? t->site.file : "?", t->site.line,
                      tg__view_kind_text(t), (unsigned long long)t->storage->version,
                      (unsigned long long)t->view_version);
        return false;
    }
    tg__view_geom *g = tg__xmalloc(sizeof *g);
    if (!g) return false;
    tg__view_geom_of(g, t, base);
    tg__node *n = tg__node_new(t->site, &as_strided_def, as_strided_def.name, 1, &base, 1);
    if (!n) {
        free(g);
        return false;
    }
    n->state = g;
    n->state_bytes = sizeof *g;
    /* t keeps a grad_fn all along (other threads read it without the lock):
     * the old one is released by the caller */
    *old = t->grad_fn;
    tg__node_retain(*old);
    tg__node_set_output(n, 0, t); /* t owns n now */
    tg__node_release(n);
    t->view_hist = base->hist;
    t->view_version = t->storage->version;
    return true;
}

bool tg__grad_fn(tg_tensor *t, tg__node **fn) {
    if (!stale(t)) {
        *fn = t->grad_fn;
        return true;
    }
    /* Made once when threads use the view at once: the first makes it, the
     * others find it up to date (a recorded in-place op on the base or one
     * of its views while other threads use the view is a race of the
     * caller's, as in PyTorch). */
    tg__node *old = NULL;
    tg__view_lock();
    const bool ok = !stale(t) || regenerate_locked(t, &old);
    *fn = t->grad_fn;
    tg__view_unlock();
    tg__node_release(old);
    return ok;
}


bool tg_is_view(const tg_tensor *t) { return t && t->view_base; }

tg_tensor *tg_view_base(const tg_tensor *t) {
    if (tg__null_arg(t, "tg_view_base", "t")) return NULL;
    return t->view_base ? tg__ret(tg_retain(t->view_base)) : NULL;
}
