/* cli/cli.h - declarations shared by the files of the `tapegrad` command.
 *
 * Contract:
 *  - Exit codes: CLI_EXIT_OK (0) success, CLI_EXIT_FAIL (1) a demo or check
 *    failed, CLI_EXIT_USAGE (2) misuse (unknown command/option, bad value).
 *  - Misuse is reported by cli_usage_error(): ONE line on stderr starting with
 *    "tapegrad: ", nothing on stdout.
 *  - Demos print plain text (no colours or terminal codes), so their output
 *    reads the same in a terminal, a pipe or a file.
 *  - Every demo releases every tensor it created; it fails (exit 1) if the
 *    library reports live objects afterwards.
 * Names here use the cli_ prefix; tg_ is the library's.
 */
#ifndef TAPEGRAD_CLI_H
#define TAPEGRAD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* Prints "tapegrad: <message>" and a newline on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Parses s as a decimal integer in [lo, hi] for option `flag` ("-7" is
 * accepted when lo < 0). On failure prints a one-line usage error and returns
 * false. */
bool cli_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Parses s as an unsigned 64-bit decimal integer for option `flag`. */
bool cli_parse_u64(const char *flag, const char *s, uint64_t *out);

/* Prints a section heading: a blank line, the title, a rule. */
void cli_heading(const char *title);

/* ---- demo inplace (cli/demo_inplace.c) -------------------------------------- */

typedef struct cli_inplace_opts {
    int64_t rows;  /* rows of the logits, 1..CLI_INPLACE_MAX_ROWS */
    int64_t vocab; /* columns, 2..CLI_INPLACE_MAX_VOCAB */
    uint64_t seed; /* seed of tg_randn */
} cli_inplace_opts;

#define CLI_INPLACE_MAX_ROWS 32
#define CLI_INPLACE_MAX_VOCAB 128

/* The default options (4 rows, 6 columns, seed 42). */
cli_inplace_opts cli_inplace_defaults(void);

/* Parses `--rows N --vocab V --seed S` (also --opt=value) from argv[0..argc-1].
 * Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing a one-line error. */
int cli_inplace_parse(int argc, char **argv, cli_inplace_opts *opts);

/* Runs the demo; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_inplace_run(const cli_inplace_opts *opts);

/* Prints the help of `tapegrad demo inplace` to stdout. */
void cli_inplace_help(void);

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
int cli_leak_run(const cli_leak_opts *opts);

/* Prints the help of `tapegrad demo leak` to stdout. */
void cli_leak_help(void);

/* ---- logprob (cli/cmd_logprob.c) -------------------------------------------- */

/* Runs `tapegrad logprob` with argv[0..argc-1], the arguments after "logprob"
 * (see the contract at the top of cli/cmd_logprob.c). Returns CLI_EXIT_OK,
 * CLI_EXIT_FAIL or CLI_EXIT_USAGE. */
int cli_logprob_main(int argc, char **argv);

/* Prints the help of `tapegrad logprob` to stdout. */
void cli_logprob_help(void);

#endif
