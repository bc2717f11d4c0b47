/* tests/install/prog.c - a tiny program built OUTSIDE the tapegrad tree,
 * against an installed copy (pkg-config and find_package), by run.sh.
 *
 * Contract: computes loss = sum(x * x) for x = [1, 2, 3], runs backward and
 * prints "grad 2 4 6" (d loss / dx = 2x) on stdout, then exits 0. On any
 * library error it prints tg_last_error() on stderr and exits 1.
 */
#include <stdio.h>

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
    rc = 0;
done:
    if (rc != 0)
        fprintf(stderr, "prog: %s: %s\n", tg_status_name(tg_last_status()), tg_last_error());
    tg_release(grad);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
    return rc;
}
