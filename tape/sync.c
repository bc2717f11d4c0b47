/* tape/sync.c - the process-wide locks of tape/sync.h and the release
 * callbacks put off while this thread holds the backward engine's lock. */
#include <pthread.h>
#include <stdlib.h>

#include "tapegrad/status.h"

#include "errors.h"
#include "tensor_impl.h"
#include "live_objects.h"
#include "sync.h"

static pthread_mutex_t g_engine = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_grad = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_view = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_leafref = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_history = PTHREAD_MUTEX_INITIALIZER;

/* The engine lock is recursive by a depth of this thread's own: only the
 * thread holding the mutex has a depth above 0. */
static _Thread_local int tl_engine_depth;
/* Storages whose release callbacks wait for the engine lock to go, newest
 * first (linked through later_next). */
static _Thread_local tg__storage *tl_later;

void tg__call_release(void (*release)(void *ctx), void *ctx) {
    const tg_status st = tg_last_status();
    char msg[TG__MSG_LEN];
    if (st != TG_OK) tg__appendf(msg, sizeof msg, 0, "%s", tg_last_error());
    const int scopes = tg__scopes_suspend();
    release(ctx);
    tg__scopes_resume(scopes);
    if (st == TG_OK) tg_clear_error();
    else tg__set_error(st, "%s", msg);
}

/* Calls the put-off release callbacks, each once, newest first. A callback
 * may call the library (even tg_backward, which may put off more: they are
 * taken from the list one at a time). */
static void run_later(void) {
    tg__storage *s;
    while ((s = tl_later)) {
        tl_later = s->later_next;
        tg__call_release(s->release, s->release_ctx);
        free(s);
    }
}

void tg__engine_lock(void) {
    if (tl_engine_depth++ == 0) pthread_mutex_lock(&g_engine);
}

void tg__engine_unlock(void) {
    if (--tl_engine_depth > 0) return;
    pthread_mutex_unlock(&g_engine);
    run_later();
}

bool tg__release_later(tg__storage *st) {
    if (tl_engine_depth == 0) return false;
    st->later_next = tl_later;
    tl_later = st;
    return true;
}

void tg__grad_lock(void) { pthread_mutex_lock(&g_grad); }
void tg__grad_unlock(void) { pthread_mutex_unlock(&g_grad); }
void tg__view_lock(void) { pthread_mutex_lock(&g_view); }
void tg__view_unlock(void) { pthread_mutex_unlock(&g_view); }
void tg__leafref_lock(void) { pthread_mutex_lock(&g_leafref); }
void tg__leafref_unlock(void) { pthread_mutex_unlock(&g_leafref); }
void tg__history_lock(void) { pthread_mutex_lock(&g_history); }
void tg__history_unlock(void) { pthread_mutex_unlock(&g_history); }

void tg__quiesce_begin(void) {
    tg__engine_lock();
    tg__grad_lock();
    tg__reg_lock();
    tg__leafref_lock();
}

void tg__quiesce_end(void) {
    tg__leafref_unlock();
    tg__reg_unlock();
    tg__grad_unlock();
    tg__engine_unlock();
}
