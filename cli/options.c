/* cli/options.c - the option parser and the help writer every command uses,
 * both driven by the command's table (contract: cli/options.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "cli.h"
#include "common.h"
#include "options.h"

const cli_word CLI_DEVICE_WORDS[] = {{"cpu", TG_CPU}, {"cuda", TG_CUDA}, {NULL, 0}};
const cli_word CLI_FLOAT_DTYPE_WORDS[] = {
    {"f32", TG_F32}, {"f64", TG_F64}, {"bf16", TG_BF16}, {NULL, 0}};
const cli_word CLI_IMPL_WORDS[] = {
    {"fused", TG_LOGPROB_FUSED}, {"composite", TG_LOGPROB_COMPOSITE}, {NULL, 0}};
const cli_word CLI_ON_OFF_WORDS[] = {{"on", 1}, {"off", 0}, {NULL, 0}};

#define HELP_WIDTH 79 /* columns of every help line */
#define NAME_WIDTH 24 /* "--name META" up to this wide; a wider one puts its help below */

/* ---- parsing ----------------------------------------------------------------------------- */

static void *field_of(void *opts, size_t at) { return (char *)opts + at; }
static const void *cfield_of(const void *opts, size_t at) { return (const char *)opts + at; }

/* The row whose name is arg[0..len), or NULL. */
static const cli_opt *find_row(const cli_command *cmd, const char *arg, size_t len) {
    for (int k = 0; k < cmd->n_opts; k++)
        if (strlen(cmd->opts[k].name) == len && !strncmp(cmd->opts[k].name, arg, len))
            return &cmd->opts[k];
    return NULL;
}

/* "a, b or c" of a word table, into buf. */
static const char *words_text(const cli_word *w, char *buf, size_t cap) {
    size_t k = 0;
    int n = 0;
    while (w[n].word)
        n++;
    for (int i = 0; i < n; i++)
        k = cli_appendf(buf, cap, k, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                        w[i].word);
    return buf;
}

/* The value of the word s[0..len) in w, or false. */
static bool find_word(const cli_word *w, const char *s, size_t len, int *value) {
    for (; w->word; w++)
        if (strlen(w->word) == len && !strncmp(w->word, s, len)) {
            *value = w->value;
            return true;
        }
    return false;
}

static bool parse_word_list(const cli_opt *row, const char *val, int *out, int *count) {
    char expected[160];
    int n = 0;
    for (const char *p = val;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int v;
        if (n == row->max) {
            cli_usage_error("too many values for %s (at most %d)", row->name, row->max);
            return false;
        }
        if (!find_word(row->words, p, len, &v)) {
            cli_usage_error("invalid element '%.*s' in %s '%s' (expected %s, comma-separated)",
                            (int)len, p, row->name, val,
                            words_text(row->words, expected, sizeof expected));
            return false;
        }
        out[n++] = v;
        if (!comma)
            break;
        p = comma + 1;
    }
    *count = n;
    return true;
}

/* Stores val into the row's field; false after a one-line usage error. */
static bool store(const cli_opt *row, const char *val, void *opts) {
    void *field = field_of(opts, row->at);
    char expected[160];
    switch (row->kind) {
    case CLI_OPT_INT:
        return cli_parse_i64(row->name, val, row->lo, row->hi, field);
    case CLI_OPT_SEED:
        return cli_parse_u64(row->name, val, field);
    case CLI_OPT_INT_LIST: {
        int n = 0;
        if (!cli_parse_i64_list(row->name, val, row->lo, row->hi, field, row->max, &n))
            return false;
        *(int *)field_of(opts, row->count_at) = n;
        return true;
    }
    case CLI_OPT_WORD: {
        int v;
        if (find_word(row->words, val, strlen(val), &v)) {
            *(int *)field = v;
            return true;
        }
        cli_usage_error("invalid value '%s' for %s (expected %s)", val, row->name,
                        words_text(row->words, expected, sizeof expected));
        return false;
    }
    case CLI_OPT_WORD_LIST: {
        int n = 0;
        if (!parse_word_list(row, val, field, &n))
            return false;
        *(int *)field_of(opts, row->count_at) = n;
        return true;
    }
    case CLI_OPT_SWITCH:
        if (strcmp(val, "on") && strcmp(val, "off")) {
            cli_usage_error("invalid value '%s' for %s (expected on or off)", val, row->name);
            return false;
        }
        *(bool *)field = !strcmp(val, "on");
        return true;
    case CLI_OPT_TEXT:
        *(const char **)field = val;
        return true;
    case CLI_OPT_CUSTOM:
        return row->parse(row->name, val, field);
    case CLI_OPT_FLAG:
        break;
    }
    *(bool *)field = true;
    return true;
}

/* One argument (and its value, advancing *i): CLI_EXIT_OK or CLI_EXIT_USAGE. */
static int take(const cli_command *cmd, int argc, char **argv, int *i, void *opts,
                uint64_t *given) {
    const char *arg = argv[*i];
    if (arg[0] != '-' || !arg[1]) { /* "x", "-": a positional argument */
        if (cmd->arg)
            return cmd->arg(arg, opts);
        return cli_usage_error("unexpected argument '%s' for '%s' (try 'tapegrad %s --help')",
                               arg, cmd->name, cmd->name);
    }
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    const cli_opt *row = find_row(cmd, arg, len);
    if (!row)
        return cli_usage_error("unknown option '%s' for '%s' (try 'tapegrad %s --help')", arg,
                               cmd->name, cmd->name);
    const char *val = eq ? eq + 1 : NULL;
    if (row->kind == CLI_OPT_FLAG) {
        if (val)
            return cli_usage_error("option %s takes no value", row->name);
    } else {
        const char *what = row->kind == CLI_OPT_TEXT ? "a file name" : "a value";
        if (!val) {
            if (*i + 1 >= argc)
                return cli_usage_error("option %s needs %s", row->name, what);
            val = argv[++*i];
        }
        if (!*val)
            return cli_usage_error("option %s needs %s, not an empty string", row->name, what);
    }
    if (!store(row, val, opts))
        return CLI_EXIT_USAGE;
    *given |= UINT64_C(1) << (row - cmd->opts);
    return CLI_EXIT_OK;
}

/* Two rows that write files may not name the same one: the second write
 * would replace the first. */
static int check_written_files(const cli_command *cmd, const void *opts) {
    for (int a = 0; a < cmd->n_opts; a++)
        for (int b = a + 1; b < cmd->n_opts; b++) {
            const cli_opt *ra = &cmd->opts[a], *rb = &cmd->opts[b];
            if (!ra->writes || !rb->writes)
                continue;
            const char *fa = *(const char *const *)cfield_of(opts, ra->at);
            const char *fb = *(const char *const *)cfield_of(opts, rb->at);
            if (fa && fb && !strcmp(fa, fb))
                return cli_usage_error("%s and %s name the same file '%s'", ra->name, rb->name,
                                       fa);
        }
    return CLI_EXIT_OK;
}

int cli_options_parse(const cli_command *cmd, int argc, char **argv, void *opts,
                      uint64_t *given) {
    uint64_t seen = 0;
    if (cmd->n_opts > 64)
        return cli_usage_error("'%s' declares %d options, more than 64", cmd->name, cmd->n_opts);
    for (int i = 0; i < argc; i++) {
        int rc = take(cmd, argc, argv, &i, opts, &seen);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    for (int k = 0; k < cmd->n_opts; k++) {
        const cli_opt *row = &cmd->opts[k];
        if (row->required && !(seen >> k & 1))
            return cli_usage_error("'%s' needs %s %s (try 'tapegrad %s --help')", cmd->name,
                                   row->name, row->meta ? row->meta : "VALUE", cmd->name);
    }
    int rc = check_written_files(cmd, opts);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (given)
        *given = seen;
    return CLI_EXIT_OK;
}

bool cli_option_given(const cli_command *cmd, uint64_t given, const char *name) {
    const cli_opt *row = find_row(cmd, name, strlen(name));
    return row && (given >> (row - cmd->opts) & 1);
}

/* ---- help ---------------------------------------------------------------------------------- */

/* The value's name in the help: the row's meta, or one made from its kind. */
static const char *meta_of(const cli_opt *row, char *buf, size_t cap) {
    if (row->meta)
        return row->meta;
    size_t k = 0;
    switch (row->kind) {
    case CLI_OPT_WORD:
    case CLI_OPT_WORD_LIST:
        for (const cli_word *w = row->words; w->word; w++)
            k = cli_appendf(buf, cap, k, "%s%s", w == row->words ? ""
                                                 : row->kind == CLI_OPT_WORD ? "|" : ",",
                            w->word);
        return buf;
    case CLI_OPT_SWITCH:
        return "on|off";
    case CLI_OPT_INT_LIST:
        return "N,...";
    case CLI_OPT_SEED:
        return "S";
    case CLI_OPT_FLAG:
        return "";
    default:
        return "N";
    }
}

/* The word of value v, or "?". */
static const char *word_of(const cli_word *w, int v) {
    for (; w->word; w++)
        if (w->value == v)
            return w->word;
    return "?";
}

/* The default of a row as text, read from the defaults struct; "" for none. */
static const char *default_of(const cli_opt *row, const void *defaults, char *buf, size_t cap) {
    if (row->default_text)
        return row->default_text;
    if (!defaults)
        return "";
    const void *field = cfield_of(defaults, row->at);
    size_t k = 0;
    buf[0] = '\0';
    switch (row->kind) {
    case CLI_OPT_INT:
        cli_appendf(buf, cap, 0, "%" PRId64, *(const int64_t *)field);
        break;
    case CLI_OPT_SEED:
        cli_appendf(buf, cap, 0, "%" PRIu64, *(const uint64_t *)field);
        break;
    case CLI_OPT_INT_LIST:
        for (int i = 0; i < *(const int *)cfield_of(defaults, row->count_at); i++)
            k = cli_appendf(buf, cap, k, "%s%" PRId64, i ? "," : "",
                            ((const int64_t *)field)[i]);
        break;
    case CLI_OPT_WORD:
        cli_appendf(buf, cap, 0, "%s", word_of(row->words, *(const int *)field));
        break;
    case CLI_OPT_WORD_LIST:
        for (int i = 0; i < *(const int *)cfield_of(defaults, row->count_at); i++)
            k = cli_appendf(buf, cap, k, "%s%s", i ? "," : "",
                            word_of(row->words, ((const int *)field)[i]));
        break;
    case CLI_OPT_SWITCH:
        cli_appendf(buf, cap, 0, "%s", *(const bool *)field ? "on" : "off");
        break;
    case CLI_OPT_TEXT:
        if (*(const char *const *)field)
            cli_appendf(buf, cap, 0, "%s", *(const char *const *)field);
        break;
    case CLI_OPT_FLAG:
    case CLI_OPT_CUSTOM:
        break;
    }
    return buf;
}

/* Writes text from column `at` (the cursor is there), wrapping at HELP_WIDTH
 * onto lines indented to `indent`; a '\n' in text breaks the line. */
static void wrap(FILE *f, const char *text, int at, int indent) {
    int col = at;
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            p++;
            continue;
        }
        size_t word = strcspn(p, " \n");
        if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

void cli_help_options(FILE *f, const cli_command *cmd, const void *defaults) {
    char meta[160], def[160], left[200];
    int width = 0; /* of "--name META", the widest that fits the name column */
    for (int k = 0; k < cmd->n_opts; k++) {
        const cli_opt *row = &cmd->opts[k];
        const char *m = meta_of(row, meta, sizeof meta);
        int w = (int)strlen(row->name) + (*m ? 1 + (int)strlen(m) : 0);
        if (w <= NAME_WIDTH && w > width)
            width = w;
    }
    for (int k = 0; k < cmd->n_opts; k++) {
        const cli_opt *row = &cmd->opts[k];
        const char *m = meta_of(row, meta, sizeof meta);
        const char *d = default_of(row, defaults, def, sizeof def);
        if (row->group)
            fprintf(f, "%s\n", row->group);
        snprintf(left, sizeof left, "%s%s%s", row->name, *m ? " " : "", m);
        char text[640], range[64] = "";
        bool ranged = (row->kind == CLI_OPT_INT || row->kind == CLI_OPT_INT_LIST) &&
                      row->hi != INT64_MAX; /* a bound worth saying */
        if (ranged)
            snprintf(range, sizeof range, "%" PRId64 "..%" PRId64, row->lo, row->hi);
        snprintf(text, sizeof text, "%s%s%s%s%s%s", row->help, *range || *d ? " (" : "", range,
                 *range && *d ? ", default " : *d ? "default " : "", d,
                 *range || *d ? ")" : "");
        int indent = 2 + width + 2;
        if ((int)strlen(left) > width) { /* the help on the next line */
            fprintf(f, "  %s\n%*s", left, indent, "");
        } else {
            fprintf(f, "  %-*s  ", width, left);
        }
        wrap(f, text, indent, indent);
    }
}

void cli_help_synopsis(FILE *f, const cli_command *cmd, const char *lead) {
    char meta[160], part[200];
    int indent = (int)strlen(lead) + (int)strlen("tapegrad ") + (int)strlen(cmd->name) + 1;
    int col = fprintf(f, "%stapegrad %s", lead, cmd->name);
    for (int k = 0; k <= cmd->n_opts; k++) {
        if (k == cmd->n_opts) {
            if (!cmd->args)
                break;
            snprintf(part, sizeof part, "%s", cmd->args);
        } else {
            const cli_opt *row = &cmd->opts[k];
            const char *m = meta_of(row, meta, sizeof meta);
            snprintf(part, sizeof part, "%s%s%s%s%s", row->required ? "" : "[", row->name,
                     *m ? " " : "", m, row->required ? "" : "]");
        }
        if (col + 1 + (int)strlen(part) > HELP_WIDTH && col > indent) {
            fprintf(f, "\n%*s", indent - 1, "");
            col = indent - 1;
        }
        col += fprintf(f, " %s", part);
    }
    fputc('\n', f);
}

void cli_help(FILE *f, const cli_command *cmd, const void *defaults) {
    cli_help_synopsis(f, cmd, "Usage: ");
    if (cmd->usage_more)
        fputs(cmd->usage_more, f);
    if (cmd->about)
        fprintf(f, "\n%s", cmd->about);
    fputc('\n', f);
    if (cmd->n_opts > 0 && !cmd->opts[0].group)
        fputs("Options:\n", f);
    cli_help_options(f, cmd, defaults);
    if (cmd->notes)
        fprintf(f, "\n%s", cmd->notes);
    fputs("\n" CLI_OPTIONS_RULE_HELP, f);
    if (cmd->exit_status) {
        fputs("\nExit status: ", f);
        wrap(f, cmd->exit_status, 13, 13);
    }
}
