/* cli/bench_threads.c - `tapegrad bench threads`: does a GEMM-heavy step
 * oversubscribe the cores? The library's kernels run on OpenMP threads and its
 * matmul on OpenBLAS's. OpenBLAS's OpenMP build shares that pool; its pthread
 * build has a pool of its own, and after each kernel OpenMP's threads
 * spin-wait on the cores the GEMM then needs. The bench times, f32, medians:
 *   elementwise  tg_exp over a (4096, 1024) tensor (an OpenMP kernel)
 *   gemm         tg_matmul of two (N, N) tensors (OpenBLAS)
 *   step         the two in turn, as a training step has them
 * and reports step / (elementwise + gemm): about 1 when the pools do not
 * compete (target <= 1.15), more when they do. It also names the BLAS
 * library's build (openblas_get_config) and its threading (OpenMP, pthreads or
 * sequential, openblas_get_parallel).
 *
 * Usage: tapegrad bench threads [--threads T] [--reps R] [--size N] [--json]
 *   threads: OpenMP threads (default: omp_get_max_threads()), also OpenBLAS's
 *   when it is the OpenMP build; reps: repetitions of 20 iterations, median
 *   kept (default 7); size: N (default 768).
 * Exit status: 0, 1 when the library fails, 2 bad usage. */
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli.h"
#include "common.h"

#include <tapegrad.h>

/* OpenBLAS's own entry points (the library links OpenBLAS). */
extern int openblas_get_parallel(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int n);

#define TH_ITERS 20

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ms per iteration (median over reps) of: 0 exp, 1 gemm, 2 both; -1 on failure. */
static double time_kind(int kind, int64_t reps, tg_tensor *big, tg_tensor *a, tg_tensor *b) {
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) return -1.0;
    for (int64_t r = -1; r < reps; r++) { /* r = -1: a warm-up */
        double t0 = now_ms();
        for (int k = 0; k < TH_ITERS; k++) {
            int sc = tg_scope_begin();
            bool ok = true;
            if (kind != 1) ok = tg_exp(big) != NULL;
            if (ok && kind != 0) ok = tg_matmul(a, b) != NULL;
            tg_scope_end(sc);
            if (!ok) {
                free(t);
                return -1.0;
            }
        }
        if (r >= 0) t[r] = (now_ms() - t0) / TH_ITERS;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double m = t[reps / 2];
    free(t);
    return m;
}

static const char *threading(int p) {
    return p == 2 ? "OpenMP (shares the kernels' threads)"
                  : p == 1 ? "pthreads (a pool of its own)" : "sequential";
}

typedef struct th_opts {
    int64_t threads, reps, size;
    bool json;
} th_opts;

#define TH_STR(x) #x
#define TH_XSTR(x) TH_STR(x)

static const cli_opt TH_OPTS[] = {
    {.name = "--threads", CLI_INT(th_opts, threads, 1, 4096), .meta = "T",
     .help = "OpenMP threads"},
    {.name = "--reps", CLI_INT(th_opts, reps, 1, 10000), .meta = "R",
     .help = "repetitions of " TH_XSTR(TH_ITERS) " iterations, median kept"},
    {.name = "--size", CLI_INT(th_opts, size, 1, 8192), .help = "the GEMM's N"},
    {.name = "--json", CLI_FLAG(th_opts, json), .help = "one JSON object"},
};

const cli_command cli_bench_threads_command = {
    .name = "bench threads",
    .opts = TH_OPTS,
    .n_opts = CLI_N(TH_OPTS),
    .about = "Does a GEMM-heavy step oversubscribe the cores? Times an OpenMP kernel\n"
             "(tg_exp over 4096 x 1024), a BLAS GEMM (tg_matmul N x N) and the two in\n"
             "turn, and reports step / (kernel + gemm): about 1 when OpenBLAS shares the\n"
             "kernels' OpenMP threads (its OpenMP build), more when its own thread pool\n"
             "competes with OpenMP threads that spin-wait after each kernel.\n",
    .exit_status = "0 success, 1 the library failed, 2 bad usage.",
};

static th_opts th_defaults(void) {
    return (th_opts){.threads = omp_get_max_threads(), .reps = 7, .size = 768};
}

void cli_bench_threads_help(FILE *f) {
    th_opts d = th_defaults();
    cli_help(f, &cli_bench_threads_command, &d);
}

int cli_bench_threads(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        cli_bench_threads_help(stdout);
        return CLI_EXIT_OK;
    }
    th_opts o = th_defaults();
    int rc = cli_options_parse(&cli_bench_threads_command, argc, argv, &o, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    const int64_t threads = o.threads, reps = o.reps, n = o.size;
    const bool json = o.json;
    omp_set_num_threads((int)threads);
    int par = openblas_get_parallel();
    if (par == 1) openblas_set_num_threads((int)threads); /* its own pool: the same count */
    int sc = tg_scope_begin();
    tg_tensor *big = tg_randn(TG_F32, 2, (int64_t[]){4096, 1024}, 1, 0.0, 1.0);
    tg_tensor *a = tg_randn(TG_F32, 2, (int64_t[]){n, n}, 2, 0.0, 1.0);
    tg_tensor *b = tg_randn(TG_F32, 2, (int64_t[]){n, n}, 3, 0.0, 1.0);
    double t[3] = {-1, -1, -1};
    if (big && a && b)
        for (int k = 0; k < 3; k++)
            if ((t[k] = time_kind(k, reps, big, a, b)) < 0) break;
    tg_scope_end(sc);
    if (t[0] < 0 || t[1] < 0 || t[2] < 0) {
        fprintf(stderr, "tapegrad: bench threads: %s: %s\n", tg_status_name(tg_last_status()),
                tg_last_error());
        return CLI_EXIT_FAIL;
    }
    double ratio = t[2] / (t[0] + t[1]);
    const char *verdict = ratio <= 1.15 ? "meets" : "MISSES";
    const char *cfg = openblas_get_config();
    if (json) {
        cli_json j = cli_json_begin(stdout);
        cli_json_int(&j, "threads", threads);
        cli_json_int(&j, "size", n);
        cli_json_str(&j, "blas", cfg ? cfg : "");
        cli_json_str(&j, "blas_threading",
                     par == 2 ? "openmp" : par == 1 ? "pthreads" : "sequential");
        cli_json_num(&j, "elementwise_ms", "%.4f", t[0]);
        cli_json_num(&j, "gemm_ms", "%.4f", t[1]);
        cli_json_num(&j, "step_ms", "%.4f", t[2]);
        cli_json_num(&j, "ratio", "%.4f", ratio);
        cli_json_end(&j);
    } else {
        printf("tapegrad bench threads: %" PRId64 " threads, %" PRId64 " reps of %d (medians)\n",
               threads, reps, TH_ITERS);
        printf("BLAS: %s\nBLAS threading: %s\n", cfg ? cfg : "?", threading(par));
        printf("elementwise (exp 4096 x 1024)  %8.3f ms\n", t[0]);
        printf("gemm (%" PRId64 " x %" PRId64 ")%*s %8.3f ms\n", n, n,
               (int)(19 - 2 * snprintf(NULL, 0, "%" PRId64, n)), "", t[1]);
        printf("step (the two in turn)         %8.3f ms\n", t[2]);
        printf("ratio step / (elementwise + gemm) %.3f [<= 1.15] %s\n", ratio, verdict);
    }
    return CLI_EXIT_OK;
}
