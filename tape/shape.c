/* tape/shape.c - NumPy broadcasting of shapes and strides. */
#include "tg_internal.h"

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
    for (int i = 0; i < ndim; i++) {
        int it = t->ndim - ndim + i;
        if (it < 0 || (t->shape[it] == 1 && oshape[i] != 1)) strides[i] = 0;
        else strides[i] = t->strides[it];
    }
}
