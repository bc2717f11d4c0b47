/* ops/comm_internal.h - what the vocab-parallel ops build on (ops/comm.c):
 * the host-staged all-gather, the all-reduce and the agreement step that
 * makes a bad input on one rank fail the call on every rank. Included by the
 * ops that make collectives; the engine (tape/) knows nothing of them. */
#ifndef TG_OPS_COMM_INTERNAL_H
#define TG_OPS_COMM_INTERNAL_H

#include "ops_internal.h"

/* ---- communicators (ops/comm.c) ---------------------------------------------
 * The exchanges the vocab-parallel ops make. Every rank must make the same
 * calls with the same sizes; a failed collective is TG_ERR_COMM naming the
 * rank and the call. */

/* What a rank brings to the agreement step of a collective call: its local
 * status (and message), and numbers the call compares across ranks. */
#define TG__AGREE_SIG 12
typedef struct tg__agree {
    int32_t status;              /* TG_OK, or what this rank's checks found */
    int32_t pad;
    int64_t sig[TG__AGREE_SIG];  /* shapes, options, target checksums... */
    char msg[224];               /* this rank's message when status != TG_OK */
} tg__agree;

/* bytes of send (host memory) from every rank, in rank order, into recv
 * (host, size x bytes); staged through device buffers for NCCL. Counts one
 * collective. */
tg_status tg__comm_allgather_host(tg_comm *c, const char *who, const void *send, void *recv,
                                  size_t bytes);
/* t (contiguous f32/f64, on the communicator's device) summed over the ranks
 * in place. Counts one collective. */
tg_status tg__comm_allreduce_sum(tg_comm *c, const char *who, tg_tensor *t);
/* The agreement step: one fixed-size all-gather of every rank's entry into
 * the communicator's own buffer of size entries (so it cannot deadlock on a
 * shape mismatch, and over MPI needs no memory: running out of it cannot
 * keep one rank out; over NCCL it is staged through device buffers it
 * allocates). *agreed points at it until the next agreement. When some
 * rank's status is not TG_OK, every rank sets the error of the lowest such
 * rank, "who: rank r: its message", with its status, and returns it. */
tg_status tg__comm_agree(tg_comm *c, const char *who, tg__agree *mine,
                         const tg__agree **agreed);
/* Fills a's status and message from this thread's last error (without a
 * leading "who: "). */
void tg__agree_fail(tg__agree *a, const char *who, tg_status st);

#endif
