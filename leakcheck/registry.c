/* leakcheck/registry.c - the weak (non-owning) registry of live tensors,
 * storages and graph nodes: ids, creation step, live counts. The scan that
 * turns it into retention reports builds on these lists. */
#include <pthread.h>
#include <stdio.h>

#include "tg_internal.h"

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tg_tensor *g_tensors;
static tg__storage *g_storages;
static tg__node *g_nodes;
static int64_t g_n_tensors, g_n_storages, g_n_nodes;
static uint64_t g_next_id = 1;
static uint64_t g_step = 0;

uint64_t tg__current_step(void) {
    pthread_mutex_lock(&g_reg_lock);
    uint64_t s = g_step;
    pthread_mutex_unlock(&g_reg_lock);
    return s;
}

/* One generic doubly-linked insert/remove for the three object kinds. */
#define TG__REG_ADD(head, obj, counter)                                          \
    do {                                                                         \
        pthread_mutex_lock(&g_reg_lock);                                         \
        (obj)->id = g_next_id++;                                                 \
        (obj)->step = g_step;                                                    \
        (obj)->reg_prev = NULL;                                                  \
        (obj)->reg_next = (head);                                                \
        if (head) (head)->reg_prev = (obj);                                      \
        (head) = (obj);                                                          \
        (counter)++;                                                             \
        pthread_mutex_unlock(&g_reg_lock);                                       \
    } while (0)

#define TG__REG_DEL(head, obj, counter)                                          \
    do {                                                                         \
        pthread_mutex_lock(&g_reg_lock);                                         \
        if ((obj)->reg_prev) (obj)->reg_prev->reg_next = (obj)->reg_next;        \
        else (head) = (obj)->reg_next;                                           \
        if ((obj)->reg_next) (obj)->reg_next->reg_prev = (obj)->reg_prev;        \
        (counter)--;                                                             \
        pthread_mutex_unlock(&g_reg_lock);                                       \
    } while (0)

void tg__reg_tensor_add(tg_tensor *t) { TG__REG_ADD(g_tensors, t, g_n_tensors); }
void tg__reg_tensor_del(tg_tensor *t) { TG__REG_DEL(g_tensors, t, g_n_tensors); }
void tg__reg_storage_add(tg__storage *s) { TG__REG_ADD(g_storages, s, g_n_storages); }
void tg__reg_storage_del(tg__storage *s) { TG__REG_DEL(g_storages, s, g_n_storages); }
void tg__reg_node_add(tg__node *n) { TG__REG_ADD(g_nodes, n, g_n_nodes); }
void tg__reg_node_del(tg__node *n) { TG__REG_DEL(g_nodes, n, g_n_nodes); }

tg_live_counts tg_live(void) {
    pthread_mutex_lock(&g_reg_lock);
    tg_live_counts c = {g_n_tensors, g_n_storages, g_n_nodes};
    pthread_mutex_unlock(&g_reg_lock);
    return c;
}

void tg__reg_dump(FILE *f) {
    pthread_mutex_lock(&g_reg_lock);
    for (tg_tensor *t = g_tensors; t; t = t->reg_next)
        fprintf(f, "  tensor #%llu '%s' %s ndim %d refcount %d (scope %d) created at %s:%d\n",
                (unsigned long long)t->id, t->name, tg_dtype_name(t->dtype), t->ndim, t->refcount,
                t->scope_refs, t->site.file ? t->site.file : "?", t->site.line);
    for (tg__node *n = g_nodes; n; n = n->reg_next)
        fprintf(f, "  node #%llu %s refcount %d created at %s:%d\n", (unsigned long long)n->id,
                n->name, n->refcount, n->site.file ? n->site.file : "?", n->site.line);
    pthread_mutex_unlock(&g_reg_lock);
}
