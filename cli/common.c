/* cli/common.c - the output flags shared by the demos and the bench
 * (--trace, --plot, --dot) and progress lines on stderr.
 *
 * Contract: see cli/common.h. Uses only the public API (<tapegrad.h>). Every
 * error is one line "tapegrad: ..." on stderr: a usage error (exit 2) while
 * parsing, a failure (exit 1) when a file cannot be written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"

/* ---- parsing ------------------------------------------------------------------- */

const char *cli_split_opt(const char *arg, char *buf, size_t cap) {
    const char *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) == 0 && eq && (size_t)(eq - arg) < cap) {
        memcpy(buf, arg, (size_t)(eq - arg));
        buf[eq - arg] = '\0';
        return eq + 1;
    }
    snprintf(buf, cap, "%s", arg);
    return NULL;
}

int cli_next_opt(const char *cmd, int argc, char **argv, int *i, cli_outputs *o, bool *json,
                 const char *const *valued, char *buf, size_t cap, const char **val) {
    const char *arg = argv[*i];
    *val = cli_split_opt(arg, buf, cap);
    int r = cli_outputs_parse(o, buf, *val, argc, argv, i);
    if (r != 0) return r;
    if (json && !strcmp(buf, "--json")) {
        if (*val) return cli_usage_error("option --json takes no value");
        *json = true;
        return 1;
    }
    bool known = false;
    for (int k = 0; valued[k] && !known; k++) known = !strcmp(buf, valued[k]);
    if (!known)
        return cli_usage_error("unknown option '%s' for '%s' (try 'tapegrad %s --help')", arg,
                               cmd, cmd);
    if (!*val) {
        if (*i + 1 >= argc) return cli_usage_error("option %s needs a value", buf);
        *val = argv[++*i];
    }
    return 0;
}

int cli_outputs_parse(cli_outputs *o, const char *name, const char *val, int argc, char **argv,
                      int *i) {
    const char **slot = !strcmp(name, "--trace") ? &o->trace
                        : !strcmp(name, "--plot") ? &o->plot
                        : !strcmp(name, "--dot")  ? &o->dot
                                                  : NULL;
    if (!slot)
        return 0;
    if (!val) {
        if (*i + 1 >= argc)
            return cli_usage_error("option %s needs a file name", name);
        val = argv[++*i];
    }
    if (!*val)
        return cli_usage_error("option %s needs a file name, not an empty value", name);
    *slot = val;
    return 1;
}

int cli_outputs_check(const cli_outputs *o) {
    const char *names[3] = {"--trace", "--plot", "--dot"};
    const char *files[3] = {o->trace, o->plot, o->dot};
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (files[a] && files[b] && !strcmp(files[a], files[b]))
                return cli_usage_error("%s and %s name the same file '%s'", names[a], names[b],
                                       files[a]);
    return CLI_EXIT_OK;
}

/* ---- writing -------------------------------------------------------------------- */

static int write_fail(const char *what, const char *path, const char *why) {
    cli_progress_clear();
    fprintf(stderr, "tapegrad: cannot write %s '%s': %s\n", what, path, why);
    return CLI_EXIT_FAIL;
}

/* Opens path for appending (creating it) and removes it again if it did not
 * exist: true when the file can be written. */
static bool writable(const char *path, int *err) {
    bool existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a");
    if (!f) {
        *err = errno;
        return false;
    }
    fclose(f);
    if (!existed)
        remove(path);
    return true;
}

int cli_outputs_begin(cli_outputs *o) {
    const char *what[3] = {"the trace", "the plot", "the graph"};
    const char *files[3] = {o->trace, o->plot, o->dot};
    o->recording = false;
    for (int k = 0; k < 3; k++) {
        int err = 0;
        if (files[k] && !writable(files[k], &err))
            return write_fail(what[k], files[k], strerror(err));
    }
    if (!o->trace && !o->plot)
        return CLI_EXIT_OK;
    tg_clear_error();
    if (tg_timeline_start() != TG_OK) {
        cli_progress_clear();
        fprintf(stderr, "tapegrad: cannot start the memory timeline: %s\n", tg_last_error());
        return CLI_EXIT_FAIL;
    }
    o->recording = true;
    return CLI_EXIT_OK;
}

int cli_outputs_dot(const cli_outputs *o, tg_tensor *const *roots, int n,
                    const char *const *names, FILE *note) {
    if (!o->dot)
        return CLI_EXIT_OK;
    FILE *f = fopen(o->dot, "w");
    if (!f)
        return write_fail("the graph", o->dot, strerror(errno));
    tg_clear_error();
    tg_status st = tg_graph_dot(f, roots, n, names);
    int closed = fclose(f);
    if (st != TG_OK)
        return write_fail("the graph", o->dot, tg_last_error());
    if (closed != 0)
        return write_fail("the graph", o->dot, strerror(errno));
    if (note)
        cli_outputs_dot_note(o, note);
    return CLI_EXIT_OK;
}

void cli_outputs_dot_note(const cli_outputs *o, FILE *note) {
    if (!o->dot)
        return;
    cli_progress_clear();
    fprintf(note, "wrote %s (the loss graph as Graphviz DOT: dot -Tsvg %s > graph.svg)\n",
            o->dot, o->dot);
}

int cli_outputs_end(cli_outputs *o, const char *title, bool write, FILE *note) {
    if (!o->recording)
        return CLI_EXIT_OK;
    o->recording = false;
    int rc = CLI_EXIT_OK;
    tg_timeline_stop();
    size_t events = tg_timeline_events();
    if (write && o->trace) {
        tg_clear_error();
        if (tg_timeline_write_trace(o->trace) != TG_OK)
            rc = write_fail("the trace", o->trace, tg_last_error());
        else {
            cli_progress_clear();
            fprintf(note, "wrote %s (memory timeline, %zu events: open it in "
                          "https://ui.perfetto.dev or chrome://tracing)\n",
                    o->trace, events);
        }
    }
    if (write && o->plot && rc == CLI_EXIT_OK) {
        tg_clear_error();
        if (tg_timeline_write_svg(o->plot, title) != TG_OK)
            rc = write_fail("the plot", o->plot, tg_last_error());
        else {
            cli_progress_clear();
            fprintf(note, "wrote %s (live memory by category over time, SVG)\n", o->plot);
        }
    }
    tg_timeline_clear();
    return rc;
}

void cli_outputs_mark(const cli_outputs *o, const char *label) {
    if (o->recording)
        tg_step_mark(label);
}

/* ---- progress --------------------------------------------------------------------- */

static int g_tty = -1;    /* stderr is a terminal; -1 = not asked yet */
static bool g_shown;      /* a progress line is on the terminal */
static char g_prefix[64]; /* "tour 2/4" */

bool cli_progress_enabled(void) {
    if (g_tty < 0)
        g_tty = isatty(STDERR_FILENO) == 1;
    return g_tty == 1;
}

void cli_progress_prefix(const char *prefix) {
    snprintf(g_prefix, sizeof g_prefix, "%s", prefix ? prefix : "");
}

void cli_progress(const char *fmt, ...) {
    if (!cli_progress_enabled())
        return;
    va_list ap;
    fflush(stdout);
    fputs("\r\033[K", stderr);
    if (g_prefix[0])
        fprintf(stderr, "%s ", g_prefix);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    g_shown = true;
}

void cli_progress_clear(void) {
    fflush(stdout);
    if (!g_shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    g_shown = false;
}

/* ---- helpers ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, int n) {
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool cli_parse_i64_list(const char *flag, const char *val, int64_t lo, int64_t hi,
                        int64_t *out, int max, int *n) {
    const char *p = val;
    *n = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        int64_t v = 0;
        bool ok = len > 0 && len < sizeof item && *n < max;
        if (ok) {
            memcpy(item, p, len);
            item[len] = '\0';
            char *end = NULL;
            errno = 0;
            long long x = item[0] >= '0' && item[0] <= '9' ? strtoll(item, &end, 10) : -1;
            ok = end && *end == '\0' && errno == 0 && x >= lo && x <= hi;
            v = (int64_t)x;
        }
        if (!ok) {
            if (*n >= max)
                cli_usage_error("too many values for %s (at most %d)", flag, max);
            else
                cli_usage_error("invalid element '%.*s' in %s '%s' (expected integers from "
                                "%" PRId64 " to %" PRId64 ", comma-separated)",
                                (int)len, p, flag, val, lo, hi);
            return false;
        }
        out[(*n)++] = v;
        if (!comma)
            return true;
        p = comma + 1;
    }
}
