/* tape/storage.c - storages: reference-counted bytes on one device, with the
 * version counter shared by every tensor on them and a short history of the
 * in-place ops that bumped it. The op that allocated it is remembered (as a
 * memory-timeline tag) so that its free is named too. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

tg__storage *tg__storage_new(tg_site s, tg_device dev, size_t nbytes, tg_mem_category cat,
                             const char *who) {
    tg__storage *st = tg__xcalloc(1, sizeof *st);
    if (!st) return NULL;
    st->data = tg__alloc_op(dev, nbytes, cat, who, &st->tl_tag);
    if (!st->data) {
        free(st);
        return NULL;
    }
    st->refcount = 1;
    st->device = dev;
    st->cat = cat;
    st->nbytes = nbytes;
    st->site = s;
    tg__reg_storage_add(st);
    return st;
}

void tg__storage_retain(tg__storage *st) {
    if (st) st->refcount++;
}

void tg__storage_release(tg__storage *st) {
    if (!st || --st->refcount > 0) return;
    tg__reg_storage_del(st);
    tg__free_op(st->device, st->data, st->nbytes, st->cat, st->tl_tag);
    free(st);
}

void tg__storage_bump(tg__storage *st, const char *op, const char *alt, tg_site site) {
    st->version++;
    tg__version_event *ev = &st->hist[st->n_events % TG__VERSION_HISTORY];
    ev->op = op;
    ev->alt = alt;
    ev->site = site;
    ev->version = st->version;
    st->n_events++;
}
