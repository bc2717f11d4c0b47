/* tapegrad/timeline.h - a memory timeline: every allocation and free (with
 * its category and the op that made it), the graph nodes run by backward, and
 * step marks, recorded while on, written as a Chrome trace (Perfetto,
 * chrome://tracing) or drawn as an SVG plot of live bytes by category.
 *
 * One recording exists per process; every thread's allocations go into it.
 * Off, recording costs one predictable branch per allocation. On, each event
 * takes a lock and about 100 bytes of memory that is not counted in the
 * library's byte figures (tg_mem_get) and that allocation-failure injection
 * does not touch; if that memory runs out, events are dropped (the trace says
 * how many) and no operation fails because of the timeline. */
#ifndef TAPEGRAD_TIMELINE_H
#define TAPEGRAD_TIMELINE_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording (dropping any earlier recording). Timestamps are
 * microseconds since this call. Errors: TG_ERR_NOMEM, TG_ERR_STATE (already
 * recording). */
tg_status tg_timeline_start(void);

/* Stops recording; the events stay until tg_timeline_clear or the next start.
 * TG_ERR_STATE if not recording. */
tg_status tg_timeline_stop(void);

/* Number of events recorded so far. */
size_t tg_timeline_events(void);

/* Writes the events as Chrome trace-event JSON: one counter track per memory
 * category (live bytes), the saved bytes, instant events for allocations
 * (named by the op that made them) and step marks, and a span per graph node
 * run by backward. Errors: TG_ERR_NULL, TG_ERR_IO (with the path and
 * strerror), TG_ERR_STATE (nothing recorded).
 *
 * Details: the counter "live bytes" has args leaf, activation, gradient and
 * workspace (bytes; their sum is the allocator's live_total, so its peak is
 * peak_total), "saved bytes" has arg saved; instants "alloc OP" / "free OP"
 * carry bytes, category, op and the backward node running; each tg_backward
 * is a span "tg_backward" holding a span per node run (named like
 * "MulBackward"); step marks are global instants named by their label
 * ("step N" without one). Times are microseconds since tg_timeline_start;
 * "otherData" gives the event count and dropped_events. May be called while
 * recording (allocations on other threads wait until it is written). */
tg_status tg_timeline_write_trace(const char *path);

/* Draws live bytes by category over time (stacked areas), with vertical step
 * marks and a legend, axes in MiB and milliseconds, as a self-contained SVG.
 * title may be NULL. Errors as tg_timeline_write_trace.
 *
 * Details: 960 x 540, no external fonts or scripts. Also drawn: the saved
 * bytes as a line, the peak as a dot (value and time in the line under the
 * title, each category's peak in the legend), light bands where backward was
 * running. The y axis is in KiB (or bytes) when the peak is under 1 MiB. With
 * more than 2000 memory events the series is reduced to at most 2000 points,
 * keeping every peak. */
tg_status tg_timeline_write_svg(const char *path, const char *title);

/* Frees the recorded events (stopping first if needed). */
void tg_timeline_clear(void);

#ifdef __cplusplus
}
#endif
#endif
