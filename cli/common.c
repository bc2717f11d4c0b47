/* cli/common.c - what the subcommands share: usage errors and failures,
 * integer lists, the output flags (--trace, --plot, --dot), files written
 * whole or not at all, progress lines on stderr, bounded text building.
 *
 * Contract: see cli/common.h. Uses only the public API (<tapegrad.h>) and
 * POSIX; depends on no other file of the command (the .npy tests link it).
 * Every error is one line "tapegrad: ..." on stderr: a usage error (exit 2)
 * while parsing, a failure (exit 1) when a file cannot be written.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"

/* ---- usage errors, failures, numbers ------------------------------------------------ */

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    cli_progress_clear();
    fputs("tapegrad: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

int cli_fail(const char *who, const char *fmt, ...) {
    va_list ap;
    cli_progress_clear();
    fprintf(stderr, "tapegrad: %s: ", who);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    return CLI_EXIT_FAIL;
}

static bool parse_u64_digits(const char *s, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') /* no sign, no spaces, not empty */
        return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (uint64_t)v;
    return true;
}

/* "-123" within int64 (a '-' then digits, nothing else). */
static bool parse_negative_digits(const char *s, int64_t *out) {
    uint64_t mag = 0;
    if (!s || s[0] != '-' || !parse_u64_digits(s + 1, &mag) || mag > (uint64_t)INT64_MAX + 1u)
        return false;
    *out = mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag;
    return true;
}

bool cli_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    uint64_t v = 0;
    int64_t neg = 0;
    if (lo < 0 && parse_negative_digits(s, &neg) && neg >= lo && neg <= hi) {
        *out = neg;
        return true;
    }
    if (!parse_u64_digits(s, &v) || v > (uint64_t)INT64_MAX || (int64_t)v < lo ||
        (int64_t)v > hi) {
        cli_usage_error("invalid value '%s' for %s (expected an integer from %" PRId64
                        " to %" PRId64 ")",
                        s ? s : "", flag, lo, hi);
        return false;
    }
    *out = (int64_t)v;
    return true;
}

bool cli_parse_u64(const char *flag, const char *s, uint64_t *out) {
    if (!parse_u64_digits(s, out)) {
        cli_usage_error("invalid value '%s' for %s (expected an integer from 0 to %" PRIu64 ")",
                        s ? s : "", flag, UINT64_MAX);
        return false;
    }
    return true;
}

/* ---- options ------------------------------------------------------------------------- */

bool cli_wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
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

/* ---- files written whole or not at all ------------------------------------------------ */

static mode_t new_file_mode(void) {
    mode_t mask = umask(0); /* the only way to read it; the command is one thread here */
    umask(mask);
    return (mode_t)0666 & ~mask;
}

int cli_file_open(cli_file *cf, const char *path) {
    memset(cf, 0, sizeof *cf);
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) { /* a device, a pipe: no rename possible */
        if (S_ISDIR(st.st_mode))
            return EISDIR;
        cf->f = fopen(path, "w");
        return cf->f ? 0 : errno;
    }
    /* a symbolic link is followed: the file it names is replaced, not the link */
    char *real = exists ? realpath(path, NULL) : NULL;
    cf->target = real ? real : strdup(path);
    if (!cf->target)
        return ENOMEM;
    const char *slash = strrchr(cf->target, '/');
    size_t dir = slash ? (size_t)(slash - cf->target) + 1 : 0; /* "dir/" */
    size_t n = strlen(cf->target) + 16;
    cf->tmp = malloc(n);
    if (!cf->tmp) {
        free(cf->target);
        cf->target = NULL;
        return ENOMEM;
    }
    snprintf(cf->tmp, n, "%.*s.%s.XXXXXX", (int)dir, cf->target, cf->target + dir);
    int fd = mkstemp(cf->tmp);
    int err = fd < 0 ? errno : 0;
    if (!err && fchmod(fd, exists ? st.st_mode & 07777 : new_file_mode()) != 0)
        err = errno;
    if (!err && !(cf->f = fdopen(fd, "w")))
        err = errno;
    if (err) {
        if (fd >= 0) {
            close(fd);
            remove(cf->tmp);
        }
        free(cf->tmp);
        free(cf->target);
        memset(cf, 0, sizeof *cf);
        return err;
    }
    return 0;
}

const char *cli_file_close_stream(cli_file *cf) {
    if (cf->f) {
        fclose(cf->f); /* nothing written through it yet */
        cf->f = NULL;
    }
    return cf->tmp ? cf->tmp : cf->target;
}

int cli_file_finish(cli_file *cf) {
    if (!cf->f)
        return 0;
    /* a write that failed earlier left its reason in errno: this is called
     * right after the writing, with nothing in between that sets errno */
    int err = ferror(cf->f) ? (errno ? errno : EIO) : 0;
    errno = 0;
    if (fflush(cf->f) != 0 && !err)
        err = errno ? errno : EIO;
    if (!err && cf->tmp && fsync(fileno(cf->f)) != 0)
        err = errno;
    if (fclose(cf->f) != 0 && !err)
        err = errno ? errno : EIO;
    cf->f = NULL;
    return err;
}

int cli_file_commit(cli_file *cf) {
    int err = cli_file_finish(cf);
    if (!err && cf->tmp && rename(cf->tmp, cf->target) != 0)
        err = errno;
    if (err && cf->tmp)
        remove(cf->tmp);
    free(cf->tmp);
    free(cf->target);
    memset(cf, 0, sizeof *cf);
    return err;
}

void cli_file_discard(cli_file *cf) {
    if (cf->f)
        fclose(cf->f);
    if (cf->tmp)
        remove(cf->tmp);
    free(cf->tmp);
    free(cf->target);
    memset(cf, 0, sizeof *cf);
}

/* ---- the output flags --------------------------------------------------------------------- */

int cli_demo_end(const char *who, cli_outputs *out, const char *title, int rc, FILE *note) {
    if (cli_outputs_end(out, title, rc == CLI_EXIT_OK, note) != CLI_EXIT_OK)
        rc = CLI_EXIT_FAIL;
    cli_progress_clear();
    tg_live_counts live = tg_live();
    if (live.tensors || live.storages || live.nodes)
        rc = cli_fail(who, "LEAK: %" PRId64 " tensors, %" PRId64 " storages, %" PRId64
                      " nodes still alive after the demo",
                      live.tensors, live.storages, live.nodes);
    return rc;
}

static int write_fail(const char *what, const char *path, const char *why) {
    cli_progress_clear();
    fprintf(stderr, "tapegrad: cannot write %s '%s': %s\n", what, path, why);
    return CLI_EXIT_FAIL;
}

int cli_outputs_begin(cli_outputs *o) {
    const char *what[3] = {"the trace", "the plot", "the graph"};
    const char *files[3] = {o->trace, o->plot, o->dot};
    o->recording = false;
    for (int k = 0; k < 3; k++) {
        if (!files[k])
            continue;
        struct stat st;
        if (stat(files[k], &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
            /* a device or a pipe: opening a pipe here would wait for its reader */
            if (access(files[k], W_OK) != 0)
                return write_fail(what[k], files[k], strerror(errno));
            continue;
        }
        cli_file cf;
        int err = cli_file_open(&cf, files[k]);
        if (err)
            return write_fail(what[k], files[k], strerror(err));
        cli_file_discard(&cf); /* the name is not touched: only its directory was tried */
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
    cli_file cf;
    int err = cli_file_open(&cf, o->dot);
    if (err)
        return write_fail("the graph", o->dot, strerror(err));
    tg_clear_error();
    errno = 0;
    tg_status st = tg_graph_dot(cf.f, roots, n, names);
    if (st != TG_OK) {
        int e = errno; /* a failed write: the system's reason */
        int rc = write_fail("the graph", o->dot,
                            st == TG_ERR_IO && e ? strerror(e) : tg_last_error());
        cli_file_discard(&cf);
        return rc;
    }
    if ((err = cli_file_commit(&cf)) != 0)
        return write_fail("the graph", o->dot, strerror(err));
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

/* Writes the recording to path with the library's trace (svg false) or plot
 * writer, through a temporary file. */
static int write_timeline(const char *path, bool svg, const char *title) {
    const char *what = svg ? "the plot" : "the trace";
    cli_file cf;
    int err = cli_file_open(&cf, path);
    if (err)
        return write_fail(what, path, strerror(err));
    const char *tmp = cli_file_close_stream(&cf);
    tg_clear_error();
    tg_status st = svg ? tg_timeline_write_svg(tmp, title) : tg_timeline_write_trace(tmp);
    if (st != TG_OK) {
        /* the library's message names the temporary file: give its reason only,
         * what follows the last ": " */
        const char *m = tg_last_error(), *why = NULL;
        for (const char *p = strstr(m, ": "); p; p = strstr(p + 2, ": ")) why = p + 2;
        int rc = write_fail(what, path, why ? why : m);
        cli_file_discard(&cf);
        return rc;
    }
    if ((err = cli_file_commit(&cf)) != 0)
        return write_fail(what, path, strerror(err));
    return CLI_EXIT_OK;
}

int cli_outputs_end(cli_outputs *o, const char *title, bool write, FILE *note) {
    if (!o->recording)
        return CLI_EXIT_OK;
    o->recording = false;
    int rc = CLI_EXIT_OK;
    tg_timeline_stop();
    size_t events = tg_timeline_events();
    if (write && o->trace) {
        rc = write_timeline(o->trace, false, NULL);
        if (rc == CLI_EXIT_OK) {
            cli_progress_clear();
            fprintf(note, "wrote %s (memory timeline, %zu events: open it in "
                          "https://ui.perfetto.dev or chrome://tracing)\n",
                    o->trace, events);
        }
    }
    if (write && o->plot && rc == CLI_EXIT_OK) {
        rc = write_timeline(o->plot, true, title);
        if (rc == CLI_EXIT_OK) {
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
    cli_appendf(g_prefix, sizeof g_prefix, 0, "%s", prefix ? prefix : "");
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

uint64_t cli_seed_mix(uint64_t seed, int64_t seq, int64_t vocab) {
    return seed ^ ((uint64_t)seq * 0x100000001B3ull) ^ ((uint64_t)vocab << 20);
}

double cli_median(double *v, int n) {
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

size_t cli_appendf(char *buf, size_t cap, size_t len, const char *fmt, ...) {
    if (!buf || cap == 0)
        return 0;
    if (len >= cap - 1) {
        len = cap - 1;
        if (memchr(buf, '\0', len)) /* cut before: it stays as it is */
            return len;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
    if (n < 0) { /* an encoding error: nothing appended */
        buf[len] = '\0';
        return len;
    }
    if ((size_t)n < cap - len)
        return len + (size_t)n;
    size_t p = cap >= 4 ? cap - 4 : 0; /* the first byte replaced by "..." */
    while (p > 0 && ((unsigned char)buf[p] & 0xC0) == 0x80) /* inside a character */
        p--;
    size_t dots = cap - 1 - p < 3 ? cap - 1 - p : 3;
    memcpy(buf + p, "...", dots);
    buf[p + dots] = '\0';
    return cap - 1;
}
