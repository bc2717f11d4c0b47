/* cli/main.c - the `tapegrad` command: argument dispatch, help, version.
 *
 * Contract:
 *   tapegrad help | --help | -h      usage on stdout, exit 0
 *   tapegrad version | --version     library version and backends, exit 0
 *   tapegrad tour [--list | SECTION] every tour section in order (or one),
 *                                    exit 0 when all succeed, 1 otherwise
 *                                    (see cli/tour.c)
 *   tapegrad demo inplace [options]  one demo (see cli_inplace_help)
 *   tapegrad demo entropy [options]  one demo (see cli_entropy_help)
 *   tapegrad demo chunk [options]    one demo (see cli_chunk_help)
 *   tapegrad demo leak [options]     one demo (see cli_leak_help)
 *   tapegrad logprob [options]       .npy in, .npy out (see cli/cmd_logprob.c)
 *   tapegrad bench NAME [options]    a benchmark (see cli/bench.c); exit 0, 1
 *                                    when a configuration fails, 2 on misuse
 *   anything else                    one line on stderr, exit 2:
 *     tapegrad: unknown command 'x' (try 'tapegrad --help')
 * No arguments: usage on stderr, exit 2. Output is plain text.
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

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fputs("tapegrad: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
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

void cli_heading(const char *title) {
    size_t n = strlen(title);
    printf("\n%s\n", title);
    for (size_t i = 0; i < n; i++)
        putchar('=');
    putchar('\n');
}

/* ---- help and version ---------------------------------------------------------- */

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
            "  tapegrad bench logprob [opts]  fused vs composite log-prob/entropy: time,\n"
            "                                 exact memory, bandwidth roofline\n"
            "  tapegrad logprob [opts]        log-probs, entropies and their gradient\n"
            "                                 for .npy logits, written as .npy files\n"
            "  tapegrad version               library version and compiled backends\n"
            "  tapegrad help                  this text (also --help, -h)\n"
            "\n"
            "Options of 'demo inplace' (see 'tapegrad demo inplace --help'):\n"
            "  --rows N    rows of the logits (default 4)\n"
            "  --vocab V   columns, the vocabulary size (default 6)\n"
            "  --seed S    seed of the random logits (default 42)\n"
            "\n"
            "Options of 'demo entropy' (see 'tapegrad demo entropy --help'):\n"
            "  --seq N --vocab V  f32 logits (default 1024 x 32000)\n"
            "  --reps R --seed S --json\n"
            "\n"
            "Options of 'demo chunk' (see 'tapegrad demo chunk --help'):\n"
            "  --seq N,... --vocab V --chunk C,...   (default 256,1024 x 32000, 0,128,512)\n"
            "  --reps R --entropy-grad on|off --seed S --json\n"
            "\n"
            "Options of 'demo leak' (see 'tapegrad demo leak --help'):\n"
            "  --microbatches K   microbatches (default 8)\n"
            "  --seq N --vocab V  logits of each microbatch (default 512 x 8192, f32)\n"
            "  --detach           keep tg_detach(loss): the fix\n"
            "  --log-entropy-with-grad   also keep an entropy recorded with its gradient\n"
            "  --json             one JSON object per microbatch, then the report\n"
            "\n"
            "Options of 'bench logprob' (see 'tapegrad bench logprob --help'):\n"
            "  --seq N,... --vocab V,... --chunk C,... --impl fused,composite\n"
            "  --entropy-grad on,off --threads T --reps R --dtype f32|f64 --json\n"
            "\n"
            "Every demo and 'bench logprob' also take:\n" CLI_OUTPUTS_HELP
            "\n"
            "Options of 'logprob' (see 'tapegrad logprob --help'):\n"
            "  --logits L.npy --targets T.npy --out DIR   required\n"
            "  --grad-logprob G.npy --grad-entropy H.npy  upstream gradients\n"
            "  --temperature T --ignore-index I --chunk C --impl fused|composite\n"
            "\n"
            "Exit status: 0 success, 1 a demo, check or command failed, 2 bad usage.\n",
            tg_lib_version());
}

static int cmd_version(int argc, char **argv) {
    if (argc > 0)
        return cli_usage_error("unknown option '%s' for 'version' (try 'tapegrad --help')",
                               argv[0]);
    printf("tapegrad %s\n", tg_lib_version());
    printf("backends: %s\n", tg_build_backends());
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

static bool wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

static int cmd_demo(int argc, char **argv) {
    if (argc == 0)
        return cli_usage_error("'demo' needs a name: tapegrad demo inplace|entropy|chunk|leak");
    if (strcmp(argv[0], "entropy") == 0) {
        cli_entropy_opts o = cli_entropy_defaults();
        if (wants_help(argc, argv)) {
            cli_entropy_help();
            return CLI_EXIT_OK;
        }
        int rc = cli_entropy_parse(argc - 1, argv + 1, &o);
        return rc != CLI_EXIT_OK ? rc : cli_entropy_run(&o);
    }
    if (strcmp(argv[0], "chunk") == 0) {
        cli_chunk_opts o = cli_chunk_defaults();
        if (wants_help(argc, argv)) {
            cli_chunk_help();
            return CLI_EXIT_OK;
        }
        int rc = cli_chunk_parse(argc - 1, argv + 1, &o);
        return rc != CLI_EXIT_OK ? rc : cli_chunk_run(&o);
    }
    if (strcmp(argv[0], "inplace") == 0) {
        cli_inplace_opts o = cli_inplace_defaults();
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                cli_inplace_help();
                return CLI_EXIT_OK;
            }
        int rc = cli_inplace_parse(argc - 1, argv + 1, &o);
        return rc != CLI_EXIT_OK ? rc : cli_inplace_run(&o);
    }
    if (strcmp(argv[0], "leak") == 0) {
        cli_leak_opts o = cli_leak_defaults();
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                cli_leak_help();
                return CLI_EXIT_OK;
            }
        int rc = cli_leak_parse(argc - 1, argv + 1, &o);
        return rc != CLI_EXIT_OK ? rc : cli_leak_run(&o);
    }
    return cli_usage_error("unknown demo '%s' (try 'tapegrad --help')", argv[0]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        cli_print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    int rest_n = argc - 2;
    char **rest = argv + 2;

    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        cli_print_usage(stdout);
        return CLI_EXIT_OK;
    }
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
