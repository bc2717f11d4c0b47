/* tape/live_objects.h - the live-object registry and the step history
 * (tape/registry.c), read by the leak scan. Internal (not installed);
 * tape/core.h gathers every tape/ header for the layers above. */
#ifndef TG_TAPE_LIVE_OBJECTS_H
#define TG_TAPE_LIVE_OBJECTS_H

#include <stdio.h>

#include "node.h"

/* ---- registry (tape/registry.c) -------------------------------------- */
void tg__reg_tensor_add(tg_tensor *t);
void tg__reg_tensor_del(tg_tensor *t);
void tg__reg_storage_add(tg__storage *s);
void tg__reg_storage_del(tg__storage *s);
void tg__reg_node_add(tg__node *n);
void tg__reg_node_del(tg__node *n);
uint64_t tg__current_step(void);
/* Prints every live tensor, storage and node with its creation site; returns
 * the number of live objects (listed or not). */
int64_t tg__reg_dump(FILE *f);

/* For the leak scan (leakcheck/scan.c): the registry lock, the lists, and the
 * step history kept by tg_step_mark. */
void tg__reg_lock(void);
void tg__reg_unlock(void);
uint64_t tg__current_step_locked(void);
tg_tensor *tg__reg_tensors(void);
tg__storage *tg__reg_storages(void);
tg__node *tg__reg_nodes(void);
typedef struct tg__step_rec {
    uint64_t step;          /* the step that ended */
    char label[32];
    uint64_t live_bytes;    /* allocator live bytes (all devices) at the mark */
    int64_t old_nodes;      /* nodes created before this step still alive */
} tg__step_rec;
#define TG__STEP_HISTORY 16
/* Copies up to TG__STEP_HISTORY most recent records, oldest first; returns
 * how many. Call with the registry lock held. */
int tg__reg_step_history(tg__step_rec *out);

#endif
