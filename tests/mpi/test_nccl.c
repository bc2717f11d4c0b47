/* tests/mpi/test_nccl.c - the vocab-parallel ops over NCCL on CUDA tensors,
 * run by tests/mpi/run.sh under mpirun (MPI only carries NCCL's unique id).
 *
 * Each rank takes GPU (rank % devices); NCCL needs a GPU of its own per rank
 * of a communicator, so the script runs it with as many ranks as there are
 * GPUs (one rank on a one-GPU machine: a communicator of one still goes
 * through every NCCL call). Without a CUDA device it prints SKIPPED and
 * exits 0. Checks, per rank: the logits op and the fused linear op on the
 * device against the single-process op on the CPU (f64: 1e-12), outputs
 * bitwise the same on every rank, and a bad input on one rank failing every
 * rank. Exit status 1 if a check failed. */
#include <cuda_runtime.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "tapegrad.h"

#include "mpi_check.h"

static double rel_err(const tg_tensor *a, const tg_tensor *b) {
    int64_t n = tg_numel(b);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    tg_copy_out(a, TG_F64, x, (size_t)n * sizeof *x);
    tg_copy_out(b, TG_F64, y, (size_t)n * sizeof *y);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(y[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(x[i] - y[i]) / (scale > 0 ? scale : 1));
    free(x);
    free(y);
    return worst;
}

static void slice_of(int64_t V, int rank, int P, int64_t *start, int64_t *len) {
    *start = 0;
    *len = V / P + (rank < V % P);
    for (int r = 0; r < rank; r++) *start += V / P + (r < V % P);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int skip = tg_cuda_device_count() == 0;
    MPI_Allreduce(MPI_IN_PLACE, &skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (skip) {
        if (g_rank == 0) printf("test_nccl: SKIPPED: no CUDA device: %s\n", tg_cuda_unavailable_reason());
        MPI_Finalize();
        return 0;
    }
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    cudaSetDevice(g_rank % (ndev > 0 ? ndev : 1));
    ncclUniqueId id;
    if (g_rank == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t nc;
    if (ncclCommInitRank(&nc, g_size, id, g_rank) != ncclSuccess) {
        fprintf(stderr, "[rank %d] ncclCommInitRank failed\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    tg_comm *comm = NULL;
    CHECK(tg_comm_from_nccl(nc, NULL, &comm) == TG_OK, "%s", tg_last_error());
    CHECK(tg_comm_device(comm) == TG_CUDA && tg_comm_rank(comm) == g_rank, "device/rank");
    int sc = tg_scope_begin();
    const int64_t N = 33, V = 301, D = 8;
    int64_t start, len;
    slice_of(V, g_rank, g_size, &start, &len);
    /* the logits op */
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(N, V), 3, 0.0, 2.0);
    tg_tensor *y = tg_randint(TG_SHAPE(N), 4, 0, V);
    tg_tensor *lp1, *H1, *lp, *H;
    CHECK(tg_logprob_entropy(z, y, NULL, &lp1, &H1) == TG_OK, "%s", tg_last_error());
    tg_tensor *zd = tg_to_device(tg_contiguous(tg_narrow(z, 1, start, len)), TG_CUDA);
    tg_tensor *yd = tg_to_device(y, TG_CUDA);
    tg_logprob_opts o = tg_logprob_opts_default();
    o.comm = comm;
    o.vocab_start = start;
    CHECK(tg_logprob_entropy(zd, yd, &o, &lp, &H) == TG_OK, "%s", tg_last_error());
    if (lp) {
        CHECK(rel_err(lp, lp1) <= 1e-12 && rel_err(H, H1) <= 1e-12, "logits op: %g %g",
              rel_err(lp, lp1), rel_err(H, H1));
    }
    /* the fused linear op, with d hidden summed by NCCL */
    tg_tensor *h = tg_randn(TG_F64, TG_SHAPE(N, D), 5, 0.0, 1.0);
    tg_tensor *w = tg_randn(TG_F64, TG_SHAPE(V, D), 6, 0.0, 0.5);
    tg_set_requires_grad(h, true);
    tg_tensor *hd = tg_to_device(tg_detach(h), TG_CUDA);
    tg_tensor *wd = tg_to_device(tg_contiguous(tg_narrow(w, 0, start, len)), TG_CUDA);
    tg_set_requires_grad(hd, true);
    tg_linear_logprob_opts lo = tg_linear_logprob_opts_default();
    tg_tensor *llp1, *lH1, *llp, *lH;
    CHECK(tg_linear_logprob_entropy(h, w, NULL, y, &lo, &llp1, &lH1, NULL) == TG_OK, "%s",
          tg_last_error());
    lo.comm = comm;
    lo.vocab_start = start;
    CHECK(tg_linear_logprob_entropy(hd, wd, NULL, yd, &lo, &llp, &lH, NULL) == TG_OK, "%s",
          tg_last_error());
    if (llp) {
        CHECK(rel_err(llp, llp1) <= 1e-12, "linear op: %g", rel_err(llp, llp1));
        CHECK(tg_backward(tg_sum(llp), NULL, false) == TG_OK, "%s", tg_last_error());
        CHECK(tg_backward(tg_sum(llp1), NULL, false) == TG_OK, "%s", tg_last_error());
        CHECK(rel_err(tg_grad(hd), tg_grad(h)) <= 1e-11, "d hidden %g",
              rel_err(tg_grad(hd), tg_grad(h)));
    }
    /* a NaN on the last rank fails every rank */
    tg_tensor *zb = tg_clone(zd);
    if (g_rank == g_size - 1) {
        double nan = NAN;
        cudaMemcpy(tg_data(zb), &nan, sizeof nan, cudaMemcpyHostToDevice);
    }
    tg_clear_error();
    CHECK(tg_logprob_entropy(zb, yd, &o, &lp, &H) == TG_ERR_VALUE, "bad: %s", tg_last_error());
    char r[32];
    snprintf(r, sizeof r, "rank %d", g_size - 1);
    CHECK(strstr(tg_last_error(), r) != NULL, "bad: %s", tg_last_error());
    tg_clear_error();
    tg_scope_end(sc);
    tg_comm_free(comm);
    ncclCommDestroy(nc);
    int failed = 0;
    MPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) printf("test_nccl: %d ranks, %d failed checks\n", g_size, failed);
    MPI_Finalize();
    return g_failed ? 1 : 0;
}
