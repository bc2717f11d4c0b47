/* ops/view.c - views and copies: slice, narrow, view, reshape, flatten,
 * transpose, permute, squeeze, unsqueeze, expand, contiguous, clone. Views
 * share the storage (and the version counter) of their input and are
 * differentiable. */
#include <string.h>

#include "ops_internal.h"

static tg_tensor *make_view(tg_site s, tg_tensor *t, int ndim, const int64_t *shape,
                            const int64_t *strides, int64_t offset) {
    tg_tensor *v = tg__tensor_alias(s, t->storage, t->dtype, ndim, shape, strides, offset);
    if (v) {
        tg__view_attach(v, t);
        memcpy(v->name, t->name, TG__NAME_LEN);
    }
    return v;
}

/* Node parameters (iparam): slice's dim, start, step; transpose's dims. */
enum { P_DIM = 0, P_START = 1, P_STEP = 2 };
enum { P_D0 = 0, P_D1 = 1 };

/* Records node `def` for a view/copy result; on NOMEM releases out. */
static tg_tensor *finish(tg_site s, const tg__op_def *def, tg_tensor *t, tg_tensor *out,
                         const int64_t *iparam, int n_iparam) {
    if (!out || !tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, def, 1, &t, out);
    if (!n) {
        tg__tensor_release(out);
        return NULL;
    }
    for (int i = 0; i < n_iparam; i++) n->iparam[i] = iparam[i];
    return out;
}

/* ---- slice --------------------------------------------------------------- */

static tg_status slice_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *z = tg__zeros_on(n->site, gout[0]->storage->device, m->dtype, m->ndim, m->shape);
    if (!z) return tg_last_status();
    int dim = (int)n->iparam[P_DIM];
    int64_t start = n->iparam[P_START], step = n->iparam[P_STEP];
    int64_t st[TG_MAX_DIMS];
    memcpy(st, z->strides, sizeof st);
    if (__builtin_mul_overflow(st[dim], step, &st[dim])) st[dim] = z->strides[dim]; /* tg_slice */
    tg_tensor *win = tg__tensor_alias(n->site, z->storage, z->dtype, gout[0]->ndim, gout[0]->shape,
                                   st, start * z->strides[dim]);
    if (!win) {
        tg__tensor_release(z);
        return tg_last_status();
    }
    tg_status cst = tg__k_copy(win, gout[0]);
    tg__tensor_release(win);
    if (cst != TG_OK) {
        tg__tensor_release(z);
        return cst;
    }
    gin[0] = z;
    return TG_OK;
}
static const tg__op_def slice_def = {"SliceBackward", slice_backward, false, NULL};

tg_tensor *tg__slice(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t end,
                     int64_t step) {
    if (tg__null_arg(t, "tg_slice", "t")) return NULL;
    if (t->ndim == 0) return tg__fail(TG_ERR_DIM, "tg_slice: cannot slice a 0-d tensor");
    int d = tg__wrap_dim("tg_slice", dim, t->ndim);
    if (d < 0) return NULL;
    if (step <= 0) return tg__fail(TG_ERR_VALUE, "tg_slice: step must be positive (got %lld)",
                                   (long long)step);
    int64_t size = t->shape[d];
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    shape[d] = end == start ? 0 : (end - start - 1) / step + 1; /* no overflow for any step */
    /* stride * step, as PyTorch. With two or more elements the product stays
     * within the tensor's extent; it can overflow only for a huge step that
     * leaves at most one element, whose stride is never used (keep it then). */
    if (__builtin_mul_overflow(t->strides[d], step, &strides[d])) strides[d] = t->strides[d];
    /* An empty result keeps t's offset: start * stride may lie far outside the
     * storage (or overflow) when nothing is ever read there. */
    bool empty = tg__k_numel(t->ndim, shape) == 0;
    tg_tensor *v = make_view(s, t, t->ndim, shape, strides,
                             empty ? t->offset : t->offset + start * t->strides[d]);
    int64_t ip[3] = {d, start, step};
    return finish(s, &slice_def, t, v, ip, 3);
}

tg_tensor *tg_slice_at(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t end,
                       int64_t step) {
    return tg__ret(tg__slice(s, t, dim, start, end, step));
}

/* ---- narrow: a slice whose bounds must be in range (PyTorch's narrow) ------ */

tg_tensor *tg__narrow(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t length) {
    if (tg__null_arg(t, "tg_narrow", "t")) return NULL;
    if (t->ndim == 0) return tg__fail(TG_ERR_DIM, "tg_narrow: cannot narrow a 0-d tensor");
    int d = tg__wrap_dim("tg_narrow", dim, t->ndim);
    if (d < 0) return NULL;
    int64_t size = t->shape[d];
    if (start < 0 && start >= -size) start += size;
    if (start < 0 || start > size || length < 0 || length > size - start)
        return tg__fail(TG_ERR_VALUE, "tg_narrow: start %lld and length %lld are out of range "
                        "for dimension %d of size %lld", (long long)start, (long long)length, d,
                        (long long)size);
    return tg__slice(s, t, d, start, start + length, 1);
}

tg_tensor *tg_narrow_at(tg_site s, tg_tensor *t, int dim, int64_t start, int64_t length) {
    return tg__ret(tg__narrow(s, t, dim, start, length));
}

/* ---- view / reshape ------------------------------------------------------ */

static tg_status view_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    gin[0] = tg__reshape(n->site, gout[0], m->ndim, m->shape);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def view_def = {"ViewBackward", view_backward, false, NULL};

/* Resolves one -1 in shape into out. -1 with the error set on failure. */
static int resolve_shape(const char *who, const tg_tensor *t, int ndim, const int64_t *shape,
                         int64_t *out) {
    if (ndim < 0 || ndim > TG_MAX_DIMS)
        return tg__set_error(TG_ERR_VALUE, "%s: ndim %d outside [0, %d]", who, ndim, TG_MAX_DIMS),
               -1;
    if (ndim > 0 && tg__null_arg(shape, who, "shape")) return -1;
    int infer = -1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == -1) {
            if (infer >= 0)
                return tg__set_error(TG_ERR_VALUE, "%s: only one dimension can be -1", who), -1;
            infer = d;
        }
        out[d] = shape[d] == -1 ? 1 : shape[d];
    }
    /* sizes >= 0 and products bounded (checked arithmetic), -1 counted as 1 */
    int64_t known = tg__shape_check(who, ndim, out);
    if (known < 0) return -1;
    int64_t numel = tg__k_numel(t->ndim, t->shape);
    char a[160], b[160];
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return tg__set_error(TG_ERR_SHAPE, "%s: shape %s is invalid for a tensor of %lld "
                                 "elements", who, tg__shape_str(a, sizeof a, ndim, shape),
                                 (long long)numel),
                   -1;
        out[infer] = numel / known;
        /* the inferred size may make the extent too large when another size is 0 */
        if (tg__shape_check(who, ndim, out) < 0) return -1;
    } else if (known != numel) {
        return tg__set_error(TG_ERR_SHAPE, "%s: shape %s is invalid for a tensor of shape %s "
                             "(%lld elements)", who, tg__shape_str(a, sizeof a, ndim, shape),
                             tg__shape_str(b, sizeof b, t->ndim, t->shape), (long long)numel),
               -1;
    }
    return 0;
}

/* Strides for seeing t with shape ns without a copy (PyTorch's rule: each run
 * of dimensions that is contiguous in memory may be split or merged). False
 * when impossible. */
static bool view_strides(const tg_tensor *t, int nd, const int64_t *ns, int64_t *out) {
    if (tg__k_numel(t->ndim, t->shape) == 0 || tg__is_contiguous(t)) {
        int64_t acc = 1;
        for (int d = nd - 1; d >= 0; d--) {
            out[d] = acc;
            acc *= ns[d] ? ns[d] : 1;
        }
        return true;
    }
    int od = t->ndim;
    const int64_t *os = t->shape, *ost = t->strides;
    int view_d = nd - 1;
    int64_t chunk = ost[od - 1], tensor_numel = 1, view_numel = 1;
    for (int td = od - 1; td >= 0; td--) {
        tensor_numel *= os[td];
        if (td == 0 || (os[td - 1] != 1 && ost[td - 1] != tensor_numel * chunk)) {
            while (view_d >= 0 && (view_numel < tensor_numel || ns[view_d] == 1)) {
                out[view_d] = view_numel * chunk;
                view_numel *= ns[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) {
                chunk = ost[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

tg_tensor *tg__view(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    if (tg__null_arg(t, "tg_view", "t")) return NULL;
    int64_t ns[TG_MAX_DIMS], st[TG_MAX_DIMS];
    if (resolve_shape("tg_view", t, ndim, shape, ns) < 0) return NULL;
    if (!view_strides(t, ndim, ns, st)) {
        char a[160], b[160];
        return tg__fail(TG_ERR_LAYOUT, "tg_view: a tensor of shape %s with strides %s cannot be "
                        "viewed with shape %s without a copy; use tg_reshape",
                        tg__shape_str(a, sizeof a, t->ndim, t->shape),
                        tg__shape_str(b, sizeof b, t->ndim, t->strides),
                        tg__shape_str((char[160]){0}, 160, ndim, ns));
    }
    tg_tensor *v = make_view(s, t, ndim, ns, st, t->offset);
    return finish(s, &view_def, t, v, NULL, 0);
}

tg_tensor *tg__reshape_own(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    int64_t st[TG_MAX_DIMS];
    if (tg__k_numel(t->ndim, t->shape) != tg__k_numel(ndim, shape) || !tg__is_contiguous(t) ||
        !view_strides(t, ndim, shape, st))
        return tg__fail(TG_ERR_INTERNAL, "tg__reshape_own: not a contiguous reshape");
    tg_tensor *v = tg__tensor_alias(s, t->storage, t->dtype, ndim, shape, st, t->offset);
    if (v) memcpy(v->name, t->name, TG__NAME_LEN);
    return finish(s, &view_def, t, v, NULL, 0);
}

tg_tensor *tg_view_at(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    return tg__ret(tg__view(s, t, ndim, shape));
}

tg_tensor *tg__reshape(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    if (tg__null_arg(t, "tg_reshape", "t")) return NULL;
    int64_t ns[TG_MAX_DIMS], st[TG_MAX_DIMS];
    if (resolve_shape("tg_reshape", t, ndim, shape, ns) < 0) return NULL;
    if (view_strides(t, ndim, ns, st)) {
        tg_tensor *v = make_view(s, t, ndim, ns, st, t->offset);
        return finish(s, &view_def, t, v, NULL, 0);
    }
    tg_tensor *c = tg__clone(s, t);
    if (!c) return NULL;
    tg_tensor *v = tg__view(s, c, ndim, ns);
    tg__tensor_release(c);
    return v;
}

tg_tensor *tg_reshape_at(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    return tg__ret(tg__reshape(s, t, ndim, shape));
}

/* ---- transpose ----------------------------------------------------------- */

static tg_status transpose_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    gin[0] = tg__transpose(n->site, gout[0], (int)n->iparam[P_D0], (int)n->iparam[P_D1]);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def transpose_def = {"TransposeBackward", transpose_backward, false, NULL};

tg_tensor *tg__transpose(tg_site s, tg_tensor *t, int d0, int d1) {
    if (tg__null_arg(t, "tg_transpose", "t")) return NULL;
    int a = tg__wrap_dim("tg_transpose", d0, t->ndim);
    if (a < 0) return NULL;
    int b = tg__wrap_dim("tg_transpose", d1, t->ndim);
    if (b < 0) return NULL;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        shape[a] = t->shape[b];
        shape[b] = t->shape[a];
        strides[a] = t->strides[b];
        strides[b] = t->strides[a];
    }
    tg_tensor *v = make_view(s, t, t->ndim, shape, strides, t->offset);
    int64_t ip[2] = {a, b};
    return finish(s, &transpose_def, t, v, ip, 2);
}

tg_tensor *tg_transpose_at(tg_site s, tg_tensor *t, int d0, int d1) {
    return tg__ret(tg__transpose(s, t, d0, d1));
}

/* ---- permute ------------------------------------------------------------- */

/* iparam[0]: the permutation, 4 bits per output dim (TG_MAX_DIMS <= 16). */
static tg_status permute_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    int nd = gout[0]->ndim, inv[TG_MAX_DIMS];
    for (int i = 0; i < nd; i++) inv[(n->iparam[0] >> (4 * i)) & 15] = i;
    gin[0] = tg__permute(n->site, gout[0], nd, inv);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def permute_def = {"PermuteBackward", permute_backward, false, NULL};

tg_tensor *tg__permute(tg_site s, tg_tensor *t, int ndim, const int *dims) {
    if (tg__null_arg(t, "tg_permute", "t")) return NULL;
    if (ndim != t->ndim)
        return tg__fail(TG_ERR_DIM, "tg_permute: %d dims given for a tensor of %d dims", ndim,
                        t->ndim);
    if (ndim > 0 && tg__null_arg(dims, "tg_permute", "dims")) return NULL;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS], packed = 0;
    bool seen[TG_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d = tg__wrap_dim("tg_permute", dims[i], ndim);
        if (d < 0) return NULL;
        if (seen[d]) return tg__fail(TG_ERR_DIM, "tg_permute: dim %d is repeated", d);
        seen[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
        packed |= (int64_t)d << (4 * i);
    }
    tg_tensor *v = make_view(s, t, ndim, shape, strides, t->offset);
    return finish(s, &permute_def, t, v, &packed, 1);
}

tg_tensor *tg_permute_at(tg_site s, tg_tensor *t, int ndim, const int *dims) {
    return tg__ret(tg__permute(s, t, ndim, dims));
}

/* ---- squeeze / unsqueeze / flatten: views of another shape --------------- */

static const tg__op_def squeeze_def = {"SqueezeBackward", view_backward, false, NULL};
static const tg__op_def unsqueeze_def = {"UnsqueezeBackward", view_backward, false, NULL};

tg_tensor *tg__squeeze(tg_site s, tg_tensor *t, int dim) {
    if (tg__null_arg(t, "tg_squeeze", "t")) return NULL;
    int d = tg__wrap_dim("tg_squeeze", dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d && t->shape[i] == 1) continue; /* only a size-1 dim goes, as PyTorch */
        shape[nd] = t->shape[i];
        strides[nd++] = t->strides[i];
    }
    tg_tensor *v = make_view(s, t, nd, shape, strides, t->offset);
    return finish(s, &squeeze_def, t, v, NULL, 0);
}

tg_tensor *tg_squeeze_at(tg_site s, tg_tensor *t, int dim) {
    return tg__ret(tg__squeeze(s, t, dim));
}

tg_tensor *tg__unsqueeze(tg_site s, tg_tensor *t, int dim) {
    if (tg__null_arg(t, "tg_unsqueeze", "t")) return NULL;
    if (t->ndim == TG_MAX_DIMS)
        return tg__fail(TG_ERR_DIM, "tg_unsqueeze: the tensor already has %d dims (at most %d)",
                        t->ndim, TG_MAX_DIMS);
    int d = tg__wrap_dim("tg_unsqueeze", dim, t->ndim + 1);
    if (d < 0) return NULL;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            /* as PyTorch: the stride the dim would have in a contiguous layout */
            strides[i] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
            continue;
        }
        shape[i] = t->shape[j];
        strides[i] = t->strides[j++];
    }
    tg_tensor *v = make_view(s, t, t->ndim + 1, shape, strides, t->offset);
    return finish(s, &unsqueeze_def, t, v, NULL, 0);
}

tg_tensor *tg_unsqueeze_at(tg_site s, tg_tensor *t, int dim) {
    return tg__ret(tg__unsqueeze(s, t, dim));
}

tg_tensor *tg_flatten_at(tg_site s, tg_tensor *t, int start_dim, int end_dim) {
    if (tg__null_arg(t, "tg_flatten", "t")) return NULL;
    if (t->ndim == 0) { /* dims 0 and -1 only, as PyTorch; the result has shape [1] */
        if (tg__wrap_dim("tg_flatten", start_dim, 0) < 0 || tg__wrap_dim("tg_flatten", end_dim, 0) < 0)
            return NULL;
        return tg__ret(tg__reshape(s, t, 1, (int64_t[]){1}));
    }
    int a = tg__wrap_dim("tg_flatten", start_dim, t->ndim);
    if (a < 0) return NULL;
    int b = tg__wrap_dim("tg_flatten", end_dim, t->ndim);
    if (b < 0) return NULL;
    if (a > b)
        return tg__fail(TG_ERR_DIM, "tg_flatten: start_dim %d comes after end_dim %d", a, b);
    if (a == b) return tg__ret(tg_retain(t)); /* t itself, as PyTorch */
    int64_t shape[TG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a; i++) shape[nd++] = t->shape[i];
    int64_t m = 1;
    for (int i = a; i <= b; i++) m *= t->shape[i]; /* no overflow: t's numel is checked */
    shape[nd++] = m;
    for (int i = b + 1; i < t->ndim; i++) shape[nd++] = t->shape[i];
    return tg__ret(tg__reshape(s, t, nd, shape));
}

/* ---- expand -------------------------------------------------------------- */

static tg_status expand_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    gin[0] = tg__sum_to(n->site, gout[0], &n->in_meta[0]);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def expand_def = {"ExpandBackward", expand_backward, false, NULL};

tg_tensor *tg__expand(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    if (tg__null_arg(t, "tg_expand", "t")) return NULL;
    if (ndim < t->ndim || ndim > TG_MAX_DIMS)
        return tg__fail(TG_ERR_SHAPE, "tg_expand: cannot expand a %d-d tensor to %d dimensions",
                        t->ndim, ndim);
    if (ndim > 0 && tg__null_arg(shape, "tg_expand", "shape")) return NULL;
    int64_t ns[TG_MAX_DIMS], st[TG_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        int it = t->ndim - ndim + i;
        int64_t want = shape[i];
        if (it < 0) {
            if (want < 0)
                return tg__fail(TG_ERR_VALUE, "tg_expand: size %lld for new leading dimension "
                                "%d", (long long)want, i);
            ns[i] = want;
            st[i] = 0;
            continue;
        }
        int64_t have = t->shape[it];
        if (want == -1) want = have;
        if (want == have) {
            ns[i] = have;
            st[i] = t->strides[it];
        } else if (have == 1 && want >= 0) {
            ns[i] = want;
            st[i] = 0;
        } else {
            char a[160], b[160];
            return tg__fail(TG_ERR_SHAPE, "tg_expand: cannot expand shape %s to %s (dimension "
                            "%d has size %lld, not 1)", tg__shape_str(a, sizeof a, t->ndim, t->shape),
                            tg__shape_str(b, sizeof b, ndim, shape), i, (long long)have);
        }
    }
    if (tg__shape_check("tg_expand", ndim, ns) < 0) return NULL;
    tg_tensor *v = make_view(s, t, ndim, ns, st, t->offset);
    return finish(s, &expand_def, t, v, NULL, 0);
}

tg_tensor *tg_expand_at(tg_site s, tg_tensor *t, int ndim, const int64_t *shape) {
    return tg__ret(tg__expand(s, t, ndim, shape));
}

/* ---- clone / contiguous -------------------------------------------------- */

static tg_status clone_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    (void)n;
    gin[0] = tg_retain(gout[0]);
    return TG_OK;
}
static const tg__op_def clone_def = {"CloneBackward", clone_backward, false, NULL};

tg_tensor *tg__clone(tg_site s, tg_tensor *t) {
    if (tg__null_arg(t, "tg_clone", "t")) return NULL;
    if (!tg__same_device("tg_clone", 1, (const tg_tensor *const *)&t)) return NULL;
    tg_tensor *c = tg__new_output_on(s, "tg_clone", t->storage->device, t->dtype, t->ndim,
                                     t->shape);
    if (!c || !(c = tg__k_ok(tg__k_copy(c, t), c))) return NULL;
    memcpy(c->name, t->name, TG__NAME_LEN);
    return finish(s, &clone_def, t, c, NULL, 0);
}

tg_tensor *tg_clone_at(tg_site s, tg_tensor *t) { return tg__ret(tg__clone(s, t)); }

tg_tensor *tg__contiguous(tg_site s, tg_tensor *t) {
    if (tg__null_arg(t, "tg_contiguous", "t")) return NULL;
    if (tg__is_contiguous(t)) return tg_retain(t);
    return tg__clone(s, t);
}

tg_tensor *tg_contiguous_at(tg_site s, tg_tensor *t) { return tg__ret(tg__contiguous(s, t)); }
