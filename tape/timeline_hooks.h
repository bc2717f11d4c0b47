/* tape/timeline_hooks.h - the memory timeline's hooks for the allocator and
 * the engine (tape/timeline.c). Internal (not installed); tape/core.h gathers
 * every tape/ header for the layers above. */
#ifndef TG_TAPE_TIMELINE_HOOKS_H
#define TG_TAPE_TIMELINE_HOOKS_H

#include <stdatomic.h>

#include "defs.h"
#include "tapegrad/memory.h"

/* ---- memory timeline (tape/timeline.c) ------------------------------------- */

/* Nonzero while tg_timeline_start has the recorder on. The hooks below are
 * called only when tg__timeline_on() (one relaxed load and a predictable
 * branch when off); each checks again under the timeline's own lock. They
 * never fail and never touch the thread's error: when the event buffer cannot
 * grow (plain malloc, not counted, not fault-injected) the event is dropped
 * and counted. */
extern atomic_int tg__timeline_flag;
static inline bool tg__timeline_on(void) {
    return atomic_load_explicit(&tg__timeline_flag, memory_order_relaxed) != 0;
}
/* Allocation / free of nbytes in dev/cat; `after` is dev's figures after it.
 * Called with the allocator lock held (lock order: allocator, then timeline).
 * tg__tl_alloc returns the tag naming op (NULL: the op last named on this
 * thread) for tg__tl_free; tag 0 names no op, TG__TL_LAST_OP the op last
 * named on this thread. */
#define TG__TL_LAST_OP UINT64_MAX
uint64_t tg__tl_alloc(tg_device dev, tg_mem_category cat, size_t nbytes,
                      const tg_mem_stats *after, const char *op);
void tg__tl_free(tg_device dev, tg_mem_category cat, size_t nbytes, const tg_mem_stats *after,
                 uint64_t tag);
/* Saved bytes of dev changed (allocator lock held). */
void tg__tl_saved(tg_device dev, const tg_mem_stats *after);
/* A graph node run by backward on this thread: begin returns a token to give
 * to end (allocations in between are attributed to the node). */
uint64_t tg__tl_span_begin(const char *node);
void tg__tl_span_end(const char *node, uint64_t token);
/* tg_step_mark ended step `step` (label may be NULL). */
void tg__tl_step(uint64_t step, const char *label);
/* For tests: keep at most max_events events (0: no limit), dropping the rest
 * as if the buffer could not grow; and the number dropped so far. */
void tg__timeline_set_limit(size_t max_events);
uint64_t tg__timeline_dropped(void);

#endif
