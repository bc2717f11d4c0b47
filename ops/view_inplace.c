/* ops/view_inplace.c - PyTorch's view + in-place semantics.
 *
 * Every result of a view op (slice, view, reshape without a copy, transpose,
 * expand) remembers its base: the tensor, never itself a view, whose storage
 * it shares (tg__view_attach). Two things can then happen to the history a
 * view's gradient flows through:
 *
 *  - A recorded in-place op on the view (tg_add_(v, ...) with grad mode on and
 *    something requiring grad). The op is computed out of place, r = op(v,
 *    other), written into v's memory, and the base's grad_fn becomes a
 *    CopySlices node with two inputs: the base's old history and r. Its
 *    backward sends the base's gradient with v's window zeroed to the old
 *    history and the window itself to r (whose node sends its own share back
 *    through v's old history into the same window). This is PyTorch's
 *    CopySlices, written as a scatter: new_base = scatter(old_base, window, r).
 *  - A recorded in-place op on the base, or on another view of it: the base's
 *    grad_fn is replaced.
 * Either way the base's `hist` counter moves, and every view of it whose
 * grad_fn was made before that is stale: tg__grad_fn regenerates it, when it
 * is next used, as an AsStridedBackward node from the base's current history
 * (the view's gradient scattered into its window of a zero base gradient).
 *
 * PyTorch regenerates on any version change of the storage; we do only when
 * the base's history changed (an in-place op under no-grad, or on a tensor
 * that does not require grad, leaves the old grad_fn correct). The gradients
 * are the same; only the grad_fn's name can differ (docs/api.md).
 *
 * Geometry: views never have negative strides, and a base that was rebased
 * has no overlapping elements (tg__check_view_inplace; in-place ops refuse
 * overlapping targets), so a gradient can be built in "storage space": a flat
 * zero buffer covering the base's elements, read through the base's and the
 * view's strides.
 */
#include <stdlib.h>
#include <string.h>

#include "tg_internal.h"

/* A view's position relative to its base, in elements of the storage. */
typedef struct {
    int bnd, vnd;
    int64_t bshape[TG_MAX_DIMS], bstr[TG_MAX_DIMS]; /* base */
    int64_t vshape[TG_MAX_DIMS], vstr[TG_MAX_DIMS]; /* view */
    int64_t voff; /* view offset - base offset */
    int64_t span; /* elements from the base's first to its last, inclusive */
} geom;

/* Elements from t's first to its last element (0 when empty). */
static int64_t span_of(const tg_tensor *t) {
    if (tg__numel(t->ndim, t->shape) == 0) return 0;
    int64_t span = 1;
    for (int d = 0; d < t->ndim; d++) span += (t->shape[d] - 1) * t->strides[d];
    return span;
}

static void geom_of(geom *g, const tg_tensor *v, const tg_tensor *base) {
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

/* True when some element of t is stored at the same place as another. Views
 * overlap only through stride-0 dims (expand); a tensor whose strides are a
 * permutation of a contiguous layout's, possibly with gaps, does not. */
static bool overlaps(const tg_tensor *t) {
    if (tg__numel(t->ndim, t->shape) <= 1) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1) return true;
    return false;
}

/* A zero buffer of g->span elements (the base's storage space). */
static tg_tensor *zero_space(tg__node *n, const geom *g) {
    int64_t span = g->span;
    return tg__zeros_on(n->site, n->in_meta[0].device, n->in_meta[0].dtype, 1, &span);
}

/* A handle on buffer z seen through the view's (or the base's) geometry. */
static tg_tensor *window(tg__node *n, tg_tensor *z, const geom *g, bool view) {
    return tg__tensor_on(n->site, z->storage, z->dtype, view ? g->vnd : g->bnd,
                         view ? g->vshape : g->bshape, view ? g->vstr : g->bstr,
                         view ? g->voff : 0);
}

/* ---- AsStridedBackward: a regenerated view's grad_fn ------------------------- */

/* The base's gradient: the view's gradient (summed over its stride-0 dims,
 * where several view elements are one base element) in its window, 0
 * elsewhere. */
static tg_status as_strided_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const geom *g = n->state;
    tg__meta m = n->out_meta[0];
    geom gr = *g; /* the view with its stride-0 dims reduced to size 1 */
    for (int d = 0; d < g->vnd; d++)
        if (g->vstr[d] == 0) m.shape[d] = gr.vshape[d] = g->vshape[d] ? 1 : 0;
    tg_tensor *gv = tg__sum_to(n->site, gout[0], &m);
    if (!gv) return tg_last_status();
    tg_tensor *z = zero_space(n, g), *w = z ? window(n, z, &gr, true) : NULL;
    tg_status st = w ? tg__k_copy(w, gv) : tg_last_status();
    tg__tensor_release(w);
    tg__tensor_release(gv);
    if (st == TG_OK && !(gin[0] = window(n, z, g, false))) st = tg_last_status();
    tg__tensor_release(z);
    return st;
}
static const tg__op_def as_strided_def = {"AsStridedBackward", as_strided_backward};

void tg__view_attach(tg_tensor *v, tg_tensor *src) {
    tg_tensor *base = src->view_base ? src->view_base : src;
    v->view_base = tg_retain(base);
    base->lib_refs++;
    v->view_hist = base->hist;
    /* as PyTorch: a view of a view made in no-grad mode (or by a custom
     * function) keeps that origin */
    if (src->view_base && src->view_kind != TG__VIEW_DEFAULT) v->view_kind = src->view_kind;
    else v->view_kind = tg_is_grad_enabled() ? TG__VIEW_DEFAULT : TG__VIEW_NO_GRAD;
}

/* True when t is a view whose grad_fn must be made again before use. */
static bool stale(const tg_tensor *t) {
    const tg_tensor *b = t->view_base;
    return b && t->view_hist != b->hist && (t->grad_fn || tg__req_grad(b));
}

bool tg__has_grad_fn(const tg_tensor *t) { return t->grad_fn || stale(t); }

static const char *view_kind_text(const tg_tensor *t) {
    return t->view_kind == TG__VIEW_NO_GRAD ? "was created in no-grad mode"
                                            : "was returned by a custom function's forward";
}

bool tg__grad_fn(tg_tensor *t, tg__node **fn) {
    *fn = t->grad_fn;
    if (!stale(t)) return true;
    tg_tensor *base = t->view_base;
    if (t->view_kind != TG__VIEW_DEFAULT) {
        tg__set_error(TG_ERR_AUTOGRAD,
                      "a view ('%s', created at %s:%d) %s and its base or another view of its "
                      "base has since been modified in place with grad mode on; its gradient "
                      "is ambiguous, so this is refused (as in PyTorch). Make the view and the "
                      "in-place op both with grad mode on or both off, or clone the view.",
                      t->name, t->site.file ? t->site.file : "?", t->site.line,
                      view_kind_text(t));
        return false;
    }
    geom *g = tg__xmalloc(sizeof *g);
    if (!g) return false;
    geom_of(g, t, base);
    tg__node *n = tg__node_new(t->site, &as_strided_def, as_strided_def.name, 1, &base, 1);
    if (!n) {
        free(g);
        return false;
    }
    n->state = g;
    n->state_bytes = sizeof *g;
    tg__node_set_output(n, 0, t); /* t owns it (and drops its old grad_fn) */
    tg__node_release(n);
    t->view_hist = base->hist;
    *fn = t->grad_fn;
    return true;
}

/* ---- CopySlices: the base's grad_fn after an in-place op on a view ---------- */

/* Input 0: the base before the op (gradient: g with the window zeroed);
 * input 1: the op's out-of-place result r (gradient: g's window). */
static tg_status copyslices_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const geom *g = n->state;
    tg_tensor *z = zero_space(n, g), *b = NULL, *w = NULL;
    tg_status st = TG_OK;
    if (!z || !(b = window(n, z, g, false)) || !(w = window(n, z, g, true))) goto fail;
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
static const tg__op_def copyslices_def = {"CopySlices", copyslices_backward};

tg_status tg__check_view_inplace(const char *who, const tg_tensor *t) {
    const tg_tensor *base = t->view_base;
    if (!base) return TG_OK;
    if (t->view_kind != TG__VIEW_DEFAULT)
        return tg__set_error(TG_ERR_AUTOGRAD,
                             "%s: the view '%s' (created at %s:%d) %s and is being modified in "
                             "place with grad mode on; its gradient is ambiguous, so this is "
                             "refused (as in PyTorch). Make the view and the in-place op both "
                             "with grad mode on or both off, or clone the view.",
                             who, t->name, t->site.file ? t->site.file : "?", t->site.line,
                             view_kind_text(t));
    if (tg__req_grad(t) && !tg__has_grad_fn(base))
        return tg__set_error(TG_ERR_AUTOGRAD,
                             "%s: a view of a leaf tensor that requires grad ('%s') is being "
                             "used in an in-place operation; run it under TG_NO_GRAD (e.g. an "
                             "optimizer update) or use the out-of-place op",
                             who, base->name);
    if (overlaps(base))
        return tg__set_error(TG_ERR_LAYOUT, "%s: the base of the view '%s' has overlapping "
                             "elements (an expanded tensor); clone it first", who, t->name);
    return TG_OK;
}

tg__node *tg__copyslices_new(tg_site s, tg_tensor *t, tg_tensor *r) {
    tg_tensor *base = t->view_base;
    geom *g = tg__xmalloc(sizeof *g);
    if (!g) return NULL;
    geom_of(g, t, base);
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
