/* tests/mpi/mpi_check.h - what the MPI test programs share: the rank, the
 * size and CHECK, which prints a failed check with the rank and counts it
 * (the programs exit 1 when any failed). Plain C: Criterion forks each
 * test, which MPI does not allow. */
#ifndef TG_MPI_CHECK_H
#define TG_MPI_CHECK_H

#include <stdio.h>

static int g_rank, g_size, g_failed, g_checks;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        g_checks++;                                                                       \
        if (!(cond)) {                                                                    \
            g_failed++;                                                                   \
            fprintf(stderr, "[rank %d/%d] %s:%d: CHECK failed: %s: ", g_rank, g_size,     \
                    __FILE__, __LINE__, #cond);                                           \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
        }                                                                                 \
    } while (0)

#endif
