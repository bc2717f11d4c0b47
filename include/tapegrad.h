/* tapegrad.h - a small reverse-mode autograd engine in C11.
 *
 * Include this header only; it includes the rest:
 *   tapegrad/status.h     status codes, per-thread last error, call sites
 *   tapegrad/tensor.h     tensors: creation, views, metadata, data in/out
 *   tapegrad/ops.h        differentiable ops and in-place ops
 *   tapegrad/autograd.h   grad mode, backward, custom functions, scopes
 *   tapegrad/memory.h     memory accounting, live counts, fault injection
 *   tapegrad/gradcheck.h  finite-difference gradient checker
 *   tapegrad/comm.h       communicators (MPI, NCCL) for the vocab-parallel ops
 *   tapegrad/logprob.h    fused, chunked log-prob and entropy ops
 *   tapegrad/leakcheck.h  graphs kept alive, cycles, per-step growth
 *   tapegrad/timeline.h   memory timeline: Chrome trace JSON, SVG plot
 *   tapegrad/graph.h      graph export as Graphviz DOT
 *   tapegrad/cuda.h       CUDA device discovery and memory cache
 *   tapegrad/dlpack.h     tensors to and from DLPack without a copy
 */
#ifndef TAPEGRAD_H
#define TAPEGRAD_H

#include "tapegrad/status.h"
#include "tapegrad/tensor.h"
#include "tapegrad/ops.h"
#include "tapegrad/autograd.h"
#include "tapegrad/memory.h"
#include "tapegrad/gradcheck.h"
#include "tapegrad/comm.h"
#include "tapegrad/logprob.h"
#include "tapegrad/leakcheck.h"
#include "tapegrad/timeline.h"
#include "tapegrad/graph.h"
#include "tapegrad/cuda.h"
#include "tapegrad/dlpack.h"
#include "tapegrad/version.h"

#endif
