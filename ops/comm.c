/* ops/comm.c - tg_comm: a communicator over MPI or NCCL (the collectives
 * are kernels/cpu/comm_mpi.c and kernels/cuda/comm_nccl.c), the counters of
 * what went through it, and the two exchanges the vocab-parallel ops build
 * on: a host-staged all-gather and the agreement step that makes a bad input
 * on one rank fail the call on every rank instead of leaving the others
 * waiting in a collective. */
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

struct tg_comm {
    const tg__comm_impl *impl;
    void *handle;
    int rank, size;
    uint64_t collectives, bytes_sent;
    tg__agree *agreed; /* (size) the last agreement's entries: allocated with the
                        * communicator, so that an agreement never needs memory */
};

bool tg_comm_available(tg_comm_kind kind) {
    return kind == TG_COMM_MPI ? tg__comm_mpi.compiled_in
                               : kind == TG_COMM_NCCL && tg__comm_nccl.compiled_in;
}

static tg_status make(const tg__comm_impl *impl, const void *a0, void *a1, tg_comm **out) {
    const char *kind = impl == &tg__comm_mpi ? "mpi" : "nccl";
    tg_comm *c = tg__xcalloc(1, sizeof *c);
    if (!c) return tg__set_error(TG_ERR_NOMEM, "tg_comm_from_%s: out of memory", kind);
    c->impl = impl;
    tg_status st = impl->create(a0, a1, &c->handle, &c->rank, &c->size);
    if (st != TG_OK) {
        free(c);
        return tg__set_error(st, "tg_comm_from_%s: %s", kind, tg_last_error());
    }
    if (!(c->agreed = tg__xcalloc((size_t)c->size, sizeof *c->agreed))) {
        st = tg__set_error(TG_ERR_NOMEM, "tg_comm_from_%s: out of memory for the agreement of "
                           "%d ranks", kind, c->size);
        impl->destroy(c->handle);
        free(c);
        return st;
    }
    *out = c;
    return TG_OK;
}

tg_status tg_comm_from_mpi(const void *mpi_comm, tg_comm **out) {
    if (out) *out = NULL;
    if (tg__null_arg(mpi_comm, "tg_comm_from_mpi", "mpi_comm") ||
        tg__null_arg(out, "tg_comm_from_mpi", "out"))
        return tg_last_status();
    return make(&tg__comm_mpi, mpi_comm, NULL, out);
}

tg_status tg_comm_from_nccl(void *nccl_comm, void *stream, tg_comm **out) {
    if (out) *out = NULL;
    if (tg__null_arg(nccl_comm, "tg_comm_from_nccl", "nccl_comm") ||
        tg__null_arg(out, "tg_comm_from_nccl", "out"))
        return tg_last_status();
    return make(&tg__comm_nccl, nccl_comm, stream, out);
}

tg_status tg_comm_free(tg_comm *c) {
    if (!c) return TG_OK;
    tg_status st = c->impl->destroy(c->handle);
    free(c->agreed);
    free(c);
    return st;
}

int tg_comm_rank(const tg_comm *c) { return c ? c->rank : -1; }
int tg_comm_size(const tg_comm *c) { return c ? c->size : -1; }
tg_device tg_comm_device(const tg_comm *c) { return c ? (tg_device)c->impl->device : TG_CPU; }

tg_status tg_comm_counters(const tg_comm *c, uint64_t *collectives, uint64_t *bytes_sent) {
    if (tg__null_arg(c, "tg_comm_counters", "c")) return tg_last_status();
    if (collectives) *collectives = c->collectives;
    if (bytes_sent) *bytes_sent = c->bytes_sent;
    return TG_OK;
}

/* ---- what the ops use -------------------------------------------------------- */

tg_status tg__comm_allgather_host(tg_comm *c, const char *who, const void *send, void *recv,
                                  size_t bytes) {
    c->collectives++;
    c->bytes_sent += bytes;
    const tg_device dev = (tg_device)c->impl->device;
    tg_status st;
    if (dev == TG_CPU) {
        st = c->impl->allgather(c->handle, send, recv, bytes);
    } else { /* through device buffers (counted workspace) */
        const tg__backend *be = tg__backend_of(dev);
        const size_t all = bytes * (size_t)c->size;
        void *ds = tg__alloc(dev, bytes, TG_MEM_WORKSPACE);
        void *dr = ds ? tg__alloc(dev, all, TG_MEM_WORKSPACE) : NULL;
        st = dr ? be->copy_h2d(ds, send, bytes) : tg_last_status();
        if (st == TG_OK) st = c->impl->allgather(c->handle, ds, dr, bytes);
        if (st == TG_OK) st = be->copy_d2h(recv, dr, all);
        if (dr) tg__free(dev, dr, all, TG_MEM_WORKSPACE);
        if (ds) tg__free(dev, ds, bytes, TG_MEM_WORKSPACE);
    }
    if (st != TG_OK && st != TG_ERR_NOMEM)
        return tg__set_error(TG_ERR_COMM, "%s: rank %d: %s", who, c->rank, tg_last_error());
    return st;
}

tg_status tg__comm_allreduce_sum(tg_comm *c, const char *who, tg_tensor *t) {
    const size_t n = (size_t)tg__k_numel(t->ndim, t->shape);
    c->collectives++;
    c->bytes_sent += n * tg_dtype_size(t->dtype);
    if (t->storage->device != (tg_device)c->impl->device)
        return tg__set_error(TG_ERR_DEVICE, "%s: the tensors are on %s but the communicator "
                             "(%s) serves %s", who, tg__device_name(t->storage->device),
                             c->impl->name, tg__device_name((tg_device)c->impl->device));
    tg_status st = c->impl->allreduce_sum(c->handle, tg__ptr(t), n, (int)t->dtype);
    if (st != TG_OK)
        return tg__set_error(TG_ERR_COMM, "%s: rank %d: %s", who, c->rank, tg_last_error());
    return TG_OK;
}

tg_status tg__comm_agree(tg_comm *c, const char *who, tg__agree *mine,
                         const tg__agree **agreed) {
    tg__agree *all = c->agreed;
    *agreed = all;
    tg_status st = tg__comm_allgather_host(c, who, mine, all, sizeof *mine);
    if (st != TG_OK) return st;
    for (int r = 0; r < c->size; r++) {
        if (all[r].status == TG_OK) continue;
        all[r].msg[sizeof all[r].msg - 1] = '\0';
        return tg__set_error((tg_status)all[r].status, "%s: rank %d: %s", who, r, all[r].msg);
    }
    return TG_OK;
}

void tg__agree_fail(tg__agree *a, const char *who, tg_status st) {
    a->status = (int32_t)st;
    const char *m = tg_last_error();
    const size_t w = strlen(who);
    if (!strncmp(m, who, w) && m[w] == ':' && m[w + 1] == ' ') m += w + 2; /* said once */
    size_t n = strlen(m);
    if (n >= sizeof a->msg) n = sizeof a->msg - 1;
    memcpy(a->msg, m, n);
    a->msg[n] = '\0';
}
