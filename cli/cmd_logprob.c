/* cli/cmd_logprob.c - `tapegrad logprob`: log-probs, entropies and the
 * logits' gradient of .npy inputs, written as .npy files.
 *
 * Contract:
 *   tapegrad logprob --logits L.npy --targets T.npy --out DIR
 *                    [--grad-logprob G.npy] [--grad-entropy H.npy]
 *                    [--temperature T] [--ignore-index I] [--chunk C]
 *                    [--impl fused|composite]
 *  - L: f32 or f64, shape (..., V). T: integers (<i8 or <i4) of shape (...).
 *    G, H: upstream gradients of the log-probs and entropies, shape (...),
 *    any float or integer dtype (converted to the logits' dtype).
 *  - Writes DIR/logprob.npy and DIR/entropy.npy (shape (...), the logits'
 *    dtype), and DIR/grad_logits.npy (the logits' shape and dtype) when G or
 *    H is given: the gradient of sum(logprob * G + entropy * H), a missing
 *    one counting as zero. Without H the entropy's gradient is not recorded
 *    (entropy_grad off), as when its coefficient is 0. DIR (and its parents)
 *    is created if missing; existing files are replaced.
 *  - Success: one summary line on stdout, exit 0.
 *  - Misuse (unknown flag, missing value, bad number, missing required
 *    flag, unexpected argument): one line "tapegrad: ..." on stderr, exit 2.
 *  - Options follow the command's rule (cli/cli.h): given twice, the last
 *    value counts.
 *  - Failure (unreadable or malformed file, shapes that do not match, a
 *    library error such as a target outside [0, V), a failed write): one
 *    line "tapegrad logprob: <message>" on stderr, exit 1. Every input is read
 *    and every result computed before DIR is touched, so such failures write
 *    nothing. The outputs are written all or none: each to a temporary file
 *    in DIR, and renamed only once every one is written and closed; a failed
 *    write leaves DIR's earlier files as they were (DIR itself, when it was
 *    created, stays).
 *  - Releases everything it creates; exit 1 if library objects stay alive.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <tapegrad.h>

#include "cli.h"
#include "npy.h"

#define PATH_CAP 4096

typedef struct lp_args {
    const char *logits, *targets, *grad_lp, *grad_h, *out;
    int impl; /* tg_logprob_impl, copied into opts after parsing */
    tg_logprob_opts opts;
} lp_args;

/* ---- arguments -------------------------------------------------------------------- */

/* A decimal number written as people write it ("2", "0.5", "1e-3"): strtod
 * alone would also take " 2", "0x10" and "infinity", which the integer
 * options refuse. */
static bool parse_temperature(const char *flag, const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    bool plain = s && ((*s >= '0' && *s <= '9') || *s == '.') &&
                 strspn(s, "0123456789.eE+-") == strlen(s);
    double v = plain ? strtod(s, &end) : NAN;
    if (!plain || errno != 0 || !end || *end != '\0' || !isfinite(v) || !(v > 0.0)) {
        cli_usage_error("invalid value '%s' for %s (expected a decimal number > 0, such as "
                        "2 or 0.5)", s ? s : "", flag);
        return false;
    }
    *out = v;
    return true;
}

/* --temperature: a CLI_OPT_CUSTOM parser into a double. */
static bool parse_temperature_field(const char *name, const char *val, void *field) {
    return parse_temperature(name, val, field);
}

static const cli_opt LOGPROB_OPTS[] = {
    {.name = "--logits", CLI_TEXT(lp_args, logits), .meta = "L.npy", .required = true,
     .help = "f32 or f64 logits, shape (..., V)",
     .group = "Inputs (.npy, little-endian, C or Fortran order):"},
    {.name = "--targets", CLI_TEXT(lp_args, targets), .meta = "T.npy", .required = true,
     .help = "int64 or int32 targets, shape (...)"},
    {.name = "--grad-logprob", CLI_TEXT(lp_args, grad_lp), .meta = "G.npy",
     .help = "upstream gradient of logprob, shape (...)"},
    {.name = "--grad-entropy", CLI_TEXT(lp_args, grad_h), .meta = "H.npy",
     .help = "upstream gradient of entropy, shape (...)"},
    {.name = "--temperature", CLI_CUSTOM(lp_args, opts.temperature, parse_temperature_field),
     .meta = "T", .help = "divide the logits by T > 0", .default_text = "1",
     .group = "Options:"},
    {.name = "--ignore-index", CLI_INT(lp_args, opts.ignore_index, INT64_MIN, INT64_MAX),
     .meta = "I", .help = "rows with this target give 0"},
    {.name = "--chunk", CLI_INT(lp_args, opts.chunk_size, 0, INT64_MAX), .meta = "C",
     .help = "rows per block, 0 = all at once"},
    {.name = "--impl", CLI_WORD(lp_args, impl, CLI_IMPL_WORDS), .help = "implementation"},
    {.name = "--out", CLI_TEXT(lp_args, out), .meta = "DIR", .required = true,
     .help = "output directory, created if missing"},
};

const cli_command cli_logprob_command = {
    .name = "logprob",
    .opts = LOGPROB_OPTS,
    .n_opts = CLI_N(LOGPROB_OPTS),
    .about = "Computes, for each row of the logits (last dimension = vocabulary),\n"
             "logprob = log softmax(z/T)[target] and entropy = -sum p log p, with the\n"
             "fused op (or the composite baseline), and writes them as .npy files.\n",
    .notes = "Writes DIR/logprob.npy and DIR/entropy.npy (the logits' dtype), and\n"
             "DIR/grad_logits.npy, the gradient of sum(logprob*G + entropy*H), when G\n"
             "or H is given (a missing one counts as zero; without H the entropy's\n"
             "gradient is not recorded at all). The files are written all or none.\n",
    .exit_status = "0 success, 1 failure (bad file, library error, failed write), 2 bad "
                   "usage.",
};

static lp_args lp_args_defaults(void) {
    lp_args a;
    memset(&a, 0, sizeof a);
    a.opts = tg_logprob_opts_default();
    a.impl = a.opts.impl;
    return a;
}

/* Prints the help of `tapegrad logprob` to stdout. */
void cli_logprob_help(void) {
    lp_args d = lp_args_defaults();
    cli_help(stdout, &cli_logprob_command, &d);
}

/* Parses argv[0..argc-1] into a (its defaults set); CLI_EXIT_OK or
 * CLI_EXIT_USAGE (reported). */
static int parse_args(int argc, char **argv, lp_args *a) {
    int rc = cli_options_parse(&cli_logprob_command, argc, argv, a, NULL);
    a->opts.impl = (tg_logprob_impl)a->impl;
    return rc;
}

/* ---- running ------------------------------------------------------------------------ */

static int fail_line(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int fail_line(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fputs("tapegrad logprob: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

static int lib_fail(void) {
    const char *m = tg_last_error();
    return fail_line("%s", *m ? m : "unknown error");
}

/* mkdir -p: creates dir and its missing parents. */
static int make_dirs(const char *dir) {
    char p[PATH_CAP];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return fail_line("output directory name is too long");
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return fail_line("cannot create directory '%s': %s", p, strerror(errno));
        *c = '/';
    }
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
        return fail_line("cannot create directory '%s': %s", p, strerror(errno));
    struct stat sb;
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fail_line("'%s' exists and is not a directory", p);
    return CLI_EXIT_OK;
}

static void shape_text(char *buf, size_t cap, const tg_tensor *t) {
    int nd = tg_ndim(t);
    size_t k = cli_appendf(buf, cap, 0, "(");
    for (int d = 0; d < nd; d++)
        k = cli_appendf(buf, cap, k, "%s%" PRId64, d ? ", " : "", tg_size(t, d));
    cli_appendf(buf, cap, k, "%s)", nd == 1 ? "," : "");
}

/* Loads an upstream gradient: the targets' shape, converted to dtype dt. */
static int load_upstream(const char *path, const tg_tensor *y, tg_dtype dt, tg_tensor **out) {
    tg_tensor *g = NULL;
    if (tgcli_npy_load(path, &g) != TG_OK)
        return lib_fail();
    bool same = tg_ndim(g) == tg_ndim(y);
    for (int d = 0; same && d < tg_ndim(y); d++)
        same = tg_size(g, d) == tg_size(y, d);
    if (!same) {
        char a[200], b[200];
        shape_text(a, sizeof a, g);
        shape_text(b, sizeof b, y);
        return fail_line("%s: shape %s does not match the targets' shape %s", path, a, b);
    }
    *out = tg_to_dtype(g, dt);
    return *out ? CLI_EXIT_OK : lib_fail();
}

/* Writes DIR/names[k] from ts[k] for the n outputs, all or none: each to a
 * temporary file first, every one written and closed before the first is
 * renamed (cli/common.h). The names written go to list (cap bytes). */
static int write_outputs(const char *dir, const char *const *names, tg_tensor *const *ts, int n,
                         char *list, size_t cap) {
    cli_file cf[3];
    char path[3][PATH_CAP];
    int opened = 0, rc = CLI_EXIT_OK, err = 0;
    for (int k = 0; k < n && rc == CLI_EXIT_OK; k++) {
        if (snprintf(path[k], sizeof path[k], "%s/%s", dir, names[k]) >= (int)sizeof path[k]) {
            rc = fail_line("output path '%s/%s' is too long", dir, names[k]);
        } else if ((err = cli_file_open(&cf[k], path[k])) != 0) {
            rc = fail_line("%s: cannot create: %s", path[k], strerror(err));
        } else {
            opened++;
            if (tgcli_npy_write(cf[k].f, path[k], ts[k]) != TG_OK)
                rc = lib_fail();
            else if ((err = cli_file_finish(&cf[k])) != 0)
                rc = fail_line("%s: write failed: %s", path[k], strerror(err));
        }
    }
    for (int k = 0; k < opened; k++) {
        if (rc != CLI_EXIT_OK) {
            cli_file_discard(&cf[k]);
        } else if ((err = cli_file_commit(&cf[k])) != 0) {
            rc = fail_line("%s: cannot rename the written file into place: %s", path[k],
                           strerror(err));
            for (int j = k + 1; j < opened; j++)
                cli_file_discard(&cf[j]);
            break;
        }
    }
    size_t len = 0;
    for (int k = 0; rc == CLI_EXIT_OK && k < n; k++)
        len = cli_appendf(list, cap, len, "%s%s", k ? ", " : "", path[k]);
    return rc;
}

/* Prints the one-line summary: sizes, options, means over the rows kept. */
static int summary(const lp_args *a, tg_tensor *z, tg_tensor *y, tg_tensor *lp, tg_tensor *h,
                   const char *written) {
    int64_t n = tg_numel(y), V = tg_size(z, -1), kept = 0;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
    double *lpv = malloc(bytes), *hv = malloc(bytes);
    int64_t *yv = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!lpv || !hv || !yv) {
        free(lpv);
        free(hv);
        free(yv);
        return fail_line("out of memory");
    }
    double s_lp = 0.0, s_h = 0.0;
    bool ok = n == 0 || (tg_copy_out(lp, TG_F64, lpv, bytes) == TG_OK &&
                         tg_copy_out(h, TG_F64, hv, bytes) == TG_OK &&
                         tg_copy_out(y, TG_I64, yv, bytes) == TG_OK);
    for (int64_t i = 0; ok && i < n; i++) {
        if (yv[i] == a->opts.ignore_index)
            continue;
        kept++;
        s_lp += lpv[i];
        s_h += hv[i];
    }
    free(lpv);
    free(hv);
    free(yv);
    if (!ok)
        return lib_fail();
    char means[96];
    if (kept > 0)
        snprintf(means, sizeof means, "mean logprob %.6g, mean entropy %.6g", s_lp / (double)kept,
                 s_h / (double)kept);
    else
        snprintf(means, sizeof means, "no row kept");
    const char *grad = a->grad_lp ? (a->grad_h ? "G and H" : "G") : a->grad_h ? "H" : "none";
    printf("tapegrad logprob: %" PRId64 " rows x %" PRId64 " (%s, %s, chunk %" PRId64
           ", temperature %g, upstream gradient %s), %" PRId64 " ignored, %s; wrote %s\n",
           n, V, tg_dtype_name(tg_get_dtype(z)),
           a->opts.impl == TG_LOGPROB_FUSED ? "fused" : "composite", a->opts.chunk_size,
           a->opts.temperature, grad, n - kept, means, written);
    return CLI_EXIT_OK;
}

/* Everything that creates tensors; runs inside the caller's scope. */
static int compute(lp_args *a) {
    tg_tensor *z = NULL, *y = NULL, *g = NULL, *hg = NULL, *lp = NULL, *h = NULL;
    if (tgcli_npy_load(a->logits, &z) != TG_OK || tgcli_npy_load(a->targets, &y) != TG_OK)
        return lib_fail();
    tg_dtype dt = tg_get_dtype(z);
    if (dt != TG_F32 && dt != TG_F64)
        return fail_line("%s: logits must be f32 or f64, got %s", a->logits, tg_dtype_name(dt));
    if (tg_get_dtype(y) != TG_I64)
        return fail_line("%s: targets must be integers ('<i8' or '<i4'), got %s", a->targets,
                         tg_dtype_name(tg_get_dtype(y)));
    int rc;
    if (a->grad_lp && (rc = load_upstream(a->grad_lp, y, dt, &g)) != CLI_EXIT_OK)
        return rc;
    if (a->grad_h && (rc = load_upstream(a->grad_h, y, dt, &hg)) != CLI_EXIT_OK)
        return rc;
    bool want_grad = g || hg;
    if (want_grad && tg_set_requires_grad(z, true) != TG_OK)
        return lib_fail();
    a->opts.want_entropy = true;
    a->opts.entropy_grad = hg != NULL; /* coefficient 0: record nothing for it */
    if (tg_logprob_entropy(z, y, &a->opts, &lp, &h) != TG_OK)
        return lib_fail();
    if (tg_requires_grad(h) != (hg != NULL)) /* the op must honour entropy_grad */
        return fail_line("internal error: the entropy %s grad with entropy_grad %s",
                         tg_requires_grad(h) ? "requires" : "does not require",
                         hg ? "on" : "off");

    tg_tensor *grad = NULL;
    if (want_grad) {
        tg_tensor *loss = g ? tg_sum(tg_mul(lp, g)) : NULL;
        if (hg) {
            tg_tensor *lh = tg_sum(tg_mul(h, hg));
            loss = loss ? tg_add(loss, lh) : lh;
        }
        if (!loss || tg_backward(loss, NULL, false) != TG_OK)
            return lib_fail();
        grad = tg_grad(z);
        if (!grad) /* nothing flowed back (every row ignored): the gradient is 0 */
            grad = tg_zeros(dt, tg_ndim(z), tg_shape(z));
        if (!grad)
            return lib_fail();
    }

    if ((rc = make_dirs(a->out)) != CLI_EXIT_OK)
        return rc;
    char written[3 * PATH_CAP + 8] = "";
    const char *const names[3] = {"logprob.npy", "entropy.npy", "grad_logits.npy"};
    tg_tensor *const outs[3] = {lp, h, grad};
    if ((rc = write_outputs(a->out, names, outs, grad ? 3 : 2, written, sizeof written)) !=
        CLI_EXIT_OK)
        return rc;
    return summary(a, z, y, lp, h, written);
}

/* `tapegrad logprob ARGS`: argv holds the arguments after "logprob". Returns
 * CLI_EXIT_OK, CLI_EXIT_FAIL or CLI_EXIT_USAGE (contract at the top). */
int cli_logprob_main(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_logprob_help();
        return CLI_EXIT_OK;
    }
    lp_args a = lp_args_defaults();
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK)
        return rc;

    int scope = tg_scope_begin();
    if (scope < 0)
        return lib_fail();
    rc = compute(&a);
    tg_scope_end(scope);

    tg_live_counts live = tg_live();
    if (live.tensors || live.storages || live.nodes)
        return fail_line("internal error: %" PRId64 " tensors, %" PRId64 " storages and %" PRId64
                         " graph nodes still alive at exit",
                         live.tensors, live.storages, live.nodes);
    return rc;
}
