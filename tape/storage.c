/* tape/storage.c - storages: reference-counted bytes on one device, with the
 * version counter shared by every tensor on them and a short history of the
 * in-place ops that bumped it. The op that allocated it is remembered (as a
 * memory-timeline tag) so that its free is named too. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/memory.h"

#include "errors.h"
#include "alloc.h"
#include "tensor_impl.h"
#include "live_objects.h"
#include "sync.h"

/* Where a storage over the caller's NULL points: tg_from_blob and
 * tg_from_dlpack take data NULL for a tensor without elements (what NumPy
 * and DLPack give for an empty array). Every storage's data is a valid
 * address, so that a zero-element tensor never brings a NULL base to a
 * memcpy, a memset, a kernel or a host read (tg__host_elems returns NULL
 * only on failure). nbytes is 0: never read or written. tg_data gives the
 * caller's NULL back (tg__user_ptr). */
static _Alignas(64) unsigned char no_bytes[64];

/* A new registered storage of nbytes at data (counted by the caller). */
static tg__storage *storage_open(tg__storage *st, tg_site s, tg_device dev, void *data,
                                 size_t nbytes, tg_mem_category cat) {
    assert(data != NULL);
    st->data = data;
    atomic_init(&st->refcount, 1);
    st->device = dev;
    st->cat = cat;
    st->nbytes = nbytes;
    st->site = s;
    tg__reg_storage_add(st);
    return st;
}

/* An allocation for `who`, called at s, ran out of memory: the message
 * (the allocator's own, set with no caller) gains the op when it is a public
 * one and the call site, "tg_matmul: out of memory: ... (called at
 * train.c:42)", so that a failure deep in a loss names the line that asked
 * for the bytes; inside a composite op the caller's name then leads, as for
 * every error ("tg_mse_loss: ... (in tg_sub)"). */
static void name_the_call(tg_site s, const char *who) {
    if (tg_last_status() != TG_ERR_NOMEM) return;
    const bool public_op = who && strncmp(who, "tg_", 3) == 0;
    if (s.file)
        tg__set_error(TG_ERR_NOMEM, "%s%s%s (called at %s:%d)", public_op ? who : "",
                      public_op ? ": " : "", tg_last_error(), s.file, s.line);
    else if (public_op)
        tg__set_error(TG_ERR_NOMEM, "%s: %s", who, tg_last_error());
}

tg__storage *tg__storage_new(tg_site s, tg_device dev, size_t nbytes, tg_mem_category cat,
                             const char *who) {
    const char *caller = tg__caller_suspend(); /* name_the_call composes the message */
    tg__storage *st = tg__xcalloc(1, sizeof *st);
    void *data = st ? tg__alloc_op(dev, nbytes, cat, who, &st->tl_tag) : NULL;
    tg__caller_leave(caller);
    if (!data) {
        free(st);
        name_the_call(s, who);
        return NULL;
    }
    return storage_open(st, s, dev, data, nbytes, cat);
}

tg__storage *tg__storage_adopt(tg_site s, tg_device dev, void *data, size_t nbytes,
                               void (*release)(void *ctx), void *ctx, const char *who) {
    tg__storage *st = tg__xcalloc(1, sizeof *st);
    if (!st) return NULL;
    tg__external_adopt(dev, nbytes, who, &st->tl_tag);
    st->release = release;
    st->release_ctx = ctx;
    return storage_open(st, s, dev, data ? data : no_bytes, nbytes, TG_MEM_EXTERNAL);
}

void *tg__user_ptr(const tg_tensor *t) {
    return t->storage->data == no_bytes ? NULL : tg__ptr(t);
}

void tg__storage_retain(tg__storage *st) {
    if (st) atomic_fetch_add_explicit(&st->refcount, 1, memory_order_relaxed);
}

void tg__storage_release(tg__storage *st) {
    if (!st || atomic_fetch_sub_explicit(&st->refcount, 1, memory_order_acq_rel) > 1) return;
    tg__reg_storage_del(st);
    if (st->cat == TG_MEM_EXTERNAL) {
        tg__external_drop(st->device, st->nbytes, st->tl_tag);
        /* the callback may call the library: never under one of its locks */
        if (st->release && tg__release_later(st)) return;
        if (st->release) tg__call_release(st->release, st->release_ctx);
    } else {
        tg__free_op(st->device, st->data, st->nbytes, st->cat, st->tl_tag);
    }
    free(st);
}

void tg__storage_bump(tg__storage *st, const char *op, const char *alt, tg_site site) {
    tg__history_lock();
    const uint64_t v = atomic_fetch_add(&st->version, 1) + 1;
    tg__version_event *ev = &st->hist[st->n_events % TG__VERSION_HISTORY];
    ev->op = op;
    ev->alt = alt;
    ev->site = site;
    ev->version = v;
    st->n_events++;
    tg__history_unlock();
}

uint64_t tg__storage_history(const tg__storage *st, tg__version_event *hist, uint64_t *version) {
    tg__history_lock();
    memcpy(hist, st->hist, sizeof st->hist);
    const uint64_t n = st->n_events;
    *version = st->version;
    tg__history_unlock();
    return n;
}
