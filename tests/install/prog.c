/* tests/install/prog.c - a tiny program built OUTSIDE the tapegrad tree,
 * against an installed copy (pkg-config and find_package), by run.sh.
 *
 * Contract: computes loss = sum(x * x) for x = [1, 2, 3], runs backward and
 * prints "grad 2 4 6" (d loss / dx = 2x) on stdout; then breaks a saved
 * tensor in place and prints the call site the error names ("site prog.c:N",
 * relative when the build maps the source directory away, as the CMake
 * package does). Exits 0; on an unexpected library error it prints
 * tg_last_error() on stderr and exits 1.
 */
#include <stdio.h>
#include <string.h>

#include <tapegrad.h>

int main(void) {
    const double xs[3] = {1.0, 2.0, 3.0};
    double g[3] = {0.0, 0.0, 0.0};
    int rc = 1;

    tg_tensor *x = tg_from_data(TG_F64, TG_SHAPE(3), xs);
    tg_tensor *y = NULL, *loss = NULL, *grad = NULL;
    if (!x || tg_set_requires_grad(x, true) != TG_OK)
        goto done;
    y = tg_mul(x, x);
    loss = tg_sum(y);
    if (!loss || tg_backward(loss, NULL, false) != TG_OK)
        goto done;
    grad = tg_grad(x);
    if (!grad || tg_copy_out(grad, TG_F64, g, sizeof g) != TG_OK)
        goto done;
    printf("grad %g %g %g\n", g[0], g[1], g[2]);
    /* the call site of MulBackward, as the in-place error names it */
    tg_tensor *a = tg_ones(TG_F64, TG_SHAPE(3));
    tg_tensor *z = tg_mul(a, x), *l2 = z ? tg_sum(z) : NULL;
    if (!l2 || tg_scale_(a, 2.0) != TG_OK || tg_backward(l2, NULL, false) != TG_ERR_INPLACE) {
        tg_release(l2), tg_release(z), tg_release(a);
        goto done;
    }
    const char *at = strstr(tg_last_error(), "saved by MulBackward (created at ");
    if (at) {
        at += strlen("saved by MulBackward (created at ");
        printf("site %.*s\n", (int)strcspn(at, ")"), at);
    }
    tg_release(l2), tg_release(z), tg_release(a);
    tg_clear_error();
    rc = at ? 0 : 1;
done:
    if (rc != 0)
        fprintf(stderr, "prog: %s: %s\n", tg_status_name(tg_last_status()), tg_last_error());
    tg_release(grad);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
    return rc;
}
