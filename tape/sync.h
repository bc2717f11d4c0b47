/* tape/sync.h - the library's process-wide locks, the order they are taken
 * in, and release callbacks put off until the backward engine's lock is
 * let go (tape/sync.c). Internal (not installed); tape/core.h gathers every
 * tape/ header for the layers above.
 *
 * What is shared between threads and how (docs/api.md, "Threads"):
 * - reference counts (tensors, storages, nodes, leaf handles), the counters
 *   the leak scan reads (lib_refs, scope_refs, saved_refs), the version
 *   counter and the fields a view's grad_fn is made from are C11 atomics;
 * - each lock below guards one kind of lazily made or replaced state.
 *
 * Lock order: a thread holding one of these takes only those after it.
 *   engine     tg_backward, all of it (recursive: a custom backward may call
 *              tg_backward); node scratch (deps, mark, ran, gbuf), leaves'
 *              pending gradients, freeing saved tensors in backward
 *   grad       leaves' .grad (tg_grad, tg_zero_grad, the engine's commit)
 *   view       making a stale view's grad_fn (tg__grad_fn)
 *   registry   the live-object lists and ids (tape/registry.c); a node's
 *              saved slots when they move (tg__node_save)
 *   leafref    leaf handles: made, looked up, made weak, freed
 *   history    a storage's ring of in-place events
 *   allocator  (tape/alloc.c), then the timeline (tape/timeline.c)
 * No release callback (tg_from_blob's, a DLPack deleter) runs while this
 * thread holds any of them: nothing is released under the locks after
 * `engine` unless `engine` is held too (the commit, under `grad`), and
 * under `engine` a storage's callback is put off until the outermost
 * tg__engine_unlock. A custom function's backward does run under `engine`. */
#ifndef TG_TAPE_SYNC_H
#define TG_TAPE_SYNC_H

#include "defs.h"

void tg__engine_lock(void);
/* Unlocks; at the outermost level also runs the release callbacks put off
 * meanwhile (tg__release_later). */
void tg__engine_unlock(void);
void tg__grad_lock(void);
void tg__grad_unlock(void);
void tg__view_lock(void);
void tg__view_unlock(void);
void tg__leafref_lock(void);
void tg__leafref_unlock(void);
void tg__history_lock(void);
void tg__history_unlock(void);

/* For readers of the whole object graph (the leak scan, the DOT export):
 * takes engine, grad, registry and leafref, so that no backward runs, no
 * .grad is replaced, no object is freed or registered and no leaf handle
 * changes until tg__quiesce_end. Objects may still be made (not listed
 * yet), reference counts move and forward ops save tensors into nodes
 * (their slots move only under the registry lock). */
void tg__quiesce_begin(void);
void tg__quiesce_end(void);

/* Called when st (unlisted, its bytes no longer counted) dies with a
 * release callback: when this thread holds the engine lock, keeps st and
 * returns true; tg__engine_unlock calls st->release and frees st. False:
 * the caller does both now. */
bool tg__release_later(tg__storage *st);
/* Calls a release callback as every callback is called: the caller's scopes
 * hidden (what the callback makes is its own to release), and the thread's
 * error what it was before, afterwards. */
void tg__call_release(void (*release)(void *ctx), void *ctx);

#endif
