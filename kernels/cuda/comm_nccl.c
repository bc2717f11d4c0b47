/* kernels/cuda/comm_nccl.c - the NCCL collectives behind tg_comm (device
 * buffers of the current device). Collectives are queued on the stream the
 * program gave, after the library's own kernels have finished, and waited
 * for, so their results are ready when an entry returns. Built without NCCL
 * (TG_HAVE_NCCL undefined) every entry answers TG_ERR_COMM.
 *
 * The library does not link NCCL: the communicator comes from the program,
 * so the NCCL that made it is already in the process (PyTorch's own copy,
 * say), and the collectives must be that library's. Its five functions are
 * looked up at the first communicator (dlopen of libnccl.so.2 with
 * RTLD_NOLOAD: the copy already loaded; else the one the loader finds). A
 * link-time dependency would load the toolkit's NCCL into every process
 * using tapegrad, and a newer NCCL loaded later under the same soname (a
 * PyTorch wheel's) would then fail to import. */
#include "../kernel.h"

#ifdef TG_HAVE_NCCL
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

typedef struct nccl_handle {
    ncclComm_t comm;
    cudaStream_t stream;
} nccl_handle;

/* The NCCL functions used, from the library found at the first communicator. */
static struct {
    ncclResult_t (*comm_user_rank)(const ncclComm_t, int *);
    ncclResult_t (*comm_count)(const ncclComm_t, int *);
    ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                               cudaStream_t);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               ncclComm_t, cudaStream_t);
    const char *(*error_string)(ncclResult_t);
    char why[256];   /* "" when loaded */
} g_nccl;
static pthread_once_t g_nccl_once = PTHREAD_ONCE_INIT;

static void *nccl_symbol(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p && !g_nccl.why[0]) snprintf(g_nccl.why, sizeof g_nccl.why, "%s has no %s",
                                       "libnccl.so.2", name);
    return p;
}

static void load_nccl(void) {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(g_nccl.why, sizeof g_nccl.why, "%s", e ? e : "libnccl.so.2 not found");
        return;
    }
    /* object pointers to function pointers: the same bits (POSIX's dlsym contract) */
    void *f[5] = {nccl_symbol(lib, "ncclCommUserRank"), nccl_symbol(lib, "ncclCommCount"),
                  nccl_symbol(lib, "ncclAllGather"), nccl_symbol(lib, "ncclAllReduce"),
                  nccl_symbol(lib, "ncclGetErrorString")};
    if (g_nccl.why[0]) return;
    memcpy(&g_nccl.comm_user_rank, &f[0], sizeof f[0]);
    memcpy(&g_nccl.comm_count, &f[1], sizeof f[1]);
    memcpy(&g_nccl.all_gather, &f[2], sizeof f[2]);
    memcpy(&g_nccl.all_reduce, &f[3], sizeof f[3]);
    memcpy(&g_nccl.error_string, &f[4], sizeof f[4]);
}

static tg_status nccl_fail(const char *call, ncclResult_t rc) {
    return tg__k_fail(TG_ERR_COMM, "%s failed: %s", call, g_nccl.error_string(rc));
}

static tg_status cuda_fail(const char *call, cudaError_t e) {
    return tg__k_fail(TG_ERR_COMM, "%s failed: %s", call, cudaGetErrorString(e));
}

static tg_status create(const void *arg0, void *arg1, void **handle, int *rank, int *size) {
    pthread_once(&g_nccl_once, load_nccl);
    if (g_nccl.why[0])
        return tg__k_fail(TG_ERR_COMM, "NCCL could not be loaded: %s", g_nccl.why);
    nccl_handle *h = malloc(sizeof *h);
    if (!h) return tg__k_fail(TG_ERR_NOMEM, "out of memory making a communicator");
    h->comm = (ncclComm_t)arg0;
    h->stream = (cudaStream_t)arg1;
    ncclResult_t rc = g_nccl.comm_user_rank(h->comm, rank);
    if (rc == ncclSuccess) rc = g_nccl.comm_count(h->comm, size);
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
    NCCL_RUN("ncclAllGather", g_nccl.all_gather(send, recv, bytes, ncclUint8, h->comm, h->stream));
    return TG_OK;
}

static tg_status allreduce_sum(void *handle, void *buf, size_t count, int dtype) {
    nccl_handle *h = handle;
    NCCL_RUN("ncclAllReduce", g_nccl.all_reduce(buf, buf, count,
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
