/* tape/alloc.h - counted allocation, book-keeping allocation with fault
 * injection, memory categories (tape/alloc.c). Internal (not installed);
 * tape/core.h gathers every tape/ header for the layers above. */
#ifndef TG_TAPE_ALLOC_H
#define TG_TAPE_ALLOC_H

#include "defs.h"
#include "tapegrad/memory.h"

/* ---- memory (tape/alloc.c) ------------------------------------------------- */

/* Allocates nbytes (>= 0; 0 gives a valid non-NULL pointer) on dev counting it
 * in category cat. NULL with TG_ERR_NOMEM on failure (or injected failure).
 * Every allocation of tensor data and of kernel workspace goes through here. */
void *tg__alloc(tg_device dev, size_t nbytes, tg_mem_category cat);
void tg__free(tg_device dev, void *p, size_t nbytes, tg_mem_category cat);
/* Book-keeping allocations (nodes, scope arrays...): not counted in the byte
 * figures, but subject to fault injection so every path is tested. */
void *tg__xmalloc(size_t n);
void *tg__xcalloc(size_t n, size_t size);
void *tg__xrealloc(void *p, size_t n);
/* A saved-tensor slot starts / stops holding st: its bytes count as saved
 * while at least one slot holds it (st->saved_refs, changed under the
 * allocator lock so that the figures follow the counter on every thread). */
void tg__saved_hold(tg__storage *st);
void tg__saved_drop(tg__storage *st);
/* tg__alloc / tg__free naming the op that allocates the bytes (`op` may be
 * NULL: the op last named on this thread) for the memory timeline. *tag
 * receives what tg__free_op needs to name the op again at free time (0 when
 * not recording; tg__free passes TG__TL_LAST_OP). */
void *tg__alloc_op(tg_device dev, size_t nbytes, tg_mem_category cat, const char *op,
                   uint64_t *tag);
void tg__free_op(tg_device dev, void *p, size_t nbytes, tg_mem_category cat, uint64_t tag);
/* Counts memory the library does not own (tg_from_blob) as TG_MEM_EXTERNAL
 * on dev, and uncounts it: live, peak and the timeline as tg__alloc_op and
 * tg__free_op would, without allocating or freeing anything. */
void tg__external_adopt(tg_device dev, size_t nbytes, const char *op, uint64_t *tag);
void tg__external_drop(tg_device dev, size_t nbytes, uint64_t tag);
/* The allocator lock and its figures (for tg_timeline_start's first sample):
 * tg__mem_stats_locked returns NULL for an unknown device. */
void tg__mem_lock(void);
void tg__mem_unlock(void);
const tg_mem_stats *tg__mem_stats_locked(tg_device dev);

/* Category for op results: activation, or gradient while backward runs (the
 * engine sets an override); creation functions use leaf unless overridden. */
tg_mem_category tg__op_category(void);
tg_mem_category tg__creation_category(void);
/* Sets the per-thread override (TG_MEM_NCAT = none); returns the previous. */
tg_mem_category tg__set_category_override(tg_mem_category c);

#endif
