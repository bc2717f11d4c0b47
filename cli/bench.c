/* cli/bench.c - `tapegrad bench NAME [options]`: picks the benchmark.
 *
 * Contract:
 *   tapegrad bench --help | -h | help   the list of benchmarks, exit 0 (also
 *                                       with --help after an unknown name)
 *   tapegrad bench logprob [options]    see cli/bench_logprob.c
 *   tapegrad bench threads [options]    see cli/bench_threads.c
 *   tapegrad bench linear-logprob [...] see cli/bench_linear.c
 *   tapegrad bench vocab-parallel [...] see cli/bench_vp.c
 *   tapegrad bench                      one line on stderr, exit 2
 *   tapegrad bench NOSUCH               one line on stderr, exit 2
 * Each benchmark parses its own options and owns its output.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

typedef struct bench_entry {
    const char *name;
    const char *what;
    int (*run)(int argc, char **argv);
    void (*help)(FILE *f);
} bench_entry;

/* New benchmarks are appended here. */
static const bench_entry BENCHES[] = {
    {"logprob", "fused vs composite log-prob/entropy: time, exact memory, roofline",
     cli_bench_logprob, cli_bench_logprob_help},
    {"threads", "does a GEMM-heavy step oversubscribe the cores (OpenMP vs BLAS threads)",
     cli_bench_threads, cli_bench_threads_help},
    {"linear-logprob", "log-prob/entropy from hidden states: logits made vs never made",
     cli_bench_linear, cli_bench_linear_help},
    {"vocab-parallel", "the vocab-parallel op across MPI ranks (run under mpirun)",
     cli_bench_vp, cli_bench_vp_help},
};
#define BENCH_N ((int)(sizeof BENCHES / sizeof BENCHES[0]))

void cli_bench_help(void) {
    printf("Usage: tapegrad bench NAME [options]\n\nBenchmarks:\n");
    for (int i = 0; i < BENCH_N; i++)
        printf("  %-15s %s\n", BENCHES[i].name, BENCHES[i].what);
    printf("\n'tapegrad bench NAME --help' lists a benchmark's options.\n");
    printf("Exit status: 0 success, 1 a configuration failed, 2 bad usage.\n");
}

bool cli_bench_help_of(const char *name, FILE *f) {
    for (int i = 0; i < BENCH_N; i++)
        if (!strcmp(name, BENCHES[i].name)) {
            if (f)
                BENCHES[i].help(f);
            return true;
        }
    return false;
}

int cli_bench(int argc, char **argv) {
    if (argc == 0)
        return cli_usage_error("'bench' needs a name: tapegrad bench logprob "
                               "(try 'tapegrad bench --help')");
    const char *name = argv[0];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        cli_bench_help();
        return CLI_EXIT_OK;
    }
    for (int i = 0; i < BENCH_N; i++)
        if (!strcmp(name, BENCHES[i].name))
            return BENCHES[i].run(argc - 1, argv + 1);
    if (cli_wants_help(argc, argv)) { /* help wins over an unknown name (cli/cli.h) */
        cli_bench_help();
        return CLI_EXIT_OK;
    }
    return cli_usage_error("unknown benchmark '%s' (try 'tapegrad bench --help')", name);
}
