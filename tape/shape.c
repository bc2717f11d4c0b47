/* tape/shape.c - shape validation with checked arithmetic, NumPy
 * broadcasting of shapes and strides. */
#include <assert.h>

#include "errors.h"
#include "tensor_impl.h"

int64_t tg__shape_check(const char *who, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > TG_MAX_DIMS)
        return tg__set_error(TG_ERR_VALUE, "%s: ndim %d outside [0, %d]", who, ndim, TG_MAX_DIMS),
               -1;
    if (ndim > 0 && !shape)
        return tg__set_error(TG_ERR_NULL, "%s: argument 'shape' is NULL with ndim %d", who, ndim),
               -1;
    int64_t n = 1, extent = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return tg__set_error(TG_ERR_VALUE, "%s: negative size %lld in dimension %d", who,
                                 (long long)shape[d], d),
                   -1;
        int64_t sz = shape[d] ? shape[d] : 1;
        if (__builtin_mul_overflow(extent, sz, &extent) || extent > TG__MAX_NUMEL) {
            char buf[160];
            return tg__set_error(TG_ERR_SHAPE, "%s: shape %s is too large (the product of its "
                                 "sizes, counting 0 as 1, exceeds 2^60)", who,
                                 tg__shape_str(buf, sizeof buf, ndim, shape)),
                   -1;
        }
        n *= shape[d]; /* <= extent: cannot overflow */
    }
    return n;
}

tg_status tg__broadcast_shapes(const char *who, int na, const int64_t *sa, int nb,
                               const int64_t *sb, int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    int64_t tmp[TG_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t a = ia >= 0 ? sa[ia] : 1;
        int64_t b = ib >= 0 ? sb[ib] : 1;
        if (a != b && a != 1 && b != 1) {
            char ba[160], bb[160];
            return tg__set_error(TG_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast "
                                 "(dimension %d: %lld vs %lld)", who,
                                 tg__shape_str(ba, sizeof ba, na, sa),
                                 tg__shape_str(bb, sizeof bb, nb, sb), i, (long long)a,
                                 (long long)b);
        }
        tmp[i] = a == 1 ? b : a;
    }
    for (int i = 0; i < n; i++) out[i] = tmp[i];
    *nout = n;
    return TG_OK;
}

void tg__broadcast_strides(const tg_tensor *t, int ndim, const int64_t *oshape,
                           int64_t *strides) {
    /* the caller checked that t broadcasts to oshape: a (N) read as (B, T) would
     * otherwise be taken silently as (T) repeated */
    assert(t->ndim <= ndim);
    for (int i = 0; i < ndim; i++) {
        int it = t->ndim - ndim + i;
        assert(it < 0 || t->shape[it] == 1 || t->shape[it] == oshape[i]);
        if (it < 0 || (t->shape[it] == 1 && oshape[i] != 1)) strides[i] = 0;
        else strides[i] = t->strides[it];
    }
}
