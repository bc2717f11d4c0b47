/* ops/inplace.c - in-place ops: add_, sub_, mul_, div_, pow_, scale_, copy_,
 * fill_ and tg_mark_modified. The arithmetic ones take the dtypes of their
 * out-of-place ops, computed in the promoted dtype and written back converted
 * where PyTorch allows it (f32 += f64; not a float into an i64 tensor). Each bumps the storage's version counter and records its
 * name and call site, so that a later backward can name it. With grad mode on
 * and the tensor or the other operand requiring grad the op is recorded, as
 * in PyTorch: refused on a leaf that requires grad (and on a view of one);
 * on other tensors the tensor's grad_fn becomes the op's node, and on a view
 * its base's grad_fn becomes a CopySlices node (ops/view_inplace.c). Memory
 * marked read-only (tg_mark_read_only) is refused first, TG_ERR_READONLY;
 * tg_mark_modified writes nothing and takes it. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

typedef enum { IP_ADD, IP_SUB, IP_MUL, IP_DIV, IP_POW, IP_SCALE, IP_COPY, IP_FILL } ip_kind;
#define IP_COUNT (IP_FILL + 1)

static const char *const ip_name[] = {"add_", "sub_",   "mul_",  "div_",
                                      "pow_", "scale_", "copy_", "fill_"};
static const char *const ip_who[] = {"tg_add_", "tg_sub_",   "tg_mul_",  "tg_div_",
                                     "tg_pow_", "tg_scale_", "tg_copy_", "tg_fill_"};
/* what the in-place error's hint suggests instead of each */
static const char *const ip_alt[] = {"tg_add", "tg_sub",   "tg_mul", "tg_div", "tg_pow",
                                     "tg_scale", "a copy of the source (tg_clone)", "tg_full"};
_Static_assert(sizeof ip_name / sizeof *ip_name == IP_COUNT &&
                   sizeof ip_who / sizeof *ip_who == IP_COUNT &&
                   sizeof ip_alt / sizeof *ip_alt == IP_COUNT,
               "a name, a public name and an alternative for every in-place op");

/* The ops of two tensors computed as their out-of-place op (tg_add, ...). */
static bool arith2(ip_kind k) {
    return k == IP_ADD || k == IP_SUB || k == IP_MUL || k == IP_DIV || k == IP_POW;
}

static bool overlapping(const tg_tensor *t) {
    if (tg__k_numel(t->ndim, t->shape) == 0) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1) return true;
    return false;
}

/* Argument and autograd checks shared by all in-place ops. other may be NULL
 * (scale_, fill_). record: the op will be recorded in the graph. Returns
 * TG_OK or the error. */
static tg_status check(ip_kind k, tg_tensor *t, tg_tensor *other, bool record) {
    const char *who = ip_who[k];
    char a[160], b[160];
    const tg_tensor *to[2] = {t, other};
    if (!tg__same_device(who, 2, to)) return tg_last_status();
    if (k != IP_COPY && k != IP_FILL && t->dtype == TG_BF16)
        return tg__set_error(TG_ERR_DTYPE, "%s: a bf16 tensor is not supported (convert it with "
                             "tg_to_dtype)", who);
    if (other) {
        int nd;
        int64_t bs[TG_MAX_DIMS];
        bool ok = other->ndim <= t->ndim &&
                  tg__broadcast_shapes(who, t->ndim, t->shape, other->ndim, other->shape, &nd,
                                       bs) == TG_OK;
        for (int d = 0; ok && d < nd; d++) ok = bs[d] == t->shape[d];
        if (!ok)
            return tg__set_error(TG_ERR_SHAPE, "%s: shape %s cannot be broadcast to the "
                                 "modified tensor's shape %s", who,
                                 tg__shape_str(a, sizeof a, other->ndim, other->shape),
                                 tg__shape_str(b, sizeof b, t->ndim, t->shape));
    }
    /* every element gets the same value: fill_ may write overlapping elements
     * (as PyTorch), unless it is recorded (PyTorch accepts that too, then
     * fails the backward: refused here, before anything is written) */
    if (overlapping(t) && (k != IP_FILL || record))
        return tg__set_error(TG_ERR_LAYOUT, "%s: the modified tensor has overlapping elements "
                             "(an expand view, strides %s); clone it first", who,
                             tg__shape_str(a, sizeof a, t->ndim, t->strides));
    if (!record) return TG_OK;
    if (t->view_base) return tg__check_view_inplace(who, t);
    if (t->requires_grad && !t->grad_fn)
        return tg__set_error(TG_ERR_AUTOGRAD, "%s: a leaf tensor that requires grad (%s) is "
                             "being used in an in-place operation; run it under TG_NO_GRAD "
                             "(e.g. an optimizer update) or use the out-of-place op", who,
                             TG__LABEL(t));
    return TG_OK;
}

/* ---- overwriting ops: the recorded forms of fill_ and copy_ ------------------ *
 * Their result does not depend on the tensor's old value, but (as in PyTorch)
 * the tensor keeps its place in the graph: the old history receives a zero
 * gradient, and copy_'s source the gradient summed to its shape. */

static tg_status overwrite_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    const tg__meta *m0 = &n->in_meta[0];
    if (n->edge[0].kind != TG__EDGE_NONE &&
        !(gin[0] = tg__zeros_on(n->site, m0->device, m0->dtype, m0->ndim, m0->shape)))
        return tg_last_status();
    if (n->n_in > 1 && n->edge[1].kind != TG__EDGE_NONE) {
        tg_tensor *c = tg__to_dtype(n->site, gout[0], n->in_meta[1].dtype);
        gin[1] = c ? tg__sum_to(n->site, c, &n->in_meta[1]) : NULL;
        tg__tensor_release(c);
        if (!gin[1]) {
            tg__tensor_release(gin[0]);
            gin[0] = NULL;
            return tg_last_status();
        }
    }
    return TG_OK;
}
static const tg__op_def fill_def = {"FillBackward", overwrite_backward, false, NULL};
static const tg__op_def copy_def = {"CopyBackward", overwrite_backward, false, NULL};

/* A new tensor of t's shape and dtype holding src (broadcast, converted) or,
 * when src is NULL, v; recorded with t (and src) as inputs. */
static tg_tensor *overwrite(tg_site s, tg_tensor *t, tg_tensor *src, double v) {
    tg_tensor *r = tg__new_output_on(s, src ? "tg_copy_" : "tg_fill_", t->storage->device,
                                     t->dtype, t->ndim, t->shape);
    if (!r) return NULL;
    tg_status st = src ? tg__k_copy(r, src) : tg__k_fill(r, v);
    tg_tensor *in[2] = {t, src};
    if (st != TG_OK || !tg__record(s, src ? &copy_def : &fill_def, src ? 2 : 1, in, r)) {
        tg__tensor_release(r);
        return NULL;
    }
    return r;
}

/* a and b see the same elements the same way (x.mul_(x)). */
static bool same_view(const tg_tensor *a, const tg_tensor *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return false;
    return true;
}

/* PyTorch's can_cast: an in-place result of dtype `from` may be written into
 * a tensor of dtype `to` unless that would drop a category (a float into an
 * integer or bool tensor, an integer into a bool one). */
static tg_status castable(const char *who, tg_dtype from, tg_dtype to) {
    bool ok = tg__is_floating(to) || (!tg__is_floating(from) && (to != TG_BOOL || from == TG_BOOL));
    if (ok) return TG_OK;
    return tg__set_error(TG_ERR_DTYPE, "%s: result type %s can't be cast to the desired output "
                         "type %s, the modified tensor's dtype (as PyTorch)", who,
                         tg_dtype_name(from), tg_dtype_name(to));
}

/* other op t's old values, for an op that saves its first operand for
 * backward: t is given as a copy (PyTorch saves a clone of self), as it is
 * about to change. */
static tg_tensor *on_copy_of_t(tg_site s, tg_tensor *(*op)(tg_site, tg_tensor *, tg_tensor *),
                               tg_tensor *t, tg_tensor *other) {
    tg_tensor *c = tg__clone(s, t);
    if (!c) return NULL;
    tg_tensor *r = op(s, c, other);
    tg__tensor_release(c);
    return r;
}

/* The out-of-place equivalent, recorded in the graph when grad mode is on and
 * an operand requires grad; its dtype is the promoted one (tg_add's rules). */
static tg_tensor *out_of_place(ip_kind k, tg_site s, tg_tensor *t, tg_tensor *other, double v) {
    switch (k) {
    case IP_ADD: return tg__add(s, t, other);
    case IP_SUB: return tg__sub(s, t, other);
    case IP_SCALE: return tg__scale(s, t, v);
    case IP_MUL: /* mul saves t for other's gradient */
        return tg__req_grad(other) ? on_copy_of_t(s, tg__mul, t, other) : tg__mul(s, t, other);
    case IP_DIV: /* div saves t for other's gradient */
        return tg_is_grad_enabled() && tg__req_grad(other) ? on_copy_of_t(s, tg__div, t, other)
                                                           : tg__div(s, t, other);
    case IP_POW: /* pow saves t whenever it is recorded */
        return tg__needs_grad(2, (tg_tensor *[]){t, other}) ? on_copy_of_t(s, tg__pow, t, other)
                                                            : tg__pow(s, t, other);
    case IP_COPY: return overwrite(s, t, other, 0.0);
    case IP_FILL: return overwrite(s, t, NULL, v);
    }
    return NULL;
}

/* A recorded in-place op: computed out of place, written into t, and t (or,
 * for a view, its base) takes the result's history. Nothing changes on
 * failure, but for a device kernel that fails while writing. */
static tg_status apply_recorded(ip_kind k, tg_site s, tg_tensor *t, tg_tensor *other, double v) {
    /* other partly in t's memory: read all of it first (a recorded copy, so
     * that what backward saves is not the memory about to be written), as
     * unrecorded; t itself (x.mul_(x)) is saved as it is, as PyTorch, and the
     * write then fails backward's version check */
    bool partial = other && k != IP_COPY && other->storage == t->storage && !same_view(t, other);
    tg_tensor *own = partial ? tg__clone(s, other) : NULL;
    if (partial && !own) return tg_last_status();
    if (own) other = own;
    tg_tensor *r = out_of_place(k, s, t, other, v);
    tg__tensor_release(own);
    if (!r) return tg_last_status();
    /* pow_ saves its result as PyTorch does: t itself once written, so that a
     * later edit of t fails backward (the out-of-place result is let go). Of
     * another dtype (computed in the promoted one), the result stays and t is
     * saved beside it, for the version check alone. */
    tg__node *pn = k == IP_POW && tg__pow_result_slot(r->grad_fn) >= 0 ? r->grad_fn : NULL;
    const bool same_dt = r->dtype == t->dtype;
    int t_slot = -1;
    tg__node_retain(pn);
    tg__node *cs = NULL;
    tg_status st = TG_OK;
    if (!same_dt) { /* promoted: back to t's dtype, recorded */
        tg_tensor *c = castable(ip_who[k], r->dtype, t->dtype) == TG_OK
                           ? tg__to_dtype(s, r, t->dtype)
                           : NULL;
        tg__tensor_release(r);
        if (!(r = c)) goto fail;
        if (pn && (t_slot = tg__node_save(pn, t, true, 0)) < 0) goto fail;
    }
    if (t->view_base && !(cs = tg__copyslices_new(s, t, r))) goto fail;
    if ((st = tg__k_copy(t, r)) != TG_OK) {
        tg__node_release(cs);
        tg__node_release(pn);
        tg__tensor_release(r);
        return st;
    }
    if (cs) {
        tg__copyslices_commit(cs, t); /* the base is rebased; t's grad_fn follows */
    } else {
        tg__node_retain(r->grad_fn);
        tg__node_release(t->grad_fn);
        t->grad_fn = r->grad_fn;
        t->output_nr = r->output_nr;
        t->requires_grad = true;
        t->hist++; /* views of t made before now are stale */
    }
    tg__tensor_release(r);
    tg__storage_bump(t->storage, ip_name[k], ip_alt[k], s);
    if (pn) { /* saved at t's new version */
        tg__node_resave(pn, same_dt ? tg__pow_result_slot(pn) : t_slot, t);
        tg__node_release(pn);
    }
    /* the new history may lead back to t, or to a leaf owning t: no owning
     * reference may go that way (no cycle) */
    tg__unown_leaf_chain(t->view_base ? t->view_base : t);
    return TG_OK;
fail:
    tg__node_release(pn);
    tg__tensor_release(r);
    return tg_last_status();
}

static tg_status apply_on(ip_kind k, tg_site s, tg_tensor *t, tg_tensor *other, double v);

static tg_status apply(ip_kind k, tg_site s, tg_tensor *t, tg_tensor *other, double v) {
    const char *who = ip_who[k];
    if (tg__null_arg(t, who, "t")) return tg_last_status();
    if (arith2(k) && tg__null_arg(other, who, "other"))
        return tg_last_status();
    if (k == IP_COPY && tg__null_arg(other, who, "src")) return tg_last_status();
    /* memory the caller may not write: refused before anything else */
    if (tg__check_writable(who, "the modified tensor", t) != TG_OK) return tg_last_status();
    /* a 0-d CPU `other` of a CUDA tensor is moved to the device first (PyTorch's
     * CPU scalars; t itself never changes device) */
    tg_tensor *moved;
    if (!tg__promote_scalars_to(s, t->storage->device, 1, &other, &moved))
        return tg_last_status();
    const char *prev = tg__caller_enter(who); /* the out-of-place ops' errors name it */
    tg_status st = apply_on(k, s, t, other, v);
    tg__caller_leave(prev);
    tg__release_promoted(1, &moved);
    return st;
}

static tg_status apply_on(ip_kind k, tg_site s, tg_tensor *t, tg_tensor *other, double v) {
    const char *who = ip_who[k];
    /* an integer or bool t takes values only (copy_ of a float that requires
     * grad into an i64 tensor is not recorded, as PyTorch) */
    bool record = tg_is_grad_enabled() && tg__is_floating(t->dtype) &&
                  (tg__req_grad(t) || (other && tg__req_grad(other)));
    tg_status st = TG_OK;
    if (arith2(k) && t->dtype != TG_BF16) {
        tg_tensor *ops[2] = {t, other}; /* PyTorch checks the result type first */
        tg_dtype rt = tg__result_type(2, ops);
        if (k == IP_DIV && !tg__is_floating(rt)) rt = TG_F32; /* true division */
        st = castable(who, rt, t->dtype);
    } else if (k == IP_SCALE && !tg__is_floating(t->dtype) && (v != floor(v) || !isfinite(v))) {
        st = castable(who, TG_F32, t->dtype);
    }
    if (st == TG_OK) st = check(k, t, other, record);
    if (st != TG_OK) return st;
    if (record) return apply_recorded(k, s, t, other, v);

    if (k != IP_COPY && k != IP_FILL && (!tg__is_float(t->dtype) || (other && other->dtype !=
                                                                     t->dtype))) {
        /* integer arithmetic or mixed dtypes: computed out of place in the
         * promoted dtype (PyTorch's rules), then written into t converted */
        tg_tensor *r = out_of_place(k, s, t, other, v);
        if (!r) return tg_last_status();
        st = castable(who, r->dtype, t->dtype);
        if (st == TG_OK) st = tg__k_copy(t, r);
        tg__tensor_release(r);
        if (st != TG_OK) return st;
        tg__storage_bump(t->storage, ip_name[k], ip_alt[k], s);
        return TG_OK;
    }
    tg_tensor *src = other;
    if (other && other->storage == t->storage) { /* aliasing: read from a copy */
        src = tg__tensor_new_on(s, who, t->storage->device, other->dtype, other->ndim,
                                other->shape, TG_MEM_WORKSPACE);
        if (!src) return tg_last_status();
        if ((st = tg__k_copy(src, other)) != TG_OK) {
            tg__tensor_release(src);
            return st;
        }
    }
    if (k == IP_COPY) {
        st = tg__k_copy(t, src);
    } else if (k == IP_FILL) {
        st = tg__k_fill(t, v);
    } else { /* the kernels write through t's strides */
        static const tg__binop bop[] = {[IP_ADD] = TG__BIN_ADD, [IP_SUB] = TG__BIN_SUB,
                                        [IP_MUL] = TG__BIN_MUL, [IP_DIV] = TG__BIN_DIV,
                                        [IP_POW] = TG__BIN_POW};
        if (k == IP_SCALE) st = tg__k_unary(TG__UN_SCALE, t, t, t->strides, v, 0.0);
        else st = tg__k_binary(bop[k], t, t, src, 0.0, 0.0);
    }
    if (src != other) tg__tensor_release(src);
    if (st != TG_OK) return st; /* a device kernel failed: t may be partly written */
    tg__storage_bump(t->storage, ip_name[k], ip_alt[k], s);
    return TG_OK;
}

tg_status tg_add__at(tg_site s, tg_tensor *t, tg_tensor *o) { return apply(IP_ADD, s, t, o, 0); }
tg_status tg_sub__at(tg_site s, tg_tensor *t, tg_tensor *o) { return apply(IP_SUB, s, t, o, 0); }
tg_status tg_mul__at(tg_site s, tg_tensor *t, tg_tensor *o) { return apply(IP_MUL, s, t, o, 0); }
tg_status tg_div__at(tg_site s, tg_tensor *t, tg_tensor *o) { return apply(IP_DIV, s, t, o, 0); }
tg_status tg_pow__at(tg_site s, tg_tensor *t, tg_tensor *o) { return apply(IP_POW, s, t, o, 0); }
tg_status tg_scale__at(tg_site s, tg_tensor *t, double k) { return apply(IP_SCALE, s, t, NULL, k); }
tg_status tg_copy__at(tg_site s, tg_tensor *t, tg_tensor *src) {
    return apply(IP_COPY, s, t, src, 0);
}
tg_status tg_fill__at(tg_site s, tg_tensor *t, double v) { return apply(IP_FILL, s, t, NULL, v); }

/* Read-only memory too: its owner may change it, and a graph that saved it
 * must then refuse it. */
tg_status tg_mark_modified_at(tg_site s, tg_tensor *t, const char *op_name) {
    if (tg__null_arg(t, "tg_mark_modified", "t")) return tg_last_status();
    tg__storage_bump(t->storage, op_name ? op_name : "(unnamed in-place write)", NULL, s);
    return TG_OK;
}
