/* cli/common.h - what every demo and `tapegrad bench logprob` share: the
 * output flags --trace FILE.json, --plot FILE.svg and --dot FILE, and progress
 * lines on stderr.
 *
 * Contract:
 *  - cli_outputs_parse() recognises the three flags (also --flag=value) inside
 *    a command's own option loop; a missing or empty value, or one file named
 *    by two flags (checked by cli_outputs_check), is a usage error: one line
 *    "tapegrad: ..." on stderr, exit 2.
 *  - cli_outputs_begin(), before the work: checks that every named file can be
 *    written (without leaving a new file behind), then starts the memory
 *    timeline (tg_timeline_start) when --trace or --plot is given. A file that
 *    cannot be written is one line "tapegrad: cannot write ...", exit 1.
 *  - cli_outputs_dot(), at the demo's interesting moment: tg_graph_dot of the
 *    given roots into the --dot file (nothing when --dot is absent).
 *  - cli_outputs_end(), after the work: stops the timeline, writes the trace
 *    (tg_timeline_write_trace) and the plot (tg_timeline_write_svg, with the
 *    given title), then frees the recording. Errors: one line "tapegrad: ..."
 *    on stderr, CLI_EXIT_FAIL.
 *  - Each file written is announced as one line "wrote FILE (what)" on the
 *    `note` stream the caller passes (stdout for text output, stderr when
 *    stdout carries JSON).
 *  - Progress: cli_progress() writes one line on stderr, rewritten in place,
 *    only when stderr is a terminal; otherwise it prints nothing. Callers
 *    call cli_progress_clear() before writing to stdout. A prefix (set by the
 *    tour: "tour 2/4") goes before every progress line.
 */
#ifndef TAPEGRAD_CLI_COMMON_H
#define TAPEGRAD_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tapegrad.h>

typedef struct cli_outputs {
    const char *trace; /* --trace FILE.json: the memory timeline, Chrome trace JSON */
    const char *plot;  /* --plot FILE.svg: the memory timeline drawn as SVG */
    const char *dot;   /* --dot FILE: the demo's loss graph as Graphviz DOT */
    bool recording;    /* set by cli_outputs_begin when the timeline runs */
} cli_outputs;

/* Help lines for the three flags (for the commands' --help texts). */
#define CLI_OUTPUTS_HELP                                                                   \
    "  --trace FILE.json  memory timeline as Chrome trace JSON (Perfetto, chrome://tracing)\n" \
    "  --plot FILE.svg    memory timeline drawn as SVG: live MiB by category over time\n"   \
    "  --dot FILE         the loss graph as Graphviz DOT (dot -Tsvg FILE > graph.svg)\n"

/* If `name` is --trace, --plot or --dot: stores its value (val when the
 * argument was --name=value, else argv[*i + 1], advancing *i) and returns 1.
 * Returns 0 when name is none of them, CLI_EXIT_USAGE (2) after printing a
 * one-line error for a missing or empty value. */
int cli_outputs_parse(cli_outputs *o, const char *name, const char *val, int argc, char **argv,
                      int *i);

/* One step of a command's option loop, the part every command shares: splits
 * argv[*i] ("--name=value" or "--name value") into name (buf, cap bytes) and
 * *val; takes --trace/--plot/--dot into o; takes --json into *json (when json
 * is not NULL). Returns 1 when the option was taken, CLI_EXIT_USAGE after a
 * one-line error (a flag with a value, an option not in `valued`, a missing
 * value), or 0 when name is one of `valued` (NULL-terminated) and *val holds
 * its value (argv[*i + 1] taken, *i advanced, when it was not --name=value).
 * cmd names the command in messages ("demo chunk"). */
int cli_next_opt(const char *cmd, int argc, char **argv, int *i, cli_outputs *o, bool *json,
                 const char *const *valued, char *buf, size_t cap, const char **val);

/* After parsing: CLI_EXIT_OK, or CLI_EXIT_USAGE when two flags name one file. */
int cli_outputs_check(const cli_outputs *o);

/* Before the work (see the contract). Returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_outputs_begin(cli_outputs *o);

/* Writes the graph of roots[0..n-1] (names may be NULL) to the --dot file
 * and announces it on `note` (nothing when note is NULL: the caller then
 * calls cli_outputs_dot_note later). Returns CLI_EXIT_OK (also when --dot is
 * absent) or CLI_EXIT_FAIL. */
int cli_outputs_dot(const cli_outputs *o, tg_tensor *const *roots, int n,
                    const char *const *names, FILE *note);

/* The line announcing the --dot file, on note. */
void cli_outputs_dot_note(const cli_outputs *o, FILE *note);

/* After the work: when `write`, writes the trace and the plot; in every case
 * stops and clears the recording. Returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_outputs_end(cli_outputs *o, const char *title, bool write, FILE *note);

/* A step mark in the timeline (tg_step_mark(label)), only while recording:
 * otherwise the program's step numbers are left alone. */
void cli_outputs_mark(const cli_outputs *o, const char *label);

/* ---- progress on stderr ---------------------------------------------------- */

/* True when stderr is a terminal (progress is shown). */
bool cli_progress_enabled(void);

/* Sets the prefix of progress lines (copied; NULL or "" for none). */
void cli_progress_prefix(const char *prefix);

/* Rewrites the progress line: "\r\033[K<prefix> <text>"; nothing unless stderr
 * is a terminal. */
void cli_progress(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Erases the progress line, if one is shown; flushes stdout first. */
void cli_progress_clear(void);

/* ---- small shared helpers -------------------------------------------------- */

/* Median of v[0..n-1] (sorts v). */
double cli_median(double *v, int n);

/* Splits "--name=value" into name (copied into buf, at most cap - 1 bytes) and
 * value (returned); returns NULL and copies the whole argument when it has no
 * '=' or does not start with "--". */
const char *cli_split_opt(const char *arg, char *buf, size_t cap);

/* Parses a comma-separated list of decimal integers in [lo, hi] for option
 * `flag` into out[0..max-1]; *n receives the count. On a bad element or too
 * many, prints a one-line usage error and returns false. */
bool cli_parse_i64_list(const char *flag, const char *val, int64_t lo, int64_t hi,
                        int64_t *out, int max, int *n);

#endif
