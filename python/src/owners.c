/* python/src/owners.c - the Python objects that lend memory to the library
 * (a NumPy array's buffer, a DLPack producer's capsule) and their release.
 *
 * The library calls the release callback of a tensor over lent memory when
 * the last tensor on it dies: in any thread, during any library call (a
 * tg_release, a backward freeing saved tensors), possibly with the GIL
 * released. Letting go of a Python object there would need the GIL and
 * could run arbitrary Python code (an array's deallocation releasing another
 * tensor...) inside the library. So the callback only queues the owner;
 * tgpy_drain_owners lets go of the queue with the GIL held and no library
 * call running, after every release the binding makes, after every op, and
 * from a pending call when the release came from elsewhere. */
#include "tgpy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct owner {
    PyObject *obj;       /* one reference */
    struct owner *next;  /* the release queue */
} owner;

static pthread_mutex_t g_queue_lock = PTHREAD_MUTEX_INITIALIZER;
static owner *g_queue;              /* released, not yet let go */
static atomic_bool g_queued;        /* g_queue != NULL, read without the lock */
static atomic_bool g_pending_call;  /* a drain is scheduled with Py_AddPendingCall */

void *tgpy_owner_new(PyObject *obj) {
    owner *o = PyMem_RawMalloc(sizeof *o);  /* freed without the GIL's help */
    if (!o) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_INCREF(obj);
    o->obj = obj;
    o->next = NULL;
    return o;
}

void tgpy_owner_discard(void *ctx) {
    owner *o = ctx;
    if (!o) return;
    Py_DECREF(o->obj);
    PyMem_RawFree(o);
}

static int drain_pending(void *unused) {
    (void)unused;
    atomic_store(&g_pending_call, false);
    tgpy_drain_owners();
    return 0;
}

void tgpy_owner_release(void *ctx) {
    owner *o = ctx;
    pthread_mutex_lock(&g_queue_lock);
    o->next = g_queue;
    g_queue = o;
    atomic_store(&g_queued, true);
    pthread_mutex_unlock(&g_queue_lock);
    /* if no binding call comes to drain it, the interpreter will (any thread,
     * no GIL needed to schedule it) */
    if (!atomic_exchange(&g_pending_call, true) && Py_AddPendingCall(drain_pending, NULL) != 0)
        atomic_store(&g_pending_call, false);
}

void tgpy_drain_owners(void) {
    while (atomic_load_explicit(&g_queued, memory_order_acquire)) {
        pthread_mutex_lock(&g_queue_lock);
        owner *list = g_queue;
        g_queue = NULL;
        atomic_store(&g_queued, false);
        pthread_mutex_unlock(&g_queue_lock);
        /* an error being raised must survive the deallocations */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        while (list) {
            owner *next = list->next;
            Py_DECREF(list->obj);  /* may release tensors and queue more owners */
            PyMem_RawFree(list);
            list = next;
        }
        PyErr_Restore(type, value, tb);
    }
}

int tgpy_owners_ready(PyObject *module) {
    (void)module;
    return 0;
}
