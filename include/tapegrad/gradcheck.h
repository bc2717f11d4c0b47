/* tapegrad/gradcheck.h - gradient checking by central differences. */
#ifndef TAPEGRAD_GRADCHECK_H
#define TAPEGRAD_GRADCHECK_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds the output of the function under test from its inputs. Must return a
 * new reference (or NULL on error) and must not keep the inputs. */
typedef tg_tensor *(*tg_gradcheck_fn)(tg_tensor *const *inputs, void *user);

typedef struct tg_gradcheck_opts {
    double eps;  /* finite-difference step, default 1e-6 */
    double atol; /* default 1e-5 */
    double rtol; /* default 1e-3 (PyTorch's defaults) */
} tg_gradcheck_opts;

/* Compares the analytical Jacobian of fn (one backward per output element)
 * with central differences, for every input that requires grad. Inputs should
 * be f64 leaves (f32 works with looser tolerances); they may be strided but
 * not overlapping (no expand views: expand inside fn instead). Inputs are
 * perturbed in place and restored bit for bit (so an input that requires
 * grad may not be read-only memory: TG_ERR_READONLY, nothing perturbed;
 * pass a copy); their .grad is left as found.
 * Passes when |analytical - numerical| <= atol + rtol * |numerical| for every
 * entry. opts may be NULL for the defaults.
 * Returns TG_OK, TG_ERR_GRADCHECK with a message naming the input, element,
 * output element and both values, TG_ERR_READONLY (above), or the error fn
 * or backward raised. */
tg_status tg_gradcheck(tg_gradcheck_fn fn, void *user, int n_in, tg_tensor *const *inputs,
                       const tg_gradcheck_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
