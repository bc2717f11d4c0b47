/* cli/demo_inplace.c - `tapegrad demo inplace`: an in-place edit of a tensor
 * saved for backward makes backward fail, even though the values were
 * restored; then the out-of-place fix, checked against finite differences.
 *
 * Contract:
 *  - Uses only the public API (<tapegrad.h>), as a user's program would.
 *  - Two custom functions (tg_function) share one logits storage:
 *      LogprobBackward  per-row log-softmax picked at a target; saves logits;
 *      EntropyBackward  per-row entropy; saves a VIEW of the logits (a slice
 *                       over all rows: same storage, same version counter).
 *    The buggy EntropyBackward backward does tg_sub_ then tg_add_ on its saved
 *    view (values restored, version +2); tg_backward must then fail with
 *    TG_ERR_INPLACE. The fixed one computes out of place and backward succeeds.
 *  - loss = sum(logprob) + COEF * sum(entropy).
 *  - The fixed gradient is compared with central differences (by hand: max abs
 *    error printed) and with tg_gradcheck.
 *  - --trace/--plot (cli/common.h): the memory timeline of the whole demo;
 *    --dot: the buggy loss's graph just before its backward.
 *  - Returns CLI_EXIT_OK when every step behaved as described, CLI_EXIT_FAIL
 *    otherwise (saying which step, on stderr). Releases everything it
 *    creates. Every valid size (rows 1..32, vocab 2..128, any seed) shows the
 *    same: the checks hold at all of them.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "cli.h"

#define COEF 0.5         /* entropy coefficient in the loss */
#define TEMPERATURE 2.0  /* logits are divided by it in place (version 0 -> 1) */
#define FD_EPS 1e-6      /* central-difference step */
#define FD_TOL 1e-6      /* max abs error accepted */
#define PRINT_MAX 8      /* rows/columns printed of a matrix */

/* ---- reading tensors from custom functions ------------------------------------ */

/* A read-only 2-D f64 view of a tensor of any strides. */
typedef struct mat {
    const double *p;
    int64_t rows, cols, s0, s1;
} mat;

static double at(const mat *m, int64_t r, int64_t c) { return m->p[r * m->s0 + c * m->s1]; }

static tg_status as_mat(tg_ctx *ctx, const char *who, tg_tensor *t, mat *m) {
    if (tg_get_dtype(t) != TG_F64 || tg_ndim(t) != 2)
        return tg_ctx_fail(ctx, TG_ERR_DTYPE, "%s: expects f64 logits [rows, vocab]", who);
    m->p = tg_data(t);
    m->rows = tg_size(t, 0);
    m->cols = tg_size(t, 1);
    m->s0 = tg_stride(t, 0);
    m->s1 = tg_stride(t, 1);
    return TG_OK;
}

/* Element i of a 1-D tensor of n elements (any stride) of dtype f64 or i64. */
static double vec_at(tg_tensor *t, int64_t i) {
    int64_t s = tg_stride(t, 0);
    if (tg_get_dtype(t) == TG_I64)
        return (double)((const int64_t *)tg_data(t))[i * s];
    return ((const double *)tg_data(t))[i * s];
}

static double row_max(const mat *z, int64_t r) {
    double m = -INFINITY;
    for (int64_t j = 0; j < z->cols; j++)
        m = fmax(m, at(z, r, j));
    return m;
}

/* log(sum_j exp(z[r, j])), computed stably around the row maximum. */
static double row_lse(const mat *z, int64_t r) {
    double m = row_max(z, r), s = 0.0;
    for (int64_t j = 0; j < z->cols; j++)
        s += exp(at(z, r, j) - m);
    return m + log(s);
}

/* H = lse - sum_j p_j z_j with p = softmax(z[r, :]). */
static double row_entropy(const mat *z, int64_t r, double lse) {
    double e = 0.0;
    for (int64_t j = 0; j < z->cols; j++) {
        double zj = at(z, r, j);
        e += exp(zj - lse) * zj;
    }
    return lse - e;
}

/* ---- LogprobBackward: logprob[r] = z[r, y[r]] - logsumexp(z[r, :]) ------------- */

static tg_status logprob_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                                 tg_tensor **out, void *user) {
    (void)user;
    mat z;
    if (n_in != 2 || n_out != 1)
        return tg_ctx_fail(ctx, TG_ERR_VALUE, "LogprobBackward: 2 inputs, 1 output");
    tg_status st = as_mat(ctx, "LogprobBackward", in[0], &z);
    if (st != TG_OK)
        return st;
    if (tg_get_dtype(in[1]) != TG_I64 || tg_ndim(in[1]) != 1 || tg_size(in[1], 0) != z.rows)
        return tg_ctx_fail(ctx, TG_ERR_SHAPE, "LogprobBackward: targets must be i64 [rows]");
    for (int64_t r = 0; r < z.rows; r++) {
        double y = vec_at(in[1], r);
        if (y < 0 || y >= (double)z.cols)
            return tg_ctx_fail(ctx, TG_ERR_VALUE, "LogprobBackward: target %g of row %" PRId64
                               " is outside [0, %" PRId64 ")", y, r, z.cols);
    }
    tg_tensor *lp = tg_empty(TG_F64, TG_SHAPE(z.rows));
    if (!lp)
        return tg_last_status();
    double *o = tg_data(lp);
    for (int64_t r = 0; r < z.rows; r++)
        o[r] = at(&z, r, (int64_t)vec_at(in[1], r)) - row_lse(&z, r);
    /* Save the logits themselves (slot 0) and the targets (slot 1). */
    if (tg_ctx_save(ctx, in[0]) < 0 || tg_ctx_save(ctx, in[1]) < 0) {
        tg_release(lp);
        return tg_last_status();
    }
    out[0] = lp;
    return TG_OK;
}

/* dz[r, j] = g[r] * (onehot(y[r])_j - softmax(z[r, :])_j) */
static tg_status logprob_backward(tg_ctx *ctx, int n_out, tg_tensor *const *gout, int n_in,
                                  tg_tensor **gin, void *user) {
    (void)user;
    (void)n_out;
    (void)n_in;
    if (!tg_ctx_needs_input_grad(ctx, 0))
        return TG_OK;
    tg_tensor *zt = tg_ctx_saved(ctx, 0); /* fails if the logits were modified in place */
    tg_tensor *yt = tg_ctx_saved(ctx, 1);
    tg_tensor *dz = NULL;
    mat z;
    tg_status st = (zt && yt) ? as_mat(ctx, "LogprobBackward", zt, &z) : tg_last_status();
    if (st == TG_OK) {
        dz = tg_empty(TG_F64, TG_SHAPE(z.rows, z.cols));
        st = dz ? TG_OK : tg_last_status();
    }
    if (st == TG_OK) {
        double *d = tg_data(dz);
        for (int64_t r = 0; r < z.rows; r++) {
            double lse = row_lse(&z, r), g = vec_at(gout[0], r);
            int64_t y = (int64_t)vec_at(yt, r);
            for (int64_t j = 0; j < z.cols; j++)
                d[r * z.cols + j] = g * ((j == y ? 1.0 : 0.0) - exp(at(&z, r, j) - lse));
        }
        gin[0] = dz;
    }
    tg_release(zt);
    tg_release(yt);
    return st;
}

/* ---- EntropyBackward: H[r] = -sum_j p_j log p_j, p = softmax(z[r, :]) ----------- */

static tg_status entropy_forward(tg_ctx *ctx, int n_in, tg_tensor *const *in, int n_out,
                                 tg_tensor **out, void *user) {
    (void)user;
    mat z;
    if (n_in != 1 || n_out != 1)
        return tg_ctx_fail(ctx, TG_ERR_VALUE, "EntropyBackward: 1 input, 1 output");
    tg_status st = as_mat(ctx, "EntropyBackward", in[0], &z);
    if (st != TG_OK)
        return st;
    tg_tensor *h = tg_empty(TG_F64, TG_SHAPE(z.rows));
    if (!h)
        return tg_last_status();
    double *o = tg_data(h);
    for (int64_t r = 0; r < z.rows; r++)
        o[r] = row_entropy(&z, r, row_lse(&z, r));
    if (tg_ctx_is_recording(ctx)) {
        /* Save a view over all rows: the same storage as the logits, so the
         * same version counter as what LogprobBackward saved. */
        tg_tensor *view = tg_slice(in[0], 0, 0, z.rows, 1);
        int slot = view ? tg_ctx_save(ctx, view) : -1;
        tg_release(view);
        if (slot < 0) {
            tg_release(h);
            return tg_last_status();
        }
    }
    out[0] = h;
    return TG_OK;
}

/* dz[r, j] = -g[r] * p_j * (z_j - lse + H), with p, lse, H of row r. The
 * formula is shift-invariant, so z may be read shifted by the row max. */
static void entropy_grad(const mat *z, tg_tensor *g, double *d) {
    for (int64_t r = 0; r < z->rows; r++) {
        double lse = row_lse(z, r), h = row_entropy(z, r, lse), gr = vec_at(g, r);
        for (int64_t j = 0; j < z->cols; j++) {
            double zj = at(z, r, j);
            d[r * z->cols + j] = -gr * exp(zj - lse) * (zj - lse + h);
        }
    }
}

/* THE BUG: "stabilise" the saved logits in place (z -= rowmax), compute, then
 * restore them (z += rowmax). Same values afterwards, version counter +2. */
static tg_status entropy_backward_buggy(tg_ctx *ctx, int n_out, tg_tensor *const *gout,
                                        int n_in, tg_tensor **gin, void *user) {
    (void)user;
    (void)n_out;
    (void)n_in;
    tg_tensor *zv = tg_ctx_saved(ctx, 0), *rowmax = NULL, *dz = NULL;
    double *mx = NULL;
    mat z;
    tg_status st = zv ? as_mat(ctx, "EntropyBackward", zv, &z) : tg_last_status();
    if (st == TG_OK) {
        mx = malloc((size_t)z.rows * sizeof *mx);
        st = mx ? TG_OK : tg_ctx_fail(ctx, TG_ERR_NOMEM, "EntropyBackward: out of memory");
    }
    if (st == TG_OK) {
        for (int64_t r = 0; r < z.rows; r++)
            mx[r] = row_max(&z, r);
        rowmax = tg_from_data(TG_F64, TG_SHAPE(z.rows, 1), mx);
        dz = tg_empty(TG_F64, TG_SHAPE(z.rows, z.cols));
        st = (rowmax && dz) ? TG_OK : tg_last_status();
    }
    if (st == TG_OK)
        st = tg_sub_(zv, rowmax); /* z - max: version 1 -> 2 */
    if (st == TG_OK) {
        entropy_grad(&z, gout[0], tg_data(dz));
        st = tg_add_(zv, rowmax); /* restore: version 2 -> 3 */
    }
    if (st == TG_OK) {
        gin[0] = dz;
        dz = NULL;
    }
    free(mx);
    tg_release(dz);
    tg_release(rowmax);
    tg_release(zv);
    return st;
}

/* THE FIX: read the saved logits, never write them. */
static tg_status entropy_backward_fixed(tg_ctx *ctx, int n_out, tg_tensor *const *gout,
                                        int n_in, tg_tensor **gin, void *user) {
    (void)user;
    (void)n_out;
    (void)n_in;
    tg_tensor *zv = tg_ctx_saved(ctx, 0), *dz = NULL;
    mat z;
    tg_status st = zv ? as_mat(ctx, "EntropyBackward", zv, &z) : tg_last_status();
    if (st == TG_OK) {
        dz = tg_empty(TG_F64, TG_SHAPE(z.rows, z.cols));
        st = dz ? TG_OK : tg_last_status();
    }
    if (st == TG_OK) {
        entropy_grad(&z, gout[0], tg_data(dz));
        gin[0] = dz;
    }
    tg_release(zv);
    return st;
}

static const tg_function LOGPROB = {"LogprobBackward", logprob_forward, logprob_backward};
static const tg_function ENTROPY_BUGGY = {"EntropyBackward", entropy_forward,
                                          entropy_backward_buggy};
static const tg_function ENTROPY_FIXED = {"EntropyBackward", entropy_forward,
                                          entropy_backward_fixed};

/* ---- the loss ---------------------------------------------------------------------- */

typedef struct loss_names {
    const char *lp, *h, *sum_lp, *sum_h, *scaled_h, *loss; /* grad_fn names or NULL */
} loss_names;

/* loss = sum(LOGPROB(z, y)) + COEF * sum(entropy(z)); a new reference or NULL
 * (tg_last_error() says why). Fills *names when names != NULL. */
static tg_tensor *build_loss(tg_tensor *z, tg_tensor *y, const tg_function *entropy,
                             loss_names *names) {
    tg_tensor *lp = NULL, *h = NULL;
    tg_tensor *lp_in[2] = {z, y}, *h_in[1] = {z};
    /* LogprobBackward is recorded first, EntropyBackward second: backward
     * reaches EntropyBackward first, so its in-place edit happens before
     * LogprobBackward reads the logits it saved (the order of the story). */
    if (tg_function_apply(&LOGPROB, NULL, 2, lp_in, 1, &lp) == TG_OK)
        tg_function_apply(entropy, NULL, 1, h_in, 1, &h);
    tg_tensor *sum_lp = tg_sum(lp);
    tg_tensor *sum_h = tg_sum(h);
    tg_tensor *scaled_h = tg_scale(sum_h, COEF);
    tg_tensor *loss = tg_add(sum_lp, scaled_h);
    if (names) {
        names->lp = tg_grad_fn_name(lp);
        names->h = tg_grad_fn_name(h);
        names->sum_lp = tg_grad_fn_name(sum_lp);
        names->sum_h = tg_grad_fn_name(sum_h);
        names->scaled_h = tg_grad_fn_name(scaled_h);
        names->loss = tg_grad_fn_name(loss);
    }
    tg_release(scaled_h);
    tg_release(sum_h);
    tg_release(sum_lp);
    tg_release(h);
    tg_release(lp);
    return loss;
}

/* The loss at logits given as a C array, with grad off (for finite differences). */
static int loss_value(const cli_inplace_opts *o, const double *zdata, tg_tensor *y,
                      double *out) {
    int ok = 0;
    TG_NO_GRAD {
        tg_tensor *z = tg_from_data(TG_F64, TG_SHAPE(o->rows, o->vocab), zdata);
        tg_tensor *loss = z ? build_loss(z, y, &ENTROPY_FIXED, NULL) : NULL;
        ok = loss && tg_item(loss, out) == TG_OK;
        tg_release(loss);
        tg_release(z);
    }
    return ok;
}

typedef struct gc_user {
    tg_tensor *targets;
} gc_user;

static tg_tensor *gradcheck_loss(tg_tensor *const *inputs, void *user) {
    return build_loss(inputs[0], ((gc_user *)user)->targets, &ENTROPY_FIXED, NULL);
}

/* ---- printing ------------------------------------------------------------------------ */

static void print_matrix(const char *title, const double *a, int64_t rows, int64_t cols) {
    printf("%s [%" PRId64 ", %" PRId64 "]%s\n", title, rows, cols,
           (rows > PRINT_MAX || cols > PRINT_MAX) ? " (first 8 x 8 shown)" : "");
    for (int64_t r = 0; r < rows && r < PRINT_MAX; r++) {
        printf("   ");
        for (int64_t c = 0; c < cols && c < PRINT_MAX; c++)
            printf(" %9.5f", a[r * cols + c]);
        printf("%s\n", cols > PRINT_MAX ? "  ..." : "");
    }
    if (rows > PRINT_MAX)
        printf("    ...\n");
}

/* Prints a library message indented and wrapped at spaces to WRAP columns
 * (words longer than that, e.g. paths, are not split). */
#define WRAP 72
static void print_indented(const char *msg) {
    const char *p = msg;
    while (*p) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        if (n > WRAP) { /* break at the last space within WRAP, else the first after */
            int cut = WRAP;
            while (cut > 0 && p[cut] != ' ')
                cut--;
            if (cut == 0)
                while (cut < n && p[cut] != ' ')
                    cut++;
            if (cut < n) {
                printf("    | %.*s\n", cut, p);
                p += cut + 1;
                continue;
            }
        }
        printf("    | %.*s\n", n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* A failure: on stderr (cli/cli.h), after what stdout showed so far. */
static int fail(const char *step) {
    return cli_fail("demo inplace", "FAILED at step '%s': %s: %s", step,
                    tg_status_name(tg_last_status()), tg_last_error());
}

/* ---- options ----------------------------------------------------------------------- */

cli_inplace_opts cli_inplace_defaults(void) {
    cli_inplace_opts o;
    memset(&o, 0, sizeof o);
    o.rows = 4;
    o.vocab = 6;
    o.seed = 42;
    return o;
}

static const cli_opt INPLACE_OPTS[] = {
    {.name = "--rows", CLI_INT(cli_inplace_opts, rows, 1, CLI_INPLACE_MAX_ROWS),
     .help = "rows of the logits"},
    {.name = "--vocab", CLI_INT(cli_inplace_opts, vocab, 2, CLI_INPLACE_MAX_VOCAB), .meta = "V",
     .help = "columns, the vocabulary size"},
    {.name = "--seed", CLI_SEED(cli_inplace_opts, seed), .help = "seed of the random logits"},
    CLI_OUTPUT_OPTS(cli_inplace_opts, out, "the buggy loss just before backward"),
};

const cli_command cli_inplace_command = {
    .name = "demo inplace",
    .opts = INPLACE_OPTS,
    .n_opts = CLI_N(INPLACE_OPTS),
    .about = "Two custom ops save the same logits storage. One op's backward modifies its\n"
             "saved view in place and restores it (sub_ then add_); backward fails with\n"
             "TG_ERR_INPLACE and names both edits. The out-of-place fix then succeeds and\n"
             "its gradient is checked against finite differences.\n",
    .exit_status = "0 the demo showed what it says, 1 a step failed, 2 bad usage.",
};

void cli_inplace_help(void) {
    cli_inplace_opts d = cli_inplace_defaults();
    cli_help(stdout, &cli_inplace_command, &d);
}

int cli_inplace_parse(int argc, char **argv, cli_inplace_opts *o) {
    return cli_options_parse(&cli_inplace_command, argc, argv, o, NULL);
}

/* ---- the demo ------------------------------------------------------------------------ */

/* Step 2: the buggy loss; backward must fail with TG_ERR_INPLACE. */
static int run_buggy(const cli_inplace_opts *o, tg_tensor *logits, tg_tensor *targets,
                     const double *before, int64_t n) {
    loss_names nm;
    double v = 0.0;
    tg_tensor *loss = build_loss(logits, targets, &ENTROPY_BUGGY, &nm);
    if (!loss || tg_item(loss, &v) != TG_OK)
        return fail("build the buggy loss");
    printf("loss = sum(logprob) + %.1f * sum(entropy) = %.6f\n", COEF, v);
    printf("graph: loss (%s) <- %s <- %s(logits, targets)\n", nm.loss, nm.sum_lp, nm.lp);
    printf("                      <- %s <- %s <- %s(logits)\n", nm.scaled_h, nm.sum_h, nm.h);
    printf("logits version before backward: %" PRIu64 "\n", tg_version(logits));
    const char *names[1] = {"loss (buggy EntropyBackward)"};
    if (cli_outputs_dot(&o->out, &loss, 1, names, stdout) != CLI_EXIT_OK) {
        tg_release(loss);
        return CLI_EXIT_FAIL;
    }
    putchar('\n');

    tg_clear_error();
    tg_status st = tg_backward(loss, NULL, false);
    tg_release(loss);
    if (st != TG_ERR_INPLACE)
        return cli_fail("demo inplace", "FAILED: tg_backward returned %s, expected "
                        "TG_ERR_INPLACE%s%s", tg_status_name(st), st != TG_OK ? ": " : "",
                        st != TG_OK ? tg_last_error() : "");
    printf("tg_backward(loss) returned %s. The message:\n\n", tg_status_name(st));
    print_indented(tg_last_error());

    double *now = malloc((size_t)n * sizeof *now), diff = 0.0;
    if (!now || tg_copy_out(logits, TG_F64, now, (size_t)n * sizeof *now) != TG_OK) {
        free(now);
        return fail("read the logits back");
    }
    for (int64_t i = 0; i < n; i++)
        diff = fmax(diff, fabs(now[i] - before[i]));
    free(now);
    tg_tensor *g = tg_grad(logits);
    printf("\nAfter the failed backward the logits are at version %" PRIu64 ", differ from\n"
           "their values before by at most %.3g, and logits.grad is %s\n"
           "(a failed backward changes no gradient).\n",
           tg_version(logits), diff, g ? "SET (unexpected)" : "still unset");
    int bad = g != NULL;
    tg_release(g);
    return bad ? cli_fail("demo inplace", "FAILED: the failed backward set logits.grad")
               : CLI_EXIT_OK;
}

/* Step 3 and 4: the fixed loss, its gradient, finite differences, tg_gradcheck. */
static int run_fixed(const cli_inplace_opts *o, tg_tensor *logits, tg_tensor *targets) {
    const int64_t n = o->rows * o->vocab;
    tg_tensor *loss = build_loss(logits, targets, &ENTROPY_FIXED, NULL);
    if (!loss)
        return fail("build the fixed loss");
    tg_status st = tg_backward(loss, NULL, false);
    tg_release(loss);
    if (st != TG_OK)
        return fail("backward through the fixed loss");
    printf("tg_backward(loss) returned TG_OK; logits version is still %" PRIu64 ".\n\n",
           tg_version(logits));

    double *z = malloc((size_t)n * sizeof *z), *ga = malloc((size_t)n * sizeof *ga);
    tg_tensor *g = tg_grad(logits);
    int rc = CLI_EXIT_FAIL;
    if (!z || !ga || !g || tg_copy_out(g, TG_F64, ga, (size_t)n * sizeof *ga) != TG_OK ||
        tg_copy_out(logits, TG_F64, z, (size_t)n * sizeof *z) != TG_OK) {
        rc = fail("read the gradient");
        goto out;
    }
    print_matrix("d loss / d logits", ga, o->rows, o->vocab);

    cli_heading("Step 4: check the gradient against finite differences");
    printf("For every logit z_i: (loss(z_i + eps) - loss(z_i - eps)) / (2 eps), eps = %g,\n"
           "computed with grad mode off (nothing recorded), then compared with the\n"
           "gradient from backward.\n\n", FD_EPS);
    double max_err = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double zi = z[i], lp = 0.0, lm = 0.0;
        z[i] = zi + FD_EPS;
        int ok = loss_value(o, z, targets, &lp);
        z[i] = zi - FD_EPS;
        ok = ok && loss_value(o, z, targets, &lm);
        z[i] = zi;
        if (!ok) {
            rc = fail("finite differences");
            goto out;
        }
        max_err = fmax(max_err, fabs(ga[i] - (lp - lm) / (2 * FD_EPS)));
    }
    printf("max |backward - finite difference| = %.3g (tolerance %g): %s\n", max_err, FD_TOL,
           max_err <= FD_TOL ? "PASS" : "FAIL");

    gc_user u = {targets};
    tg_clear_error();
    st = tg_gradcheck(gradcheck_loss, &u, 1, &logits, NULL);
    printf("tg_gradcheck (the library's checker, PyTorch's tolerances): %s\n",
           st == TG_OK ? "PASS" : "FAIL");
    if (st != TG_OK)
        print_indented(tg_last_error());
    if (max_err > FD_TOL || st != TG_OK)
        rc = cli_fail("demo inplace", "FAILED: the fixed gradient %s", max_err > FD_TOL
                      ? "differs from finite differences" : "fails tg_gradcheck");
    else
        rc = CLI_EXIT_OK;
out:
    tg_release(g);
    free(ga);
    free(z);
    return rc;
}

int cli_inplace_run(cli_inplace_opts *o) {
    const int64_t n = o->rows * o->vocab;
    int rc = CLI_EXIT_FAIL;
    double *before = malloc((size_t)n * sizeof *before);
    int64_t *y = malloc((size_t)o->rows * sizeof *y);
    tg_tensor *logits = NULL, *targets = NULL, *view = NULL;
    if (!before || !y) {
        cli_fail("demo inplace", "out of memory");
        goto out;
    }
    if (cli_outputs_begin(&o->out) != CLI_EXIT_OK)
        goto out;

    printf("A policy-gradient loss needs, per token, the log-probability of the sampled\n"
           "token and the entropy of the distribution. Two custom ops compute them from\n"
           "the same logits. Each saves the logits for its backward:\n"
           "  LogprobBackward saves the logits tensor itself;\n"
           "  EntropyBackward saves a view of it (a slice over all rows).\n"
           "Views share their storage and so their version counter, which every\n"
           "in-place op bumps.\n");

    cli_heading("Step 1: logits and targets");
    logits = tg_set_name(tg_randn(TG_F64, TG_SHAPE(o->rows, o->vocab), o->seed, 0.0, 1.0),
                         "logits");
    /* Divide by the temperature in place before requiring grad: version 0 -> 1. */
    if (!logits || tg_scale_(logits, 1.0 / TEMPERATURE) != TG_OK ||
        tg_set_requires_grad(logits, true) != TG_OK) {
        rc = fail("create the logits");
        goto out;
    }
    for (int64_t r = 0; r < o->rows; r++)
        y[r] = (int64_t)((o->seed + 3 * (uint64_t)r + 1) % (uint64_t)o->vocab);
    targets = tg_set_name(tg_from_data(TG_I64, TG_SHAPE(o->rows), y), "targets");
    view = tg_slice(logits, 0, 0, o->rows, 1);
    if (!targets || !view ||
        tg_copy_out(logits, TG_F64, before, (size_t)n * sizeof *before) != TG_OK) {
        rc = fail("create the targets");
        goto out;
    }
    printf("logits = tg_randn(seed %" PRIu64 ") / %.0f (divided in place, so version %" PRIu64
           "),\nrequires grad. A view of all its rows shares its storage: %s, version %" PRIu64
           ".\n\n",
           o->seed, TEMPERATURE, tg_version(logits), tg_same_storage(view, logits) ? "yes" : "no",
           tg_version(view));
    tg_release(view);
    view = NULL;
    print_matrix("logits", before, o->rows, o->vocab);
    printf("targets:");
    for (int64_t r = 0; r < o->rows && r < PRINT_MAX; r++)
        printf(" %" PRId64, y[r]);
    printf("%s\n", o->rows > PRINT_MAX ? " ..." : "");

    cli_heading("Step 2: the buggy backward");
    printf("EntropyBackward's backward \"stabilises\" its saved view in place,\n"
           "    tg_sub_(saved, rowmax);   ... compute ...   tg_add_(saved, rowmax);\n"
           "which restores every value but moves the version counter 1 -> 3. The view\n"
           "shares the counter with the logits that LogprobBackward saved at version 1,\n"
           "so LogprobBackward's backward, which runs next, refuses to use them.\n\n");
    if (run_buggy(o, logits, targets, before, n) != CLI_EXIT_OK)
        goto out;
    printf("\nWhy it fails although the values are back: the counter only counts\n"
           "writes; it cannot know that two writes cancelled. Besides, in floating\n"
           "point (z - m) + m need not equal z, so the values may not even be the same.\n"
           "PyTorch reports the same situation as\n"
           "    RuntimeError: one of the variables needed for gradient computation has\n"
           "    been modified by an inplace operation: [torch.DoubleTensor [%" PRId64
           ", %" PRId64 "]] ...\n"
           "    is at version 3; expected version 1 instead. Hint: enable anomaly ...\n"
           "and leaves you to find the culprit. tapegrad's message above also names the\n"
           "in-place ops that moved the counter and where they were called.\n",
           o->rows, o->vocab);

    cli_heading("Step 3: the fix - compute out of place");
    printf("The fixed backward reads the saved view and keeps the shifted values\n"
           "(z - rowmax) in local variables; it writes nothing it saved. Rebuilding the\n"
           "graph (the old one was freed) saves the logits at their current version.\n\n");
    if (run_fixed(o, logits, targets) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_OK;

out:
    tg_release(view);
    tg_release(targets);
    tg_release(logits);
    free(y);
    free(before);
    rc = cli_demo_end("demo inplace", &o->out,
                      "tapegrad demo inplace: the buggy backward, then the fix", rc, stdout);
    if (rc == CLI_EXIT_OK)
        printf("\nIn short: never write to a tensor that an op saved for backward, not even\n"
               "to restore it. Compute into a new tensor instead, or clone before editing.\n"
               "Demo passed.\n");
    return rc;
}
