/* kernels/cuda/comm_nccl.c - the NCCL collectives behind tg_comm (device
 * buffers of the current device). Collectives are queued on the stream the
 * program gave, after the library's own kernels have finished, and waited
 * for, so their results are ready when an entry returns. Built without NCCL
 * (TG_HAVE_NCCL undefined) every entry answers TG_ERR_COMM. */
#include "../kernel.h"

#ifdef TG_HAVE_NCCL
#include <cuda_runtime.h>
#include <stdlib.h>
/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

typedef struct nccl_handle {
    ncclComm_t comm;
    cudaStream_t stream;
} nccl_handle;

static tg_status nccl_fail(const char *call, ncclResult_t rc) {
    return tg__k_fail(TG_ERR_COMM, "%s failed: %s", call, ncclGetErrorString(rc));
}

static tg_status cuda_fail(const char *call, cudaError_t e) {
    return tg__k_fail(TG_ERR_COMM, "%s failed: %s", call, cudaGetErrorString(e));
}

static tg_status create(const void *arg0, void *arg1, void **handle, int *rank, int *size) {
    nccl_handle *h = malloc(sizeof *h);
    if (!h) return tg__k_fail(TG_ERR_NOMEM, "out of memory making a communicator");
    h->comm = (ncclComm_t)arg0;
    h->stream = (cudaStream_t)arg1;
    ncclResult_t rc = ncclCommUserRank(h->comm, rank);
    if (rc == ncclSuccess) rc = ncclCommCount(h->comm, size);
    if (rc != ncclSuccess) {
        free(h);
        return nccl_fail("ncclCommUserRank/ncclCommCount", rc);
    }
    *handle = h;
    return TG_OK;
}

static tg_status destroy(void *handle) {
    free(handle); /* the program owns the NCCL communicator */
    return TG_OK;
}

/* Waits for the library's kernels, runs the collective, waits for it. */
#define NCCL_RUN(call_name, expr)                                                          \
    do {                                                                                   \
        cudaError_t e_ = cudaDeviceSynchronize();                                          \
        if (e_ != cudaSuccess) return cuda_fail("cudaDeviceSynchronize", e_);              \
        ncclResult_t r_ = (expr);                                                          \
        if (r_ != ncclSuccess) return nccl_fail(call_name, r_);                            \
        e_ = cudaStreamSynchronize(h->stream);                                             \
        if (e_ != cudaSuccess) return cuda_fail("cudaStreamSynchronize", e_);              \
    } while (0)

static tg_status allgather(void *handle, const void *send, void *recv, size_t bytes) {
    nccl_handle *h = handle;
    NCCL_RUN("ncclAllGather", ncclAllGather(send, recv, bytes, ncclUint8, h->comm, h->stream));
    return TG_OK;
}

static tg_status allreduce_sum(void *handle, void *buf, size_t count, int dtype) {
    nccl_handle *h = handle;
    NCCL_RUN("ncclAllReduce", ncclAllReduce(buf, buf, count,
                                            dtype == TG_F32 ? ncclFloat : ncclDouble, ncclSum,
                                            h->comm, h->stream));
    return TG_OK;
}

const tg__comm_impl tg__comm_nccl = {"NCCL", true, TG_CUDA, create, destroy, allgather,
                                     allreduce_sum};

#else /* no NCCL in this build */

TG__COMM_STUB(tg__comm_nccl, "NCCL", TG_CUDA,
              "this build of tapegrad has no NCCL (it is found with the CUDA toolkit: "
              "configure with TG_NCCL=ON where it is installed)");
#endif
