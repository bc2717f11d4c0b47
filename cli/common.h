/* cli/common.h - what every subcommand of `tapegrad` shares: usage errors and failures, the output flags --trace
 * FILE.json, --plot FILE.svg and --dot FILE, files written whole or not at
 * all, bounded text building, and progress lines on stderr.
 *
 * Contract:
 *  - Options are parsed from each command's table (cli/options.h): "--name
 *    value" or "--name=value"; a flag ("--json") takes no value. An option
 *    given more than once counts as given once, with its last value ("--reps
 *    3 --reps 1" is "--reps 1", "--trace a.json --trace b.json" writes b.json
 *    only), as in argparse and most Unix tools. An unknown option, a missing
 *    or empty value, a value given to a flag, or a positional argument a
 *    command does not take is a usage error.
 *  - Usage errors (cli_usage_error): one line "tapegrad: ..." on stderr,
 *    nothing on stdout, exit 2. A failure (cli_fail: a demo's claim that does
 *    not hold, a library error, a file that cannot be written): its message
 *    on stderr, exit 1.
 *  - The three output flags are rows of the command's table
 *    (CLI_OUTPUT_OPTS); one file named by two flags is a usage error
 *    (cli_options_parse: rows marked `writes`).
 *  - cli_outputs_begin(), before the work: checks that every named file can
 *    be written (a temporary file is made in its directory and removed; the
 *    file itself is not touched), then starts the memory timeline
 *    (tg_timeline_start) when --trace or --plot is given. A file that cannot
 *    be written is one line "tapegrad: cannot write ...", exit 1.
 *  - cli_outputs_dot(), at the demo's interesting moment: tg_graph_dot of the
 *    given roots into the --dot file (nothing when --dot is absent).
 *  - cli_outputs_end(), after the work: stops the timeline, writes the trace
 *    (tg_timeline_write_trace) and the plot (tg_timeline_write_svg, with the
 *    given title), then frees the recording. Errors: one line "tapegrad: ..."
 *    on stderr, CLI_EXIT_FAIL.
 *  - Every file the command writes (trace, plot, graph, .npy outputs) is
 *    written to a temporary file in the same directory, every write and the
 *    close checked, and renamed onto its name only then (cli_file_*): a
 *    failed write (a full disk, a file size limit) leaves no partial file,
 *    and an earlier file of that name as it was. A name that is not a
 *    regular file (/dev/stdout, a pipe) is written in place.
 *  - Each file written is announced as one line "wrote FILE (what)" on the
 *    `note` stream the caller passes (stdout for text output, stderr when
 *    stdout carries JSON).
 *  - Progress: cli_progress() writes one line on stderr, rewritten in place,
 *    only when stderr is a terminal; otherwise it prints nothing, so a
 *    successful run prints nothing on a stderr that is not a terminal.
 *    Callers call cli_progress_clear() before writing to stdout. A prefix
 *    (set by the tour: "tour 2/4") goes before every progress line.
 */
#ifndef TAPEGRAD_CLI_COMMON_H
#define TAPEGRAD_CLI_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tapegrad.h>

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* ---- usage errors, failures, numbers ------------------------------------------------ */

/* Prints "tapegrad: <message>" and a newline on stderr (after flushing stdout
 * and clearing the progress line); returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Reports a failure: flushes stdout, clears the progress line, prints
 * "tapegrad: <who>: <message>" and a newline on stderr; returns
 * CLI_EXIT_FAIL. */
int cli_fail(const char *who, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Parses s as a decimal integer in [lo, hi] for option `flag` ("-7" is
 * accepted when lo < 0). On failure prints a one-line usage error and returns
 * false. */
bool cli_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Parses s as an unsigned 64-bit decimal integer for option `flag`. */
bool cli_parse_u64(const char *flag, const char *s, uint64_t *out);

/* ---- lists and help ------------------------------------------------------------------ */

/* True when argv[0..argc-1] holds --help or -h: help is shown whatever else
 * is given (argparse's rule). */
bool cli_wants_help(int argc, char **argv);

/* Parses a comma-separated list of decimal integers in [lo, hi] for option
 * `flag` into out[0..max-1]; *n receives the count. On a bad element or too
 * many, prints a one-line usage error and returns false. */
bool cli_parse_i64_list(const char *flag, const char *val, int64_t lo, int64_t hi,
                        int64_t *out, int max, int *n);

/* ---- files written whole or not at all ------------------------------------------------- */

typedef struct cli_file {
    FILE *f;        /* write here (NULL after cli_file_close_stream) */
    char *tmp;      /* the temporary file's name (malloc'd), NULL when in place */
    char *target;   /* the name it is renamed to (malloc'd; symbolic links resolved) */
} cli_file;

/* Opens a temporary file in path's directory for writing, with the mode a new
 * file would get (or path's mode when it exists); when path exists and is not
 * a regular file, opens path itself. Returns 0 or an errno value (nothing is
 * left behind then). */
int cli_file_open(cli_file *cf, const char *path);

/* The name to hand to a writer that takes a name (tg_timeline_write_trace):
 * closes cf->f first, so that the writer's own fopen starts the file. */
const char *cli_file_close_stream(cli_file *cf);

/* Checks the stream (its error flag, the flush, the sync to the disk) and
 * closes it, without renaming yet: for several files that must all be
 * written before any is renamed. Returns 0 or an errno value (then
 * cli_file_discard). Call it (or cli_file_commit) right after the writes:
 * the reason of a write that failed is read from errno. */
int cli_file_finish(cli_file *cf);

/* cli_file_finish (when not done yet), then renames the temporary file onto
 * the name. Returns 0, or an errno value after removing the temporary file
 * (the name keeps its earlier file). cf is empty afterwards either way. */
int cli_file_commit(cli_file *cf);

/* Closes and removes the temporary file; the name is not touched. */
void cli_file_discard(cli_file *cf);

/* ---- the output flags ------------------------------------------------------------------ */

typedef struct cli_outputs {
    const char *trace; /* --trace FILE.json: the memory timeline, Chrome trace JSON */
    const char *plot;  /* --plot FILE.svg: the memory timeline drawn as SVG */
    const char *dot;   /* --dot FILE: the demo's loss graph as Graphviz DOT */
    bool recording;    /* set by cli_outputs_begin when the timeline runs */
} cli_outputs;

/* The rule for options, for the commands' --help texts. */
#define CLI_OPTIONS_RULE_HELP                                                              \
    "Options are --name value or --name=value; given twice, the last one counts.\n"

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

/* The end every demo shares, after it released what it made: the trace and
 * the plot written (cli_outputs_end with title, when rc is CLI_EXIT_OK; the
 * lines announcing them on note), the progress line cleared, then the
 * library asked for live objects: any left is a failure "<who>: LEAK: ..."
 * (the demo forgot a release). Returns rc, or CLI_EXIT_FAIL when one of
 * those failed. */
int cli_demo_end(const char *who, cli_outputs *out, const char *title, int rc, FILE *note);

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
void cli_progress(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Erases the progress line, if one is shown; flushes stdout first. */
void cli_progress_clear(void);

/* ---- small shared helpers -------------------------------------------------- */

/* Median of v[0..n-1] (sorts v). */
double cli_median(double *v, int n);
/* The seed of a configuration's inputs: seed mixed with its sizes, so that
 * every (seq, vocab) gets its own numbers from one --seed. */
uint64_t cli_seed_mix(uint64_t seed, int64_t seq, int64_t vocab);

/* Appends the formatted text to the text of length len in buf (cap bytes) and
 * returns the length to pass to the next call, never more than cap - 1; buf
 * stays NUL-terminated (cap 0: nothing written, 0 returned). What does not
 * fit is cut, never inside a UTF-8 character, and ends with "..."; the text
 * is then full (cap - 1 is returned; buf may be up to 3 bytes shorter) and
 * later calls add nothing. The CLI's twin of the library's internal
 * tg__appendf: build texts with `k = cli_appendf(buf, sizeof buf, k, ...)`,
 * never `k += snprintf(...)`. */
size_t cli_appendf(char *buf, size_t cap, size_t len, const char *fmt, ...) CLI_PRINTF(4, 5);

#endif
