/* ops/roll.c - rearranging copies: tg_roll (PyTorch's roll: elements shifted
 * cyclically along dims, or over the flattened tensor) and tg_repeat
 * (PyTorch's repeat: t tiled along each dim). No kernel of their own: roll
 * moves blocks with the copy kernel and its RollBackward rolls the gradient
 * back (saving nothing); repeat is made of views, expand and clone, so its
 * gradient is expand's (summed over the copies). Any dtype. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* ---- roll -------------------------------------------------------------------------------- */

/* How far each element moves: with `flat`, shift[0] positions over the
 * elements in C order; otherwise shift[d] positions along dim d; each in
 * [0, size). The node's state. */
typedef struct roll_shifts {
    bool flat;
    int64_t shift[TG_MAX_DIMS];
} roll_shifts;

/* a mod n in [0, n) (n > 0), for any a. */
static int64_t pmod(int64_t a, int64_t n) {
    const int64_t r = a % n;
    return r < 0 ? r + n : r;
}

/* dst <- src for one block: the dims in dims[0..k) whose bit of `which` is
 * set take the wrapped part (src [n - sh, n) to dst [0, sh)), the others the
 * rest (src [0, n - sh) to dst [sh, n)). Skips an empty block. */
static tg_status copy_block(tg_site s, tg_tensor *dst, const tg_tensor *src, const int *dims,
                            const int64_t *sh, int k, unsigned which) {
    int64_t shape[TG_MAX_DIMS], so = src->offset, doff = dst->offset;
    memcpy(shape, src->shape, sizeof shape);
    for (int j = 0; j < k; j++) {
        const int d = dims[j];
        const int64_t n = src->shape[d], m = sh[j];
        const bool wrapped = which >> j & 1;
        shape[d] = wrapped ? m : n - m;
        so += (wrapped ? n - m : 0) * src->strides[d];
        doff += (wrapped ? 0 : m) * dst->strides[d];
    }
    if (tg__k_numel(src->ndim, shape) == 0) return TG_OK;
    tg_tensor *a = tg__tensor_alias(s, src->storage, src->dtype, src->ndim, shape, src->strides,
                                    so);
    tg_tensor *b = a ? tg__tensor_alias(s, dst->storage, dst->dtype, dst->ndim, shape, dst->strides,
                                        doff)
                     : NULL;
    tg_status st = b ? tg__k_copy(b, a) : tg_last_status();
    tg__tensor_release(a);
    tg__tensor_release(b);
    return st;
}

/* t rolled by r: a new contiguous tensor of t's shape, not recorded. Each
 * element is copied once: one block per choice of part along each rolled
 * dim (at most 2^8 copies); over the flattened elements, two. */
static tg_tensor *roll_copy(tg_site s, const char *who, tg_tensor *t, const roll_shifts *r) {
    tg_tensor *out = tg__new_output_on(s, who, t->storage->device, t->dtype, t->ndim, t->shape);
    const int64_t numel = tg__k_numel(t->ndim, t->shape);
    if (!out || numel == 0) return out;
    tg_status st = TG_OK;
    if (r->flat) { /* a contiguous t seen as one dim */
        tg_tensor *c = tg__device_copy(s, who, t, t->storage->device);
        tg_tensor *a = c ? tg__tensor_alias(s, c->storage, c->dtype, 1, &numel, (int64_t[]){1},
                                            c->offset)
                         : NULL;
        tg_tensor *b = a ? tg__tensor_alias(s, out->storage, out->dtype, 1, &numel,
                                            (int64_t[]){1}, out->offset)
                         : NULL;
        const int dim0 = 0;
        for (unsigned w = 0; b && st == TG_OK && w < 2; w++)
            st = copy_block(s, b, a, &dim0, r->shift, 1, w);
        if (!b) st = tg_last_status();
        tg_tensor *temps[3] = {c, a, b};
        for (int i = 0; i < 3; i++)
            tg__tensor_release(temps[i]);
    } else {
        int dims[TG_MAX_DIMS], k = 0;
        int64_t sh[TG_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++)
            if (r->shift[d]) {
                dims[k] = d;
                sh[k++] = r->shift[d];
            }
        for (unsigned w = 0; st == TG_OK && w < (1u << k); w++)
            st = copy_block(s, out, t, dims, sh, k, w);
    }
    return tg__k_ok(st, out);
}

/* The gradient: g rolled back (the shifts' complements). */
static tg_status roll_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m = &n->in_meta[0];
    const roll_shifts *r = n->state;
    roll_shifts back = *r;
    if (r->flat) {
        if (r->shift[0]) back.shift[0] = tg__k_numel(m->ndim, m->shape) - r->shift[0];
    } else {
        for (int d = 0; d < m->ndim; d++)
            if (r->shift[d]) back.shift[d] = m->shape[d] - r->shift[d];
    }
    gin[0] = roll_copy(n->site, n->name, gout[0], &back);
    return gin[0] ? TG_OK : tg_last_status();
}
static const tg__op_def roll_def = {"RollBackward", roll_backward, false, NULL};

static tg_tensor *roll_op(tg_site s, tg_tensor *t, int nshifts, const int64_t *shifts,
                          int ndims, const int *dims) {
    const char *who = "tg_roll";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (nshifts < 0 || ndims < 0)
        return tg__fail(TG_ERR_VALUE, "%s: nshifts %d and ndims %d must not be negative", who,
                        nshifts, ndims);
    if ((nshifts > 0 && tg__null_arg(shifts, who, "shifts")) ||
        (ndims > 0 && tg__null_arg(dims, who, "dims")))
        return NULL;
    if (ndims == 0 && nshifts != 1)
        return tg__fail(TG_ERR_VALUE, "%s: without dims, one shift is required (got %d): the "
                        "flattened tensor is rolled", who, nshifts);
    if (ndims > 0 && nshifts != ndims)
        return tg__fail(TG_ERR_VALUE, "%s: shifts and dims must align (%d shifts, %d dims)", who,
                        nshifts, ndims);
    if (ndims > 0 && t->ndim == 0)
        return tg__fail(TG_ERR_DIM, "%s: a 0-d tensor has no dimension to roll along", who);
    roll_shifts r;
    memset(&r, 0, sizeof r);
    if (ndims == 0) {
        const int64_t n = tg__k_numel(t->ndim, t->shape);
        r.flat = true;
        r.shift[0] = n ? pmod(shifts[0], n) : 0;
    }
    for (int k = 0; k < ndims; k++) { /* a dim given twice is rolled twice */
        const int d = tg__wrap_dim(who, dims[k], t->ndim);
        if (d < 0) return NULL;
        const int64_t n = t->shape[d];
        if (n) r.shift[d] = (r.shift[d] + pmod(shifts[k], n)) % n; /* < 2^61: no overflow */
    }
    tg_tensor *out = roll_copy(s, who, t, &r);
    if (!out || !tg__needs_grad(1, &t)) return out;
    roll_shifts *state = tg__xmalloc(sizeof *state);
    tg__node *n = state ? tg__record(s, &roll_def, 1, &t, out) : NULL;
    if (!n) {
        free(state);
        tg__tensor_release(out);
        return NULL;
    }
    *state = r;
    n->state = state;
    n->state_bytes = sizeof *state;
    return out;
}

tg_tensor *tg_roll_at(tg_site s, tg_tensor *t, int nshifts, const int64_t *shifts, int ndims,
                      const int *dims) {
    return tg__ret(roll_op(s, t, nshifts, shifts, ndims, dims));
}

/* ---- repeat -------------------------------------------------------------------------------- */

/* cur tiled r times along dim i: a new dim of size r and stride 0 in front
 * of dim i (expand), copied (clone) and merged with dim i. With a full
 * TG_MAX_DIMS dims, cur is first seen as (before, 1, size_i, after).
 * Recorded: the gradient sums over the copies (expand's backward). */
static tg_tensor *repeat_dim(tg_site s, tg_tensor *cur, int i, int64_t r) {
    const int nd = cur->ndim;
    int64_t out_shape[TG_MAX_DIMS], es[TG_MAX_DIMS], vs[4];
    memcpy(out_shape, cur->shape, sizeof out_shape);
    out_shape[i] *= r; /* checked by the caller */
    tg_tensor *v;
    int end;
    if (nd < TG_MAX_DIMS) {
        v = tg__unsqueeze(s, cur, i); /* (..., 1, size_i, ...) */
        end = nd + 1;
        if (v) memcpy(es, v->shape, sizeof es);
    } else {
        vs[0] = tg__k_numel(i, cur->shape);
        vs[1] = 1;
        vs[2] = cur->shape[i];
        vs[3] = tg__k_numel(nd - i - 1, cur->shape + i + 1);
        v = tg__reshape(s, cur, 4, vs);
        end = 4;
        memcpy(es, vs, sizeof vs);
        i = 1;
    }
    if (v) es[i] = r;
    tg_tensor *e = v ? tg__expand(s, v, end, es) : NULL;
    tg_tensor *c = e ? tg__clone(s, e) : NULL;
    tg_tensor *out = c ? tg__reshape_own(s, c, nd, out_shape) : NULL;
    tg_tensor *temps[3] = {v, e, c};
    for (int k = 0; k < 3; k++)
        tg__tensor_release(temps[k]);
    return out;
}

static tg_tensor *repeat_op(tg_site s, tg_tensor *t, int ndim, const int64_t *repeats) {
    const char *who = "tg_repeat";
    if (tg__null_arg(t, who, "t")) return NULL;
    if (ndim < t->ndim)
        return tg__fail(TG_ERR_VALUE, "%s: %d repeats for a tensor of %d dims (the number of "
                        "repeats can not be smaller than the number of dims)", who, ndim, t->ndim);
    if (ndim > TG_MAX_DIMS)
        return tg__fail(TG_ERR_VALUE, "%s: %d repeats: the result would have %d dims (at most "
                        "%d)", who, ndim, ndim, TG_MAX_DIMS);
    if (ndim > 0 && tg__null_arg(repeats, who, "repeats")) return NULL;
    const int lead = ndim - t->ndim;
    int64_t p[TG_MAX_DIMS], out_shape[TG_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        p[i] = i < lead ? 1 : t->shape[i - lead];
        if (repeats[i] < 0)
            return tg__fail(TG_ERR_VALUE, "%s: repeats[%d] is %" PRId64 " (negative)", who, i,
                            repeats[i]);
        if (__builtin_mul_overflow(p[i], repeats[i], &out_shape[i]))
            out_shape[i] = INT64_MAX; /* refused just below */
    }
    if (tg__shape_check(who, ndim, out_shape) < 0) return NULL;
    const char *prev = tg__caller_enter(who); /* errors of the ops below name tg_repeat */
    tg_tensor *cur = lead ? tg__expand(s, t, ndim, p) : tg_retain(t);
    bool copied = false;
    for (int i = 0; cur && i < ndim; i++) {
        if (repeats[i] == 1) continue;
        tg_tensor *next = repeat_dim(s, cur, i, repeats[i]);
        tg__tensor_release(cur);
        cur = next;
        copied = true;
    }
    if (cur && !copied) { /* a copy, as PyTorch, even when nothing is repeated */
        tg_tensor *c = tg__clone(s, cur);
        tg__tensor_release(cur);
        cur = c;
    }
    tg__caller_leave(prev);
    return cur;
}

tg_tensor *tg_repeat_at(tg_site s, tg_tensor *t, int ndim, const int64_t *repeats) {
    return tg__ret(repeat_op(s, t, ndim, repeats));
}
