/* kernels/cpu/comm_mpi.c - the MPI collectives behind tg_comm (host
 * buffers). The library works on a duplicate of the program's communicator
 * with MPI_ERRORS_RETURN, so a failing call is reported as TG_ERR_COMM
 * naming it instead of aborting the job. Built without MPI (TG_HAVE_MPI
 * undefined) every entry answers TG_ERR_COMM. */
#include "cpu.h"

#ifdef TG_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

static tg_status mpi_fail(const char *call, int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) n = 0;
    s[n] = '\0';
    return tg__k_fail(TG_ERR_COMM, "%s failed: %s", call, n ? s : "(no message)");
}

static tg_status create(const void *arg0, void *arg1, void **handle, int *rank, int *size) {
    (void)arg1;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return tg__k_fail(TG_ERR_COMM, "MPI is %s (the program calls MPI_Init before making "
                             "a communicator, and MPI_Finalize after freeing it)",
                             fin ? "finalized" : "not initialised");
    MPI_Comm *dup = malloc(sizeof *dup);
    if (!dup) return tg__k_fail(TG_ERR_NOMEM, "out of memory making a communicator");
    int rc = MPI_Comm_dup(*(const MPI_Comm *)arg0, dup);
    if (rc != MPI_SUCCESS) {
        free(dup);
        return mpi_fail("MPI_Comm_dup", rc);
    }
    if ((rc = MPI_Comm_set_errhandler(*dup, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(*dup, rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(*dup, size)) != MPI_SUCCESS) {
        MPI_Comm_free(dup);
        free(dup);
        return mpi_fail("MPI_Comm_set_errhandler/MPI_Comm_rank/MPI_Comm_size", rc);
    }
    *handle = dup;
    return TG_OK;
}

static tg_status destroy(void *handle) {
    MPI_Comm *c = handle;
    int rc = MPI_Comm_free(c);
    free(c);
    return rc == MPI_SUCCESS ? TG_OK : mpi_fail("MPI_Comm_free", rc);
}

static tg_status allgather(void *handle, const void *send, void *recv, size_t bytes) {
    if (bytes > INT_MAX)
        return tg__k_fail(TG_ERR_COMM, "MPI_Allgather: %zu bytes per rank is beyond MPI's "
                             "int count", bytes);
    int rc = MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE,
                           *(MPI_Comm *)handle);
    return rc == MPI_SUCCESS ? TG_OK : mpi_fail("MPI_Allgather", rc);
}

/* Summed in pieces of at most INT_MAX elements. Open MPI's algorithms combine
 * two partial sums with a commutative + (x + y and y + x are the same bits),
 * so every rank ends with the same bits; tests/mpi checks it. */
static tg_status allreduce_sum(void *handle, void *buf, size_t count, int dtype) {
    const MPI_Datatype t = dtype == TG_F32 ? MPI_FLOAT : MPI_DOUBLE;
    const size_t es = dtype == TG_F32 ? 4 : 8;
    for (size_t off = 0; off < count;) {
        const size_t n = count - off < (size_t)INT_MAX ? count - off : (size_t)INT_MAX;
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * es, (int)n, t, MPI_SUM,
                               *(MPI_Comm *)handle);
        if (rc != MPI_SUCCESS) return mpi_fail("MPI_Allreduce", rc);
        off += n;
    }
    return TG_OK;
}

const tg__comm_impl tg__comm_mpi = {"MPI", true, TG_CPU, create, destroy, allgather,
                                    allreduce_sum};

#else /* no MPI in this build */

TG__COMM_STUB(tg__comm_mpi, "MPI", TG_CPU,
              "this build of tapegrad has no MPI (configure with TG_MPI=ON where Open MPI is "
              "installed: scripts/setup-deps.sh)");
#endif
