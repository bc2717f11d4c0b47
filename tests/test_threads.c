/* tests/test_threads.c - tensors shared between threads (docs/api.md,
 * "Threads"): several threads at once use the same leaves in forward ops
 * (elementwise, and a GEMM each thread runs on its own BLAS threads) and
 * run backward into them (every .grad exactly the sum of all contributions),
 * retain, release, detach and view shared tensors and drop shared graphs,
 * build and free nodes on one fresh leaf (its shared leaf handle), use one
 * stale view (its grad_fn made once), make tensors over their own memory
 * whose release callbacks release other tensors, and scan for leaks while
 * the others work, and release their own references to a tensor that
 * another thread's scope owns. Values are small integers, so every sum is
 * exact in f32.
 * Meant for the sanitizers too: a lost reference count shows as a
 * use-after-free or a leak, a lost update as a wrong .grad. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test_util.h"

TestSuite(threads, .init = tgt_setup, .fini = tgt_teardown);

#define NT 4 /* threads */

/* ---- the harness: failures are recorded by the workers, asserted by the main thread */

static atomic_int g_failures;
static char g_first_failure[512];
static pthread_mutex_t g_fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail_at(int line, const char *what) {
    pthread_mutex_lock(&g_fail_lock);
    if (atomic_fetch_add(&g_failures, 1) == 0)
        snprintf(g_first_failure, sizeof g_first_failure, "line %d: %s (%s)", line, what,
                 tg_last_error());
    pthread_mutex_unlock(&g_fail_lock);
}
#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) fail_at(__LINE__, #cond);                                            \
    } while (0)

typedef struct worker {
    int id;
    void *shared;
} worker;

/* Runs fn on NT threads (each with its id and the shared state) and waits. */
static void run_threads(void *(*fn)(void *), void *shared) {
    atomic_store(&g_failures, 0);
    g_first_failure[0] = '\0';
    pthread_t th[NT];
    worker w[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = (worker){i, shared};
        cr_assert_eq(pthread_create(&th[i], NULL, fn, &w[i]), 0);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&g_failures), 0, "%d failures, the first at %s",
                 atomic_load(&g_failures), g_first_failure);
}

static tg_tensor *f32_vec(int64_t n, const float *v) {
    return tg_from_data(TG_F32, 1, (int64_t[]){n}, v);
}

static tg_tensor *leaf4(const float *v) {
    tg_tensor *t = f32_vec(4, v);
    cr_assert_not_null(t);
    cr_assert_eq(tg_set_requires_grad(t, true), TG_OK);
    return t;
}

static void assert_grad(const tg_tensor *leaf, const double *want, int64_t n) {
    tg_tensor *g = tg_grad(leaf);
    cr_assert_not_null(g, "no .grad");
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(tgt_at(g, i), want[i], ".grad[%lld] = %.1f, expected %.1f (lost updates?)",
                     (long long)i, tgt_at(g, i), want[i]);
    tg_release(g);
}

/* sum(a * b), a new reference; NULL propagates. */
static tg_tensor *sum_mul(tg_tensor *a, tg_tensor *b) {
    tg_tensor *p = tg_mul(a, b), *s = tg_sum(p);
    tg_release(p);
    return s;
}

/* ---- (a) shared leaves: forward and backward from every thread at once ------------------ */

#define A_ITERS 150

#define A_MAT 64 /* a GEMM the size BLAS runs on its threads */

typedef struct shared_a {
    tg_tensor *w;  /* leaf [4] */
    tg_tensor *h;  /* w * w: an interior node every thread's graph goes through */
    tg_tensor *v;  /* w[1:3], a view of the leaf */
    tg_tensor *m;  /* leaf [A_MAT, A_MAT] of ones: a weight in matmuls */
} shared_a;

static void *leaves_worker(void *arg) {
    worker *me = arg;
    shared_a *sh = me->shared;
    const float k = (float)(me->id + 1);
    tg_tensor *c = f32_vec(4, (float[]){k, k, k, k}), *c2 = f32_vec(2, (float[]){k, k});
    tg_tensor *x = tg_full(TG_F32, TG_SHAPE(A_MAT, A_MAT), k);
    CHECK(c && c2 && x);
    for (int i = 0; i < A_ITERS; i++) {
        if (i % 2) { /* a graph of its own: d/dw = c, d/dm = x^T 1 = A_MAT k */
            tg_tensor *y1 = sum_mul(sh->w, c), *xm = tg_matmul(x, sh->m), *y2 = tg_sum(xm);
            tg_tensor *y = tg_add(y1, y2);
            CHECK(y && tg_backward(y, NULL, false) == TG_OK);
            tg_release(y), tg_release(y2), tg_release(xm), tg_release(y1);
            continue;
        }
        /* through the shared node (kept: retain_graph) and the shared view:
         * d/dw = c + 2 w c + c on [1:3] */
        tg_tensor *y1 = sum_mul(sh->w, c), *y2 = sum_mul(sh->h, c), *y3 = sum_mul(sh->v, c2);
        tg_tensor *s = tg_add(y1, y2), *loss = tg_add(s, y3);
        CHECK(loss && tg_backward(loss, NULL, true) == TG_OK);
        tg_release(y1), tg_release(y2), tg_release(y3), tg_release(s), tg_release(loss);
    }
    tg_release(x), tg_release(c), tg_release(c2);
    return NULL;
}

static void shared_a_init(shared_a *sh, const float *w0) {
    sh->w = leaf4(w0);
    sh->h = tg_mul(sh->w, sh->w);
    sh->v = tg_slice(sh->w, 0, 1, 3, 1);
    sh->m = tg_ones(TG_F32, TG_SHAPE(A_MAT, A_MAT));
    cr_assert(sh->h && sh->v && sh->m);
    cr_assert_eq(tg_set_requires_grad(sh->m, true), TG_OK);
}

static void shared_a_release(shared_a *sh) {
    tg_release(sh->m), tg_release(sh->v), tg_release(sh->h), tg_release(sh->w);
}

Test(threads, shared_leaves_forward_and_backward_give_exact_grads) {
    const float w0[4] = {1, 2, 3, 4};
    shared_a sh;
    shared_a_init(&sh, w0);
    run_threads(leaves_worker, &sh);
    double want[4] = {0}, want_m = 0;
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < A_ITERS; i++) {
            for (int j = 0; j < 4; j++)
                want[j] += (t + 1) * (i % 2 ? 1.0 : 1.0 + 2.0 * w0[j] + (j == 1 || j == 2));
            want_m += i % 2 ? A_MAT * (t + 1) : 0;
        }
    assert_grad(sh.w, want, 4);
    tg_tensor *gm = tg_grad(sh.m);
    cr_assert_not_null(gm);
    for (int64_t e = 0; e < A_MAT * A_MAT; e += 37)
        cr_assert_eq(tgt_at(gm, e), want_m, "m.grad[%lld] = %.1f, expected %.1f",
                     (long long)e, tgt_at(gm, e), want_m);
    tg_release(gm);
    shared_a_release(&sh);
}

/* ---- (b) retain, release, detach and views of shared tensors; graphs dropped by several
 * threads ---------------------------------------------------------------------------------- */

#define B_ITERS 2000

typedef struct shared_b {
    tg_tensor *s;         /* leaf [8] = 0..7 */
    tg_tensor *p;         /* s * 2, a non-leaf */
    tg_tensor *loss[NT];  /* one reference each to sum(p * p): the graph they all hold */
} shared_b;

static void *views_worker(void *arg) {
    worker *me = arg;
    shared_b *sh = me->shared;
    for (int i = 0; i < B_ITERS; i++) {
        tg_tensor *r = tg_retain(sh->s);
        tg_tensor *d = tg_detach(sh->s), *dp = tg_detach(sh->p);
        tg_tensor *v = tg_slice(sh->s, 0, 2, 6, 1), *e = tg_select(v, 0, 1);
        tg_tensor *pv = tg_view(sh->p, 2, (int64_t[]){2, 4}), *vp = tg_transpose(pv, 0, 1);
        tg_tensor *y = tg_mul(v, e); /* nodes on a view of the leaf */
        double x;
        CHECK(d && dp && v && e && pv && vp && y);
        CHECK(tg_get(d, (int64_t[]){5}, &x) == TG_OK && x == 5);
        CHECK(tg_get(e, NULL, &x) == TG_OK && x == 3);
        CHECK(tg_get(vp, (int64_t[]){1, 1}, &x) == TG_OK && x == 10);
        CHECK(tg_requires_grad(v) && !tg_requires_grad(d) && tg_is_view(v));
        if (i % 3 == me->id % 3) tg_release(r), r = NULL; /* released in another order */
        tg_release(y), tg_release(vp), tg_release(pv), tg_release(e), tg_release(v), tg_release(dp);
        tg_release(d), tg_release(r);
        if (i == B_ITERS / 2 + me->id) { /* the shared graph: the last one frees it */
            tg_release(sh->loss[me->id]);
            sh->loss[me->id] = NULL;
        }
    }
    return NULL;
}

Test(threads, retain_release_detach_and_views_of_shared_tensors) {
    float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    shared_b sh = {.s = f32_vec(8, v)};
    cr_assert_eq(tg_set_requires_grad(sh.s, true), TG_OK);
    sh.p = tg_scale(sh.s, 2.0);
    tg_tensor *pp = tg_mul(sh.p, sh.p);
    tg_tensor *loss = tg_sum(pp);
    cr_assert_not_null(loss);
    tg_release(pp);
    for (int t = 0; t < NT; t++) sh.loss[t] = tg_retain(loss);
    tg_release(loss); /* the threads hold the graph now */
    run_threads(views_worker, &sh);
    tg_release(sh.p);
    tg_release(sh.s);
    tg_live_counts c = tg_live();
    cr_assert_eq(c.tensors + c.storages + c.nodes, 0, "everything freed once");
}

/* ---- (c) tensors over the caller's memory whose release callbacks release others ------ */

#define C_ITERS 1000

static atomic_int g_released; /* release callbacks run */

static void count_release(void *ctx) {
    (void)ctx;
    atomic_fetch_add(&g_released, 1);
}
/* Releases the tensor ctx (the last reference to a tensor over another blob
 * when there is one: its callback runs in turn, from inside this one). */
static void release_tensor(void *ctx) {
    atomic_fetch_add(&g_released, 1);
    CHECK(tg_release(ctx) == TG_OK);
}

typedef struct shared_c {
    tg_tensor *x; /* over x_buf; every thread's blobs hold references to it */
    tg_tensor *w; /* a leaf the blobs are multiplied with */
} shared_c;

static void *blob_worker(void *arg) {
    worker *me = arg;
    shared_c *sh = me->shared;
    for (int i = 0; i < C_ITERS; i++) {
        float a[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, c[4] = {3, 3, 3, 3};
        tg_tensor *tb = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), NULL, b, count_release, NULL);
        /* ta's release releases tb; tc's releases a reference to the shared x */
        tg_tensor *ta = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), NULL, a, release_tensor, tb);
        tg_tensor *tc = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), NULL, c, release_tensor,
                                     tg_retain(sh->x));
        CHECK(ta && tb && tc);
        /* the graph saves ta and tc; the callbacks run when backward frees them */
        tg_tensor *y = sum_mul(sh->w, ta), *z = sum_mul(sh->w, tc), *l = tg_add(y, z);
        tg_release(ta), tg_release(tc);
        if (i % 2) CHECK(l && tg_backward(l, NULL, false) == TG_OK);
        tg_release(y), tg_release(z), tg_release(l);
    }
    return NULL;
}

Test(threads, release_callbacks_release_other_tensors) {
    float x_buf[4] = {5, 5, 5, 5};
    atomic_store(&g_released, 0);
    shared_c sh = {.w = leaf4((float[]){1, 2, 3, 4})};
    sh.x = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(4), NULL, x_buf, count_release, NULL);
    cr_assert_not_null(sh.x);
    tg_tensor *xs = tg_retain(sh.x);
    run_threads(blob_worker, &sh);
    cr_assert_eq(atomic_load(&g_released), 3 * NT * C_ITERS, "each callback once");
    tg_release(sh.x);
    cr_assert_eq(atomic_load(&g_released), 3 * NT * C_ITERS, "x is still held");
    tg_release(xs); /* the last one */
    cr_assert_eq(atomic_load(&g_released), 3 * NT * C_ITERS + 1);
    double want[4] = {0};
    for (int j = 0; j < 4; j++) want[j] = NT * (C_ITERS / 2) * (1.0 + 3.0);
    assert_grad(sh.w, want, 4);
    tg_release(sh.w);
}

/* In one thread: a release callback that releases the last reference to a
 * tensor over another blob, whose own callback uses the library (makes and
 * releases a tensor); also when backward frees the first tensor. */
static atomic_int g_inner_ok;
static void use_library(void *ctx) {
    (void)ctx;
    tg_tensor *t = tg_ones(TG_F32, TG_SHAPE(2));
    tg_tensor *u = tg_add(t, t);
    double x = 0;
    if (u && tg_get(u, (int64_t[]){1}, &x) == TG_OK && x == 2) atomic_fetch_add(&g_inner_ok, 1);
    tg_release(u), tg_release(t);
}

Test(threads, release_callback_releases_a_tensor_over_another_blob) {
    float a[2] = {1, 2}, b[2] = {3, 4};
    atomic_store(&g_inner_ok, 0);
    atomic_store(&g_released, 0);
    for (int in_backward = 0; in_backward < 2; in_backward++) {
        tg_tensor *tb = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2), NULL, b, use_library, NULL);
        tg_tensor *ta = tg_from_blob(TG_CPU, TG_F32, TG_SHAPE(2), NULL, a, release_tensor, tb);
        cr_assert(ta && tb);
        if (!in_backward) {
            tg_release(ta);
        } else {
            tg_tensor *w = tg_ones(TG_F32, TG_SHAPE(2));
            tg_set_requires_grad(w, true);
            tg_tensor *y = sum_mul(w, ta);
            tg_release(ta);
            cr_assert_eq(tg_backward(y, NULL, false), TG_OK, "%s", tg_last_error());
            tg_release(y), tg_release(w);
        }
        cr_assert_eq(atomic_load(&g_inner_ok), in_backward + 1, "both callbacks ran");
    }
}

/* ---- (d) nodes made and freed on one fresh leaf by every thread at once ------------------ */

#define D_ROUNDS 150
#define D_PER_ROUND 4

typedef struct shared_d {
    pthread_barrier_t start, end;
    tg_tensor *leaf; /* a fresh leaf each round: its handle does not exist yet */
    tg_tensor *view; /* a view of a fresh non-leaf, stale each round */
} shared_d;

static void *leafref_worker(void *arg) {
    worker *me = arg;
    shared_d *sh = me->shared;
    const float k = (float)(me->id + 1);
    tg_tensor *c = f32_vec(4, (float[]){k, k, k, k}), *c2 = f32_vec(2, (float[]){k, k});
    for (int r = 0; r < D_ROUNDS; r++) {
        pthread_barrier_wait(&sh->start);
        for (int j = 0; j < D_PER_ROUND; j++) {
            /* the first node on the leaf makes its handle, the last frees it */
            tg_tensor *y = sum_mul(sh->leaf, c);
            tg_tensor *z = sum_mul(sh->view, c2); /* the first use makes its grad_fn */
            CHECK(y && z);
            if (j == 0) CHECK(tg_backward(y, NULL, false) == TG_OK);
            if (j == 1) CHECK(tg_backward(z, NULL, true) == TG_OK); /* through base's shared node */
            tg_release(z), tg_release(y);
        }
        pthread_barrier_wait(&sh->end);
    }
    tg_release(c), tg_release(c2);
    return NULL;
}

Test(threads, one_leaf_handle_and_one_view_grad_fn_under_contention) {
    shared_d sh;
    pthread_barrier_init(&sh.start, NULL, NT + 1);
    pthread_barrier_init(&sh.end, NULL, NT + 1);
    pthread_t th[NT];
    worker w[NT];
    atomic_store(&g_failures, 0);
    for (int i = 0; i < NT; i++) {
        w[i] = (worker){i, &sh};
        cr_assert_eq(pthread_create(&th[i], NULL, leafref_worker, &w[i]), 0);
    }
    double sum_k = NT * (NT + 1) / 2.0;
    for (int r = 0; r < D_ROUNDS; r++) {
        sh.leaf = leaf4((float[]){1, 2, 3, 4});
        tg_tensor *base_leaf = leaf4((float[]){1, 1, 1, 1});
        /* a view of a non-leaf whose base then gets a new history: stale */
        tg_tensor *base = tg_scale(base_leaf, 1.0);
        sh.view = tg_slice(base, 0, 1, 3, 1);
        cr_assert_eq(tg_mul_(base, sh.leaf), TG_OK, "%s", tg_last_error());
        pthread_barrier_wait(&sh.start);
        pthread_barrier_wait(&sh.end);
        cr_assert_eq(atomic_load(&g_failures), 0, "round %d: %s", r, g_first_failure);
        /* y: k into the leaf; z through base = base_leaf * leaf: k * leaf into
         * base_leaf and k * 1 into the leaf, on [1:3] */
        assert_grad(sh.leaf, (double[]){sum_k, 2 * sum_k, 2 * sum_k, sum_k}, 4);
        assert_grad(base_leaf, (double[]){0, 2 * sum_k, 3 * sum_k, 0}, 4);
        tg_release(sh.view), tg_release(base), tg_release(base_leaf), tg_release(sh.leaf);
        tg_live_counts c = tg_live();
        cr_assert_eq(c.nodes, 0, "round %d: %lld nodes left", r, (long long)c.nodes);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&sh.start);
    pthread_barrier_destroy(&sh.end);
}

/* ---- (e) leak scans and live counts while the other threads work ------------------------- */

typedef struct shared_e {
    shared_a a;
    atomic_bool done;
} shared_e;

static void *scan_worker(void *arg) {
    worker *me = arg;
    shared_e *sh = me->shared;
    if (me->id > 0) {
        worker inner = {me->id, &sh->a};
        return leaves_worker(&inner);
    }
    while (!atomic_load(&sh->done)) {
        tg_leak_report *r = tg_leak_scan();
        CHECK(r);
        tg_leak_report_free(r);
        tg_live_counts c = tg_live();
        CHECK(c.tensors >= 0 && c.nodes >= 0);
    }
    return NULL;
}

Test(threads, leak_scan_while_other_threads_work) {
    shared_e sh;
    shared_a_init(&sh.a, (float[]){1, 2, 3, 4});
    atomic_store(&sh.done, false);
    atomic_store(&g_failures, 0);
    pthread_t th[NT];
    worker w[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = (worker){i, &sh};
        cr_assert_eq(pthread_create(&th[i], NULL, scan_worker, &w[i]), 0);
    }
    for (int i = 1; i < NT; i++) pthread_join(th[i], NULL);
    atomic_store(&sh.done, true);
    pthread_join(th[0], NULL);
    cr_assert_eq(atomic_load(&g_failures), 0, "%s", g_first_failure);
    shared_a_release(&sh.a);
}

/* ---- a scope of one thread does not stand in the way of another's release ------------- */

static void *release_own_worker(void *arg) {
    worker *me = arg;
    tg_tensor *w = me->shared;
    for (int i = 0; i < 100; i++) {
        tg_tensor *g = tg_grad(w); /* the same .grad the main thread's scope owns */
        CHECK(g && tg_release(g) == TG_OK);
        int tok = tg_scope_begin(); /* a scope of this thread that does not own it */
        tg_tensor *mine = tg_scope_keep(tg_grad(w)), *other = tg_ones(TG_F32, TG_SHAPE(2));
        CHECK(mine && other && tg_release(mine) == TG_OK);
        CHECK(tg_scope_end(tok) == TG_OK);
    }
    return NULL;
}

Test(threads, a_scope_of_one_thread_does_not_refuse_another_threads_release) {
    tg_tensor *w = leaf4((float[]){1, 2, 3, 4});
    tg_tensor *y = tg_sum(w);
    cr_assert_eq(tg_backward(y, NULL, false), TG_OK);
    tg_release(y);
    int tok = tg_scope_begin();
    tg_tensor *g = tg_grad(w); /* owned by this thread's scope */
    cr_assert_not_null(g);
    run_threads(release_own_worker, w);
    cr_assert_eq(tg_release(g), TG_ERR_STATE, "this thread's scope owns it");
    tg_clear_error();
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    tg_release(w);
}

/* ---- per-thread state: grad mode, errors and scopes ------------------------------------- */

static void *per_thread_worker(void *arg) {
    worker *me = arg;
    tg_tensor *w = me->shared;
    for (int i = 0; i < 200; i++) {
        const bool grad = (me->id + i) % 2;
        tg_set_grad_enabled(grad);
        int tok = tg_scope_begin();
        tg_tensor *y = tg_mul(w, w);
        CHECK(y && tg_requires_grad(y) == grad && tg_scope_depth() == 1);
        if (me->id == 0) { /* an error on this thread only */
            CHECK(tg_add(w, tg_ones(TG_F32, TG_SHAPE(3))) == NULL);
            CHECK(tg_last_status() == TG_ERR_SHAPE);
            tg_clear_error();
        } else {
            CHECK(tg_last_status() == TG_OK);
        }
        CHECK(tg_scope_end(tok) == TG_OK);
    }
    tg_set_grad_enabled(true);
    return NULL;
}

Test(threads, grad_mode_errors_and_scopes_are_per_thread) {
    tg_tensor *w = leaf4((float[]){1, 2, 3, 4});
    run_threads(per_thread_worker, w);
    cr_assert(tg_is_grad_enabled());
    tg_release(w);
}
