/* cli/cli.h - declarations shared by the files of the `tapegrad` command.
 *
 * Contract:
 *  - Exit codes: CLI_EXIT_OK (0) success, CLI_EXIT_FAIL (1) a demo, check or
 *    command failed (also: a file or stdout could not be written),
 *    CLI_EXIT_USAGE (2) misuse (unknown command, topic or option, bad value).
 *  - Misuse is reported by cli_usage_error(): ONE line on stderr starting with
 *    "tapegrad: ", nothing on stdout.
 *  - A failure is reported on stderr (cli_fail: "tapegrad: <what>: ..."),
 *    never only on stdout. A demo's claim either holds at every valid size
 *    or the demo says on stdout why it does not apply at that size (exit 0).
 *  - Options, the same rule for every subcommand, each declared once in the
 *    command's table (cli/options.h): "--name value" or "--name=value"; an option given twice
 *    counts once, with its last value; a flag takes no value; unknown options
 *    and missing values are misuse. --help or -h anywhere prints the help of
 *    the (sub)command on stdout and exits 0, whatever else is given.
 *    `tapegrad help [COMMAND...]` prints the same help; an unknown topic or
 *    an option there is misuse.
 *  - Demos print plain text (no colours or terminal codes), so their output
 *    reads the same in a terminal, a pipe or a file. Progress lines go to
 *    stderr, only when it is a terminal (cli/common.h): a successful run
 *    prints nothing on a stderr that is not a terminal, except the lines
 *    announcing files when stdout carries JSON.
 *  - Every demo takes --trace FILE.json, --plot FILE.svg and --dot FILE
 *    (cli/common.h); every file is written whole or not at all.
 *  - Every demo releases every tensor it created; it fails (exit 1) if the
 *    library reports live objects afterwards.
 * Names here use the cli_ prefix; tg_ is the library's.
 */
#ifndef TAPEGRAD_CLI_H
#define TAPEGRAD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "json.h"
#include "options.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* The exit statuses of every demo, for its help (cli/options.h). */
#define CLI_DEMO_EXIT_STATUS \
    "0 the demo showed what it says, 1 a check or the library failed, 2 bad usage."

/* Prints a section heading: a blank line, the title, a rule. */
void cli_heading(const char *title);

/* ---- demo inplace (cli/demo_inplace.c) -------------------------------------- */

typedef struct cli_inplace_opts {
    int64_t rows;    /* rows of the logits, 1..CLI_INPLACE_MAX_ROWS */
    int64_t vocab;   /* columns, 2..CLI_INPLACE_MAX_VOCAB */
    uint64_t seed;   /* seed of tg_randn */
    cli_outputs out; /* --trace, --plot, --dot (the buggy loss before backward) */
} cli_inplace_opts;

#define CLI_INPLACE_MAX_ROWS 32
#define CLI_INPLACE_MAX_VOCAB 128

/* The default options (4 rows, 6 columns, seed 42). */
cli_inplace_opts cli_inplace_defaults(void);

/* Parses `--rows N --vocab V --seed S` and the output flags (also
 * --opt=value) from argv[0..argc-1].
 * Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing a one-line error. */
int cli_inplace_parse(int argc, char **argv, cli_inplace_opts *opts);

/* Runs the demo; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_inplace_run(cli_inplace_opts *opts);

/* Prints the help of `tapegrad demo inplace` to stdout. */
void cli_inplace_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_inplace_command;

/* ---- demo leak (cli/demo_leak.c) ------------------------------------------ */

typedef struct cli_leak_opts {
    int64_t microbatches;   /* 1..CLI_LEAK_MAX_MICROBATCHES */
    int64_t seq;            /* rows of each microbatch's logits, 1..CLI_LEAK_MAX_SEQ */
    int64_t vocab;          /* columns, 2..CLI_LEAK_MAX_VOCAB */
    bool detach;            /* keep tg_detach(loss) instead of the loss */
    bool entropy_with_grad; /* also keep an entropy recorded with its gradient */
    bool json;              /* one JSON object per line on stdout, nothing else */
    bool brief;             /* no introduction or step headings (for the tour's
                               second run); not a command-line option */
    cli_outputs out;        /* --trace, --plot, --dot (the kept losses after the
                               loop) */
} cli_leak_opts;

#define CLI_LEAK_MAX_MICROBATCHES 4096
#define CLI_LEAK_MAX_SEQ (1 << 20)
#define CLI_LEAK_MAX_VOCAB (1 << 20)

/* The defaults: 8 microbatches of [512, 8192] f32 logits, losses kept as
 * they are, text output. */
cli_leak_opts cli_leak_defaults(void);

/* Parses the options of `demo leak` (also --opt=value) from argv[0..argc-1].
 * Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing a one-line error. */
int cli_leak_parse(int argc, char **argv, cli_leak_opts *opts);

/* Runs the demo; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_leak_run(cli_leak_opts *opts);

/* Prints the help of `tapegrad demo leak` to stdout. */
void cli_leak_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_leak_command;

/* ---- demo entropy (cli/demo_entropy.c) ------------------------------------ */

typedef struct cli_entropy_opts {
    int64_t seq, vocab; /* f32 logits [seq, vocab] */
    int64_t reps;       /* steps per configuration, 1..100 */
    uint64_t seed;
    bool json;          /* one JSON object per configuration per line */
    cli_outputs out;    /* --trace, --plot, --dot */
} cli_entropy_opts;

/* The defaults: [1024, 32000] logits, 3 steps, seed 7, text output. */
cli_entropy_opts cli_entropy_defaults(void);

/* Parses the options of `demo entropy` (also --opt=value). Returns
 * CLI_EXIT_OK, or CLI_EXIT_USAGE after printing a one-line error. */
int cli_entropy_parse(int argc, char **argv, cli_entropy_opts *opts);

/* Runs the demo; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_entropy_run(cli_entropy_opts *opts);

/* Prints the help of `tapegrad demo entropy` to stdout. */
void cli_entropy_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_entropy_command;

/* ---- demo chunk (cli/demo_chunk.c) ---------------------------------------- */

#define CLI_CHUNK_MAX_LIST 8

typedef struct cli_chunk_opts {
    int64_t seq[CLI_CHUNK_MAX_LIST];   /* rows of the logits, in order */
    int n_seq;
    int64_t chunk[CLI_CHUNK_MAX_LIST]; /* ascending, distinct, chunk[0] == 0 */
    int n_chunk;
    int64_t vocab;
    int64_t reps;                      /* steps per row, 1..100 */
    bool entropy_grad;                 /* entropy in the loss (coefficient 0.01) */
    uint64_t seed;
    bool json;                         /* one JSON object per row per line */
    cli_outputs out;                   /* --trace, --plot, --dot */
} cli_chunk_opts;

/* The defaults: seq 256,1024, vocab 32000, chunk 0,128,512, 3 steps,
 * entropy_grad on, seed 11, text output. */
cli_chunk_opts cli_chunk_defaults(void);

/* Parses the options of `demo chunk` (also --opt=value). Returns CLI_EXIT_OK,
 * or CLI_EXIT_USAGE after printing a one-line error. */
int cli_chunk_parse(int argc, char **argv, cli_chunk_opts *opts);

/* Runs the demo; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_chunk_run(cli_chunk_opts *opts);

/* Prints the help of `tapegrad demo chunk` to stdout. */
void cli_chunk_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_chunk_command;

/* ---- demo linear (cli/demo_linear.c) -------------------------------------- */

typedef struct cli_linear_opts {
    int64_t seq, hidden, vocab; /* hidden (seq, hidden), weight (vocab, hidden), f32 */
    int64_t workspace_mib;      /* the fused op's workspace budget */
    int64_t reps;               /* steps per configuration, 1..100 */
    uint64_t seed;
    bool json;                  /* one JSON object per configuration per line */
    cli_outputs out;            /* --trace, --plot, --dot */
} cli_linear_opts;

/* The defaults: seq 2048, hidden 512, vocab 32000, workspace 64 MiB, 1 step,
 * seed 13, text output. */
cli_linear_opts cli_linear_defaults(void);

/* Parses the options of `demo linear` (also --opt=value). Returns
 * CLI_EXIT_OK, or CLI_EXIT_USAGE after printing a one-line error. */
int cli_linear_parse(int argc, char **argv, cli_linear_opts *opts);

/* Runs the demo; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_linear_run(cli_linear_opts *opts);

/* Prints the help of `tapegrad demo linear` to stdout. */
void cli_linear_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_linear_command;

/* ---- tour (cli/tour.c) ------------------------------------------------------ */

/* `tapegrad tour [--quick] [--list | SECTION]` with argv[0..argc-1] after
 * "tour". */
int cli_tour(int argc, char **argv);

/* Prints the help of `tapegrad tour` to stdout. */
void cli_tour_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_tour_command;

/* Prints the usage of the whole command to f (cli/main.c). */
void cli_print_usage(FILE *f);

/* ---- logprob (cli/cmd_logprob.c) -------------------------------------------- */

/* Runs `tapegrad logprob` with argv[0..argc-1], the arguments after "logprob"
 * (see the contract at the top of cli/cmd_logprob.c). Returns CLI_EXIT_OK,
 * CLI_EXIT_FAIL or CLI_EXIT_USAGE. */
int cli_logprob_main(int argc, char **argv);

/* Prints the help of `tapegrad logprob` to stdout. */
void cli_logprob_help(void);

/* Its options (cli/options.h). */
extern const cli_command cli_logprob_command;

#endif
