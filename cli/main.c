/* cli/main.c - the `tapegrad` command: argument dispatch, help, version.
 *
 * Contract:
 *   tapegrad --help | -h | help      usage on stdout, exit 0
 *   tapegrad help COMMAND [NAME]     that command's help (`help demo chunk`,
 *                                    `help bench logprob`), exit 0; an
 *                                    unknown topic or an option: exit 2
 *   tapegrad version | --version     library version and backends, exit 0
 *   tapegrad tour [--list | SECTION] every tour section in order (or one),
 *                                    exit 0 when all succeed, 1 otherwise
 *                                    (see cli/tour.c)
 *   tapegrad demo inplace [options]  one demo (see cli_inplace_help)
 *   tapegrad demo entropy [options]  one demo (see cli_entropy_help)
 *   tapegrad demo chunk [options]    one demo (see cli_chunk_help)
 *   tapegrad demo leak [options]     one demo (see cli_leak_help)
 *   tapegrad demo linear [options]   one demo (see cli_linear_help)
 *   tapegrad logprob [options]       .npy in, .npy out (see cli/cmd_logprob.c)
 *   tapegrad bench NAME [options]    a benchmark (see cli/bench.c); exit 0, 1
 *                                    when a configuration fails, 2 on misuse
 *   anything else                    one line on stderr, exit 2:
 *     tapegrad: unknown command 'x' (try 'tapegrad --help')
 * No arguments: misuse, one line on stderr, exit 2. Output is plain text.
 * --help or -h anywhere after a command prints that command's help, exit 0.
 * Whatever the command, a write error on stdout (a full disk) is reported on
 * stderr and makes the exit status 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad.h>

#include "bench.h"
#include "cli.h"

/* ---- helpers shared with the demos ------------------------------------------ */

void cli_heading(const char *title) {
    size_t n = strlen(title);
    printf("\n%s\n", title);
    for (size_t i = 0; i < n; i++)
        putchar('=');
    putchar('\n');
}

/* ---- help and version ---------------------------------------------------------- */

/* What every demo and `bench logprob` take besides their own options. */
typedef struct outputs_only {
    cli_outputs out;
} outputs_only;
static const cli_opt OUTPUT_OPTS[] = {CLI_OUTPUT_OPTS(outputs_only, out, "the demo's loss")};
static const cli_command OUTPUTS_CMD = {.name = "", .opts = OUTPUT_OPTS,
                                        .n_opts = CLI_N(OUTPUT_OPTS)};

void cli_print_usage(FILE *f) {
    fprintf(f,
            "tapegrad %s - a small reverse-mode autograd engine in C\n"
            "\n"
            "Usage:\n"
            "  tapegrad tour [SECTION]        walk through the demos, with explanations\n"
            "  tapegrad tour --list           list the tour's sections\n"
            "  tapegrad tour --quick [SECTION]  the same at tiny sizes (for tests)\n"
            "  tapegrad demo inplace [opts]   an in-place edit of a saved tensor makes\n"
            "                                 backward fail, and the fix\n"
            "  tapegrad demo entropy [opts]   an entropy only logged but recorded for\n"
            "                                 backward: saved and peak bytes, and the fix\n"
            "  tapegrad demo chunk [opts]     chunked log-probs: time vs memory, composite\n"
            "                                 vs fused, seq x chunk\n"
            "  tapegrad demo leak [opts]      losses kept for logging keep their graphs\n"
            "                                 alive; the leak checker names them\n"
            "  tapegrad demo linear [opts]    log-probs from hidden states without the\n"
            "                                 logits ever existing, vs materialized\n"
            "  tapegrad bench NAME [opts]     benchmarks: logprob, linear-logprob, threads,\n"
            "                                 vocab-parallel ('tapegrad bench --help')\n"
            "  tapegrad logprob [opts]        log-probs, entropies and their gradient\n"
            "                                 for .npy logits, written as .npy files\n"
            "  tapegrad version               library version and compiled backends\n"
            "  tapegrad help [COMMAND]        this text, or a command's (also --help, -h)\n"
            "\n"
            "The options of each ('tapegrad help COMMAND' says what they do):\n",
            tg_lib_version());
    const cli_command *const cmds[] = {
        &cli_inplace_command,        &cli_entropy_command,      &cli_chunk_command,
        &cli_leak_command,           &cli_linear_command,       &cli_bench_logprob_command,
        &cli_bench_linear_command,   &cli_bench_threads_command, &cli_bench_vp_command,
        &cli_logprob_command};
    for (int k = 0; k < CLI_N(cmds); k++)
        cli_help_synopsis(f, cmds[k], "  ");
    fputs("\nEvery demo and 'bench logprob' also take:\n", f);
    cli_help_options(f, &OUTPUTS_CMD, NULL);
    fputs("\n"
          "Options are --name value or --name=value; given twice, the last one counts;\n"
          "--help (-h) after any command prints its help ('tapegrad help demo chunk'\n"
          "does the same).\n"
          "\n"
          "Exit status: 0 success, 1 a demo, check or command failed (also a file or\n"
          "             stdout that could not be written), 2 bad usage.\n",
          f);
}

static void version_help(void) {
    printf("Usage: tapegrad version\n"
           "\n"
           "Prints the library's version, the compiled backends and the CUDA devices.\n"
           "Exit status: 0 success, 2 bad usage.\n");
}

static int cmd_version(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        version_help();
        return CLI_EXIT_OK;
    }
    if (argc > 0)
        return cli_usage_error("%s '%s' for 'version' (try 'tapegrad version --help')",
                               argv[0][0] == '-' ? "unknown option" : "unexpected argument",
                               argv[0]);
    printf("tapegrad %s\n", tg_lib_version());
    printf("backends: %s\n", tg_build_backends());
    printf("CPU kernels: %s, non-temporal stores %s\n", tg_cpu_kernels(),
           tg_cpu_stream_stores() ? "on" : "off");
    int ndev = tg_cuda_device_count();
    tg_cuda_props props;
    if (ndev > 0 && tg_cuda_get_props(&props) == TG_OK)
        printf("CUDA devices: %d (device 0: %s, %.1f GiB, %d SMs, peak memory bandwidth %.0f "
               "GB/s)\n",
               ndev, props.name, (double)props.total_bytes / (1024.0 * 1024.0 * 1024.0),
               props.sm_count, props.peak_bytes_per_s / 1e9);
    else if (ndev > 0) printf("CUDA devices: %d\n", ndev);
    else printf("CUDA devices: 0 (%s)\n", tg_cuda_unavailable_reason());
    if (strcmp(tg_lib_version(), TG_VERSION_STRING) != 0)
        printf("(built against headers %s)\n", TG_VERSION_STRING);
    return CLI_EXIT_OK;
}

/* ---- demo ------------------------------------------------------------------------- */

typedef struct demo_entry {
    const char *name;
    const char *what;
    void (*help)(void);
    int (*main)(int argc, char **argv); /* the options after the name */
} demo_entry;

/* Every demo is defaults, then options, then the run (cli/cli.h). */
#define DEMO_MAIN(NAME)                                                         \
    static int demo_##NAME(int argc, char **argv) {                             \
        cli_##NAME##_opts o = cli_##NAME##_defaults();                          \
        int rc = cli_##NAME##_parse(argc, argv, &o);                            \
        return rc != CLI_EXIT_OK ? rc : cli_##NAME##_run(&o);                   \
    }
DEMO_MAIN(inplace)
DEMO_MAIN(entropy)
DEMO_MAIN(chunk)
DEMO_MAIN(leak)
DEMO_MAIN(linear)

static const demo_entry DEMOS[] = {
    {"inplace", "an in-place edit of a saved tensor makes backward fail, and the fix",
     cli_inplace_help, demo_inplace},
    {"entropy", "an entropy only logged but recorded for backward, and the fix",
     cli_entropy_help, demo_entropy},
    {"chunk", "chunked log-probs: time vs memory, composite vs fused", cli_chunk_help,
     demo_chunk},
    {"leak", "losses kept for logging keep their graphs alive", cli_leak_help, demo_leak},
    {"linear", "the logits never exist: log-prob from hidden states, fused", cli_linear_help,
     demo_linear},
};
#define DEMO_N ((int)(sizeof DEMOS / sizeof DEMOS[0]))

static void demo_help(void) {
    printf("Usage: tapegrad demo NAME [options]\n\nDemos:\n");
    for (int i = 0; i < DEMO_N; i++)
        printf("  %-8s %s\n", DEMOS[i].name, DEMOS[i].what);
    printf("\n'tapegrad demo NAME --help' lists a demo's options.\n"
           "Exit status: 0 the demo showed what it says, 1 a check or the library failed,\n"
           "2 bad usage.\n");
}

static const demo_entry *find_demo(const char *name) {
    for (int i = 0; i < DEMO_N; i++)
        if (!strcmp(name, DEMOS[i].name))
            return &DEMOS[i];
    return NULL;
}

static int cmd_demo(int argc, char **argv) {
    if (argc == 0)
        return cli_usage_error("'demo' needs a name: tapegrad demo "
                               "inplace|entropy|chunk|leak|linear "
                               "(try 'tapegrad demo --help')");
    const demo_entry *d = find_demo(argv[0]);
    if (!d && cli_wants_help(argc, argv)) {
        demo_help();
        return CLI_EXIT_OK;
    }
    if (!d)
        return cli_usage_error("unknown demo '%s' (try 'tapegrad demo --help')", argv[0]);
    if (cli_wants_help(argc - 1, argv + 1)) {
        d->help();
        return CLI_EXIT_OK;
    }
    return d->main(argc - 1, argv + 1);
}

/* ---- help ------------------------------------------------------------------------- */

static void usage_help(void) { cli_print_usage(stdout); }

/* `tapegrad help [COMMAND...]`: the help of a command, the same text as
 * `tapegrad COMMAND... --help`; an unknown topic, a word too many or an option
 * is misuse (exit 2, nothing on stdout). */
static int cmd_help(int argc, char **argv) {
    if (cli_wants_help(argc, argv) || argc == 0) {
        cli_print_usage(stdout);
        return CLI_EXIT_OK;
    }
    for (int i = 0; i < argc; i++)
        if (argv[i][0] == '-')
            return cli_usage_error("unknown option '%s' for 'help' (try 'tapegrad help')",
                                   argv[i]);
    const char *t = argv[0], *sub = argc > 1 ? argv[1] : NULL;
    void (*show)(void) = NULL;
    int used = 1;
    if (!strcmp(t, "help"))
        show = usage_help;
    else if (!strcmp(t, "version"))
        show = version_help;
    else if (!strcmp(t, "tour"))
        show = cli_tour_help;
    else if (!strcmp(t, "logprob"))
        show = cli_logprob_help;
    else if (!strcmp(t, "demo")) {
        const demo_entry *d = sub ? find_demo(sub) : NULL;
        if (sub && !d)
            return cli_usage_error("unknown demo '%s' (try 'tapegrad help demo')", sub);
        show = d ? d->help : demo_help;
        used += d != NULL;
    } else if (!strcmp(t, "bench")) {
        show = cli_bench_help;
        if (sub && argc == 2 && cli_bench_help_of(sub, NULL))
            show = NULL; /* a benchmark's own help, printed below */
        else if (sub)
            return cli_usage_error(argc > 2 ? "unexpected argument '%s' for 'tapegrad help bench'"
                                            : "unknown benchmark '%s' (try 'tapegrad help bench')",
                                   argc > 2 ? argv[2] : sub);
        used += sub != NULL;
    } else {
        return cli_usage_error("unknown help topic '%s' (try 'tapegrad help')", t);
    }
    if (argc > used)
        return cli_usage_error("unexpected argument '%s' for 'tapegrad help %s'", argv[used], t);
    if (show)
        show();
    else
        cli_bench_help_of(sub, stdout);
    return CLI_EXIT_OK;
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) /* misuse: one line, like every other (cli/cli.h) */
        return cli_usage_error("no command given: tapegrad tour|demo|bench|logprob|version|help "
                               "(try 'tapegrad --help')");
    const char *cmd = argv[1];
    int rest_n = argc - 2;
    char **rest = argv + 2;

    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        cli_print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "help"))
        return cmd_help(rest_n, rest);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version"))
        return cmd_version(rest_n, rest);
    if (!strcmp(cmd, "tour"))
        return cli_tour(rest_n, rest);
    if (!strcmp(cmd, "demo"))
        return cmd_demo(rest_n, rest);
    if (!strcmp(cmd, "logprob"))
        return cli_logprob_main(rest_n, rest);
    if (!strcmp(cmd, "bench"))
        return cli_bench(rest_n, rest);
    if (cmd[0] == '-')
        return cli_usage_error("unknown option '%s' (try 'tapegrad --help')", cmd);
    return cli_usage_error("unknown command '%s' (try 'tapegrad --help')", cmd);
}

int main(int argc, char **argv) {
    int rc = dispatch(argc, argv);
    /* what went to stdout must have reached it: a full disk or a closed pipe is
     * a failure, not a silent success */
    errno = 0;
    bool flushed = fflush(stdout) == 0;
    int err = errno;
    if (!flushed || ferror(stdout)) {
        fprintf(stderr, "tapegrad: cannot write to standard output: %s\n",
                !flushed && err ? strerror(err) : "write error");
        if (rc == CLI_EXIT_OK)
            rc = CLI_EXIT_FAIL;
    }
    return rc;
}
