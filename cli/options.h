/* cli/options.h - the options of every `tapegrad` command, declared once as a
 * table: one row per option says its name, the kind of value it takes, the
 * field of the command's options struct the value goes to, its range or its
 * words, and its help line. The parser, the help text, the synopsis and the
 * defaults shown in the help are all made from that table, so they cannot
 * disagree, and the field's C type is checked against the kind when the
 * table is compiled (CLI_INT on a field that is not int64_t does not build).
 *
 * Contract (the rule of cli/cli.h, for every command):
 *  - "--name value" or "--name=value"; a flag (CLI_FLAG) takes no value. An
 *    option given twice counts once, with its last value. A value may look
 *    like an option or a negative number ("--seq -5" gives "-5" to --seq).
 *  - Misuse is one line "tapegrad: ..." on stderr and CLI_EXIT_USAGE: an
 *    unknown option, a missing or empty value, a value given to a flag, a
 *    positional argument the command does not take, a bad value (naming the
 *    option and what it expects), a required option not given, two options
 *    that write files naming the same one (rows marked `writes`).
 *  - cli_options_parse writes only the fields of the options given (the
 *    caller fills the defaults first); a list option replaces the whole list.
 *  - cli_help prints the synopsis, the command's text, one line per option
 *    (wrapped at 79 columns) ending in "(default X)" read from the defaults
 *    struct passed in, the option rule and the exit statuses, on f.
 */
#ifndef TAPEGRAD_CLI_OPTIONS_H
#define TAPEGRAD_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an option takes, and the C type of the field it writes. */
typedef enum cli_opt_kind {
    CLI_OPT_INT,       /* int64_t in [lo, hi]; "-7" when lo < 0 */
    CLI_OPT_SEED,      /* uint64_t, 0 .. 2^64 - 1 */
    CLI_OPT_INT_LIST,  /* int64_t[max], comma-separated, each in [lo, hi]; the count in an int */
    CLI_OPT_WORD,      /* int: the value paired with the word given */
    CLI_OPT_WORD_LIST, /* int[max]: the values of comma-separated words; the count in an int */
    CLI_OPT_SWITCH,    /* bool: "on" or "off" */
    CLI_OPT_FLAG,      /* bool, set to true; takes no value */
    CLI_OPT_TEXT,      /* const char *: the argument itself (a file name), not empty */
    CLI_OPT_CUSTOM,    /* parsed by the row's parse function */
} cli_opt_kind;

/* One word a CLI_OPT_WORD or CLI_OPT_WORD_LIST option accepts. Word tables
 * end with {NULL, 0}. */
typedef struct cli_word {
    const char *word;
    int value;
} cli_word;

/* One row of a command's table (build rows with the macros below). */
typedef struct cli_opt {
    const char *name;         /* "--seq" */
    cli_opt_kind kind;
    size_t at;                /* offset of the value's field in the options struct */
    size_t count_at;          /* lists: offset of the int count */
    int max;                  /* lists: capacity of the array */
    int64_t lo, hi;           /* integers: the accepted range */
    const cli_word *words;    /* words: the accepted ones, ending with {NULL, 0} */
    /* CLI_OPT_CUSTOM: parses val into *field; false after a one-line usage
     * error (cli_usage_error) naming the option. */
    bool (*parse)(const char *name, const char *val, void *field);
    const char *meta;         /* the value in the help ("N,..."); NULL: from the kind */
    const char *help;         /* one paragraph, wrapped when printed; '\n' forces a break */
    const char *default_text; /* shown as "(default ...)"; NULL: read from the
                                 defaults struct; "": no default shown */
    const char *group;        /* when set, a heading printed before this row */
    bool required;            /* parsing fails when the option is not given */
    bool writes;              /* CLI_OPT_TEXT naming a file the command writes: two such
                                 rows may not name one file */
} cli_opt;

/* A command: its name, its table and the texts around the options. */
typedef struct cli_command {
    const char *name;         /* "demo chunk": in messages, the synopsis, the help */
    const cli_opt *opts;
    int n_opts;               /* at most 64 */
    const char *args;         /* positional arguments in the synopsis ("[SECTION]") */
    /* Takes one positional argument; CLI_EXIT_OK, or CLI_EXIT_USAGE after a
     * one-line error. NULL: the command takes none. */
    int (*arg)(const char *arg, void *opts);
    const char *usage_more;   /* further synopsis lines ("tapegrad tour --list"), or NULL */
    const char *about;        /* text between the synopsis and the options (ends in '\n') */
    const char *notes;        /* text after the options (ends in '\n'), or NULL */
    const char *exit_status;  /* the codes: "0 success, 1 ..., 2 bad usage." */
} cli_command;

#define CLI_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- rows: the kind, with the field's type checked ---------------------------------- */

/* The offset of field F of struct T, which must have type TYPE. */
#define CLI_AT(T, F, TYPE) _Generic(((T *)0)->F, TYPE: offsetof(T, F))
/* The offset of array field F of struct T, whose elements must have type TYPE. */
#define CLI_AT_ARRAY(T, F, TYPE) _Generic(&((T *)0)->F[0], TYPE *: offsetof(T, F))
#define CLI_CAPACITY(T, F) ((int)(sizeof(((T *)0)->F) / sizeof(((T *)0)->F[0])))

#define CLI_INT(T, F, LO, HI) .kind = CLI_OPT_INT, .at = CLI_AT(T, F, int64_t), .lo = (LO), .hi = (HI)
#define CLI_SEED(T, F) .kind = CLI_OPT_SEED, .at = CLI_AT(T, F, uint64_t)
#define CLI_INT_LIST(T, F, N, LO, HI)                                                         \
    .kind = CLI_OPT_INT_LIST, .at = CLI_AT_ARRAY(T, F, int64_t), .count_at = CLI_AT(T, N, int), \
    .max = CLI_CAPACITY(T, F), .lo = (LO), .hi = (HI)
#define CLI_WORD(T, F, WORDS) .kind = CLI_OPT_WORD, .at = CLI_AT(T, F, int), .words = (WORDS)
#define CLI_WORD_LIST(T, F, N, WORDS)                                                           \
    .kind = CLI_OPT_WORD_LIST, .at = CLI_AT_ARRAY(T, F, int), .count_at = CLI_AT(T, N, int),    \
    .max = CLI_CAPACITY(T, F), .words = (WORDS)
#define CLI_SWITCH(T, F) .kind = CLI_OPT_SWITCH, .at = CLI_AT(T, F, bool)
#define CLI_FLAG(T, F) .kind = CLI_OPT_FLAG, .at = CLI_AT(T, F, bool)
#define CLI_TEXT(T, F) .kind = CLI_OPT_TEXT, .at = CLI_AT(T, F, const char *)
#define CLI_CUSTOM(T, F, FN) .kind = CLI_OPT_CUSTOM, .at = offsetof(T, F), .parse = (FN)

/* The three output flags of every demo (cli/common.h), for a cli_outputs
 * field F of struct T; DOT_WHAT says which graph --dot writes. */
#define CLI_OUTPUT_OPTS(T, F, DOT_WHAT)                                                        \
    {.name = "--trace", CLI_TEXT(T, F.trace), .meta = "FILE.json", .writes = true,             \
     .help = "memory timeline as Chrome trace JSON (Perfetto, chrome://tracing)"},             \
    {.name = "--plot", CLI_TEXT(T, F.plot), .meta = "FILE.svg", .writes = true,                \
     .help = "memory timeline as SVG: live MiB by category over time"},                  \
    {.name = "--dot", CLI_TEXT(T, F.dot), .meta = "FILE", .writes = true,                      \
     .help = "Graphviz DOT of " DOT_WHAT " (dot -Tsvg FILE > graph.svg)"}

/* Word tables several commands share (cli/options.c): "cpu", "cuda" as
 * tg_device; "f32", "f64", "bf16" as tg_dtype; "fused", "composite" as
 * tg_logprob_impl; "on" 1, "off" 0 (for lists of both; one value is
 * CLI_SWITCH). */
extern const cli_word CLI_DEVICE_WORDS[];
extern const cli_word CLI_FLOAT_DTYPE_WORDS[];
extern const cli_word CLI_IMPL_WORDS[];
extern const cli_word CLI_ON_OFF_WORDS[];

/* ---- using a table --------------------------------------------------------------------- */

/* Parses argv[0..argc-1] against cmd's table into the struct at opts (whose
 * defaults the caller has set). *given (may be NULL) receives bit k set for
 * each row k that was given. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after
 * one line on stderr (see the contract). */
int cli_options_parse(const cli_command *cmd, int argc, char **argv, void *opts,
                      uint64_t *given);

/* True when the option `name` (a row of cmd) is set in a `given` mask of
 * cli_options_parse. False for a name that is not a row. */
bool cli_option_given(const cli_command *cmd, uint64_t given, const char *name);

/* Prints the help of cmd on f: synopsis, about, the options with the
 * defaults read from `defaults` (a struct of the table's type), notes, the
 * option rule, the exit statuses. */
void cli_help(FILE *f, const cli_command *cmd, const void *defaults);

/* Prints "  NAME META  help (default X)" for every row of cmd, wrapped at 79
 * columns (the middle of cli_help, for texts that list options elsewhere). */
void cli_help_options(FILE *f, const cli_command *cmd, const void *defaults);

/* Prints the synopsis "<lead>tapegrad NAME [--opt META] ..." wrapped at 79
 * columns (lead: "Usage: " in a command's help). */
void cli_help_synopsis(FILE *f, const cli_command *cmd, const char *lead);

#endif
