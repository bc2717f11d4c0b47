/* ops/select.c - picking elements: tg_select (one position along a dim, a
 * view), tg_index (an i64 index tensor of any shape along a dim: PyTorch's
 * t[:, index]) and tg_masked_select (the elements where a bool mask is true).
 *
 * No kernel of their own. select is a view whose SelectBackward copies the
 * gradient into its position of a zero tensor. index and masked_select move
 * elements with the gather kernel (which takes any dtype) over a permuted
 * view of t, and scatter-add the gradient back with its backward (repeated
 * picks add up). Nothing is written before every index is checked.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* Node parameters (iparam) of SelectBackward and IndexBackward. */
enum { P_DIM = 0, P_INDEX = 1 };

/* f32, f64, i64 or bool (the dtypes the gather kernel moves and the tests
 * cover); TG_ERR_DTYPE naming `who` otherwise. */
static bool data_dtype_ok(const char *who, const tg_tensor *t) {
    if (t->dtype == TG_F32 || t->dtype == TG_F64 || t->dtype == TG_I64 || t->dtype == TG_BOOL)
        return true;
    tg__set_error(TG_ERR_DTYPE, "%s: dtype %s is not supported (f32, f64, i64 or bool; convert "
                  "with tg_to_dtype)", who, tg_dtype_name(t->dtype));
    return false;
}

/* ---- select: a view ----------------------------------------------------------------- */

/* g (t's shape without dim d) copied into position iparam[P_INDEX] along d of
 * a zero tensor of t's shape (PyTorch's select_backward). */
static tg_status select_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    const int d = (int)n->iparam[P_DIM];
    tg_tensor *z = tg__zeros_on(n->site, gout[0]->storage->device, m->dtype, m->ndim, m->shape);
    if (!z) return tg_last_status();
    int64_t st[TG_MAX_DIMS];
    for (int i = 0, k = 0; i < m->ndim; i++)
        if (i != d) st[k++] = z->strides[i];
    tg_tensor *win = tg__tensor_alias(n->site, z->storage, z->dtype, gout[0]->ndim,
                                      gout[0]->shape, st, n->iparam[P_INDEX] * z->strides[d]);
    tg_status cst = win ? tg__k_copy(win, gout[0]) : tg_last_status();
    tg__tensor_release(win);
    if (cst != TG_OK) {
        tg__tensor_release(z);
        return cst;
    }
    gin[0] = z;
    return TG_OK;
}
static const tg__op_def select_def = {"SelectBackward", select_backward, false, NULL};

static tg_tensor *select_op(tg_site s, tg_tensor *t, int dim, int64_t index) {
    const char *who = "tg_select";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (t->ndim == 0) return tg__fail(TG_ERR_DIM, "%s: cannot select from a 0-d tensor", who);
    const int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    const int64_t size = t->shape[d];
    if (index < -size || index >= size)
        return tg__fail(TG_ERR_VALUE, "%s: index %" PRId64 " is out of range for dimension %d "
                        "of size %" PRId64, who, index, d, size);
    if (index < 0) index += size;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    for (int i = 0, k = 0; i < t->ndim; i++)
        if (i != d) {
            shape[k] = t->shape[i];
            strides[k++] = t->strides[i];
        }
    tg_tensor *v = tg__tensor_alias(s, t->storage, t->dtype, t->ndim - 1, shape, strides,
                                    t->offset + index * t->strides[d]);
    if (!v) return NULL;
    tg__view_attach(v, t);
    memcpy(v->name, t->name, TG__NAME_LEN);
    if (!tg__needs_grad(1, &t)) return v;
    tg__node *n = tg__record(s, &select_def, 1, &t, v);
    if (!n) {
        tg__tensor_release(v);
        return NULL;
    }
    n->iparam[P_DIM] = d;
    n->iparam[P_INDEX] = index;
    return v;
}

tg_tensor *tg_select_at(tg_site s, tg_tensor *t, int dim, int64_t index) {
    return tg__ret(select_op(s, t, dim, index));
}

/* ---- index: an i64 index tensor along one dim ------------------------------------------ */

/* A 0-d i64 tensor holding v on dev (exactly: a fill goes through a double). */
static tg_tensor *i64_scalar(tg_site s, const char *who, tg_device dev, int64_t v) {
    tg_tensor *h = tg__tensor_new(s, who, TG_I64, 0, NULL, TG_MEM_WORKSPACE);
    if (!h) return NULL;
    *(int64_t *)tg__ptr(h) = v;
    if (dev == TG_CPU) return h;
    tg_tensor *dv = tg__device_copy(s, who, h, dev);
    tg__tensor_release(h);
    return dv;
}

/* Records TG_ERR_VALUE for the entry of index at C-order position pos. */
static void report_bad(const char *who, const tg_tensor *index, int64_t pos, int d, int64_t V) {
    int64_t at[TG_MAX_DIMS];
    char where[160];
    for (int i = index->ndim - 1; i >= 0; i--) {
        at[i] = pos % index->shape[i];
        pos /= index->shape[i];
    }
    tg__shape_str(where, sizeof where, index->ndim, at);
    void *owned;
    int64_t lo, off = index->offset;
    for (int i = 0; i < index->ndim; i++) off += at[i] * index->strides[i];
    const int64_t *p = tg__host_elems(who, index, &owned, &lo);
    if (!p) return;
    const int64_t v = p[off - lo];
    free(owned);
    tg__set_error(TG_ERR_VALUE, "%s: index %" PRId64 " at position %s is out of range for "
                  "dimension %d of size %" PRId64 " (valid: %" PRId64 " .. %" PRId64 ")", who, v,
                  where, d, V, -V, V - 1);
}

/* index (i64, J > 0 entries) with its negative entries counted from the end
 * of a dim of size V: (index + V) mod V, a new contiguous i64 tensor of
 * index's shape. With `check`, first TG_ERR_VALUE (naming the first entry
 * outside [-V, V) and its value) when there is one. NULL with the error set. */
static tg_tensor *wrap_index(tg_site s, const char *who, tg_tensor *index, int d, int64_t V,
                             bool check) {
    const tg_device dev = index->storage->device;
    tg_tensor *v = i64_scalar(s, who, dev, V);
    tg_tensor *w = v ? tg__tensor_new_on(s, who, dev, TG_I64, index->ndim, index->shape,
                                         TG_MEM_WORKSPACE)
                     : NULL;
    if (w) w = tg__k_ok(tg__k_int_op(TG__INT_ADD, w, index, v, 0, 0), w); /* in [0, 2V) if valid */
    int64_t bad = -1;
    if (w && check && tg__k_gather_find_bad(w, 2 * V, &bad) != TG_OK) {
        tg__tensor_release(w);
        w = NULL;
    } else if (w && bad >= 0) {
        report_bad(who, index, bad, d, V);
        tg__tensor_release(w);
        w = NULL;
    }
    if (w) w = tg__k_ok(tg__k_int_op(TG__INT_REMAINDER, w, w, v, 0, 0), w); /* V > 0 here */
    tg__tensor_release(v);
    return w;
}

/* The stride that walks dims [a, a + k) of (shape, strides) as one dim in C
 * order; false when they are not one run (size-1 dims ignored). */
static bool run_stride(const int64_t *shape, const int64_t *strides, int a, int k, int64_t *st) {
    bool have = false;
    int64_t next = 0;
    *st = 1;
    for (int i = a + k - 1; i >= a; i--) {
        if (shape[i] == 1) continue;
        if (have && strides[i] != next) return false;
        if (!have) *st = strides[i];
        have = true;
        next = strides[i] * shape[i];
    }
    return true;
}

/* The geometry both directions share. t (pre, V, post) along dim d is seen
 * as (pre, post, V), the result (pre, ishape, post) as (pre, post, J): the
 * gather kernel's rows are (pre, post), the gathered dim last. */
typedef struct along {
    int nd;                     /* t's ndim, the length of each shape below */
    int64_t kt[TG_MAX_DIMS];    /* (pre, post, V) */
    int64_t kr[TG_MAX_DIMS];    /* (pre, post, J) */
    int64_t perm_t[TG_MAX_DIMS];/* dim of t behind each dim of kt */
    int64_t post;               /* elements of post */
} along;

static void along_of(along *g, int nd, const int64_t *tshape, int d, int64_t J) {
    g->nd = nd;
    g->post = 1;
    for (int i = 0, k = 0; i < nd; i++) {
        if (i == d) continue;
        g->kt[k] = g->kr[k] = tshape[i];
        g->perm_t[k++] = i;
        if (i > d) g->post *= tshape[i];
    }
    g->kt[nd - 1] = tshape[d];
    g->kr[nd - 1] = J;
    g->perm_t[nd - 1] = d;
}

/* An alias of of's storage with shape `shape` and of's strides taken in the
 * order of perm (no grad, not a view). */
static tg_tensor *alias_perm(tg_site s, const tg_tensor *of, int nd, const int64_t *shape,
                             const int64_t *perm, int64_t offset) {
    int64_t st[TG_MAX_DIMS];
    for (int i = 0; i < nd; i++) st[i] = of->strides[perm[i]];
    return tg__tensor_alias(s, of->storage, of->dtype, nd, shape, st, offset);
}

/* w (contiguous i64 of J entries in [0, V), NULL when J = 0) as (pre, post,
 * J): stride 0 over (pre, post). */
static tg_tensor *index_rows(tg_site s, const along *g, tg_tensor *w) {
    int64_t st[TG_MAX_DIMS] = {0};
    st[g->nd - 1] = 1;
    return tg__tensor_alias(s, w->storage, TG_I64, g->nd, g->kr, st, w->offset);
}

/* t's entries at w along d: a new contiguous tensor r of shape
 * (pre, ishape, post) (rnd dims, rshape). Not recorded. */
static tg_tensor *take_along(tg_site s, const char *who, tg_tensor *t, int d, tg_tensor *w,
                             int ind, int rnd, const int64_t *rshape) {
    tg_tensor *r = tg__new_output_on(s, who, t->storage->device, t->dtype, rnd, rshape);
    if (!r || tg__k_numel(rnd, rshape) == 0) return r; /* w is NULL only then */
    along g;
    along_of(&g, t->ndim, t->shape, d, tg__k_numel(w->ndim, w->shape));
    int64_t st[TG_MAX_DIMS]; /* r's strides over (pre, post, J) */
    for (int i = 0; i < g.nd - 1; i++) st[i] = r->strides[i < d ? i : i + ind];
    st[g.nd - 1] = ind ? r->strides[d + ind - 1] : 1;
    tg_tensor *tt = alias_perm(s, t, g.nd, g.kt, g.perm_t, t->offset);
    tg_tensor *ix = tt ? index_rows(s, &g, w) : NULL;
    /* with post of one element, (pre, post, J) is r's own C order */
    tg_tensor *o = !ix ? NULL
                   : g.post == 1 ? tg_retain(r)
                                 : tg__tensor_new_on(s, who, t->storage->device, t->dtype, g.nd,
                                                     g.kr, TG_MEM_WORKSPACE);
    tg_status st_k = o ? tg__k_gather_forward(tt, ix, o) : tg_last_status();
    if (st_k == TG_OK && g.post != 1) {
        tg_tensor *dst = tg__tensor_alias(s, r->storage, r->dtype, g.nd, g.kr, st, r->offset);
        st_k = dst ? tg__k_copy(dst, o) : tg_last_status();
        tg__tensor_release(dst);
    }
    tg_tensor *temps[3] = {tt, ix, o};
    for (int i = 0; i < 3; i++)
        tg__tensor_release(temps[i]);
    return tg__k_ok(st_k, r);
}

/* g (pre, ishape, post) scattered back along d of a zero tensor of m's shape,
 * adding repeated picks (the gradient of take_along). */
static tg_tensor *put_along(tg_site s, const tg__meta *m, int d, tg_tensor *g, tg_tensor *w,
                            int ind) {
    const int64_t J = w ? tg__k_numel(w->ndim, w->shape) : 0;
    along a;
    along_of(&a, m->ndim, m->shape, d, J);
    tg_tensor *z = tg__zeros_on(s, g->storage->device, m->dtype, a.nd, a.kt); // (pre, post, V)
    if (!z) return NULL;
    tg_status st = TG_OK;
    if (J > 0 && tg__k_numel(g->ndim, g->shape) > 0) {
        int64_t js;
        tg_tensor *gc = run_stride(g->shape, g->strides, d, ind, &js) ? tg_retain(g)
                                                                       : tg__contiguous(s, g);
        if (gc && gc != g) (void)run_stride(gc->shape, gc->strides, d, ind, &js); /* one run */
        int64_t gst[TG_MAX_DIMS];
        for (int i = 0; gc && i < a.nd - 1; i++) gst[i] = gc->strides[i < d ? i : i + ind];
        gst[a.nd - 1] = js;
        tg_tensor *gv = gc ? tg__tensor_alias(s, gc->storage, gc->dtype, a.nd, a.kr, gst,
                                              gc->offset)
                           : NULL;
        tg_tensor *ix = gv ? index_rows(s, &a, w) : NULL;
        st = ix ? tg__k_gather_backward(gv, ix, z) : tg_last_status();
        tg_tensor *temps[3] = {gc, gv, ix};
        for (int i = 0; i < 3; i++)
            tg__tensor_release(temps[i]);
    }
    if (st != TG_OK) {
        tg__tensor_release(z);
        return NULL;
    }
    /* z seen with t's dims in their places (a permutation of z's strides) */
    int64_t inv[TG_MAX_DIMS], zst[TG_MAX_DIMS];
    for (int i = 0; i < a.nd; i++) inv[a.perm_t[i]] = i;
    for (int i = 0; i < a.nd; i++) zst[i] = z->strides[inv[i]];
    tg_tensor *out = tg__tensor_alias(s, z->storage, z->dtype, m->ndim, m->shape, zst, z->offset);
    tg__tensor_release(z);
    return out;
}

/* IndexBackward: saved slot 0 the index (as PyTorch, version-checked). */
static tg_status index_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    const int d = (int)n->iparam[P_DIM];
    tg_tensor *index = tg__node_saved(n, 0);
    if (!index) return tg_last_status();
    tg_tensor *w = tg__k_numel(index->ndim, index->shape) > 0
                       ? wrap_index(n->site, n->name, index, d, m->shape[d], false)
                       : NULL;
    const bool failed = !w && tg__k_numel(index->ndim, index->shape) > 0;
    const int ind = index->ndim;
    tg__tensor_release(index);
    if (failed) return tg_last_status();
    gin[0] = put_along(n->site, m, d, gout[0], w, ind);
    tg__tensor_release(w);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def index_def = {"IndexBackward", index_backward, false, NULL};

static tg_tensor *index_op(tg_site s, tg_tensor *t, int dim, tg_tensor *index) {
    const char *who = "tg_index";
    if (tg__null_arg(t, who, "t") || tg__null_arg(index, who, "index")) return NULL;
    const tg_tensor *ti[2] = {t, index};
    if (!tg__same_device(who, 2, ti)) return NULL;
    if (index->dtype == TG_BOOL)
        return tg__fail(TG_ERR_DTYPE, "%s: index is bool: a bool index is a mask (use "
                        "tg_masked_select); tg_index takes i64 positions", who);
    if (index->dtype != TG_I64)
        return tg__fail(TG_ERR_DTYPE, "%s: index must be i64, got %s", who,
                        tg_dtype_name(index->dtype));
    if (!data_dtype_ok(who, t)) return NULL;
    if (t->ndim == 0)
        return tg__fail(TG_ERR_DIM, "%s: cannot index a 0-d tensor along a dimension", who);
    const int d = tg__wrap_dim(who, dim, t->ndim);
    if (d < 0) return NULL;
    const int rnd = t->ndim - 1 + index->ndim;
    if (rnd > TG_MAX_DIMS)
        return tg__fail(TG_ERR_VALUE, "%s: the result would have %d dims (at most %d)", who, rnd,
                        TG_MAX_DIMS);
    int64_t rshape[TG_MAX_DIMS];
    for (int i = 0; i < d; i++) rshape[i] = t->shape[i];
    for (int i = 0; i < index->ndim; i++) rshape[d + i] = index->shape[i];
    for (int i = d + 1; i < t->ndim; i++) rshape[i - 1 + index->ndim] = t->shape[i];
    if (tg__shape_check(who, rnd, rshape) < 0) return NULL;
    const int64_t J = tg__k_numel(index->ndim, index->shape);
    tg_tensor *w = J > 0 ? wrap_index(s, who, index, d, t->shape[d], true) : NULL;
    if (J > 0 && !w) return NULL;
    tg_tensor *out = take_along(s, who, t, d, w, index->ndim, rnd, rshape);
    tg__tensor_release(w);
    if (!out || !tg__needs_grad(1, &t)) return out;
    tg__node *n = tg__record(s, &index_def, 1, &t, out);
    if (!n || tg__node_save(n, index, false, 1) < 0) {
        tg__tensor_release(out);
        return NULL;
    }
    n->iparam[P_DIM] = d;
    return out;
}

tg_tensor *tg_index_at(tg_site s, tg_tensor *t, int dim, tg_tensor *index) {
    return tg__ret(index_op(s, t, dim, index));
}

/* ---- masked_select ---------------------------------------------------------------------- */

/* The positions (C order over t's own shape) of the elements of t broadcast
 * to bshape where mask (broadcast too) is true, in C order over bshape: a
 * new CPU i64 tensor of J entries. Reads the mask on the host (a copy of it
 * from a CUDA device). NULL with the error set. */
static tg_tensor *mask_positions(tg_site s, const char *who, const tg_tensor *t,
                                 const tg_tensor *mask, int nd, const int64_t *bshape) {
    void *owned;
    int64_t lo;
    const uint8_t *mp = tg__host_elems(who, mask, &owned, &lo);
    if (!mp) return NULL;
    const int64_t base = mask->offset - lo; /* element offset 0 of mask in mp */
    int64_t mst[TG_MAX_DIMS], tst[TG_MAX_DIMS], tc[TG_MAX_DIMS], at[TG_MAX_DIMS] = {0};
    tg__broadcast_strides(mask, nd, bshape, mst);
    int64_t acc = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        tc[i] = acc;
        acc *= t->shape[i];
    }
    for (int i = 0; i < nd; i++) {
        const int it = t->ndim - nd + i;
        tst[i] = it < 0 || t->shape[it] != bshape[i] ? 0 : tc[it];
    }
    const int64_t N = tg__k_numel(nd, bshape);
    int64_t J = 0, *out = NULL;
    tg_tensor *pos = NULL;
    for (int pass = 0; pass < 2; pass++) {
        int64_t mo = 0, to = 0, k = 0;
        memset(at, 0, sizeof at);
        for (int64_t e = 0; e < N; e++) {
            if (mp[base + mo]) {
                if (pass) out[k] = to;
                k++;
            }
            for (int i = nd - 1; i >= 0; i--) { /* the next position, C order */
                mo += mst[i];
                to += tst[i];
                if (++at[i] < bshape[i]) break;
                mo -= mst[i] * bshape[i];
                to -= tst[i] * bshape[i];
                at[i] = 0;
            }
        }
        if (pass) break;
        J = k;
        pos = tg__tensor_new(s, who, TG_I64, 1, &J, tg__op_category());
        if (!pos) break;
        out = tg__ptr(pos);
    }
    free(owned);
    return pos;
}

/* MaskedSelectBackward: saved slot 0 the positions into t (an internal
 * tensor: neither t nor the mask is kept). */
static tg_status masked_select_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    tg_tensor *pos = tg__node_saved(n, 0);
    if (!pos) return tg_last_status();
    const int64_t nt = tg__k_numel(m->ndim, m->shape);
    tg_tensor *z = tg__zeros_on(n->site, gout[0]->storage->device, m->dtype, 1, &nt);
    tg_status st = z ? TG_OK : tg_last_status();
    if (z && tg__k_numel(pos->ndim, pos->shape) > 0) st = tg__k_gather_backward(gout[0], pos, z);
    tg__tensor_release(pos);
    int64_t cst[TG_MAX_DIMS], acc = 1; /* t's shape, contiguous */
    for (int i = m->ndim - 1; i >= 0; i--) {
        cst[i] = acc;
        acc *= m->shape[i] ? m->shape[i] : 1;
    }
    if (st == TG_OK &&
        !(gin[0] = tg__tensor_alias(n->site, z->storage, z->dtype, m->ndim, m->shape, cst, 0)))
        st = tg_last_status();
    tg__tensor_release(z);
    return st;
}
static const tg__op_def masked_select_def = {"MaskedSelectBackward", masked_select_backward,
                                             false, NULL};

static tg_tensor *masked_select_op(tg_site s, tg_tensor *t, tg_tensor *mask) {
    const char *who = "tg_masked_select";
    if (tg__null_arg(t, who, "t") || tg__null_arg(mask, who, "mask")) return NULL;
    const tg_tensor *tm[2] = {t, mask};
    if (!tg__same_device(who, 2, tm)) return NULL;
    if (mask->dtype != TG_BOOL)
        return tg__fail(TG_ERR_DTYPE, "%s: mask must be bool, got %s (as PyTorch; compare with "
                        "tg_ne_scalar(mask, 0) to make one)", who, tg_dtype_name(mask->dtype));
    if (!data_dtype_ok(who, t)) return NULL;
    int nd;
    int64_t bshape[TG_MAX_DIMS];
    if (tg__broadcast_shapes(who, t->ndim, t->shape, mask->ndim, mask->shape, &nd, bshape) != TG_OK)
        return NULL;
    tg_tensor *pos = mask_positions(s, who, t, mask, nd, bshape);
    if (!pos) return NULL;
    if (t->storage->device != TG_CPU) {
        tg_tensor *dp = tg__device_copy(s, who, pos, t->storage->device);
        tg__tensor_release(pos);
        if (!(pos = dp)) return NULL;
    }
    const int64_t J = pos->shape[0], nt = tg__k_numel(t->ndim, t->shape);
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, 1, &J);
    if (out && J > 0) { /* t's elements in C order, one row */
        tg_tensor *tc = tg__device_copy(s, who, t, t->storage->device);
        tg_tensor *flat = tc ? tg__tensor_alias(s, tc->storage, tc->dtype, 1, &nt,
                                                (int64_t[]){1}, tc->offset)
                             : NULL;
        out = tg__k_ok(flat ? tg__k_gather_forward(flat, pos, out) : tg_last_status(), out);
        tg__tensor_release(tc);
        tg__tensor_release(flat);
    }
    if (out && tg__needs_grad(1, &t)) {
        tg__node *n = tg__record(s, &masked_select_def, 1, &t, out);
        if (!n || tg__node_save(n, pos, false, -1) < 0) {
            tg__tensor_release(out);
            out = NULL;
        }
    }
    tg__tensor_release(pos);
    return out;
}

tg_tensor *tg_masked_select_at(tg_site s, tg_tensor *t, tg_tensor *mask) {
    return tg__ret(masked_select_op(s, t, mask));
}
