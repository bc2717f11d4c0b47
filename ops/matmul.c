/* ops/matmul.c - tg_matmul: a (..., M, K) @ b (..., K, N) -> (..., M, N).
 *
 * Contract: f32/f64 CPU operands of one dtype, any strides (transposed
 * matrices go to BLAS as CblasTrans, other layouts are packed by the kernel).
 * Shapes: both 2-D; both batched with equal leading dims (up to 8 dims); or a
 * batched and b 2-D (a weight shared by every batch entry). Zero-size M, N or
 * K work (K == 0 gives zeros). Errors: TG_ERR_NULL, TG_ERR_DTYPE,
 * TG_ERR_DEVICE, TG_ERR_SHAPE (ndim < 2, inner sizes differ, batch dims
 * differ; the message shows both shapes), TG_ERR_NOMEM.
 * Backward (MmBackward for 2-D, BmmBackward for batched) saves a and b:
 *   dA = dC @ B^T, dB = A^T @ dC (summed over the batch when b is shared).
 */
#include <string.h>

#include "ops_internal.h"

static tg_status matmul_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin);

static const tg__op_def matmul_def = {"MmBackward", matmul_backward, false, NULL};
static const tg__op_def bmm_def = {"BmmBackward", matmul_backward, false, NULL};

/* Argument checks; on success *b_shared tells whether b is a 2-D weight used
 * by every batch entry of a batched a. */
static bool mm_check(const tg_tensor *a, const tg_tensor *b, bool *b_shared) {
    char sa[128], sb[128];
    const tg_tensor *ab[2] = {a, b};
    if (!tg__same_device("tg_matmul", 2, ab))
        return false;
    if (!tg__is_float(a->dtype) || a->dtype != b->dtype) {
        tg__set_error(TG_ERR_DTYPE,
                      "tg_matmul: operands must be f32, f64 or bf16 of one dtype, got %s and %s",
                      tg_dtype_name(a->dtype), tg_dtype_name(b->dtype));
        return false;
    }
    tg__shape_str(sa, sizeof sa, a->ndim, a->shape);
    tg__shape_str(sb, sizeof sb, b->ndim, b->shape);
    if (a->ndim < 2 || b->ndim < 2) {
        tg__set_error(TG_ERR_SHAPE,
                      "tg_matmul: both operands need at least 2 dims, got a %s and b %s", sa, sb);
        return false;
    }
    int64_t ka = a->shape[a->ndim - 1], kb = b->shape[b->ndim - 2];
    if (ka != kb) {
        tg__set_error(TG_ERR_SHAPE, "tg_matmul: inner sizes differ: a %s @ b %s (%lld != %lld)", sa,
                      sb, (long long)ka, (long long)kb);
        return false;
    }
    *b_shared = b->ndim == 2 && a->ndim > 2;
    if (*b_shared || (a->ndim == 2 && b->ndim == 2))
        return true;
    bool same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim - 2; d++)
        same = a->shape[d] == b->shape[d];
    if (!same) {
        tg__set_error(TG_ERR_SHAPE,
                      "tg_matmul: batch dims differ: a %s @ b %s "
                      "(need equal leading dims, or b 2-D)",
                      sa, sb);
        return false;
    }
    return true;
}

/* Node parameters: the saved slots of a and b (-1: not saved). */
enum { SLOT_A = 0, SLOT_B = 1 };

/* Whether a's dims before the last can be merged into one without a copy (a
 * view of shape (-1, K), as PyTorch's reshape would make). */
static bool foldable(const tg_tensor *a) {
    int64_t expect = -1; /* the stride the next outer dim must have; -1: any */
    for (int d = a->ndim - 2; d >= 0; d--) {
        if (a->shape[d] == 0) return true;
        if (a->shape[d] == 1) continue;
        if (expect >= 0 && a->strides[d] != expect) return false;
        expect = a->strides[d] * a->shape[d];
    }
    return true;
}

/* What dB = A^T @ dC is computed from, saved: a itself, or, for a batched a
 * with a shared 2-D b whose batch dims cannot be folded into rows without a
 * copy, a contiguous copy. PyTorch's matmul folds a into (B M, K) with
 * reshape, which copies there and saves the copy, so an in-place edit of a
 * after the matmul does not fail its backward; tapegrad saves the same thing
 * (and counts its bytes as saved). A new reference. */
static tg_tensor *a_to_save(tg_site s, tg_tensor *a, bool b_shared) {
    if (!b_shared || foldable(a)) return tg_retain(a);
    bool prev = tg_is_grad_enabled();
    tg_set_grad_enabled(false);
    tg_tensor *c = tg__clone(s, a);
    tg_set_grad_enabled(prev);
    return c;
}

/* bf16 operands (both): each converted to f32 (a differentiable
 * conversion: its gradient goes back as bf16), then the f32 product, so the
 * result is f32 and every sum is accumulated in f32. The conversions are
 * what the graph saves (f32 copies of the operands). */
static tg_tensor *matmul_bf16(tg_site s, tg_tensor *a, tg_tensor *b) {
    tg_tensor *a32 = tg__to_dtype(s, a, TG_F32);
    tg_tensor *b32 = a32 ? tg__to_dtype(s, b, TG_F32) : NULL;
    tg_tensor *r = b32 ? tg__matmul(s, a32, b32) : NULL;
    tg__tensor_release(a32);
    tg__tensor_release(b32);
    return r;
}

tg_tensor *tg__matmul(tg_site s, tg_tensor *a, tg_tensor *b) {
    if (tg__null_arg(a, "tg_matmul", "a") || tg__null_arg(b, "tg_matmul", "b"))
        return NULL;
    if (a->dtype == TG_BF16 && b->dtype == TG_BF16) {
        const tg_tensor *ab[2] = {a, b};
        if (!tg__same_device("tg_matmul", 2, ab)) return NULL;
        return matmul_bf16(s, a, b);
    }
    bool b_shared = false;
    if (!mm_check(a, b, &b_shared))
        return NULL;

    int nd = a->ndim, nb = nd - 2;
    int64_t oshape[TG_MAX_DIMS]; // (..., M, N)
    memcpy(oshape, a->shape, sizeof(int64_t) * (size_t)nd);
    oshape[nd - 1] = b->shape[b->ndim - 1];
    tg_tensor *out = tg__new_output_on(s, "tg_matmul", a->storage->device, a->dtype, nd, oshape);
    if (!out)
        return NULL;

    tg__mat ma = tg__mat_of(a, false), mb = tg__mat_of(b, b_shared), mc = tg__mat_of(out, false);
    if (tg__k_matmul(a->storage->device, "tg_matmul", a->dtype, nb, a->shape, &ma, &mb, &mc, false, false) != TG_OK) {
        tg__tensor_release(out);
        return NULL;
    }

    tg_tensor *inputs[2] = {a, b};
    if (tg__needs_grad(2, inputs)) {
        const tg__op_def *def = nd == 2 ? &matmul_def : &bmm_def;
        tg__node *n = tg__record(s, def, 2, inputs, out);
        /* dA = dC @ B^T needs b, dB = A^T @ dC needs a: save only what the
         * needed gradients use (as PyTorch), so an in-place edit of the other
         * operand does not fail backward */
        bool need_a = n && n->edge[0].kind != TG__EDGE_NONE;
        bool need_b = n && n->edge[1].kind != TG__EDGE_NONE;
        if (n) n->iparam[SLOT_A] = n->iparam[SLOT_B] = -1;
        tg_tensor *as = n && need_b ? a_to_save(s, a, b_shared) : NULL;
        bool fail = !n || (need_b && !as) ||
                    (need_b &&
                     (n->iparam[SLOT_A] = tg__node_save(n, as, false, as != a ? -1 : 0)) < 0) ||
                    (need_a && (n->iparam[SLOT_B] = tg__node_save(n, b, false, 1)) < 0);
        tg__tensor_release(as);
        if (fail) {
            tg__tensor_release(out);
            return NULL;
        }
    }
    return out;
}

tg_tensor *tg_matmul_at(tg_site s, tg_tensor *a, tg_tensor *b) {
    return tg__ret(tg__matmul(s, a, b));
}

/* Saved slots: iparam[SLOT_A] = a (..., M, K), saved when b needs a gradient;
 * iparam[SLOT_B] = b (..., K, N) or (K, N) when shared, saved when a needs one. */
static tg_status matmul_backward(tg__node *n, tg_tensor *const *gout, tg_tensor **gin) {
    bool need_a = n->edge[0].kind != TG__EDGE_NONE, need_b = n->edge[1].kind != TG__EDGE_NONE;
    const tg__meta *am = &n->in_meta[0], *bm = &n->in_meta[1];
    tg_tensor *g = gout[0]; // (..., M, N)
    int nb = am->ndim - 2;
    bool b_shared = bm->ndim == 2 && am->ndim > 2;
    tg_tensor *a = NULL, *b = NULL, *da = NULL, *db = NULL;
    tg_status st = TG_OK;

    if (need_a) {
        b = tg__node_saved(n, (int)n->iparam[SLOT_B]);
        if (!b)
            goto fail;
        da = tg__new_output_on(n->site, "tg_matmul", g->storage->device, am->dtype, am->ndim,
                               am->shape); // (..., M, K)
        if (!da)
            goto fail;
        /* dA = dC @ B^T */
        tg__mat mg = tg__mat_of(g, false), mbt = tg__mat_t(tg__mat_of(b, b_shared));
        tg__mat mda = tg__mat_of(da, false);
        if (tg__k_matmul(g->storage->device, "MmBackward", am->dtype, nb, am->shape, &mg, &mbt, &mda, false, false) != TG_OK)
            goto fail;
    }
    if (need_b) {
        a = tg__node_saved(n, (int)n->iparam[SLOT_A]);
        if (!a)
            goto fail;
        db = tg__new_output_on(n->site, "tg_matmul", g->storage->device, bm->dtype, bm->ndim,
                               bm->shape); // (..., K, N)
        if (!db)
            goto fail;
        /* dB = A^T @ dC, summed over the batch when b is shared. */
        tg__mat mat = tg__mat_t(tg__mat_of(a, false)), mg = tg__mat_of(g, false);
        tg__mat mdb = tg__mat_of(db, false);
        if (tg__k_matmul(g->storage->device, "MmBackward", bm->dtype, nb, am->shape, &mat, &mg, &mdb, b_shared, false) !=
            TG_OK)
            goto fail;
    }
    tg__tensor_release(a);
    tg__tensor_release(b);
    gin[0] = da;
    gin[1] = db;
    return TG_OK;

fail:
    st = tg_last_status();
    if (st == TG_OK)
        st = TG_ERR_INTERNAL;
    tg__tensor_release(a);
    tg__tensor_release(b);
    tg__tensor_release(da);
    tg__tensor_release(db);
    return st;
}
