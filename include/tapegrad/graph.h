/* tapegrad/graph.h - exporting a graph for people: Graphviz DOT. */
#ifndef TAPEGRAD_GRAPH_H
#define TAPEGRAD_GRAPH_H

#include <stdio.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes, as a Graphviz DOT digraph, the graph reachable from roots[0..n-1]:
 * each root tensor (labelled with names[i] if given, else its name; a tensor
 * given twice is drawn once, under its first name), each node with its op,
 * creation site, step, saved tensors (name, dtype, shape, bytes, or "freed")
 * and their total, each leaf with shape, bytes and .grad bytes; edges follow
 * gradients (root -> node -> inputs), drawn bottom-up so the picture reads
 * like the forward pass. Roots whose graph has nodes from an earlier step
 * (tg_step_mark) are highlighted as retained ("RETAINED since step k").
 * Nodes shared by several roots appear once; the output order is fixed
 * (roots as given, then nodes and leaves by creation). names may be NULL, and
 * so may any names[i]. The walk is iterative (deep graphs are fine) and takes
 * no references. f is flushed; nothing is written unless the whole graph
 * could be collected. Threads: it reads under the locks of tg_leak_scan
 * (waits for a backward in progress; frees and object creation on other
 * threads wait for it while it writes).
 * Errors: TG_ERR_NULL (f, roots or a roots[i] NULL; an error already pending
 * is kept and returned), TG_ERR_VALUE (n < 1), TG_ERR_IO (a write or the
 * flush failed), TG_ERR_NOMEM. */
tg_status tg_graph_dot(FILE *f, tg_tensor *const *roots, int n, const char *const *names);

#ifdef __cplusplus
}
#endif
#endif
