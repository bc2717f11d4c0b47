/* tests/registry/rows.h - what the rows_*.c files share to write a row's
 * call: its parameters by kind and the apply function of a row with one
 * output. Included by the rows files only (the names are short). */
#ifndef TG_TESTS_REGISTRY_ROWS_H
#define TG_TESTS_REGISTRY_ROWS_H

#include <limits.h>

#include "registry.h"

/* The parameters of the call, inside an apply function (tgr_args *a). */
#define PI(k) (a->iv[k])        /* an integer */
#define PD(k) ((int)a->iv[k])   /* a dim */
#define PB(k) (a->iv[k] != 0)   /* a bool */
#define PR(k) (a->fv[k])        /* a double */

/* ap_NAME for a row with one output: out[0] = expr (a new reference or NULL). */
#define CALL(name, expr)                                                                        \
    static tg_status ap_##name(const tgr_op *op, tg_tensor *const *in, const tgr_args *a,     \
                               tg_tensor **out) {                                               \
        (void)op, (void)a, (void)in;                                                            \
        out[0] = (expr);                                                                        \
        return out[0] ? TG_OK : tg_last_status();                                               \
    }

/* The shape field as a list of int dims (clamped to the int range) in buf. */
static inline const int *tgr_dims_of(const tgr_args *a, int *buf) {
    for (int i = 0; i < a->ndim; i++)
        buf[i] = a->shape[i] < INT_MIN ? INT_MIN : a->shape[i] > INT_MAX ? INT_MAX : (int)a->shape[i];
    return buf;
}
/* The same, as an argument: DIMS(a) in a call. */
#define DIMS(a) tgr_dims_of(a, (int[TGR_MAX_SHAPE]){0})

#endif
