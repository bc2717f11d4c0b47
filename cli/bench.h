/* cli/bench.h - the `tapegrad bench` command.
 *
 * Contract:
 *  - cli_bench(argc, argv) gets the arguments after "bench": argv[0] names
 *    the benchmark ("logprob"), the rest are its options. Returns
 *    CLI_EXIT_OK, CLI_EXIT_FAIL (a configuration failed in the library) or
 *    CLI_EXIT_USAGE (one line on stderr: unknown benchmark, bad option).
 *  - Results go to stdout (a table, or JSON lines with --json), the measured
 *    machine bandwidth with them; progress goes to stderr only when it is a
 *    terminal (cli/common.h).
 */
#ifndef TAPEGRAD_CLI_BENCH_H
#define TAPEGRAD_CLI_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#include "options.h"

/* `tapegrad bench NAME [options]`. */
int cli_bench(int argc, char **argv);

/* Prints the list of benchmarks (`tapegrad bench --help`) to stdout. */
void cli_bench_help(void);

/* `tapegrad bench logprob [options]` (cli/bench_logprob.c); argv holds the
 * options only. */
int cli_bench_logprob(int argc, char **argv);

/* Prints the help of `tapegrad bench logprob` to f. */
void cli_bench_logprob_help(FILE *f);

/* The options of each benchmark (cli/options.h). */
extern const cli_command cli_bench_logprob_command, cli_bench_threads_command,
    cli_bench_linear_command, cli_bench_vp_command;

/* Prints the help of the benchmark `name` on f (f NULL: prints nothing);
 * false when there is no benchmark of that name. */
bool cli_bench_help_of(const char *name, FILE *f);

/* `tapegrad bench threads [options]` (cli/bench_threads.c): OpenMP kernels and
 * BLAS GEMMs in turn, and whether their thread pools compete. */
int cli_bench_threads(int argc, char **argv);
void cli_bench_threads_help(FILE *f);

/* `tapegrad bench linear-logprob [options]` (cli/bench_linear.c): the logits
 * made against the fused linear op that never makes them. */
int cli_bench_linear(int argc, char **argv);
void cli_bench_linear_help(FILE *f);

/* `mpirun -np P tapegrad bench vocab-parallel [options]` (cli/bench_vp.c): the
 * vocab-parallel op across MPI ranks. */
int cli_bench_vp(int argc, char **argv);
void cli_bench_vp_help(FILE *f);

#endif
