/* leakcheck/scan.c - the leak scan: roots (references held from outside the
 * library), graph nodes that outlived their step grouped by the root that
 * keeps them, the bytes only that root keeps alive, objects reachable from no
 * root (cycles), and step-over-step growth. Reports in text and JSON.
 *
 * Objects are numbered in one index space: tensors, then storages, then
 * nodes. Edges: tensor -> its storage, its grad_fn, its .grad; node -> the
 * nodes and leaves of its inputs, its saved storages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leakcheck_internal.h"

typedef struct {
    int64_t nt, ns, nn, n;
    tg_tensor **t;
    tg__storage **s;
    tg__node **nd;
} objs;

static int64_t idx_t(const tg_tensor *t) { return t && t->scan >= 0 ? t->scan : -1; }

/* Lists in out every object that object i references (owns). leaf_edges:
 * include a node's edges to leaves held by a strong handle (the handle, shared
 * by every edge to that leaf, holds one reference: counted apart). */
static int neighbours(const objs *o, int64_t i, int64_t *out, bool leaf_edges) {
    int k = 0;
    if (i < o->nt) {
        const tg_tensor *t = o->t[i];
        if (t->storage && t->storage->scan >= 0) out[k++] = o->nt + t->storage->scan;
        if (t->grad_fn && t->grad_fn->scan >= 0) out[k++] = o->nt + o->ns + t->grad_fn->scan;
        if (idx_t(t->grad) >= 0) out[k++] = idx_t(t->grad);
        if (idx_t(t->pending) >= 0) out[k++] = idx_t(t->pending);
        if (idx_t(t->view_base) >= 0) out[k++] = idx_t(t->view_base);
    } else if (i >= o->nt + o->ns) {
        /* nodes have at most TG__MAX_IO edges and outputs; saved slots vary:
         * the caller passes a buffer sized for the largest node */
        const tg__node *n = o->nd[i - o->nt - o->ns];
        for (int e = 0; e < n->n_in; e++) {
            const tg__edge *ed = &n->edge[e];
            if (ed->kind == TG__EDGE_NODE && ed->node->scan >= 0)
                out[k++] = o->nt + o->ns + ed->node->scan;
            else if (leaf_edges && ed->kind == TG__EDGE_LEAF && ed->ref->strong &&
                     idx_t(ed->ref->leaf) >= 0)
                out[k++] = idx_t(ed->ref->leaf); /* weak handles own nothing */
        }
        for (int sl = 0; sl < n->n_saved; sl++)
            if (n->saved[sl].storage && n->saved[sl].storage->scan >= 0)
                out[k++] = o->nt + n->saved[sl].storage->scan;
        for (int q = 0; q < n->n_out; q++)
            if (idx_t(n->gbuf[q]) >= 0) out[k++] = idx_t(n->gbuf[q]);
    }
    return k;
}

/* Breadth-first walk from root (marks with `epoch`); returns how many objects
 * it reached, listed in queue[0..]. */
static int64_t bfs(const objs *o, int64_t root, int64_t *queue, uint64_t *mark, uint64_t epoch,
                   int64_t *nb) {
    int64_t head = 0, tail = 0;
    queue[tail++] = root;
    mark[root] = epoch;
    while (head < tail) {
        int d = neighbours(o, queue[head++], nb, true);
        for (int q = 0; q < d; q++)
            if (mark[nb[q]] != epoch) {
                mark[nb[q]] = epoch;
                queue[tail++] = nb[q];
            }
    }
    return tail;
}

static int refcount_of(const objs *o, int64_t i) {
    if (i < o->nt) return o->t[i]->refcount;
    if (i < o->nt + o->ns) return o->s[i - o->nt]->refcount;
    return o->nd[i - o->nt - o->ns]->refcount;
}

const char *tg__fmt_bytes(char *buf, size_t n, double b) {
    if (b >= 1024.0 * 1024.0) snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024.0));
    else if (b >= 1024.0) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else snprintf(buf, n, "%.0f B", b);
    return buf;
}

static void tensor_label(const tg_tensor *t, char *name, size_t nn, char *shape, size_t ns) {
    if (t->name[0]) tg__appendf(name, nn, 0, "%s", t->name);
    else tg__appendf(name, nn, 0, "tensor #%llu", (unsigned long long)t->id);
    char sh[TG_MAX_DIMS * 22 + 4]; /* every dim at its widest: never cut */
    tg__appendf(shape, ns, 0, "%s %s", tg_dtype_name(t->dtype),
                tg__shape_str(sh, sizeof sh, t->ndim, t->shape));
}

/* Short description of object i for paths and cycle lines. */
static void describe(const objs *o, int64_t i, char *buf, size_t n) {
    char a[TG__NAME_LEN + 24], b[TG_MAX_DIMS * 22 + 16], c[32];
    if (i < o->nt) {
        const tg_tensor *t = o->t[i];
        tensor_label(t, a, sizeof a, b, sizeof b);
        tg__appendf(buf, n, 0, "%s '%s' %s (%s, created at %s:%d)",
                    t->grad_fn ? "tensor" : "leaf", a, b,
                    tg__fmt_bytes(c, sizeof c, (double)t->storage->nbytes),
                    t->site.file ? t->site.file : "?", t->site.line);
    } else if (i < o->nt + o->ns) {
        const tg__storage *s = o->s[i - o->nt];
        tg__appendf(buf, n, 0, "storage #%llu (%s, %s, created at %s:%d)",
                    (unsigned long long)s->id, tg__fmt_bytes(c, sizeof c, (double)s->nbytes),
                    tg_mem_category_name(s->cat), s->site.file ? s->site.file : "?",
                    s->site.line);
    } else {
        const tg__node *nd = o->nd[i - o->nt - o->ns];
        tg__appendf(buf, n, 0, "%s (created at %s:%d, step %llu)", nd->name,
                    nd->site.file ? nd->site.file : "?", nd->site.line,
                    (unsigned long long)nd->step);
    }
}

/* Bytes of live saved storages of node nd, and the largest slot. */
static uint64_t node_saved(const tg__node *nd, int *largest) {
    uint64_t b = 0, best = 0;
    *largest = -1;
    for (int k = 0; k < nd->n_saved; k++) {
        const tg__storage *s = nd->saved[k].storage;
        if (!s) continue;
        b += s->nbytes;
        if (s->nbytes >= best) {
            best = s->nbytes;
            *largest = k;
        }
    }
    return b;
}

/* One step of a path: " -> NameBackward" or " -> leaf 'x' f32 [2] (16 B)",
 * with what the target holds, into buf; returns its length. */
static size_t path_step(const objs *o, int64_t j, int64_t target, char *buf, size_t n) {
    char a[TG__NAME_LEN + 24], b[TG_MAX_DIMS * 22 + 16], c[32], g[48] = "";
    size_t k = 0;
    buf[0] = '\0';
    if (j < o->nt) {
        const tg_tensor *t = o->t[j];
        tensor_label(t, a, sizeof a, b, sizeof b);
        if (t->grad)
            tg__appendf(g, sizeof g, 0, ", .grad %s",
                        tg__fmt_bytes(c, sizeof c, (double)t->grad->storage->nbytes));
        k = tg__appendf(buf, n, k, " -> %s '%s' %s (%s%s)", t->grad_fn ? "tensor" : "leaf", a, b,
                        tg__fmt_bytes(c, sizeof c, (double)t->storage->nbytes), g);
    } else if (j >= o->nt + o->ns) {
        const tg__node *nd = o->nd[j - o->nt - o->ns];
        k = tg__appendf(buf, n, k, " -> %s", nd->name);
        if (j == target) {
            int big;
            uint64_t sb = node_saved(nd, &big);
            if (big >= 0) {
                const tg__saved *sv = &nd->saved[big];
                char sh[TG_MAX_DIMS * 22 + 4];
                k = tg__appendf(buf, n, k, " (saved: %s%s%s%s %s, %s in all)",
                                sv->name[0] ? "'" : "", sv->name, sv->name[0] ? "' " : "",
                                tg_dtype_name(sv->meta.dtype),
                                tg__shape_str(sh, sizeof sh, sv->meta.ndim, sv->meta.shape),
                                tg__fmt_bytes(c, sizeof c, (double)sb));
            } else if (nd->freed) {
                k = tg__appendf(buf, n, k, " (saved tensors freed)");
            }
        }
    }
    return k;
}

#define PATH_MAX_STEPS 64 /* steps of a path looked at, from the target back */
/* a step's buffer: a tensor with every field at its widest needs about 330
 * bytes; a custom function's name has no limit and is cut with the path */
#define PATH_STEP_LEN sizeof(((tg_leak_root *)0)->path)

/* Path root -> ... -> target as op names (tensors by name), with what the
 * target holds, into out (n bytes). The steps nearest the target are kept:
 * when the path has more than PATH_MAX_STEPS steps, or its steps do not all
 * fit in out, the ones nearest the root are left out and " -> ..." stands
 * for them, right after the root's name. */
static void build_path(const objs *o, const int64_t *parent, int64_t root, int64_t target,
                       const char *root_name, char *out, size_t n) {
    int64_t chain[PATH_MAX_STEPS];
    int len = 0;
    int64_t j = target;
    for (; j >= 0 && j != root && len < PATH_MAX_STEPS; j = parent[j]) chain[len++] = j;
    bool elided = j >= 0 && j != root; /* more steps than the chain holds */
    static const char more[] = " -> ...";
    char step[PATH_STEP_LEN];
    size_t k = tg__appendf(out, n, 0, "%s", root_name);
    /* how many steps, from the target back, fit after the root (and " -> ...") */
    size_t room = k < n - 1 ? n - 1 - k : 0, used = 0;
    int keep = 0;
    for (; keep < len; keep++) {
        size_t w = path_step(o, chain[keep], target, step, sizeof step);
        bool cut = elided || keep + 1 < len;
        if (used + w + (cut ? sizeof more - 1 : 0) > room) break;
        used += w;
    }
    if (keep == 0 && len > 0) keep = 1; /* the target's step always: cut if it must be */
    if (keep < len) elided = true;
    if (elided) k = tg__appendf(out, n, k, "%s", more);
    for (int q = keep - 1; q >= 0; q--) {
        path_step(o, chain[q], target, step, sizeof step);
        k = tg__appendf(out, n, k, "%s", step);
    }
}

static int cmp_root(const void *a, const void *b) {
    const tg_leak_root *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->step < y->step ? -1 : x->step > y->step;
}

/* The scan's working state: the live objects and per-object arrays (n + 1
 * entries each; nb has room for the largest neighbour list). */
typedef struct scan {
    objs o;
    int64_t *internal; /* references held by other live objects */
    int64_t *reach;    /* step 2: roots reaching i; step 3: reported roots reaching i */
    int64_t *owner;    /* the first root reaching i, -1 for none */
    int64_t *parent;   /* step 2: BFS parent; step 3: unreported roots reaching i */
    int64_t *queue, *roots, *nb;
    uint64_t *mark;
    int64_t nroots;
} scan;

static void scan_free(scan *sc) {
    free(sc->o.t);
    free(sc->o.s);
    free(sc->o.nd);
    free(sc->internal);
    free(sc->reach);
    free(sc->owner);
    free(sc->parent);
    free(sc->queue);
    free(sc->mark);
    free(sc->roots);
    free(sc->nb);
}

/* Counts and indexes the live objects (registry locked) and allocates the
 * arrays; false when out of memory. */
static bool scan_init(scan *sc) {
    objs *o = &sc->o;
    for (tg_tensor *t = tg__reg_tensors(); t; t = t->reg_next) o->nt++;
    for (tg__storage *s = tg__reg_storages(); s; s = s->reg_next) o->ns++;
    for (tg__node *n = tg__reg_nodes(); n; n = n->reg_next) o->nn++;
    o->n = o->nt + o->ns + o->nn;
    int max_deg = 4 + 2 * TG__MAX_IO;
    for (tg__node *n = tg__reg_nodes(); n; n = n->reg_next)
        if (n->n_in + n->n_saved + n->n_out > max_deg) max_deg = n->n_in + n->n_saved + n->n_out;
    const size_t n1 = (size_t)o->n + 1;
    o->t = tg__xcalloc((size_t)o->nt + 1, sizeof *o->t);
    o->s = tg__xcalloc((size_t)o->ns + 1, sizeof *o->s);
    o->nd = tg__xcalloc((size_t)o->nn + 1, sizeof *o->nd);
    sc->internal = tg__xcalloc(n1, sizeof *sc->internal);
    sc->reach = tg__xcalloc(n1, sizeof *sc->reach);
    sc->owner = tg__xcalloc(n1, sizeof *sc->owner);
    sc->parent = tg__xcalloc(n1, sizeof *sc->parent);
    sc->queue = tg__xcalloc(n1, sizeof *sc->queue);
    sc->mark = tg__xcalloc(n1, sizeof *sc->mark);
    sc->roots = tg__xcalloc(n1, sizeof *sc->roots);
    sc->nb = tg__xcalloc((size_t)max_deg + 1, sizeof *sc->nb);
    if (!o->t || !o->s || !o->nd || !sc->internal || !sc->reach || !sc->owner || !sc->parent ||
        !sc->queue || !sc->mark || !sc->roots || !sc->nb)
        return false;
    int64_t k = 0;
    for (tg_tensor *t = tg__reg_tensors(); t; t = t->reg_next) o->t[t->scan = k++] = t;
    k = 0;
    for (tg__storage *s = tg__reg_storages(); s; s = s->reg_next) o->s[s->scan = k++] = s;
    k = 0;
    for (tg__node *n = tg__reg_nodes(); n; n = n->reg_next) o->nd[n->scan = k++] = n;
    return true;
}

/* Step 1: references held by other live objects; an object with more
 * references than that is held from outside: a root. The edges to a leaf
 * share one handle, which holds one reference. Roots in creation order
 * (ids), tensors first. */
static void find_roots(scan *sc) {
    const objs *o = &sc->o;
    for (int64_t i = 0; i < o->n; i++) {
        int d = neighbours(o, i, sc->nb, false);
        for (int q = 0; q < d; q++) sc->internal[sc->nb[q]]++;
    }
    for (int64_t i = 0; i < o->nt; i++)
        if (o->t[i]->leafref && o->t[i]->leafref->strong) sc->internal[i]++;
    sc->nroots = 0;
    for (int64_t i = 0; i < o->n; i++) {
        sc->owner[i] = -1;
        if (refcount_of(o, i) > sc->internal[i]) sc->roots[sc->nroots++] = i;
    }
    for (int64_t a = 1; a < sc->nroots; a++) { /* insertion sort: roots are few */
        int64_t v = sc->roots[a], b = a - 1;
        while (b >= 0 && sc->roots[b] > v) {
            sc->roots[b + 1] = sc->roots[b];
            b--;
        }
        sc->roots[b + 1] = v;
    }
}

/* Step 2 for root number ri: what it reaches (BFS: queue[0, *tail), parents
 * and owners set, reach counted). */
static void reach_from(scan *sc, int64_t ri, int64_t *tail) {
    int64_t root = sc->roots[ri], head = 0;
    *tail = 0;
    sc->queue[(*tail)++] = root;
    sc->mark[root] = (uint64_t)ri + 1;
    sc->parent[root] = -1;
    while (head < *tail) {
        int64_t i = sc->queue[head++];
        sc->reach[i]++;
        sc->owner[i] = sc->owner[i] < 0 ? root : sc->owner[i];
        int d = neighbours(&sc->o, i, sc->nb, true);
        for (int q = 0; q < d; q++) {
            if (sc->mark[sc->nb[q]] == (uint64_t)ri + 1) continue;
            sc->mark[sc->nb[q]] = (uint64_t)ri + 1;
            sc->parent[sc->nb[q]] = i;
            sc->queue[(*tail)++] = sc->nb[q];
        }
    }
}

/* Among the tail objects root reached: counts the nodes of steps before
 * `step` into lr (and *first: those it is the first root to reach) and
 * returns the heaviest target: the node saving the most (ties: the deepest),
 * or a leaf only the graph holds, when larger. */
static int64_t heaviest(const scan *sc, int64_t root, int64_t tail, uint64_t step,
                        tg_leak_root *lr, int64_t *first) {
    const objs *o = &sc->o;
    int64_t target = -1;
    uint64_t best = 0;
    for (int64_t q = 0; q < tail; q++) {
        int64_t i = sc->queue[q];
        if (i < o->nt + o->ns) continue;
        const tg__node *nd = o->nd[i - o->nt - o->ns];
        if (nd->step >= step) continue;
        lr->nodes++;
        *first += sc->owner[i] == root;
        int big;
        uint64_t sb = node_saved(nd, &big);
        if (sb) lr->nodes_with_saved++;
        if (sb + 1 >= best || target < 0) {
            best = sb + 1;
            target = i;
        }
        /* a leaf that only the graph holds (the program let go of it) */
        for (int e = 0; e < nd->n_in; e++) {
            const tg__edge *ed = &nd->edge[e];
            const tg_tensor *lf = ed->kind == TG__EDGE_LEAF && ed->ref->strong ? ed->ref->leaf
                                                                                : NULL;
            int64_t li = idx_t(lf);
            if (li < 0 || refcount_of(o, li) > sc->internal[li]) continue;
            if (lf->storage->nbytes + 1 > best) {
                best = lf->storage->nbytes + 1;
                target = li;
            }
        }
    }
    return target;
}

/* lr's name, shape, site and step (with its label) for the root object. */
static void label_root(const scan *sc, int64_t root, tg_leak_root *lr) {
    const tg_tensor *rt = root < sc->o.nt ? sc->o.t[root] : NULL;
    if (!rt) {
        describe(&sc->o, root, lr->name, sizeof lr->name);
        return;
    }
    tensor_label(rt, lr->name, sizeof lr->name, lr->shape, sizeof lr->shape);
    lr->file = rt->site.file;
    lr->line = rt->site.line;
    lr->step = rt->step;
    tg__step_rec hist[TG__STEP_HISTORY];
    int nh = tg__reg_step_history(hist);
    for (int h = 0; h < nh; h++)
        if (hist[h].step == rt->step) memcpy(lr->step_label, hist[h].label, sizeof lr->step_label);
}

/* Step 2: per root, what it reaches, which outlived nodes it is first to
 * reach, and the path to the largest thing it keeps: the roots reaching
 * outlived nodes go to r->roots (their bytes field holding the root's index
 * until step 3). false when out of memory. */
static bool report_roots(scan *sc, tg_leak_report *r) {
    tg_leak_root *out = tg__xcalloc((size_t)sc->nroots + 1, sizeof *out);
    if (!out) return false;
    r->roots = out;
    for (int64_t ri = 0; ri < sc->nroots; ri++) {
        int64_t root = sc->roots[ri], tail, first = 0;
        reach_from(sc, ri, &tail);
        tg_leak_root lr = {0};
        int64_t target = heaviest(sc, root, tail, r->step, &lr, &first);
        if (lr.nodes == 0) continue;
        label_root(sc, root, &lr);
        char rn[sizeof lr.name + sizeof lr.shape + 16];
        tg__appendf(rn, sizeof rn, 0, "root \"%s\" (%s)", lr.name, lr.shape);
        build_path(&sc->o, sc->parent, root, target, rn, lr.path, sizeof lr.path);
        lr.bytes = (uint64_t)root; /* temporarily: the root's index */
        out[r->nroots++] = lr;
        r->outlived += first;
    }
    return true;
}

/* Step 3: bytes. A storage counts for a reported root when it reaches it and
 * no root without outlived nodes (a parameter the program holds, ...) does;
 * the total counts each such storage once. */
static void count_bytes(scan *sc, tg_leak_report *r) {
    const objs *o = &sc->o;
    tg_leak_root *out = r->roots;
    int64_t *reported_reach = sc->reach, *other_reach = sc->parent;
    for (int64_t i = 0; i < o->n; i++) reported_reach[i] = other_reach[i] = 0;
    for (int64_t ri = 0; ri < sc->nroots; ri++) {
        int64_t root = sc->roots[ri];
        bool reported = false;
        for (int64_t q = 0; q < r->nroots; q++) reported |= (int64_t)out[q].bytes == root;
        int64_t tail = bfs(o, root, sc->queue, sc->mark, (uint64_t)(sc->nroots + ri) + 1, sc->nb);
        for (int64_t q = 0; q < tail; q++) (reported ? reported_reach : other_reach)[sc->queue[q]]++;
    }
    for (int64_t q = 0; q < r->nroots; q++) {
        int64_t root = (int64_t)out[q].bytes;
        int64_t tail = bfs(o, root, sc->queue, sc->mark, (uint64_t)(2 * sc->nroots + q) + 1,
                           sc->nb);
        uint64_t bytes = 0, shared = 0, saved = 0;
        for (int64_t t = 0; t < tail; t++) {
            int64_t i = sc->queue[t];
            if (i < o->nt || i >= o->nt + o->ns || other_reach[i]) continue;
            const tg__storage *st = o->s[i - o->nt];
            bytes += st->nbytes;
            if (reported_reach[i] > 1) shared += st->nbytes;
            if (st->saved_refs) saved += st->nbytes;
        }
        out[q].bytes = bytes;
        out[q].shared_bytes = shared;
        out[q].saved_bytes = saved;
    }
    for (int64_t j = 0; j < o->ns; j++)
        if (reported_reach[o->nt + j] && !other_reach[o->nt + j]) r->kept_bytes += o->s[j]->nbytes;
    qsort(out, (size_t)r->nroots, sizeof *out, cmp_root);
}

/* Step 4: alive but reachable from no root. */
static void find_unreachable(const scan *sc, tg_leak_report *r) {
    for (int64_t i = 0; i < sc->o.n; i++) {
        if (sc->owner[i] >= 0) continue;
        if (r->n_lines < MAX_UNREACH_LINES)
            describe(&sc->o, i, r->lines[r->n_lines++], sizeof r->lines[0]);
        r->unreachable++;
    }
}

/* Step 5: growth over the step history: at least 3 increases in a row,
 * averaging 4 KiB or more (logged scalars alone do not count as growth). */
static void find_growth(tg_leak_report *r) {
    r->n_hist = tg__reg_step_history(r->hist);
    int inc = 0;
    for (int h = r->n_hist - 1; h > 0 && r->hist[h].live_bytes > r->hist[h - 1].live_bytes; h--)
        inc++;
    if (inc < 3) return;
    const uint64_t rise = r->hist[r->n_hist - 1].live_bytes - r->hist[r->n_hist - 1 - inc].live_bytes;
    if (rise < (uint64_t)inc * 4096) return;
    r->growth_steps = inc;
    r->growth = (double)rise / inc;
}

tg_leak_report *tg_leak_scan(void) {
    tg_leak_report *r = tg__xcalloc(1, sizeof *r);
    if (!r) return NULL;
    scan sc = {0};
    tg__quiesce_begin(); /* other threads may run: nothing is freed while it reads */
    r->step = tg__current_step_locked();
    bool ok = scan_init(&sc);
    if (ok) {
        find_roots(&sc);
        ok = report_roots(&sc, r);
    }
    if (ok) {
        count_bytes(&sc, r);
        find_unreachable(&sc, r);
        find_growth(r);
    }
    tg__quiesce_end();
    scan_free(&sc);
    if (!ok) {
        tg_leak_report_free(r);
        return NULL;
    }
    return r;
}
