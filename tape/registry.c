/* tape/registry.c - the weak (non-owning) registry of live tensors,
 * storages and graph nodes: ids, creation step, live counts, step marks and
 * their history (each mark is also an event of the memory timeline).
 * leakcheck/scan.c turns it into retention reports; the core needs it for
 * the ids that order backward. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad/leakcheck.h"
#include "tapegrad/memory.h"

#include "errors.h"
#include "tensor_impl.h"
#include "node.h"
#include "live_objects.h"
#include "timeline_hooks.h"

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tg_tensor *g_tensors;
static tg__storage *g_storages;
static tg__node *g_nodes;
static int64_t g_n_tensors, g_n_storages, g_n_nodes;
static uint64_t g_next_id = 1;
static uint64_t g_step = 0;
static int g_enabled = -1; /* -1: not yet read from the environment */
static tg__step_rec g_hist[TG__STEP_HISTORY];
static uint64_t g_n_hist;

/* Called with the lock held. */
static bool enabled_locked(void) {
    if (g_enabled < 0) {
        const char *e = getenv("TAPEGRAD_LEAKCHECK");
        g_enabled = !(e && (strcmp(e, "0") == 0 || strcmp(e, "off") == 0));
    }
    return g_enabled;
}

void tg_leakcheck_set_enabled(bool on) {
    pthread_mutex_lock(&g_reg_lock);
    g_enabled = on;
    pthread_mutex_unlock(&g_reg_lock);
}

bool tg_leakcheck_enabled(void) {
    pthread_mutex_lock(&g_reg_lock);
    bool on = enabled_locked();
    pthread_mutex_unlock(&g_reg_lock);
    return on;
}

void tg__reg_lock(void) { pthread_mutex_lock(&g_reg_lock); }
void tg__reg_unlock(void) { pthread_mutex_unlock(&g_reg_lock); }
tg_tensor *tg__reg_tensors(void) { return g_tensors; }
tg__storage *tg__reg_storages(void) { return g_storages; }
tg__node *tg__reg_nodes(void) { return g_nodes; }

uint64_t tg__current_step(void) {
    pthread_mutex_lock(&g_reg_lock);
    uint64_t s = g_step;
    pthread_mutex_unlock(&g_reg_lock);
    return s;
}

uint64_t tg__current_step_locked(void) { return g_step; }

uint64_t tg_step_current(void) { return tg__current_step(); }

/* One generic doubly-linked insert/remove for the three object kinds. An
 * object created while the registry is off is counted but not listed
 * (scan == -1, and it is never unlinked). */
#define TG__REG_ADD(head, obj, counter)                                          \
    do {                                                                         \
        pthread_mutex_lock(&g_reg_lock);                                         \
        (obj)->id = g_next_id++;                                                 \
        (obj)->step = g_step;                                                    \
        (obj)->scan = -1;                                                        \
        (obj)->reg_prev = (obj)->reg_next = NULL;                                \
        if (enabled_locked()) {                                                  \
            (obj)->scan = 0;                                                     \
            (obj)->reg_next = (head);                                            \
            if (head) (head)->reg_prev = (obj);                                  \
            (head) = (obj);                                                      \
        }                                                                        \
        (counter)++;                                                             \
        pthread_mutex_unlock(&g_reg_lock);                                       \
    } while (0)

#define TG__REG_DEL(head, obj, counter)                                          \
    do {                                                                         \
        pthread_mutex_lock(&g_reg_lock);                                         \
        if ((obj)->scan >= 0) {                                                  \
            if ((obj)->reg_prev) (obj)->reg_prev->reg_next = (obj)->reg_next;    \
            else (head) = (obj)->reg_next;                                       \
            if ((obj)->reg_next) (obj)->reg_next->reg_prev = (obj)->reg_prev;    \
            (obj)->scan = -1; /* a scan finding it by a weak pointer skips it */ \
        }                                                                        \
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

uint64_t tg_step_mark(const char *label) {
    tg_mem_stats m;
    uint64_t live = 0;
    for (int d = TG_CPU; d <= TG_CUDA; d++)
        if (tg_mem_get((tg_device)d, &m) == TG_OK) live += m.live_total;
    pthread_mutex_lock(&g_reg_lock);
    tg__step_rec *r = &g_hist[g_n_hist % TG__STEP_HISTORY];
    memset(r, 0, sizeof *r);
    r->step = g_step;
    if (label) /* cut with "...", never inside a UTF-8 character */
        tg__appendf(r->label, sizeof r->label, 0, "%s", label);
    r->live_bytes = live;
    for (tg__node *n = g_nodes; n; n = n->reg_next) r->old_nodes += n->step < g_step;
    g_n_hist++;
    uint64_t ended = g_step;
    uint64_t s = ++g_step;
    pthread_mutex_unlock(&g_reg_lock);
    if (tg__timeline_on()) tg__tl_step(ended, label);
    return s;
}

int tg__reg_step_history(tg__step_rec *out) {
    uint64_t n = g_n_hist < TG__STEP_HISTORY ? g_n_hist : TG__STEP_HISTORY;
    for (uint64_t i = 0; i < n; i++)
        out[i] = g_hist[(g_n_hist - n + i) % TG__STEP_HISTORY];
    return (int)n;
}

int64_t tg__reg_dump(FILE *f) {
    pthread_mutex_lock(&g_reg_lock);
    for (tg_tensor *t = g_tensors; t; t = t->reg_next)
        fprintf(f, "  tensor #%llu '%s' %s ndim %d refcount %d (scope %d) created at %s:%d "
                "(step %llu)\n", (unsigned long long)t->id, t->name, tg_dtype_name(t->dtype),
                t->ndim, t->refcount, t->scope_refs, t->site.file ? t->site.file : "?",
                t->site.line, (unsigned long long)t->step);
    for (tg__storage *s = g_storages; s; s = s->reg_next)
        fprintf(f, "  storage #%llu %zu bytes (%s) refcount %d created at %s:%d (step %llu)\n",
                (unsigned long long)s->id, s->nbytes, tg_mem_category_name(s->cat), s->refcount,
                s->site.file ? s->site.file : "?", s->site.line, (unsigned long long)s->step);
    for (tg__node *n = g_nodes; n; n = n->reg_next)
        fprintf(f, "  node #%llu %s refcount %d created at %s:%d (step %llu)\n",
                (unsigned long long)n->id, n->name, n->refcount,
                n->site.file ? n->site.file : "?", n->site.line, (unsigned long long)n->step);
    int64_t total = g_n_tensors + g_n_storages + g_n_nodes;
    pthread_mutex_unlock(&g_reg_lock);
    return total;
}
