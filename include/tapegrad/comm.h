/* tapegrad/comm.h - communicators for the vocab-parallel ops: MPI for CPU
 * tensors, NCCL for CUDA tensors.
 *
 * When the output layer is sharded by vocabulary rows (Megatron-style tensor
 * parallelism), each rank holds logits (N, V_r) or weight rows (V_r, d) for
 * its own slice [vocab_start, vocab_start + V_r) of the vocabulary. With a
 * communicator and the rank's vocab_start in their options,
 * tg_logprob_entropy and tg_linear_logprob_entropy compute the global
 * log-prob, entropy and log-sum-exp on every rank (docs/api.md, "Beyond one
 * process").
 *
 * The library never calls MPI_Init, creates NCCL communicators or picks
 * devices: the program does, and hands its communicator over. A build
 * without MPI (or NCCL) has these functions; they answer TG_ERR_COMM saying
 * so (tg_comm_available tells in advance).
 *
 * Every collective the library makes goes through one communicator object,
 * which counts them (tg_comm_counters): the benchmarks report collectives and
 * bytes per step from it. A communicator is used by one thread at a time (as
 * MPI and NCCL require of their collectives' order); two communicators may be
 * used from two threads.
 */
#ifndef TAPEGRAD_COMM_H
#define TAPEGRAD_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_comm tg_comm;

typedef enum tg_comm_kind { TG_COMM_MPI = 0, TG_COMM_NCCL = 1 } tg_comm_kind;

/* Whether this build can make communicators of that kind. */
bool tg_comm_available(tg_comm_kind kind);

/* A communicator over the MPI communicator *mpi_comm (a pointer to an
 * MPI_Comm, so that this header does not need <mpi.h>). The library works on
 * a duplicate of it (MPI_Comm_dup, a collective call: every rank of *mpi_comm
 * must call this) whose errors return instead of aborting. It serves CPU
 * tensors. *out receives a new communicator (free it with tg_comm_free).
 * Errors: TG_ERR_NULL; TG_ERR_COMM (no MPI in this build, MPI not
 * initialised, a failing MPI call: the message names it). */
tg_status tg_comm_from_mpi(const void *mpi_comm, tg_comm **out);

/* A communicator over the NCCL communicator nccl_comm (an ncclComm_t) whose
 * collectives are queued on the CUDA stream `stream` (a cudaStream_t, NULL
 * for the legacy default stream) and on which the library then waits. It
 * serves CUDA tensors on the current device. The library does not own the
 * NCCL communicator. Errors: TG_ERR_NULL (nccl_comm); TG_ERR_COMM (no NCCL
 * in this build, a failing NCCL call). */
tg_status tg_comm_from_nccl(void *nccl_comm, void *stream, tg_comm **out);

/* Frees c (NULL is ignored); the MPI duplicate is freed too (MPI_Comm_free,
 * collective). Returns TG_OK or TG_ERR_COMM. */
tg_status tg_comm_free(tg_comm *c);

/* This process's rank and the number of ranks; -1 for NULL. */
int tg_comm_rank(const tg_comm *c);
int tg_comm_size(const tg_comm *c);
/* TG_CPU for MPI, TG_CUDA for NCCL: where the tensors it serves live. */
tg_device tg_comm_device(const tg_comm *c);

/* Collectives made through c so far, and the bytes this rank sent in them
 * (its contribution to each, as the collective's count says). Either
 * pointer may be NULL. TG_ERR_NULL for a NULL c. */
tg_status tg_comm_counters(const tg_comm *c, uint64_t *collectives, uint64_t *bytes_sent);

#ifdef __cplusplus
}
#endif
#endif
