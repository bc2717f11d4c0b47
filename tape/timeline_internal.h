/* tape/timeline_internal.h - what tape/timeline.c (the recorder and the Chrome
 * trace writer) shares with tape/timeline_svg.c (the plot). Not installed.
 *
 * Contract: a tg__tl_recording is a read-only view of the events, valid while
 * the timeline lock is held (the writers are called with it held). Events are
 * in the order they happened and their times never decrease. */
#ifndef TG_TIMELINE_INTERNAL_H
#define TG_TIMELINE_INTERNAL_H

#include <stdio.h>

#include "tapegrad/memory.h"
#include "tapegrad/timeline.h"
#include "defs.h"

enum {
    TG__TL_STATE = 0, /* the device's figures when recording started */
    TG__TL_ALLOC,     /* bytes allocated (name: op; node: backward node running) */
    TG__TL_FREE,      /* bytes freed (name: op that allocated them) */
    TG__TL_SAVED,     /* saved bytes changed */
    TG__TL_BEGIN,     /* backward starts running a node (name: node) */
    TG__TL_END,       /* ... and is done with it */
    TG__TL_STEP       /* tg_step_mark (name: label; bytes: the step that ended) */
};

typedef struct tg__tl_event {
    uint64_t t_ns;                  /* since tg_timeline_start */
    uint8_t kind, dev, cat, tid;    /* tid: thread track, 1.. */
    uint32_t name;                  /* interned string id, 0 = unknown */
    uint32_t node;                  /* memory events: node running on the thread, 0 = none */
    uint64_t bytes;                 /* memory events: size; steps: step number */
    uint64_t live[TG_MEM_NCAT];     /* memory events: dev's live bytes per category after */
    uint64_t saved;                 /* memory events: dev's saved bytes after */
} tg__tl_event;

typedef struct tg__tl_recording {
    const tg__tl_event *ev;
    size_t n;
    uint64_t dropped;   /* events lost (buffer could not grow) */
    uint64_t t_end_ns;  /* end of the recording (now if still recording) */
    char *const *str;   /* interned names, [1, nstr) */
    uint32_t nstr;
} tg__tl_recording;

/* The name with id `id` ("(unknown op)" for 0). */
const char *tg__tl_name(const tg__tl_recording *r, uint32_t id);
/* Length (1..4) of the valid UTF-8 sequence at s (s[0] != 0), 0 if invalid. */
size_t tg__tl_utf8_len(const unsigned char *s);
/* Draws the plot (tape/timeline_svg.c). TG_ERR_NOMEM if its scratch memory
 * cannot be had (error set). Write errors are left to tg__tl_close. */
tg_status tg__tl_write_svg(FILE *f, const tg__tl_recording *r, const char *title);
/* fclose, with a write error (or a failed close) as TG_ERR_IO naming fn and
 * path. */
tg_status tg__tl_close(const char *fn, const char *path, FILE *f);

#endif
